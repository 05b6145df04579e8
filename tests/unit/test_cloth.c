/*
 * test_cloth.c: cloth under XPBD (stiffness as compliance) and its batched
 * solver (server/sim/cloth_batch.c).
 *
 * CMake builds this file twice, like test_soft_wide.c: test_cloth against
 * rd_sim (SSE2 lanes on x86-64) and test_cloth_portable against the
 * simulator built with RD_SIM_NO_SIMD (the portable lanes); both check the
 * blocks, test_cloth runs the other with --hashes and asserts the same world
 * hashes, and runs the sheets (the physics) once.
 *
 * What is asserted comes from the design and from physics, not from the
 * code's output:
 *  - the blocks are a schedule of the sequential sweep (no two lanes of a
 *    block share a particle; two constraints that share one keep their
 *    order), so a cloth stepped with blocks and the same cloth stepped by
 *    the sequential loop are equal bit for bit, also after other entities
 *    are despawned and the blocks rebuilt;
 *  - a hanging cloth comes to rest (kinetic energy), its structural
 *    constraints hold (strain), and XPBD's shape is independent of the tick
 *    rate and invariant when mass and 1/compliance scale together: with
 *    m → k·m and α → α/k, Δλ → k·Δλ and Δx = w·∇C·Δλ is unchanged
 *    (Macklin et al. 2016, eq. 18), and gravity does not depend on mass.
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
#include "sim.h"
#include "world.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static sim_world* make_world(const sim_world_def* def) {
    sim_world* w = NULL;
    assert_int_equal(sim_world_create(def, &w), SIM_OK);
    return w;
}

static sim_cloth_def small_cloth(float x, uint32_t cols, uint32_t rows, float compliance) {
    sim_cloth_def c = sim_cloth_def_default();
    c.origin = (sim_vec3){x, 4.0f, 0.0f};
    c.cols = cols;
    c.rows = rows;
    c.spacing = 0.05f;
    c.stretch_compliance = compliance;
    c.shear_compliance = 2.0f * compliance;
    c.bend_compliance = 10.0f * compliance;
    return c;
}

// ---------------------------------------------------------------------------
// The blocks: a schedule of the sequential sweep
// ---------------------------------------------------------------------------

// Checks entity e's blocks against its constraints: every constraint in
// exactly one lane, empty lanes last, no particle twice in a block, blocks
// that share a particle at least 2 apart (two are solved at once), and the
// sweep order kept for constraints that share a particle.
static void check_schedule(const sim_world* w, const sim__entity* e) {
    const sim__dist* d = w->dist + e->d_first;
    const sim__dist_block* blk = w->dist_blocks + e->cb_first;
    uint32_t* at = calloc(e->d_count, sizeof *at); // block of constraint k, + 1
    uint32_t* last = calloc(e->p_count, sizeof *last);
    uint32_t lanes = 0;
    for (uint32_t k = 0; k < e->cb_count; ++k) {
        bool empty_seen = false;
        for (int i = 0; i < 4; ++i) {
            uint32_t a = blk[k].a[i] / 2u, b = blk[k].b[i] / 2u;
            if (a == b) {
                empty_seen = true;
                continue;
            }
            assert_false(empty_seen);
            for (int j = 0; j < i; ++j) {
                uint32_t a2 = blk[k].a[j] / 2u, b2 = blk[k].b[j] / 2u;
                assert_true(a != a2 && a != b2 && b != a2 && b != b2);
            }
            // Find it among the constraints (the first not yet placed).
            uint32_t c = 0;
            while (c < e->d_count && !(d[c].a == a && d[c].b == b && at[c] == 0)) {
                c++;
            }
            assert_true(c < e->d_count);
            assert_true(blk[k].rest[i] == d[c].rest);
            assert_true(blk[k].compliance[i] == d[c].compliance);
            at[c] = k + 1;
            lanes++;
        }
    }
    assert_int_equal(lanes, e->d_count);
    // In sweep order, each constraint after the last one on its particles.
    for (uint32_t c = 0; c < e->d_count; ++c) {
        uint32_t a = d[c].a, b = d[c].b;
        uint32_t after = last[a] > last[b] ? last[a] : last[b];
        if (after > 0) {
            assert_true(at[c] >= after + 2);
        }
        last[a] = last[b] = at[c];
    }
    free(at);
    free(last);
}

static void test_cloth_blocks_schedule_the_sweep(void** state) {
    (void)state;
    sim_world_def def = sim_world_def_default();
    sim_world* w = make_world(&def);
    const uint32_t sizes[][2] = {{64, 64}, {24, 16}, {12, 10}, {7, 30}};
    for (int s = 0; s < 4; ++s) {
        sim_cloth_def c = small_cloth(-2.0f + 1.0f * (float)s, sizes[s][0], sizes[s][1], 1e-6f);
        sim_entity_id id;
        assert_int_equal(sim_world_spawn_cloth(w, &c, &id), SIM_OK);
        const sim__entity* e = sim__entity_get(w, id);
        assert_true(e->cb_count > 0);
        check_schedule(w, e);
        printf("%ux%u cloth: %u constraints in %u blocks (%.3fx a quarter)\n", c.cols, c.rows,
               e->d_count, e->cb_count, (double)e->cb_count / ((double)e->d_count / 4.0));
        // Little padding: within the room SIM__DIST_BLOCKS gives it.
        assert_true(e->cb_count <= SIM__DIST_BLOCKS(e->d_count, e->p_count));
    }
    sim_world_destroy(w);
}

// Steps two worlds made alike, the second with every cloth's blocks
// dropped (the sequential loop), and asserts equal positions, previous
// positions and hashes bit for bit after each of `ticks` ticks.
static void assert_same_worlds(sim_world* a, sim_world* b, int ticks) {
    for (int t = 0; t < ticks; ++t) {
        sim_world_step(a);
        sim_world_step(b);
        assert_int_equal(a->p_count, b->p_count);
        assert_memory_equal(a->pos, b->pos, a->p_count * sizeof *a->pos);
        assert_memory_equal(a->prev, b->prev, a->p_count * sizeof *a->prev);
        assert_true(sim_world_hash(a) == sim_world_hash(b));
    }
}

static void drop_all_blocks(sim_world* w) {
    for (uint32_t k = 0; k < w->order_count; ++k) {
        sim__cloth_batches_drop(w, &w->entities[w->order[k]]);
    }
    assert_int_equal(w->db_count, 0);
}

static void test_cloth_blocks_equal_the_sequential_loop(void** state) {
    (void)state;
    // Compliance, several iterations and substeps (λ carries between
    // passes), a pinned row, the ground and a box in reach, other entities
    // around: every path of a projection.
    sim_world_def def = sim_world_def_default();
    def.params.iterations = 6;
    def.params.substeps = 3;
    sim_world* w[2] = {make_world(&def), make_world(&def)};
    sim_entity_id ids[2][4];
    for (int i = 0; i < 2; ++i) {
        sim_box box = {{0.0f, 2.2f, 0.3f}, {2.0f, 0.1f, 0.2f}};
        assert_int_equal(sim_world_add_box(w[i], box), SIM_OK);
        sim_cloth_def c0 = small_cloth(-2.0f, 20, 40, 0.0f);
        sim_cloth_def c1 = small_cloth(-0.5f, 30, 30, 1e-5f);
        c1.pin_top = false; // falls onto the box and the ground
        sim_rope_def r = sim_rope_def_default();
        r.anchor = (sim_vec3){1.5f, 4.0f, 0.0f};
        sim_cloth_def c2 = small_cloth(2.0f, 16, 24, 1e-4f);
        assert_int_equal(sim_world_spawn_cloth(w[i], &c0, &ids[i][0]), SIM_OK);
        assert_int_equal(sim_world_spawn_cloth(w[i], &c1, &ids[i][1]), SIM_OK);
        assert_int_equal(sim_world_spawn_rope(w[i], &r, &ids[i][2]), SIM_OK);
        assert_int_equal(sim_world_spawn_cloth(w[i], &c2, &ids[i][3]), SIM_OK);
        assert_int_equal(sim_entity_apply_impulse(w[i], ids[i][3], 5, (sim_vec3){1.0f, 0.0f, 2.0f}),
                         SIM_OK);
    }
    assert_true(w[0]->db_count > 0);
    drop_all_blocks(w[1]);
    assert_same_worlds(w[0], w[1], 90);

    // A despawn slides the later cloths' blocks down; they still match.
    assert_int_equal(sim_world_despawn(w[0], ids[0][0]), SIM_OK);
    assert_int_equal(sim_world_despawn(w[1], ids[1][0]), SIM_OK);
    check_schedule(w[0], sim__entity_get(w[0], ids[0][1]));
    check_schedule(w[0], sim__entity_get(w[0], ids[0][3]));
    assert_same_worlds(w[0], w[1], 60);

    // A rebuild (as after tearing) moves the middle cloth's blocks to the
    // end and slides the last one's down.
    sim__entity* mid = sim__entity_get(w[0], ids[0][1]);
    uint32_t blocks = mid->cb_count;
    assert_int_equal(sim__cloth_batches_rebuild(w[0], mid), SIM_OK);
    assert_int_equal(mid->cb_count, blocks);
    assert_int_equal(sim__entity_get(w[0], ids[0][3])->cb_first, 0);
    check_schedule(w[0], mid);
    assert_same_worlds(w[0], w[1], 60);

    // A new cloth spawned after a despawn gets blocks too.
    sim_cloth_def c3 = small_cloth(-2.5f, 25, 25, 2e-5f);
    sim_entity_id id3[2];
    assert_int_equal(sim_world_spawn_cloth(w[0], &c3, &id3[0]), SIM_OK);
    assert_int_equal(sim_world_spawn_cloth(w[1], &c3, &id3[1]), SIM_OK);
    assert_true(sim__entity_get(w[0], id3[0])->cb_count > 0);
    drop_all_blocks(w[1]);
    assert_same_worlds(w[0], w[1], 60);
    sim_world_destroy(w[0]);
    sim_world_destroy(w[1]);
}

// The state hashes of cloth scenes, for the other build of this file.
static size_t cloth_hashes(char* out, size_t cap) {
    size_t n = 0;
    out[0] = '\0';
    for (int scene = 0; scene < 3; ++scene) {
        sim_world_def def = sim_world_def_default();
        def.params.iterations = scene == 2 ? 3 : 10;
        def.params.substeps = scene == 2 ? 5 : 1;
        sim_world* w = make_world(&def);
        sim_entity_id id;
        sim_cloth_def c = small_cloth(-1.0f, 40, 40, 3e-5f);
        c.pin_top = false; // falls onto the ground
        int rc = scene == 0   ? sim_scene_square_cloth(w, 64, 0.05f, 4.0f, &id)
                 : scene == 1 ? sim_scene_demo(w)
                              : sim_world_spawn_cloth(w, &c, &id);
        assert_int_equal(rc, SIM_OK);
        for (int t = 0; t < 120; ++t) {
            sim_world_step(w);
        }
        n += (size_t)snprintf(out + n, cap - n, "scene %d %016" PRIx64 "\n", scene,
                              sim_world_hash(w));
        sim_world_destroy(w);
    }
    return n;
}

#ifdef RD_CLOTH_PORTABLE
static void test_cloth_portable_build_gives_the_same_worlds(void** state) {
    (void)state;
    if (!SIM__LANES_SSE2) {
        skip(); // this build's lanes are the portable ones already
    }
    char mine[512], theirs[512];
    assert_true(cloth_hashes(mine, sizeof mine) > 0);
    FILE* p = popen(RD_CLOTH_PORTABLE " --hashes", "r");
    assert_non_null(p);
    size_t n = fread(theirs, 1, sizeof theirs - 1, p);
    theirs[n] = '\0';
    assert_int_equal(pclose(p), 0);
    assert_string_equal(theirs, mine);
}
#endif

// ---------------------------------------------------------------------------
// XPBD: compliance, not iterations or tick rate (test_cloth only)
// ---------------------------------------------------------------------------
#ifdef RD_CLOTH_PORTABLE

// The sheet: 50 × 50 particles over 1 × 1 m, `kg` in all, its top
// edge pinned at y = 3 m, compliance `alpha` (m/N) on every constraint,
// 5 substeps per tick at `hz` ticks per second. It starts hanging, as
// sim_world_spawn_cloth() lays it out, or `flat` (horizontal, in the x-z
// plane, pinned along z = 0), to fall and swing down. Damping is per substep (sim_params.damping),
// so it is set per rate to remove the same fraction of velocity per second: 0.99 per substep at 60
// Hz × 5, i.e. 0.99^(300 h) for a substep of h seconds.
#define SHEET_N 50u

typedef struct sheet {
    sim_world* w;
    sim_entity_id id;
    float h; ///< Substep, s.
    float m; ///< Particle mass, kg.
} sheet;

static sheet sheet_make(float hz, float kg, float alpha, int iterations, bool flat) {
    sheet s;
    sim_world_def def = sim_world_def_default();
    def.dt = 1.0f / hz;
    def.params.substeps = 5;
    def.params.iterations = iterations;
    s.h = def.dt / 5.0f;
    def.params.damping = powf(0.99f, 300.0f * s.h);
    // No air: its drag does not scale with the mass (the 1.01 and 10.1 kg
    // sheets would hang differently) and the shapes compared are the
    // constraints' alone.
    def.params.air_density = 0.0f;
    s.w = make_world(&def);
    sim_cloth_def c = sim_cloth_def_default();
    c.cols = c.rows = SHEET_N;
    c.spacing = 1.0f / (float)(SHEET_N - 1);
    c.origin = (sim_vec3){-0.5f, 3.0f, 0.0f};
    c.mass = 1e-3f; // set below: 1 kg over 2,500 particles is under SIM_MIN_MASS
    c.stretch_compliance = c.shear_compliance = c.bend_compliance = alpha;
    assert_int_equal(sim_world_spawn_cloth(s.w, &c, &s.id), SIM_OK);
    sim__entity* e = sim__entity_get(s.w, s.id);
    s.m = kg / (float)(SHEET_N * SHEET_N);
    for (uint32_t y = 0; y < SHEET_N; ++y) {
        for (uint32_t x = 0; x < SHEET_N; ++x) {
            uint32_t i = e->p_first + y * SHEET_N + x;
            if (flat) {
                // Row y lies at z = y × spacing (lengths as built).
                sim_vec3 p = {s.w->pos[i].x, 3.0f, c.spacing * (float)y};
                s.w->pos[i] = s.w->prev[i] = p;
            }
            if (y > 0) {
                s.w->inv_mass[i] = 1.0f / s.m;
            }
        }
    }
    return s;
}

static void sheet_run(sheet* s, float seconds) {
    const int ticks = (int)lroundf(seconds / sim_world_dt(s->w));
    for (int t = 0; t < ticks; ++t) {
        sim_world_step(s->w);
    }
}

static sim_entity_view sheet_view(const sheet* s) {
    sim_entity_view v;
    assert_int_equal(sim_entity_get_view(s->w, s->id, &v), SIM_OK);
    return v;
}

// Kinetic energy, J: velocities over the last substep.
static double sheet_kinetic(const sheet* s) {
    sim_entity_view v = sheet_view(s);
    double ke = 0.0;
    for (uint32_t i = 0; i < v.particle_count; ++i) {
        if (v.inv_mass[i] == 0.0f) {
            continue;
        }
        double dx = (double)(v.pos[i].x - v.prev[i].x) / s->h;
        double dy = (double)(v.pos[i].y - v.prev[i].y) / s->h;
        double dz = (double)(v.pos[i].z - v.prev[i].z) / s->h;
        ke += 0.5 * (double)s->m * (dx * dx + dy * dy + dz * dz);
    }
    return ke;
}

// Largest |strain| of the structural constraints (the first ones built).
static double sheet_max_strain(const sheet* s) {
    const sim__entity* e = sim__entity_get(s->w, s->id);
    const uint32_t structural = 2u * (SHEET_N - 1u) * SHEET_N;
    const sim_vec3* p = s->w->pos + e->p_first;
    double worst = 0.0;
    for (uint32_t k = 0; k < structural; ++k) {
        const sim__dist* d = &s->w->dist[e->d_first + k];
        double dx = (double)p[d->b].x - p[d->a].x, dy = (double)p[d->b].y - p[d->a].y,
               dz = (double)p[d->b].z - p[d->a].z;
        double strain = fabs(sqrt(dx * dx + dy * dy + dz * dz) / d->rest - 1.0);
        worst = strain > worst ? strain : worst;
    }
    return worst;
}

// Largest distance between the same particle of two sheets, m.
static double sheet_distance(const sheet* a, const sheet* b) {
    sim_entity_view va = sheet_view(a), vb = sheet_view(b);
    double worst = 0.0;
    for (uint32_t i = 0; i < va.particle_count; ++i) {
        double dx = (double)va.pos[i].x - vb.pos[i].x, dy = (double)va.pos[i].y - vb.pos[i].y,
               dz = (double)va.pos[i].z - vb.pos[i].z;
        double d = sqrt(dx * dx + dy * dy + dz * dz);
        worst = d > worst ? d : worst;
    }
    return worst;
}

// How far the bottom row hangs below the pinned top, m (1 m unstretched).
static double sheet_drop(const sheet* s) {
    sim_entity_view v = sheet_view(s);
    double sum = 0.0;
    for (uint32_t x = 0; x < SHEET_N; ++x) {
        sum += 3.0 - (double)v.pos[(SHEET_N - 1) * SHEET_N + x].y;
    }
    return sum / SHEET_N;
}

// Solver iterations per substep of the tests below: with 5 substeps, the
// fewest for which the 60 Hz sheet holds the 2 % strain (the
// figures are printed).
#define SHEET_ITERATIONS 10

// Hanging from the start, the sheet only stretches under its weight; flat,
// it swings down through 1 m first (about 4.9 J), and the damping (0.049
// of the velocity left after a second) takes 3-4 s to bring that below
// 1e-4 J (1.0e-3 J after 2 s, 1.4e-4 J after 3 s).
static void test_cloth_sheet_settles_and_holds(void** state) {
    (void)state;
    for (int flat = 0; flat < 2; ++flat) {
        sheet s = sheet_make(60.0f, 1.0f, 1e-5f, SHEET_ITERATIONS, flat);
        for (int t = 2; t <= 4; t += 2) {
            sheet_run(&s, 2.0f);
            assert_true(sim_world_is_finite(s.w));
            double ke = sheet_kinetic(&s), strain = sheet_max_strain(&s);
            printf("sheet %s, 60 Hz, 1 kg, 1e-5 m/N, %d iterations: after %d s KE %.3g J, "
                   "strain %.3f %%, drop %.4f m\n",
                   flat ? "from flat" : "hanging", SHEET_ITERATIONS, t, ke, 100.0 * strain,
                   sheet_drop(&s));
            if (t == (flat ? 4 : 2)) {
                assert_true(ke < 1e-4);
                assert_true(strain < 0.02);
                // It hangs: the bottom row about 1 m under the top.
                assert_true(fabs(sheet_drop(&s) - 1.0) < 0.02);
            }
        }
        sim_world_destroy(s.w);
    }
}

static void test_cloth_sheet_mass_and_compliance_scale_together(void** state) {
    (void)state;
    sheet a = sheet_make(60.0f, 1.01f, 1e-5f, SHEET_ITERATIONS, true);
    sheet b = sheet_make(60.0f, 10.1f, 1e-6f, SHEET_ITERATIONS, true);
    sheet_run(&a, 2.0f);
    sheet_run(&b, 2.0f);
    double d = sheet_distance(&a, &b);
    printf("sheet 1.01 kg at 1e-5 m/N against 10.1 kg at 1e-6 m/N: shapes %.3g m apart\n", d);
    assert_true(d < 0.01);
    sim_world_destroy(a.w);
    sim_world_destroy(b.w);
}

static void test_cloth_sheet_shape_is_independent_of_tick_rate(void** state) {
    (void)state;
    const float rates[3] = {30.0f, 60.0f, 120.0f};
    sheet s[3];
    for (int i = 0; i < 3; ++i) {
        s[i] = sheet_make(rates[i], 1.0f, 1e-5f, SHEET_ITERATIONS, true);
        sheet_run(&s[i], 4.0f);
        assert_true(sim_world_is_finite(s[i].w));
        printf("sheet at %3.0f Hz: after 4 s KE %.3g J, drop %.5f m, strain %.3f %%\n",
               (double)rates[i], sheet_kinetic(&s[i]), sheet_drop(&s[i]),
               100.0 * sheet_max_strain(&s[i]));
    }
    // Within 1 % of the sheet's size (1 m): every particle within 1 cm of
    // where it hangs at 60 Hz. Not within 1 % of its stretch: the 1e-5 m/N
    // compliance stretches it by about 50 µm in all (0.2 N per column at
    // the top), but 10 Gauss-Seidel iterations leave a 50-row sheet
    // stretched by the gravity of each substep, g·h², which they do not
    // undo: 8.6, 2.1 and 0.5 mm at 30, 60 and 120 Hz (∝ h²; printed).
    for (int i = 0; i < 3; i += 2) {
        double d = sheet_distance(&s[i], &s[1]);
        printf("  %3.0f Hz against 60 Hz: %.3g m apart\n", (double)rates[i], d);
        assert_true(d < 0.01);
    }
    for (int i = 0; i < 3; ++i) {
        sim_world_destroy(s[i].w);
    }
}

#endif // RD_CLOTH_PORTABLE

int main(int argc, char** argv) {
    if (argc == 2 && strcmp(argv[1], "--hashes") == 0) {
        // For the other build's test: this build's hashes on stdout.
        char out[512];
        if (cloth_hashes(out, sizeof out) == 0) {
            return 1;
        }
        fputs(out, stdout);
        return 0;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cloth_blocks_schedule_the_sweep),
        cmocka_unit_test(test_cloth_blocks_equal_the_sequential_loop),
#ifdef RD_CLOTH_PORTABLE
        // The sheets' physics once, in the build that also compares the
        // lanes (the portable build's sheets are those hashes' business).
        cmocka_unit_test(test_cloth_portable_build_gives_the_same_worlds),
        cmocka_unit_test(test_cloth_sheet_settles_and_holds),
        cmocka_unit_test(test_cloth_sheet_mass_and_compliance_scale_together),
        cmocka_unit_test(test_cloth_sheet_shape_is_independent_of_tick_rate),
#endif
    };
    printf("lanes: %s\n", SIM__LANES_SSE2 ? "SSE2" : "portable");
    return cmocka_run_group_tests(tests, NULL, NULL);
}
