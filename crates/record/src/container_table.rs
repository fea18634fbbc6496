//! The capture's container table, as the writer thread builds it: which container each new
//! process entry ran in (by its cgroup paths, [`iocap_format::container::parse_cgroup`]), and
//! what the runtime there calls it (`containers.rs`), asked once per container, off the
//! event path.

use std::collections::{HashMap, HashSet};
use std::io::Write;

use iocap_filter::ContainerView;
use iocap_format::container::{parse_cgroup, CgroupContainer, Runtime};
use iocap_format::escape::escape;
use iocap_format::{ContainerEntry, Writer};

use crate::containers::{ContainerNames, Resolver};

/// A container seen while recording.
struct Known {
    /// Its entry's id in the current file (0: not yet added to it, after a rotation).
    id: u32,
    runtime: Runtime,
    /// Its strings as found: full id, name, image, pod name, pod uid, namespace.
    raw: [String; 6],
    /// The same escaped, as a record-time filter compares them.
    shown: [String; 6],
}

/// The containers of a recording, by full id.
pub struct Containers {
    known: Vec<Known>,
    by_id: HashMap<String, usize>,
    /// Each table id of the current file to its place in `known`.
    by_entry: HashMap<u32, usize>,
    resolver: Resolver,
    /// Runtimes whose state could not be read, said once each.
    said: HashSet<Runtime>,
}

impl Containers {
    /// An empty table that asks `resolver` for names.
    pub fn new(resolver: Resolver) -> Containers {
        Containers {
            known: Vec::new(),
            by_id: HashMap::new(),
            by_entry: HashMap::new(),
            resolver,
            said: HashSet::new(),
        }
    }

    /// The table id in `w` of the container a process with these cgroup paths (v2's, then the
    /// v1 hierarchy's) runs in, adding its entry when it is new to `w`; 0 on the host.
    pub fn place<W: Write>(&mut self, w: &mut Writer<W>, cgroup: &[u8], cgroup1: &[u8]) -> u32 {
        let Some(c) = [cgroup, cgroup1]
            .into_iter()
            .find_map(|p| parse_cgroup(std::str::from_utf8(p).ok()?))
        else {
            return 0;
        };
        let at = match self.by_id.get(&c.id) {
            Some(&at) => at,
            None => self.learn(c),
        };
        let k = &mut self.known[at];
        if k.id == 0 {
            let [full_id, name, image, pod_name, pod_uid, namespace] = k.raw.each_ref().map(|s| w.intern(s.as_bytes()));
            k.id = w.add_container(ContainerEntry {
                id: 0,
                runtime: k.runtime,
                full_id,
                name,
                image,
                pod_name,
                pod_uid,
                namespace,
            });
            self.by_entry.insert(k.id, at);
        }
        k.id
    }

    /// A container seen for the first time: its runtime's names for it, asked now.
    fn learn(&mut self, c: CgroupContainer) -> usize {
        let (runtime, mut names) = match self.resolver.resolve(c.runtime, &c.id) {
            Ok(found) => found,
            Err(why) => {
                if self.said.insert(c.runtime) {
                    eprintln!("iocap: container names unknown (ids only): {}", escape(why.as_bytes()));
                }
                (c.runtime, ContainerNames::default())
            }
        };
        // The cgroup path's pod uid is the kubelet's own, whatever the runtime's state says.
        if let Some(uid) = c.pod_uid {
            names.pod_uid = uid;
        }
        let ContainerNames {
            name,
            image,
            pod_name,
            pod_uid,
            namespace,
        } = names;
        let raw = [c.id.clone(), name, image, pod_name, pod_uid, namespace];
        let shown = raw.each_ref().map(|s| escape(s.as_bytes()));
        self.known.push(Known {
            id: 0,
            runtime,
            raw,
            shown,
        });
        let at = self.known.len() - 1;
        self.by_id.insert(c.id, at);
        at
    }

    /// Container `id` of the current file as a filter sees it.
    pub fn view(&self, id: u32) -> Option<ContainerView<'_>> {
        let k = &self.known[*self.by_entry.get(&id)?];
        let [full_id, name, image, pod_name, pod_uid, namespace] = &k.shown;
        Some(ContainerView {
            runtime: k.runtime,
            full_id,
            name,
            image,
            pod_name,
            pod_uid,
            namespace,
        })
    }

    /// A new file begins: each container gets an entry in it again when a process of its
    /// is added there.
    pub fn rotated(&mut self) {
        self.known.iter_mut().for_each(|k| k.id = 0);
        self.by_entry.clear();
    }
}
