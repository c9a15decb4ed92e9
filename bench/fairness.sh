#!/usr/bin/env bash
# Fair sharing of heavy work between keys. A free-plan key floods eth_call with calls that run
# until the call deadline, at its plan's permitted rate (10 weight units a second, eth_call
# weighs 5: two calls a second), while a second key sends cheap eth_calls (a plain transfer)
# from CLIENTS connections, each waiting for its answer before sending the next. Reports the
# second key's p50/p99 alone and during the flood, in the same run (goal: p99 within 2x), and
# what the flood's calls got. With UNFAIR=1 it also runs a server where one key may fill the
# whole call pool (max_concurrent_heavy_per_key = the pool's threads, which leaves no reserve
# for other keys), for comparison.
#
#   bench/fairness.sh
#   DURATION=30 CLIENTS=4 TIMEOUT_MS=5000 UNFAIR=1 bench/fairness.sh
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${DURATION:-20}      # seconds per phase
CLIENTS=${CLIENTS:-2}         # the second key's connections
TIMEOUT_MS=${TIMEOUT_MS:-5000} # call_timeout_ms (the default)
UNFAIR=${UNFAIR:-0}

source bench/lib.sh
./target/release/quarry ingest --datadir "$work/data" --genesis testdata/devnet/genesis.json \
  testdata/devnet/chain.rlp >/dev/null 2>&1
keys='[plans.free]
units_per_second = 10
[plans.growth]
[[keys]]
key = "flood-key"
plan = "free"
[[keys]]
key = "other-key"
plan = "growth"'
serve fair "$work/data" "$(printf 'call_timeout_ms = %s\n%s' "$TIMEOUT_MS" "$keys")"
servers=("fair=$(address fair)")
if [ "$UNFAIR" = 1 ]; then
  threads=$(nproc)
  serve unfair "$work/data" "$(printf 'call_timeout_ms = %s\nmax_concurrent_heavy_per_key = %s\n%s' "$TIMEOUT_MS" "$threads" "$keys")"
  servers+=("unfair=$(address unfair)")
fi

python3 - "$DURATION" "$CLIENTS" "$TIMEOUT_MS" "${servers[@]}" <<'PY'
import http.client, json, sys, threading, time
duration, clients, timeout_ms = float(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
servers = [s.split("=", 1) for s in sys.argv[4:]]
DEV = "0x024aaB352Dc61220600a6f69Ea7694BC490CAA2E"
LOOP = "0x1000000000000000000000000000000000000001"
# JUMPDEST, then BLAKE2F (precompile 9) of 1,000 rounds, again and again: about 1,130 gas and
# a few microseconds an iteration, so the 300M-gas cap lasts for seconds; the deadline, checked
# every 4,096 steps (some 370 iterations), stops it first.
code = "0x63000003e860e01b6000525b604060d560d5600060095afa50600b56"
def body(params):
    return json.dumps({"jsonrpc": "2.0", "id": 1, "method": "eth_call", "params": params})
cheap = body([{"from": DEV, "to": DEV}, "latest"])
looping = body([{"from": DEV, "to": LOOP}, "latest", {LOOP: {"code": code}}])

def post(conn, key, payload):
    conn.request("POST", f"/v3/{key}", payload, {"Content-Type": "application/json"})
    response = conn.getresponse()
    return response.status, json.loads(response.read())

def cheap_load(addr, seconds):
    """The second key's closed-loop clients: latencies of successful calls, and failures."""
    latencies, failures, lock = [], [0], threading.Lock()
    def client():
        conn = http.client.HTTPConnection(addr, timeout=60)
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            start = time.monotonic()
            status, answer = post(conn, "other-key", cheap)
            took = time.monotonic() - start
            with lock:
                if status == 200 and answer.get("result") == "0x":
                    latencies.append(took)
                else:
                    failures[0] += 1
    threads = [threading.Thread(target=client) for _ in range(clients)]
    for t in threads: t.start()
    for t in threads: t.join()
    return sorted(latencies), failures[0]

def flood(addr, stop, outcomes):
    """One looping call every 510 ms (the plan allows one per 500 ms), each on its own thread."""
    def one():
        conn = http.client.HTTPConnection(addr, timeout=60)
        start = time.monotonic()
        status, answer = post(conn, "flood-key", looping)
        message = answer.get("error", {}).get("message", "ok")
        outcomes.append((status, message, time.monotonic() - start))
    threads = []
    while not stop.is_set():
        t = threading.Thread(target=one); t.start(); threads.append(t)
        time.sleep(0.51)
    for t in threads: t.join()

def pct(samples, q):
    return samples[min(len(samples) - 1, round((len(samples) - 1) * q))] * 1000

# One looping call on its own first: how long it runs, and that the deadline stops it.
conn = http.client.HTTPConnection(servers[0][1], timeout=60)
start = time.monotonic()
_, answer = post(conn, "flood-key", looping)
print(f"one looping call alone: {time.monotonic() - start:.2f} s, {answer.get('error', {}).get('message')}")
time.sleep(1)
for name, addr in servers:
    alone, alone_failed = cheap_load(addr, duration)
    stop, outcomes = threading.Event(), []
    flooder = threading.Thread(target=flood, args=(addr, stop, outcomes)); flooder.start()
    time.sleep(timeout_ms / 1000 + 1)  # the flood's queue fills
    during, during_failed = cheap_load(addr, duration)
    stop.set(); flooder.join()
    print(f"[{name}] second key's eth_call, {clients} connections, {duration:.0f} s each:")
    for label, s, failed in (("alone", alone, alone_failed), ("during the flood", during, during_failed)):
        print(f"  {label:17} {len(s) / duration:7.1f}/s  p50 {pct(s, 0.5):7.2f} ms  p99 {pct(s, 0.99):7.2f} ms  "
              f"max {s[-1] * 1000:7.1f} ms  failed {failed}")
    print(f"  p99 during / alone: {pct(during, 0.99) / pct(alone, 0.99):.2f}x")
    kinds = {}
    for status, message, took in outcomes:
        kinds.setdefault((status, message), []).append(took)
    for (status, message), took in sorted(kinds.items()):
        print(f"  flood: {len(took):3} x HTTP {status} {message!r}, answered after "
              f"{min(took):.2f}-{max(took):.2f} s")
PY
