#!/usr/bin/env bash
# Build the portable release binary: the recorder with libbpf, libelf and zlib linked in (the
# `static` feature) and the C library too (glibc's libc.a, `crt-static`), so it runs on any
# x86_64 Linux with BTF, whatever its distribution has installed. The BPF object is in the
# binary (CO-RE: relocated against the running kernel's BTF when it loads). Prints `ldd` and
# `iocap --version`, and the path of the binary last, on its own line.
#
#   bash scripts/release.sh            # fully static (ldd: "not a dynamic executable")
#   bash scripts/release.sh --dynamic-libc   # only the C library shared (libc, libm, libgcc_s, the loader)
set -euo pipefail
cd "$(dirname "$0")/.."
[ -f "$HOME/.cargo/env" ] && . "$HOME/.cargo/env"
target=x86_64-unknown-linux-gnu
flags=(--release --locked --features static --target "$target")
if [ "${1:-}" = --dynamic-libc ]; then
    rustflags=""
else
    # With --target, RUSTFLAGS reach only the target's crates: build scripts and proc macros
    # stay dynamic, as they must (a static proc macro cannot be loaded).
    rustflags="-C target-feature=+crt-static"
fi
# libbpf-sys links libelf.a and libz.a from LIBBPF_SYS_LIBRARY_PATH (Debian: libelf-dev, zlib1g-dev).
export LIBBPF_SYS_LIBRARY_PATH="${LIBBPF_SYS_LIBRARY_PATH:-$(pkg-config --variable=libdir libelf)}"
RUSTFLAGS="${RUSTFLAGS:-} $rustflags" cargo build "${flags[@]}" >&2
bin="${CARGO_TARGET_DIR:-target}/$target/release/iocap"
echo "ldd $bin:" >&2
ldd "$bin" >&2 || true
"$bin" --version >&2
realpath "$bin"
