# Sourced by the serve benchmarks: builds the release binary, makes a scratch directory $work
# that is removed on exit (with every server started here stopped), and starts servers.
# QUARRY_BIN=path serves with another build (an older one, for a before/after in one run).
# NO_BUILD=1 skips the build (both builds of a before/after given as binaries, while the tree
# changes).
[ -n "${NO_BUILD:-}" ] || cargo build --release --quiet
quarry=${QUARRY_BIN:-./target/release/quarry}
work=$(mktemp -d)
pids=()
# Servers are waited for before their directory goes: reth writes its datadir as it stops.
trap 'kill "${pids[@]}" 2>/dev/null || true; wait "${pids[@]}" 2>/dev/null || true; rm -rf "$work"' EXIT

# serve NAME DATADIR CONFIG: `quarry serve` of DATADIR on a free port, with the TOML lines
# CONFIG after `listen`. Runs in this shell so that the trap stops it.
serve() {
  printf 'listen = "127.0.0.1:0"\n%s\n' "$3" >"$work/$1.toml"
  "$quarry" serve --datadir "$2" --config "$work/$1.toml" >"$work/$1.out" 2>/dev/null &
  pids+=($!)
}

# address NAME: waits until server NAME listens and prints its host:port.
address() {
  for _ in $(seq 100); do grep -q '^listening' "$work/$1.out" 2>/dev/null && break; sleep 0.1; done
  sed -n 's|^listening on http://\([^/]*\)/.*|\1|p' "$work/$1.out"
}

# serve_reth GENESIS DATADIR APIS [FLAGS...]: `reth node` ($RETH) of an imported DATADIR, without
# peers, on a free port with the http APIS (and any further reth FLAGS); waits until it answers
# and sets reth_url. Call it in this shell (not in `$(...)`), so that the trap stops it.
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
serve_reth() {
  local port
  port=$(free_port)
  "$RETH" node --chain "$1" --datadir "$2" --http --http.addr 127.0.0.1 --http.port "$port" \
    --http.api "$3" --disable-discovery --max-outbound-peers 0 --max-inbound-peers 0 \
    --port "$(free_port)" --authrpc.port "$(free_port)" --ipcdisable \
    --log.stdout.filter warn "${@:4}" >"$work/reth.out" 2>&1 &
  pids+=($!)
  for _ in $(seq 600); do
    curl -s -o /dev/null "http://127.0.0.1:$port" -X POST -H 'Content-Type: application/json' \
      -d '{"jsonrpc":"2.0","id":1,"method":"web3_clientVersion","params":[]}' && break
    sleep 0.1
  done
  reth_url="http://127.0.0.1:$port"
}
