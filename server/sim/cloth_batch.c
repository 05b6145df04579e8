/*
 * cloth_batch.c: a cloth's distance constraints projected four at a time.
 *
 * The sequential loop (particle.c) projects one constraint after another,
 * each an out-of-line call that waits on the previous one's square root and
 * divisions, since consecutive constraints of a grid share particles. Here,
 * at spawn (and after the constraints change), each cloth's constraints are
 * put into blocks of four that share no particle (sim__dist_block, one
 * cache line, structure of arrays), and a pass projects a block's four
 * lanes at once with lanes.h (SSE2 on x86-64, the portable struct
 * elsewhere or with RD_SIM_NO_SIMD; the same bits).
 *
 * The blocks keep the sequential results bit for bit. A constraint goes
 * into the first block with a free lane after every block that holds an
 * earlier constraint sharing one of its particles:
 *
 *   array order   c0(0,1) c1(0,4) c2(1,2) c3(1,5) c4(2,3) ...
 *   block 0       c0      c4 ...            lanes share no particle
 *   block 1       c1      c2 ...            c1 after c0 (particle 0)
 *   block 2       c3      ...               c3 after c1 and c2 (particle 1)
 *
 * so any two constraints that share a particle are projected in array
 * order, and two that share none commute exactly (each reads and writes
 * only its own two particles and its own λ). Each lane does what
 * sim__project_dist() does, operation for operation (the same IEEE single
 * operations in the same order, no fusing, branches as selects). Graph
 * colouring (Box2D v3) would give fewer, wider batches but change the sweep
 * order, and with it the convergence of a hanging cloth and every pinned
 * hash; a grid's dependency order already has enough independent
 * constraints to fill four lanes (a 64 × 64 cloth's blocks are 99.5 %
 * full, test_cloth prints the padding).
 *
 * During a pass the cloth's positions and inverse masses are staged in
 * w->xyzw as x, y, z, w quadruples, so that a lane is gathered by one
 * 16-byte load and a 4 × 4 transpose, and scattered the same way back.
 * Empty lanes (padding at the end of a block) gather and scatter a
 * stand-in particle one past the cloth's last, of inverse mass 0.
 *
 * It owns nothing: the blocks, their scratch and the staging array are
 * world arrays (world.c), reserved at spawn time; nothing here allocates.
 */
#include "lanes.h"
#include "world.h"

#include <string.h>

// Blocks holding constraints that share a particle are at least this far
// apart: sim__cloth_batches_project() solves two blocks at once, which
// needs 2. A wider gap (4: each pair also free of the one before) measured
// no faster on this machine and pads narrow cloths more (a 7 × 30 one to
// 1.50× a quarter of its constraints, from 1.05×).
#define SIM__BATCH_GAP 2u

void sim__cloth_batches_drop(sim_world* w, sim__entity* e) {
    if (e->cb_count == 0) {
        e->cb_first = 0;
        return;
    }
    const uint32_t first = e->cb_first, count = e->cb_count;
    memmove(&w->dist_blocks[first], &w->dist_blocks[first + count],
            (w->db_count - first - count) * sizeof *w->dist_blocks);
    w->db_count -= count;
    // Ranges are in no particular order: every live one past the hole slides.
    for (uint32_t k = 0; k < w->order_count; ++k) {
        sim__entity* o = &w->entities[w->order[k]];
        if (o != e && o->cb_count > 0 && o->cb_first > first) {
            o->cb_first -= count;
        }
    }
    e->cb_first = 0;
    e->cb_count = 0;
}

// The first block at or after r with a free lane: a union-find over "the
// next block that may have room" (a full block points to the one after it),
// with path compression. Blocks at n and beyond do not exist yet (empty).
static uint32_t first_open(uint32_t* next, uint32_t r, uint32_t n) {
    uint32_t root = r;
    while (root < n && next[root] != root) {
        root = next[root];
    }
    while (r < n && next[r] != r) {
        uint32_t t = next[r];
        next[r] = root;
        r = t;
    }
    return root;
}

// An empty block: every lane on the stand-in particle (a == b == n, the
// cloth's particle count), nothing to project.
static void block_clear(sim__dist_block* b, uint32_t n) {
    memset(b, 0, sizeof *b);
    for (int i = 0; i < 4; ++i) {
        b->a[i] = b->b[i] = (uint16_t)(2u * n);
    }
}

int sim__cloth_batches_rebuild(sim_world* w, sim__entity* e) {
    sim__cloth_batches_drop(w, e);
    if (e->kind != SIM_ENTITY_CLOTH || e->p_count > SIM__BATCH_MAX_PARTICLES) {
        return SIM_E_INVALID_ARG;
    }
    const sim__dist* d = w->dist + e->d_first;
    for (uint32_t k = 0; k < e->d_count; ++k) {
        if (d[k].kind != SIM__DIST_EQUAL && d[k].kind != SIM__DIST_TORN) {
            return SIM_E_INVALID_ARG;
        }
    }
    const uint32_t base = w->db_count;
    const size_t cap = SIM__DIST_BLOCKS(w->reserved.constraints, w->reserved.particles);
    const uint32_t room = cap > base ? (uint32_t)(cap - base) : 0u;
    sim__dist_block* blocks = w->dist_blocks + base;
    uint32_t* next = w->db_next + base;
    sim__xyzw* ready = w->xyzw; // u[0]: the first block particle i is free in
    for (uint32_t i = 0; i < e->p_count; ++i) {
        ready[i].u[0] = 0;
    }
    uint32_t n = 0; // blocks in use
    for (uint32_t k = 0; k < e->d_count; ++k) {
        const uint32_t a = d[k].a, b = d[k].b;
        if (a == b || d[k].kind == SIM__DIST_TORN) {
            continue; // projects to nothing (no direction; torn), in any order
        }
        uint32_t r = ready[a].u[0] > ready[b].u[0] ? ready[a].u[0] : ready[b].u[0];
        uint32_t at = first_open(next, r, n);
        if (at >= room) {
            return SIM_E_CAPACITY; // nothing kept: e stays sequential
        }
        while (n <= at) {
            block_clear(&blocks[n], e->p_count);
            next[n] = n;
            n++;
        }
        sim__dist_block* blk = &blocks[at];
        // Lanes fill in order; first_open() never returns a full block.
        int lane = 0;
        while (lane < 3 && blk->a[lane] != blk->b[lane]) {
            lane++;
        }
        blk->a[lane] = (uint16_t)(2u * a);
        blk->b[lane] = (uint16_t)(2u * b);
        blk->rest[lane] = d[k].rest;
        blk->compliance[lane] = d[k].compliance;
        blk->lambda[lane] = 0.0f;
        if (lane == 3) {
            next[at] = at + 1; // full
        }
        ready[a].u[0] = at + SIM__BATCH_GAP;
        ready[b].u[0] = at + SIM__BATCH_GAP;
    }
    e->cb_first = base;
    e->cb_count = n;
    w->db_count += n;
    return SIM_OK;
}

void sim__cloth_batches_reset(sim_world* w) {
    for (uint32_t i = 0; i < w->db_count; ++i) {
        memset(w->dist_blocks[i].lambda, 0, sizeof w->dist_blocks[i].lambda);
    }
}

// The lanes of one side of a block: positions and inverse masses.
typedef struct side4 {
    sim__fw x, y, z, w;
} side4;

// The staged particle of a lane: i2 is twice its index, so 8 × i2 is its
// byte offset (one scaled-index address, no shift). Through void*: the
// result is a sim__xyzw's first float (i2 is even), aligned as p is.
static inline float* lane_at(sim__xyzw* p, uint32_t i2) {
    return (float*)(void*)((char*)p + 8u * (size_t)i2);
}

static inline side4 gather(sim__xyzw* p, const uint16_t* idx) {
    side4 s = {sim__fw_load(lane_at(p, idx[0])), sim__fw_load(lane_at(p, idx[1])),
               sim__fw_load(lane_at(p, idx[2])), sim__fw_load(lane_at(p, idx[3]))};
    sim__fw_transpose(&s.x, &s.y, &s.z, &s.w);
    return s;
}

// Block k's lanes: gathered, each projected as sim__project_dist() does
// (in its order of operations; its early returns, wsum == 0 and
// len < 1e-6, as selects that keep the old values), left in *A and *B.
static inline void block_solve(sim__dist_block* blk, side4* A, side4* B, sim__fw ih2) {
    const sim__fw zero = sim__fw_zero();
    const sim__fw tiny = sim__fw_splat(1e-6f);
    sim__fw wsum = sim__fw_add(A->w, B->w);
    sim__fw dx = sim__fw_sub(B->x, A->x);
    sim__fw dy = sim__fw_sub(B->y, A->y);
    sim__fw dz = sim__fw_sub(B->z, A->z);
    sim__fw len = sim__fw_sqrt(
        sim__fw_add(sim__fw_add(sim__fw_mul(dx, dx), sim__fw_mul(dy, dy)), sim__fw_mul(dz, dz)));
    sim__mw skip = sim__mw_or(sim__fw_eq(wsum, zero), sim__fw_gt(tiny, len));
    sim__fw C = sim__fw_sub(len, sim__fw_load(blk->rest));
    sim__fw alpha = sim__fw_mul(sim__fw_load(blk->compliance), ih2);
    sim__fw lambda = sim__fw_load(blk->lambda);
    sim__fw dl = sim__fw_div(sim__fw_sub(sim__fw_neg(C), sim__fw_mul(alpha, lambda)),
                             sim__fw_add(wsum, alpha));
    sim__fw s = sim__fw_div(dl, len);
    sim__fw cx = sim__fw_mul(dx, s), cy = sim__fw_mul(dy, s), cz = sim__fw_mul(dz, s);
    if (!sim__mw_any(skip)) {
        // Almost every block: no lane returns early, so no selects.
        sim__fw_store(blk->lambda, sim__fw_add(lambda, dl));
        A->x = sim__fw_sub(A->x, sim__fw_mul(cx, A->w));
        A->y = sim__fw_sub(A->y, sim__fw_mul(cy, A->w));
        A->z = sim__fw_sub(A->z, sim__fw_mul(cz, A->w));
        B->x = sim__fw_add(B->x, sim__fw_mul(cx, B->w));
        B->y = sim__fw_add(B->y, sim__fw_mul(cy, B->w));
        B->z = sim__fw_add(B->z, sim__fw_mul(cz, B->w));
        return;
    }
    sim__fw_store(blk->lambda, sim__fw_select(skip, lambda, sim__fw_add(lambda, dl)));
    A->x = sim__fw_select(skip, A->x, sim__fw_sub(A->x, sim__fw_mul(cx, A->w)));
    A->y = sim__fw_select(skip, A->y, sim__fw_sub(A->y, sim__fw_mul(cy, A->w)));
    A->z = sim__fw_select(skip, A->z, sim__fw_sub(A->z, sim__fw_mul(cz, A->w)));
    B->x = sim__fw_select(skip, B->x, sim__fw_add(B->x, sim__fw_mul(cx, B->w)));
    B->y = sim__fw_select(skip, B->y, sim__fw_add(B->y, sim__fw_mul(cy, B->w)));
    B->z = sim__fw_select(skip, B->z, sim__fw_add(B->z, sim__fw_mul(cz, B->w)));
}

// Writes a solved block's particles back. Empty lanes write the stand-in,
// which no real lane reads.
static inline void scatter(sim__xyzw* p, const sim__dist_block* blk, side4 A, side4 B) {
    sim__fw_transpose(&A.x, &A.y, &A.z, &A.w);
    sim__fw_transpose(&B.x, &B.y, &B.z, &B.w);
    sim__fw_store(lane_at(p, blk->a[0]), A.x);
    sim__fw_store(lane_at(p, blk->b[0]), B.x);
    sim__fw_store(lane_at(p, blk->a[1]), A.y);
    sim__fw_store(lane_at(p, blk->b[1]), B.y);
    sim__fw_store(lane_at(p, blk->a[2]), A.z);
    sim__fw_store(lane_at(p, blk->b[2]), B.z);
    sim__fw_store(lane_at(p, blk->a[3]), A.w);
    sim__fw_store(lane_at(p, blk->b[3]), B.w);
}

void sim__cloth_batches_project(sim_world* w, const sim__entity* e, float inv_h2) {
    sim_vec3* pos = w->pos + e->p_first;
    const float* im = w->inv_mass + e->p_first;
    sim__xyzw* p = w->xyzw;
    for (uint32_t i = 0; i < e->p_count; ++i) {
        p[i].f[0] = pos[i].x;
        p[i].f[1] = pos[i].y;
        p[i].f[2] = pos[i].z;
        p[i].f[3] = im[i];
    }
    // The empty lanes' stand-in: inverse mass 0, so it projects to nothing.
    memset(&p[e->p_count], 0, sizeof p[e->p_count]);
    const sim__fw ih2 = sim__fw_splat(inv_h2);
    sim__dist_block* blk = w->dist_blocks + e->cb_first;
    const uint32_t n = e->cb_count;
    uint32_t k = 0;
    // Two blocks at a time: they share no particle (the schedule keeps
    // blocks that do SIM__BATCH_GAP apart), so the second's square root and
    // divisions need not wait for the first's.
    for (; k + 1 < n; k += 2) {
        side4 A0 = gather(p, blk[k].a), B0 = gather(p, blk[k].b);
        side4 A1 = gather(p, blk[k + 1].a), B1 = gather(p, blk[k + 1].b);
        block_solve(&blk[k], &A0, &B0, ih2);
        block_solve(&blk[k + 1], &A1, &B1, ih2);
        scatter(p, &blk[k], A0, B0);
        scatter(p, &blk[k + 1], A1, B1);
    }
    if (k < n) {
        side4 A0 = gather(p, blk[k].a), B0 = gather(p, blk[k].b);
        block_solve(&blk[k], &A0, &B0, ih2);
        scatter(p, &blk[k], A0, B0);
    }
    for (uint32_t i = 0; i < e->p_count; ++i) {
        pos[i].x = p[i].f[0];
        pos[i].y = p[i].f[1];
        pos[i].z = p[i].f[2];
    }
}
