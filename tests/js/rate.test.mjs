// The HUD's snapshot rate (clients/web/ui.js SnapshotRate): snapshots per
// second of world time, from their ticks. The expected figures are the
// subscriptions' own rates (30 Hz of a 60 Hz world is every second tick),
// whatever the arrival times: steady, or bunched after the page stalled,
// where counting arrivals over one second of wall time (RateMeter) says 55.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { RateMeter, SnapshotRate } from '../../clients/web/ui.js';

const TICK_HZ = 60;
const near = (a, b, eps, what) => assert.ok(Math.abs(a - b) <= eps, `${what}: ${a}, expected ${b} ± ${eps}`);

// Feeds snapshots every `step` ticks from tick t0 for `seconds`, arriving as
// arrival(tick) says (ms); returns the last arrival time.
function feed(meters, { t0 = 1000, step = 2, seconds, arrival, delta = () => true }) {
  let at = 0;
  for (let tick = t0; tick < t0 + seconds * TICK_HZ; tick += step) {
    at = arrival(tick);
    meters.snap?.add(tick, delta(tick), at);
    meters.arrivals?.add(at);
  }
  return at;
}

test('a steady 30 Hz subscription reads 30, between snapshots too', () => {
  const snap = new SnapshotRate();
  const at = (tick) => (tick - 1000) / TICK_HZ * 1000;
  const last = feed({ snap }, { seconds: 5, arrival: at });
  for (const dt of [0, 10, 20, 33]) near(snap.rate(last + dt, TICK_HZ).count, 30, 1e-9, `${dt} ms after a snapshot`);
  assert.equal(snap.rate(last, TICK_HZ).deltas, 30);
});

test('snapshots bunched by a stalled page still read 30', () => {
  const snap = new SnapshotRate();
  const arrivals = new RateMeter();
  // 3 s steady, then the page stalls for 1.8 s: the snapshots of the stall
  // arrive together when it wakes up, where the HUD looks.
  const steady = (tick) => (tick - 1000) / TICK_HZ * 1000;
  const stallFrom = 3000;
  const wake = stallFrom + 1800;
  const at = (tick) => {
    const t = steady(tick);
    return t >= stallFrom && t < wake ? wake : t;
  };
  feed({ snap, arrivals }, { seconds: 4.8, arrival: at });
  const now = wake + 1;
  near(snap.rate(now, TICK_HZ).count, 30, 1e-9, 'over ticks');
  // What counting arrivals in the last second of wall time makes of it.
  const burst = arrivals.rate(now).count;
  assert.ok(burst > 50, `arrivals in the last second: ${burst}/s`);
});

test('the rate is 0 once snapshots stop, and falls when some are missing', () => {
  const snap = new SnapshotRate();
  const last = feed({ snap }, { seconds: 3, arrival: (tick) => (tick - 1000) / TICK_HZ * 1000 });
  near(snap.rate(last + 1900, TICK_HZ).count, 30, 1e-9, 'within the window');
  assert.deepEqual(snap.rate(last + 2100, TICK_HZ), { count: 0, deltas: 0 });
  // A server that can only send every fourth tick to this client: 15/s.
  const slow = new SnapshotRate();
  const end = feed({ snap: slow }, { step: 4, seconds: 3, arrival: (tick) => (tick - 1000) / TICK_HZ * 1000 });
  near(slow.rate(end, TICK_HZ).count, 15, 1e-9, 'every fourth tick');
});

test('deltas are counted as their share, and a 1 Hz subscription reads 1', () => {
  const snap = new SnapshotRate();
  // Every third snapshot full (tick a multiple of 6).
  const last = feed({ snap }, {
    t0: 6000, seconds: 3, arrival: (tick) => (tick - 6000) / TICK_HZ * 1000, delta: (tick) => tick % 6 !== 0,
  });
  const r = snap.rate(last, TICK_HZ);
  near(r.count, 30, 1e-9, 'count');
  near(r.deltas, 20, 0.6, 'deltas');
  const once = new SnapshotRate();
  const end = feed({ snap: once }, { step: 60, seconds: 5, arrival: (tick) => (tick - 1000) / TICK_HZ * 1000 });
  near(once.rate(end + 500, TICK_HZ).count, 1, 1e-9, '1 Hz');
  // A fresh meter knows nothing yet: 0, not a guess.
  assert.deepEqual(new SnapshotRate().rate(0, TICK_HZ), { count: 0, deltas: 0 });
});
