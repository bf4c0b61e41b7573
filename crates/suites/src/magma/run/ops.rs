//! MagmaBenchmarker's operations by name, and the writes that build the objects they read.

use super::*;

/// A read test's operation (each runs for the test time, one unit per run); `None` for the
/// others.
pub(super) fn read_operation(name: &str) -> Option<Operation> {
    let op: Operation = match name {
        "peakRefreshRate" => Box::new(|s, w| {
            s.commit()?;
            s.begin(TxMode::Read)?;
            Work::read(s, &mut w.buf, key(SMALL, 0))?.expect_version(1)?;
            Ok(())
        }),
        "singleObjectRead" => Box::new(|s, w| {
            let id = w.random_small();
            let o = Work::read(s, &mut w.buf, id)?;
            o.expect_version(1)?;
            check(o.payload == w.small, id, "payload differs")
        }),
        "oneThousandElementArrayRead" => Box::new(|s, w| {
            let id = key(ARRAY, 0);
            let o = Work::read(s, &mut w.buf, id)?;
            o.expect_version(1)?;
            check(o.payload == w.elements, id, "elements differ")
        }),
        "oneThousandElementArrayOfObjectsRead" => Box::new(|s, w| {
            let id = key(ARRAY_OF_OBJECTS, 0);
            let o = Work::read(s, &mut w.buf, id)?;
            w.keys.clear();
            w.keys.extend(o.expect_version(1)?.references());
            check(w.keys.len() as u64 == w.t, id, "wrong reference count")?;
            w.read_many(s).map(drop)
        }),
        "oneMillionObjectPointersRead" => Box::new(|s, w| {
            let id = key(POINTERS, 0);
            let o = Work::read(s, &mut w.buf, id)?;
            w.keys.clear();
            w.keys.extend(o.expect_version(1)?.references());
            let pointers = w.read_many(s)?;
            check(pointers == w.t * w.t, id, "wrong pointer count")
        }),
        "oneThousandLevelsDeepRead" => Box::new(|s, w| {
            let (mut id, mut depth) = (key(CHAIN, 0), 0);
            loop {
                let o = Work::read(s, &mut w.buf, id)?;
                depth += 1;
                match o.expect_version(1)?.ref_count() {
                    0 => break,
                    _ => id = o.reference(0),
                }
            }
            check(depth == w.t, key(CHAIN, 0), "the chain has the wrong depth")
        }),
        "getMagmaArraySize" => Box::new(|s, w| {
            let id = key(COLLECTION, 0);
            let o = Work::read(s, &mut w.buf, id)?;
            o.expect_version(1)?;
            check(o.payload == w.t.to_le_bytes(), id, "wrong size")
        }),
        _ => return None,
    };
    Some(op)
}

/// Test `name`'s operation (repetition `rep`, T = `t`): whether it repeats for the test time
/// (or runs once), and the units one run counts.
pub(super) fn operation(name: &str, rep: u32, t: u64) -> (bool, u64, Operation) {
    if let Some(read) = read_operation(name) {
        return (true, 1, read);
    }
    match name {
        "peakCommitRate"
        | "oneThousandElementArrayCommit"
        | "a1001BufferCommit"
        | "aOneMillionBufferCommit" => {
            let slot = [
                "peakCommitRate",
                "oneThousandElementArrayCommit",
                "a1001BufferCommit",
                "aOneMillionBufferCommit",
            ]
            .iter()
            .position(|n| *n == name)
            .expect("a write test");
            (
                true,
                1,
                Box::new(move |s, w| {
                    s.begin(TxMode::Write)?;
                    w.versions[slot] += 1;
                    let payload: &[u8] = match slot {
                        0 => &w.small,
                        1 => &w.elements,
                        2 => &w.buffer1001,
                        _ => &w.big,
                    };
                    let id = key(WRITES, slot as u64);
                    put(s, &mut w.buf, id, w.versions[slot], &[], payload)?;
                    s.commit()
                }),
            )
        }
        "updateThousandsOfMagmaArrayElements" => (
            false,
            t,
            Box::new(|s, w| {
                s.begin(TxMode::Write)?;
                w.dirty.fill(false);
                for _ in 0..w.t {
                    let at = (splitmix(&mut w.rng) % w.t) as usize;
                    w.collection[at] = w.random_small();
                    w.dirty[at / CHUNK] = true;
                }
                w.collection_version += 1;
                for c in (0..w.dirty.len()).filter(|c| w.dirty[*c]) {
                    let id = key(COLLECTION, 1 + c as u64);
                    put_chunk(s, &mut w.buf, id, w.collection_version, &w.collection, c)?;
                }
                s.commit()
            }),
        ),
        "addThousandsOfObjectsTenAtATime"
        | "addThousandsOfObjectsOneHundredAtATime"
        | "addThousandsOfObjectsAtOnce" => {
            let (variant, batch) = match name {
                "addThousandsOfObjectsTenAtATime" => (0, 10),
                "addThousandsOfObjectsOneHundredAtATime" => (1, 100),
                _ => (2, t),
            };
            (
                false,
                1,
                Box::new(move |s, w| add(s, w, rep, variant, batch)),
            )
        }
        other => unreachable!("{other} is not a magma test"),
    }
}

/// Puts one object, encoded in `buf`.
pub(super) fn put(
    session: &mut dyn Session,
    buf: &mut Vec<u8>,
    id: u64,
    version: u64,
    refs: &[u64],
    payload: &[u8],
) -> Result<(), OpError> {
    graph::encode(id, version, refs, payload, buf);
    session.put(id, buf)
}

/// Writes chunk `c` of a collection whose elements are `elements`.
pub(super) fn put_chunk(
    session: &mut dyn Session,
    buf: &mut Vec<u8>,
    id: u64,
    version: u64,
    elements: &[u64],
    c: usize,
) -> Result<(), OpError> {
    let end = ((c + 1) * CHUNK).min(elements.len());
    put(session, buf, id, version, &elements[c * CHUNK..end], &[])
}

/// Writes a collection's header: its size, and its chunks (gathered in `refs`).
pub(super) fn put_header(
    session: &mut dyn Session,
    w: &mut Work,
    id: u64,
    version: u64,
    size: u64,
    chunks: impl Iterator<Item = u64>,
) -> Result<(), OpError> {
    w.refs.clear();
    w.refs.extend(chunks);
    put(
        session,
        &mut w.buf,
        id,
        version,
        &w.refs,
        &size.to_le_bytes(),
    )
}
