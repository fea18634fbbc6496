#!/usr/bin/env bash
# Set up, build iocap in release mode, and run it. With no arguments it opens a real capture from
# fixtures/; otherwise the arguments are iocap's own (`scripts/run.sh record -w trace.cap`).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
[ -f "$HOME/.cargo/env" ] && . "$HOME/.cargo/env"
cargo build --release --locked --quiet
bin=target/release/iocap
if [ "$#" -eq 0 ]; then
    # The richest real recording: random direct reads, buffered writes with fsync and cached
    # reads at once (see fixtures/README.md).
    fixture=fixtures/mixed.cap
    [ -f "$fixture" ] || { echo "run: $fixture is missing" >&2; exit 1; }
    exec "$bin" view "$fixture"
fi
exec "$bin" "$@"
