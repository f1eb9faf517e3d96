// The VIZ page: programs on the left, the graph of one step in the middle (drag to pan, wheel to zoom), the
// program's kernels on the right. ?program=<id>&step=<k>&kernel=<i> opens a program at a step, with a kernel's
// source shown.
"use strict";

const NS = "http://www.w3.org/2000/svg";
const W = 170, H = 40;   // a node's box
const $ = (id) => document.getElementById(id);
const state = { programs: [], program: null, step: 0, view: { x: 0, y: 0, k: 1 } };

function el(tag, attrs, parent) {
  const e = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  if (parent) parent.appendChild(e);
  return e;
}

function fmt(x, digits) { return x === null || x === undefined ? "" : x.toFixed(digits); }

async function getJSON(url) {
  const r = await fetch(url, { cache: "no-store" });
  if (!r.ok) throw new Error(`${url}: ${r.status}`);
  return r.json();
}

async function loadPrograms() {
  state.programs = await getJSON("/api/programs");
  const nav = $("programs");
  nav.textContent = "";
  if (!state.programs.length) nav.textContent = "No program yet: run a jitted function.";
  for (const p of state.programs) {
    const d = document.createElement("div");
    d.textContent = p.name;
    const s = document.createElement("small");
    s.textContent = `${p.steps.length} steps, ${p.kernels} kernels, ${p.runs} runs`;
    d.appendChild(s);
    d.className = state.program && state.program.id === p.id ? "sel" : "";
    d.onclick = () => openProgram(p.id, 0);
    nav.appendChild(d);
  }
}

async function openProgram(id, step) {
  state.program = await getJSON(`/api/program/${id}`);
  const sel = $("steps");
  sel.textContent = "";
  state.program.steps.forEach((s, i) => {
    const o = document.createElement("option");
    o.value = i;
    o.textContent = `${i + 1}. ${s.name}`;
    sel.appendChild(o);
  });
  $("title").textContent = state.program.name;
  showKernels();
  await loadPrograms();
  showStep(Math.max(0, Math.min(step, state.program.steps.length - 1)), true);
}

function showStep(i, fit) {
  const p = state.program;
  if (!p || !p.steps.length) return;
  state.step = i;
  $("steps").value = i;
  const s = p.steps[i];
  const vp = $("viewport");
  vp.textContent = "";
  if (!s.nodes) {
    $("stepinfo").textContent = `${s.size} nodes: too many to draw`;
    return;
  }
  const changed = new Set(s.changed), outs = new Set(s.outputs), ins = new Set(s.inputs);
  const pos = s.layout, byId = new Map(s.nodes.map((n) => [n.id, n]));
  $("stepinfo").textContent = `${s.nodes.length} nodes, ${s.changed.length} made by this step` +
    (s.nodes.some((n) => n.kernel) ? "; coloured by the kernel computing each" : "");
  const edges = el("g", {}, vp);
  for (const n of s.nodes) {
    const [x2, y2] = pos[n.id];
    for (const src of n.src) {
      if (!byId.has(src)) continue;
      const [x1, y1] = pos[src];
      const ya = y1 + H / 2, yb = y2 - H / 2, mid = (ya + yb) / 2;
      el("path", { class: "edge", d: `M${x1},${ya} C${x1},${mid} ${x2},${mid} ${x2},${yb}` }, edges);
    }
  }
  for (const n of s.nodes) {
    const [x, y] = pos[n.id];
    const cls = ["node", changed.has(n.id) ? "changed" : "", outs.has(n.id) ? "output" : "",
                 ins.has(n.id) || n.op === "param" ? "input" : ""].join(" ").trim();
    const g = el("g", { class: cls, transform: `translate(${x - W / 2},${y - H / 2})`, "data-id": n.id }, vp);
    const rect = el("rect", { width: W, height: H }, g);
    if (n.kernel) rect.style.fill = kernelColour(n.kernel);
    const t1 = el("text", { x: W / 2, y: 16, class: "op" }, g);
    t1.textContent = n.op + (n.arg && n.op !== "param" && n.arg.length < 14 ? ` ${n.arg}` : "");
    const t2 = el("text", { x: W / 2, y: 31 }, g);
    t2.textContent = `${n.dtype}[${n.shape.join(",")}]`;
    g.onmouseenter = () => { g.classList.add("hover"); details(n); };
    g.onmouseleave = () => g.classList.remove("hover");
  }
  if (fit) fitView(s);
  history.replaceState(null, "", `?program=${p.id}&step=${i}`);
}

function details(n) {
  $("details").textContent = `%${n.id} = ${n.op}${n.arg ? "[" + n.arg + "]" : ""} : ${n.dtype}[${n.shape.join(",")}]` +
    (n.src.length ? `  <- ${n.src.map((s) => "%" + s).join(", ")}` : "") + (n.kernel ? `  stored by ${n.kernel}` : "");
}

function kernelColour(name) {   // a light colour of its own for each kernel of a schedule
  let h = 0;
  for (const c of name) h = (h * 31 + c.charCodeAt(0)) % 360;
  return `hsl(${h}, 70%, 82%)`;
}

function fitView(s) {
  const xs = s.nodes.map((n) => s.layout[n.id][0]), ys = s.nodes.map((n) => s.layout[n.id][1]);
  const box = $("graph").getBoundingClientRect();
  const w = Math.max(...xs) - Math.min(...xs) + W + 40, h = Math.max(...ys) - Math.min(...ys) + H + 40;
  // the whole graph when it is readable so, else its top at a readable size (drag and zoom for the rest)
  const k = Math.max(Math.min(1.2, box.width / w, box.height / h), Math.min(0.6, box.width / w));
  state.view = { k, x: (box.width - k * (Math.max(...xs) + Math.min(...xs))) / 2, y: 20 - k * (Math.min(...ys) - H) };
  applyView();
}

function applyView() {
  const v = state.view;
  $("viewport").setAttribute("transform", `translate(${v.x},${v.y}) scale(${v.k})`);
}

function showKernels() {
  const body = $("ktable").querySelector("tbody");
  body.textContent = "";
  $("source").textContent = state.program.kernels.length ? "Pick a kernel to see its source." :
    "No kernels (not compiled yet, or run on the interp device).";
  for (const k of state.program.kernels) {
    const tr = document.createElement("tr");
    for (const v of [k.name, fmt(k.us, 1), fmt(k.gflops, 2), fmt(k.gbps, 2)]) {
      const td = document.createElement("td");
      td.textContent = v;
      tr.appendChild(td);
    }
    tr.onclick = () => {
      body.querySelectorAll("tr").forEach((r) => r.classList.remove("sel"));
      tr.classList.add("sel");
      $("source").textContent = k.source || "(no source: a control-flow item)";
    };
    body.appendChild(tr);
  }
}

function setupPanZoom() {
  const svg = $("graph");
  let drag = null;
  svg.addEventListener("mousedown", (e) => { drag = { x: e.clientX - state.view.x, y: e.clientY - state.view.y }; });
  window.addEventListener("mouseup", () => { drag = null; });
  window.addEventListener("mousemove", (e) => {
    if (!drag) return;
    state.view.x = e.clientX - drag.x;
    state.view.y = e.clientY - drag.y;
    applyView();
  });
  svg.addEventListener("wheel", (e) => {
    e.preventDefault();
    const r = svg.getBoundingClientRect(), f = Math.exp(-e.deltaY * 0.0015), v = state.view;
    const mx = e.clientX - r.left, my = e.clientY - r.top;
    v.x = mx - (mx - v.x) * f;
    v.y = my - (my - v.y) * f;
    v.k *= f;
    applyView();
  }, { passive: false });
}

function step(d) {
  if (!state.program) return;
  const i = state.step + d;
  if (i >= 0 && i < state.program.steps.length) showStep(i, true);
}

async function main() {
  setupPanZoom();
  $("prev").onclick = () => step(-1);
  $("next").onclick = () => step(1);
  $("steps").onchange = (e) => showStep(+e.target.value, true);
  window.addEventListener("keydown", (e) => {
    if (e.key === "ArrowLeft") step(-1);
    if (e.key === "ArrowRight") step(1);
  });
  await loadPrograms();
  const q = new URLSearchParams(location.search);
  const want = q.has("program") ? +q.get("program") : (state.programs.length ? state.programs[0].id : null);
  if (want !== null) await openProgram(want, q.has("step") ? +q.get("step") : 0);
  const rows = $("ktable").querySelectorAll("tbody tr");
  if (q.has("kernel") && rows[+q.get("kernel")]) rows[+q.get("kernel")].click();
  setInterval(loadPrograms, 3000);
}

main();
