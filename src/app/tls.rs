//! The HTTP listener's TLS: the operator's own certificate and key
//! (`[server] tls_cert`, `tls_key`), or one made at first start and kept
//! under the data directory (`tls/cert.pem`, and `tls/key.pem` readable by
//! its owner only), so a pinned fingerprint holds across restarts. The
//! fingerprint is what `holon remote-info` prints and a `wss://` console
//! pins (`ui::tls`).

use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// A listener's TLS: what accepts connections, and the fingerprint of the
/// certificate it presents.
#[derive(Clone)]
pub struct ServerTls {
    pub acceptor: tokio_rustls::TlsAcceptor,
    pub fingerprint: String,
}

impl std::fmt::Debug for ServerTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ServerTls({})", self.fingerprint)
    }
}

/// The listener's TLS for `listen`: the operator's pair when given, else
/// this home's own, made when absent.
pub fn server(
    data_dir: &Path,
    own: Option<&(PathBuf, PathBuf)>,
    listen: &str,
) -> anyhow::Result<ServerTls> {
    let (cert, key) = match own {
        Some((cert, key)) => (cert.clone(), key.clone()),
        None => made(data_dir, listen)?,
    };
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(&cert)
        .and_then(|i| i.collect())
        .map_err(|e| anyhow::anyhow!("cannot read the certificate {}: {e}", cert.display()))?;
    let Some(leaf) = chain.first() else {
        anyhow::bail!("{} holds no certificate", cert.display());
    };
    let fingerprint = crate::ui::tls::fingerprint(leaf.as_ref());
    private_to_owner(&key)?;
    let private = PrivateKeyDer::from_pem_file(&key)
        .map_err(|e| anyhow::anyhow!("cannot read the private key {}: {e}", key.display()))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_single_cert(chain, private)
        .map_err(|e| {
            anyhow::anyhow!(
                "the certificate {} and key {} do not make a TLS identity: {e}",
                cert.display(),
                key.display()
            )
        })?;
    Ok(ServerTls {
        acceptor: tokio_rustls::TlsAcceptor::from(Arc::new(config)),
        fingerprint,
    })
}

/// A key others can read is refused, as the token file is.
fn private_to_owner(key: &Path) -> anyhow::Result<()> {
    let meta = std::fs::metadata(key)
        .map_err(|e| anyhow::anyhow!("cannot read the private key {}: {e}", key.display()))?;
    if meta.permissions().mode() & 0o077 != 0 {
        anyhow::bail!(
            "the private key {} is readable by others; `chmod 600` it",
            key.display()
        );
    }
    Ok(())
}

/// This home's certificate and key, made on first use: valid for
/// localhost, the loopback addresses, this machine's name and the address
/// listened on. The pair is written into a fresh directory beside
/// `tls/` and renamed into place whole, so a racing start either wins or
/// uses the winner's pair: never half a pair, never a key of one and the
/// certificate of the other.
fn made(data_dir: &Path, listen: &str) -> anyhow::Result<(PathBuf, PathBuf)> {
    let dir = data_dir.join("tls");
    let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
    if std::fs::symlink_metadata(&dir).is_err() {
        let mut names = vec![
            "localhost".to_owned(),
            "127.0.0.1".to_owned(),
            "::1".to_owned(),
        ];
        names.extend(host_name());
        if let Ok(addr) = listen.parse::<std::net::SocketAddr>() {
            if !addr.ip().is_unspecified() && !addr.ip().is_loopback() {
                names.push(addr.ip().to_string());
            }
        }
        let pair = rcgen::generate_simple_self_signed(names)?;
        std::fs::create_dir_all(data_dir)?;
        let aside = data_dir.join(format!("tls.new-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&aside);
        std::fs::DirBuilder::new().mode(0o700).create(&aside)?;
        let written = write_new(
            &aside.join("key.pem"),
            &pair.signing_key.serialize_pem(),
            0o600,
        )
        .and_then(|()| write_new(&aside.join("cert.pem"), &pair.cert.pem(), 0o644))
        .and_then(|()| std::fs::rename(&aside, &dir));
        if written.is_err() {
            let _ = std::fs::remove_dir_all(&aside);
        }
        // Another start may have put its pair in place first: use it.
        if let Err(e) = written {
            if std::fs::symlink_metadata(&dir).is_err() {
                return Err(anyhow::anyhow!(
                    "cannot keep the listener's certificate: {e}"
                ));
            }
        }
    }
    let meta = std::fs::symlink_metadata(&dir)?;
    if !meta.is_dir() {
        anyhow::bail!(
            "{} is not a directory: remove it to make a new certificate",
            dir.display()
        );
    }
    if !cert.is_file() || !key.is_file() {
        anyhow::bail!(
            "{} lacks cert.pem or key.pem: remove the directory to make a new pair",
            dir.display()
        );
    }
    Ok((cert, key))
}

/// Write a new file (never through a link, never over one).
fn write_new(path: &Path, text: &str, mode: u32) -> std::io::Result<()> {
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)?;
    std::io::Write::write_all(&mut f, text.as_bytes())?;
    f.sync_all()
}

/// This machine's name, when it has one.
pub fn host_name() -> Option<String> {
    let mut buf = [0u8; 256];
    // SAFETY: gethostname writes at most `buf.len()` bytes into `buf`.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    if rc != 0 {
        return None;
    }
    let end = buf.iter().position(|b| *b == 0).unwrap_or(buf.len());
    let name = std::str::from_utf8(&buf[..end]).ok()?.trim().to_owned();
    (!name.is_empty()).then_some(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_listeners_own_certificate_is_made_once_and_kept_private() {
        let dir = tempfile::tempdir().unwrap();
        let first = server(dir.path(), None, "0.0.0.0:7464").unwrap();
        let again = server(dir.path(), None, "0.0.0.0:7464").unwrap();
        assert_eq!(first.fingerprint, again.fingerprint, "kept across starts");
        let key = dir.path().join("tls/key.pem");
        let mode = std::fs::metadata(&key).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        // A key others can read is refused.
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o644)).unwrap();
        let e = server(dir.path(), None, "0.0.0.0:7464").err().unwrap();
        assert!(e.to_string().contains("chmod 600"), "{e}");
        // The operator's own pair, and a pair that does not match.
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
        let cert = dir.path().join("tls/cert.pem");
        let own = server(dir.path(), Some(&(cert.clone(), key.clone())), "x").unwrap();
        assert_eq!(own.fingerprint, first.fingerprint);
        let other = tempfile::tempdir().unwrap();
        server(other.path(), None, "127.0.0.1:1").unwrap();
        let mismatched = (cert, other.path().join("tls/key.pem"));
        let e = server(dir.path(), Some(&mismatched), "x").err().unwrap();
        assert!(e.to_string().contains("do not make a TLS identity"), "{e}");
    }
}
