//! End-to-end tests of `quarry backup`: copies taken while `quarry ingest` keeps committing
//! are consistent datadirs as of one commit, serve at once, and an ingest resumes from their
//! head to exactly the datadir a straight ingest writes.

#![allow(clippy::unwrap_used)]

mod support;

use serde_json::json;
use std::{
    path::Path,
    process::Command,
    time::{Duration, Instant},
};
use support::{QUARRY, Server, devchain, ingest_args, run_quarry, stored_head, table_digests};

fn backup(datadir: &Path, out: &Path, compact: bool) -> String {
    let mut args = vec![
        "backup".as_ref(),
        "--datadir".as_ref(),
        datadir.as_os_str(),
        "--out".as_ref(),
        out.as_os_str(),
    ];
    if compact {
        args.push("--compact".as_ref());
    }
    run_quarry(args).0
}

#[test]
fn backups_taken_during_an_ingest_serve_and_resume_to_the_same_datadir() {
    let dir = tempfile::tempdir().unwrap();
    let chain = dir.path().join("chain");
    devchain(&chain, &["--blocks", "300"]);
    let (genesis, blocks) = (chain.join("genesis.json"), chain.join("chain.rlp"));
    let live = dir.path().join("live");
    // The writer: ten ingests in a row, each importing 30 more blocks and committing them.
    let all = support::decode_blocks(&std::fs::read(&blocks).unwrap());
    let steps: Vec<_> = (1..=10)
        .map(|step| {
            let file = dir.path().join(format!("to{step}.rlp"));
            let prefix = all.iter().filter(|b| b.header.number <= step * 30);
            std::fs::write(&file, support::encode_blocks(prefix)).unwrap();
            file
        })
        .collect();
    let writer = {
        let (live, genesis) = (live.clone(), genesis.clone());
        std::thread::spawn(move || {
            for file in &steps {
                let status = Command::new(QUARRY)
                    .args(ingest_args(&live, &genesis, &[file]))
                    .output()
                    .unwrap()
                    .status;
                assert!(status.success());
            }
        })
    };
    let started = Instant::now();
    while !live.join("mdbx.dat").exists() {
        assert!(started.elapsed() < Duration::from_secs(60), "no datadir");
        std::thread::sleep(Duration::from_millis(20));
    }
    // Copies while it commits, compacting and plain in turn.
    let mut copies = Vec::new();
    while !writer.is_finished() && copies.len() < 4 {
        let out = dir.path().join(format!("copy{}", copies.len()));
        let printed = backup(&live, &out, copies.len() % 2 == 1);
        assert!(printed.starts_with("backed up"), "{printed}");
        copies.push(out);
        std::thread::sleep(Duration::from_millis(400));
    }
    writer.join().unwrap();
    assert!(
        copies.len() > 1,
        "the ingests ended before copies were taken"
    );
    let (final_head, _) = stored_head(&live);
    let mut heads = Vec::new();
    for copy in &copies {
        // A copy taken before the first ingest committed its genesis block holds no block
        // (a slow machine's first copy can be one): nothing to serve, but resuming from it
        // must still end on what the live datadir holds.
        let copied_head = {
            let db = quarry_storage::Database::open(copy).unwrap();
            db.reader().unwrap().head().unwrap()
        };
        if let Some((head, hash)) = copied_head {
            // As of one commit: its head is a block the live datadir holds, under the same
            // hash. (One environment per file in a process: each is opened and closed in turn.)
            let live_hash = {
                let db = quarry_storage::Database::open(&live).unwrap();
                db.reader().unwrap().canonical_hash(head).unwrap()
            };
            assert_eq!(live_hash, Some(hash));
            heads.push(head);
            // A plain copy's free pages were punched out of it: it takes what its pages in
            // use do.
            support::assert_free_pages_given_back(copy, "a copy");
            // It serves at once.
            let server = Server::start(copy, "");
            assert_eq!(
                server.result("eth_blockNumber", json!([])),
                json!(format!("{head:#x}"))
            );
            drop(server);
        }
        // An ingest resumes from its head to exactly what the live datadir holds.
        run_quarry(ingest_args(copy, &genesis, &[&blocks]));
        assert_eq!(stored_head(copy).0, final_head);
        let except = [quarry_storage::Table::Meta];
        assert_eq!(table_digests(copy, &except), table_digests(&live, &except));
    }
    assert!(
        heads.iter().any(|head| *head > 0 && *head < final_head),
        "no copy was taken between two commits of blocks: {heads:?}"
    );
}

#[test]
fn a_backup_into_an_existing_datadir_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let datadir = support::ingested(&support::fixtures());
    let out = dir.path().join("copy");
    backup(&datadir, &out, true);
    let error = support::quarry_fails([
        "backup".as_ref(),
        "--datadir".as_ref(),
        datadir.as_os_str(),
        "--out".as_ref(),
        out.as_os_str(),
    ]);
    assert!(
        error.contains("exists: back up into a new directory"),
        "{error}"
    );
}

/// A backup killed while it copies leaves the source as it was and no datadir where the copy
/// was going (a whole one at most, when the kill came after it was renamed into place); the
/// same command then writes the whole copy.
#[test]
fn a_killed_backup_changes_nothing_and_leaves_no_datadir() {
    let dir = tempfile::tempdir().unwrap();
    let chain = dir.path().join("chain");
    devchain(&chain, &["--blocks", "300"]);
    let source = dir.path().join("source");
    support::ingest_folder(&source, &chain);
    let before = table_digests(&source, &[]);
    let mut caught = 0;
    for attempt in 0..5 {
        let out = dir.path().join(format!("copy{attempt}"));
        let mut child = Command::new(QUARRY)
            .args(["backup", "--datadir"])
            .arg(&source)
            .arg("--out")
            .arg(&out)
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap();
        // Killed as soon as the copy is being written, or not at all when it was too quick.
        let partial = out.join("mdbx.dat.partial");
        loop {
            if partial.exists() {
                child.kill().unwrap();
                caught += 1;
                break;
            }
            if child.try_wait().unwrap().is_some() {
                break;
            }
            std::thread::sleep(Duration::from_micros(100));
        }
        let status = child.wait().unwrap();
        if !status.success() && out.join("mdbx.dat").exists() {
            // Killed after the copy was renamed into place (while its free pages were being
            // punched out): only a whole copy may be there.
            assert_eq!(
                table_digests(&out, &[]),
                before,
                "a killed backup left a partial datadir"
            );
        }
        assert_eq!(table_digests(&source, &[]), before, "the source changed");
        std::fs::remove_dir_all(&out).ok();
        if !status.success() {
            std::fs::create_dir_all(&out).unwrap();
            std::fs::write(&partial, b"left by a killed backup").unwrap();
        }
        backup(&source, &out, false);
        assert_eq!(stored_head(&out), stored_head(&source));
    }
    assert!(caught > 0, "no backup was caught while copying");
}
