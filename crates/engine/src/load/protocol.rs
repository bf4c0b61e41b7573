//! What a request/response driver gives the event loop: the request to send, and a reader that
//! finds where each response ends.
//!
//! Readers are streaming: they see the bytes as they arrive, keep only what they must (HTTP
//! headers until they are complete, a length prefix), and count the rest. A body of any size costs
//! no memory, and a reader is reused for every response of its connection, so the event loop
//! allocates nothing per request.

use super::{Mix, Scenario};
use crate::error::OpError;

/// Where a response stands after some bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Feed {
    /// Not complete yet; every byte given was consumed.
    More,
    /// The response ended after `used` bytes of the data given.
    Done {
        used: usize,
        /// `Err` for a complete response that reports a failure (HTTP non-2xx: `application`).
        outcome: Result<(), OpError>,
        /// Whether the connection may carry another request.
        keep_alive: bool,
    },
}

/// Reads the responses of one connection.
pub trait ResponseReader: Send {
    /// Feeds bytes received (`eof`: the peer closed its side; `data` is then empty). An `Err`
    /// is a broken response (`protocol`, `reset`, …) and ends the connection.
    fn feed(&mut self, data: &[u8], eof: bool) -> Result<Feed, OpError>;
    /// Forgets the previous response, for the next one on this connection: the response to
    /// request `which` of the target's [`Mix`] (0 without one).
    fn reset(&mut self, which: usize);
    /// Once a response ended: which of its request's checks ([`Protocol::checks`]) it failed,
    /// bit `k` for check `k`.
    fn checks_failed(&self) -> u64 {
        0
    }
    /// Once a response ended: the values its request captured ([`Protocol::captures`]) moved
    /// into their slots of `into`, the client's; a slot it did not capture is left as it was.
    fn take_captures(&mut self, into: &mut [Vec<u8>]) {
        let _ = into;
    }
}

/// A request/response target, as the event loop sees it.
pub trait Protocol: Send + Sync {
    /// The bytes of request `which` of the target's [`Mix`] (0 without one; each request is
    /// built once and sent as it is). May be empty: then nothing is sent and the response is
    /// whatever the server sends on connect.
    fn request(&self, which: usize) -> &[u8];
    /// The target's named requests and their weights, one picked at each request's start;
    /// `None`: one request, always the same.
    fn mix(&self) -> Option<&Mix> {
        None
    }
    /// The names of request `which`'s checks on its responses (none by default); the reader
    /// says which of them each response failed ([`ResponseReader::checks_failed`]).
    fn checks(&self, which: usize) -> &[String] {
        let _ = which;
        &[]
    }
    /// How many values a client keeps from its responses for its next requests (captures:
    /// the slots a template's `{{capture.NAME}}` reads).
    fn captures(&self) -> usize {
        0
    }
    /// A scenario: the steps each client takes in turn, instead of a request drawn by weight
    /// each time.
    fn scenario(&self) -> Option<&Scenario> {
        None
    }
    /// Whether requests are made anew at each start ([`Protocol::render`]: templates) rather
    /// than sent as [`Protocol::request`] gives them.
    fn templated(&self) -> bool {
        false
    }
    /// Writes request `which` into `out` (empty), its fields drawn as `r` says.
    fn render(&self, which: usize, r: &mut Render, out: &mut Vec<u8>) {
        out.extend_from_slice(self.request(which));
        let _ = r;
    }
    /// Open a new connection for every request (and close it after the response).
    fn connection_per_request(&self) -> bool;
    /// A reader for a new connection.
    fn reader(&self) -> Box<dyn ResponseReader>;
    /// A secure channel (TLS) for a new connection, or `None` to speak in the clear.
    fn channel(&self) -> Result<Option<Box<dyn Channel>>, OpError> {
        Ok(None)
    }
    /// A multiplexing protocol's session for a new connection (HTTP/2: many requests in flight
    /// on one connection, each on a stream of its own), or `None`: one request at a time, as
    /// [`Protocol::request`] and [`Protocol::reader`] say.
    fn session(&self) -> Option<Box<dyn Session>> {
        None
    }
    /// With a session: how many requests one connection carries at once (HTTP/2's streams,
    /// h2load's `-m`); the engine runs `connections × streams` of them.
    fn streams(&self) -> usize {
        1
    }
    /// With a session over a secure channel: the application protocol its handshake must
    /// agree on (ALPN, `h2`); a connection where it did not fails, saying so.
    fn alpn(&self) -> Option<&'static [u8]> {
        None
    }
}

/// What rendering a request may draw on: the client sending it, the load thread's seeded
/// stream, and a buffer to reuse.
pub struct Render<'a> {
    pub client: u64,
    /// This generator's shard and their count: what the shards share (`{{seq}}`, rows taken
    /// in order) is numbered over all of them, interleaved.
    pub shard: (u64, u64),
    pub rng: &'a mut u64,
    pub scratch: &'a mut Vec<u8>,
    /// What the client captured from earlier responses, by slot.
    pub captures: &'a [Vec<u8>],
}

/// How a request on a [`Session`] ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ended {
    /// Its response came: judged as [`Feed::Done`]'s outcome is.
    Response(Result<(), OpError>),
    /// It failed without a response (its stream reset, a response past `max_response`, a
    /// broken one): counted as a connection's failure is, a closed loop pausing after `refused`.
    Failed(OpError),
    /// The peer said it never processed it (HTTP/2: a stream above GOAWAY's last): it is sent
    /// again, on a new connection, its latency still counted from its intended start.
    Unprocessed,
    /// Not an end: one message of a streamed response came (gRPC server streaming), timed from
    /// the request's intended start; the request goes on.
    Message,
}

/// One connection of a multiplexing protocol, as the event loop drives it: requests are opened
/// by slot (the engine's number for a request in flight), their bytes and the protocol's own
/// (settings, acknowledgements, flow control) written into the connection's outgoing buffer;
/// what arrives is fed in and ends requests by slot. The engine holds the socket, the timing
/// and the schedule; a session holds only the protocol's state and allocates nothing per
/// request.
pub trait Session: Send {
    /// What to send once connected (HTTP/2's preface and SETTINGS).
    fn start(&mut self, out: &mut Vec<u8>);
    /// Whether one more request may be opened now (a stream free under the peer's limit, and
    /// the peer still taking requests).
    fn can_open(&self) -> bool;
    /// Opens request `slot`, which is the target's request `which` (of its [`Mix`]; 0 without
    /// one): its bytes into `out`.
    fn open(&mut self, slot: usize, which: usize, out: &mut Vec<u8>);
    /// Reads bytes received: `done(slot, how)` for each request that ended. Frames to answer
    /// go into `out`. An `Err` is the connection's end: every request still open on it fails
    /// with it.
    fn feed(
        &mut self,
        data: &[u8],
        out: &mut Vec<u8>,
        done: &mut dyn FnMut(usize, Ended),
    ) -> Result<(), OpError>;
    /// Gives up on request `slot` (its timeout, or the run's end): its stream is reset.
    fn cancel(&mut self, slot: usize, out: &mut Vec<u8>);
    /// Whether the peer takes no more requests on this connection (it said GOAWAY, or the
    /// stream numbers ran out): once its requests end, the next go on a new connection.
    fn closing(&self) -> bool;
}

/// A secure channel over one connection (TLS), as the event loop drives it: ciphertext moves
/// between the channel and the non-blocking socket; requests go in and responses come out as
/// plaintext. The shape is rustls's, so a driver wraps a `rustls::ClientConnection` directly;
/// the engine itself has no TLS library.
pub trait Channel: Send {
    /// Reads ciphertext from the socket (`Ok(0)`: the peer closed TCP).
    fn read_tls(&mut self, socket: &mut dyn std::io::Read) -> std::io::Result<usize>;
    /// Processes what was read; an `Err` (a bad certificate, a protocol error) ends the
    /// connection.
    fn process(&mut self) -> Result<(), OpError>;
    /// Writes pending ciphertext to the socket.
    fn write_tls(&mut self, socket: &mut dyn std::io::Write) -> std::io::Result<usize>;
    /// Whether ciphertext is waiting to be written.
    fn wants_write(&self) -> bool;
    /// Whether the handshake is still going on.
    fn is_handshaking(&self) -> bool;
    /// Queues a request's bytes (held until the handshake is done).
    fn send(&mut self, plaintext: &[u8]) -> std::io::Result<()>;
    /// Takes received plaintext: `Ok(0)` when the peer closed the channel, `WouldBlock` when
    /// nothing is there yet.
    fn recv(&mut self, out: &mut [u8]) -> std::io::Result<usize>;
    /// The application protocol the handshake agreed on (ALPN), once it is done.
    fn alpn(&self) -> Option<&[u8]> {
        None
    }
}
