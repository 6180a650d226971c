//! What the `dst serve` tests share.

/// A two-thread runtime for a real server and its clients (`Server::start` needs a
/// multi-threaded one).
pub(crate) fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}
