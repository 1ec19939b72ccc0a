//! CoreCLR's thread-pool "hill climbing" concurrency controller.
//!
//! This models `HillClimbing::Update` / `ForceChange` / `ChangeThreadCount` /
//! `GetWaveComponent` of the classic native pool as shipped in .NET Core 3.1
//! (dotnet/coreclr `src/vm/hillclimbing.cpp`, `src/vm/hillclimbing.h`, the
//! complex arithmetic of `src/vm/complex.h` and the constants
//! `CpuUtilizationHigh = 95` of `src/vm/win32threadpool.h`). .NET 5 runs the
//! same code and .NET Framework 4.x essentially the same (whether it has the
//! 2017 interval fix noted in `update` was not checked); .NET 6+ ports it to managed code in
//! dotnet/runtime `System.Private.CoreLib/src/System/Threading/
//! PortableThreadPool.HillClimbing.cs`. Where the two differ, this module
//! follows 3.1 and says so in a comment. The constants are in the policy
//! files (`[hill_climbing]` of `policies/net-classic.toml`), with where each
//! was read.
//!
//! In one sentence: the controller superimposes a square wave on its thread
//! goal, measures throughput per sample, extracts with a Goertzel filter the
//! component of throughput and of thread count at the wave's frequency, and
//! moves its control setting in the direction where throughput rises faster
//! than `bias` per thread, scaled by how far the signal stands above the noise
//! measured at the neighbouring frequencies.
//!
//! The caller (the pool model) owns the *when*: it calls [`HillClimbing::update`]
//! from a work-item completion once the previous sample interval has elapsed,
//! and [`HillClimbing::force_change`] when something else (starvation, an idle
//! thread timing out) changed the goal. Nothing here reads a clock or a
//! global; the only randomness is the sample interval, drawn from a private
//! ChaCha8 stream seeded at construction. (The real `RandomMove` transition is
//! declared but never produced by CoreCLR: there are no random moves.)
//!
//! The parts, by the piece of the CoreCLR code each follows:
//! - this file: the controller's state and `Initialize`, `ForceChange`,
//!   `ChangeThreadCount`, and the switch to Mono's port
//!   ([`HillClimbing::mono_port`]);
//! - `update`: `Update`, one sample: the accumulation of short samples, the
//!   ring buffers, the ratio and confidence, the move, the square wave and
//!   the next interval (Mono's two differences are marked there);
//! - `wave`: `GetWaveComponent`, the Goertzel filter over the ring buffers,
//!   with the arithmetic of `complex.h`;
//! - `record`: why the goal changed ([`Transition`]) and what a sample
//!   computed ([`AdjustmentStats`]), for the trace.

mod record;
#[cfg(test)]
mod tests;
mod update;
mod wave;

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

pub use self::record::{AdjustmentStats, Transition};
use crate::policy::config::HillClimbingConfig;

/// The controller's whole state. One instance per pool.
#[derive(Clone, Debug)]
pub struct HillClimbing {
    // Settings (`Initialize`), already scaled: the CLR reads most of them as
    // integer percentages and divides by 100; the policy file stores the ratio.
    /// Mono's C port (`threadpool-worker-default.c`), with its slips: see
    /// [`HillClimbing::mono_port`].
    mono_port: bool,
    wave_period: u32,
    samples_to_measure: usize,
    target_throughput_ratio: f64,
    target_signal_to_noise_ratio: f64,
    max_change_per_second: f64,
    max_change_per_sample: f64,
    max_thread_wave_magnitude: i64,
    sample_interval_low: u32,
    sample_interval_high: u32,
    thread_magnitude_multiplier: f64,
    throughput_error_smoothing_factor: f64,
    gain_exponent: f64,
    max_sample_error: f64,

    // Mutable state.
    current_control_setting: f64,
    total_samples: u64,
    last_thread_count: i64,
    /// Seconds since the last thread-count change (only used for the log).
    elapsed_since_last_change: f64,
    /// Completions since the last thread-count change (only used for the log).
    completions_since_last_change: f64,
    average_throughput_noise: f64,
    /// Ring buffer of the last `samples_to_measure` throughputs.
    samples: Vec<f64>,
    /// Thread count in effect for each entry of `samples`.
    thread_counts: Vec<f64>,
    current_sample_interval: u32,
    rng: ChaCha8Rng,
    accumulated_completion_count: i64,
    accumulated_sample_duration: f64,

    // Observability (the CLR's HillClimbingLog / ETW events).
    last_transition: Transition,
    last_stats: Option<AdjustmentStats>,
    /// Whether the last `update` took a sample (false: accumulated it).
    sampled: bool,
}

impl HillClimbing {
    /// `HillClimbing::Initialize`. CoreCLR seeds its `CLRRandom` with the CLR
    /// instance id and the process id; here the seed is explicit. The first
    /// sample interval is drawn now (and a second one at the first `update`,
    /// whose `Initializing` change draws again, as in CoreCLR).
    ///
    /// Degenerate settings that would divide by zero in the CLR are nudged:
    /// the wave period is at least 2, the history at least one period, and a
    /// `sample_interval_high_ms` below the low bound is raised to it. (The
    /// .NET 6 port instead falls back to 10..200 when low > high.)
    pub fn new(config: &HillClimbingConfig, rng_seed: u64) -> Self {
        let wave_period = config.wave_period.max(2);
        let samples_to_measure =
            (wave_period as usize) * (config.wave_history_size.max(1) as usize);
        let sample_interval_low = config.sample_interval_low_ms;
        let sample_interval_high = config.sample_interval_high_ms.max(sample_interval_low);
        let mut rng = ChaCha8Rng::seed_from_u64(rng_seed);
        let current_sample_interval = rng.random_range(sample_interval_low..=sample_interval_high);
        HillClimbing {
            mono_port: false,
            wave_period,
            samples_to_measure,
            target_throughput_ratio: config.bias,
            target_signal_to_noise_ratio: config.target_signal_to_noise_ratio,
            max_change_per_second: config.max_change_per_second,
            max_change_per_sample: config.max_change_per_sample,
            max_thread_wave_magnitude: i64::from(config.max_wave_magnitude),
            sample_interval_low,
            sample_interval_high,
            thread_magnitude_multiplier: config.wave_magnitude_multiplier,
            throughput_error_smoothing_factor: config.error_smoothing_factor,
            gain_exponent: config.gain_exponent,
            max_sample_error: config.max_sample_error,
            current_control_setting: 0.0,
            total_samples: 0,
            last_thread_count: 0,
            elapsed_since_last_change: 0.0,
            completions_since_last_change: 0.0,
            average_throughput_noise: 0.0,
            samples: vec![0.0; samples_to_measure],
            thread_counts: vec![0.0; samples_to_measure],
            current_sample_interval,
            rng,
            accumulated_completion_count: 0,
            accumulated_sample_duration: 0.0,
            last_transition: Transition::Warmup,
            last_stats: None,
            sampled: false,
        }
    }

    /// `HillClimbing::ForceChange`: the pool set the goal itself (gate-thread
    /// starvation, idle timeout). The control setting shifts by the same
    /// amount, the sample interval is redrawn and the per-change totals reset.
    /// Nothing happens if the goal is already what hill climbing last set.
    pub fn force_change(&mut self, new_thread_count: u32, transition: Transition) {
        let new_count = i64::from(new_thread_count);
        if new_count != self.last_thread_count {
            self.current_control_setting += (new_count - self.last_thread_count) as f64;
            self.change_thread_count(new_count, transition);
        }
    }

    /// The transition of the most recent goal change (the newest entry of the
    /// CLR's `HillClimbingLog`); `Warmup` before any change.
    pub fn last_transition(&self) -> Transition {
        self.last_transition
    }

    /// The control setting: the goal without the square wave.
    pub fn current_control_setting(&self) -> f64 {
        self.current_control_setting
    }

    /// The statistics of the most recent accepted (not accumulated) sample.
    pub fn last_stats(&self) -> Option<AdjustmentStats> {
        self.last_stats
    }

    /// The statistics of the last `update`, if it took a sample (not when
    /// it only accumulated a short one).
    pub fn last_sample(&self) -> Option<AdjustmentStats> {
        self.last_stats.filter(|_| self.sampled)
    }

    /// Number of accepted samples so far.
    pub fn total_samples(&self) -> u64 {
        self.total_samples
    }

    /// Mono 6.8's port of this algorithm, which differs from CoreCLR's in
    /// two lines of `hill_climbing_update` (read in mono/mono
    /// `threadpool-worker-default.c`):
    /// - the noise average is `f * estimate + (1 + f) * average` (CoreCLR
    ///   `1 - f`), so it grows about 1 % a sample and with it the wave
    ///   magnitude, while the confidence decays;
    /// - at the minimum with a negative ratio the next interval is
    ///   `interval * 10 * max(-ratio, 1)` (CoreCLR `min`): at least 10x.
    ///
    /// Its caller also passes the sample duration in milliseconds, not
    /// seconds (see `policy::mono`), which makes the gain 1000x: any clear
    /// move reaches `max_change_per_sample`.
    pub fn mono_port(mut self) -> Self {
        self.mono_port = true;
        self
    }

    /// `ChangeThreadCount`: record the new goal, draw a new random sample
    /// interval in [low, high] and reset the per-change totals (whose only
    /// use in the CLR is the throughput written to the log).
    fn change_thread_count(&mut self, new_thread_count: i64, transition: Transition) {
        self.last_thread_count = new_thread_count;
        self.current_sample_interval = self
            .rng
            .random_range(self.sample_interval_low..=self.sample_interval_high);
        self.elapsed_since_last_change = 0.0;
        self.completions_since_last_change = 0.0;
        self.last_transition = transition;
    }
}

/// CoreCLR's hill-climbing constants (`[hill_climbing]` of
/// `policies/net-classic.toml` and `policies/mono.toml`), written out for
/// the models' unit tests: the policy files load above this layer
/// (`crate::policy_file`).
#[cfg(test)]
pub(crate) fn coreclr_constants() -> HillClimbingConfig {
    HillClimbingConfig {
        enabled: true,
        wave_period: 4,
        max_wave_magnitude: 20,
        wave_magnitude_multiplier: 1.0,
        wave_history_size: 8,
        bias: 0.15,
        max_change_per_second: 4.0,
        max_change_per_sample: 20.0,
        max_sample_error: 0.15,
        sample_interval_low_ms: 10,
        sample_interval_high_ms: 200,
        error_smoothing_factor: 0.01,
        target_signal_to_noise_ratio: 3.0,
        gain_exponent: 2.0,
        startup_completions_tiered: 0,
    }
}
