//! One request line, checked: JSON, an object, `jsonrpc` 2.0, a valid id
//! (echoed as the client wrote it), no key said twice, a known method and
//! object params; then either a reply already (a malformed request), a
//! subscription for the connection, or a call for the runtime.

use serde_json::{json, Value};

use crate::protocol::jsonrpc::error_line;
use crate::protocol::{ErrorCode, Request, METHODS};

pub(super) type EchoId = String;

pub(super) const NULL_ID: &str = "null";

/// Requests of one connection run together at most (a pipelining
/// client's burst).
/// The request's `id` as the client wrote it, when it is a number.
fn raw_numeric_id(line: &[u8]) -> Option<EchoId> {
    #[derive(serde::Deserialize)]
    struct IdOnly<'a> {
        #[serde(borrow, default)]
        id: Option<&'a serde_json::value::RawValue>,
    }
    let parsed: IdOnly<'_> = serde_json::from_slice(line).ok()?;
    let raw = parsed.id?.get().trim();
    raw.starts_with(|c: char| c == '-' || c.is_ascii_digit())
        .then(|| raw.to_owned())
}

/// One request line, checked.
pub(super) enum Line {
    /// Answered already (a malformed request).
    Reply(String),
    /// `events.subscribe` / `events.unsubscribe`: handled in order on the
    /// connection, which owns its subscriptions.
    Subscription {
        rid: EchoId,
        has_id: bool,
        method: String,
        params: Value,
    },
    /// Any other method: batched with the calls next to it in a burst.
    Call {
        rid: EchoId,
        has_id: bool,
        request: Request,
    },
}

/// A top-level key that appears twice in the JSON object `line`.
fn duplicate_key(line: &[u8]) -> Option<String> {
    struct Keys(Option<String>);
    impl<'de> serde::Deserialize<'de> for Keys {
        fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Keys, D::Error> {
            struct Visit;
            impl<'de> serde::de::Visitor<'de> for Visit {
                type Value = Keys;
                fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                    f.write_str("an object")
                }
                fn visit_map<A: serde::de::MapAccess<'de>>(
                    self,
                    mut map: A,
                ) -> Result<Keys, A::Error> {
                    let mut seen = std::collections::HashSet::new();
                    let mut twice = None;
                    while let Some(k) = map.next_key::<std::borrow::Cow<'de, str>>()? {
                        map.next_value::<serde::de::IgnoredAny>()?;
                        if twice.is_none() && seen.contains(&k) {
                            twice = Some(k.clone().into_owned());
                        }
                        seen.insert(k);
                    }
                    Ok(Keys(twice))
                }
            }
            d.deserialize_map(Visit)
        }
    }
    serde_json::from_slice::<Keys>(line).ok().and_then(|k| k.0)
}

/// Check one request line and say what it asks.
pub(super) fn parse_line(line: &[u8]) -> Line {
    match parse_checked(line) {
        Ok(l) => l,
        Err(reply) => Line::Reply(reply),
    }
}

fn parse_checked(line: &[u8]) -> Result<Line, String> {
    let value: Value = match serde_json::from_slice(line) {
        Ok(v) => v,
        Err(e) => {
            return Err(error_line(
                NULL_ID,
                ErrorCode::ParseError,
                &format!("parse error: {e}"),
            ))
        }
    };
    let Some(obj) = value.as_object() else {
        return Err(error_line(
            NULL_ID,
            ErrorCode::InvalidRequest,
            "a request must be a JSON object",
        ));
    };
    // JSON lets a later key silently replace an earlier one; a request
    // whose `id` or `method` is said twice is ambiguous, so refused.
    if let Some(key) = duplicate_key(line) {
        return Err(error_line(
            NULL_ID,
            ErrorCode::InvalidRequest,
            &format!("the key `{key}` appears twice in the request"),
        ));
    }
    let id = obj.get("id").cloned();
    let rid: EchoId = match &id {
        Some(Value::Number(_)) => raw_numeric_id(line).unwrap_or_else(|| NULL_ID.to_owned()),
        Some(v) => v.to_string(),
        None => NULL_ID.to_owned(),
    };
    if !matches!(
        &id,
        None | Some(Value::Null | Value::String(_) | Value::Number(_))
    ) {
        return Err(error_line(
            NULL_ID,
            ErrorCode::InvalidRequest,
            "id must be a string, a number or null",
        ));
    }
    if obj.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err(error_line(
            rid.as_str(),
            ErrorCode::InvalidRequest,
            "jsonrpc must be \"2.0\"",
        ));
    }
    let Some(method) = obj.get("method").and_then(Value::as_str) else {
        return Err(error_line(
            rid.as_str(),
            ErrorCode::InvalidRequest,
            "method must be a string",
        ));
    };
    if !METHODS.contains(&method) {
        return Err(error_line(
            rid.as_str(),
            ErrorCode::MethodNotFound,
            &format!("no method `{method}` (see docs/protocol.md)"),
        ));
    }
    let params = obj.get("params").cloned().unwrap_or(Value::Null);
    if !matches!(params, Value::Null | Value::Object(_)) {
        return Err(error_line(
            rid.as_str(),
            ErrorCode::InvalidParams,
            "params must be an object",
        ));
    }
    let has_id = id.is_some();
    if method == "events.subscribe" || method == "events.unsubscribe" {
        return Ok(Line::Subscription {
            rid,
            has_id,
            method: method.to_owned(),
            params,
        });
    }
    // Methods without parameters, or whose parameters are all optional,
    // accept absent, null or `{}` params.
    let empty = params.is_null() || params.as_object().is_some_and(|o| o.is_empty());
    let mut req = serde_json::Map::new();
    req.insert("method".into(), json!(method));
    if !params.is_null() {
        req.insert("params".into(), params);
    }
    let parsed = serde_json::from_value::<Request>(Value::Object(req)).or_else(|e| {
        if empty {
            serde_json::from_value::<Request>(json!({ "method": method }))
                .or_else(|_| {
                    serde_json::from_value::<Request>(json!({ "method": method, "params": {} }))
                })
                .map_err(|_| e)
        } else {
            Err(e)
        }
    });
    match parsed {
        Ok(request) => Ok(Line::Call {
            rid,
            has_id,
            request,
        }),
        Err(e) => Err(error_line(
            &rid,
            ErrorCode::InvalidParams,
            &format!("invalid params for `{method}`: {e}"),
        )),
    }
}
