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
    fixture=$(ls fixtures/*.cap 2>/dev/null | head -n 1 || true)
    [ -n "$fixture" ] || { echo "run: no capture in fixtures/" >&2; exit 1; }
    if "$bin" help view >/dev/null 2>&1; then
        exec "$bin" view "$fixture"
    fi
    # Until the viewer lands, show what the capture holds.
    exec "$bin" info "$fixture"
fi
exec "$bin" "$@"
