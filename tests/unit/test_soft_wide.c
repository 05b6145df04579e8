/*
 * test_soft_wide.c: the soft step's wide contact solver (server/sim/
 * soft_wide.c) and its lanes (server/sim/lanes.h).
 *
 * CMake builds this file twice: test_soft_wide against rd_sim (SSE2 lanes
 * on x86-64) and test_soft_wide_portable against a second build of the
 * simulator with RD_SIM_NO_SIMD (the portable lanes). Both run the lane and
 * block tests on their own lanes; test_soft_wide then runs the other with
 * --hashes and asserts the two builds' world hashes of soft-step scenes
 * with many contacts are the same bit for bit.
 *
 * What is asserted is what the design promises, not figures of the solver:
 * a lane operation is the IEEE operation of C on each lane; a block of four
 * contact points leaves the bodies and the impulses exactly as the scalar
 * functions of soft_contact.c leave them, one point after the other; and
 * the two builds of lanes.h give the same world.
 */
// cmocka.h needs these four before it (cmocka docs); keep the order.
// clang-format off
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
// clang-format on

#include "lanes.h"
#include "scenes.h"
#include "shipped_library.h"
#include "sim.h"
#include "soft.h"
#include "world.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint32_t bits(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static float from_bits(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

// A small deterministic generator (xorshift32).
static uint32_t g_rng = 0x9e3779b9u;

static uint32_t next_u32(void) {
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 17;
    g_rng ^= g_rng << 5;
    return g_rng;
}

// Uniform in [lo, hi).
static float uniform(float lo, float hi) {
    return lo + (hi - lo) * (float)(next_u32() >> 8) * (1.0f / 16777216.0f);
}

// ---------------------------------------------------------------------------
// Lanes: each operation is C's on every lane
// ---------------------------------------------------------------------------

static sim__fw four(const float* v) {
    return sim__fw_load(v);
}

static void test_soft_wide_lanes_are_ieee_operations_of_c(void** state) {
    (void)state;
    // Zeros of both signs, denormals, the extremes, infinities, a NaN, and
    // ordinary numbers whose products and quotients round.
    const float special[] = {0.0f,
                             -0.0f,
                             1.0f,
                             -1.0f,
                             3.0f,
                             0.1f,
                             -7.25e-3f,
                             1.0e-40f,
                             -3.0e-42f,
                             1.17549435e-38f,
                             3.40282347e+38f,
                             -3.40282347e+38f,
                             HUGE_VALF,
                             -HUGE_VALF,
                             NAN,
                             1.0e-9f,
                             123456.789f,
                             2.0f / 3.0f};
    const size_t ns = sizeof special / sizeof special[0];
    float a[4], b[4], r[4];
    for (int round = 0; round < 4000; ++round) {
        for (int l = 0; l < 4; ++l) {
            a[l] = round < 400 ? special[next_u32() % ns] : uniform(-100.0f, 100.0f);
            b[l] = round < 400 ? special[next_u32() % ns] : uniform(-100.0f, 100.0f);
            if (round % 7 == 0) {
                b[l] = a[l]; // ties for min, max and the comparisons
            }
        }
        const sim__fw fa = four(a), fb = four(b);
#define CHECK_OP(expr, scalar)                                                                     \
    do {                                                                                           \
        sim__fw_store(r, (expr));                                                                  \
        for (int l = 0; l < 4; ++l) {                                                              \
            const float x = a[l], y = b[l];                                                        \
            const float want = (scalar);                                                           \
            (void)y;                                                                               \
            if (isnan(want)) {                                                                     \
                assert_true(isnan(r[l]));                                                          \
            } else {                                                                               \
                assert_int_equal(bits(r[l]), bits(want));                                          \
            }                                                                                      \
        }                                                                                          \
    } while (0)
        CHECK_OP(sim__fw_add(fa, fb), x + y);
        CHECK_OP(sim__fw_sub(fa, fb), x - y);
        CHECK_OP(sim__fw_mul(fa, fb), x * y);
        CHECK_OP(sim__fw_div(fa, fb), x / y);
        CHECK_OP(sim__fw_sqrt(fa), sqrtf(x));
        CHECK_OP(sim__fw_neg(fa), -x);
        CHECK_OP(sim__fw_max(fa, fb), x > y ? x : y);
        CHECK_OP(sim__fw_min(fa, fb), x < y ? x : y);
        CHECK_OP(sim__fw_select(sim__fw_gt(fa, fb), fa, fb), x > y ? x : y);
        CHECK_OP(sim__fw_select(sim__fw_eq(fa, fb), fa, fb), x == y ? x : y);
        CHECK_OP(sim__fw_select(sim__mw_or(sim__fw_gt(fa, fb), sim__fw_gt(fb, fa)), fa, fb),
                 (x > y || y > x) ? x : y);
        CHECK_OP(sim__fw_select(sim__mw_and_not(sim__fw_eq(fa, fa), sim__fw_gt(fa, fb)), fa, fb),
                 (x == x && !(x > y)) ? x : y);
        CHECK_OP(sim__fw_select(sim__mw_and(sim__fw_eq(fa, fa), sim__fw_gt(fb, fa)), fa, fb),
                 (x == x && y > x) ? x : y);
#undef CHECK_OP
        // max and min are fmaxf and fminf where the operands are not NaN
        // and not zeros of opposite signs (soft_contact.c uses fmaxf).
        sim__fw_store(r, sim__fw_max(fa, fb));
        float s[4];
        sim__fw_store(s, sim__fw_min(fa, fb));
        for (int l = 0; l < 4; ++l) {
            if (!isnan(a[l]) && !isnan(b[l]) && !(a[l] == 0.0f && b[l] == 0.0f)) {
                assert_int_equal(bits(r[l]), bits(fmaxf(a[l], b[l])));
                assert_int_equal(bits(s[l]), bits(fminf(a[l], b[l])));
            }
        }
        const bool any = a[0] > b[0] || a[1] > b[1] || a[2] > b[2] || a[3] > b[3];
        const bool all = a[0] > b[0] && a[1] > b[1] && a[2] > b[2] && a[3] > b[3];
        assert_true(sim__mw_any(sim__fw_gt(fa, fb)) == any);
        assert_true(sim__mw_all(sim__fw_gt(fa, fb)) == all);
        for (int l = 0; l < 4; ++l) {
            assert_int_equal(bits(sim__fw_lane(fa, l)), bits(a[l]));
        }
    }
    // fmaxf's zero tie in soft_contact.c: fmaxf(x, 0.0f) with x = -0 is
    // +0 (glibc: maxss); the lanes give the second operand too.
    const float mz[4] = {-0.0f, -0.0f, -0.0f, -0.0f};
    sim__fw_store(r, sim__fw_max(four(mz), sim__fw_zero()));
    assert_int_equal(bits(r[0]), bits(0.0f));
    // A transpose moves bits (a body index read as a float is kept).
    float m[4][4];
    for (int i = 0; i < 4; ++i) {
        for (int j = 0; j < 4; ++j) {
            m[i][j] = from_bits(next_u32());
        }
    }
    sim__fw r0 = four(m[0]), r1 = four(m[1]), r2 = four(m[2]), r3 = four(m[3]);
    sim__fw_transpose(&r0, &r1, &r2, &r3);
    const sim__fw rows[4] = {r0, r1, r2, r3};
    for (int i = 0; i < 4; ++i) {
        float out[4];
        sim__fw_store(out, rows[i]);
        for (int j = 0; j < 4; ++j) {
            assert_memory_equal(&out[j], &m[j][i], sizeof(float));
        }
    }
}

// ---------------------------------------------------------------------------
// Blocks: four points at once are the scalar functions on each
// ---------------------------------------------------------------------------

#define DYNAMIC   10 // solver indices 0..9 dynamic,
#define KINEMATIC 2  // 10..11 kinematic (zero inverse mass and inertia)
#define BODIES    (DYNAMIC + KINEMATIC)

static sim_vec3 rand_vec(float r) {
    sim_vec3 v = {uniform(-r, r), uniform(-r, r), uniform(-r, r)};
    return v;
}

static sim_vec3 cross(sim_vec3 a, sim_vec3 b) {
    sim_vec3 r = {a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x};
    return r;
}

static sim_vec3 unit(sim_vec3 v) {
    float l = sqrtf(v.x * v.x + v.y * v.y + v.z * v.z);
    sim_vec3 r = {v.x / l, v.y / l, v.z / l};
    return r;
}

static void random_bodies(sim__body_state* s, sim__body_mass* m) {
    memset(s, 0, BODIES * sizeof *s);
    memset(m, 0, BODIES * sizeof *m);
    for (uint32_t i = 0; i < BODIES; ++i) {
        // Kinematic bodies move too (no zero components, whose sign an
        // added ±0 could flip: the scalar code adds 0 · p to them).
        s[i].v = rand_vec(3.0f);
        s[i].w = rand_vec(i < DYNAMIC && i % 3 == 0 ? 0.01f : 10.0f);
        s[i].body = 100 + i;
        s[i].dp = rand_vec(0.02f);
        sim_vec3 axis = rand_vec(0.05f);
        float qw = sqrtf(1.0f - (axis.x * axis.x + axis.y * axis.y + axis.z * axis.z));
        s[i].dq = (sim_quat){axis.x, axis.y, axis.z, qw};
        if (i < DYNAMIC) {
            s[i].inv_mass = uniform(0.1f, 2.0f);
            // A symmetric positive definite inverse inertia: diagonal
            // dominant with small products.
            for (int k = 0; k < 3; ++k) {
                m[i].iw[k] = uniform(1.0f, 30.0f);
            }
            for (int k = 3; k < 6; ++k) {
                m[i].iw[k] = uniform(-0.5f, 0.5f);
            }
        }
    }
}

// A contact point between a (dynamic) and b (a body or SIM__NO_STATE) in
// every regime of soft_contact.c: apart or penetrating, warm or cold,
// rolling or not, slow or bouncing.
static sim__soft_contact random_point(uint32_t a, uint32_t b) {
    sim__soft_contact c;
    memset(&c, 0, sizeof c);
    c.a = a;
    c.b = b;
    c.is_static = b == SIM__NO_STATE;
    c.n = unit(rand_vec(1.0f));
    c.t1 = unit(cross(c.n, unit(rand_vec(1.0f))));
    c.t2 = cross(c.n, c.t1);
    c.ra = rand_vec(0.3f);
    c.rb = c.is_static ? rand_vec(50.0f) : rand_vec(0.3f);
    c.ca = rand_vec(0.3f);
    c.cb = c.is_static ? c.rb : rand_vec(0.3f);
    c.base_sep = uniform(-0.06f, 0.04f);
    c.m_n = uniform(0.2f, 5.0f);
    c.m_t1 = uniform(0.2f, 5.0f);
    c.m_t2 = uniform(0.2f, 5.0f);
    const uint32_t warm = next_u32() % 3;
    c.lambda_n = warm == 0 ? 0.0f : uniform(0.0f, 2.0f);
    c.lambda_t1 = warm == 0 ? 0.0f : uniform(-1.0f, 1.0f);
    c.lambda_t2 = warm == 0 ? 0.0f : uniform(-1.0f, 1.0f);
    c.vn0 = uniform(-4.0f, 1.0f);
    c.roll_cap = next_u32() % 4 == 0 ? 0.0f : uniform(0.0f, 0.03f);
    c.friction = next_u32() % 5 == 0 ? 0.0f : 0.5f;
    if (next_u32() % 3 == 0) {
        c.lambda_roll = rand_vec(0.01f);
    }
    return c;
}

static sim__soft_ctx make_ctx(sim__body_state* s, sim__body_mass* m) {
    sim__soft_ctx ctx;
    memset(&ctx, 0, sizeof ctx);
    ctx.state = s;
    ctx.mass = m;
    ctx.h = 1.0f / 240.0f;
    ctx.inv_h = 240.0f;
    ctx.contact_soft = sim__make_soft(30.0f, 10.0f, ctx.h);
    ctx.static_soft = sim__make_soft(60.0f, 10.0f, ctx.h);
    ctx.joint_soft = sim__make_soft(60.0f, 2.0f, ctx.h);
    ctx.max_push = 3.0f;
    ctx.restitution = 0.3f;
    ctx.rest_speed = 1.0f;
    return ctx;
}

static void assert_same_point(const sim__soft_contact* x, const sim__soft_contact* y) {
    assert_int_equal(bits(x->lambda_n), bits(y->lambda_n));
    assert_int_equal(bits(x->lambda_t1), bits(y->lambda_t1));
    assert_int_equal(bits(x->lambda_t2), bits(y->lambda_t2));
    assert_int_equal(bits(x->max_lambda_n), bits(y->max_lambda_n));
    assert_int_equal(bits(x->lambda_roll.x), bits(y->lambda_roll.x));
    assert_int_equal(bits(x->lambda_roll.y), bits(y->lambda_roll.y));
    assert_int_equal(bits(x->lambda_roll.z), bits(y->lambda_roll.z));
}

static void test_soft_wide_block_is_the_scalar_points_bit_for_bit(void** state) {
    (void)state;
    // How often each regime came up, so that a change to the generator
    // cannot quietly stop testing one.
    int bounced = 0, rolled = 0, clamped = 0, padded = 0, shared_kinematic = 0;
    for (int trial = 0; trial < 3000; ++trial) {
        sim__body_state s1[BODIES], s2[BODIES];
        sim__body_mass m[BODIES];
        random_bodies(s1, m);
        memcpy(s2, s1, sizeof s1);
        uint8_t dynamic[BODIES];
        for (uint32_t i = 0; i < BODIES; ++i) {
            dynamic[i] = i < DYNAMIC;
        }
        // Four lanes (or fewer: padding) of one "colour": no dynamic body
        // twice; b static, kinematic (possibly in several lanes) or dynamic.
        uint32_t order[DYNAMIC];
        for (uint32_t i = 0; i < DYNAMIC; ++i) {
            order[i] = i;
        }
        for (uint32_t i = DYNAMIC - 1; i > 0; --i) {
            uint32_t j = next_u32() % (i + 1), t = order[i];
            order[i] = order[j];
            order[j] = t;
        }
        const uint32_t lanes = 1 + next_u32() % 4;
        padded += lanes < 4;
        sim__soft_contact c1[4], c2[4];
        uint32_t k[4], next_dynamic = 4, kinematic_uses[KINEMATIC] = {0};
        for (uint32_t l = 0; l < lanes; ++l) {
            uint32_t b = SIM__NO_STATE;
            switch (next_u32() % 3) {
            case 0:
                break;
            case 1:
                b = DYNAMIC + next_u32() % KINEMATIC;
                kinematic_uses[b - DYNAMIC]++;
                break;
            default:
                b = order[next_dynamic++];
                break;
            }
            c1[l] = random_point(order[l], b);
            k[l] = l;
        }
        shared_kinematic += kinematic_uses[0] > 1 || kinematic_uses[1] > 1;
        sim__soft_contact c0[4];
        memcpy(c0, c1, sizeof c1);
        memcpy(c2, c1, sizeof c1);

        // Two substeps and the restitution, the scalar way...
        sim__soft_ctx ctx1 = make_ctx(s1, m), ctx2 = make_ctx(s2, m);
        float before_rest[4];
        for (int sub = 0; sub < 2; ++sub) {
            for (uint32_t l = 0; l < lanes; ++l) {
                sim__soft_contact_warm(&ctx1, &c1[l]);
            }
            for (uint32_t l = 0; l < lanes; ++l) {
                sim__soft_contact_solve(&ctx1, &c1[l], true);
                // On the cone: the friction pair was clamped.
                const sim__soft_contact* c = &c1[l];
                const float lf = sqrtf(c->lambda_t1 * c->lambda_t1 + c->lambda_t2 * c->lambda_t2);
                clamped += c->lambda_n > 0.0f && c->friction > 0.0f &&
                           fabsf(lf - c->friction * c->lambda_n) <= 1e-5f * lf;
            }
            for (uint32_t l = 0; l < lanes; ++l) {
                sim__soft_contact_solve(&ctx1, &c1[l], false);
            }
        }
        for (uint32_t l = 0; l < lanes; ++l) {
            before_rest[l] = c1[l].lambda_n;
            sim__soft_contact_restitute(&ctx1, &c1[l]);
        }
        // ...and four at a time.
        sim__contact_block blk;
        sim__soft_wide_fill(&blk, c2, k, lanes, dynamic);
        for (int sub = 0; sub < 2; ++sub) {
            sim__soft_wide_warm(&ctx2, &blk, 1);
            sim__soft_wide_solve(&ctx2, &blk, 1, true);
            sim__soft_wide_solve(&ctx2, &blk, 1, false);
        }
        sim__soft_wide_restitute(&ctx2, &blk, 1);
        sim__soft_wide_unpack(&blk, 1, c2);

        assert_memory_equal(s1, s2, sizeof s1);
        for (uint32_t l = 0; l < lanes; ++l) {
            assert_same_point(&c1[l], &c2[l]);
            bounced += c1[l].lambda_n != before_rest[l];
            rolled += c1[l].lambda_roll.x != c0[l].lambda_roll.x;
        }
    }
    printf("bounced %d rolled %d clamped %d padded %d shared %d\n", bounced, rolled, clamped,
           padded, shared_kinematic);
    assert_true(bounced > 100);
    assert_true(rolled > 100);
    assert_true(clamped > 100);
    assert_true(padded > 100);
    assert_true(shared_kinematic > 100);
}

// ---------------------------------------------------------------------------
// Worlds: the SSE2 and the portable build give the same bits
// ---------------------------------------------------------------------------

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

// Appends the world's hash to out (a line of 16 hex digits).
static void put_hash(const sim_world* w, char* out, size_t cap) {
    size_t at = strlen(out);
    snprintf(out + at, cap - at, "%016" PRIx64 "\n", sim_world_hash(w));
}

// The soft-step scenes' hashes, one line each, into out; returns how many
// contact blocks the colours held over the ticks (0 would test nothing).
static uint64_t scene_hashes(char* out, size_t cap) {
    out[0] = '\0';
    uint64_t blocks = 0;
    // 20 ragdolls killed with pushes, in a stack of layers 1.9 m apart,
    // piling up on the ground and on each other for 300 ticks (asleep by
    // the end): the hash every 50 ticks.
    sim_world_def def = sim_world_def_default();
    def.library = g_lib;
    def.solver = SIM_SOLVER_SOFT_STEP;
    def.params.substeps = 4;
    def.max_entities = 32;
    def.max_bodies = 16 * 32;
    def.max_joints = 16 * 32;
    def.max_solver_work = 0;
    sim_world* w = NULL;
    if (sim_world_create(&def, &w) != SIM_OK) {
        return 0;
    }
    uint32_t seed = 12345;
    for (uint32_t i = 0; i < 20; ++i) {
        const uint32_t layer = i / 9, k = i % 9;
        sim_character_def cd = sim_character_def_default();
        cd.position = (sim_vec3){0.7f * ((float)(k % 3) - 1.0f), 0.2f + 1.9f * (float)layer,
                                 0.7f * ((float)(k / 3) - 1.0f)};
        cd.facing = (float)(i % 4) * 1.5707963f;
        sim_entity_id id;
        if (sim_world_spawn_character(w, &cd, &id) != SIM_OK) {
            sim_world_destroy(w);
            return 0;
        }
        seed = seed * 1664525u + 1013904223u;
        float px = (float)((int)(seed >> 24) - 128) / 128.0f * 20.0f;
        seed = seed * 1664525u + 1013904223u;
        float pz = (float)((int)(seed >> 24) - 128) / 128.0f * 20.0f;
        sim_vec3 hit = {cd.position.x, cd.position.y + 1.4f, cd.position.z};
        sim_character_kill(w, id, hit, (sim_vec3){px, 0.0f, pz}, NULL);
    }
    for (int t = 1; t <= 300; ++t) {
        sim_world_step(w);
        blocks += w->soft_wide_first[w->soft_colouring.colour_count];
        if (t % 50 == 0) {
            put_hash(w, out, cap);
        }
    }
    sim_world_destroy(w);
    // The characters scene of tests/determinism under the soft step: its
    // animated (kinematic) bones touch dynamic ones, a ball bounces.
    def = sim_world_def_default();
    def.library = g_lib;
    def.solver = SIM_SOLVER_SOFT_STEP;
    def.params.substeps = 4;
    if (sim_world_create(&def, &w) != SIM_OK) {
        return 0;
    }
    if (sim_scene_characters(w, 360) != SIM_OK) {
        sim_world_destroy(w);
        return 0;
    }
    put_hash(w, out, cap);
    sim_world_destroy(w);
    return blocks;
}

#ifdef RD_SOFT_WIDE_PORTABLE
static void test_soft_wide_portable_build_gives_the_same_worlds(void** state) {
    (void)state;
    if (!SIM__LANES_SSE2) {
        skip(); // this build's lanes are the portable ones already
    }
    char mine[1024], theirs[1024];
    assert_true(scene_hashes(mine, sizeof mine) > 1000);
    FILE* p = popen(RD_SOFT_WIDE_PORTABLE " --hashes", "r");
    assert_non_null(p);
    size_t n = fread(theirs, 1, sizeof theirs - 1, p);
    theirs[n] = '\0';
    assert_int_equal(pclose(p), 0);
    assert_string_equal(theirs, mine);
}
#endif

int main(int argc, char** argv) {
    if (argc == 2 && strcmp(argv[1], "--hashes") == 0) {
        // For the other build's test: this build's hashes on stdout.
        char out[1024];
        if (setup(NULL) != 0 || scene_hashes(out, sizeof out) == 0) {
            return 1;
        }
        fputs(out, stdout);
        return teardown(NULL);
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_soft_wide_lanes_are_ieee_operations_of_c),
        cmocka_unit_test(test_soft_wide_block_is_the_scalar_points_bit_for_bit),
#ifdef RD_SOFT_WIDE_PORTABLE
        cmocka_unit_test(test_soft_wide_portable_build_gives_the_same_worlds),
#endif
    };
    printf("lanes: %s\n", SIM__LANES_SSE2 ? "SSE2" : "portable");
    return cmocka_run_group_tests(tests, setup, teardown);
}
