//! The deterministic generator behind every random-looking synthetic capture.

/// xorshift64 (shifts 13, 7, 17): cheap, and the same seed gives the same sequence on every
/// machine and run, so a capture built from it is the same file every time.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// A generator starting from `seed`, which must not be 0 (xorshift would stay at 0).
    pub fn new(seed: u64) -> Rng {
        assert_ne!(seed, 0, "a xorshift seed of 0 gives only zeros");
        Rng(seed)
    }

    /// The next value of the sequence.
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// The next value, reduced to `0..n` (`n` > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }

    /// One element of `v` (not empty), chosen by [`Rng::below`].
    pub fn pick<'a, T>(&mut self, v: &'a [T]) -> &'a T {
        &v[self.below(v.len() as u64) as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::Rng;

    /// Every synthetic capture and snapshot depends on this sequence staying what it is.
    #[test]
    fn the_sequence_is_xorshift64() {
        let mut r = Rng::new(1);
        assert_eq!(r.next_u64(), 1_082_269_761);
        assert_eq!(r.next_u64(), 1_152_992_998_833_853_505);
        assert_eq!(r.next_u64(), 11_177_516_664_432_764_457);
    }
}
