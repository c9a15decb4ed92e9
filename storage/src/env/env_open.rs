//! Opening MDBX's environment: one handle per datadir in a process, and a lock that only a
//! spawning child holds waited out.
//!
//! MDBX locks a byte of the data file per process through an open file description (an OFD
//! lock), and refuses a second handle on the same files in one process. A child this process
//! spawns holds a copy of every descriptor until its `exec` closes them, MDBX's included: if the
//! process closes its handle and opens the datadir again in that instant, while another process
//! keeps it open, the byte is still locked through the closed handle's description and MDBX
//! answers EAGAIN. The child lets go at its `exec`, so the open is retried for a while.

use crate::{Error, Result};
use signet_libmdbx::{Environment, EnvironmentBuilder, MdbxError};
use std::{
    collections::BTreeSet,
    path::{Path, PathBuf},
    sync::{Mutex, MutexGuard, PoisonError},
    time::{Duration, Instant},
};

/// How long a lock held by a spawning child is waited for: the time between its `fork` and its
/// `exec`, which a loaded machine stretches to many milliseconds.
const PATIENCE: Duration = Duration::from_secs(10);

/// The datadirs this process has open, by canonical path.
static OPEN: Mutex<BTreeSet<PathBuf>> = Mutex::new(BTreeSet::new());

/// The set holds only paths, and no insert or remove panics midway: a poisoned lock's set is
/// whole.
fn open_set() -> MutexGuard<'static, BTreeSet<PathBuf>> {
    OPEN.lock().unwrap_or_else(PoisonError::into_inner)
}

/// That this process has a datadir open; dropping it says it no longer has.
#[derive(Debug)]
pub(crate) struct OpenMark(PathBuf);

impl Drop for OpenMark {
    fn drop(&mut self) {
        open_set().remove(&self.0);
    }
}

/// Opens the environment in `path` (a directory that exists) with `builder`'s settings, and
/// marks it open in this process.
pub(crate) fn open(builder: &EnvironmentBuilder, path: &Path) -> Result<(Environment, OpenMark)> {
    // Where it cannot be resolved, MDBX's open below names what is wrong with the path.
    let canonical = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
    let locked = |reason: String| Error::Locked {
        datadir: path.display().to_string(),
        reason,
    };
    if !open_set().insert(canonical.clone()) {
        return Err(locked(
            "is open in this process already: MDBX allows one handle per process; clone that one"
                .to_string(),
        ));
    }
    let mark = OpenMark(canonical);
    let started = Instant::now();
    let mut pause = Duration::from_millis(1);
    loop {
        match builder.open(path) {
            Err(MdbxError::Other(code)) if code == libc::EAGAIN => {
                if started.elapsed() >= PATIENCE {
                    return Err(locked(format!(
                        "stayed locked for {} s: a handle of this process on it outlives its Database (a transaction still open), or another process opened it exclusively",
                        PATIENCE.as_secs()
                    )));
                }
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(50));
            }
            other => return Ok((other?, mark)),
        }
    }
}
