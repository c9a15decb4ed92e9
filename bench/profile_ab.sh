#!/usr/bin/env bash
# Where the executing thread's CPU goes, two builds alternating: each ingests the chain into a
# fresh datadir under `perf record -F 200 --call-graph dwarf` for SECS seconds, and the samples
# of the executing thread (the one running the import's batches) are counted by the frames on
# their stacks, per block imported. A sample counts once under every frame it passes through, so the
# rows overlap. Stacks deeper than perf's 32 KiB copy of the stack are cut short and then count
# under none of the frames above the cut, which undercounts the state root's deepest walks.
#
#   bench/profile_ab.sh OLD_BIN NEW_BIN [CHAIN_DIR]    default target/bench/scale-20000x100
#   SECS=75 ROUNDS=1 bench/profile_ab.sh ...           (defaults)
#   FRAMES="compute_root put_trie_node" bench/profile_ab.sh ...   the frames to count
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 2 ] || { echo "usage: bench/profile_ab.sh OLD_BIN NEW_BIN [CHAIN_DIR]" >&2; exit 2; }
old=$1
new=$2
chain=${3:-target/bench/scale-20000x100}
SECS=${SECS:-75}
ROUNDS=${ROUNDS:-1}
FRAMES=${FRAMES:-execute_batch block::run compute_root first_node_under LeafCursor \
Importer::stage apply_block_state_changes StateTrie::write put_trie_node \
insert_compressed_block Importer::commit dpl_search}
command -v perf >/dev/null || { echo "bench/profile_ab.sh needs perf (linux-perf)" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat >"$work/count.py" <<'PY'
import collections, sys
blocks, frames = int(sys.argv[1]), sys.argv[2:]
threads = collections.defaultdict(list)
stack, tid = [], None
def flush():
    if tid is not None:
        threads[tid].append(stack)
for line in sys.stdin:
    if not line.strip():
        flush(); stack, tid = [], None
    elif not line[0].isspace():
        tid = line.split()[1]
    else:
        parts = line.split(None, 1)
        if len(parts) == 2:
            stack.append(parts[1])
flush()
# The executing thread: the one whose stacks pass through the import's batch loop.
busiest = max(threads.values(),
              key=lambda stacks: sum(any("execute_batch" in f for f in s) for s in stacks))
print(f"  {blocks} blocks, executing thread {len(busiest)} samples, "
      f"{len(busiest) / blocks:.3f} per block")
for frame in frames:
    n = sum(1 for s in busiest if any(frame in f for f in s))
    print(f"  {frame:<28} {n:7d} samples {n / blocks:7.4f} per block")
PY
for round in $(seq 1 "$ROUNDS"); do
  for side in A B; do
    bin=$old
    [ "$side" = B ] && bin=$new
    rm -rf "$work/data"
    timeout --signal=INT "$SECS" perf record -q -F 200 --call-graph dwarf,32768 \
      -o "$work/perf.data" -- "$bin" ingest --datadir "$work/data" \
      --genesis "$chain/genesis.json" "$chain/chain.rlp" >"$work/out" 2>&1 || true
    blocks=$(grep '^block' "$work/out" | tail -1 | awk '{print $3}')
    echo "round $round $side ($bin):"
    perf script -i "$work/perf.data" -F comm,tid,ip,sym --no-inline 2>/dev/null |
      python3 "$work/count.py" "${blocks:-1}" $FRAMES
  done
done
