#!/usr/bin/env bash
# Ingest A/B: imports a chain with two builds in turn, ROUNDS times each (A, B, A, B, ...),
# each into a fresh datadir, and prints every run's wall and CPU time (/usr/bin/time), its
# peak RssAnon, its stages (sender recovery on the decoding thread; execution, state root and
# write on the executing thread) and the datadir's size (allocated blocks, `du`: MDBX files are
# sparse); after the last round, each side's tables side by side (storage/examples/
# table_sizes.rs, built here) and the free pages in each file. This machine's speed drifts between
# runs by more than some changes weigh; alternating builds keeps the drift out of the
# comparison.
#
#   bench/ab.sh OLD_BIN NEW_BIN [CHAIN_DIR]     default target/bench/scale-20000x100
#   ROUNDS=3 bench/ab.sh ...                    (default 2)
#   bench/ab.sh - NEW_BIN ...                   one build only (with RETH: reth, B, reth, B, ...)
#   RETH=path/to/reth bench/ab.sh ...           each round starts with `reth import` of the
#                                               same chain, timed alike (reth, A, B, reth, ...)
#   KEEP=dir bench/ab.sh ...                    keeps the last round's datadirs as dir/A and
#                                               dir/B (for bench/blocks.sh, bench/logs.sh);
#                                               with RETH, also dir/reth and `reth db stats`
#                                               of it in dir/reth-stats.txt
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 2 ] || { echo "usage: bench/ab.sh OLD_BIN NEW_BIN [CHAIN_DIR]" >&2; exit 2; }
old=$1
new=$2
chain=${3:-target/bench/scale-20000x100}
ROUNDS=${ROUNDS:-2}
cargo build --release --quiet -p quarry-storage --example table_sizes
source bench/timed.sh
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for round in $(seq 1 "$ROUNDS"); do
  if [[ -n ${RETH:-} ]]; then
    times=$(timed "$work/out" "$RETH" import --chain "$chain/genesis.json" \
      --datadir "$work/reth" "$chain/chain.rlp")
    grep -q 'Import complete' "$work/out" || { tail "$work/out"; exit 1; }
    echo "round $round reth: $times; datadir $(du -sB1M "$work/reth" | cut -f1) MB" | tee -a "$work/log"
    if [[ -n ${KEEP:-} && $round = "$ROUNDS" ]]; then
      # reth's own account of its datadir, per static-file segment and table.
      mkdir -p "$KEEP"
      "$RETH" db --chain "$chain/genesis.json" --datadir "$work/reth" stats >"$KEEP/reth-stats.txt" 2>&1 ||
        { tail "$KEEP/reth-stats.txt"; exit 1; }
      rm -rf "${KEEP:?}/reth"
      mv "$work/reth" "$KEEP/reth"
    fi
    rm -rf "$work/reth"
  fi
  for side in A B; do
    [ "$side" = A ] && [ "$old" = - ] && continue
    bin=$old
    [ "$side" = B ] && bin=$new
    data=$work/data
    times=$(timed "$work/out" "$bin" ingest --datadir "$data" --genesis "$chain/genesis.json" \
      "$chain/chain.rlp")
    stages=$(grep '^stages' "$work/out" | sed 's/read [0-9.]*s, decode [0-9.]*s, //')
    echo "round $round $side: $times; $stages; datadir $(du -sB1M "$data" | cut -f1) MB" |
      tee -a "$work/log"
    if [ "$round" = "$ROUNDS" ]; then
      target/release/examples/table_sizes "$data" >"$work/tables-$side"
      if [[ -n ${KEEP:-} ]]; then
        mkdir -p "$KEEP"
        rm -rf "${KEEP:?}/$side"
        mv "$data" "$KEEP/$side"
      fi
    fi
    rm -rf "$data"
  done
done
echo "== tables after the last round (MB): A, B"
touch "$work/tables-A"
join -a1 -a2 -e0 -o 0,1.3,2.3 <(awk 'NR>1 && NF==4 {print $1, $2, $3}' "$work/tables-A" | sort) \
  <(awk 'NR>1 && NF==4 {print $1, $2, $3}' "$work/tables-B" | sort) |
  sort -k3 -gr | awk '$2 > 0 || $3 > 0 {printf "%-26s %9s %9s\n", $1, $2, $3}'
grep -H '^total ' "$work/tables-A" "$work/tables-B" | sed 's/.*tables-\([AB]\):total */total \1: /'
# What the file holds besides the tables: pages freed by the last commits, kept for reuse.
grep -H '^(free pages)' "$work/tables-A" "$work/tables-B" |
  sed 's/.*tables-\([AB]\):(free pages) */free pages \1: /'
# The median wall time of each side over the rounds: one line to compare, since single rounds
# move with the machine.
python3 - "$work/log" <<'PY'
import statistics, sys
walls = {}
for line in open(sys.argv[1]):
    fields = line.split()
    walls.setdefault(fields[2].rstrip(":"), []).append(float(fields[3]))
for side, runs in walls.items():
    print(f"median {side}: {statistics.median(runs):.2f} s wall over {len(runs)} rounds")
PY
