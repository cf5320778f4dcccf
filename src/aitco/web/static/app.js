// aitco web: turns the scenario builder into the JSON body of POST /api/v1/compare (the same
// API the OpenAPI schema documents), and fetches downloads from POST /api/v1/report.
// Each option row stands for one option per ticked pricing mode; which modes a row can price
// comes from GET /api/v1/pricing (the offer selection compare prices with).
// Errors are shown next to the field they concern; the last good result stays, marked out of date.
"use strict";

// modes that rent nothing: the row's provider does not apply (aitco.decide.scenario.OWNED_PRICING)
const OWNED = ["owned", "colocation"];

function num(v) { return v === "" || v === null ? null : Number(v); }

function currentKind() { return document.getElementById("kind").value; }

function kindBox(form, kind) { return form.querySelector('fieldset.options[data-kind="' + kind + '"]'); }

function field(form, name, kind) {
  const all = form.querySelectorAll('[name="' + name + '"]');
  for (const el of all) {
    const box = el.closest("[class*='only-']");
    if (!box || box.classList.contains("only-" + kind)) { return el; }
  }
  return null;
}

function value(form, name, kind) {
  const el = field(form, name, kind);
  return el ? el.value : null;
}

// the options of the visible rows, and the row each one came from (for error messages)
function rowOptions(form, kind) {
  const options = [], rowOf = [];
  kindBox(form, kind).querySelectorAll(".opt-row").forEach((row, r) => {
    const hw = row.querySelector('select[name="hardware"]').value;
    if (!hw) { return; }
    const gpus = num(row.querySelector('input[name="gpus"]').value);
    const provider = row.querySelector('select[name="provider"]').value;
    row.querySelectorAll('input[name="pricing"]:checked').forEach((box) => {
      const o = { hardware: hw, gpus: gpus, pricing: box.value };
      if (provider && OWNED.indexOf(box.value) < 0) { o.provider = provider; }
      options.push(o);
      rowOf.push(r);
    });
  });
  return { options: options, rowOf: rowOf };
}

let lastRowOf = [];

function buildScenario(form) {
  const kind = currentKind();
  const workload = { kind: kind, model: value(form, "model", kind), precision: value(form, "precision", kind) };
  const names = kind === "training"
    ? ["tokens", "seq_len", "global_batch"]
    : ["input_tokens", "output_tokens", "qps", "months", "slo_ttft_ms", "slo_tpot_ms"];
  names.forEach((n) => { workload[n] = num(value(form, n, kind)); });
  for (const k of Object.keys(workload)) { if (workload[k] === null) { delete workload[k]; } }
  const rows = rowOptions(form, kind);
  lastRowOf = rows.rowOf;
  const name = form.querySelector('input[name="name"]').value;
  const scenario = { name: name || "web scenario", workload: workload, options: rows.options };
  if (kind === "inference") {
    const gb = num(value(form, "log_gb_per_day", kind)), days = num(value(form, "log_retention_days", kind));
    if (gb || days) { scenario.compliance = { gb_per_day: gb || 0, retention_days: days || 0 }; }
  }
  return scenario;
}

// ---------------------------------------------------------------- errors next to their field
function fieldElement(form, input, row) {
  if (!input) { return null; }
  const kind = currentKind();
  if (row !== null && row !== undefined) {
    const r = lastRowOf[row] !== undefined ? lastRowOf[row] : row;
    const rowEl = kindBox(form, kind).querySelectorAll(".opt-row")[r];
    if (rowEl) {
      return rowEl.querySelector('[name="' + input + '"]') || rowEl.querySelector("select");
    }
  }
  return field(form, input, kind);
}

function clearErrors() {
  document.querySelectorAll(".field-error").forEach((e) => e.remove());
  document.querySelectorAll("[aria-invalid]").forEach((e) => {
    e.removeAttribute("aria-invalid"); e.classList.remove("invalid");
  });
  const fe = document.getElementById("form-error");
  fe.hidden = true; fe.textContent = "";
}

function markStale(why) {
  const results = document.getElementById("results");
  if (results.querySelector(".results")) {
    results.classList.add("stale");
    document.getElementById("stale").hidden = false;
    document.getElementById("stale-why").textContent = why || "";
  }
}

function markFresh() {
  document.getElementById("results").classList.remove("stale");
  document.getElementById("stale").hidden = true;
}

let errorCount = 0;

function showErrorAt(el, message) {
  el.setAttribute("aria-invalid", "true");
  el.classList.add("invalid");
  const msg = document.createElement("span");
  msg.className = "field-error";
  msg.setAttribute("role", "alert");
  errorCount += 1;
  msg.id = "error-" + (el.name || "field") + "-" + errorCount;
  msg.textContent = message;
  el.setAttribute("aria-describedby", msg.id);
  // beside the field; a checkbox's message goes after its group of modes
  const anchor = el.type === "checkbox" ? el.closest("fieldset") : el;
  anchor.insertAdjacentElement("afterend", msg);
  if (el.focus && document.activeElement !== el) { el.focus({ preventScroll: true }); }
}

function showFieldError(form, input, row, message) {
  const el = fieldElement(form, input, row);
  if (!el) {
    const fe = document.getElementById("form-error");
    fe.textContent = message; fe.hidden = false;
    return;
  }
  showErrorAt(el, message);
}

function showApiError(form, status, text) {
  let err = null;
  try { err = JSON.parse(text).error; } catch (e) { err = null; }
  if (!err) { err = { message: "The server did not answer (" + status + ")." }; }
  const where = err.form || {};
  let message = err.form_message || err.message;
  // the API counts options; the page shows rows (a row holds one option per ticked pricing)
  if (where.row !== null && where.row !== undefined && lastRowOf[where.row] !== undefined) {
    message = message.split("(option " + (where.row + 1) + ")").join("(row " + (lastRowOf[where.row] + 1) + ")");
  }
  // form_message already carries the hint when the form can follow it (no CLI flags)
  showFieldError(form, where.input, where.row, message);
  markStale("Fix: " + message);
}

// what the browser can tell before asking the server: empty or non-numeric visible fields
function checkLocally(form) {
  let ok = true;
  form.querySelectorAll('input[type="number"]').forEach((el) => {
    if (el.closest("[hidden]") || el.dataset.roi || (el.dataset.optional && el.value === "")) { return; }
    const row = el.closest(".opt-row");
    if (row) {
      const hw = row.querySelector('select[name="hardware"]');
      if (hw && !hw.value) { return; }
    }
    if (el.value === "" || !Number.isFinite(Number(el.value))) {
      const lab = el.getAttribute("aria-label") || (el.closest("label") ? el.closest("label").firstChild.textContent.trim() : el.name);
      const what = el.validity && el.validity.badInput ? "is not a number" : "is empty";
      showErrorAt(el, lab + " " + what + ": enter a number.");
      ok = false;
    }
  });
  if (!ok) { markStale("Fix the highlighted field."); }
  return ok;
}

// ---------------------------------------------------------------- only priceable choices
function applyPricing(row, answer) {
  const prov = row.querySelector('select[name="provider"]');
  const keep = prov.value;
  while (prov.options.length > 2) { prov.remove(2); }
  answer.providers.forEach((p) => { prov.add(new Option(p, p)); });
  prov.value = answer.providers.indexOf(keep) >= 0 || keep === "any" ? keep : "";
  const whys = [];
  row.querySelectorAll('input[name="pricing"]').forEach((box) => {
    const why = answer.pricing[box.value] || "";
    box.disabled = !!why;
    box.closest("label").classList.toggle("off", !!why);
    if (why) { box.checked = false; box.title = why; whys.push(box.value.replace(/_/g, " ") + ": " + why); }
    else { box.removeAttribute("title"); }
  });
  if (!row.querySelector('input[name="pricing"]:checked')) {
    const first = row.querySelector('input[name="pricing"]:not(:disabled)');
    if (first) { first.checked = true; }
  }
  const p = row.querySelector("p.why");
  p.textContent = whys.join("; ");
  p.hidden = !whys.length;
}

async function syncRow(row) {
  const hw = row.querySelector('select[name="hardware"]').value;
  if (!hw) { return; }
  const gpus = Number(row.querySelector('input[name="gpus"]').value) || 1;
  const provider = row.querySelector('select[name="provider"]').value;
  const q = new URLSearchParams({ hardware: hw, gpus: String(Math.max(1, Math.round(gpus))), provider: provider });
  try {
    const resp = await fetch("/api/v1/pricing?" + q.toString());
    if (resp.ok) { applyPricing(row, await resp.json()); }
  } catch (e) { /* the compare request reports an unreachable server */ }
}

htmx.defineExtension("scenario-json", {
  onEvent: function (name, evt) {
    if (name === "htmx:configRequest") { evt.detail.headers["Content-Type"] = "application/json"; }
  },
  encodeParameters: function (xhr, parameters, elt) {
    xhr.overrideMimeType("text/html");
    return JSON.stringify(buildScenario(elt.closest("form")));
  },
});

// 2xx: swap in the new answer; anything else: keep the last answer and show why
htmx.config.responseHandling = [
  { code: "204", swap: false },
  { code: "[23]..", swap: true },
  { code: "...", swap: false, error: false },
];

function syncKind() {
  const form = document.getElementById("scenario-form");
  const kind = currentKind();
  document.querySelectorAll(".only-training").forEach((e) => { e.hidden = kind !== "training"; });
  document.querySelectorAll(".only-inference").forEach((e) => { e.hidden = kind !== "inference"; });
  // the name follows the kind's default scenario until the user types one
  const name = form.querySelector('input[name="name"]');
  const other = kind === "training" ? form.dataset.nameInference : form.dataset.nameTraining;
  if (name.value === other) { name.value = kind === "training" ? form.dataset.nameTraining : form.dataset.nameInference; }
}

// ---------------------------------------------------------------- "updated" cue
let answered = 0;

function showUpdated() {
  answered += 1;
  const results = document.getElementById("results");
  results.classList.remove("just-updated");
  void results.offsetWidth;  // restart the highlight animation
  results.classList.add("just-updated");
  const stamp = document.getElementById("results-stamp");
  const now = new Date().toLocaleTimeString();
  if (stamp) { stamp.textContent = "Updated " + now; }
  if (answered < 2) { return; }  // the first answer is not an update
  // the answer in view (a desktop, or a phone scrolled to it): the highlight is enough
  const box = results.getBoundingClientRect();
  if (box.top >= 0 && box.top < window.innerHeight * 0.5) { return; }
  const toast = document.getElementById("updated");
  const verdict = document.getElementById("verdict");
  document.getElementById("updated-what").textContent = verdict ? verdict.textContent : "";
  toast.hidden = false;
  clearTimeout(showUpdated.timer);
  showUpdated.timer = setTimeout(() => { toast.hidden = true; }, 6000);
}

async function download(format) {
  const form = document.getElementById("scenario-form");
  clearErrors();
  if (!checkLocally(form)) { return; }
  const q = new URLSearchParams({ format: format });
  if (format === "xlsx") {
    form.querySelectorAll("input[data-roi]").forEach((el) => { if (el.value !== "") { q.set(el.name, el.value); } });
  }
  const resp = await fetch("/api/v1/report?" + q.toString(), {
    method: "POST", headers: { "Content-Type": "application/json" },
    body: JSON.stringify(buildScenario(form)),
  });
  if (!resp.ok) {
    showApiError(form, resp.status, await resp.text());
    return;
  }
  const cd = resp.headers.get("content-disposition") || "";
  const m = /filename="([^"]+)"/.exec(cd);
  const blob = await resp.blob();
  const a = document.createElement("a");
  a.href = URL.createObjectURL(blob);
  a.download = m ? m[1] : "aitco." + format;
  document.body.appendChild(a);
  a.click();
  setTimeout(() => { URL.revokeObjectURL(a.href); a.remove(); }, 1000);
}

document.addEventListener("DOMContentLoaded", () => {
  const form = document.getElementById("scenario-form");
  document.getElementById("kind").addEventListener("change", syncKind);
  syncKind();
  form.querySelectorAll(".opt-row").forEach((row) => {
    // hardware, GPUs and provider change what can be priced: ask first, then compare
    row.querySelectorAll('select[name="hardware"], input[name="gpus"], select[name="provider"]').forEach((el) => {
      el.addEventListener("change", async (evt) => {
        evt.stopPropagation();
        await syncRow(row);
        form.dispatchEvent(new Event("change"));
      });
    });
  });
  // the ROI fields only shape the workbook download
  form.querySelectorAll("input[data-roi]").forEach((el) => {
    el.addEventListener("change", (evt) => evt.stopPropagation());
  });
  document.querySelectorAll("button.dl").forEach((b) => {
    b.addEventListener("click", () => download(b.dataset.format));
  });
  form.addEventListener("htmx:configRequest", (evt) => {
    clearErrors();
    if (!checkLocally(form)) { evt.preventDefault(); }
  });
  form.addEventListener("htmx:afterRequest", (evt) => {
    const xhr = evt.detail.xhr;
    if (!xhr) { return; }
    if (xhr.status >= 200 && xhr.status < 300) { clearErrors(); markFresh(); showUpdated(); return; }
    showApiError(form, xhr.status, xhr.responseText);
  });
  form.addEventListener("htmx:sendError", () => { markStale("The server cannot be reached."); });
});
