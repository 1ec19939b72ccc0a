//! `poolsim validate --generate N --seed S --runtime R`: validation on
//! workloads nobody chose (`poolsim::generate`), each scenario checked as a
//! distribution (`poolsim::validate::distribution`), then the set summed
//! up.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use poolsim::engine::SimOptions;
use poolsim::generate::{self, Generated};
use poolsim::measure::{self, MeasureError, Runtime};
use poolsim::output::human_ms;
use poolsim::policy::PolicyConfig;
use poolsim::policy_file::resolve_policy;
use poolsim::scenario::ArrivalDraws;
use poolsim::scenario::Scenario;
use poolsim::scenario::load::parse_scenario;
use poolsim::spread;
use poolsim::validate::distribution::{
    self, DistTolerances, DistributionReport, LATENCY_P99_TOLERANCE, SetSummary, summarize_set,
};

use super::Failure;
use super::measure::{measure_runs, parse_runtime, run_timeout, save_runs};
use super::validate::{Grammar, ValidateArgs, check_runs};

/// The set passes with at least this share of measured runs in range ...
pub const SET_COVERAGE: f64 = 0.90;
/// ... and a median |median makespan error| of at most this.
pub const SET_MEDIAN_ERROR: f64 = 0.05;

/// The model a generated set names: `--policy`, else the runtime's own, else
/// (the native pool) the classic pool.
fn policy_name(runtime: Runtime, flag: Option<&str>) -> String {
    flag.or(runtime.policy())
        .unwrap_or("net-classic")
        .to_string()
}

pub fn run(args: &ValidateArgs) -> Result<(), Failure> {
    check_runs(args)?;
    let n = args.generate.unwrap_or(0);
    if n == 0 {
        return Err(Failure::error("--generate must be at least 1"));
    }
    if args.repeat == 0 {
        return Err(Failure::error("--repeat must be at least 1"));
    }
    let runtime = parse_runtime(&args.runtime)?;
    let name = policy_name(runtime, args.policy.as_deref());
    let policy = resolve_policy(&name)?;
    let sim_runs = args.runs.unwrap_or(100);
    let set = match args.grammar {
        Grammar::Bursts => generate::generate(n, args.seed, &name),
        Grammar::Apps => poolsim::generate_apps::generate_apps(n, args.seed, &name),
    };
    if args.dry_run {
        return dry_run(args, &policy, &set, sim_runs);
    }
    if !args.json {
        println!(
            "generated set: {n} scenarios, grammar seed {}, model {} against {}, {}, \
             {sim_runs} simulated seeds each",
            args.seed,
            policy.name,
            runtime.name(),
            match &args.fixtures {
                Some(dir) => format!("the runs recorded in {}", dir.display()),
                None => format!("{} live run(s) each", args.repeat),
            }
        );
        println!(
            "{:<16} {:>5} {:>5} {:>22} {:>28} {:>6} {:>8} {:>9} {:>5} {:>8} {:>8}  result",
            "scenario",
            "items",
            "cores",
            "model p5 .. p95",
            "measured min .. max (median)",
            "in",
            "median",
            "offsets",
            "KS D",
            "p99 lat",
            "curve"
        );
    }
    let mut reports: Vec<DistributionReport> = Vec::new();
    let mut failed: Vec<(String, i32)> = Vec::new();
    let mut hung: Vec<Hung> = Vec::new();
    for g in &set {
        match one(args, runtime, &policy, g, sim_runs) {
            Ok(Row::Compared(r, items, cores)) => {
                if !args.json {
                    print_row(g, &r, items, cores);
                }
                reports.push(*r);
            }
            Ok(Row::Hung(h)) => {
                if !args.json {
                    println!("{}", h.line());
                }
                hung.push(h);
            }
            Err(failure @ Failure::Input(_)) => return Err(failure),
            Err(failure) => {
                // The set goes on: the failure is said now.
                let code = failure.report();
                if !args.json {
                    println!("{:<16} run failed (exit {code}); left out", stem(g));
                }
                failed.push((stem(g), code));
            }
        }
        let _ = std::io::stdout().flush();
    }
    let summary = summarize_set(&reports);
    let pass = summary.coverage >= SET_COVERAGE
        && summary.median_abs_median_error <= SET_MEDIAN_ERROR
        && !reports.is_empty()
        && hung.iter().all(Hung::predicted);
    if args.json {
        let value = serde_json::json!({
            "grammar_seed": args.seed,
            "runtime": runtime.name(),
            "policy": policy.name,
            "repeat": args.repeat,
            "sim_runs": sim_runs,
            "scenarios": reports,
            "failed": failed,
            "hung": hung,
            "summary": summary,
            "pass": pass,
        });
        println!("{value}");
    } else {
        print_summary(&summary, &failed, &hung, pass);
    }
    if !failed.is_empty() {
        Err(Failure::Incomplete(None))
    } else if pass {
        Ok(())
    } else {
        Err(Failure::Miss)
    }
}

/// What one scenario of the set gave.
enum Row {
    /// Its runs, compared with the model's distribution (items, cores).
    Compared(Box<DistributionReport>, u64, u32),
    /// A real run passed its wall-clock limit.
    Hung(Hung),
}

/// A scenario whose real run never finished: it passed its wall-clock
/// limit and was killed ([`measure::hung_record`]). The model predicts it
/// when none of its runs completes (a deadlock).
#[derive(serde::Serialize)]
struct Hung {
    scenario: String,
    limit_s: f64,
    /// The model's runs that did not complete, of `sim_runs`.
    sim_incomplete: usize,
    sim_runs: usize,
}

impl Hung {
    fn predicted(&self) -> bool {
        self.sim_runs > 0 && self.sim_incomplete == self.sim_runs
    }

    fn line(&self) -> String {
        let model = match self.sim_incomplete {
            0 => format!("every one of its {} runs finishes", self.sim_runs),
            k => format!("{k} of its {} runs never finish", self.sim_runs),
        };
        format!(
            "{:<16} hung: a real run passed its {} limit and was killed; the model: {model}  {}",
            self.scenario,
            human_ms(self.limit_s * 1000.0),
            if self.predicted() {
                "as predicted"
            } else {
                "MISS"
            }
        )
    }

    fn of(
        g: &Generated,
        scenario: &Scenario,
        policy: &PolicyConfig,
        runs: usize,
        limit_s: f64,
    ) -> Hung {
        let sim = spread::spread_with_offsets(scenario, policy, runs, &SimOptions::default());
        Hung {
            scenario: stem(g),
            limit_s,
            sim_incomplete: sim.incomplete,
            sim_runs: sim.runs,
        }
    }
}

/// `--dry-run`: the model's ranges and the live cost, nothing run.
fn dry_run(
    args: &ValidateArgs,
    policy: &poolsim::policy::PolicyConfig,
    set: &[Generated],
    sim_runs: usize,
) -> Result<(), Failure> {
    let mut total_ms = 0.0;
    for g in set {
        let Ok(scenario) = parse_scenario(&g.toml, &g.file) else {
            return Err(Failure::error(format!(
                "generated {} does not load",
                g.file
            )));
        };
        let sim = spread::spread(
            &scenario,
            policy,
            sim_runs,
            ArrivalDraws::Fixed,
            &SimOptions::default(),
        );
        let q = sim.makespan_ms;
        total_ms += q.p50 * f64::from(args.repeat);
        println!(
            "{:<16} {:>3} items  model p5 {} p50 {} p95 {}  {}",
            stem(g),
            scenario.item_count(),
            human_ms(q.p5),
            human_ms(q.p50),
            human_ms(q.p95),
            scenario.name
        );
    }
    println!(
        "live: about {} of workload for {} run(s) each, plus each run's start-up",
        human_ms(total_ms),
        args.repeat
    );
    Ok(())
}

fn stem(g: &Generated) -> String {
    g.file.trim_end_matches(".toml").to_string()
}

/// Measures (or reads) and checks one generated scenario.
fn one(
    args: &ValidateArgs,
    runtime: Runtime,
    policy: &poolsim::policy::PolicyConfig,
    g: &Generated,
    sim_runs: usize,
) -> Result<Row, Failure> {
    // The grammar makes only valid scenarios (a unit test checks it).
    let mut scenario = parse_scenario(&g.toml, &g.file)
        .map_err(|e| Failure::error(format!("generated {} does not load: {e}", g.file)))?;
    if args.no_tiered_compilation {
        scenario.pool.tiered_compilation = false;
    }
    let tiered = scenario.pool.tiered_compilation;
    let runs = match &args.fixtures {
        Some(dir) => {
            check_recorded_text(dir, g)?;
            if let Some(limit_s) = measure::read_hung(&dir.join(stem(g)), runtime) {
                return Ok(Row::Hung(Hung::of(g, &scenario, policy, sim_runs, limit_s)));
            }
            // Its message says `error: ` itself.
            measure::read_recorded(&dir.join(stem(g)), runtime, &scenario)
                .map_err(Failure::Input)?
        }
        None => {
            let timeout = run_timeout(args.timeout_s, &scenario, policy);
            let mut runs =
                match measure_runs(runtime, &scenario, policy, args.repeat, timeout, tiered) {
                    Ok(runs) => runs,
                    Err(MeasureError::TimedOut(limit)) => {
                        if let Some(dir) = &args.record {
                            let file = dir.join(&g.file);
                            std::fs::create_dir_all(dir)
                                .and_then(|_| std::fs::write(&file, &g.toml))
                                .and_then(|_| {
                                    measure::write_hung(
                                        &dir.join(stem(g)),
                                        runtime,
                                        &file.display().to_string(),
                                        limit,
                                    )
                                })
                                .map_err(anyhow::Error::from)?;
                        }
                        let limit_s = limit.as_secs_f64();
                        return Ok(Row::Hung(Hung::of(g, &scenario, policy, sim_runs, limit_s)));
                    }
                    Err(e) => return Err(e.into()),
                };
            if let Some(dir) = &args.record {
                let file = dir.join(&g.file);
                std::fs::create_dir_all(dir)
                    .and_then(|_| std::fs::write(&file, &g.toml))
                    .map_err(anyhow::Error::from)
                    .and_then(|_| {
                        save_runs(&dir.join(stem(g)), &mut runs, runtime, &file, tiered)
                    })?;
            }
            runs
        }
    };
    let scenario = measure::as_recorded(&scenario, &runs);
    let sim = spread::spread_with_offsets(&scenario, policy, sim_runs, &SimOptions::default());
    let measured: Vec<_> = runs.into_iter().map(|m| m.trace).collect();
    let report = distribution::compare_distributions(
        &sim,
        (&scenario.name, &policy.name),
        &measured,
        runtime.name(),
        &DistTolerances::default(),
    );
    Ok(Row::Compared(
        Box::new(report),
        scenario.item_count(),
        scenario.machine.cores,
    ))
}

/// A recorded set must be the set the grammar draws now.
fn check_recorded_text(dir: &Path, g: &Generated) -> Result<(), Failure> {
    let file: PathBuf = dir.join(&g.file);
    match std::fs::read_to_string(&file) {
        Ok(text) if text == g.toml => Ok(()),
        Ok(_) => Err(Failure::error(format!(
            "{} differs from what the grammar draws now: the recordings are of \
             another set (record it again with --record)",
            file.display()
        ))),
        Err(e) => Err(Failure::error(format!("{}: {e}", file.display()))),
    }
}

fn print_row(g: &Generated, r: &DistributionReport, items: u64, cores: u32) {
    let q = &r.sim_makespan_ms;
    let m = &r.measured_makespans_ms;
    let (lo, hi) = m
        .iter()
        .fold((f64::INFINITY, 0.0f64), |(a, b), &x| (a.min(x), b.max(x)));
    let med = poolsim::validate::distribution::median_of(m);
    println!(
        "{:<16} {:>5} {:>5} {:>22} {:>28} {:>6} {:>7.1}% {:>6.0} ms {:>5.2} {:>7.1}% {:>8}  {}",
        stem(g),
        items,
        cores,
        format!("{} .. {}", human_ms(q.p5), human_ms(q.p95)),
        format!("{} .. {} ({})", human_ms(lo), human_ms(hi), human_ms(med)),
        format!("{}/{}", r.covered, m.len()),
        r.median_error * 100.0,
        r.offset_error_ms,
        r.ks.d,
        r.latency_p99_ms.error() * 100.0,
        // Threads apart on average, `*` beyond the tolerance.
        format!(
            "{:.1}{}",
            r.threads_curve_distance,
            if r.threads_curve_within { " " } else { "*" }
        ),
        if r.pass { "pass" } else { "FAIL" }
    );
}

fn print_summary(s: &SetSummary, failed: &[(String, i32)], hung: &[Hung], pass: bool) {
    println!();
    println!(
        "measured runs inside the simulated range (+/- 2 %): {} of {} ({:.1} %; target >= {:.0} %)",
        s.covered_runs,
        s.measured_runs,
        s.coverage * 100.0,
        SET_COVERAGE * 100.0
    );
    println!(
        "median over the scenarios of |median makespan error|: {:.1} % (target <= {:.0} %)",
        s.median_abs_median_error * 100.0,
        SET_MEDIAN_ERROR * 100.0
    );
    println!(
        "scenarios whose measured runs agree within 1 %: {}; of those, the model's p5-p95 \
         within 2 %: {}",
        s.agreeing, s.agreeing_sim_tight
    );
    match s.median_width_ratio {
        Some(r) => println!("median model p5-p95 width / measured min-max width: {r:.2}"),
        None => {
            println!("median model p5-p95 width / measured min-max width: - (no spread measured)")
        }
    }
    println!(
        "two-sample KS on makespans: median D {:.2}; p < 0.05 in {:.0} % of the scenarios",
        s.median_ks_d,
        s.ks_rejected_share * 100.0
    );
    println!(
        "p99 latency (queued -> finished), model median within {:.0} % of the measured median: \
         {} of {} scenarios; median |p99 error| {:.1} %; median |peak threads error| {:.1} \
         (reported, not checked)",
        LATENCY_P99_TOLERANCE * 100.0,
        s.latency_p99_within,
        s.scenarios,
        s.median_abs_latency_p99_error * 100.0,
        s.median_abs_peak_error
    );
    println!(
        "thread-count curve (column `curve`: threads apart on average, each measured run \
         against the model's median curve), within max(1.5, 20 % of the peak) threads: {} of {} \
         scenarios (reported, not checked)",
        s.threads_curve_within, s.scenarios
    );
    if s.misses_over_10_percent.is_empty() {
        println!("no scenario's median misses by more than 10 %");
    } else {
        println!("medians missing by more than 10 %:");
        for (name, e) in &s.misses_over_10_percent {
            println!("  {:+.1} %  {name}", e * 100.0);
        }
    }
    if !hung.is_empty() {
        let predicted = hung.iter().filter(|h| h.predicted()).count();
        println!(
            "hung past the wall-clock limit (not in the figures above): {} scenario(s), {} as \
             the model predicts (none of its runs finishes){}",
            hung.len(),
            predicted,
            if predicted < hung.len() {
                ": the others are misses"
            } else {
                ""
            }
        );
    }
    for (name, code) in failed {
        println!("run failed: {name} (exit {code})");
    }
    println!("{}", if pass { "PASS" } else { "FAIL" });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hung(sim_incomplete: usize) -> Hung {
        Hung {
            scenario: "apps-2-06".into(),
            limit_s: 280.257,
            sim_incomplete,
            sim_runs: 100,
        }
    }

    #[test]
    fn a_hang_is_predicted_only_when_no_run_of_the_model_finishes() {
        assert!(hung(100).predicted());
        assert!(hung(100).line().ends_with("as predicted"));
        assert!(!hung(99).predicted());
        assert!(hung(99).line().contains("99 of its 100 runs never finish"));
        assert!(
            hung(0)
                .line()
                .contains("every one of its 100 runs finishes")
        );
        assert!(hung(0).line().ends_with("MISS"));
        assert!(
            hung(0).line().contains("4 min 40.3 s limit"),
            "{}",
            hung(0).line()
        );
    }
}
