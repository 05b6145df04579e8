// Helpers shared by the JavaScript tests: start a real ragdolld on a port the
// kernel picks, and talk to it over WebSocket with the `ws` package.
//
// The server binary and the viewer's files come from the environment (set by
// ctest): RAGDOLLD (path to the executable) and RD_WEB_ROOT (built viewer).
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import WebSocket from 'ws';

export const RAGDOLLD = process.env.RAGDOLLD ?? 'build/server/app/ragdolld';
export const WEB_ROOT = process.env.RD_WEB_ROOT ?? 'build/web';

/**
 * Starts ragdolld with --port 0 and resolves once it prints
 * "listening on HOST:PORT". Returns { port, url, proc, stderr(), stop() }.
 * stop() sends SIGTERM and resolves with the exit code.
 */
// opts.wrap: a command the server runs under (e.g. ['prlimit', '--fsize=N', '--']);
// opts.env: variables added to this process's environment for it.
export async function startServer(args = [], opts = {}) {
  const argv = [RAGDOLLD, '--port', '0', '--web-root', WEB_ROOT, ...args];
  const wrap = opts.wrap ?? [];
  const proc = spawn(wrap.length > 0 ? wrap[0] : argv[0], [...wrap.slice(1), ...(wrap.length > 0 ? argv : argv.slice(1))], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, ...(opts.env ?? {}) },
  });
  let err = '';
  proc.stderr.on('data', (d) => { err += d; });
  const port = await new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`ragdolld did not start: ${err}`)), 10000);
    proc.stdout.on('data', (d) => {
      out += d;
      const m = /listening on [^\s]*:(\d+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(Number(m[1]));
      }
    });
    proc.on('exit', (code) => reject(new Error(`ragdolld exited with ${code}: ${err}`)));
  });
  return {
    port,
    url: `ws://127.0.0.1:${port}/ws`,
    http: `http://127.0.0.1:${port}`,
    proc,
    stderr: () => err,
    async stop() {
      if (proc.exitCode !== null || proc.signalCode !== null) return proc.exitCode; // gone already (a kill -9: signalCode)
      proc.kill('SIGTERM');
      const [code] = await once(proc, 'exit');
      return code;
    },
  };
}

/**
 * A WebSocket client that speaks the ragdolld protocol: send() returns a
 * promise of the reply to that command (by id); events and snapshots are
 * collected and can be awaited with next().
 */
export class Client {
  static async connect(url, protocols = ['ragdolld.v1']) {
    const c = new Client(new WebSocket(url, protocols));
    await once(c.ws, 'open');
    c.welcome = await c.next((m) => m.ev === 'welcome');
    return c;
  }

  constructor(ws) {
    this.ws = ws;
    this.nextId = 1;
    this.pending = new Map();
    this.messages = []; // every event and snapshot, in arrival order
    this.waiters = [];
    this.closed = new Promise((resolve) => {
      ws.on('close', (code, reason) => resolve({ code, reason: reason.toString() }));
    });
    ws.on('message', (data, isBinary) => {
      const msg = isBinary ? { binary: Buffer.from(data) } : JSON.parse(data.toString());
      msg.receivedAt = Date.now();
      if (!isBinary && 're' in msg && msg.re !== null && this.pending.has(msg.re)) {
        this.pending.get(msg.re)(msg);
        this.pending.delete(msg.re);
        return;
      }
      this.messages.push(msg);
      this.waiters = this.waiters.filter((w) => {
        if (w.pred(msg)) { w.resolve(msg); return false; }
        return true;
      });
    });
  }

  /** Sends a command object (an id is added) and resolves with its reply. */
  send(cmd, timeoutMs = 5000) {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no reply to ${JSON.stringify(cmd)}`)), timeoutMs);
      this.pending.set(id, (m) => { clearTimeout(timer); resolve(m); });
      this.ws.send(JSON.stringify({ ...cmd, id }));
    });
  }

  /** Sends raw text (for malformed input) and resolves with the next reply. */
  sendRaw(text, timeoutMs = 5000) {
    this.ws.send(text);
    return this.next((m) => 're' in m, timeoutMs);
  }

  /** Resolves with the next collected message matching pred (already seen ones first). */
  next(pred = () => true, timeoutMs = 5000) {
    const i = this.messages.findIndex(pred);
    if (i >= 0) return Promise.resolve(this.messages.splice(i, 1)[0]);
    return new Promise((resolve, reject) => {
      const w = { pred, resolve: (m) => { clearTimeout(timer); this.messages.splice(this.messages.indexOf(m), 1); resolve(m); } };
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((x) => x !== w);
        reject(new Error('timed out waiting for a message'));
      }, timeoutMs);
      this.waiters.push(w);
    });
  }

  /** Snapshots collected so far (JSON ones), without removing them. */
  snapshots(world) {
    return this.messages.filter((m) => m.ev === 'snapshot' && (world === undefined || m.world === world));
  }

  close() {
    this.ws.close();
    return this.closed;
  }
}

/** Resolves after ms milliseconds. */
export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
