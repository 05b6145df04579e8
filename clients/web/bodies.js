// Meshes of the simulated entities. A body is built from an entity's topology
// (sticks, radii, pinned, cols/rows) and then only moves: each snapshot gives
// new particle positions, and every frame the body shows a blend of the
// previous and the newest ones (see WorldView.render).
import * as THREE from 'three';

const RAGDOLL_COLORS = [0xff8a5c, 0x5fb3ff, 0xffd166, 0x7ee0a1, 0xc792ea, 0xff6b9a];
const DEFAULT_RADIUS = 0.03;

// Shared, never disposed: every body uses the same unit shapes, scaled.
const SPHERE = new THREE.SphereGeometry(1, 16, 12);
const CYLINDER = new THREE.CylinderGeometry(1, 1, 1, 8, 1, true); // along +Y, centred

const tmpM = new THREE.Matrix4();
const tmpQ = new THREE.Quaternion();
const tmpS = new THREE.Vector3();
const tmpA = new THREE.Vector3();
const tmpB = new THREE.Vector3();
const UP = new THREE.Vector3(0, 1, 0);
const NO_ROTATION = new THREE.Quaternion();

/** Creates the body for a topology-bearing entity record (snapshot or describe). */
export function createBody(rec) {
  switch (rec.kind) {
    case 'ragdoll': return new Ragdoll(rec);
    case 'rope': return new Rope(rec);
    case 'cloth': return new Cloth(rec);
    default: return new Points(rec); // a future kind still shows up
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
    this.setTarget(rec.particles, true);
    this.group = new THREE.Group();
    this.group.name = `${this.kind} ${this.id}`;
  }

  /** Slot part of the id, stable across the entity's life: picks a colour. */
  get slot() {
    return this.id % 4294967296;
  }

  /**
   * New snapshot positions: the newest becomes the previous one, so the
   * body shows the segment between the last two snapshots. With jump, no
   * blending (a new body).
   */
  setTarget(particles, jump = false) {
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
      if (o.geometry && o.geometry !== SPHERE && o.geometry !== CYLINDER) o.geometry.dispose();
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
    for (let r = 0; r < rows; r++) {
      for (let c = 0; c < cols; c++) {
        const i = r * cols + c;
        uv[2 * i] = c / (cols - 1);
        uv[2 * i + 1] = 1 - r / (rows - 1);
        if (r + 1 < rows && c + 1 < cols) {
          index.push(i, i + cols, i + 1, i + 1, i + cols, i + cols + 1);
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
