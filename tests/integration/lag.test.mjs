// Lag compensation and raycast (issue 14, item 1) against a real ragdolld.
//
// A humanoid walks along +Z at the walk clip's 1.2 m/s (assets/clips/
// humanoid_walk.json). A client that answers 100 ms after a snapshot (its
// added latency) aims a ray, side on along +X, at the head's centre as that
// snapshot showed it. By the time the ray is judged the head has walked on
// at least 1.2 m/s × 0.1 s = 0.12 m (the test also waits for 8 ticks of
// world time, 0.16 m), more than its 0.10 m radius
// (assets/skeletons/humanoid.json): judged now, the ray passes behind it;
// judged at the snapshot's tick (seen_tick), it meets the head's capsule
// at its side, 0.10 m short of the centre.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, startServer, sleep } from '../lib/ragdolld.mjs';

let server;
before(async () => { server = await startServer(['--no-demo', '--lag-history', '300']); });
after(async () => { assert.equal(await server.stop(), 0, 'ragdolld exits cleanly on SIGTERM'); });

const HEAD_RADIUS = 0.1; // humanoid.json
const WALK_SPEED = 1.2; // humanoid_walk.json, m/s along the character's facing (+Z)
const LATENCY_MS = 100;

async function walkingWorld(c, name) {
  const w = await c.send({ op: 'create_world', name });
  assert.equal(w.ok, true, JSON.stringify(w));
  const s = await c.send({ op: 'spawn_character', world: w.world, position: [0, 0, 0], clip: 'walk' });
  assert.equal(s.ok, true, JSON.stringify(s));
  const sub = await c.send({ op: 'subscribe', world: w.world, rate_hz: 60 });
  assert.equal(sub.ok, true);
  return { world: w.world, hero: s.entity };
}

// The next snapshot to arrive (those collected before are dropped).
function freshSnapshot(c, world) {
  c.messages = c.messages.filter((m) => m.ev !== 'snapshot');
  return c.next((m) => m.ev === 'snapshot' && m.world === world);
}

// The head of `hero` in the next snapshot after `after` ms of walking.
async function seenHead(c, world, hero, afterMs = 500) {
  await sleep(afterMs);
  const snap = await freshSnapshot(c, world);
  const e = snap.entities.find((x) => x.entity === hero);
  const head = e.bones.find((b) => b.name === 'head');
  return { tick: snap.tick, p: head.p };
}

const ray = (world, p, extra = {}) => ({
  op: 'raycast', world, origin: [p[0] - 2, p[1], p[2]], direction: [1, 0, 0], max_distance: 5, ...extra,
});

test('a ray at the head a client saw 100 ms ago hits it with seen_tick and misses it without', async () => {
  const c = await Client.connect(server.url);
  const { world, hero } = await walkingWorld(c, 'lag-ray');
  for (let round = 0; round < 3; ++round) {
    const seen = await seenHead(c, world, hero, round === 0 ? 500 : 200);
    await sleep(LATENCY_MS); // the client's added latency
    // And at least 8 ticks of world time (133 ms: 0.16 m of walking) for a
    // server whose ticks lag the wall clock on a loaded machine.
    await c.next((m) => m.ev === 'snapshot' && m.world === world && m.tick >= seen.tick + 8);
    const [judged, now] = await Promise.all([
      c.send(ray(world, seen.p, { seen_tick: seen.tick })),
      c.send(ray(world, seen.p)),
    ]);
    assert.equal(judged.ok, true, JSON.stringify(judged));
    assert.equal(judged.seen_tick, seen.tick, 'judged at the tick it saw');
    assert.equal(judged.clamped, false);
    assert.ok(judged.hit, 'it hits something');
    assert.equal(judged.hit.kind, 'bone');
    assert.equal(judged.hit.entity, hero);
    assert.equal(judged.hit.bone, 'head');
    // Side on through the centre: the capsule's side, its radius short of
    // the centre (the snapshot's positions are rounded to 0.1 mm).
    assert.ok(Math.abs(judged.hit.point[0] - (seen.p[0] - HEAD_RADIUS)) < 2e-3, JSON.stringify(judged.hit));
    assert.ok(Math.abs(judged.hit.distance - (2 - HEAD_RADIUS)) < 2e-3);
    assert.ok(judged.hit.normal[0] < -0.999, `normal ${judged.hit.normal}`);
    // Judged now, the head has walked on past its radius.
    assert.equal(now.ok, true);
    assert.ok(now.tick - seen.tick >= 8, `${now.tick - seen.tick} ticks on`);
    assert.ok(now.hit === null || now.hit.bone !== 'head',
      `without seen_tick the ray misses the head: ${JSON.stringify(now.hit)} (walked ${((now.tick - seen.tick) / 60 * WALK_SPEED).toFixed(3)} m)`);
  }
  await c.close();
});

test('a kill at the head a client saw, with seen_tick, strikes the head now and throws it along the impulse', async () => {
  const c = await Client.connect(server.url);
  const { world, hero } = await walkingWorld(c, 'lag-kill');
  const seen = await seenHead(c, world, hero);
  await sleep(LATENCY_MS);
  const r = await c.send({ op: 'kill', world, entity: hero, hit_point: seen.p, impulse: [60, 0, 0], seen_tick: seen.tick });
  assert.equal(r.ok, true, JSON.stringify(r));
  assert.equal(r.bone, 'head');
  assert.equal(r.seen_tick, seen.tick);
  assert.equal(r.clamped, false);
  // 60 N·s on the 77 kg body, on its head: the head leads along +X.
  const at = await c.next((m) => m.ev === 'snapshot' && m.tick === r.tick);
  const head0 = at.entities.find((x) => x.entity === hero).bones.find((b) => b.name === 'head').p;
  await sleep(300);
  const later = await freshSnapshot(c, world);
  const bones = later.entities.find((x) => x.entity === hero).bones;
  const head1 = bones.find((b) => b.name === 'head').p;
  assert.ok(head1[0] - head0[0] > 0.15, `the head moved ${(head1[0] - head0[0]).toFixed(3)} m along +X`);
  assert.equal(later.entities.find((x) => x.entity === hero).state, 'ragdoll');
  await c.close();
});

test('seen_tick: older than the history is clamped to the oldest kept, a future one is refused, nothing changes', async () => {
  const c = await Client.connect(server.url);
  const { world, hero } = await walkingWorld(c, 'lag-bounds');
  const seen = await seenHead(c, world, hero);
  const old = await c.send(ray(world, seen.p, { seen_tick: 0 }));
  assert.equal(old.ok, true, JSON.stringify(old));
  assert.equal(old.clamped, true);
  // 300 ms at 60 Hz: the oldest kept is at most 19 ticks behind the world.
  assert.ok(old.tick - old.seen_tick <= 19 && old.seen_tick > 0, `${old.seen_tick} of ${old.tick}`);
  const future = await c.send(ray(world, seen.p, { seen_tick: seen.tick + 100000 }));
  assert.equal(future.error.code, 'out_of_range');
  assert.match(future.error.message, /seen_tick \d+ is after the world's tick/);
  const kill = await c.send({ op: 'kill', world, entity: hero, hit_point: seen.p, impulse: [0, 0, 10], seen_tick: 1e15 });
  assert.equal(kill.error.code, 'out_of_range');
  const d = await c.send({ op: 'describe', world, entity: hero });
  assert.equal(d.state, 'animated', 'a refused kill killed nobody');
  // Bad rays and bad seen_ticks, each a clear error.
  for (const [cmd, code] of [
    [{ op: 'raycast', world, origin: [0, 1, 0], direction: [0, 0, 0] }, 'out_of_range'],
    [{ op: 'raycast', world, origin: [0, 1, 0], direction: [1, 0, 0], max_distance: 0 }, 'out_of_range'],
    [{ op: 'raycast', world, origin: [0, 1, 0], direction: [1, 0, 0], max_distance: 1e9 }, 'out_of_range'],
    [{ op: 'raycast', world, origin: [0, 1, 0], direction: [1, 0, 0], max_distance: '5' }, 'bad_request'],
    [{ op: 'raycast', world, origin: [0, 2000, 0], direction: [1, 0, 0] }, 'out_of_range'],
    [{ op: 'raycast', world, origin: [0, 1], direction: [1, 0, 0] }, 'bad_request'],
    [{ op: 'raycast', world, direction: [1, 0, 0] }, 'bad_request'],
    [{ op: 'raycast', world, origin: [0, 1, 0], direction: [1, 0, 0], seen_tick: -1 }, 'bad_request'],
    [{ op: 'raycast', world, origin: [0, 1, 0], direction: [1, 0, 0], seen_tick: 1.5 }, 'bad_request'],
    [{ op: 'raycast', world: 999999, origin: [0, 1, 0], direction: [1, 0, 0] }, 'not_found'],
    [{ op: 'kill', world, entity: hero, hit_point: seen.p, impulse: [0, 0, 1], bone: 'tail' }, 'not_found'],
  ]) {
    const r = await c.send(cmd);
    assert.equal(r.error?.code, code, `${JSON.stringify(cmd)} → ${JSON.stringify(r)}`);
    assert.ok(r.error.message.length > 10);
  }
  assert.equal((await c.send({ op: 'describe', world, entity: hero })).state, 'animated');
  // Any non-zero direction, however short; any distance in (0, 4000].
  const tiny = await c.send({ op: 'raycast', world, origin: [5, 3, 5], direction: [0, -1e-300, 0] });
  assert.equal(tiny.hit?.kind, 'ground', JSON.stringify(tiny));
  const short = await c.send({ op: 'raycast', world, origin: [5, 3, 5], direction: [0, -1, 0], max_distance: 1e-300 });
  assert.equal(short.ok, true, JSON.stringify(short));
  assert.equal(short.hit, null);
  const zero = await c.send({ op: 'raycast', world, origin: [5, 3, 5], direction: [0, 0, 0] });
  assert.match(zero.error.message, /direction.*must not be \[0, 0, 0\]/);
  const outside = await c.send({ op: 'raycast', world, origin: [0, 2000, 0], direction: [0, -1, 0] });
  assert.match(outside.error.message, /origin.*outside/);
  // An impulse with a seen_tick on a ball spawned after that tick: judged
  // now, and said so.
  const before = (await c.send({ op: 'raycast', world, origin: [5, 3, 5], direction: [0, -1, 0] })).tick;
  const ball = await c.send({ op: 'spawn_ball', world, position: [8, 1, 8] });
  const push = await c.send({ op: 'apply_impulse', world, entity: ball.entity, impulse: [1, 0, 0], seen_tick: before });
  assert.equal(push.ok, true, JSON.stringify(push));
  assert.equal(push.clamped, true, JSON.stringify(push));
  assert.ok(push.seen_tick > before);
  // A ray straight down from above the ground hits it at y = 0.
  const down = await c.send({ op: 'raycast', world, origin: [5, 3, 5], direction: [0, -1, 0] });
  assert.deepEqual(down.hit, { kind: 'ground', point: [5, 0, 5], normal: [0, 1, 0], distance: 3 });
  await c.close();
});

test('a viewer may cast rays but not kill', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rd-lag-'));
  const authFile = join(dir, 'tokens');
  const admin = 'lag-admin-0123456789abcdef', viewer = 'lag-viewer-0123456789abcdef';
  writeFileSync(authFile, `${admin} admin\n${viewer} viewer\n`);
  const s = await startServer(['--no-demo', '--auth-file', authFile]);
  try {
    const a = await Client.connect(s.url, ['ragdolld.v1', `ragdolld.auth.${admin}`]);
    const { world, hero } = await walkingWorld(a, 'lag-roles');
    const v = await Client.connect(s.url, ['ragdolld.v1', `ragdolld.auth.${viewer}`]);
    const r = await v.send({ op: 'raycast', world, origin: [0, 5, 0.05], direction: [0, -1, 0], seen_tick: 0 });
    assert.equal(r.ok, true, JSON.stringify(r));
    assert.ok(r.hit.kind === 'bone' || r.hit.kind === 'ground');
    const k = await v.send({ op: 'kill', world, entity: hero, hit_point: [0, 1.5, 0], impulse: [1, 0, 0], seen_tick: 0 });
    assert.equal(k.error.code, 'forbidden');
    await v.close();
    await a.close();
  } finally {
    assert.equal(await s.stop(), 0);
  }
});
