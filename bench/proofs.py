"""eth_getProof timings, shared by bench/trie.sh and bench/thin.sh.

    python3 bench/proofs.py HOST:PORT N_LATEST N_BACK N_FAR

Proves one account with two slots (the first log emitter of the head block, a contract with
storage) on key "bench": p50 and p99 of N_LATEST requests at `latest`, of N_BACK requests 1,000
to 1,031 blocks back (every place in a 32-block window of the node history) and of N_FAR requests
10,000 to 11,008 blocks back, 16 blocks apart (places across a 1,024-block coarse window of the
thinned history). A row with 0 requests, or reaching before block 1, is skipped.
"""
import http.client
import json
import sys
import time

addr = sys.argv[1]
n_latest, n_back, n_far = (int(arg) for arg in sys.argv[2:5])
conn = http.client.HTTPConnection(addr)


def rpc(method, params):
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
    conn.request("POST", "/v3/bench", body, {"Content-Type": "application/json"})
    answer = json.loads(conn.getresponse().read())
    if "error" in answer:
        sys.exit(f"{method}: {answer['error']}")
    return answer["result"]


head = int(rpc("eth_blockNumber", []), 16)
account = rpc("eth_getLogs", [{"fromBlock": hex(head), "toBlock": hex(head)}])[0]["address"]
slots = ["0x" + "00" * 32, "0x" + "00" * 31 + "01"]
back = [hex(head - 1000 - k) for k in range(32)]
far = [hex(head - 10000 - 16 * k) for k in range(64)]
rows = [("latest", ["latest"], n_latest), ("1000 blocks back", back, n_back),
        ("10000 blocks back", far, n_far)]
for label, blocks, n in rows:
    if n == 0 or (blocks[-1] != "latest" and int(blocks[-1], 0) < 1):
        continue
    for block in blocks[:3]:
        rpc("eth_getProof", [account, slots, block])
    took = []
    for i in range(n):
        block = blocks[i % len(blocks)]
        start = time.perf_counter()
        rpc("eth_getProof", [account, slots, block])
        took.append(time.perf_counter() - start)
    took.sort()
    print(f"eth_getProof {account}, 2 slots, {label}: p50 {1000 * took[n // 2]:.2f} ms, "
          f"p99 {1000 * took[int(n * 0.99)]:.2f} ms ({n} requests)")
