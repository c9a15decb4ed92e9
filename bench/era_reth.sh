#!/usr/bin/env bash
# History files against reth 2.5.1 (RETH names its binary; reth is not in CI), field for field
# over JSON-RPC, each side importing the same files:
# 1. mainnet's era 0 (testdata/era1): `reth import-era`, then its pipeline executing the blocks,
#    beside `quarry ingest`: every block with its transactions, every uncle, and the balance at
#    block 8191 of every miner and uncle miner;
# 2. quarry's ere export of a post-merge devchain (`devchain --forks genesis`, BLOCKS blocks):
#    reth imports and executes it; every block and every block's receipts compared;
# 3. reth's `export-era` of its era 0 datadir, era1 and ere: quarry imports both, and its head
#    must be block 8191's published hash.
#
#   RETH=/usr/local/bin/reth bench/era_reth.sh          BLOCKS=256 TXS=8 by default
set -euo pipefail
cd "$(dirname "$0")/.."
: "${RETH:?set RETH to a reth 2.5.1 binary}"
BLOCKS=${BLOCKS:-256}
TXS=${TXS:-8}
source bench/lib.sh

# reth_import CHAIN DIR DATADIR TIP LAST: import-era, then the pipeline to LAST.
reth_import() {
  "$RETH" import-era --chain "$1" --path "$2" --datadir "$3" >/dev/null 2>&1
  "$RETH" node --chain "$1" --datadir "$3" --debug.tip "$4" --debug.max-block "$5" \
    --debug.terminate --disable-discovery --max-outbound-peers 0 --max-inbound-peers 0 \
    --ipcdisable --port "$(free_port)" --authrpc.port "$(free_port)" >/dev/null 2>&1
}

# compare QUARRY_URL RETH_URL LAST MODE: MODE `mainnet` compares blocks, uncles and miners'
# balances; `receipts` compares blocks and every block's receipts.
compare() {
  python3 - "$@" <<'PY'
import json, sys, urllib.request
quarry, reth, last, mode = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
def call(url, calls):
    out = []
    for i in range(0, len(calls), 100):
        batch = [{"jsonrpc": "2.0", "id": j, "method": m, "params": p} for j, (m, p) in enumerate(calls[i:i + 100])]
        req = urllib.request.Request(url, json.dumps(batch).encode(), {"Content-Type": "application/json"})
        out += [a.get("result", a.get("error")) for a in sorted(json.load(urllib.request.urlopen(req)), key=lambda a: a["id"])]
    return out
def same(what, calls, drop=()):
    a, b = call(quarry, calls), call(reth, calls)
    bad = 0
    for (m, p), x, y in zip(calls, a, b):
        if isinstance(x, dict) and isinstance(y, dict):
            x = {k: v for k, v in x.items() if k not in drop}
            y = {k: v for k, v in y.items() if k not in drop}
        if x != y:
            bad += 1
            if bad <= 3:
                print(f"  {m}{p}:\n    quarry {json.dumps(x)[:400]}\n    reth   {json.dumps(y)[:400]}")
    print(f"{what}: {len(calls) - bad} of {len(calls)} equal")
    return a, bad
# totalDifficulty: quarry's blocks carry it (the service spec lists it), reth's do not.
blocks, bad = same("blocks", [("eth_getBlockByNumber", [hex(n), True]) for n in range(last + 1)], drop=("totalDifficulty",))
if mode == "mainnet":
    uncles = [("eth_getUncleByBlockNumberAndIndex", [hex(n), hex(i)]) for n, b in enumerate(blocks) for i in range(len(b["uncles"]))]
    _, bad_uncles = same("uncles", uncles, drop=("totalDifficulty",))
    miners = sorted({b["miner"] for b in blocks} | {u["miner"] for u in call(quarry, uncles)})
    _, bad_miners = same("miners' balances at the last block", [("eth_getBalance", [m, hex(last)]) for m in miners])
    bad += bad_uncles + bad_miners
else:
    _, bad_receipts = same("receipts", [("eth_getBlockReceipts", [hex(n)]) for n in range(last + 1)])
    bad += bad_receipts
sys.exit(1 if bad else 0)
PY
}

status=0
echo "== 1. mainnet era 0 ($(date +%T))"
mkdir -p "$work/m/era"
cp testdata/era1/mainnet-00000-5ec1ffb8.era1 "$work/m/era/"
sha256sum "$work/m/era/"*.era1 | awk '{print "0x"$1}' >"$work/m/era/checksums.txt"
"$quarry" ingest --chain mainnet --datadir "$work/m/quarry" "$work/m/era" >/dev/null 2>&1
tip=0xa6860fefa339c963e1bb622526cc8dd4344eedd2a9b969e74de5cccc445fbed4
reth_import mainnet "$work/m/era" "$work/m/reth" $tip 8191
serve q "$work/m/quarry" $'[[keys]]\nkey = "k"'
serve_reth mainnet "$work/m/reth" eth
compare "http://$(address q)/v3/k" "$reth_url" 8191 mainnet || status=1
kill "${pids[@]}"; wait "${pids[@]}" 2>/dev/null || true; pids=()

echo "== 2. quarry's ere export of a post-merge devchain ($(date +%T))"
"$quarry" devchain --out "$work/d" --forks genesis --blocks "$BLOCKS" --txs-per-block "$TXS" >/dev/null 2>&1
"$quarry" ingest --genesis "$work/d/genesis.json" --datadir "$work/d/quarry" "$work/d/chain.rlp" >/dev/null 2>&1
"$quarry" export-era --datadir "$work/d/quarry" --out "$work/d/ere" --format ere >/dev/null
tip=$("$quarry" ingest --datadir "$work/d/quarry" 2>/dev/null | sed -n 's/^head: block [0-9]* (\(0x[0-9a-f]*\))$/\1/p')
reth_import "$work/d/genesis.json" "$work/d/ere" "$work/d/reth" "$tip" "$BLOCKS"
serve q "$work/d/quarry" $'[[keys]]\nkey = "k"'
serve_reth "$work/d/genesis.json" "$work/d/reth" eth
compare "http://$(address q)/v3/k" "$reth_url" "$BLOCKS" receipts || status=1
kill "${pids[@]}"; wait "${pids[@]}" 2>/dev/null || true; pids=()

echo "== 3. reth's export-era of era 0, imported by quarry ($(date +%T))"
for type in era1 ere; do
  "$RETH" export-era --chain mainnet --datadir "$work/m/reth" --file-type $type \
    --first-block-number 0 --last-block-number 8191 --path "$work/m/reth-$type" >/dev/null 2>&1
  ls "$work/m/reth-$type"
  out=$("$quarry" ingest --chain mainnet --datadir "$work/m/from-reth-$type" "$work/m/reth-$type"/* 2>&1 || true)
  echo "$out" | tail -1
  echo "$out" | grep -q "head: block 8191 (0xa6860fef" || { echo "reth's $type export: not imported"; status=1; }
done
exit $status
