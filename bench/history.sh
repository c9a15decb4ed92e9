#!/usr/bin/env bash
# Historical reads benchmark: eth_getBalance, eth_getStorageAt and eth_getAccount at random old
# blocks, p50 and p99 of N sequential requests on one keep-alive connection, per method. The
# accounts are the senders, recipients and log emitters of SAMPLE random blocks; the slots,
# slots 0-7 of the log emitters (the dev chain's contracts: hot keys, changed in most blocks,
# and cold ones); eth_getAccount asks for the log emitters, whose storage roots are the costly
# part of the answer. Blocks are uniform over 1..head-1. The same requests (one seed) go to
# every server.
#
#   bench/history.sh DATADIR
#   BEFORE=old-quarry BEFORE_DATADIR=dir bench/history.sh DATADIR   # before/after in one run:
#       the old build serves its own datadir (a layout it reads), rounds alternate between them
#   RETH=path/to/reth RETH_DATADIR=dir GENESIS=chain/genesis.json bench/history.sh DATADIR
#       reth serving its import of the same chain asks the same requests, in turn with quarry's
#       (with its proof window opened to the whole chain: by default reth refuses
#       eth_getAccount's storage root more than 0 blocks back)
#   N=2000 N_ACCOUNT=100 ROUNDS=3 SAMPLE=64 SEED=1 bench/history.sh ...
#       N_ACCOUNT (default N): how many of the N eth_getAccount requests are asked
#   NO_BUILD=1 QUARRY_BIN=path bench/history.sh ...   # a build given, none made (bench/lib.sh)
#
# Latency is measured by the client (python3's http.client): it includes about 0.05 ms of the
# client's own work per request, the same for every server.
set -euo pipefail
cd "$(dirname "$0")/.."
datadir=${1:?usage: bench/history.sh DATADIR}
N=${N:-2000}
N_ACCOUNT=${N_ACCOUNT:-$N}
ROUNDS=${ROUNDS:-3}
SAMPLE=${SAMPLE:-64}
SEED=${SEED:-1}
BEFORE=${BEFORE:-}
BEFORE_DATADIR=${BEFORE_DATADIR:-}
source bench/lib.sh

config=$'[[keys]]\nkey = "bench-key"'
serve after "$datadir" "$config"
servers=("after|http://$(address after)/v3/bench-key")
if [[ -n $BEFORE ]]; then
  [[ -n $BEFORE_DATADIR ]] || { echo "BEFORE needs BEFORE_DATADIR" >&2; exit 1; }
  quarry=$BEFORE serve before "$BEFORE_DATADIR" "$config"
  servers=("before|http://$(address before)/v3/bench-key" "${servers[@]}")
fi
if [[ -n ${RETH:-} ]]; then
  serve_reth "${GENESIS:?RETH needs GENESIS}" "${RETH_DATADIR:?RETH needs RETH_DATADIR}" eth \
    --rpc.eth-proof-window 200000
  servers+=("reth|$reth_url")
fi

python3 - "$N" "$N_ACCOUNT" "$ROUNDS" "$SAMPLE" "$SEED" "${servers[@]}" <<'PY'
import http.client, json, random, sys, time, urllib.parse

n, n_account, rounds, sample, seed = map(int, sys.argv[1:6])
servers = [s.split('|', 1) for s in sys.argv[6:]]

class Client:
    def __init__(self, url):
        u = urllib.parse.urlparse(url)
        self.path = u.path or "/"
        self.conn = http.client.HTTPConnection(u.hostname, u.port)
        self.id = 0
    def call(self, method, params):
        self.id += 1
        body = json.dumps({"jsonrpc": "2.0", "id": self.id, "method": method, "params": params})
        try:
            self.conn.request("POST", self.path, body, {"Content-Type": "application/json"})
            response = self.conn.getresponse()
        except (BrokenPipeError, ConnectionResetError, http.client.RemoteDisconnected):
            # A server closes a connection left idle while the others answer: connect again.
            self.conn.close()
            self.conn.request("POST", self.path, body, {"Content-Type": "application/json"})
            response = self.conn.getresponse()
        answer = json.loads(response.read())
        if "error" in answer:
            raise SystemExit(f"{method} {params}: {answer['error']}")
        return answer["result"]

rng = random.Random(seed)
first = Client(servers[0][1])
head = int(first.call("eth_blockNumber", []), 16)
accounts, contracts = set(), set()
for _ in range(sample):
    tag = hex(rng.randrange(1, head))
    block = first.call("eth_getBlockByNumber", [tag, True])
    for tx in block["transactions"]:
        accounts.add(tx["from"])
        if tx.get("to"):
            accounts.add(tx["to"])
    for receipt in first.call("eth_getBlockReceipts", [tag]):
        for log in receipt["logs"]:
            contracts.add(log["address"])
accounts, contracts = sorted(accounts | contracts), sorted(contracts)
requests = {
    "eth_getBalance": [[rng.choice(accounts), hex(rng.randrange(1, head))] for _ in range(n)],
    "eth_getStorageAt": [[rng.choice(contracts), hex(rng.randrange(8)), hex(rng.randrange(1, head))]
                         for _ in range(n)],
}
# Drawn after the others, so that their requests stay those of earlier runs.
requests["eth_getAccount"] = [[rng.choice(contracts), hex(rng.randrange(1, head))]
                              for _ in range(n)][:n_account]
# The answers must agree between servers: the same state at the same block.
answers = {}
timings = {(name, m): [] for name, _ in servers for m in requests}
clients = {name: Client(url) for name, url in servers}
for _ in range(rounds):
    for method, params in requests.items():
        for name, _ in servers:
            client = clients[name]
            for i, p in enumerate(params):
                start = time.perf_counter()
                result = client.call(method, p)
                timings[(name, method)].append(time.perf_counter() - start)
                if answers.setdefault((method, i), result) != result:
                    raise SystemExit(f"{name}: {method} {p} = {result}, another server said "
                                     f"{answers[(method, i)]}")
print(f"head {head}; {len(accounts)} accounts, {len(contracts)} contracts; "
      f"{n} requests ({n_account} of eth_getAccount) x {rounds} rounds per method and server, "
      "alternating")
print(f"{'server':8} {'method':18} {'p50 ms':>8} {'p99 ms':>8}")
for (name, method), t in timings.items():
    t.sort()
    p = lambda q: t[min(len(t) - 1, int(q * len(t)))] * 1000
    print(f"{name:8} {method:18} {p(0.50):8.3f} {p(0.99):8.3f}")
PY
