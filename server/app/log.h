/*
 * log.h: the server's log (log.c): one line per event, logfmt or JSON,
 * filtered by level, with some kinds of line rate-limited.
 *
 * A line is built field by field into a buffer of the caller's stack and
 * written with one fwrite, so lines never interleave:
 *
 *   app_log_line l;
 *   if (app__log_begin(log, &l, APP_LOG_INFO, APP_LOGK_ALWAYS, "session_closed", now_ns)) {
 *       app__log_str(&l, "peer", peer);
 *       app__log_u64(&l, "bytes_in", n);
 *       app__log_end(&l);
 *   }
 *
 * Text:  ts=2025-01-31T12:00:00.123Z level=info event=session_closed peer=127.0.0.1:5000
 * bytes_in=42 JSON:  {"ts":"2025-01-31T12:00:00.123Z","level":"info","event":"session_closed",...}
 *
 * Keys are static identifiers chosen by the server; values are escaped
 * (quoted in logfmt when they hold a space, '=', '"' or a control byte;
 * JSON-escaped). Callers never pass a command's payload: a command is
 * logged by its op, a world by its id.
 *
 * Writes are blocking stdio on the loop thread (stderr is unbuffered):
 * a log that is not read (a full pipe) stalls the server, as it would any
 * program that logs.
 */
#pragma once

#include "app.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/// Lines of one kind beyond this many per second are suppressed, and a
/// "log_suppressed" line says how many once the second is over.
#define APP_LOG_BURST 10

/// What a line is about, for rate limiting. Lines a client can cause at
/// will are limited; the rest are written whenever their level allows.
typedef enum app_log_kind {
    APP_LOGK_ALWAYS = 0,   ///< Never suppressed (sessions, worlds).
    APP_LOGK_REFUSED,      ///< Upgrades refused.
    APP_LOGK_RATE_LIMITED, ///< Commands refused with rate_limited.
    APP_LOGK_FORBIDDEN,    ///< Commands refused with forbidden (the session's role).
    APP_LOGK_PROTOCOL,     ///< Commands that fail to decode.
    APP_LOGK_ERROR,        ///< Server errors (out of memory), which come in storms.
    APP_LOGK_COUNT
} app_log_kind;

/// A log. Embedded in app_server; no allocation.
typedef struct app_log {
    FILE* out;
    app_log_level level;
    app_log_format format;
    struct {
        uint64_t window_ns; ///< Start of the current one-second window (uv_hrtime()).
        uint32_t lines;     ///< Lines written in it.
        uint64_t suppressed;
    } limit[APP_LOGK_COUNT];
} app_log;

/// A line being built. Lives on the caller's stack between begin and end.
typedef struct app_log_line {
    app_log* log;
    size_t len;
    bool cut; ///< A field did not fit: it was left out, and the line says truncated=true.
    char buf[1024];
} app_log_line;

/// Sets up a log writing to `out` (not owned) at `level` in `format`.
void app__log_init(app_log* log, FILE* out, app_log_level level, app_log_format format);

/// The name of a level ("error", "warn", "info", "debug").
const char* app__log_level_name(app_log_level level);

/// Starts a line of `level` about `event` (a static identifier) at now_ns
/// (uv_hrtime(), for rate limiting). Returns false, and the caller builds
/// nothing, when the level is filtered out or the kind is over its rate.
bool app__log_begin(app_log* log, app_log_line* l, app_log_level level, app_log_kind kind,
                    const char* event, uint64_t now_ns);

/// Adds a text field (NULL is written as an empty string).
void app__log_str(app_log_line* l, const char* key, const char* value);

/// Adds an unsigned integer field.
void app__log_u64(app_log_line* l, const char* key, uint64_t value);

/// Adds a number with three decimals (durations in seconds).
void app__log_f64(app_log_line* l, const char* key, double value);

/// Ends the line and writes it.
void app__log_end(app_log_line* l);

/// Writes the "log_suppressed" summary of every kind whose second is over
/// (called from the server's ticker, so a burst that stops still gets its
/// summary).
void app__log_flush(app_log* log, uint64_t now_ns);
