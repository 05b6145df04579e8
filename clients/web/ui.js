// The DOM side: parameter sliders, the HUD, the message log, and the rate
// meters for the HUD's per-second figures (a sliding window over arrival
// times for bytes, one over world ticks for snapshots). No DOM at module
// load: the tests import the meters in Node (tests/js/rate.test.mjs).

// One slider per world parameter. `get` reads it from a params object, `set`
// makes the set_params fields for a new value (gravity keeps its X and Z,
// wind its Y and Z). A `toggle` row is a checkbox (its value 1 or 0).
const SLIDERS = [
  { key: 'gravity', label: 'Gravity Y', unit: 'm/s²', min: -30, max: 0, step: 0.01, digits: 2,
    get: (p) => p.gravity[1], set: (v, p) => ({ gravity: [p.gravity[0], v, p.gravity[2]] }) },
  { key: 'damping', label: 'Damping', min: 0.9, max: 1, step: 0.001, digits: 3 },
  { key: 'iterations', label: 'Iterations', min: 1, max: 40, step: 1, digits: 0 },
  { key: 'substeps', label: 'Substeps', min: 1, max: 8, step: 1, digits: 0 },
  { key: 'bounciness', label: 'Bounciness', min: 0, max: 0.9, step: 0.01, digits: 2 },
  { key: 'friction', label: 'Friction', min: 0, max: 1, step: 0.01, digits: 2 },
  // Wind along +X (PROTOCOL.md §3 set_params "wind"); cloth feels it.
  { key: 'wind', label: 'Wind X', unit: 'm/s', min: -30, max: 30, step: 0.5, digits: 1,
    get: (p) => (p.wind ? p.wind[0] : 0),
    set: (v, p) => ({ wind: [v, p.wind ? p.wind[1] : 0, p.wind ? p.wind[2] : 0] }) },
  // Gusts on: the wind swells and drops by half its speed ("gust": 0.5).
  { key: 'gust', label: 'Gusts', toggle: true, min: 0, max: 1, step: 1, digits: 0,
    get: (p) => ((p.gust ?? 0) > 0 ? 1 : 0), set: (v) => ({ gust: v ? 0.5 : 0 }) },
];
const SEND_EVERY_MS = 100; // a slider being dragged sends at most 10 set_params a second

export class ParamPanel {
  /** onChange(fields) is called with the set_params fields of one slider. */
  constructor(container, onChange) {
    this.params = null;
    this.rows = SLIDERS.map((s) => this.makeRow(container, s, onChange));
    this.setEnabled(false);
  }

  makeRow(container, spec, onChange) {
    const row = document.createElement('div');
    row.className = 'slider';
    const id = `param-${spec.key}`;
    const type = spec.toggle ? 'checkbox' : 'range';
    row.innerHTML = `<label for="${id}"><span></span><output></output></label><input type="${type}" id="${id}">`;
    row.querySelector('span').textContent = spec.label;
    const input = row.querySelector('input');
    const output = row.querySelector('output');
    if (!spec.toggle) Object.assign(input, { min: spec.min, max: spec.max, step: spec.step });
    container.append(row);
    // A checkbox's value is whether it is checked.
    const valueOf = () => (spec.toggle ? (input.checked ? 1 : 0) : Number(input.value));

    const r = { spec, input, output, held: false, timer: 0, lastSent: 0 };
    const get = spec.get ?? ((p) => p[spec.key]);
    const set = spec.set ?? ((v) => ({ [spec.key]: v }));
    r.get = get;
    const send = () => {
      r.timer = 0;
      r.lastSent = performance.now();
      if (this.params) onChange(set(valueOf(), this.params));
    };
    r.setValue = (v) => {
      if (spec.toggle) input.checked = v !== 0;
      else input.value = String(v);
    };
    input.addEventListener('input', () => {
      this.show(r, valueOf());
      const wait = r.lastSent + SEND_EVERY_MS - performance.now();
      if (wait <= 0) send();
      else if (!r.timer) r.timer = setTimeout(send, wait);
    });
    // While a slider is held, a params event (maybe an echo of one of our
    // own intermediate values) must not yank it from under the pointer.
    input.addEventListener('pointerdown', () => { r.held = true; });
    input.addEventListener('pointerup', () => { r.held = false; });
    input.addEventListener('change', () => { r.held = false; });
    return r;
  }

  show(r, value) {
    if (r.spec.toggle) {
      r.output.textContent = value ? 'on' : 'off';
      return;
    }
    const unit = r.spec.unit ? ` ${r.spec.unit}` : '';
    r.output.textContent = value.toFixed(r.spec.digits) + unit;
  }

  /** Adopts the world's parameters (subscribe reply, params event). */
  setParams(params) {
    this.params = params;
    for (const r of this.rows) {
      const v = r.get(params);
      this.show(r, v); // the true value, even where the slider range clips it
      if (!r.held && !r.timer) r.setValue(v);
    }
  }

  setEnabled(on) {
    for (const r of this.rows) r.input.disabled = !on;
  }
}

// HUD rows: key, label, what it means (the label's tooltip). Labels and
// values are short enough to share one line each at the HUD's width.
const HUD_ROWS = [
  ['world', 'world', 'The world this page watches: its id and name'],
  ['tick', 'tick', 'The tick of the newest snapshot'],
  ['head', 'head speed', "Speed of the first particle ragdoll's head, between the last two snapshots"],
  ['error', 'stick error',
    "Mean over the world's sticks (particle distance constraints) of |length − rest length|: " +
    "the metrics event's constraint_error, a sum over all sticks, divided by their number"],
  ['passes', 'solver passes', 'Constraint passes per tick: iterations × substeps'],
  ['step', 'step time', "Wall time of the server's last tick"],
  ['dropped', 'ticks dropped',
    'Ticks the server skipped since the world started because stepping fell behind real time (overruns)'],
  ['sps', 'snapshots/s',
    'Snapshots received per second of world time (from their ticks), and the share of deltas among them'],
  ['bps', 'received', 'Bytes per second of every frame received: snapshots, events and replies'],
  ['entities', 'entities', 'Entities in the world'],
  ['particles', 'particles', 'Particles in the world'],
  ['frozen', 'frozen',
    'Cloths, ropes and soft bodies frozen by level of detail: farther than 40 m from what every ' +
    "viewer looks at (this page's focus is its orbit target); their particles"],
];

export class Hud {
  constructor(dl, badge) {
    this.badge = badge;
    this.cells = {};
    for (const [key, label, title] of HUD_ROWS) {
      const dt = document.createElement('dt');
      const dd = document.createElement('dd');
      dt.textContent = label;
      dt.title = title;
      dd.textContent = '–';
      dl.append(dt, dd);
      this.cells[key] = dd;
    }
  }

  /** Sets some of the HUD's values (already formatted strings). */
  set(values) {
    for (const [key, text] of Object.entries(values)) {
      const cell = this.cells[key];
      if (cell && cell.textContent !== text) {
        cell.textContent = text;
        cell.title = text; // the whole of a value cut short (a long world name)
      }
    }
  }

  status(state, text) {
    this.badge.dataset.state = state;
    this.badge.textContent = text;
    this.badge.title = text; // in full, should the header be too narrow for it
  }
}

const LOG_MAX = 5;
const LOG_MS = 5000;

/** Shows a short message at the bottom left for a few seconds. */
export function logMessage(list, text, kind = 'error') {
  // The same message again (a burst of failing drags) refreshes instead of stacking.
  const last = list.lastElementChild;
  if (last && last.dataset.text === text && !last.classList.contains('fading')) {
    last.dataset.count = String(Number(last.dataset.count) + 1);
    last.textContent = `${text} (×${last.dataset.count})`;
    clearTimeout(Number(last.dataset.timer));
    last.dataset.timer = String(scheduleRemoval(last));
    return;
  }
  const li = document.createElement('li');
  li.className = kind;
  li.textContent = text;
  li.dataset.text = text;
  li.dataset.count = '1';
  li.dataset.timer = String(scheduleRemoval(li));
  list.append(li);
  while (list.children.length > LOG_MAX) list.firstElementChild.remove();
}

function scheduleRemoval(li) {
  return setTimeout(() => {
    li.classList.add('fading');
    setTimeout(() => li.remove(), 400);
  }, LOG_MS);
}

/**
 * Snapshots per second of world time. Counted over arrival times, a page
 * that stalls (software rendering, a busy tab) gets the snapshots of the
 * stall in one burst, and a one-second window then holds nearly two
 * seconds' worth (55/s on a 30 Hz subscription). Counted over their ticks
 * instead: the snapshots of the last `windowS` seconds of world time before
 * the newest one, n of them spanning s seconds of ticks, came at (n - 1) / s
 * per second, however they bunched on the way. No snapshot for `windowS`
 * seconds of wall time: 0.
 */
export class SnapshotRate {
  constructor(windowS = 2) {
    this.windowS = windowS;
    this.reset();
  }

  /** Forgets everything (a new subscription: ticks start elsewhere). */
  reset() {
    this.events = []; // [tick, delta]
    this.lastAt = 0;
  }

  /** A snapshot of `tick` (full, increasing), a delta or not, decoded at `now` (ms). */
  add(tick, delta, now) {
    this.events.push([tick, delta]);
    this.lastAt = now;
  }

  /** { count, deltas } per second at `now` (ms), for a world of tickHz. */
  rate(now, tickHz) {
    const n0 = this.events.length;
    if (n0 === 0 || !(tickHz > 0) || now - this.lastAt > this.windowS * 1000) return { count: 0, deltas: 0 };
    const last = this.events[n0 - 1][0];
    let drop = 0;
    while (drop < n0 && this.events[drop][0] <= last - this.windowS * tickHz) drop++;
    if (drop) this.events.splice(0, drop);
    const n = this.events.length;
    const span = (last - this.events[0][0]) / tickHz;
    if (n < 2 || span <= 0) return { count: 0, deltas: 0 }; // too few to tell yet
    let deltas = 0;
    for (const [, d] of this.events) if (d) deltas++;
    const count = (n - 1) / span;
    return { count, deltas: count * deltas / n };
  }
}

/** Events per second and their summed sizes over the last second. */
export class RateMeter {
  constructor(windowMs = 1000) {
    this.windowMs = windowMs;
    this.events = []; // [time, size]
  }

  add(now, size = 0) {
    this.events.push([now, size]);
  }

  /** { count, size } per second over the window ending at now. */
  rate(now) {
    const from = now - this.windowMs;
    let drop = 0;
    while (drop < this.events.length && this.events[drop][0] < from) drop++;
    if (drop) this.events.splice(0, drop);
    let size = 0;
    for (const [, s] of this.events) size += s;
    const k = 1000 / this.windowMs;
    return { count: this.events.length * k, size: size * k };
  }
}
