/*
 * rdc.h: the ragdolld C client library (target rdc). A game, a tool or a
 * load generator talks to a ragdolld server through it: one rdc_client is
 * one WebSocket connection (protocol/PROTOCOL.md) that rdc keeps up.
 *
 * What it owns: the connection (libuv TCP, the HTTP upgrade handshake with
 * subprotocol "ragdolld.v1", WebSocket framing by wslay in client mode with
 * masked frames), reconnecting with exponential backoff, command ids and
 * matching replies to them, subscriptions (re-sent after a reconnect), and
 * decoding snapshots, JSON or binary, into plain arrays.
 *
 * Threading: an rdc_client lives on the thread of the uv_loop_t it was
 * opened on. Every function must be called from that thread, and every
 * callback runs on it, from the loop (never from inside a call into rdc,
 * except where a function says otherwise). Callbacks may call any rdc
 * function, including rdc_close() on their own client.
 *
 * Errors: functions that can fail return 0 or a negative code: a libuv
 * error (UV_ECONNREFUSED, UV_ENOMEM, ...; uv_strerror() works) or an
 * RDC_E_* code below; rdc_strerror() and rdc_err_name() name both. If a
 * function that takes a callback fails, that callback is never called.
 *
 * Units: SI as in PROTOCOL.md (m, s, rad, kg), +Y up; times in the API are
 * milliseconds where the name says _ms.
 *
 * Memory: rdc copies what it is given (URL, token, command text). Pointers
 * it passes to callbacks (replies, events, snapshots and everything in
 * them) are valid only during the callback.
 *
 * Dependencies: libuv (uv.h) and cJSON (replies and events are handed over
 * parsed, as read-only cJSON trees, next to their raw text).
 */
#pragma once

#include <cJSON.h>
#include <uv.h>

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// Marks the library's exported functions (the library is built with hidden
/// visibility; only rdc_ names are exported).
#if defined(__GNUC__)
#define RDC_API __attribute__((visibility("default")))
#else
#define RDC_API
#endif

/// Lets the compiler check rdc_sendf()'s format against its arguments.
#if defined(__GNUC__)
#define RDC_PRINTF(fmt, args) __attribute__((format(printf, fmt, args)))
#else
#define RDC_PRINTF(fmt, args)
#endif

/// The library's version.
#define RDC_VERSION "0.1.0"

// ---------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------

/// rdc's own error codes: XX(NAME, value, "message"). The values lie below
/// every libuv code, so the two never collide.
#define RDC_ERRNO_MAP(XX)                                                                          \
    XX(URL, -30001, "not a ws://host[:port][/path] URL")                                           \
    XX(HANDSHAKE, -30002, "the server refused the WebSocket handshake")                            \
    XX(PROTOCOL, -30003, "the server broke the WebSocket or ragdolld protocol")                    \
    XX(NOT_CONNECTED, -30004, "not connected")                                                     \
    XX(DISCONNECTED, -30005, "the connection was lost before the reply arrived")                   \
    XX(CLOSED, -30006, "the client was closed")                                                    \
    XX(TIMEOUT, -30007, "timed out")                                                               \
    XX(BAD_COMMAND, -30008, "the command is not a JSON object with a string \"op\"")               \
    XX(QUEUE_FULL, -30009, "too many bytes are waiting to be sent")                                \
    XX(SERVER, -30010, "the server replied with an error")                                         \
    XX(TOO_MANY, -30011, "too many subscriptions")                                                 \
    XX(CONFIG, -30012, "bad configuration")

/// An rdc error code (negative).
typedef enum rdc_errno {
#define RDC__ERR_ENUM(name, value, msg) RDC_E_##name = (value),
    RDC_ERRNO_MAP(RDC__ERR_ENUM)
#undef RDC__ERR_ENUM
} rdc_errno;

/// A message for any code rdc returns: rdc's own, libuv's, or "ok" for 0.
/// Static storage.
RDC_API const char* rdc_strerror(int err);

/// The name of a code: "RDC_E_TIMEOUT"-style for rdc's ("timeout" is what
/// replies carry, see rdc_reply.code), libuv's names (e.g. "ECONNREFUSED")
/// for libuv's, "OK" for 0. Static storage.
RDC_API const char* rdc_err_name(int err);

// ---------------------------------------------------------------------------
// Snapshots
// ---------------------------------------------------------------------------

/// Entity kinds; the values are the wire codes of PROTOCOL.md §5.2.
typedef enum rdc_kind {
    RDC_KIND_ROPE = 1,
    RDC_KIND_CLOTH = 2,
    RDC_KIND_RAGDOLL = 3,
    RDC_KIND_CHARACTER = 4,
    RDC_KIND_BALL = 5,
    RDC_KIND_SOFTBODY = 6, ///< Particles (a soft body's lattice).
} rdc_kind;

/// A character's state; the values are the wire codes of PROTOCOL.md §5.2.
typedef enum rdc_char_state {
    RDC_CHAR_ANIMATED = 0,
    RDC_CHAR_RAGDOLL = 1,
    RDC_CHAR_GETTING_UP = 2,
    RDC_CHAR_PARTIAL = 3,
} rdc_char_state;

/// Snapshot encodings (PROTOCOL.md §5).
typedef enum rdc_format {
    RDC_FORMAT_JSON = 1,
    RDC_FORMAT_BINARY = 2,
} rdc_format;

/// The wire name of a kind ("rope", ..., "ball", "softbody"), or "unknown". Static
/// storage.
RDC_API const char* rdc_kind_name(rdc_kind kind);

/// The wire name of a character state ("animated", ...), or "unknown".
/// Static storage.
RDC_API const char* rdc_char_state_name(rdc_char_state state);

/// One entity of a snapshot, decoded. Particle kinds (rope, cloth, ragdoll, softbody)
/// have `xyz`, rigid kinds (character, ball) have `pose`; the other is NULL.
typedef struct rdc_entity {
    uint64_t id;          ///< Entity id (below 2^53).
    rdc_kind kind;        ///< What it is.
    rdc_char_state state; ///< Characters: their state; RDC_CHAR_ANIMATED for other kinds.
    uint32_t count;       ///< Particles (xyz) or bodies (pose): bones of a character, 1 for a ball.
    const float* xyz; ///< 3 × count floats: particle positions x, y, z, m. NULL for rigid kinds.
    /// 7 × count floats per body: x, y, z (capsule centre, m), qx, qy, qz, qw
    /// (unit quaternion). NULL for particle kinds. A character's bones come
    /// in skeleton order (parents first).
    const float* pose;
    /// Characters: count bone names, in pose order. JSON snapshots carry
    /// them; binary ones do not, so rdc sends `describe` once for each
    /// character id it has not seen (config describe_characters) and fills
    /// this in from the reply. NULL until it is known (and for other kinds).
    const char* const* bone_names;
    /// The tick this entity's state is from (full, unwrapped): the
    /// snapshot's, except in a budgeted subscription's snapshots
    /// (rdc_subscribe_budget()), where an entity the last frame did not
    /// carry keeps the state an older one gave it.
    uint64_t tick;
} rdc_entity;

/// Per-world figures (PROTOCOL.md §5.1 "metrics"): carried by every JSON
/// snapshot, and sent to binary subscribers once a second as a `metrics`
/// event (rdc keeps the latest per world and attaches it to each binary
/// snapshot).
typedef struct rdc_metrics {
    double constraint_error; ///< Σ |length − rest length| over all sticks, m.
    uint32_t sticks;         ///< Sticks the error sums over.
    uint32_t solver_passes;  ///< iterations × substeps.
    uint32_t particles;      ///< Particles in the world.
    uint32_t entities;       ///< Entities in the world.
    double step_ms;          ///< Wall time of the last tick's step, ms.
    uint64_t overruns;       ///< Ticks dropped because stepping fell behind.
} rdc_metrics;

/// A world's state at one tick, decoded.
typedef struct rdc_snapshot {
    uint64_t world;    ///< The world.
    uint64_t tick;     ///< The tick it shows (full, unwrapped); increasing per subscription.
    rdc_format format; ///< How it arrived.
    /// Whether the entities were decoded. False only for binary snapshots of
    /// a client whose config has decode_binary = false: then entity_count is
    /// 0, world and tick are read from the frame without decoding it, and
    /// `data` holds the frame.
    bool decoded;
    /// Binary: whether the frame was a delta against a baseline (PROTOCOL.md
    /// §5.2; rdc acknowledges every frame it decodes, so after the first
    /// full frame they are deltas). False for JSON.
    bool delta;
    /// Binary: a partial frame of a budgeted subscription
    /// (rdc_subscribe_budget()): `entities` is every entity rdc was sent
    /// and the world still has, each as of its own `tick`.
    bool partial;
    uint32_t entity_count;      ///< Entities in `entities`.
    const rdc_entity* entities; ///< The entities, in the server's order.
    size_t bytes;               ///< Size of the WebSocket message it came in, bytes.
    const uint8_t* data;        ///< Binary: the message itself (`bytes` long); NULL for JSON.
    /// Whether `metrics` holds something: always for JSON snapshots; for
    /// binary ones once the world's first `metrics` event has arrived.
    bool has_metrics;
    rdc_metrics metrics; ///< The world's latest metrics (see has_metrics).
    /// The JSON snapshot as received (topology, metrics: PROTOCOL.md §5.1),
    /// or NULL for a binary one.
    const cJSON* json;
} rdc_snapshot;

/// The entity with this id in a snapshot (a pointer into s->entities,
/// valid as long as the snapshot), or NULL when there is none or s is NULL.
RDC_API const rdc_entity* rdc_snapshot_find(const rdc_snapshot* s, uint64_t id);

/// The index of the bone named `name` (NUL-terminated, compared exactly)
/// in a character, or -1 when it has no such bone, its names are unknown
/// (binary snapshots) or e or name is NULL. Bone i's pose is
/// e->pose + 7 * i.
RDC_API int rdc_entity_bone(const rdc_entity* e, const char* name);

// ---------------------------------------------------------------------------
// Replies, events, connection state
// ---------------------------------------------------------------------------

/// A client: one connection to a ragdolld server that rdc keeps up
/// (opaque; from rdc_open(), freed by rdc_close()).
typedef struct rdc_client rdc_client;

/// The outcome of one command: the server's reply, or why none came.
typedef struct rdc_reply {
    /// 0: the server replied ok ("ok": true). RDC_E_SERVER: it replied with
    /// an error (`code`, `message`). RDC_E_PROTOCOL: it replied with
    /// neither (code "malformed_reply"; json and text are the reply). Else
    /// rdc's reason no reply came: RDC_E_DISCONNECTED, RDC_E_TIMEOUT or
    /// RDC_E_CLOSED. A text message that is not wholly a JSON object is
    /// ignored (a command it was meant to answer times out).
    int status;
    int64_t id; ///< The command's id (rdc assigns ids: 1, 2, 3, ... per client).
    /// NULL when ok. The server's error code ("not_found", ...: PROTOCOL.md
    /// §2) for RDC_E_SERVER, else "malformed_reply", "disconnected",
    /// "timeout" or "closed".
    const char* code;
    const char* message; ///< NULL when ok; else a human-readable reason.
    bool has_tick;       ///< Whether the reply carried "tick".
    uint64_t tick;       ///< The reply's "tick" (PROTOCOL.md §2), when has_tick.
    double rtt_ms;       ///< Time from sending the command to this callback, ms.
    const cJSON* json;   ///< The reply object; NULL when no reply came.
    const char* text;    ///< The reply as received (not NUL-terminated); NULL when none.
    size_t len;          ///< Bytes in text.
} rdc_reply;

/// Called once per command with its reply (or with why none came).
typedef void (*rdc_reply_cb)(rdc_client* c, const rdc_reply* r, void* arg);

/// An event other than a snapshot (PROTOCOL.md §4): welcome, params,
/// world_destroyed, entity_removed, character_state, settled, or any newer
/// one.
typedef struct rdc_event {
    const char* name;  ///< The "ev" field, e.g. "character_state".
    uint64_t world;    ///< "world", or 0 when the event has none (welcome).
    uint64_t tick;     ///< "tick", or 0.
    uint64_t entity;   ///< "entity", or 0.
    const cJSON* json; ///< The event object.
    const char* text;  ///< The event as received (not NUL-terminated).
    size_t len;        ///< Bytes in text.
} rdc_event;

/// Called for every event other than a snapshot.
typedef void (*rdc_event_cb)(rdc_client* c, const rdc_event* ev, void* user);

/// Called for every snapshot of every subscription.
typedef void (*rdc_snapshot_cb)(rdc_client* c, const rdc_snapshot* s, void* user);

/// Where the connection stands.
typedef enum rdc_conn_state {
    /// The handshake succeeded: commands may be sent. Subscriptions have
    /// been re-sent already (after a reconnect).
    RDC_CONNECTED = 1,
    /// A connection attempt failed or the connection was lost. Commands
    /// that were waiting for replies have had their callbacks (with
    /// RDC_E_DISCONNECTED) just before this.
    RDC_DISCONNECTED = 2,
} rdc_conn_state;

/// A change of connection state.
typedef struct rdc_status {
    rdc_conn_state state; ///< Up or down.
    /// RDC_DISCONNECTED: why (a libuv code such as UV_ECONNREFUSED or UV_EOF,
    /// or RDC_E_HANDSHAKE, RDC_E_PROTOCOL, RDC_E_TIMEOUT); 0 after a close
    /// the server started with a close frame.
    int error;
    bool was_connected;  ///< RDC_DISCONNECTED: whether the handshake had succeeded.
    uint16_t close_code; ///< The server's WebSocket close code (1001 on shutdown), or 0.
    /// The reason text of the server's close frame (control characters as
    /// '?'), or "" (never NULL); valid during the callback only.
    const char* close_reason;
    /// RDC_E_HANDSHAKE: the status of the server's HTTP response when it
    /// refused the upgrade (401 missing or unknown token, 403 origin not
    /// allowed, 429 too many sessions from this address, 503 server full),
    /// or 101 when it agreed but its response broke RFC 6455 (a wrong
    /// accept key or subprotocol); 0 when the response was not HTTP, and for
    /// other errors.
    int http_status;
    /// The reason phrase of that response's status line ("Unauthorized"),
    /// printable ASCII with anything else as '?', at most 63 characters; ""
    /// when there is none (never NULL). Valid during the callback only.
    const char* http_reason;
    /// RDC_DISCONNECTED: milliseconds until the next attempt, or 0 when there
    /// will be none (reconnect is off or the client is closing).
    uint32_t retry_ms;
    uint32_t failures; ///< Consecutive failed attempts so far (0 once connected).
} rdc_status;

/// Called when the connection comes up or goes down.
typedef void (*rdc_state_cb)(rdc_client* c, const rdc_status* st, void* user);

// ---------------------------------------------------------------------------
// The client
// ---------------------------------------------------------------------------

/// Client settings. Start from rdc_config_default().
typedef struct rdc_config {
    /// Server URL, "ws://host[:port][/path]": port 80 and path "/ws" when
    /// not given. Host is a name, an IPv4 address or a [bracketed] IPv6
    /// one. Copied.
    const char* url;
    /// Access token, sent as "Authorization: Bearer <token>" in every
    /// upgrade request; NULL or "" for none. 16-128 characters from
    /// [A-Za-z0-9._~-] (rdc_token_valid()), else rdc_open() fails with
    /// RDC_E_CONFIG. A server that requires a token and does not know this
    /// one refuses the upgrade with 401 (rdc_status.http_status). Copied.
    const char* token;
    bool reconnect;              ///< Reconnect after a failure or loss (true).
    uint32_t backoff_initial_ms; ///< First wait before reconnecting (100).
    /// Longest wait (5000): the wait doubles after each failed attempt up
    /// to this, and each wait is drawn uniformly from [wait/2, wait]
    /// (jitter, so many clients do not retry in step). Reset once connected.
    uint32_t backoff_max_ms;
    uint32_t connect_timeout_ms; ///< TCP connect + handshake must finish within this (10000).
    /// A command without a reply after this long gets RDC_E_TIMEOUT (30000;
    /// 0: never). A reply that arrives later is ignored.
    uint32_t reply_timeout_ms;
    /// Ping the server after this long without a message from it, and drop
    /// the connection (RDC_E_TIMEOUT) after three times as long (15000; 0:
    /// never).
    uint32_t keepalive_ms;
    size_t max_message_bytes;    ///< Largest message accepted from the server (64 MiB).
    size_t max_send_queue_bytes; ///< Bytes waiting to be sent beyond which sends fail (8 MiB).
    size_t read_buffer_bytes;    ///< Size of the socket read buffer (64 KiB; at least 1 KiB).
    /// Decode binary snapshots (true). Decoding acknowledges each frame (a
    /// binary ack frame, PROTOCOL.md §5.2) so that the server sends deltas,
    /// and asks for `resync` when a frame cannot be decoded. With false,
    /// binary frames are neither decoded nor acknowledged (the server then
    /// keeps sending full snapshots); on_snapshot still sees each one, with
    /// `decoded` false. For load generators that only count frames.
    bool decode_binary;
    /// Send `describe` for each character met in a binary snapshot whose
    /// bone names are unknown, so that rdc_entity.bone_names gets filled
    /// (true). Needs decode_binary.
    bool describe_characters;
    void* user;                  ///< Passed to the callbacks below.
    rdc_state_cb on_state;       ///< Connection up/down, or NULL.
    rdc_event_cb on_event;       ///< Events, or NULL.
    rdc_snapshot_cb on_snapshot; ///< Snapshots, or NULL.
    uint32_t cookie;             ///< Set by rdc_config_default().
} rdc_config;

/// Shortest and longest access token, characters.
#define RDC_TOKEN_MIN 16
#define RDC_TOKEN_MAX 128

/// Whether `token` (NUL-terminated) has the form of an access token:
/// RDC_TOKEN_MIN to RDC_TOKEN_MAX characters, each from [A-Za-z0-9._~-]
/// (so that it fits a header, a WebSocket subprotocol and a URL fragment
/// unescaped). False for NULL. Says nothing of whether a server knows it.
RDC_API bool rdc_token_valid(const char* token);

/// The defaults described in rdc_config, with url "ws://127.0.0.1:8080/ws".
RDC_API rdc_config rdc_config_default(void);

/// Creates a client on `loop` and starts connecting (asynchronously; the
/// outcome comes to on_state). Returns 0 and *out, RDC_E_URL for a URL it
/// cannot use, RDC_E_CONFIG for a config not from rdc_config_default(),
/// with impossible values or with a token that is not "" and fails
/// rdc_token_valid(), or UV_ENOMEM. The client must be closed with
/// rdc_close() before the loop is closed.
RDC_API int rdc_open(uv_loop_t* loop, const rdc_config* cfg, rdc_client** out);

/// Closes the client: sends a WebSocket close (1000) if connected, stops
/// reconnecting, closes its handles, calls every waiting command's callback
/// with RDC_E_CLOSED, then done(c, arg) (if not NULL), then frees the
/// client. All from the loop; on_state and the other callbacks are not
/// called any more once this returns. Idempotent (a second call does
/// nothing). NULL is allowed.
RDC_API void rdc_close(rdc_client* c, void (*done)(rdc_client* c, void* arg), void* arg);

/// Drops the current connection at once, as if it were lost: pending
/// commands fail with RDC_E_DISCONNECTED and on_state reports it (unlike
/// other calls, these callbacks run before this function returns), then the
/// client reconnects if configured to. Does nothing when not connected. For
/// tests and for applications that judge a connection stale.
RDC_API void rdc_disconnect(rdc_client* c);

/// Whether the handshake has succeeded and the connection is up (false for
/// NULL and once rdc_close() has been called).
RDC_API bool rdc_is_connected(const rdc_client* c);

/// The config's `user` pointer. c must not be NULL.
RDC_API void* rdc_user(const rdc_client* c);

/// Sends a command given as the text of a JSON object with a string "op"
/// (PROTOCOL.md §3), `len` bytes (not necessarily NUL-terminated). rdc sets
/// its "id" (replacing one that is there) and, if id_out is not NULL,
/// stores it there. cb(c, reply, arg) is called exactly once, from the
/// loop: with the reply, or with RDC_E_DISCONNECTED, RDC_E_TIMEOUT or
/// RDC_E_CLOSED. cb may be NULL (the reply is then dropped).
/// Returns 0, RDC_E_NOT_CONNECTED, RDC_E_CLOSED (after rdc_close()),
/// RDC_E_BAD_COMMAND, RDC_E_QUEUE_FULL or UV_ENOMEM (and then cb is never
/// called).
RDC_API int rdc_send_text(rdc_client* c, const char* json, size_t len, rdc_reply_cb cb, void* arg,
                          int64_t* id_out);

/// As rdc_send_text(), for a command built with cJSON (not modified, not
/// taken: the caller still owns and deletes it).
RDC_API int rdc_send(rdc_client* c, const cJSON* cmd, rdc_reply_cb cb, void* arg, int64_t* id_out);

/// As rdc_send_text(), for a command formatted with printf rules, e.g.
/// rdc_sendf(c, cb, NULL, "{\"op\":\"kill\",\"world\":%d,...}", 1). The
/// numbers must print as JSON (finite; no locale with a decimal comma).
/// The id_out of rdc_send_text() is not offered. Returns what
/// rdc_send_text() returns, or RDC_E_BAD_COMMAND when the format fails.
RDC_API int rdc_sendf(rdc_client* c, rdc_reply_cb cb, void* arg, const char* fmt, ...)
    RDC_PRINTF(4, 5);

/// va_list form of rdc_sendf(); ap is consumed as by vprintf() (va_end is
/// the caller's).
RDC_API int rdc_vsendf(rdc_client* c, rdc_reply_cb cb, void* arg, const char* fmt, va_list ap)
    RDC_PRINTF(4, 0);

/// Prints a cJSON tree as compact JSON text, like cJSON_PrintUnformatted(),
/// except that every integer of magnitude at most 2^53 is written exactly
/// (cJSON 1.7 writes numbers with "%1.15g" and a loose round-trip check, so
/// it prints the id 9007199254740991 as 9007199254740990). rdc sends every
/// command this way. Returns text to free with cJSON_free(), or NULL when
/// out of memory or o is NULL.
RDC_API char* rdc_json_print(const cJSON* o);

/// Most worlds one client may be subscribed to (the server allows 8).
#define RDC_MAX_SUBSCRIPTIONS 8

/// Subscribes to a world's snapshots (PROTOCOL.md §3 subscribe: rate_hz
/// 1..240, capped by the server at the world's tick rate). rdc remembers
/// it and subscribes again after every reconnect. cb (may be NULL) is
/// called with each (re)subscription's reply: first for this one, then
/// once per reconnect. A subscription whose (re)subscribe fails with a
/// server error is forgotten, and so is one whose world the server reports
/// destroyed (`world_destroyed`); one that fails because the connection
/// went is kept. Subscribing again to the same world replaces the earlier
/// subscription (format, rate, callback). When not connected the
/// subscription is remembered and sent once connected.
/// Returns 0, RDC_E_TOO_MANY (beyond RDC_MAX_SUBSCRIPTIONS worlds),
/// RDC_E_CONFIG for a format or rate out of range or a world of 0 or above
/// 2^53 - 1, RDC_E_CLOSED after rdc_close(), or an error of
/// rdc_send_text(); then cb is never called and nothing is remembered.
RDC_API int rdc_subscribe(rdc_client* c, uint64_t world, rdc_format format, uint32_t rate_hz,
                          rdc_reply_cb cb, void* arg);

/// Subscribes in binary with a byte budget: interest management
/// (PROTOCOL.md §5.3). The server sends partial frames that carry the
/// entities that matter most to this client (nearest the focus, see
/// set_focus, and moving), at most `bytes_per_s` bytes a second
/// (1000..10^8); each snapshot then holds every entity rdc has been sent,
/// each as of its rdc_entity.tick. Otherwise as rdc_subscribe().
/// Returns as rdc_subscribe(); RDC_E_CONFIG also for a budget out of range.
RDC_API int rdc_subscribe_budget(rdc_client* c, uint64_t world, uint32_t rate_hz,
                                 uint32_t bytes_per_s, rdc_reply_cb cb, void* arg);

/// Tells the server where this client looks in a world it is subscribed to
/// (PROTOCOL.md §3 set_focus: level of detail, and what a byte budget sends
/// first, §5.3): `point` x, y, z in m (each in [-1000, 1000]) or NULL for
/// no focus, `radius` of full priority in (0, 2000] m (15 is the server's
/// default). Remembered with the subscription and sent again after every
/// reconnect, once it is subscribed again. cb (may be NULL) gets this
/// call's reply (when connected; else it is sent later, without one).
/// Returns 0, RDC_E_CONFIG (no subscription to `world`, or a value out of
/// range), RDC_E_CLOSED, or an error of rdc_send_text().
RDC_API int rdc_set_focus(rdc_client* c, uint64_t world, const double* point, double radius,
                          rdc_reply_cb cb, void* arg);

/// Forgets a subscription and, when connected, sends unsubscribe; cb (may
/// be NULL) gets its reply. Returns 0; RDC_E_NOT_CONNECTED when not
/// connected (the subscription is forgotten all the same and cb is not
/// called); RDC_E_CLOSED after rdc_close() (nothing is changed); or an
/// error of rdc_send_text().
RDC_API int rdc_unsubscribe(rdc_client* c, uint64_t world, rdc_reply_cb cb, void* arg);

// ---------------------------------------------------------------------------
// Interpolation (interp.c)
// ---------------------------------------------------------------------------

/// A snapshot interpolation buffer for one world (Gaffer on Games,
/// "Snapshot Interpolation"): feed it every snapshot of the world as it
/// arrives (rdc_interp_push() from on_snapshot), and draw what
/// rdc_interp_sample() gives at each frame: the world as it was a little
/// while ago, between the two snapshots around that time (positions
/// lerped, rotations slerped), so that motion is smooth although snapshots
/// come 30 times a second and unevenly. The delay adapts: twice the send
/// interval plus the measured jitter of arrivals (RFC 3550 §6.4.1's
/// estimator: J += (|D| − J)/16, D the difference between two snapshots'
/// spacing in arrival time and in server ticks). Owned by the caller; not
/// tied to a client (it keeps copies of what it is fed).
typedef struct rdc_interp rdc_interp;

/// Makes a buffer for a world stepping at `tick_hz` whose snapshots come at
/// `rate_hz` (the subscribe reply's "tick_hz" and "rate_hz"), keeping the
/// last `depth` snapshots (2..64; 0: 16). Returns 0, RDC_E_CONFIG for a
/// rate outside 1..240 or a depth outside 2..64, or UV_ENOMEM.
RDC_API int rdc_interp_create(uint32_t tick_hz, uint32_t rate_hz, uint32_t depth, rdc_interp** out);

/// Frees a buffer and what it holds. NULL is allowed.
RDC_API void rdc_interp_destroy(rdc_interp* ip);

/// Forgets every snapshot kept and what was measured (e.g. from a
/// subscribe callback after a reconnect). NULL is allowed.
RDC_API void rdc_interp_reset(rdc_interp* ip);

/// Keeps a copy of snapshot s (decoded; its world's), arrived at
/// `arrival_ns` (a monotonic clock, e.g. uv_hrtime()). A snapshot older
/// than every one kept, or whose tick is more than a second of ticks from
/// where the clock learned from the arrivals puts it, starts the buffer
/// afresh (the server restarted and rdc subscribed again, or nothing came
/// for over a second); one otherwise not newer than the newest is ignored
/// (a late duplicate; returns 0). Returns 0,
/// RDC_E_CONFIG for an undecoded snapshot, or UV_ENOMEM (nothing kept).
RDC_API int rdc_interp_push(rdc_interp* ip, const rdc_snapshot* s, uint64_t arrival_ns);

/// What rdc_interp_sample() did.
typedef struct rdc_interp_info {
    double delay_ms;    ///< How far behind the newest arrivals it draws: 2 send intervals + jitter.
    double jitter_ms;   ///< The arrivals' jitter (RFC 3550 estimate).
    double render_tick; ///< The server tick drawn (fractional).
    uint64_t tick_a;    ///< The snapshot before it ...
    uint64_t tick_b;    ///< ... and the one after (equal when held).
    double alpha;       ///< 0 at tick_a, 1 at tick_b.
    bool held;          ///< Past the newest snapshot (late arrivals): the newest, not extrapolated.
} rdc_interp_info;

/// The world at `now_ns` (the clock of rdc_interp_push()) minus the delay:
/// a snapshot (tick: tick_b; entities of the newer snapshot, each
/// interpolated with the same entity in the older when it is there with
/// the same kind and count) valid until the next call on ip. The tick
/// drawn never goes back from one call to the next (when the delay grows,
/// time on screen slows instead). NULL before anything was pushed. info
/// may be NULL.
RDC_API const rdc_snapshot* rdc_interp_sample(rdc_interp* ip, uint64_t now_ns,
                                              rdc_interp_info* info);

// ---------------------------------------------------------------------------
// Queries (query.c)
// ---------------------------------------------------------------------------

/// For rdc_raycast()'s seen_tick: judge at the world's tick when the ray
/// arrives, not at a tick the client saw.
#define RDC_NOW UINT64_MAX

/// Casts a ray (PROTOCOL.md §3 raycast): from `origin` (m) along
/// `direction` (any non-zero length) up to `max_distance` m (0: the
/// server's 1000), judged at `seen_tick` (lag compensation: the tick of the
/// snapshot the client aimed at; RDC_NOW for none). cb gets the reply; read
/// it with rdc_hit_parse(). Returns what rdc_send_text() returns, or
/// RDC_E_CONFIG for a world of 0 or above 2^53 - 1, NULL vectors, a
/// non-finite number, or a seen_tick above 2^53 - 1 (other than RDC_NOW);
/// the server checks the rest (out_of_range).
RDC_API int rdc_raycast(rdc_client* c, uint64_t world, const double origin[3],
                        const double direction[3], double max_distance, uint64_t seen_tick,
                        rdc_reply_cb cb, void* arg);

/// What a raycast's reply says (PROTOCOL.md §3 raycast).
typedef struct rdc_hit {
    bool hit;           ///< Something was hit; false for "hit": null (the rest is zero).
    char kind[16];      ///< "ground", "box", "bone", "ball" or "particle".
    uint64_t entity;    ///< The entity hit (bone, ball, particle), else 0.
    char bone[64];      ///< The bone's name (kind "bone"), else "".
    int64_t index;      ///< The particle (kind "particle") or box (kind "box"), else -1.
    double point[3];    ///< m, on the surface hit.
    double normal[3];   ///< Unit, out of the surface.
    double distance;    ///< m from the origin.
    uint64_t tick;      ///< The reply's tick: the world's tick the ray was cast in.
    bool has_seen_tick; ///< The ray had a seen_tick; then:
    uint64_t seen_tick; ///< the tick it was judged at, and
    bool clamped;       ///< whether the one asked for was older than the server keeps.
} rdc_hit;

/// Reads a raycast's reply into *out. Returns 0; the reply's status when it
/// is not ok (RDC_E_SERVER and the others: r->code says why); or
/// RDC_E_PROTOCOL for an ok reply without a well-formed "hit".
RDC_API int rdc_hit_parse(const rdc_reply* r, rdc_hit* out);

/// Counters of one client since it was opened.
typedef struct rdc_stats {
    uint64_t bytes_rx;         ///< Bytes read from the socket (handshake and frames).
    uint64_t bytes_tx;         ///< Bytes written to the socket.
    uint64_t messages_rx;      ///< WebSocket messages received (replies, events, snapshots).
    uint64_t snapshots;        ///< Snapshots delivered to on_snapshot (decoded, or counted).
    uint64_t bad_snapshots;    ///< Snapshots that could not be decoded (dropped).
    uint64_t resyncs;          ///< `resync` requests sent after such a failure (one per gap).
    uint64_t acks;             ///< Binary ack frames sent.
    uint64_t binary_frames;    ///< Binary messages received (decoded or not).
    uint64_t commands;         ///< Commands sent.
    uint64_t replies;          ///< Replies matched to a command.
    uint64_t connects;         ///< Successful handshakes.
    uint64_t connect_failures; ///< Attempts that never got through the handshake.
    uint64_t disconnects;      ///< Established connections that were lost or dropped.
} rdc_stats;

/// Copies the client's counters into *out. Neither may be NULL; valid
/// until the client is freed (also from rdc_close()'s done callback).
RDC_API void rdc_get_stats(const rdc_client* c, rdc_stats* out);

#ifdef __cplusplus
}
#endif
