/*
 * stats.c: traffic accounting and close bookkeeping of sessions (stats.h),
 * and the accessors of net.h that logs and /metrics read: bytes in and
 * out, the peer's address, the close codes of both sides and why a
 * session ended.
 *
 * It owns no handle and decides nothing: the read, write, refusal and
 * close paths call its hooks, and it only counts and remembers.
 */
#include "net_internal.h"

#include <stdio.h>
#include <string.h>

void net__stats_accepted(net_session* s) {
    struct sockaddr_storage sa;
    int len = sizeof sa;
    unsigned port = 0;
    if (uv_tcp_getpeername(&s->tcp, (struct sockaddr*)&sa, &len) == 0) {
        if (sa.ss_family == AF_INET6) {
            port = ntohs(((const struct sockaddr_in6*)&sa)->sin6_port);
        } else if (sa.ss_family == AF_INET) {
            port = ntohs(((const struct sockaddr_in*)&sa)->sin_port);
        }
    }
    if (s->peer[0] == '\0') {
        snprintf(s->st.peer, sizeof s->st.peer, "unknown");
    } else if (strchr(s->peer, ':') != NULL) {
        snprintf(s->st.peer, sizeof s->st.peer, "[%s]:%u", s->peer, port);
    } else {
        snprintf(s->st.peer, sizeof s->st.peer, "%s:%u", s->peer, port);
    }
}

void net__stats_in(net_session* s, size_t n) {
    s->st.bytes_in += n;
    s->srv->st.bytes_in += n;
}

void net__stats_out(net_session* s, size_t n) {
    s->st.bytes_out += n;
    s->srv->st.bytes_out += n;
}

// What a close code means, for a close that came without a reason.
static const char* code_text(uint16_t code) {
    switch (code) {
    case 1000:
        return "normal closure";
    case 1001:
        return "going away";
    case 1002:
        return "protocol error";
    case 1003:
        return "unsupported data";
    case 1007:
        return "invalid frame payload data";
    case 1008:
        return "policy violation";
    case 1009:
        return "message too big";
    case 1011:
        return "internal error";
    }
    return "closed";
}

void net__stats_closing(net_session* s, uint16_t code, const char* reason) {
    // A close the peer began is the peer's: the server's reply (or a later
    // shutdown) does not make it the server's.
    if (s->st.reason[0] != '\0' || s->ws == NULL || wslay_event_get_close_received(s->ws)) {
        return;
    }
    snprintf(s->st.reason, sizeof s->st.reason, "%s",
             reason != NULL && reason[0] != '\0' ? reason : code_text(code));
}

void net__stats_cause(net_session* s, const char* what, int err) {
    if (s->st.cause[0] != '\0') {
        return;
    }
    if (err != 0) {
        snprintf(s->st.cause, sizeof s->st.cause, "%s: %s", what, uv_err_name(err));
    } else {
        snprintf(s->st.cause, sizeof s->st.cause, "%s", what);
    }
}

void net__stats_responded(net_session* s, int status, const char* body, size_t len) {
    net_server* srv = s->srv;
    size_t plen = strcspn(s->url, "?#");
    if (status < 400 || srv->cb.on_refused == NULL || plen != strlen(srv->cfg.ws_path) ||
        strncmp(s->url, srv->cfg.ws_path, plen) != 0) {
        return;
    }
    // The response's text, one line, without its newline.
    char why[96];
    size_t n = body != NULL ? strcspn(body, "\r\n") : 0;
    n = n < len ? n : len;
    n = n < sizeof why - 1 ? n : sizeof why - 1;
    memcpy(why, body != NULL ? body : "", n);
    why[n] = '\0';
    srv->cb.on_refused(srv->cb.ctx, s, status, why);
}

void net__stats_freed(net_session* s) {
    s->srv->st.dropped_gone += s->dropped;
}

// ---------------------------------------------------------------------------
// Accessors (net.h)
// ---------------------------------------------------------------------------

uint64_t net_session_bytes_in(const net_session* s) {
    return s->st.bytes_in;
}

uint64_t net_session_bytes_out(const net_session* s) {
    return s->st.bytes_out;
}

const char* net_session_peer_name(const net_session* s) {
    return s->st.peer[0] != '\0' ? s->st.peer : "unknown";
}

uint16_t net_session_close_code_sent(const net_session* s) {
    return s->ws != NULL ? wslay_event_get_status_code_sent(s->ws) : 0;
}

uint16_t net_session_close_code_received(const net_session* s) {
    return s->ws != NULL ? wslay_event_get_status_code_received(s->ws) : 0;
}

const char* net_session_close_reason(const net_session* s) {
    if (s->st.reason[0] != '\0') {
        return s->st.reason;
    }
    uint16_t sent = net_session_close_code_sent(s);
    uint16_t received = net_session_close_code_received(s);
    // close_queued marks a close the server began (net_session_close, or a
    // message refused from its header); wslay's echo of the peer's close
    // does not set it.
    if (s->ws != NULL && wslay_event_get_close_received(s->ws) && !s->close_queued &&
        (sent == WSLAY_CODE_ABNORMAL_CLOSURE || sent == received)) {
        return "closed by the peer"; // and answered with its own code, or not at all
    }
    if (s->ws != NULL && wslay_event_get_close_sent(s->ws)) {
        return code_text(sent); // the framing layer's own: a protocol error, 1009
    }
    if (s->st.cause[0] != '\0') {
        return s->st.cause;
    }
    return "connection lost";
}

void net_server_stats(const net_server* srv, net_stats* out) {
    out->bytes_in = srv->st.bytes_in;
    out->bytes_out = srv->st.bytes_out;
    out->latest_dropped = srv->st.dropped_gone;
    for (const net_session* s = srv->sessions; s != NULL; s = s->next) {
        out->latest_dropped += s->dropped;
    }
}
