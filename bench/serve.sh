#!/usr/bin/env bash
# Serve benchmark: requests/s and p50/p99 latency of each method with wrk, at 1, 16 and 64
# connections, against the release build serving the rpc-compat chain over HTTP. The trivial
# web3_clientVersion is measured in the same run as the ceiling: right before every run of a
# method, ROUNDS times over; each row shows the median of its shares of the ceiling.
#
#   bench/serve.sh                   (needs wrk: apt-get install wrk)
#   DURATION=2 ROUNDS=3 CONNECTIONS="1 16 64" ONLY=getStorageAt bench/serve.sh
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${DURATION:-2}
ROUNDS=${ROUNDS:-3}
CONNECTIONS=${CONNECTIONS:-"1 16 64"}
ONLY=${ONLY:-}  # a pattern: only the methods whose row name matches it
FIXTURES=${FIXTURES:-../shared/fixtures/rpc-compat}
command -v wrk >/dev/null || { echo "wrk not found: apt-get install wrk" >&2; exit 1; }

source bench/lib.sh
./target/release/quarry ingest --datadir "$work/data" --genesis "$FIXTURES/genesis.json" \
  "$FIXTURES/chain.rlp" >/dev/null 2>&1
serve main "$work/data" $'[[keys]]\nkey = "bench-key"'
addr=$(address main)
url="http://$addr/v3/bench-key"

call() { curl -s -X POST -H 'Content-Type: application/json' "$url" -d "$1"; }
req() { printf '{"jsonrpc":"2.0","id":1,"method":"%s","params":%s}' "$1" "$2"; }
block54=$(call "$(req eth_getBlockByNumber '["0x36",false]')" | python3 -c 'import json,sys; print(json.load(sys.stdin)["result"]["hash"])')
tx=$(call "$(req eth_getBlockByNumber '["0x2a",false]')" | python3 -c 'import json,sys; print(json.load(sys.stdin)["result"]["transactions"][0])')
uncle_block=$(call "$(req eth_getBlockByNumber '["0x3",false]')" | python3 -c 'import json,sys; print(json.load(sys.stdin)["result"]["hash"])')
# Block 2 holds 59 receipts with about 10 MB of log data: a receipt from it, and the emitter
# contract's small logs beside them.
big_tx=$(call "$(req eth_getBlockByNumber '["0x2",false]')" | python3 -c 'import json,sys; print(json.load(sys.stdin)["result"]["transactions"][0])')
emitter=0x7dcd17433742f4c0ca53122ab541d0ba67fc27df
emit=0x00000000000000000000000000000000000000000000000000000000656d6974
emit_topic1=0x95b7276947f6331672b0c63eca28c1d39f25286d5e2793d6a487837ff1475ba0

# Init code that counts down from 0x9470 (26 gas a turn): about 1M gas with creation costs.
HEAVY=0x620094705b600190038060045700
# name|method|params
cases=(
  "web3_clientVersion (ceiling)|web3_clientVersion|[]"
  "eth_getStorageAt latest|eth_getStorageAt|[\"0x7dcd17433742f4c0ca53122ab541d0ba67fc27df\",\"0x0\",\"latest\"]"
  "eth_getStorageAt block 10|eth_getStorageAt|[\"0x7dcd17433742f4c0ca53122ab541d0ba67fc27df\",\"0x0\",\"0xa\"]"
  "eth_getStorageAt latest, new slot each time|eth_getStorageAt|[\"0x7dcd17433742f4c0ca53122ab541d0ba67fc27df\",\"NEWSLOT\",\"latest\"]"
  "eth_getTransactionReceipt|eth_getTransactionReceipt|[\"$tx\"]"
  "eth_getTransactionReceipt, block 2 (big logs)|eth_getTransactionReceipt|[\"$big_tx\"]"
  "eth_getLogs address, blocks 1-4|eth_getLogs|[{\"address\":\"$emitter\",\"fromBlock\":\"0x1\",\"toBlock\":\"0x4\"}]"
  "eth_getLogs two topics, blocks 1-54|eth_getLogs|[{\"topics\":[\"$emit\",\"$emit_topic1\"],\"fromBlock\":\"0x1\",\"toBlock\":\"0x36\"}]"
  "eth_getBlockReceipts block 2 (21 MB)|eth_getBlockReceipts|[\"0x2\"]"
  "eth_getBlockByNumber hashes|eth_getBlockByNumber|[\"0x36\",false]"
  "eth_getBlockByNumber full|eth_getBlockByNumber|[\"0x36\",true]"
  "eth_getBlockByHash hashes|eth_getBlockByHash|[\"$block54\",false]"
  "eth_getBlockByHash full|eth_getBlockByHash|[\"$block54\",true]"
  "eth_getTransactionByBlockNumberAndIndex|eth_getTransactionByBlockNumberAndIndex|[\"0x2a\",\"0x0\"]"
  "eth_getTransactionByBlockHashAndIndex|eth_getTransactionByBlockHashAndIndex|[\"$block54\",\"0x0\"]"
  "eth_getUncleByBlockNumberAndIndex|eth_getUncleByBlockNumberAndIndex|[\"0x3\",\"0x0\"]"
  "eth_getUncleByBlockHashAndIndex|eth_getUncleByBlockHashAndIndex|[\"$uncle_block\",\"0x0\"]"
  "rollup_getInfo|rollup_getInfo|[]"
  "eth_call cheap (view, rpc-compat fixture)|eth_call|[{\"from\":\"0x0000000000000000000000000000000000000000\",\"input\":\"0xff01\",\"to\":\"0x17e7eedce4ac02ef114a7ed9fe6e2f33feba1667\"},\"latest\"]"
  "eth_call heavy (~1M gas loop)|eth_call|[{\"from\":\"0x0000000000000000000000000000000000000000\",\"input\":\"$HEAVY\"},\"latest\"]"
)

cat >"$work/post.lua" <<'LUA'
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = os.getenv("BODY")
LUA
# A body with NEWSLOT gets a slot no request asked before (so no cache can answer): a counter
# per wrk thread, each thread's in a range of its own. Building each request in Lua costs wrk
# CPU, on the cores the server uses, so such a method's paired ceiling run uses this script too.
cat >"$work/newslot.lua" <<'LUA'
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
local template = os.getenv("BODY")
local threads = 0
function setup(thread)
  threads = threads + 1
  thread:set("first", threads * 2 ^ 40)
end
function init(args)
  next_slot = first
end
function request()
  next_slot = next_slot + 1
  local body = template:gsub("NEWSLOT", string.format("0x%x", next_slot))
  return wrk.format(nil, nil, nil, body)
end
LUA

echo "quarry serve on $addr, wrk ${DURATION}s per cell, $(nproc) cores shared by server and wrk"
# Warm up: first connections, thread pools and page cache are not what is being measured.
BODY=$(req eth_getBlockByNumber '["0x36",true]') wrk -t2 -c16 -d2s -s "$work/post.lua" "$url" >/dev/null
: >"$work/results"
for c in "${cases[@]}"; do
  IFS='|' read -r name method params <<<"$c"
  # Every benchmarked call must succeed with a non-null result.
  call "$(req "$method" "${params//NEWSLOT/0x0}")" | python3 -c 'import json,sys; r=json.load(sys.stdin); assert r.get("result") is not None, r' \
    || { echo "$name: bad response" >&2; exit 1; }
done
measure() { # name conns body round|paired-method script
  local threads=$(( $2 < 2 ? 1 : 2 )) out rps p50 p99 script=$5
  out=$(BODY="$3" wrk -t"$threads" -c"$2" -d"${DURATION}s" --latency -s "$work/$script" "$url")
  if grep -q 'Non-2xx' <<<"$out"; then echo "$1: non-2xx responses" >&2; exit 1; fi
  rps=$(sed -n 's/^Requests\/sec: *\([0-9.]*\).*/\1/p' <<<"$out")
  p50=$(awk '$1=="50%"{print $2}' <<<"$out")
  p99=$(awk '$1=="99%"{print $2}' <<<"$out")
  echo "$1|$2|$rps|$p50|$p99|$4|$5" >>"$work/results"
}
# The load of this shared machine drifts from minute to minute, so each method is measured right
# after a ceiling run, ROUNDS times over; its share is the median of those paired shares.
for conns in $CONNECTIONS; do
  for round in $(seq 1 "$ROUNDS"); do
    for c in "${cases[@]:1}"; do
      IFS='|' read -r name method params <<<"$c"
      [[ -z $ONLY || $name =~ $ONLY ]] || continue
      script=post.lua
      [[ $params == *NEWSLOT* ]] && script=newslot.lua
      measure "web3_clientVersion (ceiling)" "$conns" "$(req web3_clientVersion '[]')" "$round|$name" "$script"
      measure "$name" "$conns" "$(req "$method" "$params")" "$round|$name" "$script"
    done
  done
done

python3 - "$work/results" <<'PY'
import sys, statistics
def micros(text):
    for unit, scale in (("us", 1), ("ms", 1e3), ("s", 1e6)):
        if text.endswith(unit):
            return float(text[: -len(unit)]) * scale
    raise ValueError(text)
def show(us):
    return f"{us:.0f}us" if us < 1000 else f"{us / 1000:.2f}ms"
# name|conns|rps|p50|p99|round|paired method|wrk script
rows = [l.rstrip("\n").split("|") for l in open(sys.argv[1])]
ceiling = {(r[1], r[5], r[6]): float(r[2]) for r in rows if r[0].startswith("web3_clientVersion")}
conns = sorted({r[1] for r in rows}, key=int)
print()
print(f"{'method':<42}" + "".join(f"{'c=' + c:>36}" for c in conns))
print(f"{'':<42}" + "".join(f"{'req/s  (% ceil)     p50      p99':>36}" for _ in conns))
# The ceiling row shows the runs with a fixed body, unless only Lua-built bodies were measured.
plain = [r for r in rows if r[0].startswith("web3_clientVersion") and r[7] == "post.lua"]
plain = plain or [r for r in rows if r[0].startswith("web3_clientVersion")]
runs = {c: [r for r in plain if r[1] == c] for c in conns}
line = f"{'web3_clientVersion (ceiling)':<42}"
for c in conns:
    rps = statistics.median(float(r[2]) for r in runs[c])
    p50 = statistics.median(micros(r[3]) for r in runs[c])
    p99 = statistics.median(micros(r[4]) for r in runs[c])
    line += f"{rps:>11.0f} ( 100%) {show(p50):>8} {show(p99):>8}"
print(line)
for name in dict.fromkeys(r[0] for r in rows if not r[0].startswith("web3_clientVersion")):
    line = f"{name:<42}"
    for c in conns:
        mine = [r for r in rows if r[0] == name and r[1] == c]
        share = statistics.median(100 * float(r[2]) / ceiling[(c, r[5], r[6])] for r in mine)
        rps = statistics.median(float(r[2]) for r in mine)
        p50 = statistics.median(micros(r[3]) for r in mine)
        p99 = statistics.median(micros(r[4]) for r in mine)
        line += f"{rps:>11.0f} ({share:4.0f}%) {show(p50):>8} {show(p99):>8}"
    print(line)
rounds = len({r[5] for r in rows})
print(f"\nmedians of {rounds} rounds; each share pairs a method's run with the ceiling run just before it")
PY
