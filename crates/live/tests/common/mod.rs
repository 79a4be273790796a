//! Helpers shared by the live integration tests.
#![allow(dead_code)]

use l4s_fwd::netns::RunId;

/// Root is needed; outside CI a non-root run skips with a message, in CI it fails.
pub fn root() -> bool {
    if l4s_live::run::is_root() {
        return true;
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "the live tests need root (CI runs as root)"
    );
    eprintln!("skipped: the live tests need root");
    false
}

/// No namespace of run `id` is left.
pub fn no_namespaces_left(id: &RunId) {
    let left: Vec<String> = l4s_fwd::netns::list_netns()
        .unwrap()
        .into_iter()
        .filter(|n| n.starts_with(&id.prefix()))
        .collect();
    assert!(left.is_empty(), "namespaces left behind: {left:?}");
}
