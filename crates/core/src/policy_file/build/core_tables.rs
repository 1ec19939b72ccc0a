//! The core tables, required in every policy file: `[threads]`, `[gate]`,
//! `[hill_climbing]`, `[dispatch]` and `[timers]`, each checked key by key
//! into its part of the [`PolicyConfig`](crate::policy::PolicyConfig), with
//! the words their choice keys accept.

use super::check::{
    MAX_PER_CORE, Table, first_tick, flag, float_at_least, ms, spread, thread_count, tick_count,
    u32_in,
};
use crate::diagnostics::{Problem, Report, choose};
use crate::policy::config::{
    Comparison, CpuReading, DispatchConfig, FirstCpuSample, FirstTick, GateConfig, GateStart,
    HillClimbingConfig, RequestMode, Spread, ThreadCount, ThreadsConfig, TimerDispatch,
    TimerQueueChoice, TimersConfig,
};
use crate::policy_file::raw::{
    RawDispatch, RawGate, RawHillClimbing, RawPolicy, RawThreads, RawTimers,
};
use crate::scenario::model::MAX_THREADS_LIMIT;
use crate::scenario::raw::TimeUnit;
use crate::time::SimDuration;

/// `comparison = ...` values.
const COMPARISONS: &[(&str, Comparison)] = &[
    (">", Comparison::Greater),
    (">=", Comparison::GreaterOrEqual),
];

const CPU_READINGS: &[(&str, CpuReading)] = &[
    ("all-processors", CpuReading::AllProcessors),
    ("one-processor", CpuReading::OneProcessor),
];

const GATE_STARTS: &[(&str, GateStart)] = &[
    ("at-request", GateStart::AtRequest),
    ("with-first-thread", GateStart::WithFirstThread),
];

const FIRST_CPU_SAMPLES: &[(&str, FirstCpuSample)] = &[
    ("since-gate-start", FirstCpuSample::SinceGateStart),
    ("since-boot", FirstCpuSample::SinceBoot),
];

/// `[dispatch] requests = ...` values.
const REQUEST_MODES: &[(&str, RequestMode)] = &[
    ("every-dequeue", RequestMode::EveryDequeue),
    ("first-dequeue", RequestMode::FirstDequeue),
];

/// `[timers] dispatch = ...` values.
const TIMER_DISPATCHES: &[(&str, TimerDispatch)] = &[
    ("unmanaged-request", TimerDispatch::UnmanagedRequest),
    ("time-sensitive", TimerDispatch::TimeSensitive),
    ("high-priority", TimerDispatch::HighPriority),
    ("global-per-callback", TimerDispatch::GlobalPerCallback),
];

const TIMER_QUEUE_CHOICES: &[(&str, TimerQueueChoice)] = &[
    ("creating-thread", TimerQueueChoice::CreatingThread),
    ("thread-processor", TimerQueueChoice::ThreadProcessor),
    ("random", TimerQueueChoice::Random),
];

pub(super) fn build_threads(raw: &RawPolicy, r: &mut Report<'_>) -> ThreadsConfig {
    let fallback = RawThreads::default();
    let t = Table::required(&raw.threads, &fallback, "threads", r);
    let min = t.get(r, "min", &t.raw.min, thread_count);
    let max = t.get(r, "max", &t.raw.max, thread_count);
    if let (Some(lo), Some(hi), Some(min_span)) = (min, max, &t.raw.min) {
        let (a, b, unit) = match (lo, hi) {
            (ThreadCount::Fixed(a), ThreadCount::Fixed(b)) => (a, b, ""),
            (ThreadCount::PerCore(a), ThreadCount::PerCore(b)) => (a, b, "*cores"),
            _ => (0, 1, ""),
        };
        if a > b {
            r.error(
                min_span.span(),
                "threads.min",
                Problem::new(format!("min ({a}{unit}) is greater than max ({b}{unit})")),
            );
        }
    }
    ThreadsConfig {
        min: min.unwrap_or(ThreadCount::Fixed(1)),
        max: max.unwrap_or(ThreadCount::Fixed(1)),
        start_latency: t
            .get(r, "start_ms", &t.raw.start_ms, spread(TimeUnit::Ms))
            .unwrap_or_else(|| Spread::fixed(SimDuration::ZERO)),
        first_start_latency: t
            .get(
                r,
                "first_start_ms",
                &t.raw.first_start_ms,
                spread(TimeUnit::Ms),
            )
            .unwrap_or_else(|| Spread::fixed(SimDuration::ZERO)),
        wake_latency: t
            .get(r, "wake_us", &t.raw.wake_us, |n| {
                n.duration(TimeUnit::Us, false)
            })
            .unwrap_or_default(),
        idle_timeout: t
            .get(r, "idle_timeout_ms", &t.raw.idle_timeout_ms, ms(false))
            .unwrap_or_default(),
        dedicated_start_latency: t
            .get(
                r,
                "dedicated_start_ms",
                &t.raw.dedicated_start_ms,
                ms(false),
            )
            .unwrap_or_default(),
        honours_set_min_threads: t
            .get(
                r,
                "honours_set_min_threads",
                &t.raw.honours_set_min_threads,
                flag,
            )
            .unwrap_or(true),
        main_yields_to_first_worker: t
            .get(
                r,
                "main_yields_to_first_worker",
                &t.raw.main_yields_to_first_worker,
                flag,
            )
            .unwrap_or(false),
        spin_cpu_percent: t
            .get(
                r,
                "spin_cpu_percent",
                &t.raw.spin_cpu_percent,
                u32_in(1, 100),
            )
            .unwrap_or(100),
        sleep_overshoot: t
            .get(
                r,
                "sleep_overshoot_us",
                &t.raw.sleep_overshoot_us,
                spread(TimeUnit::Us),
            )
            .unwrap_or_else(|| Spread::fixed(SimDuration::ZERO)),
        wake_preemption: t
            .get(
                r,
                "wake_preempt_us",
                &t.raw.wake_preempt_us,
                spread(TimeUnit::Us),
            )
            .unwrap_or_else(|| Spread::fixed(SimDuration::ZERO)),
        cpu_second: t
            .get(r, "cpu_second_ms", &t.raw.cpu_second_ms, |v| {
                let s = spread(TimeUnit::Ms)(v)?;
                if s.min() == SimDuration::ZERO {
                    return Err(Problem::new("must be above 0 ms").help(
                        "how long a cpu_ms step of 1000 ms takes: 1000 is exact, 1030 is 3 % slow",
                    ));
                }
                Ok(s)
            })
            .unwrap_or_else(|| Spread::fixed(SimDuration::from_ms(1000))),
    }
}

pub(super) fn build_gate(raw: &RawPolicy, r: &mut Report<'_>) -> GateConfig {
    let fallback = RawGate::default();
    let g = Table::required(&raw.gate, &fallback, "gate", r);
    GateConfig {
        period: g
            .get(r, "period_ms", &g.raw.period_ms, ms(true))
            .unwrap_or_default(),
        cpu_busy_percent: g
            .get(
                r,
                "cpu_busy_percent",
                &g.raw.cpu_busy_percent,
                u32_in(0, 100),
            )
            .unwrap_or_default(),
        starvation_delay: g
            .get(
                r,
                "starvation_delay_ms",
                &g.raw.starvation_delay_ms,
                ms(false),
            )
            .unwrap_or_default(),
        busy_delay_per_thread: g
            .get(
                r,
                "busy_delay_per_thread_ms",
                &g.raw.busy_delay_per_thread_ms,
                ms(false),
            )
            .unwrap_or_default(),
        comparison: g
            .get(r, "comparison", &g.raw.comparison, |s| {
                choose(s, COMPARISONS, "comparison")
            })
            .unwrap_or(Comparison::Greater),
        first_tick: g
            .get(r, "first_tick_ms", &g.raw.first_tick_ms, first_tick)
            .unwrap_or(FirstTick::Random),
        first_tick_tiered: g.get(
            r,
            "first_tick_tiered_ms",
            &g.raw.first_tick_tiered_ms,
            first_tick,
        ),
        first_tick_tiered_one_core: g.get(
            r,
            "first_tick_tiered_one_core_ms",
            &g.raw.first_tick_tiered_one_core_ms,
            first_tick,
        ),
        tick_count: g
            .get(r, "tick_count_ms", &g.raw.tick_count_ms, tick_count)
            .unwrap_or_default(),
        drift: g
            .get(r, "drift_ms", &g.raw.drift_ms, spread(TimeUnit::Ms))
            .unwrap_or_else(|| Spread::fixed(SimDuration::ZERO)),
        idle_ticks_before_stop: g
            .get(
                r,
                "idle_ticks_before_stop",
                &g.raw.idle_ticks_before_stop,
                u32_in(0, 100_000),
            )
            .unwrap_or_default(),
        first_cpu_sample: g
            .get(r, "first_cpu_sample", &g.raw.first_cpu_sample, |s| {
                choose(s, FIRST_CPU_SAMPLES, "first CPU sample")
            })
            .unwrap_or(FirstCpuSample::SinceGateStart),
        cpu_reading: g
            .get(r, "cpu_reading", &g.raw.cpu_reading, |s| {
                choose(s, CPU_READINGS, "CPU reading")
            })
            .unwrap_or(CpuReading::AllProcessors),
        start: g
            .get(r, "start", &g.raw.start, |s| {
                choose(s, GATE_STARTS, "gate start")
            })
            .unwrap_or(GateStart::AtRequest),
    }
}

pub(super) fn build_hill_climbing(raw: &RawPolicy, r: &mut Report<'_>) -> HillClimbingConfig {
    let fallback = RawHillClimbing::default();
    let h = Table::required(&raw.hill_climbing, &fallback, "hill_climbing", r);
    let hc = h.raw;
    let low = h.get(
        r,
        "sample_interval_low_ms",
        &hc.sample_interval_low_ms,
        u32_in(1, 3_600_000),
    );
    let high = h.get(
        r,
        "sample_interval_high_ms",
        &hc.sample_interval_high_ms,
        u32_in(1, 3_600_000),
    );
    if let (Some(lo), Some(hi), Some(low_span)) = (low, high, &hc.sample_interval_low_ms)
        && lo > hi
    {
        r.error(
            low_span.span(),
            "hill_climbing.sample_interval_low_ms",
            Problem::new(format!(
                "sample_interval_low_ms ({lo}) is greater than sample_interval_high_ms ({hi})"
            )),
        );
    }
    HillClimbingConfig {
        enabled: h.get(r, "enabled", &hc.enabled, flag).unwrap_or_default(),
        wave_period: h
            .get(r, "wave_period", &hc.wave_period, u32_in(1, 10_000))
            .unwrap_or(1),
        max_wave_magnitude: h
            .get(
                r,
                "max_wave_magnitude",
                &hc.max_wave_magnitude,
                u32_in(0, MAX_THREADS_LIMIT),
            )
            .unwrap_or_default(),
        wave_magnitude_multiplier: h
            .get(
                r,
                "wave_magnitude_multiplier",
                &hc.wave_magnitude_multiplier,
                float_at_least(0.0),
            )
            .unwrap_or_default(),
        wave_history_size: h
            .get(
                r,
                "wave_history_size",
                &hc.wave_history_size,
                u32_in(1, 10_000),
            )
            .unwrap_or(1),
        bias: h
            .get(r, "bias", &hc.bias, float_at_least(0.0))
            .unwrap_or_default(),
        max_change_per_second: h
            .get(
                r,
                "max_change_per_second",
                &hc.max_change_per_second,
                float_at_least(0.0),
            )
            .unwrap_or_default(),
        max_change_per_sample: h
            .get(
                r,
                "max_change_per_sample",
                &hc.max_change_per_sample,
                float_at_least(0.0),
            )
            .unwrap_or_default(),
        max_sample_error: h
            .get(
                r,
                "max_sample_error",
                &hc.max_sample_error,
                float_at_least(0.0),
            )
            .unwrap_or_default(),
        sample_interval_low_ms: low.unwrap_or(1),
        sample_interval_high_ms: high.unwrap_or(1),
        error_smoothing_factor: h
            .get(
                r,
                "error_smoothing_factor",
                &hc.error_smoothing_factor,
                |n| n.float_in(0.0, 1.0),
            )
            .unwrap_or_default(),
        target_signal_to_noise_ratio: h
            .get(
                r,
                "target_signal_to_noise_ratio",
                &hc.target_signal_to_noise_ratio,
                float_at_least(0.0),
            )
            .unwrap_or_default(),
        gain_exponent: h
            .get(r, "gain_exponent", &hc.gain_exponent, float_at_least(0.0))
            .unwrap_or_default(),
        startup_completions_tiered: h
            .get(
                r,
                "startup_completions_tiered",
                &hc.startup_completions_tiered,
                u32_in(0, 1_000),
            )
            .unwrap_or_default(),
    }
}

pub(super) fn build_dispatch(raw: &RawPolicy, r: &mut Report<'_>) -> DispatchConfig {
    let fallback = RawDispatch::default();
    let d = Table::required(&raw.dispatch, &fallback, "dispatch", r);
    DispatchConfig {
        quantum: d
            .get(r, "quantum_ms", &d.raw.quantum_ms, ms(true))
            .unwrap_or_default(),
        max_outstanding_requests_per_core: d
            .get(
                r,
                "max_outstanding_requests_per_core",
                &d.raw.max_outstanding_requests_per_core,
                u32_in(1, MAX_PER_CORE),
            )
            .unwrap_or(1),
        requests: d
            .get(r, "requests", &d.raw.requests, |s| {
                choose(s, REQUEST_MODES, "request mode")
            })
            .unwrap_or(RequestMode::EveryDequeue),
        leave_at_quantum: d
            .get(r, "leave_at_quantum", &d.raw.leave_at_quantum, flag)
            .unwrap_or_default(),
    }
}

pub(super) fn build_timers(raw: &RawPolicy, r: &mut Report<'_>) -> TimersConfig {
    let fallback = RawTimers::default();
    let t = Table::required(&raw.timers, &fallback, "timers", r);
    TimersConfig {
        queues: t
            .get(r, "queues", &t.raw.queues, thread_count)
            .unwrap_or(ThreadCount::Fixed(1)),
        dispatch: t
            .get(r, "dispatch", &t.raw.dispatch, |s| {
                choose(s, TIMER_DISPATCHES, "timer dispatch")
            })
            .unwrap_or(TimerDispatch::GlobalPerCallback),
        queue_of: t
            .get(r, "queue_of", &t.raw.queue_of, |s| {
                choose(s, TIMER_QUEUE_CHOICES, "timer queue choice")
            })
            .unwrap_or(TimerQueueChoice::Random),
        tick_count: t
            .get(r, "tick_count_ms", &t.raw.tick_count_ms, tick_count)
            .unwrap_or_default(),
    }
}
