/*
 * durable.c: ragdoll-durable-bench, figures for the README's table on
 * durable worlds (issue 11: server/app/persist.c, state_file.c, journal.c,
 * rollback.c). Not a test: nothing here passes or fails.
 *
 *   save / load   the demo world and a pile of 300 ragdolls (settling,
 *                 awake): the state file's bytes, the time to encode it
 *                 (app__state_encode(), on the loop thread at a tick
 *                 boundary), to write it atomically (write, fsync, rename,
 *                 fsync the directory: on the threadpool in the server) and
 *                 to decode it (app__state_decode(), at start). Medians.
 *
 *   journal       the cost per command of journaling it (a record buffered,
 *                 then one write() per tick boundary), --journal-fsync
 *                 everysec: apply_impulse commands, 20 per boundary, with
 *                 the journal and without, interleaved: the difference per
 *                 command.
 *
 *   autosave      two identical 300-ragdoll piles ticked in lockstep
 *                 through the scheduler (one worker), one saved every 60
 *                 ticks (--autosave 1 at 60 Hz), the other never: p50, p99
 *                 and max of the tick's duration (commands, step, events
 *                 and snapshots, and the save's encoding; its write runs on
 *                 the threadpool meanwhile). Their hashes must agree.
 *
 * It drives a real app_server (no sockets) through server/app's private
 * headers, as the unit tests do. Files go to a temporary directory (or
 * --dir DIR, to measure a given disk).
 *
 * Usage: ragdoll-durable-bench [--ragdolls N] [--runs N] [--dir DIR]
 */
#define _DEFAULT_SOURCE // mkdtemp

#include "app_internal.h"
#include "bench_time.h"
#include "persist.h"
#include "scenes.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct bench {
    uv_loop_t loop;
    app_server* app;
    bool done;
} bench;

static sim_library* g_lib;

static void settle(bench* b) {
    while (app__sched_in_flight(b->app) > 0 || b->app->saves_in_flight > 0 ||
           b->app->syncs_in_flight > 0) {
        uv_run(&b->loop, UV_RUN_ONCE);
    }
}

static void on_done(void* arg) {
    ((bench*)arg)->done = true;
}

static app_world* pile_world(bench* b, uint32_t ragdolls) {
    app_world* w = NULL;
    uint32_t limits[RDP_LIMIT_COUNT];
    memcpy(limits, b->app->cfg.world_limits, sizeof limits);
    limits[RDP_LIMIT_BODIES] = 16 * ragdolls + 64;
    limits[RDP_LIMIT_JOINTS] = 16 * ragdolls + 64;
    limits[RDP_LIMIT_ENTITIES] = ragdolls + 16;
    limits[RDP_LIMIT_CONTACTS] = 393216;
    if (app__world_create(b->app, "pile", 60, limits, SIM_SOLVER_SOFT_STEP, &w) != RDP_OK ||
        sim_scene_pile(w->sim, ragdolls, 1, NULL) != SIM_OK) {
        fprintf(stderr, "cannot make the pile\n");
        exit(1);
    }
    char why[256];
    if (app__persist_world_created(b->app, w, why, sizeof why) != 0) { // as create_world does
        fprintf(stderr, "cannot write the pile's state file: %s\n", why);
        exit(1);
    }
    return w;
}

static void save_load(bench* b, app_world* w, const char* what, int runs) {
    double enc[64], wr[64], dec[64];
    size_t bytes = 0;
    for (int r = 0; r < runs; ++r) {
        uint8_t* buf = NULL;
        size_t len = 0;
        uint64_t t0 = uv_hrtime();
        app__state_encode(w, &buf, &len);
        uint64_t t1 = uv_hrtime();
        char why[256];
        app__file_write_atomic(b->app->cfg.state_dir, "bench.state", buf, len, why, sizeof why);
        uint64_t t2 = uv_hrtime();
        app_state st;
        app__state_decode(buf, len, g_lib, &st, why, sizeof why);
        uint64_t t3 = uv_hrtime();
        app__state_free(&st);
        free(buf);
        enc[r] = (double)(t1 - t0) / 1e6;
        wr[r] = (double)(t2 - t1) / 1e6;
        dec[r] = (double)(t3 - t2) / 1e6;
        bytes = len;
    }
    printf("%-28s %10.2f MB  encode %7.2f ms  write+fsync %7.2f ms  decode %7.2f ms\n", what,
           (double)bytes / 1e6, bench_quantile(enc, runs, 0.5), bench_quantile(wr, runs, 0.5),
           bench_quantile(dec, runs, 0.5));
}

static void enqueue(app_world* w, const char* text) {
    rdp_command cmd;
    rdp_error err;
    if (rdp_command_decode(text, strlen(text), &cmd, &err) != RDP_OK ||
        app__world_enqueue(w, NULL, &cmd) != RDP_OK) {
        fprintf(stderr, "bad command %s\n", text);
        exit(1);
    }
}

int main(int argc, char** argv) {
    uint32_t ragdolls = 300;
    int runs = 9;
    const char* dir_arg = NULL;
    for (int i = 1; i < argc; ++i) {
        if (strcmp(argv[i], "--ragdolls") == 0 && i + 1 < argc) {
            ragdolls = (uint32_t)atoi(argv[++i]);
        } else if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc) {
            runs = atoi(argv[++i]);
            runs = runs < 1 ? 1 : runs > 64 ? 64 : runs;
        } else if (strcmp(argv[i], "--dir") == 0 && i + 1 < argc) {
            dir_arg = argv[++i];
        } else {
            fprintf(stderr, "usage: ragdoll-durable-bench [--ragdolls N] [--runs N] [--dir DIR]\n");
            return 2;
        }
    }
    char tmp[] = "/tmp/rd_durable_bench_XXXXXX";
    const char* dir = dir_arg != NULL ? dir_arg : mkdtemp(tmp);
    char err[512];
    if (dir == NULL || sim_library_create(&g_lib) != SIM_OK ||
        app_assets_load(RD_ASSETS_DIR, g_lib, NULL, NULL, err, sizeof err) != 0) {
        fprintf(stderr, "setup failed\n");
        return 1;
    }
    bench b;
    memset(&b, 0, sizeof b);
    uv_loop_init(&b.loop);
    app_config cfg = app_config_default();
    cfg.port = 0;
    cfg.web_root = NULL;
    cfg.workers = 1;
    cfg.library = g_lib;
    cfg.max_solver_work = 0;
    cfg.max_total_solver_work = UINT64_MAX / 120;
    cfg.log_level = APP_LOG_ERROR;
    cfg.state_dir = dir;
    cfg.autosave_s = 0;
    cfg.demo = true;
    if (app_server_start(&b.loop, &cfg, &b.app) != 0) {
        fprintf(stderr, "cannot start the server\n");
        return 1;
    }
    app__sched_pause(b.app, true);
    printf("durable worlds (%s), medians of %d\n", dir, runs);
    app_world* demo = b.app->worlds[0];
    save_load(&b, demo, "demo world", runs);
    app_world* w = pile_world(&b, ragdolls);
    for (int t = 0; t < 60; ++t) { // falling, awake
        app__sched_tick_now(b.app, w);
        settle(&b);
    }
    char what[64];
    snprintf(what, sizeof what, "%u ragdolls (awake)", ragdolls);
    save_load(&b, w, what, runs);

    // Journal: 20 impulses a boundary, journaled and not, interleaved.
    app__journal_open(b.app, demo);
    const unsigned long long ball = (unsigned long long)sim_entity_id_store(
        sim_world_entity_at(demo->sim, sim_world_entity_count(demo->sim) - 1));
    char cmd[256];
    snprintf(cmd, sizeof cmd,
             "{\"op\":\"apply_impulse\",\"world\":1,\"entity\":%llu,\"impulse\":[0,0.001,0]}",
             ball);
    enum { BLOCKS = 40, PER = 20 };
    double on[BLOCKS], off[BLOCKS];
    for (int k = 0; k < 2 * BLOCKS; ++k) {
        const bool journal = k % 2 == 0;
        const char* kept = b.app->cfg.state_dir;
        if (!journal) {
            b.app->cfg.state_dir = NULL; // as a server without --state-dir
        }
        for (int i = 0; i < PER; ++i) {
            enqueue(demo, cmd);
        }
        uint64_t t0 = uv_hrtime();
        app__sched_tick_now(b.app, demo); // applies the inbox on this thread
        uint64_t t1 = uv_hrtime();
        settle(&b);
        b.app->cfg.state_dir = kept;
        (journal ? on : off)[k / 2] = (double)(t1 - t0) / 1e3 / PER;
    }
    const double jon = bench_quantile(on, BLOCKS, 0.5), joff = bench_quantile(off, BLOCKS, 0.5);
    // And the journal alone: records buffered and written 20 at a time.
    app_cmd e;
    memset(&e, 0, sizeof e);
    rdp_error derr;
    rdp_command_decode(cmd, strlen(cmd), &e.cmd, &derr);
    enum { RECORDS = 200000 };
    uint64_t j0 = uv_hrtime();
    for (int i = 0; i < RECORDS; ++i) {
        app__journal_command(b.app, demo, &e);
        if (i % PER == PER - 1) {
            app__journal_commit(b.app, demo);
        }
    }
    const double alone = (double)(uv_hrtime() - j0) / 1e3 / RECORDS;
    printf("journal: %.2f us a command (record + CRC + its share of the write, %zu bytes); a "
           "command applied %.2f us journaled, %.2f us not\n",
           alone, (size_t)(32 + 16 + sizeof(rdp_command)), jon, joff);

    // Autosave's effect on the tick: two identical piles stepped in
    // lockstep (the same physics, so the same step costs), one saved every
    // 60 ticks (--autosave 1 at 60 Hz), the other never.
    app_world* pa = pile_world(&b, ragdolls);
    app_world* pb = pile_world(&b, ragdolls);
    enum { TICKS = 600 };
    static double with[TICKS], without[TICKS];
    for (int t = 0; t < TICKS; ++t) {
        if (t % 60 == 30) {
            pa->save_wanted = true;
        }
        for (int k = 0; k < 2; ++k) {
            app_world* x = k == 0 ? pa : pb;
            uint64_t t0 = uv_hrtime();
            app__sched_tick_now(b.app, x);
            while (app__sched_in_flight(b.app) > 0) {
                uv_run(&b.loop, UV_RUN_ONCE);
            }
            (k == 0 ? with : without)[t] = (double)(uv_hrtime() - t0) / 1e6;
        }
    }
    settle(&b);
    printf("autosave every 60 ticks, %u ragdolls falling into a pile (%u bodies awake at the end): "
           "tick p50 %.2f ms, p99 %.2f ms, max %.2f ms; the same pile without: p50 %.2f ms, p99 "
           "%.2f ms, max %.2f ms (%d ticks)\n",
           ragdolls, sim_world_awake_body_count(pa->sim), bench_quantile(with, TICKS, 0.5),
           bench_quantile(with, TICKS, 0.99), bench_quantile(with, TICKS, 1.0),
           bench_quantile(without, TICKS, 0.5), bench_quantile(without, TICKS, 0.99),
           bench_quantile(without, TICKS, 1.0), TICKS);
    if (sim_world_hash(pa->sim) != sim_world_hash(pb->sim)) {
        printf("(the two piles differ: saving changed the world!)\n");
    }
    app_server_shutdown(b.app, on_done, &b);
    uv_run(&b.loop, UV_RUN_DEFAULT);
    sim_library_destroy(g_lib);
    if (dir_arg == NULL) {
        char rm[128];
        snprintf(rm, sizeof rm, "rm -rf '%s'", dir);
        if (system(rm) != 0) {
            return 1;
        }
    }
    return 0;
}
