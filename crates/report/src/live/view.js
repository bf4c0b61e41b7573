"use strict";
// dyno's view of a run over time, shared by the page `dyno run --ui` serves while the run goes
// and by the HTML report it becomes (where the same events are frozen in the page). It is fed
// events one by one: `run` (the plan), `case` (a repetition begins), `interval` (one interval's
// figures), `fault` (a fault begins or is over); it draws a section per repetition with its
// figures and charts, and the faults as bands. Nothing here fetches anything. Set on `window`,
// not declared: the live page becomes the report in the same window, and runs this again.
window.dynoView = (() => {
  function lat(ns) {
    if (!(ns > 0)) return "0";
    const units = [[1e9, "s"], [1e6, "ms"], [1e3, "µs"]];
    for (const [d, u] of units) if (ns >= d) return (ns / d).toPrecision(3) + u;
    return Math.round(ns) + "ns";
  }
  const count = (n) => Math.round(n).toLocaleString("en-US");
  const secs = (ns) => (ns / 1e9).toFixed(1) + " s";
  function el(tag, attrs, text) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
    if (text !== undefined) e.textContent = text;
    return e;
  }
  const esc = (s) => String(s).replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]);

  // At most this many points a chart: past it, neighbours become one (the rate's mean, the
  // latencies' largest, the gauges' last), so a page open for days stays quick.
  const MAX_POINTS = 3000;
  const PEAKS = ["p50", "p99", "p999", "max", "svc"];
  // Two neighbouring points as one: their span, the rate over it, the larger of the rest.
  function joined(a, b) {
    const m = { t0: a.t0, t: b.t, rate: (a.rate * (a.t - a.t0) + b.rate * (b.t - b.t0)) / Math.max(b.t - a.t0, 1e-9) };
    for (const k of PEAKS) m[k] = Math.max(a[k], b[k]);
    // Gauges are read at the end.
    m.open = b.open;
    m.busy = b.busy;
    return m;
  }
  function halved(points) {
    const out = [];
    for (let i = 0; i + 1 < points.length; i += 2) out.push(joined(points[i], points[i + 1]));
    if (points.length % 2) out.push(points[points.length - 1]);
    return out;
  }

  function extent(values) {
    let lo = Infinity, hi = -Infinity;
    for (const v of values) { if (v < lo) lo = v; if (v > hi) hi = v; }
    return [lo, hi];
  }

  // The round step (1, 2 or 5 times a power of ten) at or above `raw`.
  function niceStep(raw) {
    const p = 10 ** Math.floor(Math.log10(raw));
    return [1, 2, 5, 10].map((m) => m * p).find((s) => s >= raw);
  }

  const FIGS = [["rate", "rate /s"], ["p50", "p50"], ["p99", "p99"], ["p999", "p99.9"], ["max", "max"],
    ["svc", "service p99"], ["errors", "errors so far"], ["open", "connections open"],
    ["busy", "requests in flight"], ["connects", "connections opened so far"], ["offered", "offered /s"],
    ["cpu", "dyno's CPU"]];

  const CHARTS = [
    ["rate", 190, "rate per interval", "responses per second, per interval; faults shaded"],
    ["lat", 230, "latency per interval", "latency per interval, from each request's intended start (log scale): p50, p99, " +
      "p99.9, max; service time p99 from the actual send, dashed; faults shaded"],
    ["conns", 150, "connections per interval", "connections open and requests in flight at each interval's end; faults shaded"],
  ];

  // A view in `root`: `hooks.heading` the heading of a repetition's section ("h2" unless
  // told), `hooks.interval(c, e)` told after each interval, `hooks.frozen` when every event
  // is at hand (the report): nothing is drawn until `finish()`.
  function view(root, hooks) {
    hooks = hooks || {};
    const run = { plan: null, cases: new Map(), faults: [] };
    root.textContent = "";
    const faultsBox = el("section", { class: "faults-box", hidden: "" });
    faultsBox.append(el(hooks.heading || "h2", {}, "Faults"), el("ul", { class: "faults" }));
    const cases = el("div", { class: "cases" });
    root.append(faultsBox, cases);

    function onCase(e) {
      if (run.cases.has(e.started_ns)) return;
      const c = { ...e, points: [], last: null };
      run.cases.set(e.started_ns, c);
      c.label = `${e.target} · ${e.test}` + (e.level ? ` · level ${e.level}` : "");
      c.repName = e.rep === 0 ? "warm-up" : `repetition ${e.rep} of ${e.reps}`;
      const s = el("section", { class: "case", id: `case-${e.started_ns}`, "aria-label": `${e.target} ${e.test}` });
      const h = el(hooks.heading || "h2", {}, c.label + " ");
      h.append(el("span", { class: "muted" }, `case ${e.n + 1} of ${e.cases} · ${c.repName}`));
      const dl = el("dl", { class: "kv figs" });
      for (const [k, name] of FIGS) {
        const d = el("div");
        d.append(el("dt", {}, name), el("dd", { "data-f": k }, "–"));
        dl.append(d);
      }
      s.append(h, dl);
      for (const [cls, height, label, caption] of CHARTS) {
        const f = el("figure");
        f.innerHTML = `<svg class="chart ${cls}" viewBox="0 0 800 ${height}" role="img" aria-label="${label}"></svg>` +
          `<figcaption>${caption}</figcaption>`;
        s.append(f);
      }
      s.append(el("div", { class: "scroll errors" }));
      // The running one on top; in the report, in the order they ran.
      if (hooks.frozen) cases.append(s); else cases.prepend(s);
      c.node = s;
    }

    function onInterval(e) {
      const c = run.cases.get(e.started_ns);
      if (!c) return;
      const iv = e.iv;
      let p = { t0: iv.start_ns / 1e9, t: iv.end_ns / 1e9, rate: e.rate, p50: iv.p50_ns, p99: iv.p99_ns,
        p999: iv.p999_ns || iv.p99_ns, max: iv.max_ns, svc: iv.service_p99_ns || 0, open: iv.open || 0,
        busy: iv.in_flight || 0 };
      // A sliver (a repetition's last interval, cut short by its end) joins the one before:
      // alone, its few responses would read as a spike. Its percentiles are of a handful: the
      // one before keeps its own, but for the maximum.
      const before = c.points[c.points.length - 1];
      if (before && p.t - p.t0 < (before.t - before.t0) / 4) {
        p = { ...joined(before, p), p50: before.p50, p99: before.p99, p999: before.p999, svc: before.svc };
        c.points.pop();
      }
      c.points.push(p);
      if (c.points.length > MAX_POINTS) c.points = halved(c.points);
      c.last = e;
      const f = (k, v) => { c.node.querySelector(`[data-f="${k}"]`).textContent = v; };
      f("rate", count(p.rate));
      f("p50", lat(p.p50)); f("p99", lat(p.p99)); f("p999", lat(p.p999)); f("max", lat(p.max));
      f("svc", lat(p.svc));
      c.errors = Object.values(e.errors || {}).reduce((a, b) => a + b, 0);
      f("errors", count(c.errors));
      f("open", count(p.open));
      f("busy", count(p.busy));
      c.connects = (c.connects || 0) + iv.connects;
      f("connects", count(c.connects));
      // Requests started come with the last interval of a report: offered since the one before.
      if (e.requests != null) {
        const was = c.req || { requests: 0, end_ns: 0 };
        const offered = (e.requests - was.requests) / Math.max((iv.end_ns - was.end_ns) / 1e9, 1e-9);
        const intended = intendedAt((was.end_ns + iv.end_ns) / 2e9);
        f("offered", intended == null ? count(offered) : `${count(offered)} of ${count(intended)}`);
        c.req = { requests: e.requests, end_ns: iv.end_ns };
      }
      if (e.cpu != null) f("cpu", (100 * e.cpu).toFixed(0) + "% of a core");
      errorTable(c, e.errors || {});
      schedule(c);
      c.intervals = (c.intervals || 0) + 1;
      c.node.dataset.intervals = c.intervals;
      if (hooks.interval) hooks.interval(c, e);
    }

    // An open loop's intended rate at `t` seconds, from the plan's stages; none in a closed loop.
    function intendedAt(t) {
      const load = run.plan && run.plan.load;
      if (!load || load.model !== "open" || !load.stages.length) return null;
      let from = 0;
      for (const s of load.stages) {
        const d = s.duration_ns / 1e9;
        if (t < from + d || d === 0) return s.from_per_s + (s.to_per_s - s.from_per_s) * (d ? (t - from) / d : 0);
        from += d;
      }
      return load.stages[load.stages.length - 1].to_per_s;
    }

    function errorTable(c, errors) {
      const box = c.node.querySelector(".errors");
      const rows = Object.entries(errors);
      if (!rows.length) { box.textContent = ""; return; }
      box.innerHTML = "<table><thead><tr><th class='l'>error class</th><th class='r'>so far</th></tr></thead><tbody>" +
        rows.map(([k, n]) => `<tr><td class="l">${esc(k)}</td><td class="r">${count(n)}</td></tr>`).join("") +
        "</tbody></table>";
    }

    function onFault(f) {
      const i = run.faults.findIndex((g) => g.start_ns === f.start_ns && g.target === f.target && g.action === f.action);
      if (i >= 0) run.faults[i] = f; else run.faults.push(f);
      faultsBox.hidden = false;
      const list = faultsBox.querySelector("ul");
      list.textContent = "";
      for (const g of run.faults) {
        const to = g.end_ns == null ? "under way" : "to " + secs(g.end_ns);
        list.append(el("li", {}, `${g.action} ${g.target}: from ${secs(g.start_ns)} ${to} on the run's clock` +
          (g.note ? ` (${g.note})` : "")));
      }
      for (const c of run.cases.values()) schedule(c);
    }

    // Cases to draw again at the next frame: many events, one drawing.
    const dirty = new Set();
    function schedule(c) {
      if (!dirty.size && !hooks.frozen) requestAnimationFrame(finish);
      dirty.add(c);
    }
    function finish() {
      for (const d of dirty) draw(d);
      dirty.clear();
      // A kept run has no figure of the moment (offered, dyno's CPU): the tables have them.
      if (hooks.frozen) {
        for (const dd of root.querySelectorAll("dl.figs dd")) if (dd.textContent === "–") dd.parentNode.remove();
      }
    }

    // One chart: series of [t, value] drawn over 0..tmax seconds, linear or log10 in y; the
    // faults of the case's time as bands.
    function chart(svg, c, series, log) {
      // Drawn at the width it is shown at (a phone's too), so its text keeps its size.
      const W = Math.round(Math.max(320, Math.min(1100, svg.getBoundingClientRect().width || 800)));
      const H = +svg.getAttribute("viewBox").split(" ")[3], L = 62, R = 8, T = 18, B = 24;
      svg.setAttribute("viewBox", `0 0 ${W} ${H}`);
      const pts = c.points;
      const tmax = Math.max(c.planned_ns ? c.planned_ns / 1e9 : 0, pts.length ? pts[pts.length - 1].t : 1, 1);
      const vals = series.flatMap((s) => pts.map((p) => p[s.key]).filter((v) => v > 0));
      const [least, most] = extent(vals);
      let lo = 0, hi = Math.max(1, most);
      if (log) { lo = Math.floor(Math.log10(Math.min(least, hi))); hi = Math.ceil(Math.log10(hi * 1.01)); if (hi <= lo) hi = lo + 1; }
      let st = 0;
      if (!log) { st = niceStep(hi * 1.05 / 4); hi = Math.ceil(hi * 1.05 / st) * st; }
      const x = (t) => L + (W - L - R) * t / tmax;
      const y = (v) => { const u = log ? Math.log10(Math.max(v, 10 ** lo)) : v; return H - B - (H - T - B) * (u - lo) / (hi - lo); };
      let out = "";
      for (const f of run.faults) {
        const a = (f.start_ns - c.started_ns) / 1e9;
        // Under way until it ends; one that failed (its note says why) is a mark, not a band.
        const open = f.end_ns == null && !f.note;
        const b = f.end_ns != null ? (f.end_ns - c.started_ns) / 1e9 : open ? tmax : a;
        if (b < 0 || a > tmax) continue;
        const x0 = x(Math.max(a, 0)), x1 = Math.max(x(Math.min(b, tmax)), x0 + 2);
        out += `<rect class="fault${open ? " open" : ""}" x="${x0}" y="${T}" width="${x1 - x0}" height="${H - T - B}">` +
          `<title>${esc(f.action + " " + f.target)}</title></rect>` +
          `<text class="fault" x="${x0 + 2}" y="${T + 11}">${esc(f.action)}</text>`;
      }
      const ticks = log ? Array.from({ length: hi - lo + 1 }, (_, i) => lo + i)
        : Array.from({ length: Math.round(hi / st) + 1 }, (_, i) => i * st);
      for (const v of ticks) {
        const yy = log ? H - B - (H - T - B) * (v - lo) / (hi - lo) : y(v);
        out += `<line class="grid" x1="${L}" x2="${W - R}" y1="${yy}" y2="${yy}"/>` +
          `<text x="${L - 4}" y="${yy + 4}" text-anchor="end">${log ? lat(10 ** v) : count(v)}</text>`;
      }
      const step = Math.max(1, niceStep(tmax / 8));
      for (let t = 0; t <= tmax + 1e-9; t += step) {
        out += `<text x="${x(t)}" y="${H - 8}" text-anchor="middle">${t}s</text>`;
      }
      out += `<line class="axis" x1="${L}" x2="${L}" y1="${T}" y2="${H - B}"/><line class="axis" x1="${L}" x2="${W - R}" y1="${H - B}" y2="${H - B}"/>`;
      series.forEach((s, i) => {
        // Each interval at its middle.
        const line = pts.filter((p) => !log || p[s.key] > 0).map((p) => `${x((p.t0 + p.t) / 2).toFixed(1)},${y(p[s.key]).toFixed(1)}`).join(" ");
        out += `<polyline class="${s.cls}" points="${line}"/>`;
        const room = (W - L) / series.length;
        out += `<text class="${s.cls.replace("c", "k")}" x="${L + 6 + i * room}" y="${T - 5}">— ${esc(s.name)}</text>`;
      });
      svg.innerHTML = out;
      const last = pts[pts.length - 1];
      if (last) svg.setAttribute("aria-label", series.map((s) => `${s.name} ${log ? lat(last[s.key]) : count(last[s.key])}`).join(", ") + ` at ${last.t.toFixed(1)} s`);
    }

    function draw(c) {
      const svg = (cls) => c.node.querySelector("svg." + cls);
      chart(svg("rate"), c, [{ key: "rate", name: "responses/s", cls: "c0" }], false);
      chart(svg("lat"), c, [
        { key: "p50", name: "p50", cls: "c0" }, { key: "p99", name: "p99", cls: "c1" },
        { key: "p999", name: "p99.9", cls: "c2" }, { key: "max", name: "max", cls: "c3" },
        { key: "svc", name: "service p99", cls: "c4" }], true);
      chart(svg("conns"), c, [{ key: "open", name: "connections open", cls: "c0" },
        { key: "busy", name: "requests in flight", cls: "c1" }], false);
    }

    const HANDLERS = { run: (e) => { run.plan = e.plan; }, case: onCase, interval: onInterval, fault: (e) => onFault(e.event) };
    return {
      run,
      feed(e) { const h = HANDLERS[e.kind]; if (h) h(e); },
      finish,
    };
  }

  // The report: each `.dyno-view` section draws the events frozen in the script element
  // after it.
  function thaw() {
    for (const root of document.querySelectorAll("section.dyno-view")) {
      const data = root.nextElementSibling;
      if (!data || data.type !== "application/json") continue;
      const v = view(root.querySelector(".dyno-view-body"), { heading: "h3", frozen: true });
      for (const e of JSON.parse(data.textContent)) v.feed(e);
      v.finish();
    }
  }

  return { view, thaw, lat, count, secs, el, esc };
})();
