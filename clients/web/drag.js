// Grab-and-throw: press on a particle to hold it, move to pull it, let go to
// throw it (the server's drag constraint moves it; its velocity is kept on
// release). Pressing anywhere else is left to the orbit controls and, for a
// click on a character or ball, to click.js.

const SEND_INTERVAL_MS = 1000 / 30; // at most ~30 drag commands a second

/**
 * view: WorldView; send(cmd): sends a command (errors handled by the caller);
 * world(): the subscribed world id or null.
 */
export function installDrag(view, send, world) {
  const canvas = view.canvas;
  let grab = null; // { pointerId, world, entity, particle, plane, offset, target }
  let lastSent = 0;
  let timer = 0;

  function sendTarget() {
    clearTimeout(timer);
    timer = 0;
    if (!grab) return;
    lastSent = performance.now();
    send({
      op: 'drag', world: grab.world, entity: grab.entity, particle: grab.particle,
      target: grab.target.toArray().map(round4),
    });
  }

  // Sends now if the last command is old enough, else once the interval has
  // passed, with whatever the target is by then (the latest wins).
  function queueTarget() {
    const wait = lastSent + SEND_INTERVAL_MS - performance.now();
    if (wait <= 0) sendTarget();
    else if (!timer) timer = setTimeout(sendTarget, wait);
  }

  function end() {
    if (!grab) return;
    if (timer) sendTarget(); // the last position first, so the throw goes where the pointer went
    const { world: w, entity, particle, pointerId } = grab;
    grab = null;
    send({ op: 'release', world: w, entity, particle });
    view.setDrag(null);
    view.controls.enabled = true;
    canvas.style.cursor = '';
    if (canvas.hasPointerCapture(pointerId)) canvas.releasePointerCapture(pointerId);
  }

  // Capture phase: at the canvas this runs before OrbitControls' own
  // pointerdown listener, so disabling the controls here keeps a grab from
  // also starting an orbit.
  canvas.addEventListener('pointerdown', (e) => {
    if (grab || e.button !== 0 || world() === null) return;
    // pickAt, not pick: a particle behind a character is not grabbed through it.
    const hit = view.pickAt(e.clientX, e.clientY);
    if (hit?.type !== 'particle') return; // empty space or a rigid body: orbit or click
    view.controls.enabled = false;
    canvas.setPointerCapture(e.pointerId);
    const plane = view.facingPlane(hit.position);
    const under = view.pointOnPlane(e.clientX, e.clientY, plane) ?? hit.position.clone();
    // Keep the particle where it is relative to the pointer: no jump on grab.
    const offset = hit.position.clone().sub(under);
    grab = {
      pointerId: e.pointerId, world: world(), entity: hit.entity, particle: hit.particle,
      plane, offset, target: hit.position.clone(),
    };
    view.setDrag(grab);
    canvas.style.cursor = 'grabbing';
    sendTarget(); // hold it right away
    e.preventDefault();
  }, { capture: true });

  canvas.addEventListener('pointermove', (e) => {
    if (!grab) {
      // Hover feedback only for a free mouse; the controls own other moves.
      if (e.buttons === 0 && e.pointerType === 'mouse') {
        const type = view.pickAt(e.clientX, e.clientY)?.type;
        canvas.style.cursor = type === 'particle' ? 'grab' : type === 'rigid' ? 'crosshair' : '';
      }
      return;
    }
    if (e.pointerId !== grab.pointerId) return;
    if (!view.bodies.has(grab.entity)) { // despawned under the pointer
      grab = null;
      view.setDrag(null);
      view.controls.enabled = true;
      return;
    }
    const p = view.pointOnPlane(e.clientX, e.clientY, grab.plane);
    if (!p) return; // ray parallel to the plane: keep the last target
    grab.target.copy(p).add(grab.offset);
    queueTarget();
  });

  for (const type of ['pointerup', 'pointercancel', 'lostpointercapture']) {
    canvas.addEventListener(type, (e) => {
      if (grab && e.pointerId === grab.pointerId) end();
    });
  }
  // A drag outlives its client on the server: let go when the page goes away
  // or loses focus, so a particle is never left hanging.
  window.addEventListener('blur', end);
  window.addEventListener('pagehide', end);

  return {
    /**
     * Forgets the grab without a release (the connection or world is gone).
     * Returns the particle that was held, { world, entity, particle }, or null.
     */
    reset() {
      clearTimeout(timer);
      timer = 0;
      if (!grab) return null;
      const { world: w, entity, particle } = grab;
      grab = null;
      view.setDrag(null);
      view.controls.enabled = true;
      canvas.style.cursor = '';
      return { world: w, entity, particle };
    },
  };
}

// Positions go out at 0.1 mm like the server's: shorter frames, same physics.
const round4 = (x) => Math.round(x * 1e4) / 1e4;
