//! Hot backups: a consistent copy of a datadir as of one commit, made with MDBX's own copy
//! (`mdbx_env_copy`, which reads through one read transaction) while the writer keeps
//! committing. The copy is a datadir like any other: it serves at once, and an ingest or follow
//! resumes from its head. A compacting copy leaves out free pages and renumbers the rest; a
//! plain one has its free pages punched out once written (see `free_pages`). The
//! copy is written under a temporary name and renamed into place once whole, so a backup killed
//! midway leaves no datadir behind (and never touches the source).

use crate::{Database, Error, Result};
use alloy_primitives::B256;
use std::{ffi::CString, path::Path, time::Instant};

/// The copy's name until it is whole.
const PARTIAL: &str = "mdbx.dat.partial";

/// What a backup wrote.
#[derive(Debug, Clone, PartialEq)]
pub struct BackupReport {
    /// The copy's head block: the last block committed when the copy's read began.
    pub head: Option<(u64, B256)>,
    /// The copy's size on disk (allocated bytes of its data file).
    pub bytes: u64,
    pub seconds: f64,
}

impl Database {
    /// Copies the database into the directory `out` (created; it must not hold a datadir
    /// already), as of the last commit when the copy starts, while writers go on.
    pub fn backup(&self, out: &Path, compact: bool) -> Result<BackupReport> {
        let started = Instant::now();
        let copy_error = |reason: String| Error::Backup {
            out: out.display().to_string(),
            reason,
        };
        let target = out.join("mdbx.dat");
        if target.exists() {
            return Err(copy_error(format!(
                "{} exists: back up into a new directory",
                target.display()
            )));
        }
        std::fs::create_dir_all(out).map_err(|e| copy_error(format!("cannot create it: {e}")))?;
        // What a killed backup left: never a datadir, so written over.
        let partial = out.join(PARTIAL);
        if partial.exists() {
            std::fs::remove_file(&partial)
                .map_err(|e| copy_error(format!("cannot remove {}: {e}", partial.display())))?;
        }
        let path = CString::new(partial.as_os_str().as_encoded_bytes())
            .map_err(|_| copy_error("the path holds a NUL byte".into()))?;
        let flags = if compact {
            signet_mdbx_sys::MDBX_CP_COMPACT
        } else {
            signet_mdbx_sys::MDBX_CP_DEFAULTS
        };
        // SAFETY: the environment pointer is used only within the closure, while `self` (and
        // so the environment) is alive; `path` is a NUL-terminated string that outlives the call.
        let code = self.env.with_raw_env_ptr(|env| unsafe {
            signet_mdbx_sys::mdbx_env_copy(env, path.as_ptr(), flags)
        });
        if code != 0 {
            let _ = std::fs::remove_file(&partial);
            return Err(copy_error(format!(
                "MDBX could not copy: {}",
                signet_libmdbx::MdbxError::from_err_code(code)
            )));
        }
        // MDBX synced the copy; the rename makes it the datadir, and the directory's sync
        // makes the rename durable.
        std::fs::rename(&partial, &target)
            .map_err(|e| copy_error(format!("cannot rename the copy into place: {e}")))?;
        std::fs::File::open(out)
            .and_then(|dir| dir.sync_all())
            .map_err(|e| copy_error(format!("cannot sync the directory: {e}")))?;
        let copy = Database::open(out)?;
        if !compact {
            // The copy holds the source's free pages as written zeros (its holes too): give
            // them back, as the source did.
            copy.release_free_pages()?;
        }
        let head = copy.reader()?.head()?;
        let bytes = allocated_bytes(&target).map_err(|e| copy_error(e.to_string()))?;
        Ok(BackupReport {
            head,
            bytes,
            seconds: started.elapsed().as_secs_f64(),
        })
    }
}

/// Bytes a file occupies on disk (MDBX files are sparse: their length says less).
pub(crate) fn allocated_bytes(path: &Path) -> std::io::Result<u64> {
    use std::os::unix::fs::MetadataExt;
    Ok(std::fs::metadata(path)?.blocks() * 512)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::MetaKey;

    #[test]
    fn a_copy_holds_what_was_committed_and_refuses_an_existing_target() {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::open(&dir.path().join("live")).unwrap();
        let put = |value: &[u8]| {
            let tx = db.writer().unwrap();
            tx.put_meta(MetaKey::Scratch(0), value).unwrap();
            tx.commit().unwrap();
        };
        for compact in [false, true] {
            put(b"before");
            let out = dir.path().join(format!("copy-{compact}"));
            let report = db.backup(&out, compact).unwrap();
            assert!(report.bytes > 0);
            put(b"after");
            let copy = Database::open(&out).unwrap();
            let value = copy.reader().unwrap().meta(MetaKey::Scratch(0)).unwrap();
            assert_eq!(value.as_deref(), Some(b"before".as_slice()));
            let again = db.backup(&out, compact).unwrap_err().to_string();
            assert!(again.contains("exists"), "{again}");
        }
    }
}
