//! External triggers as they travel: a trigger's descriptor and status,
//! what a delivery says about itself, and the HTTP listener's state. The
//! capability tokens and the matching of deliveries to waits live in the
//! engine (`runtime::triggers`).

use serde::{Deserialize, Serialize};

/// The URL path an external system posts to. The agent id is not secret;
/// the token is.
pub fn trigger_path(agent_id: &str, token: &str) -> String {
    format!("/trigger/{agent_id}/{token}")
}

/// How a delivery is disposed of. Only `wake_hint` is provisioned: a
/// callback body never becomes an agent message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DeliveryMode {
    #[default]
    WakeHint,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TriggerStatus {
    #[default]
    Active,
    /// Replaced by a newer descriptor (`replaced_by`); its URL fails.
    Rotated,
    /// Revoked by the operator; its URL fails and none replaces it until
    /// the operator rotates.
    Revoked,
}

impl TriggerStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            TriggerStatus::Active => "active",
            TriggerStatus::Rotated => "rotated",
            TriggerStatus::Revoked => "revoked",
        }
    }
}

/// A descriptor as clients and events see it: everything but the token.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TriggerDescriptor {
    pub external_trigger_id: String,
    pub target_agent_id: String,
    #[serde(default)]
    pub delivery_mode: DeliveryMode,
    #[serde(default)]
    pub status: TriggerStatus,
    #[serde(default)]
    pub trigger_count: u64,
    #[serde(default)]
    pub last_triggered_at: Option<String>,
    #[serde(default)]
    pub created_at: String,
    #[serde(default)]
    pub updated_at: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replaced_by: Option<String>,
}

/// What an external system (or `holon trigger deliver`) says about a
/// delivery. All optional; never a message to the agent, only provenance
/// on the wake hint.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeliveryMeta {
    /// Which system fired (e.g. `github`, `ci`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// What changed there (a PR, a pipeline id): matched against a wait's
    /// `external_ref`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource: Option<String>,
    /// A one-line description, shown to the agent and the operator.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
}

/// The longest `source`, `resource` or `summary` kept (characters).
pub const MAX_META_CHARS: usize = 512;

impl DeliveryMeta {
    /// Trimmed, empty fields dropped, each bounded; a control character is
    /// refused so a delivery cannot forge lines in the prompt or the log.
    pub fn checked(self) -> Result<DeliveryMeta, String> {
        fn field(name: &str, v: Option<String>) -> Result<Option<String>, String> {
            let Some(v) = v else { return Ok(None) };
            let v = v.trim();
            if v.is_empty() {
                return Ok(None);
            }
            if v.chars().count() > MAX_META_CHARS {
                return Err(format!(
                    "`{name}` is longer than {MAX_META_CHARS} characters"
                ));
            }
            if v.chars().any(char::is_control) {
                return Err(format!("`{name}` contains a control character"));
            }
            Ok(Some(v.to_owned()))
        }
        Ok(DeliveryMeta {
            source: field("source", self.source)?,
            resource: field("resource", self.resource)?,
            summary: field("summary", self.summary)?,
        })
    }
}

/// Where the HTTP listener stands, for `runtime.status`, `trigger show`
/// and the prompt. Process state, not durable: each start binds anew.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct IngressStatus {
    pub state: IngressState,
    /// The address the listener is bound to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http_addr: Option<String>,
    /// What trigger URLs start with: `--advertise`, else `http://` and the
    /// bound address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    /// `local`, `lan` or `tailnet`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub access: Option<String>,
    /// Why the listener is down.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The TLS certificate's fingerprint (`SHA256:…`), when the listener
    /// serves TLS: what a `wss://` console pins.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls_fingerprint: Option<String>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IngressState {
    /// This process serves no HTTP (a one-shot `holon run`, or
    /// `[server] listen = "off"`).
    #[default]
    Off,
    Listening,
    /// Configured but not bound (address taken, not allowed): the runtime
    /// runs on its socket and says why here.
    Down,
}

impl IngressStatus {
    /// The URL for `token`, when the listener is up.
    pub fn trigger_url(&self, agent_id: &str, token: &str) -> Option<String> {
        match (self.state, &self.base_url) {
            (IngressState::Listening, Some(base)) => Some(format!(
                "{}{}",
                base.trim_end_matches('/'),
                trigger_path(agent_id, token)
            )),
            _ => None,
        }
    }

    /// One line for status output.
    pub fn describe(&self) -> String {
        match self.state {
            IngressState::Off => "off (no HTTP listener in this process)".to_owned(),
            IngressState::Listening => format!(
                "listening on {} ({} access, {})",
                self.http_addr.as_deref().unwrap_or("?"),
                self.access.as_deref().unwrap_or("local"),
                match &self.tls_fingerprint {
                    Some(f) => format!("TLS {f}"),
                    None => "plaintext".to_owned(),
                }
            ),
            IngressState::Down => format!("down: {}", self.error.as_deref().unwrap_or("not bound")),
        }
    }
}
