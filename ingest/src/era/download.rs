//! `quarry ingest --era-url URL`: a published folder of era files read over HTTP(S), as reth's
//! `import-era --url` reads one: the file names from its index page, each file's sha256 from
//! the `checksums.txt` beside it (line N for era N) or from a published list naming it. Files
//! are downloaded one ahead of the import, checked before any of their blocks is read, and
//! removed once imported, so the disk holds at most two of them.

use super::{BLOCKS_PER_ERA, Checksums, EraError};
use sha2::{Digest, Sha256};
use std::{
    io::{Read, Write},
    path::{Path, PathBuf},
    sync::mpsc,
    time::Duration,
};

/// One file of the published folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteFile {
    pub name: String,
    pub era: u64,
    pub url: String,
    /// The sha256 `checksums.txt` lists for its era, if it has that line.
    pub sha256: Option<[u8; 32]>,
}

/// The era files a published folder offers, in era order.
#[derive(Debug, Clone)]
pub struct Remote {
    pub base: String,
    pub files: Vec<RemoteFile>,
}

fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .timeout_connect(Some(Duration::from_secs(30)))
        .timeout_per_read(Some(Duration::from_secs(60)))
        .build()
        .into()
}

fn unreachable(url: &str, reason: impl std::fmt::Display) -> EraError {
    EraError::File {
        path: url.to_string(),
        reason: format!("cannot read it: {reason}"),
    }
}

fn get_text(agent: &ureq::Agent, url: &str) -> Result<String, EraError> {
    agent
        .get(url)
        .call()
        .map_err(|e| unreachable(url, e))?
        .body_mut()
        .with_config()
        .limit(64 << 20)
        .read_to_string()
        .map_err(|e| unreachable(url, e))
}

/// The folder at `url` (its index page, or the folder itself): the era files its page links,
/// with the sums of the `checksums.txt` beside them.
pub fn list(url: &str) -> Result<Remote, EraError> {
    let agent = agent();
    // A page's folder is what its name ends; a folder's URL is the folder.
    let path_at = url.find("://").map_or(0, |scheme| scheme + 3);
    let base = match url.rfind('/').filter(|&slash| slash >= path_at) {
        Some(slash) if url[slash + 1..].contains('.') => url[..=slash].to_string(),
        _ if url.ends_with('/') => url.to_string(),
        _ => format!("{url}/"),
    };
    // A folder's URL may answer with its listing, or only its index.html may.
    let page = match get_text(&agent, url) {
        Err(_) if url.ends_with('/') => get_text(&agent, &format!("{url}index.html"))?,
        page => page?,
    };
    let mut files: Vec<RemoteFile> = linked_era_files(&page)
        .into_iter()
        .filter_map(|name| {
            let era = era_of(&name)?;
            Some(RemoteFile {
                url: format!("{base}{name}"),
                name,
                era,
                sha256: None,
            })
        })
        .collect();
    files.sort_by_key(|file| file.era);
    files.dedup_by_key(|file| file.era);
    if files.is_empty() {
        return Err(EraError::File {
            path: url.to_string(),
            reason: "the page links no era1 or ere files".into(),
        });
    }
    let list_url = format!("{base}checksums.txt");
    // A folder without the list still serves files a published list names.
    if let Ok(text) = get_text(&agent, &list_url) {
        let sums: Vec<&str> = text
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .collect();
        for file in &mut files {
            let Some(line) = usize::try_from(file.era).ok().and_then(|era| sums.get(era)) else {
                continue;
            };
            let mut sum = [0u8; 32];
            alloy_primitives::hex::decode_to_slice(line.trim_start_matches("0x"), &mut sum)
                .map_err(|_| EraError::File {
                    path: list_url.clone(),
                    reason: format!("line {}: {line:?} is not a sha256", file.era + 1),
                })?;
            file.sha256 = Some(sum);
        }
    }
    Ok(Remote { base, files })
}

/// The file names an index page links to that end as era files do.
fn linked_era_files(page: &str) -> Vec<String> {
    page.split("href=")
        .skip(1)
        .filter_map(|rest| {
            let quote = rest.chars().next().filter(|c| *c == '"' || *c == '\'')?;
            let link = rest[1..].split(quote).next()?;
            let name = link.rsplit('/').next()?;
            [".era1", ".ere", ".erae"]
                .iter()
                .any(|ext| name.ends_with(ext))
                .then(|| name.to_string())
        })
        .collect()
}

/// The era a file's name gives: `<network>-<era>-...`.
fn era_of(name: &str) -> Option<u64> {
    name.split('-').nth(1)?.parse().ok()
}

/// Downloads `file` into `dir`, checking its sha256 against the folder's list and a published
/// list naming it: a file no list vouches for is refused.
pub fn download(file: &RemoteFile, dir: &Path, checksums: &Checksums) -> Result<PathBuf, EraError> {
    let listed = checksums.expected(&file.name);
    if file.sha256.is_none() && listed.is_none() {
        return Err(EraError::File {
            path: file.url.clone(),
            reason: "neither the folder's checksums.txt nor a published list gives its sha256"
                .into(),
        });
    }
    let path = dir.join(&file.name);
    let partial = dir.join(format!(".{}.partial", file.name));
    let write_error = |source| EraError::Write {
        path: partial.display().to_string(),
        source,
    };
    let mut response = agent()
        .get(&file.url)
        .call()
        .map_err(|e| unreachable(&file.url, e))?;
    let mut body = response.body_mut().as_reader();
    let mut out = std::fs::File::create(&partial).map_err(write_error)?;
    let mut hasher = Sha256::new();
    let mut buffer = vec![0u8; 1 << 20];
    loop {
        let read = body
            .read(&mut buffer)
            .map_err(|e| unreachable(&file.url, e))?;
        if read == 0 {
            break;
        }
        hasher.update(&buffer[..read]);
        out.write_all(&buffer[..read]).map_err(write_error)?;
    }
    out.sync_all().map_err(write_error)?;
    let found: [u8; 32] = hasher.finalize().into();
    for (expected, list) in [
        (
            file.sha256,
            format!(
                "{}checksums.txt",
                &file.url[..file.url.len() - file.name.len()]
            ),
        ),
        (
            listed.map(|(sum, _)| sum),
            listed.map(|(_, list)| list.to_string()).unwrap_or_default(),
        ),
    ] {
        if let Some(expected) = expected
            && expected != found
        {
            let _ = std::fs::remove_file(&partial);
            return Err(EraError::Checksum {
                path: file.url.clone(),
                name: file.name.clone(),
                list,
                expected: alloy_primitives::hex::encode(expected),
                found: alloy_primitives::hex::encode(found),
            });
        }
    }
    std::fs::rename(&partial, &path).map_err(write_error)?;
    Ok(path)
}

/// Downloads the folder's files from the one holding block `next_block` on, one ahead of
/// whoever receives them; the thread stops at the first failure, after sending it.
pub fn fetch_ahead(
    remote: Remote,
    next_block: u64,
    dir: PathBuf,
    checksums: Checksums,
) -> (
    mpsc::Receiver<Result<PathBuf, EraError>>,
    std::thread::JoinHandle<()>,
) {
    // A rendezvous: the next file downloads while this one imports, and waits there.
    let (sender, receiver) = mpsc::sync_channel(0);
    let first_era = next_block / BLOCKS_PER_ERA;
    let handle = std::thread::spawn(move || {
        for file in remote.files.iter().filter(|f| f.era >= first_era) {
            let result = download(file, &dir, &checksums);
            let failed = result.is_err();
            if sender.send(result).is_err() || failed {
                return;
            }
        }
    });
    (receiver, handle)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_index_page_names_its_era_files() {
        let page = r#"<a href="mainnet-00001-a5364e9a.era1">x</a> <a href='checksums.txt'>
            <a href="/era1/mainnet-00000-5ec1ffb8.era1">y</a><a href="1337-00002-27dc2471-noproofs.ere">"#;
        assert_eq!(
            linked_era_files(page),
            [
                "mainnet-00001-a5364e9a.era1",
                "mainnet-00000-5ec1ffb8.era1",
                "1337-00002-27dc2471-noproofs.ere"
            ]
        );
        assert_eq!(era_of("mainnet-00001-a5364e9a.era1"), Some(1));
        assert_eq!(era_of("1337-00002-27dc2471-noproofs.ere"), Some(2));
        assert_eq!(era_of("checksums.txt"), None);
    }
}
