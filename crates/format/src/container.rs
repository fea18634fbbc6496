//! Containers: which one a process ran in, read from its cgroup path, and what the runtime
//! that ran it called it (a capture's container table, [`crate::ContainerEntry`]).
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
///
/// The path is read a component at a time, each by its own shape, so a container's child
/// cgroups (CRI-O's and podman's `<scope>/container`, the units of a systemd running inside
/// it) are still the container. An OCI runtime's id must be exactly 64 lowercase hex digits:
/// anything else in its place (`/docker/abc`) names no container, rather than a made-up one.
/// A machine's name must be a hostname's characters (`[A-Za-z0-9._-]`, at most 64) once its
/// systemd escapes (`\x2d`) are decoded.
///
/// `/machine.slice/machine-<name>.scope` is how systemd-machined names every machine
/// registered with it, and libvirt registers its virtual machines there too
/// (`machine-qemu\x2d1\x2dvm.scope`): the path cannot tell them apart, so a VM's qemu reads as
/// a systemd-nspawn container named `qemu-1-vm`.
///
/// ```
/// use iocap_format::container::{parse_cgroup, Runtime};
/// let id = "0123456789abcdef".repeat(4);
/// let c = parse_cgroup(&format!("/system.slice/docker-{id}.scope"));
/// assert_eq!(c.as_ref().map(|c| c.runtime), Some(Runtime::Docker));
/// assert_eq!(c.as_ref().map(|c| c.short_id()), Some("0123456789ab"));
/// assert_eq!(parse_cgroup("/system.slice/docker.service"), None);
/// ```
pub fn parse_cgroup(path: &str) -> Option<CgroupContainer> {
    let mut found: Option<Found<'_>> = None;
    let mut pod: Option<&str> = None;
    // The two components before this one, and whether the one before was a pod's cgroup.
    let (mut prev, mut prev2, mut after_pod) = ("", "", false);
    let mut parts = path.split('/').peekable();
    while let Some(part) = parts.next() {
        let is_pod = match pod_uid(part, prev, prev2) {
            Some(uid) => {
                pod = Some(uid);
                true
            }
            None => {
                if let Some((runtime, id)) = container(part, prev, after_pod) {
                    // On cgroup v2, systemd-nspawn moves itself into its unit's `supervisor`
                    // child, beside the container's `payload`: like conmon, it runs on the host.
                    let supervisor = runtime == Runtime::Nspawn && parts.peek() == Some(&"supervisor");
                    if !supervisor {
                        found = Some(Found { runtime, id, pod });
                    }
                }
                false
            }
        };
        (prev2, prev, after_pod) = (prev, part, is_pod);
    }
    let found = found?;
    let id = match found.runtime {
        Runtime::Nspawn => unescape(found.id),
        _ => found.id.to_owned(),
    };
    // systemd's driver writes the uid's dashes as underscores (a dash would nest the slice).
    let pod_uid = found.pod.map(|uid| uid.replace('_', "-"));
    Some(CgroupContainer {
        runtime: found.runtime,
        id,
        pod_uid,
    })
}

/// A container found in a path, borrowing from it until the last one is known.
struct Found<'a> {
    runtime: Runtime,
    /// As the path writes it (a machine's name still escaped).
    id: &'a str,
    /// The uid of the pod the path was in when it reached the container, as written.
    pod: Option<&'a str>,
}

/// The scopes systemd's cgroup driver names by a container's id: `<prefix><id>.scope`.
/// A monitor's scope (`crio-conmon-<id>.scope`, `libpod-conmon-<id>.scope`) has the same
/// prefix, and is no container because what follows it is not an id.
const SCOPES: [(&str, Runtime); 5] = [
    ("docker-", Runtime::Docker),
    ("cri-containerd-", Runtime::Containerd),
    ("nerdctl-", Runtime::Containerd),
    ("crio-", Runtime::CriO),
    ("libpod-", Runtime::Podman),
];

/// The cgroups named by a container's id without `.scope`: CRI-O's cgroupfs manager
/// (`.../pod<uid>/crio-<id>`), podman's (`/libpod_parent/libpod-<id>`), and podman's
/// `--cgroups=split`, which quadlet units use (`/system.slice/web.service/libpod-payload-<id>`,
/// conmon in its `runtime` sibling).
const BARE: [(&str, Runtime); 3] = [
    ("crio-", Runtime::CriO),
    ("libpod-payload-", Runtime::Podman),
    ("libpod-", Runtime::Podman),
];

/// The container one component of a path names, given the component before it and whether
/// that one was a pod's cgroup.
fn container<'a>(part: &'a str, prev: &str, after_pod: bool) -> Option<(Runtime, &'a str)> {
    if let Some(unit) = part.strip_suffix(".scope") {
        if let Some(found) = by_prefix(unit, &SCOPES) {
            return Some(found);
        }
        let name = unit.strip_prefix("machine-").filter(|_| prev == "machine.slice")?;
        return is_machine_name(name).then_some((Runtime::Nspawn, name));
    }
    if let Some(unit) = part.strip_prefix("systemd-nspawn@") {
        let name = unit.strip_suffix(".service").filter(|_| prev == "machine.slice")?;
        return is_machine_name(name).then_some((Runtime::Nspawn, name));
    }
    if let Some(found) = by_prefix(part, &BARE) {
        return Some(found);
    }
    // A bare id: Docker's cgroupfs driver (`/docker/<id>`), or any runtime under the
    // kubelet's cgroupfs driver (`/kubepods/burstable/pod<uid>/<id>`). Elsewhere a bare hex
    // name is someone else's (`/process_api/<32 hex>`).
    if !is_oci_id(part) {
        None
    } else if prev == "docker" {
        Some((Runtime::Docker, part))
    } else if after_pod {
        Some((Runtime::Unknown, part))
    } else {
        None
    }
}

/// The first of `table`'s prefixes `name` has with a full id after it.
fn by_prefix<'a>(name: &'a str, table: &[(&str, Runtime)]) -> Option<(Runtime, &'a str)> {
    table.iter().find_map(|&(prefix, runtime)| {
        let id = name.strip_prefix(prefix)?;
        is_oci_id(id).then_some((runtime, id))
    })
}

/// The pod uid one component of a path names, as written, given the two components before
/// it: the kubelet's systemd driver (`kubepods-burstable-pod<uid with _>.slice`,
/// `kubepods-pod<uid>.slice` for Guaranteed pods; kind's `kubelet-kubepods-...` too) or its
/// cgroupfs driver (`/kubepods/burstable/pod<uid>`, `/kubepods/pod<uid>`).
fn pod_uid<'a>(part: &'a str, prev: &str, prev2: &str) -> Option<&'a str> {
    if let Some(slice) = part.strip_suffix(".slice") {
        // A slice's name is its ancestry joined by dashes.
        let (ancestry, uid) = slice.rsplit_once("-pod")?;
        let ancestry = ancestry
            .strip_suffix("-burstable")
            .or_else(|| ancestry.strip_suffix("-besteffort"))
            .unwrap_or(ancestry);
        let kubepods = ancestry == "kubepods" || ancestry.ends_with("-kubepods");
        return (kubepods && is_pod_uid(uid, b'_')).then_some(uid);
    }
    let uid = part.strip_prefix("pod")?;
    let qos = prev == "kubepods" || (matches!(prev, "burstable" | "besteffort") && prev2 == "kubepods");
    (qos && is_pod_uid(uid, b'-')).then_some(uid)
}

/// Whether `id` is an OCI runtime's full container id: 64 lowercase hex digits.
fn is_oci_id(id: &str) -> bool {
    id.len() == 64 && id.bytes().all(is_hex)
}

/// Whether `uid` is a pod's uid, its groups separated by `sep`: a UUID (`8-4-4-4-12`
/// lowercase hex), or a static pod's 32 hex digits (the kubelet's hash of its manifest).
fn is_pod_uid(uid: &str, sep: u8) -> bool {
    let bytes = uid.as_bytes();
    match bytes.len() {
        32 => bytes.iter().all(|&b| is_hex(b)),
        36 => bytes.iter().enumerate().all(|(i, &b)| {
            if matches!(i, 8 | 13 | 18 | 23) {
                b == sep
            } else {
                is_hex(b)
            }
        }),
        _ => false,
    }
}

/// Whether `b` is a lowercase hex digit.
fn is_hex(b: u8) -> bool {
    matches!(b, b'0'..=b'9' | b'a'..=b'f')
}

/// Whether a unit name's instance (`systemd-nspawn@<name>.service`, `machine-<name>.scope`)
/// is a machine's name once unescaped: 1 to 64 of `[A-Za-z0-9._-]`, as systemd-machined
/// allows (a hostname's characters).
fn is_machine_name(escaped: &str) -> bool {
    let mut len = 0usize;
    for b in unescaped(escaped) {
        match b {
            Some(b) if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.') => len += 1,
            _ => return false,
        }
        if len > 64 {
            return false;
        }
    }
    len > 0
}

/// A machine's name, unescaped; only for one [`is_machine_name`] accepted, so every byte is
/// ASCII.
fn unescape(escaped: &str) -> String {
    let mut name = String::with_capacity(escaped.len());
    name.extend(unescaped(escaped).flatten().map(char::from));
    name
}

/// The bytes of a unit name's part with systemd's `\xNN` escapes decoded; `None` for an
/// escape that is cut short or not hex.
fn unescaped(escaped: &str) -> impl Iterator<Item = Option<u8>> + '_ {
    let mut bytes = escaped.bytes();
    std::iter::from_fn(move || {
        let b = bytes.next()?;
        if b != b'\\' {
            return Some(Some(b));
        }
        let (x, hi, lo) = (bytes.next(), bytes.next(), bytes.next());
        let digit = |d: Option<u8>| char::from(d?).to_digit(16).and_then(|d| u8::try_from(d).ok());
        Some(match (x, digit(hi), digit(lo)) {
            (Some(b'x'), Some(hi), Some(lo)) => Some(hi << 4 | lo),
            _ => None,
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const ID: &str = "e3942651d395c6201b00e14ec3ea1b451448055a897840cbd279af65aa830bdf";
    const ID2: &str = "922522f438cd9a58ee40240bcf12db5bd7499958bdd7cdb927bd8a0a768b8a05";
    /// A kind or k3d node: the container a cluster's pods are nested in.
    const NODE: &str = "41d89dd06cd1053b0f8fc048d6cf6638a2597569866449aec3bdc46089226fca";
    const UID: &str = "f633da55-f8f2-447e-8185-207caaf6e381";
    /// [`UID`] as the kubelet's systemd driver writes it.
    const UID_: &str = "f633da55_f8f2_447e_8185_207caaf6e381";
    /// A static pod's uid: the kubelet's hash of its manifest.
    const STATIC_UID: &str = "fe6220c9f31bfeb2ca11148a7795547d";

    fn some(runtime: Runtime, id: &str, pod_uid: Option<&str>) -> Option<CgroupContainer> {
        Some(CgroupContainer {
            runtime,
            id: id.to_owned(),
            pod_uid: pod_uid.map(str::to_owned),
        })
    }

    fn check(cases: &[(String, Option<CgroupContainer>)]) {
        for (path, want) in cases {
            assert_eq!(&parse_cgroup(path), want, "{path}");
        }
    }

    #[test]
    fn docker() {
        use Runtime::Docker;
        check(&[
            // cgroup v2, systemd driver
            (format!("/system.slice/docker-{ID}.scope"), some(Docker, ID, None)),
            // v1, cgroupfs driver
            (format!("/docker/{ID}"), some(Docker, ID, None)),
            // rootless, systemd driver
            (
                format!("/user.slice/user-1000.slice/user@1000.service/user.slice/docker-{ID}.scope"),
                some(Docker, ID, None),
            ),
            // a systemd in the container: its units are still the container
            (
                format!("/system.slice/docker-{ID}.scope/system.slice/nginx.service"),
                some(Docker, ID, None),
            ),
            (
                format!("/system.slice/docker-{ID}.scope/init.scope"),
                some(Docker, ID, None),
            ),
            // Docker in Docker: the innermost
            (format!("/docker/{ID}/docker/{ID2}"), some(Docker, ID2, None)),
            (
                format!("/system.slice/docker-{ID}.scope/docker/{ID2}"),
                some(Docker, ID2, None),
            ),
            (
                format!("/docker/{ID}/system.slice/docker-{ID2}.scope"),
                some(Docker, ID2, None),
            ),
            // the inner daemon, in the outer container
            (
                format!("/docker/{ID}/system.slice/docker.service"),
                some(Docker, ID, None),
            ),
            // dockershim, systemd driver: the scope says Docker
            (
                format!(
                    "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{UID_}.slice/docker-{ID}.scope"
                ),
                some(Docker, ID, Some(UID)),
            ),
            (
                format!("/kubepods.slice/kubepods-pod{UID_}.slice/docker-{ID}.scope"),
                some(Docker, ID, Some(UID)),
            ),
        ]);
    }

    #[test]
    fn docker_not_containers() {
        check(&[
            ("/system.slice/docker.service".to_owned(), None),
            ("/system.slice/docker.socket".to_owned(), None),
            ("/docker".to_owned(), None),
            ("/docker/".to_owned(), None),
            ("/docker/abc".to_owned(), None),
            ("/system.slice/docker-abc.scope".to_owned(), None),
            // not quite an id: short, long, uppercase, not hex
            (format!("/docker/{}", &ID[..63]), None),
            (format!("/docker/{ID}0"), None),
            (format!("/docker/{}", ID.to_uppercase()), None),
            (format!("/docker/{}g", &ID[..63]), None),
            (format!("/system.slice/docker-{}.scope", &ID[..12]), None),
            (format!("/system.slice/docker-{ID}.service"), None),
            (format!("/system.slice/docker-{ID}"), None),
            // BuildKit's build containers have ids of its own
            ("/docker/buildkit/xl3y8gm7ed1e6gryx1cj0eoub".to_owned(), None),
            // a bare id outside `/docker/` and a pod
            (format!("/{ID}"), None),
            (format!("/system.slice/{ID}"), None),
            (format!("/dockerd/{ID}"), None),
        ]);
    }

    #[test]
    fn containerd() {
        use Runtime::{Containerd, Docker, Unknown};
        check(&[
            (format!("/system.slice/nerdctl-{ID}.scope"), some(Containerd, ID, None)),
            (
                format!("/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod{UID_}.slice/cri-containerd-{ID}.scope"),
                some(Containerd, ID, Some(UID)),
            ),
            // kind: a node is a Docker container whose kubelet's cgroup root is /kubelet
            (
                format!(
                    "/system.slice/docker-{NODE}.scope/kubelet.slice/kubelet-kubepods.slice/\
                     kubelet-kubepods-besteffort.slice/kubelet-kubepods-besteffort-pod{UID_}.slice/\
                     cri-containerd-{ID}.scope"
                ),
                some(Containerd, ID, Some(UID)),
            ),
            // ... and its own processes are in the node, in no pod
            (format!("/system.slice/docker-{NODE}.scope/kubelet.slice/kubelet.service"), some(Docker, NODE, None)),
            (
                format!(
                    "/system.slice/docker-{NODE}.scope/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-pod{UID_}.slice"
                ),
                some(Docker, NODE, None),
            ),
            // k3d: k3s's cgroupfs driver in a Docker container
            (format!("/docker/{NODE}/kubepods/besteffort/pod{UID}/{ID}"), some(Unknown, ID, Some(UID))),
            ("/system.slice/containerd.service".to_owned(), None),
            ("/system.slice/cri-containerd-abc.scope".to_owned(), None),
        ]);
    }

    #[test]
    fn crio() {
        use Runtime::CriO;
        let pod = format!("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{UID_}.slice");
        check(&[
            (format!("{pod}/crio-{ID}.scope"), some(CriO, ID, Some(UID))),
            // CRI-O with systemd may put the container's processes in a child
            (format!("{pod}/crio-{ID}.scope/container"), some(CriO, ID, Some(UID))),
            // the monitor
            (format!("{pod}/crio-conmon-{ID}.scope"), None),
            (
                format!("/kubepods.slice/kubepods-pod{UID_}.slice/crio-{ID}.scope"),
                some(CriO, ID, Some(UID)),
            ),
            // cgroupfs manager: no `.scope`
            (
                format!("/kubepods/burstable/pod{UID}/crio-{ID}"),
                some(CriO, ID, Some(UID)),
            ),
            (format!("/kubepods/burstable/pod{UID}/crio-conmon-{ID}"), None),
            (format!("/crio/crio-{ID}"), some(CriO, ID, None)),
            ("/system.slice/crio.service".to_owned(), None),
            (format!("{pod}/crio-{}.scope", &ID[..40]), None),
        ]);
    }

    #[test]
    fn podman() {
        use Runtime::Podman;
        let rootless = "/user.slice/user-1000.slice/user@1000.service/user.slice";
        check(&[
            (format!("/machine.slice/libpod-{ID}.scope"), some(Podman, ID, None)),
            (
                format!("/machine.slice/libpod-{ID}.scope/container"),
                some(Podman, ID, None),
            ),
            (format!("/machine.slice/libpod-conmon-{ID}.scope"), None),
            (format!("{rootless}/libpod-{ID}.scope"), some(Podman, ID, None)),
            (
                format!("{rootless}/libpod-{ID}.scope/container"),
                some(Podman, ID, None),
            ),
            (format!("{rootless}/libpod-conmon-{ID}.scope"), None),
            // a pod's containers are in the pod's slice: a slice, not a machine's scope
            (
                format!("/machine.slice/machine-libpod_pod_{ID2}.slice/libpod-{ID}.scope"),
                some(Podman, ID, None),
            ),
            (
                format!("/machine.slice/machine-libpod_pod_{ID2}.slice/libpod-conmon-{ID}.scope"),
                None,
            ),
            (
                format!("{rootless}/user-libpod_pod_{ID2}.slice/libpod-{ID}.scope/container"),
                some(Podman, ID, None),
            ),
            // cgroupfs manager
            (format!("/libpod_parent/libpod-{ID}"), some(Podman, ID, None)),
            ("/libpod_parent/conmon".to_owned(), None),
            ("/libpod_parent".to_owned(), None),
            // --cgroups=split (quadlet units): the payload beside conmon's `runtime`
            (
                format!("/system.slice/web.service/libpod-payload-{ID}"),
                some(Podman, ID, None),
            ),
            (
                format!("/user.slice/user-1000.slice/user@1000.service/app.slice/web.service/libpod-payload-{ID}"),
                some(Podman, ID, None),
            ),
            ("/system.slice/web.service/runtime".to_owned(), None),
            ("/machine.slice/libpod-abc.scope".to_owned(), None),
        ]);
    }

    #[test]
    fn kubepods_cgroupfs() {
        use Runtime::Unknown;
        check(&[
            // Guaranteed, Burstable, BestEffort
            (format!("/kubepods/pod{UID}/{ID}"), some(Unknown, ID, Some(UID))),
            (
                format!("/kubepods/burstable/pod{UID}/{ID}"),
                some(Unknown, ID, Some(UID)),
            ),
            (
                format!("/kubepods/besteffort/pod{UID}/{ID}"),
                some(Unknown, ID, Some(UID)),
            ),
            (
                format!("/kubepods/burstable/pod{STATIC_UID}/{ID}"),
                some(Unknown, ID, Some(STATIC_UID)),
            ),
            // a container nested in a pod's: the innermost, still in the pod
            (
                format!("/kubepods/burstable/pod{UID}/{ID}/docker/{ID2}"),
                some(Runtime::Docker, ID2, Some(UID)),
            ),
            // the pod itself, and what is above it
            (format!("/kubepods/burstable/pod{UID}"), None),
            (format!("/kubepods/pod{UID}"), None),
            ("/kubepods/burstable".to_owned(), None),
            ("/kubepods".to_owned(), None),
            // not a pod: a bare id needs one
            (format!("/kubepods/burstable/pod{}/{ID}", &UID[..35]), None),
            (format!("/kubepods/burstable/pod{UID_}/{ID}"), None),
            (format!("/kubepods/burstable/pod{}/{ID}", UID.to_uppercase()), None),
            (format!("/kubepods/guaranteed/pod{UID}/{ID}"), None),
            (format!("/burstable/pod{UID}/{ID}"), None),
            (format!("/kubepods/burstable/{UID}/{ID}"), None),
            // a bare id below the container's is not a second container
            (
                format!("/kubepods/burstable/pod{UID}/{ID}/{ID2}"),
                some(Unknown, ID, Some(UID)),
            ),
        ]);
    }

    #[test]
    fn kubepods_systemd() {
        use Runtime::Containerd;
        let scope = format!("cri-containerd-{ID}.scope");
        check(&[
            (
                format!("/kubepods.slice/kubepods-pod{UID_}.slice/{scope}"),
                some(Containerd, ID, Some(UID)),
            ),
            (
                format!("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{UID_}.slice/{scope}"),
                some(Containerd, ID, Some(UID)),
            ),
            (
                format!("/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod{UID_}.slice/{scope}"),
                some(Containerd, ID, Some(UID)),
            ),
            (
                format!("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{STATIC_UID}.slice/{scope}"),
                some(Containerd, ID, Some(STATIC_UID)),
            ),
            // the pod's and the QoS classes' own cgroups
            (
                format!("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{UID_}.slice"),
                None,
            ),
            (format!("/kubepods.slice/kubepods-pod{UID_}.slice"), None),
            ("/kubepods.slice/kubepods-besteffort.slice".to_owned(), None),
            ("/kubepods.slice".to_owned(), None),
            // a uid the driver would not write: the container, without a pod
            (
                format!("/kubepods.slice/kubepods-pod{UID}.slice/{scope}"),
                some(Containerd, ID, None),
            ),
            (
                format!("/kubepods.slice/kubepods-pod{}.slice/{scope}", &UID_[..20]),
                some(Containerd, ID, None),
            ),
            // a slice that only ends like a pod's
            (
                format!("/system.slice/notkubepods-pod{UID_}.slice/{scope}"),
                some(Containerd, ID, None),
            ),
            // a bare id in a pod's slice (a runtime not told of the driver): still the pod's
            (
                format!("/kubepods.slice/kubepods-pod{UID_}.slice/{ID}"),
                some(Runtime::Unknown, ID, Some(UID)),
            ),
        ]);
    }

    #[test]
    fn nspawn() {
        use Runtime::Nspawn;
        check(&[
            (
                "/machine.slice/systemd-nspawn@web.service".to_owned(),
                some(Nspawn, "web", None),
            ),
            (
                "/machine.slice/systemd-nspawn@web.service/payload".to_owned(),
                some(Nspawn, "web", None),
            ),
            (
                "/machine.slice/systemd-nspawn@web.service/payload/system.slice/x.service".to_owned(),
                some(Nspawn, "web", None),
            ),
            (
                "/machine.slice/systemd-nspawn@web.service/payload/init.scope".to_owned(),
                some(Nspawn, "web", None),
            ),
            // systemd-nspawn itself
            ("/machine.slice/systemd-nspawn@web.service/supervisor".to_owned(), None),
            ("/machine.slice/machine-web.scope/supervisor".to_owned(), None),
            (
                r"/machine.slice/systemd-nspawn@my\x2dbox.service".to_owned(),
                some(Nspawn, "my-box", None),
            ),
            ("/machine.slice/machine-web.scope".to_owned(), some(Nspawn, "web", None)),
            (
                "/machine.slice/machine-web.scope/payload/system.slice/x.service".to_owned(),
                some(Nspawn, "web", None),
            ),
            (
                r"/machine.slice/machine-fedora\x2d40.scope".to_owned(),
                some(Nspawn, "fedora-40", None),
            ),
            (
                r"/machine.slice/machine-a\x2eb\x5fc.scope".to_owned(),
                some(Nspawn, "a.b_c", None),
            ),
            // libvirt registers its VMs the same way: read as systemd-nspawn
            (
                r"/machine.slice/machine-qemu\x2d1\x2dvm.scope".to_owned(),
                some(Nspawn, "qemu-1-vm", None),
            ),
            (
                r"/machine.slice/machine-qemu\x2d1\x2dvm.scope/libvirt/emulator".to_owned(),
                some(Nspawn, "qemu-1-vm", None),
            ),
            // Docker in a machine: the innermost
            (
                format!("/machine.slice/systemd-nspawn@web.service/payload/system.slice/docker-{ID}.scope"),
                some(Runtime::Docker, ID, None),
            ),
            // not machines
            ("/machine.slice".to_owned(), None),
            ("/machine.slice/systemd-nspawn@.service".to_owned(), None),
            ("/machine.slice/machine-.scope".to_owned(), None),
            ("/system.slice/systemd-nspawn@web.service".to_owned(), None),
            ("/system.slice/machine-web.scope".to_owned(), None),
            ("/machine.slice/systemd-nspawn@web.socket".to_owned(), None),
            ("/machine.slice/machine-web.slice".to_owned(), None),
            // escapes cut short, not hex, or of a character no machine name has
            (r"/machine.slice/machine-a\x2.scope".to_owned(), None),
            (r"/machine.slice/machine-a\x.scope".to_owned(), None),
            (r"/machine.slice/machine-a\.scope".to_owned(), None),
            (r"/machine.slice/machine-a\xzz.scope".to_owned(), None),
            (r"/machine.slice/machine-a\y2d.scope".to_owned(), None),
            (r"/machine.slice/machine-a\x1b.scope".to_owned(), None),
            (r"/machine.slice/machine-a\x2f.scope".to_owned(), None),
            (r"/machine.slice/machine-caf\xc3\xa9.scope".to_owned(), None),
            ("/machine.slice/machine-café.scope".to_owned(), None),
            ("/machine.slice/machine-a b.scope".to_owned(), None),
            // 64 characters at most, counted unescaped
            (
                format!("/machine.slice/machine-{}.scope", "a".repeat(64)),
                some(Nspawn, &"a".repeat(64), None),
            ),
            (format!("/machine.slice/machine-{}.scope", "a".repeat(65)), None),
            (
                format!(r"/machine.slice/machine-{}.scope", r"\x2d".repeat(64)),
                some(Nspawn, &"-".repeat(64), None),
            ),
            (format!(r"/machine.slice/machine-{}.scope", r"\x2d".repeat(65)), None),
        ]);
    }

    #[test]
    fn hosts_processes() {
        check(&[
            (String::new(), None),
            ("/".to_owned(), None),
            ("/init.scope".to_owned(), None),
            ("/user.slice/user-1000.slice/session-2.scope".to_owned(), None),
            (
                "/user.slice/user-1000.slice/user@1000.service/init.scope".to_owned(),
                None,
            ),
            (
                "/user.slice/user-1000.slice/user@1000.service/app.slice/app-org.gnome.Terminal.slice/\
                 vte-spawn-8453d944-c69b-4b1c-95ba-009e89cdc7c5.scope"
                    .to_owned(),
                None,
            ),
            ("/system.slice/docker.service".to_owned(), None),
            ("/system.slice/containerd.service".to_owned(), None),
            ("/system.slice/kubelet.service".to_owned(), None),
            ("/system.slice/libvirtd.service".to_owned(), None),
            ("/system.slice/systemd-machined.service".to_owned(), None),
            // 32 hex digits on this very host, not a container
            ("/process_api/c468e19aad73d698dbf1ab328595ca7d".to_owned(), None),
            ("/process_api".to_owned(), None),
        ]);
    }

    #[test]
    fn short_ids() {
        let c = parse_cgroup(&format!("/docker/{ID}"));
        assert_eq!(c.as_ref().map(CgroupContainer::short_id), Some(&ID[..12]));
        assert_eq!(short_id("web"), "web");
        assert_eq!(short_id(""), "");
    }

    /// What every answer must be, whatever the path: a full id for an OCI runtime, a machine's
    /// name for systemd-nspawn, a pod uid with dashes.
    fn assert_well_formed(path: &str) {
        let Some(c) = parse_cgroup(path) else { return };
        match c.runtime {
            Runtime::Nspawn => {
                assert!((1..=64).contains(&c.id.len()), "{path:?} → {c:?}");
                assert!(
                    c.id.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b)),
                    "{path:?} → {c:?}"
                );
            }
            _ => assert!(is_oci_id(&c.id), "{path:?} → {c:?}"),
        }
        if let Some(uid) = &c.pod_uid {
            assert!(is_pod_uid(uid, b'-'), "{path:?} → {c:?}");
        }
    }

    /// Every real shape above, cut short at every character and with odd characters put in.
    #[test]
    fn cut_and_spliced_paths_never_panic() {
        let paths = [
            format!("/system.slice/docker-{ID}.scope"),
            format!("/docker/{ID}/docker/{ID2}"),
            format!(
                "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{UID_}.slice/crio-{ID}.scope/container"
            ),
            format!("/kubepods/besteffort/pod{UID}/{ID}"),
            format!("/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-{ID}.scope/container"),
            r"/machine.slice/machine-qemu\x2d1\x2dvm.scope".to_owned(),
            "/machine.slice/systemd-nspawn@web.service/supervisor".to_owned(),
        ];
        for path in &paths {
            for (i, _) in path.char_indices() {
                assert_well_formed(&path[..i]);
                assert_well_formed(&path[i..]);
                for odd in ["é", "🦀", "\\", "\\x", "/", "//", "\0", "\u{202e}", "-", "_"] {
                    assert_well_formed(&format!("{}{odd}{}", &path[..i], &path[i..]));
                }
            }
        }
    }

    #[test]
    fn long_paths() {
        let nested = format!("/docker/{ID}").repeat(50_000) + &format!("/docker/{ID2}");
        assert_eq!(parse_cgroup(&nested), some(Runtime::Docker, ID2, None));
        assert_eq!(parse_cgroup(&"/".repeat(1 << 20)), None);
        assert_eq!(parse_cgroup(&"\\".repeat(1 << 20)), None);
        let long_name = format!("/machine.slice/machine-{}.scope", r"\x2d".repeat(1 << 18));
        assert_eq!(parse_cgroup(&long_name), None);
        let long_pod = format!("/kubepods.slice/kubepods-pod{}.slice", "_".repeat(1 << 20));
        assert_eq!(parse_cgroup(&long_pod), None);
    }

    /// Pieces of real paths, and of broken ones, for paths that come close to parsing.
    fn piece() -> impl Strategy<Value = &'static str> {
        prop::sample::select(vec![
            "/",
            "//",
            "docker",
            "docker-",
            "cri-containerd-",
            "nerdctl-",
            "crio-",
            "crio-conmon-",
            "libpod-",
            "libpod-conmon-",
            "libpod-payload-",
            "libpod_parent",
            "conmon",
            ".scope",
            ".slice",
            ".service",
            ID,
            ID2,
            &ID[..63],
            "kubepods",
            "kubepods-",
            "kubepods.slice",
            "burstable",
            "besteffort",
            "-burstable",
            "pod",
            "-pod",
            UID,
            UID_,
            STATIC_UID,
            "machine.slice",
            "machine-",
            "systemd-nspawn@",
            "supervisor",
            "payload",
            "container",
            "web",
            "\\x2d",
            "\\x",
            "\\xc3\\xa9",
            "\\",
            "x",
            "é",
            "🦀",
            "\u{202e}",
            "\0",
            "-",
            "_",
            ".",
            "@",
        ])
    }

    proptest! {
        #[test]
        fn any_string_never_panics(path in any::<String>()) {
            assert_well_formed(&path);
        }

        #[test]
        fn any_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..300)) {
            assert_well_formed(&String::from_utf8_lossy(&bytes));
        }

        #[test]
        fn near_misses_never_panic(pieces in prop::collection::vec(piece(), 0..16)) {
            assert_well_formed(&pieces.concat());
        }
    }
}
