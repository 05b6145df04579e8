/*
 * ragdoll.c: builds the particle ragdoll of seed 002, in 3D: 16 named point
 * masses held by rigid sticks (bones, and a braced torso that is rigid
 * because the chest sits in front of the shoulder/hip plane), with joint
 * limits made of inequality constraints (Jakobsen 2001 §4):
 *
 *   - hips and shoulders: cone limits around a rest direction in the torso
 *     frame (hips 80° around down-and-forward; shoulders 110° around
 *     down-forward-outward, which excludes "behind, above and across"; wider
 *     shoulders bring the elbow hinge near its swing singularity, where its
 *     axis turns ~3x faster than the arm and the solve cannot settle);
 *   - elbows and knees: a particle hinge (constraints.c) keeps the lower
 *     limb in its hinge plane, flexing 0°..150° one way only, so it never
 *     bends backwards or sideways; a minimum shoulder–hand / hip–foot
 *     distance backs up the 150° limit;
 *   - head: minimum distances to the chest and shoulders stop it folding
 *     into the torso;
 *   - legs: minimum knee–chest, knee–knee and foot–foot distances.
 *
 * Bind pose: standing, facing +Z, so the character's left is +X.
 *
 *          head
 *           |
 *   sh_l--neck--sh_r        chest sits 6 cm in front of the neck/pelvis line
 *    |    chest    |
 *   el_l    |    el_r
 *    |    pelvis   |
 *   ha_l  /    \  ha_r
 *      hip_l  hip_r
 *        |      |
 *      knee_l knee_r
 *        |      |
 *      foot_l foot_r
 */
#include "vec.h"
#include "world.h"

#include <string.h>

#define SIM__RAGDOLL_COOKIE 0x5241474du /* "RAGM" */

const char* const sim__ragdoll_names[SIM_RP_COUNT] = {
    "head",    "neck",   "chest", "pelvis", "shoulder_l", "elbow_l", "hand_l", "shoulder_r",
    "elbow_r", "hand_r", "hip_l", "knee_l", "foot_l",     "hip_r",   "knee_r", "foot_r",
};

// Bind pose relative to the pelvis, m. Knees and elbows start slightly
// flexed, inside their hinge limits rather than on the boundary.
static const float ragdoll_bind[SIM_RP_COUNT][3] = {
    [SIM_RP_HEAD] = {0.0f, 0.73f, 0.02f},       [SIM_RP_NECK] = {0.0f, 0.55f, 0.0f},
    [SIM_RP_CHEST] = {0.0f, 0.30f, 0.06f},      [SIM_RP_PELVIS] = {0.0f, 0.0f, 0.0f},
    [SIM_RP_SHOULDER_L] = {0.19f, 0.50f, 0.0f}, [SIM_RP_ELBOW_L] = {0.23f, 0.22f, -0.03f},
    [SIM_RP_HAND_L] = {0.25f, -0.04f, 0.01f},   [SIM_RP_SHOULDER_R] = {-0.19f, 0.50f, 0.0f},
    [SIM_RP_ELBOW_R] = {-0.23f, 0.22f, -0.03f}, [SIM_RP_HAND_R] = {-0.25f, -0.04f, 0.01f},
    [SIM_RP_HIP_L] = {0.10f, -0.05f, 0.0f},     [SIM_RP_KNEE_L] = {0.10f, -0.47f, 0.03f},
    [SIM_RP_FOOT_L] = {0.10f, -0.88f, 0.0f},    [SIM_RP_HIP_R] = {-0.10f, -0.05f, 0.0f},
    [SIM_RP_KNEE_R] = {-0.10f, -0.47f, 0.03f},  [SIM_RP_FOOT_R] = {-0.10f, -0.88f, 0.0f},
};

static const float ragdoll_radius[SIM_RP_COUNT] = {
    [SIM_RP_HEAD] = 0.11f,    [SIM_RP_NECK] = 0.05f,       [SIM_RP_CHEST] = 0.11f,
    [SIM_RP_PELVIS] = 0.10f,  [SIM_RP_SHOULDER_L] = 0.05f, [SIM_RP_ELBOW_L] = 0.045f,
    [SIM_RP_HAND_L] = 0.045f, [SIM_RP_SHOULDER_R] = 0.05f, [SIM_RP_ELBOW_R] = 0.045f,
    [SIM_RP_HAND_R] = 0.045f, [SIM_RP_HIP_L] = 0.07f,      [SIM_RP_KNEE_L] = 0.055f,
    [SIM_RP_FOOT_L] = 0.05f,  [SIM_RP_HIP_R] = 0.07f,      [SIM_RP_KNEE_R] = 0.055f,
    [SIM_RP_FOOT_R] = 0.05f,
};

typedef struct stick_spec {
    uint8_t a, b;
} stick_spec;

// Rigid sticks: 15 bones, then the torso bracing.
static const stick_spec ragdoll_sticks[] = {
    {SIM_RP_HEAD, SIM_RP_NECK},          {SIM_RP_NECK, SIM_RP_CHEST},
    {SIM_RP_CHEST, SIM_RP_PELVIS},       {SIM_RP_NECK, SIM_RP_SHOULDER_L},
    {SIM_RP_SHOULDER_L, SIM_RP_ELBOW_L}, {SIM_RP_ELBOW_L, SIM_RP_HAND_L},
    {SIM_RP_NECK, SIM_RP_SHOULDER_R},    {SIM_RP_SHOULDER_R, SIM_RP_ELBOW_R},
    {SIM_RP_ELBOW_R, SIM_RP_HAND_R},     {SIM_RP_PELVIS, SIM_RP_HIP_L},
    {SIM_RP_HIP_L, SIM_RP_KNEE_L},       {SIM_RP_KNEE_L, SIM_RP_FOOT_L},
    {SIM_RP_PELVIS, SIM_RP_HIP_R},       {SIM_RP_HIP_R, SIM_RP_KNEE_R},
    {SIM_RP_KNEE_R, SIM_RP_FOOT_R},      {SIM_RP_SHOULDER_L, SIM_RP_SHOULDER_R},
    {SIM_RP_HIP_L, SIM_RP_HIP_R},        {SIM_RP_SHOULDER_L, SIM_RP_HIP_L},
    {SIM_RP_SHOULDER_R, SIM_RP_HIP_R},   {SIM_RP_SHOULDER_L, SIM_RP_HIP_R},
    {SIM_RP_SHOULDER_R, SIM_RP_HIP_L},   {SIM_RP_CHEST, SIM_RP_SHOULDER_L},
    {SIM_RP_CHEST, SIM_RP_SHOULDER_R},   {SIM_RP_CHEST, SIM_RP_HIP_L},
    {SIM_RP_CHEST, SIM_RP_HIP_R},        {SIM_RP_NECK, SIM_RP_PELVIS},
};

typedef struct min_spec {
    uint8_t a, b;
    float scale; ///< Minimum distance as a fraction of the bind distance.
} min_spec;

// Minimum distances that are not derived from a hinge angle.
static const min_spec ragdoll_mins[] = {
    {SIM_RP_HEAD, SIM_RP_CHEST, 0.85f},     {SIM_RP_HEAD, SIM_RP_SHOULDER_L, 0.8f},
    {SIM_RP_HEAD, SIM_RP_SHOULDER_R, 0.8f}, {SIM_RP_KNEE_L, SIM_RP_CHEST, 0.45f},
    {SIM_RP_KNEE_R, SIM_RP_CHEST, 0.45f},   {SIM_RP_KNEE_L, SIM_RP_KNEE_R, 0.6f},
    {SIM_RP_FOOT_L, SIM_RP_FOOT_R, 0.5f},
};

typedef struct limb_spec {
    uint8_t a, b, c; ///< Upper end (hip, shoulder), joint, lower end.
    uint8_t l0, l1;  ///< Lateral reference: right to left across the torso.
    float rest[3];   ///< Rest direction of the upper limb in the torso frame (x left, y up, z fwd).
    float sign;      ///< -1: the lower limb swings back (knee); +1: forward (elbow).
    float cone_deg;  ///< Half-angle of the hip/shoulder cone around `rest`.
} limb_spec;

static const limb_spec ragdoll_limbs[] = {
    {SIM_RP_HIP_L,
     SIM_RP_KNEE_L,
     SIM_RP_FOOT_L,
     SIM_RP_HIP_R,
     SIM_RP_HIP_L,
     {0.0f, -1.0f, 0.7f},
     -1.0f,
     80.0f},
    {SIM_RP_HIP_R,
     SIM_RP_KNEE_R,
     SIM_RP_FOOT_R,
     SIM_RP_HIP_R,
     SIM_RP_HIP_L,
     {0.0f, -1.0f, 0.7f},
     -1.0f,
     80.0f},
    {SIM_RP_SHOULDER_L,
     SIM_RP_ELBOW_L,
     SIM_RP_HAND_L,
     SIM_RP_SHOULDER_R,
     SIM_RP_SHOULDER_L,
     {0.35f, -0.6f, 0.7f},
     1.0f,
     110.0f},
    {SIM_RP_SHOULDER_R,
     SIM_RP_ELBOW_R,
     SIM_RP_HAND_R,
     SIM_RP_SHOULDER_R,
     SIM_RP_SHOULDER_L,
     {-0.35f, -0.6f, 0.7f},
     1.0f,
     110.0f},
};

#define N_STICKS (sizeof ragdoll_sticks / sizeof ragdoll_sticks[0])
#define N_MINS   (sizeof ragdoll_mins / sizeof ragdoll_mins[0])
#define N_LIMBS  (sizeof ragdoll_limbs / sizeof ragdoll_limbs[0])

sim_ragdoll_def sim_ragdoll_def_default(void) {
    sim_ragdoll_def d;
    memset(&d, 0, sizeof d);
    d.position = v3(0.0f, 1.0f, 0.0f);
    d.facing = 0.0f;
    d.mass = 1.0f;
    d.cookie = SIM__RAGDOLL_COOKIE;
    return d;
}

int sim_world_spawn_ragdoll(sim_world* w, const sim_ragdoll_def* def, sim_entity_id* out) {
    if (def == NULL || out == NULL || def->cookie != SIM__RAGDOLL_COOKIE) {
        return SIM_E_INVALID_ARG;
    }
    if (!sim_vec3_is_finite(def->position) || !sim_is_finite(def->facing) ||
        !sim_is_finite(def->mass)) {
        return SIM_E_NOT_FINITE;
    }
    if (def->mass < SIM_MIN_MASS || def->mass > SIM_MAX_MASS || fabsf(def->facing) > 1000.0f) {
        return SIM_E_OUT_OF_RANGE;
    }
    sim_vec3 p[SIM_RP_COUNT];
    for (int i = 0; i < SIM_RP_COUNT; ++i) {
        sim_vec3 local = v3(ragdoll_bind[i][0], ragdoll_bind[i][1], ragdoll_bind[i][2]);
        p[i] = v3_add(def->position, v3_rotate_y(local, def->facing));
        if (!sim_world_contains(w, p[i])) {
            return SIM_E_OUT_OF_RANGE;
        }
    }

    uint32_t n_dist = (uint32_t)(N_STICKS + N_MINS + N_LIMBS);
    sim__entity* e;
    int rc = sim__entity_begin(w, SIM_ENTITY_RAGDOLL, SIM_RP_COUNT, n_dist, (uint32_t)(2 * N_LIMBS),
                               0, 0, out, &e);
    if (rc != SIM_OK) {
        return rc;
    }
    e->names = sim__ragdoll_names;
    for (uint32_t i = 0; i < SIM_RP_COUNT; ++i) {
        sim__particle_init(w, e->p_first + i, p[i], 1.0f / def->mass, ragdoll_radius[i]);
    }

    uint32_t k = e->d_first;
    for (size_t j = 0; j < N_STICKS; ++j) {
        sim__dist_init(w, e, k++, ragdoll_sticks[j].a, ragdoll_sticks[j].b, SIM__DIST_EQUAL, 1.0f,
                       0.0f);
    }
    for (size_t j = 0; j < N_MINS; ++j) {
        sim__dist_init(w, e, k++, ragdoll_mins[j].a, ragdoll_mins[j].b, SIM__DIST_MIN,
                       ragdoll_mins[j].scale, 0.0f);
    }
    // Maximum flexion: at interior angle 180° - 150° the end-to-end distance
    // is sqrt(l1² + l2² - 2·l1·l2·cos 30°) (law of cosines).
    const float deg = 3.14159265f / 180.0f;
    const float interior = (180.0f - SIM_RAGDOLL_HINGE_MAX_DEG) * deg;
    const sim_vec3* base = w->pos + e->p_first;
    sim__joint* jt = &w->joint[e->j_first];
    for (size_t j = 0; j < N_LIMBS; ++j) {
        const limb_spec* ls = &ragdoll_limbs[j];
        float l1 = v3_len(v3_sub(base[ls->b], base[ls->a]));
        float l2 = v3_len(v3_sub(base[ls->c], base[ls->b]));
        sim__dist_init(w, e, k, ls->a, ls->c, SIM__DIST_MIN, 1.0f, 0.0f);
        w->dist[k].rest = sqrtf(l1 * l1 + l2 * l2 - 2.0f * l1 * l2 * cosf(interior));
        k++;

        // The hinge axis at the rest direction: the lateral axis carried by
        // the swing from straight down (where the axis is lateral) to it.
        sim_vec3 rest = v3_normalize(v3(ls->rest[0], ls->rest[1], ls->rest[2]));
        sim_vec3 axis = sim__swing(v3(0.0f, -1.0f, 0.0f), rest, v3(1.0f, 0.0f, 0.0f));
        for (int kind = 0; kind < 2; ++kind) {
            sim__joint* jj = jt++;
            jj->kind = kind == 0 ? SIM__JOINT_CONE : SIM__JOINT_HINGE;
            jj->a = ls->a;
            jj->b = ls->b;
            jj->c = ls->c;
            jj->up0 = SIM_RP_PELVIS;
            jj->up1 = SIM_RP_NECK;
            jj->l0 = ls->l0;
            jj->l1 = ls->l1;
            jj->rest_dir = rest;
            jj->rest_axis = v3_normalize(axis);
            jj->sign = ls->sign;
            jj->limit = (kind == 0 ? ls->cone_deg : SIM_RAGDOLL_HINGE_MAX_DEG) * deg;
        }
    }
    e->stick_count = (uint32_t)N_STICKS;
    return SIM_OK;
}
