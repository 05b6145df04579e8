/*
 * bench.c: ragdoll-bench, figures for the README's benchmark table (Box2D's
 * benchmark/ style: a fixed scene, many ticks, medians, printed figures and
 * ratios). Not a test: nothing here passes or fails.
 *
 *   cloth64   a 64 × 64 cloth with structural, shear and bend constraints,
 *             10 iterations, 1 substep, hanging from its top row: ms per tick,
 *             ns per constraint projection, particle-iterations per second;
 *             and beside it, in the same process and in turn, a plain scalar
 *             Gauss-Seidel loop over the same constraints (plain_cloth()),
 *             with the ratio of the two (--cloth-only runs this part alone).
 *   demo      the demo world (2 particle ragdolls, a rope, a 24 × 16 cloth,
 *             2 platforms, 2 humanoids and a dog): ticks per second on one core.
 *   pile N    N rigid-body humanoids (16 bones, 15 joints) killed in a
 *             compact stack and ragdolling onto the ground and onto each
 *             other, 60 Hz, 4 substeps, for 5 s: ms per tick and µs per
 *             ragdoll per tick over the whole fall and pile-up, N = 10, 100,
 *             300 (Box3D's ragdoll "rain" is ~300 humans of 14 bodies).
 *
 *   stream    bytes per binary snapshot (protocol version 2) at 30 Hz, each
 *             a delta against the previous one (a client acking at once) or
 *             against the one 3 back (100 ms of round trip): a humanoid
 *             ragdolling down from 2 m, the same walking, a 32 × 32 cloth
 *             swinging, and the demo world at rest; with raw floats beside.
 *
 *   memory    bytes a world reserves (through a counting allocator): empty,
 *             with the demo scene, and with a pile of 300 humanoids; and
 *             what a world full to the default limits would reserve.
 *
 *   cloth     the cost of the cloth extras (issue 10), each pair of worlds
 *             run in turn in one process (off, on, off, on, ...) and the
 *             median of each and of the runs' on/off ratios: the 64 × 64
 *             cloth above with the air off (air_density 0) and on (still
 *             air, 1.2 kg/m³, then a 10 m/s wind with gusts); and a 64 × 64
 *             cloth at 3 cm dropped over a bar and folded onto itself
 *             (sim_scene_cloth_over_bar(), 4 substeps, 8 iterations) with
 *             self-collision off and on: ms per tick over its first 3 s
 *             (thread CPU time).
 *
 *   json      µs per JSON snapshot (PROTOCOL.md §5.1) of the demo world and
 *             of the 64 × 64 cloth, per tick and with topology (a client's
 *             first): the cJSON encoder ragdolld used before (rdp_json_ref)
 *             against rdp_snapshot_json_into() with a reused buffer, in the
 *             same process on the same snapshot, in turn, and the median
 *             of their ratios.
 *
 * Every world is built with the rigid-body solver --solver names (xpbd, the
 * default, or soft_step; sim_world_def.solver), printed first.
 * --compare-solvers runs the piles and the rain (or one of them, with
 * --piles-only or --rain-only) under both solvers in turn, in one process
 * (xpbd, soft_step, xpbd, soft_step, ...: a machine whose speed drifts
 * slows both alike), and prints each solver's medians and the median of
 * the runs' soft_step/xpbd ratios.
 *
 * Usage: ragdoll-bench [--ticks N] [--runs N] [--solver xpbd|soft_step | --compare-solvers]
 *                      [--piles-only | --rain-only | --stream-only | --json-only |
 *                       --memory-only | --cloth-only] [--no-avx] [--assets DIR]
 *
 * --no-avx keeps the cloth lanes to SSE2's four (sim__cloth_lanes_avx off;
 * the same results bit for bit), for the figure of the x86-64 baseline.
 */
#include "assets.h"
#include "bench_solver.h"
#include "bench_time.h"
#include "json_ref.h"
#include "rdp.h"
#include "scenes.h"
#include "sim.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

// The simulator's switch for AVX cloth lanes (server/sim/world.h, internal).
extern bool sim__cloth_lanes_avx;

typedef int (*scene_fn)(sim_world* w);

static sim_library* g_lib;
/// The rigid-body solver of every world built here (--solver; switched
/// run by run with --compare-solvers).
static sim_solver g_solver = SIM_SOLVER_SOFT_STEP;

// The default world with the library and the solver every world here has.
static sim_world_def bench_def(void) {
    sim_world_def def = sim_world_def_default();
    def.library = g_lib;
    def.solver = g_solver;
    return def;
}

static int scene_cloth64(sim_world* w) {
    sim_entity_id id;
    return sim_scene_square_cloth(w, 64, 0.05f, 4.0f, &id);
}

// Runs `runs` fresh worlds for `ticks` ticks each (after a short warm-up)
// and returns the median seconds per tick.
static double time_scene(scene_fn scene, int iterations, int ticks, int runs, uint32_t* particles,
                         uint32_t* constraints) {
    double* per_tick = calloc((size_t)runs, sizeof *per_tick);
    for (int r = 0; r < runs; ++r) {
        sim_world_def def = bench_def();
        def.params.iterations = iterations;
        sim_world* w = NULL;
        if (sim_world_create(&def, &w) != SIM_OK || scene(w) != SIM_OK) {
            fprintf(stderr, "ragdoll-bench: cannot build the scene\n");
            exit(1);
        }
        for (int t = 0; t < 30; ++t) {
            sim_world_step(w);
        }
        double t0 = bench_now_s();
        for (int t = 0; t < ticks; ++t) {
            sim_world_step(w);
        }
        per_tick[r] = (bench_now_s() - t0) / ticks;
        *particles = sim_world_particle_count(w);
        *constraints = sim_world_constraint_count(w);
        if (!sim_world_is_finite(w)) {
            fprintf(stderr, "ragdoll-bench: the scene blew up\n");
            exit(1);
        }
        sim_world_destroy(w);
    }
    double m = bench_median(per_tick, runs);
    free(per_tick);
    return m;
}

// ---------------------------------------------------------------------------
// cloth64 against a plain scalar loop
// ---------------------------------------------------------------------------

// The plain loop's constraint: what anyone would write first.
typedef struct plain_dist {
    uint32_t a, b;
    float rest, compliance, lambda;
} plain_dist;

// A cloth as the plain loop holds it, copied from a world's entity.
typedef struct plain_cloth {
    uint32_t n, m;
    sim_vec3 *pos, *prev;
    float* inv_mass;
    plain_dist* c;
} plain_cloth;

// The entity's particles and sticks (all of a cloth's constraints are
// sticks, in the world's order) with rest lengths as the world computes
// them (the spawn positions' distances) and compliance 0, the scene's.
static void plain_from(const sim_world* w, sim_entity_id id, plain_cloth* pc) {
    sim_entity_view v;
    sim_entity_get_view(w, id, &v);
    pc->n = v.particle_count;
    pc->m = v.stick_count;
    pc->pos = malloc(pc->n * sizeof *pc->pos);
    pc->prev = malloc(pc->n * sizeof *pc->prev);
    pc->inv_mass = malloc(pc->n * sizeof *pc->inv_mass);
    pc->c = malloc(pc->m * sizeof *pc->c);
    uint32_t* pairs = malloc(2 * (size_t)pc->m * sizeof *pairs);
    memcpy(pc->pos, v.pos, pc->n * sizeof *pc->pos);
    memcpy(pc->prev, v.prev, pc->n * sizeof *pc->prev);
    memcpy(pc->inv_mass, v.inv_mass, pc->n * sizeof *pc->inv_mass);
    sim_entity_copy_sticks(w, id, pairs, pc->m);
    for (uint32_t k = 0; k < pc->m; ++k) {
        uint32_t a = pairs[2 * k], b = pairs[2 * k + 1];
        float dx = v.pos[b].x - v.pos[a].x, dy = v.pos[b].y - v.pos[a].y,
              dz = v.pos[b].z - v.pos[a].z;
        pc->c[k] = (plain_dist){a, b, sqrtf(dx * dx + dy * dy + dz * dz), 0.0f, 0.0f};
    }
    free(pairs);
}

static void plain_free(plain_cloth* pc) {
    free(pc->pos);
    free(pc->prev);
    free(pc->inv_mass);
    free(pc->c);
}

// One tick of the plain loop, the world's particle tick without collision
// (the cloth hangs clear of the ground): Verlet with damping, λ to zero,
// then `iterations` Gauss-Seidel sweeps of XPBD distance projections
// (Macklin et al. 2016, eq. 18) in array order, in the world's operation
// order, so that it computes the same positions.
static void plain_tick(plain_cloth* pc, int iterations, float dt, float damping, sim_vec3 g) {
    const float gx = g.x * (dt * dt), gy = g.y * (dt * dt), gz = g.z * (dt * dt);
    const float inv_h2 = 1.0f / (dt * dt);
    for (uint32_t i = 0; i < pc->n; ++i) {
        if (pc->inv_mass[i] == 0.0f) {
            continue;
        }
        sim_vec3 x = pc->pos[i], p = pc->prev[i];
        pc->prev[i] = x;
        pc->pos[i].x = x.x + (x.x - p.x) * damping + gx;
        pc->pos[i].y = x.y + (x.y - p.y) * damping + gy;
        pc->pos[i].z = x.z + (x.z - p.z) * damping + gz;
    }
    for (uint32_t k = 0; k < pc->m; ++k) {
        pc->c[k].lambda = 0.0f;
    }
    for (int it = 0; it < iterations; ++it) {
        for (uint32_t k = 0; k < pc->m; ++k) {
            plain_dist* c = &pc->c[k];
            sim_vec3* pa = &pc->pos[c->a];
            sim_vec3* pb = &pc->pos[c->b];
            float wa = pc->inv_mass[c->a], wb = pc->inv_mass[c->b];
            if (wa + wb == 0.0f) {
                continue;
            }
            float dx = pb->x - pa->x, dy = pb->y - pa->y, dz = pb->z - pa->z;
            float len = sqrtf(dx * dx + dy * dy + dz * dz);
            if (len < 1e-6f) {
                continue;
            }
            float alpha = c->compliance * inv_h2;
            float dl = (-(len - c->rest) - alpha * c->lambda) / (wa + wb + alpha);
            c->lambda += dl;
            float s = dl / len;
            pa->x -= dx * s * wa;
            pa->y -= dy * s * wa;
            pa->z -= dz * s * wa;
            pb->x += dx * s * wb;
            pb->y += dy * s * wb;
            pb->z += dz * s * wb;
        }
    }
}

// cloth64 in ragdolld (a world's whole tick) and in the plain loop, run in
// turn `runs` times each in this process; medians of ns per projection and
// of the runs' plain/ragdolld ratios. Also prints how far apart the two
// cloths end (the loop is the sequential order, the world's lanes another).
static void cloth_figures(int ticks, int runs) {
    const int iterations = 10;
    double* rd = calloc((size_t)runs, sizeof *rd);
    double* pl = calloc((size_t)runs, sizeof *pl);
    double* ratio = calloc((size_t)runs, sizeof *ratio);
    uint32_t np = 0, nc = 0;
    double apart = 0.0; // m, the largest over the runs
    for (int r = 0; r < runs; ++r) {
        sim_world_def def = bench_def();
        def.params.iterations = iterations;
        // The constraint solver alone: no air (wind.c; its cost is the
        // cloth extras' figure below), as in the plain loop.
        def.params.air_density = 0.0f;
        sim_world* w = NULL;
        sim_entity_id id;
        if (sim_world_create(&def, &w) != SIM_OK ||
            sim_scene_square_cloth(w, 64, 0.05f, 4.0f, &id) != SIM_OK) {
            fprintf(stderr, "ragdoll-bench: cannot build the cloth\n");
            exit(1);
        }
        np = sim_world_particle_count(w);
        nc = sim_world_constraint_count(w);
        plain_cloth pc;
        plain_from(w, id, &pc);
        const sim_params prm = sim_world_params(w);
        const float dt = sim_world_dt(w);
        for (int t = 0; t < 30; ++t) {
            sim_world_step(w);
            plain_tick(&pc, iterations, dt, prm.damping, prm.gravity);
        }
        double t0 = bench_thread_s();
        for (int t = 0; t < ticks; ++t) {
            sim_world_step(w);
        }
        double t1 = bench_thread_s();
        for (int t = 0; t < ticks; ++t) {
            plain_tick(&pc, iterations, dt, prm.damping, prm.gravity);
        }
        double t2 = bench_thread_s();
        const double projections = (double)nc * iterations * ticks;
        rd[r] = (t1 - t0) * 1e9 / projections;
        pl[r] = (t2 - t1) * 1e9 / projections;
        ratio[r] = pl[r] / rd[r];
        sim_entity_view v;
        sim_entity_get_view(w, id, &v);
        for (uint32_t i = 0; i < pc.n; ++i) {
            double dx = v.pos[i].x - pc.pos[i].x, dy = v.pos[i].y - pc.pos[i].y,
                   dz = v.pos[i].z - pc.pos[i].z;
            apart = fmax(apart, sqrt(dx * dx + dy * dy + dz * dz));
        }
        if (!sim_world_is_finite(w)) {
            fprintf(stderr, "ragdoll-bench: the cloth blew up\n");
            exit(1);
        }
        plain_free(&pc);
        sim_world_destroy(w);
    }
    double r_ns = bench_median(rd, runs), p_ns = bench_median(pl, runs),
           q = bench_median(ratio, runs);
    printf("cloth64: 64x64 cloth, %u particles, %u constraints (structural+shear+bend), "
           "%d iterations, 1 substep; median of %d runs x %d ticks, in turn with a plain loop; "
           "thread CPU time\n",
           np, nc, iterations, runs, ticks);
    printf("  ms per tick                  %8.3f\n", r_ns * nc * iterations * 1e-6);
    printf("  ns per constraint projection %8.2f   (the whole tick / projections)\n", r_ns);
    printf("  plain scalar Gauss-Seidel    %8.2f   ns per projection (plain_cloth(), same "
           "process)\n",
           p_ns);
    printf("  plain / ragdolld             %8.2fx  (median of the runs' ratios)\n", q);
    // The lanes take the constraints in another order (cloth_batch.c): the
    // same cloth, not the same bits.
    printf("  farthest particle from the plain loop's after %d ticks: %.2f mm\n", 30 + ticks,
           apart * 1e3);
    printf("  particle-iterations per s    %8.3g\n",
           (double)np * iterations / (r_ns * nc * iterations * 1e-9));
    free(rd);
    free(pl);
    free(ratio);
}

// N humanoids in a stack of layers 1.9 m apart, each layer a square grid
// 0.7 m apart with alternating facings, all killed at once with a small
// push so they tumble onto the ground and onto each other.
static sim_world* pile(uint32_t n) {
    sim_world_def def = bench_def();
    def.params.substeps = 4;
    def.max_entities = n + 8;
    def.max_bodies = 16 * n + 64;
    def.max_joints = 15 * n + 64;
    def.max_solver_work = 0;
    sim_world* w = NULL;
    if (sim_world_create(&def, &w) != SIM_OK) {
        return NULL;
    }
    if (sim_scene_pile(w, n, 12345u, NULL) != SIM_OK) {
        sim_world_destroy(w);
        return NULL;
    }
    return w;
}

// One run of a rigid scene: the mean seconds per tick over `ticks` ticks,
// and what the solver did.
typedef struct rigid_run {
    double s_per_tick;        ///< Mean over all ticks.
    double s_per_tick_asleep; ///< Mean over the ticks with nothing awake (0: none).
    double body_substeps;     ///< Mean per tick.
    uint32_t awake_end;       ///< Awake bodies after the last tick.
    uint32_t bodies;
    int asleep_at; ///< First tick with nothing awake, or -1.
} rigid_run;

static rigid_run run_rigid(sim_world* w, int ticks) {
    rigid_run r = {0};
    r.asleep_at = -1;
    double asleep_s = 0.0;
    int asleep_ticks = 0;
    uint64_t substeps = 0;
    double t0 = bench_now_s();
    for (int t = 0; t < ticks; ++t) {
        double a = bench_now_s();
        sim_world_step(w);
        double d = bench_now_s() - a;
        substeps += sim_world_tick_stats(w).body_substeps;
        if (sim_world_awake_body_count(w) == 0) {
            asleep_s += d;
            asleep_ticks++;
            if (r.asleep_at < 0) {
                r.asleep_at = t + 1;
            }
        }
    }
    r.s_per_tick = (bench_now_s() - t0) / ticks;
    r.s_per_tick_asleep = asleep_ticks > 0 ? asleep_s / asleep_ticks : 0.0;
    r.body_substeps = (double)substeps / ticks;
    r.awake_end = sim_world_awake_body_count(w);
    r.bodies = sim_world_body_count(w);
    return r;
}

static int cmp_run(const void* a, const void* b) {
    double x = ((const rigid_run*)a)->s_per_tick, y = ((const rigid_run*)b)->s_per_tick;
    return (x > y) - (x < y);
}

// One run of a fresh world from `make`.
static rigid_run one_run(sim_world* (*make)(uint32_t), uint32_t n, int ticks) {
    sim_world* w = make(n);
    if (w == NULL) {
        fprintf(stderr, "ragdoll-bench: cannot build the scene of %u\n", n);
        exit(1);
    }
    rigid_run r = run_rigid(w, ticks);
    if (sim_world_entity_count(w) != n) {
        fprintf(stderr, "ragdoll-bench: the scene of %u lost characters\n", n);
        exit(1);
    }
    sim_world_destroy(w);
    return r;
}

// The median run (by time per tick) of `runs` fresh worlds from `make`.
static rigid_run median_run(sim_world* (*make)(uint32_t), uint32_t n, int ticks, int runs) {
    rigid_run* rr = calloc((size_t)runs, sizeof *rr);
    for (int r = 0; r < runs; ++r) {
        rr[r] = one_run(make, n, ticks);
    }
    qsort(rr, (size_t)runs, sizeof *rr, cmp_run);
    rigid_run m = rr[runs / 2];
    free(rr);
    return m;
}

// Box3D's "rain" benchmark (box3d shared/benchmarks.c at 30c67b5, read
// to match it, never copied) as closely as ragdolld can express it:
//  - 10 × 10 tiles 15 m apart over a 150 m square; on each, in place of
//    Box3D's half-buried torus (ragdolld has no meshes), a static pillar
//    4 m high, 1 m × 2 m across, under the column's first human;
//  - every step with (step & 0x2F) == 0 a column of 10 groups × 3 humans
//    is spawned at rest 20 m up (x offsets 0, 0.75, 1.5 m), killed with no
//    push; after the 10th (step 272, 300 humans) each event removes the
//    oldest column and spawns it afresh, so the count stays at 300;
//  - every joint has a weak spring toward the rest pose (Box3D: 1 Hz,
//    damping ratio 0.7; here the PD drive toward the idle clip with kp 10
//    N·m/rad, kd 2 N·m·s/rad, about 1 Hz on a thigh);
//  - 60 Hz, 4 substeps, sleeping on; 400 steps, step 0 untimed.
// Ours: 16 capsules and 15 joints per human (Box3D's: 14 and 13).
typedef struct rain_state {
    sim_world* w;
    sim_entity_id ids[10][30];
    int next_column; ///< Spawn events so far.
} rain_state;

static void rain_spawn_column(rain_state* rs, int c) {
    for (int k = 0; k < 30; ++k) {
        if (rs->ids[c][k].index1 != 0) {
            sim_world_despawn(rs->w, rs->ids[c][k]);
        }
    }
    for (int r = 0; r < 10; ++r) {
        for (int k = 0; k < 3; ++k) {
            sim_character_def cd = sim_character_def_default();
            cd.position = (sim_vec3){-75.0f + 15.0f * ((float)c + 0.5f) + 0.75f * (float)k, 20.0f,
                                     -75.0f + 15.0f * ((float)r + 0.5f)};
            sim_entity_id id = {0, 0};
            if (sim_world_spawn_character(rs->w, &cd, &id) == SIM_OK) {
                sim_character_kill(rs->w, id, cd.position, (sim_vec3){0.0f, 0.0f, 0.0f}, NULL);
                sim_character_set_drive(rs->w, id, 10.0f, 2.0f, NULL, 0, 0.0f);
            }
            rs->ids[c][3 * r + k] = id;
        }
    }
}

static sim_world* rain_world(void) {
    sim_world_def def = bench_def();
    def.params.substeps = 4;
    def.params.gravity = (sim_vec3){0.0f, -10.0f, 0.0f};
    def.half_extent = 200.0f;
    def.max_entities = 320;
    def.max_bodies = 16 * 320;
    def.max_joints = 15 * 320;
    def.max_boxes = 128;
    def.max_solver_work = 0;
    sim_world* w = NULL;
    if (sim_world_create(&def, &w) != SIM_OK) {
        return NULL;
    }
    for (int c = 0; c < 10; ++c) {
        for (int r = 0; r < 10; ++r) {
            sim_box pillar = {
                {-75.0f + 15.0f * ((float)c + 0.5f), 2.0f, -75.0f + 15.0f * ((float)r + 0.5f)},
                {0.5f, 2.0f, 1.0f}};
            sim_world_add_box(w, pillar);
        }
    }
    return w;
}

// The rain is timed in thread CPU time (bench_thread_s()): the machine is shared,
// and CPU time is what both engines are compared by (Box3D's figure too).
typedef struct rain_figures {
    double ms_all;  ///< CPU ms per step over steps 1..399 (Box3D's TOTAL/399).
    double ms_full; ///< Over steps 272..399 (300 humans).
    double body_substeps_full;
    uint32_t awake_end, bodies_end;
} rain_figures;

static rain_figures run_rain(void) {
    rain_state rs;
    memset(&rs, 0, sizeof rs);
    rs.w = rain_world();
    if (rs.w == NULL) {
        fprintf(stderr, "ragdoll-bench: cannot build the rain world\n");
        exit(1);
    }
    rain_figures f = {0};
    double all = 0.0, full = 0.0;
    uint64_t substeps = 0;
    for (int step = 0; step < 400; ++step) {
        double t0 = bench_thread_s();
        if ((step & 0x2F) == 0) {
            rain_spawn_column(&rs, rs.next_column % 10);
            rs.next_column++;
        }
        sim_world_step(rs.w);
        double d = bench_thread_s() - t0;
        if (step >= 1) {
            all += d;
        }
        if (step >= 272) {
            full += d;
            substeps += sim_world_tick_stats(rs.w).body_substeps;
        }
    }
    f.ms_all = all * 1e3 / 399.0;
    f.ms_full = full * 1e3 / 128.0;
    f.body_substeps_full = (double)substeps / 128.0;
    f.awake_end = sim_world_awake_body_count(rs.w);
    f.bodies_end = sim_world_body_count(rs.w);
    sim_world_destroy(rs.w);
    return f;
}

static void print_run(const char* name, uint32_t n, const rigid_run* r, int ticks, int runs) {
    printf("%s %u: %u humanoids (%u bones), 60 Hz, 4 substeps, solver %s, %d ticks; median of %d "
           "runs\n",
           name, n, n, r->bodies, bench_solver_name(g_solver), ticks, runs);
    printf("  ms per tick                  %8.3f\n", r->s_per_tick * 1e3);
    printf("  us per ragdoll per tick      %8.2f\n", r->s_per_tick * 1e6 / n);
    printf("  ns per body-substep          %8.1f   (%.1f rigid substeps per awake body-tick)\n",
           r->s_per_tick * 1e9 / r->body_substeps,
           r->body_substeps / (double)(r->bodies > 0 ? r->bodies : 1));
    printf("  awake / asleep at the end    %u / %u bodies", r->awake_end, r->bodies - r->awake_end);
    if (r->asleep_at > 0) {
        printf("; all asleep at %.1f s, then %.3f ms per tick (%.1f%% of the mean)",
               r->asleep_at / 60.0, r->s_per_tick_asleep * 1e3,
               100.0 * r->s_per_tick_asleep / r->s_per_tick);
    }
    printf("\n");
}

// ---------------------------------------------------------------------------
// The piles and the rain, and both under each solver (--compare-solvers)
// ---------------------------------------------------------------------------

static const uint32_t pile_sizes[] = {10, 100, 300};

// Runs of a pile of n: `runs`, or at most 3 for 300 (33 s a run).
static int pile_runs(uint32_t n, int runs) {
    return n >= 300 ? (runs < 3 ? runs : 3) : runs;
}

// Runs of the rain: at most 5 (20 s a run).
static int rain_runs(int runs) {
    return runs < 5 ? runs : 5;
}

static void piles(int ticks, int runs) {
    for (size_t k = 0; k < sizeof pile_sizes / sizeof pile_sizes[0]; ++k) {
        uint32_t n = pile_sizes[k];
        int pr = pile_runs(n, runs);
        rigid_run r = median_run(pile, n, ticks, pr);
        print_run("pile", n, &r, ticks, pr);
    }
}

static void rain(int runs) {
    int rr = rain_runs(runs);
    double all[16], full[16];
    rain_figures f = {0};
    for (int r = 0; r < rr; ++r) {
        f = run_rain();
        all[r] = f.ms_all;
        full[r] = f.ms_full;
    }
    qsort(all, (size_t)rr, sizeof all[0], bench_cmp_double);
    qsort(full, (size_t)rr, sizeof full[0], bench_cmp_double);
    printf("rain: Box3D's rain scene as ragdolld expresses it (see bench.c), 400 steps, solver %s; "
           "thread CPU time, %d runs\n",
           bench_solver_name(g_solver), rr);
    printf("  ms per step, steps 1..399     min %7.3f  median %7.3f\n", all[0], all[rr / 2]);
    printf("  ms per step, 300 humans       min %7.3f  median %7.3f   (steps 272..399)\n", full[0],
           full[rr / 2]);
    printf("  us per ragdoll-step, 300      min %7.2f\n", full[0] * 1e3 / 300.0);
    printf("  ns per body-substep, 300      %7.1f   (%.0f body-substeps per step)\n",
           full[0] * 1e6 / f.body_substeps_full, f.body_substeps_full);
    printf("  awake at step 399             %u of %u bodies\n", f.awake_end, f.bodies_end);
}

// One figure of n runs under each solver: the median of each, and the
// median of the runs' ratios soft_step / xpbd (run i of one against run i
// of the other, which ran next to it). A run without the figure (NAN: it
// never happened) is left out of its median, and its pair out of the
// ratios; "-" when none had it.
static void compare_row(const char* what, const double* x, const double* s, int n, int decimals) {
    double* v = calloc(3 * (size_t)n, sizeof *v);
    double *vx = v, *vs = v + n, *ratio = v + 2 * n;
    int nx = 0, ns = 0, nr = 0;
    for (int i = 0; i < n; ++i) {
        if (!isnan(x[i])) {
            vx[nx++] = x[i];
        }
        if (!isnan(s[i])) {
            vs[ns++] = s[i];
        }
        if (!isnan(x[i]) && !isnan(s[i]) && x[i] > 0) {
            ratio[nr++] = s[i] / x[i];
        }
    }
    char bx[32] = "-", bs[32] = "-", br[32] = "-";
    if (nx > 0) {
        snprintf(bx, sizeof bx, "%.*f", decimals, bench_median(vx, nx));
    }
    if (ns > 0) {
        snprintf(bs, sizeof bs, "%.*f", decimals, bench_median(vs, ns));
    }
    if (nr > 0) {
        snprintf(br, sizeof br, "%.3fx", bench_median(ratio, nr));
    }
    printf("  %-34s %11s %11s %10s", what, bx, bs, br);
    if (nx < n || ns < n) {
        printf("   (in %d and %d of %d runs)", nx, ns, n);
    }
    printf("\n");
    free(v);
}

static void compare_header(void) {
    printf("  %-34s %11s %11s %10s\n", "median", bench_solver_name(SIM_SOLVER_XPBD),
           bench_solver_name(SIM_SOLVER_SOFT_STEP), "soft/xpbd");
}

// A figure of each run of a rigid scene.
typedef double (*run_figure)(const rigid_run* r, uint32_t n);
static double ms_per_tick(const rigid_run* r, uint32_t n) {
    (void)n;
    return r->s_per_tick * 1e3;
}
static double us_per_ragdoll(const rigid_run* r, uint32_t n) {
    return r->s_per_tick * 1e6 / n;
}
static double ns_per_body_substep(const rigid_run* r, uint32_t n) {
    (void)n;
    return r->body_substeps > 0 ? r->s_per_tick * 1e9 / r->body_substeps : NAN;
}
static double substeps_per_body(const rigid_run* r, uint32_t n) {
    (void)n;
    return r->body_substeps / (double)(r->bodies > 0 ? r->bodies : 1);
}
static double awake_at_end(const rigid_run* r, uint32_t n) {
    (void)n;
    return r->awake_end;
}
static double asleep_at_end(const rigid_run* r, uint32_t n) {
    (void)n;
    return r->bodies - r->awake_end;
}
static double all_asleep_s(const rigid_run* r, uint32_t n) {
    (void)n;
    return r->asleep_at > 0 ? r->asleep_at / 60.0 : NAN;
}
static double ms_per_tick_asleep(const rigid_run* r, uint32_t n) {
    (void)n;
    return r->asleep_at > 0 ? r->s_per_tick_asleep * 1e3 : NAN;
}

static void compare_rigid_row(const char* what, run_figure fig, const rigid_run* x,
                              const rigid_run* s, int runs, uint32_t n, int decimals) {
    double* v = calloc(2 * (size_t)runs, sizeof *v);
    for (int i = 0; i < runs; ++i) {
        v[i] = fig(&x[i], n);
        v[runs + i] = fig(&s[i], n);
    }
    compare_row(what, v, v + runs, runs, decimals);
    free(v);
}

static void compare_piles(int ticks, int runs) {
    for (size_t k = 0; k < sizeof pile_sizes / sizeof pile_sizes[0]; ++k) {
        uint32_t n = pile_sizes[k];
        int pr = pile_runs(n, runs);
        rigid_run* x = calloc(2 * (size_t)pr, sizeof *x);
        rigid_run* s = x + pr;
        for (int r = 0; r < pr; ++r) {
            g_solver = SIM_SOLVER_XPBD;
            x[r] = one_run(pile, n, ticks);
            g_solver = SIM_SOLVER_SOFT_STEP;
            s[r] = one_run(pile, n, ticks);
        }
        printf("pile %u: %u humanoids (%u bones), 60 Hz, 4 substeps, %d ticks; xpbd and soft_step "
               "alternated, %d runs each\n",
               n, n, x[0].bodies, ticks, pr);
        compare_header();
        compare_rigid_row("ms per tick", ms_per_tick, x, s, pr, n, 3);
        compare_rigid_row("us per ragdoll per tick", us_per_ragdoll, x, s, pr, n, 2);
        compare_rigid_row("ns per body-substep", ns_per_body_substep, x, s, pr, n, 1);
        compare_rigid_row("rigid substeps per body-tick", substeps_per_body, x, s, pr, n, 2);
        compare_rigid_row("awake bodies at the end", awake_at_end, x, s, pr, n, 0);
        compare_rigid_row("asleep bodies at the end", asleep_at_end, x, s, pr, n, 0);
        compare_rigid_row("all asleep at, s", all_asleep_s, x, s, pr, n, 2);
        compare_rigid_row("ms per tick once all asleep", ms_per_tick_asleep, x, s, pr, n, 3);
        free(x);
    }
}

static void compare_rain(int runs) {
    int rr = rain_runs(runs);
    double* v = calloc(12 * (size_t)rr, sizeof *v);
    double *all = v, *full = v + 2 * rr, *per_ragdoll = v + 4 * rr, *per_substep = v + 6 * rr;
    double *awake = v + 8 * rr, *asleep = v + 10 * rr; // each: xpbd's rr, then soft_step's
    uint32_t bodies = 0;
    for (int r = 0; r < rr; ++r) {
        for (int k = 0; k < 2; ++k) {
            g_solver = k == 0 ? SIM_SOLVER_XPBD : SIM_SOLVER_SOFT_STEP;
            rain_figures f = run_rain();
            int i = k * rr + r;
            all[i] = f.ms_all;
            full[i] = f.ms_full;
            per_ragdoll[i] = f.ms_full * 1e3 / 300.0;
            per_substep[i] =
                f.body_substeps_full > 0 ? f.ms_full * 1e6 / f.body_substeps_full : NAN;
            awake[i] = f.awake_end;
            asleep[i] = (double)(f.bodies_end - f.awake_end);
            bodies = f.bodies_end;
        }
    }
    printf("rain: Box3D's rain scene as ragdolld expresses it (see bench.c), 400 steps, %u bodies "
           "at the end; thread CPU time; xpbd and soft_step alternated, %d runs each\n",
           bodies, rr);
    compare_header();
    compare_row("ms per step, steps 1..399", all, all + rr, rr, 3);
    compare_row("ms per step, 300 humans", full, full + rr, rr, 3);
    compare_row("us per ragdoll-step, 300", per_ragdoll, per_ragdoll + rr, rr, 2);
    compare_row("ns per body-substep, 300", per_substep, per_substep + rr, rr, 1);
    compare_row("awake bodies at step 399", awake, awake + rr, rr, 0);
    compare_row("asleep bodies at step 399", asleep, asleep + rr, rr, 0);
    free(v);
}

// ---------------------------------------------------------------------------
// Memory: bytes a world reserves
// ---------------------------------------------------------------------------

// Counts what a world asked its allocator for and has not freed.
static void* counting_alloc(void* ctx, size_t size, size_t align) {
    void* p = aligned_alloc(align, (size + align - 1) / align * align);
    if (p != NULL) {
        *(size_t*)ctx += size;
    }
    return p;
}

static void counting_free(void* ctx, void* p, size_t size) {
    *(size_t*)ctx -= size;
    free(p);
}

static void memory_figures(void) {
    size_t live = 0;
    sim_world_def def = bench_def();
    def.allocator.alloc = counting_alloc;
    def.allocator.free = counting_free;
    def.allocator.ctx = &live;
    sim_world* w = NULL;
    if (sim_world_create(&def, &w) != SIM_OK) {
        fprintf(stderr, "ragdoll-bench: cannot create a world\n");
        exit(1);
    }
    printf("memory: bytes a world reserves (default limits)\n");
    printf("  empty world                  %10zu\n", live);
    if (sim_scene_demo(w) != SIM_OK) {
        fprintf(stderr, "ragdoll-bench: cannot build the demo\n");
        exit(1);
    }
    printf("  demo world                   %10zu\n", live);
    sim_world_destroy(w);
    printf("  full to the default limits   %10zu   (sim_world_def_max_bytes)\n",
           sim_world_def_max_bytes(&def));
    sim_world* p = pile(300);
    if (p == NULL) {
        fprintf(stderr, "ragdoll-bench: cannot build a pile of 300\n");
        exit(1);
    }
    printf("  300 humanoids (4800 bodies)  %10zu   (sim_world_reserved_bytes)\n",
           sim_world_reserved_bytes(p));
    sim_world_destroy(p);
}

// ---------------------------------------------------------------------------
// Streaming: bytes per binary snapshot
// ---------------------------------------------------------------------------

// The snapshot a server would stream of w (what server/app does):
// particles, and characters' and balls' poses with skeletons; with
// `topology`, also what a client's first JSON snapshot carries.
typedef struct stream_scratch {
    rdp_entity_state ents[64];
    float pose[64][7 * 32];
    int parents[64][32];
    float anchors[64][6 * 32];
    const char* bone_names[64][32];
    float body_radius[64][32];
    float body_half_length[64][32];
    uint32_t* sticks; ///< Every entity's sticks, sticks_cap values; grown as needed.
    size_t sticks_cap;
} stream_scratch;

static void snapshot_of(sim_world* w, stream_scratch* st, bool topology, rdp_snapshot* s) {
    uint32_t n = sim_world_entity_count(w);
    n = n > 64 ? 64 : n;
    memset(s, 0, sizeof *s);
    // Room for every stick first: entities point into one array.
    size_t sticks_needed = 0, sticks_used = 0;
    uint32_t stick_total = 0;
    for (uint32_t i = 0; i < n && topology; ++i) {
        sim_entity_view v;
        sim_entity_get_view(w, sim_world_entity_at(w, i), &v);
        sticks_needed += 2 * (size_t)v.stick_count;
    }
    if (sticks_needed > st->sticks_cap) {
        free(st->sticks);
        st->sticks = malloc(sticks_needed * sizeof *st->sticks);
        if (st->sticks == NULL) {
            fprintf(stderr, "ragdoll-bench: out of memory\n");
            exit(1);
        }
        st->sticks_cap = sticks_needed;
    }
    for (uint32_t i = 0; i < n; ++i) {
        sim_entity_id id = sim_world_entity_at(w, i);
        sim_entity_view v;
        sim_entity_get_view(w, id, &v);
        rdp_entity_state* e = &st->ents[i];
        memset(e, 0, sizeof *e);
        e->entity = sim_entity_id_store(id);
        if (v.kind == SIM_ENTITY_CHARACTER) {
            sim_character_view cv;
            sim_character_get_view(w, id, &cv);
            sim_bone_pose p[SIM_MAX_BONES];
            int nb = sim_character_get_pose(w, id, p, NULL, NULL, SIM_MAX_BONES);
            for (int b = 0; b < nb; ++b) {
                const float f[7] = {p[b].p.x, p[b].p.y, p[b].p.z, p[b].q.x,
                                    p[b].q.y, p[b].q.z, p[b].q.w};
                memcpy(st->pose[i] + 7 * b, f, sizeof f);
                const sim_bone_def* bd = &cv.skeleton->bones[b];
                st->parents[i][b] = bd->parent;
                st->bone_names[i][b] = bd->name;
                st->body_radius[i][b] = bd->radius;
                float dx = bd->tail.x - bd->head.x, dy = bd->tail.y - bd->head.y,
                      dz = bd->tail.z - bd->head.z;
                st->body_half_length[i][b] = 0.5f * sqrtf(dx * dx + dy * dy + dz * dz);
                sim_joint_view j;
                if (b > 0 && sim_character_joint_view(w, id, (uint32_t)b, &j) == SIM_OK) {
                    const float a[6] = {j.anchor_parent.x, j.anchor_parent.y, j.anchor_parent.z,
                                        j.anchor_child.x,  j.anchor_child.y,  j.anchor_child.z};
                    memcpy(st->anchors[i] + 6 * b, a, sizeof a);
                }
            }
            e->kind = RDP_KIND_CHARACTER;
            e->body_count = (uint32_t)nb;
            e->pose = st->pose[i];
            e->parents = st->parents[i];
            e->anchors = st->anchors[i];
            e->state = sim_char_state_name(cv.state);
            e->bone_names = st->bone_names[i];
            e->skeleton = cv.skeleton->name;
        } else if (v.kind == SIM_ENTITY_BALL) {
            sim_bone_pose p;
            sim_ball_get(w, id, &p, NULL, &st->body_radius[i][0]);
            const float f[7] = {p.p.x, p.p.y, p.p.z, p.q.x, p.q.y, p.q.z, p.q.w};
            memcpy(st->pose[i], f, sizeof f);
            st->body_half_length[i][0] = 0.0f;
            e->kind = RDP_KIND_BALL;
            e->body_count = 1;
            e->pose = st->pose[i];
        } else {
            e->kind = v.kind == SIM_ENTITY_CLOTH     ? RDP_KIND_CLOTH
                      : v.kind == SIM_ENTITY_RAGDOLL ? RDP_KIND_RAGDOLL
                                                     : RDP_KIND_ROPE;
            e->particle_count = v.particle_count;
            e->xyz = (const float*)v.pos;
            e->names = v.names;
            e->radius = v.radius;
            e->inv_mass = v.inv_mass;
            e->cols = v.cols;
            e->rows = v.rows;
            stick_total += v.stick_count;
            if (topology) {
                int k = sim_entity_copy_sticks(w, id, st->sticks + sticks_used, v.stick_count);
                e->stick_count = k > 0 ? (uint32_t)k : 0;
                e->sticks = st->sticks + sticks_used;
                sticks_used += 2 * e->stick_count;
            }
        }
        if (rdp_kind_is_rigid(e->kind)) {
            e->body_radius = st->body_radius[i];
            e->body_half_length = st->body_half_length[i];
        }
    }
    s->world = 1;
    s->tick = sim_world_tick(w);
    s->entity_count = n;
    s->entities = st->ents;
    s->metrics.particles = sim_world_particle_count(w);
    s->metrics.sticks = stick_total;
    s->metrics.constraint_error = sim_world_constraint_error(w);
    sim_params p = sim_world_params(w);
    s->metrics.solver_passes = (uint32_t)(p.iterations * p.substeps);
}

typedef void (*stream_poke)(sim_world* w, int tick, void* arg);

// Steps w for `seconds`, quantizing a snapshot every second tick (30 Hz at
// 60 Hz), and returns the mean bytes of a delta against the snapshot `lag`
// back (and the mean full size and raw-float size in *full, *raw).
static double stream_bytes(sim_world* w, double seconds, int lag, stream_poke poke, void* arg,
                           double* full, double* raw) {
    enum { HIST = 8 };
    rdp_qsnap* hist[HIST];
    for (int i = 0; i < HIST; ++i) {
        hist[i] = rdp_qsnap_new();
    }
    static stream_scratch st;
    uint8_t* buf = malloc(1 << 22);
    double sum = 0.0, sum_full = 0.0, sum_raw = 0.0;
    int count = 0, snaps = 0;
    int ticks = (int)(seconds * 60.0);
    for (int t = 0; t < ticks; ++t) {
        if (poke != NULL) {
            poke(w, t, arg);
        }
        sim_world_step(w);
        if (t % 2 != 0) {
            continue;
        }
        rdp_snapshot s;
        snapshot_of(w, &st, false, &s);
        rdp_qsnap* q = hist[snaps % HIST];
        rdp_quantize(&s, q);
        size_t nraw = 40;
        for (uint32_t k = 0; k < s.entity_count; ++k) {
            const rdp_entity_state* e = &s.entities[k];
            nraw += 16 + (e->body_count > 0 ? 28u * e->body_count : 12u * e->particle_count);
        }
        if (snaps >= lag) {
            const rdp_qsnap* base = hist[(snaps - lag) % HIST];
            sum += (double)rdp_encode(q, base, buf, 1 << 22);
            sum_full += (double)rdp_encode(q, NULL, buf, 1 << 22);
            sum_raw += (double)nraw;
            count++;
        }
        snaps++;
    }
    for (int i = 0; i < HIST; ++i) {
        rdp_qsnap_free(hist[i]);
    }
    free(buf);
    *full = sum_full / count;
    *raw = sum_raw / count;
    return sum / count;
}

static sim_world* stream_world(void) {
    sim_world_def def = bench_def();
    def.params.substeps = 4;
    sim_world* w = NULL;
    sim_world_create(&def, &w);
    return w;
}

static void poke_cloth(sim_world* w, int tick, void* arg) {
    // Every half second, a sideways push along the bottom row.
    if (tick % 30 == 0) {
        sim_entity_id id = *(sim_entity_id*)arg;
        for (uint32_t i = 0; i < 32; ++i) {
            sim_vec3 j = {0.0f, 0.0f, (tick / 30) % 2 ? 0.4f : -0.4f};
            sim_entity_apply_impulse(w, id, 31 * 32 + i, j);
        }
    }
}

static void stream_figures(void) {
    printf("stream: binary snapshots v2 at 30 Hz (60 Hz world), mean bytes per snapshot\n");
    printf("  %-44s %9s %9s %9s %9s\n", "scene", "delta-1", "delta-3", "full", "raw f32");
    for (int scene = 0; scene < 4; ++scene) {
        double d[2], full = 0.0, raw = 0.0;
        const char* name = "";
        for (int l = 0; l < 2; ++l) {
            int lag = l == 0 ? 1 : 3;
            sim_world* w = stream_world();
            sim_entity_id id;
            stream_poke poke = NULL;
            if (scene == 0) {
                name = "humanoid (16 bones) ragdolling from 2 m, 3 s";
                sim_character_def cd = sim_character_def_default();
                cd.position = (sim_vec3){0.0f, 2.0f, 0.0f};
                sim_world_spawn_character(w, &cd, &id);
                sim_character_kill(w, id, (sim_vec3){0.0f, 3.5f, 0.0f}, (sim_vec3){0, 0, 40}, NULL);
            } else if (scene == 1) {
                name = "humanoid (16 bones) walking, 3 s";
                sim_character_def cd = sim_character_def_default();
                cd.clip = "walk";
                sim_world_spawn_character(w, &cd, &id);
            } else if (scene == 2) {
                name = "32x32 cloth swinging, 3 s";
                sim_scene_square_cloth(w, 32, 0.05f, 3.0f, &id);
                poke = poke_cloth;
            } else {
                // Its characters killed: a world at rest has nothing animated.
                name = "demo world at rest (ragdolls down, 30 s on), 3 s";
                sim_scene_demo(w);
                for (uint32_t k = 0; k < sim_world_entity_count(w); ++k) {
                    sim_entity_id c = sim_world_entity_at(w, k);
                    sim_character_kill(w, c, (sim_vec3){0.0f, 1.0f, 2.0f}, (sim_vec3){0, 0, 0},
                                       NULL);
                }
                for (int t = 0; t < 1800; ++t) {
                    sim_world_step(w);
                }
            }
            d[l] = stream_bytes(w, 3.0, lag, poke, &id, &full, &raw);
            sim_world_destroy(w);
        }
        printf("  %-44s %9.1f %9.1f %9.1f %9.1f\n", name, d[0], d[1], full, raw);
    }
}

// ---------------------------------------------------------------------------
// JSON snapshots: µs per encoding, the cJSON encoder against the direct one
// ---------------------------------------------------------------------------

// Seconds per encoding of s, over at least 50 ms: the cJSON reference
// (printed and freed, as ragdolld did) or rdp_snapshot_json_into() with
// one buffer kept across encodings (as ragdolld does now). *bytes gets the
// text's length.
static double time_json(const rdp_snapshot* s, bool topology, bool cjson, rdp_buf* buf,
                        size_t* bytes) {
    long reps = 0;
    double t0 = bench_now_s(), t = 0.0;
    do {
        if (cjson) {
            char* text = rdp_ref_snapshot_json(s, topology, bytes);
            if (text == NULL) {
                fprintf(stderr, "ragdoll-bench: out of memory\n");
                exit(1);
            }
            rdp_free(text);
        } else if (rdp_snapshot_json_into(s, topology, buf) != 0) {
            fprintf(stderr, "ragdoll-bench: out of memory\n");
            exit(1);
        } else {
            *bytes = buf->len;
        }
        reps++;
        t = bench_now_s() - t0;
    } while (t < 0.05);
    return t / (double)reps;
}

static void json_figures(int runs) {
    printf("json: JSON snapshot encoding (PROTOCOL.md 5.1), us per snapshot, median of %d runs\n",
           runs);
    printf("  %-36s %9s %10s %10s %9s\n", "snapshot", "bytes", "cJSON us", "direct us", "speed-up");
    static stream_scratch st;
    for (int scene = 0; scene < 2; ++scene) {
        sim_world_def def = bench_def();
        sim_world* w = NULL;
        int rc = sim_world_create(&def, &w);
        // 2 s in: the characters walk and the cloths swing, so the values
        // have their usual digits.
        rc = rc == SIM_OK ? (scene == 0 ? sim_scene_demo(w) : scene_cloth64(w)) : rc;
        if (rc != SIM_OK) {
            fprintf(stderr, "ragdoll-bench: cannot build the scene\n");
            exit(1);
        }
        for (int t = 0; t < 120; ++t) {
            sim_world_step(w);
        }
        for (int topology = 0; topology < 2; ++topology) {
            rdp_snapshot s;
            snapshot_of(w, &st, topology, &s);
            // The two must print the same text (the unit tests check this
            // on random snapshots; here on the measured ones).
            char* ref = rdp_ref_snapshot_json(&s, topology, NULL);
            char* got = rdp_snapshot_json(&s, topology, NULL);
            if (ref == NULL || got == NULL || strcmp(ref, got) != 0) {
                fprintf(stderr, "ragdoll-bench: the JSON encoders disagree\n");
                exit(1);
            }
            rdp_free(ref);
            rdp_free(got);
            // The two in turn, run after run, so that a machine whose
            // speed drifts slows both alike; the ratio is the median of
            // the runs' ratios.
            size_t bytes = 0;
            double* old_t = calloc(3 * (size_t)runs, sizeof *old_t);
            double* new_t = old_t + runs;
            double* ratio = new_t + runs;
            rdp_buf buf = {NULL, 0, 0};
            for (int r = 0; r < runs; ++r) {
                old_t[r] = time_json(&s, topology, true, &buf, &bytes);
                new_t[r] = time_json(&s, topology, false, &buf, &bytes);
                ratio[r] = old_t[r] / new_t[r];
            }
            rdp_buf_free(&buf);
            double old_s = bench_median(old_t, runs);
            double new_s = bench_median(new_t, runs);
            double speedup = bench_median(ratio, runs);
            free(old_t);
            char name[64];
            snprintf(name, sizeof name, "%s, %s", scene == 0 ? "demo world" : "64x64 cloth",
                     topology ? "first (topology)" : "per tick");
            printf("  %-36s %9zu %10.1f %10.1f %8.1fx\n", name, bytes, old_s * 1e6, new_s * 1e6,
                   speedup);
        }
        sim_world_destroy(w);
    }
    free(st.sticks);
    st.sticks = NULL;
    st.sticks_cap = 0;
}

// One world of the cloth figures: which scene, and with what.
typedef enum cloth_case {
    CLOTH_AIR_OFF,
    CLOTH_STILL_AIR,
    CLOTH_WIND,
    CLOTH_FOLD_PLAIN,
    CLOTH_FOLD_SELF,
} cloth_case;

// Thread CPU seconds per tick of one fresh world of case k over `ticks`
// ticks (the hanging cloth after a 30-tick warm-up; the fold from its drop):
// CPU time, as for the rain, so that other work on a shared machine does
// not count.
static double cloth_run(cloth_case k, int ticks) {
    sim_world_def def = bench_def();
    sim_entity_id id;
    sim_world* w = NULL;
    bool fold = k == CLOTH_FOLD_PLAIN || k == CLOTH_FOLD_SELF;
    if (fold) {
        def.params.substeps = 4;
        def.params.damping = 0.985f;
    } else {
        def.params.iterations = 10;
        def.params.air_density = k == CLOTH_AIR_OFF ? 0.0f : 1.2f;
        if (k == CLOTH_WIND) {
            def.params.wind = (sim_vec3){0.0f, 0.0f, 10.0f};
            def.params.gust = 0.5f;
        }
    }
    int rc = sim_world_create(&def, &w);
    if (rc == SIM_OK) {
        rc = fold ? sim_scene_cloth_over_bar(w, 64, 0.03f, k == CLOTH_FOLD_SELF, &id)
                  : scene_cloth64(w);
    }
    if (rc != SIM_OK) {
        fprintf(stderr, "ragdoll-bench: cannot build the cloth scene\n");
        exit(1);
    }
    for (int t = 0; !fold && t < 30; ++t) {
        sim_world_step(w);
    }
    double t0 = bench_thread_s();
    for (int t = 0; t < ticks; ++t) {
        if (fold && t == 20 && sim_scene_cloth_over_bar_fold(w, id) != SIM_OK) {
            exit(1);
        }
        sim_world_step(w);
    }
    double s = (bench_thread_s() - t0) / ticks;
    if (!sim_world_is_finite(w)) {
        fprintf(stderr, "ragdoll-bench: the cloth scene blew up\n");
        exit(1);
    }
    sim_world_destroy(w);
    return s;
}

// Runs cases a and b in turn `runs` times; prints their median ms per tick
// and the median of the runs' b/a ratios.
static void cloth_pair(const char* what, cloth_case a, cloth_case b, int ticks, int runs) {
    double* x = calloc((size_t)runs, sizeof *x);
    double* y = calloc((size_t)runs, sizeof *y);
    double* q = calloc((size_t)runs, sizeof *q);
    for (int r = 0; r < runs; ++r) {
        x[r] = cloth_run(a, ticks);
        y[r] = cloth_run(b, ticks);
        q[r] = y[r] / x[r];
    }
    double mq = bench_median(q, runs);
    printf("  %-44s %8.3f %8.3f   %.2fx\n", what, bench_median(x, runs) * 1e3,
           bench_median(y, runs) * 1e3, mq);
    free(x);
    free(y);
    free(q);
}

static void cloth_extras_figures(int ticks, int runs) {
    printf("cloth extras: ms per tick, median of %d runs, off and on alternated; on/off is the "
           "median of the runs' ratios\n",
           runs);
    printf("  %-44s %8s %8s   %s\n", "", "off", "on", "on/off");
    cloth_pair("64x64 hanging, 10 it.: air (still)", CLOTH_AIR_OFF, CLOTH_STILL_AIR, ticks, runs);
    cloth_pair("64x64 hanging, 10 it.: air (10 m/s, gusts)", CLOTH_AIR_OFF, CLOTH_WIND, ticks,
               runs);
    cloth_pair("64x64 folded over a bar, 3 s: self-collision", CLOTH_FOLD_PLAIN, CLOTH_FOLD_SELF,
               180, runs);
}

// 20 humanoids walking, 3 m apart (issue 10's benchmark); dressed: each in
// a cape and hair (attach_cloth, the humanoid asset's garments).
static int walkers(sim_world* w, bool dressed) {
    for (int k = 0; k < 20; ++k) {
        sim_character_def cd = sim_character_def_default();
        cd.position = (sim_vec3){3.0f * (float)(k % 5) - 6.0f, 0.0f, 3.0f * (float)(k / 5) - 4.5f};
        cd.clip = "walk";
        sim_entity_id id, g;
        int rc = sim_world_spawn_character(w, &cd, &id);
        for (int kind = SIM_GARMENT_CAPE; rc == SIM_OK && dressed && kind <= SIM_GARMENT_HAIR;
             kind += 2) { // the cape and the hair
            sim_cloth_attach_def ad = sim_cloth_attach_def_default();
            ad.wearer = id;
            ad.kind = (sim_garment_kind)kind;
            rc = sim_world_attach_cloth(w, &ad, &g);
        }
        if (rc != SIM_OK) {
            return rc;
        }
    }
    return SIM_OK;
}
static int scene_walkers(sim_world* w) {
    return walkers(w, false);
}
static int scene_dressed_walkers(sim_world* w) {
    return walkers(w, true);
}

// ms per tick of the 20 walkers, undressed and dressed, in turn `runs`
// times each (time_scene's medians).
static void garment_figures(int ticks, int runs) {
    uint32_t np = 0, nc = 0, np2 = 0, nc2 = 0;
    double bare = 0.0, dressed = 0.0;
    for (int r = 0; r < runs; ++r) { // alternated, one run each
        double b = time_scene(scene_walkers, 8, ticks, 1, &np, &nc);
        double d = time_scene(scene_dressed_walkers, 8, ticks, 1, &np2, &nc2);
        bare += b / runs;
        dressed += d / runs;
    }
    printf("garments: 20 humanoids walking, 8 iterations, 1 substep; each in a cape and hair "
           "(%u particles, %u constraints)\n",
           np2, nc2);
    printf("  ms per tick, undressed / dressed   %7.3f %7.3f   (%.3f ms per character's "
           "garments)\n",
           bare * 1e3, dressed * 1e3, (dressed - bare) * 1e3 / 20.0);
}

static void usage(FILE* f) {
    fprintf(f, "usage: ragdoll-bench [--ticks N] [--runs N]\n"
               "                     [--solver xpbd|soft_step | --compare-solvers]\n"
               "                     [--piles-only | --rain-only | --stream-only | --json-only |\n"
               "                      --memory-only | --cloth-only] [--no-avx] [--assets DIR]\n"
               "  --solver S          rigid-body solver of every world (default soft_step)\n"
               "  --compare-solvers   the piles and the rain (or the one asked for) under\n"
               "                      xpbd and soft_step in turn, --runs times each, with\n"
               "                      each one's medians and the median soft_step/xpbd ratio\n"
               "  --no-avx            cloth lanes in SSE2 only, where the CPU has AVX\n");
}

int main(int argc, char** argv) {
    int ticks = 300, runs = 7;
    bool piles_only = false, rain_only = false, stream_only = false, json_only = false,
         memory_only = false, cloth_only = false, compare = false, solver_given = false;
    const char* assets = RD_ASSETS_DIR;
    for (int i = 1; i < argc; ++i) {
        if (strcmp(argv[i], "--ticks") == 0 && i + 1 < argc) {
            ticks = atoi(argv[++i]);
        } else if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc) {
            runs = atoi(argv[++i]);
        } else if (strcmp(argv[i], "--assets") == 0 && i + 1 < argc) {
            assets = argv[++i];
        } else if (strcmp(argv[i], "--solver") == 0 && i + 1 < argc) {
            if (!bench_solver_parse(argv[++i], &g_solver)) {
                fprintf(stderr, "ragdoll-bench: --solver takes xpbd or soft_step, not \"%s\"\n",
                        argv[i]);
                return 2;
            }
            solver_given = true;
        } else if (strcmp(argv[i], "--compare-solvers") == 0) {
            compare = true;
        } else if (strcmp(argv[i], "--piles-only") == 0) {
            piles_only = true;
        } else if (strcmp(argv[i], "--rain-only") == 0) {
            rain_only = true;
        } else if (strcmp(argv[i], "--stream-only") == 0) {
            stream_only = true;
        } else if (strcmp(argv[i], "--json-only") == 0) {
            json_only = true;
        } else if (strcmp(argv[i], "--memory-only") == 0) {
            memory_only = true;
        } else if (strcmp(argv[i], "--cloth-only") == 0) {
            cloth_only = true;
        } else if (strcmp(argv[i], "--no-avx") == 0) {
            sim__cloth_lanes_avx = false;
        } else {
            usage(stderr);
            return 2;
        }
    }
    if (ticks < 1 || runs < 1) {
        fprintf(stderr, "ragdoll-bench: --ticks and --runs take positive numbers\n");
        return 2;
    }
    if (compare && (solver_given || stream_only || json_only || memory_only || cloth_only)) {
        fprintf(stderr, "ragdoll-bench: --compare-solvers runs the piles and the rain under both "
                        "solvers: no --solver, --stream-only, --json-only, --memory-only or "
                        "--cloth-only\n");
        return 2;
    }
    char err[256];
    if (sim_library_create(&g_lib) != SIM_OK ||
        app_assets_load(assets, g_lib, NULL, NULL, err, sizeof err)) {
        fprintf(stderr, "ragdoll-bench: assets: %s\n", err);
        return 1;
    }
    if (compare) {
        printf("solvers: xpbd and soft_step, alternated run by run (--compare-solvers)\n");
        if (!rain_only || piles_only) {
            compare_piles(ticks, runs);
        }
        if (!piles_only || rain_only) {
            compare_rain(runs);
        }
        sim_library_destroy(g_lib);
        return 0;
    }
    printf("solver: %s (rigid bodies, every world; --solver)\n", bench_solver_name(g_solver));
    if (memory_only || stream_only || json_only || piles_only || rain_only || cloth_only) {
        if (cloth_only) {
            cloth_figures(ticks, runs);
        }
        if (memory_only) {
            memory_figures();
        }
        if (cloth_only) {
            cloth_extras_figures(ticks, runs);
            garment_figures(ticks, runs);
        }
        if (stream_only) {
            stream_figures();
        }
        if (json_only) {
            json_figures(runs);
        }
        if (piles_only) {
            piles(ticks, runs);
        }
        if (rain_only) {
            rain(runs);
        }
        sim_library_destroy(g_lib);
        return 0;
    }

    cloth_figures(ticks, runs);

    uint32_t np = 0, nc = 0;
    double d = time_scene(sim_scene_demo, 8, ticks, runs, &np, &nc);
    printf("demo: %u particles, %u constraints, 8 iterations, 1 substep\n", np, nc);
    printf("  ms per tick                  %8.3f\n", d * 1e3);
    printf("  ticks per second (one core)  %8.0f   (%.0fx real time at 60 Hz)\n", 1.0 / d,
           1.0 / d / 60.0);

    cloth_extras_figures(ticks, runs);
    garment_figures(ticks, runs);
    stream_figures();
    json_figures(runs);
    memory_figures();
    piles(ticks, runs);
    rain(runs);
    sim_library_destroy(g_lib);
    return 0;
}
