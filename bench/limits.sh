#!/usr/bin/env bash
# Rate-limit load test on loopback with oha: one free-plan key is driven at ten times its
# allowed rate while a second key sends ordinary traffic. Reports the first key's admitted rate
# against its limit (goal: within 5%), and the second key's rate, errors and latency with and
# without the flood next to it (goal: unaffected).
#
#   bench/limits.sh                 (needs oha: cargo install oha --locked)
#   RATE=200 DURATION=20 OTHER_RATE=500 bench/limits.sh
set -euo pipefail
cd "$(dirname "$0")/.."
RATE=${RATE:-200}              # the limited key's allowed requests per second
DURATION=${DURATION:-20}       # seconds per run
OTHER_RATE=${OTHER_RATE:-500}  # the other key's requests per second
command -v oha >/dev/null || { echo "oha not found: cargo install oha --locked" >&2; exit 1; }

source bench/lib.sh
./target/release/quarry ingest --datadir "$work/data" --genesis testdata/devnet/genesis.json \
  testdata/devnet/chain.rlp >/dev/null 2>&1
serve main "$work/data" "$(printf '[plans.free]\nrequests_per_second = %s\n[[keys]]\nkey = "limited-key"\nplan = "free"\n[[keys]]\nkey = "other-key"' "$RATE")"
addr=$(address main)

body='{"jsonrpc":"2.0","id":1,"method":"eth_getBlockByNumber","params":["0x2",false]}'
# oha at a fixed request rate: $1 key, $2 requests/s, $3 connections, $4 JSON output file.
load() {
  oha --no-tui --output-format json -z "${DURATION}s" -q "$2" -c "$3" -m POST \
    -H 'Content-Type: application/json' -d "$body" "http://$addr/v3/$1" >"$4"
}

load other-key "$OTHER_RATE" 16 "$work/alone.json"
load limited-key $((RATE * 10)) 64 "$work/flood.json" &
flood=$!
load other-key "$OTHER_RATE" 16 "$work/beside.json"
wait $flood

python3 - "$work" "$RATE" "$DURATION" <<'PY'
import json, sys
work, rate, duration = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
def run(name):
    r = json.load(open(f"{work}/{name}.json"))
    codes = {int(k): v for k, v in r["statusCodeDistribution"].items()}
    total = r["summary"]["total"]
    lat = r["latencyPercentiles"]
    return codes, total, lat["p50"] * 1000, lat["p99"] * 1000
codes, total, p50, p99 = run("flood")
admitted, refused = codes.get(200, 0), codes.get(429, 0)
others = sum(v for k, v in codes.items() if k not in (200, 429))
admitted_rate = admitted / total
print(f"limited key: driven at {rate * 10}/s for {total:.1f} s, allowed {rate}/s")
print(f"  admitted {admitted} ({admitted_rate:.1f}/s, {100 * (admitted_rate / rate - 1):+.2f}% of the limit), "
      f"refused with 429: {refused}, other statuses: {others}")
for name, label in (("alone", "other key alone"), ("beside", "other key beside the flood")):
    codes, total, p50, p99 = run(name)
    ok = codes.get(200, 0)
    bad = sum(v for k, v in codes.items() if k != 200)
    print(f"{label}: {ok / total:.1f}/s ok, {bad} not 200, p50 {p50:.2f} ms, p99 {p99:.2f} ms")
PY
