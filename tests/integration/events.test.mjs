// Gameplay events (issue 14, item 3) against a real ragdolld: impacts for
// the subscriptions that ask for them.
//
// A 0.2 m ball let go with its bottom 2 m above the ground (bounciness 0)
// strikes it at √(2gh) = √(2 · 9.81 · 2) = 6.26 m/s: one impact, within 5 %.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Client, startServer, sleep } from '../lib/ragdolld.mjs';

let server;
before(async () => { server = await startServer(['--no-demo']); });
after(async () => { assert.equal(await server.stop(), 0, 'ragdolld exits cleanly on SIGTERM'); });

const impactsOf = (c, world) => c.messages.filter((m) => m.ev === 'impacts' && m.world === world);

test('a dropped ball: one impact at sqrt(2gh) to the subscriptions that asked, nothing to the others', async () => {
  const c = await Client.connect(server.url);
  const w = (await c.send({ op: 'create_world', name: 'drop' })).world;
  assert.equal((await c.send({ op: 'set_params', world: w, bounciness: 0 })).ok, true);
  const loud = await Client.connect(server.url);
  const quiet = await Client.connect(server.url);
  const picky = await Client.connect(server.url);
  assert.equal((await loud.send({ op: 'subscribe', world: w, format: 'binary', events: ['impact'] })).ok, true);
  assert.equal((await quiet.send({ op: 'subscribe', world: w })).ok, true);
  assert.equal((await picky.send({ op: 'subscribe', world: w, events: ['impact'], impact_speed: 7 })).ok, true);
  const ball = await c.send({ op: 'spawn_ball', world: w, position: [1, 2.2, -2], radius: 0.2 });
  assert.equal(ball.ok, true);
  await sleep(2000); // the fall takes 0.64 s
  const got = impactsOf(loud, w);
  assert.equal(got.length, 1, JSON.stringify(got));
  const [e] = got;
  assert.equal(e.impacts.length, 1);
  const hit = e.impacts[0];
  const v = Math.sqrt(2 * 9.81 * 2);
  assert.ok(Math.abs(hit.speed - v) < 0.05 * v, `struck at ${hit.speed} m/s, √(2gh) = ${v.toFixed(3)}`);
  assert.equal(hit.entity, ball.entity);
  assert.equal(hit.with, 'ground');
  assert.equal(hit.bone, undefined, 'a ball has no bone');
  assert.deepEqual(hit.normal, [0, 1, 0]);
  assert.ok(Math.abs(hit.point[0] - 1) < 0.01 && Math.abs(hit.point[2] + 2) < 0.01);
  assert.ok(e.tick > ball.tick + 30 && e.tick < ball.tick + 45, `at tick ${e.tick}, spawned at ${ball.tick}`);
  assert.equal(impactsOf(quiet, w).length, 0, 'not asked for: not sent');
  assert.equal(impactsOf(picky, w).length, 0, 'slower than its impact_speed: not sent');
  for (const x of [c, loud, quiet, picky]) await x.close();
});

test('a character killed onto the ground names the bones that struck it', async () => {
  const c = await Client.connect(server.url);
  const w = (await c.send({ op: 'create_world', name: 'fall' })).world;
  assert.equal((await c.send({ op: 'subscribe', world: w, events: ['impact'], impact_speed: 0.5 })).ok, true);
  const hero = await c.send({ op: 'spawn_character', world: w, position: [0, 0, 0] });
  await c.send({ op: 'kill', world: w, entity: hero.entity, hit_point: [0, 1.5, 0], impulse: [0, 0, 40] });
  await sleep(2500);
  const all = impactsOf(c, w).flatMap((e) => e.impacts);
  assert.ok(all.length >= 3, `${all.length} impacts`);
  assert.ok(all.every((m) => m.entity === hero.entity && typeof m.bone === 'string'));
  assert.ok(all.some((m) => m.with === 'ground'));
  for (const e of impactsOf(c, w)) {
    assert.ok(e.impacts.length <= 32);
    assert.ok(e.impacts.every((m, i) => i === 0 || m.speed <= e.impacts[i - 1].speed), 'fastest first');
    assert.ok(e.impacts.every((m) => m.speed >= 0.5));
  }
  await c.close();
});

test('a hard blow: the ragdoll\'s joints slamming into their limits, to the subscription that asked', async () => {
  const c = await Client.connect(server.url);
  const w = (await c.send({ op: 'create_world', name: 'limits' })).world;
  const other = await Client.connect(server.url);
  assert.equal((await c.send({ op: 'subscribe', world: w, events: ['joint_limit', 'impact'] })).ok, true);
  assert.equal((await other.send({ op: 'subscribe', world: w, events: ['impact'] })).ok, true);
  const hero = await c.send({ op: 'spawn_character', world: w, position: [0, 0, 0] });
  await sleep(100);
  await c.send({ op: 'kill', world: w, entity: hero.entity, hit_point: [0.2, 1.2, 0], impulse: [-150, 60, 80] });
  await sleep(2500);
  const events = c.messages.filter((m) => m.ev === 'limit_hits' && m.world === w);
  const hits = events.flatMap((e) => e.hits);
  assert.ok(hits.length >= 2, `${hits.length} limit hits`);
  const bones = new Set(['spine', 'chest', 'head', 'upper_arm_l', 'lower_arm_l', 'hand_l', 'upper_arm_r',
    'lower_arm_r', 'hand_r', 'upper_leg_l', 'lower_leg_l', 'foot_l', 'upper_leg_r', 'lower_leg_r', 'foot_r']);
  for (const h of hits) {
    assert.equal(h.entity, hero.entity);
    assert.ok(bones.has(h.bone), `a joint's bone, not ${h.bone}`); // the pelvis has no joint
    assert.ok(['twist_max', 'twist_min', 'swing'].includes(h.limit));
    assert.ok(h.speed >= 1, `${h.speed} rad/s`);
  }
  for (const e of events) {
    assert.ok(e.hits.every((h, i) => i === 0 || h.speed <= e.hits[i - 1].speed), 'fastest first');
  }
  assert.equal(other.messages.filter((m) => m.ev === 'limit_hits').length, 0, 'not asked for: not sent');
  await other.close();
  await c.close();
});

test('bad events and thresholds are refused and nothing is subscribed', async () => {
  const c = await Client.connect(server.url);
  const w = (await c.send({ op: 'create_world', name: 'bad' })).world;
  for (const [extra, code, re] of [
    [{ events: ['boom'] }, 'bad_request', /may list "impact" or "joint_limit", not "boom"/],
    [{ events: 'impact' }, 'bad_request', /array of strings/],
    [{ events: [1] }, 'bad_request', /array of strings/],
    [{ events: Array(9).fill('impact') }, 'out_of_range', /at most 8/],
    [{ impact_speed: 0.1 }, 'out_of_range', /impact_speed/],
    [{ impact_speed: 'fast' }, 'bad_request', /impact_speed/],
  ]) {
    const r = await c.send({ op: 'subscribe', world: w, ...extra });
    assert.equal(r.error?.code, code, `${JSON.stringify(extra)} → ${JSON.stringify(r)}`);
    assert.match(r.error.message, re);
  }
  const inf = await c.sendRaw(`{"op":"subscribe","id":99,"world":${w},"impact_speed":1e999}`);
  assert.equal(inf.error?.code, 'not_finite', JSON.stringify(inf));
  // PROTOCOL.md §2's order: an unknown name (a shape error) before a
  // non-finite number or a list too long.
  const both = await c.sendRaw(`{"op":"subscribe","id":98,"world":${w},"impact_speed":1e999,"events":["x"]}`);
  assert.equal(both.error?.code, 'bad_request', JSON.stringify(both));
  const many = await c.send({ op: 'subscribe', world: w, events: Array(9).fill('bogus') });
  assert.equal(many.error?.code, 'bad_request', JSON.stringify(many));
  await sleep(300);
  assert.equal(c.snapshots(w).length, 0, 'no subscription was made');
  await c.close();
});
