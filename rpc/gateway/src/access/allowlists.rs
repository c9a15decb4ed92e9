//! A key's allowlists, with Infura's semantics: origins (wildcard subdomains allowed), user
//! agents (the entry anywhere in the `User-Agent`), JSON-RPC methods and contract addresses.
//! A key without allowlists accepts everything; the types are ANDed, the entries of one type
//! ORed; at most `MAX_ENTRIES` per type. A refusal names the rule that failed.

use crate::{
    access::cors::{OriginIndex, OriginPattern},
    access::named_addresses::{Named, named_addresses},
};
use aho_corasick::AhoCorasick;
use alloy_primitives::Address;
use jsonrpsee::types::{ErrorObject, ErrorObjectOwned};
use quarry_eth::AddressParams;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use std::sync::OnceLock;

/// Most entries of one type.
pub const MAX_ENTRIES: usize = 30;

/// The JSON-RPC code of a refusal by a key's settings (Infura's).
pub const NOT_ALLOWED_CODE: i32 = -32002;

/// What a key is restricted to; an empty list does not restrict.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KeyAllowlists {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub origins: Vec<OriginPattern>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub user_agents: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub methods: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub contracts: Vec<Address>,
    /// The origins and user agents prepared for matching, at the first check: a key's lists
    /// are read from the store once and checked on every request, where comparing each of 30
    /// origins and searching for each of 30 user agents (each search building its own
    /// searcher) cost more than the rest of the checks together.
    #[serde(skip)]
    prepared: Prepared,
}

/// The lists' origins indexed by host and user agents as one automaton, once built. A copy
/// starts without them (it may be changed before it is checked), and they take no part in
/// comparisons.
#[derive(Default)]
struct Prepared(OnceLock<Matchers>);

struct Matchers {
    origins: OriginIndex,
    /// `None`: the automaton could not be built (it has size limits); entries are searched
    /// one by one.
    agents: Option<AhoCorasick>,
}

impl Prepared {
    /// Built from `lists` at the first call; lists are not changed once checked.
    fn of(&self, lists: &KeyAllowlists) -> &Matchers {
        self.0.get_or_init(|| Matchers {
            origins: OriginIndex::new(&lists.origins),
            agents: AhoCorasick::new(&lists.user_agents).ok(),
        })
    }
}

impl Clone for Prepared {
    fn clone(&self) -> Self {
        Self::default()
    }
}

impl PartialEq for Prepared {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Eq for Prepared {}

impl std::fmt::Debug for Prepared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Prepared")
    }
}

/// Which rule refused a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    Origin,
    UserAgent,
    Method,
    Contract,
    /// Not an allowlist: the key's secret was wrong, or required and missing.
    Secret,
    /// Not an allowlist: the request's JWT was refused, or required and missing.
    Jwt,
}

/// Whose allowlists refuse: the key's, or those a JWT carries (which narrow the key's).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Holder {
    Key,
    Token,
}

impl Holder {
    fn text(self) -> &'static str {
        match self {
            Self::Key => "this key",
            Self::Token => "this token",
        }
    }
}

impl Rule {
    pub const ALL: [Self; 6] = [
        Self::Origin,
        Self::UserAgent,
        Self::Method,
        Self::Contract,
        Self::Secret,
        Self::Jwt,
    ];

    /// Its name in answers and metrics.
    pub fn label(self) -> &'static str {
        match self {
            Self::Origin => "origin",
            Self::UserAgent => "user_agent",
            Self::Method => "method",
            Self::Contract => "contract",
            Self::Secret => "secret",
            Self::Jwt => "jwt",
        }
    }
}

/// A request or call the key's allowlists refuse, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotAllowed {
    pub rule: Rule,
    pub message: String,
}

impl NotAllowed {
    /// The JSON-RPC error: the message names the rule, `data.rule` is its label.
    pub fn error(&self) -> ErrorObjectOwned {
        ErrorObject::owned(
            NOT_ALLOWED_CODE,
            self.message.clone(),
            Some(serde_json::json!({ "rule": self.rule.label() })),
        )
    }
}

/// A contract address as written on the command line: 20 bytes in hex, `0x` first.
pub fn parse_contract(text: &str) -> Result<Address, String> {
    let hex = text.trim();
    if !hex.starts_with("0x") || hex.len() != 42 {
        return Err(format!(
            "{text:?} is not an address: write 0x and 40 hex digits"
        ));
    }
    hex.parse::<Address>()
        .map_err(|e| format!("{text:?} is not an address: {e}"))
}

/// Text from a request header, shortened and quoted for an error message.
fn quoted(text: &str) -> String {
    let short: String = text.chars().take(200).collect();
    serde_json::Value::from(short).to_string()
}

impl KeyAllowlists {
    pub fn is_empty(&self) -> bool {
        self.origins.is_empty()
            && self.user_agents.is_empty()
            && self.methods.is_empty()
            && self.contracts.is_empty()
    }

    /// Checks the lists as stored: at most `MAX_ENTRIES` per type, no empty entry.
    pub fn check(&self) -> Result<(), String> {
        for (kind, count) in [
            ("origins", self.origins.len()),
            ("user agents", self.user_agents.len()),
            ("methods", self.methods.len()),
            ("contract addresses", self.contracts.len()),
        ] {
            if count > MAX_ENTRIES {
                return Err(format!(
                    "{count} {kind}: a key allows at most {MAX_ENTRIES} of each type"
                ));
            }
        }
        if self.user_agents.iter().any(|ua| ua.trim().is_empty()) {
            return Err("an allowed user agent must not be empty".into());
        }
        if let Some(method) = self
            .methods
            .iter()
            .find(|m| m.is_empty() || !m.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
        {
            return Err(format!("{method:?} is not a JSON-RPC method name"));
        }
        Ok(())
    }

    /// The request's `Origin` and `User-Agent` against the key's origin and user agent lists.
    pub fn admit_client(
        &self,
        origin: Option<&str>,
        user_agent: Option<&str>,
    ) -> Result<(), NotAllowed> {
        self.admit_client_of(Holder::Key, origin, user_agent)
    }

    /// One call against the key's method and contract address lists.
    pub fn admit_call(
        &self,
        method: &str,
        addresses: AddressParams,
        params: Option<&RawValue>,
    ) -> Result<(), NotAllowed> {
        self.admit_call_of(Holder::Key, method, addresses, params)
    }

    /// The request's `Origin` and `User-Agent` against the origin and user agent lists of
    /// `holder`.
    pub fn admit_client_of(
        &self,
        holder: Holder,
        origin: Option<&str>,
        user_agent: Option<&str>,
    ) -> Result<(), NotAllowed> {
        let whose = holder.text();
        if !self.origins.is_empty() {
            let index = &self.prepared.of(self).origins;
            let allowed = origin.is_some_and(|origin| index.any_matches(&self.origins, origin));
            if !allowed {
                let message = match origin {
                    Some(origin) => format!("origin {origin} is not allowed for {whose}"),
                    None => format!(
                        "a request without an Origin header is not allowed for {whose}: it allows listed origins only"
                    ),
                };
                return Err(NotAllowed {
                    rule: Rule::Origin,
                    message,
                });
            }
        }
        if !self.user_agents.is_empty() {
            let allowed = user_agent.is_some_and(|agent| match &self.prepared.of(self).agents {
                Some(automaton) => automaton.is_match(agent),
                None => self.user_agents.iter().any(|e| agent.contains(e.as_str())),
            });
            if !allowed {
                let message = match user_agent {
                    Some(agent) => {
                        format!("user agent {} is not allowed for {whose}", quoted(agent))
                    }
                    None => format!(
                        "a request without a User-Agent header is not allowed for {whose}: it allows listed user agents only"
                    ),
                };
                return Err(NotAllowed {
                    rule: Rule::UserAgent,
                    message,
                });
            }
        }
        Ok(())
    }

    /// One call of `method`, whose parameters name addresses as `addresses` says, against the
    /// method and contract address lists of `holder`.
    pub fn admit_call_of(
        &self,
        holder: Holder,
        method: &str,
        addresses: AddressParams,
        params: Option<&RawValue>,
    ) -> Result<(), NotAllowed> {
        let whose = holder.text();
        if !self.methods.is_empty() && !self.methods.iter().any(|m| m == method) {
            return Err(NotAllowed {
                rule: Rule::Method,
                message: format!("method {method} is not allowed for {whose}"),
            });
        }
        if self.contracts.is_empty() {
            return Ok(());
        }
        let refused = |message: String| {
            Err(NotAllowed {
                rule: Rule::Contract,
                message,
            })
        };
        match named_addresses(addresses, params) {
            Named::Nothing => Ok(()),
            Named::Addresses(addresses) => {
                match addresses.iter().find(|a| !self.contracts.contains(a)) {
                    Some(address) => refused(format!(
                        "contract address {address} is not allowed for {whose} ({method})"
                    )),
                    None => Ok(()),
                }
            }
            Named::Unbounded(what) => refused(format!(
                "{method} with {what} is not allowed for {whose}: it allows listed contract addresses only"
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn lists(value: serde_json::Value) -> KeyAllowlists {
        serde_json::from_value(value).unwrap()
    }

    /// Where the method table's row of `method` says its parameters name addresses.
    fn kind(method: &str) -> AddressParams {
        crate::row(method).map_or(AddressParams::NoAddress, |row| row.addresses)
    }

    fn call(lists: &KeyAllowlists, method: &str, params: serde_json::Value) -> Option<Rule> {
        let raw = serde_json::value::to_raw_value(&params).unwrap();
        lists
            .admit_call(method, kind(method), Some(&raw))
            .err()
            .map(|r| r.rule)
    }

    #[test]
    fn user_agents_match_anywhere_and_a_changed_copy_matches_its_own_entries() {
        let key = lists(json!({ "user_agents": ["bench-agent", "curl/"] }));
        let agent = |lists: &KeyAllowlists, ua: &str| lists.admit_client(None, Some(ua)).is_ok();
        assert!(agent(&key, "Mozilla/5.0 (X11) bench-agent"));
        assert!(agent(&key, "curl/8.5"));
        assert!(!agent(&key, "Wget/1.21"));
        assert!(!agent(&key, "bench-agen"));
        // The first check built the automaton; a copy changed afterwards builds its own.
        let mut changed = key.clone();
        changed.user_agents = vec!["Wget".into()];
        assert!(agent(&changed, "Wget/1.21"));
        assert!(!agent(&changed, "curl/8.5"));
        assert_eq!(key, key.clone());
    }

    #[test]
    fn types_are_anded_and_entries_ored() {
        let a = Address::repeat_byte(0xaa);
        let b = Address::repeat_byte(0xbb);
        let c = Address::repeat_byte(0xcc);
        let none = KeyAllowlists::default();
        assert!(none.is_empty());
        assert_eq!(call(&none, "eth_getBalance", json!([c])), None);
        assert!(none.admit_client(None, None).is_ok());

        let key = lists(json!({
            "origins": ["https://*.app.example", "http://localhost:3000"],
            "user_agents": ["Firefox", "Chrome"],
            "methods": ["eth_getBalance", "eth_getLogs", "eth_blockNumber"],
            "contracts": [a, b],
        }));
        key.check().unwrap();
        let ok = key.admit_client(
            Some("https://x.app.example"),
            Some("Mozilla/5.0 Chrome/120"),
        );
        assert!(ok.is_ok());
        let refused = key
            .admit_client(Some("https://evil.example"), Some("Chrome"))
            .unwrap_err();
        assert_eq!(refused.rule, Rule::Origin);
        assert_eq!(
            refused.message,
            "origin https://evil.example is not allowed for this key"
        );
        assert_eq!(
            key.admit_client(None, Some("Chrome")).unwrap_err().rule,
            Rule::Origin
        );
        let refused = key
            .admit_client(Some("http://localhost:3000"), Some("curl/8.5"))
            .unwrap_err();
        assert_eq!(refused.rule, Rule::UserAgent);
        assert!(
            refused.message.contains("\"curl/8.5\""),
            "{}",
            refused.message
        );

        assert_eq!(call(&key, "eth_getBalance", json!([a, "latest"])), None);
        assert_eq!(call(&key, "eth_getBalance", json!([b])), None);
        assert_eq!(
            call(&key, "eth_getBalance", json!([c])),
            Some(Rule::Contract)
        );
        assert_eq!(call(&key, "eth_getCode", json!([a])), Some(Rule::Method));
        assert_eq!(call(&key, "eth_blockNumber", json!([])), None);
        assert_eq!(
            call(&key, "eth_getLogs", json!([{"address": [a, b]}])),
            None
        );
        assert_eq!(
            call(&key, "eth_getLogs", json!([{"address": [a, c]}])),
            Some(Rule::Contract)
        );
        assert_eq!(call(&key, "eth_getLogs", json!([{}])), Some(Rule::Contract));
        let refused = key
            .admit_call(
                "eth_getLogs",
                kind("eth_getLogs"),
                Some(&serde_json::value::to_raw_value(&json!([{}])).unwrap()),
            )
            .unwrap_err();
        assert_eq!(
            refused.error().message(),
            "eth_getLogs with a log filter without an address is not allowed for this key: it allows listed contract addresses only"
        );

        // Only contracts: every method may be called, naming only listed addresses.
        let contracts = lists(json!({"contracts": [a]}));
        assert_eq!(call(&contracts, "eth_getCode", json!([a])), None);
        assert_eq!(
            call(&contracts, "eth_call", json!([{"to": c}])),
            Some(Rule::Contract)
        );
        assert_eq!(call(&contracts, "eth_chainId", json!([])), None);
    }

    #[test]
    fn lists_are_checked_and_stored_as_written() {
        let many: Vec<String> = (0..31).map(|i| format!("agent{i}")).collect();
        let too_many = lists(json!({ "user_agents": many }));
        assert!(too_many.check().unwrap_err().contains("at most 30"));
        assert!(lists(json!({"methods": ["eth call"]})).check().is_err());
        assert!(
            serde_json::from_value::<KeyAllowlists>(json!({"origins": ["https://a/b"]})).is_err()
        );
        let key = lists(json!({"origins": ["https://*.App.example"]}));
        assert_eq!(
            serde_json::to_value(&key).unwrap(),
            json!({"origins": ["https://*.App.example"]})
        );
        assert_eq!(
            serde_json::to_value(KeyAllowlists::default()).unwrap(),
            json!({})
        );
    }
}
