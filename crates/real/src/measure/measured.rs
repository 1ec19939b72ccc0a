//! The measured-trace text format (`docs/measure-plan.md`): what the CLR
//! harness writes, what fixtures keep, read into the simulator's [`Trace`].
//!
//! A native run is written in the same format ([`write()`]), so every fixture
//! and every measured run goes through one parser.

use std::collections::HashMap;
use std::fmt::Write as _;

use crate::account::{Account, RunClock};
use crate::time::SimTime;
use crate::trace::{CountSample, ItemRecord, ProbeRecord, ThreadReason, ThreadRecord, Trace};

/// A measured run: the trace and what the runtime said about itself.
#[derive(Clone, Debug, PartialEq)]
pub struct Measured {
    pub trace: Trace,
    /// `runtime` line: the runtime's own description of its version.
    pub runtime_version: String,
    /// `Environment.ProcessorCount` as the runtime saw it.
    pub processors: u32,
    /// Where thread counts came from (`pool-counter`, `os-tasks`, `native`).
    pub threads_source: String,
    /// Header comment lines (`# key: value`) kept from the file.
    pub header: Vec<String>,
    /// False when the run was cut short (no `end` line).
    pub complete: bool,
    /// Where t0 lies on the runtime's event clock (`clock` record; .NET
    /// harness runs from this version on).
    pub clock: Option<RunClock>,
    /// The runtime's own account of its goal changes, from the EventPipe
    /// trace of the run (.NET 8 runs), on the run's time axis.
    pub account: Option<Account>,
    /// That trace's bytes (`.nettrace`), kept to save beside the recording.
    pub events_file: Option<Vec<u8>>,
    /// `ThreadPool.CompletedWorkItemCount` at each of `trace.counts`' samples,
    /// where the runtime has it (.NET Core 3.0+): every work item the pool
    /// completed, the runtime's own (timer callbacks, tiered compilation's
    /// background work) among them. Empty where not recorded.
    pub completed: Vec<u64>,
}

impl Measured {
    /// Whether the run had .NET's tiered compilation on, from its
    /// `# settings:` header (`System.Runtime.TieredCompilation=false`);
    /// `None` when the header does not say (Mono, the native pool, an
    /// old recording).
    pub fn tiered_compilation(&self) -> Option<bool> {
        self.header.iter().find_map(|h| {
            let settings = h.strip_prefix("settings:")?;
            settings.split_whitespace().find_map(|kv| {
                match kv.trim_end_matches(',').split_once('=')? {
                    ("System.Runtime.TieredCompilation", v) => v.parse().ok(),
                    _ => None,
                }
            })
        })
    }
}

/// A line the parser could not read.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("measured trace line {line}: {message}")]
pub struct ParseError {
    pub line: usize,
    pub message: String,
}

fn us_time(v: u64) -> SimTime {
    SimTime(v.saturating_mul(1000))
}

/// Reads a measured trace. `groups` names the scenario's groups (their count
/// bounds the `group` field); `scenario`, `policy`, `seed`, `cores` fill the
/// trace's identity.
pub fn parse(
    text: &str,
    groups: &[String],
    scenario: &str,
    policy: &str,
    seed: u64,
    cores: u32,
) -> Result<Measured, ParseError> {
    let mut runtime_version = String::new();
    let mut processors = 0;
    let mut threads_source = String::new();
    let mut header = Vec::new();
    let mut raw_items: Vec<(u32, u64, u64, u64, u64, u64)> = Vec::new();
    let mut probes = Vec::new();
    let mut samples: Vec<(u64, u32, Option<u64>)> = Vec::new();
    let mut end = None;
    let mut clock = None;
    let mut seen_magic = false;
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        let err = |message: String| ParseError { line: n, message };
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        if let Some(c) = line.strip_prefix('#') {
            header.push(c.trim().to_string());
            continue;
        }
        let (key, rest) = line.split_once(' ').unwrap_or((line, ""));
        let nums = || -> Result<Vec<u64>, ParseError> {
            rest.split_whitespace()
                .map(|t| {
                    t.parse::<u64>()
                        .map_err(|_| err(format!("`{t}` is not a whole number")))
                })
                .collect()
        };
        if !seen_magic {
            if line != "poolsim-measured 1" {
                return Err(err(format!(
                    "expected `poolsim-measured 1` first, found `{line}`"
                )));
            }
            seen_magic = true;
            continue;
        }
        match key {
            "runtime" => runtime_version = rest.trim().to_string(),
            "processors" => {
                processors = rest
                    .trim()
                    .parse()
                    .map_err(|_| err(format!("bad processor count `{rest}`")))?
            }
            "threads_source" => threads_source = rest.trim().to_string(),
            "calibration_iterations_per_ms" => {}
            "clock" => {
                let v: Vec<i64> = rest
                    .split_whitespace()
                    .map(|t| {
                        t.parse::<i64>()
                            .map_err(|_| err(format!("`{t}` is not a whole number")))
                    })
                    .collect::<Result<_, _>>()?;
                match v[..] {
                    [t0_ticks, frequency] if frequency > 0 => {
                        clock = Some(RunClock {
                            t0_ticks,
                            frequency,
                        })
                    }
                    _ => {
                        return Err(err(
                            "a clock has t0 in ticks and a positive tick frequency".into()
                        ));
                    }
                }
            }
            "item" => {
                let v = nums()?;
                if v.len() != 6 {
                    return Err(err(format!("an item has 6 fields, found {}", v.len())));
                }
                if v[0] as usize >= groups.len() {
                    return Err(err(format!(
                        "group {} but the scenario has {}",
                        v[0],
                        groups.len()
                    )));
                }
                if v[4] < v[3] || v[5] < v[4] {
                    return Err(err("times must be queued <= started <= finished".into()));
                }
                raw_items.push((v[0] as u32, v[1], v[2], v[3], v[4], v[5]));
            }
            "probe" => {
                let v = nums()?;
                if v.len() != 2 {
                    return Err(err(format!("a probe has 2 fields, found {}", v.len())));
                }
                probes.push(ProbeRecord {
                    queued: us_time(v[0]),
                    started: us_time(v[1].max(v[0])),
                });
            }
            // `threads T N [C]`: time, thread count and, where the runtime has
            // it, `ThreadPool.CompletedWorkItemCount` (`Measured::completed`).
            "threads" => {
                let v = nums()?;
                if v.len() < 2 {
                    return Err(err("a sample has a time and a count".into()));
                }
                samples.push((v[0], v[1] as u32, v.get(2).copied()));
            }
            "end" => {
                let v = nums()?;
                end = v.first().copied();
            }
            other => return Err(err(format!("unknown record `{other}`"))),
        }
    }
    if !seen_magic {
        return Err(ParseError {
            line: 1,
            message: "empty measured trace".into(),
        });
    }
    // Item ids in submission order: by queue time, then group, then index.
    raw_items.sort_by_key(|&(g, idx, _, q, _, _)| (q, g, idx));
    let mut thread_ids: HashMap<u64, u32> = HashMap::new();
    let mut threads: Vec<ThreadRecord> = Vec::new();
    let mut items = Vec::with_capacity(raw_items.len());
    // Threads in order of their first start.
    let mut by_start: Vec<(u64, u64)> = raw_items.iter().map(|r| (r.4, r.2)).collect();
    by_start.sort();
    for (started, os) in by_start {
        thread_ids.entry(os).or_insert_with(|| {
            let id = threads.len() as u32;
            threads.push(ThreadRecord {
                thread: id,
                created: us_time(started),
                reason: ThreadReason::Observed,
                exited: None,
            });
            id
        });
    }
    for (id, &(g, _idx, os, q, s, f)) in raw_items.iter().enumerate() {
        items.push(ItemRecord {
            item: id as u32,
            group: g,
            thread: thread_ids[&os],
            queued: us_time(q),
            started: us_time(s),
            finished: us_time(f),
        });
    }
    samples.sort();
    // Kept only when every sample has it (the harness writes all or none).
    let completed: Vec<u64> = samples.iter().map_while(|s| s.2).collect();
    let completed = if completed.len() == samples.len() {
        completed
    } else {
        Vec::new()
    };
    let counts = samples
        .iter()
        .map(|&(t, c, _)| CountSample {
            at: us_time(t),
            threads: c,
            goal: None,
        })
        .collect();
    let last_finish = items
        .iter()
        .map(|i| i.finished)
        .max()
        .unwrap_or(SimTime::ZERO);
    Ok(Measured {
        trace: Trace {
            scenario: scenario.to_string(),
            policy: policy.to_string(),
            seed,
            cores,
            groups: groups.to_vec(),
            call_groups: Vec::new(),
            items,
            threads,
            probes,
            counts,
            cpu_busy_ns: None,
            end: end.map(us_time).unwrap_or(last_finish).max(last_finish),
        },
        runtime_version,
        processors,
        threads_source,
        header,
        complete: end.is_some(),
        clock,
        account: None,
        events_file: None,
        completed,
    })
}

fn to_us(t: SimTime) -> u64 {
    (t.0 + 500) / 1000
}

/// Writes `m` in the measured-trace format (header comments first).
pub fn write(m: &Measured) -> String {
    let mut out = String::new();
    for h in &m.header {
        let _ = writeln!(out, "# {h}");
    }
    let _ = writeln!(out, "poolsim-measured 1");
    let _ = writeln!(out, "runtime {}", m.runtime_version);
    let _ = writeln!(out, "processors {}", m.processors);
    let _ = writeln!(out, "threads_source {}", m.threads_source);
    if let Some(c) = m.clock {
        let _ = writeln!(out, "clock {} {}", c.t0_ticks, c.frequency);
    }
    let t = &m.trace;
    let mut index_in_group = vec![0u64; t.groups.len()];
    for item in &t.items {
        let idx = index_in_group[item.group as usize];
        index_in_group[item.group as usize] += 1;
        let _ = writeln!(
            out,
            "item {} {idx} {} {} {} {}",
            item.group,
            item.thread,
            to_us(item.queued),
            to_us(item.started),
            to_us(item.finished)
        );
    }
    for p in &t.probes {
        let _ = writeln!(out, "probe {} {}", to_us(p.queued), to_us(p.started));
    }
    for (k, c) in t.counts.iter().enumerate() {
        let _ = write!(out, "threads {} {}", to_us(c.at), c.threads);
        if let Some(done) = m.completed.get(k) {
            let _ = write!(out, " {done}");
        }
        out.push('\n');
    }
    if m.complete {
        let _ = writeln!(out, "end {}", to_us(t.end));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "# machine: test\npoolsim-measured 1\nruntime Mono 6.8\nprocessors 2\n\
        threads_source os-tasks\ncalibration_iterations_per_ms 1000\n\
        item 0 1 9 0 500 2500\nitem 0 0 7 0 10 2010\nprobe 100 150\n\
        threads 0 0\nthreads 10000 1\nthreads 20000 2\nend 2600\n";

    #[test]
    fn parses_items_threads_and_probes_in_submission_order() {
        let m = parse(TEXT, &["g".into()], "s", "mono", 1, 2).unwrap();
        assert!(m.complete);
        assert_eq!(m.runtime_version, "Mono 6.8");
        assert_eq!(m.header, vec!["machine: test"]);
        let t = &m.trace;
        assert_eq!(t.items.len(), 2);
        // Same queue time: index 0 first.
        assert_eq!(t.items[0].started, SimTime(10_000));
        assert_eq!(t.items[1].started, SimTime(500_000));
        // Thread 7 started first: id 0.
        assert_eq!(t.items[0].thread, 0);
        assert_eq!(t.items[1].thread, 1);
        assert_eq!(t.threads.len(), 2);
        assert_eq!(t.counts.len(), 3);
        assert_eq!(t.probes[0].started, SimTime(150_000));
        assert_eq!(t.end, SimTime(2_600_000));
    }

    #[test]
    fn round_trips_through_write() {
        let m = parse(TEXT, &["g".into()], "s", "mono", 1, 2).unwrap();
        let again = parse(&write(&m), &["g".into()], "s", "mono", 1, 2).unwrap();
        assert_eq!(again.trace, m.trace);
        assert_eq!(again.header, m.header);
    }

    #[test]
    fn completed_work_item_counts_ride_on_the_thread_samples_and_round_trip() {
        let text = TEXT.replace(
            "threads 0 0\nthreads 10000 1\nthreads 20000 2\n",
            "threads 10000 1 7\nthreads 0 0 0\nthreads 20000 2 9\n",
        );
        let m = parse(&text, &["g".into()], "s", "coreclr3", 1, 2).unwrap();
        // In time order, with their samples.
        assert_eq!(m.completed, vec![0, 7, 9]);
        assert_eq!(m.trace.counts[1].threads, 1);
        let written = write(&m);
        assert!(written.contains("threads 10000 1 7\n"), "{written}");
        let again = parse(&written, &["g".into()], "s", "coreclr3", 1, 2).unwrap();
        assert_eq!(again.completed, m.completed);
        // Without the field (Mono, older recordings): none kept, none written.
        let plain = parse(TEXT, &["g".into()], "s", "mono", 1, 2).unwrap();
        assert!(plain.completed.is_empty());
        assert!(write(&plain).contains("threads 10000 1\n"));
    }

    #[test]
    fn the_clock_record_round_trips_and_is_checked() {
        let text = TEXT.replace(
            "calibration_iterations_per_ms 1000\n",
            "calibration_iterations_per_ms 1000\nclock 81234567890123 1000000000\n",
        );
        let m = parse(&text, &["g".into()], "s", "net8", 1, 2).unwrap();
        let clock = Some(RunClock {
            t0_ticks: 81_234_567_890_123,
            frequency: 1_000_000_000,
        });
        assert_eq!(m.clock, clock);
        let again = parse(&write(&m), &["g".into()], "s", "net8", 1, 2).unwrap();
        assert_eq!(again.clock, clock);
        assert_eq!(
            parse(TEXT, &["g".into()], "s", "mono", 1, 2).unwrap().clock,
            None
        );
        for bad in ["clock 5", "clock 5 0", "clock x 1000"] {
            let text = TEXT.replace("end 2600", bad);
            let e = parse(&text, &["g".into()], "s", "net8", 1, 2).unwrap_err();
            assert!(
                e.message.contains("clock") || e.message.contains("whole number"),
                "{e}"
            );
        }
    }

    #[test]
    fn bad_lines_are_reported_with_their_number() {
        let e = parse(
            "poolsim-measured 1\nitem 0 0 1 5 4 6\n",
            &["g".into()],
            "s",
            "p",
            1,
            2,
        )
        .unwrap_err();
        assert_eq!(e.line, 2);
        let e = parse(
            "poolsim-measured 1\nitem 3 0 1 1 2 3\n",
            &["g".into()],
            "s",
            "p",
            1,
            2,
        )
        .unwrap_err();
        assert!(e.message.contains("group 3"), "{e}");
        let e = parse("hello\n", &["g".into()], "s", "p", 1, 2).unwrap_err();
        assert!(e.message.contains("poolsim-measured"), "{e}");
    }
}
