/*
 * joint.c: joints between a bone and its parent (Müller et al. 2020,
 * §3.3-3.4). Each substep projects the attachment, the limits and the
 * drive once per pass; a velocity pass adds drive damping and friction.
 *
 * Joint limits use Jolt's swing-twist decomposition of the relative
 * rotation of the two joint frames: the twist about +X is clamped to its
 * range and the swing to an ellipse in half-angle-sine space; a hinge is the
 * case of zero swing. The PD drive of seed 004, τ = kp(θt - θ) - kd·θ̇, is an
 * angular constraint toward the target of compliance 1/kp (so it is stable
 * at any gain) plus implicit velocity damping kd.
 */
#include "rigid.h"
#include "world.h"

#include <string.h>

sim_quat sim__joint_relative(const sim__body* p, const sim__body* c, const sim__bjoint* j) {
    sim_quat jp = q_mul(p->q, j->frame_p), jc = q_mul(c->q, j->frame_c);
    return q_normalize(q_mul(q_conj(jp), jc));
}

void sim__bjoint_limits(sim__bjoint* j) {
    j->sin_half_swing1 = sinf(0.5f * j->swing1);
    j->sin_half_swing2 = sinf(0.5f * j->swing2);
    j->tan_half_tmin = tanf(0.5f * j->twist_min);
    j->tan_half_tmax = tanf(0.5f * j->twist_max);
    j->sin_half_tmin = sinf(0.5f * j->twist_min);
    j->cos_half_tmin = cosf(0.5f * j->twist_min);
    j->sin_half_tmax = sinf(0.5f * j->twist_max);
    j->cos_half_tmax = cosf(0.5f * j->twist_max);
}

// The limits' clamp of rel as its swing and twist parts (sim__joint_clamp):
// true when either had to change.
static bool clamp_parts(const sim__bjoint* j, sim_quat rel, sim_quat* swing_out,
                        sim_quat* twist_out) {
    sim_quat swing, twist;
    q_swing_twist(rel, &swing, &twist);
    bool changed = false;

    // Twist: the angle φ = 2·atan2(x, w) about +X, clamped to [min, max].
    // With w ≥ 0 (the same rotation), φ is in [-π, π] and grows with x/w, so
    // φ < min exactly when x < w·tan(min/2): no trigonometry in range.
    if (twist.w < 0.0f) {
        twist = q4(-twist.x, -twist.y, -twist.z, -twist.w);
    }
    if (twist.x < twist.w * j->tan_half_tmin) {
        twist = q4(j->sin_half_tmin, 0.0f, 0.0f, j->cos_half_tmin);
        changed = true;
    } else if (twist.x > twist.w * j->tan_half_tmax) {
        twist = q4(j->sin_half_tmax, 0.0f, 0.0f, j->cos_half_tmax);
        changed = true;
    }

    // Swing: (y, z) of the swing quaternion inside the ellipse with
    // half-axes sin(swing1/2), sin(swing2/2). Outside, it is scaled back
    // along the ray to the boundary (a zero half-axis locks that component).
    if (swing.w < 0.0f) {
        swing = q4(-swing.x, -swing.y, -swing.z, -swing.w);
    }
    float a = j->sin_half_swing1, b = j->sin_half_swing2;
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
    *swing_out = swing;
    *twist_out = twist;
    return changed;
}

bool sim__joint_clamp(const sim__bjoint* j, sim_quat rel, sim_quat* clamped) {
    sim_quat swing, twist;
    bool changed = clamp_parts(j, rel, &swing, &twist);
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

float sim__joint_project(sim__body* p, sim__body* c, const sim__bjoint* j, float tol_lin,
                         float tol_ang) {
    if (p->inv_mass <= 0.0f && c->inv_mass <= 0.0f) {
        return 0.0f; // neither can move (kinematic, or pinned by stabilize.c)
    }
    float err = 0.0f;
    sim_quat rel = sim__joint_relative(p, c, j), swing, twist;
    if (clamp_parts(j, rel, &swing, &twist)) {
        sim_vec3 rot = correction_to(p, j, rel, q_normalize(q_mul(swing, twist)));
        const float theta = v3_len(rot);
        float e = theta / tol_ang;
        if (e > 1.0f) {
            // Both bodies turn about the correction's own axis, so the
            // joint reaches its limit in one step, shared by their inverse
            // moments about that axis: the child's about its anchor, about
            // which it turns (the attachment stays closed; turned about its
            // centre, as a substep does, it opens, and closing it turns the
            // bone back: 18 % more projections on the rain), the parent's
            // about its centre (about the anchor, a heavy parent's far
            // joints would swing wide).
            const sim_vec3 n = v3_scale(rot, 1.0f / theta);
            const sim_vec3 rc0 = q_rotate(c->q, j->anchor_c);
            float wc = 0.0f, wp = 0.0f;
            if (c->inv_mass > 0.0f) {
                // The child's moment about its anchor (parallel axes).
                const float ic = v3_dot(n, sim__inv_inertia_mul(c, n));
                const sim_vec3 rn = v3_cross(rc0, n);
                wc = ic > 0.0f ? 1.0f / (1.0f / ic + v3_dot(rn, rn) / c->inv_mass) : 0.0f;
            }
            if (p->inv_mass > 0.0f) {
                wp = v3_dot(n, sim__inv_inertia_mul(p, n));
            }
            if (wc + wp > 0.0f) {
                const float share = wc / (wc + wp);
                if (c->inv_mass > 0.0f) {
                    // The child turns about its anchor: the attachment stays.
                    const sim_quat q = q_add_rotvec(c->q, v3_scale(rot, share));
                    const sim_quat d = q_mul(q, q_conj(c->q));
                    c->x = v3_add(v3_add(c->x, rc0), q_rotate(d, v3_scale(rc0, -1.0f)));
                    c->q = q;
                }
                if (p->inv_mass > 0.0f) {
                    p->q = q_add_rotvec(p->q, v3_scale(rot, share - 1.0f));
                }
            }
            err = e;
        }
    }
    sim_vec3 rp = q_rotate(p->q, j->anchor_p), rc = q_rotate(c->q, j->anchor_c);
    sim_vec3 gap = v3_sub(v3_add(p->x, rp), v3_add(c->x, rc));
    float e = v3_len(gap) / tol_lin;
    if (e > 1.0f) {
        sim__apply_positional(c, p, rc, rp, gap, 0.0f, 1.0f, 0.0f);
        err = fmaxf(err, e);
    }
    return err;
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
    c->w = v3_add(c->w, sim__inv_inertia_mul(c, imp));
    p->w = v3_sub(p->w, sim__inv_inertia_mul(p, imp));
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
