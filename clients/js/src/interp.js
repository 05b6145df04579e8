// A snapshot interpolation buffer (Gaffer on Games, "Snapshot
// Interpolation"), as rdc's rdc_interp (clients/c/interp.c): the last
// snapshots of one world with when each arrived, and a sampler that draws
// the world a little in the past, between the two snapshots around that
// moment: positions lerped, rotations slerped. The delay is twice the send
// interval plus the jitter of arrivals (RFC 3550 §6.4.1: J += (|D| − J)/16,
// D how much two snapshots' spacing in arrival time differs from their
// spacing in server ticks). The server's clock is learned from the
// earliest (least delayed) arrival kept. Time on screen never runs back.
// Snapshots are the JSON shape (§5.1): entities with `particles` ([x, y, z]
// each), or `bones` ({ p, q } each) for characters, or `p` and `q` (balls).

export class Interpolator {
  /** tickHz, rateHz: the subscribe reply's tick_hz and rate_hz; depth: snapshots kept (16). */
  constructor(tickHz, rateHz, depth = 16) {
    if (!(tickHz >= 1 && tickHz <= 240 && rateHz >= 1 && rateHz <= 240 && depth >= 2 && depth <= 64)) {
      throw new RangeError('tick_hz and rate_hz are 1-240, depth 2-64');
    }
    this.periodMs = 1000 / tickHz;
    this.intervalMs = 1000 / Math.min(rateHz, tickHz);
    this.depth = depth;
    this.frames = []; // { tick, at, snapshot }, oldest first
    this.jitterMs = 0;
    this.lastRender = -Infinity;
  }

  /** Forgets every snapshot and what it measured (a new subscription, a restarted server). */
  reset() {
    this.frames = [];
    this.jitterMs = 0;
    this.lastRender = -Infinity;
  }

  /**
   * Keeps snapshot s (its `tick` full), arrived at `atMs` (performance.now()).
   * One older than every snapshot kept starts afresh (the server's ticks
   * went back: a restarted server); one not newer than the newest is
   * otherwise ignored (a late duplicate).
   */
  push(s, atMs) {
    if (this.frames.length > 0 && s.tick < this.frames[0].tick) this.reset();
    if (this.frames.length > 0) {
      // More than a second of ticks from where the learned clock puts this
      // arrival: another server clock, or a long stall: start afresh.
      if (Math.abs((atMs - this.clockOffset()) / this.periodMs - s.tick) > 1000 / this.periodMs) this.reset();
    }
    const last = this.frames[this.frames.length - 1];
    if (last !== undefined && s.tick <= last.tick) return;
    if (last !== undefined) {
      const d = (atMs - last.at) - (s.tick - last.tick) * this.periodMs;
      this.jitterMs += (Math.abs(d) - this.jitterMs) / 16;
    }
    this.frames.push({ tick: s.tick, at: atMs, snapshot: s });
    if (this.frames.length > this.depth) this.frames.shift();
  }

  /** The server's tick 0 in local time (ms), from the least-delayed arrival kept. */
  clockOffset() {
    let offset = Infinity;
    for (const f of this.frames) offset = Math.min(offset, f.at - f.tick * this.periodMs);
    return offset;
  }

  /**
   * The world at `nowMs` less the delay: { snapshot, info } or null before
   * anything was pushed. info: { delayMs, jitterMs, renderTick, tickA,
   * tickB, alpha, held }. The snapshot's entities are the newer one's, each
   * interpolated with the same entity of the older one when it is there.
   */
  sample(nowMs) {
    if (this.frames.length === 0) return null;
    const offset = this.clockOffset();
    const delayMs = 2 * this.intervalMs + this.jitterMs;
    let renderTick = Math.max(this.lastRender, (nowMs - delayMs - offset) / this.periodMs);
    this.lastRender = renderTick;
    const fs = this.frames;
    let a = fs.length - 1, b = fs.length - 1, held = false;
    if (renderTick >= fs[fs.length - 1].tick) {
      held = renderTick > fs[fs.length - 1].tick;
    } else if (renderTick <= fs[0].tick) {
      a = b = 0;
    } else {
      b = 1;
      while (fs[b].tick < renderTick) b++;
      a = b - 1;
    }
    const A = fs[a], B = fs[b];
    const alpha = a === b ? 1 : (renderTick - A.tick) / (B.tick - A.tick);
    const snapshot = a === b ? B.snapshot : blend(A.snapshot, B.snapshot, alpha);
    return {
      snapshot,
      info: { delayMs, jitterMs: this.jitterMs, renderTick, tickA: A.tick, tickB: B.tick, alpha, held },
    };
  }
}

const lerp3 = (a, b, t) => [a[0] + t * (b[0] - a[0]), a[1] + t * (b[1] - a[1]), a[2] + t * (b[2] - a[2])];

/** Slerp of unit quaternions [x, y, z, w] by t, the shorter way. */
export function slerp(a, b, t) {
  let dot = a[0] * b[0] + a[1] * b[1] + a[2] * b[2] + a[3] * b[3];
  const sign = dot < 0 ? -1 : 1;
  dot = Math.abs(dot);
  let wa = 1 - t, wb = t;
  if (dot < 0.9995) {
    const th = Math.acos(dot), s = Math.sin(th);
    wa = Math.sin((1 - t) * th) / s;
    wb = Math.sin(t * th) / s;
  }
  const q = [0, 1, 2, 3].map((k) => wa * a[k] + sign * wb * b[k]);
  const n = Math.hypot(...q) || 1;
  return q.map((x) => x / n);
}

function blend(sa, sb, t) {
  const byId = new Map(sa.entities.map((e) => [e.entity, e]));
  const entities = sb.entities.map((eb) => {
    const ea = byId.get(eb.entity);
    if (ea === undefined || ea.kind !== eb.kind) return eb;
    if (eb.particles && ea.particles?.length === eb.particles.length) {
      return { ...eb, particles: eb.particles.map((p, i) => lerp3(ea.particles[i], p, t)) };
    }
    if (eb.bones && ea.bones?.length === eb.bones.length) {
      return {
        ...eb,
        bones: eb.bones.map((bone, i) => ({ ...bone, p: lerp3(ea.bones[i].p, bone.p, t), q: slerp(ea.bones[i].q, bone.q, t) })),
      };
    }
    if (eb.p && ea.p) return { ...eb, p: lerp3(ea.p, eb.p, t), q: slerp(ea.q, eb.q, t) };
    return eb;
  });
  return { ...sb, entities };
}
