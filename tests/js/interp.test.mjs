// The JavaScript client's interpolation buffer (clients/js/src/interp.js),
// against values worked out by hand, as rdc's (tests/unit/test_rdc.c): a
// 60 Hz world sent at 30 Hz, a ball at x = 0.1 t turning 0.05 t rad about
// +Y at tick t.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Interpolator, slerp } from '../../clients/js/src/index.js';

const PERIOD = 1000 / 60;
const ball = (t) => ({
  world: 3, tick: t,
  entities: [{ entity: 7, kind: 'ball', p: [0.1 * t, 1, 0], q: [0, Math.sin(0.025 * t), 0, Math.cos(0.025 * t)] }],
});
const close = (a, b, tol, what) => assert.ok(Math.abs(a - b) < tol, `${what}: ${a} is not ${b}`);

test('draws the ball where it was two send intervals ago, between the two snapshots around then', () => {
  const ip = new Interpolator(60, 30);
  assert.equal(ip.sample(0), null);
  for (let t = 0; t <= 10; t += 2) ip.push(ball(t), 50 + t * PERIOD); // 50 ms late, no jitter
  const now = 50 + 10 * PERIOD;
  let { snapshot, info } = ip.sample(now);
  close(info.jitterMs, 0, 1e-9, 'jitter');
  close(info.delayMs, 2000 / 30, 1e-9, 'delay');
  close(info.renderTick, 6, 1e-9, 'render tick');
  close(snapshot.entities[0].p[0], 0.6, 1e-9, 'x at tick 6');
  ({ snapshot, info } = ip.sample(now + PERIOD)); // tick 7: half way from 6 to 8
  assert.equal(info.tickA, 6);
  assert.equal(info.tickB, 8);
  close(info.alpha, 0.5, 1e-9, 'alpha');
  const e = snapshot.entities[0];
  close(e.p[0], 0.7, 1e-9, 'x at tick 7');
  close(2 * Math.atan2(e.q[1], e.q[3]), 0.35, 1e-9, 'angle at tick 7');
  // Time on screen never runs back, and past the newest it holds.
  ({ info } = ip.sample(now));
  close(info.renderTick, 7, 1e-9, 'no step back');
  ({ snapshot, info } = ip.sample(now + 500));
  assert.equal(info.held, true);
  close(snapshot.entities[0].p[0], 1.0, 1e-9, 'held at the newest');
  // A late duplicate is ignored; a tick older than every one kept (a
  // restarted server) starts afresh.
  ip.push(ball(4), now + 600);
  assert.equal(ip.sample(now + 600).info.tickB, 10);
  const two = new Interpolator(60, 30, 2); // keeps ticks 10 and 12, then the server restarts
  two.push(ball(10), 0);
  two.push(ball(12), 40);
  two.push(ball(0), 90);
  ({ snapshot, info } = two.sample(100));
  assert.equal(info.tickB, 0);
  close(snapshot.entities[0].p[0], 0, 1e-9, 'the new timeline');
  two.push(ball(300), 2000); // ticks past the old ones, where ~120 was due: afresh
  ({ info } = two.sample(2000));
  assert.equal(info.tickA, 300);
  assert.equal(info.held, false);
});

test('the delay follows the jitter (RFC 3550: J += (|D| - J)/16)', () => {
  const ip = new Interpolator(60, 30, 8);
  const n = 80;
  for (let i = 0; i <= n; i++) ip.push(ball(2 * i), 2 * i * PERIOD + (i % 2 ? 6 : 0));
  const { info } = ip.sample(2 * n * PERIOD);
  const want = 6 * (1 - (15 / 16) ** n);
  close(info.jitterMs, want, 1e-9, 'jitter');
  close(info.delayMs, 2000 / 30 + want, 1e-9, 'delay');
});

test('slerp: the shorter way, unit length, the ends exact', () => {
  const a = [0, 0, 0, 1];
  const b = [0, Math.sin(0.5), 0, Math.cos(0.5)]; // 1 rad about +Y
  const m = slerp(a, b, 0.5);
  close(2 * Math.atan2(m[1], m[3]), 0.5, 1e-12, 'half way');
  const neg = slerp(a, b.map((x) => -x), 0.5); // the same rotation, other sign
  close(Math.abs(2 * Math.atan2(neg[1], neg[3])), 0.5, 1e-12, 'the shorter way');
  close(Math.hypot(...m), 1, 1e-12, 'unit');
  assert.throws(() => new Interpolator(0, 30), RangeError);
});
