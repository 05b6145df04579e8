/*
 * history.c: the poses a world's rigid bodies had at its last few ticks
 * (sim_query.h), kept for lag compensation: a ring of frames, one a tick,
 * each the bodies' poses grouped by entity in the world's storage order.
 *
 *   frame   tick | entries: (entity id, first pose, bone count) ...
 *                | poses:   (centre, orientation) of every body ...
 *
 * A frame is looked up by tick (a scan of at most SIM_MAX_HISTORY_FRAMES),
 * an entity in it by id (a scan of its entries). The shapes (radius, half
 * length) are the world's: a bone's never changes while its entity lives.
 */
#include "quat.h"
#include "rigid.h"
#include "sim_query.h"
#include "vec.h"
#include "world.h"

#include <string.h>

typedef struct hist_entry {
    sim_entity_id id;
    uint32_t first; ///< Its first pose in the frame.
    uint32_t count; ///< Its bodies (bones).
} hist_entry;

typedef struct hist_frame {
    uint64_t tick;
    uint32_t entry_count, entry_cap;
    uint32_t pose_count, pose_cap;
    hist_entry* entries;
    sim_bone_pose* poses;
} hist_frame;

struct sim_history {
    sim_allocator alloc;
    uint32_t cap;   ///< Frames it keeps.
    uint32_t head;  ///< The oldest frame's slot.
    uint32_t count; ///< Frames kept.
    hist_frame* frames;
};

int sim_history_create(uint32_t frames, const sim_allocator* alloc, sim_history** out) {
    if (out == NULL || frames == 0 || frames > SIM_MAX_HISTORY_FRAMES) {
        return SIM_E_INVALID_ARG;
    }
    sim_allocator a = alloc != NULL ? *alloc : sim_allocator_default();
    sim_history* h = a.alloc(a.ctx, sizeof *h, 16);
    if (h == NULL) {
        return SIM_E_NOMEM;
    }
    memset(h, 0, sizeof *h);
    h->alloc = a;
    h->cap = frames;
    h->frames = a.alloc(a.ctx, frames * sizeof *h->frames, 16);
    if (h->frames == NULL) {
        a.free(a.ctx, h, sizeof *h);
        return SIM_E_NOMEM;
    }
    memset(h->frames, 0, frames * sizeof *h->frames);
    *out = h;
    return SIM_OK;
}

void sim_history_destroy(sim_history* h) {
    if (h == NULL) {
        return;
    }
    const sim_allocator a = h->alloc;
    for (uint32_t i = 0; i < h->cap; ++i) {
        hist_frame* f = &h->frames[i];
        if (f->entries != NULL) {
            a.free(a.ctx, f->entries, f->entry_cap * sizeof *f->entries);
        }
        if (f->poses != NULL) {
            a.free(a.ctx, f->poses, f->pose_cap * sizeof *f->poses);
        }
    }
    a.free(a.ctx, h->frames, h->cap * sizeof *h->frames);
    a.free(a.ctx, h, sizeof *h);
}

void sim_history_clear(sim_history* h) {
    if (h != NULL) {
        h->head = 0;
        h->count = 0;
    }
}

size_t sim_history_bytes(const sim_history* h) {
    if (h == NULL) {
        return 0;
    }
    size_t n = sizeof *h + h->cap * sizeof *h->frames;
    for (uint32_t i = 0; i < h->cap; ++i) {
        n += h->frames[i].entry_cap * sizeof(hist_entry) +
             h->frames[i].pose_cap * sizeof(sim_bone_pose);
    }
    return n;
}

// Frame k of the kept ones, 0 the oldest.
static hist_frame* frame_at(const sim_history* h, uint32_t k) {
    return &h->frames[(h->head + k) % h->cap];
}

// Grows an array of `*cap` elements of `size` bytes to hold `need` (its
// contents are not kept: a frame is written whole).
static bool grow(const sim_allocator* a, void** p, uint32_t* cap, uint32_t need, size_t size) {
    if (need <= *cap) {
        return true;
    }
    uint32_t n = *cap > 0 ? *cap : 16;
    while (n < need) {
        n = n > UINT32_MAX / 2 ? need : n * 2;
    }
    void* q = a->alloc(a->ctx, (size_t)n * size, 16);
    if (q == NULL) {
        return false;
    }
    if (*p != NULL) {
        a->free(a->ctx, *p, (size_t)*cap * size);
    }
    *p = q;
    *cap = n;
    return true;
}

int sim_history_record(sim_history* h, const sim_world* w) {
    if (h == NULL || w == NULL) {
        return SIM_E_INVALID_ARG;
    }
    const uint64_t tick = w->tick;
    // The world went back (a rollback, a load): frames of its other
    // timeline go.
    while (h->count > 0 && frame_at(h, h->count - 1)->tick >= tick) {
        h->count--;
    }
    uint32_t entities = 0;
    for (uint32_t k = 0; k < w->order_count; ++k) {
        entities += w->entities[w->order[k]].b_count > 0 ? 1u : 0u;
    }
    // The slot the frame goes in: the next free one, or the oldest's.
    hist_frame* f = h->count < h->cap ? frame_at(h, h->count) : frame_at(h, 0);
    if (!grow(&h->alloc, (void**)&f->entries, &f->entry_cap, entities, sizeof *f->entries) ||
        !grow(&h->alloc, (void**)&f->poses, &f->pose_cap, w->b_count, sizeof *f->poses)) {
        return SIM_E_NOMEM;
    }
    f->tick = tick;
    f->entry_count = 0;
    f->pose_count = 0;
    for (uint32_t k = 0; k < w->order_count; ++k) {
        const uint32_t slot = w->order[k];
        const sim__entity* e = &w->entities[slot];
        if (e->b_count == 0) {
            continue;
        }
        hist_entry* en = &f->entries[f->entry_count++];
        en->id = (sim_entity_id){slot + 1, e->generation};
        en->first = f->pose_count;
        en->count = e->b_count;
        for (uint32_t i = 0; i < e->b_count; ++i) {
            const sim__body* b = &w->body[e->b_first + i];
            f->poses[f->pose_count++] = (sim_bone_pose){b->x, b->q};
        }
    }
    if (h->count < h->cap) {
        h->count++;
    } else {
        h->head = (h->head + 1) % h->cap;
    }
    return SIM_OK;
}

int sim_history_pick(const sim_history* h, const sim_world* w, uint64_t want,
                     sim_picked_tick* out) {
    if (w == NULL || out == NULL) {
        return SIM_E_INVALID_ARG;
    }
    if (want > w->tick) {
        return SIM_E_OUT_OF_RANGE;
    }
    out->tick = w->tick;
    out->clamped = false;
    if (want == w->tick) {
        return SIM_OK;
    }
    if (h == NULL || h->count == 0) {
        out->clamped = true;
        return SIM_OK;
    }
    // Newest first: the first frame at or before `want`.
    for (uint32_t k = h->count; k-- > 0;) {
        const hist_frame* f = frame_at(h, k);
        if (f->tick <= want) {
            out->tick = f->tick;
            return SIM_OK;
        }
    }
    out->tick = frame_at(h, 0)->tick;
    out->clamped = true;
    return SIM_OK;
}

// The frame of `tick`, or NULL.
static const hist_frame* frame_of(const sim_history* h, uint64_t tick) {
    for (uint32_t k = 0; h != NULL && k < h->count; ++k) {
        const hist_frame* f = frame_at(h, k);
        if (f->tick == tick) {
            return f;
        }
    }
    return NULL;
}

// The entry of `id` in frame f, or NULL.
static const hist_entry* entry_of(const hist_frame* f, sim_entity_id id) {
    for (uint32_t k = 0; k < f->entry_count; ++k) {
        const hist_entry* en = &f->entries[k];
        if (en->id.index1 == id.index1 && en->id.generation == id.generation) {
            return en;
        }
    }
    return NULL;
}

bool sim__history_has(const sim_history* h, uint64_t tick) {
    return frame_of(h, tick) != NULL;
}

const sim_bone_pose* sim__history_poses(const sim_history* h, const sim_world* w, uint64_t tick,
                                        sim_entity_id id, uint32_t* count, int* err) {
    const sim__entity* e = sim__entity_get(w, id);
    if (e == NULL || e->b_count == 0) {
        *err = SIM_E_STALE_ID;
        return NULL;
    }
    if (tick == w->tick) {
        *err = SIM_OK;
        *count = 0; // the world's bodies: the caller reads them
        return NULL;
    }
    const hist_frame* f = frame_of(h, tick);
    const hist_entry* en = f != NULL ? entry_of(f, id) : NULL;
    if (en == NULL) {
        *err = SIM_E_OUT_OF_RANGE;
        return NULL;
    }
    *err = SIM_OK;
    *count = en->count;
    return &f->poses[en->first];
}

int sim_history_bone_pose(const sim_history* h, const sim_world* w, uint64_t tick, sim_entity_id id,
                          uint32_t bone, sim_bone_pose* out) {
    if (w == NULL || out == NULL) {
        return SIM_E_INVALID_ARG;
    }
    int err = SIM_OK;
    uint32_t n = 0;
    const sim_bone_pose* poses = sim__history_poses(h, w, tick, id, &n, &err);
    if (err != SIM_OK) {
        return err;
    }
    const sim__entity* e = sim__entity_get(w, id);
    if (bone >= e->b_count) {
        return SIM_E_BAD_INDEX;
    }
    if (poses == NULL) {
        const sim__body* b = &w->body[e->b_first + bone];
        *out = (sim_bone_pose){b->x, b->q};
    } else {
        *out = poses[bone < n ? bone : n - 1];
    }
    return SIM_OK;
}

int sim_history_carry(const sim_history* h, const sim_world* w, uint64_t tick, sim_entity_id id,
                      uint32_t bone, sim_vec3 then, sim_vec3* now) {
    if (now == NULL) {
        return SIM_E_INVALID_ARG;
    }
    sim_bone_pose past, present;
    int rc = sim_history_bone_pose(h, w, tick, id, bone, &past);
    if (rc == SIM_OK) {
        rc = sim_history_bone_pose(h, w, w->tick, id, bone, &present);
    }
    if (rc != SIM_OK) {
        return rc;
    }
    const sim_vec3 local = q_rotate_inv(past.q, v3_sub(then, past.p));
    *now = v3_add(present.p, q_rotate(present.q, local));
    return SIM_OK;
}

int sim_history_nearest_bone(const sim_history* h, const sim_world* w, uint64_t tick,
                             sim_entity_id id, sim_vec3 point, uint32_t* bone) {
    if (w == NULL || bone == NULL) {
        return SIM_E_INVALID_ARG;
    }
    const sim__entity* e = sim__entity_get(w, id);
    if (e == NULL || e->kind != SIM_ENTITY_CHARACTER) {
        return SIM_E_STALE_ID;
    }
    uint32_t best = 0;
    float best_d = 1e30f;
    for (uint32_t i = 0; i < e->b_count; ++i) {
        sim_bone_pose p;
        int rc = sim_history_bone_pose(h, w, tick, id, i, &p);
        if (rc != SIM_OK) {
            return rc;
        }
        const float d = v3_len(v3_sub(p.p, point));
        if (d < best_d) {
            best_d = d;
            best = i;
        }
    }
    *bone = best;
    return SIM_OK;
}
