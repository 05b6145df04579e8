/*
 * test_tools.c: the command-line programs built on rdc, run as processes
 * against a real ragdolld (server_proc.c): ragdollctl's exit codes (0 ok,
 * 1 an error reply, 2 usage, 3 no connection, 4 a log it cannot write), `watch` for N snapshots,
 * `record` then `replay`, and a short ragdoll-load run (50 clients for
 * 5 s against the demo world) whose JSON report must show no connection
 * failures, no command errors and at least half the nominal snapshot rate.
 *
 * The programs come from $RAGDOLLCTL and $RAGDOLL_LOAD, the scenario from
 * $RD_LOAD_SCENARIO, the server from $RAGDOLLD. Expected values come from
 * PROTOCOL.md and the commands given, not from the programs.
 */
// cmocka.h needs these four before it (cmocka docs); keep the order.
// clang-format off
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
// clang-format on

#include "server_proc.h"

#include <cJSON.h>

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define OUT_CAP (1 << 20)

/// What a run of a program left behind.
typedef struct run_result {
    int exit_code; ///< Its exit status, or -1 when it did not exit normally in time.
    char out[OUT_CAP];
    size_t out_len;
    char err[16384];
    size_t err_len;
} run_result;

typedef struct fixture {
    server srv;
    char url[64];
    run_result r;
    char dir[64]; ///< A scratch directory for the test's files, removed after it.
} fixture;

static const char* env_or(const char* name, const char* fallback) {
    const char* v = getenv(name);
    return v != NULL ? v : fallback;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

// Reads what is there from fd into buf (NUL-terminated). False at EOF.
static bool drain(int fd, char* buf, size_t cap, size_t* len) {
    char tmp[4096];
    ssize_t n = read(fd, tmp, sizeof tmp);
    if (n <= 0) {
        return false;
    }
    size_t take = (size_t)n < cap - 1 - *len ? (size_t)n : cap - 1 - *len;
    memcpy(buf + *len, tmp, take);
    *len += take;
    buf[*len] = '\0';
    return true;
}

// Runs argv (argv[0] a path) with stdout and stderr captured, for at most
// timeout_s seconds (then it is killed and exit_code is -1).
static void run(run_result* r, char* const argv[], double timeout_s) {
    memset(r, 0, sizeof *r);
    int out[2], err[2];
    assert_int_equal(pipe(out), 0);
    assert_int_equal(pipe(err), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        dup2(out[1], STDOUT_FILENO);
        dup2(err[1], STDERR_FILENO);
        close(out[0]);
        close(out[1]);
        close(err[0]);
        close(err[1]);
        int devnull = open("/dev/null", O_RDONLY);
        dup2(devnull, STDIN_FILENO);
        execv(argv[0], argv);
        _exit(127);
    }
    close(out[1]);
    close(err[1]);
    bool out_open = true, err_open = true;
    double deadline = now_s() + timeout_s;
    while ((out_open || err_open) && now_s() < deadline) {
        struct pollfd p[2] = {{out_open ? out[0] : -1, POLLIN, 0},
                              {err_open ? err[0] : -1, POLLIN, 0}};
        if (poll(p, 2, 100) <= 0) {
            continue;
        }
        if (p[0].revents != 0) {
            out_open = drain(out[0], r->out, sizeof r->out, &r->out_len);
        }
        if (p[1].revents != 0) {
            err_open = drain(err[0], r->err, sizeof r->err, &r->err_len);
        }
    }
    close(out[0]);
    close(err[0]);
    if (out_open || err_open) {
        kill(pid, SIGKILL);
    }
    int st;
    waitpid(pid, &st, 0);
    r->exit_code = !out_open && !err_open && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    if (r->exit_code != 0) {
        print_message("%s exited %d; stderr:\n%s\n", argv[0], r->exit_code, r->err);
    }
}

// Fills argv[32] with ragdollctl, the fixture's server URL and up to 28
// arguments, NULL-terminated.
static void ctl_argv(fixture* f, const char* const* args, char* argv[32]) {
    int n = 0;
    argv[n++] = (char*)env_or("RAGDOLLCTL", "build/clients/c/ragdollctl");
    argv[n++] = "--url";
    argv[n++] = f->url;
    for (int i = 0; args[i] != NULL && n < 31; ++i) {
        argv[n++] = (char*)args[i];
    }
    argv[n] = NULL;
}

// Runs ragdollctl with the fixture's server URL and up to 28 arguments.
static int ctl(fixture* f, const char* const* args) {
    char* argv[32];
    ctl_argv(f, args, argv);
    run(&f->r, argv, 60);
    return f->r.exit_code;
}

static int setup(void** state) {
    fixture* f = calloc(1, sizeof *f);
    assert_non_null(f);
    if (server_start(&f->srv, 0, true) != 0) {
        fail_msg("ragdolld did not start (set RAGDOLLD to its path)");
    }
    snprintf(f->url, sizeof f->url, "ws://127.0.0.1:%d/ws", f->srv.port);
    snprintf(f->dir, sizeof f->dir, "/tmp/rd_tools_%s", "XXXXXX"); // mkdtemp's template
    assert_non_null(mkdtemp(f->dir));
    *state = f;
    return 0;
}

// A fixture without ragdolld: the test starts what it needs (in f->srv,
// which teardown stops).
static int setup_bare(void** state) {
    fixture* f = calloc(1, sizeof *f);
    assert_non_null(f);
    snprintf(f->dir, sizeof f->dir, "/tmp/rd_tools_%s", "XXXXXX"); // mkdtemp's template
    assert_non_null(mkdtemp(f->dir));
    *state = f;
    return 0;
}

static int teardown(void** state) {
    fixture* f = *state;
    server_stop(&f->srv, SIGTERM);
    DIR* d = opendir(f->dir);
    for (struct dirent* e; d != NULL && (e = readdir(d)) != NULL;) {
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) {
            unlinkat(dirfd(d), e->d_name, 0);
        }
    }
    if (d != NULL) {
        closedir(d);
    }
    rmdir(f->dir);
    free(f);
    return 0;
}

// The path of `name` in the test's scratch directory (static storage, one
// per slot, 0..3).
static const char* path_in(const fixture* f, const char* name, int slot) {
    static char paths[4][160];
    snprintf(paths[slot], sizeof paths[slot], "%s/%s", f->dir, name);
    return paths[slot];
}

// Writes len bytes of text to `name` in the scratch directory and returns
// its path (as path_in).
static const char* write_bytes(const fixture* f, const char* name, const char* text, size_t len,
                               int slot) {
    const char* path = path_in(f, name, slot);
    FILE* fp = fopen(path, "wb");
    assert_non_null(fp);
    assert_int_equal(fwrite(text, 1, len, fp), len);
    fclose(fp);
    return path;
}

static const char* write_file(const fixture* f, const char* name, const char* text, int slot) {
    return write_bytes(f, name, text, strlen(text), slot);
}

// The text of a file (NUL-terminated, at most OUT_CAP - 1 bytes), in static
// storage that the next call overwrites.
static char* read_text(const char* path) {
    static char text[OUT_CAP];
    FILE* fp = fopen(path, "r");
    assert_non_null(fp);
    size_t len = fread(text, 1, sizeof text - 1, fp);
    text[len] = '\0';
    fclose(fp);
    return text;
}

// How many commands ragdollctl replay reported as " ok".
static int count_ok(const char* out) {
    int n = 0;
    for (const char* p = out; (p = strstr(p, " ok")) != NULL; ++p) {
        n++;
    }
    return n;
}

// Calls fn on each line of text that parses as a JSON object.
static int each_json_line(char* text, void (*fn)(const cJSON* o, void* arg), void* arg) {
    int n = 0;
    for (char* line = strtok(text, "\n"); line != NULL; line = strtok(NULL, "\n")) {
        cJSON* o = cJSON_Parse(line);
        assert_true(cJSON_IsObject(o));
        fn(o, arg);
        cJSON_Delete(o);
        n++;
    }
    return n;
}

// ---------------------------------------------------------------------------
// ragdollctl
// ---------------------------------------------------------------------------

static void test_ragdollctl_exit_codes(void** state) {
    fixture* f = *state;
    // 0: the demo world is world 1 (README).
    assert_int_equal(ctl(f, (const char*[]){"list", NULL}), 0);
    assert_non_null(strstr(f->r.out, "demo"));
    assert_int_equal(ctl(f, (const char*[]){"--json", "list", NULL}), 0);
    cJSON* reply = cJSON_Parse(f->r.out);
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(reply, "ok")));
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(reply, "worlds")), 1);
    cJSON_Delete(reply);
    assert_int_equal(ctl(f, (const char*[]){"--json", "spawn", "ball", "1", "--position", "0,3,0",
                                            "--radius", "0.25", NULL}),
                     0);
    reply = cJSON_Parse(f->r.out);
    const cJSON* entity = cJSON_GetObjectItem(reply, "entity");
    assert_true(cJSON_IsNumber(entity));
    char id[32];
    snprintf(id, sizeof id, "%.0f", entity->valuedouble);
    cJSON_Delete(reply);
    assert_int_equal(ctl(f, (const char*[]){"--json", "describe", "1", id, NULL}), 0);
    reply = cJSON_Parse(f->r.out);
    assert_string_equal(cJSON_GetObjectItem(reply, "kind")->valuestring, "ball");
    assert_true(cJSON_GetObjectItem(reply, "radius")->valuedouble == 0.25);
    cJSON_Delete(reply);
    assert_int_equal(ctl(f, (const char*[]){"despawn", "1", id, NULL}), 0);
    // A ray 5 m down onto empty ground, judged at tick 0 (or the oldest
    // the server keeps, once the world is older than --lag-history).
    assert_int_equal(ctl(f, (const char*[]){"raycast", "1", "--origin", "50,5,-50", "--direction",
                                            "0,-1,0", "--seen-tick", "0", NULL}),
                     0);
    assert_non_null(strstr(f->r.out, "ground at 50,0,-50 normal 0,1,0 distance 5\n"));
    assert_non_null(strstr(f->r.out, "judged at tick "));

    // 1: the server's error reply, its code on stderr.
    assert_int_equal(
        ctl(f, (const char*[]){"raycast", "1", "--origin", "0,5,0", "--direction", "0,0,0", NULL}),
        1);
    assert_non_null(strstr(f->r.err, "out_of_range"));
    assert_int_equal(ctl(f, (const char*[]){"despawn", "1", id, NULL}), 1);
    assert_non_null(strstr(f->r.err, "not_found"));
    assert_int_equal(ctl(f, (const char*[]){"create", "w", "--tick-hz", "1000", NULL}), 1);
    assert_non_null(strstr(f->r.err, "out_of_range"));

    // 2: usage, before any connection (a server is not even needed).
    assert_int_equal(ctl(f, (const char*[]){"spawn", NULL}), 2);
    assert_int_equal(ctl(f, (const char*[]){"spawn", "ball", "one", "--position", "0,3,0", NULL}),
                     2);
    assert_int_equal(ctl(f, (const char*[]){"teleport", NULL}), 2);
    assert_int_equal(ctl(f, (const char*[]){"kill", "1", NULL}), 2);
    assert_int_equal(ctl(f, (const char*[]){"raycast", "1", "--origin", "0,5,0", NULL}), 2);
    assert_int_equal(ctl(f, (const char*[]){"spawn", "--help", NULL}), 0);
    assert_non_null(strstr(f->r.out, "usage: ragdollctl"));

    // 3: nobody listening.
    int port = server_free_port();
    assert_true(port > 0);
    snprintf(f->url, sizeof f->url, "ws://127.0.0.1:%d/ws", port);
    assert_int_equal(ctl(f, (const char*[]){"list", NULL}), 3);
    assert_non_null(strstr(f->r.err, "connection refused"));
}

// The id of the first entity of `kind` in world 1's snapshot, as text.
static void first_of_kind(fixture* f, const char* kind, char* id, size_t cap) {
    assert_int_equal(ctl(f, (const char*[]){"watch", "1", "--count", "1", NULL}), 0);
    cJSON* snap = cJSON_Parse(f->r.out);
    assert_non_null(snap);
    const cJSON* e;
    id[0] = '\0';
    cJSON_ArrayForEach(e, cJSON_GetObjectItem(snap, "entities")) {
        if (strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(e, "kind")), kind) == 0) {
            snprintf(id, cap, "%.0f", cJSON_GetObjectItem(e, "entity")->valuedouble);
            break;
        }
    }
    cJSON_Delete(snap);
    assert_true(id[0] != '\0');
}

// The cloth half of the protocol from the command line: spawn_cloth's
// options, attach_cloth, set_tear, the air in set_params, set_focus with
// watch; a bad value is a usage error (2) or the server's (1).
static void test_ragdollctl_drives_cloth_and_the_air(void** state) {
    fixture* f = *state;
    assert_int_equal(ctl(f, (const char*[]){"--json",
                                            "spawn",
                                            "cloth",
                                            "1",
                                            "--origin",
                                            "-1,3,-3",
                                            "--cols",
                                            "12",
                                            "--rows",
                                            "10",
                                            "--spacing",
                                            "0.05",
                                            "--pin",
                                            "left",
                                            "--across",
                                            "0,0,1",
                                            "--down",
                                            "1,0,0",
                                            "--self-collision",
                                            "on",
                                            "--thickness",
                                            "0.04",
                                            "--long-range",
                                            "off",
                                            "--tear",
                                            "1.5",
                                            "--stretch-compliance",
                                            "1e-6",
                                            NULL}),
                     0);
    cJSON* reply = cJSON_Parse(f->r.out);
    char cloth[32];
    snprintf(cloth, sizeof cloth, "%.0f", cJSON_GetObjectItem(reply, "entity")->valuedouble);
    cJSON_Delete(reply);
    assert_int_equal(ctl(f, (const char*[]){"describe", "1", cloth, NULL}), 0);
    // 12 × 10: 10 pinned down its left column, 12·9 + 11·10 structural,
    // 2·11·9 shear, 12·8 + 10·10 bend: 218 + 198 + 196.
    assert_non_null(strstr(f->r.out, "120 particles, 612 sticks, 10 pinned, grid 12 x 10"));
    // describe gives back how it was made.
    assert_non_null(strstr(f->r.out, "tears past 1.5 x rest length, long-range attachments off, "
                                     "self-collision 0.04 m apart\n"));
    // Bad values: ragdollctl's own (2), the server's (1), and nothing spawned.
    assert_int_equal(
        ctl(f, (const char*[]){"spawn", "cloth", "1", "--origin", "0,3,0", "--cols", "4", "--rows",
                               "4", "--spacing", "0.1", "--self-collision", "maybe", NULL}),
        2);
    assert_non_null(strstr(
        f->r.err, "--self-collision wants on or off (or yes/no, true/false), not \"maybe\""));
    assert_int_equal(ctl(f, (const char*[]){"spawn", "cloth", "1", "--origin", "0,3,0", "--cols",
                                            "4", "--rows", "4", "--spacing", "0.1", "--across",
                                            "1,0,0", "--down", "1,0,0", NULL}),
                     1);
    assert_non_null(strstr(f->r.err, "across·down = 1"));

    // A cape and hair on the demo's first humanoid; a cloth wears nothing.
    char hero[32];
    first_of_kind(f, "character", hero, sizeof hero);
    assert_int_equal(
        ctl(f, (const char*[]){"attach", "1", hero, "--kind", "cape", "--tear", "2", NULL}), 0);
    assert_true(strncmp(f->r.out, "entity ", 7) == 0);
    char cape[32];
    snprintf(cape, sizeof cape, "%s", f->r.out + 7);
    cape[strcspn(cape, "\n")] = '\0';
    assert_int_equal(ctl(f, (const char*[]){"describe", "1", cape, NULL}), 0);
    assert_non_null(strstr(f->r.out, ": cloth"));
    char worn[64];
    snprintf(worn, sizeof worn, "cape worn by entity %s\n", hero);
    assert_non_null(strstr(f->r.out, worn));
    assert_non_null(strstr(f->r.out, "tears past 2 x rest length, long-range attachments on"));
    assert_int_equal(
        ctl(f, (const char*[]){"attach", "1", hero, "--kind", "hair", "--long-range", "No", NULL}),
        0);
    assert_int_equal(ctl(f, (const char*[]){"attach", "1", hero, "--kind", "scarf", NULL}), 1);
    assert_non_null(strstr(f->r.err, "must be \"cape\", \"skirt\" or \"hair\""));
    assert_int_equal(ctl(f, (const char*[]){"attach", "1", cloth, "--kind", "cape", NULL}), 1);
    assert_int_equal(ctl(f, (const char*[]){"attach", "1", hero, NULL}), 2); // --kind required

    // Tearing: a ratio in [1.01, 100] or 0.
    assert_int_equal(ctl(f, (const char*[]){"tear", "1", cloth, "--ratio", "1.2", NULL}), 0);
    assert_int_equal(ctl(f, (const char*[]){"describe", "1", cloth, NULL}), 0);
    assert_non_null(strstr(f->r.out, "tears past 1.2 x rest length")); // not the 1.5 kept before
    assert_int_equal(ctl(f, (const char*[]){"tear", "1", cloth, "--ratio", "0.5", NULL}), 1);
    assert_non_null(strstr(f->r.err, "out_of_range"));
    assert_int_equal(ctl(f, (const char*[]){"tear", "1", hero, "--ratio", "2", NULL}), 1);

    // The air.
    assert_int_equal(ctl(f, (const char*[]){"params", "set", "1", "--wind", "5,0,2", "--gust",
                                            "0.4", "--gust-period", "2", "--air-density", "1.1",
                                            "--drag-coef", "0.9", "--lift-coef", "0.3", NULL}),
                     0);
    assert_non_null(strstr(f->r.out, "wind        5 0 2\n"));
    assert_non_null(strstr(f->r.out, "gust        0.4 (period 2 s)\n"));
    assert_non_null(strstr(f->r.out, "air         density 1.1, drag 0.9, lift 0.3\n"));
    assert_int_equal(ctl(f, (const char*[]){"params", "set", "1", "--wind", "500,0,0", NULL}), 1);
    assert_int_equal(ctl(f, (const char*[]){"params", "get", "1", NULL}), 0);
    assert_non_null(strstr(f->r.out, "wind        5 0 2\n")); // the refused set changed nothing

    // A focus far from everything freezes the cloth while the watch lasts
    // (the snapshot's metrics count it); a bad point is the server's error.
    assert_int_equal(ctl(f, (const char*[]){"watch", "1", "--raw", "--rate", "5", "--seconds",
                                            "1.5", "--focus", "900,0,900", NULL}),
                     0);
    const char* last = f->r.out;
    for (const char* nl = strchr(last, '\n'); nl != NULL && nl[1] != '\0';
         nl = strchr(last, '\n')) {
        last = nl + 1;
    }
    cJSON* snap = cJSON_Parse(last);
    assert_non_null(snap);
    const cJSON* metrics = cJSON_GetObjectItem(snap, "metrics");
    assert_true(cJSON_GetObjectItem(metrics, "frozen_entities")->valuedouble >= 1);
    cJSON_Delete(snap);
    assert_int_equal(
        ctl(f, (const char*[]){"watch", "1", "--count", "2", "--focus", "1e300,0,0", NULL}), 1);
    assert_non_null(strstr(f->r.err, "out_of_range"));
    assert_int_equal(ctl(f, (const char*[]){"watch", "1", "--focus", "0,1", NULL}), 2);
}

typedef struct watch_seen {
    int snapshots, other;
    uint64_t last_tick;
    bool ordered, entities;
    char format[16];
} watch_seen;

static void on_watch_line(const cJSON* o, void* arg) {
    watch_seen* w = arg;
    const char* ev = cJSON_GetStringValue(cJSON_GetObjectItem(o, "ev"));
    assert_non_null(ev);
    if (strcmp(ev, "snapshot") != 0) {
        w->other++;
        return;
    }
    uint64_t tick = (uint64_t)cJSON_GetObjectItem(o, "tick")->valuedouble;
    w->ordered &= tick > w->last_tick;
    w->last_tick = tick;
    w->entities &= cJSON_GetArraySize(cJSON_GetObjectItem(o, "entities")) >= 1;
    snprintf(w->format, sizeof w->format, "%s",
             cJSON_GetStringValue(cJSON_GetObjectItem(o, "format")));
    w->snapshots++;
}

static void test_ragdollctl_watch_prints_n_snapshots(void** state) {
    fixture* f = *state;
    const char* formats[] = {"json", "binary"};
    for (int i = 0; i < 2; ++i) {
        assert_int_equal(ctl(f, (const char*[]){"watch", "1", "--count", "5", "--format",
                                                formats[i], "--rate", "20", NULL}),
                         0);
        watch_seen w = {0, 0, 0, true, true, ""};
        each_json_line(f->r.out, on_watch_line, &w);
        assert_int_equal(w.snapshots, 5);
        assert_true(w.ordered);
        assert_true(w.entities);
        assert_string_equal(w.format, formats[i]);
    }
}

// Runs ragdollctl with its stdout a pipe whose reader has gone (as after
// `| head`). Returns its exit status, or -1 when it was still running after
// timeout_s seconds (then it is killed).
static int ctl_reader_gone(fixture* f, const char* const* args, double timeout_s) {
    char* argv[32];
    ctl_argv(f, args, argv);
    int out[2];
    assert_int_equal(pipe(out), 0);
    close(out[0]); // the reader is gone before the first line
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        dup2(out[1], STDOUT_FILENO);
        close(out[1]);
        int devnull = open("/dev/null", O_RDWR);
        dup2(devnull, STDIN_FILENO);
        dup2(devnull, STDERR_FILENO);
        execv(argv[0], argv);
        _exit(127);
    }
    close(out[1]);
    double deadline = now_s() + timeout_s;
    int st;
    while (waitpid(pid, &st, WNOHANG) == 0) {
        if (now_s() > deadline) {
            kill(pid, SIGKILL);
            waitpid(pid, &st, 0);
            return -1;
        }
        usleep(20000);
    }
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void test_ragdollctl_watch_ends_when_its_reader_goes(void** state) {
    fixture* f = *state;
    // Without --count or --seconds, only Ctrl-C or the reader's going ends
    // it; quietly (exit 0), as `watch | head` wants.
    assert_int_equal(ctl_reader_gone(f, (const char*[]){"watch", "1", "--rate", "20", NULL}, 10),
                     0);
    assert_int_equal(
        ctl_reader_gone(f, (const char*[]){"record", "1", "-", "--rate", "20", NULL}, 10), 0);
}

typedef struct log_seen {
    int header, sends, replies, snapshots, errors;
    double last_t;
    bool ordered;
} log_seen;

static void on_log_line(const cJSON* o, void* arg) {
    log_seen* s = arg;
    if (cJSON_GetObjectItem(o, "ragdollctl_log") != NULL) {
        s->header++;
        return;
    }
    double t = cJSON_GetObjectItem(o, "t")->valuedouble;
    s->ordered &= t >= s->last_t;
    s->last_t = t;
    const cJSON* recv = cJSON_GetObjectItem(o, "recv");
    if (cJSON_GetObjectItem(o, "send") != NULL) {
        s->sends++;
    } else if (cJSON_GetObjectItem(recv, "re") != NULL) {
        s->replies++;
        s->errors += cJSON_GetObjectItem(recv, "error") != NULL;
    } else if (strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(recv, "ev")), "snapshot") == 0) {
        s->snapshots++;
    }
}

static void test_ragdollctl_record_then_replay(void** state) {
    fixture* f = *state;
    const char* log = path_in(f, "run.jsonl", 0);
    const char* cmds =
        write_file(f, "commands.jsonl",
                   "{\"at\":0.1,\"op\":\"spawn_ball\",\"world\":1,\"position\":[0,3,0]}\n"
                   "{\"at\":0.3,\"op\":\"apply_impulse\",\"world\":1,\"entity\":\"$entity\","
                   "\"impulse\":[0,5,0]}\n"
                   "{\"at\":0.5,\"op\":\"despawn\",\"world\":1,\"entity\":\"$entity\"}\n",
                   1);
    assert_int_equal(ctl(f, (const char*[]){"record", "1", log, "--commands", cmds, "--seconds",
                                            "1.5", "--rate", "10", NULL}),
                     0);
    log_seen s = {0, 0, 0, 0, 0, 0, true};
    each_json_line(read_text(log), on_log_line, &s);
    assert_int_equal(s.header, 1);
    assert_int_equal(s.sends, 4); // subscribe, then the three commands
    assert_int_equal(s.replies, 4);
    assert_int_equal(s.errors, 0);
    assert_true(s.snapshots >= 8); // 1.5 s at 10 Hz, with a wide margin
    assert_true(s.ordered);

    // The replay sends the three commands (with the ball's new id) and
    // they succeed again.
    assert_int_equal(ctl(f, (const char*[]){"replay", log, "--speed", "2", NULL}), 0);
    assert_non_null(strstr(f->r.out, "spawn_ball"));
    assert_non_null(strstr(f->r.out, "despawn"));
    assert_int_equal(count_ok(f->r.out), 3);
    // So fast that all three are due at once: the impulse and the despawn
    // still wait for the spawn's reply and use the ball created now (with
    // the recorded id, the one the first replay despawned, they fail).
    assert_int_equal(ctl(f, (const char*[]){"replay", log, "--speed", "1000000", NULL}), 0);
    assert_int_equal(count_ok(f->r.out), 3);
    // A log whose command fails now: exit 1 (the world is gone).
    assert_int_equal(ctl(f, (const char*[]){"replay", log, "--world", "77", NULL}), 1);
}

// create --solver: the solver goes to the server, which checks it; the
// world's solver is printed, and listed.
static void test_ragdollctl_create_takes_a_solver(void** state) {
    fixture* f = *state;
    assert_int_equal(ctl(f, (const char*[]){"create", "xp", "--solver", "xpbd", NULL}), 0);
    assert_string_equal(f->r.out, "world 2 (solver xpbd)\n");
    assert_int_equal(ctl(f, (const char*[]){"create", "plain", NULL}), 0);
    assert_string_equal(f->r.out, "world 3 (solver soft_step)\n"); // the server's default
    assert_int_equal(
        ctl(f, (const char*[]){"--json", "create", "x", "--solver=xpbd", "--tick-hz", "30", NULL}),
        0);
    cJSON* reply = cJSON_Parse(f->r.out);
    assert_string_equal(cJSON_GetObjectItem(reply, "solver")->valuestring, "xpbd");
    cJSON_Delete(reply);
    // A bad one: the server's error (exit 1), and no world.
    assert_int_equal(ctl(f, (const char*[]){"create", "bad", "--solver", "SOFT", NULL}), 1);
    assert_non_null(strstr(f->r.err, "bad_request"));
    assert_non_null(
        strstr(f->r.err, "field \"solver\" must be \"xpbd\" or \"soft_step\", not \"SOFT\""));
    assert_int_equal(ctl(f, (const char*[]){"create", "bad", "--solver", "", NULL}), 1);
    assert_int_equal(ctl(f, (const char*[]){"create", "bad", "--solver", NULL}), 2); // no value
    assert_int_equal(ctl(f, (const char*[]){"--json", "list", NULL}), 0);
    reply = cJSON_Parse(f->r.out);
    const cJSON* worlds = cJSON_GetObjectItem(reply, "worlds");
    assert_int_equal(cJSON_GetArraySize(worlds), 4); // the demo and the three above
    const char* want[] = {"soft_step", "xpbd", "soft_step", "xpbd"};
    for (int i = 0; i < 4; ++i) {
        const cJSON* w = cJSON_GetArrayItem(worlds, i);
        assert_string_equal(cJSON_GetObjectItem(w, "solver")->valuestring, want[i]);
    }
    cJSON_Delete(reply);
    assert_int_equal(ctl(f, (const char*[]){"list", NULL}), 0);
    assert_non_null(strstr(f->r.out, "SOLVER"));
    assert_non_null(strstr(f->r.out, "soft_step"));
    assert_int_equal(ctl(f, (const char*[]){"create", "--help", NULL}), 0);
    assert_non_null(strstr(f->r.out, "--solver S"));
}

// ragdollctl save: the state file's tick, size and path; a server without
// --state-dir says what it needs. ragdollctl fetch: a copy of the file here.
static void test_ragdollctl_save_writes_a_state_file(void** state) {
    fixture* f = *state;
    assert_int_equal(ctl(f, (const char*[]){"save", "1", NULL}), 1);
    assert_non_null(strstr(f->r.err, "bad_state"));
    assert_non_null(strstr(f->r.err, "--state-dir"));
    server_stop(&f->srv, SIGTERM);
    assert_int_equal(server_start_in(&f->srv, 0, true, f->dir), 0);
    snprintf(f->url, sizeof f->url, "ws://127.0.0.1:%d/ws", f->srv.port);
    assert_int_equal(ctl(f, (const char*[]){"save", "1", NULL}), 0);
    char path[128];
    snprintf(path, sizeof path, "%s/world-1.state", f->dir);
    assert_non_null(strstr(f->r.out, path));
    unsigned long long tick = 0;
    double bytes = 0;
    assert_int_equal(sscanf(f->r.out, "saved tick %llu: %lf bytes", &tick, &bytes), 2);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_true((double)st.st_size == bytes);
    assert_int_equal(ctl(f, (const char*[]){"save", "9", NULL}), 1);
    assert_non_null(strstr(f->r.err, "not_found"));
    // fetch: the same file, written here, byte for byte what the server wrote.
    char copy[160];
    snprintf(copy, sizeof copy, "%s/copy.state", f->dir);
    assert_int_equal(ctl(f, (const char*[]){"fetch", "1", copy, NULL}), 0);
    assert_non_null(strstr(f->r.out, copy));
    FILE* a = fopen(path, "rb");
    FILE* b = fopen(copy, "rb");
    assert_non_null(a);
    assert_non_null(b);
    static char ba[1 << 21], bb[1 << 21];
    size_t na = fread(ba, 1, sizeof ba, a), nb = fread(bb, 1, sizeof bb, b);
    fclose(a);
    fclose(b);
    assert_true(na == nb && na > 1000);
    assert_memory_equal(ba, bb, na);
    // "-": the file to standard output, and nothing else there.
    assert_int_equal(ctl(f, (const char*[]){"fetch", "1", "-", NULL}), 0);
    assert_true(f->r.out_len > 1000 && f->r.out_len < OUT_CAP);
    assert_memory_equal(f->r.out, "RAGDOLLD", 8);
    assert_int_equal(ctl(f, (const char*[]){"fetch", "1", "/nonexistent/dir/x.state", NULL}), 4);
    assert_non_null(strstr(f->r.err, "cannot write /nonexistent/dir/x.state: No such file"));
    assert_int_equal(ctl(f, (const char*[]){"fetch", "1", NULL}), 2);
}

// What the server would refuse by closing the connection (a message over
// 64 KiB: 1009; not UTF-8: 1007) is a usage error, found before sending.
static void test_ragdollctl_refuses_arguments_the_server_would_close_on(void** state) {
    fixture* f = *state;
    static char big[100001];
    memset(big, 'a', sizeof big - 1);
    assert_int_equal(ctl(f, (const char*[]){"create", big, NULL}), 2);
    assert_non_null(strstr(f->r.err, "at most 65536"));
    assert_int_equal(ctl(f, (const char*[]){"create", "a\xff", NULL}), 2);
    assert_non_null(strstr(f->r.err, "UTF-8"));
    assert_int_equal(ctl(f, (const char*[]){"create", "caf\xc3\xa9", NULL}), 0);
}

// A NUL byte makes its line malformed (file:line, exit 2); it used to end
// the input quietly, so that the rest was never sent.
static void test_ragdollctl_nul_bytes_make_a_line_malformed(void** state) {
    fixture* f = *state;
    static const char c[] = "{\"op\":\"list_worlds\"}\n{\"op\":\"list_worlds\"}\0garbage\n";
    static const char l[] = "{\"ragdollctl_log\":1,\"world\":1}\n"
                            "{\"t\":0,\"send\":{\"op\":\"list_worlds\",\"id\":1}}\n"
                            "\0{\"t\":0,\"send\":{\"op\":\"list_worlds\",\"id\":2}}\n";
    const char* cmds = write_bytes(f, "commands.jsonl", c, sizeof c - 1, 0);
    const char* log = write_bytes(f, "run.jsonl", l, sizeof l - 1, 1);
    const char* out = path_in(f, "out.jsonl", 2);
    assert_int_equal(
        ctl(f, (const char*[]){"record", "1", out, "--commands", cmds, "--seconds", "1", NULL}), 2);
    assert_non_null(strstr(f->r.err, "commands.jsonl:2"));
    assert_int_equal(ctl(f, (const char*[]){"replay", log, NULL}), 2);
    assert_non_null(strstr(f->r.err, "run.jsonl:3"));
}

// "$entity" is the id the latest reply named: a line due at once after the
// spawn waits for the spawn's reply instead of going out unresolved.
static void test_ragdollctl_record_placeholders_wait_for_their_reply(void** state) {
    fixture* f = *state;
    const char* log = path_in(f, "run.jsonl", 1);
    const char* cmds =
        write_file(f, "cmds.jsonl",
                   "{\"at\":0,\"op\":\"spawn_ball\",\"world\":1,\"position\":[0,3,0]}\n"
                   "{\"op\":\"despawn\",\"world\":1,\"entity\":\"$entity\"}\n",
                   0);
    assert_int_equal(
        ctl(f, (const char*[]){"record", "1", log, "--commands", cmds, "--seconds", "0.5", NULL}),
        0);
    char* text = read_text(log);
    log_seen ls = {0, 0, 0, 0, 0, 0, true};
    each_json_line(text, on_log_line, &ls);
    assert_int_equal(ls.sends, 3); // subscribe, spawn, despawn
    assert_int_equal(ls.replies, 3);
    assert_int_equal(ls.errors, 0);
    assert_null(strstr(text, "\"$entity\""));
}

// A log that cannot be written is an error (exit 4), not a silent success.
static void test_ragdollctl_record_reports_write_errors(void** state) {
    fixture* f = *state;
    if (access("/dev/full", W_OK) != 0) {
        skip();
    }
    assert_int_equal(ctl(f, (const char*[]){"record", "1", "/dev/full", "--seconds", "1", NULL}),
                     4);
    assert_non_null(strstr(f->r.err, "writing /dev/full failed"));
}

// Times far away (or beyond a year: refused) never make record outlive
// --seconds or convert out of range (UBSan), and replay's speed is bounded.
static void test_ragdollctl_far_times_are_bounded(void** state) {
    fixture* f = *state;
    char log[160];
    snprintf(log, sizeof log, "%s", path_in(f, "run.jsonl", 0));
    const char* far = write_file(f, "far.jsonl", "{\"at\":1e300,\"op\":\"list_worlds\"}\n", 0);
    assert_int_equal(
        ctl(f, (const char*[]){"record", "1", log, "--commands", far, "--seconds", "1", NULL}), 2);
    assert_non_null(strstr(f->r.err, "far.jsonl:1"));
    // Due after the end: not sent, and the run ends at --seconds.
    const char* later =
        write_file(f, "later.jsonl", "{\"at\":1000000,\"op\":\"list_worlds\"}\n", 1);
    double t0 = now_s();
    assert_int_equal(
        ctl(f, (const char*[]){"record", "1", log, "--commands", later, "--seconds", "1", NULL}),
        0);
    assert_true(now_s() - t0 < 10);
    const char* bad_t = write_file(f, "bad_t.jsonl",
                                   "{\"ragdollctl_log\":1,\"world\":1}\n"
                                   "{\"t\":1e300,\"send\":{\"op\":\"list_worlds\",\"id\":1}}\n",
                                   2);
    assert_int_equal(ctl(f, (const char*[]){"replay", bad_t, NULL}), 2);
    assert_non_null(strstr(f->r.err, "bad_t.jsonl:2"));
    const char* ok_t = write_file(f, "ok_t.jsonl",
                                  "{\"ragdollctl_log\":1,\"world\":1}\n"
                                  "{\"t\":0.1,\"send\":{\"op\":\"list_worlds\",\"id\":1}}\n",
                                  3);
    assert_int_equal(ctl(f, (const char*[]){"replay", ok_t, "--speed", "1e-300", NULL}), 2);
    assert_int_equal(ctl(f, (const char*[]){"replay", ok_t, "--speed", "1000", NULL}), 0);
}

// ---------------------------------------------------------------------------
// ragdoll-load
// ---------------------------------------------------------------------------

static void test_ragdoll_load_50_clients_for_5_seconds(void** state) {
    fixture* f = *state;
    char* json = (char*)path_in(f, "load.json", 0);
    char* argv[] = {(char*)env_or("RAGDOLL_LOAD", "build/clients/c/ragdoll-load"),
                    "--url",
                    f->url,
                    "--clients",
                    "50",
                    "--duration",
                    "5",
                    "--quiet",
                    "--json",
                    json,
                    (char*)env_or("RD_LOAD_SCENARIO", "clients/c/scenarios/demo.json"),
                    NULL};
    run(&f->r, argv, 120);
    assert_int_equal(f->r.exit_code, 0);
    print_message("%s", f->r.out);
    cJSON* rep = cJSON_Parse(read_text(json));
    assert_non_null(rep);
    const cJSON* conn = cJSON_GetObjectItem(rep, "connections");
    assert_int_equal(cJSON_GetObjectItem(conn, "established")->valueint, 50);
    assert_int_equal(cJSON_GetObjectItem(conn, "failed")->valueint, 0);
    assert_int_equal(cJSON_GetObjectItem(conn, "lost")->valueint, 0);
    // The demo scenario's mix (impulses on ragdolls, kills of characters,
    // balls spawned and despawned by their owner, list_worlds) has no
    // command that can fail on a healthy server.
    const cJSON* cmd = cJSON_GetObjectItem(rep, "commands");
    assert_int_equal(cJSON_GetObjectItem(cmd, "error_total")->valueint, 0);
    assert_true(cJSON_GetObjectItem(cmd, "replied")->valueint >= 50); // ~1/s per client
    // The scenario asks for 30 Hz: every client gets at least half of it.
    const cJSON* sn = cJSON_GetObjectItem(rep, "snapshots");
    assert_int_equal(cJSON_GetObjectItem(sn, "granted_rate_hz")->valueint, 30);
    double min =
        cJSON_GetObjectItem(cJSON_GetObjectItem(sn, "per_client_per_s"), "min")->valuedouble;
    assert_true(min >= 15);
    assert_int_equal(cJSON_GetObjectItem(sn, "undecodable")->valueint, 0);
    assert_int_equal(cJSON_GetObjectItem(sn, "resyncs")->valueint, 0);
    cJSON_Delete(rep);
}

static double load(fixture* f, const char* scenario, const char* const* args);

// Viewers with a byte budget and a focus (interest management): they get
// partial frames within it, decode them all and ack them; a budget the
// server would refuse is a scenario error.
static void test_ragdoll_load_budgeted_viewers(void** state) {
    fixture* f = *state;
    char text[512];
    snprintf(text, sizeof text,
             "{\"url\": \"%s\", \"clients\": 10, \"duration_s\": 3, \"subscriptions\": "
             "[{\"world\": 1, \"format\": \"binary\", \"rate_hz\": 30, \"bytes_per_s\": 3000, "
             "\"focus\": [0, 1, 0], \"radius\": 5}]}",
             f->url);
    const char* scenario = write_file(f, "budget.json", text, 0);
    const char* json = path_in(f, "budget-report.json", 1);
    load(f, scenario, (const char*[]){"--json", json, NULL});
    assert_int_equal(f->r.exit_code, 0);
    cJSON* rep = cJSON_Parse(read_text(json));
    assert_non_null(rep);
    const cJSON* sn = cJSON_GetObjectItem(rep, "snapshots");
    assert_true(cJSON_GetObjectItem(sn, "total")->valueint >= 10 * 20);
    assert_int_equal(cJSON_GetObjectItem(sn, "undecodable")->valueint, 0);
    assert_int_equal(cJSON_GetObjectItem(sn, "resyncs")->valueint, 0);
    // 3000 B/s each (frames and metrics events), plus replies and the
    // welcome; the run's seconds as the report counts them.
    double secs = cJSON_GetObjectItem(rep, "duration_s")->valuedouble;
    double got = cJSON_GetObjectItem(cJSON_GetObjectItem(rep, "bytes"), "received")->valuedouble;
    print_message("budgeted: %.0f B/s a client\n", got / secs / 10);
    assert_true(got / secs / 10 <= 3000 + 1500);
    assert_int_equal(
        cJSON_GetObjectItem(cJSON_GetObjectItem(rep, "commands"), "error_total")->valueint, 0);
    cJSON_Delete(rep);
    static const char* const bad[] = {
        "\"format\": \"json\", \"bytes_per_s\": 3000",
        "\"format\": \"binary\", \"bytes_per_s\": 999",
        "\"format\": \"binary\", \"bytes_per_s\": 3000.5",
        "\"format\": \"binary\", \"radius\": 0",
        "\"format\": \"binary\", \"focus\": [0, 1]",
        "\"format\": \"binary\", \"focus\": [0, 1, 2000]",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
        snprintf(text, sizeof text, "{\"url\": \"%s\", \"subscriptions\": [{\"world\": 1, %s}]}",
                 f->url, bad[i]);
        load(f, write_file(f, "bad-budget.json", text, 2), (const char*[]){NULL});
        assert_int_equal(f->r.exit_code, 2);
        assert_non_null(strstr(f->r.err, "subscription 1"));
    }
}

// ---------------------------------------------------------------------------
// Access tokens: what the tools send, and what they say when the upgrade is
// refused. ragdolld does not check tokens yet, so a stand-in server (a
// child process) reads each upgrade request, appends it to a file and
// answers as the access-control contract says a server refuses one: 401
// Unauthorized with WWW-Authenticate: Bearer.
// ---------------------------------------------------------------------------

// Starts the stand-in on 127.0.0.1 (its pid and port in f->srv, so that
// teardown stops it); requests go to `log`, each followed by "----\n".
static void start_refuser(fixture* f, const char* log) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(fd, (struct sockaddr*)&a, sizeof a), 0);
    assert_int_equal(listen(fd, 128), 0);
    socklen_t len = sizeof a;
    assert_int_equal(getsockname(fd, (struct sockaddr*)&a, &len), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        for (;;) {
            int c = accept(fd, NULL, NULL);
            if (c < 0) {
                continue;
            }
            char req[8192];
            size_t n = 0;
            ssize_t got;
            while (n < sizeof req - 1 && (got = read(c, req + n, sizeof req - 1 - n)) > 0) {
                n += (size_t)got;
                req[n] = '\0';
                if (strstr(req, "\r\n\r\n") != NULL) {
                    break;
                }
            }
            int out = open(log, O_WRONLY | O_APPEND | O_CREAT, 0600);
            if (out >= 0) {
                (void)!write(out, req, n);
                (void)!write(out, "----\n", 5);
                close(out);
            }
            static const char no[] = "HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Bearer\r\n"
                                     "Content-Type: text/plain\r\nContent-Length: 14\r\n"
                                     "Connection: close\r\n\r\nunknown token\n";
            (void)!write(c, no, sizeof no - 1);
            close(c);
        }
    }
    close(fd);
    f->srv.pid = pid;
    f->srv.port = ntohs(a.sin_port);
    snprintf(f->url, sizeof f->url, "ws://127.0.0.1:%d/ws", f->srv.port);
}

// The Authorization header values the stand-in has read since the log was
// last emptied, one per request ("-" for a request without one), joined by
// spaces; the log is emptied.
static const char* authorizations(const char* log) {
    static char out[4096];
    out[0] = '\0';
    FILE* fp = fopen(log, "r");
    if (fp == NULL) {
        return out;
    }
    char line[1024];
    bool seen = false;
    size_t len = 0;
    while (fgets(line, sizeof line, fp) != NULL) {
        if (strncmp(line, "Authorization: ", 15) == 0) {
            seen = true;
            len += (size_t)snprintf(out + len, sizeof out - len, "%s%.*s", len > 0 ? " " : "",
                                    (int)strcspn(line + 15, "\r\n"), line + 15);
        } else if (strcmp(line, "----\n") == 0) {
            if (!seen) {
                len += (size_t)snprintf(out + len, sizeof out - len, "%s-", len > 0 ? " " : "");
            }
            seen = false;
        }
    }
    fclose(fp);
    unlink(log);
    return out;
}

static void test_ragdollctl_sends_its_token_and_names_a_refusal(void** state) {
    fixture* f = *state;
    const char* log = path_in(f, "requests.txt", 0);
    start_refuser(f, log);
    unsetenv("RAGDOLL_TOKEN");

    // --token: sent as a bearer token; the 401 ends the run with exit 3 and
    // a message that names the status.
    assert_int_equal(ctl(f, (const char*[]){"--token", "Flag.Token_0123456789", "list", NULL}), 3);
    assert_non_null(strstr(f->r.err, "server refused the upgrade: 401 Unauthorized"));
    assert_string_equal(authorizations(log), "Bearer Flag.Token_0123456789");
    // The token itself is never printed.
    assert_null(strstr(f->r.err, "Flag.Token_0123456789"));

    // RAGDOLL_TOKEN when there is no --token; --token wins over it.
    setenv("RAGDOLL_TOKEN", "Env~Token-0123456789", 1);
    assert_int_equal(ctl(f, (const char*[]){"list", NULL}), 3);
    assert_string_equal(authorizations(log), "Bearer Env~Token-0123456789");
    assert_int_equal(ctl(f, (const char*[]){"--token", "Flag.Token_0123456789", "list", NULL}), 3);
    assert_string_equal(authorizations(log), "Bearer Flag.Token_0123456789");
    // An empty variable is no token: no header at all.
    setenv("RAGDOLL_TOKEN", "", 1);
    assert_int_equal(ctl(f, (const char*[]){"list", NULL}), 3);
    assert_non_null(strstr(f->r.err, "401 Unauthorized"));
    assert_non_null(strstr(f->r.err, "wants a token"));
    assert_string_equal(authorizations(log), "-");

    // A malformed token is a usage error, before anything is sent, and is
    // not echoed.
    assert_int_equal(ctl(f, (const char*[]){"--token", "too-short", "list", NULL}), 2);
    assert_null(strstr(f->r.err, "too-short"));
    setenv("RAGDOLL_TOKEN", "has spaces in the middle", 1);
    assert_int_equal(ctl(f, (const char*[]){"list", NULL}), 2);
    assert_non_null(strstr(f->r.err, "RAGDOLL_TOKEN"));
    assert_null(strstr(f->r.err, "spaces"));
    assert_string_equal(authorizations(log), "");
    unsetenv("RAGDOLL_TOKEN");
}

// Runs ragdoll-load on `scenario` with up to 6 more arguments; returns the
// seconds it took.
static double load(fixture* f, const char* scenario, const char* const* args) {
    char* argv[32];
    int n = 0;
    argv[n++] = (char*)env_or("RAGDOLL_LOAD", "build/clients/c/ragdoll-load");
    argv[n++] = "--quiet";
    for (int i = 0; args[i] != NULL && n < 14; ++i) {
        argv[n++] = (char*)args[i];
    }
    argv[n++] = (char*)scenario;
    argv[n] = NULL;
    double t0 = now_s();
    run(&f->r, argv, 60);
    return now_s() - t0;
}

static void test_ragdoll_load_sends_its_token(void** state) {
    fixture* f = *state;
    const char* log = path_in(f, "requests.txt", 0);
    start_refuser(f, log);
    unsetenv("RAGDOLL_TOKEN");
    // Three clients that do not reconnect: three requests, then exit 3 (no
    // client could connect), long before the scenario's minute is up.
    char text[256];
    snprintf(text, sizeof text,
             "{\"url\": \"%s\", \"clients\": 3, \"duration_s\": 60, \"token\": "
             "\"Scenario.Token-0123456789\"}",
             f->url);
    const char* scenario = write_file(f, "token.json", text, 1);
    double took = load(f, scenario, (const char*[]){NULL});
    assert_int_equal(f->r.exit_code, 3);
    assert_true(took < 10);
    assert_non_null(strstr(f->r.err, "401 Unauthorized"));
    assert_null(strstr(f->r.err, "Scenario.Token-0123456789"));
    const char* three = "Bearer Scenario.Token-0123456789 Bearer Scenario.Token-0123456789 "
                        "Bearer Scenario.Token-0123456789";
    assert_string_equal(authorizations(log), three);
    // --token overrides the scenario's; RAGDOLL_TOKEN does not.
    setenv("RAGDOLL_TOKEN", "Env~Token-0123456789", 1);
    load(f, scenario, (const char*[]){"--token", "Flag.Token_0123456789", NULL});
    assert_int_equal(f->r.exit_code, 3);
    assert_string_equal(authorizations(log), "Bearer Flag.Token_0123456789 Bearer "
                                             "Flag.Token_0123456789 Bearer Flag.Token_0123456789");
    load(f, scenario, (const char*[]){NULL});
    assert_string_equal(authorizations(log), three);
    // With neither, RAGDOLL_TOKEN.
    snprintf(text, sizeof text, "{\"url\": \"%s\", \"clients\": 3, \"duration_s\": 60}", f->url);
    scenario = write_file(f, "env.json", text, 2);
    load(f, scenario, (const char*[]){NULL});
    assert_int_equal(f->r.exit_code, 3);
    assert_string_equal(authorizations(log), "Bearer Env~Token-0123456789 Bearer "
                                             "Env~Token-0123456789 Bearer Env~Token-0123456789");
    unsetenv("RAGDOLL_TOKEN");
    // A malformed token in the file: a scenario error (2), not echoed.
    snprintf(text, sizeof text, "{\"url\": \"%s\", \"token\": \"a b c d e f g h i j\"}", f->url);
    scenario = write_file(f, "bad.json", text, 2);
    load(f, scenario, (const char*[]){NULL});
    assert_int_equal(f->r.exit_code, 2);
    assert_non_null(strstr(f->r.err, "\"token\""));
    assert_null(strstr(f->r.err, "a b c"));
    assert_string_equal(authorizations(log), "");
}

static void test_ragdoll_load_gives_up_when_nobody_listens(void** state) {
    fixture* f = *state;
    int port = server_free_port();
    assert_true(port > 0);
    char url[64];
    snprintf(url, sizeof url, "ws://127.0.0.1:%d/ws", port);
    // 50 clients for a minute, and 50 started 10 a second: both end with
    // exit 3 within seconds (the bound is wide: a loaded machine).
    const char* scenario = env_or("RD_LOAD_SCENARIO", "clients/c/scenarios/demo.json");
    double took = load(f, scenario,
                       (const char*[]){"--url", url, "--clients", "50", "--duration", "60", NULL});
    print_message("all at once: exit %d after %.2f s\n", f->r.exit_code, took);
    assert_int_equal(f->r.exit_code, 3);
    assert_true(took < 10);
    assert_non_null(strstr(f->r.err, "giving up"));
    took = load(
        f, scenario,
        (const char*[]){"--url", url, "--clients", "50", "--ramp", "10", "--duration", "60", NULL});
    print_message("ramp of 10/s: exit %d after %.2f s\n", f->r.exit_code, took);
    assert_int_equal(f->r.exit_code, 3);
    assert_true(took < 10);
}

// ---------------------------------------------------------------------------
// The rdc example of clients/c/README.md (examples/game.c)
// ---------------------------------------------------------------------------

static void test_rdc_example_exits_when_world_1_is_missing(void** state) {
    fixture* f = *state;
    // A server without the demo: no world 1. The example says the server's
    // error and exits 1 (it used to wait in silence).
    assert_int_equal(server_start(&f->srv, 0, false), 0);
    snprintf(f->url, sizeof f->url, "ws://127.0.0.1:%d/ws", f->srv.port);
    char* argv[] = {(char*)env_or("RDC_EXAMPLE", "build/clients/c/rdc-example"), f->url, NULL};
    double t0 = now_s();
    run(&f->r, argv, 30);
    assert_int_equal(f->r.exit_code, 1);
    assert_true(now_s() - t0 < 10);
    assert_non_null(strstr(f->r.err, "subscribe failed: not_found"));
}

static void test_rdc_example_kills_the_demo_character(void** state) {
    fixture* f = *state;
    // With the demo: 60 snapshots (2 s), then the kill, whose reply names
    // the bone it hit; exit 0.
    char* argv[] = {(char*)env_or("RDC_EXAMPLE", "build/clients/c/rdc-example"), f->url, NULL};
    run(&f->r, argv, 60);
    assert_int_equal(f->r.exit_code, 0);
    assert_non_null(strstr(f->r.out, "(animated)"));
    assert_non_null(strstr(f->r.out, "killed: the impulse hit the "));
}

int main(void) {
    signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_ragdollctl_exit_codes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ragdollctl_create_takes_a_solver, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ragdollctl_save_writes_a_state_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ragdollctl_drives_cloth_and_the_air, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ragdollctl_watch_prints_n_snapshots, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ragdollctl_watch_ends_when_its_reader_goes, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_ragdollctl_record_then_replay, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ragdollctl_far_times_are_bounded, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ragdollctl_refuses_arguments_the_server_would_close_on,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_ragdollctl_record_placeholders_wait_for_their_reply,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_ragdollctl_nul_bytes_make_a_line_malformed, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_ragdollctl_record_reports_write_errors, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_ragdollctl_sends_its_token_and_names_a_refusal,
                                        setup_bare, teardown),
        cmocka_unit_test_setup_teardown(test_ragdoll_load_budgeted_viewers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ragdoll_load_sends_its_token, setup_bare, teardown),
        cmocka_unit_test_setup_teardown(test_ragdoll_load_gives_up_when_nobody_listens, setup_bare,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_rdc_example_exits_when_world_1_is_missing, setup_bare,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_rdc_example_kills_the_demo_character, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ragdoll_load_50_clients_for_5_seconds, setup,
                                        teardown),
    };
    return cmocka_run_group_tests_name("tools", tests, NULL, NULL);
}
