/*
 * ws.c: the WebSocket handshake helpers of rdws.h, shared by the server
 * and the C client.
 */
#include "rdws.h"

#include <nettle/base64.h>
#include <nettle/sha1.h>

#include <stdint.h>
#include <string.h>
#include <strings.h>

static const char ws_guid[] = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

void rdws_accept_key(const char* key, size_t key_len, char out[29]) {
    struct sha1_ctx ctx;
    uint8_t digest[SHA1_DIGEST_SIZE];
    sha1_init(&ctx);
    sha1_update(&ctx, key_len, (const uint8_t*)key);
    sha1_update(&ctx, sizeof ws_guid - 1, (const uint8_t*)ws_guid);
    sha1_digest(&ctx, SHA1_DIGEST_SIZE, digest);
    base64_encode_raw(out, SHA1_DIGEST_SIZE, digest);
    out[BASE64_ENCODE_RAW_LENGTH(SHA1_DIGEST_SIZE)] = '\0';
}

bool rdws_has_token(const char* list, const char* token) {
    size_t tlen = strlen(token);
    const char* p = list;
    while (*p != '\0') {
        while (*p == ' ' || *p == '\t' || *p == ',') {
            p++;
        }
        const char* start = p;
        while (*p != '\0' && *p != ',') {
            p++;
        }
        const char* end = p;
        while (end > start && (end[-1] == ' ' || end[-1] == '\t')) {
            end--;
        }
        if ((size_t)(end - start) == tlen && strncasecmp(start, token, tlen) == 0) {
            return true;
        }
    }
    return false;
}
