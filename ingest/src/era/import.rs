//! An ingest's inputs in order (RLP files, era files, folders of era files) and an era file's
//! way into the import pipeline: its checksum and format checked first, then its place in the
//! stored chain (no gap, same network, total difficulty carried on), then its blocks executed
//! and verified as any others.

use super::{Checksums, EraError, Format, Summary, era1, ere};
use crate::{Error, ImportStats, Importer, Progress, RawBlocks, Result};
use std::path::{Path, PathBuf};

/// One input of an ingest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input {
    /// A file of concatenated RLP blocks (plain or gzip).
    Rlp(PathBuf),
    /// An era file, known by its e2store version record.
    Era(PathBuf),
}

/// What an ingest reads, in order, and the checksums that vouch for its era files.
#[derive(Debug, Clone)]
pub struct EraFiles {
    pub inputs: Vec<Input>,
    pub checksums: Checksums,
    /// A published folder to import after `inputs` (`--era-url`).
    pub url: Option<String>,
}

/// The inputs `paths` name: a file as it is (an era file when its content says so), a folder
/// as its era files in name order, checked against its `checksums.txt` if it has one. The
/// bundled published lists and `lists` (`--era-checksums`) name the files they vouch for.
pub fn era_files(
    paths: &[PathBuf],
    lists: &[PathBuf],
    url: Option<String>,
) -> std::result::Result<EraFiles, EraError> {
    let mut checksums = Checksums::bundled();
    for list in lists {
        checksums.add_file(list)?;
    }
    let mut inputs = Vec::new();
    for path in paths {
        if !path.is_dir() {
            inputs.push(classify(path)?);
            continue;
        }
        let files = folder_files(path)?;
        let list = path.join("checksums.txt");
        if list.is_file() {
            checksums.add_folder_list(&list, &files)?;
        }
        inputs.extend(files.into_iter().map(Input::Era));
    }
    Ok(EraFiles {
        inputs,
        checksums,
        url,
    })
}

/// A file by its first bytes: an era file opens with the e2store version record, a file of RLP
/// blocks with a list header (or gzip's magic). An empty or unreadable file is left to the RLP
/// reader, which imports nothing from the one and names the other.
fn classify(path: &Path) -> std::result::Result<Input, EraError> {
    if super::is_e2store(path) {
        return Ok(Input::Era(path.to_path_buf()));
    }
    let mut first = [0u8; 2];
    let read = std::fs::File::open(path).and_then(|mut file| {
        use std::io::Read;
        file.read(&mut first)
    });
    match read {
        Ok(n) if n > 0 && first[0] < 0xc0 && first != [0x1f, 0x8b] => Err(EraError::File {
            path: path.display().to_string(),
            reason: format!(
                "neither an era file (it does not open with the e2store version record 65 32) nor a file of RLP blocks (its first byte is 0x{:02x}, not a list)",
                first[0]
            ),
        }),
        _ => Ok(Input::Rlp(path.to_path_buf())),
    }
}

/// A folder's era files (by content), sorted by name: era numbers are zero-padded, so that is
/// their order.
fn folder_files(dir: &Path) -> std::result::Result<Vec<PathBuf>, EraError> {
    let open_error = |source| EraError::Open {
        path: dir.display().to_string(),
        source,
    };
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(open_error)? {
        let path = entry.map_err(open_error)?.path();
        if path.is_file() && super::is_e2store(&path) {
            files.push(path);
        }
    }
    files.sort();
    if files.is_empty() {
        return Err(EraError::File {
            path: dir.display().to_string(),
            reason: "the folder holds no era files".into(),
        });
    }
    Ok(files)
}

impl Importer {
    /// Imports one input: an RLP file as [`Importer::import_file`] does, an era file after
    /// its checks.
    pub fn import_input(
        &mut self,
        input: &Input,
        checksums: &Checksums,
        progress: &mut Progress,
    ) -> Result<ImportStats> {
        match input {
            Input::Rlp(path) => self.import_file(path, progress),
            Input::Era(path) => self.import_era(path, checksums, progress),
        }
    }

    /// Imports an era1 or ere file: its published checksum (if a list names it) and every
    /// rule of its format are checked before its first block is read for import, then it
    /// must continue the stored chain; every block is then executed and verified, and the
    /// blocks before a bad one are kept.
    pub fn import_era(
        &mut self,
        path: &Path,
        checksums: &Checksums,
        progress: &mut Progress,
    ) -> Result<ImportStats> {
        checksums.verify(path)?;
        let name = path.display().to_string();
        // A file's blocks are a straight chain (the checking pass followed every parent link):
        // its coarse windows may take their state roots once each, as an RLP file's do.
        let (summary, layout) = match super::format_of(path)? {
            Format::Era1 => (era1::check(path)?, None),
            Format::Ere => ere::check(path).map(|(summary, layout)| (summary, Some(layout)))?,
        };
        self.check_continues(path, &summary)?;
        self.import_straight(Some(summary.last()), |importer| {
            let mut blocks: Box<RawBlocks<'_>> = match &layout {
                None => Box::new(era1::Era1Blocks::open(path, &summary)?),
                Some(layout) => Box::new(ere::EreBlocks::open(path, &summary, layout)?),
            };
            progress.start_range(&name, summary.first, summary.last());
            importer.import_blocks(&name, &mut *blocks, progress)
        })
    }

    /// Imports the era files a published folder offers (`--era-url`), from the one holding
    /// the block after the head on: each downloaded into `dir` while the one before it is
    /// imported, checked against its listed sha256, and removed once imported.
    pub fn import_remote(
        &mut self,
        url: &str,
        dir: &Path,
        checksums: &Checksums,
        progress: &mut Progress,
    ) -> Result<ImportStats> {
        let remote = super::download::list(url)?;
        std::fs::create_dir_all(dir).map_err(|source| EraError::Write {
            path: dir.display().to_string(),
            source,
        })?;
        let (files, fetcher) = super::download::fetch_ahead(
            remote,
            self.head().0 + 1,
            dir.to_path_buf(),
            checksums.clone(),
        );
        let mut total = ImportStats::default();
        // Each file was checked as it arrived; no list is read again.
        let checked = Checksums::default();
        let result = (|| {
            for file in files.iter() {
                let file = file?;
                let imported = self.import_era(&file, &checked, progress);
                let _ = std::fs::remove_file(&file);
                total += imported?;
            }
            Ok(total)
        })();
        // Dropping the receiver first ends a download that would wait to hand its file over.
        drop(files);
        let _ = fetcher.join();
        result
    }

    /// An era file's first block must come next after the stored head or among the stored
    /// blocks, be this network's, and carry the stored total difficulty on.
    fn check_continues(&self, path: &Path, summary: &Summary) -> Result<()> {
        let (head, _) = self.head();
        let first = summary.first;
        if first > head + 1 {
            return Err(EraError::Gap {
                path: path.display().to_string(),
                head,
                expected: head + 1,
                found: first,
            }
            .into());
        }
        let reader = self.database().reader()?;
        // Block 0 itself must be this datadir's genesis; a later file's parent its block.
        let (anchor, found) = match first.checked_sub(1) {
            None => (0, summary.hashes[0]),
            Some(parent) => (parent, summary.first_parent),
        };
        let stored = reader
            .canonical_hash(anchor)?
            .ok_or_else(|| quarry_storage::Error::Corrupt(format!("no block {anchor}")))?;
        if stored != found {
            let network = crate::stored_network(&reader)?
                .map(|name| format!(" (this datadir holds {name})"))
                .unwrap_or_default();
            return Err(EraError::OtherNetwork {
                path: path.display().to_string(),
                block: anchor,
                found,
                stored,
                network,
            }
            .into());
        }
        let Some(first_td) = summary.total_difficulties.as_ref().map(|tds| tds[0]) else {
            return Ok(());
        };
        let parent_td = match first.checked_sub(1) {
            None => alloy_primitives::U256::ZERO,
            Some(parent) => reader.total_difficulty(parent)?.ok_or_else(|| {
                quarry_storage::Error::Corrupt(format!("no total difficulty {parent}"))
            })?,
        };
        let computed = parent_td + summary.first_difficulty;
        if computed != first_td {
            return Err(EraError::TotalDifficulty {
                path: path.display().to_string(),
                block: first,
                found: first_td,
                computed,
            }
            .into());
        }
        Ok(())
    }
}

impl From<EraError> for Error {
    fn from(err: EraError) -> Self {
        Error::Read(err.into())
    }
}
