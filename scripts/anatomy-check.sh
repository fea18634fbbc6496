#!/bin/sh
# An independent check of iocap's anatomy of calls against bpftrace (scripts/anatomy-check.bt):
# a writer of 1 KiB every millisecond (buffered) beside a neighbour's dd + sync on one ext4 loop
# device, and a thread crowded onto a CPU by two spinners; both record the writer's calls slower
# than 1 ms for 4 s, and the calls are matched by thread and latency (within 50 us: bpftrace's
# printf runs inside iocap's clock reads). Prints the
# calls matched and how many agree on run-queue and blocked time within 50 us or 5 %.
# As root, from the workspace, with a release build:  sh scripts/anatomy-check.sh
set -eu
IOCAP=${IOCAP:-target/release/iocap}
T=$(mktemp -d)
cleanup() { kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; umount "$T/mnt" 2>/dev/null || true; [ -n "${DEV:-}" ] && losetup -d "$DEV"; rm -rf "$T"; }
trap cleanup EXIT
truncate -s 2G "$T/img"
DEV=$(losetup -f --show "$T/img")
mkfs.ext4 -q "$DEV"
mkdir "$T/mnt"
mount "$DEV" "$T/mnt"
python3 - "$T/mnt/w" <<'PY' &
import os, sys, threading, time
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT, 0o600)
def spin():
    os.sched_setaffinity(0, {0})
    while True:
        pass
os.sched_setaffinity(0, {0})
for _ in range(2):
    threading.Thread(target=spin, daemon=True).start()
end = time.time() + 8
while time.time() < end:
    os.write(fd, b"x" * 1024)
    time.sleep(0.001)
PY
W=$!
sleep 0.5
( while :; do dd if=/dev/zero of="$T/mnt/n" bs=1M count=200 status=none; sync; done ) &
bpftrace scripts/anatomy-check.bt "$W" 1000000 > "$T/bt" 2>/dev/null &
B=$!
"$IOCAP" record -p "$W" -w "$T/a.cap" -d 5s 2>/dev/null &
R=$!
sleep 5
wait $R || true
# The kernel skips a classic tracepoint's program (bpftrace's) while another BPF program or map
# syscall is active on its CPU, and counts each skip: a missed sched_waking makes bpftrace count
# the thread's wait for a CPU as blocked.
bpftool prog show --json | python3 -c '
import json, sys
skips = {p["name"]: p.get("recursion_misses", 0) for p in json.load(sys.stdin) if p["type"] == "tracepoint"}
print("bpftrace programs skipped by the kernel:", skips)'
kill -INT $B; wait $B 2>/dev/null || true
"$IOCAP" events --json "$T/a.cap" "proc.pid=$W and latency>1ms" > "$T/ic"
python3 - "$T/bt" "$T/ic" <<'PY'
import json, sys
bt = []
for line in open(sys.argv[1]):
    p = line.split()
    if len(p) == 5 and all(x.isdigit() for x in p):
        bt.append(tuple(int(x) for x in p[:4]))
ic = [json.loads(l) for l in open(sys.argv[2])]
used, matched, rq_ok, bl_ok, bad, sum_ok = set(), 0, 0, 0, 0, 0
for e in ic:
    tid, lat = e["thread.tid"], e["latency"]
    best = None
    for k, (t, l, rq, bl) in enumerate(bt):
        if k not in used and t == tid and abs(l - lat) < 50000 and (best is None or abs(l - lat) < abs(bt[best][1] - lat)):
            best = k
    if best is None:
        continue
    used.add(best)
    matched += 1
    _, _, rq, bl = bt[best]
    ok = lambda a, b: abs(a - b) <= max(50000, 0.05 * max(a, b))
    rq_ok += ok(e["runq.time"], rq)
    bl_ok += ok(e["wait.time"], bl)
    sum_ok += ok(e["runq.time"] + e["wait.time"], rq + bl)
    if not (ok(e["runq.time"], rq) and ok(e["wait.time"], bl)) and bad < 8:
        bad += 1
        print(f"  differ: tid {tid} latency {lat} ({e['evt.type']}): iocap runq {e['runq.time']} wait {e['wait.time']} sleeps {e['wait.count']}; bpftrace runq {rq} blocked {bl}")
print(f"iocap {len(ic)} calls > 1 ms, bpftrace {len(bt)}; matched {matched}; run queue agrees {rq_ok}, blocked agrees {bl_ok}, time off the CPU agrees {sum_ok}")
PY
