//! The problem collector and the small checks shared by the compile steps.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::duration::ConfigDuration;
use super::percent::{to_basis_points, Percent};

/// A semantic problem, before it is given a file and a line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    pub path: String,
    pub message: String,
}

/// Collects every problem instead of stopping at the first, so one edit can fix them all.
pub struct Checker<'a> {
    pub problems: Vec<Problem>,
    /// Relative file paths in the config are relative to the config file's directory.
    base_dir: &'a Path,
}

impl<'a> Checker<'a> {
    pub fn new(base_dir: &'a Path) -> Self {
        Checker {
            problems: Vec::new(),
            base_dir,
        }
    }

    pub fn base_dir(&self) -> &Path {
        self.base_dir
    }

    pub fn report(&mut self, path: impl Into<String>, message: impl Into<String>) {
        self.problems.push(Problem {
            path: path.into(),
            message: message.into(),
        });
    }

    /// Names that end up in metrics labels and logs: `[A-Za-z0-9_.-]+`.
    pub fn name(&mut self, path: &str, name: &str) {
        let ok = !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'));
        if !ok {
            self.report(
                path,
                format!("invalid name {name:?}: use letters, digits, '_', '.', '-'"),
            );
        }
    }

    /// HTTP header and cookie names are RFC 9110 tokens.
    pub fn token(&mut self, path: &str, what: &str, name: &str) {
        if !is_token(name) {
            self.report(path, format!("invalid {what} name {name:?}"));
        }
    }

    /// Zero would mean "time out at once", which is never what anyone wants.
    pub fn duration(&mut self, path: &str, value: Option<ConfigDuration>) -> Option<Duration> {
        let ConfigDuration(duration) = value?;
        if duration.is_zero() {
            self.report(path, "duration must be greater than zero");
        }
        Some(duration)
    }

    pub fn at_least_one(&mut self, path: &str, value: Option<usize>, default: usize) -> usize {
        match value {
            Some(0) => {
                self.report(path, "must be at least 1");
                default
            }
            Some(value) => value,
            None => default,
        }
    }

    pub fn percent(&mut self, path: &str, value: Percent) -> u16 {
        to_basis_points(value).unwrap_or_else(|message| {
            self.report(path, message);
            0
        })
    }

    /// Resolves a file against the config directory and checks it can be opened; the data plane
    /// parses the contents.
    pub fn file(&mut self, path: &str, file: &Path) -> PathBuf {
        let resolved = self.resolve(file);
        if let Err(err) = std::fs::File::open(&resolved) {
            self.report(path, format!("cannot read {}: {err}", resolved.display()));
        }
        resolved
    }

    /// A file weir writes, resolved against the config directory: its directory must exist.
    pub fn output_file(&mut self, path: &str, file: &Path) -> PathBuf {
        let resolved = self.resolve(file);
        match resolved.parent() {
            Some(dir) if !dir.as_os_str().is_empty() && !dir.is_dir() => {
                self.report(path, format!("{}: no such directory", dir.display()))
            }
            _ if resolved.is_dir() => {
                self.report(path, format!("{} is a directory", resolved.display()))
            }
            _ => {}
        }
        resolved
    }

    fn resolve(&self, file: &Path) -> PathBuf {
        if file.is_relative() {
            self.base_dir.join(file)
        } else {
            file.to_path_buf()
        }
    }

    /// `host:port` or `[v6]:port`, port 1..=65535; the host may be a name resolved later.
    pub fn host_port(&mut self, path: &str, address: &str) {
        if let Err(why) = check_host_port(address) {
            self.report(path, format!("invalid address {address:?}: {why}"));
        }
    }
}

fn check_host_port(address: &str) -> Result<(), &'static str> {
    let (host, port) = address.rsplit_once(':').ok_or("expected host:port")?;
    let host_ok = match host.strip_prefix('[') {
        Some(v6) => v6
            .strip_suffix(']')
            .is_some_and(|ip| ip.parse::<std::net::Ipv6Addr>().is_ok()),
        None => {
            !host.is_empty()
                && host
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_'))
        }
    };
    if !host_ok {
        return Err("bad host (IPv6 addresses need brackets: [::1]:80)");
    }
    match port.parse::<u16>() {
        Ok(1..) => Ok(()),
        _ => Err("port must be a number from 1 to 65535"),
    }
}

pub fn is_token(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

#[cfg(test)]
mod tests {
    use super::check_host_port;

    #[test]
    fn host_port_forms() {
        for good in [
            "127.0.0.1:80",
            "api.internal:8443",
            "[::1]:9000",
            "svc-a_b:1",
        ] {
            assert_eq!(check_host_port(good), Ok(()), "{good}");
        }
        for bad in [
            "127.0.0.1",
            ":80",
            "host:0",
            "host:65536",
            "host:http",
            "::1:80",
            "a b:1",
        ] {
            assert!(check_host_port(bad).is_err(), "{bad}");
        }
    }
}
