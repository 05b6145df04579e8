/*
 * test_app.c: unit tests of ragdolld's command line (server/app/config.c).
 */
// cmocka.h needs these four before it (cmocka docs); keep the order.
// clang-format off
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
// clang-format on

#include "app.h"

#include <stdio.h>
#include <string.h>

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
}

static void test_app_parses_every_flag(void** state) {
    (void)state;
    char out[4096] = "", err[4096] = "";
    app_config c;
    const char* args[] = {"--host",     "0.0.0.0", "--port",       "0", "--no-demo",
                          "--web-root", "/srv/w",  "--max-worlds", "3", NULL};
    assert_int_equal(parse(args, &c, out, err), 0);
    assert_string_equal(c.host, "0.0.0.0");
    assert_int_equal(c.port, 0);
    assert_false(c.demo);
    assert_string_equal(c.web_root, "/srv/w");
    assert_int_equal(c.max_worlds, 3);
    const char* sessions[] = {"--max-sessions", "5", NULL};
    assert_int_equal(parse(sessions, &c, out, err), 0);
    assert_int_equal(c.max_sessions, 5);
    const char* work[] = {"--max-solver-work", "2500000", NULL};
    assert_int_equal(parse(work, &c, out, err), 0);
    assert_true(c.max_solver_work == 2500000);
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
        {"--max-sessions", "0", NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
        char out[4096] = "", err[4096] = "";
        app_config c;
        assert_int_equal(parse(cases[i], &c, out, err), -1);
        assert_non_null(strstr(err, "ragdolld: "));
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_app_defaults),
        cmocka_unit_test(test_app_parses_every_flag),
        cmocka_unit_test(test_app_help_and_version_exit_successfully),
        cmocka_unit_test(test_app_rejects_bad_flags_with_a_message),
    };
    return cmocka_run_group_tests_name("app", tests, NULL, NULL);
}
