//! Where `valueFrom.secretKeyRef` arguments are read: a directory of mounted Secrets, laid out
//! as Kubernetes mounts a Secret volume — `DIR/NAME/KEY` holds the value of key KEY of Secret
//! NAME. Read when each analysis run starts, so a rotated Secret is picked up by the next run.
//!
//! (Only a standalone weir runs analyses; following a cluster, Argo Rollouts runs them.)

use std::path::PathBuf;

use crate::argo::model::SecretRef;

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Secrets {
    /// `rollout.secrets_dir`; None: no Secret can be read.
    pub dir: Option<PathBuf>,
}

impl Secrets {
    pub fn new(dir: Option<PathBuf>) -> Self {
        Secrets { dir }
    }

    /// The value, exactly as stored (a trailing newline is part of it, as in Kubernetes).
    /// Errors name the Secret, the key and the file, never the value.
    pub fn read(&self, secret: &SecretRef) -> Result<String, String> {
        let Some(dir) = &self.dir else {
            return Err(format!(
                "valueFrom.secretKeyRef {}/{}: rollout.secrets_dir is not set, so no Secret can be read",
                secret.name, secret.key
            ));
        };
        let path = dir.join(&secret.name).join(&secret.key);
        let bytes = std::fs::read(&path).map_err(|e| {
            format!(
                "valueFrom.secretKeyRef {}/{}: cannot read {}: {e}",
                secret.name,
                secret.key,
                path.display()
            )
        })?;
        String::from_utf8(bytes).map_err(|_| {
            format!(
                "valueFrom.secretKeyRef {}/{}: {} is not UTF-8 text",
                secret.name,
                secret.key,
                path.display()
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_mounted_secret_key_and_says_which_one_is_missing() {
        let dir = std::env::temp_dir().join(format!("weir-secrets-{}", std::process::id()));
        let _ = std::fs::create_dir_all(dir.join("datadog"));
        std::fs::write(dir.join("datadog/api-key"), "s3cr3t").unwrap_or_default();
        let secrets = Secrets::new(Some(dir.clone()));
        let key = |name: &str, key: &str| SecretRef {
            name: name.into(),
            key: key.into(),
        };
        assert_eq!(
            secrets.read(&key("datadog", "api-key")),
            Ok("s3cr3t".into())
        );
        let missing = secrets.read(&key("datadog", "app-key")).unwrap_err();
        assert!(
            missing.contains("datadog/app-key") && missing.contains("cannot read"),
            "{missing}"
        );
        let unset = Secrets::default()
            .read(&key("datadog", "api-key"))
            .unwrap_err();
        assert!(unset.contains("rollout.secrets_dir"), "{unset}");
        let _ = std::fs::remove_dir_all(dir);
    }
}
