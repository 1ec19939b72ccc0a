//! The policies compiled into the binary ([`BUILTIN`]: the files of
//! `policies/`, by `include_str!`) and their names.
//!
//! The names and aliases are read here without checking the files (so that
//! looking up a `base` does not load every built-in); loading and checking
//! a built-in is [`super::resolve`]'s and [`super::build`]'s.

use serde::Deserialize;

/// The policy files compiled into the binary: (file name, text). Add a file
/// in `policies/` and a line here.
pub const BUILTIN: &[(&str, &str)] = &[
    (
        "net-classic.toml",
        include_str!("../../../../policies/net-classic.toml"),
    ),
    (
        "coreclr3-linux.toml",
        include_str!("../../../../policies/coreclr3-linux.toml"),
    ),
    ("net6.toml", include_str!("../../../../policies/net6.toml")),
    ("net8.toml", include_str!("../../../../policies/net8.toml")),
    ("mono.toml", include_str!("../../../../policies/mono.toml")),
    (
        "net20-sp1.toml",
        include_str!("../../../../policies/net20-sp1.toml"),
    ),
    (
        "net20.toml",
        include_str!("../../../../policies/net20.toml"),
    ),
    (
        "dedicated-threads.toml",
        include_str!("../../../../policies/dedicated-threads.toml"),
    ),
    (
        "net-classic-throttled.toml",
        include_str!("../../../../policies/net-classic-throttled.toml"),
    ),
    (
        "net6-throttled.toml",
        include_str!("../../../../policies/net6-throttled.toml"),
    ),
];

/// Name and aliases of a built-in file, read without checking it (so that
/// looking up a base does not load every built-in).
fn builtin_names(file: &str, text: &str) -> Vec<String> {
    #[derive(Deserialize)]
    struct Names {
        name: Option<String>,
        #[serde(default)]
        aliases: Vec<String>,
    }
    let stem = file.strip_suffix(".toml").unwrap_or(file).to_string();
    match toml::from_str::<Names>(text) {
        Ok(n) => std::iter::once(n.name.unwrap_or(stem))
            .chain(n.aliases)
            .collect(),
        Err(_) => vec![stem],
    }
}

/// Names and aliases of every built-in, in [`BUILTIN`] order (read once).
pub(super) fn builtin_name_table() -> &'static [Vec<String>] {
    static NAMES: std::sync::OnceLock<Vec<Vec<String>>> = std::sync::OnceLock::new();
    NAMES.get_or_init(|| {
        BUILTIN
            .iter()
            .map(|(file, text)| builtin_names(file, text))
            .collect()
    })
}

/// The built-in file named (case-insensitively) `wanted` by its name or an alias.
pub(super) fn builtin_named(wanted: &str) -> Option<(&'static str, &'static str)> {
    BUILTIN
        .iter()
        .zip(builtin_name_table())
        .find(|(_, names)| names.iter().any(|n| n.trim().eq_ignore_ascii_case(wanted)))
        .map(|(b, _)| *b)
}

/// "net-classic (also net5, ...); ..." for help lines.
pub(super) fn known_builtins() -> String {
    builtin_name_table()
        .iter()
        .map(|names| match names.split_first() {
            Some((name, [])) => name.clone(),
            Some((name, aliases)) => format!("{name} (also {})", aliases.join(", ")),
            None => String::new(),
        })
        .collect::<Vec<_>>()
        .join("; ")
}

#[cfg(test)]
mod tests {
    use crate::policy::config::{
        BlockingConfig, Comparison, CpuReading, DispatchConfig, FirstCpuSample, FirstTick,
        GateConfig, GateStart, HeuristicStart, LibraryConfig, ModelKind, MonoConfig, Net20Config,
        PolicyConfig, RequestMode, Spread, ThreadCount, ThreadsConfig, ThrottleConfig,
        TimerDispatch, TimerQueueChoice, TimersConfig,
    };
    use crate::policy_file::{NoFiles, parse_policy_in};

    /// A policy file's text parsed with no file system behind it.
    fn parse_policy(
        text: &str,
        file: &str,
    ) -> Result<crate::policy::PolicyConfig, crate::diagnostics::LoadError> {
        parse_policy_in(text, file, &NoFiles)
    }
    use crate::policy_file::test_support::{builtin, net_classic};
    use crate::scenario::model::ThrottleKind;
    use crate::time::SimDuration;

    #[test]
    fn net_classic_has_the_clr_constants() {
        let p = parse_policy(net_classic(), "net-classic.toml").unwrap();
        assert_eq!(p.name, "net-classic");
        assert_eq!(p.aliases, ["net5", "netcore3", "netfx4"]);
        assert_eq!(p.model, ModelKind::Classic);
        assert_eq!(p.threads.min, ThreadCount::PerCore(1));
        assert_eq!(p.threads.max, ThreadCount::Fixed(32767));
        assert_eq!(
            p.threads.start_latency,
            Spread::fixed(SimDuration::from_us(200))
        );
        assert_eq!(p.threads.wake_latency, SimDuration::from_us(20));
        assert_eq!(p.threads.idle_timeout, SimDuration::from_ms(20_000));
        assert_eq!(p.threads.dedicated_start_latency, SimDuration::from_ms(4));
        assert!(p.threads.honours_set_min_threads);
        assert_eq!(p.gate.period, SimDuration::from_ms(500));
        assert_eq!(p.gate.comparison, Comparison::Greater);
        assert_eq!(p.gate.first_tick, FirstTick::Random);
        assert_eq!(p.gate.drift, Spread::fixed(SimDuration::ZERO));
        assert_eq!(p.threads.sleep_overshoot, Spread::fixed(SimDuration::ZERO));
        assert_eq!(p.gate.idle_ticks_before_stop, 0);
        assert_eq!(p.hill_climbing.wave_period, 4);
        assert_eq!(p.dispatch.quantum, SimDuration::from_ms(30));
        assert_eq!(p.dispatch.requests, RequestMode::EveryDequeue);
        assert!(p.dispatch.leave_at_quantum);
        assert_eq!(
            p.timers,
            TimersConfig {
                queues: ThreadCount::PerCore(1),
                dispatch: TimerDispatch::UnmanagedRequest,
                queue_of: TimerQueueChoice::Random,
                tick_count: None,
            }
        );
        assert_eq!((&p.blocking, &p.mono, &p.net20), (&None, &None, &None));
        assert_eq!(p.throttle, None);
    }

    #[test]
    fn coreclr3_linux_is_net_classic_with_linux_gate_timing() {
        let classic = builtin("net-classic");
        let p = builtin("coreclr3");
        assert_eq!(p.name, "coreclr3-linux");
        assert_eq!(
            p.threads.start_latency,
            Spread::fixed(SimDuration::from_us(500))
        );
        assert_eq!(
            p.gate.first_tick,
            FirstTick::After(SimDuration::from_ms(1000))
        );
        // Measured on Linux: the gate's ticks drift, sleeps return late.
        assert!(!p.gate.drift.is_fixed());
        assert!(!p.threads.sleep_overshoot.is_fixed());
        // Linux's wake-up preemption, measured on one core.
        assert!(!p.threads.wake_preemption.is_fixed());
        assert_eq!(
            classic.threads.wake_preemption,
            Spread::fixed(SimDuration::ZERO)
        );
        // Measured here: a run's CPU rate against the harness's calibration,
        // the first pool thread's start, and (tiered compilation on) the
        // gate's first tick, one processor or more; and the gate thread's
        // first run, which waits for a scheduler tick on taken cores.
        assert!(!p.threads.cpu_second.is_fixed());
        assert!(!p.threads.first_start_latency.is_fixed());
        assert!(matches!(
            p.gate.first_tick_tiered,
            Some(FirstTick::Measured(_))
        ));
        assert!(matches!(
            p.gate.first_tick_tiered_one_core,
            Some(FirstTick::Measured(_))
        ));
        assert_eq!(p.gate.start, GateStart::WithFirstThread);
        assert_eq!(classic.gate.start, GateStart::AtRequest);
        // On one core the main thread loses it to the first worker.
        assert!(p.threads.main_yields_to_first_worker);
        assert!(!classic.threads.main_yields_to_first_worker);
        assert_eq!(p.gate.idle_ticks_before_stop, 1);
        // The PAL's CPU reading is not a share of all processors.
        assert_eq!(p.gate.cpu_reading, CpuReading::OneProcessor);
        assert_eq!(classic.gate.cpu_reading, CpuReading::AllProcessors);
        // On Linux the scheduler places the timer's creator: each thread's
        // processor is drawn.
        assert_eq!(p.timers.queue_of, TimerQueueChoice::ThreadProcessor);
        // With tiering on, on several processors, its start-up's pool work
        // takes hill climbing's first sample.
        assert_eq!(p.hill_climbing.startup_completions_tiered, 2);
        assert_eq!(classic.hill_climbing.startup_completions_tiered, 0);
        // Everything else is net-classic's.
        let same = PolicyConfig {
            name: classic.name.clone(),
            aliases: classic.aliases.clone(),
            description: classic.description.clone(),
            threads: ThreadsConfig {
                start_latency: classic.threads.start_latency.clone(),
                first_start_latency: classic.threads.first_start_latency.clone(),
                sleep_overshoot: classic.threads.sleep_overshoot.clone(),
                wake_preemption: classic.threads.wake_preemption.clone(),
                cpu_second: classic.threads.cpu_second.clone(),
                main_yields_to_first_worker: false,
                ..p.threads.clone()
            },
            gate: classic.gate.clone(),
            timers: classic.timers.clone(),
            hill_climbing: classic.hill_climbing.clone(),
            library: classic.library.clone(),
            ..p
        };
        assert_eq!(same, classic);
        // The installed runtime's parallel APIs compile on their first call.
        assert_eq!(p.library.first_call.costs.len(), 4);
        assert!(classic.library.first_call.costs.is_empty());
    }

    #[test]
    fn the_models_unit_tests_use_the_builtins_hill_climbing_constants() {
        // src/policy cannot load policy files, so its tests write CoreCLR's
        // constants out; they must stay those of the files.
        let written = crate::policy::hill_climbing::coreclr_constants();
        for name in ["net-classic", "net6", "mono"] {
            assert_eq!(builtin(name).hill_climbing, written, "{name}");
        }
    }

    #[test]
    fn portable_builtins_have_their_constants() {
        let p = builtin("net6");
        assert_eq!(p.aliases, ["portable", "net6.0"]);
        assert_eq!(p.model, ModelKind::Portable);
        assert_eq!(
            p.gate.first_tick,
            FirstTick::After(SimDuration::from_ms(500))
        );
        assert_eq!(p.gate.idle_ticks_before_stop, 2);
        assert_eq!(p.dispatch.requests, RequestMode::EveryDequeue);
        assert!(!p.dispatch.leave_at_quantum);
        assert_eq!(p.timers.dispatch, TimerDispatch::TimeSensitive);
        assert_eq!(
            p.blocking,
            Some(BlockingConfig {
                enabled: true,
                threads_to_add_without_delay_per_core: 1,
                threads_per_delay_step_per_core: 1,
                delay_step: SimDuration::from_ms(25),
                max_delay: SimDuration::from_ms(250),
            })
        );
        let q = builtin("net7");
        assert_eq!(q.name, "net8");
        assert_eq!(q.gate.tick_count, Some(SimDuration::from_ms(4)));
        assert_eq!(p.gate.tick_count, None);
        assert_eq!(q.dispatch.requests, RequestMode::FirstDequeue);
        assert_eq!(q.timers.dispatch, TimerDispatch::HighPriority);
        // Otherwise as net6.
        let as_net6 = PolicyConfig {
            name: p.name.clone(),
            aliases: p.aliases.clone(),
            description: p.description.clone(),
            dispatch: DispatchConfig {
                requests: RequestMode::EveryDequeue,
                ..q.dispatch.clone()
            },
            timers: p.timers.clone(),
            // net8 was measured on Linux, whose TickCount steps every 4 ms,
            // whose sleeps return late and whose gate ticks drift, and on
            // this machine, whose CPU rate, pool start-up and thread starts
            // vary run to run, and whose scheduler preempts a waking thread.
            gate: GateConfig {
                tick_count: p.gate.tick_count,
                drift: p.gate.drift.clone(),
                ..q.gate.clone()
            },
            threads: ThreadsConfig {
                start_latency: p.threads.start_latency.clone(),
                first_start_latency: p.threads.first_start_latency.clone(),
                sleep_overshoot: p.threads.sleep_overshoot.clone(),
                wake_preemption: p.threads.wake_preemption.clone(),
                cpu_second: p.threads.cpu_second.clone(),
                ..q.threads.clone()
            },
            // ... and whose parallel APIs were timed on their first call.
            library: LibraryConfig {
                first_call: p.library.first_call.clone(),
                ..q.library.clone()
            },
            ..q
        };
        assert_eq!(as_net6, p);
    }

    #[test]
    fn mono_builtin_has_its_constants() {
        let p = builtin("mono6");
        assert_eq!(p.name, "mono");
        assert_eq!(p.model, ModelKind::Mono);
        assert_eq!(p.threads.max, ThreadCount::PerCore(100));
        assert_eq!(
            p.threads.start_latency,
            Spread::fixed(SimDuration::from_ms(1))
        );
        assert_eq!(p.threads.idle_timeout, SimDuration::from_ms(30_000));
        // SetMinThreads sets limit_worker_min (reached through hill climbing).
        assert!(p.threads.honours_set_min_threads);
        assert_eq!(p.gate.comparison, Comparison::GreaterOrEqual);
        assert_eq!(p.gate.idle_ticks_before_stop, 120);
        for clr in ["mono", "net-classic", "coreclr3-linux", "net6", "net8"] {
            assert_eq!(
                builtin(clr).gate.first_cpu_sample,
                FirstCpuSample::SinceGateStart,
                "{clr}"
            );
        }
        assert!(p.dispatch.leave_at_quantum);
        assert_eq!(
            p.timers,
            TimersConfig {
                queues: ThreadCount::Fixed(1),
                dispatch: TimerDispatch::GlobalPerCallback,
                queue_of: TimerQueueChoice::Random,
                tick_count: None,
            }
        );
        assert_eq!(
            p.mono,
            Some(MonoConfig {
                max_creations_per_second: 10,
                inject_tries: 5,
                threads_per_cpu: 1,
                heuristic_start: HeuristicStart::SinceBoot,
                creation_wait: SimDuration::from_ms(1),
                max_starting: 16,
            })
        );
        assert_eq!((&p.blocking, &p.net20), (&None, &None));
    }

    #[test]
    fn net20_builtins_have_their_constants() {
        let sp1 = builtin("net35");
        assert_eq!(sp1.name, "net20-sp1");
        assert_eq!(sp1.aliases, ["net20sp1", "net35"]);
        assert_eq!(sp1.model, ModelKind::Net20);
        assert_eq!(sp1.threads.max, ThreadCount::PerCore(250));
        assert_eq!(
            sp1.threads.start_latency,
            Spread::fixed(SimDuration::from_ms(5))
        );
        assert_eq!(sp1.threads.wake_latency, SimDuration::from_us(50));
        assert_eq!(sp1.threads.idle_timeout, SimDuration::from_ms(40_000));
        assert!(!sp1.hill_climbing.enabled);
        assert_eq!(sp1.dispatch.max_outstanding_requests_per_core, 1024);
        assert!(!sp1.dispatch.leave_at_quantum);
        assert_eq!(sp1.timers.queues, ThreadCount::Fixed(1));
        assert_eq!(
            sp1.net20,
            Some(Net20Config {
                creation_delay: SimDuration::from_ms(500),
                creation_delay_growth: 1.1,
                sp1_start_delay_bug: true
            })
        );
        let rtm = builtin("net20");
        assert!(rtm.aliases.is_empty());
        assert_eq!(rtm.threads.max, ThreadCount::PerCore(25));
        assert!(!rtm.net20.as_ref().unwrap().sp1_start_delay_bug);
        let as_sp1 = PolicyConfig {
            name: sp1.name.clone(),
            aliases: sp1.aliases.clone(),
            description: sp1.description.clone(),
            threads: sp1.threads.clone(),
            net20: sp1.net20.clone(),
            ..rtm
        };
        assert_eq!(as_sp1, sp1);
    }

    #[test]
    fn dedicated_builtin_has_its_constants() {
        let p = builtin("new-thread");
        assert_eq!(p.name, "dedicated-threads");
        assert_eq!(p.aliases, ["dedicated", "new-thread"]);
        assert_eq!(p.model, ModelKind::Dedicated);
        assert_eq!(p.threads.min, ThreadCount::Fixed(1));
        assert_eq!(
            p.threads.start_latency,
            Spread::fixed(SimDuration::from_ms(4))
        );
        assert_eq!(p.threads.idle_timeout, SimDuration::ZERO);
        assert!(!p.hill_climbing.enabled);
        assert_eq!(p.gate, builtin("net-classic").gate);
        assert_eq!(p.timers.dispatch, TimerDispatch::GlobalPerCallback);
    }

    #[test]
    fn throttled_builtins_are_their_base_with_a_throttle() {
        let throttle = Some(ThrottleConfig {
            kind: ThrottleKind::ConcurrentExclusive,
            limit: ThreadCount::PerCore(2),
        });
        for (name, alias, base) in [
            ("net-classic-throttled", "net5-throttled", "net-classic"),
            ("net6-throttled", "net6-throttled", "net6"),
        ] {
            let p = builtin(alias);
            assert_eq!(p.name, name);
            assert_eq!(p.throttle, throttle);
            let base = builtin(base);
            assert_eq!(
                PolicyConfig {
                    name: base.name.clone(),
                    aliases: base.aliases.clone(),
                    description: base.description.clone(),
                    throttle: None,
                    ..p
                },
                base
            );
        }
        assert_eq!(builtin("net5-throttled").aliases, ["net5-throttled"]);
    }
}
