//! Running out of room: the database's configured size bound, the free space of the file
//! system under a datadir, and turning MDBX's "no space" and "map full" errors into
//! [`Error::DiskFull`] and [`Error::MapFull`], which name the datadir and what to do.
//!
//! MDBX writes dirty pages with `pwrite` at commit (and when a large transaction spills them),
//! not through the memory map: a full file system then fails the write with ENOSPC, which
//! aborts the transaction and leaves the last commit as it was, where a store into a mapped page
//! the file system cannot back would kill the process with SIGBUS.

use crate::{Database, Error};
use std::{fs::OpenOptions, os::fd::AsRawFd, path::Path};

/// The database's default upper size bound: 1 TiB.
pub const DEFAULT_MAX_SIZE: u64 = 1 << 40;

/// ENOSPC (and EDQUOT, a quota's full disk), as MDBX passes the system's error code through.
const NO_SPACE: [i32; 2] = [libc::ENOSPC, libc::EDQUOT];
/// MDBX reports a short `pwritev` (the file system filled in the middle of it) as EIO. An EIO
/// with less than this free on the datadir's file system is taken for a full disk; a real
/// I/O error on a disk with room stays what it is.
const SHORT_WRITE_FREE: u64 = 16 << 20;

/// Whether MDBX's error `code` from a write in `datadir` means that its file system is full.
fn no_space(code: i32, datadir: &Path) -> bool {
    NO_SPACE.contains(&code)
        || (code == libc::EIO && free_space(datadir).is_ok_and(|free| free < SHORT_WRITE_FREE))
}

/// How a [`Database`] is opened.
#[derive(Debug, Clone, Copy)]
pub struct DatabaseOptions {
    /// The most bytes the data file may grow to (`--max-db-size`); a commit that would need
    /// more fails with [`Error::MapFull`]. An existing larger file keeps its size.
    pub max_size: u64,
}

impl Default for DatabaseOptions {
    fn default() -> Self {
        Self {
            max_size: DEFAULT_MAX_SIZE,
        }
    }
}

/// Bytes free for an unprivileged writer on the file system holding `path`.
pub fn free_space(path: &Path) -> std::io::Result<u64> {
    let path = std::ffi::CString::new(path.as_os_str().as_encoded_bytes())
        .map_err(std::io::Error::other)?;
    let mut stat = std::mem::MaybeUninit::<libc::statvfs>::uninit();
    // SAFETY: statvfs reads a NUL-terminated path and fills the struct it is given.
    let status = unsafe { libc::statvfs(path.as_ptr(), stat.as_mut_ptr()) };
    if status != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: statvfs returned 0, so it filled `stat`.
    let stat = unsafe { stat.assume_init() };
    Ok(stat.f_bavail.saturating_mul(stat.f_frsize))
}

/// Whether the benchmark asked for the old write path through the memory map
/// (`QUARRY_BENCH_WRITEMAP=1`, bench/full_disk.sh only): faster to measure against, and
/// killed by SIGBUS when the file system fills.
pub(crate) fn bench_writemap() -> bool {
    std::env::var_os("QUARRY_BENCH_WRITEMAP").is_some_and(|v| v == "1")
}

/// The page size a benchmark asked a new data file to use (`QUARRY_BENCH_PAGE_SIZE`, bytes, a
/// power of two from 256 to 65,536): fewer, larger pages make shallower trees and a shorter
/// dirty-page list for a write transaction to search, at the cost of writing more per change.
/// MDBX keeps an existing file's own page size. Any other value is refused, naming the
/// variable, before MDBX sees it.
pub(crate) fn bench_page_size() -> crate::Result<Option<usize>> {
    const VARIABLE: &str = "QUARRY_BENCH_PAGE_SIZE";
    let Some(value) = std::env::var_os(VARIABLE) else {
        return Ok(None);
    };
    page_size_setting(VARIABLE, value.to_string_lossy().into_owned()).map(Some)
}

fn page_size_setting(variable: &'static str, value: String) -> crate::Result<usize> {
    match value.parse::<usize>() {
        Ok(size) if size.is_power_of_two() && (256..=65_536).contains(&size) => Ok(size),
        _ => Err(crate::Error::BenchSetting {
            variable,
            value,
            reason: "the page size must be a power of two from 256 to 65536 bytes",
        }),
    }
}

/// Allocates the blocks of MDBX's lock file, which it writes through a shared mapping (the
/// reader table): a reader taking a slot on a page never written before would otherwise
/// fault with SIGBUS on a full file system. The file is small (tens of KiB).
pub(crate) fn reserve_lock_file(datadir: &Path) -> crate::Result<()> {
    let path = datadir.join("mdbx.lck");
    let Ok(file) = OpenOptions::new().write(true).open(&path) else {
        // A read-only datadir or another layout: MDBX reports what matters itself.
        return Ok(());
    };
    let len = file.metadata().map_or(0, |m| m.len());
    let Ok(len) = libc::off_t::try_from(len) else {
        return Ok(());
    };
    if len == 0 {
        return Ok(());
    }
    // SAFETY: fallocate only reads its integer arguments; the descriptor lives as `file` does.
    let status = unsafe { libc::fallocate(file.as_raw_fd(), 0, 0, len) };
    if status == 0 {
        return Ok(());
    }
    let err = std::io::Error::last_os_error();
    match err.raw_os_error() {
        Some(code) if NO_SPACE.contains(&code) => Err(Error::DiskFull {
            datadir: datadir.display().to_string(),
            free: free_space(datadir).unwrap_or(0),
        }),
        // A file system without fallocate (EOPNOTSUPP): nothing to reserve with.
        _ => Ok(()),
    }
}

impl Error {
    /// Whether this is a full disk or a full map (as [`Database::explain`] names them): a
    /// fault that more room cures, after which the same work can be retried from the last
    /// commit.
    pub fn is_out_of_room(&self) -> bool {
        matches!(self, Self::DiskFull { .. } | Self::MapFull { .. })
    }
}

impl Database {
    /// The datadir this database lives in.
    pub fn datadir(&self) -> &Path {
        &self.datadir
    }

    /// `err` with a full disk or a full map named as such, with the datadir, its free space
    /// and the size bound; any other error unchanged.
    pub fn explain(&self, err: Error) -> Error {
        Self::explain_at(&self.datadir, self.max_size, err)
    }

    pub(crate) fn explain_at(datadir: &Path, bound: u64, err: Error) -> Error {
        match err {
            Error::Mdbx(signet_libmdbx::MdbxError::MapFull) => Error::MapFull {
                datadir: datadir.display().to_string(),
                bound,
            },
            Error::Mdbx(signet_libmdbx::MdbxError::Other(code)) if no_space(code, datadir) => {
                Error::DiskFull {
                    datadir: datadir.display().to_string(),
                    free: free_space(datadir).unwrap_or(0),
                }
            }
            other => other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_size_setting_is_a_power_of_two_mdbx_accepts_or_named_as_wrong() {
        for size in [256, 4096, 16_384, 65_536] {
            assert_eq!(page_size_setting("V", size.to_string()).unwrap(), size);
        }
        for value in ["0", "128", "5000", "131072", "16k", ""] {
            let err = page_size_setting("V", value.to_string()).unwrap_err();
            assert_eq!(
                err.to_string(),
                format!("V={value}: the page size must be a power of two from 256 to 65536 bytes")
            );
        }
    }
}
