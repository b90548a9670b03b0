//! `Upgrade` (WebSocket and the like): once the upstream says 101, the two connections are
//! spliced and bytes flow both ways until either side closes.

use http::{Response, StatusCode};
use hyper::upgrade::OnUpgrade;
use hyper_util::rt::TokioIo;

use super::body::ResponseBody;

pub fn tunnel(client: OnUpgrade, resp: &mut Response<ResponseBody>) {
    if resp.status() != StatusCode::SWITCHING_PROTOCOLS {
        return;
    }
    let ResponseBody::Upstream(_) = resp.body() else {
        return;
    };
    let upstream = hyper::upgrade::on(&mut *resp);
    tokio::spawn(async move {
        let (client, upstream) = match tokio::try_join!(client, upstream) {
            Ok(pair) => pair,
            Err(err) => {
                tracing::debug!(error = %err, "upgrade did not complete");
                return;
            }
        };
        let (mut client, mut upstream) = (TokioIo::new(client), TokioIo::new(upstream));
        if let Err(err) = tokio::io::copy_bidirectional(&mut client, &mut upstream).await {
            tracing::debug!(error = %err, "upgraded connection ended");
        }
    });
}
