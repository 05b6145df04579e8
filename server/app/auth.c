/*
 * auth.c: who may do what (PROTOCOL.md §6). The auth file maps tokens to a
 * role (viewer, player, admin), optionally limited to named worlds; an
 * upgrade is admitted here (Origin, token, per-address caps) and every
 * command is checked against its client's role before it runs.
 *
 * Tokens are compared in constant time over every entry, so neither the
 * time nor the order of the entries says how much of a guess was right.
 * A token never leaves this file: not in replies, logs or metrics.
 */
#include "app_internal.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

struct app_auth {
    app_auth_entry* entries;
    uint32_t count;
};

static bool token_char(int ch) {
    return (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ||
           ch == '.' || ch == '_' || ch == '~' || ch == '-';
}

bool app__token_well_formed(const char* t, size_t len) {
    if (len < APP_TOKEN_MIN || len > APP_TOKEN_MAX) {
        return false;
    }
    for (size_t i = 0; i < len; ++i) {
        if (!token_char((unsigned char)t[i])) {
            return false;
        }
    }
    return true;
}

const char* app_role_name(app_role r) {
    switch (r) {
    case APP_ROLE_VIEWER:
        return "viewer";
    case APP_ROLE_PLAYER:
        return "player";
    case APP_ROLE_ADMIN:
        return "admin";
    default:
        return "none";
    }
}

int app_role_parse(const char* s, app_role* out) {
    static const app_role roles[] = {APP_ROLE_NONE, APP_ROLE_VIEWER, APP_ROLE_PLAYER,
                                     APP_ROLE_ADMIN};
    for (size_t i = 0; i < sizeof roles / sizeof roles[0]; ++i) {
        if (strcmp(s, app_role_name(roles[i])) == 0) {
            *out = roles[i];
            return 0;
        }
    }
    return -1;
}

void app_auth_destroy(app_auth* a) {
    if (a == NULL) {
        return;
    }
    free(a->entries);
    free(a);
}

// Splits `line` (modified) into at most `max` words separated by blanks.
static uint32_t split_words(char* line, char** words, uint32_t max, bool* too_many) {
    uint32_t n = 0;
    *too_many = false;
    for (char* p = line; *p != '\0';) {
        while (*p == ' ' || *p == '\t') {
            *p++ = '\0';
        }
        if (*p == '\0') {
            break;
        }
        if (n == max) {
            *too_many = true;
            break;
        }
        words[n++] = p;
        while (*p != '\0' && *p != ' ' && *p != '\t') {
            p++;
        }
    }
    return n;
}

int app_auth_load(const char* path, app_auth** out, char* err, size_t cap) {
    FILE* f = fopen(path, "r");
    if (f == NULL) {
        snprintf(err, cap, "%s: cannot open it", path);
        return -1;
    }
    app_auth* a = calloc(1, sizeof *a);
    if (a == NULL) {
        fclose(f);
        snprintf(err, cap, "out of memory");
        return -1;
    }
    char line[1024];
    uint32_t lineno = 0;
    int rc = 0;
    while (rc == 0 && fgets(line, sizeof line, f) != NULL) {
        lineno++;
        size_t len = strlen(line);
        if (len == sizeof line - 1 && line[len - 1] != '\n') {
            snprintf(err, cap, "%s:%u: line longer than %zu bytes", path, lineno, sizeof line - 2);
            rc = -1;
            break;
        }
        line[strcspn(line, "\r\n")] = '\0';
        char* hash = strchr(line, '#');
        if (hash != NULL) {
            *hash = '\0';
        }
        char* words[2 + APP_AUTH_MAX_WORLDS];
        bool too_many = false;
        uint32_t n = split_words(line, words, 2 + APP_AUTH_MAX_WORLDS, &too_many);
        if (n == 0) {
            continue;
        }
        app_role role = APP_ROLE_NONE;
        // The token is never echoed, even in an error about itself.
        if (n < 2) {
            snprintf(err, cap, "%s:%u: expected \"TOKEN ROLE [WORLD ...]\"", path, lineno);
            rc = -1;
        } else if (!app__token_well_formed(words[0], strlen(words[0]))) {
            snprintf(err, cap,
                     "%s:%u: a token is %d to %d characters of A-Z a-z 0-9 . _ ~ - (make one with "
                     "`head -c 24 /dev/urandom | base64 | tr '+/' '-_'`)",
                     path, lineno, APP_TOKEN_MIN, APP_TOKEN_MAX);
            rc = -1;
        } else if (app_role_parse(words[1], &role) != 0 || role == APP_ROLE_NONE) {
            snprintf(err, cap, "%s:%u: the role is viewer, player or admin, not \"%.32s\"", path,
                     lineno, words[1]);
            rc = -1;
        } else if (too_many) {
            snprintf(err, cap, "%s:%u: at most %d worlds per token", path, lineno,
                     APP_AUTH_MAX_WORLDS);
            rc = -1;
        }
        for (uint32_t k = 2; rc == 0 && k < n; ++k) {
            if (strlen(words[k]) > RDP_MAX_NAME) {
                snprintf(err, cap, "%s:%u: world name longer than %d bytes", path, lineno,
                         RDP_MAX_NAME);
                rc = -1;
            }
        }
        for (uint32_t i = 0; rc == 0 && i < a->count; ++i) {
            if (strcmp(a->entries[i].token, words[0]) == 0) {
                snprintf(err, cap, "%s:%u: the same token as line %u", path, lineno,
                         a->entries[i].line);
                rc = -1;
            }
        }
        if (rc != 0) {
            break;
        }
        if (a->count == APP_AUTH_MAX_ENTRIES) {
            snprintf(err, cap, "%s:%u: at most %d tokens", path, lineno, APP_AUTH_MAX_ENTRIES);
            rc = -1;
            break;
        }
        app_auth_entry* grown = realloc(a->entries, (a->count + 1) * sizeof *grown);
        if (grown == NULL) {
            snprintf(err, cap, "out of memory");
            rc = -1;
            break;
        }
        a->entries = grown;
        app_auth_entry* e = &a->entries[a->count++];
        memset(e, 0, sizeof *e);
        e->len = strlen(words[0]);
        memcpy(e->token, words[0], e->len);
        e->role = role;
        e->line = lineno;
        e->world_count = n - 2;
        for (uint32_t k = 2; k < n; ++k) {
            memcpy(e->worlds[k - 2], words[k], strlen(words[k]) + 1);
        }
    }
    if (rc == 0 && ferror(f)) {
        snprintf(err, cap, "%s: read error", path);
        rc = -1;
    }
    fclose(f);
    if (rc == 0 && a->count == 0) {
        snprintf(err, cap, "%s: no tokens (lines of \"TOKEN ROLE [WORLD ...]\")", path);
        rc = -1;
    }
    if (rc != 0) {
        app_auth_destroy(a);
        return -1;
    }
    *out = a;
    return 0;
}

uint32_t app_auth_count(const app_auth* a) {
    return a != NULL ? a->count : 0;
}

const app_auth_entry* app__auth_lookup(const app_auth* a, const char* token, size_t len) {
    // Every entry is compared over the whole buffer, and the answer is
    // picked without branching on the bytes, so timing leaks neither which
    // entry nor how many characters matched.
    const app_auth_entry* found = NULL;
    uint8_t padded[APP_TOKEN_MAX + 1];
    memset(padded, 0, sizeof padded);
    size_t n = len < APP_TOKEN_MAX ? len : APP_TOKEN_MAX;
    memcpy(padded, token, n);
    for (uint32_t i = 0; i < a->count; ++i) {
        const app_auth_entry* e = &a->entries[i];
        volatile uint8_t diff = (uint8_t)(len != e->len);
        for (size_t k = 0; k < sizeof padded; ++k) {
            diff |= (uint8_t)(padded[k] ^ (uint8_t)e->token[k]);
        }
        uintptr_t mask = (uintptr_t)0 - (uintptr_t)(diff == 0);
        found = (const app_auth_entry*)(((uintptr_t)found & ~mask) | ((uintptr_t)e & mask));
    }
    return found;
}

// ---------------------------------------------------------------------------
// The upgrade
// ---------------------------------------------------------------------------

// The token a request offers: "Authorization: Bearer T", else a
// subprotocol entry "ragdolld.auth.T". *len 0 when there is none.
static const char* offered_token(const net_upgrade* req, size_t* len) {
    static const char prefix[] = APP_AUTH_SUBPROTOCOL_PREFIX;
    *len = 0;
    if (req->authorization != NULL) {
        const char* p = req->authorization;
        while (*p == ' ') {
            p++;
        }
        if (strncasecmp(p, "bearer ", 7) == 0) {
            p += 7;
            while (*p == ' ') {
                p++;
            }
            size_t n = strcspn(p, " ,");
            *len = n;
            return p;
        }
        // Another scheme: no token from here; 401 says what is expected.
        *len = 0;
        return "";
    }
    for (const char* p = req->protocols; p != NULL && *p != '\0';) {
        p += strspn(p, " \t,");
        size_t n = strcspn(p, " \t,");
        if (n > sizeof prefix - 1 && strncmp(p, prefix, sizeof prefix - 1) == 0) {
            *len = n - (sizeof prefix - 1);
            return p + sizeof prefix - 1;
        }
        p += n;
    }
    return NULL;
}

// Origin "scheme://host[:port]" against the Host header: same host and port.
static bool same_origin(const char* origin, const char* host) {
    const char* sep = strstr(origin, "://");
    if (sep == NULL || host == NULL) {
        return false;
    }
    return strcasecmp(sep + 3, host) == 0;
}

// A Host header that names this machine: localhost, 127.x.x.x or [::1],
// with or without a port.
static bool loopback_host(const char* host) {
    if (host == NULL) {
        return false;
    }
    if (strncmp(host, "[::1]", 5) == 0) {
        return host[5] == '\0' || host[5] == ':';
    }
    size_t n = strcspn(host, ":");
    return (n == 9 && strncasecmp(host, "localhost", 9) == 0) || strncmp(host, "127.", 4) == 0;
}

static bool origin_allowed(const app_server* app, const char* origin, const char* host) {
    if (origin == NULL) {
        return true; // not a browser: the token decides
    }
    if (app->cfg.allow_origin_count == 0) {
        // A server on loopback without tokens treats every client as an
        // admin, so a browser must also have reached it by a loopback name:
        // a page whose own name was rebound to 127.0.0.1 (DNS rebinding)
        // sends Host and Origin alike, both its own.
        const char* bind = app->cfg.host;
        bool local_only = strncmp(bind, "127.", 4) == 0 || strcmp(bind, "::1") == 0 ||
                          strcmp(bind, "localhost") == 0;
        return same_origin(origin, host) &&
               (app->cfg.auth != NULL || !local_only || loopback_host(host));
    }
    for (uint32_t i = 0; i < app->cfg.allow_origin_count; ++i) {
        const char* o = app->cfg.allow_origins[i];
        if (strcmp(o, "*") == 0 || strcasecmp(o, origin) == 0) {
            return true;
        }
    }
    return false;
}

// Sessions of the same kind (authenticated or not) from `peer`.
static uint32_t sessions_from(const app_server* app, const char* peer, bool authenticated,
                              uint32_t* anonymous_total) {
    uint32_t n = 0;
    *anonymous_total = 0;
    for (const app_client* c = app->client_list; c != NULL; c = c->next) {
        bool auth = c->entry != NULL;
        if (!auth) {
            (*anonymous_total)++;
        }
        if (auth == authenticated && strcmp(net_session_peer(c->session), peer) == 0) {
            n++;
        }
    }
    return n;
}

int app__admit_upgrade(app_server* app, net_session* s, const net_upgrade* req,
                       const char** reason) {
    if (req->truncated) {
        *reason = "a header is too long";
        return 400;
    }
    if (!origin_allowed(app, req->origin, req->host)) {
        *reason = "this Origin may not connect (see --allow-origin)";
        app->auth_refusals[APP_REFUSE_ORIGIN]++;
        return 403;
    }
    size_t len = 0;
    const char* token = offered_token(req, &len);
    const app_auth_entry* entry = NULL;
    app_role role = APP_ROLE_ADMIN; // without an auth file the server trusts its (loopback) clients
    if (app->cfg.auth != NULL) {
        if (token != NULL) {
            entry = app__token_well_formed(token, len) ? app__auth_lookup(app->cfg.auth, token, len)
                                                       : NULL;
            if (entry == NULL) {
                *reason = "unknown token";
                app->auth_refusals[APP_REFUSE_TOKEN]++;
                return 401;
            }
            role = entry->role;
        } else {
            role = app->cfg.anonymous_role;
            if (role == APP_ROLE_NONE) {
                *reason = "this server needs a token (Authorization: Bearer, or the subprotocol "
                          "ragdolld.auth.TOKEN)";
                app->auth_refusals[APP_REFUSE_TOKEN]++;
                return 401;
            }
        }
    }
    uint32_t anonymous = 0;
    uint32_t same = sessions_from(app, req->peer, entry != NULL, &anonymous);
    if (app->cfg.max_sessions_per_address > 0 && same >= app->cfg.max_sessions_per_address) {
        *reason = entry != NULL ? "too many authenticated sessions from this address"
                                : "too many sessions from this address";
        app->auth_refusals[APP_REFUSE_ADDRESS]++;
        return 429;
    }
    // With access control, anonymous sessions leave an eighth of the slots
    // to clients with tokens, so a crowd of strangers cannot lock them out.
    if (app->cfg.auth != NULL && entry == NULL && app->cfg.max_sessions > 0 &&
        anonymous >= app->cfg.max_sessions - app->cfg.max_sessions / 8) {
        *reason = "no room for more anonymous sessions";
        app->auth_refusals[APP_REFUSE_FULL]++;
        return 503;
    }
    app_client* c = app__client_new(app, s);
    if (c == NULL) {
        *reason = "out of memory";
        return 503;
    }
    c->role = role;
    c->entry = entry;
    // Ownership survives a reconnect with the same token; anonymous
    // sessions own what they spawn for as long as they last.
    c->owner = entry != NULL ? (uint64_t)(entry - app__auth_entries(app->cfg.auth)) + 1
                             : ((uint64_t)1 << 63) | net_session_id(s);
    return 0;
}

const app_auth_entry* app__auth_entries(const app_auth* a) {
    return a->entries;
}

const char* app__token_list_next(const char** cursor, size_t* len) {
    const char* p = *cursor + strspn(*cursor, " ,");
    *len = strcspn(p, " ,");
    *cursor = p + *len;
    return *len > 0 ? p : NULL;
}

int app__auth_add_tokens(app_server* app, const char* list, app_role role, const char* world,
                         uint32_t* added, char* why, size_t cap) {
    app_auth* a = app->cfg.auth;
    *added = 0;
    // Count and check them all before anything changes.
    uint32_t n = 0;
    size_t len = 0;
    for (const char *at = list, *p; (p = app__token_list_next(&at, &len)) != NULL;) {
        if (!app__token_well_formed(p, len)) {
            snprintf(why, cap, "token %u is not %d to %d characters of A-Z a-z 0-9 . _ ~ -", n + 1,
                     APP_TOKEN_MIN, APP_TOKEN_MAX);
            return -1;
        }
        if (app__auth_lookup(a, p, len) != NULL) {
            snprintf(why, cap, "token %u is already this server's (its auth file's, or another's)",
                     n + 1);
            return -1;
        }
        n++;
    }
    if (n == 0) {
        return 0;
    }
    if (a->count + n > APP_AUTH_MAX_ENTRIES) {
        snprintf(why, cap, "the server would hold more than %d tokens", APP_AUTH_MAX_ENTRIES);
        return -1;
    }
    // A new array, not realloc: clients hold pointers into the old one and
    // are moved across (same index, so the same ownership keys).
    app_auth_entry* grown = calloc(a->count + n, sizeof *grown);
    if (grown == NULL) {
        snprintf(why, cap, "out of memory");
        return -1;
    }
    memcpy(grown, a->entries, a->count * sizeof *grown);
    uint32_t k = a->count;
    for (const char *at = list, *p; (p = app__token_list_next(&at, &len)) != NULL;) {
        app_auth_entry* e = &grown[k++];
        memcpy(e->token, p, len);
        e->len = len;
        e->role = role;
        e->line = 0;
        e->world_count = 1;
        snprintf(e->worlds[0], sizeof e->worlds[0], "%s", world);
    }
    for (app_client* c = app->client_list; c != NULL; c = c->next) {
        if (c->entry != NULL) {
            c->entry = grown + (c->entry - a->entries);
        }
    }
    free(a->entries);
    a->entries = grown;
    a->count += n;
    *added = n;
    return 0;
}

// ---------------------------------------------------------------------------
// Commands
// ---------------------------------------------------------------------------

app_role app__role_needed(rdp_op op) {
    switch (op) {
    case RDP_OP_LIST_WORLDS:
    case RDP_OP_DESCRIBE:
    case RDP_OP_SUBSCRIBE:
    case RDP_OP_UNSUBSCRIBE:
    case RDP_OP_ACK:
    case RDP_OP_RESYNC:
    case RDP_OP_SET_FOCUS:
    case RDP_OP_RAYCAST: // a question: it changes nothing
        return APP_ROLE_VIEWER;
    case RDP_OP_SPAWN_ROPE:
    case RDP_OP_SPAWN_CLOTH:
    case RDP_OP_SPAWN_RAGDOLL:
    case RDP_OP_SPAWN_CHARACTER:
    case RDP_OP_SPAWN_BALL:
    case RDP_OP_ATTACH_CLOTH:
    case RDP_OP_SPAWN_SOFTBODY:
    case RDP_OP_DESPAWN: // of its own entities; app__apply checks the owner
    case RDP_OP_APPLY_IMPULSE:
    case RDP_OP_DRAG:
    case RDP_OP_RELEASE:
    case RDP_OP_KILL:
    case RDP_OP_START_GETUP:
    case RDP_OP_SET_DRIVE:
    case RDP_OP_SET_PARTIAL:
    case RDP_OP_PLAY:
    case RDP_OP_SET_TEAR:
        return APP_ROLE_PLAYER;
    default: // create_world, destroy_world, set_params, and any later operation
        return APP_ROLE_ADMIN;
    }
}

bool app__may(const app_client* c, rdp_op op, const char* world_name, char* msg, size_t cap) {
    app_role need = app__role_needed(op);
    if (c->role < need) {
        snprintf(msg, cap, "%s needs the %s role; this connection is a %s", rdp_op_name(op),
                 app_role_name(need), app_role_name(c->role));
        return false;
    }
    if (c->entry != NULL && c->entry->world_count > 0 && op != RDP_OP_LIST_WORLDS) {
        for (uint32_t i = 0; world_name != NULL && i < c->entry->world_count; ++i) {
            if (strcmp(c->entry->worlds[i], world_name) == 0) {
                return true;
            }
        }
        snprintf(msg, cap, "this connection's token is not for %s%.*s%s",
                 world_name != NULL ? "world \"" : "that world", RDP_MAX_NAME,
                 world_name != NULL ? world_name : "", world_name != NULL ? "\"" : "");
        return false;
    }
    return true;
}
