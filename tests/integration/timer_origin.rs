//! A program's periodic timer (`from = "timer"`): each firing's callback
//! runs as pool work and queues `per_tick` items; a starved pool runs the
//! callbacks late, and the timer keeps its schedule (the old due time plus
//! the period) unless a callback is a whole period late (.NET's
//! `TimerQueue.FireNextTimers`; `pool::state` timers). The shape of
//! `examples/apps/ticker.cs`.

use poolsim::engine::{self, SimOptions};
use poolsim::policy_file::resolve_policy;
use poolsim::scenario::load::parse_scenario;
use poolsim::trace::NullSink;

/// The ticker's shape: 8 firings every 500 ms, 6 × `Thread.Sleep(800)`
/// each, on 2 cores with `min_threads`. Returns each item's queued time
/// (ms), in submission order, and the makespan (ms).
fn ticker(policy: &str, min_threads: u32, seed: u64) -> (Vec<f64>, f64) {
    let text = format!(
        "name = \"ticker\"\nseed = {seed}\n[machine]\ncores = 2\n[pool]\npolicy = \"{policy}\"\n\
         min_threads = {min_threads}\n[[group]]\nname = \"ticks\"\ncount = 48\n\
         submit = \"queue-user-work-item\"\nfrom = \"timer\"\nper_tick = 6\n\
         arrival = {{ every_ms = 500 }}\nbody = [ {{ sleep_ms = 800 }} ]\n"
    );
    let s = parse_scenario(&text, "ticker.toml").unwrap();
    let p = resolve_policy(policy).unwrap();
    let r = engine::simulate(&s, &p, &mut NullSink, &SimOptions::default());
    assert_eq!(r.trace.items.len(), 48);
    let mut items: Vec<_> = r.trace.items.iter().collect();
    items.sort_by_key(|i| (i.queued, i.item));
    let queued = items.iter().map(|i| i.queued.as_ms_f64()).collect();
    let end = items
        .iter()
        .map(|i| i.finished.as_ms_f64())
        .fold(0.0, f64::max);
    (queued, end)
}

/// The firings' instants: the queued time of each burst's first item.
fn firings(queued: &[f64]) -> Vec<f64> {
    queued.chunks(6).map(|c| c[0]).collect()
}

#[test]
fn on_a_pool_that_keeps_up_each_firing_queues_its_burst_on_time() {
    for policy in ["net8", "coreclr3-linux", "mono", "net-classic"] {
        for seed in 1..=3 {
            let (queued, end) = ticker(policy, 16, seed);
            // The six items of a firing are queued together, by one callback.
            for burst in queued.chunks(6) {
                assert!(burst[5] - burst[0] < 0.5, "{policy}: {burst:?}");
            }
            // The timer fires every 500 ms: each firing within a few ms of
            // its due time (the timer thread's wake-up, the coarse clock,
            // the callback's dispatch).
            for (k, f) in firings(&queued).iter().enumerate() {
                let due = 500.0 * k as f64;
                assert!(
                    (due - 4.5..=due + 15.0).contains(f),
                    "{policy} seed {seed}: firing {k} at {f} ms"
                );
            }
            // The last burst is queued at 3.5 s and sleeps 800 ms.
            assert!((4290.0..=4340.0).contains(&end), "{policy}: {end}");
        }
    }
}

#[test]
fn a_starved_pool_runs_the_callbacks_late_and_the_timer_keeps_its_schedule() {
    let (queued, end) = ticker("net8", 2, 1);
    let f = firings(&queued);
    // The callbacks wait behind the sleeps: some are hundreds of ms late.
    let late: Vec<f64> = f
        .iter()
        .enumerate()
        .map(|(k, t)| t - 500.0 * k as f64)
        .collect();
    assert!(late.iter().any(|&l| l > 200.0), "{late:?}");
    // Never early.
    assert!(late.iter().all(|&l| l > -4.5), "{late:?}");
    // The schedule is kept: a late firing is followed by one less than a
    // period later (the next was due already), as the ticker's recording
    // shows (gaps of 99 and 104 ms behind its 500 ms timer).
    let gaps: Vec<f64> = f.windows(2).map(|w| w[1] - w[0]).collect();
    assert!(gaps.iter().any(|&g| g < 250.0), "{gaps:?}");
    // And the starvation costs the makespan: the items are queued late.
    assert!(end > 5000.0, "{end}");
}

#[test]
fn a_timer_run_is_deterministic() {
    assert_eq!(ticker("net8", 2, 7), ticker("net8", 2, 7));
    assert_eq!(ticker("mono", 2, 7), ticker("mono", 2, 7));
}
