//! A process that reopens a datadir another process holds open, while it spawns children
//! (as the end-to-end tests and a supervisor do): every open succeeds. A child holds copies
//! of the parent's descriptors, MDBX's lock included, until its `exec`.

#![allow(clippy::unwrap_used)]

use quarry_storage::Database;
use std::io::Read;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};

/// Run as a child of the test below (it sets HOLD_DIR): keeps the database open until its
/// stdin closes.
#[test]
#[ignore = "a helper process of reopening_while_children_spawn"]
fn hold_open() {
    let Some(dir) = std::env::var_os("HOLD_DIR") else {
        return;
    };
    let db = Database::open(std::path::Path::new(&dir)).unwrap();
    println!("open");
    let _ = std::io::stdin().read(&mut [0u8; 1]);
    drop(db);
}

#[test]
fn reopening_while_children_spawn() {
    let dir = tempfile::tempdir().unwrap();
    drop(Database::open(dir.path()).unwrap());
    let mut holder = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "hold_open", "--ignored", "--nocapture"])
        .env("HOLD_DIR", dir.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut said = String::new();
    let mut stdout = holder.stdout.take().unwrap();
    while !said.contains("open\n") {
        let mut byte = [0u8; 1];
        assert_eq!(stdout.read(&mut byte).unwrap(), 1, "the holder exited");
        said.push(char::from(byte[0]));
    }
    let stop = AtomicBool::new(false);
    let opened = std::thread::scope(|scope| {
        scope.spawn(|| {
            while !stop.load(Ordering::Relaxed) {
                Command::new("true").status().unwrap();
            }
        });
        let opened: Vec<_> = (0..300)
            .map(|_| {
                Database::open(dir.path())
                    .and_then(|db| db.reader().map(drop))
                    .map_err(|e| e.to_string())
            })
            .collect();
        stop.store(true, Ordering::Relaxed);
        opened
    });
    drop(holder.stdin.take());
    assert!(holder.wait().unwrap().success());
    let failed: Vec<_> = opened.iter().filter_map(|r| r.as_ref().err()).collect();
    assert!(
        failed.is_empty(),
        "{} of 300 opens failed: {:?}",
        failed.len(),
        failed.first()
    );
}

/// A second handle on a datadir this process has open is refused with a clear error, not an
/// errno.
#[test]
fn a_second_handle_in_one_process_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let first = Database::open(dir.path()).unwrap();
    let second = Database::open(dir.path()).unwrap_err().to_string();
    assert!(
        second.contains("is open in this process already"),
        "{second}"
    );
    drop(first);
    Database::open(dir.path()).unwrap();
}
