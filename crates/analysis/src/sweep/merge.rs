//! `poolsim sweep-merge`: joins the CSVs of the shards of one sweep into
//! the CSV the whole sweep on one machine writes, byte for byte.
//!
//! The shards must have the same header and the same `sweep` fingerprint
//! and run count; a run may appear in several inputs only with identical
//! rows (a shard given twice); the merged rows are in run order. Runs that
//! no input has are an error unless partial results are allowed.

use std::collections::BTreeMap;

use crate::sweep::SweepError;
use crate::sweep::table::{Row, SweepTable};

/// Merges shard tables (`(file name, table)`), checking they are one sweep.
pub fn merge(
    inputs: &[(String, SweepTable)],
    allow_partial: bool,
) -> Result<SweepTable, SweepError> {
    let Some((first_file, first)) = inputs.first() else {
        return Err(SweepError::new("sweep-merge: no input CSV given"));
    };
    // The reference for run count and fingerprint: the first input with rows.
    let reference = inputs.iter().find(|(_, t)| !t.rows.is_empty());
    let mut rows: BTreeMap<usize, (&str, &Row)> = BTreeMap::new();
    for (file, table) in inputs {
        if table.keys != first.keys {
            return Err(SweepError::new(format!(
                "{file} sweeps {} but {first_file} sweeps {}: these are not shards of one sweep",
                keys_text(&table.keys),
                keys_text(&first.keys)
            )));
        }
        if let Some((ref_file, r)) = reference
            && !table.rows.is_empty()
            && (table.fingerprint != r.fingerprint || table.runs != r.runs)
        {
            return Err(SweepError::new(format!(
                "{file} (sweep {}, {} runs) and {ref_file} (sweep {}, {} runs) are not shards of one sweep: the scenario, policies, --set values, --seeds or poolsim version differ",
                table.fingerprint, table.runs, r.fingerprint, r.runs
            )));
        }
        for row in &table.rows {
            match rows.get(&row.run) {
                Some((other_file, other)) if *other != row => {
                    return Err(SweepError::new(format!(
                        "run {} differs between {other_file} and {file}",
                        row.run
                    )));
                }
                Some(_) => {}
                None => {
                    rows.insert(row.run, (file.as_str(), row));
                }
            }
        }
    }
    let Some((_, reference)) = reference else {
        return Err(SweepError::new(
            "sweep-merge: the inputs hold no runs (every shard is empty)",
        ));
    };
    if !allow_partial && rows.len() < reference.runs {
        let missing: Vec<usize> = (0..reference.runs)
            .filter(|r| !rows.contains_key(r))
            .collect();
        let shown: Vec<String> = missing.iter().take(10).map(usize::to_string).collect();
        return Err(SweepError::new(format!(
            "sweep-merge: {} of {} runs are missing (runs {}{}): a shard is missing or was interrupted; give every shard, or --allow-partial to merge what there is",
            missing.len(),
            reference.runs,
            shown.join(", "),
            if missing.len() > shown.len() {
                ", …"
            } else {
                ""
            }
        )));
    }
    Ok(SweepTable {
        keys: first.keys.clone(),
        runs: reference.runs,
        fingerprint: reference.fingerprint.clone(),
        rows: rows.into_values().map(|(_, r)| r.clone()).collect(),
    })
}

fn keys_text(keys: &[String]) -> String {
    if keys.is_empty() {
        "no keys".to_string()
    } else {
        keys.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sweep::table::METRICS;

    fn table(runs: &[usize], fingerprint: &str) -> SweepTable {
        SweepTable {
            keys: vec!["k".into()],
            runs: 4,
            fingerprint: fingerprint.into(),
            rows: runs
                .iter()
                .map(|&run| Row {
                    run,
                    point: Some(run),
                    policy: "p".into(),
                    values: vec![None],
                    replicate: 0,
                    seed: 1,
                    metrics: vec![Some(run as f64); METRICS.len()],
                })
                .collect(),
        }
    }

    #[test]
    fn shards_merge_in_run_order() {
        let a = ("a.csv".to_string(), table(&[1, 3], "f"));
        let b = ("b.csv".to_string(), table(&[0, 2], "f"));
        let empty = ("c.csv".to_string(), table(&[], ""));
        let m = merge(&[a.clone(), b.clone(), empty, a.clone()], false).unwrap();
        assert_eq!(m, table(&[0, 1, 2, 3], "f"));
    }

    #[test]
    fn foreign_missing_and_conflicting_shards_are_refused() {
        let a = ("a.csv".to_string(), table(&[1, 3], "f"));
        let other = ("o.csv".to_string(), table(&[0, 2], "g"));
        let e = merge(&[a.clone(), other], false).unwrap_err().to_string();
        assert!(e.contains("not shards of one sweep"), "{e}");
        let e = merge(std::slice::from_ref(&a), false)
            .unwrap_err()
            .to_string();
        assert!(e.contains("2 of 4 runs are missing (runs 0, 2)"), "{e}");
        assert_eq!(merge(std::slice::from_ref(&a), true).unwrap().rows.len(), 2);
        let mut changed = table(&[1], "f");
        changed.rows[0].seed = 9;
        let e = merge(&[a, ("x.csv".into(), changed)], false)
            .unwrap_err()
            .to_string();
        assert!(e.contains("run 1 differs"), "{e}");
        assert!(merge(&[], false).is_err());
    }
}
