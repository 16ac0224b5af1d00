// roost's web dashboard: plain JavaScript, no build step. Every value from the pool
// is put into the page as text (textContent), never as HTML.
"use strict";

const PAGE = 100;
const SVG = "http://www.w3.org/2000/svg";
const main = document.getElementById("main");
let generation = 0; // a view drawn after a newer navigation is dropped
let flash = null; // an action's outcome, shown on the job page drawn again after it

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") e.className = v;
    else if (k === "text") e.textContent = v;
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v);
  }
  for (const c of children) e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return e;
}

function svg(tag, attrs) {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  return e;
}

async function api(path, options) {
  const r = await fetch(path, options);
  let body;
  try { body = await r.json(); } catch (e) { body = { error: r.statusText }; }
  if (!r.ok) { const err = new Error(body.error || r.statusText); err.status = r.status; throw err; }
  return body;
}

function fmtTime(t) { return t ? new Date(t * 1000).toLocaleString() : ""; }
function fmtNum(n) { return Number(n || 0).toLocaleString("en-US"); }

// A view is ready once the frame showing it is drawn: what tests wait for, and
// roostRendered (ms since the navigation started) is what bench/web_bench.py measures.
function ready(view) {
  requestAnimationFrame(() => setTimeout(() => {
    window.roostRendered = performance.now();
    document.body.dataset.ready = view;
  }, 0));
}

function params(query) {
  const p = {};
  for (const [k, v] of new URLSearchParams(query || "")) p[k] = v;
  return p;
}

// a job ad value as the page shows it: expressions without the queue's /Expr(...)/ wrapping
function showValue(v) {
  if (typeof v !== "string") return JSON.stringify(v);
  return v.startsWith("/Expr(") && v.endsWith(")/") ? v.slice(6, -2) : v;
}

function link(hash, text) { return el("a", { href: hash, text }); }

function table(headers, rows, numeric) {
  const t = el("table");
  const tr = el("tr");
  for (const h of headers) tr.append(el("th", { text: h }));
  t.append(el("thead", {}, tr));
  const body = el("tbody");
  for (const r of rows) body.append(r);
  t.append(body);
  return t;
}

// -- the queue ------------------------------------------------------------------------
async function viewQueue(p, gen) {
  const offset = Math.max(0, parseInt(p.page || "0", 10) * PAGE);
  const q = new URLSearchParams({ offset: String(offset), limit: String(PAGE) });
  if (p.user) q.set("user", p.user);
  if (p.status) q.set("status", p.status);
  const [sum, jobs] = await Promise.all([api("/api/summary"), api("/api/jobs?" + q)]);
  if (gen !== generation) return;
  const frag = document.createDocumentFragment();
  const statuses = ["idle", "running", "held", "completed", "removed"];
  frag.append(el("h2", { text: `Queue: ${fmtNum(sum.jobs)} jobs` }));
  const rows = Object.entries(sum.users).map(([user, c]) => {
    const total = Object.values(c).reduce((a, b) => a + b, 0);
    const r = el("tr", { class: "pick", "data-user": user, onclick: () => { location.hash = "#queue?user=" + encodeURIComponent(user); } },
      el("td", {}, link("#queue?user=" + encodeURIComponent(user), user)),
      ...statuses.map((s) => el("td", { class: "num", text: fmtNum(c[s]) })),
      el("td", { class: "num", text: fmtNum(total) }));
    return r;
  });
  const userTable = table(["User", ...statuses, "total"], rows);
  userTable.id = "users-summary";
  frag.append(userTable);

  const filters = el("div", { class: "filters" });
  const userSel = el("select", { id: "filter-user" }, el("option", { value: "", text: "all users" }));
  for (const u of Object.keys(sum.users)) userSel.append(el("option", { value: u, text: u }));
  userSel.value = p.user || "";
  const statusSel = el("select", { id: "filter-status" }, el("option", { value: "", text: "any status" }));
  for (const s of sum.statuses) statusSel.append(el("option", { value: s, text: s }));
  statusSel.value = p.status || "";
  const go = () => {
    const n = new URLSearchParams();
    if (userSel.value) n.set("user", userSel.value);
    if (statusSel.value) n.set("status", statusSel.value);
    location.hash = "#queue?" + n;
  };
  userSel.addEventListener("change", go);
  statusSel.addEventListener("change", go);
  filters.append("Show ", userSel, statusSel);
  frag.append(filters);

  const f = Object.fromEntries(jobs.fields.map((n, i) => [n, i]));
  const jobRows = jobs.rows.map((r) => el("tr", { "data-job": r[f.id] },
    el("td", {}, link(`#job/${encodeURIComponent(r[f.schedd])}/${r[f.id]}`, r[f.id])),
    el("td", { text: r[f.owner] }),
    el("td", {}, el("span", { class: "badge status-" + r[f.status], text: r[f.status] })),
    el("td", { text: fmtTime(r[f.qdate]) }),
    el("td", { text: r[f.batch] }),
    el("td", { class: "cmd", text: r[f.cmd] }),
    el("td", { text: r[f.host] || r[f.hold_reason] })));
  const jt = table(["ID", "Owner", "Status", "Submitted", "Batch", "Command", "Host / hold reason"], jobRows);
  jt.id = "jobs";
  const pages = Math.max(1, Math.ceil(jobs.total / PAGE));
  const page = Math.floor(offset / PAGE);
  const to = (n) => { const x = new URLSearchParams(p); x.set("page", String(n)); return "#queue?" + x; };
  const pager = el("div", { class: "pager", id: "pager" },
    page > 0 ? link(to(page - 1), "‹ previous") : el("span", { class: "muted", text: "‹ previous" }),
    el("span", { id: "range", text: jobs.total ? `${fmtNum(offset + 1)}–${fmtNum(Math.min(offset + PAGE, jobs.total))} of ${fmtNum(jobs.total)}` : "no jobs" }),
    page + 1 < pages ? link(to(page + 1), "next ›") : el("span", { class: "muted", text: "next ›" }));
  frag.append(pager, jt);
  footer(sum);
  main.replaceChildren(frag);
  ready("queue");
}

function footer(sum) {
  const f = document.getElementById("footer");
  const errs = (sum && sum.errors) || [];
  f.replaceChildren(
    `Figures of ${fmtTime(sum && sum.taken)} (read in ${sum ? sum.took : "?"} s). `,
    ...errs.map((e) => el("span", { class: "error", text: e + " " })));
}

// -- the slots: a picture of the pool -----------------------------------------------------
async function viewSlots(p, gen) {
  const data = await api("/api/slots");
  if (gen !== generation) return;
  const frag = document.createDocumentFragment();
  const n = data.machines.reduce((a, m) => a + m.slots.length, 0);
  const plural = (k, w) => `${k} ${w}${k === 1 ? "" : "s"}`;
  frag.append(el("h2", { text: `Slots: ${plural(n, "slot")} on ${plural(data.machines.length, "machine")}` }));
  const legend = el("div", { class: "legend" });
  for (const [s, k] of Object.entries(data.states)) legend.append(el("span", { class: "state-" + s, text: `${s}: ${k}` }));
  frag.append(legend);
  const box = el("div", { class: "machines", id: "machines" });
  for (const m of data.machines) {
    const grid = el("div", { class: "slotgrid" });
    for (const s of m.slots) {
      const name = String(s.Name || "").split("@")[0];
      const size = s.PartitionableSlot ? `${name} · partitionable` : `${name} · ${s.Cpus ?? "?"} cpu · ${s.Memory ?? "?"} MB`;
      const cell = el("div", { class: "slot state-" + (s.State || "Unknown"), "data-slot": s.Name || "", title: `${s.State}/${s.Activity}` },
        el("div", { text: size }));
      if (s.PartitionableSlot) {
        cell.append(el("div", { class: "muted", text: `left: ${s.Cpus ?? "?"} of ${s.TotalSlotCpus ?? "?"} cpu, ${s.Memory ?? "?"} of ${s.TotalSlotMemory ?? "?"} MB` }));
      }
      if (s.JobId) cell.append(el("div", { class: "who" }, link(`#job/${encodeURIComponent(s.Schedd || "local")}/${s.JobId}`, s.JobId), " " + (s.RemoteOwner || s.RemoteUser || "")));
      else cell.append(el("div", { class: "muted", text: s.State || "" }));
      grid.append(cell);
    }
    box.append(el("div", { class: "machine", "data-machine": m.machine }, el("h3", { text: m.machine }), grid));
  }
  frag.append(box);
  main.replaceChildren(frag);
  ready("slots");
}

// -- user priorities ------------------------------------------------------------------------
async function viewUsers(p, gen) {
  const data = await api("/api/users");
  if (gen !== generation) return;
  const frag = document.createDocumentFragment();
  frag.append(el("h2", { text: "User priorities" }));
  if (!data.available) frag.append(el("p", { class: "error", text: "the negotiator did not answer" }));
  const rows = data.users.slice().sort((a, b) => (a.effective ?? 0) - (b.effective ?? 0)).map((u) => el("tr", { "data-user": u.name },
    el("td", { text: u.name }),
    el("td", { class: "num", text: u.effective == null ? "" : Number(u.effective).toFixed(2) }),
    el("td", { class: "num", text: u.priority == null ? "" : Number(u.priority).toFixed(2) }),
    el("td", { class: "num", text: u.factor == null ? "" : Number(u.factor).toFixed(2) }),
    el("td", { class: "num", text: fmtNum(u.resources_used) }),
    el("td", { class: "num", text: u.accumulated_usage == null ? "" : (Number(u.accumulated_usage) / 3600).toFixed(2) }),
    el("td", { text: u.group || "" })));
  const t = table(["User", "Effective priority", "Real priority", "Factor", "In use", "Usage (h)", "Group"], rows);
  t.id = "priorities";
  frag.append(t);
  main.replaceChildren(frag);
  ready("users");
}

// -- throughput over time ----------------------------------------------------------------------
async function viewThroughput(p, gen) {
  const d = await api("/api/throughput");
  if (gen !== generation) return;
  const frag = document.createDocumentFragment();
  const sum = (a) => a.reduce((x, y) => x + y, 0);
  frag.append(el("h2", { text: `Throughput: last ${d.completed.length * d.bucket / 60} minutes` }));
  frag.append(el("p", { id: "throughput-totals", text: `${sum(d.completed)} completed, ${sum(d.submitted)} submitted, ${sum(d.removed)} removed (per ${d.bucket} s bucket below)` }));
  const W = 900, H = 260, L = 50, B = 30, R = 30, n = d.completed.length;
  const step = Math.max(1, Math.ceil(Math.max(...d.completed, ...d.submitted, ...d.removed) / 4));
  const max = step * 4;
  const s = svg("svg", { width: W, height: H, class: "chart", id: "chart", viewBox: `0 0 ${W} ${H}` });
  const x = (i) => L + i * (W - L - R) / n;
  const y = (v) => H - B - v * (H - B - 10) / max;
  for (let k = 0; k <= 4; k++) {
    const v = step * k;
    s.append(svg("line", { x1: L, x2: W - R, y1: y(v), y2: y(v), stroke: "#eee" }));
    const t = svg("text", { x: L - 6, y: y(v) + 4, "text-anchor": "end" }); t.textContent = String(v); s.append(t);
  }
  const bw = Math.max(1, (W - L - R) / n - 1);
  d.completed.forEach((v, i) => { if (v) s.append(svg("rect", { x: x(i), y: y(v), width: bw, height: H - B - y(v), fill: "#4a90d9", class: "bar-completed" })); });
  d.removed.forEach((v, i) => { if (v) s.append(svg("rect", { x: x(i), y: y(v), width: bw / 2, height: H - B - y(v), fill: "#bbb" })); });
  const pts = d.submitted.map((v, i) => `${x(i) + bw / 2},${y(v)}`).join(" ");
  s.append(svg("polyline", { points: pts, fill: "none", stroke: "#e07b00", "stroke-width": 2, class: "line-submitted" }));
  for (let i = 0; i <= n; i += 10) {
    const t = svg("text", { x: x(i), y: H - 10, "text-anchor": "middle" });
    t.textContent = new Date((d.start + i * d.bucket) * 1000).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
    s.append(t);
  }
  frag.append(s);
  frag.append(el("div", { class: "legend" }, el("span", { class: "sw-completed", text: "completed" }),
    el("span", { class: "sw-submitted", text: "submitted" }), el("span", { class: "sw-removed", text: "removed" }),
    ` per ${d.bucket} s`));
  main.replaceChildren(frag);
  ready("throughput");
}

// -- one job ----------------------------------------------------------------------------------
async function viewJob(schedd, id, gen) {
  const q = new URLSearchParams({ id, schedd: schedd === "local" ? "" : schedd });
  const d = await api("/api/job?" + q);
  if (gen !== generation) return;
  const ad = d.ad;
  const status = { 1: "idle", 2: "running", 3: "removed", 4: "completed", 5: "held", 6: "transferring output", 7: "suspended" }[ad.JobStatus] || String(ad.JobStatus);
  const frag = document.createDocumentFragment();
  frag.append(el("h2", { text: `Job ${id} of ${ad.Owner || "?"}: ${status}` }));
  frag.append(el("p", { class: "muted", text: `found in the ${d.where}` + (ad.HoldReason ? `; held: ${ad.HoldReason}` : "") }));
  const msg = el("span", { id: "action-result", class: flash ? flash.cls : "", text: flash ? flash.text : "" });
  flash = null;
  const act = async (action) => {
    msg.className = ""; msg.textContent = "…";
    const token = sessionStorage.getItem("roost-token") || "";
    const headers = { "Content-Type": "application/json" };
    if (token) headers.Authorization = "Bearer " + token;
    try {
      const r = await api("/api/act", { method: "POST", headers, body: JSON.stringify({ action, ids: [id], schedd: schedd === "local" ? null : schedd }) });
      flash = { cls: "ok", text: `${action}: ${r.count} job(s)` };
      msg.className = flash.cls; msg.textContent = flash.text;
      route(); // the job as it is now
    } catch (e) {
      msg.className = "error"; msg.textContent = `${action} refused (${e.status}): ${e.message}`;
    }
  };
  if (d.where === "queue") {
    frag.append(el("div", { class: "actions" },
      el("button", { id: "act-hold", onclick: () => act("hold"), text: "Hold" }),
      el("button", { id: "act-release", onclick: () => act("release"), text: "Release" }),
      el("button", { id: "act-remove", onclick: () => act("remove"), text: "Remove" }), msg));
  }
  const analysis = el("pre", { id: "analysis", text: ad.JobStatus === 1 ? "analyzing…" : "" });
  if (ad.JobStatus === 1) {
    frag.append(el("h3", { text: "Why is it idle? (q -better-analyze)" }), analysis);
  }
  frag.append(el("h3", { text: "Event log" + (d.log.path ? ` (${d.log.path})` : "") }));
  frag.append(el("pre", { id: "events", text: d.log.events.length ? d.log.events.join("\n...\n") + "\n..." : d.log.note }));
  frag.append(el("h3", { text: "Job ad" }));
  const rows = Object.keys(ad).sort((a, b) => a.localeCompare(b)).map((k) =>
    el("tr", {}, el("td", { text: k }), el("td", { class: "value", text: showValue(ad[k]) })));
  const t = table(["Attribute", "Value"], rows);
  t.id = "ad";
  frag.append(t);
  main.replaceChildren(frag);
  if (ad.JobStatus === 1) {
    try {
      const a = await api("/api/analyze?" + q);
      if (gen !== generation) return;
      analysis.textContent = a.text;
    } catch (e) {
      analysis.textContent = "cannot analyze: " + e.message;
    }
  }
  ready("job");
}

// -- navigation -----------------------------------------------------------------------------
async function route() {
  const gen = ++generation;
  delete document.body.dataset.ready;
  const hash = location.hash.slice(1) || "queue";
  const [path, query] = hash.split("?");
  const parts = path.split("/");
  for (const a of document.querySelectorAll("nav a")) a.classList.toggle("active", a.id === "nav-" + parts[0]);
  try {
    if (parts[0] === "job" && parts.length === 3) await viewJob(decodeURIComponent(parts[1]), parts[2], gen);
    else if (parts[0] === "slots") await viewSlots(params(query), gen);
    else if (parts[0] === "users") await viewUsers(params(query), gen);
    else if (parts[0] === "throughput") await viewThroughput(params(query), gen);
    else await viewQueue(params(query), gen);
  } catch (e) {
    if (gen !== generation) return;
    main.replaceChildren(el("p", { class: "error", id: "view-error", text: "cannot show this: " + e.message }));
    ready("error");
  }
}

function tokenState() {
  const has = !!sessionStorage.getItem("roost-token");
  document.getElementById("token-state").textContent = has ? "token set" : "read-only";
}

document.getElementById("token-form").addEventListener("submit", (ev) => {
  ev.preventDefault();
  const v = document.getElementById("token").value.trim();
  if (v) sessionStorage.setItem("roost-token", v); else sessionStorage.removeItem("roost-token");
  document.getElementById("token").value = "";
  tokenState();
});
window.addEventListener("hashchange", route);
tokenState();
route();
