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
        rows[at + k] = (contact_row){
            link, sp(v3_cross(r, d), d), k == 0 ? want : 0.0f, k == 0 ? -1 : at, partner, dirs[k],
            lever};
    }
    return at + 3;
}

// The contact rows of every link's capsule against the ground and the
// boxes; at most SIM_ARTIC_MAX_CONTACTS contacts.
static int find_contacts(const sim_artic* a, float dt, const sim_artic_partner* partners,
                         uint32_t partner_count, contact_row* rows) {
    const float margin = 0.05f;
    int m = 0;
    for (uint32_t i = 0; i < a->count && m < 3 * SIM_ARTIC_MAX_CONTACTS; ++i) {
        const artic_link* l = &a->links[i];
        const float rad = l->def.radius;
        if (!(rad > 0.0f)) {
            continue;
        }
        const sim_vec3 p0 = v3_add(l->Xw.r, q_rotate(l->qw, l->def.capsule_a));
        const sim_vec3 p1 = v3_add(l->Xw.r, q_rotate(l->qw, l->def.capsule_b));
        const bool seg = v3_len(v3_sub(p1, p0)) > 1e-6f;
        if (a->ground) {
            for (int e = 0; e < (seg ? 2 : 1) && m < 3 * SIM_ARTIC_MAX_CONTACTS; ++e) {
                const sim_vec3 p = e == 0 ? p0 : p1;
                if (p.y < rad + margin) {
                    const sim_vec3 n = v3(0.0f, 1.0f, 0.0f);
                    m = add_contact_rows(l, i, v3(p.x, p.y - rad, p.z), n, p.y - rad, dt, rows, m,
                                         -1, v3(0.0f, 0.0f, 0.0f));
                }
            }
        }
        for (uint32_t k = 0; k < a->box_count && m < 3 * SIM_ARTIC_MAX_CONTACTS; ++k) {
            const sim_box* bx = &a->boxes[k];
            const sim_vec3 lo = v3_sub(bx->center, bx->half_extents);
            const sim_vec3 hi = v3_add(bx->center, bx->half_extents);
            for (int e = 0; e < (seg ? 3 : 1) && m < 3 * SIM_ARTIC_MAX_CONTACTS; ++e) {
                sim_vec3 p = e == 0 ? p0 : p1;
                if (e == 2) {
                    // The segment's point nearest the box (a capsule lying
                    // across an edge touches it between its ends).
                    const sim_vec3 d = v3_sub(p1, p0);
                    float t = 0.5f;
                    for (int it = 0; it < 4; ++it) {
                        const sim_vec3 c = v3_add(p0, v3_scale(d, t));
                        const sim_vec3 q =
                            v3(fminf(fmaxf(c.x, lo.x), hi.x), fminf(fmaxf(c.y, lo.y), hi.y),
                               fminf(fmaxf(c.z, lo.z), hi.z));
                        t = fminf(fmaxf(v3_dot(v3_sub(q, p0), d) / v3_dot(d, d), 0.0f), 1.0f);
                    }
                    if (t <= 0.0f || t >= 1.0f) {
                        break; // an end: done above
                    }
                    p = v3_add(p0, v3_scale(d, t));
                }
                sim_vec3 n, on_box;
                float depth;
                if (sim__sphere_box(p, rad + margin, bx, &n, &depth, &on_box)) {
                    m = add_contact_rows(l, i, v3_sub(p, v3_scale(n, rad)), n, margin - depth, dt,
                                         rows, m, -1, v3(0.0f, 0.0f, 0.0f));
                }
            }
        }
        // Partners: one contact at the closest points of the two capsules.
        for (uint32_t k = 0; k < partner_count && m < 3 * SIM_ARTIC_MAX_CONTACTS; ++k) {
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
            m = add_contact_rows(l, i, at, n, dist - rad - pt->radius, dt, rows, m, (int)k,
                                 v3_sub(at, pt->com));
        }
    }
    return m;
}

// A partner's inverse inertia (world) times x.
static sim_vec3 partner_inv_inertia(const sim_artic_partner* p, sim_vec3 x) {
    const sim_vec3 b = q_rotate_inv(p->rotation, x);
    return q_rotate(p->rotation,
                    v3(p->inv_inertia.x * b.x, p->inv_inertia.y * b.y, p->inv_inertia.z * b.z));
}

// The contacts, solved together through the articulated inertia: the
// dense matrix K of every row's response to a unit impulse on every row
// (one propagation per row), projected Gauss-Seidel over it, then one
// propagation per touched link to apply the impulses. See
// sim_artic_set_env().
void sim__artic_solve_contacts(sim_artic* a, float dt, sim_artic_partner* partners,
                               uint32_t partner_count, momentum6* external, sim_vec3 com) {
    enum { R = 3 * SIM_ARTIC_MAX_CONTACTS };
    contact_row rows[R];
    a->contacts = 0;
    if (!a->ground && a->box_count == 0 && partner_count == 0) {
        return;
    }
    const int m = find_contacts(a, dt, partners, partner_count, rows);
    a->contacts = (uint32_t)(m / 3);
    if (m == 0) {
        return;
    }
    sim__artic_velocities(a);
    float K[R * R]; // 36 KiB of stack
    float rate0[R], lambda[R];
    for (int c = 0; c < m; ++c) {
        sim__artic_link_impulse(a, rows[c].link, NULL, &rows[c].f, 1.0f, false);
        for (int r = 0; r < m; ++r) {
            K[r * R + c] = sp_dot(a->links[rows[r].link].a, rows[r].f);
        }
    }
    // A partner's own response: K_rc += m⁻¹ d_r·d_c + (l_r × d_r)·I⁻¹(l_c × d_c)
    // for two rows on one partner (the impulse λ_c d_c on the link is −λ_c d_c
    // on the partner, at lever l_c from its centre of mass).
    for (int r = 0; r < m; ++r) {
        const int pr = rows[r].partner;
        rate0[r] = sp_dot(a->links[rows[r].link].v, rows[r].f);
        lambda[r] = 0.0f;
        if (pr < 0) {
            continue;
        }
        const sim_artic_partner* pt = &partners[pr];
        const sim_vec3 vp = v3_add(pt->v, v3_cross(pt->w, rows[r].lever));
        rate0[r] -= v3_dot(vp, rows[r].dir);
        const sim_vec3 ar = v3_cross(rows[r].lever, rows[r].dir);
        for (int c = 0; c < m; ++c) {
            if (rows[c].partner == pr) {
                const sim_vec3 ac = partner_inv_inertia(pt, v3_cross(rows[c].lever, rows[c].dir));
                K[r * R + c] += pt->inv_mass * v3_dot(rows[r].dir, rows[c].dir) + v3_dot(ar, ac);
            }
        }
    }
    for (int sweep = 0; sweep < SIM_ARTIC_CONTACT_SWEEPS; ++sweep) {
        for (int r = 0; r < m; ++r) {
            const float k = K[r * R + r];
            if (!(k > 1e-12f)) {
                continue;
            }
            float rate = rate0[r];
            for (int c = 0; c < m; ++c) {
                rate += K[r * R + c] * lambda[c];
            }
            float next = lambda[r] + (rows[r].want - rate) / k;
            if (rows[r].normal_row < 0) {
                next = fmaxf(next, 0.0f);
            } else {
                const float cap = a->friction * lambda[rows[r].normal_row];
                next = fminf(fmaxf(next, -cap), cap);
            }
            lambda[r] = next;
        }
    }
    // The partners take the opposite impulses.
    for (int r = 0; r < m; ++r) {
        if (rows[r].partner >= 0 && lambda[r] != 0.0f) {
            sim_artic_partner* pt = &partners[rows[r].partner];
            const sim_vec3 j = v3_scale(rows[r].dir, -lambda[r]);
            pt->v = v3_add(pt->v, v3_scale(j, pt->inv_mass));
            pt->w = v3_add(pt->w, partner_inv_inertia(pt, v3_cross(rows[r].lever, j)));
        }
    }
    // One propagation per touched link, of the sum of its rows' impulses.
    for (int r = 0; r < m; ++r) {
        if (lambda[r] == 0.0f) {
            continue;
        }
        sp_vec total = sp_zero();
        const uint32_t link = rows[r].link;
        for (int c = r; c < m; ++c) {
            if (rows[c].link == link && lambda[c] != 0.0f) {
                total = sp_add(total, sp_scale(rows[c].f, lambda[c]));
                lambda[c] = 0.0f;
            }
        }
        sim__artic_link_impulse(a, link, NULL, &total, 1.0f, true);
        if (external != NULL) {
            // The impulse from outside, for the momentum a free base keeps:
            // in world axes, about the centre of mass at the step's start.
            const artic_link* l = &a->links[link];
            const sim_vec3 f = q_rotate(l->qw, total.lin);
            const sim_vec3 n =
                v3_add(q_rotate(l->qw, total.ang), v3_cross(v3_sub(l->Xw.r, com), f));
            external->ang[0] += (double)n.x;
            external->ang[1] += (double)n.y;
            external->ang[2] += (double)n.z;
            external->lin[0] += (double)f.x;
            external->lin[1] += (double)f.y;
            external->lin[2] += (double)f.z;
        }
    }
    sim__artic_velocities(a);
}
