//! Starting a Rollout's analysis: find its templates, resolve its arguments, run it.

use std::collections::HashMap;
use std::sync::Arc;

use weir_proxy::stats::Role;

use super::machine::Verdict;
use super::plan::Plan;
use crate::analysis::provider::ProviderContext;
use crate::analysis::{AnalysisRun, Phase, RunStatus};
use crate::argo::model::{AnalysisRef, ArgSource};

pub struct Run(AnalysisRun);

pub fn start_run(
    name: &str,
    refs: &AnalysisRef,
    plan: &Plan,
    ctx: &Arc<ProviderContext>,
) -> Result<Run, String> {
    let mut templates = Vec::with_capacity(refs.templates.len());
    for t in &refs.templates {
        let kind = if t.cluster_scope {
            "ClusterAnalysisTemplate"
        } else {
            "AnalysisTemplate"
        };
        let found = plan
            .templates
            .iter()
            .find(|x| x.name == t.name && x.cluster_scope == t.cluster_scope);
        templates.push(
            found
                .cloned()
                .ok_or_else(|| format!("{kind} {:?} is not among the manifests given", t.name))?,
        );
    }
    let mut args = HashMap::new();
    for arg in &refs.args {
        let value = match &arg.value {
            ArgSource::Value(v) => v.clone(),
            // weir has no pods: the "hash" names the backend, which is what queries filter on.
            ArgSource::PodTemplateHash(Role::Stable) => "stable".to_string(),
            ArgSource::PodTemplateHash(Role::Canary) => "canary".to_string(),
            ArgSource::Secret(secret) => plan.secrets.read(secret)?,
            ArgSource::FieldRef(path) => match path.as_str() {
                "metadata.name" => plan.rollout.name.clone(),
                other => {
                    return Err(format!(
                        "argument {:?}: fieldRef {other:?} is not known to weir (metadata.name is)",
                        arg.name
                    ))
                }
            },
        };
        args.insert(arg.name.clone(), value);
    }
    // A template argument backed by a Secret, unless the Rollout passes the value itself.
    for template in &templates {
        for arg in &template.args {
            if let (Some(secret), false) = (&arg.secret, args.contains_key(&arg.name)) {
                args.insert(arg.name.clone(), plan.secrets.read(secret)?);
            }
        }
    }
    AnalysisRun::start(name.to_string(), templates, args, ctx.clone()).map(Run)
}

impl Run {
    pub async fn verdict(&self) -> Verdict {
        let status = self.0.finished().await;
        match status.phase {
            Phase::Failed => Verdict::Failed(status.message),
            Phase::Error => Verdict::Error(status.message),
            Phase::Inconclusive => Verdict::Inconclusive(status.message),
            Phase::Successful | Phase::Pending | Phase::Running => Verdict::Successful,
        }
    }

    pub fn status(&self) -> RunStatus {
        self.0.status()
    }

    pub fn terminate(&self) {
        self.0.terminate();
    }
}
