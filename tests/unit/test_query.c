/*
 * test_query.c: rays against each kind of collider, and the pose history
 * of lag compensation (server/sim/query.c, history.c; issue 14 item 1).
 *
 * Every expected point and normal is worked out by hand from the shape's
 * definition (a plane, a box's half extents, a sphere's radius, a bone's
 * capsule from the skeleton asset's head, tail and radius): within 1 mm and
 * 0.1°, the tolerance. The history is checked on a ball coasting at
 * a known velocity with no gravity: at tick n it is at p0 + v·n·dt.
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
#include "sim_query.h"
#include "vec.h"

#include <math.h>
#include <string.h>

#define MM      1e-3f
#define DEG_TOL 0.1f /* degrees */

static sim_library* g_lib;

static sim_world* make_world(bool ground, bool gravity) {
    sim_world_def def = sim_world_def_default();
    def.library = g_lib;
    def.ground = ground;
    if (!gravity) {
        def.params.gravity = (sim_vec3){0.0f, 0.0f, 0.0f};
    }
    sim_world* w = NULL;
    assert_int_equal(sim_world_create(&def, &w), SIM_OK);
    return w;
}

static void assert_near3(sim_vec3 got, sim_vec3 want, float tol) {
    if (fabsf(got.x - want.x) > tol || fabsf(got.y - want.y) > tol || fabsf(got.z - want.z) > tol) {
        fail_msg("(%.5f, %.5f, %.5f) is not (%.5f, %.5f, %.5f) within %g", (double)got.x,
                 (double)got.y, (double)got.z, (double)want.x, (double)want.y, (double)want.z,
                 (double)tol);
    }
}

// The angle between two unit normals is below DEG_TOL degrees.
static void assert_normal(sim_vec3 got, sim_vec3 want) {
    float c = (got.x * want.x + got.y * want.y + got.z * want.z) /
              sqrtf((got.x * got.x + got.y * got.y + got.z * got.z) *
                    (want.x * want.x + want.y * want.y + want.z * want.z));
    c = c > 1.0f ? 1.0f : c;
    const float deg = acosf(c) * 57.29578f;
    if (!(deg < DEG_TOL)) {
        fail_msg("normal (%.4f, %.4f, %.4f) is %.3f° from (%.4f, %.4f, %.4f)", (double)got.x,
                 (double)got.y, (double)got.z, (double)deg, (double)want.x, (double)want.y,
                 (double)want.z);
    }
}

static sim_ray_hit cast(const sim_world* w, sim_vec3 o, sim_vec3 d, float max) {
    sim_ray_hit hit;
    assert_int_equal(sim_world_raycast(w, NULL, sim_world_tick(w), o, d, max, &hit), SIM_OK);
    return hit;
}

// ---------------------------------------------------------------------------
// Each collider
// ---------------------------------------------------------------------------

static void test_ray_ground(void** state) {
    (void)state;
    sim_world* w = make_world(true, true);
    // Straight down from 5 m: (1, 0, 2), 5 m, normal +Y.
    sim_ray_hit h = cast(w, (sim_vec3){1, 5, 2}, (sim_vec3){0, -3, 0}, 100);
    assert_int_equal(h.kind, SIM_HIT_GROUND);
    assert_near3(h.point, (sim_vec3){1, 0, 2}, MM);
    assert_float_equal(h.distance, 5.0f, MM);
    assert_normal(h.normal, (sim_vec3){0, 1, 0});
    // At 45°: 5 m across for 5 m down, 5√2 m along the ray.
    h = cast(w, (sim_vec3){1, 5, 2}, (sim_vec3){1, -1, 0}, 100);
    assert_near3(h.point, (sim_vec3){6, 0, 2}, MM);
    assert_float_equal(h.distance, 5.0f * sqrtf(2.0f), MM);
    // Too short, upwards, or from below: nothing.
    assert_int_equal(cast(w, (sim_vec3){1, 5, 2}, (sim_vec3){0, -1, 0}, 4.99f).kind, SIM_HIT_NONE);
    assert_int_equal(cast(w, (sim_vec3){1, 5, 2}, (sim_vec3){0, 1, 0}, 100).kind, SIM_HIT_NONE);
    assert_int_equal(cast(w, (sim_vec3){1, -1, 2}, (sim_vec3){0, -1, 0}, 100).kind, SIM_HIT_NONE);
    sim_world_destroy(w);
    // A world without ground has nothing there.
    w = make_world(false, true);
    assert_int_equal(cast(w, (sim_vec3){1, 5, 2}, (sim_vec3){0, -1, 0}, 100).kind, SIM_HIT_NONE);
    sim_world_destroy(w);
}

static void test_ray_box(void** state) {
    (void)state;
    sim_world* w = make_world(false, true);
    sim_box box = {{0, 1, 0}, {1, 0.5f, 2}}; // x ∈ [-1, 1], y ∈ [0.5, 1.5], z ∈ [-2, 2]
    assert_int_equal(sim_world_add_box(w, box), SIM_OK);
    // Along +X at y 1.2, z 0.3: the -X face at x = -1, 4 m on.
    sim_ray_hit h = cast(w, (sim_vec3){-5, 1.2f, 0.3f}, (sim_vec3){1, 0, 0}, 100);
    assert_int_equal(h.kind, SIM_HIT_BOX);
    assert_int_equal(h.index, 0);
    assert_near3(h.point, (sim_vec3){-1, 1.2f, 0.3f}, MM);
    assert_float_equal(h.distance, 4.0f, MM);
    assert_normal(h.normal, (sim_vec3){-1, 0, 0});
    // Down and across, direction (0.6, -0.8, 0), from (-2, 5, 1): it comes
    // down to the top (y = 1.5) after 3.5 / 0.8 = 4.375 m, at x = -2 +
    // 0.6 × 4.375 = 0.625, on the top face. From (0, 5, 1) it would be at
    // x = 2.625 there, past the box, and it never meets it.
    h = cast(w, (sim_vec3){-2, 5, 1}, (sim_vec3){0.6f, -0.8f, 0}, 100);
    assert_int_equal(h.kind, SIM_HIT_BOX);
    assert_near3(h.point, (sim_vec3){0.625f, 1.5f, 1}, MM);
    assert_float_equal(h.distance, 4.375f, MM);
    assert_normal(h.normal, (sim_vec3){0, 1, 0});
    assert_int_equal(cast(w, (sim_vec3){0, 5, 1}, (sim_vec3){0.6f, -0.8f, 0}, 100).kind,
                     SIM_HIT_NONE);
    // From inside the box: it is not hit (the ray leaves it).
    assert_int_equal(cast(w, (sim_vec3){0, 1, 0}, (sim_vec3){1, 0, 0}, 100).kind, SIM_HIT_NONE);
    sim_world_destroy(w);
}

static void test_ray_ball(void** state) {
    (void)state;
    sim_world* w = make_world(true, true);
    sim_ball_def bd = sim_ball_def_default();
    bd.position = (sim_vec3){0, 3, 0};
    bd.radius = 0.5f;
    sim_entity_id ball;
    assert_int_equal(sim_world_spawn_ball(w, &bd, &ball), SIM_OK);
    // Along +X at height 3.3: enters where x² + 0.3² = 0.5², x = -0.4;
    // normal (-0.4, 0.3, 0) / 0.5.
    sim_ray_hit h = cast(w, (sim_vec3){-5, 3.3f, 0}, (sim_vec3){1, 0, 0}, 100);
    assert_int_equal(h.kind, SIM_HIT_BALL);
    assert_int_equal(h.entity.index1, ball.index1);
    assert_near3(h.point, (sim_vec3){-0.4f, 3.3f, 0}, MM);
    assert_float_equal(h.distance, 4.6f, MM);
    assert_normal(h.normal, (sim_vec3){-0.8f, 0.6f, 0});
    // Straight down onto it: its top (0, 3.5, 0) before the ground.
    h = cast(w, (sim_vec3){0, 10, 0}, (sim_vec3){0, -1, 0}, 100);
    assert_int_equal(h.kind, SIM_HIT_BALL);
    assert_near3(h.point, (sim_vec3){0, 3.5f, 0}, MM);
    // From its centre: not the ball (the ray leaves it) but the ground.
    h = cast(w, (sim_vec3){0, 3, 0}, (sim_vec3){0, -1, 0}, 100);
    assert_int_equal(h.kind, SIM_HIT_GROUND);
    // Just past its edge (0.51 m off the axis): the ground.
    h = cast(w, (sim_vec3){0.51f, 10, 0}, (sim_vec3){0, -1, 0}, 100);
    assert_int_equal(h.kind, SIM_HIT_GROUND);
    sim_world_destroy(w);
}

// The head bone's capsule, from the skeleton asset: centre and axis from
// the pose, half length from the file's head and tail, radius from the file.
static uint32_t head_capsule(const sim_world* w, sim_entity_id id, sim_vec3* c, sim_vec3* axis,
                             float* half, float* r) {
    sim_character_view v;
    assert_int_equal(sim_character_get_view(w, id, &v), SIM_OK);
    int bone = sim_character_bone_index(w, id, "head");
    assert_true(bone > 0);
    sim_bone_pose poses[SIM_MAX_BONES];
    assert_true(sim_character_get_pose(w, id, poses, NULL, NULL, SIM_MAX_BONES) > bone);
    const sim_bone_def* bd = &v.skeleton->bones[bone];
    const sim_vec3 seg = {bd->tail.x - bd->head.x, bd->tail.y - bd->head.y,
                          bd->tail.z - bd->head.z};
    *half = 0.5f * sqrtf(seg.x * seg.x + seg.y * seg.y + seg.z * seg.z);
    *r = bd->radius;
    *c = poses[bone].p;
    *axis = q_rotate(poses[bone].q, (sim_vec3){1, 0, 0});
    return (uint32_t)bone;
}

static void test_ray_bone_capsule(void** state) {
    (void)state;
    sim_world* w = make_world(true, true);
    sim_character_def cd = sim_character_def_default();
    cd.position = (sim_vec3){0, 0, 0};
    sim_entity_id hero;
    assert_int_equal(sim_world_spawn_character(w, &cd, &hero), SIM_OK);
    sim_vec3 c, axis;
    float half, r;
    const uint32_t head = head_capsule(w, hero, &c, &axis, &half, &r);
    // Side on, through the centre, perpendicular to the axis: the side of
    // the cylinder at c - d·r, normal -d, (4 - r) m from an origin 4 m off.
    sim_vec3 d = v3_normalize(v3_cross(axis, (sim_vec3){0, 0, 1}));
    const sim_vec3 o = {c.x - 4 * d.x, c.y - 4 * d.y, c.z - 4 * d.z};
    sim_ray_hit h = cast(w, o, d, 100);
    assert_int_equal(h.kind, SIM_HIT_BONE);
    assert_int_equal(h.entity.index1, hero.index1);
    assert_int_equal(h.index, head);
    assert_near3(h.point, (sim_vec3){c.x - r * d.x, c.y - r * d.y, c.z - r * d.z}, MM);
    assert_float_equal(h.distance, 4.0f - r, MM);
    assert_normal(h.normal, (sim_vec3){-d.x, -d.y, -d.z});
    // Along the axis from beyond the tail end: the end sphere's pole,
    // half + r from the centre.
    const sim_vec3 tip = {c.x + axis.x * (half + r), c.y + axis.y * (half + r),
                          c.z + axis.z * (half + r)};
    const sim_vec3 o2 = {c.x + axis.x * 3, c.y + axis.y * 3, c.z + axis.z * 3};
    h = cast(w, o2, (sim_vec3){-axis.x, -axis.y, -axis.z}, 100);
    assert_int_equal(h.kind, SIM_HIT_BONE);
    assert_int_equal(h.index, head);
    assert_near3(h.point, tip, MM);
    assert_float_equal(h.distance, 3.0f - half - r, MM);
    assert_normal(h.normal, axis);
    sim_world_destroy(w);
}

static void test_ray_particle(void** state) {
    (void)state;
    sim_world* w = make_world(false, true);
    sim_rope_def rd = sim_rope_def_default();
    rd.anchor = (sim_vec3){0, 5, 0};
    rd.segments = 2;
    rd.segment_length = 1.0f;
    sim_entity_id rope;
    assert_int_equal(sim_world_spawn_rope(w, &rd, &rope), SIM_OK);
    // Particle 1 at (1, 5, 0), radius rd.radius; a ray along +Z through it
    // enters at z = -radius.
    sim_ray_hit h = cast(w, (sim_vec3){1, 5, -3}, (sim_vec3){0, 0, 1}, 100);
    assert_int_equal(h.kind, SIM_HIT_PARTICLE);
    assert_int_equal(h.entity.index1, rope.index1);
    assert_int_equal(h.index, 1);
    assert_near3(h.point, (sim_vec3){1, 5, -rd.radius}, MM);
    assert_float_equal(h.distance, 3.0f - rd.radius, MM);
    assert_normal(h.normal, (sim_vec3){0, 0, -1});
    // Along the rope from beyond its end: particle 2 first.
    h = cast(w, (sim_vec3){4, 5, 0}, (sim_vec3){-1, 0, 0}, 100);
    assert_int_equal(h.index, 2);
    assert_near3(h.point, (sim_vec3){2 + rd.radius, 5, 0}, MM);
    sim_world_destroy(w);
}

// Rays from far away: the same points within 1 mm as from close by (a
// fresh user found hits 2-12 cm off, and hits under the ground, from
// 500-1000 m away before the rays were met from close by).
static void test_ray_from_far_away(void** state) {
    (void)state;
    sim_world* w = make_world(true, true);
    sim_ball_def bd = sim_ball_def_default();
    bd.position = (sim_vec3){0, 3, 0};
    bd.radius = 0.5f;
    sim_entity_id ball;
    assert_int_equal(sim_world_spawn_ball(w, &bd, &ball), SIM_OK);
    sim_character_def cd = sim_character_def_default();
    cd.position = (sim_vec3){0, 0, 5};
    sim_entity_id hero;
    assert_int_equal(sim_world_spawn_character(w, &cd, &hero), SIM_OK);
    sim_vec3 c, axis;
    float half, r;
    const uint32_t head = head_capsule(w, hero, &c, &axis, &half, &r);
    for (float x0 = -10.0f; x0 >= -1000.0f; x0 *= 10.0f) {
        sim_ray_hit h = cast(w, (sim_vec3){x0, 3.3f, 0}, (sim_vec3){1, 0, 0}, 4000);
        assert_int_equal(h.kind, SIM_HIT_BALL);
        assert_near3(h.point, (sim_vec3){-0.4f, 3.3f, 0}, MM);
        assert_normal(h.normal, (sim_vec3){-0.8f, 0.6f, 0});
        // 2 cm above the ball: nothing (but the far ground, which it never meets).
        h = cast(w, (sim_vec3){x0, 3.52f, 0}, (sim_vec3){1, 0, 0}, 4000);
        assert_int_equal(h.kind, SIM_HIT_NONE);
        // Side on through the head's centre along +X: its side, r short of it
        // (the head is upright in the idle pose: its axis is near +Y).
        h = cast(w, (sim_vec3){x0, c.y, c.z}, (sim_vec3){1, 0, 0}, 4000);
        assert_int_equal(h.kind, SIM_HIT_BONE);
        assert_int_equal(h.index, head);
        // Under the ground, nothing: the feet rest on it.
        h = cast(w, (sim_vec3){x0, -0.05f, 5}, (sim_vec3){1, 0, 0}, 4000);
        assert_int_equal(h.kind, SIM_HIT_NONE);
    }
    // Down at 45° from the world's edge, on the line x + y = 3.5: it passes
    // 0.354 m from the ball's centre and enters it at its top, (0, 3.5, 0)
    // (the chord's half, 0.354 m, back from the foot (0.25, 3.25)).
    sim_ray_hit h = cast(w, (sim_vec3){-996.5f, 1000, 0}, (sim_vec3){1, -1, 0}, 4000);
    assert_int_equal(h.kind, SIM_HIT_BALL);
    assert_near3(h.point, (sim_vec3){0, 3.5f, 0}, MM);
    assert_normal(h.normal, (sim_vec3){0, 1, 0});
    sim_world_destroy(w);
}

// Any non-zero direction, however short; an origin on a surface is inside.
static void test_ray_edges(void** state) {
    (void)state;
    sim_world* w = make_world(true, true);
    assert_int_equal(sim_world_add_box(w, (sim_box){{10, 1, 0}, {1, 1, 1}}), SIM_OK);
    sim_ray_hit h = cast(w, (sim_vec3){0, 1, 0}, (sim_vec3){1e-30f, 0, 0}, 100);
    assert_int_equal(h.kind, SIM_HIT_BOX);
    assert_near3(h.point, (sim_vec3){9, 1, 0}, MM);
    // On the box's face, heading in: not hit (as a ball's surface); the
    // ground beyond is.
    h = cast(w, (sim_vec3){11, 1, 0}, (sim_vec3){-1, -0.1f, 0}, 100);
    assert_int_equal(h.kind, SIM_HIT_GROUND);
    // Grazing the ball: tangent at its top hits, a hair above misses.
    sim_ball_def bd = sim_ball_def_default();
    bd.position = (sim_vec3){0, 3, 5};
    bd.radius = 0.5f;
    sim_entity_id ball;
    assert_int_equal(sim_world_spawn_ball(w, &bd, &ball), SIM_OK);
    assert_int_equal(cast(w, (sim_vec3){-5, 3.5f, 5}, (sim_vec3){1, 0, 0}, 100).kind, SIM_HIT_BALL);
    assert_int_equal(cast(w, (sim_vec3){-5, 3.501f, 5}, (sim_vec3){1, 0, 0}, 100).kind,
                     SIM_HIT_NONE);
    sim_world_destroy(w);
}

static void test_ray_nearest_wins_and_bad_input(void** state) {
    (void)state;
    sim_world* w = make_world(true, true);
    sim_ball_def bd = sim_ball_def_default();
    bd.position = (sim_vec3){0, 1, 0};
    bd.radius = 0.5f;
    sim_entity_id ball;
    assert_int_equal(sim_world_spawn_ball(w, &bd, &ball), SIM_OK);
    assert_int_equal(sim_world_add_box(w, (sim_box){{0, 1, 3}, {1, 1, 0.5f}}), SIM_OK);
    // Along +Z: the ball (z = -0.5) before the box (z = 2.5).
    sim_ray_hit h = cast(w, (sim_vec3){0, 1, -5}, (sim_vec3){0, 0, 1}, 100);
    assert_int_equal(h.kind, SIM_HIT_BALL);
    assert_float_equal(h.distance, 4.5f, MM);
    // Back along -Z from beyond the box: the box first.
    h = cast(w, (sim_vec3){0, 1, 9}, (sim_vec3){0, 0, -1}, 100);
    assert_int_equal(h.kind, SIM_HIT_BOX);
    assert_float_equal(h.distance, 5.5f, MM);

    const uint64_t t = sim_world_tick(w);
    const sim_vec3 o = {0, 1, -5};
    assert_int_equal(sim_world_raycast(w, NULL, t, o, (sim_vec3){0, 0, 0}, 10, &h),
                     SIM_E_OUT_OF_RANGE);
    assert_int_equal(sim_world_raycast(w, NULL, t, o, (sim_vec3){0, 0, -0.0f}, 10, &h),
                     SIM_E_OUT_OF_RANGE);
    assert_int_equal(sim_world_raycast(w, NULL, t, o, (sim_vec3){NAN, 0, 1}, 10, &h),
                     SIM_E_NOT_FINITE);
    assert_int_equal(sim_world_raycast(w, NULL, t, o, (sim_vec3){0, 0, 1}, INFINITY, &h),
                     SIM_E_NOT_FINITE);
    assert_int_equal(sim_world_raycast(w, NULL, t, o, (sim_vec3){0, 0, 1}, 0, &h),
                     SIM_E_OUT_OF_RANGE);
    assert_int_equal(sim_world_raycast(w, NULL, t, o, (sim_vec3){0, 0, 1}, 5000, &h),
                     SIM_E_OUT_OF_RANGE);
    assert_int_equal(
        sim_world_raycast(w, NULL, t, (sim_vec3){0, 2000, 0}, (sim_vec3){0, -1, 0}, 10, &h),
        SIM_E_OUT_OF_RANGE);
    assert_int_equal(sim_world_raycast(w, NULL, t + 1, o, (sim_vec3){0, 0, 1}, 10, &h),
                     SIM_E_OUT_OF_RANGE);
    assert_int_equal(sim_world_raycast(NULL, NULL, t, o, (sim_vec3){0, 0, 1}, 10, &h),
                     SIM_E_INVALID_ARG);
    sim_world_destroy(w);
}

// ---------------------------------------------------------------------------
// History
// ---------------------------------------------------------------------------

// A ball coasting along +X at 3 m/s with no gravity, recorded every tick.
static void test_history_judges_the_past(void** state) {
    (void)state;
    sim_world* w = make_world(false, false);
    const float dt = sim_world_dt(w);
    sim_ball_def bd = sim_ball_def_default();
    bd.position = (sim_vec3){0, 2, 0};
    bd.velocity = (sim_vec3){3, 0, 0};
    bd.radius = 0.25f;
    sim_entity_id ball;
    assert_int_equal(sim_world_spawn_ball(w, &bd, &ball), SIM_OK);
    sim_history* h = NULL;
    assert_int_equal(sim_history_create(18, NULL, &h), SIM_OK);
    assert_int_equal(sim_history_record(h, w), SIM_OK);
    for (int i = 0; i < 60; ++i) {
        sim_world_step(w);
        assert_int_equal(sim_history_record(h, w), SIM_OK);
    }
    assert_int_equal(sim_world_tick(w), 60);
    // Now: x = 3 × 60 dt = 3 m. At tick 50: x = 3 × 50 dt = 2.5 m.
    const float x50 = 3.0f * 50.0f * dt;
    sim_bone_pose p;
    assert_int_equal(sim_history_bone_pose(h, w, 50, ball, 0, &p), SIM_OK);
    assert_near3(p.p, (sim_vec3){x50, 2, 0}, MM);
    assert_int_equal(sim_history_bone_pose(h, w, 60, ball, 0, &p), SIM_OK);
    assert_near3(p.p, (sim_vec3){3.0f * 60.0f * dt, 2, 0}, MM);

    // A ray along +Z at x = 2.5: hits the ball as it was at tick 50, misses
    // it now (0.5 m further on than its radius).
    const sim_vec3 o = {x50, 2, -5}, d = {0, 0, 1};
    sim_ray_hit hit;
    assert_int_equal(sim_world_raycast(w, h, 50, o, d, 100, &hit), SIM_OK);
    assert_int_equal(hit.kind, SIM_HIT_BALL);
    assert_near3(hit.point, (sim_vec3){x50, 2, -0.25f}, MM);
    assert_int_equal(sim_world_raycast(w, h, 60, o, d, 100, &hit), SIM_OK);
    assert_int_equal(hit.kind, SIM_HIT_NONE);
    // The point hit then, carried to now: 0.5 m further along +X.
    sim_vec3 now;
    assert_int_equal(sim_world_raycast(w, h, 50, o, d, 100, &hit), SIM_OK);
    assert_int_equal(sim_history_carry(h, w, 50, ball, 0, hit.point, &now), SIM_OK);
    assert_near3(now, (sim_vec3){x50 + 0.5f, 2, -0.25f}, MM);

    // Picking: a kept tick is itself; older than the 18 kept (43..60) is
    // clamped to the oldest; a future tick is refused.
    sim_picked_tick pk;
    assert_int_equal(sim_history_pick(h, w, 50, &pk), SIM_OK);
    assert_true(pk.tick == 50 && !pk.clamped);
    assert_int_equal(sim_history_pick(h, w, 60, &pk), SIM_OK);
    assert_true(pk.tick == 60 && !pk.clamped);
    assert_int_equal(sim_history_pick(h, w, 5, &pk), SIM_OK);
    assert_true(pk.tick == 43 && pk.clamped);
    assert_int_equal(sim_history_pick(h, w, 61, &pk), SIM_E_OUT_OF_RANGE);
    assert_int_equal(sim_world_raycast(w, h, 5, o, d, 100, &hit), SIM_E_OUT_OF_RANGE);
    // No history: anything before now is clamped to now.
    assert_int_equal(sim_history_pick(NULL, w, 50, &pk), SIM_OK);
    assert_true(pk.tick == 60 && pk.clamped);

    // Memory: 18 frames of one body, well under 18 × (28 + 16) bytes of
    // poses and entries plus each frame's first room (16 of each).
    const size_t bytes = sim_history_bytes(h);
    assert_true(bytes > 18u * 44u);
    assert_true(bytes < 2048u + 18u * 16u * 44u);

    // An entity spawned after a tick is not there at that tick.
    sim_ball_def late = bd;
    late.position = (sim_vec3){x50, 2, 1};
    late.velocity = (sim_vec3){0, 0, 0};
    sim_entity_id ball2;
    assert_int_equal(sim_world_spawn_ball(w, &late, &ball2), SIM_OK);
    assert_int_equal(sim_history_bone_pose(h, w, 50, ball2, 0, &p), SIM_E_OUT_OF_RANGE);
    assert_int_equal(
        sim_world_raycast(w, h, 50, (sim_vec3){x50, 2, 5}, (sim_vec3){0, 0, -1}, 100, &hit),
        SIM_OK);
    assert_int_equal(hit.kind, SIM_HIT_BALL);
    assert_int_equal(hit.entity.index1, ball.index1); // the first ball, not the new one
    sim_history_destroy(h);
    sim_world_destroy(w);
}

// A world that goes back (a state loaded from an earlier tick) drops the
// frames of its other timeline.
static void test_history_follows_a_world_that_goes_back(void** state) {
    (void)state;
    sim_world* w = make_world(false, false);
    sim_ball_def bd = sim_ball_def_default();
    bd.velocity = (sim_vec3){1, 0, 0};
    sim_entity_id ball;
    assert_int_equal(sim_world_spawn_ball(w, &bd, &ball), SIM_OK);
    sim_history* h = NULL;
    assert_int_equal(sim_history_create(30, NULL, &h), SIM_OK);
    static unsigned char buf[1 << 16];
    size_t len = 0;
    for (int i = 0; i < 10; ++i) {
        sim_world_step(w);
        assert_int_equal(sim_history_record(h, w), SIM_OK);
        if (sim_world_tick(w) == 5) {
            assert_int_equal(sim_world_save(w, buf, sizeof buf, &len), SIM_OK);
        }
    }
    sim_world* back = NULL;
    char why[256];
    assert_int_equal(sim_world_load(buf, len, g_lib, NULL, &back, why, sizeof why), SIM_OK);
    assert_int_equal(sim_world_tick(back), 5);
    assert_int_equal(sim_history_record(h, back), SIM_OK);
    sim_picked_tick pk;
    assert_int_equal(sim_history_pick(h, back, 4, &pk), SIM_OK);
    assert_true(pk.tick == 4 && !pk.clamped);
    // Ticks 6..10 are gone: stepping on records them again.
    sim_world_step(back);
    assert_int_equal(sim_history_record(h, back), SIM_OK);
    sim_bone_pose p;
    assert_int_equal(sim_history_bone_pose(h, back, 6, ball, 0, &p), SIM_OK);
    sim_history_destroy(h);
    sim_world_destroy(back);
    sim_world_destroy(w);
}

static void test_kill_bone(void** state) {
    (void)state;
    sim_world* w = make_world(true, true);
    sim_character_def cd = sim_character_def_default();
    sim_entity_id hero;
    assert_int_equal(sim_world_spawn_character(w, &cd, &hero), SIM_OK);
    int head = sim_character_bone_index(w, hero, "head");
    sim_bone_pose poses[SIM_MAX_BONES];
    assert_true(sim_character_get_pose(w, hero, poses, NULL, NULL, SIM_MAX_BONES) > head);
    // The head named: it takes the 10 N·s along +Z, so it moves along +Z
    // at once at 10 N·s over its mass (less what the animation gave it).
    sim_vec3 v[SIM_MAX_BONES];
    assert_int_equal(
        sim_character_kill_bone(w, hero, (uint32_t)head, poses[head].p, (sim_vec3){0, 0, 10}),
        SIM_OK);
    assert_true(sim_character_get_pose(w, hero, poses, v, NULL, SIM_MAX_BONES) > head);
    sim_character_view cv;
    assert_int_equal(sim_character_get_view(w, hero, &cv), SIM_OK);
    assert_int_equal(cv.state, SIM_CHAR_RAGDOLL);
    assert_true(v[head].z > 0.5f * 10.0f / cv.skeleton->bones[head].mass);
    assert_int_equal(sim_character_kill_bone(w, hero, 99, poses[0].p, (sim_vec3){0, 0, 1}),
                     SIM_E_BAD_INDEX);
    sim_world_destroy(w);
}

// ---------------------------------------------------------------------------
// Impacts
// ---------------------------------------------------------------------------

// Drains every impact of w into out (at most cap); their count.
static uint32_t impacts_of(sim_world* w, sim_impact* out, uint32_t cap) {
    uint32_t n = 0, k;
    while (n < cap && (k = sim_world_drain_impacts(w, out + n, cap - n, NULL)) > 0) {
        n += k;
    }
    return n;
}

// A 0.2 m ball let go with its bottom 2 m above the ground strikes it at
// √(2gh) = √(2 · 9.81 · 2) = 6.26 m/s: one impact within 5 %, on the ground,
// at the ball's underside, normal +Y. With bounciness e it leaves at e
// times that and strikes again at e times that (no air): 0.3 × 6.26 =
// 1.88 m/s, within 10 % (the first tick's gap). Both solvers.
static void test_impact_of_a_dropped_ball(void** state) {
    (void)state;
    const float g = 9.81f, hgt = 2.0f, v = sqrtf(2.0f * g * hgt);
    for (int solver = 0; solver < 2; ++solver) {
        for (int bounce = 0; bounce < 2; ++bounce) {
            sim_world_def def = sim_world_def_default();
            def.library = g_lib;
            def.solver = solver == 0 ? SIM_SOLVER_SOFT_STEP : SIM_SOLVER_XPBD;
            def.params.gravity = (sim_vec3){0, -g, 0};
            def.params.bounciness = bounce ? 0.3f : 0.0f;
            sim_world* w = NULL;
            assert_int_equal(sim_world_create(&def, &w), SIM_OK);
            sim_ball_def bd = sim_ball_def_default();
            bd.radius = 0.2f;
            bd.position = (sim_vec3){1, hgt + bd.radius, -2};
            sim_entity_id ball;
            assert_int_equal(sim_world_spawn_ball(w, &bd, &ball), SIM_OK);
            sim_impact got[64];
            uint32_t n = 0;
            for (int t = 0; t < 120; ++t) { // 2 s: the fall takes 0.64 s
                sim_world_step(w);
                n += impacts_of(w, got + n, 64 - n);
            }
            assert_true(n >= 1);
            const sim_impact* first = &got[0];
            if (fabsf(first->speed - v) > 0.05f * v) {
                fail_msg("solver %d: struck at %.3f m/s, not %.3f within 5%%", solver,
                         (double)first->speed, (double)v);
            }
            assert_int_equal(first->with, SIM_IMPACT_GROUND);
            assert_int_equal(first->a.index1, ball.index1);
            assert_int_equal(first->bone_a, 0);
            assert_normal(first->normal, (sim_vec3){0, 1, 0});
            assert_true(fabsf(first->point.x - 1.0f) < 0.01f &&
                        fabsf(first->point.z + 2.0f) < 0.01f);
            assert_true(first->point.y < 0.12f && first->point.y > -0.02f); // the underside
            // Within 0.1 s of when a 2 m fall lands (0.639 s, tick 38).
            assert_true(first->tick >= 32 && first->tick <= 45);
            printf("solver %d, bounciness %.1f: struck at %.3f m/s (√(2gh) = %.3f)", solver,
                   bounce ? 0.3 : 0.0, (double)first->speed, (double)v);
            printf(n > 1 ? ", again at %.3f\n" : "\n", n > 1 ? (double)got[1].speed : 0.0);
            if (!bounce) {
                assert_int_equal(n, 1); // it lands and stays
            } else {
                assert_true(n >= 2);
                if (fabsf(got[1].speed - 0.3f * v) > 0.1f * 0.3f * v) {
                    fail_msg("solver %d: the bounce struck at %.3f m/s, not %.3f within 10%%",
                             solver, (double)got[1].speed, (double)(0.3f * v));
                }
            }
            sim_world_destroy(w);
        }
    }
}

// A reduced humanoid let go limp 1 m up strikes the ground: impacts of its
// bones, as a maximal one's. A body falling 1 m lands at √(2g·1) = 4.43 m/s;
// the fastest bone strikes near that (rotation adds, the legs' fall is
// shorter): between 2 and 7 m/s.
static void test_impacts_of_a_reduced_character(void** state) {
    (void)state;
    sim_world* w = make_world(true, true);
    sim_character_def cd = sim_character_def_default();
    cd.position = (sim_vec3){0, 1, 0};
    cd.solver = SIM_CHAR_SOLVER_REDUCED;
    cd.state = SIM_CHAR_RAGDOLL;
    sim_entity_id hero;
    assert_int_equal(sim_world_spawn_character(w, &cd, &hero), SIM_OK);
    sim_impact got[256];
    uint32_t n = 0;
    for (int t = 0; t < 90; ++t) {
        sim_world_step(w);
        n += impacts_of(w, got + n, 256 - n);
    }
    assert_true(n >= 1);
    float fastest = 0.0f;
    for (uint32_t k = 0; k < n; ++k) {
        assert_int_equal(got[k].a.index1, hero.index1);
        assert_true(got[k].bone_a < 16);
        assert_int_equal(got[k].with, SIM_IMPACT_GROUND);
        assert_true(got[k].normal.y > 0.99f);
        fastest = fmaxf(fastest, got[k].speed);
    }
    printf("reduced humanoid dropped 1 m: %u impacts, the fastest %.2f m/s\n", n, (double)fastest);
    assert_true(fastest > 2.0f && fastest < 7.0f);
    sim_world_destroy(w);
}

// Twenty humanoids dropped in one spot: never more than the bound a tick,
// fastest first, and what was left out is counted.
static void test_impacts_are_bounded_under_a_pile(void** state) {
    (void)state;
    sim_world_def def = sim_world_def_default();
    def.library = g_lib;
    sim_world* w = NULL;
    assert_int_equal(sim_world_create(&def, &w), SIM_OK);
    for (int i = 0; i < 20; ++i) {
        sim_character_def cd = sim_character_def_default();
        cd.position = (sim_vec3){0.1f * (float)(i % 3), 1.0f + 1.2f * (float)i, 0};
        cd.facing = (float)i;
        cd.state = SIM_CHAR_RAGDOLL;
        sim_entity_id id;
        assert_int_equal(sim_world_spawn_character(w, &cd, &id), SIM_OK);
    }
    uint64_t total = 0, dropped_total = 0;
    uint32_t most = 0;
    for (int t = 0; t < 180; ++t) {
        sim_world_step(w);
        sim_impact got[SIM_MAX_IMPACTS];
        uint64_t dropped = 0;
        uint32_t n = sim_world_drain_impacts(w, got, SIM_MAX_IMPACTS, &dropped);
        assert_true(n <= SIM_MAX_IMPACTS_PER_TICK);
        for (uint32_t k = 0; k < n; ++k) {
            assert_true(got[k].tick == sim_world_tick(w));
            assert_true(got[k].speed >= SIM_IMPACT_MIN_SPEED);
            assert_true(k == 0 || got[k].speed <= got[k - 1].speed);
        }
        most = n > most ? n : most;
        total += n;
        dropped_total += dropped;
    }
    assert_true(total > 40); // twenty bodies landing on each other make noise
    assert_true(most <= SIM_MAX_IMPACTS_PER_TICK);
    printf("pile: %llu impacts, at most %u a tick, %llu dropped\n", (unsigned long long)total, most,
           (unsigned long long)dropped_total);
    sim_world_destroy(w);
}

// ---------------------------------------------------------------------------
// Joint limit hits
// ---------------------------------------------------------------------------

// How fast joint `bone` turns toward `limit`, measured here from the
// public pose, velocities and joint view (twist about the child's joint
// axis; swing about its own axis in the parent's joint frame).
static float rate_toward(const sim_world* w, sim_entity_id id, uint32_t bone,
                         sim_limit_kind limit) {
    sim_bone_pose pose[SIM_MAX_BONES];
    sim_vec3 omega[SIM_MAX_BONES];
    sim_character_get_pose(w, id, pose, NULL, omega, SIM_MAX_BONES);
    sim_character_view cv;
    sim_character_get_view(w, id, &cv);
    sim_joint_view j;
    assert_int_equal(sim_character_joint_view(w, id, bone, &j), SIM_OK);
    const uint32_t parent = (uint32_t)cv.skeleton->bones[bone].parent;
    const sim_quat fp = q_mul(pose[parent].q, j.frame_parent);
    const sim_quat fc = q_mul(pose[bone].q, j.frame_child);
    const sim_vec3 rel_w = v3_sub(omega[bone], omega[parent]);
    if (limit != SIM_LIMIT_SWING) {
        const float r = v3_dot(rel_w, q_rotate(fc, (sim_vec3){1, 0, 0}));
        return limit == SIM_LIMIT_TWIST_MAX ? r : -r;
    }
    sim_quat swing, twist;
    q_swing_twist(q_normalize(q_mul(q_conj(fp), fc)), &swing, &twist);
    const float yz = sqrtf(swing.y * swing.y + swing.z * swing.z);
    return v3_dot(rel_w, q_rotate(fp, (sim_vec3){0, swing.y / yz, swing.z / yz}));
}

// A humanoid killed by a hard blow flails: its joints slam into their
// limits. Each hit's speed is what the joint's own rate toward that limit
// was the tick before, as measured here from the public API; nothing is
// reported with reporting off, and reporting changes no state.
static void test_limit_hits_of_a_flung_ragdoll(void** state) {
    (void)state;
    uint64_t hashes[2] = {0, 0};
    uint32_t hits_seen[2] = {0, 0};
    for (int on = 0; on < 2; ++on) {
        sim_world* w = make_world(true, true);
        sim_character_def cd = sim_character_def_default();
        sim_entity_id hero;
        assert_int_equal(sim_world_spawn_character(w, &cd, &hero), SIM_OK);
        sim_world_report_limit_hits(w, on == 1);
        sim_world_step(w);
        assert_int_equal(
            sim_character_kill(w, hero, (sim_vec3){0.2f, 1.2f, 0}, (sim_vec3){-150, 60, 80}, NULL),
            SIM_OK);
        // The rate toward every limit of every joint, the tick before.
        float before[SIM_MAX_BONES][3];
        for (int t = 0; t < 120; ++t) {
            for (uint32_t b = 1; b < 16; ++b) {
                for (int k = 0; k < 3; ++k) {
                    sim_joint_view j;
                    sim_character_joint_view(w, hero, b, &j);
                    const bool swingless = j.swing1 <= 1e-6f || j.swing2 <= 1e-6f;
                    before[b][k] =
                        (k == 2 && swingless) ? 0.0f : rate_toward(w, hero, b, (sim_limit_kind)k);
                }
            }
            sim_world_step(w);
            sim_limit_hit got[SIM_MAX_LIMIT_HITS];
            const uint32_t n = sim_world_drain_limit_hits(w, got, SIM_MAX_LIMIT_HITS, NULL);
            assert_true(n <= SIM_MAX_LIMIT_HITS_PER_TICK);
            for (uint32_t k = 0; k < n; ++k) {
                assert_true(got[k].tick == sim_world_tick(w));
                assert_int_equal(got[k].entity.index1, hero.index1);
                assert_true(got[k].bone >= 1 && got[k].bone < 16);
                assert_true(got[k].speed >= SIM_LIMIT_HIT_MIN_SPEED);
                const float want = before[got[k].bone][got[k].limit];
                if (fabsf(got[k].speed - want) > 1e-3f * fmaxf(1.0f, want)) {
                    fail_msg("bone %u limit %d: %.4f rad/s, the rate the tick before was %.4f",
                             got[k].bone, (int)got[k].limit, (double)got[k].speed, (double)want);
                }
            }
            hits_seen[on] += n;
        }
        hashes[on] = sim_world_hash(w);
        sim_world_destroy(w);
    }
    printf("limit hits of a flung ragdoll: %u\n", hits_seen[1]);
    assert_int_equal(hits_seen[0], 0);
    assert_true(hits_seen[1] >= 2);
    assert_true(hashes[0] == hashes[1]); // measuring changes nothing
}

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

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ray_ground),
        cmocka_unit_test(test_ray_box),
        cmocka_unit_test(test_ray_ball),
        cmocka_unit_test(test_ray_bone_capsule),
        cmocka_unit_test(test_ray_particle),
        cmocka_unit_test(test_ray_from_far_away),
        cmocka_unit_test(test_ray_edges),
        cmocka_unit_test(test_ray_nearest_wins_and_bad_input),
        cmocka_unit_test(test_history_judges_the_past),
        cmocka_unit_test(test_history_follows_a_world_that_goes_back),
        cmocka_unit_test(test_kill_bone),
        cmocka_unit_test(test_impact_of_a_dropped_ball),
        cmocka_unit_test(test_impacts_of_a_reduced_character),
        cmocka_unit_test(test_impacts_are_bounded_under_a_pile),
        cmocka_unit_test(test_limit_hits_of_a_flung_ragdoll),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
