#!/usr/bin/env bash
# Serve benchmark: requests/s and p50/p99 latency of each method with wrk, at 1, 16 and 64
# connections, against the release build serving the rpc-compat chain over HTTP. The trivial
# web3_clientVersion is measured in the same run as the ceiling: right before every run of a
# method, ROUNDS times over; each row shows the median of its shares of the ceiling.
#
#   bench/serve.sh                   (needs wrk: apt-get install wrk)
#   DURATION=2 ROUNDS=3 CONNECTIONS="1 16 64" ONLY=getStorageAt bench/serve.sh
#   RETH=/path/to/reth CONNECTIONS=64 bench/serve.sh
#   BEFORE=/path/to/older/quarry bench/serve.sh   # another build beside this one
#
# With RETH set, the same chain is imported with `reth import` and served by `reth node` (no
# peers), and every row is measured on both servers in the same round, each paired with its own
# server's ceiling run; the table then compares requests/s. BEFORE (another quarry build, e.g.
# the commit before a change) is served the same way, from a datadir it ingests itself (so
# builds of different layouts compare), and compared alike.
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${DURATION:-2}
ROUNDS=${ROUNDS:-3}
CONNECTIONS=${CONNECTIONS:-"1 16 64"}
ONLY=${ONLY:-}  # a pattern: only the methods whose row name matches it
RETH=${RETH:-}  # a reth binary: measure reth serving the same chain beside quarry
BEFORE=${BEFORE:-}  # another quarry binary: measure it serving the same datadir beside this one
FIXTURES=${FIXTURES:-../shared/fixtures/rpc-compat}
command -v wrk >/dev/null || { echo "wrk not found: apt-get install wrk" >&2; exit 1; }

source bench/lib.sh
./target/release/quarry ingest --datadir "$work/data" --genesis "$FIXTURES/genesis.json" \
  "$FIXTURES/chain.rlp" >/dev/null 2>&1
serve main "$work/data" $'[[keys]]\nkey = "bench-key"'
addr=$(address main)
url="http://$addr/v3/bench-key"
servers=("quarry|$url")
declare -A server_pid=([quarry]=${pids[-1]})
if [[ -n $BEFORE ]]; then
  "$BEFORE" ingest --datadir "$work/before-data" --genesis "$FIXTURES/genesis.json" \
    "$FIXTURES/chain.rlp" >/dev/null 2>&1
  quarry=$BEFORE serve before "$work/before-data" $'[[keys]]\nkey = "bench-key"'
  servers+=("before|http://$(address before)/v3/bench-key")
  server_pid[before]=${pids[-1]}
fi
if [[ -n $RETH ]]; then
  "$RETH" import --chain "$FIXTURES/genesis.json" --datadir "$work/reth" "$FIXTURES/chain.rlp" \
    >"$work/reth-import.log" 2>&1 || { tail "$work/reth-import.log" >&2; exit 1; }
  serve_reth "$FIXTURES/genesis.json" "$work/reth" eth,web3
  server_pid[reth]=${pids[-1]}
  servers+=("reth|$reth_url")
fi

call() { curl -s -X POST -H 'Content-Type: application/json' "${2:-$url}" -d "$1"; }
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
  "eth_blockNumber|eth_blockNumber|[]"
  "eth_getStorageAt latest|eth_getStorageAt|[\"0x7dcd17433742f4c0ca53122ab541d0ba67fc27df\",\"0x0\",\"latest\"]"
  "eth_getStorageAt block 10|eth_getStorageAt|[\"0x7dcd17433742f4c0ca53122ab541d0ba67fc27df\",\"0x0\",\"0xa\"]"
  "eth_getStorageAt latest, new slot each time|eth_getStorageAt|[\"0x7dcd17433742f4c0ca53122ab541d0ba67fc27df\",\"NEWSLOT\",\"latest\"]"
  "eth_getTransactionByHash|eth_getTransactionByHash|[\"$tx\"]"
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
  "eth_call revert (rpc-compat fixture)|eth_call|[{\"from\":\"0x0000000000000000000000000000000000000000\",\"gas\":\"0x186a0\",\"to\":\"0xeda8645ba6948855e3b3cd596bbb07596d59c603\"},\"latest\"]"
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

echo "quarry serve on $addr${RETH:+ and reth node beside it}, wrk ${DURATION}s per cell, $(nproc) cores shared by servers and wrk"
: >"$work/results"
absent=()
for server in "${servers[@]}"; do
  IFS='|' read -r who server_url <<<"$server"
  # Warm up: first connections, thread pools and page cache are not what is being measured.
  BODY=$(req eth_getBlockByNumber '["0x36",true]') wrk -t2 -c16 -d2s -s "$work/post.lua" "$server_url" >/dev/null
  for c in "${cases[@]}"; do
    IFS='|' read -r name method params <<<"$c"
    # Every benchmarked call must succeed with a non-null result (a revert: code 3 with data).
    # A method only quarry has (rollup_getInfo) is measured on quarry alone.
    status=$(call "$(req "$method" "${params//NEWSLOT/0x0}")" "$server_url" | python3 -c '
import json, sys
r = json.load(sys.stdin)
if r.get("error", {}).get("code") == -32601 and sys.argv[1] != "quarry":
    print("absent"); sys.exit()
ok = r.get("result") is not None or (r.get("error", {}).get("code") == 3 and r["error"].get("data"))
assert ok, r' "$who") || { echo "$who, $name: bad response" >&2; exit 1; }
    [[ $status == absent ]] && absent+=("$who|$name")
  done
done
# The CPU time (user + system, all threads) a server process has used, in clock ticks.
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
measure() { # server url name conns body round|paired-method script
  local threads=$(( $4 < 2 ? 1 : 2 )) out rps p50 p99 script=$7 before after requests cpu
  before=$(cpu_ticks "${server_pid[$1]}")
  out=$(BODY="$5" wrk -t"$threads" -c"$4" -d"${DURATION}s" --latency -s "$work/$script" "$2")
  after=$(cpu_ticks "${server_pid[$1]}")
  if grep -q 'Non-2xx' <<<"$out"; then echo "$1, $3: non-2xx responses" >&2; exit 1; fi
  rps=$(sed -n 's/^Requests\/sec: *\([0-9.]*\).*/\1/p' <<<"$out")
  p50=$(awk '$1=="50%"{print $2}' <<<"$out")
  p99=$(awk '$1=="99%"{print $2}' <<<"$out")
  requests=$(sed -n 's/^ *\([0-9]*\) requests in.*/\1/p' <<<"$out")
  # The server's CPU per answered request, in microseconds (clock ticks of 1/CLK_TCK s).
  cpu=$(awk -v t=$((after - before)) -v n="$requests" -v hz="$(getconf CLK_TCK)" \
    'BEGIN { printf "%.2f", (n > 0 ? t * 1e6 / hz / n : 0) }')
  echo "$3|$4|$rps|$p50|$p99|$6|$7|$1|$cpu" >>"$work/results"
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
      for server in "${servers[@]}"; do
        IFS='|' read -r who server_url <<<"$server"
        [[ " ${absent[*]} " == *" $who|$name "* ]] && continue
        measure "$who" "$server_url" "web3_clientVersion (ceiling)" "$conns" "$(req web3_clientVersion '[]')" "$round|$name" "$script"
        measure "$who" "$server_url" "$name" "$conns" "$(req "$method" "$params")" "$round|$name" "$script"
      done
    done
  done
done

python3 -B - "$work/results" <<'PY'
import sys, statistics
from bench.wrk_latency import micros, show
# name|conns|rps|p50|p99|round|paired method|wrk script|server|server CPU per request (us)
rows = [l.rstrip("\n").split("|") for l in open(sys.argv[1])]
is_ceiling = lambda r: r[0].startswith("web3_clientVersion")
ceiling = {(r[8], r[1], r[5], r[6]): float(r[2]) for r in rows if is_ceiling(r)}
conns = sorted({r[1] for r in rows}, key=int)
servers = list(dict.fromkeys(r[8] for r in rows))
names = list(dict.fromkeys(r[0] for r in rows if not is_ceiling(r)))
summary = {}  # (server, name, conns) -> (median req/s, median share)
for server in servers:
    print(f"\n{server}")
    print(f"{'method':<42}" + "".join(f"{'c=' + c:>45}" for c in conns))
    print(f"{'':<42}" + "".join(f"{'req/s  (% ceil)     p50      p99  CPU/req':>45}" for _ in conns))
    # The ceiling row shows the runs with a fixed body, unless only Lua-built bodies were measured.
    own = [r for r in rows if r[8] == server and is_ceiling(r)]
    plain = [r for r in own if r[7] == "post.lua"] or own
    line = f"{'web3_clientVersion (ceiling)':<42}"
    for c in conns:
        runs = [r for r in plain if r[1] == c]
        rps = statistics.median(float(r[2]) for r in runs)
        cpu = statistics.median(float(r[9]) for r in runs)
        summary[(server, "web3_clientVersion (ceiling)", c)] = (rps, 100.0, cpu)
        p50 = statistics.median(micros(r[3]) for r in runs)
        p99 = statistics.median(micros(r[4]) for r in runs)
        line += f"{rps:>11.0f} ( 100%) {show(p50):>8} {show(p99):>8} {cpu:>6.1f}us"
    print(line)
    for name in names:
        line = f"{name:<42}"
        for c in conns:
            mine = [r for r in rows if r[8] == server and r[0] == name and r[1] == c]
            if not mine:
                line += f"{'(not served)':>45}"
                continue
            share = statistics.median(100 * float(r[2]) / ceiling[(server, c, r[5], r[6])] for r in mine)
            rps = statistics.median(float(r[2]) for r in mine)
            cpu = statistics.median(float(r[9]) for r in mine)
            summary[(server, name, c)] = (rps, share, cpu)
            p50 = statistics.median(micros(r[3]) for r in mine)
            p99 = statistics.median(micros(r[4]) for r in mine)
            line += f"{rps:>11.0f} ({share:4.0f}%) {show(p50):>8} {show(p99):>8} {cpu:>6.1f}us"
        print(line)
for peer in [p for p in ("reth", "before") if p in servers]:
    for c in conns:
        print(f"\nc={c}: {'method':<42} {peer + ' req/s':>13} {'share':>6} {'CPU/req':>8} {'quarry req/s':>13} {'share':>6} {'CPU/req':>8} {'quarry/' + peer:>14}")
        for name in ["web3_clientVersion (ceiling)"] + names:
            if (peer, name, c) not in summary:
                continue  # a method the peer does not have
            other, quarry = summary[(peer, name, c)], summary[("quarry", name, c)]
            print(f"      {name:<42} {other[0]:>13.0f} {other[1]:>5.0f}% {other[2]:>6.1f}us {quarry[0]:>13.0f} {quarry[1]:>5.0f}% {quarry[2]:>6.1f}us {quarry[0] / other[0]:>13.3f}x")
        # The same ratios round by round (each round's runs were next to each other): their
        # spread says how far the machine's drift lets the medians above be trusted.
        print(f"\nc={c}: per-round quarry/{peer}, min-max over the rounds: requests/s, CPU per request")
        for name in ["web3_clientVersion (ceiling)"] + names:
            rps_ratios, cpu_ratios = [], []
            for round_ in sorted({r[5] for r in rows}, key=int):
                def run(server):
                    return next((r for r in rows if r[8] == server and r[0] == name and r[1] == c and r[5] == round_
                                 and (not is_ceiling(r) or r[6] == names[0])), None)
                mine, theirs = run("quarry"), run(peer)
                if mine and theirs and float(theirs[2]) > 0 and float(theirs[9]) > 0:
                    rps_ratios.append(float(mine[2]) / float(theirs[2]))
                    cpu_ratios.append(float(mine[9]) / float(theirs[9]))
            if rps_ratios:
                print(f"      {name:<42} {min(rps_ratios):.3f}-{max(rps_ratios):.3f}x  {min(cpu_ratios):.3f}-{max(cpu_ratios):.3f}x")
rounds = len({r[5] for r in rows})
print(f"\nmedians of {rounds} rounds; each share pairs a method's run with its server's ceiling run just before it;")
print("CPU/req: the server process's CPU time (user + system, every thread) per answered request")
PY
