#!/usr/bin/env bash
# Allowlists benchmark: requests/s of the ceiling method (web3_clientVersion) and of
# eth_getStorageAt through a key with 30 entries of each allowlist type (origins with
# wildcards, user agents, methods, contract addresses; each request matching the last entry of
# every list, the most work a check does) against a key with none, on the same server, in the
# same run: the two keys alternate, their order swapped every round, and each row shows the
# medians of ROUNDS runs and the locked key's share of the open key's requests/s.
#
#   bench/allowlists.sh                     (needs wrk: apt-get install wrk)
#   DURATION=3 ROUNDS=5 CONNECTIONS="1 16" bench/allowlists.sh
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${DURATION:-3}
ROUNDS=${ROUNDS:-5}
CONNECTIONS=${CONNECTIONS:-"1 16"}
FIXTURES=${FIXTURES:-../shared/fixtures/rpc-compat}
command -v wrk >/dev/null || { echo "wrk not found: apt-get install wrk" >&2; exit 1; }

source bench/lib.sh
"$quarry" ingest --datadir "$work/data" --genesis "$FIXTURES/genesis.json" \
  "$FIXTURES/chain.rlp" >/dev/null 2>&1
contract=0x7dcd17433742f4c0ca53122ab541d0ba67fc27df
origin=https://shop30.app.example
agent="Mozilla/5.0 (X11; Linux x86_64) bench-agent"

store="$work/keys.json"
open_key=$("$quarry" keys --store "$store" add --plan custom --name open 2>/dev/null)
args=()
for i in $(seq 1 29); do
  args+=(--allow-origin "https://*.app$i.example" --allow-user-agent "other-agent-$i"
    --allow-method "eth_unused$i" --allow-contract "$(printf '0x%040x' "$i")")
done
# The entries the requests match come last.
args+=(--allow-origin "https://*.app.example" --allow-user-agent "bench-agent"
  --allow-method web3_clientVersion --allow-contract "$contract")
locked_key=$("$quarry" keys --store "$store" add --plan custom --name locked "${args[@]}" 2>/dev/null)
locked_key2=$("$quarry" keys --store "$store" add --plan custom --name locked2 \
  "${args[@]/web3_clientVersion/eth_getStorageAt}" 2>/dev/null)
serve main "$work/data" "keys_file = \"$store\""
addr=$(address main)

cat >"$work/post.lua" <<LUA
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Origin"] = "$origin"
wrk.headers["User-Agent"] = "$agent"
wrk.body = os.getenv("BODY")
LUA
req() { printf '{"jsonrpc":"2.0","id":1,"method":"%s","params":%s}' "$1" "$2"; }
# name|method|params|locked key (whose method list names the method)
cases=(
  "web3_clientVersion (ceiling)|web3_clientVersion|[]|$locked_key"
  "eth_getStorageAt latest|eth_getStorageAt|[\"$contract\",\"0x0\",\"latest\"]|$locked_key2"
)
for c in "${cases[@]}"; do
  IFS='|' read -r name method params locked <<<"$c"
  for key in "$open_key" "$locked"; do
    answer=$(curl -s -X POST -H 'Content-Type: application/json' -H "Origin: $origin" \
      -H "User-Agent: $agent" "http://$addr/v3/$key" -d "$(req "$method" "$params")")
    grep -q '"result"' <<<"$answer" || { echo "$name: $answer" >&2; exit 1; }
  done
done
# A contract outside the list is refused: the lists are really checked.
refused=$(curl -s -o /dev/null -w '%{http_code}' -X POST -H 'Content-Type: application/json' \
  -H "Origin: $origin" -H "User-Agent: $agent" "http://$addr/v3/$locked_key2" \
  -d "$(req eth_getStorageAt '["0x00000000000000000000000000000000000000ff","0x0","latest"]')")
[[ $refused == 403 ]] || { echo "a contract outside the list was not refused ($refused)" >&2; exit 1; }

echo "quarry serve on $addr, wrk ${DURATION}s per run, $(nproc) cores shared by the server and wrk"
BODY=$(req web3_clientVersion '[]') wrk -t2 -c16 -d2s -s "$work/post.lua" "http://$addr/v3/$open_key" >/dev/null
: >"$work/results"
run() { # name conns key label body
  local threads=$(( $2 < 2 ? 1 : 2 )) out rps
  out=$(BODY="$5" wrk -t"$threads" -c"$2" -d"${DURATION}s" -s "$work/post.lua" "http://$addr/v3/$3")
  if grep -q 'Non-2xx' <<<"$out"; then echo "$1 ($4): non-2xx responses" >&2; exit 1; fi
  rps=$(sed -n 's/^Requests\/sec: *\([0-9.]*\).*/\1/p' <<<"$out")
  echo "$1|$2|$4|$rps" >>"$work/results"
}
for conns in $CONNECTIONS; do
  for round in $(seq 1 "$ROUNDS"); do
    for c in "${cases[@]}"; do
      IFS='|' read -r name method params locked <<<"$c"
      body=$(req "$method" "$params")
      if (( round % 2 )); then
        run "$name" "$conns" "$open_key" open "$body"; run "$name" "$conns" "$locked" locked "$body"
      else
        run "$name" "$conns" "$locked" locked "$body"; run "$name" "$conns" "$open_key" open "$body"
      fi
    done
  done
done

python3 - "$work/results" "$ROUNDS" <<'PY'
import sys, statistics
rows = [l.rstrip("\n").split("|") for l in open(sys.argv[1])]
print(f"\n{'method':<32}{'conns':>6}{'no allowlists':>15}{'30 of each':>13}{'share':>8}")
for key in dict.fromkeys((r[0], r[1]) for r in rows):
    runs = {label: [float(r[3]) for r in rows if (r[0], r[1]) == key and r[2] == label] for label in ("open", "locked")}
    # Each round's pair, as a share: the load of this shared machine drifts between rounds.
    shares = [100 * l / o for o, l in zip(runs["open"], runs["locked"])]
    print(f"{key[0]:<32}{key[1]:>6}{statistics.median(runs['open']):>15.0f}{statistics.median(runs['locked']):>13.0f}{statistics.median(shares):>7.1f}%")
print(f"\nmedians of {sys.argv[2]} rounds (req/s, and the per-round share of the key with allowlists)")
PY
