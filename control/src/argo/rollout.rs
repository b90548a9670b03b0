//! `Rollout.spec` → `model::Rollout`: the strategy weir drives, checked field by field.

use std::time::Duration;

use serde_yaml_ng::{Mapping, Value};
use weir_proxy::stats::Role;

use super::duration::pause_duration;
use super::model::{
    AnalysisRef, ArgSource, ArgValue, BackgroundAnalysis, BlueGreenStrategy, CanaryStrategy,
    HeaderRouteMatch, MirrorMatch, Origin, Rollout, Step, Strategy, StringMatch, TemplateRef,
};
use super::node::{
    boolean, field, index, int_in, join, mapping, object, opt_string, req_string, required, seq,
    string, Ctx, Fields,
};

/// An analysis a Rollout runs, with where it is written (for cross-checks against templates).
#[derive(Clone, Debug)]
pub(crate) struct RefSite {
    pub path: String,
    pub analysis: AnalysisRef,
}

const POD: &str = "is about pods; weir routes traffic only";
const ROUTER: &str = "configures a cluster router; weir does the routing itself";
const HISTORY: &str = "is about AnalysisRun objects, which weir does not create";
const STEP_KINDS: &str = "setWeight, pause, analysis, setHeaderRoute or setMirrorRoute";

const SPEC: Fields = Fields {
    used: &["strategy"],
    ignored: &[
        ("replicas", POD),
        ("selector", POD),
        ("template", POD),
        ("workloadRef", POD),
        ("revisionHistoryLimit", POD),
        ("minReadySeconds", POD),
        ("progressDeadlineSeconds", POD),
        ("progressDeadlineAbort", POD),
        ("restartAt", POD),
        ("rollbackWindow", POD),
        (
            "paused",
            "is the cluster's pause flag; weir keeps its own pause state",
        ),
        ("analysis", HISTORY),
    ],
    refused: &[],
};

const CANARY: Fields = Fields {
    used: &[
        "stableService",
        "canaryService",
        "steps",
        "analysis",
        "trafficRouting",
    ],
    ignored: &[
        ("maxSurge", POD),
        ("maxUnavailable", POD),
        ("dynamicStableScale", POD),
        ("scaleDownDelaySeconds", POD),
        ("scaleDownDelayRevisionLimit", POD),
        ("abortScaleDownDelaySeconds", POD),
        ("antiAffinity", POD),
        ("canaryMetadata", POD),
        ("stableMetadata", POD),
        ("minPodsPerReplicaSet", POD),
        ("replicaProgressThreshold", POD),
    ],
    refused: &[(
        "pingPong",
        "ping-pong services are not supported; weir routes between stableService and canaryService",
    )],
};

const TRAFFIC_ROUTING: Fields = Fields {
    used: &["managedRoutes"],
    ignored: &[
        ("alb", ROUTER),
        ("ambassador", ROUTER),
        ("apisix", ROUTER),
        ("appMesh", ROUTER),
        ("istio", ROUTER),
        ("nginx", ROUTER),
        ("smi", ROUTER),
        ("traefik", ROUTER),
        ("plugins", ROUTER),
    ],
    refused: &[(
        "maxTrafficWeight",
        "is not supported; setWeight is a percent of all traffic (0..100)",
    )],
};

const BLUE_GREEN: Fields = Fields {
    used: &[
        "activeService",
        "previewService",
        "autoPromotionEnabled",
        "autoPromotionSeconds",
        "prePromotionAnalysis",
        "postPromotionAnalysis",
    ],
    ignored: &[
        ("scaleDownDelaySeconds", POD),
        ("scaleDownDelayRevisionLimit", POD),
        ("abortScaleDownDelaySeconds", POD),
        ("previewReplicaCount", POD),
        ("activeMetadata", POD),
        ("previewMetadata", POD),
        ("antiAffinity", POD),
        ("maxUnavailable", POD),
    ],
    refused: &[],
};

const DRY_RUN: (&str, &str) = (
    "dryRun",
    "dry-run set on the Rollout is not supported; list the metrics under the AnalysisTemplate's spec.dryRun",
);

const ANALYSIS: Fields = Fields {
    used: &["templates", "args"],
    ignored: &[
        ("measurementRetention", HISTORY),
        ("analysisRunMetadata", HISTORY),
    ],
    refused: &[
        DRY_RUN,
        (
            "startingStep",
            "belongs to the background analysis (spec.strategy.canary.analysis) only",
        ),
    ],
};

const BACKGROUND: Fields = Fields {
    used: &["templates", "args", "startingStep"],
    ignored: ANALYSIS.ignored,
    refused: &[DRY_RUN],
};

/// Converts a Rollout's `spec`; None if any problem was found (they are in `cx`).
pub(crate) fn rollout(
    cx: &mut Ctx,
    spec: &Value,
    origin: Origin,
) -> Option<(Rollout, Vec<RefSite>)> {
    let before = cx.count();
    let mut refs = Vec::new();
    let spec = object(cx, spec, "spec", &SPEC)?;
    let strategy = required(cx, spec, "strategy", "spec")
        .and_then(|s| strategy(cx, s, "spec.strategy", &mut refs));
    let strategy = strategy.filter(|_| cx.count() == before)?;
    let name = origin.name.clone();
    Some((
        Rollout {
            origin,
            name,
            strategy,
        },
        refs,
    ))
}

fn strategy(cx: &mut Ctx, v: &Value, path: &str, refs: &mut Vec<RefSite>) -> Option<Strategy> {
    let fields = Fields {
        used: &["canary", "blueGreen"],
        ignored: &[],
        refused: &[],
    };
    let m = object(cx, v, path, &fields)?;
    match (field(m, "canary"), field(m, "blueGreen")) {
        (Some(c), None) => canary(cx, c, &join(path, "canary"), refs).map(Strategy::Canary),
        (None, Some(b)) => {
            blue_green(cx, b, &join(path, "blueGreen"), refs).map(Strategy::BlueGreen)
        }
        _ => {
            cx.problem(path, "set exactly one of canary or blueGreen");
            None
        }
    }
}

fn canary(cx: &mut Ctx, v: &Value, path: &str, refs: &mut Vec<RefSite>) -> Option<CanaryStrategy> {
    let m = object(cx, v, path, &CANARY)?;
    let stable_service = opt_string(cx, m, "stableService", path);
    let canary_service = opt_string(cx, m, "canaryService", path);
    if stable_service.is_some() && stable_service == canary_service {
        cx.problem(
            &join(path, "canaryService"),
            "must differ from stableService",
        );
    }
    let managed_routes = match field(m, "trafficRouting") {
        Some(tr) => managed_routes(cx, tr, &join(path, "trafficRouting")),
        None => Vec::new(),
    };

    // weir drops the steps it ignores (setCanaryScale), so Argo's step numbers are remapped.
    let mut steps = Vec::new();
    let mut model_index = Vec::new();
    if let Some(list) = field(m, "steps").and_then(|s| seq(cx, s, &join(path, "steps"))) {
        for (i, item) in list.iter().enumerate() {
            model_index.push(steps.len());
            let at = index(&join(path, "steps"), i);
            if let Some(step) = step(cx, item, &at, &managed_routes, refs) {
                steps.extend(step);
            }
        }
    }

    let analysis = match field(m, "analysis") {
        Some(a) => {
            let at = join(path, "analysis");
            let bg = background(cx, a, &at, &model_index, steps.len())?;
            refs.push(RefSite {
                path: at,
                analysis: bg.analysis.clone(),
            });
            Some(bg)
        }
        None => None,
    };
    Some(CanaryStrategy {
        stable_service,
        canary_service,
        steps,
        analysis,
        managed_routes,
    })
}

fn managed_routes(cx: &mut Ctx, v: &Value, path: &str) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    let Some(tr) = object(cx, v, path, &TRAFFIC_ROUTING) else {
        return names;
    };
    let at = join(path, "managedRoutes");
    let Some(list) = field(tr, "managedRoutes").and_then(|l| seq(cx, l, &at)) else {
        return names;
    };
    let fields = Fields {
        used: &["name"],
        ignored: &[],
        refused: &[],
    };
    for (i, item) in list.iter().enumerate() {
        let at = index(&at, i);
        let Some(name) =
            object(cx, item, &at, &fields).and_then(|r| req_string(cx, r, "name", &at))
        else {
            continue;
        };
        if names.contains(&name) {
            cx.problem(
                &join(&at, "name"),
                format!("route `{name}` is listed twice"),
            );
        }
        names.push(name);
    }
    names
}

/// One step; Some(None) for a step weir accepts and ignores.
fn step(
    cx: &mut Ctx,
    v: &Value,
    path: &str,
    managed: &[String],
    refs: &mut Vec<RefSite>,
) -> Option<Option<Step>> {
    let m = mapping(cx, v, path)?;
    let kinds: Vec<&str> = m.keys().filter_map(Value::as_str).collect();
    if kinds.len() != m.len() || kinds.len() != 1 {
        let found = if kinds.is_empty() {
            "none".to_string()
        } else {
            kinds.join(", ")
        };
        cx.problem(
            path,
            format!("a step sets exactly one of {STEP_KINDS}; found: {found}"),
        );
        return None;
    }
    let kind = kinds[0];
    let at = join(path, kind);
    let body = m.get(kind).unwrap_or(&Value::Null);
    let step = match kind {
        "setWeight" => {
            let pct = int_in(cx, body, &at, 0, 100)?;
            // 0..=100 percent fits u16 basis points.
            Step::SetWeight {
                weight_bp: (pct * 100) as u16,
            }
        }
        "pause" => pause(cx, body, &at)?,
        "analysis" => {
            let analysis = analysis_ref(cx, body, &at, &ANALYSIS)?;
            refs.push(RefSite {
                path: at,
                analysis: analysis.clone(),
            });
            Step::Analysis(analysis)
        }
        "setHeaderRoute" => header_route(cx, body, &at, managed)?,
        "setMirrorRoute" => mirror_route(cx, body, &at, managed)?,
        "setCanaryScale" => {
            cx.notice(&at, POD);
            return Some(None);
        }
        "experiment" => {
            cx.problem(
                &at,
                format!("experiment steps are not supported (they run extra ReplicaSets); weir's steps are {STEP_KINDS}"),
            );
            return None;
        }
        "plugin" => {
            cx.problem(
                &at,
                format!("step plugins are not supported; weir's steps are {STEP_KINDS}"),
            );
            return None;
        }
        other => {
            cx.problem(
                &at,
                format!("unknown step kind `{other}`; weir's steps are {STEP_KINDS}"),
            );
            return None;
        }
    };
    Some(Some(step))
}

fn pause(cx: &mut Ctx, v: &Value, path: &str) -> Option<Step> {
    if v.is_null() {
        cx.problem(
            path,
            "write `pause: {}` to wait for promotion or `pause: {duration: 30s}`",
        );
        return None;
    }
    let m = object(
        cx,
        v,
        path,
        &Fields {
            used: &["duration"],
            ignored: &[],
            refused: &[],
        },
    )?;
    let duration = match field(m, "duration") {
        Some(d) => Some(pause_duration(cx, d, &join(path, "duration"))?),
        None => None,
    };
    Some(Step::Pause { duration })
}

/// setHeaderRoute/setMirrorRoute name, which Argo requires to be listed in managedRoutes.
fn route_name(cx: &mut Ctx, m: &Mapping, path: &str, managed: &[String]) -> Option<String> {
    let name = req_string(cx, m, "name", path)?;
    if !managed.contains(&name) {
        cx.problem(
            &join(path, "name"),
            format!("route `{name}` must be listed in spec.strategy.canary.trafficRouting.managedRoutes"),
        );
    }
    Some(name)
}

fn header_route(cx: &mut Ctx, v: &Value, path: &str, managed: &[String]) -> Option<Step> {
    let m = object(
        cx,
        v,
        path,
        &Fields {
            used: &["name", "match"],
            ignored: &[],
            refused: &[],
        },
    )?;
    let before = cx.count();
    let name = route_name(cx, m, path, managed);
    let mut matches = Vec::new();
    let at = join(path, "match");
    let fields = Fields {
        used: &["headerName", "headerValue"],
        ignored: &[],
        refused: &[],
    };
    for (i, item) in field(m, "match")
        .and_then(|l| seq(cx, l, &at))
        .unwrap_or(&[])
        .iter()
        .enumerate()
    {
        let at = index(&at, i);
        let Some(hm) = object(cx, item, &at, &fields) else {
            continue;
        };
        let header_name = req_string(cx, hm, "headerName", &at);
        let header_value = required(cx, hm, "headerValue", &at)
            .and_then(|hv| string_match(cx, hv, &join(&at, "headerValue")));
        if let (Some(header_name), Some(header_value)) = (header_name, header_value) {
            matches.push(HeaderRouteMatch {
                header_name,
                header_value,
            });
        }
    }
    let name = name.filter(|_| cx.count() == before)?;
    Some(Step::SetHeaderRoute { name, matches })
}

fn mirror_route(cx: &mut Ctx, v: &Value, path: &str, managed: &[String]) -> Option<Step> {
    let fields = Fields {
        used: &["name", "percentage", "match"],
        ignored: &[],
        refused: &[],
    };
    let m = object(cx, v, path, &fields)?;
    let before = cx.count();
    let name = route_name(cx, m, path, managed);
    let percentage = field(m, "percentage")
        .and_then(|p| int_in(cx, p, &join(path, "percentage"), 0, 100))
        .map(|p| p as u16);
    let mut matches = Vec::new();
    let at = join(path, "match");
    let fields = Fields {
        used: &["method", "path", "headers"],
        ignored: &[],
        refused: &[],
    };
    for (i, item) in field(m, "match")
        .and_then(|l| seq(cx, l, &at))
        .unwrap_or(&[])
        .iter()
        .enumerate()
    {
        let at = index(&at, i);
        let Some(mm) = object(cx, item, &at, &fields) else {
            continue;
        };
        let method = field(mm, "method").and_then(|x| string_match(cx, x, &join(&at, "method")));
        let url_path = field(mm, "path").and_then(|x| string_match(cx, x, &join(&at, "path")));
        let mut headers = Vec::new();
        let hat = join(&at, "headers");
        for (k, hv) in field(mm, "headers")
            .and_then(|h| mapping(cx, h, &hat))
            .into_iter()
            .flatten()
        {
            let Some(k) = string(cx, k, &hat) else {
                continue;
            };
            if let Some(sm) = string_match(cx, hv, &join(&hat, &k)) {
                headers.push((k, sm));
            }
        }
        matches.push(MirrorMatch {
            method,
            path: url_path,
            headers,
        });
    }
    let name = name.filter(|_| cx.count() == before)?;
    Some(Step::SetMirrorRoute {
        name,
        percentage,
        matches,
    })
}

/// `{exact | prefix | regex: STRING}`, exactly one; a regex must compile.
fn string_match(cx: &mut Ctx, v: &Value, path: &str) -> Option<StringMatch> {
    let fields = Fields {
        used: &["exact", "prefix", "regex"],
        ignored: &[],
        refused: &[],
    };
    let m = object(cx, v, path, &fields)?;
    let set: Vec<&str> = fields
        .used
        .iter()
        .copied()
        .filter(|k| field(m, k).is_some())
        .collect();
    if set.len() != 1 {
        cx.problem(path, "set exactly one of exact, prefix or regex");
        return None;
    }
    let s = opt_string(cx, m, set[0], path)?;
    match set[0] {
        "exact" => Some(StringMatch::Exact(s)),
        "prefix" => Some(StringMatch::Prefix(s)),
        _ => match regex::Regex::new(&s) {
            Ok(_) => Some(StringMatch::Regex(s)),
            Err(e) => {
                cx.problem(&join(path, "regex"), format!("invalid regex: {e}"));
                None
            }
        },
    }
}

fn background(
    cx: &mut Ctx,
    v: &Value,
    path: &str,
    model_index: &[usize],
    model_len: usize,
) -> Option<BackgroundAnalysis> {
    let analysis = analysis_ref(cx, v, path, &BACKGROUND)?;
    let mut starting_step = None;
    if let Some(s) = v.as_mapping().and_then(|m| field(m, "startingStep")) {
        let at = join(path, "startingStep");
        let argo_steps = model_index.len() as i64;
        if argo_steps == 0 {
            cx.problem(&at, "there are no steps to start from");
            return None;
        }
        let i = int_in(cx, s, &at, 0, argo_steps - 1)?;
        // Argo counts ignored steps too; point at the first step weir keeps from there on.
        starting_step = Some(model_index.get(i as usize).copied().unwrap_or(model_len));
    }
    Some(BackgroundAnalysis {
        analysis,
        starting_step,
    })
}

fn analysis_ref(cx: &mut Ctx, v: &Value, path: &str, fields: &Fields) -> Option<AnalysisRef> {
    let before = cx.count();
    let m = object(cx, v, path, fields)?;
    let mut templates = Vec::new();
    let at = join(path, "templates");
    if let Some(list) = required(cx, m, "templates", path).and_then(|l| seq(cx, l, &at)) {
        if list.is_empty() {
            cx.problem(&at, "name at least one template");
        }
        let tf = Fields {
            used: &["templateName", "clusterScope"],
            ignored: &[],
            refused: &[],
        };
        for (i, item) in list.iter().enumerate() {
            let at = index(&at, i);
            let Some(t) = object(cx, item, &at, &tf) else {
                continue;
            };
            let name = req_string(cx, t, "templateName", &at);
            let cluster_scope = match field(t, "clusterScope") {
                Some(c) => boolean(cx, c, &join(&at, "clusterScope")),
                None => Some(false),
            };
            if let (Some(name), Some(cluster_scope)) = (name, cluster_scope) {
                templates.push(TemplateRef {
                    name,
                    cluster_scope,
                });
            }
        }
    }
    let mut args = Vec::new();
    let at = join(path, "args");
    for (i, item) in field(m, "args")
        .and_then(|l| seq(cx, l, &at))
        .unwrap_or(&[])
        .iter()
        .enumerate()
    {
        args.extend(arg(cx, item, &index(&at, i)));
    }
    (cx.count() == before).then_some(AnalysisRef { templates, args })
}

fn arg(cx: &mut Ctx, v: &Value, path: &str) -> Option<ArgValue> {
    let m = object(
        cx,
        v,
        path,
        &Fields {
            used: &["name", "value", "valueFrom"],
            ignored: &[],
            refused: &[],
        },
    )?;
    let name = req_string(cx, m, "name", path);
    let value = match (field(m, "value"), field(m, "valueFrom")) {
        (Some(x), None) => string(cx, x, &join(path, "value")).map(ArgSource::Value),
        (None, Some(from)) => value_from(cx, from, &join(path, "valueFrom")),
        _ => {
            cx.problem(path, "set exactly one of value or valueFrom");
            None
        }
    };
    Some(ArgValue {
        name: name?,
        value: value?,
    })
}

fn value_from(cx: &mut Ctx, v: &Value, path: &str) -> Option<ArgSource> {
    let fields = Fields {
        used: &["podTemplateHashValue", "fieldRef", "secretKeyRef"],
        ignored: &[],
        refused: &[],
    };
    let m = object(cx, v, path, &fields)?;
    match (
        field(m, "podTemplateHashValue"),
        field(m, "fieldRef"),
        field(m, "secretKeyRef"),
    ) {
        (None, None, Some(s)) => {
            super::template::secret_ref(cx, s, &join(path, "secretKeyRef")).map(ArgSource::Secret)
        }
        (Some(h), None, None) => {
            let at = join(path, "podTemplateHashValue");
            match string(cx, h, &at)?.as_str() {
                "Stable" => Some(ArgSource::PodTemplateHash(Role::Stable)),
                "Latest" => Some(ArgSource::PodTemplateHash(Role::Canary)),
                other => {
                    cx.problem(&at, format!("`{other}` is neither Stable nor Latest"));
                    None
                }
            }
        }
        (None, Some(f), None) => {
            let at = join(path, "fieldRef");
            let fm = object(
                cx,
                f,
                &at,
                &Fields {
                    used: &["fieldPath"],
                    ignored: &[],
                    refused: &[],
                },
            )?;
            req_string(cx, fm, "fieldPath", &at).map(ArgSource::FieldRef)
        }
        _ => {
            cx.problem(
                path,
                "set exactly one of podTemplateHashValue, fieldRef or secretKeyRef",
            );
            None
        }
    }
}

fn blue_green(
    cx: &mut Ctx,
    v: &Value,
    path: &str,
    refs: &mut Vec<RefSite>,
) -> Option<BlueGreenStrategy> {
    let before = cx.count();
    let m = object(cx, v, path, &BLUE_GREEN)?;
    let active_service = req_string(cx, m, "activeService", path);
    let preview_service = opt_string(cx, m, "previewService", path);
    if preview_service.is_some() && preview_service == active_service {
        cx.problem(
            &join(path, "previewService"),
            "must differ from activeService",
        );
    }
    let auto_promotion_enabled = match field(m, "autoPromotionEnabled") {
        Some(b) => boolean(cx, b, &join(path, "autoPromotionEnabled")),
        None => Some(true),
    };
    let auto_promotion_seconds = field(m, "autoPromotionSeconds")
        .and_then(|s| {
            int_in(
                cx,
                s,
                &join(path, "autoPromotionSeconds"),
                0,
                i32::MAX.into(),
            )
        })
        .map(|s| Duration::from_secs(s as u64));
    let mut promotion = |key: &str, cx: &mut Ctx| {
        let at = join(path, key);
        let a = analysis_ref(cx, field(m, key)?, &at, &ANALYSIS)?;
        refs.push(RefSite {
            path: at,
            analysis: a.clone(),
        });
        Some(a)
    };
    let pre_promotion_analysis = promotion("prePromotionAnalysis", cx);
    let post_promotion_analysis = promotion("postPromotionAnalysis", cx);
    if cx.count() != before {
        return None;
    }
    Some(BlueGreenStrategy {
        active_service: active_service?,
        preview_service,
        auto_promotion_enabled: auto_promotion_enabled?,
        auto_promotion_seconds,
        pre_promotion_analysis,
        post_promotion_analysis,
    })
}
