//! Argo's judgement: a measurement's phase from its conditions, a metric's from its limits.

use serde::{Deserialize, Serialize};

use super::provider::Reading;
use crate::expr::Condition;

/// Argo's AnalysisPhase, used for measurements, metrics and runs alike.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Phase {
    Pending,
    Running,
    Successful,
    Failed,
    Inconclusive,
    Error,
}

impl Phase {
    pub fn completed(self) -> bool {
        !matches!(self, Phase::Pending | Phase::Running)
    }

    /// Argo's ordering for a run's worst metric: Failed > Error > Inconclusive > Successful.
    pub fn severity(self) -> u8 {
        match self {
            Phase::Pending | Phase::Running => 0,
            Phase::Successful => 1,
            Phase::Inconclusive => 2,
            Phase::Error => 3,
            Phase::Failed => 4,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Pending => "Pending",
            Phase::Running => "Running",
            Phase::Successful => "Successful",
            Phase::Failed => "Failed",
            Phase::Inconclusive => "Inconclusive",
            Phase::Error => "Error",
        }
    }
}

/// Argo's EvaluateResult table, given what each present condition evaluated to.
/// A condition that could not be evaluated makes the measurement an Error.
pub fn evaluate(
    success: Option<Result<bool, String>>,
    failure: Option<Result<bool, String>>,
) -> Result<Phase, String> {
    let success = success.transpose()?;
    let failure = failure.transpose()?;
    let (success, failure) = match (success, failure) {
        (None, None) => return Ok(Phase::Successful),
        // Without a failure condition, not meeting success is failure, and vice versa.
        (Some(s), None) => (s, !s),
        (None, Some(f)) => (!f, f),
        (Some(s), Some(f)) => (s, f),
    };
    Ok(if failure {
        Phase::Failed
    } else if success {
        Phase::Successful
    } else {
        Phase::Inconclusive
    })
}

/// A metric's parsed conditions.
#[derive(Clone, Debug, Default)]
pub struct Conditions {
    pub success: Option<Condition>,
    pub failure: Option<Condition>,
}

/// One judged measurement: its phase, the value as shown, and why.
#[derive(Clone, Debug, PartialEq)]
pub struct Judgement {
    pub phase: Phase,
    pub value: Option<String>,
    pub message: String,
}

impl Conditions {
    pub fn judge(&self, reading: Result<Reading, String>) -> Judgement {
        let value = match reading {
            Err(message) => {
                return Judgement {
                    phase: Phase::Error,
                    value: None,
                    message,
                }
            }
            Ok(Reading::Inconclusive(message)) => {
                return Judgement {
                    phase: Phase::Inconclusive,
                    value: None,
                    message,
                }
            }
            Ok(Reading::Value(value)) => (value, None),
            Ok(Reading::Judged { value, detail }) => (value, Some(detail)),
        };
        let (value, detail) = value;
        let shown = value.to_string();
        let run = |condition: &Option<Condition>| {
            condition.as_ref().map(|c| {
                c.evaluate(&value)
                    .map_err(|e| format!("condition `{}` on {shown}: {e}", c.source()))
            })
        };
        let phase = evaluate(run(&self.success), run(&self.failure));
        let mut message = match &phase {
            Err(e) => e.clone(),
            // A comparison's verdict, its conditions only restating it: said once, in words.
            Ok(phase) if detail.is_some() => match in_words(*phase, &shown) {
                Some(words) => words.to_string(),
                None => self.explain(*phase, &shown),
            },
            Ok(phase) => self.explain(*phase, &shown),
        };
        if let Some(detail) = detail {
            message.push_str(": ");
            message.push_str(&detail);
        }
        Judgement {
            phase: phase.unwrap_or(Phase::Error),
            value: Some(shown),
            message,
        }
    }

    /// Why a measurement got its phase, naming the condition that decided.
    fn explain(&self, phase: Phase, shown: &str) -> String {
        let source = |c: &Option<Condition>| c.as_ref().map(|c| c.source().to_string());
        match (phase, source(&self.success), source(&self.failure)) {
            (Phase::Failed, _, Some(f)) => format!("measurement {shown} met failure condition {f}"),
            (Phase::Failed, Some(s), None) => format!("measurement {shown} did not meet {s}"),
            (Phase::Inconclusive, Some(s), Some(f)) => {
                format!("measurement {shown} met neither {s} nor failure condition {f}")
            }
            _ => format!("measurement {shown}"),
        }
    }
}

/// A comparison's verdict as its phase reads it, where the two agree (the shipped templates'
/// conditions): "measurement Failed met failure condition result == \"Failed\"" says the same
/// thing three times; the evidence that follows says why.
fn in_words(phase: Phase, verdict: &str) -> Option<&'static str> {
    match (phase, verdict) {
        (Phase::Failed, "Failed") => Some("the canary is worse"),
        (Phase::Successful, "Successful") => Some("the canary is not worse"),
        (Phase::Successful, "Inconclusive") => {
            Some("the canary was not shown worse in the time it had")
        }
        (Phase::Inconclusive, "Inconclusive") => Some("not decided"),
        _ => None,
    }
}

/// The limits of a metric, resolved and checked when the run starts.
#[derive(Clone, Debug, PartialEq)]
pub struct Limits {
    /// None = until the run is terminated.
    pub count: Option<u64>,
    /// -1 disables it (when consecutiveSuccessLimit decides instead).
    pub failure_limit: i64,
    pub inconclusive_limit: u64,
    pub consecutive_error_limit: u64,
    /// 0 disables it.
    pub consecutive_success_limit: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            count: Some(1),
            failure_limit: 0,
            inconclusive_limit: 0,
            consecutive_error_limit: 4,
            consecutive_success_limit: 0,
        }
    }
}

/// A metric's running counts, as Argo keeps them. Errors do not count towards `count`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Tally {
    pub count: u64,
    pub successful: u64,
    pub failed: u64,
    pub inconclusive: u64,
    pub error: u64,
    pub consecutive_error: u64,
    pub consecutive_successful: u64,
}

impl Tally {
    pub fn record(&mut self, phase: Phase) {
        match phase {
            Phase::Successful => {
                self.successful += 1;
                self.consecutive_successful += 1;
            }
            Phase::Failed => self.failed += 1,
            Phase::Inconclusive => self.inconclusive += 1,
            Phase::Error => self.error += 1,
            Phase::Pending | Phase::Running => return,
        }
        if phase == Phase::Error {
            self.consecutive_error += 1;
        } else {
            self.count += 1;
            self.consecutive_error = 0;
        }
        if phase != Phase::Successful {
            self.consecutive_successful = 0;
        }
    }
}

/// A metric's phase after its latest measurement, and which limit decided it.
pub fn assess(limits: &Limits, tally: &Tally) -> (Phase, Option<String>) {
    let Limits {
        count,
        failure_limit,
        inconclusive_limit,
        consecutive_error_limit: error_limit,
        consecutive_success_limit: success_limit,
    } = *limits;
    if tally.consecutive_error > error_limit {
        let why = format!(
            "consecutive errors {} > consecutiveErrorLimit {error_limit}",
            tally.consecutive_error
        );
        return (Phase::Error, Some(why));
    }
    if tally.inconclusive > inconclusive_limit {
        let why = format!(
            "inconclusive {} > inconclusiveLimit {inconclusive_limit}",
            tally.inconclusive
        );
        return (Phase::Inconclusive, Some(why));
    }
    if failure_limit >= 0 && tally.failed > failure_limit.unsigned_abs() {
        let why = format!("failed {} > failureLimit {failure_limit}", tally.failed);
        return (Phase::Failed, Some(why));
    }
    if success_limit > 0 && tally.consecutive_successful >= success_limit {
        let why = format!(
            "{} consecutive successes reached consecutiveSuccessLimit",
            tally.consecutive_successful
        );
        return (Phase::Successful, Some(why));
    }
    match count {
        Some(count) if tally.count >= count => {
            // Argo v1.8: with a consecutiveSuccessLimit, running out of measurements without
            // reaching it is Failed, or Inconclusive when failureLimit also applies.
            let missed =
                format!("{count} measurements taken without {success_limit} consecutive successes");
            match (success_limit > 0, failure_limit >= 0) {
                (true, true) => (Phase::Inconclusive, Some(missed)),
                (true, false) => (Phase::Failed, Some(missed)),
                _ => (Phase::Successful, None),
            }
        }
        _ => (Phase::Running, None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expr::Value;
    use Phase::*;

    #[test]
    fn argo_evaluate_result_table() {
        let t = Some(Ok(true));
        let f = Some(Ok(false));
        let e = || Some(Err::<bool, String>("boom".into()));
        let table = [
            // success, failure → phase
            (None, None, Ok(Successful)),
            (t.clone(), None, Ok(Successful)),
            (f.clone(), None, Ok(Failed)),
            (None, t.clone(), Ok(Failed)),
            (None, f.clone(), Ok(Successful)),
            (t.clone(), f.clone(), Ok(Successful)),
            (f.clone(), t.clone(), Ok(Failed)),
            // Failure is checked first.
            (t.clone(), t.clone(), Ok(Failed)),
            (f.clone(), f.clone(), Ok(Inconclusive)),
            (e(), f.clone(), Err("boom".to_string())),
            (t.clone(), e(), Err("boom".to_string())),
        ];
        for (success, failure, want) in table {
            let got = evaluate(success.clone(), failure.clone());
            assert_eq!(got, want, "success={success:?} failure={failure:?}");
        }
    }

    fn conditions(success: Option<&str>, failure: Option<&str>) -> Conditions {
        let parse = |s: &str| Condition::parse(s).unwrap();
        Conditions {
            success: success.map(parse),
            failure: failure.map(parse),
        }
    }

    fn list(n: f64) -> Result<Reading, String> {
        Ok(Reading::Value(Value::List(vec![Value::Number(n)])))
    }

    #[test]
    fn readings_and_errors_become_phases_without_conditions() {
        let none = conditions(None, None);
        assert_eq!(none.judge(list(0.5)).phase, Successful);
        let j = none.judge(Err("prometheus query failed: bad_data: x".into()));
        assert_eq!(
            (j.phase, j.message.as_str()),
            (Error, "prometheus query failed: bad_data: x")
        );
        let j = none.judge(Ok(Reading::Inconclusive("3 requests".into())));
        assert_eq!((j.phase, j.value), (Inconclusive, None));
    }

    #[test]
    fn a_comparisons_verdict_is_said_once_in_words() {
        let verdicts = conditions(
            Some(r#"result == "Successful""#),
            Some(r#"result == "Failed""#),
        );
        let judged = |verdict: &str| {
            Ok(Reading::Judged {
                value: Value::String(verdict.into()),
                detail: "canary 2.10 % errors vs stable 0.10 %".into(),
            })
        };
        let j = verdicts.judge(judged("Failed"));
        assert_eq!(
            (j.phase, j.message.as_str()),
            (
                Failed,
                "the canary is worse: canary 2.10 % errors vs stable 0.10 %"
            )
        );
        let j = verdicts.judge(judged("Successful"));
        assert_eq!(
            j.message,
            "the canary is not worse: canary 2.10 % errors vs stable 0.10 %"
        );
        // weir-shadow's gate: not shown worse in its time passes, and says so.
        let gate = conditions(Some(r#"result != "Failed""#), Some(r#"result == "Failed""#));
        let j = gate.judge(judged("Inconclusive"));
        assert_eq!(j.phase, Successful);
        assert!(
            j.message.starts_with("the canary was not shown worse"),
            "{}",
            j.message
        );
        // Conditions of the user's own that do not restate the verdict are named as before.
        let own = conditions(None, Some(r#"result != "Successful""#));
        let j = own.judge(judged("Inconclusive"));
        assert!(
            j.message
                .starts_with("measurement Inconclusive met failure condition"),
            "{}",
            j.message
        );
    }

    /// Needs the real condition language (`expr`).
    #[test]
    fn conditions_judge_readings() {
        let success_only = conditions(Some("result[0] >= 0.99"), None);
        let j = success_only.judge(list(0.962));
        assert_eq!(j.phase, Failed, "{}", j.message);
        assert_eq!(j.value.as_deref(), Some("[0.962]"));
        assert_eq!(
            j.message,
            "measurement [0.962] did not meet result[0] >= 0.99"
        );
        assert_eq!(success_only.judge(list(0.995)).phase, Successful);

        let failure_only = conditions(None, Some("result[0] > 10"));
        let j = failure_only.judge(list(12.0));
        assert_eq!(
            (j.phase, j.message.as_str()),
            (
                Failed,
                "measurement [12] met failure condition result[0] > 10"
            )
        );
        assert_eq!(failure_only.judge(list(3.0)).phase, Successful);

        let both = conditions(Some("result[0] >= 0.99"), Some("result[0] < 0.9"));
        assert_eq!(both.judge(list(0.95)).phase, Inconclusive);
        assert_eq!(both.judge(list(0.5)).phase, Failed);
        assert_eq!(both.judge(list(0.999)).phase, Successful);
        // NaN compares false both ways: neither condition holds.
        assert_eq!(both.judge(list(f64::NAN)).phase, Inconclusive);

        // An empty vector: result[0] cannot be evaluated.
        let j = success_only.judge(Ok(Reading::Value(Value::List(vec![]))));
        assert_eq!(j.phase, Error, "{}", j.message);
        assert!(j.message.contains("result[0] >= 0.99"), "{}", j.message);
    }

    #[test]
    fn tally_counts_like_argo() {
        let mut t = Tally::default();
        for p in [
            Successful,
            Error,
            Error,
            Failed,
            Inconclusive,
            Successful,
            Successful,
        ] {
            t.record(p);
        }
        assert_eq!(
            t,
            Tally {
                count: 5,
                successful: 3,
                failed: 1,
                inconclusive: 1,
                error: 2,
                consecutive_error: 0,
                consecutive_successful: 2,
            }
        );
    }

    fn after(limits: &Limits, phases: &[Phase]) -> Phase {
        let mut tally = Tally::default();
        let mut phase = Running;
        for p in phases {
            tally.record(*p);
            phase = assess(limits, &tally).0;
            if phase.completed() {
                break;
            }
        }
        phase
    }

    #[test]
    fn limits_decide_metric_phase() {
        let unbounded = Limits {
            count: None,
            ..Limits::default()
        };
        let cases: Vec<(Limits, Vec<Phase>, Phase)> = vec![
            // Default: one measurement, no failure tolerated.
            (Limits::default(), vec![Successful], Successful),
            (Limits::default(), vec![Failed], Failed),
            (Limits::default(), vec![Inconclusive], Inconclusive),
            // failed > failureLimit, counted in total, not consecutively.
            (
                Limits {
                    failure_limit: 2,
                    ..unbounded.clone()
                },
                vec![Failed, Successful, Failed],
                Running,
            ),
            (
                Limits {
                    failure_limit: 2,
                    ..unbounded.clone()
                },
                vec![Failed, Successful, Failed, Failed],
                Failed,
            ),
            (
                Limits {
                    failure_limit: 1,
                    count: Some(3),
                    ..Limits::default()
                },
                vec![Failed, Successful, Successful],
                Successful,
            ),
            // Errors: only consecutive ones count, and they do not use up `count`.
            (Limits::default(), vec![Error, Error, Error, Error], Running),
            (
                Limits::default(),
                vec![Error, Error, Error, Error, Error],
                Error,
            ),
            (
                unbounded.clone(),
                vec![
                    Error, Error, Error, Error, Successful, Error, Error, Error, Error,
                ],
                Running,
            ),
            (
                Limits {
                    consecutive_error_limit: 0,
                    ..Limits::default()
                },
                vec![Error],
                Error,
            ),
            (
                Limits::default(),
                vec![Error, Error, Successful],
                Successful,
            ),
            // Inconclusive tolerated up to inconclusiveLimit.
            (
                Limits {
                    inconclusive_limit: 1,
                    count: Some(3),
                    ..Limits::default()
                },
                vec![Inconclusive, Successful, Successful],
                Successful,
            ),
            (
                Limits {
                    inconclusive_limit: 1,
                    count: Some(3),
                    ..Limits::default()
                },
                vec![Inconclusive, Inconclusive],
                Inconclusive,
            ),
            // consecutiveSuccessLimit ends early...
            (
                Limits {
                    consecutive_success_limit: 2,
                    failure_limit: 3,
                    count: Some(10),
                    ..Limits::default()
                },
                vec![Successful, Failed, Successful, Successful],
                Successful,
            ),
            // ...and running out of count without it is Inconclusive (failureLimit applies) or Failed (it does not).
            (
                Limits {
                    consecutive_success_limit: 3,
                    failure_limit: 3,
                    count: Some(3),
                    ..Limits::default()
                },
                vec![Successful, Failed, Successful],
                Inconclusive,
            ),
            (
                Limits {
                    consecutive_success_limit: 3,
                    failure_limit: -1,
                    count: Some(3),
                    ..Limits::default()
                },
                vec![Failed, Failed, Successful],
                Failed,
            ),
            (
                Limits {
                    consecutive_success_limit: 2,
                    failure_limit: -1,
                    ..unbounded.clone()
                },
                vec![Failed, Failed, Failed, Successful, Successful],
                Successful,
            ),
        ];
        for (limits, phases, want) in cases {
            assert_eq!(after(&limits, &phases), want, "{limits:?} after {phases:?}");
        }
    }

    #[test]
    fn severity_orders_failed_worst() {
        assert!(Failed.severity() > Error.severity());
        assert!(Error.severity() > Inconclusive.severity());
        assert!(Inconclusive.severity() > Successful.severity());
    }
}
