/*
 * net.h: the network layer of ragdolld (target rd_net): one TCP port that
 * speaks HTTP/1.1 (static files, dynamic routes) and WebSocket (RFC 6455).
 *
 * What it owns: the listening socket, every connection ("session"), HTTP
 * parsing (http_parser), the WebSocket handshake (SHA-1 and base64 from
 * nettle), framing (wslay), per-session send queues with backpressure, and
 * the close path. It knows nothing about physics or the command protocol:
 * the application sees sessions, messages and opaque payloads.
 *
 * Threading: everything runs on the thread of the uv_loop_t passed in; no
 * function may be called from another thread.
 *
 * Errors: functions that can fail return 0 or a negative libuv error code
 * (uv_strerror() works on it). If a function that takes a callback fails, the
 * callback is never called.
 *
 * Lifetime: a net_session is owned by the server. The application learns of
 * it in on_open and may use the pointer until on_close returns; on_close is
 * called exactly once per opened session, from the loop (never from inside
 * one of the application's own calls into net), after which the session is
 * freed.
 */
#pragma once

#include <uv.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// A refcounted, immutable payload shared by many session queues (Redis's
/// replBufBlock): a snapshot is encoded once and queued to every subscriber.
typedef struct net_blob {
    uint32_t refs;  ///< Owned by net_blob_ref()/net_blob_unref().
    size_t len;     ///< Bytes in data.
    uint8_t data[]; ///< The payload.
} net_blob;

/// Allocates a blob of len bytes with one reference, copying `data` into it
/// when data is not NULL. Returns NULL when out of memory.
net_blob* net_blob_create(const void* data, size_t len);

/// Adds a reference and returns b.
net_blob* net_blob_ref(net_blob* b);

/// Drops a reference; the last one frees the blob. NULL is allowed.
void net_blob_unref(net_blob* b);

/// A connection. Opaque; see the lifetime rules above.
typedef struct net_session net_session;

/// The listening server. Opaque.
typedef struct net_server net_server;

/// A response to a dynamic HTTP route. `body` is malloc()ed by the
/// application; net takes ownership and free()s it.
typedef struct net_http_response {
    int status;               ///< e.g. 200.
    const char* content_type; ///< Static string, e.g. "application/json".
    char* body;
    size_t body_len;
} net_http_response;

/// What the application sees of a WebSocket upgrade request, to admit or
/// refuse it (net_callbacks.on_upgrade). Header values are NUL-terminated
/// copies of the request's (repeated headers joined with ","), NULL when
/// the header was absent; valid only during the call.
typedef struct net_upgrade {
    const char* origin;        ///< Origin, or NULL (native clients send none).
    const char* host;          ///< Host, or NULL.
    const char* authorization; ///< Authorization, or NULL.
    const char* protocols;     ///< Sec-WebSocket-Protocol (the offered list), or NULL.
    const char* peer;          ///< The peer's address as text ("127.0.0.1", "::1").
    /// True when one of the headers above was longer than net keeps (255
    /// bytes): its value is cut and must not be trusted.
    bool truncated;
} net_upgrade;

/// Application hooks. Any may be NULL.
typedef struct net_callbacks {
    void* ctx; ///< Passed to every callback.
    /// A GET/HEAD request for `path` (no query string). Return true and fill
    /// *resp to answer it; false lets net serve a static file or 404.
    bool (*on_http)(void* ctx, const char* path, net_http_response* resp);
    /// A WebSocket session completed its handshake.
    void (*on_open)(void* ctx, net_session* s);
    /// A complete message arrived (text is valid UTF-8, at most
    /// max_message_bytes). `data` is valid only during the call.
    void (*on_message)(void* ctx, net_session* s, const uint8_t* data, size_t len, bool binary);
    /// The session is gone; the pointer dies when this returns.
    void (*on_close)(void* ctx, net_session* s);
    /// A valid WebSocket upgrade request, before it is answered. Return 0 to
    /// accept it (on_open follows; if the
    /// handshake then fails, on_close is still called), or an HTTP status (401, 403, 429, 503)
    /// to refuse it: net answers that status with *reason (a static string,
    /// or NULL for the status text) as the body and closes the connection.
    /// The session's data pointer may be set here; on_open sees it.
    int (*on_upgrade)(void* ctx, net_session* s, const net_upgrade* req, const char** reason);
    /// A request for ws_path was answered with an error `status` instead of
    /// an upgrade (400 bad handshake, 426, 503 server full, or any refusal
    /// answered through net). `why` is the response's text without its
    /// newline, valid during the call. The connection closes after the
    /// response; no on_open or on_close follows. For logs and counters.
    void (*on_refused)(void* ctx, const net_session* s, int status, const char* why);
} net_callbacks;

/// Server settings. Start from net_config_default().
typedef struct net_config {
    const char* host;              ///< Address to bind, e.g. "127.0.0.1" or "::".
    int port;                      ///< 0 lets the kernel choose (see net_server_port()).
    const char* web_root;          ///< Directory of static files, or NULL for none.
    const char* ws_path;           ///< Path that upgrades, "/ws".
    const char* subprotocol;       ///< Offered subprotocol we accept, e.g. "ragdolld.v1".
    size_t max_message_bytes;      ///< Largest message from a client; beyond: close 1009.
    size_t max_header_bytes;       ///< Request line + headers; beyond: 431.
    uint32_t max_headers;          ///< Header count; beyond: 431.
    uint32_t handshake_timeout_ms; ///< A request must complete within this.
    uint32_t ping_interval_ms;     ///< Ping a WebSocket that has been silent this long.
    uint32_t idle_timeout_ms;      ///< Close (1001) a WebSocket silent this long.
    size_t send_soft_limit;        ///< Bytes queued above which "latest" payloads wait.
    /// Bytes queued above which the session's socket is no longer read, so a
    /// client that does not read its replies cannot make more: reading
    /// resumes once the queue has drained to send_soft_limit. Must lie in
    /// [send_soft_limit, send_hard_limit].
    size_t read_pause_limit;
    size_t send_hard_limit; ///< Bytes queued above which the session is dropped.
    /// WebSocket sessions at most; an upgrade beyond it is answered 503 and
    /// the connection closed. 0 means no limit.
    uint32_t max_sessions;
    /// Messages (and message bytes) one session may have handled per turn
    /// of the loop: past either, its remaining input waits (reading
    /// stopped) until the loop has run its timers and every other session,
    /// so one client's burst cannot hold the loop (issue 8's stall).
    uint32_t max_messages_per_turn;
    size_t max_bytes_per_turn;
    /// Frames one fragmented message may arrive in; beyond: close 1009. Each
    /// fragment also counts 64 bytes against
    /// max_message_bytes, the memory it costs to hold.
    uint32_t max_fragments;
    /// Connections from one address still in HTTP state (before or without
    /// an upgrade) at most; a further one is answered 429 and closed. 0
    /// means no limit. WebSocket sessions per address are the
    /// application's to limit (on_upgrade), since it knows who is who.
    uint32_t max_http_per_address;
    uint32_t cookie; ///< Set by net_config_default().
} net_config;

/// Defaults: 127.0.0.1:8080, no web root, "/ws", no subprotocol, 64 KiB
/// messages, 8 KiB / 64 headers, 10 s handshake, ping after 20 s, close after
/// 60 s, soft limit 256 KiB, reading paused above 1 MiB, hard limit 8 MiB,
/// 1024 sessions, 64 messages or 64 KiB per session per turn of the loop,
/// 64 fragments per message, 16 HTTP connections per address.
net_config net_config_default(void);

/// Binds, listens and starts accepting on `loop`. Strings in cfg are copied.
/// Returns 0 and *out, or a negative libuv error (e.g. UV_EADDRINUSE) or
/// UV_EINVAL for a bad config.
int net_server_start(uv_loop_t* loop, const net_config* cfg, const net_callbacks* cb,
                     net_server** out);

/// The bound port (useful with port 0).
int net_server_port(const net_server* srv);

/// Open WebSocket sessions.
uint32_t net_server_session_count(const net_server* srv);

/// Stops accepting, closes every WebSocket with `code` (1001 for a
/// shutdown) and every other connection, and frees the server once all its
/// handles are closed; then calls done(arg) if done is not NULL. on_close is
/// called for every open session first.
void net_server_stop(net_server* srv, uint16_t code, void (*done)(void* arg), void* arg);

/// Queues a text message that is never dropped (replies, events). Returns 0,
/// or UV_ECANCELED when the session is closing (the message is discarded).
/// Exceeding send_hard_limit drops the connection at once (a close frame
/// could not get through the full queue); on_close follows from the loop.
int net_session_send_text(net_session* s, const char* data, size_t len);

/// Queues a payload under `key` with "latest wins" semantics: if a payload
/// with the same key is still waiting (the socket is behind), it is replaced
/// and dropped. Takes its own reference to blob. Returns 0, or UV_ECANCELED
/// when the session is closing. Waiting payloads go out when the socket's
/// queue is below send_soft_limit.
int net_session_send_latest(net_session* s, uint64_t key, net_blob* blob, bool binary);

/// Whether a payload sent with net_session_send_latest() under `key` is
/// still waiting (not yet handed to the socket). A stream whose payloads
/// must not be replaced (they build on each other) sends only when not.
bool net_session_latest_waiting(const net_session* s, uint64_t key);

/// Drops the payload waiting under `key`, if any (counted as dropped). Used
/// before sending a newer must-deliver message for the same stream, so the
/// stream's order holds.
void net_session_cancel_latest(net_session* s, uint64_t key);

/// Starts closing a WebSocket with a close frame (`code`, short UTF-8
/// `reason` or NULL). Idempotent. on_close follows from the loop.
void net_session_close(net_session* s, uint16_t code, const char* reason);

/// The application's pointer for this session (NULL until set).
void* net_session_data(const net_session* s);

/// Sets the application's pointer for this session.
void net_session_set_data(net_session* s, void* data);

/// A process-unique number for logs (1, 2, 3, ...).
uint64_t net_session_id(const net_session* s);

/// The peer's address as text ("127.0.0.1", "::1"); "" if unknown. Valid
/// while the session is.
const char* net_session_peer(const net_session* s);

/// Payloads replaced before they were sent ("latest wins" drops).
uint64_t net_session_dropped(const net_session* s);

/// Bytes read from the session's socket so far (its HTTP request included).
uint64_t net_session_bytes_in(const net_session* s);

/// Bytes handed to the session's socket so far (the 101 response, frame
/// headers and close frames included): written, or waiting in libuv's write
/// queue.
uint64_t net_session_bytes_out(const net_session* s);

/// The peer's address and port as text for logs: "192.0.2.7:51234" or
/// "[2001:db8::1]:51234" (net_session_peer() is the address alone);
/// "unknown" when the socket could not tell. Valid while the session is.
const char* net_session_peer_name(const net_session* s);

/// The status code of the close frame the server sent (1000..4999), 1005
/// for one without a code, 1006 (abnormal closure) when none was sent, 0
/// for a session that never became a WebSocket. Meaningful in on_close,
/// which is the last moment it can be asked.
uint16_t net_session_close_code_sent(const net_session* s);

/// The status code of the peer's close frame, with the same conventions as
/// net_session_close_code_sent() (1006: the peer sent none).
uint16_t net_session_close_code_received(const net_session* s);

/// Why the session ended, in a few words for logs: the reason the server
/// gave net_session_close() (or the meaning of the code when it gave
/// none), "closed by the peer", what the server's framing refused
/// ("message too big", "protocol error"), or why the connection was
/// dropped without a closing handshake ("connection closed by the peer",
/// "send queue over the hard limit", "write error: EPIPE"). Never a
/// client's own close reason. Static storage in the session; meaningful in
/// on_close.
const char* net_session_close_reason(const net_session* s);

/// Traffic of a whole server since it started, every connection (HTTP and
/// WebSocket, open or gone) counted.
typedef struct net_stats {
    uint64_t bytes_in;  ///< Bytes read from sockets.
    uint64_t bytes_out; ///< Bytes handed to sockets (net_session_bytes_out()).
    /// "Latest" payloads replaced or cancelled before they were sent
    /// (net_session_dropped() summed over every session).
    uint64_t latest_dropped;
} net_stats;

/// Fills *out with the server's traffic so far. O(open sessions).
void net_server_stats(const net_server* srv, net_stats* out);

/// Bytes queued for the session and not yet handed to the kernel: libuv's
/// write queue plus wslay's queue, the figure the send limits of net_config
/// compare against ("latest" payloads still waiting are not counted: they
/// are shared and replaced, not accumulated). 0 for a session not in
/// WebSocket state.
size_t net_session_queued_bytes(const net_session* s);

#ifdef __cplusplus
}
#endif
