"use strict";
// Progressive enhancement only: every page works as plain HTML forms and links. This script submits
// [data-enhance] forms in place (same GET URL, so the address stays shareable), shows a loading state,
// drops a stale answer as soon as a new one is asked for, and copies commands to the clipboard.
(() => {
  const LOADING_DELAY_MS = 120, CHANGE_DEBOUNCE_MS = 250;
  let inflight = null, timer = null;

  function formURL(form) {
    const data = new FormData(form), q = new URLSearchParams();
    const gpus = data.getAll("gpu"), counts = data.getAll("n");
    for (const [k, v] of data) {
      if (k === "gpu" || k === "n" || String(v).trim() === "") continue;
      q.append(k, v);
    }
    // a device row's count goes with it on the check form only: the Cost form's gpu has no n, and an n there
    // read "n: not a field of this page — ignored" on every answer
    gpus.forEach((g, i) => {
      if (!g.trim()) return;
      q.append("gpu", g.trim());
      if (counts.length) q.append("n", counts[i] || "1");
    });
    return (form.getAttribute("action") || location.pathname) + "?" + q.toString();
  }

  async function load(url, form, push) {
    const result = document.querySelector("[data-result]");
    if (!result) { location.href = url; return; }
    if (inflight) inflight.abort();
    const ctl = inflight = new AbortController();
    const status = result.querySelector(".loading");
    const show = setTimeout(() => {
      result.setAttribute("aria-busy", "true");
      if (status) status.textContent = status.dataset.loadingText || "Loading…";
    }, LOADING_DELAY_MS);
    try {
      const r = await fetch(url, { signal: ctl.signal, headers: { Accept: "text/html" } });
      const doc = new DOMParser().parseFromString(await r.text(), "text/html");
      const fresh = doc.querySelector("[data-result]");
      if (!fresh) throw new Error(`the server answered ${r.status} ${r.statusText}`);
      swapForm(form, doc);
      result.replaceWith(fresh);
      document.title = doc.title;
      if (push) history.pushState(null, "", url);
      enhance(fresh);
    } catch (e) {
      if (e.name === "AbortError") return;
      // an error replaces the old answer: never leave a stale verdict beside it
      result.replaceChildren(Object.assign(document.createElement("div"), { className: "error", role: "alert",
        textContent: "Could not get an answer: " + e.message }));
      result.removeAttribute("aria-busy");
    } finally {
      clearTimeout(show);
      if (inflight === ctl) inflight = null;
    }
  }

  // A runtime's options differ from another's: take the server's new form, keeping focus where it was.
  function swapForm(form, doc) {
    if (!form || !form.id) return;
    const fresh = doc.getElementById(form.id);
    if (!fresh) return;
    const names = (f) => [...f.elements].map((e) => e.name + ":" + e.tagName + ":" + (e.options ? e.options.length : "")).join("|");
    if (names(fresh) === names(form)) return;
    const focused = document.activeElement && document.activeElement.id;
    form.replaceWith(fresh);
    wireForm(fresh);
    if (focused && document.getElementById(focused)) document.getElementById(focused).focus();
  }

  function wireForm(form) {
    form.addEventListener("submit", (ev) => {
      ev.preventDefault();
      clearTimeout(timer);
      load(formURL(form), form, true);
    });
    // selects and finished text entries (change, not every keystroke) re-plan by themselves
    form.addEventListener("change", (ev) => {
      if (ev.target.matches("textarea, [data-no-auto]")) return;
      growDeviceRows(form);
      clearTimeout(timer);
      // a select is one decision: at once; a number field steps per arrow key: wait for the last step
      const delay = ev.target.tagName === "SELECT" ? 0 : CHANGE_DEBOUNCE_MS;
      timer = setTimeout(() => load(formURL(form), form, true), delay);
    });
    // typing in another field holds a pending re-plan back: it would send the half-typed value
    form.addEventListener("input", (ev) => {
      if (ev.target.matches("input:not([type=number]), textarea")) clearTimeout(timer);
    });
  }

  // the server sends one empty device row; filling it adds the next
  function growDeviceRows(form) {
    const list = form.querySelector("#device-rows");
    if (!list) return;
    const rows = list.querySelectorAll(".device-row");
    const last = rows[rows.length - 1];
    if (!last || !last.querySelector("input[name=gpu]").value.trim() || rows.length >= 8) return;
    const i = rows.length + 1, row = last.cloneNode(true);
    for (const el of row.querySelectorAll("[id]")) el.id = el.id.replace(/\d+$/, i);
    for (const el of row.querySelectorAll("label[for]")) {
      el.htmlFor = el.htmlFor.replace(/\d+$/, i);
      el.textContent = el.textContent.replace(/\d+$/, i);
    }
    row.querySelector("input[name=gpu]").value = "";
    row.querySelector("input[name=n]").value = "1";
    list.append(row);
  }

  function enhance(root) {
    for (const b of root.querySelectorAll("button[data-copy]")) {
      b.hidden = false;
      b.addEventListener("click", async () => {
        try { await navigator.clipboard.writeText(b.dataset.copy); b.firstChild.textContent = "Copied"; }
        catch { b.firstChild.textContent = "Select and copy"; }
        setTimeout(() => { b.firstChild.textContent = "Copy"; }, 1500);
      });
    }
  }

  document.addEventListener("DOMContentLoaded", () => {
    for (const form of document.querySelectorAll("form[data-enhance]")) wireForm(form);
    enhance(document);
    window.addEventListener("popstate", () => {
      const form = document.querySelector("form[data-enhance]");
      if (form) load(location.href, form, false); else location.reload();
    });
  });
})();
