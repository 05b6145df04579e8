// ragdolld as an Agones game server (server/app/agones.c, deploy/README.md),
// against a stand-in for the SDK sidecar (agones_stub.mjs: the REST paths
// and JSON shapes of Agones' documentation). What a fleet depends on:
// Ready once the server listens; Health at its interval and only while the
// worlds tick on time; the allocation's world made from its annotations
// and its id annotated back; connected sessions on the "players" Counter;
// Shutdown after the empty timeout and on SIGTERM; and a sidecar that is
// missing, hangs or fails never slows the ticks.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import { Client, sleep, startServer } from '../lib/ragdolld.mjs';
import { startStub } from './agones_stub.mjs';

async function freePort() {
  const s = net.createServer();
  s.listen(0, '127.0.0.1');
  await new Promise((r) => s.once('listening', r));
  const port = s.address().port;
  await new Promise((r) => s.close(r));
  return port;
}

function agones(stub, args = []) {
  return startServer(['--agones-health', '0.2', ...args], { env: { AGONES_SDK_HTTP_PORT: String(stub.port) } });
}

async function ok(c, cmd) {
  const r = await c.send(cmd);
  assert.equal(r.ok, true, JSON.stringify(r));
  return r;
}

// Ticks per second of world `w`, measured over `ms` from list_worlds.
async function tickRate(c, w, ms = 2000) {
  const tickOf = async () => (await ok(c, { op: 'list_worlds' })).worlds.find((x) => x.world === w).tick;
  const t0 = await tickOf();
  const start = Date.now();
  await sleep(ms);
  const t1 = await tickOf();
  return (t1 - t0) / ((Date.now() - start) / 1000);
}

test('Ready once the server listens, Health at its interval, the players counter, Shutdown on SIGTERM', async () => {
  const stub = await startStub();
  const port = await freePort();
  // When Ready arrives, the server must already accept connections.
  let acceptedAtReady = null;
  const probe = setInterval(() => {
    if (acceptedAtReady === null && stub.of('/ready').length > 0) {
      acceptedAtReady = false;
      const sock = net.connect(port, '127.0.0.1', () => { acceptedAtReady = true; sock.destroy(); });
      sock.on('error', () => {});
    }
  }, 1);
  const s = await agones(stub, ['--port', String(port)]);
  let c = null;
  try {
    await stub.until((calls) => calls.some((x) => x.path === '/ready'), 10000, 'Ready');
    await stub.until(() => acceptedAtReady !== false, 3000, 'a connection after Ready');
    assert.equal(acceptedAtReady, true, 'Ready came before the server listened');
    assert.equal(stub.of('/ready')[0].body, '{}');
    // The stub records the call before the server has read its answer.
    const logged = Date.now() + 5000;
    while (!/event=agones_ready /.test(s.stderr()) && Date.now() < logged) await sleep(25);
    assert.match(s.stderr(), /event=agones_ready /);
    // Health every 0.2 s (the flag): about 10 in 2 s; wide margins.
    await stub.until(() => stub.of('/health').length > 0, 5000, 'a first Health');
    const h0 = stub.of('/health').length;
    await sleep(2000);
    const pings = stub.of('/health').length - h0;
    assert.ok(pings >= 4 && pings <= 14, `${pings} Health pings in 2 s at 0.2 s`);
    assert.ok(stub.of('/health').every((x) => x.body === '{}'));
    // Sessions on the Counter, both ways.
    c = await Client.connect(s.url);
    await stub.until(() => stub.gs.status.counters.players.count === '1', 5000, 'players = 1');
    c.close();
    c = null;
    await stub.until(() => stub.gs.status.counters.players.count === '0', 5000, 'players = 0');
    const patches = stub.of('/v1beta1/counters/players', 'PATCH');
    assert.ok(patches.length >= 2);
    assert.deepEqual(JSON.parse(patches.at(-1).body), { count: '0' });
    assert.equal(await s.stop(), 0);
    assert.equal(stub.of('/shutdown').length, 1, 'no Shutdown on SIGTERM');
    assert.match(s.stderr(), /event=agones_shutdown_sent/);
  } finally {
    clearInterval(probe);
    c?.close();
    await s.stop();
    await stub.close();
  }
});

test('an allocation makes the match world from its annotations and template; Shutdown once nobody is connected', async () => {
  const stub = await startStub();
  const s = await agones(stub, ['--agones-empty-timeout', '1']);
  const c = await Client.connect(s.url);
  try {
    await stub.until(() => stub.of('/watch/gameserver').length > 0, 10000, 'a watch');
    stub.allocate({ labels: { 'ragdolld.dev/tick-hz': '30' }, annotations: { 'ragdolld.dev/world-name': 'match-42', 'ragdolld.dev/template': 'arena' } });
    await stub.until(() => 'agones.dev/sdk-world' in stub.gs.object_meta.annotations, 5000, 'the world annotated');
    const id = Number(stub.gs.object_meta.annotations['agones.dev/sdk-world']);
    const world = (await ok(c, { op: 'list_worlds' })).worlds.find((x) => x.world === id);
    assert.ok(world, `no world ${id}`);
    assert.equal(world.name, 'match-42');
    assert.equal(world.tick_hz, 30);
    // Made from templates/arena.json: one entity per spawn in the file.
    const arena = JSON.parse(fs.readFileSync('templates/arena.json', 'utf8'));
    assert.equal(world.entities, arena.commands.filter((x) => x.op.startsWith('spawn_')).length);
    assert.match(s.stderr(), /event=agones_allocated world=\d+ name=match-42 tick_hz=30/);
    // A client is connected: no Shutdown, however long the timeout.
    await sleep(1800);
    assert.equal(stub.of('/shutdown').length, 0, 'Shutdown while a client was connected');
    c.close();
    await stub.until(() => stub.of('/shutdown').length === 1, 6000, 'Shutdown after 1 s empty');
    assert.match(s.stderr(), /event=agones_shutdown reason="no session for 1 s after the allocation"/);
  } finally {
    c.close();
    await s.stop();
    await stub.close();
  }
});

test("the allocation's player tokens let its players in, to the match world only", async () => {
  const stub = await startStub();
  const admin = 'admin-token-0123456789abcdef';
  const [p1, p2] = ['player-one-0123456789abcdef', 'player-two-0123456789abcdef'];
  const dir = fs.mkdtempSync('/tmp/ragdolld-agones-');
  const authFile = `${dir}/tokens`;
  fs.writeFileSync(authFile, `${admin} admin\n`);
  const s = await agones(stub, ['--auth-file', authFile]);
  const boss = await Client.connect(s.url, ['ragdolld.v1', `ragdolld.auth.${admin}`]);
  const players = [];
  try {
    const demo = boss.welcome.worlds[0].world;
    await stub.until(() => stub.of('/watch/gameserver').length > 0, 10000, 'a watch');
    // Not a token of this server before the allocation.
    await assert.rejects(Client.connect(s.url, ['ragdolld.v1', `ragdolld.auth.${p1}`]), /401/);
    stub.allocate({ annotations: { 'ragdolld.dev/match-id': 'm-7', 'ragdolld.dev/player-tokens': `${p1}, ${p2}` } });
    await stub.until(() => 'agones.dev/sdk-world' in stub.gs.object_meta.annotations, 5000, 'the world annotated');
    const world = Number(stub.gs.object_meta.annotations['agones.dev/sdk-world']);
    // The match id names the world when no world-name is given.
    assert.equal((await ok(boss, { op: 'list_worlds' })).worlds.find((x) => x.world === world).name, 'm-7');
    assert.match(s.stderr(), /event=agones_allocated world=\d+ name=m-7 match=m-7 tick_hz=60 player_tokens=2/);
    for (const t of [p1, p2]) players.push(await Client.connect(s.url, ['ragdolld.v1', `ragdolld.auth.${t}`]));
    // Each plays in the match world (player role) ...
    for (const c of players) await ok(c, { op: 'spawn_ball', world, position: [0, 3, 0] });
    // ... and nowhere else, and is no admin.
    const elsewhere = await players[0].send({ op: 'spawn_ball', world: demo, position: [0, 3, 0] });
    assert.equal(elsewhere.error?.code, 'forbidden', JSON.stringify(elsewhere));
    assert.match(elsewhere.error.message, /not for world "demo"/);
    const create = await players[1].send({ op: 'create_world', name: 'mine' });
    assert.equal(create.error?.code, 'forbidden', JSON.stringify(create));
    // The file's tokens still work; unknown ones do not.
    await ok(boss, { op: 'spawn_ball', world, position: [1, 3, 0] });
    await assert.rejects(Client.connect(s.url, ['ragdolld.v1', 'ragdolld.auth.player-three-0123456789ab']), /401/);
    for (const t of [admin, p1, p2]) assert.ok(!s.stderr().includes(t), 'a token in the log');
  } finally {
    for (const c of players) c.close();
    boss.close();
    await s.stop();
    await stub.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('bad player tokens in an allocation are refused without echoing them, and no world is made', async () => {
  const admin = 'admin-token-0123456789abcdef';
  const dir = fs.mkdtempSync('/tmp/ragdolld-agones-');
  const authFile = `${dir}/tokens`;
  fs.writeFileSync(authFile, `${admin} admin\n`);
  const tokens = (list) => ({ 'ragdolld.dev/player-tokens': list });
  const cases = [
    [tokens('short-token'), /token 1 is not 16 to 128 characters/],
    [tokens('player-one-0123456789abcdef,player-one-0123456789abcdef'), /token 2 is given twice/],
    [tokens(`player-one-0123456789abcdef,${admin}`), /token 2 is already this server's/],
    [tokens(Array.from({ length: 129 }, (_, i) => `player-${String(i).padStart(3, '0')}-0123456789ab`).join(',')), /more than 128 tokens/],
    // Tokens are scoped by world name: the demo world's name is taken.
    [{ ...tokens('player-one-0123456789abcdef'), 'ragdolld.dev/world-name': 'demo' }, /world 1 is named \\"demo\\" too/],
  ];
  try {
    for (const [annotations, says] of cases) {
      const stub = await startStub();
      const s = await agones(stub, ['--auth-file', authFile]);
      const boss = await Client.connect(s.url, ['ragdolld.v1', `ragdolld.auth.${admin}`]);
      try {
        await stub.until(() => stub.of('/watch/gameserver').length > 0, 10000, 'a watch');
        const before = (await ok(boss, { op: 'list_worlds' })).worlds.length;
        stub.allocate({ annotations });
        const end = Date.now() + 5000;
        while (!/agones_allocation_refused/.test(s.stderr()) && Date.now() < end) await sleep(50);
        const line = s.stderr().split('\n').find((x) => x.includes('agones_allocation_refused')) ?? '';
        assert.match(line, /reason="ragdolld.dev\/player-tokens: /);
        assert.match(line, says);
        assert.ok(!line.includes('0123456789'), `a token echoed: ${line}`);
        assert.equal((await ok(boss, { op: 'list_worlds' })).worlds.length, before);
        // The server's own tokens are as they were.
        await assert.rejects(Client.connect(s.url, ['ragdolld.v1', 'ragdolld.auth.player-one-0123456789abcdef']), /401/);
      } finally {
        boss.close();
        await s.stop();
        await stub.close();
      }
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('players: sessions with a token count, anonymous viewers do not; never above the capacity; refused updates back off', async () => {
  const admin = 'admin-token-0123456789abcdef';
  const player = 'player-token-0123456789abcdef';
  const dir = fs.mkdtempSync('/tmp/ragdolld-agones-');
  const authFile = `${dir}/tokens`;
  fs.writeFileSync(authFile, `${admin} admin\n${player} player\n`);
  const stub = await startStub({ counters: { players: { count: '0', capacity: '1' } } });
  const s = await agones(stub, ['--auth-file', authFile, '--anonymous', 'viewer']);
  const open = [];
  try {
    await stub.until(() => stub.of('/watch/gameserver').length > 0, 10000, 'a watch');
    // Two anonymous viewers: still no player.
    for (let i = 0; i < 2; i++) open.push(await Client.connect(s.url));
    await sleep(800);
    assert.equal(stub.gs.status.counters.players.count, '0');
    assert.ok(stub.of('/v1beta1/counters/players', 'PATCH').every((x) => JSON.parse(x.body).count === '0'));
    // A player: 1. A second: still 1, the capacity, and said once.
    open.push(await Client.connect(s.url, ['ragdolld.v1', `ragdolld.auth.${player}`]));
    await stub.until(() => stub.gs.status.counters.players.count === '1', 5000, 'players = 1');
    open.push(await Client.connect(s.url, ['ragdolld.v1', `ragdolld.auth.${admin}`]));
    const end = Date.now() + 5000;
    while (!/agones_players_over_capacity/.test(s.stderr()) && Date.now() < end) await sleep(50);
    assert.match(s.stderr(), /level=warn event=agones_players_over_capacity reason="2 players, the Counter holds 1"/);
    await sleep(500);
    // A refused update does not lift the cap: after the sidecar refuses for
    // a while, the count it takes is still the capacity.
    stub.failCounters(true);
    open.pop().close();
    open.pop().close(); // no player: 0, refused
    await sleep(800);
    open.push(await Client.connect(s.url, ['ragdolld.v1', `ragdolld.auth.${player}`]));
    open.push(await Client.connect(s.url, ['ragdolld.v1', `ragdolld.auth.${admin}`]));
    await sleep(400);
    stub.failCounters(false);
    await stub.until(() => stub.gs.status.counters.players.count === '1', 8000, 'players = 1 again');
    assert.ok(stub.of('/v1beta1/counters/players', 'PATCH').every((x) => Number(JSON.parse(x.body).count) <= 1),
      'a count above the capacity was sent');
  } finally {
    for (const c of open) c.close();
    await s.stop();
    await stub.close();
  }
  // A sidecar that refuses every update: retried with backoff (0.25, 0.5,
  // 1, 2 s...), not ten times a second, and logged.
  const refusing = await startStub({ failCounters: true });
  const t = await agones(refusing);
  const c = await Client.connect(t.url);
  try {
    await refusing.until(() => refusing.of('/v1beta1/counters/players', 'PATCH').length > 0, 10000, 'a PATCH');
    const first = Date.now();
    await sleep(3000);
    const n = refusing.of('/v1beta1/counters/players', 'PATCH').filter((x) => x.at >= first - 50).length;
    assert.ok(n <= 6, `${n} refused PATCHes in 3 s`);
    assert.match(t.stderr(), /event=agones_call_failed call=players failures=1 reason="HTTP 500: .*CountsAndLists not enabled/);
  } finally {
    c.close();
    await t.stop();
    await refusing.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('an allocation that asks for a bad world is refused with the key named, and nothing is made', async () => {
  const stub = await startStub();
  const s = await agones(stub);
  const c = await Client.connect(s.url);
  try {
    await stub.until(() => stub.of('/watch/gameserver').length > 0, 10000, 'a watch');
    const before = (await ok(c, { op: 'list_worlds' })).worlds.length;
    stub.allocate({ annotations: { 'ragdolld.dev/tick-hz': 'fast' } });
    const end = Date.now() + 5000;
    while (!/agones_allocation_refused/.test(s.stderr()) && Date.now() < end) await sleep(50);
    assert.match(s.stderr(), /level=error event=agones_allocation_refused reason="ragdolld.dev\/tick-hz must be a whole number from 1 to 240, not \\"fast\\""/);
    assert.equal((await ok(c, { op: 'list_worlds' })).worlds.length, before);
    // The matchmaker waiting for sdk-world learns why it will not come.
    await stub.until(() => 'agones.dev/sdk-world-error' in stub.gs.object_meta.annotations, 5000, 'the error annotated');
    assert.equal(stub.gs.object_meta.annotations['agones.dev/sdk-world-error'],
      'ragdolld.dev/tick-hz must be a whole number from 1 to 240, not "fast"');
    assert.ok(!('agones.dev/sdk-world' in stub.gs.object_meta.annotations));
  } finally {
    c.close();
    await s.stop();
    await stub.close();
  }
});

test('Health stops while a world is far behind its clock and resumes when it catches up', async () => {
  const stub = await startStub();
  const s = await agones(stub, ['--workers', '1', '--max-solver-work', '1000000000', '--max-total-solver-work', '10000000000']);
  const c = await Client.connect(s.url);
  try {
    await stub.until(() => stub.of('/health').length >= 3, 10000, 'Health before the load');
    // A 64×64 cloth at 100 iterations and 8 substeps: about 2 × 10⁷
    // projections a tick, far more than 60 ticks a second can take.
    const w = (await ok(c, { op: 'create_world', name: 'heavy' })).world;
    await ok(c, { op: 'set_params', world: w, iterations: 100, substeps: 8 });
    await ok(c, { op: 'spawn_cloth', world: w, origin: [0, 3, 0], cols: 64, rows: 64, spacing: 0.05 });
    const end = Date.now() + 10000;
    while (!/event=agones_health_withheld/.test(s.stderr()) && Date.now() < end) await sleep(50);
    assert.match(s.stderr(), /event=agones_health_withheld reason="world \d+ (stepped \d+ ticks in|has been in one step)/);
    const h0 = stub.of('/health').length;
    await sleep(1500);
    const during = stub.of('/health').length - h0;
    assert.ok(during <= 1, `${during} Health pings in 1.5 s while a world was far behind`);
    await ok(c, { op: 'destroy_world', world: w });
    await stub.until(() => stub.of('/health').length >= h0 + during + 3, 15000, 'Health again after the load');
    assert.match(s.stderr(), /event=agones_health_resumed/);
  } finally {
    c.close();
    await s.stop();
    await stub.close();
  }
});

test('a sidecar that hangs, fails or is missing never slows the ticks and is logged', async () => {
  // Baseline: the demo world's tick rate with a sidecar that answers.
  const good = await startStub();
  let s = await agones(good);
  let c = await Client.connect(s.url);
  let base;
  try {
    await good.until(() => good.of('/health').length >= 2, 10000, 'Health');
    base = await tickRate(c, 1);
  } finally {
    c.close();
    await s.stop();
    await good.close();
  }
  for (const mode of ['hang', 'error', 'missing']) {
    const stub = mode === 'missing' ? { port: await freePort(), close: async () => {} } : await startStub({ mode });
    s = await agones(stub);
    c = await Client.connect(s.url);
    try {
      const rate = await tickRate(c, 1);
      assert.ok(rate >= 0.6 * base, `${mode}: ${rate.toFixed(1)} ticks/s against ${base.toFixed(1)} with a sidecar that answers`);
      const end = Date.now() + 8000;
      while (!/event=agones_call_failed call=ready/.test(s.stderr()) && Date.now() < end) await sleep(50);
      assert.match(s.stderr(), /event=agones_call_failed call=ready failures=1 reason=/, `${mode}: ${s.stderr()}`);
      c.close();
      const t0 = Date.now();
      assert.equal(await s.stop(), 0);
      assert.ok(Date.now() - t0 < 8000, `${mode}: the stop took ${Date.now() - t0} ms`);
    } finally {
      c.close();
      await s.stop();
      await stub.close();
    }
  }
});
