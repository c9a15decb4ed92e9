#!/usr/bin/env bash
# Ingest benchmark: imports a chain into fresh datadirs RUNS times with the release build and
# reports blocks/s, Mgas/s and the time of each stage (read, decode and sender recovery on the
# decoding thread; execution, state root and write on the executing thread; the two overlap),
# plus total time against sender recovery + execution alone. Sender recovery alone is its CPU
# time spread over every core, as if it ran by itself at full parallelism.
#
#   bench/ingest.sh [GENESIS CHAIN_FILE...]     (default: ../shared/fixtures/rpc-compat)
#   RUNS=5 bench/ingest.sh ...
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-5}
if [ $# -ge 2 ]; then
  genesis=$1; shift; files=("$@")
else
  genesis=../shared/fixtures/rpc-compat/genesis.json
  files=(../shared/fixtures/rpc-compat/chain.rlp)
fi
cargo build --release --quiet
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for i in $(seq 1 "$RUNS"); do
  ./target/release/quarry ingest --datadir "$work/run$i" --genesis "$genesis" "${files[@]}" 2>/dev/null \
    | tee "$work/out$i" | grep -E '^(imported|stages|sender recovery alone)' | sed "s/^/run $i: /"
done
python3 - "$work" "$RUNS" <<'PY'
import re, sys, statistics
work, runs = sys.argv[1], int(sys.argv[2])
rows = []
for i in range(1, runs + 1):
    text = open(f"{work}/out{i}").read()
    m = re.search(r"imported (\d+) blocks .*?, (\d+) transactions, (\d+) gas in ([\d.]+)s", text)
    s = dict((k, float(v)) for k, v in re.findall(r"(read|decode|senders|execution|state root|write) ([\d.]+)s", text))
    s["alone"] = float(re.search(r"sender recovery alone: ([\d.]+)s", text).group(1))
    rows.append((int(m.group(1)), int(m.group(3)), float(m.group(4)), s))
blocks, gas = rows[0][0], rows[0][1]
total = statistics.median(r[2] for r in rows)
print(f"\nmedian of {runs} runs: {blocks} blocks, {gas} gas in {total:.3f}s: "
      f"{blocks/total:.0f} blocks/s, {gas/1e6/total:.1f} Mgas/s")
def show(stage, label):
    t = statistics.median(r[3][stage] for r in rows)
    print(f"  {label:<24} {t:8.4f}s  {100*t/total:5.1f}% of wall time")
print("decoding thread:")
for stage in ["read", "decode", "senders"]:
    show(stage, stage)
print("executing thread:")
for stage in ["execution", "state root", "write"]:
    show(stage, stage)
main = statistics.median(r[2] - r[3]["execution"] - r[3]["state root"] - r[3]["write"] for r in rows)
print(f"  {'waiting, progress':<24} {main:8.4f}s  {100*main/total:5.1f}% of wall time")
show("alone", "sender recovery alone")
core = statistics.median(r[3]["alone"] + r[3]["execution"] for r in rows)
print(f"total / (sender recovery alone + execution) = {total:.1f}s / {core:.1f}s = {total/core:.2f}x (goal: 1.5x or less)")
PY
