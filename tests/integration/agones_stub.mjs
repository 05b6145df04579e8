// A stand-in for the Agones SDK sidecar's REST API (the grpc-gateway of
// agones.dev/sdk, as `sdk-server --local` serves it): the paths, methods and
// JSON shapes of https://agones.dev/site/docs/guides/client-sdks/rest/ and
// the SDK's swagger (proto field names, int64 as strings). It records every
// call; a test moves the GameServer through its states and reads the calls.
//
//   POST /ready /health /shutdown /allocate   {} → {}   (/health with no body: 400)
//   GET  /gameserver                          the GameServer
//   GET  /watch/gameserver                    {"result": GameServer}\n, then one per change
//   PUT  /metadata/annotation, /metadata/label {"key","value"} → {} (key gets "agones.dev/sdk-")
//   PATCH /v1beta1/counters/NAME              {"count"} | {"countDiff"} | {"capacity"} → Counter
//
// mode: 'ok'; 'hang' (requests are read and never answered); 'error' (every
// call answered 500 {"code":2,"message":...}). failCounters: every Counter
// PATCH refused (as an Agones without the CountsAndLists feature does); a
// count above the Counter's capacity is refused in any case.
import http from 'node:http';

export async function startStub({ mode = 'ok', counters = { players: { count: '0', capacity: '100' } }, failCounters = false } = {}) {
  const calls = [];
  const watchers = new Set();
  const gs = {
    object_meta: {
      name: 'ragdolld-fleet-x7k2q', namespace: 'default', uid: 'f0e1d2c3', resource_version: '1',
      generation: '1', creation_timestamp: String(Math.floor(Date.now() / 1000)), deletion_timestamp: '0',
      annotations: {}, labels: { 'agones.dev/fleet': 'ragdolld-fleet' },
    },
    spec: { health: { disabled: false, period_seconds: 5, failure_threshold: 3, initial_delay_seconds: 5 } },
    status: {
      state: 'Scheduled', address: '127.0.0.1', addresses: [{ type: 'InternalIP', address: '127.0.0.1' }],
      ports: [{ name: 'default', port: 7654 }], players: null, counters: structuredClone(counters), lists: {},
    },
  };
  const hanging = new Set();

  function push() {
    gs.object_meta.resource_version = String(Number(gs.object_meta.resource_version) + 1);
    const line = JSON.stringify({ result: gs }) + '\n';
    for (const w of watchers) w.write(line);
  }

  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (d) => { body += d; });
    req.on('end', () => {
      const call = { method: req.method, path: req.url, body, at: Date.now() };
      calls.push(call);
      if (mode === 'hang') {
        hanging.add(res);
        return;
      }
      const json = (status, obj) => {
        res.writeHead(status, { 'Content-Type': 'application/json' });
        res.end(JSON.stringify(obj));
      };
      if (mode === 'error') return json(500, { code: 2, message: 'the stub fails every call', details: [] });
      const parsed = (() => { try { return body ? JSON.parse(body) : null; } catch { return undefined; } })();
      if (req.method === 'POST' && ['/ready', '/shutdown', '/allocate', '/health'].includes(req.url)) {
        if (req.url === '/health' && body === '') return res.writeHead(400).end();
        if (parsed === undefined) return json(400, { code: 3, message: 'bad JSON', details: [] });
        if (req.url === '/ready') { gs.status.state = 'Ready'; push(); }
        if (req.url === '/shutdown') { gs.status.state = 'Shutdown'; push(); }
        return json(200, {});
      }
      if (req.method === 'GET' && req.url === '/gameserver') return json(200, gs);
      if (req.method === 'GET' && req.url === '/watch/gameserver') {
        res.writeHead(200, { 'Content-Type': 'application/json' }); // chunked, never ends
        watchers.add(res);
        res.on('close', () => watchers.delete(res));
        res.write(JSON.stringify({ result: gs }) + '\n');
        return;
      }
      if (req.method === 'PUT' && (req.url === '/metadata/annotation' || req.url === '/metadata/label')) {
        if (!parsed || typeof parsed.key !== 'string') return json(400, { code: 3, message: 'key', details: [] });
        const map = req.url.endsWith('annotation') ? gs.object_meta.annotations : gs.object_meta.labels;
        map[`agones.dev/sdk-${parsed.key}`] = String(parsed.value ?? '');
        push();
        return json(200, {});
      }
      const counter = /^\/v1beta1\/counters\/([^/?]+)$/.exec(req.url);
      if (counter && (req.method === 'PATCH' || req.method === 'GET')) {
        const c = gs.status.counters[counter[1]];
        if (!c) return json(500, { code: 2, message: `counter not found: ${counter[1]}`, details: [] });
        if (req.method === 'PATCH') {
          if (!parsed) return json(400, { code: 3, message: 'body', details: [] });
          if (failCounters) return json(500, { code: 9, message: 'CountsAndLists not enabled', details: [] });
          // As the SDK server: a count outside [0, capacity] is refused.
          if (parsed.count !== undefined && (Number(parsed.count) < 0 || Number(parsed.count) > Number(c.capacity))) {
            return json(500, { code: 11, message: `out of range: count ${parsed.count} exceeds capacity ${c.capacity}`, details: [] });
          }
          if (parsed.count !== undefined) c.count = String(parsed.count);
          if (parsed.capacity !== undefined) c.capacity = String(parsed.capacity);
          if (parsed.countDiff !== undefined) c.count = String(Number(c.count) + Number(parsed.countDiff));
          push();
        }
        return json(200, { name: counter[1], ...c });
      }
      return json(404, { code: 5, message: `no ${req.method} ${req.url}`, details: [] });
    });
  });
  server.listen(0, '127.0.0.1');
  await new Promise((r) => server.once('listening', r));
  return {
    port: server.address().port,
    calls,
    gs,
    /** The calls to `path` (and method) so far. */
    of(path, method) { return calls.filter((c) => c.path === path && (!method || c.method === method)); },
    /** Waits until `pred(calls)` holds, or fails after ms. */
    async until(pred, ms = 10000, what = 'a call') {
      const end = Date.now() + ms;
      while (Date.now() < end) {
        if (pred(calls)) return;
        await new Promise((r) => setTimeout(r, 25));
      }
      throw new Error(`the stub sidecar did not see ${what} in ${ms} ms; calls: ${JSON.stringify(calls.map((c) => `${c.method} ${c.path} ${c.body}`))}`);
    },
    /** Counter PATCHes refused (true) or taken (false) from now on. */
    failCounters(on) { failCounters = on; },
    /** Allocates the GameServer (GameServerAllocation: metadata, then state). */
    allocate({ labels = {}, annotations = {} } = {}) {
      Object.assign(gs.object_meta.labels, labels);
      Object.assign(gs.object_meta.annotations, annotations, { 'agones.dev/last-allocated': new Date().toISOString() });
      gs.status.state = 'Allocated';
      push();
    },
    async close() {
      for (const r of hanging) r.destroy();
      for (const w of watchers) w.destroy();
      server.closeAllConnections?.();
      await new Promise((r) => server.close(r));
    },
  };
}
