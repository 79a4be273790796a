//! How messages name the options a run was given, by the front end that gave them.

/// The front end a run or campaign was asked from: how messages name the options it was
/// given (`l4s`'s flags or the Python package's keyword arguments).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Caller {
    /// The `l4s` command: `--out`, `--variant NAME`.
    #[default]
    Cli,
    /// The Python package: `out=`, `variant='NAME'`.
    Python,
}

/// The Python package's keyword for the `l4s` flag `name` (without its dashes): the same
/// word except where the two differ.
fn keyword(name: &str) -> &str {
    match name {
        "snapshot-interval" => "snapshots",
        other => other,
    }
}

impl Caller {
    /// The option `name` (the flag without its dashes) as this front end writes it when it
    /// is given: `--out`, `out=`; `--snapshot-interval`, `snapshots=`.
    pub fn option(self, name: &str) -> String {
        match self {
            Caller::Cli => format!("--{name}"),
            Caller::Python => format!("{}=", keyword(name)),
        }
    }
    /// The option `name` given the text `value`: `--variant l4s`, `variant='l4s'`.
    pub fn option_value(self, name: &str, value: &str) -> String {
        match self {
            Caller::Cli => format!("--{name} {value}"),
            Caller::Python => format!("{}='{value}'", keyword(name)),
        }
    }
    /// The option `name` given the number `value`: `--jobs 4`, `jobs=4`.
    pub fn option_number(self, name: &str, value: impl std::fmt::Display) -> String {
        match self {
            Caller::Cli => format!("--{name} {value}"),
            Caller::Python => format!("{}={value}", keyword(name)),
        }
    }
    /// The option `name` turned off: `--snapshot-interval 0`, `snapshots=None`.
    pub fn option_off(self, name: &str) -> String {
        match self {
            Caller::Cli => format!("--{name} 0"),
            Caller::Python => format!("{}=None", keyword(name)),
        }
    }
    /// A scenario key set for the run: `--set flows.bulk.cc`, `set['flows.bulk.cc']`.
    pub fn set_key(self, key: &str) -> String {
        match self {
            Caller::Cli => format!("--set {key}"),
            Caller::Python => format!("set['{key}']"),
        }
    }
    /// The switch `name` turned on: `--update`, `update=True`.
    pub fn switch(self, name: &str) -> String {
        match self {
            Caller::Cli => format!("--{name}"),
            Caller::Python => format!("{}=True", keyword(name)),
        }
    }
}
