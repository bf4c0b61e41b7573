//! How a census reads: its table, and its shards' figures added.

use super::{Census, Figures};
use report::grid::Doc;
use results::merge::{Merged, refuse};
use results::{Detail, Rep, RunRecord};
use std::io;

/// A repetition's census figures (none found: all zero).
#[cfg(test)]
pub(super) fn figures_of(r: &Rep) -> Figures {
    figures(r).unwrap_or_default()
}

/// A repetition's census figures.
fn figures(r: &Rep) -> Option<Figures> {
    match &r.detail {
        Detail::Custom { suite, figures, .. } if suite == "census" => {
            serde_json::from_value(figures.clone()).ok()
        }
        _ => None,
    }
}

/// The shards' censuses of one repetition, added: each shard counted its own slice.
pub(super) fn merge(parts: &[&Rep]) -> Merged {
    let mut all = Figures::default();
    for (k, part) in parts.iter().enumerate() {
        let Some(f) = figures(part) else {
            return refuse(format!("shard {k}'s repetition holds no census"));
        };
        all.written += f.written;
        all.counted += f.counted;
        all.missing += f.missing;
    }
    let figures = serde_json::to_value(&all).expect("plain figures serialize");
    Ok((Detail::custom("census", figures), None))
}

impl results::Named for Census {
    fn name(&self) -> &'static str {
        "census"
    }
}

impl report::View for Census {
    fn table(&self, r: &RunRecord, doc: &mut Doc) -> io::Result<()> {
        let headcount = (r.plan.custom.get("census"))
            .and_then(|c| c["headcount"].as_u64())
            .unwrap_or(0);
        doc.line(&format!("census of {headcount} keys"))?;
        let header = vec![vec![
            "target".to_string(),
            "written".into(),
            "counted".into(),
            "missing".into(),
        ]];
        let body: Vec<Vec<String>> = (r.cases.iter())
            .map(|c| {
                let last = c.reps.last().and_then(figures).unwrap_or_default();
                vec![
                    c.target.clone(),
                    last.written.to_string(),
                    last.counted.to_string(),
                    last.missing.to_string(),
                ]
            })
            .collect();
        doc.table(&header, &body)
    }
}
