// eth_simulateV1 through ethers v6, unmodified: the library has no API of its own for the
// method, so its provider sends it as plain JSON-RPC. Two blocks: a value transfer with
// traceTransfers, then a call reading the first block's generated hash.
import { JsonRpcProvider } from "ethers";

const [url] = process.argv.slice(2);
const provider = new JsonRpcProvider(url, undefined, { staticNetwork: true });
const from = "0x00000000000000000000000000000000000000c0";
const reader = "0x00000000000000000000000000000000000000bb";
const blocks = await provider.send("eth_simulateV1", [
  {
    blockStateCalls: [
      {
        stateOverrides: { [from]: { balance: "0xde0b6b3a7640000" } },
        calls: [{ from, to: "0x00000000000000000000000000000000000000aa", value: "0x3e8" }],
      },
      {
        // BLOCKHASH(NUMBER - 1), returned as a word.
        stateOverrides: { [reader]: { code: "0x600143034060005260206000f3" } },
        calls: [{ from, to: reader }],
      },
    ],
    traceTransfers: true,
  },
  "latest",
]);
const fail = (why) => {
  console.log(`fail: ${why}: ${JSON.stringify(blocks)}`);
  process.exit(1);
};
if (blocks.length !== 2) fail("two blocks expected");
if (blocks[1].calls[0].returnData !== blocks[0].hash) fail("BLOCKHASH does not read the first block");
if (blocks[0].calls[0].logs.length !== 1) fail("one transfer log expected");
if (BigInt(blocks[0].calls[0].logs[0].data) !== 1000n) fail("the transfer's value");
console.log(`ok: simulated ${blocks.length} blocks`);
