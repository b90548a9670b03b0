use std::fmt;

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

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TableErrors(pub Vec<TableError>);

impl TableErrors {
    pub(super) fn push(&mut self, path: impl Into<String>, message: impl Into<String>) {
        self.0.push(TableError {
            path: path.into(),
            message: message.into(),
        });
    }
}

impl fmt::Display for TableErrors {
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

impl std::error::Error for TableErrors {}
