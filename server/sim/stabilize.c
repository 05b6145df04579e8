/*
 * stabilize.c: end-of-tick position stabilization of the rigid joints
 * (Box2D v2.4's non-linear Gauss-Seidel joint pass; Jolt's position
 * iterations): once a tick's substeps are done, what the velocity or
 * position solve left of joint gaps and limit excesses is projected away by
 * moving poses only. Velocities are not touched, so the correction brings
 * no energy with it (a correction inside a substep turns into velocity).
 *
 *   XPBD      a fixed 4 passes over each island's joints (sim__joint_solve
 *             with h = 1).
 *   soft step passes over each skeleton's joints until none is off by more
 *             than SIM__NGS_TOL_LIN / SIM__NGS_TOL_ANG (at most
 *             SIM__NGS_MAX_PASSES), then the bodies that went deep into the
 *             ground or a box are lifted back (the joints alone would pull a
 *             foot that hit an edge at 30 m/s into the box after the leg),
 *             and the joints again.
 */
#include "rigid.h"
#include "soft.h"
#include "vec.h"
#include "world.h"

#include <string.h>

// End-of-tick joint stabilization for XPBD. 4 passes, measured by
// ragdoll-impacts (two seeds): worst gap at 5/20/50 m/s onto stairs
// 3.9/9.1/15.4 mm -> 1.7/4.1/8.8 mm, one second later 1.7/1.7/2.3 ->
// 0.9/1.0/1.7 mm, hinge over-range 1.7/2.8/8.8 -> 0.8/1.4/4.4 deg; 8 passes
// gain little more and let ragdolls settle later.
void sim__island_stabilize(sim_world* w, const sim__island* isl, int passes) {
    const sim__ijoint* ij = w->isl_joints + isl->joint_first;
    for (int pass = 0; pass < passes; ++pass) {
        for (uint32_t n = 0; n < isl->joint_count; ++n) {
            sim__joint_solve(&w->body[ij[n].p], &w->body[ij[n].c], &w->bjoint[ij[n].j], 1.0f,
                             false);
        }
    }
}

// Passes over one skeleton's joints (a run of an island's joint list, root
// first) until none is off, at most max_passes; the projections done. A
// joint none of whose bodies moved since it was last found within
// tolerance is still within it and is skipped (the result is the same as
// projecting it: nothing): after the first pass only the part of the
// skeleton that is still moving is visited. Forward only: alternating the
// direction converged slower on the impact scenes (ragdoll-impacts).
static uint32_t stabilize_run(sim_world* w, const sim__ijoint* ij, uint32_t n, int max_passes) {
    // The last pass in which each bone (the skeleton's own index) moved.
    int moved[SIM_MAX_BONES];
    for (uint32_t b = 0; b < SIM_MAX_BONES; ++b) {
        moved[b] = -2;
    }
    uint32_t work = 0;
    for (int pass = 0; pass < max_passes; ++pass) {
        bool off = false;
        for (uint32_t m = 0; m < n; ++m) {
            const sim__bjoint* j = &w->bjoint[ij[m].j];
            if (moved[j->parent] < pass - 1 && moved[j->child] < pass - 1 && pass > 0) {
                continue;
            }
            work++;
            if (sim__joint_project(&w->body[ij[m].p], &w->body[ij[m].c], j, SIM__NGS_TOL_LIN,
                                   SIM__NGS_TOL_ANG) > 1.0f) {
                moved[j->parent] = moved[j->child] = pass;
                off = true;
            }
        }
        if (!off) {
            break;
        }
    }
    return work;
}

uint64_t sim__island_stabilize_to(sim_world* w, const sim__island* isl, int max_passes) {
    // Joints tie only the bones of one skeleton (an island's skeletons touch
    // through contacts, which this does not solve), and the island lists
    // each skeleton's joints together (island.c): each converges on its own,
    // so one bad limb costs its own skeleton's passes, not the island's.
    const sim__ijoint* ij = w->isl_joints + isl->joint_first;
    uint64_t work = 0;
    uint32_t first = 0;
    while (first < isl->joint_count) {
        // A joint's child index is local to its skeleton: the skeleton's
        // first body is where its joints' bodies count from.
        const uint32_t base = ij[first].c - w->bjoint[ij[first].j].child;
        uint32_t end = first + 1;
        while (end < isl->joint_count && ij[end].c - w->bjoint[ij[end].j].child == base) {
            end++;
        }
        work += stabilize_run(w, ij + first, end - first, max_passes);
        first = end;
    }
    return work;
}

// Lifts each awake body that is deeper than SIM__NGS_STATIC_SLOP in the
// ground or a box, at one of this tick's static contact points, back to
// that depth: along the point's normal, at the point, as a positional
// correction against the static world (poses only), and pins it (inverse
// mass and inertia 0) until unpin_all(). The depth is the point's
// separation on the tick's normal, followed to the body's pose now (the
// soft step's own measure, soft_contact.c). Returns whether any body moved.
static bool lift_out_of_statics(sim_world* w) {
    bool moved = false;
    for (uint32_t k = 0; k < w->soft_contact_count; ++k) {
        const sim__soft_contact* c = &w->soft_contacts[k];
        if (c->b != SIM__NO_STATE || c->vn0 > -SIM__NGS_LIFT_SPEED) {
            // Not the world or a sleeping body (a body that moves), or not
            // an impact: a body at rest the joints hold in the ground is the
            // soft contacts' (lifting it each tick, while its joints pull it
            // back, keeps it moving for ever).
            continue;
        }
        sim__body* b = &w->body[w->soft_state[c->a].body];
        if (b->inv_mass <= 0.0f) {
            continue;
        }
        const sim_quat dq = q_mul(b->q, q_conj(b->q_prev));
        const sim_vec3 pa = v3_add(v3_sub(b->x, b->x_prev), q_rotate(dq, c->ca));
        const float s = v3_dot(v3_sub(pa, c->cb), c->n) + c->base_sep;
        if (s >= -SIM__NGS_STATIC_SLOP) {
            continue;
        }
        const sim_vec3 r = q_rotate(dq, c->ra);
        sim__apply_positional(b, NULL, r, v3(0.0f, 0.0f, 0.0f),
                              v3_scale(c->n, -SIM__NGS_STATIC_SLOP - s), 0.0f, 1.0f, 0.0f);
        // Pinned for the joint passes that follow: the rest of the skeleton
        // comes to it rather than pulling it back in.
        b->inv_mass = 0.0f;
        memset(b->iw, 0, sizeof b->iw);
        w->islands[w->isl_of_body[w->soft_state[c->a].body]].lifted = true;
        moved = true;
    }
    return moved;
}

// Gives the pinned bodies their inverse mass and inertia back (the
// solver's copy of each awake body's inverse mass is still in soft_state).
static void unpin_all(sim_world* w) {
    for (uint32_t i = 0; i < w->soft_body_count; ++i) {
        const sim__body_state* s = &w->soft_state[i];
        sim__body* b = &w->body[s->body];
        if (b->inv_mass != s->inv_mass) {
            b->inv_mass = s->inv_mass;
            sim__body_update_inertia(b);
        }
    }
}

// The joints of every island (all), or of those a lift touched.
static uint64_t stabilize_islands(sim_world* w, bool all, int max_passes) {
    uint64_t work = 0;
    for (uint32_t k = 0; k < w->island_count; ++k) {
        if (all || w->islands[k].lifted) {
            work += sim__island_stabilize_to(w, &w->islands[k], max_passes);
        }
    }
    return work;
}

uint64_t sim__soft_stabilize(sim_world* w) {
    for (uint32_t k = 0; k < w->island_count; ++k) {
        w->islands[k].lifted = false;
    }
    uint64_t work = stabilize_islands(w, true, SIM__NGS_MAX_PASSES);
    bool pinned = false;
    for (int round = 0; round < SIM__NGS_STATIC_ROUNDS && lift_out_of_statics(w); ++round) {
        // With bodies pinned where they were lifted to, a skeleton's joints
        // may have no pose that meets them all: a few passes bring the rest
        // of it to the pinned bodies, the free passes below finish.
        work += stabilize_islands(w, false, SIM__NGS_PINNED_PASSES);
        pinned = true;
    }
    if (pinned) {
        // Joints between two pinned bodies, or still pulled open by one,
        // close with every body free again: what is left is small now.
        // (Keeping the lifted bodies 10 times heavier here instead slowed
        // the passes' convergence and opened gaps of up to 17 mm.)
        unpin_all(w);
        work += stabilize_islands(w, false, SIM__NGS_MAX_PASSES);
    }
    return work;
}
