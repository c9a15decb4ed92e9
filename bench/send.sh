#!/usr/bin/env bash
# eth_sendRawTransaction through quarry against straight to the upstream, in the same run:
# anvil (tests/clients' npm package) on the dev chain's chain id mines every transaction as it
# arrives; quarry serves the dev chain with anvil as its transactions_url. N transfers signed by
# anvil (eth_signTransaction, nonces in order) are sent one at a time on one connection,
# alternating between the two paths; p50 and p99 of each path, and the difference of the p50s
# (what going through quarry adds).
#
#   bench/send.sh
#   N=400 bench/send.sh
set -euo pipefail
cd "$(dirname "$0")/.."
N=${N:-200}
anvil=tests/clients/node_modules/.bin/anvil
[[ -x $anvil ]] || (cd tests/clients && npm ci --no-audit --no-fund --loglevel=error)
source bench/lib.sh
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$anvil" --port "$port" --chain-id 1337 --silent >"$work/anvil.out" 2>&1 &
pids+=($!)
for _ in $(seq 100); do
  curl -s -o /dev/null "http://127.0.0.1:$port" -H 'Content-Type: application/json' \
    -d '{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}' && break
  sleep 0.1
done
"$quarry" ingest --datadir "$work/data" --genesis testdata/devnet/genesis.json \
  testdata/devnet/chain.rlp >/dev/null 2>&1
serve send "$work/data" "transactions_url = \"http://127.0.0.1:$port\""$'\n[[keys]]\nkey = "bench"'
python3 - "127.0.0.1:$port" "$(address send)" "$N" <<'PY'
import http.client, json, sys, time
anvil, quarry, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
connections = {"upstream": (http.client.HTTPConnection(anvil), "/"),
               "quarry": (http.client.HTTPConnection(quarry), "/v3/bench")}
def rpc(path, method, params):
    conn, url = connections[path]
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
    conn.request("POST", url, body, {"Content-Type": "application/json"})
    answer = json.loads(conn.getresponse().read())
    if "error" in answer:
        sys.exit(f"{path} {method}: {answer['error']}")
    return answer["result"]
sender = rpc("upstream", "eth_accounts", [])[0]
signed = [rpc("upstream", "eth_signTransaction", [{
    "from": sender, "to": "0x" + "42" * 20, "value": hex(1), "gas": hex(21000),
    "maxFeePerGas": hex(20 * 10**9), "maxPriorityFeePerGas": hex(10**9), "nonce": hex(i),
    "chainId": hex(1337)}]) for i in range(2 * n + 20)]
took = {"upstream": [], "quarry": []}
for i, raw in enumerate(signed):
    path = "quarry" if i % 2 else "upstream"
    start = time.perf_counter()
    rpc(path, "eth_sendRawTransaction", [raw])
    if i >= 20:  # the first ones warm both paths
        took[path].append(time.perf_counter() - start)
p50 = {}
for path, times in took.items():
    times.sort()
    p50[path] = times[len(times) // 2]
    print(f"eth_sendRawTransaction {path:9}: p50 {1000 * p50[path]:.3f} ms, "
          f"p99 {1000 * times[int(len(times) * 0.99)]:.3f} ms ({len(times)} transactions)")
print(f"added by quarry at p50: {1000 * (p50['quarry'] - p50['upstream']):.3f} ms")
PY
