/*
 * stats.c: ragdoll-load's latency histogram (log-linear buckets, as in
 * HdrHistogram: a fixed relative error at every scale, fixed memory
 * whatever the run's length) and its random numbers.
 */
#include "load.h"

#include <string.h>

uint64_t load_rand(uint64_t* state) {
    // xorshift64* (Vigna, "An experimental exploration of Marsaglia's
    // xorshift generators, scrambled", 2016).
    uint64_t x = *state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *state = x;
    return x * 0x2545F4914F6CDD1Dull;
}

double load_rand01(uint64_t* state) {
    return (double)(load_rand(state) >> 11) * (1.0 / 9007199254740992.0);
}

// Largest value kept apart: 2^40 µs (12 days); more lands in the last bucket.
#define MAX_US (1ull << 40)

static int msb(uint64_t v) {
    return 63 - __builtin_clzll(v);
}

static uint32_t bucket_of(uint64_t us) {
    if (us < 64) {
        return (uint32_t)us;
    }
    int e = msb(us) - 5; // us >> e keeps 6 bits: 32..63
    uint64_t m = us >> e;
    return 64u + (uint32_t)(e - 1) * 32u + (uint32_t)(m - 32);
}

// The middle of a bucket, µs.
static double bucket_mid(uint32_t b) {
    if (b < 64) {
        return b;
    }
    uint32_t e = (b - 64) / 32 + 1;
    uint64_t m = 32 + (b - 64) % 32;
    return (double)(m << e) + (double)(1ull << e) / 2;
}

void load_hist_add(load_hist* h, uint64_t us) {
    h->count++;
    h->sum_us += (double)us;
    if (us > h->max_us) {
        h->max_us = us;
    }
    h->buckets[bucket_of(us < MAX_US ? us : MAX_US - 1)]++;
}

double load_hist_quantile(const load_hist* h, double q) {
    if (h->count == 0) {
        return 0;
    }
    if (q >= 1) {
        return (double)h->max_us;
    }
    // The sample of rank ceil(q * count) (1-based), as nearest-rank does.
    uint64_t rank = (uint64_t)(q * (double)h->count);
    if ((double)rank < q * (double)h->count || rank == 0) {
        rank++;
    }
    uint64_t seen = 0;
    for (uint32_t b = 0; b < LOAD_HIST_BUCKETS; ++b) {
        seen += h->buckets[b];
        if (seen >= rank) {
            double mid = bucket_mid(b);
            return mid < (double)h->max_us ? mid : (double)h->max_us;
        }
    }
    return (double)h->max_us;
}
