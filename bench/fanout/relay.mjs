// relay.mjs: the "usual alternative" of the fan-out benchmark — a Node
// server on the `ws` package that broadcasts ragdolld's binary snapshots to
// its own clients.
//
//   node bench/fanout/relay.mjs UPSTREAM_URL WORLD PORT
//
// It subscribes once to WORLD on ragdolld (binary, 30 Hz, never acking, so
// every frame is the full snapshot that ragdolld's non-acking viewers get),
// and sends each frame, byte for byte, to every client that subscribed to
// it. It speaks just enough of PROTOCOL.md for ragdoll-load: the welcome
// event, and replies to subscribe/unsubscribe; any other command gets an
// `unknown_op` error. It prints "listening on 127.0.0.1:PORT" when ready.
import { WebSocket, WebSocketServer } from 'ws';

const [upstreamUrl, worldArg, portArg] = process.argv.slice(2);
if (!upstreamUrl || !worldArg || !portArg) {
  console.error('usage: node relay.mjs UPSTREAM_URL WORLD PORT');
  process.exit(2);
}
const world = Number(worldArg);
let welcome = null;
let tick = 0;
const subscribers = new Set();

const upstream = new WebSocket(upstreamUrl);
upstream.binaryType = 'nodebuffer';
upstream.on('message', (data, isBinary) => {
  if (isBinary) {
    for (const ws of subscribers) {
      ws.send(data, { binary: true });
    }
    return;
  }
  const msg = JSON.parse(data.toString());
  if (msg.ev === 'welcome') {
    welcome = data.toString();
    upstream.send(JSON.stringify({ op: 'subscribe', id: 1, world, format: 'binary', rate_hz: 30 }));
  } else if (msg.re === 1) {
    if (!msg.ok) {
      console.error('relay: subscribe failed:', data.toString());
      process.exit(1);
    }
    tick = msg.tick;
    listen();
  } else if (msg.ev === 'metrics') {
    tick = msg.tick;
  }
});
upstream.on('close', () => process.exit(0));
upstream.on('error', (e) => {
  console.error('relay: upstream:', e.message);
  process.exit(1);
});

function listen() {
  const server = new WebSocketServer({ host: '127.0.0.1', port: Number(portArg), path: '/ws' });
  server.on('listening', () => console.log(`listening on 127.0.0.1:${server.address().port}`));
  server.on('connection', (ws) => {
    ws.send(welcome);
    ws.on('message', (data, isBinary) => {
      if (isBinary) {
        return; // acks: nothing to do, every frame is a full snapshot
      }
      let cmd;
      try {
        cmd = JSON.parse(data.toString());
      } catch {
        ws.send(JSON.stringify({ re: null, error: { code: 'bad_json', message: 'not JSON' } }));
        return;
      }
      if ((cmd.op === 'subscribe' || cmd.op === 'unsubscribe') && cmd.world === world) {
        if (cmd.op === 'subscribe') {
          subscribers.add(ws);
        } else {
          subscribers.delete(ws);
        }
        ws.send(
          JSON.stringify({ re: cmd.id ?? null, ok: true, tick, world, tick_hz: 60, format: 'binary', rate_hz: 30 }),
        );
      } else {
        ws.send(JSON.stringify({ re: cmd.id ?? null, error: { code: 'unknown_op', message: 'relay' } }));
      }
    });
    ws.on('close', () => subscribers.delete(ws));
    ws.on('error', () => subscribers.delete(ws));
  });
}
