//! Warming the data file's unused tail for a long write.
//!
//! MDBX grows its data file in steps, leaving a hole past the pages in use. The first write to
//! a page of that hole costs the writing thread the page's allocation and zeroing in the page
//! cache: either in MDBX's prefault write (a `pwrite` of zeros, when the page is not resident)
//! or in a page fault. A [`TailWarmer`] asks the kernel, from a thread of its own, to read the
//! hole ahead of the writer, which puts it in the page cache (reading a hole zero-fills pages
//! without I/O, and read-ahead copies nothing to the process), so that the writer finds the
//! pages resident: MDBX skips their prefault, and the writer's fault only maps a page that is
//! already there. It never writes to the file, so it cannot change what the database holds.

use signet_libmdbx::Environment;
use std::{
    fs::File,
    os::fd::AsRawFd,
    path::Path,
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    thread::JoinHandle,
    time::Duration,
};

/// How much the warmer reads ahead at a time: the kernel reads ahead at most the device's
/// read-ahead size (128 KiB by default) per request, whatever the length asked.
const CHUNK: u64 = 128 << 10;
/// How often the warmer looks for a grown file.
const POLL: Duration = Duration::from_millis(20);

/// Keeps the data file's tail warm until dropped (see the module's documentation).
#[derive(Debug)]
pub struct TailWarmer {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl TailWarmer {
    /// `page_size` is MDBX's: the warmer must not ask the environment for it, which with a write
    /// transaction open in this process reads that transaction from this thread.
    pub(crate) fn start(env: Environment, data_file: &Path, page_size: u64) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let file = File::open(data_file);
        let thread = file.ok().and_then(|file| {
            let stop = stop.clone();
            std::thread::Builder::new()
                .name("warm-tail".into())
                .spawn(move || warm(&env, &file, &stop, page_size))
                .ok()
        });
        Self { stop, thread }
    }
}

impl Drop for TailWarmer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            thread.thread().unpark();
            let _ = thread.join();
        }
    }
}

/// Reads ahead every byte of the file past the last commit's pages that it has not read ahead
/// yet, each time the file grows. Failures only mean the writer warms its own pages, as it
/// would without this thread, so they end the thread quietly.
fn warm(env: &Environment, file: &File, stop: &AtomicBool, page_size: u64) {
    let mut warmed = 0u64;
    while !stop.load(Ordering::Relaxed) {
        let (Ok(info), Ok(meta)) = (env.info(), file.metadata()) else {
            return;
        };
        let in_use = (info.last_pgno() as u64 + 1) * page_size;
        warmed = warmed.max(in_use);
        let end = meta.len();
        while warmed < end && !stop.load(Ordering::Relaxed) {
            let len = (end - warmed).min(CHUNK);
            let (Ok(offset), Ok(len)) = (i64::try_from(warmed), i64::try_from(len)) else {
                return;
            };
            // SAFETY: posix_fadvise only reads its integer arguments; the descriptor is open
            // for as long as `file` lives.
            let status = unsafe {
                libc::posix_fadvise(file.as_raw_fd(), offset, len, libc::POSIX_FADV_WILLNEED)
            };
            if status != 0 {
                return;
            }
            warmed += len as u64;
        }
        std::thread::park_timeout(POLL);
    }
}

#[cfg(test)]
mod tests {
    use crate::{Database, Table};
    use std::{fs::File, os::fd::AsRawFd};

    /// The operating system's page size, mincore's unit.
    fn os_page() -> u64 {
        // SAFETY: sysconf only reads its argument.
        u64::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap()
    }

    /// How many of the pages of `file` in `range` (bytes, page-aligned) are in the page cache.
    fn resident_pages(file: &File, range: std::ops::Range<u64>) -> usize {
        let page = os_page() as usize;
        let len = (range.end - range.start) as usize;
        // SAFETY: a fresh read-only shared mapping of the file's range, unmapped below; mincore
        // writes one byte per page into a vector of that many bytes.
        unsafe {
            let map = libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ,
                libc::MAP_SHARED,
                file.as_raw_fd(),
                range.start as libc::off_t,
            );
            assert_ne!(map, libc::MAP_FAILED);
            let mut residency = vec![0u8; len.div_ceil(page)];
            assert_eq!(libc::mincore(map, len, residency.as_mut_ptr()), 0);
            libc::munmap(map, len);
            residency.iter().filter(|&&byte| byte & 1 == 1).count()
        }
    }

    #[test]
    fn the_tail_past_the_pages_in_use_becomes_resident_and_the_data_stays() {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::open(dir.path()).unwrap();
        let tx = db.writer().unwrap();
        for i in 0u32..20_000 {
            tx.put(Table::Bytecodes, &i.to_be_bytes(), &[i as u8; 200])
                .unwrap();
        }
        tx.commit().unwrap();
        let file = File::open(dir.path().join("mdbx.dat")).unwrap();
        let mdbx_page = u64::from(db.env.stat().unwrap().page_size());
        let in_use = (db.env.info().unwrap().last_pgno() as u64 + 1) * mdbx_page;
        let end = file.metadata().unwrap().len();
        assert!(end > in_use + (1 << 20), "the file has a tail to warm");
        // Drop the file's pages from the page cache first: clean ones go, so the tail's do.
        // SAFETY: posix_fadvise only reads its arguments.
        unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
        let tail = in_use.next_multiple_of(os_page())..end;
        let before = resident_pages(&file, tail.clone());

        let warmer = db.warm_tail();
        let pages = ((tail.end - tail.start) / os_page()) as usize;
        // A bound for a stuck warmer, not a timing: on a loaded CI machine reading 256 MiB ahead
        // has taken more than 20 s.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
        // The most pages seen resident at once: the kernel may evict clean pages again at any
        // time on a busy machine (a few dozen went between two looks in one CI run), so what
        // the warmer must do is bring them all in, not keep them.
        let mut most = before;
        while most < pages && std::time::Instant::now() < deadline {
            most = most.max(resident_pages(&file, tail.clone()));
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        drop(warmer);
        assert!(
            before < pages,
            "the tail was not resident before: {before} of {pages}"
        );
        assert!(
            most * 100 >= pages * 99,
            "at most {most} of the tail's {pages} pages were resident at once"
        );

        let tx = db.writer().unwrap();
        for i in 20_000u32..40_000 {
            tx.put(Table::Bytecodes, &i.to_be_bytes(), &[i as u8; 200])
                .unwrap();
        }
        tx.commit().unwrap();
        let read = db.reader().unwrap();
        for i in (0u32..40_000).step_by(997) {
            let value = read
                .get(Table::Bytecodes, &i.to_be_bytes())
                .unwrap()
                .unwrap();
            assert_eq!(&*value, &[i as u8; 200][..]);
        }
    }
}
