/*
 * articulation.c: articulated bodies in reduced coordinates
 * (sim_articulation.h): the Articulated-Body Algorithm, implicit PD drives
 * and joint damping, semi-implicit integration on joint coordinates, and
 * the free base's momentum kept exactly.
 *
 * What it owns: each articulation's links (their defs, coordinates,
 * velocities and the ABA's per-step quantities), in one allocation.
 * Stepping never allocates.
 *
 * Notation and passes follow Featherstone, "Rigid Body Dynamics
 * Algorithms" (2008), Table 7.1, with the joint models of §4.4 (revolute:
 * S = [axis; 0]; spherical: S = [1; 0], angular velocity in the link's
 * axes; free: S = 1, the body-frame spatial velocity) and gravity as the
 * fictitious base acceleration a_0 = −g (§5.3).
 */
#include "artic.h"

#include <string.h>

sim_artic_link_def sim_artic_link_def_default(void) {
    sim_artic_link_def d;
    memset(&d, 0, sizeof d);
    d.parent = -1;
    d.joint = SIM_ARTIC_FIXED;
    d.frame = q_identity();
    d.axis = v3(0.0f, 0.0f, 1.0f);
    d.mass = 1.0f;
    d.inertia = v3(0.01f, 0.01f, 0.01f);
    return d;
}

// ---------------------------------------------------------------------------
// Small dense solves
// ---------------------------------------------------------------------------

// inv = m^-1 for an n×n matrix (n <= 6) by Gauss-Jordan with partial
// pivoting. False when m is singular to float precision.
static bool invert(int n, float m[6][6], float inv[6][6]) {
    if (n == 1) { // a hinge: most links
        if (!(fabsf(m[0][0]) > 1e-30f)) {
            return false;
        }
        inv[0][0] = 1.0f / m[0][0];
        return true;
    }
    float a[6][12];
    for (int i = 0; i < n; ++i) {
        for (int j = 0; j < n; ++j) {
            a[i][j] = m[i][j];
            a[i][n + j] = i == j ? 1.0f : 0.0f;
        }
    }
    for (int col = 0; col < n; ++col) {
        int piv = col;
        for (int r = col + 1; r < n; ++r) {
            if (fabsf(a[r][col]) > fabsf(a[piv][col])) {
                piv = r;
            }
        }
        if (!(fabsf(a[piv][col]) > 1e-30f)) {
            return false;
        }
        if (piv != col) {
            for (int j = 0; j < 2 * n; ++j) {
                float t = a[col][j];
                a[col][j] = a[piv][j];
                a[piv][j] = t;
            }
        }
        const float d = 1.0f / a[col][col];
        for (int j = 0; j < 2 * n; ++j) {
            a[col][j] *= d;
        }
        for (int r = 0; r < n; ++r) {
            if (r != col && a[r][col] != 0.0f) {
                const float f = a[r][col];
                for (int j = 0; j < 2 * n; ++j) {
                    a[r][j] -= f * a[col][j];
                }
            }
        }
    }
    for (int i = 0; i < n; ++i) {
        for (int j = 0; j < n; ++j) {
            inv[i][j] = a[i][n + j];
        }
    }
    return true;
}

// ---------------------------------------------------------------------------
// Creation
// ---------------------------------------------------------------------------

static int check_def(const sim_artic_link_def* d, uint32_t i) {
    if (i == 0 ? d->parent != -1 : (d->parent < 0 || (uint32_t)d->parent >= i)) {
        return SIM_E_INVALID_ARG;
    }
    if (d->joint != SIM_ARTIC_FIXED && d->joint != SIM_ARTIC_REVOLUTE &&
        d->joint != SIM_ARTIC_SPHERICAL && d->joint != SIM_ARTIC_FREE) {
        return SIM_E_INVALID_ARG;
    }
    if (d->joint == SIM_ARTIC_FREE && i != 0) {
        return SIM_E_INVALID_ARG;
    }
    if (!sim__finite3(d->anchor) || !sim__finite4(d->frame) || !sim__finite3(d->axis) ||
        !isfinite(d->mass) || !sim__finite3(d->com) || !sim__finite3(d->inertia) ||
        !isfinite(d->damping) || !sim__finite3(d->capsule_a) || !sim__finite3(d->capsule_b) ||
        !isfinite(d->radius)) {
        return SIM_E_NOT_FINITE;
    }
    if (q_dot(d->frame, d->frame) < 1e-12f ||
        (d->joint == SIM_ARTIC_REVOLUTE && v3_dot(d->axis, d->axis) < 1e-12f)) {
        return SIM_E_INVALID_ARG;
    }
    const sim_vec3 J = d->inertia;
    if (!(d->mass > 0.0f && d->mass <= 1e6f) || fabsf(d->com.x) > 100.0f ||
        fabsf(d->com.y) > 100.0f || fabsf(d->com.z) > 100.0f || !(J.x > 0.0f) || !(J.y > 0.0f) ||
        !(J.z > 0.0f) || J.x > J.y + J.z || J.y > J.x + J.z || J.z > J.x + J.y ||
        !(d->damping >= 0.0f && d->damping <= 1e9f) || !(d->radius >= 0.0f && d->radius <= 10.0f) ||
        v3_len(d->capsule_a) > 100.0f || v3_len(d->capsule_b) > 100.0f) {
        return SIM_E_OUT_OF_RANGE;
    }
    return SIM_OK;
}

static void joint_subspace(artic_link* l) {
    memset(l->S, 0, sizeof l->S);
    switch (l->def.joint) {
    case SIM_ARTIC_REVOLUTE:
        l->dof = 1;
        l->S[0].ang = l->def.axis;
        break;
    case SIM_ARTIC_SPHERICAL:
        l->dof = 3;
        l->S[0].ang = v3(1.0f, 0.0f, 0.0f);
        l->S[1].ang = v3(0.0f, 1.0f, 0.0f);
        l->S[2].ang = v3(0.0f, 0.0f, 1.0f);
        break;
    case SIM_ARTIC_FREE:
        l->dof = 6;
        for (int k = 0; k < 6; ++k) {
            sp_set(&l->S[k], k, 1.0f);
        }
        break;
    default:
        l->dof = 0;
        break;
    }
}

int sim_artic_create(const sim_artic_link_def* links, uint32_t count, const sim_allocator* alloc,
                     sim_artic** out) {
    if (links == NULL || out == NULL || count == 0 || count > SIM_ARTIC_MAX_LINKS) {
        return SIM_E_INVALID_ARG;
    }
    for (uint32_t i = 0; i < count; ++i) {
        int rc = check_def(&links[i], i);
        if (rc != SIM_OK) {
            return rc;
        }
    }
    const sim_allocator al = alloc != NULL ? *alloc : sim_allocator_default();
    uint32_t ndof = 0;
    for (uint32_t i = 0; i < count; ++i) {
        const sim_artic_joint j = links[i].joint;
        ndof += j == SIM_ARTIC_REVOLUTE    ? 1u
                : j == SIM_ARTIC_SPHERICAL ? 3u
                : j == SIM_ARTIC_FREE      ? 6u
                                           : 0u;
    }
    // One block: the header, then (from a 64-byte boundary) the links, then
    // the scratch inertias, then the contact rows' Jacobians and responses
    // (artic_contact.c) and a velocity change, over every DOF.
    const size_t head = (sizeof(sim_artic) + 63) & ~(size_t)63;
    const size_t dofs = ndof > 0 ? ndof : 1;
    size_t contacts = count + 1 < SIM_ARTIC_MAX_CONTACTS ? count + 1 : SIM_ARTIC_MAX_CONTACTS;
    if (contacts * 24 * dofs > ((size_t)4 << 20)) {
        contacts = ((size_t)4 << 20) / (24 * dofs);
    }
    contacts = contacts > SIM_ARTIC_MIN_CONTACTS ? contacts : SIM_ARTIC_MIN_CONTACTS;
    const size_t rows = 3 * contacts;
    const size_t bytes = head + count * (sizeof(artic_link) + sizeof(sp_mat6)) +
                         (2 * rows + 1) * dofs * sizeof(float);
    sim_artic* a = al.alloc(al.ctx, bytes, 64);
    if (a == NULL) {
        return SIM_E_NOMEM;
    }
    memset(a, 0, bytes);
    a->alloc = al;
    a->bytes = bytes;
    a->count = count;
    a->max_contacts = (uint32_t)contacts;
    a->links = (artic_link*)(void*)((char*)a + head);
    a->friction = 0.6f;
    a->last_h = 1.0f / 240.0f;
    a->scratch = (sp_mat6*)(void*)(a->links + count);
    a->ndof = ndof;
    a->jac = (float*)(void*)(a->scratch + count);
    a->resp = a->jac + rows * dofs;
    a->dqsum = a->resp + rows * dofs;
    uint32_t at = 0;
    for (uint32_t i = 0; i < count; ++i) {
        artic_link* l = &a->links[i];
        l->def = links[i];
        l->def.frame = q_normalize(l->def.frame);
        l->def.axis = v3_normalize(l->def.axis);
        joint_subspace(l);
        l->at = at;
        at += (uint32_t)l->dof;
        l->XT = sp_xform_from(l->def.frame, l->def.anchor);
        const sp_mat3 Ic = {{{l->def.inertia.x, 0.0f, 0.0f},
                             {0.0f, l->def.inertia.y, 0.0f},
                             {0.0f, 0.0f, l->def.inertia.z}}};
        l->I = sp_inertia(l->def.mass, l->def.com, &Ic);
        l->rot = q_identity();
        l->target_rot = q_identity();
    }
    sim__artic_kinematics(a);
    *out = a;
    return SIM_OK;
}

void sim_artic_destroy(sim_artic* a) {
    if (a != NULL) {
        a->alloc.free(a->alloc.ctx, a, a->bytes);
    }
}

uint32_t sim_artic_link_count(const sim_artic* a) {
    return a->count;
}

// ---------------------------------------------------------------------------
// Kinematics
// ---------------------------------------------------------------------------

// The joint's own transform (joint frame → link frame) and rotation.
static sp_xform joint_xform(const artic_link* l, sim_quat* qj) {
    switch (l->def.joint) {
    case SIM_ARTIC_REVOLUTE:
        *qj = q_from_axis_angle(l->def.axis, l->angle);
        return sp_xform_from(*qj, v3(0.0f, 0.0f, 0.0f));
    case SIM_ARTIC_SPHERICAL:
        *qj = l->rot;
        return sp_xform_from(l->rot, v3(0.0f, 0.0f, 0.0f));
    case SIM_ARTIC_FREE:
        *qj = l->rot;
        return sp_xform_from(l->rot, l->pos);
    default:
        *qj = q_identity();
        return sp_xform_identity();
    }
}

// S qd: the joint's velocity in link coordinates.
static sp_vec joint_velocity(const artic_link* l) {
    sp_vec vj = sp_zero();
    for (int k = 0; k < l->dof; ++k) {
        vj = sp_add(vj, sp_scale(l->S[k], l->qd[k]));
    }
    return vj;
}

// Transforms and velocities of every link from the coordinates (outward).
void sim__artic_kinematics(sim_artic* a) {
    a->inertias_valid = false; // of other coordinates now
    for (uint32_t i = 0; i < a->count; ++i) {
        artic_link* l = &a->links[i];
        sim_quat qj;
        const sp_xform XJ = joint_xform(l, &qj);
        l->X = sp_xform_compose(&XJ, &l->XT);
        const sim_quat local = q_mul(l->def.frame, qj);
        if (l->def.parent < 0) {
            l->Xw = l->X;
            l->qw = q_normalize(local);
            l->v = joint_velocity(l);
        } else {
            const artic_link* p = &a->links[l->def.parent];
            l->Xw = sp_xform_compose(&l->X, &p->Xw);
            l->qw = q_normalize(q_mul(p->qw, local));
            l->v = sp_add(sp_xform_motion(&l->X, p->v), joint_velocity(l));
        }
    }
}

// The links' velocities from the joint velocities, the transforms as they are.
void sim__artic_velocities(sim_artic* a) {
    for (uint32_t i = 0; i < a->count; ++i) {
        artic_link* l = &a->links[i];
        const sp_vec vj = joint_velocity(l);
        l->v =
            l->def.parent < 0 ? vj : sp_add(sp_xform_motion(&l->X, a->links[l->def.parent].v), vj);
    }
}

// ---------------------------------------------------------------------------
// Forward dynamics: the Articulated-Body Algorithm
// ---------------------------------------------------------------------------

// The drive's and damping's explicit torque on each DOF, and what their
// implicit part adds to D's diagonal (h·(kd + damping) + h²·kp).
static void drive_terms(const artic_link* l, float h, float tau[6], float* dadd) {
    for (int k = 0; k < 6; ++k) {
        tau[k] = 0.0f;
    }
    const float b = l->def.damping;
    *dadd = h * (l->kd + b) + h * h * l->kp;
    float err[3] = {0.0f, 0.0f, 0.0f};
    if (l->kp > 0.0f) {
        if (l->def.joint == SIM_ARTIC_REVOLUTE) {
            err[0] = l->target_angle - l->angle;
        } else if (l->def.joint == SIM_ARTIC_SPHERICAL) {
            const sim_vec3 e = q_to_rotvec(q_mul(q_conj(l->rot), l->target_rot));
            err[0] = e.x;
            err[1] = e.y;
            err[2] = e.z;
        }
    }
    const int n = l->def.joint == SIM_ARTIC_FREE ? 0 : l->dof; // the base is not driven
    if (l->def.joint == SIM_ARTIC_FREE) {
        *dadd = 0.0f;
    }
    for (int k = 0; k < n; ++k) {
        tau[k] = l->kp * (err[k] - h * l->qd0[k]) - (l->kd + b) * l->qd0[k];
    }
}

// Table 7.1: qdd for every link, given the kinematics of the current
// coordinates. False when a joint's articulated inertia is singular.
static bool aba(sim_artic* a, float h, sim_vec3 gravity, bool inertias) {
    const uint32_t n = a->count;
    // Pass 1, outward: velocity-product accelerations and bias forces.
    for (uint32_t i = 0; i < n; ++i) {
        artic_link* l = &a->links[i];
        l->c = sp_cross_m(l->v, joint_velocity(l));
        if (inertias) {
            l->IA = l->I;
        }
        l->pA = sp_cross_f(l->v, sp_mat6_mul(&l->I, l->v));
    }
    // Pass 2, inward: articulated-body inertias (when asked: they depend on
    // the coordinates only, so a second pass at other velocities keeps
    // them) and bias forces.
    for (uint32_t i = n; i-- > 0;) {
        artic_link* l = &a->links[i];
        const int dof = l->dof;
        float tau[6];
        float dadd = 0.0f;
        drive_terms(l, h, tau, &dadd);
        if (inertias) {
            float D[6][6];
            for (int k = 0; k < dof; ++k) {
                l->U[k] = sp_mat6_mul(&l->IA, l->S[k]);
            }
            for (int r = 0; r < dof; ++r) {
                for (int k = 0; k < dof; ++k) {
                    D[r][k] = sp_dot(l->S[r], l->U[k]) + (r == k ? dadd : 0.0f);
                }
            }
            if (dof > 0 && !invert(dof, D, l->Dinv)) {
                a->inertias_valid = false;
                return false;
            }
            if (l->def.parent >= 0) {
                // Ia = IA − U D^-1 U^T, handed to the parent as X^T Ia X.
                l->Ia = l->IA;
                for (int r = 0; r < dof; ++r) {
                    float ur[6];
                    for (int p = 0; p < 6; ++p) {
                        ur[p] = sp_get(l->U[r], p);
                    }
                    for (int k = 0; k < dof; ++k) {
                        const float dk = l->Dinv[r][k];
                        if (dk == 0.0f) {
                            continue;
                        }
                        float uk[6];
                        for (int q = 0; q < 6; ++q) {
                            uk[q] = sp_get(l->U[k], q) * dk;
                        }
                        for (int p = 0; p < 6; ++p) {
                            for (int q = 0; q < 6; ++q) {
                                l->Ia.m[p][q] -= ur[p] * uk[q];
                            }
                        }
                    }
                }
                sp_inertia_add_back(&a->links[l->def.parent].IA, &l->X, &l->Ia);
            }
        }
        for (int k = 0; k < dof; ++k) {
            l->u[k] = tau[k] - sp_dot(l->S[k], l->pA);
        }
        if (l->def.parent < 0) {
            continue;
        }
        // pa = pA + Ia c + U D^-1 u.
        sp_vec pa = sp_add(l->pA, sp_mat6_mul(&l->Ia, l->c));
        for (int r = 0; r < dof; ++r) {
            float Du = 0.0f;
            for (int k = 0; k < dof; ++k) {
                Du += l->Dinv[r][k] * l->u[k];
            }
            pa = sp_add(pa, sp_scale(l->U[r], Du));
        }
        artic_link* p = &a->links[l->def.parent];
        p->pA = sp_add(p->pA, sp_xform_force_back(&l->X, pa));
    }
    // Pass 3, outward: accelerations. Gravity enters as the world frame's
    // acceleration −g (§5.3).
    const sp_vec a_world = sp(v3(0.0f, 0.0f, 0.0f), v3_scale(gravity, -1.0f));
    for (uint32_t i = 0; i < n; ++i) {
        artic_link* l = &a->links[i];
        const sp_vec ap = l->def.parent < 0 ? a_world : a->links[l->def.parent].a;
        const sp_vec a1 = sp_add(sp_xform_motion(&l->X, ap), l->c);
        float rhs[6];
        for (int k = 0; k < l->dof; ++k) {
            rhs[k] = l->u[k] - sp_dot(a1, l->U[k]);
        }
        sp_vec acc = a1;
        for (int r = 0; r < l->dof; ++r) {
            float q = 0.0f;
            for (int k = 0; k < l->dof; ++k) {
                q += l->Dinv[r][k] * rhs[k];
            }
            l->qdd[r] = q;
            acc = sp_add(acc, sp_scale(l->S[r], q));
        }
        l->a = acc;
    }
    if (inertias) {
        a->inertias_valid = true; // until the coordinates or the drives change
    }
    return true;
}

// Makes the articulated inertias (U, D⁻¹) those of the coordinates as they
// are, with the implicit drives' stiffness of the last step's length: an
// ABA pass unless they already are (they depend on neither the velocities
// nor gravity). False when one is singular.
static bool current_inertias(sim_artic* a) {
    if (a->inertias_valid) {
        return true;
    }
    for (uint32_t i = 0; i < a->count; ++i) {
        memcpy(a->links[i].qd0, a->links[i].qd, sizeof a->links[i].qd0);
    }
    return aba(a, a->last_h, v3(0.0f, 0.0f, 0.0f), true);
}

// ---------------------------------------------------------------------------
// Momentum
// ---------------------------------------------------------------------------

// Total spatial momentum about the world origin, world coordinates.
static sp_vec momentum(const sim_artic* a) {
    sp_vec h = sp_zero();
    for (uint32_t i = 0; i < a->count; ++i) {
        const artic_link* l = &a->links[i];
        h = sp_add(h, sp_xform_force_back(&l->Xw, sp_mat6_mul(&l->I, l->v)));
    }
    return h;
}

// The centre of mass of the whole tree (world) and the total mass.
static sim_vec3 centre_of_mass(const sim_artic* a, float* mass) {
    sim_vec3 c = v3(0.0f, 0.0f, 0.0f);
    float m = 0.0f;
    for (uint32_t i = 0; i < a->count; ++i) {
        const artic_link* l = &a->links[i];
        c = v3_add(c, v3_scale(v3_add(l->Xw.r, q_rotate(l->qw, l->def.com)), l->def.mass));
        m += l->def.mass;
    }
    *mass = m;
    return v3_scale(c, 1.0f / m);
}

// Linear momentum, and angular momentum about `point` (world), taken link
// by link about each one's centre of mass: Σ R·Ic·Rᵀω + m·(x − point) × v.
// (About a point near the tree, not the world origin, the sum does not
// cancel large x × p terms.)
static momentum6 momentum_about(const sim_artic* a, sim_vec3 point) {
    momentum6 h = {{0.0, 0.0, 0.0}, {0.0, 0.0, 0.0}};
    for (uint32_t i = 0; i < a->count; ++i) {
        const artic_link* l = &a->links[i];
        const sim_vec3 wb = l->v.ang; // body axes
        const sim_vec3 vb = v3_add(l->v.lin, v3_cross(wb, l->def.com));
        const sim_vec3 own = q_rotate(
            l->qw, v3(l->def.inertia.x * wb.x, l->def.inertia.y * wb.y, l->def.inertia.z * wb.z));
        const sim_vec3 x = v3_sub(v3_add(l->Xw.r, q_rotate(l->qw, l->def.com)), point);
        const sim_vec3 p = v3_scale(q_rotate(l->qw, vb), l->def.mass);
        const sim_vec3 lever = v3_cross(x, p);
        h.ang[0] += (double)own.x + (double)lever.x;
        h.ang[1] += (double)own.y + (double)lever.y;
        h.ang[2] += (double)own.z + (double)lever.z;
        h.lin[0] += (double)p.x;
        h.lin[1] += (double)p.y;
        h.lin[2] += (double)p.z;
    }
    return h;
}

// Sets a free base's velocity so that the linear momentum and the angular
// momentum about the centre of mass are `target` (momentum_about()'s form,
// about the centre of mass before the step, which a uniform gravity field
// does not turn): Δv = Ic^-1 Δh in the base's coordinates, Ic the
// composite rigid-body inertia of the whole tree (§6.2). About the centre
// of mass, not the world origin, so that the first-order error of the
// positions (r × p) is not fed back into the velocities.
static void keep_momentum(sim_artic* a, const momentum6* target) {
    float m;
    const sim_vec3 c = centre_of_mass(a, &m);
    const momentum6 now = momentum_about(a, c);
    const sp_vec dc =
        sp(v3((float)(target->ang[0] - now.ang[0]), (float)(target->ang[1] - now.ang[1]),
              (float)(target->ang[2] - now.ang[2])),
           v3((float)(target->lin[0] - now.lin[0]), (float)(target->lin[1] - now.lin[1]),
              (float)(target->lin[2] - now.lin[2])));
    for (uint32_t i = 0; i < a->count; ++i) {
        a->scratch[i] = a->links[i].I;
    }
    for (uint32_t i = a->count; i-- > 1;) {
        const artic_link* l = &a->links[i];
        sp_inertia_add_back(&a->scratch[l->def.parent], &l->X, &a->scratch[i]);
    }
    float Ic[6][6], inv[6][6];
    for (int r = 0; r < 6; ++r) {
        for (int k = 0; k < 6; ++k) {
            Ic[r][k] = a->scratch[0].m[r][k];
        }
    }
    if (!invert(6, Ic, inv)) {
        return;
    }
    // Δh from about c (world axes) to about the base's origin, base axes:
    // (E (n + (c − r) × f), E f).
    artic_link* base = &a->links[0];
    const sp_xform* X = &base->Xw;
    const sp_vec db = sp(m3_mul_v(&X->E, v3_add(dc.ang, v3_cross(v3_sub(c, X->r), dc.lin))),
                         m3_mul_v(&X->E, dc.lin));
    for (int r = 0; r < 6; ++r) {
        float s = 0.0f;
        for (int k = 0; k < 6; ++k) {
            s += inv[r][k] * sp_get(db, k);
        }
        base->qd[r] += s;
    }
}

// ---------------------------------------------------------------------------
// Joint-space impulses
// ---------------------------------------------------------------------------

void sim__artic_link_impulse(sim_artic* a, uint32_t j, const float dir[3], const sp_vec* force,
                             float lambda, bool add) {
    const uint32_t n = a->count;
    // Inward, from j to the root: the bias impulses p and the u they leave.
    for (uint32_t i = 0; i < n; ++i) {
        a->links[i].pA = sp_zero(); // reused as the impulse's bias
        memset(a->links[i].u, 0, sizeof a->links[i].u);
    }
    if (force != NULL) {
        a->links[j].pA = sp_scale(*force, -lambda);
        dir = NULL;
    }
    for (int32_t i = (int32_t)j; i >= 0; i = a->links[i].def.parent) {
        artic_link* l = &a->links[i];
        for (int r = 0; r < l->dof; ++r) {
            const float own = dir != NULL && (uint32_t)i == j && r < 3 ? lambda * dir[r] : 0.0f;
            l->u[r] = own - sp_dot(l->S[r], l->pA);
        }
        if (l->def.parent < 0) {
            break;
        }
        sp_vec pa = l->pA;
        for (int r = 0; r < l->dof; ++r) {
            float Du = 0.0f;
            for (int q = 0; q < l->dof; ++q) {
                Du += l->Dinv[r][q] * l->u[q];
            }
            pa = sp_add(pa, sp_scale(l->U[r], Du));
        }
        artic_link* p = &a->links[l->def.parent];
        p->pA = sp_add(p->pA, sp_xform_force_back(&l->X, pa));
    }
    // Outward: every link's velocity change.
    for (uint32_t i = 0; i < n; ++i) {
        artic_link* l = &a->links[i];
        const sp_vec ap = l->def.parent < 0 ? sp_zero() : a->links[l->def.parent].a;
        const sp_vec a1 = sp_xform_motion(&l->X, ap);
        float rhs[6];
        for (int r = 0; r < l->dof; ++r) {
            rhs[r] = l->u[r] - sp_dot(a1, l->U[r]);
        }
        sp_vec acc = a1;
        for (int r = 0; r < l->dof; ++r) {
            float dq = 0.0f;
            for (int q = 0; q < l->dof; ++q) {
                dq += l->Dinv[r][q] * rhs[q];
            }
            l->dq[r] = dq;
            if (add) {
                l->qd[r] += dq;
            }
            acc = sp_add(acc, sp_scale(l->S[r], dq));
        }
        l->a = acc; // reused as the velocity change
    }
}

// ---------------------------------------------------------------------------
// Step
// ---------------------------------------------------------------------------

// The rates a link's spin cap covers: a hinge's one, a ball joint's or
// free base's first three (its angular velocity); none for a fixed joint.
static int spin_dofs(const artic_link* l) {
    return l->def.joint == SIM_ARTIC_REVOLUTE ? 1 : l->dof >= 3 ? 3 : 0;
}

// A joint's rotation rate is capped at a quarter turn per step and the
// free base's speed at SIM_ARTIC_MAX_SPEED (Jolt's defaults: 0.25·π·60 ≈
// 47 rad/s at 60 Hz, and 500 m/s): beyond them the explicit
// velocity-product terms feed energy in faster than the step can follow,
// and the motion would blow up instead of being merely wrong. The factor
// (<= 1) each of a link's two caps asks for, for the rates qd: its spin
// (spin_dofs()) and its free base's speed.
static void cap_factors(const artic_link* l, const float* qd, float dt, float most, float* spin,
                        float* speed) {
    const float per_step = 0.25f * 3.14159265f / dt;
    const float max_rate = most > 0.0f && most < per_step ? most : per_step;
    const int n = spin_dofs(l);
    float sq = 0.0f;
    for (int k = 0; k < n; ++k) {
        sq += qd[k] * qd[k];
    }
    *spin = sq > max_rate * max_rate ? max_rate / sqrtf(sq) : 1.0f;
    *speed = 1.0f;
    if (l->def.joint == SIM_ARTIC_FREE) {
        const float lin = sqrtf(qd[3] * qd[3] + qd[4] * qd[4] + qd[5] * qd[5]);
        *speed = lin > SIM_ARTIC_MAX_SPEED ? SIM_ARTIC_MAX_SPEED / lin : 1.0f;
    }
}

// The links' kinetic energy, J (their velocities as they are).
static double kinetic_energy(const sim_artic* a) {
    double e = 0.0;
    for (uint32_t i = 0; i < a->count; ++i) {
        const artic_link* l = &a->links[i];
        e += 0.5 * (double)sp_dot(l->v, sp_mat6_mul(&l->I, l->v));
    }
    return e;
}

// Caps every link's rates (cap_factors()); the links' velocities follow.
// Joint rates are relative: capping one joint of a whipping chain but not
// its neighbours, which turned against it, can speed links up (a 100-link
// chain hit on its tip gained 400 times its energy in three ticks that
// way, then locked in a two-step cycle with every joint at the cap, still
// for good). So a cap never adds energy: when the capped motion has more
// kinetic energy than before, every rate is scaled down by one factor to
// the energy before (a uniform scale keeps the motion's direction, and
// every rate under its cap).
static void cap_all(sim_artic* a, float dt) {
    bool over = false;
    for (uint32_t i = 0; i < a->count && !over; ++i) {
        float spin, speed;
        cap_factors(&a->links[i], a->links[i].qd, dt, a->max_rate, &spin, &speed);
        over = spin < 1.0f || speed < 1.0f;
    }
    if (!over) {
        return;
    }
    sim__artic_velocities(a); // the rates may be newer than the velocities
    const double before = kinetic_energy(a);
    for (uint32_t i = 0; i < a->count; ++i) {
        artic_link* l = &a->links[i];
        float spin, speed;
        cap_factors(l, l->qd, dt, a->max_rate, &spin, &speed);
        for (int k = 0; k < spin_dofs(l); ++k) {
            l->qd[k] *= spin;
        }
        if (l->def.joint == SIM_ARTIC_FREE) {
            for (int k = 3; k < 6; ++k) {
                l->qd[k] *= speed;
            }
        }
    }
    sim__artic_velocities(a);
    const double after = kinetic_energy(a);
    if (after > before && after > 0.0) {
        const float f = (float)sqrt(before / after);
        for (uint32_t i = 0; i < a->count; ++i) {
            artic_link* l = &a->links[i];
            for (int k = 0; k < l->dof; ++k) {
                l->qd[k] *= f;
            }
        }
        sim__artic_velocities(a);
    }
}

// Whether the step's accelerations would change some joint's rate by
// more than ten times its cap (cap_factors()).
static bool saturated_step(const sim_artic* a, float dt) {
    for (uint32_t i = 0; i < a->count; ++i) {
        const artic_link* l = &a->links[i];
        float change[6];
        for (int k = 0; k < l->dof; ++k) {
            change[k] = 0.1f * dt * l->qdd[k];
        }
        float spin, speed;
        cap_factors(l, change, dt, a->max_rate, &spin, &speed);
        if (spin < 1.0f || speed < 1.0f) {
            return true;
        }
    }
    return false;
}

int sim_artic_step(sim_artic* a, float dt, sim_vec3 gravity) {
    return sim_artic_step_among(a, dt, gravity, NULL, 0);
}

static int check_partners(const sim_artic_partner* p, uint32_t count) {
    if (count > SIM_ARTIC_MAX_PARTNERS || (count > 0 && p == NULL)) {
        return SIM_E_INVALID_ARG;
    }
    for (uint32_t k = 0; k < count; ++k) {
        if (!sim__finite3(p[k].a) || !sim__finite3(p[k].b) || !isfinite(p[k].radius) ||
            !sim__finite3(p[k].com) || !sim__finite3(p[k].v) || !sim__finite3(p[k].w) ||
            !isfinite(p[k].inv_mass) || !sim__finite4(p[k].rotation) ||
            !sim__finite3(p[k].inv_inertia)) {
            return SIM_E_NOT_FINITE;
        }
        if (!(p[k].radius > 0.0f && p[k].radius <= 10.0f) || p[k].inv_mass < 0.0f ||
            p[k].inv_inertia.x < 0.0f || p[k].inv_inertia.y < 0.0f || p[k].inv_inertia.z < 0.0f ||
            fabsf(q_dot(p[k].rotation, p[k].rotation) - 1.0f) > 1e-3f) {
            return SIM_E_OUT_OF_RANGE;
        }
    }
    return SIM_OK;
}

int sim_artic_step_among(sim_artic* a, float dt, sim_vec3 gravity, sim_artic_partner* partners,
                         uint32_t partner_count) {
    if (!isfinite(dt) || !sim__finite3(gravity)) {
        return SIM_E_NOT_FINITE;
    }
    if (!(dt > 0.0f && dt <= 0.1f) || fabsf(gravity.x) > 1000.0f || fabsf(gravity.y) > 1000.0f ||
        fabsf(gravity.z) > 1000.0f) {
        return SIM_E_OUT_OF_RANGE;
    }
    int rc = check_partners(partners, partner_count);
    if (rc != SIM_OK) {
        return rc;
    }
    a->last_h = dt;
    const bool free_base = a->links[0].def.joint == SIM_ARTIC_FREE;
    momentum6 target = {{0.0, 0.0, 0.0}, {0.0, 0.0, 0.0}};
    sim_vec3 com_before = v3(0.0f, 0.0f, 0.0f);
    float total_mass = 0.0f;
    if (free_base) {
        // The momentum to keep: now's plus gravity's impulse over the step
        // (M·g·dt, and no moment about the centre of mass).
        com_before = centre_of_mass(a, &total_mass);
        target = momentum_about(a, com_before);
        target.lin[0] += (double)gravity.x * (double)total_mass * (double)dt;
        target.lin[1] += (double)gravity.y * (double)total_mass * (double)dt;
        target.lin[2] += (double)gravity.z * (double)total_mass * (double)dt;
    }
    // Rates over the cap (an impulse between steps can leave a limb
    // spinning at thousands of rad/s) are capped before the dynamics see
    // them: their velocity-product terms would swamp the step. A free
    // base's momentum, taken above, stays whole: the cap takes spin, not
    // the blow's momentum.
    cap_all(a, dt);
    for (uint32_t i = 0; i < a->count; ++i) {
        memcpy(a->links[i].qd0, a->links[i].qd, sizeof a->links[i].qd0);
    }
    // Two passes: the first gives the accelerations at the step's start;
    // the second evaluates the velocity-product terms (Coriolis,
    // centrifugal, gyroscopic) at the midpoint velocity qd + ½·h·qdd.
    // With them at the start velocity, semi-implicit Euler gains energy
    // O(h) (+70 % in 10 s for a whipping chain at 60 Hz); at the midpoint it
    // holds it within about 1 % (tests/unit/test_articulation.c).
    bool ok = aba(a, dt, gravity, true);
    if (ok) {
        for (uint32_t i = 0; i < a->count; ++i) {
            artic_link* l = &a->links[i];
            for (int k = 0; k < l->dof; ++k) {
                l->qd[k] = l->qd0[k] + 0.5f * dt * l->qdd[k];
            }
        }
        sim__artic_velocities(a);
        ok = aba(a, dt, gravity, false);
    }
    for (uint32_t i = 0; ok && i < a->count; ++i) {
        const artic_link* l = &a->links[i];
        for (int k = 0; k < l->dof; ++k) {
            ok = ok && isfinite(l->qd0[k] + dt * l->qdd[k]);
        }
    }
    if (!ok) {
        for (uint32_t i = 0; i < a->count; ++i) {
            memcpy(a->links[i].qd, a->links[i].qd0, sizeof a->links[i].qd);
        }
        sim__artic_velocities(a);
        return SIM_E_NOT_FINITE;
    }
    // Velocities; the limits' impulses; then coordinates with the new
    // velocities. A step whose forces would change some joint's rate by
    // more than ten times its cap cannot follow the motion: the explicit
    // velocity-product terms of a chain whipping at the cap (every joint
    // at 47 rad/s) change rates by 10^6 rad/s a step, the cap then flips
    // every joint between +cap and −cap, and the chain locks in a two-step
    // cycle, moving nowhere (a fresh user's chain, hit by ±500 N·s thirty
    // times, held 1.8 MJ that way). Such a step keeps half the rates it
    // started with instead: a brake that takes three quarters of the
    // kinetic energy a step until the motion is one the step can follow
    // (the 100-link chain whipping after a 50 N·s hit changes its rates by
    // 220 rad/s a step at most, a humanoid's limbs at the cap by about 10).
    const bool saturated = saturated_step(a, dt);
    for (uint32_t i = 0; i < a->count; ++i) {
        artic_link* l = &a->links[i];
        for (int k = 0; k < l->dof; ++k) {
            l->qd[k] = saturated ? 0.5f * l->qd0[k] : l->qd0[k] + dt * l->qdd[k];
        }
    }
    if (saturated) {
        sim__artic_velocities(a);
    }
    // Capped before the contacts see them, and after: a limb hit hard
    // must not meet the ground at thousands of m/s, or the ground's
    // impulse (kept in a free base's momentum) would throw the body.
    cap_all(a, dt);
    // Contacts, then limits, twice (artic_contact.c).
    sim__artic_solve_contacts_and_limits(a, dt, partners, partner_count, free_base ? &target : NULL,
                                         com_before, 2);
    cap_all(a, dt);
    for (uint32_t i = 0; i < a->count; ++i) {
        artic_link* l = &a->links[i];
        switch (l->def.joint) {
        case SIM_ARTIC_REVOLUTE:
            // The drive's torque with its implicit part, at the new rate.
            l->drive_torque =
                l->kp * (l->target_angle - l->angle - dt * l->qd[0]) - l->kd * l->qd[0];
            l->angle += dt * l->qd[0];
            break;
        case SIM_ARTIC_SPHERICAL:
            l->rot = q_normalize(
                q_mul(l->rot, q_from_rotvec(v3_scale(v3(l->qd[0], l->qd[1], l->qd[2]), dt))));
            break;
        case SIM_ARTIC_FREE: {
            const sim_vec3 vb = v3(l->qd[3], l->qd[4], l->qd[5]);
            l->pos = v3_add(l->pos, v3_scale(q_rotate(l->rot, vb), dt));
            l->rot = q_normalize(
                q_mul(l->rot, q_from_rotvec(v3_scale(v3(l->qd[0], l->qd[1], l->qd[2]), dt))));
            break;
        }
        default:
            break;
        }
    }
    sim__artic_kinematics(a);
    if (free_base) {
        // Twice: the second takes out what float round-off left of the
        // first (about 10^-5 of the momentum a step, which would otherwise
        // wander).
        keep_momentum(a, &target);
        sim__artic_kinematics(a);
        keep_momentum(a, &target);
        // The centre of mass moves as a particle of the whole mass would
        // (semi-implicit Euler, c' = c + h·p'/M); the base is moved by what
        // the positions' first-order error put elsewhere, so that the
        // angular momentum about the world origin (c × p) is kept too.
        float m;
        const sim_vec3 p = v3((float)target.lin[0], (float)target.lin[1], (float)target.lin[2]);
        const sim_vec3 want = v3_add(com_before, v3_scale(p, dt / total_mass));
        sim_vec3 off = v3_sub(want, centre_of_mass(a, &m));
        // A correction, never a move of its own: at most what the fastest
        // base could go in the step.
        const float most = SIM_ARTIC_MAX_SPEED * dt, moved = v3_len(off);
        if (!(moved <= most)) {
            off = moved > 0.0f ? v3_scale(off, most / moved) : v3(0.0f, 0.0f, 0.0f);
        }
        artic_link* base = &a->links[0];
        base->pos = v3_add(base->pos, q_rotate_inv(base->def.frame, off));
        sim__artic_kinematics(a);
    }
    return SIM_OK;
}

// ---------------------------------------------------------------------------
// Coordinates, drives, queries
// ---------------------------------------------------------------------------

static int link_of(const sim_artic* a, uint32_t link, sim_artic_joint joint) {
    if (link >= a->count) {
        return SIM_E_BAD_INDEX;
    }
    return a->links[link].def.joint == joint ? SIM_OK : SIM_E_INVALID_ARG;
}

int sim_artic_set_angle(sim_artic* a, uint32_t link, float angle, float rate) {
    int rc = link_of(a, link, SIM_ARTIC_REVOLUTE);
    if (rc != SIM_OK) {
        return rc;
    }
    if (!isfinite(angle) || !isfinite(rate)) {
        return SIM_E_NOT_FINITE;
    }
    a->links[link].angle = angle;
    a->links[link].qd[0] = rate;
    sim__artic_kinematics(a);
    return SIM_OK;
}

int sim_artic_get_angle(const sim_artic* a, uint32_t link, float* angle, float* rate) {
    int rc = link_of(a, link, SIM_ARTIC_REVOLUTE);
    if (rc == SIM_OK) {
        *angle = a->links[link].angle;
        *rate = a->links[link].qd[0];
    }
    return rc;
}

int sim_artic_set_rotation(sim_artic* a, uint32_t link, sim_quat rotation, sim_vec3 omega) {
    int rc = link_of(a, link, SIM_ARTIC_SPHERICAL);
    if (rc != SIM_OK) {
        return rc;
    }
    if (!sim__finite4(rotation) || !sim__finite3(omega)) {
        return SIM_E_NOT_FINITE;
    }
    if (q_dot(rotation, rotation) < 1e-12f) {
        return SIM_E_INVALID_ARG;
    }
    artic_link* l = &a->links[link];
    l->rot = q_normalize(rotation);
    l->qd[0] = omega.x;
    l->qd[1] = omega.y;
    l->qd[2] = omega.z;
    sim__artic_kinematics(a);
    return SIM_OK;
}

int sim_artic_get_rotation(const sim_artic* a, uint32_t link, sim_quat* rotation, sim_vec3* omega) {
    int rc = link_of(a, link, SIM_ARTIC_SPHERICAL);
    if (rc == SIM_OK) {
        const artic_link* l = &a->links[link];
        *rotation = l->rot;
        *omega = v3(l->qd[0], l->qd[1], l->qd[2]);
    }
    return rc;
}

int sim_artic_set_base(sim_artic* a, sim_vec3 position, sim_quat rotation, sim_vec3 velocity,
                       sim_vec3 omega) {
    const bool fixed = a->links[0].def.joint == SIM_ARTIC_FIXED;
    int rc = fixed ? SIM_OK : link_of(a, 0, SIM_ARTIC_FREE);
    if (rc != SIM_OK) {
        return rc;
    }
    if (!sim__finite3(position) || !sim__finite4(rotation) || !sim__finite3(velocity) ||
        !sim__finite3(omega)) {
        return SIM_E_NOT_FINITE;
    }
    if (q_dot(rotation, rotation) < 1e-12f) {
        return SIM_E_INVALID_ARG;
    }
    artic_link* l = &a->links[0];
    if (fixed) {
        // Its joint frame is where it is welded: moved, it stays there.
        l->def.anchor = position;
        l->def.frame = q_normalize(rotation);
        l->XT = sp_xform_from(l->def.frame, l->def.anchor);
        sim__artic_kinematics(a);
        return SIM_OK;
    }
    // The base's joint frame is the world turned by def.frame at def.anchor;
    // its coordinates are relative to that frame.
    const sim_quat rel = q_normalize(q_mul(q_conj(l->def.frame), rotation));
    l->pos = q_rotate_inv(l->def.frame, v3_sub(position, l->def.anchor));
    l->rot = rel;
    const sim_vec3 wb = q_rotate_inv(rotation, omega);
    const sim_vec3 vb = q_rotate_inv(rotation, velocity);
    l->qd[0] = wb.x;
    l->qd[1] = wb.y;
    l->qd[2] = wb.z;
    l->qd[3] = vb.x;
    l->qd[4] = vb.y;
    l->qd[5] = vb.z;
    sim__artic_kinematics(a);
    return SIM_OK;
}

int sim_artic_set_drive(sim_artic* a, uint32_t link, float kp, float kd, float target_angle,
                        sim_quat target_rotation) {
    if (link >= a->count) {
        return SIM_E_BAD_INDEX;
    }
    artic_link* l = &a->links[link];
    if (l->def.joint != SIM_ARTIC_REVOLUTE && l->def.joint != SIM_ARTIC_SPHERICAL) {
        return SIM_E_INVALID_ARG;
    }
    if (!isfinite(kp) || !isfinite(kd) || !isfinite(target_angle) ||
        !sim__finite4(target_rotation)) {
        return SIM_E_NOT_FINITE;
    }
    if (!(kp >= 0.0f && kp <= 1e9f && kd >= 0.0f && kd <= 1e9f)) {
        return SIM_E_OUT_OF_RANGE;
    }
    if (l->def.joint == SIM_ARTIC_SPHERICAL && q_dot(target_rotation, target_rotation) < 1e-12f) {
        return SIM_E_INVALID_ARG;
    }
    l->kp = kp;
    l->kd = kd;
    a->inertias_valid = false; // the implicit stiffness is in D
    l->target_angle = target_angle;
    l->target_rot =
        l->def.joint == SIM_ARTIC_SPHERICAL ? q_normalize(target_rotation) : q_identity();
    return SIM_OK;
}

int sim_artic_set_env(sim_artic* a, bool ground, const sim_box* boxes, uint32_t count,
                      float friction) {
    if (count > SIM_ARTIC_MAX_BOXES || (count > 0 && boxes == NULL)) {
        return SIM_E_INVALID_ARG;
    }
    if (!isfinite(friction)) {
        return SIM_E_NOT_FINITE;
    }
    if (!(friction >= 0.0f && friction <= 10.0f)) {
        return SIM_E_OUT_OF_RANGE;
    }
    for (uint32_t k = 0; k < count; ++k) {
        if (!sim__finite3(boxes[k].center) || !sim__finite3(boxes[k].half_extents)) {
            return SIM_E_NOT_FINITE;
        }
        if (!(boxes[k].half_extents.x > 0.0f && boxes[k].half_extents.y > 0.0f &&
              boxes[k].half_extents.z > 0.0f)) {
            return SIM_E_OUT_OF_RANGE;
        }
    }
    a->ground = ground;
    a->friction = friction;
    a->box_count = count;
    if (count > 0) {
        memcpy(a->boxes, boxes, count * sizeof *boxes);
    }
    return SIM_OK;
}

int sim_artic_set_max_rate(sim_artic* a, float rate) {
    if (!isfinite(rate)) {
        return SIM_E_NOT_FINITE;
    }
    if (!(rate >= 0.0f && rate <= 1e4f)) {
        return SIM_E_OUT_OF_RANGE;
    }
    a->max_rate = rate;
    return SIM_OK;
}

int sim_artic_set_restitution(sim_artic* a, float e) {
    if (!isfinite(e)) {
        return SIM_E_NOT_FINITE;
    }
    if (!(e >= 0.0f && e <= 1.0f)) {
        return SIM_E_OUT_OF_RANGE;
    }
    a->restitution = e;
    return SIM_OK;
}

uint32_t sim_artic_contact_count(const sim_artic* a) {
    return a->contacts;
}

int sim_artic_set_limits(sim_artic* a, uint32_t link, float lower, float upper) {
    int rc = link_of(a, link, SIM_ARTIC_REVOLUTE);
    if (rc != SIM_OK) {
        return rc;
    }
    if (isnan(lower) || isnan(upper)) {
        return SIM_E_NOT_FINITE;
    }
    artic_link* l = &a->links[link];
    if (isinf(lower) && isinf(upper) && lower < 0.0f && upper > 0.0f) {
        l->limited = false;
        return SIM_OK;
    }
    if (!(lower <= upper) || lower < -1e3f || upper > 1e3f) {
        return SIM_E_OUT_OF_RANGE;
    }
    l->limited = true;
    l->lower = lower;
    l->upper = upper;
    a->any_limits = true;
    return SIM_OK;
}

int sim_artic_set_cone(sim_artic* a, uint32_t link, sim_vec3 bone, sim_vec3 axis1, float swing1,
                       float swing2, float twist_min, float twist_max) {
    int rc = link_of(a, link, SIM_ARTIC_SPHERICAL);
    if (rc != SIM_OK) {
        return rc;
    }
    if (!sim__finite3(bone) || !sim__finite3(axis1) || !isfinite(swing1) || !isfinite(swing2) ||
        !isfinite(twist_min) || !isfinite(twist_max)) {
        return SIM_E_NOT_FINITE;
    }
    const sim_vec3 b = v3_normalize(bone);
    // axis1 made perpendicular to the bone.
    const sim_vec3 a1 = v3_normalize(v3_sub(axis1, v3_scale(b, v3_dot(axis1, b))));
    if (v3_dot(b, b) < 0.5f || v3_dot(a1, a1) < 0.5f) {
        return SIM_E_INVALID_ARG;
    }
    const float pi = 3.14159265f;
    if (!(swing1 > 0.0f && swing1 <= pi && swing2 > 0.0f && swing2 <= pi &&
          twist_min <= twist_max && twist_min >= -pi && twist_max <= pi)) {
        return SIM_E_OUT_OF_RANGE;
    }
    artic_link* l = &a->links[link];
    l->coned = true;
    l->bone = b;
    l->axis1 = a1;
    l->axis2 = v3_cross(b, a1);
    l->swing1 = swing1;
    l->swing2 = swing2;
    l->twist_min = twist_min;
    l->twist_max = twist_max;
    a->any_limits = true;
    return SIM_OK;
}

int sim_artic_cone_angles(const sim_artic* a, uint32_t link, float* twist, float* swing) {
    int rc = link_of(a, link, SIM_ARTIC_SPHERICAL);
    if (rc != SIM_OK) {
        return rc;
    }
    const artic_link* l = &a->links[link];
    if (!l->coned) {
        return SIM_E_BAD_STATE;
    }
    sim_vec3 r;
    sim__artic_cone_angles(l, twist, &r);
    // How far out of its cone the swing is: 1 on the ellipse.
    const float c1 = v3_dot(r, l->axis1) / l->swing1;
    const float c2 = v3_dot(r, l->axis2) / l->swing2;
    *swing = sqrtf(c1 * c1 + c2 * c2);
    return SIM_OK;
}

int sim_artic_limit_impulse(const sim_artic* a, uint32_t link, float* impulse) {
    if (link < a->count && a->links[link].def.joint == SIM_ARTIC_SPHERICAL) {
        *impulse = a->links[link].limit_impulse;
        return SIM_OK;
    }
    int rc = link_of(a, link, SIM_ARTIC_REVOLUTE);
    if (rc == SIM_OK) {
        *impulse = a->links[link].limit_impulse;
    }
    return rc;
}

int sim_artic_drive_torque(const sim_artic* a, uint32_t link, float* torque) {
    int rc = link_of(a, link, SIM_ARTIC_REVOLUTE);
    if (rc == SIM_OK) {
        *torque = a->links[link].drive_torque;
    }
    return rc;
}

int sim_artic_link_pose(const sim_artic* a, uint32_t link, sim_vec3* position, sim_quat* rotation) {
    if (link >= a->count) {
        return SIM_E_BAD_INDEX;
    }
    *position = a->links[link].Xw.r;
    *rotation = a->links[link].qw;
    return SIM_OK;
}

int sim_artic_link_motion(const sim_artic* a, uint32_t link, sim_vec3* com, sim_vec3* velocity,
                          sim_vec3* omega) {
    if (link >= a->count) {
        return SIM_E_BAD_INDEX;
    }
    const artic_link* l = &a->links[link];
    *com = v3_add(l->Xw.r, q_rotate(l->qw, l->def.com));
    *omega = q_rotate(l->qw, l->v.ang);
    *velocity = q_rotate(l->qw, v3_add(l->v.lin, v3_cross(l->v.ang, l->def.com)));
    return SIM_OK;
}

double sim_artic_energy(const sim_artic* a, sim_vec3 gravity) {
    double e = 0.0;
    for (uint32_t i = 0; i < a->count; ++i) {
        const artic_link* l = &a->links[i];
        const sp_vec Iv = sp_mat6_mul(&l->I, l->v);
        const sim_vec3 x = v3_add(l->Xw.r, q_rotate(l->qw, l->def.com));
        e += 0.5 * (double)sp_dot(l->v, Iv) - (double)l->def.mass * (double)v3_dot(gravity, x);
    }
    return e;
}

void sim_artic_momentum(const sim_artic* a, sim_vec3* linear, sim_vec3* angular) {
    const sp_vec h = momentum(a);
    *linear = h.lin;
    *angular = h.ang;
}

// ---------------------------------------------------------------------------
// Impulses and state
// ---------------------------------------------------------------------------

int sim_artic_apply_impulse(sim_artic* a, uint32_t link, sim_vec3 point, sim_vec3 impulse) {
    if (link >= a->count) {
        return SIM_E_BAD_INDEX;
    }
    if (!sim__finite3(point) || !sim__finite3(impulse)) {
        return SIM_E_NOT_FINITE;
    }
    artic_link* l = &a->links[link];
    const sim_vec3 r = v3_sub(point, l->Xw.r);
    if (fabsf(impulse.x) > SIM_MAX_IMPULSE || fabsf(impulse.y) > SIM_MAX_IMPULSE ||
        fabsf(impulse.z) > SIM_MAX_IMPULSE || !(v3_len(r) <= 1e4f)) {
        return SIM_E_OUT_OF_RANGE;
    }
    if (!current_inertias(a)) {
        return SIM_E_NOT_FINITE;
    }
    // The impulse in link coordinates: (r × p, p) about the link's origin.
    const sim_vec3 pl = q_rotate_inv(l->qw, impulse);
    const sim_vec3 rl = q_rotate_inv(l->qw, r);
    const sp_vec f = sp(v3_cross(rl, pl), pl);
    sim__artic_link_impulse(a, link, NULL, &f, 1.0f, true);
    sim__artic_velocities(a);
    return SIM_OK;
}

int sim_artic_point_mass(sim_artic* a, uint32_t link, sim_vec3 point, sim_vec3 dir, float* mass) {
    if (link >= a->count || mass == NULL) {
        return SIM_E_BAD_INDEX;
    }
    if (!sim__finite3(point) || !sim__finite3(dir)) {
        return SIM_E_NOT_FINITE;
    }
    const float n = v3_len(dir);
    if (!(n > 1e-6f)) {
        return SIM_E_OUT_OF_RANGE;
    }
    artic_link* l = &a->links[link];
    if (!current_inertias(a)) {
        return SIM_E_NOT_FINITE;
    }
    // A unit impulse along dir at the point, and the point's velocity
    // change along dir it causes (the link's spatial velocity change, a).
    const sim_vec3 d = q_rotate_inv(l->qw, v3_scale(dir, 1.0f / n));
    const sim_vec3 r = q_rotate_inv(l->qw, v3_sub(point, l->Xw.r));
    const sp_vec f = sp(v3_cross(r, d), d);
    sim__artic_link_impulse(a, link, NULL, &f, 1.0f, false);
    const float k = sp_dot(l->a, f);
    *mass = k > 1e-9f ? 1.0f / k : 1e9f;
    return SIM_OK;
}

void sim_artic_stop(sim_artic* a) {
    for (uint32_t i = 0; i < a->count; ++i) {
        memset(a->links[i].qd, 0, sizeof a->links[i].qd);
    }
    sim__artic_kinematics(a);
}

uint32_t sim_artic_get_state(const sim_artic* a, float* out, uint32_t cap) {
    const uint32_t need = 1 + a->count * SIM_ARTIC_STATE_FLOATS;
    if (out == NULL || cap < need) {
        return need;
    }
    out[0] = a->last_h;
    for (uint32_t i = 0; i < a->count; ++i) {
        const artic_link* l = &a->links[i];
        float* o = out + 1 + (size_t)i * SIM_ARTIC_STATE_FLOATS;
        const float v[SIM_ARTIC_STATE_FLOATS] = {
            l->angle,       l->rot.x,        l->rot.y,        l->rot.z,        l->rot.w,
            l->pos.x,       l->pos.y,        l->pos.z,        l->qd[0],        l->qd[1],
            l->qd[2],       l->qd[3],        l->qd[4],        l->qd[5],        l->kp,
            l->kd,          l->target_angle, l->target_rot.x, l->target_rot.y, l->target_rot.z,
            l->target_rot.w};
        memcpy(o, v, sizeof v);
    }
    return need;
}

int sim_artic_set_state(sim_artic* a, const float* state, uint32_t count) {
    if (state == NULL || count != 1 + a->count * SIM_ARTIC_STATE_FLOATS) {
        return SIM_E_INVALID_ARG;
    }
    for (uint32_t k = 0; k < count; ++k) {
        if (!isfinite(state[k])) {
            return SIM_E_NOT_FINITE;
        }
    }
    if (!(state[0] > 0.0f && state[0] <= 0.1f)) {
        return SIM_E_OUT_OF_RANGE;
    }
    for (uint32_t i = 0; i < a->count; ++i) {
        const float* s = state + 1 + (size_t)i * SIM_ARTIC_STATE_FLOATS;
        const float n2 = s[1] * s[1] + s[2] * s[2] + s[3] * s[3] + s[4] * s[4];
        const float t2 = s[17] * s[17] + s[18] * s[18] + s[19] * s[19] + s[20] * s[20];
        if (!(fabsf(n2 - 1.0f) < 1e-3f) || !(fabsf(t2 - 1.0f) < 1e-3f) ||
            !(s[14] >= 0.0f && s[14] <= 1e9f && s[15] >= 0.0f && s[15] <= 1e9f)) {
            return SIM_E_OUT_OF_RANGE;
        }
    }
    a->last_h = state[0];
    for (uint32_t i = 0; i < a->count; ++i) {
        artic_link* l = &a->links[i];
        const float* s = state + 1 + (size_t)i * SIM_ARTIC_STATE_FLOATS;
        l->angle = s[0];
        l->rot = (sim_quat){s[1], s[2], s[3], s[4]};
        l->pos = v3(s[5], s[6], s[7]);
        memcpy(l->qd, s + 8, sizeof l->qd);
        l->kp = s[14];
        l->kd = s[15];
        l->target_angle = s[16];
        l->target_rot = (sim_quat){s[17], s[18], s[19], s[20]};
    }
    sim__artic_kinematics(a);
    return SIM_OK;
}
