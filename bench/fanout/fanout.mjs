// fanout.mjs: the fan-out benchmark. One world (20 ragdolls and a 32×32
// cape, kept moving by impulses) is watched by N viewer connections at 30 Hz,
// N = 100, 500, 1000, from one ragdoll-load process. For each N it measures,
// over the load run:
//
//   - the server's CPU time per second of wall time (from /proc/PID/stat);
//   - snapshots delivered per second (ragdoll-load's report);
//   - snapshots delivered per server CPU-second;
//   - p99 latency of the apply_impulse commands this script sends (20/s)
//     while the viewers watch;
//   - the server's peak resident memory.
//
// Three servers are measured on the same world:
//   ragdolld-delta  viewers decode and ack: each gets deltas (PROTOCOL §5.2)
//   ragdolld-full   viewers never ack: each gets the full snapshot
//   node-ws         relay.mjs (Node, `ws` package) broadcasting the very
//                   frames ragdolld-full sends, to viewers that never ack
// and the ratio ragdolld-full / node-ws of snapshots per CPU-second is the
// like-for-like comparison (the same bytes to the same clients).
//
//   node bench/fanout/fanout.mjs [--build DIR] [--clients 100,500,1000]
//                                [--seconds S] [--json FILE]
//                                [--servers ragdolld-delta,ragdolld-full,node-ws]
//
// Everything runs on this machine: the server, the relay and the load
// generator share its cores, so the figures are a lower bound of what a
// server alone on a machine does.
import { readFileSync, writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Control, cpuSeconds, percentile, rssMiB, run, startServer, opt } from '../lib/proc.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const buildDir = resolve(opt('--build', join(here, '../../build')));
const clientCounts = opt('--clients', '100,500,1000').split(',').map(Number);
const seconds = Number(opt('--seconds', '10'));
const jsonOut = opt('--json', null);
const servers = opt('--servers', 'ragdolld-delta,ragdolld-full,node-ws').split(',');
const ragdolld = join(buildDir, 'server/app/ragdolld');
const load = join(buildDir, 'clients/c/ragdoll-load');
const tmp = mkdtempSync(join(tmpdir(), 'fanout-'));

async function buildWorld(ctl) {
  const { world } = await ctl.must({ op: 'create_world', name: 'fanout', tick_hz: 60 });
  const characters = [];
  for (let i = 0; i < 20; ++i) {
    const position = [(i % 5) * 1.5 - 3, 0, Math.floor(i / 5) * 1.5 - 2];
    const { entity } = await ctl.must({ op: 'spawn_character', world, position });
    characters.push(entity);
    await ctl.must({ op: 'kill', world, entity, hit_point: [position[0], 1.2, position[2] + 1], impulse: [0, 0, -20] });
  }
  await ctl.must({ op: 'spawn_cloth', world, origin: [-1.6, 4, -5], cols: 32, rows: 32, spacing: 0.1, pin: 'top' });
  return { world, characters };
}

// Sends apply_impulse at 20 Hz until stopped; returns the latencies (ms).
function poke(ctl, world, characters) {
  const latencies = [];
  let i = 0;
  const timer = setInterval(async () => {
    const entity = characters[i++ % characters.length];
    const impulse = [Math.random() * 40 - 20, 40 + Math.random() * 20, Math.random() * 40 - 20];
    const { msg, ms } = await ctl.send({ op: 'apply_impulse', world, entity, bone: 'chest', impulse });
    if (msg.ok) latencies.push(ms);
  }, 50);
  return {
    stop() {
      clearInterval(timer);
      return latencies;
    },
  };
}

// ---------------------------------------------------------------------------
// One measurement
// ---------------------------------------------------------------------------

async function measure(label, pid, port, world, clients, decode, ctlPoke) {
  const scenario = {
    url: `ws://127.0.0.1:${port}/ws`,
    clients,
    ramp_per_s: 1000,
    duration_s: seconds,
    subscriptions: [{ world, format: 'binary', rate_hz: 30 }],
    decode,
  };
  const scenarioPath = join(tmp, `${label}-${clients}.json`);
  const reportPath = join(tmp, `${label}-${clients}-report.json`);
  writeFileSync(scenarioPath, JSON.stringify(scenario));
  const cpu0 = cpuSeconds(pid);
  const loop0 = cpuSeconds(pid, pid);
  const t0 = process.hrtime.bigint();
  const poker = ctlPoke();
  let rss = 0;
  const sampler = setInterval(() => { rss = Math.max(rss, rssMiB(pid)); }, 250);
  await run(load, ['--quiet', '--json', reportPath, scenarioPath]);
  clearInterval(sampler);
  const latencies = poker.stop();
  const wall = Number(process.hrtime.bigint() - t0) / 1e9;
  const cpu = cpuSeconds(pid) - cpu0;
  const loop = cpuSeconds(pid, pid) - loop0;
  const report = JSON.parse(readFileSync(reportPath, 'utf8'));
  const snapshots = report.snapshots.decoded ? report.snapshots.total : report.snapshots.binary_frames;
  const row = {
    server: label,
    clients,
    connected: report.connections.established,
    cpu_per_s: cpu / wall,
    snapshots_per_s: snapshots / report.duration_s,
    // ragdolld: its event-loop thread, where all streaming happens (worlds
    // step on worker threads); the relay: the whole process.
    loop_cpu_per_s: loop / wall,
    snapshots_per_loop_cpu_s: snapshots / loop,
    snapshots_per_cpu_s: snapshots / cpu,
    bytes_per_snapshot: report.bytes.received / Math.max(1, snapshots),
    cmd_p99_ms: percentile(latencies, 99),
    peak_rss_mib: rss,
    commands: latencies.length,
  };
  console.log(
    `${label.padEnd(15)} N=${String(clients).padStart(4)}  cpu ${row.cpu_per_s.toFixed(3)} s/s  ` +
      `${row.snapshots_per_s.toFixed(0)} snapshots/s (${(row.snapshots_per_s / (clients * 30)).toFixed(2)} of nominal)  ` +
      `${row.snapshots_per_cpu_s.toFixed(0)} per CPU-s  ` +
      (label === 'node-ws' ? '' : `(loop thread ${row.loop_cpu_per_s.toFixed(3)} s/s: ${row.snapshots_per_loop_cpu_s.toFixed(0)} per CPU-s)  `) +
      `${row.bytes_per_snapshot.toFixed(0)} B/snapshot  ` +
      `p99 cmd ${row.cmd_p99_ms.toFixed(2)} ms (${row.commands} commands)  peak RSS ${rss.toFixed(0)} MiB`,
  );
  return row;
}

async function main() {
  const server = await startServer(ragdolld, ['--no-demo', '--port', '0', '--max-sessions', '4096']);
  const url = `ws://127.0.0.1:${server.port}/ws`;
  const ctl = new Control(url);
  await ctl.open;
  const { world, characters } = await buildWorld(ctl);
  const relay = await startServer('node', [join(here, 'relay.mjs'), url, String(world), '0']);
  await new Promise((r) => setTimeout(r, 1000));
  const pokeWorld = () => poke(ctl, world, characters);

  // The world's own cost: the server with no viewers, over 3 s.
  const idle0 = cpuSeconds(server.pid);
  const idlePoker = pokeWorld();
  await new Promise((r) => setTimeout(r, 3000));
  idlePoker.stop();
  const idle = (cpuSeconds(server.pid) - idle0) / 3;
  console.log(`ragdolld with no viewers (simulation and commands only): cpu ${idle.toFixed(3)} s/s`);

  const rows = [];
  for (const n of clientCounts) {
    const runs = {
      'ragdolld-delta': () => measure('ragdolld-delta', server.pid, server.port, world, n, true, pokeWorld),
      'ragdolld-full': () => measure('ragdolld-full', server.pid, server.port, world, n, false, pokeWorld),
      'node-ws': () => measure('node-ws', relay.pid, relay.port, world, n, false, pokeWorld),
    };
    for (const label of servers) {
      rows.push(await runs[label]());
    }
  }
  console.log('\nsnapshots per server CPU-second, ragdolld / node ws (same bytes, same clients):');
  for (const n of clientCounts) {
    const get = (label) => rows.find((r) => r.server === label && r.clients === n);
    const node = get('node-ws');
    const ratio = (label) => {
      const r = get(label);
      if (!r || !node) return 'n/a';
      const streaming = r.snapshots_per_s / Math.max(1e-9, r.cpu_per_s - idle);
      return `${(r.snapshots_per_cpu_s / node.snapshots_per_cpu_s).toFixed(2)}× ` +
        `(${(streaming / node.snapshots_per_cpu_s).toFixed(2)}× without the simulation; ` +
        `${(r.snapshots_per_loop_cpu_s / node.snapshots_per_cpu_s).toFixed(2)}× its event-loop thread alone)`;
    };
    console.log(`  N=${String(n).padStart(4)}  full ${ratio('ragdolld-full')}   delta ${ratio('ragdolld-delta')}`);
  }
  if (jsonOut) writeFileSync(jsonOut, JSON.stringify({ idle_cpu_per_s: idle, rows }, null, 2));
  relay.kill('SIGTERM');
  server.kill('SIGTERM');
  ctl.ws.close();
}

main().catch((e) => {
  console.error('fanout:', e.message);
  process.exit(1);
});
