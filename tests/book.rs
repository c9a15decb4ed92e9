//! The book (docs/, as docs/SUMMARY.md lists its pages) and README.md, checked against the real
//! binary: every curl example is sent to the bundled dev chain (testdata/devnet) served by a real
//! `quarry serve`, and every command example is run in a scratch directory, so that every value
//! the manual shows is one quarry gives.
//!
//! The text read is README.md, then each page of docs/SUMMARY.md in its order. Two kinds of
//! examples are run:
//!
//! - A **curl example** is a line that starts with `q '` and ends with `'` (the shell function
//!   `q`, defined in README.md and in docs/examples.md, POSTs its argument to the dev chain). The
//!   text between the quotes is sent as the HTTP body of a JSON-RPC request, exactly as written,
//!   to `/v3/<key>`. A line `NAME=$(q '<json>' | jq -r .result)` is a curl example too, and the
//!   `result` of its answer (a string) is kept as `NAME`: in later examples, `'"$NAME"'` (the
//!   shell's way to put a variable inside single quotes) stands for that string.
//! - A **command example** is a line inside a ```` ```sh ```` block that starts with `quarry `
//!   and has an expectation (below). It is run with the binary this test builds, its arguments
//!   split at spaces (no shell quoting or variables), in a scratch directory that holds a link
//!   `testdata` to the repository's testdata: the scratch directory stands for the repository's
//!   root, where the book runs its examples. Each page (and README.md) gets its own scratch
//!   directory, and its command examples run in the page's order, so that a later one finds what
//!   an earlier one wrote (the datadir `data/devnet`, say). It must exit with status 0, and its
//!   pattern must match one line of what it printed (stdout and stderr, each line trimmed). A
//!   `quarry` line without an expectation is shown, not run: `quarry serve`, `quarry dev` and
//!   `quarry follow` run until stopped, `quarry blocktest` needs the fixture suites of
//!   ../shared (`.ci/run` runs it), and some examples need the network (`--era-url`) or another
//!   machine.
//! - An example's **expectation** is a line starting with `#  -> ` directly after it (only
//!   comment lines starting with `#` may come between), plus the lines right after that one that
//!   start with `#` and six spaces (continuations). Each line's text after that prefix, up to
//!   the first run of two or more spaces (what follows is a comment for the reader), is joined to
//!   the others with nothing between them: that is the **pattern**.
//! - A pattern must match the whole text it is compared with (a curl example's answer as curl
//!   prints it, the HTTP body with whitespace at its ends trimmed; one line of a command's
//!   output), where `...` stands for any text (also none) and every other character must be the
//!   same. So `"0xc48af196..."` is a string starting with those digits, and
//!   `{..."status":"0x1",...}` an object holding that member somewhere inside it.
//! - A curl example without an expectation must answer with a `result`, or, when a comment line
//!   directly above it says "revert", with error code 3 (execution reverted).
//!
//! docs/examples.md ("Every method on the dev chain") must hold at least 40 curl examples, and
//! every eth_, net_, web3_, debug_ and rollup_ method of the method table
//! (`quarry_gateway::served_methods`) must have one but the three a curl cannot show (a
//! WebSocket's eth_subscribe and eth_unsubscribe, and eth_sendRawTransactionSync), so that an edit cannot empty the check by accident and a new
//! method cannot go unshown. Every command that `quarry --help` lists has a section headed
//! ``## `quarry COMMAND ...` `` in docs/commands.md, and every command but the four named above
//! has a command example that is run. Every field of `quarry serve`'s config
//! (rpc/gateway/src/config.rs and rpc/gateway/src/limits/weights.rs) is named in docs/configuration.md.
//! Every link from one page to another names a page of the book and, after `#`, a heading of
//! that page.

#![allow(clippy::unwrap_used)]

mod support;

use serde_json::Value;
use std::{
    collections::{HashMap, HashSet},
    path::{Path, PathBuf},
    process::Command,
};
use support::{KEY, Server, ingested};

/// The commands that the book shows without running: they run until stopped (`serve`, `dev`,
/// `follow`), or need the fixture suites of ../shared (`blocktest`).
const NOT_RUN: [&str; 4] = ["serve", "dev", "follow", "blocktest"];

/// A page of the manual: its path from the repository's root, and its text.
struct Page {
    path: String,
    text: String,
}

/// One `q '...'` line of a page and what it expects.
#[derive(Debug)]
struct Example {
    /// The page's path and the request's line number (1-based) on it.
    at: String,
    request: String,
    /// `Some(name)` for `name=$(q '...' | jq -r .result)`.
    keep_as: Option<String>,
    pattern: Option<String>,
    /// A comment line right above it mentions a revert.
    reverts: bool,
}

/// One `quarry ...` line of a page's `sh` blocks and what it expects.
#[derive(Debug)]
struct CommandExample {
    /// The line number (1-based) of the command on its page.
    line: usize,
    /// The arguments after `quarry`.
    args: Vec<String>,
    /// None: shown, not run.
    pattern: Option<String>,
}

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn read(path: &str) -> Page {
    let text = std::fs::read_to_string(root().join(path))
        .unwrap_or_else(|e| panic!("cannot read {path}: {e}"));
    Page {
        path: path.to_string(),
        text,
    }
}

/// The pages docs/SUMMARY.md links to, in its order (paths under docs/).
fn summary_pages() -> Vec<String> {
    let summary = read("docs/SUMMARY.md").text;
    let pages: Vec<String> = summary
        .split("](")
        .skip(1)
        .filter_map(|rest| rest.split_once(')'))
        .map(|(target, _)| format!("docs/{target}"))
        .collect();
    assert!(pages.len() >= 10, "docs/SUMMARY.md lists {pages:?}");
    pages
}

/// README.md, then every page of the book.
fn pages() -> Vec<Page> {
    let mut pages = vec![read("README.md")];
    pages.extend(summary_pages().iter().map(|path| read(path)));
    pages
}

fn page(path: &str) -> Page {
    assert!(
        summary_pages().iter().any(|listed| listed == path),
        "docs/SUMMARY.md does not list {path}"
    );
    read(path)
}

fn devnet() -> PathBuf {
    root().join("testdata/devnet")
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

/// The expectation that follows the example at `lines[index - 1]`, if any, and the index of
/// the first line after it.
fn expectation(lines: &[&str], index: usize) -> (Option<String>, usize) {
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
            return (Some(pattern), ahead);
        }
        ahead += 1;
    }
    (None, index)
}

/// Every curl example of a page, in order, with its expectation.
fn examples(path: &str, text: &str) -> Vec<Example> {
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
        let (pattern, next) = expectation(&lines, index);
        examples.push(Example {
            at: format!("{path} line {index}"),
            request,
            keep_as,
            pattern,
            reverts,
        });
        index = next;
    }
    examples
}

/// Every `quarry ...` line of a page's ```` ```sh ```` blocks, in order, with its expectation.
fn command_examples(text: &str) -> Vec<CommandExample> {
    let lines: Vec<&str> = text.lines().collect();
    let mut found = Vec::new();
    let mut in_sh = false;
    let mut index = 0;
    while index < lines.len() {
        let line = lines[index];
        index += 1;
        if let Some(info) = line.strip_prefix("```") {
            in_sh = !in_sh && info.trim() == "sh";
            continue;
        }
        let Some(args) = line.strip_prefix("quarry ").filter(|_| in_sh) else {
            continue;
        };
        let (pattern, next) = expectation(&lines, index);
        found.push(CommandExample {
            line: index,
            args: args.split_whitespace().map(str::to_string).collect(),
            pattern,
        });
        index = next;
    }
    found
}

/// Runs a page's command examples in a scratch directory; returns its failures.
fn run_commands(page: &Page) -> Vec<String> {
    let scratch = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(root().join("testdata"), scratch.path().join("testdata")).unwrap();
    let mut failures = Vec::new();
    for example in command_examples(&page.text) {
        let Some(pattern) = &example.pattern else {
            continue;
        };
        let output = Command::new(support::QUARRY)
            .args(&example.args)
            .current_dir(scratch.path())
            .output()
            .unwrap();
        let printed = format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        let at = format!(
            "{} line {}: quarry {}\n  printed:\n{printed}",
            page.path,
            example.line,
            example.args.join(" ")
        );
        if !output.status.success() {
            failures.push(format!("{at}\n  exit status {}", output.status));
        } else if !printed.lines().any(|line| matches(pattern, line.trim())) {
            failures.push(format!("{at}\n  no line matches the book's\n  {pattern}"));
        }
    }
    failures
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
    let found = examples("page.md", text);
    assert_eq!(found.len(), 3);
    assert_eq!(found[0].pattern.as_deref(), Some("{\"b\":...,\"c\":2}"));
    assert_eq!(found[1].keep_as.as_deref(), Some("id"));
    assert!(found[2].reverts && found[2].pattern.is_none());
    let kept = HashMap::from([("id".to_string(), "0x7".to_string())]);
    assert_eq!(substitute(&found[2].request, &kept), "{\"e\":\"0x7\"}");
    // Command examples: only in sh blocks; one without an expectation is shown, not run.
    let text = "quarry ingest --datadir a\n```sh\nquarry  unwind --datadir a --to 1\n\
                # a comment\n#  -> head: block 1 (0x...)   what it prints\nquarry serve --config c\n\
                ```\n```text\nquarry keys\n#  -> x\n```\n";
    let found = command_examples(text);
    assert_eq!(found.len(), 2, "{found:?}");
    assert_eq!(found[0].args, ["unwind", "--datadir", "a", "--to", "1"]);
    assert_eq!(found[0].line, 3);
    assert_eq!(found[0].pattern.as_deref(), Some("head: block 1 (0x...)"));
    assert!(found[1].pattern.is_none());
}

/// A wrong expectation fails a command example, and so does a failing command.
#[test]
fn a_command_example_that_does_not_print_its_expectation_fails() {
    let page = |text: &str| Page {
        path: "page.md".to_string(),
        text: text.to_string(),
    };
    let right = "```sh\nquarry devchain --out chain --blocks 2\n#  -> wrote chain/genesis.json and chain/chain.rlp\n```\n";
    assert_eq!(run_commands(&page(right)), Vec::<String>::new());
    let wrong = right.replace("wrote chain", "wrote the chain");
    let failures = run_commands(&page(&wrong));
    assert!(failures[0].contains("no line matches"), "{failures:?}");
    let failing = "```sh\nquarry unwind --datadir missing --to 1\n#  -> ...\n```\n";
    let failures = run_commands(&page(failing));
    assert!(failures[0].contains("exit status"), "{failures:?}");
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
    let at = format!("{}: {request}\n  answer: {body}", example.at);
    if status != 200 {
        return Err(format!("{at}\n  HTTP status {status}"));
    }
    let answer: Value = serde_json::from_str(body).map_err(|e| format!("{at}\n  not JSON: {e}"))?;
    match &example.pattern {
        Some(pattern) if !matches(pattern, body) => {
            Err(format!("{at}\n  does not match the book's\n  {pattern}"))
        }
        Some(_) => Ok(answer),
        None if example.reverts => match answer["error"]["code"].as_i64() {
            Some(3) => Ok(answer),
            _ => Err(format!("{at}\n  the book says it reverts (error code 3)")),
        },
        None if answer.get("error").is_some() || answer.get("result").is_none() => {
            Err(format!("{at}\n  the book shows no error here"))
        }
        None => Ok(answer),
    }
}

/// The methods of the method table (`quarry_gateway::served_methods`) that a curl example on
/// the dev chain can show.
fn served_methods() -> Vec<String> {
    // Shown elsewhere than by a curl example: a WebSocket's subscriptions, and the sending
    // that waits for a transactions upstream's receipt.
    const NOT_BY_CURL: [&str; 3] = [
        "eth_subscribe",
        "eth_unsubscribe",
        "eth_sendRawTransactionSync",
    ];
    quarry_gateway::served_methods()
        .into_iter()
        .filter(|method| {
            let (prefix, _) = method.split_once('_').unwrap_or_default();
            ["eth", "net", "web3", "debug", "rollup"].contains(&prefix)
                && !NOT_BY_CURL.contains(method)
        })
        .map(String::from)
        .collect()
}

#[test]
fn every_served_method_has_an_example() {
    let methods = served_methods();
    assert!(methods.len() > 40, "{methods:?}");
    let examples: Vec<Example> = pages()
        .iter()
        .flat_map(|page| examples(&page.path, &page.text))
        .collect();
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
    assert!(missing.is_empty(), "the book has no example of {missing:?}");
}

/// Every field of `quarry serve`'s config (rpc/gateway/src/config.rs and its `[weights]` in
/// rpc/gateway/src/limits/weights.rs) is named on the book's configuration page.
#[test]
fn every_config_key_is_documented() {
    let documented = page("docs/configuration.md").text;
    let gateway = root().join("rpc/gateway/src");
    let mut missing = Vec::new();
    let mut fields = 0;
    for file in ["config.rs", "limits/weights.rs"] {
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
        "config keys missing from docs/configuration.md: {missing:?}"
    );
}

/// The commands `quarry --help` lists.
fn commands() -> Vec<String> {
    let output = Command::new(support::QUARRY)
        .arg("--help")
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&output.stdout);
    let commands: Vec<String> = help
        .split("Commands:")
        .nth(1)
        .unwrap_or_default()
        .split("Options:")
        .next()
        .unwrap_or_default()
        .lines()
        .filter_map(|line| line.split_whitespace().next())
        .filter(|command| *command != "help")
        .map(str::to_string)
        .collect();
    assert!(commands.len() >= 10, "{help}");
    commands
}

/// Every command `quarry --help` lists has a section of its own in docs/commands.md, and every
/// one that can run on a scratch datadir has a command example there that is run.
#[test]
fn every_command_is_documented_and_shown_running() {
    let text = page("docs/commands.md").text;
    let run: HashSet<String> = command_examples(&text)
        .into_iter()
        .filter(|example| example.pattern.is_some())
        .filter_map(|example| example.args.first().cloned())
        .collect();
    for command in commands() {
        assert!(
            text.contains(&format!("## `quarry {command} ")),
            "docs/commands.md has no section \"## `quarry {command} ...`\""
        );
        assert!(
            NOT_RUN.contains(&command.as_str()) || run.contains(&command),
            "docs/commands.md runs no example of `quarry {command}`"
        );
    }
}

/// Every command example of the book and of README.md prints what it shows.
#[test]
fn every_command_example_prints_what_the_book_shows() {
    let pages = pages();
    let run: usize = pages
        .iter()
        .map(|page| {
            command_examples(&page.text)
                .iter()
                .filter(|e| e.pattern.is_some())
                .count()
        })
        .sum();
    assert!(run >= 20, "only {run} command examples are run");
    let failures: Vec<String> = pages.iter().flat_map(run_commands).collect();
    assert!(
        failures.is_empty(),
        "{} of {run} command examples do not print what the book shows:\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

/// A heading's anchor as mdbook makes it: letters, digits, `_` and `-` kept (lower case),
/// whitespace made `-`, everything else dropped.
fn anchor(heading: &str) -> String {
    heading
        .chars()
        .filter_map(|c| match c {
            c if c.is_alphanumeric() || c == '_' || c == '-' => Some(c.to_ascii_lowercase()),
            c if c.is_whitespace() => Some('-'),
            _ => None,
        })
        .collect()
}

/// The anchors of a page's headings (outside code blocks).
fn anchors(text: &str) -> HashSet<String> {
    let mut in_code = false;
    let mut found = HashSet::new();
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_code = !in_code;
        } else if !in_code && line.starts_with('#') {
            found.insert(anchor(line.trim_start_matches('#').trim()));
        }
    }
    found
}

/// Every link of a page to a page of the book (`x.md` or `x.md#heading`, or `#heading` on the
/// same page) names a page docs/SUMMARY.md lists and a heading that page has.
#[test]
fn every_link_between_pages_finds_its_page_and_heading() {
    let listed: HashMap<String, HashSet<String>> = summary_pages()
        .iter()
        .map(|path| (path.clone(), anchors(&read(path).text)))
        .collect();
    let mut broken = Vec::new();
    let mut links = 0;
    for path in summary_pages() {
        let text = read(&path).text;
        for rest in text.split("](").skip(1) {
            let Some((target, _)) = rest.split_once(')') else {
                continue;
            };
            if target.contains("://") || target.contains(' ') {
                continue;
            }
            let (file, heading) = target.split_once('#').unwrap_or((target, ""));
            let linked = if file.is_empty() {
                path.clone()
            } else if file.ends_with(".md") {
                format!("docs/{file}")
            } else {
                continue;
            };
            links += 1;
            match listed.get(&linked) {
                None => broken.push(format!("{path}: {target}: no such page in the book")),
                Some(headings) if !heading.is_empty() && !headings.contains(heading) => {
                    broken.push(format!("{path}: {target}: no such heading"));
                }
                Some(_) => {}
            }
        }
    }
    assert!(links >= 20, "only {links} links between pages");
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn every_curl_example_of_the_book_answers_as_shown() {
    let methods = page("docs/examples.md");
    let on_the_page = examples(&methods.path, &methods.text).len();
    assert!(
        on_the_page >= 40,
        "docs/examples.md holds {on_the_page} examples: fewer than expected"
    );
    let pages = pages();
    for page in pages
        .iter()
        .filter(|page| !examples(&page.path, &page.text).is_empty())
    {
        assert!(
            page.text.contains(
                "q() { curl -s -H 'Content-Type: application/json' \
                 http://127.0.0.1:8545/v3/dev-key -d \"$1\"; echo; }"
            ),
            "{} no longer defines q as this test reads it",
            page.path
        );
    }
    let examples: Vec<Example> = pages
        .iter()
        .flat_map(|page| examples(&page.path, &page.text))
        .collect();

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
        "{} of {} curl examples of the book are not what quarry answers:\n\n{}",
        failures.len(),
        examples.len(),
        failures.join("\n\n")
    );
}
