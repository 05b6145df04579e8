/*
 * constraints.c: projection of the particle constraints: distance
 * (equality and inequality, with XPBD compliance) and the hinge-side
 * particle hinge that makes particle-ragdoll elbows and knees bend in one
 * plane and one direction only. Pure functions over the arrays they are given; no world state.
 */
#include "vec.h"
#include "world.h"

void sim__project_dist(sim_vec3* pos, const float* inv_mass, sim__dist* c, float inv_h2) {
    const float wa = inv_mass[c->a];
    const float wb = inv_mass[c->b];
    const float wsum = wa + wb;
    if (wsum == 0.0f) {
        return;
    }
    sim_vec3 d = v3_sub(pos[c->b], pos[c->a]);
    float len = v3_len(d);
    if (len < 1e-6f) {
        // Coincident particles have no direction to push along (seed 000 §7).
        return;
    }
    float C = len - c->rest;
    if ((c->kind == SIM__DIST_MIN && C >= 0.0f) || (c->kind == SIM__DIST_MAX && C <= 0.0f) ||
        c->kind == SIM__DIST_TORN) {
        return;
    }
    // XPBD (Macklin et al. 2016, eq. 18) with ∇C_a = -n, ∇C_b = n, |n| = 1:
    // Δλ = (-C - α̃λ) / (wa + wb + α̃), α̃ = α/h².
    float alpha = c->compliance * inv_h2;
    float dl = (-C - alpha * c->lambda) / (wsum + alpha);
    c->lambda += dl;
    // Δx_a = -wa·n·Δλ, Δx_b = +wb·n·Δλ, with n = d/len folded into one scale.
    sim_vec3 corr = v3_scale(d, dl / len);
    pos[c->a] = v3_sub(pos[c->a], v3_scale(corr, wa));
    pos[c->b] = v3_add(pos[c->b], v3_scale(corr, wb));
}

sim_vec3 sim__swing(sim_vec3 from, sim_vec3 to, sim_vec3 v) {
    float c = v3_dot(from, to);
    sim_vec3 k = v3_cross(from, to);
    return v3_add(v3_add(v3_scale(v, c), v3_cross(k, v)), v3_scale(k, v3_dot(k, v) / (1.0f + c)));
}

// The torso frame of a joint: lateral, up and forward unit vectors.
typedef struct torso_frame {
    sim_vec3 l, u, f;
} torso_frame;

static torso_frame frame_of(const sim_vec3* pos, const sim__joint* j) {
    torso_frame t;
    t.u = v3_normalize(v3_sub(pos[j->up1], pos[j->up0]));
    sim_vec3 lat = v3_sub(pos[j->l1], pos[j->l0]);
    t.l = v3_normalize(v3_sub(lat, v3_scale(t.u, v3_dot(lat, t.u))));
    t.f = v3_cross(t.l, t.u);
    return t;
}

static sim_vec3 to_world(const torso_frame* t, sim_vec3 v) {
    return v3_add(v3_add(v3_scale(t->l, v.x), v3_scale(t->u, v.y)), v3_scale(t->f, v.z));
}

static void project_cone(sim_vec3* pos, const float* inv_mass, const sim__joint* j,
                         const torso_frame* t) {
    const float wa = inv_mass[j->a], wb = inv_mass[j->b];
    const float wsum = wa + wb;
    sim_vec3 u = v3_sub(pos[j->b], pos[j->a]);
    float ulen = v3_len(u);
    if (wsum == 0.0f || ulen < 1e-6f) {
        return;
    }
    sim_vec3 r = to_world(t, j->rest_dir);
    sim_vec3 uh = v3_scale(u, 1.0f / ulen);
    float cosang = v3_dot(uh, r);
    float cos_lim = cosf(j->limit);
    if (cosang >= cos_lim) {
        return;
    }
    // Rotate toward r within the plane of r and the limb, onto the boundary.
    sim_vec3 perp = v3_sub(uh, v3_scale(r, cosang));
    float pl = v3_len(perp);
    perp = pl > 1e-6f ? v3_scale(perp, 1.0f / pl) : t->f;
    sim_vec3 target = v3_add(v3_scale(r, cos_lim), v3_scale(perp, sinf(j->limit)));
    sim_vec3 delta = v3_sub(v3_scale(target, ulen), u);
    pos[j->b] = v3_add(pos[j->b], v3_scale(delta, wb / wsum));
    pos[j->a] = v3_sub(pos[j->a], v3_scale(delta, wa / wsum));
}

static void project_hinge(sim_vec3* pos, const float* inv_mass, const sim__joint* j,
                          const torso_frame* t) {
    const float wb = inv_mass[j->b], wc = inv_mass[j->c];
    const float wsum = wb + wc;
    if (wsum == 0.0f) {
        return;
    }
    sim_vec3 u = v3_normalize(v3_sub(pos[j->b], pos[j->a]));
    sim_vec3 r = to_world(t, j->rest_dir);
    // Full strength while the limb is more than ~40° from the swing's
    // singularity (u = -r), none within ~25°; the cone limit keeps it there.
    float one_c = 1.0f + v3_dot(r, u);
    float strength = (one_c - 0.1f) / 0.15f;
    if (strength <= 0.0f) {
        return;
    }
    strength = strength > 1.0f ? 1.0f : strength;
    sim_vec3 n = v3_normalize(sim__swing(r, u, to_world(t, j->rest_axis)));
    sim_vec3 fwd = v3_cross(u, n);

    sim_vec3 d = v3_sub(pos[j->c], pos[j->b]);
    float dlen = v3_len(d);
    if (dlen < 1e-6f) {
        return;
    }
    // Flexion angle in the hinge plane, positive toward the allowed side.
    const float two_pi = 6.28318531f;
    float theta = atan2f(j->sign * v3_dot(d, fwd), v3_dot(d, u));
    float tn = theta < 0.0f ? theta + two_pi : theta;
    bool off_plane = fabsf(v3_dot(d, n)) > 1e-6f * dlen;
    if (tn > j->limit) {
        // Outside the arc [0, limit]: go to the nearer end, measured the
        // short way round (the forbidden arc's midpoint is π + limit/2).
        theta = tn < 0.5f * two_pi + 0.5f * j->limit ? j->limit : 0.0f;
    } else if (!off_plane) {
        return;
    }
    sim_vec3 dir = v3_add(v3_scale(u, cosf(theta)), v3_scale(fwd, j->sign * sinf(theta)));
    sim_vec3 delta = v3_scale(v3_sub(v3_scale(dir, dlen), d), strength);
    pos[j->c] = v3_add(pos[j->c], v3_scale(delta, wc / wsum));
    pos[j->b] = v3_sub(pos[j->b], v3_scale(delta, wb / wsum));
}

void sim__project_joint(sim_vec3* pos, const float* inv_mass, const sim__joint* j) {
    torso_frame t = frame_of(pos, j);
    if (j->kind == SIM__JOINT_CONE) {
        project_cone(pos, inv_mass, j, &t);
    } else {
        project_hinge(pos, inv_mass, j, &t);
    }
}
