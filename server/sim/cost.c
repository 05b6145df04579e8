/*
 * cost.c: what spawning an entity would add to a world, from its def alone
 * (no world): its counts of particles, constraints, joint limits, bodies and
 * joints. The server admits a spawn on these before it touches a world
 * (server/app/budget.c), and sim_counts_solver_work() (world.c) prices them.
 *
 * The builders (rope.c, cloth.c, ragdoll.c, character.c) ask
 * sim__entity_begin() for exactly these counts; the unit tests spawn every
 * kind and compare, so the two cannot drift apart unseen. Checks here are
 * only those the counts depend on, with the codes the builders give for
 * them.
 */
#include "rigid.h"
#include "world.h"

#include <string.h>

// The particle ragdoll of ragdoll.c: 26 sticks (15 bones and 11 torso
// braces), 7 minimum distances, and per limb (2 legs, 2 arms) one more
// minimum distance for its hinge's flexion and 2 joint limits (a cone and a
// hinge).
#define RAGDOLL_STICKS 26u
#define RAGDOLL_MINS   7u
#define RAGDOLL_LIMBS  4u

static sim_counts one_entity(void) {
    sim_counts c;
    memset(&c, 0, sizeof c);
    c.entities = 1;
    return c;
}

int sim_rope_def_counts(const sim_rope_def* def, sim_counts* out) {
    if (def == NULL || out == NULL || def->cookie != SIM__ROPE_COOKIE) {
        return SIM_E_INVALID_ARG;
    }
    if (def->segments < 1 || def->segments > SIM__MAX_ROPE_SEGMENTS) {
        return SIM_E_OUT_OF_RANGE;
    }
    *out = one_entity();
    out->particles = def->segments + 1;
    out->constraints = def->segments;
    return SIM_OK;
}

int sim_cloth_def_counts(const sim_cloth_def* def, sim_counts* out) {
    if (def == NULL || out == NULL || def->cookie != SIM__CLOTH_COOKIE) {
        return SIM_E_INVALID_ARG;
    }
    if (def->cols < 2 || def->rows < 2) {
        return SIM_E_OUT_OF_RANGE;
    }
    if (def->cols > SIM__MAX_CLOTH_SIDE || def->rows > SIM__MAX_CLOTH_SIDE) {
        return SIM_E_CAPACITY;
    }
    const uint32_t c = def->cols, r = def->rows;
    // Structural: each particle to its right and lower neighbour; shear:
    // both diagonals of every cell; bend: to the particle two to the right
    // and two below.
    uint32_t structural = (c - 1) * r + c * (r - 1);
    uint32_t shear = 2 * (c - 1) * (r - 1);
    uint32_t bend = (c - 2) * r + c * (r - 2);
    *out = one_entity();
    out->particles = c * r;
    out->constraints = structural + shear + bend;
    return SIM_OK;
}

int sim_ragdoll_def_counts(const sim_ragdoll_def* def, sim_counts* out) {
    if (def == NULL || out == NULL || def->cookie != SIM__RAGDOLL_COOKIE) {
        return SIM_E_INVALID_ARG;
    }
    *out = one_entity();
    out->particles = SIM_RP_COUNT;
    out->constraints = RAGDOLL_STICKS + RAGDOLL_MINS + RAGDOLL_LIMBS;
    out->joint_limits = 2 * RAGDOLL_LIMBS;
    return SIM_OK;
}

int sim_character_def_counts(const sim_library* lib, const sim_character_def* def,
                             sim_counts* out) {
    if (def == NULL || out == NULL || def->cookie != SIM__CHAR_COOKIE || def->skeleton == NULL ||
        def->clip == NULL) {
        return SIM_E_INVALID_ARG;
    }
    const sim__skel* sk = sim__library_skel(lib, def->skeleton);
    if (sk == NULL || sim__skel_clip(sk, def->clip) == NULL) {
        return SIM_E_UNKNOWN_NAME;
    }
    if ((uint32_t)def->solver > SIM_CHAR_SOLVER_REDUCED) {
        return SIM_E_INVALID_ARG;
    }
    *out = one_entity();
    out->bodies = sk->def.bone_count;
    out->joints = sk->def.bone_count - 1; // one to each bone's parent; the root has none
    const bool reduced =
        def->solver == SIM_CHAR_SOLVER_REDUCED ||
        (def->solver == SIM_CHAR_SOLVER_DEFAULT && sk->def.solver == SIM_CHAR_SOLVER_REDUCED);
    out->artic_links = reduced ? sk->def.bone_count : 0;
    return SIM_OK;
}

int sim_ball_def_counts(const sim_ball_def* def, sim_counts* out) {
    if (def == NULL || out == NULL || def->cookie != SIM__BALL_COOKIE) {
        return SIM_E_INVALID_ARG;
    }
    *out = one_entity();
    out->bodies = 1;
    return SIM_OK;
}
