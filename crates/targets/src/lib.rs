//! dyno's drivers, one file per kind of target, and the registry that resolves a URL to one.
//!
//! Every driver keeps to the same rules: it validates its URL and options without touching
//! anything ([`engine::resolve::Drivers::configure`]); it writes only inside a namespace it created
//! (a `dyno_` prefixed file, directory or table, proven by a marker) and refuses anything else;
//! every failure is an [`engine::driver::OpError`] with a class, never a panic.
//!
//! # Layout
//!
//! - [`mem`]: an in-process hash map, the floor every other column is read against.
//! - [`mock`]: latencies and failures set by options, on a virtual clock, for exact tests.
//! - [`sqlite`]: SQLite through rusqlite (bundled).
//! - [`fs`]: one file per object in a directory.
//! - [`lmdb`]: LMDB through heed, the embedded ordered key-value engine (chosen over redb by
//!   measurement; see the book).
//! - `redb` (feature `redb`): redb, kept to reproduce that measurement.
//! - [`remote`] (`dyno://`), [`own_host`] (`host:`), [`redis`] (and Sentinel), [`etcd`], `postgres` (feature `postgres`,
//!   on by default): servers, each in a namespace of dyno's own.
//! - [`http`] (`http://`, `h2c://` (HTTP/2), and `https://` with `tls`, feature `tls`, on by default) and
//!   [`tcp`]: request/response targets for the load engine; `grpc` (`grpc://`, `grpcs://`;
//!   feature `grpc`, on by default): gRPC unary calls on the same HTTP/2.
//! - [`claim`]: claiming directories and temporary namespaces (a `dyno_` place, proven by a marker); [`options`]: option parsing;
//!   [`net`]: address resolution, request bodies, and the replicated drivers' reconnection count.

pub mod claim;
pub mod etcd;
pub mod exec;
pub mod fs;
pub mod gather;
pub mod grpc;
pub mod http;
pub mod lmdb;
pub mod mem;
pub mod mock;
pub mod mysql;
pub mod net;
pub mod options;
pub mod own_host;
#[cfg(feature = "postgres")]
pub mod postgres;
#[cfg(feature = "redb")]
pub mod redb;
pub mod redis;
pub mod remote;
pub mod sqlite;
pub mod tcp;
#[cfg(feature = "tls")]
pub mod tls;

use engine::driver::{ConfigError, DriverInfo, TargetConfig};
use engine::resolve::Drivers;
use std::collections::BTreeMap;

/// Validates what follows `scheme:` in a URL, and the options. Touches nothing.
pub type Configure =
    fn(&str, &BTreeMap<String, String>) -> Result<Box<dyn TargetConfig>, ConfigError>;

/// A kind of target: its description and a pure configuration step.
pub struct Driver {
    pub info: &'static DriverInfo,
    pub configure: Configure,
}

impl Driver {
    const fn new(info: &'static DriverInfo, configure: Configure) -> Driver {
        Driver { info, configure }
    }
}

/// Every driver built into this dyno, in the order `dyno targets` lists them.
pub fn drivers() -> Vec<Driver> {
    #[allow(unused_mut)]
    let mut all = vec![
        Driver::new(&mem::INFO, mem::configure),
        Driver::new(&sqlite::INFO, sqlite::configure),
        Driver::new(&fs::INFO, fs::configure),
        Driver::new(&lmdb::INFO, lmdb::configure),
        Driver::new(&mock::INFO, mock::configure),
        Driver::new(&own_host::INFO, own_host::configure),
        Driver::new(&remote::INFO, remote::configure),
        Driver::new(&redis::INFO, redis::configure),
        Driver::new(&redis::SENTINEL_INFO, redis::configure_sentinel),
        Driver::new(&etcd::INFO, etcd::configure),
        Driver::new(&mysql::INFO, mysql::configure),
        Driver::new(&exec::INFO, exec::configure),
        Driver::new(&http::INFO, http::configure),
        Driver::new(&http::H2C_INFO, http::configure_h2c),
        Driver::new(&tcp::INFO, tcp::configure),
    ];
    #[cfg(feature = "tls")]
    all.push(Driver::new(&http::HTTPS_INFO, http::configure_https));
    #[cfg(feature = "grpc")]
    all.push(Driver::new(&grpc::INFO, grpc::configure));
    #[cfg(all(feature = "grpc", feature = "tls"))]
    all.push(Driver::new(&grpc::GRPCS_INFO, grpc::configure_grpcs));
    #[cfg(feature = "postgres")]
    all.push(Driver::new(&postgres::INFO, postgres::configure));
    #[cfg(not(feature = "postgres"))]
    all.push(Driver {
        info: &POSTGRES_LEFT_OUT,
        configure: |_, _| {
            Err(
                ConfigError::url("this dyno was built without the postgres feature")
                    .hint("build it with the default features: cargo build --release"),
            )
        },
    });
    #[cfg(feature = "redb")]
    all.push(Driver::new(&redb::INFO, redb::configure));
    all
}

/// What `dyno targets` says of `postgres://` in a build without it.
#[cfg(not(feature = "postgres"))]
static POSTGRES_LEFT_OUT: DriverInfo = DriverInfo {
    scheme: "postgres",
    query_options: true,
    summary: "PostgreSQL (left out of this build: the postgres feature is off)",
    forms: &[],
    families: &[],
    options: &[],
    clients: engine::driver::ClientModel::ManyPerThread,
};

/// The targets `dyno run` uses when none is named: each in a fresh temporary namespace.
pub const DEFAULT_URLS: &[&str] = &["mem:", "sqlite:", "fs:", "lmdb:"];

/// Resolves URLs through [`drivers`].
pub struct Registry;

impl Drivers for Registry {
    fn schemes(&self) -> Vec<&'static str> {
        drivers().iter().map(|d| d.info.scheme).collect()
    }

    fn query_options(&self, scheme: &str) -> bool {
        drivers()
            .iter()
            .find(|d| d.info.scheme == scheme)
            .is_none_or(|d| d.info.query_options)
    }

    fn default_urls(&self) -> Vec<&'static str> {
        DEFAULT_URLS.to_vec()
    }

    fn configure(
        &self,
        scheme: &str,
        rest: &str,
        options: &BTreeMap<String, String>,
    ) -> Result<Box<dyn TargetConfig>, ConfigError> {
        let driver = drivers()
            .into_iter()
            .find(|d| d.info.scheme == scheme)
            .ok_or_else(|| ConfigError::url(format!("no driver for scheme {scheme:?}")))?;
        (driver.configure)(rest, options)
    }
}

/// Property-test helpers shared by the response readers' tests.
#[cfg(test)]
pub(crate) mod fuzz {
    use engine::load::protocol::{Feed, ResponseReader};
    use proptest::prelude::*;

    /// Random bytes, and where to cut them into the reads the reader sees.
    pub fn bytes_and_cuts() -> impl Strategy<Value = (Vec<u8>, Vec<usize>, bool)> {
        (
            prop::collection::vec(any::<u8>(), 0..1024),
            prop::collection::vec(any::<usize>(), 0..6),
            any::<bool>(),
        )
    }

    /// `valid` with a few bytes changed and cut somewhere.
    pub fn mutated(valid: &'static [u8]) -> impl Strategy<Value = (Vec<u8>, Vec<usize>, bool)> {
        (
            prop::collection::vec((any::<usize>(), any::<u8>()), 0..6),
            any::<usize>(),
            prop::collection::vec(any::<usize>(), 0..6),
            any::<bool>(),
        )
            .prop_map(move |(edits, cut, cuts, eof)| {
                let mut b = valid.to_vec();
                for (at, v) in edits {
                    let at = at % b.len();
                    b[at] = v;
                }
                b.truncate(cut % (b.len() + 1));
                (b, cuts, eof)
            })
    }

    /// Feeds `data` in pieces cut at `cuts`, as the event loop does: after each complete response
    /// the reader is reset and fed the rest. Every call must return (no panic) and a response
    /// must use no more than it was given; the caller then checks the reader's memory bound.
    /// Stops at the first error, as the connection would.
    pub fn drive(r: &mut dyn ResponseReader, data: &[u8], cuts: &[usize], eof: bool) {
        let mut at: Vec<usize> = cuts.iter().map(|c| c % (data.len() + 1)).collect();
        at.push(0);
        at.push(data.len());
        at.sort_unstable();
        at.dedup();
        for w in at.windows(2) {
            let mut rest = &data[w[0]..w[1]];
            // Each response uses at least one byte, or the piece is done.
            for _ in 0..=rest.len() + 1 {
                match r.feed(rest, false) {
                    Ok(Feed::More) => break,
                    Ok(Feed::Done { used, .. }) => {
                        assert!(used <= rest.len(), "used {used} of {}", rest.len());
                        rest = &rest[used..];
                        r.reset(0);
                        if rest.is_empty() {
                            break;
                        }
                    }
                    Err(_) => return,
                }
            }
        }
        if eof {
            let _ = r.feed(&[], true);
        }
    }
}
