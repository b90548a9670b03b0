//! No module imports one that imports it back (issue 13). Reads the sources as text: every
//! `crate::…`, `super::…` and `self::…` path outside `#[cfg(test)]` is an edge from the file's
//! module to the deepest module the path names; the graph must have no cycle, neither between
//! files nor between a crate's top-level modules.
//!
//! weir-control is held to it now. weir-proxy joins once its request pipeline is one (issue 13:
//! forward, h1 and listen still import each other).

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
        // Unit tests may reach anywhere; the module's own code may not.
        let code = text.split("#[cfg(test)]").next().unwrap_or("");
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
fn the_checker_finds_a_cycle_where_there_is_one() {
    // weir-proxy's forward and h1 still import each other (issue 13): the checker must see it,
    // or its silence about weir-control would prove nothing.
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("proxy/src");
    let files = graph(&root);
    let mut top: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (from, tos) in &files {
        for to in tos {
            if let (Some(a), Some(b)) = (from.first(), to.first()) {
                if a != b {
                    top.entry(a.clone()).or_default().insert(b.clone());
                }
            }
        }
    }
    assert!(
        top.get("forward").is_some_and(|t| t.contains("h1"))
            && top.get("h1").is_some_and(|t| t.contains("forward")),
        "{top:?}"
    );
    assert!(find_cycle(&top).is_some());
    // And a plain chain is no cycle.
    let chain: BTreeMap<u8, BTreeSet<u8>> =
        BTreeMap::from([(1, BTreeSet::from([2])), (2, BTreeSet::from([3]))]);
    assert_eq!(find_cycle(&chain), None);
}
