// What a real ragdolld tells its operator: GET /metrics, checked by
// Prometheus's own linter (promtool, from Debian's `prometheus` package,
// which scripts/setup.sh --test installs), and the log lines on stderr in
// both formats.
//
//   RAGDOLLD=build/server/app/ragdolld RD_WEB_ROOT=build/web node --test tests/integration/observability.test.mjs
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import net from 'node:net';
import { startServer, Client, sleep } from '../lib/ragdolld.mjs';

const PROMTOOL = process.env.PROMTOOL || 'promtool';
const havePromtool = !spawnSync(PROMTOOL, ['--version']).error;

// A name no log line may contain: world names are command payload.
const SECRET = 'zanzibar-7f3a';

async function metrics(server) {
  const r = await fetch(`${server.http}/metrics`);
  assert.equal(r.status, 200);
  assert.match(r.headers.get('content-type'), /^text\/plain; version=0\.0\.4/);
  return r.text();
}

// The value of a sample, written exactly as exposed ("name{labels}"); 0
// when the series is absent.
function sample(page, series) {
  for (const line of page.split('\n')) {
    if (line.startsWith(series + ' ')) return Number(line.slice(series.length + 1));
  }
  return 0;
}

// Some traffic of every kind: commands ok and bad, both snapshot formats
// (a binary subscriber that acks, so it gets deltas), a world created and
// destroyed, a client that closes normally.
async function exercise(server) {
  const c = await Client.connect(server.url);
  assert.equal((await c.send({ op: 'list_worlds' })).ok, true);
  assert.equal((await c.sendRaw('{"op":')).error.code, 'bad_json');
  const created = await c.send({ op: 'create_world', name: SECRET });
  assert.equal(created.ok, true);
  const world = created.world;
  assert.equal((await c.send({ op: 'spawn_ball', world, position: [0, 3, 0] })).ok, true);
  assert.equal((await c.send({ op: 'subscribe', world: 1, format: 'json', rate_hz: 30 })).ok, true);
  const b = await Client.connect(server.url);
  const sub = await b.send({ op: 'subscribe', world: 1, format: 'binary', rate_hz: 30 });
  assert.equal(sub.ok, true);
  b.ws.on('message', (data, isBinary) => {
    if (!isBinary) return;
    // Ack every snapshot (PROTOCOL.md §5.2): its tick is the header's low
    // 16 bits at offset 6, unwrapped against the subscribe reply's tick.
    const t16 = Buffer.from(data).readUInt16LE(6);
    let tick = sub.tick - (sub.tick % 65536) + t16;
    if (tick < sub.tick) tick += 65536;
    const ack = Buffer.alloc(17);
    ack.write('A', 0);
    ack.writeBigUInt64LE(1n, 1);
    ack.writeBigUInt64LE(BigInt(tick), 9);
    b.ws.send(ack);
  });
  await sleep(700);
  return { c, b, world };
}

test('GET /metrics passes promtool check metrics and moves with the traffic', async (t) => {
  const server = await startServer();
  try {
    const before = await metrics(server);
    const { c, b, world } = await exercise(server);
    let page = await metrics(server);
    assert.equal(sample(page, 'ragdolld_commands_total{op="list_worlds",code="ok"}'), 1);
    assert.equal(sample(page, 'ragdolld_commands_total{op="unknown",code="bad_json"}'), 1);
    assert.equal(sample(page, 'ragdolld_sessions{role="admin"}'), 2);
    assert.equal(sample(page, 'ragdolld_worlds'), 2);
    assert.equal(sample(page, `ragdolld_entities{world="${world}",kind="ball"}`), 1);
    // The pose history of lag compensation holds the ball's pose at each tick kept.
    assert.ok(sample(page, `ragdolld_world_history_bytes{world="${world}"}`) > 0);
    assert.ok(sample(page, 'ragdolld_messages_sent_total{kind="snapshot_json"}') > 0);
    assert.ok(sample(page, 'ragdolld_messages_sent_total{kind="snapshot_full"}') >= 1);
    assert.ok(sample(page, 'ragdolld_messages_sent_total{kind="snapshot_delta"}') > 0,
      'acked binary snapshots come as deltas');
    assert.ok(sample(page, 'ragdolld_commands_total{op="ack",code="ok"}') > 0);
    assert.ok(sample(page, 'ragdolld_net_sent_bytes_total') >
      sample(before, 'ragdolld_net_sent_bytes_total'));
    assert.ok(sample(page, 'ragdolld_tick_duration_seconds_count{world="1"}') > 0);
    assert.equal(sample(page, 'ragdolld_tick_duration_seconds_bucket{world="1",le="+Inf"}'),
      sample(page, 'ragdolld_tick_duration_seconds_count{world="1"}'));

    if (!havePromtool) {
      t.skip(`promtool not found (${PROMTOOL}): install Debian's prometheus package ` +
        '(scripts/setup.sh --test does) to lint /metrics');
    } else {
      const lint = spawnSync(PROMTOOL, ['check', 'metrics'], { input: page, encoding: 'utf8' });
      assert.equal(lint.status, 0, `promtool check metrics:\n${lint.stdout}${lint.stderr}`);
      assert.equal((lint.stdout + lint.stderr).trim(), '', 'promtool has no complaint');
    }

    // A destroyed world's series go with it.
    assert.match(page, new RegExp(`world="${world}"`));
    assert.equal((await c.send({ op: 'destroy_world', world })).ok, true);
    page = await metrics(server);
    assert.doesNotMatch(page, new RegExp(`world="${world}"`));
    assert.equal(sample(page, 'ragdolld_worlds'), 1);

    await c.close();
    await b.close();
    await sleep(200);
    page = await metrics(server);
    assert.equal(sample(page, 'ragdolld_ws_closes_total{code="1005"}') +
      sample(page, 'ragdolld_ws_closes_total{code="1000"}'), 2, page);
    assert.equal(sample(page, 'ragdolld_sessions{role="admin"}'), 0);
  } finally {
    assert.equal(await server.stop(), 0);
  }
});

// Sends a raw HTTP request and resolves with everything the server sent
// back before it closed the connection.
function rawRequest(port, text) {
  return new Promise((resolve, reject) => {
    const sock = net.connect(port, '127.0.0.1', () => sock.write(text));
    let got = '';
    sock.on('data', (d) => { got += d; });
    sock.on('end', () => resolve(got));
    sock.on('error', reject);
  });
}

// Lines of stderr that the server's log wrote (every line, in JSON mode).
function lines(text) {
  return text.split('\n').filter((l) => l !== '');
}

test('log: text lines for sessions with their close code, never a command payload', async () => {
  const server = await startServer(['--max-sessions', '2']);
  const { c, b } = await exercise(server);
  // A third session is refused: 503.
  const refused = await rawRequest(server.port, 'GET /ws HTTP/1.1\r\nHost: x\r\n' +
    'Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n' +
    'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n');
  assert.match(refused, /^HTTP\/1\.1 503 /);
  c.ws.close(4001, 'done');
  await c.closed;
  await b.close();
  await sleep(200);
  assert.equal(await server.stop(), 0);
  const log = server.stderr();
  const closed = lines(log).filter((l) => / event=session_closed /.test(l));
  assert.equal(closed.length, 2, log);
  for (const l of closed) {
    assert.match(l, /^ts=\S+Z level=info event=session_closed session=\d+ peer=127\.0\.0\.1:\d+ role=admin duration_s=\d+\.\d{3} bytes_in=\d+ bytes_out=\d+ close_code=\d+ close_sent=\d+ close_received=\d+ reason=/);
  }
  assert.ok(closed.some((l) => / close_code=4001 close_sent=4001 close_received=4001 reason="closed by the peer"$/.test(l)), closed.join('\n'));
  assert.equal(lines(log).filter((l) => / event=session_opened /.test(l)).length, 2);
  assert.match(log, / event=command_rejected session=\d+ peer=\S+ op=unknown code=bad_json\n/);
  assert.match(log, / event=world_created world=2 tick_hz=60 /);
  assert.match(log, / event=world_destroyed world=2 /); // at shutdown
  assert.match(log, /level=warn event=upgrade_refused peer=127\.0\.0\.1:\d+ status=503 why="too many sessions"\n/);
  assert.ok(!log.includes(SECRET), 'the world name (command payload) is never logged');
});

test('log: --log-format json writes one JSON object per line', async () => {
  const server = await startServer(['--log-format', 'json', '--log-level', 'debug']);
  const { c, b } = await exercise(server);
  c.ws.close(1000);
  b.ws.close(1000);
  await c.closed;
  await b.closed;
  await sleep(200);
  assert.equal(await server.stop(), 0);
  const log = server.stderr();
  const parsed = lines(log).map((l) => {
    try {
      return JSON.parse(l);
    } catch {
      assert.fail(`not JSON: ${l}`);
    }
  });
  assert.ok(parsed.length > 5);
  for (const o of parsed) {
    assert.match(o.ts, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    assert.ok(['error', 'warn', 'info', 'debug'].includes(o.level), JSON.stringify(o));
    assert.equal(typeof o.event, 'string');
  }
  const closed = parsed.filter((o) => o.event === 'session_closed');
  assert.equal(closed.length, 2);
  for (const o of closed) {
    assert.equal(o.close_code, 1000);
    assert.equal(o.role, 'admin');
    assert.match(o.peer, /^127\.0\.0\.1:\d+$/);
    assert.ok(o.bytes_in > 0 && o.bytes_out > 0 && o.duration_s >= 0);
    assert.equal(o.reason, 'closed by the peer');
  }
  assert.ok(parsed.some((o) => o.event === 'command' && o.op === 'spawn_ball' && o.code === 'ok'));
  assert.ok(parsed.some((o) => o.event === 'listening'));
  assert.ok(!log.includes(SECRET), 'the world name (command payload) is never logged');
});

test('access control: sessions by role, refusals and forbidden commands, never a token', async () => {
  const tokens = { admin: 'obs-admin-0123456789abcdef', viewer: 'obs-viewer-0123456789abcdef' };
  const wrong = 'obs-wrong-0123456789abcdef';
  const dir = mkdtempSync(join(tmpdir(), 'rd-observability-'));
  const authFile = join(dir, 'tokens');
  writeFileSync(authFile, `${tokens.admin} admin\n${tokens.viewer} viewer\n`);
  const server = await startServer(['--auth-file', authFile, '--anonymous', 'viewer']);
  const viewer = await Client.connect(server.url, ['ragdolld.v1', `ragdolld.auth.${tokens.viewer}`]);
  const admin = await Client.connect(server.url, ['ragdolld.v1', `ragdolld.auth.${tokens.admin}`]);
  const anonymous = await Client.connect(server.url);
  const refused = await rawRequest(server.port, 'GET /ws HTTP/1.1\r\nHost: x\r\n' +
    'Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n' +
    `Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nAuthorization: Bearer ${wrong}\r\n\r\n`);
  assert.match(refused, /^HTTP\/1\.1 401 /);
  assert.equal((await viewer.send({ op: 'create_world', name: SECRET })).error.code, 'forbidden');
  assert.equal((await anonymous.send({ op: 'list_worlds' })).ok, true);

  const page = await metrics(server);
  assert.equal(sample(page, 'ragdolld_sessions{role="viewer"}'), 1);
  assert.equal(sample(page, 'ragdolld_sessions{role="admin"}'), 1);
  assert.equal(sample(page, 'ragdolld_sessions{role="anonymous"}'), 1);
  assert.equal(sample(page, 'ragdolld_upgrades_refused_total{status="401"}'), 1);
  assert.equal(sample(page, 'ragdolld_auth_refusals_total{reason="token"}'), 1);
  assert.equal(sample(page, 'ragdolld_commands_total{op="create_world",code="forbidden"}'), 1);
  if (havePromtool) {
    const lint = spawnSync(PROMTOOL, ['check', 'metrics'], { input: page, encoding: 'utf8' });
    assert.equal(lint.status, 0, `promtool check metrics:\n${lint.stdout}${lint.stderr}`);
  }
  for (const c of [viewer, admin, anonymous]) c.ws.close(1000);
  await Promise.all([viewer.closed, admin.closed, anonymous.closed]);
  await sleep(200);
  assert.equal(await server.stop(), 0);
  const log = server.stderr();
  assert.match(log, / event=session_opened session=\d+ peer=\S+ role=viewer\n/);
  assert.match(log, / event=session_opened session=\d+ peer=\S+ role=anonymous\n/);
  assert.match(log, /level=warn event=upgrade_refused peer=\S+ status=401 why=/);
  assert.match(log, /level=warn event=forbidden session=\d+ peer=\S+ op=create_world code=forbidden\n/);
  for (const t of [...Object.values(tokens), wrong]) {
    assert.ok(!log.includes(t), 'a token in the log');
  }
  assert.ok(!log.includes(SECRET), 'the world name (command payload) is never logged');
});
