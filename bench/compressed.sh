#!/usr/bin/env bash
# Compressed answers: eth_getBlockReceipts of rpc-compat block 2 (21 MB) and of a full block (a
# devchain block of 550 transactions, 21 Mgas of its 30 Mgas limit, above EIP-1559's target of
# half), and the full block itself (eth_getBlockByNumber with its transactions, that block and
# rpc-compat block 2), each asked without Accept-Encoding,
# with gzip and with zstd. Each case (one method, one encoding) runs on fresh `quarry serve`s of
# the same datadir, so that their peak RSS (VmHWM) is their own; the encodings alternate within
# each of ROUNDS rounds. Per case: bytes on the wire (the body as sent), server CPU per request
# (utime + stime of the server process over the case's N requests), p50 wall time over loopback
# (one connection, the body read whole), and peak RSS; then the medians over the rounds.
#
# Peak RSS: quarry's allocator is mimalloc v3 (libmimalloc-sys 0.1.49), not glibc malloc, so
# MALLOC_ARENA_MAX changes nothing. mimalloc v3 returns freed pages to the OS only after its
# purge delay, 1 s by default (not v2's 10 ms that src/main.rs's purger comment assumes), so with
# requests back to back each request's ~100 MB of JSON building stays resident while the next
# builds its answer, and how much of it depends on which threads ran when: the peak after N
# requests swung between about 170 and 260 MB within one case, more than the encodings differ.
# So the peak RSS is measured on a second fresh server per case, with MIMALLOC_PURGE_DELAY=0
# (freed pages go back at once) for every case alike: after the first request (what one answer
# needs) and after all N. Bytes, CPU and p50 come from a server with the build's own settings,
# since a purge delay of 0 costs this answer about 10-20 ms (pages faulted in again); its peak
# RSS is printed too, as "default settings".
#
#   bench/compressed.sh
#   ROUNDS=3 N=20 bench/compressed.sh
#   CASES="0 1" ENCODINGS="identity gzip" bench/compressed.sh    # a subset (cases as listed in
#                                                                  # ask.py's `cases`)
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-3}
N=${N:-20}
CASES=${CASES:-0 1 2 3}
ENCODINGS=${ENCODINGS:-identity gzip zstd}
FIXTURES=${FIXTURES:-../shared/fixtures/rpc-compat}
source bench/lib.sh
"$quarry" ingest --datadir "$work/data" --genesis "$FIXTURES/genesis.json" \
  "$FIXTURES/chain.rlp" >/dev/null 2>&1
"$quarry" devchain --out "$work/full" --blocks 3 --txs-per-block 550 --seed 3 >/dev/null 2>&1
"$quarry" ingest --datadir "$work/full-data" --genesis "$work/full/genesis.json" \
  "$work/full/chain.rlp" >/dev/null 2>&1
ticks=$(getconf CLK_TCK)
# ask ADDR ENCODING PID CASE: N requests of CASE (an index into `cases`) to the server PID
# at ADDR; prints the label, bytes, CPU and p50, and the peak RSS after the first and last one.
cat >"$work/ask.py" <<'PY'
import http.client, json, sys, time
addr, encoding, n, pid, ticks, case = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], int(sys.argv[5]), int(sys.argv[6])
def cpu():
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / ticks
def peak_rss_mb():
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
cases = [("eth_getBlockReceipts block 2", "eth_getBlockReceipts", ["0x2"]),
         ("eth_getBlockByNumber block 2, full", "eth_getBlockByNumber", ["0x2", True]),
         ("eth_getBlockReceipts, 550 txs", "eth_getBlockReceipts", ["0x3"]),
         ("eth_getBlockByNumber, 550 txs, full", "eth_getBlockByNumber", ["0x3", True])]
label, method, params = cases[case]
conn = http.client.HTTPConnection(addr)
headers = {"Content-Type": "application/json"}
if encoding != "identity":
    headers["Accept-Encoding"] = encoding
body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
took, size, first_peak = [], 0, None
before = cpu()
for _ in range(n):
    start = time.perf_counter()
    conn.request("POST", "/v3/bench", body, headers)
    response = conn.getresponse()
    data = response.read()  # http.client does not decompress: the bytes as sent
    took.append(time.perf_counter() - start)
    got = response.getheader("Content-Encoding") or "identity"
    if got != encoding:
        sys.exit(f"{label}: asked {encoding}, got {got}")
    size = len(data)
    if first_peak is None:
        first_peak = peak_rss_mb()
spent = cpu() - before
took.sort()
print(f"{label}\t{size}\t{1000 * spent / n}\t{1000 * took[n // 2]}\t{first_peak}\t{peak_rss_mb()}")
PY
ask() { python3 "$work/ask.py" "$1" "$2" "$N" "$3" "$ticks" "$4"; }
echo "$N requests per case, $ROUNDS rounds; peak RSS with MIMALLOC_PURGE_DELAY=0"
for round in $(seq "$ROUNDS"); do
  for encoding in $ENCODINGS; do
    for case in $CASES; do
      name="c$round$encoding$case"
      data=$work/data
      [ "$case" -lt 2 ] || data=$work/full-data
      serve "$name" "$data" $'[[keys]]\nkey = "bench"'
      timed=$(ask "$(address "$name")" "$encoding" "${pids[-1]}" "$case")
      kill "${pids[-1]}" && { wait "${pids[-1]}" || true; }
      MIMALLOC_PURGE_DELAY=0 serve "${name}m" "$data" $'[[keys]]\nkey = "bench"'
      memory=$(ask "$(address "${name}m")" "$encoding" "${pids[-1]}" "$case")
      kill "${pids[-1]}" && { wait "${pids[-1]}" || true; }
      # round, label, encoding, bytes, CPU, p50, peak RSS with the defaults, first and last peak
      # RSS with a purge delay of 0.
      line=$(printf '%s\t%s\t%s\t%s\t%s\t%s' "$round" "$(cut -f1 <<<"$timed")" "$encoding" \
        "$(cut -f2-4 <<<"$timed")" "$(cut -f6 <<<"$timed")" "$(cut -f5-6 <<<"$memory")")
      echo "$line" >>"$work/results"
      awk -F'\t' '{printf "round %s %-36s %-8s %10d bytes  cpu %7.2f ms/request  p50 %7.2f ms  " \
        "peak RSS %6.1f MB (first request %6.1f; default settings %6.1f)\n", \
        $1, $2, $3, $4, $5, $6, $9, $8, $7}' <<<"$line"
    done
  done
done
python3 - "$work/results" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    _, label, encoding, *fields = line.rstrip("\n").split("\t")
    rows.setdefault(label, {}).setdefault(encoding, []).append([float(f) for f in fields])
print("medians over the rounds (peak RSS: lowest-highest)")
for label, encodings in rows.items():
    for encoding, r in encodings.items():
        med = lambda i: statistics.median(x[i] for x in r)
        span = lambda i: f"{min(x[i] for x in r):.1f}-{max(x[i] for x in r):.1f}"
        print(f"{label:36} {encoding:8} {med(0):>10.0f} bytes  cpu {med(1):7.2f} ms/request  "
              f"p50 {med(2):7.2f} ms  peak RSS {med(5):6.1f} MB ({span(5)}), first request "
              f"{med(4):6.1f} ({span(4)}); default settings {med(3):6.1f} ({span(3)})")
PY
