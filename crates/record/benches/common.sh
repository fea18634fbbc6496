# Shell functions the recorder's benchmark scripts share (sourced, not run): overhead.sh,
# workloads.sh and sizes.sh. They use $IOCAP (the iocap binary).

# Events, drops, unseen block requests and bytes/event of the capture $1 (one line).
# `info`'s drops line goes on with the block requests whose completion never came, when any:
# `drops        0, 16 block requests issued whose completion never reached the recorder`.
facts() { "$IOCAP" info "$1" | awk '/^events/ { e = $2 } /^drops/ { d = $2; sub(/,$/, "", d); u = (NF > 2 ? $3 : 0) } /bytes\/event/ { for (i = 1; i <= NF; i++) if ($i == "bytes/event") b = $(i - 1) } END { printf "    events %s, drops %s, unseen %s, %s bytes/event\n", e, d, u, b }'; }
# Lines of /proc/PID/task/*/stat (in files $2..., else stdin) as `tid role ticks`: the role is an
# iocap thread's name without `iocap-` (writer, encoder), any other thread's is $1 (iocap's main
# thread, named as the binary is, polls the rings); ticks are its user + system time.
thread_ticks() {
    thread_other=$1; shift
    awk -v other="$thread_other" '{
        name = $2; sub(/^\(/, "", name); sub(/\)$/, "", name)
        split(substr($0, index($0, ") ") + 2), f, " ")
        print $1, (name ~ /^iocap-/ ? substr(name, 7) : other), f[12] + f[13] }' "$@"
}
# kernel.bpf_stats_enabled makes every BPF program read the clock twice more (a session's
# figures were once taken with it left on): bpf_stats_off turns it off while a script measures,
# remembering how it was, and bpf_stats_back (in the script's EXIT trap) puts that back.
bpf_stats_off() {
    bpf_stats=$(sysctl -n kernel.bpf_stats_enabled 2>/dev/null || echo 0)
    sysctl -qw kernel.bpf_stats_enabled=0 2>/dev/null || true
}
bpf_stats_back() { [ -z "${bpf_stats-}" ] || sysctl -qw kernel.bpf_stats_enabled="$bpf_stats" 2>/dev/null || true; }
# Wait (up to 10 s) for a line matching $2 in file $1; fail if it never comes.
# (Its counter has a name of its own: sh variables are global, and would clobber the callers'.)
await() {
    await_n=0
    while ! grep -q "$2" "$1" 2>/dev/null; do
        await_n=$((await_n + 1)); [ $await_n -lt 100 ] || return 1; sleep 0.1
    done
}
# A tmpfs at $1/mnt (320 MiB) holding a written (not sparse: reads copy real pages) image of
# $2 MiB on a loop device: sets `mnt` and `dev`, which the caller's EXIT trap undoes
# (`losetup -d "$dev"`, `umount "$mnt"`): only what the script made, never `losetup -D`.
tmpfs_loop() {
    mkdir "$1/mnt"
    mount -t tmpfs -o size=320m iocap-bench "$1/mnt"
    mnt=$1/mnt
    dd if=/dev/zero of="$mnt/img" bs=1M count="$2" status=none
    dev=$(losetup --show -f "$mnt/img")
}
# $1 small SQLite transactions (update a random account, read it back, log it), one a line.
sql_transactions() {
    awk -v n="$1" 'BEGIN {
        srand(1)
        for (t = 0; t < n; t++) {
            a = int(rand() * 10000) + 1; d = int(rand() * 2000) - 1000
            printf "BEGIN; UPDATE acct SET bal = bal + %d WHERE id = %d; SELECT bal FROM acct WHERE id = %d;", d, a, a
            printf " INSERT INTO hist(acct, delta, at) VALUES (%d, %d, %d); COMMIT;\n", a, d, t
        }
    }'
}
# A fresh SQLite database at $1 that sql_transactions' lines run against: 10,000 accounts.
sql_database() {
    rm -f "$1" "$1-journal"
    sqlite3 "$1" "CREATE TABLE acct(id INTEGER PRIMARY KEY, bal INTEGER, pad TEXT);
        CREATE TABLE hist(id INTEGER PRIMARY KEY, acct INTEGER, delta INTEGER, at INTEGER);
        WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 10000)
        INSERT INTO acct SELECT i, 0, hex(randomblob(40)) FROM n;"
}
