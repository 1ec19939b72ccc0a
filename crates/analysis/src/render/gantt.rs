//! Gantt charts of runs, as PNG or SVG: one panel per run, stacked on a
//! shared time axis so policies can be compared at a glance.
//!
//! Each panel shows, top to bottom: a title (its first line the panel's
//! name, a second line, when the name has one after a newline, the run's
//! headline ([`super::headline()`]), then scenario, policy, seed and the
//! headline numbers); a probe strip (each responsiveness probe as a
//! triangle where the main thread queued it and a bar from then to when a
//! pool thread ran it, green when fast, red when slow); one lane per pool
//! thread, grey while the thread exists, with a bar per item
//! segment coloured by group, the phase shown by the bar's style (CPU solid,
//! spin hatched, `Thread.Sleep` pale and outlined, `Task.Wait` on a timer
//! paler and greyer), a triangle where the thread was created coloured by
//! why; a small chart of existing threads, the policy's goal and the
//! queue length, each on an integer scale of four to six ticks; and a
//! strip of the pool's decisions, a row each for the gate (monitor)
//! thread's ticks, cooperative-blocking steps and hill-climbing samples:
//! short grey marks where a decision added nothing, taller dark ones where
//! the gate found the pool starved but added no thread, full-height marks
//! in the creation reason's colour where it added a thread or raised the
//! goal, so the gate's rhythm (a tick every 500 ms, one in two injecting)
//! is on the chart. One legend at the bottom serves all panels.
//!
//! In the SVG, lanes, item bars, decision marks and the headline carry
//! tooltips (`<title>`): a thread's id, life and `poolsim explain`'s
//! sentence for why it exists; an item's id, group, thread and queued,
//! started and finished times; what each decision read and decided, in
//! explain's words.
//!
//! A window ([`ChartOptions::time_range`]) shows only part of the runs: the
//! time axis spans it, everything is clipped to it (a bar crossing an edge
//! is drawn to the edge), only the threads that exist during some part of
//! it get lanes (labelled with their thread ids), the counts scales fit
//! what it shows, and each title names the window instead of claiming the
//! run ends there.
//!
//! Scale: with more threads than the lanes area has room for (lanes under
//! two pixels) threads are grouped into bands, and wherever segments are
//! narrower than a couple of pixels they are merged per pixel column (see
//! the `raster` module), so the drawing cost is bounded by the picture's
//! size, not the number of items. The output is a pure function of the
//! input: same timelines and options, same bytes.

use crate::time::{SimDuration, SimTime};
use crate::trace::{Phase, ThreadReason};

use super::RenderError;
use super::axis::{
    format_duration, format_ms, int_ticks, nice_step, thousands, time_ticks, trim_decimals,
};
use super::canvas::{Anchor, Canvas, Rgb, ensure_font, text_width};
use super::decisions::{DecisionKind, DecisionMark};
use super::raster::{Key, PHASES, Raster, phase_index};
use super::style::{self, group_color, reason_color};
use super::timeline::{Lane, Segment, SegmentSource, Timeline};

/// Size and time range of a chart.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChartOptions {
    /// Width in pixels (400 to 16384).
    pub width: u32,
    /// Height in pixels; `None` sizes the chart to its content: 24-pixel
    /// lanes for up to 16 lanes (the threads shown: in a window, those that
    /// exist in it), 16 pixels a lane beyond, a panel's lanes at most 720
    /// pixels tall (480 with two panels, 360 with more). With a height, the
    /// lanes of each panel share what the rest leaves.
    pub height: Option<u32>,
    /// The time window shown, `(from, to)` with `from < to` (else
    /// [`RenderError::Window`]); `None` is the whole run, from 0 to the end
    /// of the longest run. A `to` past that end (e.g. [`SimTime::MAX`])
    /// stops there; a `from` at or after it is an error. Everything drawn
    /// is clipped to the window, only the threads that exist during some
    /// part of it get lanes, and the titles say it is one.
    pub time_range: Option<(SimTime, SimTime)>,
}

impl Default for ChartOptions {
    fn default() -> Self {
        ChartOptions {
            width: 1600,
            height: None,
            time_range: None,
        }
    }
}

/// Renders `timelines` (panel title, timeline) stacked vertically as a PNG.
pub fn render_png(
    timelines: &[(String, Timeline)],
    opts: &ChartOptions,
) -> Result<Vec<u8>, RenderError> {
    compose(timelines, opts)?.to_png()
}

/// Renders `timelines` (panel title, timeline) stacked vertically as SVG.
pub fn render_svg(
    timelines: &[(String, Timeline)],
    opts: &ChartOptions,
) -> Result<String, RenderError> {
    compose(timelines, opts)?.to_svg()
}

const MIN_WIDTH: u32 = 400;
const MAX_SIDE: u32 = 16384;
const MIN_HEIGHT: u32 = 200;
/// At most this many pixels (the RGB buffer is three bytes a pixel).
const MAX_PIXELS: u64 = 64 * 1024 * 1024;
const LEFT: i32 = 64;
const RIGHT: i32 = 76;
const TOP: i32 = 10;
const TITLE_H: i32 = 50;
/// A title's second line, the run's headline.
const HEADLINE_H: i32 = 22;
const PROBE_H: i32 = 16;
const PROBE_GAP: i32 = 6;
/// Room between the lanes and the counts chart for its scales' names.
const COUNTS_GAP: i32 = 18;
const COUNTS_H: i32 = 84;
/// The decisions strip under the counts chart: a gap, then a row each for
/// gate ticks, cooperative-blocking steps and hill-climbing samples, then
/// half a gap above the time axis.
const TICKS_GAP: i32 = 6;
const TICK_ROW_H: i32 = 14;
/// Tick labels, and the axis name under them.
const AXIS_H: i32 = 42;
const PANEL_GAP: i32 = 14;
const LEGEND_ROW_H: i32 = 22;
/// Auto height: pixels per thread lane (many threads), and the most a
/// lane gets (few threads).
const AUTO_ROW_H: i32 = 16;
const MAX_ROW_H: i32 = 24;
/// Below this lane height bars are drawn as occupancy, not shapes.
const DETAILED_ROW_H: i32 = 6;
/// Segments at least this many pixels wide are drawn as shapes.
const WIDE_PX: f64 = 2.5;

/// Vertical layout of one panel.
#[derive(Clone, Copy, Debug)]
struct PanelLayout {
    top: i32,
    probes_y: Option<i32>,
    lanes_y: i32,
    lanes_h: i32,
    counts_y: i32,
    /// The decisions strip's first row (when it has rows).
    ticks_y: i32,
    /// The time axis, under the counts chart and the decisions strip.
    axis_y: i32,
    bottom: i32,
}

/// The horizontal mapping from time to pixels.
#[derive(Clone, Copy, Debug)]
struct XScale {
    left: i32,
    width: i32,
    t0: u64,
    t1: u64,
    /// A window of the run, not the whole run, is shown.
    windowed: bool,
}

impl XScale {
    /// Pixels from the plot's left edge (may fall outside 0..width).
    fn px(&self, t: SimTime) -> f64 {
        (t.as_nanos() as f64 - self.t0 as f64) / (self.t1 - self.t0) as f64 * f64::from(self.width)
    }
    fn x(&self, t: SimTime) -> i32 {
        self.left + self.px(t).round().clamp(-1.0, f64::from(self.width) + 1.0) as i32
    }
    /// The instant where column `c` begins.
    fn column_start(&self, c: usize) -> u64 {
        let span = u128::from(self.t1 - self.t0);
        self.t0 + (span * c as u128 / self.width as u128) as u64
    }
    /// Whether instant `t` is inside the time shown.
    fn shows(&self, t: SimTime) -> bool {
        (self.t0..=self.t1).contains(&t.as_nanos())
    }
    /// Nanoseconds of `[a, b)` inside the time shown.
    fn overlap_ns(&self, a: SimTime, b: SimTime) -> u64 {
        b.as_nanos()
            .min(self.t1)
            .saturating_sub(a.as_nanos().max(self.t0))
    }
}

fn compose(timelines: &[(String, Timeline)], opts: &ChartOptions) -> Result<Canvas, RenderError> {
    ensure_font();
    if timelines.is_empty() {
        return Err(RenderError::Empty);
    }
    if !(MIN_WIDTH..=MAX_SIDE).contains(&opts.width) {
        return Err(RenderError::Size(format!(
            "width {} is outside {MIN_WIDTH}..={MAX_SIDE} pixels",
            opts.width
        )));
    }
    if let Some(h) = opts.height
        && !(MIN_HEIGHT..=MAX_SIDE).contains(&h)
    {
        return Err(RenderError::Size(format!(
            "height {h} is outside {MIN_HEIGHT}..={MAX_SIDE} pixels"
        )));
    }
    let (run_end, window) = checked_window(timelines, opts)?;
    let (t0, t1) = window.unwrap_or((SimTime::ZERO, run_end));
    let t1 = if t1 <= t0 {
        t0 + SimDuration::from_ms(1)
    } else {
        t1
    };
    let width = opts.width as i32;
    let x = XScale {
        left: LEFT,
        width: width - LEFT - RIGHT,
        t0: t0.as_nanos(),
        t1: t1.as_nanos(),
        windowed: opts.time_range.is_some(),
    };
    let views: Vec<View<'_>> = timelines
        .iter()
        .map(|(title, t)| View::of(title, t, &x))
        .collect();
    let legend = Legend::of(&views, width, &x);
    let layouts = layout_panels(&views, opts, legend.height())?;
    let height = match opts.height {
        Some(h) => h,
        None => (layouts.last().map_or(TOP, |l| l.bottom) + legend.height()) as u32,
    };
    if height > MAX_SIDE {
        return Err(RenderError::Size(format!(
            "the chart would be {height} pixels tall (at most {MAX_SIDE}); set a height"
        )));
    }
    if u64::from(opts.width) * u64::from(height) > MAX_PIXELS {
        return Err(RenderError::Size(format!(
            "{} × {height} pixels is more than {MAX_PIXELS} pixels",
            opts.width
        )));
    }
    let mut canvas = Canvas::new(opts.width, height);
    for (i, (view, layout)) in views.iter().zip(&layouts).enumerate() {
        if i > 0 {
            let y = layout.top - PANEL_GAP / 2;
            canvas.rect(8, y, width - 8, y + 1, style::FRAME);
        }
        draw_panel(&mut canvas, view, layout, &x, &legend);
    }
    let legend_y = layouts.last().map_or(TOP, |l| l.bottom);
    legend.draw(&mut canvas, legend_y);
    Ok(canvas)
}

/// A row of the decisions strip.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum TickRow {
    /// Gate (monitor) ticks.
    Gate,
    /// Cooperative-blocking steps.
    Blocking,
    /// Hill-climbing samples.
    Climbing,
}

impl TickRow {
    const ALL: [TickRow; 3] = [TickRow::Gate, TickRow::Blocking, TickRow::Climbing];

    fn of(kind: DecisionKind) -> Option<TickRow> {
        match kind {
            DecisionKind::Gate => Some(TickRow::Gate),
            DecisionKind::CooperativeBlocking => Some(TickRow::Blocking),
            DecisionKind::HillClimbing => Some(TickRow::Climbing),
            DecisionKind::ThreadExit => None,
        }
    }

    fn label(self) -> &'static str {
        match self {
            TickRow::Gate => "gate",
            TickRow::Blocking => "blocking",
            TickRow::Climbing => "climbing",
        }
    }
}

/// What one panel shows: its title's lines, the lanes of the threads that
/// exist in the time shown, and the rows of its decisions strip.
struct View<'a> {
    title: &'a str,
    /// The title's second line: the run's headline.
    headline: Option<&'a str>,
    t: &'a Timeline,
    /// Indices into `t.lanes` of the lanes drawn, in thread order.
    lanes: Vec<usize>,
    rows: Vec<TickRow>,
}

impl<'a> View<'a> {
    fn of(title: &'a str, t: &'a Timeline, x: &XScale) -> View<'a> {
        let title = if title.trim().is_empty() {
            t.scenario.as_str()
        } else {
            title
        };
        let (title, headline) = match title.split_once('\n') {
            Some((a, b)) if !b.trim().is_empty() => (a, Some(b.trim())),
            Some((a, _)) => (a, None),
            None => (title, None),
        };
        let (from, to) = (SimTime(x.t0), SimTime(x.t1));
        let lanes = (0..t.lanes.len())
            .filter(|&i| !x.windowed || t.lane_active(&t.lanes[i], from, to))
            .collect();
        let mut rows = Vec::new();
        for row in TickRow::ALL {
            if t.decisions.iter().any(|d| TickRow::of(d.kind) == Some(row)) {
                rows.push(row);
            }
        }
        View {
            title,
            headline,
            t,
            lanes,
            rows,
        }
    }

    fn title_h(&self) -> i32 {
        if self.headline.is_some() {
            TITLE_H + HEADLINE_H
        } else {
            TITLE_H
        }
    }

    fn ticks_h(&self) -> i32 {
        if self.rows.is_empty() {
            0
        } else {
            TICKS_GAP + self.rows.len() as i32 * TICK_ROW_H + TICKS_GAP / 2
        }
    }
}

/// Lanes area heights, then the vertical layout of every panel.
fn layout_panels(
    views: &[View<'_>],
    opts: &ChartOptions,
    legend_h: i32,
) -> Result<Vec<PanelLayout>, RenderError> {
    let n = views.len() as i32;
    let max_lanes_h = match n {
        1 => 720,
        2 => 480,
        _ => 360,
    };
    let fixed = |v: &View<'_>| {
        v.title_h()
            + if v.t.probes.is_empty() {
                0
            } else {
                PROBE_H + PROBE_GAP
            }
            + COUNTS_GAP
            + COUNTS_H
            + v.ticks_h()
            + AXIS_H
            + PANEL_GAP
    };
    let auto: Vec<i32> = views
        .iter()
        .map(|v| {
            let lanes = v.lanes.len().clamp(1, 100_000) as i32;
            let row = if lanes <= 16 { MAX_ROW_H } else { AUTO_ROW_H };
            (lanes * row).clamp(row, max_lanes_h)
        })
        .collect();
    let lanes_h: Vec<i32> = match opts.height {
        None => auto,
        Some(h) => {
            let fixed_total: i32 = TOP + legend_h + views.iter().map(fixed).sum::<i32>();
            let avail = h as i32 - fixed_total;
            if avail < 8 * n {
                return Err(RenderError::Size(format!(
                    "height {h} leaves no room for the lanes of {n} panel(s); at least {} pixels are needed",
                    fixed_total + 8 * n
                )));
            }
            let total_auto: i64 = auto.iter().map(|&a| i64::from(a)).sum();
            views
                .iter()
                .zip(&auto)
                .map(|(v, &a)| {
                    let share = (i64::from(avail) * i64::from(a) / total_auto.max(1)) as i32;
                    let cap = (v.lanes.len().clamp(1, 100_000) as i32).saturating_mul(MAX_ROW_H);
                    share.min(cap).max(8)
                })
                .collect()
        }
    };
    let mut y = TOP;
    let mut out = Vec::new();
    for (v, lanes_h) in views.iter().zip(lanes_h) {
        let top = y;
        let mut cursor = top + v.title_h();
        let probes_y = (!v.t.probes.is_empty()).then(|| {
            let p = cursor;
            cursor += PROBE_H + PROBE_GAP;
            p
        });
        let lanes_y = cursor;
        let counts_y = lanes_y + lanes_h + COUNTS_GAP;
        let ticks_y = counts_y + COUNTS_H + TICKS_GAP;
        let axis_y = counts_y + COUNTS_H + v.ticks_h();
        let bottom = axis_y + AXIS_H + PANEL_GAP;
        out.push(PanelLayout {
            top,
            probes_y,
            lanes_y,
            lanes_h,
            counts_y,
            ticks_y,
            axis_y,
            bottom,
        });
        y = bottom;
    }
    Ok(out)
}

fn draw_panel(
    canvas: &mut Canvas,
    view: &View<'_>,
    layout: &PanelLayout,
    x: &XScale,
    legend: &Legend,
) {
    let t = view.t;
    draw_title(canvas, view, layout, x);
    let ticks = time_ticks(
        SimTime(x.t0),
        SimTime(x.t1),
        (x.width / 110).max(2) as usize,
    );
    if let Some(py) = layout.probes_y {
        draw_probes(canvas, t, py, x);
    }
    draw_lanes(canvas, view, layout, x, legend, &ticks.at);
    draw_counts(canvas, t, layout.counts_y, x, &ticks.at);
    draw_decisions(canvas, view, layout.ticks_y, x);
    // Time axis under the counts chart and the decisions strip.
    let axis_y = layout.axis_y;
    for (at, label) in ticks.at.iter().zip(&ticks.labels) {
        let px = x.x(SimTime(*at));
        canvas.rect(px, axis_y, px + 1, axis_y + 4, style::MUTED);
        canvas.text(
            (px, axis_y + 6),
            label.clone(),
            12,
            style::TEXT,
            Anchor::CenterTop,
        );
    }
    // The axis name under the tick labels, clear of them.
    canvas.text(
        (x.left + x.width / 2, axis_y + 22),
        format!("time ({})", ticks.unit),
        12,
        style::MUTED,
        Anchor::CenterTop,
    );
}

fn draw_title(canvas: &mut Canvas, view: &View<'_>, layout: &PanelLayout, x: &XScale) {
    let t = view.t;
    canvas.bold_text(
        (16, layout.top + 4),
        view.title,
        18,
        style::TEXT,
        Anchor::LeftTop,
    );
    let room = canvas.width as i32 - 32;
    let mut facts_y = layout.top + 28;
    if let Some(headline) = view.headline {
        // The headline at 15 pixels, smaller while it does not fit, cut
        // short (its tooltip says it whole) when even 12 does not.
        let size = (12..=15)
            .rev()
            .find(|&s| text_width(headline, s, false) <= room)
            .unwrap_or(12);
        let mut shown = headline.to_string();
        if text_width(&shown, size, false) > room {
            while !shown.is_empty() && text_width(&format!("{shown}…"), size, false) > room {
                shown.pop();
            }
            shown.push('…');
        }
        let w = text_width(&shown, size, false);
        canvas.text(
            (16, layout.top + 28),
            shown,
            size,
            style::TEXT,
            Anchor::LeftTop,
        );
        canvas.tip(
            16,
            layout.top + 26,
            16 + w,
            layout.top + 28 + HEADLINE_H - 4,
            headline,
        );
        facts_y += HEADLINE_H;
    }
    let busy = t.busy_until();
    let mut facts = Vec::new();
    // A window first, so it is never the fact left out.
    if x.windowed {
        let window = format_window(SimTime(x.t0), SimTime(x.t1));
        facts.push(if busy > SimTime::ZERO {
            format!(
                "window {window} of a run whose last item ends at {}",
                format_duration(busy.since(SimTime::ZERO))
            )
        } else {
            format!("window {window} of the run")
        });
    }
    let threads = if x.windowed && view.lanes.len() < t.lanes.len() {
        format!(
            "{} of {} threads exist in the window",
            thousands(view.lanes.len() as u64),
            thousands(t.lanes.len() as u64)
        )
    } else {
        format!("{} threads created", t.lanes.len())
    };
    facts.extend([
        format!("scenario: {}", t.scenario),
        format!("policy: {}", t.policy),
        format!("seed {}", t.seed),
        format!("{} core{}", t.cores, if t.cores == 1 { "" } else { "s" }),
        format!("{} items", thousands(t.items as u64)),
        threads,
        format!("peak {} threads", t.max_threads()),
    ]);
    if t.unfinished > 0 {
        facts.push(format!(
            "run stopped at {} with {} items unfinished",
            format_duration(t.end.since(SimTime::ZERO)),
            thousands(t.unfinished as u64)
        ));
    } else if busy > SimTime::ZERO && !x.windowed {
        facts.push(format!(
            "last item ends at {}",
            format_duration(busy.since(SimTime::ZERO))
        ));
    }
    if let Some(lat) = t.max_probe_latency() {
        facts.push(format!("probe latency max {}", format_duration(lat)));
    }
    // As many facts as fit the width, most important first.
    let mut line = String::new();
    for f in facts {
        let candidate = if line.is_empty() {
            f
        } else {
            format!("{line}  ·  {f}")
        };
        if text_width(&candidate, 13, false) > room && !line.is_empty() {
            continue;
        }
        line = candidate;
    }
    canvas.text((16, facts_y), line, 13, style::MUTED, Anchor::LeftTop);
}

/// The window `[a, b]` for a title, in the time axis's unit (seconds
/// from two seconds on): "1500–2500 ms", "2–6.5 s".
fn format_window(a: SimTime, b: SimTime) -> String {
    if b.since(a).as_ms_f64() >= 2000.0 {
        format!(
            "{}–{} s",
            trim_decimals(a.as_ms_f64() / 1000.0, 3),
            trim_decimals(b.as_ms_f64() / 1000.0, 3)
        )
    } else {
        format!(
            "{}–{} ms",
            trim_decimals(a.as_ms_f64(), 3),
            trim_decimals(b.as_ms_f64(), 3)
        )
    }
}

/// The end of the latest of `timelines`, and the window `opts` asks for,
/// checked: one that ends before it starts, or starts at or after the
/// run's end, is refused; one past the end is cut there. `None`: the whole
/// run. The PNG, the SVG and the HTML page take it from here.
pub(super) fn checked_window(
    timelines: &[(String, Timeline)],
    opts: &ChartOptions,
) -> Result<(SimTime, Option<(SimTime, SimTime)>), RenderError> {
    let run_end = timelines
        .iter()
        .map(|(_, t)| t.end)
        .max()
        .unwrap_or(SimTime::ZERO);
    let Some((from, to)) = opts.time_range else {
        return Ok((run_end, None));
    };
    if from >= to {
        return Err(RenderError::Window(format!(
            "its start ({}) must be before its end ({})",
            format_ms(from),
            format_ms(to)
        )));
    }
    if from >= run_end {
        return Err(RenderError::Window(format!(
            "it starts at {}, at or after the end of the run ({}): nothing to show",
            format_ms(from),
            format_ms(run_end)
        )));
    }
    Ok((run_end, Some((from, to.min(run_end)))))
}

/// Green for a quick probe, red for one that waited a second or more.
fn probe_color(latency: SimDuration) -> Rgb {
    let ms = latency.as_ms_f64().max(0.001);
    let f = ((ms / 10.0).log10() / 2.0).clamp(0.0, 1.0) as f32;
    style::PROBE_FAST.mix(style::PROBE_SLOW, f)
}

fn draw_probes(canvas: &mut Canvas, t: &Timeline, y: i32, x: &XScale) {
    canvas.text(
        (x.left - 9, y + PROBE_H / 2),
        "probes",
        11,
        style::MUTED,
        Anchor::RightMiddle,
    );
    canvas.rect(
        x.left,
        y + PROBE_H / 2,
        x.left + x.width,
        y + PROBE_H / 2 + 1,
        style::GRID,
    );
    let w = x.width as usize;
    // Per pixel column: the longest latency of a probe waiting there.
    let mut worst: Vec<Option<SimDuration>> = vec![None; w];
    for p in &t.probes {
        let end = p.started.unwrap_or(t.end);
        if end.as_nanos() < x.t0 || p.queued.as_nanos() > x.t1 {
            continue;
        }
        let lat = end.since(p.queued);
        let a = x.px(p.queued).max(0.0);
        let b = x.px(end).max(a + 1.0).min(w as f64);
        let (ca, cb) = (a.floor() as usize, (b.ceil() as usize).min(w));
        for cell in worst.iter_mut().take(cb).skip(ca) {
            *cell = Some(cell.map_or(lat, |l| l.max(lat)));
        }
    }
    let (yt, yb) = (y + 4, y + PROBE_H - 3);
    let mut run: Option<(usize, Rgb)> = None;
    for c in 0..=w {
        let color = worst.get(c).copied().flatten().map(probe_color);
        if let Some((start, rc)) = run
            && color != Some(rc)
        {
            canvas.rect(x.left + start as i32, yt, x.left + c as i32, yb, rc);
            run = None;
        }
        if let Some(col) = color
            && run.is_none()
        {
            run = Some((c, col));
        }
    }
    // Markers where each probe was queued, while they stay apart.
    if probe_marks_drawn(t, x) {
        for p in &t.probes {
            if p.queued.as_nanos() < x.t0 || p.queued.as_nanos() > x.t1 {
                continue;
            }
            let px = x.x(p.queued);
            let lat = p.started.unwrap_or(t.end).since(p.queued);
            canvas.polygon(
                vec![(px - 4, y), (px + 4, y), (px, y + 6)],
                probe_color(lat).mix(Rgb(0, 0, 0), 0.25),
            );
        }
    }
}

/// Whether the probe strip marks where each probe was queued: while the
/// marks stay apart.
fn probe_marks_drawn(t: &Timeline, x: &XScale) -> bool {
    t.probes.iter().filter(|p| x.shows(p.queued)).count() <= x.width as usize / 8
}

/// How threads map to rows of the lanes area.
#[derive(Clone, Copy, Debug)]
struct Rows {
    rows: usize,
    /// Threads per row (1 unless banded).
    per_row: usize,
    top: i32,
    height: i32,
}

impl Rows {
    fn of(threads: usize, top: i32, height: i32) -> Rows {
        let n = threads.max(1);
        let per_row = if height as usize >= 2 * n {
            1
        } else {
            (2 * n).div_ceil(height.max(1) as usize)
        };
        Rows {
            rows: n.div_ceil(per_row),
            per_row,
            top,
            height,
        }
    }
    /// Pixel rows `[y0, y1)` of row `r`.
    fn span(&self, r: usize) -> (i32, i32) {
        let h = i64::from(self.height);
        let n = self.rows as i64;
        let y0 = self.top + (r as i64 * h / n) as i32;
        let y1 = self.top + ((r as i64 + 1) * h / n) as i32;
        (y0, y1)
    }
    fn row_height(&self) -> i32 {
        self.height / self.rows.max(1) as i32
    }
}

fn draw_lanes(
    canvas: &mut Canvas,
    view: &View<'_>,
    layout: &PanelLayout,
    x: &XScale,
    legend: &Legend,
    ticks: &[u64],
) {
    let t = view.t;
    let shown = &view.lanes;
    let rows = Rows::of(shown.len(), layout.lanes_y, layout.lanes_h);
    let row_h = rows.row_height();
    let detailed = rows.per_row == 1 && row_h >= DETAILED_ROW_H;
    let (lx0, lx1) = (x.left, x.left + x.width);
    let (ly0, ly1) = (layout.lanes_y, layout.lanes_y + layout.lanes_h);
    let w = x.width as usize;
    let group_colors: Vec<Rgb> = (0..t.groups.len() as u32)
        .map(|g| legend.group_color(t, g))
        .collect();
    let base_of = |group: Option<u32>| -> Rgb {
        group.map_or(style::INTERNAL, |g| {
            group_colors
                .get(g as usize)
                .copied()
                .unwrap_or_else(|| group_color(g as usize))
        })
    };
    let color_of = |key: Key| -> Rgb {
        let base = base_of(key.group());
        let fill = style::dense_fill(base, key.phase());
        if key.alternate() {
            fill.mix(Rgb(0, 0, 0), 0.1)
        } else {
            fill
        }
    };
    let grid = |canvas: &mut Canvas| {
        for &at in ticks {
            let px = x.x(SimTime(at));
            canvas.rect(px, ly0, px + 1, ly1, style::GRID);
        }
    };
    if !detailed {
        grid(canvas);
    }
    // Occupancy: lifetimes, and every segment too thin to be a shape.
    let mut raster = Raster::new(rows.rows, w);
    let mut wide: Vec<(usize, usize)> = Vec::new(); // (position in `shown`, segment)
    for (vi, &li) in shown.iter().enumerate() {
        let lane = &t.lanes[li];
        let row = vi / rows.per_row;
        let until = lane.exited.unwrap_or(t.end);
        raster.add_alive(row, x.px(lane.created), x.px(until));
        for (si, seg) in lane.segments.iter().enumerate() {
            let (a, b) = (x.px(seg.start), x.px(seg.end));
            if b <= 0.0 || a >= w as f64 {
                continue;
            }
            if detailed && b - a >= WIDE_PX {
                wide.push((vi, si));
            } else {
                let alternate = seg.item.is_some_and(|i| i % 2 == 1);
                raster.add_busy(row, a, b, Key::new(seg.group, seg.phase, alternate));
            }
        }
    }
    for r in 0..rows.rows {
        let (y0, y1) = rows.span(r);
        let in_row = if r + 1 == rows.rows {
            shown.len().max(1) - r * rows.per_row
        } else {
            rows.per_row
        };
        let (by0, by1) = bar_span(y0, y1);
        for (c0, c1, color) in raster.runs(r, in_row, style::ALIVE, color_of) {
            canvas.rect(lx0 + c0 as i32, by0, lx0 + c1 as i32, by1, color);
        }
    }
    if detailed {
        grid(canvas);
    }
    // Each row's tooltip: its thread, when it lived and why it exists.
    for r in 0..rows.rows {
        let (y0, y1) = rows.span(r);
        let first = r * rows.per_row;
        let members = &shown[first..(first + rows.per_row).min(shown.len())];
        if !members.is_empty() {
            canvas.tip(8, y0, lx1, y1.max(y0 + 1), lanes_tip(t, members));
        }
    }
    // Shapes for segments wide enough to show their phase's style.
    let mut labelled: Option<(usize, u32)> = None;
    for (vi, si) in wide {
        let lane = &t.lanes[shown[vi]];
        let seg = &lane.segments[si];
        let (y0, y1) = rows.span(vi);
        let (by0, by1) = bar_span(y0, y1);
        let a = x.px(seg.start).max(-2.0);
        let b = x.px(seg.end).min(w as f64 + 2.0);
        let mut x0 = lx0 + a.round() as i32;
        let mut x1 = lx0 + b.round() as i32;
        // A one-pixel gap before the next item on the same thread.
        if let Some(next) = lane.segments.get(si + 1)
            && next.item != seg.item
            && x.px(next.start) - b < 1.0
            && x1 - x0 >= 4
        {
            x1 -= 1;
        }
        x0 = x0.max(lx0);
        x1 = x1.min(lx1);
        let base = base_of(seg.group);
        draw_bar(canvas, x0, x1, by0, by1, base, seg.phase);
        canvas.tip(x0, by0, x1, by1, segment_tip(t, lane, seg));
        // The item's number, in its first segment on this lane with room.
        if let Some(item) = seg.item
            && labelled != Some((vi, item))
            && by1 - by0 >= 13
        {
            let label = format!("#{item}");
            let tw = text_width(&label, 10, false);
            if tw + 10 <= x1 - x0 {
                let ym = (by0 + by1) / 2;
                let ink = if seg.phase == Phase::Cpu {
                    Rgb::WHITE
                } else {
                    // A clean patch under the text, clear of hatching and dots.
                    canvas.rect(
                        x0 + 3,
                        ym - 5,
                        x0 + 7 + tw,
                        ym + 5,
                        bar_fill(base, seg.phase),
                    );
                    style::TEXT
                };
                canvas.text((x0 + 5, ym), label, 10, ink, Anchor::LeftMiddle);
                labelled = Some((vi, item));
            }
        }
    }
    // Creation marks at the start of each lane.
    if rows.per_row == 1 && row_h >= 5 {
        let s = ((row_h - 2) / 2).clamp(2, 6);
        for (vi, &li) in shown.iter().enumerate() {
            let lane = &t.lanes[li];
            let px = x.x(lane.created);
            if !x.shows(lane.created) || px < lx0 - 1 || px > lx1 {
                continue;
            }
            let (y0, y1) = rows.span(vi);
            let yc = (y0 + y1) / 2;
            canvas.polygon(
                vec![(px - s - 1, yc - s), (px - s - 1, yc + s), (px, yc)],
                reason_color(lane.reason),
            );
        }
    }
    // Lane labels: thread ids, as often as they fit.
    let label_every =
        nice_step(13.0 / f64::from(row_h.max(1)) * rows.per_row as f64).max(1.0) as usize;
    let label_every = if rows.per_row > 1 {
        label_every.div_ceil(rows.per_row) * rows.per_row
    } else {
        label_every
    };
    let size = if row_h >= 12 { 11 } else { 10 };
    for (vi, &li) in shown.iter().enumerate().step_by(label_every.max(1)) {
        let (y0, y1) = rows.span(vi / rows.per_row);
        let label = t.lanes[li].thread.to_string();
        canvas.text(
            (lx0 - 9, (y0 + y1) / 2),
            label,
            size,
            style::MUTED,
            Anchor::RightMiddle,
        );
    }
    if shown.is_empty() {
        let note = if t.lanes.is_empty() {
            "no pool threads"
        } else {
            "no pool thread exists in this window"
        };
        canvas.text(
            (lx0 + 8, (ly0 + ly1) / 2),
            note,
            12,
            style::MUTED,
            Anchor::LeftMiddle,
        );
    }
    if rows.per_row > 1 {
        canvas.text(
            (lx1 + 8, ly0),
            format!("{} threads", rows.per_row),
            10,
            style::MUTED,
            Anchor::LeftTop,
        );
        canvas.text(
            (lx1 + 8, ly0 + 12),
            "per row",
            10,
            style::MUTED,
            Anchor::LeftTop,
        );
    }
    canvas.outline(lx0 - 1, ly0 - 1, lx1 + 1, ly1 + 1, style::FRAME);
}

/// At most this many threads are described in one row's tooltip.
const TIP_THREADS: usize = 8;

/// The tooltip of a row of lanes: each thread, its life and why it exists.
fn lanes_tip(t: &Timeline, members: &[usize]) -> String {
    let mut lines: Vec<String> = Vec::new();
    for &li in members.iter().take(TIP_THREADS) {
        let lane = &t.lanes[li];
        let mut line = format!(
            "thread {} ({}): created at {}",
            lane.thread,
            lane.reason.name(),
            format_ms(lane.created)
        );
        if let Some(exit) = lane.exited {
            line.push_str(&format!(", exited at {}", format_ms(exit)));
        }
        match (&lane.why, lane.reason) {
            (Some(why), _) => line.push_str(&format!("\n  why: {why}")),
            (None, ThreadReason::Main) => {
                line.push_str("\n  the program's main thread, running work inline")
            }
            (None, _) => {}
        }
        lines.push(line);
    }
    if members.len() > TIP_THREADS {
        lines.push(format!(
            "… and {} more threads",
            members.len() - TIP_THREADS
        ));
    }
    lines.join("\n")
}

/// The tooltip of an item's bar: the item, its times, its thread, and
/// what this bar is.
fn segment_tip(t: &Timeline, lane: &Lane, seg: &Segment) -> String {
    let here = format!(
        "{}, {} to {} on thread {}",
        style::phase_label(seg.phase),
        format_ms(seg.start),
        format_ms(seg.end),
        lane.thread
    );
    let Some(item) = seg.item else {
        return here;
    };
    let group = seg
        .group
        .and_then(|g| t.groups.get(g as usize))
        .map_or("", String::as_str);
    let mut text = format!("item #{item}, group {group}");
    match t.item_times_of(item) {
        Some(i) => {
            text.push_str(&format!(
                ", thread {}\nqueued {}, started {}, ",
                i.thread,
                format_ms(i.queued),
                format_ms(i.started)
            ));
            match i.finished {
                Some(f) => text.push_str(&format!("finished {}", format_ms(f))),
                None => text.push_str("not finished when the run stopped"),
            }
        }
        None => text.push_str(&format!(", thread {}", lane.thread)),
    }
    text.push_str("\nthis bar: ");
    text.push_str(&here);
    text
}

/// The bar inside a lane `[y0, y1)`: a little air above and below.
fn bar_span(y0: i32, y1: i32) -> (i32, i32) {
    let h = y1 - y0;
    let pad = match h {
        0..=3 => 0,
        4..=9 => 1,
        _ => 2,
    };
    (y0 + pad, y1 - pad.max(if h >= 4 { 1 } else { 0 }))
}

/// The background of a bar of `phase` for an item of colour `c` (the HTML
/// page's wide bars too).
pub(super) fn bar_fill(c: Rgb, phase: Phase) -> Rgb {
    match phase {
        Phase::Cpu => c,
        Phase::Spin => c.tint(0.55),
        Phase::Sleep => c.tint(0.62),
        Phase::Wait => style::dense_fill(c, Phase::Wait).tint(0.35),
        Phase::Join => c.tint(0.8),
        Phase::Internal | Phase::Starting | Phase::Idle => style::dense_fill(c, phase),
    }
}

/// One segment drawn in its phase's style.
fn draw_bar(canvas: &mut Canvas, x0: i32, x1: i32, y0: i32, y1: i32, c: Rgb, phase: Phase) {
    if x1 <= x0 || y1 <= y0 {
        return;
    }
    let h = y1 - y0;
    let fill = bar_fill(c, phase);
    match phase {
        Phase::Cpu => canvas.rect(x0, y0, x1, y1, fill),
        Phase::Spin => {
            canvas.rect(x0, y0, x1, y1, fill);
            // Diagonal hatching, clipped to the bar.
            let step = 5;
            let mut u = x0 - h;
            while u < x1 {
                let (mut ax, mut ay) = (u, y1 - 1);
                let (mut bx, mut by) = (u + h - 1, y0);
                if ax < x0 {
                    ay -= x0 - ax;
                    ax = x0;
                }
                if bx > x1 - 1 {
                    by += bx - (x1 - 1);
                    bx = x1 - 1;
                }
                if ax <= bx {
                    canvas.line((ax, ay), (bx, by), c);
                }
                u += step;
            }
            if x1 - x0 >= 3 {
                canvas.outline(x0, y0, x1, y1, c);
            }
        }
        Phase::Sleep => {
            canvas.rect(x0, y0, x1, y1, fill);
            canvas.outline(x0, y0, x1, y1, c);
        }
        Phase::Wait => {
            canvas.rect(x0, y0, x1, y1, fill);
            canvas.outline(x0, y0, x1, y1, c.mix(Rgb(90, 90, 90), 0.3));
            // A dotted middle line: "waiting on something else".
            if h >= 7 {
                let ym = y0 + h / 2;
                let mut u = x0 + 3;
                while u + 2 <= x1 - 2 {
                    canvas.rect(u, ym, u + 2, ym + 1, c);
                    u += 5;
                }
            }
        }
        Phase::Join => {
            // Pale, outlined, with the caller's colour in a thin band: it
            // holds the thread while the parts run elsewhere.
            canvas.rect(x0, y0, x1, y1, fill);
            canvas.outline(x0, y0, x1, y1, c);
            if h >= 7 {
                let ym = y0 + h / 2;
                canvas.rect(x0 + 2, ym - 1, x1 - 2, ym + 1, c.tint(0.3));
            }
        }
        Phase::Internal => {
            let q = h / 4;
            canvas.rect(x0, y0 + q, x1, y1 - q, style::INTERNAL);
        }
        Phase::Starting => {
            let q = h / 3;
            canvas.rect(x0, y0 + q, x1, y1 - q, style::STARTING);
        }
        Phase::Idle => {}
    }
}

/// Per pixel column, the lowest and highest value a step series takes
/// there; `None` past `until`.
fn envelope(
    points: &[(SimTime, f64)],
    initial: f64,
    until: SimTime,
    x: &XScale,
) -> Vec<Option<(f64, f64)>> {
    let w = x.width as usize;
    let mut out = Vec::with_capacity(w);
    let mut i = 0;
    let mut current = initial;
    for c in 0..w {
        let start = x.column_start(c);
        let end = x.column_start(c + 1);
        if start > until.as_nanos() {
            out.push(None);
            continue;
        }
        while i < points.len() && points[i].0.as_nanos() <= start {
            current = points[i].1;
            i += 1;
        }
        let (mut lo, mut hi) = (current, current);
        while i < points.len() && points[i].0.as_nanos() < end {
            current = points[i].1;
            lo = lo.min(current);
            hi = hi.max(current);
            i += 1;
        }
        out.push(Some((lo, hi)));
    }
    out
}

/// Draws a two-pixel step line from an envelope; `dashed` leaves gaps in
/// the flat stretches.
fn draw_step_line(
    canvas: &mut Canvas,
    env: &[Option<(f64, f64)>],
    y_of: &dyn Fn(f64) -> i32,
    left: i32,
    color: Rgb,
    dashed: bool,
) {
    let mut run: Option<(usize, i32, i32)> = None;
    let flush = |canvas: &mut Canvas, run: Option<(usize, i32, i32)>, end: usize| {
        if let Some((start, y0, y1)) = run {
            canvas.rect(left + start as i32, y0, left + end as i32, y1, color);
        }
    };
    for (c, cell) in env.iter().enumerate() {
        let span = cell.and_then(|(lo, hi)| {
            let flat = lo == hi;
            (!(dashed && flat && (c / 5) % 2 == 1)).then(|| (y_of(hi) - 1, y_of(lo) + 1))
        });
        match (run, span) {
            (Some((_, a, b)), Some((y0, y1))) if a == y0 && b == y1 => {}
            _ => {
                flush(canvas, run, c);
                run = span.map(|(y0, y1)| (c, y0, y1));
            }
        }
    }
    flush(canvas, run, env.len());
}

fn draw_counts(canvas: &mut Canvas, t: &Timeline, y: i32, x: &XScale, ticks: &[u64]) {
    let (x0, x1) = (x.left, x.left + x.width);
    let (y0, y1) = (y, y + COUNTS_H);
    for &at in ticks {
        let px = x.x(SimTime(at));
        canvas.rect(px, y0, px + 1, y1, style::GRID);
    }
    let existing: Vec<(SimTime, f64)> = t
        .threads
        .iter()
        .map(|c| (c.at, f64::from(c.threads)))
        .collect();
    let goal: Vec<(SimTime, f64)> = t
        .threads
        .iter()
        .filter_map(|c| c.goal.map(|g| (c.at, f64::from(g))))
        .collect();
    let queued: Vec<(SimTime, f64)> = t.queue.iter().map(|q| (q.at, q.queued as f64)).collect();
    let env_of = |pts: &[(SimTime, f64)]| (!pts.is_empty()).then(|| envelope(pts, 0.0, t.end, x));
    let (existing, goal, queued) = (env_of(&existing), env_of(&goal), env_of(&queued));
    // Scales: the whole run's highest values, or what a window shows.
    let env_max = |env: &Option<Vec<Option<(f64, f64)>>>| {
        env.iter()
            .flatten()
            .flatten()
            .map(|&(_, hi)| hi.ceil() as u64)
            .max()
            .unwrap_or(0)
    };
    let (threads_max, queue_max) = if x.windowed {
        let threads = if t.threads.is_empty() {
            u64::from(t.max_threads())
        } else {
            env_max(&existing).max(env_max(&goal))
        };
        (threads, env_max(&queued))
    } else {
        (u64::from(t.max_threads()), t.max_queue())
    };
    let (yticks, qticks) = (int_ticks(threads_max), int_ticks(queue_max));
    let (ymax, qmax) = (yticks.top as f64, qticks.top as f64);
    let inner = f64::from(COUNTS_H - 8);
    let y_threads = move |v: f64| y1 - 1 - (v / ymax * inner).round() as i32;
    let y_queue = move |v: f64| y1 - 1 - (v / qmax * inner).round() as i32;
    for &v in &yticks.at[1..yticks.at.len() - 1] {
        let yy = y_threads(v as f64);
        canvas.rect(x0, yy, x1, yy + 1, style::GRID.tint(0.4));
    }
    // Queue length: a filled area on its own scale.
    if let Some(env) = &queued {
        let mut run: Option<(usize, i32)> = None;
        for c in 0..=env.len() {
            let top = env
                .get(c)
                .copied()
                .flatten()
                .filter(|&(_, hi)| hi > 0.0)
                .map(|(_, hi)| y_queue(hi));
            if let Some((start, ry)) = run
                && top != Some(ry)
            {
                canvas.rect(
                    x0 + start as i32,
                    ry,
                    x0 + c as i32,
                    y1 - 1,
                    style::QUEUE_FILL,
                );
                run = None;
            }
            if let Some(ty) = top
                && run.is_none()
            {
                run = Some((c, ty));
            }
        }
    }
    // The goal goes over the threads line, dashed, so both show where they
    // are equal.
    if let Some(env) = &existing {
        draw_step_line(canvas, env, &y_threads, x0, style::THREADS_LINE, false);
    }
    if let Some(env) = &goal {
        draw_step_line(canvas, env, &y_threads, x0, style::GOAL_LINE, true);
    }
    // Thread creations on the threads line, coloured by reason; smaller
    // when they crowd, and one per reason per bucket of pixels.
    let shown = t.creations.iter().filter(|m| x.shows(m.at)).count();
    let spacing = x.width / (shown as i32).max(1);
    let r = (spacing / 4).clamp(2, 4);
    let mut last_bucket: Vec<Option<i32>> = vec![None; style::REASONS.len()];
    for m in &t.creations {
        let px = x.x(m.at);
        if !x.shows(m.at) || px < x0 || px > x1 {
            continue;
        }
        let ri = style::REASONS
            .iter()
            .position(|r| *r == m.reason)
            .unwrap_or(0);
        let bucket = (px - x0) / (r + 1);
        if last_bucket[ri] == Some(bucket) {
            continue;
        }
        last_bucket[ri] = Some(bucket);
        let after = t
            .threads
            .partition_point(|c| c.at <= m.at)
            .checked_sub(1)
            .map_or(0, |i| t.threads[i].threads);
        let py = y_threads(f64::from(after));
        canvas.polygon(
            vec![(px, py - r), (px + r, py), (px, py + r), (px - r, py)],
            reason_color(m.reason),
        );
    }
    canvas.outline(x0 - 1, y0, x1 + 1, y1, style::FRAME);
    // Scales: threads on the left, queue on the right, each named above.
    let label_y = |yy: i32| yy.clamp(y0 + 6, y1 - 4);
    for &v in &yticks.at {
        let yy = y_threads(v as f64);
        canvas.rect(x0 - 5, yy, x0 - 1, yy + 1, style::FRAME);
        canvas.text(
            (x0 - 8, label_y(yy)),
            thousands(v),
            11,
            style::THREADS_LINE,
            Anchor::RightMiddle,
        );
    }
    canvas.text(
        (x0 - 8, y0 - 7),
        "threads",
        10,
        style::THREADS_LINE,
        Anchor::RightMiddle,
    );
    if queued.is_some() {
        for &v in &qticks.at {
            let yy = y_queue(v as f64);
            canvas.rect(x1 + 1, yy, x1 + 5, yy + 1, style::FRAME);
            canvas.text(
                (x1 + 8, label_y(yy)),
                thousands(v),
                11,
                style::QUEUE_TEXT,
                Anchor::LeftMiddle,
            );
        }
        canvas.text(
            (x1 + 8, y0 - 7),
            "queued",
            10,
            style::QUEUE_TEXT,
            Anchor::LeftMiddle,
        );
    }
}

/// How strongly a decision is marked: 0 added nothing, 1 starved but
/// added no thread, 2 added a thread or raised the goal.
fn tick_level(d: &DecisionMark) -> u8 {
    if d.raised {
        2
    } else if d.starved {
        1
    } else {
        0
    }
}

/// A tick mark's height and colour in a row `TICK_ROW_H` tall.
fn tick_style(level: u8, reason: Option<ThreadReason>) -> (i32, Rgb) {
    match level {
        2 => (
            TICK_ROW_H - 2,
            reason.map_or(style::TEXT, style::reason_color),
        ),
        1 => (8, style::TICK_STARVED),
        _ => (5, style::TICK_NO_CHANGE),
    }
}

/// At most this many decisions are told in one tooltip.
const TIP_DECISIONS: usize = 6;

/// The decisions strip under the counts chart: a row of tick marks for the
/// gate (monitor) thread's ticks, one for cooperative-blocking steps, one
/// for hill-climbing samples (the rows the run has); short and grey when the decision added nothing,
/// taller and dark when the pool was starved but got no thread, full height
/// in the reason's colour when it added a thread or raised the goal. Each
/// tick's tooltip is `poolsim explain`'s sentence.
fn draw_decisions(canvas: &mut Canvas, view: &View<'_>, y: i32, x: &XScale) {
    let w = x.width as usize;
    if w == 0 {
        return;
    }
    for (ri, row) in view.rows.iter().enumerate() {
        let y0 = y + ri as i32 * TICK_ROW_H;
        let y1 = y0 + TICK_ROW_H;
        canvas.text(
            (x.left - 8, (y0 + y1) / 2),
            row.label(),
            10,
            style::MUTED,
            Anchor::RightMiddle,
        );
        canvas.rect(x.left, y1 - 1, x.left + x.width, y1, style::GRID);
        let marks: Vec<&DecisionMark> = view
            .t
            .decisions
            .iter()
            .filter(|d| TickRow::of(d.kind) == Some(*row) && x.shows(d.at))
            .collect();
        let column = |d: &DecisionMark| (x.px(d.at).floor().max(0.0) as usize).min(w - 1);
        // Per pixel column, the strongest mark.
        let mut cells: Vec<Option<(u8, Option<ThreadReason>)>> = vec![None; w];
        for d in &marks {
            let cell = &mut cells[column(d)];
            let level = tick_level(d);
            if cell.is_none_or(|(l, _)| level > l) {
                *cell = Some((level, d.reason));
            }
        }
        let thick = marks.len() * 6 <= w;
        for (c, cell) in cells.iter().enumerate() {
            if let Some((level, reason)) = *cell {
                let (h, color) = tick_style(level, reason);
                let x0 = x.left + c as i32;
                let x1 = if thick { x0 + 2 } else { x0 + 1 };
                canvas.rect(x0, y1 - 1 - h, x1.min(x.left + x.width), y1 - 1, color);
            }
        }
        // Tooltips: marks within a few pixels of each other share one.
        let mut i = 0;
        while i < marks.len() {
            let mut j = i + 1;
            while j < marks.len() && column(marks[j]) <= column(marks[j - 1]) + 3 {
                j += 1;
            }
            let group = &marks[i..j];
            let mut lines: Vec<String> = group
                .iter()
                .take(TIP_DECISIONS)
                .map(|d| format!("{}: {}", format_ms(d.at), d.text))
                .collect();
            if group.len() > TIP_DECISIONS {
                let raised = group[TIP_DECISIONS..].iter().filter(|d| d.raised).count();
                lines.push(format!(
                    "… and {} more ({raised} of them added a thread or raised the goal)",
                    group.len() - TIP_DECISIONS
                ));
            }
            let (c0, c1) = (column(group[0]) as i32, column(group[j - i - 1]) as i32);
            canvas.tip(x.left + c0 - 2, y0, x.left + c1 + 3, y1, lines.join("\n"));
            i = j;
        }
    }
}

/// The shared legend: groups, phases, creation reasons, probes.
struct Legend {
    /// Group names in order of first appearance across panels.
    groups: Vec<String>,
    /// Rows of (heading, entries); a wrapped section repeats no heading.
    rows: Vec<(&'static str, Vec<LegendEntry>)>,
    /// Where entries start, right of the headings.
    indent: i32,
}

#[derive(Clone, Debug)]
enum LegendEntry {
    Group(usize),
    Phase(Phase, &'static str),
    Reason(ThreadReason),
    Idle,
    ProbeQueued,
    Probe,
    Threads,
    Goal,
    Queue,
    /// A decision's tick mark: its level and reason (see [`tick_style`]).
    Tick(u8, Option<ThreadReason>, &'static str),
}

const LEGEND_SIZE: u32 = 12;

impl Legend {
    /// The legend for `timelines`: only what appears in them (phases only
    /// when some segment of them is at least a pixel wide on `x`).
    fn of(views: &[View<'_>], width: i32, x: &XScale) -> Legend {
        let mut groups: Vec<String> = Vec::new();
        let mut items_only = false;
        let mut reasons_present = [false; style::REASONS.len()];
        let mut probes = false;
        let mut probe_marks = false;
        let mut lanes = false;
        let (mut goal, mut queue) = (false, false);
        // Decision marks shown: (row, level, reason).
        let mut ticks: Vec<(TickRow, u8, Option<ThreadReason>)> = Vec::new();
        // A phase is listed when its segments add up to a few pixels.
        let pixel_ns = (x.t1 - x.t0) / x.width.max(1) as u64;
        let mut phase_ns = [0u64; PHASES.len()];
        for v in views {
            let t = v.t;
            for g in &t.groups {
                if !groups.contains(g) {
                    groups.push(g.clone());
                }
            }
            items_only |= t.source == SegmentSource::Items && t.segment_count() > 0;
            lanes |= !v.lanes.is_empty();
            for lane in v.lanes.iter().map(|&i| &t.lanes[i]) {
                if let Some(i) = style::REASONS.iter().position(|r| *r == lane.reason)
                    && x.shows(lane.created)
                {
                    reasons_present[i] = true;
                }
                if t.source == SegmentSource::Phases {
                    for s in &lane.segments {
                        phase_ns[phase_index(s.phase)] += x.overlap_ns(s.start, s.end);
                    }
                }
            }
            probes |= !t.probes.is_empty();
            probe_marks |= t.probes.iter().any(|p| x.shows(p.queued)) && probe_marks_drawn(t, x);
            goal |= t.threads.iter().any(|c| c.goal.is_some());
            queue |= !t.queue.is_empty();
            for d in &t.decisions {
                if let Some(row) = TickRow::of(d.kind)
                    && x.shows(d.at)
                {
                    let key = (row, tick_level(d), d.reason);
                    if !ticks.contains(&key) {
                        ticks.push(key);
                    }
                }
            }
        }
        let mut sections: Vec<(&'static str, Vec<LegendEntry>)> = Vec::new();
        if !groups.is_empty() {
            sections.push((
                "Items by group",
                (0..groups.len()).map(LegendEntry::Group).collect(),
            ));
        }
        let mut phases: Vec<LegendEntry> = Vec::new();
        if items_only {
            phases.push(LegendEntry::Phase(
                Phase::Cpu,
                "item running (phases not recorded)",
            ));
        }
        phases.extend(
            style::PHASES
                .iter()
                .filter(|(p, _)| phase_ns[phase_index(*p)] >= 3 * pixel_ns.max(1))
                .map(|(p, l)| LegendEntry::Phase(*p, l)),
        );
        if lanes {
            phases.push(LegendEntry::Idle);
        }
        if !phases.is_empty() {
            sections.push(("Lanes", phases));
        }
        let reasons: Vec<LegendEntry> = style::REASONS
            .iter()
            .enumerate()
            .filter(|(i, _)| reasons_present[*i])
            .map(|(_, r)| LegendEntry::Reason(*r))
            .collect();
        if !reasons.is_empty() {
            sections.push(("Thread created by", reasons));
        }
        let mut counts = vec![LegendEntry::Threads];
        if goal {
            counts.push(LegendEntry::Goal);
        }
        if queue {
            counts.push(LegendEntry::Queue);
        }
        sections.push(("Lower chart", counts));
        if probes {
            let mut entries = Vec::new();
            if probe_marks {
                entries.push(LegendEntry::ProbeQueued);
            }
            entries.push(LegendEntry::Probe);
            sections.push(("Probes", entries));
        }
        // The decisions strip's marks, in a fixed order.
        let tick_entries: Vec<LegendEntry> = TICK_LEGEND
            .iter()
            .filter(|(row, level, reason, _)| {
                ticks
                    .iter()
                    .any(|k| k.0 == *row && k.1 == *level && (*level < 2 || k.2 == *reason))
            })
            .map(|&(_, level, reason, label)| LegendEntry::Tick(level, reason, label))
            .collect();
        if !tick_entries.is_empty() {
            sections.push(("Pool decisions", tick_entries));
        }
        let indent = sections
            .iter()
            .map(|(h, _)| text_width(h, LEGEND_SIZE, true))
            .max()
            .unwrap_or(0)
            + 30;
        let mut legend = Legend {
            groups,
            rows: Vec::new(),
            indent,
        };
        let max = width - 16;
        for (heading, entries) in sections {
            let mut row: Vec<LegendEntry> = Vec::new();
            let mut used = 16 + indent;
            let mut heading = heading;
            for e in entries {
                let w = legend.entry_width(&e);
                if used + w > max && !row.is_empty() {
                    legend.rows.push((heading, std::mem::take(&mut row)));
                    heading = "";
                    used = 16 + indent;
                }
                used += w;
                row.push(e);
            }
            legend.rows.push((heading, row));
        }
        legend
    }

    fn group_color(&self, t: &Timeline, group: u32) -> Rgb {
        let name = t.groups.get(group as usize);
        let index = name
            .and_then(|n| self.groups.iter().position(|g| g == n))
            .unwrap_or(group as usize);
        group_color(index)
    }

    fn entry_width(&self, e: &LegendEntry) -> i32 {
        let tw = |s: &str| text_width(s, LEGEND_SIZE, false);
        match e {
            LegendEntry::Group(i) => 18 + tw(&self.groups[*i]) + 22,
            LegendEntry::Phase(_, label) => 34 + tw(label) + 22,
            LegendEntry::Reason(r) => 14 + tw(r.name()) + 22,
            LegendEntry::Idle => 34 + tw(IDLE_LABEL) + 22,
            LegendEntry::ProbeQueued => 14 + tw(PROBE_QUEUED_LABEL) + 22,
            LegendEntry::Probe => 34 + tw(PROBE_LABEL) + 22,
            LegendEntry::Threads => 26 + tw(THREADS_LABEL) + 22,
            LegendEntry::Goal => 26 + tw(GOAL_LABEL) + 22,
            LegendEntry::Queue => 20 + tw(QUEUE_LABEL) + 22,
            LegendEntry::Tick(_, _, label) => 10 + tw(label) + 22,
        }
    }

    fn height(&self) -> i32 {
        self.rows.len() as i32 * LEGEND_ROW_H + 10
    }

    fn draw(&self, canvas: &mut Canvas, y: i32) {
        for (ri, (heading, row)) in self.rows.iter().enumerate() {
            let yc = y + ri as i32 * LEGEND_ROW_H + LEGEND_ROW_H / 2;
            if !heading.is_empty() {
                canvas.bold_text(
                    (16, yc),
                    format!("{heading}:"),
                    LEGEND_SIZE,
                    style::TEXT,
                    Anchor::LeftMiddle,
                );
            }
            let mut x = 16 + self.indent;
            for e in row {
                match e {
                    LegendEntry::Group(i) => {
                        canvas.rect(x, yc - 6, x + 12, yc + 6, group_color(*i));
                        canvas.text(
                            (x + 18, yc),
                            self.groups[*i].clone(),
                            LEGEND_SIZE,
                            style::TEXT,
                            Anchor::LeftMiddle,
                        );
                    }
                    LegendEntry::Phase(p, label) => {
                        // One group: its colour; several: a neutral one.
                        let swatch = if self.groups.len() == 1 {
                            group_color(0)
                        } else {
                            LEGEND_SWATCH
                        };
                        draw_bar(canvas, x, x + 28, yc - 6, yc + 7, swatch, *p);
                        canvas.text(
                            (x + 34, yc),
                            *label,
                            LEGEND_SIZE,
                            style::TEXT,
                            Anchor::LeftMiddle,
                        );
                    }
                    LegendEntry::Reason(r) => {
                        canvas.polygon(
                            vec![(x, yc - 5), (x, yc + 5), (x + 8, yc)],
                            reason_color(*r),
                        );
                        canvas.text(
                            (x + 14, yc),
                            r.name(),
                            LEGEND_SIZE,
                            style::TEXT,
                            Anchor::LeftMiddle,
                        );
                    }
                    LegendEntry::Idle => {
                        canvas.rect(x, yc - 6, x + 28, yc + 7, style::ALIVE);
                        canvas.text(
                            (x + 34, yc),
                            IDLE_LABEL,
                            LEGEND_SIZE,
                            style::TEXT,
                            Anchor::LeftMiddle,
                        );
                    }
                    LegendEntry::ProbeQueued => {
                        canvas.polygon(
                            vec![(x, yc - 4), (x + 8, yc - 4), (x + 4, yc + 2)],
                            style::PROBE_FAST.mix(Rgb(0, 0, 0), 0.25),
                        );
                        canvas.text(
                            (x + 14, yc),
                            PROBE_QUEUED_LABEL,
                            LEGEND_SIZE,
                            style::TEXT,
                            Anchor::LeftMiddle,
                        );
                    }
                    LegendEntry::Probe => {
                        canvas.rect(x, yc - 3, x + 14, yc + 3, style::PROBE_FAST);
                        canvas.rect(x + 14, yc - 3, x + 28, yc + 3, style::PROBE_SLOW);
                        canvas.text(
                            (x + 34, yc),
                            PROBE_LABEL,
                            LEGEND_SIZE,
                            style::TEXT,
                            Anchor::LeftMiddle,
                        );
                    }
                    LegendEntry::Threads => {
                        canvas.rect(x, yc - 1, x + 20, yc + 1, style::THREADS_LINE);
                        canvas.text(
                            (x + 26, yc),
                            THREADS_LABEL,
                            LEGEND_SIZE,
                            style::TEXT,
                            Anchor::LeftMiddle,
                        );
                    }
                    LegendEntry::Goal => {
                        canvas.rect(x, yc - 1, x + 5, yc + 1, style::GOAL_LINE);
                        canvas.rect(x + 10, yc - 1, x + 15, yc + 1, style::GOAL_LINE);
                        canvas.text(
                            (x + 26, yc),
                            GOAL_LABEL,
                            LEGEND_SIZE,
                            style::TEXT,
                            Anchor::LeftMiddle,
                        );
                    }
                    LegendEntry::Tick(level, reason, label) => {
                        let (h, color) = tick_style(*level, *reason);
                        let bottom = yc + TICK_ROW_H / 2 - 1;
                        canvas.rect(x, bottom, x + 6, bottom + 1, style::GRID);
                        canvas.rect(x + 2, bottom - h, x + 4, bottom, color);
                        canvas.text(
                            (x + 10, yc),
                            *label,
                            LEGEND_SIZE,
                            style::TEXT,
                            Anchor::LeftMiddle,
                        );
                    }
                    LegendEntry::Queue => {
                        canvas.rect(x, yc - 6, x + 14, yc + 6, style::QUEUE_FILL);
                        canvas.text(
                            (x + 20, yc),
                            QUEUE_LABEL,
                            LEGEND_SIZE,
                            style::TEXT,
                            Anchor::LeftMiddle,
                        );
                    }
                }
                x += self.entry_width(e);
            }
        }
    }
}

const IDLE_LABEL: &str = "idle (thread exists, no work)";
const PROBE_QUEUED_LABEL: &str =
    "a responsiveness probe: the main thread queues a tiny work item here";
const PROBE_LABEL: &str = "its wait, queued → started on a pool thread: its latency (green: quick, red: a second or more)";
const THREADS_LABEL: &str = "threads existing (left scale; ◆ a thread created)";
const GOAL_LABEL: &str = "the policy's thread goal";
const QUEUE_LABEL: &str = "work items queued (right scale)";
const LEGEND_SWATCH: Rgb = Rgb(96, 112, 136);

/// The decisions strip's legend entries, in order: (row, level, reason
/// when it raised, label).
const TICK_LEGEND: [(TickRow, u8, Option<ThreadReason>, &str); 7] = [
    (
        TickRow::Gate,
        0,
        None,
        "gate (monitor) tick with requests pending: no thread added",
    ),
    (
        TickRow::Gate,
        1,
        None,
        "starved, but no thread added (at the maximum, or one on its way)",
    ),
    (
        TickRow::Gate,
        2,
        Some(ThreadReason::Starvation),
        "starved: a thread added",
    ),
    (
        TickRow::Blocking,
        0,
        None,
        "cooperative-blocking step: goal not raised",
    ),
    (
        TickRow::Blocking,
        2,
        Some(ThreadReason::CooperativeBlocking),
        "cooperative blocking raised the goal",
    ),
    (TickRow::Climbing, 0, None, "hill-climbing sample"),
    (
        TickRow::Climbing,
        2,
        Some(ThreadReason::HillClimbing),
        "hill climbing raised the goal",
    ),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thousands_separators() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(1_234_567), "1,234,567");
    }

    #[test]
    fn rows_band_threads_only_when_lanes_would_be_thinner_than_two_pixels() {
        let r = Rows::of(100, 0, 400);
        assert_eq!((r.rows, r.per_row), (100, 1));
        let r = Rows::of(1000, 0, 400);
        assert_eq!((r.rows, r.per_row), (200, 5));
        assert_eq!(r.span(0), (0, 2));
        assert_eq!(r.span(199), (398, 400));
    }
}
