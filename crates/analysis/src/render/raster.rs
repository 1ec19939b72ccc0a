//! Per-pixel occupancy: how the chart stays readable and fast when items
//! or threads outnumber pixels.
//!
//! Each chart row (one thread, or a band of threads when lanes would be
//! thinner than two pixels) keeps one cell per pixel column. A segment adds
//! the fraction of each column it covers; the cell remembers the total
//! coverage and which (group, phase) covered most of it. The row is then
//! drawn as runs of equal colour, so a million one-microsecond items cost a
//! million additions and a few thousand rectangles, never a draw call each.

use crate::trace::Phase;

use super::canvas::Rgb;

/// What a cell is coloured by: a group (or none) and a phase.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Key(u32);

impl Key {
    const NONE: u32 = 0;

    /// `alternate` marks every other item, so back-to-back items of one
    /// group stay apart.
    pub fn new(group: Option<u32>, phase: Phase, alternate: bool) -> Key {
        let g = group.map_or(0, |g| g.saturating_add(1).min(0x03ff_ffff));
        Key((g << 5) | (u32::from(alternate) << 4) | phase_index(phase) as u32 | 0x8000_0000)
    }

    pub fn alternate(self) -> bool {
        self.0 & 16 != 0
    }

    pub fn is_none(self) -> bool {
        self.0 == Key::NONE
    }

    pub fn group(self) -> Option<u32> {
        let g = (self.0 & 0x7fff_ffff) >> 5;
        g.checked_sub(1)
    }

    pub fn phase(self) -> Phase {
        PHASES[(self.0 & 15) as usize % PHASES.len()]
    }
}

/// Every phase, in [`phase_index`] order.
pub(crate) const PHASES: [Phase; 8] = [
    Phase::Starting,
    Phase::Idle,
    Phase::Cpu,
    Phase::Spin,
    Phase::Sleep,
    Phase::Wait,
    Phase::Join,
    Phase::Internal,
];

pub(crate) fn phase_index(phase: Phase) -> usize {
    match phase {
        Phase::Starting => 0,
        Phase::Idle => 1,
        Phase::Cpu => 2,
        Phase::Spin => 3,
        Phase::Sleep => 4,
        Phase::Wait => 5,
        Phase::Join => 6,
        Phase::Internal => 7,
    }
}

#[derive(Clone, Copy, Debug, Default)]
struct Cell {
    /// Thread-columns alive (sum over the threads of the row).
    alive: f32,
    /// Thread-columns busy.
    busy: f32,
    /// The largest single contribution, and whose it was.
    best: f32,
    key: Key,
}

/// Occupancy cells of `rows` rows of `width` pixel columns.
pub(crate) struct Raster {
    width: usize,
    cells: Vec<Cell>,
}

impl Raster {
    pub fn new(rows: usize, width: usize) -> Raster {
        Raster {
            width,
            cells: vec![Cell::default(); rows * width],
        }
    }

    /// Calls `f(column, fraction)` for each column `[a, b)` (pixels) covers.
    fn spread(width: usize, a: f64, b: f64, mut f: impl FnMut(usize, f32)) {
        let a = a.max(0.0);
        let b = b.min(width as f64);
        if b <= a {
            return;
        }
        let first = a.floor() as usize;
        let last = (b.ceil() as usize).min(width);
        for c in first..last {
            let lo = a.max(c as f64);
            let hi = b.min(c as f64 + 1.0);
            if hi > lo {
                f(c, (hi - lo) as f32);
            }
        }
    }

    /// A thread of `row` exists over `[a, b)`.
    pub fn add_alive(&mut self, row: usize, a: f64, b: f64) {
        let base = row * self.width;
        let cells = &mut self.cells[base..base + self.width];
        Raster::spread(self.width, a, b, |c, f| cells[c].alive += f);
    }

    /// A thread of `row` is busy with `key` over `[a, b)`.
    pub fn add_busy(&mut self, row: usize, a: f64, b: f64, key: Key) {
        let base = row * self.width;
        let cells = &mut self.cells[base..base + self.width];
        Raster::spread(self.width, a, b, |c, f| {
            let cell = &mut cells[c];
            cell.busy += f;
            if f > cell.best {
                cell.best = f;
                cell.key = key;
            }
        });
    }

    /// Runs of equal colour in `row`: `(first column, end column, colour)`.
    /// `threads` is how many threads the row holds; `fill` gives the colour
    /// of a fully busy cell of a key; `alive` the colour of a fully alive,
    /// idle cell. Cells with nothing are skipped.
    pub fn runs(
        &self,
        row: usize,
        threads: usize,
        alive: Rgb,
        fill: impl Fn(Key) -> Rgb,
    ) -> Vec<(usize, usize, Rgb)> {
        let base = row * self.width;
        let cells = &self.cells[base..base + self.width];
        let n = threads.max(1) as f32;
        let mut out: Vec<(usize, usize, Rgb)> = Vec::new();
        for (c, cell) in cells.iter().enumerate() {
            let alive_frac = quantize(cell.alive / n);
            let background = Rgb::WHITE.mix(alive, alive_frac);
            let color = if cell.busy > 0.0 && !cell.key.is_none() {
                // Work stays visible however short: at least 40% strength.
                // A thread starting up is not work; it shows as long as it is.
                let busy = quantize(cell.busy / n);
                let strength = if cell.key.phase() == Phase::Starting {
                    busy
                } else {
                    0.4 + 0.6 * busy
                };
                Some(background.mix(fill(cell.key), strength))
            } else if alive_frac > 0.0 {
                Some(background)
            } else {
                None
            };
            let Some(color) = color else { continue };
            match out.last_mut() {
                Some(last) if last.1 == c && last.2 == color => last.1 = c + 1,
                _ => out.push((c, c + 1, color)),
            }
        }
        out
    }
}

/// Rounds a fraction up to eighths (so runs merge), within 0–1.
fn quantize(f: f32) -> f32 {
    if f <= 0.0 {
        0.0
    } else {
        ((f * 8.0).ceil() / 8.0).min(1.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_round_trip() {
        let k = Key::new(Some(3), Phase::Wait, true);
        assert_eq!(k.group(), Some(3));
        assert_eq!(k.phase(), Phase::Wait);
        assert!(k.alternate());
        let k = Key::new(None, Phase::Internal, false);
        assert_eq!(k.group(), None);
        assert_eq!(k.phase(), Phase::Internal);
        assert!(!k.is_none());
    }

    #[test]
    fn tiny_segments_merge_into_runs() {
        let mut r = Raster::new(1, 10);
        for i in 0..1000 {
            let a = i as f64 * 0.01;
            r.add_busy(0, a, a + 0.008, Key::new(Some(0), Phase::Cpu, false));
        }
        let runs = r.runs(0, 1, Rgb(200, 200, 200), |_| Rgb(0, 0, 0));
        assert_eq!(runs.len(), 1, "{runs:?}");
        assert_eq!((runs[0].0, runs[0].1), (0, 10));
    }
}
