#!/usr/bin/env bash
# `quarry backup` of a datadir, as it is and with --compact: wall time, what the command prints
# (the copy's head, size and time), and the copy's size on disk (`du -sB1`, allocated blocks)
# beside the source's. The compact copy leaves out MDBX's free pages; the plain one writes them
# and then punches them out of its file, as quarry does to the source after large commits.
#
# Then the writer's commit latency during a copy: on a plain copy of the datadir (so that the
# given one is never written), storage/examples/commit_latency commits COMMITS small write
# transactions (256 KiB each, durable) alone and while a `quarry backup` of that copy runs,
# alternating over ROUNDS rounds.
#
#   bench/backup.sh DATADIR
#   NO_BUILD=1 QUARRY_BIN=path bench/backup.sh DATADIR
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-2}
COMMITS=${COMMITS:-200}
[ -n "${NO_BUILD:-}" ] || cargo build --release --quiet -p quarry-storage --example commit_latency
latency=./target/release/examples/commit_latency
source bench/lib.sh
src=${1:?usage: bench/backup.sh DATADIR}
echo "source $src: $(du -sB1 "$src" | cut -f1) bytes on disk"
for mode in plain compact; do
  flag=()
  [[ $mode == compact ]] && flag=(--compact)
  started=$(date +%s.%N)
  "$quarry" backup --datadir "$src" --out "$work/$mode" "${flag[@]}"
  ended=$(date +%s.%N)
  printf '%-8s %8.2f s wall, %s bytes on disk\n' "$mode" "$(awk "BEGIN{print $ended - $started}")" \
    "$(du -sB1 "$work/$mode" | cut -f1)"
  rm -rf "${work:?}/$mode"
done
"$quarry" backup --datadir "$src" --out "$work/live" >/dev/null
for round in $(seq "$ROUNDS"); do
  echo "round $round, alone:        $("$latency" "$work/live" "$COMMITS")"
  "$quarry" backup --datadir "$work/live" --out "$work/during" >/dev/null &
  copying=$!
  while [ ! -e "$work/during/mdbx.dat.partial" ] && kill -0 "$copying" 2>/dev/null; do sleep 0.01; done
  during=$("$latency" "$work/live" "$COMMITS")
  if kill -0 "$copying" 2>/dev/null; then finished="the copy still running at the end"; else finished="the copy ended before the last commit"; fi
  wait "$copying"
  echo "round $round, during a copy: $during ($finished)"
  rm -rf "${work:?}/during"
done
