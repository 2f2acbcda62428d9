//! What the HTTP listener serves, to whom: the access choice (`local`
//! binds loopback only; `lan` and `tailnet` allow other addresses, served
//! over TLS unless the operator allows plaintext), the listen address, the
//! advertised base URL for trigger URLs, the bearer token for remote
//! attach, and the effective-config
//! fingerprint `daemon start` compares before reusing a running runtime.

use std::net::SocketAddr;
use std::path::{Path as FsPath, PathBuf};

use sha2::{Digest, Sha256};

use super::cli::AccessArgs;
use super::Context;

/// Where the listener binds unless `[server] listen` or `HOLON_LISTEN` say
/// otherwise: loopback at a fixed port, so trigger URLs survive restarts.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:7464";

/// Who may reach the listener: `local` binds loopback only; `lan` and
/// `tailnet` allow another address (TLS by default there).
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    clap::ValueEnum,
    serde::Serialize,
    serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum Access {
    #[default]
    Local,
    Lan,
    Tailnet,
}

impl Access {
    pub fn as_str(self) -> &'static str {
        match self {
            Access::Local => "local",
            Access::Lan => "lan",
            Access::Tailnet => "tailnet",
        }
    }
}

/// Deliveries one trigger may make: a burst, then a steady rate (429
/// beyond; the wake they would cause is already pending).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RateLimit {
    pub burst: u32,
    pub per_sec: f64,
}

impl Default for RateLimit {
    fn default() -> Self {
        RateLimit {
            burst: 20,
            per_sec: 5.0,
        }
    }
}

/// TLS on the HTTP listener, as configured.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TlsSetting {
    /// `[server] tls`; unset: on off loopback, off on it.
    pub tls: Option<bool>,
    /// The operator's own certificate and key (`tls_cert`, `tls_key`);
    /// none: the listener's own, made at first start.
    pub own: Option<(PathBuf, PathBuf)>,
    /// `[server] allow_plaintext`: listen off loopback without TLS.
    pub allow_plaintext: bool,
}

/// What the serving process was asked for.
#[derive(Clone)]
pub struct HttpOptions {
    /// `None`: no listener (`[server] listen = "off"`).
    pub listen: Option<String>,
    pub access: Access,
    pub advertise: Option<String>,
    /// The bearer token for `/ws` and `/control/*`.
    pub token: String,
    pub rate: RateLimit,
    /// TLS: the acceptor and the certificate's fingerprint.
    pub tls: Option<super::tls::ServerTls>,
}

/// Check a listen address against the access choice: anything but
/// loopback needs an explicit `lan` or `tailnet`.
pub fn check_listen(listen: &str, access: Access) -> Result<SocketAddr, String> {
    let addr: SocketAddr = listen.parse().map_err(|_| {
        format!("`{listen}` is not an address to listen on (give IP:PORT, e.g. 127.0.0.1:7464)")
    })?;
    if !addr.ip().is_loopback() && access == Access::Local {
        return Err(format!(
            "{addr} is not a loopback address; binding it needs `--access lan` or `--access tailnet`"
        ));
    }
    Ok(addr)
}

/// Check an `--advertise` base URL.
pub fn check_advertise(url: &str) -> Result<String, String> {
    let url = url.trim().trim_end_matches('/');
    let ok = (url.starts_with("http://") || url.starts_with("https://"))
        && !url.contains(char::is_whitespace)
        && url.len() > "http://".len();
    if ok {
        Ok(url.to_owned())
    } else {
        Err(format!(
            "--advertise `{url}` is not an http:// or https:// base URL"
        ))
    }
}

/// The bearer token: from `--token-file` (which must be private to its
/// owner), else this home's `run/remote-token`, created 0600 on first use.
pub fn load_token(run_dir: &FsPath, token_file: Option<&FsPath>) -> anyhow::Result<String> {
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let path = match token_file {
        Some(p) => p.to_path_buf(),
        None => default_token_file(run_dir),
    };
    if token_file.is_none() && !path.exists() {
        // Written aside, then linked into place: never overwrites a token
        // a racing start published, never publishes a half-written one.
        let token = crate::runtime::triggers::new_token();
        let aside = path.with_extension(format!("new-{}", std::process::id()));
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&aside)?;
        std::io::Write::write_all(&mut f, token.as_bytes())?;
        f.sync_all()?;
        let linked = std::fs::hard_link(&aside, &path);
        let _ = std::fs::remove_file(&aside);
        match linked {
            Ok(()) => return Ok(token),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(e.into()),
        }
    }
    let meta = std::fs::metadata(&path)
        .map_err(|e| anyhow::anyhow!("cannot read the token file {}: {e}", path.display()))?;
    if meta.permissions().mode() & 0o077 != 0 {
        anyhow::bail!(
            "the token file {} is readable by others; `chmod 600` it",
            path.display()
        );
    }
    let token = std::fs::read_to_string(&path)?.trim().to_owned();
    if token.len() < 16 || token.chars().any(char::is_whitespace) {
        anyhow::bail!(
            "the token in {} is too short (16 characters at least, no spaces)",
            path.display()
        );
    }
    Ok(token)
}

pub fn default_token_file(run_dir: &FsPath) -> PathBuf {
    run_dir.join("remote-token")
}

/// The listener options and the effective-config fingerprint for a
/// serving process started with `args` in `ctx`.
pub fn resolve(ctx: &Context, args: &AccessArgs) -> anyhow::Result<(HttpOptions, String)> {
    let access = args.access.unwrap_or_default();
    let listen = match (&args.listen, &ctx.config.server_listen, access) {
        (Some(l), _, _) => Some(l.trim().to_owned()),
        (None, None, _) => None,
        (None, Some(_), Access::Tailnet) => anyhow::bail!(
            "`--access tailnet` needs `--listen <tailnet IP>:<port>` (the address tailscale gives this machine)"
        ),
        (None, Some(l), Access::Lan) => {
            // Loopback in the config means "the port": serve it on every
            // interface.
            let port = l.parse::<SocketAddr>().map(|a| a.port()).unwrap_or(7464);
            Some(format!("0.0.0.0:{port}"))
        }
        (None, Some(l), Access::Local) => Some(l.clone()),
    };
    if let Some(l) = &listen {
        check_listen(l, access).map_err(anyhow::Error::msg)?;
    }
    let advertise = match &args.advertise {
        Some(a) => Some(check_advertise(a).map_err(anyhow::Error::msg)?),
        None => None,
    };
    let token = load_token(&ctx.paths.run_dir, args.token_file.as_deref())?;
    let tls = match &listen {
        Some(l) => tls_for(ctx, l)?,
        None => None,
    };
    let fingerprint = fingerprint(&serde_json::json!({
        "tls": tls.as_ref().map(|t| t.fingerprint.clone()),
        "version": env!("CARGO_PKG_VERSION"),
        "listen": listen,
        "access": access.as_str(),
        "advertise": advertise,
        "token": token,
        "store_cache_mib": ctx.config.store_cache_mib,
        "store_quick_repair": ctx.config.store_quick_repair,
        "store_backup_hours": ctx.config.store_backup_every.map(|d| d.as_secs() / 3600),
        "store_backup_keep": ctx.config.store_backup_keep,
        "max_connections": ctx.config.server_limits.max_connections,
        "idle_timeout_secs": ctx.config.server_limits.idle_timeout.as_secs(),
        "trigger_rate": [ctx.config.trigger_rate.burst, ctx.config.trigger_rate.per_sec],
    }));
    let options = HttpOptions {
        listen,
        access,
        advertise,
        token,
        rate: ctx.config.trigger_rate,
        tls,
    };
    Ok((options, fingerprint))
}

/// Whether the listener on `listen` serves TLS, and with what: `[server]
/// tls` when set, else on off loopback. Plaintext off loopback is refused
/// unless `[server] allow_plaintext` says otherwise.
fn tls_for(ctx: &Context, listen: &str) -> anyhow::Result<Option<super::tls::ServerTls>> {
    let setting = &ctx.config.server_tls;
    let loopback = listen
        .parse::<SocketAddr>()
        .is_ok_and(|a| a.ip().is_loopback());
    let on = setting.tls.unwrap_or(!loopback);
    if !on {
        if !loopback && !setting.allow_plaintext {
            anyhow::bail!(
                "{listen} is not a loopback address and `[server] tls = false`: the token and \
                 every request would cross the network in the clear. Turn TLS on, or set \
                 `[server] allow_plaintext = true` (a tailnet already encrypts)"
            );
        }
        return Ok(None);
    }
    let served = super::tls::server(&ctx.paths.data_dir, setting.own.as_ref(), listen)?;
    Ok(Some(served))
}

/// What to tell the operator when the listener is reachable from other
/// hosts in plaintext (allowed by `[server] allow_plaintext`).
pub fn exposure_warning(options: &HttpOptions) -> Option<String> {
    let addr: SocketAddr = options.listen.as_deref()?.parse().ok()?;
    let advertised_plain = options
        .advertise
        .as_deref()
        .is_some_and(|a| a.starts_with("http://"));
    if options.tls.is_some() && advertised_plain {
        return Some(format!(
            "--advertise says http://, but the listener on {addr} serves TLS: trigger URLs given \
             out will not reach it unless a proxy in front speaks plain HTTP"
        ));
    }
    (!addr.ip().is_loopback() && options.tls.is_none()).then(|| {
        format!(
            "the HTTP listener on {addr} ({} access) is reachable from other hosts and is \
             plaintext (`[server] allow_plaintext`): the bearer token and trigger URLs cross \
             the network in the clear unless the network itself is encrypted (a tailnet)",
            options.access.as_str()
        )
    })
}

/// 16 hex digits of SHA-256 over the canonical JSON of what a restart
/// would change (the token is hashed in, never shown).
fn fingerprint(effective: &serde_json::Value) -> String {
    let digest = Sha256::digest(effective.to_string().as_bytes());
    digest.iter().take(8).map(|b| format!("{b:02x}")).collect()
}

/// Where `holon attach` connects: an `ssh://` host, a `ws://` listener
/// with its token, or a control socket (this home's by default).
pub(super) fn attach_endpoint(
    ctx: &Context,
    target: Option<String>,
    token_file: Option<std::path::PathBuf>,
    socket: Option<std::path::PathBuf>,
    fingerprint: Option<String>,
) -> anyhow::Result<crate::ui::ws::Endpoint> {
    use crate::ui::ws::Endpoint;
    let Some(target) = target else {
        return Ok(Endpoint::Unix(
            socket.unwrap_or_else(|| ctx.paths.socket_path()),
        ));
    };
    if !target.contains("://") {
        if token_file.is_some() || fingerprint.is_some() {
            anyhow::bail!(
                "a remote named in config.toml carries its own token file and fingerprint"
            );
        }
        let Some(remote) = ctx.config.remotes.get(target.trim()) else {
            anyhow::bail!(
                "`{target}` is neither an address (ssh://, wss://, ws://) nor a configured remote \
                 (`holon remotes list`)"
            );
        };
        return remote.endpoint();
    }
    if target.trim_start().starts_with("ssh://") {
        if token_file.is_some() || fingerprint.is_some() {
            anyhow::bail!(
                "an ssh:// target takes no --token-file or --fingerprint: ssh carries and \
                 authenticates the connection"
            );
        }
        let target = crate::ui::ssh::SshTarget::parse(&target).map_err(anyhow::Error::msg)?;
        return Ok(Endpoint::Ssh(target));
    }
    // This home's own token goes only to this machine: another machine's
    // runtime is given the copy of its token named here.
    if token_file.is_none() && !loopback_target(&target) {
        anyhow::bail!(
            "`{target}` is another machine: pass --token-file with a copy of its run/remote-token \
             (this home's own token is never sent elsewhere)"
        );
    }
    let file = token_file.unwrap_or_else(|| default_token_file(&ctx.paths.run_dir));
    if !file.exists() {
        anyhow::bail!(
            "no token file {}: copy the runtime's run/remote-token here (0600) and pass --token-file",
            file.display()
        );
    }
    let token = load_token(&ctx.paths.run_dir, Some(&file))?;
    Endpoint::websocket(&target, token, fingerprint.as_deref()).map_err(anyhow::Error::msg)
}

/// Whether a `ws://` or `wss://` target names this machine.
fn loopback_target(target: &str) -> bool {
    let rest = target.trim().split_once("://").map_or("", |(_, r)| r);
    let authority = rest.split('/').next().unwrap_or_default();
    let host = match authority.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or_default(),
        None => authority.rsplit_once(':').map_or(authority, |(h, _)| h),
    };
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod tests {
    #[test]
    fn only_this_machines_targets_get_this_homes_token() {
        assert!(super::loopback_target("ws://127.0.0.1:7464"));
        assert!(super::loopback_target("wss://[::1]:7464/ws"));
        assert!(super::loopback_target("ws://localhost:1"));
        assert!(!super::loopback_target("ws://10.0.0.2:7464"));
        assert!(!super::loopback_target("wss://box.tail.ts.net:7464"));
        assert!(!super::loopback_target("ws://127.0.0.1.evil.com:1"));
    }

    use super::*;

    #[test]
    fn non_loopback_needs_an_explicit_access_choice() {
        assert!(check_listen("127.0.0.1:7464", Access::Local).is_ok());
        assert!(check_listen("[::1]:7464", Access::Local).is_ok());
        let e = check_listen("0.0.0.0:7464", Access::Local)
            .err()
            .unwrap_or_default();
        assert!(e.contains("--access lan"), "{e}");
        assert!(check_listen("0.0.0.0:7464", Access::Lan).is_ok());
        assert!(check_listen("localhost", Access::Local).is_err());
    }

    #[test]
    fn advertise_must_be_an_http_base() {
        assert_eq!(
            check_advertise("https://box.tail.ts.net:7464/")
                .ok()
                .as_deref(),
            Some("https://box.tail.ts.net:7464")
        );
        assert!(check_advertise("ftp://x").is_err());
        assert!(check_advertise("http://").is_err());
    }

    #[test]
    fn the_fingerprint_changes_with_what_a_restart_would_change() {
        let a = fingerprint(&serde_json::json!({"listen": "127.0.0.1:1"}));
        assert_eq!(a.len(), 16);
        assert_eq!(
            a,
            fingerprint(&serde_json::json!({"listen": "127.0.0.1:1"}))
        );
        assert_ne!(
            a,
            fingerprint(&serde_json::json!({"listen": "127.0.0.1:2"}))
        );
    }
}
