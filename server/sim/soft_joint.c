/*
 * soft_joint.c: a bone's joint to its parent in the soft step (soft.h):
 * Box2D v3's joint solve (revolute_joint.c, Box3D's spherical joint) in
 * three dimensions, on our joint frames and swing-twist limits (rigid.h).
 *
 * Rows, solved in this order each pass so the point constraint, the one
 * that matters most, has the last word:
 *   - the PD drive: a 1-D spring of stiffness kp about the axis of the
 *     rotation still to go, its impulse capped at the drive's torque
 *     (SIM_MAX_DRIVE_TORQUE); the drive's damping kd and joint friction act
 *     once per substep on the relative spin (sim__soft_joint_damp);
 *   - the twist range [twist_min, twist_max] about the child's twist axis,
 *     as two one-sided limits (a hinge's range, a fixed joint's zero);
 *   - the swing: a zero half-axis locks that swing component (two
 *     equality rows for a hinge or fixed joint); otherwise one one-sided row
 *     keeps the swing inside its ellipse, about the swing axis, with the
 *     limit angle where the ellipse meets the swing's ray;
 *   - the point: the two anchors coincide (3 rows, solved as one 3×3 block).
 * Limits are speculative while not yet reached (Box2D: an inactive limit
 * lets the joint close on it by at most its distance in one substep).
 */
#include "soft.h"
#include "vec.h"
#include "world.h"

void sim__soft_joint_prepare(sim_world* w, const sim__soft_ctx* ctx, const sim__ijoint* ij,
                             sim__soft_joint* sj) {
    const sim__body* p = &w->body[ij->p];
    const sim__body* c = &w->body[ij->c];
    const sim__bjoint* j = &w->bjoint[ij->j];
    sj->p = w->soft_index[ij->p];
    sj->c = w->soft_index[ij->c];
    sj->j = ij->j;
    sj->rp0 = q_rotate(p->q, j->anchor_p);
    sj->rc0 = q_rotate(c->q, j->anchor_c);
    sj->delta_center = v3_sub(c->x, p->x);
    sj->fp0 = q_mul(p->q, j->frame_p);
    sj->fc0 = q_mul(c->q, j->frame_c);
    sj->acc = j->warm;
    // The drive's target within the limits: fixed for the tick.
    if (j->kp > 0.0f) {
        sim__joint_clamp(j, j->target, &sj->goal);
    }
    // A limit cannot be reached within a substep from farther than the
    // largest relative turn of one: both bodies at the spin cap.
    const float margin = 2.0f * SIM__SOFT_MAX_SPIN_PER_TICK / w->dt * ctx->h;
    const float lo = j->twist_min + margin, hi = j->twist_max - margin;
    if (lo < hi) {
        sj->tan_lo_far = tanf(0.5f * lo);
        sj->tan_hi_far = tanf(0.5f * hi);
    } else {
        sj->tan_lo_far = 1.0f;
        sj->tan_hi_far = -1.0f;
    }
}

void sim__soft_joint_store(sim_world* w, const sim__soft_joint* sj) {
    w->bjoint[sj->j].warm = sj->acc;
}

typedef sim__joint_frame joint_frame;

static joint_frame frame_now(const sim__soft_joint* sj, const sim__body_state* p,
                             const sim__body_state* c) {
    joint_frame f;
    f.jp = q_mul(p->dq, sj->fp0);
    f.jc = q_mul(c->dq, sj->fc0);
    sim_quat rel = q_mul(q_conj(f.jp), f.jc);
    q_swing_twist(rel, &f.swing, &f.twist);
    if (f.twist.w < 0.0f) {
        f.twist = q4(-f.twist.x, -f.twist.y, -f.twist.z, -f.twist.w);
    }
    if (f.swing.w < 0.0f) {
        f.swing = q4(-f.swing.x, -f.swing.y, -f.swing.z, -f.swing.w);
    }
    f.twist_axis = q_rotate(f.jc, v3(1.0f, 0.0f, 0.0f));
    return f;
}

// Effective mass of a pure rotation about unit axis a (world).
static float angular_mass(const sim__body_mass* mp, const sim__body_mass* mc, sim_vec3 a) {
    float k = v3_dot(a, sim__sym_mul(mp->iw, a)) + v3_dot(a, sim__sym_mul(mc->iw, a));
    return k > 0.0f ? 1.0f / k : 0.0f;
}

// Applies angular impulse L to the child and -L to the parent.
static void turn_pair(sim__body_state* p, const sim__body_mass* mp, sim__body_state* c,
                      const sim__body_mass* mc, sim_vec3 L) {
    sim__soft_turn(c, mc, L);
    sim__soft_turn(p, mp, v3_scale(L, -1.0f));
}

// One angular row about `axis` with Ċ = dot(ω_c - ω_p, axis): an equality
// (C = 0; a locked swing) or, `one_sided`, a limit (C >= 0, speculative
// while C > 0). Soft with the bias, rigid in the relax (Box2D's joint rows).
static void solve_row(const sim__soft_ctx* ctx, sim__body_state* p, const sim__body_mass* mp,
                      sim__body_state* c, const sim__body_mass* mc, sim_vec3 axis, float C,
                      float* lambda, bool use_bias, bool one_sided) {
    float m = angular_mass(mp, mc, axis);
    if (m == 0.0f) {
        return;
    }
    float bias = 0.0f, mass_scale = 1.0f, impulse_scale = 0.0f;
    if (one_sided && C > 0.0f) {
        bias = C * ctx->inv_h; // speculative
    } else if (use_bias) {
        bias = ctx->joint_soft.bias_rate * C;
        mass_scale = ctx->joint_soft.mass_scale;
        impulse_scale = ctx->joint_soft.impulse_scale;
    }
    float cdot = v3_dot(v3_sub(c->w, p->w), axis);
    float impulse = -m * mass_scale * (cdot + bias) - impulse_scale * *lambda;
    if (one_sided) {
        float next = fmaxf(*lambda + impulse, 0.0f);
        impulse = next - *lambda;
        *lambda = next;
    } else {
        *lambda += impulse;
    }
    turn_pair(p, mp, c, mc, v3_scale(axis, impulse));
}

static void solve_limit(const sim__soft_ctx* ctx, sim__body_state* p, const sim__body_mass* mp,
                        sim__body_state* c, const sim__body_mass* mc, sim_vec3 axis, float C,
                        float* lambda, bool use_bias) {
    solve_row(ctx, p, mp, c, mc, axis, C, lambda, use_bias, true);
}

static void solve_lock(const sim__soft_ctx* ctx, sim__body_state* p, const sim__body_mass* mp,
                       sim__body_state* c, const sim__body_mass* mc, sim_vec3 axis, float C,
                       float* lambda, bool use_bias) {
    solve_row(ctx, p, mp, c, mc, axis, C, lambda, use_bias, false);
}

// The drive: a spring of stiffness kp toward the (limit-clamped) target
// about the axis of the rotation still to go, implicit (Catto's soft
// constraint with physical stiffness: bias rate k/(h·k), mass scale
// h²k·W/(1 + h²k·W)), its impulse per substep capped at the drive torque × h.
static void solve_drive(const sim__soft_ctx* ctx, const sim__bjoint* j, const sim_quat* goal,
                        const joint_frame* f, sim__body_state* p, const sim__body_mass* mp,
                        sim__body_state* c, const sim__body_mass* mc, float* lambda) {
    // One implicit spring step per substep: nothing accumulates across
    // passes (the axis follows the rotation still to go).
    *lambda = 0.0f;
    sim_quat rel = q_mul(f->swing, f->twist);
    sim_vec3 e = q_rotate(f->jp, q_to_rotvec(q_mul(*goal, q_conj(rel))));
    float angle = v3_len(e);
    if (angle < 1e-9f) {
        return;
    }
    sim_vec3 axis = v3_scale(e, 1.0f / angle);
    float k_inv =
        v3_dot(axis, sim__sym_mul(mp->iw, axis)) + v3_dot(axis, sim__sym_mul(mc->iw, axis));
    if (k_inv <= 0.0f) {
        return;
    }
    const float h = ctx->h;
    const float beta_w = h * h * j->kp * k_inv;
    const float mass_scale = beta_w / (1.0f + beta_w), impulse_scale = 1.0f / (1.0f + beta_w);
    const float bias = -angle / h; // C = -angle, bias rate k/(h·k) = 1/h
    float cdot = v3_dot(v3_sub(c->w, p->w), axis);
    float impulse = -(mass_scale / k_inv) * (cdot + bias) - impulse_scale * *lambda;
    float cap = SIM_MAX_DRIVE_TORQUE * h;
    float next = fminf(fmaxf(*lambda + impulse, -cap), cap);
    impulse = next - *lambda;
    *lambda = next;
    turn_pair(p, mp, c, mc, v3_scale(axis, impulse));
}

// K = m·1 - [r]× I⁻¹ [r]× added into the symmetric k (xx, yy, zz, xy, xz,
// yz). Column i of -[r]× I⁻¹ [r]× is (I⁻¹ (r × e_i)) × r.
static void add_point_mass(float* k, float inv_mass, const float* iw, sim_vec3 r) {
    sim_vec3 cx = v3_cross(sim__sym_mul(iw, v3(0.0f, r.z, -r.y)), r);
    sim_vec3 cy = v3_cross(sim__sym_mul(iw, v3(-r.z, 0.0f, r.x)), r);
    sim_vec3 cz = v3_cross(sim__sym_mul(iw, v3(r.y, -r.x, 0.0f)), r);
    k[0] += inv_mass + cx.x;
    k[1] += inv_mass + cy.y;
    k[2] += inv_mass + cz.z;
    k[3] += cx.y;
    k[4] += cx.z;
    k[5] += cy.z;
}

// Solves the symmetric k·x = b (Cramer's rule); zero if k is singular.
static sim_vec3 sym_solve(const float* k, sim_vec3 b) {
    float a00 = k[0], a11 = k[1], a22 = k[2], a01 = k[3], a02 = k[4], a12 = k[5];
    float c00 = a11 * a22 - a12 * a12, c01 = a02 * a12 - a01 * a22, c02 = a01 * a12 - a02 * a11;
    float det = a00 * c00 + a01 * c01 + a02 * c02;
    if (fabsf(det) < 1e-30f) {
        return v3(0.0f, 0.0f, 0.0f);
    }
    float c11 = a00 * a22 - a02 * a02, c12 = a01 * a02 - a00 * a12, c22 = a00 * a11 - a01 * a01;
    float inv = 1.0f / det;
    return v3(inv * (c00 * b.x + c01 * b.y + c02 * b.z), inv * (c01 * b.x + c11 * b.y + c12 * b.z),
              inv * (c02 * b.x + c12 * b.y + c22 * b.z));
}

void sim__soft_joint_warm(const sim__soft_ctx* ctx, sim__soft_joint* sj) {
    sim__body_state sp, sc;
    sim__body_state* p = sim__soft_state_of(ctx, sj->p, &sp);
    sim__body_state* c = sim__soft_state_of(ctx, sj->c, &sc);
    const sim__body_mass *mp = sim__soft_mass_of(ctx, sj->p), *mc = sim__soft_mass_of(ctx, sj->c);
    sim_vec3 rp = q_rotate(p->dq, sj->rp0), rc = q_rotate(c->dq, sj->rc0);
    // The angular rows' axes as they are now.
    // The angular rows' axes as they are now; the biased solve that follows
    // sees the same poses and reuses them.
    joint_frame f = frame_now(sj, p, c);
    sj->frame = f;
    const sim__joint_impulses* a = &sj->acc;
    sim_vec3 L = v3_scale(f.twist_axis, a->twist_lo - a->twist_hi);
    sim_vec3 sy = q_rotate(f.jp, v3(0.0f, 1.0f, 0.0f)), sz = q_rotate(f.jp, v3(0.0f, 0.0f, 1.0f));
    L = v3_add(L, v3_add(v3_scale(sy, a->swing_y), v3_scale(sz, a->swing_z)));
    float yz = sqrtf(f.swing.y * f.swing.y + f.swing.z * f.swing.z);
    if (yz > 1e-6f && a->swing != 0.0f) {
        sim_vec3 axis = q_rotate(f.jp, v3(0.0f, f.swing.y / yz, f.swing.z / yz));
        L = v3_sub(L, v3_scale(axis, a->swing));
    }
    turn_pair(p, mp, c, mc, L);
    // The drive's impulse is not carried over: its axis turns with the target.
    sim__soft_push(c, mc, rc, a->lin);
    sim__soft_push(p, mp, rp, v3_scale(a->lin, -1.0f));
}

void sim__soft_joint_solve(const sim__soft_ctx* ctx, const sim__bjoint* j, sim__soft_joint* sj,
                           bool use_bias) {
    sim__body_state sp, sc;
    sim__body_state* p = sim__soft_state_of(ctx, sj->p, &sp);
    sim__body_state* c = sim__soft_state_of(ctx, sj->c, &sc);
    const sim__body_mass *mp = sim__soft_mass_of(ctx, sj->p), *mc = sim__soft_mass_of(ctx, sj->c);
    sim__joint_impulses* a = &sj->acc;
    // The warm start just computed the frame on these poses.
    joint_frame f = use_bias ? sj->frame : frame_now(sj, p, c);

    if (j->kp > 0.0f && use_bias) {
        solve_drive(ctx, j, &sj->goal, &f, p, mp, c, mc, &a->drive);
    }

    // Twist range: φ = 2·atan2(x, w) about the child's twist axis.
    // With w >= 0, φ grows with x/w: inside the far band when x/w lies
    // between the band's tangents; then neither limit can act this pass.
    if (f.twist.x > f.twist.w * sj->tan_lo_far && f.twist.x < f.twist.w * sj->tan_hi_far) {
        a->twist_lo = a->twist_hi = 0.0f;
    } else {
        float phi = 2.0f * atan2f(f.twist.x, f.twist.w);
        solve_limit(ctx, p, mp, c, mc, f.twist_axis, phi - j->twist_min, &a->twist_lo, use_bias);
        solve_limit(ctx, p, mp, c, mc, v3_scale(f.twist_axis, -1.0f), j->twist_max - phi,
                    &a->twist_hi, use_bias);
    }

    // Swing: locked components, then the ellipse of the free ones.
    float ha = j->sin_half_swing1, hb = j->sin_half_swing2;
    if (ha <= 1e-6f) {
        sim_vec3 ay = q_rotate(f.jp, v3(0.0f, 1.0f, 0.0f));
        solve_lock(ctx, p, mp, c, mc, ay, 2.0f * f.swing.y, &a->swing_y, use_bias);
    }
    if (hb <= 1e-6f) {
        sim_vec3 az = q_rotate(f.jp, v3(0.0f, 0.0f, 1.0f));
        solve_lock(ctx, p, mp, c, mc, az, 2.0f * f.swing.z, &a->swing_z, use_bias);
    }
    if (ha > 1e-6f || hb > 1e-6f) {
        float y = ha > 1e-6f ? f.swing.y : 0.0f, z = hb > 1e-6f ? f.swing.z : 0.0f;
        float ny = ha > 1e-6f ? y / ha : 0.0f, nz = hb > 1e-6f ? z / hb : 0.0f;
        float r2 = ny * ny + nz * nz;
        float yz = sqrtf(y * y + z * z);
        // Well inside the ellipse (under 70 % of the way out) the limit
        // cannot be reached within a substep by any spin under the cap.
        if (r2 > 0.49f && yz > 1e-6f) {
            float theta = 2.0f * asinf(fminf(yz, 1.0f));
            float theta_max = 2.0f * asinf(fminf(yz / sqrtf(r2), 1.0f));
            sim_vec3 axis = q_rotate(f.jp, v3(0.0f, y / yz, z / yz));
            solve_limit(ctx, p, mp, c, mc, v3_scale(axis, -1.0f), theta_max - theta, &a->swing,
                        use_bias);
        } else {
            a->swing = 0.0f;
        }
    }

    // The point: anchor of the child onto the anchor of the parent.
    sim_vec3 rp = q_rotate(p->dq, sj->rp0), rc = q_rotate(c->dq, sj->rc0);
    sim_vec3 cdot = v3_sub(v3_add(c->v, v3_cross(c->w, rc)), v3_add(p->v, v3_cross(p->w, rp)));
    sim_vec3 bias = v3(0.0f, 0.0f, 0.0f);
    float mass_scale = 1.0f, impulse_scale = 0.0f;
    if (use_bias) {
        sim_vec3 sep = v3_add(v3_sub(v3_add(c->dp, rc), v3_add(p->dp, rp)), sj->delta_center);
        bias = v3_scale(sep, ctx->joint_soft.bias_rate);
        mass_scale = ctx->joint_soft.mass_scale;
        impulse_scale = ctx->joint_soft.impulse_scale;
    }
    float k[6] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
    add_point_mass(k, p->inv_mass, mp->iw, rp);
    add_point_mass(k, c->inv_mass, mc->iw, rc);
    sim_vec3 x = sym_solve(k, v3_add(cdot, bias));
    sim_vec3 imp = v3_sub(v3_scale(x, -mass_scale), v3_scale(a->lin, impulse_scale));
    a->lin = v3_add(a->lin, imp);
    sim__soft_push(c, mc, rc, imp);
    sim__soft_push(p, mp, rp, v3_scale(imp, -1.0f));
}

// The drive's damping and the joint's friction against the child's spin
// relative to the parent, once per substep: about the axis of that spin, an
// implicit viscous impulse (ω' = ω / (1 + kd·h·W)), then a Coulomb one that
// stops what is left if at most friction·h can.
void sim__soft_joint_damp(const sim__soft_ctx* ctx, const sim__bjoint* j, sim__soft_joint* sj) {
    if (j->kd <= 0.0f && j->friction <= 0.0f) {
        return;
    }
    sim__body_state sp, sc;
    sim__body_state* p = sim__soft_state_of(ctx, sj->p, &sp);
    sim__body_state* c = sim__soft_state_of(ctx, sj->c, &sc);
    const sim__body_mass *mp = sim__soft_mass_of(ctx, sj->p), *mc = sim__soft_mass_of(ctx, sj->c);
    sim_vec3 wrel = v3_sub(c->w, p->w);
    float m = v3_len(wrel);
    if (m < 1e-9f) {
        return;
    }
    sim_vec3 n = v3_scale(wrel, 1.0f / m);
    float W = v3_dot(n, sim__sym_mul(mc->iw, n)) + v3_dot(n, sim__sym_mul(mp->iw, n));
    if (W <= 0.0f) {
        return;
    }
    float mag = 0.0f;
    if (j->kd > 0.0f) {
        const float h_kd = j->kd * ctx->h;
        mag = m * h_kd / (1.0f + h_kd * W);
    }
    if (j->friction > 0.0f) {
        mag += fminf(m / W - mag, j->friction * ctx->h);
    }
    turn_pair(p, mp, c, mc, v3_scale(n, -mag));
}
