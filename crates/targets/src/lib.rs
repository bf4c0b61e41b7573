//! dyno's drivers, one file per kind of target, and the registry that resolves a URL to one.
//!
//! Every driver keeps to the same rules: it validates its URL and options without touching
//! anything ([`engine::plan::Resolver::configure`]); it writes only inside a namespace it created
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
//!   measurement; see the README).
//! - `redb` (feature `redb`): redb, kept to reproduce that measurement.
//! - [`remote`] (`dyno://`), [`own_host`] (`host:`), [`redis`], `postgres` (feature `postgres`,
//!   on by default): servers, each in a namespace of dyno's own.
//! - [`namespace`]: claiming directories and temporary namespaces; [`options`]: option parsing;
//!   [`net`]: address resolution and request bodies for the request drivers.

pub mod fs;
pub mod http;
pub mod lmdb;
pub mod mem;
pub mod mock;
pub mod namespace;
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

use engine::driver::{ConfigError, DriverInfo, TargetConfig};
use engine::plan::Resolver;
use std::collections::BTreeMap;

/// Validates what follows `scheme:` in a URL, and the options. Touches nothing.
pub type Configure =
    fn(&str, &BTreeMap<String, String>) -> Result<Box<dyn TargetConfig>, ConfigError>;

/// A kind of target: its description and a pure configuration step.
pub struct Driver {
    pub info: &'static DriverInfo,
    pub configure: Configure,
}

/// Every driver built into this dyno, in the order `dyno targets` lists them.
pub fn drivers() -> Vec<Driver> {
    #[allow(unused_mut)]
    let mut all = vec![
        Driver {
            info: &mem::INFO,
            configure: mem::configure,
        },
        Driver {
            info: &sqlite::INFO,
            configure: sqlite::configure,
        },
        Driver {
            info: &fs::INFO,
            configure: fs::configure,
        },
        Driver {
            info: &lmdb::INFO,
            configure: lmdb::configure,
        },
        Driver {
            info: &mock::INFO,
            configure: mock::configure,
        },
        Driver {
            info: &own_host::INFO,
            configure: own_host::configure,
        },
        Driver {
            info: &remote::INFO,
            configure: remote::configure,
        },
        Driver {
            info: &redis::INFO,
            configure: redis::configure,
        },
        Driver {
            info: &http::INFO,
            configure: http::configure,
        },
        Driver {
            info: &tcp::INFO,
            configure: tcp::configure,
        },
    ];
    #[cfg(feature = "postgres")]
    all.push(Driver {
        info: &postgres::INFO,
        configure: postgres::configure,
    });
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
    all.push(Driver {
        info: &redb::INFO,
        configure: redb::configure,
    });
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
};

/// The targets `dyno run` uses when none is named: each in a fresh temporary namespace.
pub const DEFAULT_URLS: &[&str] = &["mem:", "sqlite:", "fs:", "lmdb:"];

/// Resolves URLs through [`drivers`].
pub struct Registry;

impl Resolver for Registry {
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
