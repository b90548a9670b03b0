//! The one list of problems every loader in weir returns — a routing table the data plane
//! refuses, a config file, a set of Argo manifests — so all of them print alike: one problem a
//! line, each `FILE:LINE: PATH: MESSAGE` as far as it knows them.

use std::fmt;

/// Every problem found, in the order found; never empty when returned as an error.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problems<E>(pub Vec<E>);

impl<E> Default for Problems<E> {
    fn default() -> Self {
        Problems(Vec::new())
    }
}

impl<E> Problems<E> {
    pub fn iter(&self) -> std::slice::Iter<'_, E> {
        self.0.iter()
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl<E> From<E> for Problems<E> {
    fn from(problem: E) -> Self {
        Problems(vec![problem])
    }
}

impl<'a, E> IntoIterator for &'a Problems<E> {
    type Item = &'a E;
    type IntoIter = std::slice::Iter<'a, E>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

impl<E: fmt::Display> fmt::Display for Problems<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, problem) in self.0.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{problem}")?;
        }
        Ok(())
    }
}

impl<E: fmt::Display + fmt::Debug> std::error::Error for Problems<E> {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_problem_a_line() {
        let mut p = Problems(vec!["a.yaml:3: x: bad".to_string()]);
        p.0.push("a.yaml:9: y: worse".to_string());
        assert_eq!(p.to_string(), "a.yaml:3: x: bad\na.yaml:9: y: worse");
        assert_eq!(Problems::from(1).len(), 1);
        assert!(Problems::<u8>::default().is_empty());
    }
}
