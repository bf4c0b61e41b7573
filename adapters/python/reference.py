#!/usr/bin/env python3
"""dyno's reference adapter: a store on SQLite (Python's sqlite3), shared by every client process.

The store role makes a directory of its own in the temporary directory (the namespace) with one
SQLite file, WAL mode; each session opens that file; `close` of the store deletes the directory.
A read transaction is BEGIN … COMMIT, a write one BEGIN IMMEDIATE … COMMIT. There is no cache
below dyno's: every get reaches the storage (counted), and `drop_caches` is not supported (the
operating system's page cache is not the adapter's to drop), so the shootout's cold state is
`n/a`, with that reason. Options: `synchronous` (SQLite's: off, normal, full; default normal).

It is also what adapter authors can read first: every operation of the protocol, in a page.
"""

import os
import shutil
import sqlite3
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dyno_adapter as d  # noqa: E402


class Reference(d.Adapter):
    name = "reference (sqlite3)"
    versions = {"sqlite": sqlite3.sqlite_version, "python": sys.version.split()[0]}
    counts_storage_reads = True

    def __init__(self, role, namespace, options):
        super().__init__(role, namespace, options)
        sync = options.get("synchronous", "normal")
        if sync not in ("off", "normal", "full"):
            raise d.AdapterError("synchronous must be off, normal or full, not %r" % sync, 12)
        self.sync = sync
        Reference.durability = "SQLite WAL synchronous=%s" % sync
        self.db = None
        if role == "session":
            self.db = self.connect(os.path.join(namespace, "store.db"))

    def connect(self, path):
        db = sqlite3.connect(path, isolation_level=None, timeout=30)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=%s" % self.sync)
        return db

    def open(self):
        self.dir = tempfile.mkdtemp(prefix="dyno_reference_")
        db = self.connect(os.path.join(self.dir, "store.db"))
        db.execute("CREATE TABLE objects (k INTEGER PRIMARY KEY, v BLOB NOT NULL)")
        db.close()
        return self.dir

    def drop_caches(self):
        raise d.NotSupported("the reference adapter keeps no cache below dyno's; the OS page cache is not its to drop")

    def close_store(self):
        shutil.rmtree(getattr(self, "dir", ""), ignore_errors=True)

    # SQLite's INTEGER is signed 64-bit: keys are stored as their two's complement.
    @staticmethod
    def k(key):
        return key - (1 << 64) if key >= 1 << 63 else key

    def begin(self, mode):
        self.db.execute("BEGIN IMMEDIATE" if mode == "write" else "BEGIN")

    def commit(self):
        if self.db.in_transaction:
            self.db.execute("COMMIT")

    def put(self, key, value):
        self.db.execute("INSERT OR REPLACE INTO objects (k, v) VALUES (?, ?)", (self.k(key), value))

    def get(self, key):
        self.storage_reads += 1
        row = self.db.execute("SELECT v FROM objects WHERE k = ?", (self.k(key),)).fetchone()
        if row is None:
            raise d.NotFound("no key %d" % key)
        return bytes(row[0])

    def get_many(self, keys):
        return [self.get(key) for key in keys]

    def delete(self, key):
        if self.db.execute("DELETE FROM objects WHERE k = ?", (self.k(key),)).rowcount == 0:
            raise d.NotFound("no key %d" % key)

    def close_session(self):
        if self.db is not None:
            self.db.close()


if __name__ == "__main__":
    d.run(Reference)
