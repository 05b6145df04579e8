// Meshes of the simulated entities. A body is built from an entity's topology
// (sticks, radii, pinned, cols/rows for particle kinds; skeleton and capsules
// for characters and balls) and then only moves: each snapshot gives new
// particle positions or bone poses, and every frame the body shows a blend of
// the previous and the newest ones (see WorldView.render).
import * as THREE from 'three';

const RAGDOLL_COLORS = [0xff8a5c, 0x5fb3ff, 0xffd166, 0x7ee0a1, 0xc792ea, 0xff6b9a];
const DEFAULT_RADIUS = 0.03;

// Shared, never disposed: every body uses the same unit shapes, scaled.
const SPHERE = new THREE.SphereGeometry(1, 16, 12);
const CYLINDER = new THREE.CylinderGeometry(1, 1, 1, 8, 1, true); // along +Y, centred
SPHERE.userData.shared = CYLINDER.userData.shared = true;

const tmpM = new THREE.Matrix4();
const tmpQ = new THREE.Quaternion();
const tmpS = new THREE.Vector3();
const tmpA = new THREE.Vector3();
const tmpB = new THREE.Vector3();
const UP = new THREE.Vector3(0, 1, 0);
const NO_ROTATION = new THREE.Quaternion();

/** Creates the body for an entity record with its topology (see SnapshotStream.withTopology). */
export function createBody(rec) {
  switch (rec.kind) {
    case 'ragdoll': return new Ragdoll(rec);
    case 'rope': return new Rope(rec);
    case 'cloth': return rec.garment === 'hair' ? new Strands(rec) : new Cloth(rec);
    case 'character': return new Character(rec);
    case 'ball': return new Ball(rec);
    case 'softbody': return new SoftBody(rec);
    default:
      // A future kind still shows up: as points if it has particles, as
      // capsules if it has poses.
      return rec.particles ? new Points(rec) : new Character(rec);
  }
}

class Body {
  constructor(rec) {
    this.id = rec.entity;
    this.kind = rec.kind;
    this.n = rec.particles.length;
    this.radii = Float32Array.from({ length: this.n }, (_, i) => rec.radii?.[i] ?? DEFAULT_RADIUS);
    this.sticks = rec.sticks ?? [];
    this.pinned = rec.pinned ?? [];
    this.names = rec.names ?? null;
    // prev -> next: the last two snapshots; pos: what is on screen.
    this.prev = new Float32Array(3 * this.n);
    this.next = new Float32Array(3 * this.n);
    this.pos = new Float32Array(3 * this.n);
    this.setTarget(rec, true);
    this.group = new THREE.Group();
    this.group.name = `${this.kind} ${this.id}`;
  }

  /** Slot part of the id, stable across the entity's life: picks a colour. */
  get slot() {
    return this.id % 4294967296;
  }

  /** Whether a snapshot record fits this body. */
  accepts(rec) {
    return rec.particles?.length === this.n;
  }

  /**
   * New snapshot positions: the newest becomes the previous one, so the
   * body shows the segment between the last two snapshots. With jump, no
   * blending (a new body).
   */
  setTarget(rec, jump = false) {
    const particles = rec.particles;
    if (!jump) this.prev.set(this.next);
    for (let i = 0; i < this.n; i++) {
      const p = particles[i];
      this.next[3 * i] = p[0];
      this.next[3 * i + 1] = p[1];
      this.next[3 * i + 2] = p[2];
    }
    if (jump) {
      this.prev.set(this.next);
      this.pos.set(this.next);
    }
  }

  /** Blends prev -> next by alpha in [0, 1] into pos and updates the meshes. */
  interpolate(alpha) {
    const { prev, next, pos } = this;
    for (let i = 0; i < pos.length; i++) pos[i] = prev[i] + (next[i] - prev[i]) * alpha;
    this.update();
  }

  update() {}

  dispose() {
    this.group.traverse((o) => {
      if (o.geometry && !o.geometry.userData.shared) o.geometry.dispose();
      if (o.material) o.material.dispose();
      if (o.isInstancedMesh) o.dispose();
    });
    this.group.removeFromParent();
  }

  // Instanced spheres at the given particles (all when indices is null).
  makeSpheres(material, indices = null, scale = 1, minRadius = 0) {
    const idx = indices ?? Array.from({ length: this.n }, (_, i) => i);
    const mesh = new THREE.InstancedMesh(SPHERE, material, Math.max(1, idx.length));
    mesh.count = idx.length;
    mesh.instanceMatrix.setUsage(THREE.DynamicDrawUsage);
    // Instances move every frame: a cached bounding sphere would go stale.
    mesh.frustumCulled = false;
    mesh.castShadow = true;
    mesh.userData.indices = idx;
    mesh.userData.scale = scale;
    mesh.userData.minRadius = minRadius;
    this.group.add(mesh);
    return mesh;
  }

  placeSpheres(mesh) {
    const { indices, scale, minRadius } = mesh.userData;
    for (let k = 0; k < indices.length; k++) {
      const i = indices[k];
      const r = Math.max(minRadius, this.radii[i] * scale);
      tmpA.fromArray(this.pos, 3 * i);
      tmpM.compose(tmpA, NO_ROTATION, tmpS.set(r, r, r));
      mesh.setMatrixAt(k, tmpM);
    }
    mesh.instanceMatrix.needsUpdate = true;
  }
}

// Particles as spheres, sticks as thin cylinders ("bones").
class Ragdoll extends Body {
  constructor(rec) {
    super(rec);
    const color = new THREE.Color(RAGDOLL_COLORS[this.slot % RAGDOLL_COLORS.length]);
    this.joints = this.makeSpheres(new THREE.MeshStandardMaterial({ color, roughness: 0.55 }));
    const boneMat = new THREE.MeshStandardMaterial({
      color: color.clone().multiplyScalar(0.7),
      roughness: 0.7,
    });
    this.bones = new THREE.InstancedMesh(CYLINDER, boneMat, Math.max(1, this.sticks.length));
    this.bones.count = this.sticks.length;
    this.bones.instanceMatrix.setUsage(THREE.DynamicDrawUsage);
    this.bones.frustumCulled = false;
    this.bones.castShadow = true;
    // Thinner than the joints they join, so the spheres read as the body.
    this.boneRadii = this.sticks.map(([a, b]) =>
      THREE.MathUtils.clamp(0.3 * Math.min(this.radii[a], this.radii[b]), 0.008, 0.025));
    this.group.add(this.bones);
    this.update();
  }

  update() {
    this.placeSpheres(this.joints);
    for (let k = 0; k < this.sticks.length; k++) {
      const [a, b] = this.sticks[k];
      tmpA.fromArray(this.pos, 3 * a);
      tmpB.fromArray(this.pos, 3 * b);
      const len = tmpA.distanceTo(tmpB);
      tmpB.sub(tmpA);
      if (len > 1e-6) tmpQ.setFromUnitVectors(UP, tmpB.divideScalar(len));
      else tmpQ.identity();
      tmpA.fromArray(this.pos, 3 * a).lerp(tmpB.fromArray(this.pos, 3 * b), 0.5);
      const r = this.boneRadii[k];
      tmpM.compose(tmpA, tmpQ, tmpS.set(r, len, r));
      this.bones.setMatrixAt(k, tmpM);
    }
    this.bones.instanceMatrix.needsUpdate = true;
  }
}

// A line through the particles plus small beads; the anchor stands out.
class Rope extends Body {
  constructor(rec) {
    super(rec);
    const geo = new THREE.BufferGeometry();
    geo.setAttribute('position', new THREE.BufferAttribute(this.pos, 3).setUsage(THREE.DynamicDrawUsage));
    this.line = new THREE.Line(geo, new THREE.LineBasicMaterial({ color: 0xe8c9a0 }));
    this.line.frustumCulled = false;
    this.group.add(this.line);
    this.beads = this.makeSpheres(
      new THREE.MeshStandardMaterial({ color: 0xd9a86c, roughness: 0.8 }), null, 1, 0.015);
    if (this.pinned.length > 0) {
      this.pins = this.makeSpheres(
        new THREE.MeshStandardMaterial({ color: 0xffd166, emissive: 0x553300 }), this.pinned, 1.8, 0.035);
    }
    this.update();
  }

  update() {
    this.line.geometry.attributes.position.needsUpdate = true;
    this.placeSpheres(this.beads);
    if (this.pins) this.placeSpheres(this.pins);
  }
}

// A double-sided sheet over the cols x rows grid (row-major), with a checker
// texture so folds are visible, and markers on the pinned particles.
class Cloth extends Body {
  constructor(rec) {
    super(rec);
    const cols = rec.cols ?? 0;
    const rows = rec.rows ?? 0;
    if (cols * rows !== this.n || cols < 2 || rows < 2) {
      // Not a grid after all: show the particles rather than nothing.
      this.points = this.makeSpheres(new THREE.MeshStandardMaterial({ color: 0x9fb4c8 }), null, 1, 0.015);
      this.update();
      return;
    }
    const geo = new THREE.BufferGeometry();
    geo.setAttribute('position', new THREE.BufferAttribute(this.pos, 3).setUsage(THREE.DynamicDrawUsage));
    const uv = new Float32Array(2 * this.n);
    const index = [];
    // A skirt (wrap) is closed round: its last column joins the first.
    const across = rec.wrap ? cols : cols - 1;
    // A torn cloth (PROTOCOL.md §4 `torn`) lacks some sticks: a triangle is
    // drawn only while its two grid edges still hold.
    const held = new Set(this.sticks.map(([a, b]) => (a < b ? `${a},${b}` : `${b},${a}`)));
    const has = (a, b) => held.size === 0 || held.has(a < b ? `${a},${b}` : `${b},${a}`);
    for (let r = 0; r < rows; r++) {
      for (let c = 0; c < cols; c++) {
        const i = r * cols + c;
        uv[2 * i] = c / (cols - 1);
        uv[2 * i + 1] = 1 - r / (rows - 1);
        if (r + 1 < rows && c < across) {
          const j = r * cols + (c + 1) % cols;
          if (has(i, i + cols) && has(i, j)) index.push(i, i + cols, j);
          if (has(j, j + cols) && has(i + cols, j + cols)) index.push(j, i + cols, j + cols);
        }
      }
    }
    geo.setAttribute('uv', new THREE.BufferAttribute(uv, 2));
    geo.setIndex(index);
    const map = checkerTexture();
    map.repeat.set((cols - 1) / 2, (rows - 1) / 2);
    this.sheet = new THREE.Mesh(geo, new THREE.MeshStandardMaterial({
      map,
      side: THREE.DoubleSide,
      roughness: 0.85,
    }));
    this.sheet.frustumCulled = false;
    this.sheet.castShadow = true;
    this.group.add(this.sheet);
    if (this.pinned.length > 0) {
      this.pins = this.makeSpheres(
        new THREE.MeshStandardMaterial({ color: 0xffd166, emissive: 0x553300 }), this.pinned, 1.5, 0.025);
    }
    this.update();
  }

  update() {
    if (this.points) {
      this.placeSpheres(this.points);
      return;
    }
    const geo = this.sheet.geometry;
    geo.attributes.position.needsUpdate = true;
    geo.computeVertexNormals(); // the sheet bends every frame
    if (this.pins) this.placeSpheres(this.pins);
  }

  dispose() {
    this.sheet?.material.map?.dispose();
    super.dispose();
  }
}

// Hair: strands as lines along the sticks, with small beads.
class Strands extends Body {
  constructor(rec) {
    super(rec);
    const geo = new THREE.BufferGeometry();
    geo.setAttribute('position', new THREE.BufferAttribute(this.pos, 3).setUsage(THREE.DynamicDrawUsage));
    // Only the sticks between neighbours (a row apart): bend sticks skip one.
    const cols = rec.cols ?? 1;
    geo.setIndex(this.sticks.filter(([a, b]) => Math.abs(b - a) === cols).flat());
    this.lines = new THREE.LineSegments(geo, new THREE.LineBasicMaterial({ color: 0x6b4a2b }));
    this.lines.frustumCulled = false;
    this.group.add(this.lines);
    this.beads = this.makeSpheres(new THREE.MeshStandardMaterial({ color: 0x7a5533, roughness: 0.9 }), null, 0.6, 0.008);
    this.update();
  }

  update() {
    this.lines.geometry.attributes.position.needsUpdate = true;
    this.placeSpheres(this.beads);
  }
}

// A soft body (PROTOCOL.md §5.1: its sticks are the lattice edges between
// surface particles): its particles as translucent spheres of their radii,
// which fill the body's volume, and its surface lattice as lines.
const SOFT_COLORS = [0x7ee0a1, 0xc792ea, 0x5fb3ff, 0xffd166];
class SoftBody extends Body {
  constructor(rec) {
    super(rec);
    const color = new THREE.Color(SOFT_COLORS[this.slot % SOFT_COLORS.length]);
    this.blobs = this.makeSpheres(new THREE.MeshStandardMaterial({
      color, roughness: 0.35, transparent: true, opacity: 0.55, depthWrite: false,
    }));
    const index = [];
    for (const [a, b] of this.sticks) index.push(a, b);
    const geo = new THREE.BufferGeometry();
    geo.setAttribute('position', new THREE.BufferAttribute(this.pos, 3).setUsage(THREE.DynamicDrawUsage));
    geo.setIndex(index);
    this.lines = new THREE.LineSegments(geo, new THREE.LineBasicMaterial({ color: color.clone().multiplyScalar(0.6) }));
    this.lines.frustumCulled = false;
    this.group.add(this.lines);
    this.update();
  }

  update() {
    this.placeSpheres(this.blobs);
    this.lines.geometry.attributes.position.needsUpdate = true;
  }
}

// Unknown kinds: just the particles.
class Points extends Body {
  constructor(rec) {
    super(rec);
    this.points = this.makeSpheres(new THREE.MeshStandardMaterial({ color: 0xcccccc }), null, 1, 0.02);
    this.update();
  }

  update() {
    this.placeSpheres(this.points);
  }
}

// Colours of a character's states, so what it is doing shows at a glance
// (the panel's legend uses the same table).
export const STATE_COLORS = {
  animated: 0x4fd1c5,
  ragdoll: 0xff5d5d,
  getting_up: 0xffc14d,
  partial: 0xb58cff,
};
const UNKNOWN_STATE_COLOR = 0xb0b0b0;
const DEFAULT_CAPSULE = [0.05, 0.1]; // [radius, half length], should topology be missing

// Capsule shapes are shared by every body with the same bone sizes (all
// humanoids, all dogs) and never disposed. A capsule runs along the bone's
// local +X, three.js builds it along +Y: rotate it once here.
const capsules = new Map();
function capsuleGeometry(radius, halfLength) {
  const key = `${radius}|${halfLength}`;
  let geo = capsules.get(key);
  if (!geo) {
    geo = new THREE.CapsuleGeometry(radius, 2 * halfLength, 5, 12);
    geo.rotateZ(-Math.PI / 2);
    geo.computeBoundingSphere();
    geo.userData.shared = true;
    capsules.set(key, geo);
  }
  return geo;
}

// A ball is a sphere in eight alternating octants (a beach ball), so that
// its spin shows.
const balls = new Map();
function ballGeometry(radius) {
  let geo = balls.get(radius);
  if (!geo) {
    geo = new THREE.SphereGeometry(radius, 24, 16).toNonIndexed();
    const pos = geo.attributes.position;
    const col = new Float32Array(pos.count * 3);
    const light = new THREE.Color(0xf2f2f2);
    const dark = new THREE.Color(0xe05a47);
    for (let t = 0; t < pos.count; t += 3) {
      // One colour per triangle, from its centroid, so seams stay sharp.
      let x = 0, y = 0, z = 0;
      for (let k = t; k < t + 3; k++) { x += pos.getX(k); y += pos.getY(k); z += pos.getZ(k); }
      const c = x * y * z >= 0 ? light : dark;
      for (let k = t; k < t + 3; k++) col.set([c.r, c.g, c.b], 3 * k);
    }
    geo.setAttribute('color', new THREE.BufferAttribute(col, 3));
    geo.computeBoundingSphere();
    geo.userData.shared = true;
    balls.set(radius, geo);
  }
  return geo;
}

// The poses of a rigid entity record: a character's bones, or a ball's one body.
function framesOf(rec) {
  if (rec.bones) return rec.bones;
  return rec.p ? [{ name: null, p: rec.p, q: rec.q ?? [0, 0, 0, 1] }] : [];
}

// Rigid bodies (characters, balls): one mesh per bone, posed from the
// snapshot's p (capsule centre, m) and q (unit quaternion x, y, z, w).
// Between snapshots, positions are blended linearly and rotations by slerp.
// Every mesh carries { entity, bone, index } in userData for picking.
class Rigid {
  constructor(rec) {
    const frames = framesOf(rec);
    this.id = rec.entity;
    this.kind = rec.kind;
    this.n = frames.length;
    this.names = frames.map((f) => f.name);
    this.caps = frames.map((_, i) => rec.capsules?.[i] ?? DEFAULT_CAPSULE);
    this.prevP = new Float32Array(3 * this.n);
    this.nextP = new Float32Array(3 * this.n);
    this.prevQ = new Float32Array(4 * this.n);
    this.nextQ = new Float32Array(4 * this.n);
    this.posQ = new Float32Array(4);
    this.group = new THREE.Group();
    this.group.name = `${this.kind} ${this.id}`;
    this.meshes = [];
  }

  get slot() {
    return this.id % 4294967296;
  }

  addMesh(geometry, material, index) {
    const mesh = new THREE.Mesh(geometry, material);
    mesh.castShadow = true;
    mesh.userData = { entity: this.id, bone: this.names[index], index };
    this.meshes.push(mesh);
    this.group.add(mesh);
  }

  accepts(rec) {
    return framesOf(rec).length === this.n;
  }

  setTarget(rec, jump = false) {
    const frames = framesOf(rec);
    if (!jump) {
      this.prevP.set(this.nextP);
      this.prevQ.set(this.nextQ);
    }
    for (let i = 0; i < this.n; i++) {
      this.nextP.set(frames[i].p, 3 * i);
      this.nextQ.set(frames[i].q, 4 * i);
    }
    if (jump) {
      this.prevP.set(this.nextP);
      this.prevQ.set(this.nextQ);
      this.interpolate(1);
    }
  }

  interpolate(alpha) {
    const { prevP, nextP, prevQ, nextQ } = this;
    for (let i = 0; i < this.n; i++) {
      const m = this.meshes[i];
      const a = 3 * i;
      m.position.set(
        prevP[a] + (nextP[a] - prevP[a]) * alpha,
        prevP[a + 1] + (nextP[a + 1] - prevP[a + 1]) * alpha,
        prevP[a + 2] + (nextP[a + 2] - prevP[a + 2]) * alpha);
      // slerpFlat takes the short way round (q and -q are the same rotation).
      THREE.Quaternion.slerpFlat(this.posQ, 0, prevQ, 4 * i, nextQ, 4 * i, alpha);
      m.quaternion.fromArray(this.posQ);
    }
  }

  /** Where bone i (or the bone of that name) is drawn, or null. */
  positionOf(bone, out = new THREE.Vector3()) {
    const i = typeof bone === 'number' ? bone : this.names.indexOf(bone);
    return i >= 0 && i < this.n ? out.copy(this.meshes[i].position) : null;
  }

  dispose() {
    this.group.traverse((o) => {
      if (o.geometry && !o.geometry.userData.shared) o.geometry.dispose();
      if (o.material) o.material.dispose();
    });
    this.group.removeFromParent();
  }
}

// A character: capsule bones in one material whose colour follows the state,
// and, while selected, a glow and a ring on the ground under it.
class Character extends Rigid {
  constructor(rec) {
    super(rec);
    this.skeleton = rec.skeleton ?? null;
    this.state = undefined; // so that setState below always colours it
    this.selected = false;
    this.material = new THREE.MeshStandardMaterial({ roughness: 0.6, metalness: 0.05 });
    for (let i = 0; i < this.n; i++) {
      const [r, h] = this.caps[i];
      this.addMesh(capsuleGeometry(r, h), this.material, i);
    }
    this.ring = new THREE.Mesh(
      new THREE.RingGeometry(0.42, 0.5, 48).rotateX(-Math.PI / 2),
      new THREE.MeshBasicMaterial({ color: 0xffffff, transparent: true, opacity: 0.85, depthWrite: false }));
    this.ring.visible = false;
    this.ring.renderOrder = 1;
    this.group.add(this.ring);
    this.setTarget(rec, true);
    this.setState(rec.state ?? null);
  }

  setTarget(rec, jump = false) {
    super.setTarget(rec, jump);
    if (rec.state !== undefined) this.setState(rec.state);
  }

  setState(state) {
    if (state === this.state) return;
    this.state = state;
    this.material.color.setHex(STATE_COLORS[state] ?? UNKNOWN_STATE_COLOR);
    this.setSelected(this.selected);
  }

  setSelected(on) {
    this.selected = on;
    this.ring.visible = on;
    // A faint glow in the body's own colour: selected, yet the state colour still reads.
    this.material.emissive.copy(this.material.color).multiplyScalar(on ? 0.45 : 0);
  }

  interpolate(alpha) {
    super.interpolate(alpha);
    if (!this.ring.visible) return;
    // Under the middle of the body, whatever pose it is in.
    let x = 0;
    let z = 0;
    for (const m of this.meshes) {
      x += m.position.x;
      z += m.position.z;
    }
    this.ring.position.set(x / this.n, 0.005, z / this.n);
  }
}

// A ball: one sphere of the topology's radius.
class Ball extends Rigid {
  constructor(rec) {
    super(rec);
    const material = new THREE.MeshStandardMaterial({ vertexColors: true, roughness: 0.45 });
    for (let i = 0; i < this.n; i++) this.addMesh(ballGeometry(this.caps[i][0]), material, i);
    this.setTarget(rec, true);
  }
}

function checkerTexture() {
  const a = [0x3f, 0x6e, 0xa8];
  const b = [0xd8, 0xe2, 0xee];
  const data = new Uint8Array(2 * 2 * 4);
  [a, b, b, a].forEach((c, i) => data.set([...c, 255], 4 * i));
  const tex = new THREE.DataTexture(data, 2, 2);
  tex.wrapS = tex.wrapT = THREE.RepeatWrapping;
  tex.magFilter = THREE.NearestFilter;
  tex.colorSpace = THREE.SRGBColorSpace;
  tex.needsUpdate = true;
  return tex;
}
