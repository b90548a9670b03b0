//! What weir reads of a Gateway API `HTTPRoute` (`gateway.networking.k8s.io` v1, and v1beta1,
//! which has the same shape): a typed view, parsed from the JSON the API server sends. Fields
//! weir does not act on are ignored here; filters it cannot carry out are kept by name, so the
//! translation can refuse their rule instead of silently dropping them. (The filters it does
//! carry out are mapped to the table's specs in `filters.rs`.)

use serde::Deserialize;
use serde_json::Value;

pub const GATEWAY_GROUP: &str = "gateway.networking.k8s.io";

/// The HTTPRoute resource at `version`, for the dynamic API.
pub fn api_resource(version: crate::config::GatewayVersion) -> kube::api::ApiResource {
    gateway_group_resource(version, "HTTPRoute", "httproutes")
}

/// A Gateway API resource at `version`: `Gateway`/`gateways`, `ReferenceGrant`/... .
pub fn gateway_group_resource(
    version: crate::config::GatewayVersion,
    kind: &str,
    plural: &str,
) -> kube::api::ApiResource {
    kube::api::ApiResource {
        group: GATEWAY_GROUP.to_string(),
        version: version.as_str().to_string(),
        api_version: format!("{GATEWAY_GROUP}/{}", version.as_str()),
        kind: kind.to_string(),
        plural: plural.to_string(),
    }
}

/// The Gateway resource at `version`.
pub fn gateway_api_resource(version: crate::config::GatewayVersion) -> kube::api::ApiResource {
    gateway_group_resource(version, "Gateway", "gateways")
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct HttpRouteView {
    pub namespace: String,
    pub name: String,
    /// `metadata.generation`: what status reports as `observedGeneration`.
    pub generation: i64,
    /// `metadata.uid`: a route deleted and created again under its name is another object.
    pub uid: String,
    /// `metadata.creationTimestamp` (RFC 3339, so ordering the strings orders the times): the
    /// older route wins a precedence tie.
    pub created: String,
    pub parent_refs: Vec<ParentRef>,
    pub hostnames: Vec<String>,
    pub rules: Vec<RuleView>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ParentRef {
    /// Default `gateway.networking.k8s.io`; `""` is the core group (a Service, GAMMA).
    pub group: Option<String>,
    /// Default `Gateway`.
    pub kind: Option<String>,
    /// Default: the route's namespace.
    pub namespace: Option<String>,
    pub name: String,
    pub section_name: Option<String>,
    pub port: Option<u16>,
}

/// The core API group: `""`, or `core` as Linkerd's GAMMA examples (and Linkerd) write it.
pub fn is_core_group(group: &str) -> bool {
    group.is_empty() || group == "core"
}

impl ParentRef {
    pub fn group(&self) -> &str {
        self.group.as_deref().unwrap_or(GATEWAY_GROUP)
    }

    pub fn kind(&self) -> &str {
        self.kind.as_deref().unwrap_or("Gateway")
    }
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct RuleView {
    /// `name` (experimental channel, and the Argo plugin's managed rules).
    pub name: Option<String>,
    /// Empty: one match of every path (`PathPrefix /`), as the spec defaults it.
    pub matches: Vec<MatchView>,
    pub filters: Vec<FilterView>,
    pub backend_refs: Vec<BackendRefView>,
    /// `timeouts.request`, a Gateway API duration (`10s`, `1m30s`, `500ms`).
    pub request_timeout: Option<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct MatchView {
    pub path: Option<PathView>,
    pub headers: Vec<ValueView>,
    pub query_params: Vec<ValueView>,
    pub method: Option<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PathView {
    /// `Exact`, `PathPrefix` (the default) or `RegularExpression`.
    #[serde(rename = "type")]
    pub kind: Option<String>,
    /// Default `/`.
    pub value: Option<String>,
}

/// A header or query parameter match.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ValueView {
    /// `Exact` (the default) or `RegularExpression`.
    #[serde(rename = "type")]
    pub kind: Option<String>,
    pub name: String,
    pub value: String,
}

#[derive(Clone, Debug, PartialEq)]
pub enum FilterView {
    RequestHeaderModifier(HeaderFilterView),
    ResponseHeaderModifier(HeaderFilterView),
    RequestMirror(MirrorView),
    RequestRedirect(RedirectView),
    UrlRewrite(UrlRewriteView),
    /// Any other type (CORS, ExtensionRef, ...), by its name.
    Unsupported(String),
}

/// `requestRedirect`. Numbers are read wide and strings as written, so that a value out of
/// the spec's range is refused by the translation (`filters.rs`, UnsupportedValue) with the
/// route's other rules intact, rather than failing the whole object's parse.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct RedirectView {
    pub scheme: Option<String>,
    pub hostname: Option<String>,
    pub path: Option<PathModifierView>,
    pub port: Option<i64>,
    /// Default 302.
    pub status_code: Option<i64>,
}

/// `urlRewrite`.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct UrlRewriteView {
    pub hostname: Option<String>,
    pub path: Option<PathModifierView>,
}

/// `HTTPPathModifier`: `type` says which of the two values applies.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PathModifierView {
    /// `ReplaceFullPath` or `ReplacePrefixMatch`.
    #[serde(rename = "type")]
    pub kind: String,
    pub replace_full_path: Option<String>,
    pub replace_prefix_match: Option<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct HeaderFilterView {
    pub set: Vec<NameValue>,
    pub add: Vec<NameValue>,
    pub remove: Vec<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct NameValue {
    pub name: String,
    pub value: String,
}

#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct MirrorView {
    pub backend_ref: ObjectRef,
    /// 0..=100.
    pub percent: Option<u32>,
    pub fraction: Option<FractionView>,
}

#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct FractionView {
    pub numerator: u32,
    /// Default 100.
    pub denominator: Option<u32>,
}

/// A reference to a backend object (`backendRef` without weight and filters).
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ObjectRef {
    /// Default `""` (core).
    pub group: Option<String>,
    /// Default `Service`.
    pub kind: Option<String>,
    pub name: String,
    pub namespace: Option<String>,
    pub port: Option<u16>,
}

impl ObjectRef {
    /// A core Service: the only kind of backend weir resolves.
    pub fn is_service(&self) -> bool {
        is_core_group(self.group.as_deref().unwrap_or(""))
            && self.kind.as_deref().unwrap_or("Service") == "Service"
    }
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct BackendRefView {
    pub object: ObjectRef,
    /// Default 1.
    pub weight: u32,
    pub filters: Vec<FilterView>,
}

// ---- raw serde shapes -------------------------------------------------------------------------

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct Raw {
    metadata: RawMeta,
    spec: RawSpec,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct RawMeta {
    name: String,
    namespace: Option<String>,
    generation: Option<i64>,
    creation_timestamp: Option<String>,
    uid: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct RawSpec {
    parent_refs: Vec<ParentRef>,
    hostnames: Vec<String>,
    rules: Vec<RawRule>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct RawRule {
    name: Option<String>,
    matches: Vec<MatchView>,
    filters: Vec<Value>,
    backend_refs: Vec<RawBackendRef>,
    timeouts: RawTimeouts,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct RawTimeouts {
    request: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct RawBackendRef {
    #[serde(flatten)]
    object: ObjectRef,
    weight: Option<u32>,
    filters: Vec<Value>,
}

impl HttpRouteView {
    /// From a whole object (`metadata` and `spec`); Err names the field that could not be read.
    pub fn parse(object: &Value) -> Result<Self, String> {
        // The API server drops a null in a field the schema does not mark nullable (before
        // defaulting): `matches:` left empty in a manifest is no matches, i.e. the default.
        let object = &without_nulls(object.clone());
        let raw: Raw = serde_path_to_error::deserialize(object)
            .map_err(|e| format!("HTTPRoute {}: {}: {}", name_of(object), e.path(), e.inner()))?;
        let namespace = raw.metadata.namespace.unwrap_or_default();
        let mut rules = Vec::with_capacity(raw.spec.rules.len());
        for (i, r) in raw.spec.rules.into_iter().enumerate() {
            let at = format!("spec.rules[{i}]");
            let rule_filters = filters(&r.filters, &format!("{at}.filters"))?;
            let mut backend_refs = Vec::with_capacity(r.backend_refs.len());
            for (j, b) in r.backend_refs.into_iter().enumerate() {
                backend_refs.push(BackendRefView {
                    object: b.object,
                    weight: b.weight.unwrap_or(1),
                    filters: filters(&b.filters, &format!("{at}.backendRefs[{j}].filters"))?,
                });
            }
            rules.push(RuleView {
                name: r.name,
                matches: r.matches,
                filters: rule_filters,
                backend_refs,
                request_timeout: r.timeouts.request,
            });
        }
        Ok(HttpRouteView {
            namespace,
            name: raw.metadata.name,
            generation: raw.metadata.generation.unwrap_or(0),
            uid: raw.metadata.uid.unwrap_or_default(),
            created: raw.metadata.creation_timestamp.unwrap_or_default(),
            parent_refs: raw.spec.parent_refs,
            hostnames: raw.spec.hostnames,
            rules,
        })
    }
}

fn without_nulls(value: Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.into_iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k, without_nulls(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.into_iter().map(without_nulls).collect()),
        other => other,
    }
}

fn name_of(object: &Value) -> String {
    let m = &object["metadata"];
    format!(
        "{}/{}",
        m["namespace"].as_str().unwrap_or(""),
        m["name"].as_str().unwrap_or("?")
    )
}

fn filters(raw: &[Value], at: &str) -> Result<Vec<FilterView>, String> {
    let mut out = Vec::with_capacity(raw.len());
    for (k, f) in raw.iter().enumerate() {
        let here = format!("{at}[{k}]");
        let kind = f["type"].as_str().unwrap_or("");
        let read = |key: &str| -> Result<FilterView, String> {
            // An absent body reads as an empty one (a modifier that changes nothing).
            let value = f
                .get(key)
                .cloned()
                .unwrap_or_else(|| Value::Object(Default::default()));
            let at = |e: serde_path_to_error::Error<serde_json::Error>| {
                format!("{here}.{key}.{}: {}", e.path(), e.inner())
            };
            match kind {
                "RequestMirror" => serde_path_to_error::deserialize(value)
                    .map(FilterView::RequestMirror)
                    .map_err(at),
                "RequestRedirect" => serde_path_to_error::deserialize(value)
                    .map(FilterView::RequestRedirect)
                    .map_err(at),
                "URLRewrite" => serde_path_to_error::deserialize(value)
                    .map(FilterView::UrlRewrite)
                    .map_err(at),
                _ => {
                    let h: HeaderFilterView =
                        serde_path_to_error::deserialize(value).map_err(at)?;
                    Ok(if kind == "RequestHeaderModifier" {
                        FilterView::RequestHeaderModifier(h)
                    } else {
                        FilterView::ResponseHeaderModifier(h)
                    })
                }
            }
        };
        out.push(match kind {
            "RequestHeaderModifier" => read("requestHeaderModifier")?,
            "ResponseHeaderModifier" => read("responseHeaderModifier")?,
            "RequestMirror" => read("requestMirror")?,
            "RequestRedirect" => read("requestRedirect")?,
            "URLRewrite" => read("urlRewrite")?,
            "" => return Err(format!("{here}.type: missing")),
            other => FilterView::Unsupported(other.to_string()),
        });
    }
    Ok(out)
}
