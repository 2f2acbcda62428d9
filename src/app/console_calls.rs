//! A console's call to the runtime, sent again when the link lost its
//! answer: a prompt carries a request id made here, so the runtime admits
//! it once however many times it arrives. Calls wait for the next client
//! (a reconnect's); a switch to another runtime ends the wait (its
//! clients are another channel's), and the call fails rather than go to
//! the runtime shown now.

use std::sync::Arc;
use std::time::Duration;

use crate::protocol::{Request, RuntimeClient};

/// How long a prompt whose answer the link lost waits for a reconnect to
/// be sent again.
const RESEND_WITHIN: Duration = Duration::from_secs(120);

/// Send `request`. A prompt carries a request id made here, so when the
/// link drops before its answer it is sent again, with the same id, over
/// the next connection: the runtime admits it once, however many times it
/// arrived.
pub(super) async fn call_once(
    mut clients: tokio::sync::watch::Receiver<Arc<dyn RuntimeClient>>,
    mut request: Request,
) -> Result<crate::protocol::Response, crate::protocol::ApiError> {
    let resend = match &mut request {
        Request::PromptSubmit { request_id, .. } => {
            request_id.get_or_insert_with(|| crate::new_id("req"));
            true
        }
        _ => false,
    };
    // The client now, marked seen: a later one is a reconnect's.
    let mut client = Arc::clone(&clients.borrow_and_update());
    let deadline = tokio::time::Instant::now() + RESEND_WITHIN;
    loop {
        let result = client.call(request.clone()).await;
        let lost = matches!(&result, Err(e) if e.failure == crate::protocol::Failure::Transport);
        if !(resend && lost) {
            return result;
        }
        match tokio::time::timeout_at(deadline, clients.changed()).await {
            Ok(Ok(())) => client = Arc::clone(&clients.borrow_and_update()),
            _ => return result,
        }
    }
}
