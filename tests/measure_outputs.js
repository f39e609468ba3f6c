// Measure jaxmagic outputs in a notebook page (nbconvert HTML or JupyterLab).
// Argument: a list of [cellSelector, outputIndex] or [cellSelector, nthMatch, outputIndex].
// Returns per output: found, shown mimetype, size, visibility, how far it reaches right of
// its cell, clipped boxes, pictures (loaded? drawn size), and every visible text run with
// the WCAG contrast of its computed colour against its composited background.
(items) => {
  const parse = (c) => { const m = c.match(/rgba?\(([^)]+)\)/); if (!m) return null;
    const p = m[1].split(',').map(parseFloat); return [p[0], p[1], p[2], p.length > 3 ? p[3] : 1]; };
  const lum = (c) => { const f = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); };
    return 0.2126 * f(c[0]) + 0.7152 * f(c[1]) + 0.0722 * f(c[2]); };
  const over = (top, under) => { const a = top[3]; return [0,1,2].map(i => top[i] * a + under[i] * (1 - a)).concat([1]); };
  const bgOf = (el) => { const layers = []; for (let e = el; e; e = e.parentElement) {
      const c = parse(getComputedStyle(e).backgroundColor); if (c && c[3] > 0) { layers.push(c); if (c[3] >= 1) break; } }
    let base = [255, 255, 255, 1];
    if (!layers.length || layers[layers.length - 1][3] < 1) {
      const c = parse(getComputedStyle(document.documentElement).backgroundColor); if (c && c[3] > 0) base = c; }
    for (let i = layers.length - 1; i >= 0; i--) base = over(layers[i], base); return base; };
  const ratio = (a, b) => { const x = lum(a), y = lum(b); return (Math.max(x, y) + 0.05) / (Math.min(x, y) + 0.05); };
  return items.map((item) => {
    const [cellSel, nth, idx] = item.length === 2 ? [item[0], 0, item[1]] : item;
    const cell = document.querySelectorAll(cellSel)[nth];
    if (!cell) return {found: false, why: 'cell not found: ' + cellSel};
    const children = cell.querySelectorAll('.jp-OutputArea-child');
    const child = children[idx];
    if (!child) return {found: false, why: `output ${idx} not found (${children.length} outputs)`};
    const out = child.querySelector('.jp-OutputArea-output') || child;
    child.scrollIntoView();
    const r = out.getBoundingClientRect(), cr = cell.getBoundingClientRect();
    const st = getComputedStyle(out);
    const imgs = [...out.querySelectorAll('img')].map(im => { const b = im.getBoundingClientRect();
      return {w: b.width, h: b.height, right: b.right, nw: im.naturalWidth, nh: im.naturalHeight,
              complete: im.complete, src: (im.getAttribute('src') || '').slice(0, 30)}; });
    const svgs = [...out.querySelectorAll('svg')].length;
    const text = [];
    const walker = document.createTreeWalker(out, NodeFilter.SHOW_TEXT);
    for (let n = walker.nextNode(); n; n = walker.nextNode()) {
      const s = n.textContent.trim(); if (!s) continue;
      const el = n.parentElement, cs = getComputedStyle(el);
      if (cs.visibility === 'hidden' || cs.display === 'none') continue;
      const b = el.getBoundingClientRect(); if (b.width === 0 || b.height === 0) continue;
      const fg = parse(cs.color), bg = bgOf(el);
      const fgc = over(fg, bg);
      const size = parseFloat(cs.fontSize), bold = parseInt(cs.fontWeight) >= 700;
      text.push({text: s.slice(0, 40), ratio: ratio(fgc, bg), large: size >= 24 || (bold && size >= 18.66),
                 fg: cs.color, bg: 'rgb(' + bg.slice(0, 3).map(Math.round).join(',') + ')'});
    }
    let maxRight = r.right;
    for (const e of out.querySelectorAll('*')) {
      // content that sticks out of the cell, unless a scrolling box inside the output holds it
      let held = false;
      for (let p = e.parentElement; p && p !== out.parentElement; p = p.parentElement) {
        const o = getComputedStyle(p).overflowX; if (o === 'auto' || o === 'scroll' || o === 'hidden') { held = true; break; } }
      if (!held) maxRight = Math.max(maxRight, e.getBoundingClientRect().right);
    }
    // boxes whose content is wider than they show (clipped, or scrolled sideways); a <pre>
    // of program text that scrolls (HLO, DOT source) is meant to
    const clipped = [out, ...out.querySelectorAll('*')].filter(e => {
      const o = getComputedStyle(e).overflowX;
      if (e.tagName === 'PRE' && (o === 'auto' || o === 'scroll')) return false;
      return (o === 'auto' || o === 'scroll' || o === 'hidden') && e.scrollWidth > e.clientWidth + 1;
    }).map(e => `<${e.tagName.toLowerCase()}> shows ${e.clientWidth}px of ${e.scrollWidth}px`);
    return {found: true, mime: out.getAttribute('data-mime-type') || '',
            classes: out.className, width: r.width, height: r.height,
            visible: st.display !== 'none' && st.visibility !== 'hidden' && r.width > 0 && r.height > 0,
            cellRight: cr.right, right: r.right, maxRight, clipped, imgs, svgs, text,
            panelBg: (() => { const f = out.querySelector('[style]'); return f ? getComputedStyle(f).backgroundColor : ''; })(),
            textContent: out.textContent.slice(0, 120)};
  });
}
