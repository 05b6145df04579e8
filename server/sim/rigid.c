/*
 * rigid.c: rigid bodies and their joints, solved as XPBD rigid bodies
 * (Müller, Macklin, Chentanez, Jeschke, Kim 2020, "Detailed Rigid Body
 * Simulation with Extended Position Based Dynamics"; equation numbers below
 * refer to it). Each substep integrates positions and orientations, projects
 * joint and contact constraints once (with enough substeps one pass is the
 * point of the method), derives velocities from the motion, then runs a
 * velocity pass for restitution, friction and drive damping.
 *
 * Joint limits use Jolt's swing-twist decomposition of the relative
 * rotation of the two joint frames: the twist about +X is clamped to its
 * range and the swing to an ellipse in half-angle-sine space; a hinge is the
 * case of zero swing. The PD drive of seed 004, τ = kp(θt - θ) - kd·θ̇, is an
 * angular constraint toward the target of compliance 1/kp (so it is stable
 * at any gain) plus implicit velocity damping kd.
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
static sim_vec3 inv_inertia_mul(const sim__body* b, sim_vec3 v) {
    const float* m = b->iw;
    return v3(m[0] * v.x + m[3] * v.y + m[4] * v.z, m[3] * v.x + m[1] * v.y + m[5] * v.z,
              m[4] * v.x + m[5] * v.y + m[2] * v.z);
}

float sim__inv_mass_at(const sim__body* b, sim_vec3 r, sim_vec3 n, bool angular) {
    if (b == NULL) {
        return 0.0f;
    }
    sim_vec3 u = angular ? n : v3_cross(r, n);
    float w = v3_dot(u, inv_inertia_mul(b, u));
    return angular ? w : b->inv_mass + w;
}

void sim__apply_angular_impulse(sim__body* a, sim__body* b, sim_vec3 L) {
    if (a != NULL && a->inv_mass > 0.0f) {
        a->w = v3_add(a->w, inv_inertia_mul(a, L));
    }
    if (b != NULL && b->inv_mass > 0.0f) {
        b->w = v3_sub(b->w, inv_inertia_mul(b, L));
    }
}

void sim__apply_impulse_at(sim__body* b, sim_vec3 r, sim_vec3 p) {
    b->v = v3_add(b->v, v3_scale(p, b->inv_mass));
    b->w = v3_add(b->w, inv_inertia_mul(b, v3_cross(r, p)));
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
        sim_vec3 dx = v3_scale(p, b1->inv_mass), dth = inv_inertia_mul(b1, v3_cross(r1, p));
        b1->x = v3_add(b1->x, dx);
        b1->q = q_add_rotvec(b1->q, dth);
        if (still > 0.0f) {
            b1->x_prev = v3_add(b1->x_prev, v3_scale(dx, still));
            b1->q_prev = q_add_rotvec(b1->q_prev, v3_scale(dth, still));
        }
    }
    if (b2 != NULL && (b2->inv_mass > 0.0f)) {
        sim_vec3 dx = v3_scale(p, -b2->inv_mass);
        sim_vec3 dth = v3_scale(inv_inertia_mul(b2, v3_cross(r2, p)), -1.0f);
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
        b1->q = q_add_rotvec(b1->q, inv_inertia_mul(b1, p));
    }
    if (b2 != NULL && b2->inv_mass > 0.0f) {
        b2->q = q_add_rotvec(b2->q, v3_scale(inv_inertia_mul(b2, p), -1.0f));
    }
    return dl;
}

void sim__body_segment(const sim__body* b, const sim__body_info* bi, sim_vec3* p0, sim_vec3* p1) {
    sim_vec3 half = q_rotate(b->q, v3(bi->half_len, 0.0f, 0.0f));
    *p0 = v3_sub(b->x, half);
    *p1 = v3_add(b->x, half);
}

// ---------------------------------------------------------------------------
// Joints
// ---------------------------------------------------------------------------

sim_quat sim__joint_relative(const sim__body* p, const sim__body* c, const sim__bjoint* j) {
    sim_quat jp = q_mul(p->q, j->frame_p), jc = q_mul(c->q, j->frame_c);
    return q_normalize(q_mul(q_conj(jp), jc));
}

bool sim__joint_clamp(const sim__bjoint* j, sim_quat rel, sim_quat* clamped) {
    sim_quat swing, twist;
    q_swing_twist(rel, &swing, &twist);
    bool changed = false;

    // Twist: the angle about +X, clamped to [min, max].
    float phi = 2.0f * atan2f(twist.x, twist.w);
    if (phi < j->twist_min || phi > j->twist_max) {
        phi = phi < j->twist_min ? j->twist_min : j->twist_max;
        twist = q4(sinf(0.5f * phi), 0.0f, 0.0f, cosf(0.5f * phi));
        changed = true;
    }

    // Swing: (y, z) of the swing quaternion inside the ellipse with
    // half-axes sin(swing1/2), sin(swing2/2). Outside, it is scaled back
    // along the ray to the boundary (a zero half-axis locks that component).
    if (swing.w < 0.0f) {
        swing = q4(-swing.x, -swing.y, -swing.z, -swing.w);
    }
    float a = sinf(0.5f * j->swing1), b = sinf(0.5f * j->swing2);
    float y = swing.y, z = swing.z;
    float ny = a > 1e-6f ? y / a : (fabsf(y) > 1e-7f ? 1e9f : 0.0f);
    float nz = b > 1e-6f ? z / b : (fabsf(z) > 1e-7f ? 1e9f : 0.0f);
    float r2 = ny * ny + nz * nz;
    if (r2 > 1.0f) {
        if (a <= 1e-6f) {
            y = 0.0f;
        }
        if (b <= 1e-6f) {
            z = 0.0f;
        }
        float my = a > 1e-6f ? y / a : 0.0f, mz = b > 1e-6f ? z / b : 0.0f;
        float m2 = my * my + mz * mz;
        if (m2 > 1.0f) {
            float s = 1.0f / sqrtf(m2);
            y *= s;
            z *= s;
        }
        float w = sqrtf(fmaxf(0.0f, 1.0f - y * y - z * z));
        swing = q4(0.0f, y, z, w);
        changed = true;
    }
    *clamped = q_normalize(q_mul(swing, twist));
    return changed;
}

// World rotation vector that turns the child so the relative rotation
// becomes `target`: rotvec(target·rel⁻¹) expressed in the parent's joint
// frame, rotated into the world.
static sim_vec3 correction_to(const sim__body* p, const sim__bjoint* j, sim_quat rel,
                              sim_quat target) {
    sim_quat jp = q_mul(p->q, j->frame_p);
    return q_rotate(jp, q_to_rotvec(q_mul(target, q_conj(rel))));
}

void sim__joint_solve(sim__body* p, sim__body* c, const sim__bjoint* j, float h, bool drive) {
    // Swing-twist limits (§3.4.2), hard.
    sim_quat rel = sim__joint_relative(p, c, j), target;
    if (sim__joint_clamp(j, rel, &target)) {
        sim__apply_angular(c, p, correction_to(p, j, rel, target), 0.0f, h, 0.0f);
        rel = sim__joint_relative(p, c, j);
    }

    // PD drive: compliance 1/kp toward the (limit-clamped) target, the
    // impulse capped at the drive's maximum torque × h².
    if (drive && j->kp > 0.0f) {
        sim_quat goal;
        sim__joint_clamp(j, j->target, &goal);
        float max_l = SIM_MAX_DRIVE_TORQUE * h * h;
        sim__apply_angular(c, p, correction_to(p, j, rel, goal), 1.0f / j->kp, h, max_l);
    }

    // Attachment last: the angular corrections turn the bodies about their
    // centres, which moves the anchors; the child's anchor now moves onto
    // the parent's (eq. 2-7).
    sim_vec3 rp = q_rotate(p->q, j->anchor_p), rc = q_rotate(c->q, j->anchor_c);
    sim_vec3 gap = v3_sub(v3_add(p->x, rp), v3_add(c->x, rc));
    sim__apply_positional(c, p, rc, rp, gap, 0.0f, h, 0.0f);
}

// Applies an angular impulse against the relative angular velocity ω_rel of
// c with respect to p: viscous with coefficient h_kd = kd·h (h_kd >= 0), or
// Coulomb (h_kd < 0) of at most `cap` N·m·s.
static void oppose_relative_spin(sim__body* p, sim__body* c, float h_kd, float cap) {
    sim_vec3 wrel = v3_sub(c->w, p->w);
    float m = v3_len(wrel);
    if (m < 1e-9f) {
        return;
    }
    sim_vec3 n = v3_scale(wrel, 1.0f / m);
    float W = sim__inv_mass_at(c, v3(0, 0, 0), n, true) + sim__inv_mass_at(p, v3(0, 0, 0), n, true);
    if (W <= 0.0f) {
        return;
    }
    // Viscous (implicit): ω_rel' = ω_rel / (1 + kd·h·W); or, with h_kd < 0,
    // Coulomb: stop it if an impulse of at most `cap` can.
    float mag = h_kd >= 0.0f ? m * h_kd / (1.0f + h_kd * W) : fminf(m / W, cap);
    sim_vec3 imp = v3_scale(n, -mag);
    c->w = v3_add(c->w, inv_inertia_mul(c, imp));
    p->w = v3_sub(p->w, inv_inertia_mul(p, imp));
}

void sim__joint_damp(sim__body* p, sim__body* c, const sim__bjoint* j, float h) {
    if (j->kd > 0.0f) {
        oppose_relative_spin(p, c, j->kd * h, 0.0f);
    }
    // Real joints are not frictionless: without this a limb lying across
    // its hinge axis swings on it like a door for ever.
    if (j->friction > 0.0f) {
        oppose_relative_spin(p, c, -1.0f, j->friction * h);
    }
}
