//! Reading manifest files: multi-document YAML, each document dispatched on apiVersion/kind.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_yaml_ng::{Mapping, Value};

use weir_proxy::problems::Problems;

use super::error::{ManifestError, ManifestErrors};
use super::model::{AnalysisTemplate, Origin, Rollout, TemplateRef};
use super::node::{field, type_name, Ctx};
use super::rollout::{rollout, RefSite};
use super::template::template;
use crate::locate::line_in;

const ARGO_API: &str = "argoproj.io/v1alpha1";
const ARGO_KINDS: [&str; 3] = ["Rollout", "AnalysisTemplate", "ClusterAnalysisTemplate"];

/// Everything weir read from a set of manifest files.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Manifests {
    pub rollouts: Vec<Rollout>,
    pub templates: Vec<AnalysisTemplate>,
    /// Objects of other kinds (Service, Ingress, Experiment, …), which weir does not read.
    pub skipped: Vec<Origin>,
    /// Fields accepted and ignored, one line each, e.g.
    /// `Rollout/x: spec.replicas is about pods; weir routes traffic only, ignoring it`.
    pub notices: Vec<String>,
}

impl Manifests {
    /// The AnalysisTemplate (or, with `cluster_scope`, ClusterAnalysisTemplate) a Rollout names.
    pub fn template(&self, r: &TemplateRef) -> Option<&AnalysisTemplate> {
        self.templates
            .iter()
            .find(|t| t.name == r.name && t.cluster_scope == r.cluster_scope)
    }

    pub fn rollout(&self, name: &str) -> Option<&Rollout> {
        self.rollouts.iter().find(|r| r.name == name)
    }
}

/// Reads one file's text (`file` is for messages). Every problem is reported, not just the first.
pub fn load_str(text: &str, file: &Path) -> Result<Manifests, ManifestErrors> {
    let mut loaded = Loaded::default();
    loaded.read_str(text, file);
    loaded.finish()
}

/// Reads every file; fails with the problems of all of them.
pub fn load_files(paths: &[PathBuf]) -> Result<Manifests, ManifestErrors> {
    let mut loaded = Loaded::default();
    for path in paths {
        loaded.read_file(path);
    }
    loaded.finish()
}

/// What was read so far, problems included; `lint` cross-checks it.
#[derive(Default)]
pub(crate) struct Loaded {
    pub manifests: Manifests,
    pub problems: Vec<ManifestError>,
    /// Argo objects that had problems, so cross-checks do not also call them missing.
    pub failed: Vec<Origin>,
    /// Every analysis a Rollout runs: (Rollout origin, where, what).
    pub refs: Vec<(Origin, RefSite)>,
}

impl Loaded {
    fn finish(self) -> Result<Manifests, ManifestErrors> {
        if !self.problems.is_empty() {
            return Err(Problems(self.problems));
        }
        for notice in &self.manifests.notices {
            tracing::info!("{notice}");
        }
        Ok(self.manifests)
    }

    pub fn read_file(&mut self, path: &Path) {
        match std::fs::read_to_string(path) {
            Ok(text) => self.read_str(&text, path),
            Err(e) => self.problems.push(ManifestError {
                file: path.to_path_buf(),
                object: String::new(),
                path: String::new(),
                line: None,
                message: format!("cannot read: {e}"),
            }),
        }
    }

    pub fn read_str(&mut self, text: &str, file: &Path) {
        for (i, doc) in serde_yaml_ng::Deserializer::from_str(text).enumerate() {
            let label = format!("document {}", i + 1);
            let parsed = Value::deserialize(doc).and_then(|mut v| v.apply_merge().map(|()| v));
            match parsed {
                Ok(value) => {
                    let found = self.problems.len();
                    self.document(&value, file, label);
                    // Each problem at its field's line (or its nearest ancestor's).
                    for problem in &mut self.problems[found..] {
                        if problem.line.is_none() {
                            problem.line = line_in(text, i, &problem.path);
                        }
                    }
                }
                Err(e) => {
                    self.problems.push(ManifestError {
                        file: file.to_path_buf(),
                        object: label,
                        path: String::new(),
                        line: e.location().map(|l| l.line()),
                        message: format!("not valid YAML: {e}"),
                    });
                    // The parser cannot resume after a syntax error.
                    break;
                }
            }
        }
    }

    fn document(&mut self, value: &Value, file: &Path, label: String) {
        let mut cx = Ctx::new(file, label);
        let doc = match value {
            Value::Null => return, // an empty document, e.g. only comments
            Value::Mapping(m) => m,
            other => {
                cx.problem(
                    "",
                    format!("expected a Kubernetes object, found {}", type_name(other)),
                );
                self.problems.append(&mut cx.problems);
                return;
            }
        };
        let api = top_string(&mut cx, doc, "apiVersion");
        let kind = top_string(&mut cx, doc, "kind");
        let (Some(api), Some(kind)) = (api, kind) else {
            self.problems.append(&mut cx.problems);
            return;
        };
        let name = doc
            .get("metadata")
            .and_then(|m| m.get("name"))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let origin = Origin {
            file: file.to_path_buf(),
            kind: kind.clone(),
            name: name.clone(),
        };
        let is_argo = api.split('/').next() == Some("argoproj.io");
        if !(is_argo && ARGO_KINDS.contains(&kind.as_str())) {
            self.manifests.skipped.push(origin);
            return;
        }

        cx.object = format!("{kind}/{}", if name.is_empty() { "?" } else { &name });
        self.argo_object(&mut cx, doc, &api, origin);
        self.problems.append(&mut cx.problems);
        for n in cx.notices {
            if !self.manifests.notices.contains(&n) {
                self.manifests.notices.push(n);
            }
        }
    }

    fn argo_object(&mut self, cx: &mut Ctx, doc: &Mapping, api: &str, origin: Origin) {
        let before = cx.count();
        if api != ARGO_API {
            cx.problem(
                "apiVersion",
                format!("`{api}` is not supported; weir reads {ARGO_API}"),
            );
        }
        for key in doc.keys() {
            match key.as_str() {
                Some("apiVersion" | "kind" | "metadata" | "spec" | "status") => {}
                Some(other) => cx.problem(
                    other,
                    "unknown field; an object has apiVersion, kind, metadata, spec",
                ),
                None => cx.problem("", "keys must be strings"),
            }
        }
        if origin.name.is_empty() {
            cx.problem(
                "metadata.name",
                "required field is missing (or not a string)",
            );
        }
        let Some(spec) = field(doc, "spec") else {
            cx.problem("spec", "required field is missing");
            self.failed.push(origin);
            return;
        };
        if cx.count() != before {
            self.failed.push(origin);
            return;
        }
        if origin.kind == "Rollout" {
            match rollout(cx, spec, origin.clone()) {
                Some((r, refs)) => {
                    self.refs
                        .extend(refs.into_iter().map(|s| (origin.clone(), s)));
                    self.manifests.rollouts.push(r);
                }
                None => self.failed.push(origin),
            }
        } else {
            match template(cx, spec, origin.clone()) {
                Some(t) => self.manifests.templates.push(t),
                None => self.failed.push(origin),
            }
        }
    }
}

fn top_string(cx: &mut Ctx, doc: &Mapping, key: &str) -> Option<String> {
    match field(doc, key) {
        Some(Value::String(s)) => Some(s.clone()),
        Some(other) => {
            cx.problem(
                key,
                format!("expected a string, found {}", type_name(other)),
            );
            None
        }
        None => {
            cx.problem(key, "missing; a Kubernetes object has apiVersion and kind (is this a Helm values file or chart?)");
            None
        }
    }
}
