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

use crate::status_view::render;
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
    if status == 404 {
        return Err(anyhow!(
            "the weir at {} runs no rollout (its config has no `rollout:` section)",
            remote.admin
        ));
    }
    let json =
        serde_json::from_slice(&body).map_err(|e| anyhow!("unexpected answer ({status}): {e}"))?;
    Ok((status, json))
}

pub async fn status(remote: &Remote, watch: bool) -> anyhow::Result<()> {
    loop {
        let (code, answer) = call(remote, "GET", "/rollout").await?;
        if code != 200 {
            return Err(anyhow!(
                "{}",
                answer["error"].as_str().unwrap_or("no rollout to show")
            ));
        }
        let status: RolloutStatus = serde_json::from_value(answer)
            .map_err(|e| anyhow!("an answer from /rollout that is not a rollout status: {e}"))?;
        if watch {
            // Clear the screen and draw again, like `kubectl argo rollouts get --watch`.
            print!("\x1b[2J\x1b[H");
        }
        print!("{}", render(&status));
        if !watch {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

pub async fn command(remote: &Remote, command: Command) -> anyhow::Result<()> {
    let target = match command {
        Command::Promote => "/rollout/promote",
        Command::PromoteFull => "/rollout/promote?full=true",
        Command::Abort => "/rollout/abort",
        Command::Retry => "/rollout/retry",
    };
    let (status, answer) = call(remote, "POST", target).await?;
    match answer["ok"].as_str() {
        Some(done) if status == 200 => {
            println!("{done}");
            Ok(())
        }
        _ => Err(anyhow!("{}", answer["error"].as_str().unwrap_or("refused"))),
    }
}
