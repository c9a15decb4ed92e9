#!/usr/bin/env bash
# Ingest benchmark: imports a chain into fresh datadirs RUNS times with the release build and
# reports blocks/s, Mgas/s and the share of wall time per stage (decode, sender recovery,
# execution, state root, write), plus total time against sender recovery + execution alone.
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
    | tee "$work/out$i" | grep -E '^(imported|stages)' | sed "s/^/run $i: /"
done
python3 - "$work" "$RUNS" <<'PY'
import re, sys, statistics
work, runs = sys.argv[1], int(sys.argv[2])
rows = []
for i in range(1, runs + 1):
    text = open(f"{work}/out{i}").read()
    m = re.search(r"imported (\d+) blocks .*?, (\d+) transactions, (\d+) gas in ([\d.]+)s", text)
    s = dict((k, float(v)) for k, v in re.findall(r"(read|decode|senders|execution|state root|write) ([\d.]+)s", text))
    rows.append((int(m.group(1)), int(m.group(3)), float(m.group(4)), s))
blocks, gas = rows[0][0], rows[0][1]
total = statistics.median(r[2] for r in rows)
print(f"\nmedian of {runs} runs: {blocks} blocks, {gas} gas in {total:.3f}s: "
      f"{blocks/total:.0f} blocks/s, {gas/1e6/total:.1f} Mgas/s")
for stage in ["read", "decode", "senders", "execution", "state root", "write"]:
    t = statistics.median(r[3][stage] for r in rows)
    print(f"  {stage:<11} {t:8.4f}s  {100*t/total:5.1f}% of wall time")
other = statistics.median(r[2] - sum(r[3].values()) for r in rows)
print(f"  {'other':<11} {other:8.4f}s  {100*other/total:5.1f}% of wall time (progress, batching, freeing memory)")
core = statistics.median(r[3]["senders"] + r[3]["execution"] for r in rows)
print(f"  total / (sender recovery + execution) = {total/core:.2f}x (goal: 1.5x or less)")
PY
