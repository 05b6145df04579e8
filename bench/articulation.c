/*
 * articulation.c: ragdoll-artic-bench, the cost of articulations in reduced
 * coordinates (server/sim/articulation.c, issue 13). Not a test: nothing
 * here passes or fails.
 *
 *   chain N    N hinge links of 0.1 m and 0.1 kg (axes alternating +Z and
 *              +X), its base fixed, swinging under gravity from 1 rad per
 *              joint: µs per step (one substep: two ABA passes and the
 *              integration), ns per link-step, for N = 10, 100, 1000 in
 *              turn in one process; the ratios t(100)/t(10) and
 *              t(1000)/t(100) (linear in N: 10).
 *   humanoid   the humanoid skeleton asset (16 bones) as an articulation
 *              (free pelvis; ball and hinge joints as the asset says; each
 *              bone's inertia a solid of its capsule's length and radius)
 *              against the same humanoid as a maximal-coordinate ragdoll
 *              (sim_character_kill() in a world of its own), both falling
 *              through the air 100 m up (no contacts: joints only), at
 *              60 Hz with 4 substeps, in turn in one process: ms per tick
 *              and the median of the runs' ratios.
 *
 * Usage: ragdoll-artic-bench [--runs N] [--assets DIR]
 */
#include "assets.h"
#include "bench_time.h"
#include "sim.h"
#include "sim_articulation.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const sim_vec3 GRAVITY = {0.0f, -9.81f, 0.0f};

// ---------------------------------------------------------------------------
// Chains
// ---------------------------------------------------------------------------

static sim_artic* chain(uint32_t n) {
    sim_artic_link_def* d = calloc(n, sizeof *d);
    if (d == NULL) {
        return NULL;
    }
    for (uint32_t i = 0; i < n; ++i) {
        d[i] = sim_artic_link_def_default();
        d[i].parent = (int32_t)i - 1;
        d[i].joint = SIM_ARTIC_REVOLUTE;
        d[i].anchor = i == 0 ? (sim_vec3){0.0f, 0.0f, 0.0f} : (sim_vec3){0.0f, -0.1f, 0.0f};
        d[i].axis = i % 2 ? (sim_vec3){1.0f, 0.0f, 0.0f} : (sim_vec3){0.0f, 0.0f, 1.0f};
        d[i].mass = 0.1f;
        d[i].com = (sim_vec3){0.0f, -0.05f, 0.0f};
        d[i].inertia = (sim_vec3){1e-4f, 2e-5f, 1e-4f};
    }
    sim_artic* a = NULL;
    int rc = sim_artic_create(d, n, NULL, &a);
    free(d);
    if (rc != SIM_OK) {
        return NULL;
    }
    for (uint32_t i = 0; i < n; ++i) {
        sim_artic_set_angle(a, i, i == 0 ? 1.0f : 0.02f, 0.0f);
    }
    return a;
}

// Seconds per step of a chain of n over `steps` steps at 240 Hz.
static double time_chain(uint32_t n, int steps) {
    sim_artic* a = chain(n);
    if (a == NULL) {
        fprintf(stderr, "ragdoll-artic-bench: cannot build a chain of %u\n", n);
        exit(1);
    }
    double t0 = bench_now_s();
    for (int s = 0; s < steps; ++s) {
        if (sim_artic_step(a, 1.0f / 240.0f, GRAVITY) != SIM_OK) {
            fprintf(stderr, "ragdoll-artic-bench: the chain of %u blew up\n", n);
            exit(1);
        }
    }
    double dt = (bench_now_s() - t0) / steps;
    if (!isfinite(sim_artic_energy(a, GRAVITY))) {
        fprintf(stderr, "ragdoll-artic-bench: the chain of %u is not finite\n", n);
        exit(1);
    }
    sim_artic_destroy(a);
    return dt;
}

static void chains(int runs) {
    static const uint32_t sizes[3] = {10, 100, 1000};
    double t[3][64];
    for (int r = 0; r < runs; ++r) {
        for (int k = 0; k < 3; ++k) {
            // About the same work per run whatever the length.
            t[k][r] = time_chain(sizes[k], (int)(200000 / sizes[k]));
        }
    }
    double ratio[2][64];
    for (int r = 0; r < runs; ++r) {
        ratio[0][r] = t[1][r] / t[0][r];
        ratio[1][r] = t[2][r] / t[1][r];
    }
    printf("chain N: N hinge links, fixed base, swinging under gravity, 240 Hz steps; median of "
           "%d runs\n",
           runs);
    printf("  %-6s %14s %16s %18s\n", "links", "us per step", "ns per link-step",
           "ms per 60 Hz tick*");
    for (int k = 0; k < 3; ++k) {
        double m = bench_median(t[k], runs);
        printf("  %-6u %14.2f %16.1f %18.3f\n", sizes[k], m * 1e6, m * 1e9 / sizes[k], m * 4e3);
    }
    printf("  (* 4 substeps)  t(100)/t(10) %.2f   t(1000)/t(100) %.2f   (linear in N: 10)\n",
           bench_median(ratio[0], runs), bench_median(ratio[1], runs));
}

// ---------------------------------------------------------------------------
// The humanoid, both ways
// ---------------------------------------------------------------------------

static sim_artic* humanoid_articulation(const sim_skeleton_def* sk, sim_vec3 at) {
    sim_artic_link_def d[SIM_MAX_BONES];
    for (uint32_t i = 0; i < sk->bone_count; ++i) {
        const sim_bone_def* b = &sk->bones[i];
        d[i] = sim_artic_link_def_default();
        d[i].parent = b->parent;
        if (b->parent < 0) {
            d[i].joint = SIM_ARTIC_FREE;
            d[i].anchor = (sim_vec3){b->head.x + at.x, b->head.y + at.y, b->head.z + at.z};
        } else {
            const sim_bone_def* p = &sk->bones[b->parent];
            d[i].joint = b->joint == SIM_JOINT_HINGE  ? SIM_ARTIC_REVOLUTE
                         : b->joint == SIM_JOINT_BALL ? SIM_ARTIC_SPHERICAL
                                                      : SIM_ARTIC_FIXED;
            d[i].anchor =
                (sim_vec3){b->head.x - p->head.x, b->head.y - p->head.y, b->head.z - p->head.z};
            d[i].axis = b->axis;
        }
        const sim_vec3 seg = {b->tail.x - b->head.x, b->tail.y - b->head.y, b->tail.z - b->head.z};
        const float L2 = seg.x * seg.x + seg.y * seg.y + seg.z * seg.z;
        const float I = b->mass * (L2 / 12.0f + 0.5f * b->radius * b->radius);
        d[i].mass = b->mass;
        d[i].com = (sim_vec3){0.5f * seg.x, 0.5f * seg.y, 0.5f * seg.z};
        d[i].inertia = (sim_vec3){I, I, I};
    }
    sim_artic* a = NULL;
    if (sim_artic_create(d, sk->bone_count, NULL, &a) != SIM_OK) {
        return NULL;
    }
    return a;
}

static double time_reduced(const sim_skeleton_def* sk, int ticks) {
    sim_artic* a = humanoid_articulation(sk, (sim_vec3){0.0f, 100.0f, 0.0f});
    if (a == NULL) {
        fprintf(stderr, "ragdoll-artic-bench: cannot build the humanoid articulation\n");
        exit(1);
    }
    // A tumble: the pelvis spinning and moving as a kill would leave it.
    sim_artic_set_base(a, (sim_vec3){0.0f, 101.0f, 0.0f}, (sim_quat){0, 0, 0, 1},
                       (sim_vec3){2.0f, 1.0f, 0.0f}, (sim_vec3){1.0f, 0.0f, 3.0f});
    double t0 = bench_now_s();
    for (int t = 0; t < ticks; ++t) {
        for (int s = 0; s < 4; ++s) {
            sim_artic_step(a, 1.0f / 240.0f, GRAVITY);
        }
    }
    double dt = (bench_now_s() - t0) / ticks;
    sim_artic_destroy(a);
    return dt;
}

static double time_maximal(sim_library* lib, int ticks) {
    sim_world_def def = sim_world_def_default();
    def.library = lib;
    def.params.substeps = 4;
    sim_world* w = NULL;
    sim_entity_id id;
    sim_character_def cd = sim_character_def_default();
    cd.position = (sim_vec3){0.0f, 100.0f, 0.0f};
    if (sim_world_create(&def, &w) != SIM_OK || sim_world_spawn_character(w, &cd, &id) != SIM_OK ||
        sim_character_kill(w, id, (sim_vec3){0.0f, 101.0f, 0.0f}, (sim_vec3){40.0f, 20.0f, 0.0f},
                           NULL) != SIM_OK) {
        fprintf(stderr, "ragdoll-artic-bench: cannot build the maximal humanoid\n");
        exit(1);
    }
    double t0 = bench_now_s();
    for (int t = 0; t < ticks; ++t) {
        sim_world_step(w);
    }
    double dt = (bench_now_s() - t0) / ticks;
    sim_world_destroy(w);
    return dt;
}

static void humanoids(sim_library* lib, int runs) {
    const sim_skeleton_def* sk = sim_library_skeleton(lib, "humanoid");
    if (sk == NULL) {
        fprintf(stderr, "ragdoll-artic-bench: no humanoid skeleton\n");
        exit(1);
    }
    double red[64], max[64], ratio[64];
    const int ticks = 240; // 4 s: it falls 78 m, still in the air
    for (int r = 0; r < runs; ++r) {
        red[r] = time_reduced(sk, ticks);
        max[r] = time_maximal(lib, ticks);
        ratio[r] = red[r] / max[r];
    }
    printf("humanoid: %u bones falling through the air (no contacts), 60 Hz, 4 substeps, %d ticks; "
           "median of %d runs, in turn\n",
           sk->bone_count, ticks, runs);
    printf("  reduced (articulation)       %8.3f ms per tick\n", bench_median(red, runs) * 1e3);
    printf("  maximal (ragdoll, world)     %8.3f ms per tick   (the whole world's tick)\n",
           bench_median(max, runs) * 1e3);
    printf("  reduced / maximal            %8.3fx\n", bench_median(ratio, runs));
}

int main(int argc, char** argv) {
    int runs = 5;
    const char* assets = RD_ASSETS_DIR;
    for (int i = 1; i < argc; ++i) {
        if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc) {
            runs = atoi(argv[++i]);
        } else if (strcmp(argv[i], "--assets") == 0 && i + 1 < argc) {
            assets = argv[++i];
        } else {
            fprintf(stderr, "usage: ragdoll-artic-bench [--runs N] [--assets DIR]\n");
            return 2;
        }
    }
    if (runs < 1 || runs > 64) {
        fprintf(stderr, "ragdoll-artic-bench: --runs is 1 to 64\n");
        return 2;
    }
    sim_library* lib = NULL;
    char err[512];
    if (sim_library_create(&lib) != SIM_OK ||
        app_assets_load(assets, lib, NULL, NULL, err, sizeof err) != 0) {
        fprintf(stderr, "ragdoll-artic-bench: %s\n", err);
        return 1;
    }
    chains(runs);
    humanoids(lib, runs);
    sim_library_destroy(lib);
    return 0;
}
