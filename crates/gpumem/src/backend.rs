//! Which backing to run on, as the user names it: the ground floor's vocabulary, used by the
//! device (which opens it) and by errors (which name one this build left out).

use std::fmt;
use std::str::FromStr;

/// Which backing to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Backend {
    /// A hardware GPU through wgpu if there is one, else `cpu`.
    #[default]
    Auto,
    Wgpu,
    Cpu,
    Plan,
}

impl Backend {
    pub const NAMES: &str = "auto, wgpu, cpu or plan";
}

impl fmt::Display for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(match self {
            Backend::Auto => "auto",
            Backend::Wgpu => "wgpu",
            Backend::Cpu => "cpu",
            Backend::Plan => "plan",
        })
    }
}

impl FromStr for Backend {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "auto" => Ok(Backend::Auto),
            "wgpu" | "gpu" => Ok(Backend::Wgpu),
            "cpu" => Ok(Backend::Cpu),
            "plan" => Ok(Backend::Plan),
            _ => Err(format!(
                "unknown backend `{s}`: expected {}",
                Backend::NAMES
            )),
        }
    }
}
