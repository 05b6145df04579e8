/*
 * test_sim.c: unit tests of the particle simulator (server/sim).
 *
 * Expected values come from the seeds' worked examples, hand derivations and
 * conservation laws, never from the code under test.
 */
// cmocka.h needs these four before it (cmocka docs); keep the order.
// clang-format off
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
// clang-format on

#include "scenes.h"
#include "sim.h"
#include "vec.h"
#include "world.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define DEG (180.0f / 3.14159265f)

static sim_world* make_world(const sim_world_def* def) {
    sim_world* w = NULL;
    assert_int_equal(sim_world_create(def, &w), SIM_OK);
    assert_non_null(w);
    return w;
}

// Two free particles of `mass` kg joined by one stick of `length` m along +X
// from `at`, with collision radius `radius`: the smallest body to test
// integration, weighting and contacts on.
static sim_entity_id free_pair(sim_world* w, sim_vec3 at, float length, float radius, float mass) {
    sim_rope_def r = sim_rope_def_default();
    r.anchor = at;
    r.segments = 1;
    r.segment_length = length;
    r.pin_first = false;
    r.radius = radius;
    r.mass = mass;
    sim_entity_id id;
    assert_int_equal(sim_world_spawn_rope(w, &r, &id), SIM_OK);
    return id;
}

// ---------------------------------------------------------------------------
// Seed 000 §7: the Verlet rope
// ---------------------------------------------------------------------------

// The seed's own program, transcribed from seed 000 §7 (2D, float), as an
// independent reference for the rope test.
typedef struct seed_particle {
    float x, y, px, py;
    int pinned;
} seed_particle;

static void seed_rope_run(seed_particle* rope, int frames) {
    const int n = 6;
    const float rest = 0.5f, gravity = -9.8f, dt = 1.0f / 60.0f;
    for (int i = 0; i < n; i++) {
        rope[i].x = (float)i * rest;
        rope[i].y = 0.0f;
        rope[i].px = rope[i].x;
        rope[i].py = rope[i].y;
        rope[i].pinned = (i == 0);
    }
    for (int frame = 0; frame < frames; frame++) {
        for (int i = 0; i < n; i++) {
            seed_particle* p = &rope[i];
            if (p->pinned) {
                continue;
            }
            float nx = 2 * p->x - p->px;
            float ny = 2 * p->y - p->py + gravity * dt * dt;
            p->px = p->x;
            p->py = p->y;
            p->x = nx;
            p->y = ny;
        }
        for (int it = 0; it < 5; it++) {
            for (int i = 0; i < n - 1; i++) {
                seed_particle* a = &rope[i];
                seed_particle* b = &rope[i + 1];
                float dx = b->x - a->x, dy = b->y - a->y;
                float dist = sqrtf(dx * dx + dy * dy);
                if (dist < 1e-6f) {
                    continue;
                }
                float diff = (dist - rest) / dist;
                float ma = a->pinned ? 0.0f : (b->pinned ? 1.0f : 0.5f);
                float mb = b->pinned ? 0.0f : (a->pinned ? 1.0f : 0.5f);
                a->x += dx * ma * diff;
                a->y += dy * ma * diff;
                b->x -= dx * mb * diff;
                b->y -= dy * mb * diff;
            }
        }
    }
}

static void test_sim_rope_matches_jakobsen_seed(void** state) {
    (void)state;
    sim_world_def def = sim_scene_seed_rope_world_def();
    sim_world* w = make_world(&def);
    sim_entity_id id;
    assert_int_equal(sim_scene_seed_rope(w, &id), SIM_OK);

    // The seed's printed output after frames 0, 1 and 2.
    static const char* const expected[3] = {
        "(2.5000, -0.0027)",
        "(2.5000, -0.0082)",
        "(2.4999, -0.0163)",
    };
    sim_entity_view v;
    for (int frame = 0; frame < 3; ++frame) {
        sim_world_step(w);
        assert_int_equal(sim_entity_get_view(w, id, &v), SIM_OK);
        assert_int_equal(v.particle_count, 6);
        char got[64];
        snprintf(got, sizeof got, "(%.4f, %.4f)", (double)v.pos[5].x, (double)v.pos[5].y);
        assert_string_equal(got, expected[frame]);
        assert_true(v.pos[5].z == 0.0f);
    }

    // Beyond the printed frames, the seed program itself is the reference:
    // 120 frames of its loop against ours, every particle within 1e-5 m.
    sim_world_destroy(w);
    w = make_world(&def);
    assert_int_equal(sim_scene_seed_rope(w, &id), SIM_OK);
    seed_particle ref[6];
    for (int frames = 1; frames <= 120; ++frames) {
        sim_world_step(w);
        seed_rope_run(ref, frames);
        assert_int_equal(sim_entity_get_view(w, id, &v), SIM_OK);
        for (int i = 0; i < 6; ++i) {
            assert_true(fabsf(v.pos[i].x - ref[i].x) < 1e-5f);
            assert_true(fabsf(v.pos[i].y - ref[i].y) < 1e-5f);
        }
    }
    sim_world_destroy(w);
}

// ---------------------------------------------------------------------------
// Mass weighting and pins
// ---------------------------------------------------------------------------

static void test_sim_correction_is_weighted_by_inverse_mass(void** state) {
    (void)state;
    sim_world_def def = sim_world_def_default();
    def.params.gravity = v3(0.0f, 0.0f, 0.0f);
    def.params.damping = 1.0f;
    def.params.iterations = 1;
    def.ground = false;
    sim_world* w = make_world(&def);

    sim_entity_id id = free_pair(w, v3(0.0f, 1.0f, 0.0f), 1.0f, 0.02f, 1.0f);

    // Particle 0 weighs 1 kg, particle 1 weighs 3 kg; stretch the stick by
    // 0.4 m. One projection must move them by w_i/(w_0 + w_1) of the error:
    // 0.4·1/(1 + 1/3) = 0.3 m and 0.4·(1/3)/(4/3) = 0.1 m, toward each other,
    // which leaves the centre of mass (0·1 + 1.4·3)/4 = 1.05 m where it was.
    sim__entity* e = sim__entity_get(w, id);
    w->inv_mass[e->p_first + 1] = 1.0f / 3.0f;
    w->pos[e->p_first + 1].x = 1.4f;
    w->prev[e->p_first + 1].x = 1.4f;
    sim_world_step(w);

    sim_entity_view v;
    assert_int_equal(sim_entity_get_view(w, id, &v), SIM_OK);
    assert_float_equal(v.pos[0].x, 0.3f, 1e-5f);
    assert_float_equal(v.pos[1].x, 1.3f, 1e-5f);
    float com = (v.pos[0].x * 1.0f + v.pos[1].x * 3.0f) / 4.0f;
    assert_float_equal(com, 1.05f, 1e-5f);
    sim_world_destroy(w);
}

static void test_sim_pinned_particles_never_move(void** state) {
    (void)state;
    sim_world_def def = sim_world_def_default();
    sim_world* w = make_world(&def);
    sim_entity_id cloth, rope;
    assert_int_equal(sim_scene_seed_cloth(w, &cloth), SIM_OK);
    assert_int_equal(sim_scene_seed_rope(w, &rope), SIM_OK);

    sim_entity_view v;
    assert_int_equal(sim_entity_get_view(w, cloth, &v), SIM_OK);
    sim_vec3 top[12];
    memcpy(top, v.pos, sizeof top);
    assert_int_equal(sim_entity_get_view(w, rope, &v), SIM_OK);
    sim_vec3 anchor = v.pos[0];

    for (int t = 0; t < 240; ++t) {
        // Shake everything: impulses on the pins and their neighbours.
        sim_vec3 j = v3(50.0f * (float)((t % 3) - 1), 30.0f, -20.0f);
        assert_int_equal(sim_entity_apply_impulse(w, cloth, (uint32_t)(t % 12), j), SIM_OK);
        assert_int_equal(sim_entity_apply_impulse(w, cloth, 12u + (uint32_t)(t % 12), j), SIM_OK);
        assert_int_equal(sim_entity_apply_impulse(w, rope, 0, j), SIM_OK);
        assert_int_equal(sim_entity_apply_impulse(w, rope, 3, j), SIM_OK);
        sim_world_step(w);
    }
    assert_int_equal(sim_entity_get_view(w, cloth, &v), SIM_OK);
    for (int i = 0; i < 12; ++i) {
        assert_memory_equal(&v.pos[i], &top[i], sizeof(sim_vec3));
        assert_true(v.inv_mass[i] == 0.0f);
    }
    assert_int_equal(sim_entity_get_view(w, rope, &v), SIM_OK);
    assert_memory_equal(&v.pos[0], &anchor, sizeof anchor);
    sim_world_destroy(w);
}

// ---------------------------------------------------------------------------
// Cloth
// ---------------------------------------------------------------------------

static void test_sim_cloth_hangs_within_two_percent(void** state) {
    (void)state;
    sim_world_def def = sim_world_def_default();
    def.params.iterations = 8;
    sim_world* w = make_world(&def);
    sim_entity_id id;
    assert_int_equal(sim_scene_seed_cloth(w, &id), SIM_OK);
    for (int t = 0; t < 120; ++t) { // 2 s at 60 Hz
        sim_world_step(w);
    }
    sim_entity_view v;
    assert_int_equal(sim_entity_get_view(w, id, &v), SIM_OK);
    const uint32_t C = v.cols, R = v.rows;
    assert_int_equal(C, 12);
    assert_int_equal(R, 10);
    // Structural neighbours from the grid itself: right and below, rest 0.2 m.
    float worst = 0.0f, sag = 0.0f;
    for (uint32_t y = 0; y < R; ++y) {
        for (uint32_t x = 0; x < C; ++x) {
            uint32_t i = y * C + x;
            if (x + 1 < C) {
                float s = fabsf(v3_len(v3_sub(v.pos[i + 1], v.pos[i])) / 0.2f - 1.0f);
                worst = s > worst ? s : worst;
            }
            if (y + 1 < R) {
                float s = fabsf(v3_len(v3_sub(v.pos[i + C], v.pos[i])) / 0.2f - 1.0f);
                worst = s > worst ? s : worst;
            }
        }
    }
    sag = 4.0f - v.pos[(R - 1) * C].y;
    print_message("cloth 12x10: worst structural strain %.3f %%, bottom row %.3f m below top\n",
                  (double)(worst * 100.0f), (double)sag);
    assert_true(worst < 0.02f);
    // It really hangs: the bottom row is about (rows - 1) × spacing down.
    assert_true(sag > 1.7f && sag < 1.9f);
    sim_world_destroy(w);
}

// ---------------------------------------------------------------------------
// Particle ragdoll joint limits
// ---------------------------------------------------------------------------

// Angles of a particle joint limit (sim__joint, the ragdoll's definition),
// measured from positions with this test's own geometry: the torso frame,
// the limb's angle from its rest direction and, for a hinge, the hinge axis
// carried by the limb's swing (rotation about k̂ = rest × û by their angle,
// Rodrigues' formula in its trigonometric form).
typedef struct joint_angles {
    float cone;    ///< Upper limb's angle from its rest direction, degrees.
    float flexion; ///< Hinge: angle between upper and lower limb, negative on the forbidden side.
    float lateral; ///< Hinge: lower limb's angle out of the hinge plane, degrees.
} joint_angles;

static sim_vec3 rotate_about(sim_vec3 v, sim_vec3 k, float th) {
    return v3_add(v3_add(v3_scale(v, cosf(th)), v3_scale(v3_cross(k, v), sinf(th))),
                  v3_scale(k, v3_dot(k, v) * (1.0f - cosf(th))));
}

static joint_angles measure_joint(const sim_vec3* p, const sim__joint* j) {
    joint_angles out = {0.0f, 0.0f, 0.0f};
    sim_vec3 up = v3_normalize(v3_sub(p[j->up1], p[j->up0]));
    sim_vec3 lat = v3_sub(p[j->l1], p[j->l0]);
    lat = v3_normalize(v3_sub(lat, v3_scale(up, v3_dot(lat, up))));
    sim_vec3 fw = v3_cross(lat, up);
    sim_vec3 rest = v3_add(v3_add(v3_scale(lat, j->rest_dir.x), v3_scale(up, j->rest_dir.y)),
                           v3_scale(fw, j->rest_dir.z));
    sim_vec3 axis0 = v3_add(v3_add(v3_scale(lat, j->rest_axis.x), v3_scale(up, j->rest_axis.y)),
                            v3_scale(fw, j->rest_axis.z));
    sim_vec3 u = v3_normalize(v3_sub(p[j->b], p[j->a]));
    float th = acosf(fmaxf(-1.0f, fminf(1.0f, v3_dot(rest, u))));
    out.cone = th * DEG;
    if (j->kind == SIM__JOINT_HINGE) {
        sim_vec3 k = v3_cross(rest, u);
        sim_vec3 axis = v3_len(k) > 1e-6f ? rotate_about(axis0, v3_normalize(k), th) : axis0;
        sim_vec3 d = v3_normalize(v3_sub(p[j->c], p[j->b]));
        float flex = acosf(fmaxf(-1.0f, fminf(1.0f, v3_dot(u, d)))) * DEG;
        float side = j->sign * v3_dot(d, v3_cross(u, axis));
        out.flexion = side < -1e-4f ? -flex : flex;
        out.lateral = asinf(fminf(1.0f, fabsf(v3_dot(d, axis)))) * DEG;
    }
    return out;
}

// A small deterministic generator for test variety (Numerical Recipes LCG).
static float lcg_unit(uint32_t* state) {
    *state = *state * 1664525u + 1013904223u;
    return (float)(*state >> 8) / 16777216.0f;
}

typedef struct drop_result {
    float flex_lo, flex_hi;          ///< Extremes of signed hinge flexion, degrees.
    float worst_lat;                 ///< Worst hinge out-of-plane angle, degrees.
    float worst_hip, worst_shoulder; ///< Worst cone angle minus its limit, degrees.
    int samples;                     ///< Joint samples taken.
    int over_1deg;                   ///< Samples beyond any limit by more than 1°.
} drop_result;

// Drops the particle ragdoll from 5 m onto a platform edge `drops` times
// with random facing and spin, for 4 s each, and records its joint angles.
static drop_result ragdoll_drops(int iterations, int substeps, int drops) {
    drop_result r = {1e9f, -1e9f, 0.0f, -1e9f, -1e9f, 0, 0};
    uint32_t rng = 12345u;
    for (int drop = 0; drop < drops; ++drop) {
        sim_world_def def = sim_world_def_default();
        def.params.iterations = iterations;
        def.params.substeps = substeps;
        sim_world* w = make_world(&def);
        // A platform whose edge is at x = 0; the ragdoll falls from 5 m
        // straddling it, so one side lands on it and the other swings over.
        sim_box box = {{-1.0f, 0.5f, 0.0f}, {1.0f, 0.5f, 1.0f}};
        assert_int_equal(sim_world_add_box(w, box), SIM_OK);
        sim_ragdoll_def rd = sim_ragdoll_def_default();
        rd.position = v3(0.2f * lcg_unit(&rng) - 0.1f, 5.0f, 0.0f);
        rd.facing = 6.2831853f * lcg_unit(&rng);
        sim_entity_id id;
        assert_int_equal(sim_world_spawn_ragdoll(w, &rd, &id), SIM_OK);
        // Opposite pushes on head and a foot spin it so it lands any way up.
        sim_vec3 spin = v3(8.0f * lcg_unit(&rng) - 4.0f, 0.0f, 8.0f * lcg_unit(&rng) - 4.0f);
        assert_int_equal(sim_entity_apply_impulse(w, id, SIM_RP_HEAD, spin), SIM_OK);
        assert_int_equal(sim_entity_apply_impulse(w, id, SIM_RP_FOOT_L, v3_scale(spin, -1.0f)),
                         SIM_OK);
        const sim__entity* e = sim__entity_get(w, id);
        assert_int_equal(e->j_count, 8); // a cone and a hinge per limb
        float min_y = 1e9f;
        sim_entity_view v;
        for (int t = 0; t < 240; ++t) {
            sim_world_step(w);
            assert_int_equal(sim_entity_get_view(w, id, &v), SIM_OK);
            for (uint32_t k = 0; k < e->j_count; ++k) {
                const sim__joint* j = &w->joint[e->j_first + k];
                joint_angles a = measure_joint(v.pos, j);
                float over = a.cone - j->limit * DEG;
                r.samples++;
                if (j->kind == SIM__JOINT_CONE) {
                    r.over_1deg += over > 1.0f;
                    bool hip = j->a == SIM_RP_HIP_L || j->a == SIM_RP_HIP_R;
                    if (hip) {
                        r.worst_hip = fmaxf(r.worst_hip, over);
                    } else {
                        r.worst_shoulder = fmaxf(r.worst_shoulder, over);
                    }
                    continue;
                }
                r.over_1deg += a.flexion < -1.0f || a.flexion > SIM_RAGDOLL_HINGE_MAX_DEG + 1.0f ||
                               a.lateral > 1.0f;
                r.flex_lo = fminf(r.flex_lo, a.flexion);
                r.flex_hi = fmaxf(r.flex_hi, a.flexion);
                r.worst_lat = fmaxf(r.worst_lat, a.lateral);
            }
            min_y = fminf(min_y, v.pos[SIM_RP_PELVIS].y);
        }
        // It really fell: from 5 m down to the platform top (1 m) or the ground.
        assert_true(min_y < 1.6f);
        assert_true(sim_world_is_finite(w));
        sim_world_destroy(w);
    }
    print_message("ragdoll drops at %d iterations x %d substeps: flexion [%.2f, %.2f] deg, "
                  "out-of-plane %.2f deg, cones over limit: hips %.2f, shoulders %.2f deg; "
                  "%d of %d samples beyond a limit by more than 1 deg\n",
                  iterations, substeps, (double)r.flex_lo, (double)r.flex_hi, (double)r.worst_lat,
                  (double)r.worst_hip, (double)r.worst_shoulder, r.over_1deg, r.samples);
    return r;
}

static void test_sim_ragdoll_drop_keeps_joint_limits(void** state) {
    (void)state;
    // Elbows and knees flex within [0°, 150°], never backwards, and stay in
    // their hinge plane; hips and shoulders stay in their cones. The solve is
    // iterative, so a small residual is allowed at the impact tick of a
    // 10 m/s landing: 1° on flexion, 3° out of plane or beyond a cone; and
    // almost never more than 1° anywhere. (The drops are chaotic: another
    // compiler's rounding gives other trajectories, so the bounds carry
    // margin over the worst case of any one build: gcc 0.9° and clang 1.9°.)
    for (int substeps = 1; substeps <= 2; ++substeps) {
        drop_result d = ragdoll_drops(8, substeps, 10);
        assert_true(d.flex_lo >= -1.0f);
        assert_true(d.flex_hi <= SIM_RAGDOLL_HINGE_MAX_DEG + 1.0f);
        assert_true(d.worst_lat <= 3.0f);
        assert_true(d.worst_hip <= 3.0f);
        assert_true(d.worst_shoulder <= 3.0f);
        assert_true(d.over_1deg * 1000 <= d.samples); // at most 0.1 %
    }
}

// Worst distance (m) any particle of the first `n` entities moves over
// `ticks` more ticks, and the deepest any of them sinks into the ground.
static float worst_motion(sim_world* w, uint32_t n, int ticks, float* sink) {
    sim_vec3 before[4][SIM_RP_COUNT];
    for (uint32_t k = 0; k < n; ++k) {
        sim_entity_view v;
        sim_entity_get_view(w, sim_world_entity_at(w, k), &v);
        memcpy(before[k], v.pos, sizeof before[k]);
    }
    for (int t = 0; t < ticks; ++t) {
        sim_world_step(w);
    }
    float worst = 0.0f;
    *sink = 0.0f;
    for (uint32_t k = 0; k < n; ++k) {
        sim_entity_view v;
        sim_entity_get_view(w, sim_world_entity_at(w, k), &v);
        assert_int_equal(v.kind, SIM_ENTITY_RAGDOLL);
        for (int i = 0; i < SIM_RP_COUNT; ++i) {
            worst = fmaxf(worst, v3_len(v3_sub(v.pos[i], before[k][i])));
            *sink = fmaxf(*sink, v.radius[i] - v.pos[i].y);
        }
    }
    return worst;
}

static void test_sim_ragdoll_comes_to_rest(void** state) {
    (void)state;
    // On open ground a dropped ragdoll must settle instead of creeping on
    // (joint corrections must not inject momentum), and never sink (contacts
    // must hold against the joint limits). With contacts pinning it, the
    // iterative solve works off the last residual over several seconds (a
    // propped-up knee slumps slowly), so the bound is on the motion at 18-20
    // s: under 20 mm/s (gcc 11 mm/s, clang 14 mm/s). The creep this guards
    // against moved 190 mm/s for good.
    uint32_t rng = 777u;
    float early = 0.0f, late = 0.0f, sink = 0.0f;
    for (int drop = 0; drop < 6; ++drop) {
        sim_world_def def = sim_world_def_default();
        sim_world* w = make_world(&def);
        sim_ragdoll_def rd = sim_ragdoll_def_default();
        rd.position = v3(0.0f, 1.5f + lcg_unit(&rng), 0.0f);
        rd.facing = 6.2831853f * lcg_unit(&rng);
        sim_entity_id id;
        assert_int_equal(sim_world_spawn_ragdoll(w, &rd, &id), SIM_OK);
        sim_vec3 push = v3(6.0f * lcg_unit(&rng) - 3.0f, 0.0f, 6.0f * lcg_unit(&rng) - 3.0f);
        assert_int_equal(sim_entity_apply_impulse(w, id, SIM_RP_HEAD, push), SIM_OK);
        for (int t = 0; t < 480; ++t) { // 8 s
            sim_world_step(w);
        }
        float s1, s2;
        float m1 = worst_motion(w, 1, 120, &s1); // 8-10 s
        for (int t = 0; t < 480; ++t) {
            sim_world_step(w);
        }
        float m2 = worst_motion(w, 1, 120, &s2); // 18-20 s
        early = fmaxf(early, m1);
        late = fmaxf(late, m2);
        sink = fmaxf(sink, fmaxf(s1, s2));
        sim_world_destroy(w);
    }
    print_message("ragdolls on open ground: worst particle moved %.2f mm in 2 s at 8 s, %.2f mm "
                  "at 18 s; worst sink %.2f mm\n",
                  (double)(early * 1e3f), (double)(late * 1e3f), (double)(sink * 1e3f));
    assert_true(late < 0.04f);
    assert_true(sink < 0.002f);

    // The demo world: two ragdolls land on blocks and tumble off. A limb
    // pressed against a block by a joint limit may drift a few mm/s where the
    // two cannot both be met; the bug this guards against (joint corrections
    // that did not conserve momentum) crept at 190 mm/s.
    sim_world_def def = sim_world_def_default();
    sim_world* w = make_world(&def);
    assert_int_equal(sim_scene_demo(w), SIM_OK);
    for (int t = 0; t < 1500; ++t) { // 25 s
        sim_world_step(w);
    }
    float worst = worst_motion(w, 2, 120, &sink);
    print_message("demo ragdolls after 25 s: worst particle moved %.2f mm in 2 s, worst sink "
                  "%.2f mm\n",
                  (double)(worst * 1e3f), (double)(sink * 1e3f));
    assert_true(worst < 0.015f);
    assert_true(sink < 0.002f);
    sim_world_destroy(w);
}

// ---------------------------------------------------------------------------
// Collision response
// ---------------------------------------------------------------------------

static void test_sim_bounce_keeps_set_fraction_of_normal_speed(void** state) {
    (void)state;
    const float e = 0.5f;
    sim_world_def def = sim_world_def_default();
    def.params.damping = 1.0f;
    def.params.bounciness = e;
    def.params.friction = 0.0f;
    sim_world* w = make_world(&def);
    // Two free particles joined by a horizontal stick: they fall and land
    // together, so the stick carries no load and each behaves like a ball.
    sim_entity_id id = free_pair(w, v3(0.0f, 2.0f, 0.0f), 0.5f, 0.0f, 1.0f);

    float v_in = 0.0f, v_out = 0.0f, apex = 0.0f;
    bool bounced = false;
    for (int t = 0; t < 240; ++t) {
        sim_world_step(w);
        sim_vec3 vel;
        assert_int_equal(sim_entity_particle_velocity(w, id, 0, &vel), SIM_OK);
        sim_entity_view v;
        assert_int_equal(sim_entity_get_view(w, id, &v), SIM_OK);
        if (!bounced) {
            if (vel.y < 0.0f) {
                v_in = -vel.y; // the last downward speed before contact
            } else if (t > 0) {
                bounced = true;
                v_out = vel.y;
                apex = v.pos[0].y;
            }
        } else if (v.pos[0].y > apex) {
            apex = v.pos[0].y;
        } else if (vel.y < 0.0f) {
            break;
        }
    }
    assert_true(bounced);
    const float g = 9.81f, dt = 1.0f / 60.0f;
    // Free fall from 2 m reaches sqrt(2·g·2) = 6.26 m/s; the Verlet velocity
    // (x - x_prev)/dt is the mean over the last tick, and the last sample
    // before contact is up to one more tick earlier: up to 1.5·g·dt lower.
    assert_true(v_in <= sqrtf(2.0f * g * 2.0f) && v_in >= sqrtf(2.0f * g * 2.0f) - 1.5f * g * dt);
    // In the contact tick the particle approaches at v_in + g·dt; the bounce
    // keeps e of that normal speed.
    float impact = v_in + g * dt;
    print_message("bounce: impact %.4f m/s, rebound %.4f m/s, ratio %.4f (set %.2f), apex %.4f m\n",
                  (double)impact, (double)v_out, (double)(v_out / impact), (double)e, (double)apex);
    assert_float_equal(v_out / impact, e, 0.005f);
    // Energy: the rebound apex of the discrete trajectory x_n = n·v·dt -
    // g·dt²·n(n+1)/2 peaks at v²/(2g) - v·dt/2 (within g·dt²); about e² of
    // the drop height.
    assert_float_equal(apex, v_out * v_out / (2.0f * g) - v_out * dt / 2.0f, 0.005f);
    assert_float_equal(apex, e * e * 2.0f, 0.05f);
    sim_world_destroy(w);
}

static void test_sim_friction_removes_set_fraction_of_tangential_speed(void** state) {
    (void)state;
    sim_world_def def = sim_world_def_default();
    def.params.damping = 1.0f;
    def.params.friction = 0.25f;
    def.params.gravity = v3(0.0f, -9.81f, 0.0f);
    sim_world* w = make_world(&def);
    sim_entity_id id = free_pair(w, v3(0.0f, 0.0f, 0.0f), 0.5f, 0.0f, 1.0f);
    // Resting on the ground, give both particles 2 m/s along +X.
    assert_int_equal(sim_entity_apply_impulse(w, id, 0, v3(2.0f, 0.0f, 0.0f)), SIM_OK);
    assert_int_equal(sim_entity_apply_impulse(w, id, 1, v3(2.0f, 0.0f, 0.0f)), SIM_OK);
    sim_world_step(w);
    sim_vec3 vel;
    assert_int_equal(sim_entity_particle_velocity(w, id, 0, &vel), SIM_OK);
    // One substep in contact keeps 1 - 0.25 of the tangential speed.
    assert_float_equal(vel.x, 1.5f, 1e-4f);
    assert_float_equal(vel.y, 0.0f, 1e-4f);
    sim_world_destroy(w);
}

// ---------------------------------------------------------------------------
// Interaction, ids and validation
// ---------------------------------------------------------------------------

static void test_sim_impulse_changes_velocity_by_impulse_over_mass(void** state) {
    (void)state;
    sim_world_def def = sim_world_def_default();
    def.params.gravity = v3(0.0f, 0.0f, 0.0f);
    def.params.damping = 1.0f;
    def.params.substeps = 3;
    sim_world* w = make_world(&def);
    sim_entity_id id = free_pair(w, v3(0.0f, 2.0f, 0.0f), 0.1f, 0.02f, 2.0f);
    // 1 N·s on each end of a 2 × 2 kg stick along Y: Δv = 1/2 = 0.5 m/s.
    assert_int_equal(sim_entity_apply_impulse(w, id, 0, v3(0.0f, 1.0f, 0.0f)), SIM_OK);
    assert_int_equal(sim_entity_apply_impulse(w, id, 1, v3(0.0f, 1.0f, 0.0f)), SIM_OK);
    sim_vec3 vel;
    assert_int_equal(sim_entity_particle_velocity(w, id, 1, &vel), SIM_OK);
    assert_float_equal(vel.y, 0.5f, 1e-5f);
    for (int t = 0; t < 60; ++t) {
        sim_world_step(w);
    }
    sim_entity_view v;
    assert_int_equal(sim_entity_get_view(w, id, &v), SIM_OK);
    // 1 s at 0.5 m/s, no gravity, no damping: 0.5 m up.
    assert_float_equal(v.pos[0].y, 2.5f, 1e-3f);

    // Changing substeps keeps the velocity in m/s.
    sim_params p = sim_world_params(w);
    p.substeps = 7;
    assert_int_equal(sim_world_set_params(w, &p), SIM_OK);
    assert_int_equal(sim_entity_particle_velocity(w, id, 1, &vel), SIM_OK);
    assert_float_equal(vel.y, 0.5f, 1e-4f);
    sim_world_destroy(w);
}

static void test_sim_drag_pulls_particle_to_target(void** state) {
    (void)state;
    sim_world_def def = sim_world_def_default();
    sim_world* w = make_world(&def);
    sim_ragdoll_def rd = sim_ragdoll_def_default();
    sim_entity_id id;
    assert_int_equal(sim_world_spawn_ragdoll(w, &rd, &id), SIM_OK);
    sim_vec3 target = v3(1.0f, 3.0f, 0.5f);
    assert_int_equal(sim_entity_drag(w, id, SIM_RP_HAND_L, target), SIM_OK);
    sim_entity_view v;
    float com_y_sum = 0.0f;
    for (int t = 0; t < 180; ++t) {
        sim_world_step(w);
        assert_int_equal(sim_entity_get_view(w, id, &v), SIM_OK);
        if (t >= 120) {
            // Held by one hand, 16 kg hang from a constraint of compliance
            // 1e-4 m/N: the hand stays within a few centimetres of the target
            // while the body swings below it.
            assert_true(v3_len(v3_sub(v.pos[SIM_RP_HAND_L], target)) < 0.05f);
            float com_y = 0.0f;
            for (uint32_t i = 0; i < v.particle_count; ++i) {
                com_y += v.pos[i].y / (float)v.particle_count;
            }
            com_y_sum += com_y;
        }
    }
    // A pendulum's centre of mass hangs below its pivot on average; for this
    // body (hand to pelvis about 1 m) well below.
    assert_true(com_y_sum / 60.0f < target.y - 0.5f);
    assert_int_equal(sim_entity_release(w, id, SIM_RP_HAND_L), SIM_OK);
    for (int t = 0; t < 120; ++t) {
        sim_world_step(w);
    }
    assert_int_equal(sim_entity_get_view(w, id, &v), SIM_OK);
    assert_true(v.pos[SIM_RP_HAND_L].y < 1.0f); // released: it fell
    sim_world_destroy(w);
}

static void test_sim_stale_id_is_an_error(void** state) {
    (void)state;
    sim_world_def def = sim_world_def_default();
    sim_world* w = make_world(&def);
    sim_entity_id a, b, c;
    assert_int_equal(sim_scene_seed_rope(w, &a), SIM_OK);
    assert_int_equal(sim_scene_seed_cloth(w, &b), SIM_OK);
    sim_entity_view vb;
    assert_int_equal(sim_entity_get_view(w, b, &vb), SIM_OK);
    sim_vec3 b0 = vb.pos[5];

    assert_int_equal(sim_world_despawn(w, a), SIM_OK);
    assert_int_equal(sim_world_despawn(w, a), SIM_E_STALE_ID);
    assert_int_equal(sim_entity_apply_impulse(w, a, 0, v3(1, 0, 0)), SIM_E_STALE_ID);
    // The slot is reused with a new generation: the old id still fails.
    assert_int_equal(sim_scene_seed_rope(w, &c), SIM_OK);
    assert_int_equal(c.index1, a.index1);
    assert_int_not_equal(c.generation, a.generation);
    assert_false(sim_entity_is_valid(w, a));
    assert_true(sim_entity_is_valid(w, c));
    // The cloth stored after the rope slid down but kept its id and state.
    assert_int_equal(sim_entity_get_view(w, b, &vb), SIM_OK);
    assert_memory_equal(&vb.pos[5], &b0, sizeof b0);
    // Wire form round-trips and stays below 2^53.
    uint64_t wire = sim_entity_id_store(c);
    assert_true(wire < (1ull << 53));
    sim_entity_id back = sim_entity_id_load(wire);
    assert_true(back.index1 == c.index1 && back.generation == c.generation);
    assert_false(sim_entity_is_valid(w, sim_entity_id_load(0)));
    assert_false(sim_entity_is_valid(w, sim_entity_id_load(UINT64_MAX)));
    assert_int_equal(sim_entity_apply_impulse(w, c, 6, v3(1, 0, 0)), SIM_E_BAD_INDEX);
    sim_world_destroy(w);
}

static void test_sim_non_finite_input_is_rejected(void** state) {
    (void)state;
    sim_world_def def = sim_world_def_default();
    sim_world* w = make_world(&def);
    sim_entity_id id;
    assert_int_equal(sim_scene_demo(w), SIM_OK);
    id = sim_world_entity_at(w, 0);
    for (int t = 0; t < 10; ++t) {
        sim_world_step(w);
    }
    const uint64_t before = sim_world_hash(w);
    const uint32_t n = sim_world_entity_count(w);
    const float nan = nanf(""), inf = INFINITY;

    assert_int_equal(sim_entity_apply_impulse(w, id, 0, v3(nan, 0, 0)), SIM_E_NOT_FINITE);
    assert_int_equal(sim_entity_apply_impulse(w, id, 0, v3(0, inf, 0)), SIM_E_NOT_FINITE);
    assert_int_equal(sim_entity_apply_impulse(w, id, 0, v3(0, 0, 2e4f)), SIM_E_OUT_OF_RANGE);
    assert_int_equal(sim_entity_drag(w, id, 0, v3(0, -inf, 0)), SIM_E_NOT_FINITE);
    assert_int_equal(sim_entity_drag(w, id, 0, v3(0, 5000.0f, 0)), SIM_E_OUT_OF_RANGE);

    sim_params p = sim_world_params(w);
    sim_params bad = p;
    bad.gravity.y = nan;
    assert_int_equal(sim_world_set_params(w, &bad), SIM_E_NOT_FINITE);
    bad = p;
    bad.damping = inf;
    assert_int_equal(sim_world_set_params(w, &bad), SIM_E_NOT_FINITE);
    bad = p;
    bad.iterations = 0;
    assert_int_equal(sim_world_set_params(w, &bad), SIM_E_OUT_OF_RANGE);
    bad = p;
    bad.bounciness = 1.5f;
    assert_int_equal(sim_world_set_params(w, &bad), SIM_E_OUT_OF_RANGE);

    sim_rope_def r = sim_rope_def_default();
    r.anchor = v3(nan, 1, 1);
    sim_entity_id out;
    assert_int_equal(sim_world_spawn_rope(w, &r, &out), SIM_E_NOT_FINITE);
    r = sim_rope_def_default();
    r.segment_length = inf;
    assert_int_equal(sim_world_spawn_rope(w, &r, &out), SIM_E_NOT_FINITE);
    sim_cloth_def c = sim_cloth_def_default();
    c.spacing = nan;
    assert_int_equal(sim_world_spawn_cloth(w, &c, &out), SIM_E_NOT_FINITE);
    c = sim_cloth_def_default();
    c.cols = 100000;
    assert_int_equal(sim_world_spawn_cloth(w, &c, &out), SIM_E_CAPACITY);
    sim_ragdoll_def rd = sim_ragdoll_def_default();
    rd.position = v3(0, inf, 0);
    assert_int_equal(sim_world_spawn_ragdoll(w, &rd, &out), SIM_E_NOT_FINITE);
    sim_box box = {{0, nan, 0}, {1, 1, 1}};
    assert_int_equal(sim_world_add_box(w, box), SIM_E_NOT_FINITE);
    // A def not made by its _default() is refused.
    sim_rope_def zero;
    memset(&zero, 0, sizeof zero);
    assert_int_equal(sim_world_spawn_rope(w, &zero, &out), SIM_E_INVALID_ARG);

    // Nothing changed.
    assert_true(sim_world_hash(w) == before);
    assert_int_equal(sim_world_entity_count(w), n);
    sim_params now = sim_world_params(w);
    assert_memory_equal(&now, &p, sizeof p);
    sim_world_destroy(w);
}

static void test_sim_refuses_masses_and_lengths_that_would_overflow(void** state) {
    (void)state;
    // A 1e-40 kg particle has an inverse mass of 1e40: one impulse makes it
    // infinite. The smallest accepted values keep every product finite.
    sim_world_def def = sim_world_def_default();
    sim_world* w = make_world(&def);
    sim_entity_id id;
    sim_rope_def r = sim_rope_def_default();
    r.mass = 1e-40f;
    assert_int_equal(sim_world_spawn_rope(w, &r, &id), SIM_E_OUT_OF_RANGE);
    r = sim_rope_def_default();
    r.segment_length = 1e-30f;
    assert_int_equal(sim_world_spawn_rope(w, &r, &id), SIM_E_OUT_OF_RANGE);
    sim_cloth_def c = sim_cloth_def_default();
    c.spacing = 1e-30f;
    assert_int_equal(sim_world_spawn_cloth(w, &c, &id), SIM_E_OUT_OF_RANGE);
    sim_ragdoll_def rd = sim_ragdoll_def_default();
    rd.mass = SIM_MIN_MASS / 2.0f;
    assert_int_equal(sim_world_spawn_ragdoll(w, &rd, &id), SIM_E_OUT_OF_RANGE);
    // The smallest mass with the largest impulse stays finite.
    r = sim_rope_def_default();
    r.mass = SIM_MIN_MASS;
    assert_int_equal(sim_world_spawn_rope(w, &r, &id), SIM_OK);
    sim_vec3 j = v3(SIM_MAX_IMPULSE, SIM_MAX_IMPULSE, SIM_MAX_IMPULSE);
    assert_int_equal(sim_entity_apply_impulse(w, id, 3, j), SIM_OK);
    sim_world_step(w);
    assert_true(sim_world_is_finite(w));
    sim_world_destroy(w);
}

static void test_sim_solver_work_budget_is_enforced(void** state) {
    (void)state;
    sim_world_def def = sim_world_def_default();
    // The seed cloth (12 × 10): 218 structural + 198 shear + 196 bend
    // constraints and 120 particles, so (612 + 120) × 8 iterations = 5856.
    def.max_solver_work = 5000;
    sim_world* w = make_world(&def);
    sim_entity_id id;
    assert_int_equal(sim_scene_seed_cloth(w, &id), SIM_E_CAPACITY);
    assert_int_equal(sim_world_entity_count(w), 0);
    assert_int_equal(sim_scene_seed_rope(w, &id), SIM_OK); // (5 + 6) × 8 = 88
    assert_true(sim_world_solver_work(w) == (5 + 6) * 8);
    sim_params p = sim_world_params(w);
    p.iterations = 100;
    p.substeps = 5; // 11 × 500 = 5500 > 5000
    assert_int_equal(sim_world_set_params(w, &p), SIM_E_CAPACITY);
    assert_int_equal(sim_world_params(w).iterations, 8); // unchanged
    p.substeps = 4;                                      // 4400
    assert_int_equal(sim_world_set_params(w, &p), SIM_OK);
    sim_world_destroy(w);
}

static void test_sim_unstable_entity_is_removed_and_reported(void** state) {
    (void)state;
    sim_world_def def = sim_world_def_default();
    sim_world* w = make_world(&def);
    assert_int_equal(sim_scene_demo(w), SIM_OK);
    sim_entity_id rope = sim_world_entity_at(w, 2), cloth = sim_world_entity_at(w, 3);
    sim_world_step(w);
    // Poison one rope particle as a bug or a hostile input could.
    sim__entity* e = sim__entity_get(w, rope);
    w->pos[e->p_first + 3].x = nanf("");
    sim_entity_view before;
    assert_int_equal(sim_entity_get_view(w, cloth, &before), SIM_OK);
    sim_world_step(w);
    assert_false(sim_entity_is_valid(w, rope));
    assert_true(sim_entity_is_valid(w, cloth));
    assert_int_equal(sim_world_entity_count(w), 3);
    assert_true(sim_world_is_finite(w));
    sim_event ev[4];
    assert_int_equal(sim_world_drain_events(w, ev, 4), 1);
    assert_int_equal(ev[0].kind, SIM_EVENT_UNSTABLE);
    assert_true(ev[0].entity.index1 == rope.index1 && ev[0].entity.generation == rope.generation);
    assert_true(ev[0].tick == 2);
    assert_int_equal(sim_world_drain_events(w, ev, 4), 0);
    // Far beyond the world counts too.
    sim_entity_id rag = sim_world_entity_at(w, 0);
    e = sim__entity_get(w, rag);
    w->pos[e->p_first].y = 2.0e4f;
    w->prev[e->p_first].y = 2.0e4f;
    sim_world_step(w);
    assert_false(sim_entity_is_valid(w, rag));
    assert_int_equal(sim_world_drain_events(w, ev, 4), 1);
    sim_world_destroy(w);
}

// ---------------------------------------------------------------------------
// Capacity overflows of the contact solver (sim_world_overflows)
// ---------------------------------------------------------------------------

static sim_entity_id ball_at(sim_world* w, sim_vec3 at, float radius) {
    sim_ball_def bd = sim_ball_def_default();
    bd.position = at;
    bd.radius = radius;
    sim_entity_id id;
    assert_int_equal(sim_world_spawn_ball(w, &bd, &id), SIM_OK);
    return id;
}

static void test_sim_contact_capacity_overflows_are_counted(void** state) {
    (void)state;
    // The grid holds 27 entries per body the world has room for: with
    // max_bodies 2, at most 54 (a spawn reserves 16, capped at 2). A ball of
    // radius 5 at rest at (0.5, 10.5, 0.5) has bounds of ±5.02 m (its radius
    // and the 2 cm grid margin): x and z from -4.52 to 5.52, cells -5..5; y
    // from 5.48 to 15.52, cells 5..15. 11³ = 1331 cells, of which 54 fit:
    // 1277 are dropped in the first tick. Nothing else overflows.
    sim_world_def def = sim_world_def_default();
    def.max_bodies = 2;
    sim_world* w = make_world(&def);
    ball_at(w, v3(0.5f, 10.5f, 0.5f), 5.0f);
    sim_overflows o = sim_world_overflows(w);
    assert_true(o.grid_entries == 0 && o.pairs == 0 && o.contacts == 0);
    sim_world_step(w);
    o = sim_world_overflows(w);
    assert_int_equal(o.grid_entries, 1277);
    assert_int_equal(o.pairs, 0);
    assert_int_equal(o.contacts, 0);
    // Counting is not state: the hash is that of a world that never overflowed
    // (a second world with room for the ball's cells steps to the same state).
    sim_world_def roomy = sim_world_def_default();
    roomy.max_bodies = 64; // 1728 entries, once it has room for 64
    sim_world* r = make_world(&roomy);
    sim_counts room = {1, 0, 0, 0, 64, 0, 0, 0};
    assert_int_equal(sim_world_reserve(r, &room), SIM_OK);
    ball_at(r, v3(0.5f, 10.5f, 0.5f), 5.0f);
    sim_world_step(r);
    assert_int_equal(sim_world_overflows(r).grid_entries, 0);
    assert_true(sim_world_hash(r) == sim_world_hash(w));
    sim_world_destroy(r);
    sim_world_destroy(w);

    // Pairs: 16 per body. 40 balls of 0.2 m at one point, all in cell
    // (0, 5, 0), make 40 × 39 / 2 = 780 candidate pairs; 640 fit, 140 are
    // dropped in the first tick.
    def.max_bodies = 40;
    w = make_world(&def);
    for (int i = 0; i < 40; ++i) {
        ball_at(w, v3(0.5f, 5.5f, 0.5f), 0.2f);
    }
    sim_world_step(w);
    o = sim_world_overflows(w);
    assert_int_equal(o.grid_entries, 0);
    assert_int_equal(o.pairs, 140);
    sim_world_destroy(w);

    // Static boxes are pairs of the broad phase too: a ball of 2 m inside a
    // ring of 30 small boxes that touch it makes 30 body-box pairs, and a
    // world of one body has room for 16: 14 are dropped.
    def.max_bodies = 1;
    w = make_world(&def);
    for (int i = 0; i < 30; ++i) {
        float a = 6.2831853f * (float)i / 30.0f;
        sim_box box = {v3(2.1f * cosf(a), 2.0f, 2.1f * sinf(a)), v3(0.1f, 0.1f, 0.1f)};
        assert_int_equal(sim_world_add_box(w, box), SIM_OK);
    }
    ball_at(w, v3(0.0f, 2.0f, 0.0f), 2.0f);
    sim_world_step(w);
    assert_int_equal(sim_world_overflows(w).pairs, 14);
    sim_world_destroy(w);
}

static void test_sim_same_commands_give_same_state(void** state) {
    (void)state;
    uint64_t hashes[2];
    for (int run = 0; run < 2; ++run) {
        sim_world_def def = sim_world_def_default();
        sim_world* w = make_world(&def);
        assert_int_equal(sim_scene_demo(w), SIM_OK);
        sim_entity_id rag = sim_world_entity_at(w, 0);
        for (int t = 0; t < 300; ++t) {
            if (t == 30) {
                assert_int_equal(sim_entity_apply_impulse(w, rag, 0, v3(5, 2, 0)), SIM_OK);
            }
            if (t == 60) {
                assert_int_equal(sim_entity_drag(w, rag, 5, v3(0, 3, 1)), SIM_OK);
            }
            if (t == 120) {
                assert_int_equal(sim_entity_release(w, rag, 5), SIM_OK);
            }
            sim_world_step(w);
        }
        hashes[run] = sim_world_hash(w);
        assert_true(sim_world_is_finite(w));
        sim_world_destroy(w);
    }
    assert_true(hashes[0] == hashes[1]);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sim_rope_matches_jakobsen_seed),
        cmocka_unit_test(test_sim_correction_is_weighted_by_inverse_mass),
        cmocka_unit_test(test_sim_pinned_particles_never_move),
        cmocka_unit_test(test_sim_cloth_hangs_within_two_percent),
        cmocka_unit_test(test_sim_ragdoll_drop_keeps_joint_limits),
        cmocka_unit_test(test_sim_ragdoll_comes_to_rest),
        cmocka_unit_test(test_sim_bounce_keeps_set_fraction_of_normal_speed),
        cmocka_unit_test(test_sim_friction_removes_set_fraction_of_tangential_speed),
        cmocka_unit_test(test_sim_impulse_changes_velocity_by_impulse_over_mass),
        cmocka_unit_test(test_sim_drag_pulls_particle_to_target),
        cmocka_unit_test(test_sim_stale_id_is_an_error),
        cmocka_unit_test(test_sim_non_finite_input_is_rejected),
        cmocka_unit_test(test_sim_refuses_masses_and_lengths_that_would_overflow),
        cmocka_unit_test(test_sim_solver_work_budget_is_enforced),
        cmocka_unit_test(test_sim_unstable_entity_is_removed_and_reported),
        cmocka_unit_test(test_sim_same_commands_give_same_state),
        cmocka_unit_test(test_sim_contact_capacity_overflows_are_counted),
    };
    return cmocka_run_group_tests_name("sim", tests, NULL, NULL);
}
