//! Line charts of a metric against a swept parameter: one line per series
//! (a policy, or a policy at fixed other parameters), the spread over seeds
//! as a band around it, a dashed reference line (the scenario as written)
//! and a marked point (the best one). One panel per metric, stacked on a
//! shared x axis (linear, or logarithmic for geometric sweeps). A panel's y
//! axis turns logarithmic when its values span more than [`LOG_Y_SPAN`]
//! times, so that a good region of milliseconds is not flattened at zero by
//! a bad one of minutes. Tick labels group thousands (`1,194,989`).
//!
//! Drawn on the same `Canvas` as the Gantt charts, so text uses the
//! embedded DejaVu font and the same chart gives the same PNG bytes.

use super::RenderError;
use super::canvas::{Anchor, Canvas, Rgb, text_width};

/// One point of a line: the mean and the band around it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LinePoint {
    pub x: f64,
    pub y: f64,
    /// Band bottom (the lowest seed).
    pub lo: f64,
    /// Band top (the highest seed).
    pub hi: f64,
}

/// One metric's panel.
#[derive(Clone, Debug, PartialEq)]
pub struct LinePanel {
    /// Shown above the panel (the metric's name and meaning).
    pub title: String,
    /// One list per [`LineChart::series`] entry, in x order.
    pub lines: Vec<Vec<LinePoint>>,
    /// A horizontal dashed line (the scenario as written).
    pub reference: Option<f64>,
    /// A point to ring (the best point): x and y.
    pub marker: Option<(f64, f64)>,
}

/// A chart of one or more panels sharing an x axis.
#[derive(Clone, Debug, PartialEq)]
pub struct LineChart {
    pub title: String,
    pub subtitle: String,
    pub x_label: String,
    /// Logarithmic x axis (every x must be above 0).
    pub log_x: bool,
    /// Legend labels, one per line of every panel.
    pub series: Vec<String>,
    /// Legend label of the dashed reference line.
    pub reference_label: Option<String>,
    pub panels: Vec<LinePanel>,
}

const PALETTE: [u32; 10] = [
    0x1f77b4, 0xd62728, 0x2ca02c, 0xff7f0e, 0x9467bd, 0x8c564b, 0xe377c2, 0x17becf, 0xbcbd22,
    0x7f7f7f,
];
const INK: Rgb = Rgb(0x22, 0x22, 0x22);
const MUTED: Rgb = Rgb(0x66, 0x66, 0x66);
const GRID: Rgb = Rgb(0xe8, 0xe8, 0xe8);
const FRAME: Rgb = Rgb(0xaa, 0xaa, 0xaa);
const REFERENCE: Rgb = Rgb(0x55, 0x55, 0x55);

const LEFT: i32 = 86;
const PLOT_W: i32 = 760;
const PLOT_H: i32 = 250;
const TOP: i32 = 70;
const PANEL_TITLE: i32 = 24;
const PANEL_GAP: i32 = 34;
const LEGEND_GAP: i32 = 28;
const MAX_LEGEND: usize = 24;

fn color(i: usize) -> Rgb {
    Rgb::hex(PALETTE[i % PALETTE.len()])
}

/// A "nice" step (1, 2 or 5 × 10^k) giving about `target` intervals.
fn nice_step(span: f64, target: f64) -> f64 {
    let raw = (span / target).max(f64::MIN_POSITIVE);
    let mag = 10f64.powf(raw.log10().floor());
    let f = raw / mag;
    let m = if f <= 1.0 {
        1.0
    } else if f <= 2.0 {
        2.0
    } else if f <= 5.0 {
        5.0
    } else {
        10.0
    };
    m * mag
}

/// A panel's y axis is logarithmic when its largest value is more than this
/// many times its smallest positive one.
pub const LOG_Y_SPAN: f64 = 100.0;

/// Tick label with as many decimals as the step needs, thousands grouped.
fn tick_text(v: f64, step: f64) -> String {
    let decimals = if step >= 1.0 {
        0
    } else {
        ((-step.log10()).ceil() as usize).min(6)
    };
    let s = format!("{v:.decimals$}");
    if s.trim_start_matches('-')
        .chars()
        .all(|c| c == '0' || c == '.')
    {
        "0".to_string()
    } else {
        group_thousands(&s)
    }
}

/// `1194989.5` → `1,194,989.5`: commas between groups of three digits of
/// the whole part.
fn group_thousands(number: &str) -> String {
    let (sign, rest) = match number.strip_prefix('-') {
        Some(r) => ("-", r),
        None => ("", number),
    };
    let (whole, fraction) = match rest.find('.') {
        Some(k) => rest.split_at(k),
        None => (rest, ""),
    };
    if !whole.bytes().all(|b| b.is_ascii_digit()) {
        return number.to_string();
    }
    let mut grouped = String::with_capacity(whole.len() + whole.len() / 3);
    for (k, c) in whole.chars().enumerate() {
        if k > 0 && (whole.len() - k) % 3 == 0 {
            grouped.push(',');
        }
        grouped.push(c);
    }
    format!("{sign}{grouped}{fraction}")
}

/// A tick label of a value on a log axis: its own decimals, thousands grouped.
fn log_tick_text(v: f64) -> String {
    let step = 10f64.powf(v.log10().floor()).min(1.0);
    tick_text(v, step)
}

/// The x axis: data → pixels, and its ticks.
struct XAxis {
    log: bool,
    lo: f64,
    hi: f64,
    ticks: Vec<(f64, String)>,
}

impl XAxis {
    fn new(xs: &[f64], log: bool) -> XAxis {
        let log = log && xs.iter().all(|&x| x > 0.0);
        let f = |x: f64| if log { x.ln() } else { x };
        let mut distinct: Vec<f64> = xs.to_vec();
        distinct.sort_by(f64::total_cmp);
        distinct.dedup();
        let (min, max) = match (distinct.first(), distinct.last()) {
            (Some(&a), Some(&b)) => (a, b),
            _ => (0.0, 1.0),
        };
        let (mut lo, mut hi) = (f(min), f(max));
        if hi - lo <= 0.0 {
            lo -= 1.0;
            hi += 1.0;
        }
        let pad = (hi - lo) * 0.03;
        let ticks = if distinct.len() <= 12 || log {
            let every = distinct.len().div_ceil(12).max(1);
            distinct
                .iter()
                .step_by(every)
                .map(|&x| (x, group_thousands(&format!("{x}"))))
                .collect()
        } else {
            let step = nice_step(max - min, 8.0);
            let first = (min / step).ceil() as i64;
            let last = (max / step).floor() as i64;
            (first..=last)
                .map(|k| {
                    let x = k as f64 * step;
                    (x, tick_text(x, step))
                })
                .collect()
        };
        XAxis {
            log,
            lo: lo - pad,
            hi: hi + pad,
            ticks,
        }
    }

    fn px(&self, x: f64) -> i32 {
        let v = if self.log { x.ln() } else { x };
        LEFT + ((v - self.lo) / (self.hi - self.lo) * f64::from(PLOT_W)).round() as i32
    }
}

/// A y axis of one panel: linear from a nice floor, or logarithmic over
/// the decades that hold the values (those at or below 0 drawn on the
/// floor, whose label says `≤`).
struct YAxis {
    log: bool,
    lo: f64,
    hi: f64,
    ticks: Vec<(f64, String)>,
    top: i32,
}

impl YAxis {
    fn new(panel: &LinePanel, top: i32) -> YAxis {
        let mut values: Vec<f64> = panel
            .lines
            .iter()
            .flatten()
            .flat_map(|p| [p.lo, p.hi, p.y])
            .collect();
        values.extend(panel.reference);
        let min = values.iter().copied().fold(f64::INFINITY, f64::min);
        let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let min_positive = values
            .iter()
            .copied()
            .filter(|&v| v > 0.0)
            .fold(f64::INFINITY, f64::min);
        if min_positive.is_finite() && min >= 0.0 && max / min_positive > LOG_Y_SPAN {
            return YAxis::log(min_positive, max, min <= 0.0, top);
        }
        let (min, max) = if min.is_finite() {
            (min.min(0.0), max)
        } else {
            (0.0, 1.0)
        };
        let max = if max - min <= 0.0 { min + 1.0 } else { max };
        let step = nice_step(max - min, 5.0);
        let (lo, hi) = ((min / step).floor() * step, (max / step).ceil() * step);
        let mut ticks = Vec::new();
        let mut k = 0;
        loop {
            let y = lo + f64::from(k) * step;
            if y > hi + step * 1e-9 {
                break;
            }
            ticks.push((y, tick_text(y, step)));
            k += 1;
        }
        YAxis {
            log: false,
            lo,
            hi,
            ticks,
            top,
        }
    }

    /// Decades from the one below `min_positive` to the one above `max`;
    /// with few decades, 2× and 5× ticks between them too.
    fn log(min_positive: f64, max: f64, has_zero: bool, top: i32) -> YAxis {
        let first = min_positive.log10().floor() as i32;
        let last = max.log10().ceil().max(f64::from(first) + 1.0) as i32;
        let mut ticks = Vec::new();
        let between: &[f64] = if last - first <= 3 {
            &[1.0, 2.0, 5.0]
        } else {
            &[1.0]
        };
        for d in first..=last {
            for &m in between {
                let v = m * 10f64.powi(d);
                if d == last && m > 1.0 {
                    break;
                }
                ticks.push((v, log_tick_text(v)));
            }
        }
        if has_zero && let Some(floor) = ticks.first_mut() {
            floor.1 = format!("≤ {}", floor.1);
        }
        YAxis {
            log: true,
            lo: 10f64.powi(first),
            hi: 10f64.powi(last),
            ticks,
            top,
        }
    }

    fn px(&self, y: f64) -> i32 {
        let fraction = if self.log {
            let y = y.max(self.lo);
            (y.log10() - self.lo.log10()) / (self.hi.log10() - self.lo.log10())
        } else {
            (y - self.lo) / (self.hi - self.lo)
        };
        self.top + PLOT_H - (fraction * f64::from(PLOT_H)).round() as i32
    }
}

/// A line two pixels thick.
fn thick_line(c: &mut Canvas, a: (i32, i32), b: (i32, i32), color: Rgb) {
    c.line(a, b, color);
    c.line((a.0, a.1 + 1), (b.0, b.1 + 1), color);
    c.line((a.0 + 1, a.1), (b.0 + 1, b.1), color);
}

/// A horizontal dashed line from `x0` to `x1`.
fn dashed(c: &mut Canvas, x0: i32, x1: i32, y: i32, color: Rgb) {
    let mut x = x0;
    while x < x1 {
        let end = (x + 7).min(x1);
        c.rect(x, y, end, y + 2, color);
        x += 12;
    }
}

fn legend_width(chart: &LineChart) -> i32 {
    chart
        .series
        .iter()
        .take(MAX_LEGEND)
        .chain(chart.reference_label.iter())
        .map(|s| text_width(s, 12, false))
        .max()
        .unwrap_or(0)
        .clamp(60, 320)
        + 40
}

/// Lays the chart out on a canvas.
fn draw(chart: &LineChart) -> Result<Canvas, RenderError> {
    if chart.panels.is_empty() {
        return Err(RenderError::Empty);
    }
    let legend_x = LEFT + PLOT_W + LEGEND_GAP;
    let width = legend_x + legend_width(chart) + 16;
    let panel_h = PANEL_TITLE + PLOT_H + PANEL_GAP;
    let height = TOP + panel_h * chart.panels.len() as i32 + 28;
    let mut c = Canvas::new(width as u32, height as u32);
    c.bold_text((LEFT, 14), chart.title.clone(), 17, INK, Anchor::LeftTop);
    c.text(
        (LEFT, 40),
        chart.subtitle.clone(),
        12,
        MUTED,
        Anchor::LeftTop,
    );

    let xs: Vec<f64> = chart
        .panels
        .iter()
        .flat_map(|p| p.lines.iter().flatten().map(|q| q.x))
        .collect();
    let x_axis = XAxis::new(&xs, chart.log_x);

    for (i, panel) in chart.panels.iter().enumerate() {
        let top = TOP + panel_h * i as i32 + PANEL_TITLE;
        let bottom = top + PLOT_H;
        c.bold_text(
            (LEFT, top - PANEL_TITLE + 4),
            panel.title.clone(),
            13,
            INK,
            Anchor::LeftTop,
        );
        let y_axis = YAxis::new(panel, top);
        // Grid and ticks.
        for (y, label) in &y_axis.ticks {
            let py = y_axis.px(*y);
            c.rect(LEFT, py, LEFT + PLOT_W, py + 1, GRID);
            c.text(
                (LEFT - 6, py),
                label.clone(),
                11,
                MUTED,
                Anchor::RightMiddle,
            );
        }
        if y_axis.log {
            c.text(
                (LEFT + PLOT_W, top - PANEL_TITLE + 11),
                "log scale",
                11,
                MUTED,
                Anchor::RightMiddle,
            );
        }
        for (x, label) in &x_axis.ticks {
            let px = x_axis.px(*x);
            c.rect(px, top, px + 1, bottom, GRID);
            c.rect(px, bottom, px + 1, bottom + 4, FRAME);
            c.text(
                (px, bottom + 6),
                label.clone(),
                11,
                MUTED,
                Anchor::CenterTop,
            );
        }
        c.outline(LEFT, top, LEFT + PLOT_W + 1, bottom + 1, FRAME);

        if panel.lines.iter().all(Vec::is_empty) {
            c.text(
                (LEFT + PLOT_W / 2, top + PLOT_H / 2 - 6),
                "no values of this metric (for probe metrics: the scenario has no [[probe]])",
                12,
                MUTED,
                Anchor::CenterTop,
            );
        }
        // Bands first, then the reference, then lines on top.
        for (s, line) in panel.lines.iter().enumerate() {
            let band = color(s).tint(0.78);
            if line.len() >= 2 && line.iter().any(|p| p.hi > p.lo) {
                let mut points: Vec<(i32, i32)> = line
                    .iter()
                    .map(|p| (x_axis.px(p.x), y_axis.px(p.hi)))
                    .collect();
                points.extend(line.iter().rev().map(|p| (x_axis.px(p.x), y_axis.px(p.lo))));
                c.polygon(points, band);
            } else {
                for p in line.iter().filter(|p| p.hi > p.lo) {
                    let px = x_axis.px(p.x);
                    c.rect(px - 1, y_axis.px(p.hi), px + 2, y_axis.px(p.lo) + 1, band);
                }
            }
        }
        if let Some(r) = panel.reference {
            dashed(&mut c, LEFT + 1, LEFT + PLOT_W, y_axis.px(r), REFERENCE);
        }
        for (s, line) in panel.lines.iter().enumerate() {
            let col = color(s);
            for w in line.windows(2) {
                let a = (x_axis.px(w[0].x), y_axis.px(w[0].y));
                let b = (x_axis.px(w[1].x), y_axis.px(w[1].y));
                thick_line(&mut c, a, b, col);
            }
            for p in line {
                let (px, py) = (x_axis.px(p.x), y_axis.px(p.y));
                c.rect(px - 2, py - 2, px + 3, py + 3, col);
            }
        }
        if let Some((x, y)) = panel.marker {
            let (px, py) = (x_axis.px(x), y_axis.px(y));
            c.outline(px - 7, py - 7, px + 8, py + 8, INK);
            c.outline(px - 6, py - 6, px + 7, py + 7, INK);
            c.bold_text((px, py - 24), "best", 11, INK, Anchor::CenterTop);
        }
    }
    let last_bottom = TOP + panel_h * chart.panels.len() as i32 - PANEL_GAP;
    c.text(
        (LEFT + PLOT_W / 2, last_bottom + 22),
        chart.x_label.clone(),
        12,
        INK,
        Anchor::CenterTop,
    );

    // Legend.
    let mut y = TOP + PANEL_TITLE + 6;
    for (s, label) in chart.series.iter().enumerate().take(MAX_LEGEND) {
        let col = color(s);
        c.rect(legend_x, y - 5, legend_x + 24, y + 6, col.tint(0.78));
        thick_line(&mut c, (legend_x, y), (legend_x + 24, y), col);
        c.text(
            (legend_x + 32, y),
            label.clone(),
            12,
            INK,
            Anchor::LeftMiddle,
        );
        y += 20;
    }
    if chart.series.len() > MAX_LEGEND {
        c.text(
            (legend_x, y),
            format!("… and {} more", chart.series.len() - MAX_LEGEND),
            12,
            MUTED,
            Anchor::LeftMiddle,
        );
        y += 20;
    }
    if let Some(label) = &chart.reference_label {
        dashed(&mut c, legend_x, legend_x + 24, y, REFERENCE);
        c.text(
            (legend_x + 32, y),
            label.clone(),
            12,
            INK,
            Anchor::LeftMiddle,
        );
    }
    Ok(c)
}

/// Renders `chart` as a PNG.
pub fn render_lines_png(chart: &LineChart) -> Result<Vec<u8>, RenderError> {
    draw(chart)?.to_png()
}

/// Renders `chart` as an SVG.
pub fn render_lines_svg(chart: &LineChart) -> Result<String, RenderError> {
    super::canvas::ensure_font();
    draw(chart)?.to_svg()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chart() -> LineChart {
        let line = |k: f64| {
            (1..=8)
                .map(|i| {
                    let x = f64::from(i);
                    LinePoint {
                        x,
                        y: k * x,
                        lo: k * x - 1.0,
                        hi: k * x + 1.0,
                    }
                })
                .collect::<Vec<_>>()
        };
        LineChart {
            title: "t".into(),
            subtitle: "s".into(),
            x_label: "x".into(),
            log_x: false,
            series: vec!["a".into(), "b".into()],
            reference_label: Some("as written".into()),
            panels: vec![LinePanel {
                title: "makespan_ms".into(),
                lines: vec![line(1.0), line(2.0)],
                reference: Some(5.0),
                marker: Some((2.0, 2.0)),
            }],
        }
    }

    #[test]
    fn renders_the_same_png_twice() {
        let a = render_lines_png(&chart()).unwrap();
        assert!(a.starts_with(b"\x89PNG"));
        assert_eq!(a, render_lines_png(&chart()).unwrap());
        assert!(render_lines_svg(&chart()).unwrap().contains("<svg"));
    }

    #[test]
    fn an_empty_chart_is_an_error_and_an_empty_panel_is_not() {
        let mut c = chart();
        c.panels.clear();
        assert!(matches!(render_lines_png(&c), Err(RenderError::Empty)));
        let mut c = chart();
        c.panels[0].lines = vec![vec![], vec![]];
        c.panels[0].reference = None;
        c.panels[0].marker = None;
        assert!(render_lines_png(&c).is_ok());
    }

    #[test]
    fn a_y_axis_over_more_than_a_hundredfold_is_logarithmic() {
        // A sweep whose good region is tens of ms and bad one 20 minutes.
        let mut c = chart();
        c.panels[0].lines = vec![
            [55.0, 80.0, 400.0, 1_194_989.0]
                .iter()
                .enumerate()
                .map(|(i, &y)| LinePoint {
                    x: i as f64 + 1.0,
                    y,
                    lo: y,
                    hi: y,
                })
                .collect(),
        ];
        c.panels[0].reference = None;
        c.panels[0].marker = None;
        let y = YAxis::new(&c.panels[0], 0);
        assert!(y.log);
        // 55 and 80 ms sit apart (on a linear axis to 1.2 M both would be
        // on the floor's pixel).
        assert!(
            y.px(55.0) - y.px(80.0) >= 5,
            "{} {}",
            y.px(55.0),
            y.px(80.0)
        );
        let labels: Vec<&str> = y.ticks.iter().map(|t| t.1.as_str()).collect();
        assert_eq!(
            labels,
            [
                "10",
                "100",
                "1,000",
                "10,000",
                "100,000",
                "1,000,000",
                "10,000,000"
            ]
        );
        assert!(render_lines_svg(&c).unwrap().contains("log scale"));
        // Within a hundredfold: linear, from 0.
        let y = YAxis::new(&chart().panels[0], 0);
        assert!(!y.log);
        assert_eq!(y.ticks.first().map(|t| t.1.as_str()), Some("0"));
        // A zero among the values: the floor says it holds them.
        c.panels[0].lines[0][0].lo = 0.0;
        let y = YAxis::new(&c.panels[0], 0);
        assert!(y.log && y.ticks[0].1.starts_with("≤ "), "{:?}", y.ticks);
    }

    #[test]
    fn tick_labels_group_thousands() {
        assert_eq!(group_thousands("1194989"), "1,194,989");
        assert_eq!(group_thousands("-1234.5"), "-1,234.5");
        assert_eq!(group_thousands("999"), "999");
        assert_eq!(tick_text(250_000.0, 50_000.0), "250,000");
        assert_eq!(log_tick_text(0.01), "0.01");
    }

    #[test]
    fn axes_pick_nice_ticks() {
        assert_eq!(nice_step(63.0, 8.0), 10.0);
        assert_eq!(nice_step(0.9, 5.0), 0.2);
        assert_eq!(tick_text(0.30000000000000004, 0.1), "0.3");
        let x = XAxis::new(&[1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0], true);
        assert!(x.log);
        assert_eq!(x.ticks.len(), 7);
        assert!(x.px(1.0) < x.px(2.0));
        assert!(((x.px(2.0) - x.px(1.0)) - (x.px(4.0) - x.px(2.0))).abs() <= 1);
        let x = XAxis::new(&(1..=64).map(f64::from).collect::<Vec<_>>(), false);
        assert_eq!(x.ticks.first().map(|t| t.1.as_str()), Some("10"));
    }
}
