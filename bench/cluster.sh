#!/usr/bin/env bash
# Cluster benchmark, on loopback with wrk, in one run:
#  1. the proxy's cost: a cheap method (web3_clientVersion) and eth_getStorageAt sent straight
#     to one `quarry serve` replica and through HAProxy (deploy/haproxy.cfg) to that same
#     replica, alternating, ROUNDS times (goal: at most 15% fewer requests/s through HAProxy);
#  2. the limiter's cost: the cheapest method with a rate-limited key (a plan limit high enough
#     never to refuse) on a replica with the in-process limiter and on one with its limits in
#     Redis (`limits_store`), alternating (goal: at most 10% fewer requests/s with Redis).
# Rows give the median of the rounds' requests/s and p99, the CPU time each process spent per
# request (from /proc), and the median of the paired ratios. Everything shares the machine's
# cores, so a proxy's CPU is taken from the replica's.
#
#   bench/cluster.sh                  (needs wrk, haproxy, redis-server: apt-get install ...)
#   DURATION=5 ROUNDS=5 CONNECTIONS=64 bench/cluster.sh
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${DURATION:-5}
ROUNDS=${ROUNDS:-5}
CONNECTIONS=${CONNECTIONS:-64}
for tool in wrk haproxy redis-server; do
  command -v "$tool" >/dev/null || { echo "$tool not found: apt-get install $tool" >&2; exit 1; }
done
source bench/lib.sh
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

./target/release/quarry ingest --datadir "$work/data" --genesis testdata/devnet/genesis.json \
  testdata/devnet/chain.rlp >/dev/null 2>&1

redis_port=$(free_port)
redis-server --port "$redis_port" --bind 127.0.0.1 --save '' --appendonly no --dir "$work" \
  >/dev/null 2>&1 &
redis_pid=$!
pids+=($!)
for _ in $(seq 100); do redis-cli -p "$redis_port" ping >/dev/null 2>&1 && break; sleep 0.1; done

# Unlimited key for the proxy rows; a growth key with a limit it never reaches for the limiter
# rows (an unlimited key skips the limiter altogether).
keys=$'[[keys]]\nkey = "bench-key"\n[[keys]]\nkey = "limited-key"\nplan = "growth"\n[plans.growth]\nunits_per_second = 10000000'
serve direct "$work/data" "$keys"
serve shared "$work/data" "limits_store = \"redis://127.0.0.1:$redis_port/\"
$keys"
direct=$(address direct)
shared=$(address shared)
replica_pids=("${pids[@]: -2}")

front=127.0.0.1:$(free_port)
QUARRY_LB_BIND=$front QUARRY_STATS_BIND=127.0.0.1:$(free_port) QUARRY_REPLICA_1=$direct \
  QUARRY_REPLICA_2=127.0.0.1:1 QUARRY_REPLICA_3=127.0.0.1:1 \
  haproxy -f "${HAPROXY_CFG:-deploy/haproxy.cfg}" >"$work/haproxy.log" 2>&1 &
haproxy_pid=$!
pids+=($!)
# Ready once HAProxy's health check has marked the replica up (rise 2, every 500 ms).
for _ in $(seq 100); do
  [ "$(curl -s -o /dev/null -w '%{http_code}' -X POST -H 'Content-Type: application/json' \
    -d '{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}' "http://$front/v3/bench-key")" = 200 ] && break
  sleep 0.1
done

cat >"$work/post.lua" <<'LUA'
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = os.getenv("BODY")
LUA
req() { printf '{"jsonrpc":"2.0","id":1,"method":"%s","params":%s}' "$1" "$2"; }
cheap=$(req web3_clientVersion '[]')
storage=$(req eth_getStorageAt '["0x024aaB352Dc61220600a6f69Ea7694BC490CAA2E","0x0","latest"]')
for url in "http://$direct/v3/bench-key" "http://$front/v3/bench-key" "http://$direct/v3/limited-key" "http://$shared/v3/limited-key"; do
  curl -s -X POST -H 'Content-Type: application/json' -d "$storage" "$url" |
    python3 -c 'import json,sys; r=json.load(sys.stdin); assert "result" in r, r' ||
    { echo "$url: bad response" >&2; exit 1; }
done

: >"$work/results"
# CPU time (clock ticks) of the replicas, HAProxy and Redis so far.
cpu() { for pid in "$@"; do awk '{print $14 + $15}' "/proc/$pid/stat"; done | paste -sd+ | bc; }
measure() { # row round url body
  local out rps p99 requests before after
  before=($(cpu "${replica_pids[@]}") $(cpu "$haproxy_pid") $(cpu "$redis_pid"))
  out=$(BODY="$4" wrk -t2 -c"$CONNECTIONS" -d"${DURATION}s" --latency -s "$work/post.lua" "$3")
  after=($(cpu "${replica_pids[@]}") $(cpu "$haproxy_pid") $(cpu "$redis_pid"))
  if grep -q 'Non-2xx\|Socket errors' <<<"$out"; then echo "$1: errors: $out" >&2; exit 1; fi
  rps=$(sed -n 's/^Requests\/sec: *\([0-9.]*\).*/\1/p' <<<"$out")
  p99=$(awk '$1=="99%"{print $2}' <<<"$out")
  requests=$(sed -n 's/^ *\([0-9]*\) requests in.*/\1/p' <<<"$out")
  echo "$1|$2|$rps|$p99|$requests|$((after[0] - before[0]))|$((after[1] - before[1]))|$((after[2] - before[2]))" >>"$work/results"
}
echo "replica $direct, HAProxy $front, limits in Redis on $shared; wrk -t2 -c$CONNECTIONS -d${DURATION}s, $ROUNDS rounds; $(nproc) cores shared by wrk, HAProxy, Redis and the replicas"
BODY=$cheap wrk -t2 -c16 -d2s -s "$work/post.lua" "http://$front/v3/bench-key" >/dev/null
for round in $(seq 1 "$ROUNDS"); do
  measure "web3_clientVersion direct" "$round" "http://$direct/v3/bench-key" "$cheap"
  measure "web3_clientVersion through HAProxy" "$round" "http://$front/v3/bench-key" "$cheap"
  measure "eth_getStorageAt direct" "$round" "http://$direct/v3/bench-key" "$storage"
  measure "eth_getStorageAt through HAProxy" "$round" "http://$front/v3/bench-key" "$storage"
  measure "web3_clientVersion, in-process limiter" "$round" "http://$direct/v3/limited-key" "$cheap"
  measure "web3_clientVersion, limits in Redis" "$round" "http://$shared/v3/limited-key" "$cheap"
done
redis_calls=$(curl -s "http://$shared/metrics" | awk -F' ' '/^quarry_redis_requests_total\{store="limits",result="answered"\}/{print $2}')
python3 - "$work/results" "$redis_calls" <<'PY'
import sys, statistics
def ms(text):
    for unit, factor in (("us", 1e-3), ("ms", 1.0), ("s", 1e3)):
        if text.endswith(unit):
            return float(text[: -len(unit)]) * factor
    return float(text)
rows = {}
cpu = {}
TICK_US = 1e6 / 100  # /proc/PID/stat counts clock ticks of 10 ms
for line in open(sys.argv[1]):
    name, rnd, rps, p99, requests, replica, proxy, redis = line.strip().split("|")
    rows.setdefault(name, {})[int(rnd)] = (float(rps), ms(p99))
    c = cpu.setdefault(name, [0, 0, 0, 0])
    for i, v in enumerate((int(requests), int(replica), int(proxy), int(redis))):
        c[i] += v
print(f"{'row':42} {'req/s':>9} {'p99 ms':>8}   CPU µs per request: {'replica':>8} {'HAProxy':>8} {'Redis':>6}")
for name, runs in rows.items():
    rps = statistics.median(r for r, _ in runs.values())
    p99 = statistics.median(p for _, p in runs.values())
    n, replica, proxy, redis = cpu[name]
    per = lambda ticks: ticks * TICK_US / n
    print(f"{name:42} {rps:9.0f} {p99:8.2f}   {'':20}{per(replica):8.1f} {per(proxy):8.1f} {per(redis):6.1f}")
def ratio(a, b):
    return statistics.median(rows[b][k][0] / rows[a][k][0] for k in rows[a])
for a, b, goal in (
    ("web3_clientVersion direct", "web3_clientVersion through HAProxy", 0.85),
    ("eth_getStorageAt direct", "eth_getStorageAt through HAProxy", 0.85),
    ("web3_clientVersion, in-process limiter", "web3_clientVersion, limits in Redis", 0.90),
):
    r = ratio(a, b)
    print(f"{b} / {a}: {r:.3f} ({100 * (r - 1):+.1f}% requests/s; goal at least {goal:.2f}: {'met' if r >= goal else 'MISSED'})")
print(f"limits-store round trips answered by Redis during the run: {sys.argv[2]}")
PY
