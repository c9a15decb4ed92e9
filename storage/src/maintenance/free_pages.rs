//! Giving MDBX's free pages back to the file system. A commit copies every page it changes and
//! frees the old copy; MDBX keeps freed pages on its free list (the GC table) for later commits
//! and never shrinks the file below its last used page. After a large commit (an import's, a
//! prune's) the free list can hold a third of the file. Those pages are punched out of the file
//! (`fallocate(PUNCH_HOLE)`), so the data file is sparse there and `du` counts only what the
//! tables hold; a later commit that reuses such a page writes it whole, and the file system
//! allocates it again.
//!
//! Only pages MDBX itself could reuse are punched: those freed by a transaction no reader's
//! snapshot and no durable meta page still needs (MDBX's own rule: a GC record's id at most the
//! oldest snapshot in use), while this process holds the write lock, so no writer takes one of
//! them meanwhile. MDBX writes a reused page with `pwrite` (quarry does not map the file for
//! writing), so a full disk then fails that commit with ENOSPC like any other write.

use crate::{Database, Error, Result};
use signet_libmdbx::ReadResult;
use std::{fs::OpenOptions, os::fd::AsRawFd};

/// What [`Database::release_free_pages`] gave back.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Released {
    /// Pages punched out of the data file (some may have been holes already).
    pub pages: u64,
    /// How much less of the file system the data file takes after.
    pub bytes: u64,
    /// The runs of consecutive pages they made, one `fallocate` each.
    pub holes: u64,
    /// Free pages left in place: freed too recently for a reader's snapshot to have let go.
    pub kept_pages: u64,
    /// The file system cannot punch holes (EOPNOTSUPP): the free pages stay allocated.
    pub unsupported: bool,
}

/// What went back, in the one wording the CLI and the follower's log share.
impl std::fmt::Display for Released {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.unsupported {
            return write!(
                f,
                "the file system cannot punch holes: MDBX's free pages stay allocated in the data file"
            );
        }
        write!(
            f,
            "gave {:.1} MB of free pages back to the file system ({} holes; {} pages still in a reader's snapshot)",
            self.bytes as f64 / 1e6,
            self.holes,
            self.kept_pages
        )
    }
}

/// The free list's pages, split by whether a reader may still see them.
#[derive(Debug, Default)]
struct FreeList {
    reusable: Vec<u32>,
    kept: u64,
}

impl Database {
    /// Punches the free list's reusable pages out of the data file (see the module's note).
    /// Waits for the write lock like a writer; on a file system without hole punching it gives
    /// back nothing and says so in [`Released::unsupported`].
    pub fn release_free_pages(&self) -> Result<Released> {
        if self.env.is_write_map() {
            // Stores through the map into a punched page would need the file system to
            // allocate it at fault time: the SIGBUS a full disk must not cause.
            return Ok(Released::default());
        }
        let writer = self.env.begin_rw_sync()?;
        // MDBX opens no GC cursor in a write transaction, and a thread holding the writer may
        // not begin a reader: the free list is read on a thread of its own while this one
        // holds the lock.
        let released = std::thread::scope(|scope| {
            scope
                .spawn(|| self.punch_reusable())
                .join()
                .unwrap_or_else(|_| Err(self.release_error("the thread punching them panicked")))
        });
        drop(writer);
        released
    }

    fn punch_reusable(&self) -> Result<Released> {
        let reader = self.env.begin_ro_unsync()?;
        let oldest = self.oldest_snapshot()?;
        let free = read_free_list(&reader, oldest)?;
        drop(reader);
        let file = OpenOptions::new()
            .write(true)
            .open(self.data_file.as_path())
            .map_err(|e| self.release_error(e))?;
        let allocated_before = self.data_file_allocated()?;
        let mut punched = 0u64;
        let runs = runs(free.reusable);
        let holes = runs.len() as u64;
        for (first, count) in runs {
            let offset = u64::from(first) * self.page_size;
            let len = count * self.page_size;
            let (Ok(offset), Ok(len)) = (libc::off_t::try_from(offset), libc::off_t::try_from(len))
            else {
                return Err(Error::Corrupt(format!(
                    "free page {first} lies beyond any file"
                )));
            };
            // SAFETY: fallocate reads only its integer arguments; the descriptor lives as
            // `file` does.
            let status = unsafe {
                libc::fallocate(
                    file.as_raw_fd(),
                    libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
                    offset,
                    len,
                )
            };
            if status != 0 {
                let err = std::io::Error::last_os_error();
                if err.raw_os_error() == Some(libc::EOPNOTSUPP) {
                    return Ok(Released {
                        unsupported: true,
                        ..Released::default()
                    });
                }
                return Err(self.release_error(err));
            }
            punched += count;
        }
        Ok(Released {
            pages: punched,
            bytes: allocated_before.saturating_sub(self.data_file_allocated()?),
            holes,
            kept_pages: free.kept,
            unsupported: false,
        })
    }

    /// The oldest snapshot any reader (in any process) holds, or the newest durable commit if
    /// that is older: free pages recorded at or below it are out of every snapshot's reach.
    fn oldest_snapshot(&self) -> Result<u64> {
        let mut info = std::mem::MaybeUninit::<signet_mdbx_sys::MDBX_envinfo>::zeroed();
        // SAFETY: the environment pointer is used only within the closure, while `self` is
        // alive; MDBX fills at most the given number of bytes of `info`.
        let code = self.env.with_raw_env_ptr(|env| unsafe {
            signet_mdbx_sys::mdbx_env_info_ex(
                env,
                std::ptr::null(),
                info.as_mut_ptr(),
                std::mem::size_of::<signet_mdbx_sys::MDBX_envinfo>(),
            )
        });
        if code != 0 {
            return Err(signet_libmdbx::MdbxError::from_err_code(code).into());
        }
        // SAFETY: mdbx_env_info_ex returned success, so it filled the struct (zeroed before).
        let info = unsafe { info.assume_init() };
        // A meta page is durable (steady) when signed with more than MDBX's "weak" mark (1).
        let steady = (0..3)
            .filter(|&i| info.mi_meta_sign[i] > 1)
            .map(|i| info.mi_meta_txnid[i])
            .max()
            .unwrap_or(0);
        Ok(info.mi_latter_reader_txnid.min(steady))
    }

    fn release_error(&self, reason: impl ToString) -> Error {
        Error::ReleasePages {
            file: self.data_file.display().to_string(),
            reason: reason.to_string(),
        }
    }
}

/// The GC table's pages: records are keyed by a transaction id (native-endian u64, ascending),
/// each value a page list (a u32 count, then that many u32 page numbers).
fn read_free_list(
    reader: &signet_libmdbx::TxUnsync<signet_libmdbx::Ro>,
    oldest: u64,
) -> Result<FreeList> {
    let mut free = FreeList::default();
    let mut cursor = reader.cursor(signet_libmdbx::Database::freelist_db())?;
    let mut iter = cursor.iter_slices();
    let mut next = || -> ReadResult<Option<(Option<u64>, Vec<u32>)>> {
        let Some((key, value)) = iter.borrow_next()? else {
            return Ok(None);
        };
        Ok(Some((u64_ne(&key), u32s_ne(&value))))
    };
    while let Some((id, list)) = next()? {
        let Some(id) = id else {
            return Err(Error::Corrupt(
                "a key of MDBX's free list is not a transaction id".into(),
            ));
        };
        let Some((&count, pages)) = list.split_first() else {
            return Err(Error::Corrupt("an empty record in MDBX's free list".into()));
        };
        if pages.len() < count as usize {
            return Err(Error::Corrupt(format!(
                "MDBX's free list record {id} names {count} pages and holds {}",
                pages.len()
            )));
        }
        let pages = &pages[..count as usize];
        if id <= oldest {
            free.reusable.extend_from_slice(pages);
        } else {
            free.kept += pages.len() as u64;
        }
    }
    Ok(free)
}

/// A GC key: a native-endian u64, or `None` when it is not 8 bytes.
fn u64_ne(bytes: &[u8]) -> Option<u64> {
    Some(u64::from_ne_bytes(bytes.try_into().ok()?))
}

fn u32s_ne(bytes: &[u8]) -> Vec<u32> {
    bytes
        .chunks_exact(4)
        .map(|c| u32::from_ne_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

/// Sorted, distinct page numbers as runs of consecutive pages: (first page, count).
fn runs(mut pages: Vec<u32>) -> Vec<(u32, u64)> {
    pages.sort_unstable();
    pages.dedup();
    let mut runs: Vec<(u32, u64)> = Vec::new();
    for page in pages {
        match runs.last_mut() {
            Some((first, count)) if u64::from(*first) + *count == u64::from(page) => *count += 1,
            _ => runs.push((page, 1)),
        }
    }
    runs
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::MetaKey;

    const KEYS: u32 = 2_000;

    fn fill(db: &Database, byte: u8) {
        let tx = db.writer().unwrap();
        for i in 0..KEYS {
            tx.put_meta(MetaKey::Scratch(i), &[byte; 1_000]).unwrap();
        }
        tx.commit().unwrap();
    }

    fn holds(tx: &crate::ReadTx, byte: u8) -> bool {
        (0..KEYS)
            .all(|i| tx.meta(MetaKey::Scratch(i)).unwrap().as_deref() == Some(&[byte; 1_000][..]))
    }

    fn allocated(db: &Database) -> u64 {
        db.space().unwrap().allocated_bytes
    }

    /// Pages an open snapshot still reads stay; once it ends they are punched out, and later
    /// commits reuse them: every value reads back as written, before and after reopening.
    #[test]
    fn punches_only_pages_no_snapshot_reads_and_later_commits_reuse_them() {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::open(dir.path()).unwrap();
        fill(&db, 1);
        let old = db.reader().unwrap();
        fill(&db, 2);
        let first = db.release_free_pages().unwrap();
        assert!(
            !first.unsupported,
            "the test's file system cannot punch holes"
        );
        // The first values' pages (2 MB) were freed under a snapshot that `old` still reads.
        assert!(first.kept_pages >= 400, "{first:?}");
        assert!(holds(&old, 1));
        drop(old);

        let before = allocated(&db);
        let second = db.release_free_pages().unwrap();
        assert!(second.pages >= 400 && second.kept_pages == 0, "{second:?}");
        assert!(second.bytes >= 400 * 4096, "{second:?}");
        assert_eq!(allocated(&db) + second.bytes, before);
        assert!(holds(&db.reader().unwrap(), 2));

        fill(&db, 3);
        fill(&db, 4);
        assert!(holds(&db.reader().unwrap(), 4));
        drop(db);
        let db = Database::open(dir.path()).unwrap();
        assert!(holds(&db.reader().unwrap(), 4));
    }

    #[test]
    fn runs_join_consecutive_pages_in_any_order() {
        assert_eq!(
            runs(vec![9, 3, 4, 5, 12, 10, 4]),
            vec![(3, 3), (9, 2), (12, 1)]
        );
        assert!(runs(Vec::new()).is_empty());
    }
}
