#!/usr/bin/env bash
# Set up and run every test. As root (as in CI) the end-to-end tests really load BPF and record;
# elsewhere they print why they skip.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
[ -f "$HOME/.cargo/env" ] && . "$HOME/.cargo/env"
cargo test --workspace --locked
