//! Identifier rules, checked at the API boundary before anything happens.
//! Ids name directories (an agent's home) and store keys, so a hostile id
//! such as `../../tmp/x` or `/tmp/x` must be refused before any file,
//! directory or record is made. The documented character sets:
//!
//! - agent ids: 1 to 64 ASCII letters, digits, `-`, `_` and `.`, not
//!   starting with `.` (`validate_agent_id`);
//! - task, work-item, message, request and workspace ids: 1 to 128 ASCII letters,
//!   digits, `-` and `_` (Holon makes them as `task_01…`, `wi_01…`).

/// The longest task, work-item or request id accepted.
pub const MAX_RECORD_ID: usize = 128;

/// What an id names, for the error message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IdKind {
    Agent,
    Task,
    WorkItem,
    Request,
    Workspace,
    Approval,
}

impl IdKind {
    fn noun(self) -> &'static str {
        match self {
            IdKind::Agent => "agent id",
            IdKind::Task => "task id",
            IdKind::WorkItem => "work item id",
            IdKind::Request => "request id",
            IdKind::Workspace => "workspace id",
            IdKind::Approval => "approval id",
        }
    }
}

/// Shown in errors: a hostile id can be huge or hold control characters.
fn shown(id: &str) -> String {
    let mut s: String = id.chars().take(40).collect();
    if id.chars().count() > 40 {
        s.push('…');
    }
    s.escape_debug().to_string()
}

/// Check `id` against the rules for `kind`.
pub fn validate(kind: IdKind, id: &str) -> Result<(), String> {
    match kind {
        IdKind::Agent => {
            if id.len() > 64 || id.chars().any(char::is_control) {
                return Err(format!(
                    "agent id `{}` must be 1 to 64 letters, digits, `-`, `_` or `.`",
                    shown(id)
                ));
            }
            validate_agent_id(id)
        }
        IdKind::Task
        | IdKind::WorkItem
        | IdKind::Request
        | IdKind::Workspace
        | IdKind::Approval => {
            let ok = !id.is_empty()
                && id.len() <= MAX_RECORD_ID
                && id
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
            if ok {
                Ok(())
            } else {
                Err(format!(
                    "{} `{}` must be 1 to {MAX_RECORD_ID} letters, digits, `-` or `_`",
                    kind.noun(),
                    shown(id)
                ))
            }
        }
    }
}

/// Agent ids appear in paths, socket requests and table keys: keep them to
/// a conservative alphabet so none of those can be abused.
pub fn validate_agent_id(id: &str) -> Result<(), String> {
    if id.is_empty() || id.len() > 64 {
        return Err(format!("agent id `{id}` must be 1 to 64 characters long"));
    }
    if !id
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.')
        || id.starts_with('.')
    {
        return Err(format!(
            "agent id `{id}` may contain only letters, digits, `-`, `_` and `.` (not leading)"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hostile_ids_are_refused_and_real_ones_pass() {
        let long = "x".repeat(10_000);
        let hostile = [
            "",
            "../../../../tmp/x",
            "/tmp/x",
            "a\0b",
            "a/b",
            "..",
            ".hidden",
            "a b",
            "tab\t",
            long.as_str(),
        ];
        for kind in [
            IdKind::Agent,
            IdKind::Task,
            IdKind::WorkItem,
            IdKind::Request,
        ] {
            for id in hostile {
                let e = validate(kind, id).err();
                assert!(e.is_some(), "{kind:?} accepted {id:?}");
                assert!(e.unwrap_or_default().len() < 200, "errors stay short");
            }
        }
        assert!(validate(IdKind::Agent, "worker-2.b_x").is_ok());
        assert!(validate(IdKind::Task, "task_01a2069db568754e8adf20ed3f78e644").is_ok());
        assert!(validate(IdKind::WorkItem, "wi_01a2069d").is_ok());
        assert!(validate(IdKind::Task, "a.b").is_err());
    }
}
