/*
 * soft_step.c: a tick of the rigid bodies with the soft-step solver
 * (soft.h): gather the awake bodies' hot state, find and colour the tick's
 * constraints, run the substeps, scatter the result back.
 *
 * The awake set is solved as one (Box2D v3 does the same: islands are for
 * sleeping, the constraint graph's colours for the solve). Every island
 * takes SIM__SOFT_SUBSTEPS substeps whatever its speed (speculative
 * contacts catch fast impacts), so an impact costs nothing extra anywhere.
 */
#include "soft.h"
#include "vec.h"
#include "world.h"

#include <string.h>

// Box2D v3's defaults (b2DefaultWorldDef): contacts are springs of 30 Hz
// (at most a quarter of the substep rate) and damping ratio 10, static
// contacts twice as stiff; penetration is pushed out at most 3 m/s; impacts
// under 1 m/s do not bounce.
#define CONTACT_HERTZ  30.0f
#define CONTACT_ZETA   10.0f
#define MAX_PUSH       3.0f
#define REST_THRESHOLD 1.0f
// Joints are rigid, not springs: Box2D's 60 Hz joints (damping ratio 2)
// stretch under load by force / (effective mass × ω²), the effective mass
// being the light bone's: 33-43 mm at 5 m/s onto stairs, 13 mm left in a
// resting pile (ragdoll-impacts; Box3D's own joints, measured the same way
// outside the repository, 86-115 mm). A rigid row whose bias closes a
// fraction JOINT_BAUMGARTE of the error per substep (Baumgarte; the relax
// pass takes the bias's velocity out again, as it does the contacts') keeps
// no stretch at rest, and the end-of-tick stabilization (stabilize.c)
// closes what an impact opens. 0.2 (0.1-0.4 tried): the fewest
// stabilization passes with every ragdoll at rest within 5 s.
#define JOINT_BAUMGARTE 0.2f

const sim__body_state sim__soft_static_state = {.dq = {0.0f, 0.0f, 0.0f, 1.0f}};
const sim__body_mass sim__soft_static_mass;

sim__softness sim__make_soft(float hertz, float zeta, float h) {
    sim__softness s = {0.0f, 1.0f, 0.0f};
    if (hertz == 0.0f) {
        return s;
    }
    const float omega = 2.0f * 3.14159265f * hertz;
    const float a1 = 2.0f * zeta + h * omega;
    const float a2 = h * omega * a1;
    const float a3 = 1.0f / (1.0f + a2);
    s.bias_rate = omega / a1;
    s.mass_scale = a2 * a3;
    s.impulse_scale = a3;
    return s;
}

int sim__soft_split_for(float dt, int substeps) {
    // SIM__SOFT_SUBSTEPS per 1/60 s at least: the contact springs are at
    // most a quarter of the substep rate (Box2D's rule), so a slow world
    // (tick_hz 1) with 4 substeps per tick had 1 Hz contacts and rested
    // centimetres inside the ground. The cost per second stays that of 60 Hz.
    const float per_tick = ceilf(dt * 60.0f * (float)SIM__SOFT_SUBSTEPS - 1e-3f);
    const int want = per_tick > (float)SIM__SOFT_SUBSTEPS ? (int)per_tick : SIM__SOFT_SUBSTEPS;
    return (want + substeps - 1) / substeps;
}

// The rigid substeps of one of the world's substeps.
int sim__soft_split(const sim_world* w) {
    return sim__soft_split_for(w->dt, w->params.substeps);
}

static sim__soft_ctx make_ctx(const sim_world* w) {
    sim__soft_ctx ctx;
    const float h = w->dt / (float)(w->params.substeps * sim__soft_split(w));
    ctx.state = w->soft_state;
    ctx.mass = w->soft_mass;
    ctx.h = h;
    ctx.inv_h = 1.0f / h;
    const float hertz = fminf(CONTACT_HERTZ, 0.25f / h);
    ctx.contact_soft = sim__make_soft(hertz, CONTACT_ZETA, h);
    ctx.static_soft = sim__make_soft(2.0f * hertz, CONTACT_ZETA, h);
    ctx.joint_soft = (sim__softness){
        .bias_rate = JOINT_BAUMGARTE / h, .mass_scale = 1.0f, .impulse_scale = 0.0f};
    ctx.max_push = MAX_PUSH;
    ctx.restitution = w->params.bounciness;
    ctx.rest_speed = REST_THRESHOLD;
    return ctx;
}

void sim__soft_begin_tick(sim_world* w) {
    // The awake bodies' hot state, island by island.
    memset(w->soft_index, 0xff, (size_t)w->b_count * sizeof *w->soft_index);
    uint32_t n = 0;
    for (uint32_t k = 0; k < w->island_count; ++k) {
        const sim__island* isl = &w->islands[k];
        for (uint32_t m = 0; m < isl->body_count; ++m) {
            const uint32_t i = w->isl_bodies[isl->body_first + m];
            sim__body* b = &w->body[i];
            b->x_prev = b->x;
            b->q_prev = b->q;
            sim__body_update_inertia(b);
            sim__body_state* s = &w->soft_state[n];
            memset(s, 0, sizeof *s);
            s->v = b->v;
            s->w = b->w;
            s->inv_mass = b->inv_mass;
            s->body = i;
            s->dq = q_identity();
            memcpy(w->soft_mass[n].iw, b->iw, sizeof b->iw);
            w->soft_blocks[n] = b->inv_mass > 0.0f;
            w->soft_index[i] = n++;
        }
    }
    w->soft_body_count = n;

    // Joints, then contact points; their bodies for the colouring.
    const sim__soft_ctx ctx = make_ctx(w);
    uint32_t nj = 0;
    for (uint32_t k = 0; k < w->island_count; ++k) {
        const sim__island* isl = &w->islands[k];
        for (uint32_t m = 0; m < isl->joint_count; ++m) {
            sim__soft_joint* sj = &w->soft_joints[nj];
            sim__soft_joint_prepare(w, &ctx, &w->isl_joints[isl->joint_first + m], sj);
            w->soft_ca[nj] = sj->p;
            w->soft_cb[nj] = sj->c;
            nj++;
        }
    }
    w->soft_joint_count = nj;
    w->soft_contact_count = 0;
    for (int statics = 1; statics >= 0; --statics) {
        for (uint32_t k = 0; k < w->island_count; ++k) {
            sim__soft_contacts_find(w, &w->islands[k], statics != 0);
        }
    }
    for (uint32_t k = 0; k < w->soft_contact_count; ++k) {
        w->soft_ca[nj + k] = w->soft_contacts[k].a;
        w->soft_cb[nj + k] = w->soft_contacts[k].b;
    }
    sim__soft_contacts_prepare(w, &ctx);
    sim__graph_colour(w->soft_ca, w->soft_cb, nj + w->soft_contact_count, w->soft_blocks, n,
                      w->soft_bits, w->soft_colour, w->soft_order, &w->soft_colouring);
    sim__soft_wide_pack(w);
    w->stats.colours = w->soft_colouring.colour_count;
    w->stats.overflow_constraints = w->soft_colouring.first[w->soft_colouring.colour_count + 1] -
                                    w->soft_colouring.first[w->soft_colouring.colour_count];
}

typedef enum stage { STAGE_WARM, STAGE_SOLVE, STAGE_RELAX, STAGE_RESTITUTE } stage;

// A colour's contact points, four at a time (soft_wide.c).
static void run_wide(sim_world* w, const sim__soft_ctx* ctx, stage st, uint32_t c) {
    sim__contact_block* blk = &w->soft_wide[w->soft_wide_first[c]];
    const uint32_t count = w->soft_wide_first[c + 1] - w->soft_wide_first[c];
    switch (st) {
    case STAGE_WARM:
        sim__soft_wide_warm(ctx, blk, count);
        break;
    case STAGE_SOLVE:
        sim__soft_wide_solve(ctx, blk, count, true);
        break;
    case STAGE_RELAX:
        sim__soft_wide_solve(ctx, blk, count, false);
        break;
    case STAGE_RESTITUTE:
        sim__soft_wide_restitute(ctx, blk, count);
        break;
    }
}

// One stage over every constraint: the overflow first (Box2D's order),
// then colour by colour; in a colour, joints before contacts, which go four
// at a time (the overflow's one by one).
static void run_stage(sim_world* w, const sim__soft_ctx* ctx, stage st) {
    const sim__colouring* col = &w->soft_colouring;
    const uint32_t nj = w->soft_joint_count;
    const uint32_t ranges = col->colour_count + 1;
    for (uint32_t r = 0; r < ranges; ++r) {
        // Range `ranges - 1` (the overflow) goes first.
        const uint32_t c = r == 0 ? col->colour_count : r - 1;
        for (uint32_t o = col->first[c]; o < col->first[c + 1]; ++o) {
            const uint32_t k = w->soft_order[o];
            if (k >= nj && c < col->colour_count) {
                // The colour's contact points: the rest of its range.
                run_wide(w, ctx, st, c);
                break;
            }
            if (k < nj) {
                sim__soft_joint* sj = &w->soft_joints[k];
                const sim__bjoint* j = &w->bjoint[sj->j];
                switch (st) {
                case STAGE_WARM:
                    sim__soft_joint_warm(ctx, sj);
                    break;
                case STAGE_SOLVE:
                    sim__soft_joint_damp(ctx, j, sj);
                    sim__soft_joint_solve(ctx, j, sj, true);
                    break;
                case STAGE_RELAX:
                    sim__soft_joint_solve(ctx, j, sj, false);
                    break;
                case STAGE_RESTITUTE:
                    break;
                }
            } else {
                sim__soft_contact* sc = &w->soft_contacts[k - nj];
                switch (st) {
                case STAGE_WARM:
                    sim__soft_contact_warm(ctx, sc);
                    break;
                case STAGE_SOLVE:
                    sim__soft_contact_solve(ctx, sc, true);
                    break;
                case STAGE_RELAX:
                    sim__soft_contact_solve(ctx, sc, false);
                    break;
                case STAGE_RESTITUTE:
                    sim__soft_contact_restitute(ctx, sc);
                    break;
                }
            }
        }
    }
}

static sim_vec3 cap_spin(sim_vec3 wv, float cap) {
    float s = v3_len(wv);
    return s > cap ? v3_scale(wv, cap / s) : wv;
}

// I⁻¹ in the world, R diag(d) Rᵀ, for orientation q (R's columns are the
// body's axes), into iw (xx, yy, zz, xy, xz, yz).
static void world_inertia(sim_quat q, sim_vec3 d, float* iw) {
    const float x = q.x, y = q.y, z = q.z, s = q.w;
    const sim_vec3 c0 = {1.0f - 2.0f * (y * y + z * z), 2.0f * (x * y + s * z),
                         2.0f * (x * z - s * y)};
    const sim_vec3 c1 = {2.0f * (x * y - s * z), 1.0f - 2.0f * (x * x + z * z),
                         2.0f * (y * z + s * x)};
    const sim_vec3 c2 = {2.0f * (x * z + s * y), 2.0f * (y * z - s * x),
                         1.0f - 2.0f * (x * x + y * y)};
    iw[0] = d.x * c0.x * c0.x + d.y * c1.x * c1.x + d.z * c2.x * c2.x;
    iw[1] = d.x * c0.y * c0.y + d.y * c1.y * c1.y + d.z * c2.y * c2.y;
    iw[2] = d.x * c0.z * c0.z + d.y * c1.z * c1.z + d.z * c2.z * c2.z;
    iw[3] = d.x * c0.x * c0.y + d.y * c1.x * c1.y + d.z * c2.x * c2.y;
    iw[4] = d.x * c0.x * c0.z + d.y * c1.x * c1.z + d.z * c2.x * c2.z;
    iw[5] = d.x * c0.y * c0.z + d.y * c1.y * c1.z + d.z * c2.y * c2.z;
}

void sim__soft_substep(sim_world* w) {
    const sim__soft_ctx ctx = make_ctx(w);
    const float h = ctx.h;
    const sim_vec3 g_h = v3_scale(w->params.gravity, h);
    const float cap = SIM__SOFT_MAX_SPIN_PER_TICK / w->dt;
    const uint32_t n = w->soft_body_count;
    for (uint32_t i = 0; i < n; ++i) {
        sim__body_state* s = &w->soft_state[i];
        if (s->inv_mass > 0.0f) {
            s->v = v3_add(s->v, g_h);
            s->w = cap_spin(s->w, cap);
        }
    }
    run_stage(w, &ctx, STAGE_WARM);
    run_stage(w, &ctx, STAGE_SOLVE);
    for (uint32_t i = 0; i < n; ++i) {
        sim__body_state* s = &w->soft_state[i];
        if (s->inv_mass > 0.0f) {
            s->w = cap_spin(s->w, cap);
        }
        s->dp = v3_add(s->dp, v3_scale(s->v, h));
        s->dq = q_integrate(s->dq, s->w, h);
        // The substep's pose, final (the relax changes velocities only),
        // for what reads it between substeps (particles against bones).
        sim__body* b = &w->body[s->body];
        b->x = v3_add(b->x_prev, s->dp);
        b->q = q_normalize(q_mul(s->dq, b->q_prev));
        if (s->inv_mass > 0.0f) {
            // The world inverse inertia follows the rotation: a thin capsule
            // turned half a radian with last substep's tensor would take
            // impulses about its long axis as if it had none of the inertia
            // it has there.
            world_inertia(b->q, b->inv_inertia, w->soft_mass[i].iw);
        }
    }
    run_stage(w, &ctx, STAGE_RELAX);
}

void sim__soft_end_tick(sim_world* w) {
    const sim__soft_ctx ctx = make_ctx(w);
    run_stage(w, &ctx, STAGE_RESTITUTE);
    sim__soft_wide_unpack(w->soft_wide, w->soft_wide_first[w->soft_colouring.colour_count],
                          w->soft_contacts);
    sim__soft_contacts_store(w);
    // Impacts: points that pushed and were closing fast at the start of
    // the tick, where a's surface was then.
    for (uint32_t k = 0; k < w->soft_contact_count; ++k) {
        const sim__soft_contact* c = &w->soft_contacts[k];
        if (c->max_lambda_n > 0.0f && -c->vn0 >= SIM_IMPACT_MIN_SPEED) {
            const sim__body_state* sa = &w->soft_state[c->a];
            const uint32_t ib = c->b != SIM__NO_STATE ? w->soft_state[c->b].body : SIM__NO_BODY;
            const uint32_t code = (uint32_t)(w->soft_keys[k] >> 4) & ((1u << 22) - 1u);
            const sim_vec3 start = v3_sub(w->body[sa->body].x, sa->dp);
            sim__impact_note(w, sa->body, ib, code, v3_add(start, c->ra), c->n, -c->vn0);
        }
    }
    for (uint32_t k = 0; k < w->soft_joint_count; ++k) {
        sim__soft_joint_store(w, &w->soft_joints[k]);
    }
    const float cap = SIM__SOFT_MAX_SPIN_PER_TICK / w->dt;
    for (uint32_t i = 0; i < w->soft_body_count; ++i) {
        const sim__body_state* s = &w->soft_state[i];
        sim__body* b = &w->body[s->body];
        b->v = s->v;
        b->w = s->inv_mass > 0.0f ? cap_spin(s->w, cap) : s->w;
        b->v_pre = b->v;
        b->w_pre = b->w;
        sim__body_update_inertia(b);
    }
}
