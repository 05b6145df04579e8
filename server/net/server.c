/*
 * server.c: the listening socket and the life of a connection: accept,
 * read, write, timers and the close path (net_internal.h has the diagram).
 *
 * It owns the libuv handles and the session list. What bytes mean is for
 * http.c (HTTP state) and ws.c (WebSocket state). A session is freed only in
 * the close callback of its last handle, never inside its own callback chain
 * (libuv rule; Redis freeClientAsync).
 */
#include "net_internal.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

// How long a graceful close may wait for the peer before the handles close.
#define NET__CLOSE_GRACE_MS 2000

net_config net_config_default(void) {
    net_config c;
    memset(&c, 0, sizeof c);
    c.host = "127.0.0.1";
    c.port = 8080;
    c.web_root = NULL;
    c.ws_path = "/ws";
    c.subprotocol = NULL;
    c.max_message_bytes = 64 * 1024;
    c.max_header_bytes = 8 * 1024;
    c.max_headers = 64;
    c.handshake_timeout_ms = 10000;
    c.ping_interval_ms = 20000;
    c.idle_timeout_ms = 60000;
    c.send_soft_limit = 256 * 1024;
    c.read_pause_limit = 1024 * 1024;
    c.send_hard_limit = 8 * 1024 * 1024;
    c.max_sessions = 1024;
    c.max_messages_per_turn = 64;
    c.max_bytes_per_turn = 64 * 1024;
    c.max_fragments = 64;
    c.max_http_per_address = 16;
    c.cookie = NET__COOKIE;
    return c;
}

uint64_t net__now_ms(const net_session* s) {
    return uv_now(s->srv->loop);
}

// ---------------------------------------------------------------------------
// Server teardown
// ---------------------------------------------------------------------------

static void server_maybe_done(net_server* srv) {
    if (!srv->stopping || !srv->listener_closed || !srv->idle_closed || srv->sessions != NULL) {
        return;
    }
    void (*done)(void*) = srv->done;
    void* arg = srv->done_arg;
    free(srv->host);
    free(srv->web_root);
    free(srv->ws_path);
    free(srv->subprotocol);
    if (srv->framer != NULL) {
        wslay_frame_context_free(srv->framer);
    }
    free(srv);
    if (done != NULL) {
        done(arg);
    }
}

static void on_listener_closed(uv_handle_t* h) {
    net_server* srv = h->data;
    srv->listener_closed = true;
    server_maybe_done(srv);
}

static void on_idle_closed(uv_handle_t* h) {
    net_server* srv = h->data;
    srv->idle_closed = true;
    server_maybe_done(srv);
}

// ---------------------------------------------------------------------------
// Close path
// ---------------------------------------------------------------------------

static void on_session_handle_closed(uv_handle_t* h) {
    net_session* s = h->data;
    if (--s->open_handles > 0) {
        return;
    }
    net_server* srv = s->srv;
    if (s->opened) {
        srv->ws_count--;
    }
    if ((s->opened || s->accepted) && srv->cb.on_close != NULL) {
        srv->cb.on_close(srv->cb.ctx, s);
    }
    net__ws_free(s);
    net__stats_freed(s);
    if (s->prev != NULL) {
        s->prev->next = s->next;
    } else {
        srv->sessions = s->next;
    }
    if (s->next != NULL) {
        s->next->prev = s->prev;
    }
    free(s);
    server_maybe_done(srv);
}

void net__close_now(net_session* s) {
    if (uv_is_closing((uv_handle_t*)&s->tcp)) {
        return;
    }
    s->state = NET__CLOSING;
    net__backlog_drop(s);
    uv_read_stop((uv_stream_t*)&s->tcp);
    uv_close((uv_handle_t*)&s->tcp, on_session_handle_closed);
    uv_close((uv_handle_t*)&s->timer, on_session_handle_closed);
}

static void on_shutdown(uv_shutdown_t* req, int status) {
    // Our FIN is out. Keep reading until the peer's EOF (or the deadline):
    // closing with unread input would send a RST, which can destroy the close
    // frame or response still in the peer's receive buffer.
    if (status < 0) {
        net__close_now(req->data);
    }
}

static void on_close_deadline(uv_timer_t* t) {
    net__close_now(t->data);
}

void net__close_graceful(net_session* s) {
    if (s->state == NET__CLOSING) {
        return;
    }
    s->state = NET__CLOSING;
    // A lingering close reads (and discards) until the peer's EOF, even if
    // backpressure or a backlog had stopped reading.
    net__backlog_drop(s);
    net__read_update(s);
    if (uv_is_closing((uv_handle_t*)&s->tcp)) {
        return;
    }
    // A peer that never reads would hold the shutdown forever: the timer
    // closes the handles after a grace period regardless.
    uv_timer_start(&s->timer, on_close_deadline, NET__CLOSE_GRACE_MS, 0);
    s->shutdown_req.data = s;
    if (uv_shutdown(&s->shutdown_req, (uv_stream_t*)&s->tcp, on_shutdown) != 0) {
        net__close_now(s);
    }
}

// ---------------------------------------------------------------------------
// Writing
// ---------------------------------------------------------------------------

typedef struct write_req {
    uv_write_t req;
    net_session* s;
    unsigned nblobs;
    net_blob* blobs[NET__MAX_SLOTS]; ///< Held until written.
    uv_buf_t bufs[NET__MAX_PIECES];
    uint8_t data[]; ///< The copied pieces.
} write_req;

static void on_write(uv_write_t* req, int status) {
    write_req* w = (write_req*)req;
    net_session* s = w->s;
    for (unsigned i = 0; i < w->nblobs; ++i) {
        net_blob_unref(w->blobs[i]);
    }
    free(w);
    if (status < 0) {
        net__stats_cause(s, "write error", status);
        net__close_now(s);
        return;
    }
    if (s->state == NET__WS) {
        // The socket drained some: waiting payloads may go now.
        net__ws_flush(s);
    } else if (s->state == NET__HTTP && s->close_after_write &&
               uv_stream_get_write_queue_size((uv_stream_t*)&s->tcp) == 0) {
        net__close_graceful(s);
    }
}

int net__write(net_session* s, const void* data, size_t len) {
    net__piece p = {data, len, NULL};
    return net__writev(s, &p, 1);
}

int net__writev(net_session* s, const net__piece* p, unsigned n) {
    if (uv_is_closing((uv_handle_t*)&s->tcp)) {
        return UV_ECANCELED;
    }
    size_t total = 0;
    unsigned blobs = 0;
    for (unsigned i = 0; i < n; ++i) {
        total += p[i].len;
        blobs += p[i].blob != NULL;
    }
    if (n > NET__MAX_PIECES || blobs > NET__MAX_SLOTS) {
        return UV_EINVAL;
    }
    net__stats_out(s, total);
    // A WebSocket session with nothing queued writes straight from the
    // pieces; only what the socket does not take now waits. (HTTP responses
    // always queue: closing after them hangs off on_write.)
    size_t taken = 0;
    if (s->state == NET__WS && uv_stream_get_write_queue_size((uv_stream_t*)&s->tcp) == 0) {
        uv_buf_t now[NET__MAX_PIECES];
        for (unsigned i = 0; i < n; ++i) {
            now[i] = uv_buf_init((char*)p[i].data, (unsigned)p[i].len);
        }
        int r = uv_try_write((uv_stream_t*)&s->tcp, now, n);
        if (r >= 0 && (size_t)r == total) {
            return 0;
        }
        if (r < 0 && r != UV_EAGAIN) {
            return r;
        }
        taken = r > 0 ? (size_t)r : 0;
    }
    // The rest: copies of the caller's bytes, references to blobs.
    size_t copied = 0, skip = taken;
    for (unsigned i = 0; i < n; ++i) {
        size_t left = p[i].len > skip ? p[i].len - skip : 0;
        skip -= p[i].len - left;
        copied += p[i].blob == NULL ? left : 0;
    }
    write_req* w = malloc(sizeof *w + copied);
    if (w == NULL) {
        return UV_ENOMEM;
    }
    w->s = s;
    w->nblobs = 0;
    unsigned nb = 0;
    size_t at = 0;
    skip = taken;
    for (unsigned i = 0; i < n; ++i) {
        const uint8_t* d = p[i].data;
        size_t len = p[i].len;
        if (skip >= len) {
            skip -= len;
            continue;
        }
        d += skip;
        len -= skip;
        skip = 0;
        if (p[i].blob != NULL) {
            w->blobs[w->nblobs++] = net_blob_ref(p[i].blob);
        } else {
            memcpy(w->data + at, d, len);
            d = w->data + at;
            at += len;
        }
        w->bufs[nb++] = uv_buf_init((char*)d, (unsigned)len);
    }
    int rc = uv_write(&w->req, (uv_stream_t*)&s->tcp, w->bufs, nb, on_write);
    if (rc != 0) {
        for (unsigned i = 0; i < w->nblobs; ++i) {
            net_blob_unref(w->blobs[i]);
        }
        free(w);
    }
    return rc;
}

// ---------------------------------------------------------------------------
// Reading
// ---------------------------------------------------------------------------

static void on_alloc(uv_handle_t* h, size_t suggested, uv_buf_t* buf) {
    (void)suggested;
    net_session* s = h->data;
    // One buffer for the whole server: every read is consumed synchronously
    // in on_read before libuv asks for the next.
    *buf = uv_buf_init((char*)s->srv->read_buf, sizeof s->srv->read_buf);
}

static void on_read(uv_stream_t* stream, ssize_t nread, const uv_buf_t* buf) {
    net_session* s = stream->data;
    if (nread < 0) {
        // EOF or an error: the peer is gone, nothing more can be said to it.
        net__stats_cause(s, nread == UV_EOF ? "connection closed by the peer" : "read error",
                         nread == UV_EOF ? 0 : (int)nread);
        net__close_now(s);
        return;
    }
    if (nread == 0) {
        return; // EAGAIN, not EOF.
    }
    net__stats_in(s, (size_t)nread);
    s->last_rx_ms = net__now_ms(s);
    // In CLOSING state input is read and discarded (a lingering close).
    if (s->state == NET__HTTP) {
        net__http_feed(s, (const uint8_t*)buf->base, (size_t)nread);
    } else if (s->state == NET__WS) {
        net__ws_feed(s, (const uint8_t*)buf->base, (size_t)nread);
    }
}

void net__read_update(net_session* s) {
    if (uv_is_closing((uv_handle_t*)&s->tcp)) {
        return;
    }
    // A closing session reads (and discards) whatever holds it otherwise.
    bool want = s->state == NET__CLOSING || (!s->read_paused && !s->backlogged);
    if (want == s->reading) {
        return;
    }
    s->reading = want;
    if (!want) {
        uv_read_stop((uv_stream_t*)&s->tcp);
    } else if (uv_read_start((uv_stream_t*)&s->tcp, on_alloc, on_read) != 0) {
        net__close_now(s);
    }
}

void net__read_pause(net_session* s, bool pause) {
    s->read_paused = pause;
    net__read_update(s);
}

static void on_session_timer(uv_timer_t* t) {
    net_session* s = t->data;
    if (s->state == NET__HTTP) {
        // The request did not complete in time (slowloris) or a keep-alive
        // connection sat idle.
        net__close_now(s);
    } else if (s->state == NET__WS) {
        net__ws_tick(s);
    }
}

void net__arm_request_deadline(net_session* s) {
    uv_timer_start(&s->timer, on_session_timer, s->srv->cfg.handshake_timeout_ms, 0);
}

// ---------------------------------------------------------------------------
// Accepting
// ---------------------------------------------------------------------------

// Connections from `peer` in HTTP state (the new one included).
static uint32_t http_count_from(const net_server* srv, const char* peer) {
    uint32_t n = 0;
    for (const net_session* s = srv->sessions; s != NULL; s = s->next) {
        if (s->state == NET__HTTP && strcmp(s->peer, peer) == 0) {
            n++;
        }
    }
    return n;
}

// A new session on the server's list with its handles initialised; the
// TCP handle still has to be given its socket. NULL when out of memory.
static net_session* session_new(net_server* srv) {
    net_session* s = calloc(1, sizeof *s);
    if (s == NULL) {
        return NULL;
    }
    s->srv = srv;
    s->id = ++srv->next_id;
    s->cur_header = -1;
    uv_tcp_init(srv->loop, &s->tcp);
    uv_timer_init(srv->loop, &s->timer);
    s->tcp.data = s;
    s->timer.data = s;
    s->open_handles = 2;
    s->next = srv->sessions;
    if (srv->sessions != NULL) {
        srv->sessions->prev = s;
    }
    srv->sessions = s;
    return s;
}

// Starts a session whose handle has its socket: the peer's address, the
// per-address cap, the request deadline, reading.
static void session_start(net_session* s) {
    net_server* srv = s->srv;
    uv_tcp_nodelay(&s->tcp, 1);
    struct sockaddr_storage peer;
    int namelen = sizeof peer;
    if (uv_tcp_getpeername(&s->tcp, (struct sockaddr*)&peer, &namelen) == 0) {
        if (peer.ss_family == AF_INET6) {
            uv_ip6_name((struct sockaddr_in6*)&peer, s->peer, sizeof s->peer);
        } else if (peer.ss_family == AF_INET) {
            uv_ip4_name((struct sockaddr_in*)&peer, s->peer, sizeof s->peer);
        }
    }
    net__stats_accepted(s);
    http_parser_init(&s->parser, HTTP_REQUEST);
    s->parser.data = s;
    s->last_rx_ms = net__now_ms(s);
    if (srv->cfg.max_http_per_address > 0 &&
        http_count_from(srv, s->peer) > srv->cfg.max_http_per_address) {
        // One address may not hold every connection slot with requests it
        // never finishes; the handshake deadline ends each, this bounds them.
        static const char too_many[] = "too many connections from this address\n";
        net__http_respond(s, 429, "text/plain; charset=utf-8", "Retry-After: 5\r\n", too_many,
                          sizeof too_many - 1, true);
        return;
    }
    net__arm_request_deadline(s);
    net__read_update(s);
}

static void on_connection(uv_stream_t* server, int status) {
    net_server* srv = server->data;
    if (status < 0 || srv->stopping) {
        return;
    }
    net_session* s = session_new(srv);
    if (s == NULL) {
        return;
    }
    if (uv_accept(server, (uv_stream_t*)&s->tcp) != 0) {
        net__close_now(s);
        return;
    }
    session_start(s);
}

int net_server_start(uv_loop_t* loop, const net_config* cfg, const net_callbacks* cb,
                     net_server** out) {
    if (loop == NULL || cfg == NULL || out == NULL || cfg->cookie != NET__COOKIE ||
        cfg->host == NULL || cfg->ws_path == NULL || cfg->port < 0 || cfg->port > 65535 ||
        cfg->max_message_bytes == 0 || cfg->max_messages_per_turn == 0 ||
        cfg->max_bytes_per_turn == 0 || cfg->max_fragments == 0 ||
        cfg->send_soft_limit > cfg->read_pause_limit ||
        cfg->read_pause_limit > cfg->send_hard_limit) {
        return UV_EINVAL;
    }
    struct sockaddr_storage addr;
    int rc = uv_ip4_addr(cfg->host, cfg->port, (struct sockaddr_in*)&addr);
    if (rc != 0) {
        rc = uv_ip6_addr(cfg->host, cfg->port, (struct sockaddr_in6*)&addr);
        if (rc != 0) {
            return rc;
        }
    }
    net_server* srv = calloc(1, sizeof *srv);
    if (srv == NULL) {
        return UV_ENOMEM;
    }
    srv->loop = loop;
    srv->cfg = *cfg;
    if (cb != NULL) {
        srv->cb = *cb;
    }
    srv->host = cfg->host != NULL ? strdup(cfg->host) : NULL;
    srv->web_root = cfg->web_root != NULL ? strdup(cfg->web_root) : NULL;
    srv->ws_path = cfg->ws_path != NULL ? strdup(cfg->ws_path) : NULL;
    srv->subprotocol = cfg->subprotocol != NULL ? strdup(cfg->subprotocol) : NULL;
    srv->cfg.host = srv->host;
    srv->cfg.web_root = srv->web_root;
    srv->cfg.ws_path = srv->ws_path;
    srv->cfg.subprotocol = srv->subprotocol;

    uv_tcp_init(loop, &srv->listener);
    srv->listener.data = srv;
    uv_idle_init(loop, &srv->idle);
    srv->idle.data = srv;
    rc = uv_tcp_bind(&srv->listener, (const struct sockaddr*)&addr, 0);
    if (rc == 0) {
        rc = uv_listen((uv_stream_t*)&srv->listener, 511, on_connection);
    }
    if (rc != 0) {
        // Tear down without calling anyone back: the caller gets rc.
        srv->stopping = true;
        srv->done = NULL;
        uv_close((uv_handle_t*)&srv->listener, on_listener_closed);
        uv_close((uv_handle_t*)&srv->idle, on_idle_closed);
        return rc;
    }
    struct sockaddr_storage bound;
    int namelen = sizeof bound;
    uv_tcp_getsockname(&srv->listener, (struct sockaddr*)&bound, &namelen);
    srv->port = bound.ss_family == AF_INET6 ? ntohs(((struct sockaddr_in6*)&bound)->sin6_port)
                                            : ntohs(((struct sockaddr_in*)&bound)->sin_port);
    *out = srv;
    return 0;
}

int net_server_port(const net_server* srv) {
    return srv->port;
}

uint32_t net_server_session_count(const net_server* srv) {
    return srv->ws_count;
}

void net_server_stop(net_server* srv, uint16_t code, void (*done)(void* arg), void* arg) {
    if (srv->stopping) {
        return;
    }
    srv->stopping = true;
    srv->done = done;
    srv->done_arg = arg;
    uv_close((uv_handle_t*)&srv->listener, on_listener_closed);
    uv_close((uv_handle_t*)&srv->idle, on_idle_closed);
    for (net_session* s = srv->sessions; s != NULL;) {
        net_session* next = s->next; // s may unlink itself later, never now
        if (s->state == NET__WS) {
            net_session_close(s, code, "server shutting down");
        } else {
            net__close_now(s);
        }
        s = next;
    }
}

// ---------------------------------------------------------------------------
// Session accessors
// ---------------------------------------------------------------------------

void* net_session_data(const net_session* s) {
    return s->data;
}

void net_session_set_data(net_session* s, void* data) {
    s->data = data;
}

uint64_t net_session_id(const net_session* s) {
    return s->id;
}

const char* net_session_peer(const net_session* s) {
    return s->peer;
}

uint64_t net_session_dropped(const net_session* s) {
    return s->dropped;
}

size_t net_session_queued_bytes(const net_session* s) {
    if (s->state != NET__WS) {
        return 0;
    }
    return uv_stream_get_write_queue_size((const uv_stream_t*)&s->tcp) +
           wslay_event_get_queued_msg_length(s->ws);
}

// ---------------------------------------------------------------------------
// Sessions on a socket the caller has (tests and fuzzing)
// ---------------------------------------------------------------------------

int net__session_adopt(net_server* srv, uv_os_sock_t fd) {
    // As on_connection(), with uv_tcp_open() where it accepts.
    net_session* s = srv->stopping ? NULL : session_new(srv);
    if (s == NULL) {
        close(fd);
        return srv->stopping ? UV_ECANCELED : UV_ENOMEM;
    }
    int rc = uv_tcp_open(&s->tcp, fd);
    if (rc != 0) {
        close(fd); // not the handle's yet
        net__close_now(s);
        return rc;
    }
    session_start(s);
    return 0;
}
