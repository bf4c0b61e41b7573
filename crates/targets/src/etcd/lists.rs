//! Elle's list-append transactions on etcd (family `lists`), as Jepsen's etcd tests run them:
//! a transaction reads every key it touches at one revision (one `Txn` of ranges), works out
//! what its reads return and its lists become, and — when it appends — writes them in one `Txn`
//! guarded on each of those keys' last revision being the one it read. A guard that fails means
//! another transaction changed a key in between: this one did not happen (an abort, as a SQL
//! database's serialization failure). So every committed transaction acts at one revision, and
//! the checker holds the history to serializable. (With `reads=serializable` a transaction of
//! reads only may see a follower's stale copy: serializable still, not strictly.)
//!
//! A list is the values, in order, as decimal text joined by commas — as the SQL databases'
//! table holds it.

use super::EtcdSession;
use engine::driver::{ErrorClass, ListSession, OpError};
use results::consistency::append::Mop;

pub(super) struct EtcdLists {
    pub(super) session: EtcdSession,
}

/// A list as etcd holds it.
pub(super) fn list_of(bytes: Option<&[u8]>) -> Result<Vec<u64>, OpError> {
    let Some(bytes) = bytes.filter(|b| !b.is_empty()) else {
        return Ok(Vec::new());
    };
    let garbage = || {
        let shown = String::from_utf8_lossy(&bytes[..bytes.len().min(60)]).into_owned();
        OpError::new(
            ErrorClass::Corrupt,
            format!("etcd: a list dyno did not write: {shown:?}"),
        )
    };
    let text = std::str::from_utf8(bytes).map_err(|_| garbage())?;
    (text.split(','))
        .map(|v| v.parse::<u64>().map_err(|_| garbage()))
        .collect()
}

/// The bytes of `list`.
pub(super) fn bytes_of(list: &[u64]) -> Vec<u8> {
    let text: Vec<String> = list.iter().map(u64::to_string).collect();
    text.join(",").into_bytes()
}

fn key_of(m: &Mop) -> u64 {
    match m {
        Mop::Append { key, .. } | Mop::Read { key, .. } => *key,
    }
}

impl ListSession for EtcdLists {
    fn transaction(&mut self, mops: &mut [Mop]) -> Result<(), (OpError, bool)> {
        let before = |e| (e, false);
        let mut keys: Vec<u64> = Vec::with_capacity(mops.len());
        for m in mops.iter() {
            if !keys.contains(&key_of(m)) {
                keys.push(key_of(m));
            }
        }
        let names: Vec<Vec<u8>> = (keys.iter())
            .map(|&k| self.session.key(k).to_vec())
            .collect();
        let serializable = self.session.config.serializable;
        let seen = (self.session)
            .on_member(|m, _| m.snapshot(&names, serializable))
            .map_err(before)?;
        self.session.reads += 1;
        let mut lists: Vec<Vec<u64>> = (seen.iter())
            .map(|s| list_of(s.value.as_deref()))
            .collect::<Result<_, _>>()
            .map_err(before)?;
        let mut wrote = vec![false; keys.len()];
        for m in mops.iter_mut() {
            let i = (keys.iter().position(|&k| k == key_of(m))).expect("every key was gathered");
            match m {
                Mop::Append { value, .. } => {
                    lists[i].push(*value);
                    wrote[i] = true;
                }
                Mop::Read { list, .. } => *list = Some(lists[i].clone()),
            }
        }
        if !wrote.contains(&true) {
            // Only reads: they all happened at the snapshot's revision.
            return Ok(());
        }
        let guard: Vec<(Vec<u8>, i64)> = (names.iter().zip(&seen))
            .map(|(name, s)| (name.clone(), s.revision))
            .collect();
        let puts: Vec<(Vec<u8>, Vec<u8>)> = (0..keys.len())
            .filter(|&i| wrote[i])
            .map(|i| (names[i].clone(), bytes_of(&lists[i])))
            .collect();
        match self.session.on_member(|m, _| m.guarded(&guard, &puts)) {
            Ok(true) => Ok(()),
            Ok(false) => Err((
                OpError::new(
                    ErrorClass::Application,
                    "etcd: a key the transaction read changed before it wrote (its Txn's guard failed)",
                ),
                false,
            )),
            Err(e) => Err((e, true)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn lists_read_back_and_garbage_is_corrupt() {
        assert_eq!(list_of(None).unwrap(), Vec::<u64>::new());
        assert_eq!(list_of(Some(b"")).unwrap(), Vec::<u64>::new());
        assert_eq!(list_of(Some(b"3,17,4")).unwrap(), [3, 17, 4]);
        assert_eq!(bytes_of(&[3, 17, 4]), b"3,17,4");
        for bad in [&b"3,,4"[..], b"x", b"\xff", b"3,"] {
            assert_eq!(list_of(Some(bad)).unwrap_err().class, ErrorClass::Corrupt);
        }
    }

    proptest! {
        #[test]
        fn any_list_round_trips(list in prop::collection::vec(any::<u64>(), 0..20)) {
            prop_assert_eq!(list_of(Some(&bytes_of(&list))).unwrap(), list);
        }

        #[test]
        fn any_bytes_are_a_list_or_corrupt(bytes in prop::collection::vec(any::<u8>(), 0..64)) {
            if let Err(e) = list_of(Some(&bytes)) {
                prop_assert_eq!(e.class, ErrorClass::Corrupt);
            }
        }
    }
}
