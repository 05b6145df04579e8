// Hand-built binary snapshot frames (protocol/PROTOCOL.md §5.2) for the
// JavaScript tests: a bit writer (bits least significant first, exp-Golomb
// codes as PROTOCOL.md defines them) and an encoder of partial frames with
// balls and ropes, small enough to check by eye. Not the reference encoder
// (protocol/codec.c is): every order k is fixed, so its frames are valid but
// not the smallest. Not a test file itself (no .test. in its name).

export class BitWriter {
  constructor() {
    this.bytes = [];
    this.bit = 0;
  }

  // n raw bits of v, least significant first.
  u(v, n) {
    for (let i = 0; i < n; i++) {
      if ((this.bit & 7) === 0) this.bytes.push(0);
      if (Math.floor(v / 2 ** i) % 2 === 1) this.bytes[this.bytes.length - 1] |= 1 << (this.bit & 7);
      this.bit++;
    }
    return this;
  }

  // n bits two's complement.
  s(v, n) {
    return this.u(v < 0 ? v + 2 ** n : v, n);
  }

  // Exp-Golomb of order k: the bit length L of (n >> k) + 1 as L − 1 zeros,
  // then (n >> k) + 1 in L bits from the most significant, then the k low
  // bits of n, least significant first.
  ue(n, k = 0) {
    const m = Math.floor(n / 2 ** k) + 1;
    const len = m.toString(2).length;
    this.u(0, len - 1);
    for (let i = len - 1; i >= 0; i--) this.u(Math.floor(m / 2 ** i) % 2, 1);
    return this.u(n % 2 ** k, k);
  }

  // Zigzag (0, −1, 1, −2, … → 0, 1, 2, 3, …), then ue(k).
  se(v, k = 0) {
    return this.ue(v < 0 ? -2 * v - 1 : 2 * v, k);
  }
}

const MAGIC = [0x52, 0x44, 0x53, 0x32];
export const K = 3; // the order of every se(k) written here

/** The 8-byte header (magic, version 3, flags, tick) and a bit stream. */
export function frameBytes(flags, tick16, w) {
  return Uint8Array.from([...MAGIC, 3, flags, tick16 & 0xff, tick16 >> 8, ...w.bytes]);
}

/** A ball's body (7 ints: x, y, z in 1/1024 m, dropped index, c, c, c), without or against base. */
export function writeBall(w, ints, base = null) {
  for (let c = 0; c < 4; c++) w.u(K, 4);
  if (base !== null) {
    const same = ints.every((v, i) => v === base[i]);
    w.u(same ? 1 : 0, 1);
    if (same) return;
    for (let c = 0; c < 3; c++) w.se(ints[c] - base[c], K);
    const sameIndex = ints[3] === base[3];
    w.u(sameIndex ? 1 : 0, 1);
    if (sameIndex) {
      for (let c = 0; c < 3; c++) w.se(ints[4 + c] - base[4 + c], K);
      return;
    }
  } else {
    for (let c = 0; c < 3; c++) w.s(ints[c], 26);
  }
  w.u(ints[3], 2);
  for (let c = 0; c < 3; c++) w.s(ints[4 + c], 12);
}

/** A rope's particles (x, y, z ints each), without or against base. */
export function writeParticles(w, ints, base = null) {
  const n = ints.length / 3;
  if (base === null) {
    if (n > 0) for (let c = 0; c < 3; c++) w.s(ints[c], 26);
    for (let c = 0; c < 3; c++) {
      w.u(K, 4);
      // o_i: the offset from the previous particle (o_0 = o_(−1) = 0),
      // coded as its change from the previous offset.
      let prev = 0;
      for (let i = 0; i < n; i++) {
        const o = i === 0 ? 0 : ints[3 * i + c] - ints[3 * (i - 1) + c];
        w.se(o - prev, K);
        prev = o;
      }
    }
    return;
  }
  for (let c = 0; c < 3; c++) w.u(K, 4);
  const moved = (i) => [0, 1, 2].some((c) => ints[3 * i + c] !== base[3 * i + c]);
  for (let i = 0; i < n;) {
    let still = 0;
    while (i + still < n && !moved(i + still)) still++;
    w.ue(still);
    i += still;
    if (i === n) break;
    let run = 0;
    while (i + run < n && moved(i + run)) run++;
    w.ue(run - 1);
    const d = [0, 0, 0];
    for (let m = 0; m < run; m++, i++) {
      for (let c = 0; c < 3; c++) {
        const di = ints[3 * i + c] - base[3 * i + c];
        w.se(di - d[c], K);
        d[c] = di;
      }
    }
  }
}

const writeValues = (w, e, base) => (e.kind === 5 ? writeBall(w, e.ints, base) : writeParticles(w, e.ints, base));

/**
 * A partial frame of wire tick tick16: { world, reset, removed: [ids],
 * entities: [{ id, kind (1 rope, 5 ball), ints, back (based: the frame of
 * tick16 − 1 − back), base (the baseline's ints, when based) }] }; a based
 * entity whose ints equal its base's is sent as unchanged.
 */
export function partialFrame(tick16, { world = 3, reset = false, removed = [], entities = [], flags = null }) {
  const w = new BitWriter();
  w.ue(world);
  w.ue(removed.length);
  for (const id of removed) w.ue(id % 2 ** 32).ue(Math.floor(id / 2 ** 32));
  for (const e of entities) {
    w.u(1, 1); // more
    w.ue(e.id % 2 ** 32).ue(Math.floor(e.id / 2 ** 32));
    const based = e.back !== undefined;
    w.u(based ? 1 : 0, 1);
    if (based) {
      w.ue(e.back);
      const same = e.ints.every((v, i) => v === e.base[i]);
      w.u(same ? 1 : 0, 1);
      if (!same) writeValues(w, e, e.base);
    } else {
      w.u(e.kind, 3);
      w.ue(e.kind === 5 ? 1 : e.ints.length / 3);
      writeValues(w, e, null);
    }
  }
  w.u(0, 1); // no more
  return frameBytes(flags ?? (2 | (reset ? 4 : 0)), tick16, w);
}
