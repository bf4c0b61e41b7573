//! What the request drivers (`http`, `tcp`) share: resolving the address, and a request body
//! given inline or read from a file when the endpoint is built (not when the plan is checked).

use engine::driver::DriverError;
use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;

/// Resolves `host:port` (or `host` with `default_port`) to its first address.
pub fn resolve(authority: &str, default_port: Option<u16>) -> Result<SocketAddr, DriverError> {
    let has_port = authority
        .rsplit_once(':')
        .is_some_and(|(_, p)| p.parse::<u16>().is_ok());
    let with_port = match default_port {
        Some(port) if !has_port => format!("{authority}:{port}"),
        _ => authority.to_string(),
    };
    with_port
        .to_socket_addrs()
        .map_err(|e| DriverError::new(format!("cannot resolve {authority}: {e}")))?
        .next()
        .ok_or_else(|| DriverError::new(format!("{authority} resolves to no address")))
}

/// A request's bytes: given inline, read from a file (`option` names it in errors), or none.
pub fn bytes(
    inline: &Option<Vec<u8>>,
    file: &Option<PathBuf>,
    option: &str,
) -> Result<Vec<u8>, DriverError> {
    match (inline, file) {
        (Some(b), _) => Ok(b.clone()),
        (None, Some(f)) => {
            std::fs::read(f).map_err(|e| DriverError::new(format!("{option} {}: {e}", f.display())))
        }
        (None, None) => Ok(Vec::new()),
    }
}
