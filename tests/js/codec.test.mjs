// The JavaScript decoder of binary snapshots (clients/js/src/codec.js) against
// the golden vectors the C encoder wrote (protocol/golden/): the same frames
// must decode to the values they were made from, within the protocol's
// bounds (1 mm, 0.1°), with the same wire ticks. tests/unit/test_codec.c
// checks the C decoder against the same files.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Decoder, BaselineError, unwrapTick, ackFrame } from '../../clients/js/src/index.js';

// (import.meta.dirname needs Node 20.11; Debian 12 ships Node 18.)
const GOLDEN = fileURLToPath(new URL('../../protocol/golden', import.meta.url));
const vectors = JSON.parse(readFileSync(join(GOLDEN, 'vectors.json'), 'utf8'));

const angle = (a, b) => 2 * Math.acos(Math.min(1, Math.abs(a[0] * b[0] + a[1] * b[1] + a[2] * b[2] + a[3] * b[3])));

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
