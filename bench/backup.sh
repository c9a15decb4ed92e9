#!/usr/bin/env bash
# `quarry backup` of a datadir, as it is and with --compact: wall time, what the command prints
# (the copy's head, size and time), and the copy's size on disk (`du -sB1`, allocated blocks)
# beside the source's. The compact copy leaves out MDBX's free pages, so its size is what the
# datadir's data takes; the source keeps the free pages its last large commits left.
#
#   bench/backup.sh DATADIR
#   NO_BUILD=1 QUARRY_BIN=path bench/backup.sh DATADIR
set -euo pipefail
cd "$(dirname "$0")/.."
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
