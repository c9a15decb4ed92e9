//! API key secrets (Infura's): a secret drawn once, shown once and kept only as its hash, sent
//! as HTTP Basic auth with an empty user (`curl --user :SECRET`), compared in constant time. A
//! key may require it; a request carrying it is not held to the key's allowlists. The secret
//! never reaches a log, a metric or an error message.

use alloy_primitives::{B256, keccak256};
use base64::Engine;

/// What a request's `Authorization` header says of a key's secret.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SecretCheck {
    /// No Basic credentials (no header, or another scheme), or a key without a secret: its
    /// requests' Basic credentials are not quarry's business (a proxy's, say).
    Absent,
    /// The key's secret: the request bypasses the allowlists.
    Valid,
    /// Basic credentials that are not the key's secret.
    Invalid,
}

/// A new random secret: its text (shown once) and the hash the store keeps.
pub fn new_secret() -> Result<(String, B256), String> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| format!("cannot draw a random secret: {e}"))?;
    let secret = alloy_primitives::hex::encode(bytes);
    let hash = hash_secret(&secret);
    Ok((secret, hash))
}

/// The hash a secret is kept and checked as.
pub fn hash_secret(secret: &str) -> B256 {
    keccak256(secret.as_bytes())
}

/// Whether the header is Basic credentials, and their password when they can be read.
fn basic_password(header: &[u8]) -> Option<Option<String>> {
    let text = std::str::from_utf8(header).ok()?.trim();
    let (scheme, encoded) = text.split_once(' ').unwrap_or((text, ""));
    if !scheme.eq_ignore_ascii_case("basic") {
        return None;
    }
    let password = base64::engine::general_purpose::STANDARD
        .decode(encoded.trim())
        .ok()
        .and_then(|decoded| String::from_utf8(decoded).ok())
        .and_then(|decoded| decoded.split_once(':').map(|(_user, p)| p.to_string()));
    Some(password)
}

/// Checks the request's `Authorization` header against a key's secret hash (`None`: the key
/// has no secret).
pub fn check_secret(
    authorization: Option<&http::HeaderValue>,
    stored: Option<&B256>,
) -> SecretCheck {
    let Some(stored) = stored else {
        return SecretCheck::Absent;
    };
    let Some(password) = authorization.and_then(|value| basic_password(value.as_bytes())) else {
        return SecretCheck::Absent;
    };
    let Some(presented) = password.map(|p| hash_secret(&p)) else {
        return SecretCheck::Invalid;
    };
    if constant_time_eq(stored, &presented) {
        SecretCheck::Valid
    } else {
        SecretCheck::Invalid
    }
}

/// Equality of two hashes in time independent of where they differ.
pub fn constant_time_eq(a: &B256, b: &B256) -> bool {
    a.iter()
        .zip(b.iter())
        .fold(0u8, |diff, (x, y)| diff | (x ^ y))
        == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn basic(credentials: &str) -> http::HeaderValue {
        let encoded = base64::engine::general_purpose::STANDARD.encode(credentials);
        http::HeaderValue::from_str(&format!("Basic {encoded}")).unwrap()
    }

    #[test]
    fn secrets_are_checked_as_basic_auth_passwords() {
        let (secret, hash) = new_secret().unwrap();
        assert_eq!(secret.len(), 64);
        assert_eq!(hash, hash_secret(&secret));
        let right = basic(&format!(":{secret}"));
        assert_eq!(check_secret(Some(&right), Some(&hash)), SecretCheck::Valid);
        // The user part is not looked at, as curl --user :SECRET leaves it empty.
        let with_user = basic(&format!("someone:{secret}"));
        assert_eq!(
            check_secret(Some(&with_user), Some(&hash)),
            SecretCheck::Valid
        );
        let wrong = basic(":not-the-secret");
        assert_eq!(
            check_secret(Some(&wrong), Some(&hash)),
            SecretCheck::Invalid
        );
        // A key without a secret ignores Basic credentials.
        assert_eq!(check_secret(Some(&right), None), SecretCheck::Absent);
        assert_eq!(check_secret(None, Some(&hash)), SecretCheck::Absent);
        let bearer = http::HeaderValue::from_static("Bearer abc");
        assert_eq!(
            check_secret(Some(&bearer), Some(&hash)),
            SecretCheck::Absent
        );
        let garbage = http::HeaderValue::from_static("Basic !!!");
        assert_eq!(
            check_secret(Some(&garbage), Some(&hash)),
            SecretCheck::Invalid
        );
    }
}
