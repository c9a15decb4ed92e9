#!/usr/bin/env bash
# eth_getProof of two datadirs of the same chain (e.g. the last datadirs `bench/ab.sh KEEP=DIR`
# leaves of two builds), each served in turn by its own build, ROUNDS times (A, B, A, B, ...):
# bench/proofs.py's p50 and p99 at `latest`, 1,000 to 1,031 blocks back (the fine node
# history) and 10,000 to 11,008 back (the thinned history). Alternating keeps this machine's
# drift out of the comparison; each round starts its server afresh.
#
#   bench/proofs_ab.sh DATADIR_A DATADIR_B        N=2000 N_BACK=320 N_FAR=64 ROUNDS=2
#   NO_BUILD=1 QUARRY_BIN=path QUARRY_BIN_B=path bench/proofs_ab.sh A B   # B by another build
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -eq 2 ] || { echo "usage: bench/proofs_ab.sh DATADIR_A DATADIR_B" >&2; exit 2; }
source bench/lib.sh
quarry_a=$quarry
quarry_b=${QUARRY_BIN_B:-$quarry}
for round in $(seq 1 "${ROUNDS:-2}"); do
  for side in A B; do
    data=$1
    quarry=$quarry_a
    if [ "$side" = B ]; then
      data=$2
      quarry=$quarry_b
    fi
    name=$side$round
    serve "$name" "$data" $'proof_window = 20000\n[[keys]]\nkey = "bench"'
    addr=$(address "$name")
    [ -n "$addr" ] || { echo "$side: the server did not start" >&2; exit 1; }
    echo "== round $round $side ($data)"
    python3 bench/proofs.py "$addr" "${N:-2000}" "${N_BACK:-320}" "${N_FAR:-64}"
    kill "${pids[-1]}"
    wait "${pids[-1]}" 2>/dev/null || true
  done
done
