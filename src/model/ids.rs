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

/// The most characters a model ref may have.
pub const MAX_MODEL_REF: usize = 256;

/// A model ref, `provider/model`, split: a provider name of letters,
/// digits, `_`, `-` and `.`, and a model name as providers write them
/// (`qwen3:8b`, `anthropic/claude-sonnet-4`, `hf.co/org/repo:Q4_K_M`)
/// with no space, control character, backslash, empty part or `..` part.
pub fn check_model_ref(s: &str) -> Result<(&str, &str), String> {
    let shape = || {
        format!(
            "model `{}` must be written provider/model, e.g. openai/gpt-4.1",
            s.escape_debug()
        )
    };
    if s.chars().count() > MAX_MODEL_REF {
        return Err(format!("a model ref is at most {MAX_MODEL_REF} characters"));
    }
    let Some((p, m)) = s.split_once('/') else {
        return Err(shape());
    };
    let provider_ok = !p.is_empty()
        && p != "."
        && p != ".."
        && p.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_-.".contains(&b));
    let model_ok = !m.is_empty()
        && m.split('/')
            .all(|part| !part.is_empty() && part != "." && part != "..")
        && !m
            .chars()
            .any(|c| c.is_whitespace() || c.is_control() || c == '\\');
    match provider_ok && model_ok {
        true => Ok((p, m)),
        false => Err(format!(
            "{}: the provider is letters, digits, `_`, `-` or `.`; the model has no space, \
             control character, backslash, empty part or `..`",
            shape()
        )),
    }
}

#[cfg(test)]
mod model_ref_tests {
    use super::check_model_ref;

    #[test]
    fn model_refs_are_plain_names() {
        for good in [
            "openai/gpt-4.1",
            "ollama/qwen3:8b",
            "openrouter/anthropic/claude-sonnet-4",
            "ollama/hf.co/org/repo:Q4_K_M",
            "my-endpoint.v2/model_x",
        ] {
            assert!(check_model_ref(good).is_ok(), "{good}");
        }
        for bad in [
            "../../etc/passwd",
            "openai/../../etc/passwd",
            "openai/a//b",
            "openai/",
            "/gpt",
            "open ai/gpt",
            "openai/gpt 4",
            "openai/gpt\u{1b}[2J",
            "openai\\x/gpt",
            "nope",
        ] {
            assert!(check_model_ref(bad).is_err(), "{bad}");
        }
        assert!(check_model_ref(&format!("openai/{}", "x".repeat(300))).is_err());
    }
}
