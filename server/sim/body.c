/*
 * body.c: rigid bodies solved as XPBD rigid bodies (Müller, Macklin,
 * Chentanez, Jeschke, Kim 2020, "Detailed Rigid Body Simulation with
 * Extended Position Based Dynamics"; equation numbers below refer to it):
 * world-frame inverse inertia, generalised inverse masses, positional and
 * angular corrections, impulses, and a capsule's segment.
 *
 * Kinematic bodies (animated bones) have zero inverse mass and inertia:
 * constraints never move them, but their velocities count in contacts.
 */
#include "rigid.h"
#include "world.h"

#include <string.h>

void sim__body_update_inertia(sim__body* b) {
    // Iw = R diag(I⁻¹) Rᵀ, R the rotation matrix of q (columns: body axes).
    sim_vec3 c[3] = {q_rotate(b->q, v3(1.0f, 0.0f, 0.0f)), q_rotate(b->q, v3(0.0f, 1.0f, 0.0f)),
                     q_rotate(b->q, v3(0.0f, 0.0f, 1.0f))};
    const float d[3] = {b->inv_inertia.x, b->inv_inertia.y, b->inv_inertia.z};
    float xx = 0.0f, yy = 0.0f, zz = 0.0f, xy = 0.0f, xz = 0.0f, yz = 0.0f;
    for (int k = 0; k < 3; ++k) {
        xx += c[k].x * c[k].x * d[k];
        yy += c[k].y * c[k].y * d[k];
        zz += c[k].z * c[k].z * d[k];
        xy += c[k].x * c[k].y * d[k];
        xz += c[k].x * c[k].z * d[k];
        yz += c[k].y * c[k].z * d[k];
    }
    const float iw[6] = {xx, yy, zz, xy, xz, yz};
    memcpy(b->iw, iw, sizeof iw);
}

// World-space I⁻¹·v for body b, with the substep's world inverse inertia
// (Müller et al. 2020 use the current orientation; the difference over one
// substep is of second order in ω·h, and this avoids two quaternion
// rotations per use).
float sim__inv_mass_at(const sim__body* b, sim_vec3 r, sim_vec3 n, bool angular) {
    if (b == NULL) {
        return 0.0f;
    }
    sim_vec3 u = angular ? n : v3_cross(r, n);
    float w = v3_dot(u, sim__inv_inertia_mul(b, u));
    return angular ? w : b->inv_mass + w;
}

void sim__apply_angular_impulse(sim__body* a, sim__body* b, sim_vec3 L) {
    if (a != NULL && a->inv_mass > 0.0f) {
        a->w = v3_add(a->w, sim__inv_inertia_mul(a, L));
    }
    if (b != NULL && b->inv_mass > 0.0f) {
        b->w = v3_sub(b->w, sim__inv_inertia_mul(b, L));
    }
}

void sim__apply_impulse_at(sim__body* b, sim_vec3 r, sim_vec3 p) {
    b->v = v3_add(b->v, v3_scale(p, b->inv_mass));
    b->w = v3_add(b->w, sim__inv_inertia_mul(b, v3_cross(r, p)));
}

void sim__body_push_now(sim_world* w, uint32_t i, sim_vec3 p, sim_vec3 j) {
    sim__body* b = &w->body[i];
    if (b->inv_mass == 0.0f) {
        sim__reduced_push(w, i, p, j); // a REDUCED ragdoll's bone takes it next tick
        return;
    }
    if (sim__body_asleep(w, i)) {
        return;
    }
    sim_vec3 r = v3_sub(p, b->x);
    if (w->def.solver == SIM_SOLVER_SOFT_STEP && w->soft_index[i] != SIM__NO_STATE) {
        // Mid-tick the soft step holds the body's velocity (soft_step.c).
        sim__body_state* s = &w->soft_state[w->soft_index[i]];
        const float* m = w->soft_mass[w->soft_index[i]].iw;
        sim_vec3 L = v3_cross(r, j);
        s->v = v3_add(s->v, v3_scale(j, s->inv_mass));
        s->w = v3_add(s->w,
                      v3(m[0] * L.x + m[3] * L.y + m[4] * L.z, m[3] * L.x + m[1] * L.y + m[5] * L.z,
                         m[4] * L.x + m[5] * L.y + m[2] * L.z));
        return;
    }
    sim__apply_impulse_at(b, r, j);
}

float sim__apply_positional(sim__body* b1, sim__body* b2, sim_vec3 r1, sim_vec3 r2, sim_vec3 corr,
                            float compliance, float h, float still) {
    float c = v3_len(corr);
    if (c < 1e-9f) {
        return 0.0f;
    }
    sim_vec3 n = v3_scale(corr, 1.0f / c);
    float w1 = sim__inv_mass_at(b1, r1, n, false);
    float w2 = sim__inv_mass_at(b2, r2, n, false);
    float alpha = compliance / (h * h);
    if (w1 + w2 + alpha <= 0.0f) {
        return 0.0f;
    }
    // One projection per substep, so λ starts at zero and the α̃λ term of
    // eq. 4 vanishes (Macklin et al. 2019).
    float dl = c / (w1 + w2 + alpha);
    sim_vec3 p = v3_scale(n, dl);
    if (b1 != NULL && (b1->inv_mass > 0.0f)) {
        sim_vec3 dx = v3_scale(p, b1->inv_mass), dth = sim__inv_inertia_mul(b1, v3_cross(r1, p));
        b1->x = v3_add(b1->x, dx);
        b1->q = q_add_rotvec(b1->q, dth);
        if (still > 0.0f) {
            b1->x_prev = v3_add(b1->x_prev, v3_scale(dx, still));
            b1->q_prev = q_add_rotvec(b1->q_prev, v3_scale(dth, still));
        }
    }
    if (b2 != NULL && (b2->inv_mass > 0.0f)) {
        sim_vec3 dx = v3_scale(p, -b2->inv_mass);
        sim_vec3 dth = v3_scale(sim__inv_inertia_mul(b2, v3_cross(r2, p)), -1.0f);
        b2->x = v3_add(b2->x, dx);
        b2->q = q_add_rotvec(b2->q, dth);
        if (still > 0.0f) {
            b2->x_prev = v3_add(b2->x_prev, v3_scale(dx, still));
            b2->q_prev = q_add_rotvec(b2->q_prev, v3_scale(dth, still));
        }
    }
    return dl;
}

float sim__apply_angular(sim__body* b1, sim__body* b2, sim_vec3 rot, float compliance, float h,
                         float max_lambda) {
    float theta = v3_len(rot);
    if (theta < 1e-9f) {
        return 0.0f;
    }
    sim_vec3 n = v3_scale(rot, 1.0f / theta);
    float w1 = sim__inv_mass_at(b1, v3(0.0f, 0.0f, 0.0f), n, true);
    float w2 = sim__inv_mass_at(b2, v3(0.0f, 0.0f, 0.0f), n, true);
    float alpha = compliance / (h * h);
    if (w1 + w2 + alpha <= 0.0f) {
        return 0.0f;
    }
    float dl = theta / (w1 + w2 + alpha);
    if (max_lambda > 0.0f && dl > max_lambda) {
        dl = max_lambda;
    }
    sim_vec3 p = v3_scale(n, dl);
    if (b1 != NULL && b1->inv_mass > 0.0f) {
        b1->q = q_add_rotvec(b1->q, sim__inv_inertia_mul(b1, p));
    }
    if (b2 != NULL && b2->inv_mass > 0.0f) {
        b2->q = q_add_rotvec(b2->q, v3_scale(sim__inv_inertia_mul(b2, p), -1.0f));
    }
    return dl;
}

void sim__body_segment(const sim__body* b, const sim__body_info* bi, sim_vec3* p0, sim_vec3* p1) {
    sim_vec3 half = q_rotate(b->q, v3(bi->half_len, 0.0f, 0.0f));
    *p0 = v3_sub(b->x, half);
    *p1 = v3_add(b->x, half);
}

void sim__body_push_away(sim_world* w, uint32_t i, sim_vec3 p, sim_vec3 dir, float j, float vmax) {
    const sim__body* b = &w->body[i];
    if (b->inv_mass == 0.0f || sim__body_asleep(w, i) || !(j > 0.0f)) {
        return;
    }
    sim_vec3 v = b->v;
    float inv_mass = b->inv_mass;
    if (w->def.solver == SIM_SOLVER_SOFT_STEP && w->soft_index[i] != SIM__NO_STATE) {
        v = w->soft_state[w->soft_index[i]].v; // mid-tick, as in sim__body_push_now()
        inv_mass = w->soft_state[w->soft_index[i]].inv_mass;
    }
    const float room = (vmax - v3_dot(v, dir)) / inv_mass;
    const float k = j < room ? j : room;
    if (k > 0.0f) {
        sim__body_push_now(w, i, p, v3_scale(dir, k));
    }
}
