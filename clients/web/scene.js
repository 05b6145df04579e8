// The three.js side: renderer, camera and orbit controls, the static world
// (ground, grid, platforms), the entity bodies, and the screen-space queries
// that picking and the test need. Y is up and units are metres, as on the wire.
import * as THREE from 'three';
import { OrbitControls } from 'three/addons/controls/OrbitControls.js';
import { createBody, topologyKey } from './bodies.js';

const BACKGROUND = 0x111418;
const PICK_SLOP_PX = 10; // how far outside a particle's disc a click still grabs it

export class WorldView {
  constructor(canvas) {
    this.canvas = canvas;
    // On a software rasterizer (SwiftShader in headless Chromium, llvmpipe)
    // MSAA and shadow maps cost two thirds of the frame rate: drop them there.
    this.software = isSoftwareGL();
    this.renderer = new THREE.WebGLRenderer({ canvas, antialias: !this.software });
    // three.js r163+ only creates WebGL2 contexts; check rather than assume.
    this.webgl2 = typeof WebGL2RenderingContext !== 'undefined' &&
      this.renderer.getContext() instanceof WebGL2RenderingContext;
    this.renderer.setPixelRatio(Math.min(window.devicePixelRatio, this.software ? 1 : 2));
    this.renderer.shadowMap.enabled = !this.software;
    this.renderer.toneMapping = THREE.ACESFilmicToneMapping;

    this.scene = new THREE.Scene();
    this.scene.background = new THREE.Color(BACKGROUND);
    this.scene.fog = new THREE.Fog(BACKGROUND, 18, 45);

    this.camera = new THREE.PerspectiveCamera(50, 1, 0.1, 200);
    this.camera.position.set(0, 2.5, 7);
    this.controls = new OrbitControls(this.camera, canvas);
    this.controls.target.set(0, 1.5, 0);
    this.controls.enableDamping = true;
    this.controls.maxPolarAngle = Math.PI * 0.495; // stay above the ground
    this.controls.minDistance = 1;
    this.controls.maxDistance = 40;
    this.controls.update();

    this.addLightsAndGround();
    this.statics = new THREE.Group();
    this.scene.add(this.statics);
    this.addDragMarker();

    this.bodies = new Map(); // entity id -> Body
    this.selected = new Set(); // entity ids
    // Interpolation: bodies show the segment between the last two snapshots,
    // from the previous one when the newest arrives to the newest one about
    // an interval (measured as it goes) later: at most one interval behind.
    this.lastSnapshotAt = 0;
    this.interval = 1000 / 30;

    this.resize();
    new ResizeObserver(() => this.resize()).observe(canvas);
  }

  addLightsAndGround() {
    this.scene.add(new THREE.HemisphereLight(0xcfe3ff, 0x2a2f36, 1.6));
    const sun = new THREE.DirectionalLight(0xffffff, 2.2);
    sun.position.set(4, 9, 6);
    sun.castShadow = true;
    sun.shadow.mapSize.set(1024, 1024);
    Object.assign(sun.shadow.camera, { left: -7, right: 7, top: 7, bottom: -7, near: 1, far: 30 });
    sun.shadow.camera.updateProjectionMatrix();
    sun.shadow.bias = -0.0005;
    sun.shadow.normalBias = 0.02;
    this.scene.add(sun);

    this.ground = new THREE.Mesh(
      new THREE.PlaneGeometry(100, 100),
      // Lambert, not PBR: the ground covers half the screen and is matte
      // anyway, and this keeps software rendering (SwiftShader) usable.
      // Pushed back in depth so the grid lines drawn on it never z-fight.
      new THREE.MeshLambertMaterial({
        color: 0x1d2228,
        polygonOffset: true, polygonOffsetFactor: 1, polygonOffsetUnits: 4,
      }));
    this.ground.rotation.x = -Math.PI / 2;
    this.ground.receiveShadow = true;
    this.scene.add(this.ground);

    this.scene.add(makeGrid(10, 0x4a5663, 0x2c343d));
  }

  addDragMarker() {
    // While dragging: a small ball at the target and a tether to the particle.
    this.dragTarget = new THREE.Mesh(
      new THREE.SphereGeometry(0.035, 12, 8),
      new THREE.MeshBasicMaterial({ color: 0xffffff }));
    const geo = new THREE.BufferGeometry();
    geo.setAttribute('position', new THREE.BufferAttribute(new Float32Array(6), 3));
    this.dragLine = new THREE.Line(geo, new THREE.LineBasicMaterial({ color: 0xffffff, transparent: true, opacity: 0.6 }));
    this.dragLine.frustumCulled = false;
    this.drag = null; // { entity, particle, target: Vector3 }
    this.dragTarget.visible = this.dragLine.visible = false;
    this.scene.add(this.dragTarget, this.dragLine);
  }

  resize() {
    const w = this.canvas.clientWidth;
    const h = this.canvas.clientHeight;
    if (w === 0 || h === 0) return;
    this.renderer.setSize(w, h, false);
    this.camera.aspect = w / h;
    this.camera.updateProjectionMatrix();
  }

  /** Static colliders from the subscribe reply. */
  setStatics(statics) {
    for (const o of [...this.statics.children]) {
      o.geometry.dispose();
      o.material.dispose();
      o.removeFromParent();
    }
    this.ground.visible = statics?.ground !== false;
    for (const box of statics?.boxes ?? []) {
      const [hx, hy, hz] = box.half_extents;
      const mesh = new THREE.Mesh(
        new THREE.BoxGeometry(2 * hx, 2 * hy, 2 * hz),
        new THREE.MeshLambertMaterial({ color: 0x56616e }));
      mesh.position.fromArray(box.center);
      mesh.castShadow = mesh.receiveShadow = true;
      this.statics.add(mesh);
    }
  }

  /** Drops every body (new subscription, world gone). */
  clear() {
    for (const b of this.bodies.values()) b.dispose();
    this.bodies.clear();
    this.setDrag(null);
    this.lastSnapshotAt = 0;
  }

  /**
   * Applies one snapshot. Entities carrying topology are (re)built; others
   * get new positions; bodies absent from the snapshot are removed. Returns
   * the ids seen without topology that have no body yet (to describe).
   */
  applySnapshot(snap, now) {
    if (this.lastSnapshotAt > 0) {
      const dt = THREE.MathUtils.clamp(now - this.lastSnapshotAt, 5, 250);
      this.interval += 0.2 * (dt - this.interval);
    }
    this.lastSnapshotAt = now;
    const seen = new Set();
    const unknown = [];
    for (const e of snap.entities) {
      seen.add(e.entity);
      const body = this.bodies.get(e.entity);
      if ('sticks' in e || 'cols' in e || 'radii' in e || 'capsules' in e) {
        this.setBody(e);
      } else if (body?.accepts(e)) {
        body.setTarget(e);
      } else {
        unknown.push(e.entity);
      }
    }
    for (const [id, body] of this.bodies) {
      if (!seen.has(id)) {
        body.dispose();
        this.bodies.delete(id);
      }
    }
    return unknown;
  }

  /**
   * (Re)builds a body from a record with topology (snapshot entity or
   * describe reply). Topology comes again for every entity after any spawn
   * or despawn; a body whose topology did not change just moves on.
   */
  setBody(rec) {
    const old = this.bodies.get(rec.entity);
    if (old && old.topologyKey === topologyKey(rec)) {
      old.setTarget(rec);
      return;
    }
    old?.dispose();
    const body = createBody(rec);
    body.topologyKey = topologyKey(rec);
    body.setSelected?.(this.selected.has(rec.entity));
    this.bodies.set(rec.entity, body);
    this.scene.add(body.group);
  }

  /** Marks these entity ids as selected (characters show a ring and glow). */
  setSelected(ids) {
    this.selected = new Set(ids);
    for (const [id, body] of this.bodies) body.setSelected?.(this.selected.has(id));
  }

  setDrag(drag) {
    this.drag = drag;
    this.dragTarget.visible = this.dragLine.visible = drag !== null;
  }

  render() {
    // Clock of the snapshot arrivals, not the frame's timestamp: that one
    // may predate a snapshot handled in the same frame.
    const now = performance.now();
    const alpha = THREE.MathUtils.clamp((now - this.lastSnapshotAt) / this.interval, 0, 1);
    for (const body of this.bodies.values()) body.interpolate(alpha);
    if (this.drag) {
      const p = this.positionOf(this.drag.entity, this.drag.particle);
      if (p) {
        this.dragTarget.position.copy(this.drag.target);
        const attr = this.dragLine.geometry.attributes.position;
        attr.setXYZ(0, p.x, p.y, p.z);
        attr.setXYZ(1, this.drag.target.x, this.drag.target.y, this.drag.target.z);
        attr.needsUpdate = true;
      }
    }
    this.controls.update();
    this.renderer.render(this.scene, this.camera);
  }

  /** Rendered position of a particle, or null. */
  positionOf(entity, particle, out = new THREE.Vector3()) {
    const body = this.bodies.get(entity);
    if (!body?.pos || !(particle >= 0 && particle < body.n)) return null;
    return out.fromArray(body.pos, 3 * particle);
  }

  /**
   * Projects a world point to page coordinates (CSS px relative to the
   * viewport). Also returns the view depth (m, > 0 in front of the camera).
   */
  project(p, rect = this.canvas.getBoundingClientRect()) {
    const depth = -tmpV.copy(p).applyMatrix4(this.camera.matrixWorldInverse).z;
    tmpV.copy(p).project(this.camera);
    return {
      x: rect.left + (tmpV.x + 1) / 2 * rect.width,
      y: rect.top + (1 - tmpV.y) / 2 * rect.height,
      depth,
    };
  }

  /** Where a particle is drawn on the page, for the test; null if hidden or unknown. */
  screenOf(entity, particle) {
    const p = this.positionOf(entity, particle);
    if (!p) return null;
    const s = this.project(p);
    return s.depth > 0 ? { x: s.x, y: s.y } : null;
  }

  /** Where a bone's centre (by name or index) is drawn on the page; null if hidden or unknown. */
  screenOfBone(entity, bone) {
    const p = this.bodies.get(entity)?.meshes ? this.bodies.get(entity).positionOf(bone) : null;
    if (!p) return null;
    const s = this.project(p);
    return s.depth > 0 ? { x: s.x, y: s.y } : null;
  }

  /**
   * The particle under a page point: every particle is projected with its
   * on-screen radius; a click inside a disc (or within PICK_SLOP_PX of it)
   * hits, the smallest miss distance wins and, among particles the point is
   * inside of, the one nearest the camera. Returns { entity, particle, position, miss, depth }
   * (miss in px, 0 when the point is inside the disc; depth in m) or null.
   */
  pick(clientX, clientY) {
    const rect = this.canvas.getBoundingClientRect();
    // Pixels per metre at unit depth: half the viewport over tan(fov / 2).
    const pxPerM = rect.height / 2 / Math.tan(THREE.MathUtils.degToRad(this.camera.fov) / 2);
    let best = null;
    const p = new THREE.Vector3();
    for (const body of this.bodies.values()) {
      if (!body.pos) continue; // a rigid body: see raycast()
      for (let i = 0; i < body.n; i++) {
        p.fromArray(body.pos, 3 * i);
        const s = this.project(p, rect);
        if (s.depth <= this.camera.near) continue;
        const rPx = body.radii[i] * pxPerM / s.depth;
        const miss = Math.max(0, Math.hypot(s.x - clientX, s.y - clientY) - rPx);
        if (miss > PICK_SLOP_PX) continue;
        if (!best || miss < best.miss || (miss === best.miss && s.depth < best.depth)) {
          best = { entity: body.id, particle: i, position: p.clone(), miss, depth: s.depth };
        }
      }
    }
    return best;
  }

  /**
   * The rigid body (character bone or ball) under a page point, by a ray
   * against the meshes as last drawn. Returns { entity, bone (name, null for
   * a ball), point (the hit on the surface), direction (the ray's, unit),
   * depth } or null.
   */
  raycast(clientX, clientY) {
    const meshes = [];
    for (const body of this.bodies.values()) if (body.meshes) meshes.push(...body.meshes);
    if (meshes.length === 0) return null;
    this.setRay(clientX, clientY);
    const hit = raycaster.intersectObjects(meshes, false)[0];
    if (!hit) return null;
    const depth = -tmpV.copy(hit.point).applyMatrix4(this.camera.matrixWorldInverse).z;
    return {
      entity: hit.object.userData.entity, bone: hit.object.userData.bone,
      point: hit.point, direction: raycaster.ray.direction.clone(), depth,
    };
  }

  /**
   * What a press at a page point would take: { type: 'particle', ...pick() }
   * or { type: 'rigid', ...raycast() }, or null. A capsule hit by the ray wins
   * over a particle the pointer is merely near (PICK_SLOP_PX) or that lies
   * behind it; a particle the pointer is on, in front, wins over the capsule.
   */
  pickAt(clientX, clientY) {
    const particle = this.pick(clientX, clientY);
    const rigid = this.raycast(clientX, clientY);
    if (rigid && (!particle || particle.miss > 0 || particle.depth > rigid.depth)) {
      return { type: 'rigid', ...rigid };
    }
    return particle && { type: 'particle', ...particle };
  }

  /** The view ray through a page point: { origin, direction } (unit), world space. */
  rayAt(clientX, clientY) {
    this.setRay(clientX, clientY);
    return { origin: raycaster.ray.origin.clone(), direction: raycaster.ray.direction.clone() };
  }

  setRay(clientX, clientY) {
    const rect = this.canvas.getBoundingClientRect();
    tmpNdc.set(
      ((clientX - rect.left) / rect.width) * 2 - 1,
      -((clientY - rect.top) / rect.height) * 2 + 1);
    raycaster.setFromCamera(tmpNdc, this.camera);
  }

  /** The point under a page position on a plane, or null if the ray misses it. */
  pointOnPlane(clientX, clientY, plane) {
    this.setRay(clientX, clientY);
    return raycaster.ray.intersectPlane(plane, new THREE.Vector3());
  }

  /** A plane through a point, facing the camera (the drag plane). */
  facingPlane(point) {
    const normal = this.camera.getWorldDirection(new THREE.Vector3());
    return new THREE.Plane().setFromNormalAndCoplanarPoint(normal, point);
  }
}

// A 1 m grid over [-half, half]² on y = 0, like THREE.GridHelper but with
// every line cut into 1 m segments: some software rasterizers (SwiftShader,
// as in headless Chromium) drop a whole line that crosses the camera plane.
function makeGrid(half, axisColor, lineColor) {
  const pos = [];
  const col = [];
  const a = new THREE.Color(axisColor);
  const l = new THREE.Color(lineColor);
  for (let i = -half; i <= half; i++) {
    const c = i === 0 ? a : l;
    for (let j = -half; j < half; j++) {
      pos.push(i, 0, j, i, 0, j + 1, j, 0, i, j + 1, 0, i);
      for (let k = 0; k < 4; k++) col.push(c.r, c.g, c.b);
    }
  }
  const geo = new THREE.BufferGeometry();
  geo.setAttribute('position', new THREE.Float32BufferAttribute(pos, 3));
  geo.setAttribute('color', new THREE.Float32BufferAttribute(col, 3));
  return new THREE.LineSegments(geo, new THREE.LineBasicMaterial({ vertexColors: true }));
}

// Whether WebGL2 runs on a CPU rasterizer, judged from the renderer's name
// on a throwaway context.
function isSoftwareGL() {
  const gl = document.createElement('canvas').getContext('webgl2');
  if (!gl) return false;
  const info = gl.getExtension('WEBGL_debug_renderer_info');
  const name = String(gl.getParameter(info ? info.UNMASKED_RENDERER_WEBGL : gl.RENDERER));
  gl.getExtension('WEBGL_lose_context')?.loseContext();
  return /swiftshader|llvmpipe|softpipe|software/i.test(name);
}

const tmpV = new THREE.Vector3();
const tmpNdc = new THREE.Vector2();
const raycaster = new THREE.Raycaster();
