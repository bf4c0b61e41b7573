//! One object of the shootout: its 16-byte header (key, version), the check of an object read
//! back, and the client cache slots dyno keeps where the target keeps none.

use engine::driver::{ErrorClass, OpError};

/// One preallocated slot per object; a read fills it, a steamin read is served from it.
pub(super) struct ObjectCache {
    size: usize,
    data: Vec<u8>,
    present: Vec<bool>,
}

impl ObjectCache {
    pub(super) fn new(objects: u64, size: usize) -> ObjectCache {
        ObjectCache {
            size,
            data: vec![0; objects as usize * size],
            present: vec![false; objects as usize],
        }
    }

    pub(super) fn clear(&mut self) {
        self.present.fill(false);
    }

    #[inline]
    pub(super) fn get(&self, i: usize) -> Option<&[u8]> {
        self.present[i].then(|| &self.data[i * self.size..(i + 1) * self.size])
    }

    #[inline]
    pub(super) fn put(&mut self, i: usize, obj: &[u8]) {
        self.data[i * self.size..(i + 1) * self.size].copy_from_slice(obj);
        self.present[i] = true;
    }
}

/// Writes the 16-byte header (key, version) at the start of an object.
#[inline]
pub(super) fn stamp(value: &mut [u8], key: u64, version: u64) {
    value[..8].copy_from_slice(&key.to_le_bytes());
    value[8..HEADER].copy_from_slice(&version.to_le_bytes());
}

/// The bytes of an object's header (key, version) that a read checks, and a batched read asks
/// for alone where the target can send them alone (`Session::get_heads`).
pub(super) const HEADER: usize = 16;

/// Checks an object read back: its length (`len`) and its header (the start of `obj`).
#[inline]
pub(super) fn verify(
    obj: &[u8],
    len: usize,
    key: u64,
    version: u64,
    size: usize,
) -> Result<(), OpError> {
    if len == size
        && obj.get(..8) == Some(&key.to_le_bytes()[..])
        && obj.get(8..HEADER) == Some(&version.to_le_bytes()[..])
    {
        return Ok(());
    }
    Err(corrupt(obj, len, key, version, size))
}

#[cold]
fn corrupt(obj: &[u8], len: usize, key: u64, version: u64, size: usize) -> OpError {
    if len != size {
        return OpError::new(
            ErrorClass::Corrupt,
            format!("object {key:#x}: read {len} bytes, wrote {size}"),
        );
    }
    if obj.len() < HEADER {
        return OpError::new(
            ErrorClass::Corrupt,
            format!(
                "object {key:#x}: a header of {} bytes came back, not {HEADER}",
                obj.len()
            ),
        );
    }
    let got_key = u64::from_le_bytes(obj[..8].try_into().expect("8 bytes"));
    let got_version = u64::from_le_bytes(obj[8..HEADER].try_into().expect("8 bytes"));
    OpError::new(
        ErrorClass::Corrupt,
        format!(
            "object {key:#x}: read key {got_key:#x} version {got_version}, expected version {version}"
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verify_catches_wrong_version_length_and_key() {
        let mut v = vec![0u8; 32];
        stamp(&mut v, 42, 2);
        assert!(verify(&v, 32, 42, 2, 32).is_ok());
        assert!(
            verify(&v, 32, 42, 1, 32)
                .unwrap_err()
                .message
                .contains("version 2")
        );
        assert!(verify(&v, 32, 43, 2, 32).is_err());
        assert!(
            verify(&v[..31], 31, 42, 2, 32)
                .unwrap_err()
                .message
                .contains("31 bytes")
        );
        // A batched read's head: the header alone, with the object's whole length.
        assert!(verify(&v[..HEADER], 32, 42, 2, 32).is_ok());
        assert!(verify(&v[..HEADER], 33, 42, 2, 32).is_err());
        // A head cut short never panics: it fails as corrupt.
        assert!(
            verify(&v[..HEADER - 1], 32, 42, 2, 32)
                .unwrap_err()
                .message
                .contains("a header of 15 bytes")
        );
    }

    #[test]
    fn object_cache_slots() {
        let mut c = ObjectCache::new(3, 4);
        assert!(c.get(1).is_none());
        c.put(1, &[1, 2, 3, 4]);
        assert_eq!(c.get(1), Some(&[1u8, 2, 3, 4][..]));
        c.clear();
        assert!(c.get(1).is_none());
    }
}
