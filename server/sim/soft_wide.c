/*
 * soft_wide.c: the soft step's contact points four at a time, Box2D v3's
 * wide contact solver (contact_solver.c's b2PrepareContactsTask,
 * b2WarmStartContactsTask, b2SolveContactTwoPointsTask and
 * b2ApplyRestitutionTask, whose idea this follows) in 3D.
 *
 * After the colouring, each colour's contact points are copied into blocks
 * of four lanes (sim__contact_block, structure of arrays). A stage gathers
 * the four lanes' bodies (velocities, pose changes, inverse masses and
 * world inverse inertias) from the state arrays by solver index into
 * lanes, runs one contact point per lane and scatters the velocities of
 * the dynamic bodies back: the lanes of a block are of one colour, so no
 * dynamic body is in two of them, and a static, sleeping or kinematic body
 * (which may be) is never written. The static stand-in (SIM__NO_STATE) is
 * read as zero velocity, no pose change and zero inverse mass and inertia,
 * as soft_contact.c's stand-in is.
 *
 * Each lane does exactly what soft_contact.c does to one point, operation
 * for operation (lanes.h: the same IEEE operations, no fusing); branches
 * become selects, so a lane that does not take one keeps its old values
 * bit for bit. The points of a colour share no dynamic body, so solving
 * them four at a time instead of one after the other changes nothing
 * either: the soft step gives the same bits with or without this file, and
 * so does the portable build of lanes.h.
 */
#include "lanes.h"
#include "soft.h"
#include "world.h"

#include <stddef.h>
#include <string.h>

// The static stand-in, as soft_contact.c's.

// ---------------------------------------------------------------------------
// Vectors of lanes
// ---------------------------------------------------------------------------

typedef struct v3w {
    sim__fw x, y, z;
} v3w;

static inline v3w w3_load(const sim__v3x4* v) {
    v3w r = {sim__fw_load(v->x), sim__fw_load(v->y), sim__fw_load(v->z)};
    return r;
}

static inline void w3_store(sim__v3x4* v, v3w a) {
    sim__fw_store(v->x, a.x);
    sim__fw_store(v->y, a.y);
    sim__fw_store(v->z, a.z);
}

static inline v3w w3_add(v3w a, v3w b) {
    v3w r = {sim__fw_add(a.x, b.x), sim__fw_add(a.y, b.y), sim__fw_add(a.z, b.z)};
    return r;
}

static inline v3w w3_sub(v3w a, v3w b) {
    v3w r = {sim__fw_sub(a.x, b.x), sim__fw_sub(a.y, b.y), sim__fw_sub(a.z, b.z)};
    return r;
}

// v3_scale(a, s): a.x * s, ...
static inline v3w w3_scale(v3w a, sim__fw s) {
    v3w r = {sim__fw_mul(a.x, s), sim__fw_mul(a.y, s), sim__fw_mul(a.z, s)};
    return r;
}

// v3_scale(a, -1.0f): the signs flipped.
static inline v3w w3_neg(v3w a) {
    v3w r = {sim__fw_neg(a.x), sim__fw_neg(a.y), sim__fw_neg(a.z)};
    return r;
}

// v3_dot: (a.x·b.x + a.y·b.y) + a.z·b.z.
static inline sim__fw w3_dot(v3w a, v3w b) {
    return sim__fw_add(sim__fw_add(sim__fw_mul(a.x, b.x), sim__fw_mul(a.y, b.y)),
                       sim__fw_mul(a.z, b.z));
}

static inline v3w w3_cross(v3w a, v3w b) {
    v3w r = {sim__fw_sub(sim__fw_mul(a.y, b.z), sim__fw_mul(a.z, b.y)),
             sim__fw_sub(sim__fw_mul(a.z, b.x), sim__fw_mul(a.x, b.z)),
             sim__fw_sub(sim__fw_mul(a.x, b.y), sim__fw_mul(a.y, b.x))};
    return r;
}

static inline v3w w3_select(sim__mw m, v3w a, v3w b) {
    v3w r = {sim__fw_select(m, a.x, b.x), sim__fw_select(m, a.y, b.y), sim__fw_select(m, a.z, b.z)};
    return r;
}

// sim__sym_mul: m (xx, yy, zz, xy, xz, yz) times v.
static inline v3w w3_sym_mul(const sim__fw* m, v3w v) {
    v3w r = {
        sim__fw_add(sim__fw_add(sim__fw_mul(m[0], v.x), sim__fw_mul(m[3], v.y)),
                    sim__fw_mul(m[4], v.z)),
        sim__fw_add(sim__fw_add(sim__fw_mul(m[3], v.x), sim__fw_mul(m[1], v.y)),
                    sim__fw_mul(m[5], v.z)),
        sim__fw_add(sim__fw_add(sim__fw_mul(m[4], v.x), sim__fw_mul(m[5], v.y)),
                    sim__fw_mul(m[2], v.z)),
    };
    return r;
}

// q_rotate: t = 2·(u × v); v + q.w·t + u × t.
static inline v3w w3_rotate(v3w u, sim__fw qw, v3w v) {
    v3w t = w3_scale(w3_cross(u, v), sim__fw_splat(2.0f));
    return w3_add(w3_add(v, w3_scale(t, qw)), w3_cross(u, t));
}

// ---------------------------------------------------------------------------
// Bodies of a block: gather, scatter, impulses
// ---------------------------------------------------------------------------

// One side (a or b) of a block's four lanes.
typedef struct wbody {
    v3w v, w;         // velocities: the only fields written back
    sim__fw inv_mass; // 0 for the static stand-in and kinematic bodies
    sim__fw tag;      // the float after w in sim__body_state (its body index), kept as is
    sim__fw iw[6];    // world inverse inertia (xx, yy, zz, xy, xz, yz)
    v3w dp;           // position change since the start of the tick
    v3w dq;           // rotation since the start of the tick: vector part...
    sim__fw dqw;      // ...and scalar part
} wbody;

static inline const sim__body_state* state_of(const sim__soft_ctx* ctx, uint32_t i) {
    return i == SIM__NO_STATE ? &sim__soft_static_state : &ctx->state[i];
}

#if SIM__LANES_SSE2
// Row `at` (a byte offset, four floats) of each lane's structure, as lanes:
// r0 = field 0 of lanes 0..3, and so on (a 4 × 4 transpose).
static inline const float* row(const void* base, size_t at) {
    return (const float*)(const void*)((const char*)base + at);
}

static inline void gather4(const void* const* p, size_t at, sim__fw* r0, sim__fw* r1, sim__fw* r2,
                           sim__fw* r3) {
    *r0 = sim__fw_load(row(p[0], at));
    *r1 = sim__fw_load(row(p[1], at));
    *r2 = sim__fw_load(row(p[2], at));
    *r3 = sim__fw_load(row(p[3], at));
    sim__fw_transpose(r0, r1, r2, r3);
}
#endif

// The four lanes' bodies idx[0..4) (the pose change only with `pose`).
static inline void gather(const sim__soft_ctx* ctx, const uint32_t* idx, bool pose, wbody* out) {
    const sim__body_state* s[4];
    const sim__body_mass* m[4];
    for (int l = 0; l < 4; ++l) {
        s[l] = state_of(ctx, idx[l]);
        m[l] = sim__soft_mass_of(ctx, idx[l]);
    }
#if SIM__LANES_SSE2
    const void* ps[4] = {s[0], s[1], s[2], s[3]};
    const void* pm[4] = {m[0], m[1], m[2], m[3]};
    gather4(ps, offsetof(sim__body_state, v), &out->v.x, &out->v.y, &out->v.z, &out->inv_mass);
    gather4(ps, offsetof(sim__body_state, w), &out->w.x, &out->w.y, &out->w.z, &out->tag);
    sim__fw unused0, unused1;
    gather4(pm, offsetof(sim__body_mass, iw), &out->iw[0], &out->iw[1], &out->iw[2], &out->iw[3]);
    gather4(pm, offsetof(sim__body_mass, iw) + 4 * sizeof(float), &out->iw[4], &out->iw[5],
            &unused0, &unused1);
    if (pose) {
        sim__fw unused2;
        gather4(ps, offsetof(sim__body_state, dp), &out->dp.x, &out->dp.y, &out->dp.z, &unused2);
        gather4(ps, offsetof(sim__body_state, dq), &out->dq.x, &out->dq.y, &out->dq.z, &out->dqw);
    }
#else
    for (int l = 0; l < 4; ++l) {
        out->v.x.f[l] = s[l]->v.x;
        out->v.y.f[l] = s[l]->v.y;
        out->v.z.f[l] = s[l]->v.z;
        out->inv_mass.f[l] = s[l]->inv_mass;
        out->w.x.f[l] = s[l]->w.x;
        out->w.y.f[l] = s[l]->w.y;
        out->w.z.f[l] = s[l]->w.z;
        out->tag.f[l] = 0.0f;
        for (int i = 0; i < 6; ++i) {
            out->iw[i].f[l] = m[l]->iw[i];
        }
        if (pose) {
            out->dp.x.f[l] = s[l]->dp.x;
            out->dp.y.f[l] = s[l]->dp.y;
            out->dp.z.f[l] = s[l]->dp.z;
            out->dq.x.f[l] = s[l]->dq.x;
            out->dq.y.f[l] = s[l]->dq.y;
            out->dq.z.f[l] = s[l]->dq.z;
            out->dqw.f[l] = s[l]->dq.w;
        }
    }
#endif
}

// Writes back the velocities of the lanes whose bit in `write` is set (the
// dynamic bodies').
static inline void scatter(const sim__soft_ctx* ctx, const uint32_t* idx, uint32_t write,
                           const wbody* in) {
#if SIM__LANES_SSE2
    // Rows back: v with inv_mass and w with the body index, both as
    // gathered, so a whole row is stored.
    sim__fw v[4] = {in->v.x, in->v.y, in->v.z, in->inv_mass};
    sim__fw w[4] = {in->w.x, in->w.y, in->w.z, in->tag};
    sim__fw_transpose(&v[0], &v[1], &v[2], &v[3]);
    sim__fw_transpose(&w[0], &w[1], &w[2], &w[3]);
    for (int l = 0; l < 4; ++l) {
        if (write >> l & 1u) {
            sim__body_state* s = &ctx->state[idx[l]];
            sim__fw_store((float*)(void*)((char*)s + offsetof(sim__body_state, v)), v[l]);
            sim__fw_store((float*)(void*)((char*)s + offsetof(sim__body_state, w)), w[l]);
        }
    }
#else
    for (int l = 0; l < 4; ++l) {
        if (write >> l & 1u) {
            sim__body_state* s = &ctx->state[idx[l]];
            s->v.x = in->v.x.f[l];
            s->v.y = in->v.y.f[l];
            s->v.z = in->v.z.f[l];
            s->w.x = in->w.x.f[l];
            s->w.y = in->w.y.f[l];
            s->w.z = in->w.z.f[l];
        }
    }
#endif
}

// sim__soft_push: impulse p at offset r.
static inline void push(wbody* b, v3w r, v3w p) {
    b->v = w3_add(b->v, w3_scale(p, b->inv_mass));
    b->w = w3_add(b->w, w3_sym_mul(b->iw, w3_cross(r, p)));
}

// sim__soft_turn: angular impulse L.
static inline void turn(wbody* b, v3w L) {
    b->w = w3_add(b->w, w3_sym_mul(b->iw, L));
}

// push in the lanes of `act` only: the others keep their velocities bit for
// bit (as the scalar code, which skips them).
static inline void push_in(wbody* b, sim__mw act, v3w r, v3w p) {
    const v3w v = w3_add(b->v, w3_scale(p, b->inv_mass));
    const v3w w = w3_add(b->w, w3_sym_mul(b->iw, w3_cross(r, p)));
    b->v = w3_select(act, v, b->v);
    b->w = w3_select(act, w, b->w);
}

// turn in the lanes of `act` only.
static inline void turn_in(wbody* b, sim__mw act, v3w L) {
    b->w = w3_select(act, w3_add(b->w, w3_sym_mul(b->iw, L)), b->w);
}

// rel_velocity: va - vb at the anchors.
static inline v3w rel_velocity(const wbody* a, const wbody* b, v3w ra, v3w rb) {
    v3w va = w3_add(a->v, w3_cross(a->w, ra));
    v3w vb = w3_add(b->v, w3_cross(b->w, rb));
    return w3_sub(va, vb);
}

// ---------------------------------------------------------------------------
// Blocks
// ---------------------------------------------------------------------------

static void put3(sim__v3x4* d, int l, sim_vec3 v) {
    d->x[l] = v.x;
    d->y[l] = v.y;
    d->z[l] = v.z;
}

static sim_vec3 get3(const sim__v3x4* d, int l) {
    sim_vec3 v = {d->x[l], d->y[l], d->z[l]};
    return v;
}

void sim__soft_wide_fill(sim__contact_block* blk, const sim__soft_contact* c, const uint32_t* k,
                         uint32_t lanes, const uint8_t* dynamic) {
    memset(blk, 0, sizeof *blk);
    for (int l = 0; l < 4; ++l) {
        if ((uint32_t)l >= lanes) {
            blk->a[l] = blk->b[l] = SIM__NO_STATE;
            blk->k[l] = UINT32_MAX;
            continue;
        }
        const sim__soft_contact* p = &c[k[l]];
        blk->k[l] = k[l];
        blk->a[l] = p->a;
        blk->b[l] = p->b;
        if (p->a != SIM__NO_STATE && dynamic[p->a]) {
            blk->write |= 1u << l;
        }
        if (p->b != SIM__NO_STATE && dynamic[p->b]) {
            blk->write |= 1u << (4 + l);
        }
        put3(&blk->n, l, p->n);
        put3(&blk->t1, l, p->t1);
        put3(&blk->t2, l, p->t2);
        put3(&blk->ra, l, p->ra);
        put3(&blk->rb, l, p->rb);
        put3(&blk->ca, l, p->ca);
        put3(&blk->cb, l, p->cb);
        blk->base_sep[l] = p->base_sep;
        blk->m_n[l] = p->m_n;
        blk->m_t1[l] = p->m_t1;
        blk->m_t2[l] = p->m_t2;
        blk->lambda_n[l] = p->lambda_n;
        blk->lambda_t1[l] = p->lambda_t1;
        blk->lambda_t2[l] = p->lambda_t2;
        blk->max_lambda_n[l] = p->max_lambda_n;
        blk->vn0[l] = p->vn0;
        blk->roll_cap[l] = p->roll_cap;
        blk->friction[l] = p->friction;
        blk->is_static[l] = p->is_static ? 1.0f : 0.0f;
        put3(&blk->lambda_roll, l, p->lambda_roll);
    }
}

void sim__soft_wide_unpack(const sim__contact_block* blk, uint32_t count, sim__soft_contact* c) {
    for (uint32_t i = 0; i < count; ++i, ++blk) {
        for (int l = 0; l < 4; ++l) {
            if (blk->k[l] == UINT32_MAX) {
                continue;
            }
            sim__soft_contact* p = &c[blk->k[l]];
            p->lambda_n = blk->lambda_n[l];
            p->lambda_t1 = blk->lambda_t1[l];
            p->lambda_t2 = blk->lambda_t2[l];
            p->max_lambda_n = blk->max_lambda_n[l];
            p->lambda_roll = get3(&blk->lambda_roll, l);
        }
    }
}

void sim__soft_wide_pack(sim_world* w) {
    const sim__colouring* col = &w->soft_colouring;
    const uint32_t nj = w->soft_joint_count;
    uint32_t nb = 0;
    for (uint32_t c = 0; c < col->colour_count; ++c) {
        w->soft_wide_first[c] = nb;
        uint32_t o = col->first[c];
        const uint32_t end = col->first[c + 1];
        // A colour holds its joints first (they are numbered before the
        // contact points, and the colouring keeps the order).
        while (o < end && w->soft_order[o] < nj) {
            o++;
        }
        for (; o < end; o += 4) {
            uint32_t k[4];
            const uint32_t lanes = end - o < 4 ? end - o : 4;
            for (uint32_t l = 0; l < lanes; ++l) {
                k[l] = w->soft_order[o + l] - nj;
            }
            sim__soft_wide_fill(&w->soft_wide[nb++], w->soft_contacts, k, lanes, w->soft_blocks);
        }
    }
    w->soft_wide_first[col->colour_count] = nb;
}

void sim__soft_wide_warm(const sim__soft_ctx* ctx, sim__contact_block* blk, uint32_t count) {
    for (uint32_t i = 0; i < count; ++i, ++blk) {
        wbody a, b;
        gather(ctx, blk->a, false, &a);
        gather(ctx, blk->b, false, &b);
        const v3w n = w3_load(&blk->n), t1 = w3_load(&blk->t1), t2 = w3_load(&blk->t2);
        const v3w ra = w3_load(&blk->ra), rb = w3_load(&blk->rb);
        const v3w roll = w3_load(&blk->lambda_roll);
        const v3w p = w3_add(w3_scale(n, sim__fw_load(blk->lambda_n)),
                             w3_add(w3_scale(t1, sim__fw_load(blk->lambda_t1)),
                                    w3_scale(t2, sim__fw_load(blk->lambda_t2))));
        push(&a, ra, p);
        turn(&a, roll);
        push(&b, rb, w3_neg(p));
        turn(&b, w3_neg(roll));
        scatter(ctx, blk->a, blk->write, &a);
        scatter(ctx, blk->b, blk->write >> 4, &b);
    }
}

void sim__soft_wide_solve(const sim__soft_ctx* ctx, sim__contact_block* blk, uint32_t count,
                          bool use_bias) {
    const sim__fw zero = sim__fw_zero(), one = sim__fw_splat(1.0f);
    const sim__fw inv_h = sim__fw_splat(ctx->inv_h);
    const sim__fw neg_push = sim__fw_splat(-ctx->max_push);
    for (uint32_t i = 0; i < count; ++i, ++blk) {
        wbody a, b;
        gather(ctx, blk->a, true, &a);
        gather(ctx, blk->b, true, &b);
        const v3w n = w3_load(&blk->n);
        const v3w ra = w3_load(&blk->ra), rb = w3_load(&blk->rb);

        // Non-penetration, on the current separation of the two cores'
        // points: speculative when apart, else soft (with the bias).
        const v3w pa = w3_add(a.dp, w3_rotate(a.dq, a.dqw, w3_load(&blk->ca)));
        const v3w pb = w3_add(b.dp, w3_rotate(b.dq, b.dqw, w3_load(&blk->cb)));
        const sim__fw s = sim__fw_add(w3_dot(w3_sub(pa, pb), n), sim__fw_load(blk->base_sep));
        const sim__mw apart = sim__fw_gt(s, zero);
        const sim__fw speculative = sim__fw_mul(s, inv_h);
        sim__fw bias, mass_scale, impulse_scale;
        if (use_bias) {
            const sim__mw is_static = sim__fw_gt(sim__fw_load(blk->is_static), zero);
            const sim__softness* st = &ctx->static_soft;
            const sim__softness* ct = &ctx->contact_soft;
            const sim__fw rate = sim__fw_select(is_static, sim__fw_splat(st->bias_rate),
                                                sim__fw_splat(ct->bias_rate));
            const sim__fw ms = sim__fw_select(is_static, sim__fw_splat(st->mass_scale),
                                              sim__fw_splat(ct->mass_scale));
            const sim__fw is = sim__fw_select(is_static, sim__fw_splat(st->impulse_scale),
                                              sim__fw_splat(ct->impulse_scale));
            bias = sim__fw_select(apart, speculative, sim__fw_max(sim__fw_mul(rate, s), neg_push));
            mass_scale = sim__fw_select(apart, one, ms);
            impulse_scale = sim__fw_select(apart, zero, is);
        } else {
            bias = sim__fw_select(apart, speculative, zero);
            mass_scale = one;
            impulse_scale = zero;
        }
        sim__fw ln = sim__fw_load(blk->lambda_n);
        const sim__fw vn = w3_dot(rel_velocity(&a, &b, ra, rb), n);
        sim__fw impulse =
            sim__fw_sub(sim__fw_mul(sim__fw_mul(sim__fw_neg(sim__fw_load(blk->m_n)), mass_scale),
                                    sim__fw_add(vn, bias)),
                        sim__fw_mul(impulse_scale, ln));
        const sim__fw next = sim__fw_max(sim__fw_add(ln, impulse), zero);
        impulse = sim__fw_sub(next, ln);
        ln = next;
        sim__fw_store(blk->lambda_n, ln);
        sim__fw_store(blk->max_lambda_n, sim__fw_max(sim__fw_load(blk->max_lambda_n), impulse));
        const v3w p = w3_scale(n, impulse);
        push(&a, ra, p);
        push(&b, rb, w3_neg(p));

        // Friction: both tangents, then the pair clamped to the cone.
        const v3w t1 = w3_load(&blk->t1), t2 = w3_load(&blk->t2);
        const sim__fw lt1 = sim__fw_load(blk->lambda_t1), lt2 = sim__fw_load(blk->lambda_t2);
        const v3w dv = rel_velocity(&a, &b, ra, rb);
        sim__fw l1 = sim__fw_sub(lt1, sim__fw_mul(sim__fw_load(blk->m_t1), w3_dot(dv, t1)));
        sim__fw l2 = sim__fw_sub(lt2, sim__fw_mul(sim__fw_load(blk->m_t2), w3_dot(dv, t2)));
        const sim__fw max_f = sim__fw_mul(sim__fw_load(blk->friction), ln);
        const sim__fw lf = sim__fw_sqrt(sim__fw_add(sim__fw_mul(l1, l1), sim__fw_mul(l2, l2)));
        const sim__mw outside = sim__fw_gt(lf, max_f);
        const sim__fw sc = sim__fw_select(sim__fw_gt(lf, zero), sim__fw_div(max_f, lf), zero);
        l1 = sim__fw_select(outside, sim__fw_mul(l1, sc), l1);
        l2 = sim__fw_select(outside, sim__fw_mul(l2, sc), l2);
        const v3w pf =
            w3_add(w3_scale(t1, sim__fw_sub(l1, lt1)), w3_scale(t2, sim__fw_sub(l2, lt2)));
        sim__fw_store(blk->lambda_t1, l1);
        sim__fw_store(blk->lambda_t2, l2);
        push(&a, ra, pf);
        push(&b, rb, w3_neg(pf));

        // Rolling resistance: a torque of at most roll_cap × the normal
        // impulse against the whole relative spin (about the normal too).
        const v3w wr = w3_sub(a.w, b.w);
        const sim__fw wrl = sim__fw_sqrt(w3_dot(wr, wr));
        const v3w roll = w3_load(&blk->lambda_roll);
        const sim__fw roll2 = w3_dot(roll, roll);
        const sim__mw spinning = sim__fw_gt(wrl, sim__fw_splat(1e-9f));
        const sim__mw rolls = sim__mw_or(spinning, sim__fw_gt(roll2, zero));
        if (sim__mw_any(rolls)) {
            // v3_normalize(lambda_roll) where the relative spin is too small.
            const sim__fw roll_len = sim__fw_sqrt(roll2);
            const v3w none = {zero, zero, zero};
            const v3w roll_dir = w3_select(sim__fw_gt(roll_len, sim__fw_splat(1e-12f)),
                                           w3_scale(roll, sim__fw_div(one, roll_len)), none);
            const v3w dir = w3_select(spinning, w3_scale(wr, sim__fw_div(one, wrl)), roll_dir);
            const sim__fw kw =
                sim__fw_add(w3_dot(dir, w3_sym_mul(a.iw, dir)), w3_dot(dir, w3_sym_mul(b.iw, dir)));
            const sim__mw act = sim__mw_and(rolls, sim__fw_gt(kw, zero));
            if (sim__mw_any(act)) {
                v3w next_roll = w3_sub(roll, w3_scale(dir, sim__fw_div(wrl, kw)));
                const sim__fw len = sim__fw_sqrt(w3_dot(next_roll, next_roll));
                const sim__fw cap = sim__fw_mul(sim__fw_load(blk->roll_cap), ln);
                const v3w capped = w3_select(sim__fw_gt(len, zero),
                                             w3_scale(next_roll, sim__fw_div(cap, len)), next_roll);
                next_roll = w3_select(sim__fw_gt(len, cap), capped, next_roll);
                const v3w dl = w3_sub(next_roll, roll);
                w3_store(&blk->lambda_roll, w3_select(act, next_roll, roll));
                turn_in(&a, act, dl);
                turn_in(&b, act, w3_neg(dl));
            }
        }
        scatter(ctx, blk->a, blk->write, &a);
        scatter(ctx, blk->b, blk->write >> 4, &b);
    }
}

void sim__soft_wide_restitute(const sim__soft_ctx* ctx, sim__contact_block* blk, uint32_t count) {
    if (ctx->restitution == 0.0f) {
        return;
    }
    const sim__fw zero = sim__fw_zero();
    const sim__fw neg_rest_speed = sim__fw_splat(-ctx->rest_speed);
    const sim__fw restitution = sim__fw_splat(ctx->restitution);
    for (uint32_t i = 0; i < count; ++i, ++blk) {
        // Lanes that do not bounce: slow, or never pushed this tick (and
        // the padding, whose vn0 is 0).
        const sim__fw vn0 = sim__fw_load(blk->vn0);
        const sim__mw skip = sim__mw_or(sim__fw_gt(vn0, neg_rest_speed),
                                        sim__fw_eq(sim__fw_load(blk->max_lambda_n), zero));
        if (sim__mw_all(skip)) {
            continue;
        }
        wbody a, b;
        gather(ctx, blk->a, false, &a);
        gather(ctx, blk->b, false, &b);
        const v3w n = w3_load(&blk->n);
        const v3w ra = w3_load(&blk->ra), rb = w3_load(&blk->rb);
        const sim__fw vn = w3_dot(rel_velocity(&a, &b, ra, rb), n);
        const sim__fw ln = sim__fw_load(blk->lambda_n);
        sim__fw impulse = sim__fw_mul(sim__fw_neg(sim__fw_load(blk->m_n)),
                                      sim__fw_add(vn, sim__fw_mul(restitution, vn0)));
        const sim__fw next = sim__fw_max(sim__fw_add(ln, impulse), zero);
        impulse = sim__fw_sub(next, ln);
        sim__fw_store(blk->lambda_n, sim__fw_select(skip, ln, next));
        const v3w p = w3_scale(n, impulse);
        const sim__mw act = sim__mw_and_not(sim__fw_eq(zero, zero), skip);
        push_in(&a, act, ra, p);
        push_in(&b, act, rb, w3_neg(p));
        scatter(ctx, blk->a, blk->write, &a);
        scatter(ctx, blk->b, blk->write >> 4, &b);
    }
}
