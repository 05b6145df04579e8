/*
 * test_persist.c: durable worlds in a real server in this process
 * (server/app/persist.c, state_file.c, journal.c, replay.c).
 *
 * What is asserted is what durability means, not what the code computes:
 * a world restarted from its files is the world that was stopped (same
 * id, entities, parameters, tick and sim_world_hash(), its queued commands
 * still to apply); an offline replay of a state file and its journal
 * passes through the live world's hash at every tick (the live hashes are
 * recorded here as the world steps); a file that is truncated, damaged or
 * from another version is refused with the file and the reason named,
 * and the server starts with the rest; a journal's torn last record is
 * cut off, never fatal.
 */
#define _DEFAULT_SOURCE // mkdtemp

// cmocka.h needs these four before it (cmocka docs); keep the order.
// clang-format off
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
// clang-format on

#include "app_internal.h"
#include "persist.h"
#include "shipped_library.h"
#include "templates.h"
#include "world.h" // sim__entity_get, the bodies: a speed no command could give

#include <cJSON.h>

#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct fixture {
    uv_loop_t loop;
    sim_library* lib;
    app_server* app;
    char dir[64];
    FILE* log;
    bool done;
} fixture;

static sim_library* g_lib;
static app_fsync g_fsync = APP_FSYNC_EVERYSEC; // --journal-fsync of the next start_in()

static int setup(void** state) {
    (void)state;
    g_lib = rd_test_shipped_library();
    return g_lib != NULL ? 0 : -1;
}

static int teardown(void** state) {
    (void)state;
    sim_library_destroy(g_lib);
    return 0;
}

// A server (one worker, paused clock, no demo) keeping its worlds in dir.
static void start_in(fixture* f, const char* dir, bool demo) {
    memset(f, 0, sizeof *f);
    snprintf(f->dir, sizeof f->dir, "%s", dir);
    assert_int_equal(uv_loop_init(&f->loop), 0);
    f->log = tmpfile();
    assert_non_null(f->log);
    app_config cfg = app_config_default();
    cfg.port = 0;
    cfg.demo = demo;
    cfg.web_root = NULL;
    cfg.workers = 1;
    cfg.library = g_lib;
    cfg.max_solver_work = 0;
    cfg.log_level = APP_LOG_INFO;
    cfg.log_stream = f->log;
    cfg.state_dir = f->dir;
    cfg.autosave_s = 0;
    cfg.journal_fsync = g_fsync;
    assert_int_equal(app_server_start(&f->loop, &cfg, &f->app), 0);
    app__sched_pause(f->app, true);
}

static void new_dir(char* out, size_t cap) {
    snprintf(out, cap, "/tmp/rd_persist_XXXXXX");
    assert_non_null(mkdtemp(out));
}

static void on_done(void* arg) {
    ((fixture*)arg)->done = true;
}

static void stop(fixture* f) {
    app_server_shutdown(f->app, on_done, f);
    uv_run(&f->loop, UV_RUN_DEFAULT);
    assert_true(f->done);
    assert_int_equal(uv_loop_close(&f->loop), 0);
}

// The log so far, as one string (static storage).
static const char* log_text(fixture* f) {
    static char buf[1 << 16];
    fflush(f->log);
    long at = ftell(f->log);
    rewind(f->log);
    size_t n = fread(buf, 1, sizeof buf - 1, f->log);
    buf[n] = '\0';
    fseek(f->log, at, SEEK_SET);
    return buf;
}

static void settle(fixture* f) {
    while (app__sched_in_flight(f->app) > 0 || f->app->saves_in_flight > 0 ||
           f->app->syncs_in_flight > 0) {
        uv_run(&f->loop, UV_RUN_ONCE);
    }
}

__attribute__((format(printf, 2, 3))) static void enqueue(app_world* w, const char* fmt, ...) {
    char body[256], text[320];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(body, sizeof body, fmt, ap);
    va_end(ap);
    snprintf(text, sizeof text, "{\"world\":%" PRIu64 ",%s}", w->id, body);
    rdp_command cmd;
    rdp_error err;
    assert_int_equal(rdp_command_decode(text, strlen(text), &cmd, &err), RDP_OK);
    assert_int_equal(app__world_enqueue(w, NULL, &cmd), RDP_OK);
}

static unsigned long long entity_at(app_world* w, uint32_t i) {
    return (unsigned long long)sim_entity_id_store(sim_world_entity_at(w->sim, i));
}

// A world made as create_world makes it (its first state file written).
static app_world* new_world(fixture* f, const char* name, uint32_t tick_hz, sim_solver solver) {
    app_world* w = NULL;
    assert_int_equal(app__world_create(f->app, name, tick_hz, f->app->cfg.world_limits, solver, &w),
                     RDP_OK);
    char why[256];
    assert_int_equal(app__persist_world_created(f->app, w, why, sizeof why), 0);
    return w;
}

static void remove_dir(const char* dir) {
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

static void tick(fixture* f, app_world* w) {
    assert_true(app__sched_tick_now(f->app, w));
    settle(f);
}

// Commands of every kind at fixed ticks: characters spawned, killed (now
// and at a past tick), driven, balls thrown, parameters changed, a despawn.
static void script(app_world* w, int t) {
    if (t == 0) {
        for (int i = 0; i < 6; ++i) {
            enqueue(w, "\"op\":\"spawn_character\",\"position\":[%d,0,%d],\"facing\":%d", i % 3,
                    i / 3, i);
        }
        enqueue(w, "\"op\":\"spawn_cloth\",\"origin\":[4,3,0],\"cols\":10,\"rows\":10,"
                   "\"spacing\":0.1,\"pin\":\"top\"");
    }
    if (t == 20) {
        for (uint32_t i = 0; i < 4; ++i) {
            enqueue(w,
                    "\"op\":\"kill\",\"entity\":%llu,\"hit_point\":[0,1.4,0],"
                    "\"impulse\":[%d,0,-20]",
                    entity_at(w, i), 10 * (int)i);
        }
    }
    if (t == 30) {
        enqueue(w, "\"op\":\"add_box\",\"center\":[3,0.5,3],\"half_extents\":[1,0.5,1]");
    }
    if (t == 40) {
        enqueue(w, "\"op\":\"spawn_ball\",\"position\":[0,4,0],\"velocity\":[1,-5,2]");
        enqueue(w, "\"op\":\"set_drive\",\"entity\":%llu,\"kp\":300,\"kd\":30", entity_at(w, 0));
        enqueue(w, "\"op\":\"play\",\"entity\":%llu,\"clip\":\"walk\"", entity_at(w, 4));
    }
    if (t == 60) {
        // Judged at ticks 45 and 55 (lag compensation; the walker has gone
        // 0.3 m since 45): the journal keeps what they resolved to, since a
        // replay has no pose history.
        enqueue(w,
                "\"op\":\"kill\",\"entity\":%llu,\"hit_point\":[1,1.5,1],"
                "\"impulse\":[0,0,30],\"seen_tick\":45",
                entity_at(w, 4));
        enqueue(w,
                "\"op\":\"apply_impulse\",\"entity\":%llu,\"bone\":\"chest\","
                "\"point\":[0.1,1.3,0],\"impulse\":[5,0,0],\"seen_tick\":55",
                entity_at(w, 0));
        enqueue(w, "\"op\":\"raycast\",\"origin\":[0,3,0],\"direction\":[0,-1,0],"
                   "\"seen_tick\":50");
    }
    if (t == 70) {
        enqueue(w, "\"op\":\"set_params\",\"gravity\":[0.5,-9,0],\"friction\":0.7");
        enqueue(w, "\"op\":\"start_getup\",\"entity\":%llu", entity_at(w, 1));
    }
    if (t == 110) {
        enqueue(w, "\"op\":\"despawn\",\"entity\":%llu", entity_at(w, 5));
    }
}

// A session: commands through the inbox, ticks through the scheduler,
// save_world at tick 50 (its file replaces the one written at creation,
// and the journal keeps what follows); every tick's live hash recorded.
// Then `ragdolld --replay` of the state file and journal must print the
// same hash at every tick from the state's on.
static void test_a_replay_passes_through_every_live_hash(void** state) {
    (void)state;
    char dir[64];
    new_dir(dir, sizeof dir);
    fixture f;
    start_in(&f, dir, false);
    app_world* w = new_world(&f, "session", 60, SIM_SOLVER_SOFT_STEP);
    enum { TICKS = 150 };
    static uint64_t live[TICKS + 1];
    live[0] = sim_world_hash(w->sim);
    for (int t = 0; t < TICKS; ++t) {
        script(w, t);
        if (t == 50) {
            w->save_wanted = true; // as save_world does: at this boundary
        }
        tick(&f, w);
        live[t + 1] = sim_world_hash(w->sim);
    }
    assert_true(w->seq >= 15); // the commands applied and were counted
    sim_character_view cv;     // the kill judged at tick 45 applied
    assert_int_equal(sim_character_get_view(w->sim, sim_world_entity_at(w->sim, 4), &cv), SIM_OK);
    assert_int_equal(cv.state, SIM_CHAR_RAGDOLL);
    char state_path[128], journal_path[128];
    snprintf(state_path, sizeof state_path, "%s/world-%" PRIu64 ".state", dir, w->id);
    snprintf(journal_path, sizeof journal_path, "%s/world-%" PRIu64 ".journal", dir, w->id);
    FILE* out = tmpfile();
    FILE* err = tmpfile();
    app_config cfg = f.app->cfg;
    assert_int_equal(app_replay(&cfg, state_path, journal_path, TICKS, true, out, err), 0);
    rewind(out);
    uint64_t t = 0, h = 0;
    int lines = 0;
    uint64_t first = UINT64_MAX;
    while (fscanf(out, "%" SCNu64 " %" SCNx64, &t, &h) == 2) {
        assert_true(t <= TICKS);
        if (h != live[t]) {
            fail_msg("tick %" PRIu64 ": replay %016" PRIx64 ", live %016" PRIx64, t, h, live[t]);
        }
        first = first < t ? first : t;
        lines++;
    }
    assert_true(first == 50); // the save at tick 50 is the state file now
    assert_int_equal(lines, TICKS - 50 + 1);
    // Up to tick 100, before the journal's end: the hash of tick 100, and
    // nothing said of a torn or damaged journal (there is none).
    FILE* out2 = tmpfile();
    FILE* err2 = tmpfile();
    assert_int_equal(app_replay(&cfg, state_path, journal_path, 100, false, out2, err2), 0);
    char said[512] = "";
    rewind(err2);
    assert_non_null(fgets(said, sizeof said, err2));
    char expect[64];
    snprintf(expect, sizeof expect, "tick 100, hash %016" PRIx64 "\n", live[100]);
    assert_non_null(strstr(said, expect));
    assert_null(strstr(said, "torn"));
    assert_null(strstr(said, "damaged"));
    fclose(out2);
    fclose(err2);
    fclose(out);
    fclose(err);
    stop(&f);
    remove_dir(dir);
}

// Shutdown saves; a new server on the same directory has the world back:
// its id, name, entities, parameters, tick and hash, and the command that
// was still queued applies at its first tick.
static void test_a_restart_brings_the_worlds_back(void** state) {
    (void)state;
    char dir[64];
    new_dir(dir, sizeof dir);
    fixture f;
    start_in(&f, dir, true); // the demo, and one more
    app_world* w = new_world(&f, "second", 30, SIM_SOLVER_XPBD);
    for (int t = 0; t < 80; ++t) {
        script(w, t);
        tick(&f, w);
    }
    enqueue(w, "\"op\":\"spawn_ball\",\"position\":[3,3,3]"); // queued at the stop
    const uint64_t id = w->id, hash = sim_world_hash(w->sim), tick80 = sim_world_tick(w->sim);
    const uint32_t entities = sim_world_entity_count(w->sim);
    const unsigned long long first = entity_at(w, 0);
    assert_int_equal(f.app->world_count, 2);
    stop(&f);

    start_in(&f, dir, true);
    assert_int_equal(f.app->world_count, 2); // no second demo: the saved one came back
    app_world* b = app__world_find(f.app, id);
    assert_non_null(b);
    assert_string_equal(b->name, "second");
    assert_int_equal(b->tick_hz, 30);
    assert_int_equal(b->def.solver, SIM_SOLVER_XPBD);
    assert_true(sim_world_tick(b->sim) == tick80);
    assert_true(sim_world_hash(b->sim) == hash);
    assert_int_equal(sim_world_entity_count(b->sim), entities);
    assert_true(entity_at(b, 0) == first);
    assert_true(sim_world_params(b->sim).gravity.x == 0.5f);
    assert_int_equal(b->inbox_count, 1);
    tick(&f, b);
    assert_int_equal(sim_world_entity_count(b->sim), entities + 1);
    // A world made now gets a new id, never a saved one's.
    app_world* c = NULL;
    assert_int_equal(
        app__world_create(f.app, "third", 60, f.app->cfg.world_limits, SIM_SOLVER_SOFT_STEP, &c),
        RDP_OK);
    assert_true(c->id > id);
    assert_non_null(strstr(log_text(&f), "event=world_loaded"));
    stop(&f);
    remove_dir(dir);
}

static void write_file(const char* dir, const char* name, const uint8_t* p, size_t n) {
    char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE* fp = fopen(path, "wb");
    assert_non_null(fp);
    assert_true(fwrite(p, 1, n, fp) == n);
    fclose(fp);
}

// A good file and four bad ones: the good world loads, each bad one is
// refused with its file and reason in the log, and new worlds get ids past
// every file's.
static void test_bad_state_files_are_refused_and_the_rest_load(void** state) {
    (void)state;
    char dir[64];
    new_dir(dir, sizeof dir);
    fixture f;
    start_in(&f, dir, true); // world 1, the demo
    stop(&f);
    char path[128];
    snprintf(path, sizeof path, "%s/world-1.state", dir);
    uint8_t* good = NULL;
    size_t len = 0;
    char why[256];
    assert_int_equal(app__file_read(path, &good, &len, why, sizeof why), 0);
    assert_true(len > 1000);
    uint8_t* bad = malloc(len);
    // 5: truncated; 6: one bit flipped in the body; 7: another version;
    // 8: not a state file at all.
    memcpy(bad, good, len);
    write_file(dir, "world-5.state", bad, len / 2);
    bad[len / 3] ^= 0x10;
    write_file(dir, "world-6.state", bad, len);
    memcpy(bad, good, len);
    bad[12] = 99; // the format version
    write_file(dir, "world-7.state", bad, len);
    write_file(dir, "world-8.state", (const uint8_t*)"hello, world\n", 13);
    free(bad);
    free(good);

    start_in(&f, dir, true);
    assert_int_equal(f.app->world_count, 1);
    assert_non_null(app__world_find(f.app, 1));
    const char* log = log_text(&f);
    printf("%s", log);
    const struct {
        const char* file;
        const char* reason;
    } want[] = {
        {"world-5.state", "truncated"},
        {"world-6.state", "CRC-32"},
        {"world-7.state", "format version 99"},
        {"world-8.state", "not a ragdolld state file"},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; ++i) {
        const char* at = strstr(log, want[i].file);
        assert_non_null(at);
        const char* eol = strchr(at, '\n');
        const char* reason = strstr(at, want[i].reason);
        assert_non_null(reason);
        assert_true(eol == NULL || reason < eol);
    }
    app_world* c = NULL;
    assert_int_equal(
        app__world_create(f.app, "next", 60, f.app->cfg.world_limits, SIM_SOLVER_SOFT_STEP, &c),
        RDP_OK);
    assert_int_equal(c->id, 9);
    stop(&f);
    remove_dir(dir);
}

// A journal whose last record was torn by a crash: the server loads the
// world with every whole record applied, says so, and cuts the tail.
static void test_a_torn_journal_tail_is_cut_not_fatal(void** state) {
    (void)state;
    char dir[64];
    new_dir(dir, sizeof dir);
    fixture f;
    start_in(&f, dir, false);
    app_world* w = new_world(&f, "torn", 60, SIM_SOLVER_SOFT_STEP);
    for (int t = 0; t < 45; ++t) {
        script(w, t);
        tick(&f, w);
    }
    const uint64_t seq = w->seq, bytes = w->journal_bytes, live_tick = sim_world_tick(w->sim);
    const uint64_t hash = sim_world_hash(w->sim);
    // A crash now: no shutdown save. The journal gets half a record more.
    char jpath[128];
    snprintf(jpath, sizeof jpath, "%s/world-%" PRIu64 ".journal", dir, w->id);
    FILE* j = fopen(jpath, "ab");
    assert_non_null(j);
    const uint8_t half[20] = {200, 4, 0, 0, 1, 2, 3, 4, 1};
    fwrite(half, 1, sizeof half, j);
    fclose(j);
    // Leave without saving (as a kill -9 would): drop the state dir from
    // the config so that the shutdown writes nothing.
    f.app->cfg.state_dir = NULL;
    stop(&f);

    start_in(&f, dir, false);
    FILE* jj = fopen(jpath, "rb");
    fseek(jj, 0, SEEK_END);
    assert_true((uint64_t)ftell(jj) == bytes); // cut back to the last whole record
    fclose(jj);
    app_world* b = app__world_find(f.app, 1);
    assert_non_null(b);
    assert_true(b->seq == seq);
    // The journal's last record is of tick 40's commands: the world is
    // brought there; the live one stepped on to 45, and so does this one.
    assert_true(sim_world_tick(b->sim) == 40);
    while (sim_world_tick(b->sim) < live_tick) {
        tick(&f, b);
    }
    assert_true(sim_world_hash(b->sim) == hash);
    assert_non_null(strstr(log_text(&f), "event=journal_torn"));
    stop(&f);
    remove_dir(dir);
}

// A blow-up rolls back. (1) A valid command does it: 10⁴ N·s on a 1 g
// ball (10⁷ m/s): the world is stepped again without it from its kept
// state, the ball is still there, the command is dropped and the journal
// says so, so a replay of the files gives the live hash. (2) A speed no
// command gave (10³⁰ m/s written into the ball, past every check):
// stepping again with the same commands is enough. Another world steps on
// untouched.
static void test_a_blow_up_is_rolled_back(void** state) {
    (void)state;
    char dir[64];
    new_dir(dir, sizeof dir);
    fixture f;
    start_in(&f, dir, false);
    app_world* a = new_world(&f, "a", 60, SIM_SOLVER_SOFT_STEP);
    app_world* b = new_world(&f, "b", 60, SIM_SOLVER_SOFT_STEP);
    enqueue(a, "\"op\":\"spawn_ball\",\"position\":[0,1,0],\"mass\":0.001,\"radius\":0.1");
    enqueue(a, "\"op\":\"spawn_character\",\"position\":[3,0,0]");
    enqueue(b, "\"op\":\"spawn_character\",\"position\":[0,0,0]");
    for (int t = 0; t < 30; ++t) {
        tick(&f, a);
        tick(&f, b);
    }
    const unsigned long long ball = entity_at(a, 0);
    const uint32_t entities = sim_world_entity_count(a->sim);

    // (1) Through the protocol.
    enqueue(a, "\"op\":\"apply_impulse\",\"entity\":%llu,\"impulse\":[10000,0,0]", ball);
    tick(&f, a);
    tick(&f, b);
    assert_int_equal(a->rollbacks, 1);
    assert_true(sim_world_quarantined(a->sim) == 0);
    assert_true(sim_world_is_finite(a->sim));
    assert_int_equal(sim_world_entity_count(a->sim), entities);
    assert_true(sim_entity_is_valid(a->sim, sim_entity_id_load(ball)));
    const char* log = log_text(&f);
    assert_non_null(strstr(log, "event=rolled_back"));
    assert_non_null(strstr(log, "dropped=apply_impulse"));

    // (2) Through the simulator.
    sim__entity* e = sim__entity_get(a->sim, sim_entity_id_load(ball));
    assert_non_null(e);
    sim__body_wake(a->sim, e->b_first);   // resting, it would not move
    a->sim->body[e->b_first].v.x = 1e30f; // finite, past every bound
    tick(&f, a);
    tick(&f, b);
    assert_int_equal(a->rollbacks, 2);
    assert_true(sim_world_quarantined(a->sim) == 0);
    assert_true(sim_world_is_finite(a->sim));
    assert_true(sim_entity_is_valid(a->sim, sim_entity_id_load(ball)));
    for (int t = 0; t < 20; ++t) {
        tick(&f, a);
        tick(&f, b);
    }
    assert_true(sim_world_tick(b->sim) == sim_world_tick(a->sim));
    assert_int_equal(b->rollbacks, 0);
    assert_true(sim_world_quarantined(b->sim) == 0);

    // The journal holds the dropped command and its drop record: a replay
    // of the files is the live world.
    char state_path[128], journal_path[128];
    snprintf(state_path, sizeof state_path, "%s/world-%" PRIu64 ".state", dir, a->id);
    snprintf(journal_path, sizeof journal_path, "%s/world-%" PRIu64 ".journal", dir, a->id);
    FILE* out = tmpfile();
    FILE* err = tmpfile();
    app_config cfg = f.app->cfg;
    const uint64_t now = sim_world_tick(a->sim);
    assert_int_equal(app_replay(&cfg, state_path, journal_path, now, true, out, err), 0);
    rewind(out);
    uint64_t t = 0, h = 0, last_t = 0, last_h = 0;
    while (fscanf(out, "%" SCNu64 " %" SCNx64, &t, &h) == 2) {
        last_t = t;
        last_h = h;
    }
    assert_true(last_t == now);
    assert_true(last_h == sim_world_hash(a->sim));
    fclose(out);
    fclose(err);
    stop(&f);
    remove_dir(dir);
}

// The files of world id in dir: "state" or "journal" (+ suffix).
static void file_of(const char* dir, uint64_t id, const char* kind, char* out, size_t cap) {
    snprintf(out, cap, "%s/world-%" PRIu64 ".%s", dir, id, kind);
}

static long file_size(const char* path) {
    struct stat st;
    return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

// Leaves as a kill -9 would: no shutdown save.
static void crash(fixture* f) {
    f->app->cfg.state_dir = NULL;
    stop(f);
}

static void spawn_ball_at(app_world* w, int x) {
    enqueue(w, "\"op\":\"spawn_ball\",\"position\":[%d,3,0]", x);
}

static bool metric_says(fixture* f, const char* line) {
    size_t len = 0;
    char* text = app__metrics_render(f->app, &len);
    assert_non_null(text);
    bool found = strstr(text, line) != NULL;
    free(text);
    return found;
}

// Steps w 10 ticks more, leaves as a kill -9 would, and starts a server on
// dir: its world 1 has `seq` commands, as many balls, and at w's last tick
// w's hash. Stops it and removes dir.
static void crash_and_compare(fixture* f, app_world* w, const char* dir, uint64_t seq) {
    for (int t = 0; t < 10; ++t) {
        tick(f, w);
    }
    const uint64_t live_tick = sim_world_tick(w->sim), hash = sim_world_hash(w->sim);
    crash(f);
    start_in(f, dir, false);
    app_world* b = app__world_find(f->app, 1);
    assert_non_null(b);
    assert_true(b->seq == seq);
    assert_int_equal(sim_world_entity_count(b->sim), (uint32_t)seq);
    while (sim_world_tick(b->sim) < live_tick) {
        tick(f, b);
    }
    assert_true(sim_world_hash(b->sim) == hash);
    stop(f);
    remove_dir(dir);
}

// A disk that fills: a file-size limit on this process (RLIMIT_FSIZE, as
// `ulimit -f`: a write past it fails with EFBIG as a full disk's fails
// with ENOSPC) a little past the journal's end. The boundary whose write
// failed had applied (its records are kept); the world steps on but
// refuses the commands that would change it, and /metrics says a journal
// is down. Once writes fit again (a second on), the kept records are
// written (the part of one that fitted cut first) and commands apply. A
// crash then: a new server has every command that applied, none that was
// refused, and the live hash.
static void test_a_full_disk_refuses_commands_until_the_journal_is_written(void** state) {
    (void)state;
    char dir[64];
    new_dir(dir, sizeof dir);
    fixture f;
    start_in(&f, dir, false);
    app_world* w = new_world(&f, "full", 60, SIM_SOLVER_SOFT_STEP);
    for (int i = 0; i < 60; ++i) { // a journal longer than the log ever gets
        spawn_ball_at(w, i % 8);
    }
    tick(&f, w);
    assert_true(w->seq == 60);
    assert_true(w->journal_bytes > 60 * 1000);
    void (*was)(int) = signal(SIGXFSZ, SIG_IGN);
    struct rlimit old, lim;
    assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
    lim = old;
    lim.rlim_cur = (rlim_t)w->journal_bytes + 100; // part of one more record fits
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
    spawn_ball_at(w, 1);
    tick(&f, w); // applied; its record could not be written
    assert_true(w->seq == 61);
    assert_true(w->journal_failed);
    assert_non_null(strstr(log_text(&f), "event=journal_failed"));
    assert_non_null(strstr(log_text(&f), "File too large"));
    assert_true(metric_says(&f, "\nragdolld_journals_down 1\n"));
    assert_true(metric_says(&f, "\nragdolld_journal_failures_total 1\n"));
    const uint64_t before = sim_world_tick(w->sim);
    for (int t = 0; t < 5; ++t) {
        spawn_ball_at(w, 2); // refused, every time
        tick(&f, w);
    }
    assert_true(sim_world_tick(w->sim) == before + 5); // it steps on
    assert_true(w->seq == 61);
    assert_int_equal(sim_world_entity_count(w->sim), 61);

    // Room on the disk again.
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
    signal(SIGXFSZ, was);
    usleep(1100 * 1000);
    spawn_ball_at(w, 3);
    tick(&f, w);
    assert_false(w->journal_failed);
    assert_true(w->seq == 62);
    assert_int_equal(sim_world_entity_count(w->sim), 62);
    assert_non_null(strstr(log_text(&f), "event=journal_recovered"));
    assert_non_null(strstr(log_text(&f), "its records are written again"));
    assert_true(metric_says(&f, "\nragdolld_journals_down 0\n"));
    crash_and_compare(&f, w, dir, 62);
}

// A failed fsync (--journal-fsync always; a pipe stands in for the
// journal, which fdatasync() refuses): what the kernel could not write
// may be gone from its cache, so only a state file brings the world back.
// Commands are refused until one lands (tried a second on), then the
// journal starts afresh from it. A crash after: the new server has the
// live world.
static void test_a_failed_fsync_comes_back_through_a_state_file(void** state) {
    (void)state;
    char dir[64];
    new_dir(dir, sizeof dir);
    fixture f;
    g_fsync = APP_FSYNC_ALWAYS;
    start_in(&f, dir, false);
    g_fsync = APP_FSYNC_EVERYSEC;
    app_world* w = new_world(&f, "fsync", 60, SIM_SOLVER_SOFT_STEP);
    spawn_ball_at(w, 0);
    tick(&f, w);
    int p[2];
    assert_int_equal(pipe(p), 0);
    assert_true(dup2(p[1], w->journal_fd) >= 0);
    spawn_ball_at(w, 1);
    tick(&f, w); // written to the pipe; its fsync fails
    assert_true(w->journal_failed && w->journal_lost);
    assert_true(w->seq == 2);
    spawn_ball_at(w, 2);
    tick(&f, w); // refused
    assert_true(w->seq == 2);
    usleep(1100 * 1000);
    spawn_ball_at(w, 3);
    tick(&f, w); // a state file first, then the command
    assert_false(w->journal_failed);
    assert_true(w->seq == 3);
    assert_int_equal(sim_world_entity_count(w->sim), 3);
    assert_non_null(strstr(log_text(&f), "a state file holds the world"));
    close(p[0]);
    close(p[1]);
    crash_and_compare(&f, w, dir, 3);
}

// A new world whose first state file cannot be written (the state dir is
// gone) is not durable: app__persist_world_created() says why (create_world
// then refuses), and such a world refuses commands until a state file
// lands, as soon as the directory is back.
static void test_a_world_whose_state_cannot_be_written_is_not_durable(void** state) {
    (void)state;
    char dir[64];
    new_dir(dir, sizeof dir);
    fixture f;
    start_in(&f, dir, false);
    remove_dir(dir); // its .lock too: the server's lock is on a file gone with it
    app_world* w = NULL;
    assert_int_equal(
        app__world_create(f.app, "nowhere", 60, f.app->cfg.world_limits, SIM_SOLVER_SOFT_STEP, &w),
        RDP_OK);
    char why[256] = "";
    assert_int_equal(app__persist_world_created(f.app, w, why, sizeof why), -1);
    assert_non_null(strstr(why, "No such file or directory"));
    assert_true(app__journal_down(f.app, w));
    spawn_ball_at(w, 0);
    tick(&f, w);
    assert_int_equal(sim_world_entity_count(w->sim), 0); // refused
    assert_int_equal(mkdir(dir, 0700), 0);
    usleep(1100 * 1000);
    tick(&f, w); // the directory's lock taken again (its clock's second)
    usleep(1100 * 1000);
    spawn_ball_at(w, 0);
    tick(&f, w);
    assert_false(app__journal_down(f.app, w));
    assert_int_equal(sim_world_entity_count(w->sim), 1);
    char path[128];
    file_of(dir, w->id, "state", path, sizeof path);
    assert_true(file_size(path) > 0);
    file_of(dir, w->id, "journal", path, sizeof path);
    assert_true(file_size(path) > 32); // a head and the spawn
    stop(&f);
    remove_dir(dir);
}

// Another world's journal under this world's name (an operator's copy, a
// restore gone wrong): refused whole before anything of it applies, kept
// as world-2.journal.refused; world 2 is its state file, written again at
// once, so the next start finds its files in agreement.
static void test_another_worlds_journal_is_refused_before_anything_applies(void** state) {
    (void)state;
    char dir[64];
    new_dir(dir, sizeof dir);
    fixture f;
    start_in(&f, dir, false);
    app_world* a = new_world(&f, "a", 60, SIM_SOLVER_SOFT_STEP);
    app_world* b = new_world(&f, "b", 60, SIM_SOLVER_SOFT_STEP);
    for (int t = 0; t < 45; ++t) {
        script(a, t);
        tick(&f, a);
    }
    const uint64_t a_seq = a->seq;
    crash(&f); // world 2's state file is the one made at tick 0, empty
    (void)b;
    char from[128], to[128], cmd[300];
    file_of(dir, 1, "journal", from, sizeof from);
    file_of(dir, 2, "journal", to, sizeof to);
    snprintf(cmd, sizeof cmd, "cp '%s' '%s'", from, to);
    assert_int_equal(system(cmd), 0);

    start_in(&f, dir, false);
    app_world* b2 = app__world_find(f.app, 2);
    assert_non_null(b2);
    assert_true(sim_world_tick(b2->sim) == 0);
    assert_int_equal(sim_world_entity_count(b2->sim), 0);
    assert_true(b2->seq == 0);
    assert_non_null(strstr(log_text(&f), "event=journal_refused"));
    assert_non_null(strstr(log_text(&f), "is the journal of world 1, not of world 2"));
    file_of(dir, 2, "journal.refused", to, sizeof to);
    assert_true(file_size(to) == file_size(from));
    app_world* a2 = app__world_find(f.app, 1);
    assert_true(a2->seq == a_seq); // its own journal, whole
    assert_true(metric_says(&f, "\nragdolld_state_files_refused_total{file=\"journal\"} 1\n"));
    crash(&f);
    start_in(&f, dir, false);
    assert_null(strstr(log_text(&f), "refused"));
    assert_true(app__world_find(f.app, 2)->seq == 0);
    // world-2.journal.refused stays: no new world may be 2, even once the
    // world 2 there is destroyed and the server restarted.
    app__persist_remove_files(f.app, app__world_find(f.app, 2));
    app__world_destroy(f.app, app__world_find(f.app, 2));
    stop(&f);
    start_in(&f, dir, false);
    app_world* next = NULL;
    assert_int_equal(
        app__world_create(f.app, "next", 60, f.app->cfg.world_limits, SIM_SOLVER_SOFT_STEP, &next),
        RDP_OK);
    assert_true(next->id > 2);
    stop(&f);
    remove_dir(dir);
}

// A journal damaged in its middle (a bit flipped on the disk), not torn at
// its end: the records before the damage apply, the server says so as an
// error, keeps the whole file as world-1.journal.refused, and writes the
// world as it stands, so the next start agrees with it.
static void test_a_journal_damaged_in_the_middle_is_kept_and_said(void** state) {
    (void)state;
    char dir[64];
    new_dir(dir, sizeof dir);
    fixture f;
    start_in(&f, dir, false);
    app_world* w = new_world(&f, "damaged", 60, SIM_SOLVER_SOFT_STEP);
    for (int t = 0; t < 50; ++t) {
        if (t % 10 == 0) {
            spawn_ball_at(w, t / 10); // commands 1..5, at ticks 0, 10, ..., 40
        }
        tick(&f, w);
    }
    assert_true(w->seq == 5);
    crash(&f);
    // The third command record (docs/STATE.md: a 32-byte head, then
    // records of length, CRC, type, ...): one bit of its body flipped.
    char jpath[128];
    file_of(dir, 1, "journal", jpath, sizeof jpath);
    const long size = file_size(jpath);
    FILE* j = fopen(jpath, "r+b");
    assert_non_null(j);
    long at = 32;
    int commands = 0;
    for (;;) {
        uint32_t len = 0, type = 0;
        assert_int_equal(fseek(j, at, SEEK_SET), 0);
        assert_int_equal(fread(&len, 4, 1, j), 1);
        assert_int_equal(fseek(j, at + 8, SEEK_SET), 0);
        assert_int_equal(fread(&type, 4, 1, j), 1);
        if (type == 1 && ++commands == 3) {
            break;
        }
        at += 8 + (long)len;
    }
    assert_int_equal(fseek(j, at + 40, SEEK_SET), 0);
    int byte = fgetc(j);
    assert_int_equal(fseek(j, at + 40, SEEK_SET), 0);
    fputc(byte ^ 0x10, j);
    fclose(j);

    start_in(&f, dir, false);
    app_world* b = app__world_find(f.app, 1);
    assert_non_null(b);
    assert_true(b->seq == 2);
    assert_int_equal(sim_world_entity_count(b->sim), 2);
    assert_non_null(strstr(log_text(&f), "level=error event=journal_damaged"));
    char kept[140];
    file_of(dir, 1, "journal.refused", kept, sizeof kept);
    assert_true(file_size(kept) == size);
    crash(&f);
    start_in(&f, dir, false);
    assert_null(strstr(log_text(&f), "journal_damaged"));
    assert_null(strstr(log_text(&f), "journal_refused"));
    assert_true(app__world_find(f.app, 1)->seq == 2);
    stop(&f);
    remove_dir(dir);
}

// Two servers on one state dir would overwrite each other's worlds: the
// second refuses to start and names the first; once the first is gone
// (its lock goes with the process), a server starts there again.
static void test_a_state_dir_is_one_servers(void** state) {
    (void)state;
    char dir[64];
    new_dir(dir, sizeof dir);
    fixture f;
    start_in(&f, dir, true);
    uv_loop_t loop;
    assert_int_equal(uv_loop_init(&loop), 0);
    FILE* log = tmpfile();
    app_config cfg = f.app->cfg;
    cfg.log_stream = log;
    app_server* second = NULL;
    assert_int_equal(app_server_start(&loop, &cfg, &second), UV_EBUSY);
    assert_null(second);
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&loop), 0);
    char text[1024] = "";
    rewind(log);
    text[fread(text, 1, sizeof text - 1, log)] = '\0';
    fclose(log);
    char expect[256];
    snprintf(expect, sizeof expect, "another ragdolld (pid %ld) keeps its worlds in --state-dir %s",
             (long)getpid(), dir);
    if (strstr(text, expect) == NULL) {
        fail_msg("the log says: %s", text);
    }
    assert_int_equal(f.app->world_count, 1); // the first is untouched
    // The directory replaced under the first (its lock gone with it) and a
    // second server started there: the first finds its lock is not the
    // directory's and stands down, writing nothing, its world refusing
    // commands; once the second has gone, it takes the lock again.
    app_world* w = f.app->worlds[0];
    remove_dir(dir);
    assert_int_equal(mkdir(dir, 0700), 0);
    fixture g;
    start_in(&g, dir, false);
    app__persist_check_lock(f.app, uv_hrtime() + 2000000000ull);
    assert_true(f.app->state_dir_taken);
    assert_true(app__journal_down(f.app, w));
    assert_false(app__journal_retry(f.app, w, uv_hrtime() + 10000000000ull));
    assert_non_null(strstr(log_text(&f), "event=state_dir_lost"));
    assert_non_null(strstr(log_text(&f), "another ragdolld (pid"));
    stop(&g);
    app__persist_check_lock(f.app, uv_hrtime() + 4000000000ull);
    assert_false(f.app->state_dir_taken);
    assert_non_null(strstr(log_text(&f), "event=state_dir_relocked"));
    assert_true(app__journal_retry(f.app, w, uv_hrtime() + 20000000000ull)); // a state file
    assert_false(app__journal_down(f.app, w));
    stop(&f);
    start_in(&f, dir, true); // free again, its world there
    assert_int_equal(f.app->world_count, 1);
    stop(&f);
    remove_dir(dir);
}

// Files changed under a running server: its journal deleted, its state
// file deleted or emptied, its journal cut. Each is found at the next
// write, before that boundary's replies go: the world is down (the replies
// wait), and a state file a second on brings it back with a fresh journal.
// A crash after: nothing is lost.
static void test_files_deleted_under_the_server_are_written_again(void** state) {
    (void)state;
    char dir[64];
    new_dir(dir, sizeof dir);
    fixture f;
    start_in(&f, dir, false);
    app_world* w = new_world(&f, "deleted", 60, SIM_SOLVER_SOFT_STEP);
    spawn_ball_at(w, 0);
    tick(&f, w);
    char jpath[128], spath[128];
    file_of(dir, 1, "journal", jpath, sizeof jpath);
    file_of(dir, 1, "state", spath, sizeof spath);
    assert_int_equal(unlink(jpath), 0);
    spawn_ball_at(w, 1);
    tick(&f, w);
    assert_true(w->journal_failed && w->journal_lost);
    assert_non_null(strstr(log_text(&f), "its journal was deleted"));
    usleep(1100 * 1000);
    tick(&f, w); // a state file, and a journal from it
    assert_false(w->journal_failed);
    assert_true(file_size(jpath) >= 32);
    assert_int_equal(unlink(spath), 0);
    spawn_ball_at(w, 2);
    tick(&f, w); // found missing at the write: down, the reply held
    assert_true(w->journal_failed);
    assert_non_null(strstr(log_text(&f), "its state file is gone from the state dir"));
    usleep(1100 * 1000);
    tick(&f, w); // a state file again, and a journal from it
    assert_false(w->journal_failed);
    assert_true(file_size(spath) > 0);
    // A state file emptied in place (as `: > file` or a `cp` over it): the
    // same.
    assert_int_equal(truncate(spath, 0), 0);
    spawn_ball_at(w, 2);
    tick(&f, w);
    assert_true(w->journal_failed);
    assert_non_null(strstr(log_text(&f), "its state file was changed under the server"));
    usleep(1100 * 1000);
    tick(&f, w);
    assert_false(w->journal_failed);
    assert_true(file_size(spath) > 0);
    // A journal cut or replaced under the server is found before a reply
    // goes: down, and back through a state file.
    assert_int_equal(truncate(jpath, 0), 0);
    spawn_ball_at(w, 4);
    tick(&f, w);
    assert_true(w->journal_failed);
    assert_non_null(strstr(log_text(&f), "its journal was changed under the server"));
    usleep(1100 * 1000);
    tick(&f, w);
    assert_false(w->journal_failed);
    crash_and_compare(&f, w, dir, 5);
}

// A journal with a bad tail longer than any write (a file grown by 5 MiB
// of zeros) is damage, not a torn write: kept as .refused, said as an
// error. World ids stop at 2^53 - 1: a state file named with a larger id
// is refused by name, and once the largest is taken no world is made.
static void test_a_long_bad_tail_is_damage_and_ids_end(void** state) {
    (void)state;
    char dir[64];
    new_dir(dir, sizeof dir);
    fixture f;
    start_in(&f, dir, false);
    app_world* w = new_world(&f, "tail", 60, SIM_SOLVER_SOFT_STEP);
    spawn_ball_at(w, 0);
    tick(&f, w);
    crash(&f);
    char jpath[128], cmd[300];
    file_of(dir, 1, "journal", jpath, sizeof jpath);
    const long size = file_size(jpath);
    assert_int_equal(truncate(jpath, size + (5L << 20)), 0);
    snprintf(cmd, sizeof cmd, "touch '%s/world-9007199254740992.state'", dir);
    assert_int_equal(system(cmd), 0);
    start_in(&f, dir, false);
    assert_non_null(strstr(log_text(&f), "level=error event=journal_damaged"));
    assert_non_null(strstr(log_text(&f), "world-9007199254740992.state reason=\"its id is past"));
    assert_true(app__world_find(f.app, 1)->seq == 1);
    char kept[140];
    file_of(dir, 1, "journal.refused", kept, sizeof kept);
    assert_true(file_size(kept) == size + (5L << 20));
    f.app->next_world_id = APP_MAX_WORLD_ID - 1;
    app_world* last = NULL;
    assert_int_equal(
        app__world_create(f.app, "last", 60, f.app->cfg.world_limits, SIM_SOLVER_SOFT_STEP, &last),
        RDP_OK);
    assert_true(last->id == APP_MAX_WORLD_ID);
    app_world* none = NULL;
    assert_int_equal(
        app__world_create(f.app, "none", 60, f.app->cfg.world_limits, SIM_SOLVER_SOFT_STEP, &none),
        RDP_E_TOO_LARGE);
    stop(&f);
    remove_dir(dir);
}

// The kind each spawn op makes (PROTOCOL.md's op table).
static sim_entity_kind kind_of_op(const char* op) {
    static const struct {
        const char* op;
        sim_entity_kind kind;
    } k[] = {{"spawn_rope", SIM_ENTITY_ROPE},       {"spawn_cloth", SIM_ENTITY_CLOTH},
             {"spawn_ragdoll", SIM_ENTITY_RAGDOLL}, {"spawn_character", SIM_ENTITY_CHARACTER},
             {"spawn_ball", SIM_ENTITY_BALL},       {"spawn_softbody", SIM_ENTITY_SOFTBODY}};
    for (size_t i = 0; i < sizeof k / sizeof k[0]; ++i) {
        if (strcmp(op, k[i].op) == 0) {
            return k[i].kind;
        }
    }
    return (sim_entity_kind)0;
}

// Every shipped template makes the world its file describes: read here
// from the JSON itself, the world has its boxes (centres and half extents)
// and one entity of the right kind per spawn, in order. Saved and loaded,
// a template's world is like any other.
static void test_each_shipped_template_makes_the_world_its_file_says(void** state) {
    (void)state;
    app_templates* tpls = NULL;
    char why[512] = "";
    if (app_templates_load(RD_TEMPLATES_DIR, true, &tpls, why, sizeof why) != 0) {
        fail_msg("%s", why);
    }
    assert_true(tpls->count >= 2);
    char dir[64];
    new_dir(dir, sizeof dir);
    fixture f;
    start_in(&f, dir, false);
    f.app->cfg.templates = tpls;
    for (uint32_t i = 0; i < tpls->count; ++i) {
        const app_template* t = &tpls->items[i];
        char path[512];
        snprintf(path, sizeof path, "%s/%s.json", RD_TEMPLATES_DIR, t->name);
        FILE* fp = fopen(path, "rb");
        assert_non_null(fp);
        static char text[1 << 16];
        text[fread(text, 1, sizeof text - 1, fp)] = '\0';
        fclose(fp);
        cJSON* doc = cJSON_Parse(text);
        assert_non_null(doc);
        app_world* w = NULL;
        assert_int_equal(app__world_create(f.app, t->name, 60, f.app->cfg.world_limits,
                                           SIM_SOLVER_SOFT_STEP, &w),
                         RDP_OK);
        if (app__world_from_template(f.app, w, t, why, sizeof why) != 0) {
            fail_msg("%s", why);
        }
        assert_int_equal(app__persist_world_created(f.app, w, why, sizeof why), 0);
        const cJSON* boxes = cJSON_GetObjectItem(doc, "boxes");
        assert_int_equal(sim_world_box_count(w->sim), (uint32_t)cJSON_GetArraySize(boxes));
        for (int b = 0; b < cJSON_GetArraySize(boxes); ++b) {
            const cJSON* c = cJSON_GetObjectItem(cJSON_GetArrayItem(boxes, b), "center");
            const cJSON* h = cJSON_GetObjectItem(cJSON_GetArrayItem(boxes, b), "half_extents");
            const sim_box* got = &sim_world_boxes(w->sim)[b];
            assert_float_equal(got->center.x, cJSON_GetArrayItem(c, 0)->valuedouble, 1e-6);
            assert_float_equal(got->center.y, cJSON_GetArrayItem(c, 1)->valuedouble, 1e-6);
            assert_float_equal(got->half_extents.z, cJSON_GetArrayItem(h, 2)->valuedouble, 1e-6);
        }
        uint32_t spawns = 0;
        const cJSON* cmd;
        cJSON_ArrayForEach(cmd, cJSON_GetObjectItem(doc, "commands")) {
            const char* op = cJSON_GetObjectItem(cmd, "op")->valuestring;
            if (strcmp(op, "set_params") == 0) {
                continue;
            }
            sim_entity_view v;
            assert_int_equal(sim_entity_get_view(w->sim, sim_world_entity_at(w->sim, spawns), &v),
                             SIM_OK);
            if (v.kind != kind_of_op(op)) {
                fail_msg("%s: entity %u is a %s, its command %s", t->name, spawns,
                         sim_entity_kind_name(v.kind), op);
            }
            spawns++;
        }
        assert_int_equal(sim_world_entity_count(w->sim), spawns);
        assert_true(spawns > 0);
        cJSON_Delete(doc);
    }
    const uint32_t worlds = f.app->world_count;
    crash(&f);
    start_in(&f, dir, false); // loaded from their state files, no template needed
    assert_int_equal(f.app->world_count, worlds);
    for (uint32_t i = 0; i < tpls->count; ++i) {
        app_world* w = app__world_find(f.app, i + 1);
        assert_int_equal(sim_world_box_count(w->sim), tpls->items[i].box_count);
    }
    stop(&f);
    remove_dir(dir);
    app_templates_destroy(tpls);
}

// A bad template stops the load, naming its file and what is wrong.
static void test_bad_templates_are_refused_with_file_and_reason(void** state) {
    (void)state;
    static const struct {
        const char* file;
        const char* text;
        const char* says;
    } bad[] = {
        {"a.json", "[1]", "a.json: not a JSON object"},
        {"b.json", "{\"boxes\": [], \"floor\": 1}", "b.json: unknown key \"floor\""},
        {"c.json", "{\"boxes\": [{\"center\": [0, 0, 0], \"half_extents\": [0, 1, 1]}]}",
         "c.json: boxes[0] must be"},
        {"d.json",
         "{\"commands\": [{\"op\": \"spawn_ball\", \"position\": [0, 1, 0], \"radius\": 99}]}",
         "d.json: commands[0]: field \"radius\" = 99 is outside [0.001, 5]"},
        {"e.json", "{\"commands\": [{\"op\": \"destroy_world\"}]}",
         "e.json: commands[0]: destroy_world is not a template's"},
        {"f.json", "{\"commands\": [{\"op\": \"spawn_ball\", \"world\": 3}]}",
         "f.json: commands[0] must be a command object without \"world\""},
        {"Bad Name.json", "{}", "Bad Name.json: a template is NAME.json"},
        // Beyond what any world holds (64 boxes, ±1000 m): it could never
        // make one, so it is refused at the start.
        {"g.json", "{\"boxes\": [{\"center\": [1500, 0, 0], \"half_extents\": [1, 1, 1]}]}",
         "g.json: boxes[0] must be"},
        {"i.json", "{\"boxes\": [{\"center\": [999, 0, 0], \"half_extents\": [1000, 1, 1]}]}",
         "i.json: boxes[0] must be {\"center\": [x, y, z], \"half_extents\": [x, y, z]}: the whole "
         "box within +/-1000 m"},
        {"h.json", NULL, "h.json: \"boxes\" must be an array of at most 64 boxes"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
        char dir[64];
        new_dir(dir, sizeof dir);
        if (bad[i].text != NULL) {
            write_file(dir, bad[i].file, (const uint8_t*)bad[i].text, strlen(bad[i].text));
        } else { // 65 boxes
            char many[65 * 64 + 32];
            size_t at = (size_t)snprintf(many, sizeof many, "{\"boxes\": [");
            for (int k = 0; k < 65; ++k) {
                at += (size_t)snprintf(many + at, sizeof many - at,
                                       "%s{\"center\": [%d, 1, 0], \"half_extents\": [0.4, 1, 1]}",
                                       k > 0 ? ", " : "", k);
            }
            at += (size_t)snprintf(many + at, sizeof many - at, "]}");
            write_file(dir, bad[i].file, (const uint8_t*)many, at);
        }
        write_file(dir, "good.json", (const uint8_t*)"{}", 2);
        app_templates* t = NULL;
        char why[512] = "";
        assert_int_equal(app_templates_load(dir, true, &t, why, sizeof why), -1);
        assert_null(t);
        if (strstr(why, bad[i].says) == NULL) {
            fail_msg("case %zu: \"%s\" does not say \"%s\"", i, why, bad[i].says);
        }
        remove_dir(dir);
    }
    // A FIFO is refused, not read (that would block the start for ever).
    {
        char dir[64];
        new_dir(dir, sizeof dir);
        char fifo[128];
        snprintf(fifo, sizeof fifo, "%s/pipe.json", dir);
        assert_int_equal(mkfifo(fifo, 0600), 0);
        app_templates* t = NULL;
        char why[512] = "";
        assert_int_equal(app_templates_load(dir, true, &t, why, sizeof why), -1);
        assert_non_null(strstr(why, "pipe.json: not a regular file"));
        unlink(fifo);
        remove_dir(dir);
    }
    app_templates* none = NULL;
    char why[256];
    assert_int_equal(app_templates_load("/nonexistent/templates", false, &none, why, sizeof why),
                     0);
    assert_int_equal(none->count, 0);
    app_templates_destroy(none);
    assert_int_equal(app_templates_load("/nonexistent/templates", true, &none, why, sizeof why),
                     -1);
    assert_non_null(strstr(why, "No such file or directory"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_replay_passes_through_every_live_hash),
        cmocka_unit_test(test_a_restart_brings_the_worlds_back),
        cmocka_unit_test(test_bad_state_files_are_refused_and_the_rest_load),
        cmocka_unit_test(test_a_torn_journal_tail_is_cut_not_fatal),
        cmocka_unit_test(test_a_blow_up_is_rolled_back),
        cmocka_unit_test(test_a_full_disk_refuses_commands_until_the_journal_is_written),
        cmocka_unit_test(test_a_failed_fsync_comes_back_through_a_state_file),
        cmocka_unit_test(test_a_world_whose_state_cannot_be_written_is_not_durable),
        cmocka_unit_test(test_another_worlds_journal_is_refused_before_anything_applies),
        cmocka_unit_test(test_a_journal_damaged_in_the_middle_is_kept_and_said),
        cmocka_unit_test(test_a_state_dir_is_one_servers),
        cmocka_unit_test(test_files_deleted_under_the_server_are_written_again),
        cmocka_unit_test(test_a_long_bad_tail_is_damage_and_ids_end),
        cmocka_unit_test(test_each_shipped_template_makes_the_world_its_file_says),
        cmocka_unit_test(test_bad_templates_are_refused_with_file_and_reason),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
