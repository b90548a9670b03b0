//! The state file: written atomically (write, fsync, rename, fsync the directory), so a crash
//! leaves either the old state or the new one, never half of one.

use std::io::Write;
use std::path::Path;

use super::state::RolloutState;

pub fn save(path: &Path, state: &RolloutState) -> Result<(), String> {
    let text =
        serde_json::to_vec_pretty(state).map_err(|e| format!("encoding the rollout state: {e}"))?;
    let tmp = path.with_extension("tmp");
    let write = || -> std::io::Result<()> {
        let mut file = std::fs::File::create(&tmp)?;
        file.write_all(&text)?;
        file.write_all(b"\n")?;
        file.sync_all()?;
        std::fs::rename(&tmp, path)?;
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::File::open(dir)?.sync_all()?;
        }
        Ok(())
    };
    write().map_err(|e| format!("writing the rollout state to {}: {e}", path.display()))
}

/// None when there is no state file yet; Err when there is one that cannot be used.
pub fn load(path: &Path) -> Result<Option<RolloutState>, String> {
    let bytes = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("reading the rollout state {}: {e}", path.display())),
    };
    serde_json::from_slice(&bytes).map(Some).map_err(|e| {
        format!(
            "the rollout state file {} is malformed ({e})",
            path.display()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rollout::state::Phase;

    fn dir() -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!(
            "weir-persist-{}-{}",
            std::process::id(),
            rand_suffix()
        ));
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn rand_suffix() -> u64 {
        use std::time::{SystemTime, UNIX_EPOCH};
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_nanos() as u64
    }

    #[test]
    fn round_trip_and_missing_file() {
        let d = dir();
        let path = d.join("state.json");
        assert_eq!(load(&path), Ok(None));
        let mut s = RolloutState::new("shop", "abc", 42);
        s.phase = Phase::Degraded;
        s.aborted = true;
        s.step_index = 3;
        save(&path, &s).unwrap();
        assert_eq!(load(&path), Ok(Some(s)));
        assert!(!path.with_extension("tmp").exists());
        std::fs::remove_dir_all(d).unwrap();
    }

    #[test]
    fn a_malformed_file_is_an_error_not_a_panic() {
        let d = dir();
        let path = d.join("state.json");
        for junk in ["", "{", "[1,2]", "{\"rollout\": 3}", "\u{0}\u{1}"] {
            std::fs::write(&path, junk).unwrap();
            let err = load(&path).unwrap_err();
            assert!(err.contains("malformed"), "{err}");
        }
        std::fs::remove_dir_all(d).unwrap();
    }
}
