/* The tape debugger's view, written once for every front end: an anywidget module (JupyterLab,
   Notebook 7, Voila, VS Code, Colab, marimo) that also draws static pages.

   The view reads its model's traits (_frame: the cursor, selection and checks; _listing,
   _inspector, _residuals, _closure: HTML that Python rendered and escaped; _dot: the graph pane's
   Graphviz source; _outline: the program's scope tree, drawn by the Outline pane) and sends every
   user action as a message ({action: "next"}, {action: "step_over", reverse: true}, ...). In a
   notebook the model is anywidget's and Python answers by updating the traits; on a static page
   it is a Session built from the tape the page embeds, which answers the same messages,
   deriving the traits Python would send (a step's part and the graph pane's source: PaneSource;
   where a move by call or a breakpoint goes: Navigation). What
   depends on the cursor or the selection (current line, partners, tints, notes) is applied here
   by classes, so one listing or card serves every step. The listing is virtualised (only the
   rows in view are in the DOM; their heights follow from the markup, so scrolling to the current
   line reads no layout), new markup for the residuals keeps the rows that did not change
   (refill), the view writes the DOM once per animation frame, and Graphviz lays out in a Web
   Worker.

   A click need not wait for the kernel: the view keeps the steps a click may show next (the
   step shown, and where step into, over and out go from it: its part says), sent ahead by Python
   ({action: "ahead"}, a bounded cache per context: granularity, selection, checks) with their
   drawings laid out in the worker meanwhile, and repaints a step it has at once from them (a
   *guess*). Every action carries the view's name and a number (seq) that the kernel's frame
   echoes: frames answering an older action of this view are skipped, and the kernel's answer replaces the guess (the same markup:
   nothing moves). Python stays the model. While the view has focus, keys press its buttons
   (KEYS; taken before the notebook's shortcuts see them, only those). Listeners only, never
   inline handlers: the view works under a Content-Security-Policy without 'unsafe-inline'. Tape
   strings reach the DOM as text, or inside Python's escaped HTML. */

const TRAITS = ["_frame", "_listing", "_inspector", "_residuals", "_closure", "_dot", "_legend", "_outline", "_diff"];
const HTML_PARTS = [["_listing", "listing"], ["_inspector", "inspector"], ["_residuals", "residuals"],
  ["_closure", "closure"]];
const PLAY_MS = 600;
const SVG_CACHE = 64;
const AHEAD_CACHE = 64;
const MOVES = ["step_into", "step_over", "step_out"];     // where these go from the step shown is sent ahead
const STEPPING = { first: () => 0, prev: (i) => i - 1, next: (i) => i + 1 };
const ZOOM = 1.25;
const OUTLINE_ROWS = 30;       // entries the outline opens by itself, at most
const OUTLINE_CHUNK = 200;     // calls of a group drawn per "more" click
const STATUS_MARK = { fail: "\u2717", warn: "\u26a0", pass: "\u2713" };
const GUTTER_TITLE = "click to set or clear a breakpoint on this equation";
/* The keyboard, while the debugger has focus (a click in it, or Tab): a key (event.key, a letter
   in lower case) -> [the button it presses, how the titles name it]; Shift goes backwards, as on
   the buttons. A key with Ctrl, Alt or Meta, or typed into a field, is left to the page
   (Jupyter's own shortcuts). */
const KEYS = {
  ArrowLeft: ["prev", "\u2190"], ArrowRight: ["next", "\u2192"], Home: ["first", "Home"], End: ["last", "End"],
  i: ["stepInto", "i"], o: ["stepOver", "o"], u: ["stepOut", "u"], c: ["cont", "c"], b: ["breakpoint", "b"],
  "?": ["keys", "?"],
};
const KEY_LIST = [["\u2190 \u2192", "previous / next step"], ["Home End", "first / last step"],
  ["i o u", "step into / over / out of a call"], ["c", "continue to the next breakpoint"],
  ["Shift+", "the same, backwards"], ["b", "set or clear a breakpoint at the cursor"],
  ["?", "show or hide these keys"]];

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = value;
    else node.setAttribute(key, value);
  }
  node.append(...children);
  return node;
}

/* Text and properties that did not change are not set again (setting them would lay the page
   out or paint it again). */
function setText(node, text) {
  if (node.textContent !== text) node.textContent = text;
}

function setProperty(node, name, value) {
  if (node[name] !== value) node[name] = value;
}

function button(cls, text, title) {
  return el("button", { class: `tv-button ${cls}`, type: "button", title, text });
}

/* Where an equation stands relative to the cursor's step [start, stop). */
function when(i, step) {
  return i < step.start ? "done" : i < step.stop ? "current" : "future";
}

/* The DOM of one view, built once; the parts are refilled as traits change. */
function skeleton(root) {
  const ui = {
    phase: el("div", { class: "tv-phase" }),
    status: el("div", { class: "tv-status", hidden: "" }),
    first: button("tv-first", "\u00ab first", "go to the first step"),
    prev: button("tv-prev", "\u25c0 prev", "previous step"),
    next: button("tv-next tv-primary", "next \u25b6", "next step"),
    last: button("tv-last", "last \u00bb", "go to the last step"),
    play: button("tv-play", "\u25b6 play", "step by itself, every 0.6 s"),
    slider: el("input", { class: "tv-slider", type: "range", min: "1", value: "1", "aria-label": "step" }),
    counter: el("span", { class: "tv-counter" }),
    pullback: button("tv-by-pullback", "by pullback", "one rule instance or pullback block per step"),
    primitive: button("tv-by-primitive", "by primitive", "one equation per step"),
    pick: el("input", { class: "tv-pick-input", placeholder: "%n", "aria-label": "select a variable" }),
    goto: button("tv-goto", "step to it", "move the cursor to the step that computes the selected variable"),
    closureToggle: button("tv-closure", "closure vs lifted", "compare the selected rule's closure and lifted pullbacks"),
    diffToggle: button("tv-diff-toggle", "diff", "diff this tape with ad.optimize of it"),
    diff: el("div", { class: "tv-diff-w", hidden: "" }),
    check: button("tv-check tv-warning", "run checks", "run ad.check on this program"),
    progress: el("progress", { class: "tv-progress", max: "1", value: "0", hidden: "" }),
    summary: el("span", { class: "tv-check-summary" }),
    svg: button("tv-export-svg", "SVG", "export the graph pane as SVG"),
    dotButton: button("tv-export-dot", "DOT", "export the graph pane as DOT source"),
    download: el("span", { class: "tv-download" }),
    message: el("span", { class: "tv-message", role: "status" }),
    listing: el("div", { class: "tv-listing-w" }),
    inspector: el("div", { class: "tv-value-w" }),
    closure: el("div", { class: "tv-closure-w", hidden: "" }),
    alerts: el("div", { class: "tv-alerts" },
      el("span", { class: "tv-caption", text: "run the checks to list their findings here" })),
    residuals: el("div", { class: "tv-residuals-w" }),
    caption: el("div", { class: "tv-caption" }),
    legend: el("div", { class: "tv-legend-w" }),
    zoomOut: button("tv-zoom-out", "\u2212", "zoom out (or ctrl + wheel)"),
    zoomIn: button("tv-zoom-in", "+", "zoom in (or ctrl + wheel)"),
    fit: button("tv-zoom-fit", "fit", "show the whole drawing"),
    actual: button("tv-zoom-1", "1:1", "the readable scale"),
    viewAround: button("tv-view-around", "around the cursor", "draw the equations within a few steps of the cursor"),
    viewCalls: button("tv-view-calls", "calls", "draw the program's calls: the cursor's opened, each other one a node " +
      "beside its pullback; click one to open it, an opened one's title to close it"),
    view: el("div", { class: "tv-graph-view", title: "drag to pan; click a node to inspect it" }),
    stepInto: button("tv-step-into", "\u2198 step into", "to the next step, into the call it is in (Shift: backwards)"),
    stepOver: button("tv-step-over", "\u21b7 step over", "to the next step not inside a call made from here: " +
      "a call, or in the backward pass its pullback block, runs whole (Shift: backwards)"),
    stepOut: button("tv-step-out", "\u2197 step out", "to the first step after this call (Shift: to the last one before it)"),
    reverse: button("tv-reverse", "\u25c0 backwards", "step, continue and run to a failing check towards the start " +
      "of the tape (or hold Shift while clicking)"),
    cont: button("tv-cont", "\u25b6\u25b6 continue", "run to the next breakpoint (Shift: the previous one)"),
    nonfinite: button("tv-nonfinite", "run to NaN/Inf", "run to the next step that writes a NaN or an Inf " +
      "(Shift: the first in the tape)"),
    failure: button("tv-failure", "run to failing check", "run to the next step with a failing check " +
      "(run the checks first; Shift: the previous one)"),
    breakpoints: el("span", { class: "tv-breakpoints" }),
    keys: el("details", { class: "tv-keys" }, el("summary", { text: "\u2328 keys",
      title: "keyboard shortcuts, while the debugger has focus (click in it first)" }),
    el("dl", {}, ...KEY_LIST.flatMap(([key, what]) => [el("dt", { text: key }), el("dd", { text: what })]))),
    outline: el("div", { class: "tv-outline", role: "tree" }),
    outlineHead: el("div", { class: "tv-outline-h" }),
  };
  ui.pick.value = "";
  ui.phaseText = el("span", { class: "tv-phase-text" });
  ui.phaseWrites = el("span", { class: "tv-phase-writes" });
  ui.phaseScope = el("span", { class: "tv-phase-scope", title: "the call the cursor is in (the outline highlights it)" });
  ui.phase.append(ui.phaseText, ui.phaseScope, ui.phaseWrites);
  for (const [name, shown] of Object.values(KEYS)) {
    if (ui[name] && ui[name].tagName === "BUTTON") ui[name].title += ` \u2014 key ${shown}`;
  }
  ui.drawing = el("div", { class: "tv-graph-svg" });
  ui.view.append(ui.drawing);
  ui.pane = el("div", { class: "tv-graph-pane" }, ui.caption, ui.legend,
    el("div", { class: "tv-zoom" }, el("span", { class: "tv-graph-views" }, ui.viewAround, ui.viewCalls),
      ui.zoomOut, ui.zoomIn, ui.fit, ui.actual), ui.view);
  const row = (cls, ...children) => el("div", { class: `tv-row-w ${cls}` }, ...children);
  root.append(
    ui.status, ui.phase,
    row("tv-toolbar", ui.first, ui.prev, ui.next, ui.last, ui.play, ui.slider, ui.counter,
      el("span", { class: "tv-granularity" }, ui.pullback, ui.primitive)),
    row("tv-nav", el("span", { class: "tv-nav-label", text: "by call" }), ui.stepInto, ui.stepOver, ui.stepOut,
      ui.reverse, el("span", { class: "tv-nav-sep" }), ui.cont, ui.nonfinite, ui.failure, ui.breakpoints, ui.keys),
    row("tv-tools", el("label", { class: "tv-pick" }, "select ", ui.pick), ui.goto, ui.closureToggle, ui.diffToggle,
      ui.check, ui.progress, ui.summary, ui.svg, ui.dotButton, ui.download, ui.message),
    el("div", { class: "tv-main" },
      el("div", { class: "tv-left" }, ui.listing, ui.inspector),
      el("div", { class: "tv-right tv-graph" },
        el("div", { class: "tv-outline-pane" }, ui.outlineHead, ui.outline), ui.pane)),
    ui.closure, ui.diff,
    el("div", { class: "tv-bottom" },
      el("div", { class: "tv-alerts-w" },
        el("div", {}, el("b", { text: "check alerts" }), " (click one to jump to its equation)"), ui.alerts),
      ui.residuals));
  return ui;
}

/* Graphviz in WebAssembly, loaded once per view from the source the model sends: { dot(source)
   -> a promise of SVG, worker }. It lays out in a Web Worker, so the view repaints while a graph
   is laid out (on the main thread only where a page may not start workers); null when the page
   may not compile WebAssembly (a CSP without 'wasm-unsafe-eval'): the kernel draws then. */
const EMPTY_WASM = new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0]);
const WORKER_READY_MS = 30_000;

async function loadGraphviz(source) {
  try {
    await WebAssembly.instantiate(EMPTY_WASM);
  } catch (error) {
    console.warn("tapeviz: Graphviz WebAssembly unavailable, the kernel draws the graph:", error);
    return null;
  }
  const url = URL.createObjectURL(new Blob([source], { type: "text/javascript" }));
  try {
    const graphviz = (await workerGraphviz(moduleWorker(url), { type: "module" })) ??
      (await workerGraphviz(CLASSIC_WORKER, {}, { source }));
    if (graphviz) return graphviz;
    console.warn("tapeviz: no worker for Graphviz, laying out on the main thread");
    return await mainGraphviz(url);
  } finally {
    URL.revokeObjectURL(url);
  }
}

async function mainGraphviz(url) {
  try {
    const { Graphviz } = await import(url);
    const graphviz = await Graphviz.load();
    return { dot: async (dot) => graphviz.dot(dot), worker: false };
  } catch (error) {
    console.warn("tapeviz: Graphviz WebAssembly unavailable, the kernel draws the graph:", error);
    return null;
  }
}

/* What a Graphviz worker does once it has Graphviz: answer {id, dot} with {id, svg} or {id, error}. */
const ANSWER = `({ data }) => {
  let answer;
  try { answer = { id: data.id, svg: graphviz.dot(data.dot) }; } catch (error) { answer = { id: data.id, error: String(error) }; }
  postMessage(answer);
}`;

/* A module worker importing Graphviz from the page's blob: URL (a page served over HTTP). */
const moduleWorker = (url) => `import { Graphviz } from ${JSON.stringify(url)};
const graphviz = await Graphviz.load();
addEventListener("message", ${ANSWER});
postMessage({ ready: true });`;

/* A classic worker that is sent Graphviz's source and imports it from a blob: URL of its own: a
   page opened from disk (file:, an opaque origin) may start no module worker from a blob: URL,
   nor import the page's blob: URLs in one, but may start this one. */
const CLASSIC_WORKER = `addEventListener("message", async function first({ data }) {
  removeEventListener("message", first);
  let graphviz;
  try {
    const url = URL.createObjectURL(new Blob([data.source], { type: "text/javascript" }));
    graphviz = await (await import(url)).Graphviz.load();
    URL.revokeObjectURL(url);
  } catch (error) {
    postMessage({ failed: String(error) });
    return;
  }
  addEventListener("message", ${ANSWER});
  postMessage({ ready: true });
});`;

/* A worker running code (given as text, started with options, sent hello first when given)
   that posts {ready: true} once it has Graphviz, and then answers {id, dot}: a promise of
   {dot(source) -> a promise of SVG, worker: true}, or of null when it does not start. */
function workerGraphviz(code, options, hello) {
  const script = URL.createObjectURL(new Blob([code], { type: "text/javascript" }));
  return new Promise((resolve) => {
    let worker;
    const give = (value) => { clearTimeout(timer); URL.revokeObjectURL(script); resolve(value); };
    const fail = (error) => {
      console.debug("tapeviz: a Graphviz worker did not start:", error);
      if (worker) worker.terminate();
      give(null);
    };
    const timer = setTimeout(() => fail("the worker did not start"), WORKER_READY_MS);
    try {
      worker = new Worker(script, options);
    } catch (error) {
      fail(error);
      return;
    }
    const asked = new Map();
    let next = 0;
    const failed = (event) => { event.preventDefault(); fail(event.message || "worker error"); };
    const answered = ({ data: answer }) => {
      const pending = asked.get(answer.id);
      asked.delete(answer.id);
      if (!pending) return;
      if (answer.error !== undefined) pending.reject(new Error(answer.error));
      else pending.resolve(answer.svg);
    };
    const ready = ({ data }) => {
      if (data.failed !== undefined) fail(data.failed);
      if (!data.ready) return;
      worker.removeEventListener("error", failed);
      worker.removeEventListener("message", ready);
      worker.addEventListener("message", answered);
      give({
        worker: true,
        dot: (dot) => new Promise((resolve, reject) => {
          const id = next++;
          asked.set(id, { resolve, reject });
          worker.postMessage({ id, dot });
        }),
      });
    };
    worker.addEventListener("error", failed);
    worker.addEventListener("message", ready);
    if (hello) worker.postMessage(hello);
  });
}

/* The graph pane: SVG laid out in the browser, cached by DOT source, drawn at a fixed readable
   scale centred on the current equation; drag pans, the buttons and ctrl + wheel zoom. */
class GraphPane {
  constructor(view) {
    this.view = view;
    this.ui = view.ui;
    this.scale = 1;
    this.x = 0;
    this.y = 0;
    this.cache = new Map();
    this.waiting = new Map();      // DOT -> resolve, for drawings asked of the kernel
    this.graphviz = null;          // a promise of Graphviz, or of null
    this.pending = null;           // the DOT laid out last, and the one on screen
    this.shown = null;
    this.dragged = false;          // the pointer moved between down and up: a pan, not a click
    this.opened = null;            // the selector of a cluster the calls view is opening: shown when drawn
    const { ui } = this;
    ui.zoomIn.addEventListener("click", () => this.zoom(ZOOM));
    ui.zoomOut.addEventListener("click", () => this.zoom(1 / ZOOM));
    ui.actual.addEventListener("click", () => this.zoom(1 / this.scale));
    ui.fit.addEventListener("click", () => this.fit());
    ui.view.addEventListener("wheel", (event) => {
      if (!event.ctrlKey && !event.metaKey) return;        // plain wheel scrolls the page
      event.preventDefault();
      const box = ui.view.getBoundingClientRect();
      this.zoom(event.deltaY < 0 ? ZOOM : 1 / ZOOM, event.clientX - box.left, event.clientY - box.top);
    }, { passive: false });
    ui.view.addEventListener("pointerdown", (event) => this.drag(event));
  }

  async layout(dot) {
    if (this.graphviz === null) {
      this.graphviz = new Promise((resolve) => { this.gotGraphviz = resolve; });
      this.view.send({ action: "graphviz" });
    }
    const graphviz = await this.graphviz;
    if (graphviz) {
      try {
        return { svg: await graphviz.dot(dot), renderer: "wasm" };
      } catch (error) {
        return { error: `Graphviz could not lay out this graph: ${error}` };
      }
    }
    const answer = await new Promise((resolve) => {
      this.waiting.set(dot, resolve);
      this.view.send({ action: "svg", dot });
    });
    return answer.svg ? { svg: answer.svg, renderer: "kernel" } : { error: answer.error };
  }

  /* Lay out and show a drawing; the frame is read when it is in place, since newer steps may
     have arrived meanwhile (they supersede a drawing still being laid out). */
  async draw(dot) {
    if (!dot) return;
    if (dot === this.pending) {
      if (dot === this.shown) this.stamp();
      return;
    }
    this.pending = dot;
    const view = this.view.frame.pane.view || "around";       // the view this source draws
    // the step's listing and phase line reach the screen first, the drawing in a later frame
    const painted = () => new Promise((done) => requestAnimationFrame(() => setTimeout(done)));
    let drawing = this.cache.get(dot);
    let waited = false;
    if (!drawing) {
      if (!(await this.graphviz)?.worker) {      // laid out on the main thread: paint the rest first
        await painted();
        waited = true;
        if (this.pending !== dot) return;
      }
      drawing = this.remember(dot);
    }
    drawing = await drawing;
    if (!waited) await painted();
    if (this.pending !== dot) return;
    const { ui } = this;
    if (drawing.error) {
      ui.drawing.replaceChildren(el("pre", { class: "tv-message", text: drawing.error }));
    } else {
      ui.drawing.innerHTML = drawing.svg;                  // Graphviz escapes the labels
      ui.pane.dataset.renderer = drawing.renderer;
    }
    this.shown = dot;
    this.stamp();
    this.centre(this.view.frame.step.current);
    this.ui.pane.dataset.view = view;
  }

  /* A promise of the drawing of dot, kept (the cache holds the layouts under way too). */
  remember(dot) {
    const drawing = this.layout(dot);
    this.cache.set(dot, drawing);
    if (this.cache.size > SVG_CACHE) this.cache.delete(this.cache.keys().next().value);
    return drawing;
  }

  /* Lay out a drawing a step ahead may need, in the worker only (never on the main thread). */
  prefetch(dot) {
    if (!dot || this.cache.has(dot) || this.graphviz === null) return;
    this.graphviz.then((graphviz) => { if (graphviz?.worker && !this.cache.has(dot)) this.remember(dot); });
  }

  /* The drawn step and the selection's tint, for the current frame. */
  stamp() {
    const frame = this.view.frame;
    this.ui.pane.dataset.step = frame.step.index;
    this.ui.pane.dataset.focus = frame.step.current;
    this.mark(frame);
  }

  node(name) {
    for (const id of [`tvn_${name}`, `tvn_eq/${name}`]) {
      const node = this.ui.drawing.querySelector(`g.node[id="${CSS.escape(id)}"]`);
      if (node) return node;
    }
    return null;
  }

  mark(frame) {
    for (const node of this.ui.drawing.querySelectorAll("g.node.tv-node-sel")) node.classList.remove("tv-node-sel");
    const node = frame.selected && this.node(frame.selected);
    if (node) node.classList.add("tv-node-sel");
  }

  apply() {
    this.ui.drawing.style.transform = `translate(${this.x}px, ${this.y}px) scale(${this.scale})`;
    this.ui.pane.dataset.scale = this.scale.toFixed(3);
  }

  centre(name) {
    const opened = this.opened && this.ui.drawing.querySelector(this.opened);
    if (opened) {                  // a call just opened in the calls view: its cluster's corner, top left
      this.opened = null;
      const box = opened.getBoundingClientRect(), origin = this.ui.drawing.getBoundingClientRect();
      this.x = 16 - (box.left - origin.left);
      this.y = 16 - (box.top - origin.top);
      this.apply();
      return;
    }
    const node = this.ui.drawing.querySelector("g.node.tv-current") || this.node(name);   // the calls view frames a call
    const view = this.ui.view.getBoundingClientRect();
    if (!node) {
      this.x = this.y = 0;
    } else {
      const box = node.getBoundingClientRect();
      const origin = this.ui.drawing.getBoundingClientRect();
      const cx = (box.left + box.width / 2 - origin.left) / this.scale;
      const cy = (box.top + box.height / 2 - origin.top) / this.scale;
      this.x = view.width / 2 - cx * this.scale;
      this.y = view.height / 3 - cy * this.scale;
    }
    this.apply();
  }

  zoom(factor, px, py) {
    const view = this.ui.view.getBoundingClientRect();
    px ??= view.width / 2;
    py ??= view.height / 2;
    const scale = Math.min(4, Math.max(0.1, this.scale * factor));
    this.x = px - (px - this.x) * (scale / this.scale);
    this.y = py - (py - this.y) * (scale / this.scale);
    this.scale = scale;
    this.apply();
  }

  fit() {
    const svg = this.ui.drawing.querySelector("svg");
    if (!svg) return;
    const view = this.ui.view.getBoundingClientRect();
    const width = svg.width.baseVal.value, height = svg.height.baseVal.value;
    this.scale = Math.min(view.width / width, view.height / height, 4);
    this.x = (view.width - width * this.scale) / 2;
    this.y = (view.height - height * this.scale) / 2;
    this.apply();
  }

  drag(event) {
    if (event.button !== 0) return;
    const { view } = this.ui;
    const start = { x: event.clientX, y: event.clientY, left: this.x, top: this.y };
    let moved = false;
    const move = (e) => {
      const dx = e.clientX - start.x, dy = e.clientY - start.y;
      if (!moved && Math.hypot(dx, dy) < 4) return;        // a click, not a drag
      if (!moved) view.setPointerCapture(event.pointerId);
      moved = true;
      this.x = start.left + dx;
      this.y = start.top + dy;
      this.apply();
    };
    const up = () => {
      view.removeEventListener("pointermove", move);
      view.removeEventListener("pointerup", up);
      this.dragged = moved;
    };
    view.addEventListener("pointermove", move);
    view.addEventListener("pointerup", up);
  }

  answer(msg) {
    if (msg.kind === "graphviz") {
      loadGraphviz(msg.source).then(this.gotGraphviz);
    } else if (msg.kind === "svg") {
      const resolve = this.waiting.get(msg.dot);
      this.waiting.delete(msg.dot);
      if (resolve) resolve(msg);
    }
  }
}

/* The rows of Python's tables (a row holds no table; text and attributes are escaped): the
   markup around the body's rows, and each row's. */
const ROW = /<tr[\s>][\s\S]*?<\/tr>/g;
function splitRows(html) {
  const open = html.indexOf("<tbody>"), close = html.lastIndexOf("</tbody>");
  if (open < 0 || close < open) return { shell: html, rows: [] };
  return { shell: html.slice(0, open + 7) + html.slice(close), rows: html.slice(open + 7, close).match(ROW) || [] };
}

/* The elements of rows' markups: a row seen before (known: markup -> element) is the same
   element, laid out and decorated already; the new ones are parsed together. */
function rowElements(markups, known) {
  const fresh = markups.filter((markup) => !known.has(markup));
  if (fresh.length) {
    const parsed = document.createElement("template");
    parsed.innerHTML = `<table><tbody>${fresh.join("")}</tbody></table>`;
    [...parsed.content.querySelector("tbody").children].forEach((row, k) => known.set(fresh[k], row));
  }
  const rows = markups.map((markup) => known.get(markup));
  if (known.size > 3 * markups.length + 64) {          // forget rows long gone
    const wanted = new Set(markups);
    for (const markup of known.keys()) if (!wanted.has(markup)) known.delete(markup);
  }
  return rows;
}

/* Make parent's children between start and end (exclusive; null: the ends) the rows, in order,
   moving as few as possible; returns the rows that were not in the DOM. */
function place(parent, rows, start = null, end = null) {
  const keep = new Set(rows);
  const first = () => (start ? start.nextElementSibling : parent.firstElementChild);
  for (let node = first(); node && node !== end;) {
    const next = node.nextElementSibling;
    if (!keep.has(node)) node.remove();
    node = next;
  }
  const added = [];
  let at = first();
  for (const row of rows) {
    if (row === at) {
      at = at.nextElementSibling;
      continue;
    }
    if (!row.isConnected) added.push(row);
    parent.insertBefore(row, at);
  }
  return added;
}

/* Refill a part (the residuals) with new markup: the rows that did not change stay (one step
   lays out the rows that enter, not the whole table) and the markup around them is patched; a
   different structure is replaced whole. */
function refill(holder, html, known) {
  const { shell, rows } = splitRows(html);
  const fresh = document.createElement("template");
  fresh.innerHTML = shell;
  const root = fresh.content.firstElementChild;
  const live = holder.firstElementChild;
  if (!root || !live || holder.childNodes.length !== 1 || fresh.content.childNodes.length !== 1 || !patch(live, root)) {
    holder.replaceChildren(fresh.content);
  }
  const body = holder.querySelector("tbody");
  if (body) place(body, rowElements(rows, known));
}

/* Make live equal fresh, along the path to the table's body (whose rows the caller places);
   false when they differ elsewhere in structure (the caller replaces them). */
function patch(live, fresh) {
  if (live.tagName !== fresh.tagName) return false;
  if (fresh.tagName === "TBODY") return true;
  if (live.childNodes.length !== live.children.length || fresh.childNodes.length !== fresh.children.length ||
      live.children.length !== fresh.children.length) return false;
  for (const { name } of [...live.attributes]) if (!fresh.hasAttribute(name)) live.removeAttribute(name);
  for (const { name, value } of fresh.attributes) if (live.getAttribute(name) !== value) live.setAttribute(name, value);
  const pairs = [...fresh.children].map((node, k) => [live.children[k], node]);
  for (const [old, node] of pairs) {
    if (node.tagName === "TBODY" || node.querySelector("tbody")) {
      if (!patch(old, node)) return false;
    } else if (!old.isEqualNode(node)) {
      old.replaceWith(node);
    }
  }
  return true;
}

/* Heights (px) of the listing's parts, as the stylesheet fixes them (.tv-listing): an equation's
   line (its check badges take a second one), a block's header, a row's padding and border, the
   column headings; the scroll box's height inside its border, and the margin of rows drawn
   beyond it on each side. */
const LINE = 17;
const BLOCK_HEAD = 15;
const ROW_PAD = 5;
const HEADINGS = 22;
const VIEW = 438;
const MARGIN = 400;

function lineHeight(line) {
  if (line.classList.contains("tv-block-h")) return BLOCK_HEAD;
  return line.classList.contains("tv-failed") || line.classList.contains("tv-warned") ? 2 * LINE : LINE;
}

/* A row's height from its markup: its taller cell's lines. */
function rowHeight(row) {
  if (row.classList.contains("tv-more")) return LINE + ROW_PAD;
  let height = LINE;
  for (const cell of row.children) {
    let h = 0;
    for (const line of cell.children) h += lineHeight(line);
    height = Math.max(height, h);
  }
  return height + ROW_PAD;
}

/* The listing, virtualised: Python's rows (a window around the cursor, or a static page's whole
   tape) are parsed once per markup and kept out of the DOM but for those in view and a margin,
   between two spacers. Every row's height follows from its markup (fixed-height lines), so where
   a row is and where to scroll to show the current line is arithmetic: the listing never reads
   the layout, and the one write that makes the browser lay out (the scroll position) comes last
   in the view's frame. The scroll box stays when new markup comes (its scroll position stays on
   the row at the top). */
class Listing {
  constructor(view) {
    this.view = view;
    this.holder = view.ui.listing;
    this.scroller = null;
    this.rows = [];
    this.known = new Map();        // markup -> row
    this.tops = [0];               // tops[k]: where row k starts, below the headings
    this.index = new Map();        // data-row -> k
    this.first = 0;                // the rows [first, last) in the DOM
    this.last = 0;
    this.top = 0;                  // the scroll position, as the view set it or last saw it
    this.write = false;            // this.top is not written yet
    this.resized = new ResizeObserver(() => this.settle());
  }

  show(html) {
    const { shell, rows } = splitRows(html);
    const fresh = document.createElement("template");
    fresh.innerHTML = shell;
    const root = fresh.content.firstElementChild;
    const body = root && root.querySelector(".tv-scroll tbody");
    if (!body) {
      this.holder.replaceChildren(fresh.content);
      this.scroller = null;
      this.rows = [];
      return;
    }
    const anchor = this.anchor();
    this.rows = rowElements(rows, this.known);          // a row drawn before stays (and its layout)
    for (const row of this.rows) {
      if (row.tvHeight !== undefined) continue;
      row.tvHeight = rowHeight(row);
      row.style.height = `${row.tvHeight}px`;
    }
    this.tops = [0];
    this.index = new Map();
    this.rows.forEach((row, k) => {
      this.tops.push(this.tops[k] + row.tvHeight);
      if (row.dataset.row !== undefined) this.index.set(Number(row.dataset.row), k);
    });
    const live = this.scroller && this.holder.firstElementChild;
    if (live) {                    // the same box: its attributes, headings and rows change
      for (const { name } of [...live.attributes]) if (!root.hasAttribute(name)) live.removeAttribute(name);
      for (const { name, value } of root.attributes) if (live.getAttribute(name) !== value) live.setAttribute(name, value);
      const head = root.querySelector("thead"), liveHead = live.querySelector("thead");
      if (head && liveHead && head.innerHTML !== liveHead.innerHTML) liveHead.replaceWith(head);
    } else {
      body.replaceChildren();
      body.classList.add("tv-virtual");
      this.body = body;
      this.padTop = el("tr", { class: "tv-pad" });
      this.padBottom = el("tr", { class: "tv-pad" });
      body.append(this.padTop, this.padBottom);
      this.holder.replaceChildren(root);
      this.scroller = root.querySelector(".tv-scroll");
      this.scroller.addEventListener("scroll", () => {
        this.top = this.scroller.scrollTop;
        this.render();
      }, { passive: true });
      this.resized.disconnect();
      this.resized.observe(this.scroller);
      this.top = 0;
    }
    if (anchor) {
      const k = this.index.get(anchor.row);
      if (k !== undefined) this.scrollTo(this.tops[k] + anchor.offset);
    }
    this.render(true);
  }

  /* The row at the top of the box and how far into it the box is scrolled. */
  anchor() {
    if (!this.scroller || !this.rows.length) return null;
    const k = this.rowAt(this.top);
    const row = this.rows[k].dataset.row;
    return row === undefined ? null : { row: Number(row), offset: this.top - this.tops[k] };
  }

  /* The last row starting at or above y. */
  rowAt(y) {
    let lo = 0, hi = this.rows.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (this.tops[mid] <= y) lo = mid; else hi = mid - 1;
    }
    return lo;
  }

  /* Put the rows in view (and a margin) in the DOM; those already there stay while they cover
     the view and half the margin (unless the rows changed). */
  render(changed = false) {
    const { rows, tops } = this;
    if (!this.scroller || !rows.length) return;
    const total = tops[rows.length];
    const covers = (margin) => this.first < this.last && tops[this.first] <= Math.max(this.top - margin, 0) &&
      tops[this.last] >= Math.min(this.top + VIEW + margin, total);
    if (!changed && covers(MARGIN / 2)) return;
    this.first = this.rowAt(this.top - MARGIN);
    this.last = Math.min(this.rowAt(this.top + VIEW + MARGIN) + 1, rows.length);
    const added = place(this.body, rows.slice(this.first, this.last), this.padTop, this.padBottom);
    this.padTop.style.height = `${tops[this.first]}px`;
    this.padBottom.style.height = `${total - tops[this.last]}px`;
    this.view.decorateRows(added);
  }

  scrollTo(top) {
    const max = Math.max(0, HEADINGS + this.tops[this.rows.length] - VIEW);
    top = Math.round(Math.min(Math.max(top, 0), max));
    if (top !== this.top) {
      this.top = top;
      this.write = true;
    }
  }

  /* Scroll the current line into view when the box hides it (above its top 30 px, or below 60%
     of its height), to a third of the height. */
  reveal(step) {
    const k = this.index.get(step.row);
    if (k === undefined) return;
    let y = this.tops[k] + HEADINGS + 2 - this.top;             // the row's first line, in the box
    const line = this.rows[k].querySelector(`.tv-eq[data-eq="${step.start}"]`);
    for (let above = line && line.previousElementSibling; above; above = above.previousElementSibling) {
      y += lineHeight(above);
    }
    const height = Math.min(VIEW, HEADINGS + this.tops[this.rows.length]);
    if (y < 30 || y > height * 0.6) this.scrollTo(this.top + y - height / 3);
  }

  /* The frame's last write: the scroll position. */
  commit() {
    this.render();
    if (this.write && this.scroller) this.scroller.scrollTop = this.top;
    this.write = false;
  }

  dispose() {
    this.resized.disconnect();
  }

  /* Laid out (shown, resized): a scroll position written while the box had no layout (a hidden
     tab, not yet in the page) is written again; one the box could not take is taken back. */
  settle() {
    if (!this.scroller || !this.scroller.clientHeight) return;
    if (this.scroller.scrollTop !== this.top) this.scroller.scrollTop = this.top;
    if (this.scroller.scrollTop !== this.top) {
      this.top = this.scroller.scrollTop;
      this.render();
    }
  }
}

/* Bytes as people read them: 0, 256 B, 10.2 kB, 3.1 MB. */
function humanBytes(n) {
  if (!n) return "0";
  const units = ["B", "kB", "MB", "GB", "TB"];
  let k = 0;
  while (n >= 999.5 && k < units.length - 1) {
    n /= 1000;
    k += 1;
  }
  return k === 0 ? `${n} B` : `${n < 9.95 ? n.toFixed(1) : Math.round(n)} ${units[k]}`;
}

/* A breakpoint's target as the kernel writes it ("%12", or a scope path as a list), as a key
   and as text. */
const targetKey = (target) => (Array.isArray(target) ? `s:${JSON.stringify(target)}` : `e:${target}`);
const describeTarget = (target) => (Array.isArray(target) ? target.join("/") || "the top level" : target);

/* The outline pane: the program's scope tree (Python's Navigation.outline, repeated calls folded
   into a group: "cell x40"), one row per entry drawn, with its forward and backward (or tangent)
   equation counts, the residual bytes it keeps and its check status. Only the rows of expanded
   entries are in the DOM (a group's calls OUTLINE_CHUNK at a time), each built once; the row
   holding the cursor's scope (or, when that one is folded away, its nearest drawn ancestor) is
   highlighted. A click on a call runs to it, on a group or a triangle expands or collapses it,
   on the left edge sets or clears a breakpoint. */
class Outline {
  constructor(view) {
    this.view = view;
    this.list = view.ui.outline;
    this.head = view.ui.outlineHead;
    this.root = null;              // the tree's root node: { entry, key, parent, depth, children, el }
    this.tree = null;
    this.open = null;              // keys of the expanded entries (kept when the tree comes again)
    this.shown = new Map();        // key -> how many of its children are drawn
    this.scopes = new Map();       // a call's path (JSON) -> its node
    this.keys = new Map();         // an entry's key -> its node
    this.cursor = null;            // the node highlighted
    this.breakpoints = "";
    this.list.addEventListener("click", (event) => this.click(event));
  }

  show(tree) {
    this.tree = tree;
    this.scopes = new Map();
    this.keys = new Map();
    this.cursor = null;
    this.breakpoints = "";
    if (!tree || !tree.children) {
      this.root = null;
      this.list.replaceChildren();
      this.list.closest(".tv-outline-pane").hidden = true;
      return;
    }
    this.list.closest(".tv-outline-pane").hidden = false;
    const index = (entry, parent, depth) => {
      const node = { entry, parent, depth, key: `${entry.kind}:${JSON.stringify(entry.path)}`, el: null };
      if (entry.kind === "scope") this.scopes.set(JSON.stringify(entry.path), node);
      this.keys.set(node.key, node);
      node.children = entry.children.map((child) => index(child, node, depth + 1));
      return node;
    };
    this.root = index(tree, null, 0);
    if (this.open === null) this.open = this.firstOpen();
    const forward = this.view.frame && this.view.frame.mode === "forward";
    const calls = this.scopes.size - 1;
    const status = tree.status ? ` \u00b7 checks: ${tree.status}` : "";
    const hint = !calls ? "the program calls none of its own functions" : "click one to go there";
    this.head.title = "click a call to run to it, the left edge of its row to set or clear a breakpoint there, " +
      "\u25b8 to show its calls";
    this.head.replaceChildren(
      el("b", { text: "outline" }),
      el("span", { class: "tv-caption", text: ` ${calls || "no"} call${calls === 1 ? "" : "s"}${status} \u00b7 ${hint}` }),
      el("div", { class: "tv-ol-row tv-ol-cols" }, el("span"), el("span", { text: "call" }),
        el("span", { text: "fwd", title: "forward equations (the call's and its callees')" }),
        el("span", forward ? { text: "tan", title: "tangent equations (its pushforward blocks)" }
          : { text: "bwd", title: "backward equations (its pullback blocks and fan-in sums)" }),
        el("span", { text: "kept", title: forward ? "bytes of forward values the tangent pass reads"
          : "bytes of residuals: forward values the backward pass reads" })));
    this.render();
  }

  /* The entries open at first: the root, then calls (not groups) breadth first while the rows
     stay few. */
  firstOpen() {
    const open = new Set([this.root.key]);
    let rows = 1 + this.root.children.length;
    const queue = [...this.root.children];
    while (queue.length) {
      const node = queue.shift();
      if (node.entry.kind !== "scope" || !node.children.length) continue;
      if (rows + node.children.length > OUTLINE_ROWS) continue;
      open.add(node.key);
      rows += node.children.length;
      queue.push(...node.children);
    }
    return open;
  }

  render() {
    if (this.cursor && this.cursor.el) this.cursor.el.classList.remove("tv-ol-cursor", "tv-ol-within");
    const rows = [];
    const visit = (node) => {
      rows.push(this.row(node));
      if (!node.children.length || !this.open.has(node.key)) return;
      const n = this.shown.get(node.key) ?? OUTLINE_CHUNK;
      node.children.slice(0, n).forEach(visit);
      const left = node.children.length - n;
      if (left > 0) {
        const more = el("div", { class: "tv-ol-row tv-ol-more", role: "treeitem",
          text: `\u2026 ${left} more call${left === 1 ? "" : "s"} (show ${Math.min(left, OUTLINE_CHUNK)} more)` });
        more.style.paddingLeft = `${(node.depth + 1) * 12 + 16}px`;
        more.tvMore = node;
        rows.push(more);
      }
    };
    visit(this.root);
    this.list.replaceChildren(...rows);
    this.cursor = null;
    this.breakpoints = "";
    if (this.view.frame && this.view.frame.step) this.paint(this.view.frame);
  }

  row(node) {
    const { entry } = node;
    const open = this.open.has(node.key);
    if (node.el) {
      node.el.classList.toggle("tv-ol-open", open);
      if (node.children.length) node.el.setAttribute("aria-expanded", String(open));
      return node.el;
    }
    const group = entry.kind === "group";
    const forward = this.view.frame && this.view.frame.mode === "forward";
    const name = node.depth === 0 ? "program (top level)" : group ? `${entry.name} \u00d7${entry.calls}` : entry.name;
    const second = forward ? entry.tangent : entry.backward;
    const call = el("span", { class: "tv-ol-call" },
      el("span", { class: "tv-ol-twisty" }),
      el("span", { class: `tv-ol-mark tv-ol-${entry.status || "none"}`, text: STATUS_MARK[entry.status] || "" }),
      el("span", { class: "tv-ol-name", text: name }));
    call.style.paddingLeft = `${node.depth * 12}px`;
    const bp = el("span", { class: "tv-ol-bp" });
    if (!group && node.depth > 0) bp.title = "click to set or clear a breakpoint where this call starts (forward) and where its pullback starts";
    const row = el("div", { class: `tv-ol-row${group ? " tv-ol-group" : ""}`, role: "treeitem",
      "data-kind": entry.kind, "data-path": entry.path.join("/"), "data-status": entry.status || "none" },
    bp, call, el("span", { class: "tv-ol-n", text: String(entry.forward) }),
    el("span", { class: "tv-ol-n", text: String(second) }),
    el("span", { class: "tv-ol-n", text: humanBytes(entry.residual_bytes) }));
    const what = group ? `${entry.calls} calls of ${entry.name}` : node.depth === 0 ? "the whole program" : entry.name;
    row.title = `${what}: ${entry.forward} forward and ${second} ${forward ? "tangent" : "backward"} equations, ` +
      `keeps ${entry.residual_bytes.toLocaleString("en")} bytes` + (entry.status ? `; checks: ${entry.status}` : "") +
      (group ? "; click to show the calls" : "; click to go there");
    row.classList.toggle("tv-ol-open", open);
    if (node.children.length) row.setAttribute("aria-expanded", String(open));
    row.tvNode = node;
    node.el = row;
    return row;
  }

  click(event) {
    const row = event.target.closest(".tv-ol-row");
    if (!row) return;
    if (row.tvMore) {
      const node = row.tvMore;
      this.shown.set(node.key, (this.shown.get(node.key) ?? OUTLINE_CHUNK) + OUTLINE_CHUNK);
      this.render();
      return;
    }
    const node = row.tvNode;
    if (!node) return;
    const { entry } = node;
    if (event.target.closest(".tv-ol-bp")) {
      if (entry.kind !== "scope" || node.depth === 0) return;
      this.view.send({ action: "breakpoint", target: entry.path, on: !row.classList.contains("tv-ol-has-bp") });
    } else if (entry.kind === "group" || (event.target.closest(".tv-ol-twisty") && node.children.length)) {
      this.toggle(node);
    } else {
      this.view.send({ action: "run_to", target: entry.path });
    }
  }

  /* Expand or collapse an entry; a call or a group opens or closes in the graph's calls view too
     (the kernel keeps one open set for both panes). */
  toggle(node) {
    const open = !this.open.has(node.key);
    if (open) this.open.add(node.key);
    else this.open.delete(node.key);
    this.render();
    if (node.depth > 0) this.view.send({ action: open ? "open_call" : "close_call", path: node.entry.path });
  }

  /* The calls opened and closed in the graph (the frame's pane.opened and pane.closed, [kind,
     path] pairs): expanded and collapsed here as they change, the last one opened scrolled to. */
  sync(pane) {
    const shown = JSON.stringify([pane.opened || [], pane.closed || []]);
    if (shown === this.synced) return;
    const key = ([kind, path]) => `${kind}:${JSON.stringify(path)}`;
    const opened = new Set((pane.opened || []).map(key)), closed = new Set((pane.closed || []).map(key));
    const before = this.syncedSets || { opened: new Set(), closed: new Set() };
    let reveal = null, changed = false;
    for (const k of opened) {
      if (before.opened.has(k) || !this.keys.has(k)) continue;
      reveal = this.keys.get(k);
      if (!this.open.has(k)) { this.open.add(k); changed = true; }
    }
    for (const k of closed) {
      if (!before.closed.has(k) && this.open.has(k)) { this.open.delete(k); changed = true; }
    }
    this.synced = shown;
    this.syncedSets = { opened, closed };
    if (changed) this.render();
    if (reveal) this.reveal(reveal.el);
  }

  /* The cursor's entry, the calls opened in the graph and the breakpoints, for a frame. */
  paint(frame) {
    if (!this.root) return;
    if (frame.pane) this.sync(frame.pane);
    const scope = (frame.step && frame.step.scope) || frame.scope || [];
    let node = null;
    for (let d = scope.length; d >= 0 && !node; d--) node = this.scopes.get(JSON.stringify(scope.slice(0, d)));
    node = node || this.root;
    const chain = [];
    for (let n = node; n; n = n.parent) chain.unshift(n);
    let drawn = this.root;                      // the deepest of them drawn
    for (const n of chain) {
      if (!n.el || n.el.parentNode !== this.list) break;
      drawn = n;
    }
    this.list.dataset.scope = scope.join("/");
    this.list.dataset.cursor = drawn.entry.path.join("/");
    if (drawn !== this.cursor) {
      if (this.cursor && this.cursor.el) this.cursor.el.classList.remove("tv-ol-cursor", "tv-ol-within");
      this.cursor = drawn;
      this.reveal(drawn.el);
    }
    drawn.el.classList.add("tv-ol-cursor");
    drawn.el.classList.toggle("tv-ol-within", drawn !== node);    // the cursor is in a call folded away
    const breakpoints = JSON.stringify(frame.breakpoints || []);
    if (breakpoints !== this.breakpoints) {
      this.breakpoints = breakpoints;
      const set = new Set((frame.breakpoints || []).filter(Array.isArray).map((t) => JSON.stringify(t)));
      const inside = new Set();
      for (const [path, n] of this.scopes) {
        const on = set.has(path);
        if (on) for (let p = n.parent; p; p = p.parent) inside.add(p);
        if (n.el) n.el.classList.toggle("tv-ol-has-bp", on);
      }
      const paint = (n) => {
        if (n.el) n.el.classList.toggle("tv-ol-bp-inside", inside.has(n) && !this.open.has(n.key));
        n.children.forEach(paint);
      };
      paint(this.root);
    }
  }

  /* Scroll the outline (not the page) to show a row. */
  reveal(row) {
    const box = this.list;
    if (!row || !box.clientHeight) return;
    const top = row.offsetTop, bottom = top + row.offsetHeight;
    if (top < box.scrollTop || bottom > box.scrollTop + box.clientHeight) {
      box.scrollTop = Math.max(0, top - box.clientHeight / 3);
    }
  }
}

/* The diff pane (tapeviz/debugger/diff_pane.py): the session's tape (a) diffed with another (b;
   by default ad.optimize of it), opened by the "diff" toggle: Python's escaped HTML (the summary,
   the entries coloured as the diff's graph colours them, a change's reasons and values) and the
   union graph's DOT, laid out by the graph pane's Graphviz. A click on an entry or a node that is
   an equation of the session's tape moves the debugger there; the entries of the current step
   are marked. A static page shows the diff it embeds, or disables the toggle, saying why. */
class DiffPane {
  constructor(view) {
    this.view = view;
    this.ui = view.ui;
    this.part = {};
    this.html = null;              // the markup in the pane
    this.laid = null;              // the DOT drawn or being laid out
    this.marked = null;            // the step whose entries are marked
    this.ui.diffToggle.addEventListener("click", () => {
      if (!this.part.offline) this.view.send({ action: "diff", on: !this.part.shown });
    });
    this.ui.diff.addEventListener("click", (event) => this.click(event));
  }

  show(part) {
    this.part = part || {};
    const { shown, offline, about } = this.part;
    const { diffToggle: toggle, diff: pane } = this.ui;
    toggle.disabled = !!offline;
    toggle.title = offline || (shown ? `hide the diff of this tape (a) and ${about} (b)`
      : `diff this tape (a) with ${about} (b): what was removed, added and changed (tapeviz.diff)`);
    toggle.setAttribute("aria-pressed", String(!!shown));
    pane.hidden = !shown;
    if (!shown || this.part.html === this.html) return;
    this.html = this.part.html;
    pane.innerHTML = this.html;                          // Python escaped it
    this.marked = null;
    this.draw(this.part.dot);
  }

  async draw(dot) {
    this.laid = dot;
    const box = this.ui.diff.querySelector(".tv-diff-graph");
    const drawing = await this.view.graph.layout(dot);
    if (this.laid !== dot || !box.isConnected) return;
    if (drawing.error) {
      box.replaceChildren(el("pre", { class: "tv-message", text: drawing.error }));
      box.dataset.state = "error";
    } else {
      box.innerHTML = drawing.svg;                        // Graphviz escapes the labels
      box.dataset.state = "drawn";
      box.dataset.renderer = drawing.renderer;
    }
  }

  /* The entries of the current step's equations. */
  mark(frame) {
    if (!this.part.shown || !frame || !frame.step) return;
    const at = `${frame.step.start} ${frame.step.stop}`;
    if (at === this.marked) return;
    this.marked = at;
    for (const entry of this.ui.diff.querySelectorAll("[data-diff-eqn]")) {
      const i = Number(entry.dataset.diffEqn);
      entry.classList.toggle("tv-diff-here", frame.step.start <= i && i < frame.step.stop);
    }
  }

  click(event) {
    const zoom = event.target.closest(".tv-diff-zoom");
    if (zoom) {                  // the graph fits the pane's width, or is drawn at the readable scale
      const actual = this.ui.diff.querySelector(".tv-diff-graph").classList.toggle("tv-diff-actual");
      zoom.textContent = actual ? "fit" : "1:1";
      return;
    }
    const entry = event.target.closest("[data-diff-eqn]");
    const node = event.target.closest("g.node");
    const name = node ? node.querySelector("title")?.textContent : undefined;
    const nodes = this.part.nodes || {};
    const eqn = entry ? Number(entry.dataset.diffEqn) : Object.hasOwn(nodes, name ?? "") ? nodes[name] : undefined;
    if (eqn !== undefined) this.view.send({ action: "diff_goto", eqn });
  }
}

class View {
  constructor(model, root) {
    this.model = model;
    this.root = root;
    root.classList.add("tv-root");
    root.tabIndex = 0;             // focusable: its keys (KEYS) work while it has focus
    this.ui = skeleton(root);
    this.graph = new GraphPane(this);
    this.listing = new Listing(this);
    this.outline = new Outline(this);
    this.diffPane = new DiffPane(this);
    this.reversed = false;         // the "backwards" toggle of the stepping-by-call buttons
    this.playing = null;
    this.listen();
    this.onMessage = (msg) => this.answer(msg);
    this.onChange = {};
    this.dirty = new Set();
    this.seq = 0;                  // the last action this view sent; frames echo it and the view's name
    this.name = Math.random().toString(36).slice(2);
    this.guessed = null;           // the traits of a step painted ahead of the kernel's answer
    this.fresh = false;            // ... not painted yet
    this.scheduled = false;        // a frame is asked for
    this.skipped = false;          // frames older than the last action were not painted
    this.ahead = new Map();        // `${context}#${index}` -> a step sent ahead
    this.asked = new Set();
    this.applied = {};             // trait -> the markup in the DOM
    this.residualRows = new Map(); // markup -> row
    this.residualsAsked = false;   // the residuals' frame is asked for
    for (const trait of TRAITS) {
      this.onChange[trait] = () => this.invalidate(trait);
      model.on(`change:${trait}`, this.onChange[trait]);
    }
    model.on("msg:custom", this.onMessage);
    this.dirty = new Set(TRAITS);
    this.flush();
    this.ui.status.hidden = false;
    this.ui.status.textContent = "no kernel has answered yet: this is the state the debugger was saved in; " +
      "run its cell again to step through it";
    this.send({ action: "hello" });
  }

  /* One update changes several traits, each announced on its own, and clicks may come faster
     than frames: the view writes the DOM once per frame, in an animation frame, for all of them
     (one pass over the classes, one layout). */
  invalidate(trait) {
    this.dirty.add(trait);
    this.schedule();
  }

  schedule() {
    if (this.scheduled) return;
    this.scheduled = true;
    requestAnimationFrame(() => {
      this.scheduled = false;
      this.flush();
    });
  }

  flush() {
    let dirty = this.dirty;
    this.dirty = new Set();
    const frame = this.model.get("_frame");
    if (frame && frame.by === this.name && frame.seq < this.seq) {   // a newer action's answer is coming
      this.skipped = true;
      if (!this.fresh) return;                                        // a guess for it is not shown yet
    } else if (this.guessed || this.skipped) {
      dirty = new Set(TRAITS);                                        // the kernel's answer, whole
      this.guessed = null;
      this.skipped = false;
    }
    this.fresh = false;
    this.paint(dirty);
    if (!this.guessed) this.prefetch();
  }

  /* Paint the dirty traits; what is already on screen (the kernel confirming a guess, most
     often) is not painted again. */
  paint(dirty) {
    let changed = false;
    for (const [trait, part] of HTML_PARTS) {
      if (!dirty.has(trait)) continue;
      const html = this.value(trait) || "";
      if (this.applied[trait] === html) continue;
      this.applied[trait] = html;
      changed = true;
      if (part === "listing") this.listing.show(html);
      else if (part === "residuals") this.paintResiduals(html);
      else this.ui[part].innerHTML = html;
      if (part === "closure") this.ui.closure.hidden = !html;
    }
    const outline = this.model.get("_outline");
    if (dirty.has("_outline") && this.applied._outline !== outline) {
      this.applied._outline = outline;
      this.outline.show(outline);
      changed = true;
    }
    const diff = this.model.get("_diff");
    if (dirty.has("_diff") && this.applied._diff !== diff) {
      this.applied._diff = diff;
      this.diffPane.show(diff);
    }
    this.diffPane.mark(this.frame);
    const legend = this.model.get("_legend") || "";
    if (dirty.has("_legend") && this.applied._legend !== legend) {
      this.applied._legend = legend;
      this.ui.legend.innerHTML = legend;
      changed = true;
    }
    const frame = JSON.stringify({ ...this.frame, seq: 0 });
    if (changed || frame !== this.painted) this.paintFrame();
    this.painted = frame;
    this.ui.phase.dataset.confirmed = String(!this.guessed);
    this.paintGraph();
    this.listing.commit();
  }

  /* The residuals table, below the listing, follows in the next frame (as the drawing does):
     the step's phase line, listing and values reach the screen first. */
  paintResiduals(html) {
    this.residualsHtml = html;
    if (this.residualsAsked) return;
    this.residualsAsked = true;
    requestAnimationFrame(() => {
      this.residualsAsked = false;
      refill(this.ui.residuals, this.residualsHtml, this.residualRows);
      this.decorate(this.ui.residuals);
    });
  }

  /* A trait as shown: the guessed step's, else the model's. */
  value(trait) {
    return this.guessed && trait in this.guessed ? this.guessed[trait] : this.model.get(trait);
  }

  /* An action for the kernel; one that redraws carries seq (the frame that answers echoes it). */
  send(msg) {
    if (["hello", "graphviz", "svg", "ahead", "export"].includes(msg.action)) {
      this.model.send(msg);
      return;
    }
    this.seq += 1;
    this.model.send({ ...msg, seq: this.seq, view: this.name });
  }

  /* A step (first, prev, next, last, or the slider's index): painted at once when it was sent
     ahead, and asked of the kernel, which confirms it. */
  stepTo(action, index) {
    const frame = this.frame;
    const target = action === "step" ? index : action === "last" ? frame.step.n - 1
      : STEPPING[action](frame.step.index);
    this.send(action === "step" ? { action, index } : { action });
    if (this.guess(frame, target)) this.prefetch("step_into");
  }

  /* Paint step target at once when it was sent ahead (the kernel's answer confirms it; a move
     that lands on a step says nothing, so the message goes); false when it was not. */
  guess(frame, target) {
    const hit = this.ahead.get(`${frame.context}#${Math.min(Math.max(target, 0), frame.step.n - 1)}`);
    if (!frame.context || !hit) return false;
    this.guessed = { _frame: { ...frame, step: hit.step, window: hit.window, seq: this.seq, message: "" },
      _dot: hit.dot, _inspector: hit.inspector, _residuals: hit.residuals, _listing: hit.listing };
    this.fresh = true;
    for (const trait of TRAITS) this.dirty.add(trait);
    this.schedule();
    return true;
  }

  /* A move by call (step into, over, out; cont and failure too, never guessed), asked of the
     kernel and painted at once when the step shown was sent ahead with where the move goes from
     it (moves_part) and that step was sent ahead too. */
  move(action, reverse) {
    const frame = this.frame;
    const to = this.movesOf(frame)?.[action]?.[reverse ? 1 : 0];
    this.send({ action, reverse });
    if (to !== undefined && to !== null && this.guess(frame, to)) this.prefetch(action);
  }

  movesOf(frame) {
    return frame && frame.context ? this.ahead.get(`${frame.context}#${frame.step.index}`)?.moves : undefined;
  }

  /* Ask for the steps a click may show next that the view does not have: the step shown (a
     guess, or the kernel's) and, once its part says where its moves go, those steps: step into
     both ways (so prev and next too), step over and out the way the buttons go (the "backwards"
     toggle); for the last kind of click (chased: "step_into" for prev and next), where it goes
     from there too, so clicks one after the other stay a step ahead of the kernel. A few steps
     each time (most were sent before): the kernel answers them before the click that follows. */
  prefetch(chased = this.chased) {
    const frame = this.frame;
    if (!frame || !frame.context) return;
    this.chased = chased;
    const wanted = [];
    this.want(frame, frame.step.index, wanted);
    const moves = this.movesOf(frame), way = this.reversed ? 1 : 0;
    for (const action of moves ? MOVES : []) {
      for (const d of action === "step_into" ? [0, 1] : [way]) {
        const j = moves[action][d];
        if (j === null) continue;
        this.want(frame, j, wanted);
        const then = action === chased && this.ahead.get(`${frame.context}#${j}`)?.moves?.[action][d];
        if (typeof then === "number") this.want(frame, then, wanted);
      }
    }
    if (wanted.length) this.send({ action: "ahead", indices: wanted });
  }

  /* Step j of frame's context into wanted, unless the view has it or asked for it. */
  want(frame, j, wanted) {
    const key = `${frame.context}#${j}`;
    if (this.ahead.has(key) || this.asked.has(key) || wanted.includes(j)) return;
    wanted.push(j);
    this.asked.add(key);
  }

  /* The steps sent ahead, kept; a step without rows of its own is in the window the kernel had
     when it answered, whose rows are the model's now (its traits come before its answers). */
  keep(msg) {
    const text = (k) => (k === undefined ? undefined : msg.texts[k]);
    const rows = this.model.get("_listing");
    for (const part of msg.steps) {
      const key = `${msg.context}#${part.index}`;
      this.asked.delete(key);
      this.ahead.delete(key);
      this.ahead.set(key, { step: part.step, window: part.window, dot: text(part.dot),
        inspector: text(part.inspector), residuals: text(part.residuals), listing: text(part.listing) ?? rows,
        moves: part.moves });
      if (this.ahead.size > AHEAD_CACHE) this.ahead.delete(this.ahead.keys().next().value);
      this.graph.prefetch(text(part.dot));
    }
    if (this.asked.size > 4 * AHEAD_CACHE) this.asked.clear();
    this.prefetch();                       // the step shown, or where its moves go, may have come
  }

  get frame() {
    return this.value("_frame");
  }

  listen() {
    const { ui } = this;
    const on = (node, action) => node.addEventListener("click", () => this.send({ action }));
    // stepping by call: Shift, or the "backwards" toggle, goes towards the start of the tape
    const back = (event) => this.reversed !== event.shiftKey;
    // what a button (or its key, KEYS) does, given the click or the key's event
    this.presses = {
      stepInto: (event) => this.move("step_into", back(event)),   // the next (previous) step: painted at once
      breakpoint: () => {                                     // at the cursor: its step's first equation
        const { step, breakpoints } = this.frame;
        this.send({ action: "breakpoint", target: step.current, on: !(breakpoints || []).includes(step.current) });
      },
      keys: () => { ui.keys.open = !ui.keys.open; },
    };
    for (const action of ["first", "prev", "next", "last"]) this.presses[action] = () => this.stepTo(action);
    for (const [name, action] of [["stepOver", "step_over"], ["stepOut", "step_out"], ["cont", "cont"],
      ["failure", "failure"]]) {
      this.presses[name] = (event) => this.move(action, back(event));
    }
    for (const name of ["first", "prev", "next", "last", "stepInto", "stepOver", "stepOut", "cont", "failure"]) {
      ui[name].addEventListener("click", this.presses[name]);
    }
    this.onKey = (event) => this.key(event);
    window.addEventListener("keydown", this.onKey, true);
    on(ui.goto, "goto"); on(ui.check, "checks");
    ui.nonfinite.addEventListener("click", (event) => this.send({ action: "nonfinite", from_cursor: !back(event) }));
    ui.reverse.addEventListener("click", () => {
      this.reversed = !this.reversed;
      ui.reverse.setAttribute("aria-pressed", String(this.reversed));
      this.root.classList.toggle("tv-reversed", this.reversed);
    });
    ui.breakpoints.addEventListener("click", (event) => {
      const chip = event.target.closest("[data-target]");
      if (chip) this.send({ action: "breakpoint", target: JSON.parse(chip.dataset.target), on: false });
    });
    ui.listing.addEventListener("mouseover", (event) => {
      const gutter = event.target.closest(".tv-gutter");
      if (gutter && !gutter.title) gutter.title = GUTTER_TITLE;
    });
    ui.play.addEventListener("click", () => this.togglePlay());
    ui.slider.addEventListener("input", () => { ui.counter.textContent = `${ui.slider.value} / ${ui.slider.max}`; });
    ui.slider.addEventListener("change", () => this.stepTo("step", Number(ui.slider.value) - 1));
    ui.pullback.addEventListener("click", () => this.send({ action: "granularity", value: "pullback" }));
    ui.primitive.addEventListener("click", () => this.send({ action: "granularity", value: "primitive" }));
    ui.pick.addEventListener("change", () => this.send({ action: "select", name: ui.pick.value }));
    ui.closureToggle.addEventListener("click", () => this.send({ action: "closure", on: !this.frame.closure }));
    ui.viewAround.addEventListener("click", () => this.send({ action: "graph_view", value: "around" }));
    ui.viewCalls.addEventListener("click", () => this.send({ action: "graph_view", value: "calls" }));
    ui.svg.addEventListener("click", () => this.send({ action: "export", format: "svg" }));
    ui.dotButton.addEventListener("click", () => this.send({ action: "export", format: "dot" }));
    ui.alerts.addEventListener("click", (event) => {
      const alert = event.target.closest("[data-alert]");
      if (alert) this.send({ action: "alert", k: Number(alert.dataset.alert) });
    });
    // a click on any variable (listing, inspector, residuals, closure panel) or graph node selects it
    this.root.addEventListener("click", (event) => {
      const gutter = event.target.closest(".tv-listing .tv-gutter");
      if (gutter) {                // the left edge of an equation's line: its breakpoint
        const line = gutter.closest(".tv-eq[data-var]");
        if (line) {
          this.send({ action: "breakpoint", target: line.dataset.var, on: !line.classList.contains("tv-bp") });
        }
        return;
      }
      const node = event.target.closest("g.node");
      if (this.graph.dragged) {
        this.graph.dragged = false;
        if (node || event.target.closest(".tv-graph-view g.cluster")) return;   // a pan ended there
      }
      if (node && node.id.startsWith("tvn_")) {
        this.send({ action: "select", name: node.id.slice(4).replace(/^eq\//, "") });
        return;
      }
      const stub = node && /^tvu_\d+_(.+)$/.exec(node.id);       // the calls view's stub of a value
      if (stub) {
        this.send({ action: "select", name: stub[1] });
        return;
      }
      // the calls view: a call's (or a folded group's) node opens it, an opened one's title closes it
      const call = node && /^tv([cg])_[fbt](\d+)$/.exec(node.id);
      const title = !node && event.target.closest(".tv-graph g.cluster text") && event.target.closest("g.cluster");
      const opened = title && /^tvo_([cg])[fbt](\d+)$/.exec(title.id);
      if (call || opened) {
        const [, kind, k] = call || opened;
        if (call) this.graph.opened = `g.cluster[id="tvo_${kind}f${k}"]`;
        this.send({ action: call ? "open_call" : "close_call", [kind === "c" ? "call" : "group"]: Number(k) });
        return;
      }
      const target = event.target.closest("[data-var]");
      if (target && !target.closest(".tv-phase") && this.root.contains(target)) {
        this.send({ action: "select", name: target.dataset.var });
      }
    });
  }

  /* A key of KEYS while the debugger has focus: listened for on the window before anything else
     sees it (capture), so that a key the debugger takes reaches no notebook command (JupyterLab
     and Notebook 7 listen on the document), and every other key passes untouched. */
  key(event) {
    const path = event.composedPath();
    const target = path[0];
    if (event.ctrlKey || event.altKey || event.metaKey || !path.includes(this.root)) return;
    if (["INPUT", "TEXTAREA", "SELECT"].includes(target.tagName) || target.isContentEditable) return;
    const [name] = KEYS[event.key.length === 1 ? event.key.toLowerCase() : event.key] || [];
    if (!name) return;
    event.preventDefault();
    event.stopPropagation();
    this.presses[name](event);
  }

  togglePlay() {
    if (this.playing !== null) {
      clearInterval(this.playing);
      this.playing = null;
    } else {
      if (this.frame.step.index >= this.frame.step.n - 1) this.stepTo("first");
      this.playing = setInterval(() => {
        if (this.frame.step.index >= this.frame.step.n - 1) this.togglePlay();
        else this.stepTo("next");
      }, PLAY_MS);
    }
    this.ui.play.textContent = this.playing === null ? "\u25b6 play" : "\u23f8 pause";
    this.ui.play.setAttribute("aria-pressed", String(this.playing !== null));
  }

  answer(msg) {
    if (msg.kind === "hello") {
      this.ui.status.hidden = !msg.static;
      this.ui.status.textContent = msg.static ? msg.static : "";
    } else if (msg.kind === "file") {
      this.offer(msg);
    } else if (msg.kind === "ahead") {
      this.keep(msg);
    } else {
      this.graph.answer(msg);
    }
  }

  offer(file) {
    if (this.download) URL.revokeObjectURL(this.download);
    this.download = URL.createObjectURL(new Blob([file.data], { type: file.mime }));
    const link = el("a", { class: "tv-download-link", download: file.name, href: this.download,
      text: `\u2b07 ${file.name} (${file.size.toLocaleString("en")} bytes)` });
    this.ui.download.replaceChildren(link);
  }

  paintGraph() {
    this.graph.draw(this.value("_dot"));
  }

  paintFrame() {
    const frame = this.frame;
    const { ui } = this;
    const step = frame.step;
    ui.phase.dataset.phase = step.phase;
    ui.phase.dataset.step = step.index;
    ui.phase.dataset.steps = step.n;
    ui.phase.dataset.current = step.current;
    ui.phase.dataset.granularity = frame.granularity;
    ui.phase.dataset.selected = frame.selected || "";
    ui.phase.dataset.checks = frame.checks.state;
    setText(ui.phaseText, step.text);
    setText(ui.phaseWrites, `writes ${step.writes}`);
    const scope = step.scope || frame.scope || [];
    ui.phase.dataset.scope = scope.join("/");
    setText(ui.phaseScope, scope.length ? `in ${scope.join(" \u203a ")}` : "");
    this.paintBreakpoints(frame);
    setProperty(ui.slider, "max", String(step.n));
    setProperty(ui.slider, "value", String(step.index + 1));
    setText(ui.counter, `${step.index + 1} / ${step.n}`);
    const forward = frame.mode === "forward";           // a linearization: blocks are pushforwards
    setText(ui.pullback, forward ? "by pushforward" : "by pullback");
    setProperty(ui.pullback, "title", forward ? "one primal equation or pushforward block per step"
      : "one rule instance or pullback block per step");
    for (const [node, value] of [[ui.pullback, "pullback"], [ui.primitive, "primitive"]]) {
      setProperty(node, "ariaPressed", String(frame.granularity === value));
    }
    this.root.classList.toggle("tv-gran-primitive", frame.granularity === "primitive");
    setProperty(ui.closureToggle, "ariaPressed", String(frame.closure));
    if (document.activeElement !== ui.pick) ui.pick.value = frame.selected || "";
    setText(ui.message, frame.message || "");
    const calls = frame.pane.view === "calls";
    setText(ui.caption, calls ? "the program's calls, the cursor's opened; click a call to open it, an opened " +
      "one's title to close it, drag to pan" : `equations within ${frame.pane.k} steps of #${step.start}; click ` +
      "a node to inspect it, drag to pan");
    setProperty(ui.viewAround, "ariaPressed", String(!calls));
    setProperty(ui.viewCalls, "ariaPressed", String(calls));
    const offline = frame.pane.view === undefined;        // a page that does not draw the calls view
    setProperty(ui.viewCalls, "disabled", offline);
    if (offline) setProperty(ui.viewCalls, "title", "the calls view needs a running kernel: this page draws the " +
      "cursor's neighbourhood only");
    const checks = JSON.stringify(frame.checks);       // most steps change no check: no relayout
    if (checks !== this.checksShown) this.paintChecks(frame.checks);
    this.checksShown = checks;
    this.decorate(this.root);
    this.outline.paint(frame);
    const at = `${frame.granularity} ${step.start}`;     // a selection keeps where the user scrolled
    if (at !== this.revealed) this.listing.reveal(step);
    this.revealed = at;
  }

  /* The breakpoints' chips. */
  paintBreakpoints(frame) {
    const { ui } = this;
    const targets = frame.breakpoints || [];
    const shown = JSON.stringify(targets);
    if (shown === this.breakpointsShown) return;
    this.breakpointsShown = shown;
    ui.breakpoints.dataset.count = String(targets.length);
    ui.breakpoints.replaceChildren(
      el("span", targets.length ? { class: "tv-caption", text: "breakpoints:" }
        : { class: "tv-caption", text: "no breakpoints", title: "click the left edge of a line in the listing, " +
          "or of a call in the outline, to set one (b: at the cursor)" }),
      ...targets.map((t) => el("button", { class: "tv-bp-chip", type: "button", "data-target": JSON.stringify(t),
        title: `clear the breakpoint at ${describeTarget(t)}`, text: `\u25cf ${describeTarget(t)} \u00d7` })));
  }

  paintChecks(checks) {
    const { ui } = this;
    ui.progress.hidden = checks.state === "none";
    ui.progress.max = Math.max(checks.total, 1);
    ui.progress.value = checks.done;
    ui.progress.dataset.state = checks.state;
    ui.summary.replaceChildren();
    if (checks.summary) {
      const verdict = el("span", { class: checks.state === "pass" ? "tv-good" : checks.state === "running" ? "" : "tv-bad",
        text: checks.summary });
      if (checks.state === "pass" || checks.state === "fail") verdict.dataset.ok = String(checks.state === "pass");
      ui.summary.append(verdict);
    }
    ui.check.disabled = checks.state === "running" || !!checks.offline;
    if (checks.offline) ui.check.title = checks.offline;
    if (checks.state === "pass" || checks.state === "fail") {
      const items = checks.alerts.map((alert, k) => el("button", {
        class: `tv-alert tv-alert-${alert.status}${k === checks.current ? " tv-alert-current" : ""}`,
        type: "button", "data-alert": String(k), title: alert.message, text: alert.label }));
      ui.alerts.replaceChildren(...(items.length ? items :
        [el("span", { class: "tv-good", text: "no failures or warnings" })]));
    }
  }

  /* The classes that depend on the cursor and the selection, on Python's cursor-free HTML. */
  decorate(scope) {
    const frame = this.frame;
    if (!frame || !frame.step) return;
    const step = frame.step;
    const sel = frame.sel || { partners: [], vars: [], producer: null };
    const partners = new Set(sel.partners);
    const partnerVars = new Set(sel.vars);
    const written = new Set(step.written);
    const breakpoints = new Set((frame.breakpoints || []).filter((t) => !Array.isArray(t)));
    for (const node of scope.querySelectorAll(".tv-listing .tv-eq[data-eq]")) {
      const i = Number(node.dataset.eq);
      const place = when(i, step);
      node.classList.toggle("tv-done", place === "done");
      node.classList.toggle("tv-current", place === "current");
      node.classList.toggle("tv-future", place === "future");
      node.classList.toggle("tv-partner", partners.has(i));
      node.classList.toggle("tv-sel", i === sel.producer);
      node.classList.toggle("tv-bp", breakpoints.has(node.dataset.var));
    }
    for (const node of scope.querySelectorAll(".tv-listing tr[data-row]")) {
      node.classList.toggle("tv-cursor-row", Number(node.dataset.row) === step.row);
    }
    for (const node of scope.querySelectorAll(".tv-input[data-var]")) {
      node.classList.toggle("tv-sel", node.dataset.var === frame.selected);
    }
    for (const node of scope.querySelectorAll(".tv-var[data-var]")) {
      const name = node.dataset.var;
      node.classList.toggle("tv-written", written.has(name));
      node.classList.toggle("tv-partner-var", partnerVars.has(name));
      node.classList.toggle("tv-selected", name === frame.selected);
    }
    for (const node of scope.querySelectorAll(".tv-card[data-eq]")) node.dataset.when = when(Number(node.dataset.eq), step);
    // the cursor on the lifetimes (80 px wide) moves by half pixels: most steps of a long tape move none
    const marker = `${Math.round(160 * step.start / Math.max(frame.eqns, 1)) * 0.625}%`;
    for (const node of scope.querySelectorAll(".tv-residuals tr[data-first]")) {
      node.classList.toggle("tv-live", Number(node.dataset.first) <= step.start && step.start <= Number(node.dataset.last));
      const cursor = node.querySelector(".tv-life i");
      if (cursor && cursor.style.left !== marker) cursor.style.left = marker;
    }
  }

  /* Rows the listing just put in the DOM, decorated for the frame shown. */
  decorateRows(rows) {
    const step = this.frame && this.frame.step;
    if (!step) return;
    for (const row of rows) {
      if (row.dataset.row !== undefined) row.classList.toggle("tv-cursor-row", Number(row.dataset.row) === step.row);
      this.decorate(row);
    }
  }

  dispose() {
    if (this.playing !== null) clearInterval(this.playing);
    this.listing.dispose();
    for (const [trait, handler] of Object.entries(this.onChange)) this.model.off(`change:${trait}`, handler);
    this.model.off("msg:custom", this.onMessage);
    window.removeEventListener("keydown", this.onKey, true);
    if (this.download) URL.revokeObjectURL(this.download);
  }
}

/* The graph pane's Graphviz source for any step of a static page, written here from what the
   page embeds once (tapeviz/debugger/graph_pane.py, pane_data: each node's label rows and
   tooltip, escaped by Python, its cluster and look; tape_part: the equations' operands and
   results): the neighbourhood of the cursor's equation (k equations each way), the current
   equation framed, what the step wrote and failed checks tinted. It is the text the kernel's
   GraphPane.dot writes, byte for byte: tapeviz/draw.py's _Canvas for a window of the detail
   graph, ported (a test compares them at every step). Nodes are numbers: equation i is i,
   variable v is neqns + v. */
const PHASES = ["forward", "backward", "tangent"];
const EDGE_KINDS = ["data", "residual", "accumulate"];
const TOPS = ["cluster_forward", "cluster_tangent", "cluster_backward"];
const dotQuoted = (text) => text.replace(/\\/g, "\\\\").replace(/"/g, '\\"');     // graph_pane.py's dot_value
const dotTip = (text) => dotQuoted(text.replace(/&/g, "&amp;"));                       // ... of dot_text

class PaneSource {
  constructor(tape, graph, dots) {
    this.tape = tape;
    this.g = graph;
    this.dots = dots;
    const neqns = this.neqns = tape.outputs.length;
    this.readers = tape.vars.map(() => []);
    tape.inputs.forEach((operands, i) => {
      for (let j = 0; j < operands.length; j += 2) this.readers[operands[j]].push(i);
    });
    /* Shared nodes (tapeviz.graph.shared_fan): a variable read by more than graph.shared
       equations, an equation with more operand variables; the window stops at them. */
    this.fan = new Map();                     // node -> [its readers or operands (nodes), what]
    tape.inputs.forEach((operands, i) => {
      const distinct = new Set();
      for (let j = 0; j < operands.length; j += 2) distinct.add(neqns + operands[j]);
      if (distinct.size > graph.shared) this.fan.set(i, [[...distinct], "operands"]);
    });
    this.readers.forEach((readers, v) => {
      const distinct = new Set(readers);
      if (distinct.size > graph.shared) this.fan.set(neqns + v, [[...distinct], "readers"]);
    });
    this.order = new Int32Array(neqns + tape.vars.length);      // inputs, then each equation and its results
    let o = 0;
    tape.producer.forEach((p, v) => { if (p < 0) this.order[neqns + v] = o++; });
    tape.outputs.forEach((outputs, i) => {
      this.order[i] = o++;
      for (const v of outputs) this.order[neqns + v] = o++;
    });
    this.failTinted = new Set(graph.failTinted);
    this.rounded = new Set(graph.rounded.map((name) => graph.styles.indexOf(name)));
  }

  /* The nodes within k equations of equation start (either way), an equation with all its
     results, in tape order (tapeviz.graph.neighbourhood). */
  window(start) {
    const { tape, neqns } = this;
    const hops = this.g.k * this.g.hops;
    const seen = new Map([[start, 0]]);
    const queue = [start];
    for (let q = 0; q < queue.length; q++) {
      const n = queue[q], d = seen.get(n);
      if (d === hops || (n !== start && this.fan.has(n))) continue;
      const visit = (m) => {
        if (!seen.has(m)) {
          seen.set(m, d + 1);
          queue.push(m);
        }
      };
      if (n < neqns) {
        const operands = tape.inputs[n];
        for (let j = 0; j < operands.length; j += 2) visit(neqns + operands[j]);
        for (const v of tape.outputs[n]) visit(neqns + v);
      } else {
        const v = n - neqns;
        if (tape.producer[v] >= 0) visit(tape.producer[v]);
        for (const r of this.readers[v]) visit(r);
      }
    }
    const nodes = new Set(seen.keys());
    for (const n of seen.keys()) if (n < neqns) for (const v of tape.outputs[n]) nodes.add(neqns + v);
    return [...nodes].sort((a, b) => this.order[a] - this.order[b]);
  }

  /* The source for the step [start, stop) (its equations' results are tinted as written). */
  source(start, stop) {
    const { tape, g, dots, neqns } = this;
    const nodes = this.window(start);
    const drawn = new Set(nodes);
    const names = tape.vars;
    const written = new Set();
    for (let i = start; i < stop; i++) for (const v of tape.outputs[i]) written.add(v);
    const single = (i) => tape.outputs[i].length === 1;
    const id = (n) => (n >= neqns ? names[n - neqns] : single(n) ? names[tape.outputs[n][0]]
      : `eq/${names[tape.outputs[n][0]]}`);
    const phaseOf = (n) => PHASES[n < neqns ? tape.phase[n] : tape.vphase[n - neqns]];
    const scopeOf = (n) => {
      if (n < neqns) return tape.scope[n];
      const p = tape.producer[n - neqns];
      return p >= 0 ? tape.scope[p] : 0;
    };
    const scoped = nodes.some((n) => scopeOf(n) > 0);
    const clusters = new Map();                // name -> { parent, attrs, statements }, in the order made
    const scopeClusters = new Map();
    const scopeCluster = (phase, scope) => {
      if (scope === 0) {
        const name = `cluster_${phase}`;
        if (!clusters.has(name)) clusters.set(name, { parent: null, attrs: g.tops[phase], statements: [] });
        return name;
      }
      const key = `${phase} ${scope}`;
      let name = scopeClusters.get(key);
      if (name === undefined) {
        const parent = scopeCluster(phase, tape.scopes[scope][0]);
        name = `cluster_scope_${phase}_${scopeClusters.size}`;
        scopeClusters.set(key, name);
        clusters.set(name, { parent, attrs: g.scopeAttrs[phase][scope], statements: [] });
      }
      return name;
    };
    const statementsOf = (n) => {
      const phase = phaseOf(n);
      if (n >= neqns) {                          // a result drawn apart: in its equation's cluster
        const p = tape.producer[n - neqns];
        if (p >= 0 && drawn.has(p)) n = p;
      }
      const parent = scopeCluster(phase, scoped ? scopeOf(n) : 0);
      const block = n < neqns ? g.eq.block[n] : -1;
      if (block < 0) return clusters.get(parent).statements;
      const [name, attrs] = g.blocks[block];
      if (!clusters.has(name)) clusters.set(name, { parent, attrs, statements: [] });
      return clusters.get(name).statements;
    };
    const label = (cells, style, failed, current, tint) => {
      let [frame, background, width] = failed ? g.failedLook : g.looks[style];
      if (current) [frame, , width] = g.currentLook;
      background = tint || background;
      const rounded = this.rounded.has(style) ? ' STYLE="rounded"' : "";
      return `<<TABLE BORDER="${width}" CELLBORDER="0" CELLSPACING="0" CELLPADDING="2" COLOR="${frame}" ` +
        `BGCOLOR="${background}"${rounded}>${cells.map((c) => dots[c]).join("")}</TABLE>>`;
    };
    const tintOf = (v) => (written.has(v) ? g.tint : this.failTinted.has(v) ? g.failTint : null);
    for (const n of nodes) {
      let text, tip;
      if (n < neqns) {
        const tint = single(n) ? tintOf(tape.outputs[n][0]) : null;
        text = label(g.eq.cells[n], g.eq.style[n], g.eq.failed[n], n === start, tint);
        tip = g.eq.tip[n].map((f) => dots[f]).join("\n");
      } else {
        const v = n - neqns, p = tape.producer[v];
        if (p >= 0 && drawn.has(p) && single(p)) continue;     // drawn with its equation
        text = label(g.var.cells[v], g.var.style[v], g.var.failed[v], false, tintOf(v));
        tip = g.var.tip[v] ? g.var.tip[v].map((f) => dots[f]).join("\n") : dotTip(names[v]);
      }
      const name = id(n);
      statementsOf(n).push(`\t"${name}" [label=${text} tooltip="${tip}" id="tvn_${dotQuoted(name)}"]\n`);
    }
    const edges = [];
    const edge = (u, v, kind) => {
      const phase = phaseOf(v);
      const backward = phase === "backward" && kind !== "residual";
      if (kind === "data" && phase !== "forward") kind = phase;
      let [tail, head] = [id(u), id(v)];
      if (backward && g.upward) [tail, head] = [head, tail];
      edges.push(`\t"${tail}" -> "${head}"${g.edges[kind][backward ? 1 : 0]}\n`);
    };
    const ranks = [];
    for (const n of nodes) {
      if (n >= neqns) continue;
      const operands = tape.inputs[n];
      for (let j = 0; j < operands.length; j += 2) {
        if (drawn.has(neqns + operands[j])) edge(neqns + operands[j], n, EDGE_KINDS[operands[j + 1]]);
      }
      if (!single(n)) for (const v of tape.outputs[n]) edge(n, neqns + v, "data");
      const f = g.eq.align[n];
      if (f >= 0 && drawn.has(neqns + f)) ranks.push(`\t{rank=same; "${id(neqns + f)}"; "${id(n)}";}\n`);
    }
    const children = new Map();
    for (const [name, { parent }] of clusters) {
      if (!children.has(parent)) children.set(parent, []);
      children.get(parent).push(name);
    }
    const body = [g.head];
    const emit = (name, indent) => {
      const { attrs, statements } = clusters.get(name);
      body.push(`${indent}subgraph "${name}" {\n${indent}\tgraph ${attrs}\n`);
      for (const statement of statements) body.push(indent + statement);
      for (const child of children.get(name) || []) emit(child, `${indent}\t`);
      body.push(`${indent}}\n`);
    };
    for (const name of TOPS) if (clusters.has(name)) emit(name, "\t");
    const notes = [];                          // what the window left out at shared nodes (graph_pane's more_notes)
    for (const n of nodes) {
      const fan = this.fan.get(n);
      if (fan === undefined) continue;
      const missing = fan[0].filter((m) => !drawn.has(m)).length;
      if (missing === 0) continue;
      const name = n < neqns ? `eq/${names[tape.outputs[n][0]]}` : names[n - neqns];
      const note = `more/${name}`;
      notes.push(`\t"${note}" [label=<+${missing} more ${fan[1]}>${g.more[0]} id="tvm_${dotQuoted(name)}"]\n`);
      const [tail, head] = fan[1] === "operands" ? [note, id(n)] : [id(n), note];
      notes.push(`\t"${tail}" -> "${head}"${g.more[1]}\n`);
    }
    return body.join("") + edges.join("") + ranks.join("") + notes.join("") + "}\n";
  }
}

/* Where the moves by call go on a page with no kernel: tapeviz/debugger/navigation.py's
   Navigation, ported (its module docstring defines a step's scope, a call's span, a step's frame
   and each move; a test compares the two at every step of the RNN). It reads the step table
   (steps_part: each step's phase and scope), the tape (tape_part: each equation's phase and
   scope) and navigation_part (the equations with a NaN or an Inf, those a failing check marks).
   Every move takes the cursor (granularity, step index) and returns a step index, or null where
   Python returns None. Targets are in normal form: "%12" for an equation, a list for a scope. */
const NUMBERED = /^(.*)#(\d+)$/;
const NO_BREAKPOINTS = "no breakpoints: click the left edge of a line, or of a call in the outline, to set one";
const NO_CHECKS_RAN = "no checks had run when this page was written";
const spanKey = (phase, path) => JSON.stringify([phase, ...path]);
const isPrefix = (call, path) => call.length <= path.length && call.every((name, d) => path[d] === name);

/* A target the tape does not have; its message is the kernel's KeyError or TypeError. */
class TargetError extends Error {}

/* A target in normal form, unchecked (navigation.py's parse_target). */
function parseTarget(target) {
  if (typeof target === "string") {
    const text = target.trim().replace(/^eq\//, "");
    return text.startsWith("%") ? text : text.split("/").filter(Boolean);
  }
  if (Array.isArray(target) && target.every((p) => typeof p === "string")) return target;
  throw new TargetError(`a target is an equation ('%12') or a scope path (('cell#17',) or 'cell#17/sig'), ` +
    `not ${JSON.stringify(target)}`);
}

class Navigation {
  constructor(steps, tape, found) {
    this.steps = steps;
    this.tape = tape;
    this.found = found;
    this.vars = new Map(tape.vars.map((name, v) => [name, v]));
    this.scopeIndex = new Map([["[]", 0]]);        // a scope's path (JSON) -> its index in tape.scopes
    this.paths = [[]];
    this.children = tape.scopes.map(() => []);     // in call order
    tape.scopes.forEach(([parent, name], k) => {
      if (k === 0) return;
      const path = [...this.paths[parent], name];
      this.paths.push(path);
      this.scopeIndex.set(JSON.stringify(path), k);
      this.children[parent].push(k);
    });
    this.layouts = {};
    this.firsts = null;
  }

  stepOf(eqn, granularity) {
    const steps = this.steps[granularity];
    let lo = 0, hi = steps.length - 1;
    while (lo < hi) {                     // the last step starting at or before eqn
      const mid = (lo + hi + 1) >> 1;
      if (steps[mid].start <= eqn) lo = mid; else hi = mid - 1;
    }
    return lo;
  }

  /* The spans of the calls (phase and path -> { phase, path, first, last }) and each step's frame
     (its span), as Navigation._layout. */
  layout(g) {
    if (this.layouts[g]) return this.layouts[g];
    const steps = this.steps[g], spans = new Map();
    steps.forEach((s, k) => {
      for (let d = 0; d <= s.scope.length; d++) {
        const path = s.scope.slice(0, d), key = spanKey(s.phase, path), span = spans.get(key);
        if (span) span.last = k;
        else spans.set(key, { phase: s.phase, path, first: k, last: k });
      }
    });
    // the frame of each step: the span opened last among those still open (spans nest: outer
    // ones first when two open at one step)
    const order = [...spans.values()]
      .sort((a, b) => a.first - b.first || b.last - a.last || a.path.length - b.path.length);
    const frames = [], stack = [];
    for (let k = 0, p = 0; k < steps.length; k++) {
      while (p < order.length && order[p].first === k) stack.push(order[p++]);
      while (stack[stack.length - 1].last < k) stack.pop();
      frames.push(stack[stack.length - 1]);
    }
    return (this.layouts[g] = { spans, frames });
  }

  inRange(g, j) {
    return j >= 0 && j < this.steps[g].length ? j : null;
  }

  stepInto(g, k, reverse) {
    return this.inRange(g, k + (reverse ? -1 : 1));
  }

  stepOver(g, k, reverse) {
    const { spans, frames } = this.layout(g), n = frames.length;
    const frame = frames[k].path, depth = frame.length;
    let j = k + (reverse ? -1 : 1);
    while (j >= 0 && j < n) {
      const { phase, path } = frames[j];
      if (path.length <= depth || !isPrefix(frame, path)) return j;
      const call = spans.get(spanKey(phase, path.slice(0, depth + 1)));      // the call made from the frame
      j = reverse ? call.first - 1 : call.last + 1;
    }
    return null;
  }

  stepOut(g, k, reverse) {
    const { first, last } = this.layout(g).frames[k];
    return this.inRange(g, reverse ? first - 1 : last + 1);
  }

  /* A target in normal form (parseTarget), checked against the tape (Navigation.target);
     TargetError with the kernel's message for an unknown one. */
  target(target) {
    const t = parseTarget(target);
    if (Array.isArray(t)) return this.scope(t);
    const v = this.vars.get(t);
    if (v === undefined) {
      throw new TargetError(`'${t}' is not a variable of this tape; equations are named by their first ` +
        `output, '%0' to '%${this.vars.size - 1}' as in the listing`);
    }
    if (this.tape.producer[v] < 0) throw new TargetError(`'${t}' is an input of the tape: no equation computes it`);
    return t;
  }

  /* A scope path checked as ad.scopes.Scope.find checks it, with Navigation._group_hint. */
  scope(path) {
    let k = 0;
    for (let d = 0; d < path.length; d++) {
      const next = this.scopeIndex.get(JSON.stringify(path.slice(0, d + 1)));
      if (next === undefined) {
        const name = path.slice(0, d).join("/") || "the traced function";
        throw new TargetError(`no scope '${path.join("/")}': '${path.slice(0, d + 1).join("/")}' is not a call ` +
          `made in '${name}'` + (d === path.length - 1 ? this.groupHint(k, path[d]) : ""));
      }
      k = next;
    }
    return path;
  }

  groupHint(parent, base) {
    const calls = this.children[parent].map((c) => this.tape.scopes[c][1])
      .filter((name) => name !== base && NUMBERED.exec(name)?.[1] === base);
    return calls.length ? ` ('${base}' was called ${calls.length} times: name one call, '${calls[0]}' to ` +
      `'${calls[calls.length - 1]}')` : "";
  }

  /* A scope's first equation in each phase (codes of PHASES), its callees' included. */
  firstEquations() {
    if (this.firsts) return this.firsts;
    const { tape } = this, firsts = PHASES.map(() => new Array(tape.scopes.length).fill(-1));
    tape.scope.forEach((s, i) => {
      const first = firsts[tape.phase[i]];
      for (let k = s; k >= 0 && first[k] < 0; k = tape.scopes[k][0]) first[k] = i;
    });
    return (this.firsts = firsts);
  }

  /* The steps where a target (normal form) is hit, in order: an equation's step; a scope's
     first step in each phase. */
  hits(target, g) {
    if (typeof target === "string") return [this.stepOf(this.tape.producer[this.vars.get(target)], g)];
    const k = this.scopeIndex.get(JSON.stringify(target));
    const steps = this.firstEquations().filter((first) => first[k] >= 0).map((first) => this.stepOf(first[k], g));
    return [...new Set(steps)].sort((a, b) => a - b);
  }

  runTo(g, k, target) {
    const hits = this.hits(target, g), phase = this.steps[g][k].phase;
    return hits.find((j) => this.steps[g][j].phase === phase) ?? hits[0];
  }

  /* The first step after k (before it, with reverse) where one of targets is hit, with the
     targets hit there: { index, targets }; null when none is. */
  nextHit(targets, g, k, reverse) {
    const at = new Map();
    for (const t of targets) {
      for (const j of this.hits(t, g)) {
        if (reverse ? j < k : j > k) at.set(j, [...(at.get(j) || []), t]);
      }
    }
    if (!at.size) return null;
    const index = reverse ? Math.max(...at.keys()) : Math.min(...at.keys());
    return { index, targets: at.get(index) };
  }

  nonfinite(g, k, fromCursor) {
    const eqns = this.found.nonfinite, p = firstAtLeast(eqns, fromCursor ? this.steps[g][k].stop : 0);
    return p < eqns.length ? this.stepOf(eqns[p], g) : null;
  }

  failure(g, k, reverse) {
    const failing = this.found.failing, s = this.steps[g][k];
    if (reverse) {
      const p = firstAtLeast(failing, s.start);
      return p ? this.stepOf(failing[p - 1], g) : null;
    }
    const p = firstAtLeast(failing, s.stop);
    return p < failing.length ? this.stepOf(failing[p], g) : null;
  }
}

/* The position of the first item of a sorted list that is at least x (Python's bisect_left). */
function firstAtLeast(list, x) {
  let lo = 0, hi = list.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (list[mid] < x) lo = mid + 1; else hi = mid;
  }
  return lo;
}

/* The graph pane's calls view on a static page: tapeviz/debugger/calls_drawing.py ported, its
   calls_dot (the text the kernel's CallsPane.dot writes, byte for byte: a test compares them),
   and calls_pane.py's CallsPane's open set (the cursor's chain of calls opened, the user's opens and closes on
   top, each opened group's window placed around its anchor). It reads calls_data, which
   the page embeds once (its equations' scopes and phases are the tape's), and the equations'
   nodes from the neighbourhood's pane data. A call is ["call", k] or ["group", g]. */
const LETTERS = "fbt";
const CALL_EDGE_KINDS = ["data", "residual", "accumulate"];

/* The tables' edges, which a page leaves out (calls_tables.py: the pass's edges, and
   _edges_within_groups), made from the tape's operands: per scope the operands whose producer and
   reader meet at its level ([tail, head, kind] flattened, an input -1 - j); those between two calls
   of one group moved to the group's table by slot. */
function callEdges(data, tape) {
  const sc = data.scopes, gr = data.groups, { parent, depth } = sc;
  const meet = (a, b) => {
    while (depth[a] > depth[b]) a = parent[a];
    while (depth[b] > depth[a]) b = parent[b];
    while (a !== b) [a, b] = [parent[a], parent[b]];
    return a;
  };
  const edges = parent.map(() => []);
  tape.inputs.forEach((operands, i) => {
    const k = tape.scope[i];
    for (let j = 0; j < operands.length; j += 2) {
      const v = operands[j], p = tape.producer[v];
      const tail = p >= 0 ? p : -1 - v;               // the tape's inputs are its first variables
      const pk = p >= 0 ? tape.scope[p] : 0;
      edges[pk === k ? k : meet(pk, k)].push(tail, i, operands[j + 1]);
    }
  });
  const loose = new Map();
  gr.loose.forEach((xs, g) => xs.forEach((x, n) => loose.set(x, [g, gr.looseSlot[g][n]])));
  gr.edges = gr.calls.map((calls) => calls.map(() => []));
  for (const level of [...new Set(gr.parent)].sort((a, b) => a - b)) {
    const at = (x) => {
      if (x < 0) return null;
      let c = tape.scope[x];
      if (c === level) return loose.get(x) ?? null;
      while (depth[c] > depth[level] + 1) c = parent[c];
      return sc.group[c] >= 0 ? [sc.group[c], sc.slot[c]] : null;
    };
    const kept = [], flat = edges[level];
    for (let n = 0; n < flat.length; n += 3) {
      const tail = at(flat[n]), head = at(flat[n + 1]), edge = flat.slice(n, n + 3);
      if (tail !== null && head !== null && tail[0] === head[0]) {
        const table = gr.edges[tail[0]];
        table[tail[1]].push(...edge);
        if (head[1] !== tail[1]) table[head[1]].push(...edge);
      } else {
        kept.push(...edge);
      }
    }
    edges[level] = kept;
  }
  sc.edges = edges;
}

class CallsSource {
  constructor(data, tape, graph, dots) {
    if (!data.scopes.edges) callEdges(data, tape);
    this.d = data;
    this.sc = data.scopes;
    this.gr = data.groups;
    this.tape = tape;
    this.g = graph;
    this.dots = dots;
    this.eqScope = data.eqScope ?? tape.scope;
    this.eqPhase = data.eqPhase ?? tape.phase;
    this.loose = new Map();
    this.gr.loose.forEach((xs, g) => xs.forEach((x, n) => this.loose.set(x, [g, this.gr.looseSlot[g][n]])));
    this.paths = [[]];
    for (let k = 1; k < this.sc.parent.length; k++) this.paths.push([...this.paths[this.sc.parent[k]], this.sc.call[k]]);
    this.keys = new Map();                    // a path (JSON) -> its call, a call before a group
    this.paths.forEach((path, k) => this.keys.set(JSON.stringify(path), ["call", k]));
    this.gr.key.forEach((path, g) => { if (!this.keys.has(JSON.stringify(path))) this.keys.set(JSON.stringify(path), ["group", g]); });
    this.opened = new Set();                  // "call k" or "group g", as the user opened and closed them
    this.closed = new Set();
    this.version = 0;
  }

  path([kind, k]) {
    return kind === "call" ? this.paths[k] : this.gr.key[k];
  }

  /* The call a view's message names (a node's number, or an outline entry's path); null: none. */
  named(msg) {
    if (msg.call !== undefined) return ["call", Number(msg.call)];
    if (msg.group !== undefined) return ["group", Number(msg.group)];
    return this.keys.get(JSON.stringify(msg.path || [])) ?? null;
  }

  open(key) {
    const keys = [key];
    let c = key[0] === "call" ? key[1] : this.gr.parent[key[1]];
    if (key[0] === "group") keys.push(["call", c]);
    while (c) {
      if (this.sc.group[c] >= 0) keys.push(["group", this.sc.group[c]]);
      c = this.sc.parent[c];
      keys.push(["call", c]);
    }
    for (const [kind, k] of keys) {
      if (kind === "call" && k === 0) continue;
      this.opened.add(`${kind} ${k}`);
      this.closed.delete(`${kind} ${k}`);
    }
    this.version += 1;
  }

  close([kind, k]) {
    this.opened.delete(`${kind} ${k}`);
    this.closed.add(`${kind} ${k}`);
    this.version += 1;
  }

  /* The calls and groups holding equation cursor, innermost first. */
  chain(cursor) {
    const out = [];
    for (let c = this.eqScope[cursor]; c; c = this.sc.parent[c]) {
      out.push(`call ${c}`);
      if (this.sc.group[c] >= 0) out.push(`group ${this.sc.group[c]}`);
    }
    return out;
  }

  shown(cursor) {
    const chain = this.chain(cursor);
    const keys = new Set([...chain, ...this.opened].filter((key) => !this.closed.has(key)));
    const numbers = (kind) => [...keys].filter((key) => key.startsWith(`${kind} `)).map((key) => Number(key.slice(kind.length + 1)))
      .sort((a, b) => a - b);
    const calls = numbers("call"), groups = numbers("group");
    const width = this.d.window, slots = this.sc.slot;
    const windows = {};
    for (const g of groups) {
      const inGroup = (keys) => keys.filter((key) => key.startsWith("call ")).map((key) => Number(key.slice(5)))
        .filter((c) => this.sc.group[c] === g).map((c) => slots[c]);
      let anchor = inGroup(chain)[0];
      if (anchor === undefined) anchor = Math.min(...inGroup([...this.opened]), Infinity);
      if (anchor === Infinity) anchor = 0;
      const third = Math.floor(width / 3);
      const a = Math.max(Math.floor((anchor - third) / third) * third, 0);
      windows[String(g)] = Math.min(a, Math.max(this.gr.calls[g].length - width, 0));
    }
    return { calls, groups, windows, cursor };
  }

  /* The user's opens and closes as the outline reads them (the frame's pane.opened, .closed). */
  part() {
    const pairs = (keys) => [...keys].map((key) => {
      const [kind, k] = key.split(" ");
      return [kind === "call" ? "scope" : "group", this.path([kind, Number(k)])];
    });
    return { opened: pairs(this.opened), closed: pairs(this.closed) };
  }

  source(cursor) {
    return new CallsDrawing(this, this.shown(cursor)).source();
  }

  /* Equation i's node, as the neighbourhood draws it (pane data), and its name. */
  equationName(i) {
    const { tape } = this;
    const name = tape.vars[tape.outputs[i][0]];
    return tape.outputs[i].length === 1 ? name : `eq/${name}`;
  }

  equationStatement(i, current) {
    const { g, dots } = this;
    const name = this.equationName(i);
    return callNode(name, callLabel(g, g.eq.cells[i].map((c) => dots[c]).join(""), g.eq.style[i], g.eq.failed[i], current),
      this.equationTip(i), `tvn_${name}`, current);
  }

  equationTip(i) {
    return this.g.eq.tip[i].map((f) => this.dots[f]).join("\n");
  }
}

function callLabel(data, cells, style, failed, current) {
  let [frame, background, width] = failed ? data.failedLook : data.looks[style];
  if (current) [frame, , width] = data.currentLook;
  const rounded = ["input", "parameter"].includes(data.styles[style]) ? ' STYLE="rounded"' : "";
  return `<<TABLE BORDER="${width}" CELLBORDER="0" CELLSPACING="0" CELLPADDING="2" COLOR="${frame}" ` +
    `BGCOLOR="${background}"${rounded}>${cells}</TABLE>>`;
}

function callNode(name, label, tip, id, current) {
  return `\t"${name}" [label=${label} tooltip="${tip}" id="${id}"${current ? ' class="tv-current"' : ""}]\n`;
}

/* One drawing (calls_drawing.py's Drawing). */
const CLOSED = ["call", "group", "more"];
class CallsDrawing {
  constructor(source, shown) {
    this.s = source;
    this.d = source.d;
    this.sc = source.sc;
    this.gr = source.gr;
    this.calls = new Set([0, ...shown.calls]);
    this.groups = new Set(shown.groups);
    this.windows = new Map(Object.entries(shown.windows).map(([g, a]) => [Number(g), a]));
    this.cursor = shown.cursor;
    this.clusters = new Map();               // name -> [parent, attributes, statements]
    this.nodes = new Map();                  // name -> [cluster, position, what]
    this.ranks = [];
    this.heads = new Map();
    this.levels = [];
    this.inputs = new Set();
    this.folded = new Map();                 // a node drawn in a closed call's -> that node
    this.reads = new Map();                  // "kind k" of a closed call -> the inputs drawn in it
    this.visit(0);
    this.edges = this.allEdges();
    for (const j of [...this.inputs].sort((a, b) => a - b)) {
      const input = this.d.inputs[j];
      this.node(this.cluster(0, input[5]), input[0], ["input", j], true);
    }
  }

  cluster(k, phase, group = false) {
    const letter = LETTERS[phase], { sc, gr } = this;
    let name, attrs, outer;
    if (group) {
      name = `cluster_group_${letter}${k}`;
      outer = this.cluster(gr.parent[k], phase);
      attrs = this.attrs(gr.cluster[k][phase], phase, sc.depth[gr.parent[k]] + 1, `g${letter}${k}`);
    } else if (k === 0) {
      name = `cluster_${PHASES[phase]}`;
      attrs = this.d.tops[PHASES[phase]];
      outer = null;
    } else {
      const g = sc.group[k];
      name = `cluster_call_${letter}${k}`;
      outer = g >= 0 ? this.cluster(g, phase, true) : this.cluster(sc.parent[k], phase);
      attrs = this.attrs(sc.cluster[k][phase], phase, sc.depth[k], `c${letter}${k}`);
    }
    if (!this.clusters.has(name)) this.clusters.set(name, [outer, attrs, []]);
    return name;
  }

  attrs(label, phase, depth, element) {
    return `[label=${label} ${this.d.clusterLooks[phase][depth % 2]} tooltip="${this.d.closeTip}" id="tvo_${element}"]`;
  }

  node(cluster, name, what, first = false) {
    const statements = this.clusters.get(cluster)[2];
    if (first) {
      if (!this.heads.has(cluster)) this.heads.set(cluster, []);
      this.heads.get(cluster).push(name);
    }
    this.nodes.set(name, [cluster, statements.length, what]);
    statements.push(null);
  }

  visit(k) {
    this.levels.push(["level", k]);
    const { sc, gr } = this;
    const own = sc.own[k], items = sc.items[k];
    let i = 0, j = 0;
    while (i < own.length || j < items.length) {
      const item = j < items.length ? items[j] : null;
      const at = item === null ? null : item >= 0 ? sc.first[item] : gr.first[-1 - item];
      if (item === null || (i < own.length && own[i] < at)) {
        const e = own[i];
        this.node(this.cluster(k, this.s.eqPhase[e]), this.s.equationName(e), ["eq", e]);
        i += 1;
        continue;
      }
      j += 1;
      if (item >= 0) this.call(item);
      else if (this.groups.has(-1 - item)) this.group(-1 - item);
      else {
        const g = -1 - item;
        this.closedNodes("group", g, gr.count[g], (p) => this.cluster(gr.parent[g], p));
      }
    }
  }

  call(c) {
    if (this.calls.has(c)) {
      this.visit(c);
      return;
    }
    const g = this.sc.group[c];
    this.closedNodes("call", c, this.sc.count[c],
      g >= 0 ? (p) => this.cluster(g, p, true) : (p) => this.cluster(this.sc.parent[c], p));
  }

  closedNodes(kind, k, counts, cluster) {
    const names = [];
    counts.forEach((n, p) => {
      if (!n) return;
      const name = `${kind}/${LETTERS[p]}/${k}`;
      this.node(cluster(p), name, [kind, k, p]);
      names.push(name);
    });
    if (names.length > 1) this.ranks.push(names);
  }

  group(g) {
    this.levels.push(["window", g]);
    const calls = this.gr.calls[g], counts = this.gr.count[g];
    const [a, b] = this.window(g);
    const between = new Map();
    this.gr.loose[g].forEach((x, n) => {
      const slot = this.gr.looseSlot[g][n];
      if (a <= slot && slot < b) {
        if (!between.has(slot)) between.set(slot, []);
        between.get(slot).push(x);
      }
    });
    [[0, a], [b, calls.length]].forEach(([lo, hi], side) => {
      if (side === 1) {
        for (let slot = a; slot < b; slot++) {
          for (const x of between.get(slot) || []) {
            this.node(this.cluster(g, this.s.eqPhase[x], true), this.s.equationName(x), ["eq", x]);
          }
          this.call(calls[slot]);
        }
      }
      if (lo < hi) this.closedNodes("more", `${g}/${side}`, counts, (p) => this.cluster(g, p, true));
    });
  }

  window(g) {
    const n = this.gr.calls[g].length, width = this.d.window;
    const a = Math.min(Math.max(this.windows.get(g) ?? 0, 0), Math.max(n - width, 0));
    return [a, Math.min(a + width, n)];
  }

  holder(x) {
    if (x < 0) return this.d.inputs[-1 - x][0];
    const { sc } = this;
    const phase = this.s.eqPhase[x], letter = LETTERS[phase];
    const chain = [this.s.eqScope[x]];
    while (chain[chain.length - 1]) chain.push(sc.parent[chain[chain.length - 1]]);
    for (let n = chain.length - 2; n >= 0; n--) {
      const c = chain[n], g = sc.group[c];
      if (g >= 0) {
        if (!this.groups.has(g)) return `group/${letter}/${g}`;
        const [a, b] = this.window(g);
        if (!(a <= sc.slot[c] && sc.slot[c] < b)) return `more/${letter}/${g}/${Number(sc.slot[c] >= b)}`;
      }
      if (!this.calls.has(c)) return `call/${letter}/${c}`;
    }
    const taken = this.s.loose.get(x);
    if (taken !== undefined) {
      const [g, slot] = taken;
      if (!this.groups.has(g)) return `group/${letter}/${g}`;
      const [a, b] = this.window(g);
      if (!(a <= slot && slot < b)) return `more/${letter}/${g}/${Number(slot >= b)}`;
    }
    return this.s.equationName(x);
  }

  allEdges() {
    let flows = new Map();                   // tail, head, kind, backward (joined) -> [them, the tail's equation or input]
    for (const [kind, k] of this.levels) {
      let tables;
      if (kind === "level") tables = [this.sc.edges[k]];
      else {
        const [a, b] = this.window(k);
        tables = this.gr.edges[k].slice(a, b);
      }
      for (const flat of tables) this.flowsOf(flat, flows);
    }
    flows = this.fold(flows);
    const readers = new Map();
    for (const [[tail, head]] of flows.values()) {
      if (!readers.has(tail)) readers.set(tail, new Set());
      readers.get(tail).add(head);
    }
    const out = [], stubs = new Map();
    for (const [[tail0, head0, kind, backward], x] of flows.values()) {
      let tail = tail0, head = head0;
      if (kind === "residual" || (readers.get(tail).size > this.d.stubReaders && this.apart(tail, x, head))) {
        const key = `${tail}\n${head}`;
        if (!stubs.has(key)) stubs.set(key, this.stub(x, head, stubs.size));
        tail = stubs.get(key);
      } else if (x < 0) this.inputs.add(-1 - x);
      if (backward && this.d.upward) [tail, head] = [head, tail];
      out.push(`\t"${tail}" -> "${head}"${this.d.edges[kind][Number(backward)]}\n`);
    }
    return out;
  }

  flowsOf(flat, flows) {
    for (let n = 0; n < flat.length; n += 3) {
      const tail = this.holder(flat[n]), head = this.holder(flat[n + 1]);
      if (tail === head) continue;
      const phase = PHASES[this.s.eqPhase[flat[n + 1]]];
      let kind = CALL_EDGE_KINDS[flat[n + 2]];
      if (kind === "residual" && this.closedNode(tail) && this.closedNode(head)) continue;
      const backward = phase === "backward" && kind !== "residual";
      if (kind === "data" && phase !== "forward") kind = phase;
      const key = `${tail}\n${head}\n${kind}\n${backward}`;
      if (!flows.has(key)) flows.set(key, [[tail, head, kind, backward], flat[n]]);
    }
  }

  /* The flows without the inputs read by one closed call's nodes alone, drawn in them, with the
     sums of their gradients (calls_drawing.py's _fold). */
  fold(flows) {
    const readers = new Map();
    for (const [[, head], x] of flows.values()) {
      if (x >= 0) continue;
      if (!readers.has(-1 - x)) readers.set(-1 - x, new Map());
      const [kind, k] = this.nodes.get(head)[2];
      readers.get(-1 - x).set(`${kind} ${k}`, [kind, k]);
    }
    const inputs = this.d.inputs;
    for (const [j, owners] of readers) {
      const [kind, k] = owners.values().next().value;
      const target = `${kind}/${LETTERS[inputs[j][5]]}/${k}`;
      if (owners.size > 1 || !CLOSED.includes(kind) || inputs[j][3] || !this.nodes.has(target)) continue;
      this.folded.set(inputs[j][0], target);
      if (!this.reads.has(`${kind} ${k}`)) this.reads.set(`${kind} ${k}`, []);
      this.reads.get(`${kind} ${k}`).push(j);
      for (const x of this.d.sums[j]) {
        const name = this.s.equationName(x), into = `${kind}/${LETTERS[this.s.eqPhase[x]]}/${k}`;
        const node = this.nodes.get(name);
        if (node !== undefined && node[2][0] === "eq" && node[2][1] === x && this.nodes.has(into)) this.folded.set(name, into);
      }
    }
    if (!this.folded.size) return flows;
    const out = new Map();
    for (const [[tail0, head0, kind, backward], x] of flows.values()) {
      const tail = this.folded.get(tail0) ?? tail0, head = this.folded.get(head0) ?? head0;
      if (tail === head || (x < 0 && this.folded.has(inputs[-1 - x][0]))) continue;
      const key = `${tail}\n${head}\n${kind}\n${backward}`;
      if (!out.has(key)) out.set(key, [[tail, head, kind, backward], x]);
    }
    return out;
  }

  closedNode(name) {
    const node = this.nodes.get(name);
    return node !== undefined && CLOSED.includes(node[2][0]);
  }

  apart(tail, x, head) {
    let cluster;
    if (x < 0) cluster = `cluster_${PHASES[this.d.inputs[-1 - x][5]]}`;
    else if (this.nodes.get(tail)[2][0] === "eq") cluster = this.nodes.get(tail)[0];
    else return false;
    return cluster !== this.nodes.get(head)[0];
  }

  stub(x, head, n) {
    const name = `stub/${this.value(x)}/${head}`;
    this.node(this.nodes.get(head)[0], name, ["stub", x, n]);
    this.ranks.push([name, head]);
    return name;
  }

  value(x) {
    return x < 0 ? this.d.inputs[-1 - x][0] : this.s.equationName(x).replace(/^eq\//, "");
  }

  source() {
    const held = this.holder(this.cursor), current = this.folded.get(held) ?? held;
    for (const [name, [cluster, at, what]] of this.nodes) {
      this.clusters.get(cluster)[2][at] = this.folded.has(name) ? "" : this.statement(name, what, name === current);
    }
    const children = new Map();
    for (const [name, [parent]] of this.clusters) {
      if (!children.has(parent)) children.set(parent, []);
      children.get(parent).push(name);
    }
    const body = [this.d.head];
    const emit = (name, indent) => {
      const [, attrs, all] = this.clusters.get(name);
      const n = (this.heads.get(name) || []).length;
      const statements = n ? [...all.slice(-n), ...all.slice(0, -n)] : all;
      body.push(`${indent}subgraph "${name}" {\n${indent}\tgraph ${attrs}\n`);
      for (const statement of statements) if (statement) body.push(indent + statement);
      for (const child of children.get(name) || []) emit(child, `${indent}\t`);
      body.push(`${indent}}\n`);
    };
    for (const name of TOPS) if (this.clusters.has(name)) emit(name, "\t");
    body.push(...this.edges);
    for (const names of this.ranks) body.push(`\t{rank=same; ${names.map((n) => `"${n}";`).join(" ")}}\n`);
    return body.join("") + "}\n";
  }

  statement(name, what, current) {
    const [kind] = what;
    if (kind === "eq") return this.s.equationStatement(what[1], current);
    const { d } = this;
    if (kind === "input") {
      const [, cells, style, failed, tip] = d.inputs[what[1]];
      return callNode(name, callLabel(d, cells, style, failed, current), tip, `tvn_${name}`, current);
    }
    if (kind === "stub") {
      const [, x, n] = what;
      let style, failed, tip, cells;
      if (x < 0) [, , style, failed, tip, , cells] = d.inputs[-1 - x];
      else {
        [style, failed, tip] = [this.s.g.eq.style[x], this.s.g.eq.failed[x], this.s.equationTip(x)];
        cells = d.stubRow.join(this.value(x));
      }
      return callNode(name, callLabel(d, cells, style, failed, current), tip, `tvu_${n}_${this.value(x)}`, current);
    }
    const [, k, phase] = what;
    const style = d.styles.indexOf(["intermediate", "cotangent", "tangent"][phase]);
    if (kind === "more") {
      const [g, side] = k.split("/").map(Number);
      const calls = this.gr.calls[g];
      const [a, b] = this.window(g);
      const [lo, hi] = side === 0 ? [0, a] : [b, calls.length];
      const parts = d.summary[phase], names = this.sc.name;
      const cells = `${parts[0]}${hi - lo}${parts[1]}${names[calls[lo]]}${parts[2]}${names[calls[hi - 1]]}${parts[3]}`;
      return callNode(name, callLabel(d, cells, style, 0, current), d.summaryTip, `tvs_${LETTERS[phase]}${g}_${side}`, current);
    }
    const table = kind === "call" ? this.sc : this.gr;
    const [head, note, status] = table.node[k][phase], rows = d.nodeRows;
    const cells = `${rows[0]}${table.colour[k]}${rows[1]}${head}${rows[2]}${note}${rows[3]}${this.foldRows(kind, k, phase)}` +
      `${status ? d.statusRows[status] : ""}`;
    return callNode(name, callLabel(d, cells, style, status === "fail", current), d.openTip,
      `tv${kind[0]}_${LETTERS[phase]}${k}`, current);
  }

  /* What is drawn in a closed call's node (calls_drawing.py's fold_rows). */
  foldRows(kind, k, phase) {
    const { inputs, styles } = this.d, folded = this.reads.get(`${kind} ${k}`) || [];
    const counts = new Map();
    for (const j of folded) if (inputs[j][5] === phase) counts.set(inputs[j][2], (counts.get(inputs[j][2]) || 0) + 1);
    const texts = [];
    if (counts.size) {
      texts.push("reads " + [...counts].sort((a, b) => a[0] - b[0])
        .map(([style, n]) => `${n} ${styles[style]}${n !== 1 ? "s" : ""}`).join(" and "));
    }
    const n = folded.filter((j) => styles[inputs[j][2]] === "parameter").length;
    if (n && PHASES[phase] === "backward") texts.push(`gives ${n} gradient${n !== 1 ? "s" : ""}`);
    return texts.map((text) => this.d.foldRow.join(text)).join("");
  }
}

/* A variable's own value card (role "value") as its partner's inspector shows it (page.py's
   role_card). */
const CARD = '<div class="tv-card"';
function roleCard(card, role) {
  const text = escapeHtml(role);
  return card.replace(' data-role="value"', () => ` data-role="${text}"`)
    .replace('<div class="tv-card-h">value ', () => `<div class="tv-card-h">${text} `);
}

function escapeHtml(text) {
  return String(text).replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#x27;" })[c]);
}

/* A model for a page with no kernel: the session Python embedded (see tapeviz/debugger/page.py)
   answers the view's messages as the kernel would, deriving what the kernel sends for a step
   (the step's part, the pane's source) and a selection (its partners, the inspector's cards,
   the closure panel) from the tape, each thing embedded once; the moves by call, to a target,
   to a breakpoint, a NaN or a failing check go where Navigation says and say what the widget
   says (widget.py's _go and moves). */
class Session {
  constructor(data, graphviz) {
    this.data = data;
    this.graphviz = graphviz;
    this.handlers = new Map();
    this.state = { ...data.start };
    this.message = "";
    this.alert = data.checks.current;
    this.breakpoints = data.frame.breakpoints;
    this.values = {};
    const tape = this.tape = data.tape;
    this.pane = new PaneSource(tape, data.graph, data.dots);
    this.calls = data.calls ? new CallsSource(data.calls, tape, data.graph, data.dots) : null;   // the calls view
    this.state.view ??= "around";
    this.nav = new Navigation(data.steps, tape, data.navigation);
    this.index = this.nav.vars;
    this.residual = new Set(tape.residual);
    this.rows = new Map();                     // row -> { forward, backward } equations
    tape.row.forEach((r, i) => {
      if (!this.rows.has(r)) this.rows.set(r, { forward: [], backward: [] });
      this.rows.get(r)[tape.phase[i] === 0 ? "forward" : "backward"].push(i);
    });
    this.sources = new Map();                  // `${start} ${stop}` -> the pane's source, a few kept
    const diff = data.diff || { offline: "this page was written before the debugger had a diff mode" };
    this.diffs = diff.offline ? [diff, diff] : [{ shown: false, about: diff.about }, diff];    // hidden, shown
    this.diffOn = !diff.offline;
    this.update();
  }

  on(event, handler) {
    if (!this.handlers.has(event)) this.handlers.set(event, new Set());
    this.handlers.get(event).add(handler);
  }

  off(event, handler) {
    this.handlers.get(event)?.delete(handler);
  }

  get(name) {
    return this.values[name];
  }

  emit(event, ...args) {
    for (const handler of this.handlers.get(event) || []) handler(...args);
  }

  steps() {
    return this.data.steps[this.state.granularity];
  }

  stepOf(eqn, granularity = this.state.granularity) {
    return this.nav.stepOf(eqn, granularity);
  }

  /* The variables a step writes (DebugModel.written). */
  written(s) {
    const { tape } = this, written = [];
    for (let i = s.start; i < s.stop; i++) for (const v of tape.outputs[i]) written.push(tape.vars[v]);
    return written;
  }

  /* A step's part, as tapeviz/debugger/frames.py's step_part gives it. */
  stepPart(index) {
    const steps = this.steps(), s = steps[index], { tape } = this;
    const written = this.written(s);
    return { index, n: steps.length, phase: s.phase, text: s.text,
      writes: written.slice(0, 6).join(" ") + (written.length > 6 ? " \u2026" : ""), written,
      current: tape.vars[tape.outputs[s.start][0]], start: s.start, stop: s.stop, row: tape.row[s.start],
      scope: s.scope };
  }

  /* A selection's part (frames.py's sel_part): the equations on the other side of the variable's
     equation (a forward equation's pullback block and fan-ins; a backward one's forward origin
     and the residuals it reads; an input's gradient equations and readers). */
  selPart(name) {
    if (name === null) return null;
    const { tape } = this, v = this.index.get(name), p = tape.producer[v];
    let eqns = new Set();
    const vars = new Set();
    if (p < 0) {
      const kinds = (i) => tape.inputs[i];
      for (const r of this.pane.readers[v]) {
        const operands = kinds(r);
        for (let j = 0; j < operands.length; j += 2) {
          if (operands[j] === v && EDGE_KINDS[operands[j + 1]] === "residual") eqns.add(r);
        }
      }
      for (const i of this.rows.get(0)?.backward || []) if (tape.of[i] === v) eqns.add(i);
    } else if (tape.phase[p] === 0) {
      eqns = new Set(this.rows.get(tape.row[p]).backward);
    } else {
      const operands = tape.inputs[p];
      for (let j = 0; j < operands.length; j += 2) {
        const x = operands[j];
        if (this.residual.has(x) && tape.vphase[x] === 0) vars.add(x);
      }
      eqns = new Set(this.rows.get(tape.row[p]).forward);
      for (const x of vars) if (tape.producer[x] >= 0) eqns.add(tape.producer[x]);
    }
    return { name, producer: p < 0 ? null : p, partners: [...eqns].sort((a, b) => a - b),
      vars: [...vars].map((x) => tape.vars[x]).sort() };
  }

  /* The inspector's pair of cards: the variable's own, and its partner's (the partner's own card
     with its role) or the empty card (page.py's _cards). */
  inspector(name) {
    const { vars, html } = this.data, v = vars[name];
    let partner;
    if (v.card !== undefined) partner = html[v.card];
    else if (v.empty !== undefined) partner = html[v.empty];
    else {
      const own = html[vars[v.partner].inspector];
      partner = roleCard(own.slice(own.indexOf(CARD)), v.role);
    }
    return html[v.inspector] + partner + "</div>";
  }

  closurePanel(name) {
    return this.data.vars[name].closure.map((x) => (typeof x === "number" ? this.data.html[x] : x)).join("");
  }

  source(step) {
    const key = `${step.start} ${step.stop}`;
    let text = this.sources.get(key);
    if (text === undefined) {
      text = this.pane.source(step.start, step.stop);
      this.sources.set(key, text);
      if (this.sources.size > SVG_CACHE) this.sources.delete(this.sources.keys().next().value);
    }
    return text;
  }

  update() {
    const { data, state } = this;
    const step = this.stepPart(state.index);
    const focus = state.selected ?? step.current;
    const checks = { ...data.checks, current: this.alert };
    const values = {
      _frame: { ...data.frame, granularity: state.granularity, step, selected: state.selected,
        sel: this.selPart(state.selected), closure: state.closure, message: this.message, checks,
        pane: this.calls ? { ...data.frame.pane, view: state.view, ...this.calls.part() } : data.frame.pane,
        breakpoints: this.breakpoints },
      _listing: data.listing, _residuals: data.residuals, _legend: data.legend,
      _inspector: this.inspector(focus), _closure: state.closure ? this.closurePanel(focus) : "",
      _dot: state.view === "calls" ? this.calls.source(step.start) : this.source(step), _outline: data.outline,
      _diff: this.diffs[Number(this.diffOn)],
    };
    const changed = Object.keys(values).filter((k) => values[k] !== this.values[k]);
    this.values = values;
    for (const name of changed) this.emit(`change:${name}`);
  }

  send(msg) {
    const { state } = this;
    const last = this.steps().length - 1;
    const said = this.message;
    this.message = "";
    switch (msg.action) {
      case "hello": return this.emit("msg:custom", { kind: "hello", static: this.data.note });
      case "graphviz": return this.emit("msg:custom", { kind: "graphviz", source: this.graphviz });
      case "svg": return this.emit("msg:custom", { kind: "svg", dot: msg.dot,
        error: "this page may not run Graphviz (WebAssembly is blocked here)" });
      case "export": return this.export(msg.format);
      case "first": state.index = 0; break;
      case "prev": state.index = Math.max(state.index - 1, 0); break;
      case "next": state.index = Math.min(state.index + 1, last); break;
      case "last": state.index = last; break;
      case "step": state.index = Math.min(Math.max(msg.index, 0), last); break;
      case "granularity": {               // the kernel keeps what the last move said
        this.message = said;
        const eqn = this.steps()[state.index].start;
        state.granularity = msg.value;
        state.index = this.stepOf(eqn);
        break;
      }
      case "select": {
        const name = String(msg.name).trim().replace(/^eq\//, "");
        if (!name) state.selected = null;
        else if (Object.hasOwn(this.data.vars, name)) state.selected = name;
        else this.message = `'${name}' is not a variable of this tape; variables are named as in the listing`;
        break;
      }
      case "goto": {
        const eqn = state.selected === null ? null : this.selPart(state.selected).producer;
        if (eqn === null) this.message = "select a variable an equation computes first";
        else state.index = this.stepOf(eqn);
        break;
      }
      case "closure": state.closure = !!msg.on; break;
      case "graph_view": if (this.calls && ["around", "calls"].includes(msg.value)) state.view = msg.value; break;
      case "open_call": case "close_call": {
        if (!this.calls) break;                  // a page written without the calls view
        const key = this.calls.named(msg);
        if (!key) this.message = `no call ${(msg.path || []).join("/")} in this tape`;
        else if (msg.action === "open_call") this.calls.open(key);
        else if (key[0] === "call" && key[1] === 0) this.message = "the top level is always drawn: close one of its calls";
        else this.calls.close(key);
        break;
      }
      case "diff": this.diffOn = !!msg.on && !this.diffs[1].offline; break;
      case "diff_goto": {                 // an entry of the embedded diff: to its equation's step
        const eqn = Number(msg.eqn), { tape } = this;
        if (!(eqn >= 0 && eqn < tape.outputs.length)) break;
        state.index = this.stepOf(eqn);
        state.selected = tape.vars[tape.outputs[eqn][0]];
        break;
      }
      case "step_into": case "step_over": case "step_out": case "run_to": case "cont": case "nonfinite":
      case "failure":
        this.move(msg);
        break;
      case "breakpoint":                  // the kernel keeps what the last move said
        this.message = said;
        this.toggle(msg.target, msg.on ?? true);
        break;
      case "alert": {
        const alert = this.data.checks.alerts[msg.k];
        if (!alert) break;
        this.alert = msg.k;
        if (alert.target === null) {
          this.message = `${alert.check} names no equation`;
        } else {
          state.index = alert.target[state.granularity];
          state.selected = alert.target.select;
        }
        break;
      }
      default: return;
    }
    this.update();
  }

  /* Where a move goes and what it says, as the widget's moves do (widget.py: _go). */
  move({ action, reverse = false, from_cursor: fromCursor = false, target }) {
    const { nav, state } = this, g = state.granularity, k = state.index, n = this.steps().length;
    const where = reverse ? "the start of the tape" : "the end of the tape";
    const go = (index, failed, done = "", end = null) => {       // end: where a move that found nothing stops
      this.message = index === null ? failed : done;
      if ((index ?? end) !== null) state.index = index ?? end;
    };
    const end = reverse ? 0 : n - 1;
    switch (action) {
      case "step_into": return go(nav.stepInto(g, k, reverse), `at ${where}`);
      case "step_over": return go(nav.stepOver(g, k, reverse), `ran to ${where}`, "", end);
      case "step_out": return go(nav.stepOut(g, k, reverse), `ran to ${where}`, "", end);
      case "run_to": return this.checked(() => go(nav.runTo(g, k, nav.target(target))));
      case "cont": {
        if (!this.breakpoints.length) return go(null, NO_BREAKPOINTS);
        const hit = nav.nextHit(this.breakpoints, g, k, reverse);
        if (hit === null) return go(null, `no breakpoint ${reverse ? "behind" : "ahead"}`);
        return go(hit.index, "", `breakpoint ${hit.targets.map(describeTarget).join(", ")}`);
      }
      case "nonfinite": {
        const j = nav.nonfinite(g, k, fromCursor);
        return go(j, `no NaN or Inf ${fromCursor ? "after this step" : "in this tape"}`,
          j === null ? "" : `NaN or Inf in ${this.written(this.steps()[j]).join(", ")}`);
      }
      default:
        if (nav.found.failing === null) return go(null, NO_CHECKS_RAN);
        return go(nav.failure(g, k, reverse), `no failing check ${reverse ? "behind" : "ahead"}`);
    }
  }

  /* A breakpoint set (on) or cleared; an unknown target is said (Breakpoints.add checks it,
     discard does not). */
  toggle(target, on) {
    this.checked(() => {
      const t = on ? this.nav.target(target) : parseTarget(target);
      const kept = this.breakpoints.filter((b) => targetKey(b) !== targetKey(t));
      if (!on) this.breakpoints = kept;
      else if (kept.length === this.breakpoints.length) this.breakpoints = [...this.breakpoints, t];
    });
  }

  /* A target typed or clicked: a bad one is said, never thrown (widget.py's _from_view). */
  checked(action) {
    try {
      action();
    } catch (error) {
      if (!(error instanceof TargetError)) throw error;
      this.message = error.message;
    }
  }

  async export(format) {
    const dot = this.values._dot;
    let data = dot;
    if (format === "svg") {
      this.layout ??= loadGraphviz(this.graphviz);
      const graphviz = await this.layout;
      if (!graphviz) return;
      data = await graphviz.dot(dot);
    }
    const name = `tape-step-${this.state.index + 1}.${format}`;
    const mime = format === "svg" ? "image/svg+xml" : "text/vnd.graphviz";
    this.emit("msg:custom", { kind: "file", name, mime, data, size: new Blob([data]).size });
  }
}

function render({ model, el: root }) {
  const view = new View(model, root);
  return () => view.dispose();
}

/* A session as a page embeds it: JSON, gzip, base64 (see page.py). */
async function unpack(text) {
  const binary = atob(text.trim());
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
  return JSON.parse(await new Response(stream).text());
}

/* Draw every debugger embedded in a static page (elements .tv-static holding their sessions). */
async function mount(page, graphviz) {
  for (const holder of page.querySelectorAll(".tv-static:not([data-mounted])")) {
    holder.dataset.mounted = "true";
    const data = await unpack(holder.querySelector("script.tv-session").textContent);
    const root = el("div");
    holder.replaceChildren(root);
    render({ model: new Session(data, graphviz), el: root });
  }
}

export default { render };
export { mount, unpack, Navigation, PaneSource, CallsSource, Session };
