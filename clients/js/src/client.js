// RagdollClient: a ragdolld client for browsers and Node (PROTOCOL.md).
// Commands return promises of their replies, or reject with a RagdollError
// carrying the server's code; subscriptions decode binary snapshots
// (acknowledging each, asking for a resync when one cannot be decoded,
// learning names with describe: stream.js) or take JSON ones, feed an
// interpolation buffer (interp.js), and are made again after a reconnect
// (with backoff: connection.js); events are handed to listeners by name.
import { Connection } from './connection.js';
import { peekWorld } from './codec.js';
import { SnapshotStream, newStats } from './stream.js';
import { Interpolator } from './interp.js';
import { AUTH_PREFIX, SUBPROTOCOL, TOKEN_FORM } from './auth.js';

/** An error reply: `code` is the protocol's (PROTOCOL.md §2), `reply` the whole reply. */
export class RagdollError extends Error {
  constructor(reply) {
    super(`${reply.error.code}: ${reply.error.message}`);
    this.name = 'RagdollError';
    this.code = reply.error.code;
    this.reply = reply;
  }
}

const now = () => (globalThis.performance?.now() ?? Date.now());

/** One world subscription: its snapshots, its interpolation buffer. */
export class Subscription {
  constructor(client, world, options, onSnapshot) {
    this.client = client;
    this.world = world;
    this.options = options;
    this.onSnapshot = onSnapshot;
    this.reply = null; // the subscribe reply (again after each reconnect)
    this.stream = null; // binary: the decoder of this connection's frames
    this.interpolator = null;
    this.latest = null; // the newest snapshot
    this.focus = null; // { point, radius } from setFocus, sent again after a reconnect
    this.closed = false;
  }

  /** The world as it was a moment ago (Interpolator.sample): { snapshot, info } or null. */
  sample(atMs = now()) {
    return this.interpolator?.sample(atMs) ?? null;
  }

  /**
   * Tells the server where this client looks in the world (set_focus:
   * level of detail, and what a byte budget sends first, PROTOCOL.md §5.3):
   * point [x, y, z] m, or null for none; radius m (15). Remembered: sent
   * again after every reconnect, once the subscription is made again.
   * Resolves with the reply; rejects with a RagdollError.
   */
  setFocus(point, radius = 15) {
    this.focus = { point, radius };
    return this.client.send(this.focusCommand());
  }

  focusCommand() {
    const { point, radius } = this.focus;
    return point === null ? { op: 'set_focus', world: this.world } : { op: 'set_focus', world: this.world, point, radius };
  }

  /** Ends the subscription (unsubscribe); nothing when a later subscribe to the world replaced it. */
  async close() {
    if (this.closed) return;
    this.closed = true;
    this.stream?.close();
    if (this.client.subs.get(this.world) !== this) return; // replaced: that one goes on
    this.client.subs.delete(this.world);
    // A subscribe to the world on its way replaces this one at the server:
    // an unsubscribe now would end that one.
    if (this.client.subscribing.get(this.world)) return;
    if (this.client.connection.isOpen) await this.client.send({ op: 'unsubscribe', world: this.world });
  }

  // The subscribe reply of a (re)subscription.
  started(reply) {
    this.reply = reply;
    this.stream?.close();
    this.stream = null;
    if (reply.format === 'binary') {
      const link = {
        send: (cmd) => this.client.send(cmd).catch((e) => e.reply ?? null),
        sendBinary: (bytes) => this.client.connection.sendBinary(bytes),
        log: (text) => this.client.emit('log', text),
        now,
      };
      this.stream = new SnapshotStream(reply, link, this.client.stats);
    }
    if (this.options.interpolate !== false) {
      this.interpolator = new Interpolator(reply.tick_hz, reply.rate_hz);
    }
  }

  take(snapshot) {
    this.latest = snapshot;
    this.interpolator?.push(snapshot, now());
    this.onSnapshot?.(snapshot);
  }
}

export class RagdollClient {
  /**
   * url: ws://host:port/ws. options: { token (an access token, PROTOCOL.md
   * §6), WebSocket (the class to use; the global one, else the `ws`
   * package in Node), reconnect (true), connectTimeoutMs (10000: the first
   * welcome's wait) }. Use connect(), which resolves once the server's
   * welcome came, and rejects (leaving nothing running) when the first
   * attempt fails.
   */
  constructor(url, options = {}) {
    if (options.token != null && !TOKEN_FORM.test(options.token)) {
      throw new TypeError('a token is 16-128 characters of A-Z a-z 0-9 . _ ~ -');
    }
    this.url = url;
    this.options = options;
    this.listeners = new Map(); // name -> Set of functions
    this.subs = new Map(); // world -> Subscription
    this.subscribing = new Map(); // world -> subscribes on their way
    this.stats = newStats();
    this.welcome = null;
    this.connection = null;
  }

  /** Connects; resolves with the client once welcomed (rejects if the first attempt fails). */
  static async connect(url, options = {}) {
    const c = new RagdollClient(url, options);
    const WS = options.WebSocket ?? globalThis.WebSocket ?? (await import('ws')).default;
    const protocols = options.token != null ? [SUBPROTOCOL, AUTH_PREFIX + options.token] : [SUBPROTOCOL];
    const timeoutMs = options.connectTimeoutMs ?? 10000;
    await new Promise((resolve, reject) => {
      let first = true;
      // A server that takes the connection but never upgrades it: give up.
      const timer = setTimeout(() => {
        if (!first) return;
        first = false;
        c.connection.close();
        reject(new Error(`cannot connect to ${url}: no welcome within ${timeoutMs} ms`));
      }, timeoutMs);
      c.connection = new Connection(url, {
        welcome: (msg) => {
          const again = c.welcome !== null;
          c.welcome = msg;
          c.emit('welcome', msg);
          if (first) {
            first = false;
            clearTimeout(timer);
            resolve();
          }
          if (again) c.resubscribe();
        },
        message: (msg) => c.message(msg),
        binary: (bytes) => c.binary(bytes),
        status: (state, text) => {
          c.emit('status', { state, text });
          if (state === 'closed' && first) {
            // The first attempt failed: the caller gets no client to close,
            // so this one stops trying.
            first = false;
            clearTimeout(timer);
            c.connection.close();
            reject(new Error(`cannot connect to ${url}: refused, or nobody there`));
          } else if (state === 'closed' && options.reconnect === false) {
            c.connection.close();
          }
        },
      }, protocols, null, WS);
    });
    return c;
  }

  /** Listens to `name`: an event's "ev" ("impacts", "character_state", ...), or
   * "welcome", "status" ({ state, text }), "event" (every event), "log". Returns a function that stops it. */
  on(name, fn) {
    if (!this.listeners.has(name)) this.listeners.set(name, new Set());
    this.listeners.get(name).add(fn);
    return () => this.listeners.get(name)?.delete(fn);
  }

  emit(name, value) {
    for (const fn of this.listeners.get(name) ?? []) fn(value);
  }

  /**
   * Sends a command; resolves with its reply, or rejects with a RagdollError
   * (or an Error when no reply came). A number that is not finite is refused
   * here with a RagdollError not_finite: JSON would carry it as null, which
   * the server takes for "absent".
   */
  async send(cmd) {
    const bad = nonFinite(cmd);
    if (bad !== null) {
      throw new RagdollError({ re: null, error: { code: 'not_finite', message: `field "${bad}" is not a finite number` } });
    }
    const reply = await this.connection.send(cmd);
    if (reply.error) throw new RagdollError(reply);
    return reply;
  }

  /** Closes for good. */
  close() {
    for (const s of this.subs.values()) s.stream?.close();
    this.subs.clear();
    this.connection.close();
  }

  /**
   * Subscribes to a world: options { format ('binary'), rate_hz (30),
   * events ([]: "impact", "joint_limit"), impact_speed, bytes_per_s (a byte
   * budget, §5.3: binary snapshots come as partial frames, each with some
   * entities; none), interpolate (true) }; onSnapshot(snapshot) gets every
   * snapshot, JSON-shaped (§5.1) whatever the format, with every entity the
   * client knows (a partial frame's `carried` names those it brought). Made
   * again after every reconnect.
   */
  async subscribe(world, options = {}, onSnapshot = null) {
    const sub = new Subscription(this, world, { format: 'binary', rate_hz: 30, ...options }, onSnapshot);
    // A subscription already there goes on until the server has taken this
    // one (a refused one changes nothing), then this one replaces it, as
    // the server's does.
    this.subscribing.set(world, (this.subscribing.get(world) ?? 0) + 1);
    let reply;
    try {
      reply = await this.send(this.subscribeCommand(sub));
    } finally {
      const n = this.subscribing.get(world) - 1;
      if (n > 0) this.subscribing.set(world, n);
      else this.subscribing.delete(world);
    }
    const before = this.subs.get(world);
    if (before !== undefined) {
      before.closed = true;
      before.stream?.close();
    }
    this.subs.set(world, sub);
    sub.started(reply);
    return sub;
  }

  subscribeCommand(sub) {
    const o = sub.options;
    const cmd = { op: 'subscribe', world: sub.world, format: o.format, rate_hz: o.rate_hz };
    if (o.events) cmd.events = o.events;
    if (o.impact_speed != null) cmd.impact_speed = o.impact_speed;
    if (o.bytes_per_s != null) cmd.bytes_per_s = o.bytes_per_s;
    return cmd;
  }

  // After a reconnect: every subscription again (a world gone is dropped).
  resubscribe() {
    for (const sub of [...this.subs.values()]) {
      this.send(this.subscribeCommand(sub)).then((r) => {
        sub.started(r);
        // The focus belongs to the connection at the server: say it again.
        if (sub.focus !== null) this.send(sub.focusCommand()).catch(() => {});
      }, () => {
        this.subs.delete(sub.world);
        this.emit('log', `world ${sub.world} could not be subscribed again`);
      });
    }
  }

  message(msg) {
    if (msg.ev === 'snapshot') {
      this.subs.get(msg.world)?.take(msg);
      return;
    }
    if (msg.ev === 'world_destroyed') this.subs.delete(msg.world);
    if (msg.ev !== undefined) {
      this.emit(msg.ev, msg);
      this.emit('event', msg);
    }
  }

  binary(bytes) {
    const sub = this.subs.get(peekWorld(bytes));
    if (sub === undefined || sub.stream === null) return;
    const snap = sub.stream.receive(bytes);
    if (snap !== null) sub.take({ ...snap, entities: snap.entities.map((e) => sub.stream.withTopology(e) ?? e) });
  }

  // Typed commands (PROTOCOL.md §3): each resolves with the reply.
  listWorlds() { return this.send({ op: 'list_worlds' }); }
  createWorld(name, options = {}) { return this.send({ op: 'create_world', name, ...options }); }
  destroyWorld(world) { return this.send({ op: 'destroy_world', world }); }
  spawnCharacter(world, position, options = {}) { return this.send({ op: 'spawn_character', world, position, ...options }); }
  spawnBall(world, position, options = {}) { return this.send({ op: 'spawn_ball', world, position, ...options }); }
  despawn(world, entity) { return this.send({ op: 'despawn', world, entity }); }
  describe(world, entity) { return this.send({ op: 'describe', world, entity }); }
  kill(world, entity, hitPoint, impulse, options = {}) {
    return this.send({ op: 'kill', world, entity, hit_point: hitPoint, impulse, ...hitFields(options) });
  }
  applyImpulse(world, entity, impulse, options = {}) {
    return this.send({ op: 'apply_impulse', world, entity, impulse, ...hitFields(options) });
  }
  raycast(world, origin, direction, options = {}) {
    const cmd = { op: 'raycast', world, origin, direction, ...hitFields(options) };
    if (options.maxDistance != null) cmd.max_distance = options.maxDistance;
    return this.send(cmd);
  }
  startGetup(world, entity, blendTime) {
    return this.send({ op: 'start_getup', world, entity, ...(blendTime != null ? { blend_time: blendTime } : {}) });
  }
  setParams(world, params) { return this.send({ op: 'set_params', world, ...params }); }
}

// The path of the first number in v that is not finite, or null.
function nonFinite(v, path = '') {
  if (typeof v === 'number') return Number.isFinite(v) ? null : path;
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) {
      const p = nonFinite(v[i], `${path}[${i}]`);
      if (p !== null) return p;
    }
  } else if (v !== null && typeof v === 'object') {
    for (const [k, x] of Object.entries(v)) {
      const p = nonFinite(x, path ? `${path}.${k}` : k);
      if (p !== null) return p;
    }
  }
  return null;
}

// The options of a hit (seenTick, bone, particle, point) on the wire.
function hitFields(o) {
  const out = {};
  if (o.seenTick != null) out.seen_tick = o.seenTick;
  if (o.bone != null) out.bone = o.bone;
  if (o.particle != null) out.particle = o.particle;
  if (o.point != null) out.point = o.point;
  return out;
}

/** RagdollClient.connect(url, options). */
export const connect = (url, options) => RagdollClient.connect(url, options);
