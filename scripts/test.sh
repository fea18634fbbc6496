#!/usr/bin/env bash
# Set up and run every check: formatting, clippy and the docs with warnings denied, then every
# test. As root (as in CI) the end-to-end tests really load BPF and record; elsewhere they print
# why they skip. CI runs exactly this (.ci/run).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
[ -f "$HOME/.cargo/env" ] && . "$HOME/.cargo/env"
cargo fmt --all --check
cargo clippy --workspace --all-targets --locked -- -D warnings
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --locked --quiet
cargo test --workspace --locked
