//! eth_simulateV1 on the dev chain: a stored block's transactions simulated on its parent give
//! the stored block's roots, bloom and gas; simulated blocks chain their hashes (BLOCKHASH
//! reads them) and their state; and ethers v6, which has no API of its own for the method,
//! sends it as plain JSON-RPC.

#![allow(clippy::unwrap_used)]

mod support;

use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use support::{Server, ingested};

fn devnet() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/devnet")
}

fn quantity(value: &Value) -> u64 {
    u64::from_str_radix(value.as_str().unwrap().trim_start_matches("0x"), 16).unwrap()
}

/// A stored transaction as eth_simulateV1's call object (its fields, no signature).
fn call_of(tx: &Value) -> Value {
    let mut call = json!({
        "from": tx["from"],
        "to": tx["to"],
        "gas": tx["gas"],
        "value": tx["value"],
        "input": tx["input"],
        "nonce": tx["nonce"],
    });
    match tx["type"].as_str().unwrap() {
        "0x0" => call["gasPrice"] = tx["gasPrice"].clone(),
        "0x1" => {
            // geth makes a call with a gas price a legacy transaction, whose execution keeps
            // the access list.
            call["gasPrice"] = tx["gasPrice"].clone();
            call["accessList"] = tx["accessList"].clone();
        }
        kind => {
            call["maxFeePerGas"] = tx["maxFeePerGas"].clone();
            call["maxPriorityFeePerGas"] = tx["maxPriorityFeePerGas"].clone();
            call["accessList"] = tx["accessList"].clone();
            if kind == "0x3" {
                call["blobVersionedHashes"] = tx["blobVersionedHashes"].clone();
                call["maxFeePerBlobGas"] = tx["maxFeePerBlobGas"].clone();
            }
            if kind == "0x4" {
                call["authorizationList"] = tx["authorizationList"].clone();
            }
        }
    }
    call
}

/// Post-merge blocks of every fork (Cancun's first, Prague's first with its EIP-7702
/// delegation, Osaka's first, the head), re-made by eth_simulateV1 on their parents with
/// validation: the state root (from the head's state trie unwound to the parent), receipts
/// root, bloom, gas and blob gas are the stored block's, and each call's status and gas its
/// receipt's.
#[test]
fn simulating_a_stored_block_on_its_parent_gives_its_roots() {
    let server = Server::start(&ingested(&devnet()), "");
    let head = quantity(&server.result("eth_blockNumber", json!([])));
    for number in [20, 24, 28, 46, head] {
        let block = server.result(
            "eth_getBlockByNumber",
            json!([format!("{number:#x}"), true]),
        );
        let calls: Vec<Value> = block["transactions"]
            .as_array()
            .unwrap()
            .iter()
            .map(call_of)
            .collect();
        let overrides = json!({
            "time": block["timestamp"],
            "gasLimit": block["gasLimit"],
            "feeRecipient": block["miner"],
            "prevRandao": block["mixHash"],
            "beaconRoot": block["parentBeaconBlockRoot"],
            "withdrawals": block["withdrawals"],
        });
        let simulated = server.result(
            "eth_simulateV1",
            json!([
                {"blockStateCalls": [{"blockOverrides": overrides, "calls": calls}], "validation": true},
                format!("{:#x}", number - 1),
            ]),
        );
        let simulated = &simulated[0];
        // geth makes an EIP-2930 transaction's call a legacy transaction: its receipt's type,
        // and so the receipts root, differ (nothing else does).
        let access_list_typed = block["transactions"]
            .as_array()
            .unwrap()
            .iter()
            .any(|tx| tx["type"] == "0x1");
        if !access_list_typed {
            assert_eq!(
                simulated["receiptsRoot"], block["receiptsRoot"],
                "block {number}"
            );
        }
        for field in [
            "parentHash",
            "stateRoot",
            "logsBloom",
            "gasUsed",
            "blobGasUsed",
            "excessBlobGas",
            "baseFeePerGas",
            "withdrawalsRoot",
            "requestsHash",
            "number",
        ] {
            assert_eq!(simulated[field], block[field], "block {number}: {field}");
        }
        let receipts = server.result("eth_getBlockReceipts", json!([format!("{number:#x}")]));
        for (call, receipt) in simulated["calls"]
            .as_array()
            .unwrap()
            .iter()
            .zip(receipts.as_array().unwrap())
        {
            assert_eq!(call["status"], receipt["status"], "block {number}");
            assert_eq!(call["gasUsed"], receipt["gasUsed"], "block {number}");
            assert_eq!(
                call["logs"].as_array().unwrap().len(),
                receipt["logs"].as_array().unwrap().len(),
                "block {number}"
            );
        }
    }
}

/// Returns BLOCKHASH(NUMBER - 1) as a word.
const PARENT_HASH_CODE: &str = "0x600143034060005260206000f3";

/// Two simulated blocks on the head: the second reads the first's generated hash with
/// BLOCKHASH and sees its state (a dev account's transfer, with traceTransfers' ETH log and
/// the fee recipient paid); logs carry the generated block hash.
#[test]
fn simulated_blocks_chain_their_hashes_and_state() {
    let server = Server::start(&ingested(&devnet()), "");
    let accounts = quarry_devchain::DevAccounts::new(quarry_devchain::account_count(
        quarry_devchain::GenerateOptions::default().txs_per_block,
    ))
    .unwrap();
    let from = format!("{:#x}", accounts.address(1));
    let to = "0x00000000000000000000000000000000000000aa";
    let reader = "0x00000000000000000000000000000000000000bb";
    let recipient = "0x00000000000000000000000000000000000000cc";
    let before = quantity(&server.result("eth_getBalance", json!([to, "latest"])));
    let blocks = server.result(
        "eth_simulateV1",
        json!([{
            "blockStateCalls": [
                {
                    "blockOverrides": {"feeRecipient": recipient},
                    "calls": [{"from": from, "to": to, "value": "0x3e8", "maxFeePerGas": "0x174876e800", "maxPriorityFeePerGas": "0x3b9aca00"}],
                },
                {
                    "stateOverrides": {reader: {"code": PARENT_HASH_CODE}},
                    "calls": [{"from": from, "to": reader, "maxFeePerGas": "0x174876e800"}],
                },
            ],
            "traceTransfers": true,
            "validation": true,
        }]),
    );
    let (first, second) = (&blocks[0], &blocks[1]);
    assert_eq!(second["parentHash"], first["hash"]);
    assert_eq!(quantity(&second["number"]), quantity(&first["number"]) + 1);
    assert_eq!(second["calls"][0]["returnData"], first["hash"]);
    // The ETH transfer as an ERC-7528 Transfer log, in the generated block.
    let log = &first["calls"][0]["logs"][0];
    assert_eq!(log["address"], "0xeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee");
    assert_eq!(log["blockHash"], first["hash"]);
    assert_eq!(log["transactionHash"], first["transactions"][0]);
    assert_eq!(quantity(&log["data"]), 1000);
    // The second block's state has the first's transfer and the tip paid to the recipient.
    let balances = server.result(
        "eth_simulateV1",
        json!([{
            "blockStateCalls": [
                {"calls": [{"from": from, "to": to, "value": "0x3e8"}]},
                {"stateOverrides": {reader: {"code": "0x7300000000000000000000000000000000000000aa3160005260206000f3"}},
                 "calls": [{"to": reader}]},
            ],
        }]),
    );
    let balance = balances[1]["calls"][0]["returnData"].as_str().unwrap();
    assert_eq!(
        u128::from_str_radix(&balance[balance.len() - 32..], 16).unwrap(),
        u128::from(before) + 1000
    );
    // Nothing was stored: the head and the account are as they were.
    assert_eq!(
        quantity(&server.result("eth_getBalance", json!([to, "latest"]))),
        before
    );
}

/// geth's access rules for overridden precompiles and its order of checks: a precompile moved
/// elsewhere is cold at its new address (only the fork's own precompile addresses start warm),
/// and with validation a sender whose nonce is at its maximum fails for that (-32603) before
/// its zero fees are looked at.
#[test]
fn moved_precompiles_start_cold_and_a_maximal_nonce_fails_first() {
    let server = Server::start(&ingested(&devnet()), "");
    let caller = "0x00000000000000000000000000000000000000dd";
    let moved_to = "0x0000000000000000000000000000000000123456";
    // CALL(gas, target, 0, 0, 0, 0, 0); STOP: ecrecover of empty input, 3,000 gas, either way.
    let calling = |target: &str| format!("0x60006000600060006000{}{}5af100", "73", &target[2..]);
    let gas = |overrides: Value| {
        let blocks = server.result(
            "eth_simulateV1",
            json!([{"blockStateCalls": [{"stateOverrides": overrides, "calls": [{"to": caller}]}]}]),
        );
        let call = &blocks[0]["calls"][0];
        assert_eq!(call["status"], "0x1", "{call}");
        quantity(&call["gasUsed"])
    };
    let at_home =
        gas(json!({caller: {"code": calling("0x0000000000000000000000000000000000000001")}}));
    let moved = gas(json!({
        "0x0000000000000000000000000000000000000001": {"movePrecompileToAddress": moved_to},
        caller: {"code": calling(moved_to)},
    }));
    // EIP-2929: a cold account access costs 2,600, a warm one 100.
    assert_eq!(moved, at_home + 2500);

    let sender = "0xc000000000000000000000000000000000000000";
    let response = server.call(
        "eth_simulateV1",
        json!([{
            "blockStateCalls": [{
                "stateOverrides": {sender: {"nonce": "0xffffffffffffffff"}},
                "calls": [{"from": sender, "to": caller}],
            }],
            "validation": true,
        }, "latest"]),
    );
    assert_eq!(response["error"]["code"], -32603, "{response}");
    let message = response["error"]["message"].as_str().unwrap();
    assert!(message.contains("nonce has max value"), "{message}");
}

/// ethers v6 has no API of its own for eth_simulateV1: its provider sends it as plain
/// JSON-RPC, unmodified, and reads the result.
#[test]
fn ethers_sends_eth_simulate_v1() {
    let server = Server::start(&ingested(&devnet()), "");
    let stdout = support::node_client("ethers-simulate.mjs", &[&server.http_url(support::KEY)]);
    assert!(stdout.contains("ok: simulated 2 blocks"), "{stdout}");
}
