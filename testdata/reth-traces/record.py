"""Records reth's answers to the trace_* methods on a chain, as facts a quarry test compares
with (tests/trace_api.rs reads the file this writes), and prints how quarry's answers differ.

    python3 testdata/reth-traces/record.py RETH_URL QUARRY_URL OUT.json.gz [BLOCKS]
    RECORDED_WITH="reth 2.5.1 (6dec1b9)" python3 testdata/reth-traces/record.py ...
    FILTER_ADDRESSES=0 python3 testdata/reth-traces/record.py ... 1,5000,19999   (a sample)

RETH_URL is `reth node` serving its `reth import` of the chain, QUARRY_URL quarry serving its
ingest of the same chain (both with the trace API). For every block (or BLOCKS, a comma list of
numbers), it asks both servers trace_block, trace_replayBlockTransactions with
["trace", "stateDiff"] and with ["vmTrace"], and for each transaction trace_transaction,
trace_get of its first trace and trace_replayTransaction with ["trace", "stateDiff"]; on the
state before the block, its plain transactions as trace_callMany, and the first as trace_call
and trace_rawTransaction; and, for
every address in a trace of the first blocks, trace_filter over the whole chain. It writes
reth's answers (gzip JSON: {recorded_with, genesis, head, calls: [{method, params, result or
error}]}, the chain named by its genesis and head block hashes), and prints the calls whose
answers differ, with the first differing path of each.
"""
import gzip
import json
import os
import sys
import urllib.request


def rpc(url, method, params):
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).encode()
    request = urllib.request.Request(url, body, {"Content-Type": "application/json"})
    answer = json.load(urllib.request.urlopen(request, timeout=600))
    return {k: answer[k] for k in ("result", "error") if k in answer}


def first_difference(a, b, path="$"):
    """The first path where `a` and `b` differ, or None."""
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b)):
            if key not in a or key not in b:
                return f"{path}.{key} ({'reth only' if key in a else 'quarry only'})"
            found = first_difference(a[key], b[key], f"{path}.{key}")
            if found:
                return found
        return None
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return f"{path} (length {len(a)} against {len(b)})"
        for i, (x, y) in enumerate(zip(a, b)):
            found = first_difference(x, y, f"{path}[{i}]")
            if found:
                return found
        return None
    return None if a == b else f"{path} ({json.dumps(a)[:80]} against {json.dumps(b)[:80]})"


def as_call(tx):
    """A transaction as an eth_call-style call object."""
    call = {k: tx[k] for k in ("from", "gas", "value", "input", "nonce")}
    for key in ("to", "maxFeePerGas", "maxPriorityFeePerGas", "accessList"):
        if tx.get(key) is not None:
            call[key] = tx[key]
    if tx.get("maxFeePerGas") is None:
        call["gasPrice"] = tx["gasPrice"]
    return call


# How many addresses trace_filter is asked for (reth re-executes the whole range for each).
FILTER_ADDRESSES = int(os.environ.get("FILTER_ADDRESSES", "24"))


def calls(reth, head, blocks):
    """The calls to compare: every method, for every block in `blocks`."""
    addresses = []
    for number in blocks:
        tag = hex(number)
        yield "trace_block", [tag]
        yield "trace_replayBlockTransactions", [tag, ["trace", "stateDiff"]]
        yield "trace_replayBlockTransactions", [tag, ["vmTrace"]]
        block = rpc(reth, "eth_getBlockByNumber", [tag, True])["result"]
        for tx in block["transactions"]:
            yield "trace_transaction", [tx["hash"]]
            yield "trace_get", [tx["hash"], ["0x0"]]
            yield "trace_replayTransaction", [tx["hash"], ["trace", "stateDiff"]]
        # The block's plain transactions again, as calls and as raw transactions on the state
        # before the block (blob and authorization transactions are not calls).
        plain = []
        for tx in block["transactions"]:
            if tx["type"] not in ("0x0", "0x1", "0x2"):
                break
            plain.append(tx)
        if number > 0 and plain:
            parent = hex(number - 1)
            types = ["trace", "stateDiff"]
            yield "trace_call", [as_call(plain[0]), types, parent]
            yield "trace_callMany", [[[as_call(tx), types] for tx in plain], parent]
            raw = rpc(reth, "eth_getRawTransactionByHash", [plain[0]["hash"]])["result"]
            yield "trace_rawTransaction", [raw, types, parent]
        traces = rpc(reth, "trace_block", [tag]).get("result") or []
        for trace in traces:
            for key in ("from", "to", "address", "refundAddress", "author"):
                address = trace.get("action", {}).get(key) or (trace.get("result") or {}).get(key)
                if address and address not in addresses and len(addresses) < FILTER_ADDRESSES:
                    addresses.append(address)
    last = hex(head)
    for address in addresses:
        yield "trace_filter", [{"fromBlock": "0x0", "toBlock": last, "toAddress": [address]}]
        yield "trace_filter", [{"fromBlock": "0x0", "toBlock": last, "fromAddress": [address]}]


def main():
    reth, quarry, out = sys.argv[1:4]
    head = int(rpc(reth, "eth_blockNumber", [])["result"], 16)
    assert int(rpc(quarry, "eth_blockNumber", [])["result"], 16) == head, "heads differ"
    blocks = [int(b) for b in sys.argv[4].split(",")] if len(sys.argv) > 4 else range(head + 1)
    recorded, differing, total = [], {}, 0
    for method, params in calls(reth, head, blocks):
        theirs, ours = rpc(reth, method, params), rpc(quarry, method, params)
        recorded.append({"method": method, "params": params, **theirs})
        total += 1
        found = first_difference(theirs, ours)
        if found:
            differing.setdefault(method, []).append((params, found))
    hashes = [rpc(reth, "eth_getBlockByNumber", [hex(n), False])["result"]["hash"] for n in (0, head)]
    document = {
        "recorded_with": os.environ.get("RECORDED_WITH", "reth"),
        "genesis": hashes[0],
        "head": hashes[1],
        "calls": recorded,
    }
    with gzip.open(out, "wt") as f:
        json.dump(document, f, separators=(",", ":"))
    print(f"{total} calls on blocks {blocks[0]}..{blocks[-1]}; reth's answers in {out}")
    for method in sorted({c["method"] for c in recorded}):
        count = sum(1 for c in recorded if c["method"] == method)
        bad = differing.get(method, [])
        print(f"  {method}: {count} calls, {len(bad)} differ")
        for params, found in bad[:5]:
            print(f"    {json.dumps(params)[:100]}: {found}")


main()
