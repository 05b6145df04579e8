/*
 * snapshot.c: decoding snapshots (PROTOCOL.md §5) into rdc_snapshot's plain
 * arrays, JSON (§5.1) and binary version 1 (§5.2, read with protocol/'s
 * rdp_bin_* reader).
 *
 * Everything goes through rdc__decode_snapshot(), the one entry point, so
 * that the coming binary version 2 (quantized, delta-coded against the
 * snapshot the client acknowledged) is a change in this file: its decoder
 * keeps baselines in rdc__decoder, and asks for `ack {world, tick}` through
 * rdc__ack, which client.c sends. Version 1 never asks.
 *
 * It owns the scratch arrays the decoded snapshot points into; it does not
 * own the message or the parsed JSON (client.c's).
 */
#include "rdc_internal.h"
#include "rdp.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

_Static_assert(RDC_KIND_ROPE == (int)RDP_KIND_ROPE && RDC_KIND_CLOTH == (int)RDP_KIND_CLOTH &&
                   RDC_KIND_RAGDOLL == (int)RDP_KIND_RAGDOLL &&
                   RDC_KIND_CHARACTER == (int)RDP_KIND_CHARACTER &&
                   RDC_KIND_BALL == (int)RDP_KIND_BALL,
               "rdc kinds are the wire codes");

static const char* const kind_names[] = {NULL, "rope", "cloth", "ragdoll", "character", "ball"};
static const char* const state_names[] = {"animated", "ragdoll", "getting_up", "partial"};

const char* rdc_kind_name(rdc_kind kind) {
    return kind >= RDC_KIND_ROPE && kind <= RDC_KIND_BALL ? kind_names[kind] : "unknown";
}

const char* rdc_char_state_name(rdc_char_state state) {
    return (unsigned)state < 4 ? state_names[state] : "unknown";
}

static bool is_rigid(rdc_kind k) {
    return k == RDC_KIND_CHARACTER || k == RDC_KIND_BALL;
}

const rdc_entity* rdc_snapshot_find(const rdc_snapshot* s, uint64_t id) {
    for (uint32_t i = 0; s != NULL && i < s->entity_count; ++i) {
        if (s->entities[i].id == id) {
            return &s->entities[i];
        }
    }
    return NULL;
}

int rdc_entity_bone(const rdc_entity* e, const char* name) {
    if (e == NULL || e->bone_names == NULL || name == NULL) {
        return -1;
    }
    for (uint32_t i = 0; i < e->count; ++i) {
        if (strcmp(e->bone_names[i], name) == 0) {
            return (int)i;
        }
    }
    return -1;
}

// ---------------------------------------------------------------------------
// Scratch
// ---------------------------------------------------------------------------

// Makes room for n entities, f floats and k names. False when out of memory.
static bool reserve(rdc__decoder* d, uint32_t n, size_t f, size_t k) {
    if (n > d->ents_cap) {
        rdc_entity* e = realloc(d->ents, (size_t)n * sizeof *e);
        if (e == NULL) {
            return false;
        }
        d->ents = e;
        d->ents_cap = n;
    }
    if (f > d->floats_cap) {
        float* p = realloc(d->floats, f * sizeof *p);
        if (p == NULL) {
            return false;
        }
        d->floats = p;
        d->floats_cap = f;
    }
    if (k > d->names_cap) {
        const char** p = realloc(d->names, k * sizeof *p);
        if (p == NULL) {
            return false;
        }
        d->names = p;
        d->names_cap = k;
    }
    return true;
}

void rdc__decoder_forget_world(rdc__decoder* d, uint64_t world) {
    // Version 1 snapshots are complete: there is no baseline to forget.
    (void)d;
    (void)world;
}

void rdc__decoder_reset(rdc__decoder* d) {
    (void)d;
}

void rdc__decoder_free(rdc__decoder* d) {
    free(d->ents);
    free(d->floats);
    free(d->names);
    memset(d, 0, sizeof *d);
}

// ---------------------------------------------------------------------------
// JSON (PROTOCOL.md §5.1)
// ---------------------------------------------------------------------------

static bool json_u64(const cJSON* o, const char* key, uint64_t* out) {
    const cJSON* v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!cJSON_IsNumber(v) || !(v->valuedouble >= 0) || v->valuedouble > RDP_MAX_SAFE_INTEGER) {
        return false;
    }
    *out = (uint64_t)v->valuedouble;
    return true;
}

static rdc_kind kind_of(const char* s) {
    for (int k = RDC_KIND_ROPE; s != NULL && k <= RDC_KIND_BALL; ++k) {
        if (strcmp(s, kind_names[k]) == 0) {
            return (rdc_kind)k;
        }
    }
    return (rdc_kind)0;
}

// Reads an array of exactly n numbers into out. False when it is not one.
static bool json_floats(const cJSON* a, int n, float* out) {
    if (!cJSON_IsArray(a) || cJSON_GetArraySize(a) != n) {
        return false;
    }
    int i = 0;
    const cJSON* v;
    cJSON_ArrayForEach(v, a) {
        if (!cJSON_IsNumber(v)) {
            return false;
        }
        out[i++] = (float)v->valuedouble;
    }
    return true;
}

// The bodies of a rigid entity: a character's "bones", or a ball's own "p"
// and "q" (one body, the entity itself).
static uint32_t json_body_count(const cJSON* e, rdc_kind kind, const cJSON** bones) {
    if (kind == RDC_KIND_BALL) {
        *bones = NULL;
        return 1;
    }
    *bones = cJSON_GetObjectItemCaseSensitive(e, "bones");
    return cJSON_IsArray(*bones) ? (uint32_t)cJSON_GetArraySize(*bones) : 0;
}

static int decode_json(rdc__decoder* d, const cJSON* json, rdc_snapshot* out) {
    const cJSON* ents = cJSON_GetObjectItemCaseSensitive(json, "entities");
    if (!json_u64(json, "world", &out->world) || !json_u64(json, "tick", &out->tick) ||
        !cJSON_IsArray(ents)) {
        return RDC_E_PROTOCOL;
    }
    // First pass: how much room the arrays need.
    uint32_t n = 0;
    size_t nf = 0, nn = 0;
    const cJSON* e;
    cJSON_ArrayForEach(e, ents) {
        const cJSON* kind = cJSON_GetObjectItemCaseSensitive(e, "kind");
        rdc_kind k = kind_of(cJSON_GetStringValue(kind));
        if (k == 0) {
            continue; // a kind this client does not know: skipped
        }
        n++;
        if (is_rigid(k)) {
            const cJSON* bones;
            uint32_t bc = json_body_count(e, k, &bones);
            nf += 7u * (size_t)bc;
            nn += k == RDC_KIND_CHARACTER ? bc : 0;
        } else {
            const cJSON* p = cJSON_GetObjectItemCaseSensitive(e, "particles");
            nf += cJSON_IsArray(p) ? 3u * (size_t)cJSON_GetArraySize(p) : 0;
        }
    }
    if (!reserve(d, n, nf, nn)) {
        return UV_ENOMEM;
    }
    // Second pass: fill them.
    uint32_t i = 0;
    size_t fi = 0, ni = 0;
    cJSON_ArrayForEach(e, ents) {
        rdc_kind k = kind_of(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "kind")));
        if (k == 0) {
            continue;
        }
        rdc_entity* x = &d->ents[i++];
        memset(x, 0, sizeof *x);
        x->kind = k;
        if (!json_u64(e, "entity", &x->id)) {
            return RDC_E_PROTOCOL;
        }
        if (is_rigid(k)) {
            const cJSON* bones;
            x->count = json_body_count(e, k, &bones);
            x->pose = d->floats + fi;
            if (k == RDC_KIND_BALL) {
                if (!json_floats(cJSON_GetObjectItemCaseSensitive(e, "p"), 3, d->floats + fi) ||
                    !json_floats(cJSON_GetObjectItemCaseSensitive(e, "q"), 4, d->floats + fi + 3)) {
                    return RDC_E_PROTOCOL;
                }
                fi += 7;
                continue;
            }
            x->state = (rdc_char_state)rdp_state_code(
                cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "state")));
            x->bone_names = d->names + ni;
            const cJSON* b;
            cJSON_ArrayForEach(b, bones) {
                const char* name =
                    cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(b, "name"));
                if (name == NULL ||
                    !json_floats(cJSON_GetObjectItemCaseSensitive(b, "p"), 3, d->floats + fi) ||
                    !json_floats(cJSON_GetObjectItemCaseSensitive(b, "q"), 4, d->floats + fi + 3)) {
                    return RDC_E_PROTOCOL;
                }
                d->names[ni++] = name;
                fi += 7;
            }
        } else {
            const cJSON* parts = cJSON_GetObjectItemCaseSensitive(e, "particles");
            if (!cJSON_IsArray(parts)) {
                return RDC_E_PROTOCOL;
            }
            x->count = (uint32_t)cJSON_GetArraySize(parts);
            x->xyz = d->floats + fi;
            const cJSON* p;
            cJSON_ArrayForEach(p, parts) {
                if (!json_floats(p, 3, d->floats + fi)) {
                    return RDC_E_PROTOCOL;
                }
                fi += 3;
            }
        }
    }
    out->format = RDC_FORMAT_JSON;
    out->entity_count = n;
    out->entities = d->ents;
    out->json = json;
    return 0;
}

// ---------------------------------------------------------------------------
// Binary, version 1 (PROTOCOL.md §5.2)
// ---------------------------------------------------------------------------

static int decode_binary_v1(rdc__decoder* d, const uint8_t* data, size_t len, rdc_snapshot* out) {
    rdp_bin_header hdr;
    rdp_bin_reader rd;
    if (rdp_bin_parse(data, len, &hdr, &rd) != RDP_OK || hdr.baseline != RDP_BIN_NO_BASELINE) {
        return RDC_E_PROTOCOL;
    }
    // First pass: validates the layout and sizes the arrays.
    rdp_bin_reader first = rd;
    rdp_bin_entity be;
    uint32_t n = 0;
    size_t nf = 0;
    int r;
    while ((r = rdp_bin_next(&first, &be)) == 1) {
        if (be.kind < RDP_KIND_ROPE || be.kind > RDP_KIND_BALL) {
            continue;
        }
        n++;
        nf += (is_rigid((rdc_kind)be.kind) ? 7u : 3u) * (size_t)be.particle_count;
    }
    if (r < 0) {
        return RDC_E_PROTOCOL;
    }
    if (!reserve(d, n, nf, 0)) {
        return UV_ENOMEM;
    }
    uint32_t i = 0;
    size_t fi = 0;
    while (rdp_bin_next(&rd, &be) == 1) {
        if (be.kind < RDP_KIND_ROPE || be.kind > RDP_KIND_BALL) {
            continue;
        }
        rdc_entity* x = &d->ents[i++];
        memset(x, 0, sizeof *x);
        x->id = be.entity;
        x->kind = (rdc_kind)be.kind;
        x->count = be.particle_count;
        if (is_rigid(x->kind)) {
            x->state = x->kind == RDC_KIND_CHARACTER && be.state < 4 ? (rdc_char_state)be.state
                                                                     : RDC_CHAR_ANIMATED;
            x->pose = d->floats + fi;
            for (uint32_t b = 0; b < be.particle_count; ++b, fi += 7) {
                rdp_bin_entity_pose(&be, b, d->floats + fi);
            }
        } else {
            x->xyz = d->floats + fi;
            for (uint32_t p = 0; p < be.particle_count; ++p, fi += 3) {
                rdp_bin_entity_position(&be, p, d->floats + fi);
            }
        }
    }
    out->world = hdr.world;
    out->tick = hdr.tick;
    out->format = RDC_FORMAT_BINARY;
    out->entity_count = n;
    out->entities = d->ents;
    out->json = NULL;
    return 0;
}

// ---------------------------------------------------------------------------
// The entry point
// ---------------------------------------------------------------------------

int rdc__decode_snapshot(rdc__decoder* d, const uint8_t* data, size_t len, bool binary,
                         const cJSON* json, rdc_snapshot* out, rdc__ack* ack) {
    memset(out, 0, sizeof *out);
    memset(ack, 0, sizeof *ack);
    out->bytes = len;
    int rc;
    if (binary) {
        // The version sits at the same offset in every version's header;
        // version 2 gets its own decoder (and asks for acks) here.
        if (len < 6 || (data[4] | (data[5] << 8)) != 1) {
            return RDC_E_PROTOCOL;
        }
        rc = decode_binary_v1(d, data, len, out);
    } else {
        rc = decode_json(d, json, out);
    }
    if (rc != 0) {
        return rc;
    }
    // Positions that are not finite would poison whatever the caller builds
    // on them; the server never sends them (it removes unstable entities).
    for (uint32_t i = 0; i < out->entity_count; ++i) {
        const rdc_entity* e = &out->entities[i];
        const float* f = e->xyz != NULL ? e->xyz : e->pose;
        size_t nf = (e->xyz != NULL ? 3u : 7u) * (size_t)e->count;
        for (size_t k = 0; f != NULL && k < nf; ++k) {
            if (!isfinite(f[k])) {
                return RDC_E_PROTOCOL;
            }
        }
    }
    out->bytes = len;
    return 0;
}
