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

#include "agones.h"
#include "app_internal.h"
#include "log.h"
#include "metrics.h"
#include "report.h"

#include <cJSON.h>

#include <arpa/inet.h>
#include <math.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
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
    FILE* fo = fmemopen(out, 16384, "w");
    FILE* fe = fmemopen(err, 16384, "w");
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
    assert_int_equal(c.log_level, APP_LOG_INFO);
    assert_int_equal(c.log_format, APP_LOG_TEXT);
    assert_null(c.log_stream); // stderr
    assert_int_equal(c.world_solver, SIM_SOLVER_SOFT_STEP);
    // One worker per CPU this process may run on.
    unsigned cpus = uv_available_parallelism();
    assert_true(cpus >= 1);
    assert_int_equal(c.workers, cpus < APP_MAX_WORKERS ? cpus : APP_MAX_WORKERS);
}

static void test_app_parses_every_flag(void** state) {
    (void)state;
    char out[16384] = "", err[16384] = "";
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
    const char* logs[] = {"--log-level", "debug", "--log-format", "json", NULL};
    assert_int_equal(parse(logs, &c, out, err), 0);
    assert_int_equal(c.log_level, APP_LOG_DEBUG);
    assert_int_equal(c.log_format, APP_LOG_JSON);
    const char* quiet[] = {"--log-level=error", "--log-format=text", NULL};
    assert_int_equal(parse(quiet, &c, out, err), 0);
    assert_int_equal(c.log_level, APP_LOG_ERROR);
    assert_int_equal(c.log_format, APP_LOG_TEXT);
    // Workers: 0 (step on the loop thread) to 256; the environment when
    // the flag is not given.
    unsetenv("RAGDOLLD_WORKERS");
    const char* none[] = {"--workers", "0", NULL};
    assert_int_equal(parse(none, &c, out, err), 0);
    assert_int_equal(c.workers, 0);
    const char* most[] = {"--workers=256", NULL};
    assert_int_equal(parse(most, &c, out, err), 0);
    assert_int_equal(c.workers, 256);
    setenv("RAGDOLLD_WORKERS", "3", 1);
    const char* nothing[] = {NULL};
    assert_int_equal(parse(nothing, &c, out, err), 0);
    assert_int_equal(c.workers, 3);
    const char* two[] = {"--workers", "2", NULL};
    assert_int_equal(parse(two, &c, out, err), 0);
    assert_int_equal(c.workers, 2); // the flag wins
    unsetenv("RAGDOLLD_WORKERS");
}

static void test_app_help_and_version_exit_successfully(void** state) {
    (void)state;
    char out[16384] = "", err[16384] = "";
    app_config c;
    const char* help[] = {"--help", NULL};
    assert_int_equal(parse(help, &c, out, err), 1);
    assert_non_null(strstr(out, "usage: ragdolld"));
    assert_non_null(strstr(out, "--no-demo"));
    assert_non_null(strstr(out, "--max-total-solver-work"));
    assert_non_null(strstr(out, "--workers N"));
    assert_non_null(strstr(out, "--log-level"));
    assert_non_null(strstr(out, "--log-format"));
    assert_non_null(strstr(out, "--world-solver S"));
    assert_non_null(strstr(out, "$RAGDOLLD_WORLD_SOLVER"));
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
        {"--log-level", "loud", NULL}, {"--log-format", "xml", NULL},
        {"--workers", "257", NULL},    {"--workers", "four", NULL},
        {"--workers", "", NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
        char out[16384] = "", err[16384] = "";
        app_config c;
        assert_int_equal(parse(cases[i], &c, out, err), -1);
        assert_non_null(strstr(err, "ragdolld: "));
    }
}

// Durability and replay flags: each says what it needs, and a flag that
// means nothing without another is refused, not ignored.
static void test_app_state_and_replay_flags_need_their_partners(void** state) {
    (void)state;
    unsetenv("RAGDOLLD_STATE_DIR");
    char out[16384] = "", err[16384] = "";
    app_config c;
    const char* dir[] = {"--state-dir",     "/tmp",   "--autosave", "0",
                         "--journal-fsync", "always", NULL};
    assert_int_equal(parse(dir, &c, out, err), 0);
    assert_string_equal(c.state_dir, "/tmp");
    assert_int_equal(c.autosave_s, 0);
    assert_int_equal(c.journal_fsync, APP_FSYNC_ALWAYS);
    const char* replay[] = {"--replay", "/etc/hostname", "--until", "5", "--print-hash", NULL};
    assert_int_equal(parse(replay, &c, out, err), 0);
    assert_string_equal(c.replay_state, "/etc/hostname");
    assert_true(c.replay_until == 5);
    assert_true(c.print_hash);
    struct {
        const char* args[5];
        const char* says;
    } cases[] = {
        {{"--autosave", "5", NULL}, "--autosave and --journal-fsync need --state-dir"},
        {{"--journal-fsync", "never", NULL}, "need --state-dir"},
        {{"--until", "9", NULL}, "go with --replay STATE"},
        {{"--print-hash", NULL}, "go with --replay STATE"},
        {{"--journal", "/tmp/x.journal", NULL}, "go with --replay STATE"},
        {{"--replay", "/nonexistent/world-1.state", NULL},
         "--replay /nonexistent/world-1.state: No such file or directory"},
        {{"--replay", "/etc/hostname", "--journal", "/nonexistent.journal", NULL},
         "--journal /nonexistent.journal: No such file or directory"},
        {{"--replay", "/tmp", NULL}, "--replay /tmp: not a regular file"},
        {{"--replay", "/etc/hostname", "--port", "5", NULL},
         "--replay runs offline: --port does not apply to it"},
        {{"--replay", "/etc/hostname", "--state-dir", "/tmp", NULL}, "--state-dir does not apply"},
        {{"--state-dir", "/nonexistent", NULL}, "is not a directory this process can write"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
        out[0] = err[0] = '\0';
        assert_int_equal(parse(cases[i].args, &c, out, err), -1);
        if (strstr(err, cases[i].says) == NULL) {
            fail_msg("case %zu: \"%s\" does not say \"%s\"", i, err, cases[i].says);
        }
    }
}

// Agones: on with --agones (the sidecar's port from AGONES_SDK_HTTP_PORT,
// else 9358) or when Agones set AGONES_SDK_HTTP_PORT; its other flags need
// it.
static void test_app_agones_flags(void** state) {
    (void)state;
    unsetenv("AGONES_SDK_HTTP_PORT");
    char out[16384] = "", err[16384] = "";
    app_config c;
    const char* none[] = {NULL};
    assert_int_equal(parse(none, &c, out, err), 0);
    assert_int_equal(c.agones_port, 0);
    assert_true(c.agones_health_s == 2.0);
    assert_int_equal(c.agones_empty_s, 60);
    const char* on[] = {"--agones", "--agones-health", "0.5", "--agones-empty-timeout", "0", NULL};
    assert_int_equal(parse(on, &c, out, err), 0);
    assert_int_equal(c.agones_port, 9358);
    assert_true(c.agones_health_s == 0.5);
    assert_int_equal(c.agones_empty_s, 0);
    setenv("AGONES_SDK_HTTP_PORT", "59358", 1);
    assert_int_equal(parse(none, &c, out, err), 0);
    assert_int_equal(c.agones_port, 59358);
    setenv("AGONES_SDK_HTTP_PORT", "port", 1);
    assert_int_equal(parse(none, &c, out, err), -1);
    assert_non_null(strstr(err, "AGONES_SDK_HTTP_PORT takes a port from 1 to 65535"));
    unsetenv("AGONES_SDK_HTTP_PORT");
    const char* alone[] = {"--agones-health", "1", NULL};
    assert_int_equal(parse(alone, &c, out, err), -1);
    assert_non_null(strstr(err, "go with --agones"));
    const char* fast[] = {"--agones", "--agones-health", "0.01", NULL};
    assert_int_equal(parse(fast, &c, out, err), -1);
    assert_non_null(strstr(err, "--agones-health takes seconds from 0.1 to 60"));
}

// A GameServer as the SDK's REST API sends it (proto field names, int64 as
// strings; Agones' REST guide and sdk.swagger.json), wrapped by the watch
// as {"result": ...}: the state, and the world the allocation asks for.
static void test_app_agones_reads_an_allocated_game_server(void** state) {
    (void)state;
    static const char gs[] =
        "{\"result\":{\"object_meta\":{\"name\":\"fleet-x-7k2qp\",\"namespace\":\"default\","
        "\"generation\":\"3\",\"annotations\":{\"ragdolld.dev/world-name\":\"garden 22\","
        "\"agones.dev/last-allocated\":\"2026-03-05T10:00:00.1Z\"},\"labels\":{"
        "\"agones.dev/fleet\":\"fleet-x\",\"ragdolld.dev/tick-hz\":\"30\","
        "\"ragdolld.dev/world-name\":\"from-a-label\"}},\"spec\":{\"health\":{\"disabled\":false,"
        "\"period_seconds\":5}},\"status\":{\"state\":\"Allocated\",\"address\":\"10.0.0.5\","
        "\"ports\":[{\"name\":\"default\",\"port\":7234}],\"players\":null,\"counters\":{"
        "\"players\":{\"count\":\"0\",\"capacity\":\"100\"}},\"lists\":{}}}}";
    char st[32];
    assert_true(app__agones_state(gs, sizeof gs - 1, st, sizeof st));
    assert_string_equal(st, "Allocated");
    app_agones_match m;
    char why[256] = "";
    assert_int_equal(app__agones_match(gs, sizeof gs - 1, SIM_SOLVER_XPBD, &m, why, sizeof why), 0);
    assert_string_equal(m.name, "garden 22"); // the annotation wins over the label
    assert_int_equal(m.tick_hz, 30);          // from a label
    assert_int_equal(m.solver, SIM_SOLVER_XPBD);
    assert_false(m.solver_given);
    // Nothing asked: the defaults.
    static const char bare[] = "{\"object_meta\":{},\"status\":{\"state\":\"Ready\"}}";
    assert_true(app__agones_state(bare, sizeof bare - 1, st, sizeof st));
    assert_string_equal(st, "Ready");
    assert_int_equal(
        app__agones_match(bare, sizeof bare - 1, SIM_SOLVER_SOFT_STEP, &m, why, sizeof why), 0);
    assert_string_equal(m.name, "match");
    assert_int_equal(m.tick_hz, 60);
    assert_int_equal(m.solver, SIM_SOLVER_SOFT_STEP);
    assert_int_equal(m.player_token_count, 0);
    // A match id names the world unless world-name does; player tokens are
    // kept comma-separated, blanks and empty items dropped.
    static const char match[] =
        "{\"object_meta\":{\"annotations\":{\"ragdolld.dev/match-id\":\"m-17\","
        "\"ragdolld.dev/player-tokens\":\" aaaaaaaaaaaaaaaa, ,bbbbbbbbbbbbbbbb.x \"}}}";
    assert_int_equal(
        app__agones_match(match, sizeof match - 1, SIM_SOLVER_SOFT_STEP, &m, why, sizeof why), 0);
    assert_string_equal(m.name, "m-17");
    assert_string_equal(m.match_id, "m-17");
    assert_int_equal(m.player_token_count, 2);
    assert_string_equal(m.player_tokens, "aaaaaaaaaaaaaaaa,bbbbbbbbbbbbbbbb.x");
    // Each bad value named with its key.
    struct {
        const char* json;
        const char* says;
    } bad[] = {
        {"{\"object_meta\":{\"annotations\":{\"ragdolld.dev/tick-hz\":\"0\"}}}",
         "ragdolld.dev/tick-hz must be a whole number from 1 to 240, not \"0\""},
        {"{\"object_meta\":{\"labels\":{\"ragdolld.dev/tick-hz\":\"60Hz\"}}}", "not \"60Hz\""},
        {"{\"object_meta\":{\"labels\":{\"ragdolld.dev/tick-hz\":\" 60\"}}}", "not \" 60\""},
        {"{\"object_meta\":{\"labels\":{\"ragdolld.dev/tick-hz\":\"+60\"}}}", "not \"+60\""},
        {"{\"object_meta\":{\"annotations\":{\"ragdolld.dev/solver\":\"pbd\"}}}",
         "ragdolld.dev/solver must be xpbd or soft_step, not \"pbd\""},
        {"{\"object_meta\":{\"annotations\":{\"ragdolld.dev/world-name\":\"\"}}}",
         "ragdolld.dev/world-name must be 1 to 64 printable ASCII characters"},
        {"{\"object_meta\":{\"annotations\":{\"ragdolld.dev/world-name\":\"a\\nb\"}}}",
         "printable ASCII"},
        {"{\"object_meta\":{\"annotations\":{\"ragdolld.dev/match-id\":\"\"}}}",
         "ragdolld.dev/match-id must be 1 to 64 printable ASCII characters"},
        {"{\"object_meta\":{\"annotations\":{\"ragdolld.dev/player-tokens\":"
         "\"aaaaaaaaaaaaaaaa,aaaaaaaa/aaaaaaa\"}}}",
         "ragdolld.dev/player-tokens: token 2 is not 16 to 128 characters"},
        {"{\"object_meta\":{\"annotations\":{\"ragdolld.dev/player-tokens\":"
         "\"aaaaaaaaaaaaaaaa aaaaaaaaaaaaaaaa\"}}}",
         "token 2 is given twice"},
        {"[1,2]", "not a JSON object"},
        {"{\"object_meta\":", "not a JSON object"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
        why[0] = '\0';
        assert_int_equal(app__agones_match(bad[i].json, strlen(bad[i].json), SIM_SOLVER_SOFT_STEP,
                                           &m, why, sizeof why),
                         -1);
        if (strstr(why, bad[i].says) == NULL) {
            fail_msg("case %zu: \"%s\" does not say \"%s\"", i, why, bad[i].says);
        }
    }
    assert_false(app__agones_state("{\"result\"", 10, st, sizeof st));
}

static void test_app_world_limits_and_ceiling_flags(void** state) {
    (void)state;
    char out[16384] = "", err[16384] = "";
    app_config c;
    unsetenv("RAGDOLLD_WORLD_LIMITS");
    unsetenv("RAGDOLLD_WORLD_CEILING");
    // Defaults: the simulator's default world, under the default ceiling.
    c = app_config_default();
    const uint32_t limits[RDP_LIMIT_COUNT] = {256, 32768, 262144, 2048, 2048, 49152};
    const uint32_t ceiling[RDP_LIMIT_COUNT] = {4096, 1048576, 4194304, 16384, 16384, 393216};
    for (int i = 0; i < RDP_LIMIT_COUNT; ++i) {
        assert_int_equal(c.world_limits[i], limits[i]);
        assert_int_equal(c.world_ceiling[i], ceiling[i]);
    }
    // Some of each; the others keep their defaults.
    const char* set[] = {"--world-limits", "bodies=4800,joints=4500,entities=300",
                         "--world-ceiling=bodies=8000,particles=100000", NULL};
    assert_int_equal(parse(set, &c, out, err), 0);
    assert_int_equal(c.world_limits[RDP_LIMIT_BODIES], 4800);
    assert_int_equal(c.world_limits[RDP_LIMIT_JOINTS], 4500);
    assert_int_equal(c.world_limits[RDP_LIMIT_ENTITIES], 300);
    assert_int_equal(c.world_limits[RDP_LIMIT_PARTICLES], 32768);
    assert_int_equal(c.world_ceiling[RDP_LIMIT_BODIES], 8000);
    assert_int_equal(c.world_ceiling[RDP_LIMIT_PARTICLES], 100000);
    assert_int_equal(c.world_ceiling[RDP_LIMIT_JOINTS], 16384);
    // A ceiling below a default limit that was not given lowers the limit.
    const char* low[] = {"--world-ceiling", "bodies=100", NULL};
    assert_int_equal(parse(low, &c, out, err), 0);
    assert_int_equal(c.world_limits[RDP_LIMIT_BODIES], 100);
    // The environment, when the flag is absent.
    setenv("RAGDOLLD_WORLD_LIMITS", "contacts=1000", 1);
    setenv("RAGDOLLD_WORLD_CEILING", "contacts=2000", 1);
    const char* none[] = {NULL};
    assert_int_equal(parse(none, &c, out, err), 0);
    assert_int_equal(c.world_limits[RDP_LIMIT_CONTACTS], 1000);
    assert_int_equal(c.world_ceiling[RDP_LIMIT_CONTACTS], 2000);
    const char* flag[] = {"--world-limits", "contacts=10", NULL};
    assert_int_equal(parse(flag, &c, out, err), 0);
    assert_int_equal(c.world_limits[RDP_LIMIT_CONTACTS], 10);
    setenv("RAGDOLLD_WORLD_LIMITS", "contacts=nope", 1);
    assert_int_equal(parse(none, &c, out, err), -1);
    assert_string_equal(err, "ragdolld: RAGDOLLD_WORLD_LIMITS: contacts takes a number from 1 to "
                             "67108864, not \"nope\"\n");
    unsetenv("RAGDOLLD_WORLD_LIMITS");
    unsetenv("RAGDOLLD_WORLD_CEILING");
    // Refusals, each with its reason.
    const struct {
        const char* args[3];
        const char* err;
    } bad[] = {
        {{"--world-limits", "bodies=0", NULL},
         "ragdolld: --world-limits: bodies takes a number from 1 to 1048576, not \"0\"\n"},
        {{"--world-limits", "bodies=-5", NULL},
         "ragdolld: --world-limits: bodies takes a number from 1 to 1048576, not \"-5\"\n"},
        {{"--world-ceiling", "bodies=1048577", NULL},
         "ragdolld: --world-ceiling: bodies takes a number from 1 to 1048576, not \"1048577\"\n"},
        {{"--world-limits", "bones=5", NULL},
         "ragdolld: --world-limits: \"bones\" is not NAME=N with NAME one of entities, "
         "particles, constraints, bodies, joints, contacts\n"},
        {{"--world-limits", "bodies", NULL},
         "ragdolld: --world-limits: \"bodies\" is not NAME=N with NAME one of entities, "
         "particles, constraints, bodies, joints, contacts\n"},
        {{"--world-limits", "bodies=20000", NULL},
         "ragdolld: the world limit bodies=20000 is above the ceiling bodies=16384\n"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
        err[0] = '\0';
        assert_int_equal(parse(bad[i].args, &c, out, err), -1);
        assert_string_equal(err, bad[i].err);
    }
}

// --world-solver, or $RAGDOLLD_WORLD_SOLVER when the flag is absent: xpbd
// or soft_step, exactly; anything else stops the server before it starts,
// naming the option and the value.
static void test_app_world_solver_flag(void** state) {
    (void)state;
    char out[16384] = "", err[16384] = "";
    app_config c;
    unsetenv("RAGDOLLD_WORLD_SOLVER");
    const char* none[] = {NULL};
    assert_int_equal(parse(none, &c, out, err), 0);
    assert_int_equal(c.world_solver, SIM_SOLVER_SOFT_STEP);
    const char* soft[] = {"--world-solver", "soft_step", NULL};
    assert_int_equal(parse(soft, &c, out, err), 0);
    assert_int_equal(c.world_solver, SIM_SOLVER_SOFT_STEP);
    const char* xpbd[] = {"--world-solver=xpbd", NULL};
    assert_int_equal(parse(xpbd, &c, out, err), 0);
    assert_int_equal(c.world_solver, SIM_SOLVER_XPBD);
    // The environment when the flag is absent; the flag wins; an empty
    // variable is as if unset.
    setenv("RAGDOLLD_WORLD_SOLVER", "soft_step", 1);
    assert_int_equal(parse(none, &c, out, err), 0);
    assert_int_equal(c.world_solver, SIM_SOLVER_SOFT_STEP);
    assert_int_equal(parse(xpbd, &c, out, err), 0);
    assert_int_equal(c.world_solver, SIM_SOLVER_XPBD);
    setenv("RAGDOLLD_WORLD_SOLVER", "", 1);
    assert_int_equal(parse(none, &c, out, err), 0);
    assert_int_equal(c.world_solver, SIM_SOLVER_SOFT_STEP);
    setenv("RAGDOLLD_WORLD_SOLVER", "Soft_Step", 1);
    err[0] = '\0';
    assert_int_equal(parse(none, &c, out, err), -1);
    assert_string_equal(
        err, "ragdolld: RAGDOLLD_WORLD_SOLVER takes xpbd or soft_step, not \"Soft_Step\"\n");
    // A good flag overrides a bad environment.
    assert_int_equal(parse(soft, &c, out, err), 0);
    assert_int_equal(c.world_solver, SIM_SOLVER_SOFT_STEP);
    unsetenv("RAGDOLLD_WORLD_SOLVER");
    const char* const bad[] = {"", "SOFT", "soft", "soft-step", "XPBD", "3", "xpbd,soft_step"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
        const char* args[] = {"--world-solver", bad[i], NULL};
        char want[128];
        snprintf(want, sizeof want,
                 "ragdolld: --world-solver takes xpbd or soft_step, not \"%s\"\n", bad[i]);
        err[0] = '\0';
        assert_int_equal(parse(args, &c, out, err), -1);
        assert_string_equal(err, want);
    }
    const char* missing[] = {"--world-solver", NULL};
    err[0] = '\0';
    assert_int_equal(parse(missing, &c, out, err), -1);
    assert_non_null(strstr(err, "ragdolld: unknown or incomplete option"));
}

// A configuration made in code with a solver that is none: refused before
// anything starts, with a line that says so.
static void test_app_start_refuses_an_unknown_world_solver(void** state) {
    (void)state;
    uv_loop_t loop;
    assert_int_equal(uv_loop_init(&loop), 0);
    char log[4096] = "";
    FILE* f = fmemopen(log, sizeof log, "w");
    app_config cfg = app_config_default();
    cfg.port = 0;
    cfg.log_stream = f;
    cfg.world_solver = (sim_solver)7;
    app_server* app = NULL;
    assert_int_equal(app_server_start(&loop, &cfg, &app), UV_EINVAL);
    fclose(f);
    assert_null(app);
    assert_non_null(strstr(log, "world_solver is no solver (xpbd or soft_step)"));
    assert_int_equal(uv_loop_close(&loop), 0); // nothing was opened
}

static void test_app_rejects_bad_worker_counts_with_a_message(void** state) {
    (void)state;
    char out[16384] = "", err[16384] = "";
    app_config c;
    unsetenv("RAGDOLLD_WORKERS");
    const char* negative[] = {"--workers", "-1", NULL};
    assert_int_equal(parse(negative, &c, out, err), -1);
    assert_string_equal(err, "ragdolld: --workers takes a number from 0 to 256, not \"-1\"\n");
    const char* huge[] = {"--workers", "10000", NULL};
    assert_int_equal(parse(huge, &c, out, err), -1);
    assert_string_equal(err, "ragdolld: --workers takes a number from 0 to 256, not \"10000\"\n");
    setenv("RAGDOLLD_WORKERS", "lots", 1);
    const char* nothing[] = {NULL};
    assert_int_equal(parse(nothing, &c, out, err), -1);
    assert_string_equal(err,
                        "ragdolld: RAGDOLLD_WORKERS takes a number from 0 to 256, not \"lots\"\n");
    // A good flag overrides a bad environment.
    const char* one[] = {"--workers", "1", NULL};
    assert_int_equal(parse(one, &c, out, err), 0);
    assert_int_equal(c.workers, 1);
    unsetenv("RAGDOLLD_WORKERS");
}

static void test_app_public_bind_needs_an_auth_file(void** state) {
    (void)state;
    char out[16384] = "", err[16384] = "";
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
    cfg.log_level = APP_LOG_WARN; // not every world created
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
    assert_int_equal(app__world_create(f->app, "t", tick_hz, f->app->cfg.world_limits,
                                       f->app->cfg.world_solver, &w),
                     RDP_OK);
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

// spawn_rope's compliance reaches the world (issue 10, item 9): a 1 kg
// particle hanging on one segment of compliance α (m/N) comes to rest
// α·m·g below the segment's length (XPBD: C = α·F at equilibrium; here
// 0.01 × 1 × 9.81 = 98.1 mm), and on a rigid one at the length.
static void test_app_spawn_compliance_reaches_the_world(void** state) {
    budget_fixture* f = *state;
    app_world* w = world(f, 60);
    const float alpha[2] = {0.0f, 0.01f};
    uint64_t ids[2];
    for (int i = 0; i < 2; ++i) {
        ids[i] = entity_of(apply(f, w,
                                 "\"op\":\"spawn_rope\",\"anchor\":[%d,5,0],\"segments\":1,"
                                 "\"segment_length\":0.5,\"compliance\":%g",
                                 i, (double)alpha[i]));
    }
    expect_ok(apply(f, w,
                    "\"op\":\"spawn_cloth\",\"origin\":[3,5,0],\"cols\":4,\"rows\":4,"
                    "\"spacing\":0.1,\"stretch_compliance\":1e-6,\"shear_compliance\":1e-5,"
                    "\"bend_compliance\":0.5"));
    // The segment starts along +X; it swings down and the damping stops it.
    for (int t = 0; t < 60 * 20; ++t) {
        sim_world_step(w->sim);
    }
    for (int i = 0; i < 2; ++i) {
        sim_entity_view v;
        assert_int_equal(sim_entity_get_view(w->sim, sim_entity_id_load(ids[i]), &v), SIM_OK);
        double hang = 5.0 - (double)v.pos[1].y;
        double want = 0.5 + (double)alpha[i] * 1.0 * 9.81;
        assert_true(fabs(hang - want) < 1e-3);
    }
}

// set_params's wind and air (PROTOCOL.md §3): the reply carries them; a
// value out of range is refused and changes nothing; spawn_cloth takes the
// new cloth fields.
static void test_app_set_params_wind_round_trips(void** state) {
    budget_fixture* f = *state;
    app_world* a = world(f, 60);
    cJSON* r = apply(f, a,
                     "\"op\":\"set_params\",\"wind\":[6,0,-2],\"gust\":0.25,\"gust_period\":4,"
                     "\"air_density\":1.1,\"drag_coef\":0.9,\"lift_coef\":0.3");
    cJSON* p = cJSON_GetObjectItem(r, "params");
    assert_non_null(p);
    cJSON* wind = cJSON_GetObjectItem(p, "wind");
    assert_true(cJSON_GetArrayItem(wind, 0)->valuedouble == 6.0);
    assert_true(cJSON_GetArrayItem(wind, 2)->valuedouble == -2.0);
    assert_true(cJSON_GetObjectItem(p, "gust")->valuedouble == 0.25);
    assert_true(cJSON_GetObjectItem(p, "gust_period")->valuedouble == 4.0);
    assert_true(cJSON_GetObjectItem(p, "air_density")->valuedouble == 1.1);
    assert_true(cJSON_GetObjectItem(p, "drag_coef")->valuedouble == 0.9);
    assert_true(cJSON_GetObjectItem(p, "lift_coef")->valuedouble == 0.3);
    expect_ok(r);
    // Out of range is refused when decoded, before any world sees it.
    const char* bad = "{\"op\":\"set_params\",\"world\":1,\"wind\":[200,0,0],\"gust\":0.5}";
    rdp_command cmd;
    rdp_error err;
    assert_int_equal(rdp_command_decode(bad, strlen(bad), &cmd, &err), RDP_E_OUT_OF_RANGE);
    assert_string_equal(err.message, "field \"wind\" component 0 = 200 is outside [-100, 100]");
    sim_params now = sim_world_params(a->sim);
    assert_true(now.wind.x == 6.0f && now.gust == 0.25f);
    expect_ok(apply(f, a,
                    "\"op\":\"spawn_cloth\",\"origin\":[0,3,0],\"cols\":8,\"rows\":8,"
                    "\"spacing\":0.05,\"pin\":\"left\",\"self_collision\":true,\"thickness\":0.04,"
                    "\"across\":[0,0,1]"));
    // Axes that are not perpendicular: the simulator's out_of_range.
    r = apply(f, a,
              "\"op\":\"spawn_cloth\",\"origin\":[0,3,0],\"cols\":8,\"rows\":8,"
              "\"spacing\":0.05,\"across\":[0,-1,0]");
    cJSON* e = cJSON_GetObjectItem(r, "error");
    assert_non_null(e);
    assert_string_equal(cJSON_GetObjectItem(e, "code")->valuestring, "out_of_range");
    cJSON_Delete(r);
    assert_int_equal(sim_world_entity_count(a->sim), 1);
}

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

static void test_app_world_limits_are_the_worlds_own(void** state) {
    budget_fixture* f = *state;
    uint32_t limits[RDP_LIMIT_COUNT];
    char msg[160] = "";
    // Nothing asked: the server's defaults.
    assert_true(app__world_limits(f->app, NULL, limits, msg, sizeof msg));
    assert_int_equal(limits[RDP_LIMIT_BODIES], 2048);
    // Some asked: those, and the defaults for the rest.
    rdp_limits asked = {(1u << RDP_LIMIT_BODIES) | (1u << RDP_LIMIT_ENTITIES), {0}};
    asked.value[RDP_LIMIT_BODIES] = 2;
    asked.value[RDP_LIMIT_ENTITIES] = 5;
    assert_true(app__world_limits(f->app, &asked, limits, msg, sizeof msg));
    assert_int_equal(limits[RDP_LIMIT_BODIES], 2);
    assert_int_equal(limits[RDP_LIMIT_ENTITIES], 5);
    assert_int_equal(limits[RDP_LIMIT_PARTICLES], 32768);
    app_world* w = NULL;
    assert_int_equal(app__world_create(f->app, "small", 60, limits, SIM_SOLVER_XPBD, &w), RDP_OK);
    assert_int_equal(w->def.max_bodies, 2);
    assert_int_equal(w->def.max_entities, 5);
    // Its spawns are refused at its own limits, named with the numbers.
    const char* ball = "\"op\":\"spawn_ball\",\"position\":[0,3,0]";
    expect_ok(apply(f, w, "%s", ball));
    expect_ok(apply(f, w, "%s", ball));
    expect_error(apply(f, w, "%s", ball), "too_large",
                 "world 1 holds 2 rigid bodies and this ball adds 1; a world holds at most 2");
    for (int i = 0; i < 3; ++i) {
        expect_ok(apply(f, w,
                        "\"op\":\"spawn_rope\",\"anchor\":[0,9,0],\"segments\":1,"
                        "\"segment_length\":0.1"));
    }
    expect_error(apply(f, w, RAGDOLL), "too_large",
                 "world 1 already holds 5 entities, the most a world may");
    assert_int_equal(sim_world_entity_count(w->sim), 5);
    // Above the ceiling: refused, with the ceiling named.
    asked.given = 1u << RDP_LIMIT_JOINTS;
    asked.value[RDP_LIMIT_JOINTS] = 16385;
    assert_false(app__world_limits(f->app, &asked, limits, msg, sizeof msg));
    assert_string_equal(msg, "limits.joints = 16385 is above this server's ceiling of 16384 for a "
                             "world (--world-ceiling)");
    asked.value[RDP_LIMIT_JOINTS] = 16384; // at the ceiling is fine
    assert_true(app__world_limits(f->app, &asked, limits, msg, sizeof msg));
}

// A demo world that does not fit in --world-limits stops the server with a
// line that says so (not "out of memory").
static void test_app_demo_outside_its_limits_is_refused_with_a_reason(void** state) {
    (void)state;
    uv_loop_t loop;
    assert_int_equal(uv_loop_init(&loop), 0);
    char log[4096] = "";
    FILE* f = fmemopen(log, sizeof log, "w");
    app_config cfg = app_config_default();
    cfg.port = 0;
    cfg.log_stream = f;
    cfg.world_limits[RDP_LIMIT_PARTICLES] = 100; // the demo has 437 (no library: no characters)
    app_server* app = NULL;
    assert_int_equal(app_server_start(&loop, &cfg, &app), UV_ENOSPC);
    fclose(f);
    assert_non_null(strstr(log, "the demo world does not fit in --world-limits or "
                                "--max-solver-work; raise them or give --no-demo"));
    assert_int_equal(uv_loop_close(&loop), 0);
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

// ---------------------------------------------------------------------------
// The log: formats, levels, rate limits (on a clock the test supplies)
// ---------------------------------------------------------------------------

// Lines written to a memory stream, and how many.
static int lines_of(const char* text) {
    int n = 0;
    for (const char* p = text; *p != '\0'; ++p) {
        n += *p == '\n';
    }
    return n;
}

static void test_app_log_lines_are_escaped_filtered_and_rate_limited(void** state) {
    (void)state;
    static char text[16384];
    memset(text, 0, sizeof text);
    FILE* f = fmemopen(text, sizeof text, "w");
    app_log log;
    app__log_init(&log, f, APP_LOG_INFO, APP_LOG_TEXT);
    app_log_line l;
    // A value with a space, a quote and a newline is quoted and escaped: one line.
    assert_true(app__log_begin(&log, &l, APP_LOG_INFO, APP_LOGK_ALWAYS, "test", 0));
    app__log_str(&l, "plain", "abc");
    app__log_str(&l, "odd", "a \"b\"\nc");
    app__log_u64(&l, "n", 42);
    app__log_end(&l);
    // Debug is below info: nothing.
    assert_false(app__log_begin(&log, &l, APP_LOG_DEBUG, APP_LOGK_ALWAYS, "quiet", 0));
    fflush(f);
    assert_non_null(
        strstr(text, " level=info event=test plain=abc odd=\"a \\\"b\\\"\\nc\" n=42\n"));
    assert_int_equal(lines_of(text), 1);

    // 15 rate-limited lines in one second: 10 written, 5 suppressed, and
    // the summary comes once the second is over (from the ticker's flush).
    for (int i = 0; i < 15; ++i) {
        bool ok = app__log_begin(&log, &l, APP_LOG_WARN, APP_LOGK_RATE_LIMITED, "rate_limited",
                                 1000000000ull + (uint64_t)i * 1000000ull);
        assert_true(ok == (i < APP_LOG_BURST));
        if (ok) {
            app__log_end(&l);
        }
    }
    app__log_flush(&log, 1500000000ull); // still the same second
    fflush(f);
    assert_int_equal(lines_of(text), 1 + 10);
    app__log_flush(&log, 2000000001ull);
    fflush(f);
    assert_int_equal(lines_of(text), 1 + 10 + 1);
    assert_non_null(strstr(text, "event=log_suppressed kind=rate_limited lines=5\n"));
    // Another kind has its own budget; the next second starts afresh.
    assert_true(app__log_begin(&log, &l, APP_LOG_INFO, APP_LOGK_PROTOCOL, "x", 2000000002ull));
    app__log_end(&l);
    assert_true(app__log_begin(&log, &l, APP_LOG_WARN, APP_LOGK_RATE_LIMITED, "y", 2000000003ull));
    app__log_end(&l);
    fclose(f);

    // JSON: every line parses; control bytes are escaped, UTF-8 stays
    // itself (RFC 8259 §8.1), a byte that is not UTF-8 becomes U+FFFD.
    memset(text, 0, sizeof text);
    f = fmemopen(text, sizeof text, "w");
    app__log_init(&log, f, APP_LOG_DEBUG, APP_LOG_JSON);
    assert_true(app__log_begin(&log, &l, APP_LOG_DEBUG, APP_LOGK_ALWAYS, "j", 0));
    app__log_str(&l, "s",
                 "tab\there \x01 \xc3\xa9 \"q\" \\ \xff 64\xc3\x97"
                 "64");
    app__log_f64(&l, "d", 1.5);
    app__log_end(&l);
    // A line too long for the buffer loses whole fields and says so.
    char big[400];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    assert_true(app__log_begin(&log, &l, APP_LOG_ERROR, APP_LOGK_ALWAYS, "long", 0));
    for (int i = 0; i < 5; ++i) {
        app__log_str(&l, "big", big);
    }
    app__log_end(&l);
    fclose(f);
    char* line = text;
    for (int i = 0; i < 2; ++i) {
        char* nl = strchr(line, '\n');
        assert_non_null(nl);
        cJSON* j = cJSON_ParseWithLength(line, (size_t)(nl - line));
        assert_non_null(j);
        if (i == 0) {
            assert_string_equal(cJSON_GetObjectItem(j, "s")->valuestring,
                                "tab\there \x01 \xc3\xa9 \"q\" \\ \xef\xbf\xbd 64\xc3\x97"
                                "64");
            assert_true(cJSON_GetObjectItem(j, "d")->valuedouble == 1.5);
            assert_string_equal(cJSON_GetObjectItem(j, "level")->valuestring, "debug");
        } else {
            assert_true(cJSON_IsTrue(cJSON_GetObjectItem(j, "truncated")));
        }
        cJSON_Delete(j);
        line = nl + 1;
    }
}

// A skeleton that loaded with a warning is logged at startup with its file
// and both bones (the warning as sim_library_add_skeleton() fills it).
static void test_app_asset_warnings_are_logged_with_file_and_bones(void** state) {
    (void)state;
    static char text[4096];
    memset(text, 0, sizeof text);
    FILE* f = fmemopen(text, sizeof text, "w");
    app_log log;
    app__log_init(&log, f, APP_LOG_WARN, APP_LOG_TEXT);
    static sim_skeleton_def sk;
    memset(&sk, 0, sizeof sk);
    strcpy(sk.name, "clubbed");
    sk.bone_count = 2;
    strcpy(sk.bones[0].name, "torso");
    strcpy(sk.bones[1].name, "club");
    sim_skeleton_issue w = {
        .kind = SIM_SKELETON_MASS_RATIO, .bone = 1, .other = 0, .value = 365.0f};
    strcpy(w.message, "skeleton clubbed: bone club and its parent torso differ in mass 365.0:1");
    app__report_asset_warning(&log, "assets/skeletons/club.json", &sk, &w);
    fclose(f);
    assert_non_null(strstr(text, " level=warn event=asset_warning file=assets/skeletons/club.json "
                                 "skeleton=clubbed bone=club parent=torso mass_ratio=365.000 "
                                 "message=\"skeleton clubbed: bone club and its parent torso "
                                 "differ in mass 365.0:1\"\n"));
    assert_int_equal(lines_of(text), 1);
}

static void test_app_metrics_counters_are_bounded(void** state) {
    (void)state;
    app_metrics m;
    memset(&m, 0, sizeof m);
    app__metrics_command(&m, RDP_OP_DESCRIBE, RDP_E_RATE_LIMITED);
    app__metrics_command(&m, 9999, RDP_OK);              // an op out of range: "unknown"
    app__metrics_command(&m, RDP_OP_KILL, (rdp_code)99); // a code out of range: "internal"
    assert_int_equal(m.commands[RDP_OP_DESCRIBE][RDP_E_RATE_LIMITED], 1);
    assert_int_equal(m.commands[0][RDP_OK], 1);
    assert_int_equal(m.commands[RDP_OP_KILL][RDP_E_INTERNAL], 1);
    app__metrics_close(&m, 1000);
    app__metrics_close(&m, 4321); // other
    assert_int_equal(m.closes[0], 1);
    assert_int_equal(m.closes[APP_CLOSE_CODES], 1);
    app__metrics_refused(&m, 429);
    app__metrics_refused(&m, 418); // other
    assert_int_equal(m.refused[5], 1);
    assert_int_equal(m.refused[APP_REFUSED_STATUSES], 1);
    // Histogram buckets are upper bounds: 0.1 ms goes in le=0.0001, 0.1 ms
    // + 1 ns in the next, 1 s in +Inf.
    app_tick_histogram h;
    memset(&h, 0, sizeof h);
    app__tick_observe(&h, 100000);
    app__tick_observe(&h, 100001);
    app__tick_observe(&h, 1000000000);
    assert_int_equal(h.buckets[0], 1);
    assert_int_equal(h.buckets[1], 1);
    assert_int_equal(h.buckets[APP_TICK_BUCKETS], 1);
    assert_int_equal(h.count, 3);
    assert_true(h.sum_ns == 1000200001ull);
}

// ---------------------------------------------------------------------------
// /metrics and the log of a running server, driven over real sockets
// ---------------------------------------------------------------------------

// The server runs on its own loop thread; the test is a client on blocking
// sockets (like test_net.c) and reads the server's state only through
// /metrics, and its log only once the loop has ended.
typedef struct live_fixture {
    uv_loop_t loop;
    uv_thread_t thread;
    uv_async_t stop;
    app_server* app;
    int port;
    FILE* log;
    bool done;
} live_fixture;

static void live_loop(void* arg) {
    live_fixture* f = arg;
    uv_run(&f->loop, UV_RUN_DEFAULT);
}

static void live_done(void* arg) {
    ((live_fixture*)arg)->done = true;
}

static void live_stop(uv_async_t* a) {
    live_fixture* f = a->data;
    app_server_shutdown(f->app, live_done, f);
    uv_close((uv_handle_t*)&f->stop, NULL);
}

// Starts a server on its own thread, with the demo world when `demo`, and
// `solver` as its default (--world-solver).
static int live_start(void** state, bool demo, sim_solver solver) {
    live_fixture* f = calloc(1, sizeof *f);
    assert_int_equal(uv_loop_init(&f->loop), 0);
    f->log = tmpfile();
    assert_non_null(f->log);
    app_config cfg = app_config_default();
    cfg.port = 0;
    cfg.demo = demo;
    cfg.web_root = NULL;
    cfg.log_stream = f->log;
    cfg.log_level = APP_LOG_DEBUG;
    cfg.world_solver = solver;
    assert_int_equal(app_server_start(&f->loop, &cfg, &f->app), 0);
    f->port = app_server_port(f->app);
    uv_async_init(&f->loop, &f->stop, live_stop);
    f->stop.data = f;
    assert_int_equal(uv_thread_create(&f->thread, live_loop, f), 0);
    *state = f;
    return 0;
}

static int live_setup(void** state) {
    return live_start(state, false, SIM_SOLVER_XPBD);
}

// The demo world, and soft_step as the server's default solver.
static int live_setup_soft_demo(void** state) {
    return live_start(state, true, SIM_SOLVER_SOFT_STEP);
}

// Stops the server and returns its log (malloc()ed, NUL-terminated).
static char* live_stop_and_read_log(live_fixture* f) {
    uv_async_send(&f->stop);
    uv_thread_join(&f->thread);
    assert_true(f->done);
    assert_int_equal(uv_loop_close(&f->loop), 0); // every handle closed
    long n = ftell(f->log);
    char* text = calloc(1, (size_t)n + 1);
    rewind(f->log);
    assert_int_equal(fread(text, 1, (size_t)n, f->log), (size_t)n);
    fclose(f->log);
    f->log = NULL;
    return text;
}

static int live_teardown(void** state) {
    live_fixture* f = *state;
    if (f->log != NULL) {
        free(live_stop_and_read_log(f));
    }
    free(f);
    return 0;
}

static int tcp_connect(int port) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    struct timeval tv = {5, 0}; // no test waits forever
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(connect(fd, (struct sockaddr*)&a, sizeof a), 0);
    return fd;
}

static void send_bytes(int fd, const void* data, size_t len) {
    const char* p = data;
    while (len > 0) {
        ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
        assert_true(n > 0);
        p += n;
        len -= (size_t)n;
    }
}

static bool recv_bytes(int fd, void* buf, size_t len) {
    uint8_t* p = buf;
    while (len > 0) {
        ssize_t n = recv(fd, p, len, 0);
        if (n <= 0) {
            return false;
        }
        p += n;
        len -= (size_t)n;
    }
    return true;
}

// Reads an HTTP response head and its Content-Length body into buf.
static int http_read(int fd, char* buf, size_t cap) {
    size_t len = 0;
    char* end = NULL;
    while (end == NULL && len < cap - 1 && recv_bytes(fd, buf + len, 1)) {
        buf[++len] = '\0';
        end = strstr(buf, "\r\n\r\n");
    }
    assert_non_null(end);
    const char* cl = strstr(buf, "Content-Length: ");
    size_t body = cl != NULL ? (size_t)atol(cl + 16) : 0;
    assert_true(len + body < cap);
    assert_true(recv_bytes(fd, buf + len, body));
    buf[len + body] = '\0';
    int status = 0;
    sscanf(buf, "HTTP/1.1 %d", &status);
    return status;
}

static int http_get(int port, const char* path, char* buf, size_t cap) {
    int fd = tcp_connect(port);
    char req[256];
    snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", path);
    send_bytes(fd, req, strlen(req));
    int status = http_read(fd, buf, cap);
    close(fd);
    return status;
}

static char metrics_page[256 * 1024];

// Fetches /metrics; returns its body (in metrics_page).
static const char* scrape(live_fixture* f) {
    assert_int_equal(http_get(f->port, "/metrics", metrics_page, sizeof metrics_page), 200);
    assert_non_null(strstr(metrics_page, "Content-Type: text/plain; version=0.0.4"));
    return strstr(metrics_page, "\r\n\r\n") + 4;
}

// The value of one sample ("name{labels}" exactly as exposed), 0 when the
// series is absent (commands_total shows only what happened).
static double sample(const char* page, const char* series) {
    size_t n = strlen(series);
    for (const char* p = page; (p = strstr(p, series)) != NULL; p += n) {
        if ((p == page || p[-1] == '\n') && p[n] == ' ') {
            return atof(p + n + 1);
        }
    }
    return 0.0;
}

static int ws_connect(live_fixture* f) {
    int fd = tcp_connect(f->port);
    const char* req = "GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                      "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                      "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: ragdolld.v1\r\n\r\n";
    send_bytes(fd, req, strlen(req));
    char resp[1024];
    assert_int_equal(http_read(fd, resp, sizeof resp), 101);
    return fd;
}

static void ws_frame(int fd, uint8_t opcode, const void* data, size_t len) {
    uint8_t hdr[14];
    size_t h = 0;
    hdr[h++] = (uint8_t)(0x80 | opcode);
    if (len < 126) {
        hdr[h++] = (uint8_t)(0x80 | len);
    } else if (len < 65536) {
        hdr[h++] = 0x80 | 126;
        hdr[h++] = (uint8_t)(len >> 8);
        hdr[h++] = (uint8_t)len;
    } else {
        hdr[h++] = 0x80 | 127;
        for (int i = 7; i >= 0; --i) {
            hdr[h++] = (uint8_t)((uint64_t)len >> (8 * i));
        }
    }
    memset(hdr + h, 0, 4); // a zero mask: the payload goes as it is
    h += 4;
    // One send, so Nagle does not hold the payload back for an ACK.
    char* frame = malloc(h + len);
    memcpy(frame, hdr, h);
    memcpy(frame + h, data, len);
    send_bytes(fd, frame, h + len);
    free(frame);
}

// Reads one frame; returns its opcode (-1 on EOF), the payload in *out
// (malloc()ed, NUL-terminated) and its length in *len.
static int ws_read(int fd, char** out, size_t* len) {
    uint8_t h[2];
    if (!recv_bytes(fd, h, 2)) {
        return -1;
    }
    uint64_t n = h[1] & 0x7f;
    if (n >= 126) {
        uint8_t e[8];
        size_t k = n == 126 ? 2 : 8;
        assert_true(recv_bytes(fd, e, k));
        n = 0;
        for (size_t i = 0; i < k; ++i) {
            n = (n << 8) | e[i];
        }
    }
    *out = malloc(n + 1);
    assert_true(n == 0 || recv_bytes(fd, *out, n));
    (*out)[n] = '\0';
    *len = n;
    return h[0] & 0x0f;
}

// Sends a command and reads text frames until its reply (by "re"); returns
// the reply's error code, or "ok". Every text frame read is added to
// *frames and its payload bytes to *bytes.
static const char* command(int fd, const char* text, int re, int* frames, size_t* bytes) {
    static char code[32];
    ws_frame(fd, 0x1, text, strlen(text));
    for (;;) {
        char* body;
        size_t len;
        assert_int_equal(ws_read(fd, &body, &len), 0x1);
        *frames += 1;
        *bytes += len;
        cJSON* j = cJSON_Parse(body);
        free(body);
        assert_non_null(j);
        cJSON* r = cJSON_GetObjectItem(j, "re");
        if (r != NULL && (re < 0 ? cJSON_IsNull(r) : r->valuedouble == re)) {
            cJSON* e = cJSON_GetObjectItem(j, "error");
            snprintf(code, sizeof code, "%s",
                     e != NULL ? cJSON_GetObjectItem(e, "code")->valuestring : "ok");
            cJSON_Delete(j);
            return code;
        }
        cJSON_Delete(j);
    }
}

// Reads frames until a close frame; returns its code (-1 on EOF).
static int ws_close_code(int fd) {
    for (;;) {
        char* body;
        size_t len;
        int op = ws_read(fd, &body, &len);
        if (op < 0) {
            return -1;
        }
        int code = len >= 2 ? ((uint8_t)body[0] << 8) | (uint8_t)body[1] : 0;
        free(body);
        if (op == 0x8) {
            return code;
        }
    }
}

// Scrapes until `series` has grown by `delta` from `before` (a close is
// counted once the server has closed its side, a moment after the client
// saw the close frame), for up to 5 s; returns the last page.
static const char* scrape_until(live_fixture* f, const char* series, double before, double delta) {
    const char* page = scrape(f);
    for (int i = 0; i < 100 && sample(page, series) < before + delta; ++i) {
        usleep(50 * 1000);
        page = scrape(f);
    }
    return page;
}

#define CMD(op, code) "ragdolld_commands_total{op=\"" op "\",code=\"" code "\"}"
#define TEXT_MSGS     "ragdolld_messages_sent_total{kind=\"text\"}"
#define TEXT_BYTES    "ragdolld_message_bytes_sent_total{kind=\"text\"}"
#define ADMINS        "ragdolld_sessions{role=\"admin\"}"
#define CLOSES(code)  "ragdolld_ws_closes_total{code=\"" code "\"}"

static void test_app_metrics_count_commands_messages_and_closes(void** state) {
    live_fixture* f = *state;
    const char* page = scrape(f);
    double ok = sample(page, CMD("list_worlds", "ok"));
    double bad = sample(page, CMD("unknown", "bad_json"));
    double missing = sample(page, CMD("spawn_ball", "not_found"));
    double spawned = sample(page, CMD("spawn_ball", "ok"));
    double created = sample(page, CMD("create_world", "ok"));
    double texts = sample(page, TEXT_MSGS);
    double text_bytes = sample(page, TEXT_BYTES);
    double wire = sample(page, "ragdolld_net_sent_bytes_total");
    double normal = sample(page, CLOSES("1000"));
    double too_big = sample(page, CLOSES("1009"));
    assert_true(sample(page, ADMINS) == 0.0);
    assert_true(sample(page, "ragdolld_worlds") == 0.0);

    // One ok command and one bad one, an immediate error, a world created
    // (by a name that must not be logged) and a world command answered at
    // its tick.
    int fd = ws_connect(f);
    int frames = 0;
    size_t bytes = 0;
    char* welcome;
    size_t len;
    assert_int_equal(ws_read(fd, &welcome, &len), 0x1);
    frames++;
    bytes += len;
    free(welcome);
    assert_string_equal(command(fd, "{\"op\":\"list_worlds\",\"id\":1}", 1, &frames, &bytes), "ok");
    assert_string_equal(command(fd, "{\"op\":", -1, &frames, &bytes), "bad_json");
    assert_string_equal(
        command(fd, "{\"op\":\"spawn_ball\",\"id\":3,\"world\":99,\"position\":[0,3,0]}", 3,
                &frames, &bytes),
        "not_found");
    assert_string_equal(
        command(fd, "{\"op\":\"create_world\",\"id\":4,\"name\":\"zanzibar\"}", 4, &frames, &bytes),
        "ok");
    assert_string_equal(command(fd,
                                "{\"op\":\"spawn_ball\",\"id\":5,\"world\":1,\"position\":[0,3,0]}",
                                5, &frames, &bytes),
                        "ok");

    page = scrape(f);
    assert_true(sample(page, CMD("list_worlds", "ok")) == ok + 1);
    assert_true(sample(page, CMD("unknown", "bad_json")) == bad + 1);
    assert_true(sample(page, CMD("spawn_ball", "not_found")) == missing + 1);
    assert_true(sample(page, CMD("create_world", "ok")) == created + 1);
    assert_true(sample(page, CMD("spawn_ball", "ok")) == spawned + 1);
    // Every text frame the client read, and exactly their payload bytes (no
    // subscription: nothing else was sent to it).
    assert_true(sample(page, TEXT_MSGS) == texts + frames);
    assert_true(sample(page, TEXT_BYTES) == text_bytes + (double)bytes);
    assert_true(sample(page, "ragdolld_net_sent_bytes_total") > wire + (double)bytes);
    assert_true(sample(page, ADMINS) == 1.0);
    assert_true(sample(page, "ragdolld_worlds") == 1.0);
    assert_true(sample(page, "ragdolld_entities{world=\"1\",kind=\"ball\"}") == 1.0);
    assert_true(sample(page, "ragdolld_rigid_bodies{world=\"1\",kind=\"ball\"}") == 1.0);
    // The spawn was answered at its tick boundary; the tick is counted when
    // its step comes back from a worker, a moment later.
    page = scrape_until(f, "ragdolld_tick_duration_seconds_count{world=\"1\"}", 0, 1);
    assert_true(sample(page, "ragdolld_tick_duration_seconds_count{world=\"1\"}") >= 1.0);

    // The client closes normally: 1000.
    const uint8_t bye[2] = {0x03, 0xe8};
    ws_frame(fd, 0x8, bye, 2);
    assert_int_equal(ws_close_code(fd), 1000);
    close(fd);
    page = scrape_until(f, CLOSES("1000"), normal, 1);
    assert_true(sample(page, CLOSES("1000")) == normal + 1);
    assert_true(sample(page, ADMINS) == 0.0);

    // The server refuses a message over 64 KiB from its header: 1009.
    fd = ws_connect(f);
    static char huge[70000];
    memset(huge, ' ', sizeof huge);
    ws_frame(fd, 0x1, huge, sizeof huge);
    assert_int_equal(ws_close_code(fd), 1009);
    close(fd);
    page = scrape_until(f, CLOSES("1009"), too_big, 1);
    assert_true(sample(page, CLOSES("1009")) == too_big + 1);
    assert_true(sample(page, CLOSES("1000")) == normal + 1);

    // A plain GET of /ws is an upgrade refused (426); on_refused runs before
    // the response is written, so the next scrape sees it.
    char resp[1024];
    double refused = sample(page, "ragdolld_upgrades_refused_total{status=\"426\"}");
    assert_int_equal(http_get(f->port, "/ws", resp, sizeof resp), 426);
    page = scrape(f);
    assert_true(sample(page, "ragdolld_upgrades_refused_total{status=\"426\"}") == refused + 1);

    // The log: a line per session opened and closed with its close code,
    // the world by id, the bad command by its code, never the world's name.
    char* log = live_stop_and_read_log(f);
    assert_non_null(strstr(log, "level=info event=session_opened session="));
    assert_non_null(strstr(log, "level=info event=session_closed session="));
    assert_non_null(strstr(log, "close_code=1000 close_sent=1000 close_received=1000 "
                                "reason=\"closed by the peer\"\n"));
    assert_non_null(strstr(log, "close_code=1009 close_sent=1009"));
    assert_non_null(strstr(log, "reason=\"message too big\"\n"));
    assert_non_null(strstr(log, "event=world_created world=1 tick_hz=60"));
    assert_non_null(strstr(log, "event=command_rejected session="));
    assert_non_null(strstr(log, "op=unknown code=bad_json\n"));
    assert_non_null(strstr(log, "event=upgrade_refused peer=127.0.0.1:"));
    assert_non_null(strstr(log, "status=426 why=\"this path takes a WebSocket upgrade\"\n"));
    assert_non_null(strstr(log, "level=debug event=command session=")); // each command by op
    assert_null(strstr(log, "zanzibar"));
    free(log);
}

// Sends a command and reads text frames until its reply (by "re"); returns
// the reply, parsed (cJSON_Delete() it).
static cJSON* reply_to(int fd, const char* text, int re) {
    ws_frame(fd, 0x1, text, strlen(text));
    for (;;) {
        char* body;
        size_t len;
        assert_int_equal(ws_read(fd, &body, &len), 0x1);
        cJSON* j = cJSON_Parse(body);
        free(body);
        assert_non_null(j);
        cJSON* r = cJSON_GetObjectItem(j, "re");
        if (cJSON_IsNumber(r) && r->valuedouble == re) {
            return j;
        }
        cJSON_Delete(j);
    }
}

// The "solver" of each world list_worlds gives, in order, as "a,b,c".
static const char* solvers_listed(int fd, int re) {
    static char list[256];
    char text[64];
    snprintf(text, sizeof text, "{\"op\":\"list_worlds\",\"id\":%d}", re);
    cJSON* r = reply_to(fd, text, re);
    list[0] = '\0';
    const cJSON* w;
    cJSON_ArrayForEach(w, cJSON_GetObjectItem(r, "worlds")) {
        const cJSON* s = cJSON_GetObjectItem(w, "solver");
        assert_true(cJSON_IsString(s));
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", list[0] ? "," : "",
                 s->valuestring);
    }
    cJSON_Delete(r);
    return list;
}

// create_world's solver over the wire: each one is applied and reported
// (reply, list_worlds, the log); without one the server's default; a bad
// one is bad_request naming the choices, and makes no world (not even an
// id).
static void test_app_create_world_takes_a_solver(void** state) {
    live_fixture* f = *state;
    int fd = ws_connect(f);
    char* welcome;
    size_t len;
    assert_int_equal(ws_read(fd, &welcome, &len), 0x1);
    free(welcome);
    static const struct {
        const char* solver; ///< JSON of "solver", NULL: absent.
        const char* got;
    } good[] = {{"\"xpbd\"", "xpbd"}, {"\"soft_step\"", "soft_step"}, {NULL, "xpbd"}};
    for (int i = 0; i < 3; ++i) {
        char text[160];
        snprintf(text, sizeof text, "{\"op\":\"create_world\",\"id\":%d,\"name\":\"w%d\"%s%s}",
                 i + 1, i + 1, good[i].solver != NULL ? ",\"solver\":" : "",
                 good[i].solver != NULL ? good[i].solver : "");
        cJSON* r = reply_to(fd, text, i + 1);
        assert_true(cJSON_IsTrue(cJSON_GetObjectItem(r, "ok")));
        assert_true(cJSON_GetObjectItem(r, "world")->valuedouble == i + 1);
        assert_string_equal(cJSON_GetObjectItem(r, "solver")->valuestring, good[i].got);
        assert_non_null(cJSON_GetObjectItem(r, "limits")); // as before
        cJSON_Delete(r);
    }
    assert_string_equal(solvers_listed(fd, 10), "xpbd,soft_step,xpbd");

    const char* const choices = "field \"solver\" must be a string: \"xpbd\" or \"soft_step\"";
    static const struct {
        const char* solver;
        const char* message;
    } bad[] = {
        {"\"\"", "field \"solver\" must be \"xpbd\" or \"soft_step\", not \"\""},
        {"\"SOFT\"", "field \"solver\" must be \"xpbd\" or \"soft_step\", not \"SOFT\""},
        {"\"Soft_Step\"", "field \"solver\" must be \"xpbd\" or \"soft_step\", not \"Soft_Step\""},
        {"3", NULL},
        {"null", NULL},
        {"{\"name\":\"soft_step\"}", NULL},
        {"[\"xpbd\"]", NULL},
        {"false", NULL},
    };
    for (int i = 0; i < (int)(sizeof bad / sizeof bad[0]); ++i) {
        char text[160];
        snprintf(text, sizeof text,
                 "{\"op\":\"create_world\",\"id\":%d,\"name\":\"bad\",\"solver\":%s}", 20 + i,
                 bad[i].solver);
        cJSON* r = reply_to(fd, text, 20 + i);
        const cJSON* e = cJSON_GetObjectItem(r, "error");
        assert_non_null(e);
        assert_string_equal(cJSON_GetObjectItem(e, "code")->valuestring, "bad_request");
        assert_string_equal(cJSON_GetObjectItem(e, "message")->valuestring,
                            bad[i].message != NULL ? bad[i].message : choices);
        assert_null(cJSON_GetObjectItem(r, "world"));
        cJSON_Delete(r);
    }
    // Nothing was made: the same three worlds, and the next one gets the
    // next id.
    assert_string_equal(solvers_listed(fd, 30), "xpbd,soft_step,xpbd");
    assert_true(sample(scrape(f), "ragdolld_worlds") == 3.0);
    cJSON* r = reply_to(
        fd, "{\"op\":\"create_world\",\"id\":31,\"name\":\"w4\",\"solver\":\"soft_step\"}", 31);
    assert_true(cJSON_GetObjectItem(r, "world")->valuedouble == 4.0);
    cJSON_Delete(r);
    close(fd);
    char* log = live_stop_and_read_log(f);
    assert_non_null(strstr(log, "event=world_created world=1 tick_hz=60 solver=xpbd worlds=1"));
    assert_non_null(
        strstr(log, "event=world_created world=2 tick_hz=60 solver=soft_step worlds=2"));
    assert_non_null(strstr(log, "event=world_created world=3 tick_hz=60 solver=xpbd worlds=3"));
    assert_non_null(
        strstr(log, "event=world_created world=4 tick_hz=60 solver=soft_step worlds=4"));
    free(log);
}

// The server's default solver (--world-solver soft_step) is the demo
// world's (in the welcome's list) and that of a create_world that gives
// none; one that gives a solver gets it.
static void test_app_server_default_solver_applies_to_demo_and_create_world(void** state) {
    live_fixture* f = *state;
    int fd = ws_connect(f);
    char* welcome;
    size_t len;
    assert_int_equal(ws_read(fd, &welcome, &len), 0x1);
    cJSON* w = cJSON_Parse(welcome);
    free(welcome);
    const cJSON* demo = cJSON_GetArrayItem(cJSON_GetObjectItem(w, "worlds"), 0);
    assert_string_equal(cJSON_GetObjectItem(demo, "name")->valuestring, "demo");
    assert_string_equal(cJSON_GetObjectItem(demo, "solver")->valuestring, "soft_step");
    cJSON_Delete(w);
    cJSON* r = reply_to(fd, "{\"op\":\"create_world\",\"id\":1,\"name\":\"a\"}", 1);
    assert_string_equal(cJSON_GetObjectItem(r, "solver")->valuestring, "soft_step");
    cJSON_Delete(r);
    r = reply_to(fd, "{\"op\":\"create_world\",\"id\":2,\"name\":\"b\",\"solver\":\"xpbd\"}", 2);
    assert_string_equal(cJSON_GetObjectItem(r, "solver")->valuestring, "xpbd");
    cJSON_Delete(r);
    assert_string_equal(solvers_listed(fd, 3), "soft_step,soft_step,xpbd");
    close(fd);
}

// Refusals without a reply (a binary ack over the command rate, which
// on_message drops) and with one (forbidden): counted by op and code and
// logged, on a server whose loop is not running (the calls are the loop
// thread's own).
static void test_app_refusals_are_counted_and_logged(void** state) {
    budget_fixture* f = *state;
    static char text[4096];
    memset(text, 0, sizeof text);
    FILE* log = fmemopen(text, sizeof text, "w");
    f->app->log.out = log;
    f->app->log.level = APP_LOG_INFO;
    app__report_command(f->app, NULL, RDP_OP_ACK, RDP_E_RATE_LIMITED, false);
    app__report_command(f->app, NULL, RDP_OP_DESTROY_WORLD, RDP_E_FORBIDDEN, false);
    app__report_command(f->app, NULL, RDP_OP_SPAWN_BALL, RDP_OK, false); // debug: no line
    fflush(log);
    f->app->log.out = stderr;
    f->app->log.level = APP_LOG_WARN;
    fclose(log);
    assert_non_null(strstr(text, " level=warn event=rate_limited op=ack code=rate_limited\n"));
    assert_non_null(strstr(text, " level=warn event=forbidden op=destroy_world code=forbidden\n"));
    assert_int_equal(lines_of(text), 2);
    // Sixteen worlds (the most --max-worlds allows by default) take the page
    // past its first buffer of 16 KiB.
    app_world* w = world(f, 60);
    for (int i = 1; i < 16; ++i) {
        world(f, 60);
    }
    size_t len = 0;
    char* page = app__metrics_render(f->app, &len);
    assert_true(len > 16384);
    assert_non_null(
        strstr(page, "ragdolld_solver_overflows_total{world=\"16\",array=\"contacts\"} 0\n"));
    assert_true(sample(page, "ragdolld_worlds") == 16.0);
    assert_non_null(page);
    assert_int_equal(strlen(page), len);
    assert_true(sample(page, CMD("ack", "rate_limited")) == 1.0);
    assert_true(sample(page, "ragdolld_rate_limited_total") == 0.0); // on_message's own count
    assert_true(sample(page, "ragdolld_auth_refusals_total{reason=\"token\"}") == 0.0);
    assert_non_null(strstr(page, "\nragdolld_auth_refusals_total{reason=\"full\"} 0\n"));
    assert_true(sample(page, CMD("destroy_world", "forbidden")) == 1.0);
    assert_true(sample(page, CMD("spawn_ball", "ok")) == 1.0);
    // Every sample follows its family's HELP and TYPE, and a family's samples
    // are together (the text format's rule): a name seen in a TYPE line is
    // never seen again after another family's TYPE.
    char family[128] = "";
    char seen[64][128];
    int families = 0;
    for (char* line = page; *line != '\0'; line = strchr(line, '\n') + 1) {
        char name[128];
        if (sscanf(line, "# TYPE %127s", name) == 1) {
            for (int i = 0; i < families; ++i) {
                assert_string_not_equal(seen[i], name);
            }
            snprintf(seen[families++], sizeof seen[0], "%s", name);
            snprintf(family, sizeof family, "%s", name);
        } else if (line[0] != '#') {
            assert_int_equal(strncmp(line, family, strlen(family)), 0);
        }
    }
    assert_true(families >= 20);
    char series[96];
    snprintf(series, sizeof series, "ragdolld_entities{world=\"%llu\",kind=\"rope\"}",
             (unsigned long long)w->id);
    assert_non_null(strstr(page, series));
    free(page);
}

// spawn_softbody through the server: admitted on its counts (particles and
// solver work, hand-priced), refused with the limit named and nothing
// changed, and the refusals only the world can make (mass per particle,
// the cube's place) named too.
static void test_app_spawn_softbody_is_admitted_on_its_counts(void** state) {
    budget_fixture* f = *state;
    app_world* w = world(f, 60);
    // Resolution 8: 512 particles; 512 × (1 + 16) × 8 iterations × 1
    // substep + 512 × 4 (shape matching) = 71680 projections per tick.
    uint64_t work0 = sim_world_solver_work(w->sim);
    uint64_t id = entity_of(apply(f, w,
                                  "\"op\":\"spawn_softbody\",\"position\":[0,2,0],"
                                  "\"shape\":\"box\",\"size\":1,\"resolution\":8"));
    assert_true(id != 0);
    assert_true(sim_world_solver_work(w->sim) - work0 == 71680);
    for (int i = 1; i < 6; ++i) {
        expect_ok(apply(f, w,
                        "\"op\":\"spawn_softbody\",\"position\":[%d,2,0],\"shape\":\"box\","
                        "\"size\":1,\"resolution\":8",
                        3 * i));
    }
    // Six: 430080. A seventh: 501760 > 500000, refused with the numbers.
    assert_true(sim_world_solver_work(w->sim) - work0 == 6 * 71680);
    uint32_t entities = sim_world_entity_count(w->sim);
    expect_error(apply(f, w,
                       "\"op\":\"spawn_softbody\",\"position\":[0,2,-9],\"shape\":\"box\","
                       "\"size\":1,\"resolution\":8"),
                 "too_large",
                 "world 1 would need 501760 solver projections per tick (at 8 iterations x 1 "
                 "substeps); the limit per world is 500000");
    assert_int_equal(sim_world_entity_count(w->sim), entities);

    // A world of 1000 particles.
    uint32_t limits[RDP_LIMIT_COUNT];
    memcpy(limits, f->app->cfg.world_limits, sizeof limits);
    limits[RDP_LIMIT_PARTICLES] = 1000;
    app_world* small = NULL;
    assert_int_equal(app__world_create(f->app, "small", 60, limits, SIM_SOLVER_SOFT_STEP, &small),
                     RDP_OK);
    expect_error(apply(f, small,
                       "\"op\":\"spawn_softbody\",\"position\":[0,2,0],\"shape\":\"box\","
                       "\"size\":1,\"resolution\":11"),
                 "too_large",
                 "a soft body of resolution 11 has 1331 particles; a world holds at most 1000");
    expect_ok(apply(f, small,
                    "\"op\":\"spawn_softbody\",\"position\":[0,2,0],\"shape\":\"box\","
                    "\"size\":1"));
    expect_error(apply(f, small,
                       "\"op\":\"spawn_softbody\",\"position\":[5,2,0],\"shape\":\"box\","
                       "\"size\":1,\"resolution\":10"),
                 "too_large",
                 "world 2 holds 64 particles and this soft body adds 1000; a world holds at most "
                 "1000");
    // 4096 particles of 2.4 mg: under 1 g each.
    expect_error(apply(f, small,
                       "\"op\":\"spawn_softbody\",\"position\":[5,2,0],\"shape\":\"box\","
                       "\"size\":1,\"resolution\":9,\"mass\":0.5"),
                 "out_of_range",
                 "a soft body's particles must each weigh at least 1 g (mass 0.5 kg over its "
                 "lattice) and its whole cube lie in the world: x, y and z each within [-1000, "
                 "1000] m");
    // Its centre in the world, a corner out of it.
    expect_error(apply(f, small,
                       "\"op\":\"spawn_softbody\",\"position\":[999.8,2,0],"
                       "\"shape\":\"box\",\"size\":1"),
                 "out_of_range",
                 "a soft body's particles must each weigh at least 1 g (mass 10 kg over its "
                 "lattice) and its whole cube lie in the world: x, y and z each within [-1000, "
                 "1000] m");
    assert_int_equal(sim_world_entity_count(small->sim), 1);
    assert_int_equal(sim_world_particle_count(small->sim), 64);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_app_defaults),
        cmocka_unit_test(test_app_parses_every_flag),
        cmocka_unit_test(test_app_help_and_version_exit_successfully),
        cmocka_unit_test(test_app_rejects_bad_flags_with_a_message),
        cmocka_unit_test(test_app_rejects_bad_worker_counts_with_a_message),
        cmocka_unit_test(test_app_describe_budget_is_a_token_bucket),
        cmocka_unit_test(test_app_state_and_replay_flags_need_their_partners),
        cmocka_unit_test(test_app_agones_flags),
        cmocka_unit_test(test_app_agones_reads_an_allocated_game_server),
        cmocka_unit_test(test_app_world_limits_and_ceiling_flags),
        cmocka_unit_test(test_app_world_solver_flag),
        cmocka_unit_test(test_app_start_refuses_an_unknown_world_solver),
        cmocka_unit_test(test_app_demo_outside_its_limits_is_refused_with_a_reason),
        cmocka_unit_test(test_app_public_bind_needs_an_auth_file),
        cmocka_unit_test(test_app_auth_file_is_parsed_and_checked),
        cmocka_unit_test_setup_teardown(test_app_solver_work_is_limited_per_world_and_in_all,
                                        budget_setup, budget_teardown),
        cmocka_unit_test_setup_teardown(test_app_spawn_compliance_reaches_the_world, budget_setup,
                                        budget_teardown),
        cmocka_unit_test_setup_teardown(test_app_set_params_wind_round_trips, budget_setup,
                                        budget_teardown),
        cmocka_unit_test_setup_teardown(test_app_world_limits_are_the_worlds_own, budget_setup,
                                        budget_teardown),
        cmocka_unit_test_setup_teardown(test_app_capacity_refusals_name_their_limit, budget_setup,
                                        budget_teardown),
        cmocka_unit_test_setup_teardown(test_app_spawn_softbody_is_admitted_on_its_counts,
                                        budget_setup, budget_teardown),
        cmocka_unit_test(test_app_log_lines_are_escaped_filtered_and_rate_limited),
        cmocka_unit_test(test_app_asset_warnings_are_logged_with_file_and_bones),
        cmocka_unit_test(test_app_metrics_counters_are_bounded),
        cmocka_unit_test_setup_teardown(test_app_metrics_count_commands_messages_and_closes,
                                        live_setup, live_teardown),
        cmocka_unit_test_setup_teardown(test_app_refusals_are_counted_and_logged, budget_setup,
                                        budget_teardown),
        cmocka_unit_test_setup_teardown(test_app_create_world_takes_a_solver, live_setup,
                                        live_teardown),
        cmocka_unit_test_setup_teardown(
            test_app_server_default_solver_applies_to_demo_and_create_world, live_setup_soft_demo,
            live_teardown),
    };
    return cmocka_run_group_tests_name("app", tests, NULL, NULL);
}
