/*
 * entity.c: entity storage (spawn and despawn with stable, generation-checked
 * ids; each entity's particles, constraints, bodies and joints in contiguous
 * ranges, see world.h) and the read-only views of an entity.
 */
#include "rigid.h"
#include "vec.h"
#include "world.h"

#include <string.h>

#define SIM__GEN_MASK 0x1FFFFFu /* 21 bits: the wire id stays below 2^53 */

// ---------------------------------------------------------------------------
// Entity storage
// ---------------------------------------------------------------------------

sim__entity* sim__entity_get(const sim_world* w, sim_entity_id id) {
    if (id.index1 == 0 || id.index1 > w->e_used || id.generation == 0) {
        return NULL;
    }
    sim__entity* e = &w->entities[id.index1 - 1];
    return (e->live && e->generation == id.generation) ? e : NULL;
}

bool sim_entity_is_valid(const sim_world* w, sim_entity_id id) {
    return sim__entity_get(w, id) != NULL;
}

int sim__entity_begin(sim_world* w, sim_entity_kind kind, uint32_t particles, uint32_t dists,
                      uint32_t joints, uint32_t bodies, uint32_t bjoints, sim_entity_id* out_id,
                      sim__entity** out) {
    const sim_world_def* d = &w->def;
    // Compare with subtraction so huge counts cannot wrap around.
    if (particles > d->max_particles - w->p_count || dists > d->max_constraints - w->d_count ||
        joints > d->max_entities * SIM__JOINTS_PER_ENTITY - w->j_count ||
        bodies > d->max_bodies - w->b_count || bjoints > d->max_joints - w->bj_count) {
        return SIM_E_CAPACITY;
    }
    if (!sim__work_fits(w, particles, dists, joints, bodies, bjoints)) {
        return SIM_E_CAPACITY;
    }
    if (w->free_count == 0 && w->e_used >= d->max_entities) {
        return SIM_E_CAPACITY;
    }
    // Arrays are indexed by slot: a new slot needs room for e_used + 1.
    sim_counts need = {w->e_used + (w->free_count == 0 ? 1u : 0u),
                       w->p_count + particles,
                       w->d_count + dists,
                       w->j_count + joints,
                       w->b_count + bodies,
                       w->bj_count + bjoints,
                       w->sp_count, // not limits: reserve ignores them
                       w->artic_links};
    int rc = sim_world_reserve(w, &need); // grows only when short of room
    if (rc != SIM_OK) {
        return rc; // SIM_E_NOMEM, nothing changed
    }
    uint32_t slot;
    if (w->free_count > 0) {
        slot = w->free_slots[--w->free_count];
    } else {
        slot = w->e_used++;
        w->entities[slot].generation = 1;
    }
    sim__entity* e = &w->entities[slot];
    uint32_t gen = e->generation;
    memset(e, 0, sizeof *e);
    e->generation = gen;
    e->live = true;
    e->kind = kind;
    e->p_first = w->p_count;
    e->p_count = particles;
    e->d_first = w->d_count;
    e->d_count = dists;
    e->j_first = w->j_count;
    e->j_count = joints;
    e->b_first = w->b_count;
    e->b_count = bodies;
    e->bj_first = w->bj_count;
    e->bj_count = bjoints;
    if (w->reports != NULL && w->reports->lim != NULL) { // limit_hit.c: nothing known yet
        memset(&w->reports->lim[e->bj_first], 0, bjoints * sizeof *w->reports->lim);
    }
    w->p_count += particles;
    w->d_count += dists;
    w->j_count += joints;
    w->b_count += bodies;
    w->bj_count += bjoints;
    w->order[w->order_count++] = slot;
    w->topo_epoch++;

    out_id->index1 = slot + 1;
    out_id->generation = gen;
    *out = e;
    return SIM_OK;
}

void sim__particle_init(sim_world* w, uint32_t i, sim_vec3 p, float inv_mass, float radius) {
    w->pos[i] = p;
    w->prev[i] = p;
    w->vpre[i] = v3(0.0f, 0.0f, 0.0f);
    w->inv_mass[i] = inv_mass;
    w->radius[i] = radius;
    w->contact[i] = 0;
    w->push[i] = 0.0f;
    w->contact_n[i] = v3(0.0f, 0.0f, 0.0f);
    w->contact_body[i] = SIM__NO_BODY;
    sim__tie* t = &w->tie[i];
    memset(t, 0, sizeof *t);
    t->tether = SIM__NO_TIE;
    t->bone = SIM__NO_BONE;
}

void sim__dist_init(sim_world* w, const sim__entity* e, uint32_t k, uint32_t a, uint32_t b,
                    sim__dist_kind kind, float scale, float compliance) {
    sim__dist* c = &w->dist[k];
    const sim_vec3* base = w->pos + e->p_first;
    c->a = a;
    c->b = b;
    c->rest = v3_len(v3_sub(base[b], base[a])) * scale;
    c->compliance = compliance;
    c->lambda = 0.0f;
    c->kind = kind;
}

// Slides the tail of an array down over [first, first + count).
#define SIM__ERASE(arr, first, count, total)                                                       \
    memmove(&(arr)[(first)], &(arr)[(first) + (count)],                                            \
            ((total) - (first) - (count)) * sizeof((arr)[0]))

int sim_world_despawn(sim_world* w, sim_entity_id id) {
    sim__entity* e = sim__entity_get(w, id);
    if (e == NULL) {
        return SIM_E_STALE_ID;
    }
    // Drop its drags, keeping the others in order.
    uint32_t kept = 0;
    for (uint32_t i = 0; i < w->drag_count; ++i) {
        sim__drag* g = &w->drags[i];
        if (g->entity.index1 != id.index1) {
            w->drags[kept++] = *g;
        }
    }
    w->drag_count = kept;

    sim__sleep_despawned(w, e->b_first, e->b_count);
    sim__cloth_batches_drop(w, e);
    SIM__ERASE(w->pos, e->p_first, e->p_count, w->p_count);
    SIM__ERASE(w->prev, e->p_first, e->p_count, w->p_count);
    SIM__ERASE(w->vpre, e->p_first, e->p_count, w->p_count);
    SIM__ERASE(w->inv_mass, e->p_first, e->p_count, w->p_count);
    SIM__ERASE(w->radius, e->p_first, e->p_count, w->p_count);
    SIM__ERASE(w->contact_n, e->p_first, e->p_count, w->p_count);
    SIM__ERASE(w->push, e->p_first, e->p_count, w->p_count);
    SIM__ERASE(w->contact, e->p_first, e->p_count, w->p_count);
    SIM__ERASE(w->contact_body, e->p_first, e->p_count, w->p_count);
    SIM__ERASE(w->tie, e->p_first, e->p_count, w->p_count);
    SIM__ERASE(w->sm_rest, e->p_first, e->p_count, w->p_count);
    SIM__ERASE(w->dist, e->d_first, e->d_count, w->d_count);
    SIM__ERASE(w->joint, e->j_first, e->j_count, w->j_count);
    SIM__ERASE(w->body, e->b_first, e->b_count, w->b_count);
    SIM__ERASE(w->binfo, e->b_first, e->b_count, w->b_count);
    SIM__ERASE(w->bone, e->b_first, e->b_count, w->b_count);
    SIM__ERASE(w->bsleep, e->b_first, e->b_count, w->b_count);
    SIM__ERASE(w->aabb_lo, e->b_first, e->b_count, w->b_count);
    SIM__ERASE(w->aabb_hi, e->b_first, e->b_count, w->b_count);
    SIM__ERASE(w->bjoint, e->bj_first, e->bj_count, w->bj_count);
    if (w->reports != NULL && w->reports->lim != NULL) {
        SIM__ERASE(w->reports->lim, e->bj_first, e->bj_count, w->bj_count);
    }
    if (e->kind == SIM_ENTITY_SOFTBODY) {
        w->sp_count -= e->p_count;
        w->soft_bodies--;
    }
    w->p_count -= e->p_count;
    w->d_count -= e->d_count;
    w->j_count -= e->j_count;
    w->b_count -= e->b_count;
    w->bj_count -= e->bj_count;
    // The broadphase refers to bodies by index: it is stale until the next
    // tick rebuilds it, so drop it now.
    w->pair_count = 0;
    w->island_count = 0;
    w->grid_count = 0;
    memset(w->grid_head, 0xff, SIM__GRID_BUCKETS * sizeof *w->grid_head);

    // Entities stored after this one (the order is the storage order) slide
    // down by its sizes in every array.
    uint32_t slot = id.index1 - 1;
    uint32_t at = 0;
    bool after = false;
    for (uint32_t i = 0; i < w->order_count; ++i) {
        sim__entity* o = &w->entities[w->order[i]];
        if (w->order[i] == slot) {
            after = true;
            continue;
        }
        if (after) {
            o->p_first -= e->p_count;
            o->d_first -= e->d_count;
            o->j_first -= e->j_count;
            o->b_first -= e->b_count;
            o->bj_first -= e->bj_count;
        }
        w->order[at++] = w->order[i];
    }
    w->order_count = at;

    e->live = false;
    uint32_t gen = (e->generation + 1) & SIM__GEN_MASK;
    e->generation = gen == 0 ? 1 : gen;
    w->free_slots[w->free_count++] = slot;
    w->topo_epoch++;
    if (e->kind == SIM_ENTITY_CHARACTER) {
        sim__garments_despawn(w, id); // what it wore goes with it
        sim__reduced_destroy(w, slot);
    }
    return SIM_OK;
}

// ---------------------------------------------------------------------------
// Inspection
// ---------------------------------------------------------------------------

int sim_entity_get_view(const sim_world* w, sim_entity_id id, sim_entity_view* out) {
    const sim__entity* e = sim__entity_get(w, id);
    if (e == NULL) {
        return SIM_E_STALE_ID;
    }
    out->id = id;
    out->kind = e->kind;
    out->particle_count = e->p_count;
    out->pos = w->pos + e->p_first;
    out->prev = w->prev + e->p_first;
    out->inv_mass = w->inv_mass + e->p_first;
    out->radius = w->radius + e->p_first;
    out->names = e->names;
    out->cols = e->cols;
    out->rows = e->rows;
    out->stick_count = e->stick_count;
    out->garment = e->garment;
    out->wearer = e->wearer;
    out->wrap = e->wrap;
    out->topology_version = e->topo_version;
    out->tear_ratio = e->tear_ratio;
    out->long_range = e->tethered;
    out->self_collision = e->self_collision;
    out->thickness = e->thickness;
    return SIM_OK;
}

uint32_t sim_world_entity_count(const sim_world* w) {
    return w->order_count;
}

sim_entity_id sim_world_entity_at(const sim_world* w, uint32_t i) {
    sim_entity_id id = {0, 0};
    if (i < w->order_count) {
        uint32_t slot = w->order[i];
        id.index1 = slot + 1;
        id.generation = w->entities[slot].generation;
    }
    return id;
}

int sim_entity_copy_sticks(const sim_world* w, sim_entity_id id, uint32_t* pairs, uint32_t cap) {
    const sim__entity* e = sim__entity_get(w, id);
    if (e == NULL) {
        return SIM_E_STALE_ID;
    }
    if (e->kind == SIM_ENTITY_SOFTBODY) {
        return (int)sim__softbody_copy_sticks(w, id.index1 - 1, pairs, cap);
    }
    uint32_t n = 0;
    const sim__dist* d = w->dist + e->d_first;
    for (uint32_t j = 0; j < e->d_count && n < cap; ++j) {
        if (d[j].kind == SIM__DIST_EQUAL) {
            pairs[2 * n] = d[j].a;
            pairs[2 * n + 1] = d[j].b;
            n++;
        }
    }
    return (int)n;
}
