//! The module graph of a crate's sources, to keep it free of cycles.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The cycles among the top-level modules of the crate whose sources are under `src` (its
/// `lib.rs` or `main.rs` directory): each a set of modules that use one another, directly or
/// not, by `crate::module` paths (in `use` lists too) outside comments and `mod tests`.
pub fn module_cycles(src: &Path) -> Vec<Vec<String>> {
    let mut uses: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut files = Vec::new();
    walk(src, &mut files);
    for file in files {
        let rel = file.strip_prefix(src).unwrap_or(&file);
        let top = rel
            .components()
            .next()
            .map(|c| c.as_os_str().to_string_lossy().trim_end_matches(".rs").to_string())
            .unwrap_or_default();
        if top == "lib" || top == "main" {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        let code: String = text
            .lines()
            .take_while(|l| l.trim() != "mod tests {")
            .filter(|l| !l.trim_start().starts_with("//"))
            .collect::<Vec<_>>()
            .join("\n");
        let used = uses.entry(top.clone()).or_default();
        for (i, _) in code.match_indices("crate::") {
            let rest = &code[i + "crate::".len()..];
            let names: Vec<&str> = match rest.strip_prefix('{') {
                // `use crate::{a, b::c}`: each item's first name.
                Some(list) => list
                    .split('}')
                    .next()
                    .unwrap_or("")
                    .split(',')
                    .map(|s| s.trim().split("::").next().unwrap_or(""))
                    .collect(),
                None => vec![rest
                    .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                    .next()
                    .unwrap_or("")],
            };
            for n in names {
                if !n.is_empty() && n != top && n.chars().all(|c| c.is_ascii_lowercase() || c == '_') {
                    used.insert(n.to_string());
                }
            }
        }
    }
    // The strongly connected components of more than one module.
    let nodes: Vec<String> = uses.keys().cloned().collect();
    let reach = |from: &str| {
        let mut seen = BTreeSet::new();
        let mut todo = vec![from.to_string()];
        while let Some(m) = todo.pop() {
            for n in uses.get(&m).into_iter().flatten() {
                if seen.insert(n.clone()) {
                    todo.push(n.clone());
                }
            }
        }
        seen
    };
    let reached: BTreeMap<&String, BTreeSet<String>> = nodes.iter().map(|n| (n, reach(n))).collect();
    let mut cycles: Vec<Vec<String>> = Vec::new();
    for n in &nodes {
        let mut cycle: Vec<String> = nodes
            .iter()
            .filter(|m| reached[n].contains(*m) && reached[*m].contains(n))
            .cloned()
            .collect();
        cycle.sort();
        if cycle.len() > 1 && !cycles.contains(&cycle) {
            cycles.push(cycle);
        }
    }
    cycles
}

fn walk(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            walk(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}
