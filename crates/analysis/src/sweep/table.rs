//! The results of a sweep as a table of runs, and its CSV form.
//!
//! One row per run: `run,runs,point,policy,KEY…,replicate,seed`, then every
//! summary metric ([`METRICS`]), then `sweep`, the fingerprint of the sweep
//! the row belongs to (see [`crate::sweep::fingerprint`]). `point` is the
//! grid point's index, or `as-written` for the runs of the scenario as
//! written (its own policy, no `--set`), whose key cells are empty. Rows
//! are in run order; floats are written in Rust's shortest round-trip form
//! and an absent value (no probes) is an empty cell, so the same sweep
//! gives the same bytes on any machine, with any number of threads, run
//! whole or in shards and merged.

use crate::engine::Outcome;
use crate::metrics::Summary;
use crate::sweep::SweepError;
use crate::sweep::grid::Value;

/// A summary metric of a run, as a CSV column.
#[derive(Clone, Copy, Debug)]
pub struct Metric {
    /// Column name and `--metric` / `--best` name.
    pub name: &'static str,
    /// What it is, for `--help`-like lists and chart axes.
    pub about: &'static str,
    get: fn(&Summary, &Outcome) -> Option<f64>,
}

fn count(n: usize) -> Option<f64> {
    Some(n as f64)
}

/// Every metric of a run, in CSV column order.
pub const METRICS: &[Metric] = &[
    Metric {
        name: "completed",
        about: "1 if every item finished, 0 if the run hit a limit or stalled",
        get: |_, o| Some(if o.is_completed() { 1.0 } else { 0.0 }),
    },
    Metric {
        name: "items",
        about: "work items",
        get: |s, _| count(s.items),
    },
    Metric {
        name: "finished",
        about: "items that finished",
        get: |s, _| count(s.finished),
    },
    Metric {
        name: "makespan_ms",
        about: "first submission to last item's end, ms",
        get: |s, _| Some(s.makespan_ms),
    },
    Metric {
        name: "start_delay_p50_ms",
        about: "median start delay (start - queued), ms",
        get: |s, _| Some(s.start_delay_ms.p50),
    },
    Metric {
        name: "start_delay_p95_ms",
        about: "95th percentile start delay, ms",
        get: |s, _| Some(s.start_delay_ms.p95),
    },
    Metric {
        name: "start_delay_max_ms",
        about: "longest start delay, ms",
        get: |s, _| Some(s.start_delay_ms.max),
    },
    Metric {
        name: "start_delay_mean_ms",
        about: "mean start delay, ms",
        get: |s, _| Some(s.start_delay_ms.mean),
    },
    Metric {
        name: "threads_peak",
        about: "most pool threads at once",
        get: |s, _| Some(f64::from(s.threads_peak)),
    },
    Metric {
        name: "threads_created",
        about: "threads created",
        get: |s, _| count(s.threads_created),
    },
    Metric {
        name: "probes",
        about: "responsiveness probes measured",
        get: |s, _| count(s.probes),
    },
    Metric {
        name: "probe_latency_first_ms",
        about: "the first probe's latency, ms (empty without probes)",
        get: |s, _| s.probe_latency_ms_first,
    },
    Metric {
        name: "probe_latency_max_ms",
        about: "the longest probe latency, ms (empty without probes)",
        get: |s, _| s.probe_latency_ms_max,
    },
    Metric {
        name: "cpu_utilization",
        about: "pool CPU use over the makespan, 0-1",
        get: |s, _| s.cpu_utilization,
    },
    Metric {
        name: "start_delay_p99_ms",
        about: "99th percentile start delay, ms",
        get: |s, _| Some(s.start_delay_ms.p99),
    },
    Metric {
        name: "latency_p50_ms",
        about: "median latency (finished - queued), ms",
        get: |s, _| Some(s.latency_ms.p50),
    },
    Metric {
        name: "latency_p95_ms",
        about: "95th percentile latency, ms",
        get: |s, _| Some(s.latency_ms.p95),
    },
    Metric {
        name: "latency_p99_ms",
        about: "99th percentile latency, ms",
        get: |s, _| Some(s.latency_ms.p99),
    },
    Metric {
        name: "latency_max_ms",
        about: "longest latency, ms",
        get: |s, _| Some(s.latency_ms.max),
    },
    Metric {
        name: "time_starved_ms",
        about: "time with work queued and not yet taken by a thread, ms",
        get: |s, _| Some(s.time_starved_ms),
    },
    Metric {
        name: "threads_created_demand",
        about: "threads created at once, below the goal (min threads)",
        get: |s, _| by_reason(s, "demand"),
    },
    Metric {
        name: "threads_created_starvation",
        about: "threads added by the starvation rule (gate / monitor thread)",
        get: |s, _| by_reason(s, "starvation"),
    },
    Metric {
        name: "threads_created_hill_climbing",
        about: "threads added after hill climbing raised the goal",
        get: |s, _| by_reason(s, "hill-climbing"),
    },
    Metric {
        name: "threads_created_cooperative_blocking",
        about: "threads added for cooperative blocking (.NET 6+)",
        get: |s, _| by_reason(s, "cooperative-blocking"),
    },
];

fn by_reason(s: &Summary, reason: &str) -> Option<f64> {
    count(
        s.threads_created_by_reason
            .get(reason)
            .copied()
            .unwrap_or(0),
    )
}

/// The metric named `name`, or an error listing the names.
pub fn metric_index(name: &str) -> Result<usize, String> {
    let wanted = name.trim();
    METRICS
        .iter()
        .position(|m| m.name == wanted)
        .ok_or_else(|| {
            let names: Vec<&str> = METRICS.iter().map(|m| m.name).collect();
            let close = crate::diagnostics::did_you_mean(wanted, names.iter().copied())
                .map(|s| format!("did you mean `{s}`? "))
                .unwrap_or_default();
            format!(
                "unknown metric `{wanted}`: {close}the metrics are {}",
                names.join(", ")
            )
        })
}

/// Every metric of one run.
pub fn measure(summary: &Summary, outcome: &Outcome) -> Vec<Option<f64>> {
    METRICS.iter().map(|m| (m.get)(summary, outcome)).collect()
}

/// The `point` cell of the scenario-as-written runs.
pub const AS_WRITTEN: &str = "as-written";

/// One run.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    pub run: usize,
    /// Grid point; `None` for the scenario as written.
    pub point: Option<usize>,
    pub policy: String,
    /// One per key; `None` for the scenario as written.
    pub values: Vec<Option<Value>>,
    /// 0-based repeat of the point; the run's seed is the point's scenario
    /// seed plus this.
    pub replicate: u32,
    pub seed: u64,
    /// One per [`METRICS`] entry.
    pub metrics: Vec<Option<f64>>,
}

/// A sweep's runs (all of them, or a shard's, or the finished ones).
#[derive(Clone, Debug, PartialEq)]
pub struct SweepTable {
    /// The swept keys as written, in `--set` order.
    pub keys: Vec<String>,
    /// Runs in the whole sweep.
    pub runs: usize,
    /// The sweep's fingerprint.
    pub fingerprint: String,
    /// In run order.
    pub rows: Vec<Row>,
}

const LEAD: [&str; 4] = ["run", "runs", "point", "policy"];
const MID: [&str; 2] = ["replicate", "seed"];
const TAIL: &str = "sweep";

impl SweepTable {
    /// The CSV header.
    pub fn header(&self) -> Vec<String> {
        LEAD.iter()
            .map(|s| s.to_string())
            .chain(self.keys.iter().cloned())
            .chain(MID.iter().map(|s| s.to_string()))
            .chain(METRICS.iter().map(|m| m.name.to_string()))
            .chain(std::iter::once(TAIL.to_string()))
            .collect()
    }

    /// The CSV bytes.
    pub fn to_csv(&self) -> Result<Vec<u8>, SweepError> {
        let err = |e: csv::Error| SweepError::new(format!("cannot write the CSV: {e}"));
        let mut w = csv::WriterBuilder::new()
            .terminator(csv::Terminator::Any(b'\n'))
            .from_writer(Vec::new());
        w.write_record(self.header()).map_err(err)?;
        let opt = |v: Option<f64>| v.map_or(String::new(), |x| x.to_string());
        for r in &self.rows {
            let mut rec: Vec<String> = vec![
                r.run.to_string(),
                self.runs.to_string(),
                r.point.map_or(AS_WRITTEN.to_string(), |p| p.to_string()),
                r.policy.clone(),
            ];
            rec.extend(
                r.values
                    .iter()
                    .map(|v| v.map_or(String::new(), |v| v.to_string())),
            );
            rec.push(r.replicate.to_string());
            rec.push(r.seed.to_string());
            rec.extend(r.metrics.iter().map(|m| opt(*m)));
            rec.push(self.fingerprint.clone());
            w.write_record(&rec).map_err(err)?;
        }
        w.into_inner()
            .map_err(|e| SweepError::new(format!("cannot write the CSV: {e}")))
    }

    /// Reads a CSV written by [`SweepTable::to_csv`]; `file` names it in
    /// messages. An empty table (a shard with no runs) has `runs == 0` and
    /// an empty fingerprint.
    pub fn from_csv(bytes: &[u8], file: &str) -> Result<SweepTable, SweepError> {
        let not_ours = |why: String| {
            SweepError::new(format!(
                "{file}: not a CSV written by `poolsim sweep` (of this version): {why}"
            ))
        };
        let mut reader = csv::ReaderBuilder::new()
            .has_headers(true)
            .from_reader(bytes);
        let header: Vec<String> = reader
            .headers()
            .map_err(|e| not_ours(e.to_string()))?
            .iter()
            .map(str::to_string)
            .collect();
        let fixed = LEAD.len() + MID.len() + METRICS.len() + 1;
        if header.len() < fixed {
            return Err(not_ours(format!(
                "its header has {} columns, a sweep CSV at least {fixed}",
                header.len()
            )));
        }
        let nkeys = header.len() - fixed;
        let probe = SweepTable {
            keys: header[LEAD.len()..LEAD.len() + nkeys].to_vec(),
            runs: 0,
            fingerprint: String::new(),
            rows: Vec::new(),
        };
        if probe.header() != header {
            return Err(not_ours(format!(
                "expected the header {}",
                probe.header().join(",")
            )));
        }
        let mut table = probe;
        for (line, rec) in reader.records().enumerate() {
            let line = line + 2;
            let rec = rec.map_err(|e| SweepError::new(format!("{file}:{line}: {e}")))?;
            let cell = |i: usize| rec.get(i).unwrap_or("");
            let bad = |col: &str, v: &str| {
                SweepError::new(format!("{file}:{line}: column `{col}`: cannot read `{v}`"))
            };
            let int = |i: usize, col: &str| -> Result<u64, SweepError> {
                cell(i).parse::<u64>().map_err(|_| bad(col, cell(i)))
            };
            let run = int(0, "run")? as usize;
            let runs = int(1, "runs")? as usize;
            let point = match cell(2) {
                AS_WRITTEN => None,
                p => Some(p.parse::<usize>().map_err(|_| bad("point", p))?),
            };
            let policy = cell(3).to_string();
            let mut values = Vec::with_capacity(nkeys);
            for (k, key) in table.keys.iter().enumerate() {
                let text = cell(LEAD.len() + k);
                values.push(if text.is_empty() {
                    None
                } else {
                    Some(Value::parse(text).ok_or_else(|| bad(key, text))?)
                });
            }
            let at = LEAD.len() + nkeys;
            let replicate =
                u32::try_from(int(at, "replicate")?).map_err(|_| bad("replicate", cell(at)))?;
            let seed = int(at + 1, "seed")?;
            let mut metrics = Vec::with_capacity(METRICS.len());
            for (m, metric) in METRICS.iter().enumerate() {
                let text = cell(at + 2 + m);
                metrics.push(if text.is_empty() {
                    None
                } else {
                    Some(
                        text.parse::<f64>()
                            .ok()
                            .filter(|x| x.is_finite())
                            .ok_or_else(|| bad(metric.name, text))?,
                    )
                });
            }
            let fingerprint = cell(at + 2 + METRICS.len());
            if table.rows.is_empty() {
                table.runs = runs;
                table.fingerprint = fingerprint.to_string();
            } else if runs != table.runs || fingerprint != table.fingerprint {
                return Err(SweepError::new(format!(
                    "{file}:{line}: this row belongs to another sweep (runs {runs}, sweep {fingerprint}) than the rows above (runs {}, sweep {})",
                    table.runs, table.fingerprint
                )));
            }
            if run >= runs {
                return Err(bad("run", cell(0)));
            }
            table.rows.push(Row {
                run,
                point,
                policy,
                values,
                replicate,
                seed,
                metrics,
            });
        }
        Ok(table)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table() -> SweepTable {
        SweepTable {
            keys: vec!["pool.min_threads".into(), "seed".into()],
            runs: 3,
            fingerprint: "00ff".into(),
            rows: vec![
                Row {
                    run: 0,
                    point: None,
                    policy: "net5".into(),
                    values: vec![None, None],
                    replicate: 0,
                    seed: 1,
                    metrics: METRICS.iter().map(|_| Some(0.1)).collect(),
                },
                Row {
                    run: 2,
                    point: Some(1),
                    policy: "a,b.toml".into(),
                    values: vec![Some(Value::Int(4)), Some(Value::Float(0.5))],
                    replicate: 1,
                    seed: 2,
                    metrics: METRICS
                        .iter()
                        .enumerate()
                        .map(|(i, _)| (i % 3 != 0).then_some(i as f64 / 7.0))
                        .collect(),
                },
            ],
        }
    }

    #[test]
    fn csv_round_trips_exactly() {
        let t = table();
        let bytes = t.to_csv().unwrap();
        let back = SweepTable::from_csv(&bytes, "x.csv").unwrap();
        assert_eq!(back, t);
        assert_eq!(back.to_csv().unwrap(), bytes);
        let text = String::from_utf8(bytes).unwrap();
        assert!(
            text.starts_with(
                "run,runs,point,policy,pool.min_threads,seed,replicate,seed,completed,"
            )
        );
        assert!(text.contains("\"a,b.toml\""), "{text}");
        assert!(text.contains("0,3,as-written,net5,,,0,1,"), "{text}");
    }

    #[test]
    fn foreign_csvs_are_refused() {
        let e = SweepTable::from_csv(b"a,b\n1,2\n", "f.csv").unwrap_err();
        assert!(e.to_string().contains("not a CSV written by"), "{e}");
        let mut bytes = table().to_csv().unwrap();
        bytes.extend_from_slice(b"1,4,0,x,1,2,0,1");
        assert!(SweepTable::from_csv(&bytes, "f.csv").is_err());
    }

    #[test]
    fn metric_names_are_checked() {
        assert_eq!(
            METRICS[metric_index("makespan_ms").unwrap()].name,
            "makespan_ms"
        );
        let e = metric_index("makespan").unwrap_err();
        assert!(e.contains("did you mean `makespan_ms`"), "{e}");
    }
}
