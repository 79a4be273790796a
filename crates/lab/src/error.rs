//! The runner's one error type, and the exit status each kind maps to.

use std::fmt;

/// What kind of failure an [`Error`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// The scenario, an option or an output path is wrong. Nothing was run and no results
    /// directory was left behind.
    Input,
    /// A privilege, capability or tool is missing (live runs).
    Privilege,
    /// Building the testbed failed.
    Setup,
    /// The run itself failed.
    Run,
    /// SIGINT or SIGTERM stopped the run; everything was cleaned up, no results written.
    Interrupted,
    /// The results could not be written (or, after they were, the report could not be
    /// built: the results are kept).
    Output,
}

impl ErrorKind {
    /// Every kind, in the order declared.
    pub const ALL: [ErrorKind; 6] = [
        ErrorKind::Input,
        ErrorKind::Privilege,
        ErrorKind::Setup,
        ErrorKind::Run,
        ErrorKind::Interrupted,
        ErrorKind::Output,
    ];

    /// The kind's name as front ends show it (the Python exception's `kind`).
    pub fn name(self) -> &'static str {
        match self {
            ErrorKind::Input => "input",
            ErrorKind::Privilege => "privilege",
            ErrorKind::Setup => "setup",
            ErrorKind::Run => "run",
            ErrorKind::Interrupted => "interrupted",
            ErrorKind::Output => "output",
        }
    }

    /// The kind named `name` ([`ErrorKind::name`]).
    pub fn from_name(name: &str) -> Option<ErrorKind> {
        ErrorKind::ALL.into_iter().find(|k| k.name() == name)
    }
}

/// An error a person can act on: the message names the file, key or flag and what was
/// expected.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    pub kind: ErrorKind,
    pub message: String,
    /// Where in a scenario or campaign file the problem is, when it is in one (the
    /// message says it too): for front ends that point at it, such as an editor or the
    /// Python package's exception.
    pub location: Option<Location>,
}

/// A place in a scenario or campaign file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Location {
    pub file: std::path::PathBuf,
    /// 1-based line, when the key could be located.
    pub line: Option<usize>,
    /// Dotted key path, such as `topology.aqm.target` or `sweep."topology.rate"`.
    pub key: String,
}

impl Error {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Error {
        Error {
            kind,
            message: message.into(),
            location: None,
        }
    }
    pub fn input(message: impl Into<String>) -> Error {
        Error::new(ErrorKind::Input, message)
    }
    pub fn output(message: impl Into<String>) -> Error {
        Error::new(ErrorKind::Output, message)
    }

    /// The exit status of the `l4s` command for this error: 2 for bad input or a missing
    /// privilege (nothing was run), 130 after an interrupt, 1 otherwise.
    pub fn exit_code(&self) -> u8 {
        match self.kind {
            ErrorKind::Input | ErrorKind::Privilege => 2,
            ErrorKind::Interrupted => 130,
            ErrorKind::Setup | ErrorKind::Run | ErrorKind::Output => 1,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

impl From<l4s_scenario::ScenarioError> for Error {
    fn from(e: l4s_scenario::ScenarioError) -> Error {
        let mut err = Error::input(e.to_string());
        err.location = Some(Location {
            file: e.file,
            line: e.line,
            key: e.key,
        });
        err
    }
}

impl From<l4s_live::LiveError> for Error {
    fn from(e: l4s_live::LiveError) -> Error {
        let kind = match e.kind {
            l4s_live::LiveErrorKind::Input => ErrorKind::Input,
            l4s_live::LiveErrorKind::Privilege => ErrorKind::Privilege,
            l4s_live::LiveErrorKind::Setup => ErrorKind::Setup,
            l4s_live::LiveErrorKind::Run => ErrorKind::Run,
            l4s_live::LiveErrorKind::Interrupted => ErrorKind::Interrupted,
        };
        Error::new(kind, e.message)
    }
}

impl From<l4s_report::ReportError> for Error {
    fn from(e: l4s_report::ReportError) -> Error {
        Error::input(e.to_string())
    }
}
