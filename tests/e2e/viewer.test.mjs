// Browser tests of the viewer (clients/web): a real ragdolld serves the page,
// headless Chromium (Debian's, through playwright-core) renders it with
// WebGL2 on SwiftShader, and what the mouse does must show in the world as
// seen by a separate JSON subscription (the "observer"). The page itself
// is on binary snapshots (PROTOCOL.md §5.2): it acks each one, and most are
// deltas, far smaller than the observer's JSON.
//
// 1. a scripted drag moves a particle ragdoll's particle; along the way:
//    binary snapshot flow, acks and bytes against the observer's, slider
//    sync both ways, the drop button, orbiting;
// 2. a click on a character kills it (state "ragdoll", it falls), "Get up"
//    raises it again ("getting_up", then "animated", standing), a second
//    "Get up" shows the server's error in the log, "Partial" and
//    "Active"/"Limp" send what they say, and the spawn buttons spawn;
// 3. at 800×600 and 390×844 (a phone): "Drop ragdoll", "Throw ball" and
//    "Add" are on top at their centres and clicks on them go through, the
//    folded panels open and their controls are reachable, the scene shows
//    in the middle and the panels cover a bounded share of the window,
//    every HUD value is one line; at 800×600 the snapshot rate stays about
//    30 after the page stalled for 1.5 s;
// 4. against a ragdolld with an auth file: with #token=… in the page URL
//    (same origin) the page offers it as a second subprotocol and watches
//    the world; with a wrong token or none the server refuses (401) and
//    the page says what to check; the token is in no request URL, on no
//    console line and in no line of the server's log; a malformed token is
//    refused before any connection;
// 5. ?world=7 (no such world) says so and subscribes to nothing else;
//    ?world=demo is not a world id.
//
// Each test ends with a clean server exit.
//
//   RAGDOLLD=build/server/app/ragdolld RD_WEB_ROOT=build/web node --test tests/e2e/
//
// Screenshots go to $RD_ARTIFACTS (default test-artifacts/): viewer.png
// (the drag, with its marker), characters.png (before the click),
// ragdoll.png (after it), getup.png (standing again), spawned.png,
// layout-800x600.png and layout-390x844.png (as loaded) and their -open
// versions (every panel open), refused.png and no-world.png.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { Client, sleep, startServer } from '../lib/ragdolld.mjs';

const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';
const ARTIFACTS = process.env.RD_ARTIFACTS ?? 'test-artifacts';
const CHROMIUM_ARGS = [
  '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync',
  '--enable-unsafe-swiftshader',
];
const VIEWPORT = { width: 1280, height: 720 };

// Resolves with the value of fn() once pred(value) holds, polling; throws
// with `what` after timeoutMs.
async function until(fn, pred, timeoutMs, what) {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (pred(v)) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what} (last: ${JSON.stringify(v)})`);
    await sleep(100);
  }
}

// Bounds a cleanup step so a stuck one cannot hang the run (and clears its
// timer, which would otherwise keep the process alive).
async function bounded(p, ms = 10000) {
  let timer;
  await Promise.race([
    Promise.resolve(p).catch(() => {}),
    new Promise((resolve) => { timer = setTimeout(resolve, ms); }),
  ]);
  clearTimeout(timer);
}

const dist = (a, b) => Math.hypot(a[0] - b[0], a[1] - b[1], a[2] - b[2]);

// Rotates v by the unit quaternion q = [x, y, z, w] (the wire's order).
function rotate(q, v) {
  const [x, y, z, w] = q;
  // t = 2 q×v; v' = v + w t + q×t
  const t = [2 * (y * v[2] - z * v[1]), 2 * (z * v[0] - x * v[2]), 2 * (x * v[1] - y * v[0])];
  return [
    v[0] + w * t[0] + (y * t[2] - z * t[1]),
    v[1] + w * t[1] + (z * t[0] - x * t[2]),
    v[2] + w * t[2] + (x * t[1] - y * t[0]),
  ];
}
const add = (a, b) => a.map((x, i) => x + b[i]);
const minus = (a, b) => a.map((x, i) => x - b[i]);
const norm = (a) => Math.hypot(...a);

const SNAPSHOTS_KEPT = 150; // the observer's last 5 s at 30 Hz

// Starts a server and a browser on the viewer, subscribes an observer to the
// page's world, runs body(v), and then checks that the page threw nothing
// and the server exits cleanly. Tears everything down whatever happens.
//
// v: { page, server, observer, world, sub, latest(), firstSnapshot, sent,
// acks, replies, pageBytes(), observerBytes() }, where sent lists the
// commands the page sent (parsed), acks its binary ack frames ({ world,
// tick, at }), replies maps the commands' ids to the replies the page
// received, and pageBytes() and observerBytes() are the bytes of every
// frame (text or binary) the page and the observer have received so far.
async function withViewer(t, body) {
  let server = null;
  let context = null;
  let observer = null;
  let profile = null;
  let trim = 0;
  const pageErrors = [];
  // Last resort if the runner is interrupted: never leave the server behind.
  const killServer = () => server?.proc.kill('SIGKILL');
  process.once('exit', killServer);
  try {
    server = await startServer();
    profile = mkdtempSync(join(tmpdir(), 'rd-e2e-chromium-'));
    context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      args: CHROMIUM_ARGS,
      viewport: VIEWPORT,
      timeout: 30000,
    });
    const page = context.pages()[0] ?? await context.newPage();
    page.on('pageerror', (err) => pageErrors.push(err.message));
    // The commands the page sends, to tell a missed grab from a weak pull,
    // its acks, and the replies it gets (snapshots are many: skip them).
    const sent = [];
    const acks = [];
    const replies = new Map();
    let pageBytes = 0;
    page.on('websocket', (ws) => {
      ws.on('framesent', (f) => {
        if (typeof f.payload !== 'string') {
          const b = Buffer.from(f.payload);
          acks.push(b.length === 17 && b[0] === 0x41
            ? { world: Number(b.readBigUInt64LE(1)), tick: Number(b.readBigUInt64LE(9)), at: Date.now() }
            : { bad: b.toString('hex') });
          return;
        }
        try { sent.push(JSON.parse(f.payload)); } catch { /* not ours */ }
      });
      ws.on('framereceived', (f) => {
        pageBytes += typeof f.payload === 'string' ? Buffer.byteLength(f.payload) : f.payload.length;
        if (typeof f.payload !== 'string' || !f.payload.startsWith('{"re":')) return;
        try {
          const m = JSON.parse(f.payload);
          replies.set(m.re, m);
        } catch { /* not ours */ }
      });
    });
    page.setDefaultTimeout(15000);

    await page.goto(`${server.http}/`);
    const first = await page.waitForFunction(() => window.__ragdolld?.snapshots > 0);
    await first.dispose();
    assert.equal(await page.evaluate(() => window.__ragdolld.webgl2), true, 'WebGL2 context');
    assert.equal(await page.evaluate(() => window.__ragdolld.format), 'binary', 'the page subscribes to binary snapshots');
    assert.equal(sent.find((c) => c.op === 'subscribe')?.format, 'binary');

    // The observer: a plain JSON subscription to the page's world.
    const world = await page.evaluate(() => window.__ragdolld.world);
    assert.equal(typeof world, 'number');
    observer = await Client.connect(server.url);
    let observerBytes = 0;
    observer.ws.on('message', (data) => { observerBytes += data.length; });
    const sub = await observer.send({ op: 'subscribe', world, format: 'json', rate_hz: 30 });
    assert.equal(sub.ok, true, JSON.stringify(sub));
    const latest = () => observer.snapshots(world).at(-1);
    await until(async () => latest(), Boolean, 5000, 'a snapshot for the observer');
    // The first snapshot carries the topology (skeletons, capsules).
    const firstSnapshot = observer.snapshots(world)[0];
    // The client keeps every message; old snapshots only cost memory here.
    trim = setInterval(() => {
      const snaps = observer.snapshots(world);
      if (snaps.length <= SNAPSHOTS_KEPT) return;
      const old = new Set(snaps.slice(0, snaps.length - SNAPSHOTS_KEPT));
      observer.messages = observer.messages.filter((m) => !old.has(m));
    }, 1000);

    await body({
      page, server, observer, world, sub, latest, firstSnapshot, sent, acks, replies,
      pageBytes: () => pageBytes,
      observerBytes: () => observerBytes,
    });

    // However long the test ran, the stream never needed mending (every
    // frame decoded, no resync, every ack well formed and for this world)
    // and nearly all snapshots were deltas. The server sends a full one
    // first, and again when the page's newest ack is older than its 32
    // baselines (about 1 s at 30 Hz): a page stalled by software rendering
    // gets a few more, hence the margin.
    const stats = await page.evaluate(() => window.__ragdolld.stats);
    t.diagnostic(`stream over the whole test: ${JSON.stringify(stats)}`);
    assert.deepEqual([stats.errors, stats.resyncs], [0, 0], `stream: ${JSON.stringify(stats)}`);
    assert.ok(stats.deltas >= 0.8 * (stats.snapshots - 1), `mostly deltas: ${JSON.stringify(stats)}`);
    assert.ok(acks.length > 0 && acks.every((a) => a.world === world), `acks: ${JSON.stringify(acks.slice(-3))}`);

    // Another client destroys the world: the page says so and shows none
    // of it any more (there is no other world to move to).
    const rope = latest().entities.find((e) => e.kind === 'rope');
    assert.ok(rope, 'the demo world has a rope');
    assert.notEqual(await page.evaluate((id) => window.__ragdolld.screenOf(id, 0), rope.entity), null,
      'the rope is drawn before the destroy');
    assert.equal((await observer.send({ op: 'destroy_world', world })).ok, true);
    const gone = await until(() => hudCells(page), (h) => h.world === `${world} destroyed` && h.tick === '–', 5000,
      'the HUD to say the world was destroyed');
    assert.equal(gone.entities, '–', `entities after the destroy: ${JSON.stringify(gone)}`);
    assert.equal(await page.evaluate(() => window.__ragdolld.world), null);
    assert.equal(await page.evaluate(() => window.__ragdolld.entities.size), 0);
    assert.equal(await page.evaluate((id) => window.__ragdolld.screenOf(id, 0), rope.entity), null,
      'the rope is no longer drawn');

    assert.deepEqual(pageErrors, [], 'no uncaught errors in the page');

    // After all that the server still shuts down cleanly (under ASan this
    // also means no leak or memory error on its side).
    clearInterval(trim);
    await observer.close();
    observer = null;
    await context.close();
    context = null;
    const code = await server.stop();
    assert.equal(code, 0, `ragdolld exited with ${code}: ${server.stderr()}`);
  } finally {
    clearInterval(trim);
    await bounded(observer?.close());
    await bounded(context?.close());
    await bounded(server?.stop());
    process.removeListener('exit', killServer);
    if (profile) rmSync(profile, { recursive: true, force: true });
  }
}

const screenshot = (page, name) => {
  mkdirSync(ARTIFACTS, { recursive: true });
  return page.screenshot({ path: join(ARTIFACTS, name) });
};

// The HUD's values by label.
const hudCells = (page) => page.evaluate(() => Object.fromEntries(
  [...document.querySelectorAll('#hud-values dt')].map((dt) => [dt.textContent, dt.nextElementSibling.textContent])));

// Two animation frames: software rendering is slow, the last one may be old.
const twoFrames = (page) =>
  page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));

test('viewer renders the world and throws a ragdoll by mouse', { timeout: 90000 }, (t) => withViewer(t, async (v) => {
  const { page, observer, world, sub, latest, sent, acks } = v;

  // Binary frames carry no topology: the page describes every entity it
  // meets and draws it once the reply is in.
  const ids = latest().entities.map((e) => e.entity);
  await until(() => page.evaluate(() => window.__ragdolld.drawn), (d) => ids.every((id) => d.includes(id)), 10000,
    `the page to draw all of ${JSON.stringify(ids)}`);
  const described = sent.filter((c) => c.op === 'describe' && c.world === world).map((c) => c.entity);
  assert.ok(ids.every((id) => described.includes(id)), `described ${JSON.stringify(described)}`);

  // Binary snapshots keep coming: ~90 at 30 Hz in 3 s; ask for a quarter.
  // Nearly all are deltas, each is acked with its full tick, and the page
  // receives well under half the bytes the JSON observer does for the same
  // world at the same rate over the same time (about a seventieth,
  // measured). Both byte counts are every frame received, taken in this
  // process: the page's from the browser's network events.
  const stats = () => page.evaluate(() => window.__ragdolld.stats);
  const s0 = await stats();
  const [p0, b0, a0, t0] = [v.pageBytes(), v.observerBytes(), acks.length, Date.now()];
  await sleep(3000);
  const [p1, b1, a1, t1] = [v.pageBytes(), v.observerBytes(), acks.length, Date.now()];
  const s1 = await stats();
  const seconds = (t1 - t0) / 1000;
  const n = s1.snapshots - s0.snapshots;
  const deltas = s1.deltas - s0.deltas;
  const pageRate = (p1 - p0) / seconds;
  const observerRate = (b1 - b0) / seconds;
  t.diagnostic(`over ${seconds.toFixed(1)} s: ${n} binary snapshots (${deltas} deltas), page ` +
    `${(pageRate / 1000).toFixed(1)} kB/s vs JSON observer ${(observerRate / 1000).toFixed(1)} kB/s ` +
    `(${(observerRate / pageRate).toFixed(0)}x)`);
  assert.ok(n >= 22, `only ${n} snapshots in ${seconds} s`);
  assert.ok(deltas >= 0.75 * n, `${deltas} of ${n} snapshots were deltas`);
  assert.equal(s1.frames - s0.frames, n, `frames that did not decode: ${JSON.stringify([s0, s1])}`);
  assert.ok(pageRate > 0 && pageRate < observerRate / 2,
    `page ${pageRate.toFixed(0)} B/s, JSON observer ${observerRate.toFixed(0)} B/s`);
  // Acks: one per snapshot (the page sends it right after decoding, and
  // counts both between the same two instants), full ticks that increase
  // and that the world has reached. The wire's count is taken from
  // Chromium's network events at other instants, so on a busy machine it
  // can lag by a few: it only has to show the acks leaving.
  assert.equal(s1.acks - s0.acks, n, `the page acked ${s1.acks - s0.acks} of ${n} snapshots`);
  const window_ = acks.slice(a0, a1);
  assert.ok(window_.length >= n / 2 && window_.length <= n + 5, `${window_.length} acks on the wire for ${n} snapshots`);
  assert.ok(window_.every((a, i) => a.world === world && (i === 0 || a.tick > window_[i - 1].tick)),
    `acks: ${JSON.stringify(window_.slice(0, 5))}`);
  const newest = latest().tick;
  assert.ok(acks.at(-1).tick <= newest + 2 && acks.at(-1).tick >= newest - 60,
    `last ack ${acks.at(-1).tick}, the observer's newest tick ${newest}`);

  // The HUD's plots (uPlot): three canvases drawn, a point a second each,
  // and still updating a couple of seconds later, with something to show
  // (snapshots per second and bytes per second are never zero here).
  const plots = () => page.evaluate(() => ({
    ...window.__ragdolld.plots,
    canvases: [...document.querySelectorAll('#hud-plots canvas')].map((c) => [c.width, c.height]),
    series: [...document.querySelectorAll('#hud-plots .hud-plot')].map((d) => d.dataset.series),
  }));
  const q0 = await plots();
  assert.deepEqual(q0.series, ['step', 'sps', 'bps']);
  assert.ok(q0.canvases.length === 3 && q0.canvases.every(([w, h]) => w > 100 && h > 30), JSON.stringify(q0.canvases));
  assert.ok(q0.points.every((n) => n >= 2), `points ${q0.points}`);
  await sleep(2500);
  const q1 = await plots();
  assert.ok(q1.updates >= q0.updates + 2, `plots redrawn ${q0.updates} → ${q1.updates}`);
  assert.ok(q1.points.every((n, i) => n > q0.points[i]), `points ${q0.points} → ${q1.points}`);
  // The HUD says what it counts: the format, the snapshot rate with the
  // share of deltas, the bytes received, and the metrics event's figures.
  const h = await hudCells(page);
  assert.match(h['snapshots/s'], /^\d+ \(\d+ % delta\)$/, JSON.stringify(h));
  assert.match(h.received, /B\/s$/, JSON.stringify(h));
  assert.equal(await page.locator('#format').textContent(), 'binary');
  assert.match(h['solver passes'], /^\d+$/, `metrics event in the HUD: ${JSON.stringify(h)}`);
  // The stick error is the metrics event's sum over the sticks divided by
  // their number, in mm; the same figures from the observer's JSON.
  const m = latest().metrics;
  assert.match(h['stick error'], /^\d+\.\d\d mm mean$/, JSON.stringify(h));
  const mean = 1000 * m.constraint_error / m.sticks;
  assert.ok(Math.abs(parseFloat(h['stick error']) - mean) < Math.max(0.5, 0.5 * mean),
    `HUD ${h['stick error']}, observer's metrics ${(mean).toFixed(2)} mm mean`);
  assert.match(h['ticks dropped'], /^\d+$/, JSON.stringify(h));
  // Every value fits its row: one line each.
  const wrapped = await page.evaluate(() => [...document.querySelectorAll('#hud-values dd')]
    .filter((dd) => dd.getClientRects().length !== 1 || dd.getBoundingClientRect().height > 24).map((dd) => dd.textContent));
  assert.deepEqual(wrapped, [], 'HUD values on more than one line');
  assert.match(h.tick, /^\d+$/, JSON.stringify(h));
  assert.match(h.entities, /^\d+$/, JSON.stringify(h));

  // A parameter change made by another client must reach the page's
  // sliders. Full friction also settles the ragdolls sooner for aiming.
  const calm = await observer.send({ op: 'set_params', world, friction: 1 });
  assert.equal(calm.ok, true, JSON.stringify(calm));
  await until(() => page.locator('#param-friction').inputValue(), (x) => Number(x) === 1, 5000,
    'the friction slider to follow the params event');

  // Let the demo ragdolls land (they fall off their platforms).
  const ragdollIds = latest().entities.filter((e) => e.kind === 'ragdoll').map((e) => e.entity);
  assert.ok(ragdollIds.length > 0, 'the demo world has ragdolls');
  let prev = latest();
  await until(async () => {
    await sleep(300);
    const cur = latest();
    const dt = (cur.tick - prev.tick) / sub.tick_hz;
    let fastest = cur.tick < 3 * sub.tick_hz ? Infinity : 0; // give them 3 s to fall
    for (const id of ragdollIds) {
      const a = prev.entities.find((e) => e.entity === id);
      const b = cur.entities.find((e) => e.entity === id);
      if (!a || !b || dt <= 0) return Infinity;
      a.particles.forEach((p, i) => { fastest = Math.max(fastest, dist(p, b.particles[i]) / dt); });
    }
    prev = cur;
    return fastest;
  }, (speed) => speed < 0.5, 15000, 'the ragdolls to land');

  // Chooses a ragdoll particle to grab: one that is still (per the
  // observer), clear of the panels, not under a platform, alone on screen so
  // the viewer's pick cannot take a neighbour instead, and not behind a
  // character's capsule (the page's own pickAt must name it); head, pelvis
  // or chest if possible.
  const particleOf = (snap, entity, i) => snap.entities.find((e) => e.entity === entity)?.particles?.[i];
  async function chooseTarget() {
    const snaps = observer.snapshots(world);
    const [old, cur] = [snaps.at(-10), snaps.at(-1)];
    const dt = (cur.tick - old.tick) / sub.tick_hz;
    const points = await page.evaluate(() => {
      const hook = window.__ragdolld;
      const out = [];
      for (const [entity, e] of hook.entities) {
        if (!e.particles) continue; // characters and balls: not grabbed
        for (let particle = 0; particle < e.particles.length; particle++) {
          const s = hook.screenOf(entity, particle);
          if (!s) continue;
          const p = { entity, kind: e.kind, particle, x: s.x, y: s.y };
          if (e.kind === 'ragdoll') {
            const hit = hook.pickAt(s.x, s.y);
            p.own = hit?.type === 'particle' && hit.entity === entity && hit.particle === particle;
          }
          out.push(p);
        }
      }
      return out;
    });
    const speed = (p) => {
      const [a, b] = [particleOf(old, p.entity, p.particle), particleOf(cur, p.entity, p.particle)];
      return a && b && dt > 0 ? dist(a, b) / dt : Infinity;
    };
    // Room around a point: how far the pointer is from being inside any
    // other particle's disc (ragdoll discs are up to ~15 px across here,
    // rope and cloth ones a few px), less a margin for those that move.
    const room = (p) => Math.min(...points.filter((q) => q !== p).map((q) =>
      Math.hypot(q.x - p.x, q.y - p.y) - (q.kind === 'ragdoll' ? 15 : 4) - (speed(q) > 0.3 ? 30 : 0)));
    // A particle under a platform would be pulled against its underside.
    const underBox = (p) => {
      const [x, y, z] = particleOf(cur, p.entity, p.particle);
      return (sub.statics.boxes ?? []).some(({ center: c, half_extents: h }) =>
        y < c[1] + h[1] && Math.abs(x - c[0]) < h[0] + 0.25 && Math.abs(z - c[2]) < h[2] + 0.25);
    };
    const ragdolls = points.filter((p) => p.kind === 'ragdoll');
    const inView = ragdolls.filter((p) => p.x > 320 && p.x < VIEWPORT.width - 320 &&
      p.y > 260 && p.y < VIEWPORT.height - 40 && !underBox(p));
    const visible = inView.filter((p) => p.own);
    const still = visible.filter((p) => speed(p) < 0.6);
    const candidates = still.map((p) => ({ ...p, room: room(p) })).filter((p) => p.room > 6);
    const preferred = [0, 3, 2]; // head, pelvis, chest
    return {
      target: candidates.find((p) => preferred.includes(p.particle) && p.room > 15) ??
        candidates.sort((p, q) => q.room - p.room)[0],
      why: `${ragdolls.length} ragdoll particles, ${inView.length} in view, ${visible.length} not hidden, ` +
        `${still.length} still, ${candidates.length} with room`,
    };
  }

  // Presses on the target where it is drawn right now (aiming twice: the
  // target may still be settling). Resolves with the press point once the page has
  // sent a drag for it. If the page grabbed nothing, or a neighbour that
  // moved in the way, lets go and resolves with null.
  const drawnAt = (p) => page.evaluate(([e, i]) => window.__ragdolld.screenOf(e, i), [p.entity, p.particle]);
  let firstDrag = 0; // index in `sent` of the successful grab's first drag
  async function press(p) {
    let at = await drawnAt(p);
    await page.mouse.move(at.x, at.y);
    at = await drawnAt(p);
    await page.mouse.move(at.x, at.y);
    const n = sent.length;
    await page.mouse.down();
    const drag = await until(async () => sent.slice(n).find((c) => c.op === 'drag'), Boolean, 1000, 'a drag')
      .catch(() => null);
    if (drag && drag.entity === p.entity && drag.particle === p.particle) {
      firstDrag = n;
      return at;
    }
    await page.mouse.up();
    await sleep(300);
    return null;
  }

  // The rope's anchor is pinned: it moves on screen only if the camera does.
  const rope = latest().entities.find((e) => e.kind === 'rope');
  assert.ok(rope, 'the demo world has a rope');
  const anchorAt = () => drawnAt({ entity: rope.entity, particle: 0 });
  const anchorBefore = await anchorAt();

  let target = null;
  let start = null;
  let before = null;
  for (let attempt = 1; attempt <= 6 && !start; attempt++) {
    const choice = await chooseTarget();
    target = choice.target;
    if (!target) {
      t.diagnostic(`attempt ${attempt}: no particle to grab right now (${choice.why})`);
      await sleep(500);
      continue;
    }
    before = particleOf(latest(), target.entity, target.particle);
    start = await press(target);
    t.diagnostic(`attempt ${attempt}: ${start ? 'grabbed' : 'missed'} ${JSON.stringify(target)}`);
  }
  assert.ok(start, `could not grab a ragdoll particle (last target ${JSON.stringify(target)}, ` +
    `page sent ${JSON.stringify(sent.filter((c) => c.op === 'drag').slice(-2))})`);
  const particleNow = () => particleOf(latest(), target.entity, target.particle);

  // The drag: pull it up and towards the middle in steps, hold, let go.
  const dx = start.x < VIEWPORT.width / 2 ? 60 : -60;
  const dy = -180;
  const steps = 12;
  for (let i = 1; i <= steps; i++) {
    await page.mouse.move(start.x + (dx * i) / steps, start.y + (dy * i) / steps);
    await sleep(35);
  }
  await sleep(800);
  const during = particleNow();
  // On screen, the held particle is drawn under the pointer.
  const pointer = { x: start.x + dx, y: start.y + dy };
  await twoFrames(page);
  const drawn = await drawnAt(target);
  // The held particle is ringed and tied by a line to the target dot under
  // the pointer (the grab kept the particle's offset from the pointer: a
  // few px).
  const marker = await page.evaluate(() => window.__ragdolld.dragMarker());
  assert.ok(marker?.visible, `a drag marker while dragging: ${JSON.stringify(marker)}`);
  const px = (a, b) => Math.hypot(a.x - b.x, a.y - b.y);
  assert.ok(px(marker.ring, drawn) < 2, `ring at ${JSON.stringify(marker.ring)}, particle drawn at ${JSON.stringify(drawn)}`);
  assert.ok(px(marker.target, pointer) < 20, `target dot at ${JSON.stringify(marker.target)}, pointer at ${JSON.stringify(pointer)}`);
  assert.ok(px(marker.line[0], marker.ring) < 1 && px(marker.line[1], marker.target) < 1, `line ${JSON.stringify(marker.line)}`);
  await screenshot(page, 'viewer.png');
  await page.mouse.up();
  await until(() => page.evaluate(() => window.__ragdolld.dragMarker()), (mk) => mk === null, 2000,
    'the drag marker to go on release');

  // The physics, seen by the observer: the particle followed the pointer up.
  const drags = sent.slice(firstDrag).filter((c) => c.op === 'drag');
  const what = `target ${JSON.stringify(target)}; page sent ${drags.length} drags, ` +
    `first ${JSON.stringify(drags[0])}, last ${JSON.stringify(drags.at(-1))}`;
  const moved = dist(during, before);
  assert.ok(moved > 0.3, `the particle moved ${moved.toFixed(3)} m ` +
    `(${JSON.stringify(before)} -> ${JSON.stringify(during)}); ${what}`);
  assert.ok(during[1] - before[1] > 0.3,
    `the particle rose ${(during[1] - before[1]).toFixed(3)} m, expected up; ${what}`);

  assert.ok(Math.hypot(drawn.x - pointer.x, drawn.y - pointer.y) < 40,
    `the held particle is drawn at ${JSON.stringify(drawn)}, the pointer is at ${JSON.stringify(pointer)}`);

  // Let go means let go: the particle falls back once released.
  await until(async () => particleNow(), (p) => p[1] < during[1] - 0.2, 5000, 'the particle to fall after release');

  // The page grabbed that very particle, throttled its drags and released it.
  assert.ok(drags.length >= 3 && drags.length <= 60, what);
  assert.ok(drags.every((c) => c.world === world && c.entity === target.entity && c.particle === target.particle), what);
  const released = (c) => c.op === 'release' && c.entity === target.entity && c.particle === target.particle;
  await until(async () => sent.slice(firstDrag).some(released), Boolean, 2000,
    `a release after the drag (sent: ${JSON.stringify(sent.slice(firstDrag).map((c) => c.op))})`);
  // Grabbing a particle is not a click on anything: no kill, no impulse.
  assert.ok(!sent.slice(firstDrag).some((c) => c.op === 'kill' || c.op === 'apply_impulse'),
    'the drag sent no kill or impulse');

  // Grabbing a particle did not orbit the camera.
  const anchorAfter = await anchorAt();
  assert.ok(Math.hypot(anchorAfter.x - anchorBefore.x, anchorAfter.y - anchorBefore.y) < 1,
    `the camera moved during the drag: ${JSON.stringify([anchorBefore, anchorAfter])}`);

  // The panel drives the world: one step of the iterations slider is one
  // set_params, which every subscriber hears about.
  const iterations = sub.params.iterations;
  await page.focus('#param-iterations');
  await page.keyboard.press('ArrowRight');
  await observer.next((m) => m.ev === 'params' && m.world === world && m.params.iterations === iterations + 1, 5000)
    .catch(() => assert.fail(`no params event with iterations ${iterations + 1}`));

  // And "Drop ragdoll" spawns one.
  await page.click('#drop');
  const dropped = (await until(async () => latest().entities.filter((e) => e.kind === 'ragdoll' && !ragdollIds.includes(e.entity)),
    (r) => r.length === 1, 5000, 'the dropped ragdoll'))[0].entity;
  // The page learns the newcomer's topology by describe and draws it...
  const drawnIds = () => page.evaluate(() => window.__ragdolld.drawn);
  await until(drawnIds, (d) => d.includes(dropped), 5000, `the page to draw the dropped ragdoll ${dropped}`);
  // ...and when it is despawned it disappears.
  assert.equal((await observer.send({ op: 'despawn', world, entity: dropped })).ok, true);
  await until(drawnIds, (d) => !d.includes(dropped), 5000, `the despawned ragdoll ${dropped} to disappear`);
  assert.equal(await page.evaluate((id) => window.__ragdolld.entities.has(id), dropped), false);

  // Dragging empty space orbits the camera (and grabs or hits nothing).
  // "Empty": the spot of a few, away from the panels, farthest from every
  // particle and bone, with nothing under it by the page's own pick.
  const all = await page.evaluate(() => [...window.__ragdolld.entities].flatMap(([id, e]) => (e.particles
    ? e.particles.map((_, i) => window.__ragdolld.screenOf(id, i))
    : (e.bones ?? []).map((b) => window.__ragdolld.screenOfBone(id, b.name))).filter(Boolean)));
  const clearance = ([x, y]) => Math.min(...all.map((q) => Math.hypot(q.x - x, q.y - y)));
  const [ox, oy] = [[640, 60], [420, 320], [860, 320], [420, 660], [860, 660]]
    .sort((a, b) => clearance(b) - clearance(a))[0];
  assert.ok(clearance([ox, oy]) > 40, 'an empty spot to orbit from');
  assert.equal(await page.evaluate(([x, y]) => window.__ragdolld.pickAt(x, y), [ox, oy]), null,
    `nothing under the orbit spot ${ox},${oy}`);
  const sentBefore = sent.length;
  await page.mouse.move(ox, oy);
  await page.mouse.down();
  for (let i = 1; i <= 8; i++) {
    await page.mouse.move(ox + 15 * i, oy);
    await sleep(20);
  }
  await page.mouse.up();
  await until(anchorAt, (a) => Math.hypot(a.x - anchorAfter.x, a.y - anchorAfter.y) > 20,
    3000, 'the camera to orbit');
  assert.ok(!sent.slice(sentBefore).some((c) => ['drag', 'kill', 'apply_impulse'].includes(c.op)),
    `orbiting sent no drag, kill or impulse (sent ${JSON.stringify(sent.slice(sentBefore).map((c) => c.op))})`);

  // A second page on a byte budget (?budget=, interest management): partial
  // frames, within the budget, every entity drawn all the same.
  const thin = await page.context().newPage();
  try {
    await thin.goto(`${v.server.http}/?budget=4000`);
    await until(() => thin.evaluate(() => window.__ragdolld.stats.partials ?? 0), (n) => n >= 10, 15000,
      'partial frames on the budgeted page');
    const every = latest().entities.map((e) => e.entity);
    await until(() => thin.evaluate(() => window.__ragdolld.drawn), (d) => every.every((id) => d.includes(id)), 15000,
      'the budgeted page to draw every entity');
    const b0 = await thin.evaluate(() => window.__ragdolld.stats.bytes);
    await sleep(3000);
    const b1 = await thin.evaluate(() => window.__ragdolld.stats.bytes);
    assert.ok(b1 - b0 <= 4000 * 3 + 4000 / 30 + 200, `${b1 - b0} bytes of frames in 3 s on a 4000 B/s budget`);
    const st = await thin.evaluate(() => window.__ragdolld.stats);
    assert.deepEqual([st.errors, st.resyncs], [0, 0], JSON.stringify(st));
  } finally {
    await thin.close();
  }
}));

// 240 s: it walks through a dozen commands and waits on world time for
// several; under ASan on a loaded 2-core machine it once took over 120 s
// (the whole file usually takes 120-165 s there).
test('viewer kills a character by click and gets it up', { timeout: 240000 }, (t) => withViewer(t, async (v) => {
  const { page, observer, world, sub, latest, firstSnapshot, sent, replies } = v;
  const hook = (fn, arg) => page.evaluate(fn, arg);
  const entityOf = (snap, id) => snap.entities.find((e) => e.entity === id);
  const boneOf = (snap, id, name) => entityOf(snap, id)?.bones.find((b) => b.name === name);
  const screenOfBone = (id, bone) => hook(([e, b]) => window.__ragdolld.screenOfBone(e, b), [id, bone]);
  const pickAt = (p) => hook(([x, y]) => window.__ragdolld.pickAt(x, y), [p.x, p.y]);
  const project = (p) => hook((q) => window.__ragdolld.project(q), p);
  const hudRow = (id) => hook((e) => {
    const row = document.querySelector(`#hud-selected .character[data-entity="${e}"]`);
    return row && { ...row.dataset, text: row.textContent };
  }, String(id));
  // The reply the page got to the first command of `op` it sent since index n.
  async function replyTo(op, n, id) {
    const cmd = await until(async () => sent.slice(n).find((c) => c.op === op), Boolean, 5000, `the page to send ${op}`);
    assert.equal(cmd.world, world, JSON.stringify(cmd));
    if (id !== undefined) assert.equal(cmd.entity, id, JSON.stringify(cmd));
    const reply = await until(async () => replies.get(cmd.id), Boolean, 5000, `the reply to ${JSON.stringify(cmd)}`);
    return { cmd, reply };
  }
  const stateEvent = (id, state, ms) => observer.next((m) => m.ev === 'character_state' && m.world === world &&
    m.entity === id && m.state === state, ms).catch(() => null);

  // The demo's humanoids stand, animated (skeletons come with topology).
  const humanoids = firstSnapshot.entities.filter((e) => e.kind === 'character' && e.skeleton === 'humanoid');
  assert.ok(humanoids.length >= 1, 'the demo world has a humanoid character');
  const capsules = new Map(humanoids.map((e) => [e.entity, e.capsules]));
  const names = humanoids[0].bones.map((b) => b.name);

  // Drawn where the server has it, upright, capsules along each bone's +X:
  // for every humanoid, the page's bone centres are the snapshot's p as
  // projected (an idle sway of a few mm is a pixel or so), the head is drawn
  // above the pelvis above the feet, and a click halfway from the centre to
  // either end of a leg bone's axis hits that very bone: 0.1 m off centre,
  // beyond the radius, so a capsule turned the wrong way (along its Y or Z)
  // would be missed there, and clear of the neighbours' round ends.
  await twoFrames(page);
  let target = null;
  for (const h of humanoids) {
    const id = h.entity;
    const snap = latest();
    assert.equal(entityOf(snap, id).state, 'animated', `#${id} starts animated`);
    for (const b of entityOf(snap, id).bones) {
      const [drawn, expected] = [await screenOfBone(id, b.name), await project(b.p)];
      assert.ok(drawn && Math.hypot(drawn.x - expected.x, drawn.y - expected.y) < 8,
        `#${id} ${b.name} drawn at ${JSON.stringify(drawn)}, its p projects to ${JSON.stringify(expected)}`);
    }
    const [head, pelvis, foot] = await Promise.all(['head', 'pelvis', 'foot_l'].map((b) => screenOfBone(id, b)));
    assert.ok(head.y < pelvis.y && pelvis.y < foot.y, `#${id} drawn upright: head ${head.y}, pelvis ${pelvis.y}, foot ${foot.y}`);
    for (const name of ['upper_leg_l', 'lower_leg_l', 'upper_leg_r', 'lower_leg_r']) {
      const b = boneOf(latest(), id, name);
      const [, halfLength] = capsules.get(id)[names.indexOf(name)];
      for (const f of [-0.5, 0.5]) {
        const at = await project(add(b.p, rotate(b.q, [f * halfLength, 0, 0])));
        const hit = await pickAt(at);
        assert.ok(hit?.type === 'rigid' && hit.entity === id && hit.bone === name,
          `#${id} ${name} at ${f} of its half length (${JSON.stringify(at)}) picks ${JSON.stringify(hit)}`);
      }
    }
    // The one to hit: its chest drawn clear of the panels, nearest the middle.
    const chest = await screenOfBone(id, 'chest');
    const hit = await pickAt(chest);
    if (chest.x > 280 && chest.x < VIEWPORT.width - 300 && hit?.entity === id &&
        (!target || Math.abs(chest.x - 640) < Math.abs(target.chest.x - 640))) {
      target = { id, chest };
    }
  }
  assert.ok(target, 'a humanoid to click');
  const id = target.id;
  await screenshot(page, 'characters.png');

  // The click: the page kills it where it was clicked, pushed along the view ray.
  const before = latest();
  const at = await screenOfBone(id, 'chest');
  const n = sent.length;
  const clickedAt = Date.now();
  await page.mouse.click(at.x, at.y);
  const ragdoll = await stateEvent(id, 'ragdoll', 10000);
  assert.ok(ragdoll, `no character_state "ragdoll" for #${id} (page sent ${JSON.stringify(sent.slice(n))})`);
  t.diagnostic(`click to "ragdoll" event at the observer: ${ragdoll.receivedAt - clickedAt} ms`);
  const { cmd: kill, reply: killed } = await replyTo('kill', n, id);
  assert.equal(killed.ok, true, JSON.stringify(killed));
  // The server names the bone whose centre is nearest the hit: the chest, clicked at its middle.
  assert.equal(killed.bone, 'chest', JSON.stringify(killed));
  assert.ok(Math.abs(norm(kill.impulse) - 40) < 0.01, `a 40 N·s hit by default: ${JSON.stringify(kill)}`);
  const camera = await hook(() => window.__ragdolld.camera);
  const ray = minus(kill.hit_point, camera);
  const cos = kill.impulse.reduce((s, x, i) => s + x * ray[i], 0) / (norm(kill.impulse) * norm(ray));
  assert.ok(cos > 0.9999, `the impulse runs along the view ray (cos ${cos}): ${JSON.stringify(kill)}`);
  const chestBefore = boneOf(before, id, 'chest').p;
  assert.ok(dist(kill.hit_point, chestBefore) < 0.25,
    `hit point ${JSON.stringify(kill.hit_point)} on the chest at ${JSON.stringify(chestBefore)}`);
  await until(async () => entityOf(latest(), id).state, (s) => s === 'ragdoll', 3000, 'a snapshot in state ragdoll');
  assert.deepEqual(await hook(() => window.__ragdolld.selection), [id], 'the click selected it');
  await until(() => hudRow(id), (r) => r?.state === 'ragdoll' && r.bone === 'chest', 3000, 'the HUD to show ragdoll, hit chest');

  // It falls, away from the camera: the head ends near the ground and moved
  // the way the impulse pointed (horizontally).
  const headBefore = boneOf(before, id, 'head').p;
  const headNow = () => boneOf(latest(), id, 'head').p;
  await until(async () => headNow()[1], (y) => y < 0.6, 8000, 'the head to fall below 0.6 m');
  const push = [kill.impulse[0], 0, kill.impulse[2]];
  const settledEvent = await observer.next((m) => m.ev === 'settled' && m.entity === id, 20000).catch(() => null);
  const along = minus(headNow(), headBefore).reduce((s, x, i) => s + x * push[i], 0) / norm(push);
  assert.ok(along > 0.3, `the head moved ${along.toFixed(2)} m along the push: ` +
    `${JSON.stringify(headBefore)} -> ${JSON.stringify(headNow())}`);
  t.diagnostic(`the head fell to ${headNow()[1].toFixed(2)} m, ${along.toFixed(2)} m along the push`);
  if (settledEvent) {
    t.diagnostic(`kill to settled: ${((settledEvent.tick - ragdoll.tick) / sub.tick_hz).toFixed(2)} s of world time`);
    await until(() => hudRow(id), (r) => r?.settled === 'true' && /ragdoll, settled/.test(r.text), 3000,
      'the HUD to show it settled');
  } else {
    t.diagnostic('no settled event within 20 s; getting up anyway');
  }
  await twoFrames(page);
  await screenshot(page, 'ragdoll.png');

  // "Get up": getting_up, then animated after the blend, and on its feet.
  const n2 = sent.length;
  await page.click('#getup');
  const gettingUp = await stateEvent(id, 'getting_up', 5000);
  assert.ok(gettingUp, `no "getting_up" for #${id} (page sent ${JSON.stringify(sent.slice(n2))})`);
  const animated = await stateEvent(id, 'animated', 10000);
  assert.ok(animated, `no "animated" after getting up for #${id}`);
  const { reply: getup } = await replyTo('start_getup', n2, id);
  assert.ok(['getup_front', 'getup_back'].includes(getup.clip), JSON.stringify(getup));
  // The default blend is 0.4 s: 24 ticks at 60 Hz, give or take one.
  const blend = animated.tick - gettingUp.tick;
  assert.ok(blend >= 22 && blend <= 26, `blend of ${blend} ticks, expected ~24`);
  t.diagnostic(`get-up: ${getup.clip}, blend ${blend} ticks`);
  await until(() => hudRow(id), (r) => r?.state === 'animated' && r.clip === getup.clip, 3000,
    `the HUD to show animated, get-up ${getup.clip}`);
  await until(async () => headNow()[1], (y) => y > 1.4, 15000, 'the head back above 1.4 m');
  await twoFrames(page);
  await screenshot(page, 'getup.png');

  // A server error shows in the log (and throws nothing): only a ragdoll can get up.
  await page.click('#getup');
  await until(() => page.locator('#log').innerText(), (s) => /start_getup: bad_state/.test(s), 5000,
    'the bad_state error in the log');

  // "Partial: right arm" makes it partial; "none" ends it.
  const n3 = sent.length;
  await page.selectOption('#partial', 'arm_r');
  assert.ok(await stateEvent(id, 'partial', 5000), 'no "partial" state');
  const { cmd: partial, reply: partialOk } = await replyTo('set_partial', n3, id);
  assert.deepEqual(partial.bones, ['upper_arm_r']);
  assert.equal(partialOk.ok, true, JSON.stringify(partialOk));
  await until(() => hudRow(id), (r) => r?.state === 'partial', 3000, 'the HUD to show partial');
  const n4 = sent.length;
  await page.selectOption('#partial', 'none');
  assert.ok(await stateEvent(id, 'animated', 5000), 'no "animated" after partial none');
  assert.deepEqual((await replyTo('set_partial', n4, id)).cmd.bones, []);

  // "Active" sends the slider's gain with kd = 2√kp; "Limp" zeroes both.
  const n5 = sent.length;
  await page.click('#drive-active');
  const { cmd: active, reply: activeOk } = await replyTo('set_drive', n5, id);
  assert.equal(activeOk.ok, true, JSON.stringify(activeOk));
  assert.equal(active.kp, Number(await page.locator('#drive-kp').inputValue()));
  assert.ok(active.kp > 0 && Math.abs(active.kd - 2 * Math.sqrt(active.kp)) < 0.01, JSON.stringify(active));
  await until(() => page.getAttribute('#drive-active', 'aria-pressed'), (p) => p === 'true', 3000, 'Active pressed');
  const n6 = sent.length;
  await page.click('#drive-limp');
  const { cmd: limp, reply: limpOk } = await replyTo('set_drive', n6, id);
  assert.equal(limpOk.ok, true, JSON.stringify(limpOk));
  assert.deepEqual([limp.kp, limp.kd], [0, 0]);

  // "Add" stands a new humanoid on the ground (and selects it); "Throw ball"
  // sends a ball from the camera into the scene.
  const characters = () => latest().entities.filter((e) => e.kind === 'character').map((e) => e.entity);
  const known = new Set(characters());
  await page.click('#spawn-character');
  const added = await until(async () => characters().find((e) => !known.has(e)), Boolean, 5000, 'the added character');
  await until(async () => boneOf(latest(), added, 'pelvis')?.p[1], (y) => Math.abs(y - 0.96) < 0.15, 3000,
    'the added character standing, pelvis at ~0.96 m');
  assert.equal(entityOf(latest(), added).state, 'animated');
  await until(() => hook(() => window.__ragdolld.selection), (s) => s.length === 1 && s[0] === added, 3000,
    'the added character selected');
  // "Cape" dresses the selection: a cloth entity worn by it, drawn by the page.
  const n7 = sent.length;
  await page.click('#wear-cape');
  const { reply: caped } = await replyTo('attach_cloth', n7, added);
  assert.equal(caped.ok, true, JSON.stringify(caped));
  const cape = await until(async () => latest().entities.find((e) => e.entity === caped.entity), Boolean, 5000,
    'the cape in the snapshots');
  await until(() => hook(() => window.__ragdolld.drawn), (d) => d.includes(caped.entity), 5000, 'the cape drawn');
  const chest = boneOf(latest(), added, 'chest').p;
  const pins = cape.particles.slice(0, 10);
  assert.ok(pins.every((p) => dist(p, chest) < 0.35), `the cape's pinned row at the chest ${JSON.stringify(chest)}`);
  await page.click('#throw-ball');
  const ballIn = (snap) => snap.entities.find((e) => e.kind === 'ball');
  await until(async () => ballIn(latest()), Boolean, 5000, 'the ball');
  await sleep(200);
  // Its first two snapshots (2 ticks apart at 30 Hz): near the camera,
  // flying at the viewer's 14 m/s along the view.
  const [s1, s2] = observer.snapshots(world).filter(ballIn);
  const eye = await hook(() => window.__ragdolld.camera);
  const [b1, b2] = [ballIn(s1).p, ballIn(s2).p];
  assert.ok(dist(b1, eye) < 1.5, `the ball starts at the camera: ${JSON.stringify(b1)}, camera ${JSON.stringify(eye)}`);
  const speed = dist(b2, b1) / ((s2.tick - s1.tick) / sub.tick_hz);
  assert.ok(speed > 10 && speed < 16, `the ball flies at ${speed.toFixed(2)} m/s (${JSON.stringify([b1, b2])})`);
  assert.ok(dist(b2, eye) > dist(b1, eye), 'away from the camera');
  t.diagnostic(`ball: ${speed.toFixed(2)} m/s over its first ${s2.tick - s1.tick} ticks`);
  // "Drop soft body" drops a lattice 3 m above where the camera looks; it
  // falls, lands on the ground and is drawn.
  await page.click('#drop-softbody');
  const softIn = (snap) => snap.entities.find((e) => e.kind === 'softbody');
  const soft = await until(async () => softIn(latest())?.entity, Boolean, 5000, 'the soft body');
  const lowest = (e) => Math.min(...e.particles.map((p) => p[1]));
  const landed = await until(async () => lowest(entityOf(latest(), soft)), (y) => y < 0.3, 5000,
    'the soft body on the ground');
  await until(() => hook(() => window.__ragdolld.drawn), (d) => d.includes(soft), 3000, 'the soft body drawn');
  t.diagnostic(`soft body: lowest particle at ${landed.toFixed(3)} m`);
  // The wind slider sets the world's wind (set_params); "Tear at" makes the
  // ropes and cloths tearable (set_tear).
  const n8 = sent.length;
  const slide = (sel, value) => page.$eval(sel, (el, v) => {
    el.value = v;
    el.dispatchEvent(new Event('input', { bubbles: true }));
    el.dispatchEvent(new Event('change', { bubbles: true }));
  }, value);
  await slide('#param-wind', '12');
  const { cmd: windCmd, reply: windOk } = await replyTo('set_params', n8);
  assert.equal(windOk.ok, true, JSON.stringify(windOk));
  assert.deepEqual(windCmd.wind, [12, 0, 0]);
  const n9 = sent.length;
  await slide('#tear', '1.5');
  const { cmd: tearCmd, reply: tearOk } = await replyTo('set_tear', n9);
  assert.equal(tearOk.ok, true, JSON.stringify(tearOk));
  assert.equal(tearCmd.ratio, 1.5);
  await twoFrames(page);
  await screenshot(page, 'spawned.png');
}));

// ---------------------------------------------------------------------------
// Lighter tests: a server and a page, no observer.
// ---------------------------------------------------------------------------

// Starts a server (unless opts.server is false) and a browser page of
// opts.viewport, runs body({ page, server, sent, consoleText }), and tears
// everything down. sent: the commands the page sent; consoleText(): all
// the page printed to its console.
async function withPage(t, opts, body) {
  let server = null;
  let context = null;
  let profile = null;
  const pageErrors = [];
  const killServer = () => server?.proc.kill('SIGKILL');
  process.once('exit', killServer);
  try {
    if (opts.server !== false) server = await startServer(opts.serverArgs ?? []);
    profile = mkdtempSync(join(tmpdir(), 'rd-e2e-chromium-'));
    context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS,
      viewport: opts.viewport ?? VIEWPORT, timeout: 30000,
    });
    const page = context.pages()[0] ?? await context.newPage();
    page.setDefaultTimeout(15000);
    page.on('pageerror', (err) => pageErrors.push(err.message));
    const consoleLines = [];
    page.on('console', (m) => consoleLines.push(m.text()));
    const sent = [];
    page.on('websocket', (ws) => ws.on('framesent', (f) => {
      if (typeof f.payload === 'string') try { sent.push(JSON.parse(f.payload)); } catch { /* not ours */ }
    }));
    await body({ page, server, sent, consoleText: () => consoleLines.join('\n') });
    assert.deepEqual(pageErrors, [], 'no uncaught errors in the page');
    await context.close();
    context = null;
    if (server) {
      const code = await server.stop();
      assert.equal(code, 0, `ragdolld exited with ${code}: ${server.stderr()}`);
    }
  } finally {
    await bounded(context?.close());
    await bounded(server?.stop());
    process.removeListener('exit', killServer);
    if (profile) rmSync(profile, { recursive: true, force: true });
  }
}

// Whether the element's centre, scrolled into view within its column, is
// the element itself to the pointer (nothing covers it), and where.
const reachable = (page, sel) => page.evaluate((s) => {
  const el = document.querySelector(s);
  el.scrollIntoView({ block: 'nearest', inline: 'nearest' });
  const r = el.getBoundingClientRect();
  const [x, y] = [r.left + r.width / 2, r.top + r.height / 2];
  const top = document.elementFromPoint(x, y);
  const inside = x >= 0 && y >= 0 && x <= innerWidth && y <= innerHeight;
  return { ok: inside && r.width > 0 && (top === el || el.contains(top)), x, y, top: top ? `${top.tagName}#${top.id}` : null };
}, sel);

// The share of the window that panels cover (their rectangles, overlaps
// counted once, on a 10 px grid).
const panelCover = (page) => page.evaluate(() => {
  const rects = [...document.querySelectorAll('.panel')].map((p) => p.getBoundingClientRect())
    .filter((r) => r.width > 0 && r.height > 0);
  let covered = 0;
  let all = 0;
  for (let y = 5; y < innerHeight; y += 10) {
    for (let x = 5; x < innerWidth; x += 10) {
      all++;
      if (rects.some((r) => x >= r.left && x <= r.right && y >= r.top && y <= r.bottom)) covered++;
    }
  }
  return covered / all;
});

for (const size of [{ width: 800, height: 600 }, { width: 390, height: 844 }]) {
  const name = `${size.width}x${size.height}`;
  const phone = size.width <= 600;
  test(`viewer at ${name}: every control can be reached and the scene shows`, { timeout: 90000 },
    (t) => withPage(t, { viewport: size }, async ({ page, server, sent }) => {
      await page.goto(`${server.http}/`);
      await until(() => page.evaluate(() => window.__ragdolld.snapshots), (n) => n > 10, 15000, 'snapshots');
      await twoFrames(page);
      await screenshot(page, `layout-${name}.png`);

      // The scene shows: the middle of the window is the canvas, and the
      // panels (folded on a phone) cover well under half of it.
      const middle = await page.evaluate(() => document.elementFromPoint(innerWidth / 2, innerHeight / 2)?.id);
      assert.equal(middle, 'view', 'the canvas at the middle of the window');
      const cover = await panelCover(page);
      t.diagnostic(`${name}: panels cover ${(100 * cover).toFixed(0)} % of the window`);
      assert.ok(cover < (phone ? 0.35 : 0.6), `panels cover ${(100 * cover).toFixed(0)} % of the window`);

      // Every HUD value on one line.
      const wrapped = await page.evaluate(() => [...document.querySelectorAll('#hud-values dd')]
        .filter((dd) => dd.offsetParent !== null && dd.getBoundingClientRect().height > 24).map((dd) => dd.textContent));
      assert.deepEqual(wrapped, [], 'HUD values on more than one line');

      // The buttons that were covered (a click timed out): each is on top
      // at its centre, and a click with a short timeout goes through and
      // sends its command.
      for (const [sel, op] of [['#drop', 'spawn_ragdoll'], ['#throw-ball', 'spawn_ball'],
        ['#drop-softbody', 'spawn_softbody'], ['#spawn-character', 'spawn_character']]) {
        const r = await reachable(page, sel);
        assert.ok(r.ok, `${sel} is covered at its centre (${r.x}, ${r.y}) by ${r.top}`);
        const n = sent.length;
        await page.click(sel, { timeout: 10000 });
        await until(async () => sent.slice(n).find((c) => c.op === op), Boolean, 3000, `${sel} to send ${op}`);
      }

      // Folded panels open at their header; then their controls are
      // reachable too (the column scrolls where it must).
      for (const [details, inner] of [['#params-details', '#param-friction'], ['#character-details', '#getup'],
        ['#hud-details', '#hud-values']]) {
        if (!(await page.evaluate((d) => document.querySelector(d).open, details))) {
          await page.click(`${details} > summary`, { timeout: 10000 });
        }
        const r = await reachable(page, inner);
        assert.ok(r.ok, `${inner} is covered at its centre (${r.x}, ${r.y}) by ${r.top}`);
      }
      await page.click('#getup', { trial: true, timeout: 10000 });
      await page.click('#drive-limp', { trial: true, timeout: 10000 });
      await twoFrames(page);
      await screenshot(page, `layout-${name}-open.png`);

      if (!phone) {
        // The snapshot rate survives a stalled page: 1.5 s of a blocked
        // main thread, then the snapshots of the stall arrive at once
        // (counting arrivals over one second read 55 on a 30 Hz
        // subscription). The HUD counts them by their ticks: about 30.
        await page.evaluate(() => { const t0 = performance.now(); while (performance.now() - t0 < 1500); });
        const seen = [];
        for (let i = 0; i < 6; i++) {
          await sleep(250);
          seen.push(await page.evaluate(() => [...document.querySelectorAll('#hud-values dt')]
            .find((dt) => dt.textContent === 'snapshots/s').nextElementSibling.textContent));
        }
        t.diagnostic(`snapshots/s after a stall: ${seen.join(' | ')}`);
        for (const text of seen.slice(1)) {
          const n = parseInt(text, 10);
          assert.ok(n >= 20 && n <= 33, `snapshots/s ${text} on a 30 Hz subscription (all: ${seen.join(' | ')})`);
        }
      }
    }));
}

const TOKEN = 'Viewer.Token_0123456789~abc-XYZ';
const tokenDir = mkdtempSync(join(tmpdir(), 'rd-e2e-tokens-'));
const authFile = join(tokenDir, 'tokens');
writeFileSync(authFile, `${TOKEN} viewer\n`);

test('viewer watches a server with access control with the token from its URL fragment', { timeout: 90000 },
  (t) => withPage(t, { serverArgs: ['--auth-file', authFile] }, async ({ page, server, consoleText }) => {
    const urls = [];
    page.on('request', (r) => urls.push(r.url()));
    // A wrong token: ragdolld refuses the upgrade (401), and the page says
    // what to check (a browser cannot see the status; /healthz tells a
    // refusal from a server that is down). It keeps retrying.
    const wrong = 'Wrong.Token_0123456789~abc-XYZ';
    await page.goto(`${server.http}/?world=1#token=${wrong}`);
    const text = await until(() => page.evaluate(() => window.__ragdolld.notice), Boolean, 10000, 'a notice');
    assert.match(text, /^connection refused: check the token in the page URL \(#token=…\)$/);
    assert.ok(!text.includes(wrong));
    await until(() => page.locator('#conn').textContent(), (b) => /^refused · retry \d+\.\d s$/.test(b), 10000,
      'the badge to say refused');
    await twoFrames(page);
    await screenshot(page, 'refused.png');

    // The right one, same origin: the page connects and shows the world.
    await page.goto('about:blank'); // a new fragment alone would not load the page again
    await page.goto(`${server.http}/#token=${TOKEN}`);
    await until(() => page.evaluate(() => window.__ragdolld.snapshots), (n) => n > 5, 15000, 'snapshots with the token');
    assert.equal(await page.evaluate(() => window.__ragdolld.notice), null);
    assert.equal(await page.locator('#conn').textContent(), 'connected');

    // No token at all: this server lets nobody in without one.
    await page.goto('about:blank');
    await page.goto(`${server.http}/`);
    await until(() => page.evaluate(() => window.__ragdolld.notice), Boolean, 10000, 'a notice without a token');

    // A malformed token: said so, and no connection is tried.
    await page.goto('about:blank');
    await page.goto(`${server.http}/#token=not%20a%20token`);
    const bad = await until(() => page.evaluate(() => window.__ragdolld.notice), Boolean, 5000, 'a notice');
    assert.match(bad, /is not a token/);

    for (const u of urls) assert.ok(!u.includes(TOKEN) && !u.includes(wrong), `a token in a request URL: ${u}`);
    assert.ok(!consoleText().includes(TOKEN), 'the token on the console');
    assert.ok(!server.stderr().includes(TOKEN) && !server.stderr().includes(wrong), 'a token in the log');
  }));

test('viewer says so when ?world=N names no world, and shows no other', { timeout: 90000 },
  (t) => withPage(t, {}, async ({ page, server, sent }) => {
    await page.goto(`${server.http}/?world=7`);
    const text = await until(() => page.evaluate(() => window.__ragdolld.notice), Boolean, 10000, 'a notice');
    assert.equal(text, 'no world 7 on this server: it has 1 (demo); open ?world=1');
    const hud = await hudCells(page);
    assert.equal(hud.world, 'no world 7');
    await sleep(1500);
    // It asked for world 7 and nothing else, and shows nothing.
    assert.deepEqual(sent.filter((c) => c.op === 'subscribe').map((c) => c.world), [7]);
    assert.equal(await page.evaluate(() => window.__ragdolld.world), null);
    assert.equal(await page.evaluate(() => window.__ragdolld.snapshots), 0);
    assert.equal(await page.locator('#drop').isDisabled(), true);
    await twoFrames(page);
    await screenshot(page, 'no-world.png');

    // Not a number at all: said so, nothing sent.
    const n = sent.length;
    await page.goto(`${server.http}/?world=demo`);
    const bad = await until(() => page.evaluate(() => window.__ragdolld.notice), Boolean, 5000, 'a notice');
    assert.match(bad, /^\?world=demo is not a world id/);
    await sleep(500);
    assert.equal(sent.length, n);

    // The world that is there still works by number.
    await page.goto(`${server.http}/?world=1`);
    await until(() => page.evaluate(() => window.__ragdolld.snapshots), (k) => k > 0, 15000, 'snapshots of world 1');
    assert.equal(await page.evaluate(() => window.__ragdolld.notice), null);
  }));
