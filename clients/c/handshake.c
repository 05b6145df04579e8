/*
 * handshake.c: the client side of the WebSocket opening handshake (RFC 6455
 * §4.1): parsing ws:// URLs, the upgrade request with a random key and the
 * subprotocol offer, and checking the server's response (parsed by
 * http_parser; the accept key from rdws.h). No I/O: client.c moves the
 * bytes.
 */
#include "rdc_internal.h"
#include "rdws.h"

#include <nettle/base64.h>

#include <stdio.h>
#include <string.h>
#include <strings.h>

enum { H_UPGRADE, H_CONNECTION, H_ACCEPT, H_PROTOCOL, H_COUNT };

static const char* const header_names[H_COUNT] = {
    "upgrade",
    "connection",
    "sec-websocket-accept",
    "sec-websocket-protocol",
};

// Copies the URL field `f` into out (cap bytes with the NUL). False when it
// does not fit.
static bool copy_field(const char* url, const struct http_parser_url* u, int f, char* out,
                       size_t cap) {
    size_t len = u->field_data[f].len;
    if (len + 1 > cap) {
        return false;
    }
    memcpy(out, url + u->field_data[f].off, len);
    out[len] = '\0';
    return true;
}

int rdc__url_parse(const char* url, rdc__url* out) {
    memset(out, 0, sizeof *out);
    if (url == NULL) {
        return RDC_E_URL;
    }
    struct http_parser_url u;
    http_parser_url_init(&u);
    size_t len = strlen(url);
    if (http_parser_parse_url(url, len, 0, &u) != 0) {
        return RDC_E_URL;
    }
    char schema[8];
    if (!(u.field_set & (1 << UF_SCHEMA)) || !(u.field_set & (1 << UF_HOST)) ||
        !copy_field(url, &u, UF_SCHEMA, schema, sizeof schema) || strcasecmp(schema, "ws") != 0 ||
        (u.field_set & (1 << UF_USERINFO)) ||
        !copy_field(url, &u, UF_HOST, out->host, sizeof out->host) || out->host[0] == '\0') {
        return RDC_E_URL;
    }
    // http_parser hands the host of "[::1]" without its brackets.
    out->ipv6 = u.field_data[UF_HOST].off > 0 && url[u.field_data[UF_HOST].off - 1] == '[';
    out->port = (u.field_set & (1 << UF_PORT)) ? u.port : 80;
    if (out->port == 0) {
        return RDC_E_URL;
    }
    if (u.field_set & (1 << UF_PATH)) {
        // The path runs to the end of the query, if there is one (not the fragment).
        size_t end = u.field_data[UF_PATH].off + u.field_data[UF_PATH].len;
        if (u.field_set & (1 << UF_QUERY)) {
            end = u.field_data[UF_QUERY].off + u.field_data[UF_QUERY].len;
        }
        size_t plen = end - u.field_data[UF_PATH].off;
        if (plen + 1 > sizeof out->path) {
            return RDC_E_URL;
        }
        memcpy(out->path, url + u.field_data[UF_PATH].off, plen);
        out->path[plen] = '\0';
    } else {
        snprintf(out->path, sizeof out->path, "/ws");
    }
    // Header injection: nothing in a URL may end a request line or header.
    for (const char* p = url; *p != '\0'; ++p) {
        if ((unsigned char)*p < 0x21 || *p == 0x7f) {
            return RDC_E_URL;
        }
    }
    return 0;
}

int rdc__url_host_header(const rdc__url* u, char* out, size_t cap) {
    int n;
    if (u->port == 80) {
        n = snprintf(out, cap, u->ipv6 ? "[%s]" : "%s", u->host);
    } else {
        n = snprintf(out, cap, u->ipv6 ? "[%s]:%u" : "%s:%u", u->host, (unsigned)u->port);
    }
    return n < 0 || (size_t)n >= cap ? RDC_E_URL : 0;
}

void rdc__ws_key(const uint8_t nonce[16], char out[25]) {
    base64_encode_raw(out, 16, nonce);
    out[BASE64_ENCODE_RAW_LENGTH(16)] = '\0';
}

bool rdc_token_valid(const char* token) {
    if (token == NULL) {
        return false;
    }
    size_t n = strlen(token);
    if (n < RDC_TOKEN_MIN || n > RDC_TOKEN_MAX) {
        return false;
    }
    // The access-control contract (issue 8): [A-Za-z0-9._~-], so that a
    // token fits a Sec-WebSocket-Protocol token and a URL fragment unescaped.
    return strspn(token, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._~-") == n;
}

size_t rdc__handshake_request(const rdc__url* u, const char* key, const char* token, char* out,
                              size_t cap) {
    char host[300];
    if (rdc__url_host_header(u, host, sizeof host) != 0) {
        return 0;
    }
    bool auth = token != NULL && token[0] != '\0';
    int n = snprintf(out, cap,
                     "GET %s HTTP/1.1\r\n"
                     "Host: %s\r\n"
                     "Upgrade: websocket\r\n"
                     "Connection: Upgrade\r\n"
                     "Sec-WebSocket-Key: %s\r\n"
                     "Sec-WebSocket-Version: 13\r\n"
                     "Sec-WebSocket-Protocol: ragdolld.v1\r\n"
                     "User-Agent: rdc/" RDC_VERSION "\r\n"
                     "%s%s%s"
                     "\r\n",
                     u->path, host, key, auth ? "Authorization: Bearer " : "", auth ? token : "",
                     auth ? "\r\n" : "");
    return n < 0 || (size_t)n >= cap ? 0 : (size_t)n;
}

// ---------------------------------------------------------------------------
// The response
// ---------------------------------------------------------------------------

static int on_header_field(http_parser* p, const char* at, size_t len) {
    rdc__hs* hs = p->data;
    hs->header_bytes += len;
    if (hs->in_value) {
        hs->in_value = false;
        hs->field_len = 0;
        hs->cur = -1;
    }
    if (hs->field_len + len < sizeof hs->field) {
        memcpy(hs->field + hs->field_len, at, len);
        hs->field_len += len;
    } else {
        hs->field_len = sizeof hs->field; // too long to be one we want
    }
    return hs->header_bytes > RDC__MAX_RESPONSE_HEADER_BYTES;
}

static int on_header_value(http_parser* p, const char* at, size_t len) {
    rdc__hs* hs = p->data;
    hs->header_bytes += len;
    if (!hs->in_value) {
        hs->in_value = true;
        hs->cur = -1;
        for (int i = 0; i < H_COUNT && hs->field_len < sizeof hs->field; ++i) {
            if (strlen(header_names[i]) == hs->field_len &&
                strncasecmp(hs->field, header_names[i], hs->field_len) == 0) {
                hs->cur = i;
                // A repeated header is appended as a list item (RFC 9110 §5.3).
                if (hs->val_len[i] > 0 && hs->val_len[i] + 1 < RDC__HVAL_MAX) {
                    hs->val[i][hs->val_len[i]++] = ',';
                }
            }
        }
    }
    if (hs->cur >= 0) {
        size_t* vl = &hs->val_len[hs->cur];
        if (*vl + len >= RDC__HVAL_MAX) {
            hs->too_long = true;
        } else {
            memcpy(hs->val[hs->cur] + *vl, at, len);
            *vl += len;
            hs->val[hs->cur][*vl] = '\0';
        }
    }
    return hs->header_bytes > RDC__MAX_RESPONSE_HEADER_BYTES;
}

// The reason phrase of the status line ("Unauthorized"), kept printable and
// short: it is shown to people, and the server is not trusted.
static int on_status(http_parser* p, const char* at, size_t len) {
    rdc__hs* hs = p->data;
    hs->header_bytes += len;
    for (size_t i = 0; i < len && hs->reason_len + 1 < sizeof hs->reason; ++i) {
        unsigned char ch = (unsigned char)at[i];
        hs->reason[hs->reason_len++] = ch >= 0x20 && ch < 0x7f ? (char)ch : '?';
    }
    hs->reason[hs->reason_len] = '\0';
    return hs->header_bytes > RDC__MAX_RESPONSE_HEADER_BYTES;
}

static int on_headers_complete(http_parser* p) {
    rdc__hs* hs = p->data;
    hs->done = true;
    hs->status = (int)p->status_code;
    // Stop here whatever the status: a refusal's body is of no interest.
    return 2;
}

static const http_parser_settings hs_settings = {
    .on_status = on_status,
    .on_header_field = on_header_field,
    .on_header_value = on_header_value,
    .on_headers_complete = on_headers_complete,
};

void rdc__hs_init(rdc__hs* hs, const char* key) {
    memset(hs, 0, sizeof *hs);
    http_parser_init(&hs->parser, HTTP_RESPONSE);
    hs->parser.data = hs;
    hs->cur = -1;
    rdws_accept_key(key, strlen(key), hs->expect_accept);
}

// Trims white space around a header value in place.
static const char* trimmed(char* v) {
    while (*v == ' ' || *v == '\t') {
        v++;
    }
    size_t n = strlen(v);
    while (n > 0 && (v[n - 1] == ' ' || v[n - 1] == '\t')) {
        v[--n] = '\0';
    }
    return v;
}

int rdc__hs_feed(rdc__hs* hs, const uint8_t* data, size_t len, size_t* used) {
    *used = 0;
    size_t n = http_parser_execute(&hs->parser, &hs_settings, (const char*)data, len);
    if (!hs->done) {
        if (HTTP_PARSER_ERRNO(&hs->parser) != HPE_OK || n != len) {
            return RDC_E_HANDSHAKE; // not HTTP, or headers beyond the limit
        }
        return 0;
    }
    // on_headers_complete returned 2 ("upgrade, no body"), so http_parser
    // stopped right after the blank line: the rest are WebSocket frames.
    *used = n;
    if (hs->status != 101 || hs->too_long) {
        return RDC_E_HANDSHAKE;
    }
    if (!rdws_has_token(hs->val[H_UPGRADE], "websocket") ||
        !rdws_has_token(hs->val[H_CONNECTION], "upgrade") ||
        strcmp(trimmed(hs->val[H_ACCEPT]), hs->expect_accept) != 0) {
        return RDC_E_HANDSHAKE;
    }
    // A server may choose no subprotocol; it may not choose one we did not offer.
    if (hs->val_len[H_PROTOCOL] > 0 && strcmp(trimmed(hs->val[H_PROTOCOL]), "ragdolld.v1") != 0) {
        return RDC_E_HANDSHAKE;
    }
    return 1;
}
