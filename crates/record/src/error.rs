//! The recorder's errors: each one line that says what is wrong and what to do.

/// Why recording could not start or went wrong. Each message is one line with the fix.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Not root, and without CAP_BPF and CAP_PERFMON.
    #[error("recording needs root, or CAP_BPF and CAP_PERFMON: run it with sudo")]
    Privileges,
    /// The kernel lacks something the recorder needs (found before anything is loaded).
    #[error("this kernel ({kernel}) lacks {what}, which iocap needs for {role}; {since}")]
    Unsupported {
        /// The running kernel's release.
        kernel: String,
        /// What it lacks: "the BPF ring buffer (BPF_MAP_TYPE_RINGBUF)".
        what: String,
        /// What iocap needs it for.
        role: &'static str,
        /// Which kernels have it: "Linux 5.8 and later have it".
        since: String,
    },
    /// `IOCAP_HIDE` (or the tests' `IOCAP_REFUSE`) names something that is not a feature
    /// (a program): the variable's name, then what is wrong.
    #[error("{0}")]
    Hide(String),
    /// The kernel refused to load a program the recorder cannot do without.
    #[error("the kernel refused iocap's BPF program {prog} ({role}): {reason} (IOCAP_BPF_DEBUG=1 shows libbpf's log)")]
    Refused {
        /// The program's name (`sys_enter`).
        prog: String,
        /// What it records: "every syscall".
        role: &'static str,
        /// The kernel's error, and the verifier's last word when it said one.
        reason: String,
    },
    /// libbpf refused a load, an attach or a map update: its first line.
    #[error("loading BPF programs failed: {0}")]
    Bpf(String),
    /// The recorder's own threads: one could not start, or died.
    #[error("the recorder's {0}")]
    Thread(&'static str),
    /// Its threads' nice value could not be set (`record --nice`).
    #[error("cannot run the recorder at nice {0}: {1}")]
    Nice(i32, std::io::Error),
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
