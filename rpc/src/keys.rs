//! API keys: the key store that `quarry keys` manages (a JSON file holding only keccak-256
//! hashes of keys, replaced atomically on every change) and the live key ring a running
//! server checks requests against, re-read when the file changes.

use crate::config::{ApiKey, Plan};
use alloy_primitives::{B256, keccak256};
use serde::{Deserialize, Serialize};
use std::{
    collections::HashMap,
    io::Write,
    path::{Path, PathBuf},
    sync::{Arc, PoisonError, RwLock, RwLockReadGuard},
    time::{SystemTime, UNIX_EPOCH},
};

#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    #[error("key store {path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("key store {path} is not valid: {message}")]
    Invalid { path: String, message: String },
    #[error("no key with id {0:?} in the key store")]
    UnknownId(String),
    #[error("cannot draw a random key: {0}")]
    Random(String),
}

/// One issued key, as stored: never the key itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyRecord {
    /// Names the key in logs, metrics and `quarry keys revoke`.
    pub id: String,
    pub name: String,
    pub plan: Plan,
    /// keccak256 of the key's text.
    pub hash: B256,
    /// The networks the key may use; `None`: all.
    pub networks: Option<Vec<String>>,
    /// Unix seconds.
    pub created: u64,
    /// Unix seconds; a revoked key is refused.
    pub revoked: Option<u64>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
pub struct KeyFile {
    pub keys: Vec<KeyRecord>,
}

fn io_error(path: &Path) -> impl FnOnce(std::io::Error) -> KeyError + '_ {
    move |source| KeyError::Io {
        path: path.display().to_string(),
        source,
    }
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// The hash a key is stored and looked up by.
pub fn hash_key(key: &str) -> B256 {
    keccak256(key.as_bytes())
}

/// The id shown for a key: derived from its hash, so it says nothing about the key.
fn key_id(hash: &B256) -> String {
    format!("key-{}", &alloy_primitives::hex::encode(hash)[..10])
}

impl KeyFile {
    /// The store at `path`; a missing file is an empty store.
    pub fn load(path: &Path) -> Result<Self, KeyError> {
        match std::fs::read(path) {
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| KeyError::Invalid {
                path: path.display().to_string(),
                message: e.to_string(),
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Self::default()),
            Err(e) => Err(io_error(path)(e)),
        }
    }

    /// Writes the store to a temporary file, syncs it and renames it over `path`: a reader
    /// sees the old store or the new one, never half of one.
    pub fn save(&self, path: &Path) -> Result<(), KeyError> {
        let json = serde_json::to_vec_pretty(self).map_err(|e| KeyError::Invalid {
            path: path.display().to_string(),
            message: e.to_string(),
        })?;
        let partial = path.with_extension("partial");
        let mut file = std::fs::File::create(&partial).map_err(io_error(&partial))?;
        file.write_all(&json).map_err(io_error(&partial))?;
        file.sync_all().map_err(io_error(&partial))?;
        std::fs::rename(&partial, path).map_err(io_error(path))?;
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::File::open(dir)
                .and_then(|d| d.sync_all())
                .map_err(io_error(dir))?;
        }
        Ok(())
    }

    /// Issues a new key: returns its text (shown once, never stored) and its record.
    pub fn add(
        &mut self,
        plan: Plan,
        name: String,
        networks: Option<Vec<String>>,
    ) -> Result<(String, KeyRecord), KeyError> {
        let mut secret = [0u8; 32];
        getrandom::fill(&mut secret).map_err(|e| KeyError::Random(e.to_string()))?;
        let key = alloy_primitives::hex::encode(secret);
        let hash = hash_key(&key);
        let record = KeyRecord {
            id: key_id(&hash),
            name,
            plan,
            hash,
            networks,
            created: now(),
            revoked: None,
        };
        self.keys.push(record.clone());
        Ok((key, record))
    }

    pub fn revoke(&mut self, id: &str) -> Result<&KeyRecord, KeyError> {
        let record = self
            .keys
            .iter_mut()
            .find(|k| k.id == id)
            .ok_or_else(|| KeyError::UnknownId(id.to_string()))?;
        record.revoked.get_or_insert_with(now);
        Ok(record)
    }
}

/// What a request's key allows, attached to the request once its key is accepted.
#[derive(Debug, Clone)]
pub struct KeyGrant {
    pub id: Arc<str>,
    pub hash: B256,
    pub plan: Plan,
    /// The networks it may use, by name; `None`: all.
    pub networks: Option<Arc<[String]>>,
}

impl KeyGrant {
    pub fn allows(&self, network: &str) -> bool {
        self.networks
            .as_ref()
            .is_none_or(|names| names.iter().any(|n| n == network))
    }
}

/// The keys a running server accepts: the config's, and the key store's as last read.
#[derive(Debug)]
pub struct KeyRing {
    config_keys: HashMap<B256, KeyGrant>,
    file: Option<PathBuf>,
    stored: RwLock<StoredKeys>,
}

#[derive(Debug, Default)]
struct StoredKeys {
    modified: Option<SystemTime>,
    keys: HashMap<B256, KeyGrant>,
}

impl KeyRing {
    pub fn new(config_keys: &[ApiKey], file: Option<PathBuf>) -> Result<Self, KeyError> {
        let config_keys = config_keys
            .iter()
            .map(|key| {
                let hash = hash_key(&key.key);
                let grant = KeyGrant {
                    id: key_id(&hash).into(),
                    hash,
                    plan: key.plan,
                    networks: key.networks.clone().map(Into::into),
                };
                (hash, grant)
            })
            .collect();
        let ring = Self {
            config_keys,
            file,
            stored: RwLock::default(),
        };
        ring.refresh()?;
        Ok(ring)
    }

    /// The grant of `key`, if it is a live key. The key is hashed and found by its hash; the
    /// hashes are then compared in constant time, so timing says nothing about stored keys.
    pub fn grant(&self, key: &str) -> Option<KeyGrant> {
        let hash = hash_key(key);
        let found = match self.config_keys.get(&hash) {
            Some(grant) => Some(grant.clone()),
            None => self.stored().keys.get(&hash).cloned(),
        };
        found.filter(|grant| constant_time_eq(&grant.hash, &hash))
    }

    /// Whether a key accepted earlier is still live (a WebSocket checks this per call).
    pub fn is_live(&self, grant: &KeyGrant) -> bool {
        self.config_keys.contains_key(&grant.hash) || self.stored().keys.contains_key(&grant.hash)
    }

    /// Re-reads the key store if it changed since the last read. Blocking: file I/O.
    pub fn refresh(&self) -> Result<(), KeyError> {
        let Some(path) = &self.file else {
            return Ok(());
        };
        let modified = std::fs::metadata(path).and_then(|m| m.modified()).ok();
        let unchanged = modified.is_some() && self.stored().modified == modified;
        if unchanged {
            return Ok(());
        }
        let keys = KeyFile::load(path)?
            .keys
            .into_iter()
            .filter(|record| record.revoked.is_none())
            .map(|record| {
                let grant = KeyGrant {
                    id: record.id.into(),
                    hash: record.hash,
                    plan: record.plan,
                    networks: record.networks.map(Into::into),
                };
                (record.hash, grant)
            })
            .collect();
        *self.stored.write().unwrap_or_else(PoisonError::into_inner) =
            StoredKeys { modified, keys };
        Ok(())
    }

    /// The key store as last read.
    fn stored(&self) -> RwLockReadGuard<'_, StoredKeys> {
        self.stored.read().unwrap_or_else(PoisonError::into_inner)
    }

    /// How many keys are live.
    pub fn len(&self) -> usize {
        self.config_keys.len() + self.stored().keys.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

fn constant_time_eq(a: &B256, b: &B256) -> bool {
    a.iter()
        .zip(b.iter())
        .fold(0u8, |diff, (x, y)| diff | (x ^ y))
        == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_round_trip_through_the_store_as_hashes_only() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("keys.json");
        let mut store = KeyFile::load(&path).unwrap();
        let (key, record) = store
            .add(Plan::Growth, "alice".into(), Some(vec!["main".into()]))
            .unwrap();
        assert_eq!(key.len(), 64);
        store.save(&path).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(!text.contains(&key), "the key itself must not be stored");
        assert!(text.contains(&record.id));

        let ring = KeyRing::new(&[], Some(path.clone())).unwrap();
        let grant = ring.grant(&key).unwrap();
        assert_eq!(grant.plan, Plan::Growth);
        assert!(grant.allows("main") && !grant.allows("other"));
        assert!(ring.grant("not-a-key").is_none());

        let mut store = KeyFile::load(&path).unwrap();
        store.revoke(&record.id).unwrap();
        assert!(matches!(
            store.revoke("key-nope"),
            Err(KeyError::UnknownId(_))
        ));
        // A different modification time is what the ring looks for; make sure it moves.
        std::thread::sleep(std::time::Duration::from_millis(20));
        store.save(&path).unwrap();
        ring.refresh().unwrap();
        assert!(ring.grant(&key).is_none());
        assert!(!ring.is_live(&grant));
    }
}
