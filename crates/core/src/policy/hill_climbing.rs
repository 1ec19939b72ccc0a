//! CoreCLR's thread-pool "hill climbing" concurrency controller.
//!
//! This models `HillClimbing::Update` / `ForceChange` / `ChangeThreadCount` /
//! `GetWaveComponent` of the classic native pool as shipped in .NET Core 3.1
//! (dotnet/coreclr `src/vm/hillclimbing.cpp`, `src/vm/hillclimbing.h`, the
//! complex arithmetic of `src/vm/complex.h` and the constants
//! `CpuUtilizationHigh = 95` of `src/vm/win32threadpool.h`). .NET 5 runs the
//! same code and .NET Framework 4.x essentially the same (whether it has the
//! 2017 interval fix noted below was not checked); .NET 6+ ports it to managed code in
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

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::policy::config::HillClimbingConfig;
use crate::time::SimDuration;
use crate::trace::{Decision, GoalReason};

/// `CpuUtilizationHigh` (win32threadpool.h): above this CPU percentage an
/// upward move is refused. Not a `HillClimbing_*` setting, hence a constant.
const CPU_UTILIZATION_HIGH: u32 = 95;

/// Interval returned while a sample is being accumulated. Hard-coded `10` in
/// `Update` (not `HillClimbing_SampleIntervalLow`, although both default to 10).
const ACCUMULATING_SAMPLE_INTERVAL_MS: u32 = 10;

/// `HillClimbingStateTransition` (hillclimbing.h), plus the .NET 6+
/// `CooperativeBlocking` reason of `PortableThreadPool`'s
/// `StateOrTransition`. The 3.1 enum ends with `Undefined` instead.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transition {
    /// Not enough history yet to measure the wave.
    Warmup,
    /// The pool changed the thread count without telling hill climbing.
    Initializing,
    /// Declared by CoreCLR, never produced.
    RandomMove,
    /// A move computed from the measured throughput/thread ratio.
    ClimbingMove,
    /// Declared by CoreCLR, never produced.
    ChangePoint,
    /// History long enough but no thread-count wave to measure against.
    Stabilizing,
    /// The gate thread detected starvation and raised the goal.
    Starvation,
    /// An idle worker exited and lowered the goal.
    ThreadTimedOut,
    /// .NET 6+: the goal changed because of cooperative blocking.
    CooperativeBlocking,
}

impl From<Transition> for GoalReason {
    fn from(t: Transition) -> GoalReason {
        match t {
            Transition::Warmup => GoalReason::Warmup,
            Transition::Initializing => GoalReason::Initializing,
            Transition::RandomMove => GoalReason::RandomMove,
            Transition::ClimbingMove => GoalReason::ClimbingMove,
            Transition::ChangePoint => GoalReason::ChangePoint,
            Transition::Stabilizing => GoalReason::Stabilizing,
            Transition::Starvation => GoalReason::Starvation,
            Transition::ThreadTimedOut => GoalReason::ThreadTimedOut,
            Transition::CooperativeBlocking => GoalReason::CooperativeBlocking,
        }
    }
}

impl Transition {
    pub fn name(self) -> &'static str {
        match self {
            Transition::Warmup => "Warmup",
            Transition::Initializing => "Initializing",
            Transition::RandomMove => "RandomMove",
            Transition::ClimbingMove => "ClimbingMove",
            Transition::ChangePoint => "ChangePoint",
            Transition::Stabilizing => "Stabilizing",
            Transition::Starvation => "Starvation",
            Transition::ThreadTimedOut => "ThreadTimedOut",
            Transition::CooperativeBlocking => "CooperativeBlocking",
        }
    }
}

/// What one accepted sample computed: the payload of CoreCLR's
/// `ThreadPoolWorkerThreadAdjustmentStats` ETW event, for tracing.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AdjustmentStats {
    /// Duration of the sample, including any accumulated short samples.
    pub sample_duration_secs: f64,
    /// Completions per second over that duration.
    pub throughput: f64,
    /// Real part of the thread-count wave component (relative to the mean).
    pub thread_wave: f64,
    /// Real part of the throughput wave component (relative to the mean).
    pub throughput_wave: f64,
    /// Throughput magnitude at the neighbouring frequencies.
    pub throughput_error_estimate: f64,
    /// Smoothed noise estimate.
    pub average_throughput_noise: f64,
    /// Real part of the adjusted throughput/thread ratio.
    pub ratio: f64,
    pub confidence: f64,
    /// Control setting after the move and the clamps.
    pub control_setting: f64,
    pub wave_magnitude: u32,
    /// Whether the square wave is in its high half (the goal is the control
    /// setting plus the magnitude).
    pub wave_high: bool,
    /// The move of the control setting this sample (before the clamps).
    pub step: f64,
    /// The sample's transition (`Warmup`, `ClimbingMove`, `Stabilizing`),
    /// whether or not the thread count changed.
    pub transition: Transition,
    /// Whether the sample first adopted a goal someone else set
    /// (`Initializing`).
    pub adopted: bool,
}

impl AdjustmentStats {
    /// The sample as a [`Decision`]: the goal before and after, `unit_ns`
    /// the nanoseconds in one unit of the sample duration the climber was
    /// given (1e9: seconds; Mono's port passes milliseconds, 1e6), and the
    /// CPU reading it saw.
    pub fn decision(
        &self,
        (goal, new_goal): (u32, u32),
        unit_ns: f64,
        cpu_percent: u32,
    ) -> Decision {
        let sample_ns = self.sample_duration_secs * unit_ns;
        let sample = if sample_ns.is_finite() && sample_ns >= 0.0 && sample_ns < u64::MAX as f64 {
            SimDuration(sample_ns as u64)
        } else {
            SimDuration::ZERO
        };
        Decision::HillClimbing {
            transition: self.transition.name(),
            adopted: self.adopted,
            throughput: self.throughput * 1e9 / unit_ns,
            sample,
            thread_wave: self.thread_wave,
            throughput_wave: self.throughput_wave,
            ratio: self.ratio,
            confidence: self.confidence,
            step: self.step,
            control_setting: self.control_setting,
            wave_magnitude: self.wave_magnitude,
            wave_high: self.wave_high,
            cpu_percent,
            goal,
            new_goal,
        }
    }
}

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

/// A complex number with the arithmetic of CoreCLR's `complex.h`.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct Complex {
    re: f64,
    im: f64,
}

impl Complex {
    fn new(re: f64, im: f64) -> Complex {
        Complex { re, im }
    }
    fn abs(self) -> f64 {
        (self.re * self.re + self.im * self.im).sqrt()
    }
    fn scale(self, k: f64) -> Complex {
        Complex::new(self.re * k, self.im * k)
    }
    fn div_scalar(self, k: f64) -> Complex {
        Complex::new(self.re / k, self.im / k)
    }
    fn sub(self, other: Complex) -> Complex {
        Complex::new(self.re - other.re, self.im - other.im)
    }
    fn div(self, other: Complex) -> Complex {
        let denom = other.re * other.re + other.im * other.im;
        Complex::new(
            (self.re * other.re + self.im * other.im) / denom,
            (self.im * other.re - self.re * other.im) / denom,
        )
    }
}

/// The Windows `max` macro, `(a > b) ? a : b`: unlike `f64::max` it does not
/// skip a NaN, which keeps the model's NaN behaviour the same as CoreCLR's.
/// (The .NET 6 port's `Math.Max` returns NaN if either side is NaN.)
fn c_max(a: f64, b: f64) -> f64 {
    if a > b { a } else { b }
}

/// The Windows `min` macro, `(a < b) ? a : b`.
fn c_min(a: f64, b: f64) -> f64 {
    if a < b { a } else { b }
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

    /// One sample: returns the new thread goal and the next sample interval in ms.
    ///
    /// `current_thread_count` is the pool's current goal (`MaxWorking` in 3.1),
    /// `sample_duration_secs` the time since the previous accepted-or-accumulated
    /// sample, `num_completions` the work items completed in it,
    /// `cpu_utilization_percent` the gate thread's latest reading, and
    /// `min_threads` / `max_threads` the pool's limits at this moment.
    /// The caller must pass a positive duration (the CLR measures it with
    /// `QueryPerformanceCounter`, which never yields exactly zero here).
    pub fn update(
        &mut self,
        current_thread_count: u32,
        sample_duration_secs: f64,
        num_completions: u32,
        cpu_utilization_percent: u32,
        min_threads: u32,
        max_threads: u32,
    ) -> (u32, u32) {
        let current = i64::from(current_thread_count);
        let min_limit = i64::from(min_threads);
        let max_limit = i64::from(max_threads);

        // Someone else moved the goal without telling us: adopt it.
        let adopted = current != self.last_thread_count;
        if adopted {
            self.force_change(current_thread_count, Transition::Initializing);
        }

        // Totals since the last change count every sample, accumulated or not.
        self.elapsed_since_last_change += sample_duration_secs;
        self.completions_since_last_change += f64::from(num_completions);

        // Merge what was put aside by earlier, too-short samples.
        let sample_duration = sample_duration_secs + self.accumulated_sample_duration;
        let num_completions = i64::from(num_completions) + self.accumulated_completion_count;

        // A completion count is uncertain by up to (threads - 1) items, so the
        // relative error is (threads - 1) / completions. Too large: keep
        // collecting. The test is `>=`, done in floating point: zero
        // completions with more than one thread gives +inf (accumulate), with
        // exactly one thread 0/0 = NaN (not accumulated). The very first
        // sample is never accumulated.
        if self.total_samples > 0
            && (current as f64 - 1.0) / num_completions as f64 >= self.max_sample_error
        {
            self.accumulated_sample_duration = sample_duration;
            self.accumulated_completion_count = num_completions;
            self.sampled = false;
            return (current_thread_count, ACCUMULATING_SAMPLE_INTERVAL_MS);
        }
        self.accumulated_sample_duration = 0.0;
        self.accumulated_completion_count = 0;

        // Record the sample in the ring buffers.
        let throughput = num_completions as f64 / sample_duration;
        let slot = (self.total_samples % self.samples_to_measure as u64) as usize;
        self.samples[slot] = throughput;
        self.thread_counts[slot] = current as f64;
        self.total_samples += 1;

        let mut thread_wave = Complex::default();
        let mut throughput_wave = Complex::default();
        let mut throughput_error_estimate = 0.0;
        let mut ratio = Complex::default();
        let mut confidence = 0.0;
        let mut transition = Transition::Warmup;

        // Use the latest whole number of wave periods, at most the history.
        // Counting from `total_samples - 1` means the very first sample is
        // never in the window (in the CLR its start time is a zero-initialised
        // static, so it spans everything since the clock's epoch).
        let period = self.wave_period as usize;
        let available = (self.total_samples - 1).min(self.samples_to_measure as u64) as usize;
        let sample_count = available / period * period;

        if sample_count > period {
            let mut sample_sum = 0.0;
            let mut thread_sum = 0.0;
            for i in 0..sample_count {
                let idx = self.ring_index(sample_count, i);
                sample_sum += self.samples[idx];
                thread_sum += self.thread_counts[idx];
            }
            let average_throughput = sample_sum / sample_count as f64;
            let average_thread_count = thread_sum / sample_count as f64;

            if average_throughput > 0.0 && average_thread_count > 0.0 {
                // Periods of the two Fourier bands either side of the wave's.
                let n = sample_count as f64;
                let cycles = n / f64::from(self.wave_period);
                let adjacent_period_1 = n / (cycles + 1.0);
                let adjacent_period_2 = n / (cycles - 1.0);

                // Throughput at the wave frequency, and the noise next to it,
                // both relative to the mean throughput.
                throughput_wave = self
                    .wave_component(&self.samples, sample_count, f64::from(self.wave_period))
                    .div_scalar(average_throughput);
                throughput_error_estimate = self
                    .wave_component(&self.samples, sample_count, adjacent_period_1)
                    .div_scalar(average_throughput)
                    .abs();
                if adjacent_period_2 <= n {
                    let other = self
                        .wave_component(&self.samples, sample_count, adjacent_period_2)
                        .div_scalar(average_throughput)
                        .abs();
                    throughput_error_estimate = c_max(throughput_error_estimate, other);
                }

                // The thread-count wave is exact: no noise estimate for it.
                thread_wave = self
                    .wave_component(
                        &self.thread_counts,
                        sample_count,
                        f64::from(self.wave_period),
                    )
                    .div_scalar(average_thread_count);

                // Exponential smoothing of the noise, seeded by the first value.
                if self.average_throughput_noise == 0.0 {
                    self.average_throughput_noise = throughput_error_estimate;
                } else {
                    let keep = if self.mono_port {
                        1.0 + self.throughput_error_smoothing_factor
                    } else {
                        1.0 - self.throughput_error_smoothing_factor
                    };
                    self.average_throughput_noise = self.throughput_error_smoothing_factor
                        * throughput_error_estimate
                        + keep * self.average_throughput_noise;
                }

                if thread_wave.abs() > 0.0 {
                    // Throughput gained per thread, above the required bias.
                    ratio = throughput_wave
                        .sub(thread_wave.scale(self.target_throughput_ratio))
                        .div(thread_wave);
                    transition = Transition::ClimbingMove;
                } else {
                    ratio = Complex::default();
                    transition = Transition::Stabilizing;
                }

                // Signal-to-noise: the wave against the louder of the smoothed
                // and the current noise, relative to the target ratio.
                let noise_for_confidence =
                    c_max(self.average_throughput_noise, throughput_error_estimate);
                confidence = if noise_for_confidence > 0.0 {
                    (thread_wave.abs() / noise_for_confidence) / self.target_signal_to_noise_ratio
                } else {
                    1.0
                };
            }
        }

        // Only the in-phase part of the ratio moves us; clamp it and the
        // confidence to [-1, 1] and [0, 1].
        let mut step = c_min(1.0, c_max(-1.0, ratio.re));
        step *= c_min(1.0, c_max(0.0, confidence));

        // Non-linear gain: small ratios are attenuated, large ones kept; the
        // rate limit is per second of sample. Only the upward step is capped
        // per sample (as in CoreCLR: `min(move, maxChangePerSample)`).
        let gain = self.max_change_per_second * sample_duration;
        let sign = if step >= 0.0 { 1.0 } else { -1.0 };
        step = step.abs().powf(self.gain_exponent) * sign * gain;
        step = c_min(step, self.max_change_per_sample);

        // A busy CPU refuses any upward move.
        if step > 0.0 && cpu_utilization_percent > CPU_UTILIZATION_HIGH {
            step = 0.0;
        }

        self.current_control_setting += step;

        // Square-wave amplitude grows with the measured noise, in [1, max].
        // `(int)(0.5 + x)` truncates toward zero; `as` does the same and
        // saturates (NaN -> 0) where C++ would be undefined.
        let mut wave_magnitude = (0.5
            + self.current_control_setting
                * self.average_throughput_noise
                * self.target_signal_to_noise_ratio
                * self.thread_magnitude_multiplier
                * 2.0) as i64;
        wave_magnitude = wave_magnitude.min(self.max_thread_wave_magnitude);
        wave_magnitude = wave_magnitude.max(1);

        // Keep the control setting (plus the wave's top) within the limits.
        self.current_control_setting = c_min(
            (max_limit - wave_magnitude) as f64,
            self.current_control_setting,
        );
        self.current_control_setting = c_max(min_limit as f64, self.current_control_setting);

        // Goal = control + wave: high for wave_period/2 samples, low for the
        // next wave_period/2, phased on the number of accepted samples.
        let half_period = u64::from(self.wave_period / 2);
        let wave_high = ((self.total_samples / half_period) % 2) as i64;
        let mut new_thread_count =
            (self.current_control_setting + (wave_magnitude * wave_high) as f64) as i64;
        new_thread_count = new_thread_count.min(max_limit);
        new_thread_count = new_thread_count.max(min_limit);

        self.last_stats = Some(AdjustmentStats {
            sample_duration_secs: sample_duration,
            throughput,
            thread_wave: thread_wave.re,
            throughput_wave: throughput_wave.re,
            throughput_error_estimate,
            average_throughput_noise: self.average_throughput_noise,
            ratio: ratio.re,
            confidence,
            control_setting: self.current_control_setting,
            wave_magnitude: wave_magnitude.clamp(0, i64::from(u32::MAX)) as u32,
            wave_high: wave_high != 0,
            step,
            transition,
            adopted,
        });
        self.sampled = true;

        // Compared with the count we were given, not with our own record.
        if new_thread_count != current {
            self.change_thread_count(new_thread_count, transition);
        }

        // Next interval: the (possibly just redrawn) random interval, except
        // at the minimum with a negative ratio, where it becomes
        // interval x 10 x min(-ratio, 1): up to 10x longer (and shorter than
        // the interval when -ratio < 0.1; it can round to 0).
        // (An earlier CoreCLR had `max(-ratio, 1)` here; fixed in 2017,
        // dotnet/coreclr#14505, so 3.1 and the .NET 6 port use `min`.)
        let next_interval = if ratio.re < 0.0 && new_thread_count == min_limit {
            let stretch = if self.mono_port {
                c_max(-ratio.re, 1.0)
            } else {
                c_min(-ratio.re, 1.0)
            };
            (0.5 + f64::from(self.current_sample_interval) * (10.0 * stretch)) as u32
        } else {
            self.current_sample_interval
        };

        (new_thread_count as u32, next_interval)
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

    /// Index in the ring buffers of the `i`-th of the last `count` samples,
    /// oldest first.
    fn ring_index(&self, count: usize, i: usize) -> usize {
        ((self.total_samples - count as u64 + i as u64) % self.samples_to_measure as u64) as usize
    }

    /// `GetWaveComponent`: the Goertzel filter over the last `count` entries of
    /// `buffer`, at the frequency of one cycle per `period` samples, divided
    /// by the number of samples.
    fn wave_component(&self, buffer: &[f64], count: usize, period: f64) -> Complex {
        debug_assert!(count as f64 >= period, "the wave must fit in the samples");
        debug_assert!(period >= 2.0, "above the Nyquist frequency");
        let w = 2.0 * std::f64::consts::PI / period;
        let cosine = w.cos();
        let sine = w.sin();
        let coeff = 2.0 * cosine;
        let (mut q1, mut q2) = (0.0, 0.0);
        for i in 0..count {
            let q0 = coeff * q1 - q2 + buffer[self.ring_index(count, i)];
            q2 = q1;
            q1 = q0;
        }
        Complex::new(q1 - q2 * cosine, q2 * sine).div_scalar(count as f64)
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

#[cfg(test)]
mod tests {
    use super::*;

    fn default_config() -> HillClimbingConfig {
        coreclr_constants()
    }

    /// A closed loop: the goal returned is the thread count of the next
    /// sample, which lasts the interval returned; `rate(threads)` gives
    /// completions per second. Returns the (goal, interval) of every call.
    fn run(
        hc: &mut HillClimbing,
        start: u32,
        steps: usize,
        cpu: u32,
        min: u32,
        max: u32,
        rate: impl Fn(u32) -> f64,
    ) -> Vec<(u32, u32)> {
        let mut goal = start;
        let mut interval = 100;
        let mut out = Vec::with_capacity(steps);
        for _ in 0..steps {
            let secs = f64::from(interval.max(1)) / 1000.0;
            let completions = (rate(goal) * secs).round() as u32;
            let (g, i) = hc.update(goal, secs, completions, cpu, min, max);
            out.push((g, i));
            goal = g;
            interval = i;
        }
        out
    }

    #[test]
    fn same_seed_same_outputs_and_seed_matters() {
        let rate = |t: u32| 50.0 * f64::from(t.min(12)) + 7.0 * f64::from(t % 3);
        let mut a = HillClimbing::new(&default_config(), 42);
        let mut b = HillClimbing::new(&default_config(), 42);
        let ra = run(&mut a, 2, 500, 50, 2, 1000, rate);
        let rb = run(&mut b, 2, 500, 50, 2, 1000, rate);
        assert_eq!(ra, rb);
        assert_eq!(a.current_control_setting(), b.current_control_setting());
        let mut c = HillClimbing::new(&default_config(), 43);
        let rc = run(&mut c, 2, 500, 50, 2, 1000, rate);
        assert_ne!(ra, rc, "the seed drives the sample intervals");
    }

    #[test]
    fn constant_throughput_does_not_run_away() {
        let mut hc = HillClimbing::new(&default_config(), 7);
        let out = run(&mut hc, 2, 3000, 50, 2, 32767, |_| 1000.0);
        let highest = out.iter().map(|&(g, _)| g).max().unwrap();
        assert!(highest <= 2 + 20, "goal ran away to {highest}");
        // It settles at the minimum, where only the wave lifts it.
        let (last_goal, _) = *out.last().unwrap();
        assert!(last_goal <= 3, "final goal {last_goal}");
        assert!(hc.current_control_setting() < 3.0);
    }

    #[test]
    fn throughput_rising_with_threads_makes_it_climb() {
        let mut hc = HillClimbing::new(&default_config(), 11);
        // Each thread adds 100 items/s up to 40 threads.
        let out = run(&mut hc, 2, 1500, 50, 2, 32767, |t| {
            100.0 * f64::from(t.min(40))
        });
        let late: Vec<u32> = out[1000..].iter().map(|&(g, _)| g).collect();
        let avg = late.iter().map(|&g| f64::from(g)).sum::<f64>() / late.len() as f64;
        assert!(avg > 15.0, "average late goal {avg}");
        assert!(hc.current_control_setting() > 10.0);
        // It stops near the knee (40) instead of running on.
        assert!(late.iter().all(|&g| g <= 40 + 20), "overshoot: {late:?}");
        assert!(hc.last_stats().unwrap().confidence > 0.0);
    }

    #[test]
    fn monos_port_lets_the_noise_average_grow() {
        // The same noisy, flat workload through both ports: CoreCLR's
        // average settles near the noise; Mono's (1 + f) keeps growing.
        let rate = |t: u32| 1000.0 + 300.0 * f64::from((t * 7919) % 5);
        let mut coreclr = HillClimbing::new(&default_config(), 3);
        let mut mono = HillClimbing::new(&default_config(), 3).mono_port();
        run(&mut coreclr, 4, 600, 50, 4, 200, rate);
        run(&mut mono, 4, 600, 50, 4, 200, rate);
        let c = coreclr.last_stats().unwrap().average_throughput_noise;
        let m = mono.last_stats().unwrap().average_throughput_noise;
        assert!(c > 0.0 && c < 1.0, "coreclr noise average {c}");
        // 1.01^590 is about 350: the average has run away.
        assert!(m > 100.0 * c, "mono {m} vs coreclr {c}");
    }

    #[test]
    fn at_the_minimum_monos_port_stretches_at_least_tenfold_and_coreclrs_at_most() {
        // Flat throughput: at the minimum the ratio is about -bias (-0.15),
        // so CoreCLR stretches the interval by 10 x min(-ratio, 1), about
        // 1.5x, and Mono by 10 x max(-ratio, 1) = 10x.
        for mono in [false, true] {
            let mut stretched = 0;
            for seed in 0..4 {
                let mut hc = HillClimbing::new(&default_config(), seed);
                if mono {
                    hc = hc.mono_port();
                }
                let mut goal = 2;
                for _ in 0..800 {
                    let secs = 0.05;
                    let completions = (2000.0 * secs) as u32;
                    let before = hc.total_samples();
                    let (g, interval) = hc.update(goal, secs, completions, 50, 2, 500);
                    let stats = hc.last_stats().unwrap();
                    if hc.total_samples() > before && g == 2 && stats.ratio < 0.0 {
                        let tenfold = 10 * hc.current_sample_interval;
                        if mono {
                            assert!(interval >= tenfold, "{interval} < {tenfold}");
                        } else {
                            assert!(interval <= tenfold + 1, "{interval} > {tenfold}");
                        }
                        stretched += 1;
                    }
                    goal = g;
                }
            }
            assert!(
                stretched > 0,
                "mono {mono}: never at the minimum with a falling ratio"
            );
        }
    }

    #[test]
    fn busy_cpu_refuses_upward_moves() {
        let mut hc = HillClimbing::new(&default_config(), 11);
        run(&mut hc, 2, 1500, 96, 2, 32767, |t| {
            100.0 * f64::from(t.min(40))
        });
        assert!(hc.current_control_setting() <= 2.0);
    }

    #[test]
    fn sample_interval_stays_in_range_or_stretched_range() {
        let mut config = default_config();
        config.sample_interval_low_ms = 50;
        config.sample_interval_high_ms = 80;
        for seed in 0..4 {
            let mut hc = HillClimbing::new(&config, seed);
            let mut goal = 2;
            let mut in_range = 0;
            let mut stretched = 0;
            for step in 0..2000 {
                // Alternate a flat and a rising workload, with some short samples.
                let rate = if (step / 500) % 2 == 0 {
                    800.0
                } else {
                    60.0 * f64::from(goal.min(30))
                };
                let secs = if step % 7 == 0 { 0.002 } else { 0.065 };
                let completions = (rate * secs) as u32;
                let before = hc.total_samples();
                let (g, interval) = hc.update(goal, secs, completions, 50, 2, 500);
                if hc.total_samples() == before {
                    assert_eq!(interval, ACCUMULATING_SAMPLE_INTERVAL_MS);
                    assert_eq!(g, goal, "an accumulated sample does not move the goal");
                } else if (50..=80).contains(&interval) {
                    in_range += 1;
                } else {
                    assert_eq!(g, 2, "out of [low, high] only at the minimum");
                    assert!(hc.last_stats().unwrap().ratio < 0.0);
                    assert!(interval <= 800, "stretch is at most 10x: {interval}");
                    stretched += 1;
                }
                goal = g;
            }
            assert!(in_range > 100);
            assert!(stretched > 0, "seed {seed}: the stretch never happened");
        }
    }

    #[test]
    fn force_change_sets_goal_and_transition() {
        let mut hc = HillClimbing::new(&default_config(), 3);
        let out = run(&mut hc, 4, 50, 50, 4, 100, |_| 500.0);
        let (goal, _) = *out.last().unwrap();
        let control = hc.current_control_setting();

        hc.force_change(goal + 3, Transition::Starvation);
        assert_eq!(hc.last_transition(), Transition::Starvation);
        assert_eq!(hc.current_control_setting(), control + 3.0);

        // Forcing the same count again is a no-op.
        hc.force_change(goal + 3, Transition::ThreadTimedOut);
        assert_eq!(hc.last_transition(), Transition::Starvation);

        // The next update with the forced count is not an "Initializing" change.
        let control = hc.current_control_setting();
        hc.update(goal + 3, 0.001, 0, 50, 4, 100); // accumulated: too few completions
        assert_eq!(hc.last_transition(), Transition::Starvation);
        assert_eq!(hc.current_control_setting(), control);

        hc.force_change(4, Transition::ThreadTimedOut);
        assert_eq!(hc.last_transition(), Transition::ThreadTimedOut);
        assert_eq!(
            hc.current_control_setting(),
            control - f64::from(goal + 3 - 4)
        );
    }

    #[test]
    fn unannounced_goal_change_is_initializing() {
        let mut hc = HillClimbing::new(&default_config(), 5);
        // First call: the record says 0 threads, so the count is adopted.
        let (g, _) = hc.update(4, 0.1, 100, 50, 4, 100);
        assert_eq!(g, 4);
        assert_eq!(hc.last_transition(), Transition::Initializing);
        assert_eq!(hc.current_control_setting(), 4.0);
        // The pool moved to 9 on its own: control shifts by 5, still warming
        // up (no move); the second sample is in the wave's high half, so the
        // goal becomes 9 + 1, logged as a Warmup change.
        let (g, _) = hc.update(9, 0.1, 1000, 50, 4, 100);
        assert_eq!(hc.current_control_setting(), 9.0);
        assert_eq!(g, 10);
        assert_eq!(hc.last_transition(), Transition::Warmup);
    }

    #[test]
    fn short_samples_accumulate_with_the_exact_rule() {
        // min = max = 4 pins the goal so every call sees 4 threads.
        let mut hc = HillClimbing::new(&default_config(), 9);
        // The first sample is never accumulated, even with no completions.
        assert_eq!(
            hc.update(4, 0.010, 0, 50, 4, 4),
            (4, hc.current_sample_interval)
        );
        assert_eq!(hc.total_samples(), 1);

        // (4 - 1) / 20 = 0.15 >= 0.15: put aside, come back in 10 ms.
        assert_eq!(hc.update(4, 0.010, 20, 50, 4, 4), (4, 10));
        assert_eq!(hc.total_samples(), 1);
        assert_eq!(hc.accumulated_completion_count, 20);
        assert!((hc.accumulated_sample_duration - 0.010).abs() < 1e-12);

        // 20 + 1 = 21 completions, 3/21 < 0.15: accepted, spanning both.
        hc.update(4, 0.030, 1, 50, 4, 4);
        assert_eq!(hc.total_samples(), 2);
        assert_eq!(hc.accumulated_completion_count, 0);
        let stats = hc.last_stats().unwrap();
        assert!((stats.sample_duration_secs - 0.040).abs() < 1e-12);
        assert!((stats.throughput - 21.0 / 0.040).abs() < 1e-9);
    }

    #[test]
    fn accumulation_boundary_and_single_thread_nan() {
        let fresh = || {
            let mut hc = HillClimbing::new(&default_config(), 1);
            // min = max pins the goal at 4.
            hc.update(4, 0.1, 100, 50, 4, 4);
            hc
        };
        let mut hc = fresh();
        hc.update(4, 0.01, 20, 50, 4, 4);
        assert_eq!(hc.total_samples(), 1, "3/20 = 0.15 accumulates");
        let mut hc = fresh();
        hc.update(4, 0.01, 21, 50, 4, 4);
        assert_eq!(hc.total_samples(), 2, "3/21 < 0.15 is accepted");
        let mut hc = fresh();
        hc.update(4, 0.01, 0, 50, 4, 4);
        assert_eq!(hc.total_samples(), 1, "3/0 = inf accumulates");

        // One thread, no completions: 0/0 is NaN, the test is false, accepted.
        let mut hc = HillClimbing::new(&default_config(), 1);
        hc.update(1, 0.1, 10, 50, 1, 1);
        hc.update(1, 0.1, 0, 50, 1, 1);
        assert_eq!(hc.total_samples(), 2);
        assert_eq!(hc.last_stats().unwrap().throughput, 0.0);
    }

    #[test]
    fn goertzel_finds_the_wave() {
        let mut hc = HillClimbing::new(&default_config(), 0);
        // Fill the history with 1 + 0.5*cos(2*pi*k/4) directly.
        for k in 0..32u64 {
            let slot = (k % 32) as usize;
            hc.samples[slot] = 1.0 + 0.5 * (2.0 * std::f64::consts::PI * k as f64 / 4.0).cos();
        }
        hc.total_samples = 32;
        let at_wave = hc.wave_component(&hc.samples, 32, 4.0).abs();
        let beside = hc.wave_component(&hc.samples, 32, 32.0 / 9.0).abs();
        assert!((at_wave - 0.25).abs() < 1e-9, "magnitude {at_wave}");
        assert!(beside < 1e-9, "leak {beside}");
    }

    #[test]
    fn goal_respects_limits() {
        let mut hc = HillClimbing::new(&default_config(), 21);
        let out = run(&mut hc, 3, 800, 50, 3, 12, |t| 100.0 * f64::from(t));
        assert!(out.iter().all(|&(g, _)| (3..=12).contains(&g)));
        assert!(hc.current_control_setting() <= 12.0);
        assert!(out.iter().any(|&(g, _)| g >= 10), "should reach the top");
    }

    #[test]
    fn transition_names() {
        assert_eq!(Transition::Starvation.name(), "Starvation");
        assert_eq!(
            Transition::CooperativeBlocking.name(),
            "CooperativeBlocking"
        );
    }
}
