//! `[mcp_servers.NAME]`: the MCP servers an operator configures, as written
//! (`ServerSection`, in the style Codex CLI's config uses) and as checked
//! (`ServerConfig`). Checking is pure: a section that names both a
//! command and a URL, neither, a bad name or an out-of-range timeout is
//! refused with the key at fault.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;

use crate::model::approval::Approval;

/// One `[mcp_servers.NAME]` table as the operator wrote it.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerSection {
    command: Option<String>,
    args: Option<Vec<String>>,
    env: Option<BTreeMap<String, String>>,
    env_passthrough: Option<Vec<String>>,
    cwd: Option<PathBuf>,
    url: Option<String>,
    bearer_token_env: Option<String>,
    enabled: Option<bool>,
    startup_timeout_secs: Option<u64>,
    tool_timeout_secs: Option<u64>,
    enabled_tools: Option<Vec<String>>,
    disabled_tools: Option<Vec<String>>,
    approval: Option<String>,
    sandbox: Option<String>,
    writable: Option<Vec<PathBuf>>,
}

/// How Holon reaches a server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transport {
    /// A child process speaking MCP on its stdin and stdout.
    Stdio {
        command: String,
        args: Vec<String>,
        /// Set for the server, over the minimal base.
        env: BTreeMap<String, String>,
        /// Variables of Holon's own environment the server may see.
        env_passthrough: Vec<String>,
        cwd: Option<PathBuf>,
    },
    /// The streamable HTTP transport.
    Http {
        url: String,
        /// The variable holding the bearer token (never the token itself).
        bearer_token_env: Option<String>,
    },
}

/// A checked server entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerConfig {
    pub name: String,
    pub transport: Transport,
    pub enabled: bool,
    pub startup_timeout: Duration,
    pub tool_timeout: Duration,
    /// Only these tools are offered (`None`: all).
    pub enabled_tools: Option<BTreeSet<String>>,
    pub disabled_tools: BTreeSet<String>,
    /// Overrides the workspace's approval mode for this server's tools.
    pub approval: Option<Approval>,
    /// Whether a stdio server runs confined (`sandbox = "off"`: not).
    pub sandboxed: bool,
    /// Directories a confined stdio server may write beneath besides its
    /// own (`writable`; the operator's config only, never `.mcp.json`).
    pub writable: Vec<PathBuf>,
    /// The workspace whose `.mcp.json` defined it (`None`: the config
    /// file). Such a server starts only once the operator approved its
    /// command line.
    pub project: Option<PathBuf>,
}

impl ServerConfig {
    /// A stdio server with every default (enabled, default timeouts, all
    /// tools, the workspace's approval, sandboxed), from the config file.
    pub fn stdio(name: &str, command: &str, args: &[&str]) -> ServerConfig {
        ServerConfig {
            name: name.to_owned(),
            transport: Transport::Stdio {
                command: command.to_owned(),
                args: args.iter().map(|a| a.to_string()).collect(),
                env: BTreeMap::new(),
                env_passthrough: Vec::new(),
                cwd: None,
            },
            enabled: true,
            startup_timeout: DEFAULT_STARTUP_TIMEOUT,
            tool_timeout: DEFAULT_TOOL_TIMEOUT,
            enabled_tools: None,
            disabled_tools: BTreeSet::new(),
            approval: None,
            sandboxed: true,
            writable: Vec::new(),
            project: None,
        }
    }

    /// Whether the model is offered the server's tool `name`.
    pub fn offers(&self, name: &str) -> bool {
        self.enabled_tools.as_ref().is_none_or(|e| e.contains(name))
            && !self.disabled_tools.contains(name)
    }

    /// What the operator approves for a project server, as one line: the
    /// variables it sets, the program and its arguments (or the URL).
    /// Everything that decides what runs is in it, so a file changed
    /// after approval (a new `PATH` or `LD_PRELOAD` included) is not
    /// approved.
    pub fn command_line(&self) -> String {
        match &self.transport {
            Transport::Stdio {
                command, args, env, ..
            } => env
                .iter()
                .map(|(k, v)| format!("{k}={}", quoted(v)))
                .chain(std::iter::once(command).chain(args).map(|a| quoted(a)))
                .collect::<Vec<_>>()
                .join(" "),
            Transport::Http { url, .. } => shown_url(url),
        }
    }

    /// The transport's name, as `holon mcp list` shows it.
    pub fn transport_name(&self) -> &'static str {
        match self.transport {
            Transport::Stdio { .. } => "stdio",
            Transport::Http { .. } => "http",
        }
    }
}

pub const DEFAULT_STARTUP_TIMEOUT: Duration = Duration::from_secs(10);
pub const DEFAULT_TOOL_TIMEOUT: Duration = Duration::from_secs(60);

use crate::model::mcp::check_server_name as check_name;

fn seconds(key: &str, value: Option<u64>, default: Duration) -> Result<Duration, (String, String)> {
    match value {
        None => Ok(default),
        Some(s) if (1..=86_400).contains(&s) => Ok(Duration::from_secs(s)),
        Some(s) => Err((
            key.to_owned(),
            format!("{s} is out of range (1 to 86400 seconds)"),
        )),
    }
}

/// Check one section. The error is the key at fault (below
/// `mcp_servers.NAME`) and why.
pub fn check(name: &str, s: ServerSection) -> Result<ServerConfig, (String, String)> {
    check_name(name).map_err(|m| (String::new(), m))?;
    let transport = match (s.command, s.url) {
        (Some(_), Some(_)) => {
            return Err((
                "url".into(),
                "a server has either `command` (stdio) or `url` (HTTP), not both".into(),
            ))
        }
        (None, None) => {
            return Err((
                "command".into(),
                "a server needs `command` (stdio) or `url` (HTTP)".into(),
            ))
        }
        (Some(command), None) => {
            if command.trim().is_empty() {
                return Err(("command".into(), "is empty".into()));
            }
            if s.bearer_token_env.is_some() {
                return Err((
                    "bearer_token_env".into(),
                    "only an HTTP server (`url`) takes a bearer token".into(),
                ));
            }
            let env = s.env.unwrap_or_default();
            if let Some(bad) = env.keys().find(|k| !valid_var(k)) {
                return Err(("env".into(), format!("`{bad}` is not a variable name")));
            }
            let env_passthrough = s.env_passthrough.unwrap_or_default();
            if let Some(bad) = env_passthrough.iter().find(|k| !valid_var(k)) {
                return Err((
                    "env_passthrough".into(),
                    format!("`{bad}` is not a variable name"),
                ));
            }
            Transport::Stdio {
                command,
                args: s.args.unwrap_or_default(),
                env,
                env_passthrough,
                cwd: s.cwd,
            }
        }
        (None, Some(url)) => {
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                return Err((
                    "url".into(),
                    format!("`{url}` is not an http:// or https:// URL"),
                ));
            }
            for (key, set) in [
                ("args", s.args.is_some()),
                ("env", s.env.is_some()),
                ("env_passthrough", s.env_passthrough.is_some()),
                ("cwd", s.cwd.is_some()),
            ] {
                if set {
                    return Err((
                        key.into(),
                        "only a stdio server (`command`) takes this".into(),
                    ));
                }
            }
            if let Some(bad) = s.bearer_token_env.as_ref().filter(|k| !valid_var(k)) {
                return Err((
                    "bearer_token_env".into(),
                    format!("`{bad}` is not a variable name"),
                ));
            }
            Transport::Http {
                url,
                bearer_token_env: s.bearer_token_env,
            }
        }
    };
    let approval = match s.approval.as_deref() {
        None => None,
        Some("never") => Some(Approval::Never),
        Some("on_write") => Some(Approval::OnWrite),
        Some("always") => Some(Approval::Always),
        Some(other) => {
            return Err((
                "approval".into(),
                format!("`{other}` is not one of never, on_write, always"),
            ))
        }
    };
    let sandboxed = match s.sandbox.as_deref() {
        None | Some("on") => true,
        Some("off") => false,
        Some(other) => return Err(("sandbox".into(), format!("`{other}` is not on or off"))),
    };
    let writable = s.writable.unwrap_or_default();
    if !writable.is_empty() {
        if matches!(transport, Transport::Http { .. }) {
            return Err((
                "writable".into(),
                "only a stdio server (`command`) runs in Holon's sandbox".into(),
            ));
        }
        if !sandboxed {
            return Err((
                "writable".into(),
                "the server runs unconfined (sandbox = \"off\"): it can write anywhere already"
                    .into(),
            ));
        }
        for w in &writable {
            check_writable(w).map_err(|m| ("writable".to_owned(), m))?;
        }
    }
    Ok(ServerConfig {
        name: name.to_owned(),
        transport,
        enabled: s.enabled.unwrap_or(true),
        startup_timeout: seconds(
            "startup_timeout_secs",
            s.startup_timeout_secs,
            DEFAULT_STARTUP_TIMEOUT,
        )?,
        tool_timeout: seconds(
            "tool_timeout_secs",
            s.tool_timeout_secs,
            DEFAULT_TOOL_TIMEOUT,
        )?,
        enabled_tools: s.enabled_tools.map(|v| v.into_iter().collect()),
        disabled_tools: s.disabled_tools.unwrap_or_default().into_iter().collect(),
        approval,
        sandboxed,
        writable,
        project: None,
    })
}

/// A `writable` root as written: absolute, plain (no `..`), not `/`.
fn check_writable(path: &std::path::Path) -> Result<(), String> {
    use std::path::Component;
    if !path.is_absolute() {
        return Err(format!("`{}` is not an absolute path", path.display()));
    }
    if path.components().any(|c| c == Component::ParentDir) {
        return Err(format!(
            "`{}` holds `..`: name the directory itself",
            path.display()
        ));
    }
    if path.parent().is_none() {
        return Err("`/` would make the whole file system writable".into());
    }
    Ok(())
}

/// A URL as the operator reads and approves it: a control or hidden
/// character (which URL parsers may drop, or a terminal may act on) and a
/// backslash are escaped, so the line shown is the one connected to.
fn shown_url(url: &str) -> String {
    let mut out = String::new();
    for c in url.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            c if c.is_control() || crate::model::text::needs_escape(c) => {
                crate::model::text::push_escaped(&mut out, c)
            }
            c => out.push(c),
        }
    }
    out
}

/// A word as a shell would need it to read it back as one.
/// Control and hidden format characters are written as `\xNN` or
/// `\u{NNNN}` (so a line cannot hide part of itself from the terminal
/// that shows it), a backslash as `\\` (so no two words read the same:
/// the approval is of this text), and a word holding `=` is quoted, so a
/// program named `K=v` never reads as a variable.
fn quoted(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./:@%+,".contains(&b));
    if plain {
        return word.to_owned();
    }
    let mut out = String::from("'");
    for c in word.chars() {
        match c {
            '\'' => out.push_str("'\\''"),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => out.push_str(&format!("\\x{:02x}", c as u32)),
            c if crate::model::text::needs_escape(c) => {
                crate::model::text::push_escaped(&mut out, c)
            }
            c => out.push(c),
        }
    }
    out.push('\'');
    out
}

/// One entry of a repository's `.mcp.json` (the `mcpServers` format other
/// agent tools read): a stdio server, or an HTTP one by URL.
#[derive(Debug, Deserialize)]
struct ProjectEntry {
    command: Option<String>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    url: Option<String>,
    #[serde(rename = "type")]
    kind: Option<String>,
}

/// A `.mcp.json`'s usable servers, and the entries refused with why.
pub type ProjectServers = (Vec<ServerConfig>, Vec<(String, String)>);

#[derive(Debug, Deserialize)]
struct ProjectFile {
    #[serde(rename = "mcpServers", default)]
    mcp_servers: BTreeMap<String, serde_json::Value>,
}

/// The servers a workspace's `.mcp.json` defines (pure: its text and
/// where it lies), with the entries that cannot be used and why. Project
/// servers keep the defaults (timeouts, sandbox on) and Holon's own
/// environment rule: only the variables the file sets reach them.
pub fn parse_project(text: &str, anchor: &std::path::Path) -> Result<ProjectServers, String> {
    let file: ProjectFile =
        serde_json::from_str(text).map_err(|e| format!(".mcp.json is not valid: {e}"))?;
    let mut servers = Vec::new();
    let mut refused = Vec::new();
    for (name, value) in file.mcp_servers {
        let entry: ProjectEntry = match serde_json::from_value(value) {
            Ok(e) => e,
            Err(e) => {
                refused.push((name, format!("its entry is not valid: {e}")));
                continue;
            }
        };
        if let Some(kind) = entry.kind.as_deref() {
            if !matches!(kind, "stdio" | "http" | "streamable-http") {
                refused.push((name, format!("transport `{kind}` is not supported")));
                continue;
            }
        }
        let section = ServerSection {
            command: entry.command,
            args: (!entry.args.is_empty()).then_some(entry.args),
            env: (!entry.env.is_empty()).then_some(entry.env),
            url: entry.url,
            ..ServerSection::default()
        };
        match check(&name, section) {
            Ok(mut c) => {
                c.project = Some(anchor.to_path_buf());
                // It starts in its workspace, as the file's relative
                // paths expect.
                if let Transport::Stdio { cwd, .. } = &mut c.transport {
                    *cwd = Some(anchor.to_path_buf());
                }
                servers.push(c);
            }
            Err((key, why)) => refused.push((name, format!("{key}: {why}"))),
        }
    }
    Ok((servers, refused))
}

fn valid_var(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn section(text: &str) -> ServerSection {
        toml::from_str(text).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn a_stdio_server_with_its_defaults() {
        let c = check(
            "files",
            section("command = \"npx\"\nargs = [\"-y\", \"srv\"]"),
        );
        let c = c.unwrap_or_else(|e| panic!("{e:?}"));
        assert_eq!(c.transport_name(), "stdio");
        assert!(c.enabled && c.sandboxed);
        assert_eq!(c.startup_timeout, DEFAULT_STARTUP_TIMEOUT);
        assert_eq!(c.tool_timeout, DEFAULT_TOOL_TIMEOUT);
        assert!(c.offers("anything"));
    }

    #[test]
    fn writable_roots_are_the_operators_alone() {
        let c = check("m", section("command = \"x\"\nwritable = [\"/srv/notes\"]")).unwrap();
        assert_eq!(c.writable, [PathBuf::from("/srv/notes")]);
        // A repository's file cannot name any: the key is not read there.
        let text = r#"{"mcpServers": {"m": {"command": "x", "writable": ["/home"]}}}"#;
        let (servers, _) = parse_project(text, std::path::Path::new("/w")).unwrap();
        assert!(servers.iter().all(|s| s.writable.is_empty()), "{servers:?}");
    }

    #[test]
    fn tool_filters_allow_then_deny() {
        let c = check(
            "s",
            section("command = \"x\"\nenabled_tools = [\"a\", \"b\"]\ndisabled_tools = [\"b\"]"),
        );
        let c = c.unwrap_or_else(|e| panic!("{e:?}"));
        assert!(c.offers("a"));
        assert!(!c.offers("b"));
        assert!(!c.offers("c"));
    }

    #[test]
    fn bad_sections_name_their_key() {
        let cases = [
            ("command = \"x\"\nurl = \"http://h\"", "url"),
            ("enabled = true", "command"),
            ("command = \" \"", "command"),
            ("url = \"ftp://h\"", "url"),
            ("url = \"http://h\"\nargs = [\"a\"]", "args"),
            (
                "command = \"x\"\nbearer_token_env = \"T\"",
                "bearer_token_env",
            ),
            ("command = \"x\"\napproval = \"sometimes\"", "approval"),
            ("command = \"x\"\nsandbox = \"maybe\"", "sandbox"),
            (
                "command = \"x\"\ntool_timeout_secs = 0",
                "tool_timeout_secs",
            ),
            (
                "command = \"x\"\nstartup_timeout_secs = 99999",
                "startup_timeout_secs",
            ),
            ("command = \"x\"\nenv = { \"A B\" = \"1\" }", "env"),
            (
                "command = \"x\"\nenv_passthrough = [\"1X\"]",
                "env_passthrough",
            ),
            ("command = \"x\"\nwritable = [\"rel/dir\"]", "writable"),
            ("command = \"x\"\nwritable = [\"/\"]", "writable"),
            ("command = \"x\"\nwritable = [\"/a/../etc\"]", "writable"),
            ("url = \"http://h\"\nwritable = [\"/data\"]", "writable"),
            (
                "command = \"x\"\nsandbox = \"off\"\nwritable = [\"/data\"]",
                "writable",
            ),
        ];
        for (text, key) in cases {
            let err = check("s", section(text)).err().map(|e| e.0);
            assert_eq!(err.as_deref(), Some(key), "{text}");
        }
    }

    #[test]
    fn a_project_file_gives_servers_that_name_their_command_line() {
        let text = r#"{"mcpServers": {
            "files": {"command": "npx", "args": ["-y", "srv", "a dir"], "env": {"K": "v"}},
            "web": {"type": "http", "url": "http://127.0.0.1:9/mcp"},
            "old": {"type": "sse", "url": "http://h/sse"},
            "bad": {"args": ["x"]},
            "odd": 3
        }}"#;
        let (servers, refused) =
            parse_project(text, std::path::Path::new("/repo")).unwrap_or_default();
        let names: Vec<&str> = servers.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["files", "web"]);
        assert_eq!(servers[0].command_line(), "K=v npx -y srv 'a dir'");
        let cwd = match &servers[0].transport {
            Transport::Stdio { cwd, .. } => cwd.clone(),
            Transport::Http { .. } => None,
        };
        assert_eq!(cwd.as_deref(), Some(std::path::Path::new("/repo")));
        assert_eq!(
            servers[0].project.as_deref(),
            Some(std::path::Path::new("/repo"))
        );
        assert_eq!(servers[1].command_line(), "http://127.0.0.1:9/mcp");
        let why: Vec<&str> = refused.iter().map(|r| r.0.as_str()).collect();
        assert_eq!(why, ["bad", "odd", "old"]);
        assert!(parse_project("{", std::path::Path::new("/r")).is_err());
        // A line cannot hide part of itself, and a program named like a
        // variable does not read as one.
        let sneaky = r#"{"mcpServers": {
            "a": {"command": "sh", "args": ["-c", "evil\r\u001b[Knpx ok"]},
            "b": {"command": "K=v", "args": ["npx"]}
        }}"#;
        let (servers, _) = parse_project(sneaky, std::path::Path::new("/r")).unwrap_or_default();
        assert_eq!(servers[0].command_line(), "sh -c 'evil\\x0d\\x1b[Knpx ok'");
        assert_eq!(servers[1].command_line(), "'K=v' npx");
        // Two different commands never read as one line (an approval is
        // of the line): a real newline, the text `\x0a`, a bidi override.
        let two = r#"{"mcpServers": {
            "a": {"command": "echo", "args": ["x\ny"]},
            "b": {"command": "echo", "args": ["x\\x0ay"]},
            "c": {"command": "echo", "args": ["x\u202ey"]}
        }}"#;
        let (servers, _) = parse_project(two, std::path::Path::new("/r")).unwrap_or_default();
        let lines: Vec<String> = servers.iter().map(|s| s.command_line()).collect();
        assert_eq!(
            lines,
            ["echo 'x\\x0ay'", "echo 'x\\\\x0ay'", "echo 'x\\u{202e}y'"]
        );
        // A URL too: what a parser would drop, or a terminal act on.
        let url = shown_url("https://a.example/\r\u{1b}[2K/b\\c");
        assert_eq!(url, "https://a.example/\\u{d}\\u{1b}[2K/b\\\\c");
    }

    #[test]
    fn server_names_build_tool_names() {
        assert!(check_name("github").is_ok());
        assert!(check_name("my-tools_2").is_ok());
        for bad in ["", "a__b", "a.b", "a b", "a_", "_a", &"x".repeat(33)] {
            assert!(check_name(bad).is_err(), "{bad}");
        }
    }
}
