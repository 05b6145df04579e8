/*
 * contact.c: contacts of rigid bodies (capsules and spheres) with the
 * ground, the static boxes and each other, and (one way) with particles.
 *
 * Narrowphase every substep on the predicted poses of the broad phase's
 * pairs (broad_phase.c), then XPBD contacts (Müller et al. 2020, §3.5): a
 * positional correction along the normal, static friction as a positional
 * correction of the tangential slip while it stays under μ·λn, and a
 * velocity pass with restitution (threshold 2|g|h) and dynamic Coulomb
 * friction. μ is the world's friction parameter.
 *
 * Particles are pushed out of bone capsules in the particle collision pass
 * (the bodies do not feel them: a one-way push, enough for cloth on bodies).
 */
#include "rigid.h"
#include "soft.h"
#include "world.h"

#include <string.h>

// Penetration a contact already had at the start of a substep is removed at
// most this fast, m/s (Box2D v3's contact push-out speed): a body spawned
// or pushed deep into another separates instead of being shot out, and a
// joint that presses a bone into the ground cannot pump energy through it.
#define PUSH_OUT_SPEED 3.0f
// Rolling resistance coefficient (dimensionless): the resisting torque is at
// most this × the radius × the normal force. Soft tissue on a floor: 0.1.
#define SIM__ROLLING 0.1f
// Contacts are found once per substep on the predicted poses, including
// pairs this close (m) that the substep's passes may still push together.
#define SPECULATIVE 0.005f

// ---------------------------------------------------------------------------
// Narrowphase helpers
// ---------------------------------------------------------------------------

static sim_vec3 closest_on_segment(sim_vec3 a, sim_vec3 b, sim_vec3 p, float* t_out) {
    sim_vec3 ab = v3_sub(b, a);
    float d = v3_dot(ab, ab);
    float t = d > 1e-12f ? v3_dot(v3_sub(p, a), ab) / d : 0.0f;
    t = fminf(fmaxf(t, 0.0f), 1.0f);
    if (t_out != NULL) {
        *t_out = t;
    }
    return v3_add(a, v3_scale(ab, t));
}

void sim__closest_segments(sim_vec3 p0, sim_vec3 p1, sim_vec3 q0, sim_vec3 q1, sim_vec3* cp,
                           sim_vec3* cq) {
    sim_vec3 d1 = v3_sub(p1, p0), d2 = v3_sub(q1, q0), r = v3_sub(p0, q0);
    float a = v3_dot(d1, d1), e = v3_dot(d2, d2), f = v3_dot(d2, r);
    float s = 0.0f, t = 0.0f;
    if (a > 1e-12f || e > 1e-12f) {
        if (a <= 1e-12f) {
            t = fminf(fmaxf(f / e, 0.0f), 1.0f);
        } else {
            float c = v3_dot(d1, r);
            if (e <= 1e-12f) {
                s = fminf(fmaxf(-c / a, 0.0f), 1.0f);
            } else {
                float b = v3_dot(d1, d2), denom = a * e - b * b;
                s = denom > 1e-12f ? fminf(fmaxf((b * f - c * e) / denom, 0.0f), 1.0f) : 0.0f;
                t = (b * s + f) / e;
                if (t < 0.0f) {
                    t = 0.0f;
                    s = fminf(fmaxf(-c / a, 0.0f), 1.0f);
                } else if (t > 1.0f) {
                    t = 1.0f;
                    s = fminf(fmaxf((b - c) / a, 0.0f), 1.0f);
                }
            }
        }
    }
    *cp = v3_add(p0, v3_scale(d1, s));
    *cq = v3_add(q0, v3_scale(d2, t));
}

bool sim__sphere_box(sim_vec3 p, float r, const sim_box* bx, sim_vec3* n, float* depth,
                     sim_vec3* on_box) {
    sim_vec3 lo = v3_sub(bx->center, bx->half_extents), hi = v3_add(bx->center, bx->half_extents);
    sim_vec3 q = v3(fminf(fmaxf(p.x, lo.x), hi.x), fminf(fmaxf(p.y, lo.y), hi.y),
                    fminf(fmaxf(p.z, lo.z), hi.z));
    sim_vec3 d = v3_sub(p, q);
    float dist = v3_len(d);
    if (dist > 1e-6f) {
        if (dist >= r) {
            return false;
        }
        *n = v3_scale(d, 1.0f / dist);
        *depth = r - dist;
        *on_box = q;
        return true;
    }
    // The centre is inside: leave by the nearest face.
    float faces[6] = {p.x - lo.x, hi.x - p.x, p.y - lo.y, hi.y - p.y, p.z - lo.z, hi.z - p.z};
    int best = 0;
    for (int f = 1; f < 6; ++f) {
        if (faces[f] < faces[best]) {
            best = f;
        }
    }
    float nv[3] = {0.0f, 0.0f, 0.0f};
    nv[best >> 1] = (best & 1) ? 1.0f : -1.0f;
    *n = v3(nv[0], nv[1], nv[2]);
    *depth = faces[best] + r;
    *on_box = v3_sub(p, v3_scale(*n, faces[best]));
    return true;
}

// ---------------------------------------------------------------------------
// Contact solve
// ---------------------------------------------------------------------------

// The world position at the start of the substep of a point now at world
// offset r from body b's centre.
static sim_vec3 point_prev(const sim__body* b, sim_vec3 r) {
    return v3_add(b->x_prev, q_rotate(b->q_prev, q_rotate_inv(b->q, r)));
}

static sim_vec3 point_velocity(const sim__body* b, sim_vec3 r, bool pre) {
    return pre ? v3_add(b->v_pre, v3_cross(b->w_pre, r)) : v3_add(b->v, v3_cross(b->w, r));
}

// Records a contact between a (dynamic) and b (a body, or NULL for static)
// found on the substep's predicted poses: normal n from b to a, points pa
// on a and pb on b (world), depth (negative: a gap, kept so that a later
// pass that closes it is caught).
// `code` (ground or box) and `feature` (which point of the pair) name the
// point across ticks for the soft step's warm start.
static void add_contact(sim_world* w, uint32_t ia, uint32_t ib, sim_vec3 n, sim_vec3 pa,
                        sim_vec3 pb, float h, uint32_t code, uint32_t feature) {
    if (w->def.solver == SIM_SOLVER_SOFT_STEP) {
        sim__soft_add_point(w, ia, ib, code, n, pa, pb, feature);
        return;
    }
    if (w->contact_count == w->contact_cap) {
        w->overflows.contacts++; // out of room: this pair goes unsolved this substep
        return;
    }
    sim__body* a = &w->body[ia];
    sim__body* b = ib == SIM__NO_BODY ? NULL : &w->body[ib];
    sim_vec3 ra = v3_sub(pa, a->x);
    sim_vec3 rb = b != NULL ? v3_sub(pb, b->x) : v3(0.0f, 0.0f, 0.0f);
    // Pre-solve normal velocity, for restitution in the velocity pass.
    sim_vec3 vrel = point_velocity(a, ra, true);
    if (b != NULL) {
        vrel = v3_sub(vrel, point_velocity(b, rb, true));
    }
    // Depth the same two points had at the start of the substep: what moved
    // in during the substep goes out at once, older penetration at most at
    // PUSH_OUT_SPEED.
    sim_vec3 pb_prev = b != NULL ? point_prev(b, rb) : pb;
    float depth_start = v3_dot(v3_sub(pb_prev, point_prev(a, ra)), n);
    sim__contact* c = &w->contacts[w->contact_count++];
    c->a = ia;
    c->b = ib;
    c->n = n;
    c->ra = q_rotate_inv(a->q, ra);
    c->rb = b != NULL ? q_rotate_inv(b->q, rb) : pb;
    c->keep = fmaxf(0.0f, depth_start - PUSH_OUT_SPEED * h);
    c->lambda = 0.0f;
    c->vn_pre = v3_dot(vrel, n);
}

// One pass over a contact: a positional correction along the normal, then
// static friction (Müller et al. 2020, eq. 26-28).
static void solve_contact(sim_world* w, sim__contact* c, float h) {
    sim__body* a = &w->body[c->a];
    sim__body* b = c->b == SIM__NO_BODY ? NULL : &w->body[c->b];
    sim_vec3 ra = q_rotate(a->q, c->ra);
    sim_vec3 pa = v3_add(a->x, ra);
    sim_vec3 rb = v3(0.0f, 0.0f, 0.0f), pb = c->rb;
    if (b != NULL) {
        rb = q_rotate(b->q, c->rb);
        pb = v3_add(b->x, rb);
    }
    float corr = v3_dot(v3_sub(pb, pa), c->n) - c->keep;
    if (corr > 0.0f) {
        c->lambda += sim__apply_positional(a, b, ra, rb, v3_scale(c->n, corr), 0.0f, h, 0.0f);
    }
    if (c->lambda <= 0.0f) {
        return; // not touching this substep
    }
    // Static friction: undo the tangential slip of the contact points over
    // this substep while that takes less than μ·λn.
    ra = q_rotate(a->q, c->ra);
    sim_vec3 dp = v3_sub(v3_add(a->x, ra), point_prev(a, ra));
    if (b != NULL) {
        rb = q_rotate(b->q, c->rb);
        dp = v3_sub(dp, v3_sub(v3_add(b->x, rb), point_prev(b, rb)));
    }
    sim_vec3 dpt = v3_sub(dp, v3_scale(c->n, v3_dot(dp, c->n)));
    float slip = v3_len(dpt);
    if (slip > 1e-9f) {
        sim_vec3 t = v3_scale(dpt, 1.0f / slip);
        float wt = sim__inv_mass_at(a, ra, t, false) + sim__inv_mass_at(b, rb, t, false);
        if (wt > 0.0f && slip / wt < w->params.friction * c->lambda) {
            sim__apply_positional(a, b, ra, rb, v3_scale(dpt, -1.0f), 0.0f, h, 0.0f);
        }
    }
}

// Contacts of a dynamic body's capsule (or sphere) with the ground.
static void find_ground(sim_world* w, uint32_t i, float h, float margin) {
    const sim__body_info* bi = &w->binfo[i];
    sim_vec3 p0, p1;
    sim__body_segment(&w->body[i], bi, &p0, &p1);
    int ends = bi->half_len > 0.0f ? 2 : 1;
    const float r = bi->radius;
    for (int k = 0; k < ends; ++k) {
        sim__body_segment(&w->body[i], bi, &p0, &p1);
        sim_vec3 p = k == 0 ? p0 : p1;
        if (p.y < r + margin) {
            sim_vec3 n = v3(0.0f, 1.0f, 0.0f);
            add_contact(w, i, SIM__NO_BODY, n, v3(p.x, p.y - r, p.z), v3(p.x, 0.0f, p.z), h,
                        SIM__CODE_GROUND, (uint32_t)k);
        }
    }
}

// Contacts of a dynamic body's capsule (or sphere) with static box k, a
// pair the broad phase found.
static void find_box(sim_world* w, uint32_t i, uint32_t k, float h, float margin) {
    const sim__body_info* bi = &w->binfo[i];
    sim_vec3 p0, p1;
    int ends = bi->half_len > 0.0f ? 2 : 1;
    const float r = bi->radius;
    {
        const sim_box* bx = &w->boxes[k];
        sim_vec3 lo = v3_sub(bx->center, bx->half_extents),
                 hi = v3_add(bx->center, bx->half_extents);
        // Both ends, and the point of the segment nearest the box (a
        // capsule lying across an edge touches it between its ends).
        for (int c = 0; c < ends + 1; ++c) {
            sim__body_segment(&w->body[i], bi, &p0, &p1);
            sim_vec3 p;
            if (c < 2 && c < ends) {
                p = c == 0 ? p0 : p1;
            } else {
                if (ends == 1) {
                    break;
                }
                float t = 0.5f;
                p = v3_add(p0, v3_scale(v3_sub(p1, p0), t));
                for (int it = 0; it < 4; ++it) {
                    sim_vec3 q = v3(fminf(fmaxf(p.x, lo.x), hi.x), fminf(fmaxf(p.y, lo.y), hi.y),
                                    fminf(fmaxf(p.z, lo.z), hi.z));
                    p = closest_on_segment(p0, p1, q, &t);
                }
                if (t <= 0.0f || t >= 1.0f) {
                    break; // an end: done above
                }
            }
            sim_vec3 n, on_box;
            float depth;
            if (sim__sphere_box(p, r + margin, bx, &n, &depth, &on_box)) {
                add_contact(w, i, SIM__NO_BODY, n, v3_sub(p, v3_scale(n, r)), on_box, h,
                            SIM__CODE_BOX + k, (uint32_t)c);
            }
        }
    }
}

static void find_pair(sim_world* w, uint32_t ia, uint32_t ib, float h, float margin) {
    // Let the dynamic one be `a` (a kinematic a would not move).
    if (w->body[ia].inv_mass == 0.0f) {
        uint32_t t = ia;
        ia = ib;
        ib = t;
    }
    const sim__body_info *fa = &w->binfo[ia], *fb = &w->binfo[ib];
    sim_vec3 a0, a1, b0, b1, ca, cb;
    sim__body_segment(&w->body[ia], fa, &a0, &a1);
    sim__body_segment(&w->body[ib], fb, &b0, &b1);
    sim__closest_segments(a0, a1, b0, b1, &ca, &cb);
    sim_vec3 d = v3_sub(ca, cb);
    float dist = v3_len(d), rr = fa->radius + fb->radius;
    if (dist >= rr + margin) {
        return;
    }
    sim_vec3 n = dist > 1e-6f ? v3_scale(d, 1.0f / dist) : v3(0.0f, 1.0f, 0.0f);
    add_contact(w, ia, ib, n, v3_sub(ca, v3_scale(n, fa->radius)),
                v3_add(cb, v3_scale(n, fb->radius)), h, 0, 0);
}

void sim__contacts_find(sim_world* w, const sim__island* isl, float h) {
    w->contact_count = 0;
    const uint32_t* ib = w->isl_bodies + isl->body_first;
    for (uint32_t n = 0; n < isl->body_count; ++n) {
        if (w->def.ground && w->body[ib[n]].inv_mass > 0.0f) {
            find_ground(w, ib[n], h, SPECULATIVE);
        }
    }
    // Static contacts first, then those between bodies (the last solved in a
    // pass has the last word: a bone is kept out of another bone rather
    // than out of a step's edge).
    const uint32_t* ip = w->isl_pairs + isl->pair_first;
    for (uint32_t n = 0; n < isl->pair_count; ++n) {
        const sim__pair* p = &w->pairs[ip[n]];
        if (p->b & SIM__BOX_PAIR) {
            find_box(w, p->a, p->b & ~SIM__BOX_PAIR, h, SPECULATIVE);
        }
    }
    for (uint32_t n = 0; n < isl->pair_count; ++n) {
        const sim__pair* p = &w->pairs[ip[n]];
        if ((p->b & SIM__BOX_PAIR) == 0) {
            find_pair(w, p->a, p->b, h, SPECULATIVE);
        }
    }
}

// Soft step: a point may be this far apart (m) and still be kept, plus
// what the bodies may close in one tick (Box2D's speculative distance is 4
// linear slops, 2 cm).
#define SOFT_SPECULATIVE 0.02f

// The narrow phase's margin: what body i may close in one tick at most;
// sim__soft_add_point keeps only points the bodies really move toward.
static float soft_margin(const sim_world* w, uint32_t i) {
    return SOFT_SPECULATIVE + w->closing[i] * w->dt;
}

void sim__soft_contacts_find(sim_world* w, const sim__island* isl, bool statics) {
    if (statics) {
        const uint32_t* ib = w->isl_bodies + isl->body_first;
        for (uint32_t n = 0; n < isl->body_count; ++n) {
            if (w->def.ground && w->body[ib[n]].inv_mass > 0.0f) {
                find_ground(w, ib[n], 0.0f, soft_margin(w, ib[n]));
            }
        }
    }
    const uint32_t* ip = w->isl_pairs + isl->pair_first;
    for (uint32_t n = 0; n < isl->pair_count; ++n) {
        const sim__pair* p = &w->pairs[ip[n]];
        if ((p->b & SIM__BOX_PAIR) != 0) {
            if (statics) {
                find_box(w, p->a, p->b & ~SIM__BOX_PAIR, 0.0f, soft_margin(w, p->a));
            }
        } else if (!statics && (w->body[p->a].inv_mass > 0.0f || w->body[p->b].inv_mass > 0.0f)) {
            find_pair(w, p->a, p->b, 0.0f, fmaxf(soft_margin(w, p->a), soft_margin(w, p->b)));
        }
    }
}

void sim__contacts_solve(sim_world* w, float h) {
    for (uint32_t k = 0; k < w->contact_count; ++k) {
        solve_contact(w, &w->contacts[k], h);
    }
}

// Applies the impulse p (N·s) at world offsets ra, rb: +p to a, -p to b.
static void impulse_pair(sim__body* a, sim__body* b, sim_vec3 ra, sim_vec3 rb, sim_vec3 p) {
    sim__apply_impulse_at(a, ra, p);
    if (b != NULL && b->inv_mass > 0.0f) {
        sim__apply_impulse_at(b, rb, v3_scale(p, -1.0f));
    }
}

void sim__contacts_velocities(sim_world* w, float h) {
    const float mu = w->params.friction, e = w->params.bounciness;
    const float rest = 2.0f * v3_len(w->params.gravity) * h;
    for (uint32_t k = 0; k < w->contact_count; ++k) {
        const sim__contact* c = &w->contacts[k];
        if (c->lambda <= 0.0f) {
            continue; // never touched this substep
        }
        sim__body* a = &w->body[c->a];
        sim__body* b = c->b == SIM__NO_BODY ? NULL : &w->body[c->b];
        sim_vec3 ra = q_rotate(a->q, c->ra);
        sim_vec3 rb = b != NULL ? q_rotate(b->q, c->rb) : v3(0.0f, 0.0f, 0.0f);
        sim_vec3 vrel = point_velocity(a, ra, false);
        if (b != NULL) {
            vrel = v3_sub(vrel, point_velocity(b, rb, false));
        }
        float vn = v3_dot(vrel, c->n);
        sim_vec3 vt = v3_sub(vrel, v3_scale(c->n, vn));
        const float jn = c->lambda / h; // Normal impulse of the substep, N·s.
        if (-c->vn_pre >= SIM_IMPACT_MIN_SPEED) {
            const uint32_t code = b == NULL ? sim__static_code_at(w, c->rb) : 0u;
            sim__impact_note(w, c->a, c->b, code, v3_add(a->x, ra), c->n, -c->vn_pre);
        }

        // Restitution (eq. 34): the normal speed leaves at e × the speed it
        // arrived with; slow contacts (under 2|g|h) do not bounce.
        float want = c->vn_pre < -rest ? -e * c->vn_pre : 0.0f;
        if (c->vn_pre < 0.0f && vn < want) {
            float wn = sim__inv_mass_at(a, ra, c->n, false) + sim__inv_mass_at(b, rb, c->n, false);
            if (wn > 0.0f) {
                impulse_pair(a, b, ra, rb, v3_scale(c->n, (want - vn) / wn));
            }
        }
        // Dynamic Coulomb friction (eq. 30-31): a tangential impulse that
        // stops the slip, at most μ times the normal impulse.
        float vtl = v3_len(vt);
        if (vtl > 1e-9f) {
            sim_vec3 t = v3_scale(vt, 1.0f / vtl);
            float wt = sim__inv_mass_at(a, ra, t, false) + sim__inv_mass_at(b, rb, t, false);
            if (wt > 0.0f) {
                impulse_pair(a, b, ra, rb, v3_scale(t, -fminf(vtl / wt, mu * jn)));
            }
        }
        // Rolling resistance: soft bodies touch over a patch, not a point,
        // so a capsule does not roll forever on the floor. A torque of at
        // most SIM__ROLLING × radius × the normal impulse opposes the
        // relative angular velocity across the normal.
        sim_vec3 wrel = b != NULL ? v3_sub(a->w, b->w) : a->w;
        sim_vec3 wr = v3_sub(wrel, v3_scale(c->n, v3_dot(wrel, c->n)));
        float wrl = v3_len(wr);
        if (wrl > 1e-9f) {
            sim_vec3 dir = v3_scale(wr, 1.0f / wrl);
            sim_vec3 zero = v3(0.0f, 0.0f, 0.0f);
            float ww = sim__inv_mass_at(a, zero, dir, true) + sim__inv_mass_at(b, zero, dir, true);
            float cap = SIM__ROLLING * w->binfo[c->a].radius * jn;
            if (ww > 0.0f) {
                sim__apply_angular_impulse(a, b, v3_scale(dir, -fminf(wrl / ww, cap)));
            }
        }
    }
}

uint32_t sim__bodies_near(const sim_world* w, sim_vec3 lo, sim_vec3 hi, sim__near_body* out,
                          uint32_t cap) {
    uint32_t n = 0;
    // Highest index first, the order the grid's buckets give (bodies go in
    // in index order, at the head): a particle between two bones ends
    // pushed out of the lower one (the torso rather than a limb).
    for (uint32_t b = w->b_count; b-- > 0;) {
        if (!sim__aabb_overlap(lo, hi, w->aabb_lo[b], w->aabb_hi[b])) {
            continue;
        }
        if (n == cap) {
            return UINT32_MAX;
        }
        sim__near_body* nb = &out[n++];
        nb->body = b;
        nb->radius = w->binfo[b].radius;
        sim__body_segment(&w->body[b], &w->binfo[b], &nb->s0, &nb->s1);
        const float r = nb->radius;
        nb->lo = v3(fminf(nb->s0.x, nb->s1.x) - r, fminf(nb->s0.y, nb->s1.y) - r,
                    fminf(nb->s0.z, nb->s1.z) - r);
        nb->hi = v3(fmaxf(nb->s0.x, nb->s1.x) + r, fmaxf(nb->s0.y, nb->s1.y) + r,
                    fmaxf(nb->s0.z, nb->s1.z) + r);
    }
    return n;
}

// Pushes particle *p out of the capsule (segment s0–s1, radius `radius`) of
// body b if it is in it (see sim__particle_vs_bodies); true when it was.
static bool push_out_of(sim_world* w, uint32_t b, sim_vec3 s0, sim_vec3 s1, float radius,
                        sim_vec3* p, float r, float mass, uint32_t skip_first, uint32_t skip_end,
                        float inv_h, sim_vec3* n_out, float* push) {
    sim_vec3 q = closest_on_segment(s0, s1, *p, NULL);
    sim_vec3 d = v3_sub(*p, q);
    float dist = v3_len(d), rr = radius + r;
    if (dist >= rr) {
        return false;
    }
    sim_vec3 n = dist > 1e-6f ? v3_scale(d, 1.0f / dist) : v3(0.0f, 1.0f, 0.0f);
    *p = v3_add(q, v3_scale(n, rr));
    *push += rr - dist;
    if (mass > 0.0f && (b < skip_first || b >= skip_end)) {
        // Two-way: moving the particle (mass m) out by d in this substep of
        // length h gave it momentum m·d/h along n; the body takes the
        // opposite at the contact point, up to the push-out speed cap.
        sim__body_push_away(w, b, q, v3_scale(n, -1.0f), mass * (rr - dist) * inv_h,
                            SIM__PARTICLE_PUSH_SPEED);
    }
    *n_out = n;
    return true;
}

bool sim__particle_vs_bodies(sim_world* w, const sim__near_body* list, uint32_t n_list, sim_vec3* p,
                             float r, float mass, uint32_t skip_first, uint32_t skip_end,
                             float inv_h, sim_vec3* n_out, float* push, uint32_t* body) {
    if (w->b_count == 0) {
        return false;
    }
    bool hit = false;
    if (list != NULL) {
        for (uint32_t k = 0; k < n_list; ++k) {
            const sim__near_body* nb = &list[k];
            // The capsule's box grown by the particle's radius: most bones
            // are rejected here, with their segments computed once a pass.
            if (p->x < nb->lo.x - r || p->y < nb->lo.y - r || p->z < nb->lo.z - r ||
                p->x > nb->hi.x + r || p->y > nb->hi.y + r || p->z > nb->hi.z + r) {
                continue;
            }
            if (push_out_of(w, nb->body, nb->s0, nb->s1, nb->radius, p, r, mass, skip_first,
                            skip_end, inv_h, n_out, push)) {
                *body = nb->body;
                hit = true;
            }
        }
        return hit;
    }
    int32_t cx = sim__cell_of(p->x), cy = sim__cell_of(p->y), cz = sim__cell_of(p->z);
    for (int32_t k = w->grid_head[sim__cell_hash(cx, cy, cz)]; k >= 0; k = w->grid[k].next) {
        const sim__grid_entry* e = &w->grid[k];
        if (e->cx != cx || e->cy != cy || e->cz != cz) {
            continue;
        }
        const sim__body_info* bi = &w->binfo[e->body];
        sim_vec3 s0, s1;
        sim__body_segment(&w->body[e->body], bi, &s0, &s1);
        if (push_out_of(w, e->body, s0, s1, bi->radius, p, r, mass, skip_first, skip_end, inv_h,
                        n_out, push)) {
            *body = e->body;
            hit = true;
        }
    }
    return hit;
}
