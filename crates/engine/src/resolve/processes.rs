//! A target's process or cluster as written, resolved: its ports allocated, its commands filled in, where it is ready.

use super::*;

/// A member's ports: where the others reach it (`{port}`, `{peer}`), and where it listens
/// (`{listen.port}`, `{listen.peer}`: the same two unless a link stands in front of it).
pub(super) type Ports = [u16; 4];

/// Free ports on 127.0.0.1 for each member, by name (names checked: valid, once each): its own
/// (`{port}`) and a second for its peers (`{peer}`, e.g. etcd's Raft port); behind a link
/// (`link = true`, helpers excepted), two more it listens on, the link taking the first two. A
/// port is free when it is allocated (all of them held open together, so no two are the
/// same); the members and links bind them moments later.
pub(super) fn allocate_ports(p: &RawProcess) -> Result<BTreeMap<String, Ports>, PlanError> {
    let linked = p.link.as_ref().is_some_and(|l| l.value);
    let mut ports = BTreeMap::new();
    let mut held = Vec::new();
    for m in &p.members {
        if !valid_name(&m.name.value) {
            return Err(PlanError::new(
                m.name.at.clone(),
                format!("member name {:?} is not allowed", m.name.value),
            )
            .hint("use up to 64 letters, digits, '_', '-' or '.'"));
        }
        let mut free = || {
            let l = std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| {
                PlanError::new(m.at.clone(), format!("no free port on 127.0.0.1: {e}"))
            })?;
            let port = l
                .local_addr()
                .map_err(|e| PlanError::new(m.at.clone(), e.to_string()))?
                .port();
            held.push(l);
            Ok::<u16, PlanError>(port)
        };
        let (port, peer) = (free()?, free()?);
        let aux = m.aux.as_ref().is_some_and(|a| a.value);
        let own = if linked && !aux {
            [port, peer, free()?, free()?]
        } else {
            [port, peer, port, peer]
        };
        if ports.insert(m.name.value.clone(), own).is_some() {
            return Err(PlanError::new(
                m.name.at.clone(),
                format!("member {:?} is named twice", m.name.value),
            ));
        }
    }
    Ok(ports)
}

/// `text` with `{port}`, `{peer}`, `{listen.port}` and `{listen.peer}` (the member's own, when
/// it has them), `{port.NAME}` and `{peer.NAME}` filled in; `{dir}` and `{file}` are left for
/// when the member starts.
pub(super) fn fill(
    text: &Sp<String>,
    own: Option<Ports>,
    ports: &BTreeMap<String, Ports>,
) -> Result<String, PlanError> {
    let mut out = String::new();
    let mut rest = text.value.as_str();
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let Some(close) = rest[open..].find('}') else {
            out.push_str(&rest[open..]);
            rest = "";
            break;
        };
        let key = &rest[open + 1..open + close];
        // Braces around anything but a name (awk's `{ print $1 }`, a shell's `${x}`) are the
        // command's own.
        let name_like = !key.is_empty()
            && (key.bytes()).all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'));
        if !name_like || rest[..open].ends_with('$') {
            out.push_str(&rest[open..open + close + 1]);
            rest = &rest[open + close + 1..];
            continue;
        }
        let bad = |why: String| {
            PlanError::new(text.at.clone(), why).hint(format!(
                "write {{port}}, {{peer}}, {{listen.port}}, {{listen.peer}}, {{port.NAME}}, {{peer.NAME}} (members: {}), {{dir}} or {{file}}",
                ports.keys().cloned().collect::<Vec<_>>().join(", ")
            ))
        };
        let slot = match key {
            "port" => Some(0),
            "peer" => Some(1),
            "listen.port" => Some(2),
            "listen.peer" => Some(3),
            _ => None,
        };
        match (key, slot) {
            (_, Some(i)) => match own {
                Some(p) => out.push_str(&p[i].to_string()),
                None => {
                    return Err(bad(format!(
                        "{{{key}}} names a member's own port; here, name the member: {{port.NAME}}"
                    )));
                }
            },
            ("dir" | "file", _) => out.push_str(&rest[open..open + close + 1]),
            (k, None) => {
                let port = match k.split_once('.') {
                    Some(("port", n)) => ports.get(n).map(|p| p[0]),
                    Some(("peer", n)) => ports.get(n).map(|p| p[1]),
                    _ => None,
                };
                match port {
                    Some(p) => out.push_str(&p.to_string()),
                    None => return Err(bad(format!("{{{k}}} names no member's port"))),
                }
            }
        }
        rest = &rest[open + close + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// A cluster: each member's command, readiness (its own port unless said) and file, with the
/// ports filled in.
pub(super) fn resolve_members(
    p: &RawProcess,
    ports: &BTreeMap<String, Ports>,
) -> Result<ProcessSpec, PlanError> {
    let at = p.at.clone().unwrap_or(Origin::Default);
    if p.cmd.is_some() || p.pid.is_some() || p.name.is_some() || p.ready.is_some() {
        return Err(PlanError::new(
            at,
            "a target's process is one `cmd`, or `members`, not both",
        )
        .hint("give each member its own cmd (and ready) under [[targets.NAME.process.members]]"));
    }
    let mut members = Vec::new();
    for m in &p.members {
        let own = ports[&m.name.value];
        let linked = own[2] != own[0];
        if m.cmd.value.trim().is_empty() {
            return Err(PlanError::new(m.cmd.at.clone(), "cmd is empty"));
        }
        // Behind a link, the member listens where the link sends it, never on the link's port.
        let listens = |t: &Option<Sp<String>>| {
            t.as_ref()
                .is_some_and(|t| t.value.contains("{listen.port}"))
        };
        if linked && !listens(&Some(m.cmd.clone())) && !listens(&m.file) {
            return Err(PlanError::new(
                m.cmd.at.clone(),
                format!("member {} is behind a link (link = true) but does not listen on {{listen.port}}", m.name.value),
            )
            .hint("bind {listen.port} (and {listen.peer}) and announce {port} (and {peer}), e.g. redis-server --port {listen.port} --replica-announce-port {port}; or mark a helper aux = true"));
        }
        let ready = match &m.ready {
            None => std::net::SocketAddr::from(([127, 0, 0, 1], own[2])),
            Some(r) => {
                let text = fill(r, Some(own), ports)?;
                ready_addr(&Sp::new(text, r.at.clone()))?
            }
        };
        members.push(MemberSpec {
            name: m.name.value.clone(),
            port: own[0],
            peer: own[1],
            listen: linked.then_some([own[2], own[3]]),
            aux: m.aux.as_ref().is_some_and(|a| a.value),
            cmd: fill(&m.cmd, Some(own), ports)?,
            ready,
            file: m
                .file
                .as_ref()
                .map(|f| fill(f, Some(own), ports))
                .transpose()?,
        });
    }
    if p.link.as_ref().is_some_and(|l| l.value) && members.iter().all(|m| m.listen.is_none()) {
        return Err(PlanError::new(
            p.link.as_ref().map_or(at, |l| l.at.clone()),
            "link = true, but every member is a helper (aux): no link to place",
        )
        .hint("the links stand in front of the members that hold the data"));
    }
    let role = p.role.as_ref().map(|r| fill(r, None, ports)).transpose()?;
    Ok(ProcessSpec::Members {
        members,
        ready_timeout: ready_timeout(p)?,
        role,
    })
}

/// `tcp:IP:PORT`: dyno connects until it accepts.
pub(super) fn ready_addr(ready: &Sp<String>) -> Result<std::net::SocketAddr, PlanError> {
    (ready.value.strip_prefix("tcp:"))
        .and_then(|a| a.parse::<std::net::SocketAddr>().ok())
        .ok_or_else(|| {
            PlanError::new(
                ready.at.clone(),
                format!("{:?} is not a readiness check", ready.value),
            )
            .hint("write tcp:IP:PORT, e.g. tcp:127.0.0.1:6379 (dyno connects until it accepts)")
        })
}
/// How long a started process may take to accept connections.
pub(super) fn ready_timeout(p: &RawProcess) -> Result<std::time::Duration, PlanError> {
    match &p.ready_timeout {
        None => Ok(DEFAULT_READY_TIMEOUT),
        Some(t) => crate::units::parse_duration(&t.value)
            .ok()
            .filter(|d| !d.is_zero())
            .ok_or_else(|| {
                PlanError::new(t.at.clone(), format!("{:?} is not a duration", t.value))
                    .hint("write e.g. \"30s\"")
            }),
    }
}

pub fn resolve_process(p: &RawProcess) -> Result<ProcessSpec, PlanError> {
    let at = p.at.clone().unwrap_or(Origin::Arg(0));
    if let Some(r) = &p.role {
        return Err(
            PlanError::new(r.at.clone(), "a role query is a cluster's (members)")
                .hint("move the process into [[targets.NAME.process.members]], or drop role"),
        );
    }
    let given = [p.cmd.is_some(), p.pid.is_some(), p.name.is_some()];
    if given.iter().filter(|&&g| g).count() != 1 {
        return Err(PlanError::new(
            at,
            "a target's process needs exactly one of `cmd` (dyno starts it), `pid` or `name`",
        )
        .hint("e.g. cmd = \"redis-server --port 6379\" with ready = \"tcp:127.0.0.1:6379\""));
    }
    if let Some(pid) = &p.pid {
        return match u32::try_from(pid.value) {
            Ok(v) if v > 0 => Ok(ProcessSpec::Pid(v)),
            _ => Err(PlanError::new(
                pid.at.clone(),
                "pid must be a positive process id",
            )),
        };
    }
    if let Some(name) = &p.name {
        if name.value.is_empty() || name.value.contains('/') {
            return Err(
                PlanError::new(name.at.clone(), "name must be a process name")
                    .hint("the name as `ps -e` shows it, e.g. redis-server"),
            );
        }
        return Ok(ProcessSpec::Name(name.value.clone()));
    }
    let cmd = p.cmd.as_ref().expect("one of the three is given");
    if cmd.value.trim().is_empty() {
        return Err(PlanError::new(cmd.at.clone(), "cmd is empty"));
    }
    for (k, v) in [("ready", &p.ready), ("ready_timeout", &p.ready_timeout)] {
        if v.is_some() && p.cmd.is_none() {
            return Err(PlanError::new(
                at.clone(),
                format!("`{k}` is for a process dyno starts (with `cmd`)"),
            ));
        }
    }
    let Some(ready) = &p.ready else {
        return Err(PlanError::new(
            cmd.at.clone(),
            "a process dyno starts needs `ready`: the address it accepts connections on",
        )
        .hint("add e.g. ready = \"tcp:127.0.0.1:6379\""));
    };
    let addr = ready_addr(ready)?;
    let ready_timeout = ready_timeout(p)?;
    Ok(ProcessSpec::Start {
        cmd: cmd.value.clone(),
        ready: addr,
        ready_timeout,
    })
}
