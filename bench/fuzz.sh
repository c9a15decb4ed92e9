#!/usr/bin/env bash
# Runs each fuzz target (fuzz/, cargo-fuzz on the nightly toolchain) for a given time, niced,
# and prints its executions, executions per second and what it found. The corpora live in
# fuzz/corpus/TARGET (not committed) and grow from run to run; they are seeded here, at run
# time, with the blocks of testdata/devnet/chain.rlp and ../shared/fixtures/rpc-compat/chain.rlp
# and with the parameters of the rpc-compat fixtures' requests (read from ../shared, never
# copied into the repository). A crash or a hang leaves its input in fuzz/artifacts/TARGET;
# each one found becomes a regression test in the normal test suite.
#
#   bench/fuzz.sh                      (needs cargo-fuzz: cargo install cargo-fuzz)
#   SECONDS_PER_TARGET=600 TARGETS="chain_reader rpc_params" bench/fuzz.sh
#   RUNS=10000000 JOBS=2 bench/fuzz.sh  each target until it has run RUNS inputs (no time limit),
#                                       JOBS targets at once
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_PER_TARGET=${SECONDS_PER_TARGET:-60}
RUNS=${RUNS:-}
JOBS=${JOBS:-1}
TARGETS=${TARGETS:-"chain_reader rpc_params logs_filter state_overrides envelope"}
FIXTURES=${FIXTURES:-../shared/fixtures/rpc-compat}
command -v cargo-fuzz >/dev/null || { echo "cargo-fuzz not found: cargo install cargo-fuzz" >&2; exit 1; }

cd fuzz
# -s none: no sanitizer (safe Rust; panics, overflows with debug assertions, hangs and memory
# blowups are what is looked for); -a: debug assertions.
FUZZ=(cargo +nightly fuzz)
FLAGS=(-s none -a)
nice -n 19 "${FUZZ[@]}" build "${FLAGS[@]}" >/dev/null

python3 - "$FIXTURES" <<'PY'
import hashlib, json, os, sys, glob
fixtures = sys.argv[1]
def put(target, data):
    os.makedirs(f"corpus/{target}", exist_ok=True)
    with open(f"corpus/{target}/seed-{hashlib.sha1(data).hexdigest()}", "wb") as f:
        f.write(data)
def blocks(data):
    """The items of a file of concatenated RLP lists."""
    out, at = [], 0
    while at < len(data):
        first = data[at]
        if first <= 0xf7:
            size = 1 + first - 0xc0
        else:
            n = first - 0xf7
            size = 1 + n + int.from_bytes(data[at + 1:at + 1 + n], "big")
        out.append(data[at:at + size]); at += size
    return out
for chain in ("../testdata/devnet/chain.rlp", os.path.join("..", fixtures, "chain.rlp")):
    if not os.path.exists(chain):
        continue
    data = open(chain, "rb").read()
    items = blocks(data)
    for item in items:
        put("chain_reader", item)
    put("chain_reader", b"".join(items[:3]))
# The fixtures' requests: eth_getLogs filters, eth_call objects and overrides, whole bodies.
for path in glob.glob(os.path.join("..", fixtures, "tests", "*", "*.io")):
    for line in open(path):
        if not line.startswith(">>"):
            continue
        body = line[2:].strip()
        put("envelope", body.encode())
        try:
            request = json.loads(body)
        except ValueError:
            continue
        params = request.get("params") or []
        if request.get("method") == "eth_getLogs" and params:
            put("logs_filter", b"\x01" + json.dumps(params[0]).encode())
        if request.get("method") in ("eth_call", "eth_estimateGas", "eth_createAccessList"):
            if params:
                put("state_overrides", b"\x01" + json.dumps(params[0]).encode())
            if len(params) > 2:
                put("state_overrides", b"\x01" + json.dumps(params[2]).encode())
for body in (b'{"jsonrpc":"2.0","method":"eth_chainId"}', b'[{"jsonrpc":"2.0","id":true,"method":"a"},{"id":{}}]'):
    put("envelope", body)
PY

printf '%-16s %12s %10s %8s  %s\n' target executions "per s" seconds found
# fuzz TARGET: runs it, then prints its row.
fuzz() {
  local target=$1 log start status took runs found limit
  mkdir -p "corpus/$target" "artifacts/$target"
  log=$(mktemp)
  if [ -n "$RUNS" ]; then limit=(-runs="$RUNS"); else limit=(-max_total_time="$SECONDS_PER_TARGET"); fi
  start=$(date +%s)
  set +e
  nice -n 19 "${FUZZ[@]}" run "${FLAGS[@]}" "$target" "corpus/$target" -- \
    "${limit[@]}" -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="artifacts/$target/" >"$log" 2>&1
  status=$?
  set -e
  took=$(( $(date +%s) - start ))
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  runs=${runs:-0}
  found=$( [ $status -eq 0 ] && echo "nothing" || (grep -m1 -E "^(==[0-9]+== ?ERROR|thread .* panicked|SUMMARY)" "$log" || echo "exit $status; see $log") )
  printf '%-16s %12s %10s %8s  %s\n' "$target" "$runs" "$(( runs / (took > 0 ? took : 1) ))" "$took" "$found"
  [ $status -eq 0 ] && rm -f "$log"
}
running=0
for target in $TARGETS; do
  fuzz "$target" &
  running=$((running + 1))
  if [ "$running" -ge "$JOBS" ]; then
    wait -n || true
    running=$((running - 1))
  fi
done
wait
