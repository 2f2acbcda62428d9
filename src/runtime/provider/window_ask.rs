//! Asking a model's server for its window: which question suits an
//! endpoint, and the bounded requests (time, bytes) that ask it, with the
//! endpoint's credential. What the answers mean is `window_probe`'s.

use super::http::authorized;
use super::registry::ResolvedEndpoint;
use super::window_probe as wp;
use super::wire::WireFormat;

/// The question to ask `endpoint`'s server, if it is one that may answer:
/// Ollama, or a Chat Completions endpoint other than OpenAI's own (whose
/// list says nothing of windows). Anthropic's and OpenAI's models are in
/// the catalog.
pub fn window_ask_for(endpoint: &ResolvedEndpoint) -> Option<wp::WindowAsk> {
    let model = endpoint.model_ref.model.clone();
    if endpoint.model_ref.provider == "ollama" {
        let root = endpoint.base_url.trim_end_matches('/');
        let root = root.strip_suffix("/v1").unwrap_or(root);
        return Some(wp::WindowAsk::OllamaShow {
            url: format!("{root}/api/show"),
            model,
        });
    }
    let chat_elsewhere = endpoint.wire == WireFormat::OpenaiChat
        && endpoint.model_ref.provider != "openai"
        && !endpoint
            .base_url
            .starts_with(super::registry::OPENAI_DEFAULT_BASE_URL);
    chat_elsewhere.then(|| wp::WindowAsk::ModelList {
        url: format!("{}/models", endpoint.base_url.trim_end_matches('/')),
        model,
    })
}

/// Ask `endpoint`'s server (`ask`, from [`window_ask_for`]) with its
/// credential, each request within [`wp::ASK_TIMEOUT`]. Ollama is asked
/// `/api/show` (a Modelfile's `num_ctx`), then `/api/ps` (the window of
/// the model as loaded). `Ok(None)`: it answered and named no window it
/// serves; `Err`: it could not be asked, or what it said is unusable.
pub async fn ask_window(
    client: &reqwest::Client,
    endpoint: &ResolvedEndpoint,
    ask: &wp::WindowAsk,
) -> Result<Option<u64>, String> {
    match ask {
        wp::WindowAsk::OllamaShow { url, model } => {
            let show = client
                .post(url)
                .json(&serde_json::json!({ "model": model }));
            let shown = wp::parse_show(&fetch_json(show, endpoint).await?)?;
            if let Some(n) = shown.served() {
                return Ok(Some(n));
            }
            let ps = url.trim_end_matches("/show").to_owned() + "/ps";
            let loaded = wp::parse_ps(&fetch_json(client.get(ps), endpoint).await?, model)?;
            Ok(match (loaded, shown.trained) {
                (Some(l), Some(t)) => Some(l.min(t)),
                (l, _) => l,
            })
        }
        wp::WindowAsk::ModelList { model, .. } => {
            let body = fetch_json(client.get(ask.url()), endpoint).await?;
            wp::parse_model_list(&body, model)
        }
    }
}

/// One bounded JSON answer (time, bytes) to `request`, sent with the
/// endpoint's credential.
async fn fetch_json(
    request: reqwest::RequestBuilder,
    endpoint: &ResolvedEndpoint,
) -> Result<serde_json::Value, String> {
    let late = || format!("no answer within {} s", wp::ASK_TIMEOUT.as_secs());
    let request = authorized(request.timeout(wp::ASK_TIMEOUT), endpoint)?;
    let read = async {
        let mut response = request.send().await.map_err(|e| match e.is_timeout() {
            true => late(),
            false => e.without_url().to_string(),
        })?;
        let status = response.status();
        if !status.is_success() {
            return Err(format!("it answered HTTP {}", status.as_u16()));
        }
        let mut body = Vec::new();
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| e.without_url().to_string())?
        {
            body.extend_from_slice(&chunk);
            if body.len() > wp::MAX_ANSWER_BYTES {
                return Err(format!(
                    "its answer is over {} MiB",
                    wp::MAX_ANSWER_BYTES >> 20
                ));
            }
        }
        serde_json::from_slice::<serde_json::Value>(&body)
            .map_err(|e| format!("its answer is not JSON: {e}"))
    };
    tokio::time::timeout(wp::ASK_TIMEOUT, read)
        .await
        .map_err(|_| late())?
}
