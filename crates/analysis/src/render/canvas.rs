//! A small display list in pixel coordinates, drawn onto any plotters
//! backend: the PNG (bitmap into memory, then encoded with `png`) and the
//! SVG come from the same shapes, so both look the same.
//!
//! Every shape has an opaque colour (blends are computed before), and
//! rectangles are half-open `[x0, x1) × [y0, y1)` so adjacent ones never
//! overlap. The font is DejaVu Sans from the `dejavu` crate, registered once
//! with plotters; no system font is read.
//!
//! Tooltips ([`Canvas::tip`]) are SVG only: after the drawing, each is an
//! invisible rectangle with a `<title>`, in the order given, so a later one
//! (an item's bar) wins over an earlier one under it (its thread's lane).
//! A picture without tooltips is exactly what plotters draws.

use std::sync::{Once, OnceLock};

use ab_glyph::{Font, FontRef, GlyphId, PxScale, ScaleFont, point};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
#[cfg(not(target_arch = "wasm32"))]
use plotters::style::{FontStyle, register_font};

use super::RenderError;

/// The font family the charts use (registered by [`ensure_font`]).
pub(crate) const FONT: &str = "sans-serif";

static FONT_ONCE: Once = Once::new();

/// Registers DejaVu Sans (regular and bold) under [`FONT`], once per process.
pub(crate) fn ensure_font() {
    FONT_ONCE.call_once(|| {
        // The bytes are a valid font shipped by the crate; a failure would
        // only leave text undrawn, which `text_width` reports as an error.
        // plotters draws text with the browser's fonts on wasm32, where it
        // has no font registry; the PNG/SVG printers are not used there.
        #[cfg(not(target_arch = "wasm32"))]
        {
            let _ = register_font(FONT, FontStyle::Normal, dejavu::sans::regular());
            let _ = register_font(FONT, FontStyle::Bold, dejavu::sans::bold());
        }
    });
}

/// An opaque colour.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Rgb(pub u8, pub u8, pub u8);

impl Rgb {
    pub const WHITE: Rgb = Rgb(255, 255, 255);

    /// `self` moved towards `other` by `t` (0 = self, 1 = other).
    pub fn mix(self, other: Rgb, t: f32) -> Rgb {
        let t = t.clamp(0.0, 1.0);
        let m = |a: u8, b: u8| (f32::from(a) + (f32::from(b) - f32::from(a)) * t).round() as u8;
        Rgb(m(self.0, other.0), m(self.1, other.1), m(self.2, other.2))
    }

    /// `self` lightened towards white by `t`.
    pub fn tint(self, t: f32) -> Rgb {
        self.mix(Rgb::WHITE, t)
    }

    pub fn hex(h: u32) -> Rgb {
        Rgb((h >> 16) as u8, (h >> 8) as u8, h as u8)
    }

    fn color(self) -> RGBColor {
        RGBColor(self.0, self.1, self.2)
    }
}

/// Where a text's anchor point is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Anchor {
    LeftTop,
    LeftMiddle,
    CenterTop,
    RightMiddle,
}

#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Shape {
    /// Filled, half-open.
    Rect {
        x0: i32,
        y0: i32,
        x1: i32,
        y1: i32,
        color: Rgb,
    },
    /// One pixel wide.
    Line {
        from: (i32, i32),
        to: (i32, i32),
        color: Rgb,
    },
    Polygon {
        points: Vec<(i32, i32)>,
        color: Rgb,
    },
    Text {
        at: (i32, i32),
        text: String,
        size: u32,
        bold: bool,
        color: Rgb,
        anchor: Anchor,
    },
}

/// A hover area of the SVG and its text.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Tip {
    pub x0: i32,
    pub y0: i32,
    pub x1: i32,
    pub y1: i32,
    pub text: String,
}

/// The shapes of one picture, in drawing order.
#[derive(Clone, Debug, Default)]
pub(crate) struct Canvas {
    pub width: u32,
    pub height: u32,
    pub shapes: Vec<Shape>,
    /// SVG tooltips, bottom first.
    pub tips: Vec<Tip>,
}

impl Canvas {
    pub fn new(width: u32, height: u32) -> Canvas {
        Canvas {
            width,
            height,
            shapes: Vec::new(),
            tips: Vec::new(),
        }
    }

    /// A tooltip over `[x0, x1) × [y0, y1)` (SVG only).
    pub fn tip(&mut self, x0: i32, y0: i32, x1: i32, y1: i32, text: impl Into<String>) {
        if x1 > x0 && y1 > y0 {
            self.tips.push(Tip {
                x0,
                y0,
                x1,
                y1,
                text: text.into(),
            });
        }
    }

    pub fn rect(&mut self, x0: i32, y0: i32, x1: i32, y1: i32, color: Rgb) {
        if x1 > x0 && y1 > y0 {
            self.shapes.push(Shape::Rect {
                x0,
                y0,
                x1,
                y1,
                color,
            });
        }
    }

    /// A one-pixel outline just inside `[x0, x1) × [y0, y1)`.
    pub fn outline(&mut self, x0: i32, y0: i32, x1: i32, y1: i32, color: Rgb) {
        if x1 - x0 < 2 || y1 - y0 < 2 {
            self.rect(x0, y0, x1, y1, color);
            return;
        }
        self.rect(x0, y0, x1, y0 + 1, color);
        self.rect(x0, y1 - 1, x1, y1, color);
        self.rect(x0, y0 + 1, x0 + 1, y1 - 1, color);
        self.rect(x1 - 1, y0 + 1, x1, y1 - 1, color);
    }

    pub fn line(&mut self, from: (i32, i32), to: (i32, i32), color: Rgb) {
        self.shapes.push(Shape::Line { from, to, color });
    }

    pub fn polygon(&mut self, points: Vec<(i32, i32)>, color: Rgb) {
        self.shapes.push(Shape::Polygon { points, color });
    }

    pub fn text(
        &mut self,
        at: (i32, i32),
        text: impl Into<String>,
        size: u32,
        color: Rgb,
        anchor: Anchor,
    ) {
        self.shapes.push(Shape::Text {
            at,
            text: text.into(),
            size,
            bold: false,
            color,
            anchor,
        });
    }

    pub fn bold_text(
        &mut self,
        at: (i32, i32),
        text: impl Into<String>,
        size: u32,
        color: Rgb,
        anchor: Anchor,
    ) {
        self.shapes.push(Shape::Text {
            at,
            text: text.into(),
            size,
            bold: true,
            color,
            anchor,
        });
    }

    /// Draws the shapes onto `root`, white background first; text only
    /// when `with_text`.
    fn draw_on<DB: DrawingBackend>(
        &self,
        root: &DrawingArea<DB, Shift>,
        with_text: bool,
    ) -> Result<(), RenderError> {
        let err = |e: DrawingAreaErrorKind<DB::ErrorType>| RenderError::Draw(e.to_string());
        root.fill(&WHITE).map_err(err)?;
        for shape in &self.shapes {
            match shape {
                Shape::Text { .. } if !with_text => {}
                Shape::Rect {
                    x0,
                    y0,
                    x1,
                    y1,
                    color,
                } => root
                    .draw(&Rectangle::new(
                        [(*x0, *y0), (*x1, *y1)],
                        color.color().filled(),
                    ))
                    .map_err(err)?,
                Shape::Line { from, to, color } => root
                    .draw(&PathElement::new(vec![*from, *to], color.color()))
                    .map_err(err)?,
                Shape::Polygon { points, color } => root
                    .draw(&Polygon::new(points.clone(), color.color().filled()))
                    .map_err(err)?,
                Shape::Text {
                    at,
                    text,
                    size,
                    bold,
                    color,
                    anchor,
                } => {
                    let pos = match anchor {
                        Anchor::LeftTop => Pos::new(HPos::Left, VPos::Top),
                        Anchor::LeftMiddle => Pos::new(HPos::Left, VPos::Center),
                        Anchor::CenterTop => Pos::new(HPos::Center, VPos::Top),
                        Anchor::RightMiddle => Pos::new(HPos::Right, VPos::Center),
                    };
                    let style = if *bold {
                        FontStyle::Bold
                    } else {
                        FontStyle::Normal
                    };
                    let font = FontDesc::new(FontFamily::Name(FONT), f64::from(*size), style)
                        .color(&color.color())
                        .pos(pos);
                    root.draw(&Text::new(text.as_str(), *at, font))
                        .map_err(err)?
                }
            }
        }
        root.present().map_err(err)
    }

    /// Draws into an RGB buffer and encodes it as PNG.
    pub fn to_png(&self) -> Result<Vec<u8>, RenderError> {
        let (w, h) = (self.width, self.height);
        let mut pixels = vec![255u8; w as usize * h as usize * 3];
        {
            let backend = BitMapBackend::with_buffer(&mut pixels, (w, h));
            let root = backend.into_drawing_area();
            self.draw_on(&root, false)?;
        }
        // Text is rasterized here rather than by plotters, whose bitmap text
        // ignores glyph side bearings (uneven letter spacing).
        for shape in &self.shapes {
            if let Shape::Text {
                at,
                text,
                size,
                bold,
                color,
                anchor,
            } = shape
            {
                raster_text(
                    &mut pixels,
                    (w, h),
                    *at,
                    text,
                    *size,
                    *bold,
                    *color,
                    *anchor,
                );
            }
        }
        let mut out = Vec::new();
        {
            let mut encoder = png::Encoder::new(&mut out, w, h);
            encoder.set_color(png::ColorType::Rgb);
            encoder.set_depth(png::BitDepth::Eight);
            encoder.set_compression(png::Compression::Default);
            let mut writer = encoder
                .write_header()
                .map_err(|e| RenderError::Encode(e.to_string()))?;
            writer
                .write_image_data(&pixels)
                .map_err(|e| RenderError::Encode(e.to_string()))?;
            writer
                .finish()
                .map_err(|e| RenderError::Encode(e.to_string()))?;
        }
        Ok(out)
    }

    /// Draws into an SVG document, the tooltips last.
    pub fn to_svg(&self) -> Result<String, RenderError> {
        let mut out = String::new();
        {
            let backend = SVGBackend::with_string(&mut out, (self.width, self.height));
            let root = backend.into_drawing_area();
            self.draw_on(&root, true)?;
        }
        if self.tips.is_empty() {
            return Ok(out);
        }
        let Some(end) = out.rfind("</svg>") else {
            return Ok(out);
        };
        let mut tips = String::with_capacity(self.tips.len() * 160);
        tips.push_str("<g fill=\"#000\" fill-opacity=\"0\">\n");
        for t in &self.tips {
            use std::fmt::Write as _;
            let _ = writeln!(
                tips,
                "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"><title>{}</title></rect>",
                t.x0,
                t.y0,
                t.x1 - t.x0,
                t.y1 - t.y0,
                xml_escape(&t.text)
            );
        }
        tips.push_str("</g>\n");
        out.insert_str(end, &tips);
        Ok(out)
    }
}

/// `text` for an XML text node or attribute (control characters XML does
/// not allow are left out).
fn xml_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\n' | '\t' => out.push(c),
            c if c.is_control() => {}
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c => out.push(c),
        }
    }
    out
}

fn font(bold: bool) -> Option<&'static FontRef<'static>> {
    static REGULAR: OnceLock<Option<FontRef<'static>>> = OnceLock::new();
    static BOLD: OnceLock<Option<FontRef<'static>>> = OnceLock::new();
    if bold {
        BOLD.get_or_init(|| FontRef::try_from_slice(dejavu::sans::bold()).ok())
            .as_ref()
    } else {
        REGULAR
            .get_or_init(|| FontRef::try_from_slice(dejavu::sans::regular()).ok())
            .as_ref()
    }
}

/// The advance width of `text` in pixels, with kerning, and each glyph's
/// pen position.
fn layout(font: &FontRef<'static>, text: &str, size: u32) -> (f32, Vec<(GlyphId, f32)>) {
    let scaled = font.as_scaled(PxScale::from(size as f32));
    let mut pen = 0.0f32;
    let mut prev: Option<GlyphId> = None;
    let mut glyphs = Vec::with_capacity(text.len());
    for c in text.chars() {
        let id = scaled.glyph_id(c);
        if let Some(p) = prev {
            pen += scaled.kern(p, id);
        }
        glyphs.push((id, pen));
        pen += scaled.h_advance(id);
        prev = Some(id);
    }
    (pen, glyphs)
}

/// The width in pixels of `text` at `size`.
pub(crate) fn text_width(text: &str, size: u32, bold: bool) -> i32 {
    match font(bold) {
        Some(f) => layout(f, text, size).0.ceil() as i32,
        None => (text.chars().count() as u32 * size * 6 / 10) as i32,
    }
}

/// Cap height of DejaVu Sans as a fraction of the `PxScale` (1493 units of
/// a 2384-unit ascent-to-descent height): used to centre text vertically.
const CAP_HEIGHT: f32 = 1493.0 / 2384.0;

/// Draws `text` into an RGB buffer with anti-aliasing, at sub-pixel
/// positions from the font's advances, bearings and kerning.
#[allow(clippy::too_many_arguments)]
fn raster_text(
    pixels: &mut [u8],
    (w, h): (u32, u32),
    at: (i32, i32),
    text: &str,
    size: u32,
    bold: bool,
    color: Rgb,
    anchor: Anchor,
) {
    let Some(font) = font(bold) else { return };
    let scale = PxScale::from(size as f32);
    let (width, glyphs) = layout(font, text, size);
    let cap = CAP_HEIGHT * size as f32;
    let x0 = match anchor {
        Anchor::LeftTop | Anchor::LeftMiddle => at.0 as f32,
        Anchor::CenterTop => at.0 as f32 - width / 2.0,
        Anchor::RightMiddle => at.0 as f32 - width,
    }
    .round();
    let baseline = match anchor {
        Anchor::LeftTop | Anchor::CenterTop => at.1 as f32 + cap,
        Anchor::LeftMiddle | Anchor::RightMiddle => at.1 as f32 + cap / 2.0,
    }
    .round();
    for (id, pen) in glyphs {
        let glyph = id.with_scale_and_position(scale, point(x0 + pen, baseline));
        let Some(outline) = font.outline_glyph(glyph) else {
            continue;
        };
        let bounds = outline.px_bounds();
        let (bx, by) = (bounds.min.x as i32, bounds.min.y as i32);
        outline.draw(|gx, gy, coverage| {
            let (px, py) = (bx + gx as i32, by + gy as i32);
            if px < 0 || py < 0 || px >= w as i32 || py >= h as i32 || coverage <= 0.0 {
                return;
            }
            let i = (py as usize * w as usize + px as usize) * 3;
            let old = Rgb(pixels[i], pixels[i + 1], pixels[i + 2]);
            let new = old.mix(color, coverage.min(1.0));
            pixels[i] = new.0;
            pixels[i + 1] = new.1;
            pixels[i + 2] = new.2;
        });
    }
}
