/*
 * world.h: the private layout of a sim_world, shared by the files of
 * server/sim. Nothing outside server/sim (except unit tests) includes it.
 *
 *   particles (SoA, all entities back to back, in spawn order)
 *   +---------------------------+----------------------+-----
 *   | entity A: p_first..+count | entity B             | ...
 *   +---------------------------+----------------------+-----
 *   distance constraints and joint limits are grouped the same way; their particle
 *   indices are local to the entity, so a despawn only slides later ranges
 *   down (memmove) and never rewrites indices.
 */
#pragma once

#include "rigid.h"
#include "sim.h"
#include "soft.h"
#include "softbody.h"

#include <math.h>
#include <stddef.h>

#define SIM__DEF_COOKIE        0x5244444fu /* "RDDO" */
#define SIM__MAX_EVENTS        256
#define SIM__JOINTS_PER_ENTITY 8    /* joint-limit capacity: max_entities × this */
#define SIM__GRID_BUCKETS      4096 /* hash grid buckets (a power of two) */
#define SIM__CELLS_PER_BODY    27   /* grid entries reserved per body */
#define SIM__PAIRS_PER_BODY    16   /* candidate pairs reserved per body */
#define SIM__CONTACTS_PER_BODY 8    /* static contacts reserved per body */
/* The soft step's contact points reserved per body (for the world, not each
   body): the densest pile measured uses 2.3 per awake body (ragdoll-bench
   --piles-only, 300 humanoids); a tick with more drops points between
   bodies first (soft_contact.c) and counts them (sim_overflows.contacts). */
#define SIM__SOFT_CONTACTS_PER_BODY 8
#define SIM__GRID_CELL              1.0f /* broadphase grid cell edge, m */
/* How much farther than its bounds for the tick a body is looked for by
   particles, m (the largest particle radius expected, and a bone's turn
   within the tick, which the bounds' sweep does not hold). */
#define SIM__PARTICLE_MARGIN 0.15f
// Rigid bodies take at least SIM__RIGID_MIN_SUBSTEPS per tick (the XPBD
// rigid solver needs them whatever the particles use; solver.c may split
// further for fast bodies).
#define SIM__RIGID_MIN_SUBSTEPS 4
// Solver work of one rigid body or joint per rigid substep, in particle
// projections (about 10 ns each): a pile of 300 humanoids, the worst case
// ragdoll-bench measures, costs about 1 µs per body or joint and rigid
// substep (contacts and joint passes together).
#define SIM__RIGID_WORK 100u
// Sleeping (island.c): a body is still while three points of it have stayed
// within spheres of radius SIM__SLEEP_SPEED × SIM__SLEEP_TIME (m/s × s); an
// island whose bodies have all been still for SIM__SLEEP_TIME, s, sleeps.
// Jolt's test (MotionProperties' sleep test spheres: 0.03 m/s, 0.5 s): a
// body that trembles in place sleeps, one that creeps or swings does not.
#define SIM__SLEEP_SPEED 0.05f
// Position-only joint passes at the end of each XPBD tick (stabilize.c).
#define SIM__STABILIZE_PASSES 4
/* The soft step's end-of-tick joint stabilization (stabilize.c): a joint is
   off when its anchors are more than SIM__NGS_TOL_LIN (m) apart or a limit
   is exceeded by more than SIM__NGS_TOL_ANG (rad, 0.25°); at most
   SIM__NGS_MAX_PASSES passes over a skeleton's joints per tick
   (SIM__NGS_PINNED_PASSES while lifted bodies are pinned). A body is
   lifted out of the static world only past SIM__NGS_STATIC_SLOP (m) deep,
   and to that depth (the soft contacts hold what is shallower), only by an
   impact (the point closing faster than SIM__NGS_LIFT_SPEED, m/s, at the
   start of the tick), up to SIM__NGS_STATIC_ROUNDS times a tick. Measured
   by ragdoll-impacts: see the README's "Impacts". */
#define SIM__NGS_TOL_LIN       0.25e-3f
#define SIM__NGS_TOL_ANG       4.363323e-3f
#define SIM__NGS_MAX_PASSES    128
#define SIM__NGS_PINNED_PASSES 32
#define SIM__NGS_STATIC_SLOP   0.01f
#define SIM__NGS_STATIC_ROUNDS 2
#define SIM__NGS_LIFT_SPEED    1.0f
#define SIM__SLEEP_TIME        0.5f

// The builders' def cookies and size bounds, repeated here for the counts of
// cost.c. Each builder defines its own too: a definition that differed from
// these would be a redefinition, which the build (-Werror) refuses.
#define SIM__ROPE_COOKIE       0x524f5045u /* "ROPE" */
#define SIM__MAX_ROPE_SEGMENTS 1000u
#define SIM__CLOTH_COOKIE      0x434c4f54u /* "CLOT" */
#define SIM__MAX_CLOTH_SIDE    256u
#define SIM__RAGDOLL_COOKIE    0x5241474du /* "RAGM" */
#define SIM__CHAR_COOKIE       0x43484152u /* "CHAR" */
#define SIM__BALL_COOKIE       0x42414c4cu /* "BALL" */
#define SIM__SOFTBODY_COOKIE   0x534f4654u /* "SOFT" */

/// A body near a particle entity, with its capsule for this pass
/// (sim__bodies_near()).
typedef struct sim__near_body {
    uint32_t body;
    float radius;    ///< m.
    sim_vec3 s0, s1; ///< Its capsule's segment now, m.
    sim_vec3 lo, hi; ///< The capsule's box, m.
} sim__near_body;

/// One body in one cell of the broadphase grid.
typedef struct sim__grid_entry {
    int32_t next; ///< Next entry in the bucket, -1 at the end.
    uint32_t body;
    int32_t cx, cy, cz;
} sim__grid_entry;

/// A candidate pair of bodies (global indices, a < b), or of a body and a
/// static box (b = SIM__BOX_PAIR | box index).
typedef struct sim__pair {
    uint32_t a, b;
} sim__pair;

#define SIM__BOX_PAIR 0x80000000u

/// A contact found at the start of a substep, re-evaluated by every pass
/// from its points fixed in the bodies (Müller et al. 2020, §3.5), and kept
/// for the velocity pass.
typedef struct sim__contact {
    uint32_t a, b; ///< b is SIM__NO_BODY for the static world.
    sim_vec3 n;    ///< From b to a, fixed for the substep.
    sim_vec3 ra;   ///< Contact point on a, in a's body frame.
    sim_vec3 rb;   ///< On b in b's body frame, or the world point when static.
    float keep;    ///< Old penetration not to remove yet this substep, m.
    float lambda;  ///< Normal positional impulse accumulated this substep.
    float vn_pre;  ///< Relative normal velocity before the solve.
} sim__contact;

/// A body's sleep state (island.c): three points fixed in the body (its
/// centre, the tip of its capsule, a point on its side), and for each the
/// smallest sphere found so far holding every position it has had since
/// the body last moved (Jolt's sleep test).
typedef struct sim__sleep {
    sim_vec3 c[3];  ///< Sphere centres, m.
    float r[3];     ///< Sphere radii, m.
    float time;     ///< Time the spheres have stayed small, s.
    uint32_t next;  ///< Asleep: the next body of its sleeping island (a ring).
    uint8_t asleep; ///< 1 while frozen in a sleeping island.
} sim__sleep;

/// One island of this tick (island.c): ranges into isl_bodies, isl_joints
/// and isl_pairs.
typedef struct sim__island {
    uint32_t body_first, body_count;
    uint32_t joint_first, joint_count;
    uint32_t pair_first, pair_count;
    float closing;   ///< Fastest closing speed of its possible contacts, m/s.
    bool awake_only; ///< Holds a body that may not sleep (kinematic, animated).
    bool lifted;     ///< Soft step: a body of it was lifted out of the static world (stabilize.c).
} sim__island;

/// A joint of an island: global body indices and the joint's index.
typedef struct sim__ijoint {
    uint32_t p, c, j;
} sim__ijoint;

/// A drive's gains and their ramp.
typedef struct sim__gains {
    float kp, kd;           ///< In effect now.
    float kp_from, kd_from; ///< At the start of the ramp.
    float kp_to, kd_to;     ///< At its end.
    float ramp, t;          ///< Ramp length and time into it, s.
} sim__gains;

/// A character's state (hot enough to live in one array by entity slot).
typedef struct sim__char {
    const sim__skel* sk;
    sim_char_state state;
    const sim__clip* clip;
    float t;            ///< Time into the clip, s.
    sim_vec3 origin;    ///< The character frame's origin (root motion moves it).
    float yaw;          ///< The character frame's heading, rad.
    sim__bones partial; ///< PARTIAL: holds bone i when it is dynamic.
    float blend_t, blend_time;
    bool settled;    ///< Its bones are asleep (island.c), frozen until woken.
    uint8_t reduced; ///< 1: spawned REDUCED (kept in a saved state; `artic` is not).
    /// REDUCED (reduced.c): its articulation, else NULL (MAXIMAL).
    struct sim_artic* artic;
    float still_t; ///< REDUCED: how long every link has been slow, s.
    uint8_t blown; ///< REDUCED: its articulation went where no body may (step.c removes it).
} sim__char;

/// A character's per-bone state, kept by body index (w->bone[e->b_first + i]
/// for bone i) so a character's size grows with its own bones, not with
/// SIM_MAX_BONES.
typedef struct sim__bone {
    sim_vec3 snap_x; ///< Get-up: the pose the blend starts from.
    sim_quat snap_q;
    sim_vec3 target_x; ///< This tick's animated pose.
    sim_quat target_q;
    sim__gains gains; ///< Drive of the joint to the bone's parent.
    /// REDUCED: what particles pushed on the bone this tick (N·s), and its
    /// moment about the bone's centre (N·m·s), given to the articulation
    /// the next tick.
    sim_vec3 fb_j, fb_m;
} sim__bone;

/// Kinds of distance constraint.
typedef enum sim__dist_kind {
    SIM__DIST_EQUAL = 0, ///< |xb - xa| = rest (a "stick").
    SIM__DIST_MIN = 1,   ///< |xb - xa| >= rest (inequality).
    SIM__DIST_MAX = 2,   ///< |xb - xa| <= rest (inequality).
    SIM__DIST_TORN = 3,  ///< A stick that tore (tear.c): never projected again.
} sim__dist_kind;

/// A distance constraint between particles a and b (indices local to the
/// entity). 24 bytes, kept small because the solver streams through them.
typedef struct sim__dist {
    uint32_t a, b;
    float rest;       ///< Rest length, m.
    float compliance; ///< XPBD compliance, m/N (0 = rigid).
    float lambda;     ///< Accumulated Lagrange multiplier of this substep.
    uint32_t kind;    ///< sim__dist_kind.
} sim__dist;
_Static_assert(sizeof(sim__dist) == 24, "sim__dist is a hot struct; keep it 24 bytes");

/// How the four lanes of a sim__lane_block find their particles in a
/// cloth's staging arrays (cloth_batch.c), where grid particle (row r,
/// column c) is at r × stride + c (sim__cloth_lane_stride()).
typedef enum sim__lane_kind {
    /// Lane l: A at base + a_off + l, B at base + b_off + l: four neighbours
    /// along a row against four in a row below (down, diagonal, bend down).
    SIM__LANES_ROW = 0,
    /// Lane l: A at base + 2l, B at base + 2l + 1: eight particles of a row
    /// in four pairs of neighbours across (structural across).
    SIM__LANES_PAIRS1 = 1,
    /// Lanes 0..3: A at base + 0, 1, 4, 5 and B two further along the row
    /// (bend across).
    SIM__LANES_PAIRS2 = 2,
    /// Up to four constraints of any shape, by index, projected one after
    /// another (a skirt's seam, anything not on the grid's families).
    SIM__LANES_SCALAR = 3,
} sim__lane_kind;

/// Four distance constraints of one cloth that share no particle, projected
/// together in SIMD lanes (cloth_batch.c). Their particles are found by
/// the kind from `base`, so a block of neighbours on a grid loads each
/// coordinate of its four lanes with one 16-byte load (ROW) or two loads
/// and a shuffle (PAIRS). 48 bytes.
typedef struct sim__lane_block {
    uint32_t base;    ///< Staging index of lane 0's particles (see kind).
    uint16_t b_off;   ///< ROW: B's offset from base (stride, stride + 1, 2 × stride).
    uint8_t kind;     ///< sim__lane_kind.
    uint8_t a_off;    ///< ROW: A's offset from base (0, or 1 for the other diagonal).
    float compliance; ///< XPBD compliance of all four lanes, m/N (SCALAR: unused).
    /// Blocks from this one to the end of its run (same family and row, so
    /// sharing no particle with each other), this one included.
    uint32_t run;
    union {
        float rest[4];    ///< Rest lengths, m; negative: an empty lane.
        uint32_t dist[4]; ///< SCALAR: constraint indices in the entity (UINT32_MAX: none).
    };
    float lambda[4]; ///< Accumulated Lagrange multipliers of this substep.
} sim__lane_block;
_Static_assert(sizeof(sim__lane_block) == 48, "sim__lane_block is 48 bytes");

/// Cloths narrower than this keep the sequential loop (their rows are too
/// short to fill lanes, and their staging rows would be mostly padding).
#define SIM__LANE_MIN_COLS 8u

/// Constraint lanes the world has room for in blocks, when it has room for
/// c distance constraints and p particles: all of them, but no more than a
/// cloth of p particles has (fewer than 6 per particle: 2 structural,
/// 2 shear, 2 bend).
#define SIM__DIST_LANES(c, p) ((size_t)(c) < 6u * (size_t)(p) ? (size_t)(c) : 6u * (size_t)(p))

/// Blocks the world has room for (c constraints, p particles): a quarter
/// of the lanes, plus one per particle for the part-filled and empty blocks
/// of a cloth's layout while it is built (at most 8 + 1.5 × cols a row of
/// at least SIM__LANE_MIN_COLS particles, for its families) and the
/// skirts' seams. A cloth whose blocks do not fit keeps the sequential loop
/// (slower, and in its own order).
#define SIM__LANE_BLOCKS(c, p) (SIM__DIST_LANES(c, p) / 4u + (size_t)(p))

/// The most particles a cloth has (256 × 256, cloth.c).
#define SIM__LANE_MAX_PARTICLES 65536u

/// Floats of staging the world has room for (p particles): x, y, z and
/// inverse mass of the largest cloth that fits, rows padded to
/// sim__cloth_lane_stride() (at most cols + 9, and cols >= 8, so 17/8 of
/// its particles).
#define SIM__LANE_STAGING(p)                                                                       \
    (4u *                                                                                          \
     (((size_t)(p) < SIM__LANE_MAX_PARTICLES ? (size_t)(p) : SIM__LANE_MAX_PARTICLES) * 17u / 8u))

/// Kinds of particle joint limit.
typedef enum sim__joint_kind {
    SIM__JOINT_HINGE = 0, ///< Elbow, knee: one plane, one direction, [0, limit].
    SIM__JOINT_CONE = 1,  ///< Hip, shoulder: the limb within `limit` of its rest direction.
} sim__joint_kind;

/// A joint limit of a particle ragdoll, expressed in the torso frame (up
/// U = up0 → up1, lateral L = l0 → l1 made perpendicular to U, forward
/// F = L × U); rest_dir and rest_axis are given in that frame (x = L, y = U,
/// z = F).
///
/// CONE (a = hip/shoulder, b = knee/elbow): the upper limb b - a stays
/// within `limit` radians of rest_dir.
///
/// HINGE (a = hip/shoulder, b = knee/elbow, c = foot/hand): a particle model
/// has no bone twist, so the hinge axis is carried by the upper limb's swing:
/// the shortest-arc rotation taking rest_dir to û = (b - a)/|b - a| takes
/// rest_axis to the current axis n. The lower limb d = c - b must lie in the
/// plane normal to n, at a flexion θ = atan2(sign·d·(û × n), d·û) in
/// [0, limit] (sign -1 for a knee, whose foot swings back; +1 for an elbow,
/// whose hand swings forward). The swing is undefined at û = -rest_dir; the
/// joint's CONE keeps the limb far from there.
///
/// Indices local to the entity.
typedef struct sim__joint {
    uint32_t kind;      ///< sim__joint_kind.
    uint32_t a, b, c;   ///< Limb particles (c unused for a cone).
    uint32_t up0, up1;  ///< Torso up axis particles (pelvis → neck).
    uint32_t l0, l1;    ///< Torso lateral axis particles (right → left).
    sim_vec3 rest_dir;  ///< Unit, torso frame.
    sim_vec3 rest_axis; ///< Unit, torso frame, perpendicular to rest_dir (hinge).
    float sign;         ///< Hinge flexion side, +1 or -1.
    float limit;        ///< Hinge: maximum flexion; cone: half-angle. Radians in (0, π).
} sim__joint;

/// A drag: a zero-rest-length soft constraint pulling a particle to target.
typedef struct sim__drag {
    sim_entity_id entity;
    uint32_t particle; ///< Local index.
    sim_vec3 target;
    float lambda;
} sim__drag;

#define SIM__NO_TIE  UINT32_MAX /* sim__tie.tether: no long-range attachment */
#define SIM__NO_BONE 0xffffu    /* sim__tie.bone: not pinned to a bone */

/// A particle's ties to what it hangs from (garment.c): a pin to a bone of
/// its entity's wearer, and a long-range attachment (Kim, Chentanez and
/// Müller 2012) to a pinned particle of its own entity. 24 bytes a particle.
typedef struct sim__tie {
    sim_vec3 local;   ///< Pinned: its point in the bone's body frame, m.
    float tether_len; ///< The most it may be from its tether particle, m.
    uint32_t tether;  ///< Local index of that pinned particle, or SIM__NO_TIE.
    uint16_t bone;    ///< Bone of the wearer it is pinned to, or SIM__NO_BONE.
    /// Grid edges from this particle that tore (tear.c): SIM__TORN_RIGHT,
    /// SIM__TORN_DOWN, SIM__TORN_DIAG; the air skips a triangle with a torn
    /// edge (wind.c).
    uint8_t torn;
    uint8_t pad;
} sim__tie;

/// sim__tie.torn: the edge to the grid particle on the right (r, c + 1),
/// below (r + 1, c), and diagonally below (r + 1, c + 1) tore.
#define SIM__TORN_RIGHT 1u
#define SIM__TORN_DOWN  2u
#define SIM__TORN_DIAG  4u
_Static_assert(sizeof(sim__tie) == 24, "sim__tie: 24 bytes a particle");

/// What a joint did at the end of the last tick (limit_hit.c): where it
/// was against its limits and how fast it turned toward them.
typedef struct sim__limit_track {
    float twist_rate; ///< About the twist axis, rad/s (+: toward twist_max).
    float swing_rate; ///< Opening the swing, rad/s (+: toward the cone's edge).
    uint32_t at;      ///< Bit sim_limit_kind: at (or past) that limit.
} sim__limit_track;

/// An entity slot (cold data).
typedef struct sim__entity {
    uint32_t generation; ///< Current generation of this slot.
    bool live;
    sim_entity_kind kind;
    uint32_t p_first, p_count;   ///< Particle range.
    uint32_t d_first, d_count;   ///< Distance constraint range.
    uint32_t j_first, j_count;   ///< Joint limit range.
    uint32_t b_first, b_count;   ///< Rigid body range.
    uint32_t bj_first, bj_count; ///< Rigid joint range.
    uint32_t cb_first, cb_count; ///< Cloth constraint blocks (cloth_batch.c); 0 blocks: sequential.
    uint32_t stick_count;        ///< Equality constraints in the distance range.
    uint32_t cols, rows;         ///< Cloth grid, else 0.
    const char* const* names;    ///< Static particle names, or NULL.
    sim_entity_id wearer;        ///< A garment's character (garment.c), else zero.
    uint8_t garment;             ///< sim_garment_kind of a garment, else SIM_GARMENT_NONE.
    bool wrap;                   ///< Cloth: column cols - 1 is joined to column 0 (a skirt).
    bool tethered;               ///< Some particle has a long-range attachment.
    float tear_ratio;            ///< Sticks tear past this × their rest length; 0: never (tear.c).
    uint32_t topo_version;       ///< Bumped when its sticks change (a tear).
    uint8_t lod;                 ///< sim_lod this tick (lod.c).
    uint8_t iterations;          ///< Solver iterations this tick (lod.c); 0: frozen.
    bool self_collision;         ///< Cloth: particle–particle self-contacts (self_collide.c).
    uint32_t self_hops;          ///< Grid pairs at most this many hops apart are skipped.
    float thickness;             ///< Self-contact distance, m.
    uint32_t sc_first, sc_count; ///< This substep's candidate self-contact pairs in sc_pairs.
    uint8_t ahead;               ///< Passes projected this substep before the others (particle.c).
    uint8_t collide_from;        ///< First pass whose collision pass looks at it this substep.
} sim__entity;

/// A candidate self-contact pair (self_collide.c): particle indices local to
/// the cloth (a cloth has at most 256 × 256 particles), a < b.
typedef struct sim__self_pair {
    uint16_t a, b;
} sim__self_pair;

/// Candidate self-contact pairs reserved per particle (self_collide.c). A
/// layer lying on another at the thickness (0.83 × spacing in the tests)
/// gives each of its particles about π (1.5 × 0.83)² ≈ 4.9 candidates within
/// 1.5 × thickness, each pair counted once: 2.5 per particle of the two
/// layers. Pairs past the room are dropped (sim_tick_stats has no room to
/// count them yet).
#define SIM__SELF_PAIRS_PER_PARTICLE 6

struct sim_world {
    sim_allocator alloc;
    sim_world_def def; ///< Its limits (max_*) are what `reserved` may grow to.
    /// What the arrays have room for now (world.c's SIM__WORLD_ARRAYS gives
    /// each array's capacity from it): grown at spawn time, never in a step.
    sim_counts reserved;
    sim_params params;
    float dt;
    uint64_t tick;
    uint32_t topo_epoch;

    // Particles, structure of arrays.
    uint32_t p_count;
    sim_vec3* pos;
    sim_vec3* prev;
    sim_vec3* vpre; ///< Displacement over the substep before the solve (for restitution).
    float* inv_mass;
    float* radius;
    sim_vec3* contact_n; ///< Contact normal found this substep.
    float* push;         ///< Distance pushed out along contact_n this substep, m.
    uint8_t* contact;    ///< 1 when in contact this substep.
    /// The body whose capsule gave the particle its contact normal this
    /// substep (it is pushed back in sim__collide_respond), or SIM__NO_BODY.
    uint32_t* contact_body;
    sim__tie* tie; ///< Pins and long-range attachments (garment.c).
    // Self-collision scratch (self_collide.c), rebuilt every substep: a
    // spatial hash of the self-colliding particles, counting-sorted.
    uint32_t* sc_start;       ///< 2 × particles + 1 bucket starts into sc_entries.
    uint32_t* sc_entries;     ///< Particle indices (global) sorted by bucket.
    float* sc_moved;          ///< Self-contact correction given to each particle this substep, m.
    sim__self_pair* sc_pairs; ///< SIM__SELF_PAIRS_PER_PARTICLE × particles candidate pairs.

    uint32_t d_count;
    sim__dist* dist;
    uint32_t j_count;
    sim__joint* joint;
    /// Cloths' distance constraints in blocks of four (cloth_batch.c), each
    /// entity's blocks a contiguous range (sim__entity.cb_first), the ranges
    /// in no particular order; capacity SIM__LANE_BLOCKS(reserved.constraints,
    /// reserved.particles).
    sim__lane_block* lane_blocks;
    uint32_t lb_count;
    /// One cloth's particles during a relaxation pass (cloth_batch.c): x, y,
    /// z, inverse mass, each rows × stride floats; rebuild's scratch
    /// between passes. SIM__LANE_STAGING(reserved.particles) floats.
    float* lane_staging;

    // Entity slots and the live ones in storage order.
    sim__entity* entities;
    uint32_t e_used;      ///< Slots ever used (high-water mark).
    uint32_t* free_slots; ///< Stack of free slot indices.
    uint32_t free_count;
    uint32_t* order; ///< Slot indices of live entities, in storage order.
    uint32_t order_count;

    sim_box* boxes;
    uint32_t box_count;
    sim__drag* drags;
    uint32_t drag_count;

    sim_event* events; ///< Ring of SIM__MAX_EVENTS pending events.
    uint32_t event_head, event_count;

    // Rigid bodies and their joints, grouped by entity like the particles.
    uint32_t b_count;
    sim__body* body;
    sim__body_info* binfo;
    sim__bone* bone; ///< By body: a character's per-bone state.
    uint32_t bj_count;
    sim__bjoint* bjoint;
    sim__char* chars; ///< By entity slot (characters only).

    // Soft bodies (softbody.c).
    sim__softbody* softs; ///< By entity slot (soft bodies only).
    sim_vec3* sm_rest;    ///< By particle: rest offset q_i from the rest centroid, m (soft bodies).
    int32_t* sm_head;     ///< Contact hash bucket heads (as many as particles), -1 empty; scratch.
    int32_t* sm_next;     ///< By particle: next particle in its bucket; scratch.
    uint32_t sp_count;    ///< Soft-body particles (sim_counts.soft_particles).
    uint32_t artic_links; ///< Links of REDUCED characters' articulations (reduced.c).
    uint32_t soft_bodies; ///< Live soft bodies.

    // Broadphase and contacts.
    int32_t* grid_head; ///< SIM__GRID_BUCKETS bucket heads, -1 when empty.
    sim__grid_entry* grid;
    uint32_t grid_count, grid_cap;
    sim_vec3* aabb_lo; ///< Per body: the tick's swept bounds.
    sim_vec3* aabb_hi;
    sim__pair* pairs;
    uint32_t pair_count, pair_cap;
    sim__contact* contacts;
    uint32_t contact_count, contact_cap;
    float* closing; ///< Per body: fastest closing speed of its possible contacts this tick.

    // Islands (island.c), rebuilt every tick.
    sim__sleep* bsleep;      ///< Per body, kept across ticks (moves with the bodies).
    uint32_t* uf;            ///< Per body: union-find parent.
    uint32_t* isl_of;        ///< Per body: scratch.
    uint32_t* isl_of_body;   ///< Per body: its island, or UINT32_MAX (asleep, or lone kinematic).
    uint32_t* isl_bodies;    ///< Bodies grouped by island.
    sim__ijoint* isl_joints; ///< Joints grouped by island.
    uint32_t* isl_pairs;     ///< Broad-phase pair indices grouped by island.
    sim__island* islands;
    uint32_t island_count;
    sim_tick_stats stats;        ///< The last tick's (step.c).
    sim_torn* torn;              ///< Sticks torn since the last sim_world_drain_torn() (tear.c).
    uint32_t torn_count;         ///< Kept in `torn`.
    uint32_t torn_dropped;       ///< Torn beyond SIM_MAX_TORN since the last full drain.
    sim_vec3 foci[SIM_MAX_FOCI]; ///< Where viewers look (lod.c).
    uint32_t focus_count;

    // Soft step (soft.h), when def.solver is SIM_SOLVER_SOFT_STEP; rebuilt
    // every tick except the contact cache.
    sim__body_state* soft_state; ///< By solver index: the awake bodies.
    sim__body_mass* soft_mass;
    uint8_t* soft_blocks; ///< By solver index: 1 for a dynamic body (graph colouring).
    uint32_t* soft_index; ///< By body: solver index, or SIM__NO_STATE.
    uint32_t soft_body_count;
    sim__soft_joint* soft_joints;
    uint32_t soft_joint_count;
    sim__soft_contact* soft_contacts;
    uint64_t* soft_keys; ///< By contact point: its warm-start key.
    uint32_t soft_contact_count, soft_contact_cap;
    sim__soft_cached* soft_cache;      ///< Last tick's impulses, sorted by key.
    sim__soft_cached* soft_cache_next; ///< Scratch of the same size (swapped in).
    uint32_t soft_cache_count;
    uint32_t soft_cache_epoch; ///< topo_epoch when stored (body indices may have moved since).
    uint32_t* soft_ca;         ///< By constraint (joints, then contacts): its bodies.
    uint32_t* soft_cb;
    uint8_t* soft_colour;
    uint32_t* soft_order; ///< Constraints grouped by colour.
    uint64_t* soft_bits;  ///< Colouring scratch: SIM__GRAPH_COLOURS bit sets over solver indices.
    sim__colouring soft_colouring;
    /// The colours' contact points four at a time (soft_wide.c): colour c's
    /// blocks are soft_wide_first[c] .. soft_wide_first[c + 1].
    sim__contact_block* soft_wide;
    uint32_t soft_wide_first[SIM__GRAPH_COLOURS + 1];
    sim_overflows overflows; ///< What the arrays above had no room for.
    uint64_t quarantined;    ///< Entities removed as unstable (step.c).

    // Nothing from here on is part of a world's state (state.c saves the
    // struct up to SIM__SAVED_BYTES): what the world reports, not what it is.
    /// Impacts and joint limit hits (impact.c, limit_hit.c); NULL until the
    /// world has room for a body (only bodies strike).
    struct sim__reports* reports;
};

/// The bytes of struct sim_world that are its state (state.c).
#define SIM__SAVED_BYTES offsetof(struct sim_world, reports)

/// A ring of fixed-size records kept until drained, oldest first (event.c):
/// impacts and limit hits. `cap` records of `elem` bytes at `items`.
typedef struct sim__ring {
    void* items;
    uint32_t elem, cap;
    uint32_t head, count;
    uint64_t dropped; ///< Records lost since the last drain (the ring full, or never kept).
} sim__ring;

/// Appends a copy of `item`; the oldest goes when full (counted).
void sim__ring_push(sim__ring* r, const void* item);

/// Moves up to `cap` records into out, oldest first (out NULL: drops them
/// all); *dropped (may be NULL) gets r->dropped, which restarts once the
/// ring is empty. Returns how many.
uint32_t sim__ring_drain(sim__ring* r, void* out, uint32_t cap, uint64_t* dropped);

/// What a world reports besides its state (impact.c, limit_hit.c): made by
/// sim_world_reserve() with the world's first room for a body, grown with
/// its joints (never in a step), freed with the world.
typedef struct sim__reports {
    // Impacts: this tick's, the fastest pairs, then a ring until drained.
    sim_impact impacts_tick[SIM_MAX_IMPACTS_PER_TICK];
    uint32_t impacts_tick_count;
    uint64_t impacts_dropped; ///< Past the tick's bound (added to the ring's count when drained).
    sim_impact impacts[SIM_MAX_IMPACTS];
    sim__ring impact_ring; ///< Over impacts.
    // Joint limit hits: on when someone listens; by joint, what each did
    // the tick before (lim_cap of them: the world's room for joints); this
    // tick's; a ring until drained.
    bool report_limits;
    sim__limit_track* lim;
    uint32_t lim_cap;
    sim_limit_hit limit_tick[SIM_MAX_LIMIT_HITS_PER_TICK];
    uint32_t limit_tick_count;
    uint64_t limits_dropped; ///< Past the tick's bound.
    sim_limit_hit limit_hits[SIM_MAX_LIMIT_HITS];
    sim__ring limit_ring; ///< Over limit_hits.
} sim__reports;

// The arrays of a world (world.c): each with its capacity as a function of the counts
// the world has room for (r, a sim_counts) and of its def (d), and its
// element size. Creation, growth, destruction and the byte counts all walk
// this one list, so an array added here is grown and freed with the rest.
// A capacity that depends on d alone is allocated at creation and never
// grows.
#define SIM__WORLD_ARRAYS(XX, r, d)                                                                \
    XX(pos, (r).particles, sizeof(sim_vec3))                                                       \
    XX(prev, (r).particles, sizeof(sim_vec3))                                                      \
    XX(vpre, (r).particles, sizeof(sim_vec3))                                                      \
    XX(inv_mass, (r).particles, sizeof(float))                                                     \
    XX(radius, (r).particles, sizeof(float))                                                       \
    XX(contact_n, (r).particles, sizeof(sim_vec3))                                                 \
    XX(push, (r).particles, sizeof(float))                                                         \
    XX(contact, (r).particles, sizeof(uint8_t))                                                    \
    XX(contact_body, (r).particles, sizeof(uint32_t))                                              \
    XX(tie, (r).particles, sizeof(sim__tie))                                                       \
    XX(sc_start, 2 * (size_t)(r).particles + 1, sizeof(uint32_t))                                  \
    XX(sc_entries, (r).particles, sizeof(uint32_t))                                                \
    XX(sc_moved, (r).particles, sizeof(float))                                                     \
    XX(sc_pairs, (size_t)(r).particles* SIM__SELF_PAIRS_PER_PARTICLE, sizeof(sim__self_pair))      \
    XX(dist, (r).constraints, sizeof(sim__dist))                                                   \
    XX(lane_blocks, SIM__LANE_BLOCKS((r).constraints, (r).particles), sizeof(sim__lane_block))     \
    XX(lane_staging, SIM__LANE_STAGING((r).particles), sizeof(float))                              \
    XX(joint, (r).joint_limits, sizeof(sim__joint))                                                \
    XX(events, SIM__MAX_EVENTS, sizeof(sim_event))                                                 \
    XX(body, (r).bodies, sizeof(sim__body))                                                        \
    XX(binfo, (r).bodies, sizeof(sim__body_info))                                                  \
    XX(bone, (r).bodies, sizeof(sim__bone))                                                        \
    XX(bjoint, (r).joints, sizeof(sim__bjoint))                                                    \
    XX(chars, (r).entities, sizeof(sim__char))                                                     \
    XX(softs, (r).entities, sizeof(sim__softbody))                                                 \
    XX(sm_rest, (r).particles, sizeof(sim_vec3))                                                   \
    XX(sm_head, (r).particles, sizeof(int32_t))                                                    \
    XX(sm_next, (r).particles, sizeof(int32_t))                                                    \
    XX(grid_head, SIM__GRID_BUCKETS, sizeof(int32_t))                                              \
    XX(grid, (size_t)(r).bodies* SIM__CELLS_PER_BODY, sizeof(sim__grid_entry))                     \
    XX(aabb_lo, (r).bodies, sizeof(sim_vec3))                                                      \
    XX(aabb_hi, (r).bodies, sizeof(sim_vec3))                                                      \
    XX(pairs, (size_t)(r).bodies* SIM__PAIRS_PER_BODY, sizeof(sim__pair))                          \
    XX(contacts, SIM__XPBD_ONLY(d, contact_cap(&(r), &(d))), sizeof(sim__contact))                 \
    XX(entities, (r).entities, sizeof(sim__entity))                                                \
    XX(free_slots, (r).entities, sizeof(uint32_t))                                                 \
    XX(order, (r).entities, sizeof(uint32_t))                                                      \
    XX(boxes, (d).max_boxes, sizeof(sim_box))                                                      \
    XX(drags, (d).max_drags, sizeof(sim__drag))                                                    \
    XX(torn, SIM_MAX_TORN, sizeof(sim_torn))                                                       \
    XX(closing, (r).bodies, sizeof(float))                                                         \
    XX(bsleep, (r).bodies, sizeof(sim__sleep))                                                     \
    XX(uf, (r).bodies, sizeof(uint32_t))                                                           \
    XX(isl_of, (r).bodies, sizeof(uint32_t))                                                       \
    XX(isl_of_body, (r).bodies, sizeof(uint32_t))                                                  \
    XX(isl_bodies, (r).bodies, sizeof(uint32_t))                                                   \
    XX(islands, (r).bodies, sizeof(sim__island))                                                   \
    XX(isl_joints, (r).joints, sizeof(sim__ijoint))                                                \
    XX(isl_pairs, (size_t)(r).bodies* SIM__PAIRS_PER_BODY, sizeof(uint32_t))                       \
    XX(soft_state, SIM__SOFT_ONLY(d, (r).bodies), sizeof(sim__body_state))                         \
    XX(soft_mass, SIM__SOFT_ONLY(d, (r).bodies), sizeof(sim__body_mass))                           \
    XX(soft_blocks, SIM__SOFT_ONLY(d, (r).bodies), sizeof(uint8_t))                                \
    XX(soft_index, SIM__SOFT_ONLY(d, (r).bodies), sizeof(uint32_t))                                \
    XX(soft_joints, SIM__SOFT_ONLY(d, (r).joints), sizeof(sim__soft_joint))                        \
    XX(soft_contacts, SIM__SOFT_ONLY(d, soft_contact_cap(&(r), &(d))), sizeof(sim__soft_contact))  \
    XX(soft_keys, SIM__SOFT_ONLY(d, soft_contact_cap(&(r), &(d))), sizeof(uint64_t))               \
    XX(soft_cache, SIM__SOFT_ONLY(d, soft_contact_cap(&(r), &(d))), sizeof(sim__soft_cached))      \
    XX(soft_cache_next, SIM__SOFT_ONLY(d, soft_contact_cap(&(r), &(d))), sizeof(sim__soft_cached)) \
    XX(soft_ca, SIM__SOFT_ONLY(d, (size_t)(r).joints + soft_contact_cap(&(r), &(d))),              \
       sizeof(uint32_t))                                                                           \
    XX(soft_cb, SIM__SOFT_ONLY(d, (size_t)(r).joints + soft_contact_cap(&(r), &(d))),              \
       sizeof(uint32_t))                                                                           \
    XX(soft_colour, SIM__SOFT_ONLY(d, (size_t)(r).joints + soft_contact_cap(&(r), &(d))),          \
       sizeof(uint8_t))                                                                            \
    XX(soft_order, SIM__SOFT_ONLY(d, (size_t)(r).joints + soft_contact_cap(&(r), &(d))),           \
       sizeof(uint32_t))                                                                           \
    XX(soft_bits, SIM__SOFT_ONLY(d, (size_t)SIM__GRAPH_COLOURS*(((r).bodies + 63u) / 64u)),        \
       sizeof(uint64_t))                                                                           \
    XX(soft_wide, SIM__SOFT_ONLY(d, SIM__WIDE_BLOCKS(soft_contact_cap(&(r), &(d)))),               \
       sizeof(sim__contact_block))

// The soft step's arrays exist only in worlds that use it, XPBD's contact
// list only in worlds that use XPBD.
#define SIM__SOFT_ONLY(d, count) ((d).solver == SIM_SOLVER_SOFT_STEP ? (size_t)(count) : (size_t)0)
#define SIM__XPBD_ONLY(d, count) ((d).solver == SIM_SOLVER_XPBD ? (size_t)(count) : (size_t)0)

/// Row numbers of SIM__WORLD_ARRAYS: SIM__ROW_pos, SIM__ROW_prev, ...
enum {
#define SIM__ROW(field, count, elem) SIM__ROW_##field,
    SIM__WORLD_ARRAYS(SIM__ROW, unused, unused)
#undef SIM__ROW
        SIM__ROW_COUNT
};

/// Every array's capacity now, elements, by row (world.c).
void sim__world_row_caps(const sim_world* w, size_t cap[SIM__ROW_COUNT]);

/// The particle names of a particle ragdoll (ragdoll.c), static storage:
/// what sim__entity.names points to for one.
extern const char* const sim__ragdoll_names[];

/// Whether body i is frozen in a sleeping island (island.c).
static inline bool sim__body_asleep(const sim_world* w, uint32_t i) {
    return w->bsleep[i].asleep != 0;
}

/// Reserves storage for a new entity at the end of the arrays and fills its
/// slot, growing the arrays (sim_world_reserve()) when they have no room.
/// On error nothing changes. Counts are checked against the def's limits
/// and the solver work budget (SIM_E_CAPACITY); a refused growth is
/// SIM_E_NOMEM.
int sim__entity_begin(sim_world* w, sim_entity_kind kind, uint32_t particles, uint32_t dists,
                      uint32_t joints, uint32_t bodies, uint32_t bjoints, sim_entity_id* out_id,
                      sim__entity** out);

/// Queues an event (the oldest is dropped when the queue is full).
void sim__push_event(sim_world* w, sim_event_kind kind, sim_entity_id id, sim_char_state state,
                     uint64_t tick);

/// Characters in reduced coordinates (reduced.c). Builds the articulation
/// of the character in `slot` from its skeleton and joints (its bodies and
/// joints set up): 0, or SIM_E_NOMEM and no articulation.
int sim__reduced_create(sim_world* w, uint32_t slot);
/// Frees it (NULL allowed).
void sim__reduced_destroy(sim_world* w, uint32_t slot);
/// Sets its coordinates and joint rates from the bones' poses and
/// velocities (a kill: it moves on as the animation moved it).
void sim__reduced_sync(sim_world* w, uint32_t slot);
/// An impulse (N·s) at a world point on a bone, through the articulation;
/// wakes it. Errors as sim_artic_apply_impulse().
int sim__reduced_impulse(sim_world* w, uint32_t slot, uint32_t bone, sim_vec3 point,
                         sim_vec3 impulse);
/// A particle's push j (N·s) at p on a kinematic body: kept for the
/// articulation's next tick when the body is a REDUCED ragdoll's bone.
void sim__reduced_push(sim_world* w, uint32_t body, sim_vec3 p, sim_vec3 j);
/// Articulation steps of a REDUCED ragdoll in a tick of dt seconds (reduced.c;
/// the solver-work budget prices them, world.c): ceil(dt × 240), the rate
/// the articulation's tests hold a humanoid at (4 at 60 Hz), at least 1.
static inline uint32_t sim__reduced_steps(float dt) {
    const float s = ceilf(dt * 240.0f - 1e-3f);
    return s >= 1.0f ? (uint32_t)s : 1u;
}

/// True when body i is a bone of a REDUCED ragdoll: its contacts with
/// other bodies are solved by its articulation, not the rigid solver.
static inline bool sim__reduced_bone(const sim_world* w, uint32_t i) {
    const uint32_t slot = w->binfo[i].slot;
    return w->entities[slot].kind == SIM_ENTITY_CHARACTER && w->chars[slot].artic != NULL &&
           w->chars[slot].state == SIM_CHAR_RAGDOLL;
}

/// A REDUCED ragdoll's tick before the rigid solver: its articulation
/// stepped among the bodies near it; its bones' targets set to its pose.
void sim__reduced_tick(sim_world* w, uint32_t slot, float dt);

/// Characters before a tick: advance clips, compute the animated pose, give
/// kinematic bones the velocities that reach it, update drives (character.c).
void sim__characters_pre_tick(sim_world* w, float dt);

/// Characters after a tick: kinematic bones exactly on their pose; settling.
void sim__characters_post_tick(sim_world* w);

/// Pushes a particle (centre *p, radius r) out of every body capsule it
/// overlaps (contact.c): the n_list bodies of `list` (sim__bodies_near():
/// every body the particle could touch), or with list NULL those the broad
/// phase's grid has in the particle's cell. Unless mass is 0, each body outside [skip_first,
/// skip_end) takes the opposite of the momentum the push gives the particle
/// (mass · distance · inv_h, inv_h = 1 / the substep; sim__body_push_now).
/// Adds the distance pushed to *push and returns true with the last normal
/// in *n and its body in *body.
bool sim__particle_vs_bodies(sim_world* w, const sim__near_body* list, uint32_t n_list, sim_vec3* p,
                             float r, float mass, uint32_t skip_first, uint32_t skip_end,
                             float inv_h, sim_vec3* n, float* push, uint32_t* body);

/// The bodies whose bounds for the tick (broad_phase.c) meet the box
/// [lo, hi], with their capsules as they are now, into out (at most cap),
/// highest index first; the count, or UINT32_MAX when more than cap do
/// (contact.c).
uint32_t sim__bodies_near(const sim_world* w, sim_vec3 lo, sim_vec3 hi, sim__near_body* out,
                          uint32_t cap);

struct sim_history;
/// Whether history h (NULL: none) keeps a frame of `tick` (history.c).
bool sim__history_has(const struct sim_history* h, uint64_t tick);
/// The poses entity `id`'s bodies had at `tick` in history h (history.c):
/// *count of them, or NULL with *count 0 and *err SIM_OK when `tick` is
/// the world's (read w->body), or NULL with *err SIM_E_STALE_ID (no such
/// entity with bodies now) or SIM_E_OUT_OF_RANGE (not in h at `tick`).
const sim_bone_pose* sim__history_poses(const struct sim_history* h, const sim_world* w,
                                        uint64_t tick, sim_entity_id id, uint32_t* count, int* err);

/// Notes a contact of this tick between body ia and body ib (SIM__NO_BODY:
/// the static world, `code` saying which: SIM__CODE_GROUND or
/// SIM__CODE_BOX + box) that pushed, closing at `speed` m/s (impact.c).
void sim__impact_note(sim_world* w, uint32_t ia, uint32_t ib, uint32_t code, sim_vec3 point,
                      sim_vec3 normal, float speed);

/// Which static collider a contact point p (m, on its surface) is on:
/// SIM__CODE_BOX + the box whose surface it lies on (within 1 mm), else
/// SIM__CODE_GROUND (impact.c).
uint32_t sim__static_code_at(const sim_world* w, sim_vec3 p);

/// The tick's impacts, fastest first, into the ring (impact.c): at the end
/// of a tick, after its counter moved on.
void sim__impacts_end_tick(sim_world* w);

/// The tick's joint limit hits (limit_hit.c), when reported: at the end of
/// a tick, after its counter moved on.
void sim__limit_hits_end_tick(sim_world* w);

/// Looks up a live entity; NULL when stale or unknown.
sim__entity* sim__entity_get(const sim_world* w, sim_entity_id id);

/// Initialises particle i (global index) at rest at position p.
void sim__particle_init(sim_world* w, uint32_t i, sim_vec3 p, float inv_mass, float radius);

/// Appends constraint k (global index) between local particles a and b with
/// the rest length taken from their current positions (scaled by `scale`).
void sim__dist_init(sim_world* w, const sim__entity* e, uint32_t k, uint32_t a, uint32_t b,
                    sim__dist_kind kind, float scale, float compliance);

/// Projects one distance constraint (XPBD, Macklin et al. 2016, eq. 18):
/// Δλ = (-C - α̃λ) / (wa + wb + α̃), Δx = w ∇C Δλ, with α̃ = compliance / h².
/// With compliance 0 and equal masses it is exactly Jakobsen's relaxation.
void sim__project_dist(sim_vec3* pos, const float* inv_mass, sim__dist* c, float inv_h2);

/// Projects one particle joint limit (see sim__joint), the torso frame held
/// fixed during the projection (PBD's lagged frame).
///
/// CONE: the upper limb is rotated, length kept, onto the cone's boundary in
/// the plane of rest_dir and the limb; a and b share the change by inverse
/// mass. HINGE: the lower limb is rotated, length kept, into the hinge plane
/// and its flexion clamped to the nearer end of [0, limit]; b and c share the
/// change by inverse mass, so momentum is conserved. Near the swing's
/// singularity the hinge fades out.
void sim__project_joint(sim_vec3* pos, const float* inv_mass, const sim__joint* j);

/// The swing that takes unit vector `from` to unit vector `to` by the
/// shortest arc, applied to v (Rodrigues' formula with the unnormalised axis
/// k = from × to: R v = v·c + k × v + k (k·v) / (1 + c), c = from·to).
/// Undefined at to = -from; callers keep away from it.
sim_vec3 sim__swing(sim_vec3 from, sim_vec3 to, sim_vec3 v);

/// Projects every particle out of the ground, the static boxes and the
/// bodies' capsules, position only, and records the contact normal; bodies
/// take the opposite momentum (sim__particle_vs_bodies). h is the substep,
/// `it` the relaxation pass (from 0): an entity with it < its collide_from
/// is left out (sim__particles_project_ahead() found it clear).
void sim__collide_project(sim_world* w, float h, int it);

/// Whether sim__collide_project() leaves out an entity whose particles lie
/// in the box [lo, hi] (m) with radii at most rmax: no body's bounds for
/// the tick, no static box and not the ground come within reach. Bodies
/// do not move during a substep's relaxation, so the answer depends only
/// on the box.
bool sim__collide_skips(const sim_world* w, sim_vec3 lo, sim_vec3 hi, float rmax);

/// Applies restitution and friction to the particles in contact this
/// substep by moving their previous positions (velocity pass, after Müller
/// et al. 2020 section 3.5, in displacement form). h is the substep length.
void sim__collide_respond(sim_world* w, float h);

/// Whether the world's solver work per tick, with an entity of these counts
/// added, stays within def.max_solver_work (0: no limit) (world.c).
bool sim__work_fits(const sim_world* w, uint32_t particles, uint32_t dists, uint32_t joints,
                    uint32_t bodies, uint32_t bjoints);

/// Whether the world's solver work per tick, with `add` added, stays within
/// def.max_solver_work (0: no limit) (world.c). Unlike sim__work_fits it
/// counts add->soft_particles.
bool sim__work_fits_counts(const sim_world* w, const sim_counts* add);

/// The box of entity e's particle centres (e->p_count > 0), m, and their
/// largest radius in *rmax (may be NULL) (particle.c).
void sim__particle_bounds(const sim_world* w, const sim__entity* e, sim_vec3* lo, sim_vec3* hi,
                          float* rmax);

/// Verlet-integrates every particle over one substep; g_h2 is gravity × h²
/// (particle.c).
void sim__particles_integrate(sim_world* w, sim_vec3 g_h2);

/// Relaxation pass `it` (from 0) over the distance constraints and joint
/// limits of every entity that takes that many iterations this tick
/// (sim__entity.iterations, lod.c); inv_h2 = 1/h² for XPBD compliance
/// (particle.c). Counts the projections in w->stats.
/// Entities with it < their `ahead` are left out (done already).
void sim__particles_project(sim_world* w, float inv_h2, int it);

/// Before a substep's relaxation passes: each batched cloth that nothing
/// else touches between passes (no joint limits, long-range attachments,
/// self-collision or drag; not a soft body) gets its passes now with one
/// staging (sim__cloth_batches_ahead()) while its box stays clear of every
/// collider, and sets e->ahead (passes done) and e->collide_from (the
/// first pass whose collision pass must look at it). Entities share no
/// particle and bodies do not move during the passes, so the positions are
/// the same bits as pass by pass. Every other entity gets 0 and 0.
void sim__particles_project_ahead(sim_world* w, float inv_h2);

/// Whether sim__particles_project_ahead() runs passes ahead (true; the
/// same bits either way). Tests switch it off to compare, before any world
/// steps on another thread.
extern bool sim__cloth_ahead;

/// The row stride of cloth staging for a grid `cols` wide: cols + 6 or
/// more (a row's last pairs load eight floats from column cols - 2),
/// rounded up to a multiple of 4.
uint32_t sim__cloth_lane_stride(uint32_t cols);

/// Puts cloth entity e's distance constraints into blocks of four
/// (sim__lane_block, cloth_schedule.c) for sim__cloth_batches_project(),
/// replacing the blocks it had. Call it after an entity's constraints
/// change (spawn; tearing removes some). No allocation: the blocks go at the end of
/// w->lane_blocks, in the room sim_world_reserve() made; old blocks of e
/// are removed first and later ranges slide down.
///
/// A constraint between grid neighbours goes into the lane of its family
/// and place: across (structural, bend) as pairs of a row, down and the
/// two diagonals as runs of four columns. The blocks are in one sweep per
/// family (across in two colours, even pairs then odd, as in Box2D v3's
/// graph colouring; down; the two diagonals; bend across in two colours;
/// bend down: structural, then shear, then bend, as the constraints are
/// made), each row by row from row 0, the pinned one, so a pass carries a
/// hanging cloth's load down in one sweep as the sequential loop does. Constraints of no family (a
/// skirt's seam), or whose compliance differs from their block's, go into SCALAR blocks at the end,
/// in their array order. Torn ones are left out.
///
/// Returns SIM_OK with e batched, or leaves e with no blocks (the
/// sequential loop) and returns SIM_E_CAPACITY when the blocks or the
/// staging do not fit, SIM_E_INVALID_ARG when e is not a cloth, is
/// narrower than SIM__LANE_MIN_COLS or has a constraint that is not an
/// equality.
int sim__cloth_batches_rebuild(sim_world* w, sim__entity* e);

/// Removes entity e's blocks (despawn, rebuild): blocks after them slide
/// down, and so do the ranges of the entities that owned those.
void sim__cloth_batches_drop(sim_world* w, sim__entity* e);

/// Zeroes every block's λ (start of a substep, as the sequential
/// constraints' λ: Macklin et al. 2019, section 4).
void sim__cloth_batches_reset(sim_world* w);

/// One relaxation pass over batched cloth e's blocks, in order: each lane
/// an XPBD distance projection (Macklin et al. 2016, eq. 18) in lanes.h's
/// four-float lanes (SSE2 on x86-64, else the portable struct;
/// bit-identical), with one division (Δλ/|d| as one quotient), empty and
/// degenerate lanes masked to no change. The cloth's positions and inverse
/// masses are staged in w->lane_staging for the pass (structure of arrays,
/// padded rows). inv_h2 = 1/h², s⁻².
void sim__cloth_batches_project(sim_world* w, const sim__entity* e, float inv_h2);

/// Up to `passes` of sim__cloth_batches_project() on e with one staging:
/// after each pass, the staged particles' box (grown by rmax, m, their
/// largest radius) is given to sim__collide_skips(), and the passes stop
/// after the first one whose box is not clear. Returns the passes done;
/// *clear says whether the last one's box was clear. The positions are
/// the same bits as from that many single passes.
uint32_t sim__cloth_batches_ahead(sim_world* w, const sim__entity* e, float inv_h2, uint32_t passes,
                                  float rmax, bool* clear);

/// Whether sim__cloth_batches_project() may put two blocks in one AVX
/// register on a CPU that has AVX (x86-64 builds with SSE2 lanes; the same
/// results bit for bit either way). True; tests switch it off to compare,
/// before any world steps on another thread.
extern bool sim__cloth_lanes_avx;

/// The joint-limit clean-up passes after a substep's last collision
/// projection (particle.c).
void sim__particles_joint_limits(sim_world* w);

/// Tears every stick of a tearable entity stretched past its tear ratio
/// (tear.c): it becomes SIM__DIST_TORN, is recorded for
/// sim_world_drain_torn() and its entity's topology changes (topo_version,
/// topo_epoch, one SIM_EVENT_TORN per entity and substep).
void sim__tear(sim_world* w);

/// Each particle entity's level of detail and iterations for this tick
/// from the foci (lod.c); counts the frozen and reduced in w->stats.
void sim__lod_update(sim_world* w);

/// Puts every pinned garment particle on its point of its wearer's bone,
/// its previous position where it was (so it carries the bone's velocity),
/// before a substep's integration (garment.c; seed 000 §8's moving pin).
void sim__garments_pin(sim_world* w);

/// After a tick, when the characters' kinematic bones have been put on
/// their pose: the pinned particles onto their points again, previous
/// positions moved with them (garment.c).
void sim__garments_follow(sim_world* w);

/// One pass over the long-range attachments: a particle farther than
/// tether_len from its tether particle is put back on that sphere (only it
/// moves: the tether is pinned) (Kim, Chentanez and Müller 2012, §4;
/// garment.c).
void sim__tethers_project(sim_world* w, int it);

/// Ties each free particle of entity e to its nearest pinned particle in
/// the current layout (ties broken by the lower index) with that distance
/// as its limit: the long-range attachments of Kim, Chentanez and Müller
/// 2012 with Euclidean rest distances (garment.c). O(particles × pinned);
/// at spawn time only. Sets e->tethered when any particle got one.
void sim__tethers_build(sim_world* w, sim__entity* e);

/// Despawns the garments worn by entity `wearer` (garment.c).
void sim__garments_despawn(sim_world* w, sim_entity_id wearer);

/// Applies impulse j (N·s, world) at world point p to body i now, between
/// substeps: to the soft step's state when the body is in it, else to the
/// body; nothing for a kinematic or sleeping body (body.c).
void sim__body_push_now(sim_world* w, uint32_t i, sim_vec3 p, sim_vec3 j);

/// The most a particle's push-out may make a body's centre move away from
/// it, m/s: the rigid contacts' push-out cap (soft_step.c's MAX_PUSH).
#define SIM__PARTICLE_PUSH_SPEED 3.0f

/// sim__body_push_now() with an impulse of j (N·s) along the unit `dir`,
/// cut so that it does not take body i's centre velocity along `dir` past
/// vmax (m/s); nothing when it is there already. A push-out is a position
/// fix: without the cut, a cloth that engulfs a body, its constraints
/// pulling its particles back in every pass, throws the body (a fresh
/// user's report: a ball spawned inside a pinned 4 × 4 cloth left at
/// 48 m/s).
void sim__body_push_away(sim_world* w, uint32_t i, sim_vec3 p, sim_vec3 dir, float j, float vmax);

/// Wind and air (wind.c): after sim__particles_integrate(), the
/// aerodynamic force on every cloth triangle, from the velocities the
/// integration predicts, moves its particles by F/m · h². h is the substep.
void sim__wind_apply(sim_world* w, float h);

/// Self-collision (self_collide.c), one pass inside the substep's relaxation
/// loop: on the first (iteration 0) the spatial hash is rebuilt from the
/// current positions and the candidate pairs (within 1.5 × thickness, more
/// than self_hops grid hops apart) listed; then every pass pushes the
/// candidates closer than the thickness apart, each particle by at most
/// half the thickness per substep.
void sim__self_collide_project(sim_world* w, int iteration);

/// Speed at which a drag moves a pinned particle to its target, m/s.
#define SIM__PIN_DRAG_SPEED 10.0f

/// Moves each dragged pinned particle toward its target by at most
/// SIM__PIN_DRAG_SPEED × h, its previous position where it was (once a
/// substep, before integration; interact.c).
void sim__drags_move_pinned(sim_world* w, float h);

/// Projects the drags of free particles, one XPBD pass (interact.c).
void sim__drags_project(sim_world* w, float inv_h2);

/// The broadphase grid cell holding coordinate v (m), within ±10⁹.
static inline int32_t sim__cell_of(float v) {
    // Clamped: a body that blew up this tick (quarantined at its end) may
    // be anywhere, NaN included, and a float past int32 is no cell.
    float c = floorf(v / SIM__GRID_CELL);
    c = c > 1.0e9f ? 1.0e9f : c;
    c = c > -1.0e9f ? c : -1.0e9f; // NaN too
    return (int32_t)c;
}

/// The bucket of grid cell (x, y, z) (Teschner et al. 2003's spatial hash).
static inline uint32_t sim__cell_hash(int32_t x, int32_t y, int32_t z) {
    uint32_t h = (uint32_t)x * 73856093u ^ (uint32_t)y * 19349663u ^ (uint32_t)z * 83492791u;
    return h & (SIM__GRID_BUCKETS - 1u);
}

/// Whether two axis-aligned boxes overlap (touching counts).
static inline bool sim__aabb_overlap(sim_vec3 alo, sim_vec3 ahi, sim_vec3 blo, sim_vec3 bhi) {
    return alo.x <= bhi.x && blo.x <= ahi.x && alo.y <= bhi.y && blo.y <= ahi.y && alo.z <= bhi.z &&
           blo.z <= ahi.z;
}

/// Builds this tick's islands from the joints and the broad phase's pairs
/// (call after sim__contacts_begin_tick) (island.c).
void sim__islands_build(sim_world* w);

/// Steps the kinematic bodies that are in no island by h (island.c).
void sim__kinematic_advance(sim_world* w, float h);

/// After a tick: updates every island body's sleep time and puts islands
/// that have been slow for SIM__SLEEP_TIME to sleep (island.c).
void sim__islands_sleep(sim_world* w, float dt);

/// Wakes the sleeping island holding body i (nothing if it is awake).
void sim__body_wake(sim_world* w, uint32_t i);

/// Wakes the islands of every body of entity e.
void sim__entity_wake(sim_world* w, const sim__entity* e);

/// Wakes every sleeping island (gravity changed, a box appeared).
void sim__wake_all(sim_world* w);

/// Bodies [first, first + count) are about to be removed: wakes their
/// islands and whatever sleeps touching them, and renumbers the sleeping
/// rings past the gap (island.c).
void sim__sleep_despawned(sim_world* w, uint32_t first, uint32_t count);

/// Soft step (soft_step.c): the tick's awake bodies, constraints and
/// colours (after sim__islands_build); one rigid substep of all of them;
/// restitution, warm-start store and velocities back to the bodies.
void sim__soft_begin_tick(sim_world* w);
void sim__soft_substep(sim_world* w);
void sim__soft_end_tick(sim_world* w);
/// Rigid substeps per world substep in the soft step: enough for
/// SIM__SOFT_SUBSTEPS per 1/60 s, and at least that many per tick, for a
/// tick of dt seconds cut into `substeps` (>= 1).
int sim__soft_split_for(float dt, int substeps);
/// sim__soft_split_for() of the world's tick and substeps.
int sim__soft_split(const sim_world* w);

/// One rigid substep of length h of island k (solver.c).
void sim__island_substep(sim_world* w, const sim__island* isl, float h);

/// Closes what joint gaps and limit violations a tick left, by moving poses
/// only: velocities are not touched, so no energy comes from it (XPBD;
/// stabilize.c).
void sim__island_stabilize(sim_world* w, const sim__island* isl, int passes);

/// Passes over each skeleton's joints in island isl (sim__joint_project)
/// until none is off by more than SIM__NGS_TOL_LIN or SIM__NGS_TOL_ANG, at
/// most max_passes each. Returns the joint projections done (the first
/// pass visits every joint, later ones those next to a bone that moved).
/// Moves poses only (stabilize.c).
uint64_t sim__island_stabilize_to(sim_world* w, const sim__island* isl, int max_passes);

/// The soft step's end-of-tick stabilization (stabilize.c): every awake
/// island's joints to within tolerance, then bodies deeper than
/// SIM__NGS_STATIC_SLOP in the ground or a box lifted back, and the joints
/// again (at most SIM__NGS_STATIC_ROUNDS times). Poses only. Returns the
/// joint projections done.
uint64_t sim__soft_stabilize(sim_world* w);

/// The rigid split of island k this tick (solver.c).
int sim__island_split(const sim_world* w, const sim__island* isl, int substeps);

/// Finds the substep's contacts of one island on the predicted poses: its
/// dynamic bodies against the ground and boxes, and its candidate pairs
/// (contact.c).
void sim__contacts_find(sim_world* w, const sim__island* isl, float h);
