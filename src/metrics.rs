//! Summary metrics of a run, computed from a [`Trace`].
//!
//! The same code serves simulated and measured traces: it reads only the
//! recorded facts (item times, thread records, probes, thread counts).

use std::collections::BTreeMap;

use serde::Serialize;
use statrs::statistics::{Data, OrderStatistics};

use crate::time::{SimDuration, SimTime};
use crate::trace::{ThreadReason, Trace};

/// Percentiles of a set of durations, in milliseconds.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Percentiles {
    pub p50: f64,
    pub p95: f64,
    pub p99: f64,
    pub max: f64,
    pub mean: f64,
}

impl Percentiles {
    /// Percentiles of `values` (empty ⇒ all zero).
    pub fn of(values: Vec<f64>) -> Percentiles {
        if values.is_empty() {
            return Percentiles {
                p50: 0.0,
                p95: 0.0,
                p99: 0.0,
                max: 0.0,
                mean: 0.0,
            };
        }
        let mean = values.iter().sum::<f64>() / values.len() as f64;
        let max = values.iter().cloned().fold(f64::MIN, f64::max);
        let mut data = Data::new(values);
        Percentiles {
            p50: data.percentile(50),
            p95: data.percentile(95),
            p99: data.percentile(99),
            max,
            mean,
        }
    }
}

/// The headline numbers of one run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Summary {
    pub scenario: String,
    pub policy: String,
    pub seed: u64,
    pub cores: u32,
    pub items: usize,
    /// Items that finished.
    pub finished: usize,
    /// From the first submission to the last item's end.
    pub makespan_ms: f64,
    /// Start minus queue time of each item.
    pub start_delay_ms: Percentiles,
    /// Finish minus queue time of each finished item: the latency a caller
    /// of the work item feels.
    pub latency_ms: Percentiles,
    pub threads_peak: u32,
    pub threads_created: usize,
    /// Threads created, by why the pool created them (`demand`,
    /// `starvation`, `hill-climbing`, `cooperative-blocking`, `dedicated`,
    /// `observed`); the main thread is not counted.
    pub threads_created_by_reason: BTreeMap<&'static str, usize>,
    /// Time during which some work item was queued and not yet taken by a
    /// thread (the union of every item's queued-to-started interval; an item
    /// never started counts up to the end of the run), ms.
    pub time_starved_ms: f64,
    pub probes: usize,
    /// The longest probe latency (`None` without probes).
    pub probe_latency_ms_max: Option<f64>,
    /// The first probe's latency.
    pub probe_latency_ms_first: Option<f64>,
    /// Pool CPU use over the makespan, 0–1 (simulated runs).
    pub cpu_utilization: Option<f64>,
}

fn ms(t: SimTime) -> f64 {
    t.as_ms_f64()
}

/// Computes the summary of `trace`.
pub fn summarize(trace: &Trace) -> Summary {
    let first_queued = trace
        .items
        .iter()
        .map(|i| i.queued)
        .min()
        .unwrap_or(SimTime::ZERO);
    // One pass and one vector at a time: at 10 M items each vector of the
    // summary is 80 MB.
    let done = || trace.items.iter().filter(|i| i.finished != SimTime::MAX);
    let finished = done().count();
    let last_end = done().map(|i| i.finished).max().unwrap_or(first_queued);
    let makespan_ms = ms(last_end) - ms(first_queued);
    let start_delay_ms = Percentiles::of(
        trace
            .items
            .iter()
            .filter(|i| i.started != SimTime::MAX)
            .map(|i| ms(i.started) - ms(i.queued))
            .collect(),
    );
    let latency_ms = Percentiles::of(done().map(|i| ms(i.finished) - ms(i.queued)).collect());
    let latencies: Vec<f64> = trace
        .probes
        .iter()
        .filter(|p| p.started != SimTime::MAX)
        .map(|p| ms(p.started) - ms(p.queued))
        .collect();
    let mut by_reason = BTreeMap::new();
    for t in trace
        .threads
        .iter()
        .filter(|t| t.reason != ThreadReason::Main)
    {
        *by_reason.entry(t.reason.name()).or_insert(0) += 1;
    }
    let threads_peak = trace.counts.iter().map(|c| c.threads).max().unwrap_or(0);
    let cpu_utilization = trace.cpu_busy_ns.and_then(|busy| {
        let capacity = (last_end.since(first_queued).as_nanos() as f64) * f64::from(trace.cores);
        (capacity > 0.0).then(|| busy as f64 / capacity)
    });
    Summary {
        scenario: trace.scenario.clone(),
        policy: trace.policy.clone(),
        seed: trace.seed,
        cores: trace.cores,
        items: trace.items.len(),
        finished,
        makespan_ms,
        start_delay_ms,
        latency_ms,
        threads_peak,
        // The program's main thread is not created by the pool.
        threads_created: trace
            .threads
            .iter()
            .filter(|t| t.reason != ThreadReason::Main)
            .count(),
        threads_created_by_reason: by_reason,
        time_starved_ms: time_starved(trace).as_ms_f64(),
        probes: latencies.len(),
        probe_latency_ms_max: latencies.iter().cloned().reduce(f64::max),
        probe_latency_ms_first: latencies.first().copied(),
        cpu_utilization,
    }
}

/// The measure of the union of every item's `[queued, started)` interval
/// (an unstarted item's up to the end of the run): the time during which
/// work waited for a thread.
pub fn time_starved(trace: &Trace) -> SimDuration {
    let spans = trace
        .items
        .iter()
        .map(|i| {
            let until = if i.started == SimTime::MAX {
                trace.end.max(i.queued)
            } else {
                i.started
            };
            (i.queued, until)
        })
        .filter(|(a, b)| b > a);
    // Items in submission order (every simulated run) need no sorted copy.
    if trace.items.is_sorted_by_key(|i| i.queued) {
        union_measure(spans)
    } else {
        let mut spans: Vec<(SimTime, SimTime)> = spans.collect();
        spans.sort_unstable();
        union_measure(spans.into_iter())
    }
}

/// The measure of the union of `spans`, given in order of their starts.
fn union_measure(spans: impl Iterator<Item = (SimTime, SimTime)>) -> SimDuration {
    let mut total = 0u64;
    let mut current: Option<(SimTime, SimTime)> = None;
    for (a, b) in spans {
        match &mut current {
            Some((_, end)) if a <= *end => *end = (*end).max(b),
            _ => {
                if let Some((s, e)) = current {
                    total += e.since(s).as_nanos();
                }
                current = Some((a, b));
            }
        }
    }
    if let Some((s, e)) = current {
        total += e.since(s).as_nanos();
    }
    SimDuration(total)
}

/// The run's first submission (zero for a run with no item).
pub fn first_queued(t: &Trace) -> SimTime {
    t.items
        .iter()
        .map(|i| i.queued)
        .min()
        .unwrap_or(SimTime::ZERO)
}

/// Every finished item's start, in ms from the run's first submission,
/// sorted (what `validate` compares quantile by quantile).
pub fn start_offsets_ms(t: &Trace) -> Vec<f64> {
    let origin = first_queued(t).as_ms_f64();
    let mut v: Vec<f64> = t
        .items
        .iter()
        .filter(|i| i.finished != SimTime::MAX)
        .map(|i| i.started.as_ms_f64() - origin)
        .collect();
    v.sort_by(f64::total_cmp);
    v
}

/// The median of `v` (the mean of the middle two for an even count; 0 for
/// none).
pub fn median(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_of_a_known_set() {
        let p = Percentiles::of((1..=100).map(f64::from).collect());
        assert_eq!(p.max, 100.0);
        assert!((p.p50 - 50.5).abs() < 1.0, "{p:?}");
        assert!((p.p95 - 95.0).abs() < 1.5, "{p:?}");
        assert!((p.mean - 50.5).abs() < 1e-9);
    }

    #[test]
    fn percentiles_of_nothing_are_zero() {
        assert_eq!(Percentiles::of(vec![]).max, 0.0);
    }

    #[test]
    fn time_starved_is_the_same_for_items_in_or_out_of_submission_order() {
        use crate::trace::ItemRecord;
        let item = |item, queued: u64, started: Option<u64>| ItemRecord {
            item,
            group: 0,
            thread: 0,
            queued: SimTime(queued),
            started: started.map_or(SimTime::MAX, SimTime),
            finished: SimTime::MAX,
        };
        let mut trace = crate::pool::state::empty_trace();
        trace.end = SimTime(100);
        trace.items = vec![
            item(0, 0, Some(10)),
            item(1, 5, Some(5)),
            item(2, 5, Some(20)),
            item(3, 30, Some(40)),
            item(4, 35, Some(38)),
            item(5, 90, None),
            item(6, 120, None),
        ];
        // [0, 20) ∪ [30, 40) ∪ [90, 100): 40 ns.
        assert_eq!(time_starved(&trace), SimDuration(40));
        trace.items.reverse();
        assert_eq!(time_starved(&trace), SimDuration(40));
    }
}
