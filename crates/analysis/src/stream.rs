//! A run's items, streamed: what `poolsim run` needs of millions of items
//! without keeping them.
//!
//! With a sink whose [`TraceSink::KEEP_ITEMS`] is false the engine keeps
//! only the items alive (a window from the oldest unfinished one) and hands
//! each item's record out once it and every item before it ended, in
//! submission order. [`RunStream`] is such a sink: it folds each record into
//! the summary ([`SummaryBuilder`]), the starvation verdict's count of items
//! running at each injection ([`RunningAtInjections`]), the first items of
//! the per-item table, the per-item CSV, written as the run goes, and (if
//! asked) the `dotnet-counters` samples; every event goes on to an inner
//! sink. Memory is then the threads, the
//! queue and the items in flight, whatever the number of items, and every
//! figure is the one [`crate::metrics::summarize`] gives from a whole trace.
//!
//! ```
//! use poolsim_analysis::engine::{simulate, SimOptions};
//! use poolsim_analysis::policy_file::resolve_policy;
//! use poolsim_analysis::scenario::load::parse_scenario;
//! use poolsim_analysis::stream::RunStream;
//! use poolsim_analysis::trace::NullSink;
//!
//! let scenario = parse_scenario(
//!     "name = \"burst\"\n[machine]\ncores = 2\n[pool]\npolicy = \"net-classic\"\n\
//!      [[group]]\nname = \"w\"\ncount = 1000\narrival = { every_ms = 1 }\n\
//!      body = [ { cpu_ms = 3 } ]\n",
//!     "burst.toml",
//! ).unwrap();
//! let policy = resolve_policy("net-classic").unwrap();
//! let mut csv = Vec::new();
//! let mut stream = RunStream::new(NullSink, 10, Some(&mut csv), vec!["w".into()]).unwrap();
//! let run = simulate(&scenario, &policy, &mut stream, &SimOptions::default());
//! assert!(run.trace.items.is_empty()); // not kept...
//! let streamed = stream.finish(&run.trace);
//! assert_eq!(streamed.summary.items, 1000); // ...yet every one counted
//! assert_eq!(streamed.first.len(), 10);
//! assert!(streamed.csv.is_ok());
//! assert_eq!(String::from_utf8(csv).unwrap().lines().count(), 1 + 1000);
//! ```

use std::io::Write;

use anyhow::Result;

use crate::counters::{CountersBuilder, Sample};
use crate::metrics::{Summary, SummaryBuilder};
use crate::output::ItemsCsv;
use crate::time::SimTime;
use crate::trace::{ItemRecord, Trace, TraceEvent, TraceSink};
use crate::verdict::RunningAtInjections;

/// A sink that streams a run's items (see the module head) and passes every
/// other event to `events`.
pub struct RunStream<E: TraceSink, W: Write> {
    pub events: E,
    summary: SummaryBuilder,
    running: RunningAtInjections,
    first: Vec<ItemRecord>,
    keep_first: usize,
    csv: Option<ItemsCsv<W>>,
    error: Option<anyhow::Error>,
    counters: Option<CountersBuilder>,
}

impl<E: TraceSink, W: Write> RunStream<E, W> {
    /// `group_names`: the scenario's groups, in order; `keep_first`: how
    /// many of the first items to keep for a table; `csv`: where to write
    /// the per-item CSV as the items go (its header is written now).
    pub fn new(
        events: E,
        keep_first: usize,
        csv: Option<W>,
        group_names: Vec<String>,
    ) -> Result<Self> {
        Ok(RunStream {
            events,
            summary: SummaryBuilder::default(),
            running: RunningAtInjections::new(group_names.len()),
            first: Vec::new(),
            keep_first,
            csv: csv.map(|w| ItemsCsv::new(w, group_names)).transpose()?,
            error: None,
            counters: None,
        })
    }

    /// Leaves the items of `call_groups` out of the latency, as
    /// [`summarize`](crate::metrics::summarize) does
    /// ([`SummaryBuilder::leaving_out_calls`]).
    pub fn with_call_groups(mut self, call_groups: &[u32]) -> Self {
        self.summary = std::mem::take(&mut self.summary).leaving_out_calls(call_groups);
        self
    }

    /// Also makes the `dotnet-counters` samples ([`crate::counters`]) of a
    /// machine of `cores` cores.
    pub fn with_counters(mut self, cores: u32) -> Self {
        self.counters = Some(CountersBuilder::new(cores));
        self
    }

    /// Ends the stream once the run is over: the summary, with what the
    /// items do not say read from the run's `trace`.
    pub fn finish(mut self, trace: &Trace) -> Streamed<E> {
        let csv = match (self.error.take(), self.csv.take()) {
            (Some(e), _) => Err(e),
            (None, Some(csv)) => csv.finish(),
            (None, None) => Ok(()),
        };
        Streamed {
            counters: self.counters.map(|c| c.finish(trace)),
            summary: self.summary.finish(trace),
            running: self.running,
            first: self.first,
            events: self.events,
            csv,
        }
    }
}

/// What a [`RunStream`] gathered.
pub struct Streamed<E> {
    pub summary: Summary,
    /// The items running at each starvation injection, by group
    /// ([`crate::verdict::starvation_verdict_of`]).
    pub running: RunningAtInjections,
    /// The first items, in submission order.
    pub first: Vec<ItemRecord>,
    /// The inner sink.
    pub events: E,
    /// How writing the CSV went (its first error).
    pub csv: Result<()>,
    /// The counters' samples, if asked for.
    pub counters: Option<Vec<Sample>>,
}

impl<E: TraceSink, W: Write> TraceSink for RunStream<E, W> {
    const KEEP_ITEMS: bool = false;

    fn record(&mut self, at: SimTime, event: TraceEvent) {
        if let TraceEvent::ThreadCreated { reason, .. } = event
            && crate::verdict::is_injection(reason)
        {
            self.running.injection(at);
        }
        if let Some(c) = &mut self.counters {
            c.event(at, &event);
        }
        self.events.record(at, event);
    }

    fn item(&mut self, record: &ItemRecord) {
        self.summary.add(record);
        self.running.add(record);
        if let Some(c) = &mut self.counters {
            c.item(record);
        }
        if self.first.len() < self.keep_first {
            self.first.push(record.clone());
        }
        if self.error.is_none()
            && let Some(csv) = &mut self.csv
            && let Err(e) = csv.row(record)
        {
            self.error = Some(e);
        }
    }
}
