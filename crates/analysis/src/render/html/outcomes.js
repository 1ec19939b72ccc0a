// poolsim's HTML report, its outcome picker. A `run --runs N --html` (or
// `compare --runs N --html`) page holds a run of each outcome of the N
// seeds (the data's `outcomes`: per panel, the choices with their share,
// figures and run), and the radio buttons above the chart (#outcomes, one
// group per policy, written by render/html.rs) choose which one is drawn:
// the page's data is drawn again (PoolsimReport.render, report.js) with
// that run in its policy's panel, the time axis and the window kept.
// #outcome=K in the address opens on outcome K (p1.K: the second
// policy's; several with commas); picking one writes it there. Only such
// pages have this script: report.js is the same in every page.
(function () {
  'use strict';

  const block = document.getElementById('poolsim-data');
  const groups = Array.from(document.querySelectorAll('fieldset.outcomes'));
  if (!block || !groups.length || !window.PoolsimReport) return;
  const root = document.documentElement;
  const radios = (pi) => Array.from(groups[pi].querySelectorAll('input[type="radio"]'));
  // Per panel, the choice drawn: the one the page opens on (the first
  // seed's) is the markup's checked one.
  const drawn = groups.map((g, pi) => {
    const r = radios(pi).find((x) => x.defaultChecked);
    return r ? Number(r.value) : 0;
  });
  // The page's data, parsed when another run is first drawn.
  let data = null;

  // The DOM says which run is drawn: the radio checked, its label framed,
  // data-drawn on its group and data-outcome on the page ("2", or "2,1"
  // with two policies; "incomplete" for a run that did not complete).
  function mark() {
    groups.forEach((g, pi) => {
      for (const r of radios(pi)) {
        const on = Number(r.value) === drawn[pi];
        r.checked = on;
        r.closest('label').classList.toggle('drawn', on);
        if (on) g.setAttribute('data-drawn', r.getAttribute('data-outcome'));
      }
    });
    root.setAttribute('data-outcome', groups.map((g) => g.getAttribute('data-drawn')).join(','));
  }

  function draw() {
    // Timed from here: the first switch reads the data block too.
    const since = performance.now();
    if (!data) data = JSON.parse(block.textContent);
    const panels = data.panels.map((p, pi) => {
      const c = data.outcomes[pi] && data.outcomes[pi].choices[drawn[pi]];
      return c && c.panel ? c.panel : p;
    });
    const r = window.PoolsimReport.render(Object.assign({}, data, { panels }), { keepView: true, since });
    root.setAttribute('data-items', String(r.items));
    root.setAttribute('data-threads', String(r.threads));
    root.setAttribute('data-bars', String(r.bars));
    root.setAttribute('data-decisions', String(r.decisions));
    root.setAttribute('data-switch-ms', String(Math.round(r.readyMs)));
  }

  // A message in a group (an outcome the address asks for that the page
  // does not hold); null clears it.
  function status(pi, text) {
    let p = groups[pi].querySelector('.outcome-status');
    if (!text) {
      if (p) p.remove();
      return;
    }
    if (!p) {
      p = document.createElement('p');
      p.className = 'outcome-status';
      p.setAttribute('role', 'status');
      groups[pi].appendChild(p);
    }
    p.textContent = text;
  }

  function params() {
    const out = {};
    for (const part of location.hash.replace(/^#/, '').split('&')) {
      const eq = part.indexOf('=');
      if (eq > 0) out[decodeURIComponent(part.slice(0, eq))] = decodeURIComponent(part.slice(eq + 1));
    }
    return out;
  }

  // Picking writes #outcome=... into the address (the other parameters
  // kept), without a history entry or a hashchange.
  function writeHash() {
    const value = groups.map((g, pi) => {
      const r = radios(pi).find((x) => Number(x.value) === drawn[pi]);
      const k = r ? r.getAttribute('data-outcome') : '';
      return pi === 0 ? k : 'p' + pi + '.' + k;
    }).join(',');
    const parts = location.hash.replace(/^#/, '').split('&').filter((p) => p && !/^outcome=/.test(p));
    parts.unshift('outcome=' + encodeURIComponent(value).replace(/%2C/g, ','));
    try {
      history.replaceState(history.state, '', '#' + parts.join('&'));
    } catch (_) {
      // A page whose address cannot be rewritten: the pick still shows.
    }
  }

  function pick(pi, ci) {
    if (drawn[pi] === ci) return;
    drawn[pi] = ci;
    status(pi, null);
    draw();
    mark();
    writeHash();
  }

  // #outcome=K, p1.K, or a list of them: true if a different run is drawn.
  function applyHash() {
    const value = params().outcome;
    if (!value) return false;
    let changed = false;
    for (const part of value.split(',')) {
      const m = /^(?:p(\d+)\.)?(.+)$/.exec(part.trim());
      if (!m) continue;
      const pi = m[1] ? Number(m[1]) : 0;
      if (pi >= groups.length) continue;
      const r = radios(pi).find((x) => x.getAttribute('data-outcome') === m[2]);
      if (!r) {
        status(pi, 'Outcome ' + m[2] + ' (from the address) is not among this page\u2019s runs.');
        continue;
      }
      status(pi, null);
      if (drawn[pi] !== Number(r.value)) {
        drawn[pi] = Number(r.value);
        changed = true;
      }
    }
    if (changed) {
      draw();
      mark();
    }
    return changed;
  }

  groups.forEach((g, pi) => {
    g.addEventListener('change', (e) => {
      const r = e.target;
      if (r && r.type === 'radio') pick(pi, Number(r.value));
    });
    // The report's keys skip a focused input; on the picker, + - 0 still
    // zoom (the arrows pick).
    g.addEventListener('keydown', (e) => {
      if (e.ctrlKey || e.metaKey || e.altKey) return;
      const button = { '+': 'zoom-in', '=': 'zoom-in', '-': 'zoom-out', '_': 'zoom-out', '0': 'reset', Home: 'reset' }[e.key];
      if (!button) return;
      e.preventDefault();
      document.getElementById(button).click();
    });
  });

  // report.js's own #hover= and #view= were applied to the run it drew
  // first; when the address picks another, its hashchange applies them
  // again to that one (this listener then finds nothing to change).
  const again = () => {
    const p = params();
    if (p.hover || p.view) window.dispatchEvent(new HashChangeEvent('hashchange'));
  };
  mark();
  if (applyHash()) {
    again();
    root.setAttribute('data-render-ms', String(Math.round(performance.now())));
  }
  window.addEventListener('hashchange', () => {
    if (applyHash()) again();
  });
})();
