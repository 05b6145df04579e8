/*
 * test_garment.c: cloth worn by characters (server/sim/garment.c), long-range
 * attachments, and two-way collision between particles and bodies
 * (collide.c).
 *
 * Expected values come from the assets' own numbers (where a pinned point
 * must be, from the bind pose), hand derivations (a stretched scarf's
 * tether distance), and conservation of momentum.
 */
// cmocka.h needs these four before it (cmocka docs); keep the order.
// clang-format off
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
// clang-format on

#include "quat.h"
#include "shipped_library.h"
#include "sim.h"
#include "vec.h"
#include "world.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static sim_library* g_lib;

static int setup(void** state) {
    (void)state;
    g_lib = rd_test_shipped_library();
    return g_lib != NULL ? 0 : -1;
}

static int teardown(void** state) {
    (void)state;
    sim_library_destroy(g_lib);
    return 0;
}

static sim_world* make_world(sim_solver solver) {
    sim_world_def def = sim_world_def_default();
    def.library = g_lib;
    def.solver = solver;
    sim_world* w = NULL;
    assert_int_equal(sim_world_create(&def, &w), SIM_OK);
    return w;
}

static sim_entity_id spawn_character(sim_world* w, sim_vec3 at, const char* clip) {
    sim_character_def cd = sim_character_def_default();
    cd.position = at;
    cd.clip = clip;
    sim_entity_id id;
    assert_int_equal(sim_world_spawn_character(w, &cd, &id), SIM_OK);
    return id;
}

static sim_entity_id attach(sim_world* w, sim_entity_id wearer, sim_garment_kind kind) {
    sim_cloth_attach_def d = sim_cloth_attach_def_default();
    d.wearer = wearer;
    d.kind = kind;
    sim_entity_id id;
    assert_int_equal(sim_world_attach_cloth(w, &d, &id), SIM_OK);
    return id;
}

static const sim_garment_def* garment_of(const sim_skeleton_def* sk, sim_garment_kind kind) {
    for (uint32_t k = 0; k < sk->garment_count; ++k) {
        if (sk->garments[k].kind == kind) {
            return &sk->garments[k];
        }
    }
    fail_msg("no garment %d", (int)kind);
    return &sk->garments[0]; // not reached
}

// Where the asset says the cape's pinned particle c is, in the bone's body
// frame: the point from + (to - from)·c/(C - 1) of the bind pose, taken into
// the frame of the bone's capsule (centre, +X along it).
static sim_vec3 cape_pin_local(const sim_skeleton_def* sk, const sim_garment_def* g, uint32_t c) {
    const sim_bone_def* b = &sk->bones[g->bone];
    sim_vec3 centre = v3_scale(v3_add(b->head, b->tail), 0.5f);
    sim_quat q = q_from_to(v3(1.0f, 0.0f, 0.0f), v3_normalize(v3_sub(b->tail, b->head)));
    float s = (float)c / (float)(g->cols - 1);
    sim_vec3 p = v3_add(g->a, v3_scale(v3_sub(g->b, g->a), s));
    return q_rotate_inv(q, v3_sub(p, centre));
}

static float seg_dist(sim_vec3 a, sim_vec3 b, sim_vec3 p) {
    sim_vec3 ab = v3_sub(b, a);
    float t = v3_dot(v3_sub(p, a), ab) / v3_dot(ab, ab);
    t = t < 0.0f ? 0.0f : (t > 1.0f ? 1.0f : t);
    return v3_len(v3_sub(p, v3_add(a, v3_scale(ab, t))));
}

// The largest distance of a pinned cape particle from its point on the
// chest, and the deepest any free particle is inside a torso capsule
// (chest, spine, pelvis), m.
static void cape_errors(const sim_world* w, sim_entity_id who, sim_entity_id cape, float* pin_err,
                        float* depth) {
    const sim_skeleton_def* sk = sim_library_skeleton(g_lib, "humanoid");
    const sim_garment_def* g = garment_of(sk, SIM_GARMENT_CAPE);
    sim_bone_pose pose[SIM_MAX_BONES];
    sim_vec3 v[SIM_MAX_BONES], om[SIM_MAX_BONES];
    assert_int_equal(sim_character_get_pose(w, who, pose, v, om, SIM_MAX_BONES),
                     (int)sk->bone_count);
    sim_entity_view cv;
    assert_int_equal(sim_entity_get_view(w, cape, &cv), SIM_OK);
    *pin_err = 0.0f;
    for (uint32_t c = 0; c < g->cols; ++c) {
        const sim_bone_pose* bp = &pose[g->bone];
        sim_vec3 want = v3_add(bp->p, q_rotate(bp->q, cape_pin_local(sk, g, c)));
        float e = v3_len(v3_sub(cv.pos[c], want));
        *pin_err = e > *pin_err ? e : *pin_err;
    }
    *depth = 0.0f;
    const char* torso[] = {"chest", "spine", "pelvis"};
    for (int t = 0; t < 3; ++t) {
        int bi = -1;
        for (uint32_t i = 0; i < sk->bone_count; ++i) {
            if (strcmp(sk->bones[i].name, torso[t]) == 0) {
                bi = (int)i;
            }
        }
        assert_true(bi >= 0);
        const sim_bone_def* b = &sk->bones[bi];
        float half = 0.5f * v3_len(v3_sub(b->tail, b->head));
        sim_vec3 ax = q_rotate(pose[bi].q, v3(half, 0.0f, 0.0f));
        sim_vec3 s0 = v3_sub(pose[bi].p, ax), s1 = v3_add(pose[bi].p, ax);
        for (uint32_t i = g->cols; i < cv.particle_count; ++i) {
            float d = b->radius - seg_dist(s0, s1, cv.pos[i]);
            *depth = d > *depth ? d : *depth;
        }
    }
}

static void run_cape(sim_solver solver) {
    sim_world* w = make_world(solver);
    sim_entity_id who = spawn_character(w, v3(0.0f, 0.0f, 0.0f), "walk");
    sim_entity_id cape = attach(w, who, SIM_GARMENT_CAPE);
    float worst_pin = 0.0f, worst_depth = 0.0f;
    for (int t = 0; t < 420; ++t) {
        if (t == 120) { // walking for 2 s, then thrown backwards
            uint32_t bone;
            assert_int_equal(
                sim_character_kill(w, who, v3(0.0f, 1.3f, 0.2f), v3(0.0f, 60.0f, -250.0f), &bone),
                SIM_OK);
        }
        if (t == 300) {
            const char* clip;
            assert_int_equal(sim_character_start_getup(w, who, 0.4f, &clip), SIM_OK);
        }
        sim_world_step(w);
        float pin, depth;
        cape_errors(w, who, cape, &pin, &depth);
        worst_pin = pin > worst_pin ? pin : worst_pin;
        worst_depth = depth > worst_depth ? depth : worst_depth;
    }
    printf("cape (%s): pinned particles at most %.3g mm from their points; free particles at "
           "most %.3g mm inside a torso capsule\n",
           solver == SIM_SOLVER_XPBD ? "xpbd" : "soft step", 1e3 * worst_pin, 1e3 * worst_depth);
    assert_true(worst_pin <= 1e-3f);
    // Never through: inside a capsule by less than the particle's own radius
    // (0.02 m) means it is in contact with the surface, not past it.
    assert_true(worst_depth < 0.02f);
    sim_world_destroy(w);
}

static void test_garment_cape_follows_walking_and_thrown(void** state) {
    (void)state;
    run_cape(SIM_SOLVER_SOFT_STEP);
    run_cape(SIM_SOLVER_XPBD);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_garment_cape_follows_walking_and_thrown),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
