/*
 * test_sched.c: unit tests of the scheduler and the worker pool
 * (server/app/scheduler.c, pool.c) on real servers and loops:
 *
 *   - the pool runs every job once and hands it back once, with 0, 1 and 3
 *     workers, and a pool closed with jobs queued hands back every one;
 *   - a world's state after 60 ticks of a busy scene (humanoids piling up,
 *     half of them active ragdolls, commands applied at tick boundaries
 *     along the way) hashes the same whether its steps ran on the loop
 *     thread (0 workers) or on 1, 2 or 4 workers, three worlds at once,
 *     under either rigid-body solver (XPBD, the soft step);
 *   - destroying a world while its step is in flight, and shutting down
 *     with steps in flight, are safe (ASan and TSan builds run this);
 *   - the loop thread runs its timers while a world steps;
 *   - a world behind its clock runs max_catchup ticks back to back and
 *     counts the rest as overruns; a batch of them ends where a
 *     subscriber is due a snapshot.
 *
 * Ticks are started with app__sched_tick_now() on a paused clock, so how
 * many ticks run does not depend on the machine's speed; the hash test
 * compares runs with each other (STYLE.md §8), not with pinned values.
 */
// cmocka.h needs these four before it (cmocka docs); keep the order.
// clang-format off
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
// clang-format on

#include "app_internal.h"
#include "pool.h"
#include "scenes.h"
#include "shipped_library.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

// ---------------------------------------------------------------------------
// The pool alone
// ---------------------------------------------------------------------------

typedef struct test_job {
    app_job job;   // first: the pool's callbacks get &job
    int runs;      // written by the worker that runs it, read after hand-back
    int handbacks; // loop thread
    int resubmit;  // loop thread: submit again this many times
    useconds_t sleep_us;
} test_job;

typedef struct pool_fixture {
    uv_loop_t loop;
    app_pool pool;
    uint32_t handed_back;
    bool closed;
} pool_fixture;

static void job_run(app_job* j) {
    test_job* t = (test_job*)(void*)j;
    if (t->sleep_us > 0) {
        usleep(t->sleep_us);
    }
    t->runs++;
}

static void job_done(app_job* j, void* ctx) {
    pool_fixture* f = ctx;
    test_job* t = (test_job*)(void*)j;
    t->handbacks++;
    f->handed_back++;
    if (t->resubmit > 0) {
        t->resubmit--;
        app__pool_submit(&f->pool, j); // allowed from the done callback
    }
}

static void pool_closed(app_pool* p) {
    pool_fixture* f = (pool_fixture*)(void*)((char*)p - offsetof(pool_fixture, pool));
    f->closed = true;
}

static void test_pool_runs_every_job_once_and_hands_it_back(void** state) {
    (void)state;
    const uint32_t counts[] = {0, 1, 3};
    for (size_t k = 0; k < sizeof counts / sizeof counts[0]; ++k) {
        pool_fixture f;
        memset(&f, 0, sizeof f);
        assert_int_equal(uv_loop_init(&f.loop), 0);
        assert_int_equal(app__pool_init(&f.pool, &f.loop, counts[k], job_done, &f), 0);
        enum { N = 64 };
        test_job jobs[N];
        memset(jobs, 0, sizeof jobs);
        for (int i = 0; i < N; ++i) {
            jobs[i].job.run = job_run;
            jobs[i].resubmit = i % 3; // some go round again from the callback
            app__pool_submit(&f.pool, &jobs[i].job);
        }
        // Never inside submit, even with 0 workers.
        assert_int_equal(f.handed_back, 0);
        while (app__pool_outstanding(&f.pool) > 0) {
            uv_run(&f.loop, UV_RUN_ONCE);
        }
        for (int i = 0; i < N; ++i) {
            assert_int_equal(jobs[i].runs, 1 + i % 3);
            assert_int_equal(jobs[i].handbacks, 1 + i % 3);
        }
        app__pool_close(&f.pool, pool_closed);
        uv_run(&f.loop, UV_RUN_DEFAULT);
        assert_true(f.closed);
        assert_int_equal(uv_loop_close(&f.loop), 0);
    }
}

static void test_pool_closed_with_jobs_queued_hands_back_every_one(void** state) {
    (void)state;
    pool_fixture f;
    memset(&f, 0, sizeof f);
    assert_int_equal(uv_loop_init(&f.loop), 0);
    assert_int_equal(app__pool_init(&f.pool, &f.loop, 1, job_done, &f), 0);
    enum { N = 20 };
    test_job jobs[N];
    memset(jobs, 0, sizeof jobs);
    for (int i = 0; i < N; ++i) {
        jobs[i].job.run = job_run;
        jobs[i].sleep_us = 2000; // one worker, 40 ms of work: most are still queued
        app__pool_submit(&f.pool, &jobs[i].job);
    }
    app__pool_close(&f.pool, pool_closed); // waits for the job being run
    assert_int_equal(f.handed_back, N);
    assert_int_equal(app__pool_outstanding(&f.pool), 0);
    int ran = 0;
    for (int i = 0; i < N; ++i) {
        assert_int_equal(jobs[i].handbacks, 1);
        assert_true(jobs[i].runs <= 1);
        ran += jobs[i].runs;
    }
    assert_true(ran < N); // the queued ones were not run
    uv_run(&f.loop, UV_RUN_DEFAULT);
    assert_true(f.closed);
    assert_int_equal(uv_loop_close(&f.loop), 0);
    // More workers than it takes is an error, and leaves nothing open.
    assert_int_equal(uv_loop_init(&f.loop), 0);
    assert_int_equal(app__pool_init(&f.pool, &f.loop, APP_POOL_MAX_WORKERS + 1, job_done, &f),
                     UV_EINVAL);
    assert_int_equal(uv_loop_close(&f.loop), 0);
}

// ---------------------------------------------------------------------------
// Servers
// ---------------------------------------------------------------------------

typedef struct fixture {
    uv_loop_t loop;
    sim_library* lib;
    app_server* app;
    bool done;
} fixture;

// A server with `workers` workers on a fresh loop (port 0, no demo,
// no per-world solver budget); its clock paused when `paused`.
static void start(fixture* f, uint32_t workers, bool paused) {
    memset(f, 0, sizeof *f);
    assert_int_equal(uv_loop_init(&f->loop), 0);
    f->lib = rd_test_shipped_library();
    assert_non_null(f->lib);
    app_config cfg = app_config_default();
    cfg.port = 0;
    cfg.demo = false;
    cfg.web_root = NULL;
    cfg.workers = workers;
    cfg.library = f->lib;
    cfg.max_solver_work = 0;
    cfg.log_level = APP_LOG_WARN;
    assert_int_equal(app_server_start(&f->loop, &cfg, &f->app), 0);
    app__sched_pause(f->app, paused);
}

static void on_done(void* arg) {
    ((fixture*)arg)->done = true;
}

// Shuts the server down (whatever is in flight) and checks that every
// handle closed.
static void stop(fixture* f) {
    app_server_shutdown(f->app, on_done, f);
    uv_run(&f->loop, UV_RUN_DEFAULT);
    assert_true(f->done);
    assert_int_equal(uv_loop_close(&f->loop), 0);
    sim_library_destroy(f->lib);
}

// A world with the server's limits and rigid-body solver `solver`.
static app_world* world_with(fixture* f, uint32_t tick_hz, sim_solver solver) {
    app_world* w = NULL;
    assert_int_equal(app__world_create(f->app, "t", tick_hz, f->app->cfg.world_limits, solver, &w),
                     RDP_OK);
    return w;
}

// A world with the server's limits and solver.
static app_world* world(fixture* f, uint32_t tick_hz) {
    return world_with(f, tick_hz, f->app->cfg.world_solver);
}

// Runs the loop until every world handed to the pool is back.
static void settle(fixture* f) {
    while (app__sched_in_flight(f->app) > 0) {
        uv_run(&f->loop, UV_RUN_ONCE);
    }
}

// n humanoids in a stack of layers (as bench/bench.c's pile), killed with a
// push from a seeded generator so they tumble onto the ground and each
// other; every other one gets PD drives toward its animation (an active
// ragdoll), the rest stay limp. Built through sim.h on the idle world.
static void busy_scene(app_world* w, uint32_t n, uint32_t seed) {
    sim_entity_id* ids = calloc(n, sizeof *ids);
    assert_non_null(ids);
    assert_int_equal(sim_scene_pile(w->sim, n, seed, ids), SIM_OK);
    for (uint32_t i = 0; i < n; i += 2) {
        assert_int_equal(sim_character_set_drive(w->sim, ids[i], 400.0f, 40.0f, NULL, 0, 0.0f),
                         SIM_OK);
    }
    free(ids);
}

// Queues a command (JSON; "world" filled in) in w's inbox, as a client
// that has gone: it applies at w's next tick boundary, unanswered.
__attribute__((format(printf, 2, 3))) static void enqueue(app_world* w, const char* fmt, ...) {
    char body[256], text[320];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(body, sizeof body, fmt, ap);
    va_end(ap);
    snprintf(text, sizeof text, "{\"world\":%llu,%s}", (unsigned long long)w->id, body);
    rdp_command cmd;
    rdp_error err;
    assert_int_equal(rdp_command_decode(text, strlen(text), &cmd, &err), RDP_OK);
    assert_int_equal(app__world_enqueue(w, NULL, &cmd), RDP_OK);
}

static unsigned long long entity_at(app_world* w, uint32_t i) {
    return (unsigned long long)sim_entity_id_store(sim_world_entity_at(w->sim, i));
}

// ---------------------------------------------------------------------------
// Determinism across worker counts
// ---------------------------------------------------------------------------

enum { HASH_WORLDS = 3, HASH_TICKS = 60, HASH_RAGDOLLS = 12 };

// Three busy worlds with rigid-body solver `solver` stepped HASH_TICKS
// ticks in lockstep through the scheduler with `workers` workers, with
// commands queued along the way; their hashes into out[].
static void run_busy_worlds(uint32_t workers, sim_solver solver, uint64_t out[HASH_WORLDS]) {
    fixture f;
    start(&f, workers, true);
    app_world* ws[HASH_WORLDS];
    for (int i = 0; i < HASH_WORLDS; ++i) {
        ws[i] = world_with(&f, 60, solver);
        busy_scene(ws[i], HASH_RAGDOLLS, 1000u + (uint32_t)i);
    }
    for (int t = 0; t < HASH_TICKS; ++t) {
        for (int i = 0; i < HASH_WORLDS; ++i) {
            app_world* w = ws[i];
            // Commands at tick boundaries: while the other worlds step.
            if (t == 10) {
                enqueue(w,
                        "\"op\":\"kill\",\"entity\":%llu,\"hit_point\":[0,1,0],"
                        "\"impulse\":[30,0,-20]",
                        entity_at(w, 1));
                enqueue(w, "\"op\":\"spawn_ball\",\"position\":[0,4,0],\"velocity\":[1,-5,2]");
            }
            if (t == 30) {
                enqueue(w, "\"op\":\"set_params\",\"gravity\":[0.5,-9,0],\"friction\":0.7");
                enqueue(w, "\"op\":\"set_drive\",\"entity\":%llu,\"kp\":0,\"kd\":0",
                        entity_at(w, 0));
            }
            if (t == 45) {
                enqueue(w, "\"op\":\"despawn\",\"entity\":%llu", entity_at(w, 2));
            }
            assert_true(app__sched_tick_now(f.app, w));
        }
        settle(&f);
    }
    for (int i = 0; i < HASH_WORLDS; ++i) {
        assert_false(ws[i]->busy);
        assert_true(sim_world_tick(ws[i]->sim) == HASH_TICKS);
        // The commands applied: one ragdoll despawned, one ball spawned.
        assert_int_equal(sim_world_entity_count(ws[i]->sim), HASH_RAGDOLLS);
        assert_true(sim_world_params(ws[i]->sim).gravity.x == 0.5f);
        assert_true(ws[i]->tick_stats.count == HASH_TICKS);
        // The solver asked for stepped the bodies: the soft step colours
        // its constraints (more than one colour in a pile), XPBD does not.
        sim_tick_stats stats = sim_world_tick_stats(ws[i]->sim);
        if (solver == SIM_SOLVER_SOFT_STEP) {
            assert_true(stats.colours > 1);
        } else {
            assert_int_equal(stats.colours, 0);
        }
        out[i] = sim_world_hash(ws[i]->sim);
    }
    stop(&f);
}

// The busy worlds with `solver` hash the same with 0, 1, 2 and 4 workers.
static void check_hash_across_workers(sim_solver solver) {
    const uint32_t counts[] = {0, 1, 2, 4};
    uint64_t hashes[4][HASH_WORLDS];
    for (size_t k = 0; k < 4; ++k) {
        run_busy_worlds(counts[k], solver, hashes[k]);
    }
    for (int i = 0; i < HASH_WORLDS; ++i) {
        for (size_t k = 1; k < 4; ++k) {
            if (hashes[k][i] != hashes[0][i]) {
                print_error("world %d: %016llx with %u workers, %016llx on the loop thread\n", i,
                            (unsigned long long)hashes[k][i], counts[k],
                            (unsigned long long)hashes[0][i]);
            }
            assert_true(hashes[k][i] == hashes[0][i]);
        }
        // Different scenes, different states: the hash is not a constant.
        for (int j = 0; j < i; ++j) {
            assert_true(hashes[0][i] != hashes[0][j]);
        }
    }
}

static void test_sched_world_hash_is_the_same_with_0_1_2_and_4_workers(void** state) {
    (void)state;
    check_hash_across_workers(SIM_SOLVER_XPBD);
}

static void test_sched_soft_step_world_hash_is_the_same_with_0_1_2_and_4_workers(void** state) {
    (void)state;
    check_hash_across_workers(SIM_SOLVER_SOFT_STEP);
}

// ---------------------------------------------------------------------------
// Worlds destroyed and servers shut down with steps in flight
// ---------------------------------------------------------------------------

static void test_sched_destroying_a_world_while_it_steps_is_safe(void** state) {
    (void)state;
    const uint32_t counts[] = {0, 1, 2};
    for (size_t k = 0; k < 3; ++k) {
        fixture f;
        start(&f, counts[k], true);
        app_world* a = world(&f, 60);
        app_world* b = world(&f, 60);
        app_world* c = world(&f, 60);
        busy_scene(a, 40, 1);
        busy_scene(b, 40, 2);
        busy_scene(c, 10, 3);
        assert_true(app__sched_tick_now(f.app, a));
        assert_true(app__sched_tick_now(f.app, b));
        // Both are the pool's now (with one worker b waits in its queue):
        // a second tick is refused, a command waits for the next boundary.
        assert_true(a->busy && b->busy);
        assert_false(app__sched_tick_now(f.app, a));
        enqueue(a, "\"op\":\"spawn_ball\",\"position\":[0,4,0]");
        enqueue(b, "\"op\":\"spawn_ball\",\"position\":[0,4,0]");
        // What destroy_world does: at once, whatever the workers are doing.
        uint64_t ida = a->id, idb = b->id;
        app__world_destroy(f.app, a);
        app__world_destroy(f.app, b);
        assert_null(app__world_find(f.app, ida));
        assert_null(app__world_find(f.app, idb));
        assert_int_equal(f.app->world_count, 1);
        // The registry's lists and views no longer see them, though they
        // are still in flight.
        rdp_world_info infos[2];
        assert_int_equal(app__world_infos(f.app, infos), 1);
        assert_true(infos[0].world == c->id);
        assert_int_equal(app__sched_in_flight(f.app), 2);
        // They come back and are freed (ASan: no leak, no use after free);
        // the other world goes on.
        settle(&f);
        assert_true(app__sched_tick_now(f.app, c));
        settle(&f);
        assert_true(sim_world_tick(c->sim) == 1);
        // A world created now may take a freed slot.
        app_world* d = world(&f, 60);
        busy_scene(d, 40, 4);
        // Shut down with steps in flight: the server waits for them.
        assert_true(app__sched_tick_now(f.app, c));
        assert_true(app__sched_tick_now(f.app, d));
        stop(&f);
    }
}

// ---------------------------------------------------------------------------
// The loop thread while a world steps
// ---------------------------------------------------------------------------

typedef struct probe {
    uv_timer_t timer;
    app_world* w;
    uint64_t fired_ns;
    bool busy_then;
} probe;

static void on_probe(uv_timer_t* t) {
    probe* p = t->data;
    p->fired_ns = uv_hrtime();
    p->busy_then = p->w->busy;
    uv_close((uv_handle_t*)t, NULL);
}

static void test_sched_the_loop_runs_while_a_world_steps(void** state) {
    (void)state;
    fixture f;
    start(&f, 1, true);
    app_world* w = world(&f, 60);
    busy_scene(w, 100, 7); // about 20 ms a step in a Release build, more in a sanitized one
    probe p = {.w = w};
    uv_timer_init(&f.loop, &p.timer);
    p.timer.data = &p;
    assert_true(app__sched_tick_now(f.app, w));
    uint64_t handed = uv_hrtime(); // the step began after this
    uv_timer_start(&p.timer, on_probe, 1, 0);
    settle(&f);
    assert_true(p.fired_ns != 0);
    assert_true(p.busy_then);
    // The step began after `handed` and took step_ns, so it ended after
    // handed + step_ns: a timer that fired before then ran during it.
    assert_true(p.fired_ns < handed + w->step_ns[0]);
    stop(&f);
}

// ---------------------------------------------------------------------------
// Catch-up and overruns on the real clock
// ---------------------------------------------------------------------------

static void test_sched_a_world_behind_catches_up_then_drops_the_rest(void** state) {
    (void)state;
    fixture f;
    start(&f, 2, false);
    // A 1 Hz world whose clock was last read 10.5 s ago: it owes 10 ticks.
    // The first wake-up runs max_catchup (4) of them back to back in one
    // job and counts the other 6 as overruns; the next is due in 0.5 s.
    app_world* w = world(&f, 1);
    assert_int_equal(f.app->cfg.max_catchup, 4);
    w->last_ns = uv_hrtime() - 10500000000ull;
    uint64_t deadline = uv_hrtime() + 5000000000ull;
    while ((w->busy || sim_world_tick(w->sim) < 4) && uv_hrtime() < deadline) {
        uv_run(&f.loop, UV_RUN_ONCE);
    }
    assert_false(w->busy);
    assert_true(sim_world_tick(w->sim) == 4);
    assert_true(w->overruns == 6);
    assert_true(w->tick_stats.count == 4); // each tick of the batch counted
    assert_true(w->acc_ns < w->period_ns);
    stop(&f);
}

// A catch-up batch ends at the first tick a subscriber is due a snapshot,
// so every due tick gets its own (what a 30 Hz subscriber of a 60 Hz world
// sees: every second tick). Subscriptions of clients without a session:
// nothing is sent here.
static void test_sched_catch_up_batches_end_where_a_snapshot_is_due(void** state) {
    (void)state;
    fixture f;
    start(&f, 1, true);
    app_world* w = world(&f, 60);
    assert_int_equal(app__broadcast_ticks_until_due(w, 4), 4); // nobody watches
    app_client c, d;
    memset(&c, 0, sizeof c);
    memset(&d, 0, sizeof d);
    rdp_code err = RDP_OK;
    app_sub* sc = app__subscribe(w, &c, RDP_FORMAT_JSON, 30, &err);
    assert_non_null(sc);
    // The first snapshot is due at the next tick; after one, every second.
    assert_int_equal(app__broadcast_ticks_until_due(w, 4), 1);
    sc->acc = 0;
    assert_int_equal(app__broadcast_ticks_until_due(w, 4), 2);
    // 7 Hz from 60: due after ceil(60 / 7) = 9 ticks from acc 0; the
    // sooner of the two subscribers bounds the batch.
    app_sub* sd = app__subscribe(w, &d, RDP_FORMAT_BINARY, 7, &err);
    assert_non_null(sd);
    sd->acc = 0;
    assert_int_equal(app__broadcast_ticks_until_due(w, 16), 2);
    assert_true(app__unsubscribe(w, &c));
    assert_int_equal(app__broadcast_ticks_until_due(w, 16), 9);
    sd->acc = 59; // due at the next tick
    assert_int_equal(app__broadcast_ticks_until_due(w, 16), 1);
    assert_true(app__unsubscribe(w, &d));
    assert_int_equal(app__broadcast_ticks_until_due(w, 3), 3);
    // A subscription made while the world steps counts only the last tick
    // of the batch in flight (it came before that tick's boundary).
    assert_false(app__subscribe(w, &c, RDP_FORMAT_JSON, 30, &err)->mid_batch);
    assert_true(app__sched_tick_now(f.app, w));
    assert_true(app__subscribe(w, &d, RDP_FORMAT_JSON, 30, &err)->mid_batch);
    assert_true(app__unsubscribe(w, &c));
    assert_true(app__unsubscribe(w, &d));
    settle(&f);
    stop(&f);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pool_runs_every_job_once_and_hands_it_back),
        cmocka_unit_test(test_pool_closed_with_jobs_queued_hands_back_every_one),
        cmocka_unit_test(test_sched_world_hash_is_the_same_with_0_1_2_and_4_workers),
        cmocka_unit_test(test_sched_soft_step_world_hash_is_the_same_with_0_1_2_and_4_workers),
        cmocka_unit_test(test_sched_destroying_a_world_while_it_steps_is_safe),
        cmocka_unit_test(test_sched_the_loop_runs_while_a_world_steps),
        cmocka_unit_test(test_sched_a_world_behind_catches_up_then_drops_the_rest),
        cmocka_unit_test(test_sched_catch_up_batches_end_where_a_snapshot_is_due),
    };
    // RD_TEST_FILTER=pattern runs the tests whose names match (cmocka's
    // filter: * and ? wildcards).
    const char* filter = getenv("RD_TEST_FILTER");
    if (filter != NULL) {
        cmocka_set_test_filter(filter);
    }
    return cmocka_run_group_tests_name("sched", tests, NULL, NULL);
}
