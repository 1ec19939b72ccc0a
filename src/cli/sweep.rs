//! `poolsim sweep` and `poolsim sweep-merge`: parameter sweeps in parallel,
//! a CSV row per run, a chart of metrics against a swept key, the best
//! point under constraints, and shards for spreading a sweep over machines.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};

use poolsim::output;
use poolsim::render::lines::{render_lines_png, render_lines_svg};
use poolsim::scenario::ArrivalDraws;
use poolsim::scenario::load::load_scenario;
use poolsim::sweep::best::{aggregate, find_best, human};
use poolsim::sweep::grid::{self, Shard};
use poolsim::sweep::plot::{self, PlotSpec};
use poolsim::sweep::smallest::{self, SmallestQuestion};
use poolsim::sweep::table::metric_index;
use poolsim::sweep::{METRICS, Objective, Plan, SweepInput, SweepTable, merge, run};

use super::Failure;
use super::failure::EXIT_INTERRUPTED;

/// `println!` that ignores a closed stdout (`poolsim sweep … | head`).
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout(), $($arg)*);
    }};
}

/// At most this many worker threads.
const MAX_JOBS: usize = 1024;

const DEFAULT_CSV: &str = "output/sweep.csv";

/// Set by Ctrl-C: runs not yet started are skipped.
static CANCEL: AtomicBool = AtomicBool::new(false);

#[derive(Args, Debug)]
#[command(after_help = "\
Examples:
  poolsim sweep scenarios/seed-001-burst.toml --set pool.min_threads=1..16
  poolsim sweep scenarios/sweep-seed-003-throttle.toml \\
    --set group.work.throttle.limit=1..64 --policy net5 --policy net6 --seeds 8 \\
    --metric makespan_ms --metric probe_latency_max_ms \\
    --best 'minimize makespan_ms subject to probe_latency_max_ms < 50' \\
    --csv sweep.csv --png sweep.png
  poolsim sweep scenarios/seed-001-burst.toml --set pool.min_threads=1..64:*2 \
    --policy net8 --policy net-classic --seeds 20 \
    --best 'minimize pool.min_threads subject to start_delay_max_ms < 100'

'minimize KEY subject to ...' of a swept KEY answers per policy with the
smallest whole value from the range's lowest to its highest (not only the
grid's points) whose runs meet the conditions: every run, or 95 % of them
from 20 seeds on. It is the search of `run`'s verdict fix.

Files are written only when asked (--csv, --png, --svg; a --shard writes
its CSV by default).

Exit codes: 0 done; 2 bad input (a key, range or grid point that cannot be
built is refused before any run); 130 stopped by Ctrl-C (the finished rows
are written).")]
pub struct SweepArgs {
    /// The scenario file (TOML).
    pub scenario: PathBuf,
    /// KEY=VALUES: a numeric scenario key by its TOML path
    /// (pool.min_threads, machine.cores, group.NAME.count,
    /// group.NAME.throttle.limit, group[0].body[0].sleep_ms) or a policy key
    /// (policy.hill_climbing.max_change_per_second, policy.throttle.limit);
    /// VALUES a list (1,2,4), a range (1..64 or 1..64:4) or a geometric
    /// range (1..64:*2). Several --set form a grid.
    #[arg(long = "set", value_name = "KEY=VALUES", required = true)]
    pub sets: Vec<String>,
    /// A policy to sweep under (repeat for several; a line each): a
    /// built-in name or a policy file. Default: the scenario's.
    #[arg(long = "policy", short = 'p', value_name = "POLICY")]
    pub policies: Vec<String>,
    /// Runs per point, with seeds SEED, SEED+1, … (SEED: the scenario's
    /// `seed` at that point): the CSV has every run, the chart the mean and
    /// the spread.
    #[arg(long, default_value_t = 1, value_name = "N")]
    pub seeds: u32,
    #[arg(long, help = super::FIXED_ARRIVALS_HELP)]
    pub fixed_arrivals: bool,
    /// The metric to chart and tabulate (repeat for stacked panels;
    /// default makespan_ms): completed, items, finished, makespan_ms,
    /// start_delay_p50_ms, start_delay_p95_ms, start_delay_max_ms,
    /// start_delay_mean_ms, start_delay_p99_ms, latency_p50_ms,
    /// latency_p95_ms, latency_p99_ms, latency_max_ms, time_starved_ms,
    /// threads_peak, threads_created, threads_created_demand,
    /// threads_created_starvation, threads_created_hill_climbing,
    /// threads_created_cooperative_blocking, probes,
    /// probe_latency_first_ms, probe_latency_max_ms, cpu_utilization.
    #[arg(long = "metric", short = 'm', value_name = "METRIC")]
    pub metrics: Vec<String>,
    /// Find the best point: 'minimize METRIC [subject to METRIC < NUMBER
    /// [and ...]]' (or maximize; <, <=, >, >=), judged by the mean over
    /// seeds; or 'minimize KEY subject to ...' of a swept KEY: its smallest
    /// value that meets the conditions, per policy.
    #[arg(long, value_name = "EXPR")]
    pub best: Option<String>,
    /// The swept key on the chart's x axis (default: the first --set).
    #[arg(long, value_name = "KEY")]
    pub x: Option<String>,
    /// The chart's title (default: "SCENARIO NAME by KEY").
    #[arg(long, value_name = "TEXT")]
    pub title: Option<String>,
    /// Write a CSV row per run here (not written unless given; with
    /// --shard the default is output/sweep-shard-K-of-N.csv).
    #[arg(long, value_name = "FILE.csv")]
    pub csv: Option<PathBuf>,
    /// Draw the chart of --metric against the first key here (not drawn
    /// unless given).
    #[arg(long, value_name = "FILE.png")]
    pub png: Option<PathBuf>,
    /// The chart as SVG too.
    #[arg(long, value_name = "FILE.svg")]
    pub svg: Option<PathBuf>,
    /// Run only shard K of N: runs i with i % N == K-1. Join the shards'
    /// CSVs with `poolsim sweep-merge`.
    #[arg(long, value_name = "K/N")]
    pub shard: Option<String>,
    /// Worker threads (default: one per core).
    #[arg(long, short = 'j', value_name = "N")]
    pub jobs: Option<usize>,
    /// No progress bar.
    #[arg(long, short = 'q')]
    pub quiet: bool,
}

#[derive(Args, Debug)]
#[command(after_help = "\
Examples:
  # a sweep in two shards (on two machines, or one after the other), then joined:
  poolsim sweep scenarios/seed-001-burst.toml --set pool.min_threads=4..12 --shard 1/2 --csv a.csv
  poolsim sweep scenarios/seed-001-burst.toml --set pool.min_threads=4..12 --shard 2/2 --csv b.csv
  poolsim sweep-merge a.csv b.csv --csv all.csv --png all.png \\
      --best 'minimize makespan_ms subject to time_starved_ms < 100'

Exit codes: 0 merged; 2 bad input (a file that is not a shard of the same sweep, a run in
two shards, a run missing from every shard without --allow-partial).")]
pub struct SweepMergeArgs {
    /// The shards' CSVs (`poolsim sweep --shard K/N` outputs).
    #[arg(required = true, value_name = "SHARD.csv")]
    pub inputs: Vec<PathBuf>,
    /// Where to write the merged CSV (default output/sweep.csv).
    #[arg(long, value_name = "FILE.csv")]
    pub csv: Option<PathBuf>,
    /// Draw the chart here (not drawn unless given).
    #[arg(long, value_name = "FILE.png")]
    pub png: Option<PathBuf>,
    /// The chart as SVG too.
    #[arg(long, value_name = "FILE.svg")]
    pub svg: Option<PathBuf>,
    /// The metric to chart (repeat for stacked panels; default makespan_ms).
    #[arg(long = "metric", short = 'm', value_name = "METRIC")]
    pub metrics: Vec<String>,
    /// Find the best point, as `sweep --best`.
    #[arg(long, value_name = "EXPR")]
    pub best: Option<String>,
    /// The swept key on the chart's x axis (default: the first key).
    #[arg(long, value_name = "KEY")]
    pub x: Option<String>,
    /// The chart's title.
    #[arg(long, value_name = "TEXT")]
    pub title: Option<String>,
    /// Merge even if some runs are in no input (an interrupted or missing shard).
    #[arg(long)]
    pub allow_partial: bool,
}

/// `1 point`, `2 points`, `2 policies`.
fn plural(n: usize, word: &str) -> String {
    match (n, word.strip_suffix('y')) {
        (1, _) => format!("1 {word}"),
        (_, Some(stem)) => format!("{n} {stem}ies"),
        _ => format!("{n} {word}s"),
    }
}

/// The chart's metrics, the objective and the output paths: everything
/// checked before any run starts.
struct Outputs {
    metrics: Vec<usize>,
    objective: Option<Objective>,
    csv: Option<PathBuf>,
    png: Option<PathBuf>,
    svg: Option<PathBuf>,
    /// Default directories to create before writing.
    make_dirs: Vec<PathBuf>,
}

/// The output flags of `sweep` and `sweep-merge`.
struct OutputFlags<'a> {
    metrics: &'a [String],
    best: Option<&'a str>,
    csv: Option<PathBuf>,
    /// Where the CSV goes when `--csv` is not given (`None`: nowhere).
    default_csv: Option<&'a str>,
    png: Option<PathBuf>,
    svg: Option<PathBuf>,
}

fn check_outputs(flags: OutputFlags<'_>, inputs: &[&Path]) -> Result<Outputs, String> {
    let OutputFlags {
        metrics,
        best,
        csv,
        default_csv,
        png,
        svg,
    } = flags;
    let names: Vec<&str> = if metrics.is_empty() {
        vec!["makespan_ms"]
    } else {
        metrics.iter().map(String::as_str).collect()
    };
    let mut indices = Vec::new();
    for name in names {
        let i = metric_index(name).map_err(|e| format!("--metric {name}: {e}"))?;
        if !indices.contains(&i) {
            indices.push(i);
        }
    }
    let objective = best.map(Objective::parse).transpose()?;
    let csv_given = csv.is_some();
    let png_given = png.is_some();
    let csv = csv.or_else(|| default_csv.map(PathBuf::from));
    let outputs = [
        ("--csv", csv.as_deref(), "csv"),
        ("--png", png.as_deref(), "png"),
        ("--svg", svg.as_deref(), "svg"),
    ];
    output::check_outputs(&outputs, inputs).map_err(|e| format!("{e:#}"))?;
    // The default directory is made (by `Outputs::make_dirs`, once the
    // sweep is accepted); a given one must exist, checked now rather than
    // after the runs.
    let mut make_dirs = Vec::new();
    for (path, given) in [(csv.as_ref(), csv_given), (png.as_ref(), png_given)] {
        let Some(path) = path else { continue };
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => continue,
        };
        if !dir.is_dir() {
            if given {
                return Err(format!(
                    "cannot write {}: directory {} does not exist",
                    path.display(),
                    dir.display()
                ));
            }
            if !make_dirs.contains(&dir) {
                make_dirs.push(dir);
            }
        }
    }
    if let Some(path) = &svg {
        let dir = path.parent().filter(|d| !d.as_os_str().is_empty());
        if let Some(dir) = dir
            && !dir.is_dir()
        {
            return Err(format!(
                "cannot write {}: directory {} does not exist",
                path.display(),
                dir.display()
            ));
        }
    }
    Ok(Outputs {
        metrics: indices,
        objective,
        csv,
        png,
        svg,
        make_dirs,
    })
}

impl Outputs {
    /// Creates the default output directory if it is missing.
    fn make_dirs(&self) -> Result<(), String> {
        for dir in &self.make_dirs {
            std::fs::create_dir_all(dir)
                .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        }
        Ok(())
    }
}

/// Renders and writes the CSV and charts of `table`; prints `--best`.
fn finish(
    table: &SweepTable,
    out: &Outputs,
    x: Option<&str>,
    title: Option<&str>,
    best_allowed: bool,
) -> Result<(), String> {
    let report = match (&out.objective, best_allowed) {
        (Some(o), true) => Some(find_best(table, o)),
        _ => None,
    };
    let spec = PlotSpec {
        metrics: out.metrics.clone(),
        x: x.map(str::to_string),
        title: title.map(str::to_string),
        best: report
            .as_ref()
            .and_then(|r| r.best.as_ref())
            .and_then(|b| Some((b.point?, b.policy.clone()))),
    };
    let mut files: Vec<(&PathBuf, Vec<u8>)> = Vec::new();
    if let Some(csv) = &out.csv {
        files.push((csv, table.to_csv().map_err(|e| e.to_string())?));
    }
    if out.png.is_some() || out.svg.is_some() {
        let chart = plot::chart(table, &spec).map_err(|e| e.to_string())?;
        if let Some(path) = &out.png {
            files.push((path, render_lines_png(&chart).map_err(|e| e.to_string())?));
        }
        if let Some(path) = &out.svg {
            files.push((
                path,
                render_lines_svg(&chart)
                    .map_err(|e| e.to_string())?
                    .into_bytes(),
            ));
        }
    }
    output::write_all_atomic(&files).map_err(|e| format!("{e:#}"))?;
    // The table shows every charted metric and every metric --best names.
    let mut shown = out.metrics.clone();
    if let Some(o) = &out.objective {
        for m in std::iter::once(o.metric).chain(o.constraints.iter().map(|c| c.metric)) {
            if !shown.contains(&m) {
                shown.push(m);
            }
        }
    }
    print_points(table, &shown);
    if let Some(r) = report {
        say!();
        say!("{}", r.text(&table.keys).trim_end());
    }
    if files.is_empty() {
        say!("wrote no file (--csv F keeps a row per run, --png F draws the chart)");
    } else {
        let written: Vec<String> = files.iter().map(|(p, _)| p.display().to_string()).collect();
        say!("wrote {}", written.join(", "));
    }
    Ok(())
}

/// The mean of each of `metrics` at every point, with the lowest and
/// highest seed of the first, when there are few points.
fn print_points(table: &SweepTable, metrics: &[usize]) {
    let metric = metrics[0];
    let stats = aggregate(table);
    if stats.len() > 80 {
        say!(
            "{} points x policies: see the CSV for each",
            stats.len().saturating_sub(1)
        );
        return;
    }
    let name = METRICS[metric].name;
    let mut rows: Vec<Vec<String>> = vec![
        std::iter::once("policy".to_string())
            .chain(table.keys.iter().cloned())
            .chain([name.to_string(), "lowest".into(), "highest".into()])
            .chain(metrics[1..].iter().map(|&m| METRICS[m].name.to_string()))
            .chain(["runs".into()])
            .collect(),
    ];
    for s in &stats {
        let mut row = vec![match s.point {
            None => format!("{} (as written)", s.policy),
            Some(_) => s.policy.clone(),
        }];
        row.extend(
            s.values
                .iter()
                .map(|v| v.map_or("-".to_string(), |v| v.to_string())),
        );
        let cell = |v: Option<f64>| v.map_or("-".to_string(), human);
        row.push(cell(s.mean[metric]));
        row.push(cell(s.min[metric]));
        row.push(cell(s.max[metric]));
        row.extend(metrics[1..].iter().map(|&m| cell(s.mean[m])));
        row.push(if s.completed == s.runs {
            s.runs.to_string()
        } else {
            format!("{} ({} incomplete)", s.runs, s.runs - s.completed)
        });
        rows.push(row);
    }
    let cols = rows[0].len();
    let widths: Vec<usize> = (0..cols)
        .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
        .collect();
    for r in &rows {
        let line: Vec<String> = r
            .iter()
            .enumerate()
            .map(|(c, cell)| {
                if c == 0 {
                    format!("{cell:<w$}", w = widths[c])
                } else {
                    format!("{cell:>w$}", w = widths[c])
                }
            })
            .collect();
        say!("{}", line.join("  "));
    }
}

pub fn run(args: SweepArgs) -> Result<(), Failure> {
    let axes = args
        .sets
        .iter()
        .map(|set| grid::parse_set(set))
        .collect::<Result<Vec<_>, _>>()?;
    let shard = args.shard.as_deref().map(Shard::parse).transpose()?;
    if let Some(s) = shard {
        if args.best.is_some() {
            return Err(Failure::error(format!(
                "--best needs every run of the sweep, and --shard {s} runs a slice: use --best on `poolsim sweep-merge` of the shards"
            )));
        }
        if args.png.is_some() || args.svg.is_some() {
            return Err(Failure::error(format!(
                "--shard {s} runs a slice of the sweep: draw the chart with `poolsim sweep-merge` of the shards"
            )));
        }
    }
    if let Some(x) = &args.x
        && !axes.iter().any(|a| a.key == x.trim())
    {
        let keys: Vec<&str> = axes.iter().map(|a| a.key.as_str()).collect();
        return Err(Failure::error(format!(
            "--x {x}: not a swept key; the keys are {}",
            keys.join(", ")
        )));
    }
    if let Some(j) = args.jobs
        && !(1..=MAX_JOBS).contains(&j)
    {
        return Err(Failure::error(format!(
            "--jobs {j}: give from 1 to {MAX_JOBS} worker threads"
        )));
    }
    // `minimize KEY …` of a swept key: the smallest value, searched after
    // the grid (the table and chart are the grid's as ever).
    let keys: Vec<&str> = axes.iter().map(|a| a.key.as_str()).collect();
    let smallest = match args.best.as_deref() {
        Some(b) => SmallestQuestion::parse(b, &keys)?,
        None => None,
    };
    // A shard's CSV is its whole output; a whole sweep writes files only
    // when asked.
    let default_csv = shard.map(|s| format!("output/sweep-shard-{}-of-{}.csv", s.k, s.n));
    let flags = OutputFlags {
        metrics: &args.metrics,
        best: args.best.as_deref().filter(|_| smallest.is_none()),
        csv: args.csv.clone(),
        default_csv: default_csv.as_deref(),
        png: args.png.clone(),
        svg: args.svg.clone(),
    };
    let outputs = check_outputs(flags, &[args.scenario.as_path()])?;
    // The file as written first: the loader's messages, with lines.
    load_scenario(&args.scenario)?;
    let text = std::fs::read_to_string(&args.scenario)
        .map_err(|e| Failure::error(format!("cannot read {}: {e}", args.scenario.display())))?;
    let input = SweepInput {
        scenario_text: text,
        scenario_file: args.scenario.display().to_string(),
        axes,
        policies: args.policies.clone(),
        seeds: args.seeds,
        arrivals: ArrivalDraws::from_fixed_flag(args.fixed_arrivals),
    };
    let plan = Plan::build(&input)?;
    let runs = plan.runs(shard);
    outputs.make_dirs()?;

    // Ctrl-C: finish the runs in progress, skip the rest, keep the rows. A
    // second Ctrl-C stops at once.
    let _ = ctrlc::set_handler(|| {
        if CANCEL.swap(true, Ordering::SeqCst) {
            std::process::exit(EXIT_INTERRUPTED);
        }
    });
    let bar = if args.quiet {
        ProgressBar::hidden()
    } else {
        ProgressBar::new(runs.len() as u64)
    };
    if let Ok(style) =
        ProgressStyle::with_template("{bar:40} {pos}/{len} runs  {elapsed_precise}  eta {eta}")
    {
        bar.set_style(style);
    }
    let threads = args.jobs.unwrap_or_else(|| {
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
    });
    let started = Instant::now();
    let done = run::execute(&plan, &runs, Some(threads), &CANCEL, &|| bar.inc(1));
    bar.finish_and_clear();
    let done = done?;
    let seconds = started.elapsed().as_secs_f64();
    let shard_note = shard.map_or(String::new(), |s| format!(" (shard {s})"));
    say!(
        "{}: {} of {} runs{shard_note} ({} x {} x {}, + {} as written) in {seconds:.2} s on {}",
        plan.scenario_name,
        done.rows.len(),
        plan.total_runs(),
        plural(plan.points.len(), "point"),
        plural(plan.policies.len(), "policy"),
        plural(plan.seeds as usize, "seed"),
        plan.seeds,
        plural(threads, "thread"),
    );
    let incomplete = done
        .rows
        .iter()
        .filter(|r| r.metrics[0] != Some(1.0))
        .count();
    if incomplete > 0 {
        say!(
            "note: {} did not complete (time limit or stall): completed = 0 in the CSV, and --best leaves their points out",
            plural(incomplete, "run")
        );
    }
    let interrupted = done.interrupted;
    let table = plan.table(done.rows);
    let title = args.title.clone().unwrap_or_else(|| {
        let key = args.x.clone().unwrap_or_else(|| table.keys[0].clone());
        format!("{} by {key}", plan.scenario_name)
    });
    finish(
        &table,
        &outputs,
        args.x.as_deref(),
        Some(&title),
        !interrupted,
    )?;
    if let Some(q) = &smallest
        && !interrupted
    {
        let answers = smallest::answer(&input, q)?;
        say!("{}", smallest::text(q, &answers).trim_end());
    }
    if interrupted {
        return Err(Failure::Interrupted(format!(
            "interrupted: {} of {} runs finished{}",
            table.rows.len(),
            done.wanted,
            outputs
                .csv
                .as_ref()
                .map_or(String::new(), |c| format!("; {} holds them", c.display()))
        )));
    }
    Ok(())
}

pub fn merge(args: SweepMergeArgs) -> Result<(), Failure> {
    let inputs: Vec<&Path> = args.inputs.iter().map(PathBuf::as_path).collect();
    let flags = OutputFlags {
        metrics: &args.metrics,
        best: args.best.as_deref(),
        csv: args.csv.clone(),
        default_csv: Some(DEFAULT_CSV),
        png: args.png.clone(),
        svg: args.svg.clone(),
    };
    let outputs = check_outputs(flags, &inputs)?;
    let mut tables = Vec::new();
    for path in &args.inputs {
        let name = path.display().to_string();
        let bytes =
            std::fs::read(path).map_err(|e| Failure::error(format!("cannot read {name}: {e}")))?;
        let table = SweepTable::from_csv(&bytes, &name)?;
        tables.push((name, table));
    }
    let table = merge::merge(&tables, args.allow_partial)?;
    plot::x_column(&table, args.x.as_deref())?;
    outputs.make_dirs()?;
    say!(
        "merged {} runs of {} from {} files (sweep {})",
        table.rows.len(),
        table.runs,
        args.inputs.len(),
        table.fingerprint
    );
    finish(
        &table,
        &outputs,
        args.x.as_deref(),
        args.title.as_deref(),
        true,
    )?;
    Ok(())
}
