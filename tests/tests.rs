//! End-to-end tests of the `iocap` binary: one test binary, shared helpers here, one module per area.

mod util;

#[cfg(all(target_os = "linux", target_arch = "x86_64", feature = "record"))]
mod anatomy;
#[cfg(all(target_os = "linux", target_arch = "x86_64", feature = "record"))]
mod cause;
mod compare;
mod compare_svg;
#[cfg(all(target_os = "linux", target_arch = "x86_64", feature = "record"))]
mod containers;
mod drops;
mod filter;
mod flame;
mod fleet;
mod hostile;
mod info;
#[cfg(all(target_os = "linux", target_arch = "x86_64", feature = "record"))]
mod kernels;
mod output;
mod packaging;
mod parquet;
#[cfg(all(target_os = "linux", target_arch = "x86_64", feature = "record"))]
mod peers;
#[cfg(all(target_os = "linux", target_arch = "x86_64", feature = "record"))]
mod probes;
#[cfg(all(target_os = "linux", target_arch = "x86_64", feature = "record"))]
mod record;
mod reports;
#[cfg(all(target_os = "linux", target_arch = "x86_64", feature = "record"))]
mod stacks;
mod stream;
#[cfg(all(target_os = "linux", target_arch = "x86_64", feature = "record"))]
mod stream_record;
#[cfg(all(target_os = "linux", target_arch = "x86_64", feature = "record"))]
mod sysstat;
mod version;
mod view;
