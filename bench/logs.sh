#!/usr/bin/env bash
# eth_getLogs benchmark on the 20,000-block scale chain: the four queries of the logs issue,
# answered with the log index and, in the same run, by the plain scan (header bloom, then
# receipts) that `log_index = false` selects, as the reference.
#
#   bench/logs.sh                 RUNS=10 (index), SCAN_RUNS=3 (reference scan)
#   NO_BUILD=1 QUARRY_BIN=path DATADIR=dir bench/logs.sh   # another build, on its own datadir
#
# Generates and ingests the chain first if target/bench does not hold it yet (bench/scale.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
chain=target/bench/scale-20000x100
datadir=${DATADIR:-target/bench/scale-20000x100-db}
source bench/lib.sh
if [ ! -f "$chain/chain.rlp" ]; then
  BLOCKS=20000 TXS=100 bench/scale.sh
fi
if [ ! -f "$datadir/mdbx.dat" ]; then
  "$quarry" ingest --datadir "$datadir" --genesis "$chain/genesis.json" "$chain/chain.rlp" >/dev/null 2>&1
fi
# A datadir kept by an older quarry is brought to the current layout (nothing to do otherwise).
"$quarry" migrate --datadir "$datadir" >/dev/null 2>&1
serve index "$datadir" $'[[keys]]\nkey = "bench"'
serve scan "$datadir" $'log_index = false\n[[keys]]\nkey = "bench"'
index=$(address index)
scan=$(address scan)
python3 - "$index" "$scan" "${RUNS:-10}" "${SCAN_RUNS:-3}" <<'PY'
import http.client, json, statistics, sys, time
index, scan, runs, scan_runs = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
RARE = "0x246a4c3e552193ad84b86eee3790e95f8d2b3b02"    # the rare token (1 transaction in 10,000)
STORE = "0x1b03ca3ae789c30b26f0eb5d5eed6e7692eab2c1"   # Store: ~34 Stored logs a block
TRANSFER = "0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef"
queries = [
    ("rare address, full range", {"address": RARE, "fromBlock": "0x0", "toBlock": "latest"}, 20),
    ("zero-match topic, full range", {"topics": ["0x" + "ee" * 32], "fromBlock": "0x0", "toBlock": "latest"}, 5),
    (">10,000 results, rejected with hint", {"address": STORE, "fromBlock": "0x0", "toBlock": "latest"}, 50),
    ("Transfer topic, blocks 10000-10999", {"topics": [TRANSFER], "fromBlock": hex(10000), "toBlock": hex(10999)}, 100),
]
def timed(addr, filt, n):
    conn = http.client.HTTPConnection(addr)
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "eth_getLogs", "params": [filt]})
    times, raw = [], b""
    for _ in range(n):
        # Timed: the request until the last byte of the response (not the client's JSON parse).
        t = time.perf_counter()
        conn.request("POST", "/v3/bench", body, {"Content-Type": "application/json"})
        raw = conn.getresponse().read()
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times), json.loads(raw)
def describe(answer):
    if "error" in answer:
        e = answer["error"]
        return f"{e['code']} {e.get('data', '')}"
    return f"{len(answer['result'])} logs"
print(f"{'query':<38} {'answer':<52} {'index ms':>9} {'scan ms':>9} {'goal ms':>8}")
for name, filt, goal in queries:
    ms, answer = timed(index, filt, runs)
    scan_ms, scan_answer = timed(scan, filt, scan_runs)
    same = "" if answer == scan_answer else "  (answers differ!)"
    ok = "ok" if ms <= goal else "MISSED"
    print(f"{name:<38} {describe(answer):<52} {ms:9.1f} {scan_ms:9.1f} {goal:8} {ok}{same}")
PY
