/*
 * scenario.c: ragdoll-load's scenario file (JSON; clients/c/README.md and
 * clients/c/scenarios/) and its command templates, whose placeholders are
 * filled per command from what the client has seen.
 */
#include "load.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fail(char* err, size_t cap, const char* fmt, ...) __attribute__((format(printf, 3, 4)));

static int fail(char* err, size_t cap, const char* fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, cap, fmt, ap);
    va_end(ap);
    return -1;
}

// Reads an optional number field; false when present but not a number.
static bool opt_num(const cJSON* o, const char* key, double* out) {
    const cJSON* v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (v == NULL) {
        return true;
    }
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble)) {
        return false;
    }
    *out = v->valuedouble;
    return true;
}

static bool opt_bool(const cJSON* o, const char* key, bool* out) {
    const cJSON* v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (v == NULL) {
        return true;
    }
    if (!cJSON_IsBool(v)) {
        return false;
    }
    *out = cJSON_IsTrue(v);
    return true;
}

static bool whole(double v, double lo, double hi) {
    return v >= lo && v <= hi && v == floor(v);
}

static char* read_file(const char* path) {
    FILE* f = fopen(path, "rb");
    if (f == NULL) {
        return NULL;
    }
    size_t cap = 4096, len = 0;
    char* buf = malloc(cap);
    size_t n;
    while (buf != NULL && (n = fread(buf + len, 1, cap - len - 1, f)) > 0) {
        len += n;
        if (cap - len - 1 == 0) {
            char* grown = cap < (16u << 20) ? realloc(buf, cap * 2) : NULL;
            if (grown == NULL) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = grown;
            cap *= 2;
        }
    }
    fclose(f);
    if (buf != NULL) {
        buf[len] = '\0';
    }
    return buf;
}

int load_scenario_read(const char* path, load_scenario* sc, char* err, size_t cap) {
    memset(sc, 0, sizeof *sc);
    snprintf(sc->url, sizeof sc->url, "ws://127.0.0.1:8080/ws");
    sc->clients = 10;
    sc->ramp_per_s = 0;
    sc->duration_s = 10;
    sc->cleanup = true;
    sc->decode = true;
    sc->seed = 0;
    char* text = read_file(path);
    if (text == NULL) {
        return fail(err, cap, "cannot read %s", path);
    }
    cJSON* root = cJSON_Parse(text);
    free(text);
    if (!cJSON_IsObject(root)) {
        cJSON_Delete(root);
        return fail(err, cap, "%s: not a JSON object", path);
    }
    int rc = -1;
    double clients = sc->clients, seed = 0;
    const cJSON* url = cJSON_GetObjectItemCaseSensitive(root, "url");
    if (url != NULL) {
        if (!cJSON_IsString(url) || strlen(url->valuestring) >= sizeof sc->url) {
            fail(err, cap, "\"url\" must be a string (ws://host:port/path)");
            goto out;
        }
        snprintf(sc->url, sizeof sc->url, "%s", url->valuestring);
    }
    const cJSON* token = cJSON_GetObjectItemCaseSensitive(root, "token");
    if (token != NULL) {
        if (!cJSON_IsString(token) || !rdc_token_valid(token->valuestring)) {
            // The value is a secret: not repeated in the message.
            fail(err, cap, "\"token\" must be a string of %d-%d characters of A-Z a-z 0-9 . _ ~ -",
                 RDC_TOKEN_MIN, RDC_TOKEN_MAX);
            goto out;
        }
        snprintf(sc->token, sizeof sc->token, "%s", token->valuestring);
    }
    if (!opt_num(root, "clients", &clients) || !whole(clients, 1, 1e9) ||
        !opt_num(root, "ramp_per_s", &sc->ramp_per_s) || sc->ramp_per_s < 0 ||
        !opt_num(root, "duration_s", &sc->duration_s) || !(sc->duration_s > 0) ||
        !opt_bool(root, "reconnect", &sc->reconnect) || !opt_bool(root, "cleanup", &sc->cleanup) ||
        !opt_bool(root, "decode", &sc->decode) || !opt_num(root, "seed", &seed) ||
        !whole(seed, 0, 9007199254740991.0)) {
        fail(err, cap,
             "\"clients\" (a whole number > 0), \"ramp_per_s\" (>= 0), \"duration_s\" (> 0), "
             "\"seed\" (a whole number >= 0), \"reconnect\", \"cleanup\" and \"decode\" "
             "(true/false) "
             "have "
             "the wrong type or value");
        goto out;
    }
    sc->clients = clients > 4e9 ? 4000000000u : (uint32_t)clients;
    sc->seed = (uint64_t)seed;

    const cJSON* subs = cJSON_GetObjectItemCaseSensitive(root, "subscriptions");
    const cJSON* s;
    if (subs != NULL && !cJSON_IsArray(subs)) {
        fail(err, cap, "\"subscriptions\" must be an array");
        goto out;
    }
    cJSON_ArrayForEach(s, subs) {
        if (sc->sub_count == RDC_MAX_SUBSCRIPTIONS) {
            fail(err, cap, "at most %d subscriptions", RDC_MAX_SUBSCRIPTIONS);
            goto out;
        }
        double world = 0, rate = 30;
        const char* format = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(s, "format"));
        if (!cJSON_IsObject(s) || !opt_num(s, "world", &world) ||
            !whole(world, 1, 9007199254740991.0) || !opt_num(s, "rate_hz", &rate) ||
            !whole(rate, 1, 240) ||
            (format != NULL && strcmp(format, "json") != 0 && strcmp(format, "binary") != 0)) {
            fail(err, cap,
                 "subscription %u: wants {\"world\": id, \"format\": \"json\"|\"binary\", "
                 "\"rate_hz\": 1-240}",
                 sc->sub_count + 1);
            goto out;
        }
        load_sub* ls = &sc->subs[sc->sub_count++];
        ls->world = (uint64_t)world;
        ls->rate_hz = (uint32_t)rate;
        ls->format =
            format != NULL && strcmp(format, "binary") == 0 ? RDC_FORMAT_BINARY : RDC_FORMAT_JSON;
        // Interest management (PROTOCOL.md §5.3): a budget, and a focus.
        double budget = 0, radius = 15;
        const cJSON* focus = cJSON_GetObjectItemCaseSensitive(s, "focus");
        if (!opt_num(s, "bytes_per_s", &budget) || (budget != 0 && !whole(budget, 1000, 1e8)) ||
            (budget != 0 && ls->format != RDC_FORMAT_BINARY) || !opt_num(s, "radius", &radius) ||
            !(radius > 0 && radius <= 2000) ||
            (focus != NULL && (!cJSON_IsArray(focus) || cJSON_GetArraySize(focus) != 3))) {
            fail(err, cap,
                 "subscription %u: \"bytes_per_s\" is 1000-1e8 (binary only), \"focus\" [x, y, "
                 "z] m, \"radius\" (0, 2000] m",
                 sc->sub_count);
            goto out;
        }
        ls->bytes_per_s = (uint32_t)budget;
        ls->radius = radius;
        for (int c = 0; focus != NULL && c < 3; ++c) {
            const cJSON* v = cJSON_GetArrayItem(focus, c);
            if (!cJSON_IsNumber(v) || fabs(v->valuedouble) > 1000) {
                fail(err, cap, "subscription %u: \"focus\" is 3 numbers in [-1000, 1000] m",
                     sc->sub_count);
                goto out;
            }
            ls->focus[c] = v->valuedouble;
            ls->has_focus = true;
        }
    }

    const cJSON* cmds = cJSON_GetObjectItemCaseSensitive(root, "commands");
    if (cmds != NULL) {
        const cJSON* mix = cJSON_GetObjectItemCaseSensitive(cmds, "mix");
        if (!cJSON_IsObject(cmds) || !opt_num(cmds, "rate_hz", &sc->cmd_rate_hz) ||
            sc->cmd_rate_hz < 0 || !cJSON_IsArray(mix)) {
            fail(err, cap,
                 "\"commands\" wants {\"rate_hz\": per client per second, \"mix\": [...]}");
            goto out;
        }
        const cJSON* m;
        cJSON_ArrayForEach(m, mix) {
            if (sc->mix_count == LOAD_MAX_MIX) {
                fail(err, cap, "at most %d entries in the mix", LOAD_MAX_MIX);
                goto out;
            }
            double weight = 1;
            const cJSON* cmd = cJSON_GetObjectItemCaseSensitive(m, "command");
            const char* op = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(cmd, "op"));
            if (!cJSON_IsObject(m) || !opt_num(m, "weight", &weight) || !(weight > 0) ||
                op == NULL || strlen(op) >= sizeof sc->mix[0].op) {
                fail(err, cap,
                     "mix entry %u: wants {\"weight\": > 0, \"command\": {\"op\": ..., ...}}",
                     sc->mix_count + 1);
                goto out;
            }
            load_mix* lm = &sc->mix[sc->mix_count++];
            lm->weight = weight;
            lm->command = cJSON_Duplicate(cmd, true);
            snprintf(lm->op, sizeof lm->op, "%s", op);
            sc->weight_sum += weight;
        }
        if (sc->cmd_rate_hz > 0 && sc->mix_count == 0) {
            fail(err, cap, "\"commands\" has a rate but an empty mix");
            goto out;
        }
    }
    rc = 0;
out:
    cJSON_Delete(root);
    if (rc != 0) {
        load_scenario_free(sc);
    }
    return rc;
}

void load_scenario_free(load_scenario* sc) {
    for (uint32_t i = 0; i < sc->mix_count; ++i) {
        cJSON_Delete(sc->mix[i].command);
        sc->mix[i].command = NULL;
    }
    sc->mix_count = 0;
}

int load_scenario_check(const load_scenario* sc, char* err, size_t cap) {
    if (sc->clients < 1 || sc->clients > LOAD_MAX_CLIENTS) {
        return fail(err, cap, "clients must be 1-%d (not %u)", LOAD_MAX_CLIENTS, sc->clients);
    }
    if (!(sc->duration_s > 0) || sc->duration_s > LOAD_MAX_DURATION_S) {
        return fail(err, cap, "duration must be in (0, %g] s (not %g)", LOAD_MAX_DURATION_S,
                    sc->duration_s);
    }
    if (sc->cmd_rate_hz > LOAD_MAX_CMD_RATE) {
        return fail(err, cap, "commands.rate_hz must be at most %g per client (not %g)",
                    LOAD_MAX_CMD_RATE, sc->cmd_rate_hz);
    }
    return 0;
}

// ---------------------------------------------------------------------------
// Templates
// ---------------------------------------------------------------------------

static const struct {
    const char* name;
    int kind;
} entity_placeholders[] = {
    {"$any", 0},
    {"$rope", RDC_KIND_ROPE},
    {"$cloth", RDC_KIND_CLOTH},
    {"$ragdoll", RDC_KIND_RAGDOLL},
    {"$character", RDC_KIND_CHARACTER},
    {"$ball", RDC_KIND_BALL},
};

// The world a command is about, for entity placeholders.
static uint64_t world_of(const cJSON* cmd) {
    const cJSON* w = cJSON_GetObjectItemCaseSensitive(cmd, "world");
    return cJSON_IsNumber(w) && w->valuedouble >= 0 ? (uint64_t)w->valuedouble : 0;
}

// Replaces the placeholders inside v (a copy; modified in place). False
// when one cannot be resolved.
static bool resolve(cJSON* v, const load_view* view, uint64_t world, bool despawn) {
    if (cJSON_IsString(v) && v->valuestring[0] == '$') {
        uint64_t id = 0;
        if (strcmp(v->valuestring, "$spawned") == 0) {
            id = view->pick_spawned(view->ctx, world, despawn);
        } else {
            for (size_t i = 0; i < sizeof entity_placeholders / sizeof entity_placeholders[0];
                 ++i) {
                if (strcmp(v->valuestring, entity_placeholders[i].name) == 0) {
                    id = view->pick(view->ctx, world, entity_placeholders[i].kind);
                }
            }
        }
        if (id == 0) {
            return false;
        }
        // Turn the string node into a number node in place.
        cJSON_free(v->valuestring);
        v->valuestring = NULL;
        v->type = cJSON_Number;
        cJSON_SetNumberValue(v, (double)id);
        return true;
    }
    if (cJSON_IsObject(v) && cJSON_GetArraySize(v) == 1 && v->child->string != NULL &&
        v->child->string[0] == '$') {
        const char* key = v->child->string;
        const cJSON* arg = v->child;
        double value;
        if ((strcmp(key, "$uniform") == 0 || strcmp(key, "$int") == 0) &&
            cJSON_GetArraySize(arg) == 2 && cJSON_IsNumber(cJSON_GetArrayItem(arg, 0)) &&
            cJSON_IsNumber(cJSON_GetArrayItem(arg, 1))) {
            double lo = cJSON_GetArrayItem(arg, 0)->valuedouble;
            double hi = cJSON_GetArrayItem(arg, 1)->valuedouble;
            double u = load_rand01(view->rng);
            value = strcmp(key, "$int") == 0 ? floor(lo + u * (floor(hi) - lo + 1))
                                             : lo + u * (hi - lo);
        } else if (strcmp(key, "$choice") == 0 && cJSON_GetArraySize(arg) > 0) {
            int n = cJSON_GetArraySize(arg);
            int pick = (int)(load_rand01(view->rng) * n);
            cJSON* chosen = cJSON_Duplicate(cJSON_GetArrayItem(arg, pick < n ? pick : n - 1), true);
            if (chosen == NULL || !resolve(chosen, view, world, despawn)) {
                cJSON_Delete(chosen);
                return false;
            }
            // Become the chosen value: swap contents, keep our place in the parent.
            cJSON* old_child = v->child;
            v->child = NULL;
            cJSON_Delete(old_child);
            cJSON tmp = *chosen;
            tmp.next = v->next;
            tmp.prev = v->prev;
            tmp.string = v->string;
            *v = tmp;
            chosen->child = NULL;
            chosen->valuestring = NULL;
            chosen->type = cJSON_NULL;
            cJSON_Delete(chosen);
            return true;
        } else {
            return true; // not a placeholder we know: sent as it is
        }
        cJSON_Delete(v->child);
        v->child = NULL;
        v->type = cJSON_Number;
        cJSON_SetNumberValue(v, value);
        return true;
    }
    cJSON* child;
    cJSON_ArrayForEach(child, v) {
        if (!resolve(child, view, world, despawn)) {
            return false;
        }
    }
    return true;
}

cJSON* load_command_build(const load_mix* m, const load_view* v) {
    cJSON* cmd = cJSON_Duplicate(m->command, true);
    if (cmd == NULL) {
        return NULL;
    }
    bool despawn = strcmp(m->op, "despawn") == 0;
    if (!resolve(cmd, v, world_of(cmd), despawn)) {
        cJSON_Delete(cmd);
        return NULL;
    }
    return cmd;
}
