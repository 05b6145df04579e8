/*
 * vec.h: small inline float vector helpers used inside the simulator.
 * Private to server/sim. All math stays in float (-Wdouble-promotion).
 */
#pragma once

#include "sim.h"

#include <math.h>

static inline sim_vec3 v3(float x, float y, float z) {
    sim_vec3 r = {x, y, z};
    return r;
}

static inline sim_vec3 v3_add(sim_vec3 a, sim_vec3 b) {
    return v3(a.x + b.x, a.y + b.y, a.z + b.z);
}

static inline sim_vec3 v3_sub(sim_vec3 a, sim_vec3 b) {
    return v3(a.x - b.x, a.y - b.y, a.z - b.z);
}

static inline sim_vec3 v3_scale(sim_vec3 a, float s) {
    return v3(a.x * s, a.y * s, a.z * s);
}

static inline float v3_dot(sim_vec3 a, sim_vec3 b) {
    return a.x * b.x + a.y * b.y + a.z * b.z;
}

static inline sim_vec3 v3_cross(sim_vec3 a, sim_vec3 b) {
    return v3(a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x);
}

static inline float v3_len(sim_vec3 a) {
    return sqrtf(v3_dot(a, a));
}

// Returns a scaled by 1/|a|, or the zero vector when |a| is tiny.
static inline sim_vec3 v3_normalize(sim_vec3 a) {
    float l = v3_len(a);
    return l > 1e-12f ? v3_scale(a, 1.0f / l) : v3(0.0f, 0.0f, 0.0f);
}

// Rotation about +Y by angle yaw (radians), right-handed.
static inline sim_vec3 v3_rotate_y(sim_vec3 a, float yaw) {
    float c = cosf(yaw), s = sinf(yaw);
    return v3(c * a.x + s * a.z, a.y, -s * a.x + c * a.z);
}
