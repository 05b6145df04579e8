// A hostile client for the flood test (hostile.test.mjs), in a process of
// its own so that its work does not delay the test's own measurements:
// connects, sends N copies of one command as fast as the socket takes
// them, reads every reply, and prints one JSON line:
// {"sent", "replies", "codes": {code: n}, "closed": code|null}.
//
//   node flood_client.mjs URL N OP [WORLD [ENTITY]]
import WebSocket from 'ws';

const [url, nText, op, worldText, entityText] = process.argv.slice(2);
const n = Number(nText);
const ws = new WebSocket(url, ['ragdolld.v1']);
const codes = {};
let replies = 0;
let closed = null;
ws.on('message', (data, isBinary) => {
  if (isBinary) return;
  const m = JSON.parse(data.toString());
  if (!('re' in m)) return;
  replies++;
  const code = m.ok ? 'ok' : m.error.code;
  codes[code] = (codes[code] ?? 0) + 1;
});
ws.on('close', (code) => { closed = code; });
await new Promise((resolve, reject) => { ws.on('open', resolve); ws.on('error', reject); });
const fields = {
  ...(worldText ? { world: Number(worldText) } : {}),
  ...(entityText ? { entity: Number(entityText) } : {}),
};
const body = (id) => JSON.stringify({ op, id, ...fields });
for (let i = 1; i <= n; i++) {
  ws.send(body(i));
  // Yield now and then so the replies are read while sending.
  if (i % 1000 === 0) await new Promise((r) => setImmediate(r));
}
// Wait for every reply (bounded: 30 s).
const deadline = Date.now() + 30000;
while (replies < n && closed === null && Date.now() < deadline) {
  await new Promise((r) => setTimeout(r, 20));
}
console.log(JSON.stringify({ sent: n, replies, codes, closed }));
ws.close();
process.exit(0);
