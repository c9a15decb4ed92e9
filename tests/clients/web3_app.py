"""Run by tests/clients.rs: web3.py, unmodified, as an application uses it against
`quarry serve`, over HTTP and WebSocket. Usage: python web3_app.py EXPECTED_JSON (what the
chain holds, read by the test with plain JSON-RPC)."""

import asyncio
import json
import sys

from web3 import AsyncWeb3, Web3
from web3.exceptions import ContractLogicError

expected = json.loads(sys.argv[1])

TRANSFER_ABI = [
    {
        "type": "event",
        "name": "Transfer",
        "anonymous": False,
        "inputs": [
            {"name": "from", "type": "address", "indexed": True},
            {"name": "to", "type": "address", "indexed": True},
            {"name": "value", "type": "uint256", "indexed": False},
        ],
    }
]
REVERTER_ABI = [
    {
        "type": "function",
        "name": "failWithReason",
        "inputs": [],
        "outputs": [],
        "stateMutability": "pure",
    }
]


def check(condition, what):
    if not condition:
        raise SystemExit(f"check failed: {what}")
    print(f"ok: {what}", flush=True)


def checksum(address):
    return Web3.to_checksum_address(address)


async def exercise(transport, w3):
    chain_id = await w3.eth.chain_id
    check(chain_id == expected["chainId"], f"{transport}: chain id {chain_id}")
    head = await w3.eth.block_number
    check(head == expected["head"], f"{transport}: head {head}")

    number = expected["block"]["number"]
    block = await w3.eth.get_block(number)
    check(block["hash"].to_0x_hex() == expected["block"]["hash"], f"{transport}: block {number} hash")
    hashes = [h.to_0x_hex() for h in block["transactions"]]
    check(hashes == expected["block"]["transactions"], f"{transport}: block with {len(hashes)} transaction hashes")
    full = await w3.eth.get_block(number, full_transactions=True)
    first = full["transactions"][0]
    check(
        len(full["transactions"]) == len(hashes) and first["from"] == checksum(expected["tx"]["from"]),
        f"{transport}: block with full transactions, first from {first['from']}",
    )

    receipt = await w3.eth.get_transaction_receipt(expected["tx"]["hash"])
    check(
        receipt["status"] == expected["tx"]["status"]
        and receipt["gasUsed"] == int(expected["tx"]["gasUsed"], 16)
        and len(receipt["logs"]) == expected["tx"]["logs"]
        and receipt["blockNumber"] == number,
        f"{transport}: receipt with status {receipt['status']} and {len(receipt['logs'])} logs",
    )
    tx = await w3.eth.get_transaction(expected["tx"]["hash"])
    check(tx["from"] == checksum(expected["tx"]["from"]), f"{transport}: transaction by hash")

    token = w3.eth.contract(address=checksum(expected["token"]), abi=TRANSFER_ABI)
    transfers = await token.events.Transfer.get_logs(from_block=0, to_block=head)
    check(
        len(transfers) == expected["transfers"]["count"]
        and transfers[0]["args"]["value"] == int(expected["transfers"]["firstValue"])
        and transfers[0]["transactionHash"].to_0x_hex() == expected["transfers"]["firstTransaction"],
        f"{transport}: {len(transfers)} Transfer events, decoded",
    )

    balance = await w3.eth.get_balance(checksum(expected["account"]), head)
    check(balance == int(expected["balance"]), f"{transport}: balance {balance}")
    slot = await w3.eth.get_storage_at(checksum(expected["store"]), 0)
    check(slot.to_0x_hex() == expected["slot0"], f"{transport}: storage slot 0 {slot.to_0x_hex()}")

    reverter = w3.eth.contract(address=checksum(expected["reverter"]), abi=REVERTER_ABI)
    try:
        await reverter.functions.failWithReason().call()
        raise SystemExit("failWithReason() did not revert")
    except ContractLogicError as error:
        check(
            error.message == f"execution reverted: {expected['revertReason']}",
            f"{transport}: revert reason {error.message!r}",
        )


async def main():
    await exercise("http", AsyncWeb3(AsyncWeb3.AsyncHTTPProvider(expected["http"])))
    async with AsyncWeb3(AsyncWeb3.WebSocketProvider(expected["ws"])) as w3:
        await exercise("ws", w3)


asyncio.run(main())
