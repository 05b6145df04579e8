// Hostile clients against a real ragdolld (issue 8): floods, endless
// fragments, tokens and roles, Origin, protected mode, per-address caps.
//
// Timing checks have wide margins (CI machines are small and the suite also
// runs the server under AddressSanitizer); the flooder runs in a process of
// its own so that its work does not delay this process's measurements.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, writeFileSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import net from 'node:net';
import http from 'node:http';
import WebSocket from 'ws';
import { Client, startServer, sleep, RAGDOLLD, WEB_ROOT } from '../lib/ragdolld.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const servers = [];
after(async () => {
  for (const s of servers) assert.equal(await s.stop(), 0, 'ragdolld exits cleanly on SIGTERM');
});
async function server(args = []) {
  const s = await startServer(args);
  servers.push(s);
  return s;
}

const tokens = {
  admin: 'admin-0123456789abcdef',
  player: 'player-0123456789abcdef',
  player2: 'player2-0123456789abcdef',
  viewer: 'viewer-0123456789abcdef',
  demoOnly: 'demo-only-0123456789abcdef',
};
const dir = mkdtempSync(join(tmpdir(), 'rd-hostile-'));
const authFile = join(dir, 'tokens');
writeFileSync(authFile, [
  '# token role [world ...]',
  `${tokens.admin} admin`,
  `${tokens.player} player`,
  `${tokens.player2} player`,
  `${tokens.viewer} viewer`,
  `${tokens.demoOnly} player demo`,
  '',
].join('\n'));

// RSS of a process in KiB (Linux).
const rssKiB = (pid) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))[1]);

// The answer to a WebSocket upgrade: { status } or { open: true }.
function upgrade(url, { protocols = ['ragdolld.v1'], headers = {}, localAddress } = {}) {
  return new Promise((resolve) => {
    const ws = new WebSocket(url, protocols, { headers, localAddress });
    ws.on('open', () => resolve({ open: true, ws }));
    ws.on('unexpected-response', (req, res) => {
      let body = '';
      res.on('data', (d) => { body += d; });
      res.on('end', () => resolve({ status: res.statusCode, body, headers: res.headers }));
    });
    ws.on('error', (e) => resolve({ error: e.message }));
  });
}

async function connect(url, token, opts = {}) {
  const protocols = ['ragdolld.v1', ...(token ? [`ragdolld.auth.${token}`] : [])];
  return Client.connect(url, protocols, opts);
}

// ---------------------------------------------------------------------------
// Isolation
// ---------------------------------------------------------------------------

// Runs flood_client.mjs and resolves with its report.
async function flood(url, n, op, world, entity) {
  const args = [world, entity].filter((x) => x !== undefined).map(String);
  const child = spawn(process.execPath, [join(here, 'flood_client.mjs'), url, String(n), op, ...args],
    { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.on('data', (d) => { out += d; });
  const [code] = await once(child, 'exit');
  assert.equal(code, 0, 'the flooder ran');
  return JSON.parse(out);
}

for (const op of ['list_worlds', 'describe']) {
  test(`a client flooding ${op} stalls no world and is rate limited, not dropped`, async () => {
    const s = await server();
    const watcher = await Client.connect(s.url);
    const world = watcher.welcome.worlds[0].world;
    assert.equal((await watcher.send({ op: 'subscribe', world, rate_hz: 30 })).ok, true);
    const cloth = (await watcher.next((m) => m.ev === 'snapshot')).entities.find((e) => e.kind === 'cloth');
    const before = (await watcher.next((m) => m.ev === 'snapshot')).metrics.overruns;
    const start = watcher.snapshots().length;
    // describe of the demo's cloth: the largest reply the demo has.
    const report = op === 'describe' ? await flood(s.url, 100000, op, world, cloth.entity)
      : await flood(s.url, 100000, op);
    const snaps = watcher.snapshots().slice(start);
    // Every command got its one reply; most were refused for the rate, the
    // connection stayed.
    assert.equal(report.replies, 100000, JSON.stringify(report));
    assert.equal(report.closed, null, 'the flooder stays connected');
    assert.ok(report.codes.rate_limited > 50000, JSON.stringify(report.codes));
    // Meanwhile the world kept its 60 Hz and the watcher its 30 Hz.
    assert.ok(snaps.length >= 20, `${snaps.length} snapshots during the flood`);
    const first = snaps[0];
    const last = snaps[snaps.length - 1];
    const seconds = (last.receivedAt - first.receivedAt) / 1000;
    const tickRate = (last.tick - first.tick) / seconds;
    let gap = 0;
    for (let i = 1; i < snaps.length; i++) gap = Math.max(gap, snaps[i].receivedAt - snaps[i - 1].receivedAt);
    const overruns = last.metrics.overruns - before;
    console.log(`# ${op} flood: ${JSON.stringify(report.codes)} in ${seconds.toFixed(2)} s; ` +
      `${tickRate.toFixed(1)} ticks/s, largest gap ${gap} ms, ${overruns} overruns`);
    assert.ok(tickRate >= 55, `${tickRate.toFixed(1)} ticks/s during the flood`);
    assert.ok(gap <= 150, `largest gap between snapshots ${gap} ms`);
    assert.ok(overruns <= 5, `${overruns} overruns`);
    await watcher.close();
  });
}

// A masked frame (client → server) with the given first byte and payload.
function frame(b0, payload) {
  const mask = Buffer.from([1, 2, 3, 4]);
  const body = Buffer.from(payload);
  for (let i = 0; i < body.length; i++) body[i] ^= mask[i % 4];
  return Buffer.concat([Buffer.from([b0, 0x80 | body.length]), mask, body]);
}

// A raw WebSocket over a plain socket: resolves once the 101 has arrived.
async function rawSocket(port, extraHeaders = '') {
  const sock = net.connect(port, '127.0.0.1');
  await once(sock, 'connect');
  sock.write('GET /ws HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n' +
    'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n' +
    `${extraHeaders}\r\n`);
  let head = Buffer.alloc(0);
  const chunks = [];
  sock.on('data', (d) => chunks.push(d));
  for (let i = 0; i < 100 && !head.includes('\r\n\r\n'); i++) {
    await sleep(20);
    head = Buffer.concat(chunks);
  }
  assert.match(head.toString('latin1'), /^HTTP\/1\.1 101/);
  return { sock, chunks };
}

// The status code of the first close frame in what the server sent.
function closeCode(bytes) {
  let off = bytes.indexOf('\r\n\r\n') + 4;
  while (off + 2 <= bytes.length) {
    const op = bytes[off] & 0x0f;
    let len = bytes[off + 1] & 0x7f;
    let hdr = 2;
    if (len === 126) { len = bytes.readUInt16BE(off + 2); hdr = 4; }
    if (len === 127) { len = Number(bytes.readBigUInt64BE(off + 2)); hdr = 10; }
    if (op === 0x8) return len >= 2 ? bytes.readUInt16BE(off + hdr) : 0;
    off += hdr + len;
  }
  return -1;
}

test('endless one-byte fragments are closed with 1009 within the cap, holding little memory', async () => {
  const s = await server(['--no-demo']);
  const { sock, chunks } = await rawSocket(s.port);
  const rss0 = rssKiB(s.proc.pid);
  // 01 81 <mask> 7B, then continuation frames 00 81 <mask> 20, never FIN.
  sock.write(frame(0x01, '{'));
  const piece = frame(0x00, ' ');
  let sent = 0;
  let closedAt = -1;
  sock.on('close', () => { if (closedAt < 0) closedAt = sent; });
  for (let batch = 0; batch < 200 && closedAt < 0 && !sock.destroyed; batch++) {
    const buf = Buffer.concat(Array(1000).fill(piece));
    sock.write(buf);
    sent += 1000;
    await sleep(5);
  }
  await sleep(300);
  const code = closeCode(Buffer.concat(chunks));
  const grown = rssKiB(s.proc.pid) - rss0;
  console.log(`# fragments: close ${code} after at most ${sent} fragments written; RSS grew ${grown} KiB`);
  assert.equal(code, 1009);
  assert.ok(grown <= 2048, `RSS grew ${grown} KiB`);
  sock.destroy();
  // The server is fine.
  const c = await Client.connect(s.url);
  assert.equal((await c.send({ op: 'list_worlds' })).ok, true);
  await c.close();
});

// ---------------------------------------------------------------------------
// Access control
// ---------------------------------------------------------------------------

test('each role does exactly its commands and gets forbidden for the rest', async () => {
  const s = await server(['--auth-file', authFile]);
  const admin = await connect(s.url, tokens.admin);
  const player = await connect(s.url, tokens.player);
  const player2 = await connect(s.url, tokens.player2);
  const viewer = await connect(s.url, tokens.viewer);
  const world = admin.welcome.worlds[0].world;

  // The viewer reads and watches, nothing else.
  assert.equal((await viewer.send({ op: 'list_worlds' })).ok, true);
  assert.equal((await viewer.send({ op: 'subscribe', world, format: 'binary' })).ok, true);
  assert.equal((await viewer.send({ op: 'resync', world })).ok, true);
  assert.equal((await viewer.send({ op: 'unsubscribe', world })).ok, true);
  const forbiddenForViewer = [
    { op: 'spawn_ball', world, position: [0, 3, 0] },
    { op: 'apply_impulse', world, entity: 4294967297, particle: 0, impulse: [0, 1, 0] },
    { op: 'kill', world, entity: 4294967301, hit_point: [0, 1, 0], impulse: [0, 0, 1] },
    { op: 'set_params', world, gravity: [0, -1, 0] },
    { op: 'create_world', name: 'mine' },
    { op: 'destroy_world', world },
  ];
  for (const cmd of forbiddenForViewer) {
    const r = await viewer.send(cmd);
    assert.equal(r.error?.code, 'forbidden', `viewer ${cmd.op}: ${JSON.stringify(r)}`);
    assert.match(r.error.message, /role/);
  }

  // The player plays: spawns, pushes, kills; despawns only its own.
  const ball = await player.send({ op: 'spawn_ball', world, position: [0, 3, 0] });
  assert.equal(ball.ok, true, JSON.stringify(ball));
  const other = await player2.send({ op: 'spawn_ball', world, position: [1, 3, 0] });
  assert.equal(other.ok, true);
  assert.equal((await player.send({ op: 'apply_impulse', world, entity: other.entity, impulse: [0, 1, 0] })).ok, true,
    'a player may push what another spawned');
  const steal = await player.send({ op: 'despawn', world, entity: other.entity });
  assert.equal(steal.error?.code, 'forbidden', JSON.stringify(steal));
  assert.equal((await player.send({ op: 'despawn', world, entity: ball.entity })).ok, true);
  for (const cmd of [{ op: 'set_params', world, gravity: [0, -1, 0] }, { op: 'create_world', name: 'mine' },
    { op: 'destroy_world', world }, { op: 'despawn', world, entity: 4294967297 }]) {
    const r = await player.send(cmd);
    assert.equal(r.error?.code, 'forbidden', `player ${cmd.op}: ${JSON.stringify(r)}`);
  }

  // The admin may do anything, including despawning what others spawned.
  assert.equal((await admin.send({ op: 'despawn', world, entity: other.entity })).ok, true);
  assert.equal((await admin.send({ op: 'set_params', world, iterations: 8 })).ok, true);
  const created = await admin.send({ op: 'create_world', name: 'arena' });
  assert.equal(created.ok, true);

  // A token limited to "demo" may play there and nowhere else.
  const limited = await connect(s.url, tokens.demoOnly);
  assert.equal((await limited.send({ op: 'spawn_ball', world, position: [0, 3, 0] })).ok, true);
  const elsewhere = await limited.send({ op: 'spawn_ball', world: created.world, position: [0, 3, 0] });
  assert.equal(elsewhere.error?.code, 'forbidden', JSON.stringify(elsewhere));
  assert.equal((await admin.send({ op: 'destroy_world', world: created.world })).ok, true);

  for (const c of [admin, player, player2, viewer, limited]) await c.close();
  // No token ever reaches the logs.
  for (const t of Object.values(tokens)) assert.ok(!s.stderr().includes(t), 'a token in the log');
});

test('a wrong or missing token is refused at the upgrade; Bearer and subprotocol both work', async () => {
  const s = await server(['--auth-file', authFile]);
  const none = await upgrade(s.url);
  assert.equal(none.status, 401);
  assert.match(none.headers['www-authenticate'], /Bearer/);
  const wrong = await upgrade(s.url, { protocols: ['ragdolld.v1', 'ragdolld.auth.not-a-token-0123456789'] });
  assert.equal(wrong.status, 401);
  assert.ok(!wrong.body.includes('not-a-token'), 'the refusal does not echo the token');
  const badBearer = await upgrade(s.url, { headers: { Authorization: 'Bearer nope-nope-nope-nope-nope' } });
  assert.equal(badBearer.status, 401);
  const bearer = await upgrade(s.url, { headers: { Authorization: `Bearer ${tokens.viewer}` } });
  assert.equal(bearer.open, true);
  assert.equal(bearer.ws.protocol, 'ragdolld.v1', 'the server answers with the protocol, not the token');
  bearer.ws.close();
  // --anonymous viewer lets strangers watch, and only watch.
  const open = await server(['--auth-file', authFile, '--anonymous', 'viewer']);
  const stranger = await Client.connect(open.url);
  const world = stranger.welcome.worlds[0].world;
  assert.equal((await stranger.send({ op: 'subscribe', world })).ok, true);
  assert.equal((await stranger.send({ op: 'spawn_ball', world, position: [0, 3, 0] })).error?.code, 'forbidden');
  await stranger.close();
  for (const t of Object.values(tokens)) assert.ok(!s.stderr().includes(t) && !open.stderr().includes(t));
});

test('a cross-origin upgrade gets 403; same-origin and allowed origins get in', async () => {
  const s = await server();
  const host = `127.0.0.1:${s.port}`;
  assert.equal((await upgrade(s.url, { headers: { Origin: 'http://evil.example' } })).status, 403);
  assert.equal((await upgrade(s.url, { headers: { Origin: 'null' } })).status, 403);
  const same = await upgrade(s.url, { headers: { Origin: `http://${host}` } });
  assert.equal(same.open, true);
  same.ws.close();
  const native = await upgrade(s.url);
  assert.equal(native.open, true, 'no Origin: a native client, judged by token alone');
  native.ws.close();
  // DNS rebinding: a page whose name now points at 127.0.0.1 sends its own
  // name as Host and Origin; without tokens (every client an admin) a
  // loopback server takes browsers only by loopback names.
  const rebound = await upgrade(s.url, { headers: { Origin: 'http://evil.example:8080', Host: 'evil.example:8080' } });
  assert.equal(rebound.status, 403);
  const byName = await upgrade(s.url, { headers: { Origin: `http://localhost:${s.port}`, Host: `localhost:${s.port}` } });
  assert.equal(byName.open, true);
  byName.ws.close();
  const allowed = await server(['--allow-origin', 'https://game.example']);
  const ok = await upgrade(allowed.url, { headers: { Origin: 'https://game.example' } });
  assert.equal(ok.open, true);
  ok.ws.close();
  const sameButNotListed = await upgrade(allowed.url, { headers: { Origin: `http://127.0.0.1:${allowed.port}` } });
  assert.equal(sameButNotListed.status, 403, 'an allow-list replaces the same-origin rule');
});

test('a non-loopback bind without an auth file refuses to start and says how to fix it', async () => {
  const proc = spawn(RAGDOLLD, ['--host', '0.0.0.0', '--port', '0', '--web-root', WEB_ROOT],
    { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, RAGDOLLD_AUTH_FILE: '' } });
  let err = '';
  proc.stderr.on('data', (d) => { err += d; });
  const [code] = await once(proc, 'exit');
  assert.equal(code, 2);
  assert.match(err, /--auth-file/);
  assert.match(err, /--insecure/);
  // With an auth file it starts (on the wildcard address; we talk to it on loopback).
  const s = await server(['--host', '0.0.0.0', '--auth-file', authFile]);
  const c = await connect(`ws://127.0.0.1:${s.port}/ws`, tokens.viewer);
  await c.close();
});

test('one address cannot take every slot: the N+1-th session from it is refused, another address gets in', async () => {
  const s = await server(['--max-sessions-per-address', '4', '--max-sessions', '64']);
  const held = [];
  for (let i = 0; i < 4; i++) {
    const r = await upgrade(s.url, { localAddress: '127.0.0.1' });
    assert.equal(r.open, true, `session ${i + 1}`);
    held.push(r.ws);
  }
  const fifth = await upgrade(s.url, { localAddress: '127.0.0.1' });
  assert.equal(fifth.status, 429);
  const elsewhere = await upgrade(s.url, { localAddress: '127.0.0.2' });
  assert.equal(elsewhere.open, true, 'another loopback address still gets in');
  elsewhere.ws.close();
  // Sessions with a token are counted apart from anonymous ones.
  const t = await server(['--auth-file', authFile, '--anonymous', 'viewer', '--max-sessions-per-address', '2']);
  const anon = [await upgrade(t.url), await upgrade(t.url)];
  assert.ok(anon.every((r) => r.open));
  assert.equal((await upgrade(t.url)).status, 429);
  const withToken = await upgrade(t.url, { headers: { Authorization: `Bearer ${tokens.player}` } });
  assert.equal(withToken.open, true, 'a client with a token is not locked out by anonymous ones');
  withToken.ws.close();
  for (const r of anon) r.ws.close();
  for (const ws of held) ws.close();
  // Connections that never finish their request are capped per address too.
  const socks = [];
  for (let i = 0; i < 6; i++) {
    const sock = net.connect(s.port, '127.0.0.1');
    await once(sock, 'connect');
    sock.write('GET / HTTP/1.1\r\n'); // and never more
    socks.push(sock);
  }
  await sleep(200);
  const res = await new Promise((resolve) => {
    http.get({ host: '127.0.0.1', port: s.port, path: '/healthz', localAddress: '127.0.0.1' }, resolve)
      .on('error', (e) => resolve({ statusCode: e.code }));
  });
  assert.equal(res.statusCode, 429, 'a fifth unfinished request from one address is refused');
  const res2 = await new Promise((resolve) => {
    http.get({ host: '127.0.0.1', port: s.port, path: '/healthz', localAddress: '127.0.0.2' }, resolve);
  });
  assert.equal(res2.statusCode, 200);
  for (const sock of socks) sock.destroy();
});
