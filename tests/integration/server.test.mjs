// Integration tests: a real ragdolld process on 127.0.0.1 with a port the
// kernel picks, driven over real sockets by the `ws` package.
//
// Rates are checked with wide margins over two seconds or more: CI machines
// are small and the suite also runs the server under AddressSanitizer.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import WebSocket from 'ws';
import { Client, startServer, sleep } from '../lib/ragdolld.mjs';
import { Decoder, unwrapTick, ackFrame } from '../../clients/js/src/index.js';

let server;
before(async () => { server = await startServer(); });
after(async () => { assert.equal(await server.stop(), 0, 'ragdolld exits cleanly on SIGTERM'); });

const demoWorld = (c) => c.welcome.worlds.find((w) => w.name === 'demo').world;

// Creates a fresh world so a test's physics is not disturbed by others.
async function freshWorld(c, name, params) {
  const r = await c.send({ op: 'create_world', name });
  assert.equal(r.ok, true);
  if (params) {
    const p = await c.send({ op: 'set_params', world: r.world, ...params });
    assert.equal(p.ok, true, JSON.stringify(p));
  }
  return r.world;
}

const centroid = (ps) => ps.reduce((a, p) => [a[0] + p[0] / ps.length, a[1] + p[1] / ps.length, a[2] + p[2] / ps.length], [0, 0, 0]);

test('the welcome names the protocol and the demo world', async () => {
  const c = await Client.connect(server.url);
  assert.equal(c.welcome.protocol, 1);
  assert.equal(c.welcome.server, 'ragdolld');
  const demo = c.welcome.worlds.find((w) => w.name === 'demo');
  assert.ok(demo, 'demo world listed');
  assert.equal(demo.tick_hz, 60);
  assert.equal(demo.entities, 7); // two ragdolls, a rope, a cloth, two humanoids, a dog
  await c.close();
});

test('subscribe yields >= 25 snapshots per second with strictly increasing ticks', async () => {
  const c = await Client.connect(server.url);
  const r = await c.send({ op: 'subscribe', world: demoWorld(c) });
  assert.equal(r.ok, true);
  assert.equal(r.rate_hz, 30);
  assert.equal(r.statics.ground, true);
  assert.equal(r.statics.boxes.length, 2);
  const first = await c.next((m) => m.ev === 'snapshot');
  assert.ok(first.metrics.sticks > 1000, 'metrics name the sticks the error sums over');
  // Topology comes with the first snapshot only.
  const particles = first.entities.filter((e) => e.particles);
  assert.equal(particles.length, 4);
  assert.ok(particles.every((e) => Array.isArray(e.sticks) && Array.isArray(e.radii)));
  const characters = first.entities.filter((e) => e.kind === 'character');
  assert.equal(characters.length, 3);
  assert.ok(characters.every((e) => e.capsules.length === e.bones.length && e.skeleton));
  await sleep(2000);
  const snaps = c.snapshots();
  assert.ok(snaps.length >= 50, `${snaps.length} snapshots in 2 s`);
  let prev = first.tick;
  for (const s of snaps) {
    assert.ok(s.tick > prev, `tick ${s.tick} after ${prev}`);
    prev = s.tick;
    assert.equal(s.entities[0].sticks, undefined, 'no topology after the first snapshot');
  }
  // 30 Hz from a 60 Hz world: every second tick, from the very first one.
  const all = [first, ...snaps];
  assert.ok(all.slice(1).every((s, i) => s.tick - all[i].tick === 2),
    `ticks ${all.slice(0, 6).map((x) => x.tick)}`);
  await c.close();
});

test('spawn_ragdoll returns an entity that appears in the following snapshots and falls', async () => {
  const c = await Client.connect(server.url);
  const world = demoWorld(c);
  await c.send({ op: 'subscribe', world, rate_hz: 60 });
  const r = await c.send({ op: 'spawn_ragdoll', world, position: [0, 6, 3] });
  assert.equal(r.ok, true, JSON.stringify(r));
  assert.ok(Number.isSafeInteger(r.entity));
  assert.ok(Number.isSafeInteger(r.tick));
  // The reply's tick is the first snapshot that has it; topology comes again.
  const s = await c.next((m) => m.ev === 'snapshot' && m.tick >= r.tick);
  const e = s.entities.find((x) => x.entity === r.entity);
  assert.ok(e, 'entity in the snapshot of the reply tick');
  assert.equal(e.kind, 'ragdoll');
  assert.equal(e.particles.length, 16);
  assert.equal(e.names[3], 'pelvis');
  assert.ok(Math.abs(e.particles[3][1] - 6) < 0.05, `pelvis starts at 6 m: ${e.particles[3][1]}`);
  await sleep(500);
  const later = c.snapshots().filter((m) => m.tick > s.tick + 20);
  const pelvis = later.at(-1).entities.find((x) => x.entity === r.entity).particles[3][1];
  // 0.5 s of free fall: about g t²/2 = 1.2 m (less a little for damping).
  assert.ok(pelvis < 5.2, `pelvis at ${pelvis} m after falling`);
  const d = await c.send({ op: 'despawn', world, entity: r.entity });
  assert.equal(d.ok, true);
  const gone = await c.send({ op: 'despawn', world, entity: r.entity });
  assert.equal(gone.error.code, 'not_found', 'a despawned id names nothing');
  await c.close();
});

test('apply_impulse changes velocity by impulse / mass in its direction', async () => {
  const c = await Client.connect(server.url);
  // No gravity, no damping, no ground contact: momentum is conserved.
  const world = await freshWorld(c, 'impulse', { gravity: [0, 0, 0], damping: 1 });
  const r = await c.send({ op: 'spawn_ragdoll', world, position: [0, 5, 0], mass: 2 });
  assert.equal(r.ok, true);
  await c.send({ op: 'subscribe', world, rate_hz: 60 });
  await c.next((m) => m.ev === 'snapshot' && m.tick >= r.tick);
  // 3 N·s along +X on each of the 16 particles of 2 kg: the centre of mass
  // moves at 3 / 2 = 1.5 m/s (internal constraints cannot change it).
  const replies = await Promise.all(Array.from({ length: 16 }, (_, i) =>
    c.send({ op: 'apply_impulse', world, entity: r.entity, particle: i, impulse: [3, 0, 0] })));
  assert.ok(replies.every((x) => x.ok));
  // A burst may straddle a tick boundary; measure after the last one applied.
  const t0 = Math.max(...replies.map((x) => x.tick));
  const a = await c.next((m) => m.ev === 'snapshot' && m.tick >= t0 + 5);
  const b = await c.next((m) => m.ev === 'snapshot' && m.tick >= a.tick + 30);
  const ca = centroid(a.entities.find((e) => e.entity === r.entity).particles);
  const cb = centroid(b.entities.find((e) => e.entity === r.entity).particles);
  const dt = (b.tick - a.tick) / 60;
  const v = [(cb[0] - ca[0]) / dt, (cb[1] - ca[1]) / dt, (cb[2] - ca[2]) / dt];
  assert.ok(Math.abs(v[0] - 1.5) < 0.05, `vx = ${v[0]}`);
  assert.ok(Math.abs(v[1]) < 0.05 && Math.abs(v[2]) < 0.05, `v = ${v}`);
  await c.send({ op: 'destroy_world', world });
  await c.close();
});

test('bad input gets the right error code and nothing else changes for anyone', async () => {
  const watcher = await Client.connect(server.url);
  const world = demoWorld(watcher);
  await watcher.send({ op: 'subscribe', world });
  await watcher.next((m) => m.ev === 'snapshot');
  const bad = await Client.connect(server.url);
  const before = (await bad.send({ op: 'list_worlds' })).worlds.find((w) => w.world === world);
  const startTick = (await watcher.next((m) => m.ev === 'snapshot')).tick;
  const t0 = Date.now();

  // Raw text: JSON.stringify would turn 1e999 into null.
  const cases = [
    ['{"op":"spawn_ragdoll", "world": 1,', 'bad_json'],
    ['[1, 2, 3]', 'bad_request'],
    ['{"op":"explode","id":5}', 'unknown_op'],
    [`{"op":"apply_impulse","id":6,"world":${world},"entity":1,"particle":0,"impulse":[1e999,0,0]}`, 'not_finite'],
    [`{"op":"apply_impulse","id":7,"world":${world},"entity":123456,"particle":0,"impulse":[1,0,0]}`, 'not_found'],
    [`{"op":"drag","id":8,"world":${world},"entity":1,"particle":0,"target":[0,5000,0]}`, 'out_of_range'],
    [`{"op":"spawn_cloth","id":9,"world":${world},"origin":[0,3,0],"cols":1000,"rows":1000,"spacing":0.1}`, 'out_of_range'],
    [`{"op":"spawn_rope","id":17,"world":${world},"anchor":[0,3,0],"segments":1001,"segment_length":0.1}`, 'out_of_range'],
    [`{"op":"spawn_rope","id":18,"world":${world},"anchor":[0,3,0],"segments":0,"segment_length":0.1}`, 'out_of_range'],
    ['{"op":"subscribe","id":10,"world":99999}', 'not_found'],
    [`{"op":"set_params","id":11,"world":${world},"iterations":"many"}`, 'bad_request'],
    [`{"op":"set_params","id":12,"world":${world},"damping":-0.5}`, 'out_of_range'],
    // Values the solver could not survive, and work that would starve others.
    [`{"op":"spawn_rope","id":13,"world":${world},"anchor":[0,3,0],"segments":5,"segment_length":0.1,"mass":1e-40}`, 'out_of_range'],
    [`{"op":"set_params","id":14,"world":${world},"iterations":100,"substeps":32}`, 'too_large'],
    [`{"op":"spawn_cloth","id":15,"world":${world},"origin":[0,3,0],"cols":256,"rows":128,"spacing":0.01}`, 'too_large'],
    ['{"op":"create_world","id":16,"name":"a\\u0000\\u001b[31m"}', 'bad_request'],
    // Raw control bytes (not escaped): cJSON would skip the NUL as white
    // space and destroy the world, or cut the name at it.
    [`{"op":\u0000"destroy_world","world":${world}}`, 'bad_json'],
    ['{"op":"create_world","name":"ok\u0000\u0001\u001b[2Jevil"}', 'bad_json'],
  ];
  for (let round = 0; round < 20; ++round) {
    for (const [text, code] of cases) {
      const r = await bad.sendRaw(text);
      assert.equal(r.error?.code, code, `${text} -> ${JSON.stringify(r)}`);
      const m = /"id":(\d+)/.exec(text);
      assert.equal(r.re, m ? Number(m[1]) : null, 'the reply echoes the id');
    }
  }
  // A binary frame is not a command.
  bad.ws.send(Buffer.from([1, 2, 3]));
  assert.equal((await bad.next((m) => 're' in m)).error.code, 'bad_request');
  // A stale entity id of the demo world (its generation is wrong).
  const rope = (await watcher.next((m) => m.ev === 'snapshot')).entities.find((e) => e.kind === 'rope');
  const stale = rope.entity + 2 ** 32;
  const r = await bad.send({ op: 'apply_impulse', world, entity: stale, particle: 0, impulse: [1, 0, 0] });
  assert.equal(r.error.code, 'not_found');
  const p = await bad.send({ op: 'apply_impulse', world, entity: rope.entity, particle: 999, impulse: [1, 0, 0] });
  assert.equal(p.error.code, 'not_found');
  assert.match(p.error.message, /particle 999/);

  // The world is as it was: same entities, same parameters.
  const afterInfo = (await bad.send({ op: 'list_worlds' })).worlds.find((w) => w.world === world);
  assert.equal(afterInfo.entities, before.entities);
  const sub = await bad.send({ op: 'subscribe', world });
  assert.equal(sub.params.damping, 0.99);
  assert.equal(sub.params.iterations, 8);
  assert.equal(sub.params.substeps, 1);
  assert.equal(afterInfo.entities, before.entities, 'no half-made cloth');

  // A message over 64 KiB closes only that client, with 1009.
  bad.ws.send('x'.repeat(70 * 1024));
  const closed = await bad.closed;
  assert.equal(closed.code, 1009);

  // Meanwhile the watcher kept its schedule: >= 25 snapshots/s throughout.
  await sleep(Math.max(0, 2000 - (Date.now() - t0)));
  const snaps = watcher.snapshots().filter((s) => s.tick > startTick);
  const secs = (Date.now() - t0) / 1000;
  assert.ok(snaps.length >= 25 * secs * 0.9, `${snaps.length} snapshots in ${secs.toFixed(2)} s`);
  for (let i = 1; i < snaps.length; ++i) assert.ok(snaps[i].tick > snaps[i - 1].tick);
  await watcher.close();
});

test('a burst of describes of a big cloth neither starves other clients nor piles up', async () => {
  // A 64 × 64 cloth: its describe reply is ~300 KB. 300 of them at once used
  // to stall the whole server for seconds and queue ~90 MB for the client.
  const setup = await Client.connect(server.url);
  // 20 Hz keeps the cloth's stepping cheap (the suite also runs under ASan).
  const { world } = await setup.send({ op: 'create_world', name: 'burst', tick_hz: 20 });
  const cloth = await setup.send({ op: 'spawn_cloth', world, origin: [0, 10, 0], cols: 64, rows: 64, spacing: 0.05 });
  assert.equal(cloth.ok, true, JSON.stringify(cloth));
  // The first describe of an entity encodes it (once: tens of ms, more under
  // ASan); the burst is about what comes after.
  const first = await setup.send({ op: 'describe', world, entity: cloth.entity });
  assert.equal(first.particle_count, 64 * 64);
  // Structural 2·63·64 + shear 2·63² + bend 2·62·64 = 23,938 sticks.
  assert.equal(first.sticks.length, 23938);

  const watcher = await Client.connect(server.url);
  await watcher.send({ op: 'subscribe', world: demoWorld(watcher), rate_hz: 30 });
  await watcher.next((m) => m.ev === 'snapshot');
  watcher.messages.length = 0;

  // The burst client reads only the head of each ~300 KB reply: this process
  // also times the watcher, and parsing megabytes of JSON would delay it.
  const burst = new WebSocket(server.url, ['ragdolld.v1']);
  await new Promise((resolve) => burst.once('open', resolve));
  const replies = new Map(); // re -> 'ok' | error code
  let extra = 0;
  let checked = false;
  const done = new Promise((resolve) => {
    burst.on('message', (data) => {
      const head = data.toString('latin1', 0, Math.min(data.length, 200));
      const m = /^\{"re":(\d+),"(ok|error)"/.exec(head);
      if (!m) return; // the welcome
      const re = Number(m[1]);
      if (replies.has(re)) extra++;
      if (m[2] === 'ok') {
        assert.ok(head.includes(`"entity":${cloth.entity},"kind":"cloth","particle_count":4096`), head);
        // One in full: the same description as the first.
        if (!checked) {
          assert.deepEqual(JSON.parse(data).sticks, first.sticks);
          checked = true;
        }
        replies.set(re, 'ok');
      } else {
        replies.set(re, JSON.parse(data).error.code);
      }
      if (replies.size === 300) resolve();
    });
  });
  const t0 = Date.now();
  for (let i = 1; i <= 300; ++i) burst.send(JSON.stringify({ op: 'describe', id: i, world, entity: cloth.entity }));
  // The server keeps answering HTTP meanwhile.
  const health = await fetch(`${server.http}/healthz`);
  assert.equal(health.status, 200);
  const healthMs = Date.now() - t0;
  await done;

  // One reply per command: the description, or rate_limited (retry later).
  const codes = [...replies.values()];
  const ok = codes.filter((c) => c === 'ok').length;
  assert.ok(codes.every((c) => c === 'ok' || c === 'rate_limited'), `codes: ${[...new Set(codes)]}`);

  // The other client kept getting snapshots: at least half of 30 Hz over 3 s.
  await sleep(Math.max(0, 3000 - (Date.now() - t0)));
  const secs = (Date.now() - t0) / 1000;
  const snaps = watcher.snapshots();
  const times = [t0, ...snaps.map((m) => m.receivedAt), Date.now()];
  const gap = Math.max(...times.slice(1).map((t, i) => t - times[i]));
  for (let i = 1; i < snaps.length; ++i) assert.ok(snaps[i].tick > snaps[i - 1].tick);
  console.log(`describe burst: ${ok} of 300 answered, ${300 - ok} rate_limited; /healthz took ${healthMs} ms; ` +
    `watcher got ${snaps.length} snapshots in ${secs.toFixed(2)} s, longest gap ${gap} ms`);
  assert.ok(snaps.length >= 15 * secs, `${snaps.length} snapshots in ${secs.toFixed(2)} s`);
  assert.equal(extra, 0, 'no extra replies');
  assert.equal(replies.size, 300);
  // The describe budget (8 MiB, less the first describe) holds ~27 replies.
  assert.ok(ok >= 1 && ok <= 40, `${ok} answered`);

  await setup.send({ op: 'destroy_world', world });
  burst.close();
  await watcher.close();
  await setup.close();
});

test('too_large names the one limit exceeded, with the numbers, in full', async () => {
  const c = await Client.connect(server.url);
  const world = demoWorld(c);
  const r = await c.send({ op: 'set_params', world, iterations: 100, substeps: 32 });
  assert.equal(r.error.code, 'too_large');
  // 100 × 32 passes over the demo's particles alone (2200 constraints)
  // exceed the default 10^6 per world.
  const m = /^world (\d+) would need (\d+) solver projections per tick \(at 100 iterations x 32 substeps\); the limit per world is 1000000$/.exec(r.error.message);
  assert.ok(m, r.error.message);
  assert.equal(Number(m[1]), world);
  assert.ok(Number(m[2]) > 2200 * 3200, m[2]);
  const big = await c.send({ op: 'spawn_cloth', world, origin: [0, 3, 0], cols: 256, rows: 256, spacing: 0.01 });
  assert.equal(big.error.message, 'a 256 x 256 cloth has 65536 particles; a world holds at most 32768');
  await c.close();
});

test('the world is the cube of ±1000 m on each axis, for every particle a spawn makes', async () => {
  const c = await Client.connect(server.url);
  const world = await freshWorld(c, 'cube', { gravity: [0, 0, 0] });
  // 1559 m from the origin, but each coordinate within 1000 m: inside.
  const corner = await c.send({ op: 'spawn_rope', world, anchor: [900, 900, -900], segments: 2, segment_length: 1 });
  assert.equal(corner.ok, true, JSON.stringify(corner));
  // The anchor is inside, the far end (x = 999 + 10 × 1) is not.
  const out = await c.send({ op: 'spawn_rope', world, anchor: [999, 3, 0], segments: 10, segment_length: 1 });
  assert.equal(out.error.code, 'out_of_range');
  assert.equal(out.error.message, 'every particle of the new rope must lie in the world: x, y and z each within [-1000, 1000] m');
  // A coordinate beyond 1000 in the command itself.
  const far = await c.send({ op: 'spawn_ragdoll', world, position: [0, 1000.5, 0] });
  assert.equal(far.error.code, 'out_of_range');
  await c.send({ op: 'destroy_world', world });
  await c.close();
});

test('every command gets exactly one reply; a command without id gets re: null', async () => {
  const c = await Client.connect(server.url);
  c.ws.send(JSON.stringify({ op: 'list_worlds' }));
  const r = await c.next((m) => 're' in m);
  assert.equal(r.re, null);
  assert.equal(r.ok, true);
  const ids = await Promise.all(Array.from({ length: 50 }, (_, i) => c.send({ op: 'list_worlds' }).then((x) => x.re)));
  assert.deepEqual(ids, Array.from({ length: 50 }, (_, i) => i + 1));
  await sleep(200);
  assert.equal(c.messages.filter((m) => 're' in m).length, 0, 'no extra replies');
  await c.close();
});

test('set_params is broadcast to every viewer of the world', async () => {
  const a = await Client.connect(server.url);
  const b = await Client.connect(server.url);
  const world = await freshWorld(a, 'params');
  await a.send({ op: 'subscribe', world });
  await b.send({ op: 'subscribe', world });
  const r = await a.send({ op: 'set_params', world, gravity: [0, -3.5, 0], iterations: 12 });
  assert.deepEqual(r.params.gravity, [0, -3.5, 0]);
  assert.equal(r.params.iterations, 12);
  assert.equal(r.params.damping, 0.99, 'unchanged fields keep their values');
  const ev = await b.next((m) => m.ev === 'params');
  assert.equal(ev.world, world);
  assert.deepEqual(ev.params, r.params);
  const s = await b.next((m) => m.ev === 'snapshot' && m.tick >= r.tick);
  assert.equal(s.metrics.solver_passes, 12);
  // All or nothing: one bad field rejects the whole command.
  const bad = await a.send({ op: 'set_params', world, damping: 0.5, bounciness: 2 });
  assert.equal(bad.error.code, 'out_of_range');
  assert.equal((await a.send({ op: 'subscribe', world })).params.damping, 0.99);
  await a.send({ op: 'destroy_world', world });
  const gone = await b.next((m) => m.ev === 'world_destroyed');
  assert.equal(gone.world, world);
  assert.equal((await b.send({ op: 'spawn_ragdoll', world, position: [0, 1, 0] })).error.code, 'not_found');
  await a.close();
  await b.close();
});

test('describe returns the topology; drag and release move a particle', async () => {
  const c = await Client.connect(server.url);
  const world = await freshWorld(c, 'drag');
  const r = await c.send({ op: 'spawn_ragdoll', world, position: [0, 1, 0] });
  const d = await c.send({ op: 'describe', world, entity: r.entity });
  assert.equal(d.kind, 'ragdoll');
  assert.equal(d.particle_count, 16);
  assert.equal(d.names.length, 16);
  const hand = d.names.indexOf('hand_l');
  assert.ok(hand > 0);
  assert.ok(d.sticks.length >= 15);
  await c.send({ op: 'subscribe', world, rate_hz: 60 });
  const g = await c.send({ op: 'drag', world, entity: r.entity, particle: hand, target: [1, 3, 0.5] });
  assert.equal(g.ok, true);
  await sleep(1500);
  const s = c.snapshots().at(-1);
  const p = s.entities[0].particles[hand];
  const dist = Math.hypot(p[0] - 1, p[1] - 3, p[2] - 0.5);
  assert.ok(dist < 0.05, `hand ${p} is ${dist} m from the target`);
  assert.equal((await c.send({ op: 'release', world, entity: r.entity, particle: hand })).ok, true);
  await sleep(1000);
  const after = c.snapshots().at(-1).entities[0].particles[hand];
  assert.ok(after[1] < 1, `released hand fell to ${after[1]}`);
  await c.send({ op: 'destroy_world', world });
  await c.close();
});

test('a client that disconnects lets go of what it was dragging', async () => {
  const owner = await Client.connect(server.url);
  const world = await freshWorld(owner, 'abandoned-drag');
  const r = await owner.send({ op: 'spawn_ragdoll', world, position: [0, 1, 0] });
  const head = 0;
  assert.equal((await owner.send({ op: 'drag', world, entity: r.entity, particle: head, target: [0, 4, 0] })).ok, true);
  const watcher = await Client.connect(server.url);
  await watcher.send({ op: 'subscribe', world, rate_hz: 60 });
  await sleep(1000);
  const held = watcher.snapshots().at(-1).entities[0].particles[head];
  assert.ok(held[1] > 3.5, `held up at ${held[1]}`);
  await owner.close();
  await sleep(1500);
  const fell = watcher.snapshots().at(-1).entities[0].particles[head];
  assert.ok(fell[1] < 1.5, `released after the disconnect: head at ${fell[1]}`);
  await watcher.send({ op: 'destroy_world', world });
  await watcher.close();
});

const bone = (e, name) => e.bones.find((b) => b.name === name);
const characterIn = (snap, entity) => snap.entities.find((e) => e.entity === entity);
const latest = (c, world) => c.snapshots(world).at(-1);

test('a scripted client spawns a character, kills it, sees it fall and get up again', async () => {
  const c = await Client.connect(server.url);
  const world = await freshWorld(c, 'characters');
  assert.equal((await c.send({ op: 'subscribe', world })).ok, true);
  const s = await c.send({ op: 'spawn_character', world, position: [0, 0, 0], facing: 0.5 });
  assert.equal(s.ok, true, JSON.stringify(s));
  const entity = s.entity;
  const first = await c.next((m) => m.ev === 'snapshot' && m.tick >= s.tick);
  let ch = characterIn(first, entity);
  assert.equal(ch.kind, 'character');
  assert.equal(ch.state, 'animated');
  assert.equal(ch.bones.length, 16);
  const head = bone(ch, 'head');
  assert.ok(head.p[1] > 1.45 && head.p[1] < 1.7, `head at ${head.p}`);
  assert.equal(head.q.length, 4);
  assert.ok(Math.abs(Math.hypot(...head.q) - 1) < 1e-4, 'unit quaternion');

  // describe gives the skeleton: the knee is a 0-150 degree hinge.
  const d = await c.send({ op: 'describe', world, entity });
  assert.equal(d.skeleton, 'humanoid');
  assert.equal(d.bones[0].parent, null);
  const knee = d.bones.find((b) => b.name === 'lower_leg_l');
  assert.equal(knee.parent, 'upper_leg_l');
  assert.equal(knee.joint.type, 'hinge');
  assert.ok(Math.abs(knee.joint.range[1] - (150 * Math.PI) / 180) < 1e-5);
  assert.equal(d.bones.reduce((m, b) => m + b.mass, 0), 77);

  // Kill it with a shove at the head: the reply names the bone.
  const k = await c.send({ op: 'kill', world, entity, hit_point: head.p, impulse: [0, 0, -40] });
  assert.equal(k.ok, true, JSON.stringify(k));
  assert.equal(k.bone, 'head');
  const ev = await c.next((m) => m.ev === 'character_state' && m.entity === entity);
  assert.equal(ev.state, 'ragdoll');
  assert.equal(ev.tick, k.tick);
  const settled = await c.next((m) => m.ev === 'settled' && m.entity === entity, 15000);
  ch = characterIn(latest(c, world), entity);
  assert.equal(ch.state, 'ragdoll');
  assert.ok(bone(ch, 'head').p[1] < 0.5, `the head lies at ${bone(ch, 'head').p}`);
  assert.ok(settled.tick > k.tick);

  // Get up: getting_up, then animated, then standing again.
  const g = await c.send({ op: 'start_getup', world, entity });
  assert.equal(g.ok, true, JSON.stringify(g));
  assert.ok(['getup_front', 'getup_back'].includes(g.clip), g.clip);
  assert.equal((await c.next((m) => m.ev === 'character_state' && m.entity === entity)).state, 'getting_up');
  assert.equal((await c.next((m) => m.ev === 'character_state' && m.entity === entity, 3000)).state, 'animated');
  await sleep(3500); // the get-up clip runs 2.4-2.6 s
  ch = characterIn(latest(c, world), entity);
  assert.equal(ch.state, 'animated');
  assert.ok(bone(ch, 'head').p[1] > 1.4, `standing: head at ${bone(ch, 'head').p}`);
  await c.close();
});

test('characters: active and partial ragdolls, balls, impulses on bones, and bad input', async () => {
  const c = await Client.connect(server.url);
  const world = await freshWorld(c, 'active');
  await c.send({ op: 'subscribe', world, rate_hz: 60 });
  const a = (await c.send({ op: 'spawn_character', world, position: [0, 0, 0], clip: 'walk' })).entity;
  const p = await c.send({ op: 'set_partial', world, entity: a, bones: ['upper_arm_r'] });
  assert.equal(p.ok, true, JSON.stringify(p));
  assert.equal((await c.next((m) => m.ev === 'character_state' && m.entity === a)).state, 'partial');
  const hit = await c.send({ op: 'apply_impulse', world, entity: a, bone: 'hand_r', impulse: [0, 20, 0] });
  assert.equal(hit.ok, true, JSON.stringify(hit));
  const drive = await c.send({ op: 'set_drive', world, entity: a, kp: 500, kd: 20, bones: ['lower_arm_r'], ramp_time: 0.5 });
  assert.equal(drive.ok, true, JSON.stringify(drive));
  assert.equal((await c.send({ op: 'set_partial', world, entity: a, bones: [] })).ok, true);
  assert.equal((await c.send({ op: 'play', world, entity: a, clip: 'stagger' })).ok, true);
  const b = await c.send({ op: 'spawn_ball', world, position: [0, 1.2, -3], velocity: [0, 0, 10], radius: 0.2, mass: 5 });
  assert.equal(b.ok, true, JSON.stringify(b));
  const snap = await c.next((m) => m.ev === 'snapshot' && m.tick > b.tick);
  const ball = snap.entities.find((e) => e.entity === b.entity);
  assert.equal(ball.kind, 'ball');
  assert.equal(ball.p.length, 3);

  // Bad input: a clear error, and the world goes on for everyone.
  const before = latest(c, world).tick;
  const cases = [
    [{ op: 'kill', world, entity: b.entity, hit_point: [0, 1, 0], impulse: [0, 0, 0] }, 'not_found'],
    [{ op: 'start_getup', world, entity: a }, 'bad_state'],
    [{ op: 'set_partial', world, entity: a, bones: ['tail'] }, 'not_found'],
    [{ op: 'set_drive', world, entity: a, kp: -1, kd: 0 }, 'out_of_range'],
    [{ op: 'set_drive', world, entity: a, kp: 1, kd: 0, bones: 'head' }, 'bad_request'],
    [{ op: 'spawn_character', world, position: [0, 0, 0], skeleton: 'octopus' }, 'not_found'],
    [{ op: 'spawn_character', world, position: [0, 0, 0], clip: 'moonwalk' }, 'not_found'],
    [{ op: 'kill', world, entity: a, hit_point: [0, 1, 0], impulse: [1e9, 0, 0] }, 'out_of_range'],
    [{ op: 'apply_impulse', world, entity: a, impulse: [1, 0, 0] }, 'bad_request'],
    [{ op: 'play', world, entity: a, clip: 'x'.repeat(40) }, 'out_of_range'],
    [{ op: 'set_partial', world, entity: a, bones: Array(33).fill('head') }, 'out_of_range'],
  ];
  for (const [cmd, code] of cases) {
    const r = await c.send(cmd);
    assert.equal(r.error?.code, code, `${JSON.stringify(cmd).slice(0, 80)} -> ${JSON.stringify(r)}`);
  }
  await sleep(500);
  assert.ok(latest(c, world).tick > before + 15, 'the world kept ticking');
  assert.equal(characterIn(latest(c, world), a).state, 'animated');
  await c.close();
});

test('a reduced-coordinate character falls, settles and gets up like a maximal one; bad solvers are refused', async () => {
  const c = await Client.connect(server.url);
  const world = await freshWorld(c, 'reduced');
  await c.send({ op: 'subscribe', world });
  const s = await c.send({ op: 'spawn_character', world, position: [0, 0, 0], solver: 'reduced' });
  assert.equal(s.ok, true, JSON.stringify(s));
  const entity = s.entity;
  const m = await c.send({ op: 'spawn_character', world, position: [3, 0, 0] });
  assert.equal((await c.send({ op: 'describe', world, entity })).solver, 'reduced');
  assert.equal((await c.send({ op: 'describe', world, entity: m.entity })).solver, 'maximal');
  // Bad input: a clear error, nothing spawned, the world goes on.
  for (const [cmd, code] of [
    [{ op: 'spawn_character', world, position: [0, 0, 0], solver: 'featherstone' }, 'bad_request'],
    [{ op: 'spawn_character', world, position: [0, 0, 0], solver: 2 }, 'bad_request'],
    [{ op: 'spawn_character', world, position: [0, 0, 0], solver: null }, 'bad_request'],
    [{ op: 'set_partial', world, entity, bones: ['upper_arm_r'] }, 'bad_state'],
  ]) {
    const r = await c.send(cmd);
    assert.equal(r.error?.code, code, `${JSON.stringify(cmd)} -> ${JSON.stringify(r)}`);
    if (cmd.op === 'set_partial') assert.match(r.error.message, /reduced-coordinate character cannot be a partial ragdoll/);
  }
  const first = await c.next((e) => e.ev === 'snapshot' && e.tick > s.tick);
  assert.equal(first.entities.filter((e) => e.kind === 'character').length, 2);
  const head = bone(characterIn(first, entity), 'head');
  const k = await c.send({ op: 'kill', world, entity, hit_point: head.p, impulse: [0, 0, -40] });
  assert.equal(k.ok, true, JSON.stringify(k));
  assert.equal(k.bone, 'head');
  await c.next((e) => e.ev === 'settled' && e.entity === entity, 15000);
  const ch = characterIn(latest(c, world), entity);
  assert.equal(ch.state, 'ragdoll');
  assert.ok(bone(ch, 'head').p[1] < 0.5, `the head lies at ${bone(ch, 'head').p}`);
  // An impulse on a bone wakes it and moves it.
  const before = bone(ch, 'pelvis').p;
  const i = await c.send({ op: 'apply_impulse', world, entity, bone: 'pelvis', impulse: [0, 300, 0] });
  assert.equal(i.ok, true, JSON.stringify(i));
  await c.next((e) => e.ev === 'snapshot' && e.tick > i.tick + 10);
  assert.ok(bone(characterIn(latest(c, world), entity), 'pelvis').p[1] > before[1] + 0.05, 'lifted');
  await c.next((e) => e.ev === 'settled' && e.entity === entity, 15000);
  const g = await c.send({ op: 'start_getup', world, entity });
  assert.equal(g.ok, true, JSON.stringify(g));
  assert.equal((await c.next((e) => e.ev === 'character_state' && e.entity === entity && e.state === 'animated', 5000)).state, 'animated');
  await c.close();
});

test('attach_cloth dresses a character; the garment follows it, shows as a garment, and goes with it', async () => {
  const c = await Client.connect(server.url);
  const world = await freshWorld(c, 'garments');
  await c.send({ op: 'subscribe', world, rate_hz: 60 });
  const who = (await c.send({ op: 'spawn_character', world, position: [0, 0, 0], clip: 'walk' })).entity;
  const dog = (await c.send({ op: 'spawn_character', world, position: [3, 0, 0], skeleton: 'dog' })).entity;
  const ball = (await c.send({ op: 'spawn_ball', world, position: [0, 3, -3] })).entity;
  const cape = await c.send({ op: 'attach_cloth', world, entity: who, kind: 'cape' });
  assert.equal(cape.ok, true, JSON.stringify(cape));
  const hair = await c.send({ op: 'attach_cloth', world, entity: who, kind: 'hair', rows: 5 });
  assert.equal(hair.ok, true, JSON.stringify(hair));
  const skirt = await c.send({ op: 'attach_cloth', world, entity: who, kind: 'skirt', long_range: false });
  assert.equal(skirt.ok, true, JSON.stringify(skirt));
  // The topology names the garment and its wearer; a skirt is closed round.
  const d = await c.send({ op: 'describe', world, entity: skirt.entity });
  assert.equal(d.kind, 'cloth');
  assert.equal(d.garment, 'skirt');
  assert.equal(d.wearer, who);
  assert.equal(d.wrap, true);
  assert.equal(d.particle_count, d.cols * d.rows);
  const dh = await c.send({ op: 'describe', world, entity: hair.entity });
  assert.equal(dh.garment, 'hair');
  assert.equal(dh.rows, 5);
  // Bad input: a clear error and nothing made.
  const cases = [
    [{ op: 'attach_cloth', world, entity: who, kind: 'scarf' }, 'bad_request'],
    [{ op: 'attach_cloth', world, entity: who }, 'bad_request'],
    [{ op: 'attach_cloth', world, entity: who, kind: 'cape', cols: 1 }, 'out_of_range'],
    [{ op: 'attach_cloth', world, entity: who, kind: 'cape', rows: 65 }, 'out_of_range'],
    [{ op: 'attach_cloth', world, entity: who, kind: 'cape', mass: -1 }, 'out_of_range'],
    [{ op: 'attach_cloth', world, entity: who, kind: 'cape', long_range: 'yes' }, 'bad_request'],
    [{ op: 'attach_cloth', world, entity: who, kind: 'cape', bend_compliance: 2 }, 'out_of_range'],
    [{ op: 'attach_cloth', world, entity: who, kind: 'skirt', cols: 2 }, 'out_of_range'],
    [{ op: 'attach_cloth', world, entity: dog, kind: 'cape' }, 'not_found'],
    [{ op: 'attach_cloth', world, entity: ball, kind: 'cape' }, 'not_found'],
    [{ op: 'attach_cloth', world, entity: 12345678, kind: 'cape' }, 'not_found'],
  ];
  for (const [cmd, code] of cases) {
    const r = await c.send(cmd);
    assert.equal(r.error?.code, code, `${JSON.stringify(cmd).slice(0, 90)} -> ${JSON.stringify(r)}`);
  }
  const dogCape = await c.send({ op: 'attach_cloth', world, entity: dog, kind: 'cape' });
  assert.match(dogCape.error.message, /has no cape garment/);
  // Each out-of-range case says which rule it broke (a fresh user's report).
  const ring = await c.send({ op: 'attach_cloth', world, entity: who, kind: 'skirt', cols: 2 });
  assert.match(ring.error.message, /at least 3 cols, not 2/);
  const axes = await c.send({ op: 'spawn_cloth', world, origin: [0, 3, 0], cols: 4, rows: 4, spacing: 0.1, across: [0, 0, 0] });
  assert.equal(axes.error?.code, 'out_of_range');
  assert.match(axes.error.message, /unit vectors, perpendicular.*\|across\| = 0/);
  const same = await c.send({ op: 'spawn_cloth', world, origin: [0, 3, 0], cols: 4, rows: 4, spacing: 0.1, across: [0, -1, 0] });
  assert.match(same.error.message, /across·down = 1/);
  await sleep(1000);
  let snap = c.snapshots().at(-1);
  assert.equal(snap.entities.length, 6, 'two characters, a ball, three garments');
  const capeState = snap.entities.find((e) => e.entity === cape.entity);
  assert.ok(capeState.particles.every((p) => p.every(Number.isFinite)));
  // It walked along +Z: the cape came along, behind it.
  const body = snap.entities.find((e) => e.entity === who);
  const z = centroid(capeState.particles)[2];
  assert.ok(z > 0.2 && z < body.bones[0].p[2], `cape centroid z ${z}, pelvis z ${body.bones[0].p[2]}`);
  // Its garments go with it.
  assert.equal((await c.send({ op: 'despawn', world, entity: who })).ok, true);
  await sleep(300);
  snap = c.snapshots().at(-1);
  assert.deepEqual(snap.entities.map((e) => e.entity).sort(), [dog, ball].sort());
  await c.send({ op: 'destroy_world', world });
  await c.close();
});

test('set_focus: a cloth far from every focus freezes (no solver work, not moving) and resumes when one comes near', async () => {
  const c = await Client.connect(server.url);
  const world = await freshWorld(c, 'lod');
  const cloth = (await c.send({ op: 'spawn_cloth', world, origin: [-1.1, 3, 0], cols: 12, rows: 10, spacing: 0.2 })).entity;
  const notSubscribed = await c.send({ op: 'set_focus', world, point: [0, 2, 3] });
  assert.equal(notSubscribed.error?.code, 'bad_state', JSON.stringify(notSubscribed));
  await c.send({ op: 'subscribe', world, rate_hz: 30 });
  for (let i = 108; i < 120; i++) {
    await c.send({ op: 'apply_impulse', world, entity: cloth, particle: i, impulse: [0, 0, 2] });
  }
  assert.equal((await c.send({ op: 'set_focus', world, point: [0, 2, 100] })).ok, true);
  await sleep(600);
  const [a, b] = c.snapshots().slice(-2);
  assert.deepEqual(a.entities[0].particles, b.entities[0].particles, 'frozen: not moving');
  assert.equal(b.metrics.frozen_entities, 1);
  assert.equal(b.metrics.frozen_particles, 120);
  assert.equal(b.metrics.particle_projections, 0);
  assert.equal((await c.send({ op: 'describe', world, entity: cloth })).lod, 'frozen');
  for (const [cmd, code] of [
    [{ op: 'set_focus', world, point: [0, 2e9, 0] }, 'out_of_range'],
    [{ op: 'set_focus', world, point: 'near' }, 'bad_request'],
    [{ op: 'set_focus', world: 999999, point: [0, 0, 0] }, 'not_found'],
  ]) {
    const r = await c.send(cmd);
    assert.equal(r.error?.code, code, `${JSON.stringify(cmd)} -> ${JSON.stringify(r)}`);
  }
  // 20 m away: fewer iterations; near: full, and it swings on from where it froze.
  assert.equal((await c.send({ op: 'set_focus', world, point: [0, 2, 20] })).ok, true);
  await sleep(300);
  assert.equal((await c.send({ op: 'describe', world, entity: cloth })).lod, 'reduced');
  assert.equal((await c.send({ op: 'set_focus', world })).ok, true, 'no point: no focus, so full detail');
  await sleep(300);
  const [d, e] = c.snapshots().slice(-2);
  assert.notDeepEqual(d.entities[0].particles, e.entities[0].particles, 'moving again');
  assert.equal(e.metrics.frozen_entities, 0);
  assert.ok(e.metrics.particle_projections > 0);
  assert.equal((await c.send({ op: 'describe', world, entity: cloth })).lod, 'full');
  await c.send({ op: 'destroy_world', world });
  await c.close();
});

test('tearing: a cloth pulled apart tears; the torn event, the JSON topology and describe agree', async () => {
  const c = await Client.connect(server.url);
  const world = await freshWorld(c, 'tear', { gravity: [0, 0, 0] });
  const bad = await c.send({ op: 'spawn_cloth', world, origin: [-1, 3, 0], cols: 20, rows: 10, spacing: 0.1, tear: 1.0 });
  assert.equal(bad.error?.code, 'out_of_range', JSON.stringify(bad));
  assert.match(bad.error.message, /tear ratio/);
  const cloth = (await c.send({ op: 'spawn_cloth', world, origin: [-1, 3, 0], cols: 20, rows: 10, spacing: 0.1, pin: 'none' })).entity;
  assert.equal((await c.send({ op: 'set_tear', world, entity: cloth, ratio: 0.5 })).error?.code, 'out_of_range');
  assert.equal((await c.send({ op: 'set_tear', world, entity: 999999, ratio: 1.3 })).error?.code, 'not_found');
  assert.equal((await c.send({ op: 'set_tear', world, entity: cloth, ratio: 1.3 })).ok, true);
  await c.send({ op: 'subscribe', world, rate_hz: 30 });
  const first = await c.next((m) => m.ev === 'snapshot' && m.entities[0]?.sticks);
  const key = ([a, b]) => `${Math.min(a, b)}-${Math.max(a, b)}`;
  const before = new Set(first.entities[0].sticks.map(key));
  await c.send({ op: 'drag', world, entity: cloth, particle: 0, target: [-6, 3, 0] });
  await c.send({ op: 'drag', world, entity: cloth, particle: 19, target: [6, 3, 0] });
  const ev = await c.next((m) => m.ev === 'torn' && m.world === world, 5000);
  assert.equal(ev.entity, cloth);
  assert.ok(ev.sticks.length > 0);
  for (const s of ev.sticks) assert.ok(before.has(key(s)), `torn ${s} was a stick`);
  const snap = await c.next((m) => m.ev === 'snapshot' && m.tick >= ev.tick && m.entities[0]?.sticks, 5000);
  const now = new Set(snap.entities[0].sticks.map(key));
  for (const s of ev.sticks) assert.ok(!now.has(key(s)), `torn ${s} is gone from the JSON topology`);
  assert.equal(snap.entities[0].particles.length, 200, 'no particle lost');
  await sleep(500);
  const d = await c.send({ op: 'describe', world, entity: cloth });
  const described = new Set(d.sticks.map(key));
  for (const s of ev.sticks) assert.ok(!described.has(key(s)), `torn ${s} is gone from describe`);
  assert.ok(described.size < before.size);
  assert.equal(d.particle_count, 200);
  await c.send({ op: 'destroy_world', world });
  await c.close();
});

test('binary snapshots: full, then deltas against acked baselines, matching the JSON stream', async () => {
  const c = await Client.connect(server.url);
  const world = await freshWorld(c, 'binary');
  const e = (await c.send({ op: 'spawn_character', world, position: [1, 0, 2] })).entity;
  const rope = (await c.send({ op: 'spawn_rope', world, anchor: [0, 3, 0], segments: 10, segment_length: 0.1 })).entity;
  // A JSON watcher of the same world, to compare values tick by tick.
  const j = await Client.connect(server.url);
  await j.send({ op: 'subscribe', world, format: 'json', rate_hz: 60 });
  const sub = await c.send({ op: 'subscribe', world, format: 'binary', rate_hz: 60 });
  assert.equal(sub.format, 'binary');
  const d = new Decoder();
  const first = await c.next((x) => x.binary);
  assert.equal(first.binary.toString('latin1', 0, 4), 'RDS2');
  let s = d.decode(first.binary);
  assert.equal(s.delta, false, 'the first snapshot is full');
  let tick = unwrapTick(sub.tick, s.tick16);
  const ch = s.entities.find((x) => x.entity === e);
  assert.equal(ch.kind, 4);
  assert.equal(ch.count, 16);
  assert.ok(Math.abs(ch.f[1] - 0.96) < 0.02, `pelvis y ${ch.f[1]}`);
  // Ack it: the next ones are deltas against it (or a later ack).
  c.ws.send(ackFrame(world, tick));
  let deltas = 0;
  let compared = 0;
  for (let n = 0; n < 40; n++) {
    const m = await c.next((x) => x.binary);
    s = d.decode(m.binary);
    tick = unwrapTick(tick, s.tick16);
    if (s.delta) deltas++;
    c.ws.send(ackFrame(world, tick));
    // The JSON stream at the same tick: the rope's particles within 1 mm
    // (JSON rounds to 0.1 mm), the bones' positions too.
    const js = j.snapshots(world).find((x) => x.tick === tick);
    if (!js) continue;
    compared++;
    const r = s.entities.find((x) => x.entity === rope);
    const jr = js.entities.find((x) => x.entity === rope);
    jr.particles.forEach((p, i) => {
      for (let k = 0; k < 3; k++) assert.ok(Math.abs(r.f[3 * i + k] - p[k]) <= 0.0011, `rope ${i}: ${r.f[3 * i + k]} vs ${p[k]}`);
    });
    const jc = js.entities.find((x) => x.entity === e);
    const bc = s.entities.find((x) => x.entity === e);
    jc.bones.forEach((b, i) => {
      for (let k = 0; k < 3; k++) assert.ok(Math.abs(bc.f[7 * i + k] - b.p[k]) <= 0.0011, `bone ${b.name}`);
    });
  }
  assert.ok(deltas >= 35, `${deltas} of 40 were deltas`);
  // Metrics come as an event (binary snapshots carry none).
  const mt = await c.next((x) => x.ev === 'metrics', 2000);
  assert.equal(mt.world, world);
  assert.ok(mt.metrics.sticks >= 10 && mt.metrics.solver_passes >= 1, JSON.stringify(mt.metrics));
  assert.ok(compared >= 20, `${compared} ticks compared with the JSON stream`);
  // The world left alone settles: a snapshot of it at rest is tiny.
  await c.send({ op: 'despawn', world, entity: rope });
  await sleep(4000); // the character idles; idle moves, so kill it and let it sleep
  await c.send({ op: 'kill', world, entity: e, hit_point: [1, 1, 2], impulse: [0, 0, 0] });
  await c.next((x) => x.ev === 'settled', 10000);
  c.messages = c.messages.filter((x) => !x.binary);
  const sizes = [];
  for (let n = 0; n < 10; n++) {
    const m = await c.next((x) => x.binary);
    s = d.decode(m.binary);
    tick = unwrapTick(tick, s.tick16);
    c.ws.send(ackFrame(world, tick));
    if (s.delta) sizes.push(m.binary.length);
  }
  assert.ok(sizes.length >= 5 && Math.max(...sizes) <= 64, `at rest: ${sizes} bytes`);
  // An ack of a tick the server never sent (this 30 Hz subscription of a
  // 60 Hz world gets every other tick) is ignored: what follows stays
  // deltas, against the last real ack.
  let m = await c.next((x) => x.binary);
  s = d.decode(m.binary);
  tick = unwrapTick(tick, s.tick16);
  c.ws.send(ackFrame(world, tick));
  c.ws.send(ackFrame(world, tick + 1));
  let againstIt = 0;
  for (let n = 0; n < 5; n++) {
    m = await c.next((x) => x.binary);
    const t = d.decode(m.binary);
    assert.equal(t.delta, true, `snapshot ${n} after the bogus ack is full`);
    if (t.baseline16 === (tick & 0xffff)) againstIt++;
  }
  assert.ok(againstIt >= 1, 'deltas against the last real ack');
  // resync asks for a full snapshot; so does not acking for 32 snapshots.
  assert.equal((await c.send({ op: 'resync', world })).ok, true);
  const full = await c.next((x) => x.binary && d.decode(x.binary).delta === false, 3000);
  assert.ok(full);
  const bad = await c.send({ op: 'ack', world: 999999, tick: 1 });
  assert.equal(bad.error?.code, 'not_found');
  // A binary frame that is not an ack gets an error reply, nothing else.
  c.ws.send(Buffer.from([1, 2, 3]));
  const err = await c.next((x) => x.error && x.re === null);
  assert.equal(err.error.code, 'bad_request');
  // Binary acks of a world that is gone or not subscribed to (in flight
  // when it went) are ignored without a reply; the command is answered.
  c.ws.send(ackFrame(999999, 1));
  c.ws.send(ackFrame(demoWorld(c), 1));
  assert.equal((await c.send({ op: 'ack', world: demoWorld(c), tick: 1 })).error?.code, 'bad_state');
  assert.equal(c.messages.filter((x) => x.error && x.re === null).length, 0, 'no reply to either binary ack');
  await j.close();
  await c.close();
});

test('HTTP: /healthz, the viewer, 404', async () => {
  const h = await fetch(`${server.http}/healthz`);
  assert.equal(h.status, 200);
  const body = await h.json();
  assert.equal(body.status, 'ok');
  assert.ok(body.worlds >= 1);
  assert.ok(body.uptime_s > 0);
  const page = await fetch(`${server.http}/`);
  assert.equal(page.status, 200);
  assert.match(page.headers.get('content-type'), /text\/html/);
  assert.equal((await fetch(`${server.http}/no/such/file`)).status, 404);
  assert.equal((await fetch(`${server.http}/healthz`, { method: 'POST' })).status, 405);
});

test('--max-sessions: an upgrade beyond the cap gets 503; room comes back when a client leaves', async () => {
  const s = await startServer(['--no-demo', '--max-sessions', '2']);
  try {
    const a = await Client.connect(s.url);
    const b = await Client.connect(s.url);
    // The status of a refused upgrade (ws reports it as 'unexpected-response').
    const tryUpgrade = () => new Promise((resolve, reject) => {
      const ws = new WebSocket(s.url, ['ragdolld.v1']);
      ws.once('unexpected-response', (req, res) => { resolve(res.statusCode); req.destroy(); });
      ws.once('open', () => { ws.close(); resolve(101); });
      ws.once('error', (err) => { if (!/Unexpected server response/.test(err.message)) reject(err); });
    });
    assert.equal(await tryUpgrade(), 503);
    const h = await (await fetch(`${s.http}/healthz`)).json();
    assert.equal(h.sessions, 2, 'plain HTTP still answers at the cap');
    assert.equal((await a.send({ op: 'list_worlds' })).ok, true, 'the admitted clients are unaffected');
    await a.close();
    let status = 0;
    for (let i = 0; i < 40 && status !== 101; ++i) {
      await sleep(50);
      status = await tryUpgrade();
    }
    assert.equal(status, 101, 'a new client is admitted once one has left');
    await b.close();
  } finally {
    assert.equal(await s.stop(), 0);
  }
});

test('characters count in the solver budget and the rigid-body capacity', async () => {
  // A humanoid is 16 bones and 15 joints; each costs 100 projections per
  // rigid substep, at least 4 of those per tick: 31 x 100 x 4 = 12400 per
  // tick (PROTOCOL.md section 3). Under the default per-world budget of
  // 10^6, floor(10^6 / 12400) = 80 fit in an empty world; the 81st is refused.
  const s = await startServer(['--no-demo']);
  try {
    const c = await Client.connect(s.url);
    const { world } = await c.send({ op: 'create_world', name: 'crowd' });
    let ok = 0;
    let refused = null;
    for (let i = 0; i < 85 && refused === null; ++i) {
      const r = await c.send({ op: 'spawn_character', world, position: [(i % 10) * 2 - 9, 0, Math.floor(i / 10) * 2 - 9] });
      if (r.ok) ok++;
      else refused = r.error;
    }
    assert.equal(ok, 80);
    assert.equal(refused.code, 'too_large');
    assert.match(refused.message, /would need 1004400 solver projections per tick.*the limit per world is 1000000/);
  } finally {
    assert.equal(await s.stop(), 0);
  }
  // With budgets out of the way the world's 2048 rigid bodies are the limit:
  // 128 humanoids, and the 129th names it.
  const t = await startServer(['--no-demo', '--max-solver-work', '1000000000', '--max-total-solver-work', '10000000000']);
  try {
    const c = await Client.connect(t.url);
    const { world } = await c.send({ op: 'create_world', name: 'crowd' });
    for (let i = 0; i < 128; ++i) {
      const r = await c.send({ op: 'spawn_character', world, position: [(i % 16) * 2 - 15, 0, Math.floor(i / 16) * 2 - 8] });
      assert.equal(r.ok, true, JSON.stringify(r));
    }
    const r = await c.send({ op: 'spawn_character', world, position: [0, 0, 12] });
    assert.equal(r.error.code, 'too_large');
    assert.equal(r.error.message, `world ${world} holds 2048 rigid bodies and this character adds 16; a world holds at most 2048`);
  } finally {
    assert.equal(await t.stop(), 0);
  }
});

test('create_world limits: refused when bad with nothing else changed; a world made for 300 humanoids holds them', async () => {
  const s = await startServer(['--no-demo', '--max-solver-work', '1000000000', '--max-total-solver-work', '10000000000',
    '--world-ceiling', 'bodies=8000,joints=8000']);
  const reserved = async (world) => {
    const page = await (await fetch(`${s.http}/metrics`)).text();
    const m = page.match(new RegExp(`^ragdolld_world_reserved_bytes\\{world="${world}"\\} (\\d+)$`, 'm'));
    return m ? Number(m[1]) : null;
  };
  try {
    const c = await Client.connect(s.url);
    const outside = 'is outside [1, 67108864]';
    const bad = [
      [{ bodies: -1 }, 'out_of_range', `field "limits.bodies" = -1 ${outside}`],
      [{ bodies: 0 }, 'out_of_range', `field "limits.bodies" = 0 ${outside}`],
      [{ particles: 2 ** 26 + 1 }, 'out_of_range', `field "limits.particles" = 67108865 ${outside}`],
      [{ bodies: 8001 }, 'too_large', "limits.bodies = 8001 is above this server's ceiling of 8000 for a world (--world-ceiling)"],
      [{ entities: 4097 }, 'too_large', "limits.entities = 4097 is above this server's ceiling of 4096 for a world (--world-ceiling)"],
      [{ joints: 'many' }, 'bad_request', 'field "limits.joints" must be a number'],
      [{ joints: [1] }, 'bad_request', 'field "limits.joints" must be a number'],
      [{ entities: 2.5 }, 'bad_request', 'field "limits.entities" must be an integer'],
      [{ bones: 3 }, 'bad_request', 'field "limits" has no limit "bones" (limits are entities, particles, constraints, bodies, joints, contacts)'],
      [[4096], 'bad_request', 'field "limits" must be an object of limits, e.g. {"bodies": 4096}'],
      ['lots', 'bad_request', 'field "limits" must be an object of limits, e.g. {"bodies": 4096}'],
    ];
    for (const [limits, code, message] of bad) {
      const r = await c.send({ op: 'create_world', name: 'rain', limits });
      assert.deepEqual(r.error, { code, message }, JSON.stringify(limits));
    }
    const inf = await c.sendRaw('{"op":"create_world","id":99,"name":"rain","limits":{"contacts":1e999}}');
    assert.deepEqual(inf.error, { code: 'not_finite', message: 'field "limits.contacts" is not finite' });
    assert.deepEqual((await c.send({ op: 'list_worlds' })).worlds, [], 'no world was made');

    // 300 humanoids of 16 bones and 15 joints: 4800 bodies, 4500 joints.
    const r = await c.send({ op: 'create_world', name: 'rain', limits: { entities: 300, bodies: 4800, joints: 4500, contacts: 115200 } });
    assert.equal(r.ok, true, JSON.stringify(r));
    assert.deepEqual(r.limits, { entities: 300, particles: 32768, constraints: 262144, bodies: 4800, joints: 4500, contacts: 115200 });
    const world = r.world;
    const empty = await reserved(world);
    assert.ok(empty > 0 && empty < 64 * 1024, `an empty world reserves ${empty} bytes`);
    for (let batch = 0; batch < 3; ++batch) {
      const replies = await Promise.all(Array.from({ length: 100 }, (_, k) => {
        const i = batch * 100 + k;
        return c.send({ op: 'spawn_character', world, position: [(i % 20) * 1.5 - 15, 0, Math.floor(i / 20) * 1.5 - 11] });
      }));
      for (const x of replies) assert.equal(x.ok, true, JSON.stringify(x));
    }
    const full = await c.send({ op: 'spawn_rope', world, anchor: [0, 5, 0], segments: 1, segment_length: 0.1 });
    assert.equal(full.error.code, 'too_large');
    assert.equal(full.error.message, `world ${world} already holds 300 entities, the most a world may`);
    const held = await reserved(world);
    // Each body takes at least its state (about 2.4 KB with its share of
    // the broadphase and contact arrays); a world of the old layout took
    // 13.8 MiB whatever it held, and could not hold these.
    assert.ok(held > empty + 4800 * 2000, `300 humanoids: ${held} bytes`);
    assert.ok(held < 64 * 1024 * 1024, `300 humanoids: ${held} bytes`);
    assert.equal((await c.send({ op: 'list_worlds' })).worlds[0].entities, 300);
    await c.close();
  } finally {
    assert.equal(await s.stop(), 0);
  }
});

test('a subscription receives at most 4 MiB of snapshots per second: fewer snapshots of a huge world', async () => {
  const s = await startServer(['--no-demo']);
  try {
    const c = await Client.connect(s.url);
    const { world } = await c.send({ op: 'create_world', name: 'huge' });
    // 16384 particles: a JSON snapshot is about 290 KB, 30 of them 8.7 MB/s.
    assert.equal((await c.send({ op: 'spawn_cloth', world, origin: [-6, 13, 0], cols: 128, rows: 128, spacing: 0.1, pin: 'top' })).ok, true);
    const v = await Client.connect(s.url);
    let bytes = 0;
    v.ws.on('message', (d) => { bytes += d.length; });
    assert.equal((await v.send({ op: 'subscribe', world, format: 'json', rate_hz: 30 })).ok, true);
    await sleep(1500); // past the first second's allowance
    const b0 = bytes;
    const n0 = v.snapshots(world).length;
    await sleep(3000);
    const mib = (bytes - b0) / 1048576;
    const got = v.snapshots(world).length - n0;
    // 4 MiB/s over 3 s, plus one snapshot of debt and the bucket refilling
    // by at most another second's worth: 16 MiB at most.
    assert.ok(mib <= 16, `${mib.toFixed(2)} MiB in 3 s`);
    assert.ok(got >= 3 && got < 90 * 0.8, `${got} snapshots in 3 s`);
    v.messages.length = 0;
  } finally {
    assert.equal(await s.stop(), 0);
  }
});

test('SIGTERM closes clients with 1001 and exits 0', async () => {
  const s = await startServer(['--no-demo']);
  const c = await Client.connect(s.url);
  assert.deepEqual(c.welcome.worlds, []);
  const code = await s.stop();
  assert.equal((await c.closed).code, 1001);
  assert.equal(code, 0);
});

// A world made from a shipped template (templates/README.md) has the boxes
// and the entities its file lists, read here from the file itself; an
// unknown template is not_found and makes nothing.
test('create_world with a template makes the world its file describes', async () => {
  const fs = await import('node:fs');
  const c = await Client.connect(server.url);
  try {
    for (const name of ['arena', 'playground']) {
      const file = JSON.parse(fs.readFileSync(`templates/${name}.json`, 'utf8'));
      const r = await c.send({ op: 'create_world', name: `from-${name}`, template: name });
      assert.equal(r.ok, true, JSON.stringify(r));
      const sub = await c.send({ op: 'subscribe', world: r.world, format: 'json', rate_hz: 1 });
      assert.equal(sub.ok, true);
      assert.equal(sub.statics.boxes.length, file.boxes.length);
      for (let i = 0; i < file.boxes.length; i++) {
        sub.statics.boxes[i].center.forEach((v, k) => assert.ok(Math.abs(v - file.boxes[i].center[k]) < 1e-3));
      }
      const spawns = file.commands.filter((x) => x.op.startsWith('spawn_')).length;
      const listed = (await c.send({ op: 'list_worlds' })).worlds.find((w) => w.world === r.world);
      assert.equal(listed.entities, spawns);
      await c.send({ op: 'destroy_world', world: r.world });
    }
    const before = (await c.send({ op: 'list_worlds' })).worlds.length;
    const bad = await c.send({ op: 'create_world', name: 'x', template: 'no-such' });
    assert.equal(bad.error.code, 'not_found');
    assert.match(bad.error.message, /no world template "no-such"/);
    assert.equal((await c.send({ op: 'list_worlds' })).worlds.length, before);
  } finally {
    await c.close();
  }
});

// add_box: the level grows at run time. The reply, then the statics event
// to a subscriber; a later subscriber finds the box in its statics; a
// ball dropped onto it comes to rest on its top (y = center + half extent
// + radius, 1.2 + 0.2 = 1.4 m, within 5 cm), not on the ground (0.2 m);
// bad extents are out_of_range and the 65th box of a 64-box world is
// too_large, each changing nothing.
test('add_box adds to a running world\'s level, and bodies land on it', async () => {
  const c = await Client.connect(server.url);
  try {
    const w = await freshWorld(c, 'level');
    assert.equal((await c.send({ op: 'subscribe', world: w, format: 'json', rate_hz: 30 })).ok, true);
    const r = await c.send({ op: 'add_box', world: w, center: [0, 0.6, 0], half_extents: [1, 0.6, 1] });
    assert.equal(r.ok, true, JSON.stringify(r));
    const ev = await c.next((m) => m.ev === 'statics' && m.world === w, 3000);
    assert.deepEqual(ev.statics.boxes, [{ center: [0, 0.6, 0], half_extents: [1, 0.6, 1] }]);
    const d = await Client.connect(server.url);
    const sub = await d.send({ op: 'subscribe', world: w, format: 'json', rate_hz: 1 });
    assert.equal(sub.statics.boxes.length, 1);
    await d.close();
    const ball = (await c.send({ op: 'spawn_ball', world: w, position: [0.2, 3, -0.1], radius: 0.2 })).entity;
    let y = null;
    const end = Date.now() + 5000;
    while (Date.now() < end) {
      const snap = await c.next((m) => m.ev === 'snapshot' && m.world === w, 3000);
      const e = snap.entities.find((x) => x.entity === ball);
      if (e) y = e.p[1];
      if (snap.tick > r.tick + 150) break; // 2.5 s: fallen and settled
    }
    assert.ok(Math.abs(y - 1.4) < 0.05, `the ball rests at y = ${y}, not on the box's top`);
    const bad = await c.send({ op: 'add_box', world: w, center: [0, 1, 0], half_extents: [0, 1, 1] });
    assert.equal(bad.error.code, 'out_of_range');
    for (let i = 1; i < 64; i++) {
      assert.equal((await c.send({ op: 'add_box', world: w, center: [10 + i, 0.5, 10], half_extents: [0.4, 0.5, 0.4] })).ok, true);
    }
    const over = await c.send({ op: 'add_box', world: w, center: [0, 1, 20], half_extents: [1, 1, 1] });
    assert.equal(over.error.code, 'too_large');
    assert.match(over.error.message, /has 64 boxes, its limit/);
  } finally {
    await c.close();
  }
});
