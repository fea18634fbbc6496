//! A hasher for small integer keys, shared by the recorder's per-event lookups (processes and
//! fds by pid) and the analyses' groups (table ids, event types).

use std::collections::HashMap;
use std::hash::BuildHasherDefault;

/// A hasher for small integer keys (a multiply and a rotate per word): the keys are ids a
/// kernel assigned or table ids, not attacker-chosen strings, and SipHash per event would cost
/// more than the rest of the work on it. (Someone on the traced host could choose fd numbers
/// that collide; that slows the recorder as a flood of calls would, and loses nothing it does
/// not already count as drops.)
#[derive(Default, Clone, Copy)]
pub struct IdHasher(u64);

impl std::hash::Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }
    #[inline]
    fn write_u32(&mut self, v: u32) {
        self.write_u64(u64::from(v));
    }
    #[inline]
    fn write_i32(&mut self, v: i32) {
        self.write_u64(u64::from(v as u32));
    }
    #[inline]
    fn write_u128(&mut self, v: u128) {
        self.write_u64(v as u64);
        self.write_u64((v >> 64) as u64);
    }
    #[inline]
    fn write_u64(&mut self, v: u64) {
        self.0 = (self.0 ^ v).wrapping_mul(0x9e37_79b9_7f4a_7c15).rotate_left(29);
    }
}

/// A hash map keyed by ids, hashed with [`IdHasher`].
pub type IdMap<K, V> = HashMap<K, V, BuildHasherDefault<IdHasher>>;
