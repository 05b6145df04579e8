/*
 * sim_articulation.h: articulated bodies in reduced coordinates (issue 13;
 * seed 004, "Two ways to solve the motion").
 *
 * An articulation is a tree of rigid links whose degrees of freedom are its
 * joints' coordinates: a hinge's angle, a ball joint's rotation, the
 * floating base's pose. Joints cannot come apart: a link's pose is computed
 * from its parent's and its joint's coordinate, so the gap at every joint
 * is zero by construction (the maximal-coordinate bodies of sim.h hold
 * their joints by constraints, which a hard hit can stretch).
 *
 * Forward dynamics is Featherstone's Articulated-Body Algorithm (R.
 * Featherstone, "Rigid Body Dynamics Algorithms", Springer 2008, §7.3,
 * Table 7.1): an outward pass for velocities and velocity-product terms,
 * an inward pass for articulated-body inertias and bias forces, an outward
 * pass for accelerations; O(n) in the number of links. It is integrated
 * semi-implicitly (velocities first, then coordinates with them), a ball
 * joint's and the free base's rotation by the exponential map of their
 * body-frame angular velocity. Each step runs the ABA twice: the second
 * evaluates the velocity-product terms (Coriolis, centrifugal,
 * gyroscopic) at the midpoint velocity the first gives, which keeps the
 * energy of a fast-whipping chain at 60 Hz within about 1 % over 10 s
 * (at the start velocity it grows by tens of percent). PD drives and joint damping are implicit in
 * the joint velocity (their stiffness and damping are added to the joint's
 * articulated inertia, D += h·kd + h²·kp), so high gains stay stable.
 *
 * A free-floating articulation's momentum is kept exactly: after each
 * step its base's velocity is set so that the linear momentum and the
 * angular momentum about the centre of mass equal the previous step's plus
 * gravity's impulse, and its position so that the centre of mass moved as
 * one particle of the whole mass would (semi-implicit Euler in joint
 * coordinates alone lets them drift by O(h)).
 *
 * Units: SI, +Y up (sim.h). Frames: a link's frame has its origin at the
 * joint to its parent; the base's at its pose in the world.
 *
 * Threading: an articulation is single-threaded; distinct ones share
 * nothing. Errors: negative SIM_E_* codes (sim.h); on error nothing
 * changes.
 */
#pragma once

#include "sim.h"

#ifdef __cplusplus
extern "C" {
#endif

/// Most links in one articulation.
#define SIM_ARTIC_MAX_LINKS 4096

/// Fastest a free base's origin moves (m/s); each joint's rotation rate is
/// capped at a quarter turn per step, 0.25·π/dt rad/s (47 rad/s at 60 Hz),
/// as Jolt caps its bodies: beyond them the step cannot follow the motion.
/// A cap never adds kinetic energy: rates are relative, so capping one
/// joint of a whipping chain can speed links up; then every rate is scaled
/// down by one factor to the energy before the cap.
#define SIM_ARTIC_MAX_SPEED 500.0f

/// The joint that holds a link to its parent (or the base to the world).
typedef enum sim_artic_joint {
    SIM_ARTIC_FIXED = 0,     ///< Welded: no coordinate.
    SIM_ARTIC_REVOLUTE = 1,  ///< A hinge: one angle (rad) about `axis`.
    SIM_ARTIC_SPHERICAL = 2, ///< A ball joint: a unit quaternion, 3 DOF.
    SIM_ARTIC_FREE = 3,      ///< The base only: floating, position + rotation, 6 DOF.
} sim_artic_joint;

/// One link and the joint to its parent. Fill from
/// sim_artic_link_def_default().
typedef struct sim_artic_link_def {
    /// Index of the parent link, which must come earlier in the array; -1
    /// for the base (link 0, and only link 0), whose parent is the world.
    int32_t parent;
    sim_artic_joint joint; ///< FREE only for the base.
    /// Where the joint is in the parent's frame (m); for the base, in the
    /// world. The joint frame is the parent's frame moved there and turned
    /// by `frame`; the link's frame is the joint frame moved by the joint's
    /// coordinate (turned by the hinge angle or ball rotation, or placed by
    /// the free base's pose).
    sim_vec3 anchor;
    sim_quat frame; ///< Unit (normalised on create; zero is refused).
    sim_vec3 axis;  ///< REVOLUTE: the hinge axis in the joint frame (normalised; zero refused).
    float mass;     ///< kg, in (0, 10^6].
    sim_vec3 com;   ///< Centre of mass in the link's frame (m), |each| <= 100.
    /// Principal moments of inertia about the centre of mass along the
    /// link's axes (kg·m²), each > 0 and each at most the sum of the other
    /// two (a real body's).
    sim_vec3 inertia;
    float damping; ///< Joint viscous friction, N·m·s/rad per DOF, >= 0 (implicit).
    /// The link's shape for contacts: a capsule around the segment from
    /// capsule_a to capsule_b (link frame, m; equal for a sphere) of
    /// `radius` (m, [0, 10]; 0: the link does not collide).
    sim_vec3 capsule_a, capsule_b;
    float radius;
} sim_artic_link_def;

/// A link def with parent -1, a FIXED joint at the origin, identity frame,
/// axis +Z, 1 kg, com at the origin, inertia 0.01 kg·m² on each axis, no
/// damping, no shape.
sim_artic_link_def sim_artic_link_def_default(void);

typedef struct sim_artic sim_artic;

/// Builds an articulation from `count` link defs (1..SIM_ARTIC_MAX_LINKS),
/// every coordinate zero (hinges at angle 0, ball joints and the base
/// unrotated; a free base at its anchor) and at rest. The defs are copied.
/// `alloc` may be NULL (sim_allocator_default()). Returns 0 and *out (free
/// with sim_artic_destroy()), or SIM_E_INVALID_ARG (a parent out of order,
/// a second root, FREE not on the base, an unknown joint kind, a zero
/// axis or frame), SIM_E_NOT_FINITE, SIM_E_OUT_OF_RANGE (mass, inertia,
/// com, damping), SIM_E_NOMEM.
int sim_artic_create(const sim_artic_link_def* links, uint32_t count, const sim_allocator* alloc,
                     sim_artic** out);

/// Frees an articulation; NULL is allowed.
void sim_artic_destroy(sim_artic* a);

/// Number of links.
uint32_t sim_artic_link_count(const sim_artic* a);

/// Advances by dt seconds (0, 0.1] under gravity (m/s², each component
/// within ±1000): forward dynamics (ABA, twice), then the velocities, then
/// the coordinates. The error is first order in dt: call it several times
/// per tick for fast motion (4 substeps at 60 Hz hold a chaotic double
/// pendulum's energy within 2.4 % over 10 s, one step within 11 %).
/// Returns 0, SIM_E_OUT_OF_RANGE or SIM_E_NOT_FINITE (the articulation is
/// then unchanged).
int sim_artic_step(sim_artic* a, float dt, sim_vec3 gravity);

/// Something that moves and that the links may touch: a capsule (the
/// segment a–b, world, m, a = b for a sphere, of `radius` m > 0) of a rigid
/// body with centre of mass `com` (world, m), velocity `v` (m/s) and
/// angular velocity `w` (rad/s, world axes), inverse mass `inv_mass`
/// (1/kg; 0: it is not moved, as an animated bone) and inverse principal
/// moments `inv_inertia` (1/(kg·m²)) along the axes of `rotation` (unit).
/// sim_artic_step_among() solves its contacts with the links together
/// with the environment's and writes its new v and w back: the impulses
/// the links take, it takes opposite (Newton's third law), so the two
/// together keep their momentum. `user` is the caller's.
typedef struct sim_artic_partner {
    sim_vec3 a, b;
    float radius;
    sim_vec3 com, v, w;
    float inv_mass;
    sim_quat rotation;
    sim_vec3 inv_inertia;
    uint32_t user;
} sim_artic_partner;

/// Most partners one step looks at.
#define SIM_ARTIC_MAX_PARTNERS 64

/// sim_artic_step() among `count` partners (at most SIM_ARTIC_MAX_PARTNERS;
/// NULL with 0 is sim_artic_step()): a link capsule within 5 cm of a
/// partner's makes one contact at their closest points, solved with the
/// ground's and the boxes' (sim_artic_set_env(); its friction), the
/// partner's inverse mass and inertia in the contact's matrix, so a light
/// ball bounces off a heavy limb and a heavy one carries a light limb away.
/// Partners are read for their state at the step's start (they do not
/// move during it) and only their v and w change. Errors as
/// sim_artic_step(), and SIM_E_INVALID_ARG (too many, NULL with a count),
/// SIM_E_NOT_FINITE or SIM_E_OUT_OF_RANGE (a partner's radius not in (0,
/// 10], an inverse mass or moment negative): then nothing changes.
int sim_artic_step_among(sim_artic* a, float dt, sim_vec3 gravity, sim_artic_partner* partners,
                         uint32_t count);

/// Applies an impulse (N·s, world axes) at a world point (m) on a link:
/// every joint velocity changes by the joint-space response M⁻¹·Jᵀ·p
/// (impulse propagation through the articulated inertias, Mirtich 1996,
/// O(n)), as a hit would. SIM_E_BAD_INDEX, SIM_E_NOT_FINITE,
/// SIM_E_OUT_OF_RANGE (a component over SIM_MAX_IMPULSE or the point more
/// than 10 km from the link).
int sim_artic_apply_impulse(sim_artic* a, uint32_t link, sim_vec3 point, sim_vec3 impulse);

/// The mass (kg) a point of a link seems to have along `dir` (world; any
/// length but zero): 1 / (the point's velocity change along dir per unit
/// impulse along dir), through the articulated inertia, as a contact with
/// it feels. Changes no coordinate or velocity (the step's scratch only).
/// SIM_E_BAD_INDEX, SIM_E_NOT_FINITE, SIM_E_OUT_OF_RANGE (a zero dir).
int sim_artic_point_mass(sim_artic* a, uint32_t link, sim_vec3 point, sim_vec3 dir, float* mass);

/// Floats per link in sim_artic_get_state(): a hinge's angle, a ball
/// joint's or the base's rotation (x, y, z, w), the base's position (x, y,
/// z), the joint's velocities (six, the DOFs' first ones used), and its
/// drive: kp, kd, the target angle and the target rotation (x, y, z, w).
#define SIM_ARTIC_STATE_FLOATS 21

/// Copies the last step's length (s; it sets the implicit drives' part of
/// the response to sim_artic_apply_impulse()), then the coordinates and
/// velocities of every link (link order, SIM_ARTIC_STATE_FLOATS each) into
/// out[0 .. cap): what a step continues from, with the drives (their gains
/// also set the articulated inertia another body's contact feels,
/// sim_artic_point_mass()), besides the limits (set by their own calls)
/// and the environment. Returns the floats
/// a whole copy needs, 1 + links × SIM_ARTIC_STATE_FLOATS (copying only
/// when cap is at least that).
uint32_t sim_artic_get_state(const sim_artic* a, float* out, uint32_t cap);

/// Puts back what sim_artic_get_state() copied, so the next steps are the
/// ones the copy's articulation would have taken, bit for bit.
/// SIM_E_INVALID_ARG for a count that is not the articulation's,
/// SIM_E_NOT_FINITE, SIM_E_OUT_OF_RANGE (a rotation not near unit): then
/// nothing changes.
int sim_artic_set_state(sim_artic* a, const float* state, uint32_t count);

/// Stops it where it is: every joint's velocities (a free base's too) set
/// to zero, the coordinates kept (a sleeping articulation's rest).
void sim_artic_stop(sim_artic* a);

/// A hinge's angle (rad) and rate (rad/s). SIM_E_BAD_INDEX for no such
/// link, SIM_E_INVALID_ARG for a link whose joint is not REVOLUTE,
/// SIM_E_NOT_FINITE.
int sim_artic_set_angle(sim_artic* a, uint32_t link, float angle, float rate);
int sim_artic_get_angle(const sim_artic* a, uint32_t link, float* angle, float* rate);

/// A ball joint's rotation (unit; normalised) of its link relative to its
/// joint frame, and the link's angular velocity relative to its parent in
/// the link's own axes (rad/s). Errors as for the hinge (SPHERICAL only).
int sim_artic_set_rotation(sim_artic* a, uint32_t link, sim_quat rotation, sim_vec3 omega);
int sim_artic_get_rotation(const sim_artic* a, uint32_t link, sim_quat* rotation, sim_vec3* omega);

/// A free base's pose in the world and its velocity: `velocity` of its
/// frame's origin and `omega`, both in world axes. A FIXED base is welded
/// at the new pose instead (its anchor and frame; the velocities are
/// ignored: it does not move). SIM_E_INVALID_ARG when the base is
/// REVOLUTE or SPHERICAL.
int sim_artic_set_base(sim_artic* a, sim_vec3 position, sim_quat rotation, sim_vec3 velocity,
                       sim_vec3 omega);

/// A PD drive on a link's joint (seed 004: τ = kp·(θ_target − θ) − kd·θ̇),
/// implicit in the joint velocity. REVOLUTE: target_angle (rad); SPHERICAL:
/// target_rotation (unit; normalised), the error being the rotation vector
/// from the current rotation to the target in the link's axes. kp in
/// N·m/rad and kd in N·m·s/rad, each in [0, 10^9]; kp = kd = 0 removes it.
/// SIM_E_INVALID_ARG for a FIXED or FREE joint.
int sim_artic_set_drive(sim_artic* a, uint32_t link, float kp, float kd, float target_angle,
                        sim_quat target_rotation);

/// Most hinge limits solved together in one step (the first in link
/// order; the rest wait for the next step).
#define SIM_ARTIC_MAX_LIMIT_ROWS 64

/// Times the hinge limits are solved again in one step when the impulses
/// of one solve carry another hinge past a bound.
#define SIM_ARTIC_LIMIT_PASSES 4

/// A hinge's range: its angle stays in [lower, upper] (rad, each within
/// ±1000, lower <= upper); −∞ and +∞ together remove the range. Enforced
/// each step as a one-sided velocity constraint in joint space: when the
/// next angle θ + h·θ̇ could pass a bound, an impulse through the
/// articulated inertia (which moves the whole tree, as a hit would) sets
/// the rate that lands exactly on it; the stop is inelastic. All the
/// hinges near a bound are solved together, exactly (a linear
/// complementarity problem over their joint-space inverse inertia, by
/// active sets), so limits that push on each other hold too: an angle
/// never passes its bound by more than float round-off (3·10^-8 rad in the
/// tests' chain of eight hinges whipped at 12 rad/s), unless more than
/// SIM_ARTIC_MAX_LIMIT_ROWS are near their bounds in one step, the rows
/// change more than SIM_ARTIC_LIMIT_PASSES times, or the joint's rate cap
/// (a quarter turn per step) cuts the rate the solve set. The solve costs
/// two impulse propagations (O(n) each) per row and pass.
/// An angle already outside (set so) is brought back at the rate that
/// reaches the bound in one step. SIM_E_INVALID_ARG for a joint that is
/// not REVOLUTE, SIM_E_NOT_FINITE (NaN), SIM_E_OUT_OF_RANGE.
int sim_artic_set_limits(sim_artic* a, uint32_t link, float lower, float upper);

/// A ball joint's limits, swing-twist (as sim_bone_def's ball joints): its
/// rotation q (link relative to joint frame) is split into a twist about
/// `bone` (the link's long axis, link frame; normalised) and a swing of the
/// bone, q = swing · twist (q made w >= 0 first, so q and −q give the same
/// split, PhysX #140); the twist stays in [twist_min, twist_max] (rad, within
/// ±π) and the swing's rotation vector r within the ellipse (r·axis1/swing1)²
/// + (r·axis2/swing2)² <= 1, axis1 made perpendicular to the bone, axis2 =
/// bone × axis1, swing1 and swing2 half-angles in (0, π]; a twist range of
/// [−π, π] is no twist limit (the angle wraps there), swing half-angles of π
/// no cone. Solved with the hinge limits (sim_artic_set_limits()): the twist
/// to float round-off, the swing linearised about its direction at the step's
/// start: its curvature in one step is what may pass the cone (2 % of the
/// cone in the tests' rod thrown spinning at 60 Hz × 4 substeps).
/// SIM_E_INVALID_ARG for a joint that is not SPHERICAL or a zero bone, or an
/// axis1 along it, SIM_E_NOT_FINITE, SIM_E_OUT_OF_RANGE.
int sim_artic_set_cone(sim_artic* a, uint32_t link, sim_vec3 bone, sim_vec3 axis1, float swing1,
                       float swing2, float twist_min, float twist_max);

/// A ball joint's twist angle (rad) and how far its swing is out along the
/// cone (0 at the joint frame, 1 on the ellipse). SIM_E_BAD_STATE without
/// a cone.
int sim_artic_cone_angles(const sim_artic* a, uint32_t link, float* twist, float* swing);

/// The impulse (N·m·s) the joint's limits applied in the last step: a
/// hinge's > 0 at the lower bound, < 0 at the upper, 0 when it did not
/// touch; a ball joint's, the sum of its twist's and swing's (signed along
/// each row's direction).
int sim_artic_limit_impulse(const sim_artic* a, uint32_t link, float* impulse);

/// The torque the drive on a link's hinge exerted in the last step (N·m),
/// with its implicit part: kp·(θ_target − θ − h·θ̇') − kd·θ̇' at the step's
/// new rate θ̇'. 0 without a drive. REVOLUTE only.
int sim_artic_drive_torque(const sim_artic* a, uint32_t link, float* torque);

/// Most static boxes an articulation collides with, and most contact
/// points solved in one step: one per link and one more (a chain lying on
/// the ground touches it at every joint), at least SIM_ARTIC_MIN_CONTACTS
/// and at most SIM_ARTIC_MAX_CONTACTS, and no more than 4 MiB of contact
/// rows (each contact has a normal and two friction rows, of a Jacobian
/// and a response over every DOF: 24 bytes a DOF a contact). When more
/// touch, the deepest are solved.
#define SIM_ARTIC_MAX_BOXES    64
#define SIM_ARTIC_MIN_CONTACTS 48
#define SIM_ARTIC_MAX_CONTACTS 128

/// Projected Gauss-Seidel sweeps over the contacts' dense matrix each round
/// at most (contacts and limits are solved in turn, twice a step), and the
/// rate change (m/s) under which a sweep ends them early: no row's impulse
/// moved its own rate by as much.
#define SIM_ARTIC_CONTACT_SWEEPS    48
#define SIM_ARTIC_CONTACT_TOLERANCE 1e-4f

/// A link that struck the ground, a box or a partner in the last step: a
/// contact that pushed and was closing faster than SIM_ARTIC_STRIKE_SPEED
/// before the step's solve (the world reports them as impacts).
typedef struct sim_artic_strike {
    uint32_t link;   ///< The link that struck.
    int32_t partner; ///< The partner struck (sim_artic_step_among()), or -1: the ground or a box.
    sim_vec3 point;  ///< On the link's surface, world, m.
    sim_vec3 normal; ///< Out of what was struck, unit.
    float speed;     ///< Closing speed along the normal before the solve, m/s.
} sim_artic_strike;

/// Slowest strike kept, m/s.
#define SIM_ARTIC_STRIKE_SPEED 0.5f
/// Most strikes one step keeps (the fastest; one a link and what it struck).
#define SIM_ARTIC_MAX_STRIKES 16u

/// Copies the last step's strikes (at most cap) into out; their count.
uint32_t sim_artic_strikes(const sim_artic* a, sim_artic_strike* out, uint32_t cap);

/// What an articulation's links collide with: the ground plane y = 0 and
/// static boxes (copied, at most SIM_ARTIC_MAX_BOXES), with Coulomb
/// friction `friction` ([0, 10]). Contacts are inelastic unless
/// sim_artic_set_restitution() says otherwise. Each step, after the
/// velocities: each capsule end within 5 cm of a surface is a contact with
/// the surface it is deepest into (an end where its parent's capsule, as
/// wide, ends is the parent's contact: a chain has one a joint), and the
/// segment's point nearest a box whose edge it lies across (away from its
/// ends) with the deepest such box; at most the articulation's contact
/// count (SIM_ARTIC_MAX_CONTACTS), the deepest. A contact's normal impulse
/// (>= 0) makes the point's normal velocity land it on the surface
/// (pushing out of a penetration at up to 2 m/s), its friction impulses
/// (within ±friction × the normal's, a pyramid) stop it sliding; all are
/// solved together through the articulated inertia (the joint-space
/// response to a unit impulse at each contact, Kokkevis 2004, "Practical
/// Physics for Articulated Characters": one propagation, O(links), a
/// contact row, built once a step), by projected Gauss-Seidel
/// (SIM_ARTIC_CONTACT_SWEEPS sweeps), then the joint limits, and both
/// again. A humanoid-shaped articulation dropped on stairs is at rest by
/// 6 s (every link slower than 0.05 m/s), though it still creeps by a few
/// mm/s: articulations do not sleep on their own (a world's reduced
/// characters do, reduced.c). Returns 0, SIM_E_INVALID_ARG (count over
/// the maximum, boxes NULL with a count), SIM_E_NOT_FINITE,
/// SIM_E_OUT_OF_RANGE (friction, a box's extents not positive).
int sim_artic_set_env(sim_artic* a, bool ground, const sim_box* boxes, uint32_t count,
                      float friction);

/// Caps every joint's rotation rate (rad/s, [0, 10^4]) lower than a quarter
/// turn per step, whatever the step (0, the default: a quarter turn per
/// step). What the cap takes is lost, and it never adds energy
/// (SIM_ARTIC_MAX_SPEED). A character's articulation is capped
/// at 0.25·π·60 ≈ 47 rad/s, as a maximal bone is (and Jolt's bodies): at a
/// quarter turn per 1/240 s step a limb hit hard keeps 16 times the
/// energy, which its contacts turn into a throw of the whole body.
/// SIM_E_NOT_FINITE, SIM_E_OUT_OF_RANGE.
int sim_artic_set_max_rate(sim_artic* a, float rate);

/// Closing speed (m/s) over which a contact bounces.
#define SIM_ARTIC_BOUNCE_SPEED 1.0f

/// The coefficient of restitution e ([0, 1]; 0, inelastic, until set) of
/// the links' contacts: a contact whose point closes faster than
/// SIM_ARTIC_BOUNCE_SPEED leaves at e times its closing speed (Newton's
/// law of restitution, as Box2D's threshold). SIM_E_NOT_FINITE,
/// SIM_E_OUT_OF_RANGE.
int sim_artic_set_restitution(sim_artic* a, float e);

/// Contacts in the last step.
uint32_t sim_artic_contact_count(const sim_artic* a);

/// A link's frame in the world: its origin (m) and rotation.
int sim_artic_link_pose(const sim_artic* a, uint32_t link, sim_vec3* position, sim_quat* rotation);

/// A link's centre of mass in the world (m) and its velocity (m/s), and its
/// angular velocity (rad/s, world axes).
int sim_artic_link_motion(const sim_artic* a, uint32_t link, sim_vec3* com, sim_vec3* velocity,
                          sim_vec3* omega);

/// Kinetic energy plus potential energy in `gravity` (J), the potential
/// zero at y = 0 for gravity along −Y (in general −m·g·x at each centre of
/// mass x).
double sim_artic_energy(const sim_artic* a, sim_vec3 gravity);

/// Total linear momentum (kg·m/s) and angular momentum about the world
/// origin (kg·m²/s), both in world axes.
void sim_artic_momentum(const sim_artic* a, sim_vec3* linear, sim_vec3* angular);

#ifdef __cplusplus
}
#endif
