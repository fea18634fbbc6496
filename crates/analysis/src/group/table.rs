//! The groups of one scan thread by key: a directly indexed table for small keys (table ids,
//! event types), a hash map for the rest, and per group its totals and one sample event (to
//! print the value from at the end).

use iocap_format::Event;
pub use iocap_format::IdHasher;

use super::Group;

/// Keys below this are looked up in a table, not a hash map: table ids (processes, files,
/// threads) and the event-type keys are small.
const DENSE_KEYS: u64 = 1 << 16;
const NO_SLOT: u32 = u32::MAX;

/// Groups by key; what [`super::Feed::feed`] adds the rows of a chunk to.
#[derive(Default)]
pub struct Slots {
    /// Slot of each small key (`NO_SLOT`: none yet), grown on demand up to [`DENSE_KEYS`].
    dense: Vec<u32>,
    /// Slot of each larger key.
    sparse: IdMap<u32>,
    pub(crate) slots: Vec<(u64, Group, Event)>,
}

impl Slots {
    /// The group of `key`; `sample` makes the group's sample event when it is new.
    #[inline]
    pub fn get(&mut self, key: u64, sample: impl FnOnce() -> Event) -> &mut Group {
        let slot = if key < DENSE_KEYS {
            let k = key as usize;
            if k >= self.dense.len() {
                self.dense.resize(k + 1, NO_SLOT);
            }
            if self.dense[k] == NO_SLOT {
                self.dense[k] = self.slots.len() as u32;
                self.slots.push((key, Group::default(), sample()));
            }
            self.dense[k] as usize
        } else {
            let next = self.slots.len() as u32;
            let slot = *self.sparse.entry(key).or_insert(next);
            if slot == next {
                self.slots.push((key, Group::default(), sample()));
            }
            slot as usize
        };
        &mut self.slots[slot].1
    }

    /// Add `group` to the group of `key`, `sample` being its sample event when it is new.
    pub(crate) fn add(&mut self, key: u64, group: Group, sample: Event) {
        let g = self.get(key, || sample);
        if *g == Group::default() {
            // New: taken whole rather than copied into an empty one.
            *g = group;
        } else {
            g.merge(&group);
        }
    }
}

type IdMap<V> = iocap_format::IdMap<u64, V>;
