//! TLS to a runtime's listener (`wss://`), trusted by the certificate's
//! pinned SHA-256 fingerprint rather than by a certificate authority: the
//! listener's certificate is self-signed at its first start, and
//! `holon remote-info` on that machine prints the fingerprint to pin. A
//! certificate that does not match is refused with both fingerprints.

use std::sync::{Arc, Mutex};

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};
use sha2::{Digest, Sha256};
use tokio::net::TcpStream;

/// A certificate's fingerprint as Holon prints it: `SHA256:` and 64 hex
/// digits of the SHA-256 of its DER.
pub fn fingerprint(der: &[u8]) -> String {
    let digest = Sha256::digest(der);
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("SHA256:{hex}")
}

/// Read a pinned fingerprint: `SHA256:` (any case, optional) then 64 hex
/// digits, colons allowed between them (as openssl prints them).
pub fn parse_fingerprint(text: &str) -> Result<[u8; 32], String> {
    let t = text.trim();
    let hex = match t.get(..7) {
        Some(p) if p.eq_ignore_ascii_case("sha256:") => &t[7..],
        _ => t,
    };
    let digits: String = hex.chars().filter(|c| *c != ':').collect();
    let bad = || format!("`{text}` is not a SHA-256 fingerprint (SHA256: then 64 hex digits)");
    if digits.len() != 64 || !digits.chars().all(|c| c.is_ascii_hexdigit()) {
        return Err(bad());
    }
    let mut out = [0u8; 32];
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&digits[2 * i..2 * i + 2], 16).map_err(|_| bad())?;
    }
    Ok(out)
}

/// `SHA256:` and the hex of `digest`.
pub fn show(digest: &[u8; 32]) -> String {
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("SHA256:{hex}")
}

/// Trusts exactly one certificate: the one whose SHA-256 is pinned. The
/// handshake's signatures are still checked against it, so the server
/// must hold that certificate's key. What was presented is kept, to say
/// it when it is refused.
#[derive(Debug)]
struct Pinned {
    pin: [u8; 32],
    seen: Mutex<Option<String>>,
    provider: Arc<CryptoProvider>,
}

impl ServerCertVerifier for Pinned {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let digest: [u8; 32] = Sha256::digest(end_entity.as_ref()).into();
        *self.seen.lock().unwrap_or_else(|p| p.into_inner()) = Some(show(&digest));
        match digest == self.pin {
            true => Ok(ServerCertVerified::assertion()),
            false => Err(rustls::Error::InvalidCertificate(
                rustls::CertificateError::ApplicationVerificationFailure,
            )),
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

/// A TLS connection to `host:port` that trusts only the certificate
/// pinned by `pin`. `url` names the runtime in what is said.
pub async fn connect(
    url: &str,
    host: &str,
    port: u16,
    pin: [u8; 32],
) -> std::io::Result<tokio_rustls::client::TlsStream<TcpStream>> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let pinned = Arc::new(Pinned {
        pin,
        seen: Mutex::new(None),
        provider: Arc::clone(&provider),
    });
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(std::io::Error::other)?
        .dangerous()
        .with_custom_certificate_verifier(Arc::clone(&pinned) as Arc<dyn ServerCertVerifier>)
        .with_no_client_auth();
    let name = match host.parse::<std::net::IpAddr>() {
        Ok(ip) => ServerName::IpAddress(ip.into()),
        Err(_) => ServerName::try_from(host.to_owned())
            .map_err(|_| std::io::Error::other(format!("`{host}` is not a host name")))?,
    };
    let tcp = TcpStream::connect((host, port)).await?;
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    match connector.connect(name, tcp).await {
        Ok(stream) => Ok(stream),
        Err(e) => {
            let seen = pinned
                .seen
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .clone();
            Err(match seen {
                Some(seen) if seen != show(&pin) => std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    format!(
                        "{url} presented the certificate {seen}, but {} is pinned: refused. If \
                         that runtime's certificate was replaced on purpose, pin the new one \
                         (`holon remote-info` there prints it)",
                        show(&pin)
                    ),
                ),
                _ => std::io::Error::other(format!("TLS with {url} failed: {e}")),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fingerprints_read_back_in_the_forms_people_paste() {
        let f = fingerprint(b"certificate");
        assert!(f.starts_with("SHA256:") && f.len() == 7 + 64, "{f}");
        let digest = parse_fingerprint(&f).unwrap();
        assert_eq!(show(&digest), f);
        let hex = &f[7..];
        assert_eq!(parse_fingerprint(hex).unwrap(), digest);
        let openssl: Vec<String> = hex
            .as_bytes()
            .chunks(2)
            .map(|c| String::from_utf8_lossy(c).to_uppercase())
            .collect();
        assert_eq!(
            parse_fingerprint(&format!("sha256:{}", openssl.join(":"))).unwrap(),
            digest
        );
        for bad in [
            "",
            "SHA256:",
            "SHA256:abc",
            &format!("MD5:{hex}"),
            &format!("{hex}00"),
        ] {
            assert!(parse_fingerprint(bad).is_err(), "{bad}");
        }
    }
}
