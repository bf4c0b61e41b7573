//! A batched read's rows, which a SQL server returns in any order: gathered by key, then placed
//! in the order the keys were asked, as [`engine::driver::Session::get_many`] hands them back.

use engine::driver::OpError;
use std::collections::HashMap;

#[derive(Default)]
pub struct Gathered {
    /// Where each key's value lies in `values`.
    at: HashMap<u64, (usize, usize)>,
    values: Vec<u8>,
}

impl Gathered {
    pub fn clear(&mut self) {
        self.at.clear();
        self.values.clear();
    }

    /// One row: `key`'s value.
    pub fn add(&mut self, key: u64, value: &[u8]) {
        let start = self.values.len();
        self.values.extend_from_slice(value);
        self.at.insert(key, (start, self.values.len()));
    }

    /// Appends each of `keys`' values to `out` and its end to `ends`; a key no row gave is
    /// `missing()`'s error.
    pub fn place(
        &self,
        keys: &[u64],
        out: &mut Vec<u8>,
        ends: &mut Vec<usize>,
        missing: fn() -> OpError,
    ) -> Result<(), OpError> {
        for key in keys {
            let &(a, b) = self.at.get(key).ok_or_else(missing)?;
            out.extend_from_slice(&self.values[a..b]);
            ends.push(out.len());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use engine::driver::ErrorClass;

    #[test]
    fn rows_in_any_order_come_out_in_the_keys_order() {
        let missing = || OpError::new(ErrorClass::NotFound, "no such key");
        let mut g = Gathered::default();
        g.add(7, b"seven");
        g.add(2, b"");
        g.add(5, b"five");
        let (mut out, mut ends) = (b"x".to_vec(), vec![1]);
        g.place(&[5, 2, 7, 5], &mut out, &mut ends, missing)
            .unwrap();
        assert_eq!(out, b"xfivesevenfive");
        assert_eq!(ends, [1, 5, 5, 10, 14]);
        let e = g.place(&[3], &mut out, &mut ends, missing).unwrap_err();
        assert_eq!(e.class, ErrorClass::NotFound);
        g.clear();
        assert!(g.place(&[7], &mut out, &mut ends, missing).is_err());
    }
}
