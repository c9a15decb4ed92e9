#!/usr/bin/env bash
# Subscription benchmark: CONNECTIONS WebSocket connections, each subscribed to newHeads and to
# logs (a mix of address filters: each of the two busiest log addresses, a silent address, and
# all three), while another process appends blocks with `quarry ingest`, one commit per step.
# Reports p50/p99/max from commit to notification received (the client notes each commit by
# polling MDBX's last commit id every millisecond) and the server's heap (RssAnon: VmRSS would
# count the database pages the server maps, which are page cache).
#
#   bench/subscribe.sh                         CONNECTIONS=1000 STEPS=40 PER_STEP=1 INTERVAL_MS=250
#   BLOCKS=300 TXS=100 bench/subscribe.sh      the generated chain when the scale chain is absent
#   QUARRY_BIN=/other/quarry bench/subscribe.sh another build's server (and ingest), same chain
#
# The datadir of every block but the appended ones is kept in target/bench/subscribe-prefix-*
# and copied for each run, so a second run (or another build's) skips that ingest.
# The chain: target/bench/scale-20000x100 (bench/scale.sh) if it is there, else
# target/bench/subscribe-BLOCKSxTXS, generated once. The server runs with the default limits
# but max_connections (raised to CONNECTIONS + 64).
set -euo pipefail
cd "$(dirname "$0")/.."
CONNECTIONS=${CONNECTIONS:-1000}
STEPS=${STEPS:-40}
PER_STEP=${PER_STEP:-1}
INTERVAL_MS=${INTERVAL_MS:-250}
BLOCKS=${BLOCKS:-300}
TXS=${TXS:-100}
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"

cargo build --release --quiet -p quarry-gateway --example subscribe_bench
client=./target/release/examples/subscribe_bench
source bench/lib.sh

chain=target/bench/scale-20000x100
if [ ! -f "$chain/chain.rlp" ]; then
  chain=target/bench/subscribe-${BLOCKS}x${TXS}
  if [ ! -f "$chain/chain.rlp" ]; then
    echo "== generating $BLOCKS blocks x $TXS transactions into $chain"
    ./target/release/quarry devchain --out "$chain" --blocks "$BLOCKS" --txs-per-block "$TXS" >/dev/null 2>&1
  fi
fi
total=$("$client" --chain "$chain/chain.rlp" --write-prefix "$work/prefix.rlp" --from 0)
from=$((total - STEPS * PER_STEP))
"$client" --chain "$chain/chain.rlp" --write-prefix "$work/prefix.rlp" --from "$from" >/dev/null
prefix=target/bench/subscribe-prefix-$(basename "$chain")-$from
if [ ! -f "$prefix/done" ]; then
  echo "== $chain: ingesting blocks 1 to $from into $prefix"
  rm -rf "$prefix"
  ./target/release/quarry ingest --datadir "$prefix" --genesis "$chain/genesis.json" "$work/prefix.rlp" >/dev/null 2>&1
  touch "$prefix/done"
fi
# A prefix kept by an older quarry is brought to the current layout (nothing to do otherwise).
./target/release/quarry migrate --datadir "$prefix" >/dev/null 2>&1
echo "== $chain: blocks 1 to $from (a copy of $prefix), then appending $((STEPS * PER_STEP)) in $STEPS commits"
cp -r "$prefix" "$work/data"
serve main "$work/data" "max_connections = $((CONNECTIONS + 64))"$'\n[[keys]]\nkey = "bench-key"'
addr=$(address main)
pid=${pids[-1]}

# The two addresses with the most logs in the last 50 blocks, and one with none.
addresses=$(curl -s -X POST -H 'Content-Type: application/json' "http://$addr/v3/bench-key" \
  -d "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"eth_getLogs\",\"params\":[{\"fromBlock\":\"$(printf '0x%x' $((from > 50 ? from - 50 : 0)))\",\"toBlock\":\"latest\"}]}" |
  python3 -c '
import collections, json, sys
logs = json.load(sys.stdin)["result"]
top = [a for a, _ in collections.Counter(l["address"] for l in logs).most_common(2)]
print(",".join(top + ["0x000000000000000000000000000000000000dead"]))')
echo "== log filters over: $addresses"
"$client" --url "ws://$addr/ws/v3/bench-key" --pid "$pid" --quarry "$quarry" \
  --datadir "$work/data" --genesis "$chain/genesis.json" --chain "$chain/chain.rlp" \
  --from "$from" --steps "$STEPS" --per-step "$PER_STEP" --interval-ms "$INTERVAL_MS" \
  --connections "$CONNECTIONS" --addresses "$addresses"
