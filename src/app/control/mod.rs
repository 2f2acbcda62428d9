//! The control endpoint: JSON-RPC 2.0, one JSON object per line, over a
//! unix socket (directory 0700, socket 0600). `socket` guards the path
//! (stale sockets are replaced, anything else is refused); `server` accepts
//! connections and serves `protocol` requests through the runtime's own
//! `RuntimeClient` implementation. The protocol is documented in
//! docs/protocol.md.

pub mod server;
pub mod socket;

/// The longest request line accepted (bytes, newline excluded).
pub const MAX_LINE: usize = 1024 * 1024;
/// Outbound lines buffered per connection before writes wait for the client.
pub const OUTBOUND_BUFFER: usize = 512;
/// Outbound bytes a connection's subscriptions may have queued for a client
/// that is not reading before they are cut off with "lagged".
pub const OUTBOUND_BYTES: usize = 1024 * 1024;

/// How many clients a server takes, and how long an idle one may stay.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServerLimits {
    /// Connections served at once; the one over gets -32006 and a close.
    pub max_connections: usize,
    /// A connection with no subscription that sends nothing for this long
    /// is closed (with -32006 saying why).
    pub idle_timeout: std::time::Duration,
}

impl Default for ServerLimits {
    fn default() -> Self {
        ServerLimits {
            max_connections: 256,
            idle_timeout: std::time::Duration::from_secs(300),
        }
    }
}
