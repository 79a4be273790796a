//! What the report's test programs share.

/// A fresh folder for one test, removed when the returned guard drops (pass or fail).
pub fn tmpdir(tag: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("l4s-report-test-")
        .suffix(&format!("-{tag}"))
        .tempdir()
        .unwrap()
}
