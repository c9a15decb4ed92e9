#!/usr/bin/env bash
# Node history thinning (issue 48): which coarse window. A datadir whose node history is whole
# (ingested by a build before thinning, or with --proof-history larger than the chain) is
# copied once per coarse window in COARSES, and each copy is thinned as imports do past
# PROOF_HISTORY (storage/examples/thin_node_history.rs): the time it took, and the node history
# tables' sizes before and after (storage/examples/table_sizes.rs; MDBX keeps a file's freed
# pages for reuse, so the copy's bytes on disk do not shrink: bench/trie.sh measures a datadir
# thinned as it is ingested).
#
#   bench/thin.sh DATADIR
#   PROOF_HISTORY=1024 COARSES="256 512 1024 2048 4096" bench/thin.sh DATADIR
set -euo pipefail
cd "$(dirname "$0")/.."
data=$1
PROOF_HISTORY=${PROOF_HISTORY:-1024}
COARSES=${COARSES:-"256 512 1024 2048 4096"}
cargo build --release --quiet -p quarry-storage --examples
work=$(mktemp -d -p "$(dirname "$data")")
trap 'rm -rf "$work"' EXIT
sizes() {
  target/release/examples/table_sizes "$1" | grep -E '^(table|accounts_trie_history|storages_trie_history|trie_changesets|total) '
}
echo "== whole node history: $(du -sB1 "$data" | cut -f1) bytes on disk"
sizes "$data"
for coarse in $COARSES; do
  rm -rf "$work/copy"
  cp -a "$data" "$work/copy"
  echo "== coarse window $coarse, proof_history $PROOF_HISTORY"
  target/release/examples/thin_node_history "$work/copy" "$PROOF_HISTORY" "$coarse"
  sizes "$work/copy"
done
