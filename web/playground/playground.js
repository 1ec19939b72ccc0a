// poolsim's playground: a scenario editor over the simulator compiled to
// WebAssembly (crates/wasm). On every change (a keystroke, a preset, a
// policy, the seed) the page asks the module to run the scenario and draws
// what comes back with the report's own renderer (PoolsimReport.render of
// crates/analysis/src/render/html/report.js): the chart, then `poolsim
// run`'s summary and `poolsim explain`'s narration for policy A (and B);
// a moment later the distribution over seeds. Text that does not load gets
// the command line's message, its lines marked in the editor.
//
// The module speaks a plain C ABI (see crates/wasm/src/lib.rs): requests
// and responses are JSON in its memory. The page records, on <html>, what
// a test reads: data-ready, data-state (ok or error), data-updates,
// data-late-starts, data-key-to-paint-ms (from the keystroke to the frame
// that shows its run).
(function () {
  'use strict';

  const $ = (id) => document.getElementById(id);
  const el = (tag, attrs, text) => {
    const e = document.createElement(tag);
    if (attrs) for (const k in attrs) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    return e;
  };
  const root = document.documentElement;
  const editor = $('editor'), gutter = $('gutter'), marks = $('marks');
  // The editor's geometry (playground.css): a line is 24 px, the text
  // starts 8 px down and 10 px in.
  const LINE_H = 24, PAD_TOP = 8, PAD_LEFT = 10;
  const DEFAULT_PRESET = 'scenarios/seed-001-burst.toml';
  // Waits after a keystroke before running: the last update's own time,
  // within these bounds (a small scenario runs on every keystroke).
  const DEBOUNCE_MIN_MS = 15, DEBOUNCE_MAX_MS = 200;
  // The distribution waits this long after the run it belongs to; when its
  // runs could take longer than SPREAD_ASK_MS, a button starts it. Their
  // time is reckoned from the run's events at SPREAD_EVENTS_PER_MS, a low
  // rate for the engine in WebAssembly (a run of the distribution keeps no
  // events, and runs at several times this).
  const SPREAD_DELAY_MS = 120, SPREAD_ASK_MS = 2000, SPREAD_EVENTS_PER_MS = 2000;
  const TAGS = ['A', 'B'];

  const presets = JSON.parse($('presets').textContent);
  const state = {
    file: DEFAULT_PRESET,
    updates: 0,
    timer: 0,
    keyDownAt: null,
    keyAt: null,
    lastMs: 0,
    runs: null,
    problems: [],
    spreadTimer: 0,
    spreadKey: '',
    spreads: null,
    firstSeed: null,
    history: [],
  };

  // ------------------------------------------------------------ the module
  let wasm = null;
  function decodeBase64(text) {
    const bin = atob(text.replace(/\s+/g, ''));
    const bytes = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
    return bytes;
  }
  async function loadModule() {
    const module = await WebAssembly.compile(decodeBase64($('poolsim-wasm').textContent));
    // A dependency's browser glue (plotters brings wasm-bindgen) leaves a
    // few imports that poolsim never calls: each one throws if it is.
    const imports = {};
    for (const imp of WebAssembly.Module.imports(module)) {
      if (imp.kind !== 'function') {
        throw new Error('the simulator needs ' + imp.module + '.' + imp.name + ', which the page does not have');
      }
      (imports[imp.module] = imports[imp.module] || {})[imp.name] = () => {
        throw new Error('the simulator called ' + imp.module + '.' + imp.name + ', which the page does not provide');
      };
    }
    wasm = (await WebAssembly.instantiate(module, imports)).exports;
  }
  // The JSON at `out` (a 4-byte little-endian length, then the bytes),
  // freed.
  function readOut(out) {
    out >>>= 0;
    const n = new DataView(wasm.memory.buffer).getUint32(out, true);
    const text = new TextDecoder().decode(new Uint8Array(wasm.memory.buffer, out + 4, n));
    wasm.dealloc(out, 4 + n);
    return JSON.parse(text);
  }
  function call(name, request) {
    const bytes = new TextEncoder().encode(JSON.stringify(request));
    const ptr = wasm.alloc(bytes.length) >>> 0;
    new Uint8Array(wasm.memory.buffer, ptr, bytes.length).set(bytes);
    const out = wasm[name](ptr, bytes.length);
    wasm.dealloc(ptr, bytes.length);
    return readOut(out);
  }

  // ------------------------------------------------------------ controls
  function fillControls() {
    const preset = $('preset');
    for (const p of presets) {
      const stem = p.file.replace(/^.*\//, '').replace(/\.toml$/, '');
      preset.appendChild(el('option', { value: p.file, title: p.name }, stem + ' \u2014 ' + p.name));
    }
    const policies = readOut(wasm.poolsim_policies());
    for (const id of ['policy-a', 'policy-b']) {
      const select = $(id);
      for (const p of policies) {
        const also = p.aliases.length ? ' (also ' + p.aliases.join(', ') + ')' : '';
        select.appendChild(el('option', { value: p.name, title: p.description + also }, p.name));
      }
    }
  }
  function hashParams() {
    const params = {};
    for (const part of location.hash.replace(/^#/, '').split('&')) {
      const eq = part.indexOf('=');
      if (eq > 0) params[decodeURIComponent(part.slice(0, eq))] = decodeURIComponent(part.slice(eq + 1));
    }
    return params;
  }
  function presetOf(name) {
    return presets.find((p) => p.file === name || p.file.endsWith('/' + name + '.toml') || p.file.endsWith('/' + name));
  }
  function loadPreset(p) {
    $('preset').value = p.file;
    editor.value = p.text;
    state.file = p.file;
    $('seed').value = '0';
    editor.scrollTop = 0;
    refreshGutter();
  }
  function request() {
    const a = $('policy-a').value, b = $('policy-b').value;
    const policies = [a || null];
    if (b !== '-') policies.push(b || null);
    return {
      scenario: editor.value,
      file: state.file,
      policies,
      seed_offset: Number($('seed').value),
      runs: Number($('runs').value),
    };
  }

  // -------------------------------------------------------------- editor
  let charW = 0;
  function charWidth() {
    if (!charW) {
      const ctx = document.createElement('canvas').getContext('2d');
      const cs = getComputedStyle(editor);
      ctx.font = cs.fontSize + ' ' + cs.fontFamily;
      charW = ctx.measureText('0000000000').width / 10;
    }
    return charW;
  }
  function refreshGutter() {
    const n = editor.value.split('\n').length;
    const bad = new Set(state.problems.filter((d) => d.line).map((d) => d.line));
    gutter.textContent = '';
    for (let i = 1; i <= n; i++) {
      if (bad.has(i)) gutter.appendChild(el('span', { class: 'bad', 'data-line': String(i) }, String(i)));
      else gutter.appendChild(document.createTextNode(String(i)));
      gutter.appendChild(document.createTextNode('\n'));
    }
    gutter.scrollTop = editor.scrollTop;
    drawMarks();
  }
  function drawMarks() {
    marks.textContent = '';
    const top = PAD_TOP - editor.scrollTop, left = PAD_LEFT - editor.scrollLeft;
    for (const d of state.problems) {
      if (!d.line) continue;
      const y = top + (d.line - 1) * LINE_H;
      marks.appendChild(el('div', { class: 'line', 'data-line': String(d.line), style: 'top:' + y + 'px' }));
      if (d.column) {
        const x = left + (d.column - 1) * charWidth() - 1;
        marks.appendChild(el('div', { class: 'column', style: 'top:' + y + 'px;left:' + x + 'px' }));
      }
    }
  }
  // The offset in the editor's text of a 1-based line and column.
  function offsetOf(line, column) {
    const lines = editor.value.split('\n');
    let at = 0;
    for (let i = 0; i < Math.min(line - 1, lines.length); i++) at += lines[i].length + 1;
    const here = lines[Math.min(line, lines.length) - 1] || '';
    return at + Math.min(Math.max((column || 1) - 1, 0), here.length);
  }
  function goTo(line, column) {
    const at = offsetOf(line, column);
    editor.focus();
    editor.setSelectionRange(at, at);
    const y = (line - 1) * LINE_H;
    if (y < editor.scrollTop || y > editor.scrollTop + editor.clientHeight - 2 * LINE_H) {
      editor.scrollTop = Math.max(y - editor.clientHeight / 3, 0);
    }
  }

  // ------------------------------------------------------------- results
  function setProblems(res) {
    state.problems = res ? res.diagnostics : [];
    const box = $('problems');
    box.textContent = '';
    if (res) {
      box.appendChild(el('p', { class: 'heading' }, 'The scenario does not load (as poolsim run would say):'));
      box.appendChild(el('pre', { id: 'problem-text' }, res.error));
      for (const d of res.diagnostics) {
        if (!d.line) continue;
        const b = el('button', { type: 'button', 'data-line': String(d.line) },
          'Go to line ' + d.line + (d.column ? ', column ' + d.column : ''));
        b.addEventListener('click', () => goTo(d.line, d.column));
        box.appendChild(b);
      }
    }
    refreshGutter();
  }
  function setStale(stale) {
    for (const id of ['headlines', 'panels', 'legend', 'runs-out', 'spread-out', 'explain-out']) $(id).classList.toggle('stale-out', stale);
  }
  function lateText(late) {
    if (!late.count) return 'no late starts';
    const items = late.items.map((i) => '#' + i).join(', ');
    return late.count + ' late start' + (late.count === 1 ? '' : 's') + ': ' + items + (late.count > late.items.length ? ', \u2026' : '');
  }
  function showRuns(runs) {
    const out = $('runs-out'), explain = $('explain-out'), heads = $('headlines');
    out.textContent = '';
    explain.textContent = '';
    heads.textContent = '';
    runs.forEach((r, i) => {
      const cls = 'run ' + (i ? 'b' : 'a');
      // Beside the chart: the policy, its late starts and two figures.
      const head = el('p', { class: 'headline-run ' + (i ? 'b' : 'a'), 'data-late-starts': String(r.late_starts.count) });
      head.appendChild(el('span', { class: 'tag' }, TAGS[i]));
      head.appendChild(el('strong', null, r.policy));
      head.appendChild(el('span', { class: 'late ' + (r.late_starts.count ? 'some' : 'none') }, lateText(r.late_starts)));
      head.appendChild(el('span', { class: 'figures' }, r.figures));
      heads.appendChild(head);
      const card = el('article', { class: cls, 'data-policy': r.policy, 'data-late-starts': String(r.late_starts.count) });
      const h = el('h3');
      h.appendChild(el('span', { class: 'tag', 'aria-label': 'policy ' + TAGS[i] }, TAGS[i]));
      h.appendChild(document.createTextNode(r.policy + (r.model !== r.policy ? ' (' + r.model + ')' : '')));
      card.appendChild(h);
      const late = el('p', null);
      late.appendChild(el('span', { class: 'late ' + (r.late_starts.count ? 'some' : 'none') }, lateText(r.late_starts)));
      late.appendChild(el('span', { class: 'note' }, ' \u00b7 a late start begins ' + r.late_starts.threshold_ms + ' ms or more after it was queued'));
      card.appendChild(late);
      card.appendChild(el('pre', { class: 'summary-text' }, r.summary_text));
      out.appendChild(card);
      const e = el('article', { class: cls });
      const eh = el('h3');
      eh.appendChild(el('span', { class: 'tag' }, TAGS[i]));
      eh.appendChild(document.createTextNode(r.policy));
      e.appendChild(eh);
      e.appendChild(el('pre', { class: 'explain', tabindex: '0', 'aria-label': 'explanation under ' + r.policy }, r.explanation));
      explain.appendChild(e);
    });
  }
  function seedLabel() {
    const k = Number($('seed').value), n = Number($('runs').value);
    const s = state.runs && state.runs.length ? state.runs[0].seed : null;
    $('seed-label').textContent = (s === null ? '' : s + ' ') + '(run ' + (k + 1) + ' of ' + n + ')';
  }

  // -------------------------------------------------------------- update
  function schedule(reason) {
    if (state.timer) clearTimeout(state.timer);
    const wait = reason === 'edit' ? Math.min(Math.max(state.lastMs, DEBOUNCE_MIN_MS), DEBOUNCE_MAX_MS) : 0;
    state.timer = setTimeout(() => update(reason), wait);
    root.setAttribute('data-pending', '1');
  }
  function update(reason) {
    state.timer = 0;
    root.removeAttribute('data-pending');
    const keyAt = reason === 'edit' ? state.keyAt : null;
    state.keyAt = null;
    const t0 = performance.now();
    let res;
    try {
      res = call('poolsim_run', request());
    } catch (e) {
      // A trap (a panic in the simulator) ends that call only: the page
      // says so and runs the next change.
      const status = $('status');
      status.className = 'status stale';
      status.textContent = 'The simulator failed on this text (' + e + '): a bug in poolsim, worth reporting with the text. Edit it to run again.';
      root.setAttribute('data-state', 'crash');
      setStale(true);
      return;
    }
    const t1 = performance.now();
    state.updates++;
    root.setAttribute('data-updates', String(state.updates));
    $('report-note').hidden = true;
    if (!res.ok) {
      setProblems(res);
      setStale(true);
      const status = $('status');
      status.className = 'status stale';
      status.textContent = state.runs ? 'The scenario does not load (see below the editor): the results are of the last text that did.'
        : 'The scenario does not load (see below the editor).';
      root.setAttribute('data-state', 'error');
      state.lastMs = t1 - t0;
      finish(keyAt, t0, t1, t1, res);
      return;
    }
    setProblems(null);
    setStale(false);
    state.runs = res.runs;
    state.firstSeed = res.first_seed;
    PoolsimReport.render(res.report, { keepView: reason === 'edit' || reason === 'seed', since: t1 });
    showRuns(res.runs);
    seedLabel();
    const t2 = performance.now();
    state.lastMs = t2 - t0;
    root.setAttribute('data-state', 'ok');
    const late = res.runs.reduce((n, r) => n + r.late_starts.count, 0);
    root.setAttribute('data-late-starts', String(late));
    root.setAttribute('data-panels', String(res.runs.length));
    root.setAttribute('data-seed', String(res.runs[0].seed));
    window.poolsimPlayground.report = res.report;
    window.poolsimPlayground.runs = res.runs;
    finish(keyAt, t0, t1, t2, res);
    scheduleSpread(false, res.runs.reduce((n, r) => n + r.events, 0));
  }
  // Records the update's times once its frame is drawn.
  function finish(keyAt, t0, t1, t2, res) {
    const n = state.updates;
    requestAnimationFrame(() => {
      const painted = performance.now();
      const record = {
        update: n,
        ok: res.ok,
        lateStarts: res.ok ? res.runs.reduce((k, r) => k + r.late_starts.count, 0) : null,
        simulateMs: t1 - t0,
        drawMs: t2 - t1,
        keyAt,
        paintedAt: painted,
        keyToPaintMs: keyAt === null ? null : painted - keyAt,
      };
      state.history.push(record);
      if (state.history.length > 100) state.history.shift();
      window.poolsimPlayground.last = record;
      root.setAttribute('data-painted', String(n));
      const status = $('status');
      if (res.ok) {
        status.className = 'status';
        status.textContent = (keyAt === null ? 'Ran' : 'Ran ' + Math.round(painted - keyAt) + ' ms after the keystroke') +
          ': simulated in ' + Math.round(t1 - t0) + ' ms, drawn in ' + Math.round(t2 - t1) + ' ms.';
      }
      if (record.keyToPaintMs !== null) root.setAttribute('data-key-to-paint-ms', String(Math.round(record.keyToPaintMs)));
    });
  }

  // -------------------------------------------------------- distribution
  // `events`: how many events the runs of this text took.
  function scheduleSpread(asked, events) {
    if (state.spreadTimer) clearTimeout(state.spreadTimer);
    const req = request();
    const key = JSON.stringify([req.scenario, req.file, req.policies, req.runs]);
    if (key === state.spreadKey && state.spreads) {
      drawSpreads();
      return;
    }
    const estimate = ((events || 0) * req.runs) / SPREAD_EVENTS_PER_MS;
    if (!asked && estimate > SPREAD_ASK_MS) {
      state.spreads = null;
      state.spreadKey = '';
      const out = $('spread-out');
      out.textContent = '';
      root.setAttribute('data-spread-asks', req.runs + ' seeds, up to ' + Math.round(estimate) + ' ms');
      const b = el('button', { type: 'button', id: 'spread-run' },
        'Run the ' + req.runs + ' seeds (up to ' + Math.round(estimate / 1000) + ' s, the page waits)');
      b.addEventListener('click', () => scheduleSpread(true));
      out.appendChild(b);
      return;
    }
    state.spreadTimer = setTimeout(() => {
      state.spreadTimer = 0;
      const t0 = performance.now();
      let res;
      try {
        res = call('poolsim_spread', req);
      } catch (e) {
        $('spread-out').textContent = 'The simulator failed on these seeds (' + e + '): a bug in poolsim, worth reporting with the text.';
        return;
      }
      if (!res.ok) return;
      state.spreadKey = key;
      state.spreads = res.spreads;
      drawSpreads();
      root.setAttribute('data-spread-runs', String(res.spreads[0].runs));
      state.spreadCount = (state.spreadCount || 0) + 1;
      root.setAttribute('data-spread-count', String(state.spreadCount));
      root.setAttribute('data-spread-ms', String(Math.round(performance.now() - t0)));
    }, SPREAD_DELAY_MS);
  }
  // An axis label: seconds past a second, with the decimals the step needs.
  function tickLabel(v, step, hi) {
    const unit = hi >= 1000 ? 1000 : 1;
    const decimals = Math.max(0, -Math.floor(Math.log10(step / unit) + 1e-9));
    return (v / unit).toFixed(Math.min(decimals, 6)) + (unit === 1000 ? ' s' : ' ms');
  }
  function niceStep(raw) {
    const mag = Math.pow(10, Math.floor(Math.log10(raw)));
    for (const m of [1, 2, 5, 10]) if (m * mag >= raw) return m * mag;
    return 10 * mag;
  }
  const STRIPS = [
    ['makespan_ms', 'makespan', tickLabel],
    ['start_delay_p95_ms', 'start delay p95', tickLabel],
    ['threads_peak', 'peak threads', (v) => String(Math.round(v))],
  ];
  function drawSpreads() {
    const out = $('spread-out');
    out.textContent = '';
    const spreads = state.spreads;
    if (!spreads) return;
    const n = spreads[0].runs;
    $('spread-title').textContent = '(' + n + ' seeds from ' + spreads[0].first_seed + (spreads[0].arrivals === 'per-run' ? ', each with its own Poisson arrivals' : '') + ')';
    const selected = Number($('seed').value);
    // One scale per figure for both policies, so the two read alike.
    const range = STRIPS.map(([key]) => {
      let lo = Infinity, hi = -Infinity;
      for (const s of spreads) for (const r of s.per_run) if (r.completed) { lo = Math.min(lo, r[key]); hi = Math.max(hi, r[key]); }
      if (!isFinite(lo)) { lo = 0; hi = 1; }
      if (hi - lo < 1e-9) { lo = Math.max(lo - 1, 0); hi = hi + 1; }
      return [lo, hi];
    });
    const canvases = [];
    spreads.forEach((s, i) => {
      const card = el('article', { class: 'run spread ' + (i ? 'b' : 'a'), 'data-policy': s.policy });
      const h = el('h3');
      h.appendChild(el('span', { class: 'tag' }, TAGS[i]));
      h.appendChild(document.createTextNode(s.policy + (s.incomplete ? ' \u2014 ' + s.incomplete + ' runs did not complete (left out)' : '')));
      card.appendChild(h);
      const cv = el('canvas', { role: 'img', 'aria-label': 'histograms of ' + s.policy + '\u2019s makespan, start delay p95 and peak threads over ' + n + ' seeds' });
      card.appendChild(cv);
      const table = el('table');
      const head = el('tr');
      for (const t of ['', 'min', 'p5', 'p50', 'p95', 'max']) head.appendChild(el('th', { class: t ? 'num' : '', scope: 'col' }, t));
      table.appendChild(head);
      for (const row of s.table) {
        const tr = el('tr');
        tr.appendChild(el('th', { scope: 'row' }, row[0]));
        for (const v of row.slice(1)) tr.appendChild(el('td', { class: 'num' }, v));
        table.appendChild(tr);
      }
      card.appendChild(table);
      const ul = el('ul');
      for (const line of s.outcome_lines) ul.appendChild(el('li', null, line.trim()));
      card.appendChild(ul);
      out.appendChild(card);
      canvases.push(cv);
    });
    // Drawn once every card is in place (their widths depend on how many).
    spreads.forEach((s, i) => drawDots(canvases[i], s, i, range, selected));
  }
  // Per figure a histogram of the seeds' runs on a scale both policies
  // share, each bar saying how many runs it holds; the slider's seed is
  // the bar outlined in black under a black triangle.
  function drawDots(cv, s, which, range, selected) {
    const width = Math.max(cv.parentNode.clientWidth - 24, 300);
    const LEFT = 140, RIGHT = 24, STRIP = 96, BAR_W = 22;
    const height = STRIPS.length * STRIP + 6;
    const dpr = window.devicePixelRatio || 1;
    cv.width = Math.round(width * dpr);
    cv.height = Math.round(height * dpr);
    cv.style.height = height + 'px';
    const ctx = cv.getContext('2d');
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.fillStyle = '#fff';
    ctx.fillRect(0, 0, width, height);
    const color = getComputedStyle(root).getPropertyValue(which ? '--b' : '--a').trim();
    const plotW = width - LEFT - RIGHT;
    const font = (px) => px + 'px "DejaVu Sans", "Segoe UI", Roboto, Helvetica, Arial, sans-serif';
    STRIPS.forEach(([key, label, fmt], k) => {
      let [lo, hi] = range[k];
      // Whole numbers (threads) get a bar each while they fit.
      const whole = key === 'threads_peak' && hi - lo + 1 <= plotW / BAR_W;
      let bins;
      if (whole) {
        lo -= 0.5;
        hi += 0.5;
        bins = Math.round(hi - lo);
      } else {
        bins = Math.max(Math.floor(plotW / BAR_W), 1);
      }
      const binOf = (v) => Math.min(Math.max(Math.floor(((v - lo) / (hi - lo)) * bins), 0), bins - 1);
      const counts = new Array(bins).fill(0);
      let mark = -1;
      s.per_run.forEach((r, i) => {
        if (!r.completed) return;
        const b = binOf(r[key]);
        counts[b]++;
        if (i === selected) mark = b;
      });
      const most = Math.max(...counts, 1);
      const y0 = 4 + k * STRIP, base = y0 + STRIP - 30, top = y0 + 30;
      const xOf = (v) => LEFT + ((v - lo) / (hi - lo)) * plotW;
      const bw = plotW / bins;
      ctx.font = font(15);
      ctx.fillStyle = '#1e1e1e';
      ctx.textAlign = 'right';
      ctx.textBaseline = 'middle';
      ctx.fillText(label, LEFT - 12, (top + base) / 2);
      counts.forEach((c, b) => {
        if (!c) return;
        const x = LEFT + b * bw, h = Math.max(((base - top) * c) / most, 2);
        ctx.fillStyle = color;
        ctx.fillRect(x + 1, base - h, Math.max(bw - 2, 1), h);
        if (bw >= 16) {
          ctx.font = font(14);
          ctx.fillStyle = '#1e1e1e';
          ctx.textAlign = 'center';
          ctx.textBaseline = 'bottom';
          ctx.fillText(String(c), x + bw / 2, base - h - 1);
        }
      });
      if (mark >= 0) {
        const x = LEFT + mark * bw, h = Math.max(((base - top) * counts[mark]) / most, 2);
        ctx.strokeStyle = '#000';
        ctx.lineWidth = 2;
        ctx.strokeRect(x + 0.5, base - h - 0.5, Math.max(bw - 1, 2), h + 1);
        const cx = x + bw / 2, ty = base - h - (bw >= 16 ? 20 : 4);
        ctx.fillStyle = '#000';
        ctx.beginPath();
        ctx.moveTo(cx - 6, ty - 9);
        ctx.lineTo(cx + 6, ty - 9);
        ctx.lineTo(cx, ty - 1);
        ctx.closePath();
        ctx.fill();
      }
      ctx.fillStyle = '#8a8a8a';
      ctx.fillRect(LEFT, base, plotW, 1);
      ctx.font = font(14);
      ctx.fillStyle = '#555';
      ctx.textAlign = 'center';
      ctx.textBaseline = 'top';
      if (whole) {
        const every = Math.max(1, Math.ceil(40 / bw));
        for (let v = Math.ceil(lo); v <= hi; v += every) {
          ctx.fillRect(Math.round(xOf(v)), base, 1, 4);
          ctx.fillText(String(v), xOf(v), base + 6);
        }
      } else {
        const step = niceStep((hi - lo) / Math.max(Math.floor(plotW / 110), 2));
        for (let v = Math.ceil(lo / step) * step; v <= hi + 1e-9; v += step) {
          ctx.fillRect(Math.round(xOf(v)), base, 1, 4);
          ctx.fillText(fmt(v, step, hi), xOf(v), base + 6);
        }
      }
    });
  }

  // ---------------------------------------------------------- open files
  function openText(name, text) {
    if (/\.nettrace$/i.test(name)) {
      showNote('A .nettrace is read by the command line: poolsim import ' + name + ' --html trace.html, then drop that page here.');
      return;
    }
    const block = /<script type="application\/json" id="poolsim-data">([\s\S]*?)<\/script>/.exec(text);
    if (block) {
      PoolsimReport.render(JSON.parse(block[1]));
      showNote('Showing the report ' + name + '. Edit the scenario or pick a preset to go back to the playground\u2019s run.');
      root.setAttribute('data-report', name);
      return;
    }
    editor.value = text;
    state.file = name;
    $('editor-file').textContent = name;
    $('seed').value = '0';
    refreshGutter();
    schedule('preset');
  }
  function showNote(text) {
    const note = $('report-note');
    note.textContent = text;
    note.hidden = false;
  }
  function readFile(file) {
    if (/\.nettrace$/i.test(file.name)) {
      openText(file.name, '');
      return;
    }
    file.text().then((text) => openText(file.name, text)).catch((e) => window.poolsimError(e));
  }

  // --------------------------------------------------------------- wiring
  function wire() {
    editor.addEventListener('keydown', (e) => {
      state.keyDownAt = e.timeStamp;
    });
    editor.addEventListener('input', (e) => {
      state.keyAt = state.keyDownAt !== null && e.timeStamp - state.keyDownAt < 1000 ? state.keyDownAt : e.timeStamp;
      state.keyDownAt = null;
      refreshGutter();
      schedule('edit');
    });
    editor.addEventListener('scroll', () => {
      gutter.scrollTop = editor.scrollTop;
      drawMarks();
    });
    $('preset').addEventListener('change', () => {
      const p = presetOf($('preset').value);
      if (!p) return;
      loadPreset(p);
      $('editor-file').textContent = p.file;
      schedule('preset');
    });
    for (const id of ['policy-a', 'policy-b']) $(id).addEventListener('change', () => schedule('policy'));
    $('seed').addEventListener('input', () => {
      seedLabel();
      schedule('seed');
    });
    $('runs').addEventListener('change', () => {
      const n = Number($('runs').value);
      $('seed').max = String(n - 1);
      if (Number($('seed').value) > n - 1) $('seed').value = String(n - 1);
      seedLabel();
      schedule('seed');
    });
    $('open-file').addEventListener('click', () => $('file-input').click());
    $('file-input').addEventListener('change', () => {
      const f = $('file-input').files[0];
      if (f) readFile(f);
    });
    document.addEventListener('dragover', (e) => {
      e.preventDefault();
      document.body.classList.add('dragging-file');
    });
    document.addEventListener('dragleave', () => document.body.classList.remove('dragging-file'));
    document.addEventListener('drop', (e) => {
      e.preventDefault();
      document.body.classList.remove('dragging-file');
      const f = e.dataTransfer && e.dataTransfer.files[0];
      if (f) readFile(f);
    });
    let resizing = 0;
    window.addEventListener('resize', () => {
      if (resizing) cancelAnimationFrame(resizing);
      resizing = requestAnimationFrame(() => {
        resizing = 0;
        drawSpreads();
      });
    });
  }

  window.poolsimPlayground = { presets, history: state.history, last: null, call: (name, req) => call(name, req) };

  async function start() {
    await loadModule();
    fillControls();
    wire();
    const params = hashParams();
    loadPreset(presetOf(params.preset || DEFAULT_PRESET) || presets[0]);
    $('editor-file').textContent = state.file;
    if (params.a !== undefined) $('policy-a').value = params.a;
    if (params.b !== undefined) $('policy-b').value = params.b;
    if (params.runs !== undefined) $('runs').value = params.runs;
    $('seed').max = String(Number($('runs').value) - 1);
    if (params.seed !== undefined) $('seed').value = params.seed;
    update('preset');
    requestAnimationFrame(() => root.setAttribute('data-ready', '1'));
  }
  start().catch((e) => window.poolsimError(e && e.stack ? e.message : e));
})();
