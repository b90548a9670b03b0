//! A fake of the Kubernetes API server — NOT a fake of weir. weir's real Kubernetes source, with
//! a real `kube::Client`, talks to it over loopback HTTP exactly as it would to a cluster.
//!
//! It speaks the parts of the real protocol a watcher uses:
//! - LIST `GET /apis/{group}/{version}/namespaces/{ns}/{plural}` → `{kind}List` with
//!   `metadata.resourceVersion`; GET of one object by name (404 Status when missing);
//! - WATCH `?watch=true&resourceVersion=N` → a chunked stream of newline-delimited
//!   `{"type":"ADDED|MODIFIED|DELETED|BOOKMARK|ERROR","object":{...}}` events after N, honouring
//!   `allowWatchBookmarks` (a BOOKMARK every 500 ms) and `timeoutSeconds`;
//! - a resourceVersion older than the retained history (see [`FakeCluster::compact`]) gets the
//!   real server's answer: an `ERROR` event with a `Status` of code 410, reason `Expired`;
//! - `labelSelector` (`k=v`, `k==v`, `k!=v`, `k in (a,b)`, `k notin (a,b)`, `k`, `!k`) and
//!   `fieldSelector` (`metadata.name`, `metadata.namespace`, `=`/`==`/`!=`), including the
//!   ADDED/DELETED a watch sees when an object starts or stops matching.
//!
//! The objects live in a [`FakeCluster`] that outlives servers: stop the server (every
//! connection is cut, the port refuses), change the cluster, start a new server on the same
//! port, as an API server restart would look.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{combinators::BoxBody, BodyExt, Full};
use hyper::body::{Frame, Incoming};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::{json, Value};
use tokio::net::TcpListener;
use tokio::sync::{mpsc, watch};

type Body = BoxBody<Bytes, Infallible>;

#[derive(Clone, Debug)]
struct Event {
    rv: u64,
    collection: String,
    kind: &'static str, // ADDED | MODIFIED | DELETED
    old: Option<Value>,
    new: Value,
}

#[derive(Default)]
struct Inner {
    rv: u64,
    /// collection path → name → object
    objects: BTreeMap<String, BTreeMap<String, Value>>,
    events: Vec<Event>,
    /// Watches from a resourceVersion below this get 410 Gone.
    oldest_rv: u64,
    lists: BTreeMap<String, usize>,
    watches: BTreeMap<String, usize>,
    /// Every request, as `METHOD path[?watch]`, in order.
    log: Vec<String>,
    /// Bumped by `expire_watches`: open watches send 410 and end.
    expiry: u64,
}

/// The objects of the fake API server, shared by the servers started on it.
#[derive(Clone)]
pub struct FakeCluster {
    inner: Arc<Mutex<Inner>>,
    /// Current resourceVersion and expiry generation; wakes watches.
    changed: Arc<watch::Sender<(u64, u64)>>,
}

/// The plural of a kind, as the API paths spell it.
fn plural(kind: &str) -> String {
    let lower = kind.to_lowercase();
    if lower.ends_with('s') {
        format!("{lower}es")
    } else {
        format!("{lower}s")
    }
}

fn kind_of_plural(plural: &str) -> String {
    match plural {
        "rollouts" => "Rollout",
        "trafficsplits" => "TrafficSplit",
        "endpointslices" => "EndpointSlice",
        "services" => "Service",
        "httproutes" => "HTTPRoute",
        "leases" => "Lease",
        "namespaces" => "Namespace",
        "gatewayclasses" => "GatewayClass",
        "gateways" => "Gateway",
        "referencegrants" => "ReferenceGrant",
        other => other,
    }
    .to_string()
}

fn api_base(api_version: &str) -> String {
    if api_version.contains('/') {
        format!("/apis/{api_version}")
    } else {
        format!("/api/{api_version}")
    }
}

fn collection_path(api_version: &str, namespace: &str, plural: &str) -> String {
    format!("{}/namespaces/{namespace}/{plural}", api_base(api_version))
}

/// Kinds that live outside namespaces, as the real API server keeps them.
fn cluster_scoped(kind: &str) -> bool {
    matches!(kind, "Namespace" | "GatewayClass")
}

/// What a LIST or WATCH path reads: one namespace's collection, the same collection across
/// every namespace (`/apis/G/V/PLURAL`), or a cluster-scoped kind's one collection.
#[derive(Clone, Debug)]
enum Scope {
    Exact(String),
    AllNamespaces { base: String, plural: String },
}

impl Scope {
    fn covers(&self, collection: &str) -> bool {
        match self {
            Scope::Exact(c) => c == collection,
            Scope::AllNamespaces { base, plural } => collection
                .strip_prefix(base.as_str())
                .and_then(|rest| rest.strip_prefix("/namespaces/"))
                .and_then(|rest| rest.split_once('/'))
                .is_some_and(|(_, p)| p == plural),
        }
    }
}

impl Default for FakeCluster {
    fn default() -> Self {
        Self::new()
    }
}

impl FakeCluster {
    pub fn new() -> Self {
        let inner = Inner {
            rv: 1000,
            oldest_rv: 1000,
            ..Inner::default()
        };
        FakeCluster {
            inner: Arc::new(Mutex::new(inner)),
            changed: Arc::new(watch::channel((1000, 0)).0),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn notify(&self, inner: &Inner) {
        self.changed.send_replace((inner.rv, inner.expiry));
    }

    /// Creates or replaces an object (ADDED or MODIFIED); returns its new resourceVersion.
    pub fn apply(&self, mut object: Value) -> u64 {
        let api_version = object["apiVersion"]
            .as_str()
            .expect("apiVersion")
            .to_string();
        let kind = object["kind"].as_str().expect("kind").to_string();
        let namespace = object["metadata"]["namespace"]
            .as_str()
            .unwrap_or("default")
            .to_string();
        let name = object["metadata"]["name"]
            .as_str()
            .expect("metadata.name")
            .to_string();
        let scoped = cluster_scoped(&kind);
        let collection = if scoped {
            format!("{}/{}", api_base(&api_version), plural(&kind))
        } else {
            collection_path(&api_version, &namespace, &plural(&kind))
        };
        let mut inner = self.lock();
        inner.rv += 1;
        let rv = inner.rv;
        if !scoped {
            object["metadata"]["namespace"] = json!(namespace);
        }
        object["metadata"]["resourceVersion"] = json!(rv.to_string());
        // As the API server keeps them: the creation time stays, the generation counts the
        // changes of the spec (not of metadata or status).
        let before = inner
            .objects
            .get(&collection)
            .and_then(|c| c.get(&name))
            .cloned();
        let (created, generation) = match &before {
            Some(old) => (
                old["metadata"]["creationTimestamp"].clone(),
                old["metadata"]["generation"].as_i64().unwrap_or(1)
                    + i64::from(old["spec"] != object["spec"]),
            ),
            // One second per resourceVersion: later objects are younger.
            None => (
                json!(format!(
                    "2026-12-01T{:02}:{:02}:{:02}Z",
                    rv / 3600 % 24,
                    rv / 60 % 60,
                    rv % 60
                )),
                1,
            ),
        };
        if object["metadata"]["creationTimestamp"].is_null() {
            object["metadata"]["creationTimestamp"] = created;
        }
        // Every object gets a uid when created, kept while it lives; one deleted and created
        // again under its name is another object, with another uid.
        if object["metadata"]["uid"].is_null() {
            object["metadata"]["uid"] = match &before {
                Some(old) => old["metadata"]["uid"].clone(),
                None => json!(format!("00000000-0000-4000-8000-{rv:012}")),
            };
        }
        object["metadata"]["generation"] = json!(generation);
        let old = inner
            .objects
            .entry(collection.clone())
            .or_default()
            .insert(name, object.clone());
        let kind = if old.is_some() { "MODIFIED" } else { "ADDED" };
        inner.events.push(Event {
            rv,
            collection,
            kind,
            old,
            new: object,
        });
        self.notify(&inner);
        rv
    }

    /// Applies every document of a multi-document YAML file.
    pub fn apply_yaml(&self, text: &str) {
        for doc in serde_yaml_ng::Deserializer::from_str(text) {
            let value: Value = serde::Deserialize::deserialize(doc).expect("yaml");
            if !value.is_null() {
                self.apply(value);
            }
        }
    }

    /// Deletes an object (DELETED); false when there was none.
    pub fn delete(&self, api_version: &str, kind: &str, namespace: &str, name: &str) -> bool {
        let collection = collection_path(api_version, namespace, &plural(kind));
        let mut inner = self.lock();
        let Some(mut old) = inner
            .objects
            .get_mut(&collection)
            .and_then(|c| c.remove(name))
        else {
            return false;
        };
        inner.rv += 1;
        let rv = inner.rv;
        old["metadata"]["resourceVersion"] = json!(rv.to_string());
        inner.events.push(Event {
            rv,
            collection,
            kind: "DELETED",
            old: None,
            new: old,
        });
        self.notify(&inner);
        true
    }

    /// Forgets the event history (as etcd compaction does): a watch from any resourceVersion
    /// before now gets 410 Gone and must re-list.
    pub fn compact(&self) {
        let mut inner = self.lock();
        inner.events.clear();
        inner.oldest_rv = inner.rv;
    }

    /// Compacts and ends every open watch with a 410 Gone ERROR event.
    pub fn expire_watches(&self) {
        let mut inner = self.lock();
        inner.events.clear();
        inner.oldest_rv = inner.rv;
        inner.expiry += 1;
        self.notify(&inner);
    }

    /// How many LIST requests a collection (by plural, e.g. "rollouts") got.
    /// Every request served so far, as `METHOD path` (`?watch` for a watch), in order.
    pub fn requests(&self) -> Vec<String> {
        self.lock().log.clone()
    }

    /// The current version of an object, if it exists.
    pub fn get(&self, api_version: &str, kind: &str, namespace: &str, name: &str) -> Option<Value> {
        let collection = collection_path(api_version, namespace, &plural(kind));
        self.lock()
            .objects
            .get(&collection)
            .and_then(|c| c.get(name))
            .cloned()
    }

    pub fn lists(&self, plural: &str) -> usize {
        let inner = self.lock();
        inner
            .lists
            .iter()
            .filter(|(c, _)| c.ends_with(&format!("/{plural}")))
            .map(|(_, n)| n)
            .sum()
    }

    /// How many WATCH requests a collection got.
    pub fn watches(&self, plural: &str) -> usize {
        let inner = self.lock();
        inner
            .watches
            .iter()
            .filter(|(c, _)| c.ends_with(&format!("/{plural}")))
            .map(|(_, n)| n)
            .sum()
    }
}

// ---- selectors ----------------------------------------------------------------------------------

#[derive(Debug)]
enum Req {
    Eq(String, String),
    Ne(String, String),
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
    Exists(String),
    NotExists(String),
}

/// Splits at commas outside parentheses.
fn split_top(s: &str) -> Vec<String> {
    let (mut out, mut cur, mut depth) = (Vec::new(), String::new(), 0);
    for c in s.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                out.push(std::mem::take(&mut cur));
                continue;
            }
            _ => {}
        }
        cur.push(c);
    }
    out.push(cur);
    out.into_iter()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

fn parse_selector(s: &str) -> Result<Vec<Req>, String> {
    let set = |v: &str| -> Result<Vec<String>, String> {
        let v = v.trim();
        let inner = v
            .strip_prefix('(')
            .and_then(|v| v.strip_suffix(')'))
            .ok_or_else(|| format!("bad set {v:?}"))?;
        Ok(inner.split(',').map(|x| x.trim().to_string()).collect())
    };
    split_top(s)
        .into_iter()
        .map(|r| {
            if let Some((k, v)) = r.split_once(" notin ") {
                Ok(Req::NotIn(k.trim().into(), set(v)?))
            } else if let Some((k, v)) = r.split_once(" in ") {
                Ok(Req::In(k.trim().into(), set(v)?))
            } else if let Some((k, v)) = r.split_once("!=") {
                Ok(Req::Ne(k.trim().into(), v.trim().into()))
            } else if let Some((k, v)) = r.split_once("==") {
                Ok(Req::Eq(k.trim().into(), v.trim().into()))
            } else if let Some((k, v)) = r.split_once('=') {
                Ok(Req::Eq(k.trim().into(), v.trim().into()))
            } else if let Some(k) = r.strip_prefix('!') {
                Ok(Req::NotExists(k.trim().into()))
            } else if r.contains(char::is_whitespace) {
                Err(format!("bad requirement {r:?}"))
            } else {
                Ok(Req::Exists(r))
            }
        })
        .collect()
}

fn matches(reqs: &[Req], get: impl Fn(&str) -> Option<String>) -> bool {
    reqs.iter().all(|r| match r {
        Req::Eq(k, v) => get(k).as_deref() == Some(v.as_str()),
        Req::Ne(k, v) => get(k).as_deref() != Some(v.as_str()),
        Req::In(k, vs) => get(k).is_some_and(|x| vs.contains(&x)),
        Req::NotIn(k, vs) => !get(k).is_some_and(|x| vs.contains(&x)),
        Req::Exists(k) => get(k).is_some(),
        Req::NotExists(k) => get(k).is_none(),
    })
}

struct Filter {
    labels: Vec<Req>,
    fields: Vec<Req>,
}

impl Filter {
    fn matches(&self, o: &Value) -> bool {
        let label = |k: &str| o["metadata"]["labels"][k].as_str().map(str::to_string);
        let field = |k: &str| match k {
            "metadata.name" => o["metadata"]["name"].as_str().map(str::to_string),
            "metadata.namespace" => o["metadata"]["namespace"].as_str().map(str::to_string),
            _ => None,
        };
        matches(&self.labels, label) && matches(&self.fields, field)
    }
}

// ---- HTTP ------------------------------------------------------------------------------------------

fn query(uri: &hyper::Uri) -> BTreeMap<String, String> {
    fn decode(s: &str) -> String {
        let s = s.replace('+', " ");
        let b = s.as_bytes();
        let mut out = Vec::with_capacity(b.len());
        let mut i = 0;
        while i < b.len() {
            if b[i] == b'%' && i + 2 < b.len() {
                let hex = std::str::from_utf8(&b[i + 1..i + 3]).unwrap_or("");
                if let Ok(v) = u8::from_str_radix(hex, 16) {
                    out.push(v);
                    i += 3;
                    continue;
                }
            }
            out.push(b[i]);
            i += 1;
        }
        String::from_utf8_lossy(&out).into_owned()
    }
    uri.query()
        .unwrap_or("")
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (decode(k), decode(v))
        })
        .collect()
}

fn full(status: StatusCode, body: Value) -> Response<Body> {
    Response::builder()
        .status(status)
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(body.to_string())).boxed())
        .unwrap()
}

fn status(code: u16, reason: &str, message: &str) -> Value {
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
           "message": message, "reason": reason, "code": code})
}

/// A streamed response body fed by a channel.
struct ChannelBody(mpsc::Receiver<Bytes>);

impl hyper::body::Body for ChannelBody {
    type Data = Bytes;
    type Error = Infallible;
    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        self.0.poll_recv(cx).map(|o| o.map(|b| Ok(Frame::data(b))))
    }
}

fn line(kind: &str, object: &Value) -> Bytes {
    let mut s = json!({"type": kind, "object": object}).to_string();
    s.push('\n');
    Bytes::from(s)
}

async fn handle(
    cluster: FakeCluster,
    req: Request<Incoming>,
) -> Result<Response<Body>, Infallible> {
    let path = req.uri().path().trim_end_matches('/').to_string();
    let q = query(req.uri());
    let watching = matches!(q.get("watch").map(String::as_str), Some("true" | "1"));
    cluster.lock().log.push(format!(
        "{} {path}{}",
        req.method(),
        if watching { "?watch" } else { "" }
    ));
    let method = req.method().clone();
    if method != hyper::Method::GET {
        return Ok(write(cluster, method, &path, req.into_body()).await);
    }
    let segments: Vec<&str> = path.split('/').collect();
    // ["", "apis", group, version, "namespaces", ns, plural, (name)] or ["", "api", "v1", ...]
    let (api_version, rest) = match segments.get(1) {
        Some(&"apis") if segments.len() >= 4 => {
            (format!("{}/{}", segments[2], segments[3]), &segments[4..])
        }
        Some(&"api") if segments.len() >= 3 => (segments[2].to_string(), &segments[3..]),
        _ => {
            return Ok(full(
                StatusCode::NOT_FOUND,
                status(404, "NotFound", "no such path"),
            ))
        }
    };
    let base = api_base(&api_version);
    let (scope, plural_name, name) = match rest {
        // The Namespaces themselves, cluster-scoped: `/api/v1/namespaces[/NAME]`.
        ["namespaces"] => (
            Scope::Exact(format!("{base}/namespaces")),
            "namespaces",
            None,
        ),
        ["namespaces", name] => (
            Scope::Exact(format!("{base}/namespaces")),
            "namespaces",
            Some(*name),
        ),
        ["namespaces", ns, plural] => (
            Scope::Exact(collection_path(&api_version, ns, plural)),
            *plural,
            None,
        ),
        ["namespaces", ns, plural, name] => (
            Scope::Exact(collection_path(&api_version, ns, plural)),
            *plural,
            Some(*name),
        ),
        [plural] if cluster_scoped(&kind_of_plural(plural)) => {
            (Scope::Exact(format!("{base}/{plural}")), *plural, None)
        }
        [plural, name] if cluster_scoped(&kind_of_plural(plural)) => (
            Scope::Exact(format!("{base}/{plural}")),
            *plural,
            Some(*name),
        ),
        // Every namespace's objects of a namespaced kind.
        [plural] => (
            Scope::AllNamespaces {
                base: base.clone(),
                plural: plural.to_string(),
            },
            *plural,
            None,
        ),
        _ => {
            return Ok(full(
                StatusCode::NOT_FOUND,
                status(404, "NotFound", "no such path"),
            ))
        }
    };
    let collection = match &scope {
        Scope::Exact(c) => c.clone(),
        Scope::AllNamespaces { plural, .. } => format!("{base}/{plural}"),
    };
    let kind = kind_of_plural(plural_name);

    if let Some(name) = name {
        let inner = cluster.lock();
        return Ok(
            match inner.objects.get(&collection).and_then(|c| c.get(name)) {
                Some(o) => full(StatusCode::OK, o.clone()),
                None => full(
                    StatusCode::NOT_FOUND,
                    status(
                        404,
                        "NotFound",
                        &format!("{plural_name} {name:?} not found"),
                    ),
                ),
            },
        );
    }

    let filter = match (
        parse_selector(q.get("labelSelector").map(String::as_str).unwrap_or("")),
        parse_selector(q.get("fieldSelector").map(String::as_str).unwrap_or("")),
    ) {
        (Ok(labels), Ok(fields)) => Filter { labels, fields },
        (Err(e), _) | (_, Err(e)) => {
            return Ok(full(StatusCode::BAD_REQUEST, status(400, "BadRequest", &e)))
        }
    };

    if q.get("watch").map(String::as_str) != Some("true")
        && q.get("watch").map(String::as_str) != Some("1")
    {
        let mut inner = cluster.lock();
        *inner.lists.entry(collection.clone()).or_default() += 1;
        let items: Vec<Value> = inner
            .objects
            .iter()
            .filter(|(c, _)| scope.covers(c))
            .flat_map(|(_, c)| c.values().filter(|o| filter.matches(o)).cloned())
            .collect();
        return Ok(full(
            StatusCode::OK,
            json!({"apiVersion": api_version, "kind": format!("{kind}List"),
                   "metadata": {"resourceVersion": inner.rv.to_string()}, "items": items}),
        ));
    }

    // WATCH
    let from: u64 = match q.get("resourceVersion").map(String::as_str) {
        None | Some("") | Some("0") => cluster.lock().rv,
        Some(v) => match v.parse() {
            Ok(v) => v,
            Err(_) => {
                return Ok(full(
                    StatusCode::BAD_REQUEST,
                    status(400, "BadRequest", &format!("bad resourceVersion {v:?}")),
                ))
            }
        },
    };
    let timeout = q
        .get("timeoutSeconds")
        .and_then(|t| t.parse::<u64>().ok())
        .map(Duration::from_secs)
        .unwrap_or(Duration::from_secs(1800));
    let bookmarks = q.get("allowWatchBookmarks").map(String::as_str) == Some("true");
    let (tx, rx) = mpsc::channel::<Bytes>(64);
    let expiry_at_start;
    {
        let mut inner = cluster.lock();
        *inner.watches.entry(collection.clone()).or_default() += 1;
        expiry_at_start = inner.expiry;
        if from < inner.oldest_rv {
            let gone = status(
                410,
                "Expired",
                &format!("too old resource version: {from} ({})", inner.oldest_rv),
            );
            let _ = tx.try_send(line("ERROR", &gone));
            drop(tx);
            return Ok(watch_response(rx));
        }
    }
    let api_version_c = api_version.clone();
    tokio::spawn(async move {
        let deadline = tokio::time::Instant::now() + timeout;
        let mut changed = cluster.changed.subscribe();
        let mut sent_rv = from;
        // The first BOOKMARK after a period, as a real server's, not the moment the watch opens.
        let period = Duration::from_millis(500);
        let mut bookmark_tick =
            tokio::time::interval_at(tokio::time::Instant::now() + period, period);
        loop {
            // Everything new since `sent_rv`, in order.
            let (events, rv, expired) = {
                let inner = cluster.lock();
                let events: Vec<Event> = inner
                    .events
                    .iter()
                    .filter(|e| e.rv > sent_rv && scope.covers(&e.collection))
                    .cloned()
                    .collect();
                (events, inner.rv, inner.expiry != expiry_at_start)
            };
            if expired {
                let gone = status(410, "Expired", "too old resource version (watch expired)");
                let _ = tx.send(line("ERROR", &gone)).await;
                return;
            }
            for e in events {
                let now = filter.matches(&e.new);
                let before = e.old.as_ref().is_some_and(|o| filter.matches(o));
                let kind = match (e.kind, before, now) {
                    ("DELETED", _, true) => "DELETED",
                    ("ADDED", _, true) => "ADDED",
                    ("MODIFIED", true, true) => "MODIFIED",
                    ("MODIFIED", false, true) => "ADDED",
                    ("MODIFIED", true, false) => "DELETED",
                    _ => {
                        sent_rv = e.rv;
                        continue;
                    }
                };
                if tx.send(line(kind, &e.new)).await.is_err() {
                    return;
                }
                sent_rv = e.rv;
            }
            sent_rv = sent_rv.max(rv);
            tokio::select! {
                _ = changed.changed() => {}
                _ = bookmark_tick.tick(), if bookmarks => {
                    let rv = cluster.lock().rv.max(sent_rv);
                    let bm = json!({"kind": kind, "apiVersion": api_version_c,
                                    "metadata": {"resourceVersion": rv.to_string()}});
                    if tx.send(line("BOOKMARK", &bm)).await.is_err() {
                        return;
                    }
                }
                _ = tokio::time::sleep_until(deadline) => return,
                _ = tx.closed() => return,
            }
        }
    });
    Ok(watch_response(rx))
}

/// POST (create) to a collection; PUT (replace) of an object or of its `status` subresource,
/// with the real server's optimistic concurrency: a stale `metadata.resourceVersion` gets 409.
async fn write(
    cluster: FakeCluster,
    method: hyper::Method,
    path: &str,
    body: Incoming,
) -> Response<Body> {
    let bytes = match body.collect().await {
        Ok(b) => b.to_bytes(),
        Err(e) => {
            return full(
                StatusCode::BAD_REQUEST,
                status(400, "BadRequest", &e.to_string()),
            )
        }
    };
    let mut object: Value = match serde_json::from_slice(&bytes) {
        Ok(v) => v,
        Err(e) => {
            return full(
                StatusCode::BAD_REQUEST,
                status(400, "BadRequest", &e.to_string()),
            )
        }
    };
    let segments: Vec<&str> = path.split('/').collect();
    let rest_at = if segments.get(1) == Some(&"apis") {
        4
    } else {
        3
    };
    let rest = segments.get(rest_at..).unwrap_or(&[]);
    let (name, subresource) = match (&method, rest) {
        (&hyper::Method::POST, ["namespaces", _, _]) => (None, None),
        (&hyper::Method::PUT, ["namespaces", _, _, name]) => (Some(*name), None),
        (&hyper::Method::PUT, ["namespaces", _, _, name, "status"]) => {
            (Some(*name), Some("status"))
        }
        _ => {
            return full(
                StatusCode::METHOD_NOT_ALLOWED,
                status(
                    405,
                    "MethodNotAllowed",
                    "the fake serves POST to a collection and PUT of an object or its status",
                ),
            )
        }
    };
    let current = {
        let inner = cluster.lock();
        let collection = format!(
            "{}/namespaces/{}/{}",
            segments[..rest_at].join("/"),
            rest[1],
            rest[2]
        );
        let name = name.or(object["metadata"]["name"].as_str()).unwrap_or("");
        inner
            .objects
            .get(&collection)
            .and_then(|c| c.get(name))
            .cloned()
    };
    match (name, current) {
        (None, Some(_)) => full(
            StatusCode::CONFLICT,
            status(409, "AlreadyExists", "object already exists"),
        ),
        (None, None) => {
            object["metadata"]["resourceVersion"] = Value::Null;
            cluster.apply(object.clone());
            created(&cluster, &object)
        }
        (Some(name), None) => full(
            StatusCode::NOT_FOUND,
            status(404, "NotFound", &format!("{name:?} not found")),
        ),
        (Some(_), Some(current)) => {
            let sent = object["metadata"]["resourceVersion"].as_str().unwrap_or("");
            if !sent.is_empty() && sent != current["metadata"]["resourceVersion"] {
                return full(
                    StatusCode::CONFLICT,
                    status(409, "Conflict", "the object has been modified; please apply your changes to the latest version"),
                );
            }
            // The status subresource changes only status; the object itself, all but status.
            let mut next = current.clone();
            match subresource {
                Some(_) => next["status"] = object["status"].clone(),
                None => {
                    next["spec"] = object["spec"].clone();
                    next["metadata"]["labels"] = object["metadata"]["labels"].clone();
                    next["metadata"]["annotations"] = object["metadata"]["annotations"].clone();
                }
            }
            cluster.apply(next.clone());
            created(&cluster, &next)
        }
    }
}

/// The stored object, as the server answers a write.
fn created(cluster: &FakeCluster, sent: &Value) -> Response<Body> {
    let api_version = sent["apiVersion"].as_str().unwrap_or("");
    let kind = sent["kind"].as_str().unwrap_or("");
    let namespace = sent["metadata"]["namespace"].as_str().unwrap_or("default");
    let name = sent["metadata"]["name"].as_str().unwrap_or("");
    let collection = collection_path(api_version, namespace, &plural(kind));
    let inner = cluster.lock();
    match inner.objects.get(&collection).and_then(|c| c.get(name)) {
        Some(o) => full(StatusCode::OK, o.clone()),
        None => full(
            StatusCode::INTERNAL_SERVER_ERROR,
            status(500, "InternalError", "lost"),
        ),
    }
}

fn watch_response(rx: mpsc::Receiver<Bytes>) -> Response<Body> {
    Response::builder()
        .status(StatusCode::OK)
        .header("content-type", "application/json")
        .body(ChannelBody(rx).boxed())
        .unwrap()
}

/// A running fake API server. Dropping it (or `stop`) cuts every connection.
pub struct FakeApiServer {
    addr: SocketAddr,
    cluster: FakeCluster,
    accept: tokio::task::JoinHandle<()>,
}

impl FakeApiServer {
    /// Serves `cluster` on an ephemeral loopback port.
    pub async fn start(cluster: FakeCluster) -> Self {
        Self::start_on(cluster, "127.0.0.1:0".parse().unwrap())
            .await
            .expect("bind fake API server")
    }

    /// Serves `cluster` on `addr` (e.g. the port of a server stopped before).
    pub async fn start_on(cluster: FakeCluster, addr: SocketAddr) -> std::io::Result<Self> {
        let listener = TcpListener::bind(addr).await?;
        let addr = listener.local_addr()?;
        let c = cluster.clone();
        let accept = tokio::spawn(async move {
            let mut conns = tokio::task::JoinSet::new();
            loop {
                tokio::select! {
                    accepted = listener.accept() => {
                        let Ok((stream, _)) = accepted else { continue };
                        let c = c.clone();
                        conns.spawn(async move {
                            let svc = hyper::service::service_fn(move |req| handle(c.clone(), req));
                            let _ = hyper::server::conn::http1::Builder::new()
                                .serve_connection(TokioIo::new(stream), svc)
                                .await;
                        });
                    }
                    Some(_) = conns.join_next(), if !conns.is_empty() => {}
                }
            }
        });
        Ok(FakeApiServer {
            addr,
            cluster,
            accept,
        })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn cluster(&self) -> &FakeCluster {
        &self.cluster
    }

    /// A real kube client for this server: plain HTTP, no auth.
    pub fn client(&self, namespace: &str) -> kube::Client {
        let mut config = kube::Config::new(self.url().parse().unwrap());
        config.default_namespace = namespace.to_string();
        config.connect_timeout = Some(Duration::from_secs(2));
        kube::Client::try_from(config).expect("kube client")
    }

    /// Stops listening and cuts every open connection (watches included).
    pub async fn stop(mut self) -> SocketAddr {
        self.accept.abort();
        let _ = (&mut self.accept).await;
        self.addr
    }
}

impl Drop for FakeApiServer {
    fn drop(&mut self) {
        self.accept.abort();
    }
}
