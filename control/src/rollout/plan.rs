//! A Rollout made ready to run: its steps (a blue-green strategy becomes the equivalent steps),
//! its background analysis, and the templates it may use.

use super::secrets::Secrets;
use crate::argo::model::{
    AnalysisRef, AnalysisTemplate, ArgSource, BackgroundAnalysis, Rollout, SecretRef, Step,
    Strategy,
};

pub struct Plan {
    pub rollout: Rollout,
    pub steps: Vec<Step>,
    pub background: Option<BackgroundAnalysis>,
    pub templates: Vec<AnalysisTemplate>,
    /// For the status view: how each step came about.
    pub strategy: &'static str,
    /// Where `valueFrom.secretKeyRef` arguments are read.
    pub secrets: Secrets,
}

impl Plan {
    pub fn new(rollout: Rollout, templates: Vec<AnalysisTemplate>) -> Plan {
        let (steps, background, strategy) = match &rollout.strategy {
            Strategy::Canary(c) => (c.steps.clone(), c.analysis.clone(), "canary"),
            Strategy::BlueGreen(bg) => {
                // Blue-green as steps: preview analysis, the promotion gate, the switch of all
                // traffic at once, then the post-promotion analysis.
                let mut steps = Vec::new();
                if let Some(pre) = &bg.pre_promotion_analysis {
                    steps.push(Step::Analysis(pre.clone()));
                }
                if !bg.auto_promotion_enabled {
                    steps.push(Step::Pause { duration: None });
                } else if let Some(delay) = bg.auto_promotion_seconds {
                    steps.push(Step::Pause {
                        duration: Some(delay),
                    });
                }
                steps.push(Step::SetWeight { weight_bp: 10_000 });
                if let Some(post) = &bg.post_promotion_analysis {
                    steps.push(Step::Analysis(post.clone()));
                }
                (steps, None, "blueGreen")
            }
        };
        Plan {
            rollout,
            steps,
            background,
            templates,
            strategy,
            secrets: Secrets::default(),
        }
    }

    /// The plan, reading `valueFrom.secretKeyRef` arguments from `secrets`.
    pub fn with_secrets(mut self, secrets: Secrets) -> Plan {
        self.secrets = secrets;
        self
    }

    /// Every Secret key the Rollout and its templates read, with where (for errors at start).
    pub fn secret_refs(&self) -> Vec<(String, SecretRef)> {
        let mut refs = Vec::new();
        let rollout_args = self
            .steps
            .iter()
            .filter_map(|s| match s {
                Step::Analysis(a) => Some(a),
                _ => None,
            })
            .chain(self.background.as_ref().map(|b| &b.analysis))
            .flat_map(|a| &a.args);
        for arg in rollout_args {
            if let ArgSource::Secret(s) = &arg.value {
                refs.push((
                    format!("Rollout {} argument {}", self.rollout.name, arg.name),
                    s.clone(),
                ));
            }
        }
        for t in &self.templates {
            for arg in &t.args {
                if let Some(s) = &arg.secret {
                    refs.push((
                        format!("AnalysisTemplate {} argument {}", t.name, arg.name),
                        s.clone(),
                    ));
                }
            }
        }
        refs
    }

    pub fn step_analysis(&self, index: usize) -> Option<&AnalysisRef> {
        match self.steps.get(index) {
            Some(Step::Analysis(refs)) => Some(refs),
            _ => None,
        }
    }

    /// The Service names the Rollout uses for (stable, canary): blue-green's active and preview.
    pub fn services(&self) -> (Option<&str>, Option<&str>) {
        match &self.rollout.strategy {
            Strategy::Canary(c) => (c.stable_service.as_deref(), c.canary_service.as_deref()),
            Strategy::BlueGreen(bg) => (
                Some(bg.active_service.as_str()),
                bg.preview_service.as_deref(),
            ),
        }
    }
}

/// One line per step, as `kubectl argo rollouts get` shows them.
pub fn describe(step: &Step) -> String {
    match step {
        Step::SetWeight { weight_bp } => format!("setWeight: {}", *weight_bp as f64 / 100.0),
        Step::Pause { duration: Some(d) } => format!("pause: {}s", d.as_secs()),
        Step::Pause { duration: None } => "pause: until promoted".to_string(),
        Step::Analysis(a) => {
            let names: Vec<&str> = a.templates.iter().map(|t| t.name.as_str()).collect();
            format!("analysis: {}", names.join(", "))
        }
        Step::SetHeaderRoute { name, matches } if matches.is_empty() => {
            format!("setHeaderRoute: remove {name}")
        }
        Step::SetHeaderRoute { name, .. } => format!("setHeaderRoute: {name}"),
        Step::SetMirrorRoute { name, matches, .. } if matches.is_empty() => {
            format!("setMirrorRoute: remove {name}")
        }
        Step::SetMirrorRoute {
            name, percentage, ..
        } => {
            format!("setMirrorRoute: {name} {}%", percentage.unwrap_or(100))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::argo::model::{BlueGreenStrategy, Origin, TemplateRef};
    use std::time::Duration;

    fn blue_green(auto: bool, seconds: Option<u64>, analyses: bool) -> Plan {
        let refs = |n: &str| AnalysisRef {
            templates: vec![TemplateRef {
                name: n.into(),
                cluster_scope: false,
            }],
            args: vec![],
        };
        let rollout = Rollout {
            origin: Origin {
                file: "r.yaml".into(),
                kind: "Rollout".into(),
                name: "bg".into(),
            },
            name: "bg".into(),
            strategy: Strategy::BlueGreen(BlueGreenStrategy {
                active_service: "active".into(),
                preview_service: Some("preview".into()),
                auto_promotion_enabled: auto,
                auto_promotion_seconds: seconds.map(Duration::from_secs),
                pre_promotion_analysis: analyses.then(|| refs("pre")),
                post_promotion_analysis: analyses.then(|| refs("post")),
            }),
        };
        Plan::new(rollout, vec![])
    }

    #[test]
    fn blue_green_becomes_gate_switch_and_analyses() {
        let p = blue_green(false, None, true);
        assert_eq!(p.services(), (Some("active"), Some("preview")));
        let kinds: Vec<String> = p.steps.iter().map(describe).collect();
        assert_eq!(
            kinds,
            [
                "analysis: pre",
                "pause: until promoted",
                "setWeight: 100",
                "analysis: post"
            ]
        );

        let p = blue_green(true, Some(30), false);
        let kinds: Vec<String> = p.steps.iter().map(describe).collect();
        assert_eq!(kinds, ["pause: 30s", "setWeight: 100"]);

        // Argo's default: promote as soon as the preview is up.
        let p = blue_green(true, None, false);
        assert_eq!(p.steps, vec![Step::SetWeight { weight_bp: 10_000 }]);
    }
}
