//! The load engine's protocols of `http://`, `https://` and `h2c://` targets: HTTP/1.1's
//! (requests as bytes built once, or rendered from templates; responses read, and checked, by
//! [`HttpReader`]) and HTTP/2's (each connection a session of [`h2::H2`]).

use super::*;
use engine::load::{Protocol, ResponseReader};

/// HTTP/2's protocol (h2c://, https:// with version 2, grpc://): each connection a session.
pub(crate) struct Http2 {
    /// The target's requests: one, or its mix's.
    pub requests: Arc<[h2::Request]>,
    pub mix: Option<engine::load::Mix>,
    pub scenario: Option<engine::load::Scenario>,
    pub streams: usize,
    #[cfg(feature = "tls")]
    pub tls: Option<crate::tls::Client>,
}

impl Protocol for Http2 {
    fn request(&self, _: usize) -> &[u8] {
        &[]
    }
    fn mix(&self) -> Option<&engine::load::Mix> {
        self.mix.as_ref()
    }
    fn scenario(&self) -> Option<&engine::load::Scenario> {
        self.scenario.as_ref()
    }
    fn connection_per_request(&self) -> bool {
        false
    }
    fn reader(&self) -> Box<dyn ResponseReader> {
        // Slots of a session read nothing themselves; the session reads for them.
        Box::new(HttpReader::new(false, 0))
    }
    fn session(&self) -> Option<Box<dyn engine::load::Session>> {
        Some(Box::new(h2::H2::new(self.requests.clone())))
    }
    fn streams(&self) -> usize {
        self.streams
    }
    #[cfg(feature = "tls")]
    fn channel(&self) -> Result<Option<Box<dyn engine::load::Channel>>, engine::driver::OpError> {
        self.tls.as_ref().map(|t| t.channel()).transpose()
    }
    #[cfg(feature = "tls")]
    fn alpn(&self) -> Option<&'static [u8]> {
        self.tls.as_ref().map(|_| &b"h2"[..])
    }
}

/// HTTP/1.1's protocol: each connection carries one request at a time.
pub(super) struct Http {
    /// The target's requests' bytes: one, or its mix's.
    pub(super) requests: Vec<Vec<u8>>,
    /// Templates: the requests rendered at each start instead.
    pub(super) rendered: Option<template::Rendered>,
    /// Each request's checks on its responses, and their names; how many values a client
    /// captures.
    pub(super) checks: Option<Arc<[check::Checks]>>,
    pub(super) check_names: Vec<Vec<String>>,
    pub(super) captures: usize,
    pub(super) scenario: Option<engine::load::Scenario>,
    /// Which of them are HEAD (their responses have no body).
    pub(super) heads: Arc<[bool]>,
    pub(super) mix: Option<engine::load::Mix>,
    pub(super) keepalive: bool,
    pub(super) max_response: u64,
    #[cfg(feature = "tls")]
    pub(super) tls: Option<crate::tls::Client>,
}

impl Protocol for Http {
    fn request(&self, which: usize) -> &[u8] {
        &self.requests[which]
    }
    fn mix(&self) -> Option<&engine::load::Mix> {
        self.mix.as_ref()
    }
    fn templated(&self) -> bool {
        self.rendered.is_some()
    }
    fn checks(&self, which: usize) -> &[String] {
        self.check_names.get(which).map_or(&[], Vec::as_slice)
    }
    fn captures(&self) -> usize {
        self.captures
    }
    fn scenario(&self) -> Option<&engine::load::Scenario> {
        self.scenario.as_ref()
    }
    fn render(&self, which: usize, r: &mut engine::load::Render, out: &mut Vec<u8>) {
        match &self.rendered {
            Some(t) => t.render(which, r, out),
            None => out.extend_from_slice(&self.requests[which]),
        }
    }
    fn connection_per_request(&self) -> bool {
        !self.keepalive
    }
    fn reader(&self) -> Box<dyn ResponseReader> {
        let reader = match self.mix {
            None => HttpReader::new(self.heads[0], self.max_response),
            Some(_) => HttpReader::for_mix(self.heads.clone(), self.max_response),
        };
        match &self.checks {
            Some(c) => Box::new(reader.with_checks(c.clone())),
            None => Box::new(reader),
        }
    }
    #[cfg(feature = "tls")]
    fn channel(&self) -> Result<Option<Box<dyn engine::load::Channel>>, engine::driver::OpError> {
        self.tls.as_ref().map(|t| t.channel()).transpose()
    }
}
