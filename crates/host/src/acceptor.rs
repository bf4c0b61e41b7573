//! The accepting thread every server here runs: it blocks in `accept(2)` on its listener until
//! told to stop. Stopping sets the shared flag, then wakes the blocked `accept` with a connection
//! of its own (which the loop sees, checks the flag, and drops), then joins the thread.

use std::io;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

/// A thread running `accept` over a listener, with the flag that stops it.
pub struct Acceptor {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Acceptor {
    /// Runs `accept(listener)` on a thread named `name`; it must return soon after `stop` is
    /// set and a connection arrives.
    pub fn spawn(
        name: &str,
        listener: TcpListener,
        stop: Arc<AtomicBool>,
        accept: impl FnOnce(TcpListener) + Send + 'static,
    ) -> io::Result<Acceptor> {
        let addr = listener.local_addr()?;
        let thread = std::thread::Builder::new()
            .name(name.into())
            .spawn(move || accept(listener))?;
        Ok(Acceptor {
            addr,
            stop,
            thread: Some(thread),
        })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops accepting and waits for the thread to end.
    pub fn stop(&mut self) {
        if !self.stop.swap(true, Ordering::SeqCst) {
            let _ = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1));
        }
        self.join();
    }

    /// Waits for the thread to end (it ends when stopped from elsewhere).
    pub fn join(&mut self) {
        if let Some(h) = self.thread.take() {
            let _ = h.join();
        }
    }
}
