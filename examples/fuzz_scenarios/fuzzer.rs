//! A deterministic mutational fuzzer for the loaders and the engine.
//!
//! Not part of the simulator, so not in the library: this is the machinery
//! shared by the fuzz driver beside it (`cargo run --release --example
//! fuzz_scenarios -- --seconds N --seed S`) and the smoke test that runs a
//! few hundred inputs in CI (`tests/integration/fuzz.rs` includes this file
//! with `#[path]`). It runs on the stable toolchain and needs
//! no fuzzing crate.
//!
//! Seeds are the scenario and policy files of the repository ([`Seed`]).
//! Each input is a seed (or an earlier input that loaded) with one to three
//! mutations ([`Mutator`]): byte flips, digits changed, numbers replaced by
//! extreme ones, lines deleted, duplicated or swapped, keys swapped, step
//! kinds, submission shapes and policy names changed, lines from other
//! seeds and scenario fragments spliced in, truncation. [`check`] then loads
//! the input — a scenario with its policy, or a policy with a fixed
//! scenario — and, if it loads, simulates it with a [`NullSink`] under
//! [`Limits`], catching any panic. Everything is seeded: the same seed
//! gives the same inputs.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};

use poolsim::engine::{Outcome, SimOptions, simulate};
use poolsim::policy::config::PolicyConfig;
use poolsim::policy_file::{parse_policy, resolve_policy_for_scenario};
use poolsim::scenario::load::parse_scenario;
use poolsim::scenario::model::Scenario;
use poolsim::time::SimDuration;
use poolsim::trace::NullSink;

/// The limits of a fuzz run.
#[derive(Clone, Debug)]
pub struct Limits {
    /// Simulation limits: one simulated minute, two million events.
    pub options: SimOptions,
    /// Scenarios with more items are loaded but not simulated: the engine
    /// submits a group's items up front, so its time and memory grow with
    /// the item count whatever the event budget (80 million items take
    /// 11 s and 4.7 GB), and such inputs would crowd out the rest.
    pub max_items: u64,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            options: SimOptions {
                until: Some(SimDuration::from_ms(60_000)),
                max_events: 2_000_000,
            },
            max_items: 1_000_000,
        }
    }
}

/// A small, fast, seeded random stream (SplitMix64).
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed ^ 0x5DEE_CE66_D1CE_4E5B)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next_u64() % n as u64) as usize
        }
    }

    /// True with probability `percent` / 100.
    pub fn percent(&mut self, percent: u64) -> bool {
        self.next_u64() % 100 < percent
    }

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> Option<&'a T> {
        items.get(self.below(items.len()))
    }
}

/// What a seed file holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Scenario,
    Policy,
}

/// A file the fuzzer starts from.
#[derive(Clone, Debug)]
pub struct Seed {
    /// The file's path, for reports.
    pub name: String,
    /// Where relative policy paths of the input are looked up.
    pub dir: PathBuf,
    pub kind: Kind,
    pub bytes: Vec<u8>,
}

impl Seed {
    /// A policy file names a `model` or a `base`; anything else is read as
    /// a scenario.
    pub fn kind_of(bytes: &[u8]) -> Kind {
        let text = String::from_utf8_lossy(bytes);
        let policy = text.lines().any(|l| {
            let l = l.trim_start();
            l.starts_with("model =") || l.starts_with("base =")
        });
        if policy { Kind::Policy } else { Kind::Scenario }
    }
}

/// Every `.toml` file in `dirs` (not recursive), sorted by path so that a
/// seed gives the same run wherever the checkout is.
pub fn load_seeds(dirs: &[&Path]) -> std::io::Result<Vec<Seed>> {
    let mut seeds = Vec::new();
    for dir in dirs {
        let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|e| e == "toml") && p.is_file())
            .collect();
        paths.sort();
        for path in paths {
            let bytes = std::fs::read(&path)?;
            seeds.push(Seed {
                name: path.display().to_string(),
                dir: dir.to_path_buf(),
                kind: Seed::kind_of(&bytes),
                bytes,
            });
        }
    }
    Ok(seeds)
}

/// Numbers that sit on or past a limit, or that TOML reads specially.
const NUMBERS: &[&str] = &[
    "0",
    "1",
    "-1",
    "2",
    "0.5",
    "-0.0",
    "1e-9",
    "1.5",
    "3",
    "7",
    "64",
    "500",
    "4096",
    "4097",
    "32767",
    "32768",
    "100000",
    "100000000",
    "100000001",
    "864000000",
    "864000001",
    "1e12",
    "1e308",
    "9223372036854775807",
    "-9223372036854775808",
    "18446744073709551616",
    "nan",
    "inf",
    "-inf",
    "0x10",
    "1_000",
    "\"12\"",
    "true",
];

/// Keys of scenario and policy files.
const KEYS: &[&str] = &[
    "name",
    "seed",
    "until_ms",
    "cores",
    "policy",
    "min_threads",
    "max_threads",
    "gate_phase_ms",
    "tiered_compilation",
    "count",
    "submit",
    "from",
    "arrival",
    "body",
    "max_degree",
    "throttle",
    "at_ms",
    "every_ms",
    "poisson_per_s",
    "start_ms",
    "after",
    "delay_ms",
    "kind",
    "limit",
    "cpu_ms",
    "spin_ms",
    "busy_ms",
    "sleep_ms",
    "wait_ms",
    "await_ms",
    "yield",
    "model",
    "base",
    "min",
    "max",
    "period_ms",
    "queues",
    "enabled",
    "first_tick_ms",
];

/// Step keys.
const STEPS: &[&str] = &[
    "cpu_ms", "spin_ms", "busy_ms", "sleep_ms", "wait_ms", "await_ms",
];

/// Quoted values: shapes, origins, throttle kinds, policy names and words
/// policy files use.
const WORDS: &[&str] = &[
    "task-run",
    "queue-user-work-item",
    "when-all",
    "new-thread",
    "parallel-invoke",
    "parallel-for",
    "parallel-foreach",
    "plinq",
    "parallel-foreach-async",
    "main",
    "pool",
    "semaphore",
    "concurrent-exclusive",
    "net-classic",
    "net5",
    "coreclr3-linux",
    "net6",
    "net8",
    "mono",
    "net20",
    "net20-sp1",
    "dedicated-threads",
    "net-classic-throttled",
    "net6-throttled",
    "cores",
    "2*cores",
    "1024*cores",
    "0*cores",
    "random",
    "classic",
    "portable",
    "dedicated",
    "yield",
    "",
];

/// Fragments that keep a file valid but change what it does.
const FRAGMENTS: &[&str] = &[
    "[[group]]\nname = \"extra\"\ncount = 5\nbody = [ { cpu_ms = 1 } ]\n",
    "[[group]]\ncount = 3\nsubmit = \"parallel-for\"\nmax_degree = 2\nbody = [ { wait_ms = 10 } ]\n",
    "[[group]]\ncount = 20\nsubmit = \"parallel-foreach-async\"\nbody = [ { await_ms = 5 }, { cpu_ms = 1 } ]\n",
    "[[group]]\ncount = 8\nsubmit = \"when-all\"\nfrom = \"pool\"\nbody = [ \"yield\", { wait_ms = 100 } ]\n",
    "[[group]]\ncount = 4\nsubmit = \"new-thread\"\narrival = { every_ms = 50 }\nbody = [ { spin_ms = 20 } ]\n",
    "[[group]]\ncount = 6\nsubmit = \"plinq\"\nbody = [ { sleep_ms = 30 } ]\n",
    "[[group]]\ncount = 12\nsubmit = \"parallel-invoke\"\narrival = { after = \"g\", delay_ms = 3 }\nbody = [ { cpu_ms = 2 } ]\n",
    "[[group]]\ncount = 50\nthrottle = { kind = \"semaphore\", limit = 2 }\narrival = { poisson_per_s = 200 }\nbody = [ { await_ms = 1 } ]\n",
    "[[probe]]\nevery_ms = 100\n",
    "from = \"pool\"\n",
    "max_degree = 3\n",
    "throttle = { kind = \"concurrent-exclusive\", limit = 1 }\n",
    "arrival = { every_ms = 1, start_ms = 10 }\n",
    "arrival = { poisson_per_s = 1000000 }\n",
    "min_threads = 1\n",
    "max_threads = 1\n",
    "min_threads = 32767\n",
    "gate_phase_ms = 0\n",
    "until_ms = 1\n",
    "body = [ { wait_ms = 1000 }, { wait_ms = 1000 } ]\n",
    "body = [ \"yield\", \"yield\", \"yield\" ]\n",
];

/// Tokens inserted at random places.
const TOKENS: &[&str] = &[
    "[", "]", "[[", "]]", "{", "}", "\"", "'", "=", ",", "\n", "#", ".", "-", "\\", "\"\"\"",
    "\u{0}", "\u{FEFF}", "é", "\r\n",
];

/// Inputs are kept under this size.
pub const MAX_INPUT: usize = 64 * 1024;

/// One mutation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mutation {
    FlipBit,
    FlipDigit,
    ExtremeNumber,
    DeleteLine,
    DuplicateLine,
    SwapLines,
    SwapKey,
    ChangeStep,
    ChangeWord,
    InsertFragment,
    SpliceLine,
    InsertToken,
    DeleteBytes,
    Truncate,
}

const MUTATIONS: &[(Mutation, u64)] = &[
    (Mutation::FlipBit, 3),
    (Mutation::FlipDigit, 10),
    (Mutation::ExtremeNumber, 12),
    (Mutation::DeleteLine, 8),
    (Mutation::DuplicateLine, 8),
    (Mutation::SwapLines, 5),
    (Mutation::SwapKey, 8),
    (Mutation::ChangeStep, 8),
    (Mutation::ChangeWord, 10),
    (Mutation::InsertFragment, 10),
    (Mutation::SpliceLine, 6),
    (Mutation::InsertToken, 4),
    (Mutation::DeleteBytes, 3),
    (Mutation::Truncate, 3),
];

/// Line spans `(start, end)` of `bytes`, the end past the `\n`.
fn lines(bytes: &[u8]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut start = 0;
    for (i, b) in bytes.iter().enumerate() {
        if *b == b'\n' {
            out.push((start, i + 1));
            start = i + 1;
        }
    }
    if start < bytes.len() {
        out.push((start, bytes.len()));
    }
    out
}

fn is_number_byte(b: u8) -> bool {
    b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'+' | b'-' | b'_')
}

/// Spans of number-like tokens: a digit run with its sign, point and exponent.
fn numbers(bytes: &[u8]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        let starts =
            b.is_ascii_digit() || (b == b'-' && bytes.get(i + 1).is_some_and(u8::is_ascii_digit));
        let in_word = i > 0 && (bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_');
        if starts && !in_word {
            let mut j = i + 1;
            while j < bytes.len() && is_number_byte(bytes[j]) {
                j += 1;
            }
            out.push((i, j));
            i = j;
        } else {
            i += 1;
        }
    }
    out
}

/// Spans of bare keys followed by `=`.
fn keys(bytes: &[u8]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i].is_ascii_alphabetic()
            && (i == 0 || !(bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_'))
        {
            let mut j = i;
            while j < bytes.len() && (bytes[j].is_ascii_alphanumeric() || bytes[j] == b'_') {
                j += 1;
            }
            let mut k = j;
            while k < bytes.len() && bytes[k] == b' ' {
                k += 1;
            }
            if bytes.get(k) == Some(&b'=') && bytes.get(k + 1) != Some(&b'=') {
                out.push((i, j));
            }
            i = j;
        } else {
            i += 1;
        }
    }
    out
}

/// Spans of the insides of one-line `"..."` strings.
fn strings(bytes: &[u8]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    for (start, end) in lines(bytes) {
        let line = &bytes[start..end];
        if line.iter().position(|b| !b.is_ascii_whitespace())
            == line.iter().position(|b| *b == b'#')
        {
            continue;
        }
        let quotes: Vec<usize> = line
            .iter()
            .enumerate()
            .filter(|(_, b)| **b == b'"')
            .map(|(i, _)| i)
            .collect();
        for pair in quotes.chunks_exact(2) {
            out.push((start + pair[0] + 1, start + pair[1]));
        }
    }
    out
}

fn replace(bytes: &mut Vec<u8>, (start, end): (usize, usize), with: &[u8]) {
    bytes.splice(start..end, with.iter().copied());
}

/// Applies mutations to seeds.
pub struct Mutator<'s> {
    seeds: &'s [Seed],
}

impl<'s> Mutator<'s> {
    pub fn new(seeds: &'s [Seed]) -> Mutator<'s> {
        Mutator { seeds }
    }

    /// `input` with one to three mutations; returns the mutations applied.
    pub fn mutate(&self, input: &[u8], rng: &mut Rng) -> (Vec<u8>, Vec<Mutation>) {
        let mut bytes = input.to_vec();
        let rounds = match rng.below(10) {
            0..=5 => 1,
            6..=8 => 2,
            _ => 3,
        };
        let mut applied = Vec::new();
        for _ in 0..rounds {
            let m = self.choose(rng);
            self.apply(m, &mut bytes, rng);
            applied.push(m);
        }
        bytes.truncate(MAX_INPUT);
        (bytes, applied)
    }

    fn choose(&self, rng: &mut Rng) -> Mutation {
        let total: u64 = MUTATIONS.iter().map(|(_, w)| w).sum();
        let mut x = rng.next_u64() % total;
        for (m, w) in MUTATIONS {
            if x < *w {
                return *m;
            }
            x -= w;
        }
        Mutation::FlipDigit
    }

    fn apply(&self, m: Mutation, bytes: &mut Vec<u8>, rng: &mut Rng) {
        let line_spans = lines(bytes);
        match m {
            Mutation::FlipBit => {
                if !bytes.is_empty() {
                    let i = rng.below(bytes.len());
                    bytes[i] ^= 1 << rng.below(8);
                }
            }
            Mutation::FlipDigit => {
                let digits: Vec<usize> = (0..bytes.len())
                    .filter(|i| bytes[*i].is_ascii_digit())
                    .collect();
                if let Some(&i) = rng.pick(&digits) {
                    bytes[i] = b'0' + rng.below(10) as u8;
                }
            }
            Mutation::ExtremeNumber => {
                let spans = numbers(bytes);
                if let (Some(&span), Some(n)) = (rng.pick(&spans), rng.pick(NUMBERS)) {
                    replace(bytes, span, n.as_bytes());
                }
            }
            Mutation::DeleteLine => {
                if let Some(&span) = rng.pick(&line_spans) {
                    replace(bytes, span, b"");
                }
            }
            Mutation::DuplicateLine => {
                if let Some(&(start, end)) = rng.pick(&line_spans) {
                    let line = bytes[start..end].to_vec();
                    replace(bytes, (end, end), &line);
                }
            }
            Mutation::SwapLines => {
                if line_spans.len() >= 2 {
                    let a = rng.below(line_spans.len());
                    let b = rng.below(line_spans.len());
                    let (a, b) = (a.min(b), a.max(b));
                    if a != b {
                        let (sa, sb) = (line_spans[a], line_spans[b]);
                        let la = bytes[sa.0..sa.1].to_vec();
                        let lb = bytes[sb.0..sb.1].to_vec();
                        replace(bytes, sb, &la);
                        replace(bytes, sa, &lb);
                    }
                }
            }
            Mutation::SwapKey => {
                let spans = keys(bytes);
                if let (Some(&span), Some(k)) = (rng.pick(&spans), rng.pick(KEYS)) {
                    replace(bytes, span, k.as_bytes());
                }
            }
            Mutation::ChangeStep => {
                let spans: Vec<(usize, usize)> = keys(bytes)
                    .into_iter()
                    .filter(|(s, e)| STEPS.iter().any(|k| k.as_bytes() == &bytes[*s..*e]))
                    .collect();
                if let Some(&span) = rng.pick(&spans) {
                    if rng.percent(20) {
                        // The whole `{ key = N }` becomes "yield".
                        let open = bytes[..span.0].iter().rposition(|b| *b == b'{');
                        let close = bytes[span.1..].iter().position(|b| *b == b'}');
                        if let (Some(o), Some(c)) = (open, close) {
                            replace(bytes, (o, span.1 + c + 1), b"\"yield\"");
                            return;
                        }
                    }
                    if let Some(k) = rng.pick(STEPS) {
                        replace(bytes, span, k.as_bytes());
                    }
                }
            }
            Mutation::ChangeWord => {
                let spans = strings(bytes);
                if let (Some(&span), Some(w)) = (rng.pick(&spans), rng.pick(WORDS)) {
                    replace(bytes, span, w.as_bytes());
                }
            }
            Mutation::InsertFragment => {
                if let Some(f) = rng.pick(FRAGMENTS) {
                    // At a line start: a table at the end, a key after a
                    // random line (often inside a group).
                    let at = if f.starts_with('[') || line_spans.is_empty() {
                        bytes.len()
                    } else {
                        line_spans[rng.below(line_spans.len())].1
                    };
                    let mut text = Vec::new();
                    if at > 0 && bytes.get(at - 1) != Some(&b'\n') {
                        text.push(b'\n');
                    }
                    text.extend_from_slice(f.as_bytes());
                    replace(bytes, (at, at), &text);
                }
            }
            Mutation::SpliceLine => {
                if let Some(other) = rng.pick(self.seeds) {
                    let spans = lines(&other.bytes);
                    if let Some(&(s, e)) = rng.pick(&spans) {
                        let at = line_spans
                            .get(rng.below(line_spans.len() + 1))
                            .map_or(bytes.len(), |l| l.0);
                        let line = other.bytes[s..e].to_vec();
                        replace(bytes, (at, at), &line);
                    }
                }
            }
            Mutation::InsertToken => {
                if let Some(t) = rng.pick(TOKENS) {
                    let at = rng.below(bytes.len() + 1);
                    replace(bytes, (at, at), t.as_bytes());
                }
            }
            Mutation::DeleteBytes => {
                if !bytes.is_empty() {
                    let start = rng.below(bytes.len());
                    let len = 1 + rng.below(16);
                    let end = (start + len).min(bytes.len());
                    replace(bytes, (start, end), b"");
                }
            }
            Mutation::Truncate => {
                let at = rng.below(bytes.len() + 1);
                bytes.truncate(at);
            }
        }
    }
}

/// The scenario a mutated policy file is simulated with: a little of
/// everything the policies treat differently (blocking waits, timers,
/// async continuations, a parallel loop, dedicated threads, a probe).
pub const POLICY_PROBE_SCENARIO: &str = r#"
name = "fuzz policy probe"
seed = 3
[machine]
cores = 4
[pool]
policy = "fuzz"
[[group]]
name = "blocking"
count = 24
body = [ { cpu_ms = 1 }, { wait_ms = 200 } ]
[[group]]
name = "async"
count = 40
arrival = { poisson_per_s = 400 }
body = [ { await_ms = 20 }, "yield", { cpu_ms = 2 } ]
[[group]]
name = "loop"
count = 16
submit = "parallel-for"
arrival = { after = "blocking", delay_ms = 10 }
body = [ { sleep_ms = 30 } ]
[[group]]
name = "threads"
count = 3
submit = "new-thread"
body = [ { spin_ms = 15 } ]
[[probe]]
every_ms = 100
"#;

/// What became of one input.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// The loader refused the file (any scenario or policy error).
    Refused,
    /// The scenario loaded but names its policy by a path with directories
    /// (not resolved: it could name a device).
    PolicyNotTried,
    /// The policy did not resolve or load.
    PolicyRefused,
    /// Loaded, but has more items than [`Limits::max_items`]: not simulated.
    TooManyItems,
    /// Simulated to the end: the outcome's kind.
    Simulated(&'static str),
    /// Something panicked: the message.
    Panicked(String),
}

impl Verdict {
    /// The loader accepted the scenario (whether or not its policy resolved).
    pub fn parsed(&self) -> bool {
        !matches!(self, Verdict::Refused)
    }
    pub fn simulated(&self) -> bool {
        matches!(self, Verdict::Simulated(_))
    }
}

fn outcome_kind(o: &Outcome) -> &'static str {
    match o {
        Outcome::Completed => "completed",
        Outcome::TimeLimit { .. } => "time-limit",
        Outcome::EventBudget { .. } => "event-budget",
        Outcome::Stalled { .. } => "stalled",
        Outcome::Deadlock { .. } => "deadlock",
    }
}

/// The message of a panic payload.
pub fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "(a panic with a non-string payload)".to_string()
    }
}

/// Loads one input as `kind` — a policy path in a scenario is looked up in
/// `dir` — and simulates it if it loads. Panics are caught and returned.
pub fn check(input: &[u8], kind: Kind, dir: &Path, limits: &Limits) -> Verdict {
    match catch_unwind(AssertUnwindSafe(|| check_inner(input, kind, dir, limits))) {
        Ok(v) => v,
        Err(payload) => Verdict::Panicked(panic_message(payload.as_ref())),
    }
}

fn check_inner(input: &[u8], kind: Kind, dir: &Path, limits: &Limits) -> Verdict {
    let Ok(text) = std::str::from_utf8(input) else {
        return Verdict::Refused;
    };
    let (scenario, policy): (Scenario, PolicyConfig) = match kind {
        Kind::Scenario => {
            let file = dir.join("fuzz-input.toml").display().to_string();
            let Ok(scenario) = parse_scenario(text, &file) else {
                return Verdict::Refused;
            };
            if !policy_is_safe_to_resolve(&scenario.pool.policy) {
                return Verdict::PolicyNotTried;
            }
            match resolve_policy_for_scenario(&scenario.pool.policy, Some(dir)) {
                Ok(p) => (scenario, p),
                Err(_) => return Verdict::PolicyRefused,
            }
        }
        Kind::Policy => {
            let file = dir.join("fuzz-policy.toml").display().to_string();
            let Ok(policy) = parse_policy(text, &file) else {
                return Verdict::Refused;
            };
            // The machine size varies with the input, so that per-core
            // constants meet small and large machines.
            let cores = [1, 2, 4, 8, 64][(fnv1a(input) % 5) as usize];
            let text = POLICY_PROBE_SCENARIO.replace("cores = 4", &format!("cores = {cores}"));
            let scenario =
                parse_scenario(&text, "fuzz-probe.toml").expect("the policy probe scenario loads");
            (scenario, policy)
        }
    };
    if scenario.item_count() > limits.max_items {
        return Verdict::TooManyItems;
    }
    let run = simulate(&scenario, &policy, &mut NullSink, &limits.options);
    Verdict::Simulated(outcome_kind(&run.outcome))
}

/// FNV-1a hash of `bytes`: a choice that depends on the input only.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xCBF2_9CE4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01B3)
    })
}

/// Whether a mutated scenario's policy may be resolved: a built-in name or
/// a bare file name (looked up in `dir`, then in the current directory), but
/// no path a mutation happens to write, which could name a device
/// (`/dev/stdin` would wait for input).
fn policy_is_safe_to_resolve(policy: &str) -> bool {
    !policy.contains('/') && !policy.contains('\\')
}

/// Totals of a fuzz run.
#[derive(Clone, Debug, Default)]
pub struct Stats {
    pub tried: u64,
    pub parsed: u64,
    pub simulated: u64,
    /// Loaded but over [`Limits::max_items`].
    pub too_many_items: u64,
    pub crashes: u64,
    pub outcomes: std::collections::BTreeMap<&'static str, u64>,
}

impl Stats {
    pub fn add(&mut self, v: &Verdict) {
        self.tried += 1;
        if v.parsed() {
            self.parsed += 1;
        }
        match v {
            Verdict::Simulated(kind) => {
                self.simulated += 1;
                *self.outcomes.entry(kind).or_default() += 1;
            }
            Verdict::Panicked(_) => self.crashes += 1,
            Verdict::TooManyItems => self.too_many_items += 1,
            _ => {}
        }
    }
}

/// The input-generating half of a fuzz run: which base each input starts
/// from and how it is mutated. Inputs that load are kept (up to a bound)
/// and mutated further, so that mutations pile up on valid files.
pub struct Generator<'s> {
    seeds: &'s [Seed],
    mutator: Mutator<'s>,
    rng: Rng,
    /// Inputs that loaded: (seed index, bytes).
    pool: Vec<(usize, Vec<u8>)>,
}

/// One generated input.
#[derive(Clone, Debug)]
pub struct Input {
    /// Index of the seed it descends from.
    pub seed: usize,
    pub bytes: Vec<u8>,
    pub mutations: Vec<Mutation>,
}

/// Most inputs kept for further mutation.
const POOL: usize = 512;

impl<'s> Generator<'s> {
    pub fn new(seeds: &'s [Seed], seed: u64) -> Generator<'s> {
        Generator {
            seeds,
            mutator: Mutator::new(seeds),
            rng: Rng::new(seed),
            pool: Vec::new(),
        }
    }

    /// The next input (`None` if there are no seeds).
    pub fn next_input(&mut self) -> Option<Input> {
        if self.seeds.is_empty() {
            return None;
        }
        let (seed, base) = if !self.pool.is_empty() && self.rng.percent(40) {
            let (s, b) = &self.pool[self.rng.below(self.pool.len())];
            (*s, b.clone())
        } else {
            let s = self.rng.below(self.seeds.len());
            (s, self.seeds[s].bytes.clone())
        };
        let (bytes, mutations) = self.mutator.mutate(&base, &mut self.rng);
        Some(Input {
            seed,
            bytes,
            mutations,
        })
    }

    /// Tells the generator what became of `input`.
    pub fn record(&mut self, input: &Input, verdict: &Verdict) {
        if verdict.simulated() {
            if self.pool.len() < POOL {
                self.pool.push((input.seed, input.bytes.clone()));
            } else {
                let i = self.rng.below(POOL);
                self.pool[i] = (input.seed, input.bytes.clone());
            }
        }
    }

    pub fn seed(&self, index: usize) -> &Seed {
        &self.seeds[index]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_finders_find_what_they_say() {
        let text = b"cores = 4\nbody = [ { cpu_ms = -1.5e3 } ]\nname = \"a b\" # x\n";
        let n: Vec<&[u8]> = numbers(text).iter().map(|(s, e)| &text[*s..*e]).collect();
        assert_eq!(n, [&b"4"[..], b"-1.5e3"]);
        let k: Vec<&[u8]> = keys(text).iter().map(|(s, e)| &text[*s..*e]).collect();
        assert_eq!(k, [&b"cores"[..], b"body", b"cpu_ms", b"name"]);
        let s: Vec<&[u8]> = strings(text).iter().map(|(s, e)| &text[*s..*e]).collect();
        assert_eq!(s, [&b"a b"[..]]);
        assert_eq!(lines(b"a\nb"), [(0, 2), (2, 3)]);
    }

    #[test]
    fn generation_is_deterministic() {
        let seeds = vec![Seed {
            name: "s".into(),
            dir: PathBuf::from("."),
            kind: Kind::Scenario,
            bytes: POLICY_PROBE_SCENARIO.as_bytes().to_vec(),
        }];
        let run = |seed| {
            let mut g = Generator::new(&seeds, seed);
            (0..200)
                .map(|_| g.next_input().unwrap().bytes)
                .collect::<Vec<_>>()
        };
        assert_eq!(run(7), run(7));
        assert_ne!(run(7), run(8));
    }

    #[test]
    fn only_safe_policy_paths_are_resolved() {
        assert!(policy_is_safe_to_resolve("net6"));
        assert!(policy_is_safe_to_resolve("bad-policy.toml"));
        assert!(!policy_is_safe_to_resolve("/dev/stdin"));
        assert!(!policy_is_safe_to_resolve("..\\x.toml"));
    }
}
