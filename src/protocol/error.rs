//! The protocol's errors: stable codes (JSON-RPC's own and the
//! application's), and where a failed call failed as its client saw it.

use serde::{Deserialize, Serialize};

/// Stable error codes: JSON-RPC's own plus the application's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(into = "i64", try_from = "i64")]
pub enum ErrorCode {
    ParseError,
    InvalidRequest,
    MethodNotFound,
    InvalidParams,
    Internal,
    /// -32001: no such agent, task or work item.
    NotFound,
    /// -32002: the agent is stopped; resume it first.
    AgentStopped,
    /// -32003: the request conflicts with current state.
    Conflict,
    /// -32004: the store failed (disk full, I/O error).
    Storage,
    /// -32005: the runtime is shutting down.
    ShuttingDown,
    /// -32006: the server is at its connection limit, or closed an idle
    /// connection.
    Busy,
    /// -32007: the peer is a command Holon sandboxed (another user
    /// namespace): the control plane is out of its reach.
    Forbidden,
}

impl From<ErrorCode> for i64 {
    fn from(c: ErrorCode) -> i64 {
        match c {
            ErrorCode::ParseError => -32700,
            ErrorCode::InvalidRequest => -32600,
            ErrorCode::MethodNotFound => -32601,
            ErrorCode::InvalidParams => -32602,
            ErrorCode::Internal => -32603,
            ErrorCode::NotFound => -32001,
            ErrorCode::AgentStopped => -32002,
            ErrorCode::Conflict => -32003,
            ErrorCode::Storage => -32004,
            ErrorCode::ShuttingDown => -32005,
            ErrorCode::Busy => -32006,
            ErrorCode::Forbidden => -32007,
        }
    }
}

impl TryFrom<i64> for ErrorCode {
    type Error = String;
    fn try_from(v: i64) -> Result<Self, String> {
        Ok(match v {
            -32700 => ErrorCode::ParseError,
            -32600 => ErrorCode::InvalidRequest,
            -32601 => ErrorCode::MethodNotFound,
            -32602 => ErrorCode::InvalidParams,
            -32603 => ErrorCode::Internal,
            -32001 => ErrorCode::NotFound,
            -32002 => ErrorCode::AgentStopped,
            -32003 => ErrorCode::Conflict,
            -32004 => ErrorCode::Storage,
            -32005 => ErrorCode::ShuttingDown,
            -32006 => ErrorCode::Busy,
            -32007 => ErrorCode::Forbidden,
            other => return Err(format!("unknown error code {other}")),
        })
    }
}

/// Where a failed call failed, as the client saw it. Never on the wire:
/// the server's errors are `Server` wherever they are read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Failure {
    /// The runtime answered with this error.
    #[default]
    Server,
    /// The request or its answer did not get through (the connection
    /// closed, a write failed).
    Transport,
    /// An answer arrived that is not the method's answer type.
    Decode,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, thiserror::Error)]
#[error("{message}")]
pub struct ApiError {
    pub code: ErrorCode,
    pub message: String,
    #[serde(skip)]
    pub failure: Failure,
}

impl ApiError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> ApiError {
        ApiError {
            code,
            message: message.into(),
            failure: Failure::Server,
        }
    }

    /// The request or its answer did not get through.
    pub fn transport(message: impl Into<String>) -> ApiError {
        ApiError {
            failure: Failure::Transport,
            ..ApiError::new(ErrorCode::Internal, message)
        }
    }

    /// The answer is not what the method answers with.
    pub fn decode(message: impl Into<String>) -> ApiError {
        ApiError {
            failure: Failure::Decode,
            ..ApiError::new(ErrorCode::Internal, message)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_codes_round_trip() {
        for c in [
            ErrorCode::ParseError,
            ErrorCode::InvalidParams,
            ErrorCode::NotFound,
            ErrorCode::ShuttingDown,
        ] {
            let n: i64 = c.into();
            assert_eq!(ErrorCode::try_from(n), Ok(c));
        }
    }
}
