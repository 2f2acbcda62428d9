//! The control endpoint: JSON-RPC 2.0, one JSON object per line, over a
//! unix socket (directory 0700, socket 0600). `socket` guards the path
//! (stale sockets are replaced, anything else is refused); `server` accepts
//! connections and serves `runtime::api` requests through the runtime's own
//! `RuntimeClient` implementation. The protocol is documented in
//! docs/protocol.md.

pub mod server;
pub mod socket;

/// The longest request line accepted (bytes, newline excluded).
pub const MAX_LINE: usize = 1024 * 1024;
/// Outbound lines buffered per connection before writes wait for the client.
pub const OUTBOUND_BUFFER: usize = 512;
