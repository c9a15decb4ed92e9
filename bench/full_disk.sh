#!/usr/bin/env bash
# The cost of surviving a full disk on ingest: imports a chain ROUNDS times with MDBX writing
# pages with pwrite at commit (quarry's write path, which a full disk turns into an error) and
# ROUNDS times through the memory map (WRITEMAP, the write path before, which a full disk
# turns into SIGBUS), alternating (A, B, A, B, ...) so that the machine's drift stays out of
# the comparison, each into a fresh datadir; prints each run's wall and CPU time and stages,
# the median of each side and the difference.
#
# Both sides run one binary: QUARRY_BENCH_WRITEMAP=1 makes it open the database with WRITEMAP
# as before (for this benchmark only). OLD_BIN=path runs side A with that binary instead (a
# build of the commit before the change), without the variable.
#
#   bench/full_disk.sh [BIN] [CHAIN_DIR]      default target/release/quarry and
#                                             target/bench/full-disk-3000x100, generated with
#                                             `quarry devchain --blocks 3000 --txs-per-block
#                                             100 --seed 1` when missing
#   ROUNDS=5 bench/full_disk.sh ...           (default 3)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-target/release/quarry}
chain=${2:-target/bench/full-disk-3000x100}
ROUNDS=${ROUNDS:-3}
[ -x "$bin" ] || cargo build --release --quiet --bin quarry
if [ ! -f "$chain/chain.rlp" ]; then
  "$bin" devchain --out "$chain" --blocks 3000 --txs-per-block 100 --seed 1 >/dev/null
fi
source bench/timed.sh
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for round in $(seq 1 "$ROUNDS"); do
  for side in A B; do
    data=$work/data
    if [ "$side" = A ] && [ -n "${OLD_BIN:-}" ]; then
      times=$(timed "$work/out" "$OLD_BIN" ingest --datadir "$data" \
        --genesis "$chain/genesis.json" "$chain/chain.rlp")
    elif [ "$side" = A ]; then
      times=$(QUARRY_BENCH_WRITEMAP=1 timed "$work/out" "$bin" ingest --datadir "$data" \
        --genesis "$chain/genesis.json" "$chain/chain.rlp")
    else
      times=$(timed "$work/out" "$bin" ingest --datadir "$data" \
        --genesis "$chain/genesis.json" "$chain/chain.rlp")
    fi
    grep -q '^head: block' "$work/out" || { tail "$work/out"; exit 1; }
    stages=$(grep '^stages' "$work/out" | sed 's/read [0-9.]*s, decode [0-9.]*s, //')
    echo "round $round $side: $times; $stages; datadir $(du -sh "$data" | cut -f1)" |
      tee -a "$work/log"
    rm -rf "$data"
  done
done
python3 - "$work/log" <<'PY'
import statistics, sys
walls = {}
for line in open(sys.argv[1]):
    fields = line.split()
    walls.setdefault(fields[2].rstrip(":"), []).append(float(fields[3]))
a, b = statistics.median(walls["A"]), statistics.median(walls["B"])
print(f"median A (WRITEMAP, before): {a:.2f} s wall over {len(walls['A'])} rounds")
print(f"median B (pwrite at commit): {b:.2f} s wall over {len(walls['B'])} rounds")
print(f"B - A: {b - a:+.2f} s ({100 * (b - a) / a:+.1f}%)")
PY
