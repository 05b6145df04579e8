/*
 * state.c: a world's state as bytes, and a world made from them
 * (sim_world_save(), sim_world_load(); the layout is docs/STATE.md).
 *
 * A world is its struct and the arrays of world.h's SIM__WORLD_ARRAYS. The
 * state is the struct (every scalar: counts, tick, parameters, limits,
 * the colouring, the foci) with its pointers cleared, then one section per
 * array that a step reads before writing, holding only the elements in
 * use, then the skeletons the characters play, by name and content hash.
 * Loading creates a world with the saved def, reserves the saved room (so
 * every capacity, and with it every overflow, is the original's), lays
 * the saved struct over it with its own pointers put back, and fills the
 * arrays. What is not written is scratch that every substep or tick
 * rebuilds before reading (listed below); the round-trip tests
 * (test_state.c) step saved and restored worlds side by side and compare
 * every tick, which is what proves the list right.
 *
 *   head      magic "RDSS", state version, physics version, layout, sections
 *   section   name[16], element size, count, count × element bytes, padded to 8
 *
 * Pointers inside elements: a character's skeleton and clip become
 * indices (1-based; 0 is none) into the "skeletons" section and the
 * skeleton's clips; an entity's particle names become 1 (a particle
 * ragdoll's) or 0. A REDUCED character's articulation is not saved as a
 * pointer: the "artic" section holds its state (sim_artic_get_state()) by
 * entity slot, and loading builds it again from the skeleton.
 */
#include "rigid.h"
#include "sim_articulation.h"
#include "world.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
               "world states are little-endian: they hold the arrays as they lie in memory");

#define STATE_MAGIC        0x53534452u /* "RDSS" as bytes */
#define STATE_NAME_MAX     16u
#define STATE_MAX_SECTIONS 96u

typedef struct state_head {
    uint32_t magic;
    uint32_t version; ///< SIM_STATE_VERSION.
    uint32_t physics; ///< SIM_PHYSICS_VERSION.
    uint32_t layout;  ///< layout_hash() of the build that wrote it.
    uint32_t sections;
    uint32_t reserved0;
} state_head;

typedef struct section_head {
    char name[STATE_NAME_MAX];
    uint32_t elem; ///< Bytes per element.
    uint32_t reserved0;
    uint64_t count;
} section_head;

/// The "artic" section: 4-byte words, per REDUCED character its entity
/// slot, the count n of its state's floats (sim_artic_get_state(): 1 + 21
/// a link) and those n floats; then a zero word if the total is odd (to 8
/// bytes). A record is as long as its own articulation, not SIM_MAX_BONES.
#define STATE_ARTIC_MAX_FLOATS (1 + SIM_MAX_BONES * SIM_ARTIC_STATE_FLOATS)

/// A skeleton the characters of a state play.
typedef struct state_skel {
    char name[SIM_NAME_MAX];
    uint64_t hash; ///< sim__skel_hash() (sim__skel.hash).
} state_skel;

// The arrays written and how many elements of each are in use. Not
// written (scratch, rebuilt before it is read): sc_start, sc_entries,
// sc_moved, sc_pairs (self-collision, every substep's first pass),
// lane_staging (each cloth pass), sm_head and sm_next (soft-body contact
// hash, cleared after use), soft_cache_next (swapped in at the tick's end)
// and soft_bits (colouring). A saved count is never more than the array's
// capacity (the soft step's arrays have none in an XPBD world).
#define STATE_ROWS(XX, w)                                                                          \
    XX(pos, (w)->p_count)                                                                          \
    XX(prev, (w)->p_count)                                                                         \
    XX(vpre, (w)->p_count)                                                                         \
    XX(inv_mass, (w)->p_count)                                                                     \
    XX(radius, (w)->p_count)                                                                       \
    XX(contact_n, (w)->p_count)                                                                    \
    XX(push, (w)->p_count)                                                                         \
    XX(contact, (w)->p_count)                                                                      \
    XX(contact_body, (w)->p_count)                                                                 \
    XX(tie, (w)->p_count)                                                                          \
    XX(dist, (w)->d_count)                                                                         \
    XX(lane_blocks, (w)->lb_count)                                                                 \
    XX(joint, (w)->j_count)                                                                        \
    XX(events, SIM__MAX_EVENTS)                                                                    \
    XX(body, (w)->b_count)                                                                         \
    XX(binfo, (w)->b_count)                                                                        \
    XX(bone, (w)->b_count)                                                                         \
    XX(bjoint, (w)->bj_count)                                                                      \
    XX(chars, (w)->e_used)                                                                         \
    XX(softs, (w)->e_used)                                                                         \
    XX(sm_rest, (w)->p_count)                                                                      \
    XX(grid_head, SIM__GRID_BUCKETS)                                                               \
    XX(grid, (w)->grid_count)                                                                      \
    XX(aabb_lo, (w)->b_count)                                                                      \
    XX(aabb_hi, (w)->b_count)                                                                      \
    XX(pairs, (w)->pair_count)                                                                     \
    XX(contacts, (w)->contact_count)                                                               \
    XX(entities, (w)->e_used)                                                                      \
    XX(free_slots, (w)->free_count)                                                                \
    XX(order, (w)->order_count)                                                                    \
    XX(boxes, (w)->box_count)                                                                      \
    XX(drags, (w)->drag_count)                                                                     \
    XX(torn, (w)->torn_count)                                                                      \
    XX(closing, (w)->b_count)                                                                      \
    XX(bsleep, (w)->b_count)                                                                       \
    XX(uf, (w)->b_count)                                                                           \
    XX(isl_of, (w)->b_count)                                                                       \
    XX(isl_of_body, (w)->b_count)                                                                  \
    XX(isl_bodies, (w)->b_count)                                                                   \
    XX(islands, (w)->island_count)                                                                 \
    XX(isl_joints, (w)->bj_count)                                                                  \
    XX(isl_pairs, (w)->pair_count)                                                                 \
    XX(soft_state, (w)->soft_body_count)                                                           \
    XX(soft_mass, (w)->soft_body_count)                                                            \
    XX(soft_blocks, (w)->soft_body_count)                                                          \
    XX(soft_index, (w)->b_count)                                                                   \
    XX(soft_joints, (w)->soft_joint_count)                                                         \
    XX(soft_contacts, (w)->soft_contact_count)                                                     \
    XX(soft_keys, (w)->soft_contact_count)                                                         \
    XX(soft_cache, (w)->soft_cache_count)                                                          \
    XX(soft_ca, (uint64_t)(w)->soft_joint_count + (w)->soft_contact_count)                         \
    XX(soft_cb, (uint64_t)(w)->soft_joint_count + (w)->soft_contact_count)                         \
    XX(soft_colour, (uint64_t)(w)->soft_joint_count + (w)->soft_contact_count)                     \
    XX(soft_order, (uint64_t)(w)->soft_joint_count + (w)->soft_contact_count)                      \
    XX(soft_wide, (w)->soft_wide_first[SIM__GRAPH_COLOURS])

// A fingerprint of this build's layout: the world struct's size and where
// each array pointer sits in it, and each array's element size. A state
// from a build where any differs is refused rather than misread.
static uint32_t layout_hash(void) {
    static const size_t facts[] = {SIM__SAVED_BYTES,
                                   sizeof(state_skel),
                                   sizeof(sim__char),
                                   sizeof(sim__entity),
                                   sizeof(sim_params),
                                   sizeof(sim_counts),
                                   sizeof(sim_world_def),
#define STATE_FACT(field, count, elem) offsetof(sim_world, field), (elem),
                                   SIM__WORLD_ARRAYS(STATE_FACT, unused, unused)
#undef STATE_FACT
    };
    uint64_t h = sim__fnv1a(SIM__FNV_BASIS, facts, sizeof facts);
    return (uint32_t)(h ^ (h >> 32));
}

static size_t pad8(size_t n) {
    return (n + 7u) & ~(size_t)7u;
}

// ---------------------------------------------------------------------------
// Saving
// ---------------------------------------------------------------------------

/// Where a state is written; with buf NULL (or full) it only counts.
typedef struct state_out {
    uint8_t* buf;
    size_t cap, len;
} state_out;

static void put(state_out* o, const void* p, size_t n) {
    if (o->buf != NULL && o->len + n <= o->cap && n > 0) {
        memcpy(o->buf + o->len, p, n);
    }
    o->len += n;
}

// A section's head, its data and the padding; returns where its data went
// in o->buf (NULL when only counting).
static uint8_t* put_section(state_out* o, const char* name, size_t elem, uint64_t count,
                            const void* data) {
    section_head s;
    memset(&s, 0, sizeof s);
    snprintf(s.name, sizeof s.name, "%s", name);
    s.elem = (uint32_t)elem;
    s.count = count;
    put(o, &s, sizeof s);
    const size_t at = o->len, n = (size_t)count * elem;
    put(o, data, n);
    static const uint8_t zeros[8] = {0};
    put(o, zeros, pad8(n) - n);
    return o->buf != NULL && at + n <= o->cap ? o->buf + at : NULL;
}

static uint64_t at_most(uint64_t count, size_t cap) {
    return count < cap ? count : (uint64_t)cap;
}

// The skeleton table's index (1-based) of sk, adding it when new; 0 for NULL.
static uint32_t skel_index(const sim__skel* sk, const sim__skel** table, uint32_t* n) {
    if (sk == NULL) {
        return 0;
    }
    for (uint32_t i = 0; i < *n; ++i) {
        if (table[i] == sk) {
            return i + 1;
        }
    }
    table[(*n)++] = sk; // at most SIM__MAX_SKELETONS: every one is in the library
    return *n;
}

static uint32_t clip_index(const sim__skel* sk, const sim__clip* clip) {
    for (uint32_t k = 0; sk != NULL && clip != NULL && k < sk->clip_count; ++k) {
        if (sk->clips[k] == clip) {
            return k + 1;
        }
    }
    return 0;
}

int sim_world_save(const sim_world* w, void* buf, size_t cap, size_t* len) {
    if (w == NULL || len == NULL) {
        return SIM_E_INVALID_ARG;
    }
    // Count first, so that a buffer too small is left untouched.
    state_out o = {NULL, 0, 0};
    for (int pass = 0; pass < 2; ++pass) {
        size_t caps[SIM__ROW_COUNT];
        sim__world_row_caps(w, caps);
        state_head head = {
            STATE_MAGIC, SIM_STATE_VERSION, SIM_PHYSICS_VERSION, layout_hash(), 0, 0};
#define STATE_ONE(field, count) +1
        head.sections = 3 STATE_ROWS(STATE_ONE, w); // world, skeletons, artic
#undef STATE_ONE
        put(&o, &head, sizeof head);

        // The struct, its pointers cleared (they mean nothing elsewhere).
        sim_world img = *w;
#define STATE_CLEAR(field, count, elem) img.field = NULL;
        SIM__WORLD_ARRAYS(STATE_CLEAR, unused, unused)
#undef STATE_CLEAR
        memset(&img.alloc, 0, sizeof img.alloc);
        memset(&img.def.allocator, 0, sizeof img.def.allocator);
        img.def.library = NULL;
        put_section(&o, "world", SIM__SAVED_BYTES, 1, &img); // not what it reports

        // The arrays, then the pointers inside characters and entities.
        uint8_t* chars = NULL;
        uint8_t* ents = NULL;
#define STATE_PUT(field, count)                                                                    \
    {                                                                                              \
        uint8_t* at = put_section(&o, #field, sizeof *w->field,                                    \
                                  at_most((count), caps[SIM__ROW_##field]), w->field);             \
        if (SIM__ROW_##field == SIM__ROW_chars) {                                                  \
            chars = at;                                                                            \
        } else if (SIM__ROW_##field == SIM__ROW_entities) {                                        \
            ents = at;                                                                             \
        }                                                                                          \
    }
        STATE_ROWS(STATE_PUT, w)
#undef STATE_PUT

        const sim__skel* used[SIM__MAX_SKELETONS];
        uint32_t n_used = 0;
        for (uint32_t s = 0; s < w->e_used; ++s) {
            const sim__entity* e = &w->entities[s];
            const sim__char* c = &w->chars[s];
            const bool is_char = e->live && (e->kind == SIM_ENTITY_CHARACTER);
            uint32_t si = is_char ? skel_index(c->sk, used, &n_used) : 0;
            if (chars != NULL) {
                sim__char t;
                memcpy(&t, chars + (size_t)s * sizeof t, sizeof t);
                t.sk = (const sim__skel*)(uintptr_t)si;
                t.clip = (const sim__clip*)(uintptr_t)(is_char ? clip_index(c->sk, c->clip) : 0);
                t.artic = NULL;
                memcpy(chars + (size_t)s * sizeof t, &t, sizeof t);
            }
            if (ents != NULL) {
                sim__entity t;
                memcpy(&t, ents + (size_t)s * sizeof t, sizeof t);
                t.names = (const char* const*)(uintptr_t)(e->names != NULL ? 1 : 0);
                memcpy(ents + (size_t)s * sizeof t, &t, sizeof t);
            }
        }
        state_skel table[SIM__MAX_SKELETONS];
        memset(table, 0, sizeof table);
        for (uint32_t i = 0; i < n_used; ++i) {
            memcpy(table[i].name, used[i]->def.name, SIM_NAME_MAX);
            table[i].hash = used[i]->hash;
        }
        put_section(&o, "skeletons", sizeof table[0], n_used, table);

        // The articulations of REDUCED characters, one record each.
        uint64_t words = 0;
        for (uint32_t s = 0; s < w->e_used; ++s) {
            if (w->entities[s].live && w->entities[s].kind == SIM_ENTITY_CHARACTER &&
                w->chars[s].artic != NULL) {
                words += 2 + 1 +
                         (uint64_t)sim_artic_link_count(w->chars[s].artic) * SIM_ARTIC_STATE_FLOATS;
            }
        }
        const uint32_t zero = 0;
        section_head ah;
        memset(&ah, 0, sizeof ah);
        snprintf(ah.name, sizeof ah.name, "%s", "artic");
        ah.elem = (uint32_t)sizeof(uint32_t);
        ah.count = words + (words & 1u);
        put(&o, &ah, sizeof ah);
        for (uint32_t s = 0; s < w->e_used; ++s) {
            if (w->entities[s].live && w->entities[s].kind == SIM_ENTITY_CHARACTER &&
                w->chars[s].artic != NULL) {
                float f[STATE_ARTIC_MAX_FLOATS];
                const uint32_t rec[2] = {
                    s, sim_artic_get_state(w->chars[s].artic, f, STATE_ARTIC_MAX_FLOATS)};
                put(&o, rec, sizeof rec);
                put(&o, f, rec[1] * sizeof f[0]);
            }
        }
        if (words & 1u) {
            put(&o, &zero, sizeof zero);
        }

        if (pass == 0) {
            *len = o.len;
            if (buf == NULL || cap < o.len) {
                return SIM_E_CAPACITY;
            }
            o = (state_out){buf, cap, 0};
        }
    }
    return SIM_OK;
}

// ---------------------------------------------------------------------------
// Loading
// ---------------------------------------------------------------------------

typedef struct state_section {
    char name[STATE_NAME_MAX + 1];
    uint32_t elem;
    uint64_t count;
    const uint8_t* data;
} state_section;

typedef struct state_in {
    state_section s[STATE_MAX_SECTIONS];
    uint32_t n;
    char* why;
    size_t why_cap;
} state_in;

__attribute__((format(printf, 3, 4))) static int fail(state_in* in, int rc, const char* fmt, ...) {
    if (in->why != NULL && in->why_cap > 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(in->why, in->why_cap, fmt, ap);
        va_end(ap);
    }
    return rc;
}

static int parse(state_in* in, const uint8_t* p, size_t len) {
    state_head head;
    if (len < sizeof head) {
        return fail(in, SIM_E_CORRUPT, "truncated: %zu bytes, shorter than the state's head", len);
    }
    memcpy(&head, p, sizeof head);
    if (head.magic != STATE_MAGIC) {
        return fail(in, SIM_E_CORRUPT, "not a world state (bad magic)");
    }
    if (head.version != SIM_STATE_VERSION || head.physics != SIM_PHYSICS_VERSION) {
        return fail(in, SIM_E_VERSION,
                    "state version %u, physics version %u; this build reads state version %u, "
                    "physics version %u",
                    head.version, head.physics, SIM_STATE_VERSION, SIM_PHYSICS_VERSION);
    }
    if (head.layout != layout_hash()) {
        return fail(in, SIM_E_VERSION,
                    "saved by a build with another memory layout (%08x, this one %08x)",
                    head.layout, layout_hash());
    }
    if (head.sections > STATE_MAX_SECTIONS) {
        return fail(in, SIM_E_CORRUPT, "%u sections, more than %u", head.sections,
                    STATE_MAX_SECTIONS);
    }
    size_t at = sizeof head;
    for (uint32_t i = 0; i < head.sections; ++i) {
        section_head s;
        if (len - at < sizeof s) {
            return fail(in, SIM_E_CORRUPT, "truncated in the head of section %u", i);
        }
        memcpy(&s, p + at, sizeof s);
        at += sizeof s;
        state_section* d = &in->s[in->n++];
        memcpy(d->name, s.name, STATE_NAME_MAX);
        d->name[STATE_NAME_MAX] = '\0';
        if (s.elem == 0 || s.count > (len - at) / s.elem) {
            return fail(in, SIM_E_CORRUPT, "truncated in section '%s' (%llu × %u bytes)", d->name,
                        (unsigned long long)s.count, s.elem);
        }
        d->elem = s.elem;
        d->count = s.count;
        d->data = p + at;
        const size_t n = (size_t)s.count * s.elem;
        if (pad8(n) > len - at) {
            return fail(in, SIM_E_CORRUPT, "truncated after section '%s'", d->name);
        }
        at += pad8(n);
    }
    if (at != len) {
        return fail(in, SIM_E_CORRUPT, "%zu bytes after the last section", len - at);
    }
    return SIM_OK;
}

// Section `name` with elements of `elem` bytes, exactly `count` of them;
// NULL, with *rc the error, when there is none such.
static const state_section* take(state_in* in, const char* name, size_t elem, uint64_t count,
                                 int* rc) {
    for (uint32_t i = 0; i < in->n; ++i) {
        const state_section* s = &in->s[i];
        if (strcmp(s->name, name) != 0) {
            continue;
        }
        if (s->elem != elem || s->count != count) {
            *rc = fail(in, SIM_E_CORRUPT,
                       "section '%s' holds %llu × %u bytes where the world needs %llu × %zu", name,
                       (unsigned long long)s->count, s->elem, (unsigned long long)count, elem);
            return NULL;
        }
        return s;
    }
    *rc = fail(in, SIM_E_CORRUPT, "section '%s' is missing", name);
    return NULL;
}

// The counts the struct gives are within the room reserved for them.
static int check_counts(state_in* in, const sim_world* w, const size_t caps[SIM__ROW_COUNT]) {
    const sim_counts r = w->reserved;
    struct {
        const char* what;
        uint64_t have, room;
    } c[] = {
        {"particles", w->p_count, r.particles},
        {"constraints", w->d_count, r.constraints},
        {"joint limits", w->j_count, r.joint_limits},
        {"bodies", w->b_count, r.bodies},
        {"joints", w->bj_count, r.joints},
        {"entity slots", w->e_used, r.entities},
        {"free slots", w->free_count, w->e_used},
        {"live entities", (uint64_t)w->order_count + w->free_count, w->e_used},
        {"boxes", w->box_count, w->def.max_boxes},
        {"drags", w->drag_count, w->def.max_drags},
        {"events", w->event_count, SIM__MAX_EVENTS},
        {"event head", w->event_head, SIM__MAX_EVENTS - 1},
        {"torn sticks", w->torn_count, SIM_MAX_TORN},
        {"foci", w->focus_count, SIM_MAX_FOCI},
        {"soft-body particles", w->sp_count, w->p_count},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; ++i) {
        if (c[i].have > c[i].room) {
            return fail(in, SIM_E_CORRUPT, "%llu %s where there is room for %llu",
                        (unsigned long long)c[i].have, c[i].what, (unsigned long long)c[i].room);
        }
    }
#define STATE_ROOM(field, count)                                                                   \
    if ((uint64_t)(count) > caps[SIM__ROW_##field] && caps[SIM__ROW_##field] != 0) {               \
        return fail(in, SIM_E_CORRUPT, "%llu elements of '%s' where there is room for %zu",        \
                    (unsigned long long)(count), #field, caps[SIM__ROW_##field]);                  \
    }
    STATE_ROWS(STATE_ROOM, w)
#undef STATE_ROOM
    return SIM_OK;
}

// The indices inside entity slot s's elements (particles of its
// constraints and joint limits, bodies of its joints, tethers, its cloth
// blocks' staging) lie within the entity: a state that passed its file's
// CRC but was made by hand must not make a step read out of bounds.
static int check_indices(state_in* in, const sim_world* w, uint32_t s) {
    const sim__entity* e = &w->entities[s];
    const uint32_t np = e->p_count;
    for (uint32_t k = 0; k < e->d_count; ++k) {
        const sim__dist* d = &w->dist[e->d_first + k];
        if (d->a >= np || d->b >= np || d->kind > SIM__DIST_TORN) {
            return fail(in, SIM_E_CORRUPT, "constraint %u of slot %u is out of its entity", k, s);
        }
    }
    for (uint32_t k = 0; k < e->j_count; ++k) {
        const sim__joint* j = &w->joint[e->j_first + k];
        if (j->a >= np || j->b >= np || (j->kind == SIM__JOINT_HINGE && j->c >= np) ||
            j->kind > SIM__JOINT_CONE || j->up0 >= np || j->up1 >= np || j->l0 >= np ||
            j->l1 >= np) {
            return fail(in, SIM_E_CORRUPT, "joint limit %u of slot %u is out of its entity", k, s);
        }
    }
    for (uint32_t k = 0; k < e->bj_count; ++k) {
        const sim__bjoint* j = &w->bjoint[e->bj_first + k];
        if (j->parent >= e->b_count || j->child >= e->b_count) {
            return fail(in, SIM_E_CORRUPT, "joint %u of slot %u is out of its entity", k, s);
        }
    }
    for (uint32_t k = 0; k < np; ++k) {
        const sim__tie* t = &w->tie[e->p_first + k];
        if (t->tether != SIM__NO_TIE && t->tether >= np) {
            return fail(in, SIM_E_CORRUPT, "particle %u of slot %u is tied outside it", k, s);
        }
    }
    if (e->cb_count > 0) {
        const uint64_t n = (uint64_t)e->rows * sim__cloth_lane_stride(e->cols);
        if ((uint64_t)e->rows * e->cols > np || 4 * n > SIM__LANE_STAGING(w->reserved.particles)) {
            return fail(in, SIM_E_CORRUPT, "cloth in slot %u has more rows than particles", s);
        }
        for (uint32_t k = 0; k < e->cb_count; ++k) {
            const sim__lane_block* b = &w->lane_blocks[e->cb_first + k];
            bool ok = b->kind <= SIM__LANES_SCALAR && b->run >= 1 && b->run <= e->cb_count - k;
            if (ok && b->kind == SIM__LANES_SCALAR) {
                for (int l = 0; l < 4; ++l) {
                    ok &= b->dist[l] == UINT32_MAX || b->dist[l] < e->d_count;
                }
            } else if (ok) {
                const uint32_t off = b->a_off > b->b_off ? b->a_off : b->b_off;
                // Every lane reads within the staging's last array (a block
                // may reach past its cloth's rows into the padding).
                ok = 3 * n + b->base + off + 8 <= SIM__LANE_STAGING(w->reserved.particles);
            }
            if (!ok) {
                return fail(in, SIM_E_CORRUPT, "cloth block %u of slot %u is out of its cloth", k,
                            s);
            }
        }
    }
    return SIM_OK;
}

// Every live entity's ranges lie within the arrays' counts, and every
// character's skeleton and clip exist.
static int check_entities(state_in* in, const sim_world* w) {
    for (uint32_t k = 0; k < w->free_count; ++k) {
        if (w->free_slots[k] >= w->e_used || w->entities[w->free_slots[k]].live) {
            return fail(in, SIM_E_CORRUPT, "free slot %u is not a dead slot", w->free_slots[k]);
        }
    }
    for (uint32_t k = 0; k < w->order_count; ++k) {
        const uint32_t s = w->order[k];
        if (s >= w->e_used || !w->entities[s].live) {
            return fail(in, SIM_E_CORRUPT, "live entity %u names slot %u, which is not live", k, s);
        }
        const sim__entity* e = &w->entities[s];
        if ((uint64_t)e->p_first + e->p_count > w->p_count ||
            (uint64_t)e->d_first + e->d_count > w->d_count ||
            (uint64_t)e->j_first + e->j_count > w->j_count ||
            (uint64_t)e->b_first + e->b_count > w->b_count ||
            (uint64_t)e->bj_first + e->bj_count > w->bj_count ||
            (uint64_t)e->cb_first + e->cb_count > w->lb_count) {
            return fail(in, SIM_E_CORRUPT, "entity in slot %u reaches past the arrays", s);
        }
        if (e->kind == SIM_ENTITY_CHARACTER && w->chars[s].sk == NULL) {
            return fail(in, SIM_E_CORRUPT, "character in slot %u has no skeleton", s);
        }
        int rc = check_indices(in, w, s);
        if (rc != SIM_OK) {
            return rc;
        }
    }
    for (uint32_t k = 0; k < w->drag_count; ++k) {
        const sim__entity* e = sim__entity_get(w, w->drags[k].entity);
        if (e == NULL || w->drags[k].particle >= e->p_count) {
            return fail(in, SIM_E_CORRUPT, "drag %u names no particle of a live entity", k);
        }
    }
    return SIM_OK;
}

// Puts back the skeleton and clip pointers the indices stand for.
static int resolve_skeletons(state_in* in, sim_world* w, const sim_library* lib) {
    const state_section* sec = NULL;
    for (uint32_t i = 0; i < in->n; ++i) {
        if (strcmp(in->s[i].name, "skeletons") == 0) {
            sec = &in->s[i];
        }
    }
    if (sec == NULL || sec->elem != sizeof(state_skel) || sec->count > SIM__MAX_SKELETONS) {
        return fail(in, SIM_E_CORRUPT, "section 'skeletons' is missing or malformed");
    }
    const sim__skel* sk[SIM__MAX_SKELETONS];
    for (uint32_t i = 0; i < sec->count; ++i) {
        state_skel t;
        memcpy(&t, sec->data + i * sizeof t, sizeof t);
        t.name[SIM_NAME_MAX - 1] = '\0';
        sk[i] = sim__library_skel(lib, t.name);
        if (sk[i] == NULL) {
            return fail(in, SIM_E_UNKNOWN_NAME, "skeleton '%s' is not among the assets", t.name);
        }
        const uint64_t h = sk[i]->hash;
        if (h != t.hash) {
            return fail(in, SIM_E_ASSET_MISMATCH,
                        "skeleton '%s' differs from the one the state was saved with (content "
                        "hash %016llx, saved %016llx)",
                        t.name, (unsigned long long)h, (unsigned long long)t.hash);
        }
    }
    for (uint32_t s = 0; s < w->e_used; ++s) {
        sim__char* c = &w->chars[s];
        const uintptr_t si = (uintptr_t)c->sk, ci = (uintptr_t)c->clip;
        c->sk = NULL;
        c->clip = NULL;
        if (si > sec->count || (si == 0 && ci != 0)) {
            return fail(in, SIM_E_CORRUPT, "character in slot %u names skeleton %zu of %llu", s,
                        (size_t)si, (unsigned long long)sec->count);
        }
        if (si == 0) {
            continue;
        }
        c->sk = sk[si - 1];
        if (ci > c->sk->clip_count) {
            return fail(in, SIM_E_CORRUPT, "character in slot %u names clip %zu of %u", s,
                        (size_t)ci, c->sk->clip_count);
        }
        c->clip = ci > 0 ? c->sk->clips[ci - 1] : NULL;
    }
    for (uint32_t s = 0; s < w->e_used; ++s) {
        sim__entity* e = &w->entities[s];
        e->names = (uintptr_t)e->names != 0 ? sim__ragdoll_names : NULL;
    }
    return SIM_OK;
}

// Builds the articulation of every REDUCED character again and puts back
// its coordinates and velocities, so it continues bit for bit.
static int load_articulations(state_in* in, sim_world* w) {
    uint64_t n = 0;
    for (uint32_t s = 0; s < w->e_used; ++s) {
        n += w->entities[s].live && w->entities[s].kind == SIM_ENTITY_CHARACTER &&
                     w->chars[s].reduced
                 ? 1u
                 : 0u;
    }
    const state_section* sec = NULL;
    for (uint32_t i = 0; i < in->n && sec == NULL; ++i) {
        sec = strcmp(in->s[i].name, "artic") == 0 ? &in->s[i] : NULL;
    }
    if (sec == NULL || sec->elem != sizeof(uint32_t)) {
        return fail(in, SIM_E_CORRUPT, "section 'artic' is missing or not of 4-byte words");
    }
    w->artic_links = 0; // counted again as they are built
    uint64_t at = 0;    // words read
    for (uint64_t k = 0; k < n; ++k) {
        uint32_t head[2];
        if (sec->count - at < 2) {
            return fail(in, SIM_E_CORRUPT, "articulation %llu is cut short", (unsigned long long)k);
        }
        memcpy(head, sec->data + at * 4, sizeof head);
        at += 2;
        const uint32_t slot = head[0], count = head[1];
        if (slot >= w->e_used || !w->entities[slot].live ||
            w->entities[slot].kind != SIM_ENTITY_CHARACTER || !w->chars[slot].reduced ||
            w->chars[slot].artic != NULL || count > STATE_ARTIC_MAX_FLOATS ||
            sec->count - at < count) {
            return fail(in, SIM_E_CORRUPT, "articulation %llu names no REDUCED character",
                        (unsigned long long)k);
        }
        float f[STATE_ARTIC_MAX_FLOATS];
        memcpy(f, sec->data + at * 4, count * sizeof f[0]);
        at += count;
        int rc = sim__reduced_create(w, slot);
        if (rc != SIM_OK) {
            return fail(in, rc, "articulation %llu cannot be built: %s", (unsigned long long)k,
                        sim_strerror(rc));
        }
        rc = sim_artic_set_state(w->chars[slot].artic, f, count);
        if (rc != SIM_OK) {
            return fail(in, SIM_E_CORRUPT, "articulation %llu: %s", (unsigned long long)k,
                        sim_strerror(rc));
        }
    }
    if (sec->count - at > 1) {
        return fail(in, SIM_E_CORRUPT, "section 'artic' has %llu words left over",
                    (unsigned long long)(sec->count - at));
    }
    return SIM_OK;
}

static int load_into(state_in* in, const sim_world* img, const sim_library* lib,
                     const sim_allocator* alloc, sim_world** out) {
    sim_world_def def = img->def;
    def.allocator = alloc != NULL ? *alloc : sim_allocator_default();
    def.library = lib;
    if (def.cookie != SIM__DEF_COOKIE || sim_params_validate(&img->params) != SIM_OK) {
        return fail(in, SIM_E_CORRUPT, "the saved world's definition or parameters are invalid");
    }
    sim_world* w = NULL;
    int rc = sim_world_create(&def, &w);
    if (rc != SIM_OK) {
        return fail(in, rc, "the saved world's definition is refused: %s", sim_strerror(rc));
    }
    rc = sim_world_reserve(w, &img->reserved);
    if (rc == SIM_OK && memcmp(&w->reserved, &img->reserved, sizeof w->reserved) != 0) {
        rc = fail(in, SIM_E_CORRUPT, "the saved room does not match its limits");
    } else if (rc != SIM_OK) {
        rc = fail(in, rc, "no room for the saved world: %s", sim_strerror(rc));
    }
    size_t caps[SIM__ROW_COUNT];
    sim__world_row_caps(w, caps);
    if (rc == SIM_OK) {
        rc = check_counts(in, img, caps);
    }
    if (rc != SIM_OK) {
        sim_world_destroy(w);
        return rc;
    }
    // The saved struct, with this world's own arrays and allocator.
    const sim_world keep = *w;
    *w = *img;
#define STATE_KEEP(field, count, elem) w->field = keep.field;
    SIM__WORLD_ARRAYS(STATE_KEEP, unused, unused)
#undef STATE_KEEP
    w->alloc = keep.alloc;
    w->reports = keep.reports; // this world's, not a saved pointer
    w->def.allocator = keep.def.allocator;
    w->def.library = lib;
    w->reserved = keep.reserved;
    w->grid_cap = keep.grid_cap;
    w->pair_cap = keep.pair_cap;
    w->contact_cap = keep.contact_cap;
    w->soft_contact_cap = keep.soft_contact_cap;

#define STATE_FILL(field, used)                                                                    \
    if (rc == SIM_OK) {                                                                            \
        const state_section* s =                                                                   \
            take(in, #field, sizeof *w->field, at_most((used), caps[SIM__ROW_##field]), &rc);      \
        if (s != NULL) {                                                                           \
            memcpy(w->field, s->data, (size_t)s->count * s->elem);                                 \
        }                                                                                          \
    }
    STATE_ROWS(STATE_FILL, w)
#undef STATE_FILL
    // Pointers a state holds mean nothing here: none is freed or followed.
    for (uint32_t k = 0; k < caps[SIM__ROW_chars]; ++k) {
        w->chars[k].artic = NULL;
    }
    if (rc == SIM_OK) {
        rc = resolve_skeletons(in, w, lib);
    }
    if (rc == SIM_OK) {
        rc = check_entities(in, w);
    }
    if (rc == SIM_OK) {
        rc = load_articulations(in, w);
    }
    if (rc != SIM_OK) {
        sim_world_destroy(w);
        return rc;
    }
    *out = w;
    return SIM_OK;
}

int sim_world_load(const void* data, size_t len, const sim_library* lib, const sim_allocator* alloc,
                   sim_world** out, char* why, size_t why_cap) {
    if (why != NULL && why_cap > 0) {
        why[0] = '\0';
    }
    if (data == NULL || out == NULL) {
        return SIM_E_INVALID_ARG;
    }
    state_in local;
    state_in* in = &local;
    in->n = 0;
    in->why = why;
    in->why_cap = why_cap;
    int rc = parse(in, data, len);
    if (rc != SIM_OK) {
        return rc;
    }
    const state_section* ws = take(in, "world", SIM__SAVED_BYTES, 1, &rc);
    if (ws == NULL) {
        return rc;
    }
    sim_world img;
    memset(&img, 0, sizeof img);
    memcpy(&img, ws->data, SIM__SAVED_BYTES);
    return load_into(in, &img, lib, alloc, out);
}
