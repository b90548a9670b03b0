//! `weir inject` on the Argo Rollouts project's own manifests and on hand-written workloads.

use std::path::Path;

use serde_yaml_ng::Value;
use weir_control::inject::{inject, inject_report, InjectOptions, DEFAULT_IMAGE};

const EXAMPLES: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../fixtures/argo-rollouts/examples"
);

/// Helm templates are not YAML until rendered: injecting them must fail cleanly.
const NOT_YAML: &[&str] = &[
    "helm-blue-green_templates_rollout.yaml",
    "helm-blue-green_templates_services.yaml",
];

/// The text of each document, split the way a reader would: on `---` lines.
fn documents(text: &str) -> Vec<String> {
    let mut docs = vec![String::new()];
    for line in text.split_inclusive('\n') {
        let bare = line.trim_end();
        if bare == "---" || bare.starts_with("--- ") {
            docs.push(String::new());
        } else {
            docs.last_mut().unwrap().push_str(line);
        }
    }
    docs
}

fn parse(doc: &str) -> Value {
    serde_yaml_ng::from_str(doc).unwrap_or(Value::Null)
}

fn kind(v: &Value) -> &str {
    v.get("kind").and_then(Value::as_str).unwrap_or_default()
}

fn is_workload(v: &Value) -> bool {
    matches!(
        kind(v),
        "Rollout" | "Deployment" | "StatefulSet" | "DaemonSet" | "ReplicaSet"
    )
}

fn template(v: &Value) -> Option<&Value> {
    v.get("spec")?.get("template")
}

fn named<'a>(list: Option<&'a Value>, name: &str) -> Vec<&'a Value> {
    list.and_then(Value::as_sequence)
        .map(|s| {
            s.iter()
                .filter(|c| c.get("name").and_then(Value::as_str) == Some(name))
                .collect()
        })
        .unwrap_or_default()
}

fn weir_containers(t: &Value) -> Vec<&Value> {
    named(t.get("spec").and_then(|s| s.get("containers")), "weir")
}

/// Checks one injected pod template: one weir container as specified, the volume, annotations.
fn assert_injected(t: &Value, config_map: &str, what: &str) {
    let weir = weir_containers(t);
    assert_eq!(weir.len(), 1, "{what}: one weir container");
    let c = weir[0];
    assert_eq!(c["image"].as_str(), Some(DEFAULT_IMAGE), "{what}");
    let args: Vec<&str> = c["args"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    assert_eq!(args, ["run", "--config", "/etc/weir/weir.yaml"], "{what}");
    let ports: Vec<(&str, u64)> = c["ports"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["name"].as_str().unwrap(),
                p["containerPort"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        ports,
        [("weir-proxy", 15001), ("weir-admin", 9901)],
        "{what}"
    );
    assert_eq!(
        c["readinessProbe"]["httpGet"]["path"].as_str(),
        Some("/ready")
    );
    assert_eq!(
        c["livenessProbe"]["httpGet"]["path"].as_str(),
        Some("/live")
    );
    assert_eq!(
        c["readinessProbe"]["httpGet"]["port"].as_str(),
        Some("weir-admin")
    );
    assert!(c["resources"]["requests"]["cpu"].is_string(), "{what}");
    assert!(c["resources"]["requests"]["memory"].is_string(), "{what}");
    let sc = &c["securityContext"];
    assert_eq!(sc["runAsNonRoot"].as_bool(), Some(true), "{what}");
    // The image's user and group (Containerfile: USER 65532:65532).
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
    assert_eq!(
        sc["seccompProfile"]["type"].as_str(),
        Some("RuntimeDefault"),
        "{what}"
    );
    let mounts = named(c.get("volumeMounts"), "weir-config");
    assert_eq!(mounts.len(), 1, "{what}");
    assert_eq!(mounts[0]["mountPath"].as_str(), Some("/etc/weir"));

    let volumes = named(t["spec"].get("volumes"), "weir-config");
    assert_eq!(volumes.len(), 1, "{what}: one weir-config volume");
    assert_eq!(
        volumes[0]["configMap"]["name"].as_str(),
        Some(config_map),
        "{what}"
    );

    let a = &t["metadata"]["annotations"];
    assert_eq!(a["weir.dev/injected"].as_str(), Some("true"), "{what}");
    assert_eq!(a["prometheus.io/scrape"].as_str(), Some("true"), "{what}");
    assert_eq!(a["prometheus.io/port"].as_str(), Some("9901"), "{what}");
    assert_eq!(a["prometheus.io/path"].as_str(), Some("/metrics"), "{what}");
}

#[test]
fn inject_every_argo_example() {
    let opts = InjectOptions::default();
    let mut files: Vec<_> = std::fs::read_dir(EXAMPLES)
        .expect("fixtures")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    assert!(files.len() > 30, "fixtures missing: {}", files.len());

    let mut rollouts_injected = 0;
    let mut workload_refs = 0;
    for path in &files {
        let file = path.file_name().unwrap().to_str().unwrap();
        let input = std::fs::read_to_string(path).unwrap();
        if NOT_YAML.contains(&file) {
            let err = inject(&input, &opts).expect_err(file);
            assert!(err.to_string().contains("not valid YAML"), "{file}: {err}");
            assert!(err.line.is_some(), "{file}: {err}");
            continue;
        }
        let report = inject_report(&input, &opts).unwrap_or_else(|e| panic!("{file}: {e}"));
        let output = &report.output;

        let before = documents(&input);
        let after = documents(output);
        assert_eq!(before.len(), after.len(), "{file}: document count");
        for (i, (b, a)) in before.iter().zip(&after).enumerate() {
            let bv = parse(b);
            let av = parse(a);
            let with_template = is_workload(&bv) && template(&bv).is_some();
            if !with_template {
                assert_eq!(b, a, "{file}: document {i} must pass through verbatim");
                if kind(&bv) == "Rollout" {
                    assert!(bv["spec"].get("workloadRef").is_some(), "{file}");
                    workload_refs += 1;
                    assert!(
                        report.notes.iter().any(|n| n.contains("workloadRef")),
                        "{file}: {:?}",
                        report.notes
                    );
                }
                continue;
            }
            let name = bv["metadata"]["name"].as_str().unwrap();
            assert_injected(
                template(&av).unwrap(),
                &format!("{name}-weir"),
                &format!("{file} document {i}"),
            );
            if kind(&bv) == "Rollout" {
                rollouts_injected += 1;
            }
            // Nothing but the pod template changed.
            let mut a_rest = av.clone();
            let mut b_rest = bv.clone();
            a_rest["spec"]["template"] = Value::Null;
            b_rest["spec"]["template"] = Value::Null;
            assert_eq!(a_rest, b_rest, "{file}: document {i} outside the template");
            // The app's containers are untouched and come first.
            let app_before = template(&bv).unwrap()["spec"]["containers"]
                .as_sequence()
                .unwrap();
            let app_after = template(&av).unwrap()["spec"]["containers"]
                .as_sequence()
                .unwrap();
            assert_eq!(&app_after[..app_before.len()], &app_before[..], "{file}");
            assert_eq!(app_after.len(), app_before.len() + 1, "{file}");
        }

        // Idempotent: a second pass changes nothing, byte for byte.
        let again = inject(output, &opts).unwrap_or_else(|e| panic!("{file}: second pass: {e}"));
        assert_eq!(&again, output, "{file}: injecting twice");
    }
    assert_eq!(rollouts_injected, 19, "every Rollout with a template");
    assert_eq!(workload_refs, 2, "rollout-template-ref and workload-ref");
}

#[test]
fn inject_files_without_workloads_are_byte_for_byte() {
    for file in [
        "analysis-templates.yaml",
        "ambassador_echo-service.yaml",
        "notifications_configmap.yaml",
    ] {
        let input = std::fs::read_to_string(Path::new(EXAMPLES).join(file)).unwrap();
        let report = inject_report(&input, &InjectOptions::default()).unwrap();
        assert_eq!(report.output, input, "{file}");
        assert!(report.injected.is_empty(), "{file}");
    }
}

const APPS: &str = "\
# A Deployment and a StatefulSet, and a Service in between.
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: nginx:1.27
        ports:
        - containerPort: 8080
---
apiVersion: v1
kind: Service   # untouched, comment and all
metadata:
  name: web
spec:
  ports:
  - port: 80
    targetPort: 8080
---
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: db
spec:
  serviceName: db
  selector:
    matchLabels: {app: db}
  template:
    metadata:
      labels: {app: db}
      annotations:
        team: storage
    spec:
      volumes:
      - name: data
        emptyDir: {}
      containers:
      - name: db
        image: postgres:16
";

#[test]
fn inject_deployment_and_statefulset() {
    let opts = InjectOptions::default();
    let report = inject_report(APPS, &opts).unwrap();
    assert_eq!(report.injected, ["Deployment/web", "StatefulSet/db"]);
    let docs = documents(&report.output);
    assert_eq!(docs.len(), 3);
    assert_eq!(docs[1], documents(APPS)[1], "the Service is verbatim");

    let web = parse(&docs[0]);
    assert_injected(template(&web).unwrap(), "web-weir", "Deployment");
    let db = parse(&docs[2]);
    let t = template(&db).unwrap();
    assert_injected(t, "db-weir", "StatefulSet");
    assert_eq!(
        t["metadata"]["annotations"]["team"].as_str(),
        Some("storage")
    );
    assert_eq!(t["spec"]["volumes"].as_sequence().unwrap().len(), 2);
    assert!(
        report.notes.iter().any(|n| n.contains("comments")),
        "the dropped comment is noted: {:?}",
        report.notes
    );
    assert_eq!(inject(&report.output, &opts).unwrap(), report.output);
}

#[test]
fn inject_options_are_used() {
    let opts = InjectOptions {
        image: "registry.example/weir:1.2.3".into(),
        image_pull_policy: Some("Always".into()),
        config_map: Some("shared-weir".into()),
        proxy_port: 16001,
        admin_port: 19901,
        ..InjectOptions::default()
    };
    let out = inject(APPS, &opts).unwrap();
    let web = parse(&documents(&out)[0]);
    let t = template(&web).unwrap();
    let c = weir_containers(t)[0];
    assert_eq!(c["image"].as_str(), Some("registry.example/weir:1.2.3"));
    assert_eq!(c["imagePullPolicy"].as_str(), Some("Always"));
    assert_eq!(c["ports"][0]["containerPort"].as_u64(), Some(16001));
    assert_eq!(c["ports"][1]["containerPort"].as_u64(), Some(19901));
    assert_eq!(
        t["spec"]["volumes"][0]["configMap"]["name"].as_str(),
        Some("shared-weir")
    );
    assert_eq!(
        t["metadata"]["annotations"]["prometheus.io/port"].as_str(),
        Some("19901")
    );
}

#[test]
fn inject_list_items_and_daemonset() {
    let input = "\
apiVersion: v1
kind: List
items:
- apiVersion: apps/v1
  kind: DaemonSet
  metadata: {name: agent}
  spec:
    selector: {matchLabels: {app: agent}}
    template:
      metadata: {labels: {app: agent}}
      spec:
        containers: [{name: agent, image: agent:1}]
- apiVersion: v1
  kind: ConfigMap
  metadata: {name: agent-weir}
  data: {weir.yaml: \"x\"}
";
    let report = inject_report(input, &InjectOptions::default()).unwrap();
    assert_eq!(report.injected, ["List items[0]: DaemonSet/agent"]);
    let list = parse(&report.output);
    assert_injected(
        template(&list["items"][0]).unwrap(),
        "agent-weir",
        "DaemonSet",
    );
    assert_eq!(list["items"][1], parse(input)["items"][1]);
    let again = inject(&report.output, &InjectOptions::default()).unwrap();
    assert_eq!(again, report.output);
}

#[test]
fn inject_leaves_existing_sidecar_and_opt_out_alone() {
    let existing = "\
apiVersion: apps/v1
kind: Deployment
metadata: {name: a}
spec:
  template:
    spec:
      containers: [{name: app, image: app}, {name: weir, image: weir:0.0.9}]
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: b
  annotations: {weir.dev/inject: disabled}
spec:
  template:
    spec:
      containers: [{name: app, image: app}]
";
    let report = inject_report(existing, &InjectOptions::default()).unwrap();
    assert_eq!(report.output, existing);
    assert!(report.injected.is_empty());
    assert_eq!(report.notes.len(), 2, "{:?}", report.notes);
}

#[test]
fn inject_keeps_the_apps_own_scrape_annotations() {
    let input = "\
apiVersion: apps/v1
kind: Deployment
metadata: {name: a}
spec:
  template:
    metadata:
      annotations: {prometheus.io/scrape: \"true\", prometheus.io/port: \"8080\"}
    spec:
      containers: [{name: app, image: app}]
";
    let report = inject_report(input, &InjectOptions::default()).unwrap();
    let v = parse(&report.output);
    let a = &template(&v).unwrap()["metadata"]["annotations"];
    assert_eq!(a["prometheus.io/port"].as_str(), Some("8080"));
    assert_eq!(a["prometheus.io/path"].as_str(), Some("/metrics"));
    assert!(
        report.notes.iter().any(|n| n.contains("PodMonitor")),
        "{:?}",
        report.notes
    );
}

#[test]
fn inject_errors_name_document_and_kind() {
    let opts = InjectOptions::default();
    // Malformed YAML in the second document.
    let bad = "apiVersion: v1\nkind: Service\nmetadata: {name: s}\n---\nkind: Deployment\nspec: [a, b\n  c: d\n";
    let err = inject(bad, &opts).unwrap_err();
    assert_eq!(err.document, 2, "{err}");
    assert_eq!(err.object, "Deployment", "{err}");
    assert!(
        err.to_string().starts_with("document 2 (Deployment)"),
        "{err}"
    );
    assert!(err.line.is_some_and(|l| l >= 5), "{err}");

    // A workload whose containers are not a list.
    let wrong = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: w}\nspec:\n  template:\n    spec:\n      containers: nope\n";
    let err = inject(wrong, &opts).unwrap_err();
    assert_eq!((err.document, err.object.as_str()), (1, "Deployment/w"));
    assert!(err.message.contains("containers"), "{err}");

    // A port the sidecar needs is taken.
    let clash = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: c}\nspec:\n  template:\n    spec:\n      containers: [{name: app, image: a, ports: [{containerPort: 9901}]}]\n";
    let err = inject(clash, &opts).unwrap_err();
    assert!(err.message.contains("9901"), "{err}");

    // A Deployment without a template.
    let err = inject(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: n}\nspec: {}\n",
        &opts,
    )
    .unwrap_err();
    assert!(err.message.contains("spec.template"), "{err}");

    // Garbage of all sorts: an error or a pass-through, never a panic.
    for junk in [
        "",
        "---",
        "--- \n---\n",
        "\t\u{0}",
        "[",
        "{a: [}",
        "kind: Deployment\napiVersion: apps/v1\nspec: 3\n",
        "kind: Rollout\napiVersion: argoproj.io/v1alpha1\nspec: {template: 7}\n",
        "apiVersion: v1\nkind: List\nitems: 5\n",
        "a: &x [*x]\n",
        "- 1\n- 2\n",
    ] {
        let _ = inject(junk, &opts);
    }
}

#[test]
fn inject_keeps_separators_and_leading_comments() {
    let input = "# header\n---\n# only a comment\n--- # marker comment\napiVersion: v1\nkind: Service\nmetadata: {name: s}\n...\n";
    assert_eq!(inject(input, &InjectOptions::default()).unwrap(), input);
}

#[test]
fn inject_mounts_a_certificate_secret_for_mutual_tls() {
    let opts = InjectOptions {
        tls_secret: Some("web-weir-tls".into()),
        ..InjectOptions::default()
    };
    let out = inject(APPS, &opts).unwrap();
    let web = parse(&documents(&out)[0]);
    let t = template(&web).unwrap();
    let volume = named(t["spec"].get("volumes"), "weir-tls");
    assert_eq!(volume.len(), 1);
    assert_eq!(
        volume[0]["secret"]["secretName"].as_str(),
        Some("web-weir-tls")
    );
    let c = weir_containers(t)[0];
    let mount = named(c.get("volumeMounts"), "weir-tls");
    assert_eq!(mount[0]["mountPath"].as_str(), Some("/etc/weir/tls"));
    assert_eq!(mount[0]["readOnly"].as_bool(), Some(true));
    // Without the option, no certificate volume.
    let plain = parse(&documents(&inject(APPS, &InjectOptions::default()).unwrap())[0]);
    assert!(named(template(&plain).unwrap()["spec"].get("volumes"), "weir-tls").is_empty());
}
