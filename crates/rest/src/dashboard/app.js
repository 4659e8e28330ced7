// Sluice dashboard: vanilla JS over the Flink-compatible REST API (same origin), refreshed every second.
(function () {
  "use strict";
  var REFRESH_MS = 1000;
  var state = { job: null, vertex: null, jobs: [], rates: {}, metricIds: {}, doctorMissing: false, cpMissing: false };
  var $ = function (id) { return document.getElementById(id); };

  function esc(s) {
    return String(s).replace(/[&<>"']/g, function (c) {
      return { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c];
    });
  }
  function get(path) {
    return fetch(path, { cache: "no-store" }).then(function (r) {
      if (!r.ok) { var e = new Error(path + " → " + r.status); e.status = r.status; throw e; }
      return r.json();
    });
  }
  function fmtNum(n) {
    if (n == null || isNaN(n)) return "N/A";
    var a = Math.abs(n);
    if (a >= 1e9) return (n / 1e9).toFixed(2) + " G";
    if (a >= 1e6) return (n / 1e6).toFixed(2) + " M";
    if (a >= 1e4) return (n / 1e3).toFixed(1) + " k";
    return a >= 100 ? String(Math.round(n)) : String(Math.round(n * 10) / 10);
  }
  function fmtDur(ms) {
    if (ms == null || ms < 0) return "–";
    var s = Math.floor(ms / 1000), h = Math.floor(s / 3600), m = Math.floor((s % 3600) / 60);
    s = s % 60;
    return h ? h + "h " + m + "m" : m ? m + "m " + s + "s" : s + "s";
  }
  function fmtMs(ms) { return ms == null || isNaN(ms) ? "–" : ms < 1000 ? Math.round(ms) + " ms" : (ms / 1000).toFixed(1) + " s"; }
  function pct(x) { return x == null || isNaN(x) ? "N/A" : Math.round(x) + "%"; }
  // Flink's UI: min(round(ms_per_s / 10), 100)
  function msToPct(ms) { return ms == null || isNaN(ms) ? NaN : Math.min(Math.round(ms / 10), 100); }

  // ---- Flink's node colour (docs/src/reference/flink-formats.md#web-ui) ----------------
  function hex(c) { return [1, 3, 5].map(function (i) { return parseInt(c.substr(i, 2), 16); }); }
  function blend(a, b, t) {
    t = Math.max(0, Math.min(1, t || 0));
    var x = hex(a), y = hex(b);
    return "#" + x.map(function (v, i) {
      var n = Math.round(v + (y[i] - v) * t).toString(16);
      return n.length < 2 ? "0" + n : n;
    }).join("");
  }
  function nodeColours(busy, bp) {
    var bg = blend("#5db1ff", "#ee6464", (busy || 0) / 100), border = blend("#1890ff", "#ee2222", (busy || 0) / 100);
    return { bg: blend(bg, "#888888", (bp || 0) / 100), border: blend(border, "#000000", (bp || 0) / 100) };
  }
  // Backpressured when blocked on output at least as long as it computed: time a subtask was
  // runnable but waiting for a free CPU (an oversubscribed machine) counts as busy in Flink's
  // figure but is not work, so it is taken off before the comparison.
  function vertexState(busy, bp, cpuWait) {
    var work = isNaN(cpuWait) ? busy : Math.max(0, busy - cpuWait);
    if (!isNaN(bp) && bp >= 10 && bp >= work) return "backpressured";
    if (!isNaN(busy) && busy >= 50) return "busy";
    return "idle";
  }
  function level(ratio) { return ratio > 0.5 ? "high" : ratio > 0.1 ? "low" : "ok"; }
  function badge(lvl) {
    lvl = String(lvl || "ok").toLowerCase();
    var cls = lvl === "high" ? "high" : lvl === "low" ? "low" : "ok";
    return '<span class="badge ' + cls + '" data-testid="bp-badge" data-level="' + esc(lvl) + '">' + esc(lvl) + "</span>";
  }

  // ---- routing: #job=<id>&v=<vertex> --------------------------------------------------
  function readHash() {
    var h = {};
    location.hash.replace(/^#/, "").split("&").forEach(function (kv) {
      var p = kv.split("="); if (p[0]) h[p[0]] = decodeURIComponent(p[1] || "");
    });
    state.job = h.job || null; state.vertex = h.v || null;
  }
  function setHash(job, v) {
    var h = job ? "job=" + encodeURIComponent(job) + (v ? "&v=" + encodeURIComponent(v) : "") : "";
    if (location.hash.replace(/^#/, "") !== h) location.hash = h; else tick();
  }
  window.addEventListener("hashchange", function () { readHash(); tick(); });

  // ---- jobs list -----------------------------------------------------------------------
  function sourceRecords(detail) {
    var plan = (detail.plan && detail.plan.nodes) || [], inputs = {};
    plan.forEach(function (n) { inputs[n.id] = (n.inputs || []).length; });
    var sum = 0;
    (detail.vertices || []).forEach(function (v) {
      if (!inputs[v.id] && v.metrics) sum += v.metrics["write-records"] || 0;
    });
    return sum;
  }
  function refreshJobs() {
    return get("/jobs/overview").then(function (o) {
      var jobs = (o.jobs || []).slice(0, 25);
      state.jobs = jobs;
      return Promise.all(jobs.map(function (j) {
        var cached = state.rates[j.jid];
        if (cached && cached.final) return null;
        return get("/jobs/" + j.jid).then(function (d) {
          var dur = Math.max(d.duration || j.duration || 0, 1);
          state.rates[j.jid] = { rate: sourceRecords(d) * 1000 / dur, final: j.state !== "RUNNING" };
        }).catch(function () {});
      }));
    }).then(renderJobs);
  }
  function renderJobs() {
    var rows = state.jobs.map(function (j) {
      var r = state.rates[j.jid];
      return '<tr class="job' + (j.jid === state.job ? " selected" : "") + '" data-testid="job-row" data-job-id="' + esc(j.jid) +
        '" data-job-name="' + esc(j.name) + '" data-job-state="' + esc(j.state) + '">' +
        "<td>" + esc(j.name) + '</td><td><span class="pill ' + esc(j.state) + '">' + esc(j.state) + "</span></td>" +
        '<td class="num">' + fmtDur(j.duration) + '</td><td class="num" title="records/s read by the sources, averaged over the run">' +
        (r ? fmtNum(r.rate) : "…") + "</td></tr>";
    }).join("");
    $("jobs").innerHTML = rows;
    $("jobs-empty").hidden = state.jobs.length > 0;
    Array.prototype.forEach.call($("jobs").querySelectorAll("tr.job"), function (tr) {
      tr.addEventListener("click", function () { setHash(tr.getAttribute("data-job-id"), null); });
    });
  }

  // ---- job graph -----------------------------------------------------------------------
  var AGG = "/subtasks/metrics?get=busyTimeMsPerSecond,backPressuredTimeMsPerSecond,cpuWaitTimeMsPerSecond,numRecordsInPerSecond&agg=min,max,skew";
  function aggOf(list, id, key) {
    var m = (list || []).filter(function (x) { return x.id === id; })[0];
    return m && typeof m[key] === "number" ? m[key] : NaN;
  }
  function refreshJob() {
    var jid = state.job;
    return get("/jobs/" + jid).then(function (d) {
      return Promise.all((d.vertices || []).map(function (v) {
        return get("/jobs/" + jid + "/vertices/" + v.id + AGG).then(function (m) {
          v.busy = msToPct(aggOf(m, "busyTimeMsPerSecond", "max"));
          v.bp = msToPct(aggOf(m, "backPressuredTimeMsPerSecond", "max"));
          // The least any subtask waited for a CPU: busy (max) minus it bounds the work from above.
          v.cpuWait = msToPct(aggOf(m, "cpuWaitTimeMsPerSecond", "min"));
          v.skew = aggOf(m, "numRecordsInPerSecond", "skew");
        }).catch(function () { v.busy = NaN; v.bp = NaN; v.cpuWait = NaN; v.skew = NaN; });
      })).then(function () { return d; });
    }).then(function (d) { if (jid === state.job) { state.detail = d; renderJob(d); } });
  }
  function layout(d) {
    var nodes = (d.plan && d.plan.nodes) || [], inputs = {}, depth = {};
    nodes.forEach(function (n) { inputs[n.id] = (n.inputs || []).map(function (i) { return i; }); });
    (d.vertices || []).forEach(function (v) { if (!inputs[v.id]) inputs[v.id] = []; });
    function dep(id, seen) {
      if (depth[id] != null) return depth[id];
      if (seen[id]) return 0;
      seen[id] = true;
      var m = 0;
      inputs[id].forEach(function (i) { if (inputs[i.id]) m = Math.max(m, dep(i.id, seen) + 1); });
      return (depth[id] = m);
    }
    Object.keys(inputs).forEach(function (id) { dep(id, {}); });
    return { inputs: inputs, depth: depth };
  }
  var BW = 250, BH = 112, GX = 120, GY = 26, PAD = 16;
  function renderJob(d) {
    $("nojob").hidden = true; $("jobview").hidden = false;
    $("job-name").textContent = d.name;
    var st = $("job-state"); st.textContent = d.state; st.className = "pill " + d.state;
    $("job-meta").textContent = "id " + d.jid + " · running for " + fmtDur(d.duration) + " · " + (d.vertices || []).length + " vertices";
    var L = layout(d), cols = {}, pos = {};
    (d.vertices || []).forEach(function (v) {
      var c = L.depth[v.id] || 0; (cols[c] = cols[c] || []).push(v);
    });
    var ncol = 0, nrow = 0;
    Object.keys(cols).forEach(function (c) {
      ncol = Math.max(ncol, +c + 1); nrow = Math.max(nrow, cols[c].length);
      cols[c].forEach(function (v, r) { pos[v.id] = { x: PAD + c * (BW + GX), y: PAD + r * (BH + GY) }; });
    });
    var W = PAD * 2 + ncol * BW + (ncol - 1) * GX, H = PAD * 2 + nrow * BH + (nrow - 1) * GY;
    var svg = ['<svg xmlns="http://www.w3.org/2000/svg" width="' + W + '" height="' + H + '" role="img" aria-label="job graph">',
      '<defs><marker id="arr" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto"><path d="M0,0 L10,5 L0,10 z" fill="#8c8c8c"/></marker></defs>'];
    Object.keys(L.inputs).forEach(function (id) {
      L.inputs[id].forEach(function (i) {
        var a = pos[i.id], b = pos[id]; if (!a || !b) return;
        var x1 = a.x + BW, y1 = a.y + BH / 2, x2 = b.x - 2, y2 = b.y + BH / 2, mx = (x1 + x2) / 2;
        svg.push('<path class="edge" data-testid="edge" d="M' + x1 + "," + y1 + " C" + mx + "," + y1 + " " + mx + "," + y2 + " " + x2 + "," + y2 + '" marker-end="url(#arr)"/>');
        svg.push('<text class="edgelabel" data-testid="edge-label" text-anchor="middle" x="' + mx + '" y="' + ((y1 + y2) / 2 - 7) + '">' + esc(i.ship_strategy || "") + "</text>");
      });
    });
    (d.vertices || []).forEach(function (v) {
      var p = pos[v.id], c = nodeColours(v.busy, v.bp), s = vertexState(v.busy, v.bp, v.cpuWait);
      var title = v.name.length > 34 ? v.name.slice(0, 33) + "…" : v.name;
      svg.push('<g class="vbox' + (v.id === state.vertex ? " selected" : "") + '" data-testid="vertex" data-vertex-id="' + esc(v.id) +
        '" data-vertex-name="' + esc(v.name) + '" data-state="' + s + '" data-busy="' + v.busy + '" data-backpressured="' + v.bp +
        '" data-cpu-wait="' + v.cpuWait + '" transform="translate(' + p.x + "," + p.y + ')" tabindex="0"><title>' + esc(v.name) + "</title>" +
        '<rect class="frame" width="' + BW + '" height="' + BH + '" rx="6" fill="' + c.bg + '" stroke="' + c.border + '" stroke-width="3"/>' +
        '<text class="title" x="12" y="22">' + esc(title) + "</text>" +
        '<text x="12" y="42">Parallelism: ' + v.parallelism + "</text>" +
        '<text x="12" y="60">Busy (max): ' + pct(v.busy) + (v.cpuWait >= 1 ? " · ≥ " + pct(v.cpuWait) + " for a CPU" : "") + "</text>" +
        '<text x="12" y="78">Backpressured (max): ' + pct(v.bp) + "</text>" +
        '<text x="12" y="96">Data skew: ' + pct(v.skew) + "</text>" +
        '<g transform="translate(' + (BW - 12) + ',96)"><text text-anchor="end" font-weight="700" data-testid="vertex-state">' + s.toUpperCase() + "</text></g></g>");
    });
    svg.push("</svg>");
    $("graph").innerHTML = svg.join("");
    Array.prototype.forEach.call($("graph").querySelectorAll("g.vbox"), function (g) {
      var open = function () { setHash(state.job, g.getAttribute("data-vertex-id")); };
      g.addEventListener("click", open);
      g.addEventListener("keydown", function (e) { if (e.key === "Enter") open(); });
    });
  }

  // ---- vertex panel --------------------------------------------------------------------
  var PER_SUBTASK = ["numRecordsInPerSecond", "numRecordsOutPerSecond", "cpuTimeMsPerSecond", "busyTimeMsPerSecond", "cpuWaitTimeMsPerSecond"];
  // A split job's network exchange: encoding the subtask's outgoing records, decoding its incoming ones.
  var SERDE = ["serializationTimeMsPerSecond", "deserializationTimeMsPerSecond"];
  // The input gate's data in flight and what buffer debloating made of it (tasks with an input).
  var IN_FLIGHT = ["Shuffle.Netty.Input.0.inFlightBytes", "Shuffle.Netty.Input.0.debloatedBufferSize",
    "Shuffle.Netty.Input.0.estimatedTimeToConsumeBuffersMs"];
  // A lookup join's gauges: requests in flight, capacity, latest load (ms), cache hits/misses.
  var LOOKUP = ["inFlight", "capacity", "latestLoadTime", "hitCount", "missCount"];
  // An async wait operator's gauges (ordered_wait / unordered_wait, or a lookup join in async
  // mode): requests in flight, capacity, request latency percentiles (µs).
  var ASYNC = ["asyncInFlight", "asyncCapacity", "asyncLatencyUs_p50", "asyncLatencyUs_p95", "asyncLatencyUs_p99"];
  function fmtUs(us) { return us == null || isNaN(us) ? "–" : us < 1000 ? Math.round(us) + " µs" : fmtMs(us / 1000); }
  function fmtBytes(b) {
    if (b == null || isNaN(b)) return "–";
    return b < 1024 ? Math.round(b) + " B" : b < 1048576 ? (b / 1024).toFixed(1) + " KiB" : (b / 1048576).toFixed(1) + " MiB";
  }
  function refreshVertex() {
    var jid = state.job, vid = state.vertex;
    if (!vid) { $("vertex").hidden = true; return Promise.resolve(); }
    var v = ((state.detail && state.detail.vertices) || []).filter(function (x) { return x.id === vid; })[0];
    if (!v) { $("vertex").hidden = true; return Promise.resolve(); }
    var base = "/jobs/" + jid + "/vertices/" + vid;
    var ids = state.metricIds[vid]
      ? Promise.resolve(state.metricIds[vid])
      : get(base + "/metrics").then(function (l) {
        var ops = [], lag = [], input = false, lookups = [], asyncs = [];
        l.forEach(function (m) {
          // A lookup join's requests in flight against its capacity (sluice-lookup's gauges).
          var km = /^0\.(.+)\.capacity$/.exec(m.id);
          if (km && l.some(function (x) { return x.id === "0." + km[1] + ".inFlight"; })) lookups.push(km[1]);
          var am = /^0\.(.+)\.asyncCapacity$/.exec(m.id);
          if (am) asyncs.push(am[1]);
          var mm = /^0\.(.+)\.busyTimeMsPerSecond$/.exec(m.id);
          if (mm && !/^Shuffle\./.test(mm[1])) ops.push(mm[1]);
          // A Kafka source's per-partition lag (FLIP-33 pendingRecords per partition).
          var lm = /^\d+\..+\.KafkaSourceReader\.topic\.(.+)\.partition\.(\d+)\.pendingRecords$/.exec(m.id);
          if (lm) lag.push({ id: m.id, label: lm[1] + "/" + lm[2] });
          if (m.id === "0." + IN_FLIGHT[0]) input = true;
        });
        // One row set per operator that waits on requests: a lookup join, an async operator, or both.
        var waits = lookups.slice();
        asyncs.forEach(function (o) { if (waits.indexOf(o) < 0) waits.push(o); });
        var info = { ops: ops, lag: lag, input: input, lookups: lookups, asyncs: asyncs, waits: waits };
        // A source registers its gauges when it starts: look again until they are there.
        if (lag.length || !/^Source: /.test(v.name)) state.metricIds[vid] = info;
        return info;
      });
    return ids.then(function (info) {
      var names = [];
      for (var i = 0; i < v.parallelism; i++) {
        PER_SUBTASK.concat(SERDE).forEach(function (n) { names.push(i + "." + n); });
        info.ops.forEach(function (o) { names.push(i + "." + o + ".busyTimeMsPerSecond"); });
        if (info.input) IN_FLIGHT.forEach(function (n) { names.push(i + "." + n); });
        (info.lookups || []).forEach(function (o) { LOOKUP.forEach(function (n) { names.push(i + "." + o + "." + n); }); });
        (info.asyncs || []).forEach(function (o) { ASYNC.forEach(function (n) { names.push(i + "." + o + "." + n); }); });
      }
      (info.lag || []).forEach(function (x) { names.push(x.id); });
      return Promise.all([
        get(base + "/backpressure").catch(function () { return null; }),
        get(base + "/metrics?get=" + encodeURIComponent(names.join(","))).catch(function () { return []; }),
        get(base + "/hot-keys").catch(function () { return null; }),
        get(base).catch(function () { return null; }),
      ]).then(function (r) {
        recordLag(vid, info, r[1]);
        if (jid === state.job && vid === state.vertex) renderVertex(v, info, r[0], r[1], r[2], r[3]);
      });
    });
  }
  // ---- Kafka lag over time, per partition -------------------------------------------------
  var LAG_POINTS = 120, LAG_COLOURS = ["#1890ff", "#ee6464", "#52c41a", "#fa8c16", "#722ed1", "#13c2c2", "#eb2f96", "#8c8c8c"];
  function recordLag(vid, info, metrics) {
    if (!info.lag || !info.lag.length) return;
    var byId = {};
    (metrics || []).forEach(function (x) { byId[x.id] = parseFloat(x.value); });
    var hist = (state.lag = state.lag || {})[vid] = (state.lag || {})[vid] || {};
    info.lag.forEach(function (x) {
      if (!(x.id in byId)) return;
      var h = hist[x.label] = hist[x.label] || [];
      h.push(byId[x.id]);
      if (h.length > LAG_POINTS) h.shift();
    });
  }
  function lagChart(vid) {
    var hist = (state.lag || {})[vid];
    if (!hist) return "";
    var labels = Object.keys(hist).sort();
    if (!labels.length) return "";
    var W = 420, H = 120, max = 1;
    labels.forEach(function (l) { hist[l].forEach(function (y) { if (y > max) max = y; }); });
    var out = ['<h3>Kafka lag per partition (records, last ' + LAG_POINTS + ' updates)</h3>',
      '<svg data-testid="kafka-lag" width="' + W + '" height="' + H + '" viewBox="0 0 ' + W + " " + H + '" style="border:1px solid #ddd;background:#fff">'];
    labels.forEach(function (l, k) {
      var h = hist[l], pts = h.map(function (y, i) {
        return (W * (i + LAG_POINTS - h.length) / (LAG_POINTS - 1)).toFixed(1) + "," + (H - 4 - (H - 8) * y / max).toFixed(1);
      });
      out.push('<polyline fill="none" stroke-width="1.5" stroke="' + LAG_COLOURS[k % LAG_COLOURS.length] + '" points="' + pts.join(" ") + '"/>');
    });
    out.push('<text x="4" y="12" font-size="10" fill="#888">' + esc(fmtNum(max)) + "</text></svg>", '<div style="font-size:12px">');
    labels.forEach(function (l, k) {
      var h = hist[l], cur = h[h.length - 1];
      out.push('<span data-testid="kafka-lag-series" data-partition="' + esc(l) + '" data-lag="' + esc(cur) + '" style="margin-right:10px"><span class="sw" style="background:' +
        LAG_COLOURS[k % LAG_COLOURS.length] + '"></span>' + esc(l) + ": " + esc(fmtNum(cur)) + "</span>");
    });
    out.push("</div>");
    return out.join("");
  }
  // Where each subtask runs (`endpoint`, TaskManager id), by subtask index, from the vertex's
  // answer; `multi` when they run on more than one TaskManager (a job split over processes).
  function subtaskHosts(detail) {
    var by = {}, seen = {};
    ((detail && detail.subtasks) || []).forEach(function (s) {
      by[s.subtask] = { endpoint: s.endpoint || "", tm: s["taskmanager-id"] || "" };
      seen[s.endpoint] = true;
    });
    return { by: by, multi: Object.keys(seen).length > 1 };
  }
  function renderVertex(v, info, bp, metrics, hot, detail) {
    var hosts = subtaskHosts(detail);
    $("vertex").hidden = false;
    $("vertex-title").textContent = v.name;
    var m = {};
    (metrics || []).forEach(function (x) { m[x.id] = parseFloat(x.value); });
    var subs = (bp && bp.subtasks) || [];
    var lvl = (bp && (bp["backpressure-level"] || bp.backpressureLevel)) || "ok";
    var sumIn = 0, sumOut = 0, sumCpu = 0;
    for (var i = 0; i < v.parallelism; i++) {
      sumIn += m[i + ".numRecordsInPerSecond"] || 0; sumOut += m[i + ".numRecordsOutPerSecond"] || 0; sumCpu += m[i + ".cpuTimeMsPerSecond"] || 0;
    }
    var h = ['<div class="stats">',
      '<div class="stat"><div class="k">Backpressure</div><div class="v" data-testid="vertex-bp-level">' + badge(lvl) + "</div></div>",
      '<div class="stat"><div class="k">Records in / s</div><div class="v">' + fmtNum(sumIn) + "</div></div>",
      '<div class="stat"><div class="k">Records out / s</div><div class="v">' + fmtNum(sumOut) + "</div></div>",
      '<div class="stat"><div class="k">Data skew</div><div class="v" data-testid="vertex-skew">' + pct(v.skew) + "</div></div>",
      "</div>"];
    var maxBusy = 0, minBusy = 1;
    subs.forEach(function (s) { maxBusy = Math.max(maxBusy, s.busyRatio || 0); minBusy = Math.min(minBusy, s.busyRatio || 0); });
    h.push("<h3>Subtasks</h3>",
      '<table class="sub" data-testid="subtasks"><thead><tr><th>#</th><th>Busy / backpressured / idle</th><th class="num">In/s</th><th class="num">Out/s</th><th class="num">CPU ms/s</th><th>Level</th>' +
      (hosts.multi ? "<th>TaskManager</th>" : "") + "</tr></thead><tbody>");
    subs.forEach(function (s) {
      var n = s.subtask, busy = Math.round((s.busyRatio || 0) * 100), bpp = Math.round((s.ratio || 0) * 100), idle = Math.round((s.idleRatio || 0) * 100);
      // Of the busy share, the time the thread was runnable but waited for a free CPU.
      var cw = Math.min(busy, msToPct(m[n + ".cpuWaitTimeMsPerSecond"]) || 0);
      var hotRow = busy >= 80 && v.parallelism > 1 && (s.busyRatio || 0) >= maxBusy && maxBusy - minBusy >= 0.3; // uneven load
      var lab = n + 1 + "/" + v.parallelism;
      var host = hosts.by[n] || { endpoint: "", tm: "" };
      h.push('<tr data-testid="subtask-row" data-subtask="' + n + '" data-subtask-label="' + lab + '" data-tm="' + esc(host.endpoint) + '" data-busy="' + busy + '" data-backpressured="' + bpp +
        '" data-idle="' + idle + '" data-cpu-wait="' + cw + '" data-hot="' + hotRow + '"' + (hotRow ? ' class="hot"' : "") + "><td><b>" + lab + "</b>" + (hotRow ? ' <span class="badge high">hot</span>' : "") + "</td>" +
        '<td><div class="bar" title="busy ' + busy + "% (" + cw + "% of it waiting for a CPU), backpressured " + bpp + "%, idle " + idle + '%"><span class="b" style="width:' + (busy - cw) +
        '%"></span><span class="w" style="width:' + cw + '%"></span><span class="p" style="width:' + bpp +
        '%"></span><span class="i" style="width:' + idle + '%"></span></div><span class="barlabel">busy ' + busy + "%" + (cw >= 1 ? " (" + cw + "% waiting for a CPU)" : "") +
        " · backpressured " + bpp + "% · idle " + idle + "%</span></td>" +
        '<td class="num">' + fmtNum(m[n + ".numRecordsInPerSecond"]) + '</td><td class="num">' + fmtNum(m[n + ".numRecordsOutPerSecond"]) +
        '</td><td class="num">' + fmtNum(m[n + ".cpuTimeMsPerSecond"]) + "</td><td>" + badge(s["backpressure-level"] || s.backpressureLevel || level(s.ratio)) + "</td>" +
        (hosts.multi ? '<td data-testid="subtask-tm" title="TaskManager ' + esc(host.tm) + '">' + esc(host.endpoint) + "</td>" : "") + "</tr>");
    });
    h.push("</tbody></table>");
    h.push(lagChart(v.id));
    h.push('<p class="muted" style="margin:6px 0 0;font-size:12px">CPU total ' + fmtNum(sumCpu) + " ms/s" +
      (bp && bp["end-timestamp"] ? " · measured " + Math.max(0, Math.round((Date.now() - bp["end-timestamp"]) / 1000)) + " s ago" : "") + "</p>");
    var serde = false;
    for (var z = 0; z < v.parallelism; z++) serde = serde || (m[z + "." + SERDE[0]] || 0) + (m[z + "." + SERDE[1]] || 0) > 0;
    if (serde) {
      // Only a job split over processes encodes records: the exchange's threads, not the task's.
      h.push("<h3>Network exchange</h3>",
        '<table class="sub" data-testid="serde"><thead><tr><th>#</th><th class="num">Encoding ms/s</th><th class="num">Decoding ms/s</th></tr></thead><tbody>');
      for (var z2 = 0; z2 < v.parallelism; z2++) {
        var enc = m[z2 + "." + SERDE[0]], dec = m[z2 + "." + SERDE[1]];
        h.push('<tr data-testid="serde-row" data-subtask="' + z2 + '" data-encode="' + (isNaN(enc) ? "" : enc) + '" data-decode="' + (isNaN(dec) ? "" : dec) + '"><td><b>' + (z2 + 1) + "/" + v.parallelism +
          '</b></td><td class="num">' + fmtNum(enc) + '</td><td class="num">' + fmtNum(dec) + "</td></tr>");
      }
      h.push("</tbody></table>",
        '<p class="muted" style="margin:6px 0 0;font-size:12px">Time the exchange between processes spends encoding this vertex\'s records for another process and decoding the ones it receives (serializationTimeMsPerSecond, deserializationTimeMsPerSecond).</p>');
    }
    if (info.input) {
      var maxIf = 1;
      for (var q = 0; q < v.parallelism; q++) maxIf = Math.max(maxIf, m[q + "." + IN_FLIGHT[0]] || 0);
      h.push("<h3>Input in flight</h3>",
        '<table class="sub" data-testid="in-flight"><thead><tr><th>#</th><th>Bytes in flight</th><th class="num">Buffer size</th><th class="num">Time to consume</th></tr></thead><tbody>');
      for (var q2 = 0; q2 < v.parallelism; q2++) {
        var ifb = m[q2 + "." + IN_FLIGHT[0]], bs = m[q2 + "." + IN_FLIGHT[1]], ttc = m[q2 + "." + IN_FLIGHT[2]];
        var w = Math.round(100 * (ifb || 0) / maxIf);
        h.push('<tr data-testid="in-flight-row" data-subtask="' + q2 + '" data-bytes="' + (isNaN(ifb) ? "" : ifb) + '"><td><b>' + (q2 + 1) + "/" + v.parallelism + "</b></td>" +
          '<td><div class="bar" title="' + fmtBytes(ifb) + '"><span class="p" style="width:' + w + '%"></span></div><span class="barlabel">' + fmtBytes(ifb) + "</span></td>" +
          '<td class="num">' + fmtBytes(bs) + '</td><td class="num">' + (ttc > 0 ? fmtMs(ttc) : "–") + "</td></tr>");
      }
      h.push("</tbody></table>",
        '<p class="muted" style="margin:6px 0 0;font-size:12px">Buffer size: the size the gate announced to its senders (debloatedBufferSize; the configured size unless buffer debloating is on).</p>');
    }
    (info.waits || []).forEach(function (o) {
      var isLookup = info.lookups.indexOf(o) >= 0, isAsync = info.asyncs.indexOf(o) >= 0;
      var title = isLookup ? "Lookup join" + (isAsync ? " (async)" : " (sync)") : "Async I/O";
      h.push("<h3>" + title + " " + esc(o.replace(/__/g, ": ").replace(/_/g, " ")) + ": requests in flight</h3>",
        '<table class="sub" data-testid="async-io" data-operator="' + esc(o) + '" data-lookup="' + isLookup + '" data-async="' + isAsync + '"><thead><tr><th>#</th><th>In flight / capacity</th>' +
        (isAsync ? '<th class="num">p50</th><th class="num">p95</th><th class="num">p99</th>' : "") +
        (isLookup ? '<th class="num">Latest load</th><th class="num">Cache hits</th>' : "") + "</tr></thead><tbody>");
      for (var q3 = 0; q3 < v.parallelism; q3++) {
        var k = q3 + "." + o + ".";
        // The async operator's own gauges when present; a sync lookup's otherwise (capacity 1).
        var fl = (isAsync ? m[k + "asyncInFlight"] : m[k + "inFlight"]) || 0;
        var cap = (isAsync ? m[k + "asyncCapacity"] : m[k + "capacity"]) || 1;
        var p50 = m[k + "asyncLatencyUs_p50"], p95 = m[k + "asyncLatencyUs_p95"], p99 = m[k + "asyncLatencyUs_p99"];
        var lt = m[k + "latestLoadTime"], hc = m[k + "hitCount"] || 0, mc = m[k + "missCount"] || 0;
        var hit = hc + mc > 0 ? Math.round(100 * hc / (hc + mc)) : null;
        var w = Math.min(100, Math.round(100 * fl / cap));
        h.push('<tr data-testid="async-row" data-subtask="' + q3 + '" data-in-flight="' + fl + '" data-capacity="' + cap + '"' +
          (isAsync ? ' data-p50-us="' + (isNaN(p50) ? "" : p50) + '" data-p95-us="' + (isNaN(p95) ? "" : p95) + '" data-p99-us="' + (isNaN(p99) ? "" : p99) + '"' : "") +
          (isLookup ? ' data-hit-rate="' + (hit == null ? "" : hit) + '"' : "") + "><td><b>" + (q3 + 1) + "/" + v.parallelism + "</b></td>" +
          '<td><div class="bar" title="' + fl + " of " + cap + '"><span class="b" style="width:' + w + '%"></span></div><span class="barlabel">' + fl + " / " + cap + (cap === 1 && !isAsync ? " (sync)" : "") + "</span></td>" +
          (isAsync ? '<td class="num">' + fmtUs(p50) + '</td><td class="num">' + fmtUs(p95) + '</td><td class="num">' + fmtUs(p99) + "</td>" : "") +
          (isLookup ? '<td class="num">' + (lt == null || isNaN(lt) ? "–" : fmtMs(lt)) + '</td><td class="num">' + (hit == null ? "–" : hit + "%") + "</td>" : "") + "</tr>");
      }
      h.push("</tbody></table>",
        '<p class="muted" style="margin:6px 0 0;font-size:12px">' + (isAsync
          ? "Latency: issue to completion, retries included, over the last 1,024 requests. In flight stays at or below the capacity; full means the operator stops taking input."
          : "Capacity 1 is a sync lookup: one request at a time. The doctor proposes an async lookup with a capacity from Little\'s law when the task waits on it.") + "</p>");
    });
    if (info.ops.length) {
      h.push("<h3>Time per operator in the chain (busy ms/s, own time)</h3>",
        '<table class="sub" data-testid="operators"><thead><tr><th>Operator</th>');
      for (var s2 = 0; s2 < v.parallelism; s2++) h.push('<th class="num">' + (s2 + 1) + "/" + v.parallelism + "</th>");
      h.push("</tr></thead><tbody>");
      info.ops.forEach(function (o, k) {
        h.push('<tr data-testid="operator-row" data-operator="' + esc(o) + '"><td>' + esc(o.replace(/__/g, ": ")) + "</td>");
        for (var s3 = 0; s3 < v.parallelism; s3++) {
          var incl = m[s3 + "." + o + ".busyTimeMsPerSecond"], next = k + 1 < info.ops.length ? m[s3 + "." + info.ops[k + 1] + ".busyTimeMsPerSecond"] : 0;
          h.push('<td class="num">' + fmtNum(isNaN(incl) ? NaN : Math.max(0, incl - (next || 0))) + "</td>");
        }
        h.push("</tr>");
      });
      h.push("</tbody></table>");
    }
    var keys = (hot && hot["hot-keys"]) || [];
    if (keys.length) {
      h.push("<h3>Hot keys</h3>", '<table class="sub" data-testid="hot-keys"><thead><tr><th>Key</th><th>Subtask</th><th class="num">Share of vertex</th><th class="num">Share of subtask</th></tr></thead><tbody>');
      keys.slice(0, 5).forEach(function (k) {
        var sv = Math.round((k["share-of-vertex"] || 0) * 1000) / 10, ss = Math.round((k["share-of-subtask"] || 0) * 1000) / 10;
        h.push('<tr data-testid="hot-key" data-key="' + esc(k.key) + '" data-share="' + sv + '"><td><b>' + esc(k.key) + "</b></td><td>" +
          (k.subtask != null ? k.subtask + 1 + "/" + v.parallelism : "–") + '</td><td class="num">' + sv + '%</td><td class="num">' + ss + "%</td></tr>");
      });
      h.push("</tbody></table>");
    } else if (hot) {
      h.push('<p class="muted" style="font-size:12px">No hot keys (not a keyed vertex, or no records yet).</p>');
    }
    $("vertex-body").innerHTML = h.join("");
  }
  $("vertex-close").addEventListener("click", function () { setHash(state.job, null); });


  // ---- flame graph of the selected vertex (drawn here: an icicle, root on top) ---------------
  // GET …/flamegraph answers {"endTimestamp":-3} while the server samples (Flink's protocol),
  // then the tree; it is asked again every tick while sampling, every 5 s after.
  var flame = { key: null, data: null, end: null, zoom: [], asked: 0, vertex: null };
  function flameKey() { return state.job + "/" + state.vertex + "/" + $("flame-type").value + "/" + $("flame-subtask").value; }
  function refreshFlame() {
    var vid = state.vertex;
    if (!vid) { $("flame").hidden = true; flame.key = null; return Promise.resolve(); }
    var v = ((state.detail && state.detail.vertices) || []).filter(function (x) { return x.id === vid; })[0];
    if (!v) { $("flame").hidden = true; return Promise.resolve(); }
    $("flame").hidden = false;
    $("flame-vertex").textContent = "· " + v.name;
    var sel = $("flame-subtask");
    if (flame.vertex !== vid) {
      flame.vertex = vid;
      var opts = ['<option value="">all</option>'];
      for (var i = 0; i < v.parallelism; i++) opts.push('<option value="' + i + '">' + (i + 1) + "/" + v.parallelism + "</option>");
      sel.innerHTML = opts.join("");
    }
    var key = flameKey(), now = Date.now();
    if (key === flame.key && flame.data && now - flame.asked < 5000) return Promise.resolve();
    if (key !== flame.key) { flame.data = null; flame.zoom = []; }
    flame.key = key; flame.asked = now;
    var q = "?type=" + $("flame-type").value + (sel.value !== "" ? "&subtaskindex=" + sel.value : "");
    return get("/jobs/" + state.job + "/vertices/" + vid + "/flamegraph" + q).then(function (g) {
      if (key !== flameKey()) return;
      if (!g.data) {
        flame.asked = 0;
        $("flame-status").textContent = g.endTimestamp === -1 ? "The vertex's tasks are not running." : "Sampling the vertex's threads (100 looks, 50 ms apart)…";
        $("flame-status").setAttribute("data-state", g.endTimestamp === -1 ? "terminated" : "sampling");
        if (!flame.data) { $("flame-graph").innerHTML = ""; $("flame-crumbs").innerHTML = ""; }
        return;
      }
      var changed = g.endTimestamp !== flame.end || !flame.data;
      flame.data = g.data; flame.end = g.endTimestamp;
      $("flame-status").textContent = g.data.value + " samples · sampled until " + new Date(g.endTimestamp).toLocaleTimeString() +
        " · click a frame to zoom";
      $("flame-status").setAttribute("data-state", "ready");
      if (changed) drawFlame();
    }).catch(function (e) { $("flame-status").textContent = "flame graph unavailable: " + e.message; });
  }
  function flameNodeAt(path) {
    var n = flame.data;
    for (var i = 0; i < path.length && n; i++) n = (n.children || [])[path[i]];
    return n;
  }
  function flameColour(name) {
    if (/^\[(wait|blocked|syscall|kernel)\]/.test(name)) return "#7fb3e6";
    if (/^\[/.test(name)) return "#b7c4d6";
    var h = 0;
    for (var i = 0; i < Math.min(name.length, 40); i++) h = (h * 31 + name.charCodeAt(i)) >>> 0;
    return "hsl(" + (10 + (h % 40)) + "," + (70 + (h % 20)) + "%," + (55 + (h % 12)) + "%)";
  }
  function drawFlame() {
    var root = flame.data;
    if (!root) return;
    var zoomed = flameNodeAt(flame.zoom) || root;
    if (zoomed === root) flame.zoom = [];
    var W = Math.max(600, ($("flame").clientWidth || 1230) - 30), RH = 18, rows = [], term = $("flame-search").value.trim().toLowerCase();
    var matched = 0;
    // The zoomed node's ancestors span the full width (greyed); below it, widths by samples.
    var chain = [root], n = root;
    flame.zoom.forEach(function (i) { n = n.children[i]; chain.push(n); });
    chain.forEach(function (a, d) {
      rows.push({ node: a, path: flame.zoom.slice(0, d), x: 0, w: W, depth: d, anc: d < chain.length - 1 });
    });
    var scale = W / Math.max(zoomed.value, 1);
    function walk(node, path, x, depth) {
      var cx = x;
      (node.children || []).forEach(function (c, i) {
        var w = c.value * scale;
        if (w >= 0.5) {
          var p = path.concat([i]);
          rows.push({ node: c, path: p, x: cx, w: w, depth: depth });
          walk(c, p, cx, depth + 1);
        }
        cx += w;
      });
    }
    walk(zoomed, flame.zoom, 0, chain.length);
    var maxDepth = 0;
    rows.forEach(function (r) { maxDepth = Math.max(maxDepth, r.depth); });
    var svg = ['<svg xmlns="http://www.w3.org/2000/svg" width="' + W + '" height="' + (maxDepth + 1) * RH + '">'];
    rows.forEach(function (r, k) {
      var name = r.node.name, hit = term && name.toLowerCase().indexOf(term) >= 0;
      var chars = Math.floor((r.w - 6) / 6.6), label = chars < 3 ? "" : name.length > chars ? name.slice(0, chars - 1) + "…" : name;
      svg.push('<g class="fr' + (hit ? " match" : "") + (r.anc ? " dim" : "") + '" data-testid="flame-frame" data-k="' + k + '" data-name="' + esc(name) +
        '" data-value="' + r.node.value + '" data-depth="' + r.depth + '"><title>' + esc(name) + " — " + r.node.value + " samples (" +
        (Math.round(1000 * r.node.value / Math.max(root.value, 1)) / 10) + '%)</title><rect x="' + r.x.toFixed(1) + '" y="' + r.depth * RH +
        '" width="' + Math.max(r.w - 0.5, 0.5).toFixed(1) + '" height="' + (RH - 1) + '" fill="' + flameColour(name) + '"/><text x="' + (r.x + 3).toFixed(1) +
        '" y="' + (r.depth * RH + 13) + '">' + esc(label) + "</text></g>");
    });
    svg.push("</svg>");
    $("flame-graph").innerHTML = svg.join("");
    // Share of samples under a matching frame (each sample once: a match's subtree is not re-counted).
    if (term) {
      var under = 0;
      (function count(node) {
        if (node !== root && node.name.toLowerCase().indexOf(term) >= 0) { under += node.value; return; }
        (node.children || []).forEach(count);
      })(root);
      matched = under;
    }
    $("flame-graph").setAttribute("data-matched", term ? String(matched) : "");
    $("flame-graph").setAttribute("data-zoom", zoomed.name);
    $("flame-crumbs").innerHTML = chain.map(function (a, d) {
      return '<a data-depth="' + d + '">' + esc(d === 0 ? "root" : a.name) + "</a>";
    }).join(" › ") + (term ? ' · <span data-testid="flame-matched">' + Math.round(1000 * matched / Math.max(root.value, 1)) / 10 + "% of samples match “" + esc(term) + "”</span>" : "");
    Array.prototype.forEach.call($("flame-crumbs").querySelectorAll("a"), function (a) {
      a.addEventListener("click", function () { flame.zoom = flame.zoom.slice(0, +a.getAttribute("data-depth")); drawFlame(); });
    });
    var byK = rows;
    Array.prototype.forEach.call($("flame-graph").querySelectorAll("g.fr"), function (g) {
      g.addEventListener("click", function () { flame.zoom = byK[+g.getAttribute("data-k")].path; drawFlame(); });
    });
  }
  ["flame-type", "flame-subtask"].forEach(function (id) { $(id).addEventListener("change", function () { refreshFlame(); }); });
  $("flame-search").addEventListener("input", drawFlame);
  $("flame-reset").addEventListener("click", function () { flame.zoom = []; drawFlame(); });

  // ---- thread dump (on request) ----------------------------------------------------------
  function takeThreadDump() {
    $("threads-body").textContent = "Taking a thread dump…";
    return get("/taskmanagers").then(function (t) {
      var tm = t.taskmanagers && t.taskmanagers[0];
      if (!tm) throw new Error("no task manager");
      return get("/taskmanagers/" + encodeURIComponent(tm.id) + "/thread-dump");
    }).then(function (d) {
      var onlyTasks = $("threads-tasks").checked;
      var infos = (d.threadInfos || []).filter(function (t) { return !onlyTasks || / \(\d+\/\d+\)#\d+$/.test(t.threadName); });
      $("threads-body").className = "";
      $("threads-body").innerHTML = '<p class="muted" style="font-size:12px">' + infos.length + " of " + (d.threadInfos || []).length + " threads · " +
        new Date().toLocaleTimeString() + "</p>" + infos.map(function (t) {
          var m = /^"[^\n]*" Id=\d+ (\w+)/.exec(t.stringifiedThreadInfo || ""), st = m ? m[1] : "";
          return '<div class="threadinfo" data-testid="thread-info" data-thread-name="' + esc(t.threadName) + '" data-state="' + esc(st) +
            '"><span class="tstate ' + esc(st) + '">' + esc(st) + "</span> " + esc(t.stringifiedThreadInfo) + "</div>";
        }).join("");
    }).catch(function (e) { $("threads-body").textContent = "thread dump unavailable: " + e.message; });
  }
  $("threads-take").addEventListener("click", takeThreadDump);

  // ---- EXPLAIN ANALYZE (GET /jobs/:jid/explain-analyze, Sluice extension) -------------------
  // A SQL job's plan as EXPLAIN prints it, each line with its operator's live figures; a job
  // not planned from SQL answers 404 and the panel stays hidden.
  function fmtMsS(v) { return v == null || isNaN(v) ? "–" : String(Math.round(v)); }
  function renderExplain(e) {
    var rows = (e.nodes || []).map(function (n) {
      var f = n.figures;
      var hot = f && (f["hot-keys"] || []).map(function (k) { return esc(k.key) + " (" + Math.round(100 * k["share-of-vertex"]) + "%)"; }).join(", ");
      var cells = f ? [fmtMsS(f["busy-ms-per-second"]), fmtMsS(f["backpressured-ms-per-second"]), fmtMsS(f["idle-ms-per-second"]),
        fmtNum(f["records-in"]) + (f["records-in-scope"] === "vertex" ? "ᵛ" : ""), fmtNum(f["records-out"]) + (f["records-out-scope"] === "vertex" ? "ᵛ" : ""),
        f["state-size"] == null ? "–" : fmtBytes(f["state-size"]), hot || "–"]
        : ['<span title="' + esc(n.note || "") + '">' + esc(n.note || "") + "</span>", "", "", "", "", "", ""];
      var attrs = ' data-testid="explain-node" data-node-id="' + n.id + '"' + (n["vertex-id"] ? ' data-vertex-id="' + esc(n["vertex-id"]) + '"' : "") +
        (f ? ' data-records-in="' + f["records-in"] + '" data-records-out="' + f["records-out"] + '"' : "");
      var line = '<td class="planline" title="' + esc(n.description) + (n.note ? " — " + esc(n.note) : "") + '">' + esc(n.line) + "</td>";
      if (!f) return "<tr class=\"nofig\"" + attrs + ">" + line + '<td colspan="7" style="text-align:left">' + cells[0] + "</td></tr>";
      return "<tr" + attrs + ">" + line + cells.map(function (c) { return "<td>" + c + "</td>"; }).join("") + "</tr>";
    });
    $("explain-body").innerHTML = '<table class="explain" data-testid="explain-table"><thead><tr><th class="planline">== Optimized Physical Plan ==</th>' +
      "<th>busy</th><th>backpr.</th><th>idle</th><th>in</th><th>out</th><th>state</th><th>hot keys</th></tr></thead><tbody>" + rows.join("") + "</tbody></table>" +
      '<p class="muted">ms per second of the vertex running each operator; ᵛ: the vertex\'s count (the chain\'s head or last operator).</p>';
  }
  function refreshExplain() {
    var jid = state.job;
    if (state.explainMissing === jid) return Promise.resolve();
    return get("/jobs/" + jid + "/explain-analyze").then(function (e) {
      if (jid !== state.job) return;
      $("explain").hidden = false;
      renderExplain(e);
    }).catch(function (e) {
      if (e.status === 404 && jid === state.job) { state.explainMissing = jid; $("explain").hidden = true; }
    });
  }

  // ---- doctor panel --------------------------------------------------------------------
  function renderValue(x) {
    if (x == null) return "–";
    if (Array.isArray(x)) return x.length ? '<ul class="ev">' + x.map(function (e) { return "<li>" + renderValue(e) + "</li>"; }).join("") + "</ul>" : "–";
    if (typeof x === "object") {
      return '<table class="kv">' + Object.keys(x).map(function (k) { return "<tr><td>" + esc(k) + "</td><td>" + renderValue(x[k]) + "</td></tr>"; }).join("") + "</table>";
    }
    if (typeof x === "number") return esc(Math.round(x * 1000) / 1000);
    return esc(x);
  }
  function renderPlanChange(pc) {
    if (!pc || typeof pc !== "object") return "";
    var out = ['<div class="diff" data-testid="plan-change"><div><b>plan change: ' + esc(pc.kind || "change") + (pc.operator ? " on " + esc(pc.operator) : "") + "</b></div>"];
    var seen = { kind: 1, operator: 1 };
    Object.keys(pc).forEach(function (k) {
      if (seen[k]) return;
      var val = pc[k];
      if (val && typeof val === "object" && !Array.isArray(val) && ("before" in val || "after" in val)) {
        out.push('<div class="del">- ' + esc(k) + ": " + esc(JSON.stringify(val.before)) + '</div><div class="add">+ ' + esc(k) + ": " + esc(JSON.stringify(val.after)) + "</div>");
      } else if (k === "adds" || k === "add") {
        [].concat(val || []).forEach(function (a) { out.push('<div class="add">+ ' + esc(typeof a === "string" ? a : JSON.stringify(a)) + "</div>"); });
      } else if (k === "removes" || k === "remove") {
        [].concat(val || []).forEach(function (a) { out.push('<div class="del">- ' + esc(typeof a === "string" ? a : JSON.stringify(a)) + "</div>"); });
      } else {
        out.push("<div>  " + esc(k) + ": " + esc(typeof val === "string" ? val : JSON.stringify(val)) + "</div>");
      }
    });
    out.push("</div>");
    return out.join("");
  }
  function refreshDoctor() {
    if (state.doctorMissing) return Promise.resolve();
    var jid = state.job;
    return get("/jobs/" + jid + "/doctor").then(function (d) {
      if (jid === state.job) renderDoctor(d);
    }).catch(function (e) {
      if (e.status === 404) {
        $("doctor-body").className = "";
        $("doctor-body").innerHTML = '<span class="muted" data-testid="doctor-unavailable">The doctor is not available on this server.</span>';
      }
    });
  }
  // The autopilot's decision log (GET /jobs/:jid/autopilot, Sluice extension): one entry per
  // decision, newest first, with the figures before and after the change and its outcome.
  function refreshAutopilot() {
    if (state.autopilotMissing) return Promise.resolve();
    var jid = state.job;
    return get("/jobs/" + jid + "/autopilot").then(function (a) {
      if (jid === state.job) renderAutopilot(a);
    }).catch(function (e) { if (e.status === 404) state.autopilotMissing = true; });
  }
  function figures(m) {
    if (!m) return "–";
    return "p=" + esc(m.parallelism) + " · " + esc(m.bottleneck) + " " + fmtNum(m["bottleneck-rate"]) +
      "/s · job " + fmtNum(m.throughput) + "/s";
  }
  function signedPct(x) {
    return x == null ? "n/a" : (x >= 0 ? "+" : "") + Math.round(x * 100) + " %";
  }
  function renderAutopilot(a) {
    var list = (a && a.decisions) || [];
    $("autopilot").hidden = list.length === 0;
    if (!list.length) return;
    var h = list.slice().reverse().map(function (d) {
      var when = d.time ? new Date(d.time).toLocaleTimeString() : "";
      var gain = d.gain ? ' <span class="chip" data-testid="autopilot-gain">rate ' + signedPct(d.gain["bottleneck-rate"]) +
        " · throughput " + signedPct(d.gain.throughput) + "</span>" : "";
      return '<li class="' + esc(d.outcome) + '" data-testid="autopilot-decision" data-outcome="' + esc(d.outcome) + '">' +
        '<div><b>#' + esc(d.id) + " " + esc(d.outcome) + "</b> " + esc(when) + " · " + esc(d["change-text"]) + gain + "</div>" +
        '<div class="figs" data-testid="autopilot-before">before: ' + figures(d.before) + "</div>" +
        (d.after ? '<div class="figs" data-testid="autopilot-after">after: ' + figures(d.after) + "</div>" : "") +
        (d.reason ? '<div class="muted" data-testid="autopilot-reason">' + esc(d.reason) + "</div>" : "") +
        "</li>";
    });
    $("autopilot-body").innerHTML = h.join("");
  }
  function renderDoctor(d) {
    var body = $("doctor-body");
    body.className = "";
    if (!d || d.status === "no-metrics-yet") {
      body.innerHTML = '<span class="muted" data-testid="doctor-waiting">Waiting for metrics…</span>';
      return;
    }
    var h = [];
    h.push('<div class="verdict" data-testid="doctor-verdict">' + esc(d.verdict || "No verdict") + "</div>");
    var chips = [];
    if (d.cause) chips.push('<span class="chip" data-testid="doctor-cause">cause: ' + esc(d.cause) + "</span>");
    if (typeof d.confidence === "number") chips.push('<span class="chip">confidence ' + Math.round(d.confidence * 100) + "%</span>");
    var b = d.bottleneck;
    if (b && typeof b === "object") {
      chips.push('<span class="chip" data-testid="doctor-bottleneck" data-operator="' + esc(b.operator || "") + '" data-vertex-name="' + esc(b["vertex-name"] || "") + '">bottleneck: ' +
        esc(b.operator || b["vertex-name"] || b.vertex || "?") + (b["vertex-name"] && b.operator && b["vertex-name"] !== b.operator ? " in “" + esc(b["vertex-name"]) + "”" : "") +
        (Array.isArray(b.subtasks) && b.subtasks.length ? " · subtask" + (b.subtasks.length > 1 ? "s " : " ") + b.subtasks.map(function (s) { return typeof s === "number" ? s + 1 : s; }).join(", ") : "") + "</span>");
    }
    if (chips.length) h.push('<div class="chips">' + chips.join("") + "</div>");
    var hk = d["hot-keys"];
    if (Array.isArray(hk) && hk.length) {
      h.push('<div style="font-size:13px">Hot keys: ' + hk.slice(0, 5).map(function (k) {
        return "<b>" + esc(k.key) + "</b>" + (typeof k.share === "number" ? " (" + Math.round(k.share * 1000) / 10 + "%)" : "");
      }).join(", ") + "</div>");
    }
    if (Array.isArray(d.evidence) && d.evidence.length) h.push("<h3>Evidence</h3>", '<div data-testid="doctor-evidence">' + renderValue(d.evidence) + "</div>");
    var fix = d.fix;
    var pc = d["plan-change"] || (fix && fix["plan-change"]);
    if (fix && typeof fix === "object") {
      h.push("<h3>Proposed fix</h3>", '<div class="fix" data-testid="doctor-fix">');
      if (fix.description) h.push("<div>" + esc(fix.description) + "</div>");
      if (fix.change) h.push('<div class="diff">' + esc(fix.change) + "</div>");
      Object.keys(fix).forEach(function (k) {
        if (k !== "description" && k !== "change" && k !== "plan-change") h.push('<div style="font-size:12px"><span class="muted">' + esc(k) + ":</span> " + renderValue(fix[k]) + "</div>");
      });
      h.push(renderPlanChange(pc), "</div>");
    } else if (pc) {
      h.push("<h3>Plan change</h3>", renderPlanChange(pc));
    }
    if (d["expected-effect"]) h.push("<h3>Expected effect</h3><div>" + renderValue(d["expected-effect"]) + "</div>");
    if (Array.isArray(d.undetermined) && d.undetermined.length) h.push("<h3>Not determined</h3>", '<div class="muted">' + renderValue(d.undetermined) + "</div>");
    var known = { verdict: 1, cause: 1, confidence: 1, bottleneck: 1, "hot-keys": 1, evidence: 1, fix: 1, "plan-change": 1, "expected-effect": 1, undetermined: 1, status: 1 };
    var rest = {};
    Object.keys(d).forEach(function (k) { if (!known[k]) rest[k] = d[k]; });
    if (Object.keys(rest).length) h.push('<details style="margin-top:8px"><summary class="muted">More</summary>' + renderValue(rest) + "</details>");
    body.innerHTML = h.join("");
  }

  // ---- checkpoints panel (only once the endpoint answers with data) ---------------------
  function refreshCheckpoints() {
    if (state.cpMissing) return Promise.resolve();
    return get("/jobs/" + state.job + "/checkpoints").then(function (c) {
      var counts = c && c.counts;
      // Every job can take savepoints; show the panel once there is something to show.
      if (!c || !counts || !counts.total) { $("checkpoints").hidden = true; return; }
      var h = [];
      h.push('<div class="stats">' + ["completed", "in_progress", "failed", "restored"].map(function (k) {
        return '<div class="stat" data-testid="checkpoints-' + k + '"><div class="k">' + esc(k.replace("_", " ")) + '</div><div class="v">' + esc(counts[k]) + "</div></div>";
      }).join("") + "</div>");
      var last = c.latest && c.latest.completed;
      if (last) h.push('<p>Latest: #' + esc(last.id) + " · " + esc(last.checkpoint_type) + " · " + fmtMs(last.end_to_end_duration) +
        " · " + fmtNum(last.state_size) + " bytes</p>");
      var failed = c.latest && c.latest.failed;
      if (failed) h.push('<p class="muted">Last failure: #' + esc(failed.id) + " · " + esc(failed.failure_message || "") + "</p>");
      if (c.summary && c.summary.end_to_end_duration) {
        var d = c.summary.end_to_end_duration;
        h.push('<p class="muted">End to end: min ' + fmtMs(d.min) + " · p90 " + fmtMs(d.p90) + " · max " + fmtMs(d.max) + "</p>");
      }
      $("checkpoints-body").innerHTML = h.join("");
      $("checkpoints").hidden = false;
    }).catch(function (e) {
      $("checkpoints").hidden = true;
      if (e.status === 404 && /checkpoints/.test(e.message)) state.cpMissingCount = (state.cpMissingCount || 0) + 1;
      if (state.cpMissingCount > 3) state.cpMissing = true;
    });
  }

  // ---- loop ------------------------------------------------------------------------------
  var timer = null, busy = false;
  function tick() {
    if (busy) return;
    busy = true;
    clearTimeout(timer);
    var p = refreshJobs().then(function () {
      if (!state.job && state.jobs.length) {
        var run = state.jobs.filter(function (j) { return j.state === "RUNNING"; })[0] || state.jobs[0];
        state.job = run.jid;
        history.replaceState(null, "", "#job=" + run.jid);
        renderJobs();
      }
      if (!state.job) { $("jobview").hidden = true; $("nojob").hidden = false; return; }
      return refreshJob().then(function () {
        return Promise.all([refreshVertex(), refreshDoctor(), refreshExplain(), refreshAutopilot(), refreshCheckpoints(), refreshFlame()]);
      });
    });
    p.then(function () {
      $("status").textContent = "live · updated " + new Date().toLocaleTimeString();
      document.body.setAttribute("data-updated", String(Date.now()));
    }, function (e) {
      $("status").textContent = "update failed: " + e.message;
    }).then(function () { busy = false; timer = setTimeout(tick, REFRESH_MS); });
  }
  readHash();
  tick();
})();
