/*
 * bench_time.h: clocks and medians the benchmarks share (ragdoll-bench,
 * ragdoll-impacts, ragdoll-pool-bench, ragdoll-durable-bench,
 * ragdoll-artic-bench).
 */
#pragma once

#include <stdlib.h>
#include <time.h>

/// Monotonic wall time, s.
static inline double bench_now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/// This thread's CPU time, s: on a machine shared with other work it counts
/// only the time this thread ran (wall time counts the waits too).
static inline double bench_thread_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/// qsort() order of doubles, ascending.
static inline int bench_cmp_double(const void* a, const void* b) {
    double x = *(const double*)a, y = *(const double*)b;
    return (x > y) - (x < y);
}

/// The median of v[0..n) (n >= 1); sorts v.
static inline double bench_median(double* v, int n) {
    qsort(v, (size_t)n, sizeof *v, bench_cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/// The p-quantile (0..1) of v[0..n), the nearest rank; sorts v.
static inline double bench_quantile(double* v, int n, double p) {
    qsort(v, (size_t)n, sizeof *v, bench_cmp_double);
    return v[(int)(p * (n - 1) + 0.5)];
}
