//! One paired measurement (`shadow-errors`, `shadow-latency`): a route's mirrored pairs read by
//! cursor into a paired judge, and the evidence as people read it.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};
use weir_proxy::stats::differences::{Difference, Example};
use weir_proxy::stats::pairs::{Excluded, Pair, PairLog};

use super::paired::{PairedJudge, Pairs};
use super::{Count, Evidence, Figures, Tolerance, Verdict};

/// What makes one side of a pair an event.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum PairRule {
    /// An error: a 5xx, a gRPC server fault, no answer.
    Errors,
    /// Slower than the other side beyond `max(ratio × its, its + margin)`. Pairs where either
    /// side erred are left to the error signal.
    Latency { max_ratio: f64, margin_micros: u64 },
}

impl PairRule {
    /// `(stable's event, canary's event)`, or None when the pair does not count here.
    fn classify(self, pair: &Pair) -> Option<(bool, bool)> {
        match self {
            PairRule::Errors => Some((pair.primary.is_error(), pair.copy.is_error())),
            PairRule::Latency {
                max_ratio,
                margin_micros,
            } => {
                if pair.primary.is_error() || pair.copy.is_error() {
                    return None;
                }
                let (s, c) = (pair.primary.micros, pair.copy.micros);
                let slower = |a: u64, b: u64| {
                    a as f64 > (b as f64 * max_ratio).max(b.saturating_add(margin_micros) as f64)
                };
                Some((slower(s, c), slower(c, s)))
            }
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            PairRule::Errors => "shadow-errors",
            PairRule::Latency { .. } => "shadow-latency",
        }
    }
}

/// The pairs' side of the evidence: how many, which way they differed, what was left out.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PairEvidence {
    pub pairs: u64,
    /// The canary had the event (an error, or was slower) where the stable did not.
    pub canary_only: u64,
    /// The stable had it where the canary did not.
    pub stable_only: u64,
    pub both: u64,
    /// Mirrored requests that left no pair, by reason (mirrors_full, body_cut, same_backend,
    /// unanswered, and lost: pairs overwritten before they were read).
    pub excluded: Vec<(String, u64)>,
    /// The evidence as odds against each verdict's null: 100 is 100:1.
    pub failed_odds: f64,
    pub successful_odds: f64,
    /// The canary's and the stable's event rates over the last `RECENT_LOOKS` looks.
    pub recent_canary_rate: Option<f64>,
    pub recent_stable_rate: Option<f64>,
    /// Whether each pair's two answers were the same: reported, never part of the verdict.
    #[serde(default)]
    pub answers: AnswerEvidence,
}

/// Pairs whose two answers (each with a status) were compared since the measurement began:
/// the same, a different status, the same status but a different body, or not compared
/// because a body was not read whole; and the latest requests that differed.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AnswerEvidence {
    pub compared: u64,
    pub same: u64,
    pub status: u64,
    pub body: u64,
    pub unread: u64,
    pub examples: Vec<DifferenceExample>,
}

/// A request whose answers differed: its path (no query), what differed (`status` or `body`),
/// the stable's and the canary's statuses, and how often it was seen (at least).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DifferenceExample {
    pub path: String,
    pub differs: String,
    pub stable_status: u16,
    pub canary_status: u16,
    pub seen: u64,
}

/// Looks the "now" figures cover: ten seconds at ten looks a second.
const RECENT_LOOKS: usize = 100;

pub struct ShadowRun {
    rule: PairRule,
    judge: PairedJudge,
    cursor: u64,
    /// The log's exclusions when the measurement began, to count only its own.
    excluded_at_start: [u64; Excluded::ALL.len()],
    excluded: [u64; Excluded::ALL.len()],
    lost: u64,
    /// The log's answer comparisons when the measurement began, and now; the examples now.
    answers_at_start: [u64; Difference::ALL.len()],
    answers: [u64; Difference::ALL.len()],
    examples: Vec<Example>,
    recent: VecDeque<Pairs>,
    started: u64,
    last: u64,
    buffer: Vec<Pair>,
}

impl ShadowRun {
    /// Judges the pairs `log` gets from now on.
    pub fn new(rule: PairRule, tolerance: Tolerance, log: &PairLog, now_second: u64) -> Self {
        let excluded = log.excluded();
        let answers = log.differences.counts();
        ShadowRun {
            rule,
            judge: PairedJudge::new(tolerance),
            cursor: log.position(),
            excluded_at_start: excluded,
            excluded,
            lost: 0,
            answers_at_start: answers,
            answers,
            examples: Vec::new(),
            recent: VecDeque::with_capacity(RECENT_LOOKS),
            started: now_second,
            last: now_second,
            buffer: Vec::new(),
        }
    }

    /// Takes the pairs written since the last look; returns the verdict so far.
    pub fn observe(&mut self, log: &PairLog, now_second: u64) -> Verdict {
        self.last = self.last.max(now_second);
        self.buffer.clear();
        self.lost += log.read(&mut self.cursor, &mut self.buffer);
        self.excluded = log.excluded();
        self.answers = log.differences.counts();
        self.examples = log.differences.examples();
        let mut batch = Pairs::default();
        for pair in &self.buffer {
            match self.rule.classify(pair) {
                Some((false, false)) => batch.neither += 1,
                Some((false, true)) => batch.canary_only += 1,
                Some((true, false)) => batch.stable_only += 1,
                Some((true, true)) => batch.both += 1,
                None => {}
            }
        }
        if self.recent.len() == RECENT_LOOKS {
            self.recent.pop_front();
        }
        self.recent.push_back(batch);
        self.judge.observe(batch)
    }

    pub fn verdict(&self) -> Verdict {
        self.judge.verdict()
    }

    /// The answers compared since the measurement began, and the examples seen since.
    fn answer_evidence(&self) -> AnswerEvidence {
        let [same, status, body, unread] =
            std::array::from_fn(|n| self.answers[n].saturating_sub(self.answers_at_start[n]));
        let before: u64 = self.answers_at_start.iter().sum();
        let examples = self
            .examples
            .iter()
            .rev()
            .filter(|e| e.last > before)
            .map(|e| DifferenceExample {
                path: e.path.clone(),
                differs: e.what.as_str().to_string(),
                stable_status: e.primary_status,
                canary_status: e.copy_status,
                seen: e.seen,
            })
            .collect();
        AnswerEvidence {
            compared: same + status + body + unread,
            same,
            status,
            body,
            unread,
            examples,
        }
    }

    pub fn evidence(&self) -> Evidence {
        let tolerance = self.judge.tolerance();
        let progress = self.judge.progress();
        let all = self.judge.pairs();
        let mut recent = Pairs::default();
        for batch in &self.recent {
            recent.add(*batch);
        }
        let (recent_canary_rate, recent_stable_rate) = match recent.rates() {
            Some((c, s)) => (Some(c), Some(s)),
            None => (None, None),
        };
        let mut excluded: Vec<(String, u64)> = Excluded::ALL
            .iter()
            .zip(self.excluded.iter().zip(self.excluded_at_start))
            .map(|(why, (now, then))| (why.as_str().to_string(), now.saturating_sub(then)))
            .filter(|(_, n)| *n > 0)
            .collect();
        if self.lost > 0 {
            excluded.push(("lost".to_string(), self.lost));
        }
        let side = |events: u64| {
            Figures::from(Count {
                requests: all.total(),
                events,
            })
        };
        let waiting = (all.total() == 0).then(|| {
            "no mirrored pairs yet: is the route's mirror on (setMirrorRoute), and does it get GET, HEAD or OPTIONS requests or the methods it opts in to?".to_string()
        });
        Evidence {
            signal: self.rule.name().to_string(),
            verdict: self.judge.verdict(),
            canary: side(all.canary_only + all.both),
            stable: side(all.stable_only + all.both),
            toward_failed: progress.toward_failed,
            toward_successful: progress.toward_successful,
            threshold_seconds: None,
            max_ratio: tolerance.max_ratio,
            margin: tolerance.margin,
            alpha: tolerance.alpha,
            seconds: self.last.saturating_sub(self.started),
            waiting,
            recent: None,
            pairs: Some(PairEvidence {
                pairs: all.total(),
                canary_only: all.canary_only,
                stable_only: all.stable_only,
                both: all.both,
                excluded,
                failed_odds: progress.failed_odds,
                successful_odds: progress.successful_odds,
                recent_canary_rate,
                recent_stable_rate,
                answers: self.answer_evidence(),
            }),
        }
    }
}
