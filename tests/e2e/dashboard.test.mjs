// End-to-end test of the web dashboard in headless Chromium (playwright-core, Debian's chromium).
// Run by scripts/e2e-dashboard.sh against a running `sluice run …` job.
// Env: SLUICE_URL (http://127.0.0.1:18082), SCENARIO (skew | under-provisioned), E2E_OUT (output dir),
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
  "under-provisioned": { busyFrom: "job", hotSubtask: false, hotKey: null, bottleneck: null },
};

let failures = 0;
function check(cond, what) {
  console.log(`${cond ? "ok  " : "FAIL"} ${what}`);
  if (!cond) failures++;
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

  await page.goto(BASE + "/", { waitUntil: "domcontentloaded" });
  // The running job is selected by default; click it anyway, as a user would.
  const row = page.locator('[data-testid="job-row"][data-job-state="RUNNING"]').first();
  await row.waitFor({ timeout: 15000 });
  await row.click();
  await page.locator('[data-testid="vertex"]').first().waitFor({ timeout: 15000 });

  if (SCENARIO === "skew") {
    const keyed = page.locator(`[data-testid="vertex"][data-vertex-name="${exp.busy}"]`);
    const upstream = page.locator(`[data-testid="vertex"][data-vertex-name="${exp.backpressured}"]`);
    // Live data: wait until the graph shows the steady state (metrics need a window to fill).
    await keyed.and(page.locator('[data-state="busy"]')).waitFor({ timeout: 20000 }).catch(() => {});
    await upstream.and(page.locator('[data-state="backpressured"]')).waitFor({ timeout: 20000 }).catch(() => {});
    check(await keyed.getAttribute("data-state") === "busy", `keyed vertex "${exp.busy}" is busy (busy ${await keyed.getAttribute("data-busy")}%)`);
    check(await upstream.getAttribute("data-state") === "backpressured",
      `upstream vertex "${exp.backpressured}" is backpressured (backpressured ${await upstream.getAttribute("data-backpressured")}%)`);
    const edge = await page.locator('[data-testid="edge-label"]').first().textContent();
    check(edge === "HASH", `edge labelled with its ship strategy (${edge})`);
    await keyed.click();
  } else {
    // Under-provisioned: some vertex is busy, and one upstream of it backpressured (or it is the source).
    const busy = page.locator('[data-testid="vertex"][data-state="busy"]').first();
    await busy.waitFor({ timeout: 20000 }).catch(() => {});
    check(await busy.count() > 0, `a vertex is busy (${await busy.getAttribute("data-vertex-name").catch(() => "none")})`);
    exp.busy = await busy.getAttribute("data-vertex-name").catch(() => null);
    if (exp.busy) await busy.click();
  }

  // Vertex panel: per-subtask rows, the hot subtask, the hot key, the level badge.
  const panel = page.locator('[data-testid="vertex-panel"]');
  await panel.locator('[data-testid="subtask-row"]').first().waitFor({ timeout: 15000 });
  check(await panel.locator('[data-testid="bp-badge"]').count() > 0, "vertex panel shows a backpressure level badge");
  if (exp.hotSubtask) {
    const hot = panel.locator('[data-testid="subtask-row"][data-subtask-label="2/2"]');
    await hot.and(page.locator('[data-hot="true"]')).waitFor({ timeout: 15000 }).catch(() => {});
    const busyPct = Number(await hot.getAttribute("data-busy"));
    check(busyPct >= 85 && (await hot.getAttribute("data-hot")) === "true", `hot subtask 2/2 listed, busy ${busyPct}%`);
  } else {
    const rows = await panel.locator('[data-testid="subtask-row"]').evaluateAll((rs) => rs.map((r) => Number(r.dataset.busy)));
    check(rows.length > 0 && rows.every((b) => b >= 70), `every subtask of the bottleneck busy: ${rows.join("%, ")}%`);
  }
  if (exp.hotKey != null) {
    const key = panel.locator(`[data-testid="hot-key"][data-key="${exp.hotKey}"]`);
    await key.waitFor({ timeout: 15000 }).catch(() => {});
    check(await key.count() === 1, `hot key ${exp.hotKey} listed (share of vertex ${await key.getAttribute("data-share").catch(() => "?")}%)`);
  }

  // Doctor panel: the verdict first, and the bottleneck named.
  const doctor = page.locator('[data-testid="doctor-panel"]');
  await doctor.locator('[data-testid="doctor-verdict"], [data-testid="doctor-unavailable"]').first().waitFor({ timeout: 20000 }).catch(() => {});
  if (await doctor.locator('[data-testid="doctor-unavailable"]').count()) {
    check(false, "doctor panel: /jobs/:id/doctor is not served");
  } else {
    const bn = doctor.locator('[data-testid="doctor-bottleneck"]');
    await bn.waitFor({ timeout: 20000 }).catch(() => {});
    const text = (await bn.textContent().catch(() => "")) || "";
    const verdict = (await doctor.locator('[data-testid="doctor-verdict"]').textContent().catch(() => "")) || "";
    const want = exp.bottleneck || (exp.busy || "").split(" -> ")[0];
    check(text.includes(want), `doctor names the bottleneck "${want}" (${text.trim()}); verdict: ${verdict.trim()}`);
  }

  // Checkpoints panel (the skew case runs with a checkpoint every 500 ms).
  if (SCENARIO === "skew") {
    await page.waitForFunction(() => {
      const e = document.querySelector('[data-testid="checkpoints-completed"] .v');
      return e && Number(e.textContent) > 0;
    }, null, { timeout: 20000 }).catch(() => {});
    const n = Number((await page.locator('[data-testid="checkpoints-completed"] .v').textContent().catch(() => "0")) || 0);
    check(n > 0, `checkpoints panel shows ${n} completed checkpoint(s)`);
  }

  const shot = path.join(OUT, `dashboard-${SCENARIO}.png`);
  await page.screenshot({ path: shot });
  console.log(`screenshot: ${shot}`);
} finally {
  await browser.close();
}
if (failures) {
  console.log(`${failures} check(s) failed`);
  process.exit(1);
}
console.log(`dashboard e2e (${SCENARIO}): all checks passed`);
