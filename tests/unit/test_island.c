/*
 * test_island.c: islands and sleeping (server/sim/island.c) with the real
 * humanoid skeleton in assets/.
 *
 * What is asserted comes from the definition of an island, not from the
 * solver's numbers: bodies of different islands cannot touch within a tick,
 * so a ragdoll's motion must be bit-for-bit the same whether or not another
 * one far away hits the ground at speed (today's substeps are chosen per
 * island); a sleeping body is frozen, so its pose must not change by a bit
 * while it sleeps; and waking is by island, so a ball thrown into one
 * sleeping group must leave another group asleep and untouched.
 */
// cmocka.h needs these four before it (cmocka docs); keep the order.
// clang-format off
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
// clang-format on

#include "shipped_library.h"
#include "sim.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define NBONES 16

static sim_library* g_lib;

static int setup(void** state) {
    (void)state;
    g_lib = rd_test_shipped_library();
    if (g_lib == NULL) {
        return -1;
    }
    return 0;
}

static int teardown(void** state) {
    (void)state;
    sim_library_destroy(g_lib);
    return 0;
}

static sim_world* make_world(uint32_t characters) {
    sim_world_def def = sim_world_def_default();
    def.library = g_lib;
    def.params.substeps = 4;
    def.max_entities = characters + 8;
    def.max_bodies = NBONES * characters + 64;
    def.max_joints = NBONES * characters + 64;
    def.max_solver_work = 0;
    sim_world* w = NULL;
    assert_int_equal(sim_world_create(&def, &w), SIM_OK);
    return w;
}

// A ragdoll (a humanoid killed with a push at the chest) standing at `at`.
static sim_entity_id drop(sim_world* w, sim_vec3 at, float facing, sim_vec3 push) {
    sim_character_def cd = sim_character_def_default();
    cd.position = at;
    cd.facing = facing;
    sim_entity_id id;
    assert_int_equal(sim_world_spawn_character(w, &cd, &id), SIM_OK);
    sim_vec3 chest = {at.x, at.y + 1.4f, at.z};
    assert_int_equal(sim_character_kill(w, id, chest, push, NULL), SIM_OK);
    return id;
}

// `n` ragdolls stacked in one spot around (x, 0, z): layers of four 1.9 m
// apart, each falling onto the ones below.
static void pile(sim_world* w, uint32_t n, float x, float z, sim_entity_id* ids) {
    for (uint32_t i = 0; i < n; ++i) {
        float dx = (float)(i % 2) * 0.7f - 0.35f, dz = (float)((i / 2) % 2) * 0.7f - 0.35f;
        sim_vec3 at = {x + dx, 0.2f + 1.9f * (float)(i / 4), z + dz};
        ids[i] = drop(w, at, (float)(i % 4) * 1.5707963f, (sim_vec3){5.0f, 0.0f, 0.0f});
    }
}

static bool character_asleep(const sim_world* w, sim_entity_id id) {
    sim_character_view v;
    assert_int_equal(sim_character_get_view(w, id, &v), SIM_OK);
    return v.asleep;
}

static void poses_of(const sim_world* w, sim_entity_id id, sim_bone_pose* out) {
    assert_int_equal(sim_character_get_pose(w, id, out, NULL, NULL, NBONES), NBONES);
}

// Steps until nothing is awake, at most `max_ticks`; returns the ticks taken
// or -1.
static int step_until_asleep(sim_world* w, int max_ticks) {
    for (int t = 1; t <= max_ticks; ++t) {
        sim_world_step(w);
        if (sim_world_awake_body_count(w) == 0) {
            return t;
        }
    }
    return -1;
}

// ---------------------------------------------------------------------------
// Islands
// ---------------------------------------------------------------------------

// Ragdoll B falls over where it stands, alone; then again with ragdoll A
// thrown into the ground at 30 m/s 40 m away. A and B are never in one
// island, so B's bones must follow the same path to the bit: A's impact,
// which needs 4 times the substeps, must not change how B is stepped.
static void test_an_impact_does_not_change_how_another_island_is_stepped(void** state) {
    (void)state;
    sim_world* alone = make_world(2);
    sim_world* both = make_world(2);
    sim_entity_id b1 = drop(alone, (sim_vec3){0.0f, 0.0f, 0.0f}, 0.0f, (sim_vec3){20, 0, 0});
    sim_entity_id b2 = drop(both, (sim_vec3){0.0f, 0.0f, 0.0f}, 0.0f, (sim_vec3){20, 0, 0});
    drop(both, (sim_vec3){40.0f, 6.0f, 0.0f}, 0.0f, (sim_vec3){0.0f, -600.0f, 0.0f});
    uint32_t most_islands = 0;
    for (int t = 0; t < 120; ++t) {
        sim_world_step(alone);
        sim_world_step(both);
        uint32_t n = sim_world_island_count(both);
        most_islands = n > most_islands ? n : most_islands;
        sim_bone_pose pa[NBONES], pb[NBONES];
        poses_of(alone, b1, pa);
        poses_of(both, b2, pb);
        assert_memory_equal(pa, pb, sizeof pa);
    }
    assert_int_equal(most_islands, 2);
    sim_world_destroy(alone);
    sim_world_destroy(both);
}

// ---------------------------------------------------------------------------
// Sleeping
// ---------------------------------------------------------------------------

// A pile of ten ragdolls comes to rest and sleeps within 15 s (8.0 s on
// today's solver with gcc; issue 9 asks 10 s of a pile of 80, which the solver does not
// reach yet: README "Benchmarks"); asleep it is
// frozen (no pose changes by a bit) and solves nothing (no island).
static void test_a_pile_sleeps_and_is_frozen(void** state) {
    (void)state;
    sim_world* w = make_world(10);
    sim_entity_id ids[10];
    pile(w, 10, 0.0f, 0.0f, ids);
    int t = step_until_asleep(w, 900);
    printf("pile of 10: asleep after %.2f s\n", (double)t / 60.0);
    assert_true(t > 0);
    for (int i = 0; i < 10; ++i) {
        assert_true(character_asleep(w, ids[i]));
    }
    uint64_t h = sim_world_hash(w);
    for (int k = 0; k < 120; ++k) {
        sim_world_step(w);
        assert_int_equal(sim_world_island_count(w), 0);
    }
    assert_true(sim_world_hash(w) == h);
    sim_world_destroy(w);
}

// Two groups of four 20 m apart, both asleep. A 20 kg ball thrown at 8 m/s
// into group A wakes A's island and only it: group B stays asleep with
// every bone where it was.
static void test_a_ball_wakes_only_the_island_it_hits(void** state) {
    (void)state;
    sim_world* w = make_world(8);
    sim_entity_id a[4], b[4];
    pile(w, 4, 0.0f, 0.0f, a);
    pile(w, 4, 20.0f, 0.0f, b);
    assert_true(step_until_asleep(w, 600) > 0);
    sim_bone_pose before[4][NBONES];
    for (int i = 0; i < 4; ++i) {
        poses_of(w, b[i], before[i]);
    }
    sim_ball_def bd = sim_ball_def_default();
    bd.position = (sim_vec3){-4.0f, 0.5f, 0.0f};
    bd.velocity = (sim_vec3){8.0f, 0.0f, 0.0f};
    bd.radius = 0.25f;
    bd.mass = 20.0f;
    sim_entity_id ball;
    assert_int_equal(sim_world_spawn_ball(w, &bd, &ball), SIM_OK);
    bool a_woke = false;
    for (int t = 0; t < 60; ++t) {
        sim_world_step(w);
        for (int i = 0; i < 4; ++i) {
            a_woke |= !character_asleep(w, a[i]);
            assert_true(character_asleep(w, b[i]));
        }
    }
    assert_true(a_woke);
    for (int i = 0; i < 4; ++i) {
        sim_bone_pose now[NBONES];
        poses_of(w, b[i], now);
        assert_memory_equal(now, before[i], sizeof now);
    }
    sim_world_destroy(w);
}

// A small ball resting on the top of a big one, both asleep. Despawning
// the big ball wakes the small one, which falls to the ground: from 2 m
// (big ball's top) + 0.1 m to resting at its radius, 0.1 m.
static void test_despawning_a_support_wakes_what_rests_on_it(void** state) {
    (void)state;
    sim_world* w = make_world(0);
    sim_ball_def bd = sim_ball_def_default();
    bd.position = (sim_vec3){0.0f, 1.0f, 0.0f};
    bd.radius = 1.0f;
    bd.mass = 1000.0f;
    sim_entity_id big, small;
    assert_int_equal(sim_world_spawn_ball(w, &bd, &big), SIM_OK);
    bd.position = (sim_vec3){0.0f, 2.2f, 0.0f};
    bd.radius = 0.1f;
    bd.mass = 1.0f;
    assert_int_equal(sim_world_spawn_ball(w, &bd, &small), SIM_OK);
    assert_true(step_until_asleep(w, 600) > 0);
    sim_bone_pose p;
    assert_int_equal(sim_ball_get(w, small, &p, NULL, NULL), SIM_OK);
    assert_float_equal(p.p.y, 2.1f, 0.01f);
    assert_int_equal(sim_world_despawn(w, big), SIM_OK);
    assert_true(sim_world_awake_body_count(w) == 1);
    for (int t = 0; t < 120; ++t) {
        sim_world_step(w);
    }
    assert_int_equal(sim_ball_get(w, small, &p, NULL, NULL), SIM_OK);
    assert_float_equal(p.p.y, 0.1f, 0.01f);
    sim_world_destroy(w);
}

// A command wakes a sleeping ragdoll: an impulse moves it at once.
static void test_an_impulse_wakes_a_sleeping_ragdoll(void** state) {
    (void)state;
    sim_world* w = make_world(1);
    sim_entity_id r = drop(w, (sim_vec3){0.0f, 0.0f, 0.0f}, 0.0f, (sim_vec3){10, 0, 0});
    assert_true(step_until_asleep(w, 600) > 0);
    sim_bone_pose p0[NBONES];
    poses_of(w, r, p0);
    assert_int_equal(sim_character_apply_impulse(w, r, 0, p0[0].p, (sim_vec3){0, 200.0f, 0}),
                     SIM_OK);
    assert_false(character_asleep(w, r));
    sim_world_step(w);
    sim_bone_pose p1[NBONES];
    poses_of(w, r, p1);
    // 200 N·s on a 10 kg pelvis: up at about 20 m/s less what its joints
    // share with the rest, so well over 1 cm in one tick.
    assert_true(p1[0].p.y > p0[0].p.y + 0.01f);
    sim_world_destroy(w);
}

// A body's spin never exceeds the cap, 0.25·π per tick (Jolt's default):
// a ragdoll's hand given a violent twist.
static void test_spin_is_capped(void** state) {
    (void)state;
    sim_world* w = make_world(1);
    sim_entity_id r = drop(w, (sim_vec3){0.0f, 0.0f, 0.0f}, 0.0f, (sim_vec3){0, 0, 0});
    sim_bone_pose p[NBONES];
    poses_of(w, r, p);
    // An off-centre impulse of 300 N·s on the 1.5 kg hand.
    sim_vec3 at = {p[9].p.x + 0.05f, p[9].p.y, p[9].p.z};
    assert_int_equal(sim_character_apply_impulse(w, r, 9, at, (sim_vec3){0, 0, 300.0f}), SIM_OK);
    const float cap = 0.25f * 3.14159265f * 60.0f;
    float fastest = 0.0f;
    for (int t = 0; t < 60; ++t) {
        sim_world_step(w);
        sim_vec3 om[NBONES];
        assert_int_equal(sim_character_get_pose(w, r, NULL, NULL, om, NBONES), NBONES);
        for (int i = 0; i < NBONES; ++i) {
            float s = sqrtf(om[i].x * om[i].x + om[i].y * om[i].y + om[i].z * om[i].z);
            fastest = fmaxf(fastest, s);
        }
    }
    printf("spin cap %.1f rad/s: fastest bone %.1f rad/s\n", (double)cap, (double)fastest);
    assert_true(fastest <= cap * 1.0001f);
    sim_world_destroy(w);
}

// A fresh user's report: bodies thrown at tens of km/s (a 1 g ball given
// 40 N·s on each axis is 69 km/s; a 1000-bone chain hit 150 times) swept
// boxes of billions of grid cells, and the broad phase walked every one,
// counting an overflow per cell once the grid was full: a world, its
// worker and the server's shutdown hung. Now it walks only what the grid
// can hold and counts the rest. Here a 1 g ball at 10^6 m/s sweeps about
// (10^6/60)^3 ≈ 4.6·10^12 cells in its first tick: walked, that is hours
// (ctest's timeout fails the test); counted, the ticks go on.
static void test_a_ball_thrown_across_the_world_does_not_hang_the_tick(void** state) {
    (void)state;
    sim_world* w = make_world(1);
    sim_ball_def bd = sim_ball_def_default();
    bd.position = (sim_vec3){0.0f, 5.0f, 0.0f};
    bd.mass = 0.001f;
    sim_entity_id ball;
    assert_int_equal(sim_world_spawn_ball(w, &bd, &ball), SIM_OK);
    assert_int_equal(sim_ball_apply_impulse(w, ball, (sim_vec3){1000.0f, 1000.0f, 1000.0f}),
                     SIM_OK);
    const uint64_t before = sim_world_overflows(w).grid_entries;
    const uint64_t tick = sim_world_tick(w);
    for (int t = 0; t < 5; ++t) {
        sim_world_step(w);
    }
    const uint64_t dropped = sim_world_overflows(w).grid_entries - before;
    printf("a 10^6 m/s ball: %.3g grid entries dropped (counted, not walked), 5 ticks stepped\n",
           (double)dropped);
    assert_true(sim_world_tick(w) == tick + 5);
    assert_true(dropped > 1000000000000ull); // its sweep, more than the grid could ever hold
    sim_world_destroy(w);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_an_impact_does_not_change_how_another_island_is_stepped),
        cmocka_unit_test(test_a_pile_sleeps_and_is_frozen),
        cmocka_unit_test(test_a_ball_wakes_only_the_island_it_hits),
        cmocka_unit_test(test_despawning_a_support_wakes_what_rests_on_it),
        cmocka_unit_test(test_an_impulse_wakes_a_sleeping_ragdoll),
        cmocka_unit_test(test_spin_is_capped),
        cmocka_unit_test(test_a_ball_thrown_across_the_world_does_not_hang_the_tick),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
