/*
 * http.c: HTTP/1.1 requests on a session in HTTP state: parsing (by
 * http_parser, not by hand), limits on the request head, routing (the
 * WebSocket path, the application's dynamic routes, static files) and
 * responses. Keep-alive connections are supported; requests are answered in
 * order.
 *
 * Static files are read with blocking stdio on the loop thread: the viewer is
 * a handful of small files that the page cache keeps hot.
 */
#include "net_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#define NET__MAX_STATIC_BYTES (32u * 1024u * 1024u)

static const char* const header_names[NET__H_COUNT] = {
    [NET__H_UPGRADE] = "upgrade",
    [NET__H_CONNECTION] = "connection",
    [NET__H_KEY] = "sec-websocket-key",
    [NET__H_VERSION] = "sec-websocket-version",
    [NET__H_PROTOCOL] = "sec-websocket-protocol",
    [NET__H_ORIGIN] = "origin",
    [NET__H_HOST] = "host",
    [NET__H_AUTHORIZATION] = "authorization",
};

void net__http_reset(net_session* s) {
    s->header_bytes = 0;
    s->header_count = 0;
    s->url_len = 0;
    s->url[0] = '\0';
    s->field_len = 0;
    s->cur_header = -1;
    s->in_value = false;
    memset(s->hlen, 0, sizeof s->hlen);
    for (int h = 0; h < NET__H_COUNT; ++h) {
        s->hval[h][0] = '\0';
    }
    s->htrunc = false;
    s->request_done = false;
    s->request_too_large = false;
}

// Counts head bytes against the limit; a non-zero return aborts the parser.
static int count_bytes(net_session* s, size_t len) {
    s->header_bytes += len;
    if (s->header_bytes > s->srv->cfg.max_header_bytes) {
        s->request_too_large = true;
        return 1;
    }
    return 0;
}

static int on_url(http_parser* p, const char* at, size_t len) {
    net_session* s = p->data;
    if (count_bytes(s, len) != 0 || s->url_len + len >= sizeof s->url) {
        s->request_too_large = true;
        return 1;
    }
    memcpy(s->url + s->url_len, at, len);
    s->url_len += len;
    s->url[s->url_len] = '\0';
    return 0;
}

static int on_header_field(http_parser* p, const char* at, size_t len) {
    net_session* s = p->data;
    if (count_bytes(s, len) != 0) {
        return 1;
    }
    if (s->in_value || s->header_count == 0) {
        // A new header starts (a field may arrive in several pieces).
        s->in_value = false;
        s->field_len = 0;
        s->cur_header = -1;
        if (++s->header_count > s->srv->cfg.max_headers) {
            s->request_too_large = true;
            return 1;
        }
    }
    size_t room = sizeof s->field - 1 - s->field_len;
    size_t n = len < room ? len : room;
    memcpy(s->field + s->field_len, at, n);
    s->field_len += n;
    s->field[s->field_len] = '\0';
    return 0;
}

static int on_header_value(http_parser* p, const char* at, size_t len) {
    net_session* s = p->data;
    if (count_bytes(s, len) != 0) {
        return 1;
    }
    if (!s->in_value) {
        s->in_value = true;
        s->cur_header = -1;
        for (int h = 0; h < NET__H_COUNT; ++h) {
            if (strcasecmp(s->field, header_names[h]) == 0) {
                s->cur_header = h;
                // A repeated header continues as a comma-separated list.
                if (s->hlen[h] > 0 && s->hlen[h] + 1 < sizeof s->hval[h]) {
                    s->hval[h][s->hlen[h]++] = ',';
                }
                break;
            }
        }
    }
    if (s->cur_header >= 0) {
        int h = s->cur_header;
        size_t room = sizeof s->hval[h] - 1 - s->hlen[h];
        size_t n = len < room ? len : room;
        if (n < len) {
            s->htrunc = true;
        }
        memcpy(s->hval[h] + s->hlen[h], at, n);
        s->hlen[h] += n;
        s->hval[h][s->hlen[h]] = '\0';
    }
    return 0;
}

static int on_message_complete(http_parser* p) {
    net_session* s = p->data;
    s->request_done = true;
    // Stop here so the request is answered before the next one is parsed.
    http_parser_pause(p, 1);
    return 0;
}

static const http_parser_settings parser_settings = {
    .on_url = on_url,
    .on_header_field = on_header_field,
    .on_header_value = on_header_value,
    .on_message_complete = on_message_complete,
};

static const char* status_text(int status) {
    switch (status) {
    case 101:
        return "Switching Protocols";
    case 200:
        return "OK";
    case 400:
        return "Bad Request";
    case 401:
        return "Unauthorized";
    case 403:
        return "Forbidden";
    case 404:
        return "Not Found";
    case 405:
        return "Method Not Allowed";
    case 426:
        return "Upgrade Required";
    case 431:
        return "Request Header Fields Too Large";
    case 500:
        return "Internal Server Error";
    case 429:
        return "Too Many Requests";
    case 503:
        return "Service Unavailable";
    }
    return "Unknown";
}

void net__http_respond(net_session* s, int status, const char* content_type,
                       const char* extra_headers, const char* body, size_t body_len, bool close) {
    bool head = s->parser.method == HTTP_HEAD;
    char hdr[1024];
    int n = snprintf(hdr, sizeof hdr,
                     "HTTP/1.1 %d %s\r\n"
                     "Content-Type: %s\r\n"
                     "Content-Length: %zu\r\n"
                     "Cache-Control: no-cache\r\n"
                     "X-Content-Type-Options: nosniff\r\n"
                     "Connection: %s\r\n"
                     "%s\r\n",
                     status, status_text(status), content_type, body_len,
                     close ? "close" : "keep-alive", extra_headers);
    if (n < 0 || (size_t)n >= sizeof hdr) {
        net__close_now(s);
        return;
    }
    size_t total = (size_t)n + (head ? 0 : body_len);
    char* buf = malloc(total);
    if (buf == NULL) {
        net__close_now(s);
        return;
    }
    memcpy(buf, hdr, (size_t)n);
    if (!head && body_len > 0) {
        memcpy(buf + n, body, body_len);
    }
    net__stats_responded(s, status, body, body_len);
    int rc = net__write(s, buf, total);
    free(buf);
    if (rc != 0) {
        net__close_now(s);
        return;
    }
    if (close) {
        s->close_after_write = true;
    }
}

static void respond_text(net_session* s, int status, const char* text, bool close) {
    net__http_respond(s, status, "text/plain; charset=utf-8", "", text, strlen(text), close);
}

static const char* content_type_of(const char* path) {
    static const struct {
        const char* ext;
        const char* type;
    } types[] = {
        {".html", "text/html; charset=utf-8"},
        {".js", "text/javascript; charset=utf-8"},
        {".mjs", "text/javascript; charset=utf-8"},
        {".css", "text/css; charset=utf-8"},
        {".json", "application/json"},
        {".map", "application/json"},
        {".png", "image/png"},
        {".svg", "image/svg+xml"},
        {".ico", "image/x-icon"},
        {".txt", "text/plain; charset=utf-8"},
    };
    const char* dot = strrchr(path, '.');
    if (dot != NULL) {
        for (size_t i = 0; i < sizeof types / sizeof types[0]; ++i) {
            if (strcmp(dot, types[i].ext) == 0) {
                return types[i].type;
            }
        }
    }
    return "application/octet-stream";
}

// Accepts only plain relative paths: no "..", no empty segments, a small
// alphabet. Anything else is simply not found.
static bool safe_path(const char* path) {
    if (path[0] != '/' || strlen(path) > 256) {
        return false;
    }
    for (const char* c = path; *c != '\0'; ++c) {
        bool ok = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
                  (*c >= '0' && *c <= '9') || *c == '/' || *c == '.' || *c == '-' || *c == '_';
        if (!ok) {
            return false;
        }
    }
    return strstr(path, "..") == NULL && strstr(path, "//") == NULL;
}

static void serve_static(net_session* s, const char* path, bool close) {
    const char* root = s->srv->cfg.web_root;
    if (root == NULL || !safe_path(path)) {
        respond_text(s, 404, "not found\n", close);
        return;
    }
    char full[1024];
    const char* rel = strcmp(path, "/") == 0 ? "/index.html" : path;
    int n = snprintf(full, sizeof full, "%s%s", root, rel);
    struct stat st;
    if (n < 0 || (size_t)n >= sizeof full || stat(full, &st) != 0 || !S_ISREG(st.st_mode) ||
        (size_t)st.st_size > NET__MAX_STATIC_BYTES) {
        respond_text(s, 404, "not found\n", close);
        return;
    }
    FILE* f = fopen(full, "rb");
    char* body = f != NULL ? malloc((size_t)st.st_size + 1) : NULL;
    size_t got = body != NULL ? fread(body, 1, (size_t)st.st_size, f) : 0;
    if (f != NULL) {
        fclose(f);
    }
    if (body == NULL || got != (size_t)st.st_size) {
        free(body);
        respond_text(s, 500, "cannot read file\n", true);
        return;
    }
    net__http_respond(s, 200, content_type_of(rel), "", body, got, close);
    free(body);
}

// Routes one complete request. Returns true when the session switched to
// WebSocket (the caller hands it the rest of the buffer).
static bool handle_request(net_session* s, const uint8_t* rest, size_t rest_len) {
    net_server* srv = s->srv;
    bool close = !http_should_keep_alive(&s->parser) || srv->stopping;
    if (s->parser.method != HTTP_GET && s->parser.method != HTTP_HEAD) {
        net__http_respond(s, 405, "text/plain; charset=utf-8", "Allow: GET, HEAD\r\n",
                          "method not allowed\n", 19, true);
        return false;
    }
    // The path is the URL up to any query string.
    char path[NET__MAX_URL];
    size_t plen = strcspn(s->url, "?#");
    memcpy(path, s->url, plen);
    path[plen] = '\0';

    if (strcmp(path, srv->cfg.ws_path) == 0) {
        if (s->parser.upgrade && s->parser.method == HTTP_GET) {
            net__ws_upgrade(s, rest, rest_len);
            return s->state == NET__WS;
        }
        net__http_respond(s, 426, "text/plain; charset=utf-8",
                          "Upgrade: websocket\r\nSec-WebSocket-Version: 13\r\n",
                          "this path takes a WebSocket upgrade\n", 36, true);
        return false;
    }
    net_http_response resp = {0, NULL, NULL, 0};
    if (srv->cb.on_http != NULL && srv->cb.on_http(srv->cb.ctx, path, &resp)) {
        net__http_respond(s, resp.status, resp.content_type, "", resp.body, resp.body_len, close);
        free(resp.body);
    } else {
        serve_static(s, path, close);
    }
    return false;
}

void net__http_feed(net_session* s, const uint8_t* data, size_t len) {
    size_t off = 0;
    while (off < len && s->state == NET__HTTP && !s->close_after_write) {
        size_t used =
            http_parser_execute(&s->parser, &parser_settings, (const char*)data + off, len - off);
        off += used;
        enum http_errno err = HTTP_PARSER_ERRNO(&s->parser);
        if (err == HPE_PAUSED) {
            http_parser_pause(&s->parser, 0);
        } else if (err != HPE_OK) {
            if (s->request_too_large || err == HPE_HEADER_OVERFLOW) {
                respond_text(s, 431, "request head too large\n", true);
            } else {
                respond_text(s, 400, "malformed request\n", true);
            }
            return;
        }
        if (!s->request_done) {
            if (used == 0) {
                break;
            }
            continue;
        }
        if (handle_request(s, data + off, len - off)) {
            return; // ws.c consumed the rest
        }
        net__http_reset(s);
        // A kept-alive connection gets a fresh deadline for its next request.
        net__arm_request_deadline(s);
    }
}
