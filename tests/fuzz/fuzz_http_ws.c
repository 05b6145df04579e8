/*
 * fuzz_http_ws.c: libFuzzer target for the server's network layer
 * (server/net: HTTP requests, the WebSocket handshake, framing through
 * wslay, send queues and the close path), driven in process: a real
 * net_server on its own loop, and a session on one end of a socketpair
 * (net__session_adopt), the harness being the client on the other end.
 *
 * The input: a byte of chunking, a byte of behaviour, then the bytes the
 * client sends. They go in chunks (all at once, or sizes from a small
 * generator), the loop running a few rounds (UV_RUN_NOWAIT) after each;
 * then the server stops and the harness hangs up, and the loop must wind
 * down without waiting on a timer.
 *
 *   behaviour: bit 0  the application echoes text messages
 *              bit 1  ... and binary ones, as "latest" payloads
 *              bit 2  the client reads nothing until the end (backpressure)
 *              bit 3  the application greets a new session
 *              bit 4  a message starting with 'c' makes it close (4000)
 *              bit 5  a message starting with 'x' cancels the waiting payload
 *              bit 6  the server stops halfway through the input
 *              bit 7  every echo is 60 KiB (the send limits are small)
 *
 * The application refuses some upgrades (on_upgrade: 401, 403, 429, from
 * what the request says) and the server handles 4 messages per turn of the
 * loop and 8 fragments per message, so the backlog and the caps are reached.
 *
 * Checks, beyond "no crash, no leak, no undefined behaviour": messages are
 * at most max_message_bytes and text ones UTF-8 (net.h's promise); on_close
 * follows every accepted upgrade exactly once; what the server writes is HTTP/1.1
 * responses and, after a 101, well-formed unmasked frames and nothing after
 * a close frame; the server stops and the loop closes with no handle left.
 */
#include "fuzz.h"
#include "net_internal.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define MAX_MESSAGE 1024
#define BIG_ECHO    (60 * 1024)

enum {
    ECHO_TEXT = 1 << 0,
    ECHO_BINARY = 1 << 1,
    NO_READ = 1 << 2,
    GREET = 1 << 3,
    CLOSE_ON_C = 1 << 4,
    CANCEL_ON_X = 1 << 5,
    STOP_HALFWAY = 1 << 6,
    BIG = 1 << 7,
};

typedef struct harness {
    uv_loop_t loop;
    net_server* srv;
    int peer; ///< The client's end of the socketpair.
    unsigned flags;
    uint32_t accepted, opened, closed;
    net_session* session;
    bool stopping, stopped;
    uint8_t* out; ///< Everything the server wrote.
    size_t out_len, out_cap;
    const char* big; ///< BIG_ECHO bytes to echo.
} harness;

static bool on_http(void* ctx, const char* path, net_http_response* resp) {
    (void)ctx;
    if (strcmp(path, "/healthz") != 0) {
        return false;
    }
    static const char body[] = "{\"status\":\"ok\"}";
    resp->status = 200;
    resp->content_type = "application/json";
    resp->body = malloc(sizeof body - 1);
    FUZZ_CHECK(resp->body != NULL);
    memcpy(resp->body, body, sizeof body - 1);
    resp->body_len = sizeof body - 1;
    return true;
}

// The application's admission, decided by the request itself so that the
// fuzzer reaches every answer: an Authorization header starting "Bearer x"
// gets 401, an Origin containing "evil" 403, a subprotocol list naming
// "busy" 429; anything else gets in.
static int on_upgrade(void* ctx, net_session* s, const net_upgrade* req, const char** reason) {
    harness* h = ctx;
    FUZZ_CHECK(req->peer != NULL);
    if (req->authorization != NULL && strncmp(req->authorization, "Bearer x", 8) == 0) {
        *reason = "unknown token";
        return 401;
    }
    if (req->origin != NULL && strstr(req->origin, "evil") != NULL) {
        return 403;
    }
    if (req->protocols != NULL && strstr(req->protocols, "busy") != NULL) {
        *reason = "too many";
        return 429;
    }
    FUZZ_CHECK(h->session == NULL && h->accepted == 0);
    h->accepted++;
    h->session = s;
    return 0;
}

static void on_open(void* ctx, net_session* s) {
    harness* h = ctx;
    FUZZ_CHECK(h->session == s && h->accepted == 1 && h->opened == 0);
    h->opened++;
    if (h->flags & GREET) {
        static const char hello[] = "{\"ev\":\"welcome\"}";
        FUZZ_CHECK(net_session_send_text(s, hello, sizeof hello - 1) == 0);
    }
}

static void on_message(void* ctx, net_session* s, const uint8_t* data, size_t len, bool binary) {
    harness* h = ctx;
    FUZZ_CHECK(s == h->session && h->closed == 0);
    FUZZ_CHECK(len <= MAX_MESSAGE);
    FUZZ_CHECK(binary || fuzz_utf8_valid(data, len));
    const char* reply = (const char*)data;
    size_t reply_len = len;
    if (h->flags & BIG) {
        reply = h->big;
        reply_len = BIG_ECHO;
    }
    if (!binary && (h->flags & ECHO_TEXT)) {
        int rc = net_session_send_text(s, reply, reply_len);
        FUZZ_CHECK(rc == 0 || rc == UV_ECANCELED);
    }
    if (binary && (h->flags & ECHO_BINARY)) {
        net_blob* b = net_blob_create(reply, reply_len);
        FUZZ_CHECK(b != NULL);
        int rc = net_session_send_latest(s, len > 0 ? data[0] : 0, b, true);
        FUZZ_CHECK(rc == 0 || rc == UV_ECANCELED);
        net_blob_unref(b);
    }
    if (len > 0 && data[0] == 'x' && (h->flags & CANCEL_ON_X)) {
        net_session_cancel_latest(s, len > 1 ? data[1] : 0);
    }
    if (len > 0 && data[0] == 'c' && (h->flags & CLOSE_ON_C)) {
        net_session_close(s, 4000, "asked to");
    }
    (void)net_session_queued_bytes(s);
}

static void on_close(void* ctx, net_session* s) {
    harness* h = ctx;
    FUZZ_CHECK(s == h->session && h->closed == 0);
    h->closed++;
    h->session = NULL;
}

static void on_stopped(void* arg) {
    harness* h = arg;
    h->stopped = true;
}

// Reads what the server wrote so far, keeping it for the end.
static void drain(harness* h) {
    for (;;) {
        if (h->out_cap - h->out_len < 4096) {
            h->out_cap = h->out_cap == 0 ? 8192 : 2 * h->out_cap;
            h->out = realloc(h->out, h->out_cap);
            FUZZ_CHECK(h->out != NULL);
        }
        ssize_t n = read(h->peer, h->out + h->out_len, h->out_cap - h->out_len);
        if (n <= 0) {
            FUZZ_CHECK(n == 0 || errno == EAGAIN || errno == ECONNRESET);
            return;
        }
        h->out_len += (size_t)n;
    }
}

static void run(harness* h, int rounds) {
    for (int i = 0; i < rounds; ++i) {
        uv_run(&h->loop, UV_RUN_NOWAIT);
        if ((h->flags & NO_READ) == 0) {
            drain(h);
        }
    }
}

// Sends a chunk; what the socket does not take (the server has stopped
// reading, backpressure) is dropped after a few rounds.
static void send_chunk(harness* h, const uint8_t* p, size_t len) {
    for (int tries = 0; len > 0 && tries < 4; ++tries) {
        ssize_t n = write(h->peer, p, len);
        if (n < 0) {
            FUZZ_CHECK(errno == EAGAIN || errno == EPIPE || errno == ECONNRESET);
            if (errno != EAGAIN) {
                return;
            }
            run(h, 2);
            continue;
        }
        p += n;
        len -= (size_t)n;
    }
    run(h, 1);
}

static void stop(harness* h) {
    if (!h->stopping) {
        h->stopping = true;
        net_server_stop(h->srv, 1001, on_stopped, h);
    }
}

// Where needle first occurs in hay, or NULL (memmem by hand: libFuzzer's
// interceptor would turn every position tried into a comparison to learn
// from, which is most of a run's time on a long output).
FUZZ_NO_COVERAGE static const uint8_t* find(const uint8_t* hay, size_t n, const char* needle) {
    size_t m = strlen(needle);
    for (size_t i = 0; m <= n && i <= n - m; ++i) {
        size_t k = 0;
        while (k < m && hay[i + k] == (uint8_t)needle[k]) {
            k++;
        }
        if (k == m) {
            return hay + i;
        }
    }
    return NULL;
}

// The server's output: HTTP/1.1 responses; after a 101, frames (RFC 6455
// §5.2) that are unmasked, with no reserved bits, known opcodes, control
// frames whole and short, and none after a close frame. The last may be cut
// short by the hang-up.
FUZZ_NO_COVERAGE static void check_output(const harness* h) {
    const uint8_t* o = h->out;
    size_t n = h->out_len;
    if (n == 0) {
        return;
    }
    FUZZ_CHECK(find(o, n < 9 ? n : 9, "HTTP/1.1 ") == o);
    const uint8_t* at = find(o, n, "HTTP/1.1 101 Switching Protocols\r\n");
    if (at == NULL) {
        FUZZ_CHECK(h->opened == 0);
        return;
    }
    FUZZ_CHECK(h->opened == 1);
    const uint8_t* end = find(at, n - (size_t)(at - o), "\r\n\r\n");
    FUZZ_CHECK(end != NULL);
    size_t i = (size_t)(end + 4 - o);
    bool closed = false;
    while (i < n) {
        FUZZ_CHECK(!closed);
        if (n - i < 2) {
            return;
        }
        uint8_t b0 = o[i], b1 = o[i + 1];
        unsigned op = b0 & 0x0fu;
        FUZZ_CHECK((b0 & 0x70u) == 0 && (b1 & 0x80u) == 0);
        FUZZ_CHECK(op <= 2 || (op >= 8 && op <= 10));
        uint64_t len = b1 & 0x7fu;
        size_t head = 2;
        if (len >= 126) {
            size_t ext = len == 126 ? 2 : 8;
            if (n - i < 2 + ext) {
                return;
            }
            len = 0;
            for (size_t k = 0; k < ext; ++k) {
                len = (len << 8) | o[i + 2 + k];
            }
            head += ext;
        }
        if (op >= 8) {
            FUZZ_CHECK((b0 & 0x80u) != 0 && len <= 125);
            closed = op == 8;
        }
        if (n - i - head < len) {
            return;
        }
        i += head + (size_t)len;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static bool once;
    if (!once) {
        once = true;
        signal(SIGPIPE, SIG_IGN); // a write to a peer that hung up is EPIPE
    }
    if (size < 2) {
        return 0;
    }
    harness h;
    memset(&h, 0, sizeof h);
    h.flags = data[1];
    static char big[BIG_ECHO];
    if (big[0] == 0) {
        memset(big, 'b', sizeof big);
    }
    h.big = big;
    FUZZ_CHECK(uv_loop_init(&h.loop) == 0);
    net_config cfg = net_config_default();
    cfg.port = 0;
    cfg.web_root = RD_FUZZ_WEB_ROOT;
    cfg.subprotocol = "ragdolld.v1";
    cfg.max_message_bytes = MAX_MESSAGE;
    cfg.send_soft_limit = 4096;
    cfg.read_pause_limit = 16 * 1024;
    cfg.send_hard_limit = 128 * 1024;
    // Small turns and few fragments, so inputs reach the backlog and the
    // fragment cap.
    cfg.max_messages_per_turn = 4;
    cfg.max_bytes_per_turn = 2048;
    cfg.max_fragments = 8;
    net_callbacks cb = {.ctx = &h,
                        .on_http = on_http,
                        .on_open = on_open,
                        .on_message = on_message,
                        .on_close = on_close,
                        .on_upgrade = on_upgrade};
    FUZZ_CHECK(net_server_start(&h.loop, &cfg, &cb, &h.srv) == 0);
    int sv[2];
    FUZZ_CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv) == 0);
    h.peer = sv[0];
    FUZZ_CHECK(net__session_adopt(h.srv, sv[1]) == 0);

    const uint8_t* p = data + 2;
    size_t left = size - 2, half = left / 2;
    uint32_t rng = data[0] * 2654435761u + 1;
    while (left > 0) {
        size_t chunk = left;
        if (data[0] != 0) {
            rng = rng * 1664525u + 1013904223u;
            chunk = 1 + (rng >> 16) % (1u + (data[0] & 0x7fu) * 4u);
            chunk = chunk < left ? chunk : left;
        }
        send_chunk(&h, p, chunk);
        p += chunk;
        left -= chunk;
        if ((h.flags & STOP_HALFWAY) && left <= half) {
            stop(&h);
        }
    }
    run(&h, 2);
    // Stop, let the close frames out, then hang up: nothing may wait on a
    // timer after that.
    stop(&h);
    run(&h, 2);
    drain(&h);
    close(h.peer);
    for (int i = 0; i < 100 && !h.stopped; ++i) {
        uv_run(&h.loop, UV_RUN_NOWAIT);
    }
    FUZZ_CHECK(h.stopped);
    // on_close follows every accepted upgrade once (with or without on_open).
    FUZZ_CHECK(h.accepted == h.closed && h.opened <= h.accepted);
    FUZZ_CHECK(uv_loop_close(&h.loop) == 0);
    check_output(&h);
    free(h.out);
    return 0;
}
