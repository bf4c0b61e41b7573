//! Wake-up coalescing: how often a load thread lets its sockets wake it.
//!
//! A thread asleep in `epoll_wait` is woken by every response that arrives. The wake-up is paid
//! on the *server's* core: the kernel work of sending the response ends with waking the reader,
//! and waking a thread that sleeps on another core takes an inter-processor interrupt (on a
//! virtual machine, an exit to the hypervisor on each side). Against a saturated server on the
//! next core, that cost comes out of the server's own throughput: on this project's 2-core
//! machine nginx served about 15% more requests per second once the generator stopped being
//! woken by each response (`bench/http-vs-wrk.sh`).
//!
//! So, while requests are in flight, a thread may sleep on its own clock for a short *window*
//! instead of on its sockets, then take every response that came in meanwhile at once: one
//! wake-up for several responses, like a network card's interrupt moderation. Nothing is hidden:
//! a response is timed when it is read, so the wait is inside its latency, and an open-loop
//! request that falls due during a window still goes out on time (the sleep ends at the next
//! arrival).
//!
//! The window is worth having only when it gathers several responses and is short next to what
//! is measured. `auto` sizes it to 1/[`SHARE`] of the thread's running service time (at most
//! [`AUTO_MAX_WINDOW_NS`], so it adds at most about 1/SHARE to a latency) and uses it only while
//! another response is due within it: requests in flight × window ≥ service time, by Little's
//! law, which with an uncapped window means at least SHARE requests in flight. A ping-pong with
//! a few connections never coalesces; 50 connections queued at a busy server do. Where the round
//! trip, not the target, sets the pace (many connections over a slow link), the window can cost
//! up to about 1/SHARE of the throughput; `--coalesce off` gives it back.
//!
//! While requests wait for a free connection (an open loop with every connection busy), no window
//! is used: each of them would wait it out as well.
//!
//! A sleep on the clock is not free either. Each thread measures what one costs it when it starts
//! ([`crate::timer::sleep_cost_ns`]): a microsecond or two on bare metal, about 20 µs of CPU on
//! this project's virtual machine, where arming the timer exits to the hypervisor. A window
//! shorter than that cost is never used.
//!
//! The same cost decides how an open loop sends. A thread that woke on its timer for every
//! request would spend its whole core on waking at 40,000 requests/s here, and one that spun
//! instead would too; on a virtual machine a second busy core also takes time from the server's
//! (the hypervisor steals it in millisecond stalls). So when requests fall due on average closer
//! together than [`PACE_COSTS`] sleeps' worth of time, the thread *paces* itself: it wakes at most
//! once per that time and sends every request that fell due meanwhile. Each goes out late by at
//! most the pace; the lateness is in its latency and in the schedule lag, and waking costs at
//! most 1/PACE_COSTS of the core. `--coalesce off` wakes for each request (spinning below one
//! sleep's cost), for the most precise sending at whatever CPU that takes.

/// The widest window `auto` chooses, and the widest one may ask for.
pub const MAX_WINDOW_NS: u64 = 1_000_000;
/// `auto` never goes above this.
pub const AUTO_MAX_WINDOW_NS: u64 = 100_000;
/// The narrowest window used, whatever a sleep costs.
pub const MIN_WINDOW_NS: u64 = 5_000;
/// `auto`: the window is this fraction of the recent service time (so it adds at most about
/// 1/SHARE to a latency).
pub const SHARE: u64 = 8;
/// Responses before the running service time counts.
const WARM: u64 = 64;
/// `auto`: an open loop paces itself when its requests fall due closer together than this many
/// sleeps' cost, and then wakes once per that time.
pub const PACE_COSTS: u64 = 4;
/// `auto`: the pace is kept within these bounds.
pub const MIN_PACE_NS: u64 = 10_000;
pub const MAX_PACE_NS: u64 = 200_000;
/// The running service time follows each response by 1/EWMA_WEIGHT.
const EWMA_WEIGHT: u64 = 64;

/// How a thread coalesces its wake-ups.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Coalesce {
    /// Every readiness wakes the thread at once.
    Off,
    /// A window sized from the recent service time (see the module docs).
    Auto,
    /// A fixed window, in ns, while two or more requests are in flight.
    Fixed(u64),
}

impl Coalesce {
    /// `auto`, `off`, or the window (`20us`).
    pub fn label(&self) -> String {
        match self {
            Coalesce::Off => "off".into(),
            Coalesce::Auto => "auto".into(),
            Coalesce::Fixed(ns) => crate::units::duration_label(*ns),
        }
    }
}

/// How a thread waited, for the run's self-check (summed over threads with [`Waits::add`]).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Waits {
    /// Times a thread waited: a blocking poll (which returns at once when something is already
    /// ready), or a sleep on its own clock.
    pub wakeups: u64,
    /// Of those, the sleeps on its own clock: a response window or an open loop's pace.
    pub coalesced: u64,
    /// The widths of those sleeps, summed, ns.
    pub window_sum_ns: u64,
    /// Open loop: the widest pace a thread sent at (0 if none paced itself); its requests went
    /// out up to this late by design.
    pub pace_ns: u64,
    /// What one short sleep cost a thread in CPU, ns (the most over the threads).
    pub sleep_cost_ns: u64,
}

impl Waits {
    /// Adds another thread's waits.
    pub fn add(&mut self, o: &Waits) {
        self.wakeups += o.wakeups;
        self.coalesced += o.coalesced;
        self.window_sum_ns += o.window_sum_ns;
        self.pace_ns = self.pace_ns.max(o.pace_ns);
        self.sleep_cost_ns = self.sleep_cost_ns.max(o.sleep_cost_ns);
    }

    /// The mean width of the sleeps on a thread's own clock, ns (0 when there were none).
    pub fn window_mean_ns(&self) -> f64 {
        if self.coalesced == 0 {
            0.0
        } else {
            self.window_sum_ns as f64 / self.coalesced as f64
        }
    }
}

/// One thread's window: the running service time and the window it implies now, and how the
/// thread waited so far.
#[derive(Debug, Clone)]
pub struct Window {
    mode: Coalesce,
    /// What one sleep costs the thread in CPU, ns.
    sleep_cost_ns: u64,
    service_ns: u64,
    seen: u64,
    /// Open loop: the running gap between due requests, and the last one's time.
    gap_ns: u64,
    last_due: Option<u64>,
    waits: Waits,
}

impl Window {
    /// A thread's window; `sleep_cost_ns` is what one sleep costs it.
    pub fn new(mode: Coalesce, sleep_cost_ns: u64) -> Window {
        Window {
            mode,
            sleep_cost_ns,
            service_ns: 0,
            seen: 0,
            gap_ns: u64::MAX,
            last_due: None,
            waits: Waits {
                sleep_cost_ns,
                ..Waits::default()
            },
        }
    }

    /// The thread blocked in its poll.
    pub fn blocked(&mut self) {
        self.waits.wakeups += 1;
    }

    /// The thread slept on its own clock for a window (or, `paced`, for its pace) `width_ns`
    /// wide.
    pub fn slept(&mut self, width_ns: u64, paced: bool) {
        self.waits.wakeups += 1;
        self.waits.coalesced += 1;
        self.waits.window_sum_ns += width_ns;
        if paced {
            self.waits.pace_ns = self.waits.pace_ns.max(width_ns);
        }
    }

    /// How the thread has waited so far.
    pub fn waits(&self) -> Waits {
        self.waits
    }

    /// A response took `service_ns` from its send.
    pub fn observe(&mut self, service_ns: u64) {
        self.seen += 1;
        if self.seen == 1 {
            self.service_ns = service_ns;
            return;
        }
        self.service_ns =
            self.service_ns - self.service_ns / EWMA_WEIGHT + service_ns / EWMA_WEIGHT;
    }

    /// An open-loop request fell due at `due_ns`.
    pub fn due(&mut self, due_ns: u64) {
        if let Some(last) = self.last_due {
            let gap = due_ns.saturating_sub(last);
            self.gap_ns = if self.gap_ns == u64::MAX {
                gap
            } else {
                self.gap_ns - self.gap_ns / EWMA_WEIGHT + gap / EWMA_WEIGHT
            };
        }
        self.last_due = Some(due_ns);
    }

    /// Open loop: the least time between wake-ups when requests fall due densely; 0 to wake (or
    /// spin) for each one.
    pub fn pace_ns(&self) -> u64 {
        let pace = match self.mode {
            Coalesce::Off => return 0,
            Coalesce::Auto => (self.sleep_cost_ns * PACE_COSTS).clamp(MIN_PACE_NS, MAX_PACE_NS),
            Coalesce::Fixed(ns) => ns,
        };
        if self.gap_ns < pace { pace } else { 0 }
    }

    /// What one sleep costs the thread: waits shorter than this are spun rather than slept.
    pub fn sleep_cost_ns(&self) -> u64 {
        self.sleep_cost_ns
    }

    /// The window to use with `in_flight` requests in flight; 0 for none. None either while
    /// requests are `waiting` for a connection: each of them would wait the window out too.
    pub fn ns(&self, in_flight: u64, waiting: bool) -> u64 {
        if in_flight < 2 || waiting {
            return 0;
        }
        match self.mode {
            Coalesce::Off => 0,
            Coalesce::Fixed(ns) => ns,
            Coalesce::Auto => {
                let w = (self.service_ns / SHARE).min(AUTO_MAX_WINDOW_NS);
                let least = self.sleep_cost_ns.max(MIN_WINDOW_NS);
                if self.seen < WARM || w < least || in_flight * w < self.service_ns {
                    0
                } else {
                    w
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A sleep's cost as on this project's virtual machine.
    const COST: u64 = 20_000;

    fn warmed(mode: Coalesce, service_ns: u64) -> Window {
        let mut w = Window::new(mode, COST);
        for _ in 0..2_000 {
            w.observe(service_ns);
        }
        w
    }

    #[test]
    fn auto_coalesces_only_many_responses_in_flight() {
        // 50 connections queued ~700 µs at a busy server: a 1/8 window.
        let w = warmed(Coalesce::Auto, 700_000);
        assert!(
            (86_000..=88_000).contains(&w.ns(50, false)),
            "{}",
            w.ns(50, false)
        );
        // The same service time with fewer than 8 in flight: under one response per window.
        assert_eq!(w.ns(8, false), w.ns(50, false));
        assert_eq!(w.ns(7, false), 0);
        assert_eq!(w.ns(1, false), 0);
        // A fast target: the window would be under what a sleep costs.
        assert_eq!(warmed(Coalesce::Auto, 150_000).ns(1000, false), 0);
        let mut cheap = Window::new(Coalesce::Auto, 2_000);
        for _ in 0..2_000 {
            cheap.observe(150_000);
        }
        assert_eq!(cheap.ns(1000, false), 150_000 / SHARE);
        // A long queue: capped, and then it takes more in flight to fill a window.
        let slow = warmed(Coalesce::Auto, 10_000_000);
        assert_eq!(slow.ns(1000, false), AUTO_MAX_WINDOW_NS);
        assert_eq!(slow.ns(99, false), 0);
        // Before warm-up: nothing to judge from.
        let mut cold = Window::new(Coalesce::Auto, COST);
        for _ in 0..WARM - 1 {
            cold.observe(700_000);
        }
        assert_eq!(cold.ns(50, false), 0);
    }

    #[test]
    fn off_and_fixed_do_what_they_say() {
        assert_eq!(warmed(Coalesce::Off, 700_000).ns(50, false), 0);
        let fixed = Window::new(Coalesce::Fixed(20_000), COST);
        assert_eq!(fixed.ns(2, false), 20_000);
        assert_eq!(fixed.ns(1, false), 0);
        // Requests waiting for a connection: no window, whatever the mode.
        assert_eq!(fixed.ns(2, true), 0);
        assert_eq!(warmed(Coalesce::Auto, 700_000).ns(50, true), 0);
        assert_eq!(Coalesce::Fixed(20_000).label(), "20us");
        assert_eq!(Coalesce::Auto.label(), "auto");
        assert_eq!(Coalesce::Off.label(), "off");
    }

    #[test]
    fn dense_arrivals_are_paced_unless_coalescing_is_off() {
        let arrivals = |mode, gap_ns: u64| {
            let mut w = Window::new(mode, COST);
            for i in 0..1_000 {
                w.due(i * gap_ns);
            }
            w
        };
        // A sleep costs 20 µs: 40,000 requests/s on a thread is paced at 4 sleeps' worth.
        assert_eq!(arrivals(Coalesce::Auto, 25_000).pace_ns(), 4 * COST);
        assert_eq!(arrivals(Coalesce::Fixed(30_000), 25_000).pace_ns(), 30_000);
        assert_eq!(arrivals(Coalesce::Off, 25_000).pace_ns(), 0);
        // 10,000 requests/s: each one is woken for.
        assert_eq!(arrivals(Coalesce::Auto, 100_000).pace_ns(), 0);
        // One short gap among long ones does not make a dense schedule.
        let mut w = arrivals(Coalesce::Auto, 100_000);
        w.due(999 * 100_000 + 1_000);
        assert_eq!(w.pace_ns(), 0);
        // Where sleeping is cheap, only far denser schedules are paced, and within the bounds.
        let cheap = |gap_ns: u64| {
            let mut w = Window::new(Coalesce::Auto, 1_000);
            for i in 0..1_000 {
                w.due(i * gap_ns);
            }
            w.pace_ns()
        };
        assert_eq!(cheap(25_000), 0);
        assert_eq!(cheap(5_000), MIN_PACE_NS);
        // Before two requests: nothing known.
        assert_eq!(Window::new(Coalesce::Auto, COST).pace_ns(), 0);
    }

    #[test]
    fn waits_are_counted_and_summed_over_threads() {
        let mut a = Window::new(Coalesce::Auto, COST);
        a.blocked();
        a.slept(30_000, false);
        a.slept(80_000, true);
        let mut b = Window::new(Coalesce::Auto, 25_000);
        b.slept(10_000, true);
        let mut w = a.waits();
        w.add(&b.waits());
        assert_eq!((w.wakeups, w.coalesced, w.window_sum_ns), (4, 3, 120_000));
        assert_eq!((w.pace_ns, w.sleep_cost_ns), (80_000, 25_000));
        assert_eq!(w.window_mean_ns(), 40_000.0);
        assert_eq!(Waits::default().window_mean_ns(), 0.0);
    }

    #[test]
    fn the_running_service_time_follows_a_change() {
        let mut w = warmed(Coalesce::Auto, 100_000);
        for _ in 0..1_000 {
            w.observe(1_000_000);
        }
        assert!(
            w.service_ns > 990_000 && w.service_ns <= 1_000_000,
            "{}",
            w.service_ns
        );
    }
}
