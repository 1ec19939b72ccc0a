//! The chart of a sweep: chosen metrics against one swept key, a line per
//! policy (and per value of the other keys), the seed spread as a band,
//! the scenario as written as a dashed line, the `--best` point ringed.
//!
//! Built from a [`SweepTable`] alone, so a merged sweep draws the same
//! picture as the sweep run on one machine.

use std::collections::HashMap;

use crate::render::lines::{LineChart, LinePanel, LinePoint};
use crate::sweep::SweepError;
use crate::sweep::best::{PointStats, aggregate};
use crate::sweep::grid::Value;
use crate::sweep::table::{METRICS, SweepTable};

/// What to draw.
#[derive(Clone, Debug, Default)]
pub struct PlotSpec {
    /// Indices into [`METRICS`]: one panel each.
    pub metrics: Vec<usize>,
    /// The key on the x axis (default: the first `--set`).
    pub x: Option<String>,
    /// The chart title (default: "poolsim sweep of KEY").
    pub title: Option<String>,
    /// The point to ring: (grid point, policy).
    pub best: Option<(usize, String)>,
}

/// The x key's column, or an error naming the keys.
pub fn x_column(table: &SweepTable, x: Option<&str>) -> Result<usize, SweepError> {
    match x {
        None if table.keys.is_empty() => Err(SweepError::new(
            "the sweep has no --set key to put on the x axis",
        )),
        None => Ok(0),
        Some(x) => table
            .keys
            .iter()
            .position(|k| k == x.trim())
            .ok_or_else(|| {
                SweepError::new(format!(
                    "--x {x}: not a swept key; the keys are {}",
                    table.keys.join(", ")
                ))
            }),
    }
}

/// Geometric x values (constant ratio of at least 1.5 over 3 or more
/// distinct positive values) get a logarithmic axis.
fn geometric(xs: &[f64]) -> bool {
    let mut d: Vec<f64> = xs.to_vec();
    d.sort_by(f64::total_cmp);
    d.dedup();
    if d.len() < 3 || d[0] <= 0.0 {
        return false;
    }
    let ratios: Vec<f64> = d.windows(2).map(|w| w[1] / w[0]).collect();
    let (lo, hi) = ratios
        .iter()
        .fold((f64::INFINITY, 0.0f64), |(a, b), &r| (a.min(r), b.max(r)));
    lo >= 1.5 && hi / lo < 1.01
}

fn value_text(v: &Option<Value>) -> String {
    v.map_or("-".to_string(), |v| v.to_string())
}

/// Builds the chart of `table`.
pub fn chart(table: &SweepTable, spec: &PlotSpec) -> Result<LineChart, SweepError> {
    let xcol = x_column(table, spec.x.as_deref())?;
    let stats = aggregate(table);
    let baseline = stats.iter().find(|s| s.point.is_none());
    let grid: Vec<&PointStats> = stats.iter().filter(|s| s.point.is_some()).collect();

    // Series: (policy, other keys' values), in run order.
    let policies: Vec<&str> = {
        let mut p: Vec<&str> = Vec::new();
        for s in &grid {
            if !p.contains(&s.policy.as_str()) {
                p.push(&s.policy);
            }
        }
        p
    };
    let others: Vec<usize> = (0..table.keys.len()).filter(|&k| k != xcol).collect();
    let series_key = |s: &PointStats| -> String {
        let mut parts = Vec::new();
        if policies.len() > 1 || others.is_empty() {
            parts.push(s.policy.clone());
        }
        for &k in &others {
            parts.push(format!("{}={}", table.keys[k], value_text(&s.values[k])));
        }
        parts.join(", ")
    };
    let mut labels: Vec<String> = Vec::new();
    let mut members: HashMap<String, Vec<&PointStats>> = HashMap::new();
    for s in &grid {
        let key = series_key(s);
        if !members.contains_key(&key) {
            labels.push(key.clone());
        }
        members.entry(key).or_default().push(s);
    }

    let xs: Vec<f64> = grid
        .iter()
        .filter_map(|s| s.values[xcol].map(Value::as_f64))
        .collect();
    let seeds = grid.iter().map(|s| s.runs).max().unwrap_or(0);
    let mut panels = Vec::new();
    for &m in &spec.metrics {
        let metric = &METRICS[m];
        let lines: Vec<Vec<LinePoint>> = labels
            .iter()
            .map(|label| {
                let mut points: Vec<LinePoint> = members[label]
                    .iter()
                    .filter_map(|s| {
                        Some(LinePoint {
                            x: s.values[xcol]?.as_f64(),
                            y: s.mean[m]?,
                            lo: s.min[m]?,
                            hi: s.max[m]?,
                        })
                    })
                    .collect();
                points.sort_by(|a, b| a.x.total_cmp(&b.x));
                points
            })
            .collect();
        let marker = spec.best.as_ref().and_then(|(point, policy)| {
            let s = grid
                .iter()
                .find(|s| s.point == Some(*point) && &s.policy == policy)?;
            Some((s.values[xcol]?.as_f64(), s.mean[m]?))
        });
        panels.push(LinePanel {
            title: format!(
                "{} — {}",
                metric.name,
                metric.about.split(" (").next().unwrap_or(metric.about)
            ),
            lines,
            reference: baseline.and_then(|b| b.mean[m]),
            marker,
        });
    }
    let spread = if seeds > 1 {
        format!("line: mean of {seeds} seeds; band: lowest to highest seed")
    } else {
        "one seed per point".to_string()
    };
    let reference_label = baseline
        .filter(|b| spec.metrics.iter().any(|&m| b.mean[m].is_some()))
        .map(|b| format!("as written ({})", b.policy));
    let reference_note = if reference_label.is_some() {
        "; dashed: the scenario as written"
    } else {
        ""
    };
    Ok(LineChart {
        title: spec
            .title
            .clone()
            .unwrap_or_else(|| format!("poolsim sweep of {}", table.keys[xcol])),
        subtitle: format!("{} runs; {spread}{reference_note}", table.rows.len()),
        x_label: table.keys[xcol].clone(),
        log_x: geometric(&xs),
        series: labels,
        reference_label,
        panels,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn geometric_values_are_detected() {
        assert!(geometric(&[1.0, 2.0, 4.0, 8.0, 4.0]));
        assert!(!geometric(&[1.0, 2.0, 3.0, 4.0]));
        assert!(!geometric(&[0.0, 2.0, 4.0]));
        assert!(!geometric(&[1.0, 2.0]));
    }
}
