//! The state-history window (`--state-history N`, `quarry prune`), end to end on the rpc-compat
//! chain and the bundled dev chain: inside the window every state answer equals an archive's;
//! below it state methods answer 4444 "pruned history unavailable" with the oldest block that
//! has state in `data`, while blocks, receipts and logs stay the archive's; `quarry prune` of an
//! archive answers as an ingest with the window; a window never widens, and neither an unwind
//! nor a reorganisation limit may reach below it.

#![allow(clippy::unwrap_used)]

mod support;

use serde_json::{Value, json};
use std::{collections::BTreeSet, ffi::OsStr, path::Path};
use support::{Server, fixtures, ingest_args, ingested, quarry_fails, run_quarry};

const WINDOW: u64 = 16;

fn hex(n: u64) -> String {
    format!("{n:#x}")
}

/// Sends `requests` (method, params) in batches and gives each answer's `result` or `error`.
fn batch(server: &Server, requests: &[(&str, Value)]) -> Vec<Value> {
    requests
        .chunks(100)
        .flat_map(|chunk| server.batch(chunk))
        .map(|reply| match reply.get("error") {
            Some(error) => json!({"error": error}),
            None => reply["result"].clone(),
        })
        .collect()
}

/// Every address the chain names: senders, recipients, miners and created contracts.
fn addresses(server: &Server, head: u64) -> Vec<String> {
    let mut found = BTreeSet::new();
    for number in 0..=head {
        let block = server.result("eth_getBlockByNumber", json!([hex(number), true]));
        found.insert(block["miner"].as_str().unwrap().to_string());
        for tx in block["transactions"].as_array().unwrap() {
            found.insert(tx["from"].as_str().unwrap().to_string());
            if let Some(to) = tx["to"].as_str() {
                found.insert(to.to_string());
            }
        }
        let receipts = server.result("eth_getBlockReceipts", json!([hex(number)]));
        for receipt in receipts.as_array().unwrap() {
            if let Some(created) = receipt["contractAddress"].as_str() {
                found.insert(created.to_string());
            }
        }
    }
    found.into_iter().collect()
}

/// The state requests at `block`: balance, nonce, code and four slots of every address.
fn state_requests(addresses: &[String], block: u64) -> Vec<(&'static str, Value)> {
    let at = hex(block);
    let mut requests = Vec::new();
    for address in addresses {
        requests.push(("eth_getBalance", json!([address, at])));
        requests.push(("eth_getTransactionCount", json!([address, at])));
        requests.push(("eth_getCode", json!([address, at])));
        for slot in 0..4 {
            requests.push(("eth_getStorageAt", json!([address, hex(slot), at])));
        }
    }
    requests
}

/// What the archive stores for every block whatever the window: blocks, receipts, logs.
fn block_requests(head: u64) -> Vec<(&'static str, Value)> {
    let mut requests = vec![(
        "eth_getLogs",
        json!([{"fromBlock": "0x0", "toBlock": hex(head)}]),
    )];
    for number in 0..=head {
        requests.push(("eth_getBlockByNumber", json!([hex(number), true])));
        requests.push(("eth_getBlockReceipts", json!([hex(number)])));
    }
    requests
}

/// Asserts that `answer` is the pruned-history error naming `oldest`.
fn assert_pruned(answer: &Value, oldest: u64, what: &str) {
    let error = &answer["error"];
    assert_eq!(error["code"], 4444, "{what}: {answer}");
    assert_eq!(error["message"], "pruned history unavailable", "{what}");
    assert_eq!(error["data"], hex(oldest), "{what}");
}

/// `quarry prune --state-history 16` of a backup of `archive` written to `pruned`: what it
/// printed. The pages it freed are holes in the data file after: the file takes about what its
/// tables hold, less than the archive it was.
fn prune_a_copy(archive: &Path, pruned: &Path, label: &str) -> String {
    run_quarry(["backup", "--datadir"].map(OsStr::new).into_iter().chain([
        archive.as_os_str(),
        "--out".as_ref(),
        pruned.as_os_str(),
    ]));
    let archive_on_disk = support::assert_free_pages_given_back(pruned, label);
    let (stdout, _) = run_quarry(["prune", "--datadir"].map(OsStr::new).into_iter().chain([
        pruned.as_os_str(),
        "--state-history".as_ref(),
        "16".as_ref(),
    ]));
    assert!(
        stdout.contains("of free pages back to the file system"),
        "{label}: {stdout}"
    );
    let pruned_on_disk = support::assert_free_pages_given_back(pruned, label);
    assert!(
        pruned_on_disk < archive_on_disk,
        "{label}: {pruned_on_disk} bytes on disk after the prune, {archive_on_disk} before"
    );
    stdout
}

fn check_chain(folder: &Path, label: &str) {
    let archive = ingested(folder);
    let (genesis, chain) = (folder.join("genesis.json"), folder.join("chain.rlp"));
    let dir = tempfile::tempdir().unwrap();
    // A window from the first import on.
    let windowed = dir.path().join("windowed");
    let mut args = ingest_args(&windowed, &genesis, &[&chain]);
    args.extend(["--state-history".as_ref(), "16".as_ref()] as [&OsStr; 2]);
    run_quarry(args);
    // An archive pruned afterwards (a backup of it, so the shared archive stays whole).
    let pruned = dir.path().join("pruned");
    let stdout = prune_a_copy(&archive, &pruned, label);
    let (head, _) = support::stored_head(&archive);
    let oldest = head - WINDOW;
    assert!(
        stdout.contains(&format!("the oldest block with state is {oldest}")),
        "{label}: {stdout}"
    );

    let servers = [&archive, &windowed, &pruned].map(|datadir| Server::start(datadir, ""));
    let [archive_server, windowed_server, pruned_server] = &servers;
    let addresses = addresses(archive_server, head);
    // Inside the window: every state answer equals the archive's.
    let mut inside: Vec<(&str, Value)> = (oldest..=head)
        .flat_map(|block| state_requests(&addresses, block))
        .collect();
    for block in [oldest, head - 1] {
        inside.push(("eth_getProof", json!([addresses[0], ["0x0"], hex(block)])));
        inside.push(("debug_traceBlockByNumber", json!([hex(block + 1)])));
    }
    let expected = batch(archive_server, &inside);
    assert!(expected.iter().all(|answer| answer.get("error").is_none()));
    for (server, name) in [(windowed_server, "ingested"), (pruned_server, "pruned")] {
        let answers = batch(server, &inside);
        for ((request, want), got) in inside.iter().zip(&expected).zip(&answers) {
            assert_eq!(got, want, "{label}, {name}: {request:?}");
        }
    }
    // eth_getTransactionBySenderAndNonce searches the kept state: a transaction after the
    // oldest block is found, one before it is in the pruned history.
    let sent = |range: std::ops::RangeInclusive<u64>| {
        range.into_iter().find_map(|number| {
            let block = archive_server.result("eth_getBlockByNumber", json!([hex(number), true]));
            let tx = block["transactions"].as_array().unwrap().first()?.clone();
            Some((tx["from"].clone(), tx["nonce"].clone(), tx["hash"].clone()))
        })
    };
    for server in [windowed_server, pruned_server] {
        if let Some((from, nonce, hash)) = sent(oldest + 1..=head) {
            let found = server.result("eth_getTransactionBySenderAndNonce", json!([from, nonce]));
            assert_eq!(found["hash"], hash, "{label}");
        }
        if let Some((from, nonce, _)) = sent(1..=oldest - 1) {
            let answer = server.call("eth_getTransactionBySenderAndNonce", json!([from, nonce]));
            assert_pruned(&answer, oldest, &format!("{label}: sender and nonce"));
        }
    }
    // eth_capabilities names the window and its oldest block.
    for server in [windowed_server, pruned_server] {
        let state = &server.result("eth_capabilities", json!([]))["state"];
        assert_eq!(
            state,
            &json!({"disabled": false, "oldestBlock": hex(oldest),
                "deleteStrategy": {"type": "window", "retentionBlocks": hex(WINDOW)}}),
            "{label}"
        );
    }
    // Below it: 4444 from every state method, and the blocks the archive stores.
    let address = &addresses[0];
    let call = json!({"to": address, "data": "0x"});
    let blocks = batch(archive_server, &block_requests(head));
    for (server, name) in [(windowed_server, "ingested"), (pruned_server, "pruned")] {
        for block in [0, oldest / 2, oldest - 1] {
            let at = hex(block);
            let requests = [
                ("eth_getBalance", json!([address, at])),
                ("eth_getTransactionCount", json!([address, at])),
                ("eth_getCode", json!([address, at])),
                ("eth_getStorageAt", json!([address, "0x0", at])),
                ("eth_call", json!([call, at])),
                ("eth_estimateGas", json!([call, at])),
                ("eth_createAccessList", json!([call, at])),
                ("eth_getProof", json!([address, [], at])),
                ("debug_traceBlockByNumber", json!([hex(block + 1)])),
                ("trace_block", json!([hex(block + 1)])),
            ];
            for (answer, request) in batch(server, &requests).iter().zip(&requests) {
                assert_pruned(answer, oldest, &format!("{label}, {name}: {request:?}"));
            }
        }
        assert_eq!(
            batch(server, &block_requests(head)),
            blocks,
            "{label}, {name}: blocks, receipts and logs"
        );
    }

    // A window never widens, and nothing may reach below it.
    for datadir in [&windowed, &pruned] {
        let mut args = ingest_args(datadir, &genesis, &[&chain]);
        args.extend(["--state-history".as_ref(), "32".as_ref()] as [&OsStr; 2]);
        let stderr = quarry_fails(args);
        assert!(stderr.contains("cannot widen to 32"), "{label}: {stderr}");
        let mut args = ingest_args(datadir, &genesis, &[&chain]);
        args.extend(["--reorg", "--max-reorg-depth", "17"].map(OsStr::new));
        let stderr = quarry_fails(args);
        assert!(
            stderr
                .contains("--max-reorg-depth 17 exceeds the datadir's state history window of 16"),
            "{label}: {stderr}"
        );
        let stderr = quarry_fails(["unwind", "--datadir"].map(OsStr::new).into_iter().chain([
            datadir.as_os_str(),
            "--genesis".as_ref(),
            genesis.as_os_str(),
            "--to".as_ref(),
            OsStr::new(&(oldest - 1).to_string()),
        ]));
        assert!(
            stderr.contains(&format!("cannot unwind to block {}", oldest - 1)),
            "{label}: {stderr}"
        );
    }
    // An unwind within the window works, and its state is the archive's.
    run_quarry(["unwind", "--datadir"].map(OsStr::new).into_iter().chain([
        pruned.as_os_str(),
        "--genesis".as_ref(),
        genesis.as_os_str(),
        "--to".as_ref(),
        OsStr::new(&oldest.to_string()),
    ]));
    drop(servers);
    let pruned_server = Server::start(&pruned, "");
    let archive_server = Server::start(&archive, "");
    let at_oldest = state_requests(&addresses, oldest);
    assert_eq!(
        batch(&pruned_server, &at_oldest),
        batch(&archive_server, &at_oldest),
        "{label}: the state after an unwind to the oldest block"
    );
}

#[test]
fn a_window_answers_as_the_archive_inside_it_and_4444_below_on_rpc_compat() {
    check_chain(&fixtures(), "rpc-compat");
}

#[test]
fn a_window_answers_as_the_archive_inside_it_and_4444_below_on_the_dev_chain() {
    check_chain(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/devnet"),
        "dev chain",
    );
}

/// `quarry prune` killed after its first commits resumes, run again, to exactly what an
/// uninterrupted prune of the same archive writes.
#[test]
fn a_prune_killed_midway_resumes_to_what_an_uninterrupted_one_writes() {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};
    let dir = tempfile::tempdir().unwrap();
    let chain = dir.path().join("chain");
    support::devchain(&chain, &["--blocks", "200"]);
    let archive = dir.path().join("archive");
    let genesis = chain.join("genesis.json");
    run_quarry(ingest_args(&archive, &genesis, &[&chain.join("chain.rlp")]));
    let (killed, whole) = (dir.path().join("killed"), dir.path().join("whole"));
    for copy in [&killed, &whole] {
        run_quarry(["backup", "--datadir"].map(OsStr::new).into_iter().chain([
            archive.as_os_str(),
            "--out".as_ref(),
            copy.as_os_str(),
        ]));
    }
    let prune = |datadir: &Path, batch: &str| {
        let mut command = Command::new(support::QUARRY);
        command.args(["prune", "--datadir"]).arg(datadir);
        command.args(["--state-history", "16", "--batch", batch]);
        command
    };
    // Ten changeset entries a commit: a commit for about every block.
    let mut child = prune(&killed, "10")
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let first = lines.next().unwrap().unwrap();
    assert!(first.contains("pruned up to block"), "{first}");
    child.kill().unwrap();
    child.wait().unwrap();
    let (head, _) = support::stored_head(&killed);
    let oldest = support::oldest_state(&killed);
    assert!(
        (1..head - WINDOW).contains(&oldest),
        "killed midway: oldest {oldest}"
    );
    run_quarry(["prune", "--datadir"].map(OsStr::new).into_iter().chain([
        killed.as_os_str(),
        "--state-history".as_ref(),
        "16".as_ref(),
    ]));
    assert!(prune(&whole, "1000000").status().unwrap().success());
    let except = [quarry_storage::Table::Meta];
    assert_eq!(
        support::table_digests(&killed, &except),
        support::table_digests(&whole, &except)
    );
    for datadir in [&killed, &whole] {
        assert_eq!(support::oldest_state(datadir), head - WINDOW);
    }
}
