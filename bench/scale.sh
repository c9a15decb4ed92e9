#!/usr/bin/env bash
# Scale benchmark: generates a BLOCKS x TXS chain with `quarry devchain` (reporting generation
# speed), then ingests it with bench/ingest.sh (blocks/s, Mgas/s and the share of each stage).
#
#   bench/scale.sh                      BLOCKS=20000 TXS=100 SEED=1 RUNS=1
#   REUSE=1 bench/scale.sh              ingest an already generated chain again
#
# The chain stays in target/bench/scale-BLOCKSxTXS for other benchmarks (eth_getLogs).
set -euo pipefail
cd "$(dirname "$0")/.."
BLOCKS=${BLOCKS:-20000}
TXS=${TXS:-100}
SEED=${SEED:-1}
out=target/bench/scale-${BLOCKS}x${TXS}
cargo build --release --quiet
if [ "${REUSE:-0}" != 1 ] || [ ! -f "$out/chain.rlp" ]; then
  echo "== generating $BLOCKS blocks x $TXS transactions (seed $SEED)"
  ./target/release/quarry devchain --out "$out" --blocks "$BLOCKS" --txs-per-block "$TXS" --seed "$SEED" \
    2>/dev/null | grep -E '^(generated|stages)'
fi
ls -l "$out/chain.rlp" | awk '{printf "chain file: %.1f MB\n", $5/1e6}'
echo "== ingesting"
RUNS=${RUNS:-1} bench/ingest.sh "$out/genesis.json" "$out/chain.rlp"
