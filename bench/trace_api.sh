#!/usr/bin/env bash
# trace_* benchmark on the scale chain: trace_block and trace_replayBlockTransactions (trace,
# stateDiff) of its heaviest block with wrk (requests/s, p50, p99), and trace_filter timed
# request by request (median of ROUNDS): a rare address over every block and a busy one over
# 1,000 blocks, answered from the trace index, next to the same queries re-executing every
# block of the range (`log_index = false`, over 1,000 blocks only: over all of them it runs
# for hours).
#
#   bench/trace_api.sh                                    (needs wrk: apt-get install wrk)
#   DATADIR=/tmp/scale NO_BUILD=1 bench/trace_api.sh      (reuses an ingested datadir)
#   RETH=path/to/reth RETH_DATADIR=dir bench/trace_api.sh (reth serving its import of the same
#                                                          chain, measured alike in the same run,
#                                                          its trace_filter allowed the whole range)
set -euo pipefail
cd "$(dirname "$0")/.."
SCALE=${SCALE:-/work/bench-data/scale-20000x100}
DURATION=${DURATION:-5}
ROUNDS=${ROUNDS:-3}
command -v wrk >/dev/null || { echo "wrk not found: apt-get install wrk" >&2; exit 1; }

source bench/lib.sh
datadir=${DATADIR:-$work/scale}
if [ ! -e "$datadir/mdbx.dat" ]; then
  started=$(date +%s)
  "$quarry" ingest --datadir "$datadir" --genesis "$SCALE/genesis.json" "$SCALE/chain.rlp" >/dev/null 2>&1
  echo "ingested $SCALE in $(( $(date +%s) - started ))s"
fi
limits=$'call_timeout_ms = 600000\nlogs_timeout_ms = 3600000\nmax_logs = 1000000\nmax_response_bytes = 1000000000'
# Top-level settings come before the `[[keys]]` table.
serve indexed "$datadir" "$limits"$'\n[[keys]]\nkey = "bench-key"'
serve scanning "$datadir" "$limits"$'\nlog_index = false\n[[keys]]\nkey = "bench-key"'
url="http://$(address indexed)/v3/bench-key"
scan_url="http://$(address scanning)/v3/bench-key"
req() { printf '{"jsonrpc":"2.0","id":1,"method":"%s","params":%s}' "$1" "$2"; }

# The heaviest block of a sample (every 50th), and of that block's first addresses the one in
# the most blocks (busy) and the one in the fewest (rare), counting at most 50 traces each.
read -r heavy busy rare rare_count head < <(python3 - "$url" <<'PY'
import json, sys, urllib.request
url = sys.argv[1]
def rpc(method, params):
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).encode()
    request = urllib.request.Request(url, body, {"Content-Type": "application/json"})
    answer = json.load(urllib.request.urlopen(request, timeout=3600))
    assert "result" in answer, answer
    return answer["result"]
head = int(rpc("eth_blockNumber", []), 16)
blocks = [rpc("eth_getBlockByNumber", [hex(n), False]) for n in range(1, head + 1, 50)]
heavy = max(blocks, key=lambda b: int(b["gasUsed"], 16))
traces = rpc("trace_block", [heavy["number"]])
seen = {}
for trace in traces:
    for key in ("from", "to"):
        address = trace["action"].get(key)
        if address and address not in seen and len(seen) < 12:
            # At most 50: a busy address stops early, a rare one is a few index reads.
            found = rpc("trace_filter", [{"toAddress": [address], "count": 50}])
            seen[address] = len({t["blockNumber"] for t in found})
rare = min(seen, key=seen.get)
busy = max(seen, key=seen.get)
print(heavy["number"], busy, rare, seen[rare], head)
PY
)
echo "quarry serve: $(address indexed) (trace index), $(address scanning) (re-executes every block)"
echo "heaviest sampled block $heavy; busy address $busy; rare address $rare (in $rare_count blocks of $head)"
targets=("quarry|$url")
if [[ -n ${RETH:-} ]]; then
  serve_reth "$SCALE/genesis.json" "${RETH_DATADIR:?RETH_DATADIR: the datadir of reth import of the chain}" \
    eth,debug,trace --rpc.max-trace-filter-blocks "$head"
  targets+=("reth|$reth_url")
  echo "reth node: $reth_url ($("$RETH" --version | head -1))"
fi

cat >"$work/post.lua" <<'LUA'
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = os.getenv("BODY")
LUA
echo
printf '%-8s %-52s %6s %10s %10s %10s\n' server "method (block $heavy)" conns "req/s" p50 p99
for c in "trace_block|[\"$heavy\"]" \
         "trace_replayBlockTransactions|[\"$heavy\",[\"trace\"]]" \
         "trace_replayBlockTransactions|[\"$heavy\",[\"stateDiff\"]]" \
         "debug_traceBlockByNumber|[\"$heavy\",{\"tracer\":\"callTracer\"}]"; do
  IFS='|' read -r method params <<<"$c"
  for conns in 1 2; do
    # Servers alternate row by row: this machine's speed drifts.
    for target in "${targets[@]}"; do
      IFS='|' read -r server target_url <<<"$target"
      out=$(BODY=$(req "$method" "$params") wrk -t1 -c"$conns" -d"${DURATION}s" --latency -s "$work/post.lua" "$target_url")
      if grep -q 'Non-2xx' <<<"$out"; then echo "$server $method: non-2xx responses" >&2; exit 1; fi
      rps=$(sed -n 's/^Requests\/sec: *\([0-9.]*\).*/\1/p' <<<"$out")
      printf '%-8s %-52s %6s %10s %10s %10s\n' "$server" "$method $(cut -c1-30 <<<"$params" | tr -d '"[]')" "$conns" "$rps" \
        "$(awk '$1=="50%"{print $2}' <<<"$out")" "$(awk '$1=="99%"{print $2}' <<<"$out")"
    done
  done
done

# timed URL BODY: the median wall time of ROUNDS requests, and the answer's trace count.
timed() {
  local times=() count
  for _ in $(seq "$ROUNDS"); do
    times+=("$(curl -s -o "$work/answer" -w '%{time_total}' -X POST -H 'Content-Type: application/json' "$1" -d "$2")")
  done
  count=$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); assert "result" in r, r; print(len(r["result"]))' "$work/answer")
  printf '%s %s\n' "$(printf '%s\n' "${times[@]}" | sort -n | sed -n "$(( (ROUNDS + 1) / 2 ))p")" "$count"
}
from_busy=$(( head > 1000 ? head - 999 : 1 ))
echo
printf '%-60s %12s %8s\n' "trace_filter" "seconds" traces
for c in "rare address, all $head blocks, index|$url|{\"toAddress\":[\"$rare\"]}" \
         "rare address, blocks $from_busy..$head, index|$url|{\"fromBlock\":\"$(printf '%#x' "$from_busy")\",\"toAddress\":[\"$rare\"]}" \
         "rare address, blocks $from_busy..$head, re-executing all|$scan_url|{\"fromBlock\":\"$(printf '%#x' "$from_busy")\",\"toAddress\":[\"$rare\"]}" \
         "busy address, blocks $from_busy..$head, index|$url|{\"fromBlock\":\"$(printf '%#x' "$from_busy")\",\"toAddress\":[\"$busy\"]}" \
         "busy address, blocks $from_busy..$head, re-executing all|$scan_url|{\"fromBlock\":\"$(printf '%#x' "$from_busy")\",\"toAddress\":[\"$busy\"]}"; do
  IFS='|' read -r name target filter <<<"$c"
  read -r seconds count < <(timed "$target" "$(req trace_filter "[$filter]")")
  printf '%-60s %12s %8s\n' "$name" "$seconds" "$count"
  # reth re-executes every block of the range (its trace_filter has no index).
  if [[ -n ${RETH:-} && $name != *re-executing* ]]; then
    read -r seconds count < <(timed "$reth_url" "$(req trace_filter "[$filter]")")
    printf '%-60s %12s %8s\n' "${name%, index}, reth" "$seconds" "$count"
  fi
done
