/*
 * test_impacts.c: the rigid solver's robustness under impacts (issue 9),
 * on the scenes of server/sim/scenes/impacts.h, and the probe they measure
 * with (sim_character_probe_joints()).
 *
 * The probe is checked first against independent sources: limit excesses
 * of poses set by hand (a knee bent 160° against its 150°), and joint gaps
 * and hinge angles computed here from the bind pose in the asset file, not
 * from the solver's anchors and frames.
 *
 * The scenes then assert, under each rigid-body solver (soft_step, the
 * default, and xpbd), each target of the issue that holds for every seed
 * ragdoll-impacts tries (1-5; the test runs 1-2). A target that does not
 * hold yet is printed and not asserted; the comment beside it gives today's
 * figures (ragdoll-impacts --seeds 5, gcc Release, 2026-12-02): that list
 * is the solvers' to-do list. No figure the code produced is asserted as a
 * golden value.
 */
// cmocka.h needs these four before it (cmocka docs); keep the order.
// clang-format off
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
// clang-format on

#include "impacts.h"
#include "quat.h"
#include "shipped_library.h"
#include "sim.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define DEG    (180.0f / 3.14159265f)
#define NBONES 16

static sim_library* g_lib;
static const sim_skeleton_def* g_sk;
static sim_quat g_bind_q[SIM_MAX_BONES]; // Bind orientation of each bone.
static sim_vec3 g_bind_c[SIM_MAX_BONES]; // Bind capsule centre of each bone.

static int bone(const char* name) {
    for (uint32_t i = 0; i < g_sk->bone_count; ++i) {
        if (strcmp(g_sk->bones[i].name, name) == 0) {
            return (int)i;
        }
    }
    fail_msg("no bone %s", name);
    return -1;
}

// Adds a one-key clip holding bone `b` turned by `deg` about the model-space
// `axis` from its bind pose (b < 0: the bind pose itself).
static void add_pose_clip(const char* name, int b, sim_vec3 axis, float deg) {
    static sim_quat rot[NBONES];
    for (uint32_t i = 0; i < NBONES; ++i) {
        rot[i] = q_identity();
    }
    if (b >= 0) {
        rot[b] = q_from_axis_angle(axis, deg / DEG);
    }
    static const float t0 = 0.0f;
    static const sim_quat rr = {0.0f, 0.0f, 0.0f, 1.0f};
    sim_clip_def c = {.key_count = 1,
                      .bone_count = NBONES,
                      .times = &t0,
                      .root_pos = &g_bind_c[0],
                      .root_rot = &rr,
                      .rot = rot};
    snprintf(c.name, sizeof c.name, "%s", name);
    assert_int_equal(sim_library_add_clip(g_lib, "humanoid", &c), SIM_OK);
}

static sim_world* make_world(void) {
    sim_world_def def = sim_world_def_default();
    def.library = g_lib;
    sim_world* w = NULL;
    assert_int_equal(sim_world_create(&def, &w), SIM_OK);
    return w;
}

static sim_entity_id spawn(sim_world* w, const char* clip) {
    sim_character_def cd = sim_character_def_default();
    cd.clip = clip;
    sim_entity_id id;
    assert_int_equal(sim_world_spawn_character(w, &cd, &id), SIM_OK);
    return id;
}

static int setup(void** state) {
    (void)state;
    g_lib = rd_test_shipped_library();
    if (g_lib == NULL) {
        return -1;
    }
    g_sk = sim_library_skeleton(g_lib, "humanoid");
    if (g_sk == NULL || g_sk->bone_count != NBONES) {
        return -1;
    }
    for (uint32_t i = 0; i < NBONES; ++i) {
        g_bind_c[i] = v3_scale(v3_add(g_sk->bones[i].head, g_sk->bones[i].tail), 0.5f);
    }
    add_pose_clip("bind", -1, v3(1, 0, 0), 0.0f);
    // The bind orientations, as a character spawned in the bind pose at the
    // origin facing +Z has them (whatever roll the library gives a bone).
    sim_world* w = make_world();
    sim_entity_id id = spawn(w, "bind");
    sim_bone_pose p[SIM_MAX_BONES];
    if (sim_character_get_pose(w, id, p, NULL, NULL, SIM_MAX_BONES) != NBONES) {
        return -1;
    }
    for (uint32_t i = 0; i < NBONES; ++i) {
        g_bind_q[i] = p[i].q;
    }
    sim_world_destroy(w);
    return 0;
}

static int teardown(void** state) {
    (void)state;
    sim_library_destroy(g_lib);
    return 0;
}

// ---------------------------------------------------------------------------
// The probe against independent sources
// ---------------------------------------------------------------------------

// Poses set by hand through one-key clips (an animated character holds its
// clip's pose exactly): each exceeds one limit of the file by 10°.
static void test_impacts_probe_measures_limits_set_by_hand(void** state) {
    (void)state;
    int knee = bone("lower_leg_l"), head = bone("head");
    // The shin runs straight down (head [0.10, 0.50, 0], tail [0.10, 0.09,
    // 0]) and its hinge axis is +X: bent 160° about +X (flexion), it is
    // 160° - 150° = 10° past its range [0°, 150°].
    add_pose_clip("knee160", knee, v3(1, 0, 0), 160.0f);
    // The head runs straight up ([0, 1.49, 0] to [0, 1.65, 0]); its first
    // swing axis is +X (half-angle 45°), its second bone × axis = -Z (35°),
    // its twist about the bone [-60°, 60°]. Turned 55° about +X, 45° about
    // Z or 70° about +Y, each is 10° outside.
    add_pose_clip("nod55", head, v3(1, 0, 0), 55.0f);
    add_pose_clip("tilt45", head, v3(0, 0, 1), 45.0f);
    add_pose_clip("turn70", head, v3(0, 1, 0), 70.0f);
    const struct {
        const char* clip;
        int bone;
        float twist_deg, swing_deg;
    } cases[] = {{"knee160", knee, 10.0f, 0.0f},
                 {"nod55", head, 0.0f, 10.0f},
                 {"tilt45", head, 0.0f, 10.0f},
                 {"turn70", head, 10.0f, 0.0f},
                 {"bind", head, 0.0f, 0.0f}};
    sim_world* w = make_world();
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; ++k) {
        sim_entity_id id = spawn(w, cases[k].clip);
        for (int t = 0; t < 2; ++t) { // As spawned, and after a step.
            sim_joint_probe jp[SIM_MAX_BONES];
            assert_int_equal(sim_character_probe_joints(w, id, jp, SIM_MAX_BONES), NBONES);
            for (int i = 0; i < NBONES; ++i) {
                bool posed = i == cases[k].bone;
                assert_true(jp[i].gap < 1e-5f);
                assert_float_equal(jp[i].twist_over * DEG, posed ? cases[k].twist_deg : 0.0f, 0.05);
                assert_float_equal(jp[i].swing_over * DEG, posed ? cases[k].swing_deg : 0.0f, 0.05);
            }
            sim_world_step(w);
        }
        assert_int_equal(sim_world_despawn(w, id), SIM_OK);
    }
    // A capacity of 3 fills 3; a stale id is refused.
    sim_entity_id id = spawn(w, "bind");
    sim_joint_probe jp[3];
    assert_int_equal(sim_character_probe_joints(w, id, jp, 3), 3);
    assert_int_equal(sim_world_despawn(w, id), SIM_OK);
    assert_int_equal(sim_character_probe_joints(w, id, jp, 3), SIM_E_STALE_ID);
    sim_world_destroy(w);
}

// Where the parent and the child put the joint: the child's bind `head`
// carried by each bone (from the file, not from the solver's anchors), m.
static float gap_from_file(const sim_bone_pose* p, uint32_t i) {
    uint32_t pa = (uint32_t)g_sk->bones[i].parent;
    sim_vec3 head = g_sk->bones[i].head;
    sim_vec3 lp = q_rotate(q_conj(g_bind_q[pa]), v3_sub(head, g_bind_c[pa]));
    sim_vec3 lc = q_rotate(q_conj(g_bind_q[i]), v3_sub(head, g_bind_c[i]));
    sim_vec3 ap = v3_add(p[pa].p, q_rotate(p[pa].q, lp));
    sim_vec3 ac = v3_add(p[i].p, q_rotate(p[i].q, lc));
    return v3_len(v3_sub(ap, ac));
}

// A hinge's angle from the file: the bone's rotation relative to its parent
// in model space, M = B_p · q_p⁻¹ · q_c · B_c⁻¹ (identity in the bind
// pose), about the file's hinge axis, rad.
static float hinge_angle_from_file(const sim_bone_pose* p, uint32_t i) {
    uint32_t pa = (uint32_t)g_sk->bones[i].parent;
    sim_quat m = q_normalize(
        q_mul(q_mul(g_bind_q[pa], q_conj(p[pa].q)), q_mul(p[i].q, q_conj(g_bind_q[i]))));
    if (m.w < 0.0f) {
        m = q4(-m.x, -m.y, -m.z, -m.w);
    }
    sim_vec3 n = v3_normalize(g_sk->bones[i].axis);
    return 2.0f * atan2f(m.x * n.x + m.y * n.y + m.z * n.z, m.w);
}

// A ragdoll hit by a 200 kg ball at 50 m/s: on every tick the probe's gaps
// and hinge over-ranges equal the ones computed from the file.
static void test_impacts_probe_agrees_with_the_file_geometry(void** state) {
    (void)state;
    sim_world* w = make_world();
    sim_entity_id id = spawn(w, "bind");
    assert_int_equal(sim_character_kill(w, id, v3(0, 1, 0), v3(0, 0, 0), NULL), SIM_OK);
    sim_ball_def bd = sim_ball_def_default();
    bd.position = v3(0, 1.2f, -1.5f);
    bd.velocity = v3(0, 0, 50.0f);
    bd.radius = 0.25f;
    bd.mass = 200.0f;
    sim_entity_id ball;
    assert_int_equal(sim_world_spawn_ball(w, &bd, &ball), SIM_OK);
    float worst_gap = 0.0f, worst_diff = 0.0f, worst_over = 0.0f, worst_over_diff = 0.0f;
    for (int t = 0; t < 120; ++t) {
        sim_world_step(w);
        sim_bone_pose p[SIM_MAX_BONES];
        sim_joint_probe jp[SIM_MAX_BONES];
        assert_int_equal(sim_character_get_pose(w, id, p, NULL, NULL, SIM_MAX_BONES), NBONES);
        assert_int_equal(sim_character_probe_joints(w, id, jp, SIM_MAX_BONES), NBONES);
        for (uint32_t i = 1; i < NBONES; ++i) {
            float g = gap_from_file(p, i);
            worst_gap = fmaxf(worst_gap, g);
            worst_diff = fmaxf(worst_diff, fabsf(g - jp[i].gap));
            if (g_sk->bones[i].joint == SIM_JOINT_HINGE) {
                float a = hinge_angle_from_file(p, i);
                float over =
                    fmaxf(0.0f, fmaxf(g_sk->bones[i].twist_min - a, a - g_sk->bones[i].twist_max));
                worst_over = fmaxf(worst_over, over);
                worst_over_diff = fmaxf(worst_over_diff, fabsf(over - jp[i].twist_over));
            }
        }
    }
    printf("probe vs file: worst gap %.2f mm (differs by %.4f mm), worst hinge over %.2f deg "
           "(differs by %.4f deg)\n",
           (double)(worst_gap * 1e3f), (double)(worst_diff * 1e3f), (double)(worst_over * DEG),
           (double)(worst_over_diff * DEG));
    // The joints really opened: far more than the difference allowed.
    assert_true(worst_gap > 1e-4f);
    // Equal but for float rounding (positions several metres out: a few
    // µm).
    assert_true(worst_diff < 5e-5f);
    assert_true(worst_over_diff < 0.01f / DEG);
    sim_world_destroy(w);
}

// ---------------------------------------------------------------------------
// 1. Twenty ragdolls thrown onto stairs
// ---------------------------------------------------------------------------

static void print_figures(const char* what, const sim_impact_figures* f) {
    printf("%s: gap max %.1f mm (tick %u, bone %u), from 1 s %.2f mm, hinge over %.1f deg, "
           "ball over %.1f deg, spin max %.0f rad/s, fastest %.1f m/s, at rest after %.2f s "
           "(%u/%u at the end)%s\n",
           what, (double)(f->gap_max * 1e3f), f->gap_max_tick, f->gap_max_bone,
           (double)(f->gap_late * 1e3f), (double)(f->hinge_over * DEG),
           (double)(f->ball_over * DEG), (double)f->omega_max, (double)f->speed_max,
           (double)f->rest_time, f->at_rest, f->ragdolls, f->finite ? "" : ", NOT FINITE");
}

static const char* solver_name(sim_solver solver) {
    return solver == SIM_SOLVER_XPBD ? "xpbd" : "soft_step";
}

// Under each solver, seeds 1-2 (ragdoll-impacts runs 1-5).
static void test_impacts_twenty_ragdolls_thrown_onto_stairs(void** state) {
    (void)state;
    const float speeds[] = {5.0f, 20.0f, 50.0f};
    const sim_solver solvers[] = {SIM_SOLVER_SOFT_STEP, SIM_SOLVER_XPBD};
    for (int k = 0; k < 2; ++k) {
        const bool soft = solvers[k] == SIM_SOLVER_SOFT_STEP;
        for (int s = 0; s < 3; ++s) {
            for (uint32_t seed = 1; seed <= 2; ++seed) {
                sim_impact_figures f;
                assert_int_equal(sim_impact_stairs(g_lib, solvers[k], SIM_CHAR_SOLVER_MAXIMAL,
                                                   speeds[s], seed, 20, 5.0f, &f),
                                 SIM_OK);
                char what[80];
                snprintf(what, sizeof what, "stairs %.0f m/s seed %u (%s)", (double)speeds[s], seed,
                         solver_name(solvers[k]));
                print_figures(what, &f);
                assert_int_equal(f.ragdolls, 20);
                assert_true(f.finite);
                // Joint gaps at every tick <= 2 cm at 50 m/s, and so at the
                // lower speeds (the issue sets none at 20 m/s); <= 5 mm at
                // 5 m/s; <= 1 mm one second after the throw.
                assert_true(f.gap_max <= 0.02f);
                if (speeds[s] == 5.0f) {
                    assert_true(f.gap_max <= 0.005f);
                }
                if (soft || speeds[s] == 5.0f) {
                    assert_true(f.gap_late <= 0.001f);
                }
                // Hinges within 2° of their range at every tick.
                if (soft || speeds[s] <= 20.0f) {
                    assert_true(f.hinge_over <= 2.0f / DEG);
                }
                // No bone ever spins past the cap, 0.25·π per tick (Jolt's
                // default): 47.12 rad/s at 60 Hz.
                assert_true(f.omega_max <= 0.25f * 3.14159265f * 60.0f * 1.0001f);
                // NOT YET, today's figures over seeds 1-5 (ragdoll-impacts
                // --seeds 5):
                // - every ragdoll at rest (bones < 0.05 m/s) within 5 s:
                //   soft_step: 14 of 15 runs, the last ragdoll settling after
                //   2.4-4.9 s, but 5.25 s at 5 m/s seed 4 and 5.85 s at
                //   20 m/s seed 3 (all 20 at rest by 6 s); xpbd: 8 of 15
                //   (3.3 s to never: 2 of 20 still sliding after 6 s at
                //   5 m/s, seed 5);
                // - xpbd only: gaps <= 1 mm from 1 s after the throw at 20
                //   and 50 m/s (0.69-2.35 mm at 20, 0.71-1.68 at 50);
                //   hinges within 2° at 50 m/s (2.9-4.8°).
            }
        }
    }
}

// ---------------------------------------------------------------------------
// 2. A foot onto a box edge from 50 m
// ---------------------------------------------------------------------------

static void foot_on_edge(sim_solver solver) {
    sim_impact_figures f;
    assert_int_equal(
        sim_impact_foot_on_edge(g_lib, solver, SIM_CHAR_SOLVER_MAXIMAL, 50.0f, 2.0f, &f), SIM_OK);
    char what[80];
    snprintf(what, sizeof what, "foot on a box edge from 50 m (%s)", solver_name(solver));
    print_figures(what, &f);
    printf("  leg %.4f m, contact at tick %u, deepest in the box %.1f mm (axis %.1f mm)\n",
           (double)f.limb_length, f.impact_tick, (double)(f.box_depth * 1e3f),
           (double)(f.box_axis_depth * 1e3f));
    // The left leg from the file: thigh 0.90 - 0.50 = 0.40 m, shin 0.50 -
    // 0.09 = 0.41 m, foot √(0.045² + 0.17²) = 0.17586 m: 0.98586 m.
    assert_float_equal(f.limb_length, 0.98586f, 1e-4);
    // It falls about 50 m (the sole starts 50.02 m over the box top):
    // √(2 · 50.02 / 9.81) = 3.193 s = tick 191.6 at 60 Hz.
    assert_in_range(f.impact_tick, 190, 193);
    assert_true(f.finite);
    // Joint gaps <= 2 % of the leg (19.7 mm) at every tick (today xpbd
    // 1.5 mm, soft_step 0.25 mm) and <= 0.5 % (4.93 mm) from 1 s after the
    // contact (xpbd 0.34 mm, soft_step 0.25 mm).
    assert_true(f.gap_max <= 0.02f * 0.98586f);
    assert_true(f.gap_late <= 0.005f * 0.98586f);
    // No limb through the box: no bone's axis deeper in it than the bone's
    // radius (today the deepest axis goes 36 mm (xpbd) or 31-35 mm
    // (soft_step) into the box for a tick, of a 45-55 mm radius, as the foot
    // slips off the edge).
    assert_false(f.through_box);
}

static void test_impacts_a_foot_dropped_50_m_onto_a_box_edge(void** state) {
    (void)state;
    foot_on_edge(SIM_SOLVER_SOFT_STEP);
    foot_on_edge(SIM_SOLVER_XPBD);
}

// ---------------------------------------------------------------------------
// 3. A heavy sphere at 100 m/s into the chest
// ---------------------------------------------------------------------------

static void sphere_into_chest(sim_solver solver) {
    // 1 m across at 1000 kg/m³: (4/3) · π · 0.5³ · 1000 = 523.6 kg.
    sim_impact_figures f;
    assert_int_equal(
        sim_impact_sphere(g_lib, solver, SIM_CHAR_SOLVER_MAXIMAL, 0.5f, 523.6f, 100.0f, 3.0f, &f),
        SIM_OK);
    char what[80];
    snprintf(what, sizeof what, "1 m sphere at 100 m/s into the chest (%s)", solver_name(solver));
    print_figures(what, &f);
    // 1 m from the chest at 100 m/s: contact within 0.01 s, the first tick.
    assert_int_equal(f.impact_tick, 1);
    // Nothing non-finite, no bone faster than twice the sphere (today
    // xpbd 104.7 m/s, soft_step 119.2), gaps < 5 cm at every tick (1.1 mm,
    // 0.25 mm) and < 1 cm from 1 s after the impact (0.37 mm, 0.25 mm).
    assert_true(f.finite);
    assert_true(f.speed_max <= 200.0f);
    assert_true(f.gap_max < 0.05f);
    assert_true(f.gap_late < 0.01f);
}

static void test_impacts_a_heavy_sphere_at_100_m_s_into_the_chest(void** state) {
    (void)state;
    sphere_into_chest(SIM_SOLVER_SOFT_STEP);
    sphere_into_chest(SIM_SOLVER_XPBD);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_impacts_probe_measures_limits_set_by_hand),
        cmocka_unit_test(test_impacts_probe_agrees_with_the_file_geometry),
        cmocka_unit_test(test_impacts_twenty_ragdolls_thrown_onto_stairs),
        cmocka_unit_test(test_impacts_a_foot_dropped_50_m_onto_a_box_edge),
        cmocka_unit_test(test_impacts_a_heavy_sphere_at_100_m_s_into_the_chest),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
