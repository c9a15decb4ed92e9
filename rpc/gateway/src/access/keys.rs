//! API keys: the key store that `quarry keys` manages, holding only keccak-256 hashes of keys
//! and each key's allowlists (a JSON file replaced atomically on every change, or a hash in
//! Redis that every replica reads), and the live key ring a running server checks requests
//! against, re-read when the store changes.

use crate::{
    access::allowlists::KeyAllowlists,
    access::key_jwts::{JwtKeys, JwtPublicKey, MAX_JWT_KEYS, TokenGrant},
    access::key_secrets::constant_time_eq,
    config::{ApiKey, Plan},
};
use alloy_primitives::{B256, keccak256};
use serde::{Deserialize, Serialize};
use std::{
    collections::{BTreeMap, HashMap},
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
    #[error("key store in Redis: {0}")]
    Redis(String),
    #[error("allowlists: {0}")]
    Allowlists(String),
    #[error("secret: {0}")]
    Secret(String),
    #[error("JWT: {0}")]
    Jwt(String),
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
    /// What the key is restricted to (none: everything).
    #[serde(default, skip_serializing_if = "KeyAllowlists::is_empty")]
    pub allow: KeyAllowlists,
    /// The hash of the key's secret, if it has one (`key_secrets`); never the secret.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_hash: Option<B256>,
    /// Requests without the secret are refused.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub require_secret: bool,
    /// The public keys its JWTs are signed with, by name (the tokens' `kid`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub jwt_keys: BTreeMap<String, JwtPublicKey>,
    /// Requests without a valid JWT (or the key's secret) are refused.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub require_jwt: bool,
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

/// A change of a key's JWT public keys: `add` adds (or replaces) keys by name, `remove` removes
/// them, and `require` says whether requests must carry a valid token. The same rules hold for
/// a new key (`KeySource::add`) and an existing one (`KeySource::set_jwt`).
#[derive(Debug, Default)]
pub struct JwtChange {
    pub add: Vec<(String, JwtPublicKey)>,
    pub remove: Vec<String>,
    pub require: Option<bool>,
}

impl JwtChange {
    fn apply(self, record: &mut KeyRecord) -> Result<(), KeyError> {
        for (name, _) in &self.add {
            crate::access::key_jwts::check_name(name).map_err(|e| KeyError::Jwt(e.to_string()))?;
        }
        for name in &self.remove {
            if record.jwt_keys.remove(name).is_none() {
                return Err(KeyError::Jwt(format!(
                    "the key has no public key named {name:?}"
                )));
            }
        }
        record.jwt_keys.extend(self.add);
        if record.jwt_keys.len() > MAX_JWT_KEYS {
            return Err(KeyError::Jwt(format!(
                "{} public keys: a key holds at most {MAX_JWT_KEYS}",
                record.jwt_keys.len()
            )));
        }
        if let Some(require) = self.require {
            record.require_jwt = require;
        }
        if record.require_jwt && record.jwt_keys.is_empty() {
            return Err(KeyError::Jwt(
                "a key that requires a JWT needs a public key to verify it: give it --jwt-key NAME=PEMFILE".into(),
            ));
        }
        JwtKeys::parse(&record.id, &record.jwt_keys)
            .map_err(|(name, e)| KeyError::Jwt(format!("public key {name:?}: {e}")))?;
        Ok(())
    }
}

/// A new random key and its record.
fn new_key(
    plan: Plan,
    name: String,
    networks: Option<Vec<String>>,
    allow: KeyAllowlists,
    jwt: JwtChange,
) -> Result<(String, KeyRecord), KeyError> {
    allow.check().map_err(KeyError::Allowlists)?;
    let mut secret = [0u8; 32];
    getrandom::fill(&mut secret).map_err(|e| KeyError::Random(e.to_string()))?;
    let key = alloy_primitives::hex::encode(secret);
    let hash = hash_key(&key);
    let mut record = KeyRecord {
        id: key_id(&hash),
        name,
        plan,
        hash,
        networks,
        created: now(),
        revoked: None,
        allow,
        secret_hash: None,
        require_secret: false,
        jwt_keys: BTreeMap::new(),
        require_jwt: false,
    };
    jwt.apply(&mut record)?;
    Ok((key, record))
}

/// The Redis hash holding every key's record (JSON) by id.
const REDIS_KEYS: &str = "quarry:keys";
/// Incremented with every change to `REDIS_KEYS`, so replicas re-read it only when it changed.
const REDIS_KEYS_VERSION: &str = "quarry:keys:version";

/// The key store in Redis (`keys_store`). Blocking: one connection, with timeouts.
pub struct RedisKeys {
    client: redis::Client,
    timeout: std::time::Duration,
    connection: std::sync::Mutex<Option<redis::Connection>>,
}

impl std::fmt::Debug for RedisKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisKeys")
            .field("server", &self.client.get_connection_info().addr())
            .finish_non_exhaustive()
    }
}

impl RedisKeys {
    pub fn open(url: &str, timeout: std::time::Duration) -> Result<Self, KeyError> {
        let client =
            redis::Client::open(url).map_err(|e| KeyError::Redis(format!("{url}: {e}")))?;
        Ok(Self {
            client,
            timeout,
            connection: std::sync::Mutex::default(),
        })
    }

    /// Runs `work` on the connection (made on first use, and again after a failure).
    fn with<T>(
        &self,
        work: impl FnOnce(&mut redis::Connection) -> redis::RedisResult<T>,
    ) -> Result<T, KeyError> {
        let mut slot = self
            .connection
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let connection = match slot.as_mut() {
            Some(connection) => connection,
            None => {
                let connection = self
                    .client
                    .get_connection_with_timeout(self.timeout)
                    .map_err(|e| KeyError::Redis(e.to_string()))?;
                connection
                    .set_read_timeout(Some(self.timeout))
                    .and_then(|()| connection.set_write_timeout(Some(self.timeout)))
                    .map_err(|e| KeyError::Redis(e.to_string()))?;
                slot.insert(connection)
            }
        };
        work(connection).map_err(|e| {
            *slot = None;
            KeyError::Redis(e.to_string())
        })
    }

    fn version(&self) -> Result<u64, KeyError> {
        self.with(|c| {
            redis::cmd("GET")
                .arg(REDIS_KEYS_VERSION)
                .query::<Option<u64>>(c)
        })
        .map(Option::unwrap_or_default)
    }

    pub fn records(&self) -> Result<Vec<KeyRecord>, KeyError> {
        let values: Vec<String> = self.with(|c| redis::cmd("HVALS").arg(REDIS_KEYS).query(c))?;
        let mut records: Vec<KeyRecord> = values
            .iter()
            .map(|json| {
                serde_json::from_str(json).map_err(|e| {
                    KeyError::Redis(format!("a record in {REDIS_KEYS} is not valid: {e}"))
                })
            })
            .collect::<Result<_, _>>()?;
        records.sort_by(|a, b| (a.created, &a.id).cmp(&(b.created, &b.id)));
        Ok(records)
    }

    /// Writes `record` and moves the version on, in one transaction.
    fn put(&self, record: &KeyRecord) -> Result<(), KeyError> {
        let json = serde_json::to_string(record).map_err(|e| KeyError::Redis(e.to_string()))?;
        self.with(|c| {
            redis::pipe()
                .atomic()
                .hset(REDIS_KEYS, &record.id, json)
                .ignore()
                .incr(REDIS_KEYS_VERSION, 1)
                .ignore()
                .query::<()>(c)
        })
    }

    fn get(&self, id: &str) -> Result<Option<KeyRecord>, KeyError> {
        let json: Option<String> =
            self.with(|c| redis::cmd("HGET").arg(REDIS_KEYS).arg(id).query(c))?;
        json.map(|json| {
            serde_json::from_str(&json)
                .map_err(|e| KeyError::Redis(format!("record {id} is not valid: {e}")))
        })
        .transpose()
    }
}

/// Where `quarry keys` writes keys and a server reads them: a JSON file or Redis.
#[derive(Debug)]
pub enum KeySource {
    File(PathBuf),
    Redis(Box<RedisKeys>),
}

/// How long `quarry keys` waits for Redis.
const CLI_REDIS_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

impl KeySource {
    /// The config's key store: `keys_store` (Redis) or `keys_file`, if either is set.
    pub fn of(config: &crate::Config) -> Result<Option<Self>, String> {
        if let Some(url) = &config.keys_store {
            let timeout = std::time::Duration::from_millis(config.redis_timeout_ms.max(200));
            return RedisKeys::open(url, timeout)
                .map(|keys| Some(Self::Redis(Box::new(keys))))
                .map_err(|e| e.to_string());
        }
        Ok(config.keys_file.clone().map(Self::File))
    }

    /// `quarry keys --store`: a `redis://` URL or a file path.
    pub fn parse(store: &str) -> Result<Self, KeyError> {
        if store.starts_with("redis://")
            || store.starts_with("rediss://")
            || store.starts_with("redis+unix://")
        {
            RedisKeys::open(store, CLI_REDIS_TIMEOUT).map(|keys| Self::Redis(Box::new(keys)))
        } else {
            Ok(Self::File(PathBuf::from(store)))
        }
    }

    /// Issues a new key and stores its record: returns the key's text (shown once) and record.
    pub fn add(
        &self,
        plan: Plan,
        name: String,
        networks: Option<Vec<String>>,
        allow: KeyAllowlists,
        jwt: JwtChange,
    ) -> Result<(String, KeyRecord), KeyError> {
        match self {
            Self::File(path) => {
                let mut file = KeyFile::load(path)?;
                let added = file.add(plan, name, networks, allow, jwt)?;
                file.save(path)?;
                Ok(added)
            }
            Self::Redis(redis) => {
                let (key, record) = new_key(plan, name, networks, allow, jwt)?;
                redis.put(&record)?;
                Ok((key, record))
            }
        }
    }

    /// Revokes the key with id `id`: every server refuses it within a second or two.
    pub fn revoke(&self, id: &str) -> Result<KeyRecord, KeyError> {
        self.change(id, |record| {
            record.revoked.get_or_insert_with(now);
            Ok(())
        })
    }

    /// Replaces the allowlists of the key with id `id`: every server applies them within a
    /// second or two, to open WebSockets too.
    pub fn set_allowlists(&self, id: &str, allow: KeyAllowlists) -> Result<KeyRecord, KeyError> {
        allow.check().map_err(KeyError::Allowlists)?;
        self.change(id, move |record| {
            record.allow = allow;
            Ok(())
        })
    }

    /// Changes the secret of key `id`: a new one drawn when `renew` (returned, to be shown once;
    /// the store keeps its hash), and whether it is required when `require` says.
    pub fn set_secret(
        &self,
        id: &str,
        renew: bool,
        require: Option<bool>,
    ) -> Result<(KeyRecord, Option<String>), KeyError> {
        let drawn = if renew {
            Some(crate::access::key_secrets::new_secret().map_err(KeyError::Random)?)
        } else {
            None
        };
        let hash = drawn.as_ref().map(|(_, hash)| *hash);
        let record = self.change(id, move |record| {
            if let Some(hash) = hash {
                record.secret_hash = Some(hash);
            }
            if let Some(require) = require {
                record.require_secret = require;
            }
            if record.require_secret && record.secret_hash.is_none() {
                return Err(KeyError::Secret(
                    "a key that requires its secret needs one: give it --secret (add) or --new-secret (update)".into(),
                ));
            }
            Ok(())
        })?;
        Ok((record, drawn.map(|(secret, _)| secret)))
    }

    /// Changes the JWT public keys of key `id` (see [`JwtChange`]). A running server applies
    /// it within a second or two.
    pub fn set_jwt(&self, id: &str, change: JwtChange) -> Result<KeyRecord, KeyError> {
        self.change(id, move |record| change.apply(record))
    }

    /// Applies `change` to the record of key `id` and stores it.
    fn change(
        &self,
        id: &str,
        change: impl FnOnce(&mut KeyRecord) -> Result<(), KeyError>,
    ) -> Result<KeyRecord, KeyError> {
        match self {
            Self::File(path) => {
                let mut file = KeyFile::load(path)?;
                let record = file
                    .keys
                    .iter_mut()
                    .find(|k| k.id == id)
                    .ok_or_else(|| KeyError::UnknownId(id.to_string()))?;
                change(record)?;
                let record = record.clone();
                file.save(path)?;
                Ok(record)
            }
            Self::Redis(redis) => {
                let mut record = redis
                    .get(id)?
                    .ok_or_else(|| KeyError::UnknownId(id.to_string()))?;
                change(&mut record)?;
                redis.put(&record)?;
                Ok(record)
            }
        }
    }

    pub fn list(&self) -> Result<Vec<KeyRecord>, KeyError> {
        match self {
            Self::File(path) => Ok(KeyFile::load(path)?.keys),
            Self::Redis(redis) => redis.records(),
        }
    }
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
        allow: KeyAllowlists,
        jwt: JwtChange,
    ) -> Result<(String, KeyRecord), KeyError> {
        let (key, record) = new_key(plan, name, networks, allow, jwt)?;
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
    /// Its allowlists as the key store last said; `None`: none.
    pub allow: Option<Arc<KeyAllowlists>>,
    /// The hash of its secret, if it has one.
    pub secret_hash: Option<B256>,
    pub require_secret: bool,
    /// Its JWT public keys, parsed; `None`: none.
    pub jwt: Option<Arc<JwtKeys>>,
    pub require_jwt: bool,
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
    source: Option<KeySource>,
    stored: RwLock<StoredKeys>,
}

/// Which state of the store was read last: the file's modification time, or Redis' version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stamp {
    Modified(Option<SystemTime>),
    Version(u64),
}

#[derive(Debug, Default)]
struct StoredKeys {
    stamp: Option<Stamp>,
    keys: HashMap<B256, KeyGrant>,
}

impl KeyRing {
    pub fn new(config_keys: &[ApiKey], source: Option<KeySource>) -> Result<Self, KeyError> {
        let config_keys = config_keys
            .iter()
            .map(|key| {
                let hash = hash_key(&key.key);
                let grant = KeyGrant {
                    id: key_id(&hash).into(),
                    hash,
                    plan: key.plan,
                    networks: key.networks.clone().map(Into::into),
                    allow: None,
                    secret_hash: None,
                    require_secret: false,
                    jwt: None,
                    require_jwt: false,
                };
                (hash, grant)
            })
            .collect();
        let ring = Self {
            config_keys,
            source,
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

    /// A key accepted earlier, now: revoked (`None`), or live with its allowlists as the key
    /// store last said (changes reach open WebSockets this way).
    pub fn now(&self, grant: &KeyGrant) -> Option<Option<Arc<KeyAllowlists>>> {
        if self.config_keys.contains_key(&grant.hash) {
            return Some(None);
        }
        self.stored()
            .keys
            .get(&grant.hash)
            .map(|live| live.allow.clone())
    }

    /// Whether the public key that verified `token` is still the key's under its name (a
    /// WebSocket outlives its upgrade; the key's owner may remove or replace the public key).
    pub fn verifies_still(&self, grant: &KeyGrant, token: &TokenGrant) -> bool {
        self.stored()
            .keys
            .get(&grant.hash)
            .and_then(|live| live.jwt.as_ref())
            .is_some_and(|jwt| jwt.holds(&token.kid, &token.verified_by))
    }

    /// Re-reads the key store if it changed since the last read. Blocking: file I/O or Redis.
    /// Returns whether Redis was asked.
    pub fn refresh(&self) -> Result<bool, KeyError> {
        let (stamp, records) = match &self.source {
            None => return Ok(false),
            Some(KeySource::File(path)) => {
                let modified = std::fs::metadata(path).and_then(|m| m.modified()).ok();
                let stamp = Stamp::Modified(modified);
                if modified.is_some() && self.stored().stamp == Some(stamp) {
                    return Ok(false);
                }
                (stamp, KeyFile::load(path)?.keys)
            }
            Some(KeySource::Redis(redis)) => {
                let stamp = Stamp::Version(redis.version()?);
                if self.stored().stamp == Some(stamp) {
                    return Ok(true);
                }
                (stamp, redis.records()?)
            }
        };
        let asked_redis = matches!(stamp, Stamp::Version(_));
        let keys = records
            .into_iter()
            .filter(|record| record.revoked.is_none())
            .map(|record| {
                let jwt = self.jwt_keys_of(&record)?;
                let grant = KeyGrant {
                    id: record.id.into(),
                    hash: record.hash,
                    plan: record.plan,
                    networks: record.networks.map(Into::into),
                    allow: (!record.allow.is_empty()).then(|| Arc::new(record.allow)),
                    secret_hash: record.secret_hash,
                    require_secret: record.require_secret,
                    jwt,
                    require_jwt: record.require_jwt,
                };
                Ok((record.hash, grant))
            })
            .collect::<Result<_, KeyError>>()?;
        *self.stored.write().unwrap_or_else(PoisonError::into_inner) = StoredKeys {
            stamp: Some(stamp),
            keys,
        };
        Ok(asked_redis)
    }

    /// The parsed JWT public keys of `record`: those parsed at the last read when they have not
    /// changed since, so PEM is parsed once per change, not per read or request.
    fn jwt_keys_of(&self, record: &KeyRecord) -> Result<Option<Arc<JwtKeys>>, KeyError> {
        if record.jwt_keys.is_empty() {
            return Ok(None);
        }
        let previous = self
            .stored()
            .keys
            .get(&record.hash)
            .and_then(|g| g.jwt.clone());
        if let Some(previous) = previous.filter(|p| p.parsed_from(&record.jwt_keys)) {
            return Ok(Some(previous));
        }
        JwtKeys::parse(&record.id, &record.jwt_keys)
            .map(|keys| Some(Arc::new(keys)))
            .map_err(|(name, e)| {
                KeyError::Jwt(format!("key {}: public key {name:?}: {e}", record.id))
            })
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_round_trip_through_the_store_as_hashes_only() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("keys.json");
        let mut store = KeyFile::load(&path).unwrap();
        let (key, record) = store
            .add(
                Plan::Growth,
                "alice".into(),
                Some(vec!["main".into()]),
                KeyAllowlists::default(),
                JwtChange::default(),
            )
            .unwrap();
        assert_eq!(key.len(), 64);
        store.save(&path).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(!text.contains(&key), "the key itself must not be stored");
        assert!(text.contains(&record.id));

        let ring = KeyRing::new(&[], Some(KeySource::File(path.clone()))).unwrap();
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
