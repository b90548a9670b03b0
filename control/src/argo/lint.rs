//! `weir lint`: load every file, then check what only the whole set can tell — that each
//! referenced template exists and gets the arguments it requires, and that names are unique.

use std::path::PathBuf;

use super::error::ManifestError;
use super::load::Loaded;
use super::model::Origin;
use super::node::{index, join};

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LintReport {
    pub problems: Vec<ManifestError>,
    /// Skipped objects and ignored fields: worth knowing, never a failure.
    pub notes: Vec<String>,
}

impl LintReport {
    pub fn is_ok(&self) -> bool {
        self.problems.is_empty()
    }
}

pub fn lint(paths: &[PathBuf]) -> LintReport {
    let mut loaded = Loaded::default();
    for path in paths {
        loaded.read_file(path);
    }
    let mut problems = std::mem::take(&mut loaded.problems);
    duplicates(&loaded, &mut problems);
    references(&loaded, &mut problems);

    let mut notes: Vec<String> = loaded
        .manifests
        .skipped
        .iter()
        .map(|o| {
            let name = if o.name.is_empty() {
                String::new()
            } else {
                format!("/{}", o.name)
            };
            format!(
                "{}: {}{name}: not a Rollout or AnalysisTemplate, skipped",
                o.file.display(),
                o.kind
            )
        })
        .collect();
    notes.extend(loaded.manifests.notices.iter().cloned());
    LintReport { problems, notes }
}

fn problem(origin: &Origin, path: String, message: String) -> ManifestError {
    ManifestError {
        file: origin.file.clone(),
        object: format!("{}/{}", origin.kind, origin.name),
        path,
        line: None,
        message,
    }
}

/// Two objects of one kind and name would replace each other in a cluster.
fn duplicates(loaded: &Loaded, problems: &mut Vec<ManifestError>) {
    let m = &loaded.manifests;
    let origins = m
        .rollouts
        .iter()
        .map(|r| &r.origin)
        .chain(m.templates.iter().map(|t| &t.origin));
    let mut seen: Vec<&Origin> = Vec::new();
    for o in origins {
        if let Some(first) = seen.iter().find(|s| s.kind == o.kind && s.name == o.name) {
            let msg = format!(
                "{} `{}` is also defined in {}",
                o.kind,
                o.name,
                first.file.display()
            );
            problems.push(problem(o, "metadata.name".into(), msg));
        } else {
            seen.push(o);
        }
    }
}

fn references(loaded: &Loaded, problems: &mut Vec<ManifestError>) {
    for (origin, site) in &loaded.refs {
        for (i, tref) in site.analysis.templates.iter().enumerate() {
            let at = index(&join(&site.path, "templates"), i);
            let kind = if tref.cluster_scope {
                "ClusterAnalysisTemplate"
            } else {
                "AnalysisTemplate"
            };
            let Some(t) = loaded.manifests.template(tref) else {
                let broken = loaded
                    .failed
                    .iter()
                    .any(|f| f.kind == kind && f.name == tref.name);
                if !broken {
                    let msg = format!(
                        "{kind} `{}` is not in the given files; pass the file that defines it{}",
                        tref.name,
                        if tref.cluster_scope {
                            ""
                        } else {
                            " (or set clusterScope: true for a ClusterAnalysisTemplate)"
                        },
                    );
                    problems.push(problem(origin, join(&at, "templateName"), msg));
                }
                continue;
            };
            for arg in t.args.iter().filter(|a| a.value.is_none()) {
                if !site.analysis.args.iter().any(|a| a.name == arg.name) {
                    let msg = format!(
                        "{kind} `{}` requires argument `{}`; pass it under args",
                        t.name, arg.name
                    );
                    problems.push(problem(origin, join(&site.path, "args"), msg));
                }
            }
        }
    }
}
