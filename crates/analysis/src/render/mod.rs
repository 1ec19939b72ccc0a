//! Charts of runs: a renderer-neutral [`Timeline`] built from a trace, and
//! Gantt charts of one or more timelines as PNG or SVG, and the Chrome /
//! Perfetto trace of a run ([`chrome`]); the pool's decisions in
//! `poolsim explain`'s words ([`decisions`]) and a run's headline, what
//! happened in one line ([`headline()`]).
//!
//! ```no_run
//! // What this shows: simulate a scenario with detail events, build its
//! // timeline, and render it as a PNG in memory.
//! use poolsim_analysis::render::{self, ChartOptions, Timeline};
//! # fn demo(scenario: &poolsim_analysis::scenario::Scenario, policy: &poolsim_analysis::policy::PolicyConfig) {
//! let mut log = poolsim_analysis::trace::EventLog::default();
//! let run = poolsim_analysis::engine::simulate(scenario, policy, &mut log, &Default::default());
//! let timeline = Timeline::build(&run.trace, Some(&log.events));
//! let png = render::render_png(&[("net-classic".to_string(), timeline)], &ChartOptions::default())
//!     .unwrap();
//! assert!(png.starts_with(b"\x89PNG"));
//! # }
//! ```

mod axis;
mod canvas;
pub mod chrome;
pub mod decisions;
pub mod gantt;
pub mod headline;
pub mod html;
pub mod lines;
mod raster;
pub mod streamed;
mod style;
pub mod timeline;

pub use decisions::{DecisionKind, DecisionMark, GoalMark};
pub use gantt::{ChartOptions, render_png, render_svg};
pub use headline::{headline, with_headline};
pub use html::render_html;
pub use timeline::{
    CountPoint, ItemTimes, Lane, ProbeMark, QueuePoint, Segment, SegmentSource, ThreadMark,
    Timeline,
};

/// Why a chart could not be drawn.
#[derive(Debug, thiserror::Error)]
pub enum RenderError {
    #[error("nothing to draw: no timelines were given")]
    Empty,
    #[error("chart size: {0}")]
    Size(String),
    /// A [`ChartOptions::time_range`] that cannot be drawn.
    #[error("chart window: {0}")]
    Window(String),
    #[error("drawing the chart failed: {0}")]
    Draw(String),
    #[error("encoding the PNG failed: {0}")]
    Encode(String),
}
