use std::time::Duration;

use super::*;
use crate::argo::model::{AnalysisRef, StringMatch, TemplateRef};

fn weight(p: u16) -> Step {
    Step::SetWeight { weight_bp: p * 100 }
}

fn pause(secs: Option<u64>) -> Step {
    Step::Pause {
        duration: secs.map(Duration::from_secs),
    }
}

fn analysis() -> Step {
    Step::Analysis(AnalysisRef {
        templates: vec![TemplateRef {
            name: "t".into(),
            cluster_scope: false,
        }],
        args: vec![],
    })
}

fn state() -> RolloutState {
    RolloutState::new("r", "rev1", 0)
}

#[test]
fn runs_instant_steps_and_stops_at_a_timed_pause() {
    let steps = vec![weight(20), pause(Some(30)), weight(50)];
    let mut s = state();
    assert_eq!(advance(&steps, &mut s, 1_000), Wait::Until(31_000));
    assert_eq!((s.step_index, s.phase), (1, Phase::Paused));
    assert_eq!(traffic(&steps, &s).weight_bp, 2000);
    // Not yet.
    assert_eq!(advance(&steps, &mut s, 30_999), Wait::Until(31_000));
    // Past the pause: to the end, fully promoted.
    assert_eq!(advance(&steps, &mut s, 31_000), Wait::Done);
    assert_eq!((s.phase, s.promoted), (Phase::Healthy, true));
    assert_eq!(
        traffic(&steps, &s),
        Traffic {
            promoted: true,
            ..Traffic::default()
        }
    );
}

#[test]
fn an_open_pause_waits_for_promote() {
    let steps = vec![weight(20), pause(None), weight(80)];
    let mut s = state();
    assert_eq!(advance(&steps, &mut s, 0), Wait::Promote);
    assert_eq!(
        advance(&steps, &mut s, 99_999_999),
        Wait::Promote,
        "time alone never ends it"
    );
    assert!(command(&steps, &mut s, Command::Promote, 5).is_ok());
    assert_eq!(s.step_index, 2);
    assert_eq!(advance(&steps, &mut s, 5), Wait::Done);
    assert!(s.promoted);
}

#[test]
fn a_failed_analysis_aborts_to_weight_zero_with_its_message() {
    let steps = vec![weight(20), analysis(), weight(50)];
    let mut s = state();
    assert_eq!(advance(&steps, &mut s, 0), Wait::Analysis(1));
    assert_eq!(traffic(&steps, &s).weight_bp, 2000);
    step_analysis_done(
        &mut s,
        1,
        Verdict::Failed("success-rate 0.95 < 0.99".into()),
        10,
    );
    assert_eq!(s.phase, Phase::Degraded);
    assert!(s.aborted);
    assert_eq!(s.message, "success-rate 0.95 < 0.99");
    assert_eq!(traffic(&steps, &s), Traffic::default());
    assert_eq!(advance(&steps, &mut s, 20), Wait::Done);
    // An error aborts too.
    let mut s = state();
    advance(&steps, &mut s, 0);
    step_analysis_done(
        &mut s,
        1,
        Verdict::Error("prometheus unreachable".into()),
        10,
    );
    assert!(s.aborted);
}

#[test]
fn a_successful_analysis_moves_on_and_a_stale_one_is_ignored() {
    let steps = vec![weight(20), analysis(), weight(50), pause(None)];
    let mut s = state();
    advance(&steps, &mut s, 0);
    step_analysis_done(&mut s, 1, Verdict::Successful, 10);
    assert_eq!(advance(&steps, &mut s, 10), Wait::Promote);
    assert_eq!(traffic(&steps, &s).weight_bp, 5000);
    // A late verdict for step 1 changes nothing.
    step_analysis_done(&mut s, 1, Verdict::Failed("late".into()), 11);
    assert!(!s.aborted);
}

#[test]
fn inconclusive_pauses_for_a_human() {
    let steps = vec![weight(20), analysis(), weight(50)];
    let mut s = state();
    advance(&steps, &mut s, 0);
    step_analysis_done(
        &mut s,
        1,
        Verdict::Inconclusive("too little traffic".into()),
        10,
    );
    assert_eq!(s.phase, Phase::Paused);
    assert_eq!(advance(&steps, &mut s, 10), Wait::Promote);
    assert!(s.message.contains("too little traffic"));
    command(&steps, &mut s, Command::Promote, 20).unwrap();
    assert_eq!(advance(&steps, &mut s, 20), Wait::Done);
    assert!(s.promoted);
}

#[test]
fn background_failure_aborts_at_any_step() {
    let steps = vec![weight(20), pause(None)];
    let mut s = state();
    advance(&steps, &mut s, 0);
    background_analysis_done(&mut s, Verdict::Failed("burn rate 14 > 10".into()));
    assert_eq!((s.phase, s.aborted), (Phase::Degraded, true));
}

#[test]
fn abort_retry_and_promote_full() {
    let steps = vec![weight(20), pause(None), weight(50), pause(None)];
    let mut s = state();
    advance(&steps, &mut s, 0);
    assert!(
        command(&steps, &mut s, Command::Retry, 1).is_err(),
        "nothing to retry yet"
    );
    command(&steps, &mut s, Command::Abort, 1).unwrap();
    assert_eq!(traffic(&steps, &s).weight_bp, 0);
    assert!(
        command(&steps, &mut s, Command::Promote, 2).is_err(),
        "an aborted rollout is not promoted"
    );
    assert!(command(&steps, &mut s, Command::Abort, 2).is_err());
    command(&steps, &mut s, Command::Retry, 3).unwrap();
    assert_eq!(
        (s.step_index, s.aborted, s.phase),
        (0, false, Phase::Progressing)
    );
    assert_eq!(advance(&steps, &mut s, 3), Wait::Promote);
    command(&steps, &mut s, Command::PromoteFull, 4).unwrap();
    assert_eq!(advance(&steps, &mut s, 4), Wait::Done);
    assert!(s.promoted);
    assert!(
        command(&steps, &mut s, Command::Abort, 5).is_err(),
        "a promoted rollout is not aborted"
    );
}

#[test]
fn managed_routes_are_replayed_and_removed() {
    let route = |name: &str, v: Option<&str>| Step::SetHeaderRoute {
        name: name.into(),
        matches: v
            .map(|v| {
                vec![HeaderRouteMatch {
                    header_name: "x-canary".into(),
                    header_value: StringMatch::Exact(v.into()),
                }]
            })
            .unwrap_or_default(),
    };
    let mirror = |p: Option<u16>, with_match: bool| Step::SetMirrorRoute {
        name: "m".into(),
        percentage: p,
        matches: if with_match {
            vec![MirrorMatch {
                method: Some(StringMatch::Exact("POST".into())),
                path: None,
                headers: vec![],
            }]
        } else {
            vec![]
        },
    };
    let steps = vec![
        route("h", Some("yes")),
        mirror(Some(35), true),
        pause(None),
        route("h", None),
        mirror(None, true),
        pause(None),
        mirror(None, false),
        pause(None),
    ];
    let mut s = state();
    advance(&steps, &mut s, 0);
    let t = traffic(&steps, &s);
    assert_eq!(t.header_routes.len(), 1);
    assert_eq!(t.mirror.as_ref().map(|m| m.1), Some(3500));
    command(&steps, &mut s, Command::Promote, 1).unwrap();
    advance(&steps, &mut s, 1);
    let t = traffic(&steps, &s);
    assert!(
        t.header_routes.is_empty(),
        "an empty match removes the header route"
    );
    assert_eq!(
        t.mirror.as_ref().map(|m| m.1),
        Some(10_000),
        "Argo's default percentage is 100"
    );
    command(&steps, &mut s, Command::Promote, 2).unwrap();
    advance(&steps, &mut s, 2);
    assert_eq!(
        traffic(&steps, &s).mirror,
        None,
        "an empty match removes the mirror"
    );
}

#[test]
fn no_steps_is_an_immediate_promotion() {
    let mut s = state();
    assert_eq!(advance(&[], &mut s, 0), Wait::Done);
    assert!(s.promoted);
}
