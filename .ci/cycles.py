#!/usr/bin/env python3
"""Fails when a workspace crate has an import cycle between its modules.

A module depends on another when it names it: in a `use` item (groups expanded) or in an inline
path (`crate::a::b`, `super::x`, `self::x`, or a child module's name). A path resolves to the
longest known module it starts with. A module owns the modules it declares (an edge from parent to
child), and a module naming one of its ancestors (a child using what its parent declares for it)
is not counted, and `#[cfg(test)]` modules
are left out: neither is a dependency between parts of the design. Every strongly connected group
of two or more modules is printed, and the exit status is 1 when there is one.

Usage: cycles.py [CRATE_SRC_DIR ...]   (default: every `src/` of the workspace)
"""

import re
import sys
from pathlib import Path

IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
MOD_DECL = re.compile(rf"^\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+({IDENT})\s*;", re.M)
INLINE = re.compile(rf"(?<![A-Za-z0-9_:])((?:crate|super|self)(?:::{IDENT})+)")


def strip_comments_and_strings(text):
    """Blanks out comments, string and char literals, keeping line structure."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            i = j
        elif text.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            out.append("\n" * text.count("\n", i, j))
            i = j
        elif c == "r" and re.match(r'r#*"', text[i:]) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            hashes = re.match(r"r(#*)\"", text[i:]).group(1)
            end = text.find('"' + hashes, i + 2 + len(hashes))
            end = n if end < 0 else end + 1 + len(hashes)
            out.append('""' + "\n" * text.count("\n", i, end))
            i = end
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append('""' + "\n" * text.count("\n", i, j))
            i = j + 1
        elif c == "'" and re.match(r"'(\\.|[^\\'])'", text[i : i + 4] + "    "):
            m = re.match(r"'(\\[^']*|[^\\'])'", text[i:])
            i += len(m.group(0)) if m else 1
            out.append("' '")
        else:
            out.append(c)
            i += 1
    return "".join(out)


def drop_test_modules(text):
    """Removes `#[cfg(test)] mod name { ... }` bodies (after comments and strings are gone)."""
    pattern = re.compile(rf"#\[cfg\(test\)\]\s*(?:pub\s+)?mod\s+{IDENT}\s*\{{")
    while True:
        m = pattern.search(text)
        if not m:
            return text
        depth, j = 1, m.end()
        while j < len(text) and depth:
            depth += {"{": 1, "}": -1}.get(text[j], 0)
            j += 1
        text = text[: m.start()] + "\n" * text.count("\n", m.start(), j) + text[j:]


def expand_use_tree(tree):
    """`a::{b, c::{d, e}}` -> ['a::b', 'a::c::d', 'a::c::e']."""
    tree = re.sub(r"\s+", "", tree)
    tree = re.sub(rf"\bas{IDENT}", "", tree)
    results = []

    def walk(prefix, s):
        i = s.find("{")
        if i < 0:
            results.append(prefix + s)
            return
        head = s[:i]
        inner = s[i + 1 : s.rfind("}")]
        depth, start = 0, 0
        parts = []
        for k, ch in enumerate(inner):
            if ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
            elif ch == "," and depth == 0:
                parts.append(inner[start:k])
                start = k + 1
        parts.append(inner[start:])
        for part in parts:
            if part:
                walk(prefix + head, part)

    walk("", tree)
    return [r.rstrip(":") for r in results]


def crate_modules(src):
    """Maps module path tuples to their files, following `mod x;` from lib.rs or main.rs."""
    modules = {}

    def visit(path, file):
        modules[path] = file
        text = drop_test_modules(strip_comments_and_strings(file.read_text()))
        directory = file.parent if file.name in ("lib.rs", "main.rs", "mod.rs") else file.with_suffix("")
        for name in MOD_DECL.findall(text):
            for candidate in (directory / f"{name}.rs", directory / name / "mod.rs"):
                if candidate.exists():
                    visit(path + (name,), candidate)
                    break

    for root in ("lib.rs", "main.rs"):
        if (src / root).exists():
            visit((), src / root)
    return modules


def reexports(modules):
    """Per module, the names its `pub use` items re-export, with the path each names."""
    exported = {}
    for module, file in modules.items():
        text = drop_test_modules(strip_comments_and_strings(file.read_text()))
        names = {}
        for m in re.finditer(r"\bpub(?:\([^)]*\))?\s+use\s+([^;]+);", text):
            for path in expand_use_tree(m.group(1)):
                names[path.split("::")[-1]] = path.split("::")
        exported[module] = names
    return exported


def resolve(segments, current, modules, exported=None, depth=0):
    """The module a path names, as seen from module `current`: the longest known module it
    starts with, followed through that module's re-exports of the next name."""
    if not segments:
        return None
    head, rest = segments[0], segments[1:]
    if head == "crate":
        base = ()
    elif head == "self":
        base = current
    elif head == "super":
        base = current
        while rest is not None and head == "super":
            base = base[:-1]
            if not rest:
                return base
            head, rest = rest[0], rest[1:]
        rest = [head] + list(rest)
    elif current + (head,) in modules:
        base, rest = current + (head,), rest
    else:
        return None
    found = base
    for k, seg in enumerate(rest):
        if found + (seg,) in modules:
            found = found + (seg,)
            continue
        via = (exported or {}).get(found, {}).get(seg)
        if via and depth < 8:
            target = resolve(via + list(rest[k + 1 :]), found, modules, exported, depth + 1)
            return found if target is None else target
        break
    return found


def dependencies(modules):
    edges = {m: set() for m in modules}
    exported = reexports(modules)
    for module, file in modules.items():
        text = drop_test_modules(strip_comments_and_strings(file.read_text()))
        paths = []
        for m in re.finditer(r"\buse\s+([^;]+);", text):
            paths += expand_use_tree(m.group(1))
        paths += [m.group(1) for m in INLINE.finditer(text)]
        paths += [m.group(0) for m in re.finditer(rf"(?<![A-Za-z0-9_:])({IDENT})::{IDENT}", text) if module + (m.group(1),) in modules]
        for path in paths:
            target = resolve(path.split("::"), module, modules, exported)
            if target is None or target == module or module[: len(target)] == target:
                continue
            edges[module].add(target)
    # A module owns the modules it declares: what a child depends on, its parent does too.
    for module in modules:
        if module:
            edges[module[:-1]].add(module)
    return edges


def strongly_connected(edges):
    index, low, on_stack, stack, groups, counter = {}, {}, set(), [], [], [0]

    def connect(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in edges[v]:
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    sys.setrecursionlimit(10000)
    for v in sorted(edges):
        if v not in index:
            connect(v)
    return groups


def workspace_sources(root):
    sources = []
    for cargo in sorted(root.glob("*/Cargo.toml")) + sorted(root.glob("rpc/*/Cargo.toml")) + [root / "Cargo.toml"]:
        src = cargo.parent / "src"
        if src.is_dir() and cargo.parent.name not in ("fuzz", "target"):
            sources.append(src)
    return sources


def main(argv):
    root = Path(__file__).resolve().parent.parent
    sources = [Path(a) for a in argv] or workspace_sources(root)
    found = False
    for src in sources:
        modules = crate_modules(src)
        for group in strongly_connected(dependencies(modules)):
            found = True
            names = ", ".join("::".join(m) or "(root)" for m in group)
            print(f"import cycle in {src}: {names}")
    if not found:
        print(f"no import cycles in {len(sources)} crates")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
