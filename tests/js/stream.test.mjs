// The viewer's binary snapshot stream (clients/js/src/stream.js) on the golden
// frames (protocol/golden/, world 3, ticks across the 16-bit wrap): acks
// with full ticks, describe once per new entity (again after a
// rate_limited reply, not before the wait it names), topology forgotten
// with the entity, and one resync for a frame it cannot decode; partial
// frames (hand-built: tests/js/partial_frames.mjs) acked alike, their
// records the whole view. A fake link stands in for the connection and a
// fake clock for time.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DESCRIBE_RETRY_MS, RESYNC_RETRY_MS, SnapshotStream } from '../../clients/js/src/index.js';
import { partialFrame } from './partial_frames.mjs';

// (import.meta.dirname needs Node 20.11; Debian 12 ships Node 18.)
const GOLDEN = fileURLToPath(new URL('../../protocol/golden', import.meta.url));
const vectors = JSON.parse(readFileSync(join(GOLDEN, 'vectors.json'), 'utf8'));
const frame = (i) => readFileSync(join(GOLDEN, vectors.frames[i].file));

const ROPE = 4294967297; // 5 particles, then 3 in frame 3's new rope
const BALL = 4294967298; // gone in frame 3
const CHARACTER = 12884901891; // 4 bones
const NEW_ROPE = 4294967300;

// Describe replies by entity, shaped like the server's.
const topology = {
  [ROPE]: { kind: 'rope', particle_count: 5, sticks: [[0, 1], [1, 2], [2, 3], [3, 4]], radii: [], pinned: [0] },
  [BALL]: { kind: 'ball', radius: 0.2 },
  [CHARACTER]: {
    kind: 'character', skeleton: 'test',
    bones: ['root', 'a', 'b', 'c'].map((name) => ({ name, capsule: { radius: 0.1, half_length: 0.2 } })),
  },
  [NEW_ROPE]: { kind: 'rope', particle_count: 3, sticks: [[0, 1], [1, 2]], radii: [], pinned: [0] },
};

// A link whose replies are decided by answer(cmd) (default: ok), recorded.
function fakeLink(answer = () => null) {
  const link = {
    t: 1000,
    sent: [],
    binary: [],
    logs: [],
    now: () => link.t,
    send(cmd) {
      link.sent.push(cmd);
      const custom = answer(cmd);
      if (custom) return Promise.resolve(custom);
      if (cmd.op === 'describe') return Promise.resolve({ ok: true, entity: cmd.entity, ...topology[cmd.entity] });
      return Promise.resolve({ ok: true });
    },
    sendBinary(bytes) {
      link.binary.push(Buffer.from(bytes));
      return true;
    },
    log(text) {
      link.logs.push(text);
    },
  };
  return link;
}

const settle = () => new Promise((r) => setImmediate(r));
const describes = (link) => link.sent.filter((c) => c.op === 'describe').map((c) => c.entity);

test('every snapshot is acked with its full tick, across the 16-bit wrap', async () => {
  const link = fakeLink();
  // Subscribed at full tick 65530 + 65536: frame ticks 65534, 65535, 1, 4 unwrap past it.
  const base = 65536 + 65530;
  const s = new SnapshotStream({ world: 3, tick: base }, link);
  const ticks = [];
  for (let i = 0; i < 4; i++) {
    const snap = s.receive(frame(i));
    assert.ok(snap, `frame ${i} decodes`);
    assert.equal(snap.delta, i > 0);
    ticks.push(snap.tick);
    await settle();
  }
  assert.deepEqual(ticks, [65536 + 65534, 65536 + 65535, 2 * 65536 + 1, 2 * 65536 + 4]);
  const acked = link.binary.map((b) => [b.length, b[0], Number(b.readBigUInt64LE(1)), Number(b.readBigUInt64LE(9))]);
  assert.deepEqual(acked, ticks.map((t) => [17, 0x41, 3, t]));
  assert.deepEqual(
    { snapshots: s.stats.snapshots, deltas: s.stats.deltas, acks: s.stats.acks, errors: s.stats.errors },
    { snapshots: 4, deltas: 3, acks: 4, errors: 0 });
});

test('each new entity is described once; its topology goes with it', async () => {
  const link = fakeLink();
  const s = new SnapshotStream({ world: 3, tick: 65530 }, link);
  const first = s.receive(frame(0));
  // Until describe answers, records carry poses but no topology.
  assert.equal(s.withTopology(first.entities[0]), null);
  assert.equal(first.entities[2].bones[0].name, null);
  await settle();
  assert.deepEqual(describes(link).sort(), [ROPE, BALL, CHARACTER].sort());

  const second = s.receive(frame(1));
  const rope = s.withTopology(second.entities.find((e) => e.entity === ROPE));
  assert.equal(rope.particles.length, 5);
  assert.deepEqual(rope.pinned, [0]);
  assert.deepEqual(s.withTopology(second.entities.find((e) => e.entity === BALL)).capsules, [[0.2, 0]]);
  const character = second.entities.find((e) => e.entity === CHARACTER);
  assert.equal(character.skeleton, 'test');
  assert.deepEqual(character.bones.map((b) => b.name), ['root', 'a', 'b', 'c']);
  assert.deepEqual(s.withTopology(character).capsules[0], [0.1, 0.2]);

  s.receive(frame(2));
  await settle();
  assert.equal(describes(link).length, 3, 'no describe for entities already known');
  // Frame 3: the ball is gone, a new rope came.
  const fourth = s.receive(frame(3));
  await settle();
  assert.deepEqual(fourth.entities.map((e) => e.entity), [ROPE, CHARACTER, NEW_ROPE]);
  assert.equal(s.topologyOf(BALL), null);
  assert.deepEqual(describes(link).slice(3), [NEW_ROPE]);
  assert.equal(s.topologyOf(NEW_ROPE).particle_count, 3);
});

test('a rate_limited describe is retried after the wait it names, not before', async () => {
  let limited = true;
  const link = fakeLink((cmd) => (cmd.op === 'describe' && limited
    ? { re: 1, error: { code: 'rate_limited', message: 'this client has had its 8 MiB of describe replies (4 MiB/s); retry in 1500 ms' } }
    : null));
  const s = new SnapshotStream({ world: 3, tick: 65530 }, link);
  s.receive(frame(0));
  await settle();
  assert.equal(describes(link).length, 3);
  assert.ok(link.logs.some((l) => l.includes('rate_limited')), link.logs.join('\n'));
  limited = false;
  link.t += Math.max(DESCRIBE_RETRY_MS, 1500) - 1;
  s.receive(frame(1));
  await settle();
  assert.equal(describes(link).length, 3, 'no retry before the wait is over');
  link.t += 2;
  const snap = s.receive(frame(2));
  await settle();
  assert.equal(describes(link).length, 6, 'each retried once');
  assert.ok(snap.entities.every((e) => s.topologyOf(e.entity) !== null));
});

test('an undecodable frame asks for one resync, until a full snapshot comes', async () => {
  const link = fakeLink();
  const s = new SnapshotStream({ world: 3, tick: 65530 }, link);
  const resyncs = () => link.sent.filter((c) => c.op === 'resync');
  // A delta whose baseline this decoder never had.
  assert.equal(s.receive(frame(1)), null);
  assert.equal(s.receive(frame(2)), null);
  assert.equal(s.receive(new Uint8Array([0x52, 0x44, 0x53, 0x32, 2, 0, 1])), null); // truncated
  assert.deepEqual(resyncs(), [{ op: 'resync', world: 3 }], 'one resync for the burst');
  assert.equal(link.binary.length, 0, 'nothing acked');
  assert.equal(s.stats.errors, 1, 'only the malformed frame counts as an error');
  // No full snapshot for a while: ask again, once.
  link.t += RESYNC_RETRY_MS;
  s.receive(frame(3));
  assert.equal(resyncs().length, 2);
  // The full snapshot mends it; a later failure asks again at once.
  assert.ok(s.receive(frame(0)));
  assert.ok(s.receive(frame(1)));
  assert.equal(s.receive(frame(3)), null); // its baseline (tick 1) was never decoded
  assert.equal(resyncs().length, 3);
  await settle();
});

test('a closed stream asks for nothing more', async () => {
  const link = fakeLink();
  const s = new SnapshotStream({ world: 3, tick: 65530 }, link);
  s.close();
  s.receive(frame(0));
  s.receive(frame(2));
  await settle();
  assert.equal(link.sent.length, 0);
});

// Partial frames: a ball and a rope of world 3, by hand.
const P_BALL = 2 ** 32 + 7;
const P_ROPE = 2 ** 32 + 3;
const P_BALL2 = 2 * 2 ** 32 + 7;
const P_BALL_A = [512, 205, 4096, 3, 0, 0, 0];
const P_ROPE_A = [1024, 2048, -512, 1331, 2048, -512, 1638, 2048, -512];
const P_ROPE_B = [1024, 2048, -512, 1340, 2000, -500, 1638, 2048, -512];
const partialTopology = {
  [P_BALL]: { kind: 'ball', radius: 0.2 },
  [P_BALL2]: { kind: 'ball', radius: 0.3 },
  [P_ROPE]: { kind: 'rope', particle_count: 3, sticks: [[0, 1], [1, 2]], radii: [], pinned: [0] },
};
const partialLink = () => fakeLink((cmd) => (cmd.op === 'describe' ? { ok: true, entity: cmd.entity, ...partialTopology[cmd.entity] } : null));
const p10 = () => partialFrame(10, { reset: true, entities: [{ id: P_BALL, kind: 5, ints: P_BALL_A }, { id: P_ROPE, kind: 1, ints: P_ROPE_A }] });
const p11 = () => partialFrame(11, { entities: [{ id: P_BALL, kind: 5, ints: P_BALL_A, back: 0, base: P_BALL_A }] });
const p12 = () => partialFrame(12, { entities: [{ id: P_ROPE, kind: 1, ints: P_ROPE_B, back: 1, base: P_ROPE_A }] });

test('partial frames are acked with their full ticks; the records cover the whole view', async () => {
  const link = partialLink();
  const base = 2 * 65536 + 8;
  const s = new SnapshotStream({ world: 3, tick: base }, link);
  const snaps = [p10(), p11(), p12()].map((f) => s.receive(f));
  await settle();
  assert.ok(snaps.every((snap) => snap !== null && snap.partial && !snap.delta));
  assert.deepEqual(snaps.map((snap) => snap.tick), [base + 2, base + 3, base + 4]);
  const acked = link.binary.map((b) => [b.length, b[0], Number(b.readBigUInt64LE(1)), Number(b.readBigUInt64LE(9))]);
  assert.deepEqual(acked, snaps.map((snap) => [17, 0x41, 3, snap.tick]));
  assert.deepEqual(snaps.map((snap) => snap.carried), [[P_BALL, P_ROPE], [P_BALL], [P_ROPE]]);
  assert.deepEqual(snaps[0].reset, true);

  // Frame 12 carried the rope only: the ball is drawn where frame 11 left it.
  const last = snaps[2];
  assert.deepEqual(last.entities.map((e) => e.entity), [P_BALL, P_ROPE]);
  const ballRec = last.entities[0];
  assert.deepEqual([ballRec.kind, ballRec.tick16], ['ball', 11]);
  assert.deepEqual(ballRec.p, [0.5, 205 / 1024, 4]);
  assert.deepEqual(ballRec.q, [0, 0, 0, 1]);
  const ropeRec = s.withTopology(last.entities[1]);
  assert.equal(ropeRec.tick16, 12);
  assert.deepEqual(ropeRec.particles, [0, 1, 2].map((i) => P_ROPE_B.slice(3 * i, 3 * i + 3).map((v) => v / 1024)));
  assert.deepEqual(ropeRec.pinned, [0]);
  assert.deepEqual(s.withTopology(ballRec).capsules, [[0.2, 0]]);
  assert.deepEqual(describes(link).sort(), [P_BALL, P_ROPE].sort(), 'each described once');
  assert.deepEqual(
    { snapshots: s.stats.snapshots, partials: s.stats.partials, deltas: s.stats.deltas, acks: s.stats.acks, errors: s.stats.errors },
    { snapshots: 3, partials: 3, deltas: 0, acks: 3, errors: 0 });

  // A removal, and a new entity in the same slot: described; the removed
  // one's topology forgotten.
  const removed = s.receive(partialFrame(13, { removed: [P_BALL], entities: [{ id: P_BALL2, kind: 5, ints: P_BALL_A }] }));
  await settle();
  assert.deepEqual(removed.removed, [P_BALL]);
  assert.deepEqual(removed.entities.map((e) => e.entity), [P_ROPE, P_BALL2]);
  assert.equal(s.topologyOf(P_BALL), null);
  assert.deepEqual(describes(link).slice(2), [P_BALL2]);

  // A reset that carries the new ball only: the rope leaves the view, and
  // what was known of it.
  const reset = s.receive(partialFrame(14, { reset: true, entities: [{ id: P_BALL2, kind: 5, ints: P_BALL_A, back: 0, base: P_BALL_A }] }));
  await settle();
  assert.deepEqual(reset.entities.map((e) => e.entity), [P_BALL2]);
  assert.equal(s.topologyOf(P_ROPE), null);
  assert.equal(s.topologyOf(P_BALL2).radius, 0.3);
  assert.equal(describes(link).length, 3, 'no describe again for the entity kept');
});

test('a partial frame that cannot be decoded asks for a resync, which a reset frame answers', async () => {
  const link = partialLink();
  const s = new SnapshotStream({ world: 3, tick: 8 }, link);
  const resyncs = () => link.sent.filter((c) => c.op === 'resync').length;
  assert.equal(s.receive(p11()), null, 'its baseline (frame 10) never came');
  assert.equal(resyncs(), 1);
  assert.equal(link.binary.length, 0, 'nothing acked');
  // The reset frame mends it, and is acked.
  assert.ok(s.receive(p10()));
  assert.equal(link.binary.length, 1);
  // A frame that fails now asks again at once; one that decodes without a
  // reset is not the answer, so a failure right after it asks no more.
  assert.equal(s.receive(partialFrame(11, { entities: [{ id: P_ROPE, kind: 1, ints: P_ROPE_B, back: 5, base: P_ROPE_A }] })), null);
  assert.equal(resyncs(), 2);
  assert.ok(s.receive(p11()));
  assert.equal(s.receive(partialFrame(12, { entities: [{ id: P_ROPE, kind: 1, ints: P_ROPE_B, back: 0, base: P_ROPE_A }] })), null);
  assert.equal(resyncs(), 2, 'the resync asked for is still on its way');
  assert.equal(s.stats.errors, 0, 'missing baselines are no errors');
  // Malformed (unknown flags): an error, logged.
  const bad = p12();
  bad[5] = 0x0a;
  link.t += RESYNC_RETRY_MS;
  assert.equal(s.receive(bad), null);
  assert.equal(s.stats.errors, 1);
  assert.equal(resyncs(), 3);
  await settle();
});
