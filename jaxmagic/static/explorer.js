// jaxmagic's graph explorer: the kernel lays out each view (jaxmagic/explorer.py); this
// module shows its SVG, the hover details from its side table, and sends clicks and
// searches back. Text from user code reaches the page only through textContent and
// attribute values, never as markup; the SVG is parsed as XML and only the elements and
// attributes Graphviz writes are kept.

const INK = "#0f172a", MUTED = "#475569", LINE = "#cbd5e1", PANEL = "#ffffff";
const MARK = "#dc2626", ACCENT = "#1d4ed8";
const LEGIBLE_PX = 8;

function h(tag, style, text) {
  const e = document.createElement(tag);
  if (style) e.setAttribute("style", style);
  if (text !== undefined) e.textContent = text;
  return e;
}

// a word of the copied line, never broken inside (a browser breaks after a "--")
function word(text) {
  const e = h("span", "white-space:pre", text);
  e.className = "jaxmagic-magic-word";
  return e;
}

// Parse Graphviz's SVG as XML and keep only what Graphviz writes for a drawing: an
// allow-list of elements and attributes, so nothing that could run, fetch, link, animate or
// restyle the page gets through (no <a>, <animate>, <set>, <use>, <image>, foreignObject,
// no href, on*, style). Graphviz wraps a node with a tooltip in <a xlink:title>: its
// drawing is kept, the link is not, and the details panel replaces native tooltips.
const SVG_NS = "http://www.w3.org/2000/svg";
const ELEMENTS = new Set(["svg", "g", "title", "path", "polygon", "polyline", "ellipse",
  "circle", "rect", "line", "text", "tspan", "defs", "linearGradient", "radialGradient",
  "stop"]);
const UNWRAP = new Set(["a"]);
const ATTRIBUTES = new Set(["id", "class", "transform", "fill", "stroke", "d", "points",
  "x", "y", "x1", "y1", "x2", "y2", "cx", "cy", "r", "rx", "ry", "fx", "fy", "width", "height",
  "viewBox", "font-family", "font-size", "font-weight", "font-style", "text-anchor",
  "text-decoration", "baseline-shift", "stroke-width", "stroke-dasharray",
  "stroke-linecap", "stroke-linejoin", "fill-opacity", "stroke-opacity", "opacity",
  "offset", "stop-color", "stop-opacity", "gradientUnits", "gradientTransform"]);
// a value naming anything but a fragment of this drawing (url(#l_0)) is dropped
const SAFE_VALUE = (v) => !/url\s*\(|javascript:|expression\s*\(/i.test(v)
  || /^\s*url\(#[\w.:-]+\)\s*$/.test(v);

function clean(el) {
  for (const child of [...el.children]) {
    const known = child.namespaceURI === SVG_NS;
    if (known && UNWRAP.has(child.localName)) {
      clean(child);
      child.replaceWith(...child.childNodes);
    } else if (known && ELEMENTS.has(child.localName)) {
      clean(child);
    } else {
      child.remove();
    }
  }
  for (const a of [...el.attributes]) {
    if (a.namespaceURI !== null || !ATTRIBUTES.has(a.name) || !SAFE_VALUE(a.value)) {
      el.removeAttributeNode(a);
    }
  }
  for (const n of [...el.childNodes]) {      // comments, processing instructions, CDATA
    if (n.nodeType !== 1 && n.nodeType !== 3) n.remove();
  }
}

function parseSvg(text) {
  const doc = new DOMParser().parseFromString(text, "image/svg+xml");
  const svg = doc.documentElement;
  if (!svg || svg.localName !== "svg" || svg.namespaceURI !== SVG_NS) return null;
  clean(svg);
  return document.importNode(svg, true);
}

// The SVG title of each node or group ("n12", "cluster_3") → its <g>.
function items(svg) {
  const found = new Map();
  for (const g of svg.querySelectorAll("g.node, g.cluster")) {
    const t = g.querySelector(":scope > title");
    if (t) { found.set(t.textContent, g); t.remove(); }
  }
  return found;
}

const CLICKS = { open: "click to open", lines: "click to show its equations",
                 close: "click to close" };

function details(panel, row) {
  panel.replaceChildren();
  panel.append(h("div", `font-weight:600;color:${INK}`, row.title));
  const counted = row.detail.some((d) => d.endsWith(" equations"));
  // the title of an equation's box is its primitive ("add", "sub · 1"): not said twice
  const named = row.title === row.kind || row.title.startsWith(row.kind + " ·");
  const kind = [named ? "" : row.kind,
    row.equations > 1 && !counted ? `${row.equations} equations` : ""].filter(Boolean);
  if (kind.length) panel.append(h("div", `color:${MUTED}`, kind.join(" · ")));
  // what the view's overlays write on the box: flops, time, bytes at the peak, collectives
  for (const f of row.figures || []) panel.append(h("div", `color:${INK};font-weight:600`, f));
  for (const d of row.detail) panel.append(h("div", `color:${INK}`, d));
  if (row.inputs.length) panel.append(h("div", `color:${INK}`, "in: " + row.inputs.join(", ")));
  if (row.outputs.length) panel.append(h("div", `color:${INK}`, "out: " + row.outputs.join(", ")));
  if (row.where) panel.append(h("div", `color:${ACCENT}`, row.where));
  if (row.source) {
    panel.append(h("pre", `margin:2px 0 0;padding:0;white-space:pre-wrap;color:${INK};` +
      `background:${PANEL};border:0;` +
      "font-family:ui-monospace,Menlo,Consolas,monospace;font-size:11px", row.source));
  }
  const click = CLICKS[row.click];
  if (click) panel.append(h("div", `color:${MUTED};font-style:italic`, click));
}

// JupyterLab and Notebook 7: the static picture is the output just before this one. Draw
// in the picture's place, the picture hidden in the page only (the title, the note and the
// tables beside it stay as the static view shows them), and have the kernel blank this
// output, so a notebook saved now reopens without its kernel on the picture, not on
// "Error displaying widget". Elsewhere (no such output found) the explorer stays where it is.
function pictureBefore(el) {
  const mine = el.closest(".jp-OutputArea-child");
  const before = mine && mine.previousElementSibling;
  const out = before && before.querySelector(":scope > .jp-OutputArea-output");
  return (out && out.querySelector('img[src^="data:image/svg+xml"]')) || null;
}

// The explorer in the picture's place: the picture hidden in the page and marked as
// explored, so that it is drawn there once. Returns what shows the picture again.
function takePlace(picture, root) {
  picture.style.display = "none";
  picture.dataset.jaxmagicExplored = "1";
  picture.after(root);
  return () => { picture.style.display = ""; delete picture.dataset.jaxmagicExplored; };
}

function moveIntoPicture(el, root, model) {
  let tries = 0, unhide = () => {};
  const look = () => {       // the output is attached to the page a moment after render
    if (root.parentNode !== el) return;
    const picture = root.isConnected && pictureBefore(el);
    if (!picture) { if (++tries <= 50) setTimeout(look, 100); return; }
    if (picture.dataset.jaxmagicExplored) root.remove();   // drawn there already (`again`)
    else unhide = takePlace(picture, root);
    model.send({ type: "moved" });
  };
  look();
  return () => unhide();
}

// The page reloaded while the kernel runs: the widget manager makes each explorer's
// model again from the kernel, but the notebook holds the output the kernel blanked, so
// no view is rendered. Draw the explorer again in its picture's place, found by the token
// the picture carries, with the groups the person had opened.
function again({ model }) {
  const token = model.get("picture");
  if (!model.get("moved") || !/^[0-9a-f]+$/.test(token)) return undefined;
  let tries = 0, timer = null, built = null;
  const look = () => {       // the notebook's outputs are drawn while the kernel connects
    const picture = document.querySelector(`img[data-jaxmagic-picture="${token}"]`);
    if (!picture) { if (++tries <= 240) timer = setTimeout(look, 250); return; }
    if (picture.dataset.jaxmagicExplored) return;
    const el = h("div");
    const unhide = takePlace(picture, el);
    const [, cleanup] = build(model, el);
    built = () => { cleanup(); el.remove(); unhide(); };
  };
  timer = setTimeout(look, 500);   // a view the output asks for draws first (`render`)
  return () => { clearTimeout(timer); if (built) built(); };
}

function render({ model, el }) {
  const [root, cleanup] = build(model, el);
  const unhide = moveIntoPicture(el, root, model);
  return () => {
    if (root.parentNode !== el) { root.remove(); unhide(); }
    cleanup();
  };
}

// The explorer's panel in `el`, drawn from `model` and sending it the person's clicks:
// [the panel, what removes its listeners].
function build(model, el) {
  const root = h("div", `font:12px/1.4 system-ui,sans-serif;color:${INK};background:${PANEL};` +
    `border:1px solid ${LINE};border-radius:4px;padding:6px;position:relative`);
  root.className = "jaxmagic-explorer";
  // every colour is the explorer's own, as a theme's `pre`, `code` and placeholder colours
  // (light on JupyterLab Dark) would put light ink or dark paper into this white panel;
  // a placeholder's colour has no inline form
  root.append(h("style", "", ".jaxmagic-explorer input.jaxmagic-search::placeholder" +
    `{color:${MUTED};opacity:1} .jaxmagic-explorer g[data-click]{cursor:pointer}` +
    `.jaxmagic-explorer g[data-click]:focus{outline:3px solid ${ACCENT};outline-offset:2px}`));
  const bar = h("div", "display:flex;flex-wrap:wrap;gap:6px;align-items:center;margin-bottom:4px");
  const search = h("input", `flex:0 1 220px;padding:2px 4px;border:1px solid ${LINE};` +
    `color:${INK};background:${PANEL}`);
  search.placeholder = "search name, primitive, :line";
  search.className = "jaxmagic-search";
  const button = (label, title) => {
    const b = h("button", `padding:1px 8px;border:1px solid ${LINE};border-radius:3px;` +
      `color:${INK};background:#f8fafc;cursor:pointer`, label);
    b.title = title;
    return b;
  };
  const out = button("−", "zoom out"), fit = button("fit", "fit the width"),
        zin = button("+", "zoom in"), copy = button("copy",
          "copy the %jaxpr line that draws this view statically"),
        reset = button("reset", "back to the first view: its groups, nothing searched");
  copy.className = "jaxmagic-copy";
  reset.className = "jaxmagic-reset";
  bar.append(search, out, fit, zin, reset);
  // the whole line, wrapped where it is long, to read or select, beside its copy button
  const line = h("div", "display:flex;gap:6px;align-items:baseline;margin-bottom:4px");
  const magic = h("code", "font-family:ui-monospace,Menlo,Consolas,monospace;font-size:11px;" +
    `color:${INK};background:${PANEL};padding:0;white-space:pre-wrap;overflow-wrap:break-word;` +
    "flex:1 1 auto;min-width:0");
  magic.className = "jaxmagic-magic";
  line.append(copy, magic);
  const status = h("div", `color:${MUTED};min-height:1.4em`);
  status.className = "jaxmagic-status";
  status.setAttribute("role", "status");        // read out as it changes
  status.setAttribute("aria-live", "polite");
  const view = h("div", `overflow:auto;max-height:70vh;cursor:grab;background:#ffffff;` +
    `border:1px solid ${LINE}`);
  view.className = "jaxmagic-view";
  view.tabIndex = 0;          // scrolled by the arrow keys; where a redraw leaves the focus
  view.setAttribute("aria-label", "the picture: Tab to its groups, Enter to open one");
  const panel = h("div", `display:none;position:absolute;z-index:10;max-width:460px;` +
    `padding:6px 8px;background:#ffffff;border:1px solid ${MUTED};border-radius:4px;` +
    "box-shadow:0 2px 8px rgba(0,0,0,.2);pointer-events:none");
  panel.className = "jaxmagic-details";
  root.append(bar, line, status, view, panel);
  el.replaceChildren(root);

  let scale = null, natural = null, svg = null, index = new Map(), refocus = null;

  // the size as inline style too: JupyterLab's `.jp-RenderedHTMLCommon svg { max-width:
  // 100%; height: auto }` would cap the drawing at the cell's width (zoom in did nothing)
  function size() {
    if (!svg || !natural) return;
    const w = `${natural.w * scale}px`, ht = `${natural.h * scale}px`;
    svg.setAttribute("width", w);
    svg.setAttribute("height", ht);
    svg.setAttribute("style", `display:block;width:${w};height:${ht};max-width:none;` +
      "max-height:none");
  }
  function fitWidth() {
    if (!natural) return;
    const room = (view.clientWidth || 940) - 4;
    scale = Math.min(1, room / natural.w);
    size();
  }
  // the cell's width is known only once the output is on the page: fit then, until the
  // person zooms
  let zoomed = false;
  const watch = new ResizeObserver(() => { if (!zoomed && view.clientWidth) fitWidth(); });
  watch.observe(view);
  // the group a click opened (`focus`): its text kept legible (≥ 8 px, the picture's own
  // rule), zoomed in past the width where it must be, and scrolled to within the view,
  // not the notebook
  function showOpened(g) {
    const sizes = [...svg.querySelectorAll("text[font-size]")].map(
      (t) => parseFloat(t.getAttribute("font-size"))).filter((v) => v > 0);
    const box = svg.viewBox.baseVal, px = box && box.width ? natural.w / box.width : 4 / 3;
    const legible = sizes.length ? Math.min(1, LEGIBLE_PX / (Math.min(...sizes) * px)) : 0;
    if (legible > scale) { scale = legible; zoomed = true; size(); }
    const r = g.getBoundingClientRect(), v = view.getBoundingClientRect();
    view.scrollLeft += r.left - v.left - Math.max(8, (v.width - r.width) / 2);
    view.scrollTop += r.top - v.top - 8;
  }

  function draw() {
    const fresh = parseSvg(model.get("svg") || "");
    panel.style.display = "none";     // what it described may be gone
    view.replaceChildren();
    if (!fresh) { status.textContent = "no picture"; return; }
    svg = fresh;
    const pt = (v) => parseFloat(v) * 4 / 3;
    natural = { w: pt(svg.getAttribute("width")), h: pt(svg.getAttribute("height")) };
    index = items(svg);
    const table = model.get("table") || {};
    for (const [key, g] of index) {
      const row = table[key];
      if (!row) continue;
      g.dataset.key = key;
      if (row.click) {         // Tab reaches it, Enter or Space opens or closes it
        g.dataset.click = row.click;
        g.setAttribute("tabindex", "0");
        g.setAttribute("role", "button");
        g.setAttribute("aria-label", `${row.title}: ${CLICKS[row.click] || ""}`);
      }
    }
    for (const key of model.get("highlight") || []) {
      const g = index.get(key);
      if (!g) continue;
      g.classList.add("jaxmagic-match");
      for (const shape of g.querySelectorAll("polygon, ellipse, path")) {
        shape.setAttribute("stroke", MARK);
        shape.setAttribute("stroke-width", "3");
      }
    }
    view.append(svg);
    if (scale === null || !zoomed) fitWidth(); else size();
    const opened = index.get(model.get("focus") || "");
    if (opened) showOpened(opened);
    if (refocus) {            // the keyboard's place, kept across the new picture
      const again = index.get(refocus);
      (again && again.dataset.click ? again : view).focus({ preventScroll: !again });
      refocus = null;
    }
    const first = view.querySelector(".jaxmagic-match");
    if (first) first.scrollIntoView({ block: "nearest", inline: "nearest" });
  }

  // a saved widget state shown without its kernel answers no click: say so
  let waiting = null;
  // the kernel restarted: the widget manager marks each model's comm dead (the only
  // change of `comm_live` after a model is made), and the new kernel has no explorer
  let restarted = false;
  const RESTARTED = "the kernel restarted: run the cell again to explore";
  model.on("comm_live_update", () => {
    restarted = true;
    clearTimeout(waiting);
    status.textContent = RESTARTED;
  });
  function ask(message, doing) {
    if (restarted) { status.textContent = RESTARTED; return; }
    status.textContent = doing;
    clearTimeout(waiting);
    waiting = setTimeout(() => {
      status.textContent = "no answer from the kernel: re-run the cell to explore";
    }, 15000);
    model.send({ ...message, seen: model.get("answered") });
  }

  function update() {
    clearTimeout(waiting);
    const caveat = model.get("caveat");
    // wrapped at its spaces only, not after a "--" as a browser would
    const words = ((caveat ? "≈ " : "") + model.get("magic")).split(" ");
    magic.replaceChildren(...words.flatMap((w, i) => [i ? " " : "", word(w)]));
    magic.title = model.get("magic") + (caveat ? `\n≈ this line ${caveat}` : "");
    const took = model.get("seconds");
    status.textContent = (model.get("status") || "") +
      (took > 0.05 ? `  (laid out in ${took.toFixed(2)} s)` : "");
  }

  const keyOf = (target) => {
    const g = target.closest && target.closest("g.node, g.cluster");
    return g && g.dataset.key ? g.dataset.key : null;
  };
  // the details of `target`'s node or group beside the point (x, y) of the page: below
  // a node's box or above it, never over what the box says; inside the output
  // (JupyterLab clips what sticks out of it)
  function explain(target, px, py) {
    const key = keyOf(target);
    const row = key && (model.get("table") || {})[key];
    if (!row) { panel.style.display = "none"; return; }
    details(panel, row);
    const box = root.getBoundingClientRect();
    panel.style.display = "block";
    const node = target.closest("g.node");
    const r = node ? node.getBoundingClientRect() : { top: py, bottom: py };
    const x = px - box.left, below = r.bottom - box.top + 8, above = r.top - box.top - 8;
    const w = panel.offsetWidth, ht = panel.offsetHeight;
    panel.style.left = `${Math.max(0, Math.min(x + 14, box.width - w - 4))}px`;
    panel.style.top = `${below + ht <= box.height || above - ht < 0 ? below : above - ht}px`;
  }
  view.addEventListener("mousemove", (ev) => explain(ev.target, ev.clientX, ev.clientY));
  view.addEventListener("mouseleave", () => { panel.style.display = "none"; });
  // the keyboard: Tab to a group shows its details, Enter or Space opens or closes it
  view.addEventListener("focusin", (ev) => {
    const r = ev.target.getBoundingClientRect();
    explain(ev.target, r.left, r.bottom);
  });
  view.addEventListener("focusout", () => { panel.style.display = "none"; });
  view.addEventListener("keydown", (ev) => {
    if (ev.key !== "Enter" && ev.key !== " ") return;
    const key = keyOf(ev.target);
    const row = key && (model.get("table") || {})[key];
    if (!row || !row.click) return;
    ev.preventDefault();
    ev.stopPropagation();     // not the notebook's Enter (edit the cell)
    refocus = key;
    ask({ type: "toggle", key }, "laying out…");
  });

  let drag = null, moved = false;
  view.addEventListener("mousedown", (ev) => {
    drag = { x: ev.clientX, y: ev.clientY, left: view.scrollLeft, top: view.scrollTop };
    moved = false;
  });
  const pan = (ev) => {
    if (!drag) return;
    const dx = ev.clientX - drag.x, dy = ev.clientY - drag.y;
    if (Math.abs(dx) + Math.abs(dy) > 4) moved = true;
    view.scrollLeft = drag.left - dx;
    view.scrollTop = drag.top - dy;
  };
  const release = () => { drag = null; };
  window.addEventListener("mousemove", pan);
  window.addEventListener("mouseup", release);
  view.addEventListener("click", (ev) => {
    if (moved) return;
    const key = keyOf(ev.target);
    const row = key && (model.get("table") || {})[key];
    if (!row || !row.click) return;
    ask({ type: "toggle", key }, "laying out…");
  });
  view.addEventListener("wheel", (ev) => {
    if (!ev.ctrlKey || !svg) return;
    ev.preventDefault();
    scale = Math.min(4, Math.max(0.1, scale * (ev.deltaY < 0 ? 1.15 : 1 / 1.15)));
    zoomed = true;
    size();
  }, { passive: false });
  zin.addEventListener("click", () => { zoomed = true; scale = Math.min(4, scale * 1.25); size(); });
  out.addEventListener("click", () => { zoomed = true; scale = Math.max(0.1, scale / 1.25); size(); });
  fit.addEventListener("click", () => { zoomed = false; fitWidth(); });
  reset.addEventListener("click", () => {
    search.value = "";
    ask({ type: "reset" }, "back to the first view…");
  });
  search.addEventListener("keydown", (ev) => {
    if (ev.key !== "Enter") return;
    ask({ type: "search", query: search.value }, "searching…");
  });
  copy.addEventListener("click", async () => {
    const text = model.get("magic");
    try {
      await navigator.clipboard.writeText(text);
      status.textContent = "copied: " + text;
    } catch (e) {    // no clipboard (an insecure page): select it for the user to copy
      const range = document.createRange();
      range.selectNodeContents(magic);
      const sel = window.getSelection();
      sel.removeAllRanges();
      sel.addRange(range);
      status.textContent = "selected: press Ctrl+C to copy";
    }
  });

  // one message changes several traits: draw once for all of them, and only when the
  // picture changed (a redraw would lose the person's pan)
  let pending = null;
  const later = (picture) => () => {
    if (pending === null) {
      pending = false;
      queueMicrotask(() => { if (pending) draw(); pending = null; update(); });
    }
    pending = pending || picture;
  };
  for (const name of ["svg", "highlight"]) model.on(`change:${name}`, later(true));
  for (const name of ["status", "magic", "caveat", "answered"]) {
    model.on(`change:${name}`, later(false));
  }
  draw();
  update();
  return [root, () => {
    clearTimeout(waiting);
    watch.disconnect();
    window.removeEventListener("mousemove", pan);
    window.removeEventListener("mouseup", release);
  }];
}

export default { initialize: again, render };
