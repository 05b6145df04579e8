/*
 * record.c: ragdollctl's streaming subcommands:
 *
 *   watch WORLD          prints snapshots and events as JSON lines
 *   record WORLD FILE    writes a log of what it sends and receives
 *   replay FILE          sends a log's commands again, with their timing
 *
 * The log is JSON lines (clients/c/README.md): a header line
 *   {"ragdollctl_log":1,"url":...,"world":W,"format":...,"rate_hz":R,"started_unix_ms":...}
 * then one line per message, t in seconds since the recording started:
 *   {"t":0.0123,"send":{...command, with its id...}}        (,"auto":true: record's own)
 *   {"t":0.0150,"recv":{...reply, event or snapshot...}}
 * Binary snapshots are logged decoded, in the form watch prints.
 */
#include "ctl.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

typedef enum stream_kind { S_WATCH, S_RECORD, S_REPLAY } stream_kind;

/// A command of a record --commands file or of a log being replayed.
typedef struct timed_cmd {
    double at;        ///< Seconds after the start.
    cJSON* cmd;       ///< Without "id" (and "at").
    int64_t old_id;   ///< Replay: the id it had in the log (0: none).
    cJSON* old_reply; ///< Replay: its reply in the log, or NULL (owned).
    /// Replay: the index + 1 of the earlier command whose reply created an
    /// id this one uses (0: none). It is sent only once that reply is in,
    /// whatever the speed, so that it gets the id created now.
    size_t after;
    bool replied; ///< Replay: its reply (or failure) has come.
} timed_cmd;

typedef struct stream {
    stream_kind kind;
    ctl* x;
    uint64_t world;
    rdc_format format;
    uint32_t rate_hz;
    bool raw;
    bool has_focus;  ///< Watch: --focus given.
    double focus[3]; ///< Watch: the point of interest sent with set_focus, m.
    const char* path;
    FILE* out;
    uint64_t snapshots;
    uint64_t t0_ns; ///< When the recording or replay started.
    bool started;
    uv_timer_t stop_timer; ///< --seconds.
    uv_timer_t cmd_timer;  ///< The next command.
    bool timers_open;
    timed_cmd* cmds;
    size_t ncmds, next;
    size_t outstanding; ///< Commands sent without a reply yet.
    int exit_code;      ///< Replay: CTL_SERVER_ERROR once any command failed.
    double speed;       ///< Replay: time scale (2 = twice as fast).
    // Replay: ids the log's replies named, and what they are now.
    uint64_t map_old[256], map_new[256];
    uint32_t nmap;
    double last_entity, last_world; ///< Record: what "$entity" and "$world" stand for.
    ctl_buf line;
} stream;

static double now_s(const stream* s) {
    return (double)(uv_hrtime() - s->t0_ns) / 1e9;
}

static void stream_free(void* p) {
    stream* s = p;
    if (s == NULL) {
        return;
    }
    if (s->out != NULL && s->out != stdout) {
        // The last buffered lines are written here: a failure still counts.
        errno = 0;
        if (fclose(s->out) != 0 && s->x->exit_code != CTL_OUTPUT) {
            fprintf(stderr, "ragdollctl: writing %s failed: %s\n", s->path,
                    errno != 0 ? strerror(errno) : "an I/O error");
            s->x->exit_code = CTL_OUTPUT;
        }
    }
    for (size_t i = 0; i < s->ncmds; ++i) {
        cJSON_Delete(s->cmds[i].cmd);
        cJSON_Delete(s->cmds[i].old_reply);
    }
    free(s->cmds);
    ctl_buf_free(&s->line);
    free(s);
}

static void on_timer_closed(uv_handle_t* h) {
    (void)h;
}

static void stream_stop(ctl* x) {
    stream* s = x->stream;
    if (s->timers_open) {
        s->timers_open = false;
        uv_close((uv_handle_t*)&s->stop_timer, on_timer_closed);
        uv_close((uv_handle_t*)&s->cmd_timer, on_timer_closed);
    }
    if (s->out != NULL) {
        errno = 0;
        ctl_check_output(x, s->out, s->path);
    }
}

// Writes one log line: {"t":..., "<dir>": <json>[, "auto": true]}.
static void log_line(stream* s, const char* dir, const char* json, size_t len, bool automatic) {
    if (s->out == NULL) {
        return;
    }
    fprintf(s->out, "{\"t\":%.6f,\"%s\":%.*s%s}\n", now_s(s), dir, (int)len, json,
            automatic ? ",\"auto\":true" : "");
}

// ---------------------------------------------------------------------------
// Streams (watch, record)
// ---------------------------------------------------------------------------

// Ends the run once the reader of stdout is gone (watch | head): SIGPIPE is
// ignored (ragdollctl.c), so every later write fails with EPIPE and the
// stream would go on until Ctrl-C, writing to nobody. Any other write error
// (stdout or the log: a full disk, /dev/full) ends it with CTL_OUTPUT. The
// log is not flushed per line: its buffered writes set the error flag when
// they fail.
static void check_written(ctl* x, stream* s) {
    FILE* f = s->kind == S_WATCH ? stdout : s->out;
    if (f == stdout || ferror(f)) {
        ctl_check_output(x, f, s->path);
    }
}

static void on_snapshot(rdc_client* c, const rdc_snapshot* snap, void* user) {
    (void)c;
    ctl* x = user;
    stream* s = x->stream;
    if (x->finished || s == NULL || s->kind == S_REPLAY || snap->world != s->world) {
        return;
    }
    const char* text;
    size_t len;
    s->line.len = 0;
    if (s->format == RDC_FORMAT_JSON && (s->raw || s->kind == S_RECORD)) {
        // As received: the server's own JSON (topology and metrics included).
        char* printed = rdc_json_print(snap->json);
        if (printed != NULL) {
            ctl_buf_append(&s->line, printed, strlen(printed));
            cJSON_free(printed);
        }
    } else {
        ctl_snapshot_line(&s->line, snap);
    }
    text = s->line.data != NULL ? s->line.data : "{}";
    len = s->line.data != NULL ? s->line.len : 2;
    errno = 0;
    if (s->kind == S_WATCH) {
        printf("%.*s\n", (int)len, text);
    } else {
        log_line(s, "recv", text, len, false);
    }
    check_written(x, s);
    s->snapshots++;
    if (x->count > 0 && s->snapshots >= x->count) {
        ctl_finish(x, CTL_OK);
    }
}

static void on_event(rdc_client* c, const rdc_event* ev, void* user) {
    (void)c;
    ctl* x = user;
    stream* s = x->stream;
    if (x->finished || s == NULL || s->kind == S_REPLAY || strcmp(ev->name, "welcome") == 0) {
        return;
    }
    errno = 0;
    if (s->kind == S_WATCH) {
        printf("%.*s\n", (int)ev->len, ev->text);
    } else {
        log_line(s, "recv", ev->text, ev->len, false);
    }
    check_written(x, s);
    if (x->finished) {
        return;
    }
    if (strcmp(ev->name, "world_destroyed") == 0 && ev->world == s->world) {
        fprintf(stderr, "ragdollctl: world %llu was destroyed\n", (unsigned long long)s->world);
        ctl_finish(x, CTL_OK);
    }
}

void ctl_stream_config(ctl* x, rdc_config* cfg) {
    (void)x;
    cfg->on_snapshot = on_snapshot;
    cfg->on_event = on_event;
}

static void on_stop_timer(uv_timer_t* t) {
    ctl_finish(t->data, CTL_OK);
}

static void send_due(stream* s);

static void on_cmd_timer(uv_timer_t* t) {
    ctl* x = t->data;
    send_due(x->stream);
}

// Arms the command timer for the next command, if any.
static void schedule_next(stream* s) {
    if (s->next >= s->ncmds || s->x->finished) {
        return;
    }
    double due = s->cmds[s->next].at / s->speed;
    if (s->x->seconds > 0 && due >= s->x->seconds) {
        return; // after the end: the stop timer comes first
    }
    // Clamped (a year at most): a long wait just re-arms when it ends, as
    // send_due() finds nothing due yet.
    uv_timer_start(&s->cmd_timer, on_cmd_timer, ctl_seconds_to_ms(due - now_s(s)), 0);
}

static void on_record_reply(rdc_client* c, const rdc_reply* r, void* arg) {
    (void)c;
    stream* s = arg;
    if (r->text != NULL) {
        log_line(s, "recv", r->text, r->len, false);
    }
    // What "$entity" and "$world" stand for in the commands that follow.
    const cJSON* e = r->json != NULL ? cJSON_GetObjectItemCaseSensitive(r->json, "entity") : NULL;
    const cJSON* w = r->json != NULL ? cJSON_GetObjectItemCaseSensitive(r->json, "world") : NULL;
    if (r->status == 0 && cJSON_IsNumber(e)) {
        s->last_entity = e->valuedouble;
    }
    if (r->status == 0 && cJSON_IsNumber(w)) {
        s->last_world = w->valuedouble;
    }
    s->outstanding--;
    if (!s->x->finished &&
        (r->status == 0 || r->status == RDC_E_SERVER || r->status == RDC_E_PROTOCOL)) {
        send_due(s); // a command waiting for this reply's ids
    }
}

// Whether a --commands line uses "$entity" or "$world".
static bool has_placeholder(const cJSON* cmd) {
    static const char* const keys[] = {"world", "entity"};
    for (int k = 0; k < 2; ++k) {
        const char* v = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(cmd, keys[k]));
        if (v != NULL && (strcmp(v, "$world") == 0 || strcmp(v, "$entity") == 0)) {
            return true;
        }
    }
    return false;
}

// record: "$entity" and "$world" in a command are the ids the latest reply
// that named one returned (a spawn's entity, a create_world's world).
static void resolve(stream* s, cJSON* cmd) {
    static const char* const keys[] = {"world", "entity"};
    for (int k = 0; k < 2; ++k) {
        cJSON* v = cJSON_GetObjectItemCaseSensitive(cmd, keys[k]);
        double id = k == 0 ? s->last_world : s->last_entity;
        const char* want = k == 0 ? "$world" : "$entity";
        if (cJSON_IsString(v) && strcmp(v->valuestring, want) == 0 && id > 0) {
            cJSON_ReplaceItemInObjectCaseSensitive(cmd, keys[k], cJSON_CreateNumber(id));
        }
    }
}

static void on_replay_reply(rdc_client* c, const rdc_reply* r, void* arg);

// Replaces ids the log named with the ones this replay got (replay).
static void remap(stream* s, cJSON* cmd) {
    static const char* const keys[] = {"world", "entity"};
    for (int k = 0; k < 2; ++k) {
        cJSON* v = cJSON_GetObjectItemCaseSensitive(cmd, keys[k]);
        if (!cJSON_IsNumber(v)) {
            continue;
        }
        for (uint32_t i = 0; i < s->nmap; ++i) {
            if ((double)s->map_old[i] == v->valuedouble) {
                cJSON_SetNumberValue(v, (double)s->map_new[i]);
                break;
            }
        }
    }
}

static void send_due(stream* s) {
    ctl* x = s->x;
    while (s->next < s->ncmds && !x->finished && s->cmds[s->next].at / s->speed <= now_s(s)) {
        size_t after = s->cmds[s->next].after;
        if (after != 0 && !s->cmds[after - 1].replied) {
            return; // on_replay_reply() calls again once that reply is in
        }
        if (s->kind == S_RECORD && s->outstanding > 0 && has_placeholder(s->cmds[s->next].cmd)) {
            return; // "$entity" is the latest reply's: on_record_reply() calls again
        }
        timed_cmd* tc = &s->cmds[s->next++];
        int64_t id = 0;
        int rc;
        if (s->kind == S_REPLAY) {
            remap(s, tc->cmd);
            rc = rdc_send(x->c, tc->cmd, on_replay_reply, tc, &id);
            s->outstanding += rc == 0;
        } else {
            resolve(s, tc->cmd);
            rc = rdc_send(x->c, tc->cmd, on_record_reply, s, &id);
            s->outstanding += rc == 0;
        }
        if (rc != 0) {
            fprintf(stderr, "ragdollctl: cannot send line %zu: %s\n", s->next, rdc_strerror(rc));
            ctl_finish(x, rc == RDC_E_NOT_CONNECTED ? CTL_CONNECTION : CTL_USAGE);
            return;
        }
        if (s->kind == S_RECORD) {
            cJSON* logged = cJSON_Duplicate(tc->cmd, true);
            cJSON_AddNumberToObject(logged, "id", (double)id);
            char* text = rdc_json_print(logged);
            if (text != NULL) {
                log_line(s, "send", text, strlen(text), false);
            }
            cJSON_free(text);
            cJSON_Delete(logged);
        }
    }
    if (s->kind == S_REPLAY && s->next >= s->ncmds && s->outstanding == 0) {
        ctl_finish(x, s->exit_code);
        return;
    }
    schedule_next(s);
}

// The clock starts once the subscription is in place (watch, record) or at
// once (replay); then --seconds and the commands count from there.
static void stream_begin(stream* s) {
    ctl* x = s->x;
    s->started = true;
    s->t0_ns = uv_hrtime();
    if (x->seconds > 0) {
        uv_timer_start(&s->stop_timer, on_stop_timer, ctl_seconds_to_ms(x->seconds), 0);
    }
    if (s->ncmds > 0) {
        schedule_next(s);
    } else if (s->kind == S_REPLAY) {
        fprintf(stderr,
                "ragdollctl: %s has no commands to replay (a log holds commands when it was "
                "recorded with --commands FILE)\n",
                s->path);
        ctl_finish(x, CTL_OK);
    }
}

// set_focus's reply: an error ends the watch as any command's does.
static void on_focus(rdc_client* c, const rdc_reply* r, void* arg) {
    ctl* x = arg;
    if (r->status != 0 && !x->finished) {
        ctl_on_reply(c, r, x);
    }
}

static void on_subscribed(rdc_client* c, const rdc_reply* r, void* arg) {
    (void)c;
    ctl* x = arg;
    stream* s = x->stream;
    if (x->finished || s->started) {
        return; // a re-subscription (ragdollctl does not reconnect) or the end
    }
    if (r->status != 0) {
        ctl_on_reply(c, r, x); // prints the error and exits 1 (or 3)
        return;
    }
    if (s->kind == S_RECORD) {
        s->t0_ns = uv_hrtime();
        char sent[160];
        int n = snprintf(sent, sizeof sent,
                         "{\"op\":\"subscribe\",\"world\":%llu,\"format\":\"%s\",\"rate_hz\":%u}",
                         (unsigned long long)s->world,
                         s->format == RDC_FORMAT_BINARY ? "binary" : "json", (unsigned)s->rate_hz);
        log_line(s, "send", sent, (size_t)n, true);
        log_line(s, "recv", r->text, r->len, false);
    } else {
        const cJSON* rate = cJSON_GetObjectItemCaseSensitive(r->json, "rate_hz");
        const cJSON* hz = cJSON_GetObjectItemCaseSensitive(r->json, "tick_hz");
        fprintf(stderr, "ragdollctl: watching world %llu at %g Hz (the world ticks at %g Hz)\n",
                (unsigned long long)s->world, cJSON_IsNumber(rate) ? rate->valuedouble : 0,
                cJSON_IsNumber(hz) ? hz->valuedouble : 0);
        if (s->has_focus) {
            int rc = rdc_sendf(c, on_focus, x,
                               "{\"op\":\"set_focus\",\"world\":%llu,\"point\":[%.9g,%.9g,%.9g]}",
                               (unsigned long long)s->world, s->focus[0], s->focus[1], s->focus[2]);
            if (rc != 0) {
                fprintf(stderr, "ragdollctl: cannot send set_focus: %s\n", rdc_strerror(rc));
                ctl_finish(x, CTL_CONNECTION);
                return;
            }
        }
    }
    stream_begin(s);
}

static void stream_start(ctl* x) {
    stream* s = x->stream;
    uv_timer_init(x->loop, &s->stop_timer);
    uv_timer_init(x->loop, &s->cmd_timer);
    s->stop_timer.data = s->cmd_timer.data = x;
    s->timers_open = true;
    x->stop = stream_stop;
    if (s->kind == S_REPLAY) {
        stream_begin(s);
        return;
    }
    int rc = rdc_subscribe(x->c, s->world, s->format, s->rate_hz, on_subscribed, x);
    if (rc != 0) {
        fprintf(stderr, "ragdollctl: cannot subscribe: %s\n", rdc_strerror(rc));
        ctl_finish(x, rc == RDC_E_CONFIG ? CTL_USAGE : CTL_CONNECTION);
    }
}

// ---------------------------------------------------------------------------
// Replay
// ---------------------------------------------------------------------------

// Whether v is a number that can be an id, [1, 2^53 - 1]: only such a
// number converts to uint64_t safely (the log and the server are input).
static bool is_id(const cJSON* v) {
    return cJSON_IsNumber(v) && v->valuedouble >= 1 && v->valuedouble <= 9007199254740991.0;
}

static void on_replay_reply(rdc_client* c, const rdc_reply* r, void* arg) {
    (void)c;
    timed_cmd* tc = arg;
    ctl* x = rdc_user(c);
    stream* s = x->stream;
    s->outstanding--;
    tc->replied = true;
    const char* op = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(tc->cmd, "op"));
    if (r->status != 0 && r->status != RDC_E_SERVER && r->status != RDC_E_PROTOCOL) {
        if (!x->finished && r->status != RDC_E_DISCONNECTED) { // on_state reports a loss
            fprintf(stderr, "ragdollctl: no reply to %s: %s\n", op, rdc_strerror(r->status));
            ctl_finish(x, CTL_CONNECTION);
        }
        return;
    }
    if (x->json) {
        printf("%.*s\n", (int)r->len, r->text);
    } else if (r->status == 0) {
        printf("%8.3f s  %-16s ok\n", now_s(s), op);
    } else {
        printf("%8.3f s  %-16s error %s: %s\n", now_s(s), op, r->code, r->message);
    }
    if (r->status != 0) {
        s->exit_code = CTL_SERVER_ERROR;
    } else if (tc->old_reply != NULL) {
        // What the log's command created has a new id now: use it in the
        // commands that follow.
        static const char* const keys[] = {"world", "entity"};
        for (int k = 0; k < 2; ++k) {
            const cJSON* was = cJSON_GetObjectItemCaseSensitive(tc->old_reply, keys[k]);
            const cJSON* is = cJSON_GetObjectItemCaseSensitive(r->json, keys[k]);
            bool creates = k == 0 ? strcmp(op, "create_world") == 0 : strncmp(op, "spawn_", 6) == 0;
            if (creates && is_id(was) && is_id(is) && was->valuedouble != is->valuedouble &&
                s->nmap < 256) {
                s->map_old[s->nmap] = (uint64_t)was->valuedouble;
                s->map_new[s->nmap] = (uint64_t)is->valuedouble;
                s->nmap++;
            }
        }
    }
    if (!x->finished) {
        send_due(s); // what waited for this reply, and the end of the replay
    }
}

// Whether a command of the log creates the id `key` names in its reply
// (create_world: "world"; spawn_*: "entity").
static bool creates(const timed_cmd* tc, int key) {
    const char* op = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(tc->cmd, "op"));
    return op != NULL && tc->old_reply != NULL &&
           (key == 0 ? strcmp(op, "create_world") == 0 : strncmp(op, "spawn_", 6) == 0);
}

// Links each command of a log to the latest earlier command whose reply
// created a world or entity id it uses (timed_cmd.after).
static void link_replies(stream* s) {
    static const char* const keys[] = {"world", "entity"};
    for (size_t i = 0; i < s->ncmds; ++i) {
        for (int k = 0; k < 2; ++k) {
            const cJSON* v = cJSON_GetObjectItemCaseSensitive(s->cmds[i].cmd, keys[k]);
            for (size_t j = i; is_id(v) && j-- > 0;) {
                const cJSON* made = cJSON_GetObjectItemCaseSensitive(s->cmds[j].old_reply, keys[k]);
                if (creates(&s->cmds[j], k) && is_id(made) && made->valuedouble == v->valuedouble) {
                    s->cmds[i].after = j + 1 > s->cmds[i].after ? j + 1 : s->cmds[i].after;
                    break;
                }
            }
        }
    }
}

// The text of a --commands file or a log: lines are taken by length, so
// that a NUL byte in one makes that line malformed instead of ending the
// input.
typedef struct text_lines {
    char* data; ///< The whole file, NUL-terminated (owned).
    char* cursor;
    char* end;
    bool has_nul; ///< The line next_line() returned last contains a NUL byte.
} text_lines;

// Reads a whole file (or stdin for "-"). False when it cannot be read.
static bool read_all(const char* path, text_lines* t) {
    memset(t, 0, sizeof *t);
    FILE* f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
    if (f == NULL) {
        return false;
    }
    ctl_buf b = {0};
    char chunk[65536];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
        ctl_buf_append(&b, chunk, n);
    }
    bool bad = ferror(f) != 0;
    if (f != stdin) {
        fclose(f);
    }
    if (bad) {
        ctl_buf_free(&b);
        return false;
    }
    if (b.data == NULL) {
        ctl_buf_append(&b, "", 0);
    }
    t->data = t->cursor = b.data;
    t->end = b.data + b.len;
    return true;
}

// The next line (its newline replaced by NUL), or NULL at the end.
static char* next_line(text_lines* t) {
    char* p = t->cursor;
    if (p >= t->end) {
        return NULL;
    }
    char* nl = memchr(p, '\n', (size_t)(t->end - p));
    char* stop = nl != NULL ? nl : t->end;
    t->has_nul = memchr(p, '\0', (size_t)(stop - p)) != NULL;
    *stop = '\0'; // the buffer has a NUL after its end
    t->cursor = nl != NULL ? nl + 1 : t->end;
    return p;
}

static bool add_cmd(stream* s, double at, cJSON* cmd) {
    timed_cmd* grown = realloc(s->cmds, (s->ncmds + 1) * sizeof *grown);
    if (grown == NULL) {
        return false;
    }
    s->cmds = grown;
    memset(&s->cmds[s->ncmds], 0, sizeof s->cmds[0]);
    s->cmds[s->ncmds].at = at;
    s->cmds[s->ncmds].cmd = cmd;
    s->ncmds++;
    return true;
}

static bool blank(const char* line) {
    while (*line == ' ' || *line == '\t' || *line == '\r') {
        line++;
    }
    return *line == '\0' || *line == '#';
}

// record --commands FILE: one command per line, "at" (s) when to send it.
static int load_commands(ctl* x, stream* s, const char* path) {
    text_lines text;
    if (!read_all(path, &text)) {
        return ctl_usage(x->cmd, "cannot read %s", path);
    }
    char* line;
    size_t lineno = 0;
    double at = 0;
    int rc = 0;
    while (rc == 0 && (line = next_line(&text)) != NULL) {
        lineno++;
        if (!text.has_nul && blank(line)) {
            continue;
        }
        cJSON* o = text.has_nul ? NULL : cJSON_Parse(line);
        const cJSON* t = cJSON_GetObjectItemCaseSensitive(o, "at");
        if (!cJSON_IsObject(o) || !cJSON_IsString(cJSON_GetObjectItemCaseSensitive(o, "op")) ||
            (t != NULL &&
             (!cJSON_IsNumber(t) || t->valuedouble < at || t->valuedouble > CTL_MAX_SECONDS))) {
            cJSON_Delete(o);
            rc = ctl_usage(x->cmd,
                           "%s:%zu: not a command (a JSON object with \"op\", and \"at\" seconds "
                           "not before the line above's, at most a year)",
                           path, lineno);
            break;
        }
        if (t != NULL) {
            at = t->valuedouble;
        }
        cJSON_DeleteItemFromObjectCaseSensitive(o, "at");
        cJSON_DeleteItemFromObjectCaseSensitive(o, "id");
        char why[160];
        if (ctl_check_command(o, why, sizeof why) != 0) {
            cJSON_Delete(o);
            rc = ctl_usage(x->cmd, "%s:%zu: %s", path, lineno, why);
            break;
        }
        if (!add_cmd(s, at, o)) {
            cJSON_Delete(o);
            rc = CTL_USAGE;
        }
    }
    free(text.data);
    return rc;
}

// replay: the log's commands (not record's own), with the replies they got.
static int load_log(ctl* x, stream* s, const char* path) {
    text_lines text;
    if (!read_all(path, &text)) {
        return ctl_usage(x->cmd, "cannot read %s", path);
    }
    char* line = next_line(&text);
    cJSON* hdr = line != NULL && !text.has_nul ? cJSON_Parse(line) : NULL;
    int rc = 0;
    if (!cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(hdr, "ragdollctl_log"))) {
        rc = ctl_usage(x->cmd, "%s is not a ragdollctl record log", path);
    } else if (s->world != 0) {
        const cJSON* w = cJSON_GetObjectItemCaseSensitive(hdr, "world");
        if (is_id(w)) {
            s->map_old[0] = (uint64_t)w->valuedouble;
            s->map_new[0] = s->world;
            s->nmap = 1;
        }
    }
    cJSON_Delete(hdr);
    size_t lineno = 1;
    while (rc == 0 && (line = next_line(&text)) != NULL) {
        lineno++;
        if (!text.has_nul && blank(line)) {
            continue;
        }
        cJSON* o = text.has_nul ? NULL : cJSON_Parse(line);
        const cJSON* t = cJSON_GetObjectItemCaseSensitive(o, "t");
        cJSON* send = cJSON_GetObjectItemCaseSensitive(o, "send");
        const cJSON* recv = cJSON_GetObjectItemCaseSensitive(o, "recv");
        if (!cJSON_IsNumber(t) || !(t->valuedouble >= 0 && t->valuedouble <= CTL_MAX_SECONDS) ||
            (send == NULL && recv == NULL)) {
            cJSON_Delete(o);
            rc = ctl_usage(x->cmd, "%s:%zu: not a log line", path, lineno);
            break;
        }
        if (recv != NULL) {
            // A reply to a command of the log: keep it, to map the ids it names.
            const cJSON* re = cJSON_GetObjectItemCaseSensitive(recv, "re");
            for (size_t i = 0; is_id(re) && i < s->ncmds; ++i) {
                if (s->cmds[i].old_id == (int64_t)re->valuedouble && s->cmds[i].old_reply == NULL) {
                    s->cmds[i].old_reply = cJSON_Duplicate(recv, true);
                }
            }
        } else if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "auto"))) {
            const cJSON* id = cJSON_GetObjectItemCaseSensitive(send, "id");
            int64_t old_id = is_id(id) ? (int64_t)id->valuedouble : 0;
            cJSON* cmd = cJSON_DetachItemViaPointer(o, send);
            cJSON_DeleteItemFromObjectCaseSensitive(cmd, "id");
            char why[160] = "\"send\" is not a command";
            if (!cJSON_IsObject(cmd) || ctl_check_command(cmd, why, sizeof why) != 0) {
                cJSON_Delete(cmd);
                cJSON_Delete(o);
                rc = ctl_usage(x->cmd, "%s:%zu: %s", path, lineno, why);
                break;
            }
            if (!add_cmd(s, t->valuedouble, cmd)) {
                cJSON_Delete(cmd);
                rc = CTL_USAGE;
            } else {
                s->cmds[s->ncmds - 1].old_id = old_id;
            }
        }
        cJSON_Delete(o);
    }
    free(text.data);
    link_replies(s);
    return rc;
}

// ---------------------------------------------------------------------------
// Parsing
// ---------------------------------------------------------------------------

static int parse_stream(ctl* x, int argc, char** argv, stream_kind kind) {
    const ctl_cmd* cmd = x->cmd;
    stream* s = calloc(1, sizeof *s);
    if (s == NULL) {
        return CTL_USAGE;
    }
    x->sub = s;
    x->stream = s; // what the stream callbacks read: not x->sub, another command's state
    x->sub_free = stream_free;
    s->kind = kind;
    s->x = x;
    s->format = RDC_FORMAT_JSON;
    s->rate_hz = kind == S_RECORD ? 30 : 10;
    s->speed = 1;
    const char* commands = NULL;
    static const struct option opts[] = {
        {"format", required_argument, NULL, 'f'},
        {"rate", required_argument, NULL, 'r'},
        {"count", required_argument, NULL, 'n'},
        {"seconds", required_argument, NULL, 's'},
        {"raw", no_argument, NULL, 'R'},
        {"commands", required_argument, NULL, 'c'},
        {"world", required_argument, NULL, 'w'},
        {"speed", required_argument, NULL, 'S'},
        {"focus", required_argument, NULL, 'F'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int o;
    uint64_t u;
    while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        bool ok = true;
        // Each option belongs to some of the three; others are usage errors.
        bool streams = kind != S_REPLAY;
        switch (o) {
        case 'f':
            ok = streams && (strcmp(optarg, "json") == 0 || strcmp(optarg, "binary") == 0);
            s->format = strcmp(optarg, "binary") == 0 ? RDC_FORMAT_BINARY : RDC_FORMAT_JSON;
            break;
        case 'r':
            ok = streams && ctl_parse_uint(optarg, 1, 240, &u);
            s->rate_hz = (uint32_t)u;
            break;
        case 'n':
            ok = streams && ctl_parse_uint(optarg, 1, UINT64_MAX, &x->count);
            break;
        case 's':
            ok = streams && ctl_parse_double(optarg, &x->seconds) && x->seconds > 0 &&
                 x->seconds <= CTL_MAX_SECONDS;
            break;
        case 'R':
            ok = kind == S_WATCH;
            s->raw = true;
            break;
        case 'F':
            ok = kind == S_WATCH && ctl_parse_vec3(optarg, s->focus);
            s->has_focus = true;
            break;
        case 'c':
            ok = kind == S_RECORD;
            commands = optarg;
            break;
        case 'w':
            ok = kind == S_REPLAY && ctl_parse_id(optarg, &s->world) && s->world > 0;
            break;
        case 'S':
            ok = kind == S_REPLAY && ctl_parse_double(optarg, &s->speed) && s->speed >= 1e-3 &&
                 s->speed <= 1e6;
            break;
        case 'h':
            ctl_help(cmd);
            x->finished = true;
            return CTL_OK;
        default:
            return ctl_usage(cmd, "unknown option");
        }
        if (!ok && optarg != NULL && optind >= 2 && optarg == argv[optind - 1]) {
            return ctl_usage(cmd, "%s %s: a bad value, or an option this command does not take",
                             argv[optind - 2], optarg);
        }
        if (!ok) {
            return ctl_usage(cmd, "%s: a bad value, or an option this command does not take",
                             argv[optind - 1]);
        }
    }
    int want = kind == S_RECORD ? 2 : 1;
    if (argc - optind != want) {
        return ctl_usage(cmd, "wants %d argument%s", want, want > 1 ? "s" : "");
    }
    if (kind == S_REPLAY) {
        s->path = argv[optind];
        return load_log(x, s, s->path);
    }
    if (!ctl_parse_id(argv[optind], &s->world) || s->world == 0) {
        return ctl_usage(cmd, "WORLD wants an id, not \"%s\"", argv[optind]);
    }
    if (s->raw && s->format != RDC_FORMAT_JSON) {
        return ctl_usage(cmd, "--raw needs --format json");
    }
    if (kind == S_RECORD) {
        s->path = argv[optind + 1];
        if (commands != NULL) {
            int rc = load_commands(x, s, commands);
            if (rc != 0) {
                return rc;
            }
        }
        s->out = strcmp(s->path, "-") == 0 ? stdout : fopen(s->path, "w");
        if (s->out == NULL) {
            return ctl_usage(cmd, "cannot write %s", s->path);
        }
        struct timeval tv;
        gettimeofday(&tv, NULL);
        fprintf(s->out,
                "{\"ragdollctl_log\":1,\"url\":\"%s\",\"world\":%llu,\"format\":\"%s\","
                "\"rate_hz\":%u,\"started_unix_ms\":%lld}\n",
                x->url, (unsigned long long)s->world,
                s->format == RDC_FORMAT_BINARY ? "binary" : "json", (unsigned)s->rate_hz,
                (long long)tv.tv_sec * 1000 + tv.tv_usec / 1000);
    }
    return 0;
}

static int parse_watch(ctl* x, int argc, char** argv) {
    return parse_stream(x, argc, argv, S_WATCH);
}

static int parse_record(ctl* x, int argc, char** argv) {
    return parse_stream(x, argc, argv, S_RECORD);
}

static int parse_replay(ctl* x, int argc, char** argv) {
    return parse_stream(x, argc, argv, S_REPLAY);
}

const ctl_cmd ctl_cmd_watch = {
    .name = "watch",
    .synopsis = "WORLD [--format json|binary] [--rate HZ] [--count N] [--seconds S] [--raw]\n"
                "                  [--focus X,Y,Z]",
    .help =
        "Subscribes to a world and prints each snapshot as a JSON line, and events as\n"
        "they come, until Ctrl-C, --count N snapshots or --seconds S.\n\n"
        "  --format F    json (default) or binary: how the server sends them\n"
        "  --rate HZ     snapshots per second, 1-240 (10; at most the world's tick rate)\n"
        "  --raw         print JSON snapshots as the server sent them (with topology\n"
        "                and metrics) instead of decoded\n"
        "  --focus X,Y,Z this viewer's point of interest (set_focus): cloth and soft\n"
        "                bodies far from every viewer's focus take fewer iterations,\n"
        "                and beyond the freeze distance stop (PROTOCOL.md, level of\n"
        "                detail); it lasts as long as the watch\n\n"
        "A decoded line: {\"ev\":\"snapshot\",\"world\":W,\"tick\":T,\"format\":F,\"entities\":[\n"
        "  {\"entity\":E,\"kind\":\"rope\",\"particles\":[[x,y,z],...]},\n"
        "  "
        "{\"entity\":E,\"kind\":\"character\",\"state\":S,\"bodies\":[[x,y,z,qx,qy,qz,qw],...]}]}"
        "\n",
    .parse = parse_watch,
    .start = stream_start,
    .stops_on_signal = true,
};

const ctl_cmd ctl_cmd_record = {
    .name = "record",
    .synopsis = "WORLD FILE [--commands FILE] [--format F] [--rate HZ] [--count N] [--seconds S]",
    .help = "Subscribes to a world and writes a log (JSON lines) of everything sent and\n"
            "received, until Ctrl-C, --count N snapshots or --seconds S. FILE - is stdout.\n"
            "`ragdollctl replay` sends the commands of --commands again; a log without\n"
            "them (record's own subscribe does not count) has nothing to replay.\n\n"
            "  --commands FILE  commands to send while recording: one JSON object per line,\n"
            "                   with \"at\": seconds after the start (default: the line\n"
            "                   above's; at most a year; a command due after --seconds is\n"
            "                   not sent); - reads them from stdin. \"$entity\" and\n"
            "                   \"$world\" stand for the ids the latest reply that named\n"
            "                   one returned (a spawn's entity, a create_world's world)\n"
            "  --format F       json (default) or binary\n"
            "  --rate HZ        snapshots per second (30)\n",
    .parse = parse_record,
    .start = stream_start,
    .stops_on_signal = true,
};

const ctl_cmd ctl_cmd_replay = {
    .name = "replay",
    .synopsis = "FILE [--world W] [--speed X]",
    .help = "Sends the commands of a record log again, at the times they were sent, and\n"
            "prints their replies. Ids that commands of the log created (spawned entities,\n"
            "created worlds) are replaced by the ones the replay creates (a command that\n"
            "uses one waits for the reply that creates it). Exits 1 if any\n"
            "command failed.\n\n"
            "  --world W   send to world W instead of the recorded one\n"
            "  --speed X   play X times as fast (1; 0.001 to 1000000)\n",
    .parse = parse_replay,
    .start = stream_start,
};
