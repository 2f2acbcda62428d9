//! `holon remote-info`: how another machine reaches this runtime.

use std::process::ExitCode;

use super::Context;
use crate::model::trigger::IngressState;
use crate::protocol::{call_typed, Request, RuntimeStatus};

/// What `holon remote-info --json` prints.
#[derive(Debug, serde::Serialize)]
struct RemoteInfo {
    /// `wss://HOST:PORT` (or `ws://` for a plaintext listener).
    url: Option<String>,
    /// The certificate to pin, `SHA256:…`; absent when plaintext.
    fingerprint: Option<String>,
    /// The bearer token's file, to copy to the console's machine (0600).
    token_file: String,
    /// Why the listener cannot be reached, when it cannot.
    listener: String,
    /// The ssh address (needs no listener, token or fingerprint).
    ssh: String,
}

/// `holon remote-info [--json]`, from the running runtime's status.
pub async fn remote_info(ctx: &Context, json: bool) -> anyhow::Result<ExitCode> {
    let Some(client) = super::daemon::connect(ctx).await else {
        anyhow::bail!("no runtime is running here; start one with `holon --detach`");
    };
    let status: RuntimeStatus = call_typed(&client, Request::RuntimeStatus).await?;
    let http = status.http.clone();
    let url = match (http.state, http.http_addr.as_deref()) {
        (IngressState::Listening, Some(addr)) => Some(ws_url(addr, http.tls_fingerprint.is_some())),
        _ => None,
    };
    let host = super::tls::host_name().unwrap_or_else(|| "HOST".into());
    let user = std::env::var("USER")
        .ok()
        .filter(|u| !u.is_empty() && !u.contains(char::is_whitespace))
        .map(|u| format!("{u}@"))
        .unwrap_or_default();
    // The far side's default home needs no path.
    let home = status.home.clone().unwrap_or_default();
    let info = RemoteInfo {
        url,
        fingerprint: http.tls_fingerprint.clone(),
        token_file: token_file(ctx).display().to_string(),
        listener: http.describe(),
        ssh: format!("ssh://{user}{host}{home}"),
    };
    if json {
        say!("{}", serde_json::to_string_pretty(&info)?);
        return Ok(ExitCode::SUCCESS);
    }
    say!("ssh          holon attach {}", info.ssh);
    match (&info.url, &info.fingerprint) {
        (Some(url), Some(f)) => {
            say!("url          {url}");
            say!("fingerprint  {f}");
            say!("token file   {} (copy it, 0600)", info.token_file);
            say!("attach with  holon attach {url} --fingerprint {f} --token-file FILE");
        }
        (Some(url), None) => {
            say!("url          {url} (plaintext: loopback or a tailnet only)");
            say!("token file   {} (copy it, 0600)", info.token_file);
        }
        (None, _) => say!("listener     {}", info.listener),
    }
    Ok(ExitCode::SUCCESS)
}

/// The token file the running daemon was started with (`--token-file`),
/// else this home's own.
fn token_file(ctx: &Context) -> std::path::PathBuf {
    let recorded = std::fs::read_to_string(super::daemon::pid_path(ctx))
        .ok()
        .and_then(|t| serde_json::from_str::<super::daemon::PidFile>(&t).ok())
        .and_then(|p| p.access.token_file);
    recorded.unwrap_or_else(|| super::access::default_token_file(&ctx.paths.run_dir))
}

/// The URL a console on another machine uses for `addr`: this machine's
/// name in place of an address that means "every interface".
fn ws_url(addr: &str, tls: bool) -> String {
    let scheme = if tls { "wss" } else { "ws" };
    match addr.parse::<std::net::SocketAddr>() {
        Ok(a) if a.ip().is_unspecified() => {
            let host = super::tls::host_name().unwrap_or_else(|| a.ip().to_string());
            format!("{scheme}://{host}:{}", a.port())
        }
        _ => format!("{scheme}://{addr}"),
    }
}

/// `holon remotes list | add | remove`.
pub fn remotes(ctx: &Context, what: super::cli::RemotesCommand) -> anyhow::Result<ExitCode> {
    use super::cli::RemotesCommand;
    use super::remotes::{with_remote, without_remote, RemoteSection};
    let path = &ctx.config.file;
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => anyhow::bail!("cannot read {}: {e}", path.display()),
    };
    let env = super::config::Env::capture();
    let was_valid = super::config::Config::from_parts(path, Some(&text), &env).is_ok();
    let removing = matches!(what, RemotesCommand::Remove { .. });
    let (changed, said) = match what {
        RemotesCommand::List { json } => {
            let remotes: Vec<_> = ctx.config.remotes.values().collect();
            if json {
                say!("{}", serde_json::to_string_pretty(&remotes)?);
            } else if remotes.is_empty() {
                say!("no remotes; add one with `holon remotes add NAME ssh://HOST`");
            }
            for r in remotes.iter().filter(|_| !json) {
                say!("{:<12} {}", r.name, r.url);
            }
            return Ok(ExitCode::SUCCESS);
        }
        RemotesCommand::Add {
            name,
            url,
            fingerprint,
            token_file,
            replace,
        } => {
            // Kept as an absolute path: the config file may move.
            let token_file = match token_file {
                Some(f) => Some(std::path::absolute(&f)?),
                None => None,
            };
            let section = RemoteSection {
                url,
                fingerprint,
                token_file,
            };
            let dir = path.parent().unwrap_or(std::path::Path::new("."));
            let remote = super::remotes::Remote::checked(&name, &section, dir)
                .map_err(|(key, m)| anyhow::anyhow!("{key}: {m}"))?;
            if remote.token_file.is_some() {
                // A token file that cannot be used is said now, not at attach.
                remote.endpoint()?;
            }
            let text = with_remote(&text, &name, &section, replace).map_err(anyhow::Error::msg)?;
            (text, format!("added remote {name}: `holon attach {name}`"))
        }
        RemotesCommand::Remove { name } => {
            let text = without_remote(&text, &name).map_err(anyhow::Error::msg)?;
            (text, format!("removed remote {name}"))
        }
    };
    // The edited file must load as it did, with the change: never write a
    // config the runtime would refuse. (Removing a remote from a file that
    // is already refused, for that remote perhaps, only takes a table out.)
    if let Err(e) = super::config::Config::from_parts(path, Some(&changed), &env) {
        if was_valid || !removing {
            anyhow::bail!("the edit would leave config.toml invalid: {e}");
        }
    }
    write_beside(path, &changed)?;
    say!("{said}");
    Ok(ExitCode::SUCCESS)
}

/// Replace `path` with `text` by a rename, keeping its permissions.
fn write_beside(path: &std::path::Path, text: &str) -> anyhow::Result<()> {
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    // A config.toml that is a link (a dotfiles checkout) keeps being one:
    // the file it points to is what changes.
    let target = std::fs::canonicalize(path).ok();
    let path = target.as_deref().unwrap_or(path);
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let mode = std::fs::metadata(path)
        .map(|m| m.permissions().mode() & 0o777)
        .unwrap_or(0o600);
    let aside = path.with_extension(format!("toml.new-{}", std::process::id()));
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(&aside)?;
    // The mode as it was, whatever the umask.
    let written = f
        .set_permissions(std::fs::Permissions::from_mode(mode))
        .and_then(|()| std::io::Write::write_all(&mut f, text.as_bytes()))
        .and_then(|()| f.sync_all());
    if let Err(e) = written.and_then(|()| std::fs::rename(&aside, path)) {
        let _ = std::fs::remove_file(&aside);
        return Err(e.into());
    }
    Ok(())
}

/// One runtime at a glance, for `status --all --json`.
#[derive(serde::Serialize)]
struct Glanced {
    name: String,
    at: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    seen: Option<crate::ui::present::runtimes::Seen>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
}

/// `holon status --all`: this machine's runtime and every remote, asked
/// together as the console's glance asks them; one that does not answer
/// within 5 s is said as unreachable.
pub async fn status_all(ctx: &Context, json: bool) -> anyhow::Result<ExitCode> {
    use crate::ui::present::runtimes::line;
    let (runtimes, places, _) = super::console_runtimes::Runtimes::new(ctx, None, None);
    let glances = runtimes.glance_all().await;
    let at = |name: &str| {
        places
            .iter()
            .find(|p| p.name == name)
            .map_or(String::new(), |p| p.at.clone())
    };
    if json {
        let rows: Vec<Glanced> = glances
            .into_iter()
            .map(|g| Glanced {
                at: at(&g.name),
                name: g.name,
                error: g.seen.as_ref().err().cloned(),
                seen: g.seen.ok(),
            })
            .collect();
        say!("{}", serde_json::to_string_pretty(&rows)?);
    } else {
        for g in &glances {
            say!("{}", line(&g.name, &at(&g.name), &g.seen));
        }
    }
    Ok(ExitCode::SUCCESS)
}
