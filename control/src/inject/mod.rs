//! `weir inject`: add the weir sidecar to the pod templates of Kubernetes workloads, like
//! `linkerd inject`.
//!
//! The input is multi-document Kubernetes YAML. Each pod template (`spec.template` of a
//! Deployment, StatefulSet, DaemonSet, ReplicaSet or Argo Rollout, also inside a `List`'s items)
//! gets:
//! - a `weir` container running `weir run --config /etc/weir/weir.yaml`, with the proxy and admin
//!   ports, readiness (`/ready`) and liveness (`/live`) probes on the admin port, resource
//!   requests and a locked-down securityContext (non-root as the image's user 65532, read-only
//!   root filesystem — weir writes nothing but a configured `rollout.state_file` —, no
//!   privilege escalation, no capabilities, the runtime's seccomp profile);
//! - a `weir-config` volume from a ConfigMap (default `<workload-name>-weir`) holding
//!   `weir.yaml`, mounted read-only at `/etc/weir`;
//! - with `tls_secret`, a `weir-tls` volume from that Secret (cert-manager's `tls.crt`,
//!   `tls.key`, `ca.crt`), mounted read-only at `/etc/weir/tls`, for mutual TLS on both legs
//!   (docs/mtls.md: weir.yaml points the listener's `tls` and `upstream_defaults.tls` at it);
//! - the scrape annotations of the admin port (`prometheus.io/scrape`, `/port`, `/path`) and
//!   `weir.dev/injected: "true"`.
//!
//! The ConfigMap is not written here: its `weir.yaml` must put the admin listener on
//! `0.0.0.0:<admin port>` (kubelet's probes and Prometheus come from outside the pod) and the
//! proxy listener on the proxy port (see `deploy/sidecar/`).
//!
//! Documents are split on `---` lines. A document that is not changed is written back byte for
//! byte; a changed one is re-serialized, which drops its comments and normalizes its layout.
//! Injecting twice changes nothing: a pod template with a `weir` container or the
//! `weir.dev/injected` annotation is left alone. `weir.dev/inject: disabled` on the workload or
//! its pod template opts out.

use std::fmt;

use serde_yaml_ng::{Mapping, Value};

/// The image when none is given: this weir's own version, never a moving `latest` tag.
pub const DEFAULT_IMAGE: &str = concat!("weir:", env!("CARGO_PKG_VERSION"));
/// Name of the injected container; its presence marks a pod template as injected.
pub const CONTAINER_NAME: &str = "weir";
/// Name of the injected config volume.
pub const VOLUME_NAME: &str = "weir-config";
/// Where the config volume is mounted; the config file is `weir.yaml` in it.
pub const CONFIG_DIR: &str = "/etc/weir";
/// Name of the injected certificate volume (`InjectOptions::tls_secret`).
pub const TLS_VOLUME_NAME: &str = "weir-tls";
/// Where the certificate volume is mounted: `tls.crt`, `tls.key`, `ca.crt` in it.
pub const TLS_DIR: &str = "/etc/weir/tls";
/// Set on every injected pod template.
pub const INJECTED_ANNOTATION: &str = "weir.dev/injected";
/// `disabled` on a workload or its pod template: leave it alone.
pub const INJECT_ANNOTATION: &str = "weir.dev/inject";

const PROXY_PORT_NAME: &str = "weir-proxy";
const ADMIN_PORT_NAME: &str = "weir-admin";

/// What to inject. `Default` gives the values `weir inject` uses without flags.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InjectOptions {
    /// Container image; default [`DEFAULT_IMAGE`].
    pub image: String,
    /// `imagePullPolicy`; omitted when `None` (Kubernetes' default then applies).
    pub image_pull_policy: Option<String>,
    /// ConfigMap holding `weir.yaml`; `None` means `<workload-name>-weir`.
    pub config_map: Option<String>,
    /// Port of weir's proxy listener in the pod (the app talks to `127.0.0.1:<port>`).
    pub proxy_port: u16,
    /// Port of weir's admin listener (probes, `/metrics`).
    pub admin_port: u16,
    pub cpu_request: String,
    pub memory_request: String,
    /// Memory limit; `None` for none. No CPU limit: throttling a proxy adds latency to every
    /// request of the pod.
    pub memory_limit: Option<String>,
    /// Numeric user the container runs as (with `runAsNonRoot`); the image's own (65532).
    pub run_as_user: i64,
    /// Numeric primary group the container runs as; the image's own (65532).
    pub run_as_group: i64,
    /// A Secret of a certificate (`tls.crt`, `tls.key`, `ca.crt`: what cert-manager writes)
    /// mounted at [`TLS_DIR`] for mutual TLS; None: no certificate volume.
    pub tls_secret: Option<String>,
}

impl Default for InjectOptions {
    fn default() -> Self {
        InjectOptions {
            image: DEFAULT_IMAGE.to_string(),
            image_pull_policy: None,
            config_map: None,
            proxy_port: 15001,
            admin_port: 9901,
            cpu_request: "50m".to_string(),
            memory_request: "64Mi".to_string(),
            memory_limit: Some("256Mi".to_string()),
            run_as_user: 65532,
            run_as_group: 65532,
            tls_secret: None,
        }
    }
}

/// Why the input could not be injected. Nothing is written when this is returned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InjectError {
    /// 1-based index of the YAML document.
    pub document: usize,
    /// `Kind/name` (or just the kind, or empty when even that is unknown).
    pub object: String,
    /// 1-based line in the whole input; known for YAML syntax errors.
    pub line: Option<usize>,
    pub message: String,
}

impl fmt::Display for InjectError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "document {}", self.document)?;
        if !self.object.is_empty() {
            write!(f, " ({})", self.object)?;
        }
        if let Some(line) = self.line {
            write!(f, ", line {line}")?;
        }
        write!(f, ": {}", self.message)
    }
}

impl std::error::Error for InjectError {}

/// The result of an injection, with what happened for the operator to read.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Injected {
    /// The YAML to write out.
    pub output: String,
    /// `Kind/name` of every workload that got the sidecar.
    pub injected: Vec<String>,
    /// Things the operator should know (workloads skipped and why, comments dropped, …), one
    /// line each, meant for stderr.
    pub notes: Vec<String>,
}

/// Injects the weir sidecar into every workload in `input`; see the module docs.
pub fn inject(input: &str, opts: &InjectOptions) -> Result<String, InjectError> {
    inject_report(input, opts).map(|r| r.output)
}

/// Like [`inject`], also saying what was injected and what was skipped.
pub fn inject_report(input: &str, opts: &InjectOptions) -> Result<Injected, InjectError> {
    let mut out = Injected::default();
    let mut number = 0;
    for segment in split_documents(input) {
        out.output.push_str(segment.separator);
        let text = segment.parse_text();
        if number == 0 && segment.separator.is_empty() && is_blank(&text) {
            // Comments or nothing before the first `---`: not a document.
            out.output.push_str(segment.body);
            continue;
        }
        number += 1;
        let mut cx = Doc {
            number,
            opts,
            out: &mut out,
        };
        match cx.document(&text, &segment)? {
            None => cx.out.output.push_str(segment.body),
            Some(value) => {
                if segment.has_content_after_marker() {
                    // The original marker line carried part of the document; write a plain one.
                    let len = cx.out.output.len() - segment.separator.len();
                    cx.out.output.truncate(len);
                    cx.out.output.push_str("---\n");
                }
                let yaml = serde_yaml_ng::to_string(&value).map_err(|e| cx.error("", None, e))?;
                cx.out.output.push_str(&yaml);
                cx.out.output.push_str(trailing_blank_lines(segment.body));
                if has_comments(segment.body) {
                    let msg = format!("document {number}: comments were dropped (re-serialized)");
                    cx.out.notes.push(msg);
                }
            }
        }
    }
    Ok(out)
}

/// One piece of the input: the `---` line that opens it (empty for the first) and the lines
/// up to the next one.
struct Segment<'a> {
    separator: &'a str,
    body: &'a str,
    /// 1-based line of the body's first line in the whole input.
    first_line: usize,
}

impl Segment<'_> {
    /// What follows `---` on the marker line, unless it is only a comment.
    fn marker_content(&self) -> &str {
        let rest = self.separator.trim_end_matches(['\n', '\r']);
        let rest = rest.strip_prefix("---").unwrap_or("").trim();
        if rest.starts_with('#') {
            ""
        } else {
            rest
        }
    }

    fn has_content_after_marker(&self) -> bool {
        !self.marker_content().is_empty()
    }

    fn parse_text(&self) -> String {
        let content = self.marker_content();
        if content.is_empty() {
            self.body.to_string()
        } else {
            format!("{content}\n{}", self.body)
        }
    }

    /// Maps a line of `parse_text` to a line of the whole input.
    fn input_line(&self, line: usize) -> usize {
        if self.has_content_after_marker() {
            (self.first_line + line).saturating_sub(2)
        } else {
            self.first_line + line - 1
        }
    }
}

fn is_document_marker(line: &str) -> bool {
    let line = line.trim_end_matches(['\n', '\r']);
    match line.strip_prefix("---") {
        Some(rest) => rest.is_empty() || rest.starts_with([' ', '\t']),
        None => false,
    }
}

fn split_documents(input: &str) -> Vec<Segment<'_>> {
    let mut segments = Vec::new();
    let mut separator = "";
    let mut body_start = 0;
    let mut first_line = 1;
    let mut pos = 0;
    for (i, line) in input.split_inclusive('\n').enumerate() {
        if is_document_marker(line) {
            segments.push(Segment {
                separator,
                body: &input[body_start..pos],
                first_line,
            });
            separator = &input[pos..pos + line.len()];
            body_start = pos + line.len();
            first_line = i + 2;
        }
        pos += line.len();
    }
    segments.push(Segment {
        separator,
        body: &input[body_start..],
        first_line,
    });
    segments
}

/// The blank lines that end a document, kept when it is re-serialized.
fn trailing_blank_lines(body: &str) -> &str {
    let content = body.trim_end_matches(['\n', '\r', ' ', '\t']);
    if content.is_empty() {
        return "";
    }
    let rest = &body[content.len()..];
    let rest = rest.trim_start_matches([' ', '\t']);
    rest.strip_prefix("\r\n")
        .or_else(|| rest.strip_prefix('\n'))
        .unwrap_or("")
}

fn is_blank(text: &str) -> bool {
    text.lines().all(|l| {
        let l = l.trim();
        l.is_empty() || l.starts_with('#')
    })
}

fn has_comments(text: &str) -> bool {
    text.lines()
        .any(|l| l.trim_start().starts_with('#') || l.contains(" #"))
}

/// The `kind:` of a document that is not valid YAML, for the error message.
fn guess_kind(text: &str) -> String {
    text.lines()
        .find_map(|l| l.strip_prefix("kind:"))
        .map(|k| k.trim().trim_matches(['"', '\'']).to_string())
        .unwrap_or_default()
}

struct Doc<'a, 'o> {
    number: usize,
    opts: &'a InjectOptions,
    out: &'o mut Injected,
}

impl Doc<'_, '_> {
    fn error(&self, object: &str, line: Option<usize>, msg: impl fmt::Display) -> InjectError {
        InjectError {
            document: self.number,
            object: object.to_string(),
            line,
            message: msg.to_string(),
        }
    }

    /// The changed document, or `None` to write it back as it was.
    fn document(&mut self, text: &str, segment: &Segment) -> Result<Option<Value>, InjectError> {
        if is_blank(text) {
            return Ok(None);
        }
        // More than one document in `text` (after a `...` line) is refused by from_str.
        let parsed =
            serde_yaml_ng::from_str(text).and_then(|mut v: Value| v.apply_merge().map(|()| v));
        let mut value = match parsed {
            Ok(v) => v,
            Err(e) => {
                let line = e.location().map(|l| segment.input_line(l.line()));
                let msg = format!("not valid YAML: {e}");
                return Err(self.error(&guess_kind(text), line, msg));
            }
        };
        let changed = self.object(&mut value, "")?;
        Ok(changed.then_some(value))
    }

    /// Injects one object (or the items of a `List`); true when something changed.
    fn object(&mut self, value: &mut Value, prefix: &str) -> Result<bool, InjectError> {
        let Value::Mapping(obj) = value else {
            return Ok(false);
        };
        let kind = obj.get("kind").and_then(Value::as_str).unwrap_or_default();
        let api = obj
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let group = if api.contains('/') {
            api.split('/').next().unwrap_or_default()
        } else {
            ""
        };
        let kind = kind.to_string();
        let meta = obj.get("metadata");
        let name = meta
            .and_then(|m| m.get("name"))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let label = if name.is_empty() {
            format!("{prefix}{kind}")
        } else {
            format!("{prefix}{kind}/{name}")
        };

        if kind.ends_with("List") && group.is_empty() {
            let Some(Value::Sequence(items)) = obj.get_mut("items") else {
                return Ok(false);
            };
            let mut changed = false;
            for (i, item) in items.iter_mut().enumerate() {
                changed |= self.object(item, &format!("{label} items[{i}]: "))?;
            }
            return Ok(changed);
        }

        let workload = matches!(
            (group, kind.as_str()),
            (
                "apps" | "extensions",
                "Deployment" | "StatefulSet" | "DaemonSet" | "ReplicaSet"
            ) | ("argoproj.io", "Rollout")
        );
        if !workload {
            return Ok(false);
        }
        if opted_out(meta) {
            self.note(format!(
                "{label}: {INJECT_ANNOTATION} is disabled, left alone"
            ));
            return Ok(false);
        }
        let Some(spec) = obj.get_mut("spec") else {
            return Err(self.error(&label, None, "spec is missing"));
        };
        let Value::Mapping(spec) = spec else {
            return Err(self.error(&label, None, "spec is not a mapping"));
        };
        let Some(template) = spec.get_mut("template") else {
            if kind == "Rollout" && spec.contains_key("workloadRef") {
                self.note(format!(
                    "{label}: uses spec.workloadRef and has no pod template, left alone; \
                     inject the workload it references instead"
                ));
                return Ok(false);
            }
            return Err(self.error(&label, None, "spec.template is missing"));
        };
        let config_map = match &self.opts.config_map {
            Some(c) => c.clone(),
            None if name.is_empty() => {
                let msg = "metadata.name is missing, so the ConfigMap cannot be named \
                           `<name>-weir`; give the ConfigMap name as an option";
                return Err(self.error(&label, None, msg));
            }
            None => format!("{name}-weir"),
        };
        let outcome = self
            .pod_template(template, &config_map)
            .map_err(|msg| self.error(&label, None, msg))?;
        match outcome {
            Outcome::Injected => {
                self.out.injected.push(label);
                return Ok(true);
            }
            Outcome::AlreadyInjected => {
                self.note(format!("{label}: already injected, left alone"));
            }
            Outcome::OptedOut => {
                let msg = format!("{label}: {INJECT_ANNOTATION} is disabled, left alone");
                self.note(msg);
            }
        }
        Ok(false)
    }

    fn note(&mut self, note: String) {
        self.out
            .notes
            .push(format!("document {}: {note}", self.number));
    }

    /// Adds the sidecar to one `spec.template`.
    fn pod_template(&mut self, template: &mut Value, config_map: &str) -> Result<Outcome, String> {
        let Value::Mapping(template) = template else {
            return Err("spec.template is not a mapping".into());
        };
        let meta = template.get("metadata");
        if opted_out(meta) {
            return Ok(Outcome::OptedOut);
        }
        if meta
            .and_then(|m| m.get("annotations"))
            .and_then(|a| a.get(INJECTED_ANNOTATION))
            .is_some()
        {
            return Ok(Outcome::AlreadyInjected);
        }
        let pod = match template.get_mut("spec") {
            Some(Value::Mapping(pod)) => pod,
            Some(_) => return Err("spec.template.spec is not a mapping".into()),
            None => return Err("spec.template.spec is missing".into()),
        };
        let containers = match pod.get("containers") {
            Some(Value::Sequence(c)) => c,
            Some(_) => return Err("spec.template.spec.containers is not a list".into()),
            None => return Err("spec.template.spec.containers is missing".into()),
        };
        if containers
            .iter()
            .any(|c| c.get("name").and_then(Value::as_str) == Some(CONTAINER_NAME))
        {
            return Ok(Outcome::AlreadyInjected);
        }
        let opts = self.opts;
        for list in ["containers", "initContainers"] {
            let Some(Value::Sequence(cs)) = pod.get(list) else {
                continue;
            };
            for c in cs {
                let cname = c.get("name").and_then(Value::as_str).unwrap_or("?");
                let Some(Value::Sequence(ports)) = c.get("ports") else {
                    continue;
                };
                for p in ports {
                    let port = p.get("containerPort").and_then(Value::as_u64);
                    for (what, want) in [("proxy", opts.proxy_port), ("admin", opts.admin_port)] {
                        if port == Some(u64::from(want)) {
                            return Err(format!(
                                "container {cname:?} already uses port {want}, weir's {what} \
                                 port; choose another one in the options and in weir.yaml"
                            ));
                        }
                    }
                }
            }
        }
        if let Some(Value::Sequence(volumes)) = pod.get("volumes") {
            for name in [VOLUME_NAME, TLS_VOLUME_NAME] {
                if volumes
                    .iter()
                    .any(|v| v.get("name").and_then(Value::as_str) == Some(name))
                {
                    return Err(format!("a volume named {name:?} already exists"));
                }
            }
        }

        match pod.get_mut("containers") {
            Some(Value::Sequence(c)) => c.push(self.container()),
            _ => unreachable!("checked above"),
        }
        let mut added = vec![map([
            ("name", s(VOLUME_NAME)),
            ("configMap", map([("name", s(config_map))])),
        ])];
        if let Some(secret) = &opts.tls_secret {
            added.push(map([
                ("name", s(TLS_VOLUME_NAME)),
                ("secret", map([("secretName", s(secret))])),
            ]));
        }
        match pod.get_mut("volumes") {
            Some(Value::Sequence(v)) => v.extend(added),
            Some(_) => return Err("spec.template.spec.volumes is not a list".into()),
            None => {
                pod.insert(s("volumes"), Value::Sequence(added));
            }
        }

        let meta = mapping_at(template, "metadata", "spec.template.metadata")?;
        let annotations = mapping_at(meta, "annotations", "spec.template.metadata.annotations")?;
        let admin = opts.admin_port.to_string();
        let wanted = [
            ("prometheus.io/scrape", "true"),
            ("prometheus.io/port", admin.as_str()),
            ("prometheus.io/path", "/metrics"),
        ];
        let mut kept = Vec::new();
        for (key, want) in wanted {
            match annotations.get(key) {
                Some(have) if have.as_str() != Some(want) => kept.push(key),
                Some(_) => {}
                None => {
                    annotations.insert(s(key), s(want));
                }
            }
        }
        annotations.insert(s(INJECTED_ANNOTATION), s("true"));
        if !kept.is_empty() {
            self.note(format!(
                "the pod template already has {} for another port, kept as it is; scrape weir's \
                 admin port {admin} with a PodMonitor (deploy/sidecar/podmonitor.yaml)",
                kept.join(", ")
            ));
        }
        Ok(Outcome::Injected)
    }

    fn container(&self) -> Value {
        let o = self.opts;
        let port = |name: &str, port: u16| {
            map([
                ("name", s(name)),
                ("containerPort", Value::from(port)),
                ("protocol", s("TCP")),
            ])
        };
        let probe = |path: &str, period: u64| {
            map([
                (
                    "httpGet",
                    map([("path", s(path)), ("port", s(ADMIN_PORT_NAME))]),
                ),
                ("periodSeconds", Value::from(period)),
                ("failureThreshold", Value::from(3)),
            ])
        };
        let mut resources = Mapping::new();
        resources.insert(
            s("requests"),
            map([("cpu", s(&o.cpu_request)), ("memory", s(&o.memory_request))]),
        );
        if let Some(limit) = &o.memory_limit {
            resources.insert(s("limits"), map([("memory", s(limit))]));
        }
        let mut c = Mapping::new();
        c.insert(s("name"), s(CONTAINER_NAME));
        c.insert(s("image"), s(&o.image));
        if let Some(policy) = &o.image_pull_policy {
            c.insert(s("imagePullPolicy"), s(policy));
        }
        let config = format!("{CONFIG_DIR}/weir.yaml");
        c.insert(
            s("args"),
            Value::Sequence(vec![s("run"), s("--config"), s(&config)]),
        );
        c.insert(
            s("ports"),
            Value::Sequence(vec![
                port(PROXY_PORT_NAME, o.proxy_port),
                port(ADMIN_PORT_NAME, o.admin_port),
            ]),
        );
        c.insert(s("readinessProbe"), probe("/ready", 5));
        c.insert(s("livenessProbe"), probe("/live", 10));
        c.insert(s("resources"), Value::Mapping(resources));
        c.insert(
            s("securityContext"),
            map([
                ("runAsNonRoot", Value::Bool(true)),
                ("runAsUser", Value::from(o.run_as_user)),
                ("runAsGroup", Value::from(o.run_as_group)),
                ("readOnlyRootFilesystem", Value::Bool(true)),
                ("allowPrivilegeEscalation", Value::Bool(false)),
                (
                    "capabilities",
                    map([("drop", Value::Sequence(vec![s("ALL")]))]),
                ),
                // With the above, what Pod Security's `restricted` level asks of a container.
                ("seccompProfile", map([("type", s("RuntimeDefault"))])),
            ]),
        );
        let mut mounts = vec![map([
            ("name", s(VOLUME_NAME)),
            ("mountPath", s(CONFIG_DIR)),
            ("readOnly", Value::Bool(true)),
        ])];
        if o.tls_secret.is_some() {
            mounts.push(map([
                ("name", s(TLS_VOLUME_NAME)),
                ("mountPath", s(TLS_DIR)),
                ("readOnly", Value::Bool(true)),
            ]));
        }
        c.insert(s("volumeMounts"), Value::Sequence(mounts));
        Value::Mapping(c)
    }
}

enum Outcome {
    Injected,
    AlreadyInjected,
    OptedOut,
}

/// `weir.dev/inject: disabled` in these metadata's annotations.
fn opted_out(meta: Option<&Value>) -> bool {
    meta.and_then(|m| m.get("annotations"))
        .and_then(|a| a.get(INJECT_ANNOTATION))
        .and_then(Value::as_str)
        .is_some_and(|v| v.eq_ignore_ascii_case("disabled"))
}

/// The mapping under `key`, created when missing (or null).
fn mapping_at<'m>(
    parent: &'m mut Mapping,
    key: &str,
    path: &str,
) -> Result<&'m mut Mapping, String> {
    let slot = parent.entry(s(key)).or_insert(Value::Null);
    if slot.is_null() {
        *slot = Value::Mapping(Mapping::new());
    }
    match slot {
        Value::Mapping(m) => Ok(m),
        _ => Err(format!("{path} is not a mapping")),
    }
}

fn s(text: &str) -> Value {
    Value::String(text.to_string())
}

fn map<const N: usize>(pairs: [(&str, Value); N]) -> Value {
    Value::Mapping(pairs.into_iter().map(|(k, v)| (s(k), v)).collect())
}
