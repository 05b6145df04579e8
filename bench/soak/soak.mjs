// soak.mjs: a bounded soak of ragdolld. It starts the server (port 0, on
// 127.0.0.1), sets up two worlds beside the demo, and for D seconds runs C
// clients against it at random from a seeded PRNG:
//
//   - ordinary traffic (about 90 % of the actions): subscribe (JSON or
//     binary, acking most binary snapshots), unsubscribe, resync, spawn and
//     despawn (ragdolls, ropes, balls, characters, small cloths), impulses,
//     kill, get up, drives, clips, drag and release, list_worlds, describe,
//     a short-lived world of one's own, pipelined bursts; every session ends
//     (and the client reconnects) after a random number of actions;
//   - hostile traffic (about 10 %): invalid JSON, raw NUL bytes inside JSON,
//     huge and non-finite numbers, unknown ops, binary garbage on the
//     client's own connection; and on raw TCP sockets: oversize messages
//     (> 64 KiB, expect close 1009), endless fragments (a text frame without
//     FIN, then 1-byte continuations until the server closes), unmasked
//     frames (expect 1002), frames masked with the wrong key, reserved bits
//     and opcodes, abrupt disconnects mid-handshake and mid-frame, slow
//     readers (subscribe to a 64 x 64 cloth in JSON and stop reading), and
//     reconnect churn.
//
// A monitor thread, apart from the clients, holds the "demo subscriber" (the
// demo world in JSON at 30 Hz: the gaps between its snapshots), reads the
// tick overruns of the other worlds from their `metrics` events, polls
// /healthz every second and samples the server's VmRSS and open descriptors
// from /proc.
//
//   node bench/soak/soak.mjs [--build DIR | --ragdolld PATH] [--seconds D (600)]
//                            [--clients C (200)] [--seed S (1)] [--hostile F (0.1)]
//                            [--kinds K1,K2,...] [--healthz-timeout MS (3000)]
//                            [--json FILE] [--quiet]
//
// A /healthz poll fails when it is not a 200 with "status": "ok" within the
// timeout: the event loop stalled that long (or the server is gone).
// --kinds restricts the hostile actions to the kinds named (as in the
// report); with --hostile 1 a run does nothing else, to reproduce a finding.
// It prints a report (and writes it as JSON with --json): crashes (the server
// exiting or dying by a signal during the run, or failing to exit 0 on the
// SIGTERM that ends it), /healthz failures, RSS drift (mean of the first
// minute against the last, or of the first and last 10 % of shorter runs),
// tick overruns over the run per world, the demo subscriber's snapshot gaps,
// commands and replies by code, and the hostile actions by kind with what the
// server answered. Exit status: 0; 1 when the server crashed, /healthz failed
// or the demo subscriber got no snapshot; 2 when the soak could not start (or
// its watchdog fired).
//
// Every loop is bounded in count and in time, only 127.0.0.1 is contacted,
// and a watchdog ends the script (and the server) D + 180 s after the start
// whatever happens. `rate_limited` replies are normal here (the server limits
// what one connection may ask); so are `too_large` (the worlds fill up to
// their budgets) and `not_found` (clients act on each other's entities).
import { spawn } from 'node:child_process';
import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads';
import net from 'node:net';
import http from 'node:http';
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { randomBytes } from 'node:crypto';
import { join, dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { WebSocket } from 'ws';

const HOST = '127.0.0.1';
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const now = () => performance.now();

// ---------------------------------------------------------------------------
// Small helpers shared by both threads
// ---------------------------------------------------------------------------

// sfc32, seeded through splitmix32: one stream per client, so a client's
// choices depend only on --seed and its index (their timing does not).
function makeRng(seed, stream) {
  let s = (seed ^ Math.imul(stream + 1, 0x9e3779b9)) >>> 0;
  const split = () => {
    s = (s + 0x9e3779b9) >>> 0;
    let z = s;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
    return (z ^ (z >>> 16)) >>> 0;
  };
  let a = split(), b = split(), c = split(), d = split();
  const rng = () => {
    const t = (((a + b) >>> 0) + d) >>> 0;
    d = (d + 1) >>> 0;
    a = b ^ (b >>> 9);
    b = (c + (c << 3)) >>> 0;
    c = ((c << 21) | (c >>> 11)) >>> 0;
    c = (c + t) >>> 0;
    return t / 4294967296;
  };
  rng.int = (lo, hi) => lo + Math.floor(rng() * (hi - lo + 1)); // inclusive
  rng.range = (lo, hi) => lo + rng() * (hi - lo);
  rng.pick = (arr) => arr[Math.floor(rng() * arr.length)];
  rng.weighted = (pairs) => {
    let total = 0;
    for (const p of pairs) total += p[1];
    let x = rng() * total;
    for (const p of pairs) {
      x -= p[1];
      if (x < 0) return p;
    }
    return pairs[pairs.length - 1];
  };
  rng.bytes = (n) => {
    const b = Buffer.alloc(n);
    for (let i = 0; i < n; ++i) b[i] = Math.floor(rng() * 256);
    return b;
  };
  return rng;
}

function bump(obj, key, n = 1) {
  obj[key] = (obj[key] ?? 0) + n;
}

function percentile(sorted, p) {
  if (sorted.length === 0) return null;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

function summary(values) {
  const s = Float64Array.from(values).sort();
  const r = (x) => (x === null ? null : Math.round(x * 100) / 100);
  return { n: s.length, p50: r(percentile(s, 50)), p99: r(percentile(s, 99)), max: r(s.length ? s[s.length - 1] : null) };
}

const SNAPSHOT_PREFIX = '{"ev":"snapshot"';
const isJsonSnapshot = (buf) => buf.length > 16 && buf.toString('latin1', 0, 16) === SNAPSHOT_PREFIX;

function readProcStatus(pid) {
  const text = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (name) => {
    const m = new RegExp(`${name}:\\s+(\\d+) kB`).exec(text);
    return m ? Number(m[1]) : NaN;
  };
  return { rss_kb: kb('VmRSS'), hwm_kb: kb('VmHWM') };
}

function countFds(pid) {
  return readdirSync(`/proc/${pid}/fd`).length;
}

// Seconds the process has run on a CPU and waited in a run queue for one
// (/proc/PID/schedstat), and the machine's 1-minute load average.
function readSched(pid) {
  let run = NaN;
  let wait = NaN;
  try {
    [run, wait] = readFileSync(`/proc/${pid}/schedstat`, 'utf8').split(' ').map((x) => Number(x) / 1e9);
  } catch {
    // no schedstat in this kernel
  }
  const load = Number(readFileSync('/proc/loadavg', 'utf8').split(' ')[0]);
  return { run, wait, load };
}

function healthz(port, timeoutMs) {
  return new Promise((resolveH) => {
    const t0 = now();
    const req = http.get({ host: HOST, port, path: '/healthz', agent: false, timeout: timeoutMs }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d) => { body += d; });
      res.on('end', () => {
        const ms = now() - t0;
        if (res.statusCode !== 200) return resolveH({ ok: false, why: `http ${res.statusCode}`, ms });
        try {
          const j = JSON.parse(body);
          resolveH(j.status === 'ok' ? { ok: true, ms, sessions: j.sessions, worlds: j.worlds }
            : { ok: false, why: `status ${j.status}`, ms });
        } catch {
          resolveH({ ok: false, why: 'bad body', ms });
        }
      });
      res.on('error', (e) => resolveH({ ok: false, why: e.code ?? 'error', ms: now() - t0 }));
    });
    req.on('timeout', () => req.destroy(Object.assign(new Error('timeout'), { code: 'timeout' })));
    req.on('error', (e) => resolveH({ ok: false, why: e.code ?? e.message, ms: now() - t0 }));
  });
}

// ---------------------------------------------------------------------------
// The monitor thread: demo subscriber, metrics, /healthz, /proc samples
// ---------------------------------------------------------------------------

async function monitorMain() {
  const { port, pid, demoWorld, healthzTimeoutMs } = workerData;
  const t0 = now();
  let stop = false;
  const loopDelay = monitorEventLoopDelay({ resolution: 10 });
  loopDelay.enable();

  // The demo subscriber: JSON at 30 Hz; each snapshot's arrival time and tick.
  const demo = { snapshots: 0, gaps: [], tickGaps: [], nonIncreasing: 0, reconnects: 0, closes: {},
                 overruns: { first: null, last: null }, stepMs: [], firstAt: null, lastAt: null };
  let demoWs = null;
  const demoLoop = (async () => {
    for (let attempt = 0; !stop && attempt < 1000; ++attempt) {
      if (attempt > 0) {
        demo.reconnects++;
        await sleep(1000);
        if (stop) break;
      }
      let lastT = null;
      let lastTick = null;
      const ws = new WebSocket(`ws://${HOST}:${port}/ws`, ['ragdolld.v1'], { perMessageDeflate: false, handshakeTimeout: 10000 });
      demoWs = ws;
      ws.on('open', () => ws.send(JSON.stringify({ op: 'subscribe', id: 1, world: demoWorld, format: 'json', rate_hz: 30 })));
      ws.on('message', (data, isBinary) => {
        if (isBinary || !isJsonSnapshot(data)) return;
        const t = now();
        const snap = JSON.parse(data.toString());
        demo.snapshots++;
        if (demo.firstAt === null) demo.firstAt = t;
        demo.lastAt = t;
        if (lastT !== null) {
          demo.gaps.push(t - lastT);
          demo.tickGaps.push(snap.tick - lastTick);
          if (snap.tick <= lastTick) demo.nonIncreasing++;
        }
        lastT = t;
        lastTick = snap.tick;
        if (snap.metrics) {
          if (demo.overruns.first === null) demo.overruns.first = snap.metrics.overruns;
          demo.overruns.last = snap.metrics.overruns;
          demo.stepMs.push(snap.metrics.step_ms);
        }
      });
      ws.on('error', () => {});
      const [code] = await new Promise((r) => ws.on('close', (...a) => r(a)));
      if (!stop) bump(demo.closes, String(code));
    }
  })();

  // Every world's metrics: `metrics` events of binary subscriptions at 1 Hz
  // (at most 8 subscriptions a connection, so as many connections as that
  // takes); list_worlds every 5 s finds the worlds clients create.
  const worldMetrics = {}; // world -> { name, first, last, events, maxStepMs, simMs, ticks, prev }
  const conns = []; // { ws, worlds: Set }
  const tracked = new Map(); // world -> its connection
  const wsOpen = (ws) => new Promise((r) => {
    ws.once('open', () => r(true));
    ws.once('error', () => r(false));
  });
  function onMetricsMessage(conn, data, isBinary) {
    if (isBinary || data[0] !== 0x7b) return;
    const head = data.toString('latin1', 0, 24);
    if (head.startsWith('{"ev":"world_destroyed"')) {
      const m = JSON.parse(data.toString());
      conn.worlds.delete(m.world);
      tracked.delete(m.world);
      if (worldMetrics[m.world]) worldMetrics[m.world].prev = null;
      return;
    }
    if (!head.startsWith('{"ev":"metrics"')) return;
    const m = JSON.parse(data.toString());
    const wm = worldMetrics[m.world];
    if (!wm) return;
    const mt = m.metrics;
    wm.events++;
    if (wm.prev && m.tick > wm.prev.tick && mt.overruns >= wm.prev.overruns) {
      const ticks = m.tick - wm.prev.tick;
      wm.ticks += ticks;
      wm.simMs += mt.step_ms * ticks; // the last tick's step time stands for the second's
      wm.overruns += mt.overruns - wm.prev.overruns;
    }
    wm.prev = { tick: m.tick, overruns: mt.overruns };
    wm.maxStepMs = Math.max(wm.maxStepMs, mt.step_ms);
  }
  async function track(world, name) {
    let conn = conns.find((c) => c.worlds.size < 8 && c.ws.readyState === WebSocket.OPEN);
    if (!conn) {
      if (conns.length >= 8) return;
      const ws = new WebSocket(`ws://${HOST}:${port}/ws`, ['ragdolld.v1'], { perMessageDeflate: false, handshakeTimeout: 10000 });
      conn = { ws, worlds: new Set() };
      conns.push(conn);
      ws.on('message', (data, isBinary) => onMetricsMessage(conn, data, isBinary));
      ws.on('close', () => {
        for (const w of conn.worlds) tracked.delete(w);
        conns.splice(conns.indexOf(conn), 1);
      });
      if (!(await wsOpen(ws))) return;
    }
    conn.worlds.add(world);
    tracked.set(world, conn);
    worldMetrics[world] ??= { name, events: 0, maxStepMs: 0, simMs: 0, ticks: 0, overruns: 0, prev: null };
    worldMetrics[world].name = name;
    conn.ws.send(JSON.stringify({ op: 'subscribe', id: world, world, format: 'binary', rate_hz: 1 }));
  }
  let listWs = null;
  const metricsLoop = (async () => {
    for (let attempt = 0; !stop && attempt < 1000; ++attempt) {
      if (attempt > 0) await sleep(1000);
      if (stop) break;
      const ws = new WebSocket(`ws://${HOST}:${port}/ws`, ['ragdolld.v1'], { perMessageDeflate: false, handshakeTimeout: 10000 });
      listWs = ws;
      ws.on('error', () => {});
      ws.on('message', async (data, isBinary) => {
        if (isBinary) return;
        const m = JSON.parse(data.toString());
        const worlds = m.ev === 'welcome' ? m.worlds : m.ok ? m.worlds : null;
        if (!worlds) return;
        for (const w of worlds) if (!tracked.has(w.world)) await track(w.world, w.name);
      });
      const closed = new Promise((r) => ws.on('close', r));
      const poller = setInterval(() => {
        if (ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify({ op: 'list_worlds', id: 1 }));
      }, 5000);
      await closed;
      clearInterval(poller);
    }
  })();

  // /healthz once a second (sequential: a slow answer delays the next poll).
  const health = { polls: 0, failures: 0, why: {}, latencies: [], maxSessions: 0, lastSessions: null, failedAt: [] };
  const healthLoop = (async () => {
    while (!stop) {
      const started = now();
      const h = await healthz(port, healthzTimeoutMs);
      health.polls++;
      health.latencies.push(h.ms);
      if (h.ok) {
        health.maxSessions = Math.max(health.maxSessions, h.sessions);
        health.lastSessions = h.sessions;
      } else {
        health.failures++;
        bump(health.why, h.why);
        if (health.failedAt.length < 50) health.failedAt.push(Math.round((now() - t0) / 100) / 10);
      }
      await sleep(Math.max(0, 1000 - (now() - started)));
    }
  })();

  // /proc samples once a second.
  const samples = []; // [t_s, rss_kb, fds, cpu_s, runqueue_wait_s, load1]
  let hwm = 0;
  const sampler = setInterval(() => {
    try {
      const st = readProcStatus(pid);
      hwm = Math.max(hwm, st.hwm_kb);
      const sc = readSched(pid);
      samples.push([(now() - t0) / 1000, st.rss_kb, countFds(pid), sc.run, sc.wait, sc.load]);
      const last = samples[samples.length - 1];
      parentPort.postMessage({ type: 'sample', t: last[0], rss_kb: last[1], fds: last[2],
                               sessions: health.lastSessions, demo: demo.snapshots,
                               own_sessions: 2 + conns.length });
    } catch {
      // the process is gone; the main thread reports it
    }
  }, 1000);

  parentPort.on('message', async (msg) => {
    if (msg.type !== 'stop') return;
    stop = true;
    clearInterval(sampler);
    demoWs?.terminate();
    listWs?.terminate();
    for (const c of [...conns]) c.ws.terminate();
    await Promise.race([Promise.all([demoLoop, metricsLoop, healthLoop]), sleep(5000)]);
    loopDelay.disable();
    const gapSummary = summary(demo.gaps);
    const span = demo.lastAt !== null ? (demo.lastAt - demo.firstAt) / 1000 : 0;
    parentPort.postMessage({
      type: 'result',
      demo: {
        snapshots: demo.snapshots,
        per_s: span > 0 ? Math.round(((demo.snapshots - 1) / span) * 100) / 100 : null,
        gaps_ms: gapSummary,
        gaps_over_100ms: demo.gaps.filter((g) => g > 100).length,
        gaps_over_1s: demo.gaps.filter((g) => g > 1000).length,
        tick_gap_max: demo.tickGaps.length ? Math.max(...demo.tickGaps) : null,
        non_increasing_ticks: demo.nonIncreasing,
        reconnects: demo.reconnects,
        closes: demo.closes,
        overruns: demo.overruns,
        step_ms: summary(demo.stepMs),
      },
      worldMetrics,
      health: {
        polls: health.polls,
        failures: health.failures,
        why: health.why,
        failed_at_s: health.failedAt,
        latency_ms: summary(health.latencies),
        max_sessions: health.maxSessions,
      },
      samples,
      hwm_kb: hwm,
      monitor_loop_delay_ms: { p99: loopDelay.percentile(99) / 1e6, max: loopDelay.max / 1e6 },
    });
  });
}

// ---------------------------------------------------------------------------
// The main thread
// ---------------------------------------------------------------------------

if (!isMainThread) {
  await monitorMain();
} else {
  await main();
}

async function main() {
  const here = dirname(fileURLToPath(import.meta.url));
  const args = process.argv.slice(2);
  const opt = (name, fallback) => {
    const i = args.indexOf(name);
    return i >= 0 && i + 1 < args.length ? args[i + 1] : fallback;
  };
  const buildDir = resolve(opt('--build', join(here, '../../build')));
  const ragdolld = resolve(opt('--ragdolld', process.env.RAGDOLLD ?? join(buildDir, 'server/app/ragdolld')));
  const seconds = Number(opt('--seconds', '600'));
  const clients = Number(opt('--clients', '200'));
  const seed = Number(opt('--seed', '1')) >>> 0;
  const hostileShare = Number(opt('--hostile', '0.1'));
  const jsonOut = opt('--json', null);
  const kinds = opt('--kinds', null)?.split(',') ?? null;
  const healthzTimeoutMs = Number(opt('--healthz-timeout', '3000'));
  const quiet = args.includes('--quiet');
  if (!(seconds >= 5 && seconds <= 86400) || !(clients >= 1 && clients <= 900) ||
      !(hostileShare >= 0 && hostileShare <= 1) || !(healthzTimeoutMs >= 100 && healthzTimeoutMs <= 60000)) {
    console.error('soak: --seconds 5..86400, --clients 1..900, --hostile 0..1, --healthz-timeout 100..60000');
    process.exit(2);
  }
  const log = (...a) => { if (!quiet) console.error(...a); };

  // Whatever happens, the soak ends.
  let server = null;
  setTimeout(() => {
    console.error('soak: watchdog: the run overran its bound; stopping');
    server?.kill('SIGKILL');
    process.exit(2);
  }, (seconds + 180) * 1000).unref();

  // ------------------------------------------------------------------ server
  const crashes = [];
  let stopping = false; // set when the soak itself stops the server
  let serverErr = '';
  server = spawn(ragdolld, ['--host', HOST, '--port', '0'], { stdio: ['ignore', 'pipe', 'pipe'] });
  server.stderr.on('data', (d) => {
    serverErr += d;
    if (serverErr.length > 65536) serverErr = serverErr.slice(-32768);
  });
  const exited = new Promise((r) => server.on('exit', (code, signal) => r({ code, signal })));
  let port;
  try {
    port = await new Promise((ok, fail) => {
      let out = '';
      const timer = setTimeout(() => fail(new Error('no "listening on" line within 10 s')), 10000);
      server.stdout.on('data', (d) => {
        out += d;
        const m = /listening on [^\s]*:(\d+)/.exec(out);
        if (m) {
          clearTimeout(timer);
          ok(Number(m[1]));
        }
      });
      server.on('error', (e) => fail(e));
      server.on('exit', (code, signal) => fail(new Error(`exited (${code ?? signal}): ${serverErr}`)));
    });
  } catch (e) {
    console.error(`soak: ragdolld (${ragdolld}) did not start: ${e.message}`);
    server.kill('SIGKILL');
    process.exit(2);
  }
  server.stdout.resume();
  const t0 = now();
  const runAt = () => Math.round((now() - t0) / 100) / 10;
  exited.then(({ code, signal }) => {
    if (!stopping) {
      crashes.push({ phase: 'run', at_s: runAt(), code, signal, stderr_tail: serverErr.slice(-4000) });
      console.error(`soak: ragdolld exited during the run (code ${code}, signal ${signal}) at ${runAt()} s`);
    }
  });
  const url = `ws://${HOST}:${port}/ws`;
  log(`soak: ragdolld pid ${server.pid} on ${HOST}:${port}; ${clients} clients for ${seconds} s, seed ${seed}`);

  // ------------------------------------------------------------------ stats
  const stats = {
    commands: { sent: 0, replies: {}, by_op: {} },
    hostile: {},
    sessions: { opened: 0, failed: {}, closed_by_server: {}, closed_by_client: 0, terminated: 0 },
    snapshots: { json: 0, binary: 0, acks: 0 },
    events: {},
    unmatched_replies: 0,
  };
  const recentHostile = []; // the last hostile actions, for a crash report
  function noteHostile(worker, kind, variant) {
    recentHostile.push({ at_s: runAt(), worker, kind, variant });
    if (recentHostile.length > 100) recentHostile.shift();
  }
  function recordHostile(kind, variant, outcome) {
    const h = (stats.hostile[kind] ??= { count: 0, outcomes: {}, variants: {} });
    h.count++;
    bump(h.outcomes, outcome);
    bump((h.variants[variant] ??= {}), outcome);
  }
  function recordReply(op, code) {
    bump(stats.commands.replies, code);
    const o = (stats.commands.by_op[op] ??= { sent: 0, replies: {} });
    bump(o.replies, code);
  }

  // ------------------------------------------------------------------ ordinary sessions
  class Session {
    static connect(timeoutMs = 10000) {
      return new Promise((ok, fail) => {
        const ws = new WebSocket(url, ['ragdolld.v1'], { perMessageDeflate: false, handshakeTimeout: timeoutMs });
        const s = new Session(ws);
        const timer = setTimeout(() => { ws.terminate(); fail(new Error('timeout')); }, timeoutMs + 1000);
        s.welcomed = () => { clearTimeout(timer); stats.sessions.opened++; ok(s); };
        ws.once('unexpected-response', (req, res) => {
          clearTimeout(timer);
          fail(new Error(`http ${res.statusCode}`));
          req.destroy();
        });
        ws.once('close', () => { clearTimeout(timer); fail(new Error('closed before welcome')); });
        ws.once('error', (e) => { clearTimeout(timer); fail(new Error(e.code ?? e.message)); });
      });
    }

    constructor(ws) {
      this.ws = ws;
      this.nextId = 1;
      this.pending = new Map();
      this.nullWaiters = [];
      this.open = true;
      this.closeCode = null;
      this.closingByUs = false;
      this.sub = null; // { world, format, base }
      this.ackShare = 0.9;
      this.rng = Math.random;
      ws.on('message', (data, isBinary) => this.onMessage(data, isBinary));
      ws.on('error', () => {});
      ws.on('close', (code) => {
        this.open = false;
        this.closeCode = code;
        if (!this.closingByUs && this.welcomed === null) bump(stats.sessions.closed_by_server, String(code));
        for (const w of [...this.pending.values(), ...this.nullWaiters]) this.finish(w, { closed: code });
      });
    }

    onMessage(data, isBinary) {
      if (isBinary) {
        stats.snapshots.binary++;
        const sub = this.sub;
        if (sub && sub.format === 'binary' && data.length >= 8 && data.toString('latin1', 0, 4) === 'RDS2') {
          const t16 = data.readUInt16LE(6);
          const base = sub.base;
          let full = base - (base % 65536) + t16;
          if (full - base > 32768) full -= 65536;
          else if (base - full > 32768) full += 65536;
          sub.base = full;
          if (this.rng() < this.ackShare) {
            const ack = Buffer.alloc(17);
            ack[0] = 0x41;
            ack.writeBigUInt64LE(BigInt(sub.world), 1);
            ack.writeBigUInt64LE(BigInt(full), 9);
            this.ws.send(ack);
            stats.snapshots.acks++;
          }
        }
        return;
      }
      if (isJsonSnapshot(data)) {
        stats.snapshots.json++;
        return;
      }
      let msg;
      try {
        msg = JSON.parse(data.toString());
      } catch {
        bump(stats.events, 'unparsable');
        return;
      }
      if (msg.ev === 'welcome' && this.welcomed) {
        const w = this.welcomed;
        this.welcomed = null;
        w();
        return;
      }
      if (msg.ev !== undefined) {
        bump(stats.events, msg.ev);
        return;
      }
      if (!('re' in msg)) {
        bump(stats.events, 'other');
        return;
      }
      let w = msg.re !== null ? this.pending.get(msg.re) : undefined;
      if (w === undefined) w = this.nullWaiters[0];
      if (w === undefined) {
        stats.unmatched_replies++;
        return;
      }
      this.finish(w, { msg });
    }

    finish(w, result) {
      clearTimeout(w.timer);
      if (w.id !== undefined) this.pending.delete(w.id);
      const i = this.nullWaiters.indexOf(w);
      if (i >= 0) this.nullWaiters.splice(i, 1);
      w.resolve(result);
    }

    // Sends a frame and resolves with { msg } (its reply: the one with its
    // id or, when nullOk, the next reply with "re": null or an unknown re),
    // { closed: code } or { timeout: true }.
    request(data, { id, nullOk = false, binary = false, timeoutMs = 10000 } = {}) {
      if (!this.open) return Promise.resolve({ closed: this.closeCode });
      return new Promise((resolveR) => {
        const w = { id, resolve: resolveR };
        w.timer = setTimeout(() => this.finish(w, { timeout: true }), timeoutMs);
        if (id !== undefined) this.pending.set(id, w);
        if (nullOk) this.nullWaiters.push(w);
        this.ws.send(data, { binary });
      });
    }

    // An ordinary command: counted, resolves with the reply code
    // ('ok', an error code, 'no_reply' or 'closed') and the reply.
    async cmd(cmd, timeoutMs = 10000) {
      const id = this.nextId++;
      stats.commands.sent++;
      (stats.commands.by_op[cmd.op] ??= { sent: 0, replies: {} }).sent++;
      const r = await this.request(JSON.stringify({ ...cmd, id }), { id, timeoutMs });
      const code = r.msg ? (r.msg.ok ? 'ok' : r.msg.error?.code ?? 'malformed') : r.timeout ? 'no_reply' : 'closed';
      recordReply(cmd.op, code);
      return { code, msg: r.msg };
    }

    async close(terminate) {
      if (!this.open) return;
      this.closingByUs = true;
      if (terminate) {
        stats.sessions.terminated++;
        this.ws.terminate();
        return;
      }
      stats.sessions.closed_by_client++;
      this.ws.close(1000);
      await Promise.race([new Promise((r) => this.ws.once('close', r)), sleep(5000)]);
      if (this.open) this.ws.terminate();
    }
  }

  // ------------------------------------------------------------------ raw sockets
  // A WebSocket client on a bare TCP socket, for what `ws` will not send.
  class Raw {
    static connect(timeoutMs = 10000) {
      return new Promise((ok) => {
        const sock = net.connect({ host: HOST, port });
        const raw = new Raw(sock);
        const timer = setTimeout(() => { sock.destroy(); ok(null); }, timeoutMs);
        sock.once('connect', () => { clearTimeout(timer); ok(raw); });
        sock.once('error', () => { clearTimeout(timer); ok(null); });
      });
    }

    constructor(sock) {
      this.sock = sock;
      this.chunks = [];
      this.buffered = 0;
      this.state = 'http';
      this.status = null;
      this.closeCode = null; // the server's close frame's code (1005 without one)
      this.ended = false;
      this.error = null;
      this.bytesIn = 0;
      this.frames = 0;
      this.texts = []; // the last few non-snapshot text frames
      this.waiters = new Set();
      sock.setNoDelay(true);
      sock.on('data', (d) => this.onData(d));
      sock.on('end', () => { this.ended = true; this.wake(); });
      sock.on('close', () => { this.ended = true; this.wake(); });
      sock.on('error', (e) => { this.error = e.code ?? 'error'; this.wake(); });
    }

    wake() {
      for (const w of [...this.waiters]) w();
    }

    // Resolves when pred() holds (checked on every event) or after timeoutMs.
    until(pred, timeoutMs) {
      if (pred()) return Promise.resolve(true);
      return new Promise((r) => {
        const w = () => {
          if (!pred()) return;
          this.waiters.delete(w);
          clearTimeout(timer);
          r(true);
        };
        const timer = setTimeout(() => { this.waiters.delete(w); r(false); }, timeoutMs);
        this.waiters.add(w);
      });
    }

    get gone() {
      return this.ended || this.error !== null || this.closeCode !== null;
    }

    request(key = randomBytes(16).toString('base64')) {
      return `GET /ws HTTP/1.1\r\nHost: ${HOST}:${port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
        `Sec-WebSocket-Key: ${key}\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: ragdolld.v1\r\n\r\n`;
    }

    // Upgrades; resolves with the HTTP status (101), or null.
    async handshake(timeoutMs = 10000) {
      this.write(this.request());
      await this.until(() => this.status !== null || this.gone, timeoutMs);
      return this.status;
    }

    write(data) {
      if (this.sock.destroyed) return false;
      return this.sock.write(data);
    }

    async writeDrained(data) {
      if (!this.write(data)) await this.until(() => this.sock.writableLength === 0 || this.gone, 2000);
    }

    onData(d) {
      this.bytesIn += d.length;
      this.chunks.push(d);
      this.buffered += d.length;
      if (this.state === 'http') {
        const all = Buffer.concat(this.chunks);
        const end = all.indexOf('\r\n\r\n');
        if (end < 0) {
          if (all.length > 16384) this.sock.destroy();
          return;
        }
        const m = /^HTTP\/1\.1 (\d+)/.exec(all.toString('latin1', 0, Math.min(end, 64)));
        this.status = m ? Number(m[1]) : 0;
        this.state = this.status === 101 ? 'ws' : 'done';
        this.chunks = this.state === 'ws' ? [all.subarray(end + 4)] : [];
        this.buffered = this.chunks.length ? this.chunks[0].length : 0;
      } else if (this.state === 'done') {
        this.chunks = [];
        this.buffered = 0;
      }
      if (this.state === 'ws') this.parseFrames();
      this.wake();
    }

    parseFrames() {
      let buf = this.chunks.length === 1 ? this.chunks[0] : Buffer.concat(this.chunks);
      let off = 0;
      for (;;) {
        if (buf.length - off < 2) break;
        const opcode = buf[off] & 0x0f;
        let len = buf[off + 1] & 0x7f;
        let hdr = 2;
        if (len === 126) {
          if (buf.length - off < 4) break;
          len = buf.readUInt16BE(off + 2);
          hdr = 4;
        } else if (len === 127) {
          if (buf.length - off < 10) break;
          len = Number(buf.readBigUInt64BE(off + 2));
          hdr = 10;
        }
        if (buf[off + 1] & 0x80) hdr += 4; // a server must not mask; skip it anyway
        if (buf.length - off < hdr + len) break;
        const payload = buf.subarray(off + hdr, off + hdr + len);
        this.frames++;
        if (opcode === 0x8) {
          this.closeCode = len >= 2 ? payload.readUInt16BE(0) : 1005;
        } else if (opcode === 0x1 && !(len > 16 && payload.toString('latin1', 0, 16) === SNAPSHOT_PREFIX)) {
          this.texts.push(payload.toString());
          if (this.texts.length > 8) this.texts.shift();
        }
        off += hdr + len;
      }
      this.chunks = off === buf.length ? [] : [buf.subarray(off)];
      this.buffered = buf.length - off;
    }

    // What the connection ended with, waiting up to timeoutMs for it.
    async outcome(timeoutMs) {
      await this.until(() => this.gone, timeoutMs);
      if (this.closeCode !== null) return `close ${this.closeCode}`;
      if (this.error !== null) return `tcp ${this.error}`;
      if (this.ended) return 'tcp closed without a close frame';
      return 'still open';
    }

    destroy(reset) {
      if (reset && typeof this.sock.resetAndDestroy === 'function') this.sock.resetAndDestroy();
      else this.sock.destroy();
    }
  }

  // A client frame. `declared` overrides the length field; `wrongKey`
  // masks the payload with another key than the header's.
  function frame({ opcode, payload = Buffer.alloc(0), fin = true, rsv = 0, mask = true, declared, wrongKey = false, rng }) {
    payload = Buffer.from(payload);
    const len = declared ?? payload.length;
    const head = [(fin ? 0x80 : 0) | (rsv << 4) | opcode];
    const m = mask ? 0x80 : 0;
    let ext = Buffer.alloc(0);
    if (len < 126) head.push(m | len);
    else if (len < 65536) {
      head.push(m | 126);
      ext = Buffer.alloc(2);
      ext.writeUInt16BE(len);
    } else {
      head.push(m | 127);
      ext = Buffer.alloc(8);
      ext.writeBigUInt64BE(BigInt(len));
    }
    if (!mask) return Buffer.concat([Buffer.from(head), ext, payload]);
    const key = rng ? rng.bytes(4) : randomBytes(4);
    const used = wrongKey ? Buffer.from(key.map((b) => b ^ 0x5a)) : key;
    const body = Buffer.alloc(payload.length);
    for (let i = 0; i < payload.length; ++i) body[i] = payload[i] ^ used[i & 3];
    return Buffer.concat([Buffer.from(head), ext, key, body]);
  }
  const textFrame = (text, extra = {}) => frame({ opcode: 0x1, payload: Buffer.from(text), ...extra });

  // Opens a raw connection and upgrades it; null when that failed (recorded).
  async function rawSession(kind, variant) {
    const raw = await Raw.connect();
    if (raw === null) {
      recordHostile(kind, variant, 'could not connect');
      return null;
    }
    const status = await raw.handshake();
    if (status !== 101) {
      recordHostile(kind, variant, status === null ? 'no handshake answer' : `http ${status}`);
      raw.destroy();
      return null;
    }
    return raw;
  }

  // ------------------------------------------------------------------ the worlds
  const DEMO = 1;
  let SOAK;
  let CLOTH;
  // Entities anyone may act on: { world, entity, kind, n (particles), skeleton }.
  const pool = new Map();
  const poolKey = (world, entity) => `${world}/${entity}`;
  const poolAdd = (e) => pool.set(poolKey(e.world, e.entity), e);
  const poolDel = (world, entity) => pool.delete(poolKey(world, entity));
  let poolArr = null; // cached array of pool values
  const poolPick = (rng, pred) => {
    if (poolArr === null || poolArr.length !== pool.size) poolArr = [...pool.values()];
    for (let tries = 0; tries < 8 && poolArr.length; ++tries) {
      const e = rng.pick(poolArr);
      if (pred === undefined || pred(e)) return e;
    }
    return undefined;
  };
  {
    const setup = await Session.connect();
    const must = async (cmd) => {
      const r = await setup.cmd(cmd);
      if (r.code !== 'ok') throw new Error(`setup: ${cmd.op}: ${JSON.stringify(r.msg ?? r.code)}`);
      return r.msg;
    };
    try {
      SOAK = (await must({ op: 'create_world', name: 'soak', tick_hz: 60 })).world;
      CLOTH = (await must({ op: 'create_world', name: 'soak-cloth', tick_hz: 30 })).world;
      const cloth = await must({ op: 'spawn_cloth', world: CLOTH, origin: [-1.6, 4, 0], cols: 64, rows: 64, spacing: 0.05, pin: 'top' });
      poolAdd({ world: CLOTH, entity: cloth.entity, kind: 'cloth', n: 64 * 64, fixed: true });
      // The demo's entities, from its first JSON snapshot (it carries the topology).
      setup.ws.on('message', (data, isBinary) => {
        if (isBinary || !isJsonSnapshot(data) || setup.demoSeen) return;
        setup.demoSeen = true;
        for (const e of JSON.parse(data.toString()).entities) {
          poolAdd({ world: DEMO, entity: e.entity, kind: e.kind, n: e.particles?.length ?? 0, skeleton: e.skeleton, fixed: true });
        }
      });
      await must({ op: 'subscribe', world: DEMO, format: 'json', rate_hz: 30 });
      for (let i = 0; i < 50 && !setup.demoSeen; ++i) await sleep(100);
      if (!setup.demoSeen) throw new Error('setup: no snapshot of the demo world');
    } catch (e) {
      console.error(`soak: ${e.message}`);
      server.kill('SIGKILL');
      process.exit(2);
    }
    await setup.close(false);
  }
  // Reset the counters the setup touched.
  stats.commands = { sent: 0, replies: {}, by_op: {} };
  stats.snapshots = { json: 0, binary: 0, acks: 0 };
  stats.sessions.opened = 0;
  stats.sessions.closed_by_client = 0;

  // ------------------------------------------------------------------ monitor
  const samplesLive = [];
  const monitor = new Worker(fileURLToPath(import.meta.url), {
    workerData: { port, pid: server.pid, demoWorld: DEMO, healthzTimeoutMs },
  });
  const monitorResult = new Promise((r) => monitor.on('message', (m) => {
    if (m.type === 'result') r(m);
    else if (m.type === 'sample') samplesLive.push(m);
  }));
  monitor.on('error', (e) => console.error('soak: monitor:', e));

  // ------------------------------------------------------------------ ordinary actions
  const runStart = now();
  const deadline = runStart + seconds * 1000;
  const timeLeft = () => deadline - now();
  const running = () => !stopping && crashes.length === 0 && now() < deadline;
  const maxSlowReaders = Math.max(1, Math.floor(clients / 50));
  let slowReaders = 0;
  const background = new Set();
  const MAX_OWN = 2; // live entities per client

  const vec = (rng, s) => [rng.range(-s, s), rng.range(-s, s), rng.range(-s, s)];
  const spot = (rng) => [rng.range(-8, 8), 0, rng.range(-8, 8)];

  async function spawnOne(ctx) {
    const { rng, s } = ctx;
    if (ctx.own.length >= MAX_OWN) return despawnOne(ctx);
    const world = ctx.ownWorld && rng() < 0.2 ? ctx.ownWorld : rng() < 0.75 ? SOAK : DEMO;
    const [x, , z] = spot(rng);
    const [kind] = rng.weighted([['ragdoll', 3], ['rope', 2], ['ball', 2], ['character', 1], ['cloth', 0.5]]);
    let cmd;
    let n = 0;
    let skeleton;
    if (kind === 'ragdoll') {
      cmd = { op: 'spawn_ragdoll', world, position: [x, rng.range(1.5, 5), z], facing: rng.range(-3, 3) };
      n = 16;
    } else if (kind === 'rope') {
      const segments = rng.int(4, 30);
      cmd = { op: 'spawn_rope', world, anchor: [x, rng.range(3, 6), z], segments, segment_length: rng.range(0.05, 0.15) };
      n = segments + 1;
    } else if (kind === 'ball') {
      cmd = { op: 'spawn_ball', world, position: [x, rng.range(0.5, 4), z], velocity: vec(rng, 5), radius: rng.range(0.1, 0.4) };
    } else if (kind === 'character') {
      skeleton = rng() < 0.8 ? 'humanoid' : 'dog';
      cmd = { op: 'spawn_character', world, position: [x, 0, z], facing: rng.range(-3, 3), skeleton,
              clip: skeleton === 'humanoid' ? rng.pick(['idle', 'walk']) : 'idle' };
    } else {
      const cols = rng.int(3, 12);
      const rows = rng.int(3, 12);
      cmd = { op: 'spawn_cloth', world, origin: [x, rng.range(2, 5), z], cols, rows, spacing: 0.1, pin: rng.pick(['top', 'none']) };
      n = cols * rows;
    }
    const r = await s.cmd(cmd);
    if (r.code === 'ok') {
      const e = { world, entity: r.msg.entity, kind, n, skeleton };
      ctx.own.push(e);
      poolAdd(e);
    }
  }

  async function despawnOne(ctx) {
    const e = ctx.own.shift();
    if (!e) return;
    poolDel(e.world, e.entity);
    await ctx.s.cmd({ op: 'despawn', world: e.world, entity: e.entity });
  }

  async function subscribeRandom(ctx) {
    const { rng, s } = ctx;
    const world = rng.weighted([[DEMO, 6], [SOAK, 3], [CLOTH, 1]])[0];
    const format = rng() < 0.5 ? 'json' : 'binary';
    // JSON of the 64x64 cloth is ~100 KB a snapshot: keep its viewers slow.
    const rates = world === CLOTH && format === 'json' ? [[1, 3], [2, 1]] : [[1, 4], [2, 3], [5, 2], [10, 1], [30, 0.5]];
    const rate_hz = rng.weighted(rates)[0];
    const r = await s.cmd({ op: 'subscribe', world, format, rate_hz });
    if (r.code === 'ok') s.sub = { world, format, base: r.msg.tick };
  }

  const particleKinds = new Set(['ragdoll', 'rope', 'cloth']);
  const ORDINARY = [
    ['apply_impulse', 5, async ({ rng, s }) => {
      const e = poolPick(rng, (x) => x.world !== CLOTH || rng() < 0.1);
      if (!e) return;
      const cmd = { op: 'apply_impulse', world: e.world, entity: e.entity, impulse: vec(rng, 20) };
      if (particleKinds.has(e.kind)) cmd.particle = rng.int(0, Math.max(0, e.n - 1));
      if (e.kind === 'character') cmd.bone = rng.pick(['pelvis', 'chest', 'head']);
      await s.cmd(cmd);
    }],
    ['kill', 1.5, async ({ rng, s }) => {
      const e = poolPick(rng, (x) => x.kind === 'character');
      if (!e) return;
      await s.cmd({ op: 'kill', world: e.world, entity: e.entity, hit_point: [rng.range(-8, 8), rng.range(0.3, 1.7), rng.range(-8, 8)], impulse: vec(rng, 40) });
    }],
    ['start_getup', 0.7, async ({ rng, s }) => {
      const e = poolPick(rng, (x) => x.kind === 'character');
      if (e) await s.cmd({ op: 'start_getup', world: e.world, entity: e.entity });
    }],
    ['set_drive', 0.4, async ({ rng, s }) => {
      const e = poolPick(rng, (x) => x.kind === 'character');
      if (e) await s.cmd({ op: 'set_drive', world: e.world, entity: e.entity, kp: rng.range(0, 800), kd: rng.range(0, 60), ramp_time: rng.range(0, 2) });
    }],
    ['play', 0.3, async ({ rng, s }) => {
      const e = poolPick(rng, (x) => x.kind === 'character');
      if (e) await s.cmd({ op: 'play', world: e.world, entity: e.entity, clip: rng.pick(['idle', 'walk', 'stagger']) });
    }],
    ['drag', 1.5, async (ctx) => {
      const { rng, s } = ctx;
      const e = poolPick(rng, (x) => particleKinds.has(x.kind));
      if (!e) return;
      const particle = rng.int(0, Math.max(0, e.n - 1));
      const r = await s.cmd({ op: 'drag', world: e.world, entity: e.entity, particle, target: [rng.range(-5, 5), rng.range(0.5, 4), rng.range(-5, 5)] });
      if (r.code === 'ok') ctx.drags.push({ world: e.world, entity: e.entity, particle });
    }],
    ['release', 1, async (ctx) => {
      const d = ctx.drags.shift();
      if (d) await ctx.s.cmd({ op: 'release', ...d });
    }],
    ['describe', 2, async ({ rng, s }) => {
      const e = poolPick(rng);
      if (e) await s.cmd({ op: 'describe', world: e.world, entity: e.entity });
    }],
    ['list_worlds', 1, async ({ s }) => { await s.cmd({ op: 'list_worlds' }); }],
    ['spawn', 2, spawnOne],
    ['despawn', 1.2, despawnOne],
    ['subscription', 0.8, async (ctx) => {
      if (ctx.s.sub) {
        const world = ctx.s.sub.world;
        ctx.s.sub = null;
        await ctx.s.cmd({ op: 'unsubscribe', world });
      } else {
        await subscribeRandom(ctx);
      }
    }],
    ['resync', 0.2, async ({ s }) => {
      if (s.sub?.format === 'binary') await s.cmd({ op: 'resync', world: s.sub.world });
    }],
    ['burst', 0.3, async ({ rng, s }) => {
      // Pipelined: many commands before any reply.
      const n = rng.int(5, 40);
      const e = poolPick(rng, (x) => particleKinds.has(x.kind) && x.world !== CLOTH);
      const all = [];
      for (let i = 0; i < n; ++i) {
        all.push(e && rng() < 0.7
          ? s.cmd({ op: 'apply_impulse', world: e.world, entity: e.entity, particle: rng.int(0, Math.max(0, e.n - 1)), impulse: vec(rng, 2) })
          : s.cmd({ op: 'list_worlds' }));
      }
      await Promise.all(all);
    }],
    ['own_world', 0.15, async (ctx) => {
      const { rng, s } = ctx;
      if (ctx.ownWorld === null) {
        const r = await s.cmd({ op: 'create_world', name: `soak-${ctx.index}-${ctx.worldSerial++}`, tick_hz: rng.pick([30, 60, 120]) });
        if (r.code === 'ok') ctx.ownWorld = r.msg.world;
      } else {
        await dropOwnWorld(ctx);
      }
    }],
    ['set_params', 0.2, async (ctx) => {
      const { rng, s } = ctx;
      if (ctx.ownWorld === null) return;
      await s.cmd({ op: 'set_params', world: ctx.ownWorld, gravity: [0, -rng.range(1, 20), 0], damping: rng.range(0.9, 1),
                    iterations: rng.int(1, 12), bounciness: rng(), friction: rng() });
    }],
  ];

  async function dropOwnWorld(ctx) {
    const world = ctx.ownWorld;
    if (world === null) return;
    ctx.ownWorld = null;
    ctx.own = ctx.own.filter((e) => e.world !== world);
    ctx.drags = ctx.drags.filter((d) => d.world !== world);
    for (const e of pool.values()) if (e.world === world) poolDel(world, e.entity);
    await ctx.s.cmd({ op: 'destroy_world', world });
  }

  // ------------------------------------------------------------------ hostile actions
  // In-band ones go over the client's own connection and expect a reply;
  // the outcome is "reply CODE", "close CODE" or "no reply".
  async function inBand(ctx, kind, variant, data, { binary = false, hasId = true } = {}) {
    const s = ctx.s;
    if (!s.open) return;
    const id = hasId ? s.nextId++ : undefined;
    const text = typeof data === 'function' ? data(id) : data;
    const r = await s.request(text, { id, nullOk: true, binary });
    let outcome;
    if (r.msg) {
      outcome = r.msg.ok ? 'reply ok' : `reply ${r.msg.error?.code ?? 'malformed'}`;
      // Should a hostile spawn or world have been accepted, undo it.
      if (r.msg.ok && r.msg.entity !== undefined && /"op":"spawn_/.test(text.toString())) {
        const m = /"world":\s*(\d+)/.exec(text.toString());
        if (m) await s.cmd({ op: 'despawn', world: Number(m[1]), entity: r.msg.entity });
      }
      if (r.msg.ok && r.msg.world !== undefined && /create_world/.test(text.toString())) {
        await s.cmd({ op: 'destroy_world', world: r.msg.world });
      }
    } else if (r.closed !== undefined) {
      outcome = `close ${r.closed}`;
    } else {
      outcome = 'no reply';
    }
    recordHostile(kind, variant, outcome);
    return outcome;
  }

  const someEntity = (rng) => poolPick(rng, (x) => x.world !== CLOTH) ?? { world: DEMO, entity: 4294967297, kind: 'ragdoll', n: 16 };

  const HOSTILE = [
    ['invalid_json', 3, async (ctx) => {
      const { rng } = ctx;
      const [variant] = rng.weighted([['truncated', 2], ['unquoted', 1], ['trailing_comma', 1], ['garbage', 2], ['deep_nesting', 1],
                                      ['not_an_object', 1], ['empty', 0.5], ['invalid_utf8', 0.3]]);
      noteHostile(ctx.index, 'invalid_json', variant);
      const json = {
        truncated: (id) => `{"op":"list_worlds","id":${id},"world":`,
        unquoted: (id) => `{op: list_worlds, id: ${id}}`,
        trailing_comma: (id) => `{"op":"list_worlds","id":${id},}`,
        garbage: () => Array.from({ length: rng.int(1, 300) }, () => String.fromCharCode(rng.int(0x21, 0x7e))).join(''),
        deep_nesting: () => (rng() < 0.5 ? '['.repeat(rng.int(2000, 30000)) : '{"a":'.repeat(rng.int(1000, 12000))),
        not_an_object: (id) => rng.pick(['[1,2,3]', '"list_worlds"', 'null', '42', `[{"op":"list_worlds","id":${id}}]`]),
        empty: () => '',
      };
      if (variant === 'invalid_utf8') {
        // A text frame that is not UTF-8: close 1007.
        const bad = Buffer.concat([Buffer.from('{"op":"list_worlds","x":"'), Buffer.from([0xc3, 0x28, 0xff, 0xfe]), Buffer.from('"}')]);
        const s = ctx.s;
        if (!s.open) return;
        s.ws.send(bad, { binary: false });
        await Promise.race([new Promise((r) => s.ws.once('close', r)), sleep(5000)]);
        recordHostile('invalid_json', variant, s.open ? 'still open' : `close ${s.closeCode}`);
        return;
      }
      await inBand(ctx, 'invalid_json', variant, json[variant]);
    }],
    ['nul_byte', 2, async (ctx) => {
      const { rng } = ctx;
      const e = someEntity(rng);
      const [variant] = rng.weighted([['raw_nul_in_string', 2], ['raw_nul_between_tokens', 1], ['raw_nul_after_object', 1],
                                      ['raw_nul_in_name', 1], ['escaped_nul_in_op', 1], ['escaped_nul_in_bone', 1]]);
      noteHostile(ctx.index, 'nul_byte', variant);
      const text = {
        raw_nul_in_string: (id) => `{"op":"list_worlds","id":${id},"note":"a\u0000b"}`,
        raw_nul_between_tokens: (id) => `{"op":"list_worlds",\u0000"id":${id}}`,
        raw_nul_after_object: (id) => `{"op":"list_worlds","id":${id}}\u0000{"op":"explode"}`,
        raw_nul_in_name: (id) => `{"op":"create_world","id":${id},"name":"soak\u0000evil","tick_hz":30}`,
        escaped_nul_in_op: (id) => `{"op":"list\\u0000worlds","id":${id}}`,
        escaped_nul_in_bone: (id) => `{"op":"apply_impulse","id":${id},"world":${e.world},"entity":${e.entity},"bone":"ch\\u0000est","particle":0,"impulse":[0,1,0]}`,
      }[variant];
      await inBand(ctx, 'nul_byte', variant, text);
    }],
    ['huge_numbers', 3, async (ctx) => {
      const { rng } = ctx;
      const e = someEntity(rng);
      const W = e.world;
      const [variant] = rng.weighted([
        ['impulse_1e999', 1], ['impulse_-1e999', 1], ['position_1e308', 1], ['nan_literal', 1], ['infinity_literal', 1],
        ['id_1e300', 1], ['id_2^53+1', 1], ['segments_1e20', 1], ['segments_2^32+1', 1], ['cloth_2^32+2', 1],
        ['long_digits', 1], ['denormal_mass', 1], ['world_2^64', 1], ['entity_-1', 1], ['particle_1e10', 1],
        ['rate_1e9', 1], ['tick_hz_fraction', 1],
      ]);
      noteHostile(ctx.index, 'huge_numbers', variant);
      const target = `"world":${W},"entity":${e.entity}`;
      const text = {
        'impulse_1e999': (id) => `{"op":"apply_impulse","id":${id},${target},"particle":0,"bone":"chest","impulse":[1e999,0,0]}`,
        'impulse_-1e999': (id) => `{"op":"apply_impulse","id":${id},${target},"particle":0,"bone":"chest","impulse":[0,-1e999,0]}`,
        'position_1e308': (id) => `{"op":"spawn_ragdoll","id":${id},"world":${SOAK},"position":[1e308,1e308,1e308]}`,
        nan_literal: (id) => `{"op":"spawn_ball","id":${id},"world":${SOAK},"position":[NaN,1,0]}`,
        infinity_literal: (id) => `{"op":"spawn_ball","id":${id},"world":${SOAK},"position":[Infinity,1,-Infinity]}`,
        'id_1e300': () => `{"op":"list_worlds","id":1e300}`,
        'id_2^53+1': () => `{"op":"list_worlds","id":9007199254740993}`,
        'segments_1e20': (id) => `{"op":"spawn_rope","id":${id},"world":${SOAK},"anchor":[0,5,0],"segments":1e20,"segment_length":0.1}`,
        'segments_2^32+1': (id) => `{"op":"spawn_rope","id":${id},"world":${SOAK},"anchor":[0,5,0],"segments":4294967297,"segment_length":0.1}`,
        'cloth_2^32+2': (id) => `{"op":"spawn_cloth","id":${id},"world":${SOAK},"origin":[0,5,0],"cols":4294967298,"rows":4294967298,"spacing":0.1}`,
        long_digits: (id) => `{"op":"create_world","id":${id},"name":"soak-digits","tick_hz":${'9'.repeat(rng.int(400, 5000))}}`,
        denormal_mass: (id) => `{"op":"spawn_ragdoll","id":${id},"world":${SOAK},"position":[0,2,0],"mass":5e-324}`,
        'world_2^64': (id) => `{"op":"describe","id":${id},"world":18446744073709551617,"entity":1}`,
        'entity_-1': (id) => `{"op":"despawn","id":${id},"world":${W},"entity":-1}`,
        'particle_1e10': (id) => `{"op":"drag","id":${id},${target},"particle":1e10,"target":[0,1,0]}`,
        'rate_1e9': (id) => `{"op":"subscribe","id":${id},"world":${DEMO},"format":"binary","rate_hz":1e9}`,
        tick_hz_fraction: (id) => `{"op":"create_world","id":${id},"name":"soak-frac","tick_hz":59.999999999}`,
      }[variant];
      const outcome = await inBand(ctx, 'huge_numbers', variant, text);
      // A hostile subscribe that was accepted replaced the session's own.
      if (variant === 'rate_1e9' && outcome === 'reply ok') ctx.s.sub = null;
    }],
    ['unknown_op', 2, async (ctx) => {
      const { rng } = ctx;
      const [variant] = rng.weighted([['made_up', 2], ['empty', 1], ['number', 1], ['missing', 1], ['very_long', 1],
                                      ['proto', 1], ['upper_case', 1], ['trailing_space', 1]]);
      noteHostile(ctx.index, 'unknown_op', variant);
      const text = {
        made_up: (id) => `{"op":"${rng.pick(['explode', 'shutdown', 'eval', 'admin', 'rm_rf'])}","id":${id}}`,
        empty: (id) => `{"op":"","id":${id}}`,
        number: (id) => `{"op":42,"id":${id}}`,
        missing: (id) => `{"id":${id},"world":1}`,
        very_long: (id) => `{"op":"${'x'.repeat(rng.int(100, 60000))}","id":${id}}`,
        proto: (id) => `{"op":"__proto__","id":${id},"__proto__":{"op":"list_worlds"}}`,
        upper_case: (id) => `{"op":"LIST_WORLDS","id":${id}}`,
        trailing_space: (id) => `{"op":"list_worlds ","id":${id}}`,
      }[variant];
      await inBand(ctx, 'unknown_op', variant, text);
    }],
    ['binary_garbage', 2, async (ctx) => {
      const { rng } = ctx;
      const [variant] = rng.weighted([['random', 3], ['short_ack', 1], ['long_ack', 1], ['fake_snapshot', 1]]);
      noteHostile(ctx.index, 'binary_garbage', variant);
      let b;
      if (variant === 'random') {
        b = rng.bytes(rng.int(1, 4096));
        if (b[0] === 0x41) b[0] = 0x42; // an 'A' of 17 bytes would be an ack (no reply)
      } else if (variant === 'short_ack') {
        b = Buffer.concat([Buffer.from('A'), rng.bytes(rng.int(0, 15))]);
      } else if (variant === 'long_ack') {
        b = Buffer.concat([Buffer.from('A'), rng.bytes(rng.int(17, 64))]);
      } else {
        b = Buffer.concat([Buffer.from('RDS2\x02\x01'), rng.bytes(rng.int(2, 600))]);
      }
      await inBand(ctx, 'binary_garbage', variant, b, { binary: true, hasId: false });
    }],
    ['oversize', 1, async (ctx) => {
      const { rng } = ctx;
      const [variant] = rng.weighted([['declared_64KiB+1', 2], ['declared_2^62', 1], ['binary_1MiB', 1], ['fragments_over_64KiB', 1],
                                      ['exactly_64KiB', 1]]);
      noteHostile(ctx.index, 'oversize', variant);
      const raw = await rawSession('oversize', variant);
      if (!raw) return;
      if (variant === 'exactly_64KiB') {
        // The limit itself is allowed: a 65,536-byte command gets its reply.
        const head = '{"op":"list_worlds","id":77,"pad":"';
        const text = head + 'x'.repeat(65536 - head.length - 2) + '"}';
        await raw.writeDrained(textFrame(text));
        const replied = await raw.until(() => raw.texts.some((t) => t.startsWith('{"re":77')) || raw.gone, 10000);
        recordHostile('oversize', variant, replied && !raw.gone ? 'reply ok' : await raw.outcome(0));
        raw.destroy(false);
        return;
      }
      if (variant === 'declared_64KiB+1') {
        await raw.writeDrained(frame({ opcode: 0x1, payload: Buffer.alloc(rng.int(0, 4096), 0x20), declared: 65537 + rng.int(0, 1 << 20) }));
      } else if (variant === 'declared_2^62') {
        await raw.writeDrained(frame({ opcode: 0x2, payload: rng.bytes(64), declared: 2 ** 62 }));
      } else if (variant === 'binary_1MiB') {
        // The whole payload: the server must not wait for it, nor choke on it.
        const f = frame({ opcode: 0x2, payload: rng.bytes(1 << 20) });
        for (let off = 0; off < f.length && !raw.gone; off += 65536) await raw.writeDrained(f.subarray(off, off + 65536));
      } else {
        await raw.writeDrained(frame({ opcode: 0x1, fin: false, payload: Buffer.alloc(40000, 0x20) }));
        await raw.writeDrained(frame({ opcode: 0x0, fin: true, payload: Buffer.alloc(40000, 0x20) }));
      }
      recordHostile('oversize', variant, await raw.outcome(10000));
      raw.destroy(false);
    }],
    ['endless_fragments', 0.5, async (ctx) => {
      const { rng } = ctx;
      const variant = rng() < 0.5 ? 'text' : 'binary';
      noteHostile(ctx.index, 'endless_fragments', variant);
      const raw = await rawSession('endless_fragments', variant);
      if (!raw) return;
      await raw.writeDrained(frame({ opcode: variant === 'text' ? 0x1 : 0x2, fin: false, payload: Buffer.from('[') }));
      const one = frame({ opcode: 0x0, fin: false, payload: Buffer.from(' '), rng });
      const batch = Buffer.concat(Array.from({ length: 2048 }, () => one));
      const until = now() + Math.min(20000, Math.max(1000, timeLeft()));
      let sent = 1;
      while (!raw.gone && sent < 100000 && now() < until) {
        await raw.writeDrained(batch);
        sent += 2048;
      }
      const outcome = await raw.outcome(10000);
      // (How many frames it took is not measured: the socket buffers take
      // them all before the server has read 64 KiB of them.)
      recordHostile('endless_fragments', variant, outcome);
      raw.destroy(false);
    }],
    ['unmasked', 1, async (ctx) => {
      const { rng } = ctx;
      const variant = rng.pick(['text', 'binary', 'ping']);
      noteHostile(ctx.index, 'unmasked', variant);
      const raw = await rawSession('unmasked', variant);
      if (!raw) return;
      const f = variant === 'text' ? textFrame('{"op":"list_worlds","id":1}', { mask: false })
        : variant === 'binary' ? frame({ opcode: 0x2, payload: rng.bytes(17), mask: false })
        : frame({ opcode: 0x9, payload: Buffer.from('hi'), mask: false });
      await raw.writeDrained(f);
      recordHostile('unmasked', variant, await raw.outcome(10000));
      raw.destroy(false);
    }],
    ['bad_mask', 0.5, async (ctx) => {
      // Masked with another key than the header gives: the server unmasks
      // garbage (not UTF-8: close 1007; else a bad_json reply).
      const { rng } = ctx;
      const variant = rng.pick(['text', 'zero_key_header']);
      noteHostile(ctx.index, 'bad_mask', variant);
      const raw = await rawSession('bad_mask', variant);
      if (!raw) return;
      const payload = '{"op":"list_worlds","id":1}';
      if (variant === 'text') {
        await raw.writeDrained(textFrame(payload, { wrongKey: true }));
      } else {
        // Mask bit set, key 0 (a no-op mask: legal, must be answered).
        const f = Buffer.concat([Buffer.from([0x81, 0x80 | payload.length, 0, 0, 0, 0]), Buffer.from(payload)]);
        await raw.writeDrained(f);
      }
      const got = await raw.until(() => raw.texts.some((t) => t.includes('"re"')) || raw.gone, 5000);
      let outcome;
      if (got && !raw.gone) {
        const t = raw.texts.find((x) => x.includes('"re"'));
        const m = JSON.parse(t);
        outcome = m.ok ? 'reply ok' : `reply ${m.error?.code}`;
      } else {
        outcome = await raw.outcome(5000);
      }
      recordHostile('bad_mask', variant, outcome);
      raw.destroy(false);
    }],
    ['reserved_bits', 0.5, async (ctx) => {
      const { rng } = ctx;
      const variant = rng.pick(['rsv1', 'rsv3', 'opcode_3', 'opcode_0xB', 'continuation_first', 'ping_126_bytes', 'fragmented_ping']);
      noteHostile(ctx.index, 'reserved_bits', variant);
      const raw = await rawSession('reserved_bits', variant);
      if (!raw) return;
      const cmd = Buffer.from('{"op":"list_worlds","id":1}');
      const f = {
        rsv1: () => frame({ opcode: 0x1, payload: cmd, rsv: 4 }),
        rsv3: () => frame({ opcode: 0x1, payload: cmd, rsv: 1 }),
        opcode_3: () => frame({ opcode: 0x3, payload: cmd }),
        opcode_0xB: () => frame({ opcode: 0xb, payload: cmd }),
        continuation_first: () => frame({ opcode: 0x0, payload: cmd }),
        ping_126_bytes: () => frame({ opcode: 0x9, payload: Buffer.alloc(126, 0x61) }),
        fragmented_ping: () => frame({ opcode: 0x9, payload: Buffer.from('x'), fin: false }),
      }[variant]();
      await raw.writeDrained(f);
      recordHostile('reserved_bits', variant, await raw.outcome(10000));
      raw.destroy(false);
    }],
    ['abrupt_disconnect', 1.5, async (ctx) => {
      const { rng } = ctx;
      const variant = rng.pick(['mid_handshake', 'mid_header', 'mid_mask_key', 'mid_payload', 'subscribed_mid_frame']);
      const reset = rng() < 0.5;
      noteHostile(ctx.index, 'abrupt_disconnect', `${variant} ${reset ? 'rst' : 'fin'}`);
      const raw = await Raw.connect();
      if (!raw) {
        recordHostile('abrupt_disconnect', variant, 'could not connect');
        return;
      }
      if (variant === 'mid_handshake') {
        const req = raw.request();
        raw.write(req.slice(0, rng.int(1, req.length - 1)));
        await sleep(rng.int(0, 200));
      } else {
        if ((await raw.handshake()) !== 101) {
          recordHostile('abrupt_disconnect', variant, `http ${raw.status}`);
          raw.destroy(false);
          return;
        }
        if (variant === 'subscribed_mid_frame') {
          raw.write(textFrame(JSON.stringify({ op: 'subscribe', id: 1, world: rng.pick([DEMO, CLOTH]), format: 'json', rate_hz: 30 })));
          await sleep(rng.int(50, 1500));
        }
        const f = textFrame(JSON.stringify({ op: 'list_worlds', id: 2, pad: 'y'.repeat(300) }));
        const cut = { mid_header: 1, mid_mask_key: 6, mid_payload: rng.int(10, 200), subscribed_mid_frame: rng.int(1, 100) }[variant];
        raw.write(f.subarray(0, cut));
        await sleep(rng.int(0, 100));
      }
      raw.destroy(reset);
      recordHostile('abrupt_disconnect', variant, reset ? 'we reset' : 'we closed');
    }],
    ['slow_reader', 0.3, async (ctx) => {
      const { rng } = ctx;
      if (slowReaders >= maxSlowReaders || timeLeft() < 5000) return HOSTILE_BY_NAME.reconnect_churn(ctx);
      slowReaders++;
      // Held past 60 s, the server closes it as idle (PROTOCOL.md §1): the
      // variant names which side of that the hold fell.
      const holdMs = Math.min(rng.range(20000, 75000), timeLeft() - 2000);
      const variant = `${rng() < 0.5 ? 'silent' : 'describes_while_not_reading'}, held ${holdMs >= 60000 ? '>=' : '<'} 60 s`;
      noteHostile(ctx.index, 'slow_reader', variant);
      const task = (async () => {
        const raw = await rawSession('slow_reader', variant);
        if (!raw) return;
        const cloth = [...pool.values()].find((e) => e.world === CLOTH && e.fixed);
        raw.write(textFrame(JSON.stringify({ op: 'subscribe', id: 1, world: CLOTH, format: 'json', rate_hz: 30 })));
        await sleep(200);
        raw.sock.pause(); // from here on nothing is read
        const end = now() + holdMs;
        for (let i = 2; i < 60 && now() < end && !variant.startsWith('silent'); ++i) {
          raw.write(textFrame(JSON.stringify({ op: 'describe', id: i, world: CLOTH, entity: cloth?.entity ?? 1 })));
          await sleep(500);
        }
        await sleep(Math.max(0, end - now()));
        const before = raw.bytesIn;
        raw.sock.resume();
        await raw.until(() => raw.gone, 3000);
        const outcome = raw.closeCode !== null ? `close ${raw.closeCode}` : raw.error ? `tcp ${raw.error}`
          : raw.ended ? 'tcp closed without a close frame' : 'still open, streaming again';
        recordHostile('slow_reader', variant, outcome);
        const h = stats.hostile.slow_reader;
        h.held_s = (h.held_s ?? 0) + Math.round(holdMs / 1000);
        h.kb_after_resume_max = Math.max(h.kb_after_resume_max ?? 0, Math.round((raw.bytesIn - before) / 1024));
        raw.destroy(false);
      })().catch((e) => console.error('soak: slow reader:', e)).finally(() => { slowReaders--; });
      background.add(task);
      task.finally(() => background.delete(task));
    }],
    ['reconnect_churn', 1, async (ctx) => {
      const { rng } = ctx;
      const k = rng.int(3, 8);
      for (let i = 0; i < k && running(); ++i) {
        const variant = rng.pick(['close_after_welcome', 'terminate_after_welcome', 'close_on_open', 'subscribe_then_terminate']);
        noteHostile(ctx.index, 'reconnect_churn', variant);
        const ws = new WebSocket(url, ['ragdolld.v1'], { perMessageDeflate: false, handshakeTimeout: 5000 });
        ws.on('error', () => {});
        const closed = new Promise((r) => ws.on('close', (code) => r(code)));
        // The welcome can come in the same read as the 101: listen from the start.
        const welcome = new Promise((r) => ws.once('message', () => r(true)));
        const status = await new Promise((r) => {
          ws.once('unexpected-response', (req, res) => { r(`http ${res.statusCode}`); req.destroy(); });
          ws.once('open', () => r('open'));
          ws.once('close', () => r('closed'));
        });
        if (status !== 'open') {
          recordHostile('reconnect_churn', variant, status);
          continue;
        }
        if (variant === 'close_on_open') {
          ws.close(1000);
        } else {
          const welcomed = await Promise.race([welcome, sleep(5000)]);
          if (!welcomed) {
            recordHostile('reconnect_churn', variant, 'no welcome');
            ws.terminate();
            continue;
          }
          if (variant === 'subscribe_then_terminate') {
            ws.send(JSON.stringify({ op: 'subscribe', id: 1, world: DEMO, format: rng.pick(['json', 'binary']), rate_hz: 30 }));
            await sleep(rng.int(0, 300));
          }
          if (variant.startsWith('close')) ws.close(1000);
          else ws.terminate();
        }
        const code = await Promise.race([closed, sleep(5000).then(() => 'no close')]);
        if (code === 'no close') ws.terminate();
        recordHostile('reconnect_churn', variant, variant.includes('terminate') ? 'we reset' : `close ${code}`);
      }
    }],
  ];
  const HOSTILE_BY_NAME = Object.fromEntries(HOSTILE.map(([name, , fn]) => [name, fn]));
  const hostileMix = kinds === null ? HOSTILE : HOSTILE.filter(([name]) => kinds.includes(name));
  if (hostileMix.length === 0) {
    console.error(`soak: --kinds: none of ${kinds} (kinds: ${HOSTILE.map(([n]) => n).join(', ')})`);
    server.kill('SIGKILL');
    process.exit(2);
  }

  // ------------------------------------------------------------------ a client
  async function client(index) {
    const rng = makeRng(seed, index + 1);
    // A staggered start: all clients within the first 5 s (or 10 %).
    await sleep(rng() * Math.min(5000, seconds * 100));
    const maxActions = Math.ceil(seconds * 20);
    let actions = 0;
    const ctx = { index, rng, s: null, own: [], drags: [], ownWorld: null, worldSerial: 0 };
    while (running() && actions < maxActions) {
      let s;
      try {
        s = await Session.connect();
      } catch (e) {
        bump(stats.sessions.failed, e.message);
        await sleep(rng.range(500, 2000));
        continue;
      }
      s.rng = rng;
      ctx.s = s;
      ctx.own = [];
      ctx.drags = [];
      ctx.ownWorld = null;
      if (rng() < 0.6) await subscribeRandom(ctx);
      const budget = rng.int(10, 160);
      for (let k = 0; k < budget && s.open && running() && actions < maxActions; ++k, ++actions) {
        await sleep(rng.range(100, 900));
        if (!running()) break;
        if (rng() < hostileShare) {
          await rng.weighted(hostileMix)[2](ctx);
        } else {
          await rng.weighted(ORDINARY)[2](ctx);
        }
      }
      // Leave nothing behind: despawn, release, drop the world, then go.
      if (s.open) {
        while (ctx.own.length && s.open) await despawnOne(ctx);
        for (const d of ctx.drags.splice(0)) if (s.open) await s.cmd({ op: 'release', ...d });
        if (ctx.ownWorld !== null && s.open) await dropOwnWorld(ctx);
      } else if (ctx.own.length || ctx.ownWorld !== null) {
        // The session is gone (a hostile action closed it): clean up over
        // a new one, so that what is left at the end is the server's doing.
        try {
          const c = await Session.connect();
          ctx.s = c;
          while (ctx.own.length && c.open) await despawnOne(ctx);
          await dropOwnWorld(ctx);
          await c.close(false);
        } catch {
          for (const e of ctx.own) poolDel(e.world, e.entity);
        }
      }
      await s.close(rng() < 0.2);
    }
  }

  // ------------------------------------------------------------------ run
  const progressEvery = seconds >= 120 ? 30000 : 5000;
  let lastSent = 0;
  const progress = setInterval(() => {
    const last = samplesLive[samplesLive.length - 1];
    log(`soak: ${Math.round((now() - runStart) / 1000)} s: ${stats.commands.sent - lastSent} commands, ` +
        `sessions ${last?.sessions ?? '?'}, rss ${last ? (last.rss_kb / 1024).toFixed(1) : '?'} MiB, ` +
        `fds ${last?.fds ?? '?'}, demo snapshots ${last?.demo ?? '?'}`);
    lastSent = stats.commands.sent;
  }, progressEvery);
  const loopDelay = monitorEventLoopDelay({ resolution: 10 });
  loopDelay.enable();

  const all = Array.from({ length: clients }, (_, i) => client(i).catch((e) => {
    bump(stats.events, 'client exception');
    console.error(`soak: client ${i}:`, e);
  }));
  await Promise.race([Promise.all(all), sleep(seconds * 1000 + 60000)]);
  await Promise.race([Promise.all([...background]), sleep(10000)]);
  clearInterval(progress);
  loopDelay.disable();
  const runSeconds = (now() - runStart) / 1000;

  // ------------------------------------------------------------------ after the clients
  // Every client has gone: the sessions should come back to the monitor's.
  let after = null;
  if (crashes.length === 0) {
    const until = now() + 15000;
    let h;
    do {
      h = await healthz(port, 3000);
      const own = samplesLive[samplesLive.length - 1]?.own_sessions ?? 2;
      if (h.ok && h.sessions <= own) break;
      await sleep(250);
    } while (now() < until);
    after = { sessions: h.ok ? h.sessions : null, monitor_sessions: samplesLive[samplesLive.length - 1]?.own_sessions ?? null,
              worlds: h.ok ? h.worlds : null };
    try {
      after.rss_mib = Math.round(readProcStatus(server.pid).rss_kb / 102.4) / 10;
      after.fds = countFds(server.pid);
    } catch {
      // gone
    }
    try {
      const c = await Session.connect();
      const r = await c.cmd({ op: 'list_worlds' });
      after.worlds_list = r.msg?.worlds?.map((w) => ({ world: w.world, name: w.name, entities: w.entities }));
      await c.close(false);
    } catch {
      // reported as missing
    }
  }
  monitor.postMessage({ type: 'stop' });
  const mon = await Promise.race([monitorResult, sleep(15000).then(() => null)]);
  await monitor.terminate();

  // The server must exit 0 on SIGTERM.
  let shutdown = null;
  if (crashes.length === 0) {
    stopping = true;
    const t = now();
    server.kill('SIGTERM');
    const r = await Promise.race([exited, sleep(10000).then(() => null)]);
    if (r === null) {
      server.kill('SIGKILL');
      shutdown = { code: null, signal: 'SIGKILL (did not exit within 10 s of SIGTERM)' };
    } else {
      shutdown = { ...r, ms: Math.round(now() - t) };
    }
    if (shutdown.code !== 0) {
      crashes.push({ phase: 'shutdown', code: shutdown.code, signal: shutdown.signal, stderr_tail: serverErr.slice(-4000) });
    }
  }

  // ------------------------------------------------------------------ report
  const samples = mon?.samples ?? [];
  const win = Math.min(60, seconds / 10);
  const mean = (xs) => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : null);
  const lastT = samples.length ? samples[samples.length - 1][0] : 0;
  const firstWin = samples.filter((s) => s[0] <= win + (samples.length ? samples[0][0] : 0));
  const lastWin = samples.filter((s) => s[0] >= lastT - win);
  const mib = (kb) => (kb === null ? null : Math.round(kb / 102.4) / 10);
  const rssFirst = mean(firstWin.map((s) => s[1]));
  const rssLast = mean(lastWin.map((s) => s[1]));
  // Overruns (ticks dropped) and step time per world, from the metrics
  // events; the worlds clients created and destroyed are summed.
  const overruns = {};
  let simMs = 0;
  if (mon) {
    const clientWorlds = { worlds: 0, ticks: 0, overruns: 0 };
    for (const [w, m] of Object.entries(mon.worldMetrics)) {
      simMs += m.simMs;
      const world = Number(w);
      if (world === DEMO || world === SOAK || world === CLOTH) {
        overruns[`${w} ${m.name}`] = { ticks: m.ticks, overruns: m.overruns, max_step_ms: m.maxStepMs,
                                      step_ms_mean: m.ticks ? Math.round((m.simMs / m.ticks) * 1000) / 1000 : null };
      } else {
        clientWorlds.worlds++;
        clientWorlds.ticks += m.ticks;
        clientWorlds.overruns += m.overruns;
      }
    }
    overruns["clients' worlds"] = clientWorlds;
  }
  const report = {
    config: { seconds, clients, seed, hostile_share: hostileShare, kinds, healthz_timeout_ms: healthzTimeoutMs, ragdolld,
              run_s: Math.round(runSeconds * 10) / 10 },
    crashes: crashes.length,
    crash_details: crashes,
    shutdown,
    healthz: mon?.health ?? null,
    rss_mib: {
      window_s: win,
      first: mib(rssFirst),
      last: mib(rssLast),
      drift: rssFirst !== null && rssLast !== null ? mib(rssLast - rssFirst) : null,
      drift_pct: rssFirst ? Math.round(((rssLast - rssFirst) / rssFirst) * 1000) / 10 : null,
      peak: mon ? mib(mon.hwm_kb) : null,
    },
    server_cpu: { ...cpuReport(samples), stepping_per_s: Math.round(simMs / runSeconds) / 1000 },
    fds: {
      first: firstWin.length ? Math.round(mean(firstWin.map((s) => s[2]))) : null,
      last: lastWin.length ? Math.round(mean(lastWin.map((s) => s[2]))) : null,
      max: samples.length ? Math.max(...samples.map((s) => s[2])) : null,
    },
    after_clients: after,
    overruns,
    demo_subscriber: mon?.demo ?? null,
    commands: { ...stats.commands, per_s: Math.round(stats.commands.sent / runSeconds) },
    hostile: stats.hostile,
    sessions: stats.sessions,
    snapshots: stats.snapshots,
    events: stats.events,
    unmatched_replies: stats.unmatched_replies,
    soak_loop_delay_ms: { p99: loopDelay.percentile(99) / 1e6, max: loopDelay.max / 1e6 },
    monitor_loop_delay_ms: mon?.monitor_loop_delay_ms ?? null,
    recent_hostile: crashes.length ? recentHostile : undefined,
    server_stderr_tail: serverErr.slice(-2000),
    samples: samples.map((s) => [Math.round(s[0]), s[1], s[2], Math.round(s[3] * 100) / 100, Math.round(s[4] * 100) / 100, s[5]]),
  };
  printReport(report);
  if (jsonOut) writeFileSync(jsonOut, JSON.stringify(report, null, 1));
  const demoOk = (mon?.demo.snapshots ?? 0) > 0;
  const healthOk = mon !== null && mon.health.failures === 0;
  process.exit(crashes.length === 0 && healthOk && demoOk ? 0 : 1);
}

// The server's CPU time and run-queue wait per second of the run, and the
// machine's load: on a shared machine a server waiting for a CPU misses
// ticks that it would not miss alone.
function cpuReport(samples) {
  if (samples.length < 2) return null;
  const a = samples[0];
  const b = samples[samples.length - 1];
  const wall = b[0] - a[0];
  const r = (x) => Math.round(x * 1000) / 1000;
  return {
    cpu_per_s: r((b[3] - a[3]) / wall),
    runqueue_wait_per_s: r((b[4] - a[4]) / wall),
    load1_mean: r(samples.reduce((s, x) => s + x[5], 0) / samples.length),
    nproc: availableParallelism(),
  };
}

function printReport(r) {
  const out = (s) => console.log(s);
  const fmt = (o) => Object.entries(o).sort((a, b) => b[1] - a[1]).map(([k, v]) => `${k} ${v}`).join(', ');
  out(`soak report: ${r.config.clients} clients, ${r.config.run_s} s, seed ${r.config.seed}, hostile share ${r.config.hostile_share}`);
  out(`  crashes: ${r.crashes}${r.crashes ? ` ${JSON.stringify(r.crash_details.map(({ stderr_tail, ...c }) => c))}` : ''}` +
      (r.shutdown ? `; SIGTERM: exit ${r.shutdown.code ?? r.shutdown.signal} in ${r.shutdown.ms ?? '?'} ms` : ''));
  if (r.healthz) {
    const h = r.healthz;
    out(`  healthz: ${h.polls} polls, ${h.failures} failures${h.failures ? ` (${fmt(h.why)}; at ${h.failed_at_s.join(', ')} s)` : ''}; ` +
        `latency p50 ${h.latency_ms.p50} ms, p99 ${h.latency_ms.p99} ms, max ${h.latency_ms.max} ms; sessions at most ${h.max_sessions}`);
  }
  const m = r.rss_mib;
  out(`  RSS: ${m.first} MiB (first ${m.window_s} s) -> ${m.last} MiB (last ${m.window_s} s): drift ${m.drift} MiB (${m.drift_pct} %); peak ${m.peak} MiB`);
  out(`  fds: ${r.fds.first} -> ${r.fds.last} (max ${r.fds.max})`);
  if (r.server_cpu) {
    const c = r.server_cpu;
    out(`  server CPU: ${c.cpu_per_s} s/s on a CPU (${c.stepping_per_s} s/s of it stepping worlds), ` +
        `${c.runqueue_wait_per_s} s/s waiting for one; machine load ${c.load1_mean} on ${c.nproc} CPUs`);
  }
  if (r.after_clients) {
    const a = r.after_clients;
    out(`  after the clients left: ${a.sessions} sessions (the monitor's: ${a.monitor_sessions}), ${a.fds} fds, RSS ${a.rss_mib} MiB, worlds ` +
        (a.worlds_list ? a.worlds_list.map((w) => `${w.world} ${w.name} (${w.entities} entities)`).join(', ') : '?'));
  }
  out(`  tick overruns (ticks dropped) over the run: ${Object.entries(r.overruns).map(([w, o]) =>
    `world ${w} ${o.overruns} of ${o.ticks + o.overruns}${o.worlds !== undefined ? ` (${o.worlds} worlds)` : `, step ${o.step_ms_mean} ms mean, ${o.max_step_ms} max`}`).join('; ')}`);
  const d = r.demo_subscriber;
  if (d) {
    out(`  demo subscriber (JSON, 30 Hz): ${d.snapshots} snapshots (${d.per_s}/s); gaps p50 ${d.gaps_ms.p50} ms, p99 ${d.gaps_ms.p99} ms, ` +
        `max ${d.gaps_ms.max} ms; ${d.gaps_over_100ms} over 100 ms, ${d.gaps_over_1s} over 1 s; largest tick step ${d.tick_gap_max}; ` +
        `non-increasing ticks ${d.non_increasing_ticks}; reconnects ${d.reconnects}`);
  }
  const c = r.commands;
  out(`  commands: ${c.sent} sent (${c.per_s}/s); replies: ${fmt(c.replies)}`);
  const errs = Object.entries(c.by_op).filter(([, o]) => Object.keys(o.replies).some((k) => k !== 'ok'));
  if (errs.length) out(`    not ok, by op: ${errs.map(([op, o]) => `${op} (${fmt(Object.fromEntries(Object.entries(o.replies).filter(([k]) => k !== 'ok')))} of ${o.sent})`).join('; ')}`);
  out(`  sessions: ${r.sessions.opened} opened, ${r.sessions.closed_by_client} closed, ${r.sessions.terminated} reset by us; ` +
      `closed by the server: ${fmt(r.sessions.closed_by_server) || 'none'}; failed to open: ${fmt(r.sessions.failed) || 'none'}`);
  out(`  snapshots to the clients: ${r.snapshots.json} JSON, ${r.snapshots.binary} binary (${r.snapshots.acks} acked); ` +
      `unmatched replies ${r.unmatched_replies}`);
  out('  hostile actions:');
  for (const [kind, h] of Object.entries(r.hostile).sort()) {
    out(`    ${kind.padEnd(18)} ${String(h.count).padStart(6)}  ${fmt(h.outcomes)}`);
    if (Object.keys(h.variants).length > 1 && Object.keys(h.outcomes).length > 1) {
      for (const [v, o] of Object.entries(h.variants).sort()) out(`      ${v}: ${fmt(o)}`);
    }
  }
}
