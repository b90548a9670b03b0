//! `weir status|promote|abort|retry`: talk to a running weir's admin API.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{anyhow, Context};
use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper::client::conn::http1;
use hyper_util::rt::TokioIo;
use weir_control::rollout::Command;

use crate::status_view::{render, render_list};
use weir_control::rollout::status::RolloutSummary;
use weir_control::rollout::RolloutStatus;

#[derive(clap::Args)]
pub struct Remote {
    /// The admin address of the weir to talk to.
    #[arg(long, default_value = "127.0.0.1:9901", env = "WEIR_ADMIN")]
    admin: SocketAddr,
    /// File with the bearer token, when the admin listener is not on loopback.
    #[arg(long, env = "WEIR_TOKEN_FILE")]
    token_file: Option<PathBuf>,
}

async fn call(
    remote: &Remote,
    method: &str,
    target: &str,
) -> anyhow::Result<(u16, serde_json::Value)> {
    let tcp = tokio::net::TcpStream::connect(remote.admin)
        .await
        .with_context(|| format!("cannot reach weir's admin API at {}", remote.admin))?;
    let (mut sender, conn) = http1::handshake::<_, Empty<Bytes>>(TokioIo::new(tcp)).await?;
    tokio::spawn(conn);
    let mut req = http::Request::builder()
        .method(method)
        .uri(target)
        .header("host", remote.admin.to_string())
        // What the admin API asks of every change (no cross-site page can send it).
        .header("x-weir-admin", "cli");
    if let Some(file) = &remote.token_file {
        let token =
            std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
        req = req.header("authorization", format!("Bearer {}", token.trim()));
    }
    let resp = sender.send_request(req.body(Empty::new())?).await?;
    let status = resp.status().as_u16();
    let body = resp.into_body().collect().await?.to_bytes();
    match serde_json::from_slice(&body) {
        Ok(json) => Ok((status, json)),
        // Not the rollout API's answer: the admin listener's own 404.
        Err(_) if status == 404 => Err(anyhow!(
            "the weir at {} runs no rollout (its config has no `rollouts:` section)",
            remote.admin
        )),
        Err(e) => Err(anyhow!("unexpected answer ({status}): {e}")),
    }
}

/// The API's error, with the rollouts it names when it lists them.
fn refusal(answer: &serde_json::Value, fallback: &str) -> anyhow::Error {
    let error = answer["error"].as_str().unwrap_or(fallback);
    match answer["rollouts"].as_array() {
        Some(names) => {
            let names: Vec<&str> = names.iter().filter_map(|n| n.as_str()).collect();
            anyhow!("{error} (name one: {})", names.join(", "))
        }
        None => anyhow!("{error}"),
    }
}

/// `/rollouts/NAME` for a named rollout, `/rollout` for the only one.
fn base(name: Option<&str>) -> String {
    match name {
        Some(name) => format!("/rollouts/{name}"),
        None => "/rollout".to_string(),
    }
}

/// One rollout's view (named, or the only one), or with several and no name, a line each.
pub async fn status(remote: &Remote, name: Option<&str>, watch: bool) -> anyhow::Result<()> {
    loop {
        let view = match name {
            Some(name) => one(remote, name).await?,
            None => {
                let (code, answer) = call(remote, "GET", "/rollouts").await?;
                if code != 200 {
                    return Err(refusal(&answer, "no rollout to show"));
                }
                let list: Vec<RolloutSummary> = serde_json::from_value(answer["rollouts"].clone())
                    .map_err(|e| {
                        anyhow!("an answer from /rollouts that is not a list of rollouts: {e}")
                    })?;
                match list.as_slice() {
                    [only] => one(remote, &only.name).await?,
                    many => render_list(many),
                }
            }
        };
        if watch {
            // Clear the screen and draw again, like `kubectl argo rollouts get --watch`.
            print!("\x1b[2J\x1b[H");
        }
        print!("{view}");
        if !watch {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

async fn one(remote: &Remote, name: &str) -> anyhow::Result<String> {
    let (code, answer) = call(remote, "GET", &base(Some(name))).await?;
    if code != 200 {
        return Err(refusal(&answer, "no rollout to show"));
    }
    let status: RolloutStatus = serde_json::from_value(answer).map_err(|e| {
        anyhow!("an answer from /rollouts/{name} that is not a rollout status: {e}")
    })?;
    Ok(render(&status))
}

pub async fn command(remote: &Remote, name: Option<&str>, command: Command) -> anyhow::Result<()> {
    let action = match command {
        Command::Promote => "promote",
        Command::PromoteFull => "promote?full=true",
        Command::Abort => "abort",
        Command::Retry => "retry",
    };
    let target = format!("{}/{action}", base(name));
    let (status, answer) = call(remote, "POST", &target).await?;
    match answer["ok"].as_str() {
        Some(done) if status == 200 => {
            println!("{done}");
            Ok(())
        }
        _ => Err(refusal(&answer, "refused")),
    }
}
