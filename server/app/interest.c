/*
 * interest.c: interest management (PROTOCOL.md §5.2 "Partial frames", §5.3).
 * A binary subscription with a byte budget gets, at each due snapshot, a
 * frame of its own: the entities that matter most to it now, each coded
 * against the state that client last acknowledged of it, as many as the
 * budget has room for.
 *
 * - Priority accumulator (Gaffer on Games, "State Synchronization", 2015):
 *   every entity gains priority at a rate set by its distance to the
 *   subscription's focus and by how far it moved since the client last got
 *   it; a frame takes them highest first, and one taken starts from 0.
 *   Entities not sent for a second go first, so every entity is refreshed
 *   at least once a second while the budget allows. (Capping refreshes at
 *   half a frame was tried: with 200 tumbling ragdolls on 20 kB/s both the
 *   nearest and the refreshes came less often, the refreshes' deltas
 *   against older baselines being larger.)
 * - Bandwidth: a token bucket filled at bytes_per_s, at most one frame's
 *   share, and a one-second window of what was sent; a frame holds what
 *   fits in both.
 * - Per-entity baselines: the server remembers which entities each frame it
 *   sent carried (the last RDP_BASELINES frames); the client's ack of a
 *   frame makes that frame the baseline of each of them (a copy of the
 *   entity's state: the world keeps 32 snapshots, and an entity may be
 *   sent less often). An entity the
 *   world lost is announced as a removal until a frame carrying it is
 *   acknowledged.
 *
 * Frames build on each other, so one is never replaced in the session's
 * queue by a newer one: a frame is made only when the last has gone out.
 *
 * Cost: a frame is made for each client, but an entity's encoding against
 * a baseline is made once a tick and shared by every frame that carries it
 * against that baseline (clients acknowledging at the same rate share most
 * of them), and only the entities a frame takes are ranked out of a heap.
 */
#include "app_internal.h"
#include "report.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/// Seconds without being sent after which an entity goes before all others.
#define REFRESH_S 1.0
/// Removals a client may have pending, at most; past what its budget allows
/// (interest_frame) its view is reset instead.
#define MAX_REMOVALS 128
/// Rank of an entity due a refresh (plus its age), above any priority.
#define OVERDUE 1e12
/// Frames' worth of bytes the bucket holds.
#define BUCKET_FRAMES 1.0
/// What was sent in the last second is remembered in this many entries (a
/// frame or a metrics event each; at most 240 frames a second).
#define WINDOW_SENDS 512
/// After the first entity that does not fit, how many more are tried (a
/// smaller one may), before the frame is closed.
#define MORE_TRIES 4

/// One entity as the subscription's client has it.
typedef struct app_seen {
    uint64_t id; ///< 0: the slot is unused.
    // Its baseline: the state the client acknowledged, copied (the world
    // keeps 32 snapshots; an entity sent less often outlives them). The
    // buffer is kept when the row is cleared.
    uint64_t btick;     ///< Tick of the baseline, UINT64_MAX: none.
    uint64_t bseq;      ///< Sequence number of the frame that carried it.
    rdp_qentity bent;   ///< Its kind, state, count and 16-bit tick (offset 0).
    int32_t* bvals;     ///< Its integers.
    uint32_t bvals_cap; ///< Integers bvals holds.
    uint64_t sent_tick; ///< Last frame that carried it, UINT64_MAX: never.
    float sent_at[3];   ///< Its point in that frame, m.
    float priority;
    uint32_t mark; ///< Frame count when last found in the world.
} app_seen;

/// A frame sent, remembered until acknowledged or RDP_BASELINES later.
typedef struct app_sent {
    uint64_t tick; ///< UINT64_MAX: none.
    uint64_t seq;  ///< Frames sent before it.
    const rdp_qsnap* q;
    uint32_t count, cap;
    struct {
        uint64_t id;
        uint32_t k; ///< Its index in q.
    } * ents;
} app_sent;

/// Bytes sent at a tick (a frame, a metrics event).
typedef struct app_send {
    uint64_t tick;
    size_t bytes;
} app_send;

/// An entity's place in a frame's order.
typedef struct app_rank {
    double key;
    uint32_t k; ///< Its index in the quantized snapshot.
} app_rank;

struct app_interest {
    uint32_t bytes_per_s;
    double tokens;
    // What was sent in the last second: no second ever holds more than
    // bytes_per_s (the bucket alone would allow a frame's share more).
    app_send window[WINDOW_SENDS];
    uint32_t window_head, window_count;
    size_t window_bytes;
    bool reset_next; ///< The next frame empties the client's view.
    uint64_t last_tick;
    uint64_t seq;    ///< Frames sent.
    uint32_t frames; ///< Frames made (marks entities found in the world).
    app_seen* seen;  ///< By slot (the entity id's low 32 bits).
    uint32_t seen_cap;
    app_sent sent[RDP_BASELINES];
    uint32_t sent_next;
    // Entities gone from the world that the client may still have: their
    // ids (what each frame carries) and the first frame that carried each
    // (UINT64_MAX: none yet).
    uint64_t* removed_ids;
    uint64_t* removed_since;
    uint32_t removed_count, ids_cap, since_cap;
    app_rank* order; ///< Scratch: the world's entities by priority.
    uint32_t order_cap;
};

// Room for `need` elements of `size` bytes in *p (capacity *cap, doubled).
static bool grow(void** p, uint32_t* cap, uint32_t need, size_t size) {
    if (need <= *cap) {
        return true;
    }
    uint32_t c = *cap < 16 ? 16 : *cap;
    while (c < need) {
        c *= 2;
    }
    void* n = realloc(*p, (size_t)c * size);
    if (n == NULL) {
        return false;
    }
    *p = n;
    *cap = c;
    return true;
}

app_interest* app__interest_new(uint32_t bytes_per_s) {
    app_interest* it = calloc(1, sizeof *it);
    if (it == NULL) {
        return NULL;
    }
    it->bytes_per_s = bytes_per_s;
    for (uint32_t i = 0; i < RDP_BASELINES; ++i) {
        it->sent[i].tick = UINT64_MAX;
    }
    it->reset_next = true;
    it->last_tick = UINT64_MAX;
    return it;
}

// A row for entity `id` (0: unused), keeping its baseline buffer.
static void seen_clear(app_seen* s, uint64_t id) {
    int32_t* keep = s->bvals;
    uint32_t cap = s->bvals_cap;
    memset(s, 0, sizeof *s);
    s->bvals = keep;
    s->bvals_cap = cap;
    s->id = id;
    s->btick = UINT64_MAX;
    s->sent_tick = UINT64_MAX;
}

void app__interest_free(app_interest* it) {
    if (it == NULL) {
        return;
    }
    for (uint32_t i = 0; i < it->seen_cap; ++i) {
        free(it->seen[i].bvals);
    }
    for (uint32_t i = 0; i < RDP_BASELINES; ++i) {
        free(it->sent[i].ents);
    }
    free(it->seen);
    free(it->removed_ids);
    free(it->removed_since);
    free(it->order);
    free(it);
}

// Forgets sends older than a second before `tick`; returns the bytes of
// the rest.
static size_t window_bytes(app_interest* it, uint64_t tick, uint32_t tick_hz) {
    while (it->window_count > 0) {
        uint32_t oldest = (it->window_head + WINDOW_SENDS - it->window_count) % WINDOW_SENDS;
        if (it->window[oldest].tick + tick_hz > tick) {
            break;
        }
        it->window_bytes -= it->window[oldest].bytes;
        it->window_count--;
    }
    return it->window_bytes;
}

static void window_add(app_interest* it, uint64_t tick, size_t bytes) {
    if (it->window_count == WINDOW_SENDS) {
        // Full (cannot be at 240 frames a second): merge into the newest.
        it->window[(it->window_head + WINDOW_SENDS - 1) % WINDOW_SENDS].bytes += bytes;
    } else {
        it->window[it->window_head] = (app_send){tick, bytes};
        it->window_head = (it->window_head + 1) % WINDOW_SENDS;
        it->window_count++;
    }
    it->window_bytes += bytes;
}

void app__interest_reset(app_interest* it) {
    for (uint32_t i = 0; i < it->seen_cap; ++i) {
        seen_clear(&it->seen[i], 0);
    }
    for (uint32_t i = 0; i < RDP_BASELINES; ++i) {
        it->sent[i].tick = UINT64_MAX;
        it->sent[i].count = 0;
    }
    it->removed_count = 0;
    it->reset_next = true;
}

// Entity k of q becomes s's baseline (copied). False on out of memory.
static bool take_baseline(app_seen* s, const rdp_qsnap* q, uint32_t k, uint64_t seq) {
    const rdp_qentity* e = &q->ents[k];
    uint32_t n = (rdp_kind_is_rigid((rdp_kind)e->kind) ? 7u : 3u) * e->count;
    if (!grow((void**)&s->bvals, &s->bvals_cap, n, sizeof *s->bvals)) {
        return false;
    }
    memcpy(s->bvals, q->vals + e->offset, (size_t)n * sizeof *s->bvals);
    s->bent = *e;
    s->bent.offset = 0;
    s->bent.skel = 0;
    s->bent.tick = (uint16_t)q->tick;
    s->btick = q->tick;
    s->bseq = seq;
    return true;
}

void app__interest_ack(app_interest* it, uint64_t tick) {
    for (uint32_t i = 0; i < RDP_BASELINES; ++i) {
        app_sent* f = &it->sent[i];
        if (f->tick != tick || f->q->tick != tick) {
            continue;
        }
        for (uint32_t j = 0; j < f->count; ++j) {
            uint32_t slot = (uint32_t)f->ents[j].id;
            app_seen* s = slot < it->seen_cap ? &it->seen[slot] : NULL;
            if (s != NULL && s->id == f->ents[j].id &&
                (s->btick == UINT64_MAX || s->btick < tick) &&
                !take_baseline(s, f->q, f->ents[j].k, f->seq)) {
                s->btick = UINT64_MAX; // out of memory: coded whole next time
            }
        }
        break;
    }
    // Every frame from a removal's first on carried it.
    uint32_t kept = 0;
    for (uint32_t i = 0; i < it->removed_count; ++i) {
        if (it->removed_since[i] == UINT64_MAX || it->removed_since[i] > tick) {
            it->removed_ids[kept] = it->removed_ids[i];
            it->removed_since[kept++] = it->removed_since[i];
        }
    }
    it->removed_count = kept;
}

static bool add_removal(app_interest* it, uint64_t id) {
    uint32_t n = it->removed_count + 1;
    if (!grow((void**)&it->removed_ids, &it->ids_cap, n, sizeof *it->removed_ids) ||
        !grow((void**)&it->removed_since, &it->since_cap, n, sizeof *it->removed_since)) {
        return false;
    }
    it->removed_ids[it->removed_count] = id;
    it->removed_since[it->removed_count++] = UINT64_MAX;
    return true;
}

// The entity table against the world now: new entities get a row, those
// the world lost (gone, or their slot taken by another) become removals
// if the client may have them.
static bool reconcile(app_interest* it, const rdp_qsnap* q) {
    it->frames++;
    for (uint32_t k = 0; k < q->entity_count; ++k) {
        uint64_t id = q->ents[k].id;
        uint32_t slot = (uint32_t)id;
        uint32_t had = it->seen_cap;
        if (!grow((void**)&it->seen, &it->seen_cap, slot + 1, sizeof *it->seen)) {
            return false;
        }
        memset(it->seen + had, 0, (size_t)(it->seen_cap - had) * sizeof *it->seen);
        for (uint32_t i = had; i < it->seen_cap; ++i) {
            seen_clear(&it->seen[i], 0);
        }
        app_seen* s = &it->seen[slot];
        if (s->id != id) {
            if (s->id != 0 && s->sent_tick != UINT64_MAX && !add_removal(it, s->id)) {
                return false;
            }
            seen_clear(s, id);
        }
        s->mark = it->frames;
    }
    for (uint32_t slot = 0; slot < it->seen_cap; ++slot) {
        app_seen* s = &it->seen[slot];
        if (s->id != 0 && s->mark != it->frames) {
            if (s->sent_tick != UINT64_MAX && !add_removal(it, s->id)) {
                return false;
            }
            s->id = 0;
        }
    }
    return true;
}

static float dist3(const float* a, const float* b) {
    float dx = a[0] - b[0], dy = a[1] - b[1], dz = a[2] - b[2];
    return sqrtf(dx * dx + dy * dy + dz * dz);
}

// How fast an entity gains priority, per second: 1 within the focus's
// radius, (radius / distance)² beyond it, times 1 + the metres it moved
// since the client last got it.
static float priority_rate(const app_sub* sub, const app_seen* s, const float* point) {
    float w = 1.0f;
    if (sub->has_focus) {
        float d = dist3(point, sub->focus);
        float r = sub->focus_radius;
        w = d <= r ? 1.0f : (r / d) * (r / d);
    }
    float moved = s->sent_tick == UINT64_MAX ? 0.0f : dist3(point, s->sent_at);
    return w * (1.0f + moved);
}

// A max-heap of the entities by key (Floyd's construction, then one
// sift-down per entity taken): a frame takes a few of hundreds, so this
// beats sorting them all.
static void sift_down(app_rank* h, uint32_t n, uint32_t i) {
    for (;;) {
        uint32_t l = 2 * i + 1, top = i;
        if (l < n && h[l].key > h[top].key) {
            top = l;
        }
        if (l + 1 < n && h[l + 1].key > h[top].key) {
            top = l + 1;
        }
        if (top == i) {
            return;
        }
        app_rank t = h[i];
        h[i] = h[top];
        h[top] = t;
        i = top;
    }
}

// The highest-ranked entity left, taken out of the heap of *n.
static app_rank heap_pop(app_rank* h, uint32_t* n) {
    app_rank top = h[0];
    h[0] = h[--*n];
    sift_down(h, *n, 0);
    return top;
}

// Ranks the world's entities for this frame: those not sent for
// REFRESH_S (or never) first, oldest first, then by priority.
static bool rank(app_interest* it, const app_sub* sub, const rdp_qsnap* q, double tick_hz,
                 double dt) {
    if (!grow((void**)&it->order, &it->order_cap, q->entity_count + 1, sizeof *it->order)) {
        return false;
    }
    for (uint32_t k = 0; k < q->entity_count; ++k) {
        app_seen* s = &it->seen[(uint32_t)q->ents[k].id];
        const float* point = q->f + q->ents[k].offset;
        s->priority += (float)(priority_rate(sub, s, point) * dt);
        double age = s->sent_tick == UINT64_MAX ? 1e9 : (double)(q->tick - s->sent_tick) / tick_hz;
        it->order[k].k = k;
        // Due when it would be a second old by the next frame.
        it->order[k].key =
            age + 1.0 / sub->rate_hz > REFRESH_S + 1e-9 ? OVERDUE + age : (double)s->priority;
    }
    for (uint32_t i = q->entity_count / 2; i-- > 0;) {
        sift_down(it->order, q->entity_count, i);
    }
    return true;
}

// ---------------------------------------------------------------------------
// Entity encodings shared by the frames of one tick
// ---------------------------------------------------------------------------

/// The arena stops growing here: past it, entities are encoded per frame.
#define ENC_ARENA_MAX (8u << 20)

typedef struct app_enc {
    uint32_t k;         ///< Entity index in q; UINT32_MAX: an empty slot.
    uint64_t base_tick; ///< Its baseline's tick, UINT64_MAX: none.
    size_t off;         ///< Its bits in the arena.
    size_t nbits;
} app_enc;

struct app_enc_cache {
    const rdp_qsnap* q; ///< The snapshot the encodings are of,
    uint64_t tick;      ///< at this tick.
    app_enc* slots;     ///< Open addressing, cap a power of two.
    uint32_t cap, used;
    uint8_t* arena;
    size_t arena_len, arena_cap;
    uint8_t* one; ///< Where one entity is encoded.
    size_t one_cap;
    uint64_t hits, misses;
};

void app__enc_cache_free(app_enc_cache* c) {
    if (c != NULL) {
        free(c->slots);
        free(c->arena);
        free(c->one);
        free(c);
    }
}

static bool enc_reset(app_enc_cache* c, const rdp_qsnap* q, uint32_t slots) {
    c->q = q;
    c->tick = q->tick;
    c->used = 0;
    c->arena_len = 0;
    if (slots > c->cap) {
        app_enc* s = realloc(c->slots, (size_t)slots * sizeof *s);
        if (s == NULL) {
            return false;
        }
        c->slots = s;
        c->cap = slots;
    }
    for (uint32_t i = 0; i < c->cap; ++i) {
        c->slots[i].k = UINT32_MAX;
    }
    size_t one = rdp_encode_bound(q) + 64;
    if (one > c->one_cap) {
        uint8_t* b = realloc(c->one, one);
        if (b == NULL) {
            return false;
        }
        c->one = b;
        c->one_cap = one;
    }
    return true;
}

// q->ents[k] against base->ents[bk] (base NULL: none), the entity's state
// at tick `bt` (the same for every client: the world's then), encoded once
// this tick: *bits and *nbits. Returns false on out of memory or a bad
// entity.
static bool enc_get(app_world* w, const rdp_qsnap* q, uint32_t k, const rdp_qsnap* base,
                    uint32_t bk, uint64_t bt, const uint8_t** bits, size_t* nbits) {
    if (w->enc_cache == NULL && (w->enc_cache = calloc(1, sizeof *w->enc_cache)) == NULL) {
        return false;
    }
    app_enc_cache* c = w->enc_cache;
    uint32_t want = 64;
    while (want < 4 * q->entity_count) {
        want *= 2;
    }
    if ((c->q != q || c->tick != q->tick || c->cap < want) && !enc_reset(c, q, want)) {
        return false;
    }
    bt = base != NULL ? bt : UINT64_MAX;
    uint32_t mask = c->cap - 1;
    uint32_t i = (uint32_t)((k * 0x9e3779b1u) ^ (uint32_t)(bt * 0x85ebca6bu)) & mask;
    while (c->slots[i].k != UINT32_MAX) {
        if (c->slots[i].k == k && c->slots[i].base_tick == bt) {
            c->hits++;
            *bits = c->arena + c->slots[i].off;
            *nbits = c->slots[i].nbits;
            return true;
        }
        i = (i + 1) & mask;
    }
    c->misses++;
    size_t n = rdp_partial_entity(q, k, base, bk, c->one, c->one_cap);
    if (n == 0 || n == SIZE_MAX) {
        return false;
    }
    size_t bytes = (n + 7) / 8;
    // Kept while the table is under half full and the arena under its cap;
    // else this frame alone uses it.
    if (2 * (c->used + 1) > c->cap || c->arena_len + bytes > ENC_ARENA_MAX) {
        *bits = c->one;
        *nbits = n;
        return true;
    }
    if (c->arena_len + bytes > c->arena_cap) {
        size_t cap = c->arena_cap < 4096 ? 4096 : c->arena_cap;
        while (cap < c->arena_len + bytes) {
            cap *= 2;
        }
        uint8_t* a = realloc(c->arena, cap);
        if (a == NULL) {
            return false;
        }
        c->arena = a;
        c->arena_cap = cap;
    }
    memcpy(c->arena + c->arena_len, c->one, bytes);
    c->slots[i] = (app_enc){k, bt, c->arena_len, n};
    c->used++;
    c->arena_len += bytes;
    *bits = c->arena + c->slots[i].off;
    *nbits = n;
    return true;
}

int app__interest_frame(app_world* w, app_sub* sub, app_interest* it, const rdp_qsnap* q,
                        uint8_t** buf, size_t* cap, size_t* len) {
    *len = 0;
    double tick_hz = (double)w->tick_hz;
    double dt = it->last_tick == UINT64_MAX ? 1.0 / sub->rate_hz
                                            : (double)(q->tick - it->last_tick) / tick_hz;
    it->last_tick = q->tick;
    double frame_share = (double)it->bytes_per_s / sub->rate_hz;
    double bucket = BUCKET_FRAMES * frame_share;
    it->tokens = fmin(bucket, it->tokens + (double)it->bytes_per_s * dt);
    if (!reconcile(it, q)) {
        return -1;
    }
    // About 4 bytes each, in every frame until acknowledged: at most an
    // eighth of a frame's share of the budget (and MAX_REMOVALS).
    double most = fmin(MAX_REMOVALS, fmax(8.0, frame_share / 32.0));
    if ((double)it->removed_count > most) {
        // More removals than a frame should carry (a client that does not
        // ack while entities come and go, or a mass despawn): start its
        // view again instead; a reset frame makes them moot.
        app__interest_reset(it);
        if (!reconcile(it, q)) {
            return -1;
        }
    }
    if (!rank(it, sub, q, tick_hz, dt)) {
        return -1;
    }
    if (it->tokens <= 0.0) {
        return 0; // paying for an oversized frame
    }
    // Room for every entity whole and every removal.
    size_t need =
        rdp_encode_bound(q) + (size_t)q->entity_count * 24 + (size_t)it->removed_count * 20 + 64;
    if (need > *cap) {
        uint8_t* grown = realloc(*buf, need);
        if (grown == NULL) {
            return -1;
        }
        *buf = grown;
        *cap = need;
    }
    rdp_pwriter pw;
    if (!rdp_partial_begin(&pw, q, it->reset_next, it->removed_ids, it->removed_count, *buf,
                           *cap)) {
        return -1;
    }
    app_sent* rec = &it->sent[it->sent_next];
    rec->count = 0;
    size_t recent = window_bytes(it, q->tick, w->tick_hz);
    size_t budget = (size_t)it->tokens;
    if (recent + budget > it->bytes_per_s) {
        budget = recent < it->bytes_per_s ? it->bytes_per_s - recent : 0;
    }
    uint32_t misses = 0, left = q->entity_count;
    while (left > 0 && misses <= MORE_TRIES) {
        uint32_t k = heap_pop(it->order, &left).k;
        app_seen* s = &it->seen[(uint32_t)q->ents[k].id];
        // The baseline only while the world still holds that frame.
        // Against its baseline when the client is sure to hold it: the
        // frame that carried it is among the 31 sent since (its decoder
        // keeps 32), or no frame has carried the entity since (its view
        // holds it as of then).
        bool based = s->btick != UINT64_MAX && q->tick > s->btick && q->tick - s->btick <= 32768u &&
                     (it->seq - s->bseq <= 31u || s->sent_tick == s->btick);
        rdp_qsnap bq;
        memset(&bq, 0, sizeof bq);
        bq.entity_count = 1;
        bq.ents = &s->bent;
        bq.vals = s->bvals;
        size_t room = budget;
        if (rec->count == 0 && it->tokens >= bucket) {
            room = *cap; // a frame's first entity, on a full bucket: whatever its size
        }
        const uint8_t* bits = NULL;
        size_t nbits = 0;
        if (!enc_get(w, q, k, based ? &bq : NULL, 0, s->btick, &bits, &nbits)) {
            return -1;
        }
        int r = rdp_partial_append(&pw, bits, nbits, room);
        if (r < 0) {
            return -1;
        }
        if (r == 0) {
            misses++;
            continue;
        }
        if (!grow((void**)&rec->ents, &rec->cap, rec->count + 1, sizeof *rec->ents)) {
            return -1;
        }
        rec->ents[rec->count].id = q->ents[k].id;
        rec->ents[rec->count].k = k;
        rec->count++;
        s->sent_tick = q->tick;
        memcpy(s->sent_at, q->f + q->ents[k].offset, sizeof s->sent_at);
        s->priority = 0.0f;
    }
    if (rec->count == 0 && it->removed_count == 0 && !it->reset_next) {
        return 0; // nothing worth a frame
    }
    *len = rdp_partial_end(&pw);
    if (*len == 0) {
        return -1;
    }
    it->tokens -= (double)*len;
    window_add(it, q->tick, *len);
    rec->tick = q->tick;
    rec->seq = it->seq++;
    rec->q = q;
    it->sent_next = (it->sent_next + 1) % RDP_BASELINES;
    for (uint32_t i = 0; i < it->removed_count; ++i) {
        if (it->removed_since[i] == UINT64_MAX) {
            it->removed_since[i] = q->tick;
        }
    }
    it->reset_next = false;
    return 0;
}

void app__interest_charge(app_interest* it, uint64_t tick, size_t bytes) {
    it->tokens -= (double)bytes;
    window_add(it, tick, bytes);
}
