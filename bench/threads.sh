#!/usr/bin/env bash
# Where an ingest's two cores go over time: imports a chain into a fresh datadir and prints, for
# each minute of the run, the cores (of all the machine has) that were idle, that the executing
# thread used (the process's main thread), that the sender-recovery threads (`recover-*`) used,
# and that its other threads (compression, tail warming, the decoding thread) used, from
# /proc/stat and /proc/PID/task/*/stat every 5 s; then the ingest's own summary and stages
# ("waiting for blocks" is the executing thread's time waiting for recovered batches).
#
#   bench/threads.sh [QUARRY_BIN] [CHAIN_DIR]   default target/release/quarry,
#                                               target/bench/scale-20000x100
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-target/release/quarry}
chain=${2:-target/bench/scale-20000x100}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
sync
"$bin" ingest --datadir "$work/data" --genesis "$chain/genesis.json" "$chain/chain.rlp" \
  >"$work/out" 2>&1 &
pid=$!
python3 - "$pid" <<'PY'
import os, sys, time
pid = int(sys.argv[1])

def machine():
    fields = list(map(int, open('/proc/stat').readline().split()[1:]))
    return sum(fields), fields[3] + fields[4]  # all ticks, idle + iowait ticks

def threads():
    main = recover = other = 0
    for tid in os.listdir(f'/proc/{pid}/task'):
        try:
            stat = open(f'/proc/{pid}/task/{tid}/stat').read()
        except OSError:
            continue  # a thread that ended between the listing and the read
        name = stat[stat.index('(') + 1:stat.rindex(')')]
        fields = stat[stat.rindex(')') + 2:].split()
        ticks = int(fields[11]) + int(fields[12])  # utime + stime
        if int(tid) == pid:
            main += ticks
        elif name.startswith('recover'):
            recover += ticks
        else:
            other += ticks
    return main, recover, other

cores = os.cpu_count()
minutes = {}
before_m, before_t, start = machine(), threads(), time.time()
while True:
    time.sleep(5)
    try:
        now_m, now_t = machine(), threads()
    except OSError:
        break  # the import ended
    total = now_m[0] - before_m[0]
    if total > 0:
        # Threads that ended in the interval take their ticks with them: clamp at zero.
        row = [cores * (now_m[1] - before_m[1]) / total] + [
            max(0, cores * (a - b) / total) for a, b in zip(now_t, before_t)]
        minutes.setdefault(int(time.time() - start - 5) // 60, []).append(row)
    before_m, before_t = now_m, now_t
print(f"cores used, mean of 5-s samples ({cores} cores)")
print("minute   idle  executing  recovery  other")
for minute, rows in sorted(minutes.items()):
    mean = [sum(col) / len(rows) for col in zip(*rows)]
    print(f"{minute:6d} {mean[0]:6.2f} {mean[1]:10.2f} {mean[2]:9.2f} {mean[3]:6.2f}")
PY
wait "$pid" || { tail "$work/out"; exit 1; }
grep -E '^(imported|stages|sender recovery alone|gave)' "$work/out"
