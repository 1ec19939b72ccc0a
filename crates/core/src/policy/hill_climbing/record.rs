//! The record of hill climbing's decisions: why the goal changed
//! ([`Transition`]) and what one accepted sample computed
//! ([`AdjustmentStats`]), turned into a trace [`Decision`].
//!
//! [`Transition`] follows `HillClimbingStateTransition` of dotnet/coreclr
//! `src/vm/hillclimbing.h`, with the .NET 6+ `CooperativeBlocking` of
//! `StateOrTransition` in dotnet/runtime `PortableThreadPool.HillClimbing.cs`;
//! [`AdjustmentStats`] is the payload of the
//! `ThreadPoolWorkerThreadAdjustmentStats` ETW event that `HillClimbing::Update`
//! (`src/vm/hillclimbing.cpp`) fires for each sample.

use crate::time::SimDuration;
use crate::trace::{Decision, GoalReason};

/// `HillClimbingStateTransition` (hillclimbing.h), plus the .NET 6+
/// `CooperativeBlocking` reason of `PortableThreadPool`'s
/// `StateOrTransition`. The 3.1 enum ends with `Undefined` instead.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transition {
    /// Not enough history yet to measure the wave.
    Warmup,
    /// The pool changed the thread count without telling hill climbing.
    Initializing,
    /// Declared by CoreCLR, never produced.
    RandomMove,
    /// A move computed from the measured throughput/thread ratio.
    ClimbingMove,
    /// Declared by CoreCLR, never produced.
    ChangePoint,
    /// History long enough but no thread-count wave to measure against.
    Stabilizing,
    /// The gate thread detected starvation and raised the goal.
    Starvation,
    /// An idle worker exited and lowered the goal.
    ThreadTimedOut,
    /// .NET 6+: the goal changed because of cooperative blocking.
    CooperativeBlocking,
}

impl From<Transition> for GoalReason {
    fn from(t: Transition) -> GoalReason {
        match t {
            Transition::Warmup => GoalReason::Warmup,
            Transition::Initializing => GoalReason::Initializing,
            Transition::RandomMove => GoalReason::RandomMove,
            Transition::ClimbingMove => GoalReason::ClimbingMove,
            Transition::ChangePoint => GoalReason::ChangePoint,
            Transition::Stabilizing => GoalReason::Stabilizing,
            Transition::Starvation => GoalReason::Starvation,
            Transition::ThreadTimedOut => GoalReason::ThreadTimedOut,
            Transition::CooperativeBlocking => GoalReason::CooperativeBlocking,
        }
    }
}

impl Transition {
    pub fn name(self) -> &'static str {
        match self {
            Transition::Warmup => "Warmup",
            Transition::Initializing => "Initializing",
            Transition::RandomMove => "RandomMove",
            Transition::ClimbingMove => "ClimbingMove",
            Transition::ChangePoint => "ChangePoint",
            Transition::Stabilizing => "Stabilizing",
            Transition::Starvation => "Starvation",
            Transition::ThreadTimedOut => "ThreadTimedOut",
            Transition::CooperativeBlocking => "CooperativeBlocking",
        }
    }
}

/// What one accepted sample computed: the payload of CoreCLR's
/// `ThreadPoolWorkerThreadAdjustmentStats` ETW event, for tracing.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AdjustmentStats {
    /// Duration of the sample, including any accumulated short samples.
    pub sample_duration_secs: f64,
    /// Completions per second over that duration.
    pub throughput: f64,
    /// Real part of the thread-count wave component (relative to the mean).
    pub thread_wave: f64,
    /// Real part of the throughput wave component (relative to the mean).
    pub throughput_wave: f64,
    /// Throughput magnitude at the neighbouring frequencies.
    pub throughput_error_estimate: f64,
    /// Smoothed noise estimate.
    pub average_throughput_noise: f64,
    /// Real part of the adjusted throughput/thread ratio.
    pub ratio: f64,
    pub confidence: f64,
    /// Control setting after the move and the clamps.
    pub control_setting: f64,
    pub wave_magnitude: u32,
    /// Whether the square wave is in its high half (the goal is the control
    /// setting plus the magnitude).
    pub wave_high: bool,
    /// The move of the control setting this sample (before the clamps).
    pub step: f64,
    /// The sample's transition (`Warmup`, `ClimbingMove`, `Stabilizing`),
    /// whether or not the thread count changed.
    pub transition: Transition,
    /// Whether the sample first adopted a goal someone else set
    /// (`Initializing`).
    pub adopted: bool,
}

impl AdjustmentStats {
    /// The sample as a [`Decision`]: the goal before and after, `unit_ns`
    /// the nanoseconds in one unit of the sample duration the climber was
    /// given (1e9: seconds; Mono's port passes milliseconds, 1e6), and the
    /// CPU reading it saw.
    pub fn decision(
        &self,
        (goal, new_goal): (u32, u32),
        unit_ns: f64,
        cpu_percent: u32,
    ) -> Decision {
        let sample_ns = self.sample_duration_secs * unit_ns;
        let sample = if sample_ns.is_finite() && sample_ns >= 0.0 && sample_ns < u64::MAX as f64 {
            SimDuration(sample_ns as u64)
        } else {
            SimDuration::ZERO
        };
        Decision::HillClimbing {
            transition: self.transition.name(),
            adopted: self.adopted,
            throughput: self.throughput * 1e9 / unit_ns,
            sample,
            thread_wave: self.thread_wave,
            throughput_wave: self.throughput_wave,
            ratio: self.ratio,
            confidence: self.confidence,
            step: self.step,
            control_setting: self.control_setting,
            wave_magnitude: self.wave_magnitude,
            wave_high: self.wave_high,
            cpu_percent,
            goal,
            new_goal,
        }
    }
}
