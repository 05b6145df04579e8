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
 *   maximal chain N
 *              the same chains as skeletons of N bones (at most
 *              SIM_MAX_BONES, 1024) in a world, the base bone animated and
 *              the rest a partial ragdoll (maximal coordinates), against
 *              the articulation at 4 steps a tick: ms per 60 Hz tick, for
 *              N = 10, 100 and 1000.
 *   humanoid   the humanoid skeleton asset (16 bones) spawned as a REDUCED
 *              and as a MAXIMAL character (each in a world of its own, in
 *              turn in one process), killed and falling through the air
 *              100 m up (no contacts: joints only), then four of each
 *              pushed down a flight of ten stairs (contacts with the steps
 *              and each other) for their first 2 s: ms per tick and the
 *              median of the runs' ratios.
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
// Maximal chains
// ---------------------------------------------------------------------------

// A skeleton of n bones hanging from a base bone: chain()'s links as bones
// (0.1 m, 0.1 kg each, hinges alternating about +Z and +X), and a clip
// "idle" of its bind pose (the links out at 1 rad, as chain() sets them).
static int add_chain_skeleton(sim_library* lib, uint32_t n, char* name, size_t cap) {
    snprintf(name, cap, "chain%u", n);
    sim_skeleton_def sk;
    memset(&sk, 0, sizeof sk);
    snprintf(sk.name, sizeof sk.name, "%s", name);
    sk.bone_count = n;
    for (uint32_t i = 0; i < n; ++i) {
        sim_bone_def* b = &sk.bones[i];
        snprintf(b->name, sizeof b->name, "b%u", i);
        b->parent = (int)i - 1;
        // Hung high enough that it never reaches the ground.
        const float top = 2.0f + 0.1f * (float)n;
        b->head = (sim_vec3){0.0f, top - 0.1f * (float)i, 0.0f};
        b->tail = (sim_vec3){0.0f, top - 0.1f * (float)(i + 1), 0.0f};
        b->radius = 0.02f;
        b->mass = 0.1f;
        b->joint = SIM_JOINT_HINGE;
        b->axis = i % 2 ? (sim_vec3){1.0f, 0.0f, 0.0f} : (sim_vec3){0.0f, 0.0f, 1.0f};
        b->twist_min = -3.0f;
        b->twist_max = 3.0f;
        b->friction = 0.0f;
    }
    int rc = sim_library_add_skeleton(lib, &sk, NULL);
    if (rc != SIM_OK) {
        return rc;
    }
    float times[1] = {0.0f};
    sim_vec3 root_pos[1] = {{0.0f, 2.0f + 0.1f * (float)n - 0.05f, 0.0f}};
    sim_quat root_rot[1] = {{0, 0, 0, 1}};
    sim_quat rot[SIM_MAX_BONES];
    for (uint32_t i = 0; i < n; ++i) {
        rot[i] = (sim_quat){0, 0, 0, 1};
    }
    rot[1] = (sim_quat){0.0f, 0.0f, sinf(0.5f), cosf(0.5f)}; // 1 rad about +Z
    sim_clip_def clip;
    memset(&clip, 0, sizeof clip);
    snprintf(clip.name, sizeof clip.name, "idle");
    clip.loop = true;
    clip.key_count = 1;
    clip.bone_count = n;
    clip.times = times;
    clip.root_pos = root_pos;
    clip.root_rot = root_rot;
    clip.rot = rot;
    return sim_library_add_clip(lib, name, &clip);
}

static double time_maximal_chain(sim_library* lib, const char* name, int ticks) {
    sim_world_def def = sim_world_def_default();
    def.library = lib;
    sim_world* w = NULL;
    sim_entity_id id;
    sim_character_def cd = sim_character_def_default();
    cd.skeleton = name;
    const uint32_t links[1] = {1};
    if (sim_world_create(&def, &w) != SIM_OK || sim_world_spawn_character(w, &cd, &id) != SIM_OK ||
        sim_character_set_partial(w, id, links, 1) != SIM_OK) {
        fprintf(stderr, "ragdoll-artic-bench: cannot build the maximal %s\n", name);
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

static void maximal_chains(sim_library* lib, int runs) {
    static const uint32_t sizes[3] = {10, 100, 1000};
    printf("chain N as a skeleton (maximal, partial ragdoll under its animated base) against the "
           "articulation (4 steps a tick); median of %d runs, in turn\n",
           runs);
    printf("  %-6s %16s %16s %10s\n", "links", "reduced ms/tick", "maximal ms/tick", "ratio");
    for (int k = 0; k < 3; ++k) {
        char name[SIM_NAME_MAX];
        if (add_chain_skeleton(lib, sizes[k], name, sizeof name) != SIM_OK) {
            fprintf(stderr, "ragdoll-artic-bench: cannot add the skeleton %s\n", name);
            exit(1);
        }
        double red[64], max[64], ratio[64];
        const int ticks = sizes[k] >= 1000 ? 60 : 600; // 1 s of the longest
        for (int r = 0; r < runs; ++r) {
            red[r] = 4.0 * time_chain(sizes[k], 4 * ticks);
            max[r] = time_maximal_chain(lib, name, ticks);
            ratio[r] = red[r] / max[r];
        }
        printf("  %-6u %16.4f %16.4f %9.2fx\n", sizes[k], bench_median(red, runs) * 1e3,
               bench_median(max, runs) * 1e3, bench_median(ratio, runs));
    }
}

// ---------------------------------------------------------------------------
// The humanoid, both ways, as characters in a world
// ---------------------------------------------------------------------------

// Seconds per tick of `count` humanoids of that solver: in the air 100 m up
// (stairs false) or pushed down ten stairs 0.2 m by 0.5 m (the first 2 s).
static double time_humanoids(sim_library* lib, sim_char_solver solver, bool stairs, int count,
                             int ticks) {
    sim_world_def def = sim_world_def_default();
    def.library = lib;
    sim_world* w = NULL;
    if (sim_world_create(&def, &w) != SIM_OK) {
        exit(1);
    }
    for (int k = 0; stairs && k < 10; ++k) {
        const float top = 2.0f - 0.2f * (float)k;
        sim_box b = {{0.0f, 0.5f * top, 0.25f + 0.5f * (float)k}, {6.0f, 0.5f * top, 0.25f}};
        sim_world_add_box(w, b);
    }
    for (int i = 0; i < count; ++i) {
        sim_character_def cd = sim_character_def_default();
        cd.solver = solver;
        const float x = 1.2f * (float)i - 0.6f * (float)(count - 1);
        cd.position = stairs ? (sim_vec3){x, 2.0f, 0.3f} : (sim_vec3){x, 100.0f, 0.0f};
        sim_entity_id id;
        if (sim_world_spawn_character(w, &cd, &id) != SIM_OK ||
            sim_character_kill(w, id, (sim_vec3){x, cd.position.y + 1.3f, 0.3f},
                               stairs ? (sim_vec3){0.0f, 0.0f, 60.0f}
                                      : (sim_vec3){40.0f, 20.0f, 0.0f},
                               NULL) != SIM_OK) {
            fprintf(stderr, "ragdoll-artic-bench: cannot spawn the humanoids\n");
            exit(1);
        }
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
    for (int scene = 0; scene < 2; ++scene) {
        const bool stairs = scene == 1;
        const int count = stairs ? 4 : 1, ticks = stairs ? 120 : 240;
        double red[64], max[64], ratio[64];
        for (int r = 0; r < runs; ++r) {
            red[r] = time_humanoids(lib, SIM_CHAR_SOLVER_REDUCED, stairs, count, ticks) / count;
            max[r] = time_humanoids(lib, SIM_CHAR_SOLVER_MAXIMAL, stairs, count, ticks) / count;
            ratio[r] = red[r] / max[r];
        }
        printf("humanoid %s: %d character(s) of each solver, 60 Hz, %d ticks; median of %d runs, "
               "in turn\n",
               stairs ? "pushed down ten stairs (contacts), the first 2 s"
                      : "falling through the air (no contacts)",
               count, ticks, runs);
        printf("  reduced                      %8.3f ms per character-tick\n",
               bench_median(red, runs) * 1e3);
        printf("  maximal                      %8.3f ms per character-tick\n",
               bench_median(max, runs) * 1e3);
        printf("  reduced / maximal            %8.2fx\n", bench_median(ratio, runs));
    }
}

// ---------------------------------------------------------------------------
// The shipped 100-link chain laid on the ground, both ways
// ---------------------------------------------------------------------------

// Seconds per tick of the shipped `chain` (assets/) spawned limp with its
// anchor 1.25 m up, so that 75 of its links come to lie on the ground:
// its first 2 s (falling, landing and settling: about 75 contacts), and
// the tick it fell asleep at (0 if it did not within 6 s).
static double time_lying_chain(sim_library* lib, sim_char_solver solver, int* asleep_at) {
    sim_world_def def = sim_world_def_default();
    def.library = lib;
    sim_world* w = NULL;
    sim_character_def cd = sim_character_def_default();
    cd.skeleton = "chain";
    cd.solver = solver;
    cd.state = SIM_CHAR_RAGDOLL;
    cd.position = (sim_vec3){0.0f, -5.0f, 0.0f};
    sim_entity_id id;
    if (sim_world_create(&def, &w) != SIM_OK || sim_world_spawn_character(w, &cd, &id) != SIM_OK) {
        fprintf(stderr, "ragdoll-artic-bench: cannot spawn the chain\n");
        exit(1);
    }
    double t0 = bench_now_s(), dt = 0.0;
    *asleep_at = 0;
    for (int t = 0; t < 360; ++t) {
        sim_world_step(w);
        if (t == 119) {
            dt = (bench_now_s() - t0) / 120.0;
        }
        sim_character_view v;
        if (*asleep_at == 0 && sim_character_get_view(w, id, &v) == SIM_OK && v.asleep) {
            *asleep_at = t + 1;
        }
    }
    sim_world_destroy(w);
    return dt;
}

static void lying_chains(sim_library* lib, int runs) {
    double red[64], max[64], ratio[64];
    int asleep_r = 0, asleep_m = 0;
    for (int r = 0; r < runs; ++r) {
        red[r] = time_lying_chain(lib, SIM_CHAR_SOLVER_REDUCED, &asleep_r);
        max[r] = time_lying_chain(lib, SIM_CHAR_SOLVER_MAXIMAL, &asleep_m);
        ratio[r] = red[r] / max[r];
    }
    printf("the shipped 100-link chain laid on the ground (75 links lying), its first 2 s; median "
           "of %d runs, in turn\n",
           runs);
    char when_r[32] = "not asleep by 6 s", when_m[32] = "not asleep by 6 s";
    if (asleep_r > 0) {
        snprintf(when_r, sizeof when_r, "asleep at %.2f s", asleep_r / 60.0);
    }
    if (asleep_m > 0) {
        snprintf(when_m, sizeof when_m, "asleep at %.2f s", asleep_m / 60.0);
    }
    printf("  reduced                      %8.3f ms per tick (%s)\n", bench_median(red, runs) * 1e3,
           when_r);
    printf("  maximal                      %8.3f ms per tick (%s)\n", bench_median(max, runs) * 1e3,
           when_m);
    printf("  reduced / maximal            %8.2fx\n", bench_median(ratio, runs));
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
    maximal_chains(lib, runs);
    humanoids(lib, runs);
    lying_chains(lib, runs);
    sim_library_destroy(lib);
    return 0;
}
