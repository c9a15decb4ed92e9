#!/usr/bin/env bash
# Trace benchmark: debug_traceTransaction of the dev chain's heaviest transaction with the
# callTracer and with the struct logger, next to eth_call of the same transaction's call on the
# same state, in the same run: requests/s and p50/p99 latency with wrk against the release
# build. Each trace run follows an eth_call run, ROUNDS times over; the rows show medians and
# the trace's cost as a multiple of the call's. The struct logger's cost per EVM step is its
# extra latency over the call divided by the steps it logs.
#
#   bench/trace.sh                   (needs wrk: apt-get install wrk)
#   DURATION=3 ROUNDS=3 CONNECTIONS="1 4" bench/trace.sh
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${DURATION:-3}
ROUNDS=${ROUNDS:-3}
CONNECTIONS=${CONNECTIONS:-"1 4"}
command -v wrk >/dev/null || { echo "wrk not found: apt-get install wrk" >&2; exit 1; }

source bench/lib.sh
./target/release/quarry ingest --datadir "$work/data" --genesis testdata/devnet/genesis.json \
  testdata/devnet/chain.rlp >/dev/null 2>&1
serve main "$work/data" $'[[keys]]\nkey = "bench-key"'
addr=$(address main)
url="http://$addr/v3/bench-key"
call() { curl -s -X POST -H 'Content-Type: application/json' "$url" -d "$1"; }
req() { printf '{"jsonrpc":"2.0","id":1,"method":"%s","params":%s}' "$1" "$2"; }

# The heaviest transaction that is its block's first (so that tracing it replays nothing
# before it), and its call as eth_call takes it, on its parent's state.
read -r tx call_params < <(python3 - "$url" <<'PY'
import json, sys, urllib.request
url = sys.argv[1]
def rpc(method, params):
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).encode()
    request = urllib.request.Request(url, body, {"Content-Type": "application/json"})
    return json.load(urllib.request.urlopen(request))["result"]
head = int(rpc("eth_blockNumber", []), 16)
best = None
for number in range(1, head + 1):
    block = rpc("eth_getBlockByNumber", [hex(number), True])
    if not block["transactions"]:
        continue
    first = block["transactions"][0]
    receipt = rpc("eth_getTransactionReceipt", [first["hash"]])
    gas = int(receipt["gasUsed"], 16)
    if first["to"] and (best is None or gas > best[0]):
        best = (gas, first, number)
gas, tx, number = best
call = {k: tx[k] for k in ("from", "to", "gas", "value", "input")}
print(tx["hash"], json.dumps([call, hex(number - 1)], separators=(",", ":")))
PY
)
trace_params() { printf '["%s",%s]' "$tx" "$1"; }
cases=(
  "eth_call|eth_call|$call_params"
  "debug_traceTransaction callTracer|debug_traceTransaction|$(trace_params '{"tracer":"callTracer"}')"
  "debug_traceTransaction struct logger|debug_traceTransaction|$(trace_params '{}')"
  "debug_traceTransaction struct logger, no stack|debug_traceTransaction|$(trace_params '{"disableStack":true}')"
)
for c in "${cases[@]}"; do
  IFS='|' read -r name method params <<<"$c"
  call "$(req "$method" "$params")" | python3 -c 'import json,sys; r=json.load(sys.stdin); assert r.get("result") is not None, r' \
    || { echo "$name: bad response" >&2; exit 1; }
done
trace=$(call "$(req debug_traceTransaction "$(trace_params '{}')")")
steps=$(python3 -c 'import json,sys; print(len(json.load(sys.stdin)["result"]["structLogs"]))' <<<"$trace")
gas=$(python3 -c 'import json,sys; print(json.load(sys.stdin)["result"]["gas"])' <<<"$trace")
echo "quarry serve on $addr; transaction $tx: $gas gas, $steps EVM steps, struct logs of ${#trace} bytes"
echo "wrk ${DURATION}s per cell, $(nproc) cores shared by server and wrk"

cat >"$work/post.lua" <<'LUA'
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = os.getenv("BODY")
LUA
BODY=$(req eth_call "$call_params") wrk -t1 -c4 -d2s -s "$work/post.lua" "$url" >/dev/null
: >"$work/results"
measure() { # name conns body round
  local threads=$(( $2 < 2 ? 1 : 2 )) out rps p50 p99
  out=$(BODY="$3" wrk -t"$threads" -c"$2" -d"${DURATION}s" --latency -s "$work/post.lua" "$url")
  if grep -q 'Non-2xx' <<<"$out"; then echo "$1: non-2xx responses" >&2; exit 1; fi
  rps=$(sed -n 's/^Requests\/sec: *\([0-9.]*\).*/\1/p' <<<"$out")
  p50=$(awk '$1=="50%"{print $2}' <<<"$out")
  p99=$(awk '$1=="99%"{print $2}' <<<"$out")
  echo "$1|$2|$rps|$p50|$p99|$4" >>"$work/results"
}
for conns in $CONNECTIONS; do
  for round in $(seq 1 "$ROUNDS"); do
    for c in "${cases[@]:1}"; do
      IFS='|' read -r name method params <<<"$c"
      measure "eth_call" "$conns" "$(req eth_call "$call_params")" "$round|$name"
      measure "$name" "$conns" "$(req "$method" "$params")" "$round|$name"
    done
  done
done

python3 -B - "$work/results" "$steps" <<'PY'
import sys, statistics
from bench.wrk_latency import micros, show
steps = int(sys.argv[2])
# name|conns|rps|p50|p99|round|paired
rows = [l.rstrip("\n").split("|") for l in open(sys.argv[1])]
calls = {(r[1], r[5], r[6]): r for r in rows if r[0] == "eth_call"}
conns = sorted({r[1] for r in rows}, key=int)
print()
print(f"{'method':<44}" + "".join(f"{'c=' + c:>44}" for c in conns))
print(f"{'':<44}" + "".join(f"{'req/s  (x call)      p50      p99  us/step':>44}" for _ in conns))
line = f"{'eth_call (same call, same state)':<44}"
for c in conns:
    mine = [r for r in rows if r[0] == "eth_call" and r[1] == c]
    line += f"{statistics.median(float(r[2]) for r in mine):>11.0f} (  1.00) "
    line += f"{show(statistics.median(micros(r[3]) for r in mine)):>8} "
    line += f"{show(statistics.median(micros(r[4]) for r in mine)):>8} {'':>8}"
print(line)
for name in dict.fromkeys(r[0] for r in rows if r[0] != "eth_call"):
    line = f"{name:<44}"
    for c in conns:
        mine = [r for r in rows if r[0] == name and r[1] == c]
        pairs = [(r, calls[(c, r[5], r[6])]) for r in mine]
        # Cost relative to the call: the call's request rate over the trace's, per pair.
        cost = statistics.median(float(call[2]) / float(r[2]) for r, call in pairs)
        extra = statistics.median(micros(r[3]) - micros(call[3]) for r, call in pairs)
        per_step = f"{extra / steps:.3f}" if "struct" in name else ""
        line += f"{statistics.median(float(r[2]) for r in mine):>11.0f} ({cost:6.2f}) "
        line += f"{show(statistics.median(micros(r[3]) for r in mine)):>8} "
        line += f"{show(statistics.median(micros(r[4]) for r in mine)):>8} {per_step:>8}"
    print(line)
rounds = len({r[5] for r in rows})
print(f"\nmedians of {rounds} rounds; each trace run follows an eth_call run; us/step: the struct logger's p50 over the call's, per logged step")
PY
