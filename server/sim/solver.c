/*
 * solver.c: the rigid-body half of a substep (Müller et al. 2020,
 * "Detailed Rigid Body Simulation with Extended Position Based Dynamics",
 * algorithm 2): integrate, project joints and contacts, derive velocities,
 * velocity pass; and how many rigid substeps a tick needs. The end-of-tick
 * joint stabilization is stabilize.c's.
 */
#include "rigid.h"
#include "vec.h"
#include "world.h"

#include <stdlib.h>
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

// Jolt's default cap on a body's angular speed, as a fraction of a half
// turn per tick: 0.25·π/dt (47 rad/s at 60 Hz). A limb flung faster than
// this by a hard impact or a violent joint correction is slowed to it; no
// real limb turns that fast, and above it the rotation of one substep is
// large enough for the solve to go wrong.
#define SIM__MAX_SPIN_PER_TICK (0.25f * 3.14159265f)

static sim_vec3 cap_spin(sim_vec3 wv, float cap) {
    float s = v3_len(wv);
    return s > cap ? v3_scale(wv, cap / s) : wv;
}

// Predicts the island's bodies over h (Müller et al. 2020, algorithm 2).
static void integrate_bodies(sim_world* w, const sim__island* isl, float h) {
    const sim_vec3 g_h = v3_scale(w->params.gravity, h);
    const float cap = SIM__MAX_SPIN_PER_TICK / w->dt;
    const uint32_t* ib = w->isl_bodies + isl->body_first;
    for (uint32_t n = 0; n < isl->body_count; ++n) {
        sim__body* b = &w->body[ib[n]];
        b->x_prev = b->x;
        b->q_prev = b->q;
        // Kinematic bodies carry the velocity their animation gave them;
        // only dynamic ones feel gravity.
        if (b->inv_mass > 0.0f) {
            b->v = v3_add(b->v, g_h);
            b->w = cap_spin(b->w, cap);
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
static void solve_joints(sim_world* w, const sim__island* isl, float h, bool drives) {
    const sim__ijoint* ij = w->isl_joints + isl->joint_first;
    for (uint32_t n = 0; n < isl->joint_count; ++n) {
        sim__joint_solve(&w->body[ij[n].p], &w->body[ij[n].c], &w->bjoint[ij[n].j], h, drives);
    }
}

static void update_velocities(sim_world* w, const sim__island* isl, float h) {
    const uint32_t* ib = w->isl_bodies + isl->body_first;
    for (uint32_t n = 0; n < isl->body_count; ++n) {
        sim__body* b = &w->body[ib[n]];
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

static void damp_joints(sim_world* w, const sim__island* isl, float h) {
    const sim__ijoint* ij = w->isl_joints + isl->joint_first;
    for (uint32_t n = 0; n < isl->joint_count; ++n) {
        sim__joint_damp(&w->body[ij[n].p], &w->body[ij[n].c], &w->bjoint[ij[n].j], h);
    }
}

// How many rigid substeps each of the world's substeps is split into for
// one island this tick: at least enough for SIM__RIGID_MIN_SUBSTEPS per
// tick, and enough that no surface of the island closes on another (or on
// the ground or a box) by more than SIM__RIGID_MAX_TRAVEL in one (a hit at
// speed is caught before it sinks deep, and the joints of what it hits keep
// up), within SIM__RIGID_MAX_SUBSTEPS per tick and the world's solver
// budget. An impact in one island does not raise the cost of the others.
int sim__island_split(const sim_world* w, const sim__island* isl, int substeps) {
    // Only what may hit something this tick counts: bodies falling or
    // tumbling together through the air need no finer steps.
    const float fastest = isl->closing;
    const int lo = (SIM__RIGID_MIN_SUBSTEPS + substeps - 1) / substeps;
    const int hi = (SIM__RIGID_MAX_SUBSTEPS + substeps - 1) / substeps;
    float need = ceilf(fastest * w->dt / (SIM__RIGID_MAX_TRAVEL * (float)substeps));
    int split = need >= (float)hi ? hi : (need <= (float)lo ? lo : (int)need);
    if (split > lo && w->def.max_solver_work != 0) {
        // The budget counts `lo` splits for everything; the island's extra
        // splits must fit in what is left.
        uint64_t base = sim_world_solver_work(w);
        uint64_t one =
            SIM__RIGID_WORK * ((uint64_t)isl->body_count + isl->joint_count) * (uint64_t)substeps;
        while (split > lo && base + one * (uint64_t)(split - lo) > w->def.max_solver_work) {
            split--;
        }
    }
    return split;
}

// One substep of an island's rigid bodies (Müller et al. 2020, Algorithm
// 2): predict, project joints and contacts, derive velocities, solve
// velocities.
void sim__island_substep(sim_world* w, const sim__island* isl, float h) {
    integrate_bodies(w, isl, h);
    sim__contacts_find(w, isl, h);
    for (int pass = 0; pass < SIM__RIGID_PASSES; ++pass) {
        sim__contacts_solve(w, h);
        solve_joints(w, isl, h, pass == 0);
    }
    // A last joint pass: a light bone hit hard (a foot landing) gets its
    // limit back within a degree or two in the same substep.
    solve_joints(w, isl, h, false);
    update_velocities(w, isl, h);
    sim__contacts_velocities(w, h);
    damp_joints(w, isl, h);
    // The velocity passes may have spun a light bone past the cap again.
    const float cap = SIM__MAX_SPIN_PER_TICK / w->dt;
    const uint32_t* ib = w->isl_bodies + isl->body_first;
    for (uint32_t n = 0; n < isl->body_count; ++n) {
        sim__body* b = &w->body[ib[n]];
        if (b->inv_mass > 0.0f) {
            b->w = cap_spin(b->w, cap);
        }
    }
}
