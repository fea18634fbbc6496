//! The recorder's errors: each one line that says what is wrong and what to do.

/// Why recording could not start or went wrong. Each message is one line with the fix.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Not root, and without CAP_BPF and CAP_PERFMON.
    #[error("recording needs root, or CAP_BPF and CAP_PERFMON: run it with sudo")]
    Privileges,
    /// The programs are CO-RE: they need the kernel's type information.
    #[error("this kernel has no BTF (/sys/kernel/btf/vmlinux): use a kernel built with CONFIG_DEBUG_INFO_BTF=y")]
    NoBtf,
    /// A tracepoint the programs attach to (category:name) and what it is needed for.
    #[error("this kernel has no tracepoint {0}: it is needed for {1}")]
    MissingTracepoint(String, &'static str),
    /// libbpf refused a load, an attach or a map update: its first line.
    #[error("loading BPF programs failed: {0}")]
    Bpf(String),
    /// The recorder's own threads: one could not start, or died.
    #[error("the recorder's {0}")]
    Thread(&'static str),
    /// What is readable is what a reader recovers from the file(s), which the caller, who
    /// knows their paths, can count: the writer's own count includes what was still buffered.
    #[error("the disk is full: recording stopped")]
    DiskFull,
    /// Writing the capture failed for another reason than a full disk.
    #[error("writing the capture failed: {0}")]
    Write(iocap_format::Error),
    /// The next file of a rotation could not be created or started.
    #[error("starting the next file of the rotation failed: {0}")]
    Rotate(String),
}
