// Run by tests/clients.rs: ethers v6, unmodified, as an application listens for new blocks and
// a token's Transfer events: over WebSocket (eth_subscribe) or HTTP (JsonRpcProvider polls
// eth_blockNumber and the filter it installs). Usage: node ethers-subscribe.mjs ws|http
// EXPECTED_JSON. Prints "ready" once listening; the blocks are committed after that by another
// process.
import { Contract, JsonRpcProvider, WebSocketProvider } from "ethers";

const [transport, expectedJson] = process.argv.slice(2);
const expected = JSON.parse(expectedJson);

function check(condition, what) {
  if (!condition) throw new Error(`check failed: ${what}`);
  console.log(`ok: ${what}`);
}

const provider =
  transport === "ws"
    ? new WebSocketProvider(expected.ws)
    : new JsonRpcProvider(expected.http, undefined, { pollingInterval: 100 });
const blocks = [];
const transfers = [];
const token = new Contract(
  expected.token,
  ["event Transfer(address indexed from, address indexed to, uint256 value)"],
  provider,
);
await provider.on("block", (number) => blocks.push(number));
await token.on("Transfer", (from, to, value, event) => {
  // In the key order of the expected JSON (sorted).
  transfers.push({ block: event.log.blockNumber, index: event.log.index, tx: event.log.transactionHash });
});
// Let the HTTP poller take the current head as its starting point.
await new Promise((resolve) => setTimeout(resolve, 1000));
console.log("ready");

const deadline = Date.now() + 60_000;
while (
  (blocks.length < expected.blocks.length || transfers.length < expected.transfers.length) &&
  Date.now() < deadline
) {
  await new Promise((resolve) => setTimeout(resolve, 50));
}
// Anything more would be a repeat.
await new Promise((resolve) => setTimeout(resolve, 500));
check(
  JSON.stringify(blocks) === JSON.stringify(expected.blocks),
  `${transport}: "block" events for blocks ${blocks[0]} to ${blocks[blocks.length - 1]}, each once, in order`,
);
check(
  JSON.stringify(transfers) === JSON.stringify(expected.transfers),
  `${transport}: ${transfers.length} Transfer events of blocks committed after subscribing` + (JSON.stringify(transfers) === JSON.stringify(expected.transfers) ? "" : ` got ${JSON.stringify(transfers.slice(0, 3))} want ${JSON.stringify(expected.transfers.slice(0, 3))}`),
);
await provider.destroy();
