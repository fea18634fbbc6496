//! [`Bitmap`]: one bit per event of a chunk, the result of evaluating a filter over it.

/// A fixed-length set of bits stored in `u64` words; bit `i` is bit `i % 64` of word `i / 64`.
///
/// Bits past [`Bitmap::len`] in the last word are always zero, so word-wise operations and
/// [`Bitmap::count_ones`] need no masking by their callers.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Bitmap {
    words: Vec<u64>,
    len: usize,
}

impl Bitmap {
    /// `len` zero bits.
    pub fn zeros(len: usize) -> Bitmap {
        Bitmap {
            words: vec![0; len.div_ceil(64)],
            len,
        }
    }

    /// `len` one bits.
    pub fn ones(len: usize) -> Bitmap {
        let mut b = Bitmap::zeros(len);
        b.fill(true);
        b
    }

    /// Resize to `len` bits, all set to `value`, keeping the allocation.
    pub fn reset(&mut self, len: usize, value: bool) {
        self.len = len;
        self.words.clear();
        self.words.resize(len.div_ceil(64), 0);
        if value {
            self.fill(true);
        }
    }

    fn fill(&mut self, value: bool) {
        let w = if value { u64::MAX } else { 0 };
        self.words.iter_mut().for_each(|x| *x = w);
        self.mask_tail();
    }

    /// Clear the bits past `len` in the last word.
    pub(crate) fn mask_tail(&mut self) {
        let rem = self.len % 64;
        if rem != 0 {
            if let Some(last) = self.words.last_mut() {
                *last &= (1u64 << rem) - 1;
            }
        }
    }

    /// Number of bits (events), set or not.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there are no bits at all (not whether none is set: that is `count_ones() == 0`).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The words; bits past `len` are zero.
    pub fn words(&self) -> &[u64] {
        &self.words
    }

    /// Mutable words; callers must leave the bits past `len` zero.
    pub(crate) fn words_mut(&mut self) -> &mut [u64] {
        &mut self.words
    }

    /// Bit `i`; false past the end.
    pub fn get(&self, i: usize) -> bool {
        i < self.len && self.words[i / 64] >> (i % 64) & 1 == 1
    }

    /// Set bit `i` to `value`; ignored past the end.
    pub fn set(&mut self, i: usize, value: bool) {
        if i >= self.len {
            return;
        }
        let (w, b) = (i / 64, i % 64);
        if value {
            self.words[w] |= 1 << b;
        } else {
            self.words[w] &= !(1 << b);
        }
    }

    /// Number of set bits.
    pub fn count_ones(&self) -> usize {
        self.words.iter().map(|w| w.count_ones() as usize).sum()
    }

    /// Whether any bit is set.
    pub fn any(&self) -> bool {
        self.words.iter().any(|&w| w != 0)
    }

    /// Indices of the set bits, ascending.
    pub fn iter_ones(&self) -> impl Iterator<Item = usize> + '_ {
        ones(&self.words)
    }

    /// `self &= other` (bits past the shorter length are cleared).
    pub fn and(&mut self, other: &Bitmap) {
        for (i, w) in self.words.iter_mut().enumerate() {
            *w &= other.words.get(i).copied().unwrap_or(0);
        }
    }

    /// `self |= other` (bits of `other` past `self.len()` are ignored).
    pub fn or(&mut self, other: &Bitmap) {
        for (w, o) in self.words.iter_mut().zip(&other.words) {
            *w |= o;
        }
        self.mask_tail();
    }

    /// `self = !self`.
    pub fn not(&mut self) {
        self.words.iter_mut().for_each(|w| *w = !*w);
        self.mask_tail();
    }
}

/// Indices of the set bits of `words` (bit `i % 64` of word `i / 64`), ascending: a
/// [`Bitmap`]'s, or an id set's dense words.
pub(crate) fn ones(words: &[u64]) -> impl Iterator<Item = usize> + '_ {
    words.iter().enumerate().flat_map(|(wi, &w)| {
        let mut w = w;
        std::iter::from_fn(move || {
            if w == 0 {
                return None;
            }
            let b = w.trailing_zeros() as usize;
            w &= w - 1;
            Some(wi * 64 + b)
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_get_count_iter() {
        let mut b = Bitmap::zeros(130);
        for i in [0, 63, 64, 129, 500] {
            b.set(i, true);
        }
        assert_eq!(b.count_ones(), 4, "the bit past the end is ignored");
        assert_eq!(b.iter_ones().collect::<Vec<_>>(), vec![0, 63, 64, 129]);
        assert!(b.get(129) && !b.get(128) && !b.get(500));
        b.not();
        assert_eq!(b.count_ones(), 126, "not keeps the tail clear");
        let ones = Bitmap::ones(70);
        assert_eq!(ones.count_ones(), 70);
        b.and(&ones);
        assert_eq!(b.count_ones(), 70 - 3);
        b.or(&Bitmap::ones(130));
        assert_eq!(b.count_ones(), 130);
    }
}
