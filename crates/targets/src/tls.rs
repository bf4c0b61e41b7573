//! TLS for `https://` targets: a rustls client per connection, driven by the load engine
//! through [`engine::load::Channel`]. Certificates are checked by default against Mozilla's
//! roots (webpki-roots, built in: no system store is read); `ca=PATH` trusts the certificates of
//! a PEM file instead (a test server's own CA), and `insecure=true` accepts any certificate
//! (the handshake's signatures are still checked) for a server whose certificate cannot be
//! checked.

use engine::driver::{ConfigError, ErrorClass, OpError};
use engine::load::Channel;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, WebPkiSupportedAlgorithms};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{
    ClientConfig, ClientConnection, DigitallySignedStruct, RootCertStore, SignatureScheme,
};
use std::io::{self, Read, Write};
use std::path::Path;
use std::sync::Arc;

/// How the server's certificate is checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Trust {
    /// Mozilla's roots.
    Roots,
    /// The certificates of this PEM file.
    Ca(std::path::PathBuf),
    /// Any certificate.
    Insecure,
}

impl Trust {
    /// As the column header shows it.
    pub fn label(&self) -> String {
        match self {
            Trust::Roots => "TLS, verified".into(),
            Trust::Ca(p) => format!("TLS, verified against {}", p.display()),
            Trust::Insecure => "TLS, NOT verified".into(),
        }
    }
}

/// A client configuration shared by every connection of a target, and the name it checks.
#[derive(Clone)]
pub struct Client {
    config: Arc<ClientConfig>,
    name: ServerName<'static>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "tls::Client({:?})", self.name)
    }
}

fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

impl Client {
    /// Builds the configuration: reads a `ca` file now, so a bad one is refused before the run.
    /// `alpn`: the application protocols offered, in order of preference (none: no ALPN).
    pub fn new(host: &str, trust: &Trust, alpn: &[&[u8]]) -> Result<Client, ConfigError> {
        let host = host.trim_start_matches('[').trim_end_matches(']');
        let name = ServerName::try_from(host.to_string()).map_err(|_| {
            ConfigError::url(format!("{host:?} is not a name or address TLS can check"))
        })?;
        let p = provider();
        let builder = ClientConfig::builder_with_provider(p.clone())
            .with_safe_default_protocol_versions()
            .map_err(|e| ConfigError::url(format!("TLS: {e}")))?;
        let config = match trust {
            Trust::Roots => {
                let roots = RootCertStore {
                    roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
                };
                builder.with_root_certificates(roots).with_no_client_auth()
            }
            Trust::Ca(path) => builder
                .with_root_certificates(roots_from(path)?)
                .with_no_client_auth(),
            Trust::Insecure => builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(AnyCertificate(
                    p.signature_verification_algorithms,
                )))
                .with_no_client_auth(),
        };
        let mut config = config;
        config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
        Ok(Client {
            config: Arc::new(config),
            name,
        })
    }

    /// A channel for a new connection.
    pub fn channel(&self) -> Result<Box<dyn Channel>, OpError> {
        ClientConnection::new(self.config.clone(), self.name.clone())
            .map(|c| Box::new(Tls(c)) as Box<dyn Channel>)
            .map_err(|e| OpError::new(ErrorClass::Protocol, format!("tls: {e}")))
    }
}

/// `https://` with `version=auto`: the HTTP version the server picks when offered both by ALPN,
/// asked once per target (one handshake before the run, on a connection of its own), and the
/// clients that then offer only what it picked, so every connection of the run speaks it.
#[derive(Debug, Clone)]
pub struct Alpn {
    both: Client,
    pub h2: Client,
    pub h1: Client,
    /// Whether the server picked h2, once a handshake said (a failed one is asked again).
    chosen: Arc<std::sync::OnceLock<bool>>,
}

impl Alpn {
    pub fn new(host: &str, trust: &Trust) -> Result<Alpn, ConfigError> {
        Ok(Alpn {
            both: Client::new(host, trust, &[b"h2", b"http/1.1"])?,
            h2: Client::new(host, trust, &[b"h2"])?,
            h1: Client::new(host, trust, &[b"http/1.1"])?,
            chosen: Arc::default(),
        })
    }

    /// Whether the server at `addr` picks h2, asked until a handshake says (`Err`: why this
    /// one failed).
    pub fn h2(&self, addr: std::net::SocketAddr) -> Result<bool, String> {
        if let Some(h2) = self.chosen.get() {
            return Ok(*h2);
        }
        let h2 = self.ask(addr)?;
        let _ = self.chosen.set(h2);
        Ok(h2)
    }

    /// What a handshake said, if one did: as [`Alpn::h2`].
    pub fn found(&self) -> Option<bool> {
        self.chosen.get().copied()
    }

    fn ask(&self, addr: std::net::SocketAddr) -> Result<bool, String> {
        let timeout = std::time::Duration::from_secs(5);
        let mut sock = std::net::TcpStream::connect_timeout(&addr, timeout)
            .map_err(|e| format!("connecting to {addr}: {e}"))?;
        let conn = ClientConnection::new(self.both.config.clone(), self.both.name.clone())
            .map_err(|e| format!("tls: {e}"))?;
        let mut tls = Tls(conn);
        engine::load::handshake_blocking(&mut tls, &mut sock, timeout)
            .map_err(|e| format!("tls: the handshake with {addr}: {e}"))?;
        let h2 = tls.alpn() == Some(b"h2");
        tls.0.send_close_notify();
        let _ = tls.write_tls(&mut sock);
        Ok(h2)
    }
}

/// The certificates of a PEM file, as roots.
fn roots_from(path: &Path) -> Result<RootCertStore, ConfigError> {
    let bad = |why: String| {
        ConfigError::option("ca", format!("{}: {why}", path.display()))
            .hint("give a PEM file of CA certificates (-----BEGIN CERTIFICATE-----)")
    };
    let mut roots = RootCertStore::empty();
    let certs = CertificateDer::pem_file_iter(path).map_err(|e| bad(e.to_string()))?;
    for cert in certs {
        let cert = cert.map_err(|e| bad(e.to_string()))?;
        roots.add(cert).map_err(|e| bad(e.to_string()))?;
    }
    if roots.is_empty() {
        return Err(bad("no certificate in it".into()));
    }
    Ok(roots)
}

/// `insecure=true`: any certificate is taken, but the handshake's signatures are still checked
/// (the connection is encrypted; only who is at the other end is not proven).
#[derive(Debug)]
struct AnyCertificate(WebPkiSupportedAlgorithms);

impl ServerCertVerifier for AnyCertificate {
    fn verify_server_cert(
        &self,
        _: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }
    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.0)
    }
    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.0)
    }
    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_schemes()
    }
}

/// One connection's rustls client.
struct Tls(ClientConnection);

impl Channel for Tls {
    fn read_tls(&mut self, socket: &mut dyn Read) -> io::Result<usize> {
        self.0.read_tls(socket)
    }
    fn process(&mut self) -> Result<(), OpError> {
        self.0.process_new_packets().map(drop).map_err(|e| {
            let class = match e {
                rustls::Error::InvalidCertificate(_) => ErrorClass::Refused,
                _ => ErrorClass::Protocol,
            };
            if e == rustls::Error::AlertReceived(rustls::AlertDescription::NoApplicationProtocol) {
                return OpError::new(
                    class,
                    "tls: the server agrees to none of the protocols offered by ALPN h2: \
                     it may speak HTTP/1.1 only (version=1.1)",
                );
            }
            OpError::new(class, format!("tls: {e}"))
        })
    }
    fn write_tls(&mut self, socket: &mut dyn Write) -> io::Result<usize> {
        self.0.write_tls(socket)
    }
    fn wants_write(&self) -> bool {
        self.0.wants_write()
    }
    fn is_handshaking(&self) -> bool {
        self.0.is_handshaking()
    }
    fn send(&mut self, plaintext: &[u8]) -> io::Result<()> {
        self.0.writer().write_all(plaintext)
    }
    fn recv(&mut self, out: &mut [u8]) -> io::Result<usize> {
        self.0.reader().read(out)
    }
    fn alpn(&self) -> Option<&[u8]> {
        self.0.alpn_protocol()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    /// A server that hangs up in the handshake: the probe says so, and keeps no answer (the
    /// next call asks again).
    #[test]
    fn a_probe_cut_off_in_the_handshake_says_so_and_keeps_no_answer() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let server = std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            let mut hello = [0u8; 5];
            s.read_exact(&mut hello).unwrap();
            assert_eq!(hello[0], 22, "a TLS handshake record first");
        });
        let alpn = Alpn::new("localhost", &Trust::Insecure).unwrap();
        let err = alpn.h2(addr).unwrap_err();
        server.join().unwrap();
        assert!(
            err.starts_with(&format!("tls: the handshake with {addr}: ")),
            "{err}"
        );
        assert_eq!(alpn.found(), None);
    }
}
