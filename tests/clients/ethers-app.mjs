// Run by tests/clients.rs: ethers v6, unmodified, as an application uses it against
// `quarry serve`, over HTTP and WebSocket. Usage: node ethers-app.mjs EXPECTED_JSON
// (what the chain holds, read by the test with plain JSON-RPC).
import { Contract, JsonRpcProvider, WebSocketProvider } from "ethers";

const expected = JSON.parse(process.argv[2]);

function check(condition, what) {
  if (!condition) throw new Error(`check failed: ${what}`);
  console.log(`ok: ${what}`);
}

async function exercise(transport, provider) {
  const network = await provider.getNetwork();
  check(network.chainId === BigInt(expected.chainId), `${transport}: chain id ${network.chainId}`);
  const head = await provider.getBlockNumber();
  check(head === expected.head, `${transport}: head ${head}`);

  const block = await provider.getBlock(expected.block.number);
  check(block.hash === expected.block.hash, `${transport}: block ${block.number} hash`);
  check(
    block.transactions.length === expected.block.transactions.length &&
      block.transactions.every((hash, i) => hash === expected.block.transactions[i]),
    `${transport}: block with ${block.transactions.length} transaction hashes`,
  );
  const full = await provider.getBlock(expected.block.number, true);
  check(
    full.prefetchedTransactions.length === expected.block.transactions.length &&
      full.prefetchedTransactions[0].from === expected.tx.from,
    `${transport}: block with full transactions, first from ${full.prefetchedTransactions[0].from}`,
  );

  const receipt = await provider.getTransactionReceipt(expected.tx.hash);
  check(
    receipt.status === expected.tx.status &&
      receipt.gasUsed === BigInt(expected.tx.gasUsed) &&
      receipt.logs.length === expected.tx.logs &&
      receipt.blockNumber === expected.block.number,
    `${transport}: receipt with status ${receipt.status} and ${receipt.logs.length} logs`,
  );
  const tx = await provider.getTransaction(expected.tx.hash);
  check(tx.hash === expected.tx.hash && tx.from === expected.tx.from, `${transport}: transaction by hash`);

  const token = new Contract(
    expected.token,
    ["event Transfer(address indexed from, address indexed to, uint256 value)"],
    provider,
  );
  const transfers = await token.queryFilter("Transfer", 0, head);
  check(
    transfers.length === expected.transfers.count &&
      transfers[0].args.value === BigInt(expected.transfers.firstValue) &&
      transfers[0].transactionHash === expected.transfers.firstTransaction,
    `${transport}: ${transfers.length} Transfer events, decoded`,
  );

  const balance = await provider.getBalance(expected.account, head);
  check(balance === BigInt(expected.balance), `${transport}: balance ${balance}`);
  const slot = await provider.getStorage(expected.store, 0);
  check(slot === expected.slot0, `${transport}: storage slot 0 ${slot}`);

  const reverter = new Contract(expected.reverter, ["function failWithReason() pure"], provider);
  try {
    await reverter.failWithReason();
    throw new Error("failWithReason() did not revert");
  } catch (error) {
    check(
      error.code === "CALL_EXCEPTION" && error.reason === expected.revertReason,
      `${transport}: revert reason "${error.reason}"`,
    );
  }
  await provider.destroy();
}

await exercise("http", new JsonRpcProvider(expected.http));
await exercise("ws", new WebSocketProvider(expected.ws));
