/*
 * artic.h: private structures and functions of the reduced-coordinate
 * articulations (sim_articulation.h), shared by articulation.c (creation,
 * kinematics, the ABA, the step, impulses), artic_limits.c (joint limits)
 * and artic_contact.c (contacts).
 */
#pragma once

#include "rigid.h"
#include "sim_articulation.h"
#include "spatial.h"

#include <math.h>

typedef struct artic_link {
    sim_artic_link_def def; // normalised
    int dof;
    uint32_t at; // its first DOF among the articulation's (link order)
    sp_vec S[6]; // motion subspace, link coordinates (constant for these joints)
    sp_xform XT; // parent frame → joint frame (fixed)
    sp_mat6 I;   // rigid-body inertia about the link's origin, link coordinates
    // Coordinates and velocities.
    float angle;  // REVOLUTE
    sim_quat rot; // SPHERICAL, FREE: the link's axes in the joint frame
    sim_vec3 pos; // FREE: the link's origin in the joint frame (the world)
    float qd[6];
    float qd0[6]; // qd at the start of the step (the drive's explicit part)
    // Drive.
    float kp, kd;
    float target_angle;
    sim_quat target_rot;
    float drive_torque;
    // Hinge range (sim_artic_set_limits()).
    bool limited;
    float lower, upper;
    // Ball joint cone (sim_artic_set_cone()): twist about `bone`, an
    // elliptic swing cone of half-angles swing1 about axis1 and swing2
    // about axis2 = bone × axis1 (all unit, the joint frame's = the link's
    // at rotation identity).
    bool coned;
    sim_vec3 bone, axis1, axis2;
    float swing1, swing2, twist_min, twist_max;
    float limit_impulse; // accumulated this step, N·m·s
    float dq[6];         // scratch: a joint impulse's velocity change
    float qdf[6];        // the velocities before the limits' impulses
    // Kinematics of the current coordinates (kinematics()).
    sp_xform X;  // parent (or world) → link
    sp_xform Xw; // world → link
    sim_quat qw; // the link's rotation in the world
    sp_vec v;    // spatial velocity, link coordinates
    // The ABA's per-step quantities.
    sp_vec c, pA, a;
    sp_mat6 IA;
    sp_mat6 Ia; // IA − U D^-1 U^T, what the parent inherits
    sp_vec U[6];
    float Dinv[6][6];
    float u[6];
    float qdd[6];
} artic_link;

struct sim_artic {
    sim_allocator alloc;
    size_t bytes;
    uint32_t count;
    // What the links collide with (sim_artic_set_env()).
    bool ground;
    float friction;
    uint32_t box_count;
    sim_box boxes[SIM_ARTIC_MAX_BOXES];
    uint32_t contacts;                               // last step's
    sim_artic_strike strikes[SIM_ARTIC_MAX_STRIKES]; // last step's (artic_contact.c)
    uint32_t strike_count;
    uint32_t max_contacts; // contact points one step solves (sim_artic_create())
    bool any_limits;       // a hinge range or a cone is set on some link
    float last_h;          // the last step's length, s (1/240 before the first)
    float restitution;     // sim_artic_set_restitution()
    float max_rate;        // sim_artic_set_max_rate(); 0: a quarter turn per step
    bool inertias_valid;   // U and D⁻¹ are of the coordinates and drives as they are
    artic_link* links;
    sp_mat6* scratch; // count composite inertias (momentum())
    uint32_t ndof;    // DOFs of all joints
    // Contact rows (artic_contact.c), 3 × max_contacts × ndof each:
    // each row's Jacobian (its rate = jac·qd) and response (the joint
    // velocity change per unit impulse, M⁻¹·jacᵀ); and ndof floats of the
    // solve's velocity change.
    float* jac;
    float* resp;
    float* dqsum;
};

static inline bool sim__finite3(sim_vec3 v) {
    return isfinite(v.x) && isfinite(v.y) && isfinite(v.z);
}

static inline bool sim__finite4(sim_quat q) {
    return isfinite(q.x) && isfinite(q.y) && isfinite(q.z) && isfinite(q.w);
}

/// Momentum summed in double: each link's part is small, the whole may not
/// be, and a free base's correction is only as good as this sum.
typedef struct momentum6 {
    double ang[3]; ///< About the point it was taken at, kg·m²/s.
    double lin[3]; ///< kg·m/s.
} momentum6;

/// Transforms and velocities of every link from the coordinates (outward).
void sim__artic_kinematics(sim_artic* a);

/// The links' velocities from the joint velocities, the transforms as they are.
void sim__artic_velocities(sim_artic* a);

/// The change of every joint velocity that an impulse through link j
/// causes, through the articulated inertias of the step's first ABA pass
/// (Featherstone 2008 §7.3 with the velocities, gravity and other forces
/// zero: Mirtich 1996's impulse propagation, the implicit drives'
/// stiffness in D as the step has it), into each link's dq and its
/// velocity change into a; added to qd when `add`. Either a joint impulse
/// `lambda` (N·m·s) along `dir` (its DOFs' components: (1) for a hinge, an
/// axis in the link's frame for a ball joint) when force is NULL, or a
/// spatial impulse lambda·force (link j's coordinates) from outside the
/// tree (a contact), which enters as a bias of −force. O(n).
void sim__artic_link_impulse(sim_artic* a, uint32_t j, const float dir[3], const sp_vec* force,
                             float lambda, bool add);

/// A ball joint's rotation split into a twist angle about its bone (rad)
/// and the swing's rotation vector (joint frame) (artic_limits.c).
void sim__artic_cone_angles(const artic_link* l, float* twist, sim_vec3* swing);

/// Joint limits (artic_limits.c): see sim_artic_set_limits().
void sim__artic_solve_limits(sim_artic* a, float dt);

/// Contacts with the environment and the partners, then the joint
/// limits, `rounds` times (artic_contact.c): see sim_artic_set_env() and
/// sim_artic_step_among(). Impulses from outside the tree are added to
/// *external (world axes, about `com`) when it is not NULL.
void sim__artic_solve_contacts_and_limits(sim_artic* a, float dt, sim_artic_partner* partners,
                                          uint32_t partner_count, momentum6* external, sim_vec3 com,
                                          int rounds);
