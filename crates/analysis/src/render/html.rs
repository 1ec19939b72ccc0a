//! One self-contained, interactive HTML report of one or more runs: the
//! Gantt chart of [`super::gantt`] to zoom, pan and hover in a browser,
//! offline.
//!
//! The page holds everything it needs: its CSS and JavaScript (the files of
//! `render/html/`, inlined at build time) and the runs' data as JSON in a
//! `<script type="application/json" id="poolsim-data">` block, read from
//! the same [`Timeline`]s the PNG and SVG charts draw. Nothing is fetched:
//! no CDN, no font, no image. The page draws each run on a `<canvas>`, the
//! runs stacked on one time axis as `compare --png` stacks them: a lane per
//! thread with a bar per item phase coloured by group, the thread's
//! creation marked in its reason's colour; the threads, goal and queue
//! chart below; the strip of the pool's decisions (gate ticks, cooperative
//! blocking, hill climbing). Hovering tells, in `poolsim explain`'s words
//! ([`super::decisions`]): an item's group, queued, started and finished
//! times and thread; why a thread exists; what a decision read and decided.
//! Mouse wheel and drag, the `+`/`-`/arrow keys and the buttons zoom and
//! pan; `↑`/`↓` walk the threads, `[`/`]` the bars of a thread, `n`/`p`
//! the decisions, each showing its tooltip; a URL hash such as
//! `#hover=thread:4` shows one on load (`#view=FROM_MS,TO_MS` sets the
//! window).
//!
//! Size: a run's segments are kept exactly while the report holds at most
//! [`SEGMENT_BUDGET`] of them (each item's times too, for the tooltips);
//! past it they are merged per time step as the streamed chart merges them
//! ([`super::streamed`]): per lane and step, one bar as long as the step's
//! busy time in the phase and group that had most of it, saying how many
//! items it stands for; whole steps of one segment stay as they are. The
//! step is the run's span over 4096, doubled until the budget holds, a
//! fraction of a pixel on a screen-wide chart. The thread and queue series
//! keep, per step, their first, lowest, highest and last points (the
//! chart's per-pixel envelope); decisions, goal changes and the sentences
//! of thread lanes have budgets of their own, and the page says what it
//! left out. A run of 100,000 items stays well under 10 MB.
//!
//! The output is a pure function of the timelines and the window: no
//! timestamp, no random id, so the same run gives the same bytes.

use serde::Serialize;

use crate::time::SimTime;
use crate::trace::{ItemId, Phase};

use super::RenderError;
use super::axis::format_duration;
use super::axis::{format_ms, thousands};
use super::canvas::Rgb;
use super::decisions::{DecisionKind, DecisionMark};
use super::gantt::{ChartOptions, bar_fill, checked_window};
use super::raster::{PHASES, phase_index};
use super::style;
use super::timeline::{Lane, Segment, SegmentSource, Timeline};

/// The page's style sheet and script, inlined into every report.
const PAGE_CSS: &str = include_str!("html/report.css");
const PAGE_JS: &str = include_str!("html/report.js");
/// Installed before the page's script, so even its errors are reported in
/// the page (the `data-error` attribute and the `#error` box).
const ERROR_JS: &str = include_str!("html/error.js");

/// The most segments a report keeps exactly (over all its runs); past it
/// they are merged per time step.
pub const SEGMENT_BUDGET: usize = 1 << 17;
/// The most points a run's thread-count, queue or probe series keeps.
pub const SERIES_BUDGET: usize = 1 << 14;
/// The most decisions, and apart the most goal changes, a run keeps with
/// their sentences.
pub const DECISION_BUDGET: usize = 1 << 13;
/// The most thread lanes of a run that keep their "why" sentence.
pub const WHY_BUDGET: usize = 1 << 12;
/// Merge steps over the span at the first merge.
const STEPS: u64 = 4096;

/// Renders `timelines` (panel title, timeline), stacked on one time axis,
/// as one self-contained HTML page. A title's first line names its panel;
/// a second line (after a newline, as [`super::with_headline`] makes it) is
/// the run's headline. [`ChartOptions::time_range`] is the window the page
/// opens on (the same checks as the PNG's); the width and height are the
/// browser's.
pub fn render_html(
    timelines: &[(String, Timeline)],
    opts: &ChartOptions,
) -> Result<String, RenderError> {
    let json = report_data(timelines, opts)?;
    // `<` only occurs inside JSON strings, where `\u003c` means the same:
    // the block can then never close the script element early.
    let json = json.replace('<', "\\u003c");
    let names: Vec<&str> = timelines
        .iter()
        .map(|(title, t)| first_line(title, t))
        .collect();
    let title = format!(
        "poolsim: {} · {}",
        timelines[0].1.scenario,
        names.join(" vs ")
    );
    let mut out = String::with_capacity(json.len() + PAGE_JS.len() + PAGE_CSS.len() + 4096);
    out.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    out.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    out.push_str("<meta name=\"generator\" content=\"poolsim\">\n");
    out.push_str(&format!("<title>{}</title>\n", escape(&title)));
    out.push_str("<style>\n");
    out.push_str(PAGE_CSS);
    out.push_str("</style>\n<script>\n");
    out.push_str(ERROR_JS);
    out.push_str("</script>\n</head>\n<body>\n");
    out.push_str(&body(&title));
    out.push_str("<script type=\"application/json\" id=\"poolsim-data\">");
    out.push_str(&json);
    out.push_str("</script>\n<script>\n");
    out.push_str(PAGE_JS);
    out.push_str("</script>\n</body>\n</html>\n");
    Ok(out)
}

/// The data [`render_html`]'s page draws, as JSON (the page's
/// `#poolsim-data` block, before its `<` are escaped): the runs of
/// `timelines` as panels on one time axis, with the colours, phases and
/// reasons to draw them, within the report's budgets. The playground
/// (`crates/wasm`) gives the same JSON to the same script
/// (`PoolsimReport.render`) on every change. Errors as [`render_html`]'s.
pub fn report_data(
    timelines: &[(String, Timeline)],
    opts: &ChartOptions,
) -> Result<String, RenderError> {
    if timelines.is_empty() {
        return Err(RenderError::Empty);
    }
    let (run_end, window) = checked_window(timelines, opts)?;
    let window = window.map(|(from, to)| (from.as_nanos(), to.as_nanos()));
    let end = run_end.as_nanos().max(1);

    // Groups in order of first appearance over the panels, as the PNG's
    // legend colours them.
    let mut group_names: Vec<String> = Vec::new();
    for (_, t) in timelines {
        for g in &t.groups {
            if !group_names.contains(g) {
                group_names.push(g.clone());
            }
        }
    }
    let groups: Vec<GroupStyle> = group_names
        .iter()
        .enumerate()
        .map(|(i, name)| GroupStyle::of(name.clone(), style::group_color(i)))
        .collect();

    // One merge step for every panel: they share the time axis.
    let total: usize = timelines.iter().map(|(_, t)| t.segment_count()).sum();
    let resolution = if total <= SEGMENT_BUDGET {
        0
    } else {
        let mut r = (end / STEPS).max(1);
        loop {
            let kept: usize = timelines
                .iter()
                .flat_map(|(_, t)| &t.lanes)
                .map(|l| merge_lane(&l.segments, r).len())
                .sum();
            if kept <= SEGMENT_BUDGET {
                break r;
            }
            r = r.saturating_mul(2);
        }
    };

    let panels: Vec<PanelData<'_>> = timelines
        .iter()
        .map(|(title, t)| PanelData::of(title, t, &group_names, resolution, window))
        .collect();
    let page = Page {
        format: 1,
        end,
        window,
        phases: PHASES
            .iter()
            .map(|&p| PhaseStyle {
                name: p.name(),
                label: style::phase_label(p),
            })
            .collect(),
        reasons: style::REASONS
            .iter()
            .map(|&r| ReasonStyle {
                name: r.name(),
                color: hex(style::reason_color(r)),
            })
            .collect(),
        groups,
        internal: GroupStyle::of(String::new(), style::INTERNAL),
        colors: Colors::new(),
        panels,
    };
    serde_json::to_string(&page).map_err(|e| RenderError::Draw(format!("the report's data: {e}")))
}

/// The page's fixed markup; the script fills the panels, legend and tables.
fn body(title: &str) -> String {
    format!(
        r#"<header>
<h1>{title}</h1>
<p class="lead">Threads as lanes, each item's phases as bars, each thread's creation marked with its reason; the threads, the goal and the queue below, on the same time axis; the pool's decisions under them. Hover (or walk with the keys) for the details, in <code>poolsim explain</code>'s words.</p>
</header>
<noscript><p class="note">This report draws its charts with JavaScript: allow it for this file to see them.</p></noscript>
<pre id="error" role="alert" hidden></pre>
<nav class="controls" aria-label="Time axis">
<button type="button" id="zoom-in" aria-keyshortcuts="+" title="Zoom in (+)">Zoom in <kbd>+</kbd></button>
<button type="button" id="zoom-out" aria-keyshortcuts="-" title="Zoom out (−)">Zoom out <kbd>−</kbd></button>
<button type="button" id="pan-left" aria-keyshortcuts="ArrowLeft" title="Earlier (←)"><kbd>←</kbd> Earlier</button>
<button type="button" id="pan-right" aria-keyshortcuts="ArrowRight" title="Later (→)">Later <kbd>→</kbd></button>
<button type="button" id="reset" aria-keyshortcuts="0" title="The whole run (0)">Whole run <kbd>0</kbd></button>
<span id="range" aria-live="polite"></span>
</nav>
<p class="keys">Keys: <kbd>+</kbd> <kbd>−</kbd> zoom · <kbd>←</kbd> <kbd>→</kbd> pan · <kbd>0</kbd> the whole run · on a chart (<kbd>Tab</kbd> to it): <kbd>↑</kbd> <kbd>↓</kbd> a thread and why it exists · <kbd>[</kbd> <kbd>]</kbd> its bars · <kbd>n</kbd> <kbd>p</kbd> the pool's decisions · <kbd>Esc</kbd> hides the tooltip. Mouse: wheel zooms, drag pans.</p>
<main id="panels"></main>
<section id="legend" aria-label="Legend"></section>
<section id="tables"></section>
<output id="summary" aria-live="polite"></output>
<div id="tip" role="tooltip" hidden></div>
"#,
        title = escape(title)
    )
}

/// A panel's name: its title's first line, or the scenario's name.
fn first_line<'a>(title: &'a str, t: &'a Timeline) -> &'a str {
    let line = title.split('\n').next().unwrap_or("").trim();
    if line.is_empty() {
        t.scenario.as_str()
    } else {
        line
    }
}

/// Text for HTML: `&`, `<`, `>` and `"` escaped.
fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            _ => out.push(c),
        }
    }
    out
}

fn hex(c: Rgb) -> String {
    format!("#{:02x}{:02x}{:02x}", c.0, c.1, c.2)
}

#[derive(Serialize)]
struct Page<'a> {
    format: u32,
    /// The shared time axis ends here (ns).
    end: u64,
    /// The window the page opens on (ns), if one was asked for.
    window: Option<(u64, u64)>,
    /// By phase index (the segments' phase numbers).
    phases: Vec<PhaseStyle>,
    /// By reason index (the lanes' reason numbers), in legend order.
    reasons: Vec<ReasonStyle>,
    /// By group index (the segments' group numbers), over all panels.
    groups: Vec<GroupStyle>,
    /// Work that belongs to no item (pool-internal).
    internal: GroupStyle,
    colors: Colors,
    panels: Vec<PanelData<'a>>,
}

#[derive(Serialize)]
struct PhaseStyle {
    name: &'static str,
    label: &'static str,
}

#[derive(Serialize)]
struct ReasonStyle {
    name: &'static str,
    color: String,
}

/// A group's colours: its own, and per phase index a wide bar's fill, a
/// fully busy pixel's fill, and that fill for every other item.
#[derive(Serialize)]
struct GroupStyle {
    name: String,
    base: String,
    bar: Vec<String>,
    dense: Vec<String>,
    alternate: Vec<String>,
    /// A `Task.Wait` bar's outline.
    wait_line: String,
}

impl GroupStyle {
    fn of(name: String, c: Rgb) -> GroupStyle {
        let dense: Vec<Rgb> = PHASES.iter().map(|&p| style::dense_fill(c, p)).collect();
        GroupStyle {
            name,
            base: hex(c),
            bar: PHASES.iter().map(|&p| hex(bar_fill(c, p))).collect(),
            dense: dense.iter().map(|&d| hex(d)).collect(),
            alternate: dense
                .iter()
                .map(|&d| hex(d.mix(Rgb(0, 0, 0), 0.1)))
                .collect(),
            wait_line: hex(c.mix(Rgb(90, 90, 90), 0.3)),
        }
    }
}

/// The chart's fixed colours (render/style.rs).
#[derive(Serialize)]
struct Colors {
    text: String,
    muted: String,
    grid: String,
    frame: String,
    alive: String,
    internal: String,
    starting: String,
    threads: String,
    goal: String,
    queue_fill: String,
    queue_text: String,
    probe_fast: String,
    probe_slow: String,
    tick_none: String,
    tick_starved: String,
}

impl Colors {
    fn new() -> Colors {
        Colors {
            text: hex(style::TEXT),
            muted: hex(style::MUTED),
            grid: hex(style::GRID),
            frame: hex(style::FRAME),
            alive: hex(style::ALIVE),
            internal: hex(style::INTERNAL),
            starting: hex(style::STARTING),
            threads: hex(style::THREADS_LINE),
            goal: hex(style::GOAL_LINE),
            queue_fill: hex(style::QUEUE_FILL),
            queue_text: hex(style::QUEUE_TEXT),
            probe_fast: hex(style::PROBE_FAST),
            probe_slow: hex(style::PROBE_SLOW),
            tick_none: hex(style::TICK_NO_CHANGE),
            tick_starved: hex(style::TICK_STARVED),
        }
    }
}

/// One run's data. Times are integer nanoseconds; the long series are flat
/// arrays of fixed-size tuples, times delta-coded (see each field).
#[derive(Serialize)]
struct PanelData<'a> {
    name: &'a str,
    headline: Option<&'a str>,
    /// The facts line under the headline, as the PNG's title has it.
    facts: String,
    scenario: &'a str,
    policy: &'a str,
    seed: u64,
    cores: u32,
    items: usize,
    unfinished: usize,
    end: u64,
    /// "phases" (every phase of every item) or "items" (one bar an item).
    source: &'static str,
    /// The merge step of the segments in ns; 0: exact.
    resolution: u64,
    /// Segments before merging.
    segments: usize,
    max_threads: u32,
    max_queue: u64,
    lanes: Vec<LaneData<'a>>,
    /// Per started item, in item order: id − previous id, queued −
    /// previous queued, started − queued, finished − started (−1: not
    /// finished), thread. Empty when the segments are merged.
    item_times: Vec<i64>,
    /// Thread counts: at − previous at, threads, goal (−1: none).
    threads: Vec<i64>,
    /// Queue length: at − previous at, queued.
    queue: Vec<i64>,
    /// Probes: queued − previous queued, latency (−1: never ran).
    probes: Vec<i64>,
    decisions: Vec<DecisionData<'a>>,
    goals: Vec<GoalData<'a>>,
    /// What the budgets left out.
    left_out: LeftOut,
}

#[derive(Serialize, Default)]
struct LeftOut {
    item_times: usize,
    decisions: usize,
    goals: usize,
    whys: usize,
    thread_points: usize,
    queue_points: usize,
    probes: usize,
}

#[derive(Serialize)]
struct LaneData<'a> {
    thread: u32,
    created: u64,
    exited: Option<u64>,
    /// Index into the page's reasons.
    reason: usize,
    /// `poolsim explain`'s sentence for the decision that created it.
    why: Option<&'a str>,
    /// Per segment: start − previous end, duration, item (id + 1; 0 none;
    /// −n a merged bar of n items), group (index + 1; 0 none), phase.
    segs: Vec<i64>,
}

#[derive(Serialize)]
struct DecisionData<'a> {
    at: u64,
    /// The strip's row: 0 gate, 1 cooperative blocking, 2 hill climbing.
    row: u8,
    /// 0 changed nothing, 1 starved but no thread added, 2 added a thread
    /// or raised the goal.
    level: u8,
    /// Index into the page's reasons, when it raised (−1 otherwise).
    reason: i64,
    kind: &'static str,
    rule: &'static str,
    goal: Option<(u32, u32)>,
    text: &'a str,
}

#[derive(Serialize)]
struct GoalData<'a> {
    at: u64,
    previous: Option<u32>,
    goal: u32,
    reason: &'static str,
    why: Option<&'a str>,
}

impl<'a> PanelData<'a> {
    fn of(
        title: &'a str,
        t: &'a Timeline,
        group_names: &[String],
        resolution: u64,
        window: Option<(u64, u64)>,
    ) -> PanelData<'a> {
        let name = first_line(title, t);
        let headline = title
            .split_once('\n')
            .map(|(_, h)| h.trim())
            .filter(|h| !h.is_empty());
        // The panel's group numbers as the page's.
        let groups: Vec<i64> = t
            .groups
            .iter()
            .map(|g| group_names.iter().position(|n| n == g).unwrap_or(0) as i64)
            .collect();
        let mut left_out = LeftOut::default();
        let mut whys = 0;
        let lanes: Vec<LaneData<'a>> = t
            .lanes
            .iter()
            .map(|lane| {
                let why = lane.why.as_deref().filter(|_| {
                    whys += 1;
                    whys <= WHY_BUDGET
                });
                if lane.why.is_some() && why.is_none() {
                    left_out.whys += 1;
                }
                LaneData {
                    thread: lane.thread,
                    created: lane.created.as_nanos(),
                    exited: lane.exited.map(SimTime::as_nanos),
                    reason: style::REASONS
                        .iter()
                        .position(|r| *r == lane.reason)
                        .unwrap_or(0),
                    why,
                    segs: lane_segments(lane, resolution, &groups),
                }
            })
            .collect();
        let item_times = if resolution == 0 {
            let kept = &t.item_times[..t.item_times.len().min(SEGMENT_BUDGET)];
            left_out.item_times = t.item_times.len() - kept.len();
            let mut out = Vec::with_capacity(kept.len() * 5);
            let (mut id, mut queued) = (-1i64, 0i64);
            for i in kept {
                let q = i.queued.as_nanos() as i64;
                let s = i.started.as_nanos() as i64;
                out.push(i64::from(i.item) - id);
                out.push(q - queued);
                out.push(s - q);
                out.push(i.finished.map_or(-1, |f| f.as_nanos() as i64 - s));
                out.push(i64::from(i.thread));
                id = i64::from(i.item);
                queued = q;
            }
            out
        } else {
            left_out.item_times = t.item_times.len();
            Vec::new()
        };
        let end = t.end.as_nanos().max(1);
        let counts: Vec<(u64, i64, i64)> = t
            .threads
            .iter()
            .map(|c| {
                (
                    c.at.as_nanos(),
                    i64::from(c.threads),
                    c.goal.map_or(-1, i64::from),
                )
            })
            .collect();
        let counts = thin_series(&counts, end);
        left_out.thread_points = t.threads.len() - counts.len();
        let mut threads = Vec::with_capacity(counts.len() * 3);
        let mut last = 0u64;
        for &(at, n, goal) in &counts {
            threads.extend([(at - last) as i64, n, goal]);
            last = at;
        }
        let queued: Vec<(u64, i64, i64)> = t
            .queue
            .iter()
            .map(|q| (q.at.as_nanos(), q.queued as i64, 0))
            .collect();
        let queued = thin_series(&queued, end);
        left_out.queue_points = t.queue.len() - queued.len();
        let mut queue = Vec::with_capacity(queued.len() * 2);
        let mut last = 0u64;
        for &(at, n, _) in &queued {
            queue.extend([(at - last) as i64, n]);
            last = at;
        }
        let probes_kept = thin_probes(t, end);
        left_out.probes = t.probes.len() - probes_kept.len();
        let mut probes = Vec::with_capacity(probes_kept.len() * 2);
        let mut last = 0u64;
        for (queued, latency) in probes_kept {
            probes.extend([(queued - last) as i64, latency]);
            last = queued;
        }
        let marks: Vec<&DecisionMark> = t
            .decisions
            .iter()
            .filter(|d| row_of(d.kind).is_some())
            .collect();
        let kept = pick_decisions(&marks);
        left_out.decisions = marks.len() - kept.len();
        let decisions = kept
            .into_iter()
            .map(|d| DecisionData {
                at: d.at.as_nanos(),
                row: row_of(d.kind).unwrap_or(0),
                level: level_of(d),
                reason: d
                    .reason
                    .and_then(|r| style::REASONS.iter().position(|x| *x == r))
                    .map_or(-1, |i| i as i64),
                kind: d.kind.name(),
                rule: d.rule,
                goal: d.goal,
                text: &d.text,
            })
            .collect();
        let goal_step = t.goals.len().div_ceil(DECISION_BUDGET).max(1);
        let goals: Vec<GoalData<'a>> = t
            .goals
            .iter()
            .step_by(goal_step)
            .map(|g| GoalData {
                at: g.at.as_nanos(),
                previous: g.previous,
                goal: g.goal,
                reason: g.reason,
                why: g.why.as_deref(),
            })
            .collect();
        left_out.goals = t.goals.len() - goals.len();
        PanelData {
            name,
            headline,
            facts: facts(t, window),
            scenario: &t.scenario,
            policy: &t.policy,
            seed: t.seed,
            cores: t.cores,
            items: t.items,
            unfinished: t.unfinished,
            end: t.end.as_nanos(),
            source: match t.source {
                SegmentSource::Phases => "phases",
                SegmentSource::Items => "items",
            },
            resolution,
            segments: t.segment_count(),
            max_threads: t.max_threads(),
            max_queue: t.max_queue(),
            lanes,
            item_times,
            threads,
            queue,
            probes,
            decisions,
            goals,
            left_out,
        }
    }
}

/// The facts under a panel's headline, as the PNG's title gives them.
fn facts(t: &Timeline, window: Option<(u64, u64)>) -> String {
    let busy = t.busy_until();
    let mut facts = Vec::new();
    if let Some((a, b)) = window {
        facts.push(format!(
            "the report opens on {}–{} of the run",
            format_ms(SimTime(a)),
            format_ms(SimTime(b))
        ));
    }
    facts.extend([
        format!("scenario: {}", t.scenario),
        format!("policy: {}", t.policy),
        format!("seed {}", t.seed),
        format!("{} core{}", t.cores, if t.cores == 1 { "" } else { "s" }),
        format!("{} items", thousands(t.items as u64)),
        format!("{} threads created", thousands(t.lanes.len() as u64)),
        format!("peak {} threads", t.max_threads()),
    ]);
    if t.unfinished > 0 {
        facts.push(format!(
            "run stopped at {} with {} items unfinished",
            format_duration(t.end.since(SimTime::ZERO)),
            thousands(t.unfinished as u64)
        ));
    } else if busy > SimTime::ZERO {
        facts.push(format!(
            "last item ends at {}",
            format_duration(busy.since(SimTime::ZERO))
        ));
    }
    if let Some(lat) = t.max_probe_latency() {
        facts.push(format!("probe latency max {}", format_duration(lat)));
    }
    facts.join("  ·  ")
}

/// The decisions strip's row of a decision (thread exits have none).
fn row_of(kind: DecisionKind) -> Option<u8> {
    match kind {
        DecisionKind::Gate => Some(0),
        DecisionKind::CooperativeBlocking => Some(1),
        DecisionKind::HillClimbing => Some(2),
        DecisionKind::ThreadExit => None,
    }
}

/// How strongly a decision is marked (the PNG's tick levels).
fn level_of(d: &DecisionMark) -> u8 {
    if d.raised {
        2
    } else if d.starved {
        1
    } else {
        0
    }
}

/// At most [`DECISION_BUDGET`] decisions, the strongest first, in time
/// order.
fn pick_decisions<'a>(marks: &[&'a DecisionMark]) -> Vec<&'a DecisionMark> {
    if marks.len() <= DECISION_BUDGET {
        return marks.to_vec();
    }
    let mut order: Vec<usize> = (0..marks.len()).collect();
    order.sort_by_key(|&i| (std::cmp::Reverse(level_of(marks[i])), i));
    order.truncate(DECISION_BUDGET);
    order.sort_unstable();
    order.into_iter().map(|i| marks[i]).collect()
}

/// A step series of `(at, value, other)` within [`SERIES_BUDGET`] points:
/// past it, per time step, the first, lowest and highest (of either
/// value) and last points, in time order.
fn thin_series(points: &[(u64, i64, i64)], end: u64) -> Vec<(u64, i64, i64)> {
    if points.len() <= SERIES_BUDGET {
        return points.to_vec();
    }
    let mut step = (end / (SERIES_BUDGET as u64 / 8)).max(1);
    loop {
        let mut out: Vec<(u64, i64, i64)> = Vec::new();
        let mut i = 0;
        while i < points.len() {
            let bucket = points[i].0 / step;
            let mut j = i;
            while j < points.len() && points[j].0 / step == bucket {
                j += 1;
            }
            let slice = &points[i..j];
            let mut keep = vec![0, slice.len() - 1];
            let by = |f: &dyn Fn(&(u64, i64, i64)) -> i64, max: bool| {
                let mut best = 0;
                for (k, p) in slice.iter().enumerate() {
                    let better = if max {
                        f(p) > f(&slice[best])
                    } else {
                        f(p) < f(&slice[best])
                    };
                    if better {
                        best = k;
                    }
                }
                best
            };
            keep.push(by(&|p| p.1, false));
            keep.push(by(&|p| p.1, true));
            keep.push(by(&|p| p.2, false));
            keep.push(by(&|p| p.2, true));
            keep.sort_unstable();
            keep.dedup();
            out.extend(keep.into_iter().map(|k| slice[k]));
            i = j;
        }
        if out.len() <= SERIES_BUDGET {
            return out;
        }
        step = step.saturating_mul(2);
    }
}

/// The probes as `(queued, latency or −1)`, within [`SERIES_BUDGET`]: past
/// it, per time step, the one that waited longest.
fn thin_probes(t: &Timeline, end: u64) -> Vec<(u64, i64)> {
    let all: Vec<(u64, i64)> = t
        .probes
        .iter()
        .map(|p| {
            (
                p.queued.as_nanos(),
                p.latency().map_or(-1, |l| l.as_nanos() as i64),
            )
        })
        .collect();
    if all.len() <= SERIES_BUDGET {
        return all;
    }
    let worse = |a: i64, b: i64| a == -1 || (b != -1 && a > b);
    let mut step = (end / (SERIES_BUDGET as u64 / 2)).max(1);
    loop {
        let mut out: Vec<(u64, i64)> = Vec::new();
        let mut bucket = u64::MAX;
        for &(q, lat) in &all {
            if q / step == bucket
                && let Some(last) = out.last_mut()
            {
                if worse(lat, last.1) {
                    *last = (q, lat);
                }
                continue;
            }
            bucket = q / step;
            out.push((q, lat));
        }
        if out.len() <= SERIES_BUDGET {
            return out;
        }
        step = step.saturating_mul(2);
    }
}

/// A bar of the page: a segment, or a step's merged segments.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Bar {
    start: u64,
    end: u64,
    /// The item, when the bar is one item's.
    item: Option<ItemId>,
    /// How many items the bar stands for.
    items: u32,
    group: Option<u32>,
    phase: Phase,
}

/// A lane's segments as the page's flat tuples (see [`LaneData::segs`]),
/// merged at `resolution` (0: exact); `groups` maps the timeline's group
/// numbers to the page's.
fn lane_segments(lane: &Lane, resolution: u64, groups: &[i64]) -> Vec<i64> {
    let bars = merge_lane(&lane.segments, resolution);
    let mut out = Vec::with_capacity(bars.len() * 5);
    let mut last = 0u64;
    for b in bars {
        out.push(b.start as i64 - last as i64);
        out.push((b.end - b.start) as i64);
        out.push(match (b.item, b.items) {
            (Some(i), _) => i64::from(i) + 1,
            (None, 0 | 1) => 0,
            (None, n) => -i64::from(n),
        });
        out.push(
            b.group
                .map_or(0, |g| groups.get(g as usize).copied().unwrap_or(0) + 1),
        );
        out.push(phase_index(b.phase) as i64);
        last = b.end;
    }
    out
}

/// `segments` (in start order) as bars: each segment while `resolution` is
/// 0; otherwise per step of `resolution` ns one bar from the step's first
/// busy instant, as long as its busy time, in the phase and group that had
/// most of it (whole steps of one segment stay one bar).
fn merge_lane(segments: &[Segment], resolution: u64) -> Vec<Bar> {
    let bar_of = |s: &Segment, start: u64, end: u64| Bar {
        start,
        end,
        item: s.item,
        items: u32::from(s.item.is_some()),
        group: s.group,
        phase: s.phase,
    };
    if resolution == 0 {
        return segments
            .iter()
            .map(|s| bar_of(s, s.start.as_nanos(), s.end.as_nanos()))
            .collect();
    }
    let mut out = Vec::new();
    let mut open: Option<OpenStep> = None;
    for s in segments {
        let (mut a, b) = (s.start.as_nanos(), s.end.as_nanos());
        while a < b {
            let k = a / resolution;
            let step_end = (k + 1).saturating_mul(resolution);
            if a == k * resolution && b >= step_end {
                if let Some(o) = open.take() {
                    out.push(o.bar());
                }
                let whole_end = b / resolution * resolution;
                out.push(bar_of(s, a, whole_end));
                a = whole_end;
                continue;
            }
            let piece_end = b.min(step_end);
            if open.as_ref().is_some_and(|o| o.index != k)
                && let Some(o) = open.take()
            {
                out.push(o.bar());
            }
            let o = open.get_or_insert_with(|| OpenStep {
                index: k,
                start: a,
                busy: 0,
                by_key: Vec::new(),
                item: s.item,
                items: 0,
                last_item: None,
            });
            let d = piece_end - a;
            o.busy += d;
            match o
                .by_key
                .iter_mut()
                .find(|e| e.0 == s.phase && e.1 == s.group)
            {
                Some(e) => e.2 += d,
                None => o.by_key.push((s.phase, s.group, d)),
            }
            if s.item.is_some() && s.item != o.last_item {
                o.items += 1;
                o.last_item = s.item;
            }
            if s.item != o.item {
                o.item = None;
            }
            a = piece_end;
        }
    }
    if let Some(o) = open.take() {
        out.push(o.bar());
    }
    out
}

/// The merge step being filled.
struct OpenStep {
    index: u64,
    start: u64,
    busy: u64,
    by_key: Vec<(Phase, Option<u32>, u64)>,
    /// The item, while every piece is that one item's.
    item: Option<ItemId>,
    items: u32,
    last_item: Option<ItemId>,
}

impl OpenStep {
    fn bar(self) -> Bar {
        let mut best = (Phase::Cpu, None, 0u64);
        for &e in &self.by_key {
            if e.2 > best.2 {
                best = e;
            }
        }
        Bar {
            start: self.start,
            end: self.start + self.busy,
            item: self.item.filter(|_| self.items <= 1),
            items: self.items,
            group: best.1,
            phase: best.0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::{ItemRecord, ThreadReason, ThreadRecord, Trace};

    fn timeline(items: usize) -> Timeline {
        let trace = Trace {
            scenario: "s <b>".into(),
            policy: "p".into(),
            seed: 1,
            cores: 2,
            groups: vec!["g</script>".into()],
            items: (0..items)
                .map(|i| ItemRecord {
                    item: i as u32,
                    group: 0,
                    thread: (i % 2) as u32,
                    queued: SimTime(0),
                    started: SimTime::from_ms(i as u64 / 2),
                    finished: SimTime::from_ms(i as u64 / 2 + 1),
                })
                .collect(),
            threads: (0..2)
                .map(|i| ThreadRecord {
                    thread: i,
                    created: SimTime(0),
                    reason: ThreadReason::Demand,
                    exited: None,
                })
                .collect(),
            probes: vec![],
            counts: vec![],
            cpu_busy_ns: None,
            end: SimTime::from_ms(items as u64 / 2 + 1),
        };
        Timeline::build(&trace, None)
    }

    fn data(html: &str) -> serde_json::Value {
        let start = html.find("id=\"poolsim-data\">").unwrap() + "id=\"poolsim-data\">".len();
        let end = start + html[start..].find("</script>").unwrap();
        serde_json::from_str(&html[start..end]).unwrap()
    }

    #[test]
    fn the_data_block_cannot_close_its_script_and_round_trips() {
        let html = render_html(
            &[("a\nits headline".into(), timeline(10))],
            &ChartOptions::default(),
        )
        .unwrap();
        assert!(!html.contains("g</script>"));
        let v = data(&html);
        assert_eq!(v["groups"][0]["name"], "g</script>");
        assert_eq!(v["panels"][0]["headline"], "its headline");
        assert_eq!(v["panels"][0]["resolution"], 0);
        assert_eq!(v["panels"][0]["item_times"].as_array().unwrap().len(), 50);
        assert!(html.contains("<title>poolsim: s &lt;b&gt; · a</title>"));
    }

    #[test]
    fn the_report_data_is_the_page_s_data_block() {
        let panels = [("a\nits headline".to_string(), timeline(10))];
        let opts = ChartOptions::default();
        let json = report_data(&panels, &opts).unwrap();
        let html = render_html(&panels, &opts).unwrap();
        // The block is the data with its `<` escaped, and reads the same.
        assert!(json.contains("g</script>"));
        assert!(html.contains(&json.replace('<', "\\u003c")));
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&json).unwrap(),
            data(&html)
        );
        assert!(matches!(report_data(&[], &opts), Err(RenderError::Empty)));
    }

    #[test]
    fn many_segments_merge_within_the_budget() {
        let t = timeline(SEGMENT_BUDGET + 10);
        let html = render_html(&[("a".into(), t)], &ChartOptions::default()).unwrap();
        let v = data(&html);
        let p = &v["panels"][0];
        assert!(p["resolution"].as_u64().unwrap() > 0);
        let bars: usize = p["lanes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| l["segs"].as_array().unwrap().len() / 5)
            .sum();
        assert!(bars <= SEGMENT_BUDGET, "{bars}");
        assert!(p["item_times"].as_array().unwrap().is_empty());
        // Every merged bar stands for the items it merged.
        let items: i64 = p["lanes"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|l| {
                l["segs"]
                    .as_array()
                    .unwrap()
                    .chunks(5)
                    .map(|c| c[2].as_i64().unwrap())
            })
            .map(|i| if i > 0 { 1 } else { -i })
            .sum();
        assert!(items >= (SEGMENT_BUDGET + 10) as i64, "{items}");
    }

    #[test]
    fn merging_keeps_busy_time_and_whole_steps() {
        let seg = |a: u64, b: u64, item: u32| Segment {
            start: SimTime(a),
            end: SimTime(b),
            item: Some(item),
            group: Some(0),
            phase: Phase::Cpu,
        };
        let bars = merge_lane(&[seg(0, 3, 0), seg(5, 8, 1), seg(10, 40, 2)], 10);
        assert_eq!(
            bars.iter()
                .map(|b| (b.start, b.end, b.items))
                .collect::<Vec<_>>(),
            vec![(0, 6, 2), (10, 40, 1)]
        );
        assert_eq!(bars[1].item, Some(2));
    }

    #[test]
    fn a_window_outside_the_run_is_refused() {
        let opts = ChartOptions {
            time_range: Some((SimTime::from_ms(10_000), SimTime::MAX)),
            ..ChartOptions::default()
        };
        assert!(matches!(
            render_html(&[("a".into(), timeline(4))], &opts),
            Err(RenderError::Window(_))
        ));
        assert!(matches!(
            render_html(&[], &ChartOptions::default()),
            Err(RenderError::Empty)
        ));
    }
}
