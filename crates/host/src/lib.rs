//! What dyno serves itself.
//!
//! # Layout
//!
//! - [`reference`]: the reference servers of `dyno serve --http` and `dyno serve --tcp`: a fixed
//!   small JSON document (the cost of a trivial endpoint) or payloads of a stated size
//!   distribution, optionally stalling P ms every Q s, or misbehaving on purpose (resets,
//!   garbage) so dyno can be tested against bad servers.
//!
//! - [`link`]: the link emulator (`dyno link`): a TCP proxy adding delay, jitter and a bandwidth
//!   cap per direction.
//!
//! - [`store`]: the object-store benchmark host (`dyno serve`) and its binary protocol, on
//!   [`evloop`]'s event loops.
//!
//! - [`acceptor`]: the accepting thread all of them run, and how it is stopped.
//!
//! - [`h2`]: HTTP/2's frames and HPACK, for the reference server and the load engine's client.

pub mod acceptor;
pub mod evloop;
pub mod h2;
pub mod link;
pub mod reference;
pub mod store;
