// The three.js side: renderer, camera and orbit controls, the static world
// (ground, grid, platforms), the entity bodies, and the screen-space queries
// that picking and the test need. Y is up and units are metres, as on the wire.
import * as THREE from 'three';
import { OrbitControls } from 'three/addons/controls/OrbitControls.js';
import { createBody } from './bodies.js';

const BACKGROUND = 0x111418;
const PICK_SLOP_PX = 10; // how far outside a particle's disc a click still grabs it
const FOV = 50; // degrees, vertical
// In a portrait window (a phone) the vertical field of view widens so that
// at least this much shows across, degrees.
const MIN_HFOV = 40;
const DRAG_COLOR = 0xffd166;

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

    this.camera = new THREE.PerspectiveCamera(FOV, 1, 0.1, 200);
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
    // While dragging: a ring around the held particle, a dot at the drag
    // target (where the pointer pulls it) and a line between them. Drawn
    // last and through everything (no depth test): the held particle is
    // often behind a limb or inside a cloth, and the target, right after
    // the grab, inside the particle itself.
    const material = (extra) => new THREE.MeshBasicMaterial({
      color: DRAG_COLOR, depthTest: false, depthWrite: false, transparent: true, ...extra,
    });
    this.dragRing = new THREE.Mesh(new THREE.RingGeometry(0.78, 1, 40), material({ side: THREE.DoubleSide }));
    this.dragTarget = new THREE.Mesh(new THREE.SphereGeometry(1, 12, 8), material({ opacity: 0.9 }));
    const geo = new THREE.BufferGeometry();
    geo.setAttribute('position', new THREE.BufferAttribute(new Float32Array(6), 3));
    this.dragLine = new THREE.Line(geo, new THREE.LineBasicMaterial({
      color: DRAG_COLOR, depthTest: false, depthWrite: false, transparent: true, opacity: 0.9,
    }));
    for (const o of [this.dragRing, this.dragTarget, this.dragLine]) {
      o.frustumCulled = false;
      o.renderOrder = 10;
      o.visible = false;
    }
    this.drag = null; // { entity, particle, target: Vector3 }
    this.scene.add(this.dragRing, this.dragTarget, this.dragLine);
  }

  resize() {
    const w = this.canvas.clientWidth;
    const h = this.canvas.clientHeight;
    if (w === 0 || h === 0) return;
    this.renderer.setSize(w, h, false);
    this.camera.aspect = w / h;
    const tallFov = 2 * Math.atan(Math.tan(THREE.MathUtils.degToRad(MIN_HFOV / 2)) / this.camera.aspect);
    this.camera.fov = Math.max(FOV, THREE.MathUtils.radToDeg(tallFov));
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
   * Applies one snapshot (records without topology): bodies get new
   * positions, bodies absent from the snapshot are removed. Returns the ids
   * that have no body yet (the caller builds one with setBody once it knows
   * the entity's topology).
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
      if (body?.accepts(e)) {
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

  /** Removes an entity's body (its topology changed; the next snapshot rebuilds it). */
  dropBody(id) {
    this.bodies.get(id)?.dispose();
    this.bodies.delete(id);
  }

  /** (Re)builds an entity's body from a snapshot record with its topology. */
  setBody(rec) {
    this.bodies.get(rec.entity)?.dispose();
    const body = createBody(rec);
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
    if (!drag) this.dragRing.visible = this.dragTarget.visible = this.dragLine.visible = false;
  }

  /**
   * The drag marker as drawn, for the test: { ring, target } page points of
   * the ring's centre and the target dot, and the line's ends; null when
   * there is none.
   */
  dragMarker() {
    if (!this.drag || !this.dragRing.visible) return null;
    const attr = this.dragLine.geometry.attributes.position;
    const at = (v) => {
      const s = this.project(v);
      return { x: s.x, y: s.y };
    };
    return {
      ring: at(this.dragRing.position),
      target: at(this.dragTarget.position),
      line: [at(new THREE.Vector3().fromBufferAttribute(attr, 0)), at(new THREE.Vector3().fromBufferAttribute(attr, 1))],
      visible: this.dragLine.visible && this.dragTarget.visible,
    };
  }

  render() {
    // Clock of the snapshot arrivals, not the frame's timestamp: that one
    // may predate a snapshot handled in the same frame.
    const now = performance.now();
    const alpha = THREE.MathUtils.clamp((now - this.lastSnapshotAt) / this.interval, 0, 1);
    for (const body of this.bodies.values()) body.interpolate(alpha);
    if (this.drag) this.placeDragMarker();
    this.controls.update();
    this.renderer.render(this.scene, this.camera);
  }

  // The ring around the held particle as drawn this frame, facing the
  // camera, a little larger than the particle and never smaller than 8 px
  // across its radius; a 3 px dot at the target; the line between.
  placeDragMarker() {
    const { entity, particle, target } = this.drag;
    const p = this.positionOf(entity, particle, tmpP);
    const shown = p !== null;
    this.dragRing.visible = this.dragTarget.visible = this.dragLine.visible = shown;
    if (!shown) return;
    const r = this.bodies.get(entity).radii[particle];
    this.dragRing.position.copy(p);
    this.dragRing.quaternion.copy(this.camera.quaternion);
    this.dragRing.scale.setScalar(Math.max(1.6 * r, 8 * this.metresPerPixel(p)));
    this.dragTarget.position.copy(target);
    this.dragTarget.scale.setScalar(3 * this.metresPerPixel(target));
    const attr = this.dragLine.geometry.attributes.position;
    attr.setXYZ(0, p.x, p.y, p.z);
    attr.setXYZ(1, target.x, target.y, target.z);
    attr.needsUpdate = true;
  }

  // The size of one CSS pixel at a world point's depth, metres.
  metresPerPixel(point) {
    const depth = Math.max(this.camera.near, -tmpV.copy(point).applyMatrix4(this.camera.matrixWorldInverse).z);
    const h = Math.max(1, this.canvas.clientHeight);
    return depth * 2 * Math.tan(THREE.MathUtils.degToRad(this.camera.fov) / 2) / h;
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
const tmpP = new THREE.Vector3();
const tmpNdc = new THREE.Vector2();
const raycaster = new THREE.Raycaster();
