// The characters side of the viewer: which characters are selected, what
// the viewer knows about each (state from snapshots and events, the bone the
// last kill hit, the clip of the last get-up), the Character panel that
// commands the selection (get up, muscles, partial ragdoll, hit strength) and
// the HUD lines that show it. Commands go through the caller's `command`,
// which logs error replies; nothing here throws on a reply.
import { STATE_COLORS } from './bodies.js';

// Limbs for "Partial": the bones named per skeleton (each with its
// descendants goes limp). A skeleton without that limb skips it.
const LIMBS = [
  { key: 'none', label: 'none' },
  { key: 'arm_r', label: 'right arm', humanoid: ['upper_arm_r'], dog: ['front_upper_r'] },
  { key: 'arm_l', label: 'left arm', humanoid: ['upper_arm_l'], dog: ['front_upper_l'] },
  { key: 'arms', label: 'both arms', humanoid: ['upper_arm_l', 'upper_arm_r'], dog: ['front_upper_l', 'front_upper_r'] },
  { key: 'leg_r', label: 'right leg', humanoid: ['upper_leg_r'], dog: ['hind_upper_r'] },
  { key: 'leg_l', label: 'left leg', humanoid: ['upper_leg_l'], dog: ['hind_upper_l'] },
  { key: 'head', label: 'head', humanoid: ['head'], dog: ['neck'] },
  { key: 'tail', label: 'tail', dog: ['tail_1'] },
];

const GAIN_MAX = 2000;       // N·m/rad; the server clamps torque at 2000 N·m anyway
const GAIN_DEFAULT = 400;
const RAMP_S = 0.25;         // muscles tense over a quarter second rather than jolt
const IMPULSE_MAX = 200;     // N·s
const IMPULSE_DEFAULT = 40;  // about 4 m/s on a 10 kg chest, enough to knock a 77 kg body over
const SEND_EVERY_MS = 100;   // a gain slider being dragged sends at most 10 set_drive a second
const HUD_MAX = 4;           // selected characters listed in the HUD

/** kd for a gain: 2√kp, the critical damping of a unit inertia. */
export const dampingFor = (kp) => Math.round(2 * Math.sqrt(kp) * 100) / 100;

const round4 = (x) => Math.round(x * 1e4) / 1e4;
const slot = (id) => id % 4294967296; // the short number an id is shown as

export class CharacterPanel {
  /**
   * els: { title, getup, active, limp, gain, gainOut, partial, wear: { cape,
   * skirt, hair }, impulse, impulseOut, legend, hudList }; command(cmd) sends and resolves with the reply
   * or null; world() is the subscribed world or null; log(text, kind) writes to
   * the log; onSelect(ids) is told the new selection.
   */
  constructor(els, { command, world, log, onSelect }) {
    this.els = els;
    this.command = command;
    this.world = world;
    this.log = log;
    this.onSelect = onSelect;
    // id -> { skeleton, bones (names), state, settled, bone, clip, drive, limb }.
    // drive ({ kp, kd } or null for limp) and limb are what this viewer last
    // set: the server does not report them.
    this.info = new Map();
    this.selection = []; // ids, in the order they were picked

    Object.assign(els.gain, { min: 0, max: GAIN_MAX, step: 10, value: GAIN_DEFAULT });
    Object.assign(els.impulse, { min: 0, max: IMPULSE_MAX, step: 5, value: IMPULSE_DEFAULT });
    for (const limb of LIMBS) els.partial.add(new Option(limb.label, limb.key));
    this.showGain();
    this.showImpulse();
    this.fillLegend();

    els.getup.addEventListener('click', () => this.getUp());
    els.active.addEventListener('click', () => this.drive(true));
    els.limp.addEventListener('click', () => this.drive(false));
    els.partial.addEventListener('change', () => this.partial(els.partial.value));
    for (const [kind, button] of Object.entries(els.wear ?? {})) {
      button.addEventListener('click', () => this.wear(kind));
    }
    els.impulse.addEventListener('input', () => this.showImpulse());
    let timer = 0;
    let lastSent = 0;
    els.gain.addEventListener('input', () => {
      this.showGain();
      // Only characters this viewer made active follow the slider.
      const send = () => {
        timer = 0;
        lastSent = performance.now();
        this.drive(true, this.selection.filter((id) => this.info.get(id)?.drive));
      };
      const wait = lastSent + SEND_EVERY_MS - performance.now();
      if (wait <= 0) send();
      else if (!timer) timer = setTimeout(send, wait);
    });
    this.render();
  }

  /** The hit strength from the slider, N·s. */
  get impulse() {
    return Number(this.els.impulse.value);
  }

  get gain() {
    return Number(this.els.gain.value);
  }

  /** Forgets everything (new subscription or world gone). */
  reset() {
    this.info.clear();
    this.select([]);
  }

  /** Replaces the selection. */
  select(ids) {
    this.selection = [...new Set(ids)];
    this.onSelect(this.selection);
    this.render();
  }

  /** Adds a character to the selection, or takes it out if it is in. */
  toggle(id) {
    this.select(this.selection.includes(id)
      ? this.selection.filter((x) => x !== id)
      : [...this.selection, id]);
  }

  /**
   * State of every character, and its skeleton and bone names once its
   * topology is known; gone ones are dropped.
   */
  onSnapshot(snap) {
    const seen = new Set();
    for (const e of snap.entities) {
      if (e.kind !== 'character') continue;
      seen.add(e.entity);
      const c = this.entry(e.entity);
      if (e.skeleton && c.skeleton !== e.skeleton) {
        c.skeleton = e.skeleton;
        c.bones = e.bones.map((b) => b.name);
      }
      this.setState(c, e.state);
    }
    for (const id of this.info.keys()) if (!seen.has(id)) this.info.delete(id);
    if (this.selection.some((id) => !seen.has(id))) this.select(this.selection.filter((id) => seen.has(id)));
    else this.render();
  }

  /** character_state and settled events (they come before the snapshot that shows them). */
  onEvent(msg) {
    const c = this.entry(msg.entity);
    if (msg.ev === 'character_state') this.setState(c, msg.state);
    else if (msg.ev === 'settled') c.settled = true;
    this.render();
  }

  entry(id) {
    let c = this.info.get(id);
    if (!c) {
      c = { skeleton: null, bones: [], state: null, settled: false, bone: null, clip: null, drive: null, limb: 'none' };
      this.info.set(id, c);
    }
    return c;
  }

  setState(c, state) {
    if (state === c.state) return;
    c.state = state;
    c.settled = false; // a state change is movement; "settled" comes again when it rests
    if (state !== 'partial') c.limb = 'none';
  }

  /**
   * A click on a character (hit from WorldView.raycast): select it and kill
   * it at the clicked point, pushed along the view ray.
   */
  async strike(hit) {
    this.select([hit.entity]);
    const world = this.world();
    if (world === null) return;
    const c = this.entry(hit.entity);
    c.settled = false;
    const reply = await this.command({
      op: 'kill', world, entity: hit.entity,
      hit_point: hit.point.toArray().map(round4),
      impulse: hit.direction.toArray().map((d) => round4(d * this.impulse)),
    });
    if (reply?.ok) {
      c.bone = reply.bone ?? null;
      this.render();
    }
  }

  async getUp() {
    const world = this.world();
    if (world === null) return;
    await Promise.all(this.selection.map(async (id) => {
      const reply = await this.command({ op: 'start_getup', world, entity: id });
      if (reply?.ok) this.entry(id).clip = reply.clip ?? null;
    }));
    this.render();
  }

  /** Muscles on (kp from the slider, kd = 2√kp) or limp (kp = kd = 0) for ids. */
  async drive(active, ids = this.selection) {
    const world = this.world();
    if (world === null || ids.length === 0) return;
    const kp = active ? this.gain : 0;
    const kd = active ? dampingFor(kp) : 0;
    await Promise.all(ids.map(async (id) => {
      const reply = await this.command({ op: 'set_drive', world, entity: id, kp, kd, ramp_time: RAMP_S });
      if (reply?.ok) this.entry(id).drive = active ? { kp, kd } : null;
    }));
    this.render();
  }

  /** Partial ragdoll of a limb (by LIMBS key; "none" ends it) for every selected character. */
  async partial(key) {
    const world = this.world();
    const limb = LIMBS.find((l) => l.key === key);
    if (world === null || !limb) return;
    await Promise.all(this.selection.map(async (id) => {
      const c = this.entry(id);
      const bones = key === 'none' ? [] : limb[c.skeleton] ?? [];
      if (key !== 'none' && (bones.length === 0 || !bones.every((b) => c.bones.includes(b)))) {
        this.log(`#${slot(id)} (${c.skeleton ?? 'unknown skeleton'}) has no ${limb.label}`, 'info');
        return;
      }
      const reply = await this.command({ op: 'set_partial', world, entity: id, bones });
      if (reply?.ok) c.limb = key;
    }));
    this.render();
  }

  /** Dresses every selected character in a garment of its skeleton (attach_cloth). */
  async wear(kind) {
    const world = this.world();
    if (world === null) return;
    await Promise.all(this.selection.map((id) => this.command({ op: 'attach_cloth', world, entity: id, kind })));
  }

  showGain() {
    const kp = this.gain;
    this.els.gainOut.textContent = `${kp} · kd ${dampingFor(kp).toFixed(1)}`;
  }

  showImpulse() {
    this.els.impulseOut.textContent = `${this.impulse} N·s`;
  }

  fillLegend() {
    for (const [state, color] of Object.entries(STATE_COLORS)) {
      const li = document.createElement('li');
      li.style.setProperty('--dot', `#${color.toString(16).padStart(6, '0')}`);
      li.textContent = state.replace('_', ' ');
      this.els.legend.append(li);
    }
  }

  /** Brings the panel and the HUD's list in line with the selection. */
  render() {
    const { els } = this;
    const sel = this.selection;
    const first = sel.length > 0 ? this.entry(sel[0]) : null;
    els.title.textContent = sel.length === 0 ? 'click one'
      : sel.length === 1 ? `#${slot(sel[0])} ${first.skeleton ?? ''}`.trim()
        : `${sel.length} selected`;
    for (const b of [els.getup, els.active, els.limp, els.partial, ...Object.values(els.wear ?? {})]) {
      b.disabled = sel.length === 0 || this.world() === null;
    }
    // Toggle and select show the first selected character's settings.
    const active = Boolean(first?.drive);
    els.active.setAttribute('aria-pressed', String(sel.length > 0 && active));
    els.limp.setAttribute('aria-pressed', String(sel.length > 0 && !active));
    if (document.activeElement !== els.partial) els.partial.value = first?.limb ?? 'none';

    // Snapshots call this 30 times a second: touch the DOM only on a change.
    const shown = JSON.stringify([sel.length, sel.slice(0, HUD_MAX).map((id) => [id, this.info.get(id)])]);
    if (shown === this.shown) return;
    this.shown = shown;
    const list = els.hudList;
    list.replaceChildren();
    list.hidden = sel.length === 0;
    for (const id of sel.slice(0, HUD_MAX)) {
      const c = this.entry(id);
      const row = document.createElement('div');
      row.className = 'character';
      Object.assign(row.dataset, {
        entity: String(id), state: c.state ?? '', settled: String(c.settled),
        bone: c.bone ?? '', clip: c.clip ?? '',
      });
      const name = document.createElement('span');
      name.className = 'name';
      name.textContent = `#${slot(id)} ${c.skeleton ?? ''}`;
      const state = document.createElement('span');
      state.className = 'state';
      state.style.setProperty('--dot', `#${(STATE_COLORS[c.state] ?? 0xb0b0b0).toString(16).padStart(6, '0')}`);
      state.textContent = (c.state ?? '–').replace('_', ' ') + (c.settled ? ', settled' : '');
      const facts = document.createElement('span');
      facts.className = 'facts';
      facts.textContent = `hit ${c.bone ?? '–'} · get-up ${c.clip ?? '–'}` +
        (c.drive ? ` · kp ${c.drive.kp}` : '') + (c.limb !== 'none' ? ` · partial ${LIMBS.find((l) => l.key === c.limb)?.label}` : '');
      row.append(name, state, facts);
      list.append(row);
    }
    if (sel.length > HUD_MAX) {
      const more = document.createElement('div');
      more.className = 'facts';
      more.textContent = `and ${sel.length - HUD_MAX} more`;
      list.append(more);
    }
  }
}
