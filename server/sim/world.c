/*
 * world.c: world lifecycle, the fixed-step integrator, entity storage
 * (spawn/despawn with stable ids), parameters and inspection.
 *
 * It owns every array of a world; builders (rope.c, cloth.c, ragdoll.c) only
 * fill the ranges sim__entity_begin() hands them, constraints.c and collide.c
 * only project. Nothing here does I/O, and nothing after sim_world_create()
 * allocates.
 */
#include "world.h"

#include "rigid.h"
#include "vec.h"

#include <stdlib.h>
#include <string.h>

// Passes of the joint-limit clean-up after each substep's last collision
// projection (see project_joint_limits()).
#define SIM__JOINT_CLEANUP_PASSES 4
// Position passes over the rigid joints and contacts per substep. XPBD
// needs one with many substeps; with the 4 substeps we run, a second pass is
// what lets a ragdoll lie still (one pass: bones jitter at 1-8 rad/s).
// Contact-and-joint passes per rigid substep, then one more joint pass.
// This keeps hinges within 2° of their limits and joints within a few
// millimetres through 5 m falls onto stairs (test_character); fewer passes
// do not.
#define SIM__RIGID_PASSES 3
// Rigid bodies take at least SIM__RIGID_MIN_SUBSTEPS per tick (the XPBD
// rigid solver needs them whatever the particles use), more when a body
// moves fast: enough that none travels more than SIM__RIGID_MAX_TRAVEL
// (m) in one, up to SIM__RIGID_MAX_SUBSTEPS.
#define SIM__RIGID_MIN_SUBSTEPS 4
#define SIM__RIGID_MAX_SUBSTEPS 16
#define SIM__RIGID_MAX_TRAVEL   0.0125f
// Solver work of one rigid body or joint per rigid substep, in particle
// projections (about 10 ns each): a pile of 300 humanoids, the worst case
// ragdoll-bench measures, costs about 1 µs per body or joint and rigid
// substep (contacts and joint passes together).
#define SIM__RIGID_WORK 100u
#define SIM__GEN_MASK   0x1FFFFFu /* 21 bits: the wire id stays below 2^53 */

// Compliance of the drag constraint, m/N. A 1 kg particle lags its target by
// about 1 mm per 10 N of load, stiff enough to throw a ragdoll by one hand.
#define SIM__DRAG_COMPLIANCE 1.0e-4f

// ---------------------------------------------------------------------------
// Errors and helpers
// ---------------------------------------------------------------------------

const char* sim_strerror(int err) {
    switch (err) {
    case SIM_OK:
        return "success";
#define SIM__ERR_MSG(name, value, msg)                                                             \
    case SIM_E_##name:                                                                             \
        return msg;
        SIM_ERRNO_MAP(SIM__ERR_MSG)
#undef SIM__ERR_MSG
    default:
        return "unknown error";
    }
}

const char* sim_err_name(int err) {
    switch (err) {
    case SIM_OK:
        return "OK";
#define SIM__ERR_NAME(name, value, msg)                                                            \
    case SIM_E_##name:                                                                             \
        return #name;
        SIM_ERRNO_MAP(SIM__ERR_NAME)
#undef SIM__ERR_NAME
    default:
        return "UNKNOWN";
    }
}

bool sim_is_finite(float f) {
    return isfinite(f) != 0;
}

bool sim_vec3_is_finite(sim_vec3 v) {
    return sim_is_finite(v.x) && sim_is_finite(v.y) && sim_is_finite(v.z);
}

static void* default_alloc(void* ctx, size_t size, size_t align) {
    (void)ctx;
    // aligned_alloc wants size to be a multiple of the alignment.
    size_t rounded = (size + align - 1) & ~(align - 1);
    return aligned_alloc(align, rounded == 0 ? align : rounded);
}

static void default_free(void* ctx, void* p, size_t size) {
    (void)ctx;
    (void)size;
    free(p);
}

sim_allocator sim_allocator_default(void) {
    sim_allocator a = {default_alloc, default_free, NULL};
    return a;
}

uint64_t sim_entity_id_store(sim_entity_id id) {
    return ((uint64_t)(id.generation & SIM__GEN_MASK) << 32) | id.index1;
}

sim_entity_id sim_entity_id_load(uint64_t v) {
    sim_entity_id id;
    id.index1 = (uint32_t)(v & 0xFFFFFFFFu);
    uint64_t gen = v >> 32;
    // A generation no slot can have (0 or too wide) makes the id invalid.
    id.generation = gen > SIM__GEN_MASK ? 0 : (uint32_t)gen;
    return id;
}

const char* sim_entity_kind_name(sim_entity_kind kind) {
    switch (kind) {
    case SIM_ENTITY_ROPE:
        return "rope";
    case SIM_ENTITY_CLOTH:
        return "cloth";
    case SIM_ENTITY_RAGDOLL:
        return "ragdoll";
    case SIM_ENTITY_CHARACTER:
        return "character";
    case SIM_ENTITY_BALL:
        return "ball";
    }
    return "unknown";
}

// ---------------------------------------------------------------------------
// Parameters and defs
// ---------------------------------------------------------------------------

static bool in_unit(float f) {
    return f >= 0.0f && f <= 1.0f;
}

int sim_params_validate(const sim_params* p) {
    if (p == NULL) {
        return SIM_E_INVALID_ARG;
    }
    if (!sim_vec3_is_finite(p->gravity) || !sim_is_finite(p->damping) ||
        !sim_is_finite(p->bounciness) || !sim_is_finite(p->friction)) {
        return SIM_E_NOT_FINITE;
    }
    if (fabsf(p->gravity.x) > SIM_MAX_GRAVITY || fabsf(p->gravity.y) > SIM_MAX_GRAVITY ||
        fabsf(p->gravity.z) > SIM_MAX_GRAVITY) {
        return SIM_E_OUT_OF_RANGE;
    }
    if (!in_unit(p->damping) || !in_unit(p->bounciness) || !in_unit(p->friction)) {
        return SIM_E_OUT_OF_RANGE;
    }
    if (p->iterations < 1 || p->iterations > SIM_MAX_ITERATIONS || p->substeps < 1 ||
        p->substeps > SIM_MAX_SUBSTEPS) {
        return SIM_E_OUT_OF_RANGE;
    }
    return SIM_OK;
}

sim_world_def sim_world_def_default(void) {
    sim_world_def d;
    memset(&d, 0, sizeof d);
    d.params.gravity = v3(0.0f, -9.81f, 0.0f);
    d.params.damping = 0.99f;
    d.params.iterations = 8;
    d.params.substeps = 1;
    d.params.bounciness = 0.3f;
    d.params.friction = 0.5f;
    d.dt = 1.0f / 60.0f;
    d.ground = true;
    d.half_extent = 1000.0f;
    d.max_particles = 32768;
    d.max_constraints = 262144;
    d.max_entities = 256;
    d.max_boxes = 64;
    d.max_drags = 64;
    d.max_solver_work = 1000000;
    d.max_bodies = 2048;
    d.max_joints = 2048;
    d.library = NULL;
    d.allocator = sim_allocator_default();
    d.cookie = SIM__DEF_COOKIE;
    return d;
}

// ---------------------------------------------------------------------------
// Lifecycle
// ---------------------------------------------------------------------------

static void* world_alloc(sim_world* w, size_t count, size_t elem) {
    if (count == 0) {
        count = 1;
    }
    void* p = w->alloc.alloc(w->alloc.ctx, count * elem, 64);
    if (p != NULL) {
        memset(p, 0, count * elem);
    }
    return p;
}

static void world_free(sim_world* w, void* p, size_t count, size_t elem) {
    if (p != NULL) {
        w->alloc.free(w->alloc.ctx, p, (count == 0 ? 1 : count) * elem);
    }
}

// The arrays of a world and their element sizes, so create and destroy walk
// one list instead of two that could drift apart.
#define SIM__WORLD_ARRAYS(XX, d)                                                                   \
    XX(pos, (d).max_particles, sizeof(sim_vec3))                                                   \
    XX(prev, (d).max_particles, sizeof(sim_vec3))                                                  \
    XX(vpre, (d).max_particles, sizeof(sim_vec3))                                                  \
    XX(inv_mass, (d).max_particles, sizeof(float))                                                 \
    XX(radius, (d).max_particles, sizeof(float))                                                   \
    XX(contact_n, (d).max_particles, sizeof(sim_vec3))                                             \
    XX(push, (d).max_particles, sizeof(float))                                                     \
    XX(contact, (d).max_particles, sizeof(uint8_t))                                                \
    XX(dist, (d).max_constraints, sizeof(sim__dist))                                               \
    XX(joint, (d).max_entities* SIM__JOINTS_PER_ENTITY, sizeof(sim__joint))                        \
    XX(events, SIM__MAX_EVENTS, sizeof(sim_event))                                                 \
    XX(body, (d).max_bodies, sizeof(sim__body))                                                    \
    XX(binfo, (d).max_bodies, sizeof(sim__body_info))                                              \
    XX(bjoint, (d).max_joints, sizeof(sim__bjoint))                                                \
    XX(chars, (d).max_entities, sizeof(sim__char))                                                 \
    XX(grid_head, SIM__GRID_BUCKETS, sizeof(int32_t))                                              \
    XX(grid, (size_t)(d).max_bodies* SIM__CELLS_PER_BODY, sizeof(sim__grid_entry))                 \
    XX(aabb_lo, (d).max_bodies, sizeof(sim_vec3))                                                  \
    XX(aabb_hi, (d).max_bodies, sizeof(sim_vec3))                                                  \
    XX(pairs, (size_t)(d).max_bodies* SIM__PAIRS_PER_BODY, sizeof(sim__pair))                      \
    XX(contacts, (size_t)(d).max_bodies*(SIM__CONTACTS_PER_BODY + SIM__PAIRS_PER_BODY),            \
       sizeof(sim__contact))                                                                       \
    XX(entities, (d).max_entities, sizeof(sim__entity))                                            \
    XX(free_slots, (d).max_entities, sizeof(uint32_t))                                             \
    XX(order, (d).max_entities, sizeof(uint32_t))                                                  \
    XX(boxes, (d).max_boxes, sizeof(sim_box))                                                      \
    XX(drags, (d).max_drags, sizeof(sim__drag))

int sim_world_create(const sim_world_def* def, sim_world** out) {
    if (def == NULL || out == NULL || def->cookie != SIM__DEF_COOKIE ||
        def->allocator.alloc == NULL || def->allocator.free == NULL) {
        return SIM_E_INVALID_ARG;
    }
    int rc = sim_params_validate(&def->params);
    if (rc != SIM_OK) {
        return rc;
    }
    if (!sim_is_finite(def->dt) || !sim_is_finite(def->half_extent)) {
        return SIM_E_NOT_FINITE;
    }
    if (def->dt <= 0.0f || def->dt > 1.0f || def->half_extent <= 0.0f || def->max_particles == 0 ||
        def->max_particles > (1u << 24) || def->max_entities == 0 ||
        def->max_entities > (1u << 20) || def->max_constraints > (1u << 26) ||
        def->max_bodies > (1u << 20) || def->max_joints > (1u << 20)) {
        return SIM_E_OUT_OF_RANGE;
    }

    sim_world* w = def->allocator.alloc(def->allocator.ctx, sizeof *w, 64);
    if (w == NULL) {
        return SIM_E_NOMEM;
    }
    memset(w, 0, sizeof *w);
    w->alloc = def->allocator;
    w->def = *def;
    w->params = def->params;
    w->dt = def->dt;

    bool ok = true;
#define SIM__ALLOC(field, count, elem)                                                             \
    w->field = world_alloc(w, (count), (elem));                                                    \
    ok = ok && w->field != NULL;
    SIM__WORLD_ARRAYS(SIM__ALLOC, w->def)
#undef SIM__ALLOC
    if (!ok) {
        sim_world_destroy(w);
        return SIM_E_NOMEM;
    }
    w->grid_cap = w->def.max_bodies * SIM__CELLS_PER_BODY;
    w->pair_cap = w->def.max_bodies * SIM__PAIRS_PER_BODY;
    w->contact_cap = w->def.max_bodies * (SIM__CONTACTS_PER_BODY + SIM__PAIRS_PER_BODY);
    memset(w->grid_head, 0xff, SIM__GRID_BUCKETS * sizeof *w->grid_head);
    *out = w;
    return SIM_OK;
}

void sim_world_destroy(sim_world* w) {
    if (w == NULL) {
        return;
    }
#define SIM__FREE(field, count, elem) world_free(w, w->field, (count), (elem));
    SIM__WORLD_ARRAYS(SIM__FREE, w->def)
#undef SIM__FREE
    sim_allocator a = w->alloc;
    a.free(a.ctx, w, sizeof *w);
}

uint64_t sim_world_tick(const sim_world* w) {
    return w->tick;
}

float sim_world_dt(const sim_world* w) {
    return w->dt;
}

sim_params sim_world_params(const sim_world* w) {
    return w->params;
}

// Solver work per tick for given totals and parameters (max_solver_work).
// A rigid body or joint costs SIM__RIGID_WORK per rigid substep; there are
// at least SIM__RIGID_MIN_SUBSTEPS of those per tick.
static uint64_t solver_work(uint32_t dists, uint32_t joints, uint32_t particles, uint32_t bodies,
                            uint32_t bjoints, const sim_params* p) {
    uint64_t split = (SIM__RIGID_MIN_SUBSTEPS + (uint64_t)p->substeps - 1) / (uint64_t)p->substeps;
    return ((uint64_t)dists + joints + particles) * (uint64_t)p->iterations *
               (uint64_t)p->substeps +
           SIM__RIGID_WORK * ((uint64_t)bodies + bjoints) * (uint64_t)p->substeps * split;
}

static bool within_budget(const sim_world* w, uint64_t work) {
    return w->def.max_solver_work == 0 || work <= w->def.max_solver_work;
}

uint64_t sim_world_solver_work(const sim_world* w) {
    return solver_work(w->d_count, w->j_count, w->p_count, w->b_count, w->bj_count, &w->params);
}

uint64_t sim_world_solver_work_with(const sim_world* w, const sim_params* p) {
    return solver_work(w->d_count, w->j_count, w->p_count, w->b_count, w->bj_count, p);
}

int sim_world_set_params(sim_world* w, const sim_params* p) {
    int rc = sim_params_validate(p);
    if (rc != SIM_OK) {
        return rc;
    }
    if (!within_budget(
            w, solver_work(w->d_count, w->j_count, w->p_count, w->b_count, w->bj_count, p))) {
        return SIM_E_CAPACITY;
    }
    if (p->substeps != w->params.substeps) {
        // Velocity is implied by x - x_prev over one substep of length h, so a
        // new h must rescale that displacement or every particle would change
        // speed by the ratio of the substep lengths.
        float ratio = (float)w->params.substeps / (float)p->substeps;
        for (uint32_t i = 0; i < w->p_count; ++i) {
            w->prev[i] = v3_sub(w->pos[i], v3_scale(v3_sub(w->pos[i], w->prev[i]), ratio));
        }
    }
    w->params = *p;
    sim__characters_wake_all(w); // New gravity or friction moves what rests.
    return SIM_OK;
}

float sim_world_half_extent(const sim_world* w) {
    return w->def.half_extent;
}

bool sim_world_contains(const sim_world* w, sim_vec3 v) {
    float e = w->def.half_extent;
    return sim_vec3_is_finite(v) && fabsf(v.x) <= e && fabsf(v.y) <= e && fabsf(v.z) <= e;
}

// ---------------------------------------------------------------------------
// Static colliders
// ---------------------------------------------------------------------------

int sim_world_add_box(sim_world* w, sim_box box) {
    if (!sim_vec3_is_finite(box.center) || !sim_vec3_is_finite(box.half_extents)) {
        return SIM_E_NOT_FINITE;
    }
    float e = w->def.half_extent;
    if (!sim_world_contains(w, box.center) || box.half_extents.x <= 0.0f ||
        box.half_extents.y <= 0.0f || box.half_extents.z <= 0.0f || box.half_extents.x > e ||
        box.half_extents.y > e || box.half_extents.z > e) {
        return SIM_E_OUT_OF_RANGE;
    }
    if (w->box_count >= w->def.max_boxes) {
        return SIM_E_CAPACITY;
    }
    w->boxes[w->box_count++] = box;
    sim__characters_wake_all(w); // It may have appeared in something asleep.
    return SIM_OK;
}

uint32_t sim_world_box_count(const sim_world* w) {
    return w->box_count;
}

const sim_box* sim_world_boxes(const sim_world* w) {
    return w->boxes;
}

bool sim_world_has_ground(const sim_world* w) {
    return w->def.ground;
}

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
    if (!within_budget(w,
                       solver_work(w->d_count + dists, w->j_count + joints, w->p_count + particles,
                                   w->b_count + bodies, w->bj_count + bjoints, &w->params))) {
        return SIM_E_CAPACITY;
    }
    uint32_t slot;
    if (w->free_count > 0) {
        slot = w->free_slots[--w->free_count];
    } else if (w->e_used < d->max_entities) {
        slot = w->e_used++;
        w->entities[slot].generation = 1;
    } else {
        return SIM_E_CAPACITY;
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

    SIM__ERASE(w->pos, e->p_first, e->p_count, w->p_count);
    SIM__ERASE(w->prev, e->p_first, e->p_count, w->p_count);
    SIM__ERASE(w->vpre, e->p_first, e->p_count, w->p_count);
    SIM__ERASE(w->inv_mass, e->p_first, e->p_count, w->p_count);
    SIM__ERASE(w->radius, e->p_first, e->p_count, w->p_count);
    SIM__ERASE(w->contact_n, e->p_first, e->p_count, w->p_count);
    SIM__ERASE(w->push, e->p_first, e->p_count, w->p_count);
    SIM__ERASE(w->contact, e->p_first, e->p_count, w->p_count);
    SIM__ERASE(w->dist, e->d_first, e->d_count, w->d_count);
    SIM__ERASE(w->joint, e->j_first, e->j_count, w->j_count);
    SIM__ERASE(w->body, e->b_first, e->b_count, w->b_count);
    SIM__ERASE(w->binfo, e->b_first, e->b_count, w->b_count);
    SIM__ERASE(w->bjoint, e->bj_first, e->bj_count, w->bj_count);
    w->p_count -= e->p_count;
    w->d_count -= e->d_count;
    w->j_count -= e->j_count;
    w->b_count -= e->b_count;
    w->bj_count -= e->bj_count;
    // The broadphase refers to bodies by index: it is stale until the next
    // tick rebuilds it, so drop it now.
    w->pair_count = 0;
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
    sim__characters_wake_all(w); // What rested on it must fall.
    return SIM_OK;
}

// ---------------------------------------------------------------------------
// Interaction
// ---------------------------------------------------------------------------

static int particle_lookup(const sim_world* w, sim_entity_id id, uint32_t particle,
                           sim__entity** out) {
    sim__entity* e = sim__entity_get(w, id);
    if (e == NULL) {
        return SIM_E_STALE_ID;
    }
    if (particle >= e->p_count) {
        return SIM_E_BAD_INDEX;
    }
    *out = e;
    return SIM_OK;
}

int sim_entity_apply_impulse(sim_world* w, sim_entity_id id, uint32_t particle, sim_vec3 impulse) {
    sim__entity* e;
    int rc = particle_lookup(w, id, particle, &e);
    if (rc != SIM_OK) {
        return rc;
    }
    if (!sim_vec3_is_finite(impulse)) {
        return SIM_E_NOT_FINITE;
    }
    if (fabsf(impulse.x) > SIM_MAX_IMPULSE || fabsf(impulse.y) > SIM_MAX_IMPULSE ||
        fabsf(impulse.z) > SIM_MAX_IMPULSE) {
        return SIM_E_OUT_OF_RANGE;
    }
    uint32_t i = e->p_first + particle;
    float h = w->dt / (float)w->params.substeps;
    // Δv = J·w; in Verlet form the previous position moves back by Δv·h.
    sim_vec3 dv = v3_scale(impulse, w->inv_mass[i]);
    w->prev[i] = v3_sub(w->prev[i], v3_scale(dv, h));
    return SIM_OK;
}

int sim_entity_drag(sim_world* w, sim_entity_id id, uint32_t particle, sim_vec3 target) {
    sim__entity* e;
    int rc = particle_lookup(w, id, particle, &e);
    if (rc != SIM_OK) {
        return rc;
    }
    if (!sim_vec3_is_finite(target)) {
        return SIM_E_NOT_FINITE;
    }
    if (!sim_world_contains(w, target)) {
        return SIM_E_OUT_OF_RANGE;
    }
    for (uint32_t i = 0; i < w->drag_count; ++i) {
        sim__drag* g = &w->drags[i];
        if (g->entity.index1 == id.index1 && g->particle == particle) {
            g->target = target;
            return SIM_OK;
        }
    }
    if (w->drag_count >= w->def.max_drags) {
        return SIM_E_CAPACITY;
    }
    sim__drag* g = &w->drags[w->drag_count++];
    g->entity = id;
    g->particle = particle;
    g->target = target;
    g->lambda = 0.0f;
    return SIM_OK;
}

int sim_entity_release(sim_world* w, sim_entity_id id, uint32_t particle) {
    sim__entity* e;
    int rc = particle_lookup(w, id, particle, &e);
    if (rc != SIM_OK) {
        return rc;
    }
    for (uint32_t i = 0; i < w->drag_count; ++i) {
        sim__drag* g = &w->drags[i];
        if (g->entity.index1 == id.index1 && g->particle == particle) {
            memmove(g, g + 1, (w->drag_count - i - 1) * sizeof *g);
            w->drag_count--;
            break;
        }
    }
    return SIM_OK;
}

// Projects the drags: a zero-rest-length XPBD constraint toward the target
// (the static "other end" has inverse mass 0). A pinned particle follows the
// target kinematically, with prev set too so it carries no velocity kick.
static void project_drags(sim_world* w, float inv_h2) {
    const float alpha = SIM__DRAG_COMPLIANCE * inv_h2;
    for (uint32_t k = 0; k < w->drag_count; ++k) {
        sim__drag* g = &w->drags[k];
        const sim__entity* e = sim__entity_get(w, g->entity);
        uint32_t i = e->p_first + g->particle;
        float wi = w->inv_mass[i];
        if (wi == 0.0f) {
            w->pos[i] = g->target;
            w->prev[i] = g->target;
            continue;
        }
        sim_vec3 d = v3_sub(g->target, w->pos[i]);
        float c = v3_len(d);
        if (c < 1e-9f) {
            continue;
        }
        float dl = (c - alpha * g->lambda) / (wi + alpha);
        g->lambda += dl;
        w->pos[i] = v3_add(w->pos[i], v3_scale(d, wi * dl / c));
    }
}

// ---------------------------------------------------------------------------
// Events
// ---------------------------------------------------------------------------

void sim__push_event(sim_world* w, sim_event_kind kind, sim_entity_id id, sim_char_state state,
                     uint64_t tick) {
    if (w->event_count == SIM__MAX_EVENTS) {
        // Nobody drained: the oldest goes.
        w->event_head = (w->event_head + 1) % SIM__MAX_EVENTS;
        w->event_count--;
    }
    sim_event* e = &w->events[(w->event_head + w->event_count) % SIM__MAX_EVENTS];
    e->kind = kind;
    e->entity = id;
    e->state = state;
    e->tick = tick;
    w->event_count++;
}

uint32_t sim_world_drain_events(sim_world* w, sim_event* out, uint32_t cap) {
    uint32_t n = 0;
    while (n < cap && w->event_count > 0) {
        out[n++] = w->events[w->event_head];
        w->event_head = (w->event_head + 1) % SIM__MAX_EVENTS;
        w->event_count--;
    }
    return n;
}

// True when the entity's particles are finite and not absurdly far away.
static bool entity_is_sane(const sim_world* w, const sim__entity* e) {
    const float far = 10.0f * w->def.half_extent;
    for (uint32_t i = e->p_first; i < e->p_first + e->p_count; ++i) {
        sim_vec3 p = w->pos[i], q = w->prev[i];
        // Written so that NaN fails every comparison and so the test.
        if (!(fabsf(p.x) <= far && fabsf(p.y) <= far && fabsf(p.z) <= far && fabsf(q.x) <= far &&
              fabsf(q.y) <= far && fabsf(q.z) <= far)) {
            return false;
        }
    }
    for (uint32_t i = e->b_first; i < e->b_first + e->b_count; ++i) {
        const sim__body* b = &w->body[i];
        if (!(fabsf(b->x.x) <= far && fabsf(b->x.y) <= far && fabsf(b->x.z) <= far) ||
            !sim_is_finite(b->q.x) || !sim_is_finite(b->q.y) || !sim_is_finite(b->q.z) ||
            !sim_is_finite(b->q.w) || !sim_vec3_is_finite(b->v) || !sim_vec3_is_finite(b->w)) {
            return false;
        }
    }
    return true;
}

// Removes entities that went non-finite or flew away, so one bad body cannot
// poison the rest of the world (DESIGN.md "Reliability").
static void quarantine(sim_world* w) {
    for (uint32_t k = 0; k < w->order_count;) {
        uint32_t slot = w->order[k];
        const sim__entity* e = &w->entities[slot];
        if (entity_is_sane(w, e)) {
            k++;
            continue;
        }
        sim_entity_id id = {slot + 1, e->generation};
        sim_world_despawn(w, id); // the next entity slides into position k
        sim__push_event(w, SIM_EVENT_UNSTABLE, id, SIM_CHAR_ANIMATED, w->tick);
    }
}

// ---------------------------------------------------------------------------
// Stepping
// ---------------------------------------------------------------------------

// Position Verlet with damping (Jakobsen 2001, eq. 1 with a drag factor):
// x' = x + (x - x_prev)·damping + g·h². Pinned particles (w = 0) stay put.
static void integrate(sim_world* w, sim_vec3 g_h2) {
    const float damping = w->params.damping;
    for (uint32_t i = 0; i < w->p_count; ++i) {
        if (w->inv_mass[i] == 0.0f) {
            w->vpre[i] = v3(0.0f, 0.0f, 0.0f);
            continue;
        }
        sim_vec3 x = w->pos[i];
        sim_vec3 v = v3_scale(v3_sub(x, w->prev[i]), damping);
        sim_vec3 next = v3_add(v3_add(x, v), g_h2);
        w->prev[i] = x;
        w->pos[i] = next;
        w->vpre[i] = v3_sub(next, x);
    }
}

// A few more passes over the joint limits alone, after the last collision
// push-out. Without them the push-out has the last word, and a limb slammed
// by an impact stays bent out of its hinge plane by 10-30° for a few ticks.
// The passes are mass-weighted like every other projection, so they conserve
// momentum: a body pressed into a collider by a joint limit does not creep.
// A hand or foot they leave slightly inside a collider is pushed out next
// substep, and that push is removed from its velocity (collide.c), so no
// energy comes from it. Measured by test_sim_ragdoll_drop_keeps_joint_limits
// and test_sim_ragdoll_comes_to_rest (1 pass: 1.5° out of plane; 4: 0.5°).
static void project_joint_limits(sim_world* w) {
    for (uint32_t k = 0; k < w->order_count; ++k) {
        const sim__entity* e = &w->entities[w->order[k]];
        sim_vec3* pos = w->pos + e->p_first;
        const float* im = w->inv_mass + e->p_first;
        const sim__joint* jt = w->joint + e->j_first;
        for (int pass = 0; pass < SIM__JOINT_CLEANUP_PASSES; ++pass) {
            for (uint32_t j = 0; j < e->j_count; ++j) {
                sim__project_joint(pos, im, &jt[j]);
            }
        }
    }
}

static void project_entities(sim_world* w, float inv_h2) {
    for (uint32_t k = 0; k < w->order_count; ++k) {
        const sim__entity* e = &w->entities[w->order[k]];
        sim_vec3* pos = w->pos + e->p_first;
        const float* im = w->inv_mass + e->p_first;
        sim__dist* d = w->dist + e->d_first;
        for (uint32_t j = 0; j < e->d_count; ++j) {
            sim__project_dist(pos, im, &d[j], inv_h2);
        }
        const sim__joint* jt = w->joint + e->j_first;
        for (uint32_t j = 0; j < e->j_count; ++j) {
            sim__project_joint(pos, im, &jt[j]);
        }
    }
}

// Rigid bodies, one substep (Müller et al. 2020, algorithm 2): integrate,
// solve joints then contacts once, derive velocities, velocity pass.
static void integrate_bodies(sim_world* w, float h) {
    const sim_vec3 g_h = v3_scale(w->params.gravity, h);
    for (uint32_t i = 0; i < w->b_count; ++i) {
        sim__body* b = &w->body[i];
        b->x_prev = b->x;
        b->q_prev = b->q;
        // Kinematic bodies carry the velocity their animation gave them;
        // only dynamic ones feel gravity.
        if (b->inv_mass > 0.0f) {
            b->v = v3_add(b->v, g_h);
        }
        b->v_pre = b->v;
        b->w_pre = b->w;
        b->x = v3_add(b->x, v3_scale(b->v, h));
        b->q = q_integrate(b->q, b->w, h);
        sim__body_update_inertia(b);
    }
}

// Joints for one pass of a substep. The drives are compliant constraints
// whose λ is not carried between passes, so they run in the first pass
// only: a second pass would double their stiffness.
static void solve_joints(sim_world* w, float h, bool drives) {
    for (uint32_t k = 0; k < w->order_count; ++k) {
        const sim__entity* e = &w->entities[w->order[k]];
        sim__body* bodies = w->body + e->b_first;
        const sim__bjoint* joints = w->bjoint + e->bj_first;
        for (uint32_t j = 0; j < e->bj_count; ++j) {
            sim__body* p = &bodies[joints[j].parent];
            sim__body* c = &bodies[joints[j].child];
            if (p->inv_mass > 0.0f || c->inv_mass > 0.0f) {
                sim__joint_solve(p, c, &joints[j], h, drives);
            }
        }
    }
}

static void update_velocities(sim_world* w, float h) {
    for (uint32_t i = 0; i < w->b_count; ++i) {
        sim__body* b = &w->body[i];
        if (b->inv_mass == 0.0f) {
            continue;
        }
        b->v = v3_scale(v3_sub(b->x, b->x_prev), 1.0f / h);
        // ω from the orientation change (eq. 23), the short way round.
        sim_quat dq = q_mul(b->q, q_conj(b->q_prev));
        sim_vec3 wv = v3_scale(v3(dq.x, dq.y, dq.z), 2.0f / h);
        b->w = dq.w >= 0.0f ? wv : v3_scale(wv, -1.0f);
    }
}

static void damp_joints(sim_world* w, float h) {
    for (uint32_t k = 0; k < w->order_count; ++k) {
        const sim__entity* e = &w->entities[w->order[k]];
        sim__body* bodies = w->body + e->b_first;
        const sim__bjoint* joints = w->bjoint + e->bj_first;
        for (uint32_t j = 0; j < e->bj_count; ++j) {
            sim__joint_damp(&bodies[joints[j].parent], &bodies[joints[j].child], &joints[j], h);
        }
    }
}

// How many rigid substeps each of the world's substeps is split into this
// tick: at least enough for SIM__RIGID_MIN_SUBSTEPS per tick, and enough
// that no surface closes on another (or on the ground or a box) by more
// than SIM__RIGID_MAX_TRAVEL in one (a hit at speed is caught before it sinks deep, and the joints
// of what it hits keep up), within SIM__RIGID_MAX_SUBSTEPS per tick and the world's solver budget.
// Bodies are cheap next to their joints' error, so only fast ticks pay.
static int rigid_split(const sim_world* w, int substeps) {
    // Only what may hit something this tick counts: bodies falling or
    // tumbling together through the air need no finer steps.
    const float fastest = w->closing_speed;
    const int lo = (SIM__RIGID_MIN_SUBSTEPS + substeps - 1) / substeps;
    const int hi = (SIM__RIGID_MAX_SUBSTEPS + substeps - 1) / substeps;
    float need = ceilf(fastest * w->dt / (SIM__RIGID_MAX_TRAVEL * (float)substeps));
    int split = need >= (float)hi ? hi : (need <= (float)lo ? lo : (int)need);
    if (split > lo && w->def.max_solver_work != 0) {
        // The budget counts `lo` splits; more must fit in what is left.
        uint64_t base = sim_world_solver_work(w);
        uint64_t one = SIM__RIGID_WORK * ((uint64_t)w->b_count + w->bj_count) * (uint64_t)substeps;
        while (split > lo && base + one * (uint64_t)(split - lo) > w->def.max_solver_work) {
            split--;
        }
    }
    return split;
}

// One substep of the rigid bodies (Müller et al. 2020, Algorithm 2): predict,
// project joints and contacts, derive velocities, solve velocities.
static void step_bodies(sim_world* w, float h) {
    integrate_bodies(w, h);
    sim__contacts_find(w, h);
    for (int pass = 0; pass < SIM__RIGID_PASSES; ++pass) {
        sim__contacts_solve(w, h);
        solve_joints(w, h, pass == 0);
    }
    // A last joint pass: a light bone hit hard (a foot landing) gets its
    // limit back within a degree or two in the same substep.
    solve_joints(w, h, false);
    update_velocities(w, h);
    sim__contacts_velocities(w, h);
    damp_joints(w, h);
}

void sim_world_step(sim_world* w) {
    const int substeps = w->params.substeps;
    const float h = w->dt / (float)substeps;
    const float inv_h2 = 1.0f / (h * h);
    const sim_vec3 g_h2 = v3_scale(w->params.gravity, h * h);

    sim__characters_pre_tick(w, w->dt);
    sim__contacts_begin_tick(w, w->dt);
    const int split = w->b_count > 0 ? rigid_split(w, substeps) : 0;
    for (int s = 0; s < substeps; ++s) {
        for (int k = 0; k < split; ++k) {
            step_bodies(w, h / (float)split);
        }
        integrate(w, g_h2);
        // λ restarts every substep (Macklin et al. 2019, section 4).
        for (uint32_t j = 0; j < w->d_count; ++j) {
            w->dist[j].lambda = 0.0f;
        }
        for (uint32_t j = 0; j < w->drag_count; ++j) {
            w->drags[j].lambda = 0.0f;
        }
        memset(w->contact, 0, w->p_count);
        memset(w->push, 0, w->p_count * sizeof *w->push);
        for (int it = 0; it < w->params.iterations; ++it) {
            project_entities(w, inv_h2);
            project_drags(w, inv_h2);
            sim__collide_project(w);
        }
        project_joint_limits(w);
        sim__collide_respond(w, h);
    }
    sim__characters_post_tick(w);
    w->tick++;
    quarantine(w);
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

int sim_entity_particle_velocity(const sim_world* w, sim_entity_id id, uint32_t particle,
                                 sim_vec3* out) {
    sim__entity* e;
    int rc = particle_lookup(w, id, particle, &e);
    if (rc != SIM_OK) {
        return rc;
    }
    uint32_t i = e->p_first + particle;
    float h = w->dt / (float)w->params.substeps;
    *out = v3_scale(v3_sub(w->pos[i], w->prev[i]), 1.0f / h);
    return SIM_OK;
}

uint32_t sim_world_topology_epoch(const sim_world* w) {
    return w->topo_epoch;
}

uint32_t sim_world_particle_count(const sim_world* w) {
    return w->p_count;
}

uint32_t sim_world_constraint_count(const sim_world* w) {
    return w->d_count;
}

uint32_t sim_world_body_count(const sim_world* w) {
    return w->b_count;
}

uint32_t sim_world_joint_count(const sim_world* w) {
    return w->bj_count;
}

sim_overflows sim_world_overflows(const sim_world* w) {
    return w->overflows;
}

float sim_world_constraint_error(const sim_world* w) {
    float sum = 0.0f;
    for (uint32_t k = 0; k < w->order_count; ++k) {
        const sim__entity* e = &w->entities[w->order[k]];
        const sim_vec3* pos = w->pos + e->p_first;
        const sim__dist* d = w->dist + e->d_first;
        for (uint32_t j = 0; j < e->d_count; ++j) {
            if (d[j].kind == SIM__DIST_EQUAL) {
                sum += fabsf(v3_len(v3_sub(pos[d[j].b], pos[d[j].a])) - d[j].rest);
            }
        }
    }
    return sum;
}

static uint64_t fnv1a(uint64_t h, const void* data, size_t n) {
    const unsigned char* p = data;
    for (size_t i = 0; i < n; ++i) {
        h ^= p[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

uint64_t sim_world_hash(const sim_world* w) {
    uint64_t h = 0xcbf29ce484222325ull;
    h = fnv1a(h, w->pos, w->p_count * sizeof(sim_vec3));
    h = fnv1a(h, w->prev, w->p_count * sizeof(sim_vec3));
    for (uint32_t i = 0; i < w->b_count; ++i) {
        const sim__body* b = &w->body[i];
        h = fnv1a(h, &b->x, sizeof b->x);
        h = fnv1a(h, &b->q, sizeof b->q);
        h = fnv1a(h, &b->v, sizeof b->v);
        h = fnv1a(h, &b->w, sizeof b->w);
    }
    return h;
}

bool sim_world_is_finite(const sim_world* w) {
    for (uint32_t i = 0; i < w->p_count; ++i) {
        if (!sim_vec3_is_finite(w->pos[i]) || !sim_vec3_is_finite(w->prev[i])) {
            return false;
        }
    }
    for (uint32_t i = 0; i < w->b_count; ++i) {
        const sim__body* b = &w->body[i];
        if (!sim_vec3_is_finite(b->x) || !sim_vec3_is_finite(b->v) || !sim_vec3_is_finite(b->w) ||
            !sim_is_finite(b->q.x) || !sim_is_finite(b->q.y) || !sim_is_finite(b->q.z) ||
            !sim_is_finite(b->q.w)) {
            return false;
        }
    }
    return true;
}
