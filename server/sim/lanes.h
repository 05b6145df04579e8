/*
 * lanes.h: four float lanes for the soft step's wide contact solver
 * (soft_wide.c) and the cloths' blocks of constraints (cloth_batch.c),
 * Box2D v3's b2FloatW idea: SSE2 when the compiler targets it (every
 * x86-64), else a struct of four floats.
 *
 * Both give bit-identical results: every operation is one IEEE-754 single
 * operation per lane, correctly rounded (add, sub, mul, div, sqrt), or exact
 * (negation, comparison, selection, min and max, moving lanes), and nothing fuses
 * (-ffp-contract=off holds for the struct's loops; intrinsics never
 * contract unless the flag allows it). No reciprocal or reciprocal square
 * root estimates: they differ between CPUs.
 *
 * min and max are SSE's: max(a, b) = a > b ? a : b, lane by lane, so the
 * second operand wins a tie (max(-0, +0) = +0, max(+0, -0) = -0) and a NaN
 * in either gives the second. For finite operands that is glibc's fmaxf
 * and fminf (maxss and minss after a NaN check) except a tie of zeros of
 * opposite signs, where C leaves the sign to the library.
 *
 * Masks are all ones or all zeros per lane, made by comparisons (ordered:
 * false when a NaN is compared) and used by sim__fw_select.
 *
 * RD_SIM_NO_SIMD (CMake option RD_SIM_NO_SIMD) forces the struct on x86-64,
 * so that both paths can be built and compared on one machine.
 */
#pragma once

#include <math.h>
#include <stdbool.h>
#include <stdint.h>

#if defined(__SSE2__) && !defined(RD_SIM_NO_SIMD)
#define SIM__LANES_SSE2 1
#include <emmintrin.h>

/// Four floats.
typedef __m128 sim__fw;
/// Four lane masks.
typedef __m128 sim__mw;

static inline sim__fw sim__fw_zero(void) {
    return _mm_setzero_ps();
}
static inline sim__fw sim__fw_splat(float x) {
    return _mm_set1_ps(x);
}
/// Four floats from p (any alignment).
static inline sim__fw sim__fw_load(const float* p) {
    return _mm_loadu_ps(p);
}
static inline void sim__fw_store(float* p, sim__fw a) {
    _mm_storeu_ps(p, a);
}
static inline sim__fw sim__fw_add(sim__fw a, sim__fw b) {
    return _mm_add_ps(a, b);
}
static inline sim__fw sim__fw_sub(sim__fw a, sim__fw b) {
    return _mm_sub_ps(a, b);
}
static inline sim__fw sim__fw_mul(sim__fw a, sim__fw b) {
    return _mm_mul_ps(a, b);
}
static inline sim__fw sim__fw_div(sim__fw a, sim__fw b) {
    return _mm_div_ps(a, b);
}
static inline sim__fw sim__fw_sqrt(sim__fw a) {
    return _mm_sqrt_ps(a);
}
/// -a: the sign bit flipped.
static inline sim__fw sim__fw_neg(sim__fw a) {
    return _mm_xor_ps(a, _mm_set1_ps(-0.0f));
}
/// a > b ? a : b per lane.
static inline sim__fw sim__fw_max(sim__fw a, sim__fw b) {
    return _mm_max_ps(a, b);
}
/// a < b ? a : b per lane.
static inline sim__fw sim__fw_min(sim__fw a, sim__fw b) {
    return _mm_min_ps(a, b);
}
static inline sim__mw sim__fw_gt(sim__fw a, sim__fw b) {
    return _mm_cmpgt_ps(a, b);
}
static inline sim__mw sim__fw_eq(sim__fw a, sim__fw b) {
    return _mm_cmpeq_ps(a, b);
}
static inline sim__mw sim__mw_and(sim__mw a, sim__mw b) {
    return _mm_and_ps(a, b);
}
static inline sim__mw sim__mw_or(sim__mw a, sim__mw b) {
    return _mm_or_ps(a, b);
}
/// a and not b.
static inline sim__mw sim__mw_and_not(sim__mw a, sim__mw b) {
    return _mm_andnot_ps(b, a);
}
/// Whether any lane of m is set.
static inline bool sim__mw_any(sim__mw m) {
    return _mm_movemask_ps(m) != 0;
}
/// Whether every lane of m is set.
static inline bool sim__mw_all(sim__mw m) {
    return _mm_movemask_ps(m) == 0xf;
}
/// m ? a : b per lane.
static inline sim__fw sim__fw_select(sim__mw m, sim__fw a, sim__fw b) {
    return _mm_or_ps(_mm_and_ps(m, a), _mm_andnot_ps(m, b));
}
/// Transposes the 4 × 4 matrix whose rows are *r0..*r3.
static inline void sim__fw_transpose(sim__fw* r0, sim__fw* r1, sim__fw* r2, sim__fw* r3) {
    _MM_TRANSPOSE4_PS(*r0, *r1, *r2, *r3);
}
/// m ? a : +0 per lane.
static inline sim__fw sim__fw_keep(sim__mw m, sim__fw a) {
    return _mm_and_ps(m, a);
}
/// Eight floats lo, hi dealt into even = {lo0, lo2, hi0, hi2} and
/// odd = {lo1, lo3, hi1, hi3}.
static inline void sim__fw_deal(sim__fw lo, sim__fw hi, sim__fw* even, sim__fw* odd) {
    *even = _mm_shuffle_ps(lo, hi, _MM_SHUFFLE(2, 0, 2, 0));
    *odd = _mm_shuffle_ps(lo, hi, _MM_SHUFFLE(3, 1, 3, 1));
}
/// The inverse of sim__fw_deal().
static inline void sim__fw_undeal(sim__fw even, sim__fw odd, sim__fw* lo, sim__fw* hi) {
    *lo = _mm_unpacklo_ps(even, odd);
    *hi = _mm_unpackhi_ps(even, odd);
}
/// Eight floats lo, hi split by halves: first = {lo0, lo1, hi0, hi1},
/// second = {lo2, lo3, hi2, hi3}.
static inline void sim__fw_halves(sim__fw lo, sim__fw hi, sim__fw* first, sim__fw* second) {
    *first = _mm_movelh_ps(lo, hi);
    *second = _mm_movehl_ps(hi, lo);
}
/// The inverse of sim__fw_halves().
static inline void sim__fw_unhalves(sim__fw first, sim__fw second, sim__fw* lo, sim__fw* hi) {
    *lo = _mm_movelh_ps(first, second);
    *hi = _mm_movehl_ps(second, first);
}
/// Four (x, y, z) triples, twelve floats m0 m1 m2, into x, y and z lanes.
static inline void sim__fw_from_xyz(sim__fw m0, sim__fw m1, sim__fw m2, sim__fw* x, sim__fw* y,
                                    sim__fw* z) {
    // m0 = x0 y0 z0 x1, m1 = y1 z1 x2 y2, m2 = z2 x3 y3 z3.
    sim__fw u = _mm_shuffle_ps(m1, m2, _MM_SHUFFLE(1, 1, 2, 2)); // x2 x2 x3 x3
    *x = _mm_shuffle_ps(m0, u, _MM_SHUFFLE(2, 0, 3, 0));
    sim__fw a = _mm_shuffle_ps(m0, m1, _MM_SHUFFLE(0, 0, 1, 1)); // y0 y0 y1 y1
    sim__fw b = _mm_shuffle_ps(m1, m2, _MM_SHUFFLE(2, 2, 3, 3)); // y2 y2 y3 y3
    *y = _mm_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0));
    sim__fw c = _mm_shuffle_ps(m0, m1, _MM_SHUFFLE(1, 1, 2, 2)); // z0 z0 z1 z1
    *z = _mm_shuffle_ps(c, m2, _MM_SHUFFLE(3, 0, 2, 0));
}
/// The inverse of sim__fw_from_xyz().
static inline void sim__fw_to_xyz(sim__fw x, sim__fw y, sim__fw z, sim__fw* m0, sim__fw* m1,
                                  sim__fw* m2) {
    sim__fw a = _mm_shuffle_ps(x, y, _MM_SHUFFLE(0, 0, 1, 0)); // x0 x1 y0 y0
    sim__fw b = _mm_shuffle_ps(z, x, _MM_SHUFFLE(1, 1, 0, 0)); // z0 z0 x1 x1
    *m0 = _mm_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0));       // x0 y0 z0 x1
    sim__fw c = _mm_shuffle_ps(y, z, _MM_SHUFFLE(1, 1, 1, 1)); // y1 y1 z1 z1
    sim__fw d = _mm_shuffle_ps(x, y, _MM_SHUFFLE(2, 2, 2, 2)); // x2 x2 y2 y2
    *m1 = _mm_shuffle_ps(c, d, _MM_SHUFFLE(2, 0, 2, 0));       // y1 z1 x2 y2
    sim__fw e = _mm_shuffle_ps(z, x, _MM_SHUFFLE(3, 3, 2, 2)); // z2 z2 x3 x3
    sim__fw f = _mm_shuffle_ps(y, z, _MM_SHUFFLE(3, 3, 3, 3)); // y3 y3 z3 z3
    *m2 = _mm_shuffle_ps(e, f, _MM_SHUFFLE(2, 0, 2, 0));       // z2 x3 y3 z3
}

#else
#define SIM__LANES_SSE2 0

/// Four floats.
typedef struct sim__fw {
    float f[4];
} sim__fw;
/// Four lane masks.
typedef struct sim__mw {
    uint32_t u[4];
} sim__mw;

static inline sim__fw sim__fw_zero(void) {
    sim__fw r = {{0.0f, 0.0f, 0.0f, 0.0f}};
    return r;
}
static inline sim__fw sim__fw_splat(float x) {
    sim__fw r = {{x, x, x, x}};
    return r;
}
static inline sim__fw sim__fw_load(const float* p) {
    sim__fw r = {{p[0], p[1], p[2], p[3]}};
    return r;
}
static inline void sim__fw_store(float* p, sim__fw a) {
    for (int i = 0; i < 4; ++i) {
        p[i] = a.f[i];
    }
}
static inline sim__fw sim__fw_add(sim__fw a, sim__fw b) {
    sim__fw r;
    for (int i = 0; i < 4; ++i) {
        r.f[i] = a.f[i] + b.f[i];
    }
    return r;
}
static inline sim__fw sim__fw_sub(sim__fw a, sim__fw b) {
    sim__fw r;
    for (int i = 0; i < 4; ++i) {
        r.f[i] = a.f[i] - b.f[i];
    }
    return r;
}
static inline sim__fw sim__fw_mul(sim__fw a, sim__fw b) {
    sim__fw r;
    for (int i = 0; i < 4; ++i) {
        r.f[i] = a.f[i] * b.f[i];
    }
    return r;
}
static inline sim__fw sim__fw_div(sim__fw a, sim__fw b) {
    sim__fw r;
    for (int i = 0; i < 4; ++i) {
        r.f[i] = a.f[i] / b.f[i];
    }
    return r;
}
static inline sim__fw sim__fw_sqrt(sim__fw a) {
    sim__fw r;
    for (int i = 0; i < 4; ++i) {
        r.f[i] = sqrtf(a.f[i]);
    }
    return r;
}
static inline sim__fw sim__fw_neg(sim__fw a) {
    sim__fw r;
    for (int i = 0; i < 4; ++i) {
        r.f[i] = -a.f[i];
    }
    return r;
}
static inline sim__fw sim__fw_max(sim__fw a, sim__fw b) {
    sim__fw r;
    for (int i = 0; i < 4; ++i) {
        r.f[i] = a.f[i] > b.f[i] ? a.f[i] : b.f[i];
    }
    return r;
}
static inline sim__fw sim__fw_min(sim__fw a, sim__fw b) {
    sim__fw r;
    for (int i = 0; i < 4; ++i) {
        r.f[i] = a.f[i] < b.f[i] ? a.f[i] : b.f[i];
    }
    return r;
}
static inline sim__mw sim__fw_gt(sim__fw a, sim__fw b) {
    sim__mw r;
    for (int i = 0; i < 4; ++i) {
        r.u[i] = a.f[i] > b.f[i] ? UINT32_MAX : 0u;
    }
    return r;
}
static inline sim__mw sim__fw_eq(sim__fw a, sim__fw b) {
    sim__mw r;
    for (int i = 0; i < 4; ++i) {
        r.u[i] = a.f[i] == b.f[i] ? UINT32_MAX : 0u;
    }
    return r;
}
static inline sim__mw sim__mw_and(sim__mw a, sim__mw b) {
    sim__mw r;
    for (int i = 0; i < 4; ++i) {
        r.u[i] = a.u[i] & b.u[i];
    }
    return r;
}
static inline sim__mw sim__mw_or(sim__mw a, sim__mw b) {
    sim__mw r;
    for (int i = 0; i < 4; ++i) {
        r.u[i] = a.u[i] | b.u[i];
    }
    return r;
}
static inline sim__mw sim__mw_and_not(sim__mw a, sim__mw b) {
    sim__mw r;
    for (int i = 0; i < 4; ++i) {
        r.u[i] = a.u[i] & ~b.u[i];
    }
    return r;
}
static inline bool sim__mw_any(sim__mw m) {
    return (m.u[0] | m.u[1] | m.u[2] | m.u[3]) != 0;
}
static inline bool sim__mw_all(sim__mw m) {
    return (m.u[0] & m.u[1] & m.u[2] & m.u[3]) != 0;
}
static inline sim__fw sim__fw_select(sim__mw m, sim__fw a, sim__fw b) {
    sim__fw r;
    for (int i = 0; i < 4; ++i) {
        r.f[i] = m.u[i] != 0 ? a.f[i] : b.f[i];
    }
    return r;
}
static inline sim__fw sim__fw_keep(sim__mw m, sim__fw a) {
    sim__fw r;
    for (int i = 0; i < 4; ++i) {
        r.f[i] = m.u[i] != 0 ? a.f[i] : 0.0f;
    }
    return r;
}
static inline void sim__fw_deal(sim__fw lo, sim__fw hi, sim__fw* even, sim__fw* odd) {
    sim__fw e = {{lo.f[0], lo.f[2], hi.f[0], hi.f[2]}}, o = {{lo.f[1], lo.f[3], hi.f[1], hi.f[3]}};
    *even = e;
    *odd = o;
}
static inline void sim__fw_undeal(sim__fw even, sim__fw odd, sim__fw* lo, sim__fw* hi) {
    sim__fw l = {{even.f[0], odd.f[0], even.f[1], odd.f[1]}};
    sim__fw h = {{even.f[2], odd.f[2], even.f[3], odd.f[3]}};
    *lo = l;
    *hi = h;
}
static inline void sim__fw_halves(sim__fw lo, sim__fw hi, sim__fw* first, sim__fw* second) {
    sim__fw a = {{lo.f[0], lo.f[1], hi.f[0], hi.f[1]}}, b = {{lo.f[2], lo.f[3], hi.f[2], hi.f[3]}};
    *first = a;
    *second = b;
}
static inline void sim__fw_unhalves(sim__fw first, sim__fw second, sim__fw* lo, sim__fw* hi) {
    sim__fw l = {{first.f[0], first.f[1], second.f[0], second.f[1]}};
    sim__fw h = {{first.f[2], first.f[3], second.f[2], second.f[3]}};
    *lo = l;
    *hi = h;
}
static inline void sim__fw_from_xyz(sim__fw m0, sim__fw m1, sim__fw m2, sim__fw* x, sim__fw* y,
                                    sim__fw* z) {
    sim__fw a = {{m0.f[0], m0.f[3], m1.f[2], m2.f[1]}};
    sim__fw b = {{m0.f[1], m1.f[0], m1.f[3], m2.f[2]}};
    sim__fw c = {{m0.f[2], m1.f[1], m2.f[0], m2.f[3]}};
    *x = a;
    *y = b;
    *z = c;
}
static inline void sim__fw_to_xyz(sim__fw x, sim__fw y, sim__fw z, sim__fw* m0, sim__fw* m1,
                                  sim__fw* m2) {
    sim__fw a = {{x.f[0], y.f[0], z.f[0], x.f[1]}};
    sim__fw b = {{y.f[1], z.f[1], x.f[2], y.f[2]}};
    sim__fw c = {{z.f[2], x.f[3], y.f[3], z.f[3]}};
    *m0 = a;
    *m1 = b;
    *m2 = c;
}
static inline void sim__fw_transpose(sim__fw* r0, sim__fw* r1, sim__fw* r2, sim__fw* r3) {
    sim__fw* r[4] = {r0, r1, r2, r3};
    for (int i = 0; i < 4; ++i) {
        for (int j = i + 1; j < 4; ++j) {
            float t = r[i]->f[j];
            r[i]->f[j] = r[j]->f[i];
            r[j]->f[i] = t;
        }
    }
}
#endif

/// Lane i of a (i in 0..3).
static inline float sim__fw_lane(sim__fw a, int i) {
    float f[4];
    sim__fw_store(f, a);
    return f[i];
}

/// The smallest of a's four lanes (the first of equals).
static inline float sim__fw_least(sim__fw a) {
    float m = sim__fw_lane(a, 0);
    for (int i = 1; i < 4; ++i) {
        float v = sim__fw_lane(a, i);
        m = v < m ? v : m;
    }
    return m;
}

/// The largest of a's four lanes (the first of equals).
static inline float sim__fw_most(sim__fw a) {
    float m = sim__fw_lane(a, 0);
    for (int i = 1; i < 4; ++i) {
        float v = sim__fw_lane(a, i);
        m = v > m ? v : m;
    }
    return m;
}
