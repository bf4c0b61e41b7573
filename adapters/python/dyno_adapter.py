"""dyno's adapter helper: a store adapter is a class; `run(MyAdapter)` speaks the protocol.

The protocol (docs/src/reference/adapter-protocol.md) is JSON lines over standard input and output: dyno
sends one message per line, the adapter answers each with one line. This module reads the
messages, calls the adapter's methods, and writes the replies; errors raised as `AdapterError`
(or its kinds below) become error replies with their code; any other exception is a crash
(code 13), reported and the adapter goes on. Standard library only.

An adapter class sets `name`, `durability` and `versions`, and implements:

- the store role (one process per run): `open()` returns the namespace (a string every session
  gets), `drop_caches()` returns what it dropped (or raises `NotSupported(why)`), `close_store()`;
- the session role (one process per client): `begin(mode)` ("read" or "write"), `put(key,
  value)`, `get(key)` -> bytes (raise `NotFound` when absent), `delete(key)`, `commit()`, and
  optionally `get_many(keys)` -> [bytes], `scan(start, count)` -> [(key, bytes)] in key order,
  `drop_client_cache()`, `close_session()`. With `get_many` the kit also serves `get_heads`
  (each value's length and first bytes only, for a reader that checks values it need not hold).

An adapter whose sessions keep a client object cache of their own (ZODB's pickle cache) says what
it is in `self.client_cache` (a short text) and implements `drop_client_cache()`: the shootout then
reads through that cache instead of dyno's. One that can serve only so many sessions at once (a
FileStorage: one process) sets `self.sessions` to that number. A store that can never drop the
caches below its sessions says why in `self.no_drop_caches` (its handshake carries it, so the
shootout's cold test is `n/a` before warm's sessions are closed, and hot still finds them).

Keys are integers (below 2**64), values bytes. An adapter that keeps a cache counts the reads
that reached its storage in `self.storage_reads` and sets `counts_storage_reads = True`; dyno
verifies the shootout's cache states with that count.
"""

import base64
import json
import struct
import sys
import traceback

PROTOCOL = 1


class AdapterError(Exception):
    """An operation's failure, as the protocol's error code and a text."""

    code = 13

    def __init__(self, text, code=None):
        super().__init__(text)
        self.text = text
        if code is not None:
            self.code = code


class Timeout(AdapterError):
    code = 0  # indefinite: the outcome is unknown


class NotSupported(AdapterError):
    code = 10


class Unavailable(AdapterError):
    code = 11  # definite: nothing was done


class Abort(AdapterError):
    code = 14


class NotFound(AdapterError):
    code = 20


class Conflict(AdapterError):
    code = 30


class Adapter:
    name = "unnamed adapter"
    durability = "unknown"
    versions = {}
    counts_storage_reads = False

    def __init__(self, role, namespace, options):
        self.role = role
        self.namespace = namespace
        self.options = options
        self.storage_reads = 0
        self.client_cache = None
        self.sessions = None
        self.no_drop_caches = None

    # The store role.
    def open(self):
        raise NotSupported("this adapter has no store role")

    def drop_caches(self):
        raise NotSupported("this adapter keeps no caches it can drop")

    def close_store(self):
        pass

    # The session role.
    def begin(self, mode):
        pass

    def commit(self):
        pass

    def close_session(self):
        pass


def _optional_ops(cls):
    ops = [op for op in ("get_many", "scan") if callable(getattr(cls, op, None))]
    if "get_many" in ops:
        # get_many with only each value's length and first bytes sent back: the kit's own.
        ops.append("get_heads")
    return ops


def _key(text):
    return int(text)


def run(cls, stdin=None, stdout=None):
    """Serves the protocol on standard input and output until `close` or end of input: JSON
    lines, or the binary framing when dyno offers it (and the class does not set
    `framing = "json"`)."""
    stdin = stdin or sys.stdin.buffer
    stdout = stdout or sys.stdout.buffer
    state = {"adapter": None, "binary": False, "done": False}
    for raw in stdin:
        try:
            msg = json.loads(raw)
        except ValueError:
            print("dyno_adapter: a line that is not JSON: %r" % raw[:80], file=sys.stderr)
            continue
        _write(stdout, _handle(cls, state, msg))
        if state["done"]:
            return
        if state["binary"]:
            return _run_binary(state, stdin, stdout)


def _handle(cls, state, msg):
    """One JSON message's reply (a dict)."""
    adapter = state["adapter"]
    mid = msg.get("msg_id")
    kind = msg.get("type")
    reply = {"in_reply_to": mid}
    before = adapter.storage_reads if adapter else 0
    try:
        if kind == "init":
            adapter = state["adapter"] = cls(msg.get("role"), msg.get("namespace"), msg.get("options") or {})
            offered = msg.get("framings") or ["json"]
            framing = "binary" if "binary" in offered and getattr(cls, "framing", "binary") != "json" else "json"
            reply.update(
                type="init_ok",
                protocol=PROTOCOL,
                name=cls.name,
                durability=cls.durability,
                versions=cls.versions,
                ops=["get", "put", "delete", "begin", "commit"] + _optional_ops(cls),
                storage_reads=cls.counts_storage_reads,
                framing=framing,
            )
            if adapter.client_cache:
                reply["client_cache"] = adapter.client_cache
            if adapter.sessions:
                reply["sessions"] = adapter.sessions
            if adapter.no_drop_caches:
                reply["no_drop_caches"] = adapter.no_drop_caches
            state["binary"] = framing == "binary"
            return reply
        if adapter is None:
            raise AdapterError("the first message must be init", 12)
        if kind == "close":
            if adapter.role == "store":
                adapter.close_store()
            else:
                adapter.close_session()
            state["done"] = True
            reply["type"] = "close_ok"
        elif kind == "open":
            reply.update(type="open_ok", namespace=adapter.open())
        elif kind == "drop_caches":
            reply.update(type="drop_caches_ok", done=adapter.drop_caches())
        elif kind == "begin":
            adapter.begin(msg.get("mode"))
            reply["type"] = "begin_ok"
        elif kind == "commit":
            adapter.commit()
            reply["type"] = "commit_ok"
        elif kind == "put":
            adapter.put(_key(msg["key"]), base64.b64decode(msg["value"]))
            reply["type"] = "put_ok"
        elif kind == "get":
            value = adapter.get(_key(msg["key"]))
            reply.update(type="get_ok", value=base64.b64encode(value).decode("ascii"))
        elif kind == "delete":
            adapter.delete(_key(msg["key"]))
            reply["type"] = "delete_ok"
        elif kind == "drop_client_cache" and callable(getattr(adapter, "drop_client_cache", None)):
            adapter.drop_client_cache()
            reply["type"] = "drop_client_cache_ok"
        elif kind == "get_many" and "get_many" in _optional_ops(cls):
            values = adapter.get_many([_key(k) for k in msg["keys"]])
            reply.update(type="get_many_ok", values=[base64.b64encode(v).decode("ascii") for v in values])
        elif kind == "get_heads" and "get_heads" in _optional_ops(cls):
            head = int(msg["head"])
            values = adapter.get_many([_key(k) for k in msg["keys"]])
            reply.update(
                type="get_heads_ok",
                lengths=[len(v) for v in values],
                heads=[base64.b64encode(v[:head]).decode("ascii") for v in values],
            )
        elif kind == "scan" and "scan" in _optional_ops(cls):
            items = adapter.scan(_key(msg["start"]), int(msg["count"]))
            reply.update(type="scan_ok", items=[[str(k), base64.b64encode(v).decode("ascii")] for k, v in items])
        else:
            raise NotSupported("no operation %r" % kind)
        if kind in ("get", "get_many", "get_heads", "scan"):
            reply["storage_reads"] = adapter.storage_reads - before
    except AdapterError as e:
        reply = {"in_reply_to": mid, "type": "error", "code": e.code, "text": e.text}
    except Exception as e:  # a crash of the adapter's own code: code 13, and go on
        traceback.print_exc(file=sys.stderr)
        reply = {"in_reply_to": mid, "type": "error", "code": 13, "text": "%s: %s" % (type(e).__name__, e)}
    return reply


# The binary framing (docs/src/reference/adapter-protocol.md): u32 length (little-endian, of what follows),
# u8 kind, u32 msg_id, body.
JSON, BEGIN, PUT, GET, DELETE, COMMIT, GET_MANY, GET_HEADS = 0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07
OK, VALUE, VALUES, HEADS, ERROR = 0x81, 0x83, 0x86, 0x87, 0xFF
_HEAD = struct.Struct("<IBI")
_U64 = struct.Struct("<Q")
_U32 = struct.Struct("<I")


def _frame(kind, mid, body=b""):
    return _HEAD.pack(5 + len(body), kind, mid) + body


def _run_binary(state, stdin, stdout):
    adapter = state["adapter"]
    read = stdin.read
    write = stdout.write
    flush = stdout.flush
    while True:
        head = read(4)
        if len(head) < 4:
            return
        (length,) = _U32.unpack(head)
        frame = read(length)
        if len(frame) < length or length < 5:
            return
        kind = frame[0]
        (mid,) = _U32.unpack_from(frame, 1)
        try:
            if kind == GET:
                before = adapter.storage_reads
                value = adapter.get(_U64.unpack_from(frame, 5)[0])
                out = _frame(VALUE, mid, _U32.pack(adapter.storage_reads - before) + value)
            elif kind == PUT:
                adapter.put(_U64.unpack_from(frame, 5)[0], frame[13:])
                out = _frame(OK, mid)
            elif kind == BEGIN:
                adapter.begin("write" if frame[5] else "read")
                out = _frame(OK, mid)
            elif kind == COMMIT:
                adapter.commit()
                out = _frame(OK, mid)
            elif kind == DELETE:
                adapter.delete(_U64.unpack_from(frame, 5)[0])
                out = _frame(OK, mid)
            elif kind == GET_MANY and "get_many" in _optional_ops(type(adapter)):
                out = _frame(VALUES, mid, _get_many(adapter, frame))
            elif kind == GET_HEADS and "get_heads" in _optional_ops(type(adapter)):
                out = _frame(HEADS, mid, _get_heads(adapter, frame))
            elif kind == JSON:
                msg = json.loads(frame[5:])
                reply = _handle(type(adapter), state, msg)
                out = _frame(JSON, mid, json.dumps(reply, separators=(",", ":")).encode("utf-8"))
            else:
                raise AdapterError("no binary kind %#x" % kind, 12)
        except AdapterError as e:
            out = _frame(ERROR, mid, _U32.pack(e.code) + e.text.encode("utf-8"))
        except Exception as e:
            traceback.print_exc(file=sys.stderr)
            out = _frame(ERROR, mid, _U32.pack(13) + ("%s: %s" % (type(e).__name__, e)).encode("utf-8"))
        write(out)
        flush()
        if state["done"]:
            return


def _read_keys(adapter, frame, at, what):
    """The keys of a batched read's frame (a u32 count at `at`, then the keys), read with
    get_many: its values and the storage reads they took."""
    (count,) = _U32.unpack_from(frame, at)
    if len(frame) != at + 4 + 8 * count:
        raise AdapterError("a %s frame of %d bytes for %d keys" % (what, len(frame), count), 12)
    before = adapter.storage_reads
    values = adapter.get_many(list(struct.unpack_from("<%dQ" % count, frame, at + 4)))
    if len(values) != count:
        raise AdapterError("get_many gave %d values for %d keys" % (len(values), count), 13)
    return values, adapter.storage_reads - before


def _get_many(adapter, frame):
    """A GET_MANY frame's keys read: the VALUES body (storage reads, count, each value)."""
    values, reads = _read_keys(adapter, frame, 5, "get_many")
    pack = _U32.pack
    parts = [pack(reads), pack(len(values))]
    for v in values:
        parts += (pack(len(v)), v)
    return b"".join(parts)


def _get_heads(adapter, frame):
    """A GET_HEADS frame (u32 head, then as GET_MANY's) read: the HEADS body (storage reads,
    count, each value's length, then each value's first `head` bytes end to end)."""
    if len(frame) < 13:
        raise AdapterError("a get_heads frame of %d bytes" % len(frame), 12)
    (head,) = _U32.unpack_from(frame, 5)
    values, reads = _read_keys(adapter, frame, 9, "get_heads")
    lengths = struct.pack("<%dI" % len(values), *map(len, values))
    return b"".join([_U32.pack(reads), _U32.pack(len(values)), lengths] + [v[:head] for v in values])


def _write(stdout, reply):
    stdout.write(json.dumps(reply, separators=(",", ":")).encode("utf-8") + b"\n")
    stdout.flush()
