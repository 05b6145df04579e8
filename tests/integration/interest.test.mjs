// Interest management (issue 14, item 2; PROTOCOL.md §5.3) against a real
// ragdolld: 200 ragdolls over 200 m watched by a client with a 20 kB/s
// budget and a focus.
//
// What is checked, from the protocol's promises rather than the server's
// own figures:
//   - bytes: everything the client receives (partial frames and metrics
//     events, payload bytes), over 5 s, is at most 20 000 a second;
//   - the 10 entities nearest the focus come in at least 80 % of the frames
//     the subscription gets (its full rate), while they keep moving;
//   - every entity comes at least once a second (no gap between two frames
//     carrying it longer than the world's tick rate in ticks);
//   - what the client decodes is what a full JSON subscription shows at the
//     same tick, within the codec's error (0.49 mm) plus JSON's rounding
//     (0.05 mm).
// The world: a 20 × 10 grid of particle ragdolls 10.5 m apart (199.5 m
// along x), dropped; they come to rest, except the 10 nearest the focus,
// kicked every 0.4 s, and 10 far ones, kicked every second (so the budget
// has more to carry than it can, and must choose).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Client, startServer, sleep } from '../lib/ragdolld.mjs';
import { Decoder, ackFrame, unwrapTick } from '../../clients/js/src/index.js';

let server;
before(async () => { server = await startServer(['--no-demo']); });
after(async () => { assert.equal(await server.stop(), 0, 'ragdolld exits cleanly on SIGTERM'); });

const BUDGET = 20000;
const FOCUS = [-90, 1, -40];
const SPACING = 10.5;

test('a 20 kB/s client with a focus: within budget, nearest at full rate, all once a second, positions as JSON shows them', async () => {
  const admin = await Client.connect(server.url);
  const made = await admin.send({ op: 'create_world', name: 'interest', tick_hz: 30 });
  assert.equal(made.ok, true, JSON.stringify(made));
  const w = made.world;
  const ents = []; // { entity, at: [x, y, z] }
  for (let i = 0; i < 20; i++) {
    for (let j = 0; j < 10; j++) {
      const at = [i * SPACING - 99.75, 1.2, j * SPACING - 47.25];
      const r = await admin.send({ op: 'spawn_ragdoll', world: w, position: at });
      assert.equal(r.ok, true, JSON.stringify(r));
      ents.push({ entity: r.entity, at });
    }
  }
  const dist = (p) => Math.hypot(p[0] - FOCUS[0], p[2] - FOCUS[2]);
  const byDistance = [...ents].sort((a, b) => dist(a.at) - dist(b.at));
  const nearest = byDistance.slice(0, 10).map((e) => e.entity);
  const farMoving = byDistance.slice(-10).map((e) => e.entity);

  // The reference: a JSON subscription at every tick.
  const json = await Client.connect(server.url);
  const jsonByTick = new Map();
  json.ws.on('message', (data, isBinary) => {
    if (isBinary) return;
    const m = JSON.parse(data.toString());
    if (m.ev === 'snapshot' && m.world === w) {
      jsonByTick.set(m.tick, new Map(m.entities.map((e) => [e.entity, e.particles])));
      for (const t of jsonByTick.keys()) if (t < m.tick - 120) jsonByTick.delete(t);
    }
  });
  assert.equal((await json.send({ op: 'subscribe', world: w, rate_hz: 30 })).ok, true);

  const viewer = await Client.connect(server.url);
  const sub = await viewer.send({ op: 'subscribe', world: w, format: 'binary', rate_hz: 30, bytes_per_s: BUDGET });
  assert.equal(sub.ok, true, JSON.stringify(sub));
  assert.equal(sub.bytes_per_s, BUDGET);
  assert.equal((await viewer.send({ op: 'set_focus', world: w, point: FOCUS, radius: 20 })).ok, true);

  const decoder = new Decoder();
  let tick = sub.tick;
  let recording = false;
  const rec = { bytes: 0, frames: 0, ticks: [], carried: new Map(), worst: 0, compared: 0, errors: 0 };
  viewer.ws.on('message', (data, isBinary) => {
    if (!recording) {
      if (isBinary) decodeAndAck(data, false);
      return;
    }
    rec.bytes += data.length;
    if (isBinary) decodeAndAck(data, true);
  });
  function decodeAndAck(data, record) {
    let s;
    try {
      s = decoder.decode(new Uint8Array(data));
    } catch (e) {
      rec.errors++;
      return;
    }
    tick = unwrapTick(tick, s.tick16);
    viewer.ws.send(ackFrame(w, tick));
    if (!record) return;
    assert.equal(s.partial, true, 'a budgeted binary subscription gets partial frames');
    rec.frames++;
    rec.ticks.push(tick);
    for (const id of s.carried) {
      if (!rec.carried.has(id)) rec.carried.set(id, []);
      rec.carried.get(id).push(tick);
    }
    // Against the JSON snapshot of the same tick (it comes at the same
    // time; compared once both are in).
    const carried = new Set(s.carried);
    // (Copied as the decoder gives them, in doubles: rounding them to floats
    // would add up to 4 µm at 100 m from the origin.)
    const mine = s.entities.filter((e) => carried.has(e.entity)).map((e) => ({ id: e.entity, f: Float64Array.from(e.f) }));
    const at = tick;
    setTimeout(() => {
      const ref = jsonByTick.get(at);
      if (ref === undefined) return;
      for (const { id, f } of mine) {
        const parts = ref.get(id);
        assert.ok(parts !== undefined, `entity ${id} is in the JSON snapshot of tick ${at}`);
        assert.equal(parts.length * 3, f.length);
        parts.forEach((p, i) => {
          for (let c = 0; c < 3; c++) rec.worst = Math.max(rec.worst, Math.abs(p[c] - f[3 * i + c]));
        });
        rec.compared++;
      }
    }, 300);
  }

  // Let everything land and rest, then keep some moving.
  await sleep(3000);
  let kicking = true;
  const kick = (ids) => {
    for (const e of ids) {
      admin.send({ op: 'apply_impulse', world: w, entity: e, particle: 3,
        impulse: [Math.random() * 16 - 8, 30, Math.random() * 16 - 8] }).catch(() => {});
    }
  };
  const kicks = [
    (async () => { while (kicking) { kick(nearest); await sleep(400); } })(),
    (async () => { while (kicking) { kick(farMoving); await sleep(1000); } })(),
  ];
  await sleep(1500);
  recording = true;
  const t0 = Date.now();
  await sleep(5000);
  recording = false;
  const seconds = (Date.now() - t0) / 1000;
  kicking = false;
  await Promise.all(kicks);
  await sleep(500); // the last comparisons

  const perSecond = rec.bytes / seconds;
  console.log(`# ${rec.frames} frames in ${seconds.toFixed(2)} s, ${perSecond.toFixed(0)} B/s; ` +
    `${rec.compared} entity states compared with JSON, worst ${(rec.worst * 1000).toFixed(3)} mm`);
  assert.equal(rec.errors, 0, 'every frame decodes');
  assert.ok(perSecond <= BUDGET, `${perSecond.toFixed(0)} B/s received, budget ${BUDGET}`);
  assert.ok(rec.frames >= 0.5 * 30 * seconds, `${rec.frames} frames in ${seconds} s`);

  const rates = nearest.map((id) => (rec.carried.get(id) ?? []).length / rec.frames);
  console.log(`# nearest 10 in ${rates.map((r) => (100 * r).toFixed(0) + '%').join(' ')} of the frames`);
  for (const r of rates) assert.ok(r >= 0.8, `a nearest entity in ${(100 * r).toFixed(0)} % of the frames`);

  // Every entity at least once a second: its first carry within 1 s of the
  // window's start, its last within 1 s of its end, no gap over 30 ticks.
  const first = rec.ticks[0];
  const last = rec.ticks[rec.ticks.length - 1];
  let worstGap = 0;
  for (const { entity } of ents) {
    const t = rec.carried.get(entity) ?? [];
    assert.ok(t.length > 0, `entity ${entity} never came`);
    const gaps = [t[0] - first, last - t[t.length - 1], ...t.slice(1).map((x, i) => x - t[i])];
    worstGap = Math.max(worstGap, ...gaps);
  }
  console.log(`# longest an entity went unsent: ${worstGap} ticks (30 a second)`);
  assert.ok(worstGap <= 30, `an entity went ${worstGap} ticks unsent`);

  assert.ok(rec.compared > 1000, `${rec.compared} compared`);
  // The codec's 1/2048 m plus JSON's 0.05 mm: 0.538 mm at most.
  assert.ok(rec.worst <= 1 / 2048 + 0.00005 + 1e-6, `worst ${rec.worst * 1000} mm from JSON`);
  for (const c of [viewer, json, admin]) await c.close();
});

// A budget far smaller than the world sent whole (100 resting ragdolls of
// about 70 bytes each, 3000 B/s): once each has been sent, a resting one
// costs a few bytes against the state the client holds — even when it was
// last sent longer ago than the 32 frames a decoder keeps (its view still
// has it) — so the nearest come at most frames and every one stays fresh.
// (A fresh user found it never settling: each entity, sent less often than
// the world's 32 snapshots, was sent whole again and again.)
test('a small budget over many resting entities settles to cheap refreshes', async () => {
  const c = await Client.connect(server.url);
  const w = (await c.send({ op: 'create_world', name: 'resting', tick_hz: 30 })).world;
  const spawns = [];
  for (let i = 0; i < 10; i++) {
    for (let k = 0; k < 10; k++) spawns.push(c.send({ op: 'spawn_ragdoll', world: w, position: [i * 10.5, 1.5, k * 10.5] }));
  }
  const ents = await Promise.all(spawns);
  assert.ok(ents.every((r) => r.ok));
  await sleep(4000); // they land and rest
  const v = await Client.connect(server.url);
  const sub = await v.send({ op: 'subscribe', world: w, format: 'binary', bytes_per_s: 3000 });
  assert.equal((await v.send({ op: 'set_focus', world: w, point: [0, 1, 0], radius: 15 })).ok, true);
  const dec = new Decoder();
  let tick = sub.tick;
  let errors = 0;
  let recording = false;
  let bytes = 0;
  const count = new Map();
  let view = 0;
  v.ws.on('message', (d, isBinary) => {
    if (!isBinary) { if (recording) bytes += d.length; return; }
    let s;
    try { s = dec.decode(new Uint8Array(d)); } catch { errors++; return; }
    tick = unwrapTick(tick, s.tick16);
    v.ws.send(ackFrame(w, tick));
    view = s.entities.length;
    if (!recording) return;
    bytes += d.length;
    for (const id of s.carried) count.set(id, (count.get(id) ?? 0) + 1);
  });
  await sleep(5000); // every one sent whole once: about 7 kB at 3 kB/s
  recording = true;
  await sleep(4000);
  recording = false;
  const near = ents[0].entity; // at the focus
  const rate = (id) => (count.get(id) ?? 0) / 4;
  const all = ents.map((e) => rate(e.entity));
  console.log(`# ${bytes / 4} B/s; nearest ${rate(near)}/s, slowest ${Math.min(...all)}/s, ${all.reduce((a, x) => a + x, 0)} entities a second`);
  assert.equal(errors, 0, 'every frame decodes');
  assert.equal(view, 100, 'all 100 in the view');
  assert.ok(bytes / 4 <= 3000, `${bytes / 4} B/s on a 3000 B/s budget`);
  assert.ok(rate(near) >= 10, `the entity at the focus came ${rate(near)} times a second`);
  assert.ok(Math.min(...all) >= 1, `every entity at least once a second (slowest ${Math.min(...all)}/s)`);
  for (const x of [v, c]) await x.close();
});

test('bytes_per_s: its range, a JSON subscription skipping whole snapshots, a resync starting the view again', async () => {
  const c = await Client.connect(server.url);
  const w = (await c.send({ op: 'create_world', name: 'budget-edges', tick_hz: 30 })).world;
  for (const bad of [999, 1e8 + 1, -5]) {
    const r = await c.send({ op: 'subscribe', world: w, format: 'binary', bytes_per_s: bad });
    assert.equal(r.error?.code, 'out_of_range', `bytes_per_s ${bad}: ${JSON.stringify(r)}`);
  }
  for (const bad of ['x', 1.5]) {
    const r = await c.send({ op: 'subscribe', world: w, bytes_per_s: bad });
    assert.equal(r.error?.code, 'bad_request', `bytes_per_s ${bad}: ${JSON.stringify(r)}`);
  }
  for (const bad of [0, -1, 2001]) {
    assert.equal((await c.send({ op: 'subscribe', world: w, format: 'binary' })).ok, true);
    const r = await c.send({ op: 'set_focus', world: w, point: [0, 0, 0], radius: bad });
    assert.equal(r.error?.code, 'out_of_range', `radius ${bad}: ${JSON.stringify(r)}`);
  }
  // Nothing changed by the refusals: the world still steps and is watched.
  for (let i = 0; i < 5; i++) {
    assert.equal((await c.send({ op: 'spawn_ragdoll', world: w, position: [i * 3, 3, 0] })).ok, true);
  }

  // JSON with a budget: whole snapshots, skipped to stay within it. Five
  // ragdolls are about 3.5 kB a JSON snapshot, so 5000 B/s gets one or two
  // a second instead of 30.
  const j = await Client.connect(server.url);
  assert.equal((await j.send({ op: 'subscribe', world: w, rate_hz: 30, bytes_per_s: 5000 })).ok, true);
  let jbytes = 0;
  j.ws.on('message', (d, isBinary) => { if (!isBinary && d.toString().includes('"snapshot"')) jbytes += d.length; });
  await sleep(3000);
  const snaps = j.snapshots(w);
  assert.ok(snaps.length >= 2 && snaps.length <= 12, `${snaps.length} JSON snapshots in 3 s`);
  assert.ok(jbytes <= 5000 * 3 + 8000, `${jbytes} bytes of JSON snapshots in 3 s`);

  // Binary: the first frame resets the view; a resync makes the next do it
  // again, and the view then fills up again.
  const b = await Client.connect(server.url);
  const sub = await b.send({ op: 'subscribe', world: w, format: 'binary', bytes_per_s: 4000 });
  const decoder = new Decoder();
  let tick = sub.tick;
  const frames = [];
  b.ws.on('message', (d, isBinary) => {
    if (!isBinary) return;
    const s = decoder.decode(new Uint8Array(d));
    tick = unwrapTick(tick, s.tick16);
    frames.push({ reset: s.reset, size: s.entities.length });
    b.ws.send(ackFrame(w, tick));
  });
  await sleep(1500);
  assert.equal(frames[0].reset, true, 'the first partial frame resets the view');
  assert.equal(frames.filter((f) => f.reset).length, 1);
  assert.equal(frames[frames.length - 1].size, 5, 'all five in the view');
  assert.equal((await b.send({ op: 'resync', world: w })).ok, true);
  await sleep(1500);
  assert.equal(frames.filter((f) => f.reset).length, 2, 'a resync resets the view once');
  assert.equal(frames[frames.length - 1].size, 5);

  // A client that never acks while entities come and go: removals pile up
  // (each is sent until a frame carrying it is acknowledged); past what an
  // eighth of a frame's share holds (here 8) its view is reset instead, and
  // its frames stay within the budget.
  const mute = await Client.connect(server.url);
  const msub = await mute.send({ op: 'subscribe', world: w, format: 'binary', bytes_per_s: 3000 });
  assert.equal(msub.ok, true, JSON.stringify(msub));
  const mdec = new Decoder();
  const mframes = [];
  mute.ws.on('message', (d, isBinary) => {
    if (!isBinary) return;
    const s = mdec.decode(new Uint8Array(d)); // never acked
    mframes.push({ at: Date.now(), bytes: d.length, reset: s.reset });
  });
  await sleep(500);
  for (let round = 0; round < 3; round++) {
    const balls = [];
    for (let i = 0; i < 60; i++) {
      balls.push(c.send({ op: 'spawn_ball', world: w, position: [i - 30, 2, 10 + round] }));
    }
    const made = await Promise.all(balls);
    await sleep(600); // long enough for them to be sent
    await Promise.all(made.map((m) => c.send({ op: 'despawn', world: w, entity: m.entity })));
    await sleep(300);
  }
  await sleep(1000);
  const resets = mframes.filter((f) => f.reset).length;
  assert.ok(resets >= 2, `${resets} resets in ${mframes.length} frames of a client that never acks`);
  const t0 = mframes[0].at;
  const span = (mframes.at(-1).at - t0) / 1000;
  const bytes = mframes.reduce((a, f) => a + f.bytes, 0);
  assert.ok(bytes <= 3000 * Math.ceil(span + 1), `${bytes} bytes of frames in ${span.toFixed(1)} s on 3000 B/s`);
  await mute.close();

  // Removal: a despawned entity leaves the view.
  const gone = (await c.send({ op: 'spawn_ragdoll', world: w, position: [20, 3, 0] })).entity;
  await sleep(800);
  assert.equal(frames[frames.length - 1].size, 6);
  assert.equal((await c.send({ op: 'despawn', world: w, entity: gone })).ok, true);
  await sleep(800);
  assert.equal(frames[frames.length - 1].size, 5, 'the despawned one is removed from the view');
  for (const x of [b, j, c]) await x.close();
});
