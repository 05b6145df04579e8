/*
 * metrics.h: the server's counters and their Prometheus exposition at
 * GET /metrics (metrics.c; text format 0.0.4).
 *
 * Counters that only the application sees live here (app_metrics, in
 * app_server; app_tick_histogram, in each app_world); what only net or
 * the simulator knows (bytes on the wire, dropped snapshots, solver
 * overflows) is read from them when /metrics is asked for. Every label
 * takes a bounded set of values: op × code, a handful of close codes and
 * statuses, roles, message kinds, and worlds (at most --max-worlds). A
 * destroyed world's series disappear with it.
 *
 * Bumping a counter is an array increment; rendering is O(worlds ×
 * entities + open sessions) and runs only when /metrics is fetched.
 */
#pragma once

#include "app.h"
#include "net.h"
#include "rdp.h"

#include <stddef.h>
#include <stdint.h>

/// Ops below this are counted by name; others (and a command whose op
/// could not be read) as op="unknown".
#define APP_METRICS_OPS 32
/// Codes below this are counted by name (rdp_code); others as "internal".
#define APP_METRICS_CODES 16

/// Labels of ragdolld_sessions: a session's role, or "anonymous" for one
/// without a token on a server with an auth file (it has --anonymous's
/// role). Without an auth file every session is admin.
typedef enum app_session_label {
    APP_SESSION_VIEWER = 0,
    APP_SESSION_PLAYER,
    APP_SESSION_ADMIN,
    APP_SESSION_ANONYMOUS,
    APP_SESSION_LABELS
} app_session_label;

/// The label's name ("viewer", "player", "admin", "anonymous").
const char* app__session_label_name(app_session_label label);

/// What a WebSocket message to a client carried.
typedef enum app_msg_kind {
    APP_MSG_TEXT = 0,         ///< A reply or an event (JSON text).
    APP_MSG_SNAPSHOT_JSON,    ///< A JSON snapshot (with or without topology).
    APP_MSG_SNAPSHOT_FULL,    ///< A binary snapshot against no baseline.
    APP_MSG_SNAPSHOT_DELTA,   ///< A binary snapshot against an acknowledged baseline.
    APP_MSG_SNAPSHOT_PARTIAL, ///< A partial frame of interest management (§5.3).
    APP_MSG_KINDS
} app_msg_kind;

/// Upper bounds (le) of the tick duration histogram, seconds: 0.1 ms to
/// 50 ms; 0.0167 is one tick at 60 Hz.
#define APP_TICK_BUCKETS 10

/// Close codes counted by value (1000-1003, 1005-1009, 1011); any other
/// as code="other".
#define APP_CLOSE_CODES 10
/// Refusal statuses counted by value (400, 401, 403, 405, 426, 429, 431,
/// 503); any other as status="other".
#define APP_REFUSED_STATUSES 8

/// How long a world's ticks took (commands, step, events, snapshots).
typedef struct app_tick_histogram {
    uint64_t buckets[APP_TICK_BUCKETS + 1]; ///< Per bucket (not cumulative); the last is +Inf.
    uint64_t count;
    uint64_t sum_ns;
} app_tick_histogram;

/// The application's counters. Embedded in app_server, zeroed at start.
typedef struct app_metrics {
    uint64_t commands[APP_METRICS_OPS][APP_METRICS_CODES]; ///< [op][code]; op 0 is unknown.
    uint64_t refused[APP_REFUSED_STATUSES + 1];            ///< Upgrades refused, by status.
    uint64_t closes[APP_CLOSE_CODES + 1];                  ///< Sessions ended, by close code.
    uint64_t messages[APP_MSG_KINDS];                      ///< Messages queued to clients.
    uint64_t message_bytes[APP_MSG_KINDS];                 ///< Their payload bytes.
    uint32_t sessions[APP_SESSION_LABELS];                 ///< Open sessions by label.
} app_metrics;

/// Counts a command's outcome: op (an rdp_op, or 0 when unknown) and the
/// code it was answered with (RDP_OK for ok).
void app__metrics_command(app_metrics* m, uint32_t op, rdp_code code);

/// Counts an upgrade refused with HTTP `status` (401, 403, 429, 503, ...).
void app__metrics_refused(app_metrics* m, int status);

/// Counts a session that ended with close `code` (net.h's conventions:
/// 1006 when no close frame was exchanged).
void app__metrics_close(app_metrics* m, uint16_t code);

/// Counts a message of `bytes` queued to a client.
void app__metrics_sent(app_metrics* m, app_msg_kind kind, size_t bytes);

/// Adds a tick that took `ns` to a world's histogram.
void app__tick_observe(app_tick_histogram* h, uint64_t ns);

/// The exposition of every series, malloc()ed (*len bytes, NUL-terminated),
/// or NULL when out of memory.
char* app__metrics_render(const app_server* app, size_t* len);

/// Answers GET /metrics: fills *resp (503 with no body when out of memory).
void app__metrics_http(const app_server* app, net_http_response* resp);
