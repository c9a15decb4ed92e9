#!/usr/bin/env bash
# The state-history window on the scale chain: `quarry ingest` as an archive, with
# `--state-history 128` and with `--state-history 10064` (reth's full-node distance), in turn
# over ROUNDS rounds; per run the wall time and the datadir's size on disk (`du -sB1`,
# allocated blocks: MDBX files are sparse), then, of the last round, each datadir's largest
# tables (storage/examples/table_sizes). Then `quarry prune --state-history 128` of a copy of
# the archive: its time and the copy's size before and after (its freed pages are punched out
# of the file), and after `quarry backup --compact`.
#
#   bench/state_window.sh CHAIN_DIR          (a `quarry devchain --out` folder)
#   NO_BUILD=1 QUARRY_BIN=path ROUNDS=1 bench/state_window.sh CHAIN_DIR
#   WINDOWS="archive 128" bench/state_window.sh CHAIN_DIR    (which runs; prune needs archive)
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-1}
WINDOWS=${WINDOWS:-archive 128 10064}
chain=${1:?usage: bench/state_window.sh CHAIN_DIR}
[ -n "${NO_BUILD:-}" ] || cargo build --release --quiet -p quarry-storage --example table_sizes
source bench/lib.sh
sizes=./target/release/examples/table_sizes
for round in $(seq "$ROUNDS"); do
  for window in $WINDOWS; do
    flag=()
    [[ $window == archive ]] || flag=(--state-history "$window")
    rm -rf "${work:?}/$window"
    started=$(date +%s.%N)
    "$quarry" ingest --datadir "$work/$window" --genesis "$chain/genesis.json" "${flag[@]}" \
      "$chain/chain.rlp" >"$work/ingest.log" 2>&1
    ended=$(date +%s.%N)
    printf 'round %s %-8s %8.1f s, %s bytes on disk (%s)\n' "$round" "$window" \
      "$(awk "BEGIN{print $ended - $started}")" "$(du -sB1 "$work/$window" | cut -f1)" \
      "$(grep -h 'free pages' "$work/ingest.log")"
  done
done
for window in $WINDOWS; do
  echo "== $window: tables"
  "$sizes" "$work/$window"
done
[[ " $WINDOWS " == *" archive "* ]] || exit 0
rm -rf "${work:?}/128" "${work:?}/10064"
"$quarry" backup --datadir "$work/archive" --out "$work/pruned" >/dev/null
echo "archive copy: $(du -sB1 "$work/pruned" | cut -f1) bytes on disk"
started=$(date +%s.%N)
"$quarry" prune --datadir "$work/pruned" --state-history 128
ended=$(date +%s.%N)
printf 'prune to 128: %.1f s, %s bytes on disk\n' "$(awk "BEGIN{print $ended - $started}")" \
  "$(du -sB1 "$work/pruned" | cut -f1)"
"$quarry" backup --datadir "$work/pruned" --out "$work/compact" --compact >/dev/null
echo "its compact backup: $(du -sB1 "$work/compact" | cut -f1) bytes on disk"
