#!/usr/bin/env bash
# Compiles the dev chain's contracts with the solc npm package into build/: creation bytecode
# (NAME.bin, hex) and ABI (NAME.abi). The EVM target is London because the dev chain deploys
# them before the merge (no PUSH0, no MCOPY). Building and testing quarry never need this; run
# it only after editing a contract, then regenerate testdata/devnet.
set -euo pipefail
cd "$(dirname "$0")"
SOLC_VERSION=0.8.30
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
npm install --silent --prefix "$work" "solc@$SOLC_VERSION" >/dev/null
NODE_PATH="$work/node_modules" node - <<'JS'
const fs = require("fs");
const solc = require("solc");
const sources = {};
for (const file of fs.readdirSync(".").filter((f) => f.endsWith(".sol")).sort()) {
  sources[file] = { content: fs.readFileSync(file, "utf8") };
}
const input = {
  language: "Solidity",
  sources,
  settings: {
    evmVersion: "london",
    optimizer: { enabled: true, runs: 200 },
    outputSelection: { "*": { "*": ["abi", "evm.bytecode.object"] } },
  },
};
const output = JSON.parse(solc.compile(JSON.stringify(input)));
const errors = (output.errors || []).filter((e) => e.severity === "error");
if (errors.length) {
  for (const e of errors) console.error(e.formattedMessage);
  process.exit(1);
}
fs.rmSync("build", { recursive: true, force: true });
fs.mkdirSync("build");
for (const file of Object.keys(output.contracts)) {
  for (const [name, contract] of Object.entries(output.contracts[file])) {
    fs.writeFileSync(`build/${name}.bin`, contract.evm.bytecode.object + "\n");
    fs.writeFileSync(`build/${name}.abi`, JSON.stringify(contract.abi, null, 1) + "\n");
  }
}
fs.writeFileSync("build/SOLC_VERSION", solc.version() + " evmVersion=london optimizer runs=200\n");
JS
