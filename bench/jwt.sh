#!/usr/bin/env bash
# JWT benchmark: requests/s of eth_blockNumber through one key with an ES256 token, an RS256
# token (RSA 2048) and no token, on the same server, in the same run: the three alternate,
# their order rotated every round, and each row shows the medians of ROUNDS runs and each
# token's share of the no-token requests/s. As a client resending its token does, the runs
# measure a token verified once (signature, exp, nbf, aud) and then remembered by its hash:
# each request still hashes it, looks it up and checks its expiry.
#
#   bench/jwt.sh                            (needs wrk and openssl)
#   DURATION=3 ROUNDS=5 CONNECTIONS="1 16" bench/jwt.sh
#   NO_BUILD=1 QUARRY_BIN=target/debug/quarry DURATION=1 ROUNDS=1 bench/jwt.sh   (a quick check)
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${DURATION:-3}
ROUNDS=${ROUNDS:-5}
CONNECTIONS=${CONNECTIONS:-"1 16"}
FIXTURES=${FIXTURES:-../shared/fixtures/rpc-compat}
command -v wrk >/dev/null || { echo "wrk not found: apt-get install wrk" >&2; exit 1; }
command -v openssl >/dev/null || { echo "openssl not found: apt-get install openssl" >&2; exit 1; }

source bench/lib.sh
"$quarry" ingest --datadir "$work/data" --genesis "$FIXTURES/genesis.json" \
  "$FIXTURES/chain.rlp" >/dev/null 2>&1

openssl genrsa -out "$work/rsa.pem" 2048 2>/dev/null
openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$work/ec.pem" 2>/dev/null
for k in rsa ec; do openssl pkey -in "$work/$k.pem" -pubout -out "$work/$k.pub.pem"; done
store="$work/keys.json"
key=$("$quarry" keys --store "$store" add --plan custom --name bench 2>/dev/null)
id=$("$quarry" keys --store "$store" list | awk -F'\t' '$3 == "bench" {print $1}')
"$quarry" keys --store "$store" update "$id" --jwt-key "rsa=$work/rsa.pub.pem" \
  --jwt-key "ec=$work/ec.pub.pem" 2>/dev/null
serve main "$work/data" "keys_file = \"$store\""
addr=$(address main)

# token ALG KID PEM: a JWT for the key, valid for an hour, signed by openssl.
b64url() { openssl base64 -A | tr '+/' '-_' | tr -d '='; }
token() {
  local header payload input signature
  header=$(printf '{"alg":"%s","typ":"JWT","kid":"%s"}' "$1" "$2" | b64url)
  payload=$(printf '{"exp":%d,"aud":"%s"}' "$(( $(date +%s) + 3600 ))" "$id" | b64url)
  input="$header.$payload"
  if [[ $1 == ES256 ]]; then
    # JWS wants the raw r||s (32 bytes each), openssl gives DER.
    signature=$(printf '%s' "$input" | openssl dgst -sha256 -sign "$3" \
      | openssl asn1parse -inform DER | awk -F: '/INTEGER/ {print $NF}' \
      | while read -r n; do n=$(printf '%064s' "$n" | tr ' ' 0); printf '%s' "${n: -64}"; done \
      | xxd -r -p | b64url)
  else
    signature=$(printf '%s' "$input" | openssl dgst -sha256 -sign "$3" | b64url)
  fi
  printf '%s.%s' "$input" "$signature"
}
es256=$(token ES256 ec "$work/ec.pem")
rs256=$(token RS256 rsa "$work/rsa.pem")
body='{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber","params":[]}'
for t in "$es256" "$rs256" ""; do
  auth=()
  [[ -n $t ]] && auth=(-H "Authorization: Bearer $t")
  answer=$(curl -s -X POST -H 'Content-Type: application/json' "${auth[@]}" "http://$addr/v3/$key" -d "$body")
  grep -q '"result"' <<<"$answer" || { echo "a check request failed: $answer" >&2; exit 1; }
done
# A token whose signature is altered is refused: the tokens are really verified.
forged="${es256%.*}.$(rev <<<"${es256##*.}")"
refused=$(curl -s -o /dev/null -w '%{http_code}' -X POST -H 'Content-Type: application/json' \
  -H "Authorization: Bearer $forged" "http://$addr/v3/$key" -d "$body")
[[ $refused == 401 ]] || { echo "a forged token was not refused ($refused)" >&2; exit 1; }

cat >"$work/post.lua" <<'LUA'
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
local token = os.getenv("TOKEN")
if token ~= "" then wrk.headers["Authorization"] = "Bearer " .. token end
wrk.body = os.getenv("BODY")
LUA
echo "quarry serve on $addr, wrk ${DURATION}s per run, $(nproc) cores shared by the server and wrk"
TOKEN="" BODY="$body" wrk -t2 -c16 -d1s -s "$work/post.lua" "http://$addr/v3/$key" >/dev/null
: >"$work/results"
run() { # conns label token
  local threads=$(( $1 < 2 ? 1 : 2 )) out rps
  out=$(TOKEN="$3" BODY="$body" wrk -t"$threads" -c"$1" -d"${DURATION}s" -s "$work/post.lua" "http://$addr/v3/$key")
  if grep -q 'Non-2xx' <<<"$out"; then echo "$2: non-2xx responses" >&2; exit 1; fi
  rps=$(sed -n 's/^Requests\/sec: *\([0-9.]*\).*/\1/p' <<<"$out")
  echo "$1|$2|$rps" >>"$work/results"
}
labels=(none ES256 RS256)
tokens=("" "$es256" "$rs256")
for conns in $CONNECTIONS; do
  for round in $(seq 1 "$ROUNDS"); do
    for i in 0 1 2; do
      j=$(( (i + round) % 3 ))
      run "$conns" "${labels[$j]}" "${tokens[$j]}"
    done
  done
done

python3 - "$work/results" "$ROUNDS" <<'PY'
import sys, statistics
rows = [l.rstrip("\n").split("|") for l in open(sys.argv[1])]
print(f"\n{'eth_blockNumber':<18}{'conns':>6}{'no JWT':>10}{'ES256':>10}{'share':>8}{'RS256':>10}{'share':>8}")
for conns in dict.fromkeys(r[0] for r in rows):
    runs = {label: [float(r[2]) for r in rows if r[0] == conns and r[1] == label] for label in ("none", "ES256", "RS256")}
    # Each round's ratio: the load of this shared machine drifts between rounds.
    share = lambda label: statistics.median(100 * t / n for n, t in zip(runs["none"], runs[label]))
    print(f"{'':<18}{conns:>6}{statistics.median(runs['none']):>10.0f}{statistics.median(runs['ES256']):>10.0f}{share('ES256'):>7.1f}%{statistics.median(runs['RS256']):>10.0f}{share('RS256'):>7.1f}%")
print(f"\nmedians of {sys.argv[2]} rounds (req/s, and each token's per-round share of no JWT)")
PY
