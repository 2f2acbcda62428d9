//! The checks behind `Config::from_parts` that each own a section or a
//! value (`[policy]`, `[server] listen`, the tool-output budgets, model
//! references) and the error locations they report: file, line, column
//! and the dotted key.

use std::path::Path;

use super::config::{ConfigError, Env, PolicySection, RuntimeSection};

/// `[policy]`: a known approval mode, and allow-list entries that are one
/// line each.
pub(super) fn policy_setting(
    p: &PolicySection,
    at_key: &dyn Fn(&str, String) -> ConfigError,
) -> Result<crate::model::approval::ApprovalPolicy, ConfigError> {
    use crate::model::approval::Approval;
    use crate::model::approval::ApprovalPolicy;
    let approval = match &p.approval {
        None => Approval::OnRequest,
        Some(a) => Approval::parse(a).ok_or_else(|| {
            at_key(
                "policy.approval",
                format!("`{a}` is not an approval mode: {}", Approval::CHOICES),
            )
        })?,
    };
    let entries = |key: &str, v: &Option<Vec<String>>| {
        let v = v.clone().unwrap_or_default();
        match v
            .iter()
            .find(|e| e.trim().is_empty() || e.chars().any(char::is_control))
        {
            Some(bad) => Err(at_key(key, format!("{bad:?} is not an allow-list entry"))),
            None => Ok(v.into_iter().map(|e| e.trim().to_owned()).collect()),
        }
    };
    use crate::model::sandbox::{NetworkAccess, SandboxMode};
    let sandbox = match &p.sandbox {
        None => None,
        Some(m) => Some(SandboxMode::parse(m).ok_or_else(|| {
            at_key(
                "policy.sandbox",
                format!("`{m}` is not a sandbox mode: {}", SandboxMode::CHOICES),
            )
        })?),
    };
    let network = match &p.network {
        None => None,
        Some(n) => Some(NetworkAccess::parse(n).ok_or_else(|| {
            at_key(
                "policy.network",
                format!("`{n}` is not a network setting: {}", NetworkAccess::CHOICES),
            )
        })?),
    };
    Ok(ApprovalPolicy {
        approval,
        allow_commands: entries("policy.allow_commands", &p.allow_commands)?,
        allow_paths: entries("policy.allow_paths", &p.allow_paths)?,
        allow_tools: entries("policy.allow_tools", &p.allow_tools)?,
        sandbox,
        network,
        // Config's reviewer is `[policy] reviewer` (the reviewer setting);
        // this field is a workspace's own.
        reviewer: None,
    })
}

/// `[mcp_servers.NAME]`, each checked; an error names the key at fault.
pub(super) fn mcp_servers(
    sections: std::collections::BTreeMap<String, crate::runtime::settings::mcp::ServerSection>,
    at_key: &dyn Fn(&str, String) -> ConfigError,
) -> Result<Vec<crate::runtime::settings::mcp::ServerConfig>, ConfigError> {
    sections
        .into_iter()
        .map(|(name, section)| {
            crate::runtime::settings::mcp::check(&name, section).map_err(|(key, m)| {
                let at = if key.is_empty() {
                    format!("mcp_servers.{name}")
                } else {
                    format!("mcp_servers.{name}.{key}")
                };
                at_key(&at, m)
            })
        })
        .collect()
}

/// `off`, or an IP:PORT to listen on (port 0 picks a free one).
pub(super) fn listen_setting(v: &str) -> Result<Option<String>, String> {
    let v = v.trim();
    if v.eq_ignore_ascii_case("off") {
        return Ok(None);
    }
    v.parse::<std::net::SocketAddr>()
        .map(|a| Some(a.to_string()))
        .map_err(|_| format!("`{v}` is not IP:PORT (e.g. 127.0.0.1:7464) or `off`"))
}

/// The largest `max_tool_output_tokens` accepted (about 4 MB of text).
const MAX_TOOL_OUTPUT_TOKENS: u64 = 1_000_000;

/// `runtime.default_tool_output_tokens` / `max_tool_output_tokens`, each
/// overridden by its environment variable; the default may not exceed the
/// cap.
pub(super) fn tool_output_budget(
    file: &RuntimeSection,
    env: &Env,
    at_key: &dyn Fn(&str, String) -> ConfigError,
) -> Result<crate::runtime::settings::limits::ToolOutputBudget, ConfigError> {
    let defaults = crate::runtime::settings::limits::ToolOutputBudget::default();
    let pick = |var: &'static str, key: &str, filed: Option<u64>, fallback: u64| {
        let check = |n: u64| (1..=MAX_TOOL_OUTPUT_TOKENS).contains(&n);
        let range = format!("give a number of tokens from 1 to {MAX_TOOL_OUTPUT_TOKENS}");
        match env.get(var) {
            Some(v) => match v.trim().parse::<u64>() {
                Ok(n) if check(n) => Ok(n),
                _ => Err(ConfigError::Env {
                    var,
                    message: format!("`{v}` is not valid: {range}"),
                }),
            },
            None => match filed {
                Some(n) if check(n) => Ok(n),
                Some(n) => Err(at_key(key, format!("{n} is out of range: {range}"))),
                None => Ok(fallback),
            },
        }
    };
    let max_tokens = pick(
        "HOLON_MAX_TOOL_OUTPUT_TOKENS",
        "runtime.max_tool_output_tokens",
        file.max_tool_output_tokens,
        defaults.max_tokens,
    )?;
    let default_tokens = pick(
        "HOLON_DEFAULT_TOOL_OUTPUT_TOKENS",
        "runtime.default_tool_output_tokens",
        file.default_tool_output_tokens,
        defaults.default_tokens.min(max_tokens),
    )?;
    if default_tokens > max_tokens {
        return Err(at_key(
            "runtime.default_tool_output_tokens",
            format!("{default_tokens} is more than max_tool_output_tokens ({max_tokens})"),
        ));
    }
    Ok(crate::runtime::settings::limits::ToolOutputBudget {
        default_tokens,
        max_tokens,
    })
}

/// Model references are `provider/model`, e.g. `openai/gpt-4.1` or
/// `ollama/llama3.2`.
pub fn validate_model_ref(s: &str) -> Result<(), String> {
    crate::runtime::provider::ModelRef::parse(s).map(|_| ())
}

pub(super) fn invalid(path: &Path, text: &str, e: &toml::de::Error) -> ConfigError {
    let offset = e.span().map(|s| s.start).unwrap_or(0).min(text.len());
    let (line, column) = line_col(text, offset);
    // Inside a list, the error is about one element: say what the key
    // takes as a whole.
    let line_text = text.lines().nth(line.saturating_sub(1)).unwrap_or("");
    let before: String = line_text.chars().take(column.saturating_sub(1)).collect();
    let in_list = before.contains('[') && before.contains('=');
    ConfigError::Invalid {
        path: path.to_path_buf(),
        line,
        column,
        key: key_at_line(text, line),
        message: shape_message(e.message(), in_list),
    }
}

/// A type error in the words of the key's expected shape: serde's
/// `invalid type: integer `3`, expected a string` for an element of a
/// list becomes `takes a list of strings; one element is integer `3``,
/// and `expected a sequence` reads `expected a list ([...])`.
pub(super) fn shape_message(message: &str, in_list: bool) -> String {
    let Some(rest) = message.strip_prefix("invalid type: ") else {
        return message.to_owned();
    };
    let Some((found, expected)) = rest.split_once(", expected ") else {
        return message.to_owned();
    };
    let plural = |what: &str| {
        let what = what
            .trim_start_matches("a ")
            .trim_start_matches("an ")
            .replace("sequence", "list");
        match what.as_str() {
            "string" => "strings".to_owned(),
            "boolean" => "booleans (true or false)".to_owned(),
            "u64" | "u32" | "u16" | "usize" | "integer" => "whole numbers".to_owned(),
            other => format!("{other} values"),
        }
    };
    match (in_list, expected) {
        (true, _) => format!(
            "takes a list of {}; one element is {found}",
            plural(expected)
        ),
        (false, "a sequence") => {
            format!("takes a list (written [\"a\", \"b\"]), not {found}")
        }
        (false, _) => format!(
            "takes {}, not {found}",
            expected.replace("sequence", "list")
        ),
    }
}

pub(super) fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let column = before
        .rsplit('\n')
        .next()
        .map(|l| l.chars().count())
        .unwrap_or(0)
        + 1;
    (line, column)
}

/// The dotted key defined on `line` (1-based), qualified by the table
/// header above it: `model.default`. None on a header or blank line.
pub(super) fn key_at_line(text: &str, line: usize) -> Option<String> {
    let mut section: Option<String> = None;
    for (i, raw) in text.lines().enumerate() {
        let l = raw.trim();
        if l.starts_with('[') {
            section = Some(l.trim_matches(|c| c == '[' || c == ']').trim().to_owned());
            if i + 1 == line {
                return section;
            }
            continue;
        }
        if i + 1 == line {
            let key = l
                .split_once('=')
                .map(|(k, _)| k.trim().trim_matches('"').to_owned())?;
            if key.is_empty() {
                return None;
            }
            return Some(match &section {
                Some(s) => format!("{s}.{key}"),
                None => key,
            });
        }
    }
    None
}

/// The line on which a dotted key is set, for errors found after parsing.
pub(super) fn line_of_key(text: &str, dotted: &str) -> Option<usize> {
    let (section, key) = dotted.rsplit_once('.').unwrap_or(("", dotted));
    let mut current = String::new();
    for (i, raw) in text.lines().enumerate() {
        let l = raw.trim();
        if l.starts_with('[') {
            current = l.trim_matches(|c| c == '[' || c == ']').trim().to_owned();
            continue;
        }
        if current == section {
            if let Some((k, _)) = l.split_once('=') {
                if k.trim() == key {
                    return Some(i + 1);
                }
            }
        }
    }
    None
}

/// `[policy] reviewer` and its companions. They hold without a
/// `reviewer` too: a workspace may name its own (`holon workspace policy
/// ID --reviewer`). The policy file is `reviewer_policy` (relative to the
/// config file's directory), else `policy.md` beside the config file;
/// each workspace's own is `workspaces/ID/policy.md` there.
pub(super) fn reviewer_setting(
    file: &Path,
    p: &PolicySection,
    at_key: &dyn Fn(&str, String) -> ConfigError,
) -> Result<crate::runtime::settings::reviewer::ReviewerConfig, ConfigError> {
    use crate::model::review::ReviewerMay;
    use crate::runtime::settings::reviewer::{ReviewerConfig, DEFAULT_HOLD, DEFAULT_TIMEOUT};
    let model = match p.reviewer.as_deref().map(str::trim) {
        None => None,
        Some(m) => {
            validate_model_ref(m).map_err(|e| at_key("policy.reviewer", e))?;
            Some(m.to_owned())
        }
    };
    let may = match p.reviewer_may.as_deref() {
        None => ReviewerMay::Advise,
        Some(v) => ReviewerMay::parse(v).ok_or_else(|| {
            at_key(
                "policy.reviewer_may",
                format!("`{v}` is not one of {}", ReviewerMay::CHOICES),
            )
        })?,
    };
    let secs = |key: &str, v: Option<u64>, range: std::ops::RangeInclusive<u64>, default| match v {
        None => Ok(default),
        Some(s) if range.contains(&s) => Ok(std::time::Duration::from_secs(s)),
        Some(s) => Err(at_key(
            key,
            format!("{s} is out of range ({} to {})", range.start(), range.end()),
        )),
    };
    let timeout = secs(
        "policy.reviewer_timeout_secs",
        p.reviewer_timeout_secs,
        1..=600,
        DEFAULT_TIMEOUT,
    )?;
    let hold = secs(
        "policy.reviewer_hold_secs",
        p.reviewer_hold_secs,
        0..=3600,
        DEFAULT_HOLD,
    )?;
    let dir = file.parent().unwrap_or(Path::new("."));
    let policy_file = Some(match &p.reviewer_policy {
        Some(f) => dir.join(f),
        None => dir.join("policy.md"),
    });
    Ok(ReviewerConfig {
        model,
        policy_file,
        workspaces_dir: Some(dir.join("workspaces")),
        may,
        timeout,
        hold,
    })
}

/// `[server] tls`, `tls_cert`, `tls_key` and `allow_plaintext`: the
/// certificate and key come together (relative paths beside config.toml),
/// and an operator's certificate cannot be given with TLS turned off.
pub(super) fn tls_setting(
    file: &Path,
    s: &super::config::ServerSection,
    at_key: &dyn Fn(&str, String) -> ConfigError,
) -> Result<super::access::TlsSetting, ConfigError> {
    let dir = file.parent().unwrap_or(Path::new("."));
    let own = match (&s.tls_cert, &s.tls_key) {
        (Some(c), Some(k)) => Some((dir.join(c), dir.join(k))),
        (None, None) => None,
        (Some(_), None) => {
            return Err(at_key(
                "server.tls_key",
                "missing: tls_cert needs its tls_key".into(),
            ))
        }
        (None, Some(_)) => {
            return Err(at_key(
                "server.tls_cert",
                "missing: tls_key needs its tls_cert".into(),
            ))
        }
    };
    if own.is_some() && s.tls == Some(false) {
        return Err(at_key(
            "server.tls",
            "false, but tls_cert and tls_key are given: remove them or turn TLS on".into(),
        ));
    }
    Ok(super::access::TlsSetting {
        tls: s.tls.or(own.as_ref().map(|_| true)),
        own,
        allow_plaintext: s.allow_plaintext.unwrap_or(false),
    })
}
