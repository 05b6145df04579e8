/*
 * rigid.h: private structures and functions of the rigid-body part of the
 * simulator: the skeleton library (library.c), bodies (body.c) and joints
 * (joint.c) solved as XPBD rigid bodies (Müller et al. 2020, "Detailed
 * Rigid Body Simulation with Extended Position Based Dynamics"), the broad
 * phase (broad_phase.c), contacts (contact.c), the rigid substep
 * (solver.c) and characters (character.c).
 *
 * Body frames: a bone's body frame sits at its capsule centre with local +X
 * along the capsule (head → tail in the bind pose). A ball's frame is its
 * centre. Joint frames: local +X is the twist axis (the bone for a ball
 * joint, the hinge axis for a hinge), +Y the swing1 axis.
 */
#pragma once

#include "quat.h"
#include "sim.h"

#define SIM__MAX_SKELETONS 16
#define SIM__MAX_CLIPS     64
#define SIM__NO_BODY       UINT32_MAX

// ---------------------------------------------------------------------------
// Bone sets
// ---------------------------------------------------------------------------

/// A set of a skeleton's bones (bit i: bone i), SIM_MAX_BONES wide.
typedef struct sim__bones {
    uint32_t w[SIM_MAX_BONES / 32];
} sim__bones;

static inline bool sim__bones_has(const sim__bones* s, uint32_t i) {
    return i < SIM_MAX_BONES && ((s->w[i >> 5] >> (i & 31u)) & 1u) != 0;
}

static inline void sim__bones_add(sim__bones* s, uint32_t i) {
    s->w[i >> 5] |= 1u << (i & 31u);
}

/// s ∪= o.
static inline void sim__bones_merge(sim__bones* s, const sim__bones* o) {
    for (uint32_t k = 0; k < SIM_MAX_BONES / 32; ++k) {
        s->w[k] |= o->w[k];
    }
}

static inline bool sim__bones_empty(const sim__bones* s) {
    uint32_t any = 0;
    for (uint32_t k = 0; k < SIM_MAX_BONES / 32; ++k) {
        any |= s->w[k];
    }
    return any == 0;
}

// ---------------------------------------------------------------------------
// Library
// ---------------------------------------------------------------------------

/// A clip as stored: rotations converted to each bone's local frame.
typedef struct sim__clip {
    char name[SIM_NAME_MAX];
    bool loop;
    uint32_t key_count;
    float duration;
    float* times;
    sim_vec3* root_pos;
    sim_quat* root_rot; ///< Model-space rotation of the root relative to its bind pose.
    sim_quat* rot;      ///< key_count × bone_count local rotations (bone frame).
} sim__clip;

/// A skeleton with everything derived from its bind pose.
typedef struct sim__skel {
    sim_skeleton_def def;
    sim_vec3 bind_x[SIM_MAX_BONES]; ///< Body centre in model space.
    sim_quat bind_q[SIM_MAX_BONES]; ///< Body orientation in model space.
    float half_len[SIM_MAX_BONES];  ///< Half the capsule's segment, m.
    float mass[SIM_MAX_BONES];
    sim_vec3 inertia[SIM_MAX_BONES]; ///< Principal moments in the body frame, kg·m².
    // Joint of bone i to its parent (i > 0).
    sim_vec3 anchor_p[SIM_MAX_BONES];     ///< Joint point in the parent's body frame.
    sim_vec3 anchor_c[SIM_MAX_BONES];     ///< Joint point in the bone's body frame.
    sim_quat frame_p[SIM_MAX_BONES];      ///< Joint frame in the parent's body frame.
    sim_quat frame_c[SIM_MAX_BONES];      ///< Joint frame in the bone's body frame.
    sim_quat local_q[SIM_MAX_BONES];      ///< Bind orientation relative to the parent.
    sim__bones no_collide[SIM_MAX_BONES]; ///< Holds j: bones i and j never collide.
    sim__bones children[SIM_MAX_BONES];   ///< Holds j: j is a descendant of i.
    sim__clip* clips[SIM__MAX_CLIPS];
    uint32_t clip_count;
    uint64_t hash; ///< sim__skel_hash() of it as it is: set when it or a clip is added.
} sim__skel;

struct sim_library {
    sim__skel* skels[SIM__MAX_SKELETONS];
    uint32_t skel_count;
};

/// FNV-1a (64-bit) of n bytes, continuing from h (SIM__FNV_BASIS to
/// start): the state hash (inspect.c) and the skeletons' content hash.
#define SIM__FNV_BASIS 0xcbf29ce484222325ull
uint64_t sim__fnv1a(uint64_t h, const void* data, size_t n);

/// A skeleton's content hash (library.c): FNV-1a over what a world's
/// continuation reads of it (bones, joints, garments, bind pose, and every
/// clip's name and keys), name strings up to their NUL, so two processes
/// that load the same asset files agree.
uint64_t sim__skel_hash(const sim__skel* sk);

/// The skeleton of that name, or NULL.
const sim__skel* sim__library_skel(const sim_library* lib, const char* name);

/// The skeleton's clip of that name, or NULL.
const sim__clip* sim__skel_clip(const sim__skel* sk, const char* name);

/// Samples a clip at time t (s; wrapped for looping clips, clamped
/// otherwise): root position and rotation in the character frame, and each
/// bone's local rotation.
void sim__clip_sample(const sim__skel* sk, const sim__clip* clip, float t, sim_vec3* root_pos,
                      sim_quat* root_rot, sim_quat* local);

/// Forward kinematics: body poses in the world from a sampled clip and the
/// character's origin and yaw.
void sim__skel_pose(const sim__skel* sk, sim_vec3 origin, float yaw, sim_vec3 root_pos,
                    sim_quat root_rot, const sim_quat* local, sim_vec3* x, sim_quat* q);

// ---------------------------------------------------------------------------
// Bodies and joints
// ---------------------------------------------------------------------------

/// A rigid body's state (hot data).
typedef struct sim__body {
    sim_vec3 x;           ///< Centre, m.
    sim_quat q;           ///< Orientation.
    sim_vec3 v;           ///< Linear velocity, m/s.
    sim_vec3 w;           ///< Angular velocity (world), rad/s.
    sim_vec3 x_prev;      ///< Position at the start of the substep.
    sim_quat q_prev;      ///< Orientation at the start of the substep.
    sim_vec3 v_pre;       ///< Velocity before the substep's solve (restitution).
    sim_vec3 w_pre;       ///< Angular velocity before the substep's solve.
    float inv_mass;       ///< 1/kg; 0 for a kinematic body.
    sim_vec3 inv_inertia; ///< Principal inverse moments in the body frame; 0 if kinematic.
    /// Inverse inertia in the world frame (xx, yy, zz, xy, xz, yz), for the
    /// orientation at the start of the substep (sim__body_update_inertia).
    float iw[6];
} sim__body;

/// I⁻¹v with the body's world-frame inverse inertia b->iw.
static inline sim_vec3 sim__inv_inertia_mul(const sim__body* b, sim_vec3 v) {
    const float* m = b->iw;
    return v3(m[0] * v.x + m[3] * v.y + m[4] * v.z, m[3] * v.x + m[1] * v.y + m[5] * v.z,
              m[4] * v.x + m[5] * v.y + m[2] * v.z);
}

/// Recomputes b->iw from b->q and b->inv_inertia: once per substep, and
/// whenever a body turns dynamic or kinematic.
void sim__body_update_inertia(sim__body* b);

/// A rigid body's fixed facts (cold data).
typedef struct sim__body_info {
    float radius;   ///< Capsule or sphere radius, m.
    float half_len; ///< Half the capsule's segment along local +X, m (0: a sphere).
    float mass;     ///< kg, kept to restore inv_mass when a bone turns dynamic.
    sim_vec3 inertia;
    uint32_t slot; ///< Owning entity's slot.
    uint32_t bone; ///< Bone index within its character (0 for a ball).
} sim__body_info;

/// A joint's accumulated soft-step impulses (soft_joint.c), kept from one
/// tick to the next for the warm start: N·s for the point, N·m·s for the
/// angular rows.
typedef struct sim__joint_impulses {
    sim_vec3 lin;
    float twist_lo, twist_hi; ///< Twist (hinge) range ends.
    float swing;              ///< Swing cone.
    float swing_y, swing_z;   ///< Locked swing axes (hinge, fixed).
    float drive;
} sim__joint_impulses;

/// A joint between a bone and its parent, indices local to the entity.
typedef struct sim__bjoint {
    uint32_t parent, child;
    sim_vec3 anchor_p, anchor_c;
    sim_quat frame_p, frame_c;
    uint32_t kind; ///< sim_joint_kind.
    float swing1, swing2, twist_min, twist_max;
    /// Derived from the limits by sim__bjoint_limits(), so the clamp needs
    /// no trigonometry unless a limit is hit: sin of the half swings, and
    /// tan, sin and cos of the half twist limits.
    float sin_half_swing1, sin_half_swing2;
    float tan_half_tmin, tan_half_tmax;
    float sin_half_tmin, cos_half_tmin, sin_half_tmax, cos_half_tmax;
    float kp, kd;             ///< Drive gains in effect, N·m/rad and N·m·s/rad.
    sim_quat target;          ///< Drive target: relative rotation of the joint frames.
    float friction;           ///< Passive joint friction torque, N·m (Coulomb).
    sim__joint_impulses warm; ///< Soft step: last tick's impulses.
} sim__bjoint;

/// Fills j's derived limit fields from swing1, swing2, twist_min and
/// twist_max (radians; twist limits within (-π, π)).
void sim__bjoint_limits(sim__bjoint* j);

/// The joint's relative rotation: (q_p·frame_p)⁻¹ (q_c·frame_c).
sim_quat sim__joint_relative(const sim__body* p, const sim__body* c, const sim__bjoint* j);

/// Clamps a relative rotation to a joint's swing-twist limits (Jolt's
/// decomposition: twist about +X in [twist_min, twist_max], swing inside the
/// ellipse of half-angle-sines sin(swing1/2), sin(swing2/2)). Returns true
/// when it had to clamp.
bool sim__joint_clamp(const sim__bjoint* j, sim_quat rel, sim_quat* clamped);

/// Solves one joint's position-level constraints for one substep of length
/// h: the attachment (the two anchors coincide), the swing-twist limits and,
/// with kp > 0, the PD drive as a compliant angular constraint (compliance
/// 1/kp, torque capped at SIM_MAX_DRIVE_TORQUE) when `drive` is set.
/// Müller et al. 2020 §3.3-3.4.
void sim__joint_solve(sim__body* p, sim__body* c, const sim__bjoint* j, float h, bool drive);

/// Projects one joint's limits, then its attachment, at the position level
/// (compliance 0), skipping a correction smaller than its tolerance: a limit
/// excess under tol_ang (rad), a gap under tol_lin (m). Moves poses only.
/// The limit's correction turns both bodies about its axis, the child about
/// its anchor and the parent about its centre, shared by their inverse
/// moments about those points; the attachment's is XPBD's (Müller et al.
/// 2020 §3.3, eq. 2-7). Returns the larger excess before correction in units
/// of its tolerance (<= 1: nothing was moved); 0 when neither body can move.
/// Box2D v2.4's NGS joint position pass.
float sim__joint_project(sim__body* p, sim__body* c, const sim__bjoint* j, float tol_lin,
                         float tol_ang);

/// Velocity-level damping of one joint: the drive's τ = -kd·ω_rel, implicit
/// so it is stable at any gain, then passive Coulomb friction (at most
/// j->friction) against what relative rotation is left.
void sim__joint_damp(sim__body* p, sim__body* c, const sim__bjoint* j, float h);

/// Applies a positional correction `corr` (m) between a point r1 (world
/// offset from the centre) of body b1 and a point r2 of body b2: b1's point
/// moves along +corr, b2's along -corr, shared by generalised inverse
/// masses (Müller et al. 2020, eq. 2-7). b2 may be NULL (static). Returns
/// the impulse magnitude (N·s·s, the λ increment). The fraction `still` of
/// the correction moves the bodies' start-of-substep poses too, so it
/// creates no velocity (a push-out of old penetration, not a collision).
float sim__apply_positional(sim__body* b1, sim__body* b2, sim_vec3 r1, sim_vec3 r2, sim_vec3 corr,
                            float compliance, float h, float still);

/// Applies an angular correction: b1 turns by +rot (rad, world rotation
/// vector), b2 by -rot, shared by generalised inverse inertias (eq. 11-13).
/// `max_lambda` > 0 caps the impulse. Returns the impulse magnitude.
float sim__apply_angular(sim__body* b1, sim__body* b2, sim_vec3 rot, float compliance, float h,
                         float max_lambda);

/// Generalised inverse mass of body b for a unit direction n at world offset
/// r (r = 0 for the angular one with `angular` set): 1/m + (r×n)ᵀI⁻¹(r×n),
/// or nᵀI⁻¹n.
float sim__inv_mass_at(const sim__body* b, sim_vec3 r, sim_vec3 n, bool angular);

/// Applies an angular impulse L (N·m·s, world) to a and -L to b (either may
/// be NULL or kinematic, and then does not move).
void sim__apply_angular_impulse(sim__body* a, sim__body* b, sim_vec3 L);

/// Applies an impulse p (N·s) at world offset r to b's velocities.
void sim__apply_impulse_at(sim__body* b, sim_vec3 r, sim_vec3 p);

/// Closest points cp on segment p0-p1 and cq on q0-q1 (Ericson, Real-Time
/// Collision Detection, §5.1.9); degenerate segments are points.
/// Contact of a sphere (centre p, radius r) with a static box: the normal
/// out of the box, the depth, and the contact point on the box's surface;
/// false when they do not touch (contact.c).
bool sim__sphere_box(sim_vec3 p, float r, const sim_box* bx, sim_vec3* n, float* depth,
                     sim_vec3* on_box);

void sim__closest_segments(sim_vec3 p0, sim_vec3 p1, sim_vec3 q0, sim_vec3 q1, sim_vec3* cp,
                           sim_vec3* cq);

/// Capsule segment end points of a body in the world.
void sim__body_segment(const sim__body* b, const sim__body_info* bi, sim_vec3* p0, sim_vec3* p1);

// ---------------------------------------------------------------------------
// Contacts
// ---------------------------------------------------------------------------

/// Finds candidate body pairs for this tick (a uniform hash grid over
/// bounding boxes swept by each body's velocity over dt), each body's
/// closing speed (w->closing), and wakes sleeping islands a moving body
/// reaches.
void sim__contacts_begin_tick(sim_world* w, float dt);

/// One pass over the substep's contacts: positional corrections along the
/// normal and static friction; accumulates what the velocity pass needs.
void sim__contacts_solve(sim_world* w, float h);

/// Velocity pass of the substep's contacts: restitution and dynamic
/// (Coulomb) friction (Müller et al. 2020, §3.5-3.6).
void sim__contacts_velocities(sim_world* w, float h);
