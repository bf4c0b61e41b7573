//! HTTP/2's wire (RFC 9113) and header compression (RFC 7541), for both ends: the load engine's
//! client (`targets::http::h2`) and the reference server's (`reference`'s h2c).

pub mod frame;
pub mod hpack;
pub mod huffman;
mod table;
