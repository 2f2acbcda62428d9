//! A server's connection made: its process spawned (sandboxed, with its
//! minimal environment and its stderr kept) or its URL reached, the
//! handshake within the startup timeout, and its tools listed.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use rmcp::transport::async_rw::AsyncRwTransport;
use rmcp::ServiceExt;

use super::super::client::{http_transport, list_tools, Handler, MAX_MESSAGE};
use super::super::process::{ended, keep_log, server_env, spawn};
use super::{Conn, Sandboxing, Server};
use crate::runtime::settings::mcp::Transport;

impl Server {
    pub(super) async fn connect(
        &self,
        sandbox: &Sandboxing,
        failures: u32,
    ) -> Result<Conn, String> {
        let serial = self.serials.fetch_add(1, Ordering::SeqCst) + 1;
        let handler = Handler {
            changed: Arc::clone(&self.changed),
            generation: Arc::clone(&self.generation),
            watchers: Arc::clone(&self.watchers),
            serial,
        };
        let timeout = self.config.startup_timeout;
        let late = || format!("did not answer `initialize` within {} s", timeout.as_secs());
        let (service, child) = match &self.config.transport {
            Transport::Stdio {
                command,
                args,
                env,
                env_passthrough,
                cwd,
            } => {
                let prepared = match self.config.sandboxed {
                    true => sandbox.prepare(&self.slot, cwd.as_deref(), &self.config.writable)?,
                    false => None,
                };
                let env = server_env(env, env_passthrough, std::env::vars_os());
                let mut child = spawn(command, args, env, cwd.as_deref(), prepared)?;
                let (Some(stdout), Some(stdin)) = (child.0.stdout.take(), child.0.stdin.take())
                else {
                    return Err("the server's stdio could not be opened".into());
                };
                if let Some(stderr) = child.0.stderr.take() {
                    tokio::spawn(keep_log(stderr, self.log_path.clone()));
                }
                let (reads, writes) = super::super::filter::filtered(
                    stdout,
                    stdin,
                    self.config.name.clone(),
                    MAX_MESSAGE,
                );
                let transport =
                    AsyncRwTransport::new_client(reads, writes).with_max_line_length(MAX_MESSAGE);
                match tokio::time::timeout(timeout, handler.serve(transport)).await {
                    Ok(Ok(s)) => (s, Some(child)),
                    Ok(Err(e)) => {
                        let why = ended(Some(&mut child)).await;
                        return Err(format!("the server failed its handshake ({e}); {why}"));
                    }
                    Err(_) => return Err(format!("the server {}", late())),
                }
            }
            Transport::Http {
                url,
                bearer_token_env,
            } => {
                let transport = http_transport(url, bearer_token_env.as_deref())?;
                match tokio::time::timeout(timeout, handler.serve(transport)).await {
                    Ok(Ok(s)) => (s, None),
                    Ok(Err(e)) => {
                        return Err(format!("the server at {url} refused the handshake: {e}"))
                    }
                    Err(_) => return Err(format!("the server at {url} {}", late())),
                }
            }
        };
        let tools = list_tools(service.peer(), timeout).await?;
        Ok(Conn {
            service,
            tools,
            child,
            failures,
            started: Instant::now(),
            serial,
        })
    }
}
