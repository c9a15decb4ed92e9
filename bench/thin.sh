#!/usr/bin/env bash
# Node history thinning: which coarse window. A datadir whose node history is whole
# (ingested by a build before thinning, or with --proof-history larger than the chain) is
# copied once per coarse window in COARSES, and each copy is thinned as imports do past
# PROOF_HISTORY (storage/examples/thin_node_history.rs): the time it took, and the node history
# tables' sizes before and after (storage/examples/table_sizes.rs; MDBX keeps a file's freed
# pages for reuse, so the copy's bytes on disk do not shrink: bench/trie.sh measures a datadir
# thinned as it is ingested).
#
# With N_FAR=N, each thinned copy is also served and eth_getProof timed as in bench/trie.sh
# (the head block's first log emitter, two slots): p50 and p99 of N requests 1,000 to 1,031
# and 10,000 to 11,008 blocks back.
#
#   bench/thin.sh DATADIR
#   PROOF_HISTORY=1024 COARSES="256 512 1024 2048 4096" N_FAR=64 bench/thin.sh DATADIR
set -euo pipefail
cd "$(dirname "$0")/.."
data=$1
PROOF_HISTORY=${PROOF_HISTORY:-1024}
COARSES=${COARSES:-"256 512 1024 2048 4096"}
N_FAR=${N_FAR:-0}
cargo build --release --quiet -p quarry-storage --examples
source bench/lib.sh
trap 'kill "${pids[@]}" 2>/dev/null || true; wait "${pids[@]}" 2>/dev/null || true; rm -rf "$work" "$copies"' EXIT
copies=$(mktemp -d -p "$(dirname "$data")")
proofs() {
  serve "thin$1" "$2" $'proof_window = 20000\n[[keys]]\nkey = "bench"'
  python3 bench/proofs.py "$(address "thin$1")" 0 "$N_FAR" "$N_FAR"
  kill "${pids[-1]}"
}
sizes() {
  target/release/examples/table_sizes "$1" | grep -E '^(table|accounts_trie_history|storages_trie_history|trie_changesets|total) '
}
echo "== whole node history: $(du -sB1 "$data" | cut -f1) bytes on disk"
sizes "$data"
for coarse in $COARSES; do
  rm -rf "$copies/copy"
  cp -a "$data" "$copies/copy"
  echo "== coarse window $coarse, proof_history $PROOF_HISTORY"
  target/release/examples/thin_node_history "$copies/copy" "$PROOF_HISTORY" "$coarse"
  sizes "$copies/copy"
  if [ "$N_FAR" -gt 0 ]; then proofs "$coarse" "$copies/copy"; fi
done
