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

/// The colour of a thread-creation mark. Each pair stays apart for
/// colour-blind readers (CIELAB ΔE of at least 9 under simulated protanopia
/// and deuteranopia, Machado et al. 2009); the main thread's is the
/// Okabe-Ito blue, since a dark yellow read as cooperative blocking's
/// orange under protanopia (ΔE 2).
pub(crate) fn reason_color(reason: ThreadReason) -> Rgb {
    match reason {
        ThreadReason::Demand => Rgb(70, 70, 70),
        ThreadReason::Starvation => Rgb(214, 39, 40),
        ThreadReason::HillClimbing => Rgb(120, 60, 180),
        ThreadReason::CooperativeBlocking => Rgb(255, 127, 14),
        ThreadReason::Dedicated => Rgb(23, 160, 180),
        ThreadReason::Main => Rgb(0, 114, 178),
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

#[cfg(test)]
mod tests {
    use super::*;

    /// sRGB to linear light.
    fn linear(c: u8) -> f64 {
        let c = f64::from(c) / 255.0;
        if c <= 0.04045 {
            c / 12.92
        } else {
            ((c + 0.055) / 1.055).powf(2.4)
        }
    }

    /// CIELAB (D65) of linear RGB.
    fn lab(l: [f64; 3]) -> [f64; 3] {
        let x = 0.4124 * l[0] + 0.3576 * l[1] + 0.1805 * l[2];
        let y = 0.2126 * l[0] + 0.7152 * l[1] + 0.0722 * l[2];
        let z = 0.0193 * l[0] + 0.1192 * l[1] + 0.9505 * l[2];
        let f = |t: f64| {
            if t > 0.008856 {
                t.cbrt()
            } else {
                7.787 * t + 16.0 / 116.0
            }
        };
        let (fx, fy, fz) = (f(x / 0.95047), f(y), f(z / 1.08883));
        [116.0 * fy - 16.0, 500.0 * (fx - fy), 200.0 * (fy - fz)]
    }

    /// The colour as a reader with a full dichromacy sees it (Machado,
    /// Oliveira and Fernandes 2009, severity 1.0).
    fn seen(c: Rgb, m: &[[f64; 3]; 3]) -> [f64; 3] {
        let l = [linear(c.0), linear(c.1), linear(c.2)];
        let mut o = [0.0; 3];
        for (i, row) in m.iter().enumerate() {
            o[i] = (row[0] * l[0] + row[1] * l[1] + row[2] * l[2]).clamp(0.0, 1.0);
        }
        lab(o)
    }

    #[test]
    fn thread_reasons_stay_apart_for_colour_blind_readers() {
        let protan = [
            [0.152286, 1.052583, -0.204868],
            [0.114503, 0.786281, 0.099216],
            [-0.003882, -0.048116, 1.051998],
        ];
        let deutan = [
            [0.367322, 0.860646, -0.227968],
            [0.280085, 0.672501, 0.047413],
            [-0.011820, 0.042940, 0.968881],
        ];
        for (name, m) in [("protanopia", protan), ("deuteranopia", deutan)] {
            for (i, a) in REASONS.iter().enumerate() {
                for b in &REASONS[i + 1..] {
                    let (x, y) = (seen(reason_color(*a), &m), seen(reason_color(*b), &m));
                    let de =
                        ((x[0] - y[0]).powi(2) + (x[1] - y[1]).powi(2) + (x[2] - y[2]).powi(2))
                            .sqrt();
                    assert!(de >= 9.0, "{name}: {a:?} and {b:?} are ΔE {de:.1} apart");
                }
            }
        }
    }
}
