//! Config errors that name the file, the YAML path and (when known) the line.

use std::fmt;
use std::path::PathBuf;

use weir_proxy::problems::Problems;

/// One problem in a config file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError {
    pub file: PathBuf,
    /// Path inside the document, e.g. `routes[1].canary.addresses[0]`; "." for the whole file.
    pub path: String,
    /// 1-based line, when it could be found.
    pub line: Option<usize>,
    pub message: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:", self.file.display())?;
        if let Some(line) = self.line {
            write!(f, "{line}:")?;
        }
        write!(f, " {}: {}", self.path, self.message)
    }
}

impl std::error::Error for ConfigError {}

/// Every problem found in one config file; never empty when returned as an error.
pub type ConfigErrors = Problems<ConfigError>;
