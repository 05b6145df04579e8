/*
 * query.c: typed helpers for questions to a world: raycast, and reading its
 * reply (PROTOCOL.md §3). The command goes out through rdc_send() like any
 * other; only building it and reading the reply are done here.
 */
#include "rdc.h"

#include <cJSON.h>

#include <math.h>
#include <stdint.h>
#include <string.h>

#define MAX_SAFE 9007199254740991.0

static bool finite3(const double* v) {
    return v != NULL && isfinite(v[0]) && isfinite(v[1]) && isfinite(v[2]);
}

int rdc_raycast(rdc_client* c, uint64_t world, const double origin[3], const double direction[3],
                double max_distance, uint64_t seen_tick, rdc_reply_cb cb, void* arg) {
    if (world == 0 || (double)world > MAX_SAFE || !finite3(origin) || !finite3(direction) ||
        !isfinite(max_distance) || (seen_tick != RDC_NOW && (double)seen_tick > MAX_SAFE)) {
        return RDC_E_CONFIG;
    }
    cJSON* cmd = cJSON_CreateObject();
    if (cmd == NULL) {
        return RDC_E_BAD_COMMAND;
    }
    cJSON_AddStringToObject(cmd, "op", "raycast");
    cJSON_AddNumberToObject(cmd, "world", (double)world);
    cJSON_AddItemToObject(cmd, "origin", cJSON_CreateDoubleArray(origin, 3));
    cJSON_AddItemToObject(cmd, "direction", cJSON_CreateDoubleArray(direction, 3));
    if (max_distance != 0.0) {
        cJSON_AddNumberToObject(cmd, "max_distance", max_distance);
    }
    if (seen_tick != RDC_NOW) {
        cJSON_AddNumberToObject(cmd, "seen_tick", (double)seen_tick);
    }
    int rc = rdc_send(c, cmd, cb, arg, NULL);
    cJSON_Delete(cmd);
    return rc;
}

// [x, y, z] of numbers into out.
static bool vec3_of(const cJSON* a, double out[3]) {
    if (!cJSON_IsArray(a) || cJSON_GetArraySize(a) != 3) {
        return false;
    }
    for (int i = 0; i < 3; ++i) {
        const cJSON* x = cJSON_GetArrayItem(a, i);
        if (!cJSON_IsNumber(x)) {
            return false;
        }
        out[i] = x->valuedouble;
    }
    return true;
}

static bool copy_string(const cJSON* s, char* out, size_t cap) {
    if (!cJSON_IsString(s) || strlen(s->valuestring) >= cap) {
        return false;
    }
    memcpy(out, s->valuestring, strlen(s->valuestring) + 1);
    return true;
}

int rdc_hit_parse(const rdc_reply* r, rdc_hit* out) {
    if (r == NULL || out == NULL) {
        return RDC_E_CONFIG;
    }
    memset(out, 0, sizeof *out);
    out->index = -1;
    if (r->status != 0) {
        return r->status;
    }
    out->tick = r->tick;
    const cJSON* seen = cJSON_GetObjectItemCaseSensitive(r->json, "seen_tick");
    if (cJSON_IsNumber(seen)) {
        out->has_seen_tick = true;
        out->seen_tick = (uint64_t)seen->valuedouble;
        out->clamped = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r->json, "clamped"));
    }
    const cJSON* hit = cJSON_GetObjectItemCaseSensitive(r->json, "hit");
    if (cJSON_IsNull(hit)) {
        return 0;
    }
    if (!cJSON_IsObject(hit) ||
        !copy_string(cJSON_GetObjectItemCaseSensitive(hit, "kind"), out->kind, sizeof out->kind) ||
        !vec3_of(cJSON_GetObjectItemCaseSensitive(hit, "point"), out->point) ||
        !vec3_of(cJSON_GetObjectItemCaseSensitive(hit, "normal"), out->normal) ||
        !cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(hit, "distance"))) {
        memset(out, 0, sizeof *out);
        out->index = -1;
        return RDC_E_PROTOCOL;
    }
    out->hit = true;
    out->distance = cJSON_GetObjectItemCaseSensitive(hit, "distance")->valuedouble;
    const cJSON* e = cJSON_GetObjectItemCaseSensitive(hit, "entity");
    out->entity = cJSON_IsNumber(e) ? (uint64_t)e->valuedouble : 0;
    (void)copy_string(cJSON_GetObjectItemCaseSensitive(hit, "bone"), out->bone, sizeof out->bone);
    const cJSON* i = cJSON_GetObjectItemCaseSensitive(hit, "particle");
    i = i != NULL ? i : cJSON_GetObjectItemCaseSensitive(hit, "box");
    out->index = cJSON_IsNumber(i) ? (int64_t)i->valuedouble : -1;
    return 0;
}
