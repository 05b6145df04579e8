/*
 * graph.c: the constraint graph's colouring (Box2D v3's constraint_graph.c,
 * Catto 2023, "Solver2D"/"SIMD Matters" posts): constraints are grouped in
 * colours so that no two constraints of one colour touch the same dynamic
 * body. The constraints of a colour can then be solved in any order, in
 * SIMD lanes or on several threads, with the same result; colours are
 * solved one after the other (Gauss-Seidel between colours).
 *
 * Greedy, as Box2D's: a constraint takes the first colour in which neither
 * of its bodies is taken yet (a per-colour bit set over solver indices).
 * Static, sleeping and kinematic bodies are only read by the solver and do
 * not count. A constraint that finds no free colour among
 * SIM__GRAPH_COLOURS goes to the overflow, solved after the colours.
 */
#include "soft.h"

#include <string.h>

static bool taken(const uint64_t* set, uint32_t i) {
    return i != SIM__NO_STATE && (set[i >> 6] >> (i & 63u) & 1u) != 0;
}

static void take(uint64_t* set, uint32_t i) {
    if (i != SIM__NO_STATE) {
        set[i >> 6] |= (uint64_t)1 << (i & 63u);
    }
}

void sim__graph_colour(const uint32_t* a, const uint32_t* b, uint32_t n, const uint8_t* blocks,
                       uint32_t bodies, uint64_t* bits, uint8_t* colour, uint32_t* order,
                       sim__colouring* out) {
    const uint32_t words = (bodies + 63u) / 64u;
    memset(bits, 0, (size_t)SIM__GRAPH_COLOURS * words * sizeof *bits);
    uint32_t count[SIM__GRAPH_COLOURS + 1];
    memset(count, 0, sizeof count);
    for (uint32_t k = 0; k < n; ++k) {
        uint32_t ia = a[k] != SIM__NO_STATE && blocks[a[k]] ? a[k] : SIM__NO_STATE;
        uint32_t ib = b[k] != SIM__NO_STATE && blocks[b[k]] ? b[k] : SIM__NO_STATE;
        uint32_t c = 0;
        for (; c < SIM__GRAPH_COLOURS; ++c) {
            uint64_t* set = bits + (size_t)c * words;
            if (!taken(set, ia) && !taken(set, ib)) {
                take(set, ia);
                take(set, ib);
                break;
            }
        }
        colour[k] = (uint8_t)c; // SIM__GRAPH_COLOURS: the overflow
        count[c]++;
    }
    // The colours in use are a prefix: a constraint takes the first free one.
    uint32_t used = 0;
    while (used < SIM__GRAPH_COLOURS && count[used] != 0) {
        used++;
    }
    uint32_t start[SIM__GRAPH_COLOURS + 1];
    uint32_t at = 0;
    for (uint32_t c = 0; c < used; ++c) {
        out->first[c] = start[c] = at;
        at += count[c];
    }
    out->first[used] = start[SIM__GRAPH_COLOURS] = at;
    out->first[used + 1] = at + count[SIM__GRAPH_COLOURS];
    out->colour_count = used;
    // A stable counting sort by colour.
    for (uint32_t k = 0; k < n; ++k) {
        order[start[colour[k]]++] = k;
    }
}
