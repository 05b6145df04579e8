/*
 * report.c: the server's events as counters and log lines (report.h).
 *
 * Which events, at which level:
 *
 *   session_opened, session_closed   info (closed: warn when the server
 *                                    dropped it for an error: a write error,
 *                                    its send queue over the hard limit, 1011)
 *   world_created, world_destroyed   info
 *   upgrade_refused                  warn   rate-limited (log.h)
 *   rate_limited, forbidden          warn   rate-limited
 *   command_rejected                 info   rate-limited (a message that did not decode)
 *   internal_error                   error  rate-limited (an internal reply: out of memory)
 *   error                            error  rate-limited (out of memory outside a command)
 *   command                          debug  (every command's op and code)
 *   asset_warning                    warn   (a skeleton file loaded with a warning, at startup)
 *
 * Counting is unconditional; only the lines depend on the level.
 */
#include "report.h"

#include <string.h>

// Fields every line about a session starts with.
static void session_fields(app_log_line* l, const net_session* s) {
    app__log_u64(l, "session", net_session_id(s));
    app__log_str(l, "peer", net_session_peer_name(s));
}

// A session's label in ragdolld_sessions and in the log: its role, or
// anonymous for one without a token when there is an auth file.
static app_session_label label_of(const app_server* app, const app_client* c) {
    if ((app->cfg.auth != NULL && c->entry == NULL) || c->role == APP_ROLE_NONE) {
        return APP_SESSION_ANONYMOUS;
    }
    return c->role == APP_ROLE_ADMIN    ? APP_SESSION_ADMIN
           : c->role == APP_ROLE_PLAYER ? APP_SESSION_PLAYER
                                        : APP_SESSION_VIEWER;
}

void app__report_session_opened(app_server* app, app_client* c) {
    c->session_label = label_of(app, c);
    app->metrics.sessions[c->session_label]++;
    app_log_line l;
    if (app__log_begin(&app->log, &l, APP_LOG_INFO, APP_LOGK_ALWAYS, "session_opened",
                       uv_hrtime())) {
        session_fields(&l, c->session);
        app__log_str(&l, "role", app__session_label_name(c->session_label));
        app__log_end(&l);
    }
}

// Whether net dropped the session because of a server-side failure
// (net.h lists the reasons it gives).
static bool dropped_for_error(const char* reason, uint16_t sent) {
    return sent == 1011 || strncmp(reason, "write error", 11) == 0 ||
           strncmp(reason, "send queue over", 15) == 0;
}

void app__report_session_closed(app_server* app, app_client* c) {
    const net_session* s = c->session;
    uint16_t sent = net_session_close_code_sent(s);
    uint16_t received = net_session_close_code_received(s);
    // The code that ended it: the server's close frame, else the client's,
    // else 1006 (no closing handshake at all).
    uint16_t code = sent != 1006 ? sent : received;
    app__metrics_close(&app->metrics, code);
    if (app->metrics.sessions[c->session_label] > 0) {
        app->metrics.sessions[c->session_label]--;
    }
    const char* reason = net_session_close_reason(s);
    app_log_level level = dropped_for_error(reason, sent) ? APP_LOG_WARN : APP_LOG_INFO;
    app_log_line l;
    uint64_t now = uv_hrtime();
    if (app__log_begin(&app->log, &l, level, APP_LOGK_ALWAYS, "session_closed", now)) {
        session_fields(&l, s);
        app__log_str(&l, "role", app__session_label_name(c->session_label));
        app__log_f64(&l, "duration_s", (double)(now - c->opened_ns) / 1e9);
        app__log_u64(&l, "bytes_in", net_session_bytes_in(s));
        app__log_u64(&l, "bytes_out", net_session_bytes_out(s));
        app__log_u64(&l, "close_code", code);
        app__log_u64(&l, "close_sent", sent);
        app__log_u64(&l, "close_received", received);
        app__log_str(&l, "reason", reason);
        app__log_end(&l);
    }
}

void app__report_refused(app_server* app, const net_session* s, int status, const char* why) {
    app__metrics_refused(&app->metrics, status);
    app_log_line l;
    if (app__log_begin(&app->log, &l, APP_LOG_WARN, APP_LOGK_REFUSED, "upgrade_refused",
                       uv_hrtime())) {
        app__log_str(&l, "peer", net_session_peer_name(s));
        app__log_u64(&l, "status", (uint64_t)status);
        app__log_str(&l, "why", why);
        app__log_end(&l);
    }
}

static const char* op_name(uint32_t op) {
    const char* name = rdp_op_name((rdp_op)op);
    return name != NULL ? name : "unknown";
}

void app__report_command(app_server* app, app_client* c, uint32_t op, rdp_code code, bool decode) {
    if (c != NULL && c->cmd_op == op) {
        c->cmd_op = 0; // answered: app__report_end() must not count it again
    }
    app__metrics_command(&app->metrics, op, code);
    app_log_line l;
    uint64_t now = uv_hrtime();
    bool line = false;
    if (code == RDP_E_RATE_LIMITED) {
        line =
            app__log_begin(&app->log, &l, APP_LOG_WARN, APP_LOGK_RATE_LIMITED, "rate_limited", now);
    } else if (code == RDP_E_FORBIDDEN) {
        line = app__log_begin(&app->log, &l, APP_LOG_WARN, APP_LOGK_FORBIDDEN, "forbidden", now);
    } else if (code == RDP_E_INTERNAL) {
        line = app__log_begin(&app->log, &l, APP_LOG_ERROR, APP_LOGK_ERROR, "internal_error", now);
    } else if (decode) {
        line =
            app__log_begin(&app->log, &l, APP_LOG_INFO, APP_LOGK_PROTOCOL, "command_rejected", now);
    } else {
        line = app__log_begin(&app->log, &l, APP_LOG_DEBUG, APP_LOGK_ALWAYS, "command", now);
    }
    if (line) {
        if (c != NULL) {
            session_fields(&l, c->session);
        }
        app__log_str(&l, "op", op_name(op));
        app__log_str(&l, "code", rdp_code_name(code));
        app__log_end(&l);
    }
}

void app__report_reply(app_server* app, app_client* c, uint32_t op, const char* reply, size_t len) {
    rdp_code code;
    if (reply != NULL && rdp_reply_code(reply, len, &code)) {
        app__report_command(app, c, op, code, false);
    }
}

void app__report_text(app_client* c, const char* text, size_t len, int rc) {
    if (rc == 0) {
        app__metrics_sent(&c->app->metrics, APP_MSG_TEXT, len);
    }
    rdp_code code;
    if (c->cmd_op != 0 && rdp_reply_code(text, len, &code)) {
        uint32_t op = c->cmd_op;
        c->cmd_op = 0; // one reply per command
        app__report_command(c->app, c, op, code, false);
    }
}

void app__report_error(app_server* app, const net_session* s, const char* what) {
    app_log_line l;
    if (app__log_begin(&app->log, &l, APP_LOG_ERROR, APP_LOGK_ERROR, "error", uv_hrtime())) {
        if (s != NULL) {
            session_fields(&l, s);
        }
        app__log_str(&l, "what", what);
        app__log_end(&l);
    }
}

void app__report_world_created(app_server* app, const app_world* w) {
    app_log_line l;
    if (app__log_begin(&app->log, &l, APP_LOG_INFO, APP_LOGK_ALWAYS, "world_created",
                       uv_hrtime())) {
        app__log_u64(&l, "world", w->id);
        app__log_u64(&l, "tick_hz", w->tick_hz);
        const char* solver = app__solver_name(w->def.solver);
        app__log_str(&l, "solver", solver != NULL ? solver : "unknown");
        app__log_u64(&l, "worlds", app->world_count);
        app__log_end(&l);
    }
}

void app__report_world_destroyed(app_server* app, app_world* w) {
    app_log_line l;
    if (app__log_begin(&app->log, &l, APP_LOG_INFO, APP_LOGK_ALWAYS, "world_destroyed",
                       uv_hrtime())) {
        app__log_u64(&l, "world", w->id);
        const app_world_view* v = app__world_view(w);
        app__log_u64(&l, "tick", v->tick);
        app__log_u64(&l, "entities", v->entities);
        app__log_end(&l);
    }
}

void app__report_sent(app_client* c, app_msg_kind kind, size_t bytes) {
    app__metrics_sent(&c->app->metrics, kind, bytes);
}

void app__report_begin(app_client* c, uint32_t op) {
    c->cmd_op = op;
    c->cmd_pending = c->pending;
}

void app__report_end(app_server* app, app_client* c, rdp_code silent) {
    if (c->cmd_op != 0 && c->pending == c->cmd_pending) {
        // Neither answered nor queued: a binary ack (which gets no reply),
        // or a reply that could not be made.
        app__report_command(app, c, c->cmd_op, silent, false);
    }
    c->cmd_op = 0; // a queued command is counted at its tick (app__report_reply)
}

void app__report_asset_warning(app_log* log, const char* path, const sim_skeleton_def* skeleton,
                               const sim_skeleton_issue* w) {
    app_log_line l;
    if (app__log_begin(log, &l, APP_LOG_WARN, APP_LOGK_ALWAYS, "asset_warning", uv_hrtime())) {
        app__log_str(&l, "file", path);
        app__log_str(&l, "skeleton", skeleton->name);
        if (w->bone >= 0 && (uint32_t)w->bone < skeleton->bone_count) {
            app__log_str(&l, "bone", skeleton->bones[w->bone].name);
        }
        if (w->kind == SIM_SKELETON_MASS_RATIO && w->other >= 0 &&
            (uint32_t)w->other < skeleton->bone_count) {
            app__log_str(&l, "parent", skeleton->bones[w->other].name);
            app__log_f64(&l, "mass_ratio", (double)w->value);
        }
        app__log_str(&l, "message", w->message);
        app__log_end(&l);
    }
}

void app__report_rollback(app_server* app, const app_world* w, uint64_t tick, uint64_t from_tick,
                          uint64_t entity, const char* dropped, const char* failed) {
    app_log_line l;
    if (app__log_begin(&app->log, &l, failed != NULL ? APP_LOG_WARN : APP_LOG_INFO, APP_LOGK_ALWAYS,
                       failed != NULL ? "rollback_failed" : "rolled_back", uv_hrtime())) {
        app__log_u64(&l, "world", w->id);
        app__log_u64(&l, "tick", tick);
        app__log_u64(&l, "from_tick", from_tick);
        app__log_u64(&l, "entity", entity);
        app__log_str(&l, "dropped", dropped != NULL ? dropped : "none");
        if (failed != NULL) {
            app__log_str(&l, "reason", failed);
        }
        app__log_end(&l);
    }
}
