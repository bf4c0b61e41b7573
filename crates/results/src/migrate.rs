//! Records of earlier schemas, brought to the current one as they are read, so a run saved
//! years ago renders as it did the day it ran.
//!
//! `dyno.run/1` → `dyno.run/2`: a repetition's `objects` is `ops`; `commit_ns` and
//! `storage_reads` moved into `detail.store`, and `load` into `detail.load`. Nothing else
//! changed.

use crate::SCHEMA;
use serde_json::{Map, Value, json};

/// The first schema.
pub const RUN_1: &str = "dyno.run/1";

/// Why a record could not be brought to the current schema.
#[derive(Debug, thiserror::Error)]
pub enum MigrateError {
    #[error("schema {0:?} is not one this dyno reads ({RUN_1} or {SCHEMA})")]
    Unknown(String),
    #[error("{0}")]
    Shape(&'static str),
}

/// `record` in the current schema.
pub fn to_current(mut record: Value) -> Result<Value, MigrateError> {
    let schema = record.get("schema").and_then(Value::as_str).unwrap_or("");
    match schema {
        SCHEMA => return Ok(record),
        RUN_1 => {}
        other => return Err(MigrateError::Unknown(other.to_string())),
    }
    let cases = (record.get_mut("cases"))
        .and_then(Value::as_array_mut)
        .ok_or(MigrateError::Shape(
            "a record of dyno.run/1 has a list of cases",
        ))?;
    for case in cases {
        if let Some(reps) = case.get_mut("reps").and_then(Value::as_array_mut) {
            for rep in reps {
                rep_1_to_2(rep)?;
            }
        }
        if let Some(w) = case.get_mut("warmup").filter(|w| !w.is_null()) {
            rep_1_to_2(w)?;
        }
    }
    record["schema"] = json!(SCHEMA);
    Ok(record)
}

fn rep_1_to_2(rep: &mut Value) -> Result<(), MigrateError> {
    let rep = (rep.as_object_mut()).ok_or(MigrateError::Shape("a repetition is an object"))?;
    let take = |rep: &mut Map<String, Value>, k: &str| rep.remove(k).unwrap_or(Value::Null);
    let objects = take(rep, "objects");
    rep.insert("ops".into(), objects);
    let commit_ns = take(rep, "commit_ns");
    let storage_reads = take(rep, "storage_reads");
    let detail = match take(rep, "load") {
        Value::Null => {
            json!({ "store": { "commit_ns": commit_ns, "storage_reads": storage_reads } })
        }
        load => json!({ "load": load }),
    };
    rep.insert("detail".into(), detail);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_1_repetition_moves_its_figures_into_the_detail() {
        let old = json!({
            "schema": RUN_1,
            "cases": [{
                "warmup": null,
                "reps": [
                    {"objects": 5, "commit_ns": 7, "storage_reads": 2, "load": null, "errors": 0},
                    {"objects": 9, "commit_ns": 0, "storage_reads": 0, "load": {"ok": 9}, "errors": 0}
                ]
            }]
        });
        let new = to_current(old).unwrap();
        assert_eq!(new["schema"], SCHEMA);
        let reps = &new["cases"][0]["reps"];
        assert_eq!(
            reps[0],
            json!({"ops": 5, "errors": 0, "detail": {"store": {"commit_ns": 7, "storage_reads": 2}}})
        );
        assert_eq!(
            reps[1],
            json!({"ops": 9, "errors": 0, "detail": {"load": {"ok": 9}}})
        );
        assert!(new["cases"][0]["warmup"].is_null());
        assert!(matches!(
            to_current(json!({"schema": "dyno.run/9"})),
            Err(MigrateError::Unknown(_))
        ));
    }
}
