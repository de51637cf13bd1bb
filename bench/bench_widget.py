"""(e) The tape debugger's responsiveness: in the kernel, in a browser, and as a static page.

The big tape is the gradient of a loop of elementwise steps (seven equations per step with its
pullbacks), as in ``bench_graph``. Median wall time of:

* in the kernel, at 1,000 and 10,000 equations, what one action costs Python (each measure on a
  fresh debugger, at random places of the tape): a step (views and the graph pane's DOT), *next*
  again and again from the middle, a selection; building the debugger (median of three); and
  the characters a step of *next* sends to the view (the traits it changes);
* in headless Chromium (Debian's, under Voila), at 10,000 equations, a click on *next* until the
  phase line and the listing are repainted, until the residuals table is, until the graph pane,
  laid out by Graphviz in WebAssembly, is redrawn, and until the kernel's answer confirmed the
  step. Goal: under 50 ms to repaint;
* the static pages (``dbg.to_html``) of the MLP, the CNN, the 40-step RNN and a 10,000-equation
  loop: size, and load time until the first graph is drawn (opened from disk, no server; goal for
  10,000 equations: under 3 s).
* at scale (issue 30), a 100,000-equation gradient tape (``deep``: 3,334 calls of a ``layer``
  that calls a ``cell`` four times): the debugger's construction in the kernel, whole and by stage
  (goal: under 3 s), and in headless Chromium under Voila the repaint of a step over (the by-call
  button), of a step, of the expansion of the outline's ``layer ×3334`` group and of a call
  opened in the graph's calls view (goals: 50, 50, 200 and 200 ms); and the calls view in the
  kernel: its first use, a step, an open.

The view sends the listing and the residuals without the cursor's classes (it adds them), so a
step inside the listing's window sends neither; the listing is virtualised (only the rows in view
are in the DOM, their heights known from the markup, so scrolling to the current line reads no
layout), the view writes the DOM once per animation frame (a repaint is timed until the end of
the frame that shows the step), the residuals table and the drawing (Graphviz lays out in a Web
Worker) go in frames after the listing's. The view keeps the steps a click may show next (where
*next*, *prev*, step into, over and out go from the step shown), sent ahead by the kernel, with
their drawings laid out meanwhile: a click repaints from them without waiting for the kernel (whose
answer confirms the step), so the repaint does not depend on the round trip.

    python -m bench.bench_widget           # all
    python -m bench.bench_widget scale     # the scale section only
"""
from __future__ import annotations

from bench.common import format_time

import statistics  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import nbformat  # noqa: E402
import numpy as np  # noqa: E402

from tapeviz import debug  # noqa: E402

SIZES = (1_000, 10_000)
SAMPLES = 25
CLICKS = 30
ROOT = Path(__file__).resolve().parents[1]


def loop(x, steps):
    for _ in range(steps):
        x = np.sin(x) * 1.01 + x
    return np.sum(x)


def _median(fn, args) -> float:
    samples = []
    for a in args:
        t0 = time.perf_counter()
        fn(a)
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples)


def _build(n_eqns: int):
    t0 = time.perf_counter()
    dbg = debug(loop, np.ones(3), n_eqns // 7)   # seven equations per step, pullbacks included
    return dbg, time.perf_counter() - t0


def kernel_stages(n_eqns: int) -> dict:
    """Each measure starts from a fresh debugger, so no step finds its rows already drawn."""
    rng = np.random.default_rng(0)
    dbg, t_first = _build(n_eqns)
    spots = [int(i) for i in rng.choice(dbg.n_steps, size=SAMPLES, replace=False)]
    out = {"equations": len(dbg.model.eqns), "steps": dbg.n_steps, "step": _median(dbg.step_to, spots)}
    dbg.step_to(dbg.n_steps // 2)
    out["next (sequential)"] = _median(lambda _: dbg.next(), range(SAMPLES))
    names = [repr(dbg.model.eqns[int(i)].outputs[0]) for i in rng.choice(len(dbg.model.eqns), SAMPLES)]
    out["selection"] = _median(dbg.select, names)
    out["build"] = statistics.median([t_first, _build(n_eqns)[1], _build(n_eqns)[1]])
    traits = ("_frame", "_listing", "_inspector", "_residuals", "_closure", "_dot")
    sent = []                             # the traits a step changes are what it sends
    for _ in range(SAMPLES):
        before = {t: getattr(dbg, t) for t in traits}
        dbg.next()
        sent.append(sum(len(str(getattr(dbg, t))) for t in traits if getattr(dbg, t) != before[t]))
    out["sent per step"] = statistics.median(sent)
    return out


CLICK_JS = """async (clicks) => {
  const root = document.querySelector('.tv-root');
  const phase = root.querySelector('.tv-phase'), pane = root.querySelector('.tv-graph-pane');
  // the view writes the DOM in animation frames: a change is on screen when the frame under way
  // (from its animation callbacks to the task after it) ends, or else the next one; ends[k] is
  // when frame k ended (this loop's callback runs first in each frame, so its task runs first
  // after the frame)
  let measuring = true;
  const ends = [], waiting = [];
  const frames = () => {
    setTimeout(() => {
      ends.push(performance.now());
      for (const wait of waiting.splice(0)) (ends.length > wait.k ? wait.done(ends[wait.k]) : waiting.push(wait));
    });
    if (measuring) requestAnimationFrame(frames);
  };
  requestAnimationFrame(frames);
  const ended = (k) => new Promise((done) => waiting.push({ k, done }));
  const until = (node, step, confirmed) => new Promise((done) => {
    const there = () => node.dataset.step === step && (!confirmed || node.dataset.confirmed === "true");
    if (there()) return done();
    const seen = new MutationObserver(() => { if (there()) { seen.disconnect(); done(); } });
    seen.observe(node, { attributes: true });
  });
  const out = [];
  for (let k = 0; k < clicks; k++) {
    const step = String(Number(phase.dataset.step) + 1);
    const t0 = performance.now();
    root.querySelector('button.tv-next').click();
    await until(phase, step);
    const tm = performance.now();
    const frame = ends.length;                       // the frame that shows the step
    const t1 = await ended(frame);
    const tr = await ended(frame + 1);               // the residuals' frame
    await until(pane, step);
    const t2 = await ended(ends.length);
    await until(phase, step, true);
    out.push([t1 - t0, t2 - t0, tm - t0, performance.now() - t0, tr - t0]);
  }
  measuring = false;
  return out;
}"""


ONE_CLICK_JS = """async () => {
  const root = document.querySelector('.tv-root');
  const t0 = performance.now();
  root.querySelector('button.tv-next').click();
  await new Promise((done) => requestAnimationFrame(() => setTimeout(done)));
  return performance.now() - t0;
}"""


def repaint_cpu(page, clicks: int = 12) -> dict:
    """A click on *next* until repainted, alone (the previous click's work done: 0.7 s apart):
    the wall time and the main thread's CPU time (Chromium's ThreadTime), which the machine's
    load inflates far less than the wall time."""
    cdp = page.context.new_cdp_session(page)
    cdp.send("Performance.enable")

    def thread_time() -> float:
        return next(m["value"] for m in cdp.send("Performance.getMetrics")["metrics"] if m["name"] == "ThreadTime")

    walls, cpus = [], []
    for _ in range(clicks):
        page.wait_for_timeout(700)
        before = thread_time()
        walls.append(page.evaluate(ONE_CLICK_JS) / 1000)
        cpus.append(thread_time() - before)
    return {"alone": statistics.median(walls), "alone cpu": statistics.median(cpus)}


def browser_clicks(n_eqns: int = 10_000) -> dict:
    """Voila serving a notebook whose debugger stands in the middle of a 10,000-equation tape."""
    sys.path.insert(0, str(ROOT / "tests"))
    from tests.support.browser import TOKEN, Server, free_port, jupyter_env, launch

    folder = Path(tempfile.mkdtemp())
    code = ("import numpy as np\nimport tapeviz\nfrom bench.bench_widget import loop\n"
            f"dbg = tapeviz.debug(loop, np.ones(3), {n_eqns // 7})\ndbg.step_to(dbg.n_steps // 2)\ndbg")
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(code)], metadata={
        "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}}), folder / "big.ipynb")
    port = free_port()
    server = Server([sys.executable, "-m", "voila", str(folder / "big.ipynb"), "--no-browser",
                     "--Voila.ip=127.0.0.1", f"--port={port}", f"--token={TOKEN}"], folder,
                    jupyter_env(folder / "home"), port, folder / "voila.log", "/voila/static/voila.js").start()
    pw, browser = launch()
    try:
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        page.goto(server.url("/"), wait_until="domcontentloaded")
        page.locator(".tv-graph-pane[data-step]").wait_for(timeout=180_000)
        page.evaluate(CLICK_JS, 3)                           # warm up: Graphviz compiled, steps ahead
        samples = page.evaluate(CLICK_JS, CLICKS)
        alone = repaint_cpu(page)
    finally:
        browser.close()
        pw.stop()
        server.stop()
    return {"repaint": statistics.median(s[0] for s in samples) / 1000,
            "graph": statistics.median(s[1] for s in samples) / 1000,
            "updated": statistics.median(s[2] for s in samples) / 1000,
            "confirmed": statistics.median(s[3] for s in samples) / 1000,
            "worst repaint": max(s[0] for s in samples) / 1000,
            "repaint quartiles": [q / 1000 for q in statistics.quantiles([s[0] for s in samples], n=4)[::2]],
            "residuals": statistics.median(s[4] for s in samples) / 1000, **alone}


def static_pages() -> dict:
    """Size and load time (first graph drawn) of the static pages of the MLP, the CNN, the 40-step
    RNN and a 10,000-equation loop (issue 30's goal: under 3 s)."""
    sys.path.insert(0, str(ROOT / "tests"))
    from tests.support.browser import launch

    from ad.examples import mlp_example, mlp_loss
    from ad.examples.networks import digits_cnn
    from ad.examples.programs import rnn_example, rnn_loss

    cnn = digits_cnn()
    programs = {"MLP (ad.examples)": (mlp_loss, mlp_example()),
                "CNN (ad.examples.networks, batch 64)": (cnn.loss, (cnn.params, cnn.x[:64], cnn.y[:64])),
                "RNN (ad.examples.programs, 40 steps)": (rnn_loss, rnn_example()),
                "10,000-equation loop (bench.bench_widget.loop)": (loop, (np.ones(3), 10_000 // 7))}
    folder = Path(tempfile.mkdtemp())
    out = {}
    pw, browser = launch()
    try:
        for name, (f, args) in programs.items():
            dbg = debug(f, *args)
            t0 = time.perf_counter()
            path = dbg.to_html(folder / f"{len(out)}.html")
            written = time.perf_counter() - t0
            loads = []
            for _ in range(3):
                page = browser.new_page()
                page.goto(path.as_uri())
                page.locator(".tv-graph-pane[data-step]").wait_for(timeout=60_000)
                loads.append(page.evaluate("performance.now()") / 1000)
                page.close()
            out[name] = {"equations": len(dbg.model.eqns), "bytes": path.stat().st_size, "write": written,
                         "load": statistics.median(loads)}
    finally:
        browser.close()
        pw.stop()
    return out


# -- scale (issue 30): a 100,000-equation gradient tape --------------------------------------------

SCALE_LAYERS = 3_334          # 100,024 equations in the gradient tape, 73,351 steps
SCALE_START = 1_000           # the browser measures start at this layer's first step


def cell(h, w):
    """One call: three forward equations, four in its pullback."""
    return np.tanh(h * w + 0.1)


def layer(h, w):
    """An equation of its own (a step over from it runs the four calls of ``cell`` whole)."""
    h = h * 0.99
    for _ in range(4):
        h = cell(h, w)
    return h


def deep(h, layers, w=0.9):
    """The scale program: ``layers`` calls of ``layer`` (30 gradient equations each), so the
    outline folds them into ``layer ×3334``, each holding ``cell ×4``."""
    for _ in range(layers):
        h = layer(h, w)
    return np.sum(h)


def _stage_targets():
    """(stage, owner, attribute): the functions a debugger's construction runs, each timed."""
    from tapeviz.debugger import graph_pane, listing, model, navigation, widget
    return [("trace and lift (primal_and_grad_tape: one trace)", widget, "primal_and_grad_tape"),
            ("every variable's value (eval_tape)", model, "values_of"),
            ("the graph (tapeviz.to_networkx)", model, "to_networkx"),
            ("the model: rows, steps, indices", widget, "DebugModel"),
            ("the residuals table", model.DebugModel, "residual_table"),
            ("the scope tree (ad.scopes.scope_tree)", navigation, "scope_tree"),
            ("the outline (folded, as JSON)", widget, "outline_part"),
            ("the steps' scopes and frames", navigation.Navigation, "layout"),
            ("the listing's window", listing.Listing, "render"),
            ("the inspector and the residuals pane", widget, "inspector_html"),
            ("the inspector and the residuals pane", widget, "residuals_html"),
            ("the graph pane's DOT", graph_pane.GraphPane, "dot")]


def construction_stages(layers: int = SCALE_LAYERS) -> dict:
    """``tapeviz.debug`` of the scale program, timed whole (wall and CPU) and by stage: each
    stage's own wall time (its callees' stages excluded), the rest being the widget, its traits
    and the first frame."""
    targets = _stage_targets()
    times: dict = {}
    children: list = []

    def timed(fn, stage):
        def run(*args, **kwargs):
            children.append(0.0)
            t0 = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                took = time.perf_counter() - t0
                times[stage] = times.get(stage, 0.0) + took - children.pop()
                if children:
                    children[-1] += took
        return run

    saved = [(owner, name, getattr(owner, name)) for _, owner, name in targets]
    for (stage, owner, name), (_, _, fn) in zip(targets, saved):
        setattr(owner, name, timed(fn, stage))
    try:
        debug(deep, np.ones(3), 10)                          # imports, templates
        runs = []
        for _ in range(3):
            times.clear()
            t0, c0 = time.perf_counter(), time.process_time()
            dbg = debug(deep, np.ones(3), layers)
            wall, cpu = time.perf_counter() - t0, time.process_time() - c0
            runs.append({**times, "rest: the widget, its traits, the first frame": wall - sum(times.values()),
                         "total (wall)": wall, "total (CPU)": cpu})
            equations, steps = len(dbg.model.eqns), dbg.n_steps
            del dbg
    finally:
        for owner, name, fn in saved:
            setattr(owner, name, fn)
    keys = list(runs[0])
    return {"equations": equations, "steps": steps, "stages": {k: statistics.median(r.get(k, 0.0) for r in runs)
                                                               for k in keys}}


SCALE_JS = """async ([what, clicks, gap]) => {
  const root = document.querySelector('.tv-root');
  const phase = root.querySelector('.tv-phase');
  // as CLICK_JS: ends[k] is when animation frame k ended (its callbacks and the task after it)
  let measuring = true;
  const ends = [], waiting = [];
  const frames = () => {
    setTimeout(() => {
      ends.push(performance.now());
      for (const wait of waiting.splice(0)) (ends.length > wait.k ? wait.done(ends[wait.k]) : waiting.push(wait));
    });
    if (measuring) requestAnimationFrame(frames);
  };
  requestAnimationFrame(frames);
  const ended = (k) => new Promise((done) => waiting.push({ k, done }));
  const until = (node, there) => new Promise((done) => {
    if (there()) return done();
    const seen = new MutationObserver(() => { if (there()) { seen.disconnect(); done(); } });
    seen.observe(node, { attributes: true, childList: true, subtree: node !== phase });
  });
  const out = [];
  for (let k = 0; k < clicks; k++) {
    if (gap) await new Promise((done) => setTimeout(done, gap));
    const before = Number(phase.dataset.step);
    let t0;
    if (what === "graph") {
      // the calls view: the first closed call's node opened by a click (the kernel answers, the
      // worker lays the drawing out), closed again untimed from its cluster's title
      const drawing = root.querySelector('.tv-graph-svg');
      const closed = () => root.querySelector('.tv-graph g.node[id^="tvc_f"]');
      await until(drawing, () => closed() !== null);
      const node = closed();
      const k = node.id.slice(5);
      const opened = () => root.querySelector(`.tv-graph g.cluster[id="tvo_cf${k}"]`);
      t0 = performance.now();
      node.dispatchEvent(new MouseEvent("click", { bubbles: true }));
      await until(drawing, () => opened() !== null);
      out.push((await ended(ends.length)) - t0);
      opened().querySelector("text").dispatchEvent(new MouseEvent("click", { bubbles: true }));
      await until(drawing, () => opened() === null && root.querySelector(`.tv-graph g.node[id="tvc_f${k}"]`));
      await ended(ends.length);
      continue;
    }
    if (what === "expand") {
      // a group row of the outline (layer x3334): expanded by a click, collapsed again untimed
      const row = root.querySelector('.tv-ol-row.tv-ol-group[data-path="layer"]');
      const list = row.parentNode, rows = list.children.length;
      t0 = performance.now();
      row.click();
      await until(list, () => list.children.length > rows);
      out.push((await ended(ends.length)) - t0);
      row.click();
      await until(list, () => list.children.length === rows);
      await ended(ends.length);
      continue;
    }
    t0 = performance.now();
    root.querySelector(what === "over" ? 'button.tv-step-over' : 'button.tv-next').click();
    await until(phase, () => Number(phase.dataset.step) !== before);
    const t1 = await ended(ends.length);
    await until(phase, () => phase.dataset.confirmed === "true");
    out.push(t1 - t0);
    await ended(ends.length);            // the frame's after-work (residuals, the graph) under way
  }
  measuring = false;
  return out;
}"""


SCALE_ACTIONS = (("over", 0), ("over", 700), ("next", 0), ("expand", 0), ("graph", 0))


def browser_scale(layers: int = SCALE_LAYERS, actions=SCALE_ACTIONS, clicks: int = CLICKS) -> dict:
    """Voila serving a notebook whose debugger stands at the first step of layer#1000 of the
    scale program: repaints of a step over (the by-call button, painted from the steps sent
    ahead; one click after the other, and 0.7 s apart), of a step (*next*), of the expansion
    of the outline's ``layer ×3334`` group (collapsed again between two) and of a call opened
    in the graph's calls view (closed again between two): ``actions``, ``clicks`` of each."""
    sys.path.insert(0, str(ROOT / "tests"))
    from tests.support.browser import TOKEN, Server, free_port, jupyter_env, launch

    folder = Path(tempfile.mkdtemp())
    code = ("import time\nimport numpy as np\nimport tapeviz\nfrom bench.bench_widget import deep\n"
            f"t0 = time.perf_counter()\ndbg = tapeviz.debug(deep, np.ones(3), {layers})\n"
            "built = time.perf_counter() - t0\n"
            f"dbg.run_to(('layer#{SCALE_START}',))\ndbg")
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(code)], metadata={
        "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}}), folder / "scale.ipynb")
    port = free_port()
    server = Server([sys.executable, "-m", "voila", str(folder / "scale.ipynb"), "--no-browser",
                     "--Voila.ip=127.0.0.1", f"--port={port}", f"--token={TOKEN}"], folder,
                    jupyter_env(folder / "home"), port, folder / "voila.log", "/voila/static/voila.js").start()
    pw, browser = launch()
    out = {}
    try:
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        t0 = time.perf_counter()
        page.goto(server.url("/"), wait_until="domcontentloaded")
        page.locator(".tv-graph-pane[data-step]").wait_for(timeout=300_000)
        out["page shown"] = time.perf_counter() - t0
        page.wait_for_timeout(1000)
        for what, gap in actions:
            if what == "graph":         # on a fresh page: the outline's group is as it opened
                page.goto(server.url("/"), wait_until="domcontentloaded")
                page.locator(".tv-graph-pane[data-step]").wait_for(timeout=300_000)
                page.wait_for_timeout(1000)
                page.locator("button.tv-view-calls").click()      # the calls view, drawn once
                page.locator('.tv-graph-pane[data-view="calls"]').wait_for(timeout=300_000)
            first = page.evaluate(SCALE_JS, [what, 1, gap])[0]   # the first: rows built, steps not yet ahead
            page.evaluate(SCALE_JS, [what, 2, gap])                # warm up
            samples = page.evaluate(SCALE_JS, [what, clicks, gap])
            out[what, gap] = {"first": first / 1000, "median": statistics.median(samples) / 1000,
                              "worst": max(samples) / 1000,
                              "quartiles": [q / 1000 for q in statistics.quantiles(samples, n=4)[::2]]}
    finally:
        browser.close()
        pw.stop()
        server.stop()
    return out


def calls_view_kernel(layers: int = SCALE_LAYERS) -> dict:
    """The graph pane's calls view in the kernel, from the first step of ``layer#1000`` of the
    scale program: its first use (the tables made in one pass, the first drawing), a step
    (the whole refresh, and the pane's DOT alone: the drawing of the open set reused), and an
    open of a call (and its close) with the refresh."""
    dbg = debug(deep, np.ones(3), layers)
    dbg.run_to((f"layer#{SCALE_START}",))
    t0 = time.perf_counter()
    dbg.graph_view = "calls"
    out = {"first use": time.perf_counter() - t0, "DOT": len(dbg._dot)}
    out["step"] = _median(lambda _: dbg.next(), range(SAMPLES))
    out["step dot"] = _median(lambda _: (dbg.model.step_to(dbg.step + 1), dbg.calls.dot()), range(SAMPLES))
    calls = [f"layer#{SCALE_START + 2 + k}" for k in range(SAMPLES)]
    out["open"] = _median(dbg.open_call, calls)
    out["close"] = _median(dbg.close_call, calls)
    return out


def scale_section() -> str:
    stages = construction_stages()
    order = [stage for stage, _, _ in _stage_targets()]
    times = stages["stages"]
    lines = [f"### Tape debugger at scale: {stages['equations']:,} equations ({stages['steps']:,} steps)", "",
             "The gradient of `bench.bench_widget.deep`: 3,334 calls of a `layer` (an equation of its own "
             "and four calls of a `cell`). Goal: the debugger opens in the kernel in under 3 s.", "",
             "| `tapeviz.debug(deep, h, 3334)`, by stage (median of 3) | time |", "| --- | ---: |"]
    for stage in sorted(times, key=lambda k: order.index(k) if k in order else len(order)):
        lines.append(f"| {stage} | {format_time(times[stage])} |")
    calls = calls_view_kernel()
    lines += ["", "The graph pane's calls view in the kernel, from the first step of `layer#1000` (median of "
              f"{SAMPLES}; its DOT: {calls['DOT'] / 1000:.0f} kB):", "", "| action | time |", "| --- | ---: |",
              f"| first use of the view (the tables in one pass, the first drawing) | {format_time(calls['first use'])} |",
              f"| a step (the whole refresh) | {format_time(calls['step'])} |",
              f"| ... the pane's DOT alone (the open set's drawing reused) | {format_time(calls['step dot'])} |",
              f"| a call opened (and drawn) | {format_time(calls['open'])} |",
              f"| ... closed | {format_time(calls['close'])} |"]
    clicks = browser_scale()
    lines += ["", f"Repaints in headless Chromium under Voila (median of {CLICKS}; from the first step of "
              f"`layer#{SCALE_START}`), each until the end of the animation frame that shows it. "
              "Goals: 50, 50, 200 and 200 ms.", "",
              "| action | median | middle half | slowest | the first |", "| --- | ---: | ---: | ---: | ---: |"]
    names = {("over", 0): "a step over (the by-call button; painted from the steps sent ahead), one click after the other",
             ("over", 700): "... 0.7 s apart",
             ("next", 0): "a step (*next*; painted from the steps sent ahead)",
             ("expand", 0): "the outline's `layer ×3334` group expanded (its first 200 calls drawn)",
             ("graph", 0): "a call opened in the graph's calls view (the kernel draws its DOT, the worker lays it out)"}
    for key, name in names.items():
        c = clicks[key]
        lines.append(f"| {name} | {format_time(c['median'])} | {' to '.join(map(format_time, c['quartiles']))} | "
                     f"{format_time(c['worst'])} | {format_time(c['first'])} |")
    lines += ["", f"The page (Voila: the kernel runs the notebook, the view draws) shown in "
              f"{format_time(clicks['page shown'])}."]
    return "\n".join(lines) + "\n"


def run() -> str:
    results = {n: kernel_stages(n) for n in SIZES}
    header = " | ".join(f"{r['equations']:,} eqns ({r['steps']:,} steps)" for r in results.values())
    lines = ["### Tape debugger: one action, in the kernel (median wall time)", "",
             f"| action | {header} |", "| --- | " + " | ".join("---:" for _ in SIZES) + " |"]
    for stage in ("step", "next (sequential)", "selection", "build"):
        lines.append(f"| {stage} | " + " | ".join(format_time(r[stage]) for r in results.values()) + " |")
    lines.append("| sent to the view per step | " + " | ".join(f"{r['sent per step'] / 1000:.0f} kB"
                                                              for r in results.values()) + " |")
    clicks = browser_clicks()
    lines += ["", "### Tape debugger in the browser: a click on *next*, 10,000 equations (Voila, "
              f"headless Chromium, median of {CLICKS})", "", "| until | time |", "| --- | ---: |",
              f"| the view's DOM updated (kernel round trip included, not yet painted) | "
              f"{format_time(clicks['updated'])} |",
              f"| phase line and listing repainted | {format_time(clicks['repaint'])} |",
              f"| (the middle half of the {CLICKS}) | {' to '.join(map(format_time, clicks['repaint quartiles']))} |",
              f"| (the slowest of the {CLICKS}) | {format_time(clicks['worst repaint'])} |",
              f"| the residuals table repainted (the frame after) | {format_time(clicks['residuals'])} |",
              f"| graph pane laid out (WebAssembly) and repainted | {format_time(clicks['graph'])} |",
              f"| the kernel's answer confirmed the step | {format_time(clicks['confirmed'])} |",
              f"| repainted, a click alone (0.7 s after the last) | {format_time(clicks['alone'])} |",
              f"| ... the main thread's CPU time for it | {format_time(clicks['alone cpu'])} |"]
    pages = static_pages()
    lines += ["", "### Static pages (`dbg.to_html`): size and load time until the first graph is drawn", "",
              "| program | equations | page | written in | loads in |", "| --- | ---: | ---: | ---: | ---: |"]
    for name, p in pages.items():
        lines.append(f"| {name} | {p['equations']} | {p['bytes'] / 1e6:.2f} MB | {format_time(p['write'])} | "
                     f"{format_time(p['load'])} |")
    return "\n".join(lines) + "\n\n" + scale_section()


if __name__ == "__main__":
    print(scale_section() if sys.argv[1:] == ["scale"] else run())
