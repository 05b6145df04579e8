/*
 * metrics.c: the server's counters (metrics.h) and GET /metrics in the
 * Prometheus text format, version 0.0.4: for each family a HELP and a TYPE
 * line, then its samples, every sample of a family together.
 *
 * It owns the application's counters only. Bytes on the wire and dropped
 * snapshots are net's (net_server_stats()), solver overflows the
 * simulator's (sim_world_overflows()), entity counts the worlds'; they are
 * read here when the page is rendered, from each world's view
 * (app__world_view(): the simulator itself when the world is idle, the
 * copy taken when it was handed over while a worker steps it).
 */
#include "metrics.h"

#include "app_internal.h"
#include "persist.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const uint16_t close_codes[APP_CLOSE_CODES] = {1000, 1001, 1002, 1003, 1005,
                                                      1006, 1007, 1008, 1009, 1011};
static const int refused_statuses[APP_REFUSED_STATUSES] = {400, 401, 403, 405, 426, 429, 431, 503};
static const uint64_t tick_le_ns[APP_TICK_BUCKETS] = {
    100000, 250000, 500000, 1000000, 2500000, 5000000, 10000000, 16700000, 25000000, 50000000};
static const char* const tick_le[APP_TICK_BUCKETS + 1] = {"0.0001", "0.00025", "0.0005", "0.001",
                                                          "0.0025", "0.005",   "0.01",   "0.0167",
                                                          "0.025",  "0.05",    "+Inf"};
static const char* const msg_kinds[APP_MSG_KINDS] = {
    [APP_MSG_TEXT] = "text",
    [APP_MSG_SNAPSHOT_JSON] = "snapshot_json",
    [APP_MSG_SNAPSHOT_FULL] = "snapshot_full",
    [APP_MSG_SNAPSHOT_DELTA] = "snapshot_delta",
    [APP_MSG_SNAPSHOT_PARTIAL] = "snapshot_partial",
};

const char* app__session_label_name(app_session_label label) {
    switch (label) {
    case APP_SESSION_VIEWER:
        return "viewer";
    case APP_SESSION_PLAYER:
        return "player";
    case APP_SESSION_ADMIN:
        return "admin";
    case APP_SESSION_ANONYMOUS:
    case APP_SESSION_LABELS:
        break;
    }
    return "anonymous";
}

// ---------------------------------------------------------------------------
// Counting
// ---------------------------------------------------------------------------

void app__metrics_command(app_metrics* m, uint32_t op, rdp_code code) {
    uint32_t o = op < APP_METRICS_OPS && rdp_op_name((rdp_op)op) != NULL ? op : 0;
    uint32_t c = (uint32_t)code < APP_METRICS_CODES ? (uint32_t)code : (uint32_t)RDP_E_INTERNAL;
    m->commands[o][c]++;
}

void app__metrics_refused(app_metrics* m, int status) {
    size_t i = 0;
    while (i < APP_REFUSED_STATUSES && refused_statuses[i] != status) {
        i++;
    }
    m->refused[i]++; // i == APP_REFUSED_STATUSES: "other"
}

void app__metrics_close(app_metrics* m, uint16_t code) {
    size_t i = 0;
    while (i < APP_CLOSE_CODES && close_codes[i] != code) {
        i++;
    }
    m->closes[i]++;
}

void app__metrics_sent(app_metrics* m, app_msg_kind kind, size_t bytes) {
    m->messages[kind]++;
    m->message_bytes[kind] += bytes;
}

void app__tick_observe(app_tick_histogram* h, uint64_t ns) {
    size_t i = 0;
    while (i < APP_TICK_BUCKETS && ns > tick_le_ns[i]) {
        i++;
    }
    h->buckets[i]++;
    h->count++;
    h->sum_ns += ns;
}

// ---------------------------------------------------------------------------
// Rendering
// ---------------------------------------------------------------------------

typedef struct out {
    char* p;
    size_t len, cap;
    bool oom;
} out;

// Appends formatted text, growing the buffer to fit.
__attribute__((format(printf, 2, 3))) static void emit(out* o, const char* fmt, ...) {
    if (o->oom) {
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(o->p + o->len, o->cap - o->len, fmt, ap);
    va_end(ap);
    if (n >= 0 && (size_t)n >= o->cap - o->len) {
        size_t cap = 2 * o->cap + (size_t)n;
        char* grown = realloc(o->p, cap);
        if (grown == NULL) {
            o->oom = true;
            return;
        }
        o->p = grown;
        o->cap = cap;
        va_start(ap, fmt);
        n = vsnprintf(o->p + o->len, o->cap - o->len, fmt, ap);
        va_end(ap);
    }
    if (n < 0) {
        o->oom = true;
        return;
    }
    o->len += (size_t)n;
}

static void family(out* o, const char* name, const char* type, const char* help) {
    emit(o, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static const sim_entity_kind entity_kinds[] = {SIM_ENTITY_ROPE,    SIM_ENTITY_CLOTH,
                                               SIM_ENTITY_RAGDOLL, SIM_ENTITY_CHARACTER,
                                               SIM_ENTITY_BALL,    SIM_ENTITY_SOFTBODY};

// State files, journals and rollbacks (docs/STATE.md).
static void render_durability(const app_server* app, out* o) {
    family(o, "ragdolld_state_saves_total", "counter",
           "World state files written to --state-dir (autosave, save_world, a new world, "
           "shutdown), by result; a failure is logged as save_failed with the reason.");
    emit(o, "ragdolld_state_saves_total{result=\"ok\"} %llu\n", (unsigned long long)app->saves);
    emit(o, "ragdolld_state_saves_total{result=\"failed\"} %llu\n",
         (unsigned long long)app->save_failures);
    family(o, "ragdolld_journal_failures_total", "counter",
           "Times a world's journal went down: a write, fsync or open failed, or a new world's "
           "first state file could not be written (logged as journal_failed).");
    emit(o, "ragdolld_journal_failures_total %llu\n", (unsigned long long)app->journal_failures);
    uint32_t down = 0;
    for (uint32_t i = 0; i < app->cfg.max_worlds; ++i) {
        down += app->worlds[i] != NULL && app__journal_down(app, app->worlds[i]);
    }
    family(o, "ragdolld_journals_down", "gauge",
           "Worlds whose journal cannot be written now: they refuse commands that would "
           "change them (unavailable) until it can (non-zero: look at the disk).");
    emit(o, "ragdolld_journals_down %u\n", down);
    family(o, "ragdolld_state_files_refused_total", "counter",
           "Files refused when the server started, by kind: a state file (not loaded), a "
           "journal refused or found damaged (kept as world-ID.journal.refused).");
    emit(o, "ragdolld_state_files_refused_total{file=\"state\"} %llu\n",
         (unsigned long long)app->states_refused);
    emit(o, "ragdolld_state_files_refused_total{file=\"journal\"} %llu\n",
         (unsigned long long)app->journals_refused);
    family(o, "ragdolld_rollbacks_total", "counter",
           "Blow-ups (an entity non-finite, flown away or faster than 1000 m/s) by result: "
           "undone (the world stepped again from a kept state) or failed (it recurred: the "
           "entity was removed as unstable).");
    emit(o, "ragdolld_rollbacks_total{result=\"undone\"} %llu\n",
         (unsigned long long)app->rollbacks);
    emit(o, "ragdolld_rollbacks_total{result=\"failed\"} %llu\n",
         (unsigned long long)app->rollback_failures);
}

static void render_server(const app_server* app, out* o) {
    const app_metrics* m = &app->metrics;
    family(o, "ragdolld_build_info", "gauge", "The server's version (always 1).");
    emit(o, "ragdolld_build_info{version=\"%s\"} 1\n", APP_VERSION);
    family(o, "ragdolld_uptime_seconds", "gauge", "Seconds since the server started.");
    emit(o, "ragdolld_uptime_seconds %.3f\n", (double)(uv_hrtime() - app->started_ns) / 1e9);
    family(o, "ragdolld_worlds", "gauge", "Worlds on the server (at most --max-worlds).");
    emit(o, "ragdolld_worlds %u\n", app->world_count);
    family(o, "ragdolld_workers", "gauge",
           "Threads that step worlds (--workers); 0: worlds step on the event-loop thread.");
    emit(o, "ragdolld_workers %u\n", app->cfg.workers);
    family(o, "ragdolld_sessions", "gauge",
           "Open WebSocket sessions by role; anonymous: without a token on a server with an "
           "auth file (without one, every session is admin).");
    for (int r = 0; r < APP_SESSION_LABELS; ++r) {
        emit(o, "ragdolld_sessions{role=\"%s\"} %u\n",
             app__session_label_name((app_session_label)r), m->sessions[r]);
    }

    family(o, "ragdolld_commands_total", "counter",
           "Commands answered, by op and by the reply's code (ok or the error code); "
           "op=\"unknown\" when the op could not be read. A command of a client that left "
           "before its tick is not counted.");
    for (uint32_t op = 0; op < APP_METRICS_OPS; ++op) {
        for (uint32_t c = 0; c < APP_METRICS_CODES; ++c) {
            if (m->commands[op][c] == 0) {
                continue;
            }
            const char* name = op == 0 ? "unknown" : rdp_op_name((rdp_op)op);
            emit(o, "ragdolld_commands_total{op=\"%s\",code=\"%s\"} %llu\n", name,
                 rdp_code_name((rdp_code)c), (unsigned long long)m->commands[op][c]);
        }
    }
    family(o, "ragdolld_rate_limited_total", "counter",
           "Messages refused for the connection's command rate (--cmd-rate, --cmd-burst), "
           "dropped acks included. Every rate_limited reply, whatever the limit, is in "
           "ragdolld_commands_total{code=\"rate_limited\"}.");
    emit(o, "ragdolld_rate_limited_total %llu\n", (unsigned long long)app->rate_limited);
    family(o, "ragdolld_auth_refusals_total", "counter",
           "Upgrades access control refused, by reason: origin (403), token (401), address "
           "(429: too many sessions from one address), full (503: no anonymous slot).");
    static const char* const refuse_reasons[APP_REFUSE_COUNT] = {
        [APP_REFUSE_ORIGIN] = "origin",
        [APP_REFUSE_TOKEN] = "token",
        [APP_REFUSE_ADDRESS] = "address",
        [APP_REFUSE_FULL] = "full",
    };
    for (int r = 0; r < APP_REFUSE_COUNT; ++r) {
        emit(o, "ragdolld_auth_refusals_total{reason=\"%s\"} %llu\n", refuse_reasons[r],
             (unsigned long long)app->auth_refusals[r]);
    }
    family(o, "ragdolld_upgrades_refused_total", "counter",
           "WebSocket upgrades refused, by HTTP status (401/403: access control, 429: too "
           "many sessions from one address, 503: server full, 400/426: bad handshake).");
    for (int i = 0; i <= APP_REFUSED_STATUSES; ++i) {
        char status[16] = "other";
        if (i < APP_REFUSED_STATUSES) {
            snprintf(status, sizeof status, "%d", refused_statuses[i]);
        }
        emit(o, "ragdolld_upgrades_refused_total{status=\"%s\"} %llu\n", status,
             (unsigned long long)m->refused[i]);
    }
    family(o, "ragdolld_ws_closes_total", "counter",
           "WebSocket sessions ended, by close code: the server's close frame if it sent one, "
           "else the client's, else 1006 (no closing handshake).");
    for (int i = 0; i <= APP_CLOSE_CODES; ++i) {
        char code[16] = "other";
        if (i < APP_CLOSE_CODES) {
            snprintf(code, sizeof code, "%u", (unsigned)close_codes[i]);
        }
        emit(o, "ragdolld_ws_closes_total{code=\"%s\"} %llu\n", code,
             (unsigned long long)m->closes[i]);
    }
    family(o, "ragdolld_messages_sent_total", "counter",
           "WebSocket messages queued to clients by kind: text (replies and events), "
           "snapshot_json, snapshot_full, snapshot_delta, snapshot_partial (binary). Snapshots "
           "replaced before "
           "they left are counted here and in ragdolld_snapshots_dropped_total.");
    for (int k = 0; k < APP_MSG_KINDS; ++k) {
        emit(o, "ragdolld_messages_sent_total{kind=\"%s\"} %llu\n", msg_kinds[k],
             (unsigned long long)m->messages[k]);
    }
    family(o, "ragdolld_message_bytes_sent_total", "counter",
           "Payload bytes of ragdolld_messages_sent_total, by kind.");
    for (int k = 0; k < APP_MSG_KINDS; ++k) {
        emit(o, "ragdolld_message_bytes_sent_total{kind=\"%s\"} %llu\n", msg_kinds[k],
             (unsigned long long)m->message_bytes[k]);
    }
    net_stats ns;
    net_server_stats(app->net, &ns);
    family(o, "ragdolld_snapshots_dropped_total", "counter",
           "Snapshots replaced by a newer one before a slow client's socket took them "
           "(latest wins).");
    emit(o, "ragdolld_snapshots_dropped_total %llu\n", (unsigned long long)ns.latest_dropped);
    family(o, "ragdolld_net_received_bytes_total", "counter",
           "Bytes read from clients' sockets (HTTP and WebSocket).");
    emit(o, "ragdolld_net_received_bytes_total %llu\n", (unsigned long long)ns.bytes_in);
    family(o, "ragdolld_net_sent_bytes_total", "counter",
           "Bytes written to clients' sockets (HTTP and WebSocket, frame headers included).");
    emit(o, "ragdolld_net_sent_bytes_total %llu\n", (unsigned long long)ns.bytes_out);
    render_durability(app, o);
}

// Each world's series, one family after another (every sample of a family
// must come together). worlds[] has max_worlds slots, NULL when free.
static void render_worlds(const app_server* app, out* o) {
    // Each world's view: afresh when idle, as handed over while a worker
    // steps it (the loop thread never reads a busy world's simulator).
    const app_world_view** views = calloc(app->cfg.max_worlds, sizeof *views);
    if (views == NULL) {
        o->oom = true;
        return;
    }
    for (uint32_t i = 0; i < app->cfg.max_worlds; ++i) {
        if (app->worlds[i] != NULL) {
            views[i] = app__world_view(app->worlds[i]);
        }
    }
    family(o, "ragdolld_tick_duration_seconds", "histogram",
           "How long a world's ticks take: its commands, events and snapshots on the loop "
           "thread and its step on a worker, not the wait for a free worker (0.0167 s is one "
           "tick at 60 Hz).");
    for (uint32_t i = 0; i < app->cfg.max_worlds; ++i) {
        const app_world* w = app->worlds[i];
        if (w == NULL) {
            continue;
        }
        const app_tick_histogram* h = &w->tick_stats;
        unsigned long long id = (unsigned long long)w->id, cum = 0;
        for (int b = 0; b <= APP_TICK_BUCKETS; ++b) {
            cum += h->buckets[b];
            emit(o, "ragdolld_tick_duration_seconds_bucket{world=\"%llu\",le=\"%s\"} %llu\n", id,
                 tick_le[b], cum);
        }
        emit(o, "ragdolld_tick_duration_seconds_sum{world=\"%llu\"} %.9f\n", id,
             (double)h->sum_ns / 1e9);
        emit(o, "ragdolld_tick_duration_seconds_count{world=\"%llu\"} %llu\n", id,
             (unsigned long long)h->count);
    }
    family(o, "ragdolld_tick_overruns_total", "counter",
           "Ticks a world dropped because it fell behind real time by more than its catch-up "
           "allowance.");
    for (uint32_t i = 0; i < app->cfg.max_worlds; ++i) {
        const app_world* w = app->worlds[i];
        if (w == NULL) {
            continue;
        }
        emit(o, "ragdolld_tick_overruns_total{world=\"%llu\"} %llu\n", (unsigned long long)w->id,
             (unsigned long long)w->overruns);
    }
    family(o, "ragdolld_entities", "gauge", "Entities in a world, by kind.");
    for (uint32_t i = 0; i < app->cfg.max_worlds; ++i) {
        const app_world* w = app->worlds[i];
        if (w == NULL) {
            continue;
        }
        for (size_t k = 0; k < sizeof entity_kinds / sizeof entity_kinds[0]; ++k) {
            emit(o, "ragdolld_entities{world=\"%llu\",kind=\"%s\"} %u\n", (unsigned long long)w->id,
                 sim_entity_kind_name(entity_kinds[k]), views[i]->by_kind[entity_kinds[k]]);
        }
    }
    family(o, "ragdolld_rigid_bodies", "gauge",
           "Rigid bodies in a world, by the kind of entity they belong to (a character's "
           "bones, balls).");
    for (uint32_t i = 0; i < app->cfg.max_worlds; ++i) {
        const app_world* w = app->worlds[i];
        if (w == NULL) {
            continue;
        }
        emit(o, "ragdolld_rigid_bodies{world=\"%llu\",kind=\"character\"} %u\n",
             (unsigned long long)w->id, views[i]->bones);
        emit(o, "ragdolld_rigid_bodies{world=\"%llu\",kind=\"ball\"} %u\n",
             (unsigned long long)w->id, views[i]->balls);
    }
    family(o, "ragdolld_particles", "gauge", "Particles in a world (ropes, cloths, ragdolls).");
    for (uint32_t i = 0; i < app->cfg.max_worlds; ++i) {
        const app_world* w = app->worlds[i];
        if (w == NULL) {
            continue;
        }
        emit(o, "ragdolld_particles{world=\"%llu\"} %u\n", (unsigned long long)w->id,
             views[i]->particles);
    }
    family(o, "ragdolld_world_reserved_bytes", "gauge",
           "Bytes a world's simulation holds: it grows with what the world holds, up to its "
           "limits, and does not shrink.");
    for (uint32_t i = 0; i < app->cfg.max_worlds; ++i) {
        const app_world* w = app->worlds[i];
        if (w == NULL) {
            continue;
        }
        emit(o, "ragdolld_world_reserved_bytes{world=\"%llu\"} %zu\n", (unsigned long long)w->id,
             sim_world_reserved_bytes(w->sim));
    }
    family(o, "ragdolld_world_history_bytes", "gauge",
           "Bytes of a world's pose history for lag compensation (--lag-history): its bodies' "
           "poses at each tick kept.");
    for (uint32_t i = 0; i < app->cfg.max_worlds; ++i) {
        const app_world* w = app->worlds[i];
        if (w == NULL) {
            continue;
        }
        emit(o, "ragdolld_world_history_bytes{world=\"%llu\"} %zu\n", (unsigned long long)w->id,
             w->history_bytes);
    }
    family(o, "ragdolld_subscribers", "gauge", "Sessions subscribed to a world's snapshots.");
    for (uint32_t i = 0; i < app->cfg.max_worlds; ++i) {
        const app_world* w = app->worlds[i];
        if (w == NULL) {
            continue;
        }
        emit(o, "ragdolld_subscribers{world=\"%llu\"} %u\n", (unsigned long long)w->id,
             w->sub_count);
    }
    family(o, "ragdolld_solver_overflows_total", "counter",
           "What a world's contact solver had no room for and skipped (array: grid entries, "
           "candidate pairs, contacts); non-zero means missed collisions.");
    for (uint32_t i = 0; i < app->cfg.max_worlds; ++i) {
        const app_world* w = app->worlds[i];
        if (w == NULL) {
            continue;
        }
        sim_overflows ov = views[i]->overflows;
        const char* const arrays[3] = {"grid", "pairs", "contacts"};
        const uint64_t values[3] = {ov.grid_entries, ov.pairs, ov.contacts};
        for (int a = 0; a < 3; ++a) {
            emit(o, "ragdolld_solver_overflows_total{world=\"%llu\",array=\"%s\"} %llu\n",
                 (unsigned long long)w->id, arrays[a], (unsigned long long)values[a]);
        }
    }
    free(views);
}

char* app__metrics_render(const app_server* app, size_t* len) {
    out o = {malloc(16384), 0, 16384, false};
    if (o.p == NULL) {
        return NULL;
    }
    render_server(app, &o);
    render_worlds(app, &o);
    if (o.oom) {
        free(o.p);
        return NULL;
    }
    *len = o.len;
    return o.p;
}

void app__metrics_http(const app_server* app, net_http_response* resp) {
    size_t len = 0;
    char* body = app__metrics_render(app, &len);
    resp->status = body != NULL ? 200 : 503;
    resp->content_type = "text/plain; version=0.0.4; charset=utf-8";
    resp->body = body;
    resp->body_len = body != NULL ? len : 0;
}
