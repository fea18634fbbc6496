#!/usr/bin/env bash
# Set up and run every check: formatting, clippy and the docs with warnings denied, then every
# test, then the viewer-only build's clippy and tests. As root (as in CI) the end-to-end tests really load BPF and record; elsewhere they print
# why they skip. CI runs exactly this (.ci/run).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
[ -f "$HOME/.cargo/env" ] && . "$HOME/.cargo/env"
cargo fmt --all --check
cargo clippy --workspace --all-targets --locked -- -D warnings
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --locked --quiet
# The kernel matrix (tests/kernels.rs) boots the portable release binary, as it ships.
IOCAP_VM_BIN="$(bash scripts/release.sh)"
export IOCAP_VM_BIN
cargo test --workspace --locked
# The fuzz targets build (on stable, without the sanitizers `cargo fuzz` adds): a change to the
# format's API that they use breaks here, not at the next fuzzing session.
cargo build --locked --quiet --manifest-path fuzz/Cargo.toml
# The viewer-only build (no recorder: what a macOS laptop builds) stays free of Linux-only code
# and passes the tests that need no recorder.
cargo clippy --no-default-features --all-targets --locked -- -D warnings
cargo test --no-default-features --locked
