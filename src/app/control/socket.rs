//! The socket path: who holds it, and whether we may take it. A socket
//! whose server is gone (connection refused) is stale and replaced; a path
//! that is not a socket, is owned by another user, or answers but is not
//! Holon is refused — fail closed.

use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::{UnixListener, UnixStream};

use crate::protocol::jsonrpc::{request_line, Incoming, IncomingLine};
use crate::protocol::{ErrorCode, Request, RuntimeStatus};

#[derive(Debug, thiserror::Error)]
pub enum SocketError {
    #[error("a Holon runtime (pid {pid}) already serves {path}; attach with `holon attach`")]
    AlreadyRunning { path: PathBuf, pid: u32 },
    #[error("{path} exists and is not a socket; refusing to replace it")]
    NotASocket { path: PathBuf },
    #[error("{path} is owned by another user (uid {uid}); refusing to use it")]
    OtherUser { path: PathBuf, uid: u32 },
    #[error("something that is not Holon answers on {path}; refusing to replace it")]
    NotHolon { path: PathBuf },
    #[error(
        "a Holon runtime already serves {path} but answers with an error ({message}); see \
         `holon daemon status`"
    )]
    Failing { path: PathBuf, message: String },
    #[error("control socket {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// What answers on a socket path.
#[derive(Debug)]
pub enum Probe {
    /// A Holon runtime answered `runtime.status`.
    Running(Box<RuntimeStatus>),
    /// A runtime answered `runtime.status` with a JSON-RPC error (its
    /// store failing, say): it is there, and requests go to it.
    Failing(String),
    /// Nothing there, or a stale socket nobody listens on.
    Absent,
    Stale,
    NotHolon,
}

fn our_uid() -> u32 {
    // SAFETY: getuid cannot fail.
    unsafe { libc::getuid() }
}

/// Ask whatever listens on `path` for `runtime.status` (bounded). Only a
/// socket is connected to: a symlink or another kind of file is not
/// Holon's, and nothing is sent through it.
pub async fn probe(path: &Path) -> Probe {
    match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Probe::Absent,
        Ok(meta) if !meta.file_type().is_socket() => return Probe::NotHolon,
        _ => {}
    }
    let stream = match tokio::time::timeout(Duration::from_secs(2), UnixStream::connect(path)).await
    {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => {
            return match e.kind() {
                std::io::ErrorKind::NotFound => Probe::Absent,
                _ => Probe::Stale,
            }
        }
        Err(_) => return Probe::NotHolon,
    };
    let (read, mut write) = stream.into_split();
    let Ok(req) = request_line(1, &Request::RuntimeStatus) else {
        return Probe::NotHolon;
    };
    if write.write_all(req.as_bytes()).await.is_err() {
        return Probe::NotHolon;
    }
    let mut line = String::new();
    let mut reader = BufReader::new(read);
    match tokio::time::timeout(Duration::from_secs(3), reader.read_line(&mut line)).await {
        Ok(Ok(n)) if n > 0 => {}
        _ => return Probe::NotHolon,
    }
    let answer = serde_json::from_str::<IncomingLine<'_>>(&line).map(IncomingLine::classify);
    let result = match answer {
        Ok(Incoming::Response {
            result: Ok(result), ..
        }) => result,
        // Holon's own server errors in answer to our request (its store
        // failing) or as its reason for closing (its connection limit,
        // shutting down) are still a runtime answering.
        Ok(Incoming::Response {
            id: 1,
            result: Err(e),
        })
        | Ok(Incoming::Closing(e))
            if matches!(
                e.code,
                ErrorCode::Storage | ErrorCode::ShuttingDown | ErrorCode::Busy
            ) =>
        {
            return Probe::Failing(e.message)
        }
        _ => return Probe::NotHolon,
    };
    match serde_json::from_str::<RuntimeStatus>(&result) {
        Ok(status) if status.holon == "holon" => Probe::Running(Box::new(status)),
        _ => Probe::NotHolon,
    }
}

/// Bind the control socket at `path`, replacing a stale one, refusing
/// anything else; the socket gets mode 0600.
pub async fn bind(path: &Path) -> Result<UnixListener, SocketError> {
    let io = |source| SocketError::Io {
        path: path.to_path_buf(),
        source,
    };
    if let Ok(meta) = std::fs::symlink_metadata(path) {
        if !meta.file_type().is_socket() {
            return Err(SocketError::NotASocket {
                path: path.to_path_buf(),
            });
        }
        if meta.uid() != our_uid() {
            return Err(SocketError::OtherUser {
                path: path.to_path_buf(),
                uid: meta.uid(),
            });
        }
        match probe(path).await {
            Probe::Running(status) => {
                return Err(SocketError::AlreadyRunning {
                    path: path.to_path_buf(),
                    pid: status.pid,
                })
            }
            Probe::NotHolon => {
                return Err(SocketError::NotHolon {
                    path: path.to_path_buf(),
                })
            }
            Probe::Failing(message) => {
                return Err(SocketError::Failing {
                    path: path.to_path_buf(),
                    message,
                })
            }
            Probe::Stale | Probe::Absent => {
                tracing::info!(path = %path.display(), "removing stale control socket");
                std::fs::remove_file(path).map_err(io)?;
            }
        }
    }
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(io)?;
    }
    let listener = UnixListener::bind(path).map_err(io)?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).map_err(io)?;
    Ok(listener)
}
