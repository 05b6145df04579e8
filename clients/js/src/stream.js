// The binary snapshot stream of one world subscription (PROTOCOL.md §5.2):
// every frame decoded with codec.js, every decoded snapshot acknowledged by
// its full tick, a resync when a frame cannot be decoded, and the entities'
// topology, which binary frames do not carry, asked for with `describe` and
// kept. Out come snapshots whose entity records have the shape of the JSON
// snapshots' (§5.1: particles, or bones / p and q), which the scene, the
// character panel and the test hooks read. A partial frame (a subscription
// with a byte budget, §5.2 "Partial frames") comes out as the decoder's whole
// view, so what the frame did not carry is still drawn where it was. No
// three.js and no DOM: the tests run it in Node too (tests/js/stream.test.mjs).
import { BaselineError, Decoder, KIND, ackFrame, kindName, stateName, unwrapTick } from './codec.js';

// A resync whose full snapshot never came (a newer delta replaced it in the
// server's "latest wins" slot) is asked for again, but not more often.
export const RESYNC_RETRY_MS = 500;
// A describe that failed is tried again after this, or after the wait a
// rate_limited reply names ("retry in N ms"), whichever is longer.
export const DESCRIBE_RETRY_MS = 1000;

/** Counters over all of a page's subscriptions, for the HUD and the test. */
export function newStats() {
  return { frames: 0, bytes: 0, snapshots: 0, deltas: 0, partials: 0, acks: 0, resyncs: 0, errors: 0, describes: 0 };
}

export class SnapshotStream {
  /**
   * reply: the subscribe reply ({ world, tick, ... }); its tick starts the
   * unwrapping of wire ticks. link: {
   *   send(cmd)          – sends a command, resolves with the reply or null (never rejects),
   *   sendBinary(bytes)  – sends a binary frame, true if it went out,
   *   log(text, kind)    – the viewer's log,
   *   now()              – optional clock in ms (performance.now by default),
   * }; stats: counters to add to (newStats()).
   */
  constructor(reply, link, stats = newStats()) {
    this.now = link.now ?? (() => performance.now());
    this.world = reply.world;
    this.tick = reply.tick; // the newest full tick decoded (or subscribed at)
    this.link = link;
    this.stats = stats;
    this.decoder = new Decoder(); // one per subscription: baselines are per world
    this.topology = new Map(); // entity id -> its describe reply
    this.shapes = new Map(); // entity id -> { kind, count } (particles or bodies) in the newest snapshot
    this.describing = new Set();
    this.retryAt = new Map(); // entity id -> no describe before this time
    this.resyncAt = null; // when the pending resync was asked for; null when none is
    this.closed = false;
  }

  /** Stops describing and resyncing (the subscription is over). */
  close() {
    this.closed = true;
  }

  /**
   * Takes one binary frame. Returns { world, tick, delta, partial, entities }
   * (tick the full tick, entities records; a partial frame's also reset,
   * removed and carried, as the decoder gives them) or null when the frame
   * could not be decoded; then a full snapshot has been asked for. Never
   * throws for what the frame holds.
   */
  receive(bytes, now = this.now()) {
    this.stats.frames++;
    this.stats.bytes += bytes.length;
    let snap;
    try {
      snap = this.decoder.decode(bytes);
    } catch (err) {
      // A delta against a baseline the decoder no longer holds is the
      // protocol's own way to ask for a full snapshot; anything else (a
      // RangeError for a malformed frame) is worth a line in the log.
      if (!(err instanceof BaselineError)) {
        this.stats.errors++;
        this.link.log(`binary snapshot: ${err.message}; asking for a full one`);
      }
      this.resync(now);
      return null;
    }
    if (snap.world !== this.world) {
      // Another world's frame (left from an earlier subscription) is now
      // among this world's baselines, where its wire tick could pass for
      // one of ours: start again from a full snapshot.
      this.link.log(`binary snapshot of world ${snap.world} in world ${this.world}'s stream; resyncing`);
      this.decoder = new Decoder();
      this.resync(now);
      return null;
    }
    // What a resync asks for (or the first snapshot): a full frame, or with
    // a byte budget a partial one that resets the view. A partial frame
    // without reset may well decode after a failed one (its entities name
    // baselines we acked), but the view still misses what the failed one
    // carried.
    if (snap.partial ? snap.reset : !snap.delta) this.resyncAt = null;
    this.tick = unwrapTick(this.tick, snap.tick16);
    // Acked like any frame: the server then codes each entity it carried
    // against it, and stops sending its removals.
    if (this.link.sendBinary(ackFrame(this.world, this.tick))) this.stats.acks++;
    this.stats.snapshots++;
    if (snap.delta) this.stats.deltas++;
    if (snap.partial) this.stats.partials++;

    // The whole view, carried this frame or not: the scene drops what a
    // snapshot lacks.
    const entities = snap.entities.map((e) => this.record(e));
    // The view's shapes: on a reset (or a removal) what is no longer in it
    // is forgotten, topology too, below.
    this.shapes.clear();
    for (const e of snap.entities) this.shapes.set(e.entity, { kind: kindName(e.kind), count: e.count });
    // An id never comes back once its entity is gone: forget what we knew.
    for (const map of [this.topology, this.retryAt]) {
      for (const id of map.keys()) if (!this.shapes.has(id)) map.delete(id);
    }
    for (const e of snap.entities) {
      if (!this.topology.has(e.entity)) this.describe(e.entity, now);
    }
    const out = { world: snap.world, tick: this.tick, delta: snap.delta, partial: snap.partial, entities };
    if (snap.partial) Object.assign(out, { reset: snap.reset, removed: snap.removed, carried: snap.carried });
    return out;
  }

  /** The topology of an entity (its describe reply), or null while unknown. */
  topologyOf(id) {
    return this.topology.get(id) ?? null;
  }

  /**
   * A snapshot record with its topology (sticks, radii, pinned, names,
   * cols/rows; skeleton and capsules; a ball's radius), to build its body
   * from; null until describe has answered.
   */
  withTopology(rec) {
    const t = this.topology.get(rec.entity);
    if (!t) return null;
    if (rec.kind === 'character') {
      return { ...rec, skeleton: t.skeleton, capsules: t.bones.map((b) => [b.capsule.radius, b.capsule.half_length]) };
    }
    if (rec.kind === 'ball') return { ...rec, capsules: [[t.radius, 0]] };
    const { names, sticks, radii, pinned, cols, rows } = t;
    return { ...rec, names, sticks, radii, pinned, cols, rows };
  }

  // A decoded entity as a JSON-shaped record, with tick16 the wire tick of
  // the frame that last carried it. Names (a character's bones and
  // skeleton) come from the topology once it is known.
  record(e) {
    const f = e.f;
    const rec = { entity: e.entity, kind: kindName(e.kind), tick16: e.tick16 };
    const pose = (i) => ({ p: [f[7 * i], f[7 * i + 1], f[7 * i + 2]], q: [f[7 * i + 3], f[7 * i + 4], f[7 * i + 5], f[7 * i + 6]] });
    if (e.kind === KIND.ball) {
      Object.assign(rec, pose(0));
    } else if (e.kind === KIND.character) {
      const t = this.topology.get(e.entity);
      rec.state = stateName(e.state);
      if (t) rec.skeleton = t.skeleton;
      rec.bones = Array.from({ length: e.count }, (_, i) => ({ name: t?.bones[i].name ?? null, ...pose(i) }));
    } else {
      rec.particles = Array.from({ length: e.count }, (_, i) => [f[3 * i], f[3 * i + 1], f[3 * i + 2]]);
    }
    return rec;
  }

  // Asks for an entity's topology once (again after DESCRIBE_RETRY_MS if
  // that failed). A reply that does not fit the entity as streamed (another
  // kind, another number of particles or bones) is not kept.
  async describe(id, now) {
    if (this.closed || this.describing.has(id) || now < (this.retryAt.get(id) ?? -Infinity)) return;
    this.describing.add(id);
    this.stats.describes++;
    const reply = await this.link.send({ op: 'describe', world: this.world, entity: id });
    this.describing.delete(id);
    const shape = this.shapes.get(id);
    if (this.closed || shape === undefined) return; // over, or the entity is gone
    const size = reply?.kind === 'character' ? reply.bones?.length : reply?.kind === 'ball' ? 1 : reply?.particle_count;
    if (reply?.ok && reply.kind === shape.kind && size === shape.count) {
      this.topology.set(id, reply);
      return;
    }
    const wait = Number(/retry in (\d+) ms/.exec(reply?.error?.message ?? '')?.[1] ?? 0);
    this.retryAt.set(id, this.now() + Math.max(DESCRIBE_RETRY_MS, wait));
    if (reply?.error?.code === 'not_found') return; // despawned meanwhile: the next snapshot drops it
    // One line for a burst (the log folds repeats), not one per entity.
    this.link.log(reply?.error
      ? `describe: ${reply.error.code}; retrying`
      : reply ? `describe: entity ${id} does not match its snapshot; retrying` : 'describe: no reply; retrying');
  }

  // Asks for a full snapshot once; again only if none came within
  // RESYNC_RETRY_MS.
  resync(now) {
    if (this.closed || (this.resyncAt !== null && now - this.resyncAt < RESYNC_RETRY_MS)) return;
    this.resyncAt = now;
    this.stats.resyncs++;
    this.link.send({ op: 'resync', world: this.world }).then((reply) => {
      if (reply?.error && !this.closed) this.link.log(`resync: ${reply.error.code}: ${reply.error.message}`);
    });
  }
}
