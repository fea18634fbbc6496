//! iocap's recorder (Linux on x86_64 only): BPF programs on the syscall, block and sched
//! tracepoints (`bpf/iocap.bpf.c`, with the records shared with Rust in `bpf/iocap.h`), drained
//! into an [`iocap_format::Writer`].
//!
//! One file per job:
//! - [`plan()`] (`plan.rs`): a [`Request`] and a filter become the kernel's [`Config`]
//!   (`config.rs`, with [`Output`], [`Rotate`], [`Progress`], [`Summary`]); [`rotation`]
//!   names a rotation's files.
//! - `probe.rs`: [`check_privileges`] before any file is created, the preemption model, and
//!   what a load failure is explained by; [`Error`] (`error.rs`) says it in one line.
//! - `recorder.rs`: [`Recorder::start`] loads and attaches every program; pids, the ring
//!   backlog limit and the drop counters are changed and read there.
//! - `poll.rs`: [`Recorder::run`], the loop on the caller's thread: it drains the ring every
//!   millisecond (records are submitted with `BPF_RB_NO_WAKEUP`: a wakeup per event costs more
//!   than the event) into batches for the writer thread, over a short queue, and keeps the
//!   kernel's backlog limit at ~150 ms of what the writer drains, so what is lost to a SIGKILL
//!   stays short and an overload is shed, counted, in the kernel.
//! - `writer.rs`: the writer thread: decodes the batches (`abi.rs`), keeps the process and fd
//!   tables (`state.rs`, seeded by `procfs.rs`, typed by `classify.rs`), applies a
//!   record-time filter ([`Output::filter`], on the live tables), writes, flushes every
//!   500 ms and rotates files ([`Rotate`]): each new file gets a header and every process and
//!   fd entry current at that moment, so it reads on its own.
#![cfg(all(target_os = "linux", target_arch = "x86_64"))]

mod abi;
mod backlog;
mod classify;
mod config;
mod error;
mod plan;
mod poll;
mod probe;
mod procfs;
mod recorder;
pub mod rotation;
mod state;
mod sysinfo;
mod writer;

#[allow(
    clippy::all,
    clippy::pedantic,
    unsafe_op_in_unsafe_fn,
    dead_code,
    non_camel_case_types
)]
mod skel {
    include!(concat!(env!("OUT_DIR"), "/iocap.skel.rs"));
}

pub use config::{Config, Output, Progress, Rotate, Summary};
pub use error::Error;
pub use plan::{plan, PlanError, Request};
pub use probe::check_privileges;
pub use procfs::{boot_ns, meta};
pub use recorder::Recorder;
