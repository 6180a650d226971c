//! Golden files as insta snapshots in `tests/golden/`, one record per line: a change shows
//! as the lines (events) it touches, with insta's diff naming each, and is reviewed with
//! `cargo insta review` (or accepted with `INSTA_UPDATE=always cargo test ...`). CI needs
//! no cargo-insta: a mismatch fails the test with the diff.

use std::path::Path;

/// Checks `rendered` against the snapshot `name` (`tests/golden/<name>.snap`); `what`
/// says what a change means and how to accept it on purpose (shown with the diff).
pub(crate) fn check(name: &str, rendered: &str, what: &str) {
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden"));
    settings.set_prepend_module_to_snapshot(false);
    settings.set_omit_expression(true);
    settings.set_description(what);
    settings.bind(|| insta::assert_snapshot!(name, rendered));
}
