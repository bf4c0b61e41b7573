//! What a request/response driver gives the event loop: the request to send, and a reader that
//! finds where each response ends.
//!
//! Readers are streaming: they see the bytes as they arrive, keep only what they must (HTTP
//! headers until they are complete, a length prefix), and count the rest. A body of any size costs
//! no memory, and a reader is reused for every response of its connection, so the event loop
//! allocates nothing per request.

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
    /// Forgets the previous response, for the next one on this connection.
    fn reset(&mut self);
}

/// A request/response target, as the event loop sees it.
pub trait Protocol: Send + Sync {
    /// The bytes of a request (all requests of a target are alike). May be empty: then nothing is
    /// sent and the response is whatever the server sends on connect.
    fn request(&self) -> &[u8];
    /// Open a new connection for every request (and close it after the response).
    fn connection_per_request(&self) -> bool;
    /// A reader for a new connection.
    fn reader(&self) -> Box<dyn ResponseReader>;
    /// A secure channel (TLS) for a new connection, or `None` to speak in the clear.
    fn channel(&self) -> Result<Option<Box<dyn Channel>>, OpError> {
        Ok(None)
    }
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
}
