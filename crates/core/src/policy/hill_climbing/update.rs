//! One sample of the controller: `HillClimbing::Update` of dotnet/coreclr
//! `src/vm/hillclimbing.cpp` (3.1), with `CpuUtilizationHigh` of
//! `src/vm/win32threadpool.h`; the .NET 6+ port is `Update` in dotnet/runtime
//! `PortableThreadPool.HillClimbing.cs`, and where it differs a comment
//! says so. Mono's port (`hill_climbing_update` of mono/mono
//! `threadpool-worker-default.c`) differs in two lines here, taken when
//! [`HillClimbing::mono_port`] was set.

use super::wave::{Complex, c_max, c_min};
use super::{AdjustmentStats, HillClimbing, Transition};

/// `CpuUtilizationHigh` (win32threadpool.h): above this CPU percentage an
/// upward move is refused. Not a `HillClimbing_*` setting, hence a constant.
const CPU_UTILIZATION_HIGH: u32 = 95;

/// Interval returned while a sample is being accumulated. Hard-coded `10` in
/// `Update` (not `HillClimbing_SampleIntervalLow`, although both default to 10).
pub(super) const ACCUMULATING_SAMPLE_INTERVAL_MS: u32 = 10;

impl HillClimbing {
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
}
