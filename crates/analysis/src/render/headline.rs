//! A run's headline: what happened, in one line, for a chart's title
//! ("4 threads start at once, then 4 more one a second: starvation
//! injection").
//!
//! It is read from the run's facts only, never from the scenario's name or
//! shape:
//! - the pool threads in creation order, in stretches of one reason (on
//!   demand within the goal, the gate's starvation rule, hill climbing,
//!   cooperative blocking, dedicated threads); a short stretch of threads
//!   on demand between two stretches of one mechanism is that mechanism's
//!   (the goal it raised let them in);
//! - how each stretch was spaced: at once, one a second, one every 500 ms,
//!   about 4 a second, or over some time when irregular;
//! - the mechanisms that added threads: after a colon when one did, named
//!   in each stretch when several did;
//! - the gate's ticks that found the pool starved and added no thread (at
//!   its maximum), and hill climbing or cooperative blocking raising the
//!   goal with no thread of their own.

use crate::time::{SimDuration, SimTime};
use crate::trace::ThreadReason;

use super::decisions::DecisionKind;
use super::timeline::{ThreadMark, Timeline};

/// Creations this close together are "at once".
const AT_ONCE: SimDuration = SimDuration::from_ms(50);
/// At most this many stretches of creations are named; the rest are summed.
const MAX_STRETCHES: usize = 3;

/// What happened in `t`, in one line; `None` when it created no pool thread
/// and the pool decided nothing worth a word.
pub fn headline(t: &Timeline) -> Option<String> {
    let pool: Vec<&ThreadMark> = t
        .creations
        .iter()
        .filter(|m| m.reason != ThreadReason::Main)
        .collect();
    let stretches = stretches(&pool);
    let mut mechanisms: Vec<&'static str> = Vec::new();
    for s in &stretches {
        if let Some(m) = mechanism(s.reason)
            && !mechanisms.contains(&m)
        {
            mechanisms.push(m);
        }
    }
    let inline = mechanisms.len() > 1;
    let mut parts: Vec<String> = Vec::new();
    let mut previous: Option<&Stretch<'_>> = None;
    for (i, s) in stretches.iter().take(MAX_STRETCHES).enumerate() {
        parts.push(stretch_phrase(s, i == 0, inline, previous));
        previous = Some(s);
    }
    if stretches.len() > MAX_STRETCHES {
        let rest: Vec<&ThreadMark> = stretches[MAX_STRETCHES..]
            .iter()
            .flat_map(|s| s.marks.iter().copied())
            .collect();
        parts.push(format!(
            "{} more{}",
            thousands(rest.len()),
            cadence(&rest, previous)
        ));
    }
    let mut text = parts.join(", then ");
    match mechanisms.as_slice() {
        [] if pool.is_empty() => {}
        [] => text.push_str(": all within the goal, on demand"),
        [m] => {
            text.push_str(": ");
            text.push_str(m);
        }
        _ => {}
    }
    let mut notes: Vec<String> = Vec::new();
    let starved_ticks = t
        .decisions
        .iter()
        .filter(|d| d.kind == DecisionKind::Gate && d.starved && !d.raised)
        .count();
    if starved_ticks > 0 {
        notes.push(format!(
            "starved at {} that added no thread",
            count(starved_ticks, "gate tick")
        ));
    }
    for (kind, reason, noun) in [
        (
            DecisionKind::HillClimbing,
            ThreadReason::HillClimbing,
            "hill climbing",
        ),
        (
            DecisionKind::CooperativeBlocking,
            ThreadReason::CooperativeBlocking,
            "cooperative blocking",
        ),
    ] {
        let top = t
            .decisions
            .iter()
            .filter(|d| d.kind == kind && d.raised)
            .filter_map(|d| d.goal.map(|(_, g)| g))
            .max();
        if let Some(top) = top
            && !pool.iter().any(|m| m.reason == reason)
        {
            notes.push(format!(
                "{noun} raised the goal to {top}, no thread added for it"
            ));
        }
    }
    if text.is_empty() {
        if notes.is_empty() {
            return None;
        }
        text = "no pool thread created".to_string();
    }
    for n in notes {
        text.push_str("; ");
        text.push_str(&n);
    }
    Some(text)
}

/// `title`, with `t`'s headline on a second line when it has one (the
/// Gantt chart draws a title's second line under its first).
pub fn with_headline(title: &str, t: &Timeline) -> String {
    match headline(t) {
        Some(h) => format!("{title}\n{h}"),
        None => title.to_string(),
    }
}

/// Consecutive creations with one reason.
struct Stretch<'a> {
    reason: ThreadReason,
    marks: Vec<&'a ThreadMark>,
}

/// The creations in stretches of one reason; a short stretch on demand
/// between two of one mechanism joins them.
fn stretches<'a>(pool: &[&'a ThreadMark]) -> Vec<Stretch<'a>> {
    let mut out: Vec<Stretch<'a>> = Vec::new();
    for m in pool {
        match out.last_mut() {
            Some(s) if s.reason == m.reason => s.marks.push(m),
            _ => out.push(Stretch {
                reason: m.reason,
                marks: vec![m],
            }),
        }
    }
    let mut i = 1;
    while i + 1 < out.len() {
        let (before, between, after) = (&out[i - 1], &out[i], &out[i + 1]);
        let around = before.marks.len() + after.marks.len();
        if between.reason == ThreadReason::Demand
            && before.reason == after.reason
            && mechanism(before.reason).is_some()
            && between.marks.len() * 4 <= around.max(8)
        {
            let between = out.remove(i);
            let after = out.remove(i);
            let before = &mut out[i - 1];
            before.marks.extend(between.marks);
            before.marks.extend(after.marks);
        } else {
            i += 1;
        }
    }
    out
}

/// "4 threads start at once", "4 more one a second", "1 more by hill
/// climbing at 2.62 s", ...
fn stretch_phrase(
    s: &Stretch<'_>,
    first: bool,
    inline: bool,
    previous: Option<&Stretch<'_>>,
) -> String {
    let n = s.marks.len();
    let who = if first {
        let noun = if n == 1 {
            "thread starts"
        } else {
            "threads start"
        };
        format!("{} {noun}", thousands(n))
    } else {
        format!("{} more", thousands(n))
    };
    let by = match (inline, mechanism(s.reason)) {
        (true, Some(_)) => format!(" by {}", short_mechanism(s.reason)),
        (true, None) if !first && s.reason == ThreadReason::Demand => " on demand".to_string(),
        _ => String::new(),
    };
    format!("{who}{by}{}", cadence(&s.marks, previous))
}

/// How the creations were spaced: " at once", " one a second", " one
/// every 500 ms", " about 4 a second", " over 3.2 s"; for one thread, when
/// (" at 2.62 s", " right after").
fn cadence(marks: &[&ThreadMark], previous: Option<&Stretch<'_>>) -> String {
    let (Some(first), Some(last)) = (marks.first(), marks.last()) else {
        return String::new();
    };
    if marks.len() == 1 {
        let after_previous = previous
            .and_then(|p| p.marks.last())
            .is_some_and(|p| first.at.since(p.at) <= AT_ONCE);
        return if after_previous {
            " right after".to_string()
        } else if first.at == SimTime::ZERO {
            String::new()
        } else {
            format!(" at {}", seconds(first.at.since(SimTime::ZERO)))
        };
    }
    let span = last.at.since(first.at);
    if span <= AT_ONCE {
        return " at once".to_string();
    }
    let mut gaps: Vec<u64> = marks
        .windows(2)
        .map(|w| w[1].at.since(w[0].at).as_nanos())
        .collect();
    gaps.sort_unstable();
    let median = gaps[gaps.len() / 2];
    // Regular: every gap within a factor of two of the median (one in ten
    // may stray in a long stretch).
    let strays = gaps
        .iter()
        .filter(|&&g| g * 2 < median || g > median * 2)
        .count();
    let regular = median > 0 && (strays == 0 || (gaps.len() >= 10 && strays * 10 <= gaps.len()));
    if !regular {
        return format!(" over {}", seconds(span));
    }
    let g = median as f64 / 1e9;
    if (0.95..=1.05).contains(&g) {
        " one a second".to_string()
    } else if g > 1.05 {
        format!(" one every {}", seconds(SimDuration(median)))
    } else if g >= 0.4 {
        format!(" one every {} ms", (g * 1000.0).round())
    } else {
        format!(" about {} a second", (1.0 / g).round())
    }
}

/// What added threads of `reason`, after the colon; `None` within the goal.
fn mechanism(reason: ThreadReason) -> Option<&'static str> {
    match reason {
        ThreadReason::Starvation => Some("starvation injection"),
        ThreadReason::HillClimbing => Some("hill climbing raised the goal"),
        ThreadReason::CooperativeBlocking => Some("cooperative blocking raised the goal"),
        ThreadReason::Dedicated => Some("dedicated threads (new Thread), not the pool's"),
        ThreadReason::Observed => Some("the trace does not say why"),
        ThreadReason::Demand | ThreadReason::Main => None,
    }
}

/// The same, named in a stretch ("by hill climbing").
fn short_mechanism(reason: ThreadReason) -> &'static str {
    match reason {
        ThreadReason::Starvation => "starvation injection",
        ThreadReason::HillClimbing => "hill climbing",
        ThreadReason::CooperativeBlocking => "cooperative blocking",
        ThreadReason::Dedicated => "new Thread",
        ThreadReason::Observed => "an unknown reason",
        ThreadReason::Demand | ThreadReason::Main => "demand",
    }
}

/// "0.5 s", "2 s", "1.25 s".
fn seconds(d: SimDuration) -> String {
    let s = d.as_ms_f64() / 1000.0;
    let text = format!("{s:.2}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    format!("{text} s")
}

fn count(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{} {noun}s", thousands(n))
    }
}

fn thousands(n: usize) -> String {
    super::axis::thousands(n as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::DecisionMark;
    use crate::trace::{ThreadRecord, Trace};

    /// A timeline whose threads were created at `(ms, reason)`.
    fn timeline(threads: &[(u64, ThreadReason)]) -> Timeline {
        let trace = Trace {
            scenario: "s".into(),
            policy: "p".into(),
            seed: 1,
            cores: 4,
            groups: vec![],
            call_groups: Vec::new(),
            items: vec![],
            threads: threads
                .iter()
                .enumerate()
                .map(|(i, &(ms, reason))| ThreadRecord {
                    thread: i as u32,
                    created: SimTime::from_ms(ms),
                    reason,
                    exited: None,
                })
                .collect(),
            probes: vec![],
            counts: vec![],
            cpu_busy_ns: None,
            end: SimTime::from_ms(10_000),
        };
        Timeline::build(&trace, None)
    }

    fn gate(ms: u64, starved: bool, raised: bool) -> DecisionMark {
        DecisionMark {
            at: SimTime::from_ms(ms),
            kind: DecisionKind::Gate,
            raised,
            starved,
            goal: Some((4, if raised { 5 } else { 4 })),
            reason: raised.then_some(ThreadReason::Starvation),
            rule: if raised { "Starvation" } else { "GateTick" },
            text: String::new(),
        }
    }

    use ThreadReason::{CooperativeBlocking, Dedicated, Demand, HillClimbing, Starvation};

    #[test]
    fn a_burst_then_one_thread_a_second_is_starvation_injection() {
        let t = timeline(&[
            (0, Demand),
            (0, Demand),
            (0, Demand),
            (0, Demand),
            (630, Starvation),
            (1630, Starvation),
            (2630, Starvation),
            (3630, Starvation),
        ]);
        assert_eq!(
            headline(&t).unwrap(),
            "4 threads start at once, then 4 more one a second: starvation injection"
        );
    }

    #[test]
    fn cadences_name_the_spacing_or_the_span() {
        let every = |gap: u64, n: u64| -> Vec<(u64, ThreadReason)> {
            std::iter::once((0, Demand))
                .chain((1..=n).map(|k| (k * gap, Starvation)))
                .collect()
        };
        let h = |threads: &[(u64, ThreadReason)]| headline(&timeline(threads)).unwrap();
        assert_eq!(
            h(&every(500, 6)),
            "1 thread starts, then 6 more one every 500 ms: starvation injection"
        );
        assert_eq!(
            h(&every(2500, 3)),
            "1 thread starts, then 3 more one every 2.5 s: starvation injection"
        );
        assert_eq!(
            h(&every(250, 8)),
            "1 thread starts, then 8 more about 4 a second: starvation injection"
        );
        assert_eq!(
            h(&[
                (0, Demand),
                (250, Starvation),
                (2500, Starvation),
                (3100, Starvation)
            ]),
            "1 thread starts, then 3 more over 2.85 s: starvation injection"
        );
        assert_eq!(
            h(&[(0, Demand), (2620, HillClimbing)]),
            "1 thread starts, then 1 more at 2.62 s: hill climbing raised the goal"
        );
    }

    #[test]
    fn only_threads_within_the_goal_say_so() {
        let t = timeline(&[(0, Demand), (0, Demand), (300, Demand)]);
        assert_eq!(
            headline(&t).unwrap(),
            "3 threads start over 0.3 s: all within the goal, on demand"
        );
        let t = timeline(&[(0, Dedicated), (0, Dedicated)]);
        assert_eq!(
            headline(&t).unwrap(),
            "2 threads start at once: dedicated threads (new Thread), not the pool's"
        );
    }

    #[test]
    fn several_mechanisms_are_named_in_their_stretches() {
        let t = timeline(&[
            (0, Demand),
            (0, Demand),
            (1980, Starvation),
            (2620, HillClimbing),
        ]);
        assert_eq!(
            headline(&t).unwrap(),
            "2 threads start at once, then 1 more by starvation injection at 1.98 s, \
             then 1 more by hill climbing at 2.62 s"
        );
    }

    #[test]
    fn threads_on_demand_inside_a_mechanisms_stretch_are_its_own() {
        let mut threads = vec![(0, Demand); 8];
        threads.push((1, CooperativeBlocking));
        threads.extend([(2, Demand), (3, Demand)]);
        threads.extend((1..=20).map(|k| (k * 100, CooperativeBlocking)));
        assert_eq!(
            headline(&timeline(&threads)).unwrap(),
            "8 threads start at once, then 23 more about 10 a second: \
             cooperative blocking raised the goal"
        );
    }

    #[test]
    fn starvation_without_a_thread_and_a_goal_raised_alone_are_noted() {
        let mut t = timeline(&[(0, Demand), (0, Demand)]);
        t.decisions = vec![gate(500, true, false), gate(1000, true, false)];
        t.decisions.push(DecisionMark {
            at: SimTime::from_ms(1200),
            kind: DecisionKind::HillClimbing,
            raised: true,
            starved: false,
            goal: Some((2, 3)),
            reason: Some(HillClimbing),
            rule: "ClimbingMove",
            text: String::new(),
        });
        assert_eq!(
            headline(&t).unwrap(),
            "2 threads start at once: all within the goal, on demand; \
             starved at 2 gate ticks that added no thread; \
             hill climbing raised the goal to 3, no thread added for it"
        );
        assert_eq!(headline(&timeline(&[])), None);
    }

    #[test]
    fn the_title_keeps_its_first_line() {
        let t = timeline(&[(0, Demand)]);
        assert_eq!(
            with_headline("net-classic", &t),
            "net-classic\n1 thread starts: all within the goal, on demand"
        );
    }
}
