/*
 * broad_phase.c: which rigid bodies may touch this tick.
 *
 * Once per tick every body's bounding box, swept by its velocity over the
 * tick, goes into a uniform hash grid; a pair is reported once, by the cell
 * holding the minimum corner of the two boxes' overlap. Bones of one
 * character skip the pairs their skeleton marks (parent and child, or
 * overlapping in the bind pose); two kinematic bodies never collide. The
 * tick's fastest closing speed (what the rigid substeps are split for) is
 * found here too, and a sleeping ragdoll that a moving body reaches wakes.
 */
#include "rigid.h"
#include "world.h"

#include <string.h>

#define GRID_MARGIN     0.02f // m added to every box
#define PARTICLE_MARGIN SIM__PARTICLE_MARGIN
// A body this fast (m/s at its surface) wakes a sleeping ragdoll it reaches.
#define WAKE_SPEED 0.1f

static void body_bounds(const sim__body* b, const sim__body_info* bi, float dt, sim_vec3* lo,
                        sim_vec3* hi) {
    sim_vec3 p0, p1;
    sim__body_segment(b, bi, &p0, &p1);
    float r = bi->radius + GRID_MARGIN;
    *lo = v3(fminf(p0.x, p1.x) - r, fminf(p0.y, p1.y) - r, fminf(p0.z, p1.z) - r);
    *hi = v3(fmaxf(p0.x, p1.x) + r, fmaxf(p0.y, p1.y) + r, fmaxf(p0.z, p1.z) + r);
    // Sweep over the tick so fast bodies meet what lies in their path.
    sim_vec3 d = v3_scale(b->v, dt);
    lo->x += fminf(d.x, 0.0f);
    lo->y += fminf(d.y, 0.0f);
    lo->z += fminf(d.z, 0.0f);
    hi->x += fmaxf(d.x, 0.0f);
    hi->y += fmaxf(d.y, 0.0f);
    hi->z += fmaxf(d.z, 0.0f);
}

static bool may_collide(const sim_world* w, uint32_t a, uint32_t b) {
    const sim__body_info *ia = &w->binfo[a], *ib = &w->binfo[b];
    if (w->body[a].inv_mass == 0.0f && w->body[b].inv_mass == 0.0f) {
        return false; // two kinematic bodies cannot push each other
    }
    if (ia->slot == ib->slot && w->chars[ia->slot].sk != NULL &&
        sim__bones_has(&w->chars[ia->slot].sk->no_collide[ia->bone], ib->bone)) {
        return false;
    }
    if (sim__reduced_bone(w, a) || sim__reduced_bone(w, b)) {
        return false; // its articulation solves its contacts (reduced.c)
    }
    return true;
}

// Whether two capsules can come within contact distance this tick: their
// gap now against how far their surfaces can move toward each other in dt
// (boxes overlapping is a much weaker test for long, thin bones).
static bool may_touch(const sim_world* w, uint32_t a, uint32_t b, float dt) {
    const sim__body *ba = &w->body[a], *bb = &w->body[b];
    const sim__body_info *ia = &w->binfo[a], *ib = &w->binfo[b];
    sim_vec3 a0, a1, b0, b1, ca, cb;
    sim__body_segment(ba, ia, &a0, &a1);
    sim__body_segment(bb, ib, &b0, &b1);
    sim__closest_segments(a0, a1, b0, b1, &ca, &cb);
    float reach = (v3_len(v3_sub(ba->v, bb->v)) + v3_len(ba->w) * (ia->half_len + ia->radius) +
                   v3_len(bb->w) * (ib->half_len + ib->radius)) *
                  dt;
    return v3_len(v3_sub(ca, cb)) < ia->radius + ib->radius + reach + GRID_MARGIN;
}

// A sleeping island wakes when a body that moves (awake, or animated)
// reaches it. Returns true when it woke one.
static bool wake_if_hit(sim_world* w, uint32_t a, uint32_t b) {
    bool sa = sim__body_asleep(w, a), sb = sim__body_asleep(w, b);
    if (sa == sb) {
        return false;
    }
    uint32_t sleeper = sa ? a : b, other = sa ? b : a;
    const sim__body* o = &w->body[other];
    if (v3_len(o->v) + v3_len(o->w) * (w->binfo[other].half_len + w->binfo[other].radius) >
        WAKE_SPEED) {
        sim__body_wake(w, sleeper);
        return true;
    }
    return false;
}

// How fast body a's surface can move relative to body b's (b may be
// SIM__NO_BODY: the static world), m/s.
static float surface_speed(const sim_world* w, uint32_t a, uint32_t b) {
    const sim__body* ba = &w->body[a];
    const sim__body_info* ia = &w->binfo[a];
    sim_vec3 v = ba->v;
    float spin = v3_len(ba->w) * (ia->half_len + ia->radius);
    if (b != SIM__NO_BODY) {
        const sim__body* bb = &w->body[b];
        const sim__body_info* ib = &w->binfo[b];
        v = v3_sub(v, bb->v);
        spin += v3_len(bb->w) * (ib->half_len + ib->radius);
    }
    return v3_len(v) + spin;
}

// Pairs of awake dynamic bodies and the static boxes their swept bounds
// reach this tick, after the body pairs (the narrow phase then tests a body
// against those boxes only), and each body's closing speed against the
// ground and those boxes.
static void find_box_pairs(sim_world* w, uint32_t* overflows) {
    for (uint32_t i = 0; i < w->b_count; ++i) {
        if (w->body[i].inv_mass == 0.0f) {
            continue; // kinematic or asleep: no static contacts
        }
        const sim_vec3 lo = w->aabb_lo[i], hi = w->aabb_hi[i];
        bool near = w->def.ground && lo.y < 0.0f;
        for (uint32_t k = 0; k < w->box_count; ++k) {
            const sim_box* bx = &w->boxes[k];
            if (!sim__aabb_overlap(v3_sub(bx->center, bx->half_extents),
                                   v3_add(bx->center, bx->half_extents), lo, hi)) {
                continue;
            }
            near = true;
            if (w->pair_count == w->pair_cap) {
                (*overflows)++; // out of room: this box goes unsolved this tick
                continue;
            }
            w->pairs[w->pair_count].a = i;
            w->pairs[w->pair_count].b = SIM__BOX_PAIR | k;
            w->pair_count++;
        }
        if (near) {
            w->closing[i] = fmaxf(w->closing[i], surface_speed(w, i, SIM__NO_BODY));
        }
    }
}

// Finds the tick's candidate pairs in the grid. Returns true when a moving
// body woke a sleeping island: the pairs are then found again, since the
// woken bodies now collide with what they skipped while asleep.
static bool find_pairs(sim_world* w, float dt, uint32_t* overflows) {
    bool woke = false;
    w->pair_count = 0;
    *overflows = 0;
    for (uint32_t i = 0; i < w->b_count; ++i) {
        w->closing[i] = 0.0f;
    }
    // Pairs: for each entry of an awake body, the other bodies in the same
    // cell (a sleeping pile costs nothing here); reported only in the cell
    // of the overlap's minimum corner, so exactly once.
    for (uint32_t k = 0; k < w->grid_count; ++k) {
        const sim__grid_entry* e = &w->grid[k];
        uint32_t a = e->body;
        if (sim__body_asleep(w, a)) {
            continue; // found from the awake side, if at all
        }
        uint32_t bucket = sim__cell_hash(e->cx, e->cy, e->cz);
        for (int32_t n = w->grid_head[bucket]; n >= 0; n = w->grid[n].next) {
            const sim__grid_entry* f = &w->grid[n];
            uint32_t b = f->body;
            if (b == a || f->cx != e->cx || f->cy != e->cy || f->cz != e->cz) {
                continue;
            }
            if (!sim__body_asleep(w, b) && b < a) {
                continue; // two awake bodies: once, from the smaller index
            }
            if (!sim__aabb_overlap(w->aabb_lo[a], w->aabb_hi[a], w->aabb_lo[b], w->aabb_hi[b])) {
                continue;
            }
            sim_vec3 m =
                v3(fmaxf(w->aabb_lo[a].x, w->aabb_lo[b].x), fmaxf(w->aabb_lo[a].y, w->aabb_lo[b].y),
                   fmaxf(w->aabb_lo[a].z, w->aabb_lo[b].z));
            if (sim__cell_of(m.x) != e->cx || sim__cell_of(m.y) != e->cy ||
                sim__cell_of(m.z) != e->cz) {
                continue;
            }
            if (w->body[a].inv_mass == 0.0f && w->body[b].inv_mass == 0.0f &&
                sim__body_asleep(w, a) == sim__body_asleep(w, b)) {
                // Two animated (or two sleeping) bodies neither collide nor
                // wake each other: skip the narrow test (a crowd of
                // characters standing in one spot is all such pairs).
                continue;
            }
            if (!may_touch(w, a, b, dt)) {
                continue;
            }
            woke |= wake_if_hit(w, a, b);
            if (!may_collide(w, a, b)) {
                continue;
            }
            if (w->pair_count == w->pair_cap) {
                (*overflows)++; // out of room: this pair goes unsolved this tick
                continue;
            }
            const float closing = surface_speed(w, a, b);
            w->closing[a] = fmaxf(w->closing[a], closing);
            w->closing[b] = fmaxf(w->closing[b], closing);
            w->pairs[w->pair_count].a = a < b ? a : b;
            w->pairs[w->pair_count].b = a < b ? b : a;
            w->pair_count++;
        }
    }
    return woke;
}

void sim__contacts_begin_tick(sim_world* w, float dt) {
    memset(w->grid_head, 0xff, SIM__GRID_BUCKETS * sizeof *w->grid_head);
    w->grid_count = 0;
    w->pair_count = 0;
    // A world whose bodies all sleep and that has no particles needs no
    // grid: pairs are found from awake bodies only, and only particles
    // look bodies up. A sleeping pile then costs nothing here.
    bool any_awake = false;
    for (uint32_t i = 0; i < w->b_count && !any_awake; ++i) {
        any_awake = !sim__body_asleep(w, i);
    }
    if (!any_awake && w->p_count == 0) {
        memset(w->closing, 0, (size_t)w->b_count * sizeof *w->closing);
        return;
    }
    for (uint32_t i = 0; i < w->b_count; ++i) {
        body_bounds(&w->body[i], &w->binfo[i], dt, &w->aabb_lo[i], &w->aabb_hi[i]);
        w->closing[i] = 0.0f;
        // Particles are looked up by their own cell, so bodies reach a little
        // further in the grid than they do in pair tests.
        const float pm = w->p_count > 0 ? PARTICLE_MARGIN : 0.0f;
        sim_vec3 lo = v3_sub(w->aabb_lo[i], v3(pm, pm, pm));
        sim_vec3 hi = v3_add(w->aabb_hi[i], v3(pm, pm, pm));
        const int32_t x0 = sim__cell_of(lo.x), x1 = sim__cell_of(hi.x);
        const int32_t y0 = sim__cell_of(lo.y), y1 = sim__cell_of(hi.y);
        const int32_t z0 = sim__cell_of(lo.z), z1 = sim__cell_of(hi.z);
        // Its cells (a body a blow-up threw across the world may sweep
        // billions: counted, not walked, past what the grid can hold).
        const double cells =
            (x1 >= x0 && y1 >= y0 && z1 >= z0)
                ? ((double)x1 - x0 + 1.0) * ((double)y1 - y0 + 1.0) * ((double)z1 - z0 + 1.0)
                : 0.0;
        uint64_t placed = 0;
        for (int32_t x = x0; x <= x1 && w->grid_count < w->grid_cap; ++x) {
            for (int32_t y = y0; y <= y1 && w->grid_count < w->grid_cap; ++y) {
                for (int32_t z = z0; z <= z1 && w->grid_count < w->grid_cap; ++z) {
                    uint32_t h = sim__cell_hash(x, y, z);
                    sim__grid_entry* e = &w->grid[w->grid_count];
                    e->body = i;
                    e->cx = x;
                    e->cy = y;
                    e->cz = z;
                    e->next = w->grid_head[h];
                    w->grid_head[h] = (int32_t)w->grid_count++;
                    placed++;
                }
            }
        }
        // Out of room: this body misses some contacts this tick.
        const double dropped = cells - (double)placed;
        w->overflows.grid_entries += dropped >= 1e18 ? (uint64_t)1e18 : (uint64_t)dropped;
    }
    uint32_t overflows = 0;
    for (int round = 0; round < 4 && find_pairs(w, dt, &overflows); ++round) {
    }
    w->overflows.pairs += overflows;
    overflows = 0;
    find_box_pairs(w, &overflows);
    w->overflows.pairs += overflows;
}
