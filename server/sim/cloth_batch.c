/*
 * cloth_batch.c: a cloth's distance constraints projected four at a time,
 * in lanes of neighbouring particles.
 *
 * The sequential loop (particle.c) projects one constraint after another,
 * each waiting on the previous one's square root and division, since
 * consecutive constraints of a grid share particles. Here a cloth's grid
 * is staged for a pass as structure of arrays (x, y, z and inverse mass,
 * each row padded to a stride that is a multiple of four), and its
 * constraints are put into blocks of four lanes that share no particle and
 * whose particles sit side by side in a row:
 *
 *   family (row r, column c)      lanes of one block            loads a coordinate
 *   down      (r,c)-(r+1,c)       c .. c+3 against row r+1      1 + 1
 *   diagonal  (r,c)-(r+1,c+1)     c .. c+3, and (r,c+1)-(r+1,c) 1 + 1
 *   bend down (r,c)-(r+2,c)       c .. c+3 against row r+2      1 + 1
 *   across    (r,c)-(r,c+1)       pairs c+2l, c+2l+1 (l = 0..3) 2, a shuffle
 *   bend across (r,c)-(r,c+2)     c + 0, 1, 4, 5 and two on     2, a shuffle
 *
 * so a block is loaded and stored with 16-byte moves and no gather (Box2D
 * v3's wide contact solver gathers bodies by index and transposes; a grid
 * needs neither). Across a row, pairs of neighbours are solved in two
 * colours: the even pairs (0,1) (2,3) ..., then the odd ones (1,2) (3,4)
 * ...; bend across likewise, with columns 0, 1 mod 4 then 2, 3 mod 4.
 *
 * Order. One sweep per family, in the sequential loop's order of kinds
 * (structural: across by colour, then down; shear: the two diagonals;
 * bend: across by colour, then down), each row by row from row 0, so a pass
 * still carries a hanging cloth's load from its pinned row to its hem in
 * one sweep (a red-black order by rows would take a pass per two rows). A
 * family in a sweep of its own keeps a block's loads away from the stores
 * of a block of another family at other offsets (a store the processor
 * cannot forward stalls the load). Blocks of one row are independent of
 * each other; a block of row r + 1 waits only on the block above it, so the
 * processor overlaps a row's blocks. Results differ from the sequential
 * loop's order (constraints across a row are taken in colour order, and a
 * lane's Δλ and Δλ/|d| come from one division), not in what they converge
 * to.
 *
 * Empty lanes (columns past a row's end, a constraint torn or missing)
 * have a negative rest length; a lane that is empty, degenerate (|d| <
 * 1e-6) or between two pinned particles is masked to no change, so it
 * stores back what it loaded. Constraints of no family (a skirt's seam
 * from its last column to its first) go into SCALAR blocks at the end.
 *
 * Staging. A pass stages the cloth and puts it back. A cloth that nothing
 * else touches between passes (particle.c's sim__particles_project_ahead())
 * keeps its staging across the substep's passes for as long as its box
 * stays clear of every collider (sim__cloth_batches_ahead()): the staging
 * was an eighth of a hanging 64 × 64 cloth's tick at 10 passes.
 *
 * The blocks are built by cloth_schedule.c. It owns nothing: the blocks
 * and the staging are world arrays (world.c), reserved at spawn time;
 * nothing here allocates.
 */
#include "lanes.h"
#include "world.h"

// Staging reads four particles as twelve consecutive floats.
_Static_assert(sizeof(sim_vec3) == 3 * sizeof(float), "sim_vec3 is three floats, unpadded");

// ---------------------------------------------------------------------------
// A pass
// ---------------------------------------------------------------------------

// The staged cloth: four arrays of rows × stride floats.
typedef struct staged {
    float *x, *y, *z, *w;
} staged;

// The four lanes of one side of a block.
typedef struct side4 {
    sim__fw x, y, z, w;
} side4;

static inline side4 load4(const staged* p, uint32_t at) {
    side4 s = {sim__fw_load(p->x + at), sim__fw_load(p->y + at), sim__fw_load(p->z + at),
               sim__fw_load(p->w + at)};
    return s;
}

static inline void store4(const staged* p, uint32_t at, const side4* s) {
    sim__fw_store(p->x + at, s->x);
    sim__fw_store(p->y + at, s->y);
    sim__fw_store(p->z + at, s->z);
}

// Constants of a pass.
typedef struct consts {
    sim__fw zero, tiny2, empty, one, ih2;
} consts;

// The four lanes' projections (XPBD, Macklin et al. 2016, eq. 18):
// C = |d| - rest, Δλ = (-C - α̃λ) / (wa + wb + α̃), Δx = ∓w·Δλ·d/|d|.
// Δλ/|d| is computed as (-C - α̃λ)·|d| · 1/((wa + wb + α̃)·|d|²), so that
// the square root and the division both start from |d|² and run side by
// side. Masked to no change where the lane is empty, |d|² <= 1e-12 or both
// ends are pinned. `rigid` (compliance 0, known by the caller) leaves λ
// out: with α̃ = 0 it does not change the positions (-C - 0·λ = -C,
// wa + wb + 0 = wa + wb exactly), so its sum is not kept.
static inline void solve4(sim__lane_block* blk, side4* A, side4* B, const consts* k, bool rigid) {
    sim__fw dx = sim__fw_sub(B->x, A->x);
    sim__fw dy = sim__fw_sub(B->y, A->y);
    sim__fw dz = sim__fw_sub(B->z, A->z);
    sim__fw len2 =
        sim__fw_add(sim__fw_add(sim__fw_mul(dx, dx), sim__fw_mul(dy, dy)), sim__fw_mul(dz, dz));
    sim__fw wsum = sim__fw_add(A->w, B->w);
    sim__fw len = sim__fw_sqrt(len2);
    sim__fw rest = sim__fw_load(blk->rest);
    sim__mw valid = sim__mw_and(sim__mw_and(sim__fw_gt(len2, k->tiny2), sim__fw_gt(wsum, k->zero)),
                                sim__fw_gt(rest, k->empty));
    sim__fw s;
    if (rigid) {
        sim__fw q = sim__fw_div(k->one, sim__fw_mul(wsum, len2));
        s = sim__fw_keep(valid, sim__fw_mul(sim__fw_mul(sim__fw_sub(rest, len), len), q));
    } else {
        const sim__fw alpha = sim__fw_mul(sim__fw_splat(blk->compliance), k->ih2);
        sim__fw q = sim__fw_div(k->one, sim__fw_mul(sim__fw_add(wsum, alpha), len2));
        sim__fw lambda = sim__fw_load(blk->lambda);
        sim__fw num = sim__fw_sub(sim__fw_sub(rest, len), sim__fw_mul(alpha, lambda));
        s = sim__fw_keep(valid, sim__fw_mul(sim__fw_mul(num, len), q));
        sim__fw_store(blk->lambda, sim__fw_add(lambda, sim__fw_mul(s, len)));
    }
    sim__fw sa = sim__fw_mul(s, A->w), sb = sim__fw_mul(s, B->w);
    A->x = sim__fw_sub(A->x, sim__fw_mul(dx, sa));
    A->y = sim__fw_sub(A->y, sim__fw_mul(dy, sa));
    A->z = sim__fw_sub(A->z, sim__fw_mul(dz, sa));
    B->x = sim__fw_add(B->x, sim__fw_mul(dx, sb));
    B->y = sim__fw_add(B->y, sim__fw_mul(dy, sb));
    B->z = sim__fw_add(B->z, sim__fw_mul(dz, sb));
}

static inline void solve_one(sim__lane_block* b, side4* A, side4* B, const consts* k) {
    solve4(b, A, B, k, b->compliance == 0.0f);
}

// A run of ROW blocks, one after another: they share no particle, so the
// processor overlaps one's square root and division with the next's (two
// blocks an iteration spilled SSE2's sixteen registers and measured about
// 9 % slower: farm-bench, 15 runs of the 64 × 64 cloth, AVX off).
static void solve_rows(const staged* p, sim__lane_block* blk, uint32_t n, const consts* k) {
    for (uint32_t i = 0; i < n; ++i) {
        const uint32_t a = blk[i].base + blk[i].a_off, b = blk[i].base + blk[i].b_off;
        side4 A = load4(p, a), B = load4(p, b);
        solve_one(&blk[i], &A, &B, k);
        store4(p, a, &A);
        store4(p, b, &B);
    }
}

// Eight floats at q split into A and B lanes (pairs1: even/odd; else
// halves), and back.
static inline void split8(const float* q, bool pairs1, sim__fw* a, sim__fw* b) {
    sim__fw lo = sim__fw_load(q), hi = sim__fw_load(q + 4);
    if (pairs1) {
        sim__fw_deal(lo, hi, a, b);
    } else {
        sim__fw_halves(lo, hi, a, b);
    }
}

static inline void join8(float* q, bool pairs1, sim__fw a, sim__fw b) {
    sim__fw lo, hi;
    if (pairs1) {
        sim__fw_undeal(a, b, &lo, &hi);
    } else {
        sim__fw_unhalves(a, b, &lo, &hi);
    }
    sim__fw_store(q, lo);
    sim__fw_store(q + 4, hi);
}

static inline side4 load_pairs(const staged* p, uint32_t at, bool pairs1, side4* B) {
    side4 A;
    split8(p->x + at, pairs1, &A.x, &B->x);
    split8(p->y + at, pairs1, &A.y, &B->y);
    split8(p->z + at, pairs1, &A.z, &B->z);
    split8(p->w + at, pairs1, &A.w, &B->w);
    return A;
}

static inline void store_pairs(const staged* p, uint32_t at, bool pairs1, const side4* A,
                               const side4* B) {
    join8(p->x + at, pairs1, A->x, B->x);
    join8(p->y + at, pairs1, A->y, B->y);
    join8(p->z + at, pairs1, A->z, B->z);
}

// A run of PAIRS blocks, one after another.
static inline void solve_pairs(const staged* p, sim__lane_block* blk, uint32_t n, bool pairs1,
                               const consts* k) {
    for (uint32_t i = 0; i < n; ++i) {
        side4 B;
        side4 A = load_pairs(p, blk[i].base, pairs1, &B);
        solve_one(&blk[i], &A, &B, k);
        store_pairs(p, blk[i].base, pairs1, &A, &B);
    }
}

// ---------------------------------------------------------------------------
// Eight lanes: two blocks in one AVX register (x86-64 with AVX, chosen at
// run time)
// ---------------------------------------------------------------------------

#if SIM__LANES_SSE2 && (defined(__GNUC__) || defined(__clang__))
#define SIM__CLOTH_AVX 1
#include <immintrin.h>

// The functions below use AVX (VEX-encoded 256-bit single operations; no
// FMA: the target is "avx", not "fma"), so they run only when the CPU has
// it. Lane for lane they do the same IEEE operations as solve4() on two
// blocks, so results are the same bits with or without them.
#define SIM__AVX __attribute__((target("avx")))

typedef struct side8 {
    __m256 x, y, z, w;
} side8;

// Four floats at p0 in the low half, four at p1 in the high half.
SIM__AVX static inline __m256 ld2(const float* p0, const float* p1) {
    return _mm256_insertf128_ps(_mm256_castps128_ps256(_mm_loadu_ps(p0)), _mm_loadu_ps(p1), 1);
}

SIM__AVX static inline void st2(float* p0, float* p1, __m256 v) {
    _mm_storeu_ps(p0, _mm256_castps256_ps128(v));
    _mm_storeu_ps(p1, _mm256_extractf128_ps(v, 1));
}

SIM__AVX static inline __m256 splat2(float a, float b) {
    return _mm256_insertf128_ps(_mm256_castps128_ps256(_mm_set1_ps(a)), _mm_set1_ps(b), 1);
}

// solve4() on blocks b0 (low half) and b1 (high half).
SIM__AVX static inline void solve8w(sim__lane_block* b0, sim__lane_block* b1, side8* A, side8* B,
                                    float inv_h2, bool rigid) {
    const __m256 zero = _mm256_setzero_ps();
    __m256 dx = _mm256_sub_ps(B->x, A->x);
    __m256 dy = _mm256_sub_ps(B->y, A->y);
    __m256 dz = _mm256_sub_ps(B->z, A->z);
    __m256 len2 = _mm256_add_ps(_mm256_add_ps(_mm256_mul_ps(dx, dx), _mm256_mul_ps(dy, dy)),
                                _mm256_mul_ps(dz, dz));
    __m256 wsum = _mm256_add_ps(A->w, B->w);
    __m256 len = _mm256_sqrt_ps(len2);
    __m256 rest = ld2(b0->rest, b1->rest);
    __m256 valid =
        _mm256_and_ps(_mm256_and_ps(_mm256_cmp_ps(len2, _mm256_set1_ps(1e-12f), _CMP_GT_OQ),
                                    _mm256_cmp_ps(wsum, zero, _CMP_GT_OQ)),
                      _mm256_cmp_ps(rest, _mm256_set1_ps(-0.5f), _CMP_GT_OQ));
    __m256 s;
    if (rigid) {
        __m256 q = _mm256_div_ps(_mm256_set1_ps(1.0f), _mm256_mul_ps(wsum, len2));
        s = _mm256_and_ps(valid, _mm256_mul_ps(_mm256_mul_ps(_mm256_sub_ps(rest, len), len), q));
    } else {
        // α̃ = compliance × 1/h², as solve4() multiplies it (splat, then a
        // lane-wise product: the same single product).
        const __m256 alpha =
            _mm256_mul_ps(splat2(b0->compliance, b1->compliance), _mm256_set1_ps(inv_h2));
        __m256 q =
            _mm256_div_ps(_mm256_set1_ps(1.0f), _mm256_mul_ps(_mm256_add_ps(wsum, alpha), len2));
        __m256 lambda = ld2(b0->lambda, b1->lambda);
        __m256 num = _mm256_sub_ps(_mm256_sub_ps(rest, len), _mm256_mul_ps(alpha, lambda));
        s = _mm256_and_ps(valid, _mm256_mul_ps(_mm256_mul_ps(num, len), q));
        st2(b0->lambda, b1->lambda, _mm256_add_ps(lambda, _mm256_mul_ps(s, len)));
    }
    __m256 sa = _mm256_mul_ps(s, A->w), sb = _mm256_mul_ps(s, B->w);
    A->x = _mm256_sub_ps(A->x, _mm256_mul_ps(dx, sa));
    A->y = _mm256_sub_ps(A->y, _mm256_mul_ps(dy, sa));
    A->z = _mm256_sub_ps(A->z, _mm256_mul_ps(dz, sa));
    B->x = _mm256_add_ps(B->x, _mm256_mul_ps(dx, sb));
    B->y = _mm256_add_ps(B->y, _mm256_mul_ps(dy, sb));
    B->z = _mm256_add_ps(B->z, _mm256_mul_ps(dz, sb));
}

SIM__AVX static inline void solve8_either(sim__lane_block* b0, sim__lane_block* b1, side8* A,
                                          side8* B, float inv_h2) {
    if (b0->compliance == 0.0f && b1->compliance == 0.0f) {
        solve8w(b0, b1, A, B, inv_h2, true);
    } else {
        solve8w(b0, b1, A, B, inv_h2, false);
    }
}

SIM__AVX static inline side8 load8(const staged* p, uint32_t at0, uint32_t at1) {
    side8 s = {ld2(p->x + at0, p->x + at1), ld2(p->y + at0, p->y + at1),
               ld2(p->z + at0, p->z + at1), ld2(p->w + at0, p->w + at1)};
    return s;
}

SIM__AVX static inline void store8(const staged* p, uint32_t at0, uint32_t at1, const side8* s) {
    st2(p->x + at0, p->x + at1, s->x);
    st2(p->y + at0, p->y + at1, s->y);
    st2(p->z + at0, p->z + at1, s->z);
}

// solve_rows() with two blocks a register.
SIM__AVX static void solve_rows_avx(const staged* p, sim__lane_block* blk, uint32_t n,
                                    const consts* k, float inv_h2) {
    uint32_t i = 0;
    for (; i + 1 < n; i += 2) {
        const uint32_t a0 = blk[i].base + blk[i].a_off, b0 = blk[i].base + blk[i].b_off;
        const uint32_t a1 = blk[i + 1].base + blk[i + 1].a_off;
        const uint32_t b1 = blk[i + 1].base + blk[i + 1].b_off;
        side8 A = load8(p, a0, a1), B = load8(p, b0, b1);
        solve8_either(&blk[i], &blk[i + 1], &A, &B, inv_h2);
        store8(p, a0, a1, &A);
        store8(p, b0, b1, &B);
    }
    if (i < n) {
        solve_rows(p, &blk[i], 1, k);
    }
}

// Eight floats at q0 and eight at q1 (a block each) split as split8() does,
// each 128-bit half on its own (AVX's shuffles work within halves).
SIM__AVX static inline void split16(const float* q0, const float* q1, bool pairs1, __m256* a,
                                    __m256* b) {
    __m256 lo = ld2(q0, q1), hi = ld2(q0 + 4, q1 + 4);
    if (pairs1) {
        *a = _mm256_shuffle_ps(lo, hi, _MM_SHUFFLE(2, 0, 2, 0));
        *b = _mm256_shuffle_ps(lo, hi, _MM_SHUFFLE(3, 1, 3, 1));
    } else {
        *a = _mm256_shuffle_ps(lo, hi, _MM_SHUFFLE(1, 0, 1, 0));
        *b = _mm256_shuffle_ps(lo, hi, _MM_SHUFFLE(3, 2, 3, 2));
    }
}

SIM__AVX static inline void join16(float* q0, float* q1, bool pairs1, __m256 a, __m256 b) {
    __m256 lo, hi;
    if (pairs1) {
        lo = _mm256_unpacklo_ps(a, b);
        hi = _mm256_unpackhi_ps(a, b);
    } else {
        lo = _mm256_shuffle_ps(a, b, _MM_SHUFFLE(1, 0, 1, 0));
        hi = _mm256_shuffle_ps(a, b, _MM_SHUFFLE(3, 2, 3, 2));
    }
    st2(q0, q1, lo);
    st2(q0 + 4, q1 + 4, hi);
}

// solve_pairs() with two blocks a register.
SIM__AVX static void solve_pairs_avx(const staged* p, sim__lane_block* blk, uint32_t n, bool pairs1,
                                     const consts* k, float inv_h2) {
    uint32_t i = 0;
    for (; i + 1 < n; i += 2) {
        const uint32_t at0 = blk[i].base, at1 = blk[i + 1].base;
        side8 A, B;
        split16(p->x + at0, p->x + at1, pairs1, &A.x, &B.x);
        split16(p->y + at0, p->y + at1, pairs1, &A.y, &B.y);
        split16(p->z + at0, p->z + at1, pairs1, &A.z, &B.z);
        split16(p->w + at0, p->w + at1, pairs1, &A.w, &B.w);
        solve8_either(&blk[i], &blk[i + 1], &A, &B, inv_h2);
        join16(p->x + at0, p->x + at1, pairs1, A.x, B.x);
        join16(p->y + at0, p->y + at1, pairs1, A.y, B.y);
        join16(p->z + at0, p->z + at1, pairs1, A.z, B.z);
    }
    if (i < n) {
        solve_pairs(p, &blk[i], 1, pairs1, k);
    }
}
#else
#define SIM__CLOTH_AVX 0
#endif

bool sim__cloth_lanes_avx = true;

// Whether this pass uses the eight-lane functions: the CPU has AVX (GCC's
// and clang's run-time check, set up before main) and they are not
// switched off.
static bool use_avx(void) {
#if SIM__CLOTH_AVX
    return sim__cloth_lanes_avx && __builtin_cpu_supports("avx");
#else
    return false;
#endif
}

// A SCALAR block: its constraints one by one, the lanes' arithmetic in
// single floats (the same operations, so the portable and SSE2 builds
// agree).
static void solve_scalar(const staged* p, const sim__lane_block* blk, sim__dist* d, uint32_t C,
                         uint32_t S, float inv_h2) {
    for (int i = 0; i < 4 && blk->dist[i] != UINT32_MAX; ++i) {
        sim__dist* c = &d[blk->dist[i]];
        const uint32_t a = (c->a / C) * S + c->a % C, b = (c->b / C) * S + c->b % C;
        const float wa = p->w[a], wb = p->w[b], wsum = wa + wb;
        const float dx = p->x[b] - p->x[a], dy = p->y[b] - p->y[a], dz = p->z[b] - p->z[a];
        const float len2 = (dx * dx + dy * dy) + dz * dz;
        if (!(len2 > 1e-12f) || !(wsum > 0.0f)) {
            continue;
        }
        const float alpha = c->compliance * inv_h2;
        const float len = sqrtf(len2);
        const float q = 1.0f / ((wsum + alpha) * len2);
        const float s = (((c->rest - len) - alpha * c->lambda) * len) * q;
        c->lambda += s * len;
        const float sa = s * wa, sb = s * wb;
        p->x[a] -= dx * sa;
        p->y[a] -= dy * sa;
        p->z[a] -= dz * sa;
        p->x[b] += dx * sb;
        p->y[b] += dy * sb;
        p->z[b] += dz * sb;
    }
}

// The staging of entity e: four arrays of rows × stride floats.
static staged staging_of(const sim_world* w, const sim__entity* e) {
    const size_t N = (size_t)e->rows * sim__cloth_lane_stride(e->cols);
    const staged p = {w->lane_staging, w->lane_staging + N, w->lane_staging + 2 * N,
                      w->lane_staging + 3 * N};
    return p;
}

// e's positions and inverse masses into the staging, padding zeroed.
static void stage(const sim_world* w, const sim__entity* e, const staged* p) {
    const uint32_t C = e->cols, R = e->rows, S = sim__cloth_lane_stride(C);
    const sim_vec3* pos = w->pos + e->p_first;
    const float* im = w->inv_mass + e->p_first;
    for (uint32_t r = 0; r < R; ++r) {
        const uint32_t row = r * S, src = r * C;
        uint32_t c = 0;
        for (; c + 4 <= C; c += 4) {
            // Four particles' twelve floats (sim_vec3 is three, unpadded).
            const float* q = &pos[src + c].x;
            sim__fw x, y, z;
            sim__fw_from_xyz(sim__fw_load(q), sim__fw_load(q + 4), sim__fw_load(q + 8), &x, &y, &z);
            sim__fw_store(p->x + row + c, x);
            sim__fw_store(p->y + row + c, y);
            sim__fw_store(p->z + row + c, z);
            sim__fw_store(p->w + row + c, sim__fw_load(im + src + c));
        }
        for (; c < C; ++c) {
            p->x[row + c] = pos[src + c].x;
            p->y[row + c] = pos[src + c].y;
            p->z[row + c] = pos[src + c].z;
            p->w[row + c] = im[src + c];
        }
        // The padding: lanes past the row's end read it, masked.
        for (c = C; c < S; ++c) {
            p->x[row + c] = p->y[row + c] = p->z[row + c] = p->w[row + c] = 0.0f;
        }
    }
}

// One pass over e's blocks on the staged particles.
static void pass(sim_world* w, const sim__entity* e, const staged* p, float inv_h2) {
    const uint32_t C = e->cols, S = sim__cloth_lane_stride(C);
    sim__lane_block* blk = w->lane_blocks + e->cb_first;
    sim__dist* d = w->dist + e->d_first;
    const consts k = {sim__fw_zero(), sim__fw_splat(1e-12f), sim__fw_splat(-0.5f),
                      sim__fw_splat(1.0f), sim__fw_splat(inv_h2)};
    const bool wide = use_avx();
    for (uint32_t i = 0; i < e->cb_count;) {
        const uint32_t n = blk[i].run;
#if SIM__CLOTH_AVX
        if (wide && blk[i].kind != SIM__LANES_SCALAR) {
            if (blk[i].kind == SIM__LANES_ROW) {
                solve_rows_avx(p, &blk[i], n, &k, inv_h2);
            } else {
                solve_pairs_avx(p, &blk[i], n, blk[i].kind == SIM__LANES_PAIRS1, &k, inv_h2);
            }
            i += n;
            continue;
        }
#else
        (void)wide;
#endif
        switch (blk[i].kind) {
        case SIM__LANES_ROW:
            solve_rows(p, &blk[i], n, &k);
            break;
        case SIM__LANES_PAIRS1:
            solve_pairs(p, &blk[i], n, true, &k);
            break;
        case SIM__LANES_PAIRS2:
            solve_pairs(p, &blk[i], n, false, &k);
            break;
        default:
            solve_scalar(p, &blk[i], d, C, S, inv_h2);
            break;
        }
        i += n;
    }
}

// The staged positions back into w->pos.
static void unstage(sim_world* w, const sim__entity* e, const staged* p) {
    const uint32_t C = e->cols, R = e->rows, S = sim__cloth_lane_stride(C);
    sim_vec3* out = w->pos + e->p_first;
    for (uint32_t r = 0; r < R; ++r) {
        const uint32_t row = r * S, dst = r * C;
        uint32_t c = 0;
        for (; c + 4 <= C; c += 4) {
            float* q = &out[dst + c].x;
            sim__fw m0, m1, m2;
            sim__fw_to_xyz(sim__fw_load(p->x + row + c), sim__fw_load(p->y + row + c),
                           sim__fw_load(p->z + row + c), &m0, &m1, &m2);
            sim__fw_store(q, m0);
            sim__fw_store(q + 4, m1);
            sim__fw_store(q + 8, m2);
        }
        for (; c < C; ++c) {
            out[dst + c] = (sim_vec3){p->x[row + c], p->y[row + c], p->z[row + c]};
        }
    }
}

// The box of the staged particles (the padding left out). Minima and
// maxima do not depend on the order they are taken in, so this is the box
// sim__particle_bounds() gives once the staging is back in w->pos.
static void staged_bounds(const sim__entity* e, const staged* p, sim_vec3* lo, sim_vec3* hi) {
    const uint32_t C = e->cols, S = sim__cloth_lane_stride(C);
    const float* f[3] = {p->x, p->y, p->z};
    float l[3], h[3];
    for (int k = 0; k < 3; ++k) {
        sim__fw mn = sim__fw_splat(f[k][0]), mx = mn;
        float ls = f[k][0], hs = f[k][0];
        for (uint32_t r = 0; r < e->rows; ++r) {
            const float* q = f[k] + (size_t)r * S;
            uint32_t c = 0;
            for (; c + 4 <= C; c += 4) {
                const sim__fw v = sim__fw_load(q + c);
                mn = sim__fw_min(v, mn);
                mx = sim__fw_max(v, mx);
            }
            for (; c < C; ++c) {
                ls = q[c] < ls ? q[c] : ls;
                hs = q[c] > hs ? q[c] : hs;
            }
        }
        const float lv = sim__fw_least(mn), hv = sim__fw_most(mx);
        l[k] = lv < ls ? lv : ls;
        h[k] = hv > hs ? hv : hs;
    }
    *lo = (sim_vec3){l[0], l[1], l[2]};
    *hi = (sim_vec3){h[0], h[1], h[2]};
}

void sim__cloth_batches_project(sim_world* w, const sim__entity* e, float inv_h2) {
    const staged p = staging_of(w, e);
    stage(w, e, &p);
    pass(w, e, &p, inv_h2);
    unstage(w, e, &p);
}

uint32_t sim__cloth_batches_ahead(sim_world* w, const sim__entity* e, float inv_h2, uint32_t passes,
                                  float rmax, bool* clear) {
    const staged p = staging_of(w, e);
    stage(w, e, &p);
    uint32_t done = 0;
    *clear = true;
    while (done < passes && *clear) {
        pass(w, e, &p, inv_h2);
        done++;
        sim_vec3 lo, hi;
        staged_bounds(e, &p, &lo, &hi);
        *clear = sim__collide_skips(w, lo, hi, rmax);
    }
    unstage(w, e, &p);
    return done;
}
