/*
 * rdc_internal.h: the private layout of an rdc client and the interfaces
 * between the files of clients/c (client.c, handshake.c, snapshot.c).
 *
 * A client and its connections:
 *
 *   rdc_client ──conn──► rdc__conn (the current attempt or connection)
 *       │                   resolve ─► connect ─► handshake ─► open ─► closing ─► freed
 *       │                                                         (tcp close callback)
 *       ├─ pending: commands waiting for their reply (a list, oldest first)
 *       ├─ subs[]: what to subscribe to again after a reconnect
 *       └─ dec: the snapshot decoder (one entry point, snapshot.c)
 *
 * A connection that fails or is dropped is detached from the client at once
 * (client->conn = NULL) and freed in its handle's close callback; the
 * client is freed once its timers and every detached connection are closed.
 */
#pragma once

#include "rdc.h"
#include "rdp.h"

#include <http_parser.h>
#include <wslay/wslay.h>

#define RDC__COOKIE 0x52444343u /* "RDCC" */

/// Longest Sec-WebSocket-Accept value we keep, and other header values.
#define RDC__HVAL_MAX 128
/// Request line + headers of the server's response at most, bytes.
#define RDC__MAX_RESPONSE_HEADER_BYTES (8 * 1024)

// ---------------------------------------------------------------------------
// URL and handshake (handshake.c)
// ---------------------------------------------------------------------------

/// A parsed ws:// URL.
typedef struct rdc__url {
    char host[256];  ///< Without brackets.
    uint16_t port;   ///< 80 when not given.
    char path[1024]; ///< Path and query, "/ws" when not given.
    bool ipv6;       ///< The host is a bracketed IPv6 literal.
} rdc__url;

/// Parses "ws://host[:port][/path][?query]". Returns 0 or RDC_E_URL.
int rdc__url_parse(const char* url, rdc__url* out);

/// The Host header value for a URL: host, bracketed if IPv6, and ":port"
/// unless it is 80. Returns 0 or RDC_E_URL when cap is too small.
int rdc__url_host_header(const rdc__url* u, char* out, size_t cap);

/// Sec-WebSocket-Key for 16 random bytes: their base64 (24 characters + NUL).
void rdc__ws_key(const uint8_t nonce[16], char out[25]);

/// Writes the HTTP upgrade request. Returns its length, or 0 when it does not
/// fit in cap bytes.
size_t rdc__handshake_request(const rdc__url* u, const char* key, const char* token, char* out,
                              size_t cap);

/// The response of the handshake being read.
typedef struct rdc__hs {
    http_parser parser;
    char expect_accept[29]; ///< What Sec-WebSocket-Accept must say.
    size_t header_bytes;
    int cur; ///< Header whose value is being read (enum in handshake.c), or -1.
    bool in_value;
    char field[32];
    size_t field_len;
    char val[4][RDC__HVAL_MAX]; ///< Upgrade, Connection, Accept, Protocol.
    size_t val_len[4];
    bool too_long;
    bool done;       ///< Headers complete.
    int status;      ///< HTTP status code.
    char reason[64]; ///< The status line's reason phrase, printable ASCII ('?' else), cut short.
    size_t reason_len;
} rdc__hs;

/// Readies *hs to read the response to a request that sent `key`.
void rdc__hs_init(rdc__hs* hs, const char* key);

/// Feeds response bytes. Returns 0 when more are needed, 1 when the
/// response is complete and valid (then *used is how many of the len bytes
/// belonged to it; the rest are WebSocket frames), or RDC_E_HANDSHAKE (the
/// server's status in hs->status, 0 when it was not HTTP).
int rdc__hs_feed(rdc__hs* hs, const uint8_t* data, size_t len, size_t* used);

// ---------------------------------------------------------------------------
// Snapshots (snapshot.c)
// ---------------------------------------------------------------------------

/// Most characters a decode asks to `describe` at once.
#define RDC__MAX_DESCRIBE 16

/// What the client must send after a snapshot (decoded or not): the binary
/// ack of PROTOCOL.md §5.2, a `resync` after a frame that could not be
/// decoded (once per gap), and `describe` for characters whose bone names
/// are unknown.
typedef struct rdc__ack {
    bool wanted; ///< Send the ack frame for (world, tick).
    bool resync; ///< Send {"op":"resync","world":world}.
    uint64_t world;
    uint64_t tick;
    uint32_t describe_count;
    uint64_t describe[RDC__MAX_DESCRIBE]; ///< Entity ids to describe (in `world`).
} rdc__ack;

/// Bone names of one character, from its describe reply.
typedef struct rdc__names {
    uint64_t id;
    bool pending;       ///< describe sent, no reply yet.
    uint32_t count;     ///< Names (0 while pending).
    const char** names; ///< count pointers, then the strings, one block.
} rdc__names;

/// What the decoder keeps about one world.
typedef struct rdc__world {
    uint64_t world;     ///< 0: a free slot.
    rdp_decoder* dec;   ///< Binary: the baselines (created at the first frame).
    uint64_t last_tick; ///< The newest full tick seen (the subscribe reply's at first).
    bool resync_sent;   ///< A resync is out and no frame has decoded since.
    uint32_t failed;    ///< Frames that failed since the resync was sent.
    bool has_metrics;
    rdc_metrics metrics; ///< The latest metrics event (binary subscribers).
    rdc__names* names;   ///< Characters' bone names (binary).
    uint32_t names_count, names_cap;
    bool forget_owed; ///< Forgotten while held: cleared at rdc__decoder_release().
} rdc__world;

/// Worlds the decoder tracks at once (a subscription each, with room for
/// subscriptions being replaced).
#define RDC__MAX_WORLDS (2 * RDC_MAX_SUBSCRIPTIONS)

/// Scratch for decoded snapshots (reused; grows) and what it keeps per
/// world: version 2 baselines, ticks, metrics, bone names.
typedef struct rdc__decoder {
    rdc_entity* ents;
    uint32_t ents_cap;
    float* floats;
    size_t floats_cap;
    const char** names;
    size_t names_cap;
    rdc__world worlds[RDC__MAX_WORLDS];
    /// A decoded snapshot is with the application (rdc__decoder_hold()):
    /// forgetting a world then waits, so that what the snapshot points to
    /// (baselines, bone names) stays valid until its callback returns.
    bool held;
} rdc__decoder;

/// THE snapshot decoder: every snapshot the client receives goes through
/// this one function, so a new wire format is a change here alone.
/// `binary`: a binary message of `len` bytes at `data`, decoded (version 2)
/// when `decode` is true, else only its world and tick are read; else a
/// JSON text message whose parsed form is `json` (an object with "ev":
/// "snapshot"). `describe`: ask for the bone names of unknown characters.
/// Fills *out (pointing into d's scratch, its baselines and json; valid
/// until the next call) and *ack (also on failure: a resync). Returns 0,
/// RDC_E_PROTOCOL for a snapshot that cannot be decoded, or UV_ENOMEM.
int rdc__decode_snapshot(rdc__decoder* d, const uint8_t* data, size_t len, bool binary, bool decode,
                         bool describe, const cJSON* json, rdc_snapshot* out, rdc__ack* ack);

/// Reads the world and the 16-bit tick of a binary snapshot without
/// decoding it (PROTOCOL.md §5.2: the header's tick, the bit stream's first
/// code). Returns false when it is not a version 2 snapshot.
bool rdc__binary_peek(const uint8_t* data, size_t len, uint64_t* world, uint16_t* tick16,
                      bool* delta);

/// A (re)subscription to `world` was granted at `tick`: its binary frames
/// start afresh (the server sends a full one first) and ticks unwrap near
/// `tick`.
void rdc__decoder_start_world(rdc__decoder* d, uint64_t world, uint64_t tick);

/// Keeps the metrics of a `metrics` event (PROTOCOL.md §4) for its world.
void rdc__decoder_metrics(rdc__decoder* d, const cJSON* ev);

/// The describe reply for character `id` of `world` (json NULL when the
/// describe failed: it is asked again at the entity's next snapshot).
void rdc__decoder_names(rdc__decoder* d, uint64_t world, uint64_t id, const cJSON* json);

/// Forgets what the decoder keeps about a world: called when a
/// subscription ends. While held, the memory is freed at the release.
void rdc__decoder_forget_world(rdc__decoder* d, uint64_t world);

/// Forgets everything (a new connection). Keeps the scratch. While held,
/// the memory is freed at the release.
void rdc__decoder_reset(rdc__decoder* d);

/// The snapshot just decoded goes to the application: until
/// rdc__decoder_release(), forgetting worlds (rdc_disconnect(),
/// rdc_unsubscribe(), rdc_subscribe() called from on_snapshot) frees
/// nothing the snapshot points to.
void rdc__decoder_hold(rdc__decoder* d);

/// Ends a hold: frees what was forgotten during it.
void rdc__decoder_release(rdc__decoder* d);

/// Frees the scratch and everything kept.
void rdc__decoder_free(rdc__decoder* d);
