//! Problems found in manifests: every one names the file, the object and the field.

use std::fmt;
use std::path::PathBuf;

/// One problem in one manifest, e.g.
/// `rollout.yaml: Rollout/web: spec.strategy.canary.steps[2].experiment: not supported; …`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ManifestError {
    pub file: PathBuf,
    /// `Kind/name`, or `document N` when the document has no usable kind or name.
    pub object: String,
    /// Field path as Argo's docs spell it, e.g. `spec.strategy.canary.steps[2].setWeight`.
    pub path: String,
    /// 1-based; known for YAML syntax errors only.
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
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ManifestErrors(pub Vec<ManifestError>);

impl ManifestErrors {
    pub fn iter(&self) -> std::slice::Iter<'_, ManifestError> {
        self.0.iter()
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Display for ManifestErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, e) in self.0.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{e}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ManifestErrors {}

impl<'a> IntoIterator for &'a ManifestErrors {
    type Item = &'a ManifestError;
    type IntoIter = std::slice::Iter<'a, ManifestError>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}
