#!/usr/bin/env bash
# Keccak-f permutations of a state root's inputs: one after another (keccak-asm) against eight
# at once (quarry_storage::keccak::keccak256_many, AVX-512 where the CPU has it).
#
#   bash bench/keccak.sh
set -euo pipefail
cd "$(dirname "$0")/.."
cargo run --release -q -p quarry-storage --example keccak_bench
