//! Reading and parsing: YAML text -> model (type errors) -> `Config` (semantic errors).

use std::path::Path;

use super::check::Problem;
use super::compile::compile;
use super::error::{ConfigError, ConfigErrors};
use weir_proxy::problems::Problems;

use super::model::RawConfig;
use super::Config;
use crate::locate::line_of;

/// Reads, parses and validates the config file at `path`.
pub fn load(path: &Path) -> Result<Config, ConfigErrors> {
    let text = std::fs::read_to_string(path).map_err(|err| ConfigError {
        file: path.to_path_buf(),
        path: ".".to_string(),
        line: None,
        message: format!("cannot read config file: {err}"),
    })?;
    from_str(&text, path)
}

/// Parses and validates config text; `file` names it in errors and anchors relative paths.
pub fn from_str(text: &str, file: &Path) -> Result<Config, ConfigErrors> {
    let raw = parse(text, file)?;
    compile(&raw, file).map_err(|problems| {
        let mut errors: Vec<_> = problems
            .into_iter()
            .map(|p| locate(p, text, file))
            .collect();
        // Reading order; problems without a line (defaults) go last.
        errors.sort_by_key(|error| error.line.unwrap_or(usize::MAX));
        Problems(errors)
    })
}

/// Type and syntax errors stop parsing, so there is at most one; it keeps serde's path and
/// the YAML line.
fn parse(text: &str, file: &Path) -> Result<RawConfig, ConfigError> {
    // An empty file is a config with nothing in it, reported as missing listeners and routes
    // rather than as a puzzling "invalid type: unit value".
    if text
        .lines()
        .all(|line| line.trim().is_empty() || line.trim_start().starts_with('#'))
    {
        return Ok(RawConfig::default());
    }
    let deserializer = serde_yaml_ng::Deserializer::from_str(text);
    serde_path_to_error::deserialize(deserializer).map_err(|err| {
        let path = err.path().to_string();
        let inner = err.into_inner();
        let line = inner.location().map(|at| at.line());
        let message = clean_message(&inner, &path);
        ConfigError {
            file: file.to_path_buf(),
            path,
            line,
            message,
        }
    })
}

/// serde_yaml_ng's message repeats the path and the position, which our Display already shows.
fn clean_message(err: &serde_yaml_ng::Error, path: &str) -> String {
    let mut message = err.to_string();
    if let Some(at) = err.location() {
        message = message.replacen(
            &format!(" at line {} column {}", at.line(), at.column()),
            "",
            1,
        );
    }
    // Its path can be a parent of serde_path_to_error's (an unknown field is reported at the map).
    let mut prefix = path;
    loop {
        if let Some(rest) = message.strip_prefix(&format!("{prefix}: ")) {
            return rest.to_string();
        }
        match prefix.rfind(['.', '[']) {
            Some(end) => prefix = &prefix[..end],
            None => return message,
        }
    }
}

fn locate(problem: Problem, text: &str, file: &Path) -> ConfigError {
    ConfigError {
        file: file.to_path_buf(),
        line: line_of(text, &problem.path),
        path: problem.path,
        message: problem.message,
    }
}
