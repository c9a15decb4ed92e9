#!/usr/bin/env bash
# eth_getLogs' storage reads alone: storage/examples/log_reads.rs times `StorageTx::logs` in
# process for bench/serve.sh's two eth_getLogs rows (and an address without logs) on the
# rpc-compat chain, without the server, JSON or network around it. With BEFORE (an older quarry
# binary, which ingests its own datadir) and BEFORE_COMMIT (the commit it was built from, where
# the example is built: it is copied into a worktree of that commit), both builds run
# alternating, ROUNDS times, and the table shows the median of each build's microseconds per
# query. It separates what the storage layout costs a query from what the rest of the request
# path costs, which bench/serve.sh measures together.
#
#   bench/log_reads.sh
#   BEFORE=/path/to/older/quarry BEFORE_COMMIT=57bf797 ROUNDS=5 bench/log_reads.sh
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-5}
BEFORE=${BEFORE:-}
BEFORE_COMMIT=${BEFORE_COMMIT:-}
FIXTURES=${FIXTURES:-../shared/fixtures/rpc-compat}
if [[ -n $BEFORE && -z $BEFORE_COMMIT ]] || [[ -z $BEFORE && -n $BEFORE_COMMIT ]]; then
  echo "BEFORE (a quarry binary) and BEFORE_COMMIT (its commit) go together" >&2
  exit 2
fi
source bench/lib.sh
cargo build --release --quiet -p quarry-storage --example log_reads
cp target/release/examples/log_reads "$work/log_reads-now"
"$quarry" ingest --datadir "$work/now" --genesis "$FIXTURES/genesis.json" \
  "$FIXTURES/chain.rlp" >/dev/null 2>&1
builds=(now)
if [[ -n $BEFORE ]]; then
  tree="$work/before-tree"
  git worktree add --detach --quiet "$tree" "$BEFORE_COMMIT"
  trap 'git worktree remove --force "$tree" 2>/dev/null || true; rm -rf "$work"' EXIT
  cp storage/examples/log_reads.rs "$tree/storage/examples/"
  # The workspace's target directory: the dependencies both trees share are built once.
  (cd "$tree" && CARGO_TARGET_DIR="$OLDPWD/target" cargo build --release --quiet \
    -p quarry-storage --example log_reads)
  cp target/release/examples/log_reads "$work/log_reads-before"
  "$BEFORE" ingest --datadir "$work/before" --genesis "$FIXTURES/genesis.json" \
    "$FIXTURES/chain.rlp" >/dev/null 2>&1
  builds+=(before)
fi
for round in $(seq "$ROUNDS"); do
  for build in "${builds[@]}"; do
    "$work/log_reads-$build" "$work/$build" | sed "s/^/$build|/" >>"$work/times"
  done
done
python3 - "$work/times" "${builds[@]}" <<'PY'
import collections, statistics, sys
times = collections.defaultdict(list)
found = {}
for line in open(sys.argv[1]):
    build, name, logs, micros = line.strip().split("|")
    times[(build, name)].append(float(micros))
    found[(build, name)] = logs
builds = sys.argv[2:]
names = list(dict.fromkeys(name for _, name in times))
print("| query | logs | " + " | ".join(f"{b} µs" for b in builds) + (" | now / before |" if len(builds) > 1 else " |"))
print("|---" * (2 + len(builds) + (len(builds) > 1)) + "|")
for name in names:
    med = [statistics.median(times[(b, name)]) for b in builds]
    logs = "/".join(sorted(set(found[(b, name)] for b in builds)))
    row = f"| {name} | {logs} | " + " | ".join(f"{m:.2f}" for m in med)
    if len(builds) > 1:
        row += f" | {med[0] / med[1]:.2f}x"
    print(row + " |")
PY
