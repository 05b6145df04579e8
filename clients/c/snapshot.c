/*
 * snapshot.c: decoding snapshots (PROTOCOL.md §5) into rdc_snapshot's plain
 * arrays: JSON (§5.1) and binary version 2 (§5.2, quantized and
 * delta-coded against the snapshot the client acknowledged; decoded by
 * protocol/'s rdp_decode()).
 *
 * Everything goes through rdc__decode_snapshot(), the one entry point. Per
 * world it keeps an rdp_decoder (the last RDP_BASELINES decoded frames, the
 * baselines deltas refer to), the newest full tick (ticks travel as their
 * low 16 bits), whether a resync is out, the latest metrics event, and the
 * bone names of the characters it has met (binary frames carry no names;
 * client.c sends the `describe`s and the acks this file asks for through
 * rdc__ack).
 *
 * It owns the scratch arrays and what it keeps per world; it does not own
 * the message or the parsed JSON (client.c's).
 */
#include "rdc_internal.h"
#include "rdp.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

_Static_assert(RDC_KIND_ROPE == (int)RDP_KIND_ROPE && RDC_KIND_CLOTH == (int)RDP_KIND_CLOTH &&
                   RDC_KIND_RAGDOLL == (int)RDP_KIND_RAGDOLL &&
                   RDC_KIND_CHARACTER == (int)RDP_KIND_CHARACTER &&
                   RDC_KIND_BALL == (int)RDP_KIND_BALL &&
                   RDC_KIND_SOFTBODY == (int)RDP_KIND_SOFTBODY,
               "rdc kinds are the wire codes");

static const char* const kind_names[] = {NULL,        "rope", "cloth",   "ragdoll",
                                         "character", "ball", "softbody"};
static const char* const state_names[] = {"animated", "ragdoll", "getting_up", "partial"};

const char* rdc_kind_name(rdc_kind kind) {
    return kind >= RDC_KIND_ROPE && kind <= RDC_KIND_SOFTBODY ? kind_names[kind] : "unknown";
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

// ---------------------------------------------------------------------------
// Per world
// ---------------------------------------------------------------------------

static void names_clear(rdc__world* w) {
    for (uint32_t i = 0; i < w->names_count; ++i) {
        free(w->names[i].names);
    }
    free(w->names);
    w->names = NULL;
    w->names_count = w->names_cap = 0;
}

static void world_clear(rdc__world* w) {
    rdp_decoder_free(w->dec);
    names_clear(w);
    memset(w, 0, sizeof *w);
}

static rdc__world* world_find(rdc__decoder* d, uint64_t world) {
    for (int i = 0; i < RDC__MAX_WORLDS; ++i) {
        if (d->worlds[i].world == world) {
            return &d->worlds[i];
        }
    }
    return NULL;
}

// The slot of a world, taken when it has none. NULL when every slot is in
// use (more worlds than subscriptions: someone subscribed behind rdc's back)
// and for world 0, which is no world (ids are 1-based) and marks free slots:
// a frame for it would otherwise be decoded into a free slot and leave its
// baselines and names to the next world that takes the slot.
static rdc__world* world_get(rdc__decoder* d, uint64_t world) {
    if (world == 0) {
        return NULL;
    }
    rdc__world* w = world_find(d, world);
    if (w == NULL && (w = world_find(d, 0)) != NULL) {
        w->world = world;
    }
    return w;
}

void rdc__decoder_start_world(rdc__decoder* d, uint64_t world, uint64_t tick) {
    rdc__world* w = world_get(d, world);
    if (w == NULL) {
        return;
    }
    // The server starts a (re)subscription with a full frame: old baselines
    // are of no use, and names stay valid (ids are never reused).
    rdp_decoder_free(w->dec);
    w->dec = NULL;
    w->last_tick = tick;
    w->resync_sent = false;
    w->failed = 0;
}

// Forgets a world now, or at the release when a snapshot is out.
static void world_forget(rdc__decoder* d, rdc__world* w) {
    if (d->held) {
        w->forget_owed = true;
    } else {
        world_clear(w);
    }
}

void rdc__decoder_forget_world(rdc__decoder* d, uint64_t world) {
    rdc__world* w = world_find(d, world);
    if (w != NULL && world != 0) {
        world_forget(d, w);
    }
}

void rdc__decoder_reset(rdc__decoder* d) {
    for (int i = 0; i < RDC__MAX_WORLDS; ++i) {
        world_forget(d, &d->worlds[i]);
    }
}

void rdc__decoder_hold(rdc__decoder* d) {
    d->held = true;
}

void rdc__decoder_release(rdc__decoder* d) {
    d->held = false;
    for (int i = 0; i < RDC__MAX_WORLDS; ++i) {
        if (d->worlds[i].forget_owed) {
            world_clear(&d->worlds[i]);
        }
    }
}

void rdc__decoder_free(rdc__decoder* d) {
    d->held = false;
    rdc__decoder_reset(d);
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
    for (int k = RDC_KIND_ROPE; s != NULL && k <= RDC_KIND_SOFTBODY; ++k) {
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

static bool metrics_read(const cJSON* m, rdc_metrics* out);

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
        x->tick = out->tick;
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
            // The first pass made room for the bones of an array only, and
            // cJSON_ArrayForEach would walk an object's members all the same.
            if (!cJSON_IsArray(bones)) {
                return RDC_E_PROTOCOL;
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
    out->decoded = true;
    out->has_metrics =
        metrics_read(cJSON_GetObjectItemCaseSensitive(json, "metrics"), &out->metrics);
    out->entity_count = n;
    out->entities = d->ents;
    out->json = json;
    return 0;
}

// ---------------------------------------------------------------------------
// Metrics
// ---------------------------------------------------------------------------

static double json_num(const cJSON* o, const char* key) {
    const cJSON* v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) && isfinite(v->valuedouble) ? v->valuedouble : 0;
}

static uint32_t json_count(const cJSON* o, const char* key) {
    double v = json_num(o, key);
    return v > 0 && v < 4294967296.0 ? (uint32_t)v : 0;
}

// Reads a "metrics" object (PROTOCOL.md §5.1). False when there is none.
static bool metrics_read(const cJSON* m, rdc_metrics* out) {
    if (!cJSON_IsObject(m)) {
        return false;
    }
    out->constraint_error = json_num(m, "constraint_error");
    out->sticks = json_count(m, "sticks");
    out->solver_passes = json_count(m, "solver_passes");
    out->particles = json_count(m, "particles");
    out->entities = json_count(m, "entities");
    out->step_ms = json_num(m, "step_ms");
    double o = json_num(m, "overruns");
    out->overruns = o > 0 && o <= RDP_MAX_SAFE_INTEGER ? (uint64_t)o : 0;
    return true;
}

void rdc__decoder_metrics(rdc__decoder* d, const cJSON* ev) {
    uint64_t world;
    rdc__world* w;
    rdc_metrics m;
    memset(&m, 0, sizeof m);
    if (json_u64(ev, "world", &world) && (w = world_find(d, world)) != NULL && world != 0 &&
        metrics_read(cJSON_GetObjectItemCaseSensitive(ev, "metrics"), &m)) {
        w->metrics = m;
        w->has_metrics = true;
    }
}

// ---------------------------------------------------------------------------
// Bone names of characters in binary snapshots (from describe replies)
// ---------------------------------------------------------------------------

static rdc__names* names_find(rdc__world* w, uint64_t id) {
    for (uint32_t i = 0; i < w->names_count; ++i) {
        if (w->names[i].id == id) {
            return &w->names[i];
        }
    }
    return NULL;
}

static rdc__names* names_add(rdc__world* w, uint64_t id) {
    if (w->names_count == w->names_cap) {
        uint32_t cap = w->names_cap == 0 ? 8 : 2 * w->names_cap;
        rdc__names* grown = realloc(w->names, cap * sizeof *grown);
        if (grown == NULL) {
            return NULL;
        }
        w->names = grown;
        w->names_cap = cap;
    }
    rdc__names* n = &w->names[w->names_count++];
    memset(n, 0, sizeof *n);
    n->id = id;
    return n;
}

static void names_remove(rdc__world* w, rdc__names* n) {
    free(n->names);
    *n = w->names[--w->names_count];
}

void rdc__decoder_names(rdc__decoder* d, uint64_t world, uint64_t id, const cJSON* json) {
    rdc__world* w = world != 0 ? world_find(d, world) : NULL;
    rdc__names* n = w != NULL ? names_find(w, id) : NULL;
    if (n == NULL || !n->pending) {
        return; // forgotten meanwhile (unsubscribed, reconnected, despawned)
    }
    const cJSON* bones = json != NULL ? cJSON_GetObjectItemCaseSensitive(json, "bones") : NULL;
    int count = cJSON_IsArray(bones) ? cJSON_GetArraySize(bones) : 0;
    size_t bytes = 0;
    const cJSON* b;
    cJSON_ArrayForEach(b, bones) {
        const char* name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(b, "name"));
        if (name == NULL) {
            count = 0;
            break;
        }
        bytes += strlen(name) + 1;
    }
    const char** block = count > 0 ? malloc((size_t)count * sizeof(char*) + bytes) : NULL;
    if (block == NULL) {
        names_remove(w, n); // asked again at the entity's next snapshot
        return;
    }
    char* text = (char*)(block + count);
    int i = 0;
    cJSON_ArrayForEach(b, bones) {
        const char* name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(b, "name"));
        size_t len = strlen(name) + 1;
        memcpy(text, name, len);
        block[i++] = text;
        text += len;
    }
    n->pending = false;
    n->count = (uint32_t)count;
    n->names = block;
}

// Sets the bone names of the characters of a binary snapshot, asks for
// those not known yet, and forgets those of characters that are gone.
static void names_apply(rdc__world* w, rdc_snapshot* out, rdc_entity* ents, bool describe,
                        rdc__ack* ack) {
    for (uint32_t i = 0; i < out->entity_count; ++i) {
        rdc_entity* e = &ents[i];
        if (e->kind != RDC_KIND_CHARACTER) {
            continue;
        }
        rdc__names* n = names_find(w, e->id);
        if (n != NULL && !n->pending && n->count == e->count) {
            e->bone_names = n->names;
        } else if (n == NULL && describe && ack->describe_count < RDC__MAX_DESCRIBE &&
                   (n = names_add(w, e->id)) != NULL) {
            n->pending = true;
            ack->describe[ack->describe_count++] = e->id;
        }
    }
    // Gone from the world: forget (ids are never reused, so this only
    // bounds the memory). A pending one waits for its reply.
    for (uint32_t k = 0; k < w->names_count;) {
        rdc__names* n = &w->names[k];
        bool seen = n->pending;
        for (uint32_t i = 0; i < out->entity_count && !seen; ++i) {
            seen = ents[i].id == n->id;
        }
        if (seen) {
            k++;
        } else {
            names_remove(w, n);
        }
    }
}

// ---------------------------------------------------------------------------
// Binary, version 2 (PROTOCOL.md §5.2)
// ---------------------------------------------------------------------------

bool rdc__binary_peek(const uint8_t* data, size_t len, uint64_t* world, uint16_t* tick16,
                      bool* delta) {
    static const uint8_t magic[4] = {'R', 'D', 'S', '2'};
    if (data == NULL || len < 8 || memcmp(data, magic, 4) != 0 || data[4] != RDP_SNAPSHOT_VERSION) {
        return false;
    }
    *delta = (data[5] & 1u) != 0;
    *tick16 = (uint16_t)(data[6] | data[7] << 8);
    size_t head = *delta ? 10 : 8;
    // The world is the stream's first code, ue(0): L − 1 zero bits, then
    // world + 1 in L bits from the most significant; bits are taken from
    // each byte least significant first.
    size_t bit = 0, nbits = (len > head ? len - head : 0) * 8;
    const uint8_t* p = data + head;
    unsigned zeros = 0;
    while (bit < nbits && ((p[bit >> 3] >> (bit & 7)) & 1u) == 0) {
        bit++;
        if (++zeros > 40) {
            return false;
        }
    }
    if (bit + 1 + zeros > nbits) {
        return false;
    }
    uint64_t m = 1;
    bit++;
    for (unsigned i = 0; i < zeros; ++i, ++bit) {
        m = (m << 1) | ((p[bit >> 3] >> (bit & 7)) & 1u);
    }
    *world = m - 1;
    return true;
}

static int decode_binary(rdc__decoder* d, const uint8_t* data, size_t len, bool decode,
                         bool describe, rdc_snapshot* out, rdc__ack* ack) {
    uint64_t world;
    uint16_t tick16;
    bool delta;
    if (!rdc__binary_peek(data, len, &world, &tick16, &delta)) {
        return RDC_E_PROTOCOL;
    }
    rdc__world* w = world_get(d, world);
    if (w == NULL) {
        return RDC_E_PROTOCOL;
    }
    out->world = world;
    out->format = RDC_FORMAT_BINARY;
    out->delta = delta;
    out->data = data;
    out->has_metrics = w->has_metrics;
    out->metrics = w->metrics;
    uint64_t tick = rdp_tick_unwrap(w->last_tick, tick16);
    if (!decode) {
        out->tick = tick;
        w->last_tick = tick > w->last_tick ? tick : w->last_tick;
        return 0;
    }
    if (w->dec == NULL && (w->dec = rdp_decoder_new()) == NULL) {
        return UV_ENOMEM;
    }
    const rdp_qsnap* q = NULL;
    rdp_code rc = rdp_decode(w->dec, data, len, &q);
    if (rc != RDP_OK) {
        // A delta against a baseline we lack, or a frame we cannot read:
        // ask for a full one, once per gap (the frames already on their way
        // fail too). Should the resync go unanswered, ask again after a
        // while rather than never.
        if (rc == RDP_E_INTERNAL) {
            return UV_ENOMEM;
        }
        if (!w->resync_sent || ++w->failed >= 64) {
            w->resync_sent = true;
            w->failed = 0;
            ack->resync = true;
            ack->world = world;
        }
        return RDC_E_PROTOCOL;
    }
    w->resync_sent = false;
    w->failed = 0;
    if (!reserve(d, q->entity_count, 0, 0)) {
        return UV_ENOMEM;
    }
    uint32_t n = 0;
    for (uint32_t i = 0; i < q->entity_count; ++i) {
        const rdp_qentity* qe = &q->ents[i];
        if (qe->kind < RDP_KIND_ROPE || qe->kind > RDP_KIND_SOFTBODY) {
            continue; // a kind this client does not know
        }
        rdc_entity* x = &d->ents[n++];
        memset(x, 0, sizeof *x);
        x->id = qe->id;
        x->kind = (rdc_kind)qe->kind;
        x->count = qe->count;
        x->tick = rdp_tick_unwrap(tick, qe->tick);
        // The floats are the decoder's own (valid for RDP_BASELINES more
        // decodes): no copy.
        if (is_rigid(x->kind)) {
            x->state = x->kind == RDC_KIND_CHARACTER && qe->state < 4 ? (rdc_char_state)qe->state
                                                                      : RDC_CHAR_ANIMATED;
            x->pose = q->f + qe->offset;
        } else {
            x->xyz = q->f + qe->offset;
        }
    }
    out->tick = tick;
    out->partial = q->partial;
    out->entity_count = n;
    out->entities = d->ents;
    out->decoded = true;
    names_apply(w, out, d->ents, describe, ack);
    if (tick > w->last_tick) {
        w->last_tick = tick;
    }
    ack->wanted = true;
    ack->world = world;
    ack->tick = tick;
    return 0;
}

// ---------------------------------------------------------------------------
// The entry point
// ---------------------------------------------------------------------------

int rdc__decode_snapshot(rdc__decoder* d, const uint8_t* data, size_t len, bool binary, bool decode,
                         bool describe, const cJSON* json, rdc_snapshot* out, rdc__ack* ack) {
    memset(out, 0, sizeof *out);
    memset(ack, 0, sizeof *ack);
    int rc;
    if (binary) {
        rc = decode_binary(d, data, len, decode, describe, out, ack);
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
                ack->wanted = false;
                return RDC_E_PROTOCOL;
            }
        }
    }
    out->bytes = len;
    return 0;
}
