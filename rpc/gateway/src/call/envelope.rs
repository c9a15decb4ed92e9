//! The JSON-RPC envelope of an HTTP body, read as geth reads it where jsonrpsee reads it
//! differently:
//!
//! - a request without `id` (with `"jsonrpc":"2.0"` and a method) is a notification: geth runs
//!   it and answers nothing, so a body of only notifications gets an empty HTTP 200 (jsonrpsee
//!   sends `null`); quarry's methods have no effects, so notifications are not run at all;
//! - an `id` that is an object or an array is an invalid request: -32600 with id `null`
//!   (jsonrpsee takes the request for a notification and answers nothing);
//! - so is a request without `id` that is not a notification (no method, an empty one, another
//!   version than 2.0);
//! - an `id` that jsonrpsee cannot hold (a boolean, a negative, fractional or larger than 64-bit
//!   number) is echoed as sent, as geth does: it travels through jsonrpsee as a placeholder
//!   string, replaced by the original in the answer.
//!
//! Everything else goes to jsonrpsee unchanged: `inspect` only parses the envelope (the `id`,
//! `method` and `jsonrpc` fields), and a body it cannot read is jsonrpsee's to refuse.

use jsonrpsee::types::{Id, Request};
use serde::Deserialize;
use serde_json::value::RawValue;
use std::{borrow::Cow, collections::BTreeMap};

/// geth's answer to an invalid request.
pub const INVALID_REQUEST: &str =
    r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"invalid request"}}"#;

/// What to do with a body.
#[derive(Debug, PartialEq, Eq)]
pub enum BodyPlan {
    /// jsonrpsee reads it as geth does: pass it on as it is.
    Unchanged,
    /// Answered with this body (empty: nothing to answer) without running anything.
    Answered(String),
    /// Pass this body on instead, and `finish` jsonrpsee's answer.
    Rewrite(Rewrite),
}

/// A body rewritten for jsonrpsee, and how to turn its answer into geth's.
#[derive(Debug, PartialEq, Eq)]
pub struct Rewrite {
    pub body: String,
    /// Placeholder ids (with their quotes) and the ids they stand for.
    ids: Vec<(String, String)>,
    /// For a batch in which some requests are answered here: per request of the original batch
    /// that gets an answer, whether jsonrpsee gives it (`true`) or it is an invalid request.
    slots: Option<Vec<bool>>,
}

impl Rewrite {
    /// geth's answer, from jsonrpsee's answer to `self.body`.
    pub fn finish(&self, answer: &str) -> String {
        let mut text = match &self.slots {
            Some(slots) => merge(slots, answer).unwrap_or_else(|| answer.to_string()),
            None => answer.to_string(),
        };
        for (placeholder, id) in &self.ids {
            text = text.replace(placeholder.as_str(), id);
        }
        text
    }
}

/// jsonrpsee's answers to the forwarded requests, with the invalid requests' answers put back
/// in their places. `None` when the answer is not one entry per forwarded request (the whole
/// batch was refused, for instance): it then stands as it is.
fn merge(slots: &[bool], answer: &str) -> Option<String> {
    let answers: Vec<&RawValue> = serde_json::from_str(answer).ok()?;
    if answers.len() != slots.iter().filter(|forwarded| **forwarded).count() {
        return None;
    }
    let mut answers = answers.into_iter();
    let entries: Vec<&str> = slots
        .iter()
        .map(|&forwarded| match forwarded {
            true => answers.next().map_or(INVALID_REQUEST, |a| a.get()),
            false => INVALID_REQUEST,
        })
        .collect();
    Some(format!("[{}]", entries.join(",")))
}

/// The envelope fields of one request. `id` is `Some` whenever the field is present, `null`
/// included.
#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(borrow, default)]
    jsonrpc: Option<Cow<'a, str>>,
    #[serde(borrow, default, deserialize_with = "present")]
    id: Option<&'a RawValue>,
    #[serde(borrow, default)]
    method: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    params: Option<&'a RawValue>,
}

fn present<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<&'de RawValue>, D::Error> {
    <&RawValue>::deserialize(deserializer).map(Some)
}

/// One request of a body, as geth tells them apart.
#[derive(Debug, PartialEq, Eq)]
enum Kind {
    /// jsonrpsee reads it as geth does.
    Keep,
    Notification,
    /// Answered with `INVALID_REQUEST`.
    Invalid,
    /// A valid id jsonrpsee cannot hold.
    OddId,
}

fn kind(envelope: &Envelope<'_>) -> Kind {
    let Some(id) = envelope.id else {
        let version = envelope.jsonrpc.as_deref() == Some("2.0");
        let method = envelope.method.as_deref().is_some_and(|m| !m.is_empty());
        return if version && method {
            Kind::Notification
        } else {
            Kind::Invalid
        };
    };
    let id = id.get();
    if id.starts_with(['{', '[']) {
        Kind::Invalid
    } else if id == "null" || id.starts_with('"') || id.parse::<u64>().is_ok() {
        Kind::Keep
    } else {
        Kind::OddId
    }
}

/// `body` as the call jsonrpsee would read from it, when it is a single call (`"jsonrpc":
/// "2.0"`, a method, and an id `inspect` leaves unchanged): one parse of the body instead of
/// `inspect`'s and then jsonrpsee's. `None` for anything else, which goes through `inspect`.
pub fn call(body: &[u8]) -> Option<Request<'_>> {
    let first = body.iter().find(|b| !b.is_ascii_whitespace());
    if first != Some(&b'{') {
        return None;
    }
    let envelope = serde_json::from_slice::<Envelope<'_>>(body).ok()?;
    if envelope.jsonrpc.as_deref() != Some("2.0") || kind(&envelope) != Kind::Keep {
        return None;
    }
    let raw_id = envelope.id?.get();
    let id = if raw_id == "null" {
        Id::Null
    } else if raw_id.starts_with('"') {
        Id::Str(serde_json::from_str(raw_id).ok()?)
    } else {
        Id::Number(raw_id.parse().ok()?)
    };
    let mut request = Request::borrowed("", envelope.params, id);
    request.method = envelope.method?;
    Some(request)
}

/// What to do with `body`, given the most requests a batch may hold (a longer batch is left to
/// jsonrpsee, which refuses it whole).
pub fn inspect(body: &[u8], max_batch: usize) -> BodyPlan {
    let start = body
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(body.len());
    match body.get(start) {
        Some(b'{') => single(body),
        Some(b'[') => batch(body, max_batch),
        _ => BodyPlan::Unchanged,
    }
}

fn single(body: &[u8]) -> BodyPlan {
    let Ok(envelope) = serde_json::from_slice::<Envelope<'_>>(body) else {
        return BodyPlan::Unchanged;
    };
    match kind(&envelope) {
        Kind::Keep => BodyPlan::Unchanged,
        Kind::Notification => BodyPlan::Answered(String::new()),
        Kind::Invalid => BodyPlan::Answered(INVALID_REQUEST.to_string()),
        Kind::OddId => {
            let Ok(text) = std::str::from_utf8(body) else {
                return BodyPlan::Unchanged;
            };
            let mut placeholders = Placeholders::new(body);
            match placeholders.replace_id(text) {
                Some(body) => BodyPlan::Rewrite(Rewrite {
                    body,
                    ids: placeholders.ids,
                    slots: None,
                }),
                None => BodyPlan::Unchanged,
            }
        }
    }
}

fn batch(body: &[u8], max_batch: usize) -> BodyPlan {
    let Ok(entries) = serde_json::from_slice::<Vec<&RawValue>>(body) else {
        return BodyPlan::Unchanged;
    };
    if entries.is_empty() || entries.len() > max_batch {
        return BodyPlan::Unchanged;
    }
    let kinds: Vec<Kind> = entries
        .iter()
        .map(
            |entry| match serde_json::from_str::<Envelope<'_>>(entry.get()) {
                Ok(envelope) => kind(&envelope),
                // Not an object, or not one geth could read: jsonrpsee refuses it on its own.
                Err(_) => Kind::Keep,
            },
        )
        .collect();
    if kinds.iter().all(|k| *k == Kind::Keep) {
        return BodyPlan::Unchanged;
    }
    let mut placeholders = Placeholders::new(body);
    let mut forwarded = Vec::new();
    let mut slots = Vec::new();
    for (entry, kind) in entries.iter().zip(&kinds) {
        match kind {
            Kind::Keep => forwarded.push(entry.get().to_string()),
            Kind::OddId => match placeholders.replace_id(entry.get()) {
                Some(rewritten) => forwarded.push(rewritten),
                None => return BodyPlan::Unchanged,
            },
            Kind::Invalid => {
                slots.push(false);
                continue;
            }
            Kind::Notification => continue,
        }
        slots.push(true);
    }
    if forwarded.is_empty() {
        return BodyPlan::Answered(if slots.is_empty() {
            String::new()
        } else {
            format!("[{}]", vec![INVALID_REQUEST; slots.len()].join(","))
        });
    }
    let answered_here = slots.iter().any(|forwarded| !forwarded);
    BodyPlan::Rewrite(Rewrite {
        body: format!("[{}]", forwarded.join(",")),
        ids: placeholders.ids,
        slots: answered_here.then_some(slots),
    })
}

/// Placeholder ids that occur nowhere in the body, so that no answer can hold one unless it
/// stands for an id.
struct Placeholders {
    prefix: String,
    ids: Vec<(String, String)>,
}

impl Placeholders {
    fn new(body: &[u8]) -> Self {
        let prefix = (0u64..)
            .map(|n| format!("quarry-id-{n}-"))
            .find(|prefix| {
                !body
                    .windows(prefix.len())
                    .any(|window| window == prefix.as_bytes())
            })
            .unwrap_or_default();
        Self {
            prefix,
            ids: Vec::new(),
        }
    }

    /// The request `text` (an object) with its id replaced by a new placeholder.
    fn replace_id(&mut self, text: &str) -> Option<String> {
        let fields: BTreeMap<Cow<'_, str>, &RawValue> = serde_json::from_str(text).ok()?;
        let id = fields.get("id")?;
        let placeholder = format!("\"{}{}\"", self.prefix, self.ids.len());
        self.ids.push((placeholder.clone(), id.get().to_string()));
        let mut out = String::with_capacity(text.len() + placeholder.len());
        out.push('{');
        for (i, (name, value)) in fields.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push_str(&serde_json::to_string(name).ok()?);
            out.push(':');
            out.push_str(if name == "id" {
                &placeholder
            } else {
                value.get()
            });
        }
        out.push('}');
        Some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(body: &str) -> BodyPlan {
        inspect(body.as_bytes(), 100)
    }

    #[test]
    fn ordinary_requests_pass_unchanged() {
        for body in [
            r#"{"jsonrpc":"2.0","id":1,"method":"eth_chainId"}"#,
            r#"{"jsonrpc":"2.0","id":"a","method":"eth_chainId"}"#,
            r#"{"jsonrpc":"2.0","id":null,"method":"eth_chainId"}"#,
            r#"[{"jsonrpc":"2.0","id":1,"method":"eth_chainId"},5]"#,
            "{oops",
            "[]",
            "  x",
            "",
        ] {
            assert_eq!(plan(body), BodyPlan::Unchanged, "{body}");
        }
    }

    #[test]
    fn notifications_get_nothing_and_object_ids_are_invalid() {
        let answer = |s: &str| BodyPlan::Answered(s.to_string());
        assert_eq!(
            plan(r#" {"jsonrpc":"2.0","method":"eth_chainId"}"#),
            answer("")
        );
        assert_eq!(
            plan(r#"{"jsonrpc":"2.0","id":{"a":1},"method":"eth_chainId"}"#),
            answer(INVALID_REQUEST)
        );
        assert_eq!(
            plan(r#"{"jsonrpc":"2.0","id":[1],"method":"eth_chainId"}"#),
            answer(INVALID_REQUEST)
        );
        assert_eq!(
            plan(r#"{"jsonrpc":"2.0","method":""}"#),
            answer(INVALID_REQUEST)
        );
        let note = r#"{"jsonrpc":"2.0","method":"eth_chainId"}"#;
        assert_eq!(plan(&format!("[{note},{note}]")), answer(""));
        assert_eq!(
            plan(&format!(r#"[{note},{{"id":{{}},"method":"x"}}]"#)),
            answer(&format!("[{INVALID_REQUEST}]"))
        );
    }

    #[test]
    fn odd_ids_are_echoed_and_answers_keep_their_places() {
        let body = r#"[{"jsonrpc":"2.0","method":"a"},{"jsonrpc":"2.0","id":1,"method":"b"},{"jsonrpc":"2.0","id":{},"method":"c"},{"jsonrpc":"2.0","id":true,"method":"d"},{"jsonrpc":"2.0","id":-1.5e3,"method":"e"}]"#;
        let BodyPlan::Rewrite(rewrite) = plan(body) else {
            panic!("not rewritten")
        };
        assert_eq!(
            rewrite.body,
            r#"[{"jsonrpc":"2.0","id":1,"method":"b"},{"id":"quarry-id-0-0","jsonrpc":"2.0","method":"d"},{"id":"quarry-id-0-1","jsonrpc":"2.0","method":"e"}]"#
        );
        let answer = r#"[{"jsonrpc":"2.0","id":1,"result":"b"},{"jsonrpc":"2.0","id":"quarry-id-0-0","result":"d"},{"jsonrpc":"2.0","id":"quarry-id-0-1","result":"e"}]"#;
        assert_eq!(
            rewrite.finish(answer),
            format!(
                r#"[{{"jsonrpc":"2.0","id":1,"result":"b"}},{INVALID_REQUEST},{{"jsonrpc":"2.0","id":true,"result":"d"}},{{"jsonrpc":"2.0","id":-1.5e3,"result":"e"}}]"#
            )
        );
        // A refusal of the whole batch stands as it is.
        let refused = r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32010,"message":"x"}}"#;
        assert_eq!(rewrite.finish(refused), refused);
        // A placeholder never collides with what the body holds.
        let BodyPlan::Rewrite(rewrite) =
            plan(r#"{"jsonrpc":"2.0","id":false,"method":"quarry-id-0-"}"#)
        else {
            panic!("not rewritten")
        };
        assert!(
            rewrite.body.contains("\"quarry-id-1-0\""),
            "{}",
            rewrite.body
        );
    }
}
