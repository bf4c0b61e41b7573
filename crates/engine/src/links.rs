//! The links in front of a cluster's members (`link = true`): each member (helpers excepted)
//! listens on `{listen.port}` and `{listen.peer}`, and dyno's link emulator listens on the
//! member's `{port}` and `{peer}`, where the others — clients, the other members, helpers —
//! reach it. Each member has a gate on both its links; the `partition` and `slow` faults throw
//! it.
//!
//! A partition cuts a member off both ways: the connections the others make to it pass its own
//! links, and the connections it makes to the others pass theirs, so each link asks who made a
//! connection it accepts. On loopback every connection comes from 127.0.0.1, so the address
//! cannot say; the kernel can: the connecting socket (the accepted connection's peer port, the
//! link's port) is found in `/proc/net/tcp`, and its inode among the members' open files
//! (`/proc/PID/fd`). Asked on the connection's own thread when it is accepted and, until named,
//! again when any gate of the cluster changes: a member connects while it starts, before dyno
//! knows its PID.

use crate::plan::MemberSpec;
use host::link::{Gate, Link, LinkSpec, Origin};
use std::collections::BTreeMap;
use std::net::{SocketAddr, TcpListener};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A cluster's links and gates.
pub struct Links {
    /// Kept to keep them running; dropped (stopped) with the stage.
    _links: Vec<Link>,
    /// Each linked member's gate, by `TARGET/MEMBER`.
    pub gates: BTreeMap<String, Arc<Gate>>,
    /// The linked members' PIDs now, to name whoever made a connection.
    pids: Arc<Mutex<BTreeMap<u32, Arc<Gate>>>>,
}

impl Links {
    /// Starts a plain link in front of each of `target`'s linked members' two ports; the
    /// members start after (they reach each other through the links).
    pub fn start(target: &str, members: &[MemberSpec]) -> Result<Links, String> {
        let pids: Arc<Mutex<BTreeMap<u32, Arc<Gate>>>> = Arc::default();
        let known = pids.clone();
        let origin: Origin = Arc::new(move |peer, here| {
            let pids: Vec<(u32, Arc<Gate>)> = (known.lock().ok())?
                .iter()
                .map(|(p, g)| (*p, g.clone()))
                .collect();
            let pid = maker(peer, here, pids.iter().map(|(p, _)| *p))?;
            pids.into_iter().find(|(p, _)| *p == pid).map(|(_, g)| g)
        });
        let plain = LinkSpec {
            delay: Duration::ZERO,
            jitter: Duration::ZERO,
            rate_bits_per_s: None,
            seed: 1,
        };
        let mut links = Vec::new();
        let mut gates = BTreeMap::new();
        let group = Arc::default();
        for m in members {
            let Some(listen) = m.listen else { continue };
            let gate = Arc::new(Gate::in_group(Arc::clone(&group)));
            for (front, back) in [(m.port, listen[0]), (m.peer, listen[1])] {
                let listener = TcpListener::bind(("127.0.0.1", front)).map_err(|e| {
                    format!(
                        "member {}: its link cannot listen on 127.0.0.1:{front}: {e}",
                        m.name
                    )
                })?;
                let to = SocketAddr::from(([127, 0, 0, 1], back));
                let link = Link::start_gated(
                    listener,
                    to,
                    plain,
                    Some(gate.clone()),
                    Some(origin.clone()),
                )
                .map_err(|e| format!("member {}: starting its link: {e}", m.name))?;
                links.push(link);
            }
            gates.insert(format!("{target}/{}", m.name), gate);
        }
        Ok(Links {
            _links: links,
            gates,
            pids,
        })
    }

    /// `key`'s member runs as `pid` (started, or started again).
    pub fn started(&self, key: &str, pid: u32) {
        if let (Some(g), Ok(mut pids)) = (self.gates.get(key), self.pids.lock()) {
            pids.insert(pid, g.clone());
        }
    }

    /// A member started again: `old`'s gate is `new`'s.
    pub fn follow(&self, old: u32, new: u32) {
        if let Ok(mut pids) = self.pids.lock()
            && let Some(g) = pids.remove(&old)
        {
            pids.insert(new, g);
        }
    }
}

/// Which of `pids` holds the socket that connected from `peer` to `here` (a loopback
/// connection seen from its accepting end), from `/proc/net/tcp{,6}` and `/proc/PID/fd`.
pub fn maker(peer: SocketAddr, here: SocketAddr, pids: impl Iterator<Item = u32>) -> Option<u32> {
    let inode = ["/proc/net/tcp", "/proc/net/tcp6"]
        .iter()
        .filter_map(|f| std::fs::read_to_string(f).ok())
        .find_map(|table| socket_inode(&table, peer.port(), here.port()))?;
    let wanted = format!("socket:[{inode}]");
    pids.into_iter().find(|pid| {
        std::fs::read_dir(format!("/proc/{pid}/fd")).is_ok_and(|fds| {
            fds.flatten().any(|fd| {
                std::fs::read_link(fd.path()).is_ok_and(|l| l.as_os_str() == wanted.as_str())
            })
        })
    })
}

/// The inode of the socket in a `/proc/net/tcp` table whose local port is `local` and remote
/// port `remote`.
fn socket_inode(table: &str, local: u16, remote: u16) -> Option<u64> {
    let port =
        |addr: &str| (addr.rsplit_once(':')).and_then(|(_, p)| u16::from_str_radix(p, 16).ok());
    table.lines().skip(1).find_map(|line| {
        let f: Vec<&str> = line.split_whitespace().collect();
        // sl local rem st tx:rx tr:when retrnsmt uid timeout inode
        (f.len() > 9 && port(f[1]) == Some(local) && port(f[2]) == Some(remote))
            .then(|| f[9].parse().ok())
            .flatten()
            .filter(|&i| i != 0)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_socket_is_found_by_its_two_ports() {
        let table = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n\
   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1111 1 0 100 0 0 10 0\n\
   1: 0100007F:C350 0100007F:1F90 01 00000000:00000000 00:00000000 00000000     0        0 2222 1 0 20 4 30 10 -1\n";
        assert_eq!(socket_inode(table, 0xC350, 0x1F90), Some(2222));
        assert_eq!(socket_inode(table, 0x1F90, 0xC350), None);
    }

    #[test]
    fn the_maker_of_a_connection_is_the_process_holding_its_socket() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let here = l.local_addr().unwrap();
        // A process of its own connects (bash's /dev/tcp) and holds the connection open.
        let mut child = std::process::Command::new("bash")
            .arg("-c")
            .arg(format!(
                "exec 3<>/dev/tcp/127.0.0.1/{}; sleep 5",
                here.port()
            ))
            .spawn()
            .unwrap();
        let (conn, peer) = l.accept().unwrap();
        let other = std::process::id();
        let found = maker(peer, here, [other, child.id()].into_iter());
        let _ = child.kill();
        let _ = child.wait();
        drop(conn);
        assert_eq!(found, Some(child.id()));
        // A connection this process made is not the child's.
        let mine = std::net::TcpStream::connect(here).unwrap();
        let (_c, peer) = l.accept().unwrap();
        assert_eq!(maker(peer, here, [child.id()].into_iter()), None);
        assert_eq!(maker(peer, here, [other].into_iter()), Some(other));
        drop(mine);
    }
}
