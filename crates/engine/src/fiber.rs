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

/// Each fiber's stack, reserved (not touched) up front: pages are committed as the client's
/// code uses them, so the resident cost is what it really needs (tens of KiB), and a deep
/// driver call or a panic's unwinding still has room.
pub const STACK_BYTES: usize = 1024 * 1024;

/// Events taken from `epoll_wait` per call: enough for every socket of a thread's clients to
/// report at once in the common case; more wait for the next call.
const EVENTS: usize = 1024;

/// The last stretch of a timer is not slept through (`epoll_wait` sleeps in whole
/// milliseconds, rounded up): the scheduler polls without sleeping until it is due, as the
/// clock's pacer spins its last 200 µs.
const SPIN_BELOW: Duration = Duration::from_millis(1);

/// The token of the scheduler's waker (another thread released a barrier).
const WAKER: Token = Token(usize::MAX);

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

/// Runs every job as a fiber, spread evenly over `threads` threads (at most one per job), and
/// returns their results in the jobs' order. Returns when all have ended, like
/// `std::thread::scope`; a job that panics is its own `Err`.
pub fn join_all<'a, T: Send + 'a>(
    threads: usize,
    jobs: Vec<Job<'a, T>>,
) -> Vec<std::thread::Result<T>> {
    let n = jobs.len();
    if n == 0 {
        return Vec::new();
    }
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
                    .spawn_scoped(s, move || Scheduler::run(share))
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
}

/// What woke a fiber.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Wake {
    Ready,
    TimedOut,
}

type Fib<T> = Coroutine<Wake, Why, std::thread::Result<T>, DefaultStack>;

thread_local! {
    /// The yielder of the fiber running on this thread; null outside a fiber.
    static CURRENT: Cell<*const Yielder<Wake, Why>> = const { Cell::new(std::ptr::null()) };
    /// This thread's scheduler state, while it runs one.
    static SCHED: RefCell<Option<Shared>> = const { RefCell::new(None) };
}

fn suspend(why: Why) -> Wake {
    let y = CURRENT.with(|c| c.get());
    assert!(!y.is_null(), "suspend outside a fiber");
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
}

/// A socket registered with this thread's poller.
#[derive(Default)]
struct Reg {
    readable: bool,
    writable: bool,
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
}

struct Scheduler;

impl Scheduler {
    fn run<'a, T: Send + 'a>(
        jobs: Vec<(usize, Job<'a, T>)>,
    ) -> Vec<(usize, std::thread::Result<T>)> {
        let poll = Poll::new().expect("creating an epoll instance");
        let waker = Arc::new(Waker::new(poll.registry(), WAKER).expect("creating a waker"));
        SCHED.with(|s| {
            *s.borrow_mut() = Some(Shared {
                id: NEXT_SCHED.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
                poll,
                regs: Vec::new(),
                waker,
            })
        });
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
            // SAFETY: every fiber is driven to its end or dropped (its stack unwound) before this
            // function returns, and `join_all` returns only after this function has: what the
            // jobs borrow outlives them, as with `std::thread::scope`.
            let co = unsafe { Coroutine::with_stack_unchecked(stack, body) };
            index.push(i);
            slots.push(Some(Slot {
                co,
                yielder,
                wake: Wake::Ready,
                wait_seq: 0,
                waiting_on: None,
            }));
        }
        let mut done = Vec::with_capacity(slots.len());
        let mut ready: VecDeque<usize> = (0..slots.len()).collect();
        let mut parked: Vec<usize> = Vec::new();
        // (deadline, seq, fiber), soonest first.
        let mut timers: BinaryHeap<std::cmp::Reverse<(Instant, u64, usize)>> = BinaryHeap::new();
        let mut events = Events::with_capacity(EVENTS);
        let mut live = slots.len();
        while live > 0 {
            while let Some(f) = ready.pop_front() {
                let Some(slot) = slots[f].as_mut() else {
                    continue;
                };
                let wake = slot.wake;
                CURRENT.with(|c| c.set(slot.yielder.get()));
                RUNNING.with(|r| r.set(f));
                let r = slot.co.resume(wake);
                CURRENT.with(|c| c.set(std::ptr::null()));
                RUNNING.with(|r| r.set(usize::MAX));
                match r {
                    CoroutineResult::Return(r) => {
                        done.push((index[f], r));
                        slots[f] = None;
                        live -= 1;
                    }
                    CoroutineResult::Yield(why) => {
                        slot.wake = Wake::Ready;
                        slot.wait_seq += 1;
                        match why {
                            Why::Yield => ready.push_back(f),
                            Why::Sleep(t) => timers.push(std::cmp::Reverse((t, slot.wait_seq, f))),
                            Why::Park => parked.push(f),
                            Why::Io { reg, deadline } => {
                                slot.waiting_on = Some(reg);
                                if let Some(t) = deadline {
                                    timers.push(std::cmp::Reverse((t, slot.wait_seq, f)));
                                }
                            }
                        }
                    }
                }
            }
            if live == 0 {
                break;
            }
            let now = Instant::now();
            let timeout = match timers.peek() {
                _ if !ready.is_empty() => Some(Duration::ZERO),
                // Sleep whole milliseconds short of the deadline (epoll's unit: it never
                // wakes late by a rounding), then poll without sleeping until it is due.
                Some(std::cmp::Reverse((t, _, _))) => {
                    let left = t.saturating_duration_since(now);
                    Some(Duration::from_millis(
                        left.saturating_sub(SPIN_BELOW).as_millis() as u64,
                    ))
                }
                None => None,
            };
            let polled = SCHED.with(|s| {
                let mut s = s.borrow_mut();
                let s = s.as_mut().expect("scheduler state");
                s.poll.poll(&mut events, timeout)
            });
            match polled {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => panic!("epoll_wait failed: {e}"),
            }
            SCHED.with(|s| {
                let mut s = s.borrow_mut();
                let s = s.as_mut().expect("scheduler state");
                for ev in events.iter() {
                    if ev.token() == WAKER {
                        ready.extend(parked.drain(..));
                        continue;
                    }
                    let Some(reg) = s.regs.get_mut(ev.token().0) else {
                        continue;
                    };
                    // An error or hang-up makes both directions "ready": the next call sees it.
                    let broken = ev.is_error() || ev.is_read_closed() || ev.is_write_closed();
                    reg.readable |= ev.is_readable() || broken;
                    reg.writable |= ev.is_writable() || broken;
                    if let Some((f, wants_read)) = reg.waiter
                        && (if wants_read {
                            reg.readable
                        } else {
                            reg.writable
                        })
                    {
                        reg.waiter = None;
                        if let Some(slot) = slots[f].as_mut() {
                            slot.waiting_on = None;
                            ready.push_back(f);
                        }
                    }
                }
                let now = Instant::now();
                while let Some(std::cmp::Reverse((t, seq, f))) = timers.peek().copied() {
                    if t > now {
                        break;
                    }
                    timers.pop();
                    let Some(slot) = slots[f].as_mut() else {
                        continue;
                    };
                    if slot.wait_seq != seq {
                        continue;
                    }
                    if let Some(reg) = slot.waiting_on.take() {
                        // Still waiting on its socket: the deadline passed.
                        if let Some(r) = s.regs.get_mut(reg) {
                            r.waiter = None;
                        }
                        slot.wake = Wake::TimedOut;
                        ready.push_back(f);
                    } else if !ready.contains(&f) {
                        ready.push_back(f);
                    }
                }
            });
        }
        SCHED.with(|s| *s.borrow_mut() = None);
        done
    }
}

/// A TCP connection a driver reads and writes as a blocking stream; on a fiber, waiting yields.
///
/// The socket is non-blocking. On a fiber, it is registered with the fiber's scheduler the
/// first time it waits there (once per scheduler; edge-triggered), and a read that finds no
/// data parks the fiber until the poller says the socket is readable: one `recv` per reply in
/// the common case, with no `EAGAIN` try first. Outside a fiber, a wait is a `poll(2)`.
#[derive(Debug)]
pub struct Stream {
    sock: TcpStream,
    read_timeout: Option<Duration>,
    write_timeout: Option<Duration>,
    /// Its registration with the schedulers that wait on it.
    waiter: Waiter,
    /// Whether the last read drained the socket (the next one waits for the poller first).
    drained: Cell<bool>,
}

impl Stream {
    /// Connects (blocking the thread for at most `timeout`: a loopback connect answers at once).
    pub fn connect(addr: &SocketAddr, timeout: Duration) -> io::Result<Stream> {
        let sock = TcpStream::connect_timeout(addr, timeout)?;
        Stream::from_std(sock)
    }

    /// Wraps a connected socket (made non-blocking).
    pub fn from_std(sock: TcpStream) -> io::Result<Stream> {
        sock.set_nonblocking(true)?;
        Ok(Stream {
            waiter: Waiter::new(sock.as_raw_fd()),
            sock,
            read_timeout: None,
            write_timeout: None,
            drained: Cell::new(false),
        })
    }

    pub fn set_read_timeout(&mut self, d: Option<Duration>) {
        self.read_timeout = d;
    }

    pub fn set_write_timeout(&mut self, d: Option<Duration>) {
        self.write_timeout = d;
    }

    pub fn set_nodelay(&self, on: bool) -> io::Result<()> {
        self.sock.set_nodelay(on)
    }

    pub fn get_ref(&self) -> &TcpStream {
        &self.sock
    }

    pub fn peer_addr(&self) -> io::Result<SocketAddr> {
        self.sock.peer_addr()
    }

    pub fn shutdown(&self, how: std::net::Shutdown) -> io::Result<()> {
        self.sock.shutdown(how)
    }

    /// A second handle on the same socket (its own readiness state), for a reader and a
    /// writer kept apart. Both must be used by the same fiber.
    pub fn try_clone(&self) -> io::Result<Stream> {
        let sock = self.sock.try_clone()?;
        Ok(Stream {
            waiter: Waiter::new(sock.as_raw_fd()),
            sock,
            read_timeout: self.read_timeout,
            write_timeout: self.write_timeout,
            drained: Cell::new(false),
        })
    }

    /// Waits until the socket is readable (`read`) or writable, or `timeout` passes, after a
    /// call on it (through this handle or another on the same socket) found it not ready: for
    /// a client library that reads and writes the socket itself, without waiting, and asks
    /// dyno to wait when it cannot go on (a future that is pending).
    pub fn wait_ready(&self, read: bool, timeout: Option<Duration>) -> io::Result<()> {
        self.not_ready(read);
        self.drained.set(false);
        self.wait(read, timeout)
    }

    /// Waits until the socket is readable (`read`) or writable, or the timeout passes.
    fn wait(&self, read: bool, timeout: Option<Duration>) -> io::Result<()> {
        self.waiter.wait(read, timeout)
    }

    /// Marks the socket as not ready in one direction (a call found it so).
    fn not_ready(&self, read: bool) {
        self.waiter.not_ready(read)
    }
}

/// A file descriptor (a socket, a pipe) that a client waits on: on a fiber, registered with its
/// thread's scheduler the first time it waits there (once per scheduler; edge-triggered, both
/// directions), its readiness kept there; outside a fiber, a wait is a `poll(2)`. The fd must be
/// non-blocking, and stay open as long as the `Waiter` is used.
#[derive(Debug)]
pub struct Waiter {
    fd: RawFd,
    /// The scheduler it is registered with and its slot there.
    reg: Cell<Option<(u64, usize)>>,
}

impl Waiter {
    pub fn new(fd: RawFd) -> Waiter {
        Waiter {
            fd,
            reg: Cell::new(None),
        }
    }

    /// Waits until the fd is readable (`read`) or writable, or the timeout passes: on a fiber
    /// the thread runs the others meanwhile.
    pub fn wait(&self, read: bool, timeout: Option<Duration>) -> io::Result<()> {
        let deadline = timeout.map(|d| Instant::now() + d);
        if in_fiber() {
            let reg = self.registration()?;
            let ready = SCHED.with(|s| {
                let mut s = s.borrow_mut();
                let s = s.as_mut().expect("scheduler state");
                let r = &mut s.regs[reg];
                let ready = if read { r.readable } else { r.writable };
                if !ready {
                    let me = current_fiber_key();
                    r.waiter = Some((me, read));
                }
                ready
            });
            if ready {
                return Ok(());
            }
            match suspend(Why::Io { reg, deadline }) {
                Wake::Ready => Ok(()),
                Wake::TimedOut => Err(timed_out()),
            }
        } else {
            poll_fd(self.fd, read, deadline)
        }
    }

    /// This stream's slot in the current scheduler, registering it there first if need be.
    fn registration(&self) -> io::Result<usize> {
        SCHED.with(|s| {
            let mut s = s.borrow_mut();
            let s = s.as_mut().expect("a fiber runs under a scheduler");
            if let Some((id, slot)) = self.reg.get()
                && id == s.id
            {
                return Ok(slot);
            }
            let slot = s.regs.len();
            s.poll.registry().register(
                &mut SourceFd(&self.fd),
                Token(slot),
                Interest::READABLE | Interest::WRITABLE,
            )?;
            // Until the poller says otherwise, assume it may be ready: the first call tries.
            s.regs.push(Reg {
                readable: true,
                writable: true,
                waiter: None,
            });
            self.reg.set(Some((s.id, slot)));
            Ok(slot)
        })
    }

    /// Marks the fd as not ready in one direction (a call found it so): the next wait in that
    /// direction waits for the poller.
    pub fn not_ready(&self, read: bool) {
        if let Some((id, slot)) = self.reg.get() {
            SCHED.with(|s| {
                if let Some(s) = s.borrow_mut().as_mut()
                    && s.id == id
                {
                    let r = &mut s.regs[slot];
                    if read {
                        r.readable = false
                    } else {
                        r.writable = false
                    }
                }
            });
        }
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        if self.drained.get() {
            self.wait(true, self.read_timeout)?;
            self.drained.set(false);
        }
        loop {
            match (&self.sock).read(buf) {
                Ok(n) => {
                    // A short read drained the socket: the next waits for the poller (each new
                    // arrival is a new edge, so nothing is missed).
                    if n < buf.len() && n > 0 {
                        self.drained.set(true);
                        self.not_ready(true);
                    }
                    return Ok(n);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    self.not_ready(true);
                    self.wait(true, self.read_timeout)?;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        loop {
            match (&self.sock).write(buf) {
                Ok(n) => return Ok(n),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    self.not_ready(false);
                    self.wait(false, self.write_timeout)?;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl AsRawFd for Stream {
    fn as_raw_fd(&self) -> RawFd {
        self.sock.as_raw_fd()
    }
}

/// Waits for a file descriptor (not on a fiber: any thread, or a source a stream does not own).
/// On a fiber, use [`wait_fd`].
fn poll_fd(fd: RawFd, read: bool, deadline: Option<Instant>) -> io::Result<()> {
    let events = if read { libc::POLLIN } else { libc::POLLOUT };
    loop {
        let ms = match deadline {
            None => -1,
            Some(t) => {
                let left = t.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    return Err(timed_out());
                }
                left.as_millis().clamp(1, i32::MAX as u128) as i32
            }
        };
        let mut p = libc::pollfd {
            fd,
            events,
            revents: 0,
        };
        // SAFETY: one valid pollfd.
        let n = unsafe { libc::poll(&mut p, 1, ms) };
        if n > 0 {
            return Ok(());
        }
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e);
            }
        }
    }
}

fn timed_out() -> io::Error {
    io::Error::new(io::ErrorKind::TimedOut, "timed out waiting for the server")
}

/// The running fiber's key in its scheduler: its yielder's address is unique while it lives,
/// but the scheduler indexes slots, so the slot is found through the thread-local table.
fn current_fiber_key() -> usize {
    RUNNING.with(|r| r.get())
}

thread_local! {
    /// The slot index of the fiber running on this thread.
    static RUNNING: Cell<usize> = const { Cell::new(usize::MAX) };
}

/// A barrier for fibers (on any threads) and plain threads alike: `n` callers of
/// [`Barrier::wait`] all return once the last has arrived. A fiber waiting yields; the last
/// arriver wakes the schedulers of the fibers waiting, and notifies the threads.
pub struct Barrier {
    n: usize,
    state: Mutex<BarrierState>,
    cv: Condvar,
}

struct BarrierState {
    count: usize,
    generation: u64,
    wakers: Vec<Arc<Waker>>,
}

impl Barrier {
    pub fn new(n: usize) -> Barrier {
        Barrier {
            n: n.max(1),
            state: Mutex::new(BarrierState {
                count: 0,
                generation: 0,
                wakers: Vec::new(),
            }),
            cv: Condvar::new(),
        }
    }

    /// Waits for the others; true for the last to arrive.
    pub fn wait(&self) -> bool {
        let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        st.count += 1;
        if st.count >= self.n {
            st.count = 0;
            st.generation += 1;
            let wakers = std::mem::take(&mut st.wakers);
            drop(st);
            self.cv.notify_all();
            for w in wakers {
                let _ = w.wake();
            }
            return true;
        }
        let generation = st.generation;
        if in_fiber() {
            let waker = SCHED.with(|s| s.borrow().as_ref().map(|s| s.waker.clone()));
            if let Some(w) = waker
                && !st.wakers.iter().any(|x| Arc::ptr_eq(x, &w))
            {
                st.wakers.push(w);
            }
            drop(st);
            // The scheduler's waker stays in `wakers` until this generation's release takes
            // it, so a wake-up for anything else only means: look again.
            loop {
                suspend(Why::Park);
                let st = self.state.lock().unwrap_or_else(|p| p.into_inner());
                if st.generation != generation {
                    return false;
                }
            }
        } else {
            while st.generation == generation {
                st = self.cv.wait(st).unwrap_or_else(|p| p.into_inner());
            }
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{BufRead, BufReader};
    use std::net::TcpListener;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn jobs_return_in_order_and_a_panic_is_its_own() {
        let r = join_all(
            2,
            (0..10)
                .map(|i| -> Job<'_, usize> {
                    Box::new(move || {
                        yield_now();
                        if i == 3 {
                            panic!("three");
                        }
                        i * 2
                    })
                })
                .collect(),
        );
        assert_eq!(r.len(), 10);
        for (i, r) in r.iter().enumerate() {
            if i == 3 {
                assert!(r.is_err());
            } else {
                assert_eq!(*r.as_ref().unwrap(), i * 2);
            }
        }
    }

    #[test]
    fn a_barrier_holds_every_fiber_until_the_last_arrives() {
        let n = 50;
        let b = Barrier::new(n);
        let arrived = AtomicUsize::new(0);
        let r = join_all(
            3,
            (0..n)
                .map(|i| -> Job<'_, usize> {
                    let (b, arrived) = (&b, &arrived);
                    Box::new(move || {
                        sleep(Duration::from_millis((i % 7) as u64));
                        arrived.fetch_add(1, Ordering::SeqCst);
                        b.wait();
                        // Everyone arrived before anyone passed.
                        let seen = arrived.load(Ordering::SeqCst);
                        b.wait();
                        seen
                    })
                })
                .collect(),
        );
        for x in r {
            assert_eq!(x.unwrap(), n);
        }
    }

    /// 200 clients on 2 threads, each with its own connection to a line echo server, each
    /// checking every reply it reads is its own.
    #[test]
    fn many_streams_per_thread_each_read_their_own_replies() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let clients = 200;
        let rounds = 20;
        let server = std::thread::spawn(move || {
            let mut handles = Vec::new();
            for _ in 0..clients {
                let (s, _) = listener.accept().unwrap();
                handles.push(std::thread::spawn(move || {
                    let mut w = s.try_clone().unwrap();
                    for line in BufReader::new(s).lines() {
                        let Ok(line) = line else { break };
                        if w.write_all(format!("{line}\n").as_bytes()).is_err() {
                            break;
                        }
                    }
                }));
            }
            for h in handles {
                h.join().unwrap();
            }
        });
        let r = join_all(
            2,
            (0..clients)
                .map(|c| -> Job<'_, usize> {
                    Box::new(move || {
                        let mut s = Stream::connect(&addr, Duration::from_secs(5)).unwrap();
                        s.set_read_timeout(Some(Duration::from_secs(10)));
                        let mut r = BufReader::new(s.try_clone().unwrap());
                        let mut ok = 0;
                        for i in 0..rounds {
                            s.write_all(format!("{c} {i}\n").as_bytes()).unwrap();
                            let mut line = String::new();
                            r.read_line(&mut line).unwrap();
                            assert_eq!(line, format!("{c} {i}\n"));
                            ok += 1;
                        }
                        ok
                    })
                })
                .collect(),
        );
        assert!(r.into_iter().all(|x| x.unwrap() == rounds));
        server.join().unwrap();
    }

    #[test]
    fn a_read_past_its_deadline_times_out_on_a_fiber_and_on_a_thread() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let hold = std::thread::spawn(move || {
            let a = listener.accept().unwrap();
            let b = listener.accept().unwrap();
            std::thread::sleep(Duration::from_millis(500));
            drop((a, b));
        });
        let read = move || {
            let mut s = Stream::connect(&addr, Duration::from_secs(1)).unwrap();
            s.set_read_timeout(Some(Duration::from_millis(50)));
            let t = Instant::now();
            let e = s.read(&mut [0u8; 16]).unwrap_err();
            (e.kind(), t.elapsed())
        };
        let on_fiber = join_all(1, vec![Box::new(read) as Job<'_, _>])
            .pop()
            .unwrap()
            .unwrap();
        let on_thread = read();
        for (kind, took) in [on_fiber, on_thread] {
            assert_eq!(kind, io::ErrorKind::TimedOut);
            assert!(
                took >= Duration::from_millis(50) && took < Duration::from_millis(450),
                "{took:?}"
            );
        }
        hold.join().unwrap();
    }
}
