//! A cluster's members behind links: where each listens, how it is reached, what needs a link.

use super::{err, resolve};

/// A cluster of two members behind links (`link = true`), `cmd` each, and `faults`.
fn linked(cmd: &str, faults: &str) -> String {
    format!(
        "{faults}\n[targets.c]\nurl = \"mem:\"\n[targets.c.process]\nlink = true\n\
         [[targets.c.process.members]]\nname = \"a\"\ncmd = \"{cmd}\"\n\
         [[targets.c.process.members]]\nname = \"b\"\ncmd = \"{cmd}\"\n\
         [[targets.c.process.members]]\nname = \"s\"\naux = true\ncmd = \"sentinel {{port}} {{port.a}}\"\n"
    )
}

#[test]
fn a_linked_member_listens_behind_its_link_and_is_reached_through_it() {
    use engine::plan::ProcessSpec;
    let plan = resolve(&linked(
        "srv --listen {listen.port} --announce {port} --peers {peer.a},{peer.b} --raft {listen.peer}",
        "",
    ))
    .unwrap();
    let Some(ProcessSpec::Members { members, .. }) = &plan.targets[0].process else {
        panic!("members")
    };
    let a = &members[0];
    let listen = a.listen.expect("a is behind a link");
    let ports = [a.port, a.peer, listen[0], listen[1]];
    let mut distinct = ports.to_vec();
    distinct.sort_unstable();
    distinct.dedup();
    assert_eq!(distinct.len(), 4, "{ports:?}");
    assert_eq!(
        a.cmd,
        format!(
            "srv --listen {} --announce {} --peers {},{} --raft {}",
            listen[0], a.port, a.peer, members[1].peer, listen[1]
        )
    );
    // Ready when the member itself listens; a helper has no link, and reaches a through it.
    assert_eq!(a.ready.port(), listen[0]);
    let s = &members[2];
    assert_eq!(s.listen, None);
    assert_eq!(s.cmd, format!("sentinel {} {}", s.port, a.port));
}

#[test]
fn partition_and_slow_need_a_link_and_say_how() {
    let fault = "[[faults]]\naction = \"partition\"\nevery = \"5s\"\n";
    // A linked member must bind {listen.port}: the link holds {port}.
    let e = err(&linked("srv --port {port}", ""));
    assert!(e.contains("does not listen on {listen.port}"), "{e}");
    assert!(e.contains("--replica-announce-port {port}"), "{e}");
    // Without link = true, no link to cut.
    let unlinked = linked("srv --port {listen.port}", fault).replace("link = true\n", "");
    let e = err(&unlinked);
    assert!(
        e.contains("a partition fault acts through a member's link, and c/a has none"),
        "{e}"
    );
    assert!(e.contains("set link = true in [targets.c.process]"), "{e}");
    // A helper has no link either.
    let e = err(&linked(
        "srv --port {listen.port}",
        "[[faults]]\naction = \"slow\"\nmember = \"s\"\nevery = \"5s\"\ndelay = \"10ms\"\n",
    ));
    assert!(e.contains("c/s has none"), "{e}");
    // slow says by how much; partition takes no delay.
    let e = err(&linked(
        "srv --port {listen.port}",
        "[[faults]]\naction = \"slow\"\nevery = \"5s\"\n",
    ));
    assert!(e.contains("a slow fault needs delay= or rate="), "{e}");
    let e = err(&linked(
        "srv --port {listen.port}",
        "[[faults]]\naction = \"partition\"\nevery = \"5s\"\ndelay = \"1ms\"\n",
    ));
    assert!(
        e.contains("delay is not a setting of a partition fault"),
        "{e}"
    );
    // Written as resolved: it reads back the same.
    let plan = resolve(&linked(
        "srv --port {listen.port}",
        "[[faults]]\naction = \"slow\"\nmember = \"a\"\nevery = \"5s\"\nfor = \"2s\"\ndelay = \"10ms\"\njitter = \"1ms\"\nrate = \"10mbit\"\n",
    ))
    .unwrap();
    assert_eq!(
        plan.faults[0].to_string(),
        "slow target=c member=a every=5s for=2s delay=10ms jitter=1ms rate=10000000bit"
    );
}
