//! [`Barrier`]: where fibers (on any threads) and plain threads meet.

use super::*;

/// A barrier for fibers (on any threads) and plain threads alike: `n` callers of
/// [`Barrier::wait`] all return once the last has arrived. A fiber waiting yields; the last
/// arriver wakes the schedulers of the fibers waiting, and notifies the threads. Opened
/// ([`Barrier::open`]), it lets everyone through, now and after.
pub struct Barrier {
    n: usize,
    state: Mutex<BarrierState>,
    cv: Condvar,
}

pub(super) struct BarrierState {
    count: usize,
    generation: u64,
    pub(super) open: bool,
    wakers: Vec<Arc<Waker>>,
}

impl Barrier {
    pub fn new(n: usize) -> Barrier {
        Barrier {
            n: n.max(1),
            state: Mutex::new(BarrierState {
                count: 0,
                generation: 0,
                open: false,
                wakers: Vec::new(),
            }),
            cv: Condvar::new(),
        }
    }

    pub(super) fn lock(&self) -> std::sync::MutexGuard<'_, BarrierState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Lets the waiting through: a new generation, every waiter woken.
    fn release(&self, mut st: std::sync::MutexGuard<'_, BarrierState>) {
        st.count = 0;
        st.generation += 1;
        let wakers = std::mem::take(&mut st.wakers);
        drop(st);
        self.cv.notify_all();
        for w in wakers {
            let _ = w.wake();
        }
    }

    /// Lets everyone through, those waiting and those still to come: for whoever sees that
    /// some caller will never arrive.
    pub fn open(&self) {
        let mut st = self.lock();
        st.open = true;
        self.release(st);
    }

    /// On a plain thread: opens the barrier unless its first release comes within `limit` and
    /// before `stop` is set (one of the `n` may never arrive: a generator thread that failed).
    pub fn open_unless_released(&self, limit: Duration, stop: &std::sync::atomic::AtomicBool) {
        let end = Instant::now() + limit;
        let mut st = self.lock();
        while st.generation == 0 {
            let now = Instant::now();
            if now >= end || stop.load(std::sync::atomic::Ordering::Relaxed) {
                drop(st);
                self.open();
                return;
            }
            let step = (end - now).min(Duration::from_millis(100));
            st = (self.cv.wait_timeout(st, step))
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }

    /// Waits for the others; true for the last to arrive.
    pub fn wait(&self) -> bool {
        let mut st = self.lock();
        if st.open {
            return false;
        }
        st.count += 1;
        if st.count >= self.n {
            self.release(st);
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
                if self.lock().generation != generation {
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
