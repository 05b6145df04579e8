/*
 * test_app.c: unit tests of ragdolld's application layer: the command line
 * (config.c) and the admission of work (budget.c, through dispatch.c's
 * app__apply on a real server with worlds of its own). Expected solver work
 * is derived by hand from sim.h's definition, (distance constraints + joint
 * limits + particles) × iterations × substeps, and the entities' shapes:
 *
 *   rope of s segments   s + 1 particles, s sticks              = 2s + 1 per pass
 *   cloth of C × R       C·R particles; structural (C-1)R + C(R-1),
 *                        shear 2(C-1)(R-1), bend (C-2)R + C(R-2)
 *                        64 × 64: 4096 + 8064 + 7938 + 7936     = 28034 per pass
 *                        40 × 40: 1600 + 3120 + 3042 + 3040     = 10802 per pass
 *   ragdoll              16 particles, 26 sticks, 7 minimum distances,
 *                        4 hinge distances, 8 joint limits (ragdoll.c tables)
 *                                                               = 61 per pass
 *
 * With the default 8 iterations and 1 substep a 64 × 64 cloth costs 224272
 * projections per tick.
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

#include <cJSON.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

// Parses a NULL-terminated argument list; captures stdout/stderr text.
static int parse(const char* const* args, app_config* cfg, char* out, char* err) {
    char* argv[16];
    int argc = 0;
    argv[argc++] = "ragdolld";
    for (int i = 0; args[i] != NULL; ++i) {
        argv[argc++] = (char*)args[i];
    }
    argv[argc] = NULL;
    *cfg = app_config_default();
    FILE* fo = fmemopen(out, 4096, "w");
    FILE* fe = fmemopen(err, 4096, "w");
    int rc = app_config_parse(argc, argv, cfg, fo, fe);
    fclose(fo);
    fclose(fe);
    return rc;
}

static void test_app_defaults(void** state) {
    (void)state;
    app_config c = app_config_default();
    assert_string_equal(c.host, "127.0.0.1");
    assert_int_equal(c.port, 8080);
    assert_true(c.demo);
    assert_non_null(c.web_root);
    assert_int_equal(c.max_sessions, 1024);
    assert_true(c.max_solver_work == 1000000);
    assert_true(c.max_total_solver_work == 1500000);
}

static void test_app_parses_every_flag(void** state) {
    (void)state;
    char out[4096] = "", err[4096] = "";
    app_config c;
    const char* args[] = {"--host",    "0.0.0.0",    "--port", "0",
                          "--no-demo", "--web-root", "/srv/w", "--max-worlds",
                          "3",         "--insecure", NULL};
    assert_int_equal(parse(args, &c, out, err), 0);
    assert_string_equal(c.host, "0.0.0.0");
    assert_int_equal(c.port, 0);
    assert_false(c.demo);
    assert_string_equal(c.web_root, "/srv/w");
    assert_int_equal(c.max_worlds, 3);
    const char* sessions[] = {"--max-sessions", "5", NULL};
    assert_int_equal(parse(sessions, &c, out, err), 0);
    assert_int_equal(c.max_sessions, 5);
    const char* work[] = {"--max-solver-work", "2500000", "--max-total-solver-work", "7000000",
                          NULL};
    assert_int_equal(parse(work, &c, out, err), 0);
    assert_true(c.max_solver_work == 2500000);
    assert_true(c.max_total_solver_work == 7000000);
    const char* eq[] = {"--port=9000", NULL};
    assert_int_equal(parse(eq, &c, out, err), 0);
    assert_int_equal(c.port, 9000);
}

static void test_app_help_and_version_exit_successfully(void** state) {
    (void)state;
    char out[4096] = "", err[4096] = "";
    app_config c;
    const char* help[] = {"--help", NULL};
    assert_int_equal(parse(help, &c, out, err), 1);
    assert_non_null(strstr(out, "usage: ragdolld"));
    assert_non_null(strstr(out, "--no-demo"));
    assert_non_null(strstr(out, "--max-total-solver-work"));
    const char* version[] = {"--version", NULL};
    assert_int_equal(parse(version, &c, out, err), 1);
    assert_string_equal(out, "ragdolld " APP_VERSION "\n");
}

static void test_app_rejects_bad_flags_with_a_message(void** state) {
    (void)state;
    const char* const cases[][3] = {
        {"--port", "70000", NULL},     {"--port", "eighty", NULL},
        {"--port", "-1", NULL},        {"--bogus", NULL, NULL},
        {"extra", NULL, NULL},         {"--max-worlds", "0", NULL},
        {"--port", NULL, NULL},        {"--max-solver-work", "10", NULL},
        {"--max-sessions", "0", NULL}, {"--max-total-solver-work", "999", NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
        char out[4096] = "", err[4096] = "";
        app_config c;
        assert_int_equal(parse(cases[i], &c, out, err), -1);
        assert_non_null(strstr(err, "ragdolld: "));
    }
}

static void test_app_public_bind_needs_an_auth_file(void** state) {
    (void)state;
    char out[4096] = "", err[4096] = "";
    app_config c;
    unsetenv("RAGDOLLD_AUTH_FILE");
    // Redis's protected mode: a non-loopback host without tokens is refused,
    // and the message says how to fix it.
    const char* open_host[] = {"--host", "0.0.0.0", NULL};
    assert_int_equal(parse(open_host, &c, out, err), -1);
    assert_non_null(strstr(err, "--auth-file"));
    assert_non_null(strstr(err, "--insecure"));
    // Loopback needs nothing; per-address limits are off there.
    const char* loop6[] = {"--host", "::1", NULL};
    assert_int_equal(parse(loop6, &c, out, err), 0);
    assert_int_equal(c.max_sessions_per_address, 0);
    // An auth file (by flag or environment) or --insecure lets it bind, and
    // then one address gets 16 sessions unless told otherwise.
    const char* with_file[] = {"--host", "0.0.0.0", "--auth-file", "/etc/tokens", NULL};
    assert_int_equal(parse(with_file, &c, out, err), 0);
    assert_string_equal(c.auth_file, "/etc/tokens");
    assert_int_equal(c.max_sessions_per_address, 16);
    setenv("RAGDOLLD_AUTH_FILE", "/run/tokens", 1);
    assert_int_equal(parse(open_host, &c, out, err), 0);
    assert_string_equal(c.auth_file, "/run/tokens");
    unsetenv("RAGDOLLD_AUTH_FILE");
    const char* insecure[] = {"--host",
                              "10.0.0.5",
                              "--insecure",
                              "--max-sessions-per-address",
                              "3",
                              "--allow-origin",
                              "https://game.example",
                              "--cmd-rate",
                              "50",
                              "--cmd-burst",
                              "60",
                              NULL};
    assert_int_equal(parse(insecure, &c, out, err), 0);
    assert_int_equal(c.max_sessions_per_address, 3);
    assert_int_equal(c.allow_origin_count, 1);
    assert_string_equal(c.allow_origins[0], "https://game.example");
    assert_true(c.cmd_rate == 50 && c.cmd_burst == 60);
    // --anonymous only means something with tokens.
    const char* anon[] = {"--anonymous", "viewer", NULL};
    assert_int_equal(parse(anon, &c, out, err), -1);
}

// Writes text to a fresh temporary file; returns its path (static buffer).
static const char* temp_file(const char* text) {
    static char path[64];
    snprintf(path, sizeof path, "/tmp/rd_auth_XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    return path;
}

static void test_app_auth_file_is_parsed_and_checked(void** state) {
    (void)state;
    char err[512];
    app_auth* a = NULL;
    const char* good = temp_file("# tokens\n"
                                 "admin-token-0123456789 admin\n"
                                 "\n"
                                 "  player-token-abcdefghij   player demo arena  # two worlds\n"
                                 "viewer.token_~-0123456 viewer\n");
    assert_int_equal(app_auth_load(good, &a, err, sizeof err), 0);
    assert_int_equal(app_auth_count(a), 3);
    const app_auth_entry* e = app__auth_lookup(a, "player-token-abcdefghij", 23);
    assert_non_null(e);
    assert_int_equal(e->role, APP_ROLE_PLAYER);
    assert_int_equal(e->world_count, 2);
    assert_string_equal(e->worlds[1], "arena");
    assert_int_equal(app__auth_lookup(a, "viewer.token_~-0123456", 22)->role, APP_ROLE_VIEWER);
    // A prefix, an extension or one changed character is no token.
    assert_null(app__auth_lookup(a, "admin-token-012345678", 21));
    assert_null(app__auth_lookup(a, "admin-token-01234567890", 23));
    assert_null(app__auth_lookup(a, "admin-token-0123456788", 22));
    app_auth_destroy(a);
    unlink(good);

    // Each bad file is refused with its line, and never with the token.
    const char* const bad[] = {
        "short-token admin\n",                                         // under 16 characters
        "good-token-0123456789 root\n",                                // no such role
        "good-token-0123456789\n",                                     // no role
        "good-token-0123456789 admin\ngood-token-0123456789 viewer\n", // twice
        "bad/token/0123456789 admin\n", // '/' is not a token character
        "# nothing but comments\n",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
        const char* path = temp_file(bad[i]);
        a = NULL;
        assert_int_equal(app_auth_load(path, &a, err, sizeof err), -1);
        assert_null(a);
        assert_non_null(strstr(err, path));
        assert_null(strstr(err, "0123456789"));
        unlink(path);
    }
    assert_int_equal(app_auth_load("/nonexistent/tokens", &a, err, sizeof err), -1);
}

// ---------------------------------------------------------------------------
// The describe budget: a token bucket of 8 MiB refilled at 4 MiB/s, on a
// clock the test supplies (no sleeping, no timing)
// ---------------------------------------------------------------------------

static void test_app_describe_budget_is_a_token_bucket(void** state) {
    (void)state;
    const size_t mib = 1024 * 1024;
    const uint64_t ms = 1000000; // ns
    app_bucket b;
    uint64_t retry = 0;
    app__bucket_init(&b, APP_DESCRIBE_BYTES_PER_S, APP_DESCRIBE_BURST_BYTES, 0);
    // Full at the start: 8 MiB. Three 3 MiB replies go (the third into a
    // debt of 1 MiB: a reply is sent whole once the bucket is not in debt).
    assert_true(app__bucket_take(&b, 0, 3 * mib, &retry));
    assert_true(app__bucket_take(&b, 0, 3 * mib, &retry));
    assert_true(app__bucket_take(&b, 0, 3 * mib, &retry));
    // In debt by 1 MiB: 1 MiB / (4 MiB/s) = 250 ms to wait.
    assert_false(app__bucket_take(&b, 0, 1, &retry));
    assert_int_equal(retry, 250);
    // 125 ms later half of it is paid: 125 ms more.
    assert_false(app__bucket_take(&b, 125 * ms, 1, &retry));
    assert_int_equal(retry, 125);
    // At 250 ms the debt is paid (0 bytes): the next reply goes.
    assert_true(app__bucket_take(&b, 250 * ms, mib, &retry));
    assert_false(app__bucket_take(&b, 250 * ms, 1, &retry));
    assert_int_equal(retry, 250);
    // Ten seconds idle fill it only to 8 MiB: 8 MiB go, then 1 byte into debt.
    assert_true(app__bucket_take(&b, 10000 * ms, 8 * mib, &retry));
    assert_true(app__bucket_take(&b, 10000 * ms, 1, &retry));
    assert_false(app__bucket_take(&b, 10000 * ms, 1, &retry));
    assert_int_equal(retry, 1); // 1 byte at 4 MiB/s, rounded up to a whole ms
    // A clock that goes back adds nothing.
    assert_false(app__bucket_take(&b, 5000 * ms, 1, &retry));
    assert_int_equal(retry, 1);
}

// ---------------------------------------------------------------------------
// Admission of work
// ---------------------------------------------------------------------------

typedef struct budget_fixture {
    uv_loop_t loop;
    app_server* app;
    bool done;
} budget_fixture;

// A server on a real loop (port 0, no demo) with small budgets: 500000
// projections per tick per world, 600000 per 1/60 s in all.
static int budget_setup(void** state) {
    budget_fixture* f = calloc(1, sizeof *f);
    assert_int_equal(uv_loop_init(&f->loop), 0);
    app_config cfg = app_config_default();
    cfg.port = 0;
    cfg.demo = false;
    cfg.max_solver_work = 500000;
    cfg.max_total_solver_work = 600000;
    assert_int_equal(app_server_start(&f->loop, &cfg, &f->app), 0);
    *state = f;
    return 0;
}

static void on_done(void* arg) {
    ((budget_fixture*)arg)->done = true;
}

static int budget_teardown(void** state) {
    budget_fixture* f = *state;
    app_server_shutdown(f->app, on_done, f);
    uv_run(&f->loop, UV_RUN_DEFAULT);
    assert_true(f->done);
    assert_int_equal(uv_loop_close(&f->loop), 0); // every handle closed
    free(f);
    return 0;
}

static app_world* world(budget_fixture* f, uint32_t tick_hz) {
    app_world* w = NULL;
    assert_int_equal(app__world_create(f->app, "t", tick_hz, &w), RDP_OK);
    return w;
}

// Applies a command (JSON, "world" filled in) at w's tick boundary; returns
// the parsed reply. The caller frees it with cJSON_Delete.
__attribute__((format(printf, 3, 4))) static cJSON* apply(budget_fixture* f, app_world* w,
                                                          const char* fmt, ...) {
    char body[512], text[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(body, sizeof body, fmt, ap);
    va_end(ap);
    snprintf(text, sizeof text, "{\"world\":%llu,%s}", (unsigned long long)w->id, body);
    rdp_command cmd;
    rdp_error err;
    assert_int_equal(rdp_command_decode(text, strlen(text), &cmd, &err), RDP_OK);
    size_t len = 0, ev_len = 0;
    char* ev = NULL;
    char* reply = app__apply(f->app, w, NULL, &cmd, &len, &ev, &ev_len);
    assert_non_null(reply);
    cJSON* r = cJSON_ParseWithLength(reply, len);
    assert_non_null(r);
    rdp_free(reply);
    rdp_free(ev);
    return r;
}

static void expect_ok(cJSON* r) {
    if (!cJSON_IsTrue(cJSON_GetObjectItem(r, "ok"))) {
        char* t = cJSON_PrintUnformatted(r);
        print_error("expected ok, got %s\n", t);
        cJSON_free(t);
    }
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(r, "ok")));
    cJSON_Delete(r);
}

// Expects an error reply with this code and exactly this message (so a
// message cut short fails).
static void expect_error(cJSON* r, const char* code, const char* message) {
    cJSON* e = cJSON_GetObjectItem(r, "error");
    assert_non_null(e);
    assert_string_equal(cJSON_GetObjectItem(e, "code")->valuestring, code);
    assert_string_equal(cJSON_GetObjectItem(e, "message")->valuestring, message);
    cJSON_Delete(r);
}

static uint64_t entity_of(cJSON* r) {
    uint64_t id = (uint64_t)cJSON_GetObjectItem(r, "entity")->valuedouble;
    expect_ok(r);
    return id;
}

#define CLOTH64                                                                                    \
    "\"op\":\"spawn_cloth\",\"origin\":[0,10,0],\"cols\":64,\"rows\":64,\"spacing\":0.05"
#define CLOTH40                                                                                    \
    "\"op\":\"spawn_cloth\",\"origin\":[0,10,0],\"cols\":40,\"rows\":40,\"spacing\":0.05"
#define ROPE1000                                                                                   \
    "\"op\":\"spawn_rope\",\"anchor\":[-500,10,0],\"segments\":1000,\"segment_length\":0.5"
#define RAGDOLL "\"op\":\"spawn_ragdoll\",\"position\":[0,2,0]"

static void test_app_solver_work_is_limited_per_world_and_in_all(void** state) {
    budget_fixture* f = *state;
    app_world* a = world(f, 60);
    uint64_t first = entity_of(apply(f, a, CLOTH64));
    assert_true(sim_world_solver_work(a->sim) == 224272);
    assert_true(app__server_rate(f->app) == 224272u * 60u);
    expect_ok(apply(f, a, CLOTH64));
    // A third cloth: 3 × 28034 = 84102 per pass, 672816 per tick > 500000.
    expect_error(apply(f, a, CLOTH64), "too_large",
                 "world 1 would need 672816 solver projections per tick (at 8 iterations x 1 "
                 "substeps); the limit per world is 500000");
    assert_int_equal(sim_world_entity_count(a->sim), 2); // nothing half-made

    // World 2 is empty, so its own budget is no obstacle; the server's is:
    // 448544 + 224272 = 672816 > 600000.
    app_world* b = world(f, 60);
    expect_error(apply(f, b, CLOTH64), "too_large",
                 "all worlds together would need 672816 solver projections per 1/60 s (world 2: "
                 "224272 per tick at 60 Hz); the limit for the whole server is 600000");
    // A 1000-segment rope, 2001 × 8 = 16008, fits: 464552 in all.
    expect_ok(apply(f, b, ROPE1000));
    assert_true(app__server_rate(f->app) == (448544u + 16008u) * 60u);

    // set_params is checked the same way: 10 substeps make world 2 need
    // 2001 × 8 × 10 = 160080, 608624 in all; 8 substeps (128064, 576608 in
    // all) fit. Fewer passes are always allowed.
    expect_error(apply(f, b, "\"op\":\"set_params\",\"substeps\":10"), "too_large",
                 "all worlds together would need 608624 solver projections per 1/60 s (world 2: "
                 "160080 per tick at 60 Hz); the limit for the whole server is 600000");
    assert_int_equal(sim_world_params(b->sim).substeps, 1);
    expect_ok(apply(f, b, "\"op\":\"set_params\",\"substeps\":8"));
    assert_true(sim_world_solver_work(b->sim) == 128064);
    expect_ok(apply(f, b, "\"op\":\"set_params\",\"substeps\":1"));
    // Per world, set_params: 9 iterations of two cloths, 56068 × 9 = 504612.
    expect_error(apply(f, a, "\"op\":\"set_params\",\"iterations\":9"), "too_large",
                 "world 1 would need 504612 solver projections per tick (at 9 iterations x 1 "
                 "substeps); the limit per world is 500000");

    // A world ticking at 120 Hz counts double: a 40 × 40 cloth, 10802 × 8 =
    // 86416 per tick, is 172832 per 1/60 s, 637384 in all (it would fit at
    // 60 Hz: 550968).
    app_world* c = world(f, 120);
    expect_error(apply(f, c, CLOTH40), "too_large",
                 "all worlds together would need 637384 solver projections per 1/60 s (world 3: "
                 "86416 per tick at 120 Hz); the limit for the whole server is 600000");
    // A ragdoll, 61 × 8 = 488 per tick, does fit.
    expect_ok(apply(f, c, RAGDOLL));
    assert_true(sim_world_solver_work(c->sim) == 488);
    assert_true(app__server_rate(f->app) == (448544u + 16008u) * 60u + 488u * 120u);

    // Despawning gives the work back: now world 2 has room for a cloth.
    expect_ok(apply(f, a, "\"op\":\"despawn\",\"entity\":%llu", (unsigned long long)first));
    expect_ok(apply(f, b, CLOTH64));
    assert_true(app__server_rate(f->app) == (224272u + 16008u + 224272u) * 60u + 488u * 120u);
}

static void test_app_capacity_refusals_name_their_limit(void** state) {
    budget_fixture* f = *state;
    app_world* w = world(f, 60);
    // Particles: 1001 + 256 × 127 = 33513 > 32768.
    expect_ok(apply(f, w, ROPE1000));
    expect_error(apply(f, w,
                       "\"op\":\"spawn_cloth\",\"origin\":[0,10,0],\"cols\":256,\"rows\":127,"
                       "\"spacing\":0.01"),
                 "too_large",
                 "world 1 holds 1001 particles and this cloth adds 32512; a world holds at most "
                 "32768");
    // Too big for any world.
    expect_error(apply(f, w,
                       "\"op\":\"spawn_cloth\",\"origin\":[0,10,0],\"cols\":256,\"rows\":256,"
                       "\"spacing\":0.01"),
                 "too_large", "a 256 x 256 cloth has 65536 particles; a world holds at most 32768");
    // Entities: 256 at most (255 small ropes more).
    for (int i = 0; i < 255; ++i) {
        expect_ok(apply(f, w,
                        "\"op\":\"spawn_rope\",\"anchor\":[0,10,0],\"segments\":1,"
                        "\"segment_length\":0.1"));
    }
    expect_error(apply(f, w, RAGDOLL), "too_large",
                 "world 1 already holds 256 entities, the most a world may");
    // Drags: 64 at most, on the particles of four ragdolls in another world.
    app_world* d = world(f, 60);
    uint64_t dolls[4];
    for (int i = 0; i < 4; ++i) {
        dolls[i] = entity_of(apply(f, d, RAGDOLL));
    }
    for (int k = 0; k < 64; ++k) {
        expect_ok(apply(f, d, "\"op\":\"drag\",\"entity\":%llu,\"particle\":%d,\"target\":[0,3,0]",
                        (unsigned long long)dolls[k / 16], k % 16));
    }
    // Moving a held particle's target takes no new slot; a 65th does.
    expect_ok(apply(f, d, "\"op\":\"drag\",\"entity\":%llu,\"particle\":0,\"target\":[1,3,0]",
                    (unsigned long long)dolls[0]));
    uint64_t fifth = entity_of(apply(f, d, RAGDOLL));
    expect_error(apply(f, d, "\"op\":\"drag\",\"entity\":%llu,\"particle\":0,\"target\":[1,3,0]",
                       (unsigned long long)fifth),
                 "too_large",
                 "world 2 already has 64 drags, the most a world may; release one first");

    // The longest message there is, with a world id of 2^53 - 1 and 100 ×
    // 32 passes, still arrives whole.
    app_world* big = world(f, 60);
    big->id = 9007199254740991ull;
    expect_ok(apply(f, big, "\"op\":\"set_params\",\"iterations\":1"));
    expect_ok(apply(f, big, CLOTH64));
    expect_error(apply(f, big, "\"op\":\"set_params\",\"iterations\":100,\"substeps\":32"),
                 "too_large",
                 "world 9007199254740991 would need 89708800 solver projections per tick (at 100 "
                 "iterations x 32 substeps); the limit per world is 500000");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_app_defaults),
        cmocka_unit_test(test_app_parses_every_flag),
        cmocka_unit_test(test_app_help_and_version_exit_successfully),
        cmocka_unit_test(test_app_rejects_bad_flags_with_a_message),
        cmocka_unit_test(test_app_describe_budget_is_a_token_bucket),
        cmocka_unit_test(test_app_public_bind_needs_an_auth_file),
        cmocka_unit_test(test_app_auth_file_is_parsed_and_checked),
        cmocka_unit_test_setup_teardown(test_app_solver_work_is_limited_per_world_and_in_all,
                                        budget_setup, budget_teardown),
        cmocka_unit_test_setup_teardown(test_app_capacity_refusals_name_their_limit, budget_setup,
                                        budget_teardown),
    };
    return cmocka_run_group_tests_name("app", tests, NULL, NULL);
}
