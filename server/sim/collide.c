/*
 * collide.c: particle collision with the static world: the ground plane
 * y = 0 and axis-aligned boxes. Particles are spheres of their radius.
 *
 * Two phases per substep: sim__collide_project() runs inside every solver
 * iteration and only moves positions (so constraints and contacts settle
 * together, Jakobsen 2001 §3); sim__collide_respond() runs once after the
 * iterations and sets the velocity a contact leaves behind, restitution along
 * the normal and friction (static, then kinetic) along the surface, by
 * moving x_prev. A body a particle touched takes the opposite of the
 * momentum the contact gave the particle (two-way coupling), unless the
 * particle belongs to a garment the body's character wears.
 */
#include "vec.h"
#include "world.h"

// Pushes a particle out of a box grown by its radius. Prefers the face whose
// plane the previous position was outside of, so a fast particle that crossed
// the top face is pushed back up rather than out of a nearer side face.
static bool box_push_out(const sim_box* bx, sim_vec3* p, sim_vec3 prev, float r, sim_vec3* n) {
    sim_vec3 q = v3_sub(*p, bx->center);
    sim_vec3 qp = v3_sub(prev, bx->center);
    float he[3] = {bx->half_extents.x + r, bx->half_extents.y + r, bx->half_extents.z + r};
    float qv[3] = {q.x, q.y, q.z};
    float pv[3] = {qp.x, qp.y, qp.z};
    for (int k = 0; k < 3; ++k) {
        if (qv[k] <= -he[k] || qv[k] >= he[k]) {
            return false;
        }
    }
    int best = -1;
    float best_depth = 0.0f;
    bool best_crossed = false;
    for (int f = 0; f < 6; ++f) {
        int k = f >> 1;
        float sgn = (f & 1) ? -1.0f : 1.0f;
        float depth = he[k] - sgn * qv[k];
        bool crossed = sgn * pv[k] >= he[k];
        if (best < 0 || (crossed && !best_crossed) ||
            (crossed == best_crossed && depth < best_depth)) {
            best = f;
            best_depth = depth;
            best_crossed = crossed;
        }
    }
    int k = best >> 1;
    float sgn = (best & 1) ? -1.0f : 1.0f;
    qv[k] = sgn * he[k];
    *p = v3_add(bx->center, v3(qv[0], qv[1], qv[2]));
    float nv[3] = {0.0f, 0.0f, 0.0f};
    nv[k] = sgn;
    *n = v3(nv[0], nv[1], nv[2]);
    return true;
}

// The body range [first, end) of the entity's wearer, empty when it has none.
static void wearer_bodies(const sim_world* w, const sim__entity* e, uint32_t* first,
                          uint32_t* end) {
    const sim__entity* we = e->garment != SIM_GARMENT_NONE ? sim__entity_get(w, e->wearer) : NULL;
    *first = we != NULL ? we->b_first : 0;
    *end = we != NULL ? we->b_first + we->b_count : 0;
}

// The bodies near entity e's particles (sim__bodies_near(), contact.c):
// those whose bounds for the tick meet the particles' box [lo, hi] grown by
// their largest radius and the grid's particle margin.
static uint32_t bodies_near(const sim_world* w, sim_vec3 lo, sim_vec3 hi, float rmax,
                            sim__near_body* list, uint32_t cap) {
    if (w->b_count == 0) {
        return 0;
    }
    const float m = rmax + SIM__PARTICLE_MARGIN;
    return sim__bodies_near(w, v3_sub(lo, v3(m, m, m)), v3_add(hi, v3(m, m, m)), list, cap);
}

// Whether no particle in the box [lo, hi] of radius at most rmax can touch
// the ground or a box this pass: the tests below would all come out false
// (the ground's is y < r, a box's a strict overlap with it grown by r).
static bool clear_of_statics(const sim_world* w, sim_vec3 lo, sim_vec3 hi, float rmax) {
    if (w->def.ground && lo.y < rmax) {
        return false;
    }
    for (uint32_t b = 0; b < w->box_count; ++b) {
        const sim_box* bx = &w->boxes[b];
        const sim_vec3 blo = v3_sub(bx->center, bx->half_extents);
        const sim_vec3 bhi = v3_add(bx->center, bx->half_extents);
        if (hi.x + rmax > blo.x && lo.x - rmax < bhi.x && hi.y + rmax > blo.y &&
            lo.y - rmax < bhi.y && hi.z + rmax > blo.z && lo.z - rmax < bhi.z) {
            return false;
        }
    }
    return true;
}

// Bodies a particle entity's collision pass looks at directly, at most.
#define SIM__NEAR_BODIES 64

bool sim__collide_skips(const sim_world* w, sim_vec3 lo, sim_vec3 hi, float rmax) {
    // Room for none: the first body near is an answer (UINT32_MAX), and no
    // segment is computed for a list nobody reads.
    return bodies_near(w, lo, hi, rmax, NULL, 0) == 0 && clear_of_statics(w, lo, hi, rmax);
}

void sim__collide_project(sim_world* w, float h, int it) {
    const bool ground = w->def.ground;
    const float inv_h = 1.0f / h;
    for (uint32_t k = 0; k < w->order_count; ++k) {
        const sim__entity* e = &w->entities[w->order[k]];
        if (e->iterations == 0 || it < e->collide_from) {
            continue; // frozen (lod.c), or found clear by the pass ahead (cloth_batch.c)
        }
        uint32_t own_first, own_end;
        wearer_bodies(w, e, &own_first, &own_end);
        // The few bodies near it (a garment: its wearer's bones), tested
        // directly; when many are, the broad phase's grid per particle.
        if (e->p_count == 0) {
            continue;
        }
        sim_vec3 lo, hi;
        float rmax;
        sim__particle_bounds(w, e, &lo, &hi, &rmax);
        sim__near_body near[SIM__NEAR_BODIES];
        uint32_t n_near = bodies_near(w, lo, hi, rmax, near, SIM__NEAR_BODIES);
        if (n_near == 0 && clear_of_statics(w, lo, hi, rmax)) {
            continue; // a cloth hanging in the air: nothing to push it out of
        }
        const sim__near_body* list = n_near == UINT32_MAX ? NULL : near;
        for (uint32_t i = e->p_first; i < e->p_first + e->p_count; ++i) {
            if (w->inv_mass[i] == 0.0f) {
                continue;
            }
            const float r = w->radius[i];
            if (ground && w->pos[i].y < r) {
                w->push[i] += r - w->pos[i].y;
                w->pos[i].y = r;
                w->contact[i] = 1;
                w->contact_n[i] = v3(0.0f, 1.0f, 0.0f);
                w->contact_body[i] = SIM__NO_BODY;
            }
            for (uint32_t b = 0; b < w->box_count; ++b) {
                sim_vec3 n, before = w->pos[i];
                if (box_push_out(&w->boxes[b], &w->pos[i], w->prev[i], r, &n)) {
                    w->push[i] += v3_dot(v3_sub(w->pos[i], before), n);
                    w->contact[i] = 1;
                    w->contact_n[i] = n;
                    w->contact_body[i] = SIM__NO_BODY;
                }
            }
            sim_vec3 n;
            uint32_t body;
            if (sim__particle_vs_bodies(w, list, n_near, &w->pos[i], r, 1.0f / w->inv_mass[i],
                                        own_first, own_end, inv_h, &n, &w->push[i], &body)) {
                w->contact[i] = 1;
                w->contact_n[i] = n;
                // A garment does not push its wearer (it is carried by it).
                w->contact_body[i] = body >= own_first && body < own_end ? SIM__NO_BODY : body;
            }
        }
    }
}

// The velocity of body i's material point p, as a displacement over h.
static sim_vec3 body_point_motion(const sim_world* w, uint32_t i, sim_vec3 p, float h) {
    const sim__body* b = &w->body[i];
    sim_vec3 v = b->v, om = b->w;
    if (w->def.solver == SIM_SOLVER_SOFT_STEP && w->soft_index[i] != SIM__NO_STATE) {
        v = w->soft_state[w->soft_index[i]].v;
        om = w->soft_state[w->soft_index[i]].w;
    }
    return v3_scale(v3_add(v, v3_cross(om, v3_sub(p, b->x))), h);
}

void sim__collide_respond(sim_world* w, float h) {
    const float e = w->params.bounciness;
    const float keep_t = 1.0f - w->params.friction;
    // Below this approach speed (as a displacement per substep) a contact is
    // resting: bouncing it would only add jitter (Müller et al. 2020, §3.5).
    const float rest_threshold = 2.0f * v3_len(w->params.gravity) * h * h;
    for (uint32_t i = 0; i < w->p_count; ++i) {
        if (!w->contact[i]) {
            continue;
        }
        sim_vec3 n = w->contact_n[i];
        const uint32_t body = w->contact_body[i];
        // Velocities relative to what the particle touches: a body's surface
        // moves (a swinging arm carries the cloth it pushes), the ground and
        // boxes do not.
        sim_vec3 vs =
            body != SIM__NO_BODY ? body_point_motion(w, body, w->pos[i], h) : v3(0.0f, 0.0f, 0.0f);
        sim_vec3 v = v3_sub(v3_sub(w->pos[i], w->prev[i]), vs);
        float vn = v3_dot(v, n);
        sim_vec3 vt = v3_sub(v, v3_scale(n, vn));
        // Restitution acts on the speed the particle hit with, before the
        // solve pushed it out: that is what "fraction of normal speed kept"
        // measures.
        float approach = v3_dot(v3_sub(w->vpre[i], vs), n);
        float vn_new;
        if (approach < -rest_threshold) {
            vn_new = -e * approach;
        } else if (approach <= 0.0f) {
            // Resting (or approaching too slowly to bounce). Being pushed out
            // of penetration is a position fix, not a velocity: remove what
            // the push added, or anything pressed into a collider (a foot held
            // there by a joint limit) pops out with energy from nowhere. What
            // the constraints added (a body being lifted) stays.
            vn_new = vn - w->push[i];
            vn_new = vn_new > 0.0f ? vn_new : 0.0f;
        } else {
            vn_new = vn; // it was already moving away
        }
        // Static friction (Müller et al. 2014, "Unified Particle Physics",
        // eq. 24): a contact whose sliding this substep is below
        // friction × the push-out (a stand-in for the normal force) sticks;
        // otherwise the kinetic rule removes its fraction of the sliding.
        // Without it a body leaning on a slope or an edge never stops.
        float slide = v3_len(vt);
        sim_vec3 vt_new =
            slide < w->params.friction * w->push[i] ? v3(0.0f, 0.0f, 0.0f) : v3_scale(vt, keep_t);
        sim_vec3 v_new = v3_add(v3_scale(n, vn_new), vt_new);
        w->prev[i] = v3_sub(w->pos[i], v3_add(v_new, vs));
        if (body != SIM__NO_BODY) {
            // Two-way: the push-outs gave their momentum already
            // (sim__particle_vs_bodies); the body takes the opposite of
            // what this changes, the bounce and the friction.
            const float m = 1.0f / w->inv_mass[i];
            sim_vec3 j = v3_scale(v3_sub(v_new, v), m / h);
            sim_vec3 at = v3_sub(w->pos[i], v3_scale(n, w->radius[i]));
            sim__body_push_now(w, body, at, v3_scale(j, -1.0f));
        }
    }
}
