/*
 * spatial.h: 6-D spatial vector algebra for the reduced-coordinate
 * articulations (articulation.c). Private to server/sim.
 *
 * Conventions are Featherstone's, "Rigid Body Dynamics Algorithms" (2008),
 * ch. 2: a motion vector (velocity, acceleration) is (ω, v), angular part
 * first, v the velocity of the point at the frame's origin; a force vector
 * is (n, f), the moment about the origin first. A transform X = (E, r)
 * takes motion vectors from frame A to frame B, where E rotates A
 * coordinates into B coordinates and r is B's origin in A coordinates
 * (§2.8: X = [E 0; -E r× E]). Forces go the other way with X^T (§2.9).
 * All math in float, like the rest of the simulator.
 */
#pragma once

#include "quat.h"

/// A spatial motion or force vector: angular (or moment) part first.
typedef struct sp_vec {
    sim_vec3 ang;
    sim_vec3 lin;
} sp_vec;

/// A 3×3 matrix, row-major: m[row][col].
typedef struct sp_mat3 {
    float m[3][3];
} sp_mat3;

/// A Plücker transform (E, r), see the top of the file.
typedef struct sp_xform {
    sp_mat3 E;
    sim_vec3 r;
} sp_xform;

/// A 6×6 matrix, row-major, on (angular, linear) halves: a spatial inertia
/// (rigid or articulated) mapping motion to force.
typedef struct sp_mat6 {
    float m[6][6];
} sp_mat6;

static inline sp_vec sp(sim_vec3 ang, sim_vec3 lin) {
    sp_vec s = {ang, lin};
    return s;
}

static inline sp_vec sp_zero(void) {
    return sp(v3(0.0f, 0.0f, 0.0f), v3(0.0f, 0.0f, 0.0f));
}

static inline sp_vec sp_add(sp_vec a, sp_vec b) {
    return sp(v3_add(a.ang, b.ang), v3_add(a.lin, b.lin));
}

static inline sp_vec sp_scale(sp_vec a, float s) {
    return sp(v3_scale(a.ang, s), v3_scale(a.lin, s));
}

/// The pairing of a motion and a force vector (power, or an impulse's work).
static inline float sp_dot(sp_vec m, sp_vec f) {
    return v3_dot(m.ang, f.ang) + v3_dot(m.lin, f.lin);
}

static inline float sp_get(sp_vec a, int i) {
    const sim_vec3* h = i < 3 ? &a.ang : &a.lin;
    int k = i % 3;
    return k == 0 ? h->x : k == 1 ? h->y : h->z;
}

static inline void sp_set(sp_vec* a, int i, float v) {
    sim_vec3* h = i < 3 ? &a->ang : &a->lin;
    int k = i % 3;
    if (k == 0) {
        h->x = v;
    } else if (k == 1) {
        h->y = v;
    } else {
        h->z = v;
    }
}

/// v ×m w, the motion cross product (eq. 2.31): the rate of change of a
/// motion vector w carried by a frame moving with velocity v.
static inline sp_vec sp_cross_m(sp_vec v, sp_vec w) {
    return sp(v3_cross(v.ang, w.ang), v3_add(v3_cross(v.ang, w.lin), v3_cross(v.lin, w.ang)));
}

/// v ×f f, the force cross product (eq. 2.32).
static inline sp_vec sp_cross_f(sp_vec v, sp_vec f) {
    return sp(v3_add(v3_cross(v.ang, f.ang), v3_cross(v.lin, f.lin)), v3_cross(v.ang, f.lin));
}

// ---------------------------------------------------------------------------
// 3×3
// ---------------------------------------------------------------------------

static inline sp_mat3 m3_identity(void) {
    sp_mat3 r = {{{1.0f, 0.0f, 0.0f}, {0.0f, 1.0f, 0.0f}, {0.0f, 0.0f, 1.0f}}};
    return r;
}

static inline sim_vec3 m3_mul_v(const sp_mat3* a, sim_vec3 v) {
    return v3(a->m[0][0] * v.x + a->m[0][1] * v.y + a->m[0][2] * v.z,
              a->m[1][0] * v.x + a->m[1][1] * v.y + a->m[1][2] * v.z,
              a->m[2][0] * v.x + a->m[2][1] * v.y + a->m[2][2] * v.z);
}

/// a^T v.
static inline sim_vec3 m3_tmul_v(const sp_mat3* a, sim_vec3 v) {
    return v3(a->m[0][0] * v.x + a->m[1][0] * v.y + a->m[2][0] * v.z,
              a->m[0][1] * v.x + a->m[1][1] * v.y + a->m[2][1] * v.z,
              a->m[0][2] * v.x + a->m[1][2] * v.y + a->m[2][2] * v.z);
}

static inline sp_mat3 m3_mul(const sp_mat3* a, const sp_mat3* b) {
    sp_mat3 r;
    for (int i = 0; i < 3; ++i) {
        for (int j = 0; j < 3; ++j) {
            r.m[i][j] = a->m[i][0] * b->m[0][j] + a->m[i][1] * b->m[1][j] + a->m[i][2] * b->m[2][j];
        }
    }
    return r;
}

static inline sp_mat3 m3_transpose(const sp_mat3* a) {
    sp_mat3 r;
    for (int i = 0; i < 3; ++i) {
        for (int j = 0; j < 3; ++j) {
            r.m[i][j] = a->m[j][i];
        }
    }
    return r;
}

/// The rotation matrix of a unit quaternion: R v = q v q*.
static inline sp_mat3 m3_from_quat(sim_quat q) {
    const float x = q.x, y = q.y, z = q.z, w = q.w;
    sp_mat3 r = {{{1.0f - 2.0f * (y * y + z * z), 2.0f * (x * y - z * w), 2.0f * (x * z + y * w)},
                  {2.0f * (x * y + z * w), 1.0f - 2.0f * (x * x + z * z), 2.0f * (y * z - x * w)},
                  {2.0f * (x * z - y * w), 2.0f * (y * z + x * w), 1.0f - 2.0f * (x * x + y * y)}}};
    return r;
}

// ---------------------------------------------------------------------------
// Transforms
// ---------------------------------------------------------------------------

static inline sp_xform sp_xform_identity(void) {
    sp_xform x = {m3_identity(), v3(0.0f, 0.0f, 0.0f)};
    return x;
}

/// Frame B rotated by the unit quaternion q (B's axes in A coordinates) and
/// placed at r in A: the transform from A to B coordinates.
static inline sp_xform sp_xform_from(sim_quat q, sim_vec3 r) {
    sp_mat3 R = m3_from_quat(q);
    sp_xform x = {m3_transpose(&R), r};
    return x;
}

/// X m (eq. 2.24 applied): (E ω, E (v − r × ω)).
static inline sp_vec sp_xform_motion(const sp_xform* x, sp_vec m) {
    return sp(m3_mul_v(&x->E, m.ang), m3_mul_v(&x->E, v3_sub(m.lin, v3_cross(x->r, m.ang))));
}

/// X^T f: a force in B coordinates expressed in A coordinates
/// (E^T n + r × E^T f, E^T f).
static inline sp_vec sp_xform_force_back(const sp_xform* x, sp_vec f) {
    sim_vec3 lin = m3_tmul_v(&x->E, f.lin);
    return sp(v3_add(m3_tmul_v(&x->E, f.ang), v3_cross(x->r, lin)), lin);
}

/// b ∘ a: first a (A → B), then b (B → C); the result takes A to C.
static inline sp_xform sp_xform_compose(const sp_xform* b, const sp_xform* a) {
    sp_xform c;
    c.E = m3_mul(&b->E, &a->E);
    c.r = v3_add(a->r, m3_tmul_v(&a->E, b->r));
    return c;
}

// ---------------------------------------------------------------------------
// 6×6
// ---------------------------------------------------------------------------

static inline sp_vec sp_mat6_mul(const sp_mat6* a, sp_vec v) {
    float in[6] = {v.ang.x, v.ang.y, v.ang.z, v.lin.x, v.lin.y, v.lin.z};
    float out[6];
    for (int i = 0; i < 6; ++i) {
        float s = 0.0f;
        for (int j = 0; j < 6; ++j) {
            s += a->m[i][j] * in[j];
        }
        out[i] = s;
    }
    return sp(v3(out[0], out[1], out[2]), v3(out[3], out[4], out[5]));
}

/// The spatial inertia of a rigid body of mass m whose centre of mass is at
/// c and whose rotational inertia about c is Ic (both in the frame's
/// coordinates), about the frame's origin (eq. 2.63):
/// [Ic + m c× c×^T, m c×; m c×^T, m 1].
static inline sp_mat6 sp_inertia(float m, sim_vec3 c, const sp_mat3* Ic) {
    const sp_mat3 cx = {{{0.0f, -c.z, c.y}, {c.z, 0.0f, -c.x}, {-c.y, c.x, 0.0f}}};
    sp_mat6 I;
    for (int i = 0; i < 3; ++i) {
        for (int j = 0; j < 3; ++j) {
            // c× c×^T = -(c×)(c×) since c× is skew.
            float cc = 0.0f;
            for (int k = 0; k < 3; ++k) {
                cc += cx.m[i][k] * cx.m[j][k];
            }
            I.m[i][j] = Ic->m[i][j] + m * cc;
            I.m[i][j + 3] = m * cx.m[i][j];
            I.m[i + 3][j] = m * cx.m[j][i];
            I.m[i + 3][j + 3] = i == j ? m : 0.0f;
        }
    }
    return I;
}

/// The 6×6 matrix of X (A → B, motion): [E 0; -E r× E].
static inline sp_mat6 sp_xform_matrix(const sp_xform* x) {
    const sim_vec3 r = x->r;
    const sp_mat3 rx = {{{0.0f, -r.z, r.y}, {r.z, 0.0f, -r.x}, {-r.y, r.x, 0.0f}}};
    const sp_mat3 Erx = m3_mul(&x->E, &rx);
    sp_mat6 X;
    for (int i = 0; i < 3; ++i) {
        for (int j = 0; j < 3; ++j) {
            X.m[i][j] = x->E.m[i][j];
            X.m[i][j + 3] = 0.0f;
            X.m[i + 3][j] = -Erx.m[i][j];
            X.m[i + 3][j + 3] = x->E.m[i][j];
        }
    }
    return X;
}

/// acc += X^T I X: an inertia in B coordinates (I, symmetric) added to one
/// in A coordinates (acc), for X taking A to B (eq. 2.66). X's upper-right
/// block is zero and the result is symmetric: 270 multiplications, not
/// the 432 of two full 6×6 products.
static inline void sp_inertia_add_back(sp_mat6* acc, const sp_xform* x, const sp_mat6* I) {
    const sp_mat6 X = sp_xform_matrix(x);
    float IX[6][6]; // I X
    for (int i = 0; i < 6; ++i) {
        for (int j = 0; j < 3; ++j) {
            float s = 0.0f;
            for (int k = 0; k < 6; ++k) {
                s += I->m[i][k] * X.m[k][j];
            }
            IX[i][j] = s;
        }
        for (int j = 3; j < 6; ++j) {
            IX[i][j] = I->m[i][3] * X.m[3][j] + I->m[i][4] * X.m[4][j] + I->m[i][5] * X.m[5][j];
        }
    }
    for (int i = 0; i < 6; ++i) {
        const int k0 = i < 3 ? 0 : 3; // X^T's row i is zero before column k0
        for (int j = i; j < 6; ++j) {
            float s = 0.0f;
            for (int k = k0; k < 6; ++k) {
                s += X.m[k][i] * IX[k][j];
            }
            acc->m[i][j] += s;
            if (j != i) {
                acc->m[j][i] += s;
            }
        }
    }
}
