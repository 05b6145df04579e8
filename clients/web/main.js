// The viewer's wiring: connection -> subscription (binary snapshots, see
// stream.js) -> snapshots and events -> scene, HUD and character panel;
// sliders, buttons, dragging and clicking -> commands.
import * as THREE from 'three';
import { Connection, SnapshotStream, newStats, protocolsFor, refusalMessage } from 'ragdolld-client';
import { WorldView } from './scene.js';
import { installDrag } from './drag.js';
import { installClick } from './click.js';
import { CharacterPanel } from './characters.js';
import { ParamPanel, Hud, RateMeter, SnapshotRate, logMessage } from './ui.js';
import { HudPlots } from './plots.js';

const SNAPSHOT_HZ = 30;
const FORMAT = 'binary';
const HUD_MS = 200;
const BALL_SPEED = 14;       // m/s: from the camera to the middle of the demo in about half a second
const SPAWN_RANGE = 8;       // m: farther than this in front of the camera, spawn at the orbit target

// Numbers go out at 0.1 mm (or 10⁻⁴ of a unit) like the server's: shorter frames, same physics.
const round4 = (x) => Math.round(x * 1e4) / 1e4;

const $ = (id) => document.getElementById(id);
const hud = new Hud($('hud-values'), $('conn'));
let plots = null;
try {
  plots = new HudPlots($('hud-plots'));
} catch (err) {
  console.warn(`no HUD plots: ${err.message}`);
}
// A point a second on the HUD's plots (the HUD itself refreshes faster).
let plotAt = 0;
const log = (text, kind = 'error') => logMessage($('log'), text, kind);
const dropButton = $('drop');
const worldButtons = [dropButton, $('throw-ball'), $('drop-softbody'), $('spawn-character')];

// A message that stays in the middle of the screen while a problem lasts
// (refused connection, a world that is not there), unlike the log's lines.
// `key` names the problem, so that clearing one leaves another shown.
const noticeEl = $('notice');
let noticeKey = null;
function notice(key, text) {
  noticeKey = key;
  noticeEl.textContent = text;
  noticeEl.hidden = false;
}
function clearNotice(key) {
  if (noticeKey !== key) return;
  noticeKey = null;
  noticeEl.hidden = true;
}

// On a small screen the panels start folded, so the scene shows; on a short
// one the parameter sliders do, so the buttons and the character panel fit.
if (matchMedia('(max-width: 600px)').matches) {
  for (const id of ['hud-details', 'params-details', 'character-details']) $(id).open = false;
} else if (window.innerHeight < 700) {
  $('params-details').open = false;
}

const state = {
  worlds: [],            // from the welcome: [{ world, name, tick_hz, ... }]
  world: null,           // the subscribed world, once the reply is in
  format: null,          // its snapshot format, as the subscribe reply says
  stream: null,          // its SnapshotStream: decoder, acks, topology
  tickHz: 60,
  last: null,            // the newest snapshot
  metrics: null,         // the newest metrics event's figures
  entities: new Map(),   // entity id -> its record in the newest snapshot
  head: null,            // { entity, tick, x, y, z } of the first ragdoll's head
  headSpeed: null,       // m/s
  orphan: null,          // a particle held when the connection dropped
};
const stats = newStats(); // binary frames, snapshots, deltas, acks, resyncs: all subscriptions
let received = 0;                   // bytes of every frame received, text and binary
const byteRate = new RateMeter();   // every frame received and its bytes
const snapRate = new SnapshotRate(); // decoded snapshots (and deltas), over their ticks

// ?world=N picks the world, and then only that one is shown; otherwise the
// first one the server lists. Anything else is not a world id: say so and
// show nothing rather than some other world.
const worldParam = new URLSearchParams(location.search).get('world');
const wanted = worldParam !== null && /^[1-9]\d*$/.test(worldParam) && Number.isSafeInteger(Number(worldParam))
  ? Number(worldParam) : null;
const badWorld = worldParam !== null && wanted === null;
// ?budget=N subscribes with a byte budget of N bytes a second (interest
// management, PROTOCOL.md §5.3): what is near the orbit target (the focus,
// below) and moving comes at full rate, the rest less often.
const budgetParam = new URLSearchParams(location.search).get('budget');
const budget = budgetParam !== null && /^\d+$/.test(budgetParam) &&
  Number(budgetParam) >= 1000 && Number(budgetParam) <= 1e8 ? Number(budgetParam) : null;

let view = null;
try {
  view = new WorldView($('view'));
} catch (err) {
  log(`cannot start WebGL: ${err.message}`);
}

// Read-only hooks for the browser test (tests/e2e).
window.__ragdolld = Object.freeze({
  get webgl2() { return view?.webgl2 === true; },
  // The HUD's plots: how many points each holds, and how often they were redrawn.
  get plots() { return plots ? { points: plots.points, updates: plots.updates } : null; },
  get snapshots() { return stats.snapshots; },
  get format() { return state.format; },
  // Counters since the page loaded: frames and bytes received (binary),
  // snapshots decoded, deltas among them, acks sent, resyncs asked, frames
  // that failed to decode, describes sent.
  get stats() { return { ...stats }; },
  // Bytes of every frame the page received (snapshots, events, replies).
  get received() { return received; },
  // Ids of the entities drawn (those whose topology is known).
  get drawn() { return view ? [...view.bodies.keys()] : []; },
  get world() { return state.world; },
  // The newest snapshot's tick, or null.
  get tick() { return state.last?.tick ?? null; },
  // The message in the middle of the screen, or null.
  get notice() { return noticeEl.hidden ? null : noticeEl.textContent; },
  get entities() { return state.entities; },
  get selection() { return [...characters.selection]; },
  get camera() { return view?.camera.position.toArray() ?? null; },
  screenOf: (entity, particle) => view?.screenOf(entity, particle) ?? null,
  screenOfBone: (entity, bone) => view?.screenOfBone(entity, bone) ?? null,
  // The drag marker as drawn (ring at the held particle, dot at the target,
  // the line's ends, in page coordinates), or null while nothing is held.
  dragMarker: () => view?.dragMarker() ?? null,
  // Page coordinates of a world point [x, y, z], or null behind the camera.
  project(p) {
    const s = view?.project(new THREE.Vector3(...p));
    return s && s.depth > 0 ? { x: s.x, y: s.y } : null;
  },
  // What a press at page point (x, y) would take, as plain data.
  pickAt(x, y) {
    const hit = view?.pickAt(x, y);
    if (!hit) return null;
    return hit.type === 'particle'
      ? { type: hit.type, entity: hit.entity, particle: hit.particle }
      : { type: hit.type, entity: hit.entity, bone: hit.bone, point: hit.point.toArray() };
  },
});

/** Sends a command; an error reply or a failure is logged, the reply returned (or null). */
async function command(cmd) {
  try {
    const reply = await conn.send(cmd);
    if (reply.error) log(`${cmd.op}: ${reply.error.code}: ${reply.error.message}`);
    return reply;
  } catch (err) {
    log(`${cmd.op}: ${err.message}`);
    return null;
  }
}

const panel = new ParamPanel($('sliders'), (fields) => {
  if (state.world !== null) command({ op: 'set_params', world: state.world, ...fields });
});

// "Tear at": every rope and cloth of the world tears past this stretch
// (set_tear; 0 and anything under 1.01 is never).
const tearInput = $('tear');
const tearOut = $('tear-out');
const tearRatio = () => {
  const v = Number(tearInput.value);
  return v < 1.01 ? 0 : v;
};
const showTear = () => { tearOut.textContent = tearRatio() === 0 ? 'never' : `× ${tearRatio().toFixed(2)}`; };
showTear();
tearInput.addEventListener('input', showTear);
tearInput.addEventListener('change', () => {
  if (state.world === null) return;
  for (const [entity, e] of state.entities) {
    if (e.kind === 'cloth' || e.kind === 'rope') {
      command({ op: 'set_tear', world: state.world, entity, ratio: tearRatio() });
    }
  }
});

const drag = view && installDrag(view, command, () => state.world);

const characters = new CharacterPanel({
  title: $('char-title'), getup: $('getup'), active: $('drive-active'), limp: $('drive-limp'),
  gain: $('drive-kp'), gainOut: $('drive-kp-out'), partial: $('partial'),
  wear: { cape: $('wear-cape'), skirt: $('wear-skirt'), hair: $('wear-hair') },
  impulse: $('hit-impulse'), impulseOut: $('hit-impulse-out'), legend: $('legend'),
  hudList: $('hud-selected'),
}, {
  command,
  world: () => state.world,
  log,
  onSelect: (ids) => view?.setSelected(ids),
});

if (view) {
  installClick(view, {
    rigid(hit, e) {
      const kind = state.entities.get(hit.entity)?.kind;
      if (kind === 'ball') {
        kick(hit);
      } else if (e.shiftKey) {
        characters.toggle(hit.entity); // select without hitting
      } else {
        characters.strike(hit);
      }
    },
    empty(e) {
      if (!e.shiftKey) characters.select([]);
    },
  }, () => state.world);
  window.addEventListener('keydown', (e) => {
    if (e.key === 'Escape') characters.select([]);
  });
}

// A click on a ball pushes it along the view ray, as hard as a hit.
function kick(hit) {
  command({
    op: 'apply_impulse', world: state.world, entity: hit.entity,
    impulse: hit.direction.toArray().map((d) => round4(d * characters.impulse)),
  });
}

for (const b of worldButtons) b.disabled = true;
dropButton.addEventListener('click', () => {
  if (state.world === null) return;
  command({
    op: 'spawn_ragdoll',
    world: state.world,
    position: [Math.random() * 3 - 1.5, 4, 0],
    facing: (Math.random() * 2 - 1) * Math.PI,
  });
});

// A ball from just in front of the camera, along its view.
$('throw-ball').addEventListener('click', () => {
  if (state.world === null || !view) return;
  const dir = view.camera.getWorldDirection(new THREE.Vector3());
  const from = view.camera.position.clone().addScaledVector(dir, 0.6);
  command({
    op: 'spawn_ball', world: state.world,
    position: from.toArray().map(round4),
    velocity: dir.multiplyScalar(BALL_SPEED).toArray().map(round4),
  });
});

// The point of the ground where the camera looks (or under the orbit target
// when that is far or above the horizon), scattered by up to ±scatter/2 m so
// that pressing twice does not stack two bodies in one place.
function groundInView(scatter) {
  const cam = view.camera.position;
  const rect = view.canvas.getBoundingClientRect();
  const ground = new THREE.Plane(new THREE.Vector3(0, 1, 0), 0);
  let at = view.pointOnPlane(rect.left + rect.width / 2, rect.top + rect.height / 2, ground);
  if (!at || at.distanceTo(cam) > SPAWN_RANGE) at = view.controls.target.clone().setY(0);
  at.x += (Math.random() - 0.5) * scatter;
  at.z += (Math.random() - 0.5) * scatter;
  return at;
}

// A soft body (PROTOCOL.md §3 spawn_softbody), box or sphere by turns, 3 m
// above the ground where the camera looks (or above the orbit target when
// that is far or above the horizon).
let softShape = 0;
$('drop-softbody').addEventListener('click', () => {
  if (state.world === null || !view) return;
  const at = groundInView(0.3);
  const shape = softShape++ % 2 === 0 ? 'box' : 'sphere';
  command({
    op: 'spawn_softbody', world: state.world,
    position: [round4(at.x), 3, round4(at.z)],
    shape, size: 0.8, resolution: 5, stiffness: 0.4, pressure: shape === 'sphere' ? 0.5 : 0,
  });
});

// A character on the ground where the camera looks (or under the orbit
// target when that is far or above the horizon), facing the camera; it
// becomes the selection.
$('spawn-character').addEventListener('click', async () => {
  if (state.world === null || !view) return;
  const cam = view.camera.position;
  const at = groundInView(0.6);
  const reply = await command({
    op: 'spawn_character', world: state.world,
    position: [round4(at.x), 0, round4(at.z)],
    // The skeleton faces +Z; turned by atan2(dx, dz) it faces the camera.
    facing: round4(Math.atan2(cam.x - at.x, cam.z - at.z)),
    skeleton: $('spawn-skeleton').value,
  });
  if (reply?.ok) characters.select([reply.entity]);
});

// Connect last: its status callback touches the panel, button and drag above.
// The access token, if any, comes from the page URL's fragment (auth.js);
// it goes nowhere but into the subprotocol offer.
const auth = protocolsFor(location.hash);
const offline = { send: () => Promise.reject(new Error('not connected')), sendBinary: () => false };
let conn = offline;
if (badWorld) {
  notice('world', `?world=${worldParam.slice(0, 40)} is not a world id: it wants a whole number, like ?world=1`);
  hud.set({ world: 'none' });
  hud.status('closed', 'not connected');
} else if (auth.error) {
  notice('auth', auth.error);
  hud.status('closed', 'not connected');
} else {
  conn = new Connection(`${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/ws`, {
    welcome: onWelcome,
    message: onMessage,
    status(s, text) {
      hud.status(s, text);
      if (s === 'open') clearNotice('refused');
      else leaveWorld();
    },
    refused: () => notice('refused', refusalMessage(auth.token)),
    binary: onBinary,
    bytes(n) {
      received += n;
      byteRate.add(performance.now(), n);
    },
  }, auth.protocols, `${location.origin}/healthz`);
}

function onWelcome(msg) {
  state.worlds = msg.worlds ?? [];
  const target = wanted ?? state.worlds[0]?.world ?? null;
  if (target === null) {
    log('the server has no worlds', 'info');
    return;
  }
  subscribe(target);
}

async function subscribe(world) {
  if (budgetParam !== null && budget === null) log(`?budget=${budgetParam}: not a whole number of bytes a second from 1000 to 100000000; no budget`);
  const reply = await command({ op: 'subscribe', world, format: FORMAT, rate_hz: SNAPSHOT_HZ,
    ...(budget !== null ? { bytes_per_s: budget } : {}) });
  if (reply?.error?.code === 'not_found' && world === wanted) {
    // Asked for by the page URL: show that it is not there, not another world.
    const others = state.worlds.map((w) => `${w.world}${w.name ? ` (${w.name})` : ''}`).join(', ');
    notice('world', `no world ${world} on this server` +
      (others ? `: it has ${others}; open ?world=${state.worlds[0].world}` : ': it has none'));
    hud.set({ world: `no world ${world}` });
    return;
  }
  if (!reply || reply.error) return;
  clearNotice('world');
  enterWorld(reply);
}

function enterWorld(reply) {
  view?.clear();
  state.stream?.close();
  state.world = reply.world;
  state.format = reply.format;
  if (reply.format !== FORMAT) log(`subscribed with format ${reply.format}, not ${FORMAT}: no snapshots will show`);
  // A new decoder for every subscription: baselines belong to one world and one session.
  focusSent = null; // a new subscription has no focus yet
  state.stream = new SnapshotStream(reply, {
    send: (cmd) => conn.send(cmd).catch(() => null),
    sendBinary: (bytes) => conn.sendBinary(bytes),
    log,
  }, stats);
  state.tickHz = reply.tick_hz;
  snapRate.reset();
  state.last = null;
  state.metrics = null;
  state.entities.clear();
  state.head = null;
  state.headSpeed = null;
  characters.reset();
  if (view) {
    view.setStatics(reply.statics);
    view.interval = 1000 / reply.rate_hz;
  }
  panel.setParams(reply.params);
  panel.setEnabled(true);
  for (const b of worldButtons) b.disabled = false;
  if (state.orphan?.world === reply.world) {
    // Quietly: the entity may be gone by now, which is fine.
    conn.send({ op: 'release', ...state.orphan }).catch(() => {});
  }
  state.orphan = null;
  const name = state.worlds.find((w) => w.world === reply.world)?.name;
  hud.set({ world: name ? `${reply.world} · ${name}` : String(reply.world) });
  $('format').textContent = reply.format;
}

// The connection or the world is gone: stop sending to it. The last picture
// stays on screen (the badge says why) until a new subscription replaces it.
function leaveWorld() {
  state.world = null;
  state.stream?.close();
  state.stream = null;
  state.format = null;
  $('format').textContent = '';
  // The server keeps a drag until someone releases it, even after its
  // client is gone; remember the particle to let go of it once back.
  state.orphan = drag?.reset() ?? state.orphan;
  panel.setEnabled(false);
  for (const b of worldButtons) b.disabled = true;
  characters.render();
}

function onMessage(msg) {
  switch (msg.ev) {
    case 'metrics':
      if (msg.world === state.world) state.metrics = msg.metrics;
      return;
    case 'params':
      if (msg.world === state.world) panel.setParams(msg.params);
      return;
    case 'statics':
      // The level changed (add_box): draw its colliders again.
      if (msg.world === state.world) view?.setStatics(msg.statics);
      return;
    case 'entity_removed':
      if (msg.world === state.world) log(`entity ${msg.entity} was removed (${msg.reason})`, 'info');
      return;
    case 'torn':
      // Its sticks changed: draw it again from its new topology (the next
      // JSON snapshot's, or a fresh describe).
      if (msg.world === state.world) {
        state.stream?.topology.delete(msg.entity);
        view?.dropBody(msg.entity);
      }
      return;
    case 'character_state':
    case 'settled':
      if (msg.world === state.world) characters.onEvent(msg);
      return;
    case 'world_destroyed':
      if (msg.world !== state.world) return;
      log(`world ${msg.world} was destroyed`, 'info');
      leaveWorld();
      characters.reset(); // its characters, and the selection of them, are gone
      // Nothing of it is left to show: clear the scene and the figures
      // (the HUD shows dashes), and say so where the world's name was.
      view?.clear();
      view?.setStatics({ ground: true, boxes: [] });
      state.last = null;
      state.metrics = null;
      state.entities.clear();
      state.head = null;
      state.headSpeed = null;
      state.worlds = state.worlds.filter((w) => w.world !== msg.world);
      hud.set({ world: `${msg.world} destroyed` });
      if (msg.world === wanted) {
        // The page URL names this world: do not move on to another.
        notice('world', `world ${msg.world} was destroyed`);
        return;
      }
      command({ op: 'list_worlds' }).then((r) => {
        if (r?.worlds) state.worlds = r.worlds;
        const next = r?.worlds?.[0]?.world;
        if (next !== undefined && state.world === null) subscribe(next);
      });
      return;
    default:
      // A reply we were not waiting for (e.g. "re": null for an unreadable frame).
      if (msg.error) log(`${msg.error.code}: ${msg.error.message}`);
  }
}

// A binary frame: decoded (and acknowledged) by the subscription's stream.
// Frames with no subscription to go to (the world just went) are dropped.
function onBinary(bytes) {
  const now = performance.now();
  const snap = state.stream?.receive(bytes, now);
  if (!snap) return;
  // A partial frame (a byte budget) codes each entity against what the page
  // holds of it: a delta too, for the HUD.
  snapRate.add(snap.tick, snap.delta || snap.partial, now);
  onSnapshot(snap, now);
}

function onSnapshot(snap, now) {
  state.last = snap;
  state.entities.clear();
  for (const e of snap.entities) state.entities.set(e.entity, e);

  // An entity gets its body once its topology is known (describe has
  // answered); until then it is not drawn.
  if (view) {
    for (const id of view.applySnapshot(snap, now)) {
      const rec = state.stream.withTopology(state.entities.get(id));
      if (rec) view.setBody(rec);
    }
  }
  characters.onSnapshot(snap);
  trackHead(snap);
}

// Head speed of the first ragdoll: |Δ head| over the time between the two
// snapshots' ticks (not arrival times, which jitter).
function trackHead(snap) {
  const rag = snap.entities.find((e) => e.kind === 'ragdoll');
  if (!rag) {
    state.head = null;
    state.headSpeed = null;
    return;
  }
  const names = state.stream?.topologyOf(rag.entity)?.names;
  const i = Math.max(0, names ? names.indexOf('head') : 0);
  const [x, y, z] = rag.particles[i];
  const h = state.head;
  if (h && h.entity === rag.entity && snap.tick > h.tick) {
    const dt = (snap.tick - h.tick) / state.tickHz;
    state.headSpeed = Math.hypot(x - h.x, y - h.y, z - h.z) / dt;
  } else if (!h || h.entity !== rag.entity) {
    state.headSpeed = null;
  }
  state.head = { entity: rag.entity, tick: snap.tick, x, y, z };
}

// The HUD refreshes at a steady pace so the rates fall to zero when the
// snapshots stop, and numbers stay readable. The world's figures come from
// the metrics event (once a second); the rates are measured here.
setInterval(() => {
  const now = performance.now();
  const s = state.last;
  const m = state.metrics ?? {};
  // A number the server could not compute arrives as null: show a dash
  // rather than stop updating the HUD.
  const num = (v) => typeof v === 'number' && Number.isFinite(v);
  const count = (v, fallback) => (num(v) ? String(v) : s ? String(fallback()) : '–');
  // constraint_error sums |length - rest length| over every stick, so it
  // grows with the world; the mean per stick is the figure that means
  // something on its own.
  const error = !num(m.constraint_error) || !num(m.sticks) ? '–'
    : m.sticks === 0 ? 'no sticks'
      : `${(1000 * m.constraint_error / m.sticks).toFixed(2)} mm mean`;
  const { count: snaps, deltas } = snapRate.rate(now, state.tickHz);
  hud.set({
    tick: s ? String(s.tick) : '–',
    head: !num(state.headSpeed) ? '–' : `${state.headSpeed.toFixed(2)} m/s`,
    error,
    passes: num(m.solver_passes) ? String(m.solver_passes) : '–',
    step: !num(m.step_ms) ? '–' : `${m.step_ms.toFixed(2)} ms`,
    dropped: num(m.overruns) ? String(m.overruns) : '–',
    sps: snaps === 0 ? '0' : `${snaps.toFixed(0)} (${Math.round(100 * deltas / snaps)} % delta)`,
    bps: formatBytes(byteRate.rate(now).size),
    entities: count(m.entities, () => s.entities.length),
    particles: count(m.particles, () => s.entities.reduce((n, e) => n + (e.particles?.length ?? 0), 0)),
    frozen: num(m.frozen_entities) ? `${m.frozen_entities} (${m.frozen_particles} particles)` : '–',
  });
  if (plots !== null && now - plotAt >= 1000) {
    plotAt = now;
    plots.push(now / 1000, [num(m.step_ms) ? m.step_ms : null, snaps, byteRate.rate(now).size]);
  }
  sendFocus();
}, HUD_MS);

// Level of detail (PROTOCOL.md §3 set_focus): this page looks at its orbit
// target; told again when it has moved more than 1 m.
let focusSent = null;
function sendFocus() {
  if (!view || state.world === null || state.stream === null) return;
  const t = view.controls.target;
  if (focusSent && focusSent.world === state.world && focusSent.at.distanceTo(t) < 1) return;
  focusSent = { world: state.world, at: t.clone() };
  command({ op: 'set_focus', world: state.world, point: [round4(t.x), round4(t.y), round4(t.z)] });
}

function formatBytes(perSecond) {
  if (perSecond >= 1e6) return `${(perSecond / 1e6).toFixed(2)} MB/s`;
  if (perSecond >= 1e3) return `${(perSecond / 1e3).toFixed(1)} kB/s`;
  return `${perSecond.toFixed(0)} B/s`;
}

if (view) {
  const frame = () => {
    view.render();
    requestAnimationFrame(frame);
  };
  requestAnimationFrame(frame);
}
