/*
 * server.c: the application's side of the network: sessions become
 * clients, text messages become commands, /healthz reports liveness.
 * Startup and graceful shutdown (the clock and the workers are
 * scheduler.c's).
 */
#include "agones.h"
#include "app_internal.h"
#include "persist.h"
#include "report.h"
#include "scenes.h"
#include "templates.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// ---------------------------------------------------------------------------
// Network callbacks
// ---------------------------------------------------------------------------

static bool on_http(void* ctx, const char* path, net_http_response* resp) {
    app_server* app = ctx;
    if (strcmp(path, "/metrics") == 0) {
        app__metrics_http(app, resp); // Prometheus text (metrics.c)
        return true;
    }
    if (strcmp(path, "/healthz") != 0) {
        return false;
    }
    char body[160];
    double uptime = (double)(uv_hrtime() - app->started_ns) / 1e9;
    int n = snprintf(body, sizeof body,
                     "{\"status\":\"ok\",\"uptime_s\":%.3f,\"worlds\":%u,\"sessions\":%u}", uptime,
                     app->world_count, app->clients);
    resp->status = 200;
    resp->content_type = "application/json";
    resp->body = malloc((size_t)n + 1);
    if (resp->body == NULL) {
        return false;
    }
    memcpy(resp->body, body, (size_t)n + 1);
    resp->body_len = (size_t)n;
    return true;
}

app_client* app__client_new(app_server* app, net_session* s) {
    app_client* c = calloc(1, sizeof *c);
    if (c == NULL) {
        return NULL;
    }
    c->session = s;
    c->app = app;
    c->role = APP_ROLE_ADMIN;
    c->owner = ((uint64_t)1 << 63) | net_session_id(s);
    uint64_t now = uv_hrtime();
    app__bucket_init(&c->describe_budget, APP_DESCRIBE_BYTES_PER_S, APP_DESCRIBE_BURST_BYTES, now);
    app__bucket_init(&c->commands, app->cfg.cmd_rate, app->cfg.cmd_burst, now);
    c->next = app->client_list;
    if (c->next != NULL) {
        c->next->prev = c;
    }
    app->client_list = c;
    net_session_set_data(s, c);
    return c;
}

static int on_upgrade(void* ctx, net_session* s, const net_upgrade* req, const char** reason) {
    app_server* app = ctx;
    if (app->shutting_down) {
        *reason = "shutting down";
        return 503;
    }
    return app__admit_upgrade(app, s, req, reason);
}

static void on_open(void* ctx, net_session* s) {
    app_server* app = ctx;
    app_client* c = net_session_data(s);
    if (c == NULL) {
        app__report_error(app, s, "out of memory opening a session");
        net_session_close(s, 1011, "out of memory");
        return;
    }
    c->open = true;
    c->opened_ns = uv_hrtime();
    app__report_session_opened(app, c);
    app->clients++;
    rdp_world_info* infos = calloc(app->world_count + 1, sizeof *infos);
    if (infos != NULL) {
        uint32_t n = app__world_infos(app, infos);
        size_t len = 0;
        char* text = rdp_event_welcome(APP_VERSION, infos, n, &len);
        app__send(c, text, len);
        free(infos);
    }
}

static void on_message(void* ctx, net_session* s, const uint8_t* data, size_t len, bool binary) {
    app_server* app = ctx;
    app_client* c = net_session_data(s);
    if (c == NULL || app->shutting_down) {
        return;
    }
    // Every message pays, whatever it asks: a client beyond its rate gets
    // rate_limited (an ack, which has no reply, is dropped) and stays.
    uint64_t retry_ms = 0;
    bool paid = app__bucket_take(&c->commands, uv_hrtime(), 1, &retry_ms);
    if (!paid) {
        app->rate_limited++;
    }
    if (binary) {
        if (paid) {
            app__report_begin(c, RDP_OP_ACK); // binary frames are acks
            app__binary_message(app, c, data, len);
            app__report_end(app, c, RDP_OK);
        } else {
            app__report_command(app, c, RDP_OP_ACK, RDP_E_RATE_LIMITED, false); // no reply
        }
        return;
    }
    rdp_command cmd;
    rdp_error err;
    rdp_code rc = rdp_command_decode((const char*)data, len, &cmd, &err);
    if (!paid) {
        // Counted here: the refusal is not a reply to a command being handled.
        app__report_command(app, c, cmd.op, RDP_E_RATE_LIMITED, false);
        if (rc == RDP_OK && cmd.op == RDP_OP_ACK) {
            return;
        }
        char msg[128];
        snprintf(msg, sizeof msg,
                 "more than %.0f commands per second (%.0f at once); retry in %llu ms",
                 app->cfg.cmd_rate, app->cfg.cmd_burst, (unsigned long long)retry_ms);
        app__send_error(c, rdp_re_of(&cmd), RDP_E_RATE_LIMITED, msg);
        return;
    }
    if (rc != RDP_OK) {
        app__report_command(app, c, cmd.op, err.code, true);
        app__send_error(c, rdp_re_of(&cmd), err.code, err.message);
        return;
    }
    app__report_begin(c, cmd.op);
    app__dispatch(app, c, &cmd);
    app__report_end(app, c, RDP_E_INTERNAL);
}

static void on_close(void* ctx, net_session* s) {
    app_server* app = ctx;
    app_client* c = net_session_data(s);
    if (c == NULL) {
        return;
    }
    app__client_gone(app, c);
    if (c->open) {
        app__report_session_closed(app, c);
        app->clients--;
    }
    if (c->prev != NULL) {
        c->prev->next = c->next;
    } else {
        app->client_list = c->next;
    }
    if (c->next != NULL) {
        c->next->prev = c->prev;
    }
    free(c);
}

static void on_refused(void* ctx, const net_session* s, int status, const char* why) {
    app__report_refused(ctx, s, status, why);
}

// ---------------------------------------------------------------------------
// Lifecycle
// ---------------------------------------------------------------------------

static char* dup_str(const char* s) {
    size_t n = strlen(s) + 1;
    char* d = malloc(n);
    if (d != NULL) {
        memcpy(d, s, n);
    }
    return d;
}

static void app_free(app_server* app) {
    if (app->worlds != NULL) {
        for (uint32_t i = 0; i < app->cfg.max_worlds; ++i) {
            if (app->worlds[i] != NULL) {
                app__world_destroy(app, app->worlds[i]);
            }
        }
    }
    free(app->worlds);
    app__persist_unlock(app);
    free(app->host);
    free(app->web_root);
    free(app);
}

int app_server_start(uv_loop_t* loop, const app_config* cfg, app_server** out) {
    app_server* app = calloc(1, sizeof *app);
    if (app == NULL) {
        return UV_ENOMEM;
    }
    app->loop = loop;
    app->cfg = *cfg;
    app__log_init(&app->log, cfg->log_stream != NULL ? cfg->log_stream : stderr, cfg->log_level,
                  cfg->log_format);
    if (app__solver_name(cfg->world_solver) == NULL) {
        app__report_error(app, NULL, "world_solver is no solver (xpbd or soft_step)");
        free(app);
        return UV_EINVAL;
    }
    app->host = dup_str(cfg->host);
    app->web_root = cfg->web_root != NULL ? dup_str(cfg->web_root) : NULL;
    app->cfg.host = app->host;
    app->cfg.web_root = app->web_root;
    app->worlds = calloc(cfg->max_worlds, sizeof *app->worlds);
    app->started_ns = uv_hrtime();
    if (app->host == NULL || app->worlds == NULL || cfg->max_worlds == 0 ||
        cfg->inbox_capacity == 0 || cfg->max_catchup == 0) {
        app_free(app);
        return UV_ENOMEM;
    }
    // Durable worlds first: the demo is made only when none was loaded.
    char locked[512];
    if (app__persist_lock(app, locked, sizeof locked) != 0) {
        app__report_error(app, NULL, locked);
        app_free(app);
        return UV_EBUSY;
    }
    const uint32_t loaded = app__persist_load_all(app);
    if (loaded == 0 && cfg->world_template != NULL) {
        // --world-template NAME: that template's world instead of the demo.
        const app_template* t = app_templates_find(cfg->templates, cfg->world_template);
        app_world* w = NULL;
        char why[400] = "out of memory";
        if (t == NULL) {
            snprintf(why, sizeof why, "--world-template: no world template \"%s\" (--templates)",
                     cfg->world_template);
        } else if (app__world_create(app, t->name, 60, app->cfg.world_limits, app->cfg.world_solver,
                                     &w) == RDP_OK &&
                   app__world_from_template(app, w, t, why, sizeof why) != 0) {
            app__world_destroy(app, w);
            w = NULL;
        }
        if (w == NULL) {
            app__report_error(app, NULL, why);
            app_free(app);
            return UV_ENOSPC; // said
        }
        (void)app__persist_world_created(app, w, why, sizeof why); // (as the demo's)
    } else if (cfg->demo && loaded == 0) {
        app_world* w = NULL;
        int rc = SIM_E_NOMEM;
        if (app__world_create(app, "demo", 60, app->cfg.world_limits, app->cfg.world_solver, &w) !=
                RDP_OK ||
            (rc = sim_scene_demo(w->sim)) != SIM_OK) {
            if (w == NULL && app->next_world_id >= APP_MAX_WORLD_ID) {
                app__report_error(app, NULL,
                                  "no world id is left for the demo world: a state file's id is "
                                  "2^53 - 1; give --no-demo or move that file");
                rc = SIM_E_CAPACITY;
            } else if (rc == SIM_E_CAPACITY) {
                app__report_error(app, NULL,
                                  "the demo world does not fit in --world-limits or "
                                  "--max-solver-work; raise them or give --no-demo");
            }
            app_free(app);
            return rc == SIM_E_CAPACITY ? UV_ENOSPC : UV_ENOMEM;
        }
        char why[256];
        // Unwritten (logged): the demo runs, refusing commands until its
        // state file can be written.
        (void)app__persist_world_created(app, w, why, sizeof why);
    }
    net_config ncfg = net_config_default();
    ncfg.host = app->cfg.host;
    ncfg.port = app->cfg.port;
    ncfg.web_root = app->cfg.web_root;
    ncfg.subprotocol = RDP_SUBPROTOCOL;
    ncfg.max_message_bytes = RDP_MAX_MESSAGE_BYTES;
    ncfg.max_sessions = app->cfg.max_sessions;
    if (app->cfg.max_sessions_per_address == APP_PER_ADDRESS_AUTO) {
        app->cfg.max_sessions_per_address = 0; // not parsed: a test's config
    }
    ncfg.max_http_per_address = app->cfg.max_sessions_per_address;
    app->reply_backlog_limit = ncfg.read_pause_limit;
    net_callbacks cb = {.ctx = app,
                        .on_http = on_http,
                        .on_open = on_open,
                        .on_message = on_message,
                        .on_close = on_close,
                        .on_upgrade = on_upgrade,
                        .on_refused = on_refused};
    int rc = app__sched_start(app);
    if (rc != 0) {
        app_free(app);
        return rc;
    }
    rc = net_server_start(loop, &ncfg, &cb, &app->net);
    if (rc != 0) {
        // The scheduler's handles close on the loop (the caller runs it);
        // the server is freed once they have.
        app__sched_close(app, app_free);
        return rc;
    }
    // Listening, the worlds loaded: Agones may send players now.
    if (app__agones_start(app) != 0) {
        app__report_error(app, NULL, "the Agones SDK client did not start (out of memory)");
    }
    *out = app;
    return 0;
}

int app_server_port(const app_server* app) {
    return net_server_port(app->net);
}

static void on_agones_closed(app_server* app) {
    void (*done)(void*) = app->done;
    void* arg = app->done_arg;
    app_free(app);
    if (done != NULL) {
        done(arg);
    }
}

static void on_saved(app_server* app) {
    // Agones is told last: the pod may go once it knows.
    app__agones_close(app, on_agones_closed);
}

static void on_sched_closed(app_server* app) {
    // Every world is idle and no worker runs: write their states (after
    // any write still in flight lands), then free them.
    app__persist_shutdown(app, on_saved);
}

static void on_net_stopped(void* arg) {
    app_server* app = arg;
    // Every client is gone; the steps still being run are waited for, then
    // the worlds are freed.
    app__sched_close(app, on_sched_closed);
}

void app_server_shutdown(app_server* app, void (*done)(void* arg), void* arg) {
    if (app->shutting_down) {
        return;
    }
    app->shutting_down = true;
    app->done = done;
    app->done_arg = arg;
    // Clients first (1001, going away); the worlds are freed after the last
    // session's on_close, so no queued command outlives its world.
    net_server_stop(app->net, 1001, on_net_stopped, app);
}
