// interest.mjs: the interest management benchmark (PROTOCOL.md §5.3). One
// world of 200 particle ragdolls on a 20 × 10 grid 10.5 m apart (199.5 m ×
// 94.5 m), 20 of them kicked every second so that about a tenth move at any
// time, is watched by N binary viewers at 30 Hz from one ragdoll-load
// process, which decode and acknowledge every frame:
//
//   everything    no budget: every viewer gets every entity (deltas
//                 against its acknowledged snapshot, shared encodings)
//   interest      bytes_per_s 20000 and a focus (one grid corner, radius
//                 20 m): partial frames made for each viewer
//
// For each it measures, over the load run: the bytes each viewer receives a
// second (ragdoll-load's report), the server's CPU time per second of wall
// time (/proc/PID/stat) and per viewer, less the world's own cost measured
// with no viewers, the streaming CPU per frame delivered, and the server's
// peak resident memory. (The lag-compensation history per world is
// measured by ragdoll-lag-bench: particle ragdolls have no rigid bodies to
// keep.)
//
//   node bench/interest/interest.mjs [--build DIR] [--clients 100,1000]
//                                    [--seconds S] [--budget B] [--json FILE]
//
// Everything runs on this machine: the server and the load generator share
// its cores, so the figures are what a loaded server does, not its limit.
import { writeFileSync, readFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Control, cpuSeconds, rssMiB, run, startServer, opt } from '../lib/proc.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const buildDir = resolve(opt('--build', join(here, '../../build')));
const clientCounts = opt('--clients', '100,1000').split(',').map(Number);
const seconds = Number(opt('--seconds', '10'));
const budget = Number(opt('--budget', '20000'));
const jsonOut = opt('--json', null);
const ragdolld = join(buildDir, 'server/app/ragdolld');
const load = join(buildDir, 'clients/c/ragdoll-load');
const tmp = mkdtempSync(join(tmpdir(), 'interest-'));
const FOCUS = [-99.75, 1, -47.25]; // the grid's first corner
const RADIUS = 20;

async function buildWorld(ctl) {
  const { world } = await ctl.must({ op: 'create_world', name: 'interest', tick_hz: 30 });
  const ragdolls = [];
  for (let i = 0; i < 20; ++i) {
    for (let j = 0; j < 10; ++j) {
      const position = [i * 10.5 - 99.75, 1.2, j * 10.5 - 47.25];
      ragdolls.push((await ctl.must({ op: 'spawn_ragdoll', world, position })).entity);
    }
  }
  return { world, ragdolls };
}

// Kicks 20 random ragdolls a second (one every 50 ms) until stopped.
function kick(ctl, world, ragdolls) {
  const timer = setInterval(() => {
    const entity = ragdolls[Math.floor(Math.random() * ragdolls.length)];
    const impulse = [Math.random() * 16 - 8, 30, Math.random() * 16 - 8];
    ctl.send({ op: 'apply_impulse', world, entity, particle: 3, impulse });
  }, 50);
  return { stop: () => clearInterval(timer) };
}

async function measure(label, server, world, clients, idle, ctl, ragdolls) {
  const sub = { world, format: 'binary', rate_hz: 30 };
  if (label === 'interest') Object.assign(sub, { bytes_per_s: budget, focus: FOCUS, radius: RADIUS });
  const scenario = {
    url: `ws://127.0.0.1:${server.port}/ws`,
    clients,
    ramp_per_s: 1000,
    duration_s: seconds,
    subscriptions: [sub],
    decode: true,
  };
  const scenarioPath = join(tmp, `${label}-${clients}.json`);
  const reportPath = join(tmp, `${label}-${clients}-report.json`);
  writeFileSync(scenarioPath, JSON.stringify(scenario));
  const kicker = kick(ctl, world, ragdolls);
  let rss = 0;
  const sampler = setInterval(() => { rss = Math.max(rss, rssMiB(server.pid)); }, 250);
  const cpu0 = cpuSeconds(server.pid);
  const t0 = process.hrtime.bigint();
  await run(load, ['--quiet', '--json', reportPath, scenarioPath]);
  const wall = Number(process.hrtime.bigint() - t0) / 1e9;
  const cpu = cpuSeconds(server.pid) - cpu0;
  clearInterval(sampler);
  kicker.stop();
  const report = JSON.parse(readFileSync(reportPath, 'utf8'));
  const connected = report.connections.established;
  const row = {
    mode: label,
    clients,
    connected,
    bytes_per_client_s: report.bytes.received / report.duration_s / Math.max(1, connected),
    snapshots_per_client_s: report.snapshots.total / report.duration_s / Math.max(1, connected),
    cpu_per_s: cpu / wall,
    streaming_cpu_per_s: cpu / wall - idle,
    cpu_us_per_client_s: (1e6 * (cpu / wall - idle)) / Math.max(1, connected),
    cpu_us_per_frame: (1e6 * (cpu / wall - idle)) / Math.max(1, report.snapshots.total / report.duration_s),
    peak_rss_mib: rss,
  };
  console.log(
    `${label.padEnd(10)} N=${String(clients).padStart(4)} (${connected} connected)  ` +
      `${row.bytes_per_client_s.toFixed(0)} B/s and ${row.snapshots_per_client_s.toFixed(1)} frames/s a client  ` +
      `server cpu ${row.cpu_per_s.toFixed(3)} s/s (${row.streaming_cpu_per_s.toFixed(3)} streaming: ` +
      `${row.cpu_us_per_client_s.toFixed(0)} µs/s a client, ${row.cpu_us_per_frame.toFixed(1)} µs a frame)  ` +
      `peak RSS ${rss.toFixed(0)} MiB`,
  );
  return row;
}

async function main() {
  const server = await startServer(ragdolld, ['--no-demo', '--port', '0', '--max-sessions', '4096']);
  const ctl = new Control(`ws://127.0.0.1:${server.port}/ws`);
  await ctl.open;
  const { world, ragdolls } = await buildWorld(ctl);
  await new Promise((r) => setTimeout(r, 3000)); // they land

  // The world's own cost (simulation, kicks), with no viewers.
  const kicker = kick(ctl, world, ragdolls);
  const idle0 = cpuSeconds(server.pid);
  await new Promise((r) => setTimeout(r, 3000));
  const idle = (cpuSeconds(server.pid) - idle0) / 3;
  kicker.stop();
  console.log(`world of 200 ragdolls with no viewers: cpu ${idle.toFixed(3)} s/s`);

  const rows = [];
  for (const n of clientCounts) {
    for (const label of ['everything', 'interest']) {
      rows.push(await measure(label, server, world, n, idle, ctl, ragdolls));
    }
    const [a, b] = rows.slice(-2);
    console.log(`  N=${n}: interest management sends ${(a.bytes_per_client_s / b.bytes_per_client_s).toFixed(1)}× ` +
      `fewer bytes a client, at ${(b.cpu_us_per_client_s / a.cpu_us_per_client_s).toFixed(2)}× the streaming CPU a client`);
  }
  if (jsonOut) writeFileSync(jsonOut, JSON.stringify({ idle_cpu_per_s: idle, rows }, null, 2));
  server.kill('SIGTERM');
  ctl.ws.close();
}

main().catch((e) => {
  console.error('interest:', e.message);
  process.exit(1);
});
