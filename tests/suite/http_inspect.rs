//! The HTTP listener's agent inspection routes, over real HTTP: each
//! refuses a request without the bearer token, answers the socket's typed
//! payload with it, and a hostile or unknown id gets a clear 400 or 404.

use serde_json::Value;

use super::triggers::served;

/// Send `req` (with `token` as its bearer, if any): its status and JSON.
async fn answered(mut req: reqwest::RequestBuilder, token: Option<String>) -> (u16, Value) {
    if let Some(t) = token {
        req = req.bearer_auth(t);
    }
    let r = req.send().await.unwrap();
    let status = r.status().as_u16();
    (status, r.json::<Value>().await.unwrap_or(Value::Null))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inspection_routes_answer_with_the_token_and_refuse_without() {
    let s = served(vec![]).await;
    let url = s.url().await;
    let base = url.split("/trigger/").next().unwrap_or_default().to_owned();
    let client = super::support::http();
    let get = |path: &str, token: Option<&str>| {
        answered(
            client.get(format!("{base}{path}")),
            token.map(str::to_owned),
        )
    };
    let routes = [
        "/agents/list",
        "/agents/main/status",
        "/agents/main/state",
        "/status",
        "/state",
    ];
    for route in routes {
        assert_eq!(get(route, None).await.0, 401, "{route} without a token");
        assert_eq!(get(route, Some("wrong")).await.0, 401, "{route}");
    }
    let token = Some(s.token.as_str());
    let (status, list) = get("/agents/list", token).await;
    assert_eq!(status, 200, "{list}");
    let ids: Vec<&str> = list["agents"]
        .as_array()
        .map(|a| a.iter().filter_map(|e| e["id"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(ids, ["main"], "{list}");
    let (status, summary) = get("/agents/main/status", token).await;
    assert_eq!(
        (status, summary["id"].as_str()),
        (200, Some("main")),
        "{summary}"
    );
    // Where its guidance comes from, never what it says.
    let guidance = summary["loaded_agents_md"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(
        guidance
            .iter()
            .any(|g| g["scope"] == "agent" && g["file_name"] == "AGENTS.md"),
        "{summary}"
    );
    assert!(guidance.iter().all(|g| g.get("text").is_none()));
    assert!(
        list["agents"][0].get("loaded_agents_md").is_none(),
        "lists leave it out"
    );
    // The default agent's aliases answer the same surfaces.
    let (_, alias) = get("/status", token).await;
    assert_eq!(alias["id"], summary["id"]);
    let (status, state) = get("/agents/main/state", token).await;
    assert_eq!(status, 200, "{state}");
    assert_eq!(
        state["agent"]["id"], "main",
        "/state.agent is the status summary"
    );
    let (_, alias) = get("/state", token).await;
    assert_eq!(alias["agent"]["id"], "main");

    let (status, body) = get("/agents/nobody/status", token).await;
    assert_eq!(status, 404, "{body}");
    let (status, body) = get("/agents/..%2Fetc/state", token).await;
    assert_eq!(status, 400, "{body}");
    let (status, body) = get("/agents/list?limit=nope", token).await;
    assert_eq!(status, 400);
    assert!(body["error"].is_string(), "{body}");
    // Without the token the query is not even read.
    assert_eq!(get("/agents/list?limit=nope", None).await.0, 401);

    // A work item over HTTP: `work_item.create` with the body as its
    // parameters; a retry with its request id creates no second one.
    let post = |path: &str, token: Option<&str>, body: &str| {
        let req = client.post(format!("{base}{path}")).body(body.to_owned());
        answered(req, token.map(str::to_owned))
    };
    let path = "/control/agents/main/work-items";
    let item = r#"{"objective": "tidy the logs", "request_id": "req-1"}"#;
    assert_eq!(post(path, None, item).await.0, 401);
    let (status, made) = post(path, token, item).await;
    assert_eq!(status, 200, "{made}");
    assert_eq!(made["objective"], "tidy the logs", "{made}");
    let (_, again) = post(path, token, item).await;
    assert_eq!(again["id"], made["id"], "the retry is the same item");
    let (status, body) = post(path, token, "[1]").await;
    assert_eq!(status, 400, "{body}");
    let (status, body) = post(path, token, r#"{"plan": "no objective"}"#).await;
    assert_eq!(status, 400, "{body}");
    let (status, body) = post("/control/agents/nobody/work-items", token, item).await;
    assert_eq!(status, 404, "{body}");
}
