// End-to-end test of the web dashboard in headless Chromium (playwright-core, Debian's chromium).
// Run by scripts/e2e-dashboard.sh against a running `sluice run …` job.
// Env: SLUICE_URL (http://127.0.0.1:18082), SCENARIO (skew | skew-processes | under-provisioned | blocking | blocking-fixed | sql),
//      E2E_OUT (output dir),
//      PLAYWRIGHT_CORE (path of the playwright-core package), CHROMIUM (/usr/bin/chromium).
import { createRequire } from "node:module";
import path from "node:path";

const require = createRequire(import.meta.url);
const { chromium } = require(process.env.PLAYWRIGHT_CORE || "playwright-core");
const BASE = process.env.SLUICE_URL || "http://127.0.0.1:18082";
const SCENARIO = process.env.SCENARIO || "skew";
const OUT = process.env.E2E_OUT || "target/e2e";

// What each scenario must show: the keyed/bottleneck vertex busy, its upstream backpressured.
const EXPECT = {
  skew: {
    busy: "sum-per-key -> Sink: final-sums",
    backpressured: "Source: generator -> map",
    hotSubtask: true,
    hotKey: "0",
    bottleneck: "sum-per-key",
  },
  // The same job over two processes: process 0's dashboard shows both, each subtask with its
  // TaskManager; the hot subtask runs in process 1.
  "skew-processes": {
    busy: "sum-per-key -> Sink: final-sums",
    backpressured: "Source: generator -> map",
    hotSubtask: true,
    hotKey: "0",
    bottleneck: "sum-per-key",
    taskmanagers: 2,
  },
  "under-provisioned": { busyFrom: "job", hotSubtask: false, hotKey: null, bottleneck: null },
  // The blocking scenario as it is (a sync lookup: capacity 1, the doctor's "blocking calls"),
  // and with the doctor's fix applied before the start (`--async-capacity blocking-call=16`).
  blocking: { vertex: "blocking-call -> Sink: digest", operator: "blocking-call", async: false, capacity: 1 },
  "blocking-fixed": { vertex: "blocking-call -> Sink: digest", operator: "blocking-call", async: true, capacity: 16 },
  // A SQL job (a Nexmark window aggregation): the job page shows its EXPLAIN ANALYZE.
  sql: { explain: true },
};

let failures = 0;
function check(cond, what) {
  console.log(`${cond ? "ok  " : "FAIL"} ${what}`);
  if (!cond) failures++;
}

// Waits are polls with generous deadlines, never a fixed sleep: on a loaded machine (the suite
// must pass with two CPU-bound processes beside it) the job starts late, metric windows fill
// late and the page renders late; a check runs once the evidence is there or the deadline passed.
const DEADLINE_MS = Number(process.env.E2E_DEADLINE_MS || 90000);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Polls `probe` (async, returns a value or null/false) every 250 ms until it is truthy. */
async function until(probe, ms = DEADLINE_MS) {
  const end = Date.now() + ms;
  let last = null;
  for (;;) {
    last = await probe().catch(() => null);
    if (last || Date.now() > end) return last;
    await sleep(250);
  }
}

/** A REST answer of the job under test (null when it fails). */
async function rest(p) {
  const r = await fetch(BASE + p);
  return r.ok ? r.json() : null;
}

/** The EXPLAIN ANALYZE panel of a SQL job: one row per plan node of the REST answer, the plan's
 *  lines as EXPLAIN draws them, live figures (records moving, busy time) on the operators' rows. */
async function explainChecks(page, jid) {
  const panel = page.locator('[data-testid="explain-analyze-panel"]');
  await panel.waitFor({ state: "visible", timeout: DEADLINE_MS }).catch(() => {});
  check(await panel.isVisible(), "the job page shows the EXPLAIN ANALYZE panel");
  const e = await rest(`/jobs/${jid}/explain-analyze`);
  check(!!e && e.nodes.length > 0, `GET /jobs/:jid/explain-analyze answers ${e ? e.nodes.length : 0} plan nodes`);
  const rows = panel.locator('[data-testid="explain-node"]');
  await rows.first().waitFor({ timeout: DEADLINE_MS }).catch(() => {});
  check(e && (await rows.count()) === e.nodes.length, `one row per plan node (${await rows.count()})`);
  const lines = await rows.evaluateAll((rs) => rs.map((r) => r.querySelector(".planline").textContent));
  check(lines[0]?.startsWith("Sink(table=") && lines.some((l) => l.includes("+- GlobalWindowAggregate(")) &&
    lines.some((l) => l.includes("TableSourceScan(")), `the rows are EXPLAIN's plan: ${lines[0]?.slice(0, 60)} … ${lines.at(-1)?.slice(0, 60)}`);
  // Every operator's row gets moving records (the page refreshes; poll until they are all > 0).
  const moving = await until(async () => {
    const figs = await rows.evaluateAll((rs) => rs.filter((r) => r.dataset.recordsIn != null)
      .map((r) => Number(r.dataset.recordsIn) + Number(r.dataset.recordsOut)));
    return figs.length >= 5 && figs.every((x) => x > 0) ? figs : null;
  });
  check(!!moving, `every operator row shows records (${moving ? moving.length + " rows" : "not all"})`);
  const busy = await until(async () => {
    const cells = await rows.evaluateAll((rs) => rs.filter((r) => r.dataset.recordsIn != null).map((r) => r.children[1].textContent));
    return cells.some((c) => Number(c) > 0) ? cells : null;
  });
  check(!!busy, `operator rows show busy ms/s (${busy ? busy.join(", ") : "none"})`);
  const exchange = panel.locator('[data-testid="explain-node"]:not([data-vertex-id])');
  check(((await exchange.first().textContent().catch(() => "")) || "").includes("Exchange("), "the exchange row says it runs no operator");
}

/** The subtask rows' busy percentages of the vertex panel, in subtask order. */
async function subtaskBusy(panel) {
  return panel.locator('[data-testid="subtask-row"]').evaluateAll((rs) => rs.map((r) => Number(r.dataset.busy)));
}

/**
 * The blocking scenarios: the lookup vertex's async panel (in flight within capacity, latency
 * percentiles when async, cache hit rate) and, while the lookup is sync, the doctor's
 * "blocking calls" with its fix: an async lookup with a capacity, as a plan change.
 */
async function blockingChecks(page, exp) {
  const vertex = page.locator(`[data-testid="vertex"][data-vertex-name="${exp.vertex}"]`);
  await vertex.waitFor({ timeout: DEADLINE_MS });
  await vertex.click();
  const table = page.locator(`[data-testid="async-io"][data-operator="${exp.operator}"]`);
  await table.waitFor({ timeout: DEADLINE_MS }).catch(() => {});
  check(await table.count() === 1, `vertex panel shows the requests in flight of "${exp.operator}"`);
  check(await table.getAttribute("data-async").catch(() => null) === String(exp.async) &&
    await table.getAttribute("data-lookup").catch(() => null) === "true",
    `the panel knows it is a lookup join in ${exp.async ? "async" : "sync"} mode`);
  const rows = () => table.locator('[data-testid="async-row"]').evaluateAll((rs) => rs.map((r) => ({ ...r.dataset })));
  // Poll until requests are in flight with the capacity in force; every sample seen on the way
  // must stay within its capacity (the operator never exceeds it).
  let overCapacity = null;
  const live = await until(async () => {
    const rs = await rows();
    for (const r of rs) if (Number(r.inFlight) > Number(r.capacity)) overCapacity = r;
    const ready = rs.length === 2 && rs.every((r) => Number(r.capacity) === exp.capacity) &&
      rs.some((r) => Number(r.inFlight) > 0) && (!exp.async || rs.every((r) => Number(r.p50Us) > 0));
    return ready ? rs : null;
  });
  const rs = live || (await rows());
  check(!!live, `requests in flight against capacity ${exp.capacity}: ${rs.map((r) => `${r.inFlight}/${r.capacity}`).join(", ")}`);
  check(overCapacity == null, `in flight never above the capacity${overCapacity ? ` (saw ${overCapacity.inFlight}/${overCapacity.capacity})` : ""}`);
  check(rs.length > 0 && rs.every((r) => r.hitRate !== "" && Number(r.hitRate) >= 0 && Number(r.hitRate) <= 100),
    `cache hit rate per subtask: ${rs.map((r) => `${r.hitRate}%`).join(", ")}`);
  if (exp.async) {
    // The service answers in 2 ms (sluice_jobs::blocking::LOOKUP_LATENCY): no request is faster.
    check(rs.every((r) => Number(r.p50Us) >= 1000 && Number(r.p50Us) <= Number(r.p95Us) && Number(r.p95Us) <= Number(r.p99Us)),
      `latency percentiles p50 <= p95 <= p99, p50 at least 1 ms: ${rs.map((r) => `${r.p50Us}/${r.p95Us}/${r.p99Us} µs`).join("; ")}`);
  }

  const doctor = page.locator('[data-testid="doctor-panel"]');
  const cause = doctor.locator('[data-testid="doctor-cause"]');
  if (!exp.async) {
    // The doctor re-diagnoses as the metric window fills: wait until it names blocking calls.
    await until(async () => ((await cause.textContent()) || "").includes("blocking"));
    const c = (await cause.textContent().catch(() => "")) || "";
    check(c.includes("blocking"), `doctor names the cause: ${c.trim()}`);
    const fix = (await doctor.locator('[data-testid="doctor-fix"]').textContent().catch(() => "")) || "";
    const cap = /capacity (\d+)/.exec(fix);
    check(/async/i.test(fix) && !!cap && Number(cap[1]) > 1 && fix.includes(exp.operator),
      `doctor's fix: an async lookup in "${exp.operator}" with capacity ${cap ? cap[1] : "?"} (${fix.trim().slice(0, 120)}…)`);
  } else {
    const v = (await doctor.locator('[data-testid="doctor-verdict"]').textContent().catch(() => "")) || "";
    console.log(`info doctor after the fix: ${v.trim()}`);
  }
}

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  headless: true,
  args: [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
  ], // playwright gives every launch a fresh, empty profile directory

});
try {
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  page.on("pageerror", (e) => { console.log(`FAIL page error: ${e.message}`); failures++; });
  const exp = EXPECT[SCENARIO];
  if (!exp) throw new Error(`unknown SCENARIO ${SCENARIO}`);

  // The REST API first: the job is RUNNING and its metric window has filled (a vertex reports
  // busy time), so what the page shows next is the steady state.
  const jid = await until(async () => {
    const o = await rest("/jobs/overview");
    return (o?.jobs || []).find((j) => j.state === "RUNNING")?.jid;
  });
  check(!!jid, `the REST API lists a RUNNING job (${jid})`);
  await until(async () => {
    const j = await rest(`/jobs/${jid}`);
    const vs = j?.vertices || [];
    const m = await Promise.all(vs.map((v) => rest(`/jobs/${jid}/vertices/${v.id}/subtasks/metrics?get=busyTimeMsPerSecond&agg=max`)));
    return m.some((a) => Number(a?.[0]?.max) > 0);
  });

  await page.goto(BASE + "/", { waitUntil: "domcontentloaded" });
  // The running job is selected by default; click it anyway, as a user would.
  const row = page.locator('[data-testid="job-row"][data-job-state="RUNNING"]').first();
  await row.waitFor({ timeout: DEADLINE_MS });
  await row.click();
  await page.locator('[data-testid="vertex"]').first().waitFor({ timeout: DEADLINE_MS });

  if (exp.explain) {
    await explainChecks(page, jid);
    const shot = path.join(OUT, `dashboard-${SCENARIO}.png`);
    await page.screenshot({ path: shot, fullPage: true });
    console.log(`screenshot: ${shot}`);
  } else if (exp.operator) {
    await blockingChecks(page, exp);
    const shot = path.join(OUT, `dashboard-${SCENARIO}.png`);
    await page.screenshot({ path: shot, fullPage: true });
    console.log(`screenshot: ${shot}`);
  } else {
    if (SCENARIO === "skew" || SCENARIO === "skew-processes") {
      const keyed = page.locator(`[data-testid="vertex"][data-vertex-name="${exp.busy}"]`);
      const upstream = page.locator(`[data-testid="vertex"][data-vertex-name="${exp.backpressured}"]`);
      // Live data: wait until the graph shows the steady state (metrics need a window to fill).
      await keyed.and(page.locator('[data-state="busy"]')).waitFor({ timeout: DEADLINE_MS }).catch(() => {});
      await upstream.and(page.locator('[data-state="backpressured"]')).waitFor({ timeout: DEADLINE_MS }).catch(() => {});
      check(await keyed.getAttribute("data-state") === "busy", `keyed vertex "${exp.busy}" is busy (busy ${await keyed.getAttribute("data-busy")}%)`);
      check(await upstream.getAttribute("data-state") === "backpressured",
        `upstream vertex "${exp.backpressured}" is backpressured (backpressured ${await upstream.getAttribute("data-backpressured")}%, ` +
        `busy ${await upstream.getAttribute("data-busy")}%, at least ${await upstream.getAttribute("data-cpu-wait")}% of it waiting for a CPU)`);
      // Not a SQL job: no EXPLAIN ANALYZE panel (its route answers 404).
      check(await page.locator('[data-testid="explain-analyze-panel"]').isHidden(), "no EXPLAIN ANALYZE panel for a DataStream job");
      const edge = await page.locator('[data-testid="edge-label"]').first().textContent();
      check(edge === "HASH", `edge labelled with its ship strategy (${edge})`);
      await keyed.click();
    } else {
      // Under-provisioned: some vertex is busy, and one upstream of it backpressured (or it is the source).
      const busy = page.locator('[data-testid="vertex"][data-state="busy"]').first();
      await busy.waitFor({ timeout: DEADLINE_MS }).catch(() => {});
      check(await busy.count() > 0, `a vertex is busy (${await busy.getAttribute("data-vertex-name").catch(() => "none")})`);
      exp.busy = await busy.getAttribute("data-vertex-name").catch(() => null);
      if (exp.busy) await busy.click();
    }

    // Vertex panel: per-subtask rows, the hot subtask, the hot key, the level badge.
    const panel = page.locator('[data-testid="vertex-panel"]');
    await panel.locator('[data-testid="subtask-row"]').first().waitFor({ timeout: DEADLINE_MS });
    check(await panel.locator('[data-testid="bp-badge"]').count() > 0, "vertex panel shows a backpressure level badge");
    if (exp.hotSubtask) {
      // The keyed vertex reads an input gate: its bytes in flight and buffer size per subtask.
      const rows = panel.locator('[data-testid="in-flight-row"]');
      await rows.first().waitFor({ timeout: DEADLINE_MS }).catch(() => {});
      check(await rows.count() === 2, "vertex panel shows the input gate's bytes in flight per subtask");
    }
    if (exp.hotSubtask) {
      // Relative, not a fixed percentage (CPU starvation lowers every figure): subtask 2/2 holds
      // the hot key, so it is the busiest and at least twice as busy as its sibling, and the panel
      // marks it hot.
      const hot = panel.locator('[data-testid="subtask-row"][data-subtask-label="2/2"]');
      const clear = await until(async () => {
        const [a, b] = await subtaskBusy(panel);
        return (await hot.getAttribute("data-hot")) === "true" && b >= 2 * a && b > 0 ? [a, b] : null;
      });
      const [a, b] = clear || (await subtaskBusy(panel));
      check(!!clear, `hot subtask 2/2 listed, the busiest: busy ${b}% against ${a}% for 1/2`);
    } else {
      // Even load: every subtask of the bottleneck is about as busy as the busiest one.
      const even = (rows) => rows.length > 0 && Math.max(...rows) > 0 && Math.min(...rows) >= 0.6 * Math.max(...rows);
      const clear = await until(async () => {
        const rows = await subtaskBusy(panel);
        return even(rows) ? rows : null;
      });
      const rows = clear || (await subtaskBusy(panel));
      check(!!clear, `every subtask of the bottleneck about as busy as the busiest: ${rows.join("%, ")}%`);
    }
    if (exp.taskmanagers) {
      const tms = await until(async () => {
        const t = await panel.locator('[data-testid="subtask-row"]').evaluateAll((rs) => rs.map((r) => r.dataset.tm));
        return new Set(t.filter((x) => x)).size === exp.taskmanagers ? t : null;
      });
      check(!!tms, `each subtask shows its TaskManager, ${exp.taskmanagers} in all (${tms ? tms.join(", ") : "none"})`);
      check(await panel.locator('[data-testid="subtask-tm"]').count() === 2, "a TaskManager column per subtask");
      // Each sum subtask reads one source subtask across the wire: the exchange's decoding time.
      const dec = await until(async () => {
        const d = await panel.locator('[data-testid="serde-row"]').evaluateAll((rs) => rs.map((r) => parseFloat(r.dataset.decode)));
        return d.length === 2 && d.every((x) => x > 0) ? d : null;
      });
      check(!!dec, `network exchange: decoding ms/s per subtask (${dec ? dec.map((x) => x.toFixed(1)).join(", ") : "none"})`);
    }
    if (exp.hotKey != null) {
      const key = panel.locator(`[data-testid="hot-key"][data-key="${exp.hotKey}"]`);
      await key.waitFor({ timeout: DEADLINE_MS }).catch(() => {});
      check(await key.count() === 1, `hot key ${exp.hotKey} listed (share of vertex ${await key.getAttribute("data-share").catch(() => "?")}%)`);
    }

    // Doctor panel: the verdict first, and the bottleneck named.
    const doctor = page.locator('[data-testid="doctor-panel"]');
    await doctor.locator('[data-testid="doctor-verdict"], [data-testid="doctor-unavailable"]').first().waitFor({ timeout: DEADLINE_MS }).catch(() => {});
    if (await doctor.locator('[data-testid="doctor-unavailable"]').count()) {
      check(false, "doctor panel: /jobs/:id/doctor is not served");
    } else {
      const bn = doctor.locator('[data-testid="doctor-bottleneck"]');
      const want = exp.bottleneck || (exp.busy || "").split(" -> ")[0];
      // The doctor re-diagnoses as metrics update: wait until it names the bottleneck.
      await until(async () => ((await bn.textContent()) || "").includes(want));
      const text = (await bn.textContent().catch(() => "")) || "";
      const verdict = (await doctor.locator('[data-testid="doctor-verdict"]').textContent().catch(() => "")) || "";
      check(text.includes(want), `doctor names the bottleneck "${want}" (${text.trim()}); verdict: ${verdict.trim()}`);
    }

    // Checkpoints panel (the skew case runs with a checkpoint every 500 ms).
    if (SCENARIO === "skew") {
      await page.waitForFunction(() => {
        const e = document.querySelector('[data-testid="checkpoints-completed"] .v');
        return e && Number(e.textContent) > 0;
      }, null, { timeout: DEADLINE_MS }).catch(() => {});
      const n = Number((await page.locator('[data-testid="checkpoints-completed"] .v').textContent().catch(() => "0")) || 0);
      check(n > 0, `checkpoints panel shows ${n} completed checkpoint(s)`);
    }

    // Flame graph of the selected vertex: drawn by the page from the REST tree; the first request
    // answers "sampling" (-3), the graph follows. Zoom, search, type and subtask switches.
    const flame = page.locator('[data-testid="flamegraph-panel"]');
    await flame.waitFor({ timeout: DEADLINE_MS });
    const ready = await until(async () => (await page.locator('[data-testid="flame-status"]').getAttribute("data-state")) === "ready");
    check(!!ready, `flame graph sampled (${await page.locator('[data-testid="flame-status"]').textContent().catch(() => "")})`);
    const frames = flame.locator('[data-testid="flame-frame"]');
    check(await frames.count() > 3, `flame graph drawn (${await frames.count()} frames)`);
    if (SCENARIO === "skew") {
      // On CPU, the keyed vertex runs the sum operator (KeyedReduceOp) with its reduce function.
      await page.selectOption('[data-testid="flame-type"]', "on_cpu");
      await until(async () => (await page.locator('[data-testid="flame-status"]').getAttribute("data-state")) === "ready" &&
        (await flame.locator('[data-testid="flame-frame"][data-name*="KeyedReduceOp"]').count()) > 0);
      const op = flame.locator('[data-testid="flame-frame"][data-name*="KeyedReduceOp"]').first();
      check(await op.count() === 1, `on-CPU graph shows the sum operator (${await op.getAttribute("data-name").catch(() => "none")})`);
      if (await op.count()) {
        await op.click();
        const zoom = await page.locator('[data-testid="flame-graph"]').getAttribute("data-zoom");
        check((zoom || "").includes("KeyedReduceOp"), `click zooms into the frame (${zoom})`);
        await page.locator('[data-testid="flame-reset"]').click();
      }
      await page.fill('[data-testid="flame-search"]', "KeyedReduceOp");
      const matched = Number(await page.locator('[data-testid="flame-graph"]').getAttribute("data-matched"));
      check(matched > 0 && (await flame.locator(".fr.match").count()) > 0, `search highlights the frames (${matched} samples match)`);
      await page.fill('[data-testid="flame-search"]', "");
      await page.selectOption('[data-testid="flame-subtask"]', "1");
      const one = await until(async () => (await page.locator('[data-testid="flame-status"]').getAttribute("data-state")) === "ready");
      check(!!one, "subtask filter answers a graph for subtask 2/2");
    }

    // Autopilot timeline (the under-provisioned case runs `sluice run --autopilot`): the
    // in-process autopilot's own decision, as GET /jobs/:jid/autopilot has it, with its figures
    // before the change; then a decision with before/after figures reported over REST the way
    // `sluice doctor --apply` from another process does (PUT), drawn with its gains.
    if (SCENARIO === "under-provisioned") {
      const log = await until(async () => {
        const a = await rest(`/jobs/${jid}/autopilot`);
        return a?.decisions?.length ? a : null;
      });
      const first = log?.decisions?.[0];
      check(!!first, `the autopilot logged a decision: ${first ? first.outcome + " " + first["change-text"] + (first.reason ? " — " + first.reason : "") : "none"}`);
      const items = page.locator('[data-testid="autopilot-decision"]');
      await items.first().waitFor({ timeout: DEADLINE_MS }).catch(() => {});
      const shown = (await items.first().textContent().catch(() => "")) || "";
      check(!!first && shown.includes(first["change-text"]) && shown.includes("before: p=" + first.before?.parallelism),
        `timeline shows it with its before figures (${shown.trim().slice(0, 160)})`);
      const put = await fetch(BASE + `/jobs/${jid}/autopilot`, {
        method: "PUT", headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ id: 1000, time: Date.now(), outcome: "rolled-back",
          "change-text": "parallelism of `Source: generator` 1 -> 2 behind REBALANCE",
          before: { bottleneck: "Source: generator", parallelism: 1, "bottleneck-rate": 1000, throughput: 1000 },
          after: { bottleneck: "Source: generator", parallelism: 2, "bottleneck-rate": 1030, throughput: 1030 },
          gain: { "bottleneck-rate": 0.03, throughput: 0.03 },
          reason: "ineffective: the bottleneck's rate changed +3 % (needs +10 %)" }),
      });
      check(put.ok, `PUT /jobs/:jid/autopilot accepts a decision (${put.status})`);
      const rolled = page.locator('[data-testid="autopilot-decision"][data-outcome="rolled-back"]');
      await rolled.first().waitFor({ timeout: DEADLINE_MS }).catch(() => {});
      const text = (await rolled.first().textContent().catch(() => "")) || "";
      check(text.includes("before: p=1") && text.includes("after: p=2") && text.includes("+3 %") && text.includes("ineffective"),
        `timeline shows a rolled-back change with before/after figures and gains (${text.trim().slice(0, 200)})`);
    }

    // Thread dump: task threads with Flink's names and Java-like states.
    await page.locator('[data-testid="thread-dump-take"]').click();
    const infos = page.locator('[data-testid="thread-info"]');
    await infos.first().waitFor({ timeout: DEADLINE_MS }).catch(() => {});
    const names = await infos.evaluateAll((es) => es.map((e) => e.dataset.threadName + " " + e.dataset.state));
    check(names.length > 0 && names.every((n) => /\(\d+\/\d+\)#\d+ (RUNNABLE|WAITING|TIMED_WAITING|BLOCKED)$/.test(n)),
      `thread dump lists the task threads: ${names.slice(0, 3).join("; ")}`);

    const shot = path.join(OUT, `dashboard-${SCENARIO}.png`);
    await page.screenshot({ path: shot });
    console.log(`screenshot: ${shot}`);
  }
} finally {
  await browser.close();
}
if (failures) {
  console.log(`${failures} check(s) failed`);
  process.exit(1);
}
console.log(`dashboard e2e (${SCENARIO}): all checks passed`);
