// Browser test of the viewer (clients/web): a real ragdolld serves the page,
// headless Chromium (Debian's, through playwright-core) renders it with
// WebGL2 on SwiftShader, and a scripted mouse drag must move a ragdoll's
// particle in the world, as seen by a separate JSON subscription. Along the
// way: snapshot flow, slider sync both ways, the drop button, orbiting, and a
// clean server exit.
//
//   RAGDOLLD=build/server/app/ragdolld RD_WEB_ROOT=build/web node --test tests/e2e/
//
// A screenshot goes to $RD_ARTIFACTS/viewer.png (default test-artifacts/).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
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

test('viewer renders the world and throws a ragdoll by mouse', { timeout: 60000 }, async (t) => {
  let server = null;
  let context = null;
  let observer = null;
  let profile = null;
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
    // The commands the page sends, to tell a missed grab from a weak pull.
    const sent = [];
    page.on('websocket', (ws) => ws.on('framesent', (f) => {
      try { sent.push(JSON.parse(f.payload)); } catch { /* not ours */ }
    }));
    page.setDefaultTimeout(15000);

    await page.goto(`${server.http}/`);
    const first = await page.waitForFunction(() => window.__ragdolld?.snapshots > 0);
    await first.dispose();
    const t0 = Date.now();
    const n0 = await page.evaluate(() => window.__ragdolld.snapshots);

    assert.equal(await page.evaluate(() => window.__ragdolld.webgl2), true, 'WebGL2 context');

    // Snapshots keep coming: ~60 at 30 Hz in 2 s; ask for a quarter.
    await sleep(2000 - (Date.now() - t0));
    const n1 = await page.evaluate(() => window.__ragdolld.snapshots);
    assert.ok(n1 - n0 >= 15, `only ${n1 - n0} snapshots in 2 s`);

    // The observer: a plain JSON subscription to the page's world.
    const world = await page.evaluate(() => window.__ragdolld.world);
    assert.equal(typeof world, 'number');
    observer = await Client.connect(server.url);
    const sub = await observer.send({ op: 'subscribe', world, format: 'json', rate_hz: 30 });
    assert.equal(sub.ok, true, JSON.stringify(sub));
    const latest = () => observer.snapshots(world).at(-1);
    await until(async () => latest(), Boolean, 5000, 'a snapshot for the observer');

    // A parameter change made by another client must reach the page's
    // sliders. Full friction also settles the ragdolls sooner for aiming.
    const calm = await observer.send({ op: 'set_params', world, friction: 1 });
    assert.equal(calm.ok, true, JSON.stringify(calm));
    await until(() => page.locator('#param-friction').inputValue(), (v) => Number(v) === 1, 5000,
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
    // observer), clear of the panels, not under a platform, and alone on
    // screen so the viewer's pick cannot take a neighbour instead; head,
    // pelvis or chest if possible.
    const particleOf = (snap, entity, i) => snap.entities.find((e) => e.entity === entity)?.particles[i];
    async function chooseTarget() {
      const snaps = observer.snapshots(world);
      const [old, cur] = [snaps.at(-10), snaps.at(-1)];
      const dt = (cur.tick - old.tick) / sub.tick_hz;
      const points = await page.evaluate(() => {
        const out = [];
        for (const [entity, e] of window.__ragdolld.entities) {
          for (let particle = 0; particle < e.particles.length; particle++) {
            const s = window.__ragdolld.screenOf(entity, particle);
            if (s) out.push({ entity, kind: e.kind, particle, x: s.x, y: s.y });
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
      const still = inView.filter((p) => speed(p) < 0.6);
      const candidates = still.map((p) => ({ ...p, room: room(p) })).filter((p) => p.room > 6);
      const preferred = [0, 3, 2]; // head, pelvis, chest
      return {
        target: candidates.find((p) => preferred.includes(p.particle) && p.room > 15) ??
          candidates.sort((p, q) => q.room - p.room)[0],
        why: `${ragdolls.length} ragdoll particles, ${inView.length} in view, ` +
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
    // On screen, the held particle is drawn under the pointer. (Two frames
    // first: software rendering is slow, the last one may be old.)
    const pointer = { x: start.x + dx, y: start.y + dy };
    await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
    const drawn = await drawnAt(target);
    mkdirSync(ARTIFACTS, { recursive: true });
    await page.screenshot({ path: join(ARTIFACTS, 'viewer.png') });
    await page.mouse.up();

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
    await until(async () => latest().entities.filter((e) => e.kind === 'ragdoll').length, (n) => n === ragdollIds.length + 1,
      5000, 'the dropped ragdoll');

    // Dragging empty space orbits the camera (and grabs nothing). "Empty":
    // the spot of a few, away from the panels, farthest from every particle.
    const all = await page.evaluate(() => [...window.__ragdolld.entities].flatMap(([id, e]) =>
      e.particles.map((_, i) => window.__ragdolld.screenOf(id, i)).filter(Boolean)));
    const clearance = ([x, y]) => Math.min(...all.map((q) => Math.hypot(q.x - x, q.y - y)));
    const [ox, oy] = [[640, 60], [420, 320], [860, 320], [420, 660], [860, 660]]
      .sort((a, b) => clearance(b) - clearance(a))[0];
    assert.ok(clearance([ox, oy]) > 40, 'an empty spot to orbit from');
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
    assert.ok(!sent.slice(sentBefore).some((c) => c.op === 'drag'), 'orbiting sent no drag');

    // Another client destroys the world: the page says so and shows none
    // of it any more (there is no other world to move to).
    assert.equal((await observer.send({ op: 'destroy_world', world })).ok, true);
    const hudText = () => page.evaluate(() => [...document.querySelectorAll('#hud-values dd')].map((d) => d.textContent));
    const gone = await until(hudText, (cells) => cells[0] === `${world} destroyed` && cells[1] === '–', 5000,
      'the HUD to say the world was destroyed');
    assert.equal(gone[7], '–', `entities after the destroy: ${gone}`);
    assert.equal(await page.evaluate(() => window.__ragdolld.world), null);
    assert.equal(await page.evaluate(() => window.__ragdolld.entities.size), 0);
    assert.equal(await page.evaluate((id) => window.__ragdolld.screenOf(id, 0), rope.entity), null,
      'the rope is no longer drawn');

    assert.deepEqual(pageErrors, [], 'no uncaught errors in the page');

    // After all that the server still shuts down cleanly (under ASan this
    // also means no leak or memory error on its side).
    await observer.close();
    observer = null;
    await context.close();
    context = null;
    const code = await server.stop();
    assert.equal(code, 0, `ragdolld exited with ${code}: ${server.stderr()}`);
  } finally {
    await bounded(observer?.close());
    await bounded(context?.close());
    await bounded(server?.stop());
    process.removeListener('exit', killServer);
    if (profile) rmSync(profile, { recursive: true, force: true });
  }
});
