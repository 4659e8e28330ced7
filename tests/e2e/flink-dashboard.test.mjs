// Flink's own web dashboard on Sluice, in headless Chromium (playwright-core, Debian's chromium).
// Run by scripts/e2e-flink-dashboard.sh against a running `sluice run skew …` job.
//
// Flink's dashboard is a static Angular app that asks its own origin for Flink's REST API
// (`config`, `jobs/overview`, `jobs/:jid`, `jobs/:jid/vertices/:vid/backpressure`, …). This
// script serves the app's files (FLINK_WEB: the `web/` folder of the pinned flink-dist jar,
// extracted by the shell script) and passes every other request to Sluice's REST API unchanged,
// so what the dashboard renders is Sluice's answers in Flink's shapes. It opens the start page
// (the job listed as an application, no "Not found"), then the running job, and checks the job
// graph shows the job's vertices, the BackPressure tab shows values and the FlameGraph tab
// draws a graph; screenshots go to E2E_OUT.
//
// Env: SLUICE_URL (http://127.0.0.1:18083), FLINK_WEB (extracted web/), E2E_OUT (output dir),
//      PLAYWRIGHT_CORE (path of the playwright-core package), CHROMIUM (/usr/bin/chromium).
import { createRequire } from "node:module";
import fs from "node:fs";
import http from "node:http";
import path from "node:path";

const require = createRequire(import.meta.url);
const { chromium } = require(process.env.PLAYWRIGHT_CORE || "playwright-core");
const SLUICE = new URL(process.env.SLUICE_URL || "http://127.0.0.1:18083");
const WEB = path.resolve(process.env.FLINK_WEB || "target/e2e/flink-web/web");
const OUT = process.env.E2E_OUT || "target/e2e";

let failures = 0;
function check(cond, what) {
  console.log(`${cond ? "ok  " : "FAIL"} ${what}`);
  if (!cond) failures++;
}

// Waits are polls with generous deadlines, never a fixed sleep (a loaded machine renders late).
const DEADLINE_MS = Number(process.env.E2E_DEADLINE_MS || 90000);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
async function until(probe, ms = DEADLINE_MS) {
  const end = Date.now() + ms;
  for (;;) {
    const last = await probe().catch(() => null);
    if (last || Date.now() > end) return last;
    await sleep(250);
  }
}

const TYPES = { ".html": "text/html", ".js": "text/javascript", ".css": "text/css", ".json": "application/json",
  ".svg": "image/svg+xml", ".png": "image/png", ".ico": "image/x-icon", ".woff": "font/woff", ".woff2": "font/woff2",
  ".ttf": "font/ttf", ".txt": "text/plain" };

// Requests the dashboard made to Sluice, and those Sluice did not answer with 2xx.
const proxied = [];
const unanswered = new Map();

/** A file of the dashboard when the path names one (`/` is index.html), else Sluice's answer. */
const server = http.createServer((req, res) => {
  const url = new URL(req.url, "http://x");
  const rel = url.pathname === "/" ? "index.html" : decodeURIComponent(url.pathname).replace(/^\/+/, "");
  const file = path.join(WEB, rel);
  if (file.startsWith(WEB + path.sep) && fs.existsSync(file) && fs.statSync(file).isFile()) {
    res.writeHead(200, { "Content-Type": TYPES[path.extname(file)] || "application/octet-stream" });
    fs.createReadStream(file).pipe(res);
    return;
  }
  proxied.push(url.pathname);
  // Sluice checks the Host header (DNS rebinding): the request goes to it as its own.
  const headers = { ...req.headers, host: SLUICE.host };
  delete headers.origin;
  delete headers.referer;
  const up = http.request({ host: SLUICE.hostname, port: SLUICE.port, method: req.method, path: req.url, headers }, (r) => {
    if (r.statusCode >= 300) unanswered.set(`${req.method} ${url.pathname}`, r.statusCode);
    res.writeHead(r.statusCode, r.headers);
    r.pipe(res);
  });
  up.on("error", (e) => { res.writeHead(502); res.end(String(e)); });
  req.pipe(up);
});
await new Promise((r) => server.listen(0, "127.0.0.1", r));
const BASE = `http://127.0.0.1:${server.address().port}`;
console.log(`Flink's dashboard (${WEB}) at ${BASE}, its REST API from ${SLUICE.origin}`);

async function rest(p) {
  const r = await fetch(SLUICE.origin + p);
  return r.ok ? r.json() : null;
}

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  headless: true,
  args: [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
  ],
});
try {
  const page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
  const errors = [];
  page.on("pageerror", (e) => errors.push(e.message));

  // The job, RUNNING, with a metric window filled (a vertex reports busy time).
  const jid = await until(async () => {
    const o = await rest("/jobs/overview");
    return (o?.jobs || []).find((j) => j.state === "RUNNING")?.jid;
  });
  check(!!jid, `Sluice's REST API lists a RUNNING job (${jid})`);
  const job = await rest(`/jobs/${jid}`);
  const vertices = job?.vertices || [];
  check(vertices.length >= 2, `the job has ${vertices.length} vertices: ${vertices.map((v) => v.name).join(" | ")}`);

  // The start page (Overview): Flink 2.3 lists applications there (/applications/overview);
  // Sluice shows the job as the one job of "SingleJobApplication(<job name>)", RUNNING, and the
  // dashboard shows no "Not found" (what it said while Sluice did not serve the path).
  const appName = `SingleJobApplication(${job.name})`;
  await page.goto(`${BASE}/#/overview`, { waitUntil: "domcontentloaded" });
  const appRow = page.locator("tr", { hasText: appName }).first();
  const appListed = await until(async () => (await appRow.count()) > 0 ? (await appRow.textContent()) : null);
  check(!!appListed, `the start page lists the application "${appName}" (${(appListed || "").replace(/\s+/g, " ").trim().slice(0, 120)})`);
  check(/RUNNING/.test(appListed || ""), "the application is RUNNING");
  const bodyText = (await page.locator("body").textContent().catch(() => "")) || "";
  check(!/not found/i.test(bodyText), `the start page shows no "Not found"`);
  check(!unanswered.has("GET /applications/overview"), "Sluice answers GET /applications/overview");
  await page.screenshot({ path: path.join(OUT, "flink-dashboard-overview.png") });

  // "Running Jobs" lists the job (from /jobs/overview); a click on its row opens it, as a user
  // would.
  await page.goto(`${BASE}/#/job/running`, { waitUntil: "domcontentloaded" });
  const row = page.locator("tr", { hasText: jid }).or(page.locator("tr", { hasText: job.name })).first();
  const listed = await until(async () => (await row.count()) > 0);
  check(!!listed, `Running Jobs lists the job "${job.name}"`);
  if (listed) await row.click().catch(() => {});
  const opened = await until(async () => page.url().includes(jid));
  check(!!opened, `a click opens the job (${page.url().replace(BASE, "")})`);
  if (!opened) await page.goto(`${BASE}/#/job/running/${jid}/overview`, { waitUntil: "domcontentloaded" });

  // The job graph (Flink's dagre view): a node per vertex, named as Sluice names it.
  // Drawn and laid out: every node has a size on screen.
  const nodes = page.locator("flink-dagre g.node");
  const drawn = await until(async () => {
    if ((await nodes.count()) !== vertices.length) return null;
    const boxes = await Promise.all((await nodes.all()).map((n) => n.boundingBox()));
    // ...and visible: the graph fades in (an opacity transition on its SVG groups).
    const opacity = await nodes.first().evaluate((n) => {
      let o = 1;
      for (let e = n; e && e.tagName !== "svg"; e = e.parentElement) o *= Number(getComputedStyle(e).opacity);
      return o;
    });
    return opacity > 0.99 && boxes.every((b) => b && b.width > 20 && b.height > 20) ? true : null;
  });
  check(!!drawn, `the job graph draws ${await nodes.count()} node(s) for the ${vertices.length} vertices`);
  const graphText = (await page.locator("flink-dagre").textContent().catch(() => "")) || "";
  for (const v of vertices) {
    check(graphText.includes(v.name), `the job graph shows vertex "${v.name}"`);
  }
  // Each node carries Sluice's figures: parallelism, and busy / backpressured time as numbers.
  const figures = await until(async () => {
    const t = (await page.locator("flink-dagre").textContent()) || "";
    return (t.match(/Busy \(max\): \d+%/g) || []).length === vertices.length &&
      (t.match(/Backpressured \(max\): \d+%/g) || []).length === vertices.length ? t : null;
  });
  check(!!figures, "every node shows its parallelism, busy and backpressured time");
  await page.screenshot({ path: path.join(OUT, "flink-dashboard-graph.png") });

  // The keyed vertex (the sum, where the hot key lands) and the backpressured source.
  const sum = vertices.find((v) => v.name.startsWith("sum-per-key")) || vertices[vertices.length - 1];
  const src = vertices.find((v) => v.name.startsWith("Source")) || vertices[0];

  // BackPressure tab of the source: Flink's table of subtasks with a ratio and a level each.
  await page.goto(`${BASE}/#/job/running/${jid}/overview/${src.id}/backpressure`, { waitUntil: "domcontentloaded" });
  const bpTab = page.locator("flink-job-overview-drawer-backpressure");
  await bpTab.waitFor({ timeout: DEADLINE_MS }).catch(() => {});
  const bp = await until(async () => {
    const t = (await bpTab.textContent()) || "";
    return /\b(OK|LOW|HIGH)\b/.test(t) && /\d+%/.test(t) ? t : null;
  });
  const bpText = bp || (await bpTab.textContent().catch(() => "")) || "";
  check(!!bp, `the BackPressure tab shows levels and ratios (${bpText.replace(/\s+/g, " ").trim().slice(0, 160)})`);
  // A row per subtask, each with its backpressured / idle / busy ratios (no fixed level: how
  // backpressured the source is depends on how loaded the machine is).
  const rows = await until(async () => {
    const r = await bpTab.locator("tbody tr").evaluateAll((trs) => trs.map((t) => t.textContent));
    const full = r.filter((t) => (t.match(/\d+%/g) || []).length >= 3);
    return full.length === src.parallelism ? full : null;
  });
  check(!!rows, `a row per subtask of "${src.name}" with its ratios (${(rows || []).map((t) => t.replace(/\s+/g, " ").trim()).join(" | ")})`);
  await page.screenshot({ path: path.join(OUT, "flink-dashboard-backpressure.png") });

  // FlameGraph tab of the sum: Flink's flame graph component draws Sluice's sampled stacks.
  await page.goto(`${BASE}/#/job/running/${jid}/overview/${sum.id}/flamegraph`, { waitUntil: "domcontentloaded" });
  const flame = page.locator("flink-flame-graph");
  await flame.first().waitFor({ timeout: DEADLINE_MS }).catch(() => {});
  const frames = await until(async () => {
    const n = await page.locator("flink-flame-graph svg rect, flink-flame-graph svg g.d3-flame-graph-label, flink-flame-graph .d3-flame-graph rect").count();
    return n > 3 ? n : null;
  });
  check(!!frames, `the FlameGraph tab draws a graph (${frames || 0} frames)`);
  await page.screenshot({ path: path.join(OUT, "flink-dashboard-flamegraph.png") });

  check(errors.length === 0, `no page errors${errors.length ? ": " + errors.slice(0, 3).join(" | ") : ""}`);
  const missed = [...unanswered].map(([k, s]) => `${k} ${s}`);
  console.log(`info ${proxied.length} requests went to Sluice; unanswered (not 2xx): ${missed.join(", ") || "none"}`);
  console.log(`screenshots: ${OUT}/flink-dashboard-{overview,graph,backpressure,flamegraph}.png`);
} finally {
  await browser.close();
  server.close();
}
if (failures) {
  console.log(`${failures} check(s) failed`);
  process.exit(1);
}
console.log("Flink dashboard e2e: all checks passed");
