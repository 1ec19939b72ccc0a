//! `--best`: the best point of a sweep under an objective and constraints,
//! and how much it gains over the scenario as written.
//!
//! The form is `minimize METRIC` or `maximize METRIC`, optionally followed
//! by `subject to` (or `where`, `s.t.`, `such that`) and conditions
//! `METRIC < NUMBER` (`<`, `<=`, `>`, `>=`) joined by `and` or commas:
//!
//! ```text
//! minimize makespan_ms subject to probe_latency_max_ms < 50
//! maximize cpu_utilization where threads_peak <= 16 and makespan_ms < 9000
//! ```
//!
//! Each point (grid point under one policy) is judged by the mean of its
//! seeds; a point with a run that did not complete, or without a value of a
//! metric the expression names, is not a candidate. Ties go to the first
//! point in run order.

use std::collections::HashMap;
use std::fmt::Write as _;

use crate::spread::Quantiles;
use crate::sweep::grid::Value;
use crate::sweep::table::{METRICS, SweepTable, metric_index};

/// Minimize or maximize.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Goal {
    Minimize,
    Maximize,
}

/// A comparison of a constraint.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Lt,
    Le,
    Gt,
    Ge,
}

impl Op {
    /// Whether `x OP bound` holds.
    pub fn holds(self, x: f64, bound: f64) -> bool {
        match self {
            Op::Lt => x < bound,
            Op::Le => x <= bound,
            Op::Gt => x > bound,
            Op::Ge => x >= bound,
        }
    }

    /// The operator as written.
    pub fn text(self) -> &'static str {
        match self {
            Op::Lt => "<",
            Op::Le => "<=",
            Op::Gt => ">",
            Op::Ge => ">=",
        }
    }
}

/// `METRIC OP NUMBER`.
#[derive(Clone, Debug, PartialEq)]
pub struct Constraint {
    /// Index into [`METRICS`].
    pub metric: usize,
    pub op: Op,
    pub bound: f64,
}

impl Constraint {
    /// The condition as written (`latency_p99_ms < 100`).
    pub fn text(&self) -> String {
        format!(
            "{} {} {}",
            METRICS[self.metric].name,
            self.op.text(),
            self.bound
        )
    }
}

/// A parsed `--best` expression.
#[derive(Clone, Debug, PartialEq)]
pub struct Objective {
    pub goal: Goal,
    /// Index into [`METRICS`].
    pub metric: usize,
    pub constraints: Vec<Constraint>,
}

const FORM: &str = "write 'minimize METRIC' or 'maximize METRIC', optionally followed by 'subject to METRIC < NUMBER' (<, <=, >, >=; several joined by 'and'), like 'minimize makespan_ms subject to probe_latency_max_ms < 50'";

impl Objective {
    /// Parses a `--best` expression.
    pub fn parse(text: &str) -> Result<Objective, String> {
        let (goal, name, constraints) = split_objective(text)?;
        let err = |why: String| format!("--best '{}': {why}; {FORM}", text.trim());
        let metric = metric_index(&name).map_err(err)?;
        Ok(Objective {
            goal,
            metric,
            constraints: constraints?,
        })
    }

    /// The expression in its normal form.
    pub fn text(&self) -> String {
        let goal = match self.goal {
            Goal::Minimize => "minimize",
            Goal::Maximize => "maximize",
        };
        let mut out = format!("{goal} {}", METRICS[self.metric].name);
        if !self.constraints.is_empty() {
            let conds: Vec<String> = self.constraints.iter().map(Constraint::text).collect();
            out.push_str(&format!(" subject to {}", conds.join(" and ")));
        }
        out
    }

    fn feasible(&self, mean: &[Option<f64>]) -> bool {
        self.constraints
            .iter()
            .all(|c| mean[c.metric].is_some_and(|x| c.op.holds(x, c.bound)))
    }
}

/// The conditions of a `--best` expression, or the error in one.
pub type Conditions = Result<Vec<Constraint>, String>;

/// A `--best` expression's parts: the goal, the name after it (a metric,
/// or a swept key for [`super::smallest`]), and its conditions (an error
/// in a condition is kept apart, so that the name is judged first).
pub fn split_objective(text: &str) -> Result<(Goal, String, Conditions), String> {
    let err = |why: String| format!("--best '{}': {why}; {FORM}", text.trim());
    let lower = text.trim().to_ascii_lowercase();
    let (goal, rest) = [
        ("minimize ", Goal::Minimize),
        ("minimise ", Goal::Minimize),
        ("min ", Goal::Minimize),
        ("maximize ", Goal::Maximize),
        ("maximise ", Goal::Maximize),
        ("max ", Goal::Maximize),
    ]
    .iter()
    .find_map(|(word, goal)| lower.strip_prefix(word).map(|r| (*goal, r.trim())))
    .ok_or_else(|| err("it must start with 'minimize' or 'maximize'".into()))?;
    let (name, rest) = match rest.find(|c: char| c.is_whitespace() || c == ',') {
        Some(i) => (&rest[..i], rest[i..].trim()),
        None => (rest, ""),
    };
    let constraints = (|| {
        let mut constraints = Vec::new();
        if rest.is_empty() {
            return Ok(constraints);
        }
        let conditions = [
            "subject to ",
            "such that ",
            "s.t. ",
            "where ",
            "with ",
            ", ",
        ]
        .iter()
        .find_map(|w| rest.strip_prefix(w))
        .ok_or_else(|| {
            err(format!(
                "after the metric expected 'subject to', found '{rest}'"
            ))
        })?;
        for cond in conditions
            .split(',')
            .flat_map(|c| c.split(" and "))
            .flat_map(|c| c.split("&&"))
        {
            let cond = cond.trim();
            if cond.is_empty() {
                return Err(err("an empty condition".into()));
            }
            constraints.push(parse_condition(cond).map_err(&err)?);
        }
        Ok(constraints)
    })();
    Ok((goal, name.to_string(), constraints))
}

fn parse_condition(cond: &str) -> Result<Constraint, String> {
    let ops = [("<=", Op::Le), (">=", Op::Ge), ("<", Op::Lt), (">", Op::Gt)];
    let (at, len, op) = ops
        .iter()
        .filter_map(|(t, op)| cond.find(t).map(|i| (i, t.len(), *op)))
        .min_by_key(|(i, len, _)| (*i, usize::MAX - len))
        .ok_or_else(|| format!("the condition '{cond}' has no comparison"))?;
    let name = cond[..at].trim();
    let metric = metric_index(name)?;
    let mut number = cond[at + len..].trim();
    if METRICS[metric].name.ends_with("_ms") {
        number = number.strip_suffix("ms").unwrap_or(number).trim();
    }
    let bound = number
        .parse::<f64>()
        .ok()
        .filter(|x| x.is_finite())
        .ok_or_else(|| format!("in '{cond}', `{number}` is not a number"))?;
    Ok(Constraint { metric, op, bound })
}

/// The runs of one point under one policy (or of the scenario as written),
/// summed up.
#[derive(Clone, Debug, PartialEq)]
pub struct PointStats {
    /// `None`: the scenario as written.
    pub point: Option<usize>,
    pub policy: String,
    pub values: Vec<Option<Value>>,
    /// Runs of the point in the table.
    pub runs: usize,
    /// Runs that completed.
    pub completed: usize,
    /// Per metric: mean, min and max over the runs that have it.
    pub mean: Vec<Option<f64>>,
    pub min: Vec<Option<f64>>,
    pub max: Vec<Option<f64>>,
    /// Per metric: the spread over the seeds, by the code of `run --runs`
    /// ([`Quantiles::of`]); `min` and `max` are its ends (the chart's band).
    pub quantiles: Vec<Option<Quantiles>>,
}

/// Groups a table's rows by (point, policy), in run order (the scenario as
/// written first).
pub fn aggregate(table: &SweepTable) -> Vec<PointStats> {
    let mut index: HashMap<(Option<usize>, &str), usize> = HashMap::new();
    let mut sums: Vec<(PointStats, Vec<Vec<f64>>)> = Vec::new();
    let completed = metric_index("completed").unwrap_or(0);
    for row in &table.rows {
        let i = *index
            .entry((row.point, row.policy.as_str()))
            .or_insert_with(|| {
                sums.push((
                    PointStats {
                        point: row.point,
                        policy: row.policy.clone(),
                        values: row.values.clone(),
                        runs: 0,
                        completed: 0,
                        mean: vec![None; METRICS.len()],
                        min: vec![None; METRICS.len()],
                        max: vec![None; METRICS.len()],
                        quantiles: vec![None; METRICS.len()],
                    },
                    vec![Vec::new(); METRICS.len()],
                ));
                sums.len() - 1
            });
        let (stats, acc) = &mut sums[i];
        stats.runs += 1;
        if row.metrics.get(completed).copied().flatten() == Some(1.0) {
            stats.completed += 1;
        }
        for (m, v) in row.metrics.iter().enumerate() {
            if let Some(x) = v {
                acc[m].push(*x);
            }
        }
    }
    sums.into_iter()
        .map(|(mut stats, acc)| {
            for (m, values) in acc.into_iter().enumerate() {
                if values.is_empty() {
                    continue;
                }
                // Summed in run order, as before: the mean's bytes stay.
                let mut sum = 0.0;
                for x in &values {
                    sum += x;
                }
                stats.mean[m] = Some(sum / values.len() as f64);
                let q = Quantiles::of(values);
                stats.min[m] = Some(q.min);
                stats.max[m] = Some(q.max);
                stats.quantiles[m] = Some(q);
            }
            stats
        })
        .collect()
}

/// The outcome of `--best`.
#[derive(Clone, Debug, PartialEq)]
pub struct BestReport {
    pub objective: Objective,
    /// The best candidate, if any point qualifies.
    pub best: Option<PointStats>,
    /// The scenario as written, if its runs are in the table.
    pub baseline: Option<PointStats>,
    /// Points (under a policy) that meet the constraints and completed.
    pub feasible: usize,
    /// Points (under a policy) in the table.
    pub points: usize,
    /// Points left out because a run did not complete.
    pub incomplete: usize,
    /// Policies in the grid.
    pub policies: usize,
}

/// Finds the best point of `table` under `objective`.
pub fn find_best(table: &SweepTable, objective: &Objective) -> BestReport {
    let stats = aggregate(table);
    let mut baseline = None;
    let mut best: Option<PointStats> = None;
    let (mut feasible, mut points, mut incomplete) = (0, 0, 0);
    let mut policies: Vec<String> = Vec::new();
    for s in stats {
        if s.point.is_none() {
            baseline = Some(s);
            continue;
        }
        points += 1;
        if !policies.contains(&s.policy) {
            policies.push(s.policy.clone());
        }
        if s.completed < s.runs {
            incomplete += 1;
            continue;
        }
        let Some(v) = s.mean[objective.metric] else {
            continue;
        };
        if !objective.feasible(&s.mean) {
            continue;
        }
        feasible += 1;
        let better = match &best {
            None => true,
            Some(b) => {
                let w = b.mean[objective.metric].unwrap_or(f64::NAN);
                match objective.goal {
                    Goal::Minimize => v < w,
                    Goal::Maximize => v > w,
                }
            }
        };
        if better {
            best = Some(s);
        }
    }
    BestReport {
        objective: objective.clone(),
        best,
        baseline,
        feasible,
        points,
        incomplete,
        policies: policies.len(),
    }
}

/// A number for people: one decimal from 10 up, three below.
pub fn human(x: f64) -> String {
    if x.abs() >= 10.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.3}")
    }
}

fn spread(s: &PointStats, m: usize) -> String {
    match (s.mean[m], s.min[m], s.max[m]) {
        (Some(mean), Some(lo), Some(hi)) if s.runs > 1 => format!(
            "{}  (mean of {} seeds; {} to {})",
            human(mean),
            s.runs,
            human(lo),
            human(hi)
        ),
        (Some(mean), ..) => human(mean),
        _ => "-".to_string(),
    }
}

fn point_text(s: &PointStats, keys: &[String]) -> String {
    let mut parts = vec![format!("policy {}", s.policy)];
    for (k, v) in keys.iter().zip(&s.values) {
        if let Some(v) = v {
            parts.push(format!("{k} = {v}"));
        }
    }
    parts.join(", ")
}

impl BestReport {
    /// "points", or "points x policies" when there are several policies.
    fn what(&self) -> &'static str {
        if self.policies > 1 {
            "points x policies"
        } else {
            "points"
        }
    }

    /// The report as printed by `poolsim sweep --best`.
    pub fn text(&self, keys: &[String]) -> String {
        let o = &self.objective;
        let name = METRICS[o.metric].name;
        let mut out = String::new();
        let _ = writeln!(out, "best ({}):", o.text());
        let Some(best) = &self.best else {
            let _ = writeln!(
                out,
                "  no point meets the constraints ({} {}{})",
                self.points,
                self.what(),
                if self.incomplete > 0 {
                    format!(", {} with a run that did not complete", self.incomplete)
                } else {
                    String::new()
                }
            );
            return out;
        };
        let _ = writeln!(out, "  {}", point_text(best, keys));
        let mut shown = vec![o.metric];
        shown.extend(o.constraints.iter().map(|c| c.metric));
        shown.dedup();
        let width = shown
            .iter()
            .map(|&m| METRICS[m].name.len())
            .max()
            .unwrap_or(0);
        let mut seen = Vec::new();
        for m in shown {
            if seen.contains(&m) {
                continue;
            }
            seen.push(m);
            let _ = writeln!(out, "  {:<width$}  {}", METRICS[m].name, spread(best, m));
        }
        match &self.baseline {
            Some(base) => {
                let misses: Vec<String> = o
                    .constraints
                    .iter()
                    .filter(|c| !base.mean[c.metric].is_some_and(|x| c.op.holds(x, c.bound)))
                    .map(|c| {
                        format!(
                            "{} ({})",
                            c.text(),
                            base.mean[c.metric].map_or("-".into(), human)
                        )
                    })
                    .collect();
                let verdict = if misses.is_empty() {
                    if o.constraints.is_empty() {
                        String::new()
                    } else {
                        "; meets the constraints".to_string()
                    }
                } else {
                    format!("; misses {}", misses.join(", "))
                };
                let _ = writeln!(
                    out,
                    "as written (policy {}): {name} {}{verdict}",
                    base.policy,
                    spread(base, o.metric)
                );
                if let (Some(b), Some(v)) = (base.mean[o.metric], best.mean[o.metric]) {
                    let better = match o.goal {
                        Goal::Minimize => b - v,
                        Goal::Maximize => v - b,
                    };
                    let direction = match (o.goal, better >= 0.0) {
                        (Goal::Minimize, true) | (Goal::Maximize, false) => "lower",
                        _ => "higher",
                    };
                    let relative = if b != 0.0 {
                        format!("{:.1} % {direction}", ((v - b) / b * 100.0).abs())
                    } else {
                        format!("{} {direction}", human((v - b).abs()))
                    };
                    let meets = misses.is_empty();
                    let line = if better > 0.0 {
                        format!("gain: {name} {relative} ({} -> {})", human(b), human(v))
                    } else if better == 0.0 {
                        format!("no gain: {name} as written is already {}", human(b))
                    } else if meets {
                        format!(
                            "no gain: the scenario as written is better than every point of the grid ({name} {} against {})",
                            human(b),
                            human(v)
                        )
                    } else {
                        format!(
                            "the price of meeting the constraints: {name} {relative} ({} -> {})",
                            human(b),
                            human(v)
                        )
                    };
                    let _ = writeln!(out, "{line}");
                }
            }
            None => {
                let _ = writeln!(
                    out,
                    "as written: not in this table (its runs are in the shard that holds run 0)"
                );
            }
        }
        let _ = writeln!(
            out,
            "{} of {} {} meet the constraints{}",
            self.feasible,
            self.points,
            self.what(),
            if self.incomplete > 0 {
                format!("; {} left out: a run did not complete", self.incomplete)
            } else {
                String::new()
            }
        );
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sweep::table::Row;

    fn m(name: &str) -> usize {
        metric_index(name).unwrap()
    }

    #[test]
    fn expressions_parse_in_their_readable_forms() {
        let o =
            Objective::parse("minimize makespan_ms subject to probe_latency_max_ms < 50").unwrap();
        assert_eq!(o.goal, Goal::Minimize);
        assert_eq!(o.metric, m("makespan_ms"));
        assert_eq!(
            o.constraints,
            vec![Constraint {
                metric: m("probe_latency_max_ms"),
                op: Op::Lt,
                bound: 50.0
            }]
        );
        let o = Objective::parse(
            "Maximize cpu_utilization where threads_peak<=16 and makespan_ms >= 10ms, probes > 0",
        )
        .unwrap();
        assert_eq!(o.goal, Goal::Maximize);
        assert_eq!(o.constraints.len(), 3);
        assert_eq!(o.constraints[0].op, Op::Le);
        assert_eq!(o.constraints[1].bound, 10.0);
        assert_eq!(
            o.text(),
            "maximize cpu_utilization subject to threads_peak <= 16 and makespan_ms >= 10 and probes > 0"
        );
        assert!(Objective::parse("min threads_peak").is_ok());
    }

    #[test]
    fn bad_expressions_say_the_form() {
        for (text, needle) in [
            ("fastest", "must start with"),
            ("minimize makespan", "did you mean `makespan_ms`"),
            ("minimize makespan_ms if x < 3", "expected 'subject to'"),
            (
                "minimize makespan_ms subject to threads_peak = 3",
                "no comparison",
            ),
            (
                "minimize makespan_ms subject to threads_peak < many",
                "not a number",
            ),
            ("minimize makespan_ms subject to", "expected 'subject to'"),
        ] {
            let e = Objective::parse(text).unwrap_err();
            assert!(e.contains(needle), "{text}: {e}");
            assert!(e.contains("minimize METRIC"), "{e}");
        }
    }

    fn row(run: usize, point: Option<usize>, policy: &str, makespan: f64, probe: f64) -> Row {
        let mut metrics = vec![Some(0.0); METRICS.len()];
        metrics[m("completed")] = Some(1.0);
        metrics[m("makespan_ms")] = Some(makespan);
        metrics[m("probe_latency_max_ms")] = Some(probe);
        Row {
            run,
            point,
            policy: policy.into(),
            values: vec![point.map(|p| Value::Int(p as i64 + 1))],
            replicate: (run % 2) as u32,
            seed: 1,
            metrics,
        }
    }

    #[test]
    fn the_best_feasible_mean_wins_and_the_gain_is_reported() {
        let table = SweepTable {
            keys: vec!["k".into()],
            runs: 8,
            fingerprint: "f".into(),
            rows: vec![
                row(0, None, "base", 1000.0, 500.0),
                row(1, None, "base", 1000.0, 500.0),
                // point 0: fast but unresponsive
                row(2, Some(0), "p", 100.0, 90.0),
                row(3, Some(0), "p", 100.0, 90.0),
                // point 1: feasible, mean 400
                row(4, Some(1), "p", 300.0, 10.0),
                row(5, Some(1), "p", 500.0, 20.0),
                // point 2: feasible, mean 450
                row(6, Some(2), "p", 450.0, 10.0),
                row(7, Some(2), "p", 450.0, 10.0),
            ],
        };
        let o =
            Objective::parse("minimize makespan_ms subject to probe_latency_max_ms < 50").unwrap();
        let r = find_best(&table, &o);
        let best = r.best.as_ref().unwrap();
        assert_eq!(best.point, Some(1));
        assert_eq!(best.mean[m("makespan_ms")], Some(400.0));
        assert_eq!(r.feasible, 2);
        assert_eq!(r.points, 3);
        let text = r.text(&table.keys);
        assert!(text.contains("policy p, k = 2"), "{text}");
        assert!(
            text.contains("gain: makespan_ms 60.0 % lower (1000.0 -> 400.0)"),
            "{text}"
        );
        assert!(
            text.contains("misses probe_latency_max_ms < 50 (500.0)"),
            "{text}"
        );
        assert!(text.contains("300.0 to 500.0"), "{text}");

        let none =
            Objective::parse("minimize makespan_ms subject to probe_latency_max_ms < 1").unwrap();
        let r = find_best(&table, &none);
        assert!(r.best.is_none());
        assert!(r.text(&table.keys).contains("no point meets"));
    }

    #[test]
    fn a_points_band_is_the_spread_of_its_seeds() {
        let makespans = [700.0, 400.0, 900.0, 500.0];
        let table = SweepTable {
            keys: vec!["k".into()],
            runs: makespans.len(),
            fingerprint: "f".into(),
            rows: makespans
                .iter()
                .enumerate()
                .map(|(run, &ms)| row(run, Some(0), "p", ms, 0.0))
                .collect(),
        };
        let stats = aggregate(&table);
        let mk = m("makespan_ms");
        let q = Quantiles::of(makespans.to_vec());
        assert_eq!(stats[0].quantiles[mk], Some(q));
        assert_eq!(
            (stats[0].min[mk], stats[0].max[mk]),
            (Some(400.0), Some(900.0))
        );
        assert_eq!(stats[0].mean[mk], Some(625.0));
        assert_eq!(q.p50, 500.0);
    }
}
