/*
 * main.c: the ragdolld program: parse options, start the server on the
 * default loop, print "listening on HOST:PORT", and on SIGINT/SIGTERM shut
 * down gracefully. What it has to say once the options are read goes to
 * the log (stderr, in --log-format), like the server's own lines.
 */
#include "app.h"
#include "log.h"
#include "report.h"
#include "templates.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

typedef struct program {
    app_server* app;
    uv_signal_t sigint, sigterm;
    app_log log;
} program;

// Logs `event` with one text field, if the level allows.
static void say(app_log* log, app_log_level level, const char* event, const char* key,
                const char* value) {
    app_log_line l;
    if (app__log_begin(log, &l, level, APP_LOGK_ALWAYS, event, uv_hrtime())) {
        if (key != NULL) {
            app__log_str(&l, key, value);
        }
        app__log_end(&l);
    }
}

// app_assets_load()'s warn: each warning about an asset file that loaded
// anyway goes to the log, so the operator sees it at startup.
static void on_asset_warning(void* ctx, const char* path, const sim_skeleton_def* skeleton,
                             const sim_skeleton_issue* w) {
    app__report_asset_warning(ctx, path, skeleton, w);
}

static void on_shutdown_done(void* arg) {
    program* p = arg;
    uv_close((uv_handle_t*)&p->sigint, NULL);
    uv_close((uv_handle_t*)&p->sigterm, NULL);
}

static void on_signal(uv_signal_t* h, int signum) {
    program* p = h->data;
    say(&p->log, APP_LOG_INFO, "shutting_down", "signal", signum == SIGINT ? "SIGINT" : "SIGTERM");
    uv_signal_stop(&p->sigint);
    uv_signal_stop(&p->sigterm);
    app_server_shutdown(p->app, on_shutdown_done, p);
}

int main(int argc, char** argv) {
    app_config cfg = app_config_default();
    int rc = app_config_parse(argc, argv, &cfg, stdout, stderr);
    if (rc != 0) {
        return rc > 0 ? 0 : 2;
    }
    program p = {0};
    app__log_init(&p.log, stderr, cfg.log_level, cfg.log_format);
    char msg[640];
    // Each client is a file descriptor: make room for --max-sessions of them
    // (and the listener, the loop's own and the asset files) within the hard
    // limit, or say how many the server can really hold.
    struct rlimit nofile;
    rlim_t want = (rlim_t)cfg.max_sessions + 64;
    if (getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur < want) {
        nofile.rlim_cur = want < nofile.rlim_max ? want : nofile.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &nofile) != 0 || nofile.rlim_cur < want) {
            snprintf(msg, sizeof msg,
                     "%llu open files at most (RLIMIT_NOFILE): fewer than --max-sessions %u "
                     "clients can connect",
                     (unsigned long long)nofile.rlim_cur, cfg.max_sessions);
            say(&p.log, APP_LOG_WARN, "few_open_files", "message", msg);
        }
    }
    // libuv writes without MSG_NOSIGNAL: a client that vanishes mid-write
    // must not kill the server.
    signal(SIGPIPE, SIG_IGN);
    // A file-size limit (ulimit -f) makes a state file or journal write
    // fail with EFBIG, handled as a full disk, rather than kill the server.
    signal(SIGXFSZ, SIG_IGN);

    // Skeletons and clips: without them no character can be spawned, so a
    // broken or missing file is fatal and names itself.
    sim_library* lib = NULL;
    char err[512];
    if (sim_library_create(&lib) != SIM_OK ||
        app_assets_load(cfg.assets_dir, lib, on_asset_warning, &p.log, err, sizeof err) != 0) {
        snprintf(msg, sizeof msg, "%s (see --assets)", lib != NULL ? err : "no memory");
        say(&p.log, APP_LOG_ERROR, "assets_failed", "message", msg);
        sim_library_destroy(lib);
        return 1;
    }
    cfg.library = lib;
    if (cfg.replay_state != NULL) {
        // Offline: the journal beside the state file unless one is named.
        char sibling[4096];
        const char* journal = cfg.replay_journal;
        size_t n = strlen(cfg.replay_state);
        if (journal == NULL && n > 6 && n < sizeof sibling &&
            strcmp(cfg.replay_state + n - 6, ".state") == 0) {
            snprintf(sibling, sizeof sibling, "%.*s.journal", (int)(n - 6), cfg.replay_state);
            journal = access(sibling, F_OK) == 0 ? sibling : NULL;
        }
        rc = app_replay(&cfg, cfg.replay_state, journal, cfg.replay_until, cfg.print_hash, stdout,
                        stderr);
        sim_library_destroy(lib);
        return rc;
    }
    // World templates: a broken one is fatal and names itself, as a
    // skeleton is; a missing default directory is none.
    app_templates* templates = NULL;
    if (app_templates_load(cfg.templates_dir, cfg.templates_required, &templates, err,
                           sizeof err) != 0) {
        snprintf(msg, sizeof msg, "%s (see --templates)", err);
        say(&p.log, APP_LOG_ERROR, "templates_failed", "message", msg);
        sim_library_destroy(lib);
        return 1;
    }
    cfg.templates = templates;
    app_auth* auth = NULL;
    if (cfg.auth_file != NULL) {
        if (app_auth_load(cfg.auth_file, &auth, err, sizeof err) != 0) {
            snprintf(msg, sizeof msg, "%s (see --auth-file)", err);
            say(&p.log, APP_LOG_ERROR, "auth_file_failed", "message", msg);
            app_templates_destroy(templates);
            sim_library_destroy(lib);
            return 1;
        }
        cfg.auth = auth;
        snprintf(msg, sizeof msg, "%u tokens from %s; without a token: %s", app_auth_count(auth),
                 cfg.auth_file, app_role_name(cfg.anonymous_role));
        say(&p.log, APP_LOG_INFO, "access_control", "message", msg);
    }

    uv_loop_t* loop = uv_default_loop();
    rc = app_server_start(loop, &cfg, &p.app);
    if (rc != 0) {
        // UV_ENOSPC: the demo world did not fit; UV_EBUSY: another server
        // holds the state dir; both already said. Anything else is the
        // listening socket's.
        if (rc != UV_ENOSPC && rc != UV_EBUSY) {
            snprintf(msg, sizeof msg, "cannot listen on %s:%d: %s", cfg.host, cfg.port,
                     uv_strerror(rc));
            say(&p.log, APP_LOG_ERROR, "listen_failed", "message", msg);
        }
        uv_run(loop, UV_RUN_DEFAULT);
        app_templates_destroy(templates);
        sim_library_destroy(lib);
        app_auth_destroy(auth);
        return 1;
    }
    uv_signal_init(loop, &p.sigint);
    uv_signal_init(loop, &p.sigterm);
    p.sigint.data = p.sigterm.data = &p;
    uv_signal_start(&p.sigint, on_signal, SIGINT);
    uv_signal_start(&p.sigterm, on_signal, SIGTERM);

    // A missing viewer is not fatal (clients still work), but say so: a
    // browser would only get 404.
    char index[4096];
    snprintf(index, sizeof index, "%s/index.html", cfg.web_root);
    if (access(index, R_OK) != 0) {
        // (GET / will be 404; see --web-root.)
        say(&p.log, APP_LOG_WARN, "no_viewer", "path", index);
    }
    printf("listening on %s:%d\n", cfg.host, app_server_port(p.app));
    fflush(stdout);
    snprintf(msg, sizeof msg, "%s:%d", cfg.host, app_server_port(p.app));
    say(&p.log, APP_LOG_INFO, "listening", "address", msg);
    uv_run(loop, UV_RUN_DEFAULT);
    rc = uv_loop_close(loop);
    app_templates_destroy(templates);
    sim_library_destroy(lib);
    app_auth_destroy(auth);
    say(&p.log, rc == 0 ? APP_LOG_INFO : APP_LOG_ERROR, "stopped", rc == 0 ? NULL : "message",
        "handles left open");
    return rc == 0 ? 0 : 1;
}
