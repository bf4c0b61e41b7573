//! `postgres://USER[:PASSWORD]@HOST[:PORT][/DATABASE]` — PostgreSQL over its protocol, written
//! here ([`wire`], [`message`]) and driven by dyno's fibers: a session's wait for a reply
//! yields to the generator thread's other clients, so many sessions share a thread, as pgbench
//! drives all its connections from one, and a statement costs one send and one receive.
//!
//! dyno works only in a schema of its own (`dyno_<pid>_<n>_<ns>`), created for the run with one
//! table `objects (k bigint primary key, v bytea)`, and dropped (`DROP SCHEMA … CASCADE`) at the
//! end; nothing outside it is read or written. Each client has its own connection; a write
//! transaction is `BEGIN` … `COMMIT`, a read transaction `BEGIN READ ONLY` … `COMMIT`; the graph
//! family's batched read is one `SELECT … WHERE k = ANY($1)`. Durability is read from the server
//! (`fsync`, `synchronous_commit`) and named in the column header; `synchronous_commit` can be
//! set for dyno's sessions. `cold` is not reachable: the server's shared buffers empty only when
//! it restarts, and dyno does not restart a server it did not start.
//!
//! Bounds: connecting times out after 30 s; a reply that does not come within 30 s cancels its
//! statement on the server (see [`wire`]), and TCP keepalives and `tcp_user_timeout` end a
//! connection to a server that stopped answering.

mod kv;
mod message;
mod sql;
mod wire;

use crate::options::Opts;
use engine::clock::Clock;
use engine::driver::{
    ConfigError, DriverError, DriverInfo, ErrorClass, Family, Namespace, OpError, OptionSpec,
    Session, SqlParam, Store, TargetConfig,
};
use std::collections::BTreeMap;
use std::time::Duration;
use wire::{Login, Wire};

pub static INFO: DriverInfo = DriverInfo {
    scheme: "postgres",
    query_options: true,
    summary: "PostgreSQL; dyno's objects in a schema of its own, dropped at the end",
    forms: &[
        "postgres://dyno@127.0.0.1:5432/postgres",
        "postgres://user:secret@127.0.0.1/db?synchronous_commit=off",
    ],
    families: &[Family::Kv, Family::Graph, Family::Sql, Family::Lists],
    options: &[OptionSpec {
        name: "synchronous_commit",
        default: "",
        help: "set for dyno's sessions: on, off, local, remote_write or remote_apply (default: the server's)",
    }],
    clients: engine::driver::ClientModel::ManyPerThread,
};

const TIMEOUT: Duration = Duration::from_secs(30);
const SYNC_LEVELS: &[&str] = &["", "on", "off", "local", "remote_write", "remote_apply"];

#[derive(Debug, Clone)]
struct Config {
    url: crate::net::DbUrl,
    synchronous_commit: String,
    resolved: BTreeMap<String, String>,
    durability: std::sync::OnceLock<String>,
}

/// Validates the URL and options; touches nothing.
pub fn configure(
    rest: &str,
    options: &BTreeMap<String, String>,
) -> Result<Box<dyn TargetConfig>, ConfigError> {
    let o = Opts::new("postgres", options, INFO.options)?;
    let synchronous_commit = o.choice("synchronous_commit", SYNC_LEVELS)?;
    let url = crate::net::DbUrl::parse(
        rest,
        5432,
        "postgres://USER[:PASSWORD]@HOST[:PORT][/DATABASE]",
        "postgres://dyno@127.0.0.1:5432/postgres",
    )?;
    Ok(Box::new(Config {
        url,
        synchronous_commit,
        resolved: o.resolved(),
        durability: std::sync::OnceLock::new(),
    }))
}

/// TCP keepalives (10 s idle) and TCP_USER_TIMEOUT (30 s): a connection to a server that
/// stopped answering ends instead of hanging. Best effort (an error leaves the defaults).
fn keepalive(fd: std::os::fd::RawFd) {
    let set = |level: libc::c_int, name: libc::c_int, v: libc::c_int| {
        // SAFETY: a valid socket and a c_int option value.
        unsafe {
            libc::setsockopt(
                fd,
                level,
                name,
                (&v as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
    };
    set(libc::SOL_SOCKET, libc::SO_KEEPALIVE, 1);
    set(libc::IPPROTO_TCP, libc::TCP_KEEPIDLE, 10);
    set(
        libc::IPPROTO_TCP,
        libc::TCP_USER_TIMEOUT,
        TIMEOUT.as_millis() as libc::c_int,
    );
}

impl Config {
    /// A logged-in session, with the run's `synchronous_commit` where one is set.
    fn connect(&self) -> Result<Wire, OpError> {
        self.connect_in(None)
    }

    /// [`Config::connect`], working in `schema` (its `search_path`) when given. Both settings
    /// are statements after the login, not parameters of it: a pooler (PgBouncer) refuses a
    /// login's parameters it does not know, or drops them when told to ignore them — and a
    /// session whose `search_path` was dropped would work in `public`.
    fn connect_in(&self, schema: Option<&str>) -> Result<Wire, OpError> {
        let addr = crate::net::resolve(&self.url.authority, Some(5432))
            .map_err(|e| OpError::new(ErrorClass::Refused, e.message))?;
        let login = Login {
            user: &self.url.user,
            password: self.url.password.as_deref().map(str::as_bytes),
            database: self.url.database.as_deref(),
        };
        let mut w = Wire::open(addr, &login)?;
        let mut set = Vec::with_capacity(2);
        if !self.synchronous_commit.is_empty() {
            set.push(format!(
                "SET synchronous_commit = {}",
                self.synchronous_commit
            ));
        }
        set.extend(schema.map(|s| format!("SET search_path TO {s}")));
        if !set.is_empty() {
            // One round trip for both.
            w.batch(&set.join("; "))?;
        }
        Ok(w)
    }

    /// `fsync`, `synchronous_commit` and the server's version.
    fn settings(&self) -> Result<[String; 3], OpError> {
        let mut w = self.connect()?;
        let stmt = w.prepare(
            "SELECT current_setting('fsync'), current_setting('synchronous_commit'), \
             current_setting('server_version')",
        )?;
        let mut got: [String; 3] = Default::default();
        let mut each = |_, row: &engine::driver::SqlRow<'_>| {
            for (slot, (_, v)) in got.iter_mut().zip(row) {
                *slot = v.unwrap_or_default().to_string();
            }
        };
        w.execute(&stmt, &[] as &[SqlParam<'_>], Some(&mut each))?;
        Ok(got)
    }
}

impl TargetConfig for Config {
    fn families(&self) -> &'static [Family] {
        INFO.families
    }
    fn durability(&self) -> String {
        self.durability
            .get_or_init(|| match self.settings() {
                Ok([fsync, sync, _]) => format!("fsync={fsync} synchronous_commit={sync}"),
                Err(_) => "unknown (server unreachable)".into(),
            })
            .clone()
    }
    fn options(&self) -> BTreeMap<String, String> {
        self.resolved.clone()
    }
    fn topology(&self) -> &'static str {
        crate::net::topology_of(&self.url.authority)
    }
    fn open(&self) -> Result<Box<dyn Store>, DriverError> {
        self.open_in(None)
    }
    fn open_shared(&self, share: &engine::driver::Share) -> Result<Box<dyn Store>, DriverError> {
        self.open_in(Some(share))
    }
}

impl Config {
    /// Opens the run's schema: its own, made here, or the one its shards share (made by rank
    /// 0 before the others open it).
    fn open_in(
        &self,
        share: Option<&engine::driver::Share>,
    ) -> Result<Box<dyn Store>, DriverError> {
        let fail =
            |e: OpError| DriverError::new(format!("postgres://{}: {}", self.url.authority, e));
        let [_, _, version] = self.settings().map_err(fail)?;
        let (schema, owner) = crate::claim::server_namespace(share);
        let mut w = self.connect().map_err(fail)?;
        // CREATE SCHEMA without IF NOT EXISTS: a schema of that name that dyno did not just
        // create is refused, never reused. A shard that does not own it finds its table.
        let sql = if owner {
            format!(
                "CREATE SCHEMA {schema}; \
                 CREATE TABLE {schema}.objects (k bigint PRIMARY KEY, v bytea NOT NULL)"
            )
        } else {
            format!("SELECT 1 FROM {schema}.objects LIMIT 0")
        };
        w.batch(&sql).map_err(fail)?;
        Ok(Box::new(PgStore {
            config: self.clone(),
            schema,
            owner,
            version,
        }))
    }
}

struct PgStore {
    config: Config,
    schema: String,
    /// Whether closing drops the schema (not on a shard other than rank 0).
    owner: bool,
    version: String,
}

impl Store for PgStore {
    fn many_per_thread(&self) -> bool {
        true
    }
    fn scans(&self) -> Result<(), String> {
        Ok(())
    }
    fn namespace(&self) -> Namespace {
        Namespace {
            location: format!(
                "postgres://{} schema {}",
                self.config.url.authority, self.schema
            ),
            created_by_dyno: true,
            temporary: true,
        }
    }
    fn versions(&self) -> BTreeMap<String, String> {
        BTreeMap::from([("postgresql".to_string(), self.version.clone())])
    }
    fn connect(&self, _: &Clock) -> Result<Box<dyn Session>, OpError> {
        let w = self.config.connect()?;
        Ok(Box::new(kv::PgSession::open(w, &self.schema)?))
    }
    fn connect_sql(&self) -> Result<Box<dyn engine::driver::SqlSession>, OpError> {
        Ok(Box::new(sql::PgSql::open(&self.config, &self.schema)?))
    }
    fn cold_unreachable(&self) -> Option<String> {
        Some("postgres: the server's shared buffers empty only when it restarts, and dyno does not restart a server it did not start".into())
    }
    fn close(self: Box<Self>) -> Result<(), DriverError> {
        if !self.owner {
            return Ok(());
        }
        let fail = |e: OpError| DriverError::new(format!("dropping schema {}: {e}", self.schema));
        let mut w = self.config.connect().map_err(fail)?;
        w.set_timeout(engine::driver::SETUP_TIMEOUT);
        w.batch(&format!("DROP SCHEMA {} CASCADE", self.schema))
            .map_err(fail)
    }
}
