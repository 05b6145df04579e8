// A Node client of ragdolld: a walking character, a ray at its head as the
// interpolation buffer drew it (judged at that tick: lag compensation), a
// kill where the ray hit, and the impacts of its fall.
//   node clients/js/examples/node.mjs [ws://127.0.0.1:8080/ws]
import WebSocket from 'ws';
import { RagdollClient } from '../src/index.js';

const client = await RagdollClient.connect(process.argv[2] ?? 'ws://127.0.0.1:8080/ws', { WebSocket });
const { world } = await client.createWorld('node example');
const { entity } = await client.spawnCharacter(world, [0, 0, 0], { clip: 'walk' });
client.on('impacts', (ev) => {
  for (const i of ev.impacts) console.log(`tick ${ev.tick}: ${i.bone ?? 'a ball'} struck the ${i.with} at ${i.speed} m/s`);
});
const sub = await client.subscribe(world, { events: ['impact'] });
await new Promise((r) => setTimeout(r, 1000));
const { snapshot, info } = sub.sample();
const head = snapshot.entities.find((e) => e.entity === entity).bones.find((b) => b.name === 'head');
console.log(`drawn ${info.delayMs.toFixed(1)} ms behind: the head at ${head.p.map((x) => x.toFixed(3))}`);
const ray = await client.raycast(world, [head.p[0] - 3, head.p[1], head.p[2]], [1, 0, 0], { seenTick: info.tickA });
console.log('the ray hit', ray.hit);
const kill = await client.kill(world, entity, ray.hit.point, [60, 0, 0], { seenTick: info.tickA });
console.log(`killed: the impulse took the ${kill.bone}`);
await new Promise((r) => setTimeout(r, 2000));
await client.destroyWorld(world);
client.close();
