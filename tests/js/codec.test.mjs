// The JavaScript decoder of binary snapshots (clients/js/src/codec.js) against
// the golden vectors the C encoder wrote (protocol/golden/): the same frames
// must decode to the values they were made from, within the protocol's
// bounds (1 mm, 0.1°), with the same wire ticks. tests/unit/test_codec.c
// checks the C decoder against the same files. Partial frames (§5.2
// "Partial frames") too: the golden ones, and small ones built here by hand
// (tests/js/partial_frames.mjs) for each case of the view.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Decoder, BaselineError, unwrapTick, ackFrame, peekWorld } from '../../clients/js/src/index.js';
import { BitWriter, frameBytes, partialFrame, writeBall, writeParticles } from './partial_frames.mjs';

// (import.meta.dirname needs Node 20.11; Debian 12 ships Node 18.)
const GOLDEN = fileURLToPath(new URL('../../protocol/golden', import.meta.url));
const vectors = JSON.parse(readFileSync(join(GOLDEN, 'vectors.json'), 'utf8'));

const angle = (a, b) => 2 * Math.acos(Math.min(1, Math.abs(a[0] * b[0] + a[1] * b[1] + a[2] * b[2] + a[3] * b[3])));
const STATES = ['animated', 'ragdoll', 'getting_up', 'partial'];

// Decoded values against the values they were encoded from (as the golden
// vectors give them): positions within 1 mm, orientations within 0.1°.
function worstErrors(got, want) {
  let pos = 0;
  let rot = 0;
  const rigid = want.kind === 4 || want.kind === 5;
  assert.equal(got.f.length, want.values.length, `entity ${want.entity}: values`);
  for (let i = 0; i < want.values.length; i++) {
    if (rigid && i % 7 === 3) {
      rot = Math.max(rot, angle(Array.from(got.f.slice(i, i + 4)), want.values.slice(i, i + 4)));
      i += 3;
    } else {
      pos = Math.max(pos, Math.abs(got.f[i] - want.values[i]));
    }
  }
  return { pos, rot };
}

test('golden vectors decode to the values they were encoded from', () => {
  const d = new Decoder();
  let worstPos = 0;
  let worstAngle = 0;
  for (const frame of vectors.frames) {
    const bytes = readFileSync(join(GOLDEN, frame.file));
    assert.equal(bytes.length, frame.bytes);
    const s = d.decode(bytes);
    assert.equal(s.world, 3);
    assert.equal(s.tick16, frame.tick16);
    assert.equal(s.baseline16, frame.baseline16);
    assert.equal(s.entities.length, frame.entities.length);
    frame.entities.forEach((want, k) => {
      const got = s.entities[k];
      assert.equal(got.entity, want.entity);
      assert.equal(got.kind, want.kind);
      if (want.state !== null) assert.equal(['animated', 'ragdoll', 'getting_up', 'partial'][got.state], want.state);
      // Exactly the integers the C encoder put on the wire.
      assert.deepEqual(Array.from(got.vals), want.ints);
      const rigid = want.kind === 4 || want.kind === 5;
      assert.equal(got.f.length, want.values.length);
      for (let i = 0; i < want.values.length; i++) {
        if (rigid && i % 7 === 3) {
          const a = Array.from(got.f.slice(i, i + 4));
          const b = want.values.slice(i, i + 4);
          worstAngle = Math.max(worstAngle, angle(a, b));
          i += 3;
        } else {
          worstPos = Math.max(worstPos, Math.abs(got.f[i] - want.values[i]));
        }
      }
    });
  }
  assert.ok(worstPos <= 0.001, `position error ${worstPos} m`);
  assert.ok(worstAngle <= (0.1 * Math.PI) / 180, `orientation error ${worstAngle} rad`);
  // Across the wrap: frame 2's wire tick is 1, its baseline 65535.
  assert.equal(unwrapTick(65535, 1), 65537);
  assert.equal(unwrapTick(65537, 65535), 65535);
});

test('a delta against a baseline the decoder lacks is refused and changes nothing', () => {
  const d = new Decoder();
  const delta = readFileSync(join(GOLDEN, vectors.frames[1].file));
  assert.throws(() => d.decode(delta), BaselineError);
  assert.throws(() => d.decode(new Uint8Array([1, 2, 3])), RangeError);
  const full = readFileSync(join(GOLDEN, vectors.frames[0].file));
  d.decode(full);
  // Truncated: refused, and the baseline still serves the real delta.
  assert.throws(() => d.decode(delta.subarray(0, delta.length - 3)), RangeError);
  assert.equal(d.decode(delta).tick16, 65535);
});

test('an ack frame is the 17 bytes PROTOCOL.md gives', () => {
  const b = ackFrame(2 ** 53 - 1, 123456789012);
  assert.equal(b.length, 17);
  assert.equal(b[0], 0x41);
  const dv = new DataView(b.buffer);
  assert.equal(dv.getBigUint64(1, true), 2n ** 53n - 1n);
  assert.equal(dv.getBigUint64(9, true), 123456789012n);
});

// --- Partial frames -------------------------------------------------------

test('golden partial frames decode, in order, to the views they were encoded from', (t) => {
  // Written by the C encoder with the frames above (protocol/golden/,
  // "partial" in vectors.json); decoded by a fresh decoder, one after the other.
  const partial = vectors.partial;
  assert.ok(Array.isArray(partial) && partial.length > 0,
    'protocol/golden/vectors.json has no "partial" frames: regenerate the golden vectors with the C encoder');
  const d = new Decoder();
  let worstPos = 0;
  let worstAngle = 0;
  for (const frame of partial) {
    const file = join(GOLDEN, frame.file);
    assert.ok(existsSync(file), `${file} is missing`);
    const bytes = readFileSync(file);
    assert.equal(bytes.length, frame.bytes, frame.file);
    assert.equal(peekWorld(bytes), 3, `${frame.file}: world from the header`);
    const s = d.decode(bytes);
    assert.equal(s.partial, true, frame.file);
    assert.equal(s.world, 3);
    assert.equal(s.tick16, frame.tick16);
    assert.equal(s.baseline16, null);
    assert.equal(s.reset, frame.reset, `${frame.file}: reset`);
    assert.deepEqual(s.removed, frame.removed, `${frame.file}: removed`);
    assert.deepEqual(s.carried, frame.carried, `${frame.file}: carried`);
    // The view, whatever its order.
    const got = new Map(s.entities.map((e) => [e.entity, e]));
    assert.equal(got.size, s.entities.length, `${frame.file}: an entity twice in the view`);
    assert.deepEqual([...got.keys()].sort((a, b) => a - b), frame.view.map((v) => v.entity).sort((a, b) => a - b),
      `${frame.file}: the view's entities`);
    for (const want of frame.view) {
      const e = got.get(want.entity);
      const at = `${frame.file}: entity ${want.entity}`;
      assert.equal(e.kind, want.kind, at);
      if (want.state !== null) assert.equal(STATES[e.state], want.state, at);
      assert.equal(e.tick16, want.tick16, `${at}: the tick of the frame that last carried it`);
      assert.deepEqual(Array.from(e.vals), want.ints, at);
      const err = worstErrors(e, want);
      worstPos = Math.max(worstPos, err.pos);
      worstAngle = Math.max(worstAngle, err.rot);
    }
  }
  assert.ok(worstPos <= 0.001, `position error ${worstPos} m`);
  assert.ok(worstAngle <= (0.1 * Math.PI) / 180, `orientation error ${worstAngle} rad`);
  t.diagnostic(`${partial.length} golden partial frames`);
});

// Hand-built partial frames (world 3): a ball (kind 5, one body) and a rope
// (kind 1, three particles). Ids: index + generation·2^32, the rope's with a
// large generation (ids are numbers below 2^53).
const BALL = 2 ** 32 + 7;
const ROPE = 2 ** 20 * 2 ** 32 + 3;
const BALL2 = 2 * 2 ** 32 + 7; // the ball's slot, next generation
const ball = (x, y, z) => [x, y, z, 3, 0, 0, 0]; // at rest: identity rotation
const BALL_A = ball(512, 205, 4096);
const BALL_B = ball(600, 180, 4000);
const ROPE_A = [1024, 2048, -512, 1331, 2048, -512, 1638, 2048, -512];
const ROPE_B = [1024, 2048, -512, 1340, 2000, -500, 1638, 2048, -512]; // the middle particle moved

const ids = (s) => s.entities.map((e) => e.entity);
const byId = (s, id) => s.entities.find((e) => e.entity === id);
// What a decoder holds, to tell that a refused frame changed nothing.
const held = (d) => JSON.stringify({
  ring: d.ring.map((f) => [f.tick16, f.entities.map((e) => [e.entity, e.tick16, Array.from(e.vals)])]),
  view: [...d.view.values()].map((e) => [e.entity, e.tick16, Array.from(e.vals)]),
});

// Frames 10 (reset: the ball and the rope, new), 11 (the ball, unchanged
// against 10), 12 (the rope, changed against 10: back 1).
function firstThree() {
  return [
    partialFrame(10, { reset: true, entities: [{ id: BALL, kind: 5, ints: BALL_A }, { id: ROPE, kind: 1, ints: ROPE_A }] }),
    partialFrame(11, { entities: [{ id: BALL, kind: 5, ints: BALL_A, back: 0, base: BALL_A }] }),
    partialFrame(12, { entities: [{ id: ROPE, kind: 1, ints: ROPE_B, back: 1, base: ROPE_A }] }),
  ];
}

test('the hand-built frames follow PROTOCOL.md: a full frame of them decodes to the golden integers', () => {
  // The writer checked against the decoder on a full (not partial) frame:
  // world 3, two entities with their heads, no baseline.
  const w = new BitWriter();
  w.ue(3).ue(2);
  w.ue(7).ue(1).u(5, 3).ue(1);
  writeBall(w, BALL_A);
  w.ue(3).ue(2 ** 20).u(1, 3).ue(3);
  writeParticles(w, ROPE_A);
  const s = new Decoder().decode(frameBytes(0, 65534, w));
  assert.equal(s.partial, false);
  assert.deepEqual(ids(s), [BALL, ROPE]);
  assert.deepEqual(Array.from(s.entities[0].vals), BALL_A);
  assert.deepEqual(Array.from(s.entities[1].vals), ROPE_A);
  assert.deepEqual(s.entities.map((e) => e.tick16), [65534, 65534]);
});

test('a partial frame adds new entities, keeps what it does not carry, and bases the rest per entity', () => {
  const d = new Decoder();
  const [f10, f11, f12] = firstThree();
  assert.equal(peekWorld(f10), 3);

  const s10 = d.decode(f10);
  assert.deepEqual([s10.partial, s10.reset, s10.delta, s10.baseline16], [true, true, false, null]);
  assert.deepEqual(s10.removed, []);
  assert.deepEqual(s10.carried, [BALL, ROPE]);
  assert.deepEqual(ids(s10), [BALL, ROPE]);
  const b10 = byId(s10, BALL);
  assert.deepEqual([b10.kind, b10.count, b10.tick16], [5, 1, 10]);
  assert.deepEqual(Array.from(b10.vals), BALL_A);
  assert.deepEqual(Array.from(b10.f), [0.5, 205 / 1024, 4, 0, 0, 0, 1]);
  const r10 = byId(s10, ROPE);
  assert.deepEqual([r10.kind, r10.count, r10.tick16], [1, 3, 10]);
  assert.deepEqual(Array.from(r10.vals), ROPE_A);
  assert.deepEqual(Array.from(r10.f), ROPE_A.map((v) => v / 1024));

  // The ball again, unchanged against frame 10; the rope not carried.
  const s11 = d.decode(f11);
  assert.deepEqual([s11.reset, s11.carried], [false, [BALL]]);
  assert.deepEqual(ids(s11), [BALL, ROPE], 'the rope stays, in its place');
  assert.equal(byId(s11, BALL).tick16, 11, 'carried (unchanged) by frame 11');
  assert.deepEqual(Array.from(byId(s11, BALL).vals), BALL_A);
  assert.equal(byId(s11, ROPE).tick16, 10, 'last carried by frame 10');
  assert.deepEqual(Array.from(byId(s11, ROPE).f), ROPE_A.map((v) => v / 1024));

  // The rope, changed against frame 10 (12 − 1 − 1): only its middle moved.
  const s12 = d.decode(f12);
  assert.deepEqual(s12.carried, [ROPE]);
  assert.deepEqual(ids(s12), [BALL, ROPE], 'old entities keep their order');
  assert.deepEqual(Array.from(byId(s12, ROPE).vals), ROPE_B);
  assert.deepEqual(Array.from(byId(s12, ROPE).f), ROPE_B.map((v) => v / 1024));
  assert.deepEqual(byId(s12, ROPE).tick16, 12);
  assert.deepEqual([byId(s12, BALL).tick16, Array.from(byId(s12, BALL).vals)], [11, BALL_A]);

  // The ball changed against frame 11 (back 1 from 13), its rotation too
  // (another dropped component: coded afresh).
  const turned = [600, 180, 4000, 1, 100, -200, 300];
  const s13 = d.decode(partialFrame(13, { entities: [{ id: BALL, kind: 5, ints: turned, back: 1, base: BALL_A }] }));
  assert.deepEqual(Array.from(byId(s13, BALL).vals), turned);
  const q = Array.from(byId(s13, BALL).f.slice(3));
  assert.ok(Math.abs(Math.hypot(...q) - 1) < 1e-12 && q[1] > 0, `a unit quaternion, y dropped: ${q}`);
  // And the same rotation moved a little against frame 13 (same index).
  const turned2 = [600, 181, 4000, 1, 101, -200, 299];
  const s14 = d.decode(partialFrame(14, { entities: [{ id: BALL, kind: 5, ints: turned2, back: 0, base: turned }] }));
  assert.deepEqual(Array.from(byId(s14, BALL).vals), turned2);
  assert.deepEqual(byId(s14, ROPE).tick16, 12);
});

test('an entity last carried by a frame no longer kept takes its baseline from the view', () => {
  const d = new Decoder();
  const [f10] = firstThree();
  d.decode(f10); // the ball and the rope, at tick 10
  // 40 frames carrying only the ball: frame 10 leaves the ring, the rope
  // stays in the view as of tick 10.
  for (let t = 11; t <= 50; t++) {
    d.decode(partialFrame(t, { entities: [{ id: BALL, kind: 5, ints: BALL_A, back: 0, base: BALL_A }] }));
  }
  // The rope against tick 10 (51 − 1 − 40): found in the view.
  const s51 = d.decode(partialFrame(51, { entities: [{ id: ROPE, kind: 1, ints: ROPE_B, back: 40, base: ROPE_A }] }));
  assert.deepEqual(Array.from(byId(s51, ROPE).vals), ROPE_B);
  assert.equal(byId(s51, ROPE).tick16, 51);
  // The ball against tick 10 too: the view has it as of 50, not 10, and
  // frame 10 is gone: no baseline.
  assert.throws(() => d.decode(partialFrame(52, { entities: [{ id: BALL, kind: 5, ints: BALL_A, back: 41, base: BALL_A }] })),
    BaselineError);
});

test('removals drop entities from the view (unknown ids ignored); new ones go last', () => {
  const d = new Decoder();
  for (const f of firstThree()) d.decode(f);
  // The ball's slot: the ball goes and the next entity in it comes, in one
  // frame (removals first). An id the view never had is ignored.
  const s = d.decode(partialFrame(13, {
    removed: [BALL, 2 ** 32 + 99],
    entities: [{ id: BALL2, kind: 5, ints: BALL_B }],
  }));
  assert.deepEqual(s.removed, [BALL, 2 ** 32 + 99]);
  assert.deepEqual(s.carried, [BALL2]);
  assert.deepEqual(ids(s), [ROPE, BALL2]);
  assert.deepEqual(Array.from(byId(s, BALL2).vals), BALL_B);
  // The removed ball is still in frame 11 of the ring: a later frame may
  // not base on it as a view entity, but the ring holds frames, not the view.
  const again = d.decode(partialFrame(14, { removed: [ROPE] }));
  assert.deepEqual(ids(again), [BALL2]);
  assert.deepEqual(again.carried, []);
});

test('a reset empties the view before the frame applies', () => {
  const d = new Decoder();
  for (const f of firstThree()) d.decode(f);
  // The rope again, based on frame 12 (a baseline survives a reset: it is
  // the ring's, not the view's), and nothing else.
  const s = d.decode(partialFrame(13, { reset: true, entities: [{ id: ROPE, kind: 1, ints: ROPE_B, back: 0, base: ROPE_B }] }));
  assert.equal(s.reset, true);
  assert.deepEqual(ids(s), [ROPE]);
  assert.equal(byId(s, ROPE).tick16, 13);
  assert.deepEqual(Array.from(byId(s, ROPE).vals), ROPE_B);
  const empty = d.decode(partialFrame(14, { reset: true }));
  assert.deepEqual([ids(empty), empty.carried], [[], []]);
});

test('a missing baseline is a BaselineError, and a refused frame changes nothing', () => {
  const d = new Decoder();
  const [f10, f11, f12] = firstThree();
  // Frame 11's ball is based on frame 10, which this decoder never had.
  assert.throws(() => d.decode(f11), BaselineError);
  d.decode(f10);
  d.decode(f11);
  const before = held(d);
  // A frame the ring does not hold (13 − 1 − 5 = 7)...
  const noFrame = partialFrame(13, { entities: [{ id: ROPE, kind: 1, ints: ROPE_B, back: 5, base: ROPE_A }] });
  assert.throws(() => d.decode(noFrame), (e) => e instanceof BaselineError && e.baseline16 === 7 && e.entity === ROPE);
  // ...or one it holds, without that entity (frame 11 carried the ball only).
  // Its removal and its first entity, decoded before that, do not apply.
  const noEntity = partialFrame(13, {
    removed: [BALL],
    entities: [{ id: BALL2, kind: 5, ints: BALL_B }, { id: ROPE, kind: 1, ints: ROPE_B, back: 1, base: ROPE_A }],
  });
  assert.throws(() => d.decode(noEntity), (e) => e instanceof BaselineError && e.baseline16 === 11);
  // Nor does a reset frame cut short.
  const reset = partialFrame(13, { reset: true, entities: [{ id: BALL2, kind: 5, ints: BALL_B }] });
  assert.throws(() => d.decode(reset.subarray(0, reset.length - 2)), RangeError);
  assert.equal(held(d), before);
  // The decoder goes on as if none had come.
  const s = d.decode(f12);
  assert.deepEqual(ids(s), [BALL, ROPE]);
  assert.deepEqual(Array.from(byId(s, ROPE).vals), ROPE_B);
});

test('flags a decoder does not know are refused, as is delta with partial', () => {
  const d = new Decoder();
  const f = firstThree()[0];
  const flagged = (flags) => Uint8Array.from(f, (v, i) => (i === 5 ? flags : v));
  for (const flags of [0x08, 0x0a, 0x80, 0x03, 0x07]) {
    assert.throws(() => d.decode(flagged(flags)), RangeError, `flags 0x${flags.toString(16)}`);
    assert.equal(peekWorld(flagged(flags)), null);
  }
  assert.equal(d.ring.length, 0);
  assert.equal(d.view.size, 0);
  assert.deepEqual(ids(d.decode(f)), [BALL, ROPE]);
});

test('a partial frame bases on a full one across the wrap; a full one replaces the view', () => {
  const d = new Decoder();
  const full = d.decode(readFileSync(join(GOLDEN, vectors.frames[0].file))); // wire tick 65534
  assert.equal(full.partial, false);
  assert.ok(full.entities.every((e) => e.tick16 === 65534));
  const [goldRope, goldBall] = full.entities;
  // Wire tick 2: back 3 is (2 − 1 − 3) mod 65536 = 65534.
  const s = d.decode(partialFrame(2, {
    entities: [{ id: goldBall.entity, kind: 5, ints: Array.from(goldBall.vals), back: 3, base: Array.from(goldBall.vals) }],
  }));
  assert.deepEqual(ids(s), ids(full), 'the full frame was the view');
  assert.deepEqual(s.entities.map((e) => e.tick16), full.entities.map((e) => (e === goldBall ? 2 : 65534)));
  assert.equal(byId(s, goldRope.entity).f, goldRope.f);
  // Back to unbudgeted frames: a full frame is the whole view again.
  const d2 = new Decoder();
  for (const f of firstThree()) d2.decode(f);
  const again = d2.decode(readFileSync(join(GOLDEN, vectors.frames[0].file)));
  assert.deepEqual(ids(again), ids(full));
  assert.deepEqual([...d2.view.keys()], ids(full));
  const next = d2.decode(partialFrame(65535, {}));
  assert.deepEqual(ids(next), ids(full), 'no ball or rope of the partial frames before it');
});
