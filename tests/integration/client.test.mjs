// The JavaScript client library (clients/js) against a real ragdolld:
// typed commands and typed errors, binary snapshots decoded and
// acknowledged (the server then sends deltas) and equal to a JSON
// subscription's within the codec's error, events, interpolation, and a
// reconnect after the server restarts with the subscription made again.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import WebSocket from 'ws';
import { startServer, sleep } from '../lib/ragdolld.mjs';
import { RagdollClient, RagdollError } from '../../clients/js/src/index.js';

let server;
before(async () => { server = await startServer(['--no-demo']); });
after(async () => { assert.equal(await server.stop(), 0); });

const connect = (url, o = {}) => RagdollClient.connect(url, { WebSocket, ...o });

test('typed commands resolve with their replies and errors reject with their codes, nothing else changed', async () => {
  const c = await connect(server.url);
  assert.equal(c.welcome.ev, 'welcome');
  const { world } = await c.createWorld('js');
  const hero = await c.spawnCharacter(world, [0, 0, 0]);
  assert.ok(Number.isSafeInteger(hero.entity));
  await assert.rejects(c.kill(world, 424242, [0, 1, 0], [1, 0, 0]), (e) => e instanceof RagdollError && e.code === 'not_found');
  await assert.rejects(c.raycast(world, [0, 1, 0], [0, 0, 0]), (e) => e instanceof RagdollError && e.code === 'out_of_range');
  await assert.rejects(c.send({ op: 'teleport' }), (e) => e instanceof RagdollError && e.code === 'unknown_op');
  assert.equal((await c.describe(world, hero.entity)).state, 'animated');
  const ray = await c.raycast(world, [-3, 1.57, 0], [1, 0, 0]);
  assert.equal(ray.hit.bone, 'head');
  const kill = await c.kill(world, hero.entity, ray.hit.point, [30, 0, 0], { bone: 'head' });
  assert.equal(kill.bone, 'head');
  const list = await c.listWorlds();
  assert.ok(list.worlds.some((w) => w.world === world));
  await c.destroyWorld(world);
  c.close();
});

test('binary snapshots are decoded, acknowledged, equal to JSON within the codec error, and interpolated', async () => {
  const c = await connect(server.url);
  const { world } = await c.createWorld('stream');
  const hero = await c.spawnCharacter(world, [0, 0, 0], { clip: 'walk' });
  await c.spawnBall(world, [3, 1, 0]);
  const jsonSide = await connect(server.url);
  const json = new Map();
  await jsonSide.subscribe(world, { format: 'json', rate_hz: 60 }, (s) => json.set(s.tick, s));
  const got = [];
  const sub = await c.subscribe(world, { rate_hz: 60 }, (s) => got.push(s));
  await sleep(1500);
  assert.ok(got.length >= 30, `${got.length} snapshots`);
  assert.ok(c.stats.acks >= got.length - 1, `${c.stats.acks} acks`);
  assert.ok(c.stats.deltas > got.length / 2, `${c.stats.deltas} deltas: the acks took`);
  let compared = 0;
  for (const s of got) {
    const j = json.get(s.tick);
    if (j === undefined) continue;
    const a = s.entities.find((e) => e.entity === hero.entity).bones;
    const b = j.entities.find((e) => e.entity === hero.entity).bones;
    for (let i = 0; i < a.length; i++) {
      for (let k = 0; k < 3; k++) assert.ok(Math.abs(a[i].p[k] - b[i].p[k]) < 2e-3, `bone ${i} at tick ${s.tick}`);
    }
    compared++;
  }
  assert.ok(compared >= 10, `${compared} ticks compared`);
  // Bone names come with describe.
  assert.equal(got[got.length - 1].entities.find((e) => e.entity === hero.entity).bones[3].name, 'head');
  const drawn = sub.sample();
  assert.ok(drawn.info.delayMs >= 2000 / 60 && drawn.info.tickA <= drawn.info.tickB);
  assert.ok(drawn.snapshot.entities.some((e) => e.entity === hero.entity));
  jsonSide.close();
  c.close();
});

test('events come to listeners by name', async () => {
  const c = await connect(server.url);
  const { world } = await c.createWorld('events');
  await c.setParams(world, { bounciness: 0 });
  const impacts = [];
  c.on('impacts', (ev) => impacts.push(...ev.impacts));
  await c.subscribe(world, { events: ['impact'] });
  const ball = await c.spawnBall(world, [0, 2.2, 0], { radius: 0.2 });
  await sleep(1500);
  assert.equal(impacts.length, 1);
  assert.equal(impacts[0].entity, ball.entity);
  assert.ok(Math.abs(impacts[0].speed - Math.sqrt(2 * 9.81 * 2)) < 0.05 * Math.sqrt(2 * 9.81 * 2));
  c.close();
});

// A port nobody uses now, for a server started twice on it.
async function freePort() {
  const s = createServer();
  await new Promise((r) => s.listen(0, '127.0.0.1', r));
  const { port } = s.address();
  await new Promise((r) => s.close(r));
  return port;
}

test('a refused subscribe changes nothing; a second one replaces the first, whose close leaves it be', async () => {
  const c = await connect(server.url);
  const { world } = await c.createWorld('twice');
  let first = 0, second = 0;
  const a = await c.subscribe(world, { rate_hz: 30 }, () => first++);
  await assert.rejects(c.subscribe(world, { events: ['bogus'] }), (e) => e.code === 'bad_request');
  const f0 = first;
  await sleep(500);
  assert.ok(first > f0 + 5, `the first subscription goes on: ${first - f0} snapshots`);
  // The first closed while its replacement is on its way: the second lives.
  const pending = c.subscribe(world, { rate_hz: 30 }, () => second++);
  await a.close();
  const b = await pending;
  const s0 = second;
  await sleep(500);
  assert.ok(second > s0 + 5, `the second subscription goes on: ${second - s0} snapshots`);
  await b.close();
  c.close();
});

test('a number that is not finite is refused in the client, not sent as null', async () => {
  const c = await connect(server.url);
  const { world } = await c.createWorld('finite');
  await assert.rejects(c.spawnBall(world, [0, 4, 0], { radius: Infinity }),
    (e) => e instanceof RagdollError && e.code === 'not_finite' && /radius/.test(e.message));
  await assert.rejects(c.raycast(world, [0, 1, 0], [1, 0, 0], { maxDistance: NaN }), (e) => e.code === 'not_finite');
  assert.equal((await c.listWorlds()).worlds.find((w) => w.world === world).entities, 0);
  c.close();
});

test('connect gives up on a listener that never answers', async () => {
  const silent = createServer(() => {}); // takes the connection, says nothing
  await new Promise((r) => silent.listen(0, '127.0.0.1', r));
  try {
    await assert.rejects(connect(`ws://127.0.0.1:${silent.address().port}/ws`, { connectTimeoutMs: 500 }),
      /no welcome within 500 ms/);
  } finally {
    silent.close();
  }
});

test('a first connection that fails is given up: no client is left trying', async () => {
  const port = await freePort();
  await assert.rejects(connect(`ws://127.0.0.1:${port}/ws`), /cannot connect/);
  const s = await startServer(['--port', String(port)]);
  try {
    await sleep(1500); // the backoff's first retry would have come by now
    const health = await (await fetch(`${s.http}/healthz`)).json();
    assert.equal(health.sessions, 0, JSON.stringify(health));
  } finally {
    assert.equal(await s.stop(), 0);
  }
});

test('reconnects after the server restarts and subscribes again', async () => {
  const port = await freePort();
  let s = await startServer(['--port', String(port)]);
  const c = await connect(`ws://127.0.0.1:${port}/ws`);
  const statuses = [];
  c.on('status', (x) => statuses.push(x.state));
  const ticks = [];
  const sub = await c.subscribe(1, { rate_hz: 30 }, (snap) => ticks.push(snap.tick)); // the demo world
  // A focus far away: the demo's cloth is frozen (level of detail), and
  // again after the restart, for the client says it again.
  assert.equal((await sub.setFocus([900, 0, 900], 10)).ok, true);
  await sleep(500);
  assert.ok(ticks.length > 5);
  // (Garments follow their wearer and never freeze: the sheet does.)
  const clothLod = async () => {
    const cloths = (sub.latest?.entities ?? []).filter((e) => e.kind === 'cloth');
    const lods = await Promise.all(cloths.map((e) => c.send({ op: 'describe', world: 1, entity: e.entity })));
    return lods.some((d) => d.lod === 'frozen') ? 'frozen' : JSON.stringify(lods.map((d) => d.lod));
  };
  assert.equal(await clothLod(), 'frozen');
  assert.equal(await s.stop(), 0);
  await sleep(300);
  const before = ticks.length;
  s = await startServer(['--port', String(port)]);
  const deadline = Date.now() + 15000;
  while (ticks.length <= before + 5 && Date.now() < deadline) await sleep(100);
  assert.ok(ticks.length > before + 5, 'snapshots again after the restart');
  assert.equal(await clothLod(), 'frozen', 'the focus was said again after the reconnect');
  assert.ok(statuses.includes('closed') && statuses.lastIndexOf('open') > statuses.indexOf('closed'));
  const after = ticks.slice(before);
  assert.ok(after.every((t, i) => i === 0 || t > after[i - 1]), 'the new subscription\'s ticks increase');
  c.close();
  assert.equal(await s.stop(), 0);
});
