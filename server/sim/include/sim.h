/*
 * sim.h: the public interface of the ragdolld physics core (target rd_sim).
 *
 * What it owns: worlds of particles (rope, cloth, particle ragdolls) held
 * together by position-based constraints, static colliders (a ground plane and
 * axis-aligned boxes), and the fixed-step integrator that advances them.
 *
 * Threading: a world is single-threaded. Distinct worlds share nothing and may
 * be stepped on different threads at once.
 *
 * Units: SI throughout: metres, kilograms, seconds, radians, newton-seconds for
 * impulses. Right-handed with +Y up. Angles in radians unless a name ends in
 * _deg.
 *
 * Allocation: a world's def sets its limits (max_particles, max_bodies, ...),
 * the most it may ever hold. Its arrays start small and grow geometrically
 * (doubling, capped at the limits) when a spawn needs room, through the def's
 * allocator; sim_world_reserve() grows them ahead of time. Stepping and
 * despawning never allocate, and nothing shrinks (a world keeps its high-water
 * mark). A spawn beyond a limit is SIM_E_CAPACITY; a growth the allocator
 * refuses is SIM_E_NOMEM, and the world is as it was.
 *
 * Errors: functions that can fail return int, 0 on success or a negative
 * SIM_E_* code (see sim_strerror()). On error nothing in the world changes.
 *
 * Determinism: the same world def, the same calls in the same order and the
 * same build flags (-ffp-contract=off, no fast-math) give bit-identical state;
 * sim_world_hash() checks it.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// A 3-vector of float: a position (m), velocity (m/s), impulse (N·s) or
/// direction. Laid out as three consecutive floats with no padding.
typedef struct sim_vec3 {
    float x, y, z;
} sim_vec3;

/// A unit quaternion (x, y, z, w) with w the scalar part.
typedef struct sim_quat {
    float x, y, z, w;
} sim_quat;

// ---------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------

/// The simulator's error table: XX(NAME, value, message). Values are negative.
#define SIM_ERRNO_MAP(XX)                                                                          \
    XX(INVALID_ARG, -1, "invalid argument")                                                        \
    XX(NOT_FINITE, -2, "a number is NaN or infinite")                                              \
    XX(OUT_OF_RANGE, -3, "a value is outside its allowed range")                                   \
    XX(CAPACITY, -4, "the world has no room for this")                                             \
    XX(STALE_ID, -5, "no such entity (unknown or despawned id)")                                   \
    XX(BAD_INDEX, -6, "particle index out of range")                                               \
    XX(NOMEM, -7, "out of memory")                                                                 \
    XX(BAD_STATE, -8, "the entity is not in a state that allows this")                             \
    XX(UNKNOWN_NAME, -9, "no skeleton, clip or bone of that name")                                 \
    XX(CORRUPT, -10, "the world state is malformed")                                               \
    XX(VERSION, -11, "the world state is from another format or physics version")                  \
    XX(ASSET_MISMATCH, -12, "a skeleton differs from the one the world state was saved with")

/// Error codes returned by sim functions (0 is success).
typedef enum sim_error {
    SIM_OK = 0,
#define SIM__ERR_ENUM(name, value, msg) SIM_E_##name = (value),
    SIM_ERRNO_MAP(SIM__ERR_ENUM)
#undef SIM__ERR_ENUM
} sim_error;

/// A human-readable message for a sim error code; never NULL (unknown codes
/// give "unknown error"). The string is static.
const char* sim_strerror(int err);

/// The symbolic name of a sim error code without prefix, e.g. "STALE_ID";
/// "OK" for 0 and "UNKNOWN" for anything else. The string is static.
const char* sim_err_name(int err);

// ---------------------------------------------------------------------------
// Limits and small helpers
// ---------------------------------------------------------------------------

#define SIM_MAX_ITERATIONS 100     ///< Upper bound for sim_params.iterations.
#define SIM_MAX_SUBSTEPS   32      ///< Upper bound for sim_params.substeps.
#define SIM_MAX_GRAVITY    1000.0f ///< Bound on each gravity component, m/s².
#define SIM_MAX_IMPULSE    1.0e4f  ///< Bound on each impulse component, N·s.
#define SIM_MIN_MASS       1.0e-3f ///< Lower bound for a particle mass, kg.
#define SIM_MAX_MASS       1.0e4f  ///< Upper bound for a particle mass, kg.
#define SIM_MIN_LENGTH     1.0e-3f ///< Lower bound for a segment length or cloth spacing, m.
#define SIM_MAX_LENGTH     10.0f   ///< Upper bound for a segment length or cloth spacing, m.

// Bounds of the air's parameters (sim_params.wind and what follows it).
#define SIM_MAX_WIND        100.0f ///< Bound on each wind component, m/s.
#define SIM_MAX_AIR         10.0f  ///< Bound on the air density, kg/m³, and C_d, C_l.
#define SIM_MIN_GUST_PERIOD 0.1f   ///< Lower bound for sim_params.gust_period, s.
#define SIM_MAX_GUST_PERIOD 600.0f ///< Upper bound for sim_params.gust_period, s.

/// True when f is neither NaN nor infinite.
bool sim_is_finite(float f);

/// True when all three components of v are finite.
bool sim_vec3_is_finite(sim_vec3 v);

// ---------------------------------------------------------------------------
// Allocation
// ---------------------------------------------------------------------------

/// Memory hooks a world allocates through. `size` is passed to free as well,
/// so a counting wrapper can report bytes per world. `alloc` returns NULL on
/// failure; `align` is a power of two no larger than 64.
typedef struct sim_allocator {
    void* (*alloc)(void* ctx, size_t size, size_t align);
    void (*free)(void* ctx, void* p, size_t size);
    void* ctx;
} sim_allocator;

/// The default allocator: aligned_alloc()/free() from libc.
sim_allocator sim_allocator_default(void);

// ---------------------------------------------------------------------------
// Ids
// ---------------------------------------------------------------------------

/// Handle to an entity (a rope, a cloth or a particle ragdoll). Pass by value.
/// A zero-initialised id is null. A despawned id stays invalid: its slot's
/// generation has moved on, so it never names another entity.
typedef struct sim_entity_id {
    uint32_t index1;     ///< Slot index + 1, so that a zeroed id is null.
    uint32_t generation; ///< Slot generation when the id was minted, 1 .. 2^21-1.
} sim_entity_id;

/// True when id is the null id.
#define SIM_ID_IS_NULL(id) ((id).index1 == 0)

/// The wire form of an entity id: generation << 32 | index1. It is always
/// below 2^53, so JSON and JavaScript numbers carry it exactly.
uint64_t sim_entity_id_store(sim_entity_id id);

/// Inverse of sim_entity_id_store(). A value that no store could produce gives
/// an id that fails validation (never a crash).
sim_entity_id sim_entity_id_load(uint64_t v);

/// What an entity is.
typedef enum sim_entity_kind {
    SIM_ENTITY_ROPE = 1,      ///< A chain of particles.
    SIM_ENTITY_CLOTH = 2,     ///< A cols × rows particle grid.
    SIM_ENTITY_RAGDOLL = 3,   ///< A 16-particle humanoid (sim_ragdoll_particle).
    SIM_ENTITY_CHARACTER = 4, ///< A skeleton of rigid bones (sim_character_def).
    SIM_ENTITY_BALL = 5,      ///< A dynamic rigid sphere (sim_ball_def).
    SIM_ENTITY_SOFTBODY = 6,  ///< A particle lattice held by shape matching (sim_softbody_def).
} sim_entity_kind;

/// Lower-case name of a kind ("rope", "cloth", "ragdoll", "character", "ball",
/// "softbody"); "unknown" otherwise.
const char* sim_entity_kind_name(sim_entity_kind kind);

// ---------------------------------------------------------------------------
// World
// ---------------------------------------------------------------------------

/// Opaque world. Create with sim_world_create(), free with sim_world_destroy().
typedef struct sim_world sim_world;

/// Opaque library of skeletons and animation clips (see below), shared
/// read-only by any number of worlds.
typedef struct sim_library sim_library;

/// Parameters that may change while a world runs (sim_world_set_params()).
typedef struct sim_params {
    sim_vec3 gravity; ///< m/s²; each component within ±SIM_MAX_GRAVITY.
    /// Fraction of the implied velocity kept per substep, [0, 1]; 1 = none.
    float damping;
    /// Particle constraint relaxation passes per substep,
    /// 1..SIM_MAX_ITERATIONS. Particles only: rigid bodies take 3 contact
    /// and joint passes per rigid substep and 4 position-only joint passes
    /// per tick whatever this is (their accuracy comes from substeps).
    int iterations;
    /// Substeps per tick, 1..SIM_MAX_SUBSTEPS. Rigid bodies take at least 4
    /// rigid substeps per tick and up to 16 per island for fast impacts,
    /// spread over these.
    int substeps;
    /// Fraction of the normal speed kept when a particle hits a collider, [0, 1].
    float bounciness;
    /// Particles: fraction of the tangential speed removed per substep in
    /// contact (plus static friction). Rigid bodies: the Coulomb friction
    /// coefficient. [0, 1].
    float friction;
    /// Wind: the air's mean velocity, m/s, each component within
    /// ±SIM_MAX_WIND. Default 0 (still air). Cloth triangles feel the air
    /// (wind.c): drag and lift on their velocity relative to it.
    sim_vec3 wind;
    /// Gust amplitude, a fraction of the wind, [0, 1]. Default 0. The air
    /// moves at wind · (1 + gust · s(t)), t the world time (tick · dt), with
    /// s(t) = ½ [sin(2π t/T) + sin(2π φ t/T)], φ = (1 + √5)/2 and
    /// T = gust_period: deterministic, quasi-periodic, |s| <= 1.
    float gust;
    /// Gust period T, s, [SIM_MIN_GUST_PERIOD, SIM_MAX_GUST_PERIOD]. Default 3.
    float gust_period;
    /// Air density ρ, kg/m³, [0, SIM_MAX_AIR]. Default 1.2 (air at 20 °C,
    /// sea level); 0 turns the aerodynamics off.
    float air_density;
    /// Drag coefficient C_d of a cloth triangle (force along its normal),
    /// [0, SIM_MAX_AIR]. Default 1.
    float drag_coef;
    /// Lift coefficient C_l of a cloth triangle (force across the relative
    /// velocity), [0, SIM_MAX_AIR]. Default 0.5.
    float lift_coef;
} sim_params;

/// Checks every field of p against the ranges documented on sim_params.
/// Returns 0, SIM_E_NOT_FINITE or SIM_E_OUT_OF_RANGE.
int sim_params_validate(const sim_params* p);

/// The largest limits a world def may give (sim_world_def's max_* fields).
#define SIM_LIMIT_MAX_ENTITIES    (1u << 20)
#define SIM_LIMIT_MAX_PARTICLES   (1u << 24)
#define SIM_LIMIT_MAX_CONSTRAINTS (1u << 26)
#define SIM_LIMIT_MAX_BODIES      (1u << 20)
#define SIM_LIMIT_MAX_JOINTS      (1u << 20)
#define SIM_LIMIT_MAX_CONTACTS    (1u << 26)

/// Counts of what an entity adds to a world (sim_rope_def_counts() and the
/// other def counts), of what a world holds (sim_world_counts()) or of what
/// it has room for (sim_world_reserved()).
typedef struct sim_counts {
    uint32_t entities;     ///< Entity slots (1 per entity).
    uint32_t particles;    ///< Particles of ropes, cloths and particle ragdolls.
    uint32_t constraints;  ///< Distance constraints, equality and inequality.
    uint32_t joint_limits; ///< Particle ragdolls' joint limits (8 each).
    uint32_t bodies;       ///< Rigid bodies: characters' bones and balls.
    uint32_t joints;       ///< Rigid joints between a character's bones.
    /// Particles of soft bodies (also counted in `particles`): each costs
    /// SIM_SOFTBODY_CONTACT_WORK projections of contact queries per
    /// relaxation pass besides its collision projection, and
    /// SIM_SOFTBODY_WORK_PER_SUBSTEP projections of shape matching per
    /// substep (see max_solver_work). Not a limit of its own: reserve
    /// ignores it.
    uint32_t soft_particles;
    /// Links of REDUCED characters' articulations (also counted in
    /// `bodies`): each costs SIM_ARTIC_LINK_WORK rigid-body substeps' work
    /// more per articulation step, ceil(dt × 240) steps a tick (see
    /// max_solver_work). Not a limit of its own: reserve ignores it.
    uint32_t artic_links;
} sim_counts;

/// What a REDUCED character's link costs per articulation step beyond its
/// body, in rigid-body substeps: ragdoll-artic-bench measures a reduced
/// humanoid at 4.4-4.9× (in the air) to 6.7-7.2× (down stairs) a maximal one's
/// tick, whose 16 bodies and 15 joints take 4 substeps; 6 × 31 × 4 / (16
/// links × 4 steps) ≈ 12.
#define SIM_ARTIC_LINK_WORK 12u

/// Everything needed to create a world. Always start from
/// sim_world_def_default(); a hand-zeroed def is rejected.
///
/// The max_* fields are limits: the most the world may ever hold, not what
/// it allocates. Memory follows what it holds (see "Allocation" above and
/// sim_world_reserved_bytes()); sim_world_def_max_bytes() is what a world
/// full to every limit would reserve.
/// The rigid-body solver a world uses (sim_world_def.solver).
typedef enum sim_solver {
    /// Extended position-based dynamics (Müller et al. 2020, "Detailed Rigid
    /// Body Simulation with Extended Position Based Dynamics"): positional
    /// corrections, 4-16 rigid substeps per tick per island (more for fast
    /// impacts), contacts found every substep. Joints hold within
    /// millimetres under hard impacts (bench/impacts.c), but piles do not
    /// come to rest and it costs 2-3 times the soft step.
    SIM_SOLVER_XPBD = 0,
    /// Soft step (Box2D v3's solver: Catto 2024, "Solver2D" and "Soft
    /// Step" posts on box2d.org): velocity-level soft contacts, 4 substeps
    /// per tick each with one biased solve and one relax iteration, contacts
    /// found once per tick (speculative), warm-started from the last tick,
    /// constraints solved in graph colours (server/sim/soft.h); rigid joints
    /// with a Baumgarte bias, and after the substeps a position-only
    /// stabilization of each skeleton's joints (Box2D v2.4's NGS; stabilize.c)
    /// that closes them to 0.25 mm and 0.25°. Piles come to rest and sleep.
    /// The default.
    SIM_SOLVER_SOFT_STEP = 1,
} sim_solver;

typedef struct sim_world_def {
    sim_params params; ///< Initial parameters.
    float dt;          ///< Tick length in seconds, (0, 1]. Default 1/60.
    bool ground;       ///< Whether the plane y = 0 is solid. Default true.
    /// Half-size of the world cube centred on the origin, m: every position a
    /// caller passes in must lie inside it. Default 1000.
    float half_extent;
    uint32_t max_particles; ///< 1..SIM_LIMIT_MAX_PARTICLES, default 32768.
    uint32_t
        max_constraints; ///< Distance constraints, 0..SIM_LIMIT_MAX_CONSTRAINTS, default 262144.
    /// Entities (slots), 1..SIM_LIMIT_MAX_ENTITIES, default 256. Particle
    /// joint limits may number 8 per entity.
    uint32_t max_entities;
    uint32_t max_boxes; ///< Static boxes, 0..2^20, default 64 (allocated at creation).
    uint32_t max_drags; ///< Simultaneous drags, 0..2^20, default 64 (allocated at creation).
    /// Solver work allowed per tick, in projections: (distance constraints +
    /// joint limits + particles + SIM_SOFTBODY_CONTACT_WORK × soft-body
    /// particles) × iterations × substeps, plus
    /// SIM_SOFTBODY_WORK_PER_SUBSTEP per soft-body particle per substep,
    /// plus 100 per rigid
    /// body and rigid joint per rigid substep (at least 4 of those per tick
    /// under XPBD, at least 4 per 1/60 s under the soft step; one costs
    /// about as much as 100 particle projections in a pile of ragdolls). A spawn or
    /// parameter change that would exceed it fails with SIM_E_CAPACITY, so
    /// one world cannot take the whole machine. Default 10^6 (about 10 ms
    /// of one core here); 0 means no limit.
    uint64_t max_solver_work;
    uint32_t max_bodies; ///< Rigid bodies (bones, balls), 0..SIM_LIMIT_MAX_BODIES, default 2048.
    uint32_t max_joints; ///< Rigid joints, 0..SIM_LIMIT_MAX_JOINTS, default 2048.
    /// Contacts the rigid solver may hold at once (XPBD: in one substep;
    /// the soft step: contact points in one tick), 0..SIM_LIMIT_MAX_CONTACTS,
    /// default 49152 (24 × 2048). The list has room for 24 per body the
    /// world has room for under XPBD, 8 under the soft step (the densest
    /// pile measured uses 2.3 per awake body), up to this; contacts beyond
    /// the room are skipped and counted (sim_overflows.contacts; the soft
    /// step keeps points against the ground and boxes first).
    uint32_t max_contacts;
    sim_solver solver; ///< Rigid-body solver; default SIM_SOLVER_SOFT_STEP.
    /// Skeletons and clips for characters; NULL allows no characters. Not
    /// owned: it must outlive the world and not change while the world lives.
    const sim_library* library;
    sim_allocator allocator; ///< Default: sim_allocator_default().
    uint32_t cookie;         ///< Set by sim_world_def_default(); do not touch.
} sim_world_def;

/// A def with the defaults: 60 Hz, 1 substep, 8 iterations, gravity
/// (0, -9.81, 0), damping 0.99, bounciness 0.3, friction 0.5, ground on.
sim_world_def sim_world_def_default(void);

/// Creates an empty world with room for nothing yet: what it reserves is the
/// world itself, the event ring, the broadphase's bucket heads, max_boxes
/// boxes and max_drags drags (about 30 KiB with the defaults, whatever the
/// limits; sim_world_reserved_bytes()). Its arrays grow when entities are
/// spawned. Errors: SIM_E_INVALID_ARG (NULL, or a def not from
/// sim_world_def_default()), SIM_E_NOT_FINITE / SIM_E_OUT_OF_RANGE (a bad
/// field, ranges on sim_world_def), SIM_E_NOMEM. On success *out owns the
/// world; free it with sim_world_destroy().
int sim_world_create(const sim_world_def* def, sim_world** out);

/// Frees a world and everything in it. NULL is allowed.
void sim_world_destroy(sim_world* w);

/// Advances the world by one tick of def.dt seconds: `substeps` times,
/// integrate (position Verlet with damping), relax all constraints
/// `iterations` times (XPBD, Macklin et al. 2016, eq. 18; Gauss-Seidel in
/// array order, Jakobsen 2001 section 3), project particles out of colliders,
/// then apply restitution and friction to particles in contact. Then any
/// entity whose state went non-finite or left the world far behind (10 × its
/// half extent) is removed and reported (SIM_EVENT_UNSTABLE): one bad body
/// never poisons the world. Never allocates.
void sim_world_step(sim_world* w);

/// Number of ticks stepped since creation.
uint64_t sim_world_tick(const sim_world* w);

/// Tick length in seconds.
float sim_world_dt(const sim_world* w);

/// The current parameters.
sim_params sim_world_params(const sim_world* w);

/// Replaces the parameters. Validates first (see sim_params_validate()); on
/// error nothing changes. A change of substeps rescales every particle's
/// previous position so that its implied velocity (m/s) is kept. Errors:
/// SIM_E_NOT_FINITE, SIM_E_OUT_OF_RANGE, SIM_E_CAPACITY (over the solver
/// work budget).
int sim_world_set_params(sim_world* w, const sim_params* p);

/// Half-size of the world cube, m (sim_world_def.half_extent).
float sim_world_half_extent(const sim_world* w);

/// True when every coordinate v lies within the world cube.
bool sim_world_contains(const sim_world* w, sim_vec3 v);

// ---------------------------------------------------------------------------
// Static colliders
// ---------------------------------------------------------------------------

/// A static axis-aligned box, e.g. a platform or a stair step.
typedef struct sim_box {
    sim_vec3 center;       ///< m.
    sim_vec3 half_extents; ///< m, each in (0, half_extent].
} sim_box;

/// Adds a static box. Errors: SIM_E_NOT_FINITE, SIM_E_OUT_OF_RANGE (outside
/// the world or a non-positive extent), SIM_E_CAPACITY.
int sim_world_add_box(sim_world* w, sim_box box);

/// Number of static boxes.
uint32_t sim_world_box_count(const sim_world* w);

/// The static boxes, box_count of them. Valid until the next add_box.
const sim_box* sim_world_boxes(const sim_world* w);

/// True when the ground plane y = 0 is solid.
bool sim_world_has_ground(const sim_world* w);

// ---------------------------------------------------------------------------
// Spawning
// ---------------------------------------------------------------------------

/// A rope: segments + 1 particles laid out from `anchor` along `direction`,
/// joined by distance constraints of rest length segment_length.
typedef struct sim_rope_def {
    sim_vec3 anchor;      ///< First particle, m.
    sim_vec3 direction;   ///< Unit vector the rope is laid along. Default +X.
    uint32_t segments;    ///< 1..1000.
    float segment_length; ///< m, [SIM_MIN_LENGTH, SIM_MAX_LENGTH].
    float mass;           ///< kg per particle, [SIM_MIN_MASS, SIM_MAX_MASS]. Default 1.
    float radius;         ///< Collision radius per particle, m. Default 0.02.
    float compliance;     ///< XPBD compliance of each segment, m/N, >= 0. Default 0 (rigid).
    bool pin_first;       ///< Pin particle 0 (inverse mass 0). Default true.
    uint32_t cookie;      ///< Set by sim_rope_def_default().
} sim_rope_def;

/// Rope defaults: 10 segments of 0.1 m along +X, 1 kg particles, first pinned.
sim_rope_def sim_rope_def_default(void);

/// A cloth: cols × rows particles, row-major, starting at `origin` with
/// columns along `across` (default +X) and rows along `down` (default -Y, a
/// hanging sheet), joined by structural (to the right and below), shear
/// (diagonals) and bend (two apart) distance constraints. Its triangles,
/// two per grid quad (sim_cloth_triangle()), feel the air (sim_params.wind).
typedef struct sim_cloth_def {
    sim_vec3 origin;          ///< Particle (0, 0), the top-left corner, m.
    uint32_t cols;            ///< 2..256.
    uint32_t rows;            ///< 2..256.
    float spacing;            ///< Grid spacing, m, [SIM_MIN_LENGTH, SIM_MAX_LENGTH].
    bool pin_top;             ///< Pin row 0. Default true.
    float mass;               ///< kg per particle. Default 1.
    float radius;             ///< Collision radius per particle, m. Default 0.01.
    float stretch_compliance; ///< Structural constraints, m/N. Default 0.
    float shear_compliance;   ///< Shear constraints, m/N. Default 0.
    float bend_compliance;    ///< Bend constraints, m/N. Default 0.
    /// Long-range attachments (Kim, Chentanez and Müller 2012): each free
    /// particle at most its rest distance from the nearest pinned one, so
    /// the sheet cannot stretch away from its pins. Default false.
    bool long_range;
    float tear_ratio; ///< Sticks tear past this × rest length (sim_entity_set_tear()); 0: never.
    /// Unit direction of the columns (particle (x, 0) is origin + x·spacing·
    /// across). Default +X. With `down`, unit and perpendicular within 1e-3,
    /// else SIM_E_OUT_OF_RANGE.
    sim_vec3 across;
    sim_vec3 down; ///< Unit direction of the rows. Default -Y.
    bool pin_left; ///< Pin column 0 (a flag on its pole). Default false.
    /// Self-collision (self_collide.c): particle–particle contacts at
    /// `thickness` between particles more than a few grid hops apart.
    /// Default false.
    bool self_collision;
    /// Self-collision distance, m, [SIM_MIN_LENGTH, 1], or 0 (the default)
    /// for 0.8 × spacing (kept within [SIM_MIN_LENGTH, 1]). A particle
    /// cannot pass through a grid triangle without coming within spacing/√2
    /// of one of its corners, so a thickness of at least 0.75 × spacing keeps
    /// layers apart; a thinner one lets a particle slip through the middle
    /// of a triangle.
    float thickness;
    uint32_t cookie; ///< Set by sim_cloth_def_default().
} sim_cloth_def;

/// Cloth defaults: the seed 000 section 8 sheet, 12 × 10 at 0.2 m, top pinned.
sim_cloth_def sim_cloth_def_default(void);

/// Triangle t of a cols × rows cloth grid, t < sim_cloth_triangle_count():
/// quad (x, y) = (q mod (cols-1), q div (cols-1)), q = t/2, splits along its
/// diagonal from (x, y) to (x+1, y+1) into (x,y) (x+1,y) (x+1,y+1) for even t
/// and (x,y) (x+1,y+1) (x,y+1) for odd t; out[0..2] = a, b, c are local
/// particle indices (row-major), ordered so that (b - a) × (c - a) points
/// along across × down in the rest pose. The grid is the triangle list for
/// now: a tearing cloth will keep its own list, rebuilt from this one.
void sim_cloth_triangle(uint32_t cols, uint32_t t, uint32_t out[3]);

/// Triangles of a cols × rows grid: 2 (cols - 1)(rows - 1).
uint32_t sim_cloth_triangle_count(uint32_t cols, uint32_t rows);

/// Aerodynamic force on one triangle (wind.c), N: corners a, b, c (m), the
/// triangle's mean velocity relative to the air v (m/s), air density rho
/// (kg/m³), coefficients cd and cl. With area A = |(b-a)×(c-a)|/2, unit
/// normal n and q = ½ ρ A |v| (v·n):
///   drag  F_d = -C_d q n                      (along n, against the motion)
///   lift  F_l = -C_l q (n - (n·v̂) v̂)         (in the plane of n and v, ⟂ v)
/// The flat-plate model used for cloth (e.g. Keckskeméthy et al.; Bridson
/// et al. 2003 use the same normal drag): face-on (n ∥ v) the drag is
/// ½ ρ C_d A |v|² and the lift 0; edge-on both are 0; the lift peaks at 45°.
/// Zero for a degenerate triangle or v = 0.
sim_vec3 sim_aero_triangle_force(sim_vec3 a, sim_vec3 b, sim_vec3 c, sim_vec3 v, float rho,
                                 float cd, float cl);

/// The air's velocity at world time t (s) under p's wind and gusts, m/s
/// (see sim_params.gust).
sim_vec3 sim_wind_at(const sim_params* p, double t);

/// Named particles of the particle ragdoll, in storage order.
typedef enum sim_ragdoll_particle {
    SIM_RP_HEAD,
    SIM_RP_NECK,
    SIM_RP_CHEST,
    SIM_RP_PELVIS,
    SIM_RP_SHOULDER_L,
    SIM_RP_ELBOW_L,
    SIM_RP_HAND_L,
    SIM_RP_SHOULDER_R,
    SIM_RP_ELBOW_R,
    SIM_RP_HAND_R,
    SIM_RP_HIP_L,
    SIM_RP_KNEE_L,
    SIM_RP_FOOT_L,
    SIM_RP_HIP_R,
    SIM_RP_KNEE_R,
    SIM_RP_FOOT_R,
    SIM_RP_COUNT
} sim_ragdoll_particle;

/// Flexion limit of the particle ragdoll's elbows and knees: 0° (straight) to
/// 150°, never bent backwards (seed 000 section 3, seed 004).
#define SIM_RAGDOLL_HINGE_MAX_DEG 150.0f

/// A particle ragdoll (seed 002, in 3D; Jakobsen 2001 section 4): 16 named
/// particles joined by rigid sticks for the bones and the braced torso, with
/// inequality constraints as joint limits: elbows and knees bend 0°..150° and
/// never backwards, the head cannot fold into the chest, the legs cannot fold
/// into the torso.
typedef struct sim_ragdoll_def {
    sim_vec3 position; ///< Pelvis position, m. The feet hang 0.9 m below it.
    float facing;      ///< Yaw about +Y, radians; 0 faces +Z.
    float mass;        ///< kg per particle, [SIM_MIN_MASS, SIM_MAX_MASS]. Default 1.
    uint32_t cookie;   ///< Set by sim_ragdoll_def_default().
} sim_ragdoll_def;

/// Ragdoll defaults: at (0, 1, 0), facing +Z, 1 kg particles.
sim_ragdoll_def sim_ragdoll_def_default(void);

/// Shape of a soft body's lattice (sim_softbody_def.shape).
typedef enum sim_softbody_shape {
    SIM_SOFTBODY_BOX = 0,    ///< A cube: every point of the resolution³ lattice.
    SIM_SOFTBODY_SPHERE = 1, ///< The lattice points whose cells' centres lie in the ball.
} sim_softbody_shape;

/// Bounds of sim_softbody_def fields.
#define SIM_SOFTBODY_MIN_SIZE 0.05f ///< m.
#define SIM_SOFTBODY_MAX_SIZE 5.0f  ///< m.
#define SIM_SOFTBODY_MIN_RES  2u    ///< Lattice points per edge.
#define SIM_SOFTBODY_MAX_RES  16u   ///< Lattice points per edge (4096 particles at most).
/// Solver work (projections) of one soft-body particle per substep for its
/// shape matching: the fit, the goal, and the volume term's fit and move.
#define SIM_SOFTBODY_WORK_PER_SUBSTEP 4u
/// Solver work (projections) of one soft-body particle per relaxation pass
/// for its contacts with other soft bodies (hash lookups and pair tests),
/// besides its collision projection. Measured: 20 soft bodies of 4³ in
/// stacks take 1.9 ms a tick at 8 iterations (186 ns per particle and
/// pass, on a loaded 2-core machine where a projection takes about 10 ns).
#define SIM_SOFTBODY_CONTACT_WORK 16u

/// A soft body (seed 000 §9): a lattice of particles filling a cube or a
/// ball, held to its rest shape by shape matching (Müller et al. 2005,
/// "Meshless Deformations Based on Shape Matching", §3.3: goal g_i = R q_i
/// + c with c the current centroid, q_i the rest offset from the rest
/// centroid and R the rotational part of A = Σ (x_i − c) q_iᵀ), R found by
/// the quaternion method of Müller et al. 2016 ("A Robust Method to Extract
/// the Rotational Part of Deformations", Alg. 1) warm-started from the last
/// substep, so R is always a proper rotation.
///
/// The lattice has `resolution` points along each edge of the bounding
/// cube of edge `size`, spaced d = size / resolution, each point at the
/// centre of its cell, each particle a sphere of radius d/2: the particles
/// fill the cube (or ball) exactly, so the body rests with its surface, not
/// its particle centres, on what it touches. Particles are numbered x
/// fastest, then y, then z, skipping points outside a sphere. Each
/// particle has mass mass / n. Initially axis-aligned, at rest.
///
/// Shape matching runs once per substep of length h, after integration
/// and before the relaxation passes: each particle is pulled toward its goal
/// by a zero-length XPBD constraint (Macklin et al. 2016, eq. 18, one
/// iteration per substep so λ starts at 0) of compliance
/// α_i = (1 − s)/s · (1/60 s)² / m_i, s = `stiffness`: it moves by the
/// fraction β = 1 / (1 + (1 − s)/s · (1/60 s ÷ h)²) of the way to its goal.
/// At one 1/60 s step β = s (seed 000 §9's "lerp by stiffness"); at any
/// other tick rate or substep count it is the same spring (natural
/// frequency 60·√(s/(1 − s)) rad/s), so the motion does not depend on the
/// tick rate. s = 1 is rigid (the goal is reached every substep).
///
/// `pressure` p adds a volume term: the XPBD constraint C = det F − 1 on the
/// linear fit F = A·(Σ q_i q_iᵀ)⁻¹ (Müller et al. 2005 §4.2's volume
/// measure), gradient ∇_i C = cof(F)·(Σ q qᵀ)⁻¹ q_i, compliance such that at
/// rest and a 1/60 s step it removes the fraction p of a volume error; 0 is
/// off.
///
/// Contacts: its particles collide with the ground, boxes and rigid bodies
/// like any particle, and with the particles of other soft bodies
/// (sphere against sphere, found by a spatial hash every relaxation pass,
/// with the world's friction), so stacked soft bodies do not interpenetrate.
typedef struct sim_softbody_def {
    sim_vec3 position;        ///< Centre, m; the whole cube must lie in the world.
    sim_softbody_shape shape; ///< Default SIM_SOFTBODY_BOX.
    float size; ///< Edge (box) or diameter (sphere), m, [SIM_SOFTBODY_MIN_SIZE, _MAX_SIZE].
                ///< Default 1.
    uint32_t resolution; ///< Lattice points per edge, [SIM_SOFTBODY_MIN_RES, _MAX_RES]. Default 4.
    float stiffness;     ///< Shape-matching stiffness s, (0, 1] (above). Default 0.5.
    float pressure;      ///< Volume term's stiffness, [0, 1] (above); default 0 (off).
    /// Total mass, kg, at most SIM_MAX_MASS; each particle's share must be at
    /// least SIM_MIN_MASS (so 10 kg allows every resolution). Default 10.
    float mass;
    uint32_t cookie; ///< Set by sim_softbody_def_default().
} sim_softbody_def;

/// Soft-body defaults: a 1 m box of 4³ particles at (0, 1, 0), stiffness
/// 0.5, no volume term, 10 kg.
sim_softbody_def sim_softbody_def_default(void);

/// Spawns a soft body (errors as sim_world_spawn_rope(); sizes and
/// stiffness outside their ranges are SIM_E_OUT_OF_RANGE, a resolution
/// outside its range SIM_E_OUT_OF_RANGE). It adds what
/// sim_softbody_def_counts() says. Its sticks (sim_entity_copy_sticks())
/// are the lattice edges between surface particles (a particle with a
/// lattice neighbour missing), for drawing; it has no distance constraints.
int sim_world_spawn_softbody(sim_world* w, const sim_softbody_def* def, sim_entity_id* out);

/// What a soft body's shape matching found in the last substep.
typedef struct sim_softbody_view {
    sim_quat rotation;    ///< R of the last fit (unit; identity before the first step).
    sim_vec3 centroid;    ///< c of the last fit, m.
    float volume_ratio;   ///< det F of the last fit (1 at the rest volume).
    uint32_t polar_iters; ///< Quaternion iterations the last fit took.
    sim_softbody_shape shape;
    float size; ///< m.
    uint32_t resolution;
    float stiffness, pressure;
} sim_softbody_view;

/// Fills *out. Errors: SIM_E_STALE_ID (also for other kinds).
int sim_softbody_get_view(const sim_world* w, sim_entity_id id, sim_softbody_view* out);

/// Spawns a rope, a cloth or a particle ragdoll. Validates the def first.
/// Errors: SIM_E_INVALID_ARG (NULL or a def not from its _default()),
/// SIM_E_NOT_FINITE, SIM_E_OUT_OF_RANGE (a field outside its range or a
/// particle outside the world), SIM_E_CAPACITY (beyond the world's limits
/// for particles, constraints, joint limits or entities, or over the solver
/// work budget), SIM_E_NOMEM (the arrays had to grow and the allocator
/// refused; the world is unchanged). On success *out names the new entity.
/// What it adds is what sim_rope_def_counts() and the others say.
int sim_world_spawn_rope(sim_world* w, const sim_rope_def* def, sim_entity_id* out);
/// See sim_world_spawn_rope().
int sim_world_spawn_cloth(sim_world* w, const sim_cloth_def* def, sim_entity_id* out);
/// See sim_world_spawn_rope().
int sim_world_spawn_ragdoll(sim_world* w, const sim_ragdoll_def* def, sim_entity_id* out);

/// Removes an entity, its particles, constraints and drags. Later entities'
/// storage moves down; their ids stay valid. Errors: SIM_E_STALE_ID.
int sim_world_despawn(sim_world* w, sim_entity_id id);

/// True when id names a live entity of w.
bool sim_entity_is_valid(const sim_world* w, sim_entity_id id);

// ---------------------------------------------------------------------------
// Interaction
// ---------------------------------------------------------------------------

/// Changes a particle's implied velocity by impulse × inverse mass (N·s → m/s):
/// previous position -= Δv · h, with h the substep length. A pinned particle
/// (inverse mass 0) is unchanged. Errors: SIM_E_STALE_ID, SIM_E_BAD_INDEX,
/// SIM_E_NOT_FINITE, SIM_E_OUT_OF_RANGE (a component beyond ±SIM_MAX_IMPULSE).
int sim_entity_apply_impulse(sim_world* w, sim_entity_id id, uint32_t particle, sim_vec3 impulse);

/// Pulls a particle toward `target` (m) until released: a zero-rest-length
/// XPBD constraint of small compliance projected with the others every
/// iteration, so the particle keeps its velocity when let go (a throw). A
/// pinned particle is moved to the target kinematically, at most 10 m/s
/// (SIM__PIN_DRAG_SPEED). Dragging a particle that is already dragged moves
/// its target. Errors: SIM_E_STALE_ID, SIM_E_BAD_INDEX, SIM_E_NOT_FINITE,
/// SIM_E_OUT_OF_RANGE (target outside the world), SIM_E_CAPACITY (max_drags
/// reached), SIM_E_BAD_STATE (a garment's pinned particle: it follows its
/// bone).
int sim_entity_drag(sim_world* w, sim_entity_id id, uint32_t particle, sim_vec3 target);

/// Ends a drag. Releasing a particle that is not dragged is not an error.
/// Errors: SIM_E_STALE_ID, SIM_E_BAD_INDEX.
int sim_entity_release(sim_world* w, sim_entity_id id, uint32_t particle);

// ---------------------------------------------------------------------------
// Inspection
// ---------------------------------------------------------------------------

/// Read-only view of one entity's particles. The pointers point into the
/// world and stay valid until the next step, spawn or despawn.
typedef struct sim_entity_view {
    sim_entity_id id;
    sim_entity_kind kind;
    uint32_t particle_count;
    const sim_vec3* pos;      ///< Positions, m.
    const sim_vec3* prev;     ///< Previous positions (Verlet), m.
    const float* inv_mass;    ///< 1/kg; 0 means pinned.
    const float* radius;      ///< Collision radii, m.
    const char* const* names; ///< Particle names (ragdoll), or NULL.
    uint32_t cols, rows;      ///< Cloth grid size; 0 for other kinds.
    /// Equality distance constraints ("sticks"); for a soft body, the lattice
    /// edges between its surface particles (drawing only).
    uint32_t stick_count;
    uint32_t garment;          ///< A garment's sim_garment_kind, else 0 (SIM_GARMENT_NONE).
    sim_entity_id wearer;      ///< A garment's character, else zero.
    bool wrap;                 ///< Cloth: column cols - 1 is joined to column 0 (a skirt).
    uint32_t topology_version; ///< Changes when its sticks change (a tear).
    float tear_ratio;          ///< Rope or cloth: sticks tear past this × rest length; 0: never.
    bool long_range;           ///< Rope or cloth: some particle has a long-range attachment.
    bool self_collision;       ///< Cloth: self-contacts on (then `thickness` apart).
    float thickness;           ///< Cloth: the self-contact distance, m.
} sim_entity_view;

/// Fills *out for entity id. Errors: SIM_E_STALE_ID.
int sim_entity_get_view(const sim_world* w, sim_entity_id id, sim_entity_view* out);

/// Number of live entities.
uint32_t sim_world_entity_count(const sim_world* w);

/// The i-th live entity in storage (spawn) order, i < entity_count.
sim_entity_id sim_world_entity_at(const sim_world* w, uint32_t i);

/// Copies up to `cap` stick endpoint pairs (particle indices local to the
/// entity) into pairs[2*k], pairs[2*k+1]: its equality distance
/// constraints, or a soft body's surface lattice edges (built from its
/// shape and resolution, 8 KiB of stack). Returns the number copied, or a
/// negative SIM_E_STALE_ID.
int sim_entity_copy_sticks(const sim_world* w, sim_entity_id id, uint32_t* pairs, uint32_t cap);

/// Implied velocity of a particle, (x - x_prev) / h in m/s, with h the
/// substep length. Errors: SIM_E_STALE_ID, SIM_E_BAD_INDEX.
int sim_entity_particle_velocity(const sim_world* w, sim_entity_id id, uint32_t particle,
                                 sim_vec3* out);

/// A counter that changes whenever any entity's topology changes (spawn,
/// despawn). Clients resend topology when it moves.
uint32_t sim_world_topology_epoch(const sim_world* w);

/// Total particles in the world.
uint32_t sim_world_particle_count(const sim_world* w);

/// Total distance constraints (equality and inequality) in the world.
uint32_t sim_world_constraint_count(const sim_world* w);

/// Total rigid bodies (bones of characters, balls) in the world.
uint32_t sim_world_body_count(const sim_world* w);

/// Rigid bodies not asleep: in an island this tick, or kinematic (animated).
/// Sleeping bodies (island.c: an island whose bodies have all been under
/// 0.05 m/s for 0.5 s) cost nothing until something wakes them.
uint32_t sim_world_awake_body_count(const sim_world* w);

/// Islands the last tick solved: sets of awake bodies linked by joints or
/// possible contacts, each solved with its own number of substeps.
uint32_t sim_world_island_count(const sim_world* w);

/// What the last tick's rigid solver did (for benchmarks and metrics).
typedef struct sim_tick_stats {
    uint32_t islands;              ///< Islands solved.
    uint32_t awake_bodies;         ///< Bodies in islands.
    uint64_t body_substeps;        ///< Σ over islands of bodies × rigid substeps.
    uint32_t max_substeps;         ///< Rigid substeps of the most split island, per tick.
    uint32_t colours;              ///< Soft step: graph colours used (0 with XPBD).
    uint32_t overflow_constraints; ///< Soft step: constraints no colour could take.
    /// Soft step: joint projections of the end-of-tick stabilization
    /// (every awake joint once, then those next to a bone it had to move,
    /// until none is off).
    uint64_t joint_projections;
    /// Particle constraint projections (distance constraints, joint limits
    /// and long-range attachments, every iteration of every substep).
    uint64_t particle_projections;
    uint32_t frozen_entities;  ///< Entities frozen by level of detail (sim_world_set_foci).
    uint32_t frozen_particles; ///< Their particles.
    uint32_t reduced_entities; ///< Entities on SIM_LOD_ITERATIONS iterations.
} sim_tick_stats;

// ---------------------------------------------------------------------------
// Level of detail by viewer interest (seed 000 §10; lod.c)
// ---------------------------------------------------------------------------

#define SIM_MAX_FOCI       64    ///< Focus points a world keeps at most.
#define SIM_LOD_NEAR       15.0f ///< Within this of a focus, m: full iterations.
#define SIM_LOD_FREEZE     40.0f ///< Beyond this from every focus, m: frozen.
#define SIM_LOD_ITERATIONS 2     ///< Iterations between the two (at most the world's).

/// An entity's level of detail.
typedef enum sim_lod {
    SIM_LOD_FULL = 0,    ///< Stepped with the world's iterations.
    SIM_LOD_REDUCED = 1, ///< Stepped with SIM_LOD_ITERATIONS iterations.
    SIM_LOD_FROZEN = 2,  ///< Not stepped: its particles keep their positions and velocities.
} sim_lod;

/// "full", "reduced" or "frozen".
const char* sim_lod_name(sim_lod lod);

/// Sets the points viewers look at (m; copied; the first SIM_MAX_FOCI are
/// kept). From the next tick, each cloth and rope is on a level of detail
/// by the distance from its particles' bounding box to the nearest focus
/// (soft bodies too):
/// full within SIM_LOD_NEAR, SIM_LOD_ITERATIONS iterations within
/// SIM_LOD_FREEZE, frozen beyond (not integrated, projected or collided:
/// it costs no solver work and its positions do not change, so a binary
/// delta codes it as unchanged; it resumes from where it froze, velocities
/// kept, when a focus comes near). With no focus (count 0, the default)
/// everything is full. Never frozen: particle ragdolls, garments (they
/// follow their wearer: at most reduced) and anything being dragged.
/// Errors: SIM_E_INVALID_ARG (points NULL with count > 0), SIM_E_NOT_FINITE.
int sim_world_set_foci(sim_world* w, const sim_vec3* points, uint32_t count);

/// An entity's level of detail at the last tick (SIM_LOD_FULL for stale ids
/// and rigid kinds).
sim_lod sim_entity_lod(const sim_world* w, sim_entity_id id);

/// The last tick's solver figures (all zero before the first tick).
sim_tick_stats sim_world_tick_stats(const sim_world* w);

/// Total rigid joints (between bones of characters) in the world.
uint32_t sim_world_joint_count(const sim_world* w);

/// Constraint error: sum over every stick (equality distance constraint) of
/// |length - rest length|, in m.
float sim_world_constraint_error(const sim_world* w);

/// FNV-1a hash of the bit patterns of every particle's position and previous
/// position and every rigid body's position, orientation and velocities, in
/// storage order (Box2D b2HashWorldState). Equal states give equal hashes;
/// used by determinism tests.
uint64_t sim_world_hash(const sim_world* w);

// ---------------------------------------------------------------------------
// World state (state.c): everything a continuation depends on, as bytes
// ---------------------------------------------------------------------------

/// The version of the state layout sim_world_save() writes; a state of
/// another version is refused (SIM_E_VERSION).
#define SIM_STATE_VERSION 1u

/// The physics version of this build: bumped whenever a change to the step
/// changes its results for the same state (the determinism tests' pinned
/// hashes move). A state saved by another physics version is refused
/// (SIM_E_VERSION): it would load, but not continue as it would have.
#define SIM_PHYSICS_VERSION 1u

/// Writes world w's whole state into buf (cap bytes): the tick, parameters,
/// limits and everything a step reads that an earlier one wrote (particles,
/// constraints, bodies, joints with their limit frames and drives,
/// characters' state machines with clip times, blend and gains, soft-body
/// fits, warm-start impulses and the contact cache, sleep spheres, timers
/// and rings, drags, static boxes, the entity slots with their generations,
/// pending events and torn sticks), so that sim_world_load() gives a world
/// whose steps are bit-identical to w's. Skeletons are recorded by name and
/// content hash (sim_library_skeleton_hash()). Scratch rebuilt every
/// substep is not written. Layout: docs/STATE.md. Little-endian hosts
/// only (the arrays are written as they lie in memory).
///
/// Returns SIM_OK and *len (bytes written); or SIM_E_CAPACITY with *len the
/// bytes needed when buf is NULL or cap is too small (nothing written).
/// Changes nothing in w. No allocation.
int sim_world_save(const sim_world* w, void* buf, size_t cap, size_t* len);

/// Makes a world from a state sim_world_save() wrote (data, len bytes; not
/// kept), with the limits, solver and tick length it was saved with, its
/// skeletons taken from `lib` (which must outlive the world) and memory
/// from `alloc` (NULL: sim_allocator_default()). On success *out owns the
/// new world.
///
/// Errors (nothing is created; `why`, cap why_cap bytes, may be NULL, gets
/// one line saying what was wrong): SIM_E_INVALID_ARG (NULL data or out),
/// SIM_E_CORRUPT (truncated, a section missing or of the wrong size, a
/// count past the limits), SIM_E_VERSION (another SIM_STATE_VERSION or
/// SIM_PHYSICS_VERSION, or another build's layout), SIM_E_UNKNOWN_NAME (a
/// skeleton or clip `lib` lacks), SIM_E_ASSET_MISMATCH (a skeleton whose
/// content hash differs), SIM_E_NOMEM, and sim_world_create()'s errors for
/// a def out of range.
int sim_world_load(const void* data, size_t len, const sim_library* lib, const sim_allocator* alloc,
                   sim_world** out, char* why, size_t why_cap);

/// True when every particle's position and previous position are finite.
bool sim_world_is_finite(const sim_world* w);

/// What the contact solver had no room for, counted since the world was
/// created. Its arrays are sized in proportion to the bodies the world has
/// room for (sim_world_reserved().bodies: 27 broadphase grid entries, 16
/// candidate pairs and 24 contacts per body, 8 under the soft step,
/// contacts at most max_contacts), grown at spawn time with the bodies; within a step what
/// does not fit is skipped, not grown, so the bodies concerned miss some
/// collisions in that tick or substep. Non-zero counts mean the world needs
/// more room (sim_world_reserve() more bodies, or a larger max_contacts) or
/// holds something unusual (a huge or very fast body covers many grid
/// cells).
typedef struct sim_overflows {
    uint64_t grid_entries; ///< Body-in-cell entries the broadphase grid dropped (per tick).
    uint64_t pairs;        ///< Candidate body pairs the pair list dropped (per tick).
    uint64_t contacts;     ///< Contacts the contact list dropped (per substep).
} sim_overflows;

/// The world's capacity overflows since it was created (sim_overflows).
/// Counting changes no state: the counts are not part of sim_world_hash().
sim_overflows sim_world_overflows(const sim_world* w);

/// Solver work per tick of the world as it is (see max_solver_work; its
/// rigid bodies are counted at the substeps its solver and tick take at
/// least, sim_world_counts_solver_work()).
uint64_t sim_world_solver_work(const sim_world* w);

/// Solver work per tick the world as it is would need under parameters p
/// (which need not be valid: only iterations and substeps count).
uint64_t sim_world_solver_work_with(const sim_world* w, const sim_params* p);

// ---------------------------------------------------------------------------
// Skeletons and clips
// ---------------------------------------------------------------------------

#define SIM_MAX_BONES 1024 ///< Bones per skeleton at most (a multiple of 32).
#define SIM_NAME_MAX  32   ///< Bytes in a skeleton, clip or bone name, with the NUL.

/// How a bone is joined to its parent.
typedef enum sim_joint_kind {
    SIM_JOINT_BALL = 0,  ///< Swing-twist: an elliptic swing cone and a twist range.
    SIM_JOINT_HINGE = 1, ///< One axis with a [min, max] range.
    SIM_JOINT_FIXED = 2, ///< No relative motion.
} sim_joint_kind;

/// One bone of a skeleton, in model space in the bind pose: standing,
/// facing +Z, feet on y = 0, +X to the character's left.
typedef struct sim_bone_def {
    char name[SIM_NAME_MAX];
    int parent;          ///< Index of the parent bone; -1 for the root (bone 0 only).
    sim_vec3 head, tail; ///< The capsule's segment, m. The joint to the parent is at head.
    float radius;        ///< Capsule radius, m, (0, 1].
    float mass;          ///< kg, (0, 1000].
    sim_joint_kind joint;
    /// Hinge: the hinge axis; flexion is positive by the right-hand rule.
    /// Ball: the axis of swing1 (made perpendicular to the bone). Unused
    /// for the root and fixed joints.
    sim_vec3 axis;
    float swing1, swing2; ///< Ball: swing half-angles about `axis` and about bone × axis, rad.
    float twist_min, twist_max; ///< Ball: twist about the bone; hinge: its range. rad.
    /// Passive friction torque of the joint, N·m: it stops slow relative
    /// rotation (a limb swinging on its hinge for ever). Negative: 5% of
    /// the torque the bone's own weight makes when horizontal. 0: none.
    float friction;
} sim_bone_def;

#define SIM_MAX_GARMENTS 4 ///< Garments a skeleton asset describes at most.

/// What a garment is (seed 000 §10). Its particles form a cols × rows grid,
/// row-major, row 0 pinned to a bone.
typedef enum sim_garment_kind {
    SIM_GARMENT_NONE = 0,
    /// A sheet hanging from a pinned top edge (from `a` to `b`, cols
    /// particles) straight down (rows particles): structural, shear and
    /// bend constraints.
    SIM_GARMENT_CAPE = 1,
    /// A ring of cols particles around the vertical axis through `a`,
    /// radius radius_top, pinned; rows rings below it, widening to
    /// radius_bottom at `length` below: a cloth grid closed around
    /// (column cols - 1 joins column 0).
    SIM_GARMENT_SKIRT = 2,
    /// cols independent strands (short ropes), each rows particles down
    /// from a root pinned on a circle of radius radius_top around `a`
    /// (spread over `arc` radians centred on the back, -Z): structural and
    /// bend constraints along each strand only.
    SIM_GARMENT_HAIR = 3,
} sim_garment_kind;

/// A garment as a skeleton asset describes it (assets/README.md,
/// "Garments"), in model space in the bind pose (m; facing +Z, +X left,
/// feet on y = 0). Pinned particles are fixed in `bone`'s body frame.
typedef struct sim_garment_def {
    sim_garment_kind kind;
    uint32_t bone;       ///< Bone the pinned row follows.
    sim_vec3 a, b;       ///< Cape: the pinned edge, a → b. Skirt, hair: the centre (b unused).
    float radius_top;    ///< Skirt, hair: radius of the pinned ring, m.
    float radius_bottom; ///< Skirt: radius of the lowest ring, m.
    float arc;           ///< Hair: the arc the roots spread over, rad, (0, 2π].
    float length;        ///< How far it hangs below the pinned row, m, (0, 10].
    uint32_t cols, rows; ///< Grid size, 2..64 each (cols: across / around / strands).
    float mass;          ///< Total, kg, [SIM_MIN_MASS, SIM_MAX_MASS].
} sim_garment_def;

/// Lower-case name of a garment kind ("cape", "skirt", "hair"), or NULL.
const char* sim_garment_kind_name(sim_garment_kind kind);

/// The garment kind of that name; SIM_GARMENT_NONE when it names none.
sim_garment_kind sim_garment_kind_from_name(const char* name);

/// Which solver moves a character's bones once they are dynamic (issue 13;
/// seed 004, "Two ways to solve the motion").
typedef enum sim_char_solver {
    /// For a character: its skeleton's; for a skeleton: MAXIMAL.
    SIM_CHAR_SOLVER_DEFAULT = 0,
    /// Maximal coordinates: every bone a rigid body of the world's rigid
    /// solver, joints as constraints (which a hard hit can stretch).
    SIM_CHAR_SOLVER_MAXIMAL = 1,
    /// Reduced coordinates: the bones are the links of one articulation
    /// (sim_articulation.h: Featherstone's ABA), moved by its joint
    /// coordinates, so its joints cannot come apart. The world's other
    /// bodies see its bones as kinematic bodies moving with the
    /// articulation; their contacts are solved by the articulation with
    /// their masses (see sim_world_spawn_character()).
    SIM_CHAR_SOLVER_REDUCED = 2,
} sim_char_solver;

/// "maximal" or "reduced" (and "default").
const char* sim_char_solver_name(sim_char_solver s);

/// A skeleton: bones in an order where every parent precedes its children.
typedef struct sim_skeleton_def {
    char name[SIM_NAME_MAX];
    uint32_t bone_count; ///< 1..SIM_MAX_BONES.
    sim_bone_def bones[SIM_MAX_BONES];
    /// The bone whose up direction (+Y in the bind pose) tells face-up from
    /// face-down for get-up (seed 000 §5: the chest).
    uint32_t up_bone;
    /// Garments characters of this skeleton can wear (sim_world_attach_cloth),
    /// at most one of each kind.
    uint32_t garment_count;
    sim_garment_def garments[SIM_MAX_GARMENTS];
    /// The solver of characters spawned without one (DEFAULT: MAXIMAL).
    sim_char_solver solver;
    /// A fixed base: the root bone stays where it is when the character
    /// goes limp (a robot arm bolted to the floor, a tail hanging from a
    /// beam): a RAGDOLL moves every bone but the root, which holds its pose
    /// with zero velocity (MAXIMAL: a kinematic body; REDUCED: the
    /// articulation's base is fixed there). False: every bone moves.
    bool fixed_base;
    /// The gains every joint's drive starts with (sim_character_set_drive():
    /// kp N·m/rad and kd N·m·s/rad, each in [0, 1e5]); 0, 0: limp. A
    /// skeleton with motors (a robot arm) holds its clip's pose once limp.
    float drive_kp, drive_kd;
} sim_skeleton_def;

/// An animation clip for one skeleton: keyframed rotations of every bone
/// relative to its bind pose (in the bone's own frame), plus root motion:
/// the root bone's position and rotation in the character's frame (whose
/// origin is on the ground under the character, facing +Z). Sampled with
/// lerp and slerp between keys. A looping clip's root motion accumulates:
/// each loop moves the character by root_pos[last] - root_pos[0] in x and z.
/// All arrays are read during sim_library_add_clip() and not kept.
typedef struct sim_clip_def {
    char name[SIM_NAME_MAX];
    bool loop;
    uint32_t key_count;       ///< 1..1024.
    uint32_t bone_count;      ///< Must equal the skeleton's.
    const float* times;       ///< key_count times, s, from 0, strictly increasing.
    const sim_vec3* root_pos; ///< key_count root positions, m.
    const sim_quat* root_rot; ///< key_count root rotations relative to the bind pose.
    const sim_quat* rot;      ///< key_count × bone_count rotations, key-major.
} sim_clip_def;

/// Creates an empty library. Errors: SIM_E_NOMEM.
int sim_library_create(sim_library** out);

/// Frees a library. NULL is allowed. No world may still use it.
void sim_library_destroy(sim_library* lib);

/// Largest mass ratio between a bone and its parent that loads without a
/// warning (heavier / lighter). Beyond it an iterative joint solver
/// converges slowly: the light body takes nearly all of every correction,
/// so joints stretch and jitter under load. PhysX's guide sends large mass
/// ratios to articulations for this reason, Unity's Joint.massScale and
/// Unreal's mass conditioning exist to hide them, and Jolt's ragdolls keep
/// neighbouring bones within 0.8-1.2 of each other.
#define SIM_SKELETON_MAX_MASS_RATIO 10.0f

/// Bytes in a sim_skeleton_issue message, with the NUL.
#define SIM_SKELETON_MESSAGE_MAX 320

/// What a skeleton check found (sim_skeleton_issue.kind).
typedef enum sim_skeleton_issue_kind {
    SIM_SKELETON_ISSUE_NONE = 0,
    /// Error: a name, the tree order, a size, a mass, an axis or a limit is
    /// missing, out of range or inconsistent; the message says which.
    SIM_SKELETON_INVALID = 1,
    /// Error: the bind pose lies outside the joint's range (a hinge's
    /// range or a ball joint's twist range). Limits are measured from the
    /// bind pose, so a character would spawn violating its own limit and
    /// the solver would snap the bone into range on the first ragdoll step
    /// (65-70 rad/s for a 30° snap, issue 9). Rejected like Jolt, whose
    /// hinge and swing-twist limits must contain the rest pose.
    /// `value`: degrees outside the range (> 0).
    SIM_SKELETON_BIND_OUTSIDE_LIMIT = 2,
    /// Warning: a bone and its parent differ in mass by more than
    /// SIM_SKELETON_MAX_MASS_RATIO. The skeleton loads (a heavy weapon on a
    /// hand may be meant), but its joints will stretch under impacts.
    /// Not given for a skeleton whose solver is REDUCED (its joints are
    /// coordinates). `value`: the heavier mass over the lighter (> 10).
    SIM_SKELETON_MASS_RATIO = 3,
} sim_skeleton_issue_kind;

/// One finding of sim_library_add_skeleton() about a skeleton. Plain data:
/// it points into nothing, so it outlives the def and the library.
typedef struct sim_skeleton_issue {
    sim_skeleton_issue_kind kind;
    int bone;    ///< Index of the bone it is about, or -1 (the skeleton as a whole).
    int other;   ///< SIM_SKELETON_MASS_RATIO: the parent's index; otherwise -1.
    float value; ///< See the kind; 0 for SIM_SKELETON_INVALID.
    /// One line for a person: the skeleton, the bone(s), the limit or the
    /// masses and the figure, and what to change. NUL-terminated.
    char message[SIM_SKELETON_MESSAGE_MAX];
} sim_skeleton_issue;

/// What sim_library_add_skeleton() found, for the caller to show: the
/// error that refused the skeleton, or the warnings of one that loaded.
/// Owned by the caller (about 11 KB: keep it off small stacks); the call
/// overwrites all of it.
typedef struct sim_skeleton_report {
    /// Why the skeleton was refused (kind SIM_SKELETON_INVALID or
    /// SIM_SKELETON_BIND_OUTSIDE_LIMIT), when the call failed with
    /// SIM_E_INVALID_ARG, SIM_E_NOT_FINITE or SIM_E_OUT_OF_RANGE; kind
    /// SIM_SKELETON_ISSUE_NONE otherwise.
    sim_skeleton_issue error;
    /// Warnings, in bone order, when the skeleton was added; at most one
    /// per joint, so they always fit. 0 on failure.
    uint32_t warning_count;
    sim_skeleton_issue warnings[SIM_MAX_BONES];
} sim_skeleton_report;

/// Adds a skeleton (copied). Validates names, tree order, finite positive
/// sizes and masses, non-degenerate bones and hinge axes, and limits
/// (swing in [0, π), twist_min <= twist_max within [-π, π], and the bind
/// pose inside every hinge and twist range: twist_min <= 0 <= twist_max).
/// Then checks the mass ratio of every bone to its parent, which gives
/// warnings but never refuses. `report` (may be NULL) receives the error
/// or the warnings, each naming the bone. Errors: SIM_E_INVALID_ARG
/// (duplicate or empty name, bad tree), SIM_E_NOT_FINITE,
/// SIM_E_OUT_OF_RANGE (a value, or the bind pose outside a limit),
/// SIM_E_CAPACITY, SIM_E_NOMEM. On error the library is unchanged.
int sim_library_add_skeleton(sim_library* lib, const sim_skeleton_def* def,
                             sim_skeleton_report* report);

/// Adds a clip (copied) to the named skeleton. Errors: SIM_E_UNKNOWN_NAME
/// (no such skeleton), SIM_E_INVALID_ARG (duplicate name, bone count or key
/// times wrong), SIM_E_NOT_FINITE, SIM_E_CAPACITY, SIM_E_NOMEM.
int sim_library_add_clip(sim_library* lib, const char* skeleton, const sim_clip_def* def);

/// The skeleton of that name, or NULL.
const sim_skeleton_def* sim_library_skeleton(const sim_library* lib, const char* name);

/// Duration of a skeleton's clip in seconds, or a negative SIM_E_UNKNOWN_NAME.
float sim_library_clip_duration(const sim_library* lib, const char* skeleton, const char* clip);

/// The content hash of the skeleton of that name (FNV-1a 64 over its bones,
/// joints, garments, bind pose and every clip's name and keys), which world
/// state files record for each skeleton their characters use; 0 when the
/// library has no such skeleton. Equal asset files give equal hashes in
/// any process of the same build.
uint64_t sim_library_skeleton_hash(const sim_library* lib, const char* name);

// ---------------------------------------------------------------------------
// Characters
// ---------------------------------------------------------------------------

/// A character's state (seed 000 §4-5, seed 004).
typedef enum sim_char_state {
    SIM_CHAR_ANIMATED = 0,   ///< Kinematic bones follow a clip (by velocity, so they push).
    SIM_CHAR_RAGDOLL = 1,    ///< Every bone is a dynamic rigid body.
    SIM_CHAR_GETTING_UP = 2, ///< Blending from a pose snapshot into a get-up clip.
    SIM_CHAR_PARTIAL = 3,    ///< Some bones dynamic, the rest animated.
} sim_char_state;

/// "animated", "ragdoll", "getting_up" or "partial".
const char* sim_char_state_name(sim_char_state s);

/// A character to spawn.
typedef struct sim_character_def {
    sim_vec3 position;      ///< The character's origin (on the ground between the feet), m.
    float facing;           ///< Yaw about +Y, rad; 0 faces +Z.
    const char* skeleton;   ///< Skeleton name. Default "humanoid".
    const char* clip;       ///< Clip to play. Default "idle".
    sim_char_solver solver; ///< Default: the skeleton's.
    /// ANIMATED (the default) or RAGDOLL: spawned limp at the clip's first
    /// pose, as if killed with no impulse (with the skeleton's drives, an
    /// active ragdoll). Other states: SIM_E_INVALID_ARG.
    sim_char_state state;
    uint32_t cookie; ///< Set by sim_character_def_default().
} sim_character_def;

/// Defaults: at the origin facing +Z, "humanoid" playing "idle".
sim_character_def sim_character_def_default(void);

/// Spawns a character in the ANIMATED state at the clip's first pose.
/// Errors: SIM_E_INVALID_ARG, SIM_E_NOT_FINITE, SIM_E_OUT_OF_RANGE,
/// SIM_E_UNKNOWN_NAME (skeleton or clip), SIM_E_CAPACITY (beyond the
/// world's limits for bodies, joints or entities, or over the solver work
/// budget), SIM_E_NOMEM (as for sim_world_spawn_rope()). It adds what
/// sim_character_def_counts() says, and a REDUCED one an articulation
/// (about 1.4 KiB a bone, from the world's allocator).
///
/// A REDUCED character (sim_char_solver) has the same bones, poses,
/// states and commands as a MAXIMAL one; once killed, its bones are the
/// links of an articulation: the root a free base, each hinge a revolute
/// joint with its range, each ball joint a spherical joint with its twist
/// range and swing cone, passive joint friction as viscous damping (the
/// bone's friction torque per rad/s). Each tick it is stepped
/// ceil(dt × 240) times before the world's rigid solver, against the
/// ground, the boxes near it (at most 64) and, as partners, the bodies near
/// it (at most 64; sim_artic_step_among()): a dynamic body (a ball, a
/// MAXIMAL bone) with its mass, taking the opposite impulse; another
/// REDUCED ragdoll's bone with that bone's own mass (each articulation
/// solves its side); an animated bone as immovable. The rigid solver and
/// the particles then see its bones as kinematic bodies moving to the
/// articulation's pose; what particles push on them reaches the
/// articulation as an impulse the next tick. Drives (sim_character_set_drive)
/// become the articulation's implicit PD drives toward the clip's pose.
/// Get-up blends from the pose as for MAXIMAL. It sleeps when every bone
/// is slower than 0.05 m/s (and 0.5 rad/s) for half a
/// second, and wakes on a command, a moving body near it or a particle's
/// push. set_partial is refused with SIM_E_BAD_STATE: an animated parent
/// would have to move the articulation's base by prescribed motion
/// (hybrid dynamics, Featherstone 2008 §9.2), which it does not do.
int sim_world_spawn_character(sim_world* w, const sim_character_def* def, sim_entity_id* out);

/// Cloth worn by a character (seed 000 §10): one of its skeleton's
/// garments (sim_garment_def), built as a cloth entity whose row 0 is
/// pinned to the garment's bone. Zero fields take the asset's value.
typedef struct sim_cloth_attach_def {
    sim_entity_id wearer;     ///< A character.
    sim_garment_kind kind;    ///< Which of its skeleton's garments.
    uint32_t cols, rows;      ///< 0: the asset's; else 2..64 each.
    float mass;               ///< Total, kg; 0: the asset's.
    float particle_radius;    ///< Collision radius per particle, m, [0, 0.2]. Default 0.02.
    float stretch_compliance; ///< Structural constraints, m/N, [0, 1]. Default 0.
    float bend_compliance;    ///< Bend (and shear) constraints, m/N, [0, 1]. Default 1e-3.
    /// Long-range attachments (Kim, Chentanez and Müller 2012): every free
    /// particle stays within its rest geodesic distance (along the cloth,
    /// through structural edges) of its nearest pinned particle, so the
    /// garment cannot stretch however fast the bone moves. Default true.
    bool long_range;
    float tear_ratio; ///< As sim_cloth_def's. Default 0 (never).
    uint32_t cookie;  ///< Set by sim_cloth_attach_def_default().
} sim_cloth_attach_def;

/// Defaults: no wearer, a cape, the asset's size and mass, long-range
/// attachments on.
sim_cloth_attach_def sim_cloth_attach_def_default(void);

/// Dresses a character: spawns the garment as a cloth entity (kind
/// SIM_ENTITY_CLOTH) laid out as the asset describes it around the bone's
/// pose now, with row 0 pinned to the bone. Each substep a pinned particle
/// is put where its point on the bone is, its previous position where the
/// point was (so it carries the bone's velocity and never lags); whatever
/// state the character is in (animated, ragdoll, getting up, partial).
/// Garment particles collide with every body and push them back, except
/// their wearer's bones, which they do not push (the garment is carried:
/// its pins do not weigh on the bone either). The garment is despawned
/// with its wearer. Errors: SIM_E_INVALID_ARG (NULL, or a def not from its
/// _default()), SIM_E_STALE_ID (wearer not a live character),
/// SIM_E_UNKNOWN_NAME (its skeleton has no such garment), SIM_E_NOT_FINITE,
/// SIM_E_OUT_OF_RANGE (a field outside its range, or a particle outside
/// the world), SIM_E_CAPACITY, SIM_E_NOMEM (as sim_world_spawn_rope()).
int sim_world_attach_cloth(sim_world* w, const sim_cloth_attach_def* def, sim_entity_id* out);

/// What sim_world_attach_cloth() would add to the world (one entity, its
/// particles and constraints). Errors as sim_world_attach_cloth() but for
/// capacity and the world's bounds.
int sim_world_attach_cloth_counts(const sim_world* w, const sim_cloth_attach_def* def,
                                  sim_counts* out);

/// What entity `id` is worn by (a garment's character), or the zero id.
sim_entity_id sim_entity_wearer(const sim_world* w, sim_entity_id id);

/// A garment's kind, or SIM_GARMENT_NONE for other entities (and stale ids).
sim_garment_kind sim_entity_garment(const sim_world* w, sim_entity_id id);

/// Kills a character: it becomes a RAGDOLL. Every bone keeps the velocity
/// the animation gave it, so there is no pop; then `impulse` (N·s) is
/// applied at `hit_point` (m) to the bone whose centre is nearest to it
/// (seed 000 §4), whose index goes to *bone. Killing a ragdoll again just
/// applies the impulse. Errors: SIM_E_STALE_ID (also for non-characters),
/// SIM_E_NOT_FINITE, SIM_E_OUT_OF_RANGE (impulse beyond ±SIM_MAX_IMPULSE or
/// point outside the world).
int sim_character_kill(sim_world* w, sim_entity_id id, sim_vec3 hit_point, sim_vec3 impulse,
                       uint32_t* bone);

/// "The nearest bone" for sim_character_kill_bone().
#define SIM_NEAREST_BONE UINT32_MAX

/// As sim_character_kill(), with the impulse on bone `bone` (skeleton
/// order) rather than the nearest: for a hit judged elsewhere (a ray, or a
/// past pose, sim_query.h), or SIM_NEAREST_BONE for the rule above. Errors
/// as sim_character_kill(), and SIM_E_BAD_INDEX (no such bone).
int sim_character_kill_bone(sim_world* w, sim_entity_id id, uint32_t bone, sim_vec3 hit_point,
                            sim_vec3 impulse);

/// Starts getting up (seed 000 §5): snapshots every bone's pose, picks the
/// get-up clip from the up bone's +Y axis (pointing down: "getup_front",
/// else "getup_back"), aligns the character's origin and facing with the
/// body on the ground, and blends from the snapshot to the clip over
/// blend_time seconds (positions lerp, rotations slerp); after the clip it
/// plays "idle". A skeleton without get-up clips blends into "idle" over
/// at least 1 s. *clip gets the clip's name (static storage of the
/// library). Errors: SIM_E_STALE_ID, SIM_E_BAD_STATE (not a ragdoll),
/// SIM_E_OUT_OF_RANGE (blend_time outside [0, 5] s), SIM_E_UNKNOWN_NAME
/// (the skeleton has no get-up clips and no idle).
int sim_character_start_getup(sim_world* w, sim_entity_id id, float blend_time, const char** clip);

/// Gives the dynamic bones of a ragdoll or partial ragdoll muscle tone: a
/// PD drive per joint toward the animated pose, τ = kp(θ_target - θ) - kd·θ̇
/// (seed 004), solved as an XPBD angular constraint of compliance 1/kp with
/// implicit damping kd, so it is stable at any gain (Macklin et al. 2016;
/// FIELD-NOTES "PD drive as XPBD"); the torque is capped at
/// SIM_MAX_DRIVE_TORQUE. The gains reach (kp, kd) linearly over ramp_time
/// seconds. `bones` lists the bones whose joints (to their parents) get the
/// gains, or NULL with count 0 for all. kp = kd = 0 is limp. Errors:
/// SIM_E_STALE_ID, SIM_E_NOT_FINITE, SIM_E_OUT_OF_RANGE (kp, kd outside
/// [0, 10^5], ramp_time outside [0, 60]), SIM_E_BAD_INDEX (a bone index).
int sim_character_set_drive(sim_world* w, sim_entity_id id, float kp, float kd,
                            const uint32_t* bones, uint32_t count, float ramp_time);

/// Largest drive torque, N·m.
#define SIM_MAX_DRIVE_TORQUE 2000.0f

/// The PD control law of seed 004, τ = kp(θ_target − θ) − kd·θ̇, in whatever
/// consistent units the caller uses (N·m with rad and rad/s; the seed's
/// worked example uses degrees: kp = 8, 45° − 20° gives 200). The drive in
/// the solver is its implicit (XPBD) form; this is the reference formula.
float sim_pd_torque(float kp, float kd, float theta_target, float theta, float theta_dot);

/// Makes the listed bones and all their descendants physical while the rest
/// keep following the clip (seed 004: a shot arm flails while the legs keep
/// walking): state PARTIAL. An empty list returns to ANIMATED. A fixed
/// base's root (sim_skeleton_def.fixed_base) is never made physical. Errors:
/// SIM_E_STALE_ID, SIM_E_BAD_STATE (a ragdoll or getting up, or a
/// REDUCED character: see sim_world_spawn_character()), SIM_E_BAD_INDEX.
int sim_character_set_partial(sim_world* w, sim_entity_id id, const uint32_t* bones,
                              uint32_t count);

/// Plays a clip from its start, continuing from where the current one left
/// the character (root motion carries over). A ragdoll keeps it as its
/// drive target. Errors: SIM_E_STALE_ID, SIM_E_UNKNOWN_NAME, SIM_E_BAD_STATE
/// (getting up).
int sim_character_play(sim_world* w, sim_entity_id id, const char* clip);

/// Applies an impulse (N·s) at `point` (m) to one bone of a character; it
/// moves only if that bone is dynamic (ragdoll or partial). Errors:
/// SIM_E_STALE_ID, SIM_E_BAD_INDEX, SIM_E_NOT_FINITE, SIM_E_OUT_OF_RANGE.
int sim_character_apply_impulse(sim_world* w, sim_entity_id id, uint32_t bone, sim_vec3 point,
                                sim_vec3 impulse);

/// Index of the named bone of a character, or SIM_E_STALE_ID /
/// SIM_E_UNKNOWN_NAME.
int sim_character_bone_index(const sim_world* w, sim_entity_id id, const char* name);

/// A bone's pose: the capsule centre (m) and orientation (local +X runs
/// along the capsule from head to tail in the bind pose).
typedef struct sim_bone_pose {
    sim_vec3 p;
    sim_quat q;
} sim_bone_pose;

/// Read-only facts about a character.
typedef struct sim_character_view {
    sim_entity_id id;
    sim_char_state state;
    const sim_skeleton_def* skeleton;
    const char* clip; ///< The clip playing (or blended into), static storage.
    float clip_time;  ///< Seconds into the clip.
    sim_vec3 origin;  ///< The animation's origin (ground under the root), m.
    float facing;     ///< The animation's yaw about +Y, rad.
    uint32_t bone_count;
    bool asleep; ///< Its bones sleep in a resting island (RAGDOLL only), frozen until woken.
    sim_char_solver solver; ///< MAXIMAL or REDUCED.
} sim_character_view;

/// Fills *out. Errors: SIM_E_STALE_ID (also for non-characters).
int sim_character_get_view(const sim_world* w, sim_entity_id id, sim_character_view* out);

/// Copies up to `cap` bone poses (skeleton order) and their linear and
/// angular velocities (m/s, rad/s; either may be NULL). Returns the number
/// copied or a negative SIM_E_STALE_ID.
int sim_character_get_pose(const sim_world* w, sim_entity_id id, sim_bone_pose* poses, sim_vec3* v,
                           sim_vec3* omega, uint32_t cap);

/// The joint of a character's bone to its parent, as simulated: the local
/// anchor and joint frame in the parent's and in the bone's body frame.
typedef struct sim_joint_view {
    sim_joint_kind kind;
    sim_vec3 anchor_parent, anchor_child; ///< m, in each body's frame.
    sim_quat frame_parent, frame_child; ///< Joint frame in each body's frame (x: twist/hinge axis).
    float swing1, swing2, twist_min, twist_max; ///< rad.
} sim_joint_view;

/// Fills *out for bone `bone` (> 0: the root has no joint). Errors:
/// SIM_E_STALE_ID, SIM_E_BAD_INDEX.
int sim_character_joint_view(const sim_world* w, sim_entity_id id, uint32_t bone,
                             sim_joint_view* out);

/// How far one joint of a character is from holding, on its current pose
/// (sim_character_probe_joints()).
typedef struct sim_joint_probe {
    /// Distance between the joint point as the parent carries it and as the
    /// bone carries it (the two anchors in the world), m; 0 when attached.
    float gap;
    /// Rotation about the twist axis (the bone for a ball joint, the hinge
    /// axis for a hinge) past [twist_min, twist_max], rad; 0 within. For a
    /// hinge this is its over-range; for a fixed joint, any twist.
    float twist_over;
    /// Swing outside the joint's cone, rad, measured along the swing's own
    /// direction (its angle minus the cone boundary's on that ray); 0
    /// within. For a hinge (a cone of zero half-angles) it is the tilt of
    /// the hinge axis; for a fixed joint, any swing.
    float swing_over;
} sim_joint_probe;

/// Measures every joint of a character on its current pose: out[i] for
/// bone i (skeleton order; out[0], the root, has no joint and is zero), up
/// to `cap` entries. Changes nothing. Returns the number filled (the bone
/// count when cap allows) or SIM_E_STALE_ID (also for non-characters).
int sim_character_probe_joints(const sim_world* w, sim_entity_id id, sim_joint_probe* out,
                               uint32_t cap);

// ---------------------------------------------------------------------------
// Balls
// ---------------------------------------------------------------------------

/// A dynamic rigid sphere, e.g. a projectile.
typedef struct sim_ball_def {
    sim_vec3 position; ///< m.
    sim_vec3 velocity; ///< m/s, each component within ±1000.
    float radius;      ///< m, (0, 5]. Default 0.2.
    float mass;        ///< kg, (0, 10^4]. Default 5.
    uint32_t cookie;   ///< Set by sim_ball_def_default().
} sim_ball_def;

/// Ball defaults: at (0, 1, 0) at rest, 0.2 m, 5 kg.
sim_ball_def sim_ball_def_default(void);

/// Spawns a ball. Errors as sim_world_spawn_rope().
int sim_world_spawn_ball(sim_world* w, const sim_ball_def* def, sim_entity_id* out);

/// Applies an impulse (N·s) at a ball's centre. Errors: SIM_E_STALE_ID,
/// SIM_E_NOT_FINITE, SIM_E_OUT_OF_RANGE (beyond ±SIM_MAX_IMPULSE).
int sim_ball_apply_impulse(sim_world* w, sim_entity_id id, sim_vec3 impulse);

/// The pose, velocity (m/s) and radius (m) of a ball; any output may be
/// NULL. Errors: SIM_E_STALE_ID.
int sim_ball_get(const sim_world* w, sim_entity_id id, sim_bone_pose* pose, sim_vec3* v,
                 float* radius);

// ---------------------------------------------------------------------------
// Counts, solver work and memory
// ---------------------------------------------------------------------------

/// What spawning an entity from `def` would add to any world, computed from
/// the def alone (no world): *out gets its counts (entities is 1). Checks
/// only what the counts depend on, with the codes the spawn gives for it:
/// SIM_E_INVALID_ARG (NULL, or a def not from its _default()),
/// SIM_E_OUT_OF_RANGE (rope segments outside 1..1000, cloth cols or rows
/// below 2), SIM_E_CAPACITY (cloth cols or rows above 256). The spawn
/// checks the rest (finiteness, ranges, the world's cube) and adds exactly
/// these counts when it succeeds. A rope of n segments: n + 1 particles, n
/// constraints. A cols × rows cloth: cols·rows particles and the
/// structural, shear and bend constraints of its grid. A particle ragdoll:
/// 16 particles, 37 constraints, 8 joint limits.
int sim_rope_def_counts(const sim_rope_def* def, sim_counts* out);
/// See sim_rope_def_counts().
int sim_cloth_def_counts(const sim_cloth_def* def, sim_counts* out);
/// See sim_rope_def_counts().
int sim_ragdoll_def_counts(const sim_ragdoll_def* def, sim_counts* out);
/// See sim_rope_def_counts(): a character of n bones has n bodies and n - 1
/// joints. `lib` is the library the world would be created with (its
/// def.library). Errors: SIM_E_INVALID_ARG (NULL def or out, a def not from
/// sim_character_def_default(), a NULL skeleton or clip name),
/// SIM_E_UNKNOWN_NAME (lib is NULL, or has no such skeleton, or the
/// skeleton no such clip).
int sim_character_def_counts(const sim_library* lib, const sim_character_def* def, sim_counts* out);
/// See sim_rope_def_counts(): one body.
int sim_ball_def_counts(const sim_ball_def* def, sim_counts* out);
/// See sim_rope_def_counts(): a soft body's lattice points as particles
/// and soft_particles; no constraints. Checks the shape and resolution
/// (SIM_E_OUT_OF_RANGE).
int sim_softbody_def_counts(const sim_softbody_def* def, sim_counts* out);

/// Solver work per tick (projections, as max_solver_work counts them) of
/// what `c` counts, under parameters p (only iterations and substeps
/// matter; they need not be valid, but are taken as at least 1). The
/// measure is linear: the work of a world plus that of an entity's counts
/// is the work of the world with the entity spawned.
uint64_t sim_counts_solver_work(const sim_counts* c, const sim_params* p);

/// sim_counts_solver_work() in world w: the rigid bodies' substeps are the
/// ones w's solver and tick take (a soft-step world takes at least 4 per
/// 1/60 s, so one of tick_hz 1 takes 240 per tick and its bodies cost 60
/// times what they do at 60 Hz per tick, the same per second). Linear like
/// it: sim_world_solver_work(w) plus this is w's work with c added.
uint64_t sim_world_counts_solver_work(const sim_world* w, const sim_counts* c, const sim_params* p);

/// What the world holds now.
sim_counts sim_world_counts(const sim_world* w);

/// What the world's arrays have room for now: at least what it holds, at
/// most its limits (entities counts slots ever used, since arrays are
/// indexed by slot).
sim_counts sim_world_reserved(const sim_world* w);

/// Makes room for at least `totals` (each a total for the world, not an
/// addition), growing every array geometrically as a spawn would; it never
/// shrinks. Errors: SIM_E_INVALID_ARG (NULL), SIM_E_CAPACITY (a total above
/// the world's limit; nothing grows), SIM_E_NOMEM (the allocator refused;
/// the world is unchanged and usable).
int sim_world_reserve(sim_world* w, const sim_counts* totals);

/// Bytes the world holds through its allocator now: the world struct and
/// every array at its current capacity (what the allocator was asked for,
/// before any alignment padding it adds).
size_t sim_world_reserved_bytes(const sim_world* w);

/// Bytes a world created from `def` would hold when full to every limit
/// (max_entities entities, max_particles particles, ..., and 8 joint limits
/// per entity): the most it can ever reserve. 0 for a def that
/// sim_world_create() would refuse.
size_t sim_world_def_max_bytes(const sim_world_def* def);

// ---------------------------------------------------------------------------
// Events
// ---------------------------------------------------------------------------

/// Kinds of event.
typedef enum sim_event_kind {
    /// An entity went non-finite or flew far out of the world; it was
    /// removed (its id is now stale).
    SIM_EVENT_UNSTABLE = 1,
    SIM_EVENT_CHARACTER_STATE = 2, ///< A character changed state (to `state`).
    SIM_EVENT_SETTLED = 3,         ///< A ragdoll came to rest.
    /// Sticks of a cloth or rope tore (its topology changed): the pairs are
    /// in sim_world_drain_torn().
    SIM_EVENT_TORN = 4,
} sim_event_kind;

/// Something that happened in a world.
typedef struct sim_event {
    sim_event_kind kind;
    sim_entity_id entity;
    sim_char_state state; ///< For SIM_EVENT_CHARACTER_STATE.
    uint64_t tick;        ///< The first tick whose state shows it.
} sim_event;

/// What a body hit (sim_impact.with).
typedef enum sim_impact_with {
    SIM_IMPACT_BODY = 0,   ///< Another body: sim_impact.b, bone_b.
    SIM_IMPACT_GROUND = 1, ///< The ground plane.
    SIM_IMPACT_BOX = 2,    ///< A static box: sim_impact.box.
} sim_impact_with;

/// A body that struck something: a contact that pushed this tick whose
/// points were closing faster than SIM_IMPACT_MIN_SPEED along its normal
/// before the solve (Box2D v3's contact hit events: the approach speed at
/// the start of the step, reported when the contact gave an impulse). One
/// per pair of bodies (or body and static collider) a tick, the fastest
/// point of the pair. Characters' bones (MAXIMAL) and balls, under both
/// solvers; a REDUCED character's contacts and particles are not reported.
typedef struct sim_impact {
    uint64_t tick;        ///< The first tick whose state shows it.
    sim_entity_id a;      ///< The striking body's entity (a character or ball).
    uint32_t bone_a;      ///< Its bone (0 for a ball).
    sim_impact_with with; ///< What it struck.
    sim_entity_id b;      ///< SIM_IMPACT_BODY: the other body's entity.
    uint32_t bone_b;      ///< SIM_IMPACT_BODY: its bone.
    uint32_t box;         ///< SIM_IMPACT_BOX: the box's index (sim_world_boxes()).
    sim_vec3 point;       ///< On a's surface at the start of the tick, m.
    sim_vec3 normal;      ///< Unit, from what was struck toward a.
    float speed;          ///< Closing speed along the normal before the solve, m/s.
} sim_impact;

/// Slowest impact reported, m/s (a body settling on the ground closes at
/// well under this; a 1.3 cm drop reaches it).
#define SIM_IMPACT_MIN_SPEED 0.5f
/// Most impacts reported per tick: beyond, the slowest are dropped (and
/// counted).
#define SIM_MAX_IMPACTS_PER_TICK 32u
/// Impacts kept until drained (SIM_MAX_IMPACTS_PER_TICK × 8 ticks).
#define SIM_MAX_IMPACTS 256u

/// Moves up to `cap` impacts, oldest tick first and within a tick fastest
/// first, into out and returns how many (out NULL: discards them all).
/// *dropped (may be NULL) gets how many were dropped since the last drain
/// (past SIM_MAX_IMPACTS_PER_TICK in a tick, or SIM_MAX_IMPACTS not
/// drained), and its count restarts. Not part of the world's state (not
/// saved, not hashed).
uint32_t sim_world_drain_impacts(sim_world* w, sim_impact* out, uint32_t cap, uint64_t* dropped);

/// Which limit of a joint (sim_limit_hit.limit).
typedef enum sim_limit_kind {
    SIM_LIMIT_TWIST_MAX = 0, ///< The twist (a hinge's angle) at twist_max.
    SIM_LIMIT_TWIST_MIN = 1, ///< At twist_min.
    SIM_LIMIT_SWING = 2,     ///< The swing at the edge of its cone.
} sim_limit_kind;

/// A ragdoll's joint that came up against one of its limits this tick
/// (within 1° of it, or past it) while it had been turning toward it
/// faster than SIM_LIMIT_HIT_MIN_SPEED the tick before: a knee locking
/// straight, an elbow slamming open. Dynamic bones of RAGDOLL and PARTIAL
/// characters, either solver and MAXIMAL or REDUCED. Only reported while
/// sim_world_report_limit_hits() is on.
typedef struct sim_limit_hit {
    uint64_t tick;        ///< The first tick whose state shows it.
    sim_entity_id entity; ///< The character.
    uint32_t bone;        ///< The joint's bone (its joint to its parent).
    sim_limit_kind limit;
    float speed; ///< How fast the joint turned toward the limit the tick before, rad/s.
} sim_limit_hit;

/// Slowest limit hit reported, rad/s.
#define SIM_LIMIT_HIT_MIN_SPEED 1.0f
/// Most limit hits reported per tick (the fastest; the rest are counted).
#define SIM_MAX_LIMIT_HITS_PER_TICK 32u
/// Limit hits kept until drained.
#define SIM_MAX_LIMIT_HITS 128u

/// Turns the measuring of joint limit hits on or off (off when a world is
/// made or loaded): it costs a swing-twist decomposition per dynamic joint
/// a tick, which only a world with someone listening should pay. It changes
/// nothing the simulation does.
void sim_world_report_limit_hits(sim_world* w, bool on);

/// Moves up to `cap` limit hits, oldest tick first and within a tick the
/// fastest first, into out (NULL: discards them all); as
/// sim_world_drain_impacts().
uint32_t sim_world_drain_limit_hits(sim_world* w, sim_limit_hit* out, uint32_t cap,
                                    uint64_t* dropped);

#define SIM_MAX_TORN 256 ///< Torn sticks kept until drained (more are counted, not kept).

/// A stick that tore: its entity and its particles (local indices).
typedef struct sim_torn {
    sim_entity_id entity;
    uint32_t a, b;
    uint64_t tick; ///< The first tick whose state shows it torn.
} sim_torn;

/// Moves up to `cap` torn sticks, oldest first, into out and returns how
/// many (out NULL: discards them all). When that empties the list,
/// *dropped (may be NULL) gets how many tore beyond SIM_MAX_TORN since it
/// was last empty (not kept); else 0. Drain after each batch of steps.
uint32_t sim_world_drain_torn(sim_world* w, sim_torn* out, uint32_t cap, uint32_t* dropped);

/// Makes a cloth or rope tearable: from the next substep, a stick stretched
/// past `ratio` × its rest length tears (seed 000 §11: "ropes that can tear
/// (drop a constraint once it stretches past some threshold)"), and so do
/// its shear and bend constraints. 0 turns tearing off. A tear turns the
/// entity's long-range attachments off (their rest distances no longer
/// hold). Errors: SIM_E_STALE_ID (or not a rope or cloth), SIM_E_NOT_FINITE,
/// SIM_E_OUT_OF_RANGE (ratio not 0 and outside [1.01, 100]).
int sim_entity_set_tear(sim_world* w, sim_entity_id id, float ratio);

/// Moves up to `cap` pending events, oldest first, into out and returns how
/// many. Events accumulate from steps until drained; at most 256 are kept
/// (the oldest are dropped beyond that).
uint32_t sim_world_drain_events(sim_world* w, sim_event* out, uint32_t cap);

/// sim_world_drain_events() without draining: copies up to `cap` pending
/// events, oldest first, and leaves them queued.
uint32_t sim_world_peek_events(const sim_world* w, sim_event* out, uint32_t cap);

/// Entities the world has removed as unstable (SIM_EVENT_UNSTABLE) since it
/// was created: non-finite, past 10 × half_extent, or faster than
/// SIM_MAX_SPEED. Part of the state (sim_world_save()).
uint64_t sim_world_quarantined(const sim_world* w);

/// Speed past which a particle or a body is taken to have blown up, m/s
/// (about three times the speed of sound: nothing a ragdoll or a cloth does).
#define SIM_MAX_SPEED 1000.0f

#ifdef __cplusplus
}
#endif
