"use strict";
// The "Will it run?" page: every control change re-plans through /api/v1/check (debounced).
const $ = (id) => document.getElementById(id);
const GiB = 1024 ** 3;
const fmt = (b) => b == null ? "—" : b >= GiB ? (b / GiB).toFixed(2) + " GiB"
  : b >= 2 ** 20 ? (b / 2 ** 20).toFixed(0) + " MiB" : (b / 1024).toFixed(0) + " KiB";
const ctxValue = () => 2 ** Number($("ctx").value);
let timer = null, seq = 0;

async function getJSON(url, opts) {
  const r = await fetch(url, opts);
  const body = await r.json();
  if (!r.ok) throw new Error((body.detail && body.detail[0] && body.detail[0].msg) || body.detail || r.statusText);
  return body;
}

function request() {
  const gpus = [...$("gpu").selectedOptions].map((o) => o.value);
  const body = { model: $("model").value.trim(), runtime: $("runtime").value, ctx: ctxValue(),
                 kv_cache: $("kv_cache").value };
  // empty: leave it to the runtime's default (llama-server's -np auto)
  if (Number($("parallel").value) >= 1) body.parallel = Number($("parallel").value);
  if (gpus.length) body.gpu = gpus.join(",");
  else body.gpu = "auto";
  if ($("quant").value) body.quant = $("quant").value;
  return body;
}

function schedule() {
  $("ctx-out").textContent = ctxValue().toLocaleString("en-US");
  clearTimeout(timer);
  timer = setTimeout(update, 150);
}

async function update() {
  const my = ++seq, body = request();
  if (!body.model) return;
  const post = (url) => getJSON(url, { method: "POST", headers: { "content-type": "application/json" },
                                       body: JSON.stringify(body) });
  try {
    const [plan, curve] = await Promise.all([post("/api/v1/check"), post("/api/v1/curve")]);
    if (my === seq) render(plan, curve);
  } catch (e) {
    if (my !== seq) return;
    $("verdict").className = "verdict error";
    $("verdict").textContent = e.message;
  }
}

function render(plan, curve) {
  const labels = { fits: "✔ Fits", tight: "▲ Tight", does_not_fit: "✘ Does not fit", unknown: "? Unknown" };
  $("verdict").className = "verdict " + plan.verdict;
  $("verdict").textContent = labels[plan.verdict] || plan.verdict;
  const m = plan.model;
  $("summary").textContent = `${m.id} · ${(m.params / 1e9).toFixed(2)}B params · ${plan.settings.quant} weights `
    + `(${fmt(m.weights_bytes)}) · KV ${fmt(plan.kv_bytes_per_token)}/token · max context `
    + (plan.max_context ? plan.max_context.toLocaleString("en-US") : "none fits")
    + (plan.refusal ? " · " + plan.refusal : "")
    + (plan.compromise ? " · " + plan.compromise : "");
  $("devices").replaceChildren(...plan.memory.devices.map(deviceBar));
  $("fixes").replaceChildren(...(plan.fixes.length ? plan.fixes : [{ title: "Nothing to change", command: "", effect: "" }])
    .map((f) => {
      const li = document.createElement("li");
      li.textContent = `${f.title}${f.effect ? " — " + f.effect : ""}`;
      if (f.command) {
        const code = document.createElement("code");
        code.textContent = f.command;
        code.title = "click to copy";
        code.onclick = () => navigator.clipboard && navigator.clipboard.writeText(f.command);
        li.append(code);
      }
      return li;
    }));
  $("command").textContent = plan.command;
  drawCurve(curve, plan);
}

function deviceBar(d) {
  const wrap = document.createElement("div");
  const cap = Math.max(d.capacity, d.total, 1);
  const name = document.createElement("div");
  name.className = "devname";
  name.innerHTML = `<span></span><span></span>`;
  name.children[0].textContent = d.name;
  name.children[1].textContent = `${fmt(d.total)} of ${fmt(d.capacity)}`;
  const bar = document.createElement("div");
  bar.className = "bar" + (d.capacity && d.total > d.capacity ? " over" : "");
  for (const [key, cls] of [["weights", "w"], ["kv_cache", "k"], ["compute", "c"], ["overhead", "o"]]) {
    const s = document.createElement("span");
    s.className = cls;
    s.style.width = (100 * d[key] / cap).toFixed(2) + "%";
    s.title = `${key}: ${fmt(d[key])}`;
    bar.append(s);
  }
  wrap.append(name, bar);
  return wrap;
}

function drawCurve(curve, plan) {
  const svg = $("curve"), W = 640, H = 240, L = 56, B = 28, T = 10, R = 10;
  const pts = curve.points;
  if (!pts.length) { svg.innerHTML = ""; return; }
  const xmax = Math.log2(pts[pts.length - 1].ctx), xmin = Math.log2(pts[0].ctx);
  const ymax = Math.max(curve.capacity || 0, ...pts.map((p) => p.total)) * 1.08;
  const x = (c) => L + (W - L - R) * (Math.log2(c) - xmin) / Math.max(1e-9, xmax - xmin);
  const y = (b) => H - B - (H - B - T) * b / ymax;
  let out = `<polyline fill="none" stroke="#3b6fd8" stroke-width="2" points="${pts.map((p) => `${x(p.ctx)},${y(p.total)}`).join(" ")}"/>`;
  if (curve.capacity) out += `<line x1="${L}" x2="${W - R}" y1="${y(curve.capacity)}" y2="${y(curve.capacity)}" stroke="#c62828" stroke-dasharray="5 4"/>`
    + `<text x="${W - R - 4}" y="${y(curve.capacity) - 4}" text-anchor="end" font-size="11" fill="#c62828">${curve.device}: ${fmt(curve.capacity)}</text>`;
  if (plan.max_context) out += `<line x1="${x(plan.max_context)}" x2="${x(plan.max_context)}" y1="${T}" y2="${H - B}" stroke="#1b7f3b"/>`
    // the label sits left of the line when the line is in the right half, so it is never cut at the edge
    + (x(plan.max_context) > W / 2
      ? `<text x="${x(plan.max_context) - 4}" y="${T + 12}" text-anchor="end" font-size="11" fill="#1b7f3b">max ${plan.max_context.toLocaleString("en-US")}</text>`
      : `<text x="${x(plan.max_context) + 4}" y="${T + 12}" font-size="11" fill="#1b7f3b">max ${plan.max_context.toLocaleString("en-US")}</text>`);
  pts.forEach((p, i) => { out += `<text x="${x(p.ctx)}" y="${H - 8}" text-anchor="${i === pts.length - 1 ? "end" : "middle"}" font-size="10">${p.ctx >= 1024 ? p.ctx / 1024 + "K" : p.ctx}</text>`; });
  for (let i = 0; i <= 4; i++) out += `<text x="${L - 6}" y="${y(ymax * i / 4.32) + 4}" text-anchor="end" font-size="10">${fmt(ymax * i / 4.32)}</text>`;
  svg.innerHTML = out;
}

async function init() {
  const [models, devices, runtimes] = await Promise.all([getJSON("/api/v1/models"), getJSON("/api/v1/hardware"),
                                                          getJSON("/api/v1/runtimes")]);
  $("model-list").replaceChildren(...models.map((m) => Object.assign(document.createElement("option"), { value: m.alias, label: m.repo_id })));
  for (const sel of [$("gpu"), $("compare-devices")]) {
    sel.replaceChildren(...devices.map((d) => Object.assign(document.createElement("option"),
      { value: d.id, textContent: `${d.name} (${(d.memory_bytes / GiB).toFixed(0)} GiB)` })));
  }
  const first = [...$("gpu").options].find((o) => o.value === "rtx-4090");
  if (first) first.selected = true;
  $("runtime").replaceChildren(...runtimes.map((r) => Object.assign(document.createElement("option"), { value: r, textContent: r })));
  for (const el of document.querySelectorAll("#check-form input, #check-form select")) el.addEventListener("input", schedule);
  schedule();
}

// --- troubleshoot ---------------------------------------------------------------------------
async function searchErrors() {
  const q = $("error-q").value.trim();
  const entries = await getJSON("/api/v1/errors" + (q ? "?q=" + encodeURIComponent(q) : ""));
  $("error-list").replaceChildren(...entries.slice(0, 30).map((e) => Object.assign(document.createElement("li"),
    { textContent: `${e.title} (${e.category})` })));
}

async function diagnose() {
  const out = $("diagnosis");
  try {
    const d = await getJSON("/api/v1/diagnose", { method: "POST", headers: { "content-type": "application/json" },
                                                   body: JSON.stringify({ text: $("log").value }) });
    out.innerHTML = "<h3></h3><p></p><ol></ol>";
    out.querySelector("h3").textContent = `${d.title} [${d.category}]`;
    out.querySelector("p").textContent = d.cause || "";
    out.querySelector("ol").replaceChildren(...d.fixes.map((f) => {
      const li = document.createElement("li");
      li.textContent = `${f.title}${f.effect ? " — " + f.effect : ""}`;
      if (f.command) li.append(Object.assign(document.createElement("code"), { textContent: f.command }));
      return li;
    }));
  } catch (e) { out.textContent = e.message; }
}

// --- compare --------------------------------------------------------------------------------
async function compare() {
  const ids = [...$("compare-devices").selectedOptions].map((o) => o.value);
  const table = $("compare-table");
  if (!ids.length) { table.innerHTML = "<tr><td>Pick two or more devices</td></tr>"; return; }
  const q = new URLSearchParams({ devices: ids.join(","), model: $("compare-model").value.trim() });
  try {
    const rows = await getJSON("/api/v1/compare?" + q);
    const cols = ["name", "memory", "bandwidth_gbs", "largest_model", "quant", "verdict", "max_context",
      "decode_tokens_per_s", "price_usd", "tokens_per_s_per_1000_usd"];
    const cell = (r, c) => c === "memory" ? fmt(r.usable_bytes ?? r.memory_bytes)
      : c === "largest_model" ? (r.largest_model ? `${r.largest_model.alias} ${r.largest_model.quant}` : "—")
      : (r[c] ?? "—").toLocaleString("en-US");
    table.innerHTML = "<tr>" + cols.map((c) => `<th>${c.replace(/_/g, " ")}</th>`).join("") + "</tr>";
    for (const r of rows) {
      const tr = document.createElement("tr");
      for (const c of cols) tr.append(Object.assign(document.createElement("td"), { textContent: cell(r, c) }));
      table.append(tr);
    }
  } catch (e) { table.innerHTML = ""; table.append(Object.assign(document.createElement("caption"), { textContent: e.message })); }
}

function showView() {
  const view = (location.hash || "#check").slice(1);
  for (const s of document.querySelectorAll(".view")) s.hidden = s.id !== "view-" + view;
  for (const a of document.querySelectorAll("nav a")) a.classList.toggle("active", a.dataset.view === view);
  if (view === "errors") searchErrors();
}

window.addEventListener("hashchange", showView);
$("error-q").addEventListener("input", () => { clearTimeout(timer); timer = setTimeout(searchErrors, 200); });
$("diagnose-btn").addEventListener("click", diagnose);
$("compare-btn").addEventListener("click", compare);
showView();
init().catch((e) => { $("verdict").textContent = e.message; });
