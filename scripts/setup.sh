#!/usr/bin/env bash
# Install what iocap needs to build and test on a fresh Debian machine (run as root), then build it.
# Idempotent: installs only what is missing, so repeated runs cost seconds.
set -euo pipefail
cd "$(dirname "$0")/.."

# Build: clang + libelf + zlib for the BPF programs and libbpf; the rest are the workloads and peers
# that tests and benchmarks run (fio, ioping, sqlite3, bpftrace, perf, strace, sysstat; libbpf's
# headers for the benchmark's floor programs, crates/record/benches/floor.bpf.c), mkfs.ext4 for the
# cause tests, tmux for the TUI test, python3-venv for DuckDB, which reads the Parquet export
# in the tests; QEMU, a static busybox and xz for the kernel matrix; podman and runc for the
# container test (tests/containers.rs: its image is that static busybox, imported, as no registry
# may be reachable; runc, as crun, podman's other runtime, refuses hosts with hybrid cgroups).
packages=(clang llvm libelf-dev zlib1g-dev pkg-config make bpftool libbpf-dev fio ioping sqlite3 bpftrace linux-perf strace sysstat tmux e2fsprogs
    python3-venv qemu-system-x86 busybox-static xz-utils podman runc)
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
# The kernel matrix (tests/kernels.rs): Debian's own kernels, booted in QEMU. Kept, unpacked,
# under the target directory, so a rerun downloads nothing. A newer kernel of a flavour: change
# its name here (`apt-cache search linux-image | grep unsigned`).
kernels=(
    linux-image-6.1.0-56-cloud-amd64-unsigned       # 6.1, PREEMPT_DYNAMIC (voluntary)
    linux-image-6.1.0-56-rt-amd64-unsigned          # 6.1, PREEMPT_RT
    linux-image-6.12.117+deb12-cloud-amd64-unsigned # 6.12, PREEMPT_DYNAMIC (voluntary)
)
kdir="${CARGO_TARGET_DIR:-target}/kernels"
mkdir -p "$kdir/debs"
for k in "${kernels[@]}"; do
    [ -d "$kdir/$k/boot" ] && continue
    if ! ls "$kdir/debs/${k}_"*.deb >/dev/null 2>&1; then
        echo "setup: downloading $k" >&2
        # apt-get download writes into the current directory, as the user _apt when it can.
        (cd "$kdir/debs" && apt-get download -qq "$k" 2>&1 | grep -v 'unsandboxed' >&2 || true)
        ls "$kdir/debs/${k}_"*.deb >/dev/null 2>&1 || { echo "setup: cannot download $k" >&2; exit 1; }
    fi
    rm -rf "$kdir/$k.tmp"
    mkdir -p "$kdir/$k.tmp"
    # The kernel, its config and the loop module: all a boot needs of the package's 100-400 MB.
    dpkg-deb --fsys-tarfile "$kdir/debs/${k}_"*.deb |
        tar -x -C "$kdir/$k.tmp" --wildcards './boot/vmlinuz-*' './boot/config-*' '*/drivers/block/loop.ko*'
    mv "$kdir/$k.tmp" "$kdir/$k"
done
# Only the kernels named above: an older one left there would be booted too.
for d in "$kdir"/*/; do
    d="$(basename "$d")"
    [ "$d" = debs ] && continue
    [[ " ${kernels[*]} " == *" $d "* ]] || rm -rf "${kdir:?}/$d"
done
