// Binary snapshots, version 3 (protocol/PROTOCOL.md §5.2): the decoder the
// viewer and the JavaScript tests use. It mirrors protocol/codec.c step for
// step (the same integers, the same closed-loop skeleton arithmetic in
// double precision); the golden vectors in protocol/golden/ keep the two in
// lockstep. No dependencies: plain ES module, browser or Node.

const POS_SCALE = 1024; // integer steps per metre
const ANCHOR_SCALE = 10000; // anchors: steps per metre
const QUAT_SCALE = 2047 * Math.SQRT2;
const ABS_BITS = 26;
const FLAG_DELTA = 1;
const FLAG_PARTIAL = 2; // interest management: a frame of some entities, each with its own baseline
const FLAG_RESET = 4; // partial frames: empty the view first
const FLAGS_KNOWN = FLAG_DELTA | FLAG_PARTIAL | FLAG_RESET;
// Flags a frame may carry: none, delta, partial, partial with reset (as
// protocol/codec.c has it).
const badFlags = (f) =>
  (f & ~FLAGS_KNOWN) !== 0 ||
  (f & (FLAG_DELTA | FLAG_PARTIAL)) === (FLAG_DELTA | FLAG_PARTIAL) ||
  ((f & FLAG_RESET) !== 0 && (f & FLAG_PARTIAL) === 0);
export const BASELINES = 32; // baselines a decoder keeps
export const MAX_SKELETON_BONES = 1024; // bones of one character at most
export const KIND = { rope: 1, cloth: 2, ragdoll: 3, character: 4, ball: 5, softbody: 6 };
export const KIND_NAME = ['unknown', 'rope', 'cloth', 'ragdoll', 'character', 'ball', 'softbody'];
export const STATE_NAME = ['animated', 'ragdoll', 'getting_up', 'partial'];

const isRigid = (kind) => kind === KIND.character || kind === KIND.ball;

class BitReader {
  constructor(bytes, start) {
    this.b = bytes;
    this.bit = start * 8;
    this.end = bytes.length * 8;
  }
  bits(n) {
    let v = 0;
    for (let i = 0; i < n; i++) {
      if (this.bit >= this.end) throw new RangeError('truncated snapshot');
      const byte = this.b[this.bit >> 3];
      v += ((byte >> (this.bit & 7)) & 1) * 2 ** i;
      this.bit++;
    }
    return v;
  }
  eg(k) {
    let len = 0;
    while (this.bits(1) === 0) {
      if (++len > 40) throw new RangeError('malformed code');
    }
    let m = 1;
    for (let i = 0; i < len; i++) m = m * 2 + this.bits(1);
    return (m - 1) * 2 ** k + this.bits(k);
  }
  sint(k) {
    const u = this.eg(k);
    return u % 2 === 1 ? -(u - 1) / 2 - 1 : u / 2;
  }
  fixed(n) {
    const u = this.bits(n);
    return u >= 2 ** (n - 1) ? u - 2 ** n : u;
  }
}

function qmul(a, b) {
  return [
    a[3] * b[0] + a[0] * b[3] + a[1] * b[2] - a[2] * b[1],
    a[3] * b[1] - a[0] * b[2] + a[1] * b[3] + a[2] * b[0],
    a[3] * b[2] + a[0] * b[1] - a[1] * b[0] + a[2] * b[3],
    a[3] * b[3] - a[0] * b[0] - a[1] * b[1] - a[2] * b[2],
  ];
}

function qnormalize(q) {
  const n = Math.hypot(q[0], q[1], q[2], q[3]);
  return [q[0] / n, q[1] / n, q[2] / n, q[3] / n];
}

function qrotate(q, v) {
  const t = [2 * (q[1] * v[2] - q[2] * v[1]), 2 * (q[2] * v[0] - q[0] * v[2]), 2 * (q[0] * v[1] - q[1] * v[0])];
  return [
    v[0] + q[3] * t[0] + q[1] * t[2] - q[2] * t[1],
    v[1] + q[3] * t[1] + q[2] * t[0] - q[0] * t[2],
    v[2] + q[3] * t[2] + q[0] * t[1] - q[1] * t[0],
  ];
}

// Smallest three: [index of the dropped component, c, c, c] → unit quaternion.
function quatDequantize(v, at) {
  const big = v[at] & 3;
  const q = [0, 0, 0, 0];
  let sum = 0;
  let k = 0;
  for (let i = 0; i < 4; i++) {
    if (i === big) continue;
    q[i] = v[at + 1 + k++] / QUAT_SCALE;
    sum += q[i] * q[i];
  }
  q[big] = Math.sqrt(sum < 1 ? 1 - sum : 0);
  return qnormalize(q);
}

/**
 * Decodes the binary snapshots of one world. decode(bytes) returns
 * { world, tick16, delta, baseline16, partial, entities: [{ entity, kind,
 * state, count, f, tick16 }] } where f (Float64Array) holds x, y, z per
 * particle, or x, y, z, qx, qy, qz, qw per body, and an entity's tick16 is
 * the wire tick of the frame that last carried it. Throws a RangeError for
 * a malformed frame and a BaselineError for a delta against a baseline it
 * does not hold; either way its baselines and its view are unchanged.
 *
 * Partial frames (flags bit 1, PROTOCOL.md §5.2 "Partial frames") carry some
 * entities only, so the decoder keeps a view, every entity it knows as the
 * frame that last carried it, and returns that whole view (baseline16 null)
 * with partial: true, reset, removed (ids) and carried (ids, in the frame's
 * order). A full or delta frame replaces the view (partial: false).
 */
export class Decoder {
  constructor() {
    this.ring = []; // Frames decoded, newest last, at most BASELINES + 1
    this.view = new Map(); // entity id -> entity, as the frame that last carried it
  }

  decode(input) {
    const b = input instanceof Uint8Array ? input : new Uint8Array(input);
    if (b.length < 8 || b[0] !== 0x52 || b[1] !== 0x44 || b[2] !== 0x53 || b[3] !== 0x32 || b[4] !== 3) {
      throw new RangeError('not a version 3 binary snapshot');
    }
    // Flags we do not know could change what the bits mean: refuse them
    // rather than misread the frame. Delta and partial together is neither:
    // a partial frame names its baselines per entity, a delta one for all.
    const flags = b[5];
    if (badFlags(flags)) {
      throw new RangeError(`bad snapshot flags 0x${flags.toString(16)}`);
    }
    const tick16 = b[6] | (b[7] << 8);
    if ((flags & FLAG_PARTIAL) !== 0) return this.decodePartial(b, tick16, (flags & FLAG_RESET) !== 0);
    const delta = (flags & FLAG_DELTA) !== 0;
    let head = 8;
    let base = null;
    let baseline16 = null;
    if (delta) {
      if (b.length < 10) throw new RangeError('truncated snapshot');
      baseline16 = b[8] | (b[9] << 8);
      head = 10;
      base = this.frameAt(baseline16);
      // A delta's baseline is a whole snapshot (as protocol/codec.c has it).
      if (base === null || base.partial) throw new BaselineError(baseline16);
    }
    const r = new BitReader(b, head);
    const world = r.eg(0);
    const count = r.eg(0);
    if (count > 65536) throw new RangeError('too many entities');
    const entities = [];
    let cursor = 0;
    for (let k = 0; k < count; k++) {
      let be = null;
      let e;
      if (delta && r.bits(1) === 1) {
        const skip = r.eg(0);
        if (cursor + skip >= base.entities.length) throw new RangeError('bad baseline index');
        be = base.entities[cursor + skip];
        cursor += skip + 1;
        e = based(be, tick16);
      } else {
        e = readHead(r);
        e.tick16 = tick16;
      }
      entities.push(readValues(r, e, be));
    }
    // Nothing above changed the decoder: a frame refused leaves it as it was.
    this.keep(new Frame(tick16, entities, false));
    this.view = new Map(entities.map((e) => [e.entity, e]));
    return { world, tick16, delta, baseline16, partial: false, entities };
  }

  // A partial frame: removals, then the entities it carries, each against
  // the frame its `back` names (by id there), or without a baseline.
  decodePartial(b, tick16, reset) {
    const r = new BitReader(b, 8);
    const world = r.eg(0);
    const nremoved = r.eg(0);
    if (nremoved > 65536) throw new RangeError('too many removals');
    const removed = [];
    for (let k = 0; k < nremoved; k++) removed.push(readId(r));
    const carried = [];
    const seen = new Set();
    while (r.bits(1) === 1) {
      if (carried.length >= 65536) throw new RangeError('too many entities');
      const id = readId(r);
      // Twice in one frame would make "the entity as that frame carried
      // it" ambiguous for the frames based on this one.
      if (seen.has(id)) throw new RangeError(`entity ${id} carried twice`);
      seen.add(id);
      let be = null;
      let e;
      if (r.bits(1) === 1) {
        const back = r.eg(0);
        const base16 = (((tick16 - 1 - back) % 65536) + 65536) % 65536;
        be = this.frameAt(base16)?.get(id) ?? null;
        if (be === null) {
          // A frame no longer kept, but no frame carried the entity since:
          // the view still holds it as of that tick (protocol/codec.c too).
          const v = this.view.get(id);
          if (v !== undefined && v.tick16 === base16) be = v;
        }
        if (be === null) throw new BaselineError(base16, id);
        e = based(be, tick16);
      } else {
        e = readShape(r, id);
        e.tick16 = tick16;
      }
      carried.push(readValues(r, e, be));
    }
    // Decoded whole: only now does the decoder change (the view in place,
    // O(removed + carried); a Map keeps the old order and appends the new).
    this.keep(new Frame(tick16, carried, true));
    const view = this.view;
    if (reset) view.clear();
    for (const id of removed) view.delete(id);
    for (const e of carried) view.set(e.entity, e);
    return {
      world, tick16, delta: false, baseline16: null, partial: true, reset, removed,
      carried: carried.map((e) => e.entity), entities: [...view.values()],
    };
  }

  // The newest frame kept of wire tick tick16, or null.
  frameAt(tick16) {
    for (let i = this.ring.length - 1; i >= 0; i--) {
      const f = this.ring[i];
      if (f.tick16 === tick16) return f;
    }
    return null;
  }

  keep(frame) {
    this.ring.push(frame);
    if (this.ring.length > BASELINES + 1) this.ring.shift();
  }
}

// One decoded frame kept as a baseline: the entities it carried, found by
// position (delta frames) or by id (partial frames; the map is made the
// first time one asks, so frames nobody bases on cost nothing more).
class Frame {
  constructor(tick16, entities, partial) {
    this.tick16 = tick16;
    this.entities = entities;
    this.partial = partial; // holds only what it carried: no delta's baseline
    this.byId = null;
  }

  get(id) {
    this.byId ??= new Map(this.entities.map((e) => [e.entity, e]));
    return this.byId.get(id) ?? null;
  }
}

/**
 * A frame coded against a baseline the decoder does not hold (a delta's
 * baseline16, or the frame a partial frame's entity names, with that
 * entity's id, or that frame without that entity): ask for a resync.
 */
export class BaselineError extends Error {
  constructor(baseline16, entity = null) {
    super(entity === null
      ? `no baseline ${baseline16}: ask for a full snapshot (resync)`
      : `no baseline ${baseline16} of entity ${entity}: ask for a resync`);
    this.baseline16 = baseline16;
    this.entity = entity;
  }
}

// An entity against baseline entity be: its kind, count, skeleton and
// state are the baseline's until its values say otherwise.
function based(be, tick16) {
  return { entity: be.entity, kind: be.kind, state: be.state, count: be.count, skel: be.skel, tick16 };
}

// An entity's values after its head: nothing when it is its baseline's
// (unchanged bit), else a character's state and its particles or bodies.
function readValues(r, e, be) {
  if (be !== null && r.bits(1) === 1) {
    e.vals = be.vals;
    e.f = be.f;
    return e;
  }
  const per = isRigid(e.kind) ? 7 : 3;
  if (e.kind === KIND.character) e.state = r.bits(2);
  e.vals = new Int32Array(per * e.count);
  e.f = new Float64Array(per * e.count);
  if (isRigid(e.kind)) readBodies(r, e, be);
  else readParticles(r, e, be);
  return e;
}

// id = generation·2^32 + index (below 2^53 as long as generations are).
function readId(r) {
  const lo = r.eg(0);
  const hi = r.eg(0);
  return hi * 2 ** 32 + lo;
}

function readHead(r) {
  return readShape(r, readId(r));
}

// Kind, count and a character's skeleton: an entity new to the decoder.
function readShape(r, id) {
  const e = { entity: id, kind: r.bits(3), state: 0, count: r.eg(0), skel: null };
  if (e.kind < 1 || e.kind > 6 || e.count > 1 << 20 || (e.kind === KIND.ball && e.count !== 1) ||
      (e.kind === KIND.character && (e.count < 1 || e.count > MAX_SKELETON_BONES))) {
    throw new RangeError('bad entity header');
  }
  if (e.kind === KIND.character) {
    e.skel = [];
    for (let i = 0; i < e.count; i++) {
      const parent = r.bits(10) - 1;
      const ap = [r.fixed(16), r.fixed(16), r.fixed(16)].map((v) => v / ANCHOR_SCALE);
      const ac = [r.fixed(16), r.fixed(16), r.fixed(16)].map((v) => v / ANCHOR_SCALE);
      if ((i === 0) !== (parent < 0) || (i > 0 && parent >= i)) throw new RangeError('bad skeleton');
      e.skel.push({ parent, ap, ac });
    }
  }
  return e;
}

function readParticles(r, e, be) {
  const n = e.count;
  const v = e.vals;
  const b = be !== null ? be.vals : null;
  if (b === null) {
    const first = [0, 0, 0];
    if (n > 0) for (let c = 0; c < 3; c++) first[c] = r.fixed(ABS_BITS);
    for (let c = 0; c < 3; c++) {
      const k = r.bits(4);
      let x = 0;
      for (let i = 0; i < n; i++) {
        x += r.sint(k);
        v[3 * i + c] = i === 0 ? first[c] : v[3 * (i - 1) + c] + x;
      }
    }
  } else {
    // Runs of particles that did not move, then runs that did.
    const k = [r.bits(4), r.bits(4), r.bits(4)];
    for (let i = 0; i < n;) {
      const still = r.eg(0);
      if (still > n - i) throw new RangeError('bad run');
      for (let s = 0; s < 3 * still; s++) v[3 * i + s] = b[3 * i + s];
      i += still;
      if (i === n) break;
      const moved = r.eg(0) + 1;
      if (moved > n - i) throw new RangeError('bad run');
      const x = [0, 0, 0];
      for (let m = 0; m < moved; m++, i++) {
        for (let c = 0; c < 3; c++) {
          x[c] += r.sint(k[c]);
          v[3 * i + c] = b[3 * i + c] + x[c];
        }
      }
    }
  }
  for (let i = 0; i < 3 * n; i++) e.f[i] = v[i] / POS_SCALE;
}

function readBodies(r, e, be) {
  const n = e.count;
  const chain = e.kind === KIND.character;
  const k = [r.bits(4), r.bits(4), r.bits(4), r.bits(4)];
  const base = be !== null ? be.vals : null;
  const v = e.vals;
  const dp = [];
  const dq = [];
  for (let i = 0; i < n; i++) {
    const o = 7 * i;
    const root = !chain || i === 0;
    const same = base !== null && r.bits(1) === 1;
    if (same) {
      for (let c = 0; c < 7; c++) v[o + c] = base[o + c];
    } else {
      const kp = root ? k[0] : k[3];
      const kr = root ? k[1] : k[2];
      for (let c = 0; c < 3; c++) {
        v[o + c] = base !== null ? base[o + c] + r.sint(kp) : root ? r.fixed(ABS_BITS) : r.sint(kp);
      }
      const sameIndex = base !== null && r.bits(1) === 1;
      if (sameIndex) {
        v[o + 3] = base[o + 3];
        for (let c = 0; c < 3; c++) v[o + 4 + c] = base[o + 4 + c] + r.sint(kr);
      } else {
        v[o + 3] = r.bits(2);
        for (let c = 0; c < 3; c++) v[o + 4 + c] = r.fixed(12);
      }
    }
    // Decode: the root (or a ball) as is, a bone through its parent.
    const rel = quatDequantize(v, o + 3);
    let p;
    let q;
    if (root) {
      p = [v[o] / POS_SCALE, v[o + 1] / POS_SCALE, v[o + 2] / POS_SCALE];
      q = rel;
    } else {
      const s = e.skel[i];
      const pp = dp[s.parent];
      const pq = dq[s.parent];
      q = qnormalize(qmul(pq, rel));
      const ra = qrotate(pq, s.ap);
      const rc = qrotate(q, s.ac);
      p = [0, 1, 2].map((c) => pp[c] + ra[c] - rc[c] + v[o + c] / POS_SCALE);
    }
    dp.push(p);
    dq.push(q);
    e.f.set([p[0], p[1], p[2], q[0], q[1], q[2], q[3]], o);
  }
}

/** The full tick nearest to `near` whose low 16 bits are tick16. */
export function unwrapTick(near, tick16) {
  let diff = (tick16 - (near % 65536) + 65536) % 65536;
  if (diff >= 32768) diff -= 65536;
  const t = near + diff;
  return t < 0 ? t + 65536 : t;
}

/** An ack frame (17 bytes): 'A', then world and tick as u64 little-endian. */
export function ackFrame(world, tick) {
  const b = new Uint8Array(17);
  const dv = new DataView(b.buffer);
  b[0] = 0x41;
  dv.setBigUint64(1, BigInt(world), true);
  dv.setBigUint64(9, BigInt(tick), true);
  return b;
}

/** The wire name of a kind or a character state. */
export const kindName = (kind) => KIND_NAME[kind] ?? 'unknown';
export const stateName = (state) => STATE_NAME[state] ?? 'animated';

/**
 * The world of a binary snapshot frame, read from its header without
 * decoding it (PROTOCOL.md §5.2: the bit stream's first code), or null for
 * a frame that is not one. For routing frames among subscriptions.
 */
export function peekWorld(input) {
  const b = input instanceof Uint8Array ? input : new Uint8Array(input);
  if (b.length < 8 || b[0] !== 0x52 || b[1] !== 0x44 || b[2] !== 0x53 || b[3] !== 0x32) return null;
  // Only a delta has a baseline tick in its header; a partial frame (flags
  // bit 1) names its baselines per entity, in the bit stream.
  if (badFlags(b[5])) return null;
  try {
    return new BitReader(b, (b[5] & FLAG_DELTA) !== 0 ? 10 : 8).eg(0);
  } catch {
    return null;
  }
}
