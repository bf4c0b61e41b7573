//! The object-store benchmark host (`dyno serve`): objects in memory, or with `--store PATH` in
//! LMDB (fsync at commit), served over dyno's own compact binary protocol, so a client's time can
//! be split into the server's time and the rest (serialization and network).
//!
//! # Transactions
//!
//! Between `BEGIN` and `COMMIT` a connection's writes are held by the host (reads see them) and
//! applied at `COMMIT` at once: under one lock in memory, in one LMDB transaction on disk. A
//! `BEGIN` inside a transaction commits the one before; a connection that closes mid-transaction
//! loses its writes. Writes outside a transaction apply at once. A transaction holds at most
//! [`MAX_TX_BYTES`].
//!
//! # Protocol
//!
//! Every message, both ways, is a frame: a 4-byte big-endian length of what follows, one kind
//! byte, then the body. A client sends one request and reads one response (no pipelining).
//!
//! | request | body | response |
//! |---|---|---|
//! | `HELLO` 0x01 | token (UTF-8, may be empty) | `OK`, or `ERR` and the connection closes |
//! | `OPEN` 0x02 | namespace (must start with `dyno_`) | `OK` |
//! | `BEGIN` 0x03 | — | `OK` |
//! | `PUT` 0x04 | key (u64 BE), value | `OK` |
//! | `GET` 0x05 | key (u64 BE) | `VALUE` (the bytes) or `NOT_FOUND` |
//! | `DELETE` 0x06 | key (u64 BE) | `OK` or `NOT_FOUND` |
//! | `COMMIT` 0x07 | — | `OK` |
//! | `STATS` 0x08 | — | `TEXT`: one line per operation: name, count, and its server-side latency histogram since the host started (HdrHistogram V2, deflate, base64; ns) |
//! | `DROP` 0x09 | namespace | `OK` (its objects are deleted) |
//! | `INFO` 0x0B | — | `TEXT`: `durability: …` and `version: …` lines |
//! | `MKDIR` 0x0C | path | `OK`; `NOT_FOUND` when the parent is missing; `ERR` when it exists |
//! | `STAT` 0x0D | path | `OK` when the folder exists, else `NOT_FOUND` |
//! | `LIST` 0x0E | path | `TEXT`: the entries' names, one per line; or `NOT_FOUND` |
//! | `RMDIR` 0x0F | path | `OK`; `NOT_FOUND`; `ERR` when it is not empty |
//! | `MGET` 0x0A | keys (u64 BE each) | `VALUES`: per key, its length (u32 BE) and bytes; or `NOT_FOUND` and the first missing key; or `ERR` (the connection stays open) when the values would exceed [`MAX_FRAME`] |
//!
//! Folders (`MKDIR` … `RMDIR`, the `namespace` family) are paths as [`valid_path`] allows, in a
//! tree of their own per namespace, kept in host memory (also with `--store`), at most
//! [`MAX_FOLDERS`] per namespace.
//!
//! Responses: `OK` 0x80, `VALUE` 0x81, `NOT_FOUND` 0x82, `ERR` 0x83 (a UTF-8 message), `TEXT` 0x84,
//! `VALUES` 0x85.
//!
//! # Limits
//!
//! A frame longer than [`MAX_FRAME`], more than [`MAX_CONNECTIONS`] connections, an unknown kind,
//! a malformed body, or a missing or wrong token each get an `ERR` saying so, and that connection
//! (only) is closed. A connection holds at most one frame in memory.

mod client;
mod objects;
mod protocol;
mod request;
mod server;
mod tree;

pub use client::{OpStat, fetch_info, fetch_stats, parse_stats};
pub use objects::{DiskStore, Objects};
pub use protocol::{
    ValuesError, expect, kind, read_frame, split_entries, split_values, write_frame,
};
pub use server::{Options, StoreServer};
pub use tree::{MAX_FOLDERS, MAX_PATH, TreeError, valid_path};

use objects::*;
use protocol::*;
use request::{FolderOp, Request};
use tree::*;

use std::collections::HashMap;

use rustc_hash::FxHashMap;
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use crate::evloop::{self, EventServer, Protocol, Step};

/// The largest frame accepted: a 64 MiB object plus its key and header.
pub const MAX_FRAME: u32 = (64 << 20) + 64;
/// Connections served at once.
pub const MAX_CONNECTIONS: usize = 1024;
/// Namespaces a host keeps at once.
pub const MAX_NAMESPACES: usize = 4096;
/// The writes one connection's transaction may hold until it commits.
pub const MAX_TX_BYTES: usize = 256 << 20;
/// The largest `--store` database (a sparse file; only what is written takes space).
const STORE_MAP_SIZE: usize = 1 << 40;
/// The file that marks a directory as a dyno host store.
pub const STORE_MARKER: &str = ".dyno-host-store";
