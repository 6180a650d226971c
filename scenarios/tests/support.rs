//! What the `dst serve` tests share.

/// A two-thread runtime for a real server and its clients (`Server::start` needs a
/// multi-threaded one): real sockets, so a real runtime, not a simulation's door.
pub(crate) fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// The body of `GET url` as text, through umi-core's reqwest transport (a served
/// scope's `/umi/trace`, `/umi/marks`, ...).
pub(crate) async fn get_text(url: &str) -> String {
    use futures::StreamExt;
    use umi_core::llm::transport::{HttpRequest, ReqwestTransport, Transport};
    let response = ReqwestTransport::new()
        .unwrap()
        .send(HttpRequest {
            method: "GET",
            url: url.to_owned(),
            headers: Vec::new(),
            body: Vec::new(),
        })
        .await
        .unwrap();
    let bytes: Vec<u8> = response
        .body
        .filter_map(|r| async move { r.ok() })
        .concat()
        .await;
    String::from_utf8(bytes).unwrap()
}
