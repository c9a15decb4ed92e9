//! Browsers on other origins: the origin patterns that a network's `cors_origins` and a key's
//! origin allowlist are written in (`[scheme://]host[:port]`, the host possibly `*.` for any
//! subdomain), a network's CORS origins, the answer to a preflight `OPTIONS`, and the headers
//! that let a page read every answer, errors included.

use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// How long a browser may keep a preflight's answer, in seconds (Chromium keeps at most 2 h).
const MAX_AGE_SECONDS: &str = "7200";

/// One origin pattern: `https://app.example`, `app.example:8080`, `https://*.example`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct OriginPattern {
    text: String,
    /// `None`: any scheme.
    scheme: Option<String>,
    host: HostPattern,
    /// `None`: any port.
    port: Option<u16>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum HostPattern {
    Exact(String),
    /// `*.example`: any host ending in `.example` (not `example` itself).
    Subdomains(String),
}

/// `host[:port]` (the host possibly `[v6]`), the host lowercase; `None` when the port is not
/// a number.
fn split_host_port(rest: &str) -> Option<(String, Option<u16>)> {
    let (host, port) = match rest.strip_prefix('[') {
        Some(v6) => {
            let (address, after) = v6.split_once(']')?;
            let port = match after {
                "" => None,
                after => Some(after.strip_prefix(':')?),
            };
            (format!("[{address}]"), port)
        }
        None => match rest.split_once(':') {
            Some((host, port)) => (host.to_string(), Some(port)),
            None => (rest.to_string(), None),
        },
    };
    let port = match port {
        Some(port) => Some(port.parse::<u16>().ok()?),
        None => None,
    };
    Some((host.to_ascii_lowercase(), port))
}

/// A request's `Origin` header, split: scheme, lowercase host, port if written.
fn split_origin(origin: &str) -> Option<(&str, String, Option<u16>)> {
    let (scheme, rest) = origin.split_once("://")?;
    let rest = rest.strip_suffix('/').unwrap_or(rest);
    if rest.is_empty() || rest.contains('/') {
        return None;
    }
    let (host, port) = split_host_port(rest)?;
    Some((scheme, host, port))
}

impl OriginPattern {
    /// Parses a pattern; the error says what is wrong with it.
    pub fn parse(text: &str) -> Result<Self, String> {
        let lower = text.trim().to_ascii_lowercase();
        let bad = |why: &str| format!("origin {text:?}: {why}");
        let (scheme, rest) = match lower.split_once("://") {
            Some((scheme, rest)) => {
                if scheme.is_empty()
                    || !scheme
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
                {
                    return Err(bad("the scheme is not valid"));
                }
                (Some(scheme.to_string()), rest)
            }
            None => (None, lower.as_str()),
        };
        let rest = rest.strip_suffix('/').unwrap_or(rest);
        if rest.contains('/') {
            return Err(bad("an origin has no path: write [scheme://]host[:port]"));
        }
        let (host, port) =
            split_host_port(rest).ok_or_else(|| bad("the port is not a number from 0 to 65535"))?;
        let host = match host.strip_prefix("*.") {
            Some(parent) => HostPattern::Subdomains(format!(".{parent}")),
            None => HostPattern::Exact(host.to_string()),
        };
        let (HostPattern::Exact(name) | HostPattern::Subdomains(name)) = &host;
        let name = name.trim_start_matches('.');
        if name.is_empty() || name.contains('*') || name.contains(char::is_whitespace) {
            return Err(bad(
                "write a host name, or *.name for its subdomains (a * only there)",
            ));
        }
        Ok(Self {
            text: text.trim().to_string(),
            scheme,
            host,
            port,
        })
    }

    /// Whether a request's `Origin` header matches.
    pub fn matches(&self, origin: &str) -> bool {
        split_origin(origin).is_some_and(|parts| self.matches_parts(&parts))
    }

    fn matches_parts(&self, (scheme, host, port): &(&str, String, Option<u16>)) -> bool {
        self.scheme
            .as_deref()
            .is_none_or(|wanted| wanted.eq_ignore_ascii_case(scheme))
            && self.port.is_none_or(|wanted| Some(wanted) == *port)
            && match &self.host {
                HostPattern::Exact(name) => name == host,
                HostPattern::Subdomains(suffix) => {
                    host.len() > suffix.len() && host.ends_with(suffix.as_str())
                }
            }
    }

    pub fn as_str(&self) -> &str {
        &self.text
    }
}

impl TryFrom<String> for OriginPattern {
    type Error = String;

    fn try_from(text: String) -> Result<Self, String> {
        Self::parse(&text)
    }
}

impl From<OriginPattern> for String {
    fn from(pattern: OriginPattern) -> Self {
        pattern.text
    }
}

/// Whether any of `patterns` matches `origin`.
pub fn any_matches(patterns: &[OriginPattern], origin: &str) -> bool {
    match split_origin(origin) {
        Some(parts) => patterns.iter().any(|p| p.matches_parts(&parts)),
        None => false,
    }
}

/// Patterns indexed by host, for a list checked on every request (a key's origin allowlist):
/// a request's host, and each domain above it, is one hash lookup, where `any_matches`
/// compares every pattern.
#[derive(Debug, Default)]
pub struct OriginIndex {
    /// Exact hosts, each with the patterns (by position) that name it.
    hosts: HashMap<String, Vec<usize>>,
    /// `*.name` patterns' `.name`, each with the patterns that name it.
    parents: HashMap<String, Vec<usize>>,
}

impl OriginIndex {
    pub fn new(patterns: &[OriginPattern]) -> Self {
        let mut index = Self::default();
        for (i, pattern) in patterns.iter().enumerate() {
            let (map, name) = match &pattern.host {
                HostPattern::Exact(name) => (&mut index.hosts, name),
                HostPattern::Subdomains(suffix) => (&mut index.parents, suffix),
            };
            map.entry(name.clone()).or_default().push(i);
        }
        index
    }

    /// Whether any of `patterns` (the ones this index was made of) matches `origin`.
    pub fn any_matches(&self, patterns: &[OriginPattern], origin: &str) -> bool {
        let Some(parts) = split_origin(origin) else {
            return false;
        };
        let host = parts.1.as_str();
        let hit = |ids: Option<&Vec<usize>>| {
            ids.is_some_and(|ids| {
                ids.iter()
                    .any(|&i| patterns.get(i).is_some_and(|p| p.matches_parts(&parts)))
            })
        };
        hit(self.hosts.get(host))
            || host
                .match_indices('.')
                .any(|(at, _)| at > 0 && hit(self.parents.get(&host[at..])))
    }
}

/// A network's `cors_origins`: which pages on other origins may call it from a browser.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CorsOrigins {
    /// `["*"]`, the default: any page; answers say `Access-Control-Allow-Origin: *`.
    Any,
    /// These origins only (none: no page on another origin); answers name the origin.
    Only(Vec<OriginPattern>),
}

impl CorsOrigins {
    /// From the config's list: `"*"` alone is `Any`.
    pub fn parse(entries: &[String]) -> Result<Self, String> {
        if entries.iter().any(|e| e.trim() == "*") {
            if entries.len() > 1 {
                return Err("\"*\" allows every origin: list it alone".into());
            }
            return Ok(Self::Any);
        }
        entries
            .iter()
            .map(|e| OriginPattern::parse(e))
            .collect::<Result<_, _>>()
            .map(Self::Only)
    }

    /// Whether a request with this `Origin` header may be answered (no header: not a browser
    /// on another origin, always).
    pub fn allows(&self, origin: Option<&str>) -> bool {
        match (self, origin) {
            (_, None) | (Self::Any, Some(_)) => true,
            (Self::Only(patterns), Some(origin)) => any_matches(patterns, origin),
        }
    }

    /// The headers that let the page at `origin` read an answer: none when the request has no
    /// `Origin` or it is not allowed.
    pub fn headers(&self, origin: Option<&str>) -> Option<http::HeaderMap> {
        let origin = origin?;
        let mut headers = http::HeaderMap::with_capacity(3);
        match self {
            Self::Any => {
                headers.insert(
                    http::header::ACCESS_CONTROL_ALLOW_ORIGIN,
                    http::HeaderValue::from_static("*"),
                );
            }
            Self::Only(patterns) if any_matches(patterns, origin) => {
                headers.insert(
                    http::header::ACCESS_CONTROL_ALLOW_ORIGIN,
                    http::HeaderValue::from_str(origin).ok()?,
                );
                headers.insert(http::header::VARY, http::HeaderValue::from_static("origin"));
            }
            Self::Only(_) => return None,
        }
        headers.insert(
            http::header::ACCESS_CONTROL_EXPOSE_HEADERS,
            http::HeaderValue::from_static("retry-after"),
        );
        Some(headers)
    }

    /// The answer to a preflight `OPTIONS` from `origin`: 204 with what may be sent, or 403
    /// when the origin is not allowed.
    pub fn preflight(&self, origin: Option<&str>) -> http::Response<()> {
        let mut response = http::Response::new(());
        let Some(mut headers) = self.headers(origin).or_else(|| {
            // No Origin: not a browser's preflight; say what the path accepts.
            origin.is_none().then(http::HeaderMap::new)
        }) else {
            *response.status_mut() = http::StatusCode::FORBIDDEN;
            return response;
        };
        *response.status_mut() = http::StatusCode::NO_CONTENT;
        for (name, value) in [
            (http::header::ACCESS_CONTROL_ALLOW_METHODS, "POST, OPTIONS"),
            (
                http::header::ACCESS_CONTROL_ALLOW_HEADERS,
                "content-type, authorization",
            ),
            (http::header::ACCESS_CONTROL_MAX_AGE, MAX_AGE_SECONDS),
            (http::header::ALLOW, "POST, OPTIONS"),
        ] {
            headers.insert(name, http::HeaderValue::from_static(value));
        }
        *response.headers_mut() = headers;
        response
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pattern(text: &str) -> OriginPattern {
        OriginPattern::parse(text).unwrap()
    }

    #[test]
    fn the_host_index_matches_as_every_pattern_compared() {
        let patterns: Vec<OriginPattern> = [
            "https://*.app.example",
            "app.example:8080",
            "http://localhost:3000",
            "*.example",
            "https://[::1]:8545",
            "wss://Shop.Example",
        ]
        .iter()
        .map(|p| OriginPattern::parse(p).unwrap())
        .collect();
        let index = OriginIndex::new(&patterns);
        let origins = [
            "https://shop.app.example",
            "https://app.example",
            "http://app.example:8080",
            "https://app.example:8081",
            "http://localhost:3000",
            "http://localhost:3001",
            "https://a.b.example",
            "https://example",
            "https://[::1]:8545",
            "http://[::1]:8545",
            "wss://shop.example",
            "https://SHOP.APP.EXAMPLE/",
            "https://.example",
            "not an origin",
            "https://evil.example.com",
        ];
        for origin in origins {
            assert_eq!(
                index.any_matches(&patterns, origin),
                any_matches(&patterns, origin),
                "{origin}"
            );
        }
        assert!(index.any_matches(&patterns, "https://shop.app.example"));
        assert!(!index.any_matches(&patterns, "https://evil.example.com"));
    }

    #[test]
    fn patterns_match_scheme_host_port_and_subdomains() {
        let exact = pattern("https://App.Example");
        assert!(exact.matches("https://app.example"));
        assert!(
            exact.matches("https://app.example:8443"),
            "no port: any port"
        );
        assert!(!exact.matches("http://app.example"));
        assert!(!exact.matches("https://evil.app.example"));
        assert!(!exact.matches("https://app.example.evil"));
        assert!(!exact.matches("null"));

        let any_scheme = pattern("app.example:8080");
        assert!(any_scheme.matches("http://app.example:8080"));
        assert!(any_scheme.matches("https://app.example:8080"));
        assert!(!any_scheme.matches("http://app.example"));
        assert!(!any_scheme.matches("http://app.example:8081"));

        let wildcard = pattern("https://*.example.com");
        assert!(wildcard.matches("https://a.example.com"));
        assert!(wildcard.matches("https://a.b.example.com"));
        assert!(!wildcard.matches("https://example.com"));
        assert!(!wildcard.matches("https://badexample.com"));
        assert!(!wildcard.matches("https://a.example.com.evil"));

        for bad in [
            "",
            "https://",
            "https://a.example/path",
            "https://a.*.example",
            "*",
            "a.example:port",
        ] {
            assert!(OriginPattern::parse(bad).is_err(), "{bad:?} parsed");
        }
    }

    #[test]
    fn cors_origins_answer_with_the_right_headers() {
        let any = CorsOrigins::parse(&["*".into()]).unwrap();
        assert_eq!(any, CorsOrigins::Any);
        let headers = any.headers(Some("https://x.example")).unwrap();
        assert_eq!(headers[http::header::ACCESS_CONTROL_ALLOW_ORIGIN], "*");
        assert!(any.headers(None).is_none());

        let only = CorsOrigins::parse(&["https://*.app.example".into()]).unwrap();
        assert!(only.allows(None));
        assert!(only.allows(Some("https://a.app.example")));
        assert!(!only.allows(Some("https://evil.example")));
        let headers = only.headers(Some("https://a.app.example")).unwrap();
        assert_eq!(
            headers[http::header::ACCESS_CONTROL_ALLOW_ORIGIN],
            "https://a.app.example"
        );
        assert!(only.headers(Some("https://evil.example")).is_none());

        let preflight = only.preflight(Some("https://a.app.example"));
        assert_eq!(preflight.status(), 204);
        assert_eq!(
            preflight.headers()[http::header::ACCESS_CONTROL_ALLOW_METHODS],
            "POST, OPTIONS"
        );
        assert_eq!(only.preflight(Some("https://evil.example")).status(), 403);
        assert!(CorsOrigins::parse(&["*".into(), "a.example".into()]).is_err());
        assert_eq!(
            CorsOrigins::parse(&[]).unwrap(),
            CorsOrigins::Only(Vec::new())
        );
    }
}
