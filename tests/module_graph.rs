//! No module imports one that imports it back (issue 13). Reads the sources as text: every
//! `crate::…`, `super::…` and `self::…` path in code (not in a comment, not under
//! `#[cfg(test)]`) is an edge from the file's module to the deepest module the path names; the
//! graph must have no cycle, neither between files nor between a crate's top-level modules.
//! Both library crates are held to it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

type Module = Vec<String>;

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        panic!("cannot read {}", dir.display());
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// `analysis/judge/mod.rs` → [analysis, judge]; `lib.rs` → [].
fn module_of(root: &Path, file: &Path) -> Module {
    let rel = file.strip_prefix(root).unwrap_or(file).with_extension("");
    let mut parts: Module = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib")) {
        parts.pop();
    }
    parts
}

/// The deepest existing module a path names, from the module `at`.
fn resolve(at: &Module, path: &[&str], modules: &BTreeSet<Module>) -> Option<Module> {
    let (mut base, rest) = match path.first() {
        Some(&"crate") => (Vec::new(), &path[1..]),
        Some(&"self") => (at.clone(), &path[1..]),
        Some(&"super") => {
            let mut base = at.clone();
            let mut rest = path;
            while rest.first() == Some(&"super") {
                base.pop();
                rest = &rest[1..];
            }
            (base, rest)
        }
        _ => return None,
    };
    let mut found = modules.contains(&base).then(|| base.clone());
    for segment in rest {
        base.push((*segment).to_string());
        if modules.contains(&base) {
            found = Some(base.clone());
        }
    }
    found
}

/// Every path that starts with crate/super/self, with `use a::{b, c::d}` groups expanded one level.
/// Works on bytes: paths are ASCII, the comments around them need not be.
fn paths(source: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let bytes = source.as_bytes();
    let is_ident = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    let text = |from: usize, to: usize| String::from_utf8_lossy(&bytes[from..to]).into_owned();
    let segments = |t: String| -> Vec<String> {
        t.split("::")
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect()
    };
    let mut i = 0;
    while i < bytes.len() {
        let starts = [&b"crate::"[..], b"super::", b"self::"]
            .iter()
            .any(|p| bytes[i..].starts_with(p));
        if !starts || (i > 0 && is_ident(bytes[i - 1])) {
            i += 1;
            continue;
        }
        let mut j = i;
        while j < bytes.len() && (is_ident(bytes[j]) || bytes[j..].starts_with(b"::")) {
            j += if bytes[j] == b':' { 2 } else { 1 };
        }
        let prefix = segments(text(i, j));
        if bytes.get(j) == Some(&b'{') {
            let end = bytes[j..]
                .iter()
                .position(|&b| b == b'}')
                .map_or(bytes.len(), |e| j + e);
            for item in text(j + 1, end).split(',') {
                let item = item.split_whitespace().next().unwrap_or("").to_string();
                let mut path = prefix.clone();
                path.extend(segments(item));
                out.push(path);
            }
            i = end;
        } else {
            out.push(prefix);
            i = j.max(i + 1);
        }
    }
    out
}

fn graph(root: &Path) -> BTreeMap<Module, BTreeSet<Module>> {
    let mut files = Vec::new();
    rust_files(root, &mut files);
    let modules: BTreeSet<Module> = files.iter().map(|f| module_of(root, f)).collect();
    let mut edges: BTreeMap<Module, BTreeSet<Module>> = BTreeMap::new();
    for file in &files {
        let at = module_of(root, file);
        let text = std::fs::read_to_string(file).unwrap_or_default();
        // Unit tests may reach anywhere; the module's own code may not. A comment naming a
        // module (`crate::h1` in a doc) is no import. (A `//` inside a string ends the line
        // early too: it can only hide a path written after a URL on the same line.)
        let tested = text.split("#[cfg(test)]").next().unwrap_or("");
        let code: String = tested
            .lines()
            .map(|line| line.split("//").next().unwrap_or(""))
            .collect::<Vec<_>>()
            .join("\n");
        let code = code.as_str();
        let targets = edges.entry(at.clone()).or_default();
        for path in paths(code) {
            let path: Vec<&str> = path.iter().map(String::as_str).collect();
            if let Some(to) = resolve(&at, &path, &modules) {
                // A module naming itself or an ancestor (its own `mod` tree) is no edge.
                if to != at && !at.starts_with(&to) {
                    targets.insert(to);
                }
            }
        }
    }
    edges
}

/// One cycle, if any: depth-first search with the path on the stack.
fn find_cycle<T: Ord + Clone>(edges: &BTreeMap<T, BTreeSet<T>>) -> Option<Vec<T>> {
    fn visit<T: Ord + Clone>(
        node: &T,
        edges: &BTreeMap<T, BTreeSet<T>>,
        done: &mut BTreeSet<T>,
        stack: &mut Vec<T>,
    ) -> Option<Vec<T>> {
        if let Some(at) = stack.iter().position(|n| n == node) {
            let mut cycle = stack[at..].to_vec();
            cycle.push(node.clone());
            return Some(cycle);
        }
        if done.contains(node) {
            return None;
        }
        stack.push(node.clone());
        for next in edges.get(node).into_iter().flatten() {
            if let Some(cycle) = visit(next, edges, done, stack) {
                return Some(cycle);
            }
        }
        stack.pop();
        done.insert(node.clone());
        None
    }
    let mut done = BTreeSet::new();
    for node in edges.keys() {
        if let Some(cycle) = visit(node, edges, &mut done, &mut Vec::new()) {
            return Some(cycle);
        }
    }
    None
}

fn show(cycle: &[Module]) -> String {
    cycle
        .iter()
        .map(|m| {
            if m.is_empty() {
                "lib".to_string()
            } else {
                m.join("/")
            }
        })
        .collect::<Vec<_>>()
        .join(" → ")
}

fn assert_acyclic(crate_src: &str) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join(crate_src);
    let files = graph(&root);
    if let Some(cycle) = find_cycle(&files) {
        panic!("{crate_src}: files import each other: {}", show(&cycle));
    }
    let mut top: BTreeMap<Module, BTreeSet<Module>> = BTreeMap::new();
    for (from, tos) in &files {
        for to in tos {
            if let (Some(a), Some(b)) = (from.first(), to.first()) {
                if a != b {
                    top.entry(vec![a.clone()])
                        .or_default()
                        .insert(vec![b.clone()]);
                }
            }
        }
    }
    if let Some(cycle) = find_cycle(&top) {
        panic!("{crate_src}: modules import each other: {}", show(&cycle));
    }
}

#[test]
fn the_control_plane_has_no_import_cycles() {
    assert_acyclic("control/src");
}

#[test]
fn the_data_plane_has_no_import_cycles() {
    assert_acyclic("proxy/src");
}

#[test]
fn the_checker_finds_a_cycle_where_there_is_one() {
    // Its silence about the two crates proves nothing unless it speaks up about a real cycle.
    let root = std::env::temp_dir().join(format!("weir-module-graph-{}", std::process::id()));
    let write = |file: &str, text: &str| {
        let path = root.join(file);
        std::fs::create_dir_all(path.parent().unwrap_or(&root)).unwrap_or_default();
        std::fs::write(&path, text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    };
    write("lib.rs", "mod a;\nmod b;\nmod c;\n");
    write("a/mod.rs", "mod inner;\n");
    write("a/inner.rs", "use crate::b::{Thing, other::More};\n");
    write("b/mod.rs", "pub mod other;\n");
    write("b/other.rs", "use super::super::a::inner;\n");
    // Named only in a comment and in a unit test: no edges.
    write(
        "c.rs",
        "// see crate::a\n#[cfg(test)]\nmod tests { use crate::b; }\n",
    );
    let files = graph(&root);
    let _ = std::fs::remove_dir_all(&root);
    let module = |m: &str| -> Module { m.split('/').map(str::to_string).collect() };
    assert!(
        files[&module("a/inner")].contains(&module("b/other")),
        "{files:?}"
    );
    assert!(
        files[&module("b/other")].contains(&module("a/inner")),
        "{files:?}"
    );
    assert!(files[&module("c")].is_empty(), "{files:?}");
    let cycle = find_cycle(&files).expect("a/inner and b/other import each other");
    assert_eq!(cycle.first(), cycle.last());
    // And a plain chain is no cycle.
    let chain: BTreeMap<u8, BTreeSet<u8>> =
        BTreeMap::from([(1, BTreeSet::from([2])), (2, BTreeSet::from([3]))]);
    assert_eq!(find_cycle(&chain), None);
}
