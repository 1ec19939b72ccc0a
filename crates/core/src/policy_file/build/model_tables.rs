//! The model tables, each given exactly when the policy's model is its
//! own (checked by `build_policy`): `[blocking]` (model `portable`, the
//! cooperative-blocking adjustment of .NET 6+), `[mono]` and `[net20]`.

use super::check::{MAX_PER_CORE, Table, flag, float_at_least, ms, u32_in};
use crate::diagnostics::{Problem, Report, choose};
use crate::policy::config::{BlockingConfig, HeuristicStart, MonoConfig, Net20Config};
use crate::policy_file::raw::{RawBlocking, RawMono, RawNet20, RawPolicy};
use crate::scenario::raw::TimeUnit;
use crate::time::SimDuration;

/// `[mono] heuristic_start = ...` values.
const HEURISTIC_STARTS: &[(&str, HeuristicStart)] = &[
    ("since-boot", HeuristicStart::SinceBoot),
    ("since-pool-start", HeuristicStart::SincePoolStart),
];

/// The runtime clamps `MaxDelayMs` to `[1, 500]`.
const MAX_BLOCKING_DELAY_MS: f64 = 500.0;

/// `[blocking]`, if written (its presence is checked against the model).
pub(super) fn build_blocking(raw: &RawPolicy, r: &mut Report<'_>) -> Option<BlockingConfig> {
    raw.blocking.as_ref()?;
    let fallback = RawBlocking::default();
    let b = Table::given(&raw.blocking, &fallback, "blocking", "net6.toml");
    let clamp_help = "the runtime clamps MaxDelayMs to [1, 500] and DelayStepMs to [1, MaxDelayMs]: a value outside would not be what .NET runs";
    let max_delay = b.get(r, "max_delay_ms", &b.raw.max_delay_ms, |n| {
        let d = n.duration(TimeUnit::Ms, true)?;
        let x = d.as_ms_f64();
        if !(1.0..=MAX_BLOCKING_DELAY_MS).contains(&x) {
            return Err(
                Problem::new(format!("must be between 1 and 500 ms, found {n}")).help(clamp_help),
            );
        }
        Ok(d)
    });
    let delay_step = b.get(r, "delay_step_ms", &b.raw.delay_step_ms, |n| {
        let d = n.duration(TimeUnit::Ms, true)?;
        if d.as_ms_f64() < 1.0 {
            return Err(Problem::new(format!("must be at least 1 ms, found {n}")).help(clamp_help));
        }
        Ok(d)
    });
    if let (Some(step), Some(max), Some(step_span)) = (delay_step, max_delay, &b.raw.delay_step_ms)
        && step > max
    {
        r.error(
            step_span.span(),
            "blocking.delay_step_ms",
            Problem::new(format!(
                "delay_step_ms ({}) is greater than max_delay_ms ({})",
                step_span.get_ref(),
                b.raw
                    .max_delay_ms
                    .as_ref()
                    .map_or(String::new(), |m| m.get_ref().to_string())
            ))
            .help(clamp_help),
        );
    }
    Some(BlockingConfig {
        enabled: b.get(r, "enabled", &b.raw.enabled, flag).unwrap_or(true),
        threads_to_add_without_delay_per_core: b
            .get(
                r,
                "threads_to_add_without_delay_per_core",
                &b.raw.threads_to_add_without_delay_per_core,
                u32_in(0, MAX_PER_CORE),
            )
            .unwrap_or(1),
        threads_per_delay_step_per_core: b
            .get(
                r,
                "threads_per_delay_step_per_core",
                &b.raw.threads_per_delay_step_per_core,
                u32_in(1, MAX_PER_CORE),
            )
            .unwrap_or(1),
        delay_step: delay_step.unwrap_or(SimDuration::from_ms(25)),
        max_delay: max_delay.unwrap_or(SimDuration::from_ms(250)),
    })
}

/// `[mono]`, if written.
pub(super) fn build_mono(raw: &RawPolicy, r: &mut Report<'_>) -> Option<MonoConfig> {
    raw.mono.as_ref()?;
    let fallback = RawMono::default();
    let m = Table::given(&raw.mono, &fallback, "mono", "mono.toml");
    Some(MonoConfig {
        max_creations_per_second: m
            .get(
                r,
                "max_creations_per_second",
                &m.raw.max_creations_per_second,
                u32_in(1, 100_000),
            )
            .unwrap_or(10),
        inject_tries: m
            .get(r, "inject_tries", &m.raw.inject_tries, u32_in(1, 1000))
            .unwrap_or(5),
        threads_per_cpu: m
            .get(r, "threads_per_cpu", &m.raw.threads_per_cpu, |n| {
                u32_in(1, 50)(n).map_err(|p| p.help("MONO_THREADS_PER_CPU: Mono clamps it to 1-50"))
            })
            .unwrap_or(1),
        heuristic_start: m
            .get(r, "heuristic_start", &m.raw.heuristic_start, |s| {
                choose(s, HEURISTIC_STARTS, "heuristic start")
            })
            .unwrap_or(HeuristicStart::SinceBoot),
        creation_wait: m
            .get(r, "creation_wait_ms", &m.raw.creation_wait_ms, ms(false))
            .unwrap_or(SimDuration::ZERO),
        max_starting: m
            .get(r, "max_starting", &m.raw.max_starting, u32_in(0, 32767))
            .unwrap_or(0),
    })
}

/// `[net20]`, if written.
pub(super) fn build_net20(raw: &RawPolicy, r: &mut Report<'_>) -> Option<Net20Config> {
    raw.net20.as_ref()?;
    let fallback = RawNet20::default();
    let n = Table::given(&raw.net20, &fallback, "net20", "net20-sp1.toml");
    Some(Net20Config {
        creation_delay: n
            .get(r, "creation_delay_ms", &n.raw.creation_delay_ms, ms(false))
            .unwrap_or_default(),
        creation_delay_growth: n
            .get(
                r,
                "creation_delay_growth",
                &n.raw.creation_delay_growth,
                float_at_least(1.0),
            )
            .unwrap_or(1.0),
        sp1_start_delay_bug: n
            .get(r, "sp1_start_delay_bug", &n.raw.sp1_start_delay_bug, flag)
            .unwrap_or_default(),
    })
}
