//! The one error type of this crate. Every variant says what failed and, where a person can
//! act on it, what to do (DESIGN.md principle 6).

use std::io;

/// Anything that can go wrong while building namespaces or forwarding.
#[derive(Debug, thiserror::Error)]
pub enum FwdError {
    /// An external command (`ip`, `ethtool`) ran and failed.
    #[error("`{command}` failed: {message}")]
    Command { command: String, message: String },
    /// An external program is not installed.
    #[error("`{tool}` was not found: {hint}")]
    MissingTool { tool: &'static str, hint: &'static str },
    /// The process lacks a capability.
    #[error(
        "{what} needs {capability}: run as root (e.g. `sudo {rerun}`) or grant the capability \
         (`sudo setcap cap_net_raw,cap_net_admin+ep <path to the l4s binary>`)"
    )]
    Privilege {
        what: String,
        capability: &'static str,
        rerun: String,
    },
    /// A system call failed.
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: io::Error,
    },
    /// A configuration value that cannot work; `key` is the option or field name.
    #[error("{key}: {message}")]
    Config { key: String, message: String },
}

impl FwdError {
    pub(crate) fn io(what: impl Into<String>, source: io::Error) -> FwdError {
        FwdError::Io {
            what: what.into(),
            source,
        }
    }

    /// `e` (an OS error, as the `sys` wrappers return it), or
    /// [`FwdError::Privilege`] when it is EPERM/EACCES.
    pub(crate) fn from_os(what: impl Into<String>, e: io::Error, capability: &'static str) -> FwdError {
        let what = what.into();
        match e.raw_os_error() {
            Some(libc::EPERM) | Some(libc::EACCES) => FwdError::Privilege {
                what,
                capability,
                rerun: std::env::args().collect::<Vec<_>>().join(" "),
            },
            _ => FwdError::Io { what, source: e },
        }
    }

    pub(crate) fn config(key: &str, message: impl Into<String>) -> FwdError {
        FwdError::Config {
            key: key.to_string(),
            message: message.into(),
        }
    }
}
