#!/usr/bin/env bash
# Block data of two datadirs of the same chain, served side by side (e.g. one migrated by
# `quarry migrate`, one freshly ingested): compares their answers to eth_getBlockByNumber with
# full transactions, eth_getBlockReceipts, eth_getTransactionByHash, eth_getTransactionReceipt
# and eth_getLogs over 100-block ranges, at SAMPLES blocks spread over the chain (and one
# transaction of each), and prints the median time of each method on each.
#
#   bench/blocks.sh DATADIR_A DATADIR_B        SAMPLES=200
#   NO_BUILD=1 QUARRY_BIN=path QUARRY_BIN_B=path bench/blocks.sh A B   # B served by another build
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
serve a "$1" $'[[keys]]\nkey = "bench"'
quarry=${QUARRY_BIN_B:-$quarry} serve b "$2" $'[[keys]]\nkey = "bench"'
python3 - "$(address a)" "$(address b)" "${SAMPLES:-200}" <<'PY'
import http.client, json, statistics, sys, time
a, b, samples = sys.argv[1], sys.argv[2], int(sys.argv[3])
conns = {name: http.client.HTTPConnection(addr) for name, addr in (("a", a), ("b", b))}
times = {}
def call(name, method, params):
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
    t = time.perf_counter()
    conns[name].request("POST", "/v3/bench", body, {"Content-Type": "application/json"})
    raw = conns[name].getresponse().read()
    times.setdefault((method, name), []).append((time.perf_counter() - t) * 1e3)
    answer = json.loads(raw)
    if "error" in answer:
        sys.exit(f"{name}: {method} {params}: {answer['error']}")
    return answer["result"]
def both(method, params):
    x, y = call("a", method, params), call("b", method, params)
    if x != y:
        sys.exit(f"answers differ: {method} {params}")
    return x
head = int(both("eth_blockNumber", []), 16)
compared = 0
for i in range(samples):
    n = 1 + (head - 1) * i // max(samples - 1, 1)
    block = both("eth_getBlockByNumber", [hex(n), True])
    both("eth_getBlockReceipts", [hex(n)])
    for tx in block["transactions"][: 1 + i % 3]:
        both("eth_getTransactionByHash", [tx["hash"]])
        both("eth_getTransactionReceipt", [tx["hash"]])
    if i % 10 == 0:
        both("eth_getLogs", [{"fromBlock": hex(n), "toBlock": hex(min(n + 99, head))}])
    compared += 1
print(f"{compared} blocks up to {head}: every answer equal")
print(f"{'method':<28} {'A median ms':>12} {'B median ms':>12} {'calls':>6}")
for method in sorted({m for m, _ in times}):
    ta, tb = times[(method, "a")], times[(method, "b")]
    print(f"{method:<28} {statistics.median(ta):12.3f} {statistics.median(tb):12.3f} {len(ta):6}")
PY
