//! Problems found in manifests: every one names the file, the object and the field.

use std::fmt;
use std::path::PathBuf;

use weir_proxy::problems::Problems;

/// One problem in one manifest, e.g.
/// `rollout.yaml: Rollout/web: spec.strategy.canary.steps[2].experiment: not supported; …`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ManifestError {
    pub file: PathBuf,
    /// `Kind/name`, or `document N` when the document has no usable kind or name.
    pub object: String,
    /// Field path as Argo's docs spell it, e.g. `spec.strategy.canary.steps[2].setWeight`.
    pub path: String,
    /// 1-based: where the field is (or its nearest ancestor present), or the syntax error.
    pub line: Option<usize>,
    pub message: String,
}

impl fmt::Display for ManifestError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file.display())?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
        }
        if !self.object.is_empty() {
            write!(f, ": {}", self.object)?;
        }
        if !self.path.is_empty() {
            write!(f, ": {}", self.path)?;
        }
        write!(f, ": {}", self.message)
    }
}

impl std::error::Error for ManifestError {}

/// All the problems found while loading, in file order. Never empty when returned as an error.
pub type ManifestErrors = Problems<ManifestError>;
