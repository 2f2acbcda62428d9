//! The agent inspection routes of the HTTP listener, bearer-token guarded
//! like `/control`, answering the socket's typed payloads: `GET
//! /agents/list` (`agents.list`: a page of agent summaries), `GET
//! /agents/{id}/status` (the agent's summary), `GET /agents/{id}/state`
//! (the projection bootstrap a client continues from the events), and
//! `GET /status`, `GET /state` for the default agent.

use axum::extract::{Path, Query, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;

use super::http::{authorized, problem, unauthorized, AppState};
use crate::protocol::{ApiError, ErrorCode, Request};

/// `/agents/list` takes the socket method's paging.
#[derive(Debug, Default, Deserialize)]
pub(super) struct ListQuery {
    limit: Option<usize>,
    cursor: Option<String>,
    query: Option<String>,
}

pub(super) async fn agents_list(
    State(st): State<AppState>,
    headers: HeaderMap,
    uri: axum::http::Uri,
) -> Response {
    // The token first: a caller without it learns nothing of the query.
    if !authorized(&headers, &st.token) {
        return unauthorized();
    }
    let q = match Query::<ListQuery>::try_from_uri(&uri) {
        Ok(Query(q)) => q,
        Err(e) => return problem(StatusCode::BAD_REQUEST, &e.body_text()),
    };
    let request = Request::AgentsList {
        limit: q.limit,
        cursor: q.cursor,
        query: q.query,
    };
    answer(&st, &headers, request).await
}

pub(super) async fn agent_status(
    State(st): State<AppState>,
    headers: HeaderMap,
    Path(agent_id): Path<String>,
) -> Response {
    answer(&st, &headers, Request::AgentStatus { agent_id }).await
}

pub(super) async fn agent_state(
    State(st): State<AppState>,
    headers: HeaderMap,
    Path(agent_id): Path<String>,
) -> Response {
    answer(&st, &headers, Request::AgentState { agent_id }).await
}

/// `POST /control/agents/{id}/work-items`: `work_item.create` with the
/// JSON body as the method's parameters (`objective`, and `plan`,
/// `plan_status`, `todo_list`, `request_id` as it takes them).
pub(super) async fn work_item_create(
    State(st): State<AppState>,
    headers: HeaderMap,
    Path(agent_id): Path<String>,
    body: axum::body::Bytes,
) -> Response {
    // The token first: a caller without it learns nothing of the body.
    if !authorized(&headers, &st.token) {
        return unauthorized();
    }
    let mut params: serde_json::Value = match serde_json::from_slice(&body) {
        Ok(v @ serde_json::Value::Object(_)) => v,
        Ok(_) => return problem(StatusCode::BAD_REQUEST, "the body must be a JSON object"),
        Err(e) => {
            return problem(
                StatusCode::BAD_REQUEST,
                &format!("the body is not JSON: {e}"),
            )
        }
    };
    params["agent_id"] = serde_json::Value::String(agent_id);
    let request = serde_json::json!({ "method": "work_item.create", "params": params });
    let request: Request = match serde_json::from_value(request) {
        Ok(r) => r,
        Err(e) => return problem(StatusCode::BAD_REQUEST, &format!("invalid work item: {e}")),
    };
    answer(&st, &headers, request).await
}

pub(super) async fn default_status(State(st): State<AppState>, headers: HeaderMap) -> Response {
    let agent_id = st.default_agent();
    answer(&st, &headers, Request::AgentStatus { agent_id }).await
}

pub(super) async fn default_state(State(st): State<AppState>, headers: HeaderMap) -> Response {
    let agent_id = st.default_agent();
    answer(&st, &headers, Request::AgentState { agent_id }).await
}

/// The request's answer as the socket would give its `result`, or its
/// error with the HTTP status that fits it.
async fn answer(st: &AppState, headers: &HeaderMap, request: Request) -> Response {
    if !authorized(headers, &st.token) {
        return unauthorized();
    }
    if let Err(e) = request.validate_ids() {
        return refused(&e);
    }
    match st.client.call_raw(request).await {
        Ok(json) => ([(header::CONTENT_TYPE, "application/json")], json).into_response(),
        Err(e) => refused(&e),
    }
}

fn refused(e: &ApiError) -> Response {
    let status = match e.code {
        ErrorCode::InvalidParams | ErrorCode::InvalidRequest | ErrorCode::ParseError => {
            StatusCode::BAD_REQUEST
        }
        ErrorCode::NotFound | ErrorCode::MethodNotFound => StatusCode::NOT_FOUND,
        ErrorCode::Conflict | ErrorCode::AgentStopped => StatusCode::CONFLICT,
        ErrorCode::ShuttingDown | ErrorCode::Busy | ErrorCode::Storage => {
            StatusCode::SERVICE_UNAVAILABLE
        }
        ErrorCode::Internal => StatusCode::INTERNAL_SERVER_ERROR,
        ErrorCode::Forbidden => StatusCode::FORBIDDEN,
    };
    problem(status, &e.message)
}
