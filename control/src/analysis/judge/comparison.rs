//! One comparative measurement: a feed from a route's two live windows into a judge, and the
//! evidence as people read it (in /rollout, `weir status` and the metrics).

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};
use weir_proxy::stats::LiveWindow;

use super::feed::{Feed, Signal};
use super::shadow::PairEvidence;
use super::{Count, Judge, Tolerance, Verdict};

pub struct Comparison {
    feed: Feed,
    judge: Judge,
    started: u64,
    last: u64,
    /// What each second of the last `RECENT_SECONDS` brought (canary, stable): what the canary
    /// does now, beside what the test has gathered since it began.
    recent: VecDeque<(u64, Count, Count)>,
}

/// The span of "now" in the evidence people read.
pub const RECENT_SECONDS: u64 = 10;

/// Both backends over the last few seconds.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Recent {
    pub seconds: u64,
    pub canary: Figures,
    pub stable: Figures,
}

/// One backend's figures since the measurement started.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Figures {
    pub requests: u64,
    /// Errors, or requests slower than the latency bar.
    pub events: u64,
    /// events / requests; absent without requests.
    pub rate: Option<f64>,
}

impl From<Count> for Figures {
    fn from(c: Count) -> Self {
        Figures {
            requests: c.requests,
            events: c.events,
            rate: c.rate(),
        }
    }
}

/// Where a comparative measurement stands.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Evidence {
    /// "errors", or "latency" (slower than the stable's quantile).
    pub signal: String,
    pub verdict: Verdict,
    pub canary: Figures,
    pub stable: Figures,
    /// 0..=1 each: how far the evidence has come towards Failed and towards Successful.
    pub toward_failed: f64,
    pub toward_successful: f64,
    /// Latency: the bar both backends are counted against, in seconds.
    pub threshold_seconds: Option<f64>,
    pub max_ratio: f64,
    pub margin: f64,
    pub alpha: f64,
    /// Seconds of traffic judged so far.
    pub seconds: u64,
    /// Why there is nothing to judge yet, if so.
    pub waiting: Option<String>,
    /// Both backends over the last seconds, beside the totals (an unpaired comparison's; a
    /// paired one's are in `pairs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recent: Option<Recent>,
    /// A paired comparison's pairs (`shadow-*`): then `canary` and `stable` count the pairs and
    /// each side's events among them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pairs: Option<PairEvidence>,
}

impl Comparison {
    /// Judges from the second after `now_second` on.
    pub fn new(signal: Signal, tolerance: Tolerance, now_second: u64) -> Self {
        Comparison {
            feed: Feed::new(signal, now_second),
            judge: Judge::new(tolerance),
            started: now_second,
            last: now_second,
            recent: VecDeque::new(),
        }
    }

    /// Takes what the windows gained since the last look; returns the verdict so far.
    pub fn observe(
        &mut self,
        canary: &LiveWindow,
        stable: &LiveWindow,
        now_second: u64,
    ) -> Verdict {
        self.last = self.last.max(now_second);
        let (c, s) = self.feed.read(canary, stable, now_second);
        self.remember(now_second, c, s);
        if c.requests + s.requests == 0 {
            return self.judge.verdict();
        }
        self.judge.observe(c, s)
    }

    fn remember(&mut self, now_second: u64, canary: Count, stable: Count) {
        while self
            .recent
            .front()
            .is_some_and(|&(second, ..)| second + RECENT_SECONDS <= now_second)
        {
            self.recent.pop_front();
        }
        match self.recent.back_mut() {
            Some((second, c, s)) if *second == now_second => {
                c.add(canary);
                s.add(stable);
            }
            _ => self.recent.push_back((now_second, canary, stable)),
        }
    }

    /// Both backends over the last `RECENT_SECONDS` (fewer while the test is younger).
    fn recent(&self) -> Recent {
        let (mut canary, mut stable) = (Count::default(), Count::default());
        for (_, c, s) in &self.recent {
            canary.add(*c);
            stable.add(*s);
        }
        Recent {
            seconds: RECENT_SECONDS.min(self.last.saturating_sub(self.started).max(1)),
            canary: canary.into(),
            stable: stable.into(),
        }
    }

    pub fn verdict(&self) -> Verdict {
        self.judge.verdict()
    }

    pub fn evidence(&self) -> Evidence {
        let tolerance = self.judge.tolerance();
        let progress = self.judge.progress();
        let (canary, stable) = (self.judge.canary(), self.judge.stable());
        let waiting = if let Some((have, need)) = self.feed.calibrating() {
            Some(format!(
                "measuring the stable's latency for the bar: {have} of {need} requests"
            ))
        } else if stable.requests == 0 {
            Some("no stable traffic to compare with yet".to_string())
        } else if canary.requests == 0 {
            Some("no canary traffic yet".to_string())
        } else {
            None
        };
        Evidence {
            signal: match self.feed.signal() {
                Signal::Errors => "errors",
                Signal::Latency { .. } => "latency",
            }
            .to_string(),
            verdict: self.judge.verdict(),
            canary: canary.into(),
            stable: stable.into(),
            toward_failed: progress.toward_failed,
            toward_successful: progress.toward_successful,
            threshold_seconds: self.feed.threshold().map(|t| t.as_duration().as_secs_f64()),
            max_ratio: tolerance.max_ratio,
            margin: tolerance.margin,
            alpha: tolerance.alpha,
            seconds: self.last.saturating_sub(self.started),
            waiting,
            recent: Some(self.recent()),
            pairs: None,
        }
    }
}
