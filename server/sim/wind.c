/*
 * wind.c: wind and air on cloth (issue 10, item 6). Every cloth triangle
 * (two per grid quad, sim_cloth_triangle()) feels a flat-plate drag along
 * its normal and a lift across its velocity relative to the air
 * (sim_aero_triangle_force()), the air moving at the world's wind with
 * deterministic gusts (sim_wind_at()). A third of each triangle's force goes
 * to each of its corners, applied as an external force in the substep's
 * integration: after sim__particles_integrate() each particle moves by
 * F/m · h² (position Verlet, Jakobsen 2001 eq. 1, with F/m beside gravity).
 *
 * The velocities are the ones the integration predicts for the substep
 * (vpre / h: damping and gravity included), read for every triangle before
 * any particle moves, so the result does not depend on the triangle order.
 * Evaluating the drag at the predicted velocity (semi-implicit) is the more
 * stable choice; the change of velocity a triangle gives a corner is also
 * capped at a sixth of the triangle's relative speed (a grid particle is a
 * corner of at most six triangles), so a very light cloth in a strong wind
 * cannot be thrown past the air's speed in one substep.
 *
 * It owns no state: it reads params, the cloth entities and the particle
 * arrays, and writes pos and vpre. Ropes and ragdolls feel no air.
 */
#include "vec.h"
#include "world.h"

sim_vec3 sim_aero_triangle_force(sim_vec3 a, sim_vec3 b, sim_vec3 c, sim_vec3 v, float rho,
                                 float cd, float cl) {
    const sim_vec3 cr = v3_cross(v3_sub(b, a), v3_sub(c, a));
    const float twice_area = v3_len(cr);
    const float speed = v3_len(v);
    if (!(twice_area > 1e-12f) || !(speed > 1e-9f)) {
        return v3(0.0f, 0.0f, 0.0f);
    }
    const sim_vec3 n = v3_scale(cr, 1.0f / twice_area);
    const sim_vec3 vhat = v3_scale(v, 1.0f / speed);
    const float vn = v3_dot(v, n);
    // q = ½ ρ A |v| (v·n) with A = twice_area / 2. The sign of n does not
    // matter: n and (v·n) flip together, and so do the lift's two factors.
    const float q = 0.25f * rho * twice_area * speed * vn;
    const sim_vec3 drag = v3_scale(n, -cd * q);
    const sim_vec3 across = v3_sub(n, v3_scale(vhat, v3_dot(n, vhat)));
    const sim_vec3 lift = v3_scale(across, -cl * q);
    return v3_add(drag, lift);
}

// sin(2π u) for u in [0, 1), by its Taylor series about π (x = 2π u - π,
// sin(2π u) = -sin x, |x| <= π) to x¹⁹: error below 1e-8. Written out rather
// than libm's sin() so that every machine and every libm variant (glibc
// picks FMA code paths by CPU) gives the same bits: + and × only, and the
// build has no FMA contraction (-ffp-contract=off).
static double sin_turn(double u) {
    const double x = 6.283185307179586 * u - 3.141592653589793;
    const double x2 = x * x;
    double term = x, sum = x;
    for (int k = 1; k <= 9; ++k) {
        term = -term * x2 / (double)((2 * k) * (2 * k + 1));
        sum += term;
    }
    return -sum;
}

sim_vec3 sim_wind_at(const sim_params* p, double t) {
    if (p->gust == 0.0f) {
        return p->wind;
    }
    // The phases are taken modulo one period (fmod is exact), so that a long
    // run keeps the same precision as a short one.
    const double golden = 1.618033988749895;
    const double period = (double)p->gust_period;
    const double u1 = fmod(t / period, 1.0);
    const double u2 = fmod(t * golden / period, 1.0);
    const double s = 0.5 * (sin_turn(u1) + sin_turn(u2));
    return v3_scale(p->wind, 1.0f + p->gust * (float)s);
}

// The force of one triangle split over its corners: each gets F/3, as a
// change of position F/(3m) · h², its velocity change F/(3m) · h capped at
// a sixth of the triangle's relative speed (six triangles share a corner).
static void push_corners(sim_world* w, const uint32_t idx[3], sim_vec3 f, float speed, float h) {
    const sim_vec3 f3 = v3_scale(f, 1.0f / 3.0f);
    const float f3_len = v3_len(f3);
    for (int k = 0; k < 3; ++k) {
        const uint32_t i = idx[k];
        const float im = w->inv_mass[i];
        if (im == 0.0f) {
            continue; // pinned
        }
        float dv = f3_len * im * h;
        float scale = im * h * h;
        if (dv > speed) {
            scale *= speed / dv;
        }
        w->pos[i] = v3_add(w->pos[i], v3_scale(f3, scale));
    }
}

// Whether triangle t of a grid `cols` wide, first corner i (local), has a
// torn edge (sim__tie.torn): (i, i+1, i+cols+1) or (i, i+cols+1, i+cols).
static bool triangle_torn(const sim__tie* tie, uint32_t cols, uint32_t t, uint32_t i) {
    if ((t & 1u) == 0) {
        return (tie[i].torn & (SIM__TORN_RIGHT | SIM__TORN_DIAG)) != 0 ||
               (tie[i + 1].torn & SIM__TORN_DOWN) != 0;
    }
    return (tie[i].torn & (SIM__TORN_DIAG | SIM__TORN_DOWN)) != 0 ||
           (tie[i + cols].torn & SIM__TORN_RIGHT) != 0;
}

void sim__wind_apply(sim_world* w, float h) {
    const sim_params* p = &w->params;
    if (p->air_density == 0.0f || (p->drag_coef == 0.0f && p->lift_coef == 0.0f)) {
        return;
    }
    const sim_vec3 air = sim_wind_at(p, (double)w->tick * (double)w->dt);
    const float inv_h = 1.0f / h;
    for (uint32_t k = 0; k < w->order_count; ++k) {
        const sim__entity* e = &w->entities[w->order[k]];
        if (e->kind != SIM_ENTITY_CLOTH || e->cols < 2 || e->rows < 2 || e->iterations == 0) {
            continue;
        }
        const uint32_t n = sim_cloth_triangle_count(e->cols, e->rows);
        for (uint32_t t = 0; t < n; ++t) {
            uint32_t idx[3];
            sim_cloth_triangle(e->cols, t, idx);
            if (triangle_torn(w->tie + e->p_first, e->cols, t, idx[0])) {
                continue; // its corners are no longer one piece of cloth
            }
            for (int c = 0; c < 3; ++c) {
                idx[c] += e->p_first;
            }
            // The triangle's velocity: the mean of its corners' predicted
            // velocities (vpre is not changed until every triangle is done).
            sim_vec3 vt = v3_add(v3_add(w->vpre[idx[0]], w->vpre[idx[1]]), w->vpre[idx[2]]);
            vt = v3_scale(vt, inv_h / 3.0f);
            const sim_vec3 rel = v3_sub(vt, air);
            // The corners' positions before this substep's move (prev).
            const sim_vec3 f =
                sim_aero_triangle_force(w->prev[idx[0]], w->prev[idx[1]], w->prev[idx[2]], rel,
                                        p->air_density, p->drag_coef, p->lift_coef);
            push_corners(w, idx, f, v3_len(rel) / 6.0f, h);
        }
        // The displacement over the substep now includes the air's push
        // (collide.c's restitution reads it).
        for (uint32_t i = e->p_first; i < e->p_first + e->p_count; ++i) {
            if (w->inv_mass[i] != 0.0f) {
                w->vpre[i] = v3_sub(w->pos[i], w->prev[i]);
            }
        }
    }
}
