//! Summary metrics of a run, computed from a [`Trace`].
//!
//! The same code serves simulated and measured traces: it reads only the
//! recorded facts (item times, thread records, probes, thread counts).

use std::collections::BTreeMap;

use serde::Serialize;
use statrs::statistics::{Data, OrderStatistics};

use crate::time::{SimDuration, SimTime};
use crate::trace::{ItemRecord, ThreadReason, Trace};

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
    /// Items that started (the start delays are theirs); not in the JSON,
    /// whose fields predate it.
    #[serde(skip)]
    pub started: usize,
    /// From the first submission to the last item's end.
    pub makespan_ms: f64,
    /// Start minus queue time of each item.
    pub start_delay_ms: Percentiles,
    /// Finish minus queue time of each finished item: the latency a caller
    /// of the work item feels.
    pub latency_ms: Percentiles,
    /// Finished items left out of `latency_ms`: a `fan_out` step's calls,
    /// whose callers' latency covers them. Not in the JSON, whose fields
    /// predate it.
    #[serde(skip)]
    pub calls_left_out: usize,
    /// Set when the percentiles above were computed from bucketed values
    /// (a run with more distinct delays than [`Distribution`] keeps
    /// exactly): their relative error bound. Absent when exact.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approximate_percentiles: Option<f64>,
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
    let mut builder = SummaryBuilder::default().leaving_out_calls(&trace.call_groups);
    for item in &trace.items {
        builder.add(item);
    }
    builder.finish(trace)
}

/// A [`Summary`] computed as the items go by, in one pass and without
/// keeping them: what `run` uses on a run whose items are streamed
/// ([`TraceSink::KEEP_ITEMS`](crate::trace::TraceSink::KEEP_ITEMS) false).
/// [`summarize`] is this over a trace's items, so both give the same bytes.
///
/// Feed every item with [`SummaryBuilder::add`] (in submission order, as the
/// engine hands them out; another order gives the same figures, the time
/// starved then computed from the trace's items), then
/// [`SummaryBuilder::finish`] with the trace for the threads, probes and
/// thread counts. The percentiles are exact while each figure has at most
/// [`Distribution::EXACT_DISTINCT`] distinct values, otherwise within
/// [`Distribution::RELATIVE_ERROR`] of the exact value
/// ([`Summary::approximate_percentiles`] says so).
#[derive(Clone, Debug, Default)]
pub struct SummaryBuilder {
    items: usize,
    started: usize,
    finished: usize,
    first_queued: Option<SimTime>,
    last_end: Option<SimTime>,
    start_delay: Distribution,
    latency: Distribution,
    calls_left_out: usize,
    starved: StarvedSpans,
    /// Per group: whether its items are a `fan_out` step's calls, left
    /// out of the latency (their caller's latency covers them).
    calls: Vec<bool>,
}

impl SummaryBuilder {
    /// Leaves the items of `call_groups` (a trace's
    /// [`Trace::call_groups`]) out of the latency: a call's latency is
    /// felt by the item that queued it and waits for it, whose own latency
    /// covers it. The start delays and the time starved keep them: they
    /// waited for the pool all the same.
    pub fn leaving_out_calls(mut self, call_groups: &[u32]) -> Self {
        for &g in call_groups {
            let g = g as usize;
            if self.calls.len() <= g {
                self.calls.resize(g + 1, false);
            }
            self.calls[g] = true;
        }
        self
    }

    /// One item's record.
    pub fn add(&mut self, i: &ItemRecord) {
        self.items += 1;
        self.first_queued = Some(self.first_queued.map_or(i.queued, |q| q.min(i.queued)));
        if i.started != SimTime::MAX {
            self.started += 1;
            self.start_delay.add(ms(i.started) - ms(i.queued));
        }
        if i.finished != SimTime::MAX {
            self.finished += 1;
            self.last_end = Some(self.last_end.map_or(i.finished, |e| e.max(i.finished)));
            if self.calls.get(i.group as usize).copied().unwrap_or(false) {
                self.calls_left_out += 1;
            } else {
                self.latency.add(ms(i.finished) - ms(i.queued));
            }
        }
        self.starved.add(i.queued, i.started);
    }

    /// The summary, with what the items do not say read from `trace` (its
    /// threads, probes, thread counts, CPU use and end).
    pub fn finish(self, trace: &Trace) -> Summary {
        let first_queued = self.first_queued.unwrap_or(SimTime::ZERO);
        let last_end = self.last_end.unwrap_or(first_queued);
        let makespan_ms = ms(last_end) - ms(first_queued);
        let time_starved = match self.starved.measure(trace.end) {
            Some(d) => d,
            None => time_starved(trace),
        };
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
            let capacity =
                (last_end.since(first_queued).as_nanos() as f64) * f64::from(trace.cores);
            (capacity > 0.0).then(|| busy as f64 / capacity)
        });
        let approximate = self.start_delay.is_approximate() || self.latency.is_approximate();
        Summary {
            scenario: trace.scenario.clone(),
            policy: trace.policy.clone(),
            seed: trace.seed,
            cores: trace.cores,
            items: self.items,
            started: self.started,
            finished: self.finished,
            makespan_ms,
            start_delay_ms: self.start_delay.percentiles(),
            latency_ms: self.latency.percentiles(),
            calls_left_out: self.calls_left_out,
            approximate_percentiles: approximate.then_some(Distribution::RELATIVE_ERROR),
            threads_peak,
            // The program's main thread is not created by the pool.
            threads_created: trace
                .threads
                .iter()
                .filter(|t| t.reason != ThreadReason::Main)
                .count(),
            threads_created_by_reason: by_reason,
            time_starved_ms: time_starved.as_ms_f64(),
            probes: latencies.len(),
            probe_latency_ms_max: latencies.iter().cloned().reduce(f64::max),
            probe_latency_ms_first: latencies.first().copied(),
            cpu_utilization,
        }
    }
}

/// The values of one figure over a run's items (start delays, latencies),
/// kept as counts per distinct value: exact, in memory by the number of
/// distinct values, not of items. Past [`Distribution::EXACT_DISTINCT`]
/// distinct values the counts go to buckets a 2^-10 wide in relative
/// terms (the low bits of each value's mantissa dropped; a bucket stands
/// for its midpoint), so memory stays bounded by the range of the values;
/// the mean and the maximum stay exact. The percentiles are R's type 8, as
/// `statrs`' `Data::percentile` computes them, so [`Percentiles::of`] and
/// this agree to the bit while exact.
#[derive(Clone, Debug, Default)]
pub struct Distribution {
    /// Count per value (per bucket once coarse), keyed by the value's bits
    /// in an order-preserving form.
    counts: BTreeMap<u64, u64>,
    n: u64,
    sum: f64,
    max: Option<f64>,
    min: Option<f64>,
    coarse: bool,
}

/// The mantissa bits a coarse [`Distribution`] drops: 52 − 10.
const DROPPED_BITS: u32 = 42;

impl Distribution {
    /// Distinct values kept exactly (each costs some 40 B).
    pub const EXACT_DISTINCT: usize = 1 << 18;
    /// The relative error of a percentile once values are bucketed: half a
    /// bucket, 2^-11.
    pub const RELATIVE_ERROR: f64 = 1.0 / 2048.0;

    pub fn add(&mut self, v: f64) {
        self.n += 1;
        self.sum += v;
        self.max = Some(self.max.map_or(v, |m| m.max(v)));
        self.min = Some(self.min.map_or(v, |m| m.min(v)));
        *self.counts.entry(self.key(v)).or_insert(0) += 1;
        if !self.coarse && self.counts.len() > Self::EXACT_DISTINCT {
            self.coarse = true;
            let exact = std::mem::take(&mut self.counts);
            for (k, c) in exact {
                *self.counts.entry(self.key(value_of(k))).or_insert(0) += c;
            }
        }
    }

    /// Whether the percentiles are bucketed (see [`Distribution::RELATIVE_ERROR`]).
    pub fn is_approximate(&self) -> bool {
        self.coarse
    }

    fn key(&self, v: f64) -> u64 {
        let bits = v.to_bits();
        // Zero and subnormals stay exact; a bucket keeps its low bits at
        // the midpoint.
        let bits = if self.coarse && (bits >> 52) & 0x7ff != 0 {
            (bits & !((1u64 << DROPPED_BITS) - 1)) | (1u64 << (DROPPED_BITS - 1))
        } else {
            bits
        };
        if bits >> 63 == 1 {
            !bits
        } else {
            bits | (1 << 63)
        }
    }

    /// The `k`-th smallest value (from 0).
    fn order_statistic(&self, k: u64) -> f64 {
        let mut seen = 0;
        for (&key, &c) in &self.counts {
            seen += c;
            if k < seen {
                return value_of(key);
            }
        }
        self.max.unwrap_or(0.0)
    }

    /// The `tau` quantile, R type 8 (`statrs`' `quantile`).
    pub fn quantile(&self, tau: f64) -> f64 {
        let n = self.n;
        let h = (n as f64 + 1.0 / 3.0) * tau + 1.0 / 3.0;
        let hf = h as i64;
        if hf <= 0 || tau == 0.0 {
            return self.min.unwrap_or(0.0);
        }
        if hf >= n as i64 {
            return self.max.unwrap_or(0.0);
        }
        let a = self.order_statistic(hf as u64 - 1);
        let b = self.order_statistic(hf as u64);
        a + (h - hf as f64) * (b - a)
    }

    /// p50, p95, p99, max and mean (all zero without values).
    pub fn percentiles(&self) -> Percentiles {
        if self.n == 0 {
            return Percentiles::of(Vec::new());
        }
        Percentiles {
            p50: self.quantile(0.5),
            p95: self.quantile(0.95),
            p99: self.quantile(0.99),
            max: self.max.unwrap_or(0.0),
            mean: self.sum / self.n as f64,
        }
    }
}

/// The value of a [`Distribution`] key.
fn value_of(key: u64) -> f64 {
    f64::from_bits(if key >> 63 == 1 {
        key & !(1 << 63)
    } else {
        !key
    })
}

/// The union of the items' `[queued, started)` spans, measured as they go
/// by in submission order (queue times never decrease then); an unstarted
/// item's span runs to the end of the run, known only at the end.
#[derive(Clone, Debug, Default)]
struct StarvedSpans {
    total: u64,
    /// The span being merged; its end is `SimTime::MAX` for an open one.
    current: Option<(SimTime, SimTime)>,
    last_queued: SimTime,
    out_of_order: bool,
}

impl StarvedSpans {
    fn add(&mut self, queued: SimTime, started: SimTime) {
        if queued < self.last_queued {
            self.out_of_order = true;
        }
        self.last_queued = queued;
        if started != SimTime::MAX && started <= queued {
            return;
        }
        match &mut self.current {
            Some((_, end)) if queued <= *end => *end = (*end).max(started),
            _ => {
                if let Some((s, e)) = self.current {
                    self.total += e.since(s).as_nanos();
                }
                self.current = Some((queued, started));
            }
        }
    }

    /// The measure, given the run's end; `None` if the items came out of
    /// submission order.
    fn measure(&self, end: SimTime) -> Option<SimDuration> {
        if self.out_of_order {
            return None;
        }
        let last = match self.current {
            Some((s, e)) if e == SimTime::MAX => end.max(s).since(s).as_nanos(),
            Some((s, e)) => e.since(s).as_nanos(),
            None => 0,
        };
        Some(SimDuration(self.total + last))
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

/// A run's worker-thread count over time, in ms from its first
/// submission: a step function (what `validate` compares curve with
/// curve).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ThreadCurve(Vec<(f64, u32)>);

impl ThreadCurve {
    /// The count changes of `t`, from its first submission.
    pub fn of(t: &Trace) -> Self {
        let origin = first_queued(t).as_ms_f64();
        ThreadCurve(
            t.counts
                .iter()
                .map(|c| (c.at.as_ms_f64() - origin, c.threads))
                .collect(),
        )
    }

    /// From (ms, threads) changes in time order.
    pub fn from_changes(changes: Vec<(f64, u32)>) -> Self {
        ThreadCurve(changes)
    }

    /// The count at `at_ms` (0 before the first change).
    pub fn at(&self, at_ms: f64) -> u32 {
        match self.0.partition_point(|&(t, _)| t <= at_ms) {
            0 => 0,
            k => self.0[k - 1].1,
        }
    }

    /// The mean |self − other| over `points` instants spread evenly over
    /// `[0, span_ms]`, threads.
    pub fn distance(&self, other: &ThreadCurve, span_ms: f64, points: usize) -> f64 {
        let points = points.max(1);
        (0..points)
            .map(|k| {
                let at = span_ms * (k as f64 + 0.5) / points as f64;
                (f64::from(self.at(at)) - f64::from(other.at(at))).abs()
            })
            .sum::<f64>()
            / points as f64
    }
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

    /// Items queued and started at known times, the run ending at 100 ns:
    /// their starved spans are [0, 20) ∪ [30, 40) ∪ [90, 100), 40 ns.
    fn starved_trace() -> Trace {
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
        trace
    }

    #[test]
    fn time_starved_is_the_same_for_items_in_or_out_of_submission_order() {
        let mut trace = starved_trace();
        assert_eq!(time_starved(&trace), SimDuration(40));
        trace.items.reverse();
        assert_eq!(time_starved(&trace), SimDuration(40));
    }

    /// Values with many repeats and a long tail, from a seeded stream.
    fn values(seed: u64, n: usize, distinct: u64) -> Vec<f64> {
        use rand::{RngExt, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        (0..n)
            .map(|_| {
                let k = rng.random_range(0..distinct);
                // ms differences of ns times, as the summary makes them.
                (k * k * 1_337) as f64 / 1e6 - (k as f64 / 1e6)
            })
            .collect()
    }

    #[test]
    fn a_distribution_gives_statrs_percentiles_to_the_bit() {
        for (seed, n, distinct) in [
            (1, 1, 5),
            (2, 2, 5),
            (3, 17, 3),
            (4, 1000, 50),
            (5, 5000, 4000),
        ] {
            let v = values(seed, n, distinct);
            let mut d = Distribution::default();
            for &x in &v {
                d.add(x);
            }
            assert!(!d.is_approximate());
            assert_eq!(d.percentiles(), Percentiles::of(v), "seed {seed}");
        }
        assert_eq!(
            Distribution::default().percentiles(),
            Percentiles::of(vec![])
        );
    }

    #[test]
    fn past_its_exact_limit_a_distribution_stays_within_its_error_bound() {
        let n = Distribution::EXACT_DISTINCT * 2;
        let v = values(9, n, u64::MAX >> 40);
        let mut d = Distribution::default();
        for &x in &v {
            d.add(x);
        }
        assert!(d.is_approximate());
        // Buckets, not values: far fewer keys than values.
        assert!(
            d.counts.len() < Distribution::EXACT_DISTINCT,
            "{}",
            d.counts.len()
        );
        let exact = Percentiles::of(v);
        let got = d.percentiles();
        assert_eq!((got.max, got.mean), (exact.max, exact.mean));
        for (a, b) in [
            (got.p50, exact.p50),
            (got.p95, exact.p95),
            (got.p99, exact.p99),
        ] {
            assert!(
                (a - b).abs() <= Distribution::RELATIVE_ERROR * b.abs(),
                "{a} vs {b}"
            );
            assert_ne!(a, b, "bucketed values should not all land on the exact one");
        }
    }

    #[test]
    fn the_online_time_starved_is_the_batch_one() {
        let trace = starved_trace();
        let mut spans = StarvedSpans::default();
        for i in &trace.items {
            spans.add(i.queued, i.started);
        }
        assert_eq!(spans.measure(trace.end), Some(time_starved(&trace)));
        assert_eq!(spans.measure(trace.end), Some(SimDuration(40)));
        // Out of order: no online answer (the summary then asks the trace).
        spans.add(SimTime(1), SimTime(2));
        assert_eq!(spans.measure(trace.end), None);
    }
}
