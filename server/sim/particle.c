/*
 * particle.c: the particle half of a substep (position-based dynamics,
 * Jakobsen 2001; XPBD, Macklin et al. 2016): Verlet integration, constraint
 * projection per entity, the joint-limit clean-up passes.
 */
#include "lanes.h"
#include "rigid.h"
#include "vec.h"
#include "world.h"

#include <string.h>

// Passes of the joint-limit clean-up after each substep's last collision
// projection (see project_joint_limits()).
#define SIM__JOINT_CLEANUP_PASSES 4

// Staging reads four particles as twelve consecutive floats.
_Static_assert(sizeof(sim_vec3) == 3 * sizeof(float), "sim_vec3 is three floats, unpadded");

void sim__particle_bounds(const sim_world* w, const sim__entity* e, sim_vec3* lo, sim_vec3* hi,
                          float* rmax) {
    // Four particles at a time in four-float lanes: their twelve floats as
    // three loads, min and max lane by lane (each lane keeps one coordinate
    // of a quarter of the particles), then the lanes sorted into x, y, z.
    const sim_vec3 p0 = w->pos[e->p_first];
    const sim__fw first = sim__fw_load(&(float[4]){p0.x, p0.y, p0.z, p0.x}[0]);
    const sim__fw second = sim__fw_load(&(float[4]){p0.y, p0.z, p0.x, p0.y}[0]);
    const sim__fw third = sim__fw_load(&(float[4]){p0.z, p0.x, p0.y, p0.z}[0]);
    sim__fw mn[3] = {first, second, third}, mx[3] = {first, second, third};
    sim__fw r4 = sim__fw_zero();
    const uint32_t end = e->p_first + e->p_count;
    uint32_t i = e->p_first;
    for (; i + 4 <= end; i += 4) {
        const float* q = &w->pos[i].x;
        for (int k = 0; k < 3; ++k) {
            sim__fw v = sim__fw_load(q + 4 * k);
            mn[k] = sim__fw_min(v, mn[k]);
            mx[k] = sim__fw_max(v, mx[k]);
        }
        r4 = sim__fw_max(sim__fw_load(&w->radius[i]), r4);
    }
    sim__fw x, y, z;
    sim__fw_from_xyz(mn[0], mn[1], mn[2], &x, &y, &z);
    sim_vec3 l = v3(sim__fw_least(x), sim__fw_least(y), sim__fw_least(z));
    sim__fw_from_xyz(mx[0], mx[1], mx[2], &x, &y, &z);
    sim_vec3 h = v3(sim__fw_most(x), sim__fw_most(y), sim__fw_most(z));
    float r = sim__fw_most(r4);
    for (; i < end; ++i) { // the last one to three
        const sim_vec3 p = w->pos[i];
        l = v3(p.x < l.x ? p.x : l.x, p.y < l.y ? p.y : l.y, p.z < l.z ? p.z : l.z);
        h = v3(p.x > h.x ? p.x : h.x, p.y > h.y ? p.y : h.y, p.z > h.z ? p.z : h.z);
        r = w->radius[i] > r ? w->radius[i] : r;
    }
    *lo = l;
    *hi = h;
    if (rmax != NULL) {
        *rmax = r;
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
        if (it >= e->iterations || it < e->ahead) {
            continue; // fewer iterations, frozen (lod.c), or done ahead
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

// Whether nothing but its own blocks and the collision pass touches e's
// particles between relaxation passes (step.c's loop): then its passes
// can run back to back. A drag is checked by the caller. A garment lies
// on its wearer, so its first box is never clear: it is left to the
// pass-by-pass loop rather than staged and bounded for one pass.
static bool runs_alone(const sim__entity* e) {
    return e->cb_count > 0 && e->iterations > 0 && e->j_count == 0 && !e->tethered &&
           !e->self_collision && e->kind != SIM_ENTITY_SOFTBODY && e->garment == SIM_GARMENT_NONE &&
           e->p_count > 0 && e->p_count == e->rows * e->cols;
}

bool sim__cloth_ahead = true;

void sim__particles_project_ahead(sim_world* w, float inv_h2) {
    for (uint32_t k = 0; k < w->order_count; ++k) {
        sim__entity* e = &w->entities[w->order[k]];
        e->ahead = sim__cloth_ahead && runs_alone(e) ? 1 : 0; // a candidate, for now
        e->collide_from = 0;
    }
    for (uint32_t k = 0; k < w->drag_count; ++k) {
        sim__entity* e = sim__entity_get(w, w->drags[k].entity);
        if (e != NULL) {
            e->ahead = 0;
        }
    }
    const int iterations = w->params.iterations;
    for (uint32_t k = 0; k < w->order_count; ++k) {
        sim__entity* e = &w->entities[w->order[k]];
        if (!e->ahead) {
            continue;
        }
        const int passes = e->iterations < iterations ? e->iterations : iterations;
        sim_vec3 lo, hi;
        float rmax;
        sim__particle_bounds(w, e, &lo, &hi, &rmax);
        bool clear;
        const uint32_t done =
            sim__cloth_batches_ahead(w, e, inv_h2, (uint32_t)passes, rmax, &clear);
        w->stats.particle_projections += (uint64_t)done * e->d_count;
        e->ahead = (uint8_t)done;
        // Clear after the last pass: later passes project nothing more, so
        // their collision passes would find the same box clear.
        e->collide_from = (uint8_t)(clear ? iterations : (int)done - 1);
    }
}
