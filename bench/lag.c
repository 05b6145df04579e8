/*
 * lag.c: ragdoll-lag-bench, the cost of lag compensation (issue 14): the
 * memory of a world's pose history, the time to record it against the
 * time of the step it follows, and a ray's cost judged now and at a past
 * tick, in a world of N walking humanoids (default 200, the world)
 * spread over a 200 m square.
 *
 *   ragdoll-lag-bench [--characters N] [--history-ms MS] [--ticks T]
 *
 * Every figure is measured in this process on the same world; ratios are
 * against the step measured over the same ticks.
 */
#include "assets.h"
#include "bench_time.h"
#include "sim.h"
#include "sim_query.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char** argv) {
    int characters = 200, history_ms = 300, ticks = 120;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--characters") == 0) {
            characters = atoi(argv[i + 1]);
        } else if (strcmp(argv[i], "--history-ms") == 0) {
            history_ms = atoi(argv[i + 1]);
        } else if (strcmp(argv[i], "--ticks") == 0) {
            ticks = atoi(argv[i + 1]);
        } else {
            fprintf(stderr, "usage: ragdoll-lag-bench [--characters N] [--history-ms MS] "
                            "[--ticks T]\n");
            return 2;
        }
    }
    if (characters < 1 || characters > 1000 || history_ms < 1 || history_ms > 1000 || ticks < 20) {
        fprintf(stderr, "ragdoll-lag-bench: 1-1000 characters, 1-1000 ms, at least 20 ticks\n");
        return 2;
    }
    sim_library* lib = NULL;
    char err[512] = "";
    if (sim_library_create(&lib) != SIM_OK ||
        app_assets_load(RD_ASSETS_DIR, lib, NULL, NULL, err, sizeof err) != 0) {
        fprintf(stderr, "ragdoll-lag-bench: %s\n", err);
        return 1;
    }
    sim_world_def def = sim_world_def_default();
    def.library = lib;
    def.max_entities = (uint32_t)characters + 16;
    def.max_bodies = 16u * (uint32_t)characters + 64;
    def.max_joints = def.max_bodies;
    def.max_solver_work = 0; // no budget: this is a measurement
    sim_world* w = NULL;
    if (sim_world_create(&def, &w) != SIM_OK) {
        fprintf(stderr, "ragdoll-lag-bench: cannot create the world\n");
        return 1;
    }
    // A grid over 200 m × 200 m, every one walking.
    const int side = (int)ceil(sqrt((double)characters));
    const float step = 200.0f / (float)side;
    for (int i = 0; i < characters; ++i) {
        sim_character_def cd = sim_character_def_default();
        cd.position = (sim_vec3){-100.0f + step * (float)(i % side), 0.0f,
                                 -100.0f + step * (float)(i / side)};
        cd.facing = (float)i;
        cd.clip = "walk";
        sim_entity_id id;
        if (sim_world_spawn_character(w, &cd, &id) != SIM_OK) {
            fprintf(stderr, "ragdoll-lag-bench: cannot spawn character %d\n", i);
            return 1;
        }
    }
    const uint32_t frames = (uint32_t)((history_ms * 60 + 999) / 1000 + 1);
    sim_history* h = NULL;
    if (sim_history_create(frames, NULL, &h) != SIM_OK) {
        return 1;
    }
    double* step_s = calloc((size_t)ticks, sizeof *step_s);
    double* rec_s = calloc((size_t)ticks, sizeof *rec_s);
    for (int t = 0; t < ticks; ++t) {
        double t0 = bench_thread_s();
        sim_world_step(w);
        double t1 = bench_thread_s();
        sim_history_record(h, w);
        double t2 = bench_thread_s();
        step_s[t] = t1 - t0;
        rec_s[t] = t2 - t1;
    }
    const double step_ms = bench_median(step_s, ticks) * 1e3;
    const double rec_us = bench_median(rec_s, ticks) * 1e6;
    const uint32_t bodies = sim_world_body_count(w);
    const size_t bytes = sim_history_bytes(h);
    printf("world: %d walking humanoids, %u bodies, 60 Hz; history %d ms = %u frames\n", characters,
           bodies, history_ms, frames);
    printf("history memory: %zu bytes (%.2f MiB), %.1f bytes per body-frame\n", bytes,
           (double)bytes / (1024.0 * 1024.0), (double)bytes / ((double)bodies * frames));
    printf("record: %.1f us per tick against a %.3f ms step: %.2f %% of the step\n", rec_us,
           step_ms, 100.0 * rec_us / (step_ms * 1e3));

    // Rays across the world at head height, now and 10 ticks back.
    enum { RAYS = 400 };
    double now_s[RAYS], past_s[RAYS];
    int hits_now = 0, hits_past = 0;
    const uint64_t tick = sim_world_tick(w);
    for (int r = 0; r < RAYS; ++r) {
        const float z = -100.0f + 200.0f * (float)r / RAYS;
        const sim_vec3 o = {-110.0f, 1.57f, z}, d = {1.0f, 0.0f, 0.0f};
        sim_ray_hit hit;
        double t0 = bench_thread_s();
        sim_world_raycast(w, NULL, tick, o, d, 300.0f, &hit);
        double t1 = bench_thread_s();
        hits_now += hit.kind == SIM_HIT_BONE;
        sim_world_raycast(w, h, tick - 10, o, d, 300.0f, &hit);
        double t2 = bench_thread_s();
        hits_past += hit.kind == SIM_HIT_BONE;
        now_s[r] = t1 - t0;
        past_s[r] = t2 - t1;
    }
    printf("raycast across the world: now %.1f us (%d of %d rays hit a bone), at tick - 10 "
           "%.1f us (%d hit)\n",
           bench_median(now_s, RAYS) * 1e6, hits_now, RAYS, bench_median(past_s, RAYS) * 1e6,
           hits_past);
    free(step_s);
    free(rec_s);
    sim_history_destroy(h);
    sim_world_destroy(w);
    sim_library_destroy(lib);
    return 0;
}
