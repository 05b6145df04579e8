/*
 * self_collide.c: cloth self-collision (issue 10, item 4; FIELD-NOTES
 * "Cloth extras"), particle–particle: two particles of the same cloth that
 * are more than self_hops grid hops apart are kept `thickness` apart.
 *
 * Why particle–particle and not particle–triangle: a grid triangle's
 * interior is everywhere within spacing/√2 of a corner (the midpoint of its
 * hypotenuse is the farthest point), so with thickness >= 0.75 × spacing a
 * particle cannot reach another layer's triangle without first coming
 * within the thickness of one of its corners. The price is that thickness
 * is tied to the spacing (sim_cloth_def.thickness says so); the gain is one
 * kind of contact, symmetric and cheap, and no triangle list to keep.
 *
 * Each substep, on the first relaxation pass, a spatial hash (Teschner et
 * al. 2003; the dense counting-sort layout of Müller's "Ten Minute Physics"
 * 11) of every self-colliding particle is rebuilt from the current
 * positions: cells of 2 × thickness, 2 × particles buckets. Each particle's
 * 27 neighbouring cells then give the substep's candidate pairs, those
 * within 1.5 × thickness (the margin covers what the particles move over
 * the substep's passes), listed once (sc_pairs, SIM__SELF_PAIRS_PER_PARTICLE
 * per particle of the world; pairs past that room are dropped). Every pass
 * pushes the candidates closer than the thickness apart along their
 * separation, shared by inverse mass (a PBD inequality constraint, Müller et
 * al. 2007 §3.3). Listing once instead of searching in every pass took the
 * 64 × 64 fold of ragdoll-bench from 305 to 116 ms per tick with it on (one
 * busy window each, wall time: 2.6×).
 *
 * A particle's self-contact corrections over a substep are capped at half
 * the thickness, so two layers found interpenetrating (a fold that crossed
 * while self-collision was off, or a hard squeeze) separate over a few
 * substeps instead of popping apart in one.
 *
 * Order: entities in storage order, particles by index, neighbour cells in a
 * fixed order, bucket entries by particle index: deterministic. The scratch
 * (sc_start, sc_entries, sc_moved, sc_pairs) is grown with the particle
 * arrays at spawn time (world.c); nothing is allocated here.
 */
#include "vec.h"
#include "world.h"

#include <string.h>

// Buckets of the hash for n particles: 2n (Müller's "Ten Minute Physics").
static uint32_t bucket_count(const sim_world* w) {
    return 2u * w->p_count;
}

static uint32_t bucket_of(int32_t x, int32_t y, int32_t z, uint32_t buckets) {
    uint32_t h = (uint32_t)x * 73856093u ^ (uint32_t)y * 19349663u ^ (uint32_t)z * 83492791u;
    return h % buckets;
}

static int32_t cell_of(float v, float inv_cell) {
    return (int32_t)floorf(v * inv_cell);
}

// Whether any live entity collides with itself (nothing to do otherwise).
static bool any_self_collision(const sim_world* w) {
    for (uint32_t k = 0; k < w->order_count; ++k) {
        if (w->entities[w->order[k]].self_collision) {
            return true;
        }
    }
    return false;
}

// Counting sort of the self-colliding particles by bucket: sc_start[b] ..
// sc_start[b + 1] are bucket b's entries in sc_entries, in particle order.
static void build_hash(sim_world* w) {
    const uint32_t buckets = bucket_count(w);
    memset(w->sc_start, 0, (buckets + 1) * sizeof *w->sc_start);
    for (uint32_t k = 0; k < w->order_count; ++k) {
        const sim__entity* e = &w->entities[w->order[k]];
        if (!e->self_collision || e->iterations == 0) { // off, or frozen (lod.c)
            continue;
        }
        const float inv_cell = 0.5f / e->thickness;
        for (uint32_t i = e->p_first; i < e->p_first + e->p_count; ++i) {
            sim_vec3 p = w->pos[i];
            w->sc_start[bucket_of(cell_of(p.x, inv_cell), cell_of(p.y, inv_cell),
                                  cell_of(p.z, inv_cell), buckets)]++;
            w->sc_moved[i] = 0.0f;
        }
    }
    // Exclusive prefix sums, shifted by one so the fill below can count up.
    uint32_t sum = 0;
    for (uint32_t b = 0; b < buckets; ++b) {
        sum += w->sc_start[b];
        w->sc_start[b] = sum;
    }
    w->sc_start[buckets] = sum;
    // Filled from the last particle down, each bucket's entries end up in
    // increasing particle order.
    for (uint32_t k = w->order_count; k-- > 0;) {
        const sim__entity* e = &w->entities[w->order[k]];
        if (!e->self_collision || e->iterations == 0) { // off, or frozen (lod.c)
            continue;
        }
        const float inv_cell = 0.5f / e->thickness;
        for (uint32_t i = e->p_first + e->p_count; i-- > e->p_first;) {
            sim_vec3 p = w->pos[i];
            uint32_t b = bucket_of(cell_of(p.x, inv_cell), cell_of(p.y, inv_cell),
                                   cell_of(p.z, inv_cell), buckets);
            w->sc_entries[--w->sc_start[b]] = i;
        }
    }
}

// Pushes particles i and j (global) apart to distance t, each by at most
// what its per-substep allowance has left.
static void separate(sim_world* w, uint32_t i, uint32_t j, float t) {
    const float wi = w->inv_mass[i], wj = w->inv_mass[j];
    const float wsum = wi + wj;
    if (wsum == 0.0f) {
        return;
    }
    const sim_vec3 d = v3_sub(w->pos[i], w->pos[j]);
    const float d2 = v3_dot(d, d);
    if (d2 >= t * t || d2 < 1e-20f) {
        return; // apart, or on top of each other with no direction to push
    }
    const float dist = sqrtf(d2);
    const float depth = t - dist;
    const float cap = 0.5f * t;
    float si = depth * wi / wsum, sj = depth * wj / wsum;
    if (w->sc_moved[i] + si > cap) {
        si = cap - w->sc_moved[i] > 0.0f ? cap - w->sc_moved[i] : 0.0f;
    }
    if (w->sc_moved[j] + sj > cap) {
        sj = cap - w->sc_moved[j] > 0.0f ? cap - w->sc_moved[j] : 0.0f;
    }
    const sim_vec3 n = v3_scale(d, 1.0f / dist);
    w->pos[i] = v3_add(w->pos[i], v3_scale(n, si));
    w->pos[j] = v3_sub(w->pos[j], v3_scale(n, sj));
    w->sc_moved[i] += si;
    w->sc_moved[j] += sj;
}

// Whether local grid particles a and b are within `hops` of each other
// (Chebyshev distance on the grid).
static bool near_in_grid(uint32_t a, uint32_t b, uint32_t cols, uint32_t hops) {
    const int32_t ax = (int32_t)(a % cols), ay = (int32_t)(a / cols);
    const int32_t bx = (int32_t)(b % cols), by = (int32_t)(b / cols);
    const int32_t dx = ax > bx ? ax - bx : bx - ax, dy = ay > by ? ay - by : by - ay;
    return (uint32_t)dx <= hops && (uint32_t)dy <= hops;
}

// Lists entity e's candidate pairs: particles within 1.5 × thickness (a
// margin for what they move over the substep's passes) and more than
// self_hops grid hops apart, each pair once (i < j), from sc_pairs[first].
// Returns the number listed, at most `room`.
static uint32_t find_pairs(sim_world* w, sim__entity* e, uint32_t buckets, uint32_t first,
                           uint32_t room) {
    const float t = e->thickness;
    const float inv_cell = 0.5f / t;
    const float r2 = 2.25f * t * t;
    const uint32_t lo = e->p_first, hi = e->p_first + e->p_count;
    uint32_t count = 0;
    for (uint32_t i = lo; i < hi; ++i) {
        const sim_vec3 p = w->pos[i];
        const int32_t cx = cell_of(p.x, inv_cell), cy = cell_of(p.y, inv_cell),
                      cz = cell_of(p.z, inv_cell);
        uint32_t seen[27];
        int seen_count = 0;
        for (int32_t dz = -1; dz <= 1; ++dz) {
            for (int32_t dy = -1; dy <= 1; ++dy) {
                for (int32_t dx = -1; dx <= 1; ++dx) {
                    const uint32_t b = bucket_of(cx + dx, cy + dy, cz + dz, buckets);
                    // Two neighbour cells may hash to one bucket: visit it
                    // once, or its pairs would be listed twice.
                    bool again = false;
                    for (int k = 0; k < seen_count && !again; ++k) {
                        again = seen[k] == b;
                    }
                    if (again) {
                        continue;
                    }
                    seen[seen_count++] = b;
                    for (uint32_t s = w->sc_start[b]; s < w->sc_start[b + 1]; ++s) {
                        const uint32_t j = w->sc_entries[s];
                        // This cloth only, each pair once, not rest-mesh
                        // neighbours.
                        if (j <= i || j >= hi ||
                            near_in_grid(i - lo, j - lo, e->cols, e->self_hops)) {
                            continue;
                        }
                        const sim_vec3 d = v3_sub(w->pos[j], p);
                        if (v3_dot(d, d) >= r2 || count == room) {
                            continue;
                        }
                        sim__self_pair* q = &w->sc_pairs[first + count++];
                        q->a = (uint16_t)(i - lo);
                        q->b = (uint16_t)(j - lo);
                    }
                }
            }
        }
    }
    return count;
}

void sim__self_collide_project(sim_world* w, int iteration) {
    if (!any_self_collision(w)) {
        return;
    }
    if (iteration == 0) {
        const uint32_t buckets = bucket_count(w);
        const uint32_t room = w->reserved.particles * SIM__SELF_PAIRS_PER_PARTICLE;
        uint32_t used = 0;
        build_hash(w);
        for (uint32_t k = 0; k < w->order_count; ++k) {
            sim__entity* e = &w->entities[w->order[k]];
            e->sc_count = 0;
            if (e->self_collision && e->iterations > 0) {
                e->sc_first = used;
                e->sc_count = find_pairs(w, e, buckets, used, room - used);
                used += e->sc_count;
            }
        }
    }
    for (uint32_t k = 0; k < w->order_count; ++k) {
        const sim__entity* e = &w->entities[w->order[k]];
        if (!e->self_collision || iteration >= e->iterations) { // off, or fewer (lod.c)
            continue;
        }
        const sim__self_pair* q = w->sc_pairs + e->sc_first;
        for (uint32_t n = 0; n < e->sc_count; ++n) {
            separate(w, e->p_first + q[n].a, e->p_first + q[n].b, e->thickness);
        }
    }
}
