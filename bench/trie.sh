#!/usr/bin/env bash
# State trie benchmark, on a chain made by bench/scale.sh:
#  1. ingest of every block but the last into a fresh datadir: total time, the state-root and
#     write stages, and peak anonymous memory (RssAnon from /proc, sampled every 0.1 s; RSS
#     would count the memory-mapped database);
#  2. restart: `quarry ingest` of the last block on that datadir, from the process start to its
#     exit after the block is committed (RUNS times, each after `quarry unwind` of that block);
#  2b. the datadir's size on disk (allocated bytes, `du -sB1`) and each table's size
#     (storage/examples/table_sizes.rs);
#  3. eth_getProof of one account with two slots (bench/proofs.py): p50 and p99 of N sequential
#     requests on one connection at `latest`, of N_BACK 1,000 blocks back and of N_FAR 10,000
#     blocks back.
#
#   bench/trie.sh [CHAIN_DIR]        default target/bench/scale-20000x100 (BLOCKS=20000 bench/scale.sh)
#   RUNS=5 N=2000 N_BACK=320 N_FAR=64 bench/trie.sh ...
#   QUARRY_BIN=path bench/trie.sh ...   # another build (a before/after in one run)
#   NO_BUILD=1 QUARRY_BIN=path TABLE_SIZES=path bench/trie.sh ...   # builds given, none made
#   NO_TRIE_HISTORY=1 bench/trie.sh ... # ingest with --no-trie-history (proofs back then
#                                         undo the changesets)
#   PROOF_HISTORY=N bench/trie.sh ...   # ingest with --proof-history N (builds before it lack
#                                         the flag: leave it unset for them)
#   RETH=path/to/reth bench/trie.sh ... # first `reth import` of the same blocks, timed alike
#
# Ingests run under /usr/bin/time (apt-get install time): wall and CPU time.
set -euo pipefail
cd "$(dirname "$0")/.."
chain=${1:-target/bench/scale-20000x100}
RUNS=${RUNS:-5}
N=${N:-2000}
N_BACK=${N_BACK:-320}
N_FAR=${N_FAR:-64}
source bench/lib.sh
source bench/timed.sh
python3 - "$chain/chain.rlp" "$work" <<'PY'
import sys
data = open(sys.argv[1], 'rb').read()
def item_len(b, p):
    t = b[p]
    if t >= 0xf8:
        n = t - 0xf7
        return 1 + n + int.from_bytes(b[p + 1:p + 1 + n], 'big')
    return 1 + t - 0xc0
pos, last = 0, 0
while pos < len(data):
    last = pos
    pos += item_len(data, pos)
open(f"{sys.argv[2]}/earlier.rlp", 'wb').write(data[:last])
open(f"{sys.argv[2]}/last.rlp", 'wb').write(data[last:])
PY
genesis=$chain/genesis.json
data=$work/data

if [[ -n ${RETH:-} ]]; then
  echo "== reth import of all blocks but the last ($("$RETH" --version | head -1))"
  timed "$work/reth-import.out" "$RETH" import --chain "$genesis" --datadir "$work/reth" \
    "$work/earlier.rlp"
  grep -o 'Import complete.*' "$work/reth-import.out" || { tail "$work/reth-import.out"; exit 1; }
  rm -rf "$work/reth"
fi

echo "== ingest of all blocks but the last"
timed "$work/ingest.out" "$quarry" ingest --datadir "$data" --genesis "$genesis" \
  "$work/earlier.rlp" ${NO_TRIE_HISTORY:+--no-trie-history} \
  ${PROOF_HISTORY:+--proof-history "$PROOF_HISTORY"}
grep -E '^(imported|stages)' "$work/ingest.out"
# Allocated bytes: what the datadir takes on disk (--apparent-size would count MDBX's holes).
echo "datadir $(du -sB1 "$data" | cut -f1) bytes on disk"
[ -n "${NO_BUILD:-}" ] || cargo build --release --quiet -p quarry-storage --example table_sizes
"${TABLE_SIZES:-target/release/examples/table_sizes}" "$data"

echo "== restart: ingest of one more block on the stored chain"
head=$("$quarry" ingest --datadir "$data" --genesis "$genesis" "$work/last.rlp" 2>/dev/null \
  | sed -n 's/^head: block \([0-9]*\).*/\1/p')
times=()
for _ in $(seq 1 "$RUNS"); do
  "$quarry" unwind --datadir "$data" --genesis "$genesis" --to $((head - 1)) >/dev/null
  start=$(date +%s.%N)
  "$quarry" ingest --datadir "$data" --genesis "$genesis" "$work/last.rlp" >/dev/null 2>&1
  times+=("$(echo "$(date +%s.%N) - $start" | bc)")
done
printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR]=$1} END {printf "start to block %d committed: median %.3fs (min %.3fs, max %.3fs, %d runs)\n", '"$head"', a[int((NR+1)/2)], a[1], a[NR], NR}'

echo "== eth_getProof"
# proof_window: the 10,000-back row reaches 11,008 blocks back.
serve proof "$data" $'proof_window = 20000\n[[keys]]\nkey = "bench"'
addr=$(address proof)
python3 bench/proofs.py "$addr" "$N" "$N_BACK" "$N_FAR"
