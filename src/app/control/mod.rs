//! The control endpoint: JSON-RPC 2.0, one JSON object per line, over a
//! unix socket (directory 0700, socket 0600). `socket` guards the path
//! (stale sockets are replaced, anything else is refused); `server` accepts
//! connections and serves `protocol` requests through the runtime's own
//! `RuntimeClient` implementation. The protocol is documented in
//! docs/protocol.md.

mod peer;
mod request;
pub mod server;
mod slots;
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
    /// Control connections served at once on the socket, and WebSocket
    /// ones in slots of their own as many; at the limit the oldest that
    /// follows nothing gives way, else -32006 (503 for a WebSocket).
    pub max_connections: usize,
    /// A connection with no subscription that sends nothing for this long
    /// is closed (with -32006 saying why).
    pub idle_timeout: std::time::Duration,
    /// TCP connections the HTTP listener holds at once; at the limit it
    /// stops accepting until one closes.
    pub http_max_connections: usize,
    /// How long an HTTP client may take to send a request's headers (and
    /// how long a kept-alive connection may wait for its next request).
    pub http_header_timeout: std::time::Duration,
}

impl Default for ServerLimits {
    fn default() -> Self {
        ServerLimits {
            max_connections: 256,
            idle_timeout: std::time::Duration::from_secs(300),
            http_max_connections: 512,
            http_header_timeout: std::time::Duration::from_secs(10),
        }
    }
}
