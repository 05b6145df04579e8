/*
 * world.c: a world's lifecycle (it owns every array), its parameters and
 * solver-work budget, and its static colliders.
 *
 * Builders (rope.c, cloth.c, ragdoll.c, character.c) only fill the ranges
 * sim__entity_begin() (entity.c) hands them. Nothing here does I/O, and
 * nothing after sim_world_create() allocates.
 */
#include "world.h"

#include "rigid.h"
#include "vec.h"

#include <string.h>

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
    XX(drags, (d).max_drags, sizeof(sim__drag))                                                    \
    XX(closing, (d).max_bodies, sizeof(float))                                                     \
    XX(bsleep, (d).max_bodies, sizeof(sim__sleep))                                                 \
    XX(uf, (d).max_bodies, sizeof(uint32_t))                                                       \
    XX(isl_of, (d).max_bodies, sizeof(uint32_t))                                                   \
    XX(isl_of_body, (d).max_bodies, sizeof(uint32_t))                                              \
    XX(isl_bodies, (d).max_bodies, sizeof(uint32_t))                                               \
    XX(islands, (d).max_bodies, sizeof(sim__island))                                               \
    XX(isl_joints, (d).max_joints, sizeof(sim__ijoint))                                            \
    XX(isl_pairs, (size_t)(d).max_bodies* SIM__PAIRS_PER_BODY, sizeof(uint32_t))

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

bool sim__work_fits(const sim_world* w, uint32_t particles, uint32_t dists, uint32_t joints,
                    uint32_t bodies, uint32_t bjoints) {
    uint64_t work = solver_work(w->d_count + dists, w->j_count + joints, w->p_count + particles,
                                w->b_count + bodies, w->bj_count + bjoints, &w->params);
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
    uint64_t work = solver_work(w->d_count, w->j_count, w->p_count, w->b_count, w->bj_count, p);
    if (w->def.max_solver_work != 0 && work > w->def.max_solver_work) {
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
    sim__wake_all(w); // New gravity or friction moves what rests.
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
    sim__wake_all(w); // It may have appeared in something asleep.
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
