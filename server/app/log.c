/*
 * log.c: the server's log lines (log.h): formatting (logfmt or JSON, one
 * line per event), level filtering and per-kind rate limiting with a
 * summary of what was suppressed.
 *
 * It owns no file: the stream is the caller's (stderr in ragdolld). It
 * knows nothing of sessions or worlds; report.c decides what to log.
 */
#include "log.h"

#include <string.h>
#include <time.h>

#define NS_PER_S 1000000000ull

static const char* const kind_names[APP_LOGK_COUNT] = {
    [APP_LOGK_ALWAYS] = "always",
    [APP_LOGK_REFUSED] = "upgrade_refused",
    [APP_LOGK_RATE_LIMITED] = "rate_limited",
    [APP_LOGK_FORBIDDEN] = "forbidden",
    [APP_LOGK_PROTOCOL] = "command_rejected",
    [APP_LOGK_ERROR] = "error",
};

void app__log_init(app_log* log, FILE* out, app_log_level level, app_log_format format) {
    memset(log, 0, sizeof *log);
    log->out = out;
    log->level = level;
    log->format = format;
}

const char* app__log_level_name(app_log_level level) {
    switch (level) {
    case APP_LOG_ERROR:
        return "error";
    case APP_LOG_WARN:
        return "warn";
    case APP_LOG_INFO:
        return "info";
    case APP_LOG_DEBUG:
        return "debug";
    }
    return "info";
}

// ---------------------------------------------------------------------------
// Building a line
// ---------------------------------------------------------------------------

// Room kept at the end of every line for " truncated=true}\n".
#define TAIL 24

// A field is formatted here first and goes into the line only if it fits
// whole, so a long line loses fields, never half a value (a JSON line
// stays valid JSON).
typedef struct field {
    char buf[512];
    size_t len;
    bool over;
} field;

static void put(field* f, const char* s, size_t n) {
    if (f->len + n > sizeof f->buf) {
        f->over = true;
        return;
    }
    memcpy(f->buf + f->len, s, n);
    f->len += n;
}

static void puts_(field* f, const char* s) {
    put(f, s, strlen(s));
}

static bool needs_quotes(const char* v) {
    if (v[0] == '\0') {
        return true;
    }
    for (const unsigned char* p = (const unsigned char*)v; *p != '\0'; ++p) {
        if (*p <= ' ' || *p == '=' || *p == '"' || *p == '\\' || *p >= 0x7f) {
            return true;
        }
    }
    return false;
}

// A value, escaped for the line's format. Bytes outside printable ASCII
// are written as escapes in both formats, so a line is always one line of
// valid text (and of valid JSON).
// The length of the well-formed UTF-8 sequence at p (RFC 3629 §4: no
// overlong forms, no surrogates, at most U+10FFFF), or 0.
static size_t utf8_length(const unsigned char* p) {
    const unsigned char c = p[0];
    size_t n = c >= 0xc2 && c <= 0xdf   ? 2
               : c >= 0xe0 && c <= 0xef ? 3
               : c >= 0xf0 && c <= 0xf4 ? 4
                                        : 0;
    for (size_t i = 1; i < n; ++i) {
        if ((p[i] & 0xc0) != 0x80) {
            return 0; // (a NUL ends it here too)
        }
    }
    if ((c == 0xe0 && p[1] < 0xa0) || (c == 0xed && p[1] > 0x9f) || (c == 0xf0 && p[1] < 0x90) ||
        (c == 0xf4 && p[1] > 0x8f)) {
        return 0;
    }
    return n;
}

static void put_value(field* f, bool json, const char* v) {
    bool quote = json || needs_quotes(v);
    if (quote) {
        put(f, "\"", 1);
    }
    for (const unsigned char* p = (const unsigned char*)v; *p != '\0'; ++p) {
        char esc[8];
        if (*p == '"' || *p == '\\') {
            esc[0] = '\\';
            esc[1] = (char)*p;
            put(f, esc, 2);
        } else if (*p == '\n') {
            put(f, "\\n", 2);
        } else if (*p == '\t') {
            put(f, "\\t", 2);
        } else if (json && *p >= 0x80) {
            // JSON is UTF-8: a whole sequence goes as it is (× stays ×),
            // a byte that begins none is U+FFFD.
            size_t n = utf8_length(p);
            if (n > 0) {
                put(f, (const char*)p, n);
                p += n - 1;
            } else {
                puts_(f, "\\ufffd");
            }
        } else if (*p < ' ' || *p >= 0x7f) {
            snprintf(esc, sizeof esc, json ? "\\u%04x" : "\\x%02x", *p);
            puts_(f, esc);
        } else {
            put(f, (const char*)p, 1);
        }
    }
    if (quote) {
        put(f, "\"", 1);
    }
}

// Starts a field: `"key":` in JSON, ` key=` in text.
static void put_key(field* f, bool json, const char* key) {
    f->len = 0;
    f->over = false;
    put(f, json ? ",\"" : " ", json ? 2 : 1);
    puts_(f, key);
    put(f, json ? "\":" : "=", json ? 2 : 1);
}

// Moves a finished field into the line, or drops it if it does not fit.
static void add(app_log_line* l, const field* f) {
    if (f->over || l->len + f->len > sizeof l->buf - TAIL) {
        l->cut = true;
        return;
    }
    memcpy(l->buf + l->len, f->buf, f->len);
    l->len += f->len;
}

void app__log_str(app_log_line* l, const char* key, const char* value) {
    bool json = l->log->format == APP_LOG_JSON;
    field f;
    put_key(&f, json, key);
    put_value(&f, json, value != NULL ? value : "");
    add(l, &f);
}

static void add_number(app_log_line* l, const char* key, const char* num) {
    field f;
    put_key(&f, l->log->format == APP_LOG_JSON, key);
    puts_(&f, num);
    add(l, &f);
}

void app__log_u64(app_log_line* l, const char* key, uint64_t value) {
    char num[24];
    snprintf(num, sizeof num, "%llu", (unsigned long long)value);
    add_number(l, key, num);
}

void app__log_f64(app_log_line* l, const char* key, double value) {
    char num[40];
    snprintf(num, sizeof num, "%.3f", value);
    add_number(l, key, num);
}

// The wall-clock time in UTC with milliseconds, RFC 3339.
static void timestamp(char* out, size_t cap) {
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    size_t n = strftime(out, cap, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(out + n, cap - n, ".%03dZ", (int)(ts.tv_nsec / 1000000));
}

static void start(app_log* log, app_log_line* l, app_log_level level, const char* event) {
    char ts[40];
    timestamp(ts, sizeof ts);
    l->log = log;
    l->cut = false;
    bool json = log->format == APP_LOG_JSON;
    field f;
    f.len = 0;
    f.over = false;
    puts_(&f, json ? "{\"ts\":" : "ts=");
    put_value(&f, json, ts);
    l->len = 0;
    add(l, &f);
    app__log_str(l, "level", app__log_level_name(level));
    app__log_str(l, "event", event);
}

void app__log_end(app_log_line* l) {
    bool json = l->log->format == APP_LOG_JSON;
    if (l->cut) {
        const char* tail = json ? ",\"truncated\":true" : " truncated=true";
        memcpy(l->buf + l->len, tail, strlen(tail));
        l->len += strlen(tail);
    }
    if (json) {
        l->buf[l->len++] = '}';
    }
    l->buf[l->len++] = '\n';
    fwrite(l->buf, 1, l->len, l->log->out);
    fflush(l->log->out);
}

// ---------------------------------------------------------------------------
// Rate limits
// ---------------------------------------------------------------------------

// Closes the kind's window if its second is over, writing how many lines it
// suppressed.
static void roll(app_log* log, app_log_kind kind, uint64_t now_ns) {
    if (now_ns - log->limit[kind].window_ns < NS_PER_S) {
        return;
    }
    uint64_t suppressed = log->limit[kind].suppressed;
    log->limit[kind].window_ns = now_ns;
    log->limit[kind].lines = 0;
    log->limit[kind].suppressed = 0;
    app_log_line l;
    if (suppressed > 0 && log->level >= APP_LOG_WARN) {
        start(log, &l, APP_LOG_WARN, "log_suppressed");
        app__log_str(&l, "kind", kind_names[kind]);
        app__log_u64(&l, "lines", suppressed);
        app__log_end(&l);
    }
}

bool app__log_begin(app_log* log, app_log_line* l, app_log_level level, app_log_kind kind,
                    const char* event, uint64_t now_ns) {
    if (level > log->level || log->out == NULL) {
        return false;
    }
    if (kind != APP_LOGK_ALWAYS) {
        roll(log, kind, now_ns);
        if (log->limit[kind].lines >= APP_LOG_BURST) {
            log->limit[kind].suppressed++;
            return false;
        }
        log->limit[kind].lines++;
    }
    start(log, l, level, event);
    return true;
}

void app__log_flush(app_log* log, uint64_t now_ns) {
    for (int k = APP_LOGK_ALWAYS + 1; k < APP_LOGK_COUNT; ++k) {
        if (log->limit[k].suppressed > 0) {
            roll(log, (app_log_kind)k, now_ns);
        }
    }
}
