#!/usr/bin/env bash
# History files: quarry's import of era1 and ere files against its own import of the same
# blocks as RLP, and against reth (`reth import-era`, then its pipeline executing the blocks)
# when RETH names a reth binary, in the same run, alternating the order every round. Each
# import starts from an empty datadir and reports wall time, blocks/s, the process's CPU time
# (user + system, with its children's), its peak RssAnon (the largest of its process tree's,
# sampled every 20 ms) and the datadir's allocated size (du).
#
# Three sets of the same blocks, each as RLP and as history files:
# - mainnet: mainnet's era 0 (testdata/era1; 8,192 blocks, 1,410 uncles, no transactions),
#   its RLP fetched from quarry's debug_getRawBlock;
# - pow: a proof-of-work devchain (`devchain --forks pow`, POW_BLOCKS blocks of POW_TXS
#   transactions) exported as era1;
# - pos: a post-merge devchain (`devchain --forks genesis`, POS_BLOCKS of POS_TXS) exported as ere.
#
#   bench/era.sh                         ROUNDS=5 by default
#   RETH=/usr/local/bin/reth bench/era.sh
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-5}
POW_BLOCKS=${POW_BLOCKS:-16384}
POW_TXS=${POW_TXS:-20}
POS_BLOCKS=${POS_BLOCKS:-16384}
POS_TXS=${POS_TXS:-20}
[ -n "${NO_BUILD:-}" ] || cargo build --release --quiet
quarry=${QUARRY_BIN:-$PWD/target/release/quarry}
work=$(mktemp -d)
pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true; wait "${pids[@]}" 2>/dev/null || true; rm -rf "$work"' EXIT

echo "== inputs ($(date +%T))"
# mainnet: the era file, and the same blocks as RLP from a served import of it.
mkdir -p "$work/mainnet/era"
cp testdata/era1/mainnet-00000-5ec1ffb8.era1 "$work/mainnet/era/"
# reth's import-era reads a folder only with its checksums.txt (one 0x-prefixed sha256 a line).
sha256sum "$work/mainnet/era/"*.era1 | awk '{print "0x"$1}' >"$work/mainnet/era/checksums.txt"
"$quarry" ingest --chain mainnet --datadir "$work/mainnet/db" "$work/mainnet/era" >/dev/null 2>&1
printf 'listen = "127.0.0.1:0"\n[[keys]]\nkey = "bench"\n' >"$work/serve.toml"
"$quarry" serve --datadir "$work/mainnet/db" --config "$work/serve.toml" >"$work/serve.out" 2>/dev/null &
pids+=($!)
for _ in $(seq 100); do grep -q '^listening' "$work/serve.out" 2>/dev/null && break; sleep 0.1; done
addr=$(sed -n 's|^listening on http://\([^/]*\)/.*|\1|p' "$work/serve.out")
python3 - "http://$addr/v3/bench" 8191 "$work/mainnet/chain.rlp" <<'PY'
import json, sys, urllib.request
url, last, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
with open(out, "wb") as f:
    for start in range(1, last + 1, 100):
        batch = [{"jsonrpc": "2.0", "id": n, "method": "debug_getRawBlock", "params": [hex(n)]}
                 for n in range(start, min(start + 100, last + 1))]
        req = urllib.request.Request(url, json.dumps(batch).encode(), {"Content-Type": "application/json"})
        answers = sorted(json.load(urllib.request.urlopen(req)), key=lambda a: a["id"])
        for a in answers:
            f.write(bytes.fromhex(a["result"][2:]))
PY
kill "${pids[@]}"; wait "${pids[@]}" 2>/dev/null || true; pids=()
# pow and pos: generated chains, imported once to export their history files.
for set in pow pos; do
  if [ $set = pow ]; then args=(--forks pow --blocks "$POW_BLOCKS" --txs-per-block "$POW_TXS"); format=era1
  else args=(--forks genesis --blocks "$POS_BLOCKS" --txs-per-block "$POS_TXS"); format=ere; fi
  "$quarry" devchain --out "$work/$set" "${args[@]}" >/dev/null 2>&1
  "$quarry" ingest --genesis "$work/$set/genesis.json" --datadir "$work/$set/db" "$work/$set/chain.rlp" >/dev/null 2>&1
  "$quarry" export-era --datadir "$work/$set/db" --out "$work/$set/era" --format $format >/dev/null
done
for set in mainnet pow pos; do
  echo "$set: $(ls "$work/$set/era" | grep -c -v checksums) history files, $(du -sh --apparent-size "$work/$set/era" | cut -f1); RLP $(du -sh --apparent-size "$work/$set/chain.rlp" | cut -f1)"
done

# measure LABEL DATADIR COMMAND...: runs COMMAND, appending a JSON line of its figures.
measure() {
  local label=$1 datadir=$2; shift 2
  python3 - "$work/results.jsonl" "$label" "$datadir" "$@" <<'PY'
import json, os, subprocess, sys, time
out, label, datadir, cmd = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
def rss_anon(pid):
    """The largest RssAnon of `pid` and its descendants (reth's job runs under a shell)."""
    best, todo = 0, [pid]
    while todo:
        p = todo.pop()
        try:
            for line in open(f"/proc/{p}/status"):
                if line.startswith("RssAnon:"):
                    best = max(best, int(line.split()[1]) * 1024)
            for task in os.listdir(f"/proc/{p}/task"):
                todo += [int(c) for c in open(f"/proc/{p}/task/{task}/children").read().split()]
        except OSError:
            pass
    return best
start = time.monotonic()
proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
peak = 0
while True:
    pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
    if pid:
        break
    peak = max(peak, rss_anon(proc.pid))
    time.sleep(0.02)
wall = time.monotonic() - start
if status != 0:
    sys.exit(f"{label}: {' '.join(cmd)} failed ({status})")
du = int(subprocess.run(["du", "-sk", datadir], capture_output=True, text=True).stdout.split()[0]) * 1024
row = {"label": label, "wall": wall, "cpu": usage.ru_utime + usage.ru_stime, "rss_anon": peak, "disk": du}
open(out, "a").write(json.dumps(row) + "\n")
print(f"  {label:<20} {wall:7.2f}s wall {row['cpu']:7.2f}s CPU {peak/2**20:7.1f} MiB RssAnon {du/2**20:8.1f} MiB disk")
PY
}

# The genesis each set is imported with.
chain_args() {
  case $1 in
    mainnet) echo "--chain mainnet" ;;
    *) echo "--genesis $work/$1/genesis.json" ;;
  esac
}
reth_chain() {
  case $1 in
    mainnet) echo mainnet ;;
    *) echo "$work/$1/genesis.json" ;;
  esac
}
# reth's whole job for history files: import-era (headers and bodies), then its pipeline, run
# to the file's last block without peers, executing them and building its state and indexes.
# Written out as a script, so that one measured process runs both.
cat >"$work/reth_era.sh" <<'SH'
set -euo pipefail
reth=$1 chain=$2 path=$3 datadir=$4 tip=$5 last=$6
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
"$reth" import-era --chain "$chain" --path "$path" --datadir "$datadir" >/dev/null 2>&1
"$reth" node --chain "$chain" --datadir "$datadir" --debug.tip "$tip" --debug.max-block "$last" \
  --debug.terminate --disable-discovery --max-outbound-peers 0 --max-inbound-peers 0 --ipcdisable \
  --port "$(port)" --authrpc.port "$(port)" >/dev/null 2>&1
SH
declare -A tip last
for set in mainnet pow pos; do
  head=$("$quarry" ingest --datadir "$work/$set/db" 2>/dev/null | sed -n 's/^head: block \([0-9]*\) (\(0x[0-9a-f]*\))$/\1 \2/p')
  last[$set]=${head% *}
  tip[$set]=${head#* }
done
reth_chain() { if [ "$1" = mainnet ]; then echo mainnet; else echo "$work/$1/genesis.json"; fi; }

for round in $(seq 1 "$ROUNDS"); do
  echo "== round $round/$ROUNDS ($(date +%T))"
  for set in mainnet pow pos; do
    order=(rlp era)
    [ -n "${RETH:-}" ] && order+=(reth)
    # Alternate: odd rounds in order, even rounds reversed.
    if [ $((round % 2)) = 0 ]; then order=($(printf '%s\n' "${order[@]}" | tac)); fi
    for what in "${order[@]}"; do
      d=$work/run/$set-$what-$round
      case $what in
        rlp) measure "$set quarry rlp" "$d" "$quarry" ingest $(chain_args $set) --datadir "$d" "$work/$set/chain.rlp" ;;
        era) measure "$set quarry era" "$d" "$quarry" ingest $(chain_args $set) --datadir "$d" "$work/$set/era" ;;
        reth) measure "$set reth era" "$d" bash "$work/reth_era.sh" "$RETH" "$(reth_chain $set)" \
          "$work/$set/era" "$d" "${tip[$set]}" "${last[$set]}" ;;
      esac
      rm -rf "$d"
    done
  done
done

python3 - "$work/results.jsonl" "${last[mainnet]}" "${last[pow]}" "${last[pos]}" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
blocks = {"mainnet": int(sys.argv[2]), "pow": int(sys.argv[3]), "pos": int(sys.argv[4])}
by = {}
for r in rows:
    by.setdefault(r["label"], []).append(r)
print("\nmedians over the rounds (min-max of wall time in brackets):")
print(f"{'':<20} {'wall s':>16} {'blocks/s':>9} {'CPU s':>7} {'RssAnon MiB':>11} {'disk MiB':>9}")
med = {}
for label, rs in by.items():
    wall = statistics.median(r["wall"] for r in rs)
    med[label] = wall
    n = blocks[label.split()[0]]
    print(f"{label:<20} {wall:6.2f} [{min(r['wall'] for r in rs):.2f}-{max(r['wall'] for r in rs):.2f}]"
          f" {n / wall:9.0f} {statistics.median(r['cpu'] for r in rs):7.2f}"
          f" {max(r['rss_anon'] for r in rs) / 2**20:11.1f} {statistics.median(r['disk'] for r in rs) / 2**20:9.1f}")
print()
for s in blocks:
    rlp, era, reth = med.get(f"{s} quarry rlp"), med.get(f"{s} quarry era"), med.get(f"{s} reth era")
    if rlp and era:
        print(f"{s}: history files cost {100 * (era / rlp - 1):+.1f}% over RLP (goal: at most +10%)")
    if reth and era:
        print(f"{s}: quarry {reth / era:.2f}x reth's speed (goal: at least 1.3x)")
PY
