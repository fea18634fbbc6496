//! What the runtime that ran a container calls it: its name, its image and, under Kubernetes,
//! its pod's name, uid and namespace ([`ContainerNames`]), read by a [`Resolver`] from the
//! runtime's own state on disk, for the runtime and id that
//! [`iocap_format::container::parse_cgroup`] read from a process's cgroup path. No daemon is
//! asked: a recording runs where none may answer, and a socket would make the recorder wait.
//!
//! Where each runtime keeps what it knows (paths under the resolver's root, `/`):
//! - Docker: `<data-root>/containers/<id>/config.v2.json` (data-root `/var/lib/docker`, or
//!   `data-root` in `/etc/docker/daemon.json`): `Name`, `Config.Image`, and under
//!   cri-dockerd the kubelet's `io.kubernetes.*` labels (`Config.Labels`).
//! - containerd: the OCI bundle `<state>/io.containerd.runtime.v2.task/<namespace>/<id>/config.json`
//!   (state `/run/containerd`, k3s' and RKE2's `/run/k3s/containerd`, k0s'
//!   `/run/k0s/containerd`): the CRI plugin's `io.kubernetes.cri.*` annotations, nerdctl's
//!   `nerdctl/name`. Docker's own containers are there too (namespace `moby`), with no name:
//!   they are Docker's.
//! - CRI-O: the spec it writes to `/run/containers/storage/<driver>-containers/<id>/userdata/config.json`
//!   (the kubelet's `io.kubernetes.*` labels as annotations, and `io.kubernetes.cri-o.*`),
//!   and containers-storage's record of the container (below), whose metadata is CRI-O's
//!   `RuntimeContainerMetadata` (`name` is the kubelet's `k8s_<container>_<pod>_<namespace>_<uid>_<attempt>`).
//! - Podman: containers-storage's lists, `<driver>-containers/containers.json` and
//!   `volatile-containers.json` (where newer containers-storage keeps volatile containers,
//!   podman's `--rm` ones and all of CRI-O's; under the run root in a transient store; podman
//!   4.3 still lists them in `containers.json`) under `/var/lib/containers/storage`, or a rootless
//!   user's `/home/<user>/.local/share/containers/storage`: the container's names, and
//!   podman's metadata (`image-name`). Podman's own database (bolt or sqlite) is not read, so a
//!   podman pod's name is not known.
//! - systemd-nspawn: the id is the machine's name; its image is `/var/lib/machines/<name>`
//!   (or `<name>.raw`) when that exists.
//!
//! Every file is opened without following a symbolic link in its last component, must be a
//! regular file of at most [`MAX_STATE_FILE`] bytes (a rootless user's, owned by that user),
//! and is parsed without trusting it: a field of an unexpected type reads as unknown, and a file
//! that is not JSON is an error, never a panic. The strings are returned as the runtime wrote
//! them (the capture escapes them), each cut to [`MAX_FIELD`] bytes.

use std::collections::HashMap;
use std::fmt;
use std::fs::{self, Metadata, OpenOptions};
use std::io::{self, Read};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use iocap_format::container::{short_id, Runtime};
use serde::de::{Deserializer, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::Value;

/// The largest state file read (containers-storage's lists grow with every container).
pub const MAX_STATE_FILE: u64 = 64 << 20;

/// The longest string returned, in bytes: longer ones are cut (at a character boundary).
pub const MAX_FIELD: usize = 4096;

/// The most entries read from a directory that is scanned (containerd's namespaces, storage
/// drivers, home directories): a runtime has a handful.
const MAX_SCAN: usize = 1024;

/// The longest containers-storage metadata string parsed: the runtimes write a few hundred bytes.
const MAX_METADATA: usize = 64 << 10;

/// containerd's state directories: its own, k3s' and RKE2's, k0s'.
const CONTAINERD_STATES: [&str; 3] = ["run/containerd", "run/k3s/containerd", "run/k0s/containerd"];

/// containers-storage's graph root and run root (rootful podman, CRI-O).
const STORAGE_GRAPH: &str = "var/lib/containers/storage";
const STORAGE_RUN: &str = "run/containers/storage";

/// A rootless podman user's graph root, under their home directory.
const ROOTLESS_GRAPH: &str = ".local/share/containers/storage";

/// What the runtime that ran a container calls it. An empty string is unknown.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ContainerNames {
    /// The container's name: `docker ps`'s and `podman ps`'s NAMES, or under Kubernetes the
    /// container's name in its pod's spec (`POD` for a pod's sandbox).
    pub name: String,
    /// The image it was started from, as it was asked for (`nginx:1.25`,
    /// `docker.io/library/nginx:1.25`).
    pub image: String,
    /// The Kubernetes pod's name.
    pub pod_name: String,
    /// The Kubernetes pod's uid.
    pub pod_uid: String,
    /// The Kubernetes pod's namespace.
    pub namespace: String,
}

impl ContainerNames {
    /// These names, with each unknown one taken from `other`.
    fn or(mut self, other: ContainerNames) -> ContainerNames {
        for (mine, theirs) in [
            (&mut self.name, other.name),
            (&mut self.image, other.image),
            (&mut self.pod_name, other.pod_name),
            (&mut self.pod_uid, other.pod_uid),
            (&mut self.namespace, other.namespace),
        ] {
            if mine.is_empty() {
                *mine = theirs;
            }
        }
        self
    }

    /// Each name cut to [`MAX_FIELD`] bytes.
    fn capped(self) -> ContainerNames {
        ContainerNames {
            name: cap(self.name),
            image: cap(self.image),
            pod_name: cap(self.pod_name),
            pod_uid: cap(self.pod_uid),
            namespace: cap(self.namespace),
        }
    }
}

/// Resolves a container's names from its runtime's state on disk, keeping the
/// containers-storage lists it has parsed (one file holds every container) until a lookup
/// misses and the file has changed: containers start during a recording.
#[derive(Debug)]
pub struct Resolver {
    /// The directory the runtimes' paths are under: `/`, or a test's tree.
    root: PathBuf,
    /// The containers-storage lists read, by path.
    lists: HashMap<PathBuf, StorageList>,
    /// Docker's data root, once read from its daemon.json.
    docker_root: Option<PathBuf>,
}

impl Default for Resolver {
    fn default() -> Resolver {
        Resolver::new()
    }
}

impl Resolver {
    /// A resolver of the host's containers.
    pub fn new() -> Resolver {
        Resolver::with_root(Path::new("/"))
    }

    /// A resolver that reads the runtimes' state under `root` instead of `/`.
    pub fn with_root(root: &Path) -> Resolver {
        Resolver {
            root: root.to_path_buf(),
            lists: HashMap::new(),
            docker_root: None,
        }
    }

    /// The names of container `id` run by `runtime` (for [`Runtime::Unknown`], by whichever
    /// runtime has it), and the runtime that has it: containers-storage says whether CRI-O or
    /// podman made a container, and Docker's containers are in containerd's state too.
    ///
    /// The error says, in one line, which runtime's state was not found or not readable, and
    /// where: `podman: /var/lib/containers/storage/overlay-containers/containers.json: no such file`.
    pub fn resolve(&mut self, runtime: Runtime, id: &str) -> Result<(Runtime, ContainerNames), String> {
        if !is_plain_name(id) {
            return Err(one_line(&format!(
                "{}: {:?} is not a container id",
                runtime.name(),
                cap(id.to_string())
            )));
        }
        let resolved = match runtime {
            Runtime::Docker => self.docker(id).map(|names| (Runtime::Docker, names)),
            Runtime::Containerd => self.containerd(id),
            Runtime::CriO => self.containers_storage(id, "cri-o", false),
            Runtime::Podman => self.containers_storage(id, "podman", true),
            Runtime::Nspawn => Ok((Runtime::Nspawn, self.nspawn(id))),
            Runtime::Unknown => self.unknown(id),
        };
        resolved
            .map(|(runtime, names)| (runtime, names.capped()))
            .map_err(|why| one_line(&why))
    }

    /// A container whose cgroup path says only its id (Kubernetes' cgroupfs driver): every
    /// runtime's state is tried, a file named by the id before a list to search.
    fn unknown(&mut self, id: &str) -> Result<(Runtime, ContainerNames), String> {
        let docker = match self.docker(id) {
            Ok(names) => return Ok((Runtime::Docker, names)),
            Err(why) => why,
        };
        let containerd = match self.containerd(id) {
            Ok(found) => return Ok(found),
            Err(why) => why,
        };
        let storage = match self.containers_storage(id, "cri-o/podman", false) {
            Ok(found) => return Ok(found),
            Err(why) => why,
        };
        Err(format!("{docker}; {containerd}; {storage}"))
    }

    /// Docker: `config.v2.json` in the container's directory.
    fn docker(&mut self, id: &str) -> Result<ContainerNames, String> {
        let path = self.docker_root().join("containers").join(id).join("config.v2.json");
        let (bytes, _) = read_state(&path, None).map_err(|e| format!("docker: {e}"))?;
        let config: DockerConfig =
            serde_json::from_slice(&bytes).map_err(|e| format!("docker: {}: {e}", path.display()))?;
        let labels = string_map(config.config.get("Labels"));
        let name = string(Some(&config.name));
        let name = name.strip_prefix('/').unwrap_or(&name).to_string();
        let image = [string(config.config.get("Image")), string(Some(&config.image))]
            .into_iter()
            .find(|image| !image.is_empty())
            .unwrap_or_default();
        Ok(kube_labels(&labels).or(kubelet_name(&name)).or(ContainerNames {
            name,
            image,
            ..ContainerNames::default()
        }))
    }

    /// Docker's data root: `data-root` (or the older `graph`) in `/etc/docker/daemon.json`,
    /// else `/var/lib/docker`.
    fn docker_root(&mut self) -> PathBuf {
        if let Some(root) = &self.docker_root {
            return root.clone();
        }
        let configured = read_state(&self.root.join("etc/docker/daemon.json"), None)
            .ok()
            .and_then(|(bytes, _)| serde_json::from_slice::<Value>(&bytes).ok())
            .and_then(|daemon| {
                ["data-root", "graph"]
                    .into_iter()
                    .map(|key| string(daemon.get(key)))
                    .find(|dir| dir.starts_with('/'))
            });
        let root = match configured {
            Some(dir) => self.root.join(dir.trim_start_matches('/')),
            None => self.root.join("var/lib/docker"),
        };
        self.docker_root = Some(root.clone());
        root
    }

    /// containerd: the container's OCI bundle, in whichever namespace has it.
    fn containerd(&mut self, id: &str) -> Result<(Runtime, ContainerNames), String> {
        for state in CONTAINERD_STATES {
            let tasks = self.root.join(state).join("io.containerd.runtime.v2.task");
            for namespace in plain_entries(&tasks) {
                let path = tasks.join(&namespace).join(id).join("config.json");
                if fs::symlink_metadata(&path).is_err() {
                    continue;
                }
                if namespace == "moby" {
                    return self.docker(id).map(|names| (Runtime::Docker, names));
                }
                let annotations = read_annotations(&path).map_err(|e| format!("containerd: {e}"))?;
                return Ok((Runtime::Containerd, containerd_names(&annotations)));
            }
        }
        Err(format!(
            "containerd: {}: no such file",
            self.root
                .join(CONTAINERD_STATES[0])
                .join("io.containerd.runtime.v2.task/*")
                .join(short_id(id))
                .join("config.json")
                .display()
        ))
    }

    /// CRI-O and podman: containers-storage's record of the container, and the spec CRI-O
    /// writes beside it; the spec's `io.container.manager`, else CRI-O's metadata, says which
    /// made it. `rootless`: also search rootless users' storage (podman's).
    fn containers_storage(
        &mut self,
        id: &str,
        label: &str,
        rootless: bool,
    ) -> Result<(Runtime, ContainerNames), String> {
        let graph = self.root.join(STORAGE_GRAPH);
        let run = self.root.join(STORAGE_RUN);
        let drivers = storage_drivers(&[&graph, &run]);
        let spec = drivers
            .iter()
            .flat_map(|driver| [&run, &graph].map(|dir| dir.join(driver).join(id)))
            .map(|dir| dir.join("userdata/config.json"))
            .find(|path| fs::symlink_metadata(path).is_ok())
            .map(|path| read_annotations(&path));
        let mut lists = Vec::new();
        for driver in &drivers {
            lists.push(graph.join(driver).join("containers.json"));
            lists.push(graph.join(driver).join("volatile-containers.json"));
            lists.push(run.join(driver).join("volatile-containers.json"));
        }
        let mut found = self.search_lists(&lists, None, id);
        if rootless && !matches!(found, Ok(Some(_))) {
            if let Some(entry) = self.rootless_entry(id) {
                found = Ok(Some(entry));
            }
        }
        let annotations = match spec {
            Some(Ok(annotations)) => annotations,
            Some(Err(why)) if !matches!(found, Ok(Some(_))) => return Err(format!("{label}: {why}")),
            _ => HashMap::new(),
        };
        let entry = match found {
            Ok(Some(entry)) => entry,
            _ if !annotations.is_empty() => StorageEntry::default(),
            Ok(None) => {
                return Err(format!(
                    "{label}: no container {} in {}",
                    short_id(id),
                    lists[0].display()
                ))
            }
            Err(why) => return Err(format!("{label}: {why}")),
        };
        Ok(storage_names(&annotations, &entry))
    }

    /// Container `id`'s record in a rootless podman user's storage: the first home directory
    /// under `/home` whose lists have it (a list must be owned by the home's owner).
    fn rootless_entry(&mut self, id: &str) -> Option<StorageEntry> {
        let homes = self.root.join("home");
        for user in plain_entries(&homes) {
            let home = homes.join(&user);
            let Ok(owner) = fs::metadata(&home).map(|m| m.uid()) else {
                continue;
            };
            let graph = home.join(ROOTLESS_GRAPH);
            let lists: Vec<PathBuf> = storage_drivers(&[&graph])
                .iter()
                .flat_map(|driver| {
                    ["containers.json", "volatile-containers.json"].map(|list| graph.join(driver).join(list))
                })
                .collect();
            if let Ok(Some(entry)) = self.search_lists(&lists, Some(owner), id) {
                return Some(entry);
            }
        }
        None
    }

    /// The record of container `id` in the first of `lists` that has it: `Ok(None)` when a
    /// list was read and none has it, an error when none could be read (the first list's
    /// error when none exists).
    fn search_lists(
        &mut self,
        lists: &[PathBuf],
        owner: Option<u32>,
        id: &str,
    ) -> Result<Option<StorageEntry>, String> {
        let mut read_one = false;
        let mut first_error = None;
        for path in lists {
            match self.list_entry(path, owner, id) {
                Ok(Some(entry)) => return Ok(Some(entry)),
                Ok(None) => read_one = true,
                Err(e) if e.missing => {}
                Err(e) => {
                    first_error.get_or_insert_with(|| e.to_string());
                }
            }
        }
        match first_error {
            Some(why) if !read_one => Err(why),
            _ if read_one => Ok(None),
            _ => Err(format!(
                "{}: no such file",
                lists
                    .first()
                    .map_or_else(String::new, |path| path.display().to_string())
            )),
        }
    }

    /// Container `id`'s record in one containers-storage list, read again when it has changed
    /// since it was read without the container.
    fn list_entry(&mut self, path: &Path, owner: Option<u32>, id: &str) -> Result<Option<StorageEntry>, FileError> {
        if let Some(list) = self.lists.get(path) {
            if let Ok(entries) = &list.entries {
                if let Some(entry) = entries.get(id) {
                    return Ok(Some(entry.clone()));
                }
            }
            let now = fs::symlink_metadata(path).map_err(|e| FileError::new(path, &e))?;
            if Stamp::of(&now) == list.stamp {
                return match &list.entries {
                    Ok(_) => Ok(None),
                    Err(why) => Err(FileError::other(path, why.clone())),
                };
            }
        }
        let (bytes, stamp) = read_state(path, owner)?;
        let entries = serde_json::from_slice::<StorageEntries>(&bytes)
            .map(|list| list.0)
            .map_err(|e| e.to_string());
        drop(bytes);
        let found = match &entries {
            Ok(entries) => Ok(entries.get(id).cloned()),
            Err(why) => Err(FileError::other(path, why.clone())),
        };
        self.lists.insert(path.to_path_buf(), StorageList { stamp, entries });
        found
    }

    /// systemd-nspawn: the machine's name is the id; its image is its directory or raw image
    /// under `/var/lib/machines`, when there is one.
    fn nspawn(&self, id: &str) -> ContainerNames {
        let machines = self.root.join("var/lib/machines");
        let image = [id.to_string(), format!("{id}.raw")]
            .into_iter()
            .find(|image| fs::symlink_metadata(machines.join(image)).is_ok())
            .map(|image| format!("/var/lib/machines/{image}"))
            .unwrap_or_default();
        ContainerNames {
            name: id.to_string(),
            image,
            ..ContainerNames::default()
        }
    }
}

/// Which of CRI-O and podman made a containers-storage container (the spec's
/// `io.container.manager`, else whether the metadata is CRI-O's, which names a pod), and the
/// names its spec's annotations and its record give it.
fn storage_names(annotations: &HashMap<String, String>, entry: &StorageEntry) -> (Runtime, ContainerNames) {
    let metadata = entry.metadata();
    let crio = match annotations.get("io.container.manager").map(String::as_str) {
        Some("cri-o") => true,
        Some("libpod") => false,
        _ => !string(metadata.get("pod-id")).is_empty(),
    };
    let stored_name = [string(metadata.get("name")), entry.name.clone()]
        .into_iter()
        .find(|name| !name.is_empty())
        .unwrap_or_default();
    let stored = ContainerNames {
        name: stored_name.clone(),
        image: string(metadata.get("image-name")),
        ..ContainerNames::default()
    };
    if !crio {
        return (Runtime::Podman, stored.or(kube_labels(annotations)));
    }
    // CRI-O's `Image` is what was asked for, which may be an image's id; `ImageName` is one
    // of the image's names.
    let spec_image = ["io.kubernetes.cri-o.ImageName", "io.kubernetes.cri-o.Image"]
        .into_iter()
        .filter_map(|key| annotations.get(key))
        .find(|image| !image.is_empty() && !is_image_id(image))
        .cloned()
        .unwrap_or_default();
    let from_spec = ContainerNames {
        image: spec_image,
        ..kube_labels(annotations)
    };
    let spec_name = annotations
        .get("io.kubernetes.cri-o.ContainerName")
        .map_or("", String::as_str);
    let from_metadata = ContainerNames {
        name: string(metadata.get("metadata-name")),
        ..ContainerNames::default()
    };
    let names = from_spec
        .or(kubelet_name(spec_name))
        .or(kubelet_name(&stored_name))
        .or(from_metadata)
        .or(stored);
    (Runtime::CriO, names)
}

/// The names the CRI plugin (Kubernetes) or nerdctl gave a containerd container.
fn containerd_names(annotations: &HashMap<String, String>) -> ContainerNames {
    let get = |key: &str| annotations.get(key).cloned().unwrap_or_default();
    let mut cri = ContainerNames {
        name: get("io.kubernetes.cri.container-name"),
        image: get("io.kubernetes.cri.image-name"),
        pod_name: get("io.kubernetes.cri.sandbox-name"),
        pod_uid: get("io.kubernetes.cri.sandbox-uid"),
        namespace: get("io.kubernetes.cri.sandbox-namespace"),
    };
    if get("io.kubernetes.cri.container-type") == "sandbox" {
        // The pause container: the kubelet's name for it.
        if cri.name.is_empty() {
            cri.name = "POD".to_string();
        }
        if cri.image.is_empty() {
            cri.image = get("io.kubernetes.cri.podsandbox.image-name");
        }
    }
    let nerdctl = ContainerNames {
        name: get("nerdctl/name"),
        ..ContainerNames::default()
    };
    cri.or(nerdctl).or(kube_labels(annotations))
}

/// The kubelet's labels on a container (Docker's labels, CRI-O's annotations).
fn kube_labels(labels: &HashMap<String, String>) -> ContainerNames {
    let get = |key: &str| labels.get(key).cloned().unwrap_or_default();
    ContainerNames {
        name: get("io.kubernetes.container.name"),
        image: String::new(),
        pod_name: get("io.kubernetes.pod.name"),
        pod_uid: get("io.kubernetes.pod.uid"),
        namespace: get("io.kubernetes.pod.namespace"),
    }
}

/// The names in the kubelet's name for a container,
/// `k8s_<container>_<pod>_<namespace>_<uid>_<attempt>` (none of which holds a `_`: they are
/// DNS names and a uid), as Docker under cri-dockerd and CRI-O name them.
fn kubelet_name(name: &str) -> ContainerNames {
    let parts: Vec<&str> = name
        .strip_prefix("k8s_")
        .map_or_else(Vec::new, |rest| rest.split('_').collect());
    match parts[..] {
        [container, pod, namespace, uid, attempt]
            if !attempt.is_empty() && attempt.bytes().all(|b| b.is_ascii_digit()) =>
        {
            ContainerNames {
                name: container.to_string(),
                image: String::new(),
                pod_name: pod.to_string(),
                pod_uid: uid.to_string(),
                namespace: namespace.to_string(),
            }
        }
        _ => ContainerNames::default(),
    }
}

/// Whether an image reference is an image's id (`sha256:<hex>` or 64 hex digits) rather than
/// a name.
fn is_image_id(image: &str) -> bool {
    let hex = image.strip_prefix("sha256:").unwrap_or(image);
    hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_hexdigit())
}

/// The `*-containers` directories (one per storage driver: `overlay-containers`,
/// `vfs-containers`, ...) in any of `dirs`; `overlay-containers`, the default, when there is none.
fn storage_drivers(dirs: &[&Path]) -> Vec<String> {
    let mut drivers: Vec<String> = Vec::new();
    for dir in dirs {
        for name in plain_entries(dir) {
            if name.ends_with("-containers") && !drivers.contains(&name) {
                drivers.push(name);
            }
        }
    }
    if drivers.is_empty() {
        drivers.push("overlay-containers".to_string());
    }
    drivers.sort();
    drivers
}

/// The names in directory `dir` (none when it cannot be read) that are plain path components,
/// at most [`MAX_SCAN`] of them, sorted.
fn plain_entries(dir: &Path) -> Vec<String> {
    let Ok(entries) = fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut names: Vec<String> = entries
        .take(MAX_SCAN)
        .filter_map(|entry| entry.ok()?.file_name().into_string().ok())
        .filter(|name| is_plain_name(name))
        .collect();
    names.sort();
    names
}

/// Whether `name` is one path component, so joining it to a directory stays in it.
fn is_plain_name(name: &str) -> bool {
    !name.is_empty() && name.len() <= 255 && name != "." && name != ".." && !name.contains(['/', '\0'])
}

/// An OCI spec's annotations: the string ones.
fn read_annotations(path: &Path) -> Result<HashMap<String, String>, FileError> {
    let (bytes, _) = read_state(path, None)?;
    let spec: OciSpec = serde_json::from_slice(&bytes).map_err(|e| FileError::other(path, e.to_string()))?;
    Ok(string_map(Some(&spec.annotations)))
}

/// A JSON string's value; empty for anything else.
fn string(value: Option<&Value>) -> String {
    value.and_then(Value::as_str).unwrap_or_default().to_string()
}

/// A JSON object's string members; empty for anything else.
fn string_map(value: Option<&Value>) -> HashMap<String, String> {
    value
        .and_then(Value::as_object)
        .map(|object| {
            object
                .iter()
                .filter_map(|(key, value)| Some((key.clone(), value.as_str()?.to_string())))
                .collect()
        })
        .unwrap_or_default()
}

/// `s` cut to [`MAX_FIELD`] bytes, at a character boundary.
fn cap(mut s: String) -> String {
    if s.len() > MAX_FIELD {
        let mut end = MAX_FIELD;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        s.truncate(end);
    }
    s
}

/// `s` with its control characters escaped, so an error is one line whatever a path held.
fn one_line(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_control() {
                c.escape_debug().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// A state file that could not be read.
#[derive(Debug)]
struct FileError {
    /// Its path.
    path: PathBuf,
    /// Why, in a few words.
    why: String,
    /// Whether it does not exist (normal for most of the files looked for).
    missing: bool,
}

impl FileError {
    fn new(path: &Path, e: &io::Error) -> FileError {
        let why = match e.kind() {
            io::ErrorKind::NotFound => "no such file".to_string(),
            io::ErrorKind::PermissionDenied => "permission denied".to_string(),
            _ if e.raw_os_error() == Some(libc::ELOOP) => "a symbolic link, not followed".to_string(),
            _ => e.to_string(),
        };
        FileError {
            path: path.to_path_buf(),
            why,
            missing: e.kind() == io::ErrorKind::NotFound,
        }
    }

    fn other(path: &Path, why: String) -> FileError {
        FileError {
            path: path.to_path_buf(),
            why,
            missing: false,
        }
    }
}

impl fmt::Display for FileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path.display(), self.why)
    }
}

/// What says a file changed: a runtime replaces its state files by renaming a new one over
/// them (a new inode), or rewrites them (a new size or modification time).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Stamp {
    dev: u64,
    ino: u64,
    len: u64,
    mtime: i64,
    mtime_nsec: i64,
}

impl Stamp {
    fn of(metadata: &Metadata) -> Stamp {
        Stamp {
            dev: metadata.dev(),
            ino: metadata.ino(),
            len: metadata.len(),
            mtime: metadata.mtime(),
            mtime_nsec: metadata.mtime_nsec(),
        }
    }
}

/// The bytes of state file `path`, and its stamp: opened without following a symbolic link
/// or blocking on a FIFO, a regular file of at most [`MAX_STATE_FILE`] bytes, owned by
/// `owner` when given.
fn read_state(path: &Path, owner: Option<u32>) -> Result<(Vec<u8>, Stamp), FileError> {
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| FileError::new(path, &e))?;
    let metadata = file.metadata().map_err(|e| FileError::new(path, &e))?;
    if !metadata.is_file() {
        return Err(FileError::other(path, "not a regular file".to_string()));
    }
    if let Some(owner) = owner {
        if metadata.uid() != owner {
            return Err(FileError::other(
                path,
                format!("owned by uid {}, not {owner}", metadata.uid()),
            ));
        }
    }
    let too_big = || FileError::other(path, format!("over {} MiB", MAX_STATE_FILE >> 20));
    if metadata.len() > MAX_STATE_FILE {
        return Err(too_big());
    }
    let mut bytes = Vec::with_capacity(usize::try_from(metadata.len()).unwrap_or(0));
    Read::take(&file, MAX_STATE_FILE + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| FileError::new(path, &e))?;
    if bytes.len() as u64 > MAX_STATE_FILE {
        return Err(too_big());
    }
    Ok((bytes, Stamp::of(&metadata)))
}

/// A containers-storage list as last read.
#[derive(Debug)]
struct StorageList {
    /// The file's stamp when it was read.
    stamp: Stamp,
    /// Its containers by id, or why it could not be parsed.
    entries: Result<HashMap<String, StorageEntry>, String>,
}

/// What a containers-storage list says of one container.
#[derive(Clone, Debug, Default)]
struct StorageEntry {
    /// Its first name.
    name: String,
    /// The metadata its runtime stored, a JSON string (empty when too long).
    metadata: String,
}

impl StorageEntry {
    /// The entry of a list's element, `None` for one with no id.
    fn from_value(value: &Value) -> Option<(String, StorageEntry)> {
        let id = value.get("id")?.as_str()?.to_string();
        let name = value
            .get("names")
            .and_then(Value::as_array)
            .and_then(|names| names.iter().find_map(Value::as_str))
            .unwrap_or_default()
            .to_string();
        let metadata = string(value.get("metadata"));
        let metadata = if metadata.len() <= MAX_METADATA {
            metadata
        } else {
            String::new()
        };
        Some((id, StorageEntry { name, metadata }))
    }

    /// Its metadata's members (none when it is not a JSON object).
    fn metadata(&self) -> serde_json::Map<String, Value> {
        match serde_json::from_str(&self.metadata) {
            Ok(Value::Object(members)) => members,
            _ => serde_json::Map::new(),
        }
    }
}

/// A containers-storage list (`containers.json`): a JSON array of containers, each read
/// alone so that one odd element does not hide the others, and the rest of each skipped.
struct StorageEntries(HashMap<String, StorageEntry>);

impl<'de> Deserialize<'de> for StorageEntries {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<StorageEntries, D::Error> {
        struct List;
        impl<'de> Visitor<'de> for List {
            type Value = StorageEntries;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a list of containers")
            }

            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<StorageEntries, A::Error> {
                let mut entries = HashMap::new();
                while let Some(element) = seq.next_element::<Value>()? {
                    if let Some((id, entry)) = StorageEntry::from_value(&element) {
                        // containers-storage keeps the first of two records of an id.
                        entries.entry(id).or_insert(entry);
                    }
                }
                Ok(StorageEntries(entries))
            }
        }
        deserializer.deserialize_seq(List)
    }
}

/// The part of an OCI runtime spec (`config.json`) read: its annotations.
#[derive(Deserialize)]
struct OciSpec {
    #[serde(default)]
    annotations: Value,
}

/// The part of Docker's `config.v2.json` read.
#[derive(Deserialize)]
struct DockerConfig {
    /// `/<name>`.
    #[serde(rename = "Name", default)]
    name: Value,
    /// The container's config: `Image` (as asked for), `Labels`.
    #[serde(rename = "Config", default)]
    config: Value,
    /// The image's id.
    #[serde(rename = "Image", default)]
    image: Value,
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs::File;
    use std::time::{Duration, SystemTime};

    const ID_A: &str = "2403362161e98f64d58f898b6597f61f7f67980c2f76775f1cd653b7e93da495";
    const ID_B: &str = "89d26dfd95eb428832ff07cbad99ac5463a3d83475f61e786119ca06c2a81625";

    fn write(root: &Path, path: &str, text: &str) -> PathBuf {
        let path = root.join(path);
        fs::create_dir_all(path.parent().expect("a parent")).expect("mkdir");
        fs::write(&path, text).expect("write");
        path
    }

    fn names(name: &str, image: &str, pod: &str, uid: &str, namespace: &str) -> ContainerNames {
        ContainerNames {
            name: name.to_string(),
            image: image.to_string(),
            pod_name: pod.to_string(),
            pod_uid: uid.to_string(),
            namespace: namespace.to_string(),
        }
    }

    /// A podman container's record, as podman 4.3 writes it (metadata is a JSON string).
    fn podman_record(id: &str, name: &str) -> String {
        let metadata = format!(
            r#"{{"image-name":"localhost/bb:latest","image-id":"c126b291c4f8ebfe32165c9e3760853836ad41369e4baca19e61976e4a166709","name":"{name}","created-at":1796689278}}"#
        );
        format!(
            r#"{{"id":"{id}","names":["{name}"],"image":"c126b291c4f8ebfe32165c9e3760853836ad41369e4baca19e61976e4a166709","layer":"4161acb0ba099b64cd5b30a28aa3531033ebb69486a6bf16506f6f9678caea48","metadata":{},"created":"2026-12-08T00:21:18.172477798Z","flags":{{"MountLabel":"","ProcessLabel":""}}}}"#,
            serde_json::to_string(&metadata).expect("a string")
        )
    }

    #[test]
    fn docker_names_and_kubernetes_labels() {
        let root = tempfile::tempdir().expect("tempdir");
        write(
            root.path(),
            &format!("var/lib/docker/containers/{ID_A}/config.v2.json"),
            r#"{"StreamConfig":{},"State":{"Running":true,"Pid":4242},"ID":"2403362161e9",
               "Path":"nginx","Args":["-g","daemon off;"],
               "Config":{"Hostname":"2403362161e9","Env":["PATH=/usr/bin"],"Cmd":null,
                         "Image":"nginx:1.25","Labels":{"maintainer":"NGINX"}},
               "Image":"sha256:a8758716bb6aa4d90071160d27028fe4eaee7ce8166221a97d30440c8eac2be6",
               "Name":"/web","Driver":"overlay2","RestartCount":0}"#,
        );
        write(
            root.path(),
            &format!("var/lib/docker/containers/{ID_B}/config.v2.json"),
            r#"{"Name":"/k8s_app_web-5d8f_shop_8e1f2c3a-1111-2222-3333-444455556666_0",
               "Config":{"Image":"registry.k8s.io/app@sha256:00","Labels":{
                 "io.kubernetes.container.name":"app","io.kubernetes.pod.name":"web-5d8f",
                 "io.kubernetes.pod.namespace":"shop",
                 "io.kubernetes.pod.uid":"8e1f2c3a-1111-2222-3333-444455556666",
                 "io.kubernetes.docker.type":"container"}}}"#,
        );
        let mut resolver = Resolver::with_root(root.path());
        assert_eq!(
            resolver.resolve(Runtime::Docker, ID_A),
            Ok((Runtime::Docker, names("web", "nginx:1.25", "", "", "")))
        );
        let uid = "8e1f2c3a-1111-2222-3333-444455556666";
        let k8s = names("app", "registry.k8s.io/app@sha256:00", "web-5d8f", uid, "shop");
        assert_eq!(
            resolver.resolve(Runtime::Docker, ID_B),
            Ok((Runtime::Docker, k8s.clone()))
        );
        // Kubernetes' cgroupfs driver names no runtime: Docker's file is found first.
        assert_eq!(resolver.resolve(Runtime::Unknown, ID_B), Ok((Runtime::Docker, k8s)));
    }

    #[test]
    fn docker_data_root_from_daemon_json() {
        let root = tempfile::tempdir().expect("tempdir");
        write(
            root.path(),
            "etc/docker/daemon.json",
            r#"{"data-root": "/srv/docker", "log-driver": "local"}"#,
        );
        write(
            root.path(),
            &format!("srv/docker/containers/{ID_A}/config.v2.json"),
            r#"{"Name":"/db","Config":{"Image":"postgres:16"}}"#,
        );
        let mut resolver = Resolver::with_root(root.path());
        assert_eq!(
            resolver.resolve(Runtime::Docker, ID_A),
            Ok((Runtime::Docker, names("db", "postgres:16", "", "", "")))
        );
    }

    #[test]
    fn containerd_cri_and_nerdctl() {
        let root = tempfile::tempdir().expect("tempdir");
        // The CRI plugin's annotations (containerd's pkg/cri/annotations), on a spec shaped
        // like the bundle's config.json.
        write(
            root.path(),
            &format!("run/containerd/io.containerd.runtime.v2.task/k8s.io/{ID_A}/config.json"),
            r#"{"ociVersion":"1.1.0","process":{"args":["/coredns"]},"root":{"path":"rootfs"},
               "annotations":{
                 "io.kubernetes.cri.container-name":"coredns",
                 "io.kubernetes.cri.container-type":"container",
                 "io.kubernetes.cri.image-name":"registry.k8s.io/coredns/coredns:v1.11.1",
                 "io.kubernetes.cri.sandbox-id":"7a0d058477e280604ae02de6a016959e8a05fcd3165c47af41eabcf205b55517",
                 "io.kubernetes.cri.sandbox-name":"coredns-76f75df574-abcde",
                 "io.kubernetes.cri.sandbox-namespace":"kube-system",
                 "io.kubernetes.cri.sandbox-uid":"de7c6a0c-79c0-44dc-a099-69bb39f180af"},
               "linux":{"cgroupsPath":"kubepods-burstable-podde7c6a0c.slice:cri-containerd:2403"}}"#,
        );
        write(
            root.path(),
            &format!("run/k3s/containerd/io.containerd.runtime.v2.task/default/{ID_B}/config.json"),
            r#"{"ociVersion":"1.1.0","annotations":{"nerdctl/name":"cache","nerdctl/namespace":"default",
               "nerdctl/networks":"[\"bridge\"]","nerdctl/platform":"linux/amd64"}}"#,
        );
        let mut resolver = Resolver::with_root(root.path());
        let uid = "de7c6a0c-79c0-44dc-a099-69bb39f180af";
        let coredns = names(
            "coredns",
            "registry.k8s.io/coredns/coredns:v1.11.1",
            "coredns-76f75df574-abcde",
            uid,
            "kube-system",
        );
        assert_eq!(
            resolver.resolve(Runtime::Containerd, ID_A),
            Ok((Runtime::Containerd, coredns.clone()))
        );
        assert_eq!(
            resolver.resolve(Runtime::Unknown, ID_A),
            Ok((Runtime::Containerd, coredns))
        );
        assert_eq!(
            resolver.resolve(Runtime::Containerd, ID_B),
            Ok((Runtime::Containerd, names("cache", "", "", "", "")))
        );
    }

    #[test]
    fn containerd_sandbox_and_docker_namespace() {
        let root = tempfile::tempdir().expect("tempdir");
        write(
            root.path(),
            &format!("run/containerd/io.containerd.runtime.v2.task/k8s.io/{ID_A}/config.json"),
            r#"{"annotations":{"io.kubernetes.cri.container-type":"sandbox",
               "io.kubernetes.cri.podsandbox.image-name":"registry.k8s.io/pause:3.9",
               "io.kubernetes.cri.sandbox-name":"web","io.kubernetes.cri.sandbox-namespace":"default",
               "io.kubernetes.cri.sandbox-uid":"u1"}}"#,
        );
        // Docker runs its containers through containerd, in namespace "moby".
        write(
            root.path(),
            &format!("run/containerd/io.containerd.runtime.v2.task/moby/{ID_B}/config.json"),
            r#"{"ociVersion":"1.1.0","annotations":{}}"#,
        );
        write(
            root.path(),
            &format!("var/lib/docker/containers/{ID_B}/config.v2.json"),
            r#"{"Name":"/web","Config":{"Image":"nginx"}}"#,
        );
        let mut resolver = Resolver::with_root(root.path());
        assert_eq!(
            resolver.resolve(Runtime::Containerd, ID_A),
            Ok((
                Runtime::Containerd,
                names("POD", "registry.k8s.io/pause:3.9", "web", "u1", "default")
            ))
        );
        assert_eq!(
            resolver.resolve(Runtime::Containerd, ID_B),
            Ok((Runtime::Docker, names("web", "nginx", "", "", "")))
        );
    }

    #[test]
    fn podman_from_containers_json() {
        let root = tempfile::tempdir().expect("tempdir");
        write(
            root.path(),
            "var/lib/containers/storage/overlay-containers/containers.json",
            &format!("[{},{}]", podman_record(ID_A, "web"), podman_record(ID_B, "db")),
        );
        // Podman's spec (graph root's userdata), as podman 4.3 writes it.
        write(
            root.path(),
            &format!("var/lib/containers/storage/overlay-containers/{ID_A}/userdata/config.json"),
            r#"{"ociVersion":"1.0.2-dev","annotations":{"io.container.manager":"libpod",
               "io.kubernetes.cri-o.Created":"2026-12-08T00:21:18.154684009Z","io.kubernetes.cri-o.TTY":"false",
               "io.podman.annotations.autoremove":"FALSE","org.opencontainers.image.stopSignal":"15"}}"#,
        );
        let mut resolver = Resolver::with_root(root.path());
        let web = names("web", "localhost/bb:latest", "", "", "");
        assert_eq!(
            resolver.resolve(Runtime::Podman, ID_A),
            Ok((Runtime::Podman, web.clone()))
        );
        assert_eq!(
            resolver.resolve(Runtime::Podman, ID_B),
            Ok((Runtime::Podman, names("db", "localhost/bb:latest", "", "", "")))
        );
        // The spec says podman made it, whatever the cgroup path said.
        assert_eq!(
            resolver.resolve(Runtime::CriO, ID_A),
            Ok((Runtime::Podman, web.clone()))
        );
        assert_eq!(resolver.resolve(Runtime::Unknown, ID_A), Ok((Runtime::Podman, web)));
    }

    #[test]
    fn podman_vfs_volatile_and_rootless() {
        let root = tempfile::tempdir().expect("tempdir");
        write(
            root.path(),
            "var/lib/containers/storage/vfs-containers/containers.json",
            "[]",
        );
        write(
            root.path(),
            "var/lib/containers/storage/vfs-containers/volatile-containers.json",
            &format!("[{}]", podman_record(ID_A, "tmp")),
        );
        write(
            root.path(),
            "home/alice/.local/share/containers/storage/overlay-containers/containers.json",
            &format!("[{}]", podman_record(ID_B, "toolbox")),
        );
        let mut resolver = Resolver::with_root(root.path());
        assert_eq!(
            resolver.resolve(Runtime::Podman, ID_A),
            Ok((Runtime::Podman, names("tmp", "localhost/bb:latest", "", "", "")))
        );
        assert_eq!(
            resolver.resolve(Runtime::Podman, ID_B),
            Ok((Runtime::Podman, names("toolbox", "localhost/bb:latest", "", "", "")))
        );
        // A rootless user's storage is podman's: CRI-O's lookup does not go there.
        assert!(resolver.resolve(Runtime::CriO, ID_B).is_err());
    }

    #[test]
    fn rootless_list_owned_by_someone_else_is_refused() {
        let root = tempfile::tempdir().expect("tempdir");
        write(
            root.path(),
            "var/lib/containers/storage/overlay-containers/containers.json",
            "[]",
        );
        let list = write(
            root.path(),
            "home/bob/.local/share/containers/storage/overlay-containers/containers.json",
            &format!("[{}]", podman_record(ID_A, "x")),
        );
        // Only root may give a file away; elsewhere there is nothing to test.
        let me = fs::metadata(&list).expect("stat").uid();
        if std::os::unix::fs::chown(&list, Some(me + 1), None).is_err() {
            return;
        }
        let why = Resolver::with_root(root.path())
            .resolve(Runtime::Podman, ID_A)
            .expect_err("someone else's file");
        assert!(why.starts_with("podman: no container 2403362161e9 in "), "{why}");
    }

    #[test]
    fn crio_from_its_spec_and_its_metadata() {
        let root = tempfile::tempdir().expect("tempdir");
        let uid = "8e1f2c3a-1111-2222-3333-444455556666";
        // CRI-O's RuntimeContainerMetadata (cri-o internal/storage/runtime.go): uid and
        // namespace are set for a pod's sandbox only.
        let metadata = serde_json::json!({
            "pod-name": format!("k8s_web-5d8f_shop_{uid}_0"),
            "pod-id": "7a0d058477e280604ae02de6a016959e8a05fcd3165c47af41eabcf205b55517",
            "image-name": "quay.io/shop/app:2.1",
            "image-id": "c126b291c4f8ebfe32165c9e3760853836ad41369e4baca19e61976e4a166709",
            "name": format!("k8s_app_web-5d8f_shop_{uid}_0"),
            "metadata-name": "app",
            "created-at": 1796689278,
        });
        let record = |id: &str| {
            serde_json::json!({
                "id": id,
                "names": [format!("k8s_app_web-5d8f_shop_{uid}_0")],
                "image": "c126b291c4f8ebfe32165c9e3760853836ad41369e4baca19e61976e4a166709",
                "layer": "4161acb0ba099b64cd5b30a28aa3531033ebb69486a6bf16506f6f9678caea48",
                "metadata": metadata.to_string(),
                "flags": {"MountLabel": "", "Volatile": true},
            })
        };
        // CRI-O's containers are volatile: newer containers-storage keeps them apart.
        write(
            root.path(),
            "var/lib/containers/storage/overlay-containers/volatile-containers.json",
            &serde_json::json!([record(ID_A), record(ID_B)]).to_string(),
        );
        // The spec in the run root (the bundle conmon hands the OCI runtime): the kubelet's
        // labels become annotations (cri-o server/container_create_linux.go).
        write(
            root.path(),
            &format!("run/containers/storage/overlay-containers/{ID_A}/userdata/config.json"),
            &serde_json::json!({"ociVersion": "1.0.2-dev", "annotations": {
                "io.container.manager": "cri-o",
                "io.kubernetes.container.name": "app",
                "io.kubernetes.pod.name": "web-5d8f",
                "io.kubernetes.pod.namespace": "shop",
                "io.kubernetes.pod.uid": uid,
                "io.kubernetes.cri-o.ContainerType": "container",
                "io.kubernetes.cri-o.ContainerName": format!("k8s_app_web-5d8f_shop_{uid}_0"),
                "io.kubernetes.cri-o.Image": "c126b291c4f8ebfe32165c9e3760853836ad41369e4baca19e61976e4a166709",
                "io.kubernetes.cri-o.ImageName": "quay.io/shop/app:2.1",
                "io.kubernetes.cri-o.Labels": "{\"io.kubernetes.container.name\":\"app\"}",
            }})
            .to_string(),
        );
        let mut resolver = Resolver::with_root(root.path());
        let app = names("app", "quay.io/shop/app:2.1", "web-5d8f", uid, "shop");
        assert_eq!(resolver.resolve(Runtime::CriO, ID_A), Ok((Runtime::CriO, app.clone())));
        assert_eq!(
            resolver.resolve(Runtime::Unknown, ID_A),
            Ok((Runtime::CriO, app.clone()))
        );
        // No spec (the run root is gone): the metadata and the kubelet's name say it all.
        assert_eq!(resolver.resolve(Runtime::CriO, ID_B), Ok((Runtime::CriO, app)));
    }

    #[test]
    fn nspawn_machine() {
        let root = tempfile::tempdir().expect("tempdir");
        fs::create_dir_all(root.path().join("var/lib/machines/debian")).expect("mkdir");
        let mut resolver = Resolver::with_root(root.path());
        assert_eq!(
            resolver.resolve(Runtime::Nspawn, "debian"),
            Ok((Runtime::Nspawn, names("debian", "/var/lib/machines/debian", "", "", "")))
        );
        assert_eq!(
            resolver.resolve(Runtime::Nspawn, "build-42"),
            Ok((Runtime::Nspawn, names("build-42", "", "", "", "")))
        );
    }

    #[test]
    fn missing_state_names_the_path() {
        let root = tempfile::tempdir().expect("tempdir");
        let mut resolver = Resolver::with_root(root.path());
        let at = root.path().display();
        assert_eq!(
            resolver.resolve(Runtime::Podman, ID_A),
            Err(format!(
                "podman: {at}/var/lib/containers/storage/overlay-containers/containers.json: no such file"
            ))
        );
        assert_eq!(
            resolver.resolve(Runtime::Docker, ID_A),
            Err(format!(
                "docker: {at}/var/lib/docker/containers/{ID_A}/config.v2.json: no such file"
            ))
        );
        assert_eq!(
            resolver.resolve(Runtime::Containerd, ID_A),
            Err(format!(
                "containerd: {at}/run/containerd/io.containerd.runtime.v2.task/*/2403362161e9/config.json: no such file"
            ))
        );
        let why = resolver.resolve(Runtime::Unknown, ID_A).expect_err("nothing there");
        assert!(why.starts_with("docker: ") && why.contains("; containerd: ") && why.contains("; cri-o/podman: "));
        assert!(!why.contains('\n'));
        // A container the list does not have.
        write(
            root.path(),
            "var/lib/containers/storage/overlay-containers/containers.json",
            "[]",
        );
        assert_eq!(
            resolver.resolve(Runtime::Podman, ID_A),
            Err(format!(
                "podman: no container 2403362161e9 in {at}/var/lib/containers/storage/overlay-containers/containers.json"
            ))
        );
    }

    #[test]
    fn ids_that_are_paths_are_refused() {
        let mut resolver = Resolver::with_root(Path::new("/nonexistent"));
        for id in ["", ".", "..", "../../etc/passwd", "a/b", "a\0b"] {
            let why = resolver.resolve(Runtime::Docker, id).expect_err(id);
            assert!(why.contains("is not a container id"), "{why}");
        }
        let why = resolver.resolve(Runtime::Nspawn, "x\ny/z").expect_err("a path");
        assert!(!why.contains('\n'), "{why}");
    }

    #[test]
    fn hostile_json_is_an_error_or_unknown_never_a_panic() {
        let root = tempfile::tempdir().expect("tempdir");
        let list = "var/lib/containers/storage/overlay-containers/containers.json";
        let mut resolver = Resolver::with_root(root.path());
        let deep = "[".repeat(100_000);
        for (text, what) in [
            ("", "EOF"),
            ("{\"id\": 1}", "a list"),
            (deep.as_str(), "recursion"),
            ("[{\"id\":\"\\ud800\"}]", "escape"),
            ("[1, 2", "EOF"),
        ] {
            write(root.path(), list, text);
            let why = resolver.resolve(Runtime::Podman, ID_A).expect_err(what);
            assert!(why.starts_with("podman: ") && why.contains(what), "{what}: {why}");
        }
        // Odd elements and fields of the wrong type read as unknown; the rest still resolves.
        let long = "n".repeat(10_000);
        write(
            root.path(),
            list,
            &serde_json::json!([
                7, null, {"id": 5}, {"names": ["x"]},
                {"id": ID_A, "names": [1, long, "second"], "metadata": "{not json"},
                {"id": ID_B, "names": "db", "metadata": {"image-name": 3}},
            ])
            .to_string(),
        );
        let (runtime, a) = resolver.resolve(Runtime::Podman, ID_A).expect("still resolves");
        assert_eq!(
            (runtime, a.name.len(), a.image.as_str()),
            (Runtime::Podman, MAX_FIELD, "")
        );
        assert_eq!(
            resolver.resolve(Runtime::Podman, ID_B),
            Ok((Runtime::Podman, ContainerNames::default()))
        );
        // A spec whose annotations are not strings, a Docker config of the wrong shape.
        write(
            root.path(),
            &format!("run/containerd/io.containerd.runtime.v2.task/k8s.io/{ID_A}/config.json"),
            r#"{"annotations":{"io.kubernetes.cri.container-name":["x"],"nerdctl/name":"ok"}}"#,
        );
        assert_eq!(
            resolver.resolve(Runtime::Containerd, ID_A),
            Ok((Runtime::Containerd, names("ok", "", "", "", "")))
        );
        write(
            root.path(),
            &format!("var/lib/docker/containers/{ID_A}/config.v2.json"),
            r#"{"Name":{"a":1},"Config":null,"Image":7}"#,
        );
        assert_eq!(
            resolver.resolve(Runtime::Docker, ID_A),
            Ok((Runtime::Docker, ContainerNames::default()))
        );
        write(
            root.path(),
            &format!("var/lib/docker/containers/{ID_A}/config.v2.json"),
            r#"{"Name":"/a","Name":"/b"}"#,
        );
        let why = resolver.resolve(Runtime::Docker, ID_A).expect_err("duplicate field");
        assert!(why.contains("duplicate field"), "{why}");
    }

    #[test]
    fn huge_fifo_and_symlinked_state_is_not_read() {
        let root = tempfile::tempdir().expect("tempdir");
        let mut resolver = Resolver::with_root(root.path());
        let list = write(
            root.path(),
            "var/lib/containers/storage/overlay-containers/containers.json",
            "",
        );
        File::options()
            .write(true)
            .open(&list)
            .and_then(|file| file.set_len(MAX_STATE_FILE + 1))
            .expect("a sparse file");
        let why = resolver.resolve(Runtime::Podman, ID_A).expect_err("too big");
        assert!(why.ends_with("containers.json: over 64 MiB"), "{why}");

        // A FIFO would block a plain open.
        let config = root
            .path()
            .join(format!("var/lib/docker/containers/{ID_A}/config.v2.json"));
        fs::create_dir_all(config.parent().expect("a parent")).expect("mkdir");
        let c_path = std::ffi::CString::new(config.as_os_str().as_encoded_bytes()).expect("no NUL");
        // SAFETY: `c_path` is a NUL-terminated path that outlives the call.
        assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0);
        let why = resolver.resolve(Runtime::Docker, ID_A).expect_err("a FIFO");
        assert!(why.ends_with("config.v2.json: not a regular file"), "{why}");

        let secret = write(root.path(), "secret.json", r#"{"annotations":{"nerdctl/name":"leak"}}"#);
        let spec = root.path().join(format!(
            "run/containerd/io.containerd.runtime.v2.task/default/{ID_A}/config.json"
        ));
        fs::create_dir_all(spec.parent().expect("a parent")).expect("mkdir");
        std::os::unix::fs::symlink(&secret, &spec).expect("symlink");
        let why = resolver.resolve(Runtime::Containerd, ID_A).expect_err("a symlink");
        assert!(why.ends_with("config.json: a symbolic link, not followed"), "{why}");
    }

    #[test]
    fn a_container_started_later_is_found_on_the_next_miss() {
        let root = tempfile::tempdir().expect("tempdir");
        let list = write(
            root.path(),
            "var/lib/containers/storage/overlay-containers/containers.json",
            &format!("[{}]", podman_record(ID_A, "first")),
        );
        let set_mtime = |when: SystemTime| {
            File::options()
                .write(true)
                .open(&list)
                .and_then(|file| file.set_modified(when))
                .expect("set mtime");
        };
        let then = SystemTime::now() - Duration::from_secs(60);
        set_mtime(then);
        let mut resolver = Resolver::with_root(root.path());
        assert!(resolver.resolve(Runtime::Podman, ID_A).is_ok());
        assert!(resolver.resolve(Runtime::Podman, ID_B).is_err());

        // Rewritten in place to the same size and time: the list is not read again.
        fs::write(&list, format!("[{}]", podman_record(ID_B, "first"))).expect("rewrite");
        set_mtime(then);
        assert!(resolver.resolve(Runtime::Podman, ID_B).is_err());
        // The cached container still resolves without reading.
        assert_eq!(
            resolver.resolve(Runtime::Podman, ID_A).map(|(_, n)| n.name),
            Ok("first".into())
        );

        // A newer time: the miss reads it again.
        fs::write(
            &list,
            format!("[{},{}]", podman_record(ID_A, "first"), podman_record(ID_B, "second")),
        )
        .expect("rewrite");
        set_mtime(SystemTime::now());
        assert_eq!(
            resolver.resolve(Runtime::Podman, ID_B),
            Ok((Runtime::Podman, names("second", "localhost/bb:latest", "", "", "")))
        );
    }

    #[test]
    fn kubelet_names() {
        assert_eq!(
            kubelet_name("k8s_app_web-5d8f_shop_u-1_12"),
            names("app", "", "web-5d8f", "u-1", "shop")
        );
        assert_eq!(kubelet_name("k8s_POD_web_shop_u-1_0").name, "POD");
        for not in ["web", "k8s_a_b_c_d", "k8s_a_b_c_d_e_1", "k8s_a_b_c_d_x"] {
            assert_eq!(kubelet_name(not), ContainerNames::default(), "{not}");
        }
        assert!(is_image_id(
            "sha256:c126b291c4f8ebfe32165c9e3760853836ad41369e4baca19e61976e4a166709"
        ));
        assert!(!is_image_id("nginx:1.25"));
    }
}
