//! Argo's condition language: the part of expr-lang that real AnalysisTemplates use
//! (`successCondition`, `failureCondition`), plus Argo's helpers (`asInt`, `asFloat`, `isNaN`,
//! `isInf`, `isNil`, `default`).
//!
//! Conditions are parsed when the template loads, names and arities included, so a typo is a
//! load error instead of a failed measurement halfway through a rollout. Evaluation binds
//! `result` to the measurement and never panics: every mistake is an `Err`.

mod ast;
mod builtins;
mod eval;
mod functions;
mod lexer;
mod parser;
mod value;

#[cfg(test)]
mod tests;

use std::fmt;

pub use value::Value;

/// A syntax or name error, located in the condition's source.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExprError {
    /// 1-based column in the expression source.
    pub column: usize,
    pub message: String,
}

impl fmt::Display for ExprError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "column {}: {}", self.column, self.message)
    }
}

impl std::error::Error for ExprError {}

/// A parsed condition such as `result[0] >= 0.99 && !isNaN(result[0])`.
#[derive(Clone, Debug)]
pub struct Condition {
    source: String,
    expr: ast::Expr,
}

impl Condition {
    /// Parses and checks a condition: syntax, names (`result`, `#` inside predicates, known
    /// functions) and argument counts.
    ///
    /// # Errors
    /// An [`ExprError`] with the 1-based column of the first problem.
    pub fn parse(source: &str) -> Result<Condition, ExprError> {
        Ok(Condition {
            source: source.to_string(),
            expr: parser::parse(source)?,
        })
    }

    pub fn source(&self) -> &str {
        &self.source
    }

    /// Evaluates with `result` bound to the measurement; the answer must be a bool.
    ///
    /// # Errors
    /// A message for a type error, an index out of range, or a non-bool answer
    /// ("condition must be a boolean, got number 0.5").
    pub fn evaluate(&self, result: &Value) -> Result<bool, String> {
        match self.eval(result)? {
            Value::Bool(b) => Ok(b),
            other => Err(format!(
                "condition must be a boolean, got {}",
                other.describe()
            )),
        }
    }

    /// Evaluates to whatever value the expression computes.
    ///
    /// # Errors
    /// A message for a type error or an index out of range, prefixed with its column.
    pub fn eval(&self, result: &Value) -> Result<Value, String> {
        eval::eval(&self.expr, result, None).map_err(eval::Fail::into_message)
    }
}

impl fmt::Display for Condition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.source)
    }
}
