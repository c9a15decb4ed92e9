// Run by tests/transactions.rs: ethers v6 and viem, unmodified, send a transfer through
// `quarry serve` with their own wallet APIs; quarry forwards it to its transactions upstream
// (anvil). Usage: node wallets-send.mjs QUARRY_URL PRIVATE_KEY CHAIN_ID
// Prints one JSON line per library: {"library", "hash"}.
import { JsonRpcProvider, Wallet } from "ethers";
import { createWalletClient, defineChain, http } from "viem";
import { privateKeyToAccount } from "viem/accounts";

const [url, key, chainId] = process.argv.slice(2);
const to = "0x4242424242424242424242424242424242424242";

const provider = new JsonRpcProvider(url, Number(chainId), { staticNetwork: true });
const wallet = new Wallet(key, provider);
const sent = await wallet.sendTransaction({ to, value: 1n });
console.log(JSON.stringify({ library: "ethers", hash: sent.hash }));

const chain = defineChain({
  id: Number(chainId),
  name: "quarry",
  nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
  rpcUrls: { default: { http: [url] } },
});
const client = createWalletClient({ account: privateKeyToAccount(key), chain, transport: http(url) });
const hash = await client.sendTransaction({ to, value: 2n });
console.log(JSON.stringify({ library: "viem", hash }));
