/*
 * main.c: the ragdolld program: parse options, start the server on the
 * default loop, print "listening on HOST:PORT", and on SIGINT/SIGTERM shut
 * down gracefully.
 */
#include "app.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

typedef struct program {
    app_server* app;
    uv_signal_t sigint, sigterm;
} program;

static void on_shutdown_done(void* arg) {
    program* p = arg;
    uv_close((uv_handle_t*)&p->sigint, NULL);
    uv_close((uv_handle_t*)&p->sigterm, NULL);
}

static void on_signal(uv_signal_t* h, int signum) {
    program* p = h->data;
    fprintf(stderr, "ragdolld: %s, shutting down\n", signum == SIGINT ? "SIGINT" : "SIGTERM");
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
    // Each client is a file descriptor: make room for --max-sessions of them
    // (and the listener, the loop's own and the asset files) within the hard
    // limit, or say how many the server can really hold.
    struct rlimit nofile;
    rlim_t want = (rlim_t)cfg.max_sessions + 64;
    if (getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur < want) {
        nofile.rlim_cur = want < nofile.rlim_max ? want : nofile.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &nofile) != 0 || nofile.rlim_cur < want) {
            fprintf(stderr,
                    "ragdolld: warning: %llu open files at most (RLIMIT_NOFILE): fewer than "
                    "--max-sessions %u clients can connect\n",
                    (unsigned long long)nofile.rlim_cur, cfg.max_sessions);
        }
    }
    // libuv writes without MSG_NOSIGNAL: a client that vanishes mid-write
    // must not kill the server.
    signal(SIGPIPE, SIG_IGN);

    // Skeletons and clips: without them no character can be spawned, so a
    // broken or missing file is fatal and names itself.
    sim_library* lib = NULL;
    char err[512];
    if (sim_library_create(&lib) != SIM_OK ||
        app_assets_load(cfg.assets_dir, lib, err, sizeof err) != 0) {
        fprintf(stderr, "ragdolld: assets: %s (see --assets)\n", lib != NULL ? err : "no memory");
        sim_library_destroy(lib);
        return 1;
    }
    cfg.library = lib;
    app_auth* auth = NULL;
    if (cfg.auth_file != NULL) {
        if (app_auth_load(cfg.auth_file, &auth, err, sizeof err) != 0) {
            fprintf(stderr, "ragdolld: auth file: %s (see --auth-file)\n", err);
            sim_library_destroy(lib);
            return 1;
        }
        cfg.auth = auth;
        fprintf(stderr, "ragdolld: access control: %u tokens from %s; without a token: %s\n",
                app_auth_count(auth), cfg.auth_file, app_role_name(cfg.anonymous_role));
    }

    uv_loop_t* loop = uv_default_loop();
    program p = {0};
    rc = app_server_start(loop, &cfg, &p.app);
    if (rc != 0) {
        fprintf(stderr, "ragdolld: cannot listen on %s:%d: %s\n", cfg.host, cfg.port,
                uv_strerror(rc));
        uv_run(loop, UV_RUN_DEFAULT);
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
        fprintf(stderr, "ragdolld: warning: no viewer at %s (see --web-root); GET / will be 404\n",
                index);
    }
    printf("listening on %s:%d\n", cfg.host, app_server_port(p.app));
    fflush(stdout);
    uv_run(loop, UV_RUN_DEFAULT);
    rc = uv_loop_close(loop);
    sim_library_destroy(lib);
    app_auth_destroy(auth);
    fprintf(stderr, "ragdolld: stopped%s\n", rc == 0 ? "" : " (handles left open)");
    return rc == 0 ? 0 : 1;
}
