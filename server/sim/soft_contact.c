/*
 * soft_contact.c: contact points in the soft step (soft.h), after Box2D
 * v3's contact_solver.c: found once per tick on the poses at its start with
 * a speculative margin (a point still apart may close by at most its gap in
 * a substep), a soft non-penetration row (push-out capped at 3 m/s), two
 * friction rows clamped together to the cone μ·λn, rolling resistance, and
 * restitution once after the last substep. Impulses are kept across ticks
 * under a key (bodies and feature) for the warm start.
 */
#include "soft.h"
#include "vec.h"
#include "world.h"

#include <stdlib.h>
#include <string.h>

// Rolling resistance coefficient (dimensionless), as the XPBD contacts'.
#define ROLLING 0.1f
// Points this far apart (m) are kept whatever the bodies' speeds (Box2D's
// speculative distance, 4 linear slops).
#define SOFT_SPECULATIVE 0.02f

// The warm-start key of a point: body a, what b is, and which point of the
// pair. a < 2^20 bodies; code < 2^22 (a body, a box, or the ground).
static uint64_t point_key(uint32_t a, uint32_t code, uint32_t feature) {
    return (uint64_t)a << 32 | (uint64_t)code << 4 | feature;
}

void sim__soft_add_point(sim_world* w, uint32_t ia, uint32_t ib, uint32_t code, sim_vec3 n,
                         sim_vec3 pa, sim_vec3 pb, uint32_t feature) {
    if (w->soft_contact_count == w->soft_contact_cap) {
        w->overflows.contacts++;
        return;
    }
    // Keep a point still apart only if the bodies move toward each other
    // along its normal fast enough to close the gap this tick: a fast body's
    // margin covers its own path, not every face around it (a point kept
    // against a face the body is not moving toward is a ghost contact).
    const sim__body* a = &w->body[ia];
    const float sep = v3_dot(v3_sub(pa, pb), n);
    if (sep > SOFT_SPECULATIVE) {
        sim_vec3 va = v3_add(a->v, v3_cross(a->w, v3_sub(pa, a->x)));
        if (ib != SIM__NO_BODY) {
            const sim__body* b = &w->body[ib];
            va = v3_sub(va, v3_add(b->v, v3_cross(b->w, v3_sub(pb, b->x))));
        }
        const float g = v3_len(w->params.gravity) * w->dt;
        const float approach = fmaxf(0.0f, g - v3_dot(va, n));
        if (sep > SOFT_SPECULATIVE + approach * w->dt) {
            return;
        }
    }
    uint32_t k = w->soft_contact_count++;
    sim__soft_contact* c = &w->soft_contacts[k];
    memset(c, 0, sizeof *c);
    c->a = w->soft_index[ia];
    c->n = n;
    c->ra = v3_sub(pa, a->x);
    // A static b (the world, or a sleeping, frozen body) is measured from
    // a's centre, so that the separation is not a difference of two
    // world-sized coordinates (5 µm lost 75 m from the origin).
    sim_vec3 xb = a->x;
    if (ib != SIM__NO_BODY && w->soft_index[ib] != SIM__NO_STATE) {
        c->b = w->soft_index[ib];
        xb = w->body[ib].x;
        // A kinematic b does not give way: static softness, as Box2D's.
        c->is_static = w->body[ib].inv_mass == 0.0f;
    } else {
        c->b = SIM__NO_STATE;
        c->is_static = 1;
    }
    c->rb = v3_sub(pb, xb);
    // The separation follows the points of the bodies' cores (capsule
    // segments, sphere centres) under the contact, each pushed out by its
    // radius along the normal: a round body that rolls keeps touching with
    // a new point of its surface. (Following the material point instead, as
    // Box2D does, lifts it off the ground by r·(1 - cos θ) as the body turns:
    // a rolling ball then lost its support for the tick's last substeps and
    // sank 3 mm; test_soft_step.)
    const float rad_a = w->binfo[ia].radius;
    c->ca = v3_add(c->ra, v3_scale(n, rad_a));
    float rad_b = 0.0f;
    if (c->b != SIM__NO_STATE) {
        rad_b = w->binfo[ib].radius;
        c->cb = v3_sub(c->rb, v3_scale(n, rad_b));
    } else {
        c->cb = c->rb; // static: a point fixed in the world
    }
    c->base_sep = v3_dot(v3_sub(a->x, xb), n) - rad_a - rad_b;
    c->roll_cap = ROLLING * w->binfo[ia].radius;
    w->soft_keys[k] = point_key(ia, ib != SIM__NO_BODY ? ib : code, feature);
}

static int cached_cmp(const void* x, const void* y) {
    uint64_t a = ((const sim__soft_cached*)x)->key, b = ((const sim__soft_cached*)y)->key;
    return a < b ? -1 : a > b;
}

static const sim__soft_cached* cache_find(const sim_world* w, uint64_t key) {
    uint32_t lo = 0, hi = w->soft_cache_count;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        uint64_t k = w->soft_cache[mid].key;
        if (k == key) {
            return &w->soft_cache[mid];
        }
        if (k < key) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return NULL;
}

static float point_mass(const sim__body_state* s, const sim__body_mass* m, sim_vec3 r, sim_vec3 d) {
    sim_vec3 rn = v3_cross(r, d);
    return s->inv_mass + v3_dot(rn, sim__sym_mul(m->iw, rn));
}

// Unit tangents t1, t2 with (n, t1, t2) right-handed (Duff et al. 2017's
// branchless orthonormal basis).
static void tangents(sim_vec3 n, sim_vec3* t1, sim_vec3* t2) {
    float s = copysignf(1.0f, n.z);
    float a = -1.0f / (s + n.z), b = n.x * n.y * a;
    *t1 = v3(1.0f + s * n.x * n.x * a, s * b, -s * n.x);
    *t2 = v3(b, s + n.y * n.y * a, -n.y);
}

static sim_vec3 rel_velocity(const sim__body_state* a, const sim__body_state* b,
                             const sim__soft_contact* c) {
    sim_vec3 va = v3_add(a->v, v3_cross(a->w, c->ra));
    sim_vec3 vb = v3_add(b->v, v3_cross(b->w, c->rb));
    return v3_sub(va, vb);
}

void sim__soft_contacts_prepare(sim_world* w, const sim__soft_ctx* ctx) {
    const bool warm = w->soft_cache_epoch == w->topo_epoch;
    for (uint32_t k = 0; k < w->soft_contact_count; ++k) {
        sim__soft_contact* c = &w->soft_contacts[k];
        const sim__body_state* a = &ctx->state[c->a];
        const sim__body_mass* ma = &ctx->mass[c->a];
        const sim__body_state* b =
            c->b == SIM__NO_STATE ? &sim__soft_static_state : &ctx->state[c->b];
        const sim__body_mass* mb = sim__soft_mass_of(ctx, c->b);
        tangents(c->n, &c->t1, &c->t2);
        float kn = point_mass(a, ma, c->ra, c->n) + point_mass(b, mb, c->rb, c->n);
        float k1 = point_mass(a, ma, c->ra, c->t1) + point_mass(b, mb, c->rb, c->t1);
        float k2 = point_mass(a, ma, c->ra, c->t2) + point_mass(b, mb, c->rb, c->t2);
        c->m_n = kn > 0.0f ? 1.0f / kn : 0.0f;
        c->m_t1 = k1 > 0.0f ? 1.0f / k1 : 0.0f;
        c->m_t2 = k2 > 0.0f ? 1.0f / k2 : 0.0f;
        c->vn0 = v3_dot(rel_velocity(a, b, c), c->n);
        c->friction = w->params.friction;
        const sim__soft_cached* old = warm ? cache_find(w, w->soft_keys[k]) : NULL;
        if (old != NULL) {
            c->lambda_n = old->lambda_n;
            c->lambda_t1 = v3_dot(old->friction, c->t1);
            c->lambda_t2 = v3_dot(old->friction, c->t2);
            c->lambda_roll = old->roll;
        }
    }
}

void sim__soft_contact_warm(const sim__soft_ctx* ctx, sim__soft_contact* c) {
    sim__body_state sb;
    sim__body_state* a = &ctx->state[c->a];
    sim__body_state* b = sim__soft_state_of(ctx, c->b, &sb);
    const sim__body_mass* ma = &ctx->mass[c->a];
    const sim__body_mass* mb = sim__soft_mass_of(ctx, c->b);
    sim_vec3 p = v3_add(v3_scale(c->n, c->lambda_n),
                        v3_add(v3_scale(c->t1, c->lambda_t1), v3_scale(c->t2, c->lambda_t2)));
    sim__soft_push(a, ma, c->ra, p);
    sim__soft_turn(a, ma, c->lambda_roll);
    sim__soft_push(b, mb, c->rb, v3_scale(p, -1.0f));
    sim__soft_turn(b, mb, v3_scale(c->lambda_roll, -1.0f));
}

void sim__soft_contact_solve(const sim__soft_ctx* ctx, sim__soft_contact* c, bool use_bias) {
    sim__body_state sb;
    sim__body_state* a = &ctx->state[c->a];
    sim__body_state* b = sim__soft_state_of(ctx, c->b, &sb);
    const sim__body_mass* ma = &ctx->mass[c->a];
    const sim__body_mass* mb = sim__soft_mass_of(ctx, c->b);

    // Non-penetration, on the current separation of the two cores' points.
    sim_vec3 pa = v3_add(a->dp, q_rotate(a->dq, c->ca));
    sim_vec3 pb = v3_add(b->dp, q_rotate(b->dq, c->cb));
    float s = v3_dot(v3_sub(pa, pb), c->n) + c->base_sep;
    float bias = 0.0f, mass_scale = 1.0f, impulse_scale = 0.0f;
    if (s > 0.0f) {
        bias = s * ctx->inv_h; // speculative
    } else if (use_bias) {
        const sim__softness* soft = c->is_static ? &ctx->static_soft : &ctx->contact_soft;
        bias = fmaxf(soft->bias_rate * s, -ctx->max_push);
        mass_scale = soft->mass_scale;
        impulse_scale = soft->impulse_scale;
    }
    sim_vec3 dv = rel_velocity(a, b, c);
    float vn = v3_dot(dv, c->n);
    float impulse = -c->m_n * mass_scale * (vn + bias) - impulse_scale * c->lambda_n;
    float next = fmaxf(c->lambda_n + impulse, 0.0f);
    impulse = next - c->lambda_n;
    c->lambda_n = next;
    c->max_lambda_n = fmaxf(c->max_lambda_n, impulse);
    sim_vec3 p = v3_scale(c->n, impulse);

    // Friction: both tangents, then the pair clamped to the cone.
    sim__soft_push(a, ma, c->ra, p);
    sim__soft_push(b, mb, c->rb, v3_scale(p, -1.0f));
    dv = rel_velocity(a, b, c);
    float l1 = c->lambda_t1 - c->m_t1 * v3_dot(dv, c->t1);
    float l2 = c->lambda_t2 - c->m_t2 * v3_dot(dv, c->t2);
    float max_f = c->friction * c->lambda_n;
    float lf = sqrtf(l1 * l1 + l2 * l2);
    if (lf > max_f) {
        float sc = lf > 0.0f ? max_f / lf : 0.0f;
        l1 *= sc;
        l2 *= sc;
    }
    sim_vec3 pf = v3_add(v3_scale(c->t1, l1 - c->lambda_t1), v3_scale(c->t2, l2 - c->lambda_t2));
    c->lambda_t1 = l1;
    c->lambda_t2 = l2;
    sim__soft_push(a, ma, c->ra, pf);
    sim__soft_push(b, mb, c->rb, v3_scale(pf, -1.0f));

    // Rolling and spinning resistance: a torque of at most ROLLING × radius
    // × the normal impulse against the whole relative spin (about the
    // normal too: without it a ball set spinning about the vertical on the
    // floor spun for minutes and never slept).
    float cap = c->roll_cap * c->lambda_n;
    sim_vec3 wr = v3_sub(a->w, b->w);
    float wrl = v3_len(wr);
    if (wrl > 1e-9f || v3_dot(c->lambda_roll, c->lambda_roll) > 0.0f) {
        sim_vec3 dir = wrl > 1e-9f ? v3_scale(wr, 1.0f / wrl) : v3_normalize(c->lambda_roll);
        float kw = v3_dot(dir, sim__sym_mul(ma->iw, dir)) + v3_dot(dir, sim__sym_mul(mb->iw, dir));
        if (kw > 0.0f) {
            sim_vec3 next_roll = v3_sub(c->lambda_roll, v3_scale(dir, wrl / kw));
            float len = v3_len(next_roll);
            if (len > cap) {
                next_roll = len > 0.0f ? v3_scale(next_roll, cap / len) : next_roll;
            }
            sim_vec3 dl = v3_sub(next_roll, c->lambda_roll);
            c->lambda_roll = next_roll;
            sim__soft_turn(a, ma, dl);
            sim__soft_turn(b, mb, v3_scale(dl, -1.0f));
        }
    }
}

void sim__soft_contact_restitute(const sim__soft_ctx* ctx, sim__soft_contact* c) {
    if (ctx->restitution == 0.0f || c->vn0 > -ctx->rest_speed || c->max_lambda_n == 0.0f) {
        return;
    }
    sim__body_state sb;
    sim__body_state* a = &ctx->state[c->a];
    sim__body_state* b = sim__soft_state_of(ctx, c->b, &sb);
    const sim__body_mass* ma = &ctx->mass[c->a];
    const sim__body_mass* mb = sim__soft_mass_of(ctx, c->b);
    float vn = v3_dot(rel_velocity(a, b, c), c->n);
    float impulse = -c->m_n * (vn + ctx->restitution * c->vn0);
    float next = fmaxf(c->lambda_n + impulse, 0.0f);
    impulse = next - c->lambda_n;
    c->lambda_n = next;
    sim_vec3 p = v3_scale(c->n, impulse);
    sim__soft_push(a, ma, c->ra, p);
    sim__soft_push(b, mb, c->rb, v3_scale(p, -1.0f));
}

void sim__soft_contacts_store(sim_world* w) {
    sim__soft_cached* next = w->soft_cache_next;
    for (uint32_t k = 0; k < w->soft_contact_count; ++k) {
        const sim__soft_contact* c = &w->soft_contacts[k];
        next[k].key = w->soft_keys[k];
        next[k].lambda_n = c->lambda_n;
        next[k].friction = v3_add(v3_scale(c->t1, c->lambda_t1), v3_scale(c->t2, c->lambda_t2));
        next[k].roll = c->lambda_roll;
    }
    qsort(next, w->soft_contact_count, sizeof *next, cached_cmp);
    w->soft_cache_next = w->soft_cache;
    w->soft_cache = next;
    w->soft_cache_count = w->soft_contact_count;
    w->soft_cache_epoch = w->topo_epoch;
}
