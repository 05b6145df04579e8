/*
 * particle.c: the particle half of a substep (position-based dynamics,
 * Jakobsen 2001; XPBD, Macklin et al. 2016): Verlet integration, constraint
 * projection per entity, the joint-limit clean-up passes.
 */
#include "rigid.h"
#include "vec.h"
#include "world.h"

#include <string.h>

// Passes of the joint-limit clean-up after each substep's last collision
// projection (see project_joint_limits()).
#define SIM__JOINT_CLEANUP_PASSES 4

// The running bounds of one half of a particle range.
typedef struct bounds {
    sim_vec3 lo, hi;
    float r;
} bounds;

// Grows b by particle p of radius r: compares, not fminf/fmaxf (library
// calls here), the same for finite positions.
static inline void bounds_add(bounds* b, sim_vec3 p, float r) {
    b->lo.x = p.x < b->lo.x ? p.x : b->lo.x;
    b->lo.y = p.y < b->lo.y ? p.y : b->lo.y;
    b->lo.z = p.z < b->lo.z ? p.z : b->lo.z;
    b->hi.x = p.x > b->hi.x ? p.x : b->hi.x;
    b->hi.y = p.y > b->hi.y ? p.y : b->hi.y;
    b->hi.z = p.z > b->hi.z ? p.z : b->hi.z;
    b->r = r > b->r ? r : b->r;
}

void sim__particle_bounds(const sim_world* w, const sim__entity* e, sim_vec3* lo, sim_vec3* hi,
                          float* rmax) {
    // Two halves side by side (even and odd particles), so that each
    // compare waits on the one two particles back, not one.
    const sim_vec3 p0 = w->pos[e->p_first];
    bounds b[2] = {{p0, p0, 0.0f}, {p0, p0, 0.0f}};
    const uint32_t end = e->p_first + e->p_count;
    uint32_t i = e->p_first;
    for (; i + 1 < end; i += 2) {
        bounds_add(&b[0], w->pos[i], w->radius[i]);
        bounds_add(&b[1], w->pos[i + 1], w->radius[i + 1]);
    }
    if (i < end) {
        bounds_add(&b[0], w->pos[i], w->radius[i]);
    }
    bounds_add(&b[0], b[1].lo, b[1].r);
    bounds_add(&b[0], b[1].hi, b[1].r);
    *lo = b[0].lo;
    *hi = b[0].hi;
    if (rmax != NULL) {
        *rmax = b[0].r;
    }
}

// Position Verlet with damping (Jakobsen 2001, eq. 1 with a drag factor):
// x' = x + (x - x_prev)·damping + g·h². Pinned particles (w = 0) stay put.
void sim__particles_integrate(sim_world* w, sim_vec3 g_h2) {
    const float damping = w->params.damping;
    for (uint32_t k = 0; k < w->order_count; ++k) {
        const sim__entity* e = &w->entities[w->order[k]];
        if (e->iterations == 0) {
            continue; // frozen (lod.c)
        }
        for (uint32_t i = e->p_first; i < e->p_first + e->p_count; ++i) {
            if (w->inv_mass[i] == 0.0f) {
                w->vpre[i] = v3(0.0f, 0.0f, 0.0f);
                continue;
            }
            sim_vec3 x = w->pos[i];
            sim_vec3 v = v3_scale(v3_sub(x, w->prev[i]), damping);
            sim_vec3 next = v3_add(v3_add(x, v), g_h2);
            w->prev[i] = x;
            w->pos[i] = next;
            w->vpre[i] = v3_sub(next, x);
        }
    }
}

// A few more passes over the joint limits alone, after the last collision
// push-out. Without them the push-out has the last word, and a limb slammed
// by an impact stays bent out of its hinge plane by 10-30° for a few ticks.
// The passes are mass-weighted like every other projection, so they conserve
// momentum: a body pressed into a collider by a joint limit does not creep.
// A hand or foot they leave slightly inside a collider is pushed out next
// substep, and that push is removed from its velocity (collide.c), so no
// energy comes from it. Measured by test_sim_ragdoll_drop_keeps_joint_limits
// and test_sim_ragdoll_comes_to_rest (1 pass: 1.5° out of plane; 4: 0.5°).
void sim__particles_joint_limits(sim_world* w) {
    for (uint32_t k = 0; k < w->order_count; ++k) {
        const sim__entity* e = &w->entities[w->order[k]];
        sim_vec3* pos = w->pos + e->p_first;
        const float* im = w->inv_mass + e->p_first;
        const sim__joint* jt = w->joint + e->j_first;
        for (int pass = 0; pass < SIM__JOINT_CLEANUP_PASSES; ++pass) {
            for (uint32_t j = 0; j < e->j_count; ++j) {
                sim__project_joint(pos, im, &jt[j]);
            }
        }
    }
}

void sim__particles_project(sim_world* w, float inv_h2, int it) {
    for (uint32_t k = 0; k < w->order_count; ++k) {
        const sim__entity* e = &w->entities[w->order[k]];
        if (it >= e->iterations) {
            continue; // fewer iterations, or frozen (lod.c)
        }
        w->stats.particle_projections += e->d_count + e->j_count;
        sim_vec3* pos = w->pos + e->p_first;
        const float* im = w->inv_mass + e->p_first;
        if (e->cb_count > 0) {
            // The same projections four at a time, with the same results.
            sim__cloth_batches_project(w, e, inv_h2);
        } else {
            sim__dist* d = w->dist + e->d_first;
            for (uint32_t j = 0; j < e->d_count; ++j) {
                sim__project_dist(pos, im, &d[j], inv_h2);
            }
        }
        const sim__joint* jt = w->joint + e->j_first;
        for (uint32_t j = 0; j < e->j_count; ++j) {
            sim__project_joint(pos, im, &jt[j]);
        }
    }
}
