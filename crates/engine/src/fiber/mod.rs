//! Many client sessions per thread: each client runs on a fiber (a stackful coroutine), and a
//! few generator threads each drive their share of the fibers from one event loop.
//!
//! A suite's client code stays what it was — blocking calls, one logical session with its own
//! connection — but when it would block (a socket not ready, a sleep, a barrier) it yields to
//! its thread's scheduler, which runs the next ready fiber and sleeps in `epoll_wait` only when
//! none is. So `-c 200` clients cost two threads and 200 small stacks, not 200 threads that wake
//! and sleep once per operation, and a round trip costs what an event loop's does: one send, one
//! receive, and a share of one `epoll_wait`.
//!
//! Outside a fiber every call here blocks its thread as before, so a session also works from a
//! plain thread (setup, the lost-writes check).
//!
//! - [`join_all`] runs jobs as fibers on `threads` threads and returns each job's result, in
//!   order, as `std::thread::scope` would (a panic is that job's `Err`, never the others').
//! - [`Stream`] is a TCP stream for drivers: non-blocking underneath, registered once per
//!   scheduler (edge-triggered), with read and write deadlines.
//! - [`sleep_until`], [`yield_now`], [`Barrier`]: what a client may wait on besides a socket.
//!
//! A fiber must not hold a lock that another fiber of its thread may take across a call that
//! yields (the other would block the thread); suites hold locks only for short bookkeeping.

use corosensei::stack::DefaultStack;
use corosensei::{Coroutine, CoroutineResult, Yielder};
use mio::unix::SourceFd;
use mio::{Events, Interest, Poll, Token, Waker};
use std::cell::{Cell, RefCell};
use std::collections::{BinaryHeap, VecDeque};
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::fd::{AsRawFd, RawFd};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

mod barrier;
mod clock;
mod nap;
mod ring;
mod stream;
pub use barrier::Barrier;
pub use clock::{Bound, FAR, coarse_now, deadline_in};
pub use stream::*;

/// Each fiber's stack, reserved (not touched) up front: pages are committed as the client's
/// code uses them, so the resident cost is what it really needs (tens of KiB), and a deep
/// driver call or a panic's unwinding still has room.
pub const STACK_BYTES: usize = 1024 * 1024;

/// Events taken from `epoll_wait` per call: enough for every socket of a thread's clients to
/// report at once in the common case; more wait for the next call.
const EVENTS: usize = 1024;

/// `epoll_wait` sleeps in whole milliseconds: a deadline closer than this is waited for on an
/// exact timer instead, the ring's own or on epoll a timerfd (the load engine's too:
/// [`crate::timer::Timer`]), so nothing polls until it is due, and the thread wakes once, on
/// time. An open loop of 8,000 transactions a second on 8 clients polled most of its time away
/// when epoll's millisecond was all there was (it costs a third of the CPU since), and an open
/// loop's sleep of a few milliseconds woke twice, once for epoll's whole milliseconds and once
/// for the rest. Farther deadlines (the 30 s bound on every read) wait on epoll alone: arming
/// a timer each time the earliest of those moved would cost a system call per reply. How late
/// the thread's waits end is learnt ([`crate::timer::Lateness`]) and taken off each wait, so
/// it wakes about on time; what lateness remains is in the schedule lag and the latency.
const EXACT_BELOW: Duration = Duration::from_millis(50);

/// How long `epoll_wait` may sleep for a scheduler's `timeout`: its whole milliseconds (epoll's
/// unit, so it never wakes late by a rounding, nor polls when a millisecond or more is left).
fn epoll_timeout(timeout: Option<Duration>) -> Option<Duration> {
    timeout.map(|left| Duration::from_millis(left.as_millis() as u64))
}

/// Whether `timeout` is waited for on an exact timer.
fn close(timeout: Option<Duration>) -> bool {
    timeout.is_some_and(|t| !t.is_zero() && t < EXACT_BELOW)
}

/// The token of the scheduler's waker (another thread released a barrier).
const WAKER: Token = Token(usize::MAX);

/// The token of the epoll scheduler's exact timer.
const ALARM: Token = Token(usize::MAX - 1);

/// A job for [`join_all`]: one client's work.
pub type Job<'a, T> = Box<dyn FnOnce() -> T + Send + 'a>;

/// The number of threads dyno may run generators on: the CPUs of its affinity mask (a `taskset`
/// narrows it), at least one.
pub fn default_threads() -> usize {
    // SAFETY: a zeroed cpu_set_t is a valid empty set; sched_getaffinity fills it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) == 0 {
            let n = libc::CPU_COUNT(&set);
            if n > 0 {
                return n as usize;
            }
        }
    }
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// The threads that carry the clients, and whether their sockets go through io_uring (a ring
/// per thread; the choice is [`crate::ring::choose`]'s) or epoll.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Generators {
    pub threads: usize,
    pub ring: bool,
    /// How long a thread on epoll sleeps, when none of its fibers is ready, one waits on a
    /// socket and nothing is in, before it waits on epoll (`--nap`; zero: it waits at once):
    /// never past a deadline, and only while the events of its idle turns come within the nap
    /// ([`nap::Napper`]). A thread asleep in `epoll_wait` is woken by the reply's arrival: on
    /// loopback that wake-up runs on the server's core, and on a VM whose idle vCPU halts it
    /// costs an interrupt through the hypervisor. Replies that arrive during a nap are taken
    /// when it ends, up to the nap late.
    pub nap: Duration,
}

/// `threads` threads on epoll.
impl From<usize> for Generators {
    fn from(threads: usize) -> Generators {
        Generators {
            threads,
            ring: false,
            nap: Duration::ZERO,
        }
    }
}

/// Runs every job as a fiber, spread evenly over the generator threads (at most one per job),
/// and returns their results in the jobs' order. Returns when all have ended, like
/// `std::thread::scope`; a job that panics is its own `Err`.
pub fn join_all<'a, T: Send + 'a>(
    generators: impl Into<Generators>,
    jobs: Vec<Job<'a, T>>,
) -> Vec<std::thread::Result<T>> {
    let n = jobs.len();
    if n == 0 {
        return Vec::new();
    }
    let Generators { threads, ring, nap } = generators.into();
    let threads = threads.clamp(1, n);
    let mut shares: Vec<Vec<(usize, Job<'a, T>)>> = (0..threads).map(|_| Vec::new()).collect();
    for (i, job) in jobs.into_iter().enumerate() {
        shares[i % threads].push((i, job));
    }
    let mut out: Vec<Option<std::thread::Result<T>>> = (0..n).map(|_| None).collect();
    std::thread::scope(|s| {
        let handles: Vec<_> = shares
            .into_iter()
            .enumerate()
            .map(|(t, share)| {
                std::thread::Builder::new()
                    .name(format!("dyno-gen-{t}"))
                    .spawn_scoped(s, move || Scheduler::run(share, ring, nap))
                    .expect("spawning a generator thread")
            })
            .collect();
        for h in handles {
            match h.join() {
                Ok(done) => {
                    for (i, r) in done {
                        out[i] = Some(r);
                    }
                }
                // The scheduler itself does not panic; if it did, its jobs report it.
                Err(panic) => {
                    let msg = panic_message(&panic).to_string();
                    for slot in out.iter_mut().filter(|o| o.is_none()) {
                        *slot = Some(Err(Box::new(format!("generator thread failed: {msg}"))));
                    }
                }
            }
        }
    });
    out.into_iter()
        .map(|r| r.unwrap_or_else(|| Err(Box::new("the job did not run"))))
        .collect()
}

/// What a caught panic said.
pub fn panic_message(panic: &Box<dyn std::any::Any + Send>) -> &str {
    panic
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| panic.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("(no message)")
}

/// True on a fiber (its blocking calls yield to the scheduler).
pub fn in_fiber() -> bool {
    CURRENT.with(|c| !c.get().is_null())
}

/// Lets the other fibers of this thread run (no-op outside a fiber).
pub fn yield_now() {
    if in_fiber() {
        suspend(Why::Yield);
    }
}

/// For a loop that may go round without waiting (a script with no statement, a connection
/// that fails at once): yields when the fiber has not waited since the last call, so that the
/// thread's other fibers run, and [`coarse_now`] moves on; `mark` is the loop's own (start it
/// at 0). A round that waited costs a comparison.
pub fn take_turn(mark: &mut u64) {
    if SUSPENDS.with(Cell::get) == *mark {
        yield_now();
    }
    *mark = SUSPENDS.with(Cell::get);
}

/// Waits until `deadline`: a fiber yields (the thread runs others), a thread sleeps.
pub fn sleep_until(deadline: Instant) {
    if in_fiber() {
        while Instant::now() < deadline {
            suspend(Why::Sleep(deadline));
        }
    } else {
        let now = Instant::now();
        if deadline > now {
            std::thread::sleep(deadline - now);
        }
    }
}

/// [`sleep_until`] `d` from now.
pub fn sleep(d: Duration) {
    sleep_until(Instant::now() + d);
}

/// Why a fiber yielded.
enum Why {
    /// Runnable again at once.
    Yield,
    /// Runnable at the deadline.
    Sleep(Instant),
    /// Waiting for registration `reg` to be ready, until the deadline if any.
    Io {
        reg: usize,
        deadline: Option<Instant>,
    },
    /// Waiting for another thread (a barrier): runnable when the scheduler's waker fires.
    Park,
    /// Waiting for a completion on the scheduler's ring, until the deadline if any.
    Ring { deadline: Option<Instant> },
}

/// What woke a fiber.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Wake {
    Ready,
    TimedOut,
}

type Fib<T> = Coroutine<Wake, Why, std::thread::Result<T>, DefaultStack>;

#[cfg(test)]
thread_local! {
    /// The most timers this thread's scheduler has held.
    static MOST_TIMERS: Cell<usize> = const { Cell::new(0) };
}

thread_local! {
    /// The yielder of the fiber running on this thread; null outside a fiber.
    static CURRENT: Cell<*const Yielder<Wake, Why>> = const { Cell::new(std::ptr::null()) };
    /// This thread's scheduler state, while it runs one.
    static SCHED: RefCell<Option<Shared>> = const { RefCell::new(None) };
    /// How many times a fiber of this thread has waited (see [`take_turn`]).
    static SUSPENDS: Cell<u64> = const { Cell::new(0) };
}

fn suspend(why: Why) -> Wake {
    let y = CURRENT.with(|c| c.get());
    assert!(!y.is_null(), "suspend outside a fiber");
    SUSPENDS.with(|n| n.set(n.get().wrapping_add(1)));
    // SAFETY: the pointer is the running fiber's yielder (set by the scheduler before it resumed
    // this fiber, or by the fiber's own first frame); it lives on that fiber's stack until the
    // fiber returns, and only this thread reads it.
    let wake = unsafe { (*y).suspend(why) };
    // The scheduler set CURRENT back to this fiber's yielder before resuming it.
    wake
}

/// What the scheduler shares with its fibers' streams: the poller, the readiness of each
/// registered socket, and an identity so a stream knows whether it is registered here.
struct Shared {
    id: u64,
    poll: Poll,
    regs: Vec<Reg>,
    waker: Arc<Waker>,
    /// The ring the fibers' streams read and write through, when the thread runs on one.
    ring: Option<ring::FiberRing>,
}

/// A socket registered with this thread's poller.
#[derive(Default)]
struct Reg {
    readable: bool,
    writable: bool,
    /// The peer closed its side, or the connection was reset: reading (writing) stays ready,
    /// since no new event will say so again (an edge that brought the last bytes and the end
    /// at once).
    read_closed: bool,
    write_closed: bool,
    /// The fiber waiting on it and what for (`(fiber, wants_read)`).
    waiter: Option<(usize, bool)>,
}

static NEXT_SCHED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

struct Slot<T> {
    co: Fib<T>,
    /// The fiber's yielder, known once it first ran.
    yielder: std::rc::Rc<Cell<*const Yielder<Wake, Why>>>,
    wake: Wake,
    /// Bumped at each wait, so a stale timer does not wake a later wait.
    wait_seq: u64,
    /// The registration it waits on, if any.
    waiting_on: Option<usize>,
    /// Whether it waits for a completion on the ring.
    waiting_ring: bool,
}

/// A timer: its deadline, the wait it ends (`Slot::wait_seq`), the fiber; soonest first.
type Timer = std::cmp::Reverse<(Instant, u64, usize)>;

/// One scheduler's fibers, and what each waits on.
struct Scheduler<T> {
    /// Each fiber's job's place in the jobs handed to `run`.
    index: Vec<usize>,
    slots: Vec<Option<Slot<T>>>,
    done: Vec<(usize, std::thread::Result<T>)>,
    ready: VecDeque<usize>,
    parked: Vec<usize>,
    timers: BinaryHeap<Timer>,
    /// How late this thread's waits for a deadline end: each is that much shorter.
    lateness: crate::timer::Lateness,
    /// Fibers not yet returned.
    live: usize,
    /// Fibers waiting on a socket (epoll's): only then may the thread nap before it waits.
    on_sockets: usize,
}

impl<'a, T: Send + 'a> Scheduler<T> {
    /// Runs `jobs` as fibers on this thread until every one has returned: the results, each
    /// with its job's index. On a ring (`ring`) the fibers' streams read and write through it.
    fn run(
        jobs: Vec<(usize, Job<'a, T>)>,
        ring: bool,
        nap: Duration,
    ) -> Vec<(usize, std::thread::Result<T>)> {
        let poll = Poll::new().expect("creating an epoll instance");
        let waker = Arc::new(Waker::new(poll.registry(), WAKER).expect("creating a waker"));
        let mut alarm =
            crate::timer::Timer::new(poll.registry(), ALARM).expect("creating a timerfd");
        let started = Instant::now();
        let ring = ring.then(|| ring::FiberRing::new(jobs.len()).expect("creating an io_uring"));
        let on_ring = ring.is_some();
        SCHED.with(|s| {
            *s.borrow_mut() = Some(Shared {
                id: NEXT_SCHED.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
                poll,
                regs: Vec::new(),
                waker,
                ring,
            })
        });
        let mut sched = Scheduler::spawn(jobs);
        let mut napper = nap::Napper::new(nap);
        // Dropped before `sched` should this thread unwind: the ring (what the kernel holds of
        // the fibers' buffers, cancelled and ended) goes before the fibers' stacks.
        let _ring_first = RingFirst;
        let mut events = Events::with_capacity(EVENTS);
        if on_ring {
            sched.run_ring(&mut events);
        }
        while sched.live > 0 {
            sched.resume_ready();
            if sched.live == 0 {
                break;
            }
            let wait = sched.lateness.wait(sched.timeout());
            let timeout = match wait {
                Some(t) if close(wait) => {
                    // The deadline it stands for, in nanoseconds from the start (never 0):
                    // the same deadline again re-arms nothing.
                    let due = sched.timers.peek().map_or(Instant::now() + t, |d| d.0.0);
                    let at = (due - started).as_nanos() as u64 + 1;
                    // epoll's own timeout stays, a millisecond past the deadline, should the
                    // timer's event ever be missed.
                    match alarm.arm(at, t.as_nanos() as u64) {
                        Ok(()) => epoll_timeout(wait).map(|ms| ms + Duration::from_millis(1)),
                        Err(_) => epoll_timeout(wait),
                    }
                }
                _ => epoll_timeout(wait),
            };
            let polled = napper.wait(&mut events, timeout, wait, sched.on_sockets > 0, |e, t| {
                SCHED.with(|s| {
                    let mut s = s.borrow_mut();
                    s.as_mut().expect("scheduler state").poll.poll(e, t)
                })
            });
            match polled {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => panic!("epoll_wait failed: {e}"),
            }
            sched.lateness.woke();
            if events.iter().any(|e| e.token() == ALARM) {
                alarm.fired();
            }
            sched.wake(&events);
        }
        SCHED.with(|s| *s.borrow_mut() = None);
        clock::forget();
        sched.done
    }

    /// A fiber for each job, all ready.
    fn spawn(jobs: Vec<(usize, Job<'a, T>)>) -> Scheduler<T> {
        let mut index = Vec::with_capacity(jobs.len());
        let mut slots: Vec<Option<Slot<T>>> = Vec::with_capacity(jobs.len());
        for (i, job) in jobs {
            let yielder = std::rc::Rc::new(Cell::new(std::ptr::null()));
            let mine = yielder.clone();
            let body = move |y: &Yielder<Wake, Why>, _: Wake| {
                mine.set(y as *const _);
                CURRENT.with(|c| c.set(y as *const _));
                catch_unwind(AssertUnwindSafe(job))
            };
            let stack = DefaultStack::new(STACK_BYTES).expect("reserving a fiber's stack");
            // SAFETY: every fiber is driven to its end or dropped (its stack unwound) before
            // `run` returns, and `join_all` returns only after `run` has: what the jobs borrow
            // outlives them, as with `std::thread::scope`.
            let co = unsafe { Coroutine::with_stack_unchecked(stack, body) };
            index.push(i);
            slots.push(Some(Slot {
                co,
                yielder,
                wake: Wake::Ready,
                wait_seq: 0,
                waiting_on: None,
                waiting_ring: false,
            }));
        }
        Scheduler {
            index,
            done: Vec::with_capacity(slots.len()),
            ready: (0..slots.len()).collect(),
            live: slots.len(),
            slots,
            parked: Vec::new(),
            timers: BinaryHeap::new(),
            lateness: crate::timer::Lateness::default(),
            on_sockets: 0,
        }
    }

    /// Resumes each fiber ready now until it returns or waits again. One made ready meanwhile
    /// (a yield) runs after the poller has looked: a fiber that only yields must not keep those
    /// waiting on a socket, a timer or the waker from being woken.
    fn resume_ready(&mut self) {
        for _ in 0..self.ready.len() {
            let Some(f) = self.ready.pop_front() else {
                break;
            };
            let Some(slot) = self.slots[f].as_mut() else {
                continue;
            };
            let wake = slot.wake;
            clock::before_resume();
            CURRENT.with(|c| c.set(slot.yielder.get()));
            RUNNING.with(|r| r.set(f));
            let r = slot.co.resume(wake);
            CURRENT.with(|c| c.set(std::ptr::null()));
            RUNNING.with(|r| r.set(usize::MAX));
            match r {
                CoroutineResult::Return(r) => {
                    self.done.push((self.index[f], r));
                    self.slots[f] = None;
                    self.live -= 1;
                }
                CoroutineResult::Yield(why) => {
                    slot.wake = Wake::Ready;
                    slot.wait_seq += 1;
                    match why {
                        Why::Yield => self.ready.push_back(f),
                        Why::Sleep(t) => self.timers.push(std::cmp::Reverse((t, slot.wait_seq, f))),
                        Why::Park => self.parked.push(f),
                        Why::Io { reg, deadline } => {
                            slot.waiting_on = Some(reg);
                            self.on_sockets += 1;
                            if let Some(t) = deadline {
                                self.timers.push(std::cmp::Reverse((t, slot.wait_seq, f)));
                            }
                        }
                        Why::Ring { deadline } => {
                            slot.waiting_ring = true;
                            if let Some(t) = deadline {
                                self.timers.push(std::cmp::Reverse((t, slot.wait_seq, f)));
                            }
                        }
                    }
                    self.forget_stale_timers();
                }
            }
        }
    }

    /// Drops the timers of waits that have ended, once they outnumber the fibers. A socket's
    /// wait carries a deadline (a read's 30 s) that stays in the heap when the reply comes
    /// first; kept until it passed, they held every wait of the last 30 s — each popped with a
    /// walk down a heap of megabytes — and a 60 s run cost 1.2x the generator's CPU per
    /// transaction of a 20 s one (sql select-only, 8 clients, 2026-11-29). A wait's timer is
    /// live while its fiber's `wait_seq` is the one it was pushed with.
    fn forget_stale_timers(&mut self) {
        #[cfg(test)]
        MOST_TIMERS.with(|m| m.set(m.get().max(self.timers.len())));
        if self.timers.len() <= 2 * self.slots.len() + 64 {
            return;
        }
        let slots = &self.slots;
        self.timers.retain(|std::cmp::Reverse((_, seq, f))| {
            slots[*f].as_ref().is_some_and(|s| s.wait_seq == *seq)
        });
    }

    /// How long the scheduler may wait: not at all with a fiber ready; until the next deadline;
    /// else until an event.
    fn timeout(&self) -> Option<Duration> {
        match self.timers.peek() {
            _ if !self.ready.is_empty() => Some(Duration::ZERO),
            Some(std::cmp::Reverse((t, _, _))) => Some(t.saturating_duration_since(Instant::now())),
            None => None,
        }
    }

    /// Readies the fibers `events` and the timers due wake: a socket's waiter once it is ready
    /// for what it waits for, a parked fiber at the waker, a deadline passed.
    fn wake(&mut self, events: &Events) {
        SCHED.with(|s| {
            let mut s = s.borrow_mut();
            let s = s.as_mut().expect("scheduler state");
            for ev in events.iter() {
                if ev.token() == WAKER {
                    self.ready.extend(self.parked.drain(..));
                    continue;
                }
                let Some(reg) = s.regs.get_mut(ev.token().0) else {
                    continue;
                };
                // An error or hang-up makes both directions "ready": the next call sees it.
                let broken = ev.is_error() || ev.is_read_closed() || ev.is_write_closed();
                reg.readable |= ev.is_readable() || broken;
                reg.writable |= ev.is_writable() || broken;
                // Not an error alone: on a datagram socket one is not the end (a TCP reset
                // comes with a hang-up).
                reg.read_closed |= ev.is_read_closed();
                reg.write_closed |= ev.is_write_closed();
                if let Some((f, wants_read)) = reg.waiter
                    && (if wants_read {
                        reg.readable
                    } else {
                        reg.writable
                    })
                {
                    reg.waiter = None;
                    if let Some(slot) = self.slots[f].as_mut() {
                        slot.waiting_on = None;
                        self.on_sockets -= 1;
                        self.ready.push_back(f);
                    }
                }
            }
            self.timers_due(&mut s.regs);
        });
    }

    /// Readies the fibers whose deadline has passed (a socket wait's ends timed out). It reads
    /// the clock for the coarse one ([`clock::look`]): every wait, on each backend, is followed
    /// by a call of this, so the coarse clock lags by no more than what fibers ran since.
    fn timers_due(&mut self, regs: &mut [Reg]) {
        let now = clock::look();
        while let Some(std::cmp::Reverse((t, seq, f))) = self.timers.peek().copied() {
            if t > now {
                break;
            }
            self.timers.pop();
            let Some(slot) = self.slots[f].as_mut() else {
                continue;
            };
            if slot.wait_seq != seq {
                continue;
            }
            if let Some(reg) = slot.waiting_on.take() {
                // Still waiting on its socket: the deadline passed.
                self.on_sockets -= 1;
                if let Some(r) = regs.get_mut(reg) {
                    r.waiter = None;
                }
                slot.wake = Wake::TimedOut;
                self.ready.push_back(f);
            } else if slot.waiting_ring {
                // Its completion has not come: the deadline passed.
                slot.waiting_ring = false;
                slot.wake = Wake::TimedOut;
                self.ready.push_back(f);
            } else if !self.ready.contains(&f) {
                self.ready.push_back(f);
            }
        }
    }
}

/// Drops the thread's scheduler ring when dropped.
struct RingFirst;

impl Drop for RingFirst {
    fn drop(&mut self) {
        SCHED.with(|s| {
            if let Ok(mut s) = s.try_borrow_mut()
                && let Some(s) = s.as_mut()
            {
                s.ring = None;
            }
        });
    }
}

#[cfg(test)]
mod tests;
