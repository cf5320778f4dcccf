// aitco web: turns the scenario builder into the JSON body of POST /api/v1/compare (the same
// API the OpenAPI schema documents), and fetches downloads from POST /api/v1/report.
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

htmx.defineExtension("scenario-json", {
  onEvent: function (name, evt) {
    if (name === "htmx:configRequest") { evt.detail.headers["Content-Type"] = "application/json"; }
  },
  encodeParameters: function (xhr, parameters, elt) {
    xhr.overrideMimeType("text/html");
    return JSON.stringify(buildScenario(elt.closest("form")));
  },
});

// show validation errors (422) from the API instead of ignoring them
htmx.config.responseHandling = [
  { code: "204", swap: false },
  { code: "[23]..", swap: true },
  { code: "4..", swap: true, error: false },
  { code: "...", swap: false, error: true },
];

function syncKind() {
  const kind = document.getElementById("kind").value;
  document.querySelectorAll(".only-training").forEach((e) => { e.hidden = kind !== "training"; });
  document.querySelectorAll(".only-inference").forEach((e) => { e.hidden = kind !== "inference"; });
}

async function download(format) {
  const form = document.getElementById("scenario-form");
  const resp = await fetch("/api/v1/report?format=" + format, {
    method: "POST", headers: { "Content-Type": "application/json" },
    body: JSON.stringify(buildScenario(form)),
  });
  if (!resp.ok) {
    const err = await resp.json().catch(() => ({ error: { message: resp.statusText } }));
    document.getElementById("results").insertAdjacentHTML("afterbegin",
      '<div class="error" role="alert"></div>');
    document.querySelector("#results .error").textContent = "Download failed: " + (err.error.message || resp.status);
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
  document.getElementById("kind").addEventListener("change", syncKind);
  syncKind();
  document.querySelectorAll("button.dl").forEach((b) => {
    b.addEventListener("click", () => download(b.dataset.format));
  });
});
