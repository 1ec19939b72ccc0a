//! Colours and phase styles shared by the chart and its legend.
//!
//! Groups take a colour-blind-friendly categorical palette (Tableau 10) in
//! order of first appearance; thread-creation reasons have fixed colours so
//! "starvation" is the same red in every chart.

use crate::trace::{Phase, ThreadReason};

use super::canvas::Rgb;

const GROUP_PALETTE: [u32; 10] = [
    0x4e79a7, 0xf28e2b, 0x59a14f, 0xb07aa1, 0x76b7b2, 0xedc948, 0x9c755f, 0xff9da7, 0xe15759,
    0xbab0ac,
];

/// The colour of the `index`-th group in the legend.
pub(crate) fn group_color(index: usize) -> Rgb {
    Rgb::hex(GROUP_PALETTE[index % GROUP_PALETTE.len()])
}

/// Segments that belong to no item (pool-internal work).
pub(crate) const INTERNAL: Rgb = Rgb(85, 85, 85);
/// A thread starting up or waking.
pub(crate) const STARTING: Rgb = Rgb(170, 170, 170);
/// The lane background while a thread exists.
pub(crate) const ALIVE: Rgb = Rgb(236, 236, 236);
pub(crate) const TEXT: Rgb = Rgb(30, 30, 30);
pub(crate) const MUTED: Rgb = Rgb(100, 100, 100);
pub(crate) const GRID: Rgb = Rgb(214, 214, 214);
pub(crate) const FRAME: Rgb = Rgb(190, 190, 190);
pub(crate) const THREADS_LINE: Rgb = Rgb(31, 59, 115);
pub(crate) const GOAL_LINE: Rgb = Rgb(200, 70, 60);
pub(crate) const QUEUE_FILL: Rgb = Rgb(250, 214, 165);
pub(crate) const QUEUE_TEXT: Rgb = Rgb(196, 110, 20);
pub(crate) const PROBE_FAST: Rgb = Rgb(60, 160, 80);
pub(crate) const PROBE_SLOW: Rgb = Rgb(205, 40, 40);

/// The colour of a thread-creation mark.
pub(crate) fn reason_color(reason: ThreadReason) -> Rgb {
    match reason {
        ThreadReason::Demand => Rgb(70, 70, 70),
        ThreadReason::Starvation => Rgb(214, 39, 40),
        ThreadReason::HillClimbing => Rgb(120, 60, 180),
        ThreadReason::CooperativeBlocking => Rgb(255, 127, 14),
        ThreadReason::Dedicated => Rgb(23, 160, 180),
        ThreadReason::Main => Rgb(190, 140, 0),
        ThreadReason::Observed => Rgb(130, 130, 130),
    }
}

/// Legend order of the reasons.
pub(crate) const REASONS: [ThreadReason; 7] = [
    ThreadReason::Main,
    ThreadReason::Demand,
    ThreadReason::Starvation,
    ThreadReason::HillClimbing,
    ThreadReason::CooperativeBlocking,
    ThreadReason::Dedicated,
    ThreadReason::Observed,
];

/// Legend order of the phases, with their labels.
pub(crate) const PHASES: [(Phase, &str); 7] = [
    (Phase::Cpu, "CPU"),
    (Phase::Spin, "spin (holds a core)"),
    (Phase::Sleep, "Thread.Sleep"),
    (Phase::Wait, "Task.Wait: its timer callback not yet run"),
    (Phase::Join, "waiting for the parts of its parallel call"),
    (Phase::Internal, "pool-internal work"),
    (Phase::Starting, "thread starting"),
];

/// A phase's name in a tooltip.
pub(crate) fn phase_label(phase: Phase) -> &'static str {
    PHASES
        .iter()
        .find(|(p, _)| *p == phase)
        .map_or("idle", |(_, label)| label)
}

/// A decision that added nothing, and one whose starvation test held but
/// added no thread (the tick marks' colours; the heights tell them apart too).
pub(crate) const TICK_NO_CHANGE: Rgb = Rgb(140, 140, 140);
pub(crate) const TICK_STARVED: Rgb = Rgb(80, 80, 80);

/// The fill of a fully occupied pixel of `phase` for an item of colour `c`
/// (used where bars are too small for outlines and hatching).
pub(crate) fn dense_fill(c: Rgb, phase: Phase) -> Rgb {
    match phase {
        Phase::Cpu => c,
        Phase::Spin => c.tint(0.35),
        Phase::Sleep => c.tint(0.6),
        Phase::Wait => c.tint(0.6).mix(Rgb(120, 120, 120), 0.25),
        Phase::Join => c.tint(0.75),
        Phase::Internal => INTERNAL,
        Phase::Starting => STARTING,
        Phase::Idle => Rgb::WHITE,
    }
}
