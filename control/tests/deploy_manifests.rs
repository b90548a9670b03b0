//! Everything under deploy/: it parses, each Rollout passes the Rollout CRD's OpenAPI v3 schema
//! (checked by a small structural validator, below), Argo objects load with weir's own reader,
//! the Grafana dashboard queries weir's metrics, kustomizations reference files that exist, and
//! the ConfigMaps and the sidecar agree with the weir configs and with `weir inject`.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_yaml_ng::{Mapping, Value};
use weir_control::argo::{lint, load_files};
use weir_control::inject::{inject, InjectOptions};

const DEPLOY: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../deploy");
const METRICS_DOC: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/metrics.md");
const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../fixtures/argo-rollouts");

// ---------------------------------------------------------------------------------------------
// Files and documents.

fn files_under(dir: &Path, exts: &[&str], out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files_under(&path, exts, out);
        } else if path
            .extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| exts.contains(&e))
        {
            out.push(path);
        }
    }
    out.sort();
}

fn yaml_files() -> Vec<PathBuf> {
    let mut files = Vec::new();
    files_under(Path::new(DEPLOY), &["yaml", "yml"], &mut files);
    files
}

fn documents(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap();
    serde_yaml_ng::Deserializer::from_str(&text)
        .enumerate()
        .map(|(i, doc)| {
            Value::deserialize(doc)
                .unwrap_or_else(|e| panic!("{}: document {}: {e}", path.display(), i + 1))
        })
        .filter(|v| !v.is_null())
        .collect()
}

fn kind(v: &Value) -> &str {
    v.get("kind").and_then(Value::as_str).unwrap_or_default()
}

fn name(v: &Value) -> &str {
    v.get("metadata")
        .and_then(|m| m.get("name"))
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// Every Kubernetes object under deploy/, with its file.
fn objects() -> Vec<(PathBuf, Value)> {
    yaml_files()
        .into_iter()
        .flat_map(|f| documents(&f).into_iter().map(move |d| (f.clone(), d)))
        .filter(|(_, d)| d.get("apiVersion").is_some() && d.get("kind").is_some())
        .collect()
}

fn rel(path: &Path) -> String {
    path.strip_prefix(Path::new(DEPLOY))
        .unwrap_or(path)
        .display()
        .to_string()
}

#[test]
fn deploy_every_yaml_file_parses() {
    let files = yaml_files();
    assert!(files.len() >= 15, "deploy/ has {} YAML files", files.len());
    let mut kinds = BTreeSet::new();
    for file in &files {
        for doc in documents(file) {
            kinds.insert(kind(&doc).to_string());
        }
    }
    for want in [
        "Rollout",
        "AnalysisTemplate",
        "Deployment",
        "Service",
        "ConfigMap",
        "ServiceAccount",
        "Role",
        "RoleBinding",
        "PodMonitor",
        "HorizontalPodAutoscaler",
        "Application",
        "Kustomization",
    ] {
        assert!(kinds.contains(want), "no {want} under deploy/: {kinds:?}");
    }
}

// ---------------------------------------------------------------------------------------------
// A structural validator for a CRD's OpenAPI v3 schema: type, properties, required, items, enum,
// anyOf, additionalProperties, x-kubernetes-int-or-string, x-kubernetes-preserve-unknown-fields.
// Unknown fields are refused unless the schema preserves them, as the API server's pruning would
// silently drop them. Formats, patterns, limits and CEL rules are not checked.

fn flag(schema: &Value, key: &str) -> bool {
    schema.get(key).and_then(Value::as_bool) == Some(true)
}

fn type_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_f64() => "number",
        Value::Number(_) => "integer",
        Value::String(_) => "string",
        Value::Sequence(_) => "array",
        Value::Mapping(_) => "object",
        Value::Tagged(_) => "tagged value",
    }
}

fn validate(schema: &Value, value: &Value, path: &str, errors: &mut Vec<String>) {
    let at = if path.is_empty() { "<root>" } else { path };
    if value.is_null() {
        // The API server treats an explicit null as an absent field.
        return;
    }
    if flag(schema, "x-kubernetes-int-or-string") {
        if !matches!(type_of(value), "integer" | "string") {
            errors.push(format!(
                "{at}: expected an integer or a string, found {}",
                type_of(value)
            ));
        }
        return;
    }
    if let Some(Value::Sequence(alternatives)) = schema.get("anyOf") {
        let fits = alternatives.iter().any(|alt| {
            let mut e = Vec::new();
            validate(alt, value, path, &mut e);
            e.is_empty()
        });
        if !fits {
            errors.push(format!("{at}: matches none of anyOf"));
            return;
        }
    }
    if let Some(Value::Sequence(allowed)) = schema.get("enum") {
        if !allowed.contains(value) {
            errors.push(format!(
                "{at}: {} is not one of {}",
                serde_json::to_string(value).unwrap_or_default(),
                serde_json::to_string(allowed).unwrap_or_default()
            ));
            return;
        }
    }
    let preserve = flag(schema, "x-kubernetes-preserve-unknown-fields");
    let Some(want) = schema.get("type").and_then(Value::as_str) else {
        // No type: anything (e.g. resources.limits, which only preserves unknown fields).
        return;
    };
    let have = type_of(value);
    let fits = want == have || (want == "number" && have == "integer");
    if !fits {
        errors.push(format!("{at}: expected {want}, found {have}"));
        return;
    }
    match value {
        Value::Mapping(map) => validate_object(schema, map, path, preserve, errors),
        Value::Sequence(items) => {
            if let Some(item_schema) = schema.get("items") {
                for (i, item) in items.iter().enumerate() {
                    validate(item_schema, item, &format!("{path}[{i}]"), errors);
                }
            }
        }
        _ => {}
    }
}

fn validate_object(
    schema: &Value,
    map: &Mapping,
    path: &str,
    preserve: bool,
    errors: &mut Vec<String>,
) {
    let at = if path.is_empty() { "<root>" } else { path };
    let properties = schema.get("properties").and_then(Value::as_mapping);
    let additional = schema.get("additionalProperties");
    for (key, item) in map {
        let Some(key) = key.as_str() else {
            errors.push(format!("{at}: keys must be strings"));
            continue;
        };
        let sub = if path.is_empty() {
            key.to_string()
        } else {
            format!("{path}.{key}")
        };
        if item.is_null() {
            // An explicit null is an absent field to the API server (live objects have
            // `creationTimestamp: null` in their pod template's metadata).
            continue;
        }
        if path.is_empty() && key == "metadata" {
            // ObjectMeta is validated by the API server itself, not by the CRD's schema.
            if !item.is_mapping() || name_of_meta(item).is_none() {
                errors.push("metadata: expected a mapping with a string name".into());
            }
            continue;
        }
        match (properties.and_then(|p| p.get(key)), additional) {
            (Some(prop), _) => validate(prop, item, &sub, errors),
            (None, Some(Value::Bool(true))) => {}
            (None, Some(extra @ Value::Mapping(_))) => validate(extra, item, &sub, errors),
            (None, _) if preserve => {}
            (None, _) => errors.push(format!("{sub}: unknown field")),
        }
    }
    if let Some(Value::Sequence(required)) = schema.get("required") {
        for key in required.iter().filter_map(Value::as_str) {
            if map.get(key).is_none_or(Value::is_null) {
                let sub = if path.is_empty() {
                    key.to_string()
                } else {
                    format!("{path}.{key}")
                };
                errors.push(format!("{sub}: required field is missing"));
            }
        }
    }
}

fn name_of_meta(meta: &Value) -> Option<&str> {
    meta.get("name")
        .or_else(|| meta.get("generateName"))
        .and_then(Value::as_str)
}

/// The openAPIV3Schema of the CRD's served version `version`.
fn crd_schema(file: &str, version: &str) -> Value {
    let path = Path::new(FIXTURES).join("crds").join(file);
    let crd: Value = serde_yaml_ng::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    crd["spec"]["versions"]
        .as_sequence()
        .unwrap()
        .iter()
        .find(|v| v["name"].as_str() == Some(version))
        .unwrap_or_else(|| panic!("{file}: no version {version}"))["schema"]["openAPIV3Schema"]
        .clone()
}

fn rollout_schema() -> Value {
    crd_schema("rollout-crd.yaml", "v1alpha1")
}

fn schema_errors(schema: &Value, object: &Value) -> Vec<String> {
    let mut errors = Vec::new();
    validate(schema, object, "", &mut errors);
    errors
}

#[test]
fn deploy_rollouts_pass_the_crd_schema() {
    let schema = rollout_schema();
    let mut seen = 0;
    for (file, object) in objects() {
        if kind(&object) != "Rollout" {
            continue;
        }
        seen += 1;
        assert_eq!(
            object["apiVersion"].as_str(),
            Some("argoproj.io/v1alpha1"),
            "{}",
            rel(&file)
        );
        let errors = schema_errors(&schema, &object);
        assert!(
            errors.is_empty(),
            "{}: Rollout/{}: {errors:#?}",
            rel(&file),
            name(&object)
        );
    }
    assert!(seen >= 1, "no Rollout under deploy/");
}

/// The validator accepts what Argo's own project wrote against the same CRD.
#[test]
fn deploy_schema_validator_accepts_argo_fixture_rollouts() {
    let schema = rollout_schema();
    let mut seen = 0;
    for sub in ["examples", "live"] {
        let mut files = Vec::new();
        files_under(&Path::new(FIXTURES).join(sub), &["yaml"], &mut files);
        for file in files {
            let text = std::fs::read_to_string(&file).unwrap();
            for doc in serde_yaml_ng::Deserializer::from_str(&text) {
                let Ok(object) = Value::deserialize(doc) else {
                    break; // Helm templates: not YAML until rendered.
                };
                if kind(&object) != "Rollout" {
                    continue;
                }
                seen += 1;
                let errors = schema_errors(&schema, &object);
                assert!(errors.is_empty(), "{}: {errors:#?}", file.display());
            }
        }
    }
    assert!(seen >= 20, "only {seen} fixture Rollouts");
}

/// The validator refuses what the API server would refuse or silently prune, naming the path.
#[test]
fn deploy_schema_validator_refuses_a_broken_rollout() {
    let schema = rollout_schema();
    let path = Path::new(DEPLOY).join("rollout/rollout.yaml");
    let good = documents(&path)
        .into_iter()
        .find(|d| kind(d) == "Rollout")
        .unwrap();
    assert!(schema_errors(&schema, &good).is_empty());

    let mut bad = good.clone();
    let canary = &mut bad["spec"]["strategy"]["canary"];
    canary["steps"][0]["setWeight"] = Value::from("ten");
    canary["trafficRouting"]["smi"]["weights"] = Value::from(10);
    canary["stableServce"] = Value::from("typo");
    canary["steps"][1]["pause"]["duration"] = Value::Bool(true);
    bad["spec"]["template"]["spec"]["containers"][0]["ports"][0]["containerPort"] =
        Value::from("8080");
    bad["spec"]["template"]["spec"]["containers"][0]
        .as_mapping_mut()
        .unwrap()
        .remove("name");
    bad["spec"]["template"]["metadata"]["finalizers"] = Value::Sequence(vec![]);
    bad["spec"]["strategy"]["blueGreen"] = Value::from("yes");
    let errors = schema_errors(&schema, &bad);
    for want in [
        "spec.strategy.canary.steps[0].setWeight: expected integer, found string",
        "spec.strategy.canary.trafficRouting.smi.weights: unknown field",
        "spec.strategy.canary.stableServce: unknown field",
        "spec.strategy.canary.steps[1].pause.duration: expected an integer or a string, found boolean",
        "spec.template.spec.containers[0].ports[0].containerPort: expected integer, found string",
        "spec.template.spec.containers[0].name: required field is missing",
        "spec.template.metadata.finalizers: unknown field",
        "spec.strategy.blueGreen: expected object, found string",
    ] {
        assert!(
            errors.iter().any(|e| e == want),
            "missing {want:?} in {errors:#?}"
        );
    }
    assert_eq!(errors.len(), 8, "{errors:#?}");

    // Where the schema preserves unknown fields (plugin config, resources), anything goes.
    let mut free = good.clone();
    free["spec"]["strategy"]["canary"]["trafficRouting"]["plugins"] =
        serde_yaml_ng::from_str("{weir/live: {anything: [1, 2]}}").unwrap();
    free["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] =
        Value::from(1);
    assert!(schema_errors(&schema, &free).is_empty());

    // enum.
    let enums = serde_yaml_ng::from_str::<Value>(
        "type: object\nproperties:\n  mode: {type: string, enum: [a, b]}\n",
    )
    .unwrap();
    let errors = schema_errors(&enums, &serde_yaml_ng::from_str("mode: c").unwrap());
    assert_eq!(errors, [r#"mode: "c" is not one of ["a","b"]"#]);
}

// ---------------------------------------------------------------------------------------------
// weir's own reader.

fn analysis_templates() -> PathBuf {
    Path::new(DEPLOY).join("analysis/weir-analysis-templates.yaml")
}

#[test]
fn deploy_argo_objects_load_with_weirs_reader() {
    let mut argo_files = BTreeSet::new();
    for (file, object) in objects() {
        let api = object["apiVersion"].as_str().unwrap_or_default();
        if api.starts_with("argoproj.io/")
            && matches!(kind(&object), "Rollout" | "AnalysisTemplate")
        {
            argo_files.insert(file);
        }
    }
    assert!(argo_files.len() >= 2, "{argo_files:?}");
    let mut rollouts = 0;
    let mut templates = 0;
    for file in &argo_files {
        // With the AnalysisTemplates beside, so the references resolve.
        let mut paths = vec![file.clone()];
        if *file != analysis_templates() {
            paths.push(analysis_templates());
        }
        let manifests = load_files(&paths).unwrap_or_else(|e| panic!("{}: {e}", rel(file)));
        for r in &manifests.rollouts {
            assert_eq!(
                r.origin.file,
                *file,
                "Rollout/{} comes from {}",
                r.name,
                rel(file)
            );
            rollouts += 1;
        }
        templates += manifests.templates.len();
        let report = lint(&paths);
        assert!(report.is_ok(), "{}: {:?}", rel(file), report.problems);
    }
    assert!(rollouts >= 1 && templates >= 2, "{rollouts} {templates}");
}

#[test]
fn deploy_rollout_wiring() {
    let objects = objects();
    let find = |k: &str, n: &str| {
        objects
            .iter()
            .find(|(_, o)| kind(o) == k && name(o) == n)
            .map(|(_, o)| o)
    };
    let templates: BTreeSet<&str> = objects
        .iter()
        .filter(|(_, o)| kind(o) == "AnalysisTemplate")
        .map(|(_, o)| name(o))
        .collect();
    let mut analysis_steps = 0;
    for (file, r) in objects.iter().filter(|(_, o)| kind(o) == "Rollout") {
        let canary = &r["spec"]["strategy"]["canary"];
        for svc in ["stableService", "canaryService"] {
            let s = canary[svc].as_str().unwrap();
            assert!(find("Service", s).is_some(), "{}: Service {s}", rel(file));
        }
        let smi = &canary["trafficRouting"]["smi"];
        let mirrors = canary["steps"]
            .as_sequence()
            .is_some_and(|steps| steps.iter().any(|s| s.get("setMirrorRoute").is_some()));
        if mirrors {
            // A mirror step is for weir's standalone engine: SMI cannot mirror.
            assert!(
                !smi.is_mapping() && rel(file).ends_with("-standalone.yaml"),
                "{}: a Rollout that mirrors is weir-standalone's",
                rel(file)
            );
        } else {
            assert!(smi.is_mapping(), "{}: trafficRouting.smi", rel(file));
        }
        if let Some(root) = smi["rootService"].as_str() {
            assert!(find("Service", root).is_some(), "root Service {root}");
        }
        for step in canary["steps"].as_sequence().unwrap() {
            if let Some(Value::Sequence(ts)) = step.get("analysis").and_then(|a| a.get("templates"))
            {
                for t in ts {
                    let t = t["templateName"].as_str().unwrap();
                    assert!(templates.contains(t), "{}: template {t}", rel(file));
                    analysis_steps += 1;
                }
            }
        }
    }
    assert!(analysis_steps >= 1);
    assert!(templates.contains("weir-canary-slo"));

    let mut hpas = 0;
    for (file, hpa) in objects
        .iter()
        .filter(|(_, o)| kind(o) == "HorizontalPodAutoscaler")
    {
        hpas += 1;
        assert_eq!(hpa["apiVersion"].as_str(), Some("autoscaling/v2"));
        let target = &hpa["spec"]["scaleTargetRef"];
        assert_eq!(target["apiVersion"].as_str(), Some("argoproj.io/v1alpha1"));
        assert_eq!(target["kind"].as_str(), Some("Rollout"), "{}", rel(file));
        let rollout = find("Rollout", target["name"].as_str().unwrap());
        let rollout = rollout.expect("the HPA's Rollout exists");
        assert!(
            rollout["spec"].get("replicas").is_none(),
            "the HPA owns replicas; Git must not set them"
        );
    }
    assert_eq!(hpas, 1);

    let app = objects
        .iter()
        .find(|(_, o)| kind(o) == "Application")
        .map(|(_, o)| o)
        .unwrap();
    let ignored = app["spec"]["ignoreDifferences"].as_sequence().unwrap();
    for k in ["Rollout", "CustomResourceDefinition"] {
        assert!(
            ignored.iter().any(|i| i["kind"].as_str() == Some(k)),
            "ignoreDifferences for {k}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// RBAC, sidecar, ConfigMaps.

/// Every grant of a Role or ClusterRole, as `group/resource[:names] verb`.
fn grants(role: &Value) -> BTreeSet<String> {
    let mut granted = BTreeSet::new();
    for rule in role["rules"].as_sequence().unwrap() {
        let names: Vec<&str> = rule["resourceNames"]
            .as_sequence()
            .map(|n| n.iter().map(|v| v.as_str().unwrap()).collect())
            .unwrap_or_default();
        for verb in rule["verbs"].as_sequence().unwrap() {
            for g in rule["apiGroups"].as_sequence().unwrap() {
                for r in rule["resources"].as_sequence().unwrap() {
                    let mut grant = format!("{}/{}", g.as_str().unwrap(), r.as_str().unwrap());
                    if !names.is_empty() {
                        grant.push_str(&format!(":{}", names.join(",")));
                    }
                    granted.insert(format!("{grant} {}", verb.as_str().unwrap()));
                }
            }
        }
    }
    granted
}

fn reads(resources: &[&str]) -> BTreeSet<String> {
    let mut want = BTreeSet::new();
    for read in resources {
        for verb in ["get", "list", "watch"] {
            want.insert(format!("{read} {verb}"));
        }
    }
    want
}

fn object_named<'o>(objects: &'o [(PathBuf, Value)], k: &str, n: &str) -> &'o Value {
    objects
        .iter()
        .find(|(_, o)| kind(o) == k && name(o) == n)
        .map(|(_, o)| o)
        .unwrap_or_else(|| panic!("no {k} {n}"))
}

#[test]
fn deploy_rbac_is_namespaced_and_writes_only_httproute_status_and_its_lease() {
    let objects = objects();
    // The sidecar's and the edge's: one namespace, a Role.
    let role = object_named(&objects, "Role", "weir");
    let mut want = reads(&[
        "argoproj.io/rollouts",
        "split.smi-spec.io/trafficsplits",
        "discovery.k8s.io/endpointslices",
        "/services",
        "gateway.networking.k8s.io/httproutes",
        "gateway.networking.k8s.io/referencegrants",
        "coordination.k8s.io/leases",
    ]);
    // The only writes: HTTPRoute status, creating the Lease, and updating that one Lease.
    want.insert("gateway.networking.k8s.io/httproutes/status update".to_string());
    want.insert("coordination.k8s.io/leases create".to_string());
    want.insert("coordination.k8s.io/leases:weir-httproute-status update".to_string());
    assert_eq!(grants(role), want);
    let binding = object_named(&objects, "RoleBinding", "weir");
    assert_eq!(binding["roleRef"]["kind"].as_str(), Some("Role"));
    assert_eq!(
        binding["subjects"][0]["kind"].as_str(),
        Some("ServiceAccount")
    );
}

/// An edge weir serving a Gateway reads cluster-wide what the Gateway's listeners may attach,
/// and writes only statuses and its Gateway's Lease — named as weir names it by default.
#[test]
fn deploy_gateway_rbac_reads_what_a_gateway_attaches_and_writes_only_statuses() {
    let objects = objects();
    let cluster = object_named(&objects, "ClusterRole", "weir-gateway");
    let mut want = reads(&[
        "gateway.networking.k8s.io/gateways",
        "gateway.networking.k8s.io/httproutes",
        "gateway.networking.k8s.io/referencegrants",
        "/services",
        "discovery.k8s.io/endpointslices",
        "/namespaces",
    ]);
    want.insert("gateway.networking.k8s.io/gateways/status update".to_string());
    want.insert("gateway.networking.k8s.io/httproutes/status update".to_string());
    assert_eq!(grants(cluster), want);
    let config: Value = serde_yaml_ng::from_str(
        &std::fs::read_to_string(Path::new(DEPLOY).join("gateway/weir.yaml")).unwrap(),
    )
    .unwrap();
    let gateway = config["kube"]["http_routes"]["gateway"]["name"]
        .as_str()
        .unwrap();
    let namespace = config["kube"]["namespace"].as_str().unwrap();
    let role = object_named(&objects, "Role", "weir-gateway");
    assert_eq!(role["metadata"]["namespace"].as_str(), Some(namespace));
    let mut want = reads(&["coordination.k8s.io/leases", "/secrets"]);
    want.insert("coordination.k8s.io/leases create".to_string());
    want.insert(format!(
        "coordination.k8s.io/leases:weir-gateway-{gateway} update"
    ));
    assert_eq!(grants(role), want);
    // The Gateway it serves is in gateway.yaml, of the class naming weir's controller.
    let gw = object_named(&objects, "Gateway", gateway);
    assert_eq!(gw["metadata"]["namespace"].as_str(), Some(namespace));
    let class = object_named(
        &objects,
        "GatewayClass",
        gw["spec"]["gatewayClassName"].as_str().unwrap(),
    );
    assert_eq!(
        class["spec"]["controllerName"],
        config["kube"]["http_routes"]["controller_name"]
    );
    for (k, n) in [
        ("ClusterRoleBinding", "weir-gateway"),
        ("RoleBinding", "weir-gateway"),
    ] {
        let b = object_named(&objects, k, n);
        assert_eq!(
            b["subjects"][0]["name"].as_str(),
            Some("weir-gateway"),
            "{k}"
        );
        assert_eq!(
            b["subjects"][0]["namespace"].as_str(),
            Some(namespace),
            "{k}"
        );
    }
}

/// The ConfigMaps carry the weir configs byte for byte, so checking the files checks them.
#[test]
fn deploy_configmaps_hold_the_weir_configs() {
    for mode in ["sidecar", "edge", "gateway"] {
        let dir = Path::new(DEPLOY).join(mode);
        let config = std::fs::read_to_string(dir.join("weir.yaml")).unwrap();
        let cm = documents(&dir.join("configmap.yaml"))
            .into_iter()
            .find(|d| kind(d) == "ConfigMap")
            .unwrap();
        assert_eq!(
            cm["data"]["weir.yaml"].as_str(),
            Some(config.as_str()),
            "{mode}: configmap.yaml's weir.yaml differs from {mode}/weir.yaml"
        );
    }
}

/// The weir configs load with weir's own loader (`weir check` on them is in the binary's tests).
#[test]
fn deploy_weir_configs_load() {
    for rel_path in [
        "sidecar/weir.yaml",
        "gateway/weir.yaml",
        "rollout/weir-standalone.yaml",
    ] {
        let path = Path::new(DEPLOY).join(rel_path);
        weir_control::config::load(&path).unwrap_or_else(|e| panic!("{rel_path}: {e}"));
    }
    // The edge config names its certificate relative to itself: give it placeholder files.
    let dir = std::env::temp_dir().join(format!("weir-deploy-edge-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("tls")).unwrap();
    std::fs::copy(
        Path::new(DEPLOY).join("edge/weir.yaml"),
        dir.join("weir.yaml"),
    )
    .unwrap();
    std::fs::write(dir.join("tls/tls.crt"), "").unwrap();
    std::fs::write(dir.join("tls/tls.key"), "").unwrap();
    let loaded = weir_control::config::load(&dir.join("weir.yaml"));
    std::fs::remove_dir_all(&dir).ok();
    loaded.unwrap_or_else(|e| panic!("edge/weir.yaml: {e}"));
}

/// deploy/sidecar's frontend is what `weir inject` makes of the bare app.
#[test]
fn deploy_sidecar_is_what_inject_writes() {
    let path = Path::new(DEPLOY).join("sidecar/deployment.yaml");
    let committed = documents(&path)
        .into_iter()
        .find(|d| kind(d) == "Deployment")
        .unwrap();

    let mut bare = committed.clone();
    let template = bare["spec"]["template"].as_mapping_mut().unwrap();
    let annotations = template
        .get_mut("metadata")
        .and_then(|m| m.as_mapping_mut())
        .unwrap();
    annotations.remove("annotations");
    let pod = template
        .get_mut("spec")
        .and_then(Value::as_mapping_mut)
        .unwrap();
    pod.remove("volumes");
    let containers = pod
        .get_mut("containers")
        .and_then(Value::as_sequence_mut)
        .unwrap();
    containers.retain(|c| c["name"].as_str() != Some("weir"));

    let opts = InjectOptions {
        config_map: Some("frontend-weir".into()),
        ..InjectOptions::default()
    };
    let injected = inject(&serde_yaml_ng::to_string(&bare).unwrap(), &opts).unwrap();
    let injected: Value = serde_yaml_ng::from_str(&injected).unwrap();
    assert_eq!(injected, committed);

    // And the ports weir listens on in the ConfigMap are the ones the container declares.
    let config = std::fs::read_to_string(Path::new(DEPLOY).join("sidecar/weir.yaml")).unwrap();
    assert!(config.contains("address: 127.0.0.1:15001"));
    assert!(config.contains("address: 0.0.0.0:9901"));
}

#[test]
fn deploy_edge_mounts_the_tls_secret_where_the_config_looks() {
    let path = Path::new(DEPLOY).join("edge/deployment.yaml");
    let deployment = documents(&path)
        .into_iter()
        .find(|d| kind(d) == "Deployment")
        .unwrap();
    let pod = &deployment["spec"]["template"]["spec"];
    let container = &pod["containers"][0];
    let args: Vec<&str> = container["args"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    assert_eq!(args, ["run", "--config", "/etc/weir/weir.yaml"]);
    let mount = &container["volumeMounts"][0];
    assert_eq!(mount["mountPath"].as_str(), Some("/etc/weir"));
    let volume = pod["volumes"]
        .as_sequence()
        .unwrap()
        .iter()
        .find(|v| v["name"] == mount["name"])
        .unwrap();
    let mut files = BTreeSet::new();
    for source in volume["projected"]["sources"].as_sequence().unwrap() {
        for item in source
            .get("configMap")
            .or_else(|| source.get("secret"))
            .and_then(|s| s["items"].as_sequence())
            .unwrap()
        {
            files.insert(item["path"].as_str().unwrap().to_string());
        }
    }
    let want: BTreeSet<String> = ["weir.yaml", "tls/tls.crt", "tls/tls.key"]
        .map(String::from)
        .into();
    assert_eq!(files, want);
    let config: Value = serde_yaml_ng::from_str(
        &std::fs::read_to_string(Path::new(DEPLOY).join("edge/weir.yaml")).unwrap(),
    )
    .unwrap();
    let tls = &config["listeners"][0]["tls"];
    assert_eq!(tls["cert"].as_str(), Some("tls/tls.crt"));
    assert_eq!(tls["key"].as_str(), Some("tls/tls.key"));
}

// ---------------------------------------------------------------------------------------------
// Grafana.

/// Metric names in the metrics reference (docs/metrics.md).
fn documented_metrics() -> BTreeSet<String> {
    let readme = std::fs::read_to_string(METRICS_DOC).unwrap();
    readme
        .lines()
        .filter_map(|l| l.strip_prefix("| `weir_"))
        .filter_map(|l| l.split('`').next())
        .map(|m| format!("weir_{m}"))
        .collect()
}

fn metric_names(expr: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut rest = expr;
    while let Some(i) = rest.find("weir_") {
        let tail = &rest[i..];
        let end = tail
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(tail.len());
        names.push(tail[..end].to_string());
        rest = &tail[end..];
    }
    names
}

#[test]
fn deploy_grafana_dashboard_queries_weirs_metrics() {
    let path = Path::new(DEPLOY).join("grafana/weir-dashboard.json");
    let dash: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let documented = documented_metrics();
    assert!(documented.len() >= 10, "{documented:?}");
    let panels = dash["panels"].as_array().expect("panels");
    assert!(panels.len() >= 6);
    let mut used = BTreeSet::new();
    let mut ids = BTreeSet::new();
    for panel in panels {
        let title = panel["title"].as_str().unwrap_or("?");
        assert!(
            ids.insert(panel["id"].as_u64().unwrap()),
            "duplicate id: {title}"
        );
        assert!(panel["gridPos"]["w"].as_u64().is_some(), "{title}: gridPos");
        if panel["type"] == "row" {
            continue;
        }
        let targets = panel["targets"]
            .as_array()
            .unwrap_or_else(|| panic!("{title}"));
        assert!(!targets.is_empty(), "{title}: no targets");
        for t in targets {
            let expr = t["expr"].as_str().unwrap_or_default();
            assert!(expr.contains("weir_"), "{title}: {expr}");
            for m in metric_names(expr) {
                let base = ["_bucket", "_sum", "_count"]
                    .iter()
                    .find_map(|s| m.strip_suffix(s).filter(|b| documented.contains(*b)))
                    .unwrap_or(&m)
                    .to_string();
                assert!(
                    documented.contains(&base),
                    "{title}: {m} is not in docs/metrics.md"
                );
                used.insert(base);
            }
        }
    }
    for want in [
        "weir_canary_weight_ratio",
        "weir_requests_total",
        "weir_request_duration_seconds",
        "weir_upstream_errors_total",
        "weir_rollout_phase",
        "weir_rollout_aborts_total",
        "weir_analysis_metric_value",
    ] {
        assert!(used.contains(want), "no panel shows {want}");
    }
}

// ---------------------------------------------------------------------------------------------
// Kustomize.

fn kustomizations() -> Vec<PathBuf> {
    yaml_files()
        .into_iter()
        .filter(|f| f.file_name().is_some_and(|n| n == "kustomization.yaml"))
        .collect()
}

#[test]
fn deploy_kustomization_paths_exist() {
    let ks = kustomizations();
    assert!(ks.len() >= 3, "{ks:?}");
    for k in &ks {
        let doc = &documents(k)[0];
        let dir = k.parent().unwrap();
        let mut refs: Vec<String> = Vec::new();
        for key in ["resources", "components", "crds"] {
            if let Some(Value::Sequence(list)) = doc.get(key) {
                refs.extend(list.iter().filter_map(Value::as_str).map(String::from));
            }
        }
        for key in ["patches", "patchesStrategicMerge"] {
            if let Some(Value::Sequence(list)) = doc.get(key) {
                for p in list {
                    if let Some(path) = p.as_str().or_else(|| p.get("path").and_then(Value::as_str))
                    {
                        refs.push(path.to_string());
                    }
                }
            }
        }
        for key in ["configMapGenerator", "secretGenerator"] {
            if let Some(Value::Sequence(list)) = doc.get(key) {
                for g in list {
                    for f in g
                        .get("files")
                        .and_then(Value::as_sequence)
                        .into_iter()
                        .flatten()
                    {
                        let f = f.as_str().unwrap();
                        refs.push(f.rsplit_once('=').map_or(f, |(_, p)| p).to_string());
                    }
                }
            }
        }
        assert!(!refs.is_empty(), "{}: references nothing", rel(k));
        for r in refs {
            let target = dir.join(&r);
            if target.is_dir() {
                assert!(
                    target.join("kustomization.yaml").is_file(),
                    "{}: {r} is a directory without kustomization.yaml",
                    rel(k)
                );
            } else {
                assert!(target.is_file(), "{}: {r} does not exist", rel(k));
                documents(&target); // and parses
            }
        }
    }
}

/// Builds the overlays for real with kubectl's embedded kustomize (kubectl is part of this
/// project's machine image: env/packages lists it for the rust kind).
#[test]
fn deploy_kustomize_overlays_build() {
    for overlay in ["sidecar", "edge"] {
        let dir = Path::new(DEPLOY).join("kustomize/overlays").join(overlay);
        let out = std::process::Command::new("kubectl")
            .args(["kustomize", "--load-restrictor=LoadRestrictionsNone"])
            .arg(&dir)
            .output();
        let out = out.expect("kubectl must be installed to build the kustomize overlays");
        assert!(
            out.status.success(),
            "{overlay}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8(out.stdout).unwrap();
        let kinds: Vec<String> = serde_yaml_ng::Deserializer::from_str(&text)
            .map(|d| kind(&Value::deserialize(d).unwrap()).to_string())
            .collect();
        for want in [
            "Rollout",
            "Deployment",
            "ConfigMap",
            "RoleBinding",
            "AnalysisTemplate",
        ] {
            assert!(kinds.iter().any(|k| k == want), "{overlay}: no {want}");
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The weir containers: the image the Containerfile builds, locked down, writing nothing.

/// The image's name everywhere: Cargo.toml's version (the workspace's), as the Containerfile is
/// tagged in docs/image.md and as `weir inject` writes it.
fn weir_image() -> String {
    format!("weir:{}", env!("CARGO_PKG_VERSION"))
}

/// Each weir container of each pod template in `objects`: (what, pod spec, container).
fn weir_containers(objects: &[(String, Value)]) -> Vec<(String, &Value, &Value)> {
    let mut found = Vec::new();
    for (file, object) in objects {
        let pod = &object["spec"]["template"]["spec"];
        for container in pod["containers"].as_sequence().into_iter().flatten() {
            let image = container["image"].as_str().unwrap_or_default();
            let image_name = image.rsplit('/').next().unwrap_or_default();
            if container["name"].as_str() == Some("weir") || image_name.starts_with("weir:") {
                let what = format!("{file}: {}/{}", kind(object), name(object));
                found.push((what, pod, container));
            }
        }
    }
    found
}

fn assert_locked_down(what: &str, container: &Value) {
    assert_eq!(
        container["image"].as_str(),
        Some(weir_image().as_str()),
        "{what}"
    );
    let args: Vec<&str> = container["args"]
        .as_sequence()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    // The image's own CMD (Containerfile), spelt out so the manifests need not rely on it.
    assert_eq!(args, ["run", "--config", "/etc/weir/weir.yaml"], "{what}");
    let sc = &container["securityContext"];
    assert_eq!(sc["runAsNonRoot"].as_bool(), Some(true), "{what}");
    // The image's user: uid and gid 65532, owning nothing in the image.
    assert_eq!(sc["runAsUser"].as_i64(), Some(65532), "{what}");
    assert_eq!(sc["runAsGroup"].as_i64(), Some(65532), "{what}");
    assert_eq!(sc["readOnlyRootFilesystem"].as_bool(), Some(true), "{what}");
    assert_eq!(
        sc["allowPrivilegeEscalation"].as_bool(),
        Some(false),
        "{what}"
    );
    assert_eq!(
        sc["capabilities"]["drop"],
        Value::from(vec!["ALL"]),
        "{what}"
    );
    assert!(sc["capabilities"].get("add").is_none(), "{what}");
    assert_eq!(
        sc["seccompProfile"]["type"].as_str(),
        Some("RuntimeDefault"),
        "{what}"
    );
    assert!(sc
        .get("privileged")
        .is_none_or(|p| p.as_bool() == Some(false)));
}

fn objects_by_file() -> Vec<(String, Value)> {
    objects()
        .into_iter()
        .map(|(file, object)| (rel(&file), object))
        .collect()
}

#[test]
fn deploy_weir_runs_this_versions_image_as_non_root_on_a_read_only_root() {
    let objects = objects_by_file();
    let containers = weir_containers(&objects);
    let whats: Vec<&str> = containers.iter().map(|(w, _, _)| w.as_str()).collect();
    // The edge, the Gateway's and the sidecar Deployments.
    assert_eq!(containers.len(), 3, "{whats:?}");
    for (what, _, container) in &containers {
        assert_locked_down(what, container);
    }
    // And what the kustomize overlays render (kubectl's kustomize, as in the test below).
    for overlay in ["sidecar", "edge"] {
        let dir = Path::new(DEPLOY).join("kustomize/overlays").join(overlay);
        let out = std::process::Command::new("kubectl")
            .args(["kustomize", "--load-restrictor=LoadRestrictionsNone"])
            .arg(&dir)
            .output()
            .expect("kubectl must be installed to build the kustomize overlays");
        assert!(out.status.success(), "{overlay}");
        let text = String::from_utf8(out.stdout).unwrap();
        let rendered: Vec<(String, Value)> = serde_yaml_ng::Deserializer::from_str(&text)
            .map(|d| (format!("overlay {overlay}"), Value::deserialize(d).unwrap()))
            .collect();
        let containers = weir_containers(&rendered);
        assert_eq!(containers.len(), 1, "overlay {overlay}");
        for (what, _, container) in &containers {
            assert_locked_down(what, container);
        }
    }
}

/// Where a weir container writes that its read-only root filesystem forbids, or `None`: weir
/// writes only its config's `rollout.state_file` (and a temporary file beside it), which needs a
/// writable emptyDir or persistent volume mounted at that file's directory.
fn unwritable_state_file(
    objects: &[(String, Value)],
    pod: &Value,
    container: &Value,
) -> Option<String> {
    let mount = container["volumeMounts"]
        .as_sequence()?
        .iter()
        .find(|m| m["mountPath"].as_str() == Some("/etc/weir"))?;
    let volume = pod["volumes"]
        .as_sequence()?
        .iter()
        .find(|v| v["name"] == mount["name"])?;
    let config_map = volume["configMap"]["name"].as_str().or_else(|| {
        volume["projected"]["sources"]
            .as_sequence()?
            .iter()
            .find_map(|s| s["configMap"]["name"].as_str())
    })?;
    let data = objects
        .iter()
        .find(|(_, o)| kind(o) == "ConfigMap" && name(o) == config_map)
        .and_then(|(_, o)| o["data"]["weir.yaml"].as_str())
        .unwrap_or_else(|| panic!("no ConfigMap {config_map} with weir.yaml"));
    let config: Value = serde_yaml_ng::from_str(data).unwrap();
    let state_file = config["rollout"]["state_file"].as_str()?;
    let dir = Path::new(state_file).parent()?;
    let writable = container["volumeMounts"].as_sequence()?.iter().any(|m| {
        let backed = pod["volumes"].as_sequence().into_iter().flatten().any(|v| {
            v["name"] == m["name"]
                && (v.get("emptyDir").is_some() || v.get("persistentVolumeClaim").is_some())
        });
        m["mountPath"].as_str().map(Path::new) == Some(dir)
            && m["readOnly"].as_bool() != Some(true)
            && backed
    });
    (!writable).then(|| {
        format!(
            "rollout.state_file {state_file}: no writable volume at {}",
            dir.display()
        )
    })
}

#[test]
fn deploy_weir_writes_nothing_its_read_only_root_forbids() {
    let objects = objects_by_file();
    let containers = weir_containers(&objects);
    for (what, pod, container) in &containers {
        assert_eq!(
            unwritable_state_file(&objects, pod, container),
            None,
            "{what}"
        );
    }

    // The check sees a state file with nowhere to go, and the emptyDir that fixes it.
    let (_, pod, container) = containers
        .iter()
        .find(|(what, _, _)| what.contains("sidecar/"))
        .unwrap();
    let mut objects = objects.clone();
    let (_, cm) = objects
        .iter_mut()
        .find(|(_, o)| kind(o) == "ConfigMap" && name(o) == "frontend-weir")
        .unwrap();
    let with_state = format!(
        "{}\nrollout:\n  state_file: /var/lib/weir/shop.json\n",
        cm["data"]["weir.yaml"].as_str().unwrap()
    );
    cm["data"]["weir.yaml"] = Value::from(with_state);
    assert_eq!(
        unwritable_state_file(&objects, pod, container).as_deref(),
        Some("rollout.state_file /var/lib/weir/shop.json: no writable volume at /var/lib/weir")
    );
    let mut pod = (*pod).clone();
    let mut container = (*container).clone();
    pod["volumes"]
        .as_sequence_mut()
        .unwrap()
        .push(serde_yaml_ng::from_str("{name: state, emptyDir: {}}").unwrap());
    container["volumeMounts"]
        .as_sequence_mut()
        .unwrap()
        .push(serde_yaml_ng::from_str("{name: state, mountPath: /var/lib/weir}").unwrap());
    assert_eq!(unwritable_state_file(&objects, &pod, &container), None);
}
