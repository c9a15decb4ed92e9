//! The sha256 sums that vouch for era files: go-ethereum's published lists (bundled, one
//! `<sha256>  <file name>` a line), lists given with `--era-checksums` in that form, and a
//! folder's own `checksums.txt` as geth and reth write it (one 0x-prefixed sha256 a line, in
//! the order of the folder's files).

use super::EraError;
use sha2::{Digest, Sha256};
use std::{
    collections::HashMap,
    io::Read,
    path::{Path, PathBuf},
};

const MAINNET: &str = include_str!("../../res/era1/checksums_mainnet.txt");
const SEPOLIA: &str = include_str!("../../res/era1/checksums_sepolia.txt");

/// A file's expected sha256, by file name, with the list that gave it.
#[derive(Debug, Clone, Default)]
pub struct Checksums {
    by_name: HashMap<String, ([u8; 32], String)>,
}

impl Checksums {
    /// The published lists of mainnet's and Sepolia's era1 files.
    pub fn bundled() -> Self {
        let mut checksums = Self::default();
        for (text, list) in [
            (MAINNET, "the published mainnet era1 checksums"),
            (SEPOLIA, "the published Sepolia era1 checksums"),
        ] {
            // The bundled lists are parsed by a test; a bad line here cannot reach a user.
            let _ = checksums.add_named_list(text, list);
        }
        checksums
    }

    /// Adds a list of `<sha256>  <file name>` lines (`--era-checksums FILE`).
    pub fn add_file(&mut self, path: &Path) -> Result<(), EraError> {
        let text = std::fs::read_to_string(path).map_err(|source| EraError::Open {
            path: path.display().to_string(),
            source,
        })?;
        self.add_named_list(&text, &path.display().to_string())
            .map_err(|(line, reason)| EraError::File {
                path: path.display().to_string(),
                reason: format!("line {line}: {reason}"),
            })
    }

    fn add_named_list(&mut self, text: &str, list: &str) -> Result<(), (usize, String)> {
        for (number, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let mut fields = line.split_whitespace();
            let (Some(sum), Some(name), None) = (fields.next(), fields.next(), fields.next())
            else {
                return Err((number + 1, "expected `<sha256>  <file name>`".into()));
            };
            let sum = parse_sum(sum).map_err(|reason| (number + 1, reason))?;
            self.by_name
                .insert(name.to_string(), (sum, list.to_string()));
        }
        Ok(())
    }

    /// Adds a folder's `checksums.txt` (one 0x-prefixed sha256 a line), matched in order with
    /// `files`, the folder's era files sorted by name.
    pub fn add_folder_list(&mut self, list: &Path, files: &[PathBuf]) -> Result<(), EraError> {
        let text = std::fs::read_to_string(list).map_err(|source| EraError::Open {
            path: list.display().to_string(),
            source,
        })?;
        let invalid = |reason: String| EraError::File {
            path: list.display().to_string(),
            reason,
        };
        let sums: Vec<&str> = text
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .collect();
        if sums.len() != files.len() {
            return Err(invalid(format!(
                "lists {} checksums for the folder's {} era files",
                sums.len(),
                files.len()
            )));
        }
        for (line, (sum, file)) in sums.iter().zip(files).enumerate() {
            let sum = parse_sum(sum).map_err(|e| invalid(format!("line {}: {e}", line + 1)))?;
            let name = file_name(file);
            self.by_name.insert(name, (sum, list.display().to_string()));
        }
        Ok(())
    }

    /// Checks `path` against the sum listed for its name; a file no list names passes.
    pub fn verify(&self, path: &Path) -> Result<(), EraError> {
        let name = file_name(path);
        let Some((expected, list)) = self.by_name.get(&name) else {
            return Ok(());
        };
        let found = sha256_file(path)?;
        if &found != expected {
            return Err(EraError::Checksum {
                path: path.display().to_string(),
                name,
                list: list.clone(),
                expected: alloy_primitives::hex::encode(expected),
                found: alloy_primitives::hex::encode(found),
            });
        }
        Ok(())
    }

    /// The sha256 a list gives for a file of this name, and the list.
    pub fn expected(&self, name: &str) -> Option<([u8; 32], &str)> {
        self.by_name
            .get(name)
            .map(|(sum, list)| (*sum, list.as_str()))
    }

    pub fn len(&self) -> usize {
        self.by_name.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_name.is_empty()
    }
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default()
}

fn parse_sum(text: &str) -> Result<[u8; 32], String> {
    let hex = text.strip_prefix("0x").unwrap_or(text);
    let mut sum = [0u8; 32];
    alloy_primitives::hex::decode_to_slice(hex, &mut sum)
        .map_err(|_| format!("{text:?} is not a sha256 in hex"))?;
    Ok(sum)
}

/// The sha256 of a file, read in 1 MiB pieces.
pub fn sha256_file(path: &Path) -> Result<[u8; 32], EraError> {
    let open_error = |source| EraError::Open {
        path: path.display().to_string(),
        source,
    };
    let mut file = std::fs::File::open(path).map_err(open_error)?;
    let mut hasher = Sha256::new();
    let mut buffer = vec![0u8; 1 << 20];
    loop {
        let read = file.read(&mut buffer).map_err(open_error)?;
        if read == 0 {
            break;
        }
        hasher.update(&buffer[..read]);
    }
    Ok(hasher.finalize().into())
}

/// A folder's `checksums.txt` as geth and reth write it: one 0x-prefixed sha256 a line, in
/// the order of `files`.
pub fn folder_list(files: &[PathBuf]) -> Result<String, EraError> {
    let mut out = String::new();
    for file in files {
        out.push_str("0x");
        out.push_str(&alloy_primitives::hex::encode(sha256_file(file)?));
        out.push('\n');
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bundled_lists_parse_whole() {
        let mut checksums = Checksums::default();
        checksums.add_named_list(MAINNET, "mainnet").unwrap();
        assert_eq!(checksums.len(), 1897);
        checksums.add_named_list(SEPOLIA, "sepolia").unwrap();
        assert_eq!(checksums.len(), 1897 + 183);
        assert_eq!(Checksums::bundled().len(), checksums.len());
    }

    #[test]
    fn a_bad_line_is_named() {
        let mut checksums = Checksums::default();
        let err = checksums.add_named_list("abc\n", "list").unwrap_err();
        assert_eq!(err.0, 1);
        let err = checksums
            .add_named_list("\nzz  a.era1\n", "list")
            .unwrap_err();
        assert_eq!(err.0, 2);
    }
}
