/*
 * cloth_schedule.c: which lane of which block each of a cloth's distance
 * constraints is projected in (sim__cloth_batches_rebuild()), and the
 * blocks' upkeep (drop, the λ reset). cloth_batch.c runs a pass over them
 * and explains the lanes; world.h's sim__lane_block and
 * sim__cloth_batches_rebuild() give the layout and its contract.
 *
 * A grid constraint's family (across, down, the two diagonals, bend across,
 * bend down) and place (row, column) give its block and lane directly
 * (place()); the blocks are laid out family by family, each family's rows
 * from row 0, each row's blocks by column, then the empty blocks are packed
 * away and the runs (blocks of one family and row, which share no particle)
 * counted. Constraints of no family go into SCALAR blocks at the end.
 *
 * It owns nothing and allocates nothing: the blocks are a world array
 * (world.c) reserved at spawn time, and the scratch is the staging.
 */
#include "world.h"

#include <string.h>

uint32_t sim__cloth_lane_stride(uint32_t cols) {
    return (cols + 6u + 3u) & ~3u;
}

void sim__cloth_batches_drop(sim_world* w, sim__entity* e) {
    if (e->cb_count == 0) {
        e->cb_first = 0;
        return;
    }
    const uint32_t first = e->cb_first, count = e->cb_count;
    memmove(&w->lane_blocks[first], &w->lane_blocks[first + count],
            (w->lb_count - first - count) * sizeof *w->lane_blocks);
    w->lb_count -= count;
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

// ---------------------------------------------------------------------------
// Building the blocks
// ---------------------------------------------------------------------------

// The families of grid constraints, in the order of their sweeps.
enum {
    FAM_ACROSS0, // (r,c)-(r,c+1), c even
    FAM_ACROSS1, // c odd
    FAM_DOWN,    // (r,c)-(r+1,c)
    FAM_DIAG,    // (r,c)-(r+1,c+1)
    FAM_ANTI,    // (r,c+1)-(r+1,c)
    FAM_BEND0,   // (r,c)-(r,c+2), c mod 4 in {0, 1}
    FAM_BEND1,   // c mod 4 in {2, 3}
    FAM_BENDD,   // (r,c)-(r+2,c)
    FAM_COUNT,
};

// A grid's layout of blocks: one sweep per family, in the order above,
// each row by row from row 0: how many blocks a row has, and where the
// family's first one is.
typedef struct layout {
    uint32_t C, R, S;          // columns, rows, staging stride
    uint32_t n[FAM_COUNT];     // blocks per row
    uint32_t first[FAM_COUNT]; // the family's first block
    uint32_t total;            // blocks of all sweeps, full and empty
} layout;

// Blocks of a row of pairs (lanes two apart, 8 columns a block) whose
// first column is `first` and whose pairs span `span` columns: pairs start
// at first + 8t + {0, 2, 4, 6} (span 1) or {0, 1, 4, 5} (span 2), and
// need start + span <= C - 1.
static uint32_t pair_blocks(uint32_t C, uint32_t first, uint32_t span) {
    return C > first + span ? (C - 1 - span - first) / 8u + 1u : 0u;
}

// The layout of a C × R grid for the families in `present` (a bit each):
// the others get no blocks.
static layout make_layout(uint32_t C, uint32_t R, uint32_t present) {
    layout L;
    memset(&L, 0, sizeof L);
    L.C = C;
    L.R = R;
    L.S = sim__cloth_lane_stride(C);
    const uint32_t quads = (C + 3u) / 4u;
    L.n[FAM_ACROSS0] = pair_blocks(C, 0, 1);
    L.n[FAM_ACROSS1] = pair_blocks(C, 1, 1);
    L.n[FAM_DOWN] = L.n[FAM_DIAG] = L.n[FAM_ANTI] = L.n[FAM_BENDD] = quads;
    L.n[FAM_BEND0] = pair_blocks(C, 0, 2);
    L.n[FAM_BEND1] = pair_blocks(C, 2, 2);
    for (int f = 0; f < FAM_COUNT; ++f) {
        L.n[f] = (present >> f) & 1u ? L.n[f] : 0u;
        L.first[f] = L.total;
        L.total += L.n[f] * R;
    }
    return L;
}

// Where constraint (a, b) of a grid goes: its family, row, block within
// the row's family and lane; false when it is of no family. a and b are
// swapped if needed so that a comes first in row-major order.
static bool place(const layout* L, uint32_t a, uint32_t b, int* fam, uint32_t* row, uint32_t* blk,
                  uint32_t* lane) {
    if (b < a) {
        uint32_t t = a;
        a = b;
        b = t;
    }
    const uint32_t ra = a / L->C, ca = a % L->C, rb = b / L->C, cb = b % L->C;
    const uint32_t dr = rb - ra;
    *row = ra;
    if (dr == 0 && cb == ca + 1) {
        *fam = (ca & 1u) ? FAM_ACROSS1 : FAM_ACROSS0;
        uint32_t c = ca - (ca & 1u); // from the colour's first column
        *blk = c / 8u;
        *lane = (c % 8u) / 2u;
        return true;
    }
    if (dr == 0 && cb == ca + 2) {
        *fam = (ca % 4u) < 2u ? FAM_BEND0 : FAM_BEND1;
        uint32_t c = *fam == FAM_BEND0 ? ca : ca - 2u;
        static const uint32_t lane_of[8] = {0, 1, 9, 9, 2, 3, 9, 9};
        *blk = c / 8u;
        *lane = lane_of[c % 8u];
        return *lane < 4u;
    }
    uint32_t anchor = ca;
    if (dr == 1 && cb == ca) {
        *fam = FAM_DOWN;
    } else if (dr == 1 && cb == ca + 1) {
        *fam = FAM_DIAG;
    } else if (dr == 1 && cb + 1 == ca) {
        *fam = FAM_ANTI; // a is (r, c + 1), b is (r + 1, c): anchored at c
        anchor = cb;
    } else if (dr == 2 && cb == ca) {
        *fam = FAM_BENDD;
    } else {
        return false;
    }
    *blk = anchor / 4u;
    *lane = anchor % 4u;
    return true;
}

// Block `blk` of family f in row r: its index among all, and its header.
static uint32_t block_index(const layout* L, int f, uint32_t r, uint32_t blk) {
    return L->first[f] + r * L->n[f] + blk;
}

static void block_header(const layout* L, int f, uint32_t r, uint32_t blk, sim__lane_block* b) {
    memset(b, 0, sizeof *b);
    const uint32_t row = r * L->S;
    switch (f) {
    case FAM_ACROSS0:
    case FAM_ACROSS1:
        b->kind = SIM__LANES_PAIRS1;
        b->base = row + (f == FAM_ACROSS1 ? 1u : 0u) + 8u * blk;
        break;
    case FAM_BEND0:
    case FAM_BEND1:
        b->kind = SIM__LANES_PAIRS2;
        b->base = row + (f == FAM_BEND1 ? 2u : 0u) + 8u * blk;
        break;
    default:
        b->kind = SIM__LANES_ROW;
        b->base = row + 4u * blk;
        b->a_off = f == FAM_ANTI ? 1u : 0u;
        b->b_off = (uint16_t)(f == FAM_BENDD ? 2u * L->S : f == FAM_DIAG ? L->S + 1u : L->S);
        break;
    }
    for (int i = 0; i < 4; ++i) {
        b->rest[i] = -1.0f; // empty
    }
    b->compliance = -1.0f; // not yet set
}

static bool block_empty(const sim__lane_block* b) {
    if (b->kind == SIM__LANES_SCALAR) {
        return b->dist[0] == UINT32_MAX;
    }
    return b->rest[0] < 0.0f && b->rest[1] < 0.0f && b->rest[2] < 0.0f && b->rest[3] < 0.0f;
}

int sim__cloth_batches_rebuild(sim_world* w, sim__entity* e) {
    sim__cloth_batches_drop(w, e);
    if (e->kind != SIM_ENTITY_CLOTH || e->cols < SIM__LANE_MIN_COLS || e->rows < 1 ||
        e->cols * e->rows != e->p_count) {
        return SIM_E_INVALID_ARG;
    }
    const sim__dist* d = w->dist + e->d_first;
    for (uint32_t k = 0; k < e->d_count; ++k) {
        if (d[k].kind != SIM__DIST_EQUAL && d[k].kind != SIM__DIST_TORN) {
            return SIM_E_INVALID_ARG;
        }
    }
    // Only the families the cloth has get blocks (hair has two of eight).
    const layout all = make_layout(e->cols, e->rows, (1u << FAM_COUNT) - 1u);
    uint32_t present = 0;
    for (uint32_t k = 0; k < e->d_count; ++k) {
        int f;
        uint32_t r, t, lane;
        if (d[k].kind == SIM__DIST_EQUAL && place(&all, d[k].a, d[k].b, &f, &r, &t, &lane)) {
            present |= 1u << f;
        }
    }
    const layout L = make_layout(e->cols, e->rows, present);
    const size_t staging = 4u * (size_t)L.S * L.R;
    const size_t cap = SIM__LANE_BLOCKS(w->reserved.constraints, w->reserved.particles);
    const uint32_t base = w->lb_count;
    // Room for the full layout while it is filled (the seam's blocks are
    // checked as they are added), and in the staging for the scratch list.
    const size_t staging_cap = SIM__LANE_STAGING(w->reserved.particles);
    if (staging > staging_cap || e->d_count > staging_cap || base + (size_t)L.total > cap) {
        return SIM_E_CAPACITY;
    }
    sim__lane_block* blocks = w->lane_blocks + base;
    for (int f = 0; f < FAM_COUNT; ++f) {
        for (uint32_t r = 0; r < L.R; ++r) {
            for (uint32_t t = 0; t < L.n[f]; ++t) {
                block_header(&L, f, r, t, &blocks[block_index(&L, f, r, t)]);
            }
        }
    }
    // Each constraint into its lane; the rest (of no family, or of a
    // compliance its block does not have) listed in the staging scratch.
    uint32_t* rest = (uint32_t*)(void*)w->lane_staging;
    uint32_t n_rest = 0;
    for (uint32_t k = 0; k < e->d_count; ++k) {
        if (d[k].kind == SIM__DIST_TORN || d[k].a == d[k].b) {
            continue; // never projected; a == b projects to nothing
        }
        int f;
        uint32_t r, t, lane;
        sim__lane_block* b = NULL;
        if (place(&L, d[k].a, d[k].b, &f, &r, &t, &lane)) {
            b = &blocks[block_index(&L, f, r, t)];
            if (b->rest[lane] >= 0.0f ||
                (b->compliance >= 0.0f && b->compliance != d[k].compliance)) {
                b = NULL; // the lane is taken (a duplicate), or another compliance
            }
        }
        if (b == NULL) {
            rest[n_rest++] = k;
            continue;
        }
        b->compliance = d[k].compliance;
        b->rest[lane] = d[k].rest;
    }
    // Pack: drop the empty blocks, keep the order, and count the runs.
    uint32_t n = 0;
    for (int f = 0; f < FAM_COUNT; ++f) {
        for (uint32_t r = 0; r < L.R; ++r) {
            const uint32_t run_first = n;
            for (uint32_t t = 0; t < L.n[f]; ++t) {
                const sim__lane_block* b = &blocks[block_index(&L, f, r, t)];
                if (!block_empty(b)) {
                    blocks[n++] = *b;
                }
            }
            for (uint32_t k = run_first; k < n; ++k) {
                blocks[k].run = n - k;
            }
        }
    }
    for (uint32_t k = 0; k < n_rest; k += 4) {
        if (base + (size_t)n + 1u > cap) {
            return SIM_E_CAPACITY; // nothing kept: e stays sequential
        }
        sim__lane_block* b = &blocks[n++];
        memset(b, 0, sizeof *b);
        b->kind = SIM__LANES_SCALAR;
        b->run = 1;
        for (uint32_t i = 0; i < 4; ++i) {
            b->dist[i] = k + i < n_rest ? rest[k + i] : UINT32_MAX;
        }
    }
    e->cb_first = base;
    e->cb_count = n;
    w->lb_count += n;
    return SIM_OK;
}

void sim__cloth_batches_reset(sim_world* w) {
    for (uint32_t i = 0; i < w->lb_count; ++i) {
        memset(w->lane_blocks[i].lambda, 0, sizeof w->lane_blocks[i].lambda);
    }
}
