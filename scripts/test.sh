#!/usr/bin/env bash
# Set up and run every check: formatting, clippy and the docs with warnings denied, then every
# test, then the viewer-only build's clippy and tests. As root (as in CI) the end-to-end tests
# really load BPF and record; elsewhere they print why they skip. CI runs exactly this (.ci/run).
#
# Every check runs even when one before it failed (and every test binary, --no-fail-fast), so
# one failure never hides the others' results; the script fails at the end, naming them.
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh || exit 1
[ -f "$HOME/.cargo/env" ] && . "$HOME/.cargo/env"
# A run builds everything once: no incremental caches, and debug info of line tables only (enough
# for a panic's backtrace). Full debug info and the caches took 4 of a fresh clone's 6 GB, and a
# CI machine's disk once ran out mid-build. The space left is printed so a log says it.
export CARGO_INCREMENTAL=0 CARGO_PROFILE_DEV_DEBUG=line-tables-only
df -h . | tail -n 1 >&2
failed=()
check() {
    echo "== $*" >&2
    "$@" || failed+=("$*")
}
check cargo fmt --all --check
check cargo clippy --workspace --all-targets --locked -- -D warnings
RUSTDOCFLAGS="-D warnings" check cargo doc --workspace --no-deps --locked --quiet
# The kernel matrix (tests/kernels.rs) boots the portable release binary, as it ships.
if IOCAP_VM_BIN="$(bash scripts/release.sh)"; then
    export IOCAP_VM_BIN
else
    failed+=("scripts/release.sh")
fi
check cargo test --workspace --locked --no-fail-fast
# The fuzz targets build (on stable, without the sanitizers `cargo fuzz` adds): a change to the
# format's API that they use breaks here, not at the next fuzzing session.
check cargo build --locked --quiet --manifest-path fuzz/Cargo.toml
# The viewer-only build (no recorder: what a macOS laptop builds) stays free of Linux-only code
# and passes the tests that need no recorder.
check cargo clippy --no-default-features --all-targets --locked -- -D warnings
check cargo test --no-default-features --locked --no-fail-fast
if [ ${#failed[@]} -gt 0 ]; then
    printf 'failed: %s\n' "${failed[@]}" >&2
    exit 1
fi
echo "every check passed" >&2
