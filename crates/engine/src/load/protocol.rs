//! What a request/response driver gives the event loop: the request to send, and a reader that
//! finds where each response ends.
//!
//! Readers are streaming: they see the bytes as they arrive, keep only what they must (HTTP
//! headers until they are complete, a length prefix), and count the rest. A body of any size costs
//! no memory, and a reader is reused for every response of its connection, so the event loop
//! allocates nothing per request.

use crate::driver::OpError;

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
}
