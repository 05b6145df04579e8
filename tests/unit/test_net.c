/*
 * test_net.c: tests of the network layer (server/net) on a real loop on
 * 127.0.0.1 with a port the kernel picks. The server runs on its own thread
 * with a small echo application; the test thread is a client on blocking
 * sockets that speaks raw HTTP and raw WebSocket frames, so it can also send
 * what a well-behaved client never would. Each test ends by stopping the
 * server and asserting that the loop closes cleanly (no leaked handle).
 */
// cmocka.h needs these four before it (cmocka docs); keep the order.
// clang-format off
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
// clang-format on

#include "net.h"
#include "rdws.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

// ---------------------------------------------------------------------------
// The server side: an echo application on its own loop thread
// ---------------------------------------------------------------------------

typedef struct fixture {
    uv_loop_t loop;
    uv_thread_t thread;
    uv_async_t stop;
    net_server* srv;
    net_config cfg;
    int port;
    char web_root[64];
    // Seen by the application (read after the loop thread has ended).
    int opened, closed, messages;
    // Messages handled in one turn of the loop: now and at most (a check
    // handle ends each turn); read with atomics while the loop runs.
    uv_check_t turn;
    int turn_msgs, max_turn_msgs;
    int refused_upgrades;
    // What the last on_close and on_refused saw, under mu (the test thread
    // polls while the loop runs).
    uv_mutex_t mu;
    struct seen {
        int closes, refusals;
        uint16_t close_sent, close_received;
        uint64_t bytes_in, bytes_out;
        char close_reason[96], peer[64];
        int refused_status;
        char refused_why[96];
    } seen;
} fixture;

static void on_turn_end(uv_check_t* h) {
    fixture* f = h->data;
    if (f->turn_msgs > __atomic_load_n(&f->max_turn_msgs, __ATOMIC_RELAXED)) {
        __atomic_store_n(&f->max_turn_msgs, f->turn_msgs, __ATOMIC_RELAXED);
    }
    f->turn_msgs = 0;
}

// The application's admission: a request that says "Authorization: Bearer
// refuse-me" gets 401, one from Origin http://evil.example gets 403; the
// rest get in. (The rules themselves are the application's: app/auth.c.)
static int app_upgrade(void* ctx, net_session* s, const net_upgrade* req, const char** reason) {
    (void)s;
    fixture* f = ctx;
    if (req->authorization != NULL && strcmp(req->authorization, "Bearer refuse-me") == 0) {
        f->refused_upgrades++;
        *reason = "unknown token";
        return 401;
    }
    if (req->origin != NULL && strcmp(req->origin, "http://evil.example") == 0) {
        f->refused_upgrades++;
        *reason = "origin not allowed";
        return 403;
    }
    if (req->peer == NULL || strcmp(req->peer, "127.0.0.1") != 0) {
        *reason = "expected a loopback peer";
        return 400;
    }
    return 0;
}

static bool app_http(void* ctx, const char* path, net_http_response* resp) {
    (void)ctx;
    if (strcmp(path, "/hello") != 0) {
        return false;
    }
    resp->status = 200;
    resp->content_type = "application/json";
    resp->body = strdup("{\"hello\":true}");
    resp->body_len = strlen(resp->body);
    return true;
}

static void app_open(void* ctx, net_session* s) {
    fixture* f = ctx;
    f->opened++;
    net_session_send_text(s, "welcome", 7);
}

// Commands of the echo application:
//   "flood N"    N payloads of 4 KiB under one "latest" key, numbered
//   "control N"  N text messages of 8 KiB, numbered (never dropped)
//   "clock"      "clock:NS", the server's monotonic time when it read this
//   "bye"        the server closes with 4000
//   anything else is echoed back with its kind.
static void app_message(void* ctx, net_session* s, const uint8_t* data, size_t len, bool binary) {
    fixture* f = ctx;
    f->messages++;
    f->turn_msgs++;
    char text[128];
    size_t n = len < sizeof text - 1 ? len : sizeof text - 1;
    memcpy(text, data, n);
    text[n] = '\0';
    int count;
    if (sscanf(text, "flood %d", &count) == 1) {
        for (int i = 0; i < count; ++i) {
            net_blob* b = net_blob_create(NULL, 4096);
            memset(b->data, 'x', b->len);
            snprintf((char*)b->data, 32, "payload %d;", i);
            net_session_send_latest(s, 1, b, false);
            net_blob_unref(b);
        }
    } else if (sscanf(text, "control %d", &count) == 1) {
        static char big[8192];
        memset(big, 'c', sizeof big);
        for (int i = 0; i < count; ++i) {
            int h = snprintf(big, 32, "control %d;", i);
            big[h] = 'c';
            if (net_session_send_text(s, big, sizeof big) != 0) {
                break;
            }
        }
    } else if (strcmp(text, "clock") == 0) {
        // When this message was read, on the clock of CLOCK_MONOTONIC.
        char reply[64];
        int m = snprintf(reply, sizeof reply, "clock:%llu", (unsigned long long)uv_hrtime());
        net_session_send_text(s, reply, (size_t)m);
    } else if (strcmp(text, "bye") == 0) {
        net_session_close(s, 4000, "bye");
    } else {
        char reply[160];
        int m = snprintf(reply, sizeof reply, "%s:%s", binary ? "bin" : "text", text);
        net_session_send_text(s, reply, (size_t)m);
    }
}

static void app_close(void* ctx, net_session* s) {
    fixture* f = ctx;
    f->closed++;
    uv_mutex_lock(&f->mu);
    struct seen* v = &f->seen;
    v->closes++;
    v->close_sent = net_session_close_code_sent(s);
    v->close_received = net_session_close_code_received(s);
    v->bytes_in = net_session_bytes_in(s);
    v->bytes_out = net_session_bytes_out(s);
    snprintf(v->close_reason, sizeof v->close_reason, "%s", net_session_close_reason(s));
    snprintf(v->peer, sizeof v->peer, "%s", net_session_peer_name(s));
    uv_mutex_unlock(&f->mu);
}

static void app_refused(void* ctx, const net_session* s, int status, const char* why) {
    (void)s;
    fixture* f = ctx;
    uv_mutex_lock(&f->mu);
    f->seen.refusals++;
    f->seen.refused_status = status;
    snprintf(f->seen.refused_why, sizeof f->seen.refused_why, "%s", why);
    uv_mutex_unlock(&f->mu);
}

static void on_stop(uv_async_t* a) {
    fixture* f = a->data;
    net_server_stop(f->srv, 1001, NULL, NULL);
    uv_close((uv_handle_t*)&f->stop, NULL);
    uv_close((uv_handle_t*)&f->turn, NULL);
}

static void loop_thread(void* arg) {
    fixture* f = arg;
    uv_run(&f->loop, UV_RUN_DEFAULT);
}

static int start_with(void** state, void (*tweak)(net_config* cfg)) {
    fixture* f = calloc(1, sizeof *f);
    assert_int_equal(uv_loop_init(&f->loop), 0);
    assert_int_equal(uv_mutex_init(&f->mu), 0);
    snprintf(f->web_root, sizeof f->web_root, "/tmp/rd_net_test_%d", (int)getpid());
    mkdir(f->web_root, 0755);
    char path[128];
    snprintf(path, sizeof path, "%s/index.html", f->web_root);
    FILE* fp = fopen(path, "w");
    fputs("<h1>viewer</h1>", fp);
    fclose(fp);

    f->cfg = net_config_default();
    f->cfg.port = 0;
    f->cfg.web_root = f->web_root;
    f->cfg.subprotocol = "ragdolld.v1";
    f->cfg.max_message_bytes = 1024;
    f->cfg.send_soft_limit = 64 * 1024;
    f->cfg.send_hard_limit = 1024 * 1024;
    f->cfg.handshake_timeout_ms = 1000;
    if (tweak != NULL) {
        tweak(&f->cfg);
    }
    net_callbacks cb = {.ctx = f,
                        .on_http = app_http,
                        .on_open = app_open,
                        .on_message = app_message,
                        .on_close = app_close,
                        .on_upgrade = app_upgrade,
                        .on_refused = app_refused};
    assert_int_equal(net_server_start(&f->loop, &f->cfg, &cb, &f->srv), 0);
    f->port = net_server_port(f->srv);
    assert_true(f->port > 0);
    uv_check_init(&f->loop, &f->turn);
    f->turn.data = f;
    uv_check_start(&f->turn, on_turn_end);
    uv_async_init(&f->loop, &f->stop, on_stop);
    f->stop.data = f;
    assert_int_equal(uv_thread_create(&f->thread, loop_thread, f), 0);
    *state = f;
    return 0;
}

static int setup(void** state) {
    return start_with(state, NULL);
}

// Room for a client to fall far behind before the hard limit drops it.
static void roomy_queues(net_config* cfg) {
    cfg->send_soft_limit = 64 * 1024;
    cfg->read_pause_limit = 256 * 1024;
    cfg->send_hard_limit = 64 * 1024 * 1024;
}

static int setup_roomy(void** state) {
    return start_with(state, roomy_queues);
}

static void two_sessions(net_config* cfg) {
    cfg->max_sessions = 2;
}

static int setup_two_sessions(void** state) {
    return start_with(state, two_sessions);
}

static void small_limits(net_config* cfg) {
    cfg->max_fragments = 4;
    cfg->max_http_per_address = 2;
}

static int setup_small_limits(void** state) {
    return start_with(state, small_limits);
}

static int teardown(void** state) {
    fixture* f = *state;
    uv_async_send(&f->stop);
    uv_thread_join(&f->thread);
    // Every handle was closed: the loop closes cleanly (libuv's test rule).
    assert_int_equal(uv_loop_close(&f->loop), 0);
    assert_int_equal(f->opened, f->closed);
    char path[128];
    snprintf(path, sizeof path, "%s/index.html", f->web_root);
    unlink(path);
    rmdir(f->web_root);
    uv_mutex_destroy(&f->mu);
    free(f);
    return 0;
}

// ---------------------------------------------------------------------------
// The client side: blocking sockets, raw HTTP and frames
// ---------------------------------------------------------------------------

// rcvbuf > 0 shrinks the receive buffer (before connect, so the TCP window
// is small too): a client that does not read then really fills up.
static int connect_with(int port, int rcvbuf) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    if (rcvbuf > 0) {
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
    }
    struct timeval tv = {5, 0}; // no test waits forever
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(connect(fd, (struct sockaddr*)&a, sizeof a), 0);
    return fd;
}

static int connect_to(int port) {
    return connect_with(port, 0);
}

static void send_all(int fd, const void* data, size_t len) {
    const char* p = data;
    while (len > 0) {
        ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
        assert_true(n > 0);
        p += n;
        len -= (size_t)n;
    }
}

// Reads until the end of an HTTP head (and a body of Content-Length, if any).
// Returns the bytes read, 0 on EOF before anything.
static size_t read_http(int fd, char* buf, size_t cap) {
    size_t len = 0;
    while (len < cap - 1) {
        ssize_t n = recv(fd, buf + len, 1, 0);
        if (n <= 0) {
            break;
        }
        len++;
        buf[len] = '\0';
        char* end = strstr(buf, "\r\n\r\n");
        if (end != NULL) {
            const char* cl = strstr(buf, "Content-Length: ");
            size_t body = cl != NULL ? (size_t)atoi(cl + 16) : 0;
            size_t want = (size_t)(end + 4 - buf) + body;
            while (len < want && len < cap - 1) {
                n = recv(fd, buf + len, want - len, 0);
                if (n <= 0) {
                    break;
                }
                len += (size_t)n;
            }
            buf[len] = '\0';
            return len;
        }
    }
    buf[len] = '\0';
    return len;
}

static int http_status(const char* resp) {
    int status = 0;
    sscanf(resp, "HTTP/1.1 %d", &status);
    return status;
}

static int request(int port, const char* req, char* resp, size_t cap) {
    int fd = connect_to(port);
    send_all(fd, req, strlen(req));
    read_http(fd, resp, cap);
    close(fd);
    return http_status(resp);
}

static const char* const upgrade_fmt = "GET /ws HTTP/1.1\r\n"
                                       "Host: 127.0.0.1\r\n"
                                       "Upgrade: websocket\r\n"
                                       "Connection: Upgrade\r\n"
                                       "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                                       "Sec-WebSocket-Version: 13\r\n"
                                       "%s\r\n";

// Opens a WebSocket (the application then sends "welcome").
static int ws_open_with(fixture* f, int rcvbuf) {
    int fd = connect_with(f->port, rcvbuf);
    char req[512], resp[1024];
    snprintf(req, sizeof req, upgrade_fmt, "Sec-WebSocket-Protocol: ragdolld.v1\r\n");
    send_all(fd, req, strlen(req));
    read_http(fd, resp, sizeof resp);
    assert_int_equal(http_status(resp), 101);
    return fd;
}

static int ws_open(fixture* f) {
    return ws_open_with(f, 0);
}

static void ws_send_frame(int fd, uint8_t opcode, bool fin, const void* data, size_t len,
                          bool masked) {
    uint8_t hdr[14];
    size_t h = 0;
    hdr[h++] = (uint8_t)((fin ? 0x80 : 0) | opcode);
    uint8_t m = masked ? 0x80 : 0;
    if (len < 126) {
        hdr[h++] = (uint8_t)(m | len);
    } else if (len < 65536) {
        hdr[h++] = m | 126;
        hdr[h++] = (uint8_t)(len >> 8);
        hdr[h++] = (uint8_t)len;
    } else {
        hdr[h++] = m | 127;
        for (int i = 7; i >= 0; --i) {
            hdr[h++] = (uint8_t)((uint64_t)len >> (8 * i));
        }
    }
    const uint8_t key[4] = {0x12, 0x34, 0x56, 0x78};
    if (masked) {
        memcpy(hdr + h, key, 4);
        h += 4;
    }
    send_all(fd, hdr, h);
    uint8_t* body = malloc(len + 1);
    for (size_t i = 0; i < len; ++i) {
        body[i] = ((const uint8_t*)data)[i] ^ (masked ? key[i % 4] : 0);
    }
    if (len > 0) {
        send_all(fd, body, len);
    }
    free(body);
}

static void ws_send_text(int fd, const char* text) {
    ws_send_frame(fd, 0x1, true, text, strlen(text), true);
}

static bool recv_exact(int fd, void* buf, size_t len) {
    uint8_t* p = buf;
    while (len > 0) {
        ssize_t n = recv(fd, p, len, 0);
        if (n <= 0) {
            return false;
        }
        p += n;
        len -= (size_t)n;
    }
    return true;
}

// Reads one frame; returns its opcode (-1 on EOF) and the payload in *out
// (malloc()ed, NUL-terminated).
static int ws_read_frame(int fd, char** out, size_t* out_len) {
    uint8_t h[2];
    if (!recv_exact(fd, h, 2)) {
        return -1;
    }
    assert_int_equal(h[1] & 0x80, 0); // server frames are never masked
    uint64_t len = h[1] & 0x7f;
    if (len == 126) {
        uint8_t e[2];
        assert_true(recv_exact(fd, e, 2));
        len = ((uint64_t)e[0] << 8) | e[1];
    } else if (len == 127) {
        uint8_t e[8];
        assert_true(recv_exact(fd, e, 8));
        len = 0;
        for (int i = 0; i < 8; ++i) {
            len = (len << 8) | e[i];
        }
    }
    char* body = malloc(len + 1);
    assert_true(len == 0 || recv_exact(fd, body, len));
    body[len] = '\0';
    *out = body;
    *out_len = len;
    return h[0] & 0x0f;
}

// Reads frames until a close frame; returns its status code (0 for none,
// -1 when the connection ended without one).
static int ws_expect_close(int fd) {
    for (;;) {
        char* body;
        size_t len;
        int op = ws_read_frame(fd, &body, &len);
        if (op < 0) {
            return -1;
        }
        if (op == 0x8) {
            int code = len >= 2 ? ((uint8_t)body[0] << 8) | (uint8_t)body[1] : 0;
            free(body);
            return code;
        }
        free(body);
    }
}

static void expect_text(int fd, const char* want) {
    char* body;
    size_t len;
    assert_int_equal(ws_read_frame(fd, &body, &len), 0x1);
    assert_string_equal(body, want);
    free(body);
}

// ---------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------

static void test_net_accept_key_matches_rfc6455_vector(void** state) {
    (void)state;
    char out[29];
    const char* key = "dGhlIHNhbXBsZSBub25jZQ==";
    rdws_accept_key(key, strlen(key), out);
    assert_string_equal(out, "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="); // RFC 6455 §1.3
}

static void test_net_http_routes_static_files_and_errors(void** state) {
    fixture* f = *state;
    char resp[4096];
    assert_int_equal(request(f->port, "GET /hello HTTP/1.1\r\nHost: x\r\n\r\n", resp, sizeof resp),
                     200);
    assert_non_null(strstr(resp, "Content-Type: application/json"));
    assert_non_null(strstr(resp, "{\"hello\":true}"));
    assert_int_equal(request(f->port, "GET / HTTP/1.1\r\nHost: x\r\n\r\n", resp, sizeof resp), 200);
    assert_non_null(strstr(resp, "text/html"));
    assert_non_null(strstr(resp, "<h1>viewer</h1>"));
    assert_int_equal(request(f->port, "GET /index.html?x=1 HTTP/1.1\r\n\r\n", resp, sizeof resp),
                     200);
    assert_int_equal(request(f->port, "GET /nope.js HTTP/1.1\r\n\r\n", resp, sizeof resp), 404);
    assert_int_equal(request(f->port, "GET /../../etc/passwd HTTP/1.1\r\n\r\n", resp, sizeof resp),
                     404);
    assert_int_equal(request(f->port, "GET /%2e%2e/x HTTP/1.1\r\n\r\n", resp, sizeof resp), 404);
    assert_int_equal(
        request(f->port, "POST /hello HTTP/1.1\r\nContent-Length: 0\r\n\r\n", resp, sizeof resp),
        405);
    assert_int_equal(request(f->port, "GET /ws HTTP/1.1\r\n\r\n", resp, sizeof resp), 426);
    assert_int_equal(request(f->port, "BLAH\r\n\r\n", resp, sizeof resp), 400);
    // A head over 8 KiB is refused without reading it all.
    char big[12000];
    int n = snprintf(big, sizeof big, "GET / HTTP/1.1\r\nCookie: ");
    memset(big + n, 'a', 10000);
    memcpy(big + n + 10000, "\r\n\r\n", 5);
    assert_int_equal(request(f->port, big, resp, sizeof resp), 431);
    // Too many headers.
    char many[4096] = "GET / HTTP/1.1\r\n";
    for (int i = 0; i < 100; ++i) {
        strcat(many, "X-A: b\r\n");
    }
    strcat(many, "\r\n");
    assert_int_equal(request(f->port, many, resp, sizeof resp), 431);
}

static void test_net_http_keep_alive_answers_in_order(void** state) {
    fixture* f = *state;
    int fd = connect_to(f->port);
    const char* two =
        "GET /hello HTTP/1.1\r\nHost: x\r\n\r\nGET /missing HTTP/1.1\r\nHost: x\r\n\r\n";
    send_all(fd, two, strlen(two));
    char resp[2048];
    read_http(fd, resp, sizeof resp);
    assert_int_equal(http_status(resp), 200);
    read_http(fd, resp, sizeof resp);
    assert_int_equal(http_status(resp), 404);
    close(fd);
}

static void test_net_handshake_rules(void** state) {
    fixture* f = *state;
    char req[1024], resp[2048];
    // Valid: 101 with the RFC's accept value and our subprotocol echoed.
    int fd = connect_to(f->port);
    snprintf(req, sizeof req, upgrade_fmt, "Sec-WebSocket-Protocol: chat, ragdolld.v1\r\n");
    send_all(fd, req, strlen(req));
    read_http(fd, resp, sizeof resp);
    assert_int_equal(http_status(resp), 101);
    assert_non_null(strstr(resp, "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n"));
    assert_non_null(strstr(resp, "Sec-WebSocket-Protocol: ragdolld.v1\r\n"));
    expect_text(fd, "welcome");
    close(fd);
    // No subprotocol offered: accepted, none echoed.
    fd = connect_to(f->port);
    snprintf(req, sizeof req, upgrade_fmt, "");
    send_all(fd, req, strlen(req));
    read_http(fd, resp, sizeof resp);
    assert_int_equal(http_status(resp), 101);
    assert_null(strstr(resp, "Sec-WebSocket-Protocol"));
    close(fd);
    // Only foreign subprotocols: refused.
    snprintf(req, sizeof req, upgrade_fmt, "Sec-WebSocket-Protocol: chat\r\n");
    assert_int_equal(request(f->port, req, resp, sizeof resp), 400);
    // Wrong version: 426 naming the one we speak.
    assert_int_equal(request(f->port,
                             "GET /ws HTTP/1.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                             "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                             "Sec-WebSocket-Version: 8\r\n\r\n",
                             resp, sizeof resp),
                     426);
    assert_non_null(strstr(resp, "Sec-WebSocket-Version: 13"));
    // A key that is not 16 bytes of base64.
    assert_int_equal(request(f->port,
                             "GET /ws HTTP/1.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                             "Sec-WebSocket-Key: c2hvcnQ=\r\nSec-WebSocket-Version: 13\r\n\r\n",
                             resp, sizeof resp),
                     400);
}

static void test_net_ws_round_trip_and_fragments(void** state) {
    fixture* f = *state;
    int fd = ws_open(f);
    expect_text(fd, "welcome");
    ws_send_text(fd, "hello");
    expect_text(fd, "text:hello");
    ws_send_frame(fd, 0x2, true, "abc", 3, true);
    expect_text(fd, "bin:abc");
    // A message in three fragments with a ping in the middle.
    ws_send_frame(fd, 0x1, false, "fr", 2, true);
    ws_send_frame(fd, 0x9, true, "p", 1, true);
    ws_send_frame(fd, 0x0, false, "ag", 2, true);
    ws_send_frame(fd, 0x0, true, "ment", 4, true);
    char* body;
    size_t len;
    assert_int_equal(ws_read_frame(fd, &body, &len), 0xA); // pong first
    assert_string_equal(body, "p");
    free(body);
    expect_text(fd, "text:fragment");
    // The server closes on request with the code it chose.
    ws_send_text(fd, "bye");
    assert_int_equal(ws_expect_close(fd), 4000);
    close(fd);
}

static void test_net_ws_protocol_violations_close_with_the_right_code(void** state) {
    fixture* f = *state;
    // Unmasked client frame: 1002.
    int fd = ws_open(f);
    ws_send_frame(fd, 0x1, true, "hi", 2, false);
    assert_int_equal(ws_expect_close(fd), 1002);
    close(fd);
    // Invalid UTF-8 in a text frame: 1007.
    fd = ws_open(f);
    ws_send_frame(fd, 0x1, true, "\xc3\x28", 2, true);
    assert_int_equal(ws_expect_close(fd), 1007);
    close(fd);
    // A message over the limit (1 KiB here) is refused from its header: 1009.
    fd = ws_open(f);
    static char big[4096];
    memset(big, 'a', sizeof big);
    ws_send_frame(fd, 0x1, true, big, sizeof big, true);
    assert_int_equal(ws_expect_close(fd), 1009);
    close(fd);
    // A frame that declares 4 GiB: closed as soon as its payload starts
    // (wslay checks the length before it allocates anything).
    fd = ws_open(f);
    const uint8_t huge[] = {0x82, 0xff, 0, 0, 0, 1, 0, 0, 0, 0, 1, 2, 3, 4, 'a', 'b', 'c'};
    send_all(fd, huge, sizeof huge);
    assert_int_equal(ws_expect_close(fd), 1009);
    close(fd);
    // A one-byte close body: 1002 (RFC 6455 §5.5.1).
    fd = ws_open(f);
    ws_send_frame(fd, 0x8, true, "x", 1, true);
    assert_int_equal(ws_expect_close(fd), 1002);
    close(fd);
    // A normal close is answered with the same code.
    fd = ws_open(f);
    const char normal[2] = {0x03, (char)0xe8};
    ws_send_frame(fd, 0x8, true, normal, 2, true);
    assert_int_equal(ws_expect_close(fd), 1000);
    close(fd);
    // A ping longer than 125 bytes, or a fragmented ping: wslay's frame layer
    // refuses the header and answers with a close frame without a status.
    fd = ws_open(f);
    ws_send_frame(fd, 0x9, true, big, 200, true);
    assert_int_equal(ws_expect_close(fd), 0);
    close(fd);
    fd = ws_open(f);
    ws_send_frame(fd, 0x9, false, "p", 1, true);
    assert_int_equal(ws_expect_close(fd), 0);
    close(fd);
    // A reserved opcode: 1002.
    fd = ws_open(f);
    ws_send_frame(fd, 0x3, true, "x", 1, true);
    assert_int_equal(ws_expect_close(fd), 1002);
    close(fd);
}

static void test_net_message_declared_too_big_is_refused_from_its_header(void** state) {
    fixture* f = *state;
    // A masked binary frame declaring 2^40 bytes, header only: no payload
    // byte follows, yet the close (1009) must come at once, well within the
    // socket's 5 s receive timeout (the idle timeout here is 60 s).
    int fd = ws_open(f);
    expect_text(fd, "welcome");
    const uint8_t huge[] = {0x82, 0xff, 0, 0, 0x01, 0, 0, 0, 0, 0, 0x12, 0x34, 0x56, 0x78};
    send_all(fd, huge, sizeof huge);
    assert_int_equal(ws_expect_close(fd), 1009);
    close(fd);
    // A fragmented text message: 600 bytes, then a continuation header
    // declaring 600 more (1200 > the 1 KiB limit). A message sent in the same
    // write before it is still answered.
    fd = ws_open(f);
    expect_text(fd, "welcome");
    ws_send_text(fd, "hello");
    static char part[600];
    memset(part, 'p', sizeof part);
    ws_send_frame(fd, 0x1, false, part, sizeof part, true);
    const uint8_t more[] = {0x80, 0xfe, 0x02, 0x58, 1, 2, 3, 4}; // FIN, continuation, 600
    send_all(fd, more, sizeof more);
    expect_text(fd, "text:hello");
    assert_int_equal(ws_expect_close(fd), 1009);
    close(fd);
    // Fragments within the limit still make one message: 600 + 250 bytes,
    // which with the 64 bytes each fragment costs to hold come to 978 of
    // the 1024 allowed.
    fd = ws_open(f);
    expect_text(fd, "welcome");
    ws_send_frame(fd, 0x1, false, part, sizeof part, true);
    ws_send_frame(fd, 0x0, true, part, 250, true);
    char* body;
    size_t len;
    assert_int_equal(ws_read_frame(fd, &body, &len), 0x1);
    assert_int_equal(len, strlen("text:") + 127); // the echo app copies 127 bytes
    free(body);
    close(fd);
}

static void test_net_latest_wins_while_control_messages_are_kept(void** state) {
    fixture* f = *state;
    int fd = ws_open_with(f, 4096);
    expect_text(fd, "welcome");
    // 3000 payloads of 4 KiB (12 MB, more than loopback buffers hold) under
    // one key, to a client that is not reading: most must be dropped, and the
    // newest must arrive.
    ws_send_text(fd, "flood 3000");
    ws_send_text(fd, "after");
    usleep(300 * 1000);
    int received = 0, last = -1;
    bool saw_after = false;
    while (!saw_after) {
        char* body;
        size_t len;
        int op = ws_read_frame(fd, &body, &len);
        assert_int_equal(op, 0x1);
        int n;
        if (sscanf(body, "payload %d;", &n) == 1) {
            assert_true(n > last); // in order, newer only
            last = n;
            received++;
        } else {
            assert_string_equal(body, "text:after");
            saw_after = true;
        }
        free(body);
    }
    // Nothing more of the flood may follow the reply... except the newest
    // payload, if it was still waiting when "after" was answered.
    if (last != 2999) {
        char* body;
        size_t len;
        assert_int_equal(ws_read_frame(fd, &body, &len), 0x1);
        assert_int_equal(sscanf(body, "payload %d;", &last), 1);
        free(body);
        received++;
    }
    print_message("latest wins: %d of 3000 payloads delivered, the last was %d\n", received, last);
    assert_int_equal(last, 2999);
    assert_true(received < 3000);
    close(fd);
}

static void test_net_client_that_never_reads_is_closed_at_the_hard_limit(void** state) {
    fixture* f = *state;
    int fd = ws_open_with(f, 4096);
    // 2000 control messages of 8 KiB (16 MB) can never be dropped; past the
    // 1 MiB hard limit (plus what the kernel buffers) the server must cut
    // the client off.
    ws_send_text(fd, "control 2000");
    usleep(500 * 1000);
    size_t total = 0;
    for (;;) {
        char buf[65536];
        ssize_t n = recv(fd, buf, sizeof buf, 0);
        if (n <= 0) {
            break;
        }
        total += (size_t)n;
    }
    print_message("hard limit: the client read %zu bytes before the server closed\n", total);
    assert_true(total < 2000u * 8192u / 2);
    close(fd);
}

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void test_net_a_client_behind_on_its_replies_is_not_read(void** state) {
    fixture* f = *state;
    // Replies pile up (8 MB for a client with a 4 KiB receive buffer: more
    // than the loopback buffers hold) above the 256 KiB pause mark, so the
    // server must stop reading this client. "clock" is sent right after but
    // may only be read once the client has drained the queue to 64 KiB,
    // which it starts doing half a second later.
    int fd = ws_open_with(f, 4096);
    expect_text(fd, "welcome");
    ws_send_text(fd, "control 1000");
    usleep(100 * 1000);
    ws_send_text(fd, "clock");
    usleep(500 * 1000);
    uint64_t drain_start = now_ns();
    int controls = 0;
    unsigned long long read_at = 0;
    while (read_at == 0) {
        char* body;
        size_t len;
        assert_int_equal(ws_read_frame(fd, &body, &len), 0x1);
        int n;
        if (sscanf(body, "control %d;", &n) == 1) {
            assert_int_equal(n, controls); // all of them, in order
            controls++;
        } else {
            assert_int_equal(sscanf(body, "clock:%llu", &read_at), 1);
        }
        free(body);
    }
    print_message("backpressure: \"clock\" was read %.0f ms after the client began to drain\n",
                  ((double)read_at - (double)drain_start) / 1e6);
    assert_int_equal(controls, 1000);
    assert_true(read_at > drain_start);
    // Reading resumed: the session works as before.
    ws_send_text(fd, "again");
    expect_text(fd, "text:again");
    close(fd);
}

static void test_net_one_session_handles_a_bounded_number_of_messages_per_turn(void** state) {
    fixture* f = *state;
    // 2000 messages in one write: the server takes them 64 at a turn of the
    // loop (timers and other sessions run in between), in order, and
    // answers every one.
    int fd = ws_open(f);
    expect_text(fd, "welcome");
    enum { N = 2000 };
    size_t one = 2 + 4 + 3;
    uint8_t* burst = malloc(N * one);
    const uint8_t key[4] = {1, 2, 3, 4};
    for (int i = 0; i < N; ++i) {
        uint8_t* p = burst + (size_t)i * one;
        p[0] = 0x81;
        p[1] = 0x80 | 3;
        memcpy(p + 2, key, 4);
        char body[4];
        snprintf(body, sizeof body, "%03d", i % 1000);
        for (int k = 0; k < 3; ++k) {
            p[6 + k] = (uint8_t)body[k] ^ key[k];
        }
    }
    send_all(fd, burst, N * one);
    free(burst);
    for (int i = 0; i < N; ++i) {
        char want[16];
        snprintf(want, sizeof want, "text:%03d", i % 1000);
        expect_text(fd, want);
    }
    int most = __atomic_load_n(&f->max_turn_msgs, __ATOMIC_RELAXED);
    printf("turns: at most %d messages in one turn of the loop (limit %u)\n", most,
           f->cfg.max_messages_per_turn);
    // What wslay had buffered when the budget ran out (at most one 256-byte
    // piece: 28 of these 9-byte frames) may still be handled in that turn.
    assert_true(most <= (int)f->cfg.max_messages_per_turn + 28);
    assert_true(most >= 8); // a turn does take many
    close(fd);
}

static void test_net_fragments_beyond_the_cap_are_refused(void** state) {
    fixture* f = *state;
    // Four fragments make a message; a fifth frame is one too many.
    int fd = ws_open(f);
    expect_text(fd, "welcome");
    ws_send_frame(fd, 0x1, false, "a", 1, true);
    ws_send_frame(fd, 0x0, false, "b", 1, true);
    ws_send_frame(fd, 0x0, false, "c", 1, true);
    ws_send_frame(fd, 0x0, true, "d", 1, true);
    expect_text(fd, "text:abcd");
    ws_send_frame(fd, 0x1, false, "a", 1, true);
    for (int i = 0; i < 10; ++i) {
        ws_send_frame(fd, 0x0, false, "x", 1, true);
    }
    char* body;
    size_t len;
    assert_int_equal(ws_read_frame(fd, &body, &len), 0x8);
    assert_true(len >= 2);
    assert_int_equal(((uint8_t)body[0] << 8) | (uint8_t)body[1], 1009);
    assert_true(len - 2 == strlen("too many fragments") &&
                memcmp(body + 2, "too many fragments", len - 2) == 0);
    free(body);
    close(fd);
}

static void test_net_application_refuses_upgrades_with_its_status(void** state) {
    fixture* f = *state;
    char req[512], resp[1024];
    const struct {
        const char* header;
        int status;
        const char* must;
    } cases[] = {
        {"Authorization: Bearer refuse-me\r\n", 401, "WWW-Authenticate: Bearer"},
        {"Origin: http://evil.example\r\n", 403, "origin not allowed"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
        int c = connect_to(f->port);
        snprintf(req, sizeof req, upgrade_fmt, cases[i].header);
        send_all(c, req, strlen(req));
        read_http(c, resp, sizeof resp);
        assert_int_equal(http_status(resp), cases[i].status);
        assert_non_null(strstr(resp, cases[i].must));
        assert_non_null(strstr(resp, "Connection: close"));
        char buf[16];
        assert_int_equal(recv(c, buf, sizeof buf, 0), 0); // then the server closes
        close(c);
    }
    // Accepted ones open as before (the hook saw the loopback peer).
    int fd = ws_open(f);
    expect_text(fd, "welcome");
    close(fd);
}

static void test_net_one_address_holds_few_unfinished_requests(void** state) {
    fixture* f = *state;
    // Two connections that never finish a request are allowed; a third
    // from the same address is answered 429 at once.
    int a = connect_to(f->port);
    int b = connect_to(f->port);
    send_all(a, "GET / HTTP/1.1\r\n", 16);
    send_all(b, "GET / HTTP/1.1\r\n", 16);
    usleep(100 * 1000);
    int c = connect_to(f->port);
    char resp[1024];
    read_http(c, resp, sizeof resp);
    assert_int_equal(http_status(resp), 429);
    assert_non_null(strstr(resp, "Retry-After"));
    close(c);
    // Once one goes, there is room again (its close is asynchronous).
    close(a);
    int status = 0;
    for (int i = 0; i < 40 && status != 200; ++i) {
        usleep(50 * 1000);
        status = request(f->port, "GET /hello HTTP/1.1\r\nHost: x\r\n\r\n", resp, sizeof resp);
    }
    assert_int_equal(status, 200);
    close(b);
}

static void test_net_a_ping_does_not_cost_what_follows_it(void** state) {
    fixture* f = *state;
    // A ping and a text message in one write: wslay stops reading to answer
    // the ping, and the message after it must still be handled.
    int fd = ws_open(f);
    expect_text(fd, "welcome");
    uint8_t both[64];
    size_t n = 0;
    const uint8_t key[4] = {9, 8, 7, 6};
    const char* ping = "pi";
    const char* text = "after";
    both[n++] = 0x89;
    both[n++] = 0x80 | 2;
    memcpy(both + n, key, 4);
    n += 4;
    for (int k = 0; k < 2; ++k) {
        both[n++] = (uint8_t)ping[k] ^ key[k % 4];
    }
    both[n++] = 0x81;
    both[n++] = 0x80 | 5;
    memcpy(both + n, key, 4);
    n += 4;
    for (int k = 0; k < 5; ++k) {
        both[n++] = (uint8_t)text[k] ^ key[k % 4];
    }
    send_all(fd, both, n);
    char* body;
    size_t len;
    assert_int_equal(ws_read_frame(fd, &body, &len), 0xA); // the pong
    assert_true(len == 2 && memcmp(body, "pi", 2) == 0);
    free(body);
    expect_text(fd, "text:after");
    close(fd);
}

// Builds n masked text frames of 3 bytes each ("000".."999", or "bye" at
// index bye_at) into a new buffer of *len bytes.
static uint8_t* burst_of(int n, int bye_at, size_t* len) {
    size_t one = 2 + 4 + 3;
    uint8_t* burst = malloc((size_t)n * one);
    const uint8_t key[4] = {1, 2, 3, 4};
    for (int i = 0; i < n; ++i) {
        uint8_t* p = burst + (size_t)i * one;
        p[0] = 0x81;
        p[1] = 0x80 | 3;
        memcpy(p + 2, key, 4);
        char body[4];
        snprintf(body, sizeof body, "%03d", i % 1000);
        if (i == bye_at) {
            memcpy(body, "bye", 3);
        }
        for (int k = 0; k < 3; ++k) {
            p[6 + k] = (uint8_t)body[k] ^ key[k];
        }
    }
    *len = (size_t)n * one;
    return burst;
}

static void test_net_a_session_closing_with_input_waiting_is_freed_cleanly(void** state) {
    fixture* f = *state;
    // The application closes the session (4000) while it has input waiting
    // for later turns; and a client resets its connection while its input
    // waits and its replies are being written. Neither may touch the
    // session after it is freed (ASan catches it), and the server goes on.
    size_t len;
    int fd = ws_open(f);
    expect_text(fd, "welcome");
    uint8_t* burst = burst_of(2000, 150, &len);
    send_all(fd, burst, len);
    free(burst);
    assert_int_equal(ws_expect_close(fd), 4000);
    close(fd);
    for (int round = 0; round < 5; ++round) {
        fd = ws_open(f);
        expect_text(fd, "welcome");
        burst = burst_of(2000, -1, &len);
        send_all(fd, burst, len);
        free(burst);
        struct linger rst = {1, 0};
        setsockopt(fd, SOL_SOCKET, SO_LINGER, &rst, sizeof rst);
        close(fd); // RST, with most of the burst still waiting at the server
        usleep(20 * 1000);
    }
    fd = ws_open(f);
    expect_text(fd, "welcome");
    ws_send_text(fd, "still here");
    expect_text(fd, "text:still here");
    close(fd);
}

static void test_net_sessions_beyond_the_cap_get_503(void** state) {
    fixture* f = *state;
    int a = ws_open(f);
    expect_text(a, "welcome");
    int b = ws_open(f);
    expect_text(b, "welcome");
    // A third upgrade is refused cleanly; plain HTTP still works.
    int c = connect_to(f->port);
    char req[512], resp[1024];
    snprintf(req, sizeof req, upgrade_fmt, "");
    send_all(c, req, strlen(req));
    read_http(c, resp, sizeof resp);
    assert_int_equal(http_status(resp), 503);
    assert_non_null(strstr(resp, "Connection: close"));
    char buf[16];
    assert_int_equal(recv(c, buf, sizeof buf, 0), 0); // then the server closes
    close(c);
    assert_int_equal(request(f->port, "GET /hello HTTP/1.1\r\nHost: x\r\n\r\n", resp, sizeof resp),
                     200);
    // Once a session has gone, there is room again (its close is
    // asynchronous: retry for up to 2 s).
    close(a);
    int status = 0;
    for (int i = 0; i < 40 && status != 101; ++i) {
        usleep(50 * 1000);
        c = connect_to(f->port);
        send_all(c, req, strlen(req));
        read_http(c, resp, sizeof resp);
        status = http_status(resp);
        if (status != 101) {
            close(c);
        }
    }
    assert_int_equal(status, 101);
    expect_text(c, "welcome");
    close(c);
    close(b);
}

// A copy of what the application has seen so far.
static struct seen seen(fixture* f) {
    uv_mutex_lock(&f->mu);
    struct seen v = f->seen;
    uv_mutex_unlock(&f->mu);
    return v;
}

// Waits (up to 5 s) for the application to have seen `n` closes in all and
// returns what it saw.
static struct seen wait_closes(fixture* f, int n) {
    for (int i = 0; i < 500 && seen(f).closes < n; ++i) {
        usleep(10 * 1000);
    }
    struct seen v = seen(f);
    assert_int_equal(v.closes, n);
    return v;
}

// Bytes a frame of this payload length takes from the server (unmasked) or
// from a client (masked: 4 more).
static size_t frame_bytes(size_t len, bool masked) {
    return (len < 126 ? 2 : len < 65536 ? 4 : 10) + (masked ? 4 : 0) + len;
}

static void test_net_sessions_report_bytes_peer_and_why_they_closed(void** state) {
    fixture* f = *state;
    // The peer closes: 1000 both ways, and every byte each way is counted.
    int fd = connect_to(f->port);
    struct sockaddr_in me;
    socklen_t me_len = sizeof me;
    getsockname(fd, (struct sockaddr*)&me, &me_len);
    char req[512], resp[1024];
    snprintf(req, sizeof req, upgrade_fmt, "Sec-WebSocket-Protocol: ragdolld.v1\r\n");
    send_all(fd, req, strlen(req));
    size_t got = read_http(fd, resp, sizeof resp);
    assert_int_equal(http_status(resp), 101);
    size_t sent = strlen(req);
    expect_text(fd, "welcome");
    got += frame_bytes(7, false);
    ws_send_text(fd, "hello");
    sent += frame_bytes(5, true);
    expect_text(fd, "text:hello");
    got += frame_bytes(10, false);
    const uint8_t normal[2] = {0x03, 0xe8}; // 1000
    ws_send_frame(fd, 0x8, true, normal, 2, true);
    sent += frame_bytes(2, true);
    assert_int_equal(ws_expect_close(fd), 1000);
    got += frame_bytes(2, false);
    close(fd);
    struct seen v = wait_closes(f, 1);
    assert_int_equal(v.close_sent, 1000);
    assert_int_equal(v.close_received, 1000);
    assert_string_equal(v.close_reason, "closed by the peer");
    assert_int_equal(v.bytes_in, sent);
    assert_int_equal(v.bytes_out, got);
    char peer[64];
    snprintf(peer, sizeof peer, "127.0.0.1:%u", (unsigned)ntohs(me.sin_port));
    assert_string_equal(v.peer, peer);

    // The server closes with its code and reason. (It reads nothing more
    // once its close is out, so it never sees the client's answer: 1006.)
    fd = ws_open(f);
    expect_text(fd, "welcome");
    ws_send_text(fd, "bye");
    assert_int_equal(ws_expect_close(fd), 4000);
    close(fd);
    v = wait_closes(f, 2);
    assert_int_equal(v.close_sent, 4000);
    assert_int_equal(v.close_received, 1006);
    assert_string_equal(v.close_reason, "bye");

    // The framing layer refuses a frame: its code, in words.
    fd = ws_open(f);
    expect_text(fd, "welcome");
    ws_send_frame(fd, 0x1, true, "hi", 2, false); // unmasked
    assert_int_equal(ws_expect_close(fd), 1002);
    close(fd);
    v = wait_closes(f, 3);
    assert_int_equal(v.close_sent, 1002);
    assert_string_equal(v.close_reason, "protocol error");

    // The peer vanishes without a closing handshake.
    fd = ws_open(f);
    expect_text(fd, "welcome");
    close(fd);
    v = wait_closes(f, 4);
    assert_int_equal(v.close_sent, 1006);
    assert_int_equal(v.close_received, 1006);
    assert_string_equal(v.close_reason, "connection closed by the peer");
    assert_int_equal(v.refusals, 0); // none of this was a refusal
}

static void test_net_refused_upgrades_are_reported(void** state) {
    fixture* f = *state;
    char req[512], resp[1024];
    // Other paths and other statuses are not upgrades refused. (on_refused
    // runs before the response is written, so the client that has read the
    // response can look at once.)
    assert_int_equal(request(f->port, "GET /nope.js HTTP/1.1\r\n\r\n", resp, sizeof resp), 404);
    assert_int_equal(seen(f).refusals, 0);
    // A bad handshake: 400 with its reason.
    snprintf(req, sizeof req, upgrade_fmt, "Sec-WebSocket-Protocol: chat\r\n");
    assert_int_equal(request(f->port, req, resp, sizeof resp), 400);
    struct seen v = seen(f);
    assert_int_equal(v.refusals, 1);
    assert_int_equal(v.refused_status, 400);
    assert_string_equal(v.refused_why, "unsupported subprotocol");
    // A plain GET of the WebSocket path: 426.
    assert_int_equal(request(f->port, "GET /ws?x=1 HTTP/1.1\r\n\r\n", resp, sizeof resp), 426);
    v = seen(f);
    assert_int_equal(v.refusals, 2);
    assert_int_equal(v.refused_status, 426);
    // The application refuses (on_upgrade): its status and reason.
    snprintf(req, sizeof req, upgrade_fmt, "Authorization: Bearer refuse-me\r\n");
    assert_int_equal(request(f->port, req, resp, sizeof resp), 401);
    v = seen(f);
    assert_int_equal(v.refusals, 3);
    assert_int_equal(v.refused_status, 401);
    assert_string_equal(v.refused_why, "unknown token");
    // The server is full: 503.
    int a = ws_open(f);
    int b = ws_open(f);
    snprintf(req, sizeof req, upgrade_fmt, "");
    assert_int_equal(request(f->port, req, resp, sizeof resp), 503);
    v = seen(f);
    assert_int_equal(v.refusals, 4);
    assert_int_equal(v.refused_status, 503);
    assert_string_equal(v.refused_why, "too many sessions");
    close(a);
    close(b);
}

static void test_net_stop_closes_sessions_with_going_away(void** state) {
    fixture* f = *state;
    int fd = ws_open(f);
    expect_text(fd, "welcome");
    uv_async_send(&f->stop);
    assert_int_equal(ws_expect_close(fd), 1001);
    close(fd);
    uv_thread_join(&f->thread);
    assert_int_equal(f->opened, 1);
    assert_int_equal(f->closed, 1);
    // Restart a loop thread so teardown's stop has something to do.
    uv_async_init(&f->loop, &f->stop, on_stop);
    uv_check_init(&f->loop, &f->turn);
    f->turn.data = f;
    net_config cfg = f->cfg;
    net_callbacks cb = {.ctx = f,
                        .on_http = app_http,
                        .on_open = app_open,
                        .on_message = app_message,
                        .on_close = app_close};
    assert_int_equal(net_server_start(&f->loop, &cfg, &cb, &f->srv), 0);
    assert_int_equal(uv_thread_create(&f->thread, loop_thread, f), 0);
}

static void test_net_slow_handshake_is_dropped(void** state) {
    fixture* f = *state;
    int fd = connect_to(f->port);
    send_all(fd, "GET / HTTP/1.1\r\n", 16); // and then nothing (slowloris)
    char buf[64];
    // The 1 s deadline closes it; recv returns EOF well before our 5 s timeout.
    assert_int_equal(recv(fd, buf, sizeof buf, 0), 0);
    close(fd);
}

int main(void) {
    // libuv writes without MSG_NOSIGNAL: a peer that vanished must not kill us.
    signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_net_accept_key_matches_rfc6455_vector),
        cmocka_unit_test_setup_teardown(test_net_http_routes_static_files_and_errors, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_net_http_keep_alive_answers_in_order, setup, teardown),
        cmocka_unit_test_setup_teardown(test_net_handshake_rules, setup, teardown),
        cmocka_unit_test_setup_teardown(test_net_ws_round_trip_and_fragments, setup, teardown),
        cmocka_unit_test_setup_teardown(test_net_ws_protocol_violations_close_with_the_right_code,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_net_message_declared_too_big_is_refused_from_its_header, setup, teardown),
        cmocka_unit_test_setup_teardown(test_net_latest_wins_while_control_messages_are_kept, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(
            test_net_client_that_never_reads_is_closed_at_the_hard_limit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_net_a_client_behind_on_its_replies_is_not_read,
                                        setup_roomy, teardown),
        cmocka_unit_test_setup_teardown(test_net_sessions_beyond_the_cap_get_503,
                                        setup_two_sessions, teardown),
        cmocka_unit_test_setup_teardown(test_net_stop_closes_sessions_with_going_away, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_net_sessions_report_bytes_peer_and_why_they_closed,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_net_refused_upgrades_are_reported, setup_two_sessions,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_net_slow_handshake_is_dropped, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_net_one_session_handles_a_bounded_number_of_messages_per_turn, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_net_a_session_closing_with_input_waiting_is_freed_cleanly, setup, teardown),
        cmocka_unit_test_setup_teardown(test_net_a_ping_does_not_cost_what_follows_it, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_net_fragments_beyond_the_cap_are_refused,
                                        setup_small_limits, teardown),
        cmocka_unit_test_setup_teardown(test_net_application_refuses_upgrades_with_its_status,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_net_one_address_holds_few_unfinished_requests,
                                        setup_small_limits, teardown),
    };
    return cmocka_run_group_tests_name("net", tests, NULL, NULL);
}
