"""Run by tests/clients.rs: web3.py, unmodified, subscribed over WebSocket to new heads and a
token's Transfer logs. Usage: python web3_subscribe.py EXPECTED_JSON. Prints "ready" once
subscribed; the blocks are committed after that by another process."""

import asyncio
import json
import sys

from web3 import AsyncWeb3

expected = json.loads(sys.argv[1])


def check(condition, what):
    if not condition:
        raise SystemExit(f"check failed: {what}")
    print(f"ok: {what}", flush=True)


async def main():
    async with AsyncWeb3(AsyncWeb3.WebSocketProvider(expected["ws"])) as w3:
        heads = await w3.eth.subscribe("newHeads")
        logs = await w3.eth.subscribe(
            "logs",
            {
                "address": w3.to_checksum_address(expected["token"]),
                "topics": [expected["transferTopic"]],
            },
        )
        print("ready", flush=True)
        blocks, transfers = [], []

        async def collect():
            async for message in w3.socket.process_subscriptions():
                result = message["result"]
                if message["subscription"] == heads:
                    blocks.append(result["number"])
                    check(result["hash"].to_0x_hex() == expected["hashes"][str(result["number"])],
                          f"newHeads: block {result['number']} hash")
                elif message["subscription"] == logs:
                    check(result["removed"] is False, "a new log is not removed")
                    transfers.append(
                        {
                            "block": result["blockNumber"],
                            "tx": result["transactionHash"].to_0x_hex(),
                            "index": result["logIndex"],
                        }
                    )
                if len(blocks) >= len(expected["blocks"]) and len(transfers) >= len(
                    expected["transfers"]
                ):
                    return

        await asyncio.wait_for(collect(), 60)
        check(blocks == expected["blocks"], f"{len(blocks)} new heads, each once, in order")
        check(transfers == expected["transfers"], f"{len(transfers)} Transfer logs, in order")


asyncio.run(main())
