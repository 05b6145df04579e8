/*
 * world.c: a world's lifecycle (it owns every array), its parameters and
 * solver-work budget, and its static colliders.
 *
 * Builders (rope.c, cloth.c, ragdoll.c, character.c) only fill the ranges
 * sim__entity_begin() (entity.c) hands them, after it has grown the arrays
 * here (sim_world_reserve()) when they had no room. Nothing here does I/O,
 * and nothing a step calls allocates.
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
        !sim_is_finite(p->bounciness) || !sim_is_finite(p->friction) ||
        !sim_vec3_is_finite(p->wind) || !sim_is_finite(p->gust) || !sim_is_finite(p->gust_period) ||
        !sim_is_finite(p->air_density) || !sim_is_finite(p->drag_coef) ||
        !sim_is_finite(p->lift_coef)) {
        return SIM_E_NOT_FINITE;
    }
    if (fabsf(p->wind.x) > SIM_MAX_WIND || fabsf(p->wind.y) > SIM_MAX_WIND ||
        fabsf(p->wind.z) > SIM_MAX_WIND || !in_unit(p->gust) ||
        p->gust_period < SIM_MIN_GUST_PERIOD || p->gust_period > SIM_MAX_GUST_PERIOD ||
        p->air_density < 0.0f || p->air_density > SIM_MAX_AIR || p->drag_coef < 0.0f ||
        p->drag_coef > SIM_MAX_AIR || p->lift_coef < 0.0f || p->lift_coef > SIM_MAX_AIR) {
        return SIM_E_OUT_OF_RANGE;
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
    d.params.gust_period = 3.0f;
    d.params.air_density = 1.2f;
    d.params.drag_coef = 1.0f;
    d.params.lift_coef = 0.5f;
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
    d.max_contacts = 2048 * (SIM__CONTACTS_PER_BODY + SIM__PAIRS_PER_BODY);
    d.solver = SIM_SOLVER_SOFT_STEP;
    d.library = NULL;
    d.allocator = sim_allocator_default();
    d.cookie = SIM__DEF_COOKIE;
    return d;
}

// ---------------------------------------------------------------------------
// Lifecycle and growth
// ---------------------------------------------------------------------------

// The arrays' table, SIM__WORLD_ARRAYS, is in world.h (state.c walks it
// too); contact_cap() and soft_contact_cap() below are its helpers.

// XPBD's contact list (a substep's contacts): 24 per body (8 static, 16
// from pairs), at most max_contacts.
static size_t contact_cap(const sim_counts* r, const sim_world_def* d) {
    size_t per_body = (size_t)r->bodies * (SIM__CONTACTS_PER_BODY + SIM__PAIRS_PER_BODY);
    return per_body < d->max_contacts ? per_body : d->max_contacts;
}

// The soft step's contact points (a tick's, found once, speculative):
// SIM__SOFT_CONTACTS_PER_BODY per body, at most max_contacts.
static size_t soft_contact_cap(const sim_counts* r, const sim_world_def* d) {
    size_t per_body = (size_t)r->bodies * SIM__SOFT_CONTACTS_PER_BODY;
    return per_body < d->max_contacts ? per_body : d->max_contacts;
}

// Its element sizes (the row numbers, SIM__ROW_*, are in world.h).
static const size_t row_elem[SIM__ROW_COUNT] = {
#define SIM__ELEM(field, count, elem) (elem),
    SIM__WORLD_ARRAYS(SIM__ELEM, unused, unused)
#undef SIM__ELEM
};

// Every array's capacity (elements) when the world has room for r.
static void row_caps(const sim_counts* r, const sim_world_def* d, size_t cap[SIM__ROW_COUNT]) {
#define SIM__CAP(field, count, elem) cap[SIM__ROW_##field] = (size_t)(count);
    SIM__WORLD_ARRAYS(SIM__CAP, *r, *d)
#undef SIM__CAP
}

// An array of `count` elements takes count × elem bytes; an empty one still
// takes one element, so that no array pointer is ever NULL (memmove and
// memset of zero bytes must still be given a valid pointer).
static size_t row_bytes(size_t count, size_t elem) {
    return (count == 0 ? 1 : count) * elem;
}

static void* world_alloc(const sim_allocator* a, size_t count, size_t elem) {
    size_t n = row_bytes(count, elem);
    void* p = a->alloc(a->ctx, n, 64);
    if (p != NULL) {
        memset(p, 0, n);
    }
    return p;
}

static void world_free(const sim_allocator* a, void* p, size_t count, size_t elem) {
    if (p != NULL) {
        a->free(a->ctx, p, row_bytes(count, elem));
    }
}

// Allocates (zeroed) every array whose capacity differs between `have` and
// `want` into fresh[row] (NULL for the others). All or nothing: when the
// allocator refuses one, those taken so far are freed and false returned.
// With `all`, every array is allocated (a new world).
static bool rows_alloc(const sim_allocator* a, const size_t have[SIM__ROW_COUNT],
                       const size_t want[SIM__ROW_COUNT], bool all, void* fresh[SIM__ROW_COUNT]) {
    for (int i = 0; i < SIM__ROW_COUNT; ++i) {
        fresh[i] = NULL;
    }
    for (int i = 0; i < SIM__ROW_COUNT; ++i) {
        if (!all && have[i] == want[i]) {
            continue;
        }
        fresh[i] = world_alloc(a, want[i], row_elem[i]);
        if (fresh[i] == NULL) {
            for (int k = 0; k < i; ++k) {
                world_free(a, fresh[k], want[k], row_elem[k]);
            }
            return false;
        }
    }
    return true;
}

void sim__world_row_caps(const sim_world* w, size_t cap[SIM__ROW_COUNT]) {
    row_caps(&w->reserved, &w->def, cap);
}

// Capacity derived from r that the step reads (broad_phase.c, contact.c).
static void set_caps(sim_world* w) {
    size_t cap[SIM__ROW_COUNT];
    row_caps(&w->reserved, &w->def, cap);
    w->grid_cap = (uint32_t)cap[SIM__ROW_grid];
    w->pair_cap = (uint32_t)cap[SIM__ROW_pairs];
    w->contact_cap = (uint32_t)cap[SIM__ROW_contacts];
    w->soft_contact_cap = (uint32_t)cap[SIM__ROW_soft_contacts];
}

// Room for `need` of something the world has room for `have` of: at least
// double (and at least `floor`, so the first spawns do not grow one at a
// time), never above `max`. The caller has checked need <= max.
static uint32_t grown(uint32_t have, uint32_t need, uint32_t max, uint32_t floor) {
    if (need <= have) {
        return have;
    }
    uint64_t n = 2 * (uint64_t)have;
    n = n < floor ? floor : n;
    n = n < need ? need : n;
    return n > max ? max : (uint32_t)n;
}

// Whether a def's limits are within the ranges sim.h gives (which keep
// every capacity × element size well inside size_t).
static bool limits_ok(const sim_world_def* d) {
    return d->max_particles >= 1 && d->max_particles <= SIM_LIMIT_MAX_PARTICLES &&
           d->max_entities >= 1 && d->max_entities <= SIM_LIMIT_MAX_ENTITIES &&
           d->max_constraints <= SIM_LIMIT_MAX_CONSTRAINTS &&
           d->max_bodies <= SIM_LIMIT_MAX_BODIES && d->max_joints <= SIM_LIMIT_MAX_JOINTS &&
           d->max_contacts <= SIM_LIMIT_MAX_CONTACTS && d->max_boxes <= (1u << 20) &&
           d->max_drags <= (1u << 20) &&
           (d->solver == SIM_SOLVER_XPBD || d->solver == SIM_SOLVER_SOFT_STEP);
}

// The limits of a world as counts.
static sim_counts limits_of(const sim_world_def* d) {
    sim_counts m = {d->max_entities,
                    d->max_particles,
                    d->max_constraints,
                    d->max_entities * SIM__JOINTS_PER_ENTITY,
                    d->max_bodies,
                    d->max_joints,
                    0,
                    0};
    return m;
}

int sim_world_reserve(sim_world* w, const sim_counts* t) {
    if (w == NULL || t == NULL) {
        return SIM_E_INVALID_ARG;
    }
    const sim_counts m = limits_of(&w->def);
    if (t->entities > m.entities || t->particles > m.particles || t->constraints > m.constraints ||
        t->joint_limits > m.joint_limits || t->bodies > m.bodies || t->joints > m.joints) {
        return SIM_E_CAPACITY;
    }
    const sim_counts r = w->reserved;
    // Floors: a few entities' worth, so that a small scene grows once or
    // twice rather than at every spawn.
    sim_counts n = {grown(r.entities, t->entities, m.entities, 8),
                    grown(r.particles, t->particles, m.particles, 64),
                    grown(r.constraints, t->constraints, m.constraints, 128),
                    grown(r.joint_limits, t->joint_limits, m.joint_limits, 16),
                    grown(r.bodies, t->bodies, m.bodies, 16),
                    grown(r.joints, t->joints, m.joints, 16),
                    0,
                    0};
    if (memcmp(&n, &r, sizeof n) == 0) {
        return SIM_OK;
    }
    // What the world reports (impacts, joint limit hits): made with its
    // first room for a body, its joint tracks grown with its joints.
    sim__reports* reports = NULL;
    sim__limit_track* lim = NULL;
    const bool new_reports = n.bodies > 0 && w->reports == NULL;
    const uint32_t lim_cap = w->reports != NULL ? w->reports->lim_cap : 0u;
    if (new_reports) {
        reports = world_alloc(&w->alloc, 1, sizeof *reports);
        if (reports == NULL) {
            return SIM_E_NOMEM;
        }
    }
    if (n.bodies > 0 && n.joints != lim_cap) {
        lim = world_alloc(&w->alloc, n.joints, sizeof *lim);
        if (lim == NULL) {
            world_free(&w->alloc, reports, 1, sizeof *reports);
            return SIM_E_NOMEM;
        }
    }
    size_t have[SIM__ROW_COUNT], want[SIM__ROW_COUNT];
    void* fresh[SIM__ROW_COUNT];
    row_caps(&r, &w->def, have);
    row_caps(&n, &w->def, want);
    if (!rows_alloc(&w->alloc, have, want, false, fresh)) {
        world_free(&w->alloc, reports, 1, sizeof *reports);
        world_free(&w->alloc, lim, n.joints, sizeof *lim);
        return SIM_E_NOMEM;
    }
    if (new_reports) {
        reports->impact_ring =
            (sim__ring){reports->impacts, sizeof(sim_impact), SIM_MAX_IMPACTS, 0, 0, 0};
        reports->limit_ring =
            (sim__ring){reports->limit_hits, sizeof(sim_limit_hit), SIM_MAX_LIMIT_HITS, 0, 0, 0};
        w->reports = reports;
    }
    if (lim != NULL) {
        sim__reports* rep = w->reports;
        if (rep->lim != NULL) {
            memcpy(lim, rep->lim,
                   (rep->lim_cap < n.joints ? rep->lim_cap : n.joints) * sizeof *lim);
            world_free(&w->alloc, rep->lim, rep->lim_cap, sizeof *lim);
        }
        rep->lim = lim;
        rep->lim_cap = n.joints;
    }
    // Nothing can fail from here: move every grown array's contents over.
#define SIM__MOVE(field, count, elem)                                                              \
    if (fresh[SIM__ROW_##field] != NULL) {                                                         \
        memcpy(fresh[SIM__ROW_##field], w->field, have[SIM__ROW_##field] * (elem));                \
        world_free(&w->alloc, w->field, have[SIM__ROW_##field], (elem));                           \
        w->field = fresh[SIM__ROW_##field];                                                        \
    }
    SIM__WORLD_ARRAYS(SIM__MOVE, unused, unused)
#undef SIM__MOVE
    w->reserved = n;
    set_caps(w);
    return SIM_OK;
}

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
    if (def->dt <= 0.0f || def->dt > 1.0f || def->half_extent <= 0.0f || !limits_ok(def)) {
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

    // Room for nothing: only the arrays of a fixed size take memory now
    // (the others hold one element each until a spawn grows them).
    size_t cap[SIM__ROW_COUNT];
    void* fresh[SIM__ROW_COUNT];
    row_caps(&w->reserved, &w->def, cap);
    if (!rows_alloc(&w->alloc, cap, cap, true, fresh)) {
        w->alloc.free(w->alloc.ctx, w, sizeof *w);
        return SIM_E_NOMEM;
    }
#define SIM__TAKE(field, count, elem) w->field = fresh[SIM__ROW_##field];
    SIM__WORLD_ARRAYS(SIM__TAKE, unused, unused)
#undef SIM__TAKE
    set_caps(w);
    memset(w->grid_head, 0xff, SIM__GRID_BUCKETS * sizeof *w->grid_head);
    *out = w;
    return SIM_OK;
}

void sim_world_destroy(sim_world* w) {
    if (w == NULL) {
        return;
    }
    for (uint32_t s = 0; w->chars != NULL && s < w->e_used; ++s) {
        if (w->entities[s].live && w->entities[s].kind == SIM_ENTITY_CHARACTER) {
            sim__reduced_destroy(w, s);
        }
    }
    size_t cap[SIM__ROW_COUNT];
    row_caps(&w->reserved, &w->def, cap);
#define SIM__FREE(field, count, elem)                                                              \
    world_free(&w->alloc, w->field, cap[SIM__ROW_##field], (elem));
    SIM__WORLD_ARRAYS(SIM__FREE, unused, unused)
#undef SIM__FREE
    if (w->reports != NULL) {
        world_free(&w->alloc, w->reports->lim, w->reports->lim_cap, sizeof(sim__limit_track));
        world_free(&w->alloc, w->reports, 1, sizeof(sim__reports));
    }
    sim_allocator a = w->alloc;
    a.free(a.ctx, w, sizeof *w);
}

// Bytes of the world struct and its arrays when it has room for r.
static size_t bytes_for(const sim_counts* r, const sim_world_def* d) {
    size_t cap[SIM__ROW_COUNT];
    row_caps(r, d, cap);
    size_t sum = sizeof(sim_world);
    for (int i = 0; i < SIM__ROW_COUNT; ++i) {
        sum += row_bytes(cap[i], row_elem[i]);
    }
    if (r->bodies > 0) { // what it reports (impact.c, limit_hit.c)
        sum += row_bytes(1, sizeof(sim__reports)) +
               (r->joints > 0 ? row_bytes(r->joints, sizeof(sim__limit_track)) : 0u);
    }
    return sum;
}

size_t sim_world_reserved_bytes(const sim_world* w) {
    return bytes_for(&w->reserved, &w->def);
}

size_t sim_world_def_max_bytes(const sim_world_def* d) {
    if (d == NULL || !limits_ok(d)) {
        return 0;
    }
    sim_counts m = limits_of(d);
    return bytes_for(&m, d);
}

sim_counts sim_world_reserved(const sim_world* w) {
    return w->reserved;
}

sim_counts sim_world_counts(const sim_world* w) {
    sim_counts c = {w->order_count, w->p_count,  w->d_count,  w->j_count,
                    w->b_count,     w->bj_count, w->sp_count, w->artic_links};
    return c;
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

// Rigid substeps per tick, at least, of a world of that solver and tick
// (dt, s) cut into `substeps`: XPBD takes SIM__RIGID_MIN_SUBSTEPS per tick
// (more while something moves fast, which the budget does not count); the
// soft step takes
// SIM__SOFT_SUBSTEPS per 1/60 s, so a slow world takes more per tick (240
// at tick_hz 1) and costs per second what a 60 Hz world does.
static uint64_t rigid_substeps(sim_solver solver, float dt, int substeps_in) {
    const int substeps = substeps_in < 1 ? 1 : substeps_in;
    const int split = solver == SIM_SOLVER_SOFT_STEP
                          ? sim__soft_split_for(dt, substeps)
                          : (SIM__RIGID_MIN_SUBSTEPS + substeps - 1) / substeps;
    return (uint64_t)substeps * (uint64_t)split;
}

// Solver work per tick for given totals and parameters (max_solver_work).
// A rigid body or joint costs SIM__RIGID_WORK per rigid substep.
// A soft-body particle costs SIM_SOFTBODY_CONTACT_WORK more per pass (its
// contact queries) and SIM_SOFTBODY_WORK_PER_SUBSTEP per substep (shape
// matching).
// A REDUCED character's link costs SIM_ARTIC_LINK_WORK rigid substeps'
// more per articulation step (reduced.c: ceil(dt × 240) a tick).
static uint64_t solver_work(uint32_t dists, uint32_t joints, uint32_t particles, uint32_t bodies,
                            uint32_t bjoints, uint32_t soft, const sim_params* p, uint64_t rigid,
                            uint32_t links, float dt) {
    const uint64_t artic_steps = sim__reduced_steps(dt);
    return ((uint64_t)dists + joints + particles + (uint64_t)soft * SIM_SOFTBODY_CONTACT_WORK) *
               (uint64_t)p->iterations * (uint64_t)p->substeps +
           (uint64_t)soft * SIM_SOFTBODY_WORK_PER_SUBSTEP * (uint64_t)p->substeps +
           SIM__RIGID_WORK * ((uint64_t)bodies + bjoints) * rigid +
           SIM__RIGID_WORK * SIM_ARTIC_LINK_WORK * (uint64_t)links * artic_steps;
}

// The work of world w holding `c` more under parameters p.
static uint64_t world_work(const sim_world* w, const sim_counts* c, const sim_params* p) {
    return solver_work(w->d_count + c->constraints, w->j_count + c->joint_limits,
                       w->p_count + c->particles, w->b_count + c->bodies, w->bj_count + c->joints,
                       w->sp_count + c->soft_particles, p,
                       rigid_substeps(w->def.solver, w->def.dt, p->substeps),
                       w->artic_links + c->artic_links, w->def.dt);
}

// The work of `c` alone in a world of that solver and tick, under p taken
// as at least 1 iteration and 1 substep.
static uint64_t counts_work(const sim_counts* c, const sim_params* p, sim_solver solver, float dt) {
    sim_params q = *p;
    q.iterations = q.iterations < 1 ? 1 : q.iterations;
    q.substeps = q.substeps < 1 ? 1 : q.substeps;
    return solver_work(c->constraints, c->joint_limits, c->particles, c->bodies, c->joints,
                       c->soft_particles, &q, rigid_substeps(solver, dt, q.substeps),
                       c->artic_links, dt);
}

bool sim__work_fits(const sim_world* w, uint32_t particles, uint32_t dists, uint32_t joints,
                    uint32_t bodies, uint32_t bjoints) {
    const sim_counts add = {.particles = particles,
                            .constraints = dists,
                            .joint_limits = joints,
                            .bodies = bodies,
                            .joints = bjoints};
    uint64_t work = world_work(w, &add, &w->params);
    return w->def.max_solver_work == 0 || work <= w->def.max_solver_work;
}

bool sim__work_fits_counts(const sim_world* w, const sim_counts* add) {
    uint64_t work = world_work(w, add, &w->params);
    return w->def.max_solver_work == 0 || work <= w->def.max_solver_work;
}

uint64_t sim_counts_solver_work(const sim_counts* c, const sim_params* p) {
    // 4 rigid substeps a tick: either solver at 60 Hz.
    return counts_work(c, p, SIM_SOLVER_XPBD, 1.0f / 60.0f);
}

uint64_t sim_world_counts_solver_work(const sim_world* w, const sim_counts* c,
                                      const sim_params* p) {
    return counts_work(c, p, w->def.solver, w->def.dt);
}

uint64_t sim_world_solver_work(const sim_world* w) {
    const sim_counts none = {0};
    return world_work(w, &none, &w->params);
}

uint64_t sim_world_solver_work_with(const sim_world* w, const sim_params* p) {
    const sim_counts none = {0};
    return world_work(w, &none, p);
}

int sim_world_set_params(sim_world* w, const sim_params* p) {
    int rc = sim_params_validate(p);
    if (rc != SIM_OK) {
        return rc;
    }
    uint64_t work = sim_world_solver_work_with(w, p);
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
