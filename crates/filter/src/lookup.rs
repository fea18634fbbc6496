//! What an event's ids (`Event::proc`, `Event::file`, `Event::dev`) stand for, as the filter
//! sees them: [`Lookup`], answered by a capture's [`Tables`] or by the recorder's tables while
//! they are being built. A leaf of the crate: `fields` asks it, and nothing here asks back.

use std::borrow::Cow;

use iocap_format::container::Runtime;
use iocap_format::{FdType, Tables};

/// A process as a filter sees it: strings already escaped, as a capture's [`Tables`] hold them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ProcView<'a> {
    /// `proc.ppid`: the parent's pid.
    pub ppid: u32,
    /// `proc.name`: the comm.
    pub name: &'a str,
    /// `proc.exe`: the executable's path.
    pub exe: &'a str,
    /// `proc.cmdline`: the arguments joined by spaces.
    pub cmdline: &'a str,
    /// `user.uid`: the effective uid, `None` when not recorded.
    pub uid: Option<u32>,
    /// `user.name`: the uid's name on the recording host, empty when it has none.
    pub user: &'a str,
    /// `proc.cgroup`: the cgroup v2 path, empty when not recorded.
    pub cgroup: &'a str,
    /// The container the process ran in; `None` on the host, or when not recorded.
    pub container: Option<ContainerView<'a>>,
}

/// A container as a filter sees it (`container.*`, `k8s.*`): strings escaped, empty where the
/// runtime did not say.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ContainerView<'a> {
    /// `container.runtime`.
    pub runtime: Runtime,
    /// `container.full_id`; `container.id` is its first 12 characters.
    pub full_id: &'a str,
    /// `container.name`.
    pub name: &'a str,
    /// `container.image`.
    pub image: &'a str,
    /// `k8s.pod.name`.
    pub pod_name: &'a str,
    /// `k8s.pod.uid`.
    pub pod_uid: &'a str,
    /// `k8s.ns.name`.
    pub namespace: &'a str,
}

/// A file as a filter sees it (name escaped).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FileView<'a> {
    /// `fd.type`.
    pub kind: FdType,
    /// `fd.name`: a path, `laddr:lport->raddr:rport`, `pipe:[ino]`, ...
    pub name: &'a str,
    /// Device of the file's filesystem, 0 when none.
    pub dev: u32,
}

/// Where the per-event evaluation finds what an event's ids (`Event::proc`, `Event::file`,
/// `Event::dev`) stand for.
pub trait Lookup {
    /// The process with this table id (`Event::proc`); `None` for 0 or an id not (yet) known,
    /// which makes the `proc.*` fields other than `proc.pid` absent.
    fn lookup_proc(&self, id: u32) -> Option<ProcView<'_>>;
    /// The file with this table id (`Event::file`); `None` for 0 or an id not known, which
    /// makes the `fd.*` fields other than `fd.num` absent.
    fn lookup_file(&self, id: u32) -> Option<FileView<'_>>;
    /// The block device's name (`vda`); `None` prints it as `major:minor`.
    fn lookup_device(&self, dev: u32) -> Option<&str>;
    /// The names of stack `id`'s frames, outermost first (`stack.*`); `None` for 0 or an id
    /// not known. The recorder's tables have none (stacks are named after the filter).
    fn lookup_stack(&self, _id: u32) -> Option<Vec<Cow<'_, str>>> {
        None
    }
}

impl Lookup for Tables {
    fn lookup_proc(&self, id: u32) -> Option<ProcView<'_>> {
        self.proc(id).map(|p| ProcView {
            ppid: p.ppid,
            name: self.string(p.name),
            exe: self.string(p.exe),
            cmdline: self.string(p.cmdline),
            uid: p.uid,
            user: self.string(p.user),
            cgroup: self.string(p.cgroup),
            container: self.container(p.container).map(|c| ContainerView {
                runtime: c.runtime,
                full_id: self.string(c.full_id),
                name: self.string(c.name),
                image: self.string(c.image),
                pod_name: self.string(c.pod_name),
                pod_uid: self.string(c.pod_uid),
                namespace: self.string(c.namespace),
            }),
        })
    }

    fn lookup_file(&self, id: u32) -> Option<FileView<'_>> {
        self.file(id).map(|f| FileView {
            kind: f.kind,
            name: self.string(f.name),
            dev: f.dev,
        })
    }

    fn lookup_device(&self, dev: u32) -> Option<&str> {
        self.device_name(dev)
    }

    fn lookup_stack(&self, id: u32) -> Option<Vec<Cow<'_, str>>> {
        self.stack_names(id)
    }
}
