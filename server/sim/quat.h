/*
 * quat.h: inline unit-quaternion helpers used inside the simulator.
 * Private to server/sim. Quaternions are (x, y, z, w) with w the scalar;
 * rotation vectors are axis × angle in radians. All math in float.
 */
#pragma once

#include "vec.h"

static inline sim_quat q4(float x, float y, float z, float w) {
    sim_quat q = {x, y, z, w};
    return q;
}

static inline sim_quat q_identity(void) {
    return q4(0.0f, 0.0f, 0.0f, 1.0f);
}

static inline sim_quat q_mul(sim_quat a, sim_quat b) {
    return q4(a.w * b.x + a.x * b.w + a.y * b.z - a.z * b.y,
              a.w * b.y - a.x * b.z + a.y * b.w + a.z * b.x,
              a.w * b.z + a.x * b.y - a.y * b.x + a.z * b.w,
              a.w * b.w - a.x * b.x - a.y * b.y - a.z * b.z);
}

static inline sim_quat q_conj(sim_quat q) {
    return q4(-q.x, -q.y, -q.z, q.w);
}

static inline float q_dot(sim_quat a, sim_quat b) {
    return a.x * b.x + a.y * b.y + a.z * b.z + a.w * b.w;
}

static inline sim_quat q_normalize(sim_quat q) {
    float l = sqrtf(q_dot(q, q));
    return l > 1e-12f ? q4(q.x / l, q.y / l, q.z / l, q.w / l) : q_identity();
}

// v' = q v q*, expanded (t = 2 q.xyz × v; v' = v + w t + q.xyz × t).
static inline sim_vec3 q_rotate(sim_quat q, sim_vec3 v) {
    sim_vec3 u = v3(q.x, q.y, q.z);
    sim_vec3 t = v3_scale(v3_cross(u, v), 2.0f);
    return v3_add(v3_add(v, v3_scale(t, q.w)), v3_cross(u, t));
}

static inline sim_vec3 q_rotate_inv(sim_quat q, sim_vec3 v) {
    return q_rotate(q_conj(q), v);
}

static inline sim_quat q_from_axis_angle(sim_vec3 axis, float angle) {
    float s = sinf(0.5f * angle);
    sim_vec3 a = v3_normalize(axis);
    return q4(a.x * s, a.y * s, a.z * s, cosf(0.5f * angle));
}

// Rotation by a rotation vector (axis × angle, rad).
static inline sim_quat q_from_rotvec(sim_vec3 r) {
    float angle = v3_len(r);
    if (angle < 1e-9f) {
        return q_normalize(q4(0.5f * r.x, 0.5f * r.y, 0.5f * r.z, 1.0f));
    }
    return q_from_axis_angle(v3_scale(r, 1.0f / angle), angle);
}

// The rotation vector of q (the short way round: w >= 0 first).
static inline sim_vec3 q_to_rotvec(sim_quat q) {
    if (q.w < 0.0f) {
        q = q4(-q.x, -q.y, -q.z, -q.w);
    }
    sim_vec3 u = v3(q.x, q.y, q.z);
    float s = v3_len(u);
    if (s < 1e-7f) {
        return v3_scale(u, 2.0f); // small angle: 2·sin(θ/2) ≈ θ
    }
    float angle = 2.0f * atan2f(s, q.w);
    return v3_scale(u, angle / s);
}

// The shortest-arc rotation taking unit vector a to unit vector b.
static inline sim_quat q_from_to(sim_vec3 a, sim_vec3 b) {
    float d = v3_dot(a, b);
    if (d < -0.999999f) {
        // Opposite: any axis perpendicular to a will do.
        sim_vec3 axis = v3_cross(v3(1.0f, 0.0f, 0.0f), a);
        if (v3_dot(axis, axis) < 1e-6f) {
            axis = v3_cross(v3(0.0f, 1.0f, 0.0f), a);
        }
        return q_from_axis_angle(axis, 3.14159265f);
    }
    sim_vec3 c = v3_cross(a, b);
    return q_normalize(q4(c.x, c.y, c.z, 1.0f + d));
}

// Spherical interpolation from a (t = 0) to b (t = 1), the short way.
static inline sim_quat q_slerp(sim_quat a, sim_quat b, float t) {
    float d = q_dot(a, b);
    if (d < 0.0f) {
        b = q4(-b.x, -b.y, -b.z, -b.w);
        d = -d;
    }
    if (d > 0.9995f) {
        // Nearly parallel: normalised lerp is exact enough and stable.
        return q_normalize(q4(a.x + (b.x - a.x) * t, a.y + (b.y - a.y) * t, a.z + (b.z - a.z) * t,
                              a.w + (b.w - a.w) * t));
    }
    float theta = acosf(d);
    float s = sinf(theta);
    float wa = sinf((1.0f - t) * theta) / s, wb = sinf(t * theta) / s;
    return q4(wa * a.x + wb * b.x, wa * a.y + wb * b.y, wa * a.z + wb * b.z, wa * a.w + wb * b.w);
}

// Advances q by angular velocity w (rad/s, world frame) over h seconds:
// q += ½·h·[w, 0]·q, then normalise (Müller et al. 2020, eq. 8).
static inline sim_quat q_integrate(sim_quat q, sim_vec3 w, float h) {
    sim_quat dq = q_mul(q4(w.x, w.y, w.z, 0.0f), q);
    float k = 0.5f * h;
    return q_normalize(q4(q.x + k * dq.x, q.y + k * dq.y, q.z + k * dq.z, q.w + k * dq.w));
}

// Applies a small rotation vector dr (rad, world frame) to q:
// q += ½·[dr, 0]·q, normalised (Müller et al. 2020, eq. 9).
static inline sim_quat q_add_rotvec(sim_quat q, sim_vec3 dr) {
    sim_quat dq = q_mul(q4(dr.x, dr.y, dr.z, 0.0f), q);
    return q_normalize(
        q4(q.x + 0.5f * dq.x, q.y + 0.5f * dq.y, q.z + 0.5f * dq.z, q.w + 0.5f * dq.w));
}

// Swing-twist decomposition about the x axis (Jolt): q = swing · twist with
// twist = (x/s, 0, 0, w/s), s = √(w² + x²). q is first made w >= 0 (q and -q
// are one rotation; mixing them flips the twist by 2π, PhysX #140).
static inline void q_swing_twist(sim_quat q, sim_quat* swing, sim_quat* twist) {
    if (q.w < 0.0f) {
        q = q4(-q.x, -q.y, -q.z, -q.w);
    }
    float s = sqrtf(q.w * q.w + q.x * q.x);
    if (s < 1e-9f) {
        // A swing of exactly π: the twist is undefined; call it none.
        *twist = q_identity();
        *swing = q;
        return;
    }
    *twist = q4(q.x / s, 0.0f, 0.0f, q.w / s);
    *swing = q_mul(q, q_conj(*twist));
}
