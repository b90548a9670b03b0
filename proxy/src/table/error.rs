use std::fmt;

use crate::problems::Problems;

/// A reason a table was not swapped in, with the config path of the offending field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TableError {
    pub path: String,
    pub message: String,
}

impl fmt::Display for TableError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path, self.message)
    }
}

pub type TableErrors = Problems<TableError>;

impl Problems<TableError> {
    pub(super) fn push(&mut self, path: impl Into<String>, message: impl Into<String>) {
        self.0.push(TableError {
            path: path.into(),
            message: message.into(),
        });
    }
}
