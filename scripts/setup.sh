#!/usr/bin/env bash
# Install what iocap needs to build and test on a fresh Debian machine (run as root), then build it.
# Idempotent: installs only what is missing, so repeated runs cost seconds.
set -euo pipefail
cd "$(dirname "$0")/.."

# Build: clang + libelf + zlib for the BPF programs and libbpf; the rest are the workloads and peers
# that tests and benchmarks run (fio, ioping, bpftrace, perf, strace, sysstat), mkfs.ext4 for the
# cause tests, tmux for the TUI test and python3-venv for DuckDB, which reads the Parquet export
# in the tests.
packages=(clang llvm libelf-dev zlib1g-dev pkg-config make bpftool fio ioping bpftrace linux-perf strace sysstat tmux e2fsprogs python3-venv)
missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
    if [ "$(id -u)" -ne 0 ]; then
        echo "setup: missing packages (${missing[*]}); run as root to install them" >&2
        exit 1
    fi
    echo "setup: installing ${missing[*]}" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if ! command -v cargo >/dev/null 2>&1; then
    [ -f "$HOME/.cargo/env" ] && . "$HOME/.cargo/env"
fi
command -v cargo >/dev/null 2>&1 || { echo "setup: cargo not found: install Rust (rustup) first" >&2; exit 1; }
# The checks scripts/test.sh runs besides the tests.
if command -v rustup >/dev/null 2>&1; then
    for c in rustfmt clippy; do
        rustup component list --installed 2>/dev/null | grep -q "^$c" || rustup component add "$c"
    done
fi

# DuckDB (from PyPI) in a virtual environment where the Parquet tests look for it (they make it
# themselves when it is missing; IOCAP_NO_DUCKDB=1 skips them where there is no network).
pyenv="${CARGO_TARGET_DIR:-target}/tmp/pyenv"
if ! "$pyenv/bin/python" -c "import duckdb" 2>/dev/null; then
    echo "setup: installing duckdb into $pyenv" >&2
    python3 -m venv "$pyenv"
    "$pyenv/bin/pip" install -q duckdb
fi
