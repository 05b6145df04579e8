/*
 * solver.c: the rigid-body half of a substep (Müller et al. 2020,
 * "Detailed Rigid Body Simulation with Extended Position Based Dynamics",
 * algorithm 2): integrate, project joints and contacts, derive velocities,
 * velocity pass; and how many rigid substeps a tick needs.
 */
#include "rigid.h"
#include "vec.h"
#include "world.h"

#include <string.h>

// Position passes over the rigid joints and contacts per substep. XPBD
// needs one with many substeps; with the 4 substeps we run, a second pass is
// what lets a ragdoll lie still (one pass: bones jitter at 1-8 rad/s).
// Contact-and-joint passes per rigid substep, then one more joint pass.
// This keeps hinges within 2° of their limits and joints within a few
// millimetres through 5 m falls onto stairs (test_character); fewer passes
// do not.
#define SIM__RIGID_PASSES 3
// Rigid bodies take at least SIM__RIGID_MIN_SUBSTEPS per tick (world.h),
// more when a body moves fast: enough that none travels more than
// SIM__RIGID_MAX_TRAVEL (m) in one, up to SIM__RIGID_MAX_SUBSTEPS.
#define SIM__RIGID_MAX_SUBSTEPS 16
#define SIM__RIGID_MAX_TRAVEL   0.0125f

// Rigid bodies, one substep (Müller et al. 2020, algorithm 2): integrate,
// solve joints then contacts once, derive velocities, velocity pass.
static void integrate_bodies(sim_world* w, float h) {
    const sim_vec3 g_h = v3_scale(w->params.gravity, h);
    for (uint32_t i = 0; i < w->b_count; ++i) {
        sim__body* b = &w->body[i];
        b->x_prev = b->x;
        b->q_prev = b->q;
        // Kinematic bodies carry the velocity their animation gave them;
        // only dynamic ones feel gravity.
        if (b->inv_mass > 0.0f) {
            b->v = v3_add(b->v, g_h);
        }
        b->v_pre = b->v;
        b->w_pre = b->w;
        b->x = v3_add(b->x, v3_scale(b->v, h));
        b->q = q_integrate(b->q, b->w, h);
        sim__body_update_inertia(b);
    }
}

// Joints for one pass of a substep. The drives are compliant constraints
// whose λ is not carried between passes, so they run in the first pass
// only: a second pass would double their stiffness.
static void solve_joints(sim_world* w, float h, bool drives) {
    for (uint32_t k = 0; k < w->order_count; ++k) {
        const sim__entity* e = &w->entities[w->order[k]];
        sim__body* bodies = w->body + e->b_first;
        const sim__bjoint* joints = w->bjoint + e->bj_first;
        for (uint32_t j = 0; j < e->bj_count; ++j) {
            sim__body* p = &bodies[joints[j].parent];
            sim__body* c = &bodies[joints[j].child];
            if (p->inv_mass > 0.0f || c->inv_mass > 0.0f) {
                sim__joint_solve(p, c, &joints[j], h, drives);
            }
        }
    }
}

static void update_velocities(sim_world* w, float h) {
    for (uint32_t i = 0; i < w->b_count; ++i) {
        sim__body* b = &w->body[i];
        if (b->inv_mass == 0.0f) {
            continue;
        }
        b->v = v3_scale(v3_sub(b->x, b->x_prev), 1.0f / h);
        // ω from the orientation change (eq. 23), the short way round.
        sim_quat dq = q_mul(b->q, q_conj(b->q_prev));
        sim_vec3 wv = v3_scale(v3(dq.x, dq.y, dq.z), 2.0f / h);
        b->w = dq.w >= 0.0f ? wv : v3_scale(wv, -1.0f);
    }
}

static void damp_joints(sim_world* w, float h) {
    for (uint32_t k = 0; k < w->order_count; ++k) {
        const sim__entity* e = &w->entities[w->order[k]];
        sim__body* bodies = w->body + e->b_first;
        const sim__bjoint* joints = w->bjoint + e->bj_first;
        for (uint32_t j = 0; j < e->bj_count; ++j) {
            sim__joint_damp(&bodies[joints[j].parent], &bodies[joints[j].child], &joints[j], h);
        }
    }
}

// How many rigid substeps each of the world's substeps is split into this
// tick: at least enough for SIM__RIGID_MIN_SUBSTEPS per tick, and enough
// that no surface closes on another (or on the ground or a box) by more
// than SIM__RIGID_MAX_TRAVEL in one (a hit at speed is caught before it sinks deep, and the joints
// of what it hits keep up), within SIM__RIGID_MAX_SUBSTEPS per tick and the world's solver budget.
// Bodies are cheap next to their joints' error, so only fast ticks pay.
int sim__rigid_split(const sim_world* w, int substeps) {
    // Only what may hit something this tick counts: bodies falling or
    // tumbling together through the air need no finer steps.
    const float fastest = w->closing_speed;
    const int lo = (SIM__RIGID_MIN_SUBSTEPS + substeps - 1) / substeps;
    const int hi = (SIM__RIGID_MAX_SUBSTEPS + substeps - 1) / substeps;
    float need = ceilf(fastest * w->dt / (SIM__RIGID_MAX_TRAVEL * (float)substeps));
    int split = need >= (float)hi ? hi : (need <= (float)lo ? lo : (int)need);
    if (split > lo && w->def.max_solver_work != 0) {
        // The budget counts `lo` splits; more must fit in what is left.
        uint64_t base = sim_world_solver_work(w);
        uint64_t one = SIM__RIGID_WORK * ((uint64_t)w->b_count + w->bj_count) * (uint64_t)substeps;
        while (split > lo && base + one * (uint64_t)(split - lo) > w->def.max_solver_work) {
            split--;
        }
    }
    return split;
}

// One substep of the rigid bodies (Müller et al. 2020, Algorithm 2): predict,
// project joints and contacts, derive velocities, solve velocities.
void sim__rigid_substep(sim_world* w, float h) {
    integrate_bodies(w, h);
    sim__contacts_find(w, h);
    for (int pass = 0; pass < SIM__RIGID_PASSES; ++pass) {
        sim__contacts_solve(w, h);
        solve_joints(w, h, pass == 0);
    }
    // A last joint pass: a light bone hit hard (a foot landing) gets its
    // limit back within a degree or two in the same substep.
    solve_joints(w, h, false);
    update_velocities(w, h);
    sim__contacts_velocities(w, h);
    damp_joints(w, h);
}
