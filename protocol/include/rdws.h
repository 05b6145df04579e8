/*
 * rdws.h: the two pieces of the WebSocket opening handshake (RFC 6455 §4)
 * that the server (server/net) and the C client (clients/c) both need.
 * Library `rdws`: libc + nettle (SHA-1, base64).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/// Sec-WebSocket-Accept for the Sec-WebSocket-Key `key` of `key_len` bytes
/// (RFC 6455 §4.2.2, step 5.4): base64(SHA-1(key +
/// "258EAFA5-E914-47DA-95CA-C5AB0DC85B11")). Writes 28 characters and a NUL
/// into `out`. Cannot fail.
void rdws_accept_key(const char* key, size_t key_len, char out[29]);

/// Whether the comma-separated header value `list` (a list as in RFC 9110
/// §5.6.1, e.g. `Connection: keep-alive, Upgrade`) holds `token`, compared
/// case-insensitively, white space around items ignored. Both strings are
/// NUL-terminated; neither is kept.
bool rdws_has_token(const char* list, const char* token);

#ifdef __cplusplus
}
#endif
