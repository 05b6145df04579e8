// Durable worlds (issue 11) with a real ragdolld process: SIGTERM saves and
// a restart brings the same worlds, entities and parameters back; kill -9 at
// random instants while commands stream in (autosaves among them) loses no
// acknowledged command, leaves no state file corrupt, and the restarted
// world is what an offline replay of its files gives; save_world answers
// when its file is durable.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { RAGDOLLD, Client, sleep, startServer } from '../lib/ragdolld.mjs';

function tempDir() {
  return fs.mkdtempSync(path.join(os.tmpdir(), 'rd-durable-'));
}

function copyDir(from) {
  const to = tempDir();
  for (const f of fs.readdirSync(from)) {
    if (!f.startsWith('.')) fs.copyFileSync(path.join(from, f), path.join(to, f));
  }
  return to;
}

// `ragdolld --replay FILE`: its summary line's tick and hash.
function replay(stateFile) {
  const r = spawnSync(RAGDOLLD, ['--replay', stateFile], { encoding: 'utf8' });
  assert.equal(r.status, 0, `replay of ${stateFile} failed: ${r.stderr}`);
  const m = /tick (\d+), hash ([0-9a-f]{16})/.exec(r.stderr);
  assert.ok(m, r.stderr);
  return { tick: Number(m[1]), hash: m[2] };
}

// The world_loaded lines of a server's log, by world.
function loaded(stderr) {
  const out = new Map();
  for (const m of stderr.matchAll(/event=world_loaded world=(\d+) .*? tick=(\d+) hash=([0-9a-f]{16})/g)) {
    out.set(Number(m[1]), { tick: Number(m[2]), hash: m[3] });
  }
  return out;
}

async function ok(c, cmd) {
  const r = await c.send(cmd);
  assert.equal(r.ok, true, JSON.stringify(r));
  return r;
}

test('SIGTERM saves every world; a restart brings back the same worlds, entities and parameters', async () => {
  const dir = tempDir();
  let s = await startServer(['--state-dir', dir]);
  let c = await Client.connect(s.url);
  const w = (await ok(c, { op: 'create_world', name: 'kept', tick_hz: 30, solver: 'xpbd' })).world;
  const ball = (await ok(c, { op: 'spawn_ball', world: w, position: [0, 2, 0] })).entity;
  const man = (await ok(c, { op: 'spawn_character', world: w, position: [2, 0, 0] })).entity;
  await ok(c, { op: 'set_params', world: w, gravity: [0, -3.5, 0], friction: 0.8 });
  const before = (await ok(c, { op: 'list_worlds' })).worlds;
  c.close();
  assert.equal(await s.stop(), 0);
  assert.match(s.stderr(), /event=worlds_saved .*2 worlds saved, 0 failed/);

  s = await startServer(['--state-dir', dir]);
  c = await Client.connect(s.url);
  const after = (await ok(c, { op: 'list_worlds' })).worlds;
  assert.deepEqual(after.map((x) => [x.world, x.name, x.tick_hz, x.entities, x.solver]),
    before.map((x) => [x.world, x.name, x.tick_hz, x.entities, x.solver]));
  const kept = after.find((x) => x.world === w);
  assert.ok(kept.tick >= before.find((x) => x.world === w).tick, 'the tick goes on from where it was');
  assert.equal((await ok(c, { op: 'describe', world: w, entity: ball })).kind, 'ball');
  assert.equal((await ok(c, { op: 'describe', world: w, entity: man })).kind, 'character');
  const sub = await ok(c, { op: 'subscribe', world: w, format: 'json', rate_hz: 1 });
  assert.deepEqual(sub.params.gravity, [0, -3.5, 0]);
  assert.equal(sub.params.friction, 0.8);
  // A new world never takes a saved world's id.
  const next = (await ok(c, { op: 'create_world', name: 'new' })).world;
  assert.ok(next > Math.max(...after.map((x) => x.world)));
  c.close();
  await s.stop();
  fs.rmSync(dir, { recursive: true });
});

test('save_world answers once the file is durable; without --state-dir it is bad_state', async () => {
  const dir = tempDir();
  let s = await startServer(['--state-dir', dir, '--autosave', '0']);
  let c = await Client.connect(s.url);
  const r = await ok(c, { op: 'save_world', world: 1 });
  assert.equal(r.world, 1);
  assert.ok(r.bytes > 1000);
  assert.equal(r.file, path.join(dir, 'world-1.state'));
  assert.equal(fs.statSync(r.file).size, r.bytes);
  const missing = await c.send({ op: 'save_world', world: 99 });
  assert.equal(missing.error.code, 'not_found');
  c.close();
  await s.stop();
  s = await startServer([]);
  c = await Client.connect(s.url);
  const none = await c.send({ op: 'save_world', world: 1 });
  assert.equal(none.error.code, 'bad_state');
  assert.match(none.error.message, /--state-dir/);
  c.close();
  await s.stop();
  fs.rmSync(dir, { recursive: true });
});

// Streams commands into world `w` until stopped: balls spawned and pushed.
// Resolves with every acknowledged spawn and when its reply came.
function stream(c, w) {
  const acked = [];
  let running = true;
  const done = (async () => {
    let i = 0;
    while (running) {
      try {
        const r = await c.send({ op: 'spawn_ball', world: w, position: [(i % 20) - 10, 3, Math.floor(i / 20) % 10], velocity: [0, -1, 0] }, 2000);
        if (r.ok) acked.push({ entity: r.entity, at: Date.now() });
        if (acked.length > 1) {
          await c.send({ op: 'apply_impulse', world: w, entity: acked[acked.length - 2].entity, impulse: [1, 2, 0] }, 2000);
        }
      } catch {
        break; // the server went
      }
      i++;
      await sleep(15);
    }
  })();
  return { acked, stop: async () => { running = false; await done; } };
}

test('kill -9 at random instants loses no acknowledged command, and the restart is the replay of its files', async () => {
  const dir = tempDir();
  const rounds = Number(process.env.RD_KILL_ROUNDS ?? 6);
  let seed = 12345;
  const random = () => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed / 2147483648; };
  let world = null;
  let lastCopy = null;
  let replayed = 0;
  const everAcked = [];
  for (let round = 0; round < rounds; round++) {
    // Autosave every second, so some kills land during a save.
    const s = await startServer(['--state-dir', dir, '--autosave', '1', '--max-solver-work', '100000000', '--max-total-solver-work', '1000000000']);
    const c = await Client.connect(s.url);
    if (round > 0) {
      // The restart: every world loaded (none refused), and each is what
      // an offline replay of the files it was loaded from gives.
      assert.doesNotMatch(s.stderr(), /state_refused|journal_refused/, s.stderr());
      const got = loaded(s.stderr());
      for (const m of s.stderr().matchAll(/replayed_commands=(\d+)/g)) replayed += Number(m[1]);
      assert.ok(got.has(world), s.stderr());
      for (const [id, live] of got) {
        const r = replay(path.join(lastCopy, `world-${id}.state`));
        assert.deepEqual(r, live, `world ${id}: restarted ${JSON.stringify(live)}, replayed ${JSON.stringify(r)}`);
      }
      // Every spawn acknowledged more than a second before the kill is there.
      for (const a of everAcked) {
        if (a.at > a.killedAt - 1000) continue;
        const d = await c.send({ op: 'describe', world, entity: a.entity });
        assert.equal(d.ok, true, `entity ${a.entity} acknowledged ${a.killedAt - a.at} ms before a kill is gone: ${JSON.stringify(d)}`);
      }
    } else {
      world = (await ok(c, { op: 'create_world', name: 'crashy', limits: { entities: 4096, bodies: 16384 } })).world;
    }
    const st = stream(c, world);
    await sleep(500 + random() * 2500);
    s.proc.kill('SIGKILL');
    const killedAt = Date.now();
    await once(s.proc, 'exit');
    await st.stop();
    c.close();
    for (const a of st.acked) everAcked.push({ ...a, killedAt });
    // What the next start will load, kept for the replay.
    lastCopy = copyDir(dir);
  }
  assert.ok(everAcked.length > 20 * rounds, `only ${everAcked.length} commands went through`);
  assert.ok(replayed > 0, 'no restart replayed a journal: the test did not test it');
  fs.rmSync(dir, { recursive: true });
});

test('a command that blows a world up is rolled back: the sender is told, every subscriber sees finite states', async () => {
  const s = await startServer(['--no-demo']);
  const c = await Client.connect(s.url);
  try {
    await blowUp(s, c);
  } finally {
    c.close();
    await s.stop();
  }
});

async function blowUp(s, c) {
  const w = (await ok(c, { op: 'create_world', name: 'boom' })).world;
  const other = (await ok(c, { op: 'create_world', name: 'calm' })).world;
  await ok(c, { op: 'subscribe', world: w, format: 'json', rate_hz: 60 });
  const ball = (await ok(c, { op: 'spawn_ball', world: w, position: [0, 1, 0], mass: 0.001, radius: 0.1 })).entity;
  await ok(c, { op: 'spawn_character', world: other, position: [0, 0, 0] });
  await sleep(1200); // a state kept to go back to
  // Valid by the protocol's bounds: 10⁴ N·s on a 1 g ball, 10⁷ m/s.
  const r = await ok(c, { op: 'apply_impulse', world: w, entity: ball, impulse: [10000, 0, 0] });
  const rolled = await c.next((m) => m.ev === 'rolled_back', 5000);
  assert.equal(rolled.world, w);
  assert.equal(rolled.entity, ball);
  assert.equal(rolled.dropped, 'apply_impulse');
  assert.ok(rolled.from_tick < r.tick);
  const dropped = await c.next((m) => m.ev === 'command_dropped', 5000);
  assert.equal(dropped.re, r.re); // the id the command was sent with
  assert.equal(dropped.error.code, 'bad_state');
  // The ball is still there, where it was, in every snapshot from now on.
  for (let i = 0; i < 10; i++) {
    const snap = await c.next((m) => m.ev === 'snapshot' && m.world === w && m.tick > rolled.tick, 5000);
    const e = snap.entities.find((x) => x.entity === ball);
    assert.ok(e, 'the ball is gone');
    const flat = JSON.stringify(snap);
    assert.doesNotMatch(flat, /null|NaN|Infinity/);
    assert.ok(Math.abs(e.p[0]) < 100, `the ball is at ${e.p}`);
    rolled.tick = snap.tick;
  }
  // The other world did not notice.
  const worlds = (await ok(c, { op: 'list_worlds' })).worlds;
  assert.equal(worlds.find((x) => x.world === other).entities, 1);
  assert.match(s.stderr(), /event=rolled_back world=\d+ .*dropped=apply_impulse/);
}

// A disk that fills up, made with a file-size limit (prlimit --fsize, as
// `ulimit -f`: a write past it fails with EFBIG as a full disk fails with
// ENOSPC). The demo's state file (0.2 MB) fits under 400 kB; its journal
// fills after about 300 set_params, sent here one every 2 ms without
// waiting for replies. From then on commands that would change the world are refused
// `unavailable` with the reason, /metrics shows the journal down, and a
// describe is still answered. The commands of the boundary whose write
// failed had applied: their replies wait until they are durable. So (a) a
// kill -9 right after the first refusal loses nothing acknowledged: the
// restarted world's gravity is that of the last acknowledged command or a
// later one; (b) the server comes back on its own by writing a state file
// (the journal then starts afresh, small), and a kill -9 after has the
// last acknowledged gravity. And a create_world whose first state file
// cannot be written is refused, no world made.
async function fillTheDisk(c) {
  let refused = null;
  let acked = 0;
  const replies = [];
  // A command every 2 ms, whatever the replies (some wait for the journal).
  for (let n = 1; n <= 4000 && refused === null; n++) {
    replies.push(c.send({ op: 'set_params', world: 1, gravity: [0, -1 - n / 1000, 0] }, 20000).then((r) => {
      if (r.ok) acked = Math.max(acked, n);
      else if (refused === null) refused = r;
    }, () => {})); // no reply (the server was killed): not acknowledged
    await sleep(2);
  }
  while (refused === null && replies.length > 0) await sleep(10);
  assert.ok(refused, 'the journal never filled');
  assert.ok(acked > 200, `only ${acked} commands fitted in 400 kB`);
  assert.equal(refused.error.code, 'unavailable', JSON.stringify(refused));
  assert.match(refused.error.message, /File too large/);
  // Returned at the first refusal: replies may still be waiting.
  return { acked, rest: Promise.all(replies) };
}

// The gravity's command number n (gravity y = -1 - n / 1000) after a restart.
async function gravityAfterRestart(dir) {
  const s = await startServer(['--state-dir', dir]);
  const c = await Client.connect(s.url);
  try {
    const sub = await ok(c, { op: 'subscribe', world: 1, format: 'json', rate_hz: 1 });
    return sub.params.gravity;
  } finally {
    c.close();
    await s.stop();
  }
}

test('a full disk: commands are refused as unavailable until the world is durable again, nothing acknowledged is lost', async () => {
  const limited = { wrap: ['prlimit', '--fsize=400000', '--'] };
  const args = (dir) => ['--state-dir', dir, '--autosave', '0', '--cmd-rate', '100000', '--cmd-burst', '100000'];
  // (a) kill -9 at the first refusal.
  let dir = tempDir();
  let s = await startServer(args(dir), limited);
  let c = await Client.connect(s.url);
  try {
    const { acked } = await fillTheDisk(c); // and at once:
    s.proc.kill('SIGKILL');
    await once(s.proc, 'exit');
    const g = await gravityAfterRestart(dir);
    const n = Math.round((-g[1] - 1) * 1000);
    assert.ok(n >= acked, `command ${acked} was acknowledged, the restarted world has only up to ${n}`);
  } finally {
    c.close();
    await s.stop();
  }
  fs.rmSync(dir, { recursive: true });

  // (b) it comes back on its own.
  dir = tempDir();
  s = await startServer(args(dir), limited);
  c = await Client.connect(s.url);
  try {
    const ball = (await ok(c, { op: 'spawn_ball', world: 1, position: [0, 2, 0] })).entity;
    const { rest } = await fillTheDisk(c);
    assert.match(s.stderr(), /level=error event=journal_failed world=1 /);
    const metrics = await (await fetch(`${s.http}/metrics`)).text();
    assert.match(metrics, /\nragdolld_journals_down 1\n/);
    assert.equal((await ok(c, { op: 'describe', world: 1, entity: ball })).kind, 'ball');
    await rest; // the held replies come once a state file holds their commands
    let back = null;
    for (let k = 0; k < 100 && back === null; k++) {
      await sleep(200);
      const r = await c.send({ op: 'set_params', world: 1, gravity: [0, -7.75, 0] });
      if (r.ok) back = r;
      else assert.equal(r.error.code, 'unavailable');
    }
    assert.ok(back, 'the world did not become durable again in 20 s');
    assert.match(s.stderr(), /event=journal_recovered world=1 /);
    assert.ok(fs.statSync(path.join(dir, 'world-1.journal')).size < 100000, 'the journal did not start afresh');
    await sleep(1500); // fsync'd (everysec)
    s.proc.kill('SIGKILL');
    await once(s.proc, 'exit');
    assert.deepEqual(await gravityAfterRestart(dir), [0, -7.75, 0]);
  } finally {
    c.close();
    await s.stop();
  }
  fs.rmSync(dir, { recursive: true });

  // An empty world's state file is about 28 kB: under a 20 kB limit
  // create_world cannot make it durable, and makes nothing.
  dir = tempDir();
  s = await startServer(['--state-dir', dir, '--no-demo'], { wrap: ['prlimit', '--fsize=20000', '--'] });
  c = await Client.connect(s.url);
  try {
    const made = await c.send({ op: 'create_world', name: 'nowhere' });
    assert.equal(made.error?.code, 'unavailable', JSON.stringify(made));
    assert.match(made.error.message, /state file could not be written: .*File too large/);
    assert.deepEqual((await ok(c, { op: 'list_worlds' })).worlds, []);
    assert.deepEqual(fs.readdirSync(dir).filter((f) => !f.startsWith('.')), []);
  } finally {
    c.close();
    await s.stop();
  }
  fs.rmSync(dir, { recursive: true });
});
