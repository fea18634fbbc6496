//! iocap's recorder (Linux only): BPF programs on the syscall, block and sched tracepoints
//! (bpf/iocap.bpf.c), drained into an [`iocap_format::Writer`].
//!
//! - [`check_privileges`] says, before any file is created, whether BPF can be loaded.
//! - [`Recorder::start`] loads and attaches every program, with one-line errors that name
//!   what is missing; [`Recorder::run`] records until told to stop.
//!
//! Threads: the caller's thread polls the ring buffer every millisecond (the kernel never
//! wakes it: records are submitted with `BPF_RB_NO_WAKEUP`, a wakeup per event costs more
//! than the event) and hands raw batches over a bounded channel; a writer thread decodes
//! them ([`abi`]), keeps the process and fd tables ([`state`]) and compresses and writes.
//! The poller never touches the disk: when the writer falls behind, the channel fills, the
//! ring fills, and the kernel counts drops per CPU, which go into the file once a second.
//!
//! The writer thread also applies a record-time filter ([`Output::filter`], tested on each
//! event against the live tables) and rotates files ([`Rotate`]): each new file gets a header
//! and every process and fd entry current at that moment, so it reads on its own.
#![cfg(target_os = "linux")]

mod abi;
mod classify;
mod procfs;
mod session;
mod state;
mod sysinfo;

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

pub use procfs::{boot_ns, meta};
pub use session::{check_privileges, Config, Error, Output, Progress, Recorder, Rotate, Summary};
