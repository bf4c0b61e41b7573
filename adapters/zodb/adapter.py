#!/usr/bin/env python3
"""dyno's ZODB adapter: zodbshootout's storages measured through dyno's adapter protocol.

    exec:adapters/zodb/adapter.py?storage=mapping|file|zeo|relstorage[&OPTION=VALUE…]

| storage | what a session opens | the store role (one per run) |
|---|---|---|
| `mapping` | a ZEO client of a MappingStorage server | starts `runzeo` serving a MappingStorage on 127.0.0.1 |
| `file` | the FileStorage itself, in its own process (one session at a time: FileStorage locks its file) | makes the FileStorage |
| `zeo` | a ZEO client of a FileStorage server | starts `runzeo` serving a FileStorage on 127.0.0.1 (or uses `address=`) |
| `relstorage` | RelStorage on PostgreSQL or MySQL/MariaDB (by `dsn=`) | creates a database on the server `dsn=` names, drops it at close |

Every object is a persistent object (`dyno_zodb_objects.PObject`) holding the value's bytes, kept
in one of 256 BTrees (QOBTree: unsigned 64-bit keys) chosen by bits 24–31 of its key — the
shootout's client number, so that clients adding objects at once never write the same BTree.

The caches, as zodbshootout defines them: ZODB's pickle cache is the client cache (`client_cache`
in the handshake), emptied by `drop_client_cache` (`Connection.cacheMinimize`); below it the
storage's caches — the ZEO client cache, RelStorage's local cache — live as long as the session's
process (kept by hot, gone in warm, which opens new sessions); `drop_caches` drops what is below
the sessions and is dyno's to drop: the page cache of a FileStorage's files (verified with
fincore). A read counts one storage read when its object was a ghost (not in the pickle cache),
so it was loaded from below.

Options: `cache_size` (pickle cache, objects; default 100000), `zeo_cache_mb` (default 64),
`local_cache_mb` (RelStorage, default 64), `keep_history` (RelStorage, default RelStorage's:
true; on MySQL false, see below), `address` (an existing ZEO server, host:port), `dsn` (relstorage, required: a libpq DSN
of PostgreSQL, or `mysql://USER[:PASSWORD]@HOST[:PORT]` of MySQL or MariaDB, reached with PyMySQL).

On MariaDB, RelStorage 4.3 would write MySQL 8's SQL (it reads "10.11.x-MariaDB" as MySQL 10):
dyno_relstorage_mariadb.py makes it read MariaDB as MySQL 5.7.19, whose SQL MariaDB speaks.
RelStorage on MySQL is history-free unless `keep_history=true`: RelStorage 4.3's history-preserving
schema writes `prev_tid … REFERENCES "transaction"` in a column, which MySQL ignores but MariaDB
10.5 and later read as a foreign key to a column `transaction.prev_tid` that does not exist
(error 1005, errno 150), so that schema cannot be made on MariaDB.

Its Python packages are pinned in requirements.txt; when ZODB cannot be imported and
`adapters/zodb/.venv` exists (./scripts/test and setup.sh make it), the adapter runs itself again
with that environment's Python.
"""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
VENV = os.path.join(HERE, ".venv")
VENV_PYTHON = os.path.join(VENV, "bin", "python")

sys.path.insert(0, os.path.join(HERE, "..", "python"))
sys.path.insert(0, HERE)

try:
    import transaction
    import ZODB
    from BTrees.QOBTree import QOBTree
    from persistent.list import PersistentList
    from ZODB.POSException import ConflictError

    from dyno_zodb_objects import PObject
except ImportError:
    if os.path.exists(VENV_PYTHON) and os.path.realpath(sys.prefix) != os.path.realpath(VENV):
        os.execv(VENV_PYTHON, [VENV_PYTHON, os.path.abspath(__file__)] + sys.argv[1:])
    ZODB = None

import heapq  # noqa: E402
import json  # noqa: E402
import shutil  # noqa: E402
import signal  # noqa: E402
import socket  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import uuid  # noqa: E402

import dyno_adapter as d  # noqa: E402

STORAGES = ("mapping", "file", "zeo", "relstorage")
SHARDS = 256
DESCRIPTION = "dyno-zodb.json"


def shard_of(key):
    return (key >> 24) & (SHARDS - 1)


def package_versions(names):
    from importlib.metadata import PackageNotFoundError, version

    out = {"python": sys.version.split()[0]}
    for n in names:
        try:
            out[n] = version(n)
        except PackageNotFoundError:
            pass
    return out


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def parse_address(text):
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit():
        raise d.AdapterError("address must be HOST:PORT, not %r" % text, 12)
    return (host, int(port))


def parse_mysql(dsn):
    """mysql://USER[:PASSWORD]@HOST[:PORT][/…] as PyMySQL's connection arguments."""
    from urllib.parse import unquote, urlsplit

    u = urlsplit(dsn)
    try:
        port = u.port or 3306
    except ValueError:
        port = None
    if not u.hostname or not u.username or port is None:
        raise d.AdapterError("dsn=%r: write mysql://USER[:PASSWORD]@HOST[:PORT]" % dsn, 12)
    return {"host": u.hostname, "port": port, "user": unquote(u.username), "password": unquote(u.password or "")}


class Zodb(d.Adapter):
    name = "zodb"
    durability = "ZODB"
    versions = {}
    counts_storage_reads = True

    def __init__(self, role, namespace, options):
        super().__init__(role, namespace, options)
        if ZODB is None:
            raise d.AdapterError(
                "ZODB is not installed for %s, and there is no %s: run adapters/zodb/setup.sh "
                "(or ./scripts/test), which installs requirements.txt there" % (sys.executable, VENV_PYTHON),
                12,
            )
        self.storage = options.get("storage", "zeo")
        if self.storage not in STORAGES:
            raise d.AdapterError("storage must be one of %s, not %r" % (", ".join(STORAGES), self.storage), 12)
        self.cache_size = self.number("cache_size", 100000)
        self.zeo_cache_mb = self.number("zeo_cache_mb", 64)
        self.local_cache_mb = self.number("local_cache_mb", 64)
        default_history = "false" if (options.get("dsn") or "").startswith("mysql://") else "true"
        self.keep_history = options.get("keep_history", default_history).lower()
        if self.keep_history not in ("true", "false"):
            raise d.AdapterError("keep_history must be true or false, not %r" % self.keep_history, 12)
        self.address = parse_address(options["address"]) if options.get("address") else None
        self.dsn = options.get("dsn")
        if self.storage == "relstorage" and not self.dsn:
            raise d.AdapterError(
                "storage=relstorage needs dsn=…: a libpq DSN of a PostgreSQL server, or mysql://USER:PASSWORD@HOST:PORT "
                "of a MySQL or MariaDB server, where dyno may create a database", 12)
        self.mysql = parse_mysql(self.dsn) if self.dsn and self.dsn.startswith("mysql://") else None
        if self.address and self.storage not in ("zeo", "mapping"):
            raise d.AdapterError("address= names a ZEO server: it goes with storage=zeo or storage=mapping", 12)
        self.describe()
        self.server = None
        self.dir = None
        self.db = None
        if role == "session":
            self.open_session()

    def number(self, key, default):
        text = self.options.get(key)
        if text is None:
            return default
        if not text.isdigit() or int(text) <= 0:
            raise d.AdapterError("%s must be a positive whole number, not %r" % (key, text), 12)
        return int(text)

    def describe(self):
        """The handshake's name, durability, versions, client cache and session limit."""
        cls = type(self)
        packages = ["ZODB", "persistent", "BTrees", "transaction"]
        pickle = "ZODB pickle cache, %d objects" % self.cache_size
        if self.storage == "mapping":
            cls.durability = "MappingStorage behind ZEO (memory only)"
            below = "; below it the ZEO client cache, %d MB" % self.zeo_cache_mb
            packages.append("ZEO")
        elif self.storage == "file":
            cls.durability = "FileStorage, fsync per commit"
            below = ""
        elif self.storage == "zeo":
            cls.durability = "FileStorage behind ZEO, fsync per commit"
            below = "; below it the ZEO client cache, %d MB" % self.zeo_cache_mb
            packages.append("ZEO")
        else:
            history = "history-preserving" if self.keep_history == "true" else "history-free"
            server = "MySQL" if self.mysql else "PostgreSQL"
            cls.durability = "RelStorage on %s, %s" % (server, history)
            below = "; below it RelStorage's local cache, %d MB" % self.local_cache_mb
            packages += ["RelStorage", "PyMySQL" if self.mysql else "psycopg2-binary"]
        cls.name = "zodb %s" % ("relstorage-mysql" if self.mysql else self.storage)
        cls.versions = package_versions(packages)
        self.client_cache = pickle + below
        self.sessions = 1 if self.storage == "file" else None
        self.no_drop_caches = self.why_no_drop() if self.role == "store" else None

    # --- opening a storage ---------------------------------------------------------------

    def open_storage(self, where):
        """The storage `where` (the namespace's description) names, opened in this process."""
        kind = where["storage"]
        if kind == "file":
            from ZODB.FileStorage import FileStorage
            import zc.lockfile

            try:
                return FileStorage(where["path"])
            except zc.lockfile.LockError:
                raise d.Unavailable(
                    "FileStorage %s is locked by another process: a FileStorage serves one process "
                    "at a time (this adapter says \"sessions\": 1 for storage=file); use storage=zeo "
                    "to share it" % where["path"]
                )
        if kind in ("zeo", "mapping"):
            from ZEO.ClientStorage import ClientStorage

            return ClientStorage(
                tuple(where["address"]),
                cache_size=self.zeo_cache_mb << 20,
                wait_timeout=30,
            )
        from relstorage.options import Options
        from relstorage.storage import RelStorage

        options = Options(
            cache_local_mb=self.local_cache_mb,
            keep_history=self.keep_history == "true",
        )
        if "mysql" in where:
            from relstorage.adapters.mysql import MySQLAdapter

            import dyno_relstorage_mariadb

            dyno_relstorage_mariadb.install()

            options.driver = "PyMySQL"
            return RelStorage(MySQLAdapter(options=options, **where["mysql"]), options=options)
        from relstorage.adapters.postgresql import PostgreSQLAdapter

        return RelStorage(PostgreSQLAdapter(dsn=where["dsn"], options=options), options=options)

    def open_db(self, where):
        return ZODB.DB(self.open_storage(where), cache_size=self.cache_size, pool_size=1)

    def change_root(self, where, change):
        """Applies `change` to the root of the storage `where` names, in one transaction."""
        db = self.open_db(where)
        try:
            tm = transaction.TransactionManager()
            conn = db.open(tm)
            tm.begin()
            change(conn.root())
            tm.commit()
            conn.close()
        finally:
            db.close()

    # --- the store role --------------------------------------------------------------------

    def open(self):
        self.dir = tempfile.mkdtemp(prefix="dyno_zodb_%s_" % self.storage)
        where = {"storage": self.storage}
        if self.storage == "file":
            where["path"] = os.path.join(self.dir, "Data.fs")
        elif self.storage in ("zeo", "mapping"):
            where["address"] = list(self.address or self.start_server())
        elif self.mysql:
            where["mysql"] = dict(self.mysql, db=self.create_database())
        else:
            where["dsn"] = self.create_database()
        where["root_key"] = "dyno-%s" % uuid.uuid4().hex[:12] if self.address else "dyno"
        shards = PersistentList(QOBTree() for _ in range(SHARDS))
        try:
            self.change_root(where, lambda root: root.__setitem__(where["root_key"], shards))
        except Exception as e:
            self.close_store()  # the database made for it, dropped
            if self.mysql and "1005" in str(e) and self.keep_history == "true":
                raise d.AdapterError(
                    "RelStorage could not make its history-preserving tables on this server (%s): "
                    "MariaDB 10.5 and later refuse the column REFERENCES of RelStorage's schema; "
                    "use keep_history=false" % e, 12)
            raise
        self.where = where
        with open(os.path.join(self.dir, DESCRIPTION), "w") as f:
            json.dump(where, f)
        return self.dir

    def start_server(self):
        """Starts a ZEO server on a free loopback port, in the namespace's directory."""
        if self.storage == "file" or self.storage == "zeo":
            backend = "<filestorage>\n  path %s\n</filestorage>\n" % os.path.join(self.dir, "Data.fs")
        else:
            backend = "<mappingstorage>\n</mappingstorage>\n"
        last = ""
        for _ in range(5):
            port = free_port()
            conf = os.path.join(self.dir, "zeo.conf")
            with open(conf, "w") as f:
                f.write("<zeo>\n  address 127.0.0.1:%d\n</zeo>\n%s" % (port, backend))
            log = open(os.path.join(self.dir, "zeo.log"), "ab")
            env = dict(os.environ, PYTHONPATH=HERE)
            self.server = subprocess.Popen(
                [sys.executable, "-m", "ZEO.runzeo", "-C", conf],
                stdin=subprocess.DEVNULL, stdout=log, stderr=log, env=env, cwd=self.dir,
            )
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and self.server.poll() is None:
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=1).close()
                    return ("127.0.0.1", port)
                except OSError:
                    time.sleep(0.05)
            self.stop_server()
            last = self.log_tail()
        raise d.Unavailable("the ZEO server did not start: %s" % last)

    def log_tail(self):
        try:
            with open(os.path.join(self.dir, "zeo.log"), "rb") as f:
                lines = f.read().decode("utf-8", "replace").strip().splitlines()
            return lines[-1] if lines else "(its log is empty)"
        except OSError:
            return "(no log)"

    def stop_server(self):
        if self.server is None:
            return
        if self.server.poll() is None:
            self.server.send_signal(signal.SIGTERM)
            try:
                self.server.wait(10)
            except subprocess.TimeoutExpired:
                self.server.kill()
                self.server.wait()
        self.server = None

    def admin(self):
        """A connection to the server `dsn=` names, in autocommit."""
        if self.mysql:
            import pymysql

            return pymysql.connect(autocommit=True, **self.mysql)
        import psycopg2

        c = psycopg2.connect(self.dsn)
        c.autocommit = True
        return c

    def create_database(self):
        """A database of dyno's own on that server: its name (MySQL), or its DSN (PostgreSQL)."""
        name = "dyno_zodb_%s" % uuid.uuid4().hex[:12]
        c = self.admin()
        try:
            c.cursor().execute("CREATE DATABASE %s" % name)
        finally:
            c.close()
        self.database = name
        if self.mysql:
            return name
        from psycopg2.extensions import make_dsn, parse_dsn

        return make_dsn(**dict(parse_dsn(self.dsn), dbname=name))

    def why_no_drop(self):
        """Why this store can never drop the caches below its sessions (None: it can)."""
        if self.storage == "mapping":
            return (
                "MappingStorage keeps every object in its ZEO server's memory: no cache below "
                "the sessions that could be dropped"
            )
        if self.storage == "relstorage":
            return (
                "RelStorage on %s: the server's buffers empty only when it restarts, and dyno "
                "does not restart a server it did not start" % ("MySQL" if self.mysql else "PostgreSQL")
            )
        if self.address:
            return "a ZEO server dyno did not start: its caches are not dyno's to drop"
        return None

    def drop_caches(self):
        why = self.why_no_drop()
        if why:
            raise d.NotSupported(why)
        done = []
        for name in ("Data.fs", "Data.fs.index"):
            path = os.path.join(self.dir, name)
            if not os.path.exists(path):
                continue
            fd = os.open(path, os.O_RDONLY)
            try:
                os.fsync(fd)
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)
            done.append("%s: %s" % (name, resident(path)))
        where = "the ZEO server's " if self.storage == "zeo" else ""
        return "page cache of %sFileStorage dropped (posix_fadvise DONTNEED; fincore, resident after: %s)" % (
            where,
            "; ".join(done),
        )

    def close_store(self):
        self.stop_server()
        if getattr(self, "database", None):
            c = self.admin()
            try:
                c.cursor().execute("DROP DATABASE IF EXISTS %s" % self.database)
            finally:
                c.close()
            self.database = None
        if self.address and getattr(self, "where", None):
            # A server dyno did not start: take our root entry out (its space returns at a pack).
            self.change_root(self.where, lambda root: root.pop(self.where["root_key"], None))
        if self.dir:
            shutil.rmtree(self.dir, ignore_errors=True)

    # --- the session role ------------------------------------------------------------------

    def open_session(self):
        try:
            with open(os.path.join(self.namespace, DESCRIPTION)) as f:
                where = json.load(f)
        except (OSError, ValueError, TypeError) as e:
            raise d.AdapterError("namespace %r is not one this adapter made: %s" % (self.namespace, e), 12)
        self.db = self.open_db(where)
        self.tm = transaction.TransactionManager()
        self.conn = self.db.open(self.tm)
        self.shard_list = list(self.conn.root()[where["root_key"]])
        self.tm.abort()

    def begin(self, mode):
        self.tm.begin()

    def commit(self):
        try:
            self.tm.commit()
        except ConflictError as e:
            self.tm.abort()
            raise d.Conflict("conflict: %s" % e)
        except Exception as e:
            self.tm.abort()
            if type(e).__name__ == "ClientDisconnected":
                raise d.Timeout("the ZEO server went away during the commit: %s" % e)
            raise

    def put(self, key, value):
        shard = self.shard_list[shard_of(key)]
        obj = shard.get(key)
        if obj is None:
            shard[key] = PObject(value)
        else:
            obj.data = value

    def get(self, key):
        obj = self.shard_list[shard_of(key)].get(key)
        if obj is None:
            raise d.NotFound("no key %d" % key)
        if obj._p_status == "ghost":
            self.storage_reads += 1
        return obj.data

    def get_many(self, keys):
        # get's work in one loop (zodbshootout's steamin reads a cached object in ~0.04 µs: a
        # method call per key would cost more than the read). A ghost has no _p_changed.
        objs = self.range_of(keys)
        if objs is None:
            shards = self.shard_list
            objs = [shards[(key >> 24) & (SHARDS - 1)].get(key) for key in keys]
            if None in objs:
                raise d.NotFound("no key %d" % keys[objs.index(None)])
        out, ghosts = [], 0
        for obj in objs:
            if obj._p_changed is None:
                ghosts += 1
            out.append(obj.data)
        self.storage_reads += ghosts
        return out

    def range_of(self, keys):
        """The objects of consecutive keys in one BTree (a shootout client's batch), as that
        BTree's range, read as zodbshootout's loop reads its mapping's values, without a lookup
        per key; None for other keys, or when one is missing (the range is short)."""
        if not keys or keys != list(range(keys[0], keys[0] + len(keys))):
            return None
        first, last = keys[0], keys[-1]
        if shard_of(first) != shard_of(last):
            return None
        objs = self.shard_list[shard_of(first)].values(first, last)
        return objs if len(objs) == len(keys) else None

    def delete(self, key):
        try:
            del self.shard_list[shard_of(key)][key]
        except KeyError:
            raise d.NotFound("no key %d" % key)

    def scan(self, start, count):
        # Keys are spread over the shards by bits 24–31: their union, in key order.
        runs = [shard.items(min=start) for shard in self.shard_list]
        out = []
        for key, obj in heapq.merge(*runs, key=lambda kv: kv[0]):
            if len(out) == count:
                break
            if obj._p_status == "ghost":
                self.storage_reads += 1
            out.append((key, obj.data))
        return out

    def drop_client_cache(self):
        self.conn.cacheMinimize()
        left = self.conn._cache.cache_non_ghost_count
        if left:
            raise d.AdapterError("the pickle cache still holds %d objects after cacheMinimize" % left)

    def close_session(self):
        if self.db is not None:
            self.tm.abort()
            self.conn.close()
            self.db.close()
            self.db = None


def resident(path):
    """What fincore says of `path`: its resident bytes, or why it could not tell."""
    try:
        out = subprocess.run(
            ["fincore", "--bytes", "--noheadings", "--output", "RES", path],
            capture_output=True, text=True, timeout=10,
        )
        return "%s bytes" % out.stdout.strip() if out.returncode == 0 else "fincore failed: %s" % out.stderr.strip()
    except (OSError, subprocess.TimeoutExpired) as e:
        return "fincore unavailable (%s)" % e


if __name__ == "__main__":
    d.run(Zodb)
