/*
 * agones.c: the Agones SDK sidecar's REST API over libcurl's multi
 * interface, driven by the libuv loop (what and when: agones.h).
 *
 * libcurl tells us which sockets to watch (CURLMOPT_SOCKETFUNCTION: a
 * uv_poll_t each) and when to call it back (CURLMOPT_TIMERFUNCTION: one
 * uv_timer_t); we hand it socket events and timeouts with
 * curl_multi_socket_action() and collect finished transfers with
 * curl_multi_info_read() (curl's docs/examples/multi-uv.c is the model).
 * No call blocks: connecting, sending and receiving all happen as the loop
 * turns, and every unary call gives up after 2 s.
 *
 * A 100 ms pulse (a uv_timer_t on the same loop) does the rest: retries
 * with backoff (Ready, the watch, annotations), the Health period, the
 * players counter, the empty timeout. A blocked loop runs no pulse, so it
 * sends no Health: that is the point.
 *
 * The watch (GET /watch/gameserver) is a response that never ends: one
 * JSON object per line, {"result": GameServer}, the first the GameServer
 * as it is, then one per change (grpc-gateway's stream encoding).
 */
#include "agones.h"

#include "persist.h"
#include "templates.h"

#include <cJSON.h>

#include <curl/curl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PULSE_MS        100
#define CALL_TIMEOUT_MS 2000L
#define CONNECT_MS      1000L
#define CLOSE_WAIT_NS   2000000000ull /* Shutdown at exit: at most this */
#define BACKOFF_MIN_NS  250000000ull
#define BACKOFF_MAX_NS  5000000000ull
#define STUCK_NS        1000000000ull /* a world in one step this long is stuck */
#define WATCH_LINE_MAX  (1u << 20)    /* a GameServer is a few kB */
#define RESPONSE_MAX    65536u

typedef enum call_kind {
    CALL_READY,
    CALL_HEALTH,
    CALL_WATCH,
    CALL_PLAYERS,
    CALL_ANNOTATE,
    CALL_SHUTDOWN,
    CALL_KINDS
} call_kind;

static const char* const k_call_names[CALL_KINDS] = {"ready",   "health",   "watch",
                                                     "players", "annotate", "shutdown"};

/// One HTTP call in flight.
typedef struct call {
    struct app_agones* ag;
    CURL* easy;
    call_kind kind;
    struct curl_slist* headers;
    char* data; ///< What came back (unary: up to RESPONSE_MAX; watch: the unfinished line).
    size_t len, cap;
    uint32_t value; ///< players: the count sent.
    struct call* next;
} call;

/// A socket libcurl asked us to watch.
typedef struct sock {
    uv_poll_t poll;
    curl_socket_t fd;
    struct app_agones* ag;
} sock;

/// A call that must land: retried with backoff until it does.
typedef struct retry {
    bool wanted;     ///< Not landed yet.
    bool in_flight;  ///< Sent, not answered.
    uint64_t due_ns; ///< When it is sent (again).
    uint32_t fails;  ///< Failures in a row (the backoff, and when to log).
} retry;

typedef struct app_agones {
    app_server* app;
    CURLM* multi;
    uv_timer_t curl_timer; ///< libcurl's timeout.
    uv_timer_t pulse;      ///< Retries, Health, players, the empty timeout.
    uint32_t open_handles; ///< Timers and polls not closed yet.
    char base[64];         ///< http://127.0.0.1:PORT
    call* calls;           ///< In flight.

    retry ready, watch, annotate, shutdown;
    bool is_ready;    ///< Ready landed.
    char* annotation; ///< The body of the annotation to send (the match's world).

    uint64_t next_health_ns;
    bool health_in_flight;
    bool withholding; ///< Health withheld (a world late): said once until it ends.
    uint32_t health_fails;

    uint32_t players_sent; ///< The count the Counter holds; UINT32_MAX: unknown.
    bool players_in_flight, counter_missing;
    uint32_t players_fails;   ///< PATCHes refused in a row (backoff).
    uint64_t players_due_ns;  ///< Not before then, after a refusal.
    int64_t players_capacity; ///< The Counter's capacity as watched; −1: not known.
    bool over_capacity;       ///< Said once while more play than it holds.

    char state[32];       ///< The GameServer's state, as last watched.
    bool allocated;       ///< Its match's world was made (or refused).
    uint64_t match_world; ///< That world's id (0: none).
    uint64_t empty_since; ///< When the last session closed after allocation (0: one is open).

    bool closing;
    uint64_t close_deadline_ns;
    void (*closed)(app_server* app);
} app_agones;

// ---------------------------------------------------------------------------
// Log lines
// ---------------------------------------------------------------------------

static void say(app_agones* ag, app_log_level level, const char* event, const char* key,
                const char* value) {
    app_log_line l;
    if (app__log_begin(&ag->app->log, &l, level, APP_LOGK_ALWAYS, event, uv_hrtime())) {
        if (key != NULL) {
            app__log_str(&l, key, value);
        }
        app__log_end(&l);
    }
}

// A failed call, said on its first failure and then every 10th (a sidecar
// that is not there yet fails every 250 ms to 5 s).
static void say_failed(app_agones* ag, call_kind kind, uint32_t fails, const char* why) {
    if (fails == 1 || fails % 10 == 0) {
        app_log_line l;
        if (app__log_begin(&ag->app->log, &l, APP_LOG_WARN, APP_LOGK_ALWAYS, "agones_call_failed",
                           uv_hrtime())) {
            app__log_str(&l, "call", k_call_names[kind]);
            app__log_u64(&l, "failures", fails);
            app__log_str(&l, "reason", why);
            app__log_end(&l);
        }
    }
}

static uint64_t backoff(uint32_t fails) {
    uint64_t ns = BACKOFF_MIN_NS;
    for (uint32_t i = 1; i < fails && ns < BACKOFF_MAX_NS; ++i) {
        ns *= 2;
    }
    return ns < BACKOFF_MAX_NS ? ns : BACKOFF_MAX_NS;
}

// The sessions that count as players: with an auth file, those with a
// token (anonymous viewers neither fill the Counter nor keep a match
// alive); without one, every session.
static uint32_t players_now(const app_server* app) {
    if (app->cfg.auth == NULL) {
        return app->clients;
    }
    uint32_t n = 0;
    for (const app_client* c = app->client_list; c != NULL; c = c->next) {
        n += c->entry != NULL;
    }
    return n;
}

// ---------------------------------------------------------------------------
// libcurl in the loop
// ---------------------------------------------------------------------------

static void handle_closed(uv_handle_t* h) {
    app_agones* ag = h->data;
    if (h->type == UV_POLL) {
        free(h);
    }
    if (--ag->open_handles == 0 && ag->closed != NULL) {
        app_server* app = ag->app;
        void (*done)(app_server*) = ag->closed;
        free(ag);
        app->agones = NULL;
        done(app);
    }
}

static void finished(app_agones* ag);

static void on_poll(uv_poll_t* p, int status, int events) {
    sock* s = (sock*)p;
    int flags = 0;
    if (status < 0) {
        flags = CURL_CSELECT_ERR;
    } else {
        flags |= (events & UV_READABLE) ? CURL_CSELECT_IN : 0;
        flags |= (events & UV_WRITABLE) ? CURL_CSELECT_OUT : 0;
    }
    int running = 0;
    curl_multi_socket_action(s->ag->multi, s->fd, flags, &running);
    finished(s->ag);
}

static void on_curl_timer(uv_timer_t* t) {
    app_agones* ag = t->data;
    int running = 0;
    curl_multi_socket_action(ag->multi, CURL_SOCKET_TIMEOUT, 0, &running);
    finished(ag);
}

// CURLMOPT_SOCKETFUNCTION: watch (or stop watching) socket fd.
static int on_socket(CURL* easy, curl_socket_t fd, int what, void* userp, void* socketp) {
    (void)easy;
    app_agones* ag = userp;
    sock* s = socketp;
    if (what == CURL_POLL_REMOVE) {
        if (s != NULL) {
            uv_poll_stop(&s->poll); // now: libcurl may reuse the fd before the close lands
            uv_close((uv_handle_t*)&s->poll, handle_closed);
            curl_multi_assign(ag->multi, fd, NULL);
        }
        return 0;
    }
    if (s == NULL) {
        s = calloc(1, sizeof *s);
        if (s == NULL || uv_poll_init_socket(ag->app->loop, &s->poll, fd) != 0) {
            free(s);
            return -1; // libcurl fails the transfer
        }
        s->fd = fd;
        s->ag = ag;
        s->poll.data = ag;
        ag->open_handles++;
        curl_multi_assign(ag->multi, fd, s);
    }
    int events = 0;
    events |= (what == CURL_POLL_IN || what == CURL_POLL_INOUT) ? UV_READABLE : 0;
    events |= (what == CURL_POLL_OUT || what == CURL_POLL_INOUT) ? UV_WRITABLE : 0;
    uv_poll_start(&s->poll, events, on_poll);
    return 0;
}

// CURLMOPT_TIMERFUNCTION: libcurl wants to be called in timeout_ms (-1:
// never). Never calls libcurl itself (its documentation forbids it).
static int on_timer_wanted(CURLM* multi, long timeout_ms, void* userp) {
    (void)multi;
    app_agones* ag = userp;
    if (timeout_ms < 0) {
        uv_timer_stop(&ag->curl_timer);
    } else {
        uv_timer_start(&ag->curl_timer, on_curl_timer, timeout_ms > 0 ? (uint64_t)timeout_ms : 1,
                       0);
    }
    return 0;
}

// ---------------------------------------------------------------------------
// Calls
// ---------------------------------------------------------------------------

static void on_watch_line(app_agones* ag, const char* line, size_t len);

static size_t on_data(char* p, size_t size, size_t n, void* userp) {
    call* c = userp;
    const size_t bytes = size * n;
    if (c->kind != CALL_WATCH) {
        // Kept up to RESPONSE_MAX (an error's message); the rest dropped.
        size_t keep = c->len + bytes <= RESPONSE_MAX ? bytes : RESPONSE_MAX - c->len;
        if (keep > 0 && c->len + keep + 1 > c->cap) {
            size_t cap = c->len + keep + 1;
            char* d = realloc(c->data, cap);
            if (d == NULL) {
                return bytes;
            }
            c->data = d;
            c->cap = cap;
        }
        if (keep > 0) {
            memcpy(c->data + c->len, p, keep);
            c->len += keep;
            c->data[c->len] = '\0';
        }
        return bytes;
    }
    // The watch: whole lines go to on_watch_line(); a part waits for the rest.
    for (size_t i = 0; i < bytes; ++i) {
        if (p[i] == '\n') {
            if (c->len > 0) {
                on_watch_line(c->ag, c->data, c->len);
            }
            c->len = 0;
            continue;
        }
        if (c->len + 2 > c->cap) {
            size_t cap = c->cap < 4096 ? 4096 : 2 * c->cap;
            if (cap > WATCH_LINE_MAX) {
                return 0; // no GameServer is this long: end the transfer
            }
            char* d = realloc(c->data, cap);
            if (d == NULL) {
                return 0;
            }
            c->data = d;
            c->cap = cap;
        }
        c->data[c->len++] = p[i];
        c->data[c->len] = '\0';
    }
    return bytes;
}

// Sends `method path` with a JSON body (NULL: none). Returns the call, or
// NULL (logged as a failure by the caller's retry).
static call* send_call(app_agones* ag, call_kind kind, const char* method, const char* path,
                       const char* body) {
    call* c = calloc(1, sizeof *c);
    if (c == NULL || (c->easy = curl_easy_init()) == NULL) {
        free(c);
        return NULL;
    }
    c->ag = ag;
    c->kind = kind;
    char url[160];
    snprintf(url, sizeof url, "%s%s", ag->base, path);
    curl_easy_setopt(c->easy, CURLOPT_URL, url);
    curl_easy_setopt(c->easy, CURLOPT_PRIVATE, c);
    curl_easy_setopt(c->easy, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c->easy, CURLOPT_CONNECTTIMEOUT_MS, CONNECT_MS);
    curl_easy_setopt(c->easy, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(c->easy, CURLOPT_WRITEDATA, c);
    curl_easy_setopt(c->easy, CURLOPT_PROXY, ""); // the sidecar is next to us, never proxied
    if (kind == CALL_WATCH) {
        curl_easy_setopt(c->easy, CURLOPT_TCP_KEEPALIVE, 1L); // idle for hours, legitimately
    } else {
        curl_easy_setopt(c->easy, CURLOPT_TIMEOUT_MS, CALL_TIMEOUT_MS);
    }
    if (body != NULL) {
        c->headers = curl_slist_append(NULL, "Content-Type: application/json");
        curl_easy_setopt(c->easy, CURLOPT_HTTPHEADER, c->headers);
        curl_easy_setopt(c->easy, CURLOPT_COPYPOSTFIELDS, body);
        if (strcmp(method, "POST") != 0) {
            curl_easy_setopt(c->easy, CURLOPT_CUSTOMREQUEST, method);
        }
    }
    if (curl_multi_add_handle(ag->multi, c->easy) != CURLM_OK) {
        curl_slist_free_all(c->headers);
        curl_easy_cleanup(c->easy);
        free(c);
        return NULL;
    }
    c->next = ag->calls;
    ag->calls = c;
    return c;
}

static void free_call(app_agones* ag, call* c) {
    for (call** p = &ag->calls; *p != NULL; p = &(*p)->next) {
        if (*p == c) {
            *p = c->next;
            break;
        }
    }
    curl_multi_remove_handle(ag->multi, c->easy);
    curl_easy_cleanup(c->easy);
    curl_slist_free_all(c->headers);
    free(c->data);
    free(c);
}

// ---------------------------------------------------------------------------
// The GameServer
// ---------------------------------------------------------------------------

// The GameServer in a watch line or a GET /gameserver answer.
static const cJSON* game_server(const cJSON* root) {
    const cJSON* r = cJSON_GetObjectItemCaseSensitive(root, "result");
    return cJSON_IsObject(r) ? r : root;
}

bool app__agones_state(const char* json, size_t len, char* state, size_t cap) {
    cJSON* root = cJSON_ParseWithLength(json, len);
    state[0] = '\0';
    if (!cJSON_IsObject(root)) {
        cJSON_Delete(root);
        return false;
    }
    const cJSON* status = cJSON_GetObjectItemCaseSensitive(game_server(root), "status");
    const cJSON* s = cJSON_GetObjectItemCaseSensitive(status, "state");
    if (cJSON_IsString(s)) {
        snprintf(state, cap, "%s", s->valuestring);
    }
    cJSON_Delete(root);
    return true;
}

int64_t app__agones_capacity(const char* json, size_t len, const char* counter) {
    cJSON* root = cJSON_ParseWithLength(json, len);
    const cJSON* status = cJSON_GetObjectItemCaseSensitive(game_server(root), "status");
    const cJSON* c = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(status, "counters"), counter);
    const cJSON* cap = cJSON_GetObjectItemCaseSensitive(c, "capacity");
    int64_t out = -1;
    // int64 fields come as strings in the SDK's JSON (the proto3 mapping).
    if (cJSON_IsString(cap)) {
        char* end = NULL;
        long long v = strtoll(cap->valuestring, &end, 10);
        if (end != cap->valuestring && *end == '\0' && v >= 0) {
            out = (int64_t)v;
        }
    } else if (cJSON_IsNumber(cap) && cap->valuedouble >= 0.0 && cap->valuedouble < 9e18) {
        out = (int64_t)cap->valuedouble;
    }
    cJSON_Delete(root);
    return out;
}

// The value of key in the GameServer's annotations, else its labels, else NULL.
static const char* meta(const cJSON* gs, const char* key) {
    const cJSON* m = cJSON_GetObjectItemCaseSensitive(gs, "object_meta");
    const char* const maps[2] = {"annotations", "labels"};
    for (int i = 0; i < 2; ++i) {
        const cJSON* v =
            cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(m, maps[i]), key);
        if (cJSON_IsString(v)) {
            return v->valuestring;
        }
    }
    return NULL;
}

// 1 to RDP_MAX_NAME printable ASCII characters (a world's name).
static bool printable_name(const char* s) {
    size_t n = strlen(s);
    bool printable = n >= 1 && n <= RDP_MAX_NAME;
    for (size_t i = 0; i < n && printable; ++i) {
        printable = s[i] >= 0x20 && s[i] < 0x7f;
    }
    return printable;
}

// 0, or -1 with why naming key, when value is no world name.
static int name_value(const char* key, const char* value, char* why, size_t cap) {
    if (printable_name(value)) {
        return 0;
    }
    snprintf(why, cap, "%s must be 1 to %d printable ASCII characters, not \"%.40s\"", key,
             RDP_MAX_NAME, value);
    return -1;
}

// Checks ragdolld.dev/player-tokens and keeps it in out. A token is never
// echoed in why: annotations are read by more people than its players.
static int player_tokens(const char* list, app_agones_match* out, char* why, size_t cap) {
    uint32_t n = 0;
    size_t at = 0, len = 0;
    for (const char *cursor = list, *p; (p = app__token_list_next(&cursor, &len)) != NULL;) {
        if (!app__token_well_formed(p, len)) {
            snprintf(why, cap,
                     "ragdolld.dev/player-tokens: token %u is not %d to %d characters of A-Z a-z "
                     "0-9 . _ ~ - (separate tokens with commas)",
                     n + 1, APP_TOKEN_MIN, APP_TOKEN_MAX);
            return -1;
        }
        if (n == APP_AGONES_MAX_PLAYER_TOKENS) {
            snprintf(why, cap, "ragdolld.dev/player-tokens: more than %d tokens",
                     APP_AGONES_MAX_PLAYER_TOKENS);
            return -1;
        }
        // The same token twice would be one player counted twice: refused.
        for (const char* q = out->player_tokens; *q != '\0';) {
            size_t qlen = strcspn(q, ",");
            if (qlen == len && memcmp(q, p, len) == 0) {
                snprintf(why, cap, "ragdolld.dev/player-tokens: token %u is given twice", n + 1);
                return -1;
            }
            q += qlen + (q[qlen] == ',');
        }
        if (at > 0) {
            out->player_tokens[at++] = ',';
        }
        memcpy(out->player_tokens + at, p, len);
        at += len;
        out->player_tokens[at] = '\0';
        n++;
    }
    out->player_token_count = n;
    return 0;
}

int app__agones_match(const char* json, size_t len, sim_solver default_solver,
                      app_agones_match* out, char* why, size_t cap) {
    memset(out, 0, sizeof *out);
    snprintf(out->name, sizeof out->name, "match");
    out->tick_hz = 60;
    out->solver = default_solver;
    cJSON* root = cJSON_ParseWithLength(json, len);
    if (!cJSON_IsObject(root)) {
        cJSON_Delete(root);
        snprintf(why, cap, "the GameServer is not a JSON object");
        return -1;
    }
    const cJSON* gs = game_server(root);
    int rc = 0;
    const char* name = meta(gs, "ragdolld.dev/world-name");
    const char* hz = meta(gs, "ragdolld.dev/tick-hz");
    const char* solver = meta(gs, "ragdolld.dev/solver");
    const char* tpl = meta(gs, "ragdolld.dev/template");
    const char* match_id = meta(gs, "ragdolld.dev/match-id");
    const char* tokens = meta(gs, "ragdolld.dev/player-tokens");
    if (match_id != NULL && (rc = name_value("ragdolld.dev/match-id", match_id, why, cap)) == 0) {
        snprintf(out->match_id, sizeof out->match_id, "%s", match_id);
        snprintf(out->name, sizeof out->name, "%s", match_id);
    }
    if (rc == 0 && name != NULL &&
        (rc = name_value("ragdolld.dev/world-name", name, why, cap)) == 0) {
        snprintf(out->name, sizeof out->name, "%s", name);
    }
    if (rc == 0 && hz != NULL) {
        char* end = NULL;
        long v = strtol(hz, &end, 10);
        if (!(hz[0] >= '0' && hz[0] <= '9') || *end != '\0' || v < 1 || v > 240) {
            snprintf(why, cap,
                     "ragdolld.dev/tick-hz must be a whole number from 1 to 240, not "
                     "\"%.40s\"",
                     hz);
            rc = -1;
        } else {
            out->tick_hz = (uint32_t)v;
        }
    }
    if (rc == 0 && solver != NULL) {
        if (!app__solver_from_wire(rdp_solver_parse(solver), &out->solver)) {
            snprintf(why, cap, "ragdolld.dev/solver must be xpbd or soft_step, not \"%.40s\"",
                     solver);
            rc = -1;
        } else {
            out->solver_given = true;
        }
    }
    if (rc == 0 && tpl != NULL) {
        if (strlen(tpl) < 1 || strlen(tpl) > RDP_MAX_TEMPLATE_NAME) {
            snprintf(why, cap, "ragdolld.dev/template must be 1 to %d bytes, not \"%.40s\"",
                     RDP_MAX_TEMPLATE_NAME, tpl);
            rc = -1;
        } else {
            snprintf(out->template_name, sizeof out->template_name, "%s", tpl);
        }
    }
    if (rc == 0 && tokens != NULL) {
        rc = player_tokens(tokens, out, why, cap);
    }
    cJSON_Delete(root);
    return rc;
}

// The allocation's player tokens, each for the match's world w only.
// False with why when they cannot be added (the world is then not made).
static bool add_players(app_agones* ag, const app_agones_match* m, const app_world* w, char* why,
                        size_t cap) {
    app_server* app = ag->app;
    if (m->player_token_count == 0) {
        return true;
    }
    if (app->cfg.auth == NULL) {
        // Without an auth file every client may do everything already.
        say(ag, APP_LOG_WARN, "agones_player_tokens_ignored", "reason",
            "the server has no --auth-file: every client is an admin");
        return true;
    }
    // Tokens are scoped by name (PROTOCOL.md §6): another world of the
    // same name, such as a restored one, would be theirs too.
    for (uint32_t i = 0; i < app->cfg.max_worlds; ++i) {
        const app_world* o = app->worlds[i];
        if (o != NULL && o != w && strcmp(o->name, w->name) == 0) {
            snprintf(why, cap,
                     "ragdolld.dev/player-tokens: world %" PRIu64
                     " is named \"%s\" too, and the tokens would play there as well (give "
                     "ragdolld.dev/world-name another name)",
                     o->id, w->name);
            return false;
        }
    }
    uint32_t added = 0;
    char msg[200];
    if (app__auth_add_tokens(app, m->player_tokens, APP_ROLE_PLAYER, w->name, &added, msg,
                             sizeof msg) != 0) {
        snprintf(why, cap, "ragdolld.dev/player-tokens: %s", msg);
        return false;
    }
    return true;
}

// Sets the annotation to send (PUT /metadata/annotation; Agones prefixes
// the key with agones.dev/sdk-), retried until it lands.
static void annotate(app_agones* ag, const char* key, const char* value) {
    cJSON* o = cJSON_CreateObject();
    if (o != NULL && cJSON_AddStringToObject(o, "key", key) != NULL &&
        cJSON_AddStringToObject(o, "value", value) != NULL) {
        free(ag->annotation);
        ag->annotation = cJSON_PrintUnformatted(o);
        ag->annotate = (retry){.wanted = ag->annotation != NULL};
    }
    cJSON_Delete(o);
}

// The GameServer was allocated: its match's world is made.
static void allocated(app_agones* ag, const char* json, size_t len) {
    app_server* app = ag->app;
    ag->allocated = true;
    ag->empty_since = players_now(app) == 0 ? uv_hrtime() : 0;
    app_agones_match m;
    char why[256] = "";
    app_world* w = NULL;
    rdp_code rc = RDP_E_BAD_REQUEST;
    const app_template* tpl = NULL;
    if (app__agones_match(json, len, app->cfg.world_solver, &m, why, sizeof why) == 0 &&
        m.template_name[0] != '\0' &&
        (tpl = app_templates_find(app->cfg.templates, m.template_name)) == NULL) {
        snprintf(why, sizeof why, "ragdolld.dev/template: no world template \"%s\"",
                 m.template_name);
    } else if (why[0] == '\0') {
        rc = app__world_create(app, m.name, m.tick_hz, app->cfg.world_limits, m.solver, &w);
        if (rc == RDP_OK && tpl != NULL &&
            app__world_from_template(app, w, tpl, why, sizeof why) != 0) {
            app__world_destroy(app, w);
            w = NULL;
        } else if (rc == RDP_OK && app__persist_world_created(app, w, why, sizeof why) != 0) {
            app__persist_remove_files(app, w);
            app__world_destroy(app, w);
            w = NULL;
            rc = RDP_E_UNAVAILABLE;
        } else if (rc == RDP_OK && !add_players(ag, &m, w, why, sizeof why)) {
            app__persist_remove_files(app, w);
            app__world_destroy(app, w);
            w = NULL;
        } else if (rc != RDP_OK) {
            snprintf(why, sizeof why, "%s",
                     rc == RDP_E_TOO_LARGE ? "the server has --max-worlds worlds already"
                                           : "out of memory");
        }
    }
    if (w == NULL) {
        app_log_line l;
        if (app__log_begin(&app->log, &l, APP_LOG_ERROR, APP_LOGK_ALWAYS,
                           "agones_allocation_refused", uv_hrtime())) {
            if (m.match_id[0] != '\0') {
                app__log_str(&l, "match", m.match_id);
            }
            app__log_str(&l, "reason", why);
            app__log_end(&l);
        }
        // The reason on the GameServer (agones.dev/sdk-world-error), so the
        // matchmaker waiting for agones.dev/sdk-world learns it will not come.
        annotate(ag, "world-error", why);
        return;
    }
    ag->match_world = w->id;
    app_log_line l;
    if (app__log_begin(&app->log, &l, APP_LOG_INFO, APP_LOGK_ALWAYS, "agones_allocated",
                       uv_hrtime())) {
        app__log_u64(&l, "world", w->id);
        app__log_str(&l, "name", m.name);
        if (m.match_id[0] != '\0') {
            app__log_str(&l, "match", m.match_id);
        }
        app__log_u64(&l, "tick_hz", m.tick_hz);
        app__log_u64(&l, "player_tokens", app->cfg.auth != NULL ? m.player_token_count : 0);
        app__log_end(&l);
    }
    // The world's id on the GameServer (agones.dev/sdk-world), for whoever
    // allocated it and tells the players where to go.
    char id[24];
    snprintf(id, sizeof id, "%" PRIu64, w->id);
    annotate(ag, "world", id);
}

static void on_watch_line(app_agones* ag, const char* line, size_t len) {
    char state[32];
    if (!app__agones_state(line, len, state, sizeof state)) {
        say(ag, APP_LOG_WARN, "agones_watch_unreadable", "reason", "a line that is not JSON");
        return;
    }
    if (strcmp(state, ag->state) != 0) {
        snprintf(ag->state, sizeof ag->state, "%s", state);
        say(ag, APP_LOG_INFO, "agones_state", "state", state[0] != '\0' ? state : "(none)");
    }
    ag->players_capacity = app__agones_capacity(line, len, APP_AGONES_PLAYERS_COUNTER);
    if (strcmp(state, "Allocated") == 0 && !ag->allocated && !ag->closing) {
        allocated(ag, line, len);
    }
}

// ---------------------------------------------------------------------------
// Answers
// ---------------------------------------------------------------------------

static void landed(app_agones* ag, call* c, CURLcode rc, long status) {
    char why[200];
    const bool ok = rc == CURLE_OK && status >= 200 && status < 300;
    if (rc != CURLE_OK) {
        snprintf(why, sizeof why, "%s", curl_easy_strerror(rc));
    } else {
        snprintf(why, sizeof why, "HTTP %ld%s%.120s", status, c->len > 0 ? ": " : "",
                 c->len > 0 ? c->data : "");
    }
    const uint64_t now = uv_hrtime();
    retry* r = c->kind == CALL_READY      ? &ag->ready
               : c->kind == CALL_WATCH    ? &ag->watch
               : c->kind == CALL_ANNOTATE ? &ag->annotate
               : c->kind == CALL_SHUTDOWN ? &ag->shutdown
                                          : NULL;
    if (r != NULL) {
        r->in_flight = false;
        if (ok && c->kind != CALL_WATCH) {
            r->wanted = false;
            r->fails = 0;
        } else {
            // The watch never ends on its own: when it does, it is watched
            // again (its first line is the GameServer as it is then).
            r->fails = ok ? 1 : r->fails + 1;
            r->due_ns = now + backoff(r->fails);
            if (!ok && !ag->closing) {
                say_failed(ag, c->kind, r->fails, why);
            }
        }
    }
    switch (c->kind) {
    case CALL_READY:
        if (ok) {
            ag->is_ready = true;
            ag->watch = (retry){.wanted = true, .due_ns = now};
            ag->next_health_ns = now;
            say(ag, APP_LOG_INFO, "agones_ready", "sidecar", ag->base);
        }
        break;
    case CALL_HEALTH:
        ag->health_in_flight = false;
        ag->health_fails = ok ? 0 : ag->health_fails + 1;
        if (!ok) {
            say_failed(ag, CALL_HEALTH, ag->health_fails, why);
        }
        break;
    case CALL_PLAYERS:
        ag->players_in_flight = false;
        if (!ok) {
            ag->players_sent = UINT32_MAX; // sent again, after a backoff
            if (rc == CURLE_OK && c->data != NULL && strstr(c->data, "not found") != NULL) {
                ag->counter_missing = true;
                say(ag, APP_LOG_WARN, "agones_counter_missing", "counter",
                    APP_AGONES_PLAYERS_COUNTER);
            } else {
                ag->players_fails++;
                ag->players_due_ns = now + backoff(ag->players_fails);
                if (!ag->closing) {
                    say_failed(ag, CALL_PLAYERS, ag->players_fails, why);
                }
            }
        } else {
            ag->players_sent = c->value;
            ag->players_fails = 0;
        }
        break;
    case CALL_SHUTDOWN:
        if (ok) {
            say(ag, APP_LOG_INFO, "agones_shutdown_sent", NULL, NULL);
        }
        break;
    default:
        break;
    }
}

// Every finished transfer: its answer taken, its handle freed.
static void finished(app_agones* ag) {
    CURLMsg* msg;
    int left = 0;
    while ((msg = curl_multi_info_read(ag->multi, &left)) != NULL) {
        if (msg->msg != CURLMSG_DONE) {
            continue;
        }
        CURL* easy = msg->easy_handle;
        const CURLcode rc = msg->data.result;
        call* c = NULL;
        long status = 0;
        curl_easy_getinfo(easy, CURLINFO_PRIVATE, (char**)&c);
        curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &status);
        landed(ag, c, rc, status);
        free_call(ag, c);
    }
}

// ---------------------------------------------------------------------------
// The pulse
// ---------------------------------------------------------------------------

// Whether every world ticks on time: since the last look each stepped at
// least half the ticks its rate asks for, and none has been in one step
// for STUCK_NS. The first reason is said in why.
static bool worlds_on_time(app_agones* ag, uint64_t now, char* why, size_t cap) {
    app_server* app = ag->app;
    bool on_time = true;
    for (uint32_t i = 0; i < app->cfg.max_worlds; ++i) {
        app_world* w = app->worlds[i];
        if (w == NULL) {
            continue;
        }
        const uint64_t tick = app__world_view(w)->tick; // a worker may be stepping it
        const double dt = (double)(now - w->health_ns) / 1e9;
        const double expected = dt * (double)w->tick_hz;
        if (w->health_ns != 0 && expected >= 4 &&
            (double)(tick - w->health_tick) < 0.5 * expected && on_time) {
            snprintf(why, cap,
                     "world %" PRIu64 " stepped %" PRIu64 " ticks in %.2f s, under half its %u Hz",
                     w->id, tick - w->health_tick, dt, w->tick_hz);
            on_time = false;
        } else if (w->busy && now - w->busy_since_ns > STUCK_NS && on_time) {
            snprintf(why, cap, "world %" PRIu64 " has been in one step for %.1f s", w->id,
                     (double)(now - w->busy_since_ns) / 1e9);
            on_time = false;
        }
        w->health_tick = tick;
        w->health_ns = now;
    }
    return on_time;
}

// Sends r's call when it is due.
static void send_due(app_agones* ag, retry* r, uint64_t now, call_kind kind, const char* method,
                     const char* path, const char* body) {
    if (!r->wanted || r->in_flight || now < r->due_ns) {
        return;
    }
    if (send_call(ag, kind, method, path, body) != NULL) {
        r->in_flight = true;
    } else {
        r->fails++;
        r->due_ns = now + backoff(r->fails);
    }
}

static void finish_close(app_agones* ag);

static void on_pulse(uv_timer_t* t) {
    app_agones* ag = t->data;
    app_server* app = ag->app;
    const uint64_t now = uv_hrtime();
    if (ag->closing) {
        if (!ag->shutdown.wanted || now >= ag->close_deadline_ns) {
            finish_close(ag);
        } else {
            send_due(ag, &ag->shutdown, now, CALL_SHUTDOWN, "POST", "/shutdown", "{}");
        }
        return;
    }
    send_due(ag, &ag->ready, now, CALL_READY, "POST", "/ready", "{}");
    send_due(ag, &ag->watch, now, CALL_WATCH, "GET", "/watch/gameserver", NULL);
    send_due(ag, &ag->annotate, now, CALL_ANNOTATE, "PUT", "/metadata/annotation", ag->annotation);
    send_due(ag, &ag->shutdown, now, CALL_SHUTDOWN, "POST", "/shutdown", "{}");
    if (ag->is_ready && now >= ag->next_health_ns) {
        ag->next_health_ns = now + (uint64_t)(app->cfg.agones_health_s * 1e9);
        char why[160] = "";
        if (!worlds_on_time(ag, now, why, sizeof why)) {
            if (!ag->withholding) {
                ag->withholding = true;
                say(ag, APP_LOG_WARN, "agones_health_withheld", "reason", why);
            }
        } else {
            if (ag->withholding) {
                ag->withholding = false;
                say(ag, APP_LOG_INFO, "agones_health_resumed", NULL, NULL);
            }
            if (!ag->health_in_flight && send_call(ag, CALL_HEALTH, "POST", "/health", "{}")) {
                ag->health_in_flight = true;
            }
        }
    }
    // Players, to the Counter fleet autoscaling reads: never more than its
    // capacity (the sidecar refuses a count above it).
    const uint32_t players = players_now(app);
    uint32_t count = players;
    if (ag->players_capacity >= 0 && (int64_t)count > ag->players_capacity) {
        count = (uint32_t)ag->players_capacity;
        if (!ag->over_capacity) {
            ag->over_capacity = true;
            char what[96];
            snprintf(what, sizeof what, "%u players, the Counter holds %" PRId64, players,
                     ag->players_capacity);
            say(ag, APP_LOG_WARN, "agones_players_over_capacity", "reason", what);
        }
    } else {
        ag->over_capacity = false;
    }
    if (!ag->counter_missing && !ag->players_in_flight && count != ag->players_sent &&
        now >= ag->players_due_ns) {
        char body[48];
        snprintf(body, sizeof body, "{\"count\":\"%u\"}", count);
        call* c = send_call(ag, CALL_PLAYERS, "PATCH",
                            "/v1beta1/counters/" APP_AGONES_PLAYERS_COUNTER, body);
        if (c != NULL) {
            c->value = count;
            ag->players_in_flight = true;
        }
    }
    // The match is over when no player has been connected for the timeout.
    if (ag->allocated && app->cfg.agones_empty_s > 0 && !ag->shutdown.wanted) {
        if (players > 0) {
            ag->empty_since = 0;
        } else if (ag->empty_since == 0) {
            ag->empty_since = now;
        } else if (now - ag->empty_since >= (uint64_t)app->cfg.agones_empty_s * 1000000000ull) {
            char why[96];
            snprintf(why, sizeof why, "no session for %u s after the allocation",
                     app->cfg.agones_empty_s);
            say(ag, APP_LOG_INFO, "agones_shutdown", "reason", why);
            ag->shutdown = (retry){.wanted = true, .due_ns = now};
        }
    }
}

// ---------------------------------------------------------------------------
// Start and close
// ---------------------------------------------------------------------------

int app__agones_start(app_server* app) {
    if (app->cfg.agones_port <= 0) {
        return 0;
    }
    static bool curl_ready = false;
    if (!curl_ready && curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        say(&(app_agones){.app = app}, APP_LOG_ERROR, "agones_failed", "reason",
            "libcurl did not start");
        return UV_ENOMEM;
    }
    curl_ready = true;
    app_agones* ag = calloc(1, sizeof *ag);
    if (ag == NULL || (ag->multi = curl_multi_init()) == NULL) {
        free(ag);
        return UV_ENOMEM;
    }
    ag->app = app;
    snprintf(ag->base, sizeof ag->base, "http://127.0.0.1:%d", app->cfg.agones_port);
    curl_multi_setopt(ag->multi, CURLMOPT_SOCKETFUNCTION, on_socket);
    curl_multi_setopt(ag->multi, CURLMOPT_SOCKETDATA, ag);
    curl_multi_setopt(ag->multi, CURLMOPT_TIMERFUNCTION, on_timer_wanted);
    curl_multi_setopt(ag->multi, CURLMOPT_TIMERDATA, ag);
    uv_timer_init(app->loop, &ag->curl_timer);
    uv_timer_init(app->loop, &ag->pulse);
    ag->curl_timer.data = ag;
    ag->pulse.data = ag;
    ag->open_handles = 2;
    ag->players_sent = UINT32_MAX;
    ag->players_capacity = -1; // until a watched GameServer says
    ag->ready = (retry){.wanted = true, .due_ns = 0};
    app->agones = ag;
    say(ag, APP_LOG_INFO, "agones_started", "sidecar", ag->base);
    on_pulse(&ag->pulse); // Ready now
    uv_timer_start(&ag->pulse, on_pulse, PULSE_MS, PULSE_MS);
    return 0;
}

// Lets go of every call, libcurl and the handles; ag is freed (and
// `closed` called) when the last handle has closed.
static void finish_close(app_agones* ag) {
    uv_timer_stop(&ag->pulse);
    while (ag->calls != NULL) {
        free_call(ag, ag->calls);
    }
    curl_multi_cleanup(ag->multi); // may ask to stop watching sockets: closed here
    ag->multi = NULL;
    free(ag->annotation);
    ag->annotation = NULL;
    uv_close((uv_handle_t*)&ag->curl_timer, handle_closed);
    uv_close((uv_handle_t*)&ag->pulse, handle_closed);
}

void app__agones_close(app_server* app, void (*done)(app_server* app)) {
    app_agones* ag = app->agones;
    if (ag == NULL) {
        done(app);
        return;
    }
    ag->closing = true;
    ag->closed = done;
    ag->close_deadline_ns = uv_hrtime() + CLOSE_WAIT_NS;
    // Whatever was pending: only Shutdown still matters.
    for (call* c = ag->calls; c != NULL;) {
        call* next = c->next;
        if (c->kind != CALL_SHUTDOWN) {
            free_call(ag, c);
        }
        c = next;
    }
    ag->ready.wanted = ag->watch.wanted = ag->annotate.wanted = false;
    if (!ag->shutdown.wanted) {
        ag->shutdown = (retry){.wanted = true, .due_ns = 0};
    }
    if (!ag->shutdown.in_flight) {
        ag->shutdown.due_ns = 0;
        send_due(ag, &ag->shutdown, uv_hrtime(), CALL_SHUTDOWN, "POST", "/shutdown", "{}");
    }
}
