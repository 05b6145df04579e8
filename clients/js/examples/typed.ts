// Type-checked with `tsc --noEmit -p clients/js` (tests): the Node example,
// typed. Not run: examples/node.mjs is its runnable twin.
import WebSocket from 'ws';
import { RagdollClient, RagdollError, type Snapshot, type ImpactsEvent } from '../index.js';

async function main(url: string): Promise<void> {
  const client = await RagdollClient.connect(url, { WebSocket });
  const { world } = await client.createWorld('typed');
  const { entity } = await client.spawnCharacter(world, [0, 0, 0], { clip: 'walk' });
  client.on('log', (text: string) => console.warn(text));
  client.on('impacts', (ev: ImpactsEvent) => {
    for (const i of ev.impacts) console.log(`${i.bone ?? 'ball'} struck the ${i.with} at ${i.speed} m/s`);
  });
  const sub = await client.subscribe(world, { events: ['impact'] }, (s: Snapshot) => {
    const hero = s.entities.find((e) => e.entity === entity);
    if (hero?.bones) console.log(s.tick, hero.bones[0].p[2]);
    // With a bytes_per_s budget a snapshot is a partial frame: every entity
    // known, the ones it carried named.
    if (s.partial) console.log(`${s.carried?.length ?? 0} of ${s.entities.length} carried; hero from wire tick ${hero?.tick16}`);
  });
  const drawn = sub.sample();
  const seenTick: number | undefined = drawn?.info.tickA;
  const ray = await client.raycast(world, [-3, 1.57, 1], [1, 0, 0], { seenTick });
  if (ray.hit?.kind === 'bone') {
    const kill = await client.kill(world, entity, ray.hit.point, [40, 0, 0], { seenTick, bone: ray.hit.bone });
    console.log(`killed at the ${kill.bone}`);
  }
  try {
    await client.kill(world, 424242, [0, 1, 0], [1, 0, 0]);
  } catch (e) {
    if (e instanceof RagdollError && e.code === 'not_found') console.log('no such entity');
  }
  client.close();
}

void main('ws://127.0.0.1:8080/ws');
