"""The memory chart's labels never sit on a line or on each other (review17b #7: "NVIDIA GeForce RTX 5090: 31.4 GiB"
written over the RAM line; Strix Halo's two limits, 64 and 66 GiB, drawn 2 GiB apart on top of each other and the
GPU line). Read in a real Chromium at a desktop and a phone width: every text box of the chart (SVG getBBox, in
the chart's own units) against every other and against every drawn segment (polylines, dashed limits, the
largest-context and asked-context lines, grid lines, legend swatches)."""

from __future__ import annotations

from urllib.parse import urlencode

import pytest

from runlocal.testing.browser import running_app

pytestmark = pytest.mark.browser

SIZES = {"desktop": (1440, 900), "phone": (390, 844)}
PAGES = [{"model": "gpt-oss-120b", "gpu": "rtx-5090", "ctx": "131072", "ram": "64G"},
         {"model": "glm-4.5-air", "gpu": "ryzen-ai-max-395-128gb", "ctx": "32768"},
         {"model": "llama-3.1-70b", "gpu": "rtx-4090", "ctx": "32768", "ram": "48G"},
         {"model": "qwen3-30b-a3b", "runtime": "vllm", "gpu": "rtx-3090", "n": "2", "ctx": "32768"},
         # review19 #12: "2 × NVIDIA GeForce RTX 3090 (each): 22.6 GiB usable (1 GiB kept free)" ran past the chart's
         # right edge (x 434 of 379 px on a 390 px phone); the legend now wraps inside the viewBox
         {"model": "llama-3.1-70b", "gpu": "rtx-3090", "n": "2", "ctx": "32768", "ram": "64G"}]

# every text box of the chart, and every segment drawn, in SVG user units; then the pairs that touch
COLLISIONS_JS = """() => {
  const svg = document.querySelector('svg.chart');
  if (!svg) return {error: 'no chart'};
  const boxes = [...svg.querySelectorAll('text')].map(t => {
    const b = t.getBBox();
    return {text: t.textContent, x0: b.x, y0: b.y, x1: b.x + b.width, y1: b.y + b.height};
  });
  const segs = [];
  for (const l of svg.querySelectorAll('line')) {
    const g = k => l[k].baseVal.value;
    segs.push({what: l.getAttribute('class') || l.getAttribute('stroke'), a: [g('x1'), g('y1')], b: [g('x2'), g('y2')]});
  }
  for (const p of svg.querySelectorAll('polyline')) {
    const pts = [...p.points].map(q => [q.x, q.y]);
    for (let i = 1; i < pts.length; i++) segs.push({what: 'line ' + p.getAttribute('stroke'), a: pts[i - 1], b: pts[i]});
  }
  // Liang-Barsky: does the segment enter the box?
  const hits = (s, r) => {
    let t0 = 0, t1 = 1;
    const dx = s.b[0] - s.a[0], dy = s.b[1] - s.a[1];
    const edges = [[-dx, s.a[0] - r.x0], [dx, r.x1 - s.a[0]], [-dy, s.a[1] - r.y0], [dy, r.y1 - s.a[1]]];
    for (const [p, q] of edges) {
      if (p === 0) { if (q < 0) return false; continue; }
      const t = q / p;
      if (p < 0) { if (t > t1) return false; if (t > t0) t0 = t; }
      else { if (t < t0) return false; if (t < t1) t1 = t; }
    }
    return true;
  };
  const out = [];
  boxes.forEach((r, i) => {
    boxes.slice(i + 1).forEach(o => {
      if (r.x0 < o.x1 && o.x0 < r.x1 && r.y0 < o.y1 && o.y0 < r.y1) out.push(`"${r.text}" over "${o.text}"`);
    });
    for (const s of segs) if (hits(s, r)) out.push(`"${r.text}" on ${s.what}`);
  });
  const vb = svg.viewBox.baseVal;
  for (const r of boxes) {
    if (r.x0 < vb.x || r.x1 > vb.x + vb.width || r.y0 < vb.y || r.y1 > vb.y + vb.height) out.push(`"${r.text}" outside`);
  }
  return {texts: boxes.length, segments: segs.length, problems: out};
}"""


@pytest.fixture(scope="module")
def base_url():
    from runlocal.testing.browser import served_app

    with running_app(served_app()) as url:
        yield url


@pytest.mark.parametrize("size", list(SIZES))
def test_no_chart_label_touches_a_line_or_another_label(browser, base_url, size):
    context = browser.new_context(viewport={"width": SIZES[size][0], "height": SIZES[size][1]})
    page = context.new_page()
    page.set_default_navigation_timeout(240_000)
    try:
        for query in PAGES:
            page.goto(f"{base_url}/?{urlencode(query)}", wait_until="load")
            found = page.evaluate(COLLISIONS_JS)
            assert "error" not in found, (query, found)
            # the chart has its device labels and lines (a legend row per device, the limits dashed)
            assert found["texts"] >= 8 and found["segments"] >= 10, (query, found)
            assert found["problems"] == [], (query, size, found["problems"])
    finally:
        context.close()
