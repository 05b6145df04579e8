// The manifests in deploy/ (deploy/README.md): every file parses as YAML;
// the core Kubernetes resources validate against Kubernetes' own schemas
// (kubernetes-models, generated from its OpenAPI); and each carries the
// fields the README promises and the server relies on: the Fleet's TCP
// port is the one ragdolld listens on, its Health period leaves room for
// the server's ping interval, the allocation's annotations are keys the
// server reads, the Deployment's probes and volume match its flags. No
// cluster is needed; what needs one is deploy/README.md's walk-through.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { parseAllDocuments } from 'yaml';
import { Deployment } from 'kubernetes-models/apps/v1/Deployment';
import { Service } from 'kubernetes-models/v1/Service';
import { PersistentVolumeClaim } from 'kubernetes-models/v1/PersistentVolumeClaim';
import { Ingress } from 'kubernetes-models/networking.k8s.io/v1/Ingress';
import { Pod } from 'kubernetes-models/v1/Pod';

const DEPLOY = 'deploy';

function load(file) {
  const text = fs.readFileSync(path.join(DEPLOY, file), 'utf8');
  const docs = parseAllDocuments(text);
  for (const d of docs) assert.deepEqual(d.errors, [], `${file}: ${d.errors.join('; ')}`);
  return docs.map((d) => d.toJS());
}

// The value after flag in a container's args.
function flag(args, name) {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
}

// The annotation keys server/app/agones.c reads (ragdolld.dev/...).
const serverKeys = new Set([...fs.readFileSync('server/app/agones.c', 'utf8').matchAll(/"(ragdolld\.dev\/[a-z-]+)"/g)].map((m) => m[1]));

test('every file in deploy/ parses, and every manifest is one of the kinds the README describes', () => {
  const kinds = [];
  for (const dir of ['agones', 'kubernetes']) {
    for (const f of fs.readdirSync(path.join(DEPLOY, dir))) {
      assert.match(f, /\.yaml$/, `${dir}/${f}`);
      for (const doc of load(path.join(dir, f))) kinds.push(`${doc.apiVersion} ${doc.kind}`);
    }
  }
  assert.deepEqual(kinds.sort(), [
    'agones.dev/v1 Fleet',
    'allocation.agones.dev/v1 GameServerAllocation',
    'apps/v1 Deployment',
    'autoscaling.agones.dev/v1 FleetAutoscaler',
    'networking.k8s.io/v1 Ingress',
    'v1 PersistentVolumeClaim',
    'v1 Service',
  ]);
  assert.ok(fs.existsSync(path.join(DEPLOY, 'README.md')));
});

test('the Fleet: a TCP port ragdolld listens on, Health it can keep, the players counter, a valid pod', () => {
  const [fleet] = load('agones/fleet.yaml');
  const gs = fleet.spec.template.spec;
  assert.equal(gs.ports.length, 1);
  assert.equal(gs.ports[0].protocol, 'TCP'); // WebSocket; Agones' default is UDP
  assert.equal(gs.ports[0].portPolicy, 'Dynamic');
  const pod = gs.template;
  new Pod({ metadata: { name: 'x' }, spec: pod.spec }).validate(); // the pod template is a valid PodSpec
  const c = pod.spec.containers[0];
  assert.equal(Number(flag(c.args, '--port')), gs.ports[0].containerPort);
  assert.ok(c.args.includes('--agones'));
  assert.ok(c.resources.requests.cpu && c.resources.limits.memory, 'resources');
  // Health: ragdolld pings every --agones-health s (default 2); Agones wants
  // one per periodSeconds, failureThreshold in a row missed.
  const ping = Number(flag(c.args, '--agones-health') ?? 2);
  assert.ok(gs.health.periodSeconds >= 2 * ping, `period ${gs.health.periodSeconds} s against a ${ping} s ping`);
  assert.ok(gs.health.failureThreshold >= 2);
  assert.ok('players' in gs.counters, 'ragdolld sets the Counter "players"');
  // Beyond loopback the server wants tokens: a mounted secret.
  const auth = flag(c.args, '--auth-file');
  assert.ok(auth, '--auth-file');
  const mount = c.volumeMounts.find((m) => auth.startsWith(m.mountPath + '/'));
  assert.ok(mount, `nothing mounted at ${auth}`);
  assert.ok(pod.spec.volumes.find((v) => v.name === mount.name).secret.secretName);
  assert.equal(pod.spec.securityContext.runAsNonRoot, true);
});

test('the FleetAutoscaler scales that Fleet; the allocation selects it and asks only for what the server reads', () => {
  const [fleet] = load('agones/fleet.yaml');
  const [fas] = load('agones/fleetautoscaler.yaml');
  assert.equal(fas.spec.fleetName, fleet.metadata.name);
  assert.equal(fas.spec.policy.type, 'Buffer');
  const b = fas.spec.policy.buffer;
  assert.ok(b.minReplicas <= b.maxReplicas && b.bufferSize >= 1);
  const [alloc] = load('agones/allocation.yaml');
  assert.equal(alloc.spec.selectors[0].matchLabels['agones.dev/fleet'], fleet.metadata.name);
  assert.deepEqual([...serverKeys].sort(), ['ragdolld.dev/match-id', 'ragdolld.dev/player-tokens', 'ragdolld.dev/solver',
    'ragdolld.dev/template', 'ragdolld.dev/tick-hz', 'ragdolld.dev/world-name']);
  // The example's player tokens are ones the server takes (auth.c's rule).
  const players = alloc.spec.metadata.annotations['ragdolld.dev/player-tokens'].split(',');
  assert.ok(players.length >= 1 && players.length <= 128);
  for (const t of players) assert.match(t, /^[A-Za-z0-9._~-]{16,128}$/);
  const tpl = alloc.spec.metadata.annotations['ragdolld.dev/template'];
  assert.ok(fs.existsSync(path.join('templates', `${tpl}.json`)), `no shipped template ${tpl}`);
  for (const key of Object.keys(alloc.spec.metadata.annotations)) {
    assert.ok(serverKeys.has(key), `${key} is read by no one`);
  }
  const hz = Number(alloc.spec.metadata.annotations['ragdolld.dev/tick-hz']);
  assert.ok(hz >= 1 && hz <= 240);
});

test('the long-lived server: valid resources, probes on /healthz, its state dir on the claim, one pod at a time', () => {
  const [dep] = load('kubernetes/deployment.yaml');
  const [svc] = load('kubernetes/service.yaml');
  const [pvc] = load('kubernetes/pvc.yaml');
  const [ing] = load('kubernetes/ingress.yaml');
  new Deployment(dep).validate();
  new Service(svc).validate();
  new PersistentVolumeClaim(pvc).validate();
  new Ingress(ing).validate();
  const spec = dep.spec.template.spec;
  const c = spec.containers[0];
  const port = c.ports.find((p) => p.name === 'http');
  assert.equal(Number(flag(c.args, '--port')), port.containerPort);
  for (const probe of [c.readinessProbe, c.livenessProbe]) {
    assert.equal(probe.httpGet.path, '/healthz');
    assert.equal(probe.httpGet.port, 'http');
  }
  const ann = dep.spec.template.metadata.annotations;
  assert.equal(ann['prometheus.io/path'], '/metrics');
  assert.equal(Number(ann['prometheus.io/port']), port.containerPort);
  // Its worlds are on the claim, and never two pods on one state dir.
  const dir = flag(c.args, '--state-dir');
  const mount = c.volumeMounts.find((m) => m.mountPath === dir);
  assert.ok(mount, `--state-dir ${dir} is not a mount`);
  assert.equal(spec.volumes.find((v) => v.name === mount.name).persistentVolumeClaim.claimName, pvc.metadata.name);
  assert.equal(dep.spec.strategy.type, 'Recreate');
  assert.equal(dep.spec.replicas, 1);
  assert.ok(spec.terminationGracePeriodSeconds >= 10, 'time to save every world at SIGTERM');
  // The Service and the Ingress reach that port.
  assert.deepEqual(svc.spec.selector, dep.spec.selector.matchLabels);
  assert.equal(svc.spec.ports[0].targetPort, 'http');
  const backend = ing.spec.rules[0].http.paths[0].backend.service;
  assert.equal(backend.name, svc.metadata.name);
  assert.equal(backend.port.name, svc.spec.ports[0].name);
  assert.ok(ing.spec.tls[0].secretName);
});

test('kubernetes-models refuses a broken Deployment (the validation is real)', () => {
  const [dep] = load('kubernetes/deployment.yaml');
  dep.spec.template.spec.containers[0].ports[0].containerPort = 'eighty';
  assert.throws(() => new Deployment(dep).validate(), /containerPort must be integer/);
});

test('the Dockerfile: a HEALTHCHECK on /healthz at the port it serves, ragdollctl in the image, files where ragdolld looks', () => {
  const df = fs.readFileSync('Dockerfile', 'utf8');
  const port = /^CMD \["--port", "(\d+)"\]/m.exec(df)[1];
  assert.match(df, new RegExp(`^HEALTHCHECK [^\\n]*\\\\\\n\\s+CMD curl -fsS -o /dev/null http://127\\.0\\.0\\.1:${port}/healthz`, 'm'));
  assert.match(df, /^COPY --from=build [^\n]*\/usr\/local\/bin\/ragdollctl/m);
  assert.match(df, /^COPY --from=build \/usr\/local\/share\/ragdolld /m);
  assert.match(df, /libcurl4 curl/); // the Agones client's library, the check's tool
  assert.match(df, /-DRD_TEMPLATES_DEFAULT=\/usr\/local\/share\/ragdolld\/templates/);
});
