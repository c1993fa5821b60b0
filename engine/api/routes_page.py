"""The page `denpex serve` offers people: paste or drop logs, read the report.

Consumes nothing on the server: `GET /` returns one self-contained page (no external asset, so
it works offline). In the browser, the page signs each request with the tenant's secret the
person types in (kept in the tab's sessionStorage only), exactly as a bot signs it
(`denpex.auth`): WebCrypto's SHA-256 and HMAC, a fresh nonce. It posts the pasted text or
the dropped file (a log or an archive) to `POST /v1/diagnoses?render=html`, follows a job's
status URL when the server answers 202, and shows the HTML report in a sandboxed frame.
"""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import HTMLResponse

router = APIRouter(include_in_schema=False)

PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>denpex: diagnose a failed run</title>
<link rel="icon" href="data:,">
<style>
body{font-family:system-ui,sans-serif;margin:1.5em auto;max-width:1150px;padding:0 1em;color:#222}
h1{font-size:1.3em} label{display:block;font-size:.9em;margin:.4em 0 .1em}
input,textarea{font:inherit;width:100%;box-sizing:border-box;padding:.35em;border:1px solid #8c959f;
border-radius:4px} textarea{font-family:monospace;font-size:.85em;height:14em}
#drop{border:2px dashed #8c959f;border-radius:6px;padding:1em;margin:.6em 0;text-align:center}
#drop.over{background:#ddf4ff;border-color:#0969da} .row{display:flex;gap:1em} .row>div{flex:1}
button{font:inherit;padding:.4em 1.2em;margin-top:.6em;cursor:pointer}
#status{margin:.6em 0;color:#57606a} #status.error{color:#cf222e}
iframe{width:100%;height:80vh;border:1px solid #d0d7de;border-radius:4px;margin-top:.6em}
</style></head><body>
<h1>denpex: why did this run fail?</h1>
<div class="row">
<div><label for="tenant">Tenant</label><input id="tenant" autocomplete="username"></div>
<div><label for="secret">Secret</label>
<input id="secret" type="password" autocomplete="current-password"></div>
</div>
<label for="log">Paste every rank's log lines here</label>
<textarea id="log" spellcheck="false" placeholder="[rank3]: IndexError: ..."></textarea>
<div id="drop">…or drop a log, a .tar.gz or a .zip here, or
<input id="file" type="file" aria-label="choose a file"></div>
<button id="go" type="button">Diagnose</button>
<div id="status" role="status" aria-live="polite"></div>
<iframe id="report" title="diagnosis report" sandbox hidden></iframe>
<script>
"use strict";
const $ = (id) => document.getElementById(id);
let dropped = null;
for (const id of ["tenant", "secret"]) {
  $(id).value = sessionStorage.getItem("denpex." + id) || "";
  $(id).addEventListener("change", () => sessionStorage.setItem("denpex." + id, $(id).value));
}
function say(text, error) {
  $("status").textContent = text;
  $("status").className = error ? "error" : "";
}
function hex(buffer) {
  return Array.from(new Uint8Array(buffer), (b) => b.toString(16).padStart(2, "0")).join("");
}
function nonce() {
  const bytes = crypto.getRandomValues(new Uint8Array(18));
  return btoa(String.fromCharCode(...bytes)).replace(/\\+/g, "-").replace(/\\//g, "_");
}
function canonicalQuery(query) {
  const pairs = Array.from(new URLSearchParams(query));
  pairs.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : a[1] < b[1] ? -1 : 1));
  return pairs.map(([k, v]) => encodeURIComponent(k) + "=" + encodeURIComponent(v)).join("&");
}
async function signedFetch(method, path, query, body) {
  const tenant = $("tenant").value.trim();
  const secret = $("secret").value;
  const bytes = body || new Uint8Array(0);
  const digest = hex(await crypto.subtle.digest("SHA-256", bytes));
  const timestamp = String(Math.floor(Date.now() / 1000));
  const once = nonce();
  const message = ["v2", tenant, timestamp, once, method, path, canonicalQuery(query)]
    .join(":") + ":" + digest;
  const key = await crypto.subtle.importKey(
    "raw", new TextEncoder().encode(secret), {name: "HMAC", hash: "SHA-256"}, false, ["sign"]);
  const mac = hex(await crypto.subtle.sign("HMAC", key, new TextEncoder().encode(message)));
  return fetch(path + (query ? "?" + query : ""), {
    method, body: method === "GET" ? undefined : bytes,
    headers: {
      "X-Denpex-Tenant": tenant, "X-Denpex-Timestamp": timestamp, "X-Denpex-Nonce": once,
      "X-Denpex-Content-SHA256": digest, "X-Denpex-Signature": "v2=" + mac,
    },
  });
}
async function problem(response) {
  try {
    const document = await response.json();
    return document.detail || response.statusText;
  } catch (error) {
    return response.statusText;
  }
}
function show(html) {
  $("report").srcdoc = html;
  $("report").hidden = false;
}
async function diagnose() {
  if (!window.crypto || !crypto.subtle) {
    say("This page signs requests with WebCrypto: open it over HTTPS or on localhost.", true);
    return;
  }
  const body = dropped || new TextEncoder().encode($("log").value);
  if (!body.length) { say("Paste some log lines or drop a file first.", true); return; }
  $("go").disabled = true;
  say("Diagnosing " + body.length + " bytes…");
  try {
    const response = await signedFetch("POST", "/v1/diagnoses", "render=html", body);
    if (response.status === 202) {
      const job = await response.json();
      await follow(job.id);
    } else if (response.ok) {
      const document = await response.json();
      say(document.diagnosis.status + ": diagnosis " + document.id);
      show(document.rendered);
    } else {
      say(response.status + ": " + await problem(response), true);
    }
  } catch (error) {
    say("The request failed: " + error, true);
  } finally {
    $("go").disabled = false;
  }
}
async function follow(id) {
  for (;;) {
    const response = await signedFetch("GET", "/v1/jobs/" + id, "", null);
    if (!response.ok) { say(response.status + ": " + await problem(response), true); return; }
    const job = await response.json();
    if (job.state === "failed") { say("The job failed: " + job.problem.detail, true); return; }
    if (job.state === "done") break;
    say("Job " + id + " is " + job.state + "…");
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
  const report = await signedFetch("GET", "/v1/diagnoses/" + id, "format=html", null);
  if (!report.ok) { say(report.status + ": " + await problem(report), true); return; }
  say("diagnosis " + id);
  show(await report.text());
}
async function take(file) {
  dropped = new Uint8Array(await file.arrayBuffer());
  say(file.name + ": " + dropped.length + " bytes ready; press Diagnose.");
}
$("go").addEventListener("click", diagnose);
$("log").addEventListener("input", () => { dropped = null; });
$("file").addEventListener("change", (event) => {
  if (event.target.files.length) take(event.target.files[0]);
});
const zone = $("drop");
zone.addEventListener("dragover", (event) => {
  event.preventDefault();
  zone.classList.add("over");
});
zone.addEventListener("dragleave", () => zone.classList.remove("over"));
zone.addEventListener("drop", (event) => {
  event.preventDefault();
  zone.classList.remove("over");
  if (event.dataTransfer.files.length) take(event.dataTransfer.files[0]);
});
</script></body></html>
"""


@router.get("/")
def page() -> HTMLResponse:
    return HTMLResponse(
        PAGE,
        headers={
            "Content-Security-Policy": "default-src 'self'; script-src 'unsafe-inline'; "
            "style-src 'unsafe-inline'; img-src data:; frame-src 'self' about: data:",
            "X-Content-Type-Options": "nosniff",
        },
    )
