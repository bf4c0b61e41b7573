//! Parsing the human units of plan files and URL options: durations and sizes.

use std::time::Duration;

/// Why a value with a unit could not be read. Each message names the text and what to write.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UnitError {
    #[error("{text:?} has no unit; write e.g. 100us, 2ms or 1s")]
    NoUnit { text: String },
    /// The number before the unit does not parse; `what` is the kind of value and `like` an
    /// example of it.
    #[error("{text:?} is not a {what}; write {like}")]
    NotA {
        text: String,
        what: &'static str,
        like: &'static str,
    },
    #[error("unknown {what} unit {unit:?} in {text:?}; use {known}")]
    UnknownUnit {
        text: String,
        unit: String,
        what: &'static str,
        known: &'static str,
    },
    #[error("{text:?} is too {large}")]
    TooLarge { text: String, large: &'static str },
}

/// Parses `250ns`, `100us`, `1.5ms`, `2s`, `1m`, `1h` (a bare `0` is zero).
pub fn parse_duration(text: &str) -> Result<Duration, UnitError> {
    let t = text.trim();
    if t == "0" {
        return Ok(Duration::ZERO);
    }
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .ok_or_else(|| UnitError::NoUnit { text: text.into() })?;
    let (num, unit) = t.split_at(split);
    let n: f64 = num.parse().map_err(|_| UnitError::NotA {
        text: text.into(),
        what: "duration",
        like: "e.g. 100us, 2ms or 1s",
    })?;
    let ns_per = match unit.trim() {
        "ns" => 1.0,
        "us" | "µs" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        "m" | "min" => 60e9,
        "h" => 3600e9,
        u => {
            return Err(UnitError::UnknownUnit {
                text: text.into(),
                unit: u.into(),
                what: "time",
                known: "ns, us, ms, s, m or h",
            });
        }
    };
    let ns = n * ns_per;
    if !ns.is_finite() || ns > 1e18 {
        return Err(UnitError::TooLarge {
            text: text.into(),
            large: "long",
        });
    }
    Ok(Duration::from_nanos(ns.round() as u64))
}

/// The shortest exact form of a duration that [`parse_duration`] reads back: `20us`, `1500us`,
/// `2s`, `0`.
pub fn duration_label(ns: u64) -> String {
    match ns {
        0 => "0".into(),
        n if n % 1_000_000_000 == 0 => format!("{}s", n / 1_000_000_000),
        n if n % 1_000_000 == 0 => format!("{}ms", n / 1_000_000),
        n if n % 1_000 == 0 => format!("{}us", n / 1_000),
        n => format!("{n}ns"),
    }
}

/// Parses a byte count: `300`, `4KiB`, `1MiB`, `1GiB`, `10kB` (powers of 1000 for kB/MB/GB).
pub fn parse_size(text: &str) -> Result<u64, UnitError> {
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: u64 = num.parse().map_err(|_| UnitError::NotA {
        text: text.into(),
        what: "size",
        like: "e.g. 300, 4KiB or 1MiB",
    })?;
    let mul = match unit.trim() {
        "" | "B" => 1,
        "KiB" => 1 << 10,
        "MiB" => 1 << 20,
        "GiB" => 1 << 30,
        "kB" | "KB" => 1_000,
        "MB" => 1_000_000,
        "GB" => 1_000_000_000,
        u => {
            return Err(UnitError::UnknownUnit {
                text: text.into(),
                unit: u.into(),
                what: "size",
                known: "B, KiB, MiB, GiB, kB, MB or GB",
            });
        }
    };
    n.checked_mul(mul).ok_or_else(|| UnitError::TooLarge {
        text: text.into(),
        large: "large",
    })
}

/// Parses a bit rate: `50mbit`, `1gbit`, `512kbit`, `1000` (bits per second; powers of 1000).
pub fn parse_bitrate(text: &str) -> Result<u64, UnitError> {
    let t = text.trim().to_ascii_lowercase();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: f64 = num.parse().map_err(|_| UnitError::NotA {
        text: text.into(),
        what: "bit rate",
        like: "e.g. 50mbit or 1gbit",
    })?;
    let unit = unit.trim().trim_end_matches("/s");
    let unit = match unit.strip_suffix("bps") {
        Some(prefix) => format!("{prefix}bit"),
        None => unit.to_string(),
    };
    let mul = match unit.as_str() {
        "" | "bit" | "b" => 1.0,
        "kbit" | "k" => 1e3,
        "mbit" | "m" => 1e6,
        "gbit" | "g" => 1e9,
        u => {
            return Err(UnitError::UnknownUnit {
                text: text.into(),
                unit: u.into(),
                what: "rate",
                known: "bit, kbit, mbit or gbit",
            });
        }
    };
    let v = n * mul;
    if !v.is_finite() || v > 1e13 {
        return Err(UnitError::TooLarge {
            text: text.into(),
            large: "large",
        });
    }
    Ok(v.round() as u64)
}

/// Parses `true`/`false` (also `1`/`0`, `yes`/`no`, `on`/`off`).
pub fn parse_bool(text: &str) -> Result<bool, UnitError> {
    match text.trim() {
        "true" | "1" | "yes" | "on" => Ok(true),
        "false" | "0" | "no" | "off" => Ok(false),
        _ => Err(UnitError::NotA {
            text: text.into(),
            what: "boolean",
            like: "true or false",
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("100us"), Ok(Duration::from_micros(100)));
        assert_eq!(parse_duration("1.5ms"), Ok(Duration::from_micros(1500)));
        assert_eq!(parse_duration("0"), Ok(Duration::ZERO));
        assert_eq!(parse_duration("2s"), Ok(Duration::from_secs(2)));
        assert_eq!(
            parse_duration("10").unwrap_err().to_string(),
            "\"10\" has no unit; write e.g. 100us, 2ms or 1s"
        );
        assert_eq!(
            parse_duration("3 parsecs").unwrap_err(),
            UnitError::UnknownUnit {
                text: "3 parsecs".into(),
                unit: "parsecs".into(),
                what: "time",
                known: "ns, us, ms, s, m or h",
            }
        );
        assert_eq!(
            parse_bool("maybe").unwrap_err().to_string(),
            "\"maybe\" is not a boolean; write true or false"
        );
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size("300"), Ok(300));
        assert_eq!(parse_size("4KiB"), Ok(4096));
        assert_eq!(parse_size("10kB"), Ok(10_000));
        assert!(parse_size("4 KB?").is_err());
        assert!(parse_size("x").is_err());
    }

    #[test]
    fn bitrates() {
        assert_eq!(parse_bitrate("50mbit"), Ok(50_000_000));
        assert_eq!(parse_bitrate("1Gbit"), Ok(1_000_000_000));
        assert_eq!(parse_bitrate("2.5mbps"), Ok(2_500_000));
        assert_eq!(parse_bitrate("1000"), Ok(1000));
        assert!(parse_bitrate("fast").is_err());
        assert!(parse_bitrate("3 parsecs").is_err());
    }

    #[test]
    fn bools() {
        assert_eq!(parse_bool("on"), Ok(true));
        assert_eq!(parse_bool("false"), Ok(false));
        assert!(parse_bool("maybe").is_err());
    }

    #[test]
    fn duration_labels_read_back_exactly() {
        for ns in [0, 1, 999, 20_000, 1_500_000, 2_000_000_000, 61_000_000_000] {
            let label = duration_label(ns);
            assert_eq!(
                parse_duration(&label).unwrap().as_nanos() as u64,
                ns,
                "{label}"
            );
        }
        assert_eq!(duration_label(20_000), "20us");
    }
}
