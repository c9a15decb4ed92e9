//! README.md's curl examples, run against the bundled dev chain (testdata/devnet) served by a
//! real `quarry serve`, so that every value the README shows is one quarry gives.
//!
//! The rule, applied to every line of README.md:
//!
//! - An **example** is a line that starts with `q '` and ends with `'` (the shell function `q`
//!   the README defines POSTs its argument to the dev chain). The text between the quotes is
//!   sent as the HTTP body of a JSON-RPC request, exactly as written, to `/v3/<key>`.
//! - A line `NAME=$(q '<json>' | jq -r .result)` is an example too, and the `result` of its
//!   answer (a string) is kept as `NAME`: in later examples, `'"$NAME"'` (the shell's way to put
//!   a variable inside single quotes) stands for that string.
//! - An example's **expectation** is a line starting with `#  -> ` directly after it (only
//!   comment lines starting with `#` may come between), plus the lines right after that one that
//!   start with `#` and six spaces (continuations). Each line's text after that prefix, up to
//!   the first run of two or more spaces (what follows is a comment for the reader), is joined to
//!   the others with nothing between them: that is the **pattern**.
//! - The pattern must match the whole answer, as curl prints it (the HTTP body, whitespace at
//!   its ends trimmed), where `...` stands for any text (also none) and every other character
//!   must be the same. So `"0xc48af196..."` is a string starting with those digits, and
//!   `{..."status":"0x1",...}` an object holding that member somewhere inside it.
//! - An example without an expectation must answer with a `result`, or, when a comment line
//!   directly above it says "revert", with error code 3 (execution reverted).
//!
//! The section "Every method on the dev chain" must exist and hold at least 40 examples, and
//! every method of the method table (the method names quoted in rpc/eth/src/methods.rs) and every
//! filter method must have an example, so that an edit cannot empty the check by accident and a
//! new method cannot go unshown.
//!
//! Besides the examples: every command that `quarry --help` lists has a section headed
//! ``### `quarry COMMAND ...` ``, and every field of `quarry serve`'s config (rpc/gateway/src/config.rs
//! and rpc/gateway/src/weights.rs) is named in the section "Configuration of `quarry serve`".

#![allow(clippy::unwrap_used)]

mod support;

use serde_json::Value;
use std::{
    collections::{HashMap, HashSet},
    path::{Path, PathBuf},
};
use support::{KEY, Server, ingested};

/// One `q '...'` line of the README and what it expects.
#[derive(Debug)]
struct Example {
    /// README.md's line number of the request (1-based).
    line: usize,
    request: String,
    /// `Some(name)` for `name=$(q '...' | jq -r .result)`.
    keep_as: Option<String>,
    pattern: Option<String>,
    /// A comment line right above it mentions a revert.
    reverts: bool,
}

fn readme() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md");
    std::fs::read_to_string(&path).unwrap()
}

fn devnet() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/devnet")
}

/// The request of an example line, and the name its result is kept as, if any.
fn example_request(line: &str) -> Option<(String, Option<String>)> {
    if let Some(rest) = line.strip_prefix("q '") {
        return Some((rest.strip_suffix('\'')?.to_string(), None));
    }
    let (name, rest) = line.split_once("=$(q '")?;
    let request = rest.strip_suffix("' | jq -r .result)")?;
    let is_name = !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    is_name.then(|| (request.to_string(), Some(name.to_string())))
}

/// A line's part of a pattern: its text up to the first run of two spaces.
fn pattern_part(text: &str) -> &str {
    text.split_once("  ")
        .map_or(text, |(pattern, _)| pattern)
        .trim()
}

/// Every example of the README, in order, with its expectation.
fn examples(text: &str) -> Vec<Example> {
    let lines: Vec<&str> = text.lines().collect();
    let mut examples = Vec::new();
    let mut comment_above = Vec::new();
    let mut index = 0;
    while index < lines.len() {
        let line = lines[index];
        index += 1;
        let Some((request, keep_as)) = example_request(line) else {
            if line.starts_with('#') {
                comment_above.push(line);
            } else {
                comment_above.clear();
            }
            continue;
        };
        let reverts = comment_above.iter().any(|c| c.contains("revert"));
        comment_above.clear();
        let mut example = Example {
            line: index,
            request,
            keep_as,
            pattern: None,
            reverts,
        };
        // Comment lines may sit between an example and its expectation.
        let mut ahead = index;
        while ahead < lines.len() && lines[ahead].starts_with('#') {
            if let Some(first) = lines[ahead].strip_prefix("#  -> ") {
                let mut pattern = pattern_part(first).to_string();
                ahead += 1;
                while let Some(more) = lines.get(ahead).and_then(|l| l.strip_prefix("#      ")) {
                    pattern.push_str(pattern_part(more));
                    ahead += 1;
                }
                example.pattern = Some(pattern);
                index = ahead;
                break;
            }
            ahead += 1;
        }
        examples.push(example);
    }
    examples
}

/// Whether `text` matches `pattern`, where `...` stands for any text and all else is literal.
fn matches(pattern: &str, text: &str) -> bool {
    let pieces: Vec<&str> = pattern.split("...").collect();
    let (first, last) = (pieces[0], pieces[pieces.len() - 1]);
    if pieces.len() == 1 {
        return pattern == text;
    }
    if text.len() < first.len() + last.len() || !text.starts_with(first) || !text.ends_with(last) {
        return false;
    }
    // Each middle piece at its earliest place after the one before: if any placement works,
    // the earliest ones do, since `...` takes any text.
    let mut rest = &text[first.len()..text.len() - last.len()];
    for piece in &pieces[1..pieces.len() - 1] {
        match rest.find(piece) {
            Some(at) => rest = &rest[at + piece.len()..],
            None => return false,
        }
    }
    true
}

/// `request` with every `'"$NAME"'` replaced by the kept value of NAME.
fn substitute(request: &str, kept: &HashMap<String, String>) -> String {
    let mut request = request.to_string();
    for (name, value) in kept {
        request = request.replace(&format!("'\"${name}\"'"), value);
    }
    request
}

#[test]
fn the_pattern_rule() {
    let hash = r#"{"hash":"0xc48af196aa","uncles":[]}"#;
    assert!(matches(r#"{"hash":"0xc48af196...",...}"#, hash));
    assert!(matches(r#"{..."uncles":[]}"#, hash));
    assert!(matches("...", hash));
    assert!(matches(hash, hash));
    assert!(!matches(r#"{"hash":"0xc48af197...",...}"#, hash));
    assert!(!matches(r#"{"hash":"0xc48af196..."}"#, hash));
    assert!(!matches(r#"{..."uncles":[]}}"#, hash));
    assert!(!matches("0x...a...a", "0xa"));
    assert!(matches("0x...a...a", "0xaba"));
    assert_eq!(pattern_part(r#""0x2a"   (42, as of block 2)"#), r#""0x2a""#);
    let text = "q '{\"a\":1}'\n# what it shows\n#  -> {\"b\":...,  comment\n#      \"c\":2}\n\
                id=$(q '{\"d\":3}' | jq -r .result)\n# reverts\nq '{\"e\":\"'\"$id\"'\"}'\n";
    let found = examples(text);
    assert_eq!(found.len(), 3);
    assert_eq!(found[0].pattern.as_deref(), Some("{\"b\":...,\"c\":2}"));
    assert_eq!(found[1].keep_as.as_deref(), Some("id"));
    assert!(found[2].reverts && found[2].pattern.is_none());
    let kept = HashMap::from([("id".to_string(), "0x7".to_string())]);
    assert_eq!(substitute(&found[2].request, &kept), "{\"e\":\"0x7\"}");
}

/// Sends one example and checks its answer, which it returns.
fn check(
    server: &Server,
    example: &Example,
    kept: &HashMap<String, String>,
) -> Result<Value, String> {
    let request = substitute(&example.request, kept);
    let (status, body) = server.post_raw(&format!("/v3/{KEY}"), &request);
    let body = body.trim();
    let at = format!(
        "README.md line {}: {request}\n  answer: {body}",
        example.line
    );
    if status != 200 {
        return Err(format!("{at}\n  HTTP status {status}"));
    }
    let answer: Value = serde_json::from_str(body).map_err(|e| format!("{at}\n  not JSON: {e}"))?;
    match &example.pattern {
        Some(pattern) if !matches(pattern, body) => {
            Err(format!("{at}\n  does not match the README's\n  {pattern}"))
        }
        Some(_) => Ok(answer),
        None if example.reverts => match answer["error"]["code"].as_i64() {
            Some(3) => Ok(answer),
            _ => Err(format!("{at}\n  the README says it reverts (error code 3)")),
        },
        None if answer.get("error").is_some() || answer.get("result").is_none() => {
            Err(format!("{at}\n  the README shows no error here"))
        }
        None => Ok(answer),
    }
}

/// The method names quoted in rpc/eth/src/methods.rs (the method table), and the filter and
/// transaction methods the gateway answers itself.
fn served_methods() -> Vec<String> {
    let table = Path::new(env!("CARGO_MANIFEST_DIR")).join("rpc/eth/src/methods.rs");
    let text = std::fs::read_to_string(table).unwrap();
    let mut methods: Vec<String> = text
        .split('"')
        .skip(1)
        .step_by(2)
        .filter(|quoted| {
            let (prefix, name) = quoted.split_once('_').unwrap_or_default();
            ["eth", "net", "web3", "debug", "rollup"].contains(&prefix)
                && !name.is_empty()
                && name.chars().all(|c| c.is_ascii_alphanumeric())
        })
        .map(str::to_string)
        .collect();
    methods.extend(
        [
            "eth_newFilter",
            "eth_newBlockFilter",
            "eth_getFilterChanges",
            "eth_getFilterLogs",
            "eth_uninstallFilter",
            "eth_sendRawTransaction",
        ]
        .map(String::from),
    );
    methods.sort();
    methods.dedup();
    methods
}

#[test]
fn every_served_method_has_an_example() {
    let text = readme();
    let methods = served_methods();
    assert!(methods.len() > 40, "{methods:?}");
    let examples = examples(&text);
    // Kept results stand in as "x": only the method names matter here.
    let kept: HashMap<String, String> = examples
        .iter()
        .filter_map(|e| Some((e.keep_as.clone()?, "x".to_string())))
        .collect();
    let shown: HashSet<String> = examples
        .iter()
        .filter_map(|e| serde_json::from_str::<Value>(&substitute(&e.request, &kept)).ok())
        .filter_map(|request| request["method"].as_str().map(str::to_string))
        .collect();
    let missing: Vec<&String> = methods.iter().filter(|m| !shown.contains(*m)).collect();
    assert!(
        missing.is_empty(),
        "README.md has no example of {missing:?}"
    );
}

/// The text of README.md from the heading `from` to the next heading of the same level.
fn section<'a>(text: &'a str, from: &str) -> &'a str {
    let start = text
        .find(from)
        .unwrap_or_else(|| panic!("README.md has no heading {from:?}"));
    let level = &from[..=from.find(' ').unwrap_or_default()];
    let rest = &text[start + from.len()..];
    let end = rest
        .find(&format!("\n{level}"))
        .map_or(rest.len(), |at| at + 1);
    &text[start..start + from.len() + end]
}

/// Every field of `quarry serve`'s config (rpc/gateway/src/config.rs and its `[weights]` in
/// rpc/gateway/src/weights.rs) is named in the README's configuration section.
#[test]
fn every_config_key_is_documented() {
    let text = readme();
    let documented = section(&text, "## Configuration of `quarry serve`");
    let gateway = Path::new(env!("CARGO_MANIFEST_DIR")).join("rpc/gateway/src");
    let mut missing = Vec::new();
    let mut fields = 0;
    for file in ["config.rs", "weights.rs"] {
        let source = std::fs::read_to_string(gateway.join(file)).unwrap();
        let source = source.split("#[cfg(test)]").next().unwrap_or_default();
        for line in source.lines() {
            let Some(field) = line
                .strip_prefix("    pub ")
                .and_then(|rest| rest.split_once(':'))
                .map(|(name, _)| name)
                .filter(|name| name.chars().all(|c| c.is_ascii_lowercase() || c == '_'))
            else {
                continue;
            };
            fields += 1;
            if !documented.contains(field) {
                missing.push(field.to_string());
            }
        }
    }
    assert!(fields > 40, "only {fields} config fields found");
    assert!(
        missing.is_empty(),
        "config keys missing from README.md: {missing:?}"
    );
}

/// Every command `quarry --help` lists has a section of its own in the README.
#[test]
fn every_command_is_documented() {
    let text = readme();
    let output = std::process::Command::new(support::QUARRY)
        .arg("--help")
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&output.stdout);
    let commands: Vec<&str> = help
        .split("Commands:")
        .nth(1)
        .unwrap_or_default()
        .split("Options:")
        .next()
        .unwrap_or_default()
        .lines()
        .filter_map(|line| line.split_whitespace().next())
        .filter(|command| *command != "help")
        .collect();
    assert!(commands.len() >= 10, "{help}");
    for command in commands {
        assert!(
            text.contains(&format!("### `quarry {command} ")),
            "README.md has no section \"### `quarry {command} ...`\""
        );
    }
}

#[test]
fn every_curl_example_of_the_readme_answers_as_shown() {
    let text = readme();
    let section = "### Every method on the dev chain";
    let start = text
        .find(section)
        .unwrap_or_else(|| panic!("README.md has no section \"{section}\""));
    let in_section = examples(&text[start..]).len();
    let examples = examples(&text);
    assert!(
        in_section >= 40,
        "{section} holds {in_section} examples: fewer than expected"
    );
    assert!(
        text.contains(
            "q() { curl -s -H 'Content-Type: application/json' \
             http://127.0.0.1:8545/v3/dev-key -d \"$1\"; echo; }"
        ),
        "README.md no longer defines q as this test reads it"
    );

    let server = Server::start(&ingested(&devnet()), "");
    let mut kept = HashMap::new();
    let mut failures = Vec::new();
    for example in &examples {
        match check(&server, example, &kept) {
            Ok(answer) => {
                if let Some(name) = &example.keep_as {
                    let value = answer["result"].as_str().unwrap_or_default();
                    kept.insert(name.clone(), value.to_string());
                }
            }
            Err(failure) => failures.push(failure),
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} README examples are not what quarry answers:\n\n{}",
        failures.len(),
        examples.len(),
        failures.join("\n\n")
    );
}
