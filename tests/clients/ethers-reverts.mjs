// Run by tests/clients.rs: ethers v6, as a contract developer would use it, against
// `quarry serve`. Usage: node ethers-reverts.mjs URL CHAIN_ID ERROR_ADDR PANIC_ADDR CUSTOM_ADDR OK_ADDR
import { Contract, JsonRpcProvider } from "ethers";

const [url, chainId, errorAddr, panicAddr, customAddr, okAddr] = process.argv.slice(2);
const provider = new JsonRpcProvider(url, Number(chainId), { staticNetwork: true });
const abi = [
  "function poke() view returns (bytes)",
  "error InsufficientBalance(uint256 available, uint256 required)",
];

function check(condition, what) {
  if (!condition) throw new Error(`check failed: ${what}`);
  console.log(`ok: ${what}`);
}

async function failure(address) {
  try {
    await new Contract(address, abi, provider).poke();
  } catch (error) {
    return error;
  }
  throw new Error(`call to ${address} did not fail`);
}

const stringError = await failure(errorAddr);
check(stringError.code === "CALL_EXCEPTION", "Error(string) is a CALL_EXCEPTION");
check(stringError.reason === "not enough tokens", `reason is "${stringError.reason}"`);
check(stringError.revert?.name === "Error", "revert decoded as Error");

const panic = await failure(panicAddr);
check(panic.revert?.name === "Panic", "revert decoded as Panic");
check(BigInt(panic.revert?.args[0]) === 0x11n, `panic code ${panic.revert?.args[0]}`);

const custom = await failure(customAddr);
check(custom.revert?.name === "InsufficientBalance", `custom error ${custom.revert?.name}`);
check(custom.revert?.args[0] === 7n && custom.revert?.args[1] === 42n, "custom error arguments");

const answer = await provider.call({ to: okAddr });
check(answer === "0x68656c6c6f", `successful call returned ${answer}`);
