//! What happens when a request ends: its response recorded (by request of a mix, its
//! checks counted, its captures kept, a scenario's step taken), or its failure counted; then
//! what its connection does next — the next request, a pause, a think, an open loop's queue.

use super::*;

/// A counter pair (passed, failed) per check of each request; empty when none has checks.
pub(super) fn check_counters(p: &dyn Protocol) -> Vec<Vec<[u64; 2]>> {
    let requests = p.mix().map_or(1, |m| m.len());
    let all: Vec<Vec<[u64; 2]>> = (0..requests)
        .map(|w| vec![[0; 2]; p.checks(w).len()])
        .collect();
    match all.iter().all(Vec::is_empty) {
        true => Vec::new(),
        false => all,
    }
}

impl Worker<'_> {
    /// A response ended.
    pub(super) fn complete(
        &mut self,
        ci: usize,
        outcome: Result<(), OpError>,
        keep_alive: bool,
        now: u64,
    ) {
        let c = &mut self.conns[ci];
        let latency = now.saturating_sub(c.intended);
        let service = now.saturating_sub(c.sent);
        self.counters.responses += 1;
        if outcome.is_ok() {
            self.counters.ok += 1;
        }
        results::histogram::record(&mut self.rec.service, service);
        self.window.observe(service);
        if let Some(r) = self.by_request.get_mut(c.which) {
            results::histogram::record(&mut r.service, service);
            r.record(latency, outcome.clone().map(|_| 0));
        }
        if let Some(counts) = self.checks.get_mut(c.which).filter(|n| !n.is_empty()) {
            let failed = c.reader.checks_failed();
            for (k, n) in counts.iter_mut().enumerate() {
                n[(failed >> k & 1) as usize] += 1;
            }
        }
        if !c.captured.is_empty() {
            c.reader.take_captures(&mut c.captured);
        }
        let think = self.next_step(ci, now);
        self.rec.record(latency, outcome.map(|_| 0));
        self.interval_hist.saturating_record(latency.max(1));
        self.interval_service.saturating_record(service.max(1));
        let reuse = keep_alive && !self.spec.protocol.connection_per_request();
        if reuse {
            self.conns[ci].state = State::Idle;
        } else {
            self.drop_stream(ci);
        }
        let n = self.outstanding.saturating_sub(1);
        self.set_outstanding(now, n);
        match think {
            0 => self.next_for(ci, now),
            ns => self.pause(ci, now + ns),
        }
    }

    /// A scenario's client moves on after a response: to its next step, or, after its last,
    /// to a new iteration (this one timed from its first step's intended start). The think
    /// time before the next step: 0 without a scenario, and in an open loop before a new
    /// iteration (it starts at its arrival).
    fn next_step(&mut self, ci: usize, now: u64) -> u64 {
        let Some(s) = &self.scenario else { return 0 };
        let c = &mut self.conns[ci];
        c.step += 1;
        if c.step == s.steps.len() {
            c.step = 0;
            self.iterations
                .record(now.saturating_sub(c.iteration_from), Ok(0));
            if self.open {
                return 0;
            }
        }
        s.think(results::rng::splitmix64(&mut self.draw))
    }

    /// Connection `ci` starts its next request at `at` (a pause after a failure, a think).
    fn pause(&mut self, ci: usize, at: u64) {
        if self.conns[ci].retry_at.is_none() {
            self.pausing += 1;
        }
        self.conns[ci].retry_at = Some(at);
    }

    /// A request failed: count it (no latency: there was no response), close the connection.
    ///
    /// A failure inside `start` itself (the connect call failed at once) never starts another
    /// request from here, so failures cannot recurse: a closed-loop connection pauses, an
    /// open-loop one goes back to the idle list for the next due request.
    pub(super) fn fail(&mut self, ci: usize, e: OpError, now: u64) {
        let was_busy = self.conns[ci].busy();
        let refused = e.class == ErrorClass::Refused;
        if was_busy {
            self.count_failed(ci, &e);
        }
        self.rec.fail(e);
        self.drop_stream(ci);
        if was_busy {
            let n = self.outstanding.saturating_sub(1);
            self.set_outstanding(now, n);
        }
        if self.open {
            if was_busy {
                self.next_for(ci, now);
            } else {
                self.idle.push(ci);
            }
        } else if refused || !was_busy {
            self.pause(ci, now + RETRY_PAUSE_NS);
        } else {
            self.next_for(ci, now);
        }
    }

    /// A request whose connection could not even be opened: counted by request and by
    /// iteration as any failed request, out of the outstanding ones, then its connection's
    /// failure (which, not busy, starts nothing from here: no recursion).
    pub(super) fn fail_at_start(&mut self, ci: usize, e: OpError, now: u64) {
        self.count_failed(ci, &e);
        let n = self.outstanding.saturating_sub(1);
        self.set_outstanding(now, n);
        self.fail(ci, e, now);
    }

    /// A failed request in its request's figures, and its scenario's iteration ended there
    /// (the next starts from the first step).
    fn count_failed(&mut self, ci: usize, e: &OpError) {
        if let Some(r) = self.by_request.get_mut(self.conns[ci].which) {
            r.fail(e.clone());
        }
        if self.scenario.is_some() {
            self.iterations.fail(e.clone());
            self.conns[ci].step = 0;
        }
    }

    /// What a connection does after a request ended.
    pub(super) fn next_for(&mut self, ci: usize, now: u64) {
        if self.open && self.conns[ci].step > 0 {
            // A scenario's iteration goes on, on its own client, before any new arrival.
            self.start(ci, now, now);
            return;
        }
        if self.open {
            if let Some(intended) = self.backlog.pop_front() {
                // It was counted as outstanding when queued; `start` counts it again.
                let n = self.outstanding.saturating_sub(1);
                self.set_outstanding(now, n);
                self.start(ci, intended, now);
            } else {
                self.idle.push(ci);
            }
            return;
        }
        if self.may_start(ci, now) {
            self.start(ci, now, now);
        }
    }

    /// Closed loop: whether connection `ci` may start another request now.
    pub(super) fn may_start(&self, ci: usize, now: u64) -> bool {
        self.issuing && self.conns[ci].remaining > 0 && !self.closed_over(now)
    }

    /// Closed loop with a duration: true once it has passed.
    pub(super) fn closed_over(&self, now: u64) -> bool {
        matches!(self.closed_stop, Some(Stop::Duration { ns }) if now - self.start >= ns)
    }

    /// An open-loop request is due at `intended`.
    pub(super) fn dispatch(&mut self, intended: u64, now: u64) {
        self.lag
            .saturating_record(now.saturating_sub(intended).max(1));
        self.window.due(intended);
        if let Some(ci) = self.idle.pop() {
            self.start(ci, intended, now);
        } else if self.conns.len() < self.max_connections * self.streams {
            let ci = self.add_conn(u64::MAX);
            self.start(ci, intended, now);
        } else if self.backlog.len() < MAX_BACKLOG {
            self.backlog.push_back(intended);
            let n = self.outstanding + 1;
            self.set_outstanding(now, n);
        } else {
            self.counters.unsent += 1;
        }
    }
}
