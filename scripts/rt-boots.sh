#!/usr/bin/env bash
# Boot Debian's PREEMPT_RT kernel in QEMU again and again, with and without the recording
# (tests/kernels.rs `rt_kernel_boots_repeatedly`): did any boot hang, and was it iocap?
# Not in CI: ~20 boots of 30-60 s. Arguments: the number of boots of each kind (10) and the
# timeout of one boot in seconds (180). Console logs of boots that did not finish are kept in
# $TMPDIR/iocap-rt-boots/. IOCAP_VM_BIN boots another binary (the release one, say),
# IOCAP_VM_CPUS gives the guest another number of CPUs (2).
set -euo pipefail
cd "$(dirname "$0")/.."
[ -f "$HOME/.cargo/env" ] && . "$HOME/.cargo/env"
bash scripts/setup.sh >&2
IOCAP_RT_BOOTS="${1:-10}" IOCAP_RT_TIMEOUT="${2:-180}" \
    cargo test --locked --test integration kernels::rt_kernel_boots_repeatedly -- --ignored --nocapture
