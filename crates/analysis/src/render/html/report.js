// poolsim's HTML report: draws the runs of a report's data (the JSON that
// crates/analysis/src/render/html.rs writes) on one canvas per run, all on
// one time axis, and answers the mouse and the keyboard: zoom, pan, and a
// tooltip for every bar, thread lane, count and decision, in `poolsim
// explain`'s words. No network, no library: this file is all.
//
// The drawing is one call, `PoolsimReport.render(data, options)`, that can
// be made again with new data: a report makes it once with its JSON block
// #poolsim-data; the playground (web/playground) on every change.
(function () {
  'use strict';

  // ---------------------------------------------------------------- data
  // The data drawn, set by render().
  let D = null, C = null;
  const ROWS = ['gate', 'blocking', 'climbing'];
  // Phase numbers (render/raster.rs's order).
  const STARTING = 0, CPU = 2, SPIN = 3, SLEEP = 4, WAIT = 5, JOIN = 6, INTERNAL = 7;
  const LEFT = 92, RIGHT = 84;
  const LANE_ROW = 28, LANE_ROW_MANY = 20;
  const COUNTS_H = 112, TICK_ROW = 20, AXIS_H = 54, PROBES_H = 26;
  const FONT = '"DejaVu Sans", "Segoe UI", Roboto, Helvetica, Arial, sans-serif';
  const font = (px, bold) => (bold ? 'bold ' : '') + px + 'px ' + FONT;
  const TIP_THREADS = 8, TIP_DECISIONS = 6;

  const $ = (id) => document.getElementById(id);
  const el = (tag, attrs, text) => {
    const e = document.createElement(tag);
    if (attrs) for (const k in attrs) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    return e;
  };

  // ---------------------------------------------------------- formatting
  function trim(v, decimals) {
    let s = v.toFixed(decimals);
    if (s.indexOf('.') >= 0) s = s.replace(/0+$/, '').replace(/\.$/, '');
    return s;
  }
  const ms = (ns) => trim(ns / 1e6, 3) + ' ms';
  function dur(ns) {
    const m = ns / 1e6;
    if (m >= 1000) return (m / 1000).toFixed(2) + ' s';
    if (m >= 10) return m.toFixed(0) + ' ms';
    if (m >= 0.1) return m.toFixed(2) + ' ms';
    return (m * 1000).toFixed(0) + ' µs';
  }
  const thousands = (n) => String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  const plural = (n, word) => thousands(n) + ' ' + word + (n === 1 ? '' : 's');

  // -------------------------------------------------------------- colour
  const rgbCache = new Map();
  function rgb(hex) {
    let v = rgbCache.get(hex);
    if (!v) {
      v = [parseInt(hex.slice(1, 3), 16), parseInt(hex.slice(3, 5), 16), parseInt(hex.slice(5, 7), 16)];
      rgbCache.set(hex, v);
    }
    return v;
  }
  const mix = (a, b, t) => [
    Math.round(a[0] + (b[0] - a[0]) * t),
    Math.round(a[1] + (b[1] - a[1]) * t),
    Math.round(a[2] + (b[2] - a[2]) * t),
  ];
  const css = (c) => 'rgb(' + c[0] + ',' + c[1] + ',' + c[2] + ')';
  const WHITE = [255, 255, 255];
  const groupStyle = (g) => (g >= 0 && g < D.groups.length ? D.groups[g] : D.internal);
  const reasonColor = (r) => (D.reasons[r] ? D.reasons[r].color : C.text);
  function probeColor(latencyNs) {
    const m = Math.max(latencyNs / 1e6, 0.001);
    const f = Math.min(Math.max(Math.log10(m / 10) / 2, 0), 1);
    return css(mix(rgb(C.probe_fast), rgb(C.probe_slow), f));
  }

  // -------------------------------------------------------------- search
  // The first index i in [0, n) with arr[i] > v (n if none).
  function upper(arr, n, v) {
    let lo = 0, hi = n;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (arr[mid] > v) hi = mid; else lo = mid + 1;
    }
    return lo;
  }
  // The first index i with arr[i] >= v.
  function lower(arr, n, v) {
    let lo = 0, hi = n;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (arr[mid] >= v) hi = mid; else lo = mid + 1;
    }
    return lo;
  }

  // -------------------------------------------------------------- decode
  function decodePanel(p, index) {
    const groupOf = new Map();
    const lanes = p.lanes.map((l) => {
      const s = l.segs, n = s.length / 5;
      const start = new Float64Array(n), end = new Float64Array(n);
      const item = new Int32Array(n), group = new Int32Array(n), phase = new Uint8Array(n);
      let last = 0;
      for (let i = 0; i < n; i++) {
        const a = last + s[5 * i], b = a + s[5 * i + 1];
        start[i] = a;
        end[i] = b;
        item[i] = s[5 * i + 2];
        group[i] = s[5 * i + 3] - 1;
        phase[i] = s[5 * i + 4];
        last = b;
        if (item[i] > 0 && !groupOf.has(item[i] - 1)) groupOf.set(item[i] - 1, group[i]);
      }
      return {
        thread: l.thread, created: l.created, exited: l.exited,
        until: l.exited === null ? p.end : l.exited,
        reason: l.reason, why: l.why, n, start, end, item, group, phase,
      };
    });
    const it = p.item_times, ni = it.length / 5;
    const items = {
      n: ni, id: new Int32Array(ni), queued: new Float64Array(ni), started: new Float64Array(ni),
      finished: new Float64Array(ni), thread: new Int32Array(ni),
    };
    {
      let id = -1, q = 0;
      for (let i = 0; i < ni; i++) {
        id += it[5 * i];
        q += it[5 * i + 1];
        items.id[i] = id;
        items.queued[i] = q;
        items.started[i] = q + it[5 * i + 2];
        items.finished[i] = it[5 * i + 3] < 0 ? NaN : items.started[i] + it[5 * i + 3];
        items.thread[i] = it[5 * i + 4];
      }
    }
    const series = (flat, width) => {
      const n = flat.length / width;
      const at = new Float64Array(n), v = new Float64Array(n), w = new Float64Array(n);
      let t = 0;
      for (let i = 0; i < n; i++) {
        t += flat[width * i];
        at[i] = t;
        v[i] = flat[width * i + 1];
        if (width > 2) w[i] = flat[width * i + 2];
      }
      return { n, at, v, w };
    };
    const threads = series(p.threads, 3);
    // The goal as its own step series (points that have one).
    const goal = { n: 0, at: [], v: [] };
    for (let i = 0; i < threads.n; i++) {
      if (threads.w[i] >= 0) {
        goal.at.push(threads.at[i]);
        goal.v.push(threads.w[i]);
      }
    }
    goal.n = goal.at.length;
    const queue = series(p.queue, 2);
    const probes = series(p.probes, 2);
    const decisions = p.decisions;
    const rows = [];
    for (let r = 0; r < ROWS.length; r++) {
      const list = [];
      decisions.forEach((d, i) => { if (d.row === r) list.push(i); });
      if (list.length) rows.push({ row: r, list, at: Float64Array.from(list, (i) => decisions[i].at) });
    }
    const creations = lanes.map((l, i) => i)
      .sort((a, b) => lanes[a].created - lanes[b].created || lanes[a].thread - lanes[b].thread);
    const laneOfThread = new Map();
    lanes.forEach((l, i) => laneOfThread.set(l.thread, i));
    const goalsAt = Float64Array.from(p.goals, (g) => g.at);
    let bars = 0;
    lanes.forEach((l) => { bars += l.n; });
    return {
      index, p, name: p.name, lanes, items, groupOf, threads, goal, queue, probes, decisions,
      rows, creations, laneOfThread, goalsAt, bars, end: p.end,
      sel: { lane: -1, bar: -1, decision: -1 },
    };
  }

  let panels = [], fullEnd = 1, MIN_SPAN = 1;
  const view = { t0: 0, t1: 1 };
  let activePanel = 0;

  // -------------------------------------------------------------- layout
  function layoutOf(P, width) {
    const n = Math.max(P.lanes.length, 1);
    const maxH = panels.length === 1 ? 720 : panels.length === 2 ? 480 : 360;
    const row = n <= 16 ? LANE_ROW : LANE_ROW_MANY;
    const lanesH = Math.min(Math.max(n * row, row), maxH);
    const perRow = lanesH >= 2 * n ? 1 : Math.ceil((2 * n) / lanesH);
    const rows = Math.ceil(n / perRow);
    let y = P.probes.n ? 6 : 22;
    let probesY = null;
    if (P.probes.n) {
      probesY = y;
      y += PROBES_H;
    }
    const lanesY = y;
    y += lanesH + 32;
    const countsY = y;
    y += COUNTS_H;
    const ticksY = y + 8;
    if (P.rows.length) y += 8 + P.rows.length * TICK_ROW + 4;
    const axisY = y;
    y += AXIS_H;
    return {
      width, height: y, plotW: Math.max(width - LEFT - RIGHT, 50),
      probesY, lanesY, lanesH, perRow, rows, rowH: lanesH / rows, countsY, ticksY, axisY,
    };
  }
  function rowSpan(L, r) {
    return [L.lanesY + Math.floor((r * L.lanesH) / L.rows), L.lanesY + Math.floor(((r + 1) * L.lanesH) / L.rows)];
  }
  function barSpan(y0, y1) {
    const h = y1 - y0;
    const pad = h <= 3 ? 0 : h <= 9 ? 1 : 2;
    return [y0 + pad, y1 - Math.max(pad, h >= 4 ? 1 : 0)];
  }

  // ------------------------------------------------------------- scales
  const span = () => view.t1 - view.t0;
  const xOf = (L, t) => LEFT + ((t - view.t0) / span()) * L.plotW;
  const tOf = (L, x) => view.t0 + ((x - LEFT) / L.plotW) * span();

  function niceStep(raw) {
    if (!(raw > 0) || !isFinite(raw)) return 1;
    const mag = Math.pow(10, Math.floor(Math.log10(raw)));
    for (const m of [1, 2, 5, 10]) if (m * mag >= raw * (1 - 1e-9)) return m * mag;
    return 10 * mag;
  }
  function timeTicks(t0, t1, target) {
    const spanMs = Math.max(t1 - t0, 1) / 1e6;
    const seconds = spanMs >= 2000;
    const stepMs = niceStep(spanMs / Math.max(target, 1));
    const stepNs = Math.max(stepMs * 1e6, 1);
    const scale = seconds ? 1000 : 1;
    const stepUnit = stepMs / scale;
    const decimals = stepUnit >= 1 ? 0 : Math.min(12, -Math.floor(Math.log10(stepUnit)));
    const at = [], labels = [];
    for (let k = Math.ceil(t0 / stepNs); at.length <= 1000; k++) {
      const ns = Math.round(k * stepNs);
      if (ns > t1) break;
      at.push(ns);
      labels.push((ns / 1e6 / scale).toFixed(decimals));
    }
    return { at, labels, unit: seconds ? 's' : 'ms' };
  }
  function intTicks(max) {
    max = Math.max(max, 1);
    let step = 1;
    search: for (let mag = 1; mag < 1e18; mag *= 100) {
      for (const m of [1, 2, 5, 10, 20, 25, 50]) {
        if (Math.ceil(max / (mag * m)) <= 5) {
          step = mag * m;
          break search;
        }
      }
    }
    const top = Math.ceil(max / step) * step;
    const at = [];
    for (let v = 0; v <= top; v += step) at.push(v);
    return { top, at };
  }

  // ------------------------------------------------------------ drawing
  function setupCanvas(P) {
    const width = Math.max(P.section.clientWidth, 480);
    const L = layoutOf(P, width);
    const dpr = window.devicePixelRatio || 1;
    const cv = P.canvas;
    if (cv.width !== Math.round(width * dpr) || cv.height !== Math.round(L.height * dpr)) {
      cv.width = Math.round(width * dpr);
      cv.height = Math.round(L.height * dpr);
      cv.style.height = L.height + 'px';
    }
    P.layout = L;
    P.dpr = dpr;
  }

  function drawPanel(P) {
    const L = P.layout, cv = P.canvas, ctx = cv.getContext('2d');
    ctx.setTransform(P.dpr, 0, 0, P.dpr, 0, 0);
    ctx.fillStyle = '#fff';
    ctx.fillRect(0, 0, L.width, L.height);
    const ticks = timeTicks(view.t0, view.t1, Math.max(2, Math.floor(L.plotW / 120)));
    if (L.probesY !== null) drawProbes(ctx, P, L);
    drawLanes(ctx, P, L, ticks);
    drawCounts(ctx, P, L, ticks);
    drawDecisions(ctx, P, L);
    drawAxis(ctx, L, ticks);
  }

  function text(ctx, s, x, y, px, color, align, baseline, bold) {
    ctx.font = font(px, bold);
    ctx.fillStyle = color;
    ctx.textAlign = align || 'left';
    ctx.textBaseline = baseline || 'middle';
    ctx.fillText(s, x, y);
  }

  function drawGrid(ctx, L, ticks, y0, y1) {
    ctx.fillStyle = C.grid;
    for (const at of ticks.at) ctx.fillRect(Math.round(xOf(L, at)), y0, 1, y1 - y0);
  }

  // One bar in its phase's style (render/gantt.rs's draw_bar).
  function drawBar(ctx, x0, x1, y0, y1, gs, phase) {
    if (x1 <= x0 || y1 <= y0) return;
    const h = y1 - y0, w = x1 - x0;
    const base = gs.base;
    ctx.fillStyle = gs.bar[phase];
    switch (phase) {
      case CPU:
        ctx.fillRect(x0, y0, w, h);
        break;
      case SPIN: {
        ctx.fillRect(x0, y0, w, h);
        ctx.save();
        ctx.beginPath();
        ctx.rect(x0, y0, w, h);
        ctx.clip();
        ctx.strokeStyle = base;
        ctx.lineWidth = 1;
        ctx.beginPath();
        for (let u = x0 - h; u < x1; u += 5) {
          ctx.moveTo(u, y1);
          ctx.lineTo(u + h, y0);
        }
        ctx.stroke();
        ctx.restore();
        if (w >= 3) outline(ctx, x0, y0, x1, y1, base);
        break;
      }
      case SLEEP:
        ctx.fillRect(x0, y0, w, h);
        outline(ctx, x0, y0, x1, y1, base);
        break;
      case WAIT:
        ctx.fillRect(x0, y0, w, h);
        outline(ctx, x0, y0, x1, y1, gs.wait_line);
        if (h >= 7) {
          ctx.fillStyle = base;
          const ym = y0 + Math.floor(h / 2);
          for (let u = x0 + 3; u + 2 <= x1 - 2; u += 5) ctx.fillRect(u, ym, 2, 1);
        }
        break;
      case JOIN:
        ctx.fillRect(x0, y0, w, h);
        outline(ctx, x0, y0, x1, y1, base);
        if (h >= 7) {
          ctx.fillStyle = css(mix(rgb(base), WHITE, 0.3));
          const ym = y0 + Math.floor(h / 2);
          ctx.fillRect(x0 + 2, ym - 1, Math.max(w - 4, 0), 2);
        }
        break;
      case INTERNAL: {
        const q = Math.floor(h / 4);
        ctx.fillStyle = C.internal;
        ctx.fillRect(x0, y0 + q, w, h - 2 * q);
        break;
      }
      case STARTING: {
        const q = Math.floor(h / 3);
        ctx.fillStyle = C.starting;
        ctx.fillRect(x0, y0 + q, w, h - 2 * q);
        break;
      }
      default:
        break;
    }
  }
  function outline(ctx, x0, y0, x1, y1, color) {
    ctx.strokeStyle = color;
    ctx.lineWidth = 1;
    ctx.strokeRect(x0 + 0.5, y0 + 0.5, x1 - x0 - 1, y1 - y0 - 1);
  }

  // Fractions up to eighths, so neighbouring columns share a colour.
  const quantize = (f) => (f <= 0 ? 0 : Math.min(Math.ceil(f * 8) / 8, 1));

  function drawLanes(ctx, P, L, ticks) {
    const w = Math.floor(L.plotW);
    const ly0 = L.lanesY, ly1 = L.lanesY + L.lanesH;
    const detailed = L.perRow === 1 && L.rowH >= 6;
    const nsPerPx = span() / L.plotW;
    if (!detailed) drawGrid(ctx, L, ticks, ly0, ly1);
    // Per row and pixel column: alive, busy, the largest piece and its key.
    const cells = L.rows * w;
    const alive = new Float32Array(cells), busy = new Float32Array(cells);
    const best = new Float32Array(cells), key = new Int32Array(cells);
    const spread = (row, a, b, f) => {
      a = Math.max(a, 0);
      b = Math.min(b, w);
      if (b <= a) return;
      const first = Math.floor(a), last = Math.min(Math.ceil(b), w);
      for (let c = first; c < last; c++) {
        const part = Math.min(b, c + 1) - Math.max(a, c);
        if (part > 0) f(row * w + c, part);
      }
    };
    const wide = [];
    P.lanes.forEach((lane, vi) => {
      const row = Math.floor(vi / L.perRow);
      spread(row, (lane.created - view.t0) / nsPerPx, (lane.until - view.t0) / nsPerPx, (i, part) => {
        alive[i] += part;
      });
      const from = upper(lane.end, lane.n, view.t0);
      for (let s = from; s < lane.n && lane.start[s] < view.t1; s++) {
        const a = (lane.start[s] - view.t0) / nsPerPx, b = (lane.end[s] - view.t0) / nsPerPx;
        if (detailed && b - a >= 2.5) {
          wide.push(vi, s);
          continue;
        }
        const alt = lane.item[s] > 0 && (lane.item[s] - 1) % 2 === 1 ? 16 : 0;
        const k = ((lane.group[s] + 1) << 5) | alt | lane.phase[s] | (1 << 30);
        spread(row, a, b, (i, part) => {
          busy[i] += part;
          if (part > best[i]) {
            best[i] = part;
            key[i] = k;
          }
        });
      }
    });
    const aliveRgb = rgb(C.alive);
    for (let r = 0; r < L.rows; r++) {
      const [y0, y1] = rowSpan(L, r);
      const [by0, by1] = barSpan(y0, y1);
      const inRow = r + 1 === L.rows ? Math.max(P.lanes.length, 1) - r * L.perRow : L.perRow;
      let runStart = -1, runColor = '';
      const flush = (end) => {
        if (runStart >= 0) {
          ctx.fillStyle = runColor;
          ctx.fillRect(LEFT + runStart, by0, end - runStart, by1 - by0);
        }
      };
      for (let c = 0; c < w; c++) {
        const i = r * w + c;
        const af = quantize(alive[i] / inRow);
        let color = '';
        const background = mix(WHITE, aliveRgb, af);
        if (busy[i] > 0 && key[i] !== 0) {
          const k = key[i];
          const phase = k & 15, alt = (k & 16) !== 0, g = ((k >> 5) & 0xffffff) - 1;
          const gs = groupStyle(g);
          const fill = rgb(alt ? gs.alternate[phase] : gs.dense[phase]);
          const bf = quantize(busy[i] / inRow);
          const strength = phase === STARTING ? bf : 0.4 + 0.6 * bf;
          color = css(mix(background, fill, strength));
        } else if (af > 0) {
          color = css(background);
        }
        if (color !== runColor || !color) {
          flush(c);
          runStart = color ? c : -1;
          runColor = color;
        }
      }
      flush(w);
    }
    if (detailed) drawGrid(ctx, L, ticks, ly0, ly1);
    // Wide bars as shapes, with the item's number where it fits.
    ctx.save();
    ctx.beginPath();
    ctx.rect(LEFT, ly0, L.plotW, L.lanesH);
    ctx.clip();
    let labelled = -1;
    for (let k = 0; k < wide.length; k += 2) {
      const vi = wide[k], s = wide[k + 1];
      const lane = P.lanes[vi];
      const [y0, y1] = rowSpan(L, vi);
      const [by0, by1] = barSpan(y0, y1);
      let x0 = Math.round(xOf(L, lane.start[s])), x1 = Math.round(xOf(L, lane.end[s]));
      if (s + 1 < lane.n && lane.item[s + 1] !== lane.item[s] && xOf(L, lane.start[s + 1]) - x1 < 1 && x1 - x0 >= 4) x1 -= 1;
      x0 = Math.max(x0, LEFT - 2);
      x1 = Math.min(x1, LEFT + L.plotW + 2);
      const gs = groupStyle(lane.group[s]);
      drawBar(ctx, x0, x1, by0, by1, gs, lane.phase[s]);
      const item = lane.item[s];
      if (item > 0 && by1 - by0 >= 16 && labelled !== vi * 1e9 + item) {
        const label = '#' + (item - 1);
        ctx.font = font(14);
        const tw = ctx.measureText(label).width;
        const lx = Math.max(x0, LEFT) + 5;
        if (lx + tw + 5 <= Math.min(x1, LEFT + L.plotW)) {
          const ym = (by0 + by1) / 2;
          let ink = '#fff';
          if (lane.phase[s] !== CPU) {
            ctx.fillStyle = gs.bar[lane.phase[s]];
            ctx.fillRect(lx - 2, ym - 8, tw + 4, 16);
            ink = C.text;
          }
          text(ctx, label, lx, ym + 1, 14, ink, 'left', 'middle');
          labelled = vi * 1e9 + item;
        }
      }
    }
    ctx.restore();
    // Creation marks, in the reason's colour, where each thread starts.
    if (L.perRow === 1 && L.rowH >= 5) {
      const s = Math.min(Math.max(Math.floor((L.rowH - 2) / 2), 2), 7);
      P.lanes.forEach((lane, vi) => {
        if (lane.created < view.t0 || lane.created > view.t1) return;
        const px = Math.round(xOf(L, lane.created));
        const [y0, y1] = rowSpan(L, vi);
        const yc = (y0 + y1) / 2;
        ctx.fillStyle = reasonColor(lane.reason);
        ctx.beginPath();
        ctx.moveTo(px - s - 1, yc - s);
        ctx.lineTo(px - s - 1, yc + s);
        ctx.lineTo(px, yc);
        ctx.closePath();
        ctx.fill();
      });
    }
    // Thread ids, as often as they fit.
    let every = Math.max(1, Math.round(niceStep((18 / Math.max(L.rowH, 1)) * L.perRow)));
    if (L.perRow > 1) every = Math.ceil(every / L.perRow) * L.perRow;
    for (let vi = 0; vi < P.lanes.length; vi += every) {
      const [y0, y1] = rowSpan(L, Math.floor(vi / L.perRow));
      text(ctx, String(P.lanes[vi].thread), LEFT - 10, (y0 + y1) / 2, 14, C.muted, 'right', 'middle');
    }
    if (L.probesY === null) text(ctx, 'thread', LEFT - 10, ly0 - 2, 14, C.muted, 'right', 'bottom');
    if (L.perRow > 1) {
      text(ctx, L.perRow + ' threads', LEFT + L.plotW + 8, ly0 + 2, 14, C.muted, 'left', 'top');
      text(ctx, 'per row', LEFT + L.plotW + 8, ly0 + 20, 14, C.muted, 'left', 'top');
    }
    if (!P.lanes.length) text(ctx, 'no pool threads', LEFT + 8, (ly0 + ly1) / 2, 14, C.muted, 'left', 'middle');
    ctx.strokeStyle = C.frame;
    ctx.lineWidth = 1;
    ctx.strokeRect(LEFT - 0.5, ly0 - 0.5, L.plotW + 1, L.lanesH + 1);
    // The keyboard's selection.
    const sel = P.sel;
    if (sel.lane >= 0 && P.index === activePanel) {
      const [y0, y1] = rowSpan(L, Math.floor(sel.lane / L.perRow));
      ctx.strokeStyle = '#1f3b73';
      ctx.lineWidth = 2;
      ctx.strokeRect(LEFT - 1, y0, L.plotW + 2, y1 - y0);
      if (sel.bar >= 0) {
        const lane = P.lanes[sel.lane];
        const x0 = Math.max(xOf(L, lane.start[sel.bar]), LEFT - 3);
        const x1 = Math.min(Math.max(xOf(L, lane.end[sel.bar]), x0 + 2), LEFT + L.plotW + 3);
        ctx.strokeStyle = '#000';
        ctx.lineWidth = 3;
        ctx.strokeRect(x0 - 2, y0 - 1, x1 - x0 + 4, y1 - y0 + 2);
      }
    }
  }

  // Per pixel column, the lowest and highest value a step series takes.
  function envelope(at, v, n, L, until) {
    const w = Math.floor(L.plotW);
    const lo = new Float64Array(w), hi = new Float64Array(w);
    const step = span() / L.plotW;
    let i = upper(at, n, view.t0);
    let current = i > 0 ? v[i - 1] : 0;
    for (let c = 0; c < w; c++) {
      const start = view.t0 + c * step, end = start + step;
      if (start > until) {
        lo[c] = NaN;
        hi[c] = NaN;
        continue;
      }
      let a = current, b = current;
      while (i < n && at[i] < end) {
        current = v[i];
        if (current < a) a = current;
        if (current > b) b = current;
        i++;
      }
      lo[c] = a;
      hi[c] = b;
    }
    return { lo, hi, w };
  }

  function drawCounts(ctx, P, L, ticks) {
    const y0 = L.countsY, y1 = L.countsY + COUNTS_H;
    const x0 = LEFT, x1 = LEFT + L.plotW;
    drawGrid(ctx, L, ticks, y0, y1);
    const yt = intTicks(P.p.max_threads), qt = intTicks(P.p.max_queue);
    const inner = COUNTS_H - 10;
    const yThreads = (v) => y1 - 1 - Math.round((v / yt.top) * inner);
    const yQueue = (v) => y1 - 1 - Math.round((v / qt.top) * inner);
    ctx.fillStyle = css(mix(rgb(C.grid), WHITE, 0.4));
    for (let k = 1; k < yt.at.length - 1; k++) ctx.fillRect(x0, yThreads(yt.at[k]), L.plotW, 1);
    if (P.queue.n) {
      const env = envelope(P.queue.at, P.queue.v, P.queue.n, L, P.end);
      ctx.fillStyle = C.queue_fill;
      let run = -1, ry = 0;
      for (let c = 0; c <= env.w; c++) {
        const hi = c < env.w ? env.hi[c] : NaN;
        const top = hi > 0 ? yQueue(hi) : null;
        if (run >= 0 && top !== ry) {
          ctx.fillRect(x0 + run, ry, c - run, y1 - 1 - ry);
          run = -1;
        }
        if (top !== null && run < 0) {
          run = c;
          ry = top;
        }
      }
    }
    const stepLine = (series, color, dashed) => {
      if (!series.n) return;
      const env = envelope(series.at, series.v, series.n, L, P.end);
      ctx.fillStyle = color;
      let run = -1, ra = 0, rb = 0;
      for (let c = 0; c <= env.w; c++) {
        let a = null, b = null;
        if (c < env.w && !isNaN(env.lo[c])) {
          const flat = env.lo[c] === env.hi[c];
          if (!(dashed && flat && Math.floor(c / 5) % 2 === 1)) {
            a = yThreads(env.hi[c]) - 1;
            b = yThreads(env.lo[c]) + 1;
          }
        }
        if (run >= 0 && (a !== ra || b !== rb)) {
          ctx.fillRect(x0 + run, ra, c - run, rb - ra);
          run = -1;
        }
        if (a !== null && run < 0) {
          run = c;
          ra = a;
          rb = b;
        }
      }
    };
    stepLine(P.threads, C.threads, false);
    stepLine(P.goal, C.goal, true);
    // Creations on the threads line, coloured by reason.
    let shown = 0;
    for (const li of P.creations) {
      const t = P.lanes[li].created;
      if (t >= view.t0 && t <= view.t1) shown++;
    }
    const r = Math.min(Math.max(Math.floor(L.plotW / Math.max(shown, 1) / 4), 2), 5);
    const lastBucket = new Map();
    for (const li of P.creations) {
      const lane = P.lanes[li];
      if (lane.created < view.t0 || lane.created > view.t1) continue;
      const px = Math.round(xOf(L, lane.created));
      const bucket = Math.floor((px - x0) / (r + 1));
      if (lastBucket.get(lane.reason) === bucket) continue;
      lastBucket.set(lane.reason, bucket);
      const k = upper(P.threads.at, P.threads.n, lane.created) - 1;
      const py = yThreads(k >= 0 ? P.threads.v[k] : 0);
      ctx.fillStyle = reasonColor(lane.reason);
      ctx.beginPath();
      ctx.moveTo(px, py - r);
      ctx.lineTo(px + r, py);
      ctx.lineTo(px, py + r);
      ctx.lineTo(px - r, py);
      ctx.closePath();
      ctx.fill();
    }
    ctx.strokeStyle = C.frame;
    ctx.lineWidth = 1;
    ctx.strokeRect(x0 - 0.5, y0 + 0.5, L.plotW + 1, COUNTS_H - 1);
    const labelY = (y) => Math.min(Math.max(y, y0 + 7), y1 - 6);
    for (const v of yt.at) {
      const y = yThreads(v);
      ctx.fillStyle = C.frame;
      ctx.fillRect(x0 - 5, y, 4, 1);
      text(ctx, thousands(v), x0 - 8, labelY(y), 14, C.threads, 'right', 'middle');
    }
    text(ctx, 'threads', x0 - 8, y0 - 10, 14, C.threads, 'right', 'middle');
    if (P.queue.n) {
      for (const v of qt.at) {
        const y = yQueue(v);
        ctx.fillStyle = C.frame;
        ctx.fillRect(x1 + 1, y, 4, 1);
        text(ctx, thousands(v), x1 + 8, labelY(y), 14, C.queue_text, 'left', 'middle');
      }
      text(ctx, 'queued', x1 + 8, y0 - 10, 14, C.queue_text, 'left', 'middle');
    }
  }

  const levelStyle = (level, reason) =>
    level === 2 ? [TICK_ROW - 2, reason >= 0 ? reasonColor(reason) : C.text]
      : level === 1 ? [12, C.tick_starved] : [7, C.tick_none];

  function drawDecisions(ctx, P, L) {
    const w = Math.floor(L.plotW);
    P.rows.forEach((R, ri) => {
      const y0 = L.ticksY + ri * TICK_ROW, y1 = y0 + TICK_ROW;
      text(ctx, ROWS[R.row], LEFT - 10, (y0 + y1) / 2, 14, C.muted, 'right', 'middle');
      ctx.fillStyle = C.grid;
      ctx.fillRect(LEFT, y1 - 1, L.plotW, 1);
      const from = lower(R.at, R.list.length, view.t0), to = upper(R.at, R.list.length, view.t1);
      const level = new Int8Array(w).fill(-1), reason = new Int32Array(w);
      for (let k = from; k < to; k++) {
        const d = P.decisions[R.list[k]];
        const c = Math.min(Math.max(Math.floor(xOf(L, d.at) - LEFT), 0), w - 1);
        if (d.level > level[c]) {
          level[c] = d.level;
          reason[c] = d.reason;
        }
      }
      const thick = (to - from) * 6 <= w ? 2 : 1;
      for (let c = 0; c < w; c++) {
        if (level[c] < 0) continue;
        const [h, color] = levelStyle(level[c], reason[c]);
        ctx.fillStyle = color;
        ctx.fillRect(LEFT + c, y1 - 1 - h, Math.min(thick, w - c), h);
      }
      const sel = P.sel.decision;
      if (sel >= 0 && P.index === activePanel && P.decisions[sel].row === R.row) {
        const x = xOf(L, P.decisions[sel].at);
        ctx.strokeStyle = '#000';
        ctx.lineWidth = 2;
        ctx.strokeRect(x - 4, y0, 9, TICK_ROW);
      }
    });
  }

  function drawAxis(ctx, L, ticks) {
    const y = L.axisY;
    ctx.fillStyle = C.frame;
    ctx.fillRect(LEFT, y, L.plotW, 1);
    ticks.at.forEach((at, k) => {
      const px = Math.round(xOf(L, at));
      ctx.fillStyle = C.muted;
      ctx.fillRect(px, y, 1, 5);
      text(ctx, ticks.labels[k], px, y + 8, 14, C.text, 'center', 'top');
    });
    text(ctx, 'time (' + ticks.unit + ')', LEFT + L.plotW / 2, y + 30, 14, C.muted, 'center', 'top');
  }

  function drawProbes(ctx, P, L) {
    const y = L.probesY, w = Math.floor(L.plotW);
    text(ctx, 'probes', LEFT - 10, y + PROBES_H / 2 - 2, 14, C.muted, 'right', 'middle');
    ctx.fillStyle = C.grid;
    ctx.fillRect(LEFT, y + 11, L.plotW, 1);
    const worst = new Float64Array(w).fill(-1);
    const pr = P.probes;
    for (let i = 0; i < pr.n; i++) {
      const q = pr.at[i], lat = pr.v[i] < 0 ? P.end - q : pr.v[i];
      const e = q + lat;
      if (e < view.t0 || q > view.t1) continue;
      const a = Math.max(xOf(L, q) - LEFT, 0);
      const b = Math.min(Math.max(xOf(L, e) - LEFT, a + 1), w);
      for (let c = Math.floor(a); c < Math.min(Math.ceil(b), w); c++) worst[c] = Math.max(worst[c], lat);
    }
    for (let c = 0; c < w; c++) {
      if (worst[c] < 0) continue;
      ctx.fillStyle = probeColor(worst[c]);
      ctx.fillRect(LEFT + c, y + 6, 1, 12);
    }
  }

  function showRange() {
    const full = view.t0 <= 0 && view.t1 >= fullEnd;
    $('range').textContent = full
      ? 'showing the whole run, 0 to ' + dur(fullEnd)
      : 'showing ' + ms(view.t0) + ' to ' + ms(view.t1) + ' (' + dur(span()) + ') of ' + dur(fullEnd);
  }
  function drawAll() {
    for (const P of panels) {
      setupCanvas(P);
      drawPanel(P);
    }
    showRange();
  }
  let pending = false;
  function redraw() {
    if (pending) return;
    pending = true;
    requestAnimationFrame(() => {
      pending = false;
      drawAll();
    });
  }

  // --------------------------------------------------------------- view
  function setView(t0, t1) {
    let s = Math.min(Math.max(t1 - t0, MIN_SPAN), fullEnd);
    if (t0 < 0) t0 = 0;
    if (t0 + s > fullEnd) t0 = fullEnd - s;
    view.t0 = Math.max(t0, 0);
    view.t1 = view.t0 + s;
    showRange();
    redraw();
  }
  function zoom(factor, centre) {
    if (centre === undefined) centre = (view.t0 + view.t1) / 2;
    const s = span() / factor;
    const f = (centre - view.t0) / span();
    setView(centre - f * s, centre - f * s + s);
  }
  function pan(fraction) {
    const d = span() * fraction;
    setView(view.t0 + d, view.t1 + d);
  }
  function reset() {
    setView(0, fullEnd);
  }
  function reveal(a, b) {
    // Brings [a, b] into the view, keeping the zoom (unless it is wider).
    if (a >= view.t0 && b <= view.t1) return;
    const s = Math.max(span(), Math.min((b - a) * 1.2, fullEnd));
    const mid = (a + b) / 2;
    setView(mid - s / 2, mid + s / 2);
  }

  // ------------------------------------------------------------ tooltips
  const tip = $('tip');
  function showTip(lines, pageX, pageY, target) {
    tip.textContent = '';
    lines.forEach((line, i) => {
      const d = el('div', i === 0 ? { class: 'tip-title' } : null, line);
      tip.appendChild(d);
    });
    tip.hidden = false;
    tip.setAttribute('data-target', target || '');
    const maxX = window.scrollX + document.documentElement.clientWidth - tip.offsetWidth - 8;
    let x = Math.min(pageX + 14, maxX);
    let y = pageY + 18;
    const maxY = window.scrollY + window.innerHeight - tip.offsetHeight - 8;
    if (y > maxY) y = Math.max(pageY - tip.offsetHeight - 12, window.scrollY + 4);
    tip.style.left = Math.max(x, 4) + 'px';
    tip.style.top = y + 'px';
  }
  function hideTip() {
    tip.hidden = true;
    tip.setAttribute('data-target', '');
  }

  function laneLines(P, lane) {
    let line = 'thread ' + lane.thread + ' (' + D.reasons[lane.reason].name + '): created at ' + ms(lane.created);
    if (lane.exited !== null) line += ', exited at ' + ms(lane.exited);
    const out = [line];
    if (lane.why) out.push('why: ' + lane.why);
    else if (D.reasons[lane.reason].name === 'main') out.push('the program\u2019s main thread, running work inline');
    else if (P.p.left_out.whys) out.push('why: left out of this report (more than 4,096 threads)');
    else out.push('why: the run\u2019s events do not say more than its reason');
    return out;
  }
  function itemIndex(P, id) {
    const it = P.items;
    let lo = 0, hi = it.n;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (it.id[mid] < id) lo = mid + 1; else hi = mid;
    }
    return lo < it.n && it.id[lo] === id ? lo : -1;
  }
  function groupName(g) {
    return g >= 0 && g < D.groups.length ? D.groups[g].name : '(none)';
  }
  function barLines(P, lane, s) {
    const here = D.phases[lane.phase[s]].label + ', ' + ms(lane.start[s]) + ' to ' + ms(lane.end[s]) + ' on thread ' + lane.thread;
    const item = lane.item[s];
    if (item < 0) {
      return [
        thousands(-item) + ' items in this bar, merged',
        'this run has more bars than the report keeps: each ' + dur(P.p.resolution) +
          ' of a thread shows its busy time in the phase and group that had most of it',
        'busy ' + dur(lane.end[s] - lane.start[s]) + ' from ' + ms(lane.start[s]) + ' on thread ' + lane.thread +
          ', mostly group ' + groupName(lane.group[s]) + ', ' + D.phases[lane.phase[s]].label,
      ];
    }
    if (item === 0) {
      return [D.phases[lane.phase[s]].label + ' (no work item)',
        ms(lane.start[s]) + ' to ' + ms(lane.end[s]) + ' on thread ' + lane.thread];
    }
    const id = item - 1;
    const out = ['item #' + id + ', group ' + groupName(lane.group[s])];
    const k = itemIndex(P, id);
    if (k >= 0) {
      const it = P.items;
      let line = 'thread ' + it.thread[k] + ' \u00b7 queued ' + ms(it.queued[k]) + ' \u00b7 started ' + ms(it.started[k]) +
        ' (waited ' + dur(it.started[k] - it.queued[k]) + ')';
      line += isNaN(it.finished[k]) ? ' \u00b7 not finished when the run stopped' : ' \u00b7 finished ' + ms(it.finished[k]);
      out.push(line);
    } else {
      out.push('thread ' + lane.thread);
    }
    out.push('this bar: ' + here);
    return out;
  }
  function decisionLines(P, list) {
    const out = [];
    list.slice(0, TIP_DECISIONS).forEach((i) => {
      const d = P.decisions[i];
      out.push(ms(d.at) + ' \u00b7 ' + d.text);
    });
    if (list.length > TIP_DECISIONS) {
      const raised = list.slice(TIP_DECISIONS).filter((i) => P.decisions[i].level === 2).length;
      out.push('\u2026 and ' + (list.length - TIP_DECISIONS) + ' more (' + raised + ' of them added a thread or raised the goal)');
    }
    return out;
  }
  function valueAt(series, t) {
    const k = upper(series.at, series.n, t) - 1;
    return k >= 0 ? series.v[k] : 0;
  }
  function countLines(P, L, t) {
    let line = 'at ' + ms(t) + ': ' + plural(valueAt(P.threads, t), 'thread') + ' existing';
    if (P.goal.n) line += ', goal ' + valueAt(P.goal, t);
    if (P.queue.n) line += ', ' + plural(valueAt(P.queue, t), 'item') + ' queued';
    const out = [line];
    const g = upper(P.goalsAt, P.goalsAt.length, t) - 1;
    if (g >= 0) {
      const G = P.p.goals[g];
      out.push('the goal became ' + G.goal + ' at ' + ms(G.at) + ' (' + G.reason + ')' + (G.why ? ': ' + G.why : ''));
    }
    const tol = 4 * (span() / L.plotW);
    let near = 0;
    for (const li of P.creations) {
      const lane = P.lanes[li];
      if (Math.abs(lane.created - t) <= tol) {
        if (near < TIP_THREADS) out.push('thread ' + lane.thread + ' created at ' + ms(lane.created) + ' by ' + D.reasons[lane.reason].name);
        near++;
      }
    }
    if (near > TIP_THREADS) out.push('\u2026 and ' + (near - TIP_THREADS) + ' more threads created here');
    return out;
  }
  function probeLines(P, L, t) {
    const tol = 4 * (span() / L.plotW), pr = P.probes, out = [];
    for (let i = 0; i < pr.n && out.length < 6; i++) {
      const q = pr.at[i], end = pr.v[i] < 0 ? P.end : q + pr.v[i];
      if (q - tol <= t && t <= end + tol) {
        out.push(pr.v[i] < 0
          ? 'probe queued at ' + ms(q) + ': never ran'
          : 'probe queued at ' + ms(q) + ', ran at ' + ms(end) + ': latency ' + dur(pr.v[i]));
      }
    }
    return out;
  }
  // The bar of `lane` at time t, or within `tol` of it (-1: none).
  function barAt(lane, t, tol) {
    const i = upper(lane.end, lane.n, t);
    if (i < lane.n && lane.start[i] <= t) return i;
    let bestI = -1, bestD = tol;
    if (i > 0 && t - lane.end[i - 1] <= bestD) {
      bestD = t - lane.end[i - 1];
      bestI = i - 1;
    }
    if (i < lane.n && lane.start[i] - t < bestD) bestI = i;
    return bestI;
  }

  // What is under (x, y) of a panel's canvas: [lines, target] or null.
  function hit(P, x, y) {
    const L = P.layout;
    const t = tOf(L, x);
    const inPlot = x >= LEFT && x <= LEFT + L.plotW;
    if (y >= L.lanesY && y < L.lanesY + L.lanesH && P.lanes.length) {
      const r = Math.min(Math.floor(((y - L.lanesY) * L.rows) / L.lanesH), L.rows - 1);
      if (L.perRow === 1) {
        const lane = P.lanes[r];
        if (inPlot) {
          const s = barAt(lane, t, 3 * (span() / L.plotW));
          if (s >= 0) return [barLines(P, lane, s), 'bar:' + lane.thread + ':' + s];
        }
        return [laneLines(P, lane), 'thread:' + lane.thread];
      }
      const members = P.lanes.slice(r * L.perRow, (r + 1) * L.perRow);
      const out = [];
      members.slice(0, TIP_THREADS).forEach((lane) => out.push(...laneLines(P, lane)));
      if (members.length > TIP_THREADS) out.push('\u2026 and ' + (members.length - TIP_THREADS) + ' more threads');
      return [out, 'threads:' + members[0].thread + '-' + members[members.length - 1].thread];
    }
    if (!inPlot) return null;
    if (y >= L.countsY && y < L.countsY + COUNTS_H) return [countLines(P, L, t), 'counts'];
    if (P.rows.length && y >= L.ticksY && y < L.ticksY + P.rows.length * TICK_ROW) {
      const R = P.rows[Math.floor((y - L.ticksY) / TICK_ROW)];
      const tol = 3 * (span() / L.plotW);
      const from = lower(R.at, R.list.length, t - tol), to = upper(R.at, R.list.length, t + tol);
      if (to > from) return [decisionLines(P, R.list.slice(from, to)), 'tick:' + R.list[from]];
      return null;
    }
    if (L.probesY !== null && y >= L.probesY && y < L.probesY + PROBES_H) {
      const lines = probeLines(P, L, t);
      return lines.length ? [lines, 'probe'] : null;
    }
    return null;
  }

  // Page coordinates of a point of a panel's canvas.
  function pagePoint(P, x, y) {
    const r = P.canvas.getBoundingClientRect();
    return [r.left + window.scrollX + x, r.top + window.scrollY + y];
  }
  function showLane(P, vi) {
    const L = P.layout, lane = P.lanes[vi];
    const [y0, y1] = rowSpan(L, Math.floor(vi / L.perRow));
    const [px, py] = pagePoint(P, LEFT + 8, (y0 + y1) / 2);
    showTip(laneLines(P, lane), px, py, 'thread:' + lane.thread);
  }
  function showBar(P, vi, s) {
    const L = P.layout, lane = P.lanes[vi];
    const [y0, y1] = rowSpan(L, Math.floor(vi / L.perRow));
    const x = Math.min(Math.max(xOf(L, lane.start[s]), LEFT), LEFT + L.plotW);
    const [px, py] = pagePoint(P, x, (y0 + y1) / 2);
    const item = lane.item[s];
    showTip(barLines(P, lane, s), px, py, item > 0 ? 'item:' + (item - 1) : 'bar:' + lane.thread + ':' + s);
  }
  function showDecision(P, i) {
    const L = P.layout, d = P.decisions[i];
    const ri = P.rows.findIndex((R) => R.row === d.row);
    const [px, py] = pagePoint(P, xOf(L, d.at), L.ticksY + ri * TICK_ROW + TICK_ROW / 2);
    showTip(decisionLines(P, [i]), px, py, 'tick:' + i);
  }

  // ------------------------------------------------------------ keyboard
  function selectLane(P, delta) {
    const n = P.lanes.length;
    if (!n) return;
    const sel = P.sel;
    sel.lane = sel.lane < 0 ? (delta > 0 ? 0 : n - 1) : Math.min(Math.max(sel.lane + delta, 0), n - 1);
    sel.bar = -1;
    drawAll();
    showLane(P, sel.lane);
  }
  function selectBar(P, delta) {
    const sel = P.sel;
    if (sel.lane < 0) sel.lane = 0;
    const lane = P.lanes[sel.lane];
    if (!lane || !lane.n) {
      showLane(P, sel.lane);
      return;
    }
    if (sel.bar < 0) {
      // From the view: the first bar in it (or the last before it).
      const i = upper(lane.end, lane.n, view.t0);
      sel.bar = delta > 0 ? Math.min(i, lane.n - 1) : Math.max(Math.min(upper(lane.start, lane.n, view.t1) - 1, lane.n - 1), 0);
    } else {
      sel.bar = Math.min(Math.max(sel.bar + delta, 0), lane.n - 1);
    }
    reveal(lane.start[sel.bar], lane.end[sel.bar]);
    drawAll();
    showBar(P, sel.lane, sel.bar);
  }
  function selectDecision(P, delta) {
    const n = P.decisions.length;
    if (!n) return;
    const sel = P.sel;
    if (sel.decision < 0) {
      const at = Float64Array.from(P.decisions, (d) => d.at);
      sel.decision = delta > 0 ? Math.min(lower(at, n, view.t0), n - 1) : Math.max(upper(at, n, view.t1) - 1, 0);
    } else {
      sel.decision = Math.min(Math.max(sel.decision + delta, 0), n - 1);
    }
    const at = P.decisions[sel.decision].at;
    reveal(at, at);
    drawAll();
    showDecision(P, sel.decision);
  }

  // Typing into a field (the playground's editor) is not a command.
  const editing = (t) => !!t && (t.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(t.tagName || ''));
  document.addEventListener('keydown', (e) => {
    if (e.ctrlKey || e.metaKey || e.altKey || editing(e.target) || !panels.length) return;
    const onChart = document.activeElement && document.activeElement.tagName === 'CANVAS';
    const P = panels[activePanel];
    let done = true;
    switch (e.key) {
      case '+': case '=': zoom(2); break;
      case '-': case '_': zoom(0.5); break;
      case 'ArrowLeft': pan(e.shiftKey ? -0.5 : -0.2); break;
      case 'ArrowRight': pan(e.shiftKey ? 0.5 : 0.2); break;
      case '0': case 'Home': reset(); break;
      case 'Escape': hideTip(); break;
      case 'ArrowUp': if (onChart) selectLane(P, -1); else done = false; break;
      case 'ArrowDown': if (onChart) selectLane(P, 1); else done = false; break;
      case '[': if (onChart) selectBar(P, -1); else done = false; break;
      case ']': if (onChart) selectBar(P, 1); else done = false; break;
      case 'n': if (onChart) selectDecision(P, 1); else done = false; break;
      case 'p': if (onChart) selectDecision(P, -1); else done = false; break;
      default: done = false;
    }
    if (done) e.preventDefault();
  });

  // -------------------------------------------------------------- build
  function buildPanels() {
    const main = $('panels');
    main.textContent = '';
    panels.forEach((P) => {
      const section = el('section', { class: 'panel', 'aria-label': P.name });
      section.appendChild(el('h2', null, P.name));
      if (P.p.headline) section.appendChild(el('p', { class: 'headline' }, P.p.headline));
      section.appendChild(el('p', { class: 'facts' }, P.p.facts));
      const notes = leftOutNotes(P);
      if (notes) section.appendChild(el('p', { class: 'left-out' }, notes));
      const canvas = el('canvas', {
        tabindex: '0',
        role: 'img',
        'aria-label': 'Gantt chart of ' + P.name + ': ' + (P.p.headline || P.p.facts) +
          '. Arrow keys up and down walk the threads, [ and ] the bars, n and p the decisions.',
      });
      section.appendChild(canvas);
      main.appendChild(section);
      P.section = section;
      P.canvas = canvas;
      canvas.addEventListener('focus', () => {
        activePanel = P.index;
      });
      let drag = null;
      canvas.addEventListener('pointerdown', (e) => {
        if (e.button !== 0) return;
        activePanel = P.index;
        drag = { x: e.clientX, t0: view.t0, t1: view.t1, moved: false };
        try {
          canvas.setPointerCapture(e.pointerId);
        } catch (_) {
          // A pointer the browser does not track (a synthetic event): the
          // drag works without capture.
        }
      });
      canvas.addEventListener('pointermove', (e) => {
        const r = canvas.getBoundingClientRect();
        const x = e.clientX - r.left, y = e.clientY - r.top;
        if (drag) {
          const dx = e.clientX - drag.x;
          if (Math.abs(dx) > 2) drag.moved = true;
          if (drag.moved) {
            canvas.classList.add('dragging');
            hideTip();
            const d = (-dx / P.layout.plotW) * (drag.t1 - drag.t0);
            setView(drag.t0 + d, drag.t1 + d);
            return;
          }
        }
        const h = hit(P, x, y);
        if (h) showTip(h[0], e.pageX, e.pageY, h[1]);
        else hideTip();
      });
      const end = (e) => {
        if (drag && canvas.hasPointerCapture(e.pointerId)) canvas.releasePointerCapture(e.pointerId);
        drag = null;
        canvas.classList.remove('dragging');
      };
      canvas.addEventListener('pointerup', end);
      canvas.addEventListener('pointercancel', end);
      canvas.addEventListener('pointerleave', () => {
        if (!drag) hideTip();
      });
      canvas.addEventListener('wheel', (e) => {
        e.preventDefault();
        const r = canvas.getBoundingClientRect();
        const dx = e.deltaMode === 1 ? e.deltaX * 16 : e.deltaX, dy = e.deltaMode === 1 ? e.deltaY * 16 : e.deltaY;
        if (Math.abs(dx) > Math.abs(dy)) {
          pan(dx / P.layout.plotW);
        } else {
          const x = Math.min(Math.max(e.clientX - r.left, LEFT), LEFT + P.layout.plotW);
          zoom(Math.pow(1.0025, -dy), tOf(P.layout, x));
        }
      }, { passive: false });
    });
  }
  $('zoom-in').addEventListener('click', () => zoom(2));
  $('zoom-out').addEventListener('click', () => zoom(0.5));
  $('pan-left').addEventListener('click', () => pan(-0.2));
  $('pan-right').addEventListener('click', () => pan(0.2));
  $('reset').addEventListener('click', reset);
  window.addEventListener('resize', redraw);

  function leftOutNotes(P) {
    const p = P.p, lo = p.left_out, notes = [];
    if (p.resolution > 0) {
      notes.push('This report holds ' + thousands(p.segments) + ' bars of this run, more than it keeps: each ' +
        dur(p.resolution) + ' of a thread is one bar of its busy time (its tooltip says how many items it stands for), ' +
        'and the items\u2019 own times are left out. poolsim run --from-ms/--to-ms gives a window with every item.');
    }
    if (lo.decisions) notes.push(thousands(lo.decisions) + ' decisions that changed nothing are left out.');
    if (lo.goals) notes.push(thousands(lo.goals) + ' goal changes are left out of the tooltips.');
    if (lo.whys) notes.push('The sentences of ' + thousands(lo.whys) + ' threads are left out.');
    if (lo.thread_points || lo.queue_points || lo.probes) {
      notes.push('The thread, queue and probe series keep each pixel\u2019s lowest and highest values.');
    }
    return notes.join(' ');
  }

  // ------------------------------------------------------------- legend
  function swatch(draw, w, h) {
    const cv = el('canvas', { width: String(w), height: String(h), 'aria-hidden': 'true' });
    draw(cv.getContext('2d'), w, h);
    return cv;
  }
  function legend() {
    const root = $('legend');
    root.textContent = '';
    root.appendChild(el('h2', null, 'Legend'));
    const row = (heading, entries) => {
      if (!entries.length) return;
      const r = el('div', { class: 'row' });
      r.appendChild(el('span', { class: 'heading' }, heading));
      for (const [node, label] of entries) {
        const e = el('span', { class: 'entry' });
        e.appendChild(node);
        e.appendChild(el('span', null, label));
        r.appendChild(e);
      }
      root.appendChild(r);
    };
    const usedGroups = new Set(), usedPhases = new Set(), usedReasons = new Set(), ticks = new Set();
    let itemsOnly = false, goal = false, queue = false, probes = false;
    for (const P of panels) {
      for (const lane of P.lanes) {
        usedReasons.add(lane.reason);
        for (let s = 0; s < lane.n; s++) {
          if (lane.group[s] >= 0) usedGroups.add(lane.group[s]);
          usedPhases.add(lane.phase[s]);
        }
      }
      itemsOnly = itemsOnly || P.p.source === 'items';
      goal = goal || P.goal.n > 0;
      queue = queue || P.queue.n > 0;
      probes = probes || P.probes.n > 0;
      for (const d of P.decisions) ticks.add(d.row + ':' + d.level + ':' + d.reason);
    }
    row('Items by group', [...usedGroups].sort((a, b) => a - b).map((g) => [
      swatch((c, w, h) => { c.fillStyle = D.groups[g].base; c.fillRect(0, 0, w, h); }, 16, 16), D.groups[g].name,
    ]));
    const phases = [];
    if (itemsOnly) {
      phases.push([swatch((c, w, h) => drawBar(c, 0, w, 1, h - 1, D.groups[0] || D.internal, CPU), 34, 18),
        'item running (phases not recorded)']);
    } else {
      for (const ph of [CPU, SPIN, SLEEP, WAIT, JOIN, INTERNAL, STARTING]) {
        if (!usedPhases.has(ph)) continue;
        const gs = D.groups[[...usedGroups][0]] || D.internal;
        phases.push([swatch((c, w, h) => drawBar(c, 0, w, 1, h - 1, gs, ph), 34, 18), D.phases[ph].label]);
      }
    }
    phases.push([swatch((c, w, h) => { c.fillStyle = C.alive; c.fillRect(0, 1, w, h - 2); }, 34, 18),
      'idle (thread exists, no work)']);
    row('Lanes', phases);
    row('Thread created by', D.reasons.map((r, i) => [r, i]).filter(([, i]) => usedReasons.has(i)).map(([r]) => [
      swatch((c, w, h) => {
        c.fillStyle = r.color;
        c.beginPath();
        c.moveTo(2, 2);
        c.lineTo(2, h - 2);
        c.lineTo(w - 2, h / 2);
        c.closePath();
        c.fill();
      }, 14, 16), r.name,
    ]));
    const lowerChart = [[swatch((c, w, h) => { c.fillStyle = C.threads; c.fillRect(0, h / 2 - 1, w, 2); }, 26, 16),
      'threads existing (left scale; \u25c6 a thread created, in its reason\u2019s colour)']];
    if (goal) {
      lowerChart.push([swatch((c, w, h) => {
        c.fillStyle = C.goal;
        for (let x = 0; x < w; x += 10) c.fillRect(x, h / 2 - 1, 5, 2);
      }, 26, 16), 'the policy\u2019s thread goal']);
    }
    if (queue) {
      lowerChart.push([swatch((c, w, h) => { c.fillStyle = C.queue_fill; c.fillRect(0, 2, w, h - 4); }, 20, 16),
        'work items queued (right scale)']);
    }
    row('Lower chart', lowerChart);
    if (probes) {
      row('Probes', [[swatch((c, w, h) => {
        const g = c.createLinearGradient(0, 0, w, 0);
        g.addColorStop(0, C.probe_fast);
        g.addColorStop(1, C.probe_slow);
        c.fillStyle = g;
        c.fillRect(0, 3, w, h - 6);
      }, 34, 16), 'a probe\u2019s wait, queued \u2192 started on a pool thread (green: quick, red: a second or more)']]);
    }
    const TICKS = [
      [0, 0, -1, 'gate (monitor) tick with requests pending: no thread added'],
      [0, 1, -1, 'starved, but no thread added (at the maximum, or one on its way)'],
      [0, 2, 'starvation', 'starved: a thread added'],
      [1, 0, -1, 'cooperative-blocking step: goal not raised'],
      [1, 2, 'cooperative-blocking', 'cooperative blocking raised the goal'],
      [2, 0, -1, 'hill-climbing sample'],
      [2, 2, 'hill-climbing', 'hill climbing raised the goal'],
    ];
    const tickEntries = [];
    for (const [r, level, reason, label] of TICKS) {
      const ri = reason === -1 ? -1 : D.reasons.findIndex((x) => x.name === reason);
      const present = [...ticks].some((k) => {
        const [kr, kl, kre] = k.split(':').map(Number);
        return kr === r && kl === level && (level < 2 || kre === ri);
      });
      if (!present) continue;
      const [h, color] = levelStyle(level, ri);
      tickEntries.push([swatch((c, w, hh) => { c.fillStyle = color; c.fillRect(4, hh - 1 - h, 2, h); }, 10, TICK_ROW), label]);
    }
    row('Pool decisions', tickEntries);
  }

  // ------------------------------------------------------------- tables
  function tables() {
    const root = $('tables');
    root.textContent = '';
    const MAX_THREADS = 2000, MAX_ITEMS = 500;
    for (const P of panels) {
      const who = panels.length > 1 ? ' \u2014 ' + P.name : '';
      const d1 = el('details', { id: 'threads-' + P.index });
      d1.appendChild(el('summary', null, 'Threads and why each exists' + who + ' (' + thousands(P.lanes.length) + ')'));
      const t1 = el('table');
      const h1 = el('tr');
      for (const [h, cls] of [['thread', 'num'], ['created', 'num'], ['reason', ''], ['exited', 'num'], ['why it exists (poolsim explain)', '']]) {
        h1.appendChild(el('th', cls ? { class: cls, scope: 'col' } : { scope: 'col' }, h));
      }
      t1.appendChild(h1);
      P.lanes.slice(0, MAX_THREADS).forEach((lane) => {
        const tr = el('tr', { 'data-thread': String(lane.thread) });
        tr.appendChild(el('td', { class: 'num' }, String(lane.thread)));
        tr.appendChild(el('td', { class: 'num' }, ms(lane.created)));
        tr.appendChild(el('td', null, D.reasons[lane.reason].name));
        tr.appendChild(el('td', { class: 'num' }, lane.exited === null ? '' : ms(lane.exited)));
        tr.appendChild(el('td', null, laneLines(P, lane).slice(1).join(' ').replace(/^why: /, '')));
        t1.appendChild(tr);
      });
      d1.appendChild(t1);
      if (P.lanes.length > MAX_THREADS) d1.appendChild(el('p', null, '\u2026 and ' + thousands(P.lanes.length - MAX_THREADS) + ' more threads (hover their lanes).'));
      root.appendChild(d1);

      const it = P.items;
      const d2 = el('details', { id: 'items-' + P.index });
      const shown = Math.min(it.n, MAX_ITEMS);
      d2.appendChild(el('summary', null, 'Items' + who + ' (' + (it.n > shown ? 'the first ' + thousands(shown) + ' of ' : '') +
        thousands(P.p.items) + ')'));
      if (!it.n) {
        d2.appendChild(el('p', null, P.p.items ? 'This report left out the items\u2019 own times (see above).' : 'No items.'));
      } else {
        const t2 = el('table');
        const h2 = el('tr');
        for (const h of ['item', 'group', 'thread', 'queued', 'started', 'finished', 'start delay']) {
          h2.appendChild(el('th', { class: h === 'group' ? '' : 'num', scope: 'col' }, h));
        }
        t2.appendChild(h2);
        for (let k = 0; k < shown; k++) {
          const tr = el('tr', { 'data-item': String(it.id[k]) });
          const g = P.groupOf.has(it.id[k]) ? groupName(P.groupOf.get(it.id[k])) : '';
          const cells = [String(it.id[k]), g, String(it.thread[k]), ms(it.queued[k]), ms(it.started[k]),
            isNaN(it.finished[k]) ? 'not finished' : ms(it.finished[k]), dur(it.started[k] - it.queued[k])];
          cells.forEach((c, i) => tr.appendChild(el('td', i === 1 ? null : { class: 'num' }, c)));
          t2.appendChild(tr);
        }
        d2.appendChild(t2);
      }
      root.appendChild(d2);
    }
  }

  // --------------------------------------------------------------- hash
  // #hover=thread:4 (or item:12, tick:3, with p1. before it for the second
  // run) shows that tooltip; #view=FROM_MS,TO_MS sets the window.
  function applyHash() {
    const params = {};
    for (const part of location.hash.replace(/^#/, '').split('&')) {
      const eq = part.indexOf('=');
      if (eq > 0) params[decodeURIComponent(part.slice(0, eq))] = decodeURIComponent(part.slice(eq + 1));
    }
    if (params.view) {
      const [a, b] = params.view.split(',').map(Number);
      if (isFinite(a) && isFinite(b) && b > a) {
        setView(a * 1e6, b * 1e6);
        drawAll();
      }
    }
    if (!params.hover) return;
    let target = params.hover, pi = 0;
    const m = /^p(\d+)\.(.*)$/.exec(target);
    if (m) {
      pi = Number(m[1]);
      target = m[2];
    }
    const P = panels[pi];
    const [kind, idText] = target.split(':');
    const id = Number(idText);
    if (!P || !isFinite(id)) return;
    activePanel = pi;
    // The keys go on from the tooltip shown: its chart takes the focus.
    P.canvas.focus({ preventScroll: true });
    if (kind === 'thread' && P.laneOfThread.has(id)) {
      P.sel.lane = P.laneOfThread.get(id);
      P.sel.bar = -1;
      drawAll();
      showLane(P, P.sel.lane);
    } else if (kind === 'item') {
      for (let vi = 0; vi < P.lanes.length; vi++) {
        const lane = P.lanes[vi];
        for (let s = 0; s < lane.n; s++) {
          if (lane.item[s] === id + 1) {
            P.sel.lane = vi;
            P.sel.bar = s;
            reveal(lane.start[s], lane.end[s]);
            drawAll();
            showBar(P, vi, s);
            return;
          }
        }
      }
      showTip(['no item ' + id + ' among this report\u2019s bars'], 20, 20, 'missing');
    } else if (kind === 'tick' && id >= 0 && id < P.decisions.length) {
      P.sel.decision = id;
      reveal(P.decisions[id].at, P.decisions[id].at);
      drawAll();
      showDecision(P, id);
    } else {
      showTip(['nothing to show for ' + params.hover], 20, 20, 'missing');
    }
  }

  // ---------------------------------------------------------------- run
  // Draws `data` (a report's JSON, parsed) in the page's #panels, #legend,
  // #tables and #summary, replacing what was drawn. Options: `keepView`
  // keeps the time window (clamped to the new run) instead of opening on
  // the data's window or the whole run; `since` is the performance.now()
  // the drawing time is counted from (0: the page's start, said as
  // "Loaded and drawn"). Returns the counts and times it drew.
  function render(data, options) {
    const opts = options || {};
    const keep = opts.keepView && panels.length ? { t0: view.t0, t1: view.t1, whole: view.t0 <= 0 && view.t1 >= fullEnd } : null;
    D = data;
    C = D.colors;
    panels = D.panels.map(decodePanel);
    fullEnd = Math.max(D.end, 1);
    MIN_SPAN = Math.min(1000, fullEnd);
    view.t0 = 0;
    view.t1 = fullEnd;
    if (keep && !keep.whole) {
      const s = Math.min(Math.max(keep.t1 - keep.t0, MIN_SPAN), fullEnd);
      view.t0 = Math.max(Math.min(keep.t0, fullEnd - s), 0);
      view.t1 = view.t0 + s;
    } else if (!keep && D.window) {
      view.t0 = D.window[0];
      view.t1 = Math.max(D.window[1], D.window[0] + MIN_SPAN);
    }
    activePanel = Math.min(activePanel, Math.max(panels.length - 1, 0));
    hideTip();
    buildPanels();
    legend();
    drawAll();
    const since = opts.since || 0;
    const drawnMs = performance.now() - since;
    tables();
    let items = 0, threads = 0, bars = 0, decisions = 0;
    const parts = panels.map((P) => {
      items += P.p.items;
      threads += P.lanes.length;
      bars += P.bars;
      decisions += P.decisions.length;
      return P.name + ': ' + plural(P.p.items, 'item') + ', ' + plural(P.lanes.length, 'thread') + ', ' +
        plural(P.bars, 'bar') + ', ' + plural(P.decisions.length, 'decision');
    });
    const readyMs = performance.now() - since;
    $('summary').textContent = 'Drawn: ' + parts.join('; ') + '. ' + (since ? 'Drawn' : 'Loaded and drawn') +
      ' in ' + Math.round(drawnMs) + ' ms.';
    return { items, threads, bars, decisions, drawnMs, readyMs };
  }
  window.PoolsimReport = { render };

  // A report: its data block, drawn once.
  const block = document.getElementById('poolsim-data');
  if (block) {
    const drawn = render(JSON.parse(block.textContent));
    const root = document.documentElement;
    root.setAttribute('data-items', String(drawn.items));
    root.setAttribute('data-threads', String(drawn.threads));
    root.setAttribute('data-bars', String(drawn.bars));
    root.setAttribute('data-decisions', String(drawn.decisions));
    root.setAttribute('data-drawn-ms', String(Math.round(drawn.drawnMs)));
    root.setAttribute('data-render-ms', String(Math.round(drawn.readyMs)));
    applyHash();
    window.addEventListener('hashchange', applyHash);
    root.setAttribute('data-ready', '1');
  }
})();
