//! The pool's decisions as the charts mark them, in `poolsim explain`'s
//! words: gate (monitor) ticks, hill-climbing samples, cooperative-blocking
//! steps and thread exits, every goal change with its reason, and why each
//! thread exists.
//!
//! The sentences are [`crate::explain`]'s: each decision (with the goal
//! change and thread creation that follow it at the same instant, which
//! explain merges into its line) is handed to [`crate::explain::explain`]
//! and its line taken as it is, so the chart, its tooltips, the Chrome
//! trace and `poolsim explain` say the same thing in the same words.
//! [`DecisionLines`] takes the events one at a time, so a whole event log
//! and a run streamed as it goes give the same marks.
//!
//! A recorded trace (`poolsim import`) has no decision events: the runtime
//! logs each goal adjustment (ThreadPoolWorkerThreadAdjustmentAdjustment)
//! with its reason, not the inputs its rule read. Each becomes a
//! [`RecordedAdjustment`], marked as the decision of its rule would be (a
//! Starvation raise on the gate row, hill climbing's transitions on the
//! climbing row, CooperativeBlocking on the blocking row, ThreadTimedOut as
//! a thread exit) with a line in explain's shape, "what ran -> Reason: goal
//! A -> B, thread N created": the rule's inputs replaced by what the trace
//! says, and the threads started for the raise named with how much later
//! they started.

use crate::explain::{ExplainLine, explain};
use crate::time::SimTime;
use crate::trace::{Decision, GoalReason, ThreadId, ThreadReason, Trace, TraceEvent};

use super::axis::format_duration;

/// What kind of decision a [`DecisionMark`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DecisionKind {
    /// A gate (monitor) thread tick with thread requests pending: the
    /// starvation test (.NET 2.0: the gate's check with work queued).
    Gate,
    /// A hill-climbing sample.
    HillClimbing,
    /// A .NET 6+ cooperative-blocking adjustment.
    CooperativeBlocking,
    /// A thread told to stop: it retires, or it timed out idle and exits.
    ThreadExit,
}

impl DecisionKind {
    pub fn name(self) -> &'static str {
        match self {
            DecisionKind::Gate => "gate tick",
            DecisionKind::HillClimbing => "hill-climbing sample",
            DecisionKind::CooperativeBlocking => "cooperative-blocking adjustment",
            DecisionKind::ThreadExit => "thread exit",
        }
    }
}

/// One decision of the pool.
#[derive(Clone, Debug, PartialEq)]
pub struct DecisionMark {
    pub at: SimTime,
    pub kind: DecisionKind,
    /// Whether it added a thread or raised the goal.
    pub raised: bool,
    /// A gate tick: whether its starvation test held (a thread is added
    /// unless the pool is at its maximum or one is on its way).
    pub starved: bool,
    /// The goal before and after, for the decisions that set it.
    pub goal: Option<(u32, u32)>,
    /// The reason that raised it, when it did (`Starvation`, hill
    /// climbing, cooperative blocking).
    pub reason: Option<ThreadReason>,
    /// explain's kind of line (`Starvation`, `GateTick`, `ClimbingMove`, ...).
    pub rule: &'static str,
    /// explain's sentence.
    pub text: String,
}

/// One change of the policy's thread goal.
#[derive(Clone, Debug, PartialEq)]
pub struct GoalMark {
    pub at: SimTime,
    /// The goal before (none before the first).
    pub previous: Option<u32>,
    pub goal: u32,
    /// The model's name for the reason (`min-threads`, `starvation`,
    /// `ClimbingMove`, ...; an imported trace's: the runtime's).
    pub reason: &'static str,
    /// explain's sentence for the decision that moved it, when there is one.
    pub why: Option<String>,
}

/// A goal adjustment a recorded trace logged, with what the trace tells of
/// it (see the module head).
#[derive(Clone, Debug, PartialEq)]
pub struct RecordedAdjustment {
    pub at: SimTime,
    /// The goal before: the previous adjustment's, else the pool's minimum
    /// (`None` when the trace gives neither).
    pub previous: Option<u32>,
    pub goal: u32,
    pub reason: GoalReason,
    /// The runtime's name for the reason (`Starvation`; `Reason9` for one
    /// poolsim does not know).
    pub name: String,
    /// The reason the threads started for its increase are drawn with.
    pub raises: ThreadReason,
    /// The threads started for its increase, with when they started.
    pub created: Vec<(ThreadId, SimTime)>,
}

impl RecordedAdjustment {
    /// The mark of the adjustment in the decisions strip.
    pub fn mark(&self) -> DecisionMark {
        let raised = self.previous.is_some_and(|p| self.goal > p);
        let kind = match self.reason {
            GoalReason::Starvation => DecisionKind::Gate,
            GoalReason::CooperativeBlocking => DecisionKind::CooperativeBlocking,
            GoalReason::ThreadTimedOut => DecisionKind::ThreadExit,
            // Every other reason is a transition of the runtime's hill
            // climber, which logs the adjustments (`HillClimbing.LogTransition`).
            _ => DecisionKind::HillClimbing,
        };
        DecisionMark {
            at: self.at,
            kind,
            raised,
            // The runtime logs Starvation only when its test held.
            starved: self.reason == GoalReason::Starvation,
            goal: self.previous.map(|p| (p, self.goal)),
            reason: raised.then_some(self.raises),
            rule: self.rule(),
            text: self.line(),
        }
    }

    /// The goal change it made, with its line as the reason why.
    pub fn goal_mark(&self) -> GoalMark {
        GoalMark {
            at: self.at,
            previous: self.previous,
            goal: self.goal,
            reason: self.reason.name(),
            why: Some(self.line()),
        }
    }

    /// explain's kind of line for the reason.
    fn rule(&self) -> &'static str {
        match self.reason {
            GoalReason::MinThreads => "MinThreads",
            GoalReason::Warmup => "Warmup",
            GoalReason::Initializing => "Initializing",
            GoalReason::RandomMove => "RandomMove",
            GoalReason::ClimbingMove => "ClimbingMove",
            GoalReason::ChangePoint => "ChangePoint",
            GoalReason::Stabilizing => "Stabilizing",
            GoalReason::Starvation => "Starvation",
            GoalReason::ThreadTimedOut => "ThreadTimedOut",
            GoalReason::CooperativeBlocking => "CooperativeBlocking",
            GoalReason::Other => "Other",
        }
    }

    /// The adjustment in explain's shape ("gate tick: ... -> Starvation:
    /// goal 2 -> 3, thread 2 created 0.38 ms later"), what the rule read
    /// replaced by what the trace says of it.
    pub fn line(&self) -> String {
        let what = match self.reason {
            GoalReason::Starvation => {
                "gate tick: starved (the trace logs the adjustment, not the starvation test's inputs)"
            }
            GoalReason::Warmup
            | GoalReason::Initializing
            | GoalReason::RandomMove
            | GoalReason::ClimbingMove
            | GoalReason::ChangePoint
            | GoalReason::Stabilizing => {
                "hill climbing (the trace logs the adjustment, not the sample's inputs)"
            }
            GoalReason::CooperativeBlocking => {
                "blocking adjustment (the trace logs the adjustment, not the threads blocked)"
            }
            GoalReason::ThreadTimedOut => {
                "an idle thread timed out (the trace logs the adjustment, not which thread)"
            }
            GoalReason::MinThreads | GoalReason::Other => {
                "an adjustment for a reason poolsim does not know"
            }
        };
        let goal = match self.previous {
            Some(p) if p == self.goal => format!("goal stays {p}"),
            Some(p) => format!("goal {p} -> {}", self.goal),
            None => format!("goal set to {}", self.goal),
        };
        let mut text = format!("{what} -> {}: {goal}", self.name);
        for &(thread, at) in &self.created {
            if at > self.at {
                text.push_str(&format!(
                    ", thread {thread} created {} later",
                    format_duration(at.since(self.at))
                ));
            } else {
                text.push_str(&format!(", thread {thread} created"));
            }
        }
        text
    }
}

/// Turns detail events into [`DecisionMark`]s, [`GoalMark`]s and each
/// thread's reason to exist, one event at a time.
///
/// A decision is held until the events that may be part of its line have
/// come (explain merges the goal change, thread creation and start that
/// follow it at the same instant: at most three events), then explained.
#[derive(Clone, Debug, Default)]
pub struct DecisionLines {
    held: Option<(SimTime, Decision)>,
    /// The events after the held decision, at its instant (at most three).
    tail: Vec<TraceEvent>,
    goal: Option<u32>,
    marks: Vec<DecisionMark>,
    goals: Vec<GoalMark>,
    whys: Vec<(ThreadId, String)>,
}

/// explain merges at most this many events into a decision's line.
const MERGED_AT_MOST: usize = 3;

impl DecisionLines {
    /// One event, in recording order.
    pub fn event(&mut self, at: SimTime, event: &TraceEvent) {
        if let Some((held_at, _)) = &self.held
            && (at != *held_at
                || self.tail.len() == MERGED_AT_MOST
                || matches!(event, TraceEvent::Decision(_)))
        {
            self.resolve();
        }
        match event {
            TraceEvent::Decision(d) if tracked(d) => self.held = Some((at, d.clone())),
            TraceEvent::Decision(_) => {}
            _ if self.held.is_some() => self.tail.push(event.clone()),
            TraceEvent::ThreadCreated { .. } | TraceEvent::GoalChanged { .. } => {
                self.standalone(at, event, None)
            }
            _ => {}
        }
    }

    /// The decisions, the goal changes and each thread's sentence, with
    /// any decision still held explained.
    pub fn finish(mut self) -> (Vec<DecisionMark>, Vec<GoalMark>, Vec<(ThreadId, String)>) {
        self.resolve();
        (self.marks, self.goals, self.whys)
    }

    /// Explains the held decision with its tail; the tail's events it does
    /// not merge are taken on their own.
    fn resolve(&mut self) {
        let Some((at, decision)) = self.held.take() else {
            return;
        };
        let tail = std::mem::take(&mut self.tail);
        let mut slice = Vec::with_capacity(1 + tail.len());
        slice.push((at, TraceEvent::Decision(decision.clone())));
        slice.extend(tail.iter().map(|e| (at, e.clone())));
        let (merged, line) = decision_line(&slice);
        let text = line.as_ref().map(|l| l.text.clone());
        if let Some(kind) = mark_kind(&decision)
            && let Some(line) = &line
        {
            let reason = raised_by(&decision);
            self.marks.push(DecisionMark {
                at,
                kind,
                raised: reason.is_some(),
                starved: starved(&decision),
                goal: goal_of(&decision),
                reason,
                rule: line.kind,
                text: line.text.clone(),
            });
        }
        for (i, event) in tail.iter().enumerate() {
            match event {
                TraceEvent::ThreadCreated { thread, .. } if i < merged => {
                    if let Some(t) = &text {
                        self.whys.push((*thread, t.clone()));
                    }
                }
                // A goal change at the decision's instant is its doing, merged
                // into its line or not (an idle thread's time-out names the
                // goal it lowers in its own words).
                TraceEvent::GoalChanged { .. } => self.standalone(at, event, text.clone()),
                _ if i >= merged => self.standalone(at, event, None),
                _ => {}
            }
        }
    }

    /// A thread creation or goal change that no decision's line took.
    fn standalone(&mut self, at: SimTime, event: &TraceEvent, why: Option<String>) {
        match *event {
            TraceEvent::ThreadCreated { thread, .. } => {
                if let Some(line) = explain_lines(&[(at, event.clone())]).into_iter().next() {
                    self.whys.push((thread, line.text));
                }
            }
            TraceEvent::GoalChanged { goal, reason } => {
                let why = why.or_else(|| {
                    explain_lines(&[(at, event.clone())])
                        .into_iter()
                        .next()
                        .map(|l| l.text)
                });
                self.goals.push(GoalMark {
                    at,
                    previous: self.goal,
                    goal,
                    reason: reason.name(),
                    why,
                });
                self.goal = Some(goal);
            }
            _ => {}
        }
    }
}

/// Decisions that can add a thread, move the goal or stop a thread: the
/// only ones whose lines merge what follows, and the ones marked.
fn tracked(d: &Decision) -> bool {
    matches!(
        d,
        Decision::GateTick { .. }
            | Decision::Net20Gate { .. }
            | Decision::HillClimbing { .. }
            | Decision::CooperativeBlocking { .. }
            | Decision::Demand { .. }
            | Decision::IdleTimeout { .. }
            | Decision::WorkerStop { .. }
    )
}

/// The mark a decision makes, if any.
fn mark_kind(d: &Decision) -> Option<DecisionKind> {
    Some(match d {
        Decision::GateTick { .. } | Decision::Net20Gate { .. } => DecisionKind::Gate,
        Decision::HillClimbing { .. } => DecisionKind::HillClimbing,
        Decision::CooperativeBlocking { .. } => DecisionKind::CooperativeBlocking,
        Decision::IdleTimeout { exits: true, .. } | Decision::WorkerStop { retires: true, .. } => {
            DecisionKind::ThreadExit
        }
        _ => return None,
    })
}

/// The goal before and after a gate tick, hill-climbing sample or
/// cooperative-blocking step.
fn goal_of(d: &Decision) -> Option<(u32, u32)> {
    match *d {
        Decision::GateTick { goal, new_goal, .. }
        | Decision::HillClimbing { goal, new_goal, .. }
        | Decision::CooperativeBlocking { goal, new_goal, .. } => Some((goal, new_goal)),
        _ => None,
    }
}

/// Whether a gate tick found the pool starved.
fn starved(d: &Decision) -> bool {
    match d {
        Decision::GateTick { check, .. } => check.starved,
        Decision::Net20Gate { create, .. } => *create,
        _ => false,
    }
}

/// Why a decision raised the thread count or goal, if it did: the thread
/// it adds, as `explain` reads it, less plain demand.
fn raised_by(d: &Decision) -> Option<ThreadReason> {
    crate::explain::adds_worker(d).filter(|r| *r != ThreadReason::Demand)
}

/// explain's lines for `events` (no window, no story).
fn explain_lines(events: &[(SimTime, TraceEvent)]) -> Vec<ExplainLine> {
    thread_local! {
        static NO_TRACE: Trace = crate::pool::state::empty_trace();
    }
    NO_TRACE.with(|t| explain(t, events, Some((SimTime::ZERO, SimTime::MAX))).lines)
}

/// The line of the decision `slice[0]` and how many of the events after it
/// the line merged. explain gives the decision's line (if any) followed by
/// the lines of the events it left; the merged count is the smallest whose
/// rest explains to exactly those trailing lines.
fn decision_line(slice: &[(SimTime, TraceEvent)]) -> (usize, Option<ExplainLine>) {
    let full = explain_lines(slice);
    for merged in 0..slice.len() {
        let rest = if merged + 1 == slice.len() {
            Vec::new()
        } else {
            explain_lines(&slice[1 + merged..])
        };
        if full.len() >= rest.len() && full.len() - rest.len() <= 1 && full.ends_with(&rest) {
            let line = (full.len() > rest.len()).then(|| full[0].clone());
            return (merged, line);
        }
    }
    (0, full.into_iter().next())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::SimDuration;
    use crate::trace::{GateOutcome, StarvationCheck};

    fn gate(at_ms: u64, inject: bool) -> (SimTime, TraceEvent) {
        (
            SimTime::from_ms(at_ms),
            TraceEvent::Decision(Decision::GateTick {
                check: StarvationCheck {
                    since_dequeue: SimDuration::from_ms(if inject { 630 } else { 130 }),
                    threshold: SimDuration::from_ms(500),
                    comparison: ">",
                    cpu_percent: 0,
                    cpu_busy_percent: 80,
                    cpu_busy: false,
                    starved: inject,
                },
                goal: 4,
                new_goal: if inject { 5 } else { 4 },
                threads: 4,
                outcome: if inject {
                    GateOutcome::Inject
                } else {
                    GateOutcome::NotStarved
                },
            }),
        )
    }

    #[test]
    fn an_injecting_tick_explains_the_thread_it_created_in_explains_words() {
        let at = SimTime::from_ms(630);
        let events = vec![
            (
                SimTime::ZERO,
                TraceEvent::GoalChanged {
                    goal: 4,
                    reason: crate::trace::GoalReason::MinThreads,
                },
            ),
            gate(130, false),
            gate(630, true),
            (
                at,
                TraceEvent::GoalChanged {
                    goal: 5,
                    reason: crate::trace::GoalReason::Starvation,
                },
            ),
            (
                at,
                TraceEvent::ThreadCreated {
                    thread: 4,
                    reason: ThreadReason::Starvation,
                },
            ),
            (at, TraceEvent::QueueLength { queued: 3 }),
        ];
        let mut d = DecisionLines::default();
        for (t, e) in &events {
            d.event(*t, e);
        }
        let (marks, goals, whys) = d.finish();
        let explained = explain_lines(&events);
        assert_eq!(marks.len(), 2);
        assert!(!marks[0].raised && marks[1].raised);
        assert_eq!(marks[1].reason, Some(ThreadReason::Starvation));
        assert_eq!(marks[0].text, explained[1].text);
        assert_eq!(marks[1].text, explained[2].text);
        assert!(marks[1].text.ends_with("goal 4 -> 5, thread 4 created"));
        assert_eq!(whys, vec![(4, explained[2].text.clone())]);
        assert_eq!(goals.len(), 2);
        assert_eq!(goals[0].why.as_deref(), Some(explained[0].text.as_str()));
        assert_eq!((goals[1].previous, goals[1].goal), (Some(4), 5));
        assert_eq!(goals[1].why.as_deref(), Some(explained[2].text.as_str()));
    }

    fn recorded(
        reason: GoalReason,
        name: &str,
        previous: Option<u32>,
        goal: u32,
    ) -> RecordedAdjustment {
        RecordedAdjustment {
            at: SimTime::from_ms(1_000),
            previous,
            goal,
            reason,
            name: name.to_string(),
            raises: ThreadReason::HillClimbing,
            created: Vec::new(),
        }
    }

    #[test]
    fn a_recorded_starvation_raise_is_marked_as_an_injecting_gate_tick() {
        let mut a = recorded(GoalReason::Starvation, "Starvation", Some(2), 3);
        a.raises = ThreadReason::Starvation;
        a.created = vec![(2, SimTime::from_ms(1_000) + SimDuration::from_us(360))];
        let m = a.mark();
        assert_eq!(m.kind, DecisionKind::Gate);
        assert!(m.raised && m.starved);
        assert_eq!(m.reason, Some(ThreadReason::Starvation));
        assert_eq!(m.goal, Some((2, 3)));
        assert_eq!(m.rule, "Starvation");
        // explain's shape: "what -> Reason: goal A -> B, thread N created".
        assert!(m.text.starts_with("gate tick: starved"), "{}", m.text);
        assert!(
            m.text
                .ends_with(" -> Starvation: goal 2 -> 3, thread 2 created 0.36 ms later"),
            "{}",
            m.text
        );
        let g = a.goal_mark();
        assert_eq!((g.previous, g.goal, g.reason), (Some(2), 3, "starvation"));
        assert_eq!(g.why.as_deref(), Some(m.text.as_str()));
    }

    #[test]
    fn recorded_adjustments_that_raise_nothing_are_low_marks_of_their_rule() {
        let kept = recorded(GoalReason::Initializing, "Initializing", Some(2), 2).mark();
        assert_eq!(kept.kind, DecisionKind::HillClimbing);
        assert!(!kept.raised && !kept.starved);
        assert_eq!(kept.reason, None);
        assert!(
            kept.text.ends_with("-> Initializing: goal stays 2"),
            "{}",
            kept.text
        );
        let lowered = recorded(GoalReason::ThreadTimedOut, "ThreadTimedOut", Some(5), 4).mark();
        assert_eq!(lowered.kind, DecisionKind::ThreadExit);
        assert!(!lowered.raised);
        assert!(
            lowered.text.ends_with("-> ThreadTimedOut: goal 5 -> 4"),
            "{}",
            lowered.text
        );
        let unknown = recorded(GoalReason::Other, "Reason9", None, 7).mark();
        assert_eq!(unknown.kind, DecisionKind::HillClimbing);
        assert_eq!((unknown.rule, unknown.goal), ("Other", None));
        assert!(
            unknown.text.ends_with("-> Reason9: goal set to 7"),
            "{}",
            unknown.text
        );
        let blocking = recorded(
            GoalReason::CooperativeBlocking,
            "CooperativeBlocking",
            Some(4),
            6,
        );
        let m = blocking.mark();
        assert_eq!(m.kind, DecisionKind::CooperativeBlocking);
        assert!(m.raised && !m.starved);
        assert_eq!(
            m.reason,
            Some(ThreadReason::HillClimbing),
            "the reason given"
        );
    }

    #[test]
    fn a_thread_no_decision_created_gets_its_own_line() {
        let mut d = DecisionLines::default();
        d.event(
            SimTime::ZERO,
            &TraceEvent::ThreadCreated {
                thread: 0,
                reason: ThreadReason::Dedicated,
            },
        );
        let (_, _, whys) = d.finish();
        assert_eq!(whys.len(), 1);
        assert!(whys[0].1.contains("dedicated"), "{}", whys[0].1);
    }
}
