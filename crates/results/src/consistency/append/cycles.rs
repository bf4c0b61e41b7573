//! Cycles in the dependency graph, named by their edges. The graph's strongly connected
//! components hold every cycle; within each, a cycle is sought for each kind from the most
//! restrictive: `G0` among the ww edges, `G1c` through a wr edge among ww and wr, `G-single`
//! through one rw edge with a way back among ww and wr, `G2-item` through an rw edge with any
//! way back. An edge within a component lies on a cycle, so each search that has an edge to
//! start from finds one; only `G-single`'s way back may lie outside the ww-and-wr component of
//! its edge, and that search is bounded by the deadline.

use super::{Graph, RW, Txn, WR, WW};
use std::collections::VecDeque;
use std::time::Instant;

/// The strongly connected components of the edges having a kind in `mask` (Tarjan's, without
/// recursion): each node's component, and the components of two nodes or more.
fn components(g: &Graph, mask: u8) -> (Vec<u32>, Vec<Vec<u32>>) {
    const NONE: u32 = u32::MAX;
    let n = g.out.len();
    let (mut index, mut low, mut comp) = (vec![NONE; n], vec![0u32; n], vec![NONE; n]);
    let (mut on_stack, mut stack, mut next, mut big) =
        (vec![false; n], Vec::new(), 0u32, Vec::new());
    let mut count = 0u32;
    for root in 0..n {
        if index[root] != NONE {
            continue;
        }
        // (node, the place in its edges to look at next)
        let mut work = vec![(root, 0usize)];
        index[root] = next;
        low[root] = next;
        next += 1;
        stack.push(root as u32);
        on_stack[root] = true;
        while let Some(&mut (v, ref mut at)) = work.last_mut() {
            let edges = &g.out[v];
            let step = edges[*at..].iter().position(|e| e.1 & mask != 0);
            if let Some(p) = step {
                let w = edges[*at + p].0 as usize;
                *at += p + 1;
                if index[w] == NONE {
                    index[w] = next;
                    low[w] = next;
                    next += 1;
                    stack.push(w as u32);
                    on_stack[w] = true;
                    work.push((w, 0));
                } else if on_stack[w] {
                    low[v] = low[v].min(index[w]);
                }
                continue;
            }
            work.pop();
            if let Some(&(parent, _)) = work.last() {
                low[parent] = low[parent].min(low[v]);
            }
            if low[v] == index[v] {
                let mut members = Vec::new();
                while let Some(w) = stack.pop() {
                    on_stack[w as usize] = false;
                    comp[w as usize] = count;
                    members.push(w);
                    if w as usize == v {
                        break;
                    }
                }
                count += 1;
                if members.len() > 1 {
                    big.push(members);
                }
            }
        }
    }
    (comp, big)
}

/// The shortest way from `from` to `to` over edges having a kind in `mask`, among the nodes
/// `inside` accepts: the nodes after `from`, `to` last.
fn path(
    g: &Graph,
    (from, to): (u32, u32),
    mask: u8,
    inside: impl Fn(u32) -> bool,
) -> Option<Vec<u32>> {
    let mut came: std::collections::HashMap<u32, u32> = std::collections::HashMap::new();
    let mut queue = VecDeque::from([from]);
    while let Some(v) = queue.pop_front() {
        for &(w, kinds) in &g.out[v as usize] {
            if kinds & mask == 0 || !inside(w) || w == from || came.contains_key(&w) {
                continue;
            }
            came.insert(w, v);
            if w == to {
                let mut way = vec![to];
                let mut at = to;
                while let Some(&p) = came.get(&at).filter(|&&p| p != from) {
                    way.push(p);
                    at = p;
                }
                way.reverse();
                return Some(way);
            }
            queue.push_back(w);
        }
    }
    None
}

/// The kinds of the edge from `a` to `b`.
fn kinds(g: &Graph, a: u32, b: u32) -> u8 {
    (g.out[a as usize].iter())
        .find(|e| e.0 == b)
        .map_or(0, |e| e.1)
}

/// A cycle's name: its steps taken as the strongest dependency each has (ww before wr before
/// rw), then Adya's name for what remains.
fn name(g: &Graph, cycle: &[u32]) -> &'static str {
    let steps = (0..cycle.len()).map(|i| kinds(g, cycle[i], cycle[(i + 1) % cycle.len()]));
    let (mut wr, mut rw) = (0, 0);
    for k in steps {
        if k & WW != 0 {
        } else if k & WR != 0 {
            wr += 1;
        } else {
            rw += 1;
        }
    }
    match (wr, rw) {
        (0, 0) => "G0",
        (_, 0) => "G1c",
        (_, 1) => "G-single",
        _ => "G2-item",
    }
}

/// The edges from `members` to a node `inside` whose kinds `keep` accepts.
fn edges_with(
    g: &Graph,
    members: &[u32],
    inside: &dyn Fn(u32) -> bool,
    keep: impl Fn(u8) -> bool,
) -> Vec<(u32, u32)> {
    (members.iter())
        .flat_map(|&a| g.out[a as usize].iter().map(move |&(b, k)| (a, b, k)))
        .filter(|&(_, b, k)| inside(b) && keep(k))
        .map(|(a, b, _)| (a, b))
        .collect()
}

/// Every kind of cycle found, one per kind per component; a search cut short by `deadline` is
/// noted in `unknown`.
pub(super) fn find(
    g: &Graph,
    deadline: Instant,
    unknown: &mut Vec<(&'static str, String)>,
) -> Vec<(&'static str, Vec<u32>)> {
    let mut found = Vec::new();
    let (all, big) = components(g, WW | WR | RW);
    let (ww_comp, ww_big) = components(g, WW);
    for members in &ww_big {
        let inside = |x: u32| ww_comp[x as usize] == ww_comp[members[0] as usize];
        let (a, b) = edges_with(g, members, &inside, |k| k & WW != 0)[0];
        if let Some(mut way) = path(g, (b, a), WW, inside) {
            way.insert(0, b);
            found.push(("G0", way));
        }
    }
    let (wr_comp, wr_big) = components(g, WW | WR);
    for members in &wr_big {
        let inside = |x: u32| wr_comp[x as usize] == wr_comp[members[0] as usize];
        let start = edges_with(g, members, &inside, |k| k & WR != 0 && k & WW == 0);
        if let Some(&(a, b)) = start.first()
            && let Some(mut way) = path(g, (b, a), WW | WR, inside)
        {
            way.insert(0, b);
            found.push(("G1c", way));
        }
    }
    for members in &big {
        let inside = |x: u32| all[x as usize] == all[members[0] as usize];
        let rw = edges_with(g, members, &inside, |k| k == RW);
        // One rw edge and a way back without another: first where its ends share a ww-and-wr
        // component (a way back is sure), then anywhere in the component, while time allows.
        let sure = (rw.iter()).find(|&&(a, b)| wr_comp[a as usize] == wr_comp[b as usize]);
        let mut single = sure.and_then(|&(a, b)| {
            let same = |x: u32| wr_comp[x as usize] == wr_comp[a as usize];
            path(g, (b, a), WW | WR, same).map(|w| (b, w))
        });
        for &(a, b) in &rw {
            if single.is_some() {
                break;
            }
            if Instant::now() >= deadline {
                unknown.push(("G-single", format!(
                    "the search for a cycle through one anti-dependency ran out of time in a component of {} transactions",
                    members.len()
                )));
                break;
            }
            single = path(g, (b, a), WW | WR, inside).map(|w| (b, w));
        }
        if let Some((b, mut way)) = single {
            way.insert(0, b);
            found.push(("G-single", way));
        } else if let Some(&(a, b)) = rw.first()
            && let Some(mut way) = path(g, (b, a), WW | WR | RW, inside)
        {
            way.insert(0, b);
            found.push((name(g, &way), way));
        }
    }
    found
}

/// A cycle as a sentence: each transaction's client and the dependency to the next.
pub(super) fn describe(g: &Graph, history: &[Txn], cycle: &[u32]) -> String {
    let mut s = format!("a cycle of {} transactions: ", cycle.len());
    for (i, &a) in cycle.iter().enumerate() {
        let b = cycle[(i + 1) % cycle.len()];
        let k = kinds(g, a, b);
        let kind = [(WW, "ww"), (WR, "wr"), (RW, "rw")]
            .into_iter()
            .find(|(bit, _)| k & bit != 0)
            .expect("an edge of the cycle");
        let key = g.why.get(&(a, b, kind.0)).copied().unwrap_or(0);
        let verb = match kind.1 {
            "ww" => "appended to it before",
            "wr" => "was read by",
            _ => "read it before the append of",
        };
        s.push_str(&format!(
            "T{} (client {}) {} key {key}: {verb} T{}; ",
            i + 1,
            history[a as usize].client,
            kind.1,
            (i + 1) % cycle.len() + 1
        ));
    }
    s.truncate(s.trim_end_matches("; ").len());
    s
}
