//! Approvals as they travel: the durable approval record (a gated tool
//! call waits for the operator as a record in the store, not a prompt in
//! one terminal: it survives detach, attach and restart, and the first
//! answer wins), and a workspace's approval policy (its mode, its
//! allow-lists, a change to them, and the action a call would take). The
//! gate itself is the engine's rule (`runtime::approvals::policy::gate`).

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalStatus {
    #[default]
    Pending,
    /// Approved; the call ran (or is running: `result_message_id` unset).
    Granted,
    Denied,
}

impl ApprovalStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            ApprovalStatus::Pending => "pending",
            ApprovalStatus::Granted => "granted",
            ApprovalStatus::Denied => "denied",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ApprovalRecord {
    pub id: String,
    pub agent_id: String,
    #[serde(default)]
    pub status: ApprovalStatus,
    pub tool_name: String,
    pub call_id: String,
    pub arguments: serde_json::Value,
    /// One line for lists: the command, or the files a patch writes.
    pub summary: String,
    /// Why the policy asks.
    pub why: String,
    /// Where the call would run when it was asked.
    pub workspace_id: String,
    pub execution_root: String,
    /// The turn and message the call came from.
    pub run_id: String,
    pub message_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub work_item_id: Option<String>,
    pub requested_at: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answered_at: Option<String>,
    /// The operator's note (a denial's reason).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// Approved with "always": the allow-list now covers calls like it.
    #[serde(default)]
    pub always: bool,
    /// The message that carried the outcome back to the agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_message_id: Option<String>,
    /// What the reviewer model said of it (`[policy] reviewer`), once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub review: Option<super::review::ApprovalReview>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Approval {
    /// Nothing asks but a command's request to run outside the sandbox.
    #[default]
    OnRequest,
    /// Nothing asks; a request to leave the sandbox is refused.
    Never,
    OnWrite,
    Always,
}

impl Approval {
    /// The names `parse` takes, for error messages.
    pub const CHOICES: &'static str = "on_request, never, on_write or always";

    pub fn as_str(self) -> &'static str {
        match self {
            Approval::OnRequest => "on_request",
            Approval::Never => "never",
            Approval::OnWrite => "on_write",
            Approval::Always => "always",
        }
    }

    pub fn parse(s: &str) -> Option<Approval> {
        match s {
            "on_request" => Some(Approval::OnRequest),
            "never" => Some(Approval::Never),
            "on_write" => Some(Approval::OnWrite),
            "always" => Some(Approval::Always),
            _ => None,
        }
    }
}

/// A workspace's approval policy (config `[policy]` is the default for
/// every workspace; `holon workspace policy` overrides one).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApprovalPolicy {
    #[serde(default)]
    pub approval: Approval,
    /// Command prefixes (whole words) that never ask.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allow_commands: Vec<String>,
    /// Path prefixes (relative to the execution root) that ApplyPatch may
    /// write without asking.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allow_paths: Vec<String>,
    /// MCP tools (`mcp__server__tool`) that never ask.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allow_tools: Vec<String>,
    /// Where model commands may write (`None`: `workspace_write`, or the
    /// runtime's `[policy]` for a workspace without its own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<super::sandbox::SandboxMode>,
    /// Whether model commands may use the network (`None`: off, or the
    /// runtime's `[policy]`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<super::sandbox::NetworkAccess>,
    /// Who reviews approval requests here (`None`: config `[policy]
    /// reviewer`): set only by the operator, never by a repository file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reviewer: Option<super::review::ReviewerChoice>,
}

/// What the operator allowed in a workspace by answering "always": kept
/// apart from its policy and added to whichever policy is in force there
/// (its own, or the runtime's default), so a later default still reaches
/// the workspace with these rules on top.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AlwaysAllowed {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allow_commands: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allow_paths: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allow_tools: Vec<String>,
}

impl AlwaysAllowed {
    pub fn is_empty(&self) -> bool {
        *self == AlwaysAllowed::default()
    }

    /// Add a rule; whether it was new.
    pub fn add(
        &mut self,
        command: Option<String>,
        paths: Vec<String>,
        tool: Option<String>,
    ) -> bool {
        let before = self.clone();
        extend_new(&mut self.allow_commands, command);
        extend_new(&mut self.allow_paths, paths);
        extend_new(&mut self.allow_tools, tool);
        *self != before
    }

    /// `policy` with these rules added to its allow-lists.
    pub fn over(&self, mut policy: ApprovalPolicy) -> ApprovalPolicy {
        extend_new(
            &mut policy.allow_commands,
            self.allow_commands.iter().cloned(),
        );
        extend_new(&mut policy.allow_paths, self.allow_paths.iter().cloned());
        extend_new(&mut policy.allow_tools, self.allow_tools.iter().cloned());
        policy
    }
}

/// Add each of `items` not already in `list`, in order.
fn extend_new(list: &mut Vec<String>, items: impl IntoIterator<Item = String>) {
    for item in items {
        if !list.contains(&item) {
            list.push(item);
        }
    }
}

/// Where the runtime's default policy (every workspace without its own)
/// comes from: config `[policy]`, or the operator's `holon policy`, which
/// is kept in the store and wins over the file until reset.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DefaultPolicySource {
    #[default]
    Config,
    Operator,
}

/// The runtime's default policy and where it comes from (`runtime.policy`'s
/// answer, and the `default_policy_changed` event).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DefaultPolicy {
    pub policy: ApprovalPolicy,
    pub source: DefaultPolicySource,
}

/// A change to a workspace's policy (`workspace.policy`): the mode, and
/// entries added to the allow-lists; `reset` first returns the workspace
/// to the runtime's default (or the default to config `[policy]`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PolicyChange {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval: Option<Approval>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allow_commands: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allow_paths: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<super::sandbox::SandboxMode>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<super::sandbox::NetworkAccess>,
    /// A reviewer for here: `provider/model`, `off`, or `default`
    /// (config `[policy] reviewer` again).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reviewer: Option<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub reset: bool,
    /// Rules to remove, as listed: an "always" rule or an allow-list
    /// entry (a command prefix, a path, an MCP tool).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub forget: Vec<String>,
}

impl AlwaysAllowed {
    /// Remove `rule` from whichever list holds it; whether one did.
    pub fn forget(&mut self, rule: &str) -> bool {
        let lists = [
            &mut self.allow_commands,
            &mut self.allow_paths,
            &mut self.allow_tools,
        ];
        forget_in(lists, rule)
    }
}

impl ApprovalPolicy {
    /// Remove `rule` from whichever allow-list holds it; whether one did.
    pub fn forget(&mut self, rule: &str) -> bool {
        let lists = [
            &mut self.allow_commands,
            &mut self.allow_paths,
            &mut self.allow_tools,
        ];
        forget_in(lists, rule)
    }
}

/// Remove `rule` from each of `lists`; whether any held it.
fn forget_in(lists: [&mut Vec<String>; 3], rule: &str) -> bool {
    let mut found = false;
    for list in lists {
        let before = list.len();
        list.retain(|r| r != rule);
        found |= list.len() != before;
    }
    found
}

impl PolicyChange {
    /// Whether the change asks for nothing (a read).
    pub fn is_empty(&self) -> bool {
        *self == PolicyChange::default()
    }

    /// The policy after the change, or why an entry is refused.
    pub fn apply(
        &self,
        current: Option<&ApprovalPolicy>,
        runtime: &ApprovalPolicy,
    ) -> Result<Option<ApprovalPolicy>, String> {
        for e in self
            .allow_commands
            .iter()
            .chain(&self.allow_paths)
            .chain(&self.forget)
        {
            if e.trim().is_empty() || e.chars().any(char::is_control) || e.len() > 512 {
                return Err(format!("{e:?} is not an allow-list entry"));
            }
        }
        if let Some(r) = &self.reviewer {
            super::review::ReviewerChoice::parse(r)?;
        }
        let nothing_else = self.approval.is_none()
            && self.sandbox.is_none()
            && self.network.is_none()
            && self.reviewer.is_none()
            && self.allow_commands.is_empty()
            && self.allow_paths.is_empty()
            && self.forget.is_empty();
        if self.reset && nothing_else {
            return Ok(None);
        }
        let mut p = match (self.reset, current) {
            (false, Some(own)) => own.clone(),
            _ => runtime.clone(),
        };
        if let Some(a) = self.approval {
            p.approval = a;
        }
        if let Some(m) = self.sandbox {
            p.sandbox = Some(m);
        }
        if let Some(n) = self.network {
            p.network = Some(n);
        }
        if let Some(r) = &self.reviewer {
            p.reviewer = super::review::ReviewerChoice::parse(r)?;
        }
        for (list, add) in [
            (&mut p.allow_commands, &self.allow_commands),
            (&mut p.allow_paths, &self.allow_paths),
        ] {
            for e in add {
                let e = e.trim().to_owned();
                if !list.contains(&e) {
                    list.push(e);
                }
            }
        }
        for rule in &self.forget {
            if !p.forget(rule.trim()) {
                let shown = super::text::escape_hidden(rule.trim());
                return Err(format!("no rule `{shown}` to forget here"));
            }
        }
        Ok(Some(p))
    }
}

/// The most of a summary or reason an approval record keeps.
const SUMMARY_MAX: usize = 300;

/// A summary or reason kept whole up to `SUMMARY_MAX` characters; past
/// that cut, and the cut said: how much is left out, the whole text's
/// digest, and where the whole call is (`holon approvals --json` prints
/// its arguments). The operator never answers a command cut without a
/// mark, and a granted call is held to this same text.
pub fn approval_text(text: &str) -> String {
    use sha2::{Digest, Sha256};
    let total = text.chars().count();
    if total <= SUMMARY_MAX {
        return text.to_owned();
    }
    let digest = Sha256::digest(text.as_bytes());
    let hex: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
    let head: String = text.chars().take(SUMMARY_MAX - 100).collect();
    format!(
        "{head}… [{} more characters, sha256:{hex}; `holon approvals --json` shows the whole call]",
        total - (SUMMARY_MAX - 100)
    )
}

/// What a tool call would do, as far as the gate cares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// A shell command (ExecCommand).
    Command(String),
    /// Shell commands run one after another (ExecCommandBatch): asked
    /// about together when any one of them would be asked about alone.
    Commands(Vec<String>),
    /// Files a patch writes (ApplyPatch), relative to the root.
    Write(Vec<String>),
    /// A command the model asks to run outside the sandbox (ExecCommand
    /// with `escalate`), and why.
    Escape { cmd: String, justification: String },
    /// A directory outside every attached workspace becomes the writable
    /// root (UseWorkspace): leaving the sandbox's roots, asked like an
    /// escape.
    Workspace { path: String },
    /// A call to an MCP server's tool, by the name the model calls it;
    /// a write unless the server says it only reads. `approval` is the
    /// server's own mode, over the workspace's.
    Tool {
        name: String,
        read_only: bool,
        approval: Option<Approval>,
    },
}

/// Whether `cmd` joins commands or redirects: then it is judged as a
/// whole, never by its first word.
pub fn compound(cmd: &str) -> bool {
    const OPERATORS: &[&str] = &[";", "&", "|", ">", "<", "`", "$(", "\n"];
    OPERATORS.iter().any(|op| cmd.contains(op))
}

/// What "always allow" adds to the allow-lists for `action`: a command's
/// program and subcommand (`cargo test`, `make`; a file name is no
/// subcommand: `touch a.txt` adds `touch`), or the patch's paths.
/// A compound command adds nothing (it could never match).
pub fn always_rule(action: &Action) -> (Option<String>, Vec<String>) {
    match action {
        Action::Command(cmd) if !compound(cmd) => {
            let mut words = cmd.split_whitespace();
            let first = words.next().unwrap_or_default();
            let rule = match words.next() {
                Some(w)
                    if !w.starts_with('-')
                        && !w.contains(['/', '=', '.'])
                        && !w.contains(|c: char| c.is_ascii_uppercase()) =>
                {
                    format!("{first} {w}")
                }
                _ => first.to_owned(),
            };
            ((!rule.is_empty()).then_some(rule), Vec::new())
        }
        Action::Command(_) => (None, Vec::new()),
        // A batch is approved as a whole: "always" adds nothing.
        Action::Commands(_) => (None, Vec::new()),
        Action::Write(paths) => (None, paths.clone()),
        // Leaving the sandbox is asked every time; a tool is allowed by
        // name (`always_tool`).
        Action::Escape { .. } | Action::Workspace { .. } | Action::Tool { .. } => {
            (None, Vec::new())
        }
    }
}

/// What "always allow" adds to the tool allow-list for `action`: the
/// tool's name.
pub fn always_tool(action: &Action) -> Option<String> {
    match action {
        Action::Tool { name, .. } => Some(name.clone()),
        _ => None,
    }
}
