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
# (report.png, compare.png, bench-100k.png, runs-outcomes.png) to look at.
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
#   8. `run --runs N --html`'s outcome picker (python3 drives the keys): a
#      run per outcome, #outcome=2 (with #hover=) opens the second, Tab
#      reaches the picker, the arrows pick and redraw keeping the window;
#      a page of 100,000-item runs stays within 10 MB and 2 s
#      (runs-outcomes.png to look at).
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

# 8. `run --runs N --html`: the outcome picker. one-core from seed 11 has
# three outcomes, seed 11's the first; the page holds a run of each.
# Loaded from the disk (dumped DOMs): the picker, #outcome=2 opening the
# second outcome's run, #hover= applied to that run (the sentence `poolsim
# explain --seed K --workload-seed 11` says for its thread 1), an outcome
# the page does not hold. Driven with real keys over the DevTools protocol
# (python3): Tab reaches the picker (on the drawn outcome, with a focus
# outline), the down arrow draws outcome 2 (its seed and peak in the
# summary and facts, the address #outcome=2), + zooms from the picker and
# the window stays through the next pick; screenshot runs-outcomes.png.
# Then a page of 100,000-item runs with several outcomes: within 10 MB,
# loaded and drawn within 2 s, an outcome switched within 2 s.
echo "checking the outcome picker (run --runs)"
ONE=scenarios/validation/one-core.toml
"$POOLSIM" run "$ONE" --seed 11 --runs 50 --items 0 --html "$OUT/runs-outcomes.html" >"$OUT/runs-outcomes.txt"
"$POOLSIM" run "$ONE" --seed 11 --runs 50 --items 0 --html "$OUT/runs-outcomes-again.html" >/dev/null
# "   30.0 % of runs: 4.87 s, peak 3 threads (seed 15 is one)": outcome 2.
outcome_line() { sed -n '/^outcomes$/,/^the run above/p' "$OUT/runs-outcomes.txt" | sed -n "$(($1 + 1))p"; }
n_outcomes=$(sed -n '/^outcomes$/,/^the run above/p' "$OUT/runs-outcomes.txt" | grep -c '^ *[0-9.]* % of runs:')
seed1=$(outcome_line 1 | sed -E 's/.*\(seed ([0-9]+) is one\).*/\1/')
seed2=$(outcome_line 2 | sed -E 's/.*\(seed ([0-9]+) is one\).*/\1/')
peak2=$(outcome_line 2 | sed -E 's/.*peak ([0-9]+) threads.*/\1/')
if [ "$n_outcomes" -ge 2 ] && [ "$seed1" = 11 ] && [ -n "$seed2" ]; then
    pass "run --runs 50 prints $n_outcomes outcomes; seed 11 is outcome 1, seed $seed2 outcome 2"
else
    fail "run --runs 50 of $ONE: $n_outcomes outcomes, seeds '$seed1' '$seed2'"
fi
if cmp -s "$OUT/runs-outcomes.html" "$OUT/runs-outcomes-again.html"; then
    pass "the same --runs command gives the same bytes"
else
    fail "two --runs pages of the same command differ"
fi
RURL=file://$OUT/runs-outcomes.html
summary_of() { grep -o 'id="summary"[^>]*>[^<]*' "$1" | sed 's/.*>//'; }
dump "$RURL" "$OUT/runs-outcomes"
clean "run --runs 50" "$OUT/runs-outcomes"
radios=$(grep -o '<input type="radio" name="outcome-0"' "$OUT/runs-outcomes.dom" | wc -l)
if [ "$radios" -eq "$n_outcomes" ] && [ "$(attr outcome "$OUT/runs-outcomes.dom")" = 1 ] &&
    [[ "$(summary_of "$OUT/runs-outcomes.dom")" == *"seed 11: outcome 1 of $n_outcomes"* ]]; then
    pass "the picker has $radios outcomes; the first seed's (outcome 1) is drawn: $(summary_of "$OUT/runs-outcomes.dom")"
else
    fail "the picker: $radios radios, data-outcome=$(attr outcome "$OUT/runs-outcomes.dom"), summary '$(summary_of "$OUT/runs-outcomes.dom")'"
fi
dump "$RURL#outcome=2" "$OUT/runs-outcome-2"
clean "#outcome=2" "$OUT/runs-outcome-2"
if [ "$(attr outcome "$OUT/runs-outcome-2.dom")" = 2 ] &&
    [[ "$(summary_of "$OUT/runs-outcome-2.dom")" == *"seed $seed2: outcome 2 of $n_outcomes"* ]] &&
    grep -q "policy: net-classic  ·  seed $seed2  ·  .*peak $peak2 threads" "$OUT/runs-outcome-2.dom"; then
    pass "#outcome=2 opens on outcome 2's run (seed $seed2, peak $peak2): $(summary_of "$OUT/runs-outcome-2.dom")"
else
    fail "#outcome=2: data-outcome=$(attr outcome "$OUT/runs-outcome-2.dom"), summary '$(summary_of "$OUT/runs-outcome-2.dom")'"
fi
why1=$("$POOLSIM" explain "$ONE" --seed "$seed2" --workload-seed 11 | grep -E 'thread 1 created$' | head -n 1 | sed -E 's/^ *[0-9.]+ ms +//')
why1_first=$("$POOLSIM" explain "$ONE" --seed 11 | grep -E 'thread 1 created$' | head -n 1 | sed -E 's/^ *[0-9.]+ ms +//')
dump "$RURL#outcome=2&hover=thread:1" "$OUT/runs-outcome-2-hover"
clean "#outcome=2&hover=thread:1" "$OUT/runs-outcome-2-hover"
tip=$(tip_text "$OUT/runs-outcome-2-hover.dom")
if [ -n "$why1" ] && [ "$why1" != "$why1_first" ] && [[ "$tip" == *"$why1"* ]]; then
    pass "#outcome=2&hover=thread:1 tells why seed $seed2's thread 1 exists, as explain --seed $seed2 --workload-seed 11 does:$tip"
else
    fail "#outcome=2&hover=thread:1: tooltip '$tip', explain says '$why1' (seed 11: '$why1_first')"
fi
dump "$RURL#outcome=9" "$OUT/runs-outcome-9"
if [ "$(attr outcome "$OUT/runs-outcome-9.dom")" = 1 ] && grep -q 'class="outcome-status"[^>]*>Outcome 9 (from the address) is not among' "$OUT/runs-outcome-9.dom"; then
    pass "#outcome=9 keeps outcome 1 and says the page does not hold outcome 9"
else
    fail "#outcome=9: data-outcome=$(attr outcome "$OUT/runs-outcome-9.dom")"
fi

# A page of 100,000-item runs with several outcomes (each item 3 ms of CPU
# then a 2 ms sleep: hill climbing's samples differ from seed to seed).
sed -e 's/^name = .*/name = "bench: 100k x (3 ms CPU, 2 ms sleep) items, 16 cores"/' \
    -e 's/body = \[ { cpu_ms = 5 } \]/body = [ { cpu_ms = 3 }, { sleep_ms = 2 } ]/' \
    scenarios/bench-100k-cpu.toml >"$OUT/bench-100k-outcomes.toml"
"$POOLSIM" run "$OUT/bench-100k-outcomes.toml" --runs 20 --items 0 --html "$OUT/bench-100k-outcomes.html" >"$OUT/bench-100k-outcomes.txt"
big_outcomes=$(grep -c '^ *[0-9.]* % of runs:' "$OUT/bench-100k-outcomes.txt" || true)
big_radios=$(grep -o '<input type="radio"' "$OUT/bench-100k-outcomes.html" | wc -l)
size=$(stat -c %s "$OUT/bench-100k-outcomes.html")
if [ "$big_radios" -ge 2 ] && [ "$size" -le 10000000 ]; then
    pass "100,000 items, --runs 20: $big_outcomes outcomes, $big_radios runs in a page of $size bytes (at most 10 MB)"
else
    fail "100,000 items, --runs 20: $big_radios runs, $size bytes"
fi

if ! command -v python3 >/dev/null 2>&1; then
    fail "the outcome picker's keyboard checks need python3"
else
if ! python3 - "$OUT" "$seed2" "$peak2" "$n_outcomes" <<'EOF'
"""Drives headless Chromium over the DevTools protocol (--remote-debugging-pipe:
JSON messages ending in NUL on fds 3 and 4) through the outcome picker."""
import base64
import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import time

OUT, SEED2, PEAK2, N = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
failures = 0


def check(cond, text, detail=""):
    global failures
    if cond:
        print("  ok    " + text)
    else:
        failures += 1
        print("  FAIL  " + text + (": " + str(detail) if detail != "" else ""), file=sys.stderr)
    return cond


class Chromium:
    def __init__(self):
        self.profile = tempfile.mkdtemp(prefix="poolsim-chromium-")
        to_r, self.to_chrome = os.pipe()
        self.from_chrome, from_w = os.pipe()

        def fds():
            # dup2 onto the same number keeps close-on-exec: clear it.
            os.dup2(to_r, 3)
            os.dup2(from_w, 4)
            os.set_inheritable(3, True)
            os.set_inheritable(4, True)

        self.stderr = open(os.path.join(OUT, "runs-outcomes-chromium.log"), "w")
        self.proc = subprocess.Popen(
            ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
             "--remote-debugging-pipe", "--no-first-run", "--no-default-browser-check",
             "--user-data-dir=" + self.profile, "--window-size=1400,1500", "about:blank"],
            preexec_fn=fds, close_fds=False, stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=self.stderr)
        os.close(to_r)
        os.close(from_w)
        self.buf, self.next_id, self.events, self.session = b"", 0, [], None
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Runtime", "Log", "Page"):
            self.send(domain + ".enable")
        self.send("Emulation.setDeviceMetricsOverride",
                  {"width": 1400, "height": 1500, "deviceScaleFactor": 1, "mobile": False})

    def _read(self, timeout):
        end = time.time() + timeout
        while b"\0" not in self.buf:
            left = end - time.time()
            if left <= 0 or not select.select([self.from_chrome], [], [], left)[0]:
                raise TimeoutError("no message from Chromium")
            chunk = os.read(self.from_chrome, 1 << 20)
            if not chunk:
                raise EOFError("Chromium closed its pipe")
            self.buf += chunk
        msg, self.buf = self.buf.split(b"\0", 1)
        return json.loads(msg)

    def send(self, method, params=None, timeout=60):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if self.session:
            msg["sessionId"] = self.session
        os.write(self.to_chrome, json.dumps(msg).encode() + b"\0")
        while True:
            reply = self._read(timeout)
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise RuntimeError("%s: %s" % (method, reply["error"]))
                return reply.get("result", {})
            if "method" in reply:
                self.events.append(reply)

    def messages(self):
        out = []
        for e in self.events:
            m, p = e["method"], e.get("params", {})
            if m in ("Runtime.consoleAPICalled", "Runtime.exceptionThrown"):
                out.append(m + ": " + json.dumps(p)[:200])
            elif m == "Log.entryAdded" and p.get("entry", {}).get("level") in ("error", "warning"):
                out.append("log: " + p["entry"].get("text", ""))
        return out

    def eval(self, expression, timeout=60):
        r = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                           "awaitPromise": True}, timeout)
        if "exceptionDetails" in r:
            raise RuntimeError("%s: %s" % (expression[:80], r["exceptionDetails"]))
        return r.get("result", {}).get("value")

    def open(self, url):
        self.events = []
        self.send("Page.navigate", {"url": url})
        return self.eval("""new Promise((resolve) => {
            const t0 = Date.now();
            (function wait() {
                const r = document.documentElement;
                if (r && (r.getAttribute('data-ready') === '1' || r.hasAttribute('data-error'))) resolve(r.getAttribute('data-error') || 'ready');
                else if (Date.now() - t0 > 30000) resolve('timeout');
                else setTimeout(wait, 20);
            })();
        })""")

    def key(self, key, code, vk, text=None):
        params = {"type": "keyDown", "key": key, "code": code, "windowsVirtualKeyCode": vk}
        if text is not None:
            params["text"] = text
        self.send("Input.dispatchKeyEvent", params)
        up = dict(params, type="keyUp")
        up.pop("text", None)
        self.send("Input.dispatchKeyEvent", up)

    def wait_outcome(self, want):
        return self.eval("""new Promise((resolve) => {
            const t0 = Date.now();
            (function wait() {
                const v = document.documentElement.getAttribute('data-outcome');
                if (v === %s || Date.now() - t0 > 10000) resolve(v); else setTimeout(wait, 10);
            })();
        })""" % json.dumps(want))

    def close(self):
        try:
            self.send("Browser.close", timeout=5)
        except Exception:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        shutil.rmtree(self.profile, ignore_errors=True)


STATE = """(() => {
  const a = document.activeElement, r = document.documentElement, $ = (id) => document.getElementById(id);
  const style = a ? getComputedStyle(a) : null;
  return {
    outcome: r.getAttribute('data-outcome'), summary: $('summary').textContent, range: $('range').textContent,
    heading: (document.querySelector('#panels h2') || {}).textContent || '',
    facts: (document.querySelector('#panels .facts') || {}).textContent || '',
    hash: location.hash, switchMs: Number(r.getAttribute('data-switch-ms') || -1),
    renderMs: Number(r.getAttribute('data-render-ms') || -1),
    active: a ? { tag: a.tagName, type: a.type || '', picker: !!a.closest('#outcomes'), outcome: a.getAttribute('data-outcome'),
      checked: !!a.checked, outline: style.outlineStyle + ' ' + style.outlineWidth } : null,
  };
})()"""

b = Chromium()
try:
    url = "file://" + os.path.join(OUT, "runs-outcomes.html")
    check(b.open(url) == "ready", "the --runs page loads in a driven Chromium")
    # Tab from the top of the page until the focus is in the picker.
    tabs, s = 0, None
    for tabs in range(1, 41):
        b.key("Tab", "Tab", 9)
        s = b.eval(STATE)
        if s["active"] and s["active"]["picker"]:
            break
    a = s["active"] if s else None
    check(a and a["picker"] and a["type"] == "radio" and a["outcome"] == "1" and a["checked"],
          "Tab reaches the picker (%d presses), on the drawn outcome's radio" % tabs, a)
    check(a and a["outline"].startswith("solid") and a["outline"] != "solid 0px",
          "the focused choice shows a focus outline (%s)" % (a and a["outline"]), a)
    b.key("ArrowDown", "ArrowDown", 40)
    got = b.wait_outcome("2")
    s = b.eval(STATE)
    check(got == "2" and ("seed %s: outcome 2 of %d" % (SEED2, N)) in s["summary"]
          and ("seed %s" % SEED2) in s["facts"] and ("peak %s threads" % PEAK2) in s["facts"],
          "the down arrow draws outcome 2: %s | %s" % (s["summary"], s["facts"]), s)
    check(s["active"] and s["active"]["picker"] and s["active"]["outcome"] == "2",
          "the focus stays on the picker, on outcome 2", s["active"])
    check(s["hash"] == "#outcome=2", "the address says #outcome=2", s["hash"])
    whole = s["range"]
    b.key("+", "Equal", 187, "+")
    zoomed = b.eval(STATE)["range"]
    check(zoomed != whole and "whole" not in zoomed, "+ on the picker zooms in: " + zoomed, zoomed)
    b.key("ArrowDown", "ArrowDown", 40)
    got = b.wait_outcome("3" if N >= 3 else "1")
    s = b.eval(STATE)
    check(s["range"] == zoomed, "the next pick (outcome %s) keeps the window: %s" % (got, s["range"]), s["range"])
    b.key("ArrowUp", "ArrowUp", 38)
    b.wait_outcome("2")
    b.key("0", "Digit0", 48, "0")
    s = b.eval(STATE)
    check(s["outcome"] == "2" and "whole" in s["range"], "back on outcome 2, the whole run", s)
    check(not b.messages(), "no console message while picking", b.messages())
    shot = b.send("Page.captureScreenshot", {"format": "png"})
    with open(os.path.join(OUT, "runs-outcomes.png"), "wb") as f:
        f.write(base64.b64decode(shot["data"]))
    # The 100,000-item page: load and draw, then switch, each within 2 s.
    big = "file://" + os.path.join(OUT, "bench-100k-outcomes.html")
    worst_load = worst_switch = 0
    for _ in range(3):
        state = b.open(big)
        s = b.eval(STATE)
        worst_load = max(worst_load, s["renderMs"] if state == "ready" else 99999)
        picked = b.eval("""(() => {
            const r = document.querySelector('#outcomes input[type="radio"]:not(:checked)');
            r.click();
            return r.getAttribute('data-outcome');
        })()""")
        got = b.wait_outcome(picked)
        s = b.eval(STATE)
        worst_switch = max(worst_switch, s["switchMs"] if got == picked else 99999)
    check(worst_load <= 2000, "the 100,000-item --runs page loads and draws in at most %d ms (3 loads)" % worst_load)
    check(worst_switch <= 2000, "and draws another outcome in at most %d ms" % worst_switch)
    check(not b.messages(), "no console message on the 100,000-item page", b.messages())
finally:
    b.close()
sys.exit(1 if failures else 0)
EOF
then
    fail "the outcome picker's keyboard checks (above)"
fi
fi
if [ -s "$OUT/runs-outcomes.png" ]; then
    pass "screenshot: target/browser/runs-outcomes.png"
else
    fail "no screenshot target/browser/runs-outcomes.png"
fi

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
