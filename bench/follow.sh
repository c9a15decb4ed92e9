#!/usr/bin/env bash
# Following and reorganisation benchmark on the scale chain (BLOCKS x TXS, made by
# `quarry devchain` like bench/scale.sh and kept in target/bench/scale-BLOCKSxTXS):
#
#  1. changesets: `quarry ingest` of the chain with this build and with the build of BASE (the
#     last commit before per-block changesets were recorded), back to back: their cost.
#  2. catch-up: `quarry follow` into an empty datadir from a `quarry serve` holding the chain,
#     against the file ingest of step 1 (same run).
#  3. tip latency: blocks appended one at a time to the upstream's datadir (one `quarry ingest`
#     per block); for each, the time from the upstream answering it to the follower's own
#     `quarry serve` answering it, both polled every millisecond (p50, p90, p99, max). The
#     follower takes the upstream's pushed heads (eth_subscribe over WebSocket) unless
#     TIP_URL=http, when it polls every POLL_MS.
#  4. unwind: `quarry unwind` of the last 64 blocks (timed inside quarry: the unwind, the trie
#     rolled back and checked against the ancestor's state root, and the commit; not the process
#     start), then the same 64 blocks imported again.
#
#   bench/follow.sh                        BLOCKS=20000 TXS=100 TIP_BLOCKS=60 POLL_MS=20
#
# Ingest times are wall time and, since other work on a shared machine stretches wall time,
# also the process's CPU time (user + system).
#   SKIP_BASE=1 bench/follow.sh            skip step 1's baseline build and run
set -euo pipefail
cd "$(dirname "$0")/.."
BLOCKS=${BLOCKS:-20000}
TXS=${TXS:-100}
TIP_BLOCKS=${TIP_BLOCKS:-60}
POLL_MS=${POLL_MS:-20}
BASE=${BASE:-db0940a}
chain=target/bench/scale-${BLOCKS}x${TXS}
source bench/lib.sh
quarry=./target/release/quarry
if [ ! -f "$chain/chain.rlp" ]; then
  echo "== generating $BLOCKS blocks x $TXS transactions"
  $quarry devchain --out "$chain" --blocks "$BLOCKS" --txs-per-block "$TXS" 2>/dev/null | grep '^generated'
fi
genesis=$chain/genesis.json

# split FILE FIRST LAST OUT: blocks FIRST..LAST (1-based positions in FILE) to OUT, one file.
split() {
  python3 - "$@" <<'PY'
import sys
path, first, last, out = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
data = open(path, "rb").read()
pos, n, chunks = 0, 0, []
while pos < len(data):
    b = data[pos]
    if b <= 0xf7:
        size = 1 + (b - 0xc0)
    else:
        ll = b - 0xf7
        size = 1 + ll + int.from_bytes(data[pos + 1:pos + 1 + ll], "big")
    n += 1
    if first <= n <= last:
        chunks.append(data[pos:pos + size])
    pos += size
open(out, "wb").write(b"".join(chunks))
PY
}

seconds() { python3 -c 'import time; print(time.time())'; }
# cpu OUT COMMAND...: runs COMMAND, writing its user + system CPU seconds to OUT.
cpu() { local out=$1; shift; /usr/bin/time -f '%U %S' -o "$out" "$@"; }
cpu_s() { awk '{print $1 + $2}' "$1"; }

echo "== 1. ingest of $chain, with changesets (this build)"
start=$(seconds)
cpu "$work/cpu-new" $quarry ingest --datadir "$work/ingested" --genesis "$genesis" "$chain/chain.rlp" 2>/dev/null \
  | grep -E '^(imported|stages)'
ingest_s=$(python3 -c "print($(seconds) - $start)")
ingest_cpu=$(cpu_s "$work/cpu-new")
if [ "${SKIP_BASE:-0}" != 1 ]; then
  echo "== 1. ingest of $chain, without changesets ($BASE)"
  git worktree add --detach "$work/base" "$BASE" >/dev/null 2>&1
  cargo build --release --quiet --manifest-path "$work/base/Cargo.toml" --target-dir target/bench/base-target
  git worktree remove --force "$work/base"
  start=$(seconds)
  cpu "$work/cpu-base" target/bench/base-target/release/quarry ingest --datadir "$work/base-ingested" \
    --genesis "$genesis" "$chain/chain.rlp" 2>/dev/null | grep -E '^(imported|stages)'
  base_s=$(python3 -c "print($(seconds) - $start)")
  base_cpu=$(cpu_s "$work/cpu-base")
  rm -rf "$work/base-ingested"
  python3 -c "print(f'changesets: ingest {$ingest_s:.1f}s with, {$base_s:.1f}s without: {100*($ingest_s/$base_s-1):+.1f}% wall; CPU {$ingest_cpu:.1f}s with, {$base_cpu:.1f}s without: {100*($ingest_cpu/$base_cpu-1):+.1f}%')"
fi

echo "== 2. catch-up: quarry follow from quarry serve of the same chain"
serve upstream "$work/ingested" '[[keys]]
key = "bench"'
up=$(address upstream)
start=$(seconds)
$quarry follow --datadir "$work/follower" --genesis "$genesis" --upstream "http://$up/v3/bench" \
  --poll-ms "$POLL_MS" 2>"$work/follow.log" &
follow_pid=$!
pids+=($follow_pid)
until grep -q "imported blocks 1 to $BLOCKS" "$work/follow.log"; do
  kill -0 $follow_pid 2>/dev/null || { cat "$work/follow.log"; exit 1; }
  sleep 0.05
done
follow_s=$(python3 -c "print($(seconds) - $start)")
grep -o "imported blocks 1 to $BLOCKS in .*" "$work/follow.log"
python3 -c "print(f'catch-up: follow {$follow_s:.1f}s (process start to last commit), file ingest {$ingest_s:.1f}s: {$follow_s/$ingest_s:.2f}x')"
kill $follow_pid; wait $follow_pid 2>/dev/null || true

if [ "${TIP_URL:-ws}" = http ]; then
  tip_upstream="http://$up/v3/bench"; how="polls every ${POLL_MS} ms"
else
  tip_upstream="ws://$up/ws/v3/bench"; how="takes pushed heads over WebSocket"
fi
echo "== 3. tip latency: $TIP_BLOCKS blocks appended one at a time (the follower $how)"
first_tip=$((BLOCKS - TIP_BLOCKS + 1))
$quarry unwind --datadir "$work/ingested" --genesis "$genesis" --to $((first_tip - 1)) >/dev/null
$quarry unwind --datadir "$work/follower" --genesis "$genesis" --to $((first_tip - 1)) >/dev/null
$quarry follow --datadir "$work/follower" --genesis "$genesis" --upstream "$tip_upstream" \
  --poll-ms "$POLL_MS" 2>"$work/follow-tip.log" &
pids+=($!)
serve follower "$work/follower" '[[keys]]
key = "bench"'
down=$(address follower)
for n in $(seq "$first_tip" "$BLOCKS"); do split "$chain/chain.rlp" "$n" "$n" "$work/block-$n.rlp"; done
python3 - "$up" "$down" "$first_tip" "$BLOCKS" "$work" "$quarry" "$genesis" <<'PY'
import json, subprocess, sys, threading, time, urllib.request
up, down, first, last, work, quarry, genesis = sys.argv[1:8]
first, last = int(first), int(last)
def head(addr):
    req = urllib.request.Request(f"http://{addr}/v3/bench", method="POST",
        data=b'{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber","params":[]}',
        headers={"Content-Type": "application/json"})
    return int(json.load(urllib.request.urlopen(req))["result"], 16)
seen_up, seen_down, done = {}, {}, False
def poll():
    while not done:
        for addr, seen in ((up, seen_up), (down, seen_down)):
            n, t = head(addr), time.time()
            for k in range(first, n + 1):
                seen.setdefault(k, t)
        time.sleep(0.001)
thread = threading.Thread(target=poll); thread.start()
for n in range(first, last + 1):
    subprocess.run([quarry, "ingest", "--datadir", f"{work}/ingested", "--genesis", genesis,
                    f"{work}/block-{n}.rlp"], check=True, capture_output=True)
    deadline = time.time() + 30
    while n not in seen_down and time.time() < deadline:
        time.sleep(0.002)
    time.sleep(0.05)
done = True; thread.join()
lat = sorted(1000 * (seen_down[k] - seen_up[k]) for k in range(first, last + 1) if k in seen_down and k in seen_up)
pct = lambda p: lat[min(len(lat) - 1, int(p * len(lat)))]
print(f"tip latency over {len(lat)} blocks: p50 {pct(0.5):.1f} ms, p90 {pct(0.9):.1f} ms, p99 {pct(0.99):.1f} ms, max {lat[-1]:.1f} ms")
PY
grep -o "imported in [0-9.]* ms" "$work/follow-tip.log" | awk '{print $3}' | sort -n \
  | awk '{a[NR]=$1} END {printf "follower import of one block (fetch excluded): p50 %.1f ms\n", a[int(NR/2)+1]}'

echo "== 4. unwind of the last 64 blocks of the follower's $BLOCKS-block chain"
kill "${pids[@]}" 2>/dev/null || true; sleep 0.5
$quarry unwind --datadir "$work/follower" --genesis "$genesis" --to $((BLOCKS - 64))
split "$chain/chain.rlp" $((BLOCKS - 64 + 1)) "$BLOCKS" "$work/last64.rlp"
$quarry ingest --datadir "$work/follower" --genesis "$genesis" "$work/last64.rlp" 2>/dev/null | grep '^imported'
