//! A full disk and a full database end to end: `quarry ingest` and `quarry follow` into a
//! datadir on a small tmpfs stop (ingest: a message and a non-zero exit, never a signal) or
//! wait (follow: warnings, retries), and resume once the tmpfs grows; `--max-db-size` stops
//! an ingest with a message naming it. Mounting needs root: where it is refused, the tests
//! print why and pass without checking.

#![allow(clippy::unwrap_used)]

mod support;

use alloy_primitives::B256;
use std::{
    io::{Read, Write},
    path::{Path, PathBuf},
    process::{Command, Output, Stdio},
    sync::{Arc, Mutex, OnceLock},
    time::{Duration, Instant},
};
use support::{QUARRY, Server, decode_blocks, ingest_args, run_quarry, stored_head};

/// A tmpfs of a given size mounted on a directory, unmounted when dropped.
struct Tmpfs {
    dir: PathBuf,
}

impl Tmpfs {
    /// `None` (after printing why) where mounting is refused.
    fn mount(dir: &Path, megabytes: u64) -> Option<Self> {
        std::fs::create_dir_all(dir).unwrap();
        let output = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={megabytes}m"), "tmpfs"])
            .arg(dir)
            .output();
        match output {
            Ok(output) if output.status.success() => Some(Self {
                dir: dir.to_path_buf(),
            }),
            Ok(output) => {
                println!(
                    "SKIPPED: cannot mount a tmpfs on {} (not root?): {}",
                    dir.display(),
                    String::from_utf8_lossy(&output.stderr).trim()
                );
                None
            }
            Err(err) => {
                println!("SKIPPED: cannot run mount: {err}");
                None
            }
        }
    }

    fn grow(&self, megabytes: u64) {
        let status = Command::new("mount")
            .args(["-o", &format!("remount,size={megabytes}m")])
            .arg(&self.dir)
            .status()
            .unwrap();
        assert!(status.success(), "remount of {}", self.dir.display());
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        // Lazy: a process killed a moment ago may still hold a file open.
        let _ = Command::new("umount").arg("-l").arg(&self.dir).status();
    }
}

/// A chain whose datadir (about 8 MB) does not fit the tmpfs the tests start with, generated
/// once per test binary: its genesis, its blocks file and its last block's hash.
struct TestChain {
    genesis: PathBuf,
    blocks: PathBuf,
    head: (u64, B256),
}

fn chain() -> &'static TestChain {
    static CHAIN: OnceLock<TestChain> = OnceLock::new();
    CHAIN.get_or_init(|| {
        let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("full-disk-chain");
        let _ = std::fs::remove_dir_all(&out);
        support::devchain(
            &out,
            &["--blocks", "200", "--txs-per-block", "30", "--seed", "1"],
        );
        let blocks = out.join("chain.rlp");
        let last = decode_blocks(&std::fs::read(&blocks).unwrap())
            .pop()
            .unwrap();
        TestChain {
            genesis: out.join("genesis.json"),
            blocks,
            head: (last.header.number, last.header.hash_slow()),
        }
    })
}

/// A fresh directory for one test under the target's scratch directory.
fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("full-disk-{name}"));
    let _ = Command::new("umount")
        .arg("-l")
        .arg(dir.join("mnt"))
        .status();
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn quarry(args: &[&std::ffi::OsStr]) -> Output {
    Command::new(QUARRY)
        .args(args)
        .env("RUST_BACKTRACE", "0")
        .output()
        .unwrap()
}

/// Asserts that `output` is a failure with an exit code (no signal) whose message contains
/// each of `wanted`.
fn assert_stopped_with(output: &Output, wanted: &[&str]) {
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.code().is_some_and(|code| code != 0),
        "expected a non-zero exit code, got {:?}: {stderr}",
        output.status
    );
    for text in wanted {
        assert!(stderr.contains(text), "{text:?} not in: {stderr}");
    }
}

/// (1) and (2): ingest into a tmpfs too small stops with the message and an exit code; after
/// the tmpfs grows, the same command resumes to the chain's head.
#[test]
fn ingest_stops_on_a_full_disk_and_resumes_when_it_grows() {
    let chain = chain();
    let dir = scratch("ingest");
    let Some(tmpfs) = Tmpfs::mount(&dir.join("mnt"), 3) else {
        return;
    };
    let datadir = tmpfs.dir.join("data");
    let args = ingest_args(&datadir, &chain.genesis, &[&chain.blocks]);
    let output = quarry(&args);
    let datadir_text = datadir.display().to_string();
    assert_stopped_with(
        &output,
        &[
            "is full",
            &datadir_text,
            "bytes free",
            "run the command again",
        ],
    );

    tmpfs.grow(64);
    let output = quarry(&args);
    assert!(
        output.status.success(),
        "the resumed ingest failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(stored_head(&datadir), chain.head);
}

/// (4): an ingest that needs more than `--max-db-size` stops with a message naming it, and
/// the database it leaves opens and resumes with a larger bound.
#[test]
fn the_database_size_bound_stops_an_ingest_with_the_setting_named() {
    let chain = chain();
    let dir = scratch("bound");
    let datadir = dir.join("data");
    let mut args = ingest_args(&datadir, &chain.genesis, &[&chain.blocks]);
    args.extend([
        std::ffi::OsStr::new("--max-db-size"),
        std::ffi::OsStr::new("2M"),
    ]);
    let output = quarry(&args);
    assert_stopped_with(&output, &["--max-db-size", &datadir.display().to_string()]);

    let args = ingest_args(&datadir, &chain.genesis, &[&chain.blocks]);
    run_quarry(args);
    assert_eq!(stored_head(&datadir), chain.head);
}

/// (3): a follower whose tmpfs fills keeps running, warns with a count, and catches up to the
/// upstream once the tmpfs grows.
#[test]
fn follow_survives_a_full_disk_and_catches_up() {
    let chain = chain();
    let dir = scratch("follow");
    let upstream_dir = dir.join("upstream");
    run_quarry(ingest_args(&upstream_dir, &chain.genesis, &[&chain.blocks]));
    let upstream = Server::start(&upstream_dir, "");
    let Some(tmpfs) = Tmpfs::mount(&dir.join("mnt"), 3) else {
        return;
    };
    let datadir = tmpfs.dir.join("data");
    let mut child = Command::new(QUARRY)
        .args(["follow", "--datadir"])
        .arg(&datadir)
        .arg("--genesis")
        .arg(&chain.genesis)
        .args(["--upstream", &upstream.http_url(support::KEY)])
        .args(["--poll-ms", "50"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let log = Arc::new(Mutex::new(String::new()));
    let reader = {
        let (log, mut stderr) = (log.clone(), child.stderr.take().unwrap());
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = stderr.read(&mut buf) {
                if n == 0 {
                    break;
                }
                log.lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        })
    };
    let wait_for = |what: &str, done: &dyn Fn(&str) -> bool| {
        let deadline = Instant::now() + Duration::from_secs(300);
        loop {
            let text = log.lock().unwrap().clone();
            if done(&text) {
                return;
            }
            assert!(Instant::now() < deadline, "waiting for {what}; log: {text}");
            std::thread::sleep(Duration::from_millis(100));
        }
    };
    wait_for("the second storage fault", &|log| {
        log.contains("storage fault 2 since start")
    });
    assert!(
        child.try_wait().unwrap().is_none(),
        "the follower exited on a full disk"
    );
    assert!(log.lock().unwrap().contains("is full"));
    // A server on the full datadir says why it is not ready.
    let replica = Server::start(&datadir, "");
    let (status, body) = get(&replica.addr, "/ready");
    assert_eq!(status, 503, "{body}");
    assert!(body.contains("bytes free, under min_free_mb 64"), "{body}");

    tmpfs.grow(128);
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        let head = quarry_storage::Database::open(&datadir)
            .ok()
            .and_then(|db| db.reader().ok()?.head().ok()?);
        if head == Some(chain.head) {
            break;
        }
        assert!(
            child.try_wait().unwrap().is_none(),
            "the follower exited: {}",
            log.lock().unwrap()
        );
        assert!(
            Instant::now() < deadline,
            "the follower did not catch up: head {head:?}; log: {}",
            log.lock().unwrap()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    // The server looks at the free space each time it reads the head (every second or so).
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (status, body) = get(&replica.addr, "/ready");
        if status == 200 {
            break;
        }
        assert!(Instant::now() < deadline, "still not ready: {body}");
        std::thread::sleep(Duration::from_millis(200));
    }
    let _ = child.kill();
    let _ = child.wait();
    let _ = reader.join();
    drop((upstream, replica));
}

/// A GET of `path` from the server at `addr`: its status and body.
fn get(addr: &str, path: &str) -> (u16, String) {
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let (head, body) = response.split_once("\r\n\r\n").unwrap();
    (
        head.split(' ').nth(1).unwrap().parse().unwrap(),
        body.to_string(),
    )
}
