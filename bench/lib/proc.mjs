// proc.mjs: what the benchmarks in bench/ that drive a real ragdolld share:
// starting a server and waiting for its port, a process's CPU time and
// resident memory from /proc, running a command to its end, a control
// connection that sets worlds up and times replies, and percentiles.
import { spawn, execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { WebSocket } from 'ws';

const clkTck = Number(execFileSync('getconf', ['CLK_TCK']).toString());

// ---------------------------------------------------------------------------
// Processes
// ---------------------------------------------------------------------------

// Starts a process and resolves with it and its port once it prints
// "listening on HOST:PORT".
export function startServer(cmd, argv) {
  return new Promise((resolveStart, reject) => {
    const child = spawn(cmd, argv, { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (d) => {
      out += d.toString();
      const m = out.match(/listening on [^:\s]+:(\d+)/);
      if (m && !child.port) {
        child.port = Number(m[1]);
        resolveStart(child);
      }
    });
    child.on('exit', (code) => reject(new Error(`${cmd} exited with ${code}`)));
  });
}

// CPU seconds (user + system) a process has used so far; with tid, one of
// its threads (ragdolld's event-loop thread is the one whose id is the
// process's).
export function cpuSeconds(pid, tid = null) {
  const stat = readFileSync(tid === null ? `/proc/${pid}/stat` : `/proc/${pid}/task/${tid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / clkTck;
}

// Resident memory of a process, MiB.
export function rssMiB(pid) {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : NaN;
}

export function run(cmd, argv) {
  return new Promise((resolveRun, reject) => {
    const child = spawn(cmd, argv, { stdio: ['ignore', 'inherit', 'inherit'] });
    child.on('exit', (code) => (code === 0 ? resolveRun() : reject(new Error(`${cmd} exited with ${code}`))));
  });
}

// ---------------------------------------------------------------------------
// The control connection: sets the world up, then pokes it and times replies
// ---------------------------------------------------------------------------

export class Control {
  constructor(url) {
    this.ws = new WebSocket(url);
    this.nextId = 1;
    this.pending = new Map();
    this.ws.on('message', (data, isBinary) => {
      if (isBinary) return;
      const msg = JSON.parse(data.toString());
      const p = this.pending.get(msg.re);
      if (p) {
        this.pending.delete(msg.re);
        p(msg);
      }
    });
    this.open = new Promise((ok, fail) => {
      this.ws.once('open', ok);
      this.ws.once('error', fail);
    });
  }
  send(cmd) {
    const id = this.nextId++;
    const sent = process.hrtime.bigint();
    return new Promise((ok) => {
      this.pending.set(id, (msg) => ok({ msg, ms: Number(process.hrtime.bigint() - sent) / 1e6 }));
      this.ws.send(JSON.stringify({ ...cmd, id }));
    });
  }
  async must(cmd) {
    const { msg } = await this.send(cmd);
    if (!msg.ok) throw new Error(`${cmd.op}: ${JSON.stringify(msg.error)}`);
    return msg;
  }
}

export function percentile(values, p) {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

// The value after `--name` among a script's arguments, or the fallback.
export function opt(name, fallback) {
  const args = process.argv.slice(2);
  const i = args.indexOf(name);
  return i >= 0 && i + 1 < args.length ? args[i + 1] : fallback;
}
