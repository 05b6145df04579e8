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

/// Sec-WebSocket-Accept for a key (RFC 6455 §4.2.2): 28 characters + NUL.
void rdc__ws_accept(const char* key, char out[29]);

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
    bool done;  ///< Headers complete.
    int status; ///< HTTP status code.
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

/// What the decoder asks the client to acknowledge after a snapshot. Always
/// `wanted = false` for protocol version 1; version 2's deltas will need an
/// `ack {world, tick}` per snapshot.
typedef struct rdc__ack {
    bool wanted;
    uint64_t world;
    uint64_t tick;
} rdc__ack;

/// Scratch for decoded snapshots (reused; grows) and, later, the baselines
/// a delta decoder keeps per world.
typedef struct rdc__decoder {
    rdc_entity* ents;
    uint32_t ents_cap;
    float* floats;
    size_t floats_cap;
    const char** names;
    size_t names_cap;
} rdc__decoder;

/// THE snapshot decoder: every snapshot the client receives goes through
/// this one function, so a new wire format is a change here alone.
/// `binary`: a binary message of `len` bytes at `data`; else a JSON text
/// message whose parsed form is `json` (an object with "ev": "snapshot").
/// Fills *out (pointing into d's scratch and into json; valid until the next
/// call) and *ack. Returns 0 or RDC_E_PROTOCOL for a malformed snapshot.
int rdc__decode_snapshot(rdc__decoder* d, const uint8_t* data, size_t len, bool binary,
                         const cJSON* json, rdc_snapshot* out, rdc__ack* ack);

/// Forgets what the decoder keeps about a world (baselines): called when a
/// (re)subscription starts or ends. Nothing for version 1.
void rdc__decoder_forget_world(rdc__decoder* d, uint64_t world);

/// Forgets everything (a new connection). Keeps the scratch.
void rdc__decoder_reset(rdc__decoder* d);

/// Frees the scratch.
void rdc__decoder_free(rdc__decoder* d);
