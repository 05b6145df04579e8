/*
 * client.c: an rdc client's life: connecting (name resolution, TCP, the
 * upgrade handshake of handshake.c), the WebSocket glue between libuv and
 * wslay in client mode, commands and their replies, subscriptions,
 * events, keep-alive, reconnecting with backoff, and closing.
 *
 * It owns every libuv handle of the client, the wslay context and the
 * pending-command list. Decoding snapshots is snapshot.c's (one entry
 * point); building and checking the handshake is handshake.c's.
 *
 * Send path:
 *
 *   rdc_send* ──► wslay queue (copied, masked with getrandom() keys)
 *   wslay_event_send ──► conn->out ──► uv_write (one copy per write)
 *
 * Deferred frees (libuv rule): a connection is freed in its TCP handle's
 * close callback, the client once its timers and connections are closed,
 * so nothing is freed inside a callback chain that still uses it.
 */
#include "rdc_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

/// How often the housekeeping timer checks deadlines, ms.
#define RDC__TICK_MS 250
/// How long a close we started may wait for the server's close frame, ms.
#define RDC__CLOSE_GRACE_MS 1000

typedef enum conn_state {
    CONN_RESOLVING,
    CONN_CONNECTING,
    CONN_HANDSHAKE,
    CONN_OPEN,
    CONN_DEAD, ///< Detached from the client; closing its handles.
} conn_state;

typedef struct rdc__conn {
    rdc_client* c;
    conn_state state;
    uv_getaddrinfo_t gai;
    uv_connect_t connect_req;
    uv_tcp_t tcp;
    bool resolving; ///< gai is in flight (its callback is owed).
    bool tcp_open;  ///< tcp was initialised (its close callback is owed).
    bool closing_sent;
    uint64_t deadline_ms; ///< Handshake, or the grace of a close we started.
    uint64_t last_rx_ms;
    uint64_t last_ping_ms;
    char key[25];
    rdc__hs hs;
    wslay_event_context_ptr ws;
    const uint8_t* rbuf; ///< Bytes read and not yet given to wslay.
    size_t rlen;
    uint8_t* read_buf;
    uint8_t* out; ///< Bytes wslay produced, not yet handed to uv_write.
    size_t out_len, out_cap;
    bool in_recv; ///< Inside wslay_event_recv(): flush when it returns.
    /// The reason of the server's close frame (RFC 6455 §5.5.1: at most 123
    /// bytes), control characters replaced by '?'; "" when none.
    char close_reason[124];
} rdc__conn;

typedef struct rdc__pending {
    struct rdc__pending* next;
    struct rdc__pending* prev;
    int64_t id;
    rdc_reply_cb cb;
    void* arg;
    uint64_t sent_ns;
    uint64_t deadline_ms; ///< 0: none.
    int sub;              ///< Subscription slot this (re)subscribes, or -1.
    uint32_t sub_gen;
} rdc__pending;

typedef struct rdc__sub {
    bool active;
    uint64_t world;
    rdc_format format;
    uint32_t rate_hz;
    uint32_t bytes_per_s; ///< Binary: a byte budget (interest management), 0: none.
    bool focus_set;       ///< rdc_set_focus() was called: sent again after each resubscribe.
    bool has_point;       ///< Its point (else no focus).
    double focus[3];      ///< m.
    double radius;        ///< m.
    rdc_reply_cb cb;
    void* arg;
    uint32_t gen; ///< Bumped when the slot is replaced or freed.
} rdc__sub;

struct rdc_client {
    uv_loop_t* loop;
    rdc_config cfg;
    char* url_text;
    char* token;
    rdc__url url;
    bool url_literal; ///< The host is an IP address: no resolution needed.
    struct sockaddr_storage addr;
    uv_timer_t tick;  ///< Housekeeping: deadlines, keep-alive, reply timeouts.
    uv_timer_t retry; ///< Backoff before the next attempt.
    int open_handles; ///< Timers not yet closed.
    int live_conns;   ///< Connections not yet freed (current and detached).
    rdc__conn* conn;  ///< The current attempt or connection, or NULL.
    bool connected;
    bool closing;
    bool handles_closing;
    uint32_t failures;
    uint32_t backoff_ms;
    int64_t next_id;
    rdc__pending* head;
    rdc__pending* tail;
    rdc__pending* dead_head; ///< Waiting to be failed with RDC_E_CLOSED.
    rdc__sub subs[RDC_MAX_SUBSCRIPTIONS];
    rdc__decoder dec;
    rdc_stats stats;
    uint8_t rnd[256];
    size_t rnd_left;
    uint64_t rnd_state; ///< Fallback when getrandom() fails.
    void (*done)(rdc_client*, void*);
    void* done_arg;
};

static void conn_fail(rdc__conn* k, int err, uint16_t close_code);
static void conn_flush(rdc__conn* k);
static void client_start_attempt(rdc_client* c);
static void client_maybe_free(rdc_client* c);

// ---------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------

const char* rdc_strerror(int err) {
    if (err == 0) {
        return "ok";
    }
#define RDC__ERR_MSG(name, value, msg)                                                             \
    if (err == (value)) {                                                                          \
        return msg;                                                                                \
    }
    RDC_ERRNO_MAP(RDC__ERR_MSG)
#undef RDC__ERR_MSG
    return uv_strerror(err);
}

const char* rdc_err_name(int err) {
    if (err == 0) {
        return "OK";
    }
#define RDC__ERR_NAME(name, value, msg)                                                            \
    if (err == (value)) {                                                                          \
        return "RDC_E_" #name;                                                                     \
    }
    RDC_ERRNO_MAP(RDC__ERR_NAME)
#undef RDC__ERR_NAME
    return uv_err_name(err);
}

// The code a reply carries for a failure that is rdc's, not the server's.
static const char* local_code(int err) {
    switch (err) {
    case RDC_E_DISCONNECTED:
        return "disconnected";
    case RDC_E_TIMEOUT:
        return "timeout";
    default:
        return "closed";
    }
}

// ---------------------------------------------------------------------------
// Randomness
// ---------------------------------------------------------------------------

// Fills buf with random bytes: getrandom() (the kernel's CSPRNG, which the
// masking key and the handshake nonce want, RFC 6455 §5.3 and §4.1), from a
// small pool so that a busy client does not make a system call per frame.
static void random_bytes(rdc_client* c, uint8_t* buf, size_t len) {
    while (len > 0) {
        if (c->rnd_left == 0) {
            ssize_t n = getrandom(c->rnd, sizeof c->rnd, 0);
            if (n == (ssize_t)sizeof c->rnd) {
                c->rnd_left = sizeof c->rnd;
            } else {
                // No getrandom() (an old kernel) or interrupted: splitmix64
                // seeded from the clock keeps the client working.
                c->rnd_state ^= uv_hrtime();
                for (size_t i = 0; i < sizeof c->rnd; i += 8) {
                    uint64_t z = (c->rnd_state += 0x9e3779b97f4a7c15ull);
                    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
                    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
                    z ^= z >> 31;
                    memcpy(c->rnd + i, &z, 8);
                }
                c->rnd_left = sizeof c->rnd;
            }
        }
        size_t take = len < c->rnd_left ? len : c->rnd_left;
        memcpy(buf, c->rnd + sizeof c->rnd - c->rnd_left, take);
        c->rnd_left -= take;
        buf += take;
        len -= take;
    }
}

static uint32_t random_u32(rdc_client* c) {
    uint8_t b[4];
    random_bytes(c, b, sizeof b);
    return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

// ---------------------------------------------------------------------------
// Config and opening
// ---------------------------------------------------------------------------

rdc_config rdc_config_default(void) {
    rdc_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.url = "ws://127.0.0.1:8080/ws";
    cfg.reconnect = true;
    cfg.backoff_initial_ms = 100;
    cfg.backoff_max_ms = 5000;
    cfg.connect_timeout_ms = 10000;
    cfg.reply_timeout_ms = 30000;
    cfg.keepalive_ms = 15000;
    cfg.max_message_bytes = 64u * 1024 * 1024;
    cfg.max_send_queue_bytes = 8u * 1024 * 1024;
    cfg.read_buffer_bytes = 64u * 1024;
    cfg.decode_binary = true;
    cfg.describe_characters = true;
    cfg.cookie = RDC__COOKIE;
    return cfg;
}

static void on_tick(uv_timer_t* t);
static void on_retry(uv_timer_t* t);

int rdc_open(uv_loop_t* loop, const rdc_config* cfg, rdc_client** out) {
    if (loop == NULL || cfg == NULL || out == NULL || cfg->cookie != RDC__COOKIE ||
        cfg->backoff_initial_ms == 0 || cfg->backoff_max_ms < cfg->backoff_initial_ms ||
        cfg->connect_timeout_ms == 0 || cfg->read_buffer_bytes < 1024 ||
        cfg->max_message_bytes < 1024) {
        return RDC_E_CONFIG;
    }
    // It goes into a header line: the token's alphabet keeps it one.
    if (cfg->token != NULL && cfg->token[0] != '\0' && !rdc_token_valid(cfg->token)) {
        return RDC_E_CONFIG;
    }
    rdc__url url;
    if (rdc__url_parse(cfg->url, &url) != 0) {
        return RDC_E_URL;
    }
    rdc_client* c = calloc(1, sizeof *c);
    if (c == NULL) {
        return UV_ENOMEM;
    }
    c->loop = loop;
    c->cfg = *cfg;
    c->url = url;
    c->url_text = cfg->url != NULL ? strdup(cfg->url) : NULL;
    c->token = cfg->token != NULL ? strdup(cfg->token) : NULL;
    if (c->url_text == NULL || (cfg->token != NULL && c->token == NULL)) {
        free(c->url_text);
        free(c->token);
        free(c);
        return UV_ENOMEM;
    }
    c->cfg.url = c->url_text;
    c->cfg.token = c->token;
    c->next_id = 1;
    c->backoff_ms = cfg->backoff_initial_ms;
    c->rnd_state = uv_hrtime();
    struct sockaddr_in* a4 = (struct sockaddr_in*)&c->addr;
    struct sockaddr_in6* a6 = (struct sockaddr_in6*)&c->addr;
    c->url_literal = url.ipv6 ? uv_ip6_addr(url.host, url.port, a6) == 0
                              : uv_ip4_addr(url.host, url.port, a4) == 0;
    uv_timer_init(loop, &c->tick);
    uv_timer_init(loop, &c->retry);
    c->tick.data = c->retry.data = c;
    c->open_handles = 2;
    uv_timer_start(&c->tick, on_tick, RDC__TICK_MS, RDC__TICK_MS);
    // The first attempt starts from the loop, so that its outcome never
    // reaches on_state from inside this call.
    uv_timer_start(&c->retry, on_retry, 0, 0);
    *out = c;
    return 0;
}

bool rdc_is_connected(const rdc_client* c) {
    return c != NULL && c->connected;
}

void* rdc_user(const rdc_client* c) {
    return c->cfg.user;
}

void rdc_get_stats(const rdc_client* c, rdc_stats* out) {
    *out = c->stats;
}

// ---------------------------------------------------------------------------
// Pending commands
// ---------------------------------------------------------------------------

static void pending_unlink(rdc_client* c, rdc__pending* p) {
    if (p->prev != NULL) {
        p->prev->next = p->next;
    } else {
        c->head = p->next;
    }
    if (p->next != NULL) {
        p->next->prev = p->prev;
    } else {
        c->tail = p->prev;
    }
    p->next = p->prev = NULL;
}

static void pending_append(rdc_client* c, rdc__pending* p) {
    p->prev = c->tail;
    p->next = NULL;
    if (c->tail != NULL) {
        c->tail->next = p;
    } else {
        c->head = p;
    }
    c->tail = p;
}

static void sub_reply(rdc_client* c, rdc__pending* p, const rdc_reply* r);

// Calls a pending command's callback and frees it (already unlinked).
static void pending_finish(rdc_client* c, rdc__pending* p, rdc_reply* r) {
    r->id = p->id;
    r->rtt_ms = (double)(uv_hrtime() - p->sent_ns) / 1e6;
    if (p->sub >= 0) {
        sub_reply(c, p, r);
    } else if (p->cb != NULL) {
        p->cb(c, r, p->arg);
    }
    free(p);
}

// Fails a detached list of commands with `err`.
static void pending_fail_list(rdc_client* c, rdc__pending* list, int err) {
    while (list != NULL) {
        rdc__pending* p = list;
        list = p->next;
        p->next = p->prev = NULL;
        rdc_reply r;
        memset(&r, 0, sizeof r);
        r.status = err;
        r.code = local_code(err);
        r.message = rdc_strerror(err);
        pending_finish(c, p, &r);
    }
}

// Detaches every pending command (so callbacks that send more cannot extend
// the list being failed).
static rdc__pending* pending_take_all(rdc_client* c) {
    rdc__pending* list = c->head;
    c->head = c->tail = NULL;
    return list;
}

// ---------------------------------------------------------------------------
// Subscriptions
// ---------------------------------------------------------------------------

static int find_sub(const rdc_client* c, uint64_t world) {
    for (int i = 0; i < RDC_MAX_SUBSCRIPTIONS; ++i) {
        if (c->subs[i].active && c->subs[i].world == world) {
            return i;
        }
    }
    return -1;
}

// Sends slot s's set_focus; cb (may be NULL) gets its reply.
static int focus_send(rdc_client* c, const rdc__sub* s, rdc_reply_cb cb, void* arg) {
    if (!s->has_point) {
        return rdc_sendf(c, cb, arg, "{\"op\":\"set_focus\",\"world\":%llu}",
                         (unsigned long long)s->world);
    }
    return rdc_sendf(c, cb, arg,
                     "{\"op\":\"set_focus\",\"world\":%llu,\"point\":[%.9g,%.9g,%.9g],"
                     "\"radius\":%.9g}",
                     (unsigned long long)s->world, s->focus[0], s->focus[1], s->focus[2],
                     s->radius);
}

static void sub_reply(rdc_client* c, rdc__pending* p, const rdc_reply* r) {
    rdc__sub* s = &c->subs[p->sub];
    bool current = s->active && s->gen == p->sub_gen;
    if (!current) {
        return; // replaced or forgotten since: the reply is of no interest
    }
    rdc_reply_cb cb = s->cb;
    void* arg = s->arg;
    if (r->status == 0) {
        rdc__decoder_start_world(&c->dec, s->world, r->has_tick ? r->tick : 0);
        // The focus belongs to the connection at the server: say it again.
        if (s->focus_set) {
            focus_send(c, s, NULL, NULL);
        }
    } else if (r->status == RDC_E_SERVER) {
        // The server refused it (no such world any more, ...): retrying
        // after the next reconnect would only fail again.
        s->active = false;
        s->gen++;
        rdc__decoder_forget_world(&c->dec, s->world);
    }
    if (cb != NULL) {
        cb(c, r, arg);
    }
}

static int send_object(rdc_client* c, cJSON* obj, rdc_reply_cb cb, void* arg, int sub,
                       int64_t* id_out);

// Sends subscribe for slot i.
static int sub_send(rdc_client* c, int i) {
    rdc__sub* s = &c->subs[i];
    cJSON* o = cJSON_CreateObject();
    if (o == NULL) {
        return UV_ENOMEM;
    }
    cJSON_AddStringToObject(o, "op", "subscribe");
    cJSON_AddNumberToObject(o, "world", (double)s->world);
    cJSON_AddStringToObject(o, "format", s->format == RDC_FORMAT_BINARY ? "binary" : "json");
    cJSON_AddNumberToObject(o, "rate_hz", s->rate_hz);
    if (s->bytes_per_s > 0) {
        cJSON_AddNumberToObject(o, "bytes_per_s", s->bytes_per_s);
    }
    rdc__decoder_forget_world(&c->dec, s->world);
    return send_object(c, o, NULL, NULL, i, NULL);
}

static int subscribe(rdc_client* c, uint64_t world, rdc_format format, uint32_t rate_hz,
                     uint32_t bytes_per_s, rdc_reply_cb cb, void* arg) {
    if (c->closing) {
        return RDC_E_CLOSED;
    }
    if ((format != RDC_FORMAT_JSON && format != RDC_FORMAT_BINARY) || rate_hz < 1 ||
        rate_hz > 240 || world == 0 || (double)world > 9007199254740991.0 ||
        (bytes_per_s != 0 && (bytes_per_s < 1000 || bytes_per_s > 100000000))) {
        return RDC_E_CONFIG;
    }
    int i = find_sub(c, world);
    if (i < 0) {
        for (int k = 0; k < RDC_MAX_SUBSCRIPTIONS && i < 0; ++k) {
            if (!c->subs[k].active) {
                i = k;
            }
        }
        if (i < 0) {
            return RDC_E_TOO_MANY;
        }
    }
    rdc__sub saved = c->subs[i];
    rdc__sub* s = &c->subs[i];
    if (!s->active || s->world != world) {
        s->focus_set = false; // a slot taken afresh: no focus yet
    }
    s->active = true;
    s->world = world;
    s->format = format;
    s->rate_hz = rate_hz;
    s->bytes_per_s = bytes_per_s;
    s->cb = cb;
    s->arg = arg;
    s->gen++;
    if (!c->connected) {
        return 0; // sent once connected
    }
    int rc = sub_send(c, i);
    if (rc != 0) {
        saved.gen = s->gen + 1;
        *s = saved; // as it was: nothing is remembered
    }
    return rc;
}

int rdc_subscribe(rdc_client* c, uint64_t world, rdc_format format, uint32_t rate_hz,
                  rdc_reply_cb cb, void* arg) {
    return subscribe(c, world, format, rate_hz, 0, cb, arg);
}

int rdc_subscribe_budget(rdc_client* c, uint64_t world, uint32_t rate_hz, uint32_t bytes_per_s,
                         rdc_reply_cb cb, void* arg) {
    if (bytes_per_s == 0) {
        return RDC_E_CONFIG;
    }
    return subscribe(c, world, RDC_FORMAT_BINARY, rate_hz, bytes_per_s, cb, arg);
}

int rdc_set_focus(rdc_client* c, uint64_t world, const double* point, double radius,
                  rdc_reply_cb cb, void* arg) {
    if (c->closing) {
        return RDC_E_CLOSED;
    }
    int i = find_sub(c, world);
    if (i < 0 || !(radius > 0 && radius <= 2000)) {
        return RDC_E_CONFIG;
    }
    for (int k = 0; point != NULL && k < 3; ++k) {
        if (!(point[k] >= -1000 && point[k] <= 1000)) {
            return RDC_E_CONFIG;
        }
    }
    rdc__sub* s = &c->subs[i];
    s->focus_set = true;
    s->has_point = point != NULL;
    for (int k = 0; k < 3; ++k) {
        s->focus[k] = point != NULL ? point[k] : 0;
    }
    s->radius = radius;
    if (!c->connected) {
        return 0; // sent after the subscribe, once connected
    }
    return focus_send(c, s, cb, arg);
}

int rdc_unsubscribe(rdc_client* c, uint64_t world, rdc_reply_cb cb, void* arg) {
    if (c->closing) {
        return RDC_E_CLOSED;
    }
    int i = find_sub(c, world);
    if (i >= 0) {
        c->subs[i].active = false;
        c->subs[i].gen++;
        rdc__decoder_forget_world(&c->dec, world);
    }
    if (!c->connected) {
        return RDC_E_NOT_CONNECTED;
    }
    return rdc_sendf(c, cb, arg, "{\"op\":\"unsubscribe\",\"world\":%llu}",
                     (unsigned long long)world);
}

// ---------------------------------------------------------------------------
// Sending
// ---------------------------------------------------------------------------

static size_t queued_bytes(const rdc__conn* k) {
    return uv_stream_get_write_queue_size((const uv_stream_t*)&k->tcp) +
           wslay_event_get_queued_msg_length(k->ws) + k->out_len;
}

// Queues a text message on the open connection. Returns 0 or an error.
static int queue_text(rdc_client* c, const char* text, size_t len) {
    rdc__conn* k = c->conn;
    if (queued_bytes(k) + len > c->cfg.max_send_queue_bytes) {
        return RDC_E_QUEUE_FULL;
    }
    struct wslay_event_msg msg = {WSLAY_TEXT_FRAME, (const uint8_t*)text, len};
    if (wslay_event_queue_msg(k->ws, &msg) != 0) {
        return UV_ENOMEM;
    }
    conn_flush(k);
    return 0;
}

// Sets obj's id, sends it and records the pending command. Takes obj.
// Turns the integers of magnitude at most 2^53 under a container (object
// or array) into raw items holding their exact decimal text. Returns false
// when out of memory.
static bool exact_integers(cJSON* container) {
    cJSON* v;
    cJSON_ArrayForEach(v, container) {
        if (cJSON_IsObject(v) || cJSON_IsArray(v)) {
            if (!exact_integers(v)) {
                return false;
            }
            continue;
        }
        double d = v->valuedouble;
        // Not an integer, or beyond where doubles hold every one (the range
        // check comes first: it makes the conversion defined, and NaN fails it).
        if (!cJSON_IsNumber(v) || !(d >= -9007199254740992.0 && d <= 9007199254740992.0) ||
            d != (double)(long long)d) {
            continue;
        }
        char digits[24];
        int n = snprintf(digits, sizeof digits, "%lld", (long long)d);
        char* raw = cJSON_malloc((size_t)n + 1);
        if (raw == NULL) {
            return false;
        }
        memcpy(raw, digits, (size_t)n + 1);
        // The key's flag stays; the number becomes raw text.
        v->type = cJSON_Raw | (v->type & cJSON_StringIsConst);
        v->valuestring = raw;
    }
    return true;
}

char* rdc_json_print(const cJSON* o) {
    if (o == NULL) {
        return NULL;
    }
    if (!cJSON_IsObject(o) && !cJSON_IsArray(o)) {
        return cJSON_PrintUnformatted(o);
    }
    cJSON* copy = cJSON_Duplicate(o, true);
    char* text = copy != NULL && exact_integers(copy) ? cJSON_PrintUnformatted(copy) : NULL;
    cJSON_Delete(copy);
    return text;
}

static int send_object(rdc_client* c, cJSON* obj, rdc_reply_cb cb, void* arg, int sub,
                       int64_t* id_out) {
    int rc = 0;
    char* text = NULL;
    rdc__pending* p = NULL;
    if (!c->connected) {
        rc = c->closing ? RDC_E_CLOSED : RDC_E_NOT_CONNECTED;
        goto out;
    }
    if (!cJSON_IsObject(obj) || !cJSON_IsString(cJSON_GetObjectItemCaseSensitive(obj, "op"))) {
        rc = RDC_E_BAD_COMMAND;
        goto out;
    }
    int64_t id = c->next_id;
    cJSON_DeleteItemFromObjectCaseSensitive(obj, "id");
    if (cJSON_AddNumberToObject(obj, "id", (double)id) == NULL ||
        (text = rdc_json_print(obj)) == NULL || (p = calloc(1, sizeof *p)) == NULL) {
        rc = UV_ENOMEM;
        goto out;
    }
    rc = queue_text(c, text, strlen(text));
    if (rc == 0 && !c->connected) {
        // Writing failed at once (out of memory) and dropped the connection,
        // failing every pending command: one recorded now would wait for a
        // reply that cannot come, or outlive the client after an rdc_close()
        // from on_state.
        rc = c->closing ? RDC_E_CLOSED : RDC_E_NOT_CONNECTED;
    }
    if (rc != 0) {
        goto out;
    }
    c->next_id++;
    c->stats.commands++;
    p->id = id;
    p->cb = cb;
    p->arg = arg;
    p->sub = sub;
    p->sub_gen = sub >= 0 ? c->subs[sub].gen : 0;
    p->sent_ns = uv_hrtime();
    p->deadline_ms = c->cfg.reply_timeout_ms > 0 ? uv_now(c->loop) + c->cfg.reply_timeout_ms : 0;
    pending_append(c, p);
    p = NULL;
    if (id_out != NULL) {
        *id_out = id;
    }
out:
    free(p);
    cJSON_free(text);
    cJSON_Delete(obj);
    return rc;
}

int rdc_send_text(rdc_client* c, const char* json, size_t len, rdc_reply_cb cb, void* arg,
                  int64_t* id_out) {
    if (!c->connected) {
        return c->closing ? RDC_E_CLOSED : RDC_E_NOT_CONNECTED;
    }
    cJSON* obj = cJSON_ParseWithLength(json, len);
    if (obj == NULL) {
        return RDC_E_BAD_COMMAND;
    }
    return send_object(c, obj, cb, arg, -1, id_out);
}

int rdc_send(rdc_client* c, const cJSON* cmd, rdc_reply_cb cb, void* arg, int64_t* id_out) {
    if (!c->connected) {
        return c->closing ? RDC_E_CLOSED : RDC_E_NOT_CONNECTED;
    }
    if (!cJSON_IsObject(cmd)) {
        return RDC_E_BAD_COMMAND;
    }
    cJSON* obj = cJSON_Duplicate(cmd, true);
    if (obj == NULL) {
        return UV_ENOMEM;
    }
    return send_object(c, obj, cb, arg, -1, id_out);
}

int rdc_vsendf(rdc_client* c, rdc_reply_cb cb, void* arg, const char* fmt, va_list ap) {
    char small[512];
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    if (n < 0) {
        va_end(ap2);
        return RDC_E_BAD_COMMAND;
    }
    char* text = small;
    if ((size_t)n >= sizeof small) {
        text = malloc((size_t)n + 1);
        if (text == NULL) {
            va_end(ap2);
            return UV_ENOMEM;
        }
        vsnprintf(text, (size_t)n + 1, fmt, ap2);
    }
    va_end(ap2);
    int rc = rdc_send_text(c, text, (size_t)n, cb, arg, NULL);
    if (text != small) {
        free(text);
    }
    return rc;
}

int rdc_sendf(rdc_client* c, rdc_reply_cb cb, void* arg, const char* fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int rc = rdc_vsendf(c, cb, arg, fmt, ap);
    va_end(ap);
    return rc;
}

// Queues a binary message (acks) on the open connection.
static int queue_binary(rdc_client* c, const uint8_t* data, size_t len) {
    rdc__conn* k = c->conn;
    if (queued_bytes(k) + len > c->cfg.max_send_queue_bytes) {
        return RDC_E_QUEUE_FULL;
    }
    struct wslay_event_msg msg = {WSLAY_BINARY_FRAME, data, len};
    if (wslay_event_queue_msg(k->ws, &msg) != 0) {
        return UV_ENOMEM;
    }
    conn_flush(k);
    return 0;
}

// ---------------------------------------------------------------------------
// Receiving
// ---------------------------------------------------------------------------

static uint64_t json_u64_or0(const cJSON* o, const char* key) {
    const cJSON* v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) && v->valuedouble >= 0 && v->valuedouble <= 9007199254740991.0
               ? (uint64_t)v->valuedouble
               : 0;
}

static void handle_reply(rdc_client* c, const cJSON* root, const cJSON* re, const char* text,
                         size_t len) {
    // "re": null answers a command without an id: never one of ours. Any
    // other number must be one of the ids handed out (1 .. next_id - 1)
    // before it is converted: the server is not trusted to send one that
    // fits an int64_t.
    if (!cJSON_IsNumber(re) || !(re->valuedouble >= 1) || re->valuedouble >= (double)c->next_id) {
        return;
    }
    int64_t id = (int64_t)re->valuedouble;
    rdc__pending* p = c->head;
    while (p != NULL && p->id != id) {
        p = p->next;
    }
    if (p == NULL) {
        return; // timed out already
    }
    pending_unlink(c, p);
    c->stats.replies++;
    rdc_reply r;
    memset(&r, 0, sizeof r);
    r.json = root;
    r.text = text;
    r.len = len;
    const cJSON* tick = cJSON_GetObjectItemCaseSensitive(root, "tick");
    if (cJSON_IsNumber(tick)) {
        r.has_tick = true;
        r.tick = json_u64_or0(root, "tick");
    }
    const cJSON* err = cJSON_GetObjectItemCaseSensitive(root, "error");
    if (err != NULL) {
        r.status = RDC_E_SERVER;
        r.code = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(err, "code"));
        r.message = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(err, "message"));
        r.code = r.code != NULL ? r.code : "internal";
        r.message = r.message != NULL ? r.message : "";
    } else if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(root, "ok"))) {
        // Neither "ok": true nor an error (PROTOCOL.md §2): the server
        // answered, but not in the protocol; that is no success.
        r.status = RDC_E_PROTOCOL;
        r.code = "malformed_reply";
        r.message = "the reply has neither \"ok\": true nor an \"error\"";
    }
    pending_finish(c, p, &r);
}

// The reply to a describe rdc sent for a character's bone names.
typedef struct describe_ctx {
    uint64_t world;
    uint64_t entity;
} describe_ctx;

static void on_describe(rdc_client* c, const rdc_reply* r, void* arg) {
    describe_ctx* dx = arg;
    if (r->status != RDC_E_CLOSED) {
        rdc__decoder_names(&c->dec, dx->world, dx->entity, r->status == 0 ? r->json : NULL);
    }
    free(dx);
}

// Sends what the decoder asked for: the ack frame (PROTOCOL.md §5.2), a
// resync, describes. Failures to queue are left to the next snapshot (the
// server codes against the newest ack it has; a lost resync is asked again).
static void send_after_snapshot(rdc_client* c, const rdc__ack* ack) {
    if (ack->wanted && c->connected) {
        uint8_t frame[RDP_ACK_BYTES];
        rdp_ack_write(ack->world, ack->tick, frame);
        if (queue_binary(c, frame, sizeof frame) == 0) {
            c->stats.acks++;
        }
    }
    if (ack->resync && c->connected) {
        c->stats.resyncs++;
        rdc_sendf(c, NULL, NULL, "{\"op\":\"resync\",\"world\":%llu}",
                  (unsigned long long)ack->world);
    }
    for (uint32_t i = 0; i < ack->describe_count; ++i) {
        describe_ctx* dx = malloc(sizeof *dx);
        if (dx == NULL) {
            rdc__decoder_names(&c->dec, ack->world, ack->describe[i], NULL);
            continue;
        }
        dx->world = ack->world;
        dx->entity = ack->describe[i];
        if (rdc_sendf(c, on_describe, dx, "{\"op\":\"describe\",\"world\":%llu,\"entity\":%llu}",
                      (unsigned long long)ack->world, (unsigned long long)ack->describe[i]) != 0) {
            rdc__decoder_names(&c->dec, ack->world, ack->describe[i], NULL);
            free(dx);
        }
    }
}

static void deliver_snapshot(rdc_client* c, const uint8_t* data, size_t len, bool binary,
                             const cJSON* json) {
    rdc_snapshot s;
    rdc__ack ack;
    if (binary) {
        c->stats.binary_frames++;
    }
    int rc = rdc__decode_snapshot(&c->dec, data, len, binary, c->cfg.decode_binary,
                                  c->cfg.describe_characters, json, &s, &ack);
    // Acks first: the sooner the server has one, the sooner deltas shrink.
    send_after_snapshot(c, &ack);
    if (rc != 0) {
        c->stats.bad_snapshots++;
        return;
    }
    c->stats.snapshots++;
    if (c->cfg.on_snapshot != NULL) {
        // The callback may drop the connection or the subscription, which
        // forgets the world's baselines and names: s points into them.
        rdc__decoder_hold(&c->dec);
        c->cfg.on_snapshot(c, &s, c->cfg.user);
        rdc__decoder_release(&c->dec);
    }
}

static void handle_message(rdc_client* c, const uint8_t* data, size_t len, bool binary) {
    c->stats.messages_rx++;
    if (binary) {
        deliver_snapshot(c, data, len, true, NULL);
        return;
    }
    const char* end = NULL;
    cJSON* root = cJSON_ParseWithLengthOpts((const char*)data, len, &end, false);
    // cJSON stops at the end of the first value: what follows it must be
    // white space, or the message is not JSON.
    while (root != NULL && end < (const char*)data + len) {
        if (*end != ' ' && *end != '\t' && *end != '\r' && *end != '\n') {
            cJSON_Delete(root);
            root = NULL;
        }
        end++;
    }
    if (!cJSON_IsObject(root)) {
        cJSON_Delete(root);
        return; // not ours to judge further: ignored
    }
    const cJSON* re = cJSON_GetObjectItemCaseSensitive(root, "re");
    const char* ev = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(root, "ev"));
    if (re != NULL) {
        handle_reply(c, root, re, (const char*)data, len);
    } else if (ev != NULL && strcmp(ev, "snapshot") == 0) {
        deliver_snapshot(c, data, len, false, root);
    } else if (ev != NULL) {
        if (strcmp(ev, "metrics") == 0) {
            rdc__decoder_metrics(&c->dec, root);
        } else if (strcmp(ev, "world_destroyed") == 0) {
            // The server has ended the subscription: do not ask again after
            // a reconnect.
            uint64_t world = json_u64_or0(root, "world");
            int i = world != 0 ? find_sub(c, world) : -1;
            if (i >= 0) {
                c->subs[i].active = false;
                c->subs[i].gen++;
                rdc__decoder_forget_world(&c->dec, world);
            }
        }
        if (c->cfg.on_event == NULL) {
            cJSON_Delete(root);
            return;
        }
        rdc_event e;
        e.name = ev;
        e.world = json_u64_or0(root, "world");
        e.tick = json_u64_or0(root, "tick");
        e.entity = json_u64_or0(root, "entity");
        e.json = root;
        e.text = (const char*)data;
        e.len = len;
        c->cfg.on_event(c, &e, c->cfg.user);
    }
    cJSON_Delete(root);
}

// ---------------------------------------------------------------------------
// wslay glue
// ---------------------------------------------------------------------------

static ssize_t ws_recv_cb(wslay_event_context_ptr ctx, uint8_t* buf, size_t len, int flags,
                          void* user) {
    (void)flags;
    rdc__conn* k = user;
    if (k->rlen == 0) {
        // Not an error: wslay stops and waits for the next read.
        wslay_event_set_error(ctx, WSLAY_ERR_WOULDBLOCK);
        return -1;
    }
    size_t n = len < k->rlen ? len : k->rlen;
    memcpy(buf, k->rbuf, n);
    k->rbuf += n;
    k->rlen -= n;
    return (ssize_t)n;
}

static ssize_t ws_send_cb(wslay_event_context_ptr ctx, const uint8_t* data, size_t len, int flags,
                          void* user) {
    (void)flags;
    rdc__conn* k = user;
    if (k->out_len + len > k->out_cap) {
        size_t cap = k->out_cap == 0 ? 4096 : k->out_cap;
        while (cap < k->out_len + len) {
            cap *= 2;
        }
        uint8_t* grown = realloc(k->out, cap);
        if (grown == NULL) {
            wslay_event_set_error(ctx, WSLAY_ERR_CALLBACK_FAILURE);
            return -1;
        }
        k->out = grown;
        k->out_cap = cap;
    }
    memcpy(k->out + k->out_len, data, len);
    k->out_len += len;
    return (ssize_t)len;
}

static int ws_genmask_cb(wslay_event_context_ptr ctx, uint8_t* buf, size_t len, void* user) {
    (void)ctx;
    rdc__conn* k = user;
    random_bytes(k->c, buf, len);
    return 0;
}

static void ws_msg_cb(wslay_event_context_ptr ctx, const struct wslay_event_on_msg_recv_arg* arg,
                      void* user) {
    (void)ctx;
    rdc__conn* k = user;
    rdc_client* c = k->c;
    if (k->state != CONN_OPEN || c == NULL || c->closing) {
        return;
    }
    if (arg->opcode == WSLAY_TEXT_FRAME || arg->opcode == WSLAY_BINARY_FRAME) {
        handle_message(c, arg->msg, arg->msg_length, arg->opcode == WSLAY_BINARY_FRAME);
    } else if (arg->opcode == WSLAY_CONNECTION_CLOSE && arg->msg_length > 2) {
        // The payload is the status code (2 bytes), then the reason.
        size_t n = arg->msg_length - 2;
        n = n < sizeof k->close_reason - 1 ? n : sizeof k->close_reason - 1;
        for (size_t i = 0; i < n; ++i) {
            uint8_t b = arg->msg[2 + i];
            k->close_reason[i] = b < 0x20 || b == 0x7f ? '?' : (char)b;
        }
        k->close_reason[n] = '\0';
    }
}

static const struct wslay_event_callbacks ws_callbacks = {
    .recv_callback = ws_recv_cb,
    .send_callback = ws_send_cb,
    .genmask_callback = ws_genmask_cb,
    .on_msg_recv_callback = ws_msg_cb,
};

// ---------------------------------------------------------------------------
// Connection I/O
// ---------------------------------------------------------------------------

typedef struct write_req {
    uv_write_t req;
    char data[];
} write_req;

static void on_write(uv_write_t* req, int status) {
    rdc__conn* k = req->data;
    free(req);
    if (status < 0 && status != UV_ECANCELED) {
        conn_fail(k, status, 0);
    }
}

static int conn_write(rdc__conn* k, const void* data, size_t len) {
    write_req* w = malloc(sizeof *w + len);
    if (w == NULL) {
        return UV_ENOMEM;
    }
    memcpy(w->data, data, len);
    w->req.data = k;
    uv_buf_t buf = uv_buf_init(w->data, (unsigned)len);
    int rc = uv_write(&w->req, (uv_stream_t*)&k->tcp, &buf, 1, on_write);
    if (rc != 0) {
        free(w);
        return rc;
    }
    if (k->c != NULL) {
        k->c->stats.bytes_tx += len;
    }
    return 0;
}

// Lets wslay frame what is queued and writes it; finishes the connection
// once both close frames have passed.
static void conn_flush(rdc__conn* k) {
    if (k->state != CONN_OPEN || k->in_recv) {
        return;
    }
    if (wslay_event_want_write(k->ws) && wslay_event_send(k->ws) != 0) {
        conn_fail(k, RDC_E_PROTOCOL, 0);
        return;
    }
    if (k->out_len > 0) {
        int rc = conn_write(k, k->out, k->out_len);
        k->out_len = 0;
        if (rc != 0) {
            conn_fail(k, rc, 0);
            return;
        }
    }
    if (!wslay_event_want_read(k->ws) && !wslay_event_want_write(k->ws)) {
        // The closing handshake is over (or reading failed).
        uint16_t code =
            wslay_event_get_close_received(k->ws) ? wslay_event_get_status_code_received(k->ws) : 0;
        conn_fail(k, 0, code == WSLAY_CODE_NO_STATUS_RCVD ? 0 : code);
    }
}

static void on_tcp_closed(uv_handle_t* h) {
    rdc__conn* k = h->data;
    rdc_client* c = k->c;
    if (k->ws != NULL) {
        wslay_event_context_free(k->ws);
    }
    free(k->read_buf);
    free(k->out);
    free(k);
    c->live_conns--;
    client_maybe_free(c);
}

// Frees a connection whose TCP handle was never initialised.
static void conn_free_now(rdc__conn* k) {
    rdc_client* c = k->c;
    free(k);
    c->live_conns--;
    client_maybe_free(c);
}

static void client_conn_lost(rdc_client* c, rdc__conn* k, int err, uint16_t close_code);

// Ends a connection or an attempt: detaches it from the client (which then
// reports the loss and schedules a retry) and closes its handles. The
// connection is freed in the close callback. Idempotent.
static void conn_fail(rdc__conn* k, int err, uint16_t close_code) {
    if (k->state == CONN_DEAD) {
        return;
    }
    k->state = CONN_DEAD;
    if (k->tcp_open && !uv_is_closing((uv_handle_t*)&k->tcp)) {
        uv_close((uv_handle_t*)&k->tcp, on_tcp_closed);
    } else if (k->resolving) {
        uv_cancel((uv_req_t*)&k->gai); // its callback frees the connection
    }
    rdc_client* c = k->c;
    if (c->conn == k) {
        c->conn = NULL;
        client_conn_lost(c, k, err, close_code);
    }
}

static void on_alloc(uv_handle_t* h, size_t suggested, uv_buf_t* buf) {
    (void)suggested;
    rdc__conn* k = h->data;
    *buf = uv_buf_init((char*)k->read_buf, (unsigned)k->c->cfg.read_buffer_bytes);
}

static void client_opened(rdc_client* c);

static void feed_ws(rdc__conn* k, const uint8_t* data, size_t len) {
    k->rbuf = data;
    k->rlen = len;
    k->in_recv = true;
    int rc = wslay_event_recv(k->ws);
    k->in_recv = false;
    k->rbuf = NULL;
    k->rlen = 0;
    if (k->state != CONN_OPEN) {
        return; // dropped from a callback
    }
    if (rc != 0) {
        // A framing violation or a message beyond max_message_bytes: wslay
        // has queued a close (1002/1009); send it and stop.
        conn_flush(k);
        conn_fail(k, RDC_E_PROTOCOL, 0);
        return;
    }
    conn_flush(k);
}

static void on_read(uv_stream_t* stream, ssize_t nread, const uv_buf_t* buf) {
    rdc__conn* k = stream->data;
    if (k->state == CONN_DEAD) {
        return;
    }
    if (nread < 0) {
        conn_fail(k, (int)nread, 0);
        return;
    }
    if (nread == 0) {
        return; // EAGAIN: not EOF
    }
    rdc_client* c = k->c;
    c->stats.bytes_rx += (uint64_t)nread;
    k->last_rx_ms = uv_now(c->loop);
    const uint8_t* data = (const uint8_t*)buf->base;
    size_t len = (size_t)nread;
    if (k->state == CONN_HANDSHAKE) {
        size_t used = 0;
        int rc = rdc__hs_feed(&k->hs, data, len, &used);
        if (rc == 0) {
            return;
        }
        if (rc < 0) {
            conn_fail(k, RDC_E_HANDSHAKE, 0);
            return;
        }
        if (wslay_event_context_client_init(&k->ws, &ws_callbacks, k) != 0) {
            conn_fail(k, UV_ENOMEM, 0);
            return;
        }
        wslay_event_config_set_max_recv_msg_length(k->ws, c->cfg.max_message_bytes);
        k->state = CONN_OPEN;
        client_opened(c);
        if (k->state != CONN_OPEN) {
            return;
        }
        data += used;
        len -= used;
    }
    if (len > 0) {
        feed_ws(k, data, len);
    }
}

static void on_connect(uv_connect_t* req, int status) {
    rdc__conn* k = req->data;
    if (k->state == CONN_DEAD) {
        return;
    }
    if (status < 0) {
        conn_fail(k, status, 0);
        return;
    }
    rdc_client* c = k->c;
    uv_tcp_nodelay(&k->tcp, 1); // commands are small and latency matters
    uint8_t nonce[16];
    random_bytes(c, nonce, sizeof nonce);
    rdc__ws_key(nonce, k->key);
    rdc__hs_init(&k->hs, k->key);
    char req_text[2048];
    size_t n = rdc__handshake_request(&c->url, k->key, c->token, req_text, sizeof req_text);
    k->read_buf = malloc(c->cfg.read_buffer_bytes);
    if (n == 0 || k->read_buf == NULL) {
        conn_fail(k, n == 0 ? RDC_E_URL : UV_ENOMEM, 0);
        return;
    }
    k->state = CONN_HANDSHAKE;
    int rc = conn_write(k, req_text, n);
    if (rc == 0) {
        rc = uv_read_start((uv_stream_t*)&k->tcp, on_alloc, on_read);
    }
    if (rc != 0) {
        conn_fail(k, rc, 0);
    }
}

static void conn_connect(rdc__conn* k, const struct sockaddr* addr) {
    rdc_client* c = k->c;
    int rc = uv_tcp_init(c->loop, &k->tcp);
    if (rc != 0) {
        conn_fail(k, rc, 0);
        conn_free_now(k);
        return;
    }
    k->tcp_open = true;
    k->tcp.data = k;
    k->connect_req.data = k;
    k->state = CONN_CONNECTING;
    rc = uv_tcp_connect(&k->connect_req, &k->tcp, addr, on_connect);
    if (rc != 0) {
        conn_fail(k, rc, 0);
    }
}

static void on_resolved(uv_getaddrinfo_t* req, int status, struct addrinfo* res) {
    rdc__conn* k = req->data;
    k->resolving = false;
    if (k->state == CONN_DEAD) {
        uv_freeaddrinfo(res);
        conn_free_now(k); // abandoned while resolving
        return;
    }
    if (status < 0 || res == NULL) {
        uv_freeaddrinfo(res);
        conn_fail(k, status < 0 ? status : UV_EAI_NONAME, 0);
        conn_free_now(k);
        return;
    }
    struct sockaddr_storage addr;
    memcpy(&addr, res->ai_addr, res->ai_addrlen);
    uv_freeaddrinfo(res);
    conn_connect(k, (const struct sockaddr*)&addr);
}

// ---------------------------------------------------------------------------
// The client's connection life
// ---------------------------------------------------------------------------

static void client_start_attempt(rdc_client* c) {
    rdc__conn* k = calloc(1, sizeof *k);
    if (k == NULL) {
        // Try again after the backoff, as for any failed attempt.
        client_conn_lost(c, NULL, UV_ENOMEM, 0);
        return;
    }
    k->c = c;
    c->conn = k;
    c->live_conns++;
    k->deadline_ms = uv_now(c->loop) + c->cfg.connect_timeout_ms;
    if (c->url_literal) {
        conn_connect(k, (const struct sockaddr*)&c->addr);
        return;
    }
    char port[8];
    snprintf(port, sizeof port, "%u", (unsigned)c->url.port);
    struct addrinfo hints;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    k->state = CONN_RESOLVING;
    k->gai.data = k;
    int rc = uv_getaddrinfo(c->loop, &k->gai, on_resolved, c->url.host, port, &hints);
    if (rc != 0) {
        conn_fail(k, rc, 0);
        conn_free_now(k);
        return;
    }
    k->resolving = true;
}

static void on_retry(uv_timer_t* t) {
    rdc_client* c = t->data;
    if (!c->closing && c->conn == NULL) {
        client_start_attempt(c);
    }
}

// The handshake succeeded.
static void client_opened(rdc_client* c) {
    rdc__conn* k = c->conn;
    c->connected = true;
    c->failures = 0;
    c->backoff_ms = c->cfg.backoff_initial_ms;
    c->stats.connects++;
    k->last_rx_ms = k->last_ping_ms = uv_now(c->loop);
    rdc__decoder_reset(&c->dec);
    // Subscriptions first, so that the state callback sees them under way.
    for (int i = 0; i < RDC_MAX_SUBSCRIPTIONS && c->connected; ++i) {
        if (c->subs[i].active) {
            sub_send(c, i);
        }
    }
    if (c->connected && c->cfg.on_state != NULL) {
        rdc_status st;
        memset(&st, 0, sizeof st);
        st.state = RDC_CONNECTED;
        st.close_reason = "";
        st.http_reason = "";
        c->cfg.on_state(c, &st, c->cfg.user);
    }
}

// A connection or an attempt ended (k is detached already; NULL when the
// attempt could not even start).
static void client_conn_lost(rdc_client* c, rdc__conn* k, int err, uint16_t close_code) {
    bool was_connected = c->connected;
    c->connected = false;
    if (c->closing) {
        return; // rdc_close() fails the pending commands itself
    }
    if (was_connected) {
        c->stats.disconnects++;
    } else {
        c->stats.connect_failures++;
        c->failures++;
    }
    rdc__decoder_reset(&c->dec);
    rdc_status st;
    memset(&st, 0, sizeof st);
    st.state = RDC_DISCONNECTED;
    st.error = err;
    st.was_connected = was_connected;
    st.close_code = close_code;
    st.close_reason = k != NULL && close_code != 0 ? k->close_reason : "";
    st.http_status = k != NULL && err == RDC_E_HANDSHAKE ? k->hs.status : 0;
    st.http_reason = st.http_status != 0 ? k->hs.reason : "";
    st.failures = c->failures;
    if (c->cfg.reconnect) {
        // Exponential backoff with jitter: uniform in [wait/2, wait].
        uint32_t wait = c->backoff_ms;
        st.retry_ms = wait / 2 + random_u32(c) % (wait - wait / 2 + 1);
        if (st.retry_ms == 0) {
            st.retry_ms = 1;
        }
        uint64_t next = 2ull * c->backoff_ms;
        c->backoff_ms = next > c->cfg.backoff_max_ms ? c->cfg.backoff_max_ms : (uint32_t)next;
        uv_timer_start(&c->retry, on_retry, st.retry_ms, 0);
    }
    // Every command still waiting learns that its reply will not come.
    pending_fail_list(c, pending_take_all(c), RDC_E_DISCONNECTED);
    if (!c->closing && c->cfg.on_state != NULL) {
        c->cfg.on_state(c, &st, c->cfg.user);
    }
}

void rdc_disconnect(rdc_client* c) {
    if (c != NULL && c->conn != NULL && c->connected && !c->closing) {
        conn_fail(c->conn, RDC_E_CLOSED, 0);
    }
}

static void on_tick(uv_timer_t* t) {
    rdc_client* c = t->data;
    uint64_t now = uv_now(c->loop);
    rdc__conn* k = c->conn;
    if (k != NULL && k->state != CONN_OPEN && now >= k->deadline_ms) {
        conn_fail(k, RDC_E_TIMEOUT, 0); // the connect or handshake took too long
    } else if (k != NULL && k->closing_sent && now >= k->deadline_ms) {
        conn_fail(k, 0, 0); // our close went unanswered
    } else if (k != NULL && k->state == CONN_OPEN && c->cfg.keepalive_ms > 0) {
        uint64_t silent = now - k->last_rx_ms;
        if (silent >= 3ull * c->cfg.keepalive_ms) {
            conn_fail(k, RDC_E_TIMEOUT, 0);
        } else if (silent >= c->cfg.keepalive_ms && now - k->last_ping_ms >= c->cfg.keepalive_ms) {
            k->last_ping_ms = now;
            struct wslay_event_msg ping = {WSLAY_PING, (const uint8_t*)"rdc", 3};
            wslay_event_queue_msg(k->ws, &ping);
            conn_flush(k);
        }
    }
    if (c->closing) {
        return;
    }
    // Commands without a reply for too long: oldest first, and the list is
    // in sending order, so stop at the first that may still wait.
    while (c->head != NULL && c->head->deadline_ms != 0 && now >= c->head->deadline_ms) {
        rdc__pending* p = c->head;
        pending_unlink(c, p);
        p->next = NULL;
        pending_fail_list(c, p, RDC_E_TIMEOUT);
        if (c->closing) {
            return;
        }
    }
}

// ---------------------------------------------------------------------------
// Closing
// ---------------------------------------------------------------------------

static void on_timer_closed(uv_handle_t* h) {
    rdc_client* c = h->data;
    c->open_handles--;
    client_maybe_free(c);
}

static void client_maybe_free(rdc_client* c) {
    if (!c->closing) {
        return;
    }
    if (c->live_conns > 0) {
        return;
    }
    if (!c->handles_closing) {
        c->handles_closing = true;
        uv_close((uv_handle_t*)&c->tick, on_timer_closed);
        uv_close((uv_handle_t*)&c->retry, on_timer_closed);
        return;
    }
    if (c->open_handles > 0) {
        return;
    }
    // Every handle is closed: the owed callbacks, then the memory.
    rdc__pending* dead = c->dead_head;
    c->dead_head = NULL;
    pending_fail_list(c, dead, RDC_E_CLOSED);
    if (c->done != NULL) {
        c->done(c, c->done_arg);
    }
    rdc__decoder_free(&c->dec);
    free(c->url_text);
    free(c->token);
    free(c);
}

void rdc_close(rdc_client* c, void (*done)(rdc_client* c, void* arg), void* arg) {
    if (c == NULL || c->closing) {
        return;
    }
    c->closing = true;
    c->done = done;
    c->done_arg = arg;
    c->dead_head = pending_take_all(c);
    uv_timer_stop(&c->retry);
    rdc__conn* k = c->conn;
    if (k != NULL && k->state == CONN_OPEN) {
        // Say goodbye (1000) and give the server a moment to answer; the
        // tick timer ends the wait.
        c->connected = false;
        k->closing_sent = true;
        k->deadline_ms = uv_now(c->loop) + RDC__CLOSE_GRACE_MS;
        wslay_event_queue_close(k->ws, WSLAY_CODE_NORMAL_CLOSURE, NULL, 0);
        conn_flush(k);
    } else if (k != NULL) {
        conn_fail(k, RDC_E_CLOSED, 0);
    }
    // With no connection left this closes the timers; otherwise the last
    // connection's close callback does.
    if (c->conn == NULL) {
        client_maybe_free(c);
    }
}
