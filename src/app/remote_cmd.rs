//! `holon remote-info`: how another machine reaches this runtime.

use std::process::ExitCode;

use super::Context;
use crate::model::trigger::IngressState;
use crate::protocol::{call_typed, Request, RuntimeStatus};

/// What `holon remote-info --json` prints.
#[derive(Debug, serde::Serialize)]
struct RemoteInfo {
    /// `wss://HOST:PORT` (or `ws://` for a plaintext listener).
    url: Option<String>,
    /// The certificate to pin, `SHA256:…`; absent when plaintext.
    fingerprint: Option<String>,
    /// The bearer token's file, to copy to the console's machine (0600).
    token_file: String,
    /// Why the listener cannot be reached, when it cannot.
    listener: String,
    /// The ssh address (needs no listener, token or fingerprint).
    ssh: String,
}

/// `holon remote-info [--json]`, from the running runtime's status.
pub async fn remote_info(ctx: &Context, json: bool) -> anyhow::Result<ExitCode> {
    let Some(client) = super::daemon::connect(ctx).await else {
        anyhow::bail!("no runtime is running here; start one with `holon --detach`");
    };
    let status: RuntimeStatus = call_typed(&client, Request::RuntimeStatus).await?;
    let http = status.http.clone();
    let url = match (http.state, http.http_addr.as_deref()) {
        (IngressState::Listening, Some(addr)) => Some(ws_url(addr, http.tls_fingerprint.is_some())),
        _ => None,
    };
    let host = super::tls::host_name().unwrap_or_else(|| "HOST".into());
    let user = std::env::var("USER")
        .ok()
        .filter(|u| !u.is_empty() && !u.contains(char::is_whitespace))
        .map(|u| format!("{u}@"))
        .unwrap_or_default();
    // The far side's default home needs no path.
    let home = status.home.clone().unwrap_or_default();
    let info = RemoteInfo {
        url,
        fingerprint: http.tls_fingerprint.clone(),
        token_file: super::access::default_token_file(&ctx.paths.run_dir)
            .display()
            .to_string(),
        listener: http.describe(),
        ssh: format!("ssh://{user}{host}{home}"),
    };
    if json {
        say!("{}", serde_json::to_string_pretty(&info)?);
        return Ok(ExitCode::SUCCESS);
    }
    say!("ssh          holon attach {}", info.ssh);
    match (&info.url, &info.fingerprint) {
        (Some(url), Some(f)) => {
            say!("url          {url}");
            say!("fingerprint  {f}");
            say!("token file   {} (copy it, 0600)", info.token_file);
            say!("attach with  holon attach {url} --fingerprint {f} --token-file FILE");
        }
        (Some(url), None) => {
            say!("url          {url} (plaintext: loopback or a tailnet only)");
            say!("token file   {} (copy it, 0600)", info.token_file);
        }
        (None, _) => say!("listener     {}", info.listener),
    }
    Ok(ExitCode::SUCCESS)
}

/// The URL a console on another machine uses for `addr`: this machine's
/// name in place of an address that means "every interface".
fn ws_url(addr: &str, tls: bool) -> String {
    let scheme = if tls { "wss" } else { "ws" };
    match addr.parse::<std::net::SocketAddr>() {
        Ok(a) if a.ip().is_unspecified() => {
            let host = super::tls::host_name().unwrap_or_else(|| a.ip().to_string());
            format!("{scheme}://{host}:{}", a.port())
        }
        _ => format!("{scheme}://{addr}"),
    }
}
