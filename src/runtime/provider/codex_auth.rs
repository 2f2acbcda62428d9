//! ChatGPT sign-in for `openai-codex/*`: the credentials a request to the
//! Codex backend carries (`Authorization: Bearer` with the access token,
//! and `chatgpt-account-id`). They come from Holon's own sign-in (`holon
//! login openai-codex`, a file in the config directory, mode 0600), else
//! from Codex CLI's (`$CODEX_HOME/auth.json`, default `~/.codex`), which is
//! read and never written. An access token that expires within five
//! minutes is refreshed first (`POST {issuer}/oauth/token`), and the new
//! tokens go to Holon's own file. Tokens never reach a log, an event or a
//! message: errors name the file and the step, never a token.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

/// Where ChatGPT's sign-in lives (`HOLON_CODEX_ISSUER` overrides it).
pub const ISSUER: &str = "https://auth.openai.com";
/// Codex's public OAuth client.
pub const CLIENT_ID: &str = "app_EMoamEEZ73f0CkXaXp7hrann";
/// The Codex backend's API root (`[providers.openai-codex] base_url`
/// overrides it).
pub const BACKEND: &str = "https://chatgpt.com/backend-api/codex";
/// The environment entry naming Holon's own sign-in file (set by the
/// application from its config directory).
pub const HOLON_AUTH_FILE: &str = "HOLON_CODEX_AUTH_FILE";
/// Tokens are refreshed when they expire within this long.
const REFRESH_AHEAD_MS: i64 = 5 * 60 * 1000;

/// Where a runtime looks for its sign-in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodexSignIn {
    /// Holon's own file (`holon login openai-codex`), read and written.
    pub holon_file: Option<PathBuf>,
    /// Codex CLI's `auth.json`, only read.
    pub codex_file: Option<PathBuf>,
    pub issuer: String,
}

/// The tokens, as Codex CLI's `auth.json` keeps them (Holon's file uses
/// the same shape).
#[derive(Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tokens {
    pub access_token: String,
    #[serde(default)]
    pub refresh_token: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id_token: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub account_id: Option<String>,
}

impl std::fmt::Debug for Tokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Tokens(…)")
    }
}

/// A sign-in file: `{"tokens": {...}, "last_refresh": "..."}`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AuthFile {
    pub tokens: Tokens,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_refresh: Option<String>,
}

/// What a request carries.
pub struct Credentials {
    pub access_token: String,
    pub account_id: Option<String>,
}

impl CodexSignIn {
    /// From an environment snapshot: `HOLON_CODEX_AUTH_FILE`, `CODEX_HOME`
    /// (else `HOME/.codex`), `HOLON_CODEX_ISSUER`.
    pub fn from_env(env: &BTreeMap<String, String>) -> CodexSignIn {
        let var = |k: &str| env.get(k).map(|v| v.trim()).filter(|v| !v.is_empty());
        let codex_home = var("CODEX_HOME")
            .map(PathBuf::from)
            .or_else(|| var("HOME").map(|h| Path::new(h).join(".codex")));
        CodexSignIn {
            holon_file: var(HOLON_AUTH_FILE).map(PathBuf::from),
            codex_file: codex_home.map(|h| h.join("auth.json")),
            // Refresh tokens go there: https, or plain http on this machine
            // alone (a test's stub).
            issuer: var("HOLON_CODEX_ISSUER")
                .filter(|i| {
                    i.starts_with("https://")
                        || i.starts_with("http://127.0.0.1")
                        || i.starts_with("http://localhost")
                        || i.starts_with("http://[::1]")
                })
                .unwrap_or(ISSUER)
                .trim_end_matches('/')
                .to_owned(),
        }
    }

    /// The credentials for a request now. Holon's own sign-in is
    /// refreshed first when it is about to expire (one process at a time,
    /// through a lock beside the file; the refresh runs to its end and is
    /// kept even if the request that wanted it is dropped); a broken or
    /// expired one gives way to Codex CLI's. Codex CLI's sign-in is used
    /// as it is and never refreshed here: its refresh token is single-use,
    /// and spending it would sign Codex CLI out.
    pub async fn credentials(&self, client: &reqwest::Client) -> Result<Credentials, SignInError> {
        let mut own_failure = None;
        if let Some(path) = self.holon_file.clone() {
            match read_file(&path) {
                Ok(Some(file)) if !file.tokens.access_token.is_empty() => {
                    let tokens = file.tokens;
                    if !needs_refresh(expiry(&tokens), wall_ms()) {
                        return Ok(tokens.into());
                    }
                    let (this, client) = (self.clone(), client.clone());
                    let refreshed =
                        tokio::spawn(async move { this.refresh_own(&client, None).await })
                            .await
                            .unwrap_or_else(|e| {
                                Err(SignInError::lasting(format!("the refresh failed: {e}")))
                            });
                    match refreshed {
                        Ok(fresh) => return Ok(fresh.into()),
                        // Still valid for a while: use it, try again later.
                        Err(e) if expiry(&tokens).is_some_and(|s| s * 1000 > wall_ms()) => {
                            tracing::warn!(error = %e.message, "ChatGPT sign-in: the refresh failed; the access token is still valid");
                            return Ok(tokens.into());
                        }
                        Err(e) => own_failure = Some(e),
                    }
                }
                Ok(_) => {}
                Err(e) => {
                    tracing::warn!(error = %e, "Holon's ChatGPT sign-in cannot be read");
                    own_failure = Some(SignInError::lasting(e));
                }
            }
        }
        if let Some(path) = &self.codex_file {
            let usable = read_file(path)
                .ok()
                .flatten()
                .filter(|f| !f.tokens.access_token.is_empty());
            if let Some(file) = usable {
                let expired = expiry(&file.tokens).is_some_and(|s| s * 1000 <= wall_ms());
                if !expired {
                    return Ok(file.tokens.into());
                }
                if own_failure.is_none() {
                    return Err(SignInError::lasting(format!(
                        "Codex CLI's ChatGPT sign-in ({}) has expired, and Holon does not \
                         refresh it (that would sign Codex CLI out): run `codex` once to refresh \
                         it, or `holon login openai-codex` for a sign-in of Holon's own",
                        path.display()
                    )));
                }
            }
        }
        Err(match own_failure {
            Some(e) => SignInError {
                message: format!(
                    "Holon's ChatGPT sign-in cannot be used ({}); run `holon login openai-codex` \
                     again",
                    e.message
                ),
                transient: e.transient,
            },
            None => SignInError::lasting(
                "not signed in to ChatGPT: run `holon login openai-codex` (or sign in to Codex \
                 CLI, whose sign-in Holon reads)"
                    .to_owned(),
            ),
        })
    }

    /// The backend refused `refused` before it expired: Holon's own
    /// sign-in, refreshed now (unless another process already replaced
    /// that token). Codex CLI's is not Holon's to refresh.
    pub async fn after_refusal(
        &self,
        client: &reqwest::Client,
        refused: &str,
    ) -> Result<Credentials, SignInError> {
        let own = self
            .holon_file
            .as_deref()
            .and_then(|p| read_file(p).ok().flatten())
            .is_some_and(|f| !f.tokens.access_token.is_empty());
        if !own {
            return Err(SignInError::lasting(
                "the Codex backend refused Codex CLI's ChatGPT sign-in: run `codex` to sign in \
                 again, or `holon login openai-codex`"
                    .to_owned(),
            ));
        }
        let (this, client, refused) = (self.clone(), client.clone(), refused.to_owned());
        tokio::spawn(async move { this.refresh_own(&client, Some(&refused)).await })
            .await
            .unwrap_or_else(|e| Err(SignInError::lasting(format!("the refresh failed: {e}"))))
            .map(Credentials::from)
            .map_err(|e| SignInError {
                message: format!(
                    "the Codex backend refused the ChatGPT sign-in and {}; run `holon login \
                     openai-codex` again",
                    e.message
                ),
                transient: e.transient,
            })
    }

    /// Refresh Holon's own sign-in, holding its lock: read it again first
    /// (another process may have refreshed it meanwhile), refresh, keep.
    async fn refresh_own(
        &self,
        client: &reqwest::Client,
        refused: Option<&str>,
    ) -> Result<Tokens, SignInError> {
        let Some(path) = self.holon_file.clone() else {
            return Err(SignInError::lasting(
                "no file to keep a refresh in".to_owned(),
            ));
        };
        let lock_path = path.with_extension("lock");
        let _lock = tokio::task::spawn_blocking(move || lock_file(&lock_path))
            .await
            .map_err(|e| SignInError::lasting(e.to_string()))?
            .map_err(|e| SignInError::lasting(format!("cannot lock the sign-in: {e}")))?;
        let file = read_file(&path)
            .map_err(SignInError::lasting)?
            .ok_or_else(|| SignInError::lasting("the sign-in file is gone".to_owned()))?;
        // Fresh already (another process refreshed it), unless this very
        // token was just refused.
        let stale = match refused {
            Some(token) => file.tokens.access_token == token,
            None => needs_refresh(expiry(&file.tokens), wall_ms()),
        };
        if !stale {
            return Ok(file.tokens);
        }
        let fresh = self.refresh(client, &file.tokens).await?;
        // Kept for the next request; a file that cannot be written does
        // not lose the tokens this one uses.
        if let Err(e) = self.save(&fresh) {
            tracing::warn!(error = %e, "the refreshed ChatGPT sign-in could not be kept");
        }
        Ok(fresh)
    }

    async fn refresh(
        &self,
        client: &reqwest::Client,
        tokens: &Tokens,
    ) -> Result<Tokens, SignInError> {
        if tokens.refresh_token.is_empty() {
            return Err(SignInError::lasting("there is no refresh token".to_owned()));
        }
        let body = json!({
            "client_id": CLIENT_ID, "grant_type": "refresh_token",
            "refresh_token": tokens.refresh_token, "scope": "openid profile email",
        });
        let answer = post(client, &format!("{}/oauth/token", self.issuer), &body)
            .await
            .map_err(|e| SignInError {
                transient: e.transient(),
                message: format!("the refresh failed: {}", e.message),
            })?;
        let fresh = |k: &str| {
            answer[k]
                .as_str()
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
        };
        let access_token = fresh("access_token").ok_or_else(|| {
            SignInError::lasting("the refresh answered no access token".to_owned())
        })?;
        let mut next = Tokens {
            access_token,
            refresh_token: fresh("refresh_token").unwrap_or_else(|| tokens.refresh_token.clone()),
            id_token: fresh("id_token").or_else(|| tokens.id_token.clone()),
            account_id: tokens.account_id.clone(),
        };
        next.account_id = next.account_id.clone().or_else(|| account_of(&next));
        Ok(next)
    }

    /// Keep tokens in Holon's own file (never Codex CLI's).
    pub fn save(&self, tokens: &Tokens) -> Result<(), String> {
        let Some(path) = &self.holon_file else {
            return Ok(());
        };
        let file = AuthFile {
            tokens: tokens.clone(),
            last_refresh: Some(crate::format_ts(crate::now_ms())),
        };
        write_private(path, &file)
            .map_err(|e| format!("cannot keep the sign-in in {}: {e}", path.display()))
    }
}

/// Write a sign-in file: its directory private, the file 0600, whole or
/// not at all.
pub fn write_private(path: &Path, file: &AuthFile) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    if let Some(dir) = path.parent() {
        use std::os::unix::fs::PermissionsExt;
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)?;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
    }
    let bytes = serde_json::to_vec_pretty(file).map_err(std::io::Error::other)?;
    crate::durable::write(path, &bytes)
}

/// Why the sign-in service did not answer as asked.
#[derive(Debug)]
pub struct PostError {
    /// Its HTTP status (`None`: it could not be reached).
    pub status: Option<u16>,
    pub message: String,
}

impl PostError {
    /// Worth trying again: unreachable, overloaded or failing.
    pub fn transient(&self) -> bool {
        self.status.is_none_or(|s| s == 429 || s >= 500)
    }
}

/// Why a request has no credentials: `transient` when trying again may
/// do (the sign-in service could not be reached), else the operator must
/// act.
#[derive(Debug)]
pub struct SignInError {
    pub message: String,
    pub transient: bool,
}

impl SignInError {
    fn lasting(message: String) -> SignInError {
        SignInError {
            message,
            transient: false,
        }
    }
}

impl From<Tokens> for Credentials {
    fn from(tokens: Tokens) -> Credentials {
        Credentials {
            account_id: tokens.account_id.clone().or_else(|| account_of(&tokens)),
            access_token: tokens.access_token,
        }
    }
}

/// How long a call to the sign-in service may take.
const POST_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// POST JSON to the sign-in service; its answer as JSON, or why not (its
/// status and error code, never what it echoed).
pub async fn post(client: &reqwest::Client, url: &str, body: &Value) -> Result<Value, PostError> {
    let response = client
        .post(url)
        .timeout(POST_TIMEOUT)
        .json(body)
        .send()
        .await
        .map_err(|e| PostError {
            status: None,
            message: format!(
                "the sign-in service could not be reached ({})",
                e.without_url()
            ),
        })?;
    let status = response.status();
    let answer: Value = response.json().await.unwrap_or(Value::Null);
    if !status.is_success() {
        let code = answer["error"]["code"]
            .as_str()
            .or(answer["error"].as_str())
            .unwrap_or("no error code");
        return Err(PostError {
            status: Some(status.as_u16()),
            message: format!("the sign-in service answered {} ({code})", status.as_u16()),
        });
    }
    Ok(answer)
}

/// A sign-in file: `None` when there is none; why it cannot be read
/// (where in the file, never what it holds).
fn read_file(path: &Path) -> Result<Option<AuthFile>, String> {
    match std::fs::read(path) {
        Ok(bytes) => serde_json::from_slice::<AuthFile>(&bytes)
            .map(Some)
            .map_err(|e| {
                format!(
                    "{} is not a sign-in file (line {}, column {})",
                    path.display(),
                    e.line(),
                    e.column()
                )
            }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!("cannot read {}: {e}", path.display())),
    }
}

/// Hold an exclusive lock on `path` (made, private) for as long as the
/// file lives. Blocking.
fn lock_file(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(0o600)
        .open(path)?;
    // SAFETY: flock on a descriptor we own; released when it closes.
    if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(file)
}

/// When a token expires (seconds since the epoch), from its claims.
fn expiry(tokens: &Tokens) -> Option<i64> {
    claims(&tokens.access_token).and_then(|c| c["exp"].as_i64())
}

/// The wall clock (a token's expiry is the issuer's, never a simulated
/// time's).
fn wall_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// Whether a token expiring at `exp` (seconds; `None`: unknown) is
/// refreshed before use at `now_ms`.
pub fn needs_refresh(exp: Option<i64>, now_ms: i64) -> bool {
    match exp {
        Some(exp) => exp.saturating_mul(1000) - now_ms < REFRESH_AHEAD_MS,
        None => false,
    }
}

/// A JWT's claims (its payload, not verified: only read for its expiry
/// and account).
pub fn claims(jwt: &str) -> Option<Value> {
    use base64::Engine;
    let payload = jwt.split('.').nth(1)?;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload.trim_end_matches('='))
        .ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// The ChatGPT account an id token (else the access token) names.
pub fn account_of(tokens: &Tokens) -> Option<String> {
    [
        tokens.id_token.as_deref(),
        Some(tokens.access_token.as_str()),
    ]
    .into_iter()
    .flatten()
    .filter_map(claims)
    .find_map(|c| {
        c["https://api.openai.com/auth"]["chatgpt_account_id"]
            .as_str()
            .map(str::to_owned)
    })
}

#[cfg(test)]
#[path = "codex_auth_tests.rs"]
mod tests;
