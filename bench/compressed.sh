#!/usr/bin/env bash
# Compressed answers: eth_getBlockReceipts of rpc-compat block 2 (21 MB) and a full block
# (eth_getBlockByNumber of block 2 with its transactions), each asked without Accept-Encoding,
# with gzip and with zstd. Each case runs on a fresh `quarry serve` of the same datadir, so that
# its peak RSS (VmHWM) is its own; cases alternate over ROUNDS rounds. Per case: bytes on the
# wire (the body as sent), server CPU per request (utime + stime of the server process over the
# case's requests), p50 wall time over loopback (one connection, the body read whole), and the
# server's peak RSS.
#
#   bench/compressed.sh
#   ROUNDS=3 N=20 bench/compressed.sh
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-3}
N=${N:-20}
FIXTURES=${FIXTURES:-../shared/fixtures/rpc-compat}
source bench/lib.sh
"$quarry" ingest --datadir "$work/data" --genesis "$FIXTURES/genesis.json" \
  "$FIXTURES/chain.rlp" >/dev/null 2>&1
ticks=$(getconf CLK_TCK)
for round in $(seq "$ROUNDS"); do
  for encoding in identity gzip zstd; do
    serve "c$round$encoding" "$work/data" $'[[keys]]\nkey = "bench"'
    addr=$(address "c$round$encoding")
    pid=${pids[-1]}
    python3 - "$addr" "$encoding" "$N" "$pid" "$ticks" "$round" <<'PY'
import http.client, json, sys, time
addr, encoding, n, pid, ticks, round_ = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], int(sys.argv[5]), sys.argv[6]
def cpu():
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / ticks
def peak_rss_mb():
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
cases = [("eth_getBlockReceipts block 2", "eth_getBlockReceipts", ["0x2"]),
         ("eth_getBlockByNumber block 2, full", "eth_getBlockByNumber", ["0x2", True])]
conn = http.client.HTTPConnection(addr)
headers = {"Content-Type": "application/json"}
if encoding != "identity":
    headers["Accept-Encoding"] = encoding
for label, method, params in cases:
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
    took, size = [], 0
    before = cpu()
    for _ in range(n):
        start = time.perf_counter()
        conn.request("POST", "/v3/bench", body, headers)
        response = conn.getresponse()
        data = response.read()  # http.client does not decompress: the bytes as sent
        took.append(time.perf_counter() - start)
        got = response.getheader("Content-Encoding") or "identity"
        if got != encoding:
            sys.exit(f"{label}: asked {encoding}, got {got}")
        size = len(data)
    spent = cpu() - before
    took.sort()
    print(f"round {round_} {label:36} {encoding:8} {size:>10} bytes  "
          f"cpu {1000 * spent / n:7.2f} ms/request  p50 {1000 * took[n // 2]:7.2f} ms  "
          f"peak RSS {peak_rss_mb():6.1f} MB")
PY
    kill "$pid"
  done
done
