// aitco web: turns the scenario builder into the JSON body of POST /api/v1/compare (the same
// API the OpenAPI schema documents), and fetches downloads from POST /api/v1/report.
// Errors are shown next to the field they concern; the last good result stays, marked out of date.
"use strict";

function num(v) { return v === "" || v === null ? null : Number(v); }

function buildScenario(form) {
  const f = new FormData(form);
  const kind = f.get("kind");
  const workload = { kind: kind, model: f.get("model"), precision: f.get("precision") };
  if (kind === "training") {
    workload.tokens = num(f.get("tokens"));
    workload.seq_len = num(f.get("seq_len"));
    workload.global_batch = num(f.get("global_batch"));
  } else {
    workload.input_tokens = num(f.get("input_tokens"));
    workload.output_tokens = num(f.get("output_tokens"));
    workload.qps = num(f.get("qps"));
    workload.months = num(f.get("months"));
  }
  const hw = f.getAll("hardware"), gpus = f.getAll("gpus"), pricing = f.getAll("pricing");
  const options = [];
  hw.forEach((h, i) => { if (h) options.push({ hardware: h, gpus: num(gpus[i]), pricing: pricing[i] }); });
  for (const k of Object.keys(workload)) { if (workload[k] === null) delete workload[k]; }
  return { name: f.get("name") || "web scenario", workload: workload, options: options };
}

// ---------------------------------------------------------------- errors next to their field
function fieldElement(form, input, row) {
  if (!input) { return null; }
  const all = form.querySelectorAll('[name="' + input + '"]');
  if (!all.length) { return null; }
  return all[row === null || row === undefined ? 0 : Math.min(row, all.length - 1)];
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

function showFieldError(form, input, row, message) {
  const el = fieldElement(form, input, row);
  if (!el) {
    const fe = document.getElementById("form-error");
    fe.textContent = message; fe.hidden = false;
    return;
  }
  el.setAttribute("aria-invalid", "true");
  el.classList.add("invalid");
  const msg = document.createElement("span");
  msg.className = "field-error";
  msg.setAttribute("role", "alert");
  msg.id = "error-" + input + (row === null || row === undefined ? "" : "-" + row);
  msg.textContent = message;
  el.setAttribute("aria-describedby", msg.id);
  el.insertAdjacentElement("afterend", msg);
  if (el.focus && document.activeElement !== el) { el.focus({ preventScroll: true }); }
}

function showApiError(form, status, text) {
  let err = null;
  try { err = JSON.parse(text).error; } catch (e) { err = null; }
  if (!err) { err = { message: "The server did not answer (" + status + ")." }; }
  const where = err.form || {};
  const message = err.form_message || err.message;
  // form_message already carries the hint when the form can follow it (no CLI flags)
  showFieldError(form, where.input, where.row, message);
  markStale("Fix: " + message);
}

// what the browser can tell before asking the server: empty or non-numeric visible fields
function checkLocally(form) {
  let ok = true;
  form.querySelectorAll('input[type="number"]').forEach((el) => {
    if (el.closest("[hidden]")) { return; }
    const row = el.closest("tr.opt-row");
    if (row) {
      const hw = row.querySelector('select[name="hardware"]');
      if (hw && !hw.value) { return; }
    }
    if (el.value === "" || !Number.isFinite(Number(el.value))) {
      const lab = el.getAttribute("aria-label") || (el.closest("label") ? el.closest("label").firstChild.textContent.trim() : el.name);
      const what = el.validity && el.validity.badInput ? "is not a number" : "is empty";
      const rows = form.querySelectorAll('[name="' + el.name + '"]');
      const idx = Array.prototype.indexOf.call(rows, el);
      showFieldError(form, el.name, rows.length > 1 ? idx : null, lab + " " + what + ": enter a number.");
      ok = false;
    }
  });
  if (!ok) { markStale("Fix the highlighted field."); }
  return ok;
}

// ---------------------------------------------------------------- only priceable combinations
function syncPricing(row) {
  const hw = row.querySelector('select[name="hardware"]');
  const pricing = row.querySelector('select[name="pricing"]');
  if (!hw || !pricing) { return; }
  const opt = hw.options[hw.selectedIndex];
  const allowed = opt && opt.dataset.pricing !== undefined ? opt.dataset.pricing.split(" ") : null;
  let firstOk = null;
  Array.prototype.forEach.call(pricing.options, (p) => {
    const ok = !allowed || allowed.indexOf(p.value) >= 0;
    p.disabled = !ok;
    p.textContent = p.value.replace(/_/g, " ") + (ok ? "" : " (no price)");
    if (ok && firstOk === null) { firstOk = p.value; }
  });
  if (pricing.options[pricing.selectedIndex] && pricing.options[pricing.selectedIndex].disabled && firstOk) {
    pricing.value = firstOk;
  }
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
  const kind = document.getElementById("kind").value;
  document.querySelectorAll(".only-training").forEach((e) => { e.hidden = kind !== "training"; });
  document.querySelectorAll(".only-inference").forEach((e) => { e.hidden = kind !== "inference"; });
}

async function download(format) {
  const form = document.getElementById("scenario-form");
  clearErrors();
  if (!checkLocally(form)) { return; }
  const resp = await fetch("/api/v1/report?format=" + format, {
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
  document.querySelectorAll("tr.opt-row").forEach((row) => {
    syncPricing(row);
    row.querySelector('select[name="hardware"]').addEventListener("change", () => syncPricing(row));
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
    if (xhr.status >= 200 && xhr.status < 300) { clearErrors(); markFresh(); return; }
    showApiError(form, xhr.status, xhr.responseText);
  });
  form.addEventListener("htmx:sendError", () => { markStale("The server cannot be reached."); });
});
