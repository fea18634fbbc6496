//! Drops placed by process: what the kernel's `drops_by_pid` map (tgid to count, touched only
//! when a record is dropped) grew by since the last reading written, and which of its entries
//! to delete so that it keeps room. The recorder writes each reading's growth, process by
//! process, right after its stats frame (frame kind 18, `Writer::record_drops_by_process`).

use std::collections::HashMap;

/// How many entries `drops_by_pid` holds (its `max_entries` in iocap.bpf.c). A process that
/// finds it full has its drops counted in the total alone, of no known process.
pub(crate) const MAP_ENTRIES: usize = 4096;

/// The map's counts as of the last reading written.
#[derive(Default)]
pub(crate) struct DropPlaces {
    last: HashMap<u32, u64>,
}

impl DropPlaces {
    /// Each pid's growth since the last call, from the map's counts `now` (pid order, counts of
    /// 0 left out), and the pids whose entries to delete: once the map is half full, those
    /// that did not grow. A drop between this reading and the deletion is lost to its process
    /// (the total still has it), which is the price of a bounded map that keeps placing the
    /// drops of the processes losing events now.
    pub(crate) fn growth(&mut self, now: &HashMap<u32, u64>) -> (Vec<(u32, u64)>, Vec<u32>) {
        let mut grew = Vec::new();
        let mut idle = Vec::new();
        for (&pid, &n) in now {
            let before = self.last.get(&pid).copied().unwrap_or(0);
            // Less than before: the entry was deleted and made again since.
            let g = if n >= before { n - before } else { n };
            if g > 0 {
                grew.push((pid, g));
            } else {
                idle.push(pid);
            }
        }
        self.last.clone_from(now);
        if now.len() < MAP_ENTRIES / 2 {
            idle.clear();
        }
        for pid in &idle {
            self.last.remove(pid);
        }
        grew.sort_unstable();
        idle.sort_unstable();
        (grew, idle)
    }
}

/// `to` plus `more`, pid by pid (both in any order; the result in pid order).
pub(crate) fn add(to: &mut Vec<(u32, u64)>, more: impl IntoIterator<Item = (u32, u64)>) {
    let mut all: HashMap<u32, u64> = HashMap::new();
    for (pid, n) in to.drain(..).chain(more) {
        let s = all.entry(pid).or_insert(0);
        *s = s.saturating_add(n);
    }
    to.extend(all);
    to.sort_unstable();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_reading_gives_the_growth_since_the_last() {
        let mut p = DropPlaces::default();
        let (grew, forget) = p.growth(&HashMap::from([(7, 10), (9, 1)]));
        assert_eq!((grew, forget), (vec![(7, 10), (9, 1)], vec![]));
        let (grew, forget) = p.growth(&HashMap::from([(7, 15), (9, 1), (11, 2)]));
        assert_eq!((grew, forget), (vec![(7, 5), (11, 2)], vec![]), "9 did not grow");
        let (grew, _) = p.growth(&HashMap::from([(7, 15), (9, 1), (11, 2)]));
        assert!(grew.is_empty());
    }

    #[test]
    fn a_half_full_map_sheds_the_entries_that_stopped_growing() {
        let mut p = DropPlaces::default();
        let full: HashMap<u32, u64> = (1..=MAP_ENTRIES as u32 / 2).map(|pid| (pid, 1)).collect();
        let (grew, forget) = p.growth(&full);
        assert_eq!((grew.len(), forget.len()), (full.len(), 0));
        let mut next = full.clone();
        next.insert(1, 5);
        let (grew, forget) = p.growth(&next);
        assert_eq!(grew, vec![(1, 4)]);
        assert_eq!(forget.len(), full.len() - 1, "all but the one that grew");
        assert!(!forget.contains(&1));
        // Deleted, an entry made again counts from 0.
        let (grew, forget) = p.growth(&HashMap::from([(1, 5), (2, 3)]));
        assert_eq!((grew, forget), (vec![(2, 3)], vec![]));
    }

    #[test]
    fn adding_merges_by_pid() {
        let mut to = vec![(9, 1), (3, 2)];
        add(&mut to, [(3, 5), (4, 1)]);
        assert_eq!(to, vec![(3, 7), (4, 1), (9, 1)]);
    }
}
