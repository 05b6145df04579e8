/*
 * ws.c: WebSocket sessions: the opening handshake (RFC 6455 §4.2), the
 * glue between wslay (framing) and libuv (I/O), send queues with
 * backpressure, keep-alive pings and the closing handshake.
 *
 * Send path:
 *
 *   net_session_send_text ──► wslay queue (copied; never dropped)
 *                               wslay_event_send ──► out buffer ─┐
 *   net_session_send_latest ──► slots[]: moved only while the     ├─► one writev
 *        (refcounted blob,       socket keeps up (queued bytes     │   (uv_try_write,
 *         one per key)           < soft limit); a newer blob for   │    or uv_write of
 *                                the same key replaces a waiting   │    what is left)
 *                                one ──► header (wslay_frame_send) ┤
 *                                        + the blob itself ────────┘
 *
 * wslay never sees EAGAIN: its send callback copies into `out`, so
 * backpressure is measured here, from uv_stream_get_write_queue_size() and
 * wslay's own queue (FIELD-NOTES, "WebSocket and libuv pitfalls"). A
 * snapshot, shared by every client it goes to, is never copied in user
 * space: wslay's frame layer writes its header, and the payload goes to
 * the socket from the blob (a write that must wait holds a reference).
 */
#include "net_internal.h"
#include "rdws.h"

#include <nettle/base64.h>

#include <stdlib.h>
#include <string.h>
#include <strings.h>

// Bytes handed to wslay per receive call (see ws_recv_cb).
#define NET__RECV_PIECE 256

// A valid key is base64 of exactly 16 bytes (RFC 6455 §4.1, item 7).
static bool valid_key(const char* key, size_t len) {
    if (len != 24) {
        return false;
    }
    struct base64_decode_ctx ctx;
    uint8_t raw[BASE64_DECODE_LENGTH(24)];
    size_t raw_len = sizeof raw;
    base64_decode_init(&ctx);
    return base64_decode_update(&ctx, &raw_len, raw, len, key) && base64_decode_final(&ctx) &&
           raw_len == 16;
}

// ---------------------------------------------------------------------------
// wslay callbacks
// ---------------------------------------------------------------------------

static ssize_t ws_recv_cb(wslay_event_context_ptr ctx, uint8_t* buf, size_t len, int flags,
                          void* user) {
    (void)flags;
    net_session* s = user;
    if (s->rlen == 0 || s->turn_spent) {
        // Not an error: wslay stops and waits for the next read (or turn).
        wslay_event_set_error(ctx, WSLAY_ERR_WOULDBLOCK);
        return -1;
    }
    // Small pieces: what wslay has buffered is handled even after the turn
    // is spent, so the piece bounds how far a turn can overrun its budget.
    size_t n = len < s->rlen ? len : s->rlen;
    n = n < NET__RECV_PIECE ? n : NET__RECV_PIECE;
    memcpy(buf, s->rbuf, n);
    s->rbuf += n;
    s->rlen -= n;
    return (ssize_t)n;
}

static ssize_t ws_send_cb(wslay_event_context_ptr ctx, const uint8_t* data, size_t len, int flags,
                          void* user) {
    (void)flags;
    net_session* s = user;
    if (s->out_len + len > s->out_cap) {
        size_t cap = s->out_cap == 0 ? 4096 : s->out_cap;
        while (cap < s->out_len + len) {
            cap *= 2;
        }
        uint8_t* grown = realloc(s->out, cap);
        if (grown == NULL) {
            wslay_event_set_error(ctx, WSLAY_ERR_CALLBACK_FAILURE);
            return -1;
        }
        s->out = grown;
        s->out_cap = cap;
    }
    memcpy(s->out + s->out_len, data, len);
    s->out_len += len;
    return (ssize_t)len;
}

static void ws_frame_start_cb(wslay_event_context_ptr ctx,
                              const struct wslay_event_on_frame_recv_start_arg* arg, void* user) {
    (void)user;
    // A close body must be empty or hold a 2-byte code; wslay would answer a
    // 1-byte body with an empty close, so queue the protocol error first
    // (wslay's own close then finds one queued and is dropped).
    if (arg->opcode == WSLAY_CONNECTION_CLOSE && arg->payload_length == 1) {
        wslay_event_queue_close(ctx, WSLAY_CODE_PROTOCOL_ERROR, NULL, 0);
    }
}

static void ws_msg_cb(wslay_event_context_ptr ctx, const struct wslay_event_on_msg_recv_arg* arg,
                      void* user) {
    (void)ctx;
    net_session* s = user;
    net_server* srv = s->srv;
    // Every message counts toward the session's turn, control frames too:
    // a flood of pings must not hold the loop either.
    s->turn_msgs++;
    s->turn_bytes += arg->msg_length;
    if (s->turn_msgs >= srv->cfg.max_messages_per_turn ||
        s->turn_bytes >= srv->cfg.max_bytes_per_turn) {
        s->turn_spent = true;
    }
    if (s->close_queued || s->state != NET__WS) {
        return;
    }
    if (arg->opcode != WSLAY_TEXT_FRAME && arg->opcode != WSLAY_BINARY_FRAME) {
        return; // ping, pong and close are wslay's business
    }
    if (srv->cb.on_message != NULL) {
        srv->cb.on_message(srv->cb.ctx, s, arg->msg, arg->msg_length,
                           arg->opcode == WSLAY_BINARY_FRAME);
    }
}

static const struct wslay_event_callbacks ws_callbacks = {
    .recv_callback = ws_recv_cb,
    .send_callback = ws_send_cb,
    .on_frame_recv_start_callback = ws_frame_start_cb,
    .on_msg_recv_callback = ws_msg_cb,
};

// ---------------------------------------------------------------------------
// Handshake
// ---------------------------------------------------------------------------

static void ws_timer_cb(uv_timer_t* t);

void net__ws_upgrade(net_session* s, const uint8_t* rest, size_t rest_len) {
    net_server* srv = s->srv;
    const char* bad = NULL;
    if (!rdws_has_token(s->hval[NET__H_UPGRADE], "websocket") ||
        !rdws_has_token(s->hval[NET__H_CONNECTION], "upgrade")) {
        bad = "expected Upgrade: websocket and Connection: Upgrade\n";
    } else if (strcmp(s->hval[NET__H_VERSION], "13") != 0) {
        net__http_respond(s, 426, "text/plain; charset=utf-8", "Sec-WebSocket-Version: 13\r\n",
                          "unsupported WebSocket version\n", 30, true);
        return;
    } else if (!valid_key(s->hval[NET__H_KEY], s->hlen[NET__H_KEY])) {
        bad = "Sec-WebSocket-Key must be 16 bytes in base64\n";
    }
    // A client that offers subprotocols must offer ours.
    bool echo_protocol = false;
    if (bad == NULL && s->hlen[NET__H_PROTOCOL] > 0) {
        if (srv->cfg.subprotocol != NULL &&
            rdws_has_token(s->hval[NET__H_PROTOCOL], srv->cfg.subprotocol)) {
            echo_protocol = true;
        } else {
            bad = "unsupported subprotocol\n";
        }
    }
    if (bad == NULL && srv->cfg.max_sessions > 0 && srv->ws_count >= srv->cfg.max_sessions) {
        net__http_respond(s, 503, "text/plain; charset=utf-8", "Retry-After: 5\r\n",
                          "too many sessions\n", 18, true);
        return;
    }
    if (bad == NULL && srv->cb.on_upgrade != NULL) {
        net_upgrade req = {
            .origin = s->hlen[NET__H_ORIGIN] > 0 ? s->hval[NET__H_ORIGIN] : NULL,
            .host = s->hlen[NET__H_HOST] > 0 ? s->hval[NET__H_HOST] : NULL,
            .authorization =
                s->hlen[NET__H_AUTHORIZATION] > 0 ? s->hval[NET__H_AUTHORIZATION] : NULL,
            .protocols = s->hlen[NET__H_PROTOCOL] > 0 ? s->hval[NET__H_PROTOCOL] : NULL,
            .peer = s->peer,
            .truncated = s->htrunc,
        };
        const char* reason = NULL;
        int status = srv->cb.on_upgrade(srv->cb.ctx, s, &req, &reason);
        if (status != 0) {
            char body[160];
            int n = snprintf(body, sizeof body, "%s\n", reason != NULL ? reason : "refused");
            const char* extra = status == 401 ? "WWW-Authenticate: Bearer realm=\"ragdolld\"\r\n"
                                : status == 429 || status == 503 ? "Retry-After: 5\r\n"
                                                                 : "";
            net__http_respond(s, status, "text/plain; charset=utf-8", extra, body,
                              n > 0 && (size_t)n < sizeof body ? (size_t)n : 0, true);
            return;
        }
        // From here on the application is owed an on_close, even if the
        // handshake fails before on_open.
        s->accepted = true;
    }
    if (bad != NULL) {
        net__http_respond(s, 400, "text/plain; charset=utf-8", "", bad, strlen(bad), true);
        return;
    }
    if (wslay_event_context_server_init(&s->ws, &ws_callbacks, s) != 0) {
        net__http_respond(s, 503, "text/plain; charset=utf-8", "", "out of memory\n", 14, true);
        return;
    }
    wslay_event_config_set_max_recv_msg_length(s->ws, srv->cfg.max_message_bytes);

    char accept[29];
    rdws_accept_key(s->hval[NET__H_KEY], s->hlen[NET__H_KEY], accept);
    char resp[512];
    int n = snprintf(resp, sizeof resp,
                     "HTTP/1.1 101 Switching Protocols\r\n"
                     "Upgrade: websocket\r\n"
                     "Connection: Upgrade\r\n"
                     "Sec-WebSocket-Accept: %s\r\n"
                     "%s%s%s"
                     "\r\n",
                     accept, echo_protocol ? "Sec-WebSocket-Protocol: " : "",
                     echo_protocol ? srv->cfg.subprotocol : "", echo_protocol ? "\r\n" : "");
    if (n < 0 || (size_t)n >= sizeof resp || net__write(s, resp, (size_t)n) != 0) {
        net__close_now(s);
        return;
    }
    s->state = NET__WS;
    s->opened = true;
    s->last_rx_ms = net__now_ms(s);
    srv->ws_count++;
    // From now on the timer checks for silence instead of the handshake.
    uint64_t period = srv->cfg.ping_interval_ms / 4;
    period = period < 50 ? 50 : period;
    uv_timer_start(&s->timer, ws_timer_cb, period, period);
    if (srv->cb.on_open != NULL) {
        srv->cb.on_open(srv->cb.ctx, s);
    }
    if (rest_len > 0 && s->state == NET__WS) {
        net__ws_feed(s, rest, rest_len);
    } else {
        net__ws_flush(s);
    }
}

// ---------------------------------------------------------------------------
// Receiving and sending
// ---------------------------------------------------------------------------

static void release_slots(net_session* s);

// Why scan_frames stopped early.
typedef enum net__refuse {
    NET__REFUSE_NONE,
    NET__REFUSE_TOO_BIG,
    NET__REFUSE_FRAGMENTS
} net__refuse;

// Follows frame headers through the input and returns how many of the
// `len` bytes precede the end of the first header that the session must
// refuse: a data message over max_message_bytes (its payload length plus
// the fragments before it, each fragment also costing
// NET__FRAGMENT_OVERHEAD), or a message in more than max_fragments frames.
// Returns `len` when there is none. wslay checks the size too, but only
// once a byte of that frame's payload has arrived, and holds any number of
// fragments.
static size_t scan_frames(net_session* s, const uint8_t* data, size_t len, net__refuse* why) {
    const net_config* cfg = &s->srv->cfg;
    size_t off = 0;
    *why = NET__REFUSE_NONE;
    while (off < len) {
        if (s->fpay_left > 0) {
            uint64_t skip = len - off < s->fpay_left ? len - off : s->fpay_left;
            off += (size_t)skip;
            s->fpay_left -= skip;
            continue;
        }
        s->fh[s->fh_len++] = data[off++];
        if (s->fh_len < 2) {
            continue;
        }
        uint8_t len7 = s->fh[1] & 0x7f;
        size_t need = 2u + (len7 == 126 ? 2u : len7 == 127 ? 8u : 0u) + (s->fh[1] & 0x80 ? 4u : 0u);
        if (s->fh_len < need) {
            continue;
        }
        uint64_t plen = len7;
        if (len7 >= 126) {
            plen = 0;
            for (size_t i = 0; i < (len7 == 126 ? 2u : 8u); ++i) {
                plen = (plen << 8) | s->fh[2 + i];
            }
        }
        uint8_t opcode = s->fh[0] & 0x0f;
        bool fin = (s->fh[0] & 0x80) != 0;
        s->fh_len = 0;
        s->fpay_left = plen;
        if (opcode == WSLAY_TEXT_FRAME || opcode == WSLAY_BINARY_FRAME ||
            opcode == WSLAY_CONTINUATION_FRAME) {
            // Control frames may sit between fragments; they do not count.
            bool cont = opcode == WSLAY_CONTINUATION_FRAME;
            uint64_t so_far = cont ? s->fmsg_len : 0;
            uint32_t frags = (cont ? s->fmsg_frags : 0) + 1;
            // A lone frame costs what it carries; fragments cost their
            // payload plus the node each is held in.
            uint64_t cost = fin && !cont ? 0 : NET__FRAGMENT_OVERHEAD;
            if (plen > cfg->max_message_bytes || so_far + plen + cost > cfg->max_message_bytes) {
                *why = NET__REFUSE_TOO_BIG;
                return off;
            }
            if (frags > cfg->max_fragments) {
                *why = NET__REFUSE_FRAGMENTS;
                return off;
            }
            s->fmsg_len = fin ? 0 : so_far + plen + cost;
            s->fmsg_frags = fin ? 0 : frags;
        }
    }
    return off;
}

// Hands wslay `len` bytes, or as many as the session's turn allows, and
// returns how many it took. Replies the messages cause are queued, then
// written in one go.
static size_t ws_consume(net_session* s, const uint8_t* data, size_t len, int* rc) {
    s->rbuf = data;
    s->rlen = len;
    s->in_feed = true;
    *rc = wslay_event_recv(s->ws);
    s->in_feed = false;
    size_t taken = len - s->rlen;
    s->rbuf = NULL;
    s->rlen = 0;
    return taken;
}

static void ws_after_recv(net_session* s, int rc) {
    net__ws_flush(s);
    if (rc != 0) {
        // A violation wslay's frame layer catches in a frame header (a
        // control frame over 125 bytes or fragmented) ends reading for good;
        // wslay has queued a close frame without a status, which the flush
        // above sent. Nothing more will be read: finish the close.
        net__close_graceful(s);
    }
}

static void ws_refuse(net_session* s, net__refuse why) {
    // Refuse it from the header: 1009, and read no further. The frames
    // before it were handled already; their replies go first (wslay would
    // send a queued close ahead of queued messages).
    net__ws_flush(s);
    if (s->state == NET__WS && !s->close_queued) {
        s->close_queued = true;
        release_slots(s);
        const char* reason =
            why == NET__REFUSE_FRAGMENTS ? "too many fragments" : "message too big";
        wslay_event_queue_close(s->ws, WSLAY_CODE_MESSAGE_TOO_BIG, (const uint8_t*)reason,
                                strlen(reason));
    }
    wslay_event_shutdown_read(s->ws);
}

void net__ws_feed(net_session* s, const uint8_t* data, size_t len) {
    net__refuse why = NET__REFUSE_NONE;
    // Once reading has ended (a close is under way) wslay reads nothing more
    // and the tracker would be out of step; it is not needed then either.
    size_t take = wslay_event_get_read_enabled(s->ws) ? scan_frames(s, data, len, &why) : len;
    s->turn_msgs = 0;
    s->turn_bytes = 0;
    s->turn_spent = false;
    int rc = 0;
    size_t taken = ws_consume(s, data, take, &rc);
    if (rc == 0 && taken < take && s->state == NET__WS && !s->close_queued) {
        // The turn is spent: keep the rest (scanned already) for the next
        // turn and stop reading meanwhile; a refusal found in it waits too.
        uint8_t* rest = malloc(take - taken);
        if (rest == NULL) {
            net__close_now(s);
            return;
        }
        memcpy(rest, data + taken, take - taken);
        s->backlog = rest;
        s->backlog_off = 0;
        s->backlog_len = take - taken;
        s->backlog_refuse = (uint8_t)why;
        s->backlogged = true;
        s->backlog_next = s->srv->backlog;
        s->srv->backlog = s;
        uv_idle_start(&s->srv->idle, net__on_idle);
        net__read_update(s);
        ws_after_recv(s, rc);
        return;
    }
    if (why != NET__REFUSE_NONE && s->state == NET__WS) {
        ws_refuse(s, why);
    }
    ws_after_recv(s, rc);
}

// Gives a backlogged session its next turn. Returns true when its backlog
// is gone (drained, or the session is closing).
static bool ws_backlog_turn(net_session* s) {
    if (!s->backlogged || s->state != NET__WS || s->close_queued) {
        return true;
    }
    s->turn_msgs = 0;
    s->turn_bytes = 0;
    s->turn_spent = false;
    int rc = 0;
    size_t left = s->backlog_len - s->backlog_off;
    s->backlog_off += ws_consume(s, s->backlog + s->backlog_off, left, &rc);
    if (!s->backlogged) {
        // The session began closing during the turn and dropped its
        // backlog, which wslay was reading: free it now.
        free(s->backlog);
        s->backlog = NULL;
        s->backlog_off = s->backlog_len = 0;
        return true;
    }
    bool drained = s->backlog_off == s->backlog_len || rc != 0 || s->state != NET__WS;
    if (drained && rc == 0 && s->state == NET__WS && s->backlog_refuse != NET__REFUSE_NONE) {
        ws_refuse(s, (net__refuse)s->backlog_refuse);
    }
    ws_after_recv(s, rc);
    return drained;
}

void net__on_idle(uv_idle_t* h) {
    net_server* srv = h->data;
    // Each waiting session gets one turn; the list is taken whole so that a
    // session is never served twice in one pass.
    net_session* list = srv->backlog;
    srv->backlog = NULL;
    while (list != NULL) {
        net_session* s = list;
        list = s->backlog_next;
        s->backlog_next = NULL;
        bool drained = ws_backlog_turn(s);
        if (!s->backlogged) {
            // It is closing: its backlog went with net__backlog_drop(). (Its
            // memory lasts until its handles' close callbacks, after this.)
            continue;
        }
        if (drained) {
            free(s->backlog);
            s->backlog = NULL;
            s->backlog_off = s->backlog_len = 0;
            s->backlogged = false;
            net__read_update(s);
        } else {
            s->backlog_next = srv->backlog;
            srv->backlog = s;
        }
    }
    if (srv->backlog == NULL) {
        uv_idle_stop(&srv->idle);
    }
}

void net__backlog_drop(net_session* s) {
    if (!s->backlogged) {
        return;
    }
    net_server* srv = s->srv;
    for (net_session** p = &srv->backlog; *p != NULL; p = &(*p)->backlog_next) {
        if (*p == s) {
            *p = s->backlog_next;
            s->backlog_next = NULL;
            break;
        }
    }
    // Not found: s is in the pass net__on_idle() is making, which skips it
    // now that it is not backlogged (its link is that pass's, left alone).
    s->backlogged = false;
    if (s->in_feed) {
        // wslay is reading from the backlog: stop it there, and let
        // ws_backlog_turn() free the buffer once wslay has returned.
        s->rlen = 0;
        return;
    }
    free(s->backlog);
    s->backlog = NULL;
    s->backlog_off = s->backlog_len = 0;
}

static size_t queued_bytes(const net_session* s) {
    return uv_stream_get_write_queue_size((const uv_stream_t*)&s->tcp) +
           wslay_event_get_queued_msg_length(s->ws);
}

static void release_slots(net_session* s) {
    for (uint32_t i = 0; i < s->slot_count; ++i) {
        net_blob_unref(s->slots[i].blob);
    }
    s->slot_count = 0;
}

// wslay's frame layer hands the header to this callback, then the payload,
// which the caller sends from its blob: only the header is kept.
static ssize_t head_cb(const uint8_t* data, size_t len, int flags, void* user) {
    (void)flags;
    net_server* srv = user;
    if (!srv->head_done) {
        size_t n = len < sizeof srv->head ? len : sizeof srv->head;
        memcpy(srv->head, data, n);
        srv->head_len = n;
        srv->head_done = true;
    }
    return (ssize_t)len;
}

static ssize_t no_recv_cb(uint8_t* buf, size_t len, int flags, void* user) {
    (void)buf, (void)len, (void)flags, (void)user;
    return -1; // the framer only writes
}

// The header of an unmasked server frame of one message (RFC 6455 §5.2)
// carrying data[len] into out[14]; its length, or 0 on failure. wslay
// passes the payload to head_cb, which takes it without copying (an
// unmasked payload goes as is), so the frame is complete and the next one
// starts from its header.
static size_t frame_head(net_server* srv, bool binary, const uint8_t* data, size_t len,
                         uint8_t* out) {
    static const struct wslay_frame_callbacks cbs = {head_cb, no_recv_cb, NULL};
    if (srv->framer == NULL && wslay_frame_context_init(&srv->framer, &cbs, srv) != 0) {
        srv->framer = NULL;
        return 0;
    }
    struct wslay_frame_iocb io;
    memset(&io, 0, sizeof io);
    io.fin = 1;
    io.opcode = binary ? WSLAY_BINARY_FRAME : WSLAY_TEXT_FRAME;
    io.payload_length = len;
    io.data = data;
    io.data_length = len;
    srv->head_done = false;
    if (wslay_frame_send(srv->framer, &io) != (ssize_t)len || !srv->head_done) {
        return 0;
    }
    memcpy(out, srv->head, srv->head_len);
    return srv->head_len;
}

// Sends what wslay produced (out) and every waiting snapshot in one
// writev, the snapshots' payloads from their blobs.
static int send_slots(net_session* s) {
    net__piece pieces[NET__MAX_PIECES];
    uint8_t heads[NET__MAX_SLOTS][14];
    unsigned n = 0;
    if (s->out_len > 0) {
        pieces[n++] = (net__piece){s->out, s->out_len, NULL};
    }
    for (uint32_t i = 0; i < s->slot_count; ++i) {
        net__slot* slot = &s->slots[i];
        size_t hl = frame_head(s->srv, slot->binary, slot->blob->data, slot->blob->len, heads[i]);
        if (hl == 0) {
            return UV_ENOMEM;
        }
        pieces[n++] = (net__piece){heads[i], hl, NULL};
        pieces[n++] = (net__piece){slot->blob->data, slot->blob->len, slot->blob};
    }
    int rc = net__writev(s, pieces, n);
    s->out_len = 0;
    release_slots(s);
    return rc;
}

void net__ws_flush(net_session* s) {
    if (s->state != NET__WS) {
        return;
    }
    const net_config* cfg = &s->srv->cfg;
    if (wslay_event_want_write(s->ws) && wslay_event_send(s->ws) != 0) {
        net__close_now(s);
        return;
    }
    if (s->slot_count > 0 && queued_bytes(s) < cfg->send_soft_limit) {
        // After what wslay queued before them (its queue is now in `out`,
        // whole frames only: its send callback takes everything), and never
        // after a close frame.
        int rc = 0;
        if (wslay_event_get_close_sent(s->ws)) {
            release_slots(s);
        } else if ((rc = send_slots(s)) != 0) {
            net__stats_cause(s, "write error", rc);
            net__close_now(s);
            return;
        }
    }
    if (s->out_len > 0) {
        int rc = net__write(s, s->out, s->out_len);
        s->out_len = 0;
        if (rc != 0) {
            net__stats_cause(s, "write error", rc);
            net__close_now(s);
            return;
        }
    }
    size_t queued = queued_bytes(s);
    if (queued > cfg->send_hard_limit) {
        // The peer does not read. Its queue is full of replies and events we
        // promised never to drop, so the session has to go.
        net__stats_cause(s, "send queue over the hard limit", 0);
        net__close_now(s);
        return;
    }
    // Backpressure: a client whose replies pile up is not read (so it cannot
    // ask for more) until it has taken most of them. The gap between the two
    // marks keeps a client near the limit from flapping.
    if (queued > cfg->read_pause_limit) {
        net__read_pause(s, true);
    } else if (queued <= cfg->send_soft_limit) {
        net__read_pause(s, false);
        if (s->state != NET__WS) {
            return;
        }
    }
    if (!wslay_event_want_read(s->ws) && !wslay_event_want_write(s->ws)) {
        // Both close frames have passed (or reading failed): finish.
        net__close_graceful(s);
    }
}

int net_session_send_text(net_session* s, const char* data, size_t len) {
    if (s->state != NET__WS || s->close_queued) {
        return UV_ECANCELED;
    }
    struct wslay_event_msg msg = {WSLAY_TEXT_FRAME, (const uint8_t*)data, len};
    if (wslay_event_queue_msg(s->ws, &msg) != 0) {
        return UV_ECANCELED;
    }
    if (!s->in_feed) {
        // Replies to what a read brought are written together after it.
        net__ws_flush(s);
    }
    return 0;
}

int net_session_send_latest(net_session* s, uint64_t key, net_blob* blob, bool binary) {
    if (s->state != NET__WS || s->close_queued) {
        return UV_ECANCELED;
    }
    net__slot* slot = NULL;
    for (uint32_t i = 0; i < s->slot_count; ++i) {
        if (s->slots[i].key == key) {
            slot = &s->slots[i];
            net_blob_unref(slot->blob);
            s->dropped++;
            break;
        }
    }
    if (slot == NULL) {
        if (s->slot_count == NET__MAX_SLOTS) {
            // More streams than slots: the oldest waiting payload gives way.
            net_blob_unref(s->slots[0].blob);
            memmove(&s->slots[0], &s->slots[1], (NET__MAX_SLOTS - 1) * sizeof s->slots[0]);
            s->slot_count--;
            s->dropped++;
        }
        slot = &s->slots[s->slot_count++];
    }
    slot->key = key;
    slot->blob = net_blob_ref(blob);
    slot->binary = binary;
    net__ws_flush(s);
    return 0;
}

bool net_session_latest_waiting(const net_session* s, uint64_t key) {
    for (uint32_t i = 0; i < s->slot_count; ++i) {
        if (s->slots[i].key == key) {
            return true;
        }
    }
    return false;
}

void net_session_cancel_latest(net_session* s, uint64_t key) {
    for (uint32_t i = 0; i < s->slot_count; ++i) {
        if (s->slots[i].key == key) {
            net_blob_unref(s->slots[i].blob);
            s->slots[i] = s->slots[--s->slot_count];
            s->dropped++;
            return;
        }
    }
}

void net_session_close(net_session* s, uint16_t code, const char* reason) {
    if (s->state != NET__WS || s->close_queued) {
        return;
    }
    net__stats_closing(s, code, reason);
    s->close_queued = true;
    release_slots(s);
    size_t rlen = reason != NULL ? strlen(reason) : 0;
    if (rlen > 120) {
        rlen = 120; // a control frame body is at most 125 bytes
    }
    wslay_event_queue_close(s->ws, code, (const uint8_t*)reason, rlen);
    net__ws_flush(s);
    if (s->state == NET__WS) {
        // Sent our close: stop waiting for the peer's beyond the grace period.
        net__close_graceful(s);
    }
}

static void ws_timer_cb(uv_timer_t* t) {
    net__ws_tick(t->data);
}

void net__ws_tick(net_session* s) {
    if (s->state != NET__WS) {
        return;
    }
    const net_config* cfg = &s->srv->cfg;
    uint64_t now = net__now_ms(s);
    uint64_t silent = now - s->last_rx_ms;
    if (silent >= cfg->idle_timeout_ms) {
        net_session_close(s, WSLAY_CODE_GOING_AWAY, "idle timeout");
        return;
    }
    if (silent >= cfg->ping_interval_ms && now - s->last_ping_ms >= cfg->ping_interval_ms) {
        s->last_ping_ms = now;
        struct wslay_event_msg ping = {WSLAY_PING, (const uint8_t*)"rd", 2};
        wslay_event_queue_msg(s->ws, &ping);
        net__ws_flush(s);
    }
}

void net__ws_free(net_session* s) {
    net__backlog_drop(s);
    release_slots(s);
    if (s->ws != NULL) {
        wslay_event_context_free(s->ws);
        s->ws = NULL;
    }
    free(s->out);
    s->out = NULL;
    s->out_len = s->out_cap = 0;
}
