//! Other machines' runtimes, by name: `[remotes.NAME]` in config.toml
//! (`url = "ssh://…"`, or `"wss://…"` with `fingerprint` and `token_file`),
//! checked when the config loads, reached as an `Endpoint`, and added or
//! removed by `holon remotes add|remove`, which edit config.toml keeping
//! its comments and layout. Each runtime stays independent: a remote is
//! only where this machine's console and commands connect.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::config::ConfigError;
use crate::ui::ssh::SshTarget;
use crate::ui::ws::Endpoint;

/// `[remotes.NAME]` as written.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RemoteSection {
    pub url: String,
    pub fingerprint: Option<String>,
    pub token_file: Option<PathBuf>,
}

/// A checked remote.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Remote {
    pub name: String,
    pub url: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fingerprint: Option<String>,
    /// Absolute: relative paths are taken beside config.toml, `~/` under
    /// the user's home.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token_file: Option<PathBuf>,
}

/// The name this machine's own runtime goes by beside the remotes.
pub const LOCAL: &str = "local";
/// The name an attached console gives the address it was opened on when
/// no remote names it.
pub const ATTACHED: &str = "attached";

/// A remote's name: short, lower case, a word a key or `/runtime` takes.
pub fn name_ok(name: &str) -> Result<(), String> {
    let ok = !name.is_empty()
        && name.len() <= 32
        && name.starts_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_');
    match (ok, name == LOCAL || name == ATTACHED) {
        (true, false) => Ok(()),
        (_, true) => Err(format!(
            "`{name}` names this console's own runtime; give the remote another name"
        )),
        (false, _) => Err(format!(
            "`{name}` is not a remote's name (lower-case letters, digits, - and _; at most 32)"
        )),
    }
}

impl Remote {
    /// Check one remote: its name, its URL, and what its scheme needs (a
    /// `wss://` or `ws://` one a token file, a `wss://` one a fingerprint;
    /// an `ssh://` one neither).
    pub fn checked(
        name: &str,
        section: &RemoteSection,
        config_dir: &Path,
    ) -> Result<Remote, (String, String)> {
        let at = |key: &str| format!("remotes.{name}.{key}");
        name_ok(name).map_err(|m| (format!("remotes.{name}"), m))?;
        let url = section.url.trim().to_owned();
        let token_file = section.token_file.as_deref().map(|p| expand(p, config_dir));
        if url.starts_with("ssh://") {
            SshTarget::parse(&url).map_err(|m| (at("url"), m))?;
            if section.fingerprint.is_some() || token_file.is_some() {
                let m = "an ssh:// remote takes no fingerprint or token_file".to_owned();
                return Err((at("url"), m));
            }
        } else {
            // The token is read when connecting; its file must be named.
            Endpoint::websocket(&url, String::new(), section.fingerprint.as_deref())
                .map_err(|m| (at("url"), m))?;
            if token_file.is_none() {
                let m = "missing: a ws:// or wss:// remote needs the runtime's token file".into();
                return Err((at("token_file"), m));
            }
        }
        Ok(Remote {
            name: name.to_owned(),
            url,
            fingerprint: section.fingerprint.clone(),
            token_file,
        })
    }

    /// Where to connect (reading the token file now).
    pub fn endpoint(&self) -> anyhow::Result<Endpoint> {
        if self.url.starts_with("ssh://") {
            return Ok(Endpoint::Ssh(
                SshTarget::parse(&self.url).map_err(anyhow::Error::msg)?,
            ));
        }
        let file = self.token_file.as_deref().unwrap_or(Path::new(""));
        let token = super::access::load_token(Path::new(""), Some(file))?;
        Endpoint::websocket(&self.url, token, self.fingerprint.as_deref())
            .map_err(anyhow::Error::msg)
    }
}

/// `~/x` under the user's home; a relative path beside config.toml.
fn expand(path: &Path, config_dir: &Path) -> PathBuf {
    if let Ok(rest) = path.strip_prefix("~") {
        if let Some(home) = std::env::var_os("HOME") {
            return PathBuf::from(home).join(rest);
        }
    }
    config_dir.join(path)
}

/// Every `[remotes.NAME]`, checked (from `Config::from_parts`).
pub(super) fn check(
    file: &Path,
    sections: &BTreeMap<String, RemoteSection>,
    at_key: &dyn Fn(&str, String) -> ConfigError,
) -> Result<BTreeMap<String, Remote>, ConfigError> {
    let dir = file.parent().unwrap_or(Path::new("."));
    let mut out = BTreeMap::new();
    for (name, section) in sections {
        let remote = Remote::checked(name, section, dir).map_err(|(k, m)| at_key(&k, m))?;
        out.insert(name.clone(), remote);
    }
    Ok(out)
}

/// config.toml's text with `[remotes.NAME]` set to `section` (replacing
/// one of that name only when `replace`), everything else as it was.
pub fn with_remote(
    text: &str,
    name: &str,
    section: &RemoteSection,
    replace: bool,
) -> Result<String, String> {
    use toml_edit::{value, DocumentMut, Item, Table};
    let mut doc: DocumentMut = text.parse().map_err(|e| format!("config.toml: {e}"))?;
    let remotes = doc
        .entry("remotes")
        .or_insert_with(|| {
            let mut t = Table::new();
            t.set_implicit(true);
            Item::Table(t)
        })
        .as_table_mut()
        .ok_or("config.toml: `remotes` is not a table")?;
    if remotes.contains_key(name) && !replace {
        return Err(format!(
            "a remote named `{name}` is configured already (--replace to change it)"
        ));
    }
    let mut table = Table::new();
    table.insert("url", value(section.url.as_str()));
    if let Some(f) = &section.fingerprint {
        table.insert("fingerprint", value(f.as_str()));
    }
    if let Some(t) = &section.token_file {
        table.insert("token_file", value(t.display().to_string()));
    }
    remotes.insert(name, Item::Table(table));
    Ok(doc.to_string())
}

/// config.toml's text without `[remotes.NAME]`.
pub fn without_remote(text: &str, name: &str) -> Result<String, String> {
    use toml_edit::DocumentMut;
    let mut doc: DocumentMut = text.parse().map_err(|e| format!("config.toml: {e}"))?;
    let removed = doc
        .get_mut("remotes")
        .and_then(|r| r.as_table_mut())
        .and_then(|r| r.remove(name));
    if removed.is_none() {
        return Err(format!("no remote named `{name}` is configured"));
    }
    if doc
        .get("remotes")
        .and_then(|r| r.as_table())
        .is_some_and(|r| r.is_empty())
    {
        doc.remove("remotes");
    }
    Ok(doc.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn section(url: &str, fingerprint: Option<&str>, token: Option<&str>) -> RemoteSection {
        RemoteSection {
            url: url.into(),
            fingerprint: fingerprint.map(Into::into),
            token_file: token.map(Into::into),
        }
    }

    #[test]
    fn each_scheme_takes_what_it_needs_and_nothing_else() {
        let dir = Path::new("/etc/holon");
        let ssh = Remote::checked("build", &section("ssh://ana@box/~/h", None, None), dir);
        assert!(ssh.is_ok());
        let pin = crate::ui::tls::fingerprint(b"c");
        let wss = section("wss://gpu:7464", Some(&pin), Some("gpu.token"));
        let wss = Remote::checked("gpu", &wss, dir).unwrap();
        assert_eq!(wss.token_file, Some(PathBuf::from("/etc/holon/gpu.token")));
        let bad = [
            ("local", section("ssh://box", None, None), "remotes.local"),
            ("Big", section("ssh://box", None, None), "remotes.Big"),
            (
                "a",
                section("ssh://-oProxyCommand=x", None, None),
                "remotes.a.url",
            ),
            ("a", section("ssh://box", Some(&pin), None), "remotes.a.url"),
            (
                "a",
                section("wss://gpu:1", None, Some("t")),
                "remotes.a.url",
            ),
            (
                "a",
                section("wss://gpu:1", Some(&pin), None),
                "remotes.a.token_file",
            ),
            ("a", section("ftp://gpu", None, None), "remotes.a.url"),
        ];
        for (name, s, key) in bad {
            let e = Remote::checked(name, &s, dir).err().unwrap_or_default();
            assert_eq!(e.0, key, "{name} {}: {}", s.url, e.1);
        }
    }

    #[test]
    fn adding_and_removing_keeps_the_rest_of_the_file_as_written() {
        let text = "# my settings\n[model]\ndefault = \"openai/gpt-5\" # the usual\n";
        let added = with_remote(text, "build", &section("ssh://box", None, None), false).unwrap();
        assert!(added.starts_with(text), "{added}");
        assert!(
            added.contains("[remotes.build]\nurl = \"ssh://box\"\n"),
            "{added}"
        );
        let again = with_remote(&added, "build", &section("ssh://other", None, None), false);
        assert!(again.err().unwrap_or_default().contains("--replace"));
        let replaced =
            with_remote(&added, "build", &section("ssh://other", None, None), true).unwrap();
        assert!(replaced.contains("ssh://other") && !replaced.contains("ssh://box"));
        let removed = without_remote(&replaced, "build").unwrap();
        assert_eq!(removed.trim_end(), text.trim_end());
        assert!(without_remote(&removed, "build").is_err());
    }
}
