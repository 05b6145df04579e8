/*
 * soft.h: private structures of the soft-step rigid solver (soft_step.c,
 * soft_contact.c, soft_joint.c, graph.c; the default), the alternative to
 * the XPBD solver of solver.c, chosen by sim_world_def.solver.
 *
 * The method is Box2D v3's "soft step" (Erin Catto, "Solver2D", 2024;
 * box2d.org/posts/2024/02/solver2d): per tick, contacts are found once
 * (speculatively, on the poses at the start of the tick) and warm-started
 * from the last tick; the tick is cut into SIM__SOFT_SUBSTEPS substeps, each
 * of which
 *
 *   1. integrates velocities (gravity, spin cap),
 *   2. warm-starts every constraint (applies its accumulated impulse),
 *   3. solves every constraint once with a bias toward its position error:
 *      contacts soft (a mass-spring-damper of stiffness `hertz` and damping
 *      ratio `zeta`: Catto's "soft constraints", GDC 2011), joint rows
 *      rigid with a Baumgarte bias (soft_step.c says why),
 *   4. integrates positions,
 *   5. relaxes: solves every constraint once more without the bias, which
 *      takes out the velocity the bias added;
 *
 * then restitution is applied once and the impulses are stored for the
 * next tick, and each skeleton's joints are closed at the position level
 * (stabilize.c; the tick's contact points tell it what an impact drove
 * into the static world). Constraints read the bodies' position change since the start
 * of the tick (dp, dq) to know their current error, so nothing is
 * re-collided inside the tick.
 *
 * Layout: the awake bodies' velocities and pose changes live in a small hot
 * array (sim__body_state, 64 bytes) indexed by solver index; their inverse
 * masses and world inverse inertias (fixed over the tick) in a second one.
 * Constraints (joint rows and contact points) are ordered in graph colours
 * (graph.c, Box2D v3's constraint graph): no two constraints of one colour
 * share a dynamic body, so a colour can be solved in any order, in SIMD
 * lanes or on several threads with the same result.
 */
#pragma once

#include "rigid.h"

typedef struct sim__island sim__island; // world.h
typedef struct sim__ijoint sim__ijoint; // world.h

/// Substeps of a soft-step tick (Box2D v3 and Box3D's default: 4).
#define SIM__SOFT_SUBSTEPS 4
/// Graph colours (Box2D v3 uses 24); constraints that fit in none are solved
/// after the colours, in the order they were made.
#define SIM__GRAPH_COLOURS 24
/// A body's spin cap, rad per tick: 0.25·π (Jolt's default; solver.c's too).
#define SIM__SOFT_MAX_SPIN_PER_TICK (0.25f * 3.14159265f)
/// A solver index for "not an awake body": static, or asleep (frozen).
#define SIM__NO_STATE UINT32_MAX

/// An awake body's hot state during a soft-step tick. 64 bytes: one cache
/// line.
typedef struct sim__body_state {
    sim_vec3 v;     ///< Linear velocity, m/s.
    float inv_mass; ///< 1/kg, 0 for a kinematic body.
    sim_vec3 w;     ///< Angular velocity (world), rad/s.
    uint32_t body;  ///< Global body index.
    sim_vec3 dp;    ///< Position change since the start of the tick, m.
    float pad;
    sim_quat dq; ///< Rotation since the start of the tick (world, applied on the left).
} sim__body_state;
_Static_assert(sizeof(sim__body_state) == 64,
               "sim__body_state is the solver's hot state: 64 bytes");

/// An awake body's world inverse inertia for the tick (xx, yy, zz, xy, xz,
/// yz), kg⁻¹·m⁻², from its orientation at the start of the tick.
typedef struct sim__body_mass {
    float iw[6];
    float pad[2];
} sim__body_mass;
_Static_assert(sizeof(sim__body_mass) == 32, "sim__body_mass: 32 bytes");

/// Soft-constraint coefficients for one substep length (Catto, Box2D v3's
/// b2Softness): impulse = -m·mass_scale·(Ċ + bias_rate·C) - impulse_scale·λ.
typedef struct sim__softness {
    float bias_rate;     ///< 1/s.
    float mass_scale;    ///< [0, 1].
    float impulse_scale; ///< [0, 1].
} sim__softness;

/// Softness of a spring of frequency `hertz` (Hz) and damping ratio `zeta`
/// over a substep of h seconds; hertz 0 is rigid (no bias).
sim__softness sim__make_soft(float hertz, float zeta, float h);

/// One contact point of the tick (sim__soft_contact), between body a (an
/// awake dynamic body) and b (awake, or SIM__NO_STATE for the static world or
/// a sleeping body). The normal points from b to a.
typedef struct sim__soft_contact {
    uint32_t a, b;   ///< Solver indices.
    sim_vec3 n;      ///< Unit normal, from b to a.
    sim_vec3 t1, t2; ///< Tangents: n, t1, t2 right-handed.
    sim_vec3 ra, rb; ///< Anchors: offsets from a's and b's centres at the start of the tick, m.
    sim_vec3 ca, cb; ///< Core points under the contact (segment, centre), offsets like ra, rb.
    /// Separation at the start of the tick minus dot(ca - cb, n), m: the
    /// centres' distance along n less both radii.
    float base_sep;
    float m_n;        ///< Normal effective mass, kg.
    float m_t1, m_t2; ///< Tangent effective masses, kg.
    float lambda_n;   ///< Accumulated normal impulse of a substep, N·s.
    float lambda_t1, lambda_t2;
    float max_lambda_n; ///< Largest normal impulse applied this tick (restitution).
    float vn0;          ///< Relative normal velocity at the start of the tick, m/s.
    float roll_cap;     ///< Rolling resistance: radius × coefficient, m.
    float friction;
    uint32_t is_static; ///< 1 when b is not an awake body (static softness).
    sim_vec3 lambda_roll;
} sim__soft_contact;

/// Four 3-vectors, structure of arrays (soft_wide.c).
typedef struct sim__v3x4 {
    float x[4], y[4], z[4];
} sim__v3x4;

/// Four contact points of one graph colour side by side (soft_wide.c; Box2D
/// v3's b2ContactConstraintSIMD): lane l holds the fields of the
/// sim__soft_contact k[l]. The lanes of a block never share a dynamic body
/// (they are of one colour). A block of a colour's last 1-3 points is
/// padded with lanes that do nothing: k UINT32_MAX, both bodies the static
/// stand-in, every field 0.
typedef struct sim__contact_block {
    uint32_t a[4], b[4]; ///< Solver indices, SIM__NO_STATE: the static stand-in.
    uint32_t k[4];       ///< Contact point of each lane, UINT32_MAX: padding.
    /// Bit l: lane l's body a is dynamic, so its velocities are written back;
    /// bit 4 + l: its body b. Static, kinematic and sleeping bodies are only
    /// read (a kinematic one may be in several lanes).
    uint32_t write;
    uint32_t pad[3];
    sim__v3x4 n, t1, t2, ra, rb;
    sim__v3x4 ca, cb; ///< Core points (sim__soft_contact.ca, cb).
    float base_sep[4], m_n[4], m_t1[4], m_t2[4];
    float lambda_n[4], lambda_t1[4], lambda_t2[4], max_lambda_n[4];
    float vn0[4], roll_cap[4], friction[4];
    float is_static[4]; ///< 1 or 0.
    sim__v3x4 lambda_roll;
} sim__contact_block;

/// A contact point's impulses kept for the next tick's warm start, sorted by
/// key (sim__soft_key).
typedef struct sim__soft_cached {
    uint64_t key;
    float lambda_n;
    sim_vec3 friction; ///< World tangential impulse, N·s.
    sim_vec3 roll;     ///< Rolling resistance angular impulse, N·m·s.
} sim__soft_cached;

/// A joint's frames and swing-twist split on the current poses (soft_joint.c).
typedef struct sim__joint_frame {
    sim_quat jp, jc;       ///< Joint frames in the world now.
    sim_quat swing, twist; ///< rel = swing·twist, both with w >= 0.
    sim_vec3 twist_axis;   ///< The child's twist axis in the world.
} sim__joint_frame;

/// One joint of the tick (soft_joint.c).
typedef struct sim__soft_joint {
    uint32_t p, c;           ///< Solver indices (SIM__NO_STATE: static).
    uint32_t j;              ///< Global joint index (sim__bjoint).
    sim_vec3 rp0, rc0;       ///< Anchors at the start of the tick, world offsets, m.
    sim_vec3 delta_center;   ///< Child centre minus parent centre at the start of the tick.
    sim_quat fp0, fc0;       ///< Joint frames in the world at the start of the tick.
    sim__joint_impulses acc; ///< Accumulated impulses of a substep.
    /// The twist is farther than one substep's turn from both ends of its
    /// range while tan(φ/2) lies in (tan_lo_far, tan_hi_far): the limit rows
    /// are skipped without trigonometry (lo > hi: never skipped).
    float tan_lo_far, tan_hi_far;
    sim__joint_frame frame; ///< Set by the warm start, read by the biased solve.
    sim_quat goal;          ///< The drive's target clamped to the limits (kp > 0).
} sim__soft_joint;

/// Graph colouring of a tick's constraints (graph.c).
typedef struct sim__colouring {
    uint32_t colour_count;                  ///< Colours used.
    uint32_t first[SIM__GRAPH_COLOURS + 2]; ///< Ranges into `order`; the last is the overflow.
} sim__colouring;

/// Colours n constraints (Box2D v3's constraint graph, greedy: each takes
/// the first colour in which neither of its bodies is used yet). Constraint
/// k links solver indices a[k] and b[k] (SIM__NO_STATE, or a body whose
/// `blocks` bit is clear, does not count: static and kinematic bodies are
/// only read). `bits` is scratch of SIM__GRAPH_COLOURS × words uint64_t,
/// words = ⌈bodies/64⌉, and `colour` scratch of n bytes. Writes the constraint indices grouped by
/// colour to order[0..n) (in their original order within a colour) and the ranges to *out;
/// constraints no colour can take go last (out->first[colour_count].. first[colour_count + 1]).
void sim__graph_colour(const uint32_t* a, const uint32_t* b, uint32_t n, const uint8_t* blocks,
                       uint32_t bodies, uint64_t* bits, uint8_t* colour, uint32_t* order,
                       sim__colouring* out);

/// m·v for a symmetric 3×3 matrix stored (xx, yy, zz, xy, xz, yz).
static inline sim_vec3 sim__sym_mul(const float* m, sim_vec3 v) {
    sim_vec3 r = {m[0] * v.x + m[3] * v.y + m[4] * v.z, m[3] * v.x + m[1] * v.y + m[5] * v.z,
                  m[4] * v.x + m[5] * v.y + m[2] * v.z};
    return r;
}

/// The solver's view of a body during a soft-step tick: its state and mass,
/// or a static stand-in (zero velocity, zero inverse mass) for
/// SIM__NO_STATE. Writes to the stand-in are thrown away.
typedef struct sim__soft_bodies {
    sim__body_state* state;
    const sim__body_mass* mass;
} sim__soft_bodies;

/// Everything a soft-step constraint needs from its world for one substep.
typedef struct sim__soft_ctx {
    sim__body_state* state;
    const sim__body_mass* mass;
    float h, inv_h;
    sim__softness contact_soft; ///< Between two awake bodies.
    sim__softness static_soft;  ///< Against the static world (stiffer, as Box2D's).
    sim__softness joint_soft;   ///< Joint rows: rigid, with a Baumgarte bias (soft_step.c).
    float max_push;             ///< Contact push-out speed cap, m/s.
    float restitution;          ///< Bounciness of rigid contacts, [0, 1].
    float rest_speed;           ///< Slower impacts do not bounce, m/s.
} sim__soft_ctx;

/// The static stand-in: zero velocity, no motion, zero inverse mass and
/// inertia (soft_step.c). It is what SIM__NO_STATE (the static world, a
/// sleeping body) reads as.
extern const sim__body_state sim__soft_static_state;
extern const sim__body_mass sim__soft_static_mass;

/// Solver index i's state, or for SIM__NO_STATE a copy of the static
/// stand-in in *scratch (so that writes to it are thrown away).
static inline sim__body_state* sim__soft_state_of(const sim__soft_ctx* ctx, uint32_t i,
                                                  sim__body_state* scratch) {
    if (i == SIM__NO_STATE) {
        *scratch = sim__soft_static_state;
        return scratch;
    }
    return &ctx->state[i];
}

/// Solver index i's mass, or the static stand-in's.
static inline const sim__body_mass* sim__soft_mass_of(const sim__soft_ctx* ctx, uint32_t i) {
    return i == SIM__NO_STATE ? &sim__soft_static_mass : &ctx->mass[i];
}

/// Applies impulse p (N·s) at world offset r to awake body s (sign +1) or
/// its reaction (sign -1).
static inline void sim__soft_push(sim__body_state* s, const sim__body_mass* m, sim_vec3 r,
                                  sim_vec3 p) {
    s->v.x += s->inv_mass * p.x;
    s->v.y += s->inv_mass * p.y;
    s->v.z += s->inv_mass * p.z;
    sim_vec3 t = {r.y * p.z - r.z * p.y, r.z * p.x - r.x * p.z, r.x * p.y - r.y * p.x};
    sim_vec3 dw = sim__sym_mul(m->iw, t);
    s->w.x += dw.x;
    s->w.y += dw.y;
    s->w.z += dw.z;
}

/// Applies angular impulse L (N·m·s) to awake body s.
static inline void sim__soft_turn(sim__body_state* s, const sim__body_mass* m, sim_vec3 L) {
    sim_vec3 dw = sim__sym_mul(m->iw, L);
    s->w.x += dw.x;
    s->w.y += dw.y;
    s->w.z += dw.z;
}

// soft_contact.c

/// Warm-start key codes of what a point touches besides a body.
#define SIM__CODE_GROUND (1u << 21)
#define SIM__CODE_BOX    ((1u << 21) + 1u)

/// Finds the tick's contact points of one island on the poses at the start
/// of the tick (contact.c's narrow phase, with a speculative margin of 2 cm
/// plus what each body may close in one tick): against the ground and the
/// boxes with `statics`, else between bodies. The caller finds every
/// island's static points first, so that a world short of contact room
/// drops points between bodies before those that hold bodies up.
void sim__soft_contacts_find(sim_world* w, const sim__island* isl, bool statics);

/// Records a contact point found at the start of the tick between global
/// bodies ia (dynamic) and ib (a body, or SIM__NO_BODY for the ground and
/// boxes; `code` then names which, for the warm-start key): normal n from b
/// to a, the points pa on a and pb on b (world, m), feature: which point of
/// the pair (0..3).
void sim__soft_add_point(sim_world* w, uint32_t ia, uint32_t ib, uint32_t code, sim_vec3 n,
                         sim_vec3 pa, sim_vec3 pb, uint32_t feature);

/// Masses, tangents and warm-start impulses of the tick's contact points.
void sim__soft_contacts_prepare(sim_world* w, const sim__soft_ctx* ctx);
void sim__soft_contact_warm(const sim__soft_ctx* ctx, sim__soft_contact* c);
void sim__soft_contact_solve(const sim__soft_ctx* ctx, sim__soft_contact* c, bool use_bias);
/// Restitution after the tick's last substep (Box2D's b2ApplyRestitution).
void sim__soft_contact_restitute(const sim__soft_ctx* ctx, sim__soft_contact* c);
/// Keeps the tick's contact impulses for the next tick's warm start.
void sim__soft_contacts_store(sim_world* w);

// soft_wide.c: the contact points of the colours, four at a time (lanes.h).
// The overflow's points stay on the scalar functions above; per lane, the
// block functions do exactly their operations, so the results are the
// same bit for bit.

/// Blocks for at most `points` contact points over the colours.
#define SIM__WIDE_BLOCKS(points) (((size_t)(points) + 3u) / 4u + SIM__GRAPH_COLOURS)

/// Fills a block from contact points c[k[0..lanes)] (lanes 1..4; the rest
/// padded). dynamic[i]: solver index i is a dynamic body (written back).
void sim__soft_wide_fill(sim__contact_block* blk, const sim__soft_contact* c, const uint32_t* k,
                         uint32_t lanes, const uint8_t* dynamic);
/// Writes the blocks' impulses back to their contact points in c.
void sim__soft_wide_unpack(const sim__contact_block* blk, uint32_t count, sim__soft_contact* c);
/// The per-point functions above, on `count` blocks.
void sim__soft_wide_warm(const sim__soft_ctx* ctx, sim__contact_block* blk, uint32_t count);
void sim__soft_wide_solve(const sim__soft_ctx* ctx, sim__contact_block* blk, uint32_t count,
                          bool use_bias);
void sim__soft_wide_restitute(const sim__soft_ctx* ctx, sim__contact_block* blk, uint32_t count);
/// Packs each colour's contact points into blocks (after the colouring):
/// colour c's are blocks soft_wide_first[c] .. soft_wide_first[c + 1].
void sim__soft_wide_pack(sim_world* w);

// soft_joint.c

/// Fills the tick's joint constraint for joint ij from the bodies' poses at
/// the start of the tick and the joint's impulses of the last tick; ctx
/// gives the substep length.
void sim__soft_joint_prepare(sim_world* w, const sim__soft_ctx* ctx, const sim__ijoint* ij,
                             sim__soft_joint* sj);
void sim__soft_joint_warm(const sim__soft_ctx* ctx, sim__soft_joint* sj);
/// One pass over the joint: drive, limits, then the point constraint; with
/// use_bias the position errors are corrected softly, without only
/// speculative limits act (Box2D v3's revolute and spherical joints).
void sim__soft_joint_solve(const sim__soft_ctx* ctx, const sim__bjoint* j, sim__soft_joint* sj,
                           bool use_bias);
/// Drive damping and joint friction, once per substep (velocity only).
void sim__soft_joint_damp(const sim__soft_ctx* ctx, const sim__bjoint* j, sim__soft_joint* sj);
/// Keeps the joint's impulses for the next tick.
void sim__soft_joint_store(sim_world* w, const sim__soft_joint* sj);
