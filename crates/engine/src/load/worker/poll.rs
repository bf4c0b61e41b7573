//! The poll loop that drives one load thread: waits for readiness, the pace or a deadline;
//! restarts clients when told; retries connections; ends intervals; gives up on requests past
//! their timeout; the thread's result when it ends.

use super::*;

impl<'a> Worker<'a> {
    /// Ends the current interval: its growth of the counters and its histogram go to the
    /// collector (one message a thread per interval; nothing is kept here).
    pub(super) fn flush_interval(&mut self, now: u64) {
        let start = self.start + self.interval_index * self.interval_ns;
        let h = std::mem::replace(&mut self.interval_hist, results::new_histogram());
        let service = std::mem::replace(&mut self.interval_service, results::new_histogram());
        let (c0, e0) = &self.interval_base;
        // The run's end reads them before it fails what is still in flight.
        let gauges =
            (self.ended_with).unwrap_or_else(|| (self.open_connections(), self.in_flight()));
        let c = &self.counters;
        let mut errors = self.rec.errors;
        for (e, base) in errors.iter_mut().zip(e0) {
            *e -= base;
        }
        let iv = Interval {
            start_ns: start - self.start,
            end_ns: (start + self.interval_ns).min(now) - self.start,
            latency: h,
            service,
            requests: c.requests - c0.requests,
            responses: c.responses - c0.responses,
            ok: c.ok - c0.ok,
            connects: c.connects - c0.connects,
            open: gauges.0,
            in_flight: gauges.1,
            bytes_in: c.bytes_in - c0.bytes_in,
            bytes_out: c.bytes_out - c0.bytes_out,
            errors,
        };
        self.interval_base = (self.counters.clone(), self.rec.errors);
        let _ = self.reporter.tx.send(Msg::Interval(
            self.reporter.index,
            self.interval_index,
            Box::new(iv),
        ));
        self.interval_index = (now - self.start) / self.interval_ns;
    }

    /// Connections connected now: a link's slots ride their link's.
    fn open_connections(&self) -> u64 {
        let own = (self.conns.iter())
            .filter(|c| c.link.is_none() && c.stream.is_some())
            .filter(|c| !matches!(c.state, State::Closed | State::Connecting))
            .count();
        (own + self.links.iter().filter(|l| l.up).count()) as u64
    }

    pub(super) fn scan_timeouts(&mut self, now: u64) {
        let timeout = self.spec.timeout.as_nanos() as u64;
        for ci in 0..self.conns.len() {
            let c = &self.conns[ci];
            if c.busy() && now.saturating_sub(c.started) > timeout {
                let e = OpError::new(
                    ErrorClass::Timeout,
                    "no complete response within the timeout",
                );
                // A link still connecting, or silent since this request started, is given
                // up with every request on it; otherwise only this request's stream.
                match c.link {
                    Some(li) if self.links[li].silent_since(c.started) => {
                        self.link_fail(li, e, now)
                    }
                    _ => self.fail(ci, e, now),
                }
            }
        }
        if self.multiplexed {
            self.flush_links(now);
        }
    }

    /// Drops every connection, as a client restarting would: a request in flight fails as
    /// `reset`; the next request on each connection opens a new one.
    pub(super) fn restart_clients(&mut self, now: u64) {
        for li in 0..self.links.len() {
            let e = OpError::new(ErrorClass::Reset, "dyno's clients restarted (a fault)");
            self.link_fail(li, e, now);
        }
        // A link's slots failed with their link above (and may be busy again, anew).
        for ci in 0..self.conns.len() {
            if self.conns[ci].link.is_some() {
                continue;
            }
            if self.conns[ci].busy() {
                let e = OpError::new(ErrorClass::Reset, "dyno's clients restarted (a fault)");
                self.fail(ci, e, now);
            } else {
                self.drop_stream(ci);
            }
        }
    }

    /// Connections whose pause after a failure is over start again.
    pub(super) fn retry_due(&mut self, now: u64) {
        for ci in 0..self.conns.len() {
            if self.conns[ci].retry_at.is_some_and(|at| at <= now) {
                self.conns[ci].retry_at = None;
                self.pausing -= 1;
                if self.may_start(ci, now) {
                    self.start(ci, now, now);
                }
            }
        }
    }

    /// How to wait for the next thing to do (an arrival, a retry, an interval, a scan): sleep
    /// on the thread's own clock for a pace or a coalescing window and then poll without
    /// waiting, or block in the poll until the timer.
    pub(super) fn wait(
        &mut self,
        next_scan: u64,
        next_arrival: Option<u64>,
        last_wake: u64,
        last_dispatch: u64,
    ) -> io::Result<Option<Duration>> {
        // Sleep until the next thing to do: an arrival, a retry, an interval, a scan.
        let mut wake = next_scan.min(self.start + (self.interval_index + 1) * self.interval_ns);
        if let Some(t) = next_arrival {
            wake = wake.min(t);
        }
        if self.pausing > 0 {
            for c in &self.conns {
                if let Some(t) = c.retry_at {
                    wake = wake.min(t);
                }
            }
        }
        let now = self.clock.now_ns();
        let window = self.window.ns(self.outstanding, !self.backlog.is_empty());
        let pace = self.window.pace_ns();
        Ok(if wake <= now {
            Some(Duration::ZERO)
        } else if pace > 0 && wake < now + pace {
            // Requests fall due densely: wake once per pace, on the thread's own clock, and
            // send whatever fell due meanwhile (late by at most the pace, in its latency).
            self.flush_ring();
            timer::sleep_ns(wake.max(last_dispatch + pace) - now);
            self.counters.syscalls += 1;
            self.window.slept(pace, true);
            Some(Duration::ZERO)
        } else if wake <= now + self.window.sleep_cost_ns() {
            Some(Duration::ZERO)
        } else if now < last_wake + window {
            // Within a window: sleep on the thread's own clock, not on its sockets, until the
            // window ends (or something is due sooner), then take whatever came in.
            self.flush_ring();
            timer::sleep_ns((last_wake + window).min(wake) - now);
            self.counters.syscalls += 1;
            self.window.slept(window, false);
            Some(Duration::ZERO)
        } else if self.uring.is_some() {
            // The ring's wait has a timeout of its own, to the nanosecond.
            self.window.blocked();
            Some(Duration::from_nanos(wake - now))
        } else {
            self.timer.arm(wake, wake - now)?;
            self.counters.syscalls += 1;
            self.window.blocked();
            None
        })
    }

    /// The thread's figures once the loop ended: what never got a response counted, the last
    /// interval flushed.
    pub(super) fn finish(mut self, start: u64, cpu0: u64, interrupted: bool) -> WorkerResult {
        let end = self.clock.now_ns();
        // Whatever is still in flight or queued never got its response.
        let never = self.backlog.len() as u64;
        self.counters.unsent += never;
        // Never started: not started now by a connection freed below.
        self.backlog.clear();
        self.ended_with = Some((self.open_connections(), self.in_flight()));
        if !interrupted {
            for ci in 0..self.conns.len() {
                if self.conns[ci].busy() {
                    let e = OpError::new(ErrorClass::Timeout, "no response before the run ended");
                    self.fail(ci, e, end);
                } else if self.conns[ci].step > 0 {
                    // A scenario's client between two steps: its iteration never ended.
                    let e = OpError::new(ErrorClass::Timeout, "the run ended between its steps");
                    self.iterations.fail(e);
                }
            }
        }
        self.set_outstanding(end, 0);
        self.flush_interval(end);
        let wall = end - start;
        self.counters.outstanding_mean = if wall > 0 {
            self.outstanding_area / wall as f64
        } else {
            0.0
        };
        WorkerResult {
            rec: self.rec,
            by_request: self.by_request,
            checks: self.checks,
            iterations: self.scenario.is_some().then_some(self.iterations),
            lag: self.lag,
            handshake: self.handshake,
            streamed: self.streamed,
            counters: self.counters,
            waits: self.window.waits(),
            cpu_ns: thread_cpu_ns() - cpu0,
            wall_ns: wall,
            interrupted,
            sends: self.sends,
        }
    }

    /// Gets the thread ready and starts it with the others: an open loop's connections opened
    /// first, the clock's origin set, a closed loop's connections started. The start, and the
    /// thread's CPU time then.
    fn begin(&mut self, share: &Share, barrier: &Barrier) -> (u64, u64) {
        if self.open {
            self.preconnect(share.connections);
        }
        barrier.wait();
        let cpu0 = thread_cpu_ns();
        let start = share.origin_ns.unwrap_or_else(|| self.clock.now_ns());
        self.start = start;
        self.outstanding_since = start;
        self.closed_stop = if self.open { None } else { share.stop };
        if !self.open {
            for _ in 0..share.connections * self.streams {
                let ci = self.add_conn(share.closed_remaining);
                if share.closed_remaining > 0 {
                    self.start(ci, start, start);
                }
            }
        }
        (start, cpu0)
    }

    /// Whether the thread has issued all it will: an open loop's arrivals are over (`no_more`),
    /// a closed loop's duration or every connection's requests.
    fn issuing_over(&self, now: u64, no_more: bool) -> bool {
        match self.open {
            true => no_more,
            false => self.closed_over(now) || self.conns.iter().all(|c| c.remaining == 0),
        }
    }

    /// On the ring, hands the kernel the sends queued so far, so a sleep does not hold them
    /// back (epoll's are written at once).
    fn flush_ring(&mut self) {
        if let Some(u) = self.uring.as_mut() {
            u.flush(&mut self.counters.syscalls);
        }
    }

    /// Waits up to `timeout` (`None`: until something happens) and handles what happened, on
    /// the ring or the poll; whether anything did.
    fn turn(&mut self, events: &mut Events, timeout: Option<Duration>) -> io::Result<bool> {
        if self.uring.is_some() {
            return self.uring_turn(timeout);
        }
        self.counters.syscalls += 1;
        match self.poll.poll(events, timeout) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => return Ok(false),
            Err(e) => return Err(e),
        }
        let now = self.clock.now_ns();
        for ev in events.iter() {
            if ev.token() == TIMER {
                self.timer.acknowledge();
                self.counters.syscalls += 1;
                continue;
            }
            self.handle(ev.token().0, now);
        }
        Ok(!events.is_empty())
    }

    pub(crate) fn run(
        mut self,
        mut share: Share,
        barrier: &Barrier,
        interrupt: &AtomicBool,
    ) -> io::Result<WorkerResult> {
        let mut events = Events::with_capacity(EVENTS);
        let (start, cpu0) = self.begin(&share, barrier);
        let mut next_scan = start + SCAN_NS;
        let mut next_arrival = if self.open {
            share.schedule.next(start, start)
        } else {
            None
        };
        let mut arrivals_started: u64 = 0;
        let drain_ns = self.spec.timeout.as_nanos() as u64;
        let mut issuing_ended_at: Option<u64> = None;
        let mut interrupted = false;
        let mut clients_seen = self.spec.clients.load(Ordering::Relaxed);
        // When the thread last woke to something (a response, a due request, a timer).
        let mut last_wake = 0u64;
        // When the thread last sent requests that had fallen due.
        let mut last_dispatch = 0u64;
        loop {
            let now = self.clock.now_ns();
            if interrupt.load(Ordering::Relaxed) {
                interrupted = true;
                break;
            }
            // A `restart-clients` fault: every connection dropped and opened again.
            let epoch = self.spec.clients.load(Ordering::Relaxed);
            if epoch != clients_seen {
                clients_seen = epoch;
                self.restart_clients(now);
            }
            // Open loop: dispatch every request that is due.
            while let Some(t) = next_arrival {
                if t > now {
                    break;
                }
                let stop_now = share
                    .stop
                    .is_some_and(|s| s.reached(arrivals_started, t - start));
                if stop_now {
                    next_arrival = None;
                    break;
                }
                self.dispatch(t, now);
                last_dispatch = now;
                arrivals_started += 1;
                next_arrival = share.schedule.next(start, now);
            }
            // Closed loop: connections pausing after a failure.
            if self.pausing > 0 {
                self.retry_due(now);
            }
            if now >= self.start + (self.interval_index + 1) * self.interval_ns {
                self.flush_interval(now);
            }
            if now >= next_scan {
                self.scan_timeouts(now);
                next_scan = now + SCAN_NS;
            }
            // Is issuing over?
            if self.issuing && self.issuing_over(now, next_arrival.is_none()) {
                self.issuing = false;
                issuing_ended_at = Some(now);
            }
            if !self.issuing {
                if self.in_flight() + self.backlog.len() as u64 == 0 {
                    break;
                }
                if issuing_ended_at.is_some_and(|t| now > t + drain_ns) {
                    break;
                }
            }
            let timeout = self.wait(next_scan, next_arrival, last_wake, last_dispatch)?;
            if self.turn(&mut events, timeout)? {
                last_wake = self.clock.now_ns();
            }
        }
        Ok(self.finish(start, cpu0, interrupted))
    }
}
