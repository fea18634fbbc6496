//! End-to-end tests of the `iocap` binary: one test binary, shared helpers here, one module per area.

mod util;

mod filter;
mod info;
mod reports;
mod view;
