//! Mutational fuzzing of the scenario and policy loaders and the engine, on
//! the stable toolchain.
//!
//! ```sh
//! cargo run --release --example fuzz_scenarios -- [--seconds N] [--seed S] [--out DIR]
//!     [--max-items N] [--seeds DIR]...
//! ```
//!
//! Starts from every `.toml` in `scenarios/`, `tests/corpus/` and
//! `policies/` (or the `--seeds` directories), mutates them (see `fuzzer.rs`), loads each input and
//! simulates it if it loads (one simulated minute, two million events, no
//! trace; scenarios over `--max-items`, default one million, are loaded but
//! not simulated). A panic is a crash: the input and the message are saved in
//! `output/fuzz-crashes/` (`crash-SEED-N.toml` and `.txt`, at most three per
//! distinct message). An input taking more than 5 s is a hang, saved as
//! `hang-SEED-N.toml`. Runs that stall (no event left, items unfinished,
//! no deadlock) are saved as `stalled-SEED-N.toml` (the first five). The
//! input being checked is kept in `last-input.toml` until the run ends, for
//! a crash that kills the process (a stack overflow). Exit code 0 if
//! nothing was found, 1 otherwise.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::mpsc;
use std::time::{Duration, Instant};

mod fuzzer;

use fuzzer::{Generator, Input, Kind, Limits, Stats, Verdict, check, load_seeds};

/// An input slower than this is a hang.
const HANG: Duration = Duration::from_secs(5);
/// How long to wait for a hung input before giving up on the run.
const GIVE_UP: Duration = Duration::from_secs(600);
/// Saved inputs per distinct panic message.
const SAVED_PER_CRASH: usize = 3;
/// Saved inputs whose run stalled: the event queue ran dry with items
/// unfinished and no deadlock to explain it (a lost wake-up, or a policy
/// that never makes a thread). Not a crash, but worth a look.
const SAVED_STALLS: u64 = 5;

/// Where the last panic happened (set by the quiet panic hook).
static LAST_PANIC: Mutex<Option<String>> = Mutex::new(None);

struct Args {
    seconds: u64,
    seed: u64,
    out: PathBuf,
    max_items: u64,
    /// Seed directories; default `scenarios/`, `tests/corpus/`, `policies/`.
    seeds: Vec<PathBuf>,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        seconds: 60,
        seed: 1,
        out: Path::new(env!("CARGO_MANIFEST_DIR")).join("output/fuzz-crashes"),
        max_items: Limits::default().max_items,
        seeds: Vec::new(),
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = |name: &str| it.next().ok_or(format!("{name} needs a value"));
        match flag.as_str() {
            "--seconds" => {
                args.seconds = value("--seconds")?
                    .parse()
                    .map_err(|e| format!("--seconds: {e}"))?
            }
            "--seed" => {
                args.seed = value("--seed")?
                    .parse()
                    .map_err(|e| format!("--seed: {e}"))?
            }
            "--out" => args.out = PathBuf::from(value("--out")?),
            "--seeds" => args.seeds.push(PathBuf::from(value("--seeds")?)),
            "--max-items" => {
                args.max_items = value("--max-items")?
                    .parse()
                    .map_err(|e| format!("--max-items: {e}"))?
            }
            "-h" | "--help" => {
                return Err(
                    "usage: fuzz_scenarios [--seconds N] [--seed S] [--out DIR] [--max-items N] [--seeds DIR]..."
                        .to_string(),
                );
            }
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    Ok(args)
}

/// A job for the worker thread and its answer.
struct Job {
    bytes: Vec<u8>,
    kind: Kind,
    dir: PathBuf,
}

struct Answer {
    verdict: Verdict,
    elapsed: Duration,
    location: Option<String>,
}

fn spawn_worker(limits: Limits) -> (mpsc::Sender<Job>, mpsc::Receiver<Answer>) {
    let (job_tx, job_rx) = mpsc::channel::<Job>();
    let (answer_tx, answer_rx) = mpsc::channel::<Answer>();
    std::thread::Builder::new()
        .name("fuzz-worker".into())
        // Deep inputs recurse in the TOML parser; give it room.
        .stack_size(64 << 20)
        .spawn(move || {
            for job in job_rx {
                *LAST_PANIC.lock().unwrap_or_else(|p| p.into_inner()) = None;
                let start = Instant::now();
                let verdict = check(&job.bytes, job.kind, &job.dir, &limits);
                let elapsed = start.elapsed();
                let location = LAST_PANIC.lock().unwrap_or_else(|p| p.into_inner()).take();
                if answer_tx
                    .send(Answer {
                        verdict,
                        elapsed,
                        location,
                    })
                    .is_err()
                {
                    break;
                }
            }
        })
        .expect("the worker thread starts");
    (job_tx, answer_rx)
}

fn write(path: &Path, bytes: &[u8]) {
    if let Err(e) = std::fs::write(path, bytes) {
        eprintln!("cannot write {}: {e}", path.display());
    }
}

fn describe(input: &Input, generator: &Generator<'_>) -> String {
    format!(
        "from: {}\nmutations: {:?}\n",
        generator.seed(input.seed).name,
        input.mutations
    )
}

fn main() {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dirs = if args.seeds.is_empty() {
        vec![
            root.join("scenarios"),
            root.join("tests/corpus"),
            root.join("policies"),
        ]
    } else {
        args.seeds.clone()
    };
    let dir_refs: Vec<&Path> = dirs.iter().map(PathBuf::as_path).collect();
    let seeds = match load_seeds(&dir_refs) {
        Ok(s) if !s.is_empty() => s,
        Ok(_) => {
            eprintln!("no seed files found");
            std::process::exit(2);
        }
        Err(e) => {
            eprintln!("cannot read the seed files: {e}");
            std::process::exit(2);
        }
    };
    if let Err(e) = std::fs::create_dir_all(&args.out) {
        eprintln!("cannot create {}: {e}", args.out.display());
        std::process::exit(2);
    }
    std::panic::set_hook(Box::new(|info| {
        let at = info
            .location()
            .map_or("unknown place".to_string(), |l| l.to_string());
        *LAST_PANIC.lock().unwrap_or_else(|p| p.into_inner()) = Some(at);
    }));

    println!(
        "fuzzing {} seed files for {} s, seed {} (crashes in {})",
        seeds.len(),
        args.seconds,
        args.seed,
        args.out.display()
    );
    let limits = Limits {
        max_items: args.max_items,
        ..Limits::default()
    };
    let (jobs, answers) = spawn_worker(limits);
    let mut generator = Generator::new(&seeds, args.seed);
    let mut stats = Stats::default();
    let mut crashes: BTreeMap<String, usize> = BTreeMap::new();
    let mut hangs = 0u64;
    let mut stalls = 0u64;
    let mut slowest: Option<(Duration, Input)> = None;
    let last_input = args.out.join("last-input.toml");
    let start = Instant::now();
    let deadline = start + Duration::from_secs(args.seconds);
    let mut next_report = start + Duration::from_secs(10);
    let mut index = 0u64;

    while Instant::now() < deadline {
        let Some(input) = generator.next_input() else {
            break;
        };
        let seed = generator.seed(input.seed);
        write(&last_input, &input.bytes);
        let job = Job {
            bytes: input.bytes.clone(),
            kind: seed.kind,
            dir: seed.dir.clone(),
        };
        if jobs.send(job).is_err() {
            eprintln!("the worker thread died");
            std::process::exit(1);
        }
        let answer = match answers.recv_timeout(HANG) {
            Ok(a) => a,
            Err(_) => {
                hangs += 1;
                let path = args.out.join(format!("hang-{}-{index}.toml", args.seed));
                write(&path, &input.bytes);
                write(
                    &path.with_extension("txt"),
                    format!(
                        "hang: over {} s\n{}",
                        HANG.as_secs(),
                        describe(&input, &generator)
                    )
                    .as_bytes(),
                );
                println!("HANG input {index}: saved {}", path.display());
                match answers.recv_timeout(GIVE_UP) {
                    Ok(a) => a,
                    Err(_) => {
                        eprintln!(
                            "input {index} still running after {} s: giving up",
                            GIVE_UP.as_secs()
                        );
                        std::process::exit(1);
                    }
                }
            }
        };
        stats.add(&answer.verdict);
        if let Verdict::Panicked(message) = &answer.verdict {
            let at = answer.location.as_deref().unwrap_or("unknown place");
            let key = format!("{message} at {at}");
            let saved = crashes.entry(key.clone()).or_default();
            if *saved < SAVED_PER_CRASH {
                *saved += 1;
                let path = args.out.join(format!("crash-{}-{index}.toml", args.seed));
                write(&path, &input.bytes);
                write(
                    &path.with_extension("txt"),
                    format!("panic: {key}\n{}", describe(&input, &generator)).as_bytes(),
                );
                println!("CRASH input {index}: {key}\n  saved {}", path.display());
            }
        }
        if answer.verdict == Verdict::Simulated("stalled") {
            stalls += 1;
            if stalls <= SAVED_STALLS {
                let path = args.out.join(format!("stalled-{}-{index}.toml", args.seed));
                write(&path, &input.bytes);
                write(
                    &path.with_extension("txt"),
                    format!("outcome: stalled\n{}", describe(&input, &generator)).as_bytes(),
                );
                println!("STALLED input {index}: saved {}", path.display());
            }
        }
        if slowest.as_ref().is_none_or(|(d, _)| answer.elapsed > *d) {
            slowest = Some((answer.elapsed, input.clone()));
        }
        generator.record(&input, &answer.verdict);
        index += 1;
        if Instant::now() >= next_report {
            next_report += Duration::from_secs(10);
            println!(
                "{:>5} s  tried {}  parsed {}  simulated {}  crashes {}  hangs {}",
                start.elapsed().as_secs(),
                stats.tried,
                stats.parsed,
                stats.simulated,
                stats.crashes,
                hangs
            );
        }
    }
    let _ = std::fs::remove_file(&last_input);

    println!();
    println!("duration        {:.1} s", start.elapsed().as_secs_f64());
    println!("seed            {}", args.seed);
    println!("inputs tried    {}", stats.tried);
    println!("parse ok        {}", stats.parsed);
    println!("sims run        {}", stats.simulated);
    println!(
        "not simulated   {} (over {} items)",
        stats.too_many_items, args.max_items
    );
    let outcomes: Vec<String> = stats
        .outcomes
        .iter()
        .map(|(k, n)| format!("{k} {n}"))
        .collect();
    println!("outcomes        {}", outcomes.join(", "));
    println!(
        "crashes         {} ({} distinct)",
        stats.crashes,
        crashes.len()
    );
    for key in crashes.keys() {
        println!("  {key}");
    }
    println!("hangs (> {} s)  {hangs}", HANG.as_secs());
    if let Some((elapsed, input)) = &slowest {
        let path = args.out.join(format!("slowest-{}.toml", args.seed));
        write(&path, &input.bytes);
        println!(
            "slowest input   {:.3} s, from {} (saved {})",
            elapsed.as_secs_f64(),
            generator.seed(input.seed).name,
            path.display()
        );
    }
    if stats.crashes > 0 || hangs > 0 {
        std::process::exit(1);
    }
}
