#!/usr/bin/env bash
# The playground (web/playground, the simulator in WebAssembly) in a real
# browser: headless Chromium opens the built page from the disk (file://)
# and through `poolsim serve`, and this types into it with real key events
# (the DevTools protocol over a pipe) and checks what it shows. Not part of
# `cargo test` (it needs Chromium); scripts/browser-test.sh calls it.
#
#   scripts/playground-test.sh            # builds the page and poolsim, then checks
#   PLAYGROUND_SKIP_BUILD=1 POOLSIM=target/debug/poolsim scripts/playground-test.sh
#
# It installs nothing: it needs `chromium` and `python3` on the PATH. It
# writes to target/browser/: the screenshots playground.png,
# playground-min-threads-10.png, playground-two-policies.png,
# playground-distribution.png and playground-error.png (look at them),
# playground.log (every step and Chromium's messages) and
# playground-timings.json (the keystroke-to-screen times).
#
# Checks:
#   1. The page loads with no console message and no error marker; the DOM
#      holds the presets (one per scenarios/seed-*.toml), seed 001's chart,
#      its summary (`poolsim run`'s lines), explanation and distribution.
#   2. A preset loads (seed 000: 100 items), and back.
#   3. Typing re-renders: count = 10 -> 12 gives a chart of 12 items; at
#      150,000 items the 50 seeds' distribution (over 2 s) waits for its
#      button, which Enter presses.
#   4. An error shows the command line's message with its line and column,
#      the line marked in the gutter and the editor; fixing it runs again.
#   5. Seed 001's acceptance: with `min_threads = 4` written in [pool],
#      typing 1 then 0 over the 4 (-> 10) removes the late starts (an item
#      started 500 ms or more after it was queued, counted from the chart's
#      own data) within 100 ms of the last keystroke, measured in the page
#      with performance.now() from the key event to the frame that shows
#      the run: the median of 7 tries, each try listed.
#   6. Policy B (net6 beside seed 000's net5) adds a second panel, summary
#      and distribution; the seed slider moves by the keyboard and the
#      run's seed follows.
#   7. Every control is reachable with Tab, in the page's order, and shows
#      a focus outline.
#   8. An --html report opened through the file button is drawn.
#   9. Through `poolsim serve`: the same page loads over HTTP, cleanly, and
#      a keystroke re-renders.
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$PWD
OUT=$ROOT/target/browser
mkdir -p "$OUT"

for tool in chromium python3; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        echo "playground-test: $tool is not installed" >&2
        exit 1
    fi
done

if [ -z "${PLAYGROUND_SKIP_BUILD:-}" ]; then
    scripts/build-playground.sh
fi
if [ -z "${POOLSIM:-}" ]; then
    cargo build --quiet --bin poolsim
    POOLSIM=$ROOT/target/debug/poolsim
fi
"$POOLSIM" run scenarios/seed-000-task-run.toml --items 0 --html "$OUT/playground-dropped.html" >/dev/null

python3 - "$ROOT" "$OUT" "$POOLSIM" <<'EOF'
"""Drives headless Chromium over the DevTools protocol (--remote-debugging-pipe:
JSON messages ending in NUL on fds 3 and 4) through the playground's checks."""
import base64
import json
import os
import re
import select
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT, OUT, POOLSIM = sys.argv[1], sys.argv[2], sys.argv[3]
PAGE = os.path.join(ROOT, "target", "playground", "index.html")
WIDTH, HEIGHT = 1400, 1500
TRIES = 7
BUDGET_MS = 100
LOG = open(os.path.join(OUT, "playground.log"), "w")
failures = 0
RESULTS = {}


def log(text):
    LOG.write(text + "\n")
    LOG.flush()


def ok(text):
    print("  ok    " + text)
    log("ok    " + text)


def fail(text):
    global failures
    failures += 1
    print("  FAIL  " + text, file=sys.stderr)
    log("FAIL  " + text)


def check(cond, text, detail=""):
    if cond:
        ok(text)
    else:
        fail(text + (": " + detail if detail else ""))
    return cond


class Chromium:
    """One headless Chromium and one page, driven over the DevTools pipe."""

    def __init__(self):
        self.profile = tempfile.mkdtemp(prefix="poolsim-chromium-")
        to_chrome_r, self.to_chrome = os.pipe()
        self.from_chrome, from_chrome_w = os.pipe()

        def fds():
            os.dup2(to_chrome_r, 3)
            os.dup2(from_chrome_w, 4)

        self.stderr = open(os.path.join(OUT, "playground-chromium.log"), "w")
        self.proc = subprocess.Popen(
            [
                "chromium", "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                "--remote-debugging-pipe", "--no-first-run", "--no-default-browser-check",
                "--user-data-dir=" + self.profile, "--window-size=%d,%d" % (WIDTH, HEIGHT),
                "about:blank",
            ],
            preexec_fn=fds, close_fds=False, stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=self.stderr,
        )
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self.buf = b""
        self.next_id = 0
        self.events = []
        self.session = None
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Runtime", "Log", "Page"):
            self.send(domain + ".enable")
        self.send("Emulation.setDeviceMetricsOverride",
                  {"width": WIDTH, "height": HEIGHT, "deviceScaleFactor": 1, "mobile": False})

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
                self._note(reply)

    def _note(self, event):
        m, p = event["method"], event.get("params", {})
        if m == "Runtime.consoleAPICalled":
            log("console.%s: %s" % (p.get("type"), " ".join(str(a.get("value", a.get("description"))) for a in p.get("args", []))))
        elif m == "Runtime.exceptionThrown":
            log("exception: %s" % p.get("exceptionDetails", {}).get("exception", {}).get("description"))
        elif m == "Log.entryAdded":
            e = p.get("entry", {})
            log("log %s: %s %s" % (e.get("level"), e.get("text"), e.get("url", "")))

    def messages(self):
        """Console calls, exceptions and error or warning log entries so far."""
        out = []
        for e in self.events:
            m, p = e["method"], e.get("params", {})
            if m in ("Runtime.consoleAPICalled", "Runtime.exceptionThrown"):
                out.append(m)
            elif m == "Log.entryAdded" and p.get("entry", {}).get("level") in ("error", "warning"):
                out.append("log: " + p["entry"].get("text", ""))
        return out

    def eval(self, expression, timeout=60):
        r = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                           "awaitPromise": True}, timeout)
        if "exceptionDetails" in r:
            raise RuntimeError("%s: %s" % (expression[:80], r["exceptionDetails"].get("exception", {}).get("description")))
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

    def key(self, key, text=None, code=None, vk=None):
        params = {"type": "keyDown", "key": key}
        if text is not None:
            params["text"] = text
        if code:
            params["code"] = code
        if vk:
            params["windowsVirtualKeyCode"] = vk
        self.send("Input.dispatchKeyEvent", params)
        up = dict(params, type="keyUp")
        up.pop("text", None)
        self.send("Input.dispatchKeyEvent", up)

    def type(self, text):
        for ch in text:
            if ch == "\n":
                self.key("Enter", "\r", "Enter", 13)
            elif ch.isdigit():
                self.key(ch, ch, "Digit" + ch, ord(ch))
            else:
                self.key(ch, ch)

    def backspace(self):
        self.key("Backspace", None, "Backspace", 8)

    def wait_painted(self, after, timeout_ms=15000):
        """The record of the first update past `after` once its frame is drawn."""
        return self.eval("""new Promise((resolve) => {
            const root = document.documentElement, want = %d;
            const done = () => Number(root.getAttribute('data-painted') || 0) >= want;
            if (done()) return resolve(window.poolsimPlayground.last);
            const mo = new MutationObserver(() => {
                if (done()) { mo.disconnect(); resolve(window.poolsimPlayground.last); }
            });
            mo.observe(root, { attributes: true });
            setTimeout(() => { mo.disconnect(); resolve(null); }, %d);
        })""" % (after + 1, timeout_ms))

    def settle(self, timeout_ms=15000):
        """Waits until no update is pending and the last one is drawn."""
        return self.eval("""new Promise((resolve) => {
            const root = document.documentElement, t0 = Date.now();
            (function wait() {
                const idle = !root.hasAttribute('data-pending') &&
                    root.getAttribute('data-painted') === root.getAttribute('data-updates');
                if (idle) resolve(window.poolsimPlayground.last);
                else if (Date.now() - t0 > %d) resolve(null);
                else setTimeout(wait, 10);
            })();
        })""" % timeout_ms)

    def painted(self):
        return int(self.eval("Number(document.documentElement.getAttribute('data-painted') || 0)"))

    def wait_attr(self, name, value, timeout_ms=15000):
        return self.eval("""new Promise((resolve) => {
            const t0 = Date.now();
            (function wait() {
                const v = document.documentElement.getAttribute(%s);
                if (v === %s) resolve(v);
                else if (Date.now() - t0 > %d) resolve(v);
                else setTimeout(wait, 20);
            })();
        })""" % (json.dumps(name), json.dumps(value), timeout_ms))

    def caret(self, js_offset):
        """Focuses the editor with the caret (or a selection) at offsets the
        expression gives ([start, end])."""
        self.eval("(() => { const e = document.getElementById('editor'); e.focus(); const [a, b] = %s; e.setSelectionRange(a, b); })()" % js_offset)

    def shot(self, name, full=False, element=None):
        params = {"format": "png"}
        if element:
            r = self.eval("(() => { const r = document.querySelector(%s).getBoundingClientRect(); "
                          "return [r.left + scrollX, r.top + scrollY, r.width, r.height]; })()" % json.dumps(element))
            params.update(captureBeyondViewport=True,
                          clip={"x": r[0], "y": r[1], "width": r[2], "height": r[3], "scale": 1})
        elif full:
            h = self.eval("Math.ceil(document.documentElement.scrollHeight)")
            params.update(captureBeyondViewport=True,
                          clip={"x": 0, "y": 0, "width": WIDTH, "height": h, "scale": 1})
        data = self.send("Page.captureScreenshot", params)["data"]
        path = os.path.join(OUT, name)
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))
        return path

    def close(self):
        try:
            self.send("Browser.close", timeout=10)
        except Exception:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        shutil.rmtree(self.profile, ignore_errors=True)


# Late starts counted from the chart's own data (the report JSON the
# renderer drew): per started item, started - queued >= 500 ms.
LATE_FROM_DATA = """(() => {
    const D = window.poolsimPlayground.report;
    let late = 0, items = 0;
    for (const p of D.panels) {
        const t = p.item_times;
        for (let i = 0; i < t.length; i += 5) { items++; if (t[i + 2] >= 500e6) late++; }
    }
    return [late, items];
})()"""
OFFSET_OF = "document.getElementById('editor').value.indexOf(%s)"


def clean(b, name):
    msgs = b.messages()
    err = b.eval("document.documentElement.getAttribute('data-error')")
    return check(not msgs and not err, name + ": no console message or error", "; ".join(msgs[:3]) + (err or ""))


def page_checks(b, where):
    state = b.open(where)
    check(state == "ready", "the playground is ready (" + where.split(":")[0] + ")", str(state))
    b.wait_attr("data-spread-runs", "50")
    clean(b, "load")
    return state == "ready"


def main():
    b = Chromium()
    try:
        run_checks(b)
    finally:
        b.close()
    serve_checks()


def run_checks(b):
    url = "file://" + PAGE
    t0 = time.time()
    if not page_checks(b, url):
        return
    log("ready after %.0f ms (wall clock, navigation to ready); seed 001's distribution over 50 seeds took %s ms" % (
        (time.time() - t0) * 1000, b.eval("document.documentElement.getAttribute('data-spread-ms')")))
    # 1. The DOM holds the items.
    presets = len([f for f in os.listdir(os.path.join(ROOT, "scenarios")) if f.startswith("seed-") and f.endswith(".toml")])
    dom = b.eval("""(() => ({
        presets: document.querySelectorAll('#preset option').length,
        preset: document.getElementById('preset').value,
        panels: document.querySelectorAll('#panels section.panel canvas').length,
        items: window.poolsimPlayground.report.panels[0].items,
        summary: document.querySelector('#runs-out pre.summary-text').textContent,
        explanation: document.querySelector('#explain-out pre.explain').textContent,
        late: document.documentElement.getAttribute('data-late-starts'),
        spreads: document.querySelectorAll('#spread-out canvas').length,
        itemRows: document.querySelectorAll('#tables tr[data-item]').length,
        drawn: document.getElementById('summary').textContent,
    }))()""")
    check(dom["presets"] == presets, "the presets are the %d seeds' scenarios" % presets, str(dom["presets"]))
    check(dom["preset"] == "scenarios/seed-001-burst.toml" and dom["panels"] == 1 and dom["items"] == 10 and dom["itemRows"] == 10,
          "seed 001 opens: one chart of 10 items (10 table rows)", json.dumps(dom)[:300])
    check("makespan      8.00 s" in dom["summary"] and "STARVATION" in dom["summary"],
          "its summary is poolsim run's: makespan 8.00 s, the starvation verdict", dom["summary"][:200])
    check("Starvation: goal 4 -> 5, thread 4 created" in dom["explanation"],
          "its explanation is poolsim explain's", dom["explanation"][:200])
    check(dom["late"] == "6" and b.eval(LATE_FROM_DATA) == [6, 10],
          "6 late starts (items 4 to 9), from the response and from the chart's data", str(dom["late"]))
    check(dom["spreads"] == 1, "the distribution over 50 seeds is drawn")
    b.eval("window.scrollTo(0, 0)")
    ok("screenshot: target/browser/" + os.path.basename(b.shot("playground.png")))

    # 2. A preset loads.
    n = b.painted()
    b.eval("(() => { const s = document.getElementById('preset'); s.value = 'scenarios/seed-000-task-run.toml'; s.dispatchEvent(new Event('change')); })()")
    b.wait_painted(n)
    items = b.eval("window.poolsimPlayground.report.panels[0].items")
    title = b.eval("document.getElementById('editor-file').textContent")
    check(items == 100 and title == "scenarios/seed-000-task-run.toml", "the seed 000 preset loads: 100 items", "%s %s" % (items, title))
    n = b.painted()
    b.eval("(() => { const s = document.getElementById('preset'); s.value = 'scenarios/seed-001-burst.toml'; s.dispatchEvent(new Event('change')); })()")
    b.wait_painted(n)

    # 3. Typing re-renders: count = 10 -> 12.
    end = "%s + 'count = 10'.length" % (OFFSET_OF % "'count = 10'")
    b.caret("[%s, %s]" % (end, end))
    n = b.painted()
    b.backspace()
    b.type("2")
    rec = b.settle()
    items = b.eval("window.poolsimPlayground.report.panels[0].items")
    drawn = b.eval("document.getElementById('summary').textContent")
    check(items == 12 and rec and rec["ok"] and rec["update"] > n and "12 items" in drawn,
          "typing count = 12 re-renders the chart: 12 items", "%s %s" % (items, drawn))
    RESULTS["late12"] = b.eval("document.documentElement.getAttribute('data-late-starts')")
    b.backspace()
    b.type("0")
    b.settle()

    # 3b. A large scenario keeps the page usable: a distribution whose runs
    # would take more than 2 s waits for its button.
    b.caret("[%s, %s]" % (end + " - 2", end))
    b.type("150000")
    rec = b.settle(60000)
    asks = b.eval("document.documentElement.getAttribute('data-spread-asks')")
    button = b.eval("!!document.getElementById('spread-run')")
    events = b.eval("window.poolsimPlayground.runs[0].events")
    if rec and events * 50 / 2000 > 2000:
        check(button and asks, "150,000 items (%d events, run in %.0f ms): the 50 seeds wait for a button (%s)" % (events, rec["simulateMs"], asks))
        count = b.eval("document.documentElement.getAttribute('data-spread-count')")
        b.eval("document.getElementById('spread-run').focus()")
        b.key("Enter", "\r", "Enter", 13)
        got = b.eval("""new Promise((resolve) => {
            const t0 = Date.now(), root = document.documentElement;
            (function wait() {
                if (root.getAttribute('data-spread-count') !== %s) resolve(true);
                else if (Date.now() - t0 > 120000) resolve(false);
                else setTimeout(wait, 50);
            })();
        })""" % json.dumps(count), timeout=150)
        check(got and b.eval("document.querySelectorAll('#spread-out canvas').length") == 1,
              "Enter on it runs them: the distribution is drawn in %s ms" % b.eval("document.documentElement.getAttribute('data-spread-ms')"))
    else:
        check(rec is not None and not button, "150,000 items (%s events): the distribution follows on its own" % events)
    b.caret("[%s, %s]" % (OFFSET_OF % "'count = 150000'" + " + 8", OFFSET_OF % "'count = 150000'" + " + 14"))
    b.type("10")
    b.settle()
    check(b.eval("window.poolsimPlayground.report.panels[0].items") == 10, "and back to 10 items")

    # 4. An error, as the command line gives it, its line marked.
    end = "%s + 'cores = 4'.length" % (OFFSET_OF % "'cores = 4'")
    b.caret("[%s, %s]" % (end, end))
    b.backspace()
    b.type("0")
    b.settle()
    text = b.eval("document.getElementById('editor').value")
    line = text.split("\n").index("cores = 0") + 1
    tmp = os.path.join(OUT, "playground-bad.toml")
    with open(tmp, "w") as f:
        f.write(text)
    cli = subprocess.run([POOLSIM, "run", tmp], cwd=ROOT, capture_output=True, text=True)
    expected = cli.stderr.strip().replace(tmp, "scenarios/seed-001-burst.toml")
    shown = b.eval("""(() => ({
        state: document.documentElement.getAttribute('data-state'),
        text: (document.getElementById('problem-text') || {}).textContent,
        gutter: [...document.querySelectorAll('#gutter .bad')].map((e) => e.getAttribute('data-line')),
        marks: [...document.querySelectorAll('#marks .line')].map((e) => e.getAttribute('data-line')),
        go: [...document.querySelectorAll('#problems button')].map((e) => e.textContent),
    }))()""")
    check(shown["state"] == "error" and shown["text"] == expected and cli.returncode == 2,
          "cores = 0 shows the command line's message: " + (shown["text"] or "").split("\n")[0],
          "page %r, poolsim run %r" % (shown["text"], expected))
    check(shown["gutter"] == [str(line)] and shown["marks"] == [str(line)] and shown["go"] == ["Go to line %d, column 9" % line],
          "line %d is marked in the gutter and the editor, with a button to it" % line, json.dumps(shown))
    ok("screenshot: target/browser/" + os.path.basename(b.shot("playground-error.png")))
    b.backspace()
    b.type("4")
    b.settle()
    check(b.eval("document.documentElement.getAttribute('data-state')") == "ok" and
          b.eval("document.querySelectorAll('#marks .line').length") == 0,
          "fixing it runs again and clears the marks")

    # 5. Seed 001's acceptance: min_threads 4 -> 10, keystroke to screen.
    at = "%s + '[pool]\\n'.length" % (OFFSET_OF % "'[pool]\\n'")
    b.caret("[%s, %s]" % (at, at))
    b.type("min_threads = 4\n")
    b.settle()
    check(b.eval("document.getElementById('editor').value").count("[pool]\nmin_threads = 4\n") == 1 and
          b.eval("document.documentElement.getAttribute('data-late-starts')") == "6",
          "min_threads = 4 written in [pool]: the same run, 6 late starts")
    four = "(() => { const v = document.getElementById('editor').value, i = v.indexOf('min_threads = ') + 'min_threads = '.length; return [i, v.indexOf('\\n', i)]; })()"
    tries = []
    for k in range(TRIES):
        b.caret(four)
        n = b.painted()
        b.type("1")
        b.wait_painted(n)
        b.eval("new Promise((r) => setTimeout(r, 150))")
        n = b.painted()
        b.type("0")
        rec = b.wait_painted(n)
        # The update that took the 0 may come after one that took the 1 alone.
        while rec and rec.get("lateStarts") != 0 and rec["update"] < n + 3:
            rec = b.wait_painted(rec["update"])
        late = b.eval(LATE_FROM_DATA)
        value = b.eval("document.getElementById('editor').value.match(/min_threads = (\\d+)/)[1]")
        if not (rec and rec["lateStarts"] == 0 and late[0] == 0 and value == "10" and rec["keyToPaintMs"] is not None):
            fail("try %d: min_threads = %s, record %s, late from the chart's data %s" % (k + 1, value, rec, late))
            break
        tries.append(rec)
        log("try %d: %.1f ms from the 0 key to the frame (simulated %.1f ms, drawn %.1f ms)" % (
            k + 1, rec["keyToPaintMs"], rec["simulateMs"], rec["drawMs"]))
        if k == TRIES - 1:
            b.eval("window.scrollTo(0, 0)")
            ok("screenshot: target/browser/" + os.path.basename(b.shot("playground-min-threads-10.png")))
        b.caret(four)
        n = b.painted()
        b.type("4")
        rec = b.wait_painted(n)
        b.eval("new Promise((r) => setTimeout(r, 150))")
        if b.eval("document.documentElement.getAttribute('data-late-starts')") != "6":
            fail("try %d: back to min_threads = 4 the late starts are not 6" % (k + 1))
            break
    if len(tries) == TRIES:
        times = [r["keyToPaintMs"] for r in tries]
        median = statistics.median(times)
        with open(os.path.join(OUT, "playground-timings.json"), "w") as f:
            json.dump({"budget_ms": BUDGET_MS, "median_ms": median, "tries": tries}, f, indent=1)
        check(median <= BUDGET_MS,
              "seed 001, min_threads 4 -> 10: no late start on screen %.0f ms after the keystroke (median of %d; each: %s ms; simulate %s ms, draw %s ms)" % (
                  median, TRIES, ", ".join("%.0f" % t for t in times),
                  "/".join("%.0f" % r["simulateMs"] for r in tries), "/".join("%.0f" % r["drawMs"] for r in tries)),
              "over the %d ms budget" % BUDGET_MS)
    # Back to the file as written.
    b.eval("(() => { const s = document.getElementById('preset'); s.dispatchEvent(new Event('change')); })()")
    b.wait_attr("data-late-starts", "6")

    # 6. Two policies (seed 000: net5, the classic pool, and net6, whose
    # cooperative blocking answers its blocked waits); the seed slider by the
    # keyboard.
    b.eval("(() => { const s = document.getElementById('preset'); s.value = 'scenarios/seed-000-task-run.toml'; s.dispatchEvent(new Event('change')); })()")
    b.settle()
    b.eval("(() => { const s = document.getElementById('policy-b'); s.value = 'net6'; s.dispatchEvent(new Event('change')); })()")
    b.settle()
    b.wait_attr("data-spread-runs", "50")
    b.eval("new Promise((r) => setTimeout(r, 300))")
    log("seed 000 under net5 and net6: simulated %.1f ms, drawn %.1f ms; the distribution over 50 seeds took %s ms" % (
        b.eval("window.poolsimPlayground.last.simulateMs"), b.eval("window.poolsimPlayground.last.drawMs"),
        b.eval("document.documentElement.getAttribute('data-spread-ms')")))
    two = b.eval("""(() => ({
        panels: document.querySelectorAll('#panels section.panel').length,
        names: [...document.querySelectorAll('#panels section.panel h2')].map((e) => e.textContent),
        cards: [...document.querySelectorAll('#runs-out article')].map((e) => e.getAttribute('data-policy')),
        spreads: document.querySelectorAll('#spread-out canvas').length,
    }))()""")
    check(two["panels"] == 2 and two["names"] == ["net5", "net6"] and two["cards"] == ["net5", "net6"] and two["spreads"] == 2,
          "policy B = net6: two charts on one axis, two summaries, two distributions", json.dumps(two))
    b.eval("window.scrollTo(0, 0)")
    ok("screenshot: target/browser/" + os.path.basename(b.shot("playground-two-policies.png", full=True)))
    ok("screenshot: target/browser/" + os.path.basename(b.shot("playground-distribution.png", element="#distribution")))
    first = b.eval("window.poolsimPlayground.runs[0].seed")
    b.eval("document.getElementById('seed').focus()")
    n = b.painted()
    b.key("ArrowRight", None, "ArrowRight", 39)
    b.wait_painted(n)
    b.key("ArrowRight", None, "ArrowRight", 39)
    b.wait_painted(n + 1)
    seed = b.eval("window.poolsimPlayground.runs[0].seed")
    label = b.eval("document.getElementById('seed-label').textContent")
    check(seed == first + 2 and label.startswith(str(first + 2)),
          "the seed slider moves with the arrow keys: seed %s -> %s (%s)" % (first, seed, label))

    # 7. Every control by the keyboard, with a visible focus.
    b.eval("(() => { document.activeElement && document.activeElement.blur(); window.scrollTo(0, 0); })()")
    seen = []
    for _ in range(60):
        b.key("Tab", None, "Tab", 9)
        f = b.eval("""(() => {
            const e = document.activeElement;
            const ring = e.tagName === 'TEXTAREA' ? e.closest('.editor') : e;
            const cs = getComputedStyle(ring);
            return [e.id || e.tagName.toLowerCase() + (e.className ? '.' + e.className : ''),
                    cs.outlineStyle !== 'none' && parseFloat(cs.outlineWidth) >= 2];
        })()""")
        seen.append(f)
    names = [s[0] for s in seen]
    # Tab goes on from the last focused control, wraps through the page's
    # start (the body), then goes round in the page's order: one round from
    # there.
    if "body" in names:
        names = names[names.index("body") + 1:]
    want = ["preset", "policy-a", "policy-b", "seed", "runs", "open-file", "editor", "zoom-in", "zoom-out",
            "pan-left", "pan-right", "reset", "canvas", "pre.explain"]
    missing = [w for w in want if w not in names]
    unringed = sorted({s[0] for s in seen if not s[1] and s[0] != "body"})
    firsts = [names.index(w) for w in want if w in names]
    check(not missing and firsts == sorted(firsts), "Tab reaches every control, in the page's order: " + ", ".join(want),
          "missing " + ", ".join(missing) + "; order: " + ", ".join(names))
    check(not unringed, "each shows a focus outline (3 px)", "none on " + ", ".join(unringed))

    # 8. An --html report opened through the file button.
    obj = b.send("Runtime.evaluate", {"expression": "document.getElementById('file-input')"})["result"]["objectId"]
    b.send("DOM.enable")
    b.send("DOM.setFileInputFiles", {"files": [os.path.join(OUT, "playground-dropped.html")], "objectId": obj})
    got = b.wait_attr("data-report", "playground-dropped.html")
    items = b.eval("document.getElementById('summary').textContent")
    check(got == "playground-dropped.html" and "Drawn: net5: 100 items" in items,
          "an --html report opened on the page is drawn: " + items.split(".")[0], str(got))
    clean(b, "after every step")


def serve_checks():
    server = subprocess.Popen([POOLSIM, "serve", "--port", "0"], cwd=ROOT, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    try:
        line = server.stdout.readline()
        m = re.search(r"http://127\.0\.0\.1:\d+/", line)
        if not check(m is not None, "poolsim serve says where: " + line.strip(), server.stderr.read() if server.poll() is not None else ""):
            return
        b = Chromium()
        try:
            if page_checks(b, m.group(0)):
                end = "%s + 'count = 10'.length" % (OFFSET_OF % "'count = 10'")
                b.caret("[%s, %s]" % (end, end))
                n = b.painted()
                b.backspace()
                b.type("2")
                rec = b.settle()
                late = b.eval("document.documentElement.getAttribute('data-late-starts')")
                check(rec and rec["update"] > n and b.eval("window.poolsimPlayground.report.panels[0].items") == 12 and
                      late == RESULTS.get("late12"),
                      "over HTTP too, typing re-renders: 12 items, %s late starts as from the disk" % late)
                clean(b, "served")
        finally:
            b.close()
    finally:
        server.terminate()
        server.wait(timeout=10)


main()
LOG.close()
if failures:
    print("playground-test: %d check(s) failed (target/browser/playground.log)" % failures, file=sys.stderr)
    sys.exit(1)
print("playground-test: every check passed")
EOF
