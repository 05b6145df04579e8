/*
 * test_lod.c: level of detail by viewer interest (server/sim/lod.c; seed
 * 000 §10): full detail near a focus, SIM_LOD_ITERATIONS iterations farther
 * away, frozen beyond SIM_LOD_FREEZE, resuming exactly where it froze.
 *
 * Expected work is counted by hand: a cloth of d distance constraints on k
 * iterations of s substeps costs d·k·s projections a tick.
 */
// cmocka.h needs these four before it (cmocka docs); keep the order.
// clang-format off
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
// clang-format on

#include "sim.h"
#include "vec.h"
#include "world.h"

#include <string.h>

#define COLS 12
#define ROWS 10
// Structural (11·10 + 12·9 = 218), shear (2·11·9 = 198) and bend (10·10 +
// 12·8 = 196): 612.
#define DISTS 612u

static sim_world* world_with_cloth(sim_entity_id* cloth) {
    sim_world_def def = sim_world_def_default();
    sim_world* w = NULL;
    assert_int_equal(sim_world_create(&def, &w), SIM_OK);
    sim_cloth_def cd = sim_cloth_def_default(); // 12 × 10 at 0.2 m, top pinned
    cd.origin = v3(-1.1f, 3.0f, 0.0f);
    assert_int_equal(sim_world_spawn_cloth(w, &cd, cloth), SIM_OK);
    return w;
}

static void test_lod_levels_by_distance_and_their_work(void** state) {
    (void)state;
    sim_entity_id cloth;
    sim_world* w = world_with_cloth(&cloth);
    const sim_params p = sim_world_params(w);
    assert_true(p.iterations > SIM_LOD_ITERATIONS);
    // No focus: full.
    sim_world_step(w);
    sim_tick_stats st = sim_world_tick_stats(w);
    assert_int_equal(sim_entity_lod(w, cloth), SIM_LOD_FULL);
    assert_true(st.particle_projections == (uint64_t)DISTS * p.iterations * p.substeps);
    // A focus 10 m from the sheet's box (x from -1.1 to 1.1): full.
    sim_vec3 f = v3(11.1f, 2.0f, 0.0f);
    assert_int_equal(sim_world_set_foci(w, &f, 1), SIM_OK);
    sim_world_step(w);
    assert_int_equal(sim_entity_lod(w, cloth), SIM_LOD_FULL);
    // 20 m: reduced, SIM_LOD_ITERATIONS iterations.
    f = v3(21.1f, 2.0f, 0.0f);
    assert_int_equal(sim_world_set_foci(w, &f, 1), SIM_OK);
    sim_world_step(w);
    st = sim_world_tick_stats(w);
    assert_int_equal(sim_entity_lod(w, cloth), SIM_LOD_REDUCED);
    assert_int_equal(st.reduced_entities, 1);
    assert_true(st.particle_projections == (uint64_t)DISTS * SIM_LOD_ITERATIONS * p.substeps);
    // 50 m: frozen, no work at all; a second focus near it brings it back.
    f = v3(51.1f, 2.0f, 0.0f);
    assert_int_equal(sim_world_set_foci(w, &f, 1), SIM_OK);
    sim_world_step(w);
    st = sim_world_tick_stats(w);
    assert_int_equal(sim_entity_lod(w, cloth), SIM_LOD_FROZEN);
    assert_int_equal(st.frozen_entities, 1);
    assert_int_equal(st.frozen_particles, COLS * ROWS);
    assert_true(st.particle_projections == 0);
    sim_vec3 two[2] = {f, v3(0.0f, 0.0f, 0.0f)};
    assert_int_equal(sim_world_set_foci(w, two, 2), SIM_OK);
    sim_world_step(w);
    assert_int_equal(sim_entity_lod(w, cloth), SIM_LOD_FULL);
    // Bad input changes nothing.
    assert_int_equal(sim_world_set_foci(w, NULL, 1), SIM_E_INVALID_ARG);
    sim_vec3 bad = v3(NAN, 0.0f, 0.0f);
    assert_int_equal(sim_world_set_foci(w, &bad, 1), SIM_E_NOT_FINITE);
    sim_world_step(w);
    assert_int_equal(sim_entity_lod(w, cloth), SIM_LOD_FULL);
    sim_world_destroy(w);
}

// A swinging sheet frozen for 2 s does not move, and then goes on exactly
// as a twin world that never saw those 2 s does: bit for bit.
static void test_lod_frozen_resumes_where_it_froze(void** state) {
    (void)state;
    sim_entity_id a, b;
    sim_world* w = world_with_cloth(&a);
    sim_world* twin = world_with_cloth(&b);
    for (uint32_t i = 0; i < COLS; ++i) { // a push to set it swinging
        sim_vec3 push = v3(0.0f, 0.0f, 0.5f);
        assert_int_equal(sim_entity_apply_impulse(w, a, (ROWS - 1) * COLS + i, push), SIM_OK);
        assert_int_equal(sim_entity_apply_impulse(twin, b, (ROWS - 1) * COLS + i, push), SIM_OK);
    }
    sim_vec3 near = v3(0.0f, 2.0f, 3.0f), far = v3(0.0f, 2.0f, 300.0f);
    assert_int_equal(sim_world_set_foci(w, &near, 1), SIM_OK);
    assert_int_equal(sim_world_set_foci(twin, &near, 1), SIM_OK);
    for (int t = 0; t < 20; ++t) {
        sim_world_step(w);
        sim_world_step(twin);
    }
    sim_entity_view v;
    assert_int_equal(sim_entity_get_view(w, a, &v), SIM_OK);
    sim_vec3 pos[COLS * ROWS], prev[COLS * ROWS];
    memcpy(pos, v.pos, sizeof pos);
    memcpy(prev, v.prev, sizeof prev);
    assert_true(memcmp(&pos[COLS * ROWS - 1], &prev[COLS * ROWS - 1], sizeof pos[0]) != 0);
    assert_int_equal(sim_world_set_foci(w, &far, 1), SIM_OK);
    for (int t = 0; t < 120; ++t) {
        sim_world_step(w);
        assert_int_equal(sim_world_tick_stats(w).particle_projections, 0);
        assert_int_equal(sim_entity_get_view(w, a, &v), SIM_OK);
        assert_memory_equal(v.pos, pos, sizeof pos);
        assert_memory_equal(v.prev, prev, sizeof prev);
    }
    assert_int_equal(sim_world_set_foci(w, &near, 1), SIM_OK);
    for (int t = 0; t < 60; ++t) {
        sim_world_step(w);
        sim_world_step(twin);
    }
    sim_entity_view vt;
    assert_int_equal(sim_entity_get_view(w, a, &v), SIM_OK);
    assert_int_equal(sim_entity_get_view(twin, b, &vt), SIM_OK);
    assert_memory_equal(v.pos, vt.pos, sizeof pos);
    assert_memory_equal(v.prev, vt.prev, sizeof prev);
    sim_world_destroy(w);
    sim_world_destroy(twin);
}

// What a viewer is pulling on, and particle ragdolls, never freeze.
static void test_lod_dragged_and_ragdolls_never_freeze(void** state) {
    (void)state;
    sim_entity_id cloth, rd;
    sim_world* w = world_with_cloth(&cloth);
    sim_ragdoll_def rdef = sim_ragdoll_def_default();
    assert_int_equal(sim_world_spawn_ragdoll(w, &rdef, &rd), SIM_OK);
    sim_vec3 far = v3(0.0f, 0.0f, 500.0f);
    assert_int_equal(sim_world_set_foci(w, &far, 1), SIM_OK);
    assert_int_equal(sim_entity_drag(w, cloth, 30, v3(0.0f, 2.0f, 1.0f)), SIM_OK);
    sim_world_step(w);
    assert_int_equal(sim_entity_lod(w, cloth), SIM_LOD_REDUCED);
    assert_int_equal(sim_entity_lod(w, rd), SIM_LOD_FULL);
    assert_int_equal(sim_entity_release(w, cloth, 30), SIM_OK);
    sim_world_step(w);
    assert_int_equal(sim_entity_lod(w, cloth), SIM_LOD_FROZEN);
    sim_world_destroy(w);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lod_levels_by_distance_and_their_work),
        cmocka_unit_test(test_lod_frozen_resumes_where_it_froze),
        cmocka_unit_test(test_lod_dragged_and_ragdolls_never_freeze),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
