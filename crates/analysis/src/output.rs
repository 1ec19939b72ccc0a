//! Writing output files safely: to a temporary name beside the target, then
//! renamed, so an interrupted or failed run never leaves a partial file; an
//! output path that is one of the run's inputs is refused.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use crate::engine::Outcome;
use crate::metrics::{self, Summary};
use crate::trace::Trace;

/// Refuses `output` if it names the same file as any of `inputs`.
pub fn check_not_input(output: &Path, inputs: &[&Path]) -> Result<()> {
    let out = canonical_or_self(output);
    for input in inputs {
        if canonical_or_self(input) == out {
            bail!(
                "refusing to write {}: it is an input of this run",
                output.display()
            );
        }
    }
    Ok(())
}

fn canonical_or_self(p: &Path) -> PathBuf {
    fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf())
}

/// All the checks on a run's output files before anything runs: each
/// `(flag, path, extension)` that is given must end in its extension (an
/// empty extension is not checked), be none of `inputs`, and name a file
/// no other output names.
pub fn check_outputs(outputs: &[(&str, Option<&Path>, &str)], inputs: &[&Path]) -> Result<()> {
    let given: Vec<(&str, &Path, &str)> = outputs
        .iter()
        .filter_map(|(flag, path, ext)| path.map(|p| (*flag, p, *ext)))
        .collect();
    for (flag, path, ext) in &given {
        if !ext.is_empty() {
            check_extension(flag, path, ext)?;
        }
        check_not_input(path, inputs)?;
    }
    let paths: Vec<Option<PathBuf>> = given
        .iter()
        .map(|(_, p, _)| Some(p.to_path_buf()))
        .collect();
    check_distinct(&paths.iter().collect::<Vec<_>>())
}

/// Refuses an output whose file name does not end in the format's
/// extension (`--png x.jpg`): the flag decides the format, and a mismatch
/// is almost always a mistake.
pub fn check_extension(flag: &str, path: &Path, ext: &str) -> Result<()> {
    let ok = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case(ext));
    if !ok {
        bail!(
            "{flag} writes {}: the file name must end in .{ext}, found {}",
            ext.to_ascii_uppercase(),
            path.display()
        );
    }
    Ok(())
}

/// Refuses two outputs of one run that name the same file.
pub fn check_distinct(outputs: &[&Option<PathBuf>]) -> Result<()> {
    let paths: Vec<PathBuf> = outputs
        .iter()
        .filter_map(|p| p.as_ref())
        .map(|p| canonical_or_self(p))
        .collect();
    for (i, a) in paths.iter().enumerate() {
        if paths[i + 1..].contains(a) {
            bail!(
                "two outputs of this run name the same file: {}",
                a.display()
            );
        }
    }
    Ok(())
}

/// Writes every `(path, bytes)`: all to temporary files first, then renamed
/// into place, so a failure leaves none of them half-written.
pub fn write_all_atomic(files: &[(&PathBuf, Vec<u8>)]) -> Result<()> {
    for (path, _) in files {
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        if !dir.is_dir() {
            bail!(
                "cannot write {}: directory {} does not exist",
                path.display(),
                dir.display()
            );
        }
    }
    for (path, bytes) in files {
        write_atomic(path, bytes)?;
    }
    Ok(())
}

/// The temporary name beside `path` that [`write_atomic`] and [`Staged`]
/// write to before the rename.
fn temporary_for(path: &Path) -> Result<PathBuf> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    if !dir.is_dir() {
        bail!(
            "cannot write {}: directory {} does not exist",
            path.display(),
            dir.display()
        );
    }
    let name = path
        .file_name()
        .with_context(|| format!("cannot write {}: not a file name", path.display()))?;
    Ok(dir.join(format!(
        ".{}.tmp-{}",
        name.to_string_lossy(),
        std::process::id()
    )))
}

/// An output streamed to its temporary file (not held in memory), renamed
/// into place by [`Staged::commit`]; dropped uncommitted, the temporary file
/// is removed. Lets a large output (`--trace` of millions of items) join the
/// other outputs of a run, all written only if all could be made.
#[derive(Debug)]
pub struct Staged {
    tmp: PathBuf,
    path: PathBuf,
    committed: bool,
}

impl Staged {
    /// Streams `write` into the temporary file of `path`.
    pub fn write(path: &Path, write: impl FnOnce(&mut dyn Write) -> Result<()>) -> Result<Staged> {
        let (staged, mut w) = Staged::create(path)?;
        write(&mut w).with_context(|| format!("cannot write {}", staged.tmp.display()))?;
        staged.close(w)
    }

    /// Opens the temporary file of `path` for a caller that writes it bit
    /// by bit (a run streaming its items); [`Staged::close`] ends it.
    pub fn create(path: &Path) -> Result<(Staged, std::io::BufWriter<fs::File>)> {
        let tmp = temporary_for(path)?;
        let staged = Staged {
            tmp,
            path: path.to_path_buf(),
            committed: false,
        };
        let f = fs::File::create(&staged.tmp)
            .with_context(|| format!("cannot create {}", staged.tmp.display()))?;
        Ok((staged, std::io::BufWriter::with_capacity(1 << 16, f)))
    }

    /// Flushes what [`Staged::create`] opened, ready to commit.
    pub fn close(self, w: std::io::BufWriter<fs::File>) -> Result<Staged> {
        let f = w
            .into_inner()
            .map_err(|e| e.into_error())
            .with_context(|| format!("cannot write {}", self.tmp.display()))?;
        f.sync_all().ok();
        Ok(self)
    }

    /// Renames the file into place.
    pub fn commit(mut self) -> Result<()> {
        fs::rename(&self.tmp, &self.path)
            .with_context(|| format!("cannot write {}", self.path.display()))?;
        self.committed = true;
        Ok(())
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        if !self.committed {
            let _ = fs::remove_file(&self.tmp);
        }
    }
}

/// Writes `bytes` to `path` atomically (temporary file + rename).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let tmp = temporary_for(path)?;
    let result = (|| -> Result<()> {
        let mut f =
            fs::File::create(&tmp).with_context(|| format!("cannot create {}", tmp.display()))?;
        f.write_all(bytes)
            .with_context(|| format!("cannot write {}", tmp.display()))?;
        f.sync_all().ok();
        fs::rename(&tmp, path).with_context(|| format!("cannot write {}", path.display()))?;
        Ok(())
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

/// The per-item CSV: `item,group,thread,queued_ns,started_ns,finished_ns`,
/// integer nanoseconds; an item that never started or finished has an empty cell.
pub fn items_csv(trace: &Trace) -> Result<Vec<u8>> {
    let mut bytes = Vec::new();
    write_items_csv(trace, &mut bytes)?;
    Ok(bytes)
}

/// [`items_csv`] streamed to `out`.
pub fn write_items_csv(trace: &Trace, out: &mut dyn Write) -> Result<()> {
    let mut w = ItemsCsv::new(out, trace.groups.clone())?;
    for i in &trace.items {
        w.row(i)?;
    }
    w.finish()
}

/// The per-item CSV of [`items_csv`], written a row at a time: what a run
/// whose items are streamed ([`crate::stream::RunStream`]) writes as the
/// items leave the engine.
pub struct ItemsCsv<W: Write> {
    w: csv::Writer<W>,
    groups: Vec<String>,
    /// One buffer per field, reused row after row.
    fields: [Vec<u8>; 6],
}

impl<W: Write> ItemsCsv<W> {
    /// Writes the header to `out`; `groups` names the items' groups.
    pub fn new(out: W, groups: Vec<String>) -> Result<Self> {
        let mut w = csv::Writer::from_writer(out);
        w.write_record([
            "item",
            "group",
            "thread",
            "queued_ns",
            "started_ns",
            "finished_ns",
        ])?;
        Ok(ItemsCsv {
            w,
            groups,
            fields: Default::default(),
        })
    }

    /// One item's row.
    pub fn row(&mut self, i: &crate::trace::ItemRecord) -> Result<()> {
        fn number(buf: &mut Vec<u8>, n: Option<u64>) {
            buf.clear();
            if let Some(n) = n {
                // Writing to a Vec cannot fail.
                let _ = write!(buf, "{n}");
            }
        }
        let time = |t: crate::time::SimTime| (t != crate::time::SimTime::MAX).then(|| t.as_nanos());
        let group = self
            .groups
            .get(i.group as usize)
            .map(String::as_str)
            .unwrap_or("");
        let f = &mut self.fields;
        number(&mut f[0], Some(u64::from(i.item)));
        f[1].clear();
        f[1].extend_from_slice(group.as_bytes());
        number(
            &mut f[2],
            (i.thread != u32::MAX).then_some(u64::from(i.thread)),
        );
        number(&mut f[3], time(i.queued));
        number(&mut f[4], time(i.started));
        number(&mut f[5], time(i.finished));
        self.w.write_record(&*f)?;
        Ok(())
    }

    /// Flushes the rows written.
    pub fn finish(mut self) -> Result<()> {
        self.w.flush().context("cannot finish CSV")?;
        Ok(())
    }
}

/// A duration for people: `812.4 ms`, `4.63 s`, `2 min 05.3 s`,
/// `9 h 06 min 02 s`. Tables keep milliseconds; summaries use this.
///
/// The unit is chosen on the value as it will be printed, so rounding
/// never shows `60.0 s` or `1000.0 ms`: 59,999.7 ms reads `1 min 00.0 s`.
/// Hours drop the seconds' fraction (truncated, as a clock shows them).
pub fn human_ms(ms: f64) -> String {
    if !ms.is_finite() {
        return "-".into();
    }
    let sign = if ms < 0.0 { "-" } else { "" };
    let ms = ms.abs();
    let tenths_ms = (ms * 10.0).round();
    let hundredths_s = (ms / 10.0).round();
    let tenths_s = (ms / 100.0).round();
    if tenths_ms < 10_000.0 {
        format!("{sign}{ms:.1} ms")
    } else if hundredths_s < 6_000.0 {
        format!("{sign}{:.2} s", ms / 1000.0)
    } else if tenths_s < 36_000.0 {
        let min = (tenths_s / 600.0).floor();
        let s = (tenths_s - min * 600.0) / 10.0;
        format!("{sign}{min:.0} min {s:04.1} s")
    } else {
        // At least the hour that the rounding above reached.
        let whole_s = (ms / 1000.0).floor().max(3600.0);
        let h = (whole_s / 3600.0).floor();
        let min = ((whole_s - h * 3600.0) / 60.0).floor();
        let s = whole_s - h * 3600.0 - min * 60.0;
        format!("{sign}{h:.0} h {min:02.0} min {s:02.0} s")
    }
}

/// [`human_ms`] for a figure whose sub-millisecond part matters (a
/// probe's latency: a responsive pool answers in microseconds): under a
/// millisecond it keeps three decimals (`0.021 ms`).
pub fn human_ms_fine(ms: f64) -> String {
    if ms.is_finite() && ms.abs() < 1.0 {
        format!("{ms:.3} ms")
    } else {
        human_ms(ms)
    }
}

/// A run's summary, a line each, as `poolsim run` prints it (and the
/// playground shows it): `sets` are the `--set` changes, named on a
/// `changed` line.
pub fn summary_lines(s: &Summary, outcome: &Outcome, sets: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    out.push(format!("scenario      {}", s.scenario));
    out.push(format!(
        "policy        {}   seed {}   cores {}",
        s.policy, s.seed, s.cores
    ));
    if !sets.is_empty() {
        out.push(format!(
            "changed       {}   (--set; the file is as written)",
            sets.join("   ")
        ));
    }
    out.push(format!(
        "items         {} ({} finished)",
        s.items, s.finished
    ));
    if outcome.is_completed() {
        out.push(format!("makespan      {}", human_ms(s.makespan_ms)));
    } else if s.finished == 0 {
        out.push("makespan      - (the run did not complete; no item finished)".to_string());
    } else {
        out.push(format!(
            "makespan      - (the run did not complete; the last item to finish ended {} after the first submission)",
            human_ms(s.makespan_ms)
        ));
    }
    let p = |x: &metrics::Percentiles| {
        format!(
            "p50 {}   p95 {}   p99 {}   max {}",
            human_ms(x.p50),
            human_ms(x.p95),
            human_ms(x.p99),
            human_ms(x.max)
        )
    };
    // Percentiles of nothing would read as zeros: say there is nothing.
    if s.started == 0 {
        out.push("start delay   - (no item started)".to_string());
    } else if s.started < s.items {
        out.push(format!(
            "start delay   {}   (of the {} items that started)",
            p(&s.start_delay_ms),
            s.started
        ));
    } else {
        out.push(format!("start delay   {}", p(&s.start_delay_ms)));
    }
    if s.finished == 0 {
        out.push("latency       - (no item finished)".to_string());
    } else if s.calls_left_out > 0 {
        // The fan-out calls' time is inside their callers' latency.
        let of = if s.finished < s.items {
            format!(", of the {} items that finished", s.finished)
        } else {
            String::new()
        };
        out.push(format!(
            "latency       {}   (queued -> finished{of}; the {} fan-out calls are left out: their callers wait for them)",
            p(&s.latency_ms),
            s.calls_left_out
        ));
    } else if s.finished < s.items {
        out.push(format!(
            "latency       {}   (queued -> finished, of the {} items that finished)",
            p(&s.latency_ms),
            s.finished
        ));
    } else {
        out.push(format!(
            "latency       {}   (queued -> finished)",
            p(&s.latency_ms)
        ));
    }
    if let Some(err) = s.approximate_percentiles {
        out.push(format!(
            "              (percentiles from bucketed values, within {:.2} %: more distinct values than kept exactly)",
            err * 100.0
        ));
    }
    let by_reason: Vec<String> = s
        .threads_created_by_reason
        .iter()
        .map(|(r, n)| format!("{n} {r}"))
        .collect();
    out.push(format!(
        "threads       peak {}   created {}{}",
        s.threads_peak,
        s.threads_created,
        if by_reason.is_empty() {
            String::new()
        } else {
            format!(" ({})", by_reason.join(", "))
        }
    ));
    out.push(format!(
        "time starved  {}   (work queued, no thread taking it)",
        human_ms(s.time_starved_ms)
    ));
    if let Some(max) = s.probe_latency_ms_max {
        out.push(format!(
            "probes        {}   first {}   max {}",
            s.probes,
            human_ms_fine(s.probe_latency_ms_first.unwrap_or(0.0)),
            human_ms_fine(max)
        ));
    }
    if let Some(u) = s.cpu_utilization {
        out.push(format!(
            "cpu           {:.1} % of {} cores",
            u * 100.0,
            s.cores
        ));
    }
    out.extend(outcome_lines(outcome));
    out
}

/// What an incomplete run's summary says about how it ended (nothing for a
/// completed run); `compare` prints the same lines per policy.
pub fn outcome_lines(outcome: &Outcome) -> Vec<String> {
    match outcome {
        Outcome::Completed => vec![],
        Outcome::TimeLimit { at, unfinished } => vec![format!(
            "INCOMPLETE    time limit reached at {} with {unfinished} items unfinished (raise --until-ms)",
            human_ms(at.as_ms_f64())
        )],
        Outcome::EventBudget { events, unfinished } => vec![format!(
            "INCOMPLETE    event budget of {events} events spent with {unfinished} items unfinished (raise --max-events)"
        )],
        Outcome::Stalled { at, unfinished } => vec![format!(
            "STALLED       nothing left to happen at {}, {unfinished} items unfinished",
            human_ms(at.as_ms_f64())
        )],
        Outcome::Deadlock {
            at,
            unfinished,
            blocked,
        } => {
            let shown: Vec<String> = blocked
                .iter()
                .take(12)
                .map(|(t, i)| match i {
                    Some(i) => format!("thread {t} (item {i})"),
                    None => format!("thread {t}"),
                })
                .collect();
            vec![
                format!(
                    "DEADLOCK      at {}: {} blocked in waits only pool work can end, and the pool is at max_threads; {unfinished} items unfinished",
                    human_ms(at.as_ms_f64()),
                    match blocked.len() {
                        1 => "the pool's one thread is".to_string(),
                        n => format!("all {n} threads are"),
                    }
                ),
                format!(
                    "              blocked: {}{}",
                    shown.join(", "),
                    if blocked.len() > shown.len() { ", ..." } else { "" }
                ),
                "              raise pool.max_threads, or do not block pool threads on work that needs the pool (sync over async)".to_string(),
            ]
        }
    }
}

#[cfg(test)]
mod human_tests {
    use super::human_ms;

    #[test]
    fn durations_read_in_the_largest_sensible_unit() {
        assert_eq!(human_ms(812.44), "812.4 ms");
        assert_eq!(human_ms(4630.2), "4.63 s");
        assert_eq!(human_ms(125_300.0), "2 min 05.3 s");
        assert_eq!(human_ms(32_762_983.9), "9 h 06 min 02 s");
    }

    #[test]
    fn rounding_never_shows_a_full_unit() {
        // A starving run's time: 27 min 59.997 s.
        assert_eq!(human_ms(1_679_997.0), "28 min 00.0 s");
        assert_eq!(human_ms(999.96), "1.00 s");
        assert_eq!(human_ms(999.94), "999.9 ms");
        assert_eq!(human_ms(59_999.7), "1 min 00.0 s");
        assert_eq!(human_ms(59_994.0), "59.99 s");
        assert_eq!(human_ms(3_599_970.0), "1 h 00 min 00 s");
        assert_eq!(human_ms(3_599_940.0), "59 min 59.9 s");
        assert_eq!(human_ms(-1_679_997.0), "-28 min 00.0 s");
    }

    #[test]
    fn probe_latencies_keep_microseconds_and_read_in_minutes() {
        assert_eq!(super::human_ms_fine(0.0213), "0.021 ms");
        assert_eq!(super::human_ms_fine(172_898.292), "2 min 52.9 s");
    }
}

#[cfg(test)]
mod staged_tests {
    use super::Staged;

    fn dir(name: &str) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("poolsim-staged-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn a_staged_file_appears_only_when_committed() {
        let d = dir("commit");
        let path = d.join("out.csv");
        let staged = Staged::write(&path, |w| Ok(w.write_all(b"a,b\n")?)).unwrap();
        assert!(!path.exists());
        staged.commit().unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"a,b\n");
        assert_eq!(
            std::fs::read_dir(&d).unwrap().count(),
            1,
            "no temporary left"
        );
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_staged_file_dropped_or_failed_leaves_nothing() {
        let d = dir("drop");
        let path = d.join("out.csv");
        drop(Staged::write(&path, |w| Ok(w.write_all(b"x")?)).unwrap());
        assert!(Staged::write(&path, |_| anyhow::bail!("render failed")).is_err());
        assert_eq!(std::fs::read_dir(&d).unwrap().count(), 0);
        std::fs::remove_dir_all(&d).unwrap();
    }
}
