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
//! `run --runs N --html` ([`render_html_outcomes`]): the page holds the run
//! of each outcome of the N seeds (at most [`OUTCOME_BUDGET`] a policy), and
//! radio buttons above the chart, the outcomes with their shares and
//! figures, choose the one drawn (`html/outcomes.js`, which draws the data
//! again with that run; `#outcome=K` opens on one). The segment budget is
//! the page's, over all its runs, and the others are shared out among them.
//! Its style and script are only in such a page: every other keeps its
//! bytes.
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
use crate::output::human_ms;
use crate::spread::Spread;

/// The page's style sheet and script, inlined into every report.
const PAGE_CSS: &str = include_str!("html/report.css");
const PAGE_JS: &str = include_str!("html/report.js");
/// Installed before the page's script, so even its errors are reported in
/// the page (the `data-error` attribute and the `#error` box).
const ERROR_JS: &str = include_str!("html/error.js");
/// The outcome picker's style and script, only in a page that has one
/// (`run --runs N --html`): the pages without it keep their bytes.
const OUTCOMES_CSS: &str = include_str!("html/outcomes.css");
const OUTCOMES_JS: &str = include_str!("html/outcomes.js");

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
    let names: Vec<&str> = timelines
        .iter()
        .map(|(title, t)| first_line(title, t))
        .collect();
    let title = format!(
        "poolsim: {} · {}",
        timelines[0].1.scenario,
        names.join(" vs ")
    );
    Ok(page(&title, &json, None))
}

/// The page around a report's data: its style, script and markup, with
/// the outcome picker's (`extra`: its markup) when it has one.
fn page(title: &str, json: &str, extra: Option<&str>) -> String {
    // `<` only occurs inside JSON strings, where `\u003c` means the same:
    // the block can then never close the script element early.
    let json = json.replace('<', "\\u003c");
    let mut out = String::with_capacity(json.len() + PAGE_JS.len() + PAGE_CSS.len() + 4096);
    out.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    out.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    out.push_str("<meta name=\"generator\" content=\"poolsim\">\n");
    out.push_str(&format!("<title>{}</title>\n", escape(title)));
    out.push_str("<style>\n");
    out.push_str(PAGE_CSS);
    if extra.is_some() {
        out.push_str(OUTCOMES_CSS);
    }
    out.push_str("</style>\n<script>\n");
    out.push_str(ERROR_JS);
    out.push_str("</script>\n</head>\n<body>\n");
    out.push_str(&body(title, extra.unwrap_or("")));
    out.push_str("<script type=\"application/json\" id=\"poolsim-data\">");
    out.push_str(&json);
    out.push_str("</script>\n<script>\n");
    out.push_str(PAGE_JS);
    out.push_str("</script>\n");
    if extra.is_some() {
        out.push_str("<script>\n");
        out.push_str(OUTCOMES_JS);
        out.push_str("</script>\n");
    }
    out.push_str("</body>\n</html>\n");
    out
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
    let all: Vec<&Timeline> = timelines.iter().map(|(_, t)| t).collect();
    let frame = Frame::of(&all, run_end, window);
    let panels: Vec<PanelData<'_>> = timelines
        .iter()
        .map(|(title, t)| PanelData::of(title, t, &frame, Budgets::FULL))
        .collect();
    to_json(&frame.page(panels, None))
}

/// The most outcomes of one policy a `--runs N --html` page draws (each is
/// one run in the page, within the page's budgets); the page counts the
/// rest.
pub const OUTCOME_BUDGET: usize = 8;

/// One policy's runs for a `--runs N --html` page: the run of each outcome
/// drawn ([`outcomes_drawn`]: its seed's run), and the picker above the
/// chart that chooses which one is drawn.
pub struct OutcomePanel<'a> {
    /// The policy, as the picker names it.
    pub name: String,
    /// The spread the outcomes are of.
    pub spread: &'a Spread,
    /// The runs, in the picker's order, each with its panel title (as
    /// [`render_html`]'s).
    pub runs: Vec<(String, Timeline)>,
    /// Per run, the outcome it is (its index in the spread's `outcomes`);
    /// `None`: a run that did not complete (the first seed's).
    pub outcomes: Vec<Option<usize>>,
    /// The run drawn when the page opens (an index into `runs`): the first
    /// seed's.
    pub selected: usize,
    /// The command that narrates one outcome's run (`K`: its seed).
    pub hint: Option<String>,
}

/// Which of `spread`'s outcomes a page draws: the [`OUTCOME_BUDGET`] most
/// common, in the spread's order, `first` (the first seed's outcome) always
/// among them.
pub fn outcomes_drawn(spread: &Spread, first: Option<usize>) -> Vec<usize> {
    let n = spread.outcomes.len();
    let mut keep: Vec<usize> = (0..n.min(OUTCOME_BUDGET)).collect();
    if let Some(k) = first
        && k < n
        && !keep.contains(&k)
    {
        keep.pop();
        keep.push(k);
    }
    keep
}

/// A `--runs N --html` page: [`render_html`]'s, with each policy's runs of
/// its outcomes and a picker above the chart (the outcomes with their
/// shares and figures) that chooses which is drawn, on one time axis kept
/// from one to the other; the URL's `#outcome=K` (`p1.K` for the second
/// policy) opens on outcome `K`. [`SEGMENT_BUDGET`] is over every run of
/// the page, and the other budgets are shared out among them. Errors as
/// [`render_html`]'s; [`RenderError::Empty`] when a policy has no run.
pub fn render_html_outcomes(
    panels: &[OutcomePanel<'_>],
    opts: &ChartOptions,
) -> Result<String, RenderError> {
    let json = outcome_report_data(panels, opts)?;
    let names: Vec<&str> = panels.iter().map(|p| p.name.as_str()).collect();
    let title = format!(
        "poolsim: {} · {} · the outcomes of {} runs",
        panels[0].runs[0].1.scenario,
        names.join(" vs "),
        thousands(panels[0].spread.runs as u64)
    );
    Ok(page(&title, &json, Some(&picker_markup(panels))))
}

/// The data of [`render_html_outcomes`]'s page, as [`report_data`]'s: its
/// `panels` are the runs drawn when the page opens, and `outcomes` has,
/// per panel, the choices, each with its figures and its run (`panel`;
/// `null` for the one `panels` holds).
pub fn outcome_report_data(
    panels: &[OutcomePanel<'_>],
    opts: &ChartOptions,
) -> Result<String, RenderError> {
    if panels.is_empty() || panels.iter().any(|p| p.runs.is_empty()) {
        return Err(RenderError::Empty);
    }
    if let Some(p) = panels
        .iter()
        .find(|p| p.outcomes.len() != p.runs.len() || p.selected >= p.runs.len())
    {
        return Err(RenderError::Draw(format!(
            "{}: {} runs, {} outcomes, run {} drawn",
            p.name,
            p.runs.len(),
            p.outcomes.len(),
            p.selected
        )));
    }
    // The window's checks against the latest run of the page.
    let latest = panels
        .iter()
        .max_by_key(|p| p.runs.iter().map(|(_, t)| t.end).max())
        .unwrap_or(&panels[0]);
    let (run_end, window) = checked_window(&latest.runs, opts)?;
    let all: Vec<&Timeline> = panels
        .iter()
        .flat_map(|p| p.runs.iter().map(|(_, t)| t))
        .collect();
    let frame = Frame::of(&all, run_end, window);
    let budgets = Budgets::shared(all.len());
    let drawn: Vec<PanelData<'_>> = panels
        .iter()
        .map(|p| {
            let (title, t) = &p.runs[p.selected];
            PanelData::of(title, t, &frame, budgets)
        })
        .collect();
    let pickers: Vec<OutcomePicker<'_>> = panels
        .iter()
        .map(|p| {
            let s = p.spread;
            let drawn_outcomes: Vec<usize> = p.outcomes.iter().flatten().copied().collect();
            let left_out: Vec<&crate::spread::OutcomeShare> = s
                .outcomes
                .iter()
                .enumerate()
                .filter(|(k, _)| !drawn_outcomes.contains(k))
                .map(|(_, o)| o)
                .collect();
            OutcomePicker {
                name: &p.name,
                runs: s.runs,
                first_seed: s.first_seed,
                incomplete: s.incomplete,
                outcomes: s.outcomes.len(),
                selected: p.selected,
                left_out: OutcomesLeftOut {
                    outcomes: left_out.len(),
                    runs: left_out.iter().map(|o| o.count).sum(),
                },
                hint: p.hint.as_deref(),
                choices: p
                    .runs
                    .iter()
                    .zip(&p.outcomes)
                    .enumerate()
                    .map(|(ci, ((title, t), &k))| {
                        let o = k.and_then(|k| s.outcomes.get(k));
                        ChoiceData {
                            outcome: k.map(|k| k + 1),
                            share: o.map(|o| o.share),
                            count: o.map_or(s.incomplete, |o| o.count),
                            makespan_ms: o.map(|o| o.makespan_ms),
                            threads_peak: o.map(|o| o.threads_peak),
                            run_makespan_ms: own_makespan(s, t.seed),
                            seed: t.seed,
                            first: t.seed == s.first_seed,
                            label: choice_label(s, k, t.seed),
                            panel: (ci != p.selected)
                                .then(|| PanelData::of(title, t, &frame, budgets)),
                        }
                    })
                    .collect(),
            }
        })
        .collect();
    to_json(&frame.page(drawn, Some(pickers)))
}

/// A share as the picker says it, to a tenth as `run --runs` does:
/// "58 %", "42.5 %".
fn percent(share: f64) -> String {
    let p = share * 100.0;
    if (p - p.round()).abs() < 1e-9 {
        format!("{p:.0} %")
    } else {
        format!("{p:.1} %")
    }
}

/// The runs a share is of: every run, or the completed ones.
fn runs_counted(s: &Spread) -> String {
    if s.incomplete == 0 {
        format!("{} runs", thousands(s.runs as u64))
    } else {
        format!(
            "{} completed runs",
            thousands((s.runs - s.incomplete) as u64)
        )
    }
}

/// The makespan of the run of `seed` among the spread's, if it completed.
fn own_makespan(s: &Spread, seed: u64) -> Option<f64> {
    s.per_run
        .iter()
        .find(|r| r.seed == seed && r.completed)
        .map(|r| r.makespan_ms)
}

/// A choice of the picker: "outcome 2 of 3 · 30 % of 50 runs · 4.87 s,
/// peak 3 threads · seed 8 (the first seed)". The outcome's makespan is
/// its runs' median: the seed's own run, when it says another, follows.
fn choice_label(s: &Spread, outcome: Option<usize>, seed: u64) -> String {
    let mut notes: Vec<String> = Vec::new();
    if seed == s.first_seed {
        notes.push("the first seed".into());
    }
    match outcome.and_then(|k| s.outcomes.get(k).map(|o| (k, o))) {
        Some((k, o)) => {
            let median = human_ms(o.makespan_ms);
            if let Some(own) = own_makespan(s, seed).map(human_ms)
                && own != median
            {
                notes.push(format!("its run {own}"));
            }
            let notes = if notes.is_empty() {
                String::new()
            } else {
                format!(" ({})", notes.join("; "))
            };
            format!(
                "outcome {} of {} · {} of {} · {median}, peak {} threads · seed {seed}{notes}",
                k + 1,
                s.outcomes.len(),
                percent(o.share),
                runs_counted(s),
                o.threads_peak,
            )
        }
        None => format!(
            "seed {seed}{}: did not complete · {} of {} runs did not complete",
            if notes.is_empty() {
                ""
            } else {
                " (the first seed)"
            },
            thousands(s.incomplete as u64),
            thousands(s.runs as u64)
        ),
    }
}

/// The pickers' markup, above the charts: per policy a group of radio
/// buttons, one per run, each with its outcome's share as a bar.
fn picker_markup(panels: &[OutcomePanel<'_>]) -> String {
    let mut out =
        String::from("<section id=\"outcomes\" aria-label=\"Outcomes over the seeds\">\n");
    for (i, p) in panels.iter().enumerate() {
        let s = p.spread;
        let n = s.outcomes.len();
        out.push_str(&format!(
            "<fieldset class=\"outcomes\" id=\"outcomes-{i}\" data-panel=\"{i}\">\n<legend>{}: {} distinct outcome{} over {} runs (seeds {} to {}): pick the one to draw</legend>\n<div class=\"choices\">\n",
            escape(&p.name),
            thousands(n as u64),
            if n == 1 { "" } else { "s" },
            thousands(s.runs as u64),
            s.first_seed,
            s.first_seed.wrapping_add(s.runs.max(1) as u64 - 1),
        ));
        for (ci, ((_, t), &k)) in p.runs.iter().zip(&p.outcomes).enumerate() {
            let share = k.and_then(|k| s.outcomes.get(k)).map_or(0.0, |o| o.share);
            out.push_str(&format!(
                "<label class=\"outcome\"><input type=\"radio\" name=\"outcome-{i}\" value=\"{ci}\" data-outcome=\"{}\" autocomplete=\"off\"{}><span class=\"share\" aria-hidden=\"true\"><span style=\"width:{:.1}%\"></span></span><span class=\"text\">{}</span></label>\n",
                k.map_or_else(|| "incomplete".to_string(), |k| (k + 1).to_string()),
                if ci == p.selected { " checked" } else { "" },
                share * 100.0,
                escape(&choice_label(s, k, t.seed)),
            ));
        }
        out.push_str("</div>\n<p class=\"outcome-note\">");
        let drawn: Vec<usize> = p.outcomes.iter().flatten().copied().collect();
        let rest: Vec<usize> = (0..n).filter(|k| !drawn.contains(k)).collect();
        if !rest.is_empty() {
            let runs: usize = rest.iter().map(|&k| s.outcomes[k].count).sum();
            out.push_str(&format!(
                "{} less common outcome{} ({} run{}) {} left out of this page. ",
                thousands(rest.len() as u64),
                if rest.len() == 1 { "" } else { "s" },
                thousands(runs as u64),
                if runs == 1 { "" } else { "s" },
                if rest.len() == 1 { "is" } else { "are" },
            ));
        }
        if s.incomplete > 0 && !p.outcomes.contains(&None) {
            out.push_str(&format!(
                "{} of the runs did not complete and are in no outcome. ",
                thousands(s.incomplete as u64)
            ));
        }
        out.push_str(
            "Tab to the choices, <kbd>↑</kbd> <kbd>↓</kbd> to pick; the address's <code>#outcome=K</code> opens outcome K.",
        );
        if let Some(hint) = &p.hint {
            out.push_str(&format!(
                " Why an outcome: <code>{}</code> (K: its seed).",
                escape(hint)
            ));
        }
        out.push_str("</p>\n</fieldset>\n");
    }
    out.push_str("</section>\n");
    out
}

#[derive(Serialize)]
struct OutcomePicker<'a> {
    /// The policy.
    name: &'a str,
    runs: usize,
    first_seed: u64,
    incomplete: usize,
    /// The distinct outcomes over the runs, drawn or not.
    outcomes: usize,
    /// The choice drawn when the page opens (the page's panel).
    selected: usize,
    left_out: OutcomesLeftOut,
    hint: Option<&'a str>,
    choices: Vec<ChoiceData<'a>>,
}

/// The outcomes (and their runs) the page does not draw.
#[derive(Serialize)]
struct OutcomesLeftOut {
    outcomes: usize,
    runs: usize,
}

#[derive(Serialize)]
struct ChoiceData<'a> {
    /// The outcome's number as `run --runs` prints it (1: the most common);
    /// null: a run that did not complete.
    outcome: Option<usize>,
    /// Of the completed runs.
    share: Option<f64>,
    /// Its runs (a run that did not complete: every such run).
    count: usize,
    /// The outcome's median makespan and its peak (the run's own are
    /// within [`crate::spread::SAME_OUTCOME`] of it, and the same).
    makespan_ms: Option<f64>,
    threads_peak: Option<u32>,
    /// The makespan of this run (of its seed), when it completed.
    run_makespan_ms: Option<f64>,
    /// The run's seed: the outcome's first.
    seed: u64,
    /// Whether it is the first seed's run.
    first: bool,
    label: String,
    /// The run; null for the one the page's `panels` hold.
    panel: Option<PanelData<'a>>,
}

/// What every panel of a page shares: the time axis, the window, the
/// groups' colours and the merge step.
struct Frame {
    /// The shared time axis ends here (ns).
    end: u64,
    window: Option<(u64, u64)>,
    /// Groups in order of first appearance over the runs.
    group_names: Vec<String>,
    /// The merge step of the segments in ns; 0: exact.
    resolution: u64,
}

impl Frame {
    /// The frame of `timelines` (every run the page holds), which end at
    /// `run_end`, opening on `window`.
    fn of(timelines: &[&Timeline], run_end: SimTime, window: Option<(SimTime, SimTime)>) -> Frame {
        let window = window.map(|(from, to)| (from.as_nanos(), to.as_nanos()));
        let end = run_end.as_nanos().max(1);

        // Groups in order of first appearance over the panels, as the PNG's
        // legend colours them.
        let mut group_names: Vec<String> = Vec::new();
        for t in timelines {
            for g in &t.groups {
                if !group_names.contains(g) {
                    group_names.push(g.clone());
                }
            }
        }

        // One merge step for every run: they share the time axis, and the
        // budget is the page's.
        let total: usize = timelines.iter().map(|t| t.segment_count()).sum();
        let resolution = if total <= SEGMENT_BUDGET {
            0
        } else {
            let mut r = (end / STEPS).max(1);
            loop {
                let kept: usize = timelines
                    .iter()
                    .flat_map(|t| &t.lanes)
                    .map(|l| merge_lane(&l.segments, r).len())
                    .sum();
                if kept <= SEGMENT_BUDGET {
                    break r;
                }
                r = r.saturating_mul(2);
            }
        };
        Frame {
            end,
            window,
            group_names,
            resolution,
        }
    }

    fn page<'a>(
        &self,
        panels: Vec<PanelData<'a>>,
        outcomes: Option<Vec<OutcomePicker<'a>>>,
    ) -> Page<'a> {
        Page {
            format: 1,
            end: self.end,
            window: self.window,
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
            groups: self
                .group_names
                .iter()
                .enumerate()
                .map(|(i, name)| GroupStyle::of(name.clone(), style::group_color(i)))
                .collect(),
            internal: GroupStyle::of(String::new(), style::INTERNAL),
            colors: Colors::new(),
            panels,
            outcomes,
        }
    }
}

fn to_json(page: &Page<'_>) -> Result<String, RenderError> {
    serde_json::to_string(page).map_err(|e| RenderError::Draw(format!("the report's data: {e}")))
}

/// How much of each run a page keeps, past [`SEGMENT_BUDGET`] (which is
/// the page's): a page of one run (or of `compare`'s few) keeps the whole
/// budgets for each; a page of `--runs`' outcomes shares them out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Budgets {
    series: usize,
    decisions: usize,
    whys: usize,
    /// What a lane past `whys` says instead of its sentence (none: the
    /// page's script says a run has more than [`WHY_BUDGET`] threads).
    why_left_out: Option<&'static str>,
}

impl Budgets {
    const FULL: Budgets = Budgets {
        series: SERIES_BUDGET,
        decisions: DECISION_BUDGET,
        whys: WHY_BUDGET,
        why_left_out: None,
    };

    /// The budgets of each of `runs` runs that share one page's.
    fn shared(runs: usize) -> Budgets {
        let runs = runs.max(1);
        Budgets {
            series: (SERIES_BUDGET / runs).max(64),
            decisions: (DECISION_BUDGET / runs).max(64),
            whys: (WHY_BUDGET / runs).max(64),
            why_left_out: Some(
                "left out of this page, whose runs share the 4,096 sentences it keeps \
                 (poolsim explain --seed K tells every thread's)",
            ),
        }
    }
}

/// The page's fixed markup; the script fills the panels, legend and tables.
fn body(title: &str, extra: &str) -> String {
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
{extra}<main id="panels"></main>
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
    /// `--runs`: per panel, the outcomes to pick from (absent otherwise).
    #[serde(skip_serializing_if = "Option::is_none")]
    outcomes: Option<Vec<OutcomePicker<'a>>>,
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
    fn of(title: &'a str, t: &'a Timeline, frame: &Frame, budgets: Budgets) -> PanelData<'a> {
        let (group_names, resolution, window) =
            (&frame.group_names, frame.resolution, frame.window);
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
                let mut why = lane.why.as_deref().filter(|_| {
                    whys += 1;
                    whys <= budgets.whys
                });
                if lane.why.is_some() && why.is_none() {
                    left_out.whys += 1;
                    why = budgets.why_left_out;
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
        let counts = thin_series(&counts, end, budgets.series);
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
        let queued = thin_series(&queued, end, budgets.series);
        left_out.queue_points = t.queue.len() - queued.len();
        let mut queue = Vec::with_capacity(queued.len() * 2);
        let mut last = 0u64;
        for &(at, n, _) in &queued {
            queue.extend([(at - last) as i64, n]);
            last = at;
        }
        let probes_kept = thin_probes(t, end, budgets.series);
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
        let kept = pick_decisions(&marks, budgets.decisions);
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
        let goal_step = t.goals.len().div_ceil(budgets.decisions).max(1);
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

/// At most `budget` decisions ([`DECISION_BUDGET`] for a page of one
/// run), the strongest first, in time order.
fn pick_decisions<'a>(marks: &[&'a DecisionMark], budget: usize) -> Vec<&'a DecisionMark> {
    if marks.len() <= budget {
        return marks.to_vec();
    }
    let mut order: Vec<usize> = (0..marks.len()).collect();
    order.sort_by_key(|&i| (std::cmp::Reverse(level_of(marks[i])), i));
    order.truncate(budget);
    order.sort_unstable();
    order.into_iter().map(|i| marks[i]).collect()
}

/// A step series of `(at, value, other)` within `budget` points
/// ([`SERIES_BUDGET`] for a page of one run): past it, per time step, the
/// first, lowest and highest (of either value) and last points, in time
/// order.
fn thin_series(points: &[(u64, i64, i64)], end: u64, budget: usize) -> Vec<(u64, i64, i64)> {
    if points.len() <= budget {
        return points.to_vec();
    }
    let mut step = (end / (budget as u64 / 8).max(1)).max(1);
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
        if out.len() <= budget {
            return out;
        }
        step = step.saturating_mul(2);
    }
}

/// The probes as `(queued, latency or −1)`, within `budget` (as
/// [`thin_series`]'): past it, per time step, the one that waited longest.
fn thin_probes(t: &Timeline, end: u64, budget: usize) -> Vec<(u64, i64)> {
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
    if all.len() <= budget {
        return all;
    }
    let worse = |a: i64, b: i64| a == -1 || (b != -1 && a > b);
    let mut step = (end / (budget as u64 / 2).max(1)).max(1);
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
        if out.len() <= budget {
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
            call_groups: Vec::new(),
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

    /// A spread of `runs` (seed, makespan ms, peak) from seed 1.
    fn spread_of(runs: &[(u64, f64, u32)]) -> Spread {
        crate::spread::from_runs(
            1,
            runs.iter()
                .map(
                    |&(seed, makespan_ms, threads_peak)| crate::spread::RunFigures {
                        seed,
                        completed: true,
                        makespan_ms,
                        start_delay_p95_ms: 0.0,
                        threads_peak,
                        latency_ms: [0.0; 3],
                        start_offsets_ms: Vec::new(),
                        thread_curve: Default::default(),
                    },
                )
                .collect(),
        )
    }

    /// A run of `items` items with seed `seed`.
    fn seeded(items: usize, seed: u64) -> Timeline {
        let mut t = timeline(items);
        t.seed = seed;
        t
    }

    #[test]
    fn at_most_the_budget_s_outcomes_are_drawn_the_first_seed_s_among_them() {
        // Ten outcomes of two runs each, the last of one run: seed 1's.
        let mut runs: Vec<(u64, f64, u32)> = (0..10u32)
            .flat_map(|k| {
                let seed = 2 + 2 * u64::from(k);
                [(seed, 100.0, k + 1), (seed + 1, 100.0, k + 1)]
            })
            .collect();
        runs.push((1, 100.0, 50));
        let s = spread_of(&runs);
        assert_eq!(s.outcomes.len(), 11);
        let first = s.outcomes.iter().position(|o| o.seed == 1);
        assert_eq!(first, Some(10));
        let drawn = outcomes_drawn(&s, first);
        assert_eq!(drawn.len(), OUTCOME_BUDGET);
        assert_eq!(drawn, [0, 1, 2, 3, 4, 5, 6, 10]);
        assert_eq!(outcomes_drawn(&s, Some(3)), (0..8).collect::<Vec<_>>());
        assert_eq!(outcomes_drawn(&s, None), (0..8).collect::<Vec<_>>());
        let few = spread_of(&[(1, 100.0, 2), (2, 200.0, 3)]);
        assert_eq!(outcomes_drawn(&few, Some(1)), [0, 1]);
    }

    #[test]
    fn shares_are_said_to_a_tenth_as_the_command_line_says_them() {
        assert_eq!(percent(0.58), "58 %");
        assert_eq!(percent(0.425), "42.5 %");
        assert_eq!(percent(1.0), "100 %");
        assert_eq!(percent(1.0 / 3.0), "33.3 %");
    }

    #[test]
    fn an_outcome_page_holds_every_run_within_the_page_s_budget() {
        // Three outcomes whose runs hold more segments than the budget
        // together, not alone.
        let s = spread_of(&[(1, 10.0, 2), (2, 10.0, 2), (3, 20.0, 3), (4, 30.0, 4)]);
        let n = SEGMENT_BUDGET / 2 + 10;
        let panel = OutcomePanel {
            name: "p".into(),
            spread: &s,
            runs: vec![
                ("p · seed 1".into(), seeded(n, 1)),
                ("p · seed 3".into(), seeded(n, 3)),
                ("p · seed 4".into(), seeded(n, 4)),
            ],
            outcomes: vec![Some(0), Some(1), Some(2)],
            selected: 0,
            hint: Some("poolsim explain s.toml --seed K".into()),
        };
        let opts = ChartOptions::default();
        let html = render_html_outcomes(std::slice::from_ref(&panel), &opts).unwrap();
        let v = data(&html);
        let picker = &v["outcomes"][0];
        let choices = picker["choices"].as_array().unwrap();
        assert_eq!(choices.len(), 3);
        assert!(choices[0]["panel"].is_null());
        assert_eq!(v["panels"][0]["seed"], 1);
        let runs: Vec<&serde_json::Value> = std::iter::once(&v["panels"][0])
            .chain(choices[1..].iter().map(|c| &c["panel"]))
            .collect();
        assert_eq!(
            runs.iter()
                .map(|p| p["seed"].as_u64().unwrap())
                .collect::<Vec<_>>(),
            [1, 3, 4]
        );
        // One merge step for all, and the bars of every run within the
        // page's budget.
        let bars: usize = runs
            .iter()
            .flat_map(|p| p["lanes"].as_array().unwrap())
            .map(|l| l["segs"].as_array().unwrap().len() / 5)
            .sum();
        assert!(runs.iter().all(|p| p["resolution"].as_u64().unwrap() > 0));
        assert!(bars <= SEGMENT_BUDGET, "{bars}");
        let shares: f64 = choices.iter().map(|c| c["share"].as_f64().unwrap()).sum();
        assert!((shares - 1.0).abs() < 1e-12);
        assert_eq!(
            choices[0]["label"],
            "outcome 1 of 3 · 50 % of 4 runs · 10.0 ms, peak 2 threads · seed 1 (the first seed)"
        );
        // The picker's markup and script, with the radio of the run drawn
        // checked; a page without outcomes has neither.
        assert!(html.contains("<fieldset class=\"outcomes\" id=\"outcomes-0\""));
        assert_eq!(html.matches("<input type=\"radio\"").count(), 3);
        assert!(html.contains("value=\"0\" data-outcome=\"1\" autocomplete=\"off\" checked>"));
        assert!(html.contains(OUTCOMES_JS) && html.contains(OUTCOMES_CSS));
        let plain = render_html(&[("p".into(), seeded(4, 1))], &opts).unwrap();
        assert!(!plain.contains(OUTCOMES_JS) && !plain.contains("id=\"outcomes\""));
        assert!(data(&plain).get("outcomes").is_none());
        // The same panels give the same bytes.
        assert!(html == render_html_outcomes(std::slice::from_ref(&panel), &opts).unwrap());
    }

    #[test]
    fn an_outcome_page_refuses_runs_without_their_outcomes() {
        let s = spread_of(&[(1, 10.0, 2)]);
        let opts = ChartOptions::default();
        let panel = |outcomes: Vec<Option<usize>>, selected: usize| OutcomePanel {
            name: "p".into(),
            spread: &s,
            runs: vec![("p".into(), seeded(4, 1))],
            outcomes,
            selected,
            hint: None,
        };
        assert!(matches!(
            outcome_report_data(&[panel(vec![], 0)], &opts),
            Err(RenderError::Draw(_))
        ));
        assert!(matches!(
            outcome_report_data(&[panel(vec![Some(0)], 1)], &opts),
            Err(RenderError::Draw(_))
        ));
        assert!(matches!(
            outcome_report_data(&[], &opts),
            Err(RenderError::Empty)
        ));
        assert!(outcome_report_data(&[panel(vec![Some(0)], 0)], &opts).is_ok());
    }
}
