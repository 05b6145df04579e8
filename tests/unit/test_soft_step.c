/*
 * test_soft_step.c: the soft-step rigid solver (server/sim/soft_step.c,
 * soft_contact.c, soft_joint.c, graph.c; sim_world_def.solver =
 * SIM_SOLVER_SOFT_STEP). Every world here uses it.
 *
 * What is asserted comes from outside the solver: the graph colouring's
 * definition (checked by brute force on random constraint sets) and the
 * ranges world.c documents for a world's def.
 *
 * The colouring is private (soft.h): it is called directly.
 */
// cmocka.h needs these four before it (cmocka docs); keep the order.
// clang-format off
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
// clang-format on

#include "assets.h"
#include "sim.h"
#include "soft.h"
#include "world.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NBONES 16
#define G      9.81f
#define DEG    (180.0f / 3.14159265f)

static sim_library* g_lib;

static int setup(void** state) {
    (void)state;
    char err[256];
    if (sim_library_create(&g_lib) != SIM_OK ||
        app_assets_load(RD_ASSETS_DIR, g_lib, NULL, NULL, err, sizeof err) != 0) {
        fprintf(stderr, "cannot load assets: %s\n", err);
        return -1;
    }
    return 0;
}

static int teardown(void** state) {
    (void)state;
    sim_library_destroy(g_lib);
    return 0;
}

// ---------------------------------------------------------------------------
// 1. Graph colouring (graph.c)
// ---------------------------------------------------------------------------

#define MAX_N      2000
#define MAX_BODIES 256

typedef struct colouring_run {
    uint32_t a[MAX_N], b[MAX_N];
    uint8_t blocks[MAX_BODIES];
    uint64_t bits[SIM__GRAPH_COLOURS * ((MAX_BODIES + 63) / 64)];
    uint8_t colour[MAX_N];
    uint32_t order[MAX_N];
    sim__colouring out;
} colouring_run;

static uint32_t lcg(uint32_t* s) {
    *s = *s * 1664525u + 1013904223u;
    return *s >> 8;
}

// Whether body i blocks (counts in the colouring): a solver index whose
// `blocks` flag is set.
static bool blocking(const colouring_run* r, uint32_t i) {
    return i != SIM__NO_STATE && r->blocks[i] != 0;
}

// Checks the colouring's definition on r: every constraint once in
// `order`; ranges that tile [0, n) with the overflow last; the colours in
// use a prefix (each non-empty); within a colour the original order; no
// two constraints of one colour (not the overflow) sharing a blocking body;
// and greedy first fit (graph.c, Box2D's rule): a constraint in colour c
// (or the overflow) meets, in every colour before c, an earlier
// constraint that shares one of its blocking bodies.
static void check_colouring(const colouring_run* r, uint32_t n) {
    const sim__colouring* c = &r->out;
    assert_true(c->colour_count <= SIM__GRAPH_COLOURS);
    static uint8_t seen[MAX_N];
    memset(seen, 0, sizeof seen);
    for (uint32_t o = 0; o < n; ++o) {
        assert_true(r->order[o] < n);
        assert_int_equal(seen[r->order[o]], 0);
        seen[r->order[o]] = 1;
    }
    assert_int_equal(c->first[0], 0);
    for (uint32_t k = 0; k <= c->colour_count; ++k) {
        assert_true(c->first[k] <= c->first[k + 1]);
    }
    assert_int_equal(c->first[c->colour_count + 1], n);
    for (uint32_t k = 0; k < c->colour_count; ++k) {
        assert_true(c->first[k] < c->first[k + 1]); // a used colour is not empty
    }
    // Overflow only once every colour is in use.
    if (c->first[c->colour_count + 1] > c->first[c->colour_count]) {
        assert_int_equal(c->colour_count, SIM__GRAPH_COLOURS);
    }
    for (uint32_t k = 0; k <= c->colour_count; ++k) {
        for (uint32_t o = c->first[k]; o + 1 < c->first[k + 1]; ++o) {
            assert_true(r->order[o] < r->order[o + 1]); // stable within a range
        }
    }
    for (uint32_t k = 0; k < c->colour_count; ++k) {
        for (uint32_t x = c->first[k]; x < c->first[k + 1]; ++x) {
            for (uint32_t y = x + 1; y < c->first[k + 1]; ++y) {
                uint32_t p = r->order[x], q = r->order[y];
                uint32_t bp[2] = {r->a[p], r->b[p]}, bq[2] = {r->a[q], r->b[q]};
                for (int i = 0; i < 2; ++i) {
                    for (int j = 0; j < 2; ++j) {
                        if (blocking(r, bp[i]) && bp[i] == bq[j]) {
                            fail_msg("colour %u: constraints %u and %u share body %u", k, p, q,
                                     bp[i]);
                        }
                    }
                }
            }
        }
    }
    // first_use[c][i]: the first constraint of colour c using blocking body i.
    static uint32_t first_use[SIM__GRAPH_COLOURS][MAX_BODIES];
    memset(first_use, 0xff, sizeof first_use);
    for (uint32_t k = 0; k < c->colour_count; ++k) {
        for (uint32_t o = c->first[k]; o < c->first[k + 1]; ++o) {
            uint32_t q = r->order[o], ends[2] = {r->a[q], r->b[q]};
            for (int e = 0; e < 2; ++e) {
                if (blocking(r, ends[e]) && q < first_use[k][ends[e]]) {
                    first_use[k][ends[e]] = q;
                }
            }
        }
    }
    for (uint32_t k = 0; k <= c->colour_count; ++k) {
        for (uint32_t o = c->first[k]; o < c->first[k + 1]; ++o) {
            uint32_t q = r->order[o];
            for (uint32_t e = 0; e < k; ++e) {
                bool met = (blocking(r, r->a[q]) && first_use[e][r->a[q]] < q) ||
                           (blocking(r, r->b[q]) && first_use[e][r->b[q]] < q);
                if (!met) {
                    fail_msg("constraint %u in range %u could have taken colour %u", q, k, e);
                }
            }
        }
    }
}

// (a) Random constraint sets: 200 sets of up to 2000 constraints between up
// to 256 bodies, a fifth of the ends static (SIM__NO_STATE) and a fifth of
// the bodies not blocking (kinematic).
static void test_colouring_random_sets_obey_the_definition(void** state) {
    (void)state;
    static colouring_run r;
    uint32_t seed = 7;
    uint32_t overflowed = 0;
    for (int set = 0; set < 200; ++set) {
        uint32_t bodies = 2 + lcg(&seed) % (MAX_BODIES - 1);
        uint32_t n = lcg(&seed) % (MAX_N + 1);
        for (uint32_t i = 0; i < bodies; ++i) {
            r.blocks[i] = lcg(&seed) % 5 != 0;
        }
        for (uint32_t k = 0; k < n; ++k) {
            r.a[k] = lcg(&seed) % 5 == 0 ? SIM__NO_STATE : lcg(&seed) % bodies;
            r.b[k] = lcg(&seed) % 5 == 0 ? SIM__NO_STATE : lcg(&seed) % bodies;
        }
        sim__graph_colour(r.a, r.b, n, r.blocks, bodies, r.bits, r.colour, r.order, &r.out);
        check_colouring(&r, n);
        overflowed += r.out.first[r.out.colour_count + 1] > r.out.first[r.out.colour_count];
    }
    // The sets are dense enough that some overflow, so that range is tested.
    printf("colouring: %u of 200 random sets overflowed\n", overflowed);
    assert_true(overflowed > 0);
}

// (b) Bodies with blocks = 0 (kinematic) and SIM__NO_STATE (static or
// asleep) never block: 100 constraints that all touch one kinematic body,
// each with a distinct dynamic body, fit in colour 0; so do 100 that all
// touch the static world. Together (the same 100 dynamic bodies in both
// halves) they take exactly two colours, the first half in colour 0.
static void test_colouring_static_and_kinematic_bodies_never_block(void** state) {
    (void)state;
    static colouring_run r;
    const uint32_t bodies = 101;
    memset(r.blocks, 1, bodies);
    r.blocks[0] = 0; // the kinematic body
    for (uint32_t k = 0; k < 100; ++k) {
        r.a[k] = 1 + k;
        r.b[k] = 0;
        r.a[100 + k] = SIM__NO_STATE;
        r.b[100 + k] = 1 + k;
    }
    sim__graph_colour(r.a, r.b, 100, r.blocks, bodies, r.bits, r.colour, r.order, &r.out);
    check_colouring(&r, 100);
    assert_int_equal(r.out.colour_count, 1);
    sim__graph_colour(r.a + 100, r.b + 100, 100, r.blocks, bodies, r.bits, r.colour, r.order,
                      &r.out);
    check_colouring(&r, 100);
    assert_int_equal(r.out.colour_count, 1);
    sim__graph_colour(r.a, r.b, 200, r.blocks, bodies, r.bits, r.colour, r.order, &r.out);
    check_colouring(&r, 200);
    assert_int_equal(r.out.colour_count, 2);
    assert_int_equal(r.out.first[1], 100);
}

// (c) A star: dynamic body 0 in 30 constraints with 30 distinct dynamic
// bodies. Any two of them share body 0, so each needs a colour of its own:
// the first 24 take colours 0..23, the last 6 overflow.
static void test_colouring_a_star_fills_every_colour_then_overflows(void** state) {
    (void)state;
    static colouring_run r;
    const uint32_t bodies = 31;
    memset(r.blocks, 1, bodies);
    for (uint32_t k = 0; k < 30; ++k) {
        r.a[k] = k % 2 ? 0 : 1 + k; // the hub on either side
        r.b[k] = k % 2 ? 1 + k : 0;
    }
    sim__graph_colour(r.a, r.b, 30, r.blocks, bodies, r.bits, r.colour, r.order, &r.out);
    check_colouring(&r, 30);
    assert_int_equal(r.out.colour_count, 24);
    for (uint32_t c = 0; c < 24; ++c) {
        assert_int_equal(r.out.first[c + 1] - r.out.first[c], 1);
        assert_int_equal(r.order[r.out.first[c]], c);
    }
    assert_int_equal(r.out.first[25] - r.out.first[24], 6);
    for (uint32_t k = 0; k < 6; ++k) {
        assert_int_equal(r.order[24 + k], 24 + k);
    }
}

// ---------------------------------------------------------------------------
// 8. Bad input
// ---------------------------------------------------------------------------

static size_t g_allocs;

static void* counting_alloc(void* ctx, size_t size, size_t align) {
    (void)ctx;
    g_allocs++;
    return aligned_alloc(align, (size + align - 1) / align * align);
}

static void counting_free(void* ctx, void* p, size_t size) {
    (void)ctx;
    (void)size;
    free(p);
}

// A solver that does not exist is a limit out of range (world.c's
// limits_ok()): SIM_E_OUT_OF_RANGE, and nothing is allocated or returned.
static void test_an_unknown_solver_is_refused(void** state) {
    (void)state;
    sim_world_def def = sim_world_def_default();
    def.solver = (sim_solver)7;
    def.allocator = (sim_allocator){counting_alloc, counting_free, NULL};
    sim_world* w = (sim_world*)&g_allocs; // a sentinel: must stay untouched
    g_allocs = 0;
    assert_int_equal(sim_world_create(&def, &w), SIM_E_OUT_OF_RANGE);
    assert_ptr_equal(w, (sim_world*)&g_allocs);
    assert_int_equal(g_allocs, 0);
    // The same def with a real solver is accepted (the allocator is fine).
    def.solver = SIM_SOLVER_SOFT_STEP;
    assert_int_equal(sim_world_create(&def, &w), SIM_OK);
    assert_true(g_allocs > 0);
    sim_world_destroy(w);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_colouring_random_sets_obey_the_definition),
        cmocka_unit_test(test_colouring_static_and_kinematic_bodies_never_block),
        cmocka_unit_test(test_colouring_a_star_fills_every_colour_then_overflows),
        cmocka_unit_test(test_an_unknown_solver_is_refused),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
