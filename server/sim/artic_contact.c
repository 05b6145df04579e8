/*
 * artic_contact.c: contacts of reduced-coordinate articulations with the
 * ground, static boxes and moving partners (bodies of the world), solved
 * through the articulated inertia (sim_artic_set_env(),
 * sim_artic_step_among()).
 */
#include "artic.h"

#include <string.h>

// One contact row: a unit spatial force on a link (its coordinates), the
// rate it pairs with (sp_dot(v, f): the point's velocity along the row's
// direction), and what the row wants.
typedef struct contact_row {
    uint32_t link;
    sp_vec f;
    float want;     // normal: the rate that lands on the surface; friction: 0
    int normal_row; // friction rows: their contact's normal row; normal rows: −1
    int partner;    // the partner touched (sim_artic_step_among()), or −1
    sim_vec3 dir;   // the row's direction, world (out of the obstacle for a normal)
    sim_vec3 lever; // the contact point from the partner's centre of mass, world, m
    float gap;      // normal rows: the signed distance to the surface, m
    sim_vec3 point; // the contact point on the link, world, m
} contact_row;

// A contact of link l at world point p (on the link's surface) with normal
// n (out of the obstacle) and signed gap (negative: penetrating): its
// normal row and two friction rows.
static int add_contact_rows(const artic_link* l, uint32_t link, sim_vec3 p, sim_vec3 n, float gap,
                            float dt, contact_row* rows, int at, int partner, sim_vec3 lever) {
    const sim_vec3 r = q_rotate_inv(l->qw, v3_sub(p, l->Xw.r));
    const sim_vec3 t1w = fabsf(n.y) < 0.9f ? v3_normalize(v3_cross(n, v3(0.0f, 1.0f, 0.0f)))
                                           : v3_normalize(v3_cross(n, v3(1.0f, 0.0f, 0.0f)));
    const sim_vec3 dirs[3] = {n, t1w, v3_cross(n, t1w)};
    const float slop = 0.005f;
    float want = (-slop - gap) / dt; // lands on the surface, or approaches it
    want = fminf(want, 2.0f);        // a penetration is left at up to 2 m/s
    for (int k = 0; k < 3; ++k) {
        const sim_vec3 d = q_rotate_inv(l->qw, dirs[k]);
        rows[at + k] = (contact_row){link,
                                     sp(v3_cross(r, d), d),
                                     k == 0 ? want : 0.0f,
                                     k == 0 ? -1 : at,
                                     partner,
                                     dirs[k],
                                     lever,
                                     gap,
                                     p};
    }
    return at + 3;
}

// The contact rows found so far: `m` rows of at most 3 × cap.
typedef struct contact_set {
    contact_row* rows;
    int m;
    int cap; // rows
} contact_set;

// Adds a contact (add_contact_rows()); when the set is full, it takes the
// place of the shallowest contact if it is deeper (the deepest are
// solved).
static void add_contact(contact_set* cs, const artic_link* l, uint32_t link, sim_vec3 p, sim_vec3 n,
                        float gap, float dt, int partner, sim_vec3 lever) {
    int at = cs->m;
    if (at + 3 > cs->cap) {
        float shallowest = gap;
        at = -1;
        for (int r = 0; r < cs->m; r += 3) {
            if (cs->rows[r].gap > shallowest) {
                shallowest = cs->rows[r].gap;
                at = r;
            }
        }
        if (at < 0) {
            return; // shallower than every contact kept
        }
    }
    const int end = add_contact_rows(l, link, p, n, gap, dt, cs->rows, at, partner, lever);
    cs->m = end > cs->m ? end : cs->m;
}

// The contact rows of every link's capsule against the ground and the
// boxes; at most a->max_contacts contacts, the deepest.
static int find_contacts(const sim_artic* a, float dt, const sim_artic_partner* partners,
                         uint32_t partner_count, contact_row* rows) {
    const float margin = 0.05f;
    contact_set cs = {rows, 0, 3 * (int)a->max_contacts};
    for (uint32_t i = 0; i < a->count; ++i) {
        const artic_link* l = &a->links[i];
        const float rad = l->def.radius;
        if (!(rad > 0.0f)) {
            continue;
        }
        const sim_vec3 p0 = v3_add(l->Xw.r, q_rotate(l->qw, l->def.capsule_a));
        const sim_vec3 p1 = v3_add(l->Xw.r, q_rotate(l->qw, l->def.capsule_b));
        const bool seg = v3_len(v3_sub(p1, p0)) > 1e-6f;
        // A capsule that starts where its parent's ends, as wide (a chain's
        // links, joined end to end), shares that end's contact: the
        // parent's holds both through the joint, and one contact a joint
        // lets a lying chain keep all its support within max_contacts.
        bool shared = false;
        if (l->def.parent >= 0) {
            const artic_link* pl = &a->links[l->def.parent];
            const sim_vec3 pp1 = v3_add(pl->Xw.r, q_rotate(pl->qw, pl->def.capsule_b));
            shared =
                fabsf(pl->def.radius - rad) <= 0.1f * rad && v3_len(v3_sub(pp1, p0)) <= 0.1f * rad;
        }
        // Each end of the capsule touches at most one thing, the one it is
        // deepest into (the ground or a box); the segment's middle, the
        // box whose edge it lies across deepest. Three contacts a link at
        // most, so a lying body's every link keeps its support.
        for (int e = shared ? 1 : 0; e < (seg ? 2 : 1); ++e) {
            const sim_vec3 p = e == 0 ? p0 : p1;
            float best = margin; // gap of the deepest so far (below the margin)
            sim_vec3 bn = v3(0.0f, 1.0f, 0.0f), bat = p;
            if (a->ground && p.y - rad < best) {
                best = p.y - rad;
                bat = v3(p.x, p.y - rad, p.z);
            }
            for (uint32_t k = 0; k < a->box_count; ++k) {
                sim_vec3 n, on_box;
                float depth;
                if (sim__sphere_box(p, rad + margin, &a->boxes[k], &n, &depth, &on_box) &&
                    margin - depth < best) {
                    best = margin - depth;
                    bn = n;
                    bat = v3_sub(p, v3_scale(n, rad));
                }
            }
            if (best < margin) {
                add_contact(&cs, l, i, bat, bn, best, dt, -1, v3(0.0f, 0.0f, 0.0f));
            }
        }
        float mid_best = margin;
        sim_vec3 mid_n = v3(0.0f, 1.0f, 0.0f), mid_at = p0;
        for (uint32_t k = 0; seg && k < a->box_count; ++k) {
            const sim_box* bx = &a->boxes[k];
            const sim_vec3 lo = v3_sub(bx->center, bx->half_extents);
            const sim_vec3 hi = v3_add(bx->center, bx->half_extents);
            // The segment's point nearest the box (a capsule lying across
            // an edge touches it between its ends).
            const sim_vec3 d = v3_sub(p1, p0);
            float t = 0.5f;
            for (int it = 0; it < 4; ++it) {
                const sim_vec3 c = v3_add(p0, v3_scale(d, t));
                const sim_vec3 q = v3(fminf(fmaxf(c.x, lo.x), hi.x), fminf(fmaxf(c.y, lo.y), hi.y),
                                      fminf(fmaxf(c.z, lo.z), hi.z));
                t = fminf(fmaxf(v3_dot(v3_sub(q, p0), d) / v3_dot(d, d), 0.0f), 1.0f);
            }
            if (t <= 0.1f || t >= 0.9f) {
                continue; // at an end: the end's contact holds it
            }
            const sim_vec3 p = v3_add(p0, v3_scale(d, t));
            sim_vec3 n, on_box;
            float depth;
            if (sim__sphere_box(p, rad + margin, bx, &n, &depth, &on_box) &&
                margin - depth < mid_best) {
                mid_best = margin - depth;
                mid_n = n;
                mid_at = v3_sub(p, v3_scale(n, rad));
            }
        }
        if (mid_best < margin) {
            add_contact(&cs, l, i, mid_at, mid_n, mid_best, dt, -1, v3(0.0f, 0.0f, 0.0f));
        }
        // Partners: one contact at the closest points of the two capsules.
        for (uint32_t k = 0; k < partner_count; ++k) {
            const sim_artic_partner* pt = &partners[k];
            sim_vec3 cp, cq;
            sim__closest_segments(p0, p1, pt->a, pt->b, &cp, &cq);
            const sim_vec3 d = v3_sub(cp, cq);
            const float dist = v3_len(d);
            if (!(dist < rad + pt->radius + margin) || dist < 1e-6f) {
                continue; // apart, or centre on centre (no direction to push)
            }
            const sim_vec3 n = v3_scale(d, 1.0f / dist); // out of the partner
            const sim_vec3 at = v3_sub(cp, v3_scale(n, rad));
            add_contact(&cs, l, i, at, n, dist - rad - pt->radius, dt, (int)k, v3_sub(at, pt->com));
        }
    }
    return cs.m;
}

// A partner's inverse inertia (world) times x.
static sim_vec3 partner_inv_inertia(const sim_artic_partner* p, sim_vec3 x) {
    const sim_vec3 b = q_rotate_inv(p->rotation, x);
    return q_rotate(p->rotation,
                    v3(p->inv_inertia.x * b.x, p->inv_inertia.y * b.y, p->inv_inertia.z * b.z));
}

// The rows' Jacobians J_r (a row's rate is J_r·qd: the unit force carried
// back to each joint on its path, S_k·X*f) into a->jac, their responses
// W_r = M⁻¹J_rᵀ (one impulse propagation each) into a->resp, and each
// row's own inverse mass J_r·W_r (with its partner's) into diag; `end[r]`
// is where J_r's nonzeros end (a path's DOFs come before its link's last:
// parents come first). They hold while the coordinates do: a step's
// rounds share them.
static void build_rows(sim_artic* a, const contact_row* rows, int m,
                       const sim_artic_partner* partners, float* diag, uint32_t* end) {
    const uint32_t nd = a->ndof;
    for (int r = 0; r < m; ++r) {
        float* J = a->jac + (size_t)r * nd;
        float* W = a->resp + (size_t)r * nd;
        const artic_link* own = &a->links[rows[r].link];
        end[r] = own->at + (uint32_t)own->dof;
        memset(J, 0, end[r] * sizeof *J);
        sp_vec f = rows[r].f;
        for (int32_t i = (int32_t)rows[r].link; i >= 0; i = a->links[i].def.parent) {
            const artic_link* l = &a->links[i];
            for (int k = 0; k < l->dof; ++k) {
                J[l->at + (uint32_t)k] = sp_dot(l->S[k], f);
            }
            f = sp_xform_force_back(&l->X, f);
        }
        sim__artic_link_impulse(a, rows[r].link, NULL, &rows[r].f, 1.0f, false);
        for (uint32_t i = 0; i < a->count; ++i) {
            const artic_link* l = &a->links[i];
            for (int k = 0; k < l->dof; ++k) {
                W[l->at + (uint32_t)k] = l->dq[k];
            }
        }
        float d = 0.0f;
        for (uint32_t k = 0; k < end[r]; ++k) {
            d += J[k] * W[k];
        }
        // A partner's own response (the impulse λ d on the link is −λ d on
        // the partner, at lever l from its centre of mass): its rate falls
        // by λ (m⁻¹ + (l × d)·I⁻¹(l × d)).
        const int pr = rows[r].partner;
        if (pr >= 0) {
            const sim_artic_partner* pt = &partners[pr];
            const sim_vec3 ar = v3_cross(rows[r].lever, rows[r].dir);
            d += pt->inv_mass + v3_dot(ar, partner_inv_inertia(pt, ar));
        }
        diag[r] = d;
    }
}

// Keeps a strike (a normal row that pushed, closing at `speed` before the
// solve): the fastest of each link and what it struck, the fastest
// SIM_ARTIC_MAX_STRIKES of the step.
static void note_strike(sim_artic* a, const contact_row* row, float speed) {
    const sim_artic_strike s = {row->link, row->partner, row->point, row->dir, speed};
    uint32_t slowest = 0;
    for (uint32_t k = 0; k < a->strike_count; ++k) {
        sim_artic_strike* x = &a->strikes[k];
        if (x->link == s.link && x->partner == s.partner) {
            *x = speed > x->speed ? s : *x;
            return;
        }
        slowest = x->speed < a->strikes[slowest].speed ? k : slowest;
    }
    if (a->strike_count < SIM_ARTIC_MAX_STRIKES) {
        a->strikes[a->strike_count++] = s;
    } else if (speed > a->strikes[slowest].speed) {
        a->strikes[slowest] = s;
    }
}

// One round of the contacts (built by build_rows()) at the velocities as
// they are: projected Gauss-Seidel on the joint velocities (a row's rate
// is J_r·Δq̇ + its start, an impulse adds W_r·Δλ: O(DOFs) a row, as
// Bullet's btMultiBody solver does, not O(rows) over a dense row-by-row
// matrix), then the impulses applied to the joints and the partners.
static void solve_round(sim_artic* a, float dt, sim_artic_partner* partners, uint32_t partner_count,
                        const contact_row* rows, int m, const float* diag, const uint32_t* end,
                        momentum6* external, sim_vec3 com) {
    enum { R = 3 * SIM_ARTIC_MAX_CONTACTS };
    const uint32_t nd = a->ndof;
    float rate0[R], lambda[R], want[R];
    sim__artic_velocities(a);
    for (int r = 0; r < m; ++r) {
        rate0[r] = sp_dot(a->links[rows[r].link].v, rows[r].f);
        lambda[r] = 0.0f;
        want[r] = rows[r].want;
        const int pr = rows[r].partner;
        if (pr >= 0) {
            const sim_artic_partner* pt = &partners[pr];
            const sim_vec3 vp = v3_add(pt->v, v3_cross(pt->w, rows[r].lever));
            rate0[r] -= v3_dot(vp, rows[r].dir);
        }
        // Restitution (sim_artic_set_restitution()): a normal row closing
        // faster than the threshold, that would reach the surface this
        // step, leaves at e times that speed.
        if (rows[r].normal_row < 0 && rate0[r] < -SIM_ARTIC_BOUNCE_SPEED &&
            rows[r].gap + rate0[r] * dt <= 0.0f) {
            want[r] = fmaxf(want[r], -a->restitution * rate0[r]);
        }
    }
    float* dq = a->dqsum;
    memset(dq, 0, nd * sizeof *dq);
    sim_vec3 pv[SIM_ARTIC_MAX_PARTNERS], pw[SIM_ARTIC_MAX_PARTNERS]; // partners' changes
    for (uint32_t k = 0; k < partner_count; ++k) {
        pv[k] = v3(0.0f, 0.0f, 0.0f);
        pw[k] = v3(0.0f, 0.0f, 0.0f);
    }
    for (int sweep = 0; sweep < SIM_ARTIC_CONTACT_SWEEPS; ++sweep) {
        float moved = 0.0f; // largest rate change this sweep, m/s
        for (int r = 0; r < m; ++r) {
            const float k = diag[r];
            if (!(k > 1e-12f)) {
                continue;
            }
            const float* J = a->jac + (size_t)r * nd;
            float rate = rate0[r];
            for (uint32_t i = 0; i < end[r]; ++i) {
                rate += J[i] * dq[i];
            }
            const int pr = rows[r].partner;
            if (pr >= 0) {
                rate -= v3_dot(v3_add(pv[pr], v3_cross(pw[pr], rows[r].lever)), rows[r].dir);
            }
            float next = lambda[r] + (want[r] - rate) / k;
            if (rows[r].normal_row < 0) {
                next = fmaxf(next, 0.0f);
            } else {
                const float cap = a->friction * lambda[rows[r].normal_row];
                next = fminf(fmaxf(next, -cap), cap);
            }
            const float delta = next - lambda[r];
            if (delta != 0.0f) {
                const float* W = a->resp + (size_t)r * nd;
                for (uint32_t i = 0; i < nd; ++i) {
                    dq[i] += W[i] * delta;
                }
                if (pr >= 0) {
                    const sim_artic_partner* pt = &partners[pr];
                    const sim_vec3 j = v3_scale(rows[r].dir, -delta);
                    pv[pr] = v3_add(pv[pr], v3_scale(j, pt->inv_mass));
                    pw[pr] = v3_add(pw[pr], partner_inv_inertia(pt, v3_cross(rows[r].lever, j)));
                }
            }
            moved = fmaxf(moved, fabsf(delta) * k);
            lambda[r] = next;
        }
        if (moved < SIM_ARTIC_CONTACT_TOLERANCE) {
            break; // converged: no row's rate would move by as much
        }
    }
    for (uint32_t k = 0; k < partner_count; ++k) {
        partners[k].v = v3_add(partners[k].v, pv[k]);
        partners[k].w = v3_add(partners[k].w, pw[k]);
    }
    for (int r = 0; r < m; ++r) {
        if (rows[r].normal_row < 0 && lambda[r] > 0.0f && -rate0[r] >= SIM_ARTIC_STRIKE_SPEED) {
            note_strike(a, &rows[r], -rate0[r]);
        }
    }
    for (uint32_t i = 0; i < a->count; ++i) {
        artic_link* l = &a->links[i];
        for (int k = 0; k < l->dof; ++k) {
            l->qd[k] += dq[l->at + (uint32_t)k];
        }
    }
    // The impulse from outside, for the momentum a free base keeps: in
    // world axes, about the centre of mass at the step's start.
    for (int r = 0; external != NULL && r < m; ++r) {
        if (lambda[r] == 0.0f) {
            continue;
        }
        const artic_link* l = &a->links[rows[r].link];
        const sp_vec total = sp_scale(rows[r].f, lambda[r]);
        const sim_vec3 f = q_rotate(l->qw, total.lin);
        const sim_vec3 n = v3_add(q_rotate(l->qw, total.ang), v3_cross(v3_sub(l->Xw.r, com), f));
        external->ang[0] += (double)n.x;
        external->ang[1] += (double)n.y;
        external->ang[2] += (double)n.z;
        external->lin[0] += (double)f.x;
        external->lin[1] += (double)f.y;
        external->lin[2] += (double)f.z;
    }
    sim__artic_velocities(a);
}

uint32_t sim_artic_strikes(const sim_artic* a, sim_artic_strike* out, uint32_t cap) {
    const uint32_t n = a->strike_count < cap ? a->strike_count : cap;
    memcpy(out, a->strikes, n * sizeof *out);
    return n;
}

// The contacts, solved together through the articulated inertia, then the
// joint limits, `rounds` times: each solve can undo a little of the
// other's (a limit's push can slide a foot), and a second round takes most
// of that out. The contacts are found and their rows built once (the
// coordinates do not change within the step). See sim_artic_set_env().
void sim__artic_solve_contacts_and_limits(sim_artic* a, float dt, sim_artic_partner* partners,
                                          uint32_t partner_count, momentum6* external, sim_vec3 com,
                                          int rounds) {
    enum { R = 3 * SIM_ARTIC_MAX_CONTACTS };
    contact_row rows[R];
    float diag[R];
    uint32_t end[R];
    a->contacts = 0;
    a->strike_count = 0;
    int m = 0;
    if (a->ground || a->box_count > 0 || partner_count > 0) {
        m = find_contacts(a, dt, partners, partner_count, rows);
        a->contacts = (uint32_t)(m / 3);
        build_rows(a, rows, m, partners, diag, end);
    }
    for (int round = 0; round < rounds; ++round) {
        if (m > 0) {
            solve_round(a, dt, partners, partner_count, rows, m, diag, end, external, com);
        }
        sim__artic_solve_limits(a, dt);
    }
}
