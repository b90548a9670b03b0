//! The connect/send rules against a scripted transport: which backend each attempt goes to,
//! how often, and what is recorded where — without sockets, so each rule is seen on its own.
//! (The engines' own tests, and tests/, run the same rules over real connections.)

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::transport::{REFUSED_RETRIES, STALE_RETRIES};
use super::*;
use crate::stats::{LiveStats, Metrics, Role, UpstreamError};
use crate::table::{Backend, Compiler};
use crate::table_spec::{BackendSpec, RouteSpec, TableSpec};
use crate::upstream::{Endpoint, Upstreams};

const STABLE: &str = "127.0.0.1:9001";
const CANARY: &str = "127.0.0.1:9101";

fn table(canary: bool, timeout: Option<Duration>) -> RouteTable {
    let mut route = RouteSpec::new("web", BackendSpec::new([STABLE]));
    if canary {
        // Weight 0: every request chooses stable, so a canary attempt is a fallback.
        route.set_canary(Some(BackendSpec::new([CANARY])));
    }
    route.timeout = timeout;
    let metrics = Arc::new(Metrics::new());
    let compiler = Compiler {
        upstreams: Arc::new(Upstreams::new(metrics.clone(), 1)),
        metrics,
        live: Arc::new(LiveStats::new()),
    };
    match compiler.compile(&TableSpec {
        routes: vec![route],
    }) {
        Ok(table) => table,
        Err(errors) => panic!("{errors}"),
    }
}

/// What each call does, in order; every call is logged with the endpoint it was for.
#[derive(Default)]
struct Script {
    connects: VecDeque<Result<(), UpstreamError>>,
    sends: VecDeque<Result<u16, Undelivered>>,
    /// A send that never answers (the route timeout's case).
    hang: bool,
    log: Vec<String>,
}

impl Transport for Script {
    type Conn = String;
    type Answer = u16;

    async fn connect(
        &mut self,
        endpoint: &Arc<Endpoint>,
        fresh: bool,
        _now: Instant,
    ) -> Result<String, UpstreamError> {
        let kind = if fresh { "fresh" } else { "pooled" };
        self.log
            .push(format!("connect {kind} {}", endpoint.address()));
        self.connects.pop_front().unwrap_or(Ok(()))?;
        Ok(endpoint.address().to_string())
    }

    async fn send(
        &mut self,
        conn: String,
        _backend: &Backend,
        _started: Instant,
    ) -> Result<u16, Undelivered> {
        self.log.push(format!("send {conn}"));
        if self.hang {
            std::future::pending::<()>().await;
        }
        self.sends.pop_front().unwrap_or(Ok(200))
    }
}

/// (requests, failures, connect failures) recorded for one side of the route.
fn recorded(exchange: &Exchange<'_>, role: Role) -> (u64, u64, u64) {
    let live = &exchange.route.backend(index(role)).stats.live;
    let w = live.snapshot(Duration::from_secs(60));
    (w.requests, w.failures, w.connect_failures)
}

/// A rollout's route lists stable first, canary second.
fn index(role: Role) -> usize {
    match role {
        Role::Stable => 0,
        Role::Canary => 1,
    }
}

fn chosen(table: &RouteTable) -> Exchange<'_> {
    match Exchange::choose(&table.routes()[0], &http::HeaderMap::new()) {
        Some(exchange) => exchange,
        None => panic!("stable has weight"),
    }
}

fn run(table: &RouteTable, script: &mut Script) -> (Result<u16, Failure>, Role) {
    let route = &table.routes()[0];
    let Some(mut exchange) = Exchange::choose(route, &http::HeaderMap::new()) else {
        panic!("stable has weight");
    };
    assert_eq!(exchange.chosen, index(Role::Stable));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap_or_else(|e| panic!("runtime: {e}"));
    let result = rt.block_on(forward(&mut exchange, script));
    let on = if exchange.at == 0 {
        Role::Stable
    } else {
        Role::Canary
    };
    assert_eq!(&*exchange.backend.name, on.as_str());
    (result, on)
}

#[test]
fn a_connect_failure_goes_to_the_other_side_once_and_is_recorded_where_it_happened() {
    let table = table(true, None);
    let mut script = Script {
        connects: VecDeque::from([Err(UpstreamError::Connect)]),
        ..Script::default()
    };
    let (result, answered_by) = run(&table, &mut script);
    assert_eq!(result, Ok(200));
    assert_eq!(answered_by, Role::Canary);
    assert_eq!(
        script.log,
        [
            format!("connect pooled {STABLE}"),
            format!("connect pooled {CANARY}"),
            format!("send {CANARY}"),
        ]
    );
    let exchange = chosen(&table);
    // The failed connect on stable; canary's answer is the engine's to record.
    assert_eq!(recorded(&exchange, Role::Stable), (1, 1, 1));
    assert_eq!(recorded(&exchange, Role::Canary), (0, 0, 0));
}

#[test]
fn when_both_sides_refuse_the_request_fails_with_both_recorded() {
    let table = table(true, None);
    let mut script = Script {
        connects: VecDeque::from([Err(UpstreamError::Connect), Err(UpstreamError::Tls)]),
        ..Script::default()
    };
    let (result, on) = run(&table, &mut script);
    assert_eq!(result, Err(Failure::Upstream(UpstreamError::Tls)));
    assert_eq!(on, Role::Canary);
    assert_eq!(script.log.len(), 2, "{:?}", script.log);
    let exchange = chosen(&table);
    assert_eq!(recorded(&exchange, Role::Stable), (1, 1, 1));
    assert_eq!(recorded(&exchange, Role::Canary).1, 1);
}

#[test]
fn without_a_canary_there_is_no_fallback() {
    let table = table(false, None);
    let mut script = Script {
        connects: VecDeque::from([Err(UpstreamError::Connect)]),
        ..Script::default()
    };
    let (result, on) = run(&table, &mut script);
    assert_eq!(result, Err(Failure::Upstream(UpstreamError::Connect)));
    assert_eq!(on, Role::Stable);
    assert_eq!(script.log, [format!("connect pooled {STABLE}")]);
}

#[test]
fn a_stale_connection_is_replaced_by_a_fresh_one_on_the_same_endpoint_a_bounded_number_of_times() {
    // Stale twice, then answered: three sends, two fresh connects.
    let table = table(true, None);
    let mut script = Script {
        sends: VecDeque::from([Err(Undelivered::Stale), Err(Undelivered::Stale), Ok(204)]),
        ..Script::default()
    };
    let (result, on) = run(&table, &mut script);
    assert_eq!((result, on), (Ok(204), Role::Stable));
    assert_eq!(
        script.log,
        [
            format!("connect pooled {STABLE}"),
            format!("send {STABLE}"),
            format!("connect fresh {STABLE}"),
            format!("send {STABLE}"),
            format!("connect fresh {STABLE}"),
            format!("send {STABLE}"),
        ]
    );

    // Stale every time: given up after STALE_RETRIES fresh tries, as a reset, recorded once.
    let table = self::table(true, None);
    let mut script = Script {
        sends: (0..10).map(|_| Err(Undelivered::Stale)).collect(),
        ..Script::default()
    };
    let (result, _) = run(&table, &mut script);
    assert_eq!(result, Err(Failure::Upstream(UpstreamError::Reset)));
    let sends = script.log.iter().filter(|l| l.starts_with("send")).count();
    assert_eq!(sends, STALE_RETRIES + 1);
    let exchange = chosen(&table);
    assert_eq!(recorded(&exchange, Role::Stable), (1, 1, 0));
}

#[test]
fn a_refused_request_goes_again_as_fresh_up_to_its_own_larger_bound() {
    // Refused by as many connections as its bound allows, then answered: each try after a
    // refusal asks for a fresh connection, and the stale bound does not cut it short.
    let table = table(true, None);
    let mut sends: VecDeque<_> = (0..REFUSED_RETRIES)
        .map(|_| Err(Undelivered::Refused))
        .collect();
    sends.push_back(Ok(200));
    let mut script = Script {
        sends,
        ..Script::default()
    };
    let (result, on) = run(&table, &mut script);
    assert_eq!((result, on), (Ok(200), Role::Stable));
    let fresh = script
        .log
        .iter()
        .filter(|l| l.starts_with("connect fresh"))
        .count();
    assert_eq!(fresh, REFUSED_RETRIES, "{:?}", script.log);
    assert_eq!(
        recorded(&chosen(&table), Role::Stable).1,
        0,
        "no failure recorded"
    );

    // Refused every time: a reset after REFUSED_RETRIES more tries, recorded once.
    let table = self::table(true, None);
    let mut script = Script {
        sends: (0..20).map(|_| Err(Undelivered::Refused)).collect(),
        ..Script::default()
    };
    let (result, _) = run(&table, &mut script);
    assert_eq!(result, Err(Failure::Upstream(UpstreamError::Reset)));
    let sends = script.log.iter().filter(|l| l.starts_with("send")).count();
    assert_eq!(sends, REFUSED_RETRIES + 1);
    assert_eq!(recorded(&chosen(&table), Role::Stable), (1, 1, 0));
}

#[test]
fn a_failed_send_is_not_sent_again_and_a_gone_client_records_nothing() {
    let table = table(true, None);
    let mut script = Script {
        sends: VecDeque::from([Err(Undelivered::Failed(UpstreamError::Timeout))]),
        ..Script::default()
    };
    let (result, on) = run(&table, &mut script);
    assert_eq!(
        (result, on),
        (Err(Failure::Upstream(UpstreamError::Timeout)), Role::Stable)
    );
    assert_eq!(script.log.len(), 2, "{:?}", script.log);

    let table = self::table(true, None);
    let mut script = Script {
        sends: VecDeque::from([Err(Undelivered::ClientGone)]),
        ..Script::default()
    };
    let (result, _) = run(&table, &mut script);
    assert_eq!(result, Err(Failure::ClientGone));
    let exchange = chosen(&table);
    assert_eq!(recorded(&exchange, Role::Stable), (0, 0, 0));
}

#[test]
fn the_route_timeout_covers_the_whole_attempt_and_is_recorded_as_a_timeout() {
    let table = table(true, Some(Duration::from_millis(250)));
    let mut script = Script {
        hang: true,
        ..Script::default()
    };
    let (result, on) = run(&table, &mut script);
    assert_eq!((result, on), (Err(Failure::RouteTimeout), Role::Stable));
    let exchange = chosen(&table);
    assert_eq!(recorded(&exchange, Role::Stable), (1, 1, 0));
    let (status, cause) = Failure::RouteTimeout.answer(&exchange);
    assert_eq!(status, http::StatusCode::GATEWAY_TIMEOUT);
    assert!(cause.contains("route timeout"), "{cause}");
}

#[test]
fn both_engines_word_an_upstream_failure_alike() {
    let table = table(true, None);
    let exchange = chosen(&table);
    let (status, cause) = Failure::Upstream(UpstreamError::Connect).answer(&exchange);
    assert_eq!(status.as_u16(), UpstreamError::Connect.status());
    assert_eq!(cause, "could not connect to upstream (stable backend)");
}

#[test]
fn a_stale_connection_whose_replacement_cannot_connect_goes_to_the_other_side() {
    // The canary was killed: its pooled connection is dead and a new one is refused.
    let table = table(true, None);
    let mut script = Script {
        sends: VecDeque::from([Err(Undelivered::Stale), Ok(200)]),
        connects: VecDeque::from([Ok(()), Err(UpstreamError::Connect)]),
        ..Script::default()
    };
    let (result, on) = run(&table, &mut script);
    assert_eq!((result, on), (Ok(200), Role::Canary));
    assert_eq!(
        script.log,
        [
            format!("connect pooled {STABLE}"),
            format!("send {STABLE}"),
            format!("connect fresh {STABLE}"),
            format!("connect pooled {CANARY}"),
            format!("send {CANARY}"),
        ]
    );
}

#[test]
fn an_unanswered_idempotent_request_goes_to_the_other_side_once() {
    let table = table(true, None);
    let mut script = Script {
        sends: VecDeque::from([Err(Undelivered::Unanswered(UpstreamError::Reset)), Ok(200)]),
        ..Script::default()
    };
    let (result, on) = run(&table, &mut script);
    assert_eq!((result, on), (Ok(200), Role::Canary));
    let exchange = chosen(&table);
    assert_eq!(recorded(&exchange, Role::Stable), (1, 1, 0));

    // Unanswered on both sides: the second is not sent a third time.
    let table = self::table(true, None);
    let mut script = Script {
        sends: VecDeque::from([
            Err(Undelivered::Unanswered(UpstreamError::Reset)),
            Err(Undelivered::Unanswered(UpstreamError::Reset)),
        ]),
        ..Script::default()
    };
    let (result, _) = run(&table, &mut script);
    assert_eq!(result, Err(Failure::Upstream(UpstreamError::Reset)));
    assert_eq!(
        script.log.iter().filter(|l| l.starts_with("send")).count(),
        2
    );
}
