//! A policy file, validated: which model and its constants.
//!
//! Policy files live in `policies/` (one TOML each; they are also compiled
//! into the binary so `poolsim` works from any directory). A user can copy
//! one, edit a constant and pass the path as the policy. Models are code
//! (`policy::classic`, ...); these are their numbers.

use crate::time::SimDuration;

/// Which model (code) interprets the constants.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ModelKind {
    /// .NET Framework 4.x / .NET Core 3.x / .NET 5 native pool.
    Classic,
}

impl ModelKind {
    pub fn name(self) -> &'static str {
        match self {
            ModelKind::Classic => "classic",
        }
    }
}

/// A thread count given in a policy file: a number, or a multiple of the
/// machine's cores (`"cores"`, `"4*cores"`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ThreadCount {
    Fixed(u32),
    PerCore(u32),
}

impl ThreadCount {
    pub fn resolve(self, cores: u32) -> u32 {
        match self {
            ThreadCount::Fixed(n) => n,
            ThreadCount::PerCore(k) => k.saturating_mul(cores),
        }
    }
}

/// How the gate thread compares the time since the last dequeue with its threshold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Comparison {
    /// `delay > threshold` (CoreCLR's `SufficientDelaySinceLastDequeue`).
    Greater,
    /// `delay >= threshold` (Mono's monitor thread).
    GreaterOrEqual,
}

impl Comparison {
    pub fn holds(self, delay: SimDuration, threshold: SimDuration) -> bool {
        match self {
            Comparison::Greater => delay > threshold,
            Comparison::GreaterOrEqual => delay >= threshold,
        }
    }
}

/// `[threads]`
#[derive(Clone, Debug, PartialEq)]
pub struct ThreadsConfig {
    /// Default minimum (the value `GetMinThreads` returns).
    pub min: ThreadCount,
    /// Default maximum.
    pub max: ThreadCount,
    /// From the pool deciding to create a thread to that thread's first dequeue.
    pub start_latency: SimDuration,
    /// From releasing an idle worker to its first dequeue.
    pub wake_latency: SimDuration,
    /// An idle worker exits after waiting this long for work.
    pub idle_timeout: SimDuration,
}

/// `[gate]`: the gate thread's starvation rule.
#[derive(Clone, Debug, PartialEq)]
pub struct GateConfig {
    /// Tick period (`GATE_THREAD_DELAY`).
    pub period: SimDuration,
    /// CPU utilisation (percent) at or above which the pool counts as busy.
    pub cpu_busy_percent: u32,
    /// Starvation threshold while the CPU is not busy.
    pub starvation_delay: SimDuration,
    /// Starvation threshold per goal thread while the CPU is busy
    /// (`DEQUEUE_DELAY_THRESHOLD`).
    pub busy_delay_per_thread: SimDuration,
    /// `>` (CoreCLR) or `>=` (Mono).
    pub comparison: Comparison,
}

/// `[hill_climbing]`: every constant of CoreCLR's `HillClimbing_*` config.
#[derive(Clone, Debug, PartialEq)]
pub struct HillClimbingConfig {
    pub enabled: bool,
    pub wave_period: u32,
    pub max_wave_magnitude: u32,
    pub wave_magnitude_multiplier: f64,
    pub wave_history_size: u32,
    pub bias: f64,
    pub max_change_per_second: f64,
    pub max_change_per_sample: f64,
    pub max_sample_error: f64,
    pub sample_interval_low_ms: u32,
    pub sample_interval_high_ms: u32,
    pub error_smoothing_factor: f64,
    pub target_signal_to_noise_ratio: f64,
    pub gain_exponent: f64,
}

/// `[dispatch]`: the worker's dispatch loop.
#[derive(Clone, Debug, PartialEq)]
pub struct DispatchConfig {
    /// A worker returns to the pool's bookkeeping after dispatching this long.
    pub quantum: SimDuration,
    /// Cap on outstanding thread requests, as a multiple of cores (the
    /// managed queue's `numOutstandingThreadRequests < ProcessorCount`).
    pub max_outstanding_requests_per_core: u32,
}

/// A validated policy file.
#[derive(Clone, Debug, PartialEq)]
pub struct PolicyConfig {
    /// Canonical name, e.g. `net-classic`.
    pub name: String,
    /// Other names that resolve to this file (`net5`, ...).
    pub aliases: Vec<String>,
    /// One line on what it models.
    pub description: String,
    pub model: ModelKind,
    pub threads: ThreadsConfig,
    pub gate: GateConfig,
    pub hill_climbing: HillClimbingConfig,
    pub dispatch: DispatchConfig,
}
