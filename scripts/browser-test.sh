#!/usr/bin/env bash
# The HTML report (`poolsim run --html`, `compare --html`) in a real
# browser: headless Chromium loads the pages from disk, offline, and this
# checks what they show. Not part of `cargo test` (it needs Chromium).
#
#   scripts/browser-test.sh            # builds poolsim (debug), then checks
#   POOLSIM=target/release/poolsim scripts/browser-test.sh
#
# It installs nothing: it needs `chromium` on the PATH (Debian/Ubuntu:
# apt-get install -y chromium). Everything it writes goes to target/browser/:
# the reports, their dumped DOMs, Chromium's logs and the screenshots
# (report.png, compare.png, bench-100k.png) to look at.
#
# Checks:
#   1. seed 000 under its policy (net5), the compare of net5 and net6, and
#      100,000 CPU items load with no console message at all (the page logs
#      none: any is an error) and no error marker (window.onerror writes a
#      data-error attribute and the #error box); the page says it is ready.
#   2. The DOM holds the items: the summary counts 100 items and 33 threads,
#      the items table has a row per item, the threads table a row per
#      thread.
#   3. #hover=thread:4 shows the fifth thread's tooltip, saying why it was
#      created in `poolsim explain`'s words (its sentence found in explain's
#      output); #hover=thread:8 says starvation; #hover=item:12 gives the
#      item's times; #hover=tick:1 a gate tick's sentence.
#   4. The 100,000-item report is at most 10 MB and loads and draws within
#      2 s (the page records performance.now() when drawn: data-render-ms).
#   5. The same run gives the same bytes.
#   6. The controls work: a page that holds the report in a frame clicks
#      the buttons, presses + - arrows 0, walks the threads (down arrow),
#      bars (]) and decisions (n) on the focused chart, hovers a lane,
#      turns the wheel and drags, and checks the window and the tooltip
#      after each (target/browser/interact.dom lists the steps).
#   7. The playground (scripts/playground-test.sh, which builds it; needs
#      python3 too): loads from the disk and through `poolsim serve`, types
#      into it, times seed 001's min_threads 4 -> 10, screenshots
#      playground*.png. SKIP_PLAYGROUND=1 leaves it out.
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$PWD
OUT=$ROOT/target/browser
mkdir -p "$OUT"

if ! command -v chromium >/dev/null 2>&1; then
    echo "browser-test: chromium is not installed (apt-get install -y chromium)" >&2
    exit 1
fi

if [ -z "${POOLSIM:-}" ]; then
    cargo build --quiet --bin poolsim
    POOLSIM=$ROOT/target/debug/poolsim
fi

failures=0
pass() { echo "  ok    $*"; }
fail() {
    echo "  FAIL  $*" >&2
    failures=$((failures + 1))
}

# chromium URL OUT_PREFIX [extra flags...]: dumps the DOM to OUT_PREFIX.dom
# and Chromium's log (console messages included) to OUT_PREFIX.log.
dump() {
    local url=$1 prefix=$2
    shift 2
    timeout 120 chromium --headless --no-sandbox --disable-gpu --hide-scrollbars \
        --window-size=1400,1500 --enable-logging=stderr --v=0 "$@" \
        --dump-dom "$url" >"$prefix.dom" 2>"$prefix.log" || true
}

shot() {
    local url=$1 png=$2
    timeout 120 chromium --headless --no-sandbox --disable-gpu --hide-scrollbars \
        --window-size=1400,1500 --screenshot="$png" "$url" >/dev/null 2>&1 || true
}

# The text of the tooltip in a dumped DOM, entities decoded.
tip_text() {
    tr '\n' ' ' <"$1" | grep -o '<div id="tip"[^>]*>.*</div></div>' | head -n 1 |
        sed -e 's/<[^>]*>/ /g' -e 's/&lt;/</g' -e 's/&gt;/>/g' -e 's/&amp;/\&/g' -e 's/  */ /g'
}

attr() { # attr NAME FILE: the value of data-NAME on the page's root
    grep -o "data-$1=\"[^\"]*\"" "$2" | head -n 1 | sed -e 's/.*="//' -e 's/"$//'
}

# A page loaded cleanly: no console message, no error marker, ready.
clean() {
    local name=$1 prefix=$2
    if grep -q ':CONSOLE' "$prefix.log"; then
        fail "$name: console messages: $(grep ':CONSOLE' "$prefix.log" | head -n 3)"
    elif grep -q 'data-error=' "$prefix.dom"; then
        fail "$name: the page reports an error: $(attr error "$prefix.dom")"
    elif [ "$(attr ready "$prefix.dom")" != "1" ]; then
        fail "$name: the page never said it was ready"
    else
        pass "$name: loads with no console message or error"
    fi
}

echo "building the reports"
SEED0=scenarios/seed-000-task-run.toml
"$POOLSIM" run "$SEED0" --items 0 --html "$OUT/report.html" >/dev/null
"$POOLSIM" run "$SEED0" --items 0 --html "$OUT/report-again.html" >/dev/null
"$POOLSIM" compare "$SEED0" -p net5 -p net6 --html "$OUT/compare.html" >/dev/null
"$POOLSIM" run scenarios/bench-100k-cpu.toml --items 0 --html "$OUT/bench-100k.html" >/dev/null

echo "checking in $(chromium --version 2>/dev/null | head -n 1)"
URL=file://$OUT/report.html

# 1. and 2.: clean load, the items in the DOM.
dump "$URL" "$OUT/report"
clean "seed 000 (run)" "$OUT/report"
items=$(attr items "$OUT/report.dom")
threads=$(attr threads "$OUT/report.dom")
item_rows=$(grep -o '<tr data-item="' "$OUT/report.dom" | wc -l)
thread_rows=$(grep -o '<tr data-thread="' "$OUT/report.dom" | wc -l)
if [ "$items" = 100 ] && [ "$threads" = 33 ] && [ "$item_rows" -eq 100 ] && [ "$thread_rows" -eq 33 ]; then
    pass "the DOM holds 100 items (100 table rows) and 33 threads (33 rows)"
else
    fail "the DOM holds items=$items threads=$threads item rows=$item_rows thread rows=$thread_rows"
fi
if grep -q 'id="summary"[^>]*>Drawn: net5: 100 items, 33 threads' "$OUT/report.dom"; then
    pass "the summary: $(grep -o 'Drawn: net5[^<]*' "$OUT/report.dom" | head -n 1)"
else
    fail "the summary is missing or wrong"
fi

dump "file://$OUT/compare.html" "$OUT/compare"
clean "seed 000 (compare net5, net6)" "$OUT/compare"
if [ "$(attr items "$OUT/compare.dom")" = 200 ]; then
    pass "the compare page draws both runs (200 items)"
else
    fail "the compare page has items=$(attr items "$OUT/compare.dom")"
fi

# 3. Tooltips from the URL hash.
why4=$("$POOLSIM" explain "$SEED0" | grep -E 'thread 4 created$' | head -n 1 | sed -E 's/^ *[0-9.]+ ms +//')
why8=$("$POOLSIM" explain "$SEED0" | grep -E 'thread 8 created$' | head -n 1 | sed -E 's/^ *[0-9.]+ ms +//')
dump "$URL#hover=thread:4" "$OUT/hover-thread-4"
clean "#hover=thread:4" "$OUT/hover-thread-4"
tip=$(tip_text "$OUT/hover-thread-4.dom")
if grep -q 'data-target="thread:4"' "$OUT/hover-thread-4.dom" && [ -n "$why4" ] &&
    [[ "$tip" == *"thread 4 (demand)"* ]] && [[ "$tip" == *"$why4"* ]]; then
    pass "hovering the fifth thread says why it was created:$tip"
else
    fail "hovering thread 4: tooltip '$tip', explain says '$why4'"
fi
dump "$URL#hover=thread:8" "$OUT/hover-thread-8"
tip=$(tip_text "$OUT/hover-thread-8.dom")
if [[ "$tip" == *"thread 8 (starvation)"* ]] && [[ "$tip" == *"$why8"* ]] && [[ "$tip" == *Starvation* ]]; then
    pass "hovering thread 8 says starvation:$tip"
else
    fail "hovering thread 8: tooltip '$tip', explain says '$why8'"
fi
dump "$URL#hover=item:12" "$OUT/hover-item-12"
tip=$(tip_text "$OUT/hover-item-12.dom")
if [[ "$tip" == *"item #12, group work"* ]] && [[ "$tip" == *queued*started*finished* ]]; then
    pass "hovering item 12 gives its group, thread and times:$tip"
else
    fail "hovering item 12: tooltip '$tip'"
fi
dump "$URL#hover=tick:1" "$OUT/hover-tick-1"
tip=$(tip_text "$OUT/hover-tick-1.dom")
if [[ "$tip" == *"gate tick: last dequeue"* ]]; then
    pass "hovering a decision tick tells what it decided:$tip"
else
    fail "hovering tick 1: tooltip '$tip'"
fi

# 4. The large report: size and time to load and draw.
size=$(stat -c %s "$OUT/bench-100k.html")
if [ "$size" -le 10000000 ]; then
    pass "the 100,000-item report is $size bytes (at most 10 MB)"
else
    fail "the 100,000-item report is $size bytes, over 10 MB"
fi
worst=0
for k in 1 2 3; do
    dump "file://$OUT/bench-100k.html" "$OUT/bench-100k"
    ms=$(attr render-ms "$OUT/bench-100k.dom")
    ms=${ms:-99999}
    [ "$ms" -gt "$worst" ] && worst=$ms
done
clean "100,000 items" "$OUT/bench-100k"
if [ "$(attr items "$OUT/bench-100k.dom")" = 100000 ] && [ "$worst" -le 2000 ]; then
    pass "the 100,000-item report loads and draws in at most $worst ms (3 loads; drawn: $(attr bars "$OUT/bench-100k.dom") bars)"
else
    fail "the 100,000-item report: items=$(attr items "$OUT/bench-100k.dom"), slowest load and draw $worst ms"
fi

# 5. Deterministic.
if cmp -s "$OUT/report.html" "$OUT/report-again.html"; then
    pass "the same run gives the same bytes"
else
    fail "two runs of the same scenario gave different pages"
fi

# 6. Mouse and keyboard, driven from a page that holds the report in a
# frame (file pages may read each other with --allow-file-access-from-files).
cat >"$OUT/interact.html" <<'EOF'
<!DOCTYPE html>
<html><body>
<iframe id="f" src="report.html" style="width:1400px;height:1400px;border:0"></iframe>
<pre id="out"></pre>
<script>
const f = document.getElementById('f');
f.addEventListener('load', () => {
  const w = f.contentWindow, d = w.document, steps = [];
  let ok = true;
  const range = () => d.getElementById('range').textContent;
  const tip = () => d.getElementById('tip');
  const tipText = () => (tip().hidden ? '' : tip().textContent);
  const check = (name, cond, detail) => {
    steps.push((cond ? 'ok   ' : 'FAIL ') + name + ': ' + detail);
    ok = ok && !!cond;
  };
  const key = (k, target) => (target || d.body).dispatchEvent(new w.KeyboardEvent('keydown', { key: k, bubbles: true, cancelable: true }));
  try {
    const whole = range();
    check('opens on the whole run', whole.includes('whole run'), whole);
    d.getElementById('zoom-in').click();
    const zoomed = range();
    check('the zoom-in button zooms in', zoomed.includes('(13.75 s)'), zoomed);
    key('-');
    check('- zooms out', range() === whole, range());
    key('+');
    const before = range();
    key('ArrowRight');
    check('the right arrow pans later', range() !== before && range().includes('(13.75 s)'), range());
    d.getElementById('pan-left').click();
    check('the Earlier button pans back', range() === before, range());
    key('0');
    check('0 shows the whole run', range() === whole, range());
    const canvas = d.querySelector('canvas[tabindex]');
    canvas.focus();
    check('a chart takes the focus', d.activeElement === canvas, String(d.activeElement && d.activeElement.tagName));
    for (let k = 0; k < 5; k++) key('ArrowDown', canvas);
    check('the down arrow walks to the fifth thread', tip().getAttribute('data-target') === 'thread:4' && tipText().includes('why: thread request'), tipText());
    // Its first bar is the thread starting; then its first item.
    key(']', canvas);
    check('] shows the first bar of that thread', tipText().includes('thread starting'), tipText());
    key(']', canvas);
    check('] then its first item', /^item:\d+$/.test(tip().getAttribute('data-target')) && tipText().includes('queued'), tipText());
    key('n', canvas);
    check('n shows a decision', tip().getAttribute('data-target') === 'tick:0' && tipText().includes('gate tick'), tipText());
    key('Escape', canvas);
    check('Esc hides the tooltip', tip().hidden, String(tip().hidden));
    const r = canvas.getBoundingClientRect();
    const at = (x, y) => ({ clientX: r.left + x, clientY: r.top + y, bubbles: true, pointerId: 1, button: 0, isPrimary: true, pointerType: 'mouse' });
    // The ninth lane's label (lanes start 22 px down, 20 px each for 33 threads).
    canvas.dispatchEvent(new w.PointerEvent('pointermove', at(40, 22 + 8 * 20 + 10)));
    check('hovering a lane says why its thread exists', tipText().includes('thread 8 (starvation)') && tipText().includes('Starvation'), tipText());
    canvas.dispatchEvent(new w.WheelEvent('wheel', { clientX: r.left + 400, clientY: r.top + 200, deltaY: -300, bubbles: true, cancelable: true }));
    const wheeled = range();
    check('the wheel zooms in', wheeled !== whole && !wheeled.includes('whole'), wheeled);
    canvas.dispatchEvent(new w.PointerEvent('pointerdown', at(600, 200)));
    canvas.dispatchEvent(new w.PointerEvent('pointermove', at(500, 200)));
    canvas.dispatchEvent(new w.PointerEvent('pointerup', at(500, 200)));
    check('dragging pans', range() !== wheeled, range());
    check('no error in the report', !d.documentElement.hasAttribute('data-error'), d.documentElement.getAttribute('data-error') || '');
  } catch (e) {
    check('the steps ran', false, String(e));
  }
  document.getElementById('out').textContent = steps.join('\n');
  document.body.setAttribute('data-interact', ok ? 'ok' : 'fail');
});
</script>
</body></html>
EOF
dump "file://$OUT/interact.html" "$OUT/interact" --allow-file-access-from-files --virtual-time-budget=5000
if grep -q 'data-interact="ok"' "$OUT/interact.dom"; then
    pass "buttons, keys, hover, wheel and drag work ($(grep -c '^ok ' "$OUT/interact.dom") steps)"
elif grep -q 'data-interact="fail"' "$OUT/interact.dom"; then
    fail "interaction: $(grep '^FAIL' "$OUT/interact.dom" | head -n 3)"
else
    fail "interaction: the driving page did not finish (see target/browser/interact.log)"
fi
if grep -q ':CONSOLE' "$OUT/interact.log"; then
    fail "interaction: console messages: $(grep ':CONSOLE' "$OUT/interact.log" | head -n 3)"
fi

# Screenshots to look at.
shot "$URL#hover=thread:8" "$OUT/report.png"
shot "file://$OUT/compare.html#hover=p1.thread:20" "$OUT/compare.png"
shot "file://$OUT/bench-100k.html" "$OUT/bench-100k.png"
for png in report compare bench-100k; do
    if [ -s "$OUT/$png.png" ]; then
        pass "screenshot: target/browser/$png.png"
    else
        fail "no screenshot target/browser/$png.png"
    fi
done

# 7. The playground: built, opened from the disk and through `poolsim
# serve`, typed into (scripts/playground-test.sh; its own lines above).
if [ -z "${SKIP_PLAYGROUND:-}" ]; then
    echo "checking the playground"
    if POOLSIM=$POOLSIM scripts/playground-test.sh; then
        pass "the playground (scripts/playground-test.sh)"
    else
        fail "the playground (scripts/playground-test.sh; target/browser/playground.log)"
    fi
fi

if [ "$failures" -gt 0 ]; then
    echo "browser-test: $failures check(s) failed" >&2
    exit 1
fi
echo "browser-test: every check passed"
