//! Driver options: checked against the driver's list, with defaults and "did you mean".

use engine::driver::{ConfigError, ErrorClass, OptionSpec};
use engine::suggest::did_you_mean;
use std::collections::BTreeMap;
use std::time::Duration;

/// A driver's options, every name known and every value present (given or default).
pub struct Opts<'a> {
    given: &'a BTreeMap<String, String>,
    specs: &'static [OptionSpec],
}

impl<'a> Opts<'a> {
    /// Refuses any option the driver does not know.
    pub fn new(
        scheme: &str,
        given: &'a BTreeMap<String, String>,
        specs: &'static [OptionSpec],
    ) -> Result<Opts<'a>, ConfigError> {
        for k in given.keys() {
            if !specs.iter().any(|s| s.name == k) {
                let known: Vec<&str> = specs.iter().map(|s| s.name).collect();
                let list = if known.is_empty() {
                    format!("{scheme}: takes no options")
                } else {
                    format!("{scheme} options: {}", known.join(", "))
                };
                return Err(ConfigError::option(
                    k,
                    format!(
                        "unknown option; {}{list}",
                        did_you_mean(k, known.iter().copied())
                    ),
                )
                .hint("`dyno targets` lists every driver's options"));
            }
        }
        Ok(Opts { given, specs })
    }

    fn spec(&self, name: &str) -> &'static OptionSpec {
        self.specs
            .iter()
            .find(|s| s.name == name)
            .expect("drivers ask only for options they declare")
    }

    /// The value given, or the default.
    pub fn text(&self, name: &str) -> &str {
        self.given
            .get(name)
            .map_or(self.spec(name).default, String::as_str)
    }

    /// One of `allowed` (case-insensitive), lowercased.
    pub fn choice(&self, name: &str, allowed: &[&str]) -> Result<String, ConfigError> {
        let v = self.text(name).to_ascii_lowercase();
        if allowed.contains(&v.as_str()) {
            return Ok(v);
        }
        Err(ConfigError::option(
            name,
            format!(
                "{v:?} is not allowed; {}choose one of {}",
                did_you_mean(&v, allowed.iter().copied()),
                allowed.join(", ")
            ),
        ))
    }

    pub fn bool(&self, name: &str) -> Result<bool, ConfigError> {
        engine::units::parse_bool(self.text(name))
            .map_err(|e| ConfigError::option(name, e.to_string()))
    }

    pub fn duration(&self, name: &str) -> Result<Duration, ConfigError> {
        engine::units::parse_duration(self.text(name))
            .map_err(|e| ConfigError::option(name, e.to_string()))
    }

    pub fn size(&self, name: &str) -> Result<u64, ConfigError> {
        engine::units::parse_size(self.text(name))
            .map_err(|e| ConfigError::option(name, e.to_string()))
    }

    pub fn count(&self, name: &str) -> Result<u64, ConfigError> {
        self.text(name).parse().map_err(|_| {
            ConfigError::option(name, format!("{:?} is not a whole number", self.text(name)))
        })
    }

    pub fn error_class(&self, name: &str) -> Result<ErrorClass, ConfigError> {
        let v = self.text(name);
        ErrorClass::parse(v).ok_or_else(|| {
            let all: Vec<&str> = ErrorClass::ALL.iter().map(|c| c.as_str()).collect();
            ConfigError::option(
                name,
                format!(
                    "{v:?} is not an error class; {}classes: {}",
                    did_you_mean(v, all.iter().copied()),
                    all.join(", ")
                ),
            )
        })
    }

    /// A secret option (password, token): its value, or `None` when empty.
    pub fn secret(&self, name: &str) -> Option<String> {
        Some(self.text(name).to_string()).filter(|v| !v.is_empty())
    }

    /// Every option for the run record, with the named secrets replaced by `***` when set.
    pub fn resolved_hiding(&self, secrets: &[&str]) -> BTreeMap<String, String> {
        let mut r = self.resolved();
        for name in secrets {
            if let Some(v) = r.get_mut(*name).filter(|v| !v.is_empty()) {
                *v = "***".into();
            }
        }
        r
    }

    /// Every option with its value, for the run record.
    pub fn resolved(&self) -> BTreeMap<String, String> {
        self.specs
            .iter()
            .map(|s| (s.name.to_string(), self.text(s.name).to_string()))
            .collect()
    }
}
