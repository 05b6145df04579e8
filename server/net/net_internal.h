/*
 * net_internal.h: the private layout of sessions and the server, shared by
 * the files of server/net.
 *
 * A session's life:
 *
 *   accept ──► HTTP ──(GET /ws + valid handshake)──► WS ──► CLOSING ──► freed
 *                │                                     │        ▲
 *                └─(response, Connection: close)───────┴────────┘
 *
 * CLOSING means uv_close() or a graceful shutdown is under way; the session
 * is freed in the last handle's close callback, which is also where the
 * application's on_close runs (never inside one of its own calls).
 */
#pragma once

#include "net.h"
#include "stats.h"

#include <http_parser.h>
#include <wslay/wslay.h>

#define NET__COOKIE    0x4e455443u /* "NETC" */
#define NET__MAX_URL   1024
#define NET__MAX_SLOTS 8
/// Bytes a fragment costs to hold beyond its payload (wslay keeps each in a
/// list node of its own), counted against max_message_bytes.
#define NET__FRAGMENT_OVERHEAD 64

typedef enum net__state {
    NET__HTTP = 0, ///< Reading HTTP requests.
    NET__WS = 1,   ///< WebSocket open.
    NET__CLOSING,  ///< Shutting down or closing handles.
} net__state;

/// Headers the handshake needs; their values are captured while parsing.
enum net__header {
    NET__H_UPGRADE,
    NET__H_CONNECTION,
    NET__H_KEY,
    NET__H_VERSION,
    NET__H_PROTOCOL,
    NET__H_ORIGIN,
    NET__H_HOST,
    NET__H_AUTHORIZATION,
    NET__H_COUNT
};

/// A "latest wins" payload waiting for the socket to drain.
typedef struct net__slot {
    uint64_t key;
    net_blob* blob;
    bool binary;
} net__slot;

struct net_session {
    net_server* srv;
    net_session* prev;
    net_session* next;
    uv_tcp_t tcp;
    uv_timer_t timer;
    uv_shutdown_t shutdown_req;
    int open_handles; ///< Handles not yet closed; the session is freed at 0.
    net__state state;
    bool opened;            ///< on_open was called, so on_close is owed.
    bool accepted;          ///< on_upgrade accepted: on_close is owed even without on_open.
    bool close_queued;      ///< A close frame is queued: ignore further messages.
    bool close_after_write; ///< HTTP: shut down once the response is written.
    bool read_paused;       ///< Backpressure: the send queue is above read_pause_limit.
    bool backlogged;        ///< Input waits in `backlog`: the session spent its turn.
    bool reading;           ///< uv_read_start is in force.
    uint64_t id;
    char peer[48]; ///< The peer's address as text.
    void* data;
    uint64_t last_rx_ms;
    uint64_t last_ping_ms;
    uint64_t dropped;

    // HTTP request being parsed.
    http_parser parser;
    size_t header_bytes;
    uint32_t header_count;
    char url[NET__MAX_URL];
    size_t url_len;
    char field[32];
    size_t field_len;
    int cur_header; ///< enum net__header of the value being read, or -1.
    bool in_value;
    char hval[NET__H_COUNT][256];
    size_t hlen[NET__H_COUNT];
    bool htrunc; ///< A captured header value was cut to fit hval.
    bool request_done;
    bool request_too_large;

    // WebSocket.
    wslay_event_context_ptr ws;
    const uint8_t* rbuf; ///< Bytes read from the socket not yet given to wslay.
    size_t rlen;
    uint8_t* out; ///< Bytes wslay produced, not yet handed to uv_write.
    size_t out_len, out_cap;
    net__slot slots[NET__MAX_SLOTS];
    uint32_t slot_count;
    // Frame headers in the input, tracked ahead of wslay (which reports a
    // frame only once some of its payload has arrived) so that a message
    // declared too big is refused from its header alone.
    uint8_t fh[14];      ///< The header being read.
    uint8_t fh_len;      ///< Bytes of it so far.
    uint64_t fpay_left;  ///< Payload bytes of the current frame still to come.
    uint64_t fmsg_len;   ///< Bytes the fragmented message holds so far (with overhead).
    uint32_t fmsg_frags; ///< Frames of the fragmented message so far.
    // Fairness (net_config.max_messages_per_turn): what this turn handled,
    // and the input left over for the next turn.
    uint32_t turn_msgs;
    size_t turn_bytes;
    bool turn_spent;
    bool in_feed;     ///< Inside wslay_event_recv: replies are flushed once, after.
    uint8_t* backlog; ///< Input not yet handed to wslay (malloc'ed), or NULL.
    size_t backlog_off, backlog_len;
    uint8_t backlog_refuse;    ///< A refusal scan_frames found at the backlog's end.
    net_session* backlog_next; ///< In net_server.backlog while backlogged.

    // Bytes each way, the peer's port, why it ended (stats.c).
    net__session_stats st;
};

struct net_server {
    uv_loop_t* loop;
    uv_tcp_t listener;
    net_config cfg;
    char* host;
    char* web_root;
    char* ws_path;
    char* subprotocol;
    net_callbacks cb;
    net_session* sessions; ///< Doubly linked list of every connection.
    /// Sessions with input waiting for their next turn, and the idle handle
    /// that gives it to them (active only while the list is not empty).
    net_session* backlog;
    uv_idle_t idle;
    bool idle_closed;
    uint32_t ws_count;
    uint64_t next_id;
    int port;
    bool stopping;
    bool listener_closed;
    void (*done)(void* arg);
    void* done_arg;
    uint8_t read_buf[64 * 1024]; ///< Shared: a read is consumed before the next.
    /// Frames snapshot headers (ws.c): wslay writes a header into `head`,
    /// and the payload is sent from its blob, not copied.
    wslay_frame_context_ptr framer;
    uint8_t head[14];
    size_t head_len;
    bool head_done;

    // Traffic totals (stats.c).
    net__server_stats st;
};

/// Milliseconds of the loop's clock.
uint64_t net__now_ms(const net_session* s);

/// Queues bytes for the socket (copied). Returns 0 or a libuv error.
int net__write(net_session* s, const void* data, size_t len);

/// Most pieces one net__writev() takes: what wslay produced, then a header
/// and a payload for each waiting snapshot.
#define NET__MAX_PIECES (1 + 2 * NET__MAX_SLOTS)

/// One piece of a write: bytes of the caller's, copied only if the socket
/// does not take them at once, or a blob's, which a write that must wait
/// keeps a reference to instead of a copy.
typedef struct net__piece {
    const uint8_t* data;
    size_t len;
    net_blob* blob; ///< Owner of data, or NULL.
} net__piece;

/// Writes n pieces (n <= NET__MAX_PIECES) in order with one writev when
/// the socket takes them; what it does not take is queued (blob pieces by
/// reference). Returns 0 or a libuv error.
int net__writev(net_session* s, const net__piece* pieces, unsigned n);

/// Sets or clears backpressure (read_paused) and updates reading to match
/// (net__read_update). Idempotent.
void net__read_pause(net_session* s, bool pause);

/// Starts or stops reading to match the session's state: reading runs unless
/// backpressure (read_paused) or a backlog holds it. A failure to start
/// closes the session.
void net__read_update(net_session* s);

/// The idle callback that gives backlogged sessions their turns (ws.c).
void net__on_idle(uv_idle_t* h);

/// Drops the session's backlog and takes it off the server's list.
void net__backlog_drop(net_session* s);

/// Closes the session's handles at once (no close frame). Idempotent.
void net__close_now(net_session* s);

/// Closes gracefully: shuts down the write side once queued data is out,
/// reads and discards until the peer's EOF, then closes; forces the close
/// after a short deadline. Idempotent.
void net__close_graceful(net_session* s);

/// (Re)starts the deadline for the current HTTP request to complete.
void net__arm_request_deadline(net_session* s);

/// Feeds bytes read in HTTP state to the parser and handles complete requests.
void net__http_feed(net_session* s, const uint8_t* data, size_t len);

/// Resets per-request parsing state (after a response on a keep-alive connection).
void net__http_reset(net_session* s);

/// Writes a complete HTTP response. `extra_headers` is "" or CRLF-terminated
/// lines. When close is true the connection closes after the write.
void net__http_respond(net_session* s, int status, const char* content_type,
                       const char* extra_headers, const char* body, size_t body_len, bool close);

/// Validates the handshake of the current request and, on success, answers
/// 101, creates the wslay context and enters WS state. On failure it answers
/// 400/426 and closes. `rest`/`rest_len` are bytes after the request.
void net__ws_upgrade(net_session* s, const uint8_t* rest, size_t rest_len);

/// Feeds bytes read in WS state to wslay and flushes what it produces.
void net__ws_feed(net_session* s, const uint8_t* data, size_t len);

/// Moves waiting payloads into wslay (if the socket keeps up), lets wslay
/// frame everything, and writes it. Enforces the hard limit.
void net__ws_flush(net_session* s);

/// Periodic WebSocket housekeeping: ping when silent, close when idle.
void net__ws_tick(net_session* s);

/// Frees the WebSocket state (wslay context, out buffer, waiting payloads).
void net__ws_free(net_session* s);

/// Starts a session on a connected stream socket the caller already has, as
/// if the listener had accepted it: the way tests and the fuzz harness drive
/// a session through one end of a socketpair, without a network. The
/// session owns fd from the call on (on failure fd is closed). Returns 0,
/// UV_ECANCELED when the server is stopping, or another libuv error; on
/// success the session closes as any other (net_server_stop included).
int net__session_adopt(net_server* srv, uv_os_sock_t fd);
