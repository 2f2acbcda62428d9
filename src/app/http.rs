//! The HTTP listener every serving runtime runs beside its unix socket
//! (axum on hyper): external trigger ingress (`POST /trigger/{agent}/{token}`,
//! a wake hint with provenance, never a message), the JSON-RPC protocol
//! over WebSocket for remote attach (`GET /ws`, bearer token), and the
//! runtime-scoped control surface of the daemon contract
//! (`GET /control/runtime/status`, `POST /control/runtime/shutdown`, bearer
//! token), and the agent inspection routes (`http_inspect.rs`, bearer
//! token). A WebSocket connection is bridged onto the socket server's own
//! connection handler through a socket pair, so it gets exactly the unix
//! socket's framing, limits and slow-reader bounds.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Path, Query, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::json;
use tokio::net::{TcpListener, UnixStream};
use tokio::sync::watch;

use super::access::{HttpOptions, RateLimit};
use super::control::server::{Admission, ConnectionSlots};
use super::control::{ServerLimits, MAX_LINE};
use super::http_inspect as inspect;
use crate::model::trigger::DeliveryMeta;
use crate::model::trigger::IngressState;
use crate::model::trigger::IngressStatus;
use crate::protocol::RuntimeClient;
use crate::runtime::handle::RuntimeHost;
use crate::runtime::triggers::ops::{Delivery, DeliveryError};
use crate::ui::ws::{bridge_lines, Ends};
use hyper_tungstenite::tungstenite::protocol::WebSocketConfig;

/// The largest trigger body accepted (bytes); larger gets 413.
pub const MAX_BODY: usize = 64 * 1024;

/// A token bucket per trigger, refilled by the runtime's clock (a clock
/// that steps back refills nothing rather than going negative).
struct RateLimits {
    limit: RateLimit,
    buckets: Mutex<HashMap<String, (f64, i64)>>,
}

impl RateLimits {
    fn new(limit: RateLimit) -> RateLimits {
        RateLimits {
            limit,
            buckets: Mutex::default(),
        }
    }

    /// Take one delivery from the trigger's bucket; false when empty.
    fn admit(&self, key: &str) -> bool {
        self.admit_at(key, crate::now_ms())
    }

    fn admit_at(&self, key: &str, now: i64) -> bool {
        let (burst, per_sec) = (f64::from(self.limit.burst), self.limit.per_sec);
        let mut map = self.buckets.lock().unwrap_or_else(|p| p.into_inner());
        let since = |at: i64| Duration::from_millis(u64::try_from(now - at).unwrap_or(0));
        if map.len() > 10_000 {
            map.retain(|_, (_, at)| since(*at) < Duration::from_secs(60));
        }
        let (tokens, at) = map.entry(key.to_owned()).or_insert((burst, now));
        *tokens = (*tokens + since(*at).as_secs_f64() * per_sec).min(burst);
        *at = now;
        if *tokens >= 1.0 {
            *tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

#[derive(Clone)]
pub(super) struct AppState {
    host: RuntimeHost,
    pub(super) client: Arc<dyn RuntimeClient>,
    pub(super) token: Arc<str>,
    shutdown: watch::Receiver<bool>,
    limits: ServerLimits,
    ws_slots: ConnectionSlots,
    rates: Arc<RateLimits>,
}

impl AppState {
    /// The runtime's default agent (`/status`, `/state`).
    pub(super) fn default_agent(&self) -> String {
        self.host.inner.config.default_agent.clone()
    }
}

/// Bind and serve until `shutdown` turns true. A listener that cannot
/// bind leaves the runtime running on its socket; the host's ingress
/// status says why.
pub async fn start(
    host: &RuntimeHost,
    client: Arc<dyn RuntimeClient>,
    options: HttpOptions,
    shutdown: watch::Receiver<bool>,
    limits: ServerLimits,
) -> Option<tokio::task::JoinHandle<()>> {
    let Some(listen) = options.listen.clone() else {
        host.set_ingress(IngressStatus::default());
        return None;
    };
    let access = Some(options.access.as_str().to_owned());
    let down = |error: String| {
        tracing::warn!(%error, "HTTP listener down: trigger ingress and remote attach are off");
        host.set_ingress(IngressStatus {
            state: IngressState::Down,
            http_addr: Some(listen.clone()),
            base_url: None,
            access: access.clone(),
            error: Some(error),
            tls_fingerprint: None,
        });
        None
    };
    let addr = match super::access::check_listen(&listen, options.access) {
        Ok(a) => a,
        Err(e) => return down(e),
    };
    let listener = match TcpListener::bind(addr).await {
        Ok(l) => l,
        Err(e) => return down(format!("cannot listen on {addr}: {e}")),
    };
    let bound = listener
        .local_addr()
        .map(|a| a.to_string())
        .unwrap_or(listen.clone());
    if !addr.ip().is_loopback() && options.tls.is_none() {
        tracing::warn!(addr = %bound, "the HTTP listener is reachable from other hosts and is plaintext ([server] allow_plaintext)");
    }
    let scheme = match options.tls {
        Some(_) => "https",
        None => "http",
    };
    let base_url = options
        .advertise
        .clone()
        .unwrap_or_else(|| format!("{scheme}://{bound}"));
    host.set_ingress(IngressStatus {
        state: IngressState::Listening,
        http_addr: Some(bound.clone()),
        base_url: Some(base_url),
        access,
        error: None,
        tls_fingerprint: options.tls.as_ref().map(|t| t.fingerprint.clone()),
    });
    tracing::info!(addr = %bound, "HTTP listener serving trigger ingress and remote attach");
    let state = AppState {
        host: host.clone(),
        client,
        token: Arc::from(options.token.as_str()),
        shutdown: shutdown.clone(),
        limits,
        ws_slots: ConnectionSlots::new(limits.max_connections),
        rates: Arc::new(RateLimits::new(options.rate)),
    };
    let app = Router::new()
        .route("/trigger/{agent_id}/{token}", post(ingress))
        .route("/ws", get(websocket))
        .route("/control/runtime/status", get(runtime_status))
        .route("/control/runtime/shutdown", post(runtime_shutdown))
        .route(
            "/control/agents/{agent_id}/work-items",
            post(inspect::work_item_create),
        )
        .route("/agents/list", get(inspect::agents_list))
        .route("/agents/{agent_id}/status", get(inspect::agent_status))
        .route("/agents/{agent_id}/state", get(inspect::agent_state))
        .route("/status", get(inspect::default_status))
        .route("/state", get(inspect::default_state))
        .layer(DefaultBodyLimit::max(MAX_BODY))
        .with_state(state);
    let max = super::http_serve::http_slots(
        limits.http_max_connections,
        limits.max_connections,
        super::http_serve::fd_budget(),
    );
    Some(tokio::spawn(super::http_serve::serve(
        listener,
        app,
        shutdown,
        max,
        limits.http_header_timeout,
        options.tls.map(|t| t.acceptor),
    )))
}

pub(super) fn problem(status: StatusCode, message: &str) -> Response {
    (status, Json(json!({ "error": message }))).into_response()
}

fn not_found() -> Response {
    problem(StatusCode::NOT_FOUND, "no such trigger")
}

/// Delivery metadata from the query string (`?source=&resource=&summary=`).
#[derive(Debug, Default, Deserialize)]
struct MetaQuery {
    source: Option<String>,
    resource: Option<String>,
    summary: Option<String>,
}

/// The delivery's metadata: query parameters, overridden by the string
/// fields `source`, `resource`, `summary` of a JSON object body. Any other
/// body is opaque: counted, never read into the agent's context.
fn delivery_of(query: MetaQuery, headers: &HeaderMap, body: &Bytes) -> Result<Delivery, String> {
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(|v| v.chars().take(100).collect::<String>());
    let mut meta = DeliveryMeta {
        source: query.source,
        resource: query.resource,
        summary: query.summary,
    };
    let says_json = content_type
        .as_deref()
        .is_some_and(|c| c.starts_with("application/json"));
    if !body.is_empty() && says_json {
        let value: serde_json::Value =
            serde_json::from_slice(body).map_err(|e| format!("the body is not JSON: {e}"))?;
        if let Some(obj) = value.as_object() {
            let text = |k: &str| obj.get(k).and_then(|v| v.as_str()).map(str::to_owned);
            meta.source = text("source").or(meta.source);
            meta.resource = text("resource").or(meta.resource);
            meta.summary = text("summary").or(meta.summary);
        }
    }
    Ok(Delivery {
        meta,
        content_type,
        body_bytes: body.len() as u64,
    })
}

/// `POST /trigger/{agent_id}/{token}`: a bad agent or token, a revoked or
/// rotated-away one, all get the same 404 and leave no trace; a flood gets
/// 429; a good one gets 202 with what the wake did.
async fn ingress(
    State(st): State<AppState>,
    Path((agent_id, token)): Path<(String, String)>,
    Query(query): Query<MetaQuery>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    if crate::model::ids::validate(crate::model::ids::IdKind::Agent, &agent_id).is_err() {
        return not_found();
    }
    // Token first (a read), so a stranger can neither learn anything nor
    // spend the trigger's rate budget.
    match st.host.trigger_token_valid(&agent_id, &token) {
        Ok(Some(trigger_id)) => {
            if !st.rates.admit(&trigger_id) {
                let mut r = problem(
                    StatusCode::TOO_MANY_REQUESTS,
                    "too many deliveries to this trigger; one wake is already pending",
                );
                r.headers_mut()
                    .insert(header::RETRY_AFTER, header::HeaderValue::from_static("1"));
                return r;
            }
        }
        Ok(None) => return not_found(),
        Err(e) => return problem(StatusCode::SERVICE_UNAVAILABLE, &e.to_string()),
    }
    let delivery = match delivery_of(query, &headers, &body) {
        Ok(d) => d,
        Err(e) => return problem(StatusCode::BAD_REQUEST, &e),
    };
    match st
        .host
        .trigger_deliver(&agent_id, Some(token), delivery)
        .await
    {
        Ok(receipt) => (StatusCode::ACCEPTED, Json(receipt)).into_response(),
        Err(DeliveryError::NotFound) => not_found(),
        Err(DeliveryError::Invalid(e)) => problem(StatusCode::BAD_REQUEST, &e),
        Err(DeliveryError::Runtime(e)) => {
            tracing::warn!(agent_id, error = %e, "trigger delivery failed");
            problem(StatusCode::SERVICE_UNAVAILABLE, &e.to_string())
        }
    }
}

/// Whether the request carries the bearer token (constant time).
pub(super) fn authorized(headers: &HeaderMap, token: &str) -> bool {
    use subtle::ConstantTimeEq;
    let Some(presented) = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim_start().split_once(' '))
        // The scheme is case-insensitive (RFC 9110 §11.1).
        .and_then(|(scheme, token)| scheme.eq_ignore_ascii_case("bearer").then_some(token))
    else {
        return false;
    };
    let (a, b) = (presented.trim().as_bytes(), token.as_bytes());
    a.len() == b.len() && bool::from(a.ct_eq(b))
}

pub(super) fn unauthorized() -> Response {
    let mut r = problem(
        StatusCode::UNAUTHORIZED,
        "a bearer token is required (Authorization: Bearer <token>; see `holon attach --token-file`)",
    );
    r.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        header::HeaderValue::from_static("Bearer"),
    );
    r
}

async fn runtime_status(State(st): State<AppState>, headers: HeaderMap) -> Response {
    if !authorized(&headers, &st.token) {
        return unauthorized();
    }
    match st.host.runtime_status() {
        Ok(s) => Json(s).into_response(),
        Err(e) => problem(StatusCode::SERVICE_UNAVAILABLE, &e.to_string()),
    }
}

async fn runtime_shutdown(State(st): State<AppState>, headers: HeaderMap) -> Response {
    if !authorized(&headers, &st.token) {
        return unauthorized();
    }
    let left = st.host.commands_outliving();
    st.host.request_shutdown();
    let ack = json!({ "shutting_down": true, "commands_left_running": left });
    (StatusCode::ACCEPTED, Json(ack)).into_response()
}

/// `GET /ws`: the JSON-RPC protocol, one message per line's JSON. The
/// upgrade is hyper's, the handshake's answer from tungstenite's accept
/// key (`hyper-tungstenite`), on the same tungstenite the client uses.
/// Only a GET over HTTP/1.1 that hyper can upgrade is answered 101.
async fn websocket(State(st): State<AppState>, mut request: axum::extract::Request) -> Response {
    if !authorized(request.headers(), &st.token) {
        return unauthorized();
    }
    if request.method() != axum::http::Method::GET {
        let mut r = problem(StatusCode::METHOD_NOT_ALLOWED, "`/ws` is opened with GET");
        r.headers_mut()
            .insert(header::ALLOW, header::HeaderValue::from_static("GET"));
        return r;
    }
    let upgradable = request.version() == axum::http::Version::HTTP_11
        && (request.extensions())
            .get::<hyper::upgrade::OnUpgrade>()
            .is_some();
    if !upgradable || !hyper_tungstenite::is_upgrade_request(&request) {
        let mut r = problem(
            StatusCode::UPGRADE_REQUIRED,
            "`/ws` speaks WebSocket only: over HTTP/1.1, send `Connection: Upgrade` and `Upgrade: websocket`",
        );
        r.headers_mut().insert(
            header::UPGRADE,
            header::HeaderValue::from_static("websocket"),
        );
        return r;
    }
    // A frame is read whole before the message is measured: both bounded.
    let config = WebSocketConfig::default()
        .max_message_size(Some(MAX_LINE + 1024))
        .max_frame_size(Some(MAX_LINE + 1024));
    let key_ok = (request.headers().get("sec-websocket-key")).is_none_or(|k| is_key(k.as_bytes()));
    let answer = match key_ok {
        true => hyper_tungstenite::upgrade(&mut request, Some(config)),
        false => Err(hyper_tungstenite::tungstenite::error::ProtocolError::InvalidSecWebSocketKey),
    };
    let (response, upgrading) = match answer {
        Ok(pair) => pair,
        Err(e) => {
            return problem(
                StatusCode::BAD_REQUEST,
                &format!("not a WebSocket handshake: {e}"),
            )
        }
    };
    // At the limit the oldest connection that follows nothing gives way.
    let Some(admission) = st.ws_slots.take() else {
        tracing::info!("a WebSocket connection was refused: every slot follows an agent");
        return problem(
            StatusCode::SERVICE_UNAVAILABLE,
            &format!(
                "the runtime already serves its maximum of {} WebSocket connections, every one \
                 following an agent (`[server] max_connections`); close a console or raise the limit",
                st.limits.max_connections
            ),
        );
    };
    tokio::spawn(async move {
        match upgrading.await {
            Ok(ws) => bridge(ws, st, admission).await,
            Err(e) => tracing::debug!(error = %e, "a WebSocket upgrade did not complete"),
        }
    });
    // The answer has no body (hyper-tungstenite's would give a 101 a
    // Content-Length).
    let (parts, _) = response.into_parts();
    Response::from_parts(parts, axum::body::Body::empty())
}

/// A `Sec-WebSocket-Key` as the protocol has it: 16 bytes in base64 (24
/// characters, the last two `==`).
fn is_key(key: &[u8]) -> bool {
    let b64 = |c: &u8| c.is_ascii_alphanumeric() || *c == b'+' || *c == b'/';
    key.len() == 24 && key.ends_with(b"==") && key[..22].iter().all(b64)
}

/// Carry one WebSocket connection over a socket pair into the control
/// server's connection handler: a text message in is a request line, a
/// line out is a text message; the handler's side ending ends it.
async fn bridge(ws: hyper_tungstenite::HyperWebsocketStream, st: AppState, admission: Admission) {
    let (ours, theirs) = match UnixStream::pair() {
        Ok(p) => p,
        Err(e) => {
            tracing::warn!(error = %e, "cannot bridge a WebSocket connection");
            return;
        }
    };
    let served = tokio::spawn(super::control::server::admitted(
        theirs,
        st.client,
        st.shutdown,
        st.limits.idle_timeout,
        admission,
    ));
    bridge_lines(ws, ours, Ends::Lines).await;
    let _ = served.await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bearer_scheme_is_read_in_any_case() {
        let with = |value: &str| {
            let mut h = HeaderMap::new();
            h.insert(header::AUTHORIZATION, value.parse().unwrap());
            authorized(&h, "s3cret")
        };
        for ok in [
            "Bearer s3cret",
            "bearer s3cret",
            "BEARER s3cret",
            "Bearer  s3cret",
        ] {
            assert!(with(ok), "{ok}");
        }
        for bad in [
            "Bearer wrong",
            "Basic s3cret",
            "Bearers3cret",
            "s3cret",
            "Bearer",
        ] {
            assert!(!with(bad), "{bad}");
        }
    }

    #[test]
    fn a_flood_is_cut_after_the_burst_and_refills() {
        let r = RateLimits::new(RateLimit::default());
        let admitted = (0..100).filter(|_| r.admit("trg")).count();
        assert_eq!(admitted, RateLimit::default().burst as usize);
        assert!(r.admit("other"), "buckets are per trigger");
    }

    #[test]
    fn a_bucket_refills_by_the_clock_and_not_when_it_steps_back() {
        let r = RateLimits::new(RateLimit::default());
        let t0 = 1_000_000;
        while r.admit_at("trg", t0) {}
        assert!(
            !r.admit_at("trg", t0 - 60_000),
            "a clock stepping back refills nothing"
        );
        let one_token_ms = (1000.0 / RateLimit::default().per_sec).ceil() as i64;
        assert!(
            r.admit_at("trg", t0 + one_token_ms),
            "refilled after a token's time"
        );
    }

    #[test]
    fn json_bodies_give_metadata_and_others_stay_opaque() {
        let mut h = HeaderMap::new();
        h.insert(
            header::CONTENT_TYPE,
            "application/json"
                .parse()
                .unwrap_or_else(|_| unreachable!()),
        );
        let body = Bytes::from_static(br#"{"source":"ci","resource":"pr-7","action":"completed"}"#);
        let d = delivery_of(MetaQuery::default(), &h, &body).unwrap_or_default();
        assert_eq!(d.meta.source.as_deref(), Some("ci"));
        assert_eq!(d.meta.resource.as_deref(), Some("pr-7"));
        assert_eq!(d.body_bytes, body.len() as u64);
        assert!(delivery_of(MetaQuery::default(), &h, &Bytes::from_static(b"{nope")).is_err());
        let q = MetaQuery {
            source: Some("github".into()),
            ..MetaQuery::default()
        };
        let d = delivery_of(q, &HeaderMap::new(), &Bytes::from_static(b"x=1")).unwrap_or_default();
        assert_eq!(d.meta.source.as_deref(), Some("github"));
    }
}
