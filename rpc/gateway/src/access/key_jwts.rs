//! API keys' JWTs: the public keys a key's owner uploads (RS256 or ES256, by name), parsed once
//! per key store read, and the check of a request's `Authorization: Bearer <token>` against
//! them: the header's `kid` names the public key, whose type alone fixes the algorithm (`none`
//! and HMAC are refused, so a public key can never serve as an HMAC secret), then the
//! signature, `exp`, `nbf` and `aud` (the key's id, when present), and the token's own
//! allowlists (claim `allow`), which narrow the key's. A token verified once is remembered by
//! its hash until the key's public keys change, so a client resending it costs an expiry check,
//! not a signature check. A token never reaches a log, a metric or an error message.

use crate::access::allowlists::KeyAllowlists;
use alloy_primitives::{B256, keccak256};
use base64::Engine;
use jsonwebtoken::{Algorithm, DecodingKey, Validation, errors::ErrorKind};
use rsa::{
    RsaPublicKey, pkcs1::DecodeRsaPublicKey, pkcs8::DecodePublicKey, traits::PublicKeyParts,
};
use serde::{Deserialize, Serialize};
use std::{
    collections::{BTreeMap, HashMap},
    sync::{Arc, Mutex, PoisonError},
};

/// Most public keys one API key may hold.
pub const MAX_JWT_KEYS: usize = 10;

/// Seconds of clock difference allowed on `exp` and `nbf`.
pub const LEEWAY_SECONDS: u64 = 60;

/// The smallest RSA modulus taken, in bits (RustCrypto would verify with smaller ones).
pub const MIN_RSA_BITS: usize = 2048;

/// Most verified tokens remembered per key; more, and they are forgotten at once.
const MAX_REMEMBERED: usize = 4096;

/// The algorithm of an uploaded public key: the only one its tokens may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum JwtAlg {
    RS256,
    ES256,
}

impl JwtAlg {
    fn algorithm(self) -> Algorithm {
        match self {
            Self::RS256 => Algorithm::RS256,
            Self::ES256 => Algorithm::ES256,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Self::RS256 => "RS256",
            Self::ES256 => "ES256",
        }
    }
}

/// One public key as the key store keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JwtPublicKey {
    pub alg: JwtAlg,
    pub pem: String,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum JwtKeyError {
    #[error("this is a private key: upload the public key (openssl pkey -in KEY -pubout)")]
    PrivateKey,
    #[error(
        "not a PEM public key (-----BEGIN PUBLIC KEY-----) of a type quarry takes: RSA (RS256) or EC P-256 (ES256)"
    )]
    Unsupported,
    #[error("an EC public key on another curve than P-256: ES256 needs P-256 (prime256v1)")]
    WrongCurve,
    #[error("an RSA public key of {0} bits: RS256 needs at least {MIN_RSA_BITS}")]
    WeakRsa(usize),
    #[error(
        "{0:?} is not a JWT key name: use 1 to 64 letters, digits, '.', '_' or '-' (it is the tokens' kid)"
    )]
    Name(String),
}

/// Checks a JWT key name: it is matched against tokens' `kid`.
pub fn check_name(name: &str) -> Result<(), JwtKeyError> {
    let fits = !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    if fits {
        Ok(())
    } else {
        Err(JwtKeyError::Name(name.to_string()))
    }
}

impl JwtPublicKey {
    /// Reads a PEM public key: an RSA key takes RS256, an EC P-256 key ES256, nothing else.
    pub fn from_pem(pem: &str) -> Result<Self, JwtKeyError> {
        if pem.contains("PRIVATE KEY") {
            return Err(JwtKeyError::PrivateKey);
        }
        // Not a certificate, say: only a public key's own PEM.
        if !pem.contains("-----BEGIN PUBLIC KEY-----")
            && !pem.contains("-----BEGIN RSA PUBLIC KEY-----")
        {
            return Err(JwtKeyError::Unsupported);
        }
        // The key's type and size from the RSA and P-256 crates; jsonwebtoken must then read
        // it too.
        let rsa =
            RsaPublicKey::from_public_key_pem(pem).or_else(|_| RsaPublicKey::from_pkcs1_pem(pem));
        let alg = if let Ok(key) = rsa {
            let bits = key.n().bits();
            if bits < MIN_RSA_BITS {
                return Err(JwtKeyError::WeakRsa(bits));
            }
            JwtAlg::RS256
        } else if p256::PublicKey::from_public_key_pem(pem).is_ok() {
            JwtAlg::ES256
        } else if DecodingKey::from_ec_pem(pem.as_bytes()).is_ok() {
            return Err(JwtKeyError::WrongCurve);
        } else {
            return Err(JwtKeyError::Unsupported);
        };
        let key = Self {
            alg,
            pem: pem.trim().to_string(),
        };
        key.decoding_key()?;
        Ok(key)
    }

    fn decoding_key(&self) -> Result<DecodingKey, JwtKeyError> {
        let parsed = match self.alg {
            JwtAlg::RS256 => DecodingKey::from_rsa_pem(self.pem.as_bytes()),
            JwtAlg::ES256 => DecodingKey::from_ec_pem(self.pem.as_bytes()),
        };
        parsed.map_err(|_| JwtKeyError::Unsupported)
    }
}

/// One public key, parsed, with the checks its tokens go through.
struct ParsedKey {
    stored: Arc<JwtPublicKey>,
    alg: JwtAlg,
    key: DecodingKey,
    validation: Validation,
}

/// A key's public keys by name, parsed once when the key store is read.
pub struct JwtKeys {
    /// As stored: a re-read store whose keys did not change reuses this parse.
    source: BTreeMap<String, JwtPublicKey>,
    parsed: HashMap<String, ParsedKey>,
    /// Tokens these keys verified, by keccak-256 of their text (never the text): a new parse
    /// starts empty, so a removed or replaced public key's tokens are verified again.
    verified: Mutex<HashMap<B256, TokenGrant>>,
}

impl std::fmt::Debug for JwtKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map()
            .entries(self.source.iter().map(|(name, key)| (name, key.alg)))
            .finish()
    }
}

impl JwtKeys {
    /// Parses the public keys of the API key with id `key_id` (the audience its tokens may name).
    pub fn parse(
        key_id: &str,
        source: &BTreeMap<String, JwtPublicKey>,
    ) -> Result<Self, (String, JwtKeyError)> {
        let mut parsed = HashMap::new();
        for (name, stored) in source {
            let key = stored.decoding_key().map_err(|e| (name.clone(), e))?;
            let mut validation = Validation::new(stored.alg.algorithm());
            validation.leeway = LEEWAY_SECONDS;
            validation.validate_nbf = true;
            validation.set_audience(&[key_id]);
            parsed.insert(
                name.clone(),
                ParsedKey {
                    stored: Arc::new(stored.clone()),
                    alg: stored.alg,
                    key,
                    validation,
                },
            );
        }
        Ok(Self {
            source: source.clone(),
            parsed,
            verified: Mutex::default(),
        })
    }

    /// Whether these are the parsed `source`.
    pub fn parsed_from(&self, source: &BTreeMap<String, JwtPublicKey>) -> bool {
        self.source == *source
    }

    /// Whether `kid` still names `key` here.
    pub fn holds(&self, kid: &str, key: &JwtPublicKey) -> bool {
        self.source.get(kid) == Some(key)
    }

    fn names(&self) -> String {
        self.source.keys().cloned().collect::<Vec<_>>().join(", ")
    }
}

/// What a verified token grants: its allowlists, and until when.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenGrant {
    pub allow: Option<Arc<KeyAllowlists>>,
    /// Unix seconds (`exp`).
    pub expires: u64,
    /// The public key that verified it, and its name: a WebSocket opened with the token is
    /// cut off when the key's owner removes or replaces it.
    pub kid: Arc<str>,
    pub verified_by: Arc<JwtPublicKey>,
}

impl TokenGrant {
    /// Whether the token has expired by `now` (Unix seconds), with the leeway.
    pub fn expired(&self, now: u64) -> bool {
        self.expires.saturating_add(LEEWAY_SECONDS) < now
    }
}

/// What a request's `Authorization` header says of a key's JWTs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TokenCheck {
    /// No Bearer token, or a key without public keys (its Bearer tokens are not quarry's
    /// business).
    Absent,
    Valid(TokenGrant),
    /// Why the token is refused; never the token itself.
    Invalid(String),
}

/// The parts of a token's header read before its signature is checked.
#[derive(Deserialize)]
struct TokenHeader {
    alg: String,
    kid: Option<String>,
}

/// The claims quarry reads (`exp`, `nbf` and `aud` are checked by jsonwebtoken).
#[derive(Deserialize)]
struct TokenClaims {
    // Optional here so that a token without one gets jsonwebtoken's clear refusal.
    #[serde(default)]
    exp: Option<u64>,
    #[serde(default)]
    allow: Option<KeyAllowlists>,
}

/// Text from a token, shortened and quoted for an error message.
fn quoted(text: &str) -> String {
    let short: String = text.chars().take(64).collect();
    serde_json::Value::from(short).to_string()
}

/// The token of a `Bearer` header, if it is one.
fn bearer(header: &http::HeaderValue) -> Option<&str> {
    let text = std::str::from_utf8(header.as_bytes()).ok()?.trim();
    let (scheme, token) = text.split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then_some(token.trim())
}

/// Checks the request's `Authorization` header against a key's public keys (`None`: it has
/// none).
pub fn check_token(
    authorization: Option<&http::HeaderValue>,
    keys: Option<&JwtKeys>,
) -> TokenCheck {
    let (Some(keys), Some(token)) = (keys, authorization.and_then(bearer)) else {
        return TokenCheck::Absent;
    };
    let hash = keccak256(token.as_bytes());
    let remembered = keys
        .verified
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .get(&hash)
        .cloned();
    if let Some(grant) = remembered {
        // The signature, nbf and aud held when it was verified; only time moves on.
        return if grant.expired(jsonwebtoken::get_current_timestamp()) {
            TokenCheck::Invalid("it has expired (exp)".into())
        } else {
            TokenCheck::Valid(grant)
        };
    }
    match verify(token, keys) {
        Ok(grant) => {
            let mut verified = keys.verified.lock().unwrap_or_else(PoisonError::into_inner);
            if verified.len() >= MAX_REMEMBERED {
                verified.clear();
            }
            verified.insert(hash, grant.clone());
            TokenCheck::Valid(grant)
        }
        Err(reason) => TokenCheck::Invalid(reason),
    }
}

fn verify(token: &str, keys: &JwtKeys) -> Result<TokenGrant, String> {
    let mut parts = token.split('.');
    let (Some(header), Some(_), Some(_), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err("not a JWT: it must be three base64url parts separated by dots".into());
    };
    let header: TokenHeader = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(header)
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .ok_or("its header is not base64url JSON naming an alg")?;
    if header.alg.eq_ignore_ascii_case("none") {
        return Err("alg none is refused: a token must be signed (RS256 or ES256)".into());
    }
    let Some(kid) = header.kid else {
        return Err(format!(
            "it has no kid: name the public key that signed it ({})",
            keys.names()
        ));
    };
    let Some(key) = keys.parsed.get(&kid) else {
        return Err(format!(
            "unknown kid {}: this key's public keys are {}",
            quoted(&kid),
            keys.names()
        ));
    };
    if header.alg != key.alg.name() {
        return Err(format!(
            "alg {} is refused: public key {} takes {} tokens only",
            quoted(&header.alg),
            quoted(&kid),
            key.alg.name()
        ));
    }
    let claims = jsonwebtoken::decode::<TokenClaims>(token, &key.key, &key.validation)
        .map_err(|e| refusal(e.kind(), &kid))?
        .claims;
    if let Some(allow) = &claims.allow {
        allow.check().map_err(|e| format!("its allow claim: {e}"))?;
    }
    Ok(TokenGrant {
        allow: claims.allow.filter(|a| !a.is_empty()).map(Arc::new),
        expires: claims.exp.ok_or("it has no exp claim")?,
        kid: kid.as_str().into(),
        verified_by: key.stored.clone(),
    })
}

/// Why jsonwebtoken refused a token, for the client.
fn refusal(kind: &ErrorKind, kid: &str) -> String {
    match kind {
        ErrorKind::InvalidSignature => format!(
            "its signature does not verify with public key {}",
            quoted(kid)
        ),
        ErrorKind::ExpiredSignature => "it has expired (exp)".into(),
        ErrorKind::ImmatureSignature => "it is not valid yet (nbf)".into(),
        ErrorKind::InvalidAudience => "its audience (aud) is not this key's id".into(),
        ErrorKind::MissingRequiredClaim(claim) => format!("it has no {claim} claim"),
        ErrorKind::InvalidClaimFormat(claim) => format!("its {claim} claim is not a number"),
        ErrorKind::Json(e) => format!("its claims are not valid: {e}"),
        ErrorKind::Base64(_) | ErrorKind::Utf8(_) => "it is not base64url JSON".into(),
        ErrorKind::InvalidAlgorithm => "its alg does not match its public key".into(),
        _ => "it cannot be verified".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use jsonwebtoken::{EncodingKey, Header};
    use serde_json::json;

    // Test keys (openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256).
    const EC_PRIVATE: &str = "-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgA9wbm3r7q4l2h1CE
0GSUyOeLqcF+xoccGsGtOc2WY7OhRANCAATuQjD9QfLWapxcrcGcej/isCM9TPuh
KIV8GvNQTIdFxFDKFgSMY7Y23uJSZUWvyiamoF+Vfl1Rr6J8EjDUqF2a
-----END PRIVATE KEY-----";
    const EC_PUBLIC: &str = "-----BEGIN PUBLIC KEY-----
MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE7kIw/UHy1mqcXK3BnHo/4rAjPUz7
oSiFfBrzUEyHRcRQyhYEjGO2Nt7iUmVFr8ompqBflX5dUa+ifBIw1Khdmg==
-----END PUBLIC KEY-----";
    // secp384r1, refused for ES256.
    const P384_PUBLIC: &str = "-----BEGIN PUBLIC KEY-----
MHYwEAYHKoZIzj0CAQYFK4EEACIDYgAELYqeKiAYKVbWJdvwPJFdGSKwxMGu+Gam
K5LGV1m49GqKH671ylzhTfuzK1PViTmgWgulsRB08Ccfi1iXLVEU+PJSU9KbkrdV
/N2KefpZjtQxUipN7Bs+KLRGW6sSy6Oz
-----END PUBLIC KEY-----";

    const RSA_1024: &str = "-----BEGIN PUBLIC KEY-----
MIGfMA0GCSqGSIb3DQEBAQUAA4GNADCBiQKBgQCoCk54iyGzN6KK9qmUdxIPkI57
TgWUS2jM5N2g271247zNZsXWvpDNnm1T85yrg06u4hhxaB03GlKcM926jAEK2juq
SxoBKXxXKG2l+9qXRNDQzy6gti530Uc0eg4RXV0lHtLvGoQjOu3yjc6wESphJKLi
aVh1fwlmDxZWCINZuQIDAQAB
-----END PUBLIC KEY-----";
    const RSA_2048_PKCS1: &str = "-----BEGIN RSA PUBLIC KEY-----
MIIBCgKCAQEArwwrY6NaFzNgWe0ogGVjK5xn9ji/srh/ni0uvH9OW+jpqvr9y5Ym
u1RUuecmDTlpxAqPw3QLECtJWlSeb/TDYxnaQUBNE8O8TyFxeAiszE6Tc2bPV9OD
lq2Hv9O08CjPcRFziHnbSAuL/hb1kcTuMNx7yx37FuiJNk/5oxEhKip4nVdrZYlg
uCM09ELV38wTtaCJdtFj+c/nKxZab64C0IKpDFmRWj/xKbjVUHuPV3QfF0ALaGXI
kUewVHUxQL9ZfXfhD8RoNqmZzF+YH8nakruzk0RXO6mNeSifhMWN9FlN8lZHtQvl
ZLoPdrm73pseLTu+WRWxM4Nkw/0LZRBtJQIDAQAB
-----END RSA PUBLIC KEY-----";

    fn now() -> u64 {
        jsonwebtoken::get_current_timestamp()
    }

    fn keys() -> JwtKeys {
        let stored = JwtPublicKey::from_pem(EC_PUBLIC).unwrap();
        assert_eq!(stored.alg, JwtAlg::ES256);
        JwtKeys::parse("key-0123", &BTreeMap::from([("app".to_string(), stored)])).unwrap()
    }

    fn sign(kid: Option<&str>, claims: serde_json::Value) -> String {
        let mut header = Header::new(Algorithm::ES256);
        header.kid = kid.map(str::to_string);
        let key = EncodingKey::from_ec_pem(EC_PRIVATE.as_bytes()).unwrap();
        jsonwebtoken::encode(&header, &claims, &key).unwrap()
    }

    fn check(token: &str) -> TokenCheck {
        let value = http::HeaderValue::from_str(&format!("Bearer {token}")).unwrap();
        check_token(Some(&value), Some(&keys()))
    }

    #[test]
    fn verified_tokens_are_remembered_until_they_expire() {
        let keys = keys();
        let token = sign(Some("app"), json!({"exp": now() + 600}));
        let value = http::HeaderValue::from_str(&format!("Bearer {token}")).unwrap();
        assert!(matches!(
            check_token(Some(&value), Some(&keys)),
            TokenCheck::Valid(_)
        ));
        let hash = keccak256(token.as_bytes());
        let mut remembered = keys.verified.lock().unwrap();
        assert_eq!(remembered.len(), 1);
        // A remembered token is still held to its expiry.
        remembered.get_mut(&hash).unwrap().expires = now() - 600;
        drop(remembered);
        assert_eq!(
            check_token(Some(&value), Some(&keys)),
            TokenCheck::Invalid("it has expired (exp)".into())
        );
        // Refused tokens are not remembered.
        let other = sign(Some("app"), json!({"exp": now() - 600}));
        let value = http::HeaderValue::from_str(&format!("Bearer {other}")).unwrap();
        assert!(matches!(
            check_token(Some(&value), Some(&keys)),
            TokenCheck::Invalid(_)
        ));
        assert_eq!(keys.verified.lock().unwrap().len(), 1);
    }

    fn refused(token: &str) -> String {
        match check(token) {
            TokenCheck::Invalid(reason) => {
                assert!(!reason.contains(token), "the token leaked: {reason}");
                reason
            }
            other => panic!("not refused: {other:?}"),
        }
    }

    #[test]
    fn public_keys_are_typed_by_their_pem() {
        assert_eq!(
            JwtPublicKey::from_pem(EC_PRIVATE),
            Err(JwtKeyError::PrivateKey)
        );
        assert_eq!(
            JwtPublicKey::from_pem(P384_PUBLIC),
            Err(JwtKeyError::WrongCurve)
        );
        assert_eq!(
            JwtPublicKey::from_pem("hello"),
            Err(JwtKeyError::Unsupported)
        );
        let rsa = JwtPublicKey::from_pem(RSA_2048_PKCS1).unwrap();
        assert_eq!(rsa.alg, JwtAlg::RS256);
        assert_eq!(
            JwtPublicKey::from_pem(RSA_1024),
            Err(JwtKeyError::WeakRsa(1024))
        );
        assert!(check_name("app-1.v2").is_ok());
        assert!(check_name("").is_err() && check_name("a b").is_err());
    }

    #[test]
    fn claims_are_checked() {
        let exp = now() + 600;
        let valid = sign(Some("app"), json!({"exp": exp, "aud": "key-0123"}));
        let TokenCheck::Valid(grant) = check(&valid) else {
            panic!("refused")
        };
        assert_eq!((grant.allow, grant.expires), (None, exp));
        assert!(keys().holds(&grant.kid, &grant.verified_by));
        // Without aud it is valid too; with another, not.
        assert!(matches!(
            check(&sign(Some("app"), json!({"exp": exp}))),
            TokenCheck::Valid(_)
        ));
        let other = sign(Some("app"), json!({"exp": exp, "aud": "key-9999"}));
        assert_eq!(refused(&other), "its audience (aud) is not this key's id");
        let expired = sign(Some("app"), json!({"exp": now() - 600}));
        assert_eq!(refused(&expired), "it has expired (exp)");
        let early = sign(Some("app"), json!({"exp": exp, "nbf": now() + 300}));
        assert_eq!(refused(&early), "it is not valid yet (nbf)");
        assert_eq!(
            refused(&sign(Some("app"), json!({"sub": "x"}))),
            "it has no exp claim"
        );
        assert!(refused(&sign(None, json!({"exp": exp}))).starts_with("it has no kid"));
        assert_eq!(
            refused(&sign(Some("other"), json!({"exp": exp}))),
            "unknown kid \"other\": this key's public keys are app"
        );
        // The signature covers the claims.
        let mut parts: Vec<&str> = valid.split('.').collect();
        let forged = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .encode(json!({"exp": exp + 1}).to_string());
        parts[1] = &forged;
        assert_eq!(
            refused(&parts.join(".")),
            "its signature does not verify with public key \"app\""
        );
        assert!(refused("abc").starts_with("not a JWT"));
        // A key without public keys ignores Bearer tokens; a request without one is absent.
        let header = http::HeaderValue::from_str(&format!("Bearer {valid}")).unwrap();
        assert_eq!(check_token(Some(&header), None), TokenCheck::Absent);
        assert_eq!(check_token(None, Some(&keys())), TokenCheck::Absent);
        let basic = http::HeaderValue::from_static("Basic OmFiYw==");
        assert_eq!(check_token(Some(&basic), Some(&keys())), TokenCheck::Absent);
    }

    #[test]
    fn unsigned_and_hmac_tokens_are_refused() {
        let b64 = |v: serde_json::Value| {
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string())
        };
        let claims = b64(json!({"exp": now() + 600}));
        let none = format!("{}.{claims}.", b64(json!({"alg": "none", "kid": "app"})));
        assert_eq!(
            refused(&none),
            "alg none is refused: a token must be signed (RS256 or ES256)"
        );
        // HMAC keyed with the public key's PEM: the classic confusion.
        let mut header = Header::new(Algorithm::HS256);
        header.kid = Some("app".into());
        let hmac = jsonwebtoken::encode(
            &header,
            &json!({"exp": now() + 600}),
            &EncodingKey::from_secret(EC_PUBLIC.as_bytes()),
        )
        .unwrap();
        assert_eq!(
            refused(&hmac),
            "alg \"HS256\" is refused: public key \"app\" takes ES256 tokens only"
        );
    }

    #[test]
    fn a_token_carries_its_own_allowlists() {
        let exp = now() + 600;
        let token = sign(
            Some("app"),
            json!({"exp": exp, "allow": {"methods": ["eth_blockNumber"]}}),
        );
        let TokenCheck::Valid(grant) = check(&token) else {
            panic!("refused")
        };
        let allow = grant.allow.clone().unwrap();
        let no_address = quarry_eth::AddressParams::NoAddress;
        assert!(
            allow
                .admit_call("eth_blockNumber", no_address, None)
                .is_ok()
        );
        assert!(
            allow
                .admit_call("eth_getBalance", no_address, None)
                .is_err()
        );
        let misspelt = sign(Some("app"), json!({"exp": exp, "allow": {"method": []}}));
        assert!(
            refused(&misspelt).contains("unknown field `method`"),
            "{}",
            refused(&misspelt)
        );
        let expiring = TokenGrant {
            expires: 1000,
            ..grant
        };
        assert!(!expiring.expired(1000 + LEEWAY_SECONDS));
        assert!(expiring.expired(1001 + LEEWAY_SECONDS));
    }
}
