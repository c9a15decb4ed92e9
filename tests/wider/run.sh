#!/usr/bin/env bash
# Runs quarry against the public fixture sets that ../shared/fixtures samples, from local
# checkouts of their repositories (not part of .ci/run, which reads only ../shared; the
# README's blocktest paragraph lists the last results):
#
#   tests/wider/run.sh blocktest DIR...     # folders (or files) of BlockchainTests, e.g.
#                                           # eest-fixtures/blockchain_tests,
#                                           # ethereum/tests/BlockchainTests,
#                                           # legacytests/Cancun/BlockchainTests
#   tests/wider/run.sh rpc-compat DIR       # ethereum/execution-apis' tests/ folder
#
# Files that are Git LFS pointers (large fixtures a checkout did not fetch) are skipped with a
# count. Exits non-zero when a test fails.
set -euo pipefail
cd "$(dirname "$0")/../.."
what=${1:-}
shift || true
case $what in
  blocktest)
    [ $# -gt 0 ] || { echo "usage: $0 blocktest DIR..." >&2; exit 2; }
    cargo build --release --quiet
    list=$(mktemp)
    out=$(mktemp)
    trap 'rm -f "$list" "$out"' EXIT
    find "$@" -name '*.json' -type f -print0 | xargs -0 grep -L -m1 '^version https://git-lfs' > "$list" || true
    lfs=$(find "$@" -name '*.json' -type f -print0 | xargs -0 grep -l -m1 '^version https://git-lfs' | wc -l || true)
    echo "$(wc -l < "$list") files ($lfs LFS pointers skipped)"
    # xargs may split the list into several runs, each ending with its own "N passed" line;
    # it exits non-zero if any run had a failure.
    status=0
    tr '\n' '\0' < "$list" | xargs -0 ./target/release/quarry blocktest > "$out" 2>&1 || status=$?
    grep -v '^PASS ' "$out" || true
    exit "$status"
    ;;
  rpc-compat)
    [ $# -eq 1 ] || { echo "usage: $0 rpc-compat EXECUTION_APIS_TESTS_DIR" >&2; exit 2; }
    src=$(cd "$1" && pwd)
    layout=$(mktemp -d)
    trap 'rm -rf "$layout"' EXIT
    # The layout of ../shared/fixtures/rpc-compat: the chain at the top, methods under tests/.
    for f in chain.rlp genesis.json headfcu.json forkenv.json; do ln -s "$src/$f" "$layout/$f"; done
    mkdir "$layout/tests"
    for d in "$src"/*/; do ln -s "$d" "$layout/tests/$(basename "$d")"; done
    QUARRY_RPC_FIXTURES=$layout cargo test --release --test serve rpc_compat_fixtures
    ;;
  *)
    echo "usage: $0 blocktest DIR... | rpc-compat DIR" >&2
    exit 2
    ;;
esac
