//! Group-by: events split by the value of a field, each group with its count, bytes and
//! latency histogram, and the top groups by count.

use std::collections::HashMap;
use std::hash::Hash;

use crate::hist::LatencyHist;

/// One group's totals.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Group {
    /// Bytes transferred by the group's events.
    pub bytes: u64,
    pub hist: LatencyHist,
}

impl Group {
    pub fn count(&self) -> u64 {
        self.hist.count()
    }
}

/// Groups by key. Keys are whatever the caller extracts per event (a field's display value).
#[derive(Clone, Debug)]
pub struct GroupBy<K> {
    groups: HashMap<K, Group>,
}

impl<K> Default for GroupBy<K> {
    fn default() -> Self {
        GroupBy { groups: HashMap::new() }
    }
}

impl<K: Hash + Eq + Ord + Clone> GroupBy<K> {
    pub fn new() -> Self {
        GroupBy::default()
    }

    /// Count one event of group `key`.
    pub fn add(&mut self, key: K, latency: u64, bytes: u64) {
        let g = self.groups.entry(key).or_default();
        g.bytes = g.bytes.saturating_add(bytes);
        g.hist.add(latency);
    }

    /// Count one event of the group `key` borrows from, cloning the key only for a new group.
    pub fn add_ref<Q>(&mut self, key: &Q, latency: u64, bytes: u64)
    where
        K: std::borrow::Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        if let Some(g) = self.groups.get_mut(key) {
            g.bytes = g.bytes.saturating_add(bytes);
            g.hist.add(latency);
        } else {
            self.add(key.to_owned(), latency, bytes);
        }
    }

    pub fn merge(&mut self, other: GroupBy<K>) {
        for (k, g) in other.groups {
            let mine = self.groups.entry(k).or_default();
            mine.bytes = mine.bytes.saturating_add(g.bytes);
            mine.hist.merge(&g.hist);
        }
    }

    /// Number of distinct keys.
    pub fn len(&self) -> usize {
        self.groups.len()
    }

    pub fn is_empty(&self) -> bool {
        self.groups.is_empty()
    }

    pub fn get(&self, key: &K) -> Option<&Group> {
        self.groups.get(key)
    }

    /// The `n` groups with the most events, most first; ties by key, so the order is
    /// deterministic.
    pub fn top(&self, n: usize) -> Vec<(&K, &Group)> {
        let mut all: Vec<(&K, &Group)> = self.groups.iter().collect();
        all.sort_by(|a, b| b.1.count().cmp(&a.1.count()).then_with(|| a.0.cmp(b.0)));
        all.truncate(n);
        all
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn top_groups_by_count_then_key() {
        let mut a = GroupBy::<String>::new();
        let mut b = GroupBy::<String>::new();
        for (k, lat) in [("cat", 10), ("dd", 1000), ("dd", 3000), ("zsh", 5), ("cat", 20)] {
            a.add_ref(k, lat, 4096);
        }
        b.add("cat".into(), 30, 1);
        b.add("awk".into(), 1, 0);
        a.merge(b);
        let top = a.top(3);
        let keys: Vec<&str> = top.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["cat", "dd", "awk"], "3 cats, 2 dds, then awk before zsh by name");
        assert_eq!(top[0].1.count(), 3);
        assert_eq!(top[0].1.bytes, 2 * 4096 + 1);
        assert_eq!(top[1].1.hist.max(), 3000);
        assert_eq!(a.len(), 4);
    }
}
