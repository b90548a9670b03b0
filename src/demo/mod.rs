//! `weir demo`: weir on a built-in default. Two built-in backends, a 20 % canary split, a
//! sample of requests through the proxy to show the split, then it keeps serving.

mod backend;

use std::net::SocketAddr;
use std::path::Path;

use anyhow::{anyhow, Context};
use http_body_util::Empty;
use hyper::client::conn::http1;
use hyper_util::rt::TokioIo;

use crate::serve::{start, wait_for_stop_signal};

#[derive(clap::Args)]
pub struct DemoArgs {
    /// Where the proxy listens.
    #[arg(long, default_value = "127.0.0.1:8080")]
    listen: SocketAddr,
    /// Where the admin endpoint listens.
    #[arg(long, default_value = "127.0.0.1:9901")]
    admin: SocketAddr,
    /// Canary weight in percent.
    #[arg(long, default_value_t = 20.0)]
    weight: f64,
    /// Requests sent through the proxy to show the split.
    #[arg(long, default_value_t = 1000)]
    sample: u32,
    /// Exit after the sample instead of serving until Ctrl-C.
    #[arg(long)]
    sample_only: bool,
}

pub async fn run(args: DemoArgs) -> anyhow::Result<()> {
    let stable = backend::start("stable")
        .await
        .context("starting the stable backend")?;
    let canary = backend::start("canary")
        .await
        .context("starting the canary backend")?;
    let yaml = format!(
        "listeners: [{{name: demo, address: \"{listen}\"}}]\n\
         admin: {{address: \"{admin}\"}}\n\
         routes:\n\
         - name: demo\n  stable: {{addresses: [\"{stable}\"]}}\n  canary: {{addresses: [\"{canary}\"]}}\n  canary_weight: {weight}\n",
        listen = args.listen,
        admin = args.admin,
        weight = args.weight,
    );
    let config = weir_control::config::from_str(&yaml, Path::new("<built-in demo config>"))
        .map_err(|errors| anyhow!("{errors}"))?;
    let running = start(config).await?;
    let proxy = running.listeners[0];
    println!("weir demo: http://{proxy} splits between stable ({stable}) and canary ({canary}) at {}% canary", args.weight);
    println!(
        "           admin: http://{}/routes  http://{}/metrics",
        running.admin, running.admin
    );

    let (to_stable, to_canary) = sample(proxy, args.sample).await?;
    let total = (to_stable + to_canary).max(1) as f64;
    println!(
        "sample of {}: stable {to_stable} ({:.1}%), canary {to_canary} ({:.1}%)",
        args.sample,
        100.0 * to_stable as f64 / total,
        100.0 * to_canary as f64 / total
    );
    if !args.sample_only {
        println!("serving until Ctrl-C; try: curl -s http://{proxy}/");
        wait_for_stop_signal().await?;
    }
    running.drain().await;
    Ok(())
}

/// Sends `n` requests on one keep-alive connection and counts who answered.
async fn sample(proxy: SocketAddr, n: u32) -> anyhow::Result<(u32, u32)> {
    let tcp = tokio::net::TcpStream::connect(proxy)
        .await
        .context("connecting to the demo proxy")?;
    let (mut sender, conn) = http1::handshake::<_, Empty<bytes::Bytes>>(TokioIo::new(tcp)).await?;
    tokio::spawn(conn);
    let (mut stable, mut canary) = (0, 0);
    for _ in 0..n {
        sender.ready().await?;
        let req = http::Request::get("/")
            .header("host", "demo")
            .body(Empty::new())?;
        let resp = sender.send_request(req).await?;
        match resp.headers().get("x-backend").map(|v| v.as_bytes()) {
            Some(b"stable") => stable += 1,
            Some(b"canary") => canary += 1,
            _ => {
                return Err(anyhow!(
                    "unexpected answer from the proxy: {}",
                    resp.status()
                ))
            }
        }
    }
    Ok((stable, canary))
}
