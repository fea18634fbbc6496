#!/usr/bin/env bash
# Record fio's 2,000 random 4 KiB direct reads on ext4 over a loop device again and again, under
# load (two CPU burners, a loop device attached, used and detached in a loop, another recorder
# restarted every 5 s), and say which recordings lack block reads, and what the recorder said
# of them. A completion the kernel never hands to the program is counted when the request is
# reused (ARCHITECTURE.md, rq_slots), and `iocap record` ends with "block requests issued whose
# completion never reached iocap, so not in the capture: N": a run short of N reads should say N,
# and its capture count N too (`report --json`'s unseen_block_requests).
# Not in CI: ~3 s a run. Arguments: runs (50) and fio's iodepth (16); BURN=0, CHURN=0 or
# RESTART=0 leaves that part of the load out. Run as root.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS="${1:-50}" DEPTH="${2:-16}"
# Each part of the load can be left out (0): BURN, CHURN (the loop devices), RESTART.
BURN="${BURN:-1}" CHURN="${CHURN:-1}" RESTART="${RESTART:-1}"
BIN="$PWD/target/debug/iocap"
[ -x "$BIN" ] || cargo build --locked -q
W=$(mktemp -d -p "$PWD/target")
LO="" LOAD=""
cleanup() {
    [ -n "$LOAD" ] && kill -- -"$LOAD" 2>/dev/null || true
    sleep 1
    losetup -j "$W/load/l.img" 2>/dev/null | cut -d: -f1 | xargs -r -n1 losetup -d 2>/dev/null || true
    umount "$W/mnt" 2>/dev/null || true
    [ -n "$LO" ] && losetup -d "$LO" 2>/dev/null || true
    rm -rf "$W"
}
trap cleanup EXIT
mkdir "$W/mnt" "$W/load"
truncate -s 128M "$W/fs.img"
LO=$(losetup -f --show "$W/fs.img")
mkfs.ext4 -q -F "$LO" && mount "$LO" "$W/mnt"
dd if=/dev/urandom of="$W/mnt/data" bs=1M count=64 status=none conv=fsync
set -m
(
    trap 'kill 0' EXIT
    [ "$BURN" = 1 ] && for _ in 1 2; do (while :; do :; done) & done
    [ "$CHURN" = 1 ] && (while :; do
        truncate -s 32M "$W/load/l.img"
        L=$(losetup -f --show "$W/load/l.img")
        dd if=/dev/zero of="$L" bs=4k count=2000 oflag=direct status=none
        dd if="$L" of=/dev/null bs=64k count=400 iflag=direct status=none
        losetup -d "$L"
    done) &
    [ "$RESTART" = 1 ] && (while :; do timeout 5 "$BIN" record -w "$W/load/other.cap" >/dev/null 2>&1 || true; done) &
    wait
) &
LOAD=$!
set +m
short=0
for i in $(seq "$RUNS"); do
    dd if="$W/fs.img" iflag=nocache count=0 status=none
    "$BIN" record -w "$W/qd.cap" -c "fio --name=r --filename=$W/mnt/data --rw=randread --bs=4k \
        --direct=1 --ioengine=libaio --iodepth=$DEPTH --iodepth_batch_submit=1 --number_ios=2000 \
        --size=64M --output-format=json --output=$W/fio.json" 2>"$W/rec.err"
    unseen=$(sed -n 's/^iocap: block requests issued whose completion never reached iocap.*: \([0-9]*\)$/\1/p' "$W/rec.err")
    json=$("$BIN" report "$W/qd.cap" "blk.dev=$(basename "$LO") and blk.op=read" --json)
    bytes=$(echo "$json" | python3 -c 'import json,sys; print(json.load(sys.stdin)["bytes"])')
    drops=$(echo "$json" | python3 -c 'import json,sys; print(json.load(sys.stdin)["drops"])')
    kept=$(echo "$json" | python3 -c 'import json,sys; print(json.load(sys.stdin)["unseen_block_requests"])')
    if [ "$bytes" != $((2000 * 4096)) ] || [ "$kept" != "${unseen:-0}" ]; then
        short=$((short + 1))
        echo "run $i: $(((2000 * 4096 - bytes) / 4096)) reads short, $drops drops, ${unseen:-0} unseen" \
            "($kept in the capture)"
    fi
done
echo "$short of $RUNS runs short"
