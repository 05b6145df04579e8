/*
 * bench.c: ragdoll-bench, figures for the README's benchmark table (Box2D's
 * benchmark/ style: a fixed scene, many ticks, medians, printed figures and
 * ratios). Not a test: nothing here passes or fails.
 *
 *   cloth64   a 64 × 64 cloth with structural, shear and bend constraints,
 *             10 iterations, 1 substep, hanging from its top row: ms per tick,
 *             ns per constraint projection, particle-iterations per second.
 *   demo      the demo world (2 particle ragdolls, a rope, a 24 × 16 cloth,
 *             2 platforms): ticks per second on one core.
 *
 * Usage: ragdoll-bench [--ticks N] [--runs N]
 */
#include "scenes.h"
#include "sim.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void* a, const void* b) {
    double x = *(const double*)a, y = *(const double*)b;
    return (x > y) - (x < y);
}

static double median(double* v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

typedef int (*scene_fn)(sim_world* w);

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
        sim_world_def def = sim_world_def_default();
        def.params.iterations = iterations;
        sim_world* w = NULL;
        if (sim_world_create(&def, &w) != SIM_OK || scene(w) != SIM_OK) {
            fprintf(stderr, "ragdoll-bench: cannot build the scene\n");
            exit(1);
        }
        for (int t = 0; t < 30; ++t) {
            sim_world_step(w);
        }
        double t0 = now_s();
        for (int t = 0; t < ticks; ++t) {
            sim_world_step(w);
        }
        per_tick[r] = (now_s() - t0) / ticks;
        *particles = sim_world_particle_count(w);
        *constraints = sim_world_constraint_count(w);
        if (!sim_world_is_finite(w)) {
            fprintf(stderr, "ragdoll-bench: the scene blew up\n");
            exit(1);
        }
        sim_world_destroy(w);
    }
    double m = median(per_tick, runs);
    free(per_tick);
    return m;
}

int main(int argc, char** argv) {
    int ticks = 300, runs = 7;
    for (int i = 1; i < argc; ++i) {
        if (strcmp(argv[i], "--ticks") == 0 && i + 1 < argc) {
            ticks = atoi(argv[++i]);
        } else if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc) {
            runs = atoi(argv[++i]);
        } else {
            fprintf(stderr, "usage: ragdoll-bench [--ticks N] [--runs N]\n");
            return 2;
        }
    }
    if (ticks < 1 || runs < 1) {
        fprintf(stderr, "ragdoll-bench: --ticks and --runs take positive numbers\n");
        return 2;
    }

    // The scalar Gauss-Seidel reference of the issue: ~15 ns per projection.
    const double reference_ns = 15.0;
    uint32_t np = 0, nc = 0;
    double s = time_scene(scene_cloth64, 10, ticks, runs, &np, &nc);
    double projections = (double)nc * 10.0;
    double ns_per = s * 1e9 / projections;
    printf("cloth64: 64x64 cloth, %u particles, %u constraints (structural+shear+bend), "
           "10 iterations, 1 substep; median of %d runs x %d ticks\n",
           np, nc, runs, ticks);
    printf("  ms per tick                  %8.3f\n", s * 1e3);
    printf("  ns per constraint projection %8.2f   (%.2fx the 15 ns scalar reference)\n", ns_per,
           reference_ns / ns_per);
    printf("  particle-iterations per s    %8.3g\n", (double)np * 10.0 / s);

    double d = time_scene(sim_scene_demo, 8, ticks, runs, &np, &nc);
    printf("demo: %u particles, %u constraints, 8 iterations, 1 substep\n", np, nc);
    printf("  ms per tick                  %8.3f\n", d * 1e3);
    printf("  ticks per second (one core)  %8.0f   (%.0fx real time at 60 Hz)\n", 1.0 / d,
           1.0 / d / 60.0);
    return 0;
}
