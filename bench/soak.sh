#!/usr/bin/env bash
# Soak benchmark (not run by CI): `quarry follow` of a live upstream for DURATION seconds
# (default 1800) under everything at once, then the follower's answers checked against the
# upstream's.
#
#  - Upstream: anvil (the npm package tests/clients installs) mining a block a second
#    (--block-time 1) from a genesis.json that quarry follows with the same file. A driver
#    sends TXS_PER_BLOCK signed transactions a block (calls of small contracts that write
#    storage and emit logs, plain transfers, a contract deployed every 50 blocks; legacy and
#    EIP-1559) and every REORG_MIN..REORG_MAX seconds calls anvil_reorg with a depth drawn
#    from 1..64 (mining paused around it), the new branch carrying 1-3 transactions of its
#    own from its first block on.
#  - Follower: `quarry follow --upstream ws://anvil` (pushed heads) into a datadir on a tmpfs
#    of TMPFS_MB. It is killed with SIGKILL every KILL_MIN..KILL_MAX seconds and started
#    again with the same command.
#  - Full disk, once: the tmpfs fills (if it has not by FULL_AT seconds, its size is cut to
#    what it holds plus 64 KB, so that the next commits fill it); once the follower logs that
#    the datadir "is full", the disk stays full for FULL_HOLD seconds, then the tmpfs grows
#    to 2 GB. The time from the growth to the follower at the upstream's head is printed.
#  - Server: `quarry serve` of the follower's datadir, under wrk (WRK_CONNECTIONS connections,
#    one thread, WRK_DELAY_MS between a connection's requests: eth_blockNumber,
#    eth_getBlockByNumber latest, eth_getBalance, eth_getTransactionCount, eth_call and
#    eth_getLogs of the last 20 blocks) and 100 WebSocket newHeads subscribers plus 5 logs
#    subscribers (one python3 asyncio process), counting notifications and disconnects.
#  - RSS (VmRSS and RssAnon of /proc/PID/status) of the server and the follower every 10 s,
#    into rss.csv; a summary per 5 minutes at the end.
#  - At the end: block production stops, the follower catches up, and compare.py checks the
#    server's answers against anvil's: 50 random blocks (plus the heights of every reorg's
#    new branch) with their transactions, their receipts, state (balance, nonce, code and
#    two storage slots of every address the chain touched) at random recent blocks,
#    eth_call, and eth_getLogs over the whole chain in ranges, by address and by topic.
#
# What anvil 1.7.1 needs for quarry to verify its blocks (quarry is right in each case):
#  - An empty genesis state: anvil reports the empty trie's root as its genesis block's
#    stateRoot whatever `--init` allocates (fixed later upstream, foundry PR #16623), so its
#    genesis hash equals the one quarry derives from the same genesis.json only when the
#    allocation is empty; its dev accounts are left out too (-a 0), since it puts them in the
#    state without them being in the genesis. Hence no one holds ether: the base fee is 0,
#    every transaction pays a gas price of 0 with value 0, and balances stay 0.
#  - No empty account touched: anvil keeps an empty account that a transaction touches in its
#    state root (EIP-161 deletes it; e.g. a first transaction from a new sender gives the root
#    of {sender, empty coinbase 0x00..00}). So the genesis coinbase is the driver's first key,
#    whose contract deployment is the chain's first transaction (reorgs never reach it), and
#    transactions only call contracts that have code and pay accounts that exist.
#  - anvil_setBlockTimestampInterval 1: without it anvil_reorg stamps every block of the new
#    branch with the same second (a chain quarry refuses: timestamp not after the parent's).
#  - During anvil_reorg anvil's eth_blockNumber briefly answers the fork point + 1: a follower
#    asking then commits the reorganisation with that shorter branch (as README's "quarry
#    trusts the upstream's choice of chain" says) and the rest a moment later, so the server's
#    head can go back for a moment: wrk's eth_getLogs from its highest head seen - 20 then gets
#    "invalid block range params", and subscribers get the heights again.
#
#   bench/soak.sh                                      build, then a 30-minute soak
#   NO_BUILD=1 QUARRY_BIN=/path/to/quarry DURATION=180 bench/soak.sh     a short one
#
# Needs root (mount), wrk (apt-get install wrk), anvil (cd tests/clients && npm ci) and
# tests/clients/.venv (made as .ci/run makes it when missing: web3.py's requirements include
# eth-account and websockets). SOAK_KEEP=1 keeps the scratch directory (its path is printed).
# Every figure goes to stdout; the logs stay in the scratch directory until exit.
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${DURATION:-1800}
TXS_PER_BLOCK=${TXS_PER_BLOCK:-4}
REORG_MIN=${REORG_MIN:-60}
REORG_MAX=${REORG_MAX:-150}
KILL_MIN=${KILL_MIN:-120}
KILL_MAX=${KILL_MAX:-300}
TMPFS_MB=${TMPFS_MB:-1}
FULL_AT=${FULL_AT:-$((DURATION * 2 / 5))}
FULL_HOLD=${FULL_HOLD:-30}
WRK_CONNECTIONS=${WRK_CONNECTIONS:-2}
WRK_DELAY_MS=${WRK_DELAY_MS:-5}
SUBSCRIBERS=${SUBSCRIBERS:-100}
LOG_SUBSCRIBERS=${LOG_SUBSCRIBERS:-5}
SEED=${SEED:-$RANDOM}
source bench/lib.sh
command -v wrk >/dev/null || { echo "wrk not found: apt-get install wrk" >&2; exit 1; }
# The platform package's binary itself: the npm wrapper (.bin/anvil) is a node process that a
# SIGKILL would leave its anvil behind.
anvil_bin=$(ls tests/clients/node_modules/@foundry-rs/anvil-linux-*/bin/anvil 2>/dev/null | head -1)
[ -x "$anvil_bin" ] || anvil_bin=tests/clients/node_modules/.bin/anvil
[ -x "$anvil_bin" ] || { echo "anvil not found: cd tests/clients && npm ci" >&2; exit 1; }
py=tests/clients/.venv/bin/python
if ! { [ -x "$py" ] && "$py" -c 'import websockets, eth_account, requests' 2>/dev/null; }; then
  echo "== making tests/clients/.venv (as .ci/run does)"
  [ -x "$py" ] || python3 -m venv tests/clients/.venv
  tests/clients/.venv/bin/pip install --quiet --disable-pip-version-check -r tests/clients/requirements.txt
fi
quarry=$(realpath "$quarry")
mnt=$work/mnt
follower_pid=
mounted=0
# The follower is started again after each kill, so the lib.sh trap's list does not hold it;
# the tmpfs must be unmounted before $work goes.
cleanup() {
  set +e
  [ -n "$follower_pid" ] && kill -9 "$follower_pid" 2>/dev/null
  kill "${pids[@]}" 2>/dev/null
  wait "${pids[@]}" "$follower_pid" 2>/dev/null
  [ "$mounted" = 1 ] && umount -l "$mnt"
  if [ "${SOAK_KEEP:-0}" = 1 ]; then echo "kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM
t0=$(date +%s)
elapsed() { echo $(($(date +%s) - t0)); }
say() { printf '[%s +%4ss] %s\n' "$(date -u +%H:%M:%S)" "$(elapsed)" "$*"; }
rpc() { # rpc URL METHOD PARAMS: the result, or nothing
  curl -s -m 5 "$1" -H 'Content-Type: application/json' \
    -d "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"$2\",\"params\":$3}" |
    python3 -c 'import json,sys
try: r = json.load(sys.stdin).get("result")
except Exception: r = None
print("" if r is None else (r if isinstance(r, str) else json.dumps(r)))' 2>/dev/null || true
}
hex2dec() { [ -n "$1" ] && printf '%d\n' "$1" || echo -1; }

say "soak: DURATION=${DURATION}s seed $SEED, quarry $quarry, scratch $work"
echo "    transactions/block $TXS_PER_BLOCK, reorg every ${REORG_MIN}-${REORG_MAX}s (depth 1-64), kill -9 every ${KILL_MIN}-${KILL_MAX}s,"
echo "    tmpfs ${TMPFS_MB} MB (cut to what it holds + 64 KB at +${FULL_AT}s if not full by then, full for ${FULL_HOLD}s),"
echo "    wrk ${WRK_CONNECTIONS} connections with ${WRK_DELAY_MS} ms between requests, $SUBSCRIBERS newHeads + $LOG_SUBSCRIBERS logs subscribers"

# ---------------------------------------------------------------- the helper programs
cat >"$work/genesis.py" <<'PY'
# An empty-state genesis.json with every fork through Cancun at block 0 (see the header),
# stamped 100 s ago: anvil stamps its blocks with the genesis timestamp plus the time since it
# started, so a genesis from long ago gives block 1 the genesis's own timestamp when it is
# mined within anvil's first second (quarry rightly refuses it).
import json, sys, time
# The driver's first key's address (private key 0x50a4), which sends the chain's first
# transaction: anvil mines to the genesis coinbase (see the header).
COINBASE = "0x9BA914424913658c508bDB145828e2DeC4B6716e"
cancun = {"target": 3, "max": 6, "baseFeeUpdateFraction": 3338477}
config = {"chainId": 1337, "homesteadBlock": 0, "eip150Block": 0, "eip155Block": 0,
          "eip158Block": 0, "byzantiumBlock": 0, "constantinopleBlock": 0,
          "petersburgBlock": 0, "istanbulBlock": 0, "muirGlacierBlock": 0, "berlinBlock": 0,
          "londonBlock": 0, "arrowGlacierBlock": 0, "grayGlacierBlock": 0,
          "mergeNetsplitBlock": 0, "terminalTotalDifficulty": 0, "shanghaiTime": 0,
          "cancunTime": 0, "blobSchedule": {"cancun": cancun}}
json.dump({"config": config, "nonce": "0x0", "timestamp": hex(int(time.time()) - 100), "extraData": "0x",
           "gasLimit": "0x1c9c380", "difficulty": "0x0", "baseFeePerGas": "0x0",
           "mixHash": "0x" + "00" * 32, "coinbase": COINBASE, "alloc": {}},
          open(sys.argv[1], "w"), indent=1)
PY

cat >"$work/driver.py" <<'PY'
# Drives anvil: TXS transactions per new block, and anvil_reorg every REORG_MIN..REORG_MAX s
# with a depth drawn from 1..64, until the file STOP exists. Writes a JSON summary to OUT and
# one line per reorg to stdout.
import json, os, random, sys, time
import requests, rlp
from eth_account import Account
from eth_utils import keccak, to_checksum_address

url, txs_per_block, rmin, rmax, stop, out, seed = sys.argv[1:8]
txs_per_block, rmin, rmax = int(txs_per_block), int(rmin), int(rmax)
rng = random.Random(int(seed))
session = requests.Session()
TOPIC = "0x" + keccak(b"Soak(address,uint256)").hex()
# Runtime: returns the old slot 0, stores calldata word 0 in slot 0, counts calls in slot 1,
# emits LOG2(data = the word, topics = TOPIC, caller).
RUNTIME = ("600054602052" "600035" "80600055" "600052" "600154600101600155"
           "33" "7f" + TOPIC[2:] + "60206000a2" "60206020f3")
INIT = "0x60" + "%02x" % (len(RUNTIME) // 2) + "80600b6000396000f3" + RUNTIME
assert len(INIT[2:]) // 2 == 11 + len(RUNTIME) // 2
keys = [Account.from_key((0x50a4 + i).to_bytes(32, "big")) for i in range(10)]
reorg_key = keys[9]

def call(method, params):
    r = session.post(url, json={"jsonrpc": "2.0", "id": 1, "method": method, "params": params},
                     timeout=30).json()
    if "error" in r:
        raise RuntimeError(f"{method}: {r['error']}")
    return r["result"]

def batch(calls):
    body = [{"jsonrpc": "2.0", "id": i, "method": m, "params": p} for i, (m, p) in enumerate(calls)]
    answers = sorted(session.post(url, json=body, timeout=30).json(), key=lambda a: a["id"])
    return [a.get("result") for a in answers]

def created(sender, nonce):
    return to_checksum_address(keccak(rlp.encode([bytes.fromhex(sender[2:]), nonce]))[12:])

def sign(key, nonce, to, data, kind):
    tx = {"nonce": nonce, "gas": 300000, "chainId": 1337, "value": 0, "data": data}
    if to:
        tx["to"] = to
    if kind == 2:
        tx.update(maxFeePerGas=0, maxPriorityFeePerGas=0, type=2)
    else:
        tx["gasPrice"] = 0
    return "0x" + key.sign_transaction(tx).raw_transaction.hex().removeprefix("0x")

contracts = [created(k.address, 0) for k in keys[:3]]
assert keys[0].address == "0x9BA914424913658c508bDB145828e2DeC4B6716e"  # the coinbase
# Each block stamped its parent's timestamp + 1: anvil_reorg otherwise stamps every block of
# the new branch with the same second, which quarry (rightly) refuses.
call("anvil_setBlockTimestampInterval", [1])
# The first transaction: the coinbase's own contract, alone, so that the coinbase is never an
# empty account touched by a transaction (see the header).
while True:
    try:
        if call("eth_getCode", [contracts[0], "latest"]) not in ("0x", None):
            break
        if int(call("eth_getTransactionCount", [keys[0].address, "pending"]), 16) == 0:
            call("eth_sendRawTransaction", [sign(keys[0], 0, None, INIT, 0)])
    except Exception as e:
        print(f"first transaction: {e}", flush=True)
    time.sleep(0.5)
first_block = int(call("eth_blockNumber", []), 16)
open(out + ".contracts", "w").write(" ".join(contracts) + " " + TOPIC + "\n")
stats = {"sent": 1, "send_errors": 0, "deploys": 1, "reorgs": [], "reorg_errors": 0,
         "error_samples": []}
next_reorg = time.time() + rng.uniform(rmin, rmax)
last = -1
while not os.path.exists(stop):
    try:
        head = int(call("eth_blockNumber", []), 16)
    except Exception as e:
        time.sleep(0.5)
        continue
    if time.time() >= next_reorg and head > first_block + 2:
        # never as deep as the first transaction (the coinbase's)
        try:
            # Mining paused around the reorg, so that no block lands between reading the head
            # and the reorg.
            call("evm_setIntervalMining", [0])
            head = int(call("eth_blockNumber", []), 16)
            depth = rng.randint(1, min(64, head - first_block - 1))
            base = head - depth
            old = call("eth_getBlockByNumber", [hex(base + 1), False])["hash"]
            nonce = int(call("eth_getTransactionCount", [reorg_key.address, hex(base)]), 16)
            # A transaction in the new branch's first block, so that the branch differs from
            # the old chain from there on (the same empty blocks again would hash the same).
            pairs, offsets = [], [0] + sorted(rng.randrange(depth) for _ in range(rng.randint(0, 2)))
            for i, offset in enumerate(offsets):
                data = "0x" + rng.getrandbits(256).to_bytes(32, "big").hex()
                pairs.append([sign(reorg_key, nonce + i, contracts[0], data, 2), offset])
            t = time.time()
            call("anvil_reorg", [depth, pairs])
            took = time.time() - t
            new_head = int(call("eth_blockNumber", []), 16)
            new = call("eth_getBlockByNumber", [hex(base + 1), False])["hash"]
            record = {"at": time.time(), "depth": depth, "head": head, "new_head": new_head,
                      "txs": len(pairs), "replaced": new != old, "seconds": round(took, 3)}
            stats["reorgs"].append(record)
            print(f"reorg depth {depth}: blocks {base + 1}..{head} replaced "
                  f"({len(pairs)} transactions on the new branch, {'hash changed' if new != old else 'HASH UNCHANGED'}), "
                  f"head now {new_head}", flush=True)
        except Exception as e:
            stats["reorg_errors"] += 1
            print(f"reorg failed: {e}", flush=True)
        finally:
            call("evm_setIntervalMining", [1])
        next_reorg = time.time() + rng.uniform(rmin, rmax)
        continue
    if head == last:
        time.sleep(0.2)
        continue
    last = head
    try:
        senders = rng.sample(range(10), txs_per_block + 1)
        senders = [s for s in senders if s != 9][:txs_per_block]
        # Only accounts that exist are called or paid (see the header): the contracts that
        # have code now (the first three, and three of the later ones).
        probe = contracts[:3] + rng.sample(contracts[3:], min(3, len(contracts) - 3))
        nonces = batch([("eth_getTransactionCount", [keys[s].address, "pending"]) for s in senders]
                       + [("eth_getCode", [c, "latest"]) for c in probe])
        codes = nonces[len(senders):]
        live = [c for c, code in zip(probe, codes) if code not in ("0x", None)]
        payees = [keys[i].address for i in range(3) if codes[i] not in ("0x", None)]
        raws = []
        for s, nonce in zip(senders, nonces):
            key, nonce = keys[s], int(nonce, 16)
            roll = rng.random()
            if s < 3 and codes[s] in ("0x", None):
                if nonce == 0:
                    raws.append(sign(key, 0, None, INIT, 0))  # this sender's first contract
                    stats["deploys"] += 1
            elif head % 50 == 0 and roll < 0.3:
                raws.append(sign(key, nonce, None, INIT, 2))
                contracts.append(created(key.address, nonce))
                stats["deploys"] += 1
            elif roll < 0.8 and live:
                data = "0x" + rng.getrandbits(256).to_bytes(32, "big").hex()
                raws.append(sign(key, nonce, rng.choice(live), data, rng.choice([0, 2])))
            elif live:
                # to an account that exists (anvil 1.7.1 gets the state root wrong after
                # some touches of empty accounts: see the header)
                raws.append(sign(key, nonce, rng.choice(payees), "0x", rng.choice([0, 2])))
        for result in batch([("eth_sendRawTransaction", [raw]) for raw in raws]):
            if result is None:
                stats["send_errors"] += 1
            else:
                stats["sent"] += 1
    except Exception as e:
        stats["send_errors"] += 1
        if len(stats["error_samples"]) < 5:
            stats["error_samples"].append(str(e)[:200])
json.dump(stats | {"contracts": contracts, "topic": TOPIC}, open(out, "w"))
PY

cat >"$work/subs.py" <<'PY'
# N newHeads and L logs subscribers on one WebSocket URL each, reconnecting after a drop, until
# the file STOP exists; then a JSON summary to OUT.
import asyncio, json, os, sys, time
import websockets

url, n_heads, n_logs, stop, out = sys.argv[1:6]
subs = []

async def subscriber(kind):
    me = {"kind": kind, "notifications": 0, "disconnects": 0, "connect_errors": 0,
          "removed": 0, "heights": set(), "max": -1, "backwards": 0}
    subs.append(me)
    params = ["newHeads"] if kind == "newHeads" else ["logs", {}]
    while not os.path.exists(stop):
        try:
            async with websockets.connect(url, max_size=None, open_timeout=10) as ws:
                await ws.send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "eth_subscribe",
                                          "params": params}))
                answer = json.loads(await ws.recv())
                if "result" not in answer:
                    raise RuntimeError(f"eth_subscribe: {answer}")
                while not os.path.exists(stop):
                    try:
                        message = await asyncio.wait_for(ws.recv(), 1)
                    except asyncio.TimeoutError:
                        continue
                    result = json.loads(message)["params"]["result"]
                    me["notifications"] += 1
                    if kind == "newHeads":
                        number = int(result["number"], 16)
                        if number <= me["max"]:
                            me["backwards"] += 1
                        me["max"] = max(me["max"], number)
                        me["heights"].add(number)
                    elif result.get("removed"):
                        me["removed"] += 1
                return
        except websockets.ConnectionClosed:
            me["disconnects"] += 1
        except Exception:
            me["connect_errors"] += 1
        await asyncio.sleep(1)

async def main():
    tasks = [subscriber("newHeads") for _ in range(int(n_heads))]
    tasks += [subscriber("logs") for _ in range(int(n_logs))]
    await asyncio.gather(*tasks)

asyncio.run(main())
summary = {}
for kind in ("newHeads", "logs"):
    mine = [s for s in subs if s["kind"] == kind]
    if not mine:
        continue
    counts = [s["notifications"] for s in mine]
    summary[kind] = {"subscribers": len(mine), "notifications": sum(counts),
                     "min": min(counts), "max": max(counts),
                     "disconnects": sum(s["disconnects"] for s in mine),
                     "connect_errors": sum(s["connect_errors"] for s in mine),
                     "removed_logs": sum(s["removed"] for s in mine),
                     "repeated_or_lower_heads": sum(s["backwards"] for s in mine),
                     "distinct_heights_min": min(len(s["heights"]) for s in mine),
                     "highest": max(s["max"] for s in mine)}
json.dump(summary, open(out, "w"))
PY

cat >"$work/mix.lua" <<'LUA'
-- Mixed reads, one request at a time per connection, DELAY_MS apart; counts JSON-RPC errors.
local contract = os.getenv("CONTRACT")
local topic = os.getenv("TOPIC")
local delay_ms = tonumber(os.getenv("DELAY_MS"))
local threads = {}
function setup(thread) table.insert(threads, thread) end
function init(args)
  head = 1; n = 0; errors = 0; non200 = 0
  wrk.method = "POST"; wrk.headers["Content-Type"] = "application/json"
end
local function body(method, params)
  return '{"jsonrpc":"2.0","id":1,"method":"' .. method .. '","params":' .. params .. '}'
end
function request()
  n = n + 1
  local k = n % 6
  local b
  if k == 0 then b = body("eth_blockNumber", "[]")
  elseif k == 1 then b = body("eth_getBlockByNumber", '["latest",true]')
  elseif k == 2 then b = body("eth_getBalance", '["' .. contract .. '","latest"]')
  elseif k == 3 then b = body("eth_getTransactionCount", '["' .. contract .. '","latest"]')
  elseif k == 4 then b = body("eth_call", '[{"to":"' .. contract .. '","data":"0x' .. string.rep("0", 63) .. "1" .. '"},"latest"]')
  else b = body("eth_getLogs", string.format('[{"fromBlock":"0x%x","toBlock":"latest","topics":["%s"]}]', math.max(head - 20, 0), topic)) end
  return wrk.format(nil, nil, nil, b)
end
function delay() return delay_ms end
function response(status, headers, b)
  if status ~= 200 then non200 = non200 + 1 end
  if string.find(b, '"error"', 1, true) then
    errors = errors + 1
    if errors <= 3 then io.write("wrk: error answer: " .. string.sub(b, 1, 300) .. "\n") end
  end
  local h = string.match(b, '^{"jsonrpc":"2.0","id":1,"result":"0x(%x+)"}$')
  if h and #h < 12 then
    local v = tonumber(h, 16)
    if v > head then head = v end
  end
end
function done(summary, latency, requests)
  local e, s = 0, 0
  for _, t in ipairs(threads) do e = e + t:get("errors"); s = s + t:get("non200") end
  io.write(string.format("wrk: %d requests in %.0f s: %.1f req/s; latency p50 %.2f ms, p99 %.2f ms, max %.2f ms; JSON-RPC errors %d, non-200 %d, socket errors connect %d read %d write %d timeout %d\n",
    summary.requests, summary.duration / 1e6, summary.requests / (summary.duration / 1e6),
    latency:percentile(50) / 1000, latency:percentile(99) / 1000, latency.max / 1000,
    e, s, summary.errors.connect, summary.errors.read, summary.errors.write, summary.errors.timeout))
end
LUA

cat >"$work/rss.py" <<'PY'
# Summary of rss.csv per 5-minute window: min and max of each column (MB).
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
cols = ["server_rss_kb", "server_anon_kb", "follower_rss_kb", "follower_anon_kb"]
print("RSS in MB (min-max per window; follower across its restarts):")
print(f"{'window':>11} {'server RSS':>13} {'server anon':>13} {'follower RSS':>13} {'follower anon':>13} {'head':>6} {'datadir MB':>10}")
def mb(values):
    values = [int(v) / 1024 for v in values if v not in ("", "0")]
    return f"{min(values):5.1f}-{max(values):5.1f}" if values else "-"
end = max(int(r["t_s"]) for r in rows) if rows else 0
for start in range(0, end + 1, 300):
    window = [r for r in rows if start <= int(r["t_s"]) < start + 300]
    if not window:
        continue
    heads = [int(r["follower_head"]) for r in window]
    print(f"{start:5d}-{start + 300:5d} " + " ".join(f"{mb([r[c] for r in window]):>13}" for c in cols)
          + f" {max(heads):6d} {max(float(r['tmpfs_used_kb']) for r in window) / 1024:10.1f}")
PY

cat >"$work/compare.py" <<'PY'
# The follower's server against anvil, on the consensus answers (see bench/soak.sh).
import json, random, sys
import requests

anvil_url, server_url, driver_json, seed = sys.argv[1:5]
rng = random.Random(int(seed))
session = requests.Session()
checks, failures, skipped, ignored = 0, [], {}, {}

def call(url, method, params):
    r = session.post(url, json={"jsonrpc": "2.0", "id": 1, "method": method, "params": params},
                     timeout=60).json()
    return r.get("result"), r.get("error")

# Fields one side serves and the other does not, or that differ by design: ignored, counted.
IGNORE = {
    "block": {"size": "anvil's size is not the block's RLP length; quarry's is checked against "
                      "the length of its own debug_getRawBlock instead"},
}

def same(kind, where, a, b):
    """Compares two JSON objects field by field (fields on one side only are noted)."""
    global checks
    checks += 1
    if a is None or b is None:
        if a != b:
            failures.append(f"{where}: anvil {json.dumps(a)[:200]} vs quarry {json.dumps(b)[:200]}")
        return
    if not isinstance(a, dict):
        if a != b:
            failures.append(f"{where}: anvil {json.dumps(a)[:300]} vs quarry {json.dumps(b)[:300]}")
        return
    for key in set(a) | set(b):
        if key not in a or key not in b:
            side = "anvil" if key in a else "quarry"
            ignored[f"{kind}.{key} (only {side})"] = ignored.get(f"{kind}.{key} (only {side})", 0) + 1
            continue
        if key in IGNORE.get(kind, {}):
            if a.get(key) != b.get(key):
                ignored[f"{kind}.{key} (differs)"] = ignored.get(f"{kind}.{key} (differs)", 0) + 1
            continue
        va, vb = a[key], b[key]
        if kind == "block" and key == "transactions":
            if [t["hash"] if isinstance(t, dict) else t for t in va] != [t["hash"] if isinstance(t, dict) else t for t in vb]:
                failures.append(f"{where}: transaction hashes differ: anvil {va} vs quarry {vb}")
            for ta, tb in zip(va, vb):
                if isinstance(ta, dict):
                    same("tx", f"{where} tx {ta.get('hash')}", ta, tb)
            continue
        if kind == "receipt" and key == "logs":
            if len(va) != len(vb):
                failures.append(f"{where}: {len(va)} logs (anvil) vs {len(vb)} (quarry)")
            for i, (la, lb) in enumerate(zip(va, vb)):
                same("log", f"{where} log {i}", la, lb)
            continue
        if va != vb:
            failures.append(f"{where}.{key}: anvil {json.dumps(va)[:200]} vs quarry {json.dumps(vb)[:200]}")

def both(method, params):
    a, ea = call(anvil_url, method, params)
    b, eb = call(server_url, method, params)
    return a, ea, b, eb

driver = json.load(open(driver_json))
head_a = int(call(anvil_url, "eth_blockNumber", [])[0], 16)
head_b = int(call(server_url, "eth_blockNumber", [])[0], 16)
print(f"heads: anvil {head_a}, quarry {head_b}")
same("head", "eth_blockNumber", head_a, head_b)

# Blocks: 50 at random, plus the first and last height of each reorg's new branch.
heights = set(rng.sample(range(1, head_a + 1), min(50, head_a)))
for reorg in driver["reorgs"]:
    heights |= {reorg["head"] - reorg["depth"] + 1, min(reorg["new_head"], head_a)}
heights = sorted(h for h in heights if 0 < h <= head_a)
addresses, blocks_with_txs = set(driver["contracts"]), 0
sizes_differ = 0
for n in heights:
    a, _, b, _ = both("eth_getBlockByNumber", [hex(n), True])
    same("block", f"block {n}", a, b)
    if a and b and a.get("size") != b.get("size"):
        sizes_differ += 1
    if b:
        raw, _ = call(server_url, "debug_getRawBlock", [hex(n)])
        checks += 1
        if raw is None or int(b["size"], 16) != len(raw) // 2 - 1:
            failures.append(f"block {n}: quarry's size {b['size']} is not its raw block's length {raw and len(raw) // 2 - 1}")
    if a:
        blocks_with_txs += bool(a["transactions"])
        for t in a["transactions"]:
            addresses.add(t["from"])
            if t.get("to"):
                addresses.add(t["to"])
    ra, era, rb, erb = both("eth_getBlockReceipts", [hex(n)])
    if era or erb:
        failures.append(f"block {n} receipts: errors anvil {era} quarry {erb}")
        continue
    if len(ra or []) != len(rb or []):
        failures.append(f"block {n}: {len(ra or [])} receipts (anvil) vs {len(rb or [])} (quarry)")
    for x, y in zip(ra or [], rb or []):
        same("receipt", f"block {n} receipt {x['transactionHash']}", x, y)
        if x.get("contractAddress"):
            addresses.add(x["contractAddress"])
print(f"blocks compared: {len(heights)} ({blocks_with_txs} with transactions), with their receipts; "
      f"blocks whose `size` differs from anvil's: {sizes_differ} (quarry's checked against its raw block)")

# State at the head and at 10 random blocks of the last 100, of every address seen.
addresses = sorted(addresses, key=str.lower)
at = ["latest"] + [hex(n) for n in rng.sample(range(max(1, head_a - 100), head_a + 1), min(10, head_a))]
state_checks = 0
for block in at:
    for address in addresses:
        for method, params in (("eth_getBalance", [address, block]),
                               ("eth_getTransactionCount", [address, block]),
                               ("eth_getCode", [address, block]),
                               ("eth_getStorageAt", [address, "0x0", block]),
                               ("eth_getStorageAt", [address, "0x1", block])):
            a, ea, b, eb = both(method, params)
            if ea:
                skipped[f"{method} (anvil error)"] = skipped.get(f"{method} (anvil error)", 0) + 1
                continue
            state_checks += 1
            same("state", f"{method}({address}, {block})", a, b if not eb else {"error": eb})
print(f"state compared: {len(addresses)} addresses at {len(at)} blocks ({state_checks} answers)")

# eth_call of each contract at the head and at 5 recent blocks.
call_checks = 0
for block in ["latest"] + [hex(n) for n in rng.sample(range(max(1, head_a - 50), head_a + 1), min(5, head_a))]:
    for contract in driver["contracts"]:
        data = "0x" + rng.getrandbits(256).to_bytes(32, "big").hex()
        a, ea, b, eb = both("eth_call", [{"to": contract, "data": data}, block])
        if ea:
            skipped["eth_call (anvil error)"] = skipped.get("eth_call (anvil error)", 0) + 1
            continue
        call_checks += 1
        same("call", f"eth_call({contract}, {block})", a, b if not eb else {"error": eb})
print(f"eth_call compared: {call_checks}")

# eth_getLogs: the whole chain in ranges of 500 blocks, then by address and by topic.
log_total = 0
filters = [{"fromBlock": hex(lo), "toBlock": hex(min(lo + 499, head_a))} for lo in range(0, head_a + 1, 500)]
filters += [{"fromBlock": "0x0", "toBlock": "latest", "address": c} for c in driver["contracts"][:3]]
filters += [{"fromBlock": hex(max(0, head_a - 300)), "toBlock": "latest", "topics": [driver["topic"]]}]
for f in filters:
    a, ea, b, eb = both("eth_getLogs", [f])
    if ea or eb:
        failures.append(f"eth_getLogs {f}: errors anvil {ea} quarry {eb}")
        continue
    checks += 1
    if len(a) != len(b):
        failures.append(f"eth_getLogs {f}: {len(a)} logs (anvil) vs {len(b)} (quarry)")
    for i, (x, y) in enumerate(zip(a, b)):
        same("log", f"eth_getLogs {f} log {i}", x, y)
    if "address" not in f and "topics" not in f:
        log_total += len(a)
print(f"eth_getLogs compared: {len(filters)} filters; {log_total} logs in the chain")

for key, count in sorted(ignored.items()):
    kind, field = key.split(" ")[0].split(".")
    reason = IGNORE.get(kind, {}).get(field, "a field one side serves and the other does not")
    print(f"ignored difference: {key} in {count} objects: {reason}")
for key, count in sorted(skipped.items()):
    print(f"skipped: {count} x {key}")
for f in failures[:40]:
    print("MISMATCH", f)
if len(failures) > 40:
    print(f"... and {len(failures) - 40} more mismatches")
print(f"comparison: {checks} checks (objects or answers compared), {len(failures)} mismatches")
print("RESULT:", "PASS" if not failures else "FAIL")
PY

# ---------------------------------------------------------------- upstream
"$py" "$work/genesis.py" "$work/genesis.json"
anvil_port=$(free_port)
"$anvil_bin" --port "$anvil_port" --init "$work/genesis.json" --block-time 1 --accounts 0 \
  --no-create2 --hardfork cancun --chain-id 1337 --base-fee 0 --gas-price 0 \
  --disable-min-priority-fee >"$work/anvil.log" 2>&1 &
anvil_pid=$!
pids+=($anvil_pid)
anvil=http://127.0.0.1:$anvil_port
for _ in $(seq 100); do [ -n "$(rpc "$anvil" eth_blockNumber '[]')" ] && break; sleep 0.1; done
[ -n "$(rpc "$anvil" eth_blockNumber '[]')" ] || { echo "anvil did not start:"; tail "$work/anvil.log"; exit 1; }
say "anvil $($anvil_bin --version | head -1) on $anvil, genesis $(rpc "$anvil" eth_getBlockByNumber '["0x0",false]' | python3 -c 'import json,sys; print(json.load(sys.stdin)["hash"])')"

# ---------------------------------------------------------------- the follower's datadir
mkdir -p "$mnt"
if mount -t tmpfs -o "size=${TMPFS_MB}m" tmpfs "$mnt" 2>"$work/mount.err"; then
  mounted=1
  say "tmpfs of ${TMPFS_MB} MB on $mnt"
else
  say "SKIPPED the full disk: cannot mount a tmpfs ($(cat "$work/mount.err")); the datadir is on $work's file system"
fi
datadir=$mnt/data
used_kb() { df -k --output=used "$mnt" | tail -1 | tr -d ' '; }

follower_starts=0
start_follower() {
  follower_starts=$((follower_starts + 1))
  echo "=== soak: start $follower_starts at $(date -u +%T) (+$(elapsed)s)" >>"$work/follow.log"
  NO_COLOR=1 RUST_BACKTRACE=0 "$quarry" follow --datadir "$datadir" --genesis "$work/genesis.json" \
    --upstream "ws://127.0.0.1:$anvil_port" >/dev/null 2>>"$work/follow.log" &
  follower_pid=$!
}
start_follower
for _ in $(seq 100); do [ -f "$datadir/mdbx.dat" ] && break; sleep 0.1; done

# ---------------------------------------------------------------- server and load
printf 'listen = "127.0.0.1:0"\n[[keys]]\nkey = "soak"\n' >"$work/server.toml"
"$quarry" serve --datadir "$datadir" --config "$work/server.toml" >"$work/server.out" 2>"$work/server.err" &
server_pid=$!
pids+=($server_pid)
addr=$(address server)
[ -n "$addr" ] || { echo "the server did not start:"; cat "$work/server.err"; exit 1; }
server=http://$addr/v3/soak
say "quarry serve of the follower's datadir on $addr (pid $server_pid), follower pid $follower_pid"

"$py" "$work/driver.py" "$anvil" "$TXS_PER_BLOCK" "$REORG_MIN" "$REORG_MAX" "$work/STOP" \
  "$work/driver.json" "$SEED" >"$work/driver.log" 2>&1 &
driver_pid=$!
pids+=($driver_pid)
for _ in $(seq 100); do [ -s "$work/driver.json.contracts" ] && break; sleep 0.1; done
[ -s "$work/driver.json.contracts" ] || { echo "the driver did not start:"; cat "$work/driver.log"; exit 1; }
read -r contract _ _ topic <"$work/driver.json.contracts"
"$py" "$work/subs.py" "ws://$addr/ws/v3/soak" "$SUBSCRIBERS" "$LOG_SUBSCRIBERS" "$work/STOP" \
  "$work/subs.json" >"$work/subs.log" 2>&1 &
subs_pid=$!
pids+=($subs_pid)
t_load=$(date +%s)
CONTRACT=$contract TOPIC=$topic DELAY_MS=$WRK_DELAY_MS wrk -t1 -c"$WRK_CONNECTIONS" -d"${DURATION}s" \
  --timeout 10s -s "$work/mix.lua" "$server" >"$work/wrk.out" 2>&1 &
wrk_pid=$!
pids+=($wrk_pid)
say "load on: driver (pid $driver_pid), $SUBSCRIBERS+$LOG_SUBSCRIBERS subscribers (pid $subs_pid), wrk (pid $wrk_pid)"

# ---------------------------------------------------------------- the soak
rand_between() { echo $(($1 + RANDOM % ($2 - $1 + 1))); }
RANDOM=$SEED
next_kill=$((t_load + $(rand_between "$KILL_MIN" "$KILL_MAX")))
kills=0 exits=0 recovering=0 kill_at=0 last_sample=0
full_state=waiting full_at=0 grown_at=0 tightened=0
[ "$mounted" = 1 ] || full_state=skipped
echo "t_s,server_rss_kb,server_anon_kb,follower_rss_kb,follower_anon_kb,follower_pid,follower_head,upstream_head,tmpfs_used_kb" >"$work/rss.csv"
status_kb() { awk -v k="$2:" '$1 == k {print $2}' "/proc/$1/status" 2>/dev/null || true; }
: >"$work/kills.txt"
while [ $(($(date +%s) - t_load)) -lt "$DURATION" ]; do
  now=$(date +%s)
  up=$(hex2dec "$(rpc "$anvil" eth_blockNumber '[]')")
  down=$(hex2dec "$(rpc "$server" eth_blockNumber '[]')")
  kill -0 "$server_pid" 2>/dev/null || { say "THE SERVER EXITED:"; tail -20 "$work/server.err"; exit 1; }
  if ! kill -0 "$follower_pid" 2>/dev/null; then
    wait "$follower_pid" 2>/dev/null && code=0 || code=$?
    exits=$((exits + 1))
    say "THE FOLLOWER EXITED by itself (status $code), head $down; its last lines:"
    sed 's/\x1b\[[0-9;]*m//g' "$work/follow.log" | tail -5 | cut -c1-300 | sed 's/^/    /'
    sleep 2
    start_follower
  fi
  # kill -9 every KILL_MIN..KILL_MAX seconds, started again at once
  if [ "$now" -ge "$next_kill" ]; then
    kill -9 "$follower_pid"
    wait "$follower_pid" 2>/dev/null || true
    kills=$((kills + 1))
    say "kill -9 #$kills of the follower (pid $follower_pid) at head $down (upstream $up)"
    start_follower
    kill_at=$now recovering=1 kill_head=$down
    next_kill=$((now + $(rand_between "$KILL_MIN" "$KILL_MAX")))
    sleep 1
    continue
  fi
  if [ "$recovering" = 1 ] && [ "$down" -ge "$up" ] && [ "$down" -gt "$kill_head" ]; then
    recovering=0
    echo "$kills $((now - t0)) $kill_head $down $((now - kill_at))" >>"$work/kills.txt"
    say "  follower back at the upstream's head ($down) $((now - kill_at)) s after kill #$kills"
  fi
  # the full disk, once
  case $full_state in
    waiting)
      if sed 's/\x1b\[[0-9;]*m//g' "$work/follow.log" | grep -q 'is full'; then
        full_state=full full_at=$now
        say "DISK FULL: the follower reports it ($(used_kb) KB used of the tmpfs); head $down, upstream $up"
        sed 's/\x1b\[[0-9;]*m//g' "$work/follow.log" | grep -m1 'is full' | cut -c1-400 | sed 's/^/    /'
      elif [ "$tightened" = 0 ] && [ $((now - t_load)) -ge "$FULL_AT" ]; then
        size=$(($(used_kb) + 64))
        mount -o "remount,size=${size}k" "$mnt"
        tightened=1
        say "not full yet: tmpfs cut to ${size} KB (what it holds plus 64 KB)"
      fi ;;
    full)
      if [ $((now - full_at)) -ge "$FULL_HOLD" ]; then
        faults=$(sed 's/\x1b\[[0-9;]*m//g' "$work/follow.log" | grep -o 'storage fault [0-9]* since start' | tail -1)
        mount -o remount,size=2g "$mnt"
        full_state=grown grown_at=$now grown_up=$up
        say "tmpfs grown to 2 GB after ${FULL_HOLD}s full (follower head $down, upstream $up; last warning: $faults)"
      fi ;;
    grown)
      if [ "$down" -ge $((up - 1)) ]; then
        full_state=done full_recovery=$((now - grown_at))
        say "  follower back at the upstream's head ($down) ${full_recovery} s after the growth"
      fi ;;
  esac
  if [ $((now - last_sample)) -ge 10 ]; then
    last_sample=$now
    echo "$((now - t_load)),$(status_kb "$server_pid" VmRSS),$(status_kb "$server_pid" RssAnon),$(status_kb "$follower_pid" VmRSS),$(status_kb "$follower_pid" RssAnon),$follower_pid,$down,$up,$(used_kb)" >>"$work/rss.csv"
    if [ $(((now - t_load) % 60)) -lt 10 ]; then
      say "heads: upstream $up, follower $down; RSS server $(status_kb "$server_pid" VmRSS) KB, follower $(status_kb "$follower_pid" VmRSS) KB; tmpfs $(used_kb) KB used"
    fi
  fi
  sleep 1
done

# ---------------------------------------------------------------- the end
set +e  # report whatever can be reported
say "soak over: stopping the load and block production"
touch "$work/STOP"
wait "$driver_pid" "$subs_pid" 2>/dev/null || true
wait "$wrk_pid" 2>/dev/null || true
rpc "$anvil" evm_setIntervalMining '[0]' >/dev/null
sleep 1
final=$(hex2dec "$(rpc "$anvil" eth_blockNumber '[]')")
final_hash=$(rpc "$anvil" eth_getBlockByNumber "[\"$(printf '0x%x' "$final")\",false]" | python3 -c 'import json,sys; print(json.load(sys.stdin)["hash"])')
caught=no
for _ in $(seq 300); do
  if [ "$(rpc "$server" eth_getBlockByNumber "[\"$(printf '0x%x' "$final")\",false]" | python3 -c 'import json,sys
try: print(json.load(sys.stdin)["hash"])
except Exception: print("")')" = "$final_hash" ]; then caught=yes; break; fi
  sleep 1
done
say "upstream stopped at block $final ($final_hash); follower caught up: $caught"

echo
echo "== reorganisations (anvil_reorg)"
cat "$work/driver.log"
"$py" - "$work/driver.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
depths = [r["depth"] for r in d["reorgs"]]
print(f"{len(depths)} reorgs, depths {depths} (sum {sum(depths)}), {d['reorg_errors']} failed; "
      f"transactions sent {d['sent']}, refused {d['send_errors']}, contracts deployed {d['deploys']}"
      + (f"; errors: {d['error_samples']}" if d["error_samples"] else ""))
PY
follow_log() { sed 's/\x1b\[[0-9;]*m//g' "$work/follow.log"; }
echo "follower: $(follow_log | grep -c 'reorg: replaced') reorg lines; depths $(follow_log | sed -n 's/.*reorg: replaced blocks \([0-9]*\) to \([0-9]*\) .*/\1 \2/p' | awk '{printf "%d ", $2 - $1 + 1}')"
echo
echo "== kill -9 of the follower: $kills kills, $exits exits of its own, $follower_starts starts"
echo "kill  at(+s)  head-at-kill  head-at-recovery  seconds-to-upstream-head"
awk '{printf "%4d  %6d  %12d  %16d  %24d\n", $1, $2, $3, $4, $5}' "$work/kills.txt"
echo
echo "== full disk"
case $full_state in
  skipped) echo "skipped: no tmpfs could be mounted" ;;
  waiting) echo "the follower never reported a full disk (tightened: $tightened)" ;;
  full) echo "full at +$((full_at - t0))s and never grown (the soak ended)" ;;
  grown) echo "full at +$((full_at - t0))s, grown at +$((grown_at - t0))s; the follower did not reach the upstream's head before the end" ;;
  done) echo "full at +$((full_at - t0))s ($([ "$tightened" = 1 ] && echo "after the tmpfs was cut to what it held + 64 KB" || echo "the ${TMPFS_MB} MB tmpfs filled")), held ${FULL_HOLD}s, grown to 2 GB at +$((grown_at - t0))s; follower at the upstream's head ${full_recovery}s after the growth" ;;
esac
echo "follower storage-fault warnings: $(follow_log | grep -c 'storage fault') ($(follow_log | grep -o 'storage fault [0-9]* since start' | tail -1))"
echo "follower warnings by kind:"
follow_log | grep -E ' WARN | ERROR |^Error' | sed -E 's/^[^ ]+ +//; s/0x[0-9a-f]{8,}/0x…/g; s/[0-9]+(\.[0-9]+)?(ms|s)\b/N\2/g; s/block [0-9]+/block N/g; s/[0-9]+ bytes/N bytes/g; s/fault [0-9]+/fault N/g' \
  | cut -c1-200 | sort | uniq -c | sort -rn | head -15 | sed 's/^/  /'
echo
echo "== server under load"
cat "$work/wrk.out" | grep '^wrk:' || cat "$work/wrk.out"
echo "server stderr: $(wc -l <"$work/server.err") lines$(grep -ciE 'error|panic' "$work/server.err" | sed 's/^/, with error or panic: /')"
grep -iE 'error|panic' "$work/server.err" | sed 's/\x1b\[[0-9;]*m//g' | cut -c1-250 | sort | uniq -c | head -5
"$py" - "$work/subs.json" <<'PY'
import json, sys
for kind, s in json.load(open(sys.argv[1])).items():
    print(f"{kind} subscribers: {s['subscribers']}, notifications {s['notifications']} "
          f"(per subscriber {s['min']}-{s['max']}), disconnects {s['disconnects']}, "
          f"failed connects {s['connect_errors']}"
          + (f", heads repeated or lower than one seen before (reorgs) {s['repeated_or_lower_heads']}, "
             f"distinct heights per subscriber at least {s['distinct_heights_min']}, highest {s['highest']}"
             if kind == "newHeads" else f", removed: true logs {s['removed_logs']}"))
PY
echo
echo "== RSS over time (samples every 10 s in rss.csv)"
"$py" "$work/rss.py" "$work/rss.csv"
echo
echo "== comparison with the upstream"
if [ "$caught" = yes ]; then
  "$py" "$work/compare.py" "$anvil" "$server" "$work/driver.json" "$SEED"
else
  echo "FAIL: the follower did not reach the upstream's last block $final; not compared"
fi
say "done"
