// Clicks on the view: a click (press and release without moving, so not an
// orbit) on a character or a ball hits it, a click on empty space clears the
// selection. Particle presses belong to drag.js, which claims them first (its
// capture listener calls preventDefault).

const CLICK_SLOP_PX = 5; // farther than this between press and release is an orbit

/**
 * view: WorldView; handlers: {
 *   rigid(hit, event) – hit as WorldView.raycast() returns it, at the release point,
 *   empty(event)      – nothing under the pointer,
 * }; world(): the subscribed world id or null.
 */
export function installClick(view, handlers, world) {
  const canvas = view.canvas;
  let press = null; // { pointerId, x, y }

  canvas.addEventListener('pointerdown', (e) => {
    press = null;
    if (e.defaultPrevented || e.button !== 0 || world() === null) return;
    press = { pointerId: e.pointerId, x: e.clientX, y: e.clientY };
  });

  canvas.addEventListener('pointerup', (e) => {
    const p = press;
    press = null;
    if (!p || e.pointerId !== p.pointerId || world() === null) return;
    if (Math.hypot(e.clientX - p.x, e.clientY - p.y) > CLICK_SLOP_PX) return;
    // Judged where the button went up: the body may have moved since the press.
    const hit = view.pickAt(e.clientX, e.clientY);
    if (hit?.type === 'rigid') handlers.rigid(hit, e);
    else if (!hit) handlers.empty(e);
  });

  canvas.addEventListener('pointercancel', () => { press = null; });
}
