//! The runtime is arranged by concern: no import circle spans more than
//! one feature folder. A feature folder (`runtime/approvals`,
//! `runtime/agents`, `runtime/host` ...) may have files that use each
//! other; across folders, dependencies only go one way.
//!
//! The graph is of files: a file depends on another when it names it by
//! path (`use`, or an inline `crate::`/`super::`/`self::` path), and when
//! it calls a method of the shared handle (`impl RuntimeHost`/`impl
//! HostInner`) that the other file defines, since those calls need no
//! import. Test code (test files and everything after `#[cfg(test)]`) is
//! left out.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

type Module = Vec<String>;

struct Source {
    /// The file's code, without comments and test part.
    code: String,
    /// A test file: a target of paths, never a source of edges.
    test: bool,
}

/// Every `.rs` file under `src`, by module path.
fn crate_sources(src: &Path) -> BTreeMap<Module, Source> {
    fn walk(dir: &Path, src: &Path, out: &mut BTreeMap<Module, Source>) {
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk(&path, src, out);
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let rel = path.strip_prefix(src).unwrap_or(&path);
            let mut module: Module = rel
                .with_extension("")
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            if module.last().is_some_and(|m| m == "mod") {
                module.pop();
            }
            if module == ["lib"] || module == ["main"] {
                module.clear();
            }
            let name = path.file_name().unwrap_or_default().to_string_lossy();
            let test = name == "tests.rs"
                || name.ends_with("_tests.rs")
                || module.iter().any(|m| m == "tests");
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            out.insert(
                module,
                Source {
                    code: strip(&text),
                    test,
                },
            );
        }
    }
    let mut out = BTreeMap::new();
    walk(src, src, &mut out);
    out
}

/// The code without its test parts (an inline `#[cfg(test)] mod x { … }`
/// to its closing brace, any other `#[cfg(test)]` item's line) and `//`
/// comments.
fn strip(text: &str) -> String {
    let mut kept = Vec::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        if line.trim() == "#[cfg(test)]" {
            let next = lines.next().unwrap_or_default();
            if next.trim().starts_with("mod ") && next.trim().ends_with('{') {
                // Skip to the brace that closes the module.
                let mut depth = 1i64;
                for inner in lines.by_ref() {
                    depth += inner.matches('{').count() as i64 - inner.matches('}').count() as i64;
                    if depth <= 0 {
                        break;
                    }
                }
            }
            continue;
        }
        kept.push(line.split("//").next().unwrap_or_default());
    }
    kept.join("\n")
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// Whether `code[at..]` starts a word (nothing word-like just before it).
fn word_start(code: &str, at: usize) -> bool {
    code[..at].chars().next_back().is_none_or(|c| !is_ident(c))
}

/// The paths a `use` tree names: `a::{b, c::{d as e, self}}` is `a::b`,
/// `a::c::d` and `a::c`.
fn expand(prefix: &[String], tree: &str, out: &mut Vec<Module>) {
    let tree = tree.trim();
    if let Some(inner) = tree.strip_prefix('{').and_then(|t| t.strip_suffix('}')) {
        let (mut depth, mut from) = (0usize, 0usize);
        for (i, c) in inner.char_indices() {
            match c {
                '{' => depth += 1,
                '}' => depth = depth.saturating_sub(1),
                ',' if depth == 0 => {
                    expand(prefix, &inner[from..i], out);
                    from = i + 1;
                }
                _ => {}
            }
        }
        expand(prefix, &inner[from..], out);
        return;
    }
    if let Some(brace) = tree.find('{').filter(|&b| b > 0) {
        let mut path = prefix.to_vec();
        let head = tree[..brace].trim().trim_end_matches("::");
        path.extend(head.split("::").map(|s| s.trim().to_owned()));
        expand(&path, &tree[brace..], out);
        return;
    }
    if tree.contains(['{', '}']) {
        return; // not a use tree (a `use ` in a string)
    }
    let mut path = prefix.to_vec();
    let plain = tree.split(" as ").next().unwrap_or_default();
    path.extend(
        plain
            .split("::")
            .map(|s| s.trim().to_owned())
            .filter(|s| !s.is_empty() && s != "self" && s != "*"),
    );
    if !path.is_empty() {
        out.push(path);
    }
}

/// Every path `code` names: `use` trees and inline paths that start at
/// `crate`, `super`, `self` or a child module.
fn paths(code: &str) -> Vec<Module> {
    let mut out = Vec::new();
    for (at, _) in code.match_indices("use ") {
        if !word_start(code, at) {
            continue;
        }
        let rest = &code[at + 4..];
        let Some(end) = rest.find(';') else { continue };
        let tree = rest[..end].split_whitespace().collect::<Vec<_>>().join(" ");
        // Relative paths (`use end::finish` to a child module) too:
        // `resolve` keeps the ones that land in a file.
        expand(&[], &tree, &mut out);
    }
    // Inline paths from the crate, a parent, this module, or a child
    // (`end::finish(..)`): `resolve` drops names that are not modules.
    for (at, _) in code.match_indices("::") {
        let start = code[..at]
            .char_indices()
            .rev()
            .take_while(|&(_, c)| is_ident(c))
            .last()
            .map_or(at, |(i, _)| i);
        if start == at || !word_start(code, start) || code[..start].ends_with("::") {
            continue;
        }
        let path: String = code[start..]
            .chars()
            .take_while(|&c| is_ident(c) || c == ':')
            .collect();
        out.push(
            path.split("::")
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
                .collect(),
        );
    }
    out
}

/// The file a path from `module` lands in: the longest module prefix that
/// is a file.
fn resolve(module: &[String], path: &[String], files: &BTreeMap<Module, Source>) -> Option<Module> {
    let (mut base, mut rest): (Module, &[String]) = match path.first().map(String::as_str) {
        Some("crate") => (Vec::new(), &path[1..]),
        Some("self") => (module.to_vec(), &path[1..]),
        Some("super") => (module.to_vec(), path),
        // A child module of this one (`end::finish`), else another crate.
        Some(first) => {
            let mut child = module.to_vec();
            child.push(first.to_owned());
            match files.contains_key(&child) {
                true => (module.to_vec(), path),
                false => return None,
            }
        }
        None => return None,
    };
    while rest.first().is_some_and(|s| s == "super") {
        base.pop();
        rest = &rest[1..];
    }
    base.extend(rest.iter().cloned());
    (0..=base.len())
        .rev()
        .map(|k| base[..k].to_vec())
        .find(|m| files.contains_key(m))
}

/// Whether the line before `at` opens an `impl` of the handle itself,
/// named plainly or by path (`impl crate::runtime::handle::HostInner {`).
fn opens_handle_impl(code: &str, at: usize) -> bool {
    let line_start = code[..at].rfind('\n').map_or(0, |i| i + 1);
    let Some(path) = code[line_start..at].strip_prefix("impl ") else {
        return false;
    };
    path.is_empty() || (path.ends_with("::") && path.chars().all(|c| is_ident(c) || c == ':'))
}

/// The methods of the shared handle each file defines.
fn handle_methods(code: &str) -> Vec<String> {
    let mut found = Vec::new();
    for head in ["RuntimeHost {", "HostInner {"] {
        for (at, _) in code.match_indices(head) {
            if !opens_handle_impl(code, at) {
                continue;
            }
            let body = &code[at + head.len()..];
            let mut depth = 1usize;
            let end = body
                .char_indices()
                .find(|&(_, c)| {
                    match c {
                        '{' => depth += 1,
                        '}' => depth -= 1,
                        _ => {}
                    }
                    depth == 0
                })
                .map_or(body.len(), |(i, _)| i);
            for line in body[..end].lines() {
                let Some(item) = line.strip_prefix("    ") else {
                    continue;
                };
                if item.starts_with(' ') {
                    continue;
                }
                let item = item
                    .trim_start_matches("pub(crate) ")
                    .trim_start_matches("pub(super) ")
                    .trim_start_matches("pub ")
                    .trim_start_matches("async ");
                if let Some(name) = item.strip_prefix("fn ") {
                    found.push(name.chars().take_while(|&c| is_ident(c)).collect());
                }
            }
        }
    }
    found
}

/// Method names the standard library's and tokio's types define too
/// (`writer.shutdown()`, `reader.take(n)`): like a name other crate types
/// define, they count only where called on the handle.
const FOREIGN: &[&str] = &[
    "shutdown", "take", "set", "get", "start", "stop", "send", "close",
];

/// Which files each file depends on.
fn graph(files: &BTreeMap<Module, Source>) -> BTreeMap<Module, BTreeSet<Module>> {
    let mut defined: BTreeMap<String, BTreeSet<Module>> = BTreeMap::new();
    for (module, source) in files {
        for name in handle_methods(&source.code) {
            defined.entry(name).or_default().insert(module.clone());
        }
    }
    // A method name that other types also define (`fn wake`, `fn start`)
    // counts only where it is called on the handle (`self.`, `host.`,
    // `inner.`).
    // How many `fn NAME` the crate has, in one pass over its code.
    let mut fn_count: BTreeMap<String, usize> = BTreeMap::new();
    for source in files.values() {
        for (at, _) in source.code.match_indices("fn ") {
            if !word_start(&source.code, at) {
                continue;
            }
            let name: String = source.code[at + 3..]
                .chars()
                .take_while(|&c| is_ident(c))
                .collect();
            *fn_count.entry(name).or_default() += 1;
        }
    }
    let mut edges: BTreeMap<Module, BTreeSet<Module>> = BTreeMap::new();
    for (module, source) in files.iter().filter(|(_, s)| !s.test) {
        let out = edges.entry(module.clone()).or_default();
        for path in paths(&source.code) {
            if let Some(target) = resolve(module, &path, files) {
                if &target != module {
                    out.insert(target);
                }
            }
        }
        let on_handle = |name: &str| {
            ["self", "host", "inner"].iter().any(|r| {
                let call = format!("{r}.{name}(");
                source
                    .code
                    .match_indices(&call)
                    .any(|(at, _)| word_start(&source.code, at))
            })
        };
        for (name, owners) in &defined {
            let [owner] = owners.iter().collect::<Vec<_>>()[..] else {
                continue;
            };
            if owner == module || !source.code.contains(&format!(".{name}(")) {
                continue;
            }
            let elsewhere =
                fn_count.get(name).copied().unwrap_or(0) > 1 || FOREIGN.contains(&name.as_str());
            if !elsewhere || on_handle(name) {
                out.insert(owner.clone());
            }
        }
    }
    edges
}

/// The strongly connected parts of `edges` with more than one file.
fn circles(edges: &BTreeMap<Module, BTreeSet<Module>>) -> Vec<Vec<Module>> {
    struct Tarjan<'a> {
        edges: &'a BTreeMap<Module, BTreeSet<Module>>,
        index: BTreeMap<&'a Module, (usize, usize)>,
        stack: Vec<&'a Module>,
        on_stack: BTreeSet<&'a Module>,
        found: Vec<Vec<Module>>,
    }
    impl<'a> Tarjan<'a> {
        fn visit(&mut self, v: &'a Module) {
            let n = self.index.len();
            self.index.insert(v, (n, n));
            self.stack.push(v);
            self.on_stack.insert(v);
            for w in self.edges.get(v).into_iter().flatten() {
                if !self.index.contains_key(w) {
                    self.visit(w);
                    let low = self.index[w].1.min(self.index[v].1);
                    self.index.entry(v).and_modify(|e| e.1 = low);
                } else if self.on_stack.contains(w) {
                    let low = self.index[w].0.min(self.index[v].1);
                    self.index.entry(v).and_modify(|e| e.1 = low);
                }
            }
            if self.index[v].0 == self.index[v].1 {
                let mut part = Vec::new();
                while let Some(w) = self.stack.pop() {
                    self.on_stack.remove(w);
                    part.push(w.clone());
                    if w == v {
                        break;
                    }
                }
                if part.len() > 1 {
                    part.sort();
                    self.found.push(part);
                }
            }
        }
    }
    let mut t = Tarjan {
        edges,
        index: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        found: Vec::new(),
    };
    for v in edges.keys() {
        if !t.index.contains_key(v) {
            t.visit(v);
        }
    }
    t.found
}

/// The feature folder of a file: `runtime/<feature>` inside the runtime,
/// else its top-level folder.
fn folder(module: &[String]) -> String {
    match module {
        [r, feature, ..] if r == "runtime" => format!("runtime/{feature}"),
        [] => "crate".into(),
        [top, ..] => top.clone(),
    }
}

/// Circles that span more than one folder, worded for the failure.
fn spanning(files: &BTreeMap<Module, Source>) -> Vec<String> {
    let edges = graph(files);
    circles(&edges)
        .into_iter()
        .filter(|part| {
            part.iter()
                .map(|m| folder(m))
                .collect::<BTreeSet<_>>()
                .len()
                > 1
        })
        .map(|part| {
            part.iter()
                .map(|m| {
                    let inside: Vec<String> = edges[m]
                        .iter()
                        .filter(|t| part.contains(t))
                        .map(|t| t.join("::"))
                        .collect();
                    format!("  {} -> {}", m.join("::"), inside.join(", "))
                })
                .collect::<Vec<_>>()
                .join("\n")
        })
        .collect()
}

/// Circles between the folders of `runtime/` (each file at its top, and
/// `mod.rs` itself, counting as a folder of its own), worded for the
/// failure with the files behind each arrow. Folders form layers: the
/// handle and the settings below the features, the features below the
/// turn, the top (`host/`) above all.
fn folder_circles(files: &BTreeMap<Module, Source>) -> Vec<String> {
    let edges = graph(files);
    let inside = |m: &Module| m.first().is_some_and(|r| r == "runtime");
    let mut folders: BTreeMap<Module, BTreeSet<Module>> = BTreeMap::new();
    let mut why: BTreeMap<(String, String), Vec<String>> = BTreeMap::new();
    for (from, targets) in edges.iter().filter(|(m, _)| inside(m)) {
        let f = folder(from);
        for to in targets.iter().filter(|t| inside(t)) {
            let t = folder(to);
            if t == f {
                continue;
            }
            folders
                .entry(vec![f.clone()])
                .or_default()
                .insert(vec![t.clone()]);
            why.entry((f.clone(), t)).or_default().push(format!(
                "{} -> {}",
                from.join("::"),
                to.join("::")
            ));
        }
    }
    circles(&folders)
        .into_iter()
        .map(|part| {
            let names: Vec<&String> = part.iter().map(|p| &p[0]).collect();
            why.iter()
                .filter(|((a, b), _)| names.contains(&a) && names.contains(&b))
                .map(|((a, b), files)| format!("  {a} -> {b}: {}", files.join("; ")))
                .collect::<Vec<_>>()
                .join("\n")
        })
        .collect()
}

#[test]
fn no_circle_runs_between_the_runtime_folders() {
    let files = crate_sources(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"));
    let found = folder_circles(&files);
    assert!(
        found.is_empty(),
        "circles between runtime folders:\n{}",
        found.join("\n\n")
    );
}

#[test]
fn a_circle_of_folders_is_found_though_no_files_circle() {
    let files = fake(&[
        ("runtime::a::x", "use crate::runtime::b::y;"),
        ("runtime::b::y", "fn f() {}"),
        ("runtime::b::z", "use crate::runtime::a::w;"),
        ("runtime::a::w", "fn g() {}"),
        ("runtime::c", "use crate::runtime::a::x;"),
    ]);
    assert!(spanning(&files).is_empty());
    let found = folder_circles(&files);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].contains("runtime/a -> runtime/b: runtime::a::x -> runtime::b::y"));
    assert!(found[0].contains("runtime/b -> runtime/a: runtime::b::z -> runtime::a::w"));
    assert!(!found[0].contains("runtime/c"));
    // One arrow turned around and the layers hold.
    let files = fake(&[
        ("runtime::a::x", "use crate::runtime::b::y;"),
        ("runtime::b::y", "fn f() {}"),
        ("runtime::b::z", "fn h() {}"),
        ("runtime::a::w", "use crate::runtime::b::z;"),
    ]);
    assert!(folder_circles(&files).is_empty());
    // The runtime's root and a file at its top are folders of their own.
    let files = fake(&[
        ("runtime", "use crate::runtime::queue::Entry;"),
        ("runtime::queue", "use crate::runtime::RuntimeError;"),
    ]);
    let found = folder_circles(&files);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].contains("runtime -> runtime/queue: runtime -> runtime::queue"));
}

#[test]
fn a_name_tokio_defines_too_counts_only_on_the_handle() {
    let handle = (
        "runtime::host",
        "impl RuntimeHost {\n    pub async fn shutdown(&self) {}\n}",
    );
    let back = ("runtime::host::x", "use crate::runtime::a::Y;");
    // A writer's `shutdown` is tokio's: no arrow to the handle's file.
    let writer = fake(&[
        ("runtime", ""),
        handle,
        back,
        ("runtime::a", "async fn f(w: W) { w.shutdown().await; }"),
    ]);
    assert!(
        folder_circles(&writer).is_empty(),
        "{:?}",
        folder_circles(&writer)
    );
    // Called on the handle, it is the handle's.
    let host = fake(&[
        ("runtime", ""),
        handle,
        back,
        (
            "runtime::a",
            "async fn f(host: H) { host.shutdown().await; }",
        ),
    ]);
    assert_eq!(
        folder_circles(&host).len(),
        1,
        "{:?}",
        folder_circles(&host)
    );
}

#[test]
fn no_import_circle_spans_more_than_one_feature_folder() {
    let files = crate_sources(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"));
    assert!(files.len() > 100, "{} files", files.len());
    let found = spanning(&files);
    assert!(
        found.is_empty(),
        "import circles across folders:\n{}",
        found.join("\n\n")
    );
}

fn fake(files: &[(&str, &str)]) -> BTreeMap<Module, Source> {
    files
        .iter()
        .map(|(m, code)| {
            let module = m.split("::").map(str::to_owned).collect();
            let source = Source {
                code: strip(code),
                test: false,
            };
            (module, source)
        })
        .collect()
}

#[test]
fn a_circle_through_paths_or_handle_methods_is_found() {
    let by_path = fake(&[
        ("runtime", ""),
        ("runtime::a", "use crate::runtime::b::{self, Thing as T};"),
        ("runtime::b", "#[cfg(test)]\nmod b_tests;\nfn f() { super::a::g() }\n#[cfg(test)]\nmod tests {\n    use crate::runtime::c;\n}"),
        ("runtime::c", "use super::b;"),
    ]);
    assert_eq!(spanning(&by_path).len(), 1, "{:?}", spanning(&by_path));
    let by_method = fake(&[
        ("runtime", ""),
        (
            "runtime::host",
            "use crate::runtime::a::X;\nimpl RuntimeHost {\n    pub fn spin(&self) {}\n}",
        ),
        (
            "runtime::a",
            "impl RuntimeHost {\n    fn go(&self) { self.spin(); }\n}",
        ),
    ]);
    assert_eq!(spanning(&by_method).len(), 1);
    // A feature's accessor on the handle, its impl named by path.
    let by_accessor = fake(&[
        ("runtime", ""),
        (
            "runtime::mcp",
            "use crate::runtime::a::X;\nimpl crate::runtime::handle::HostInner {\n    pub(crate) fn hub(&self) -> &Hub {\n        self.part()\n    }\n}",
        ),
        ("runtime::a", "fn f(inner: &HostInner) { inner.hub(); }"),
    ]);
    assert_eq!(
        spanning(&by_accessor).len(),
        1,
        "{:?}",
        spanning(&by_accessor)
    );
    let one_way = fake(&[
        ("runtime", ""),
        ("runtime::host", "impl RuntimeHost {\n    pub fn spin(&self) {}\n}"),
        ("runtime::a", "use crate::runtime::host::RuntimeHost;\n// use crate::runtime::b;\nfn f(h: &RuntimeHost) { h.spin() }"),
        ("runtime::b", "#[cfg(test)]\nmod tests;\nuse super::a;"),
        ("runtime::b::c", "use super::d;"),
        ("runtime::b::d", "use super::c;"),
    ]);
    assert!(spanning(&one_way).is_empty(), "{:?}", spanning(&one_way));
    // Through a child module named relatively, in a `use` or inline, and
    // code after an inline test module still counts.
    for a in [
        "mod kid;\npub use kid::Thing;",
        "mod kid;\nfn f() { kid::go() }",
        "#[cfg(test)]\nmod tests {\n    fn t() {}\n}\nmod kid;\nuse kid::Thing;",
    ] {
        let relative = fake(&[
            ("runtime", ""),
            ("runtime::a", a),
            ("runtime::a::kid", "use crate::runtime::b::Y;"),
            ("runtime::b", "use crate::runtime::a::Z;"),
        ]);
        assert_eq!(spanning(&relative).len(), 1, "{a}");
    }
}
