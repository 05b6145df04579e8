/*
 * rdp.h: the ragdolld wire protocol codec (target rdp), shared by the server
 * and the clients. protocol/PROTOCOL.md is the normative specification; this
 * header is its C form.
 *
 * What it owns: decoding and validating JSON commands into plain structs,
 * encoding replies, events and snapshots (JSON and binary). It knows nothing
 * about the simulator: snapshots are described by the plain structs below,
 * which point at the caller's arrays.
 *
 * Threading: every function is reentrant; nothing is global.
 *
 * Units: SI (m, kg, s, rad, N·s), +Y up, as in PROTOCOL.md.
 *
 * Memory: strings returned as `char*` are allocated with cJSON's allocator
 * (malloc by default) and freed by the caller with rdp_free().
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// Protocol version carried in the welcome event and binary snapshots.
#define RDP_PROTOCOL_VERSION 1
/// WebSocket subprotocol name for this version.
#define RDP_SUBPROTOCOL "ragdolld.v1"
/// Largest command message a server accepts, bytes.
#define RDP_MAX_MESSAGE_BYTES (64 * 1024)
/// Longest world name, bytes.
#define RDP_MAX_NAME 64
/// The longest world template name (create_world's "template").
#define RDP_MAX_TEMPLATE_NAME 48
/// Bound on every position coordinate a command may carry, m.
#define RDP_MAX_COORD 1000.0
/// Longest raycast, m (the world cube's diagonal, 2000 √3 m, and some).
#define RDP_MAX_RAY_DISTANCE 4000.0
/// Bound on an XPBD compliance a spawn may give (spawn_rope's compliance,
/// spawn_cloth's stretch_, shear_ and bend_compliance), m/N: 1 N stretches
/// such a constraint by 1 m, softer than any fabric or rope.
#define RDP_MAX_COMPLIANCE 1.0
/// spawn_cloth's bend_compliance when absent, m/N: a sheet drapes instead of
/// acting like card.
#define RDP_DEFAULT_BEND_COMPLIANCE 1.0e-3
/// Largest integer a JSON number carries exactly (2^53 - 1).
#define RDP_MAX_SAFE_INTEGER 9007199254740991.0
/// Longest skeleton, clip or bone name, bytes.
#define RDP_MAX_BONE_NAME 31
/// Most names in a `bones` list (set_drive, set_partial).
#define RDP_MAX_BONES 32
/// Most bones of one character in a binary snapshot (the simulator's
/// SIM_MAX_BONES): its parent index is coded in 10 bits.
#define RDP_MAX_SKELETON_BONES 1024
/// The binary snapshot format's version (the byte after "RDS2").
#define RDP_SNAPSHOT_VERSION 3

// ---------------------------------------------------------------------------
// Error codes
// ---------------------------------------------------------------------------

/// The protocol's error codes: XX(NAME, "wire string").
#define RDP_CODE_MAP(XX)                                                                           \
    XX(BAD_JSON, "bad_json")                                                                       \
    XX(BAD_REQUEST, "bad_request")                                                                 \
    XX(UNKNOWN_OP, "unknown_op")                                                                   \
    XX(NOT_FOUND, "not_found")                                                                     \
    XX(OUT_OF_RANGE, "out_of_range")                                                               \
    XX(NOT_FINITE, "not_finite")                                                                   \
    XX(TOO_LARGE, "too_large")                                                                     \
    XX(BAD_STATE, "bad_state")                                                                     \
    XX(FORBIDDEN, "forbidden")                                                                     \
    XX(RATE_LIMITED, "rate_limited")                                                               \
    XX(INTERNAL, "internal")                                                                       \
    XX(UNAVAILABLE, "unavailable")

/// An error code; RDP_OK (0) is success.
typedef enum rdp_code {
    RDP_OK = 0,
#define RDP__CODE_ENUM(name, str) RDP_E_##name,
    RDP_CODE_MAP(RDP__CODE_ENUM)
#undef RDP__CODE_ENUM
} rdp_code;

/// The wire string of a code ("bad_json", ...); "ok" for RDP_OK, "internal"
/// for anything unknown. Static storage.
const char* rdp_code_name(rdp_code code);

/// A decoding error: the code and a human-readable message naming the field.
typedef struct rdp_error {
    rdp_code code;
    char message[160];
} rdp_error;

// ---------------------------------------------------------------------------
// Commands
// ---------------------------------------------------------------------------

/// The commands of PROTOCOL.md §3.
typedef enum rdp_op {
    RDP_OP_LIST_WORLDS = 1,
    RDP_OP_CREATE_WORLD,
    RDP_OP_DESTROY_WORLD,
    RDP_OP_SUBSCRIBE,
    RDP_OP_UNSUBSCRIBE,
    RDP_OP_SPAWN_ROPE,
    RDP_OP_SPAWN_CLOTH,
    RDP_OP_SPAWN_RAGDOLL,
    RDP_OP_DESPAWN,
    RDP_OP_DESCRIBE,
    RDP_OP_APPLY_IMPULSE,
    RDP_OP_DRAG,
    RDP_OP_RELEASE,
    RDP_OP_SET_PARAMS,
    RDP_OP_SPAWN_CHARACTER,
    RDP_OP_SPAWN_BALL,
    RDP_OP_KILL,
    RDP_OP_START_GETUP,
    RDP_OP_SET_DRIVE,
    RDP_OP_SET_PARTIAL,
    RDP_OP_PLAY,
    RDP_OP_ACK,
    RDP_OP_RESYNC,
    RDP_OP_ATTACH_CLOTH,
    RDP_OP_SET_FOCUS,
    RDP_OP_SET_TEAR,
    RDP_OP_SPAWN_SOFTBODY,
    RDP_OP_SAVE_WORLD,
    RDP_OP_ADD_BOX,
    RDP_OP_RAYCAST,
} rdp_op;

/// Garment kinds of attach_cloth (the values match sim_garment_kind).
typedef enum rdp_garment {
    RDP_GARMENT_CAPE = 1,
    RDP_GARMENT_SKIRT = 2,
    RDP_GARMENT_HAIR = 3,
} rdp_garment;

/// The wire name of an op ("spawn_rope", ...), or NULL for an unknown value.
const char* rdp_op_name(rdp_op op);

/// A 3-vector as decoded from JSON (finite, range-checked per field).
typedef struct rdp_vec3 {
    double x, y, z;
} rdp_vec3;

/// Snapshot encodings a subscriber may ask for.
typedef enum rdp_format {
    RDP_FORMAT_JSON = 1,
    RDP_FORMAT_BINARY = 2,
} rdp_format;

/// Which set_params fields were given.
enum rdp_param_bits {
    RDP_PARAM_GRAVITY = 1 << 0,
    RDP_PARAM_DAMPING = 1 << 1,
    RDP_PARAM_ITERATIONS = 1 << 2,
    RDP_PARAM_SUBSTEPS = 1 << 3,
    RDP_PARAM_BOUNCINESS = 1 << 4,
    RDP_PARAM_FRICTION = 1 << 5,
    RDP_PARAM_WIND = 1 << 6,
    RDP_PARAM_GUST = 1 << 7,
    RDP_PARAM_GUST_PERIOD = 1 << 8,
    RDP_PARAM_AIR_DENSITY = 1 << 9,
    RDP_PARAM_DRAG_COEF = 1 << 10,
    RDP_PARAM_LIFT_COEF = 1 << 11,
};

/// spawn_cloth's "pin".
typedef enum rdp_pin {
    RDP_PIN_NONE = 0, ///< "none".
    RDP_PIN_TOP = 1,  ///< "top": row 0 (the default).
    RDP_PIN_LEFT = 2, ///< "left": column 0, a flag on its pole.
} rdp_pin;

/// subscribe's opt-in events ("events": names of PROTOCOL.md §4).
enum rdp_event_bits {
    RDP_EVENT_IMPACT = 1 << 0,      ///< "impact": the `impacts` event.
    RDP_EVENT_JOINT_LIMIT = 1 << 1, ///< "joint_limit": the `limit_hits` event.
};

/// Which optional fields of other ops were given (rdp_command.given).
enum rdp_given_bits {
    RDP_GIVEN_PARTICLE = 1 << 0, ///< apply_impulse: "particle".
    RDP_GIVEN_BONE = 1 << 1,     ///< apply_impulse: "bone".
    RDP_GIVEN_POINT = 1 << 2,    ///< apply_impulse, set_focus: "point".
    RDP_GIVEN_BONES = 1 << 3,    ///< set_drive: "bones".
    RDP_GIVEN_ACROSS = 1 << 4,   ///< spawn_cloth: "across".
    RDP_GIVEN_DOWN = 1 << 5,     ///< spawn_cloth: "down".
    /// kill, apply_impulse, raycast: "seen_tick" (lag compensation).
    RDP_GIVEN_SEEN_TICK = 1 << 6,
};

/// The limits a world may be created with (create_world's "limits", PROTOCOL.md
/// §3): XX(NAME, "key"). Each is the most of that thing the world may ever
/// hold; its memory follows what it holds.
#define RDP_LIMIT_MAP(XX)                                                                          \
    XX(ENTITIES, "entities")                                                                       \
    XX(PARTICLES, "particles")                                                                     \
    XX(CONSTRAINTS, "constraints")                                                                 \
    XX(BODIES, "bodies")                                                                           \
    XX(JOINTS, "joints")                                                                           \
    XX(CONTACTS, "contacts")

/// Index of a limit in rdp_limits.value.
typedef enum rdp_limit {
#define RDP__LIMIT_ENUM(name, key) RDP_LIMIT_##name,
    RDP_LIMIT_MAP(RDP__LIMIT_ENUM)
#undef RDP__LIMIT_ENUM
        RDP_LIMIT_COUNT
} rdp_limit;

/// Largest value of any limit on the wire (2^26); a server's own ceiling
/// (too_large beyond it) is usually far lower.
#define RDP_MAX_LIMIT 67108864.0

/// The wire key of a limit ("bodies", ...), or NULL for an unknown value.
const char* rdp_limit_name(rdp_limit limit);

/// The rigid-body solvers a world may be created with (create_world's
/// "solver", PROTOCOL.md §3): XX(NAME, "wire name"). Which one steps a
/// world's rigid bodies (characters' bones, balls); particles are the same
/// under both.
#define RDP_SOLVER_MAP(XX)                                                                         \
    XX(XPBD, "xpbd")                                                                               \
    XX(SOFT_STEP, "soft_step")

/// A character's solver on the wire ("solver" of spawn_character): the
/// skeleton's (absent), "maximal" or "reduced" (PROTOCOL.md §3).
typedef enum rdp_char_solver {
    RDP_CHAR_SOLVER_DEFAULT = 0,
    RDP_CHAR_SOLVER_MAXIMAL = 1,
    RDP_CHAR_SOLVER_REDUCED = 2,
} rdp_char_solver;

/// The state a character is spawned in ("state" of spawn_character):
/// "animated" (absent) or "ragdoll" (limp from the first tick, as if
/// killed with no impulse).
typedef enum rdp_spawn_state {
    RDP_SPAWN_ANIMATED = 0,
    RDP_SPAWN_RAGDOLL = 1,
} rdp_spawn_state;

/// A world's rigid-body solver on the wire. RDP_SOLVER_DEFAULT (0) is "not
/// given": the server's default (ragdolld --world-solver) applies.
typedef enum rdp_solver {
    RDP_SOLVER_DEFAULT = 0,
#define RDP__SOLVER_ENUM(name, key) RDP_SOLVER_##name,
    RDP_SOLVER_MAP(RDP__SOLVER_ENUM)
#undef RDP__SOLVER_ENUM
        RDP_SOLVER_COUNT ///< One past the last solver.
} rdp_solver;

/// The wire name of a solver ("xpbd", "soft_step"), or NULL for
/// RDP_SOLVER_DEFAULT and any other value. Static storage.
const char* rdp_solver_name(rdp_solver solver);

/// The solver whose wire name is exactly `name` (case-sensitive), or
/// RDP_SOLVER_DEFAULT for NULL and any other string.
rdp_solver rdp_solver_parse(const char* name);

/// A set of limits: value[i] is meaningful when bit i of `given` is set.
typedef struct rdp_limits {
    uint32_t given;                  ///< Bit (1u << rdp_limit) per limit given.
    uint32_t value[RDP_LIMIT_COUNT]; ///< 1..RDP_MAX_LIMIT each.
} rdp_limits;

/// A list of names (bones), each 1..RDP_MAX_BONE_NAME bytes of clean UTF-8.
typedef struct rdp_names {
    uint32_t count; ///< 0..RDP_MAX_BONES.
    char name[RDP_MAX_BONES][RDP_MAX_BONE_NAME + 1];
} rdp_names;

/// A decoded, validated command. Every field the op uses is present, finite
/// and within the static ranges of PROTOCOL.md §3, with defaults filled in;
/// only checks that need the world (ids, capacities) remain for the caller.
typedef struct rdp_command {
    rdp_op op;
    bool has_id;                      ///< Whether the command carried an "id".
    int64_t id;                       ///< The id, |id| <= 2^53 - 1.
    uint64_t world;                   ///< For ops that name a world.
    uint64_t entity;                  ///< For ops that name an entity.
    uint32_t particle;                ///< For ops that name a particle.
    unsigned given;                   ///< Bitwise OR of rdp_given_bits.
    char bone[RDP_MAX_BONE_NAME + 1]; ///< apply_impulse on a character: the bone.
    rdp_names bones;                  ///< set_drive, set_partial.
    union {
        struct {
            char name[RDP_MAX_NAME + 1]; ///< NUL-terminated, 1..64 bytes, valid UTF-8.
            uint32_t tick_hz;            ///< 1..240.
            rdp_limits limits;           ///< Those given; the server's defaults for the rest.
            /// rdp_solver: the one given, or RDP_SOLVER_DEFAULT when absent.
            uint32_t solver;
            /// "template": the server's world template to make it from
            /// (1..RDP_MAX_TEMPLATE_NAME bytes), or "" when absent.
            char template_name[RDP_MAX_TEMPLATE_NAME + 1];
        } create_world;
        struct {
            uint32_t format;     ///< rdp_format.
            uint32_t rate_hz;    ///< 1..240.
            uint32_t events;     ///< The opt-in events asked for (rdp_event_bits).
            double impact_speed; ///< m/s, [0.5, 100], default 1: the slowest impact sent.
            /// Byte budget of its snapshots, [1000, 10^8] bytes/s; 0 when
            /// absent (none). PROTOCOL.md §5.3.
            uint32_t bytes_per_s;
        } subscribe;
        struct {
            uint32_t fetch; ///< 1: "fetch": true, the file comes back in the reply.
        } save_world;
        struct {
            rdp_vec3 center;       ///< m, each |c| <= RDP_MAX_COORD.
            rdp_vec3 half_extents; ///< m, each in (0, 1000] (checked by the world).
        } add_box;
        struct {
            rdp_vec3 anchor;
            uint32_t segments; ///< 1..1000.
            double segment_length;
            double mass;
            double compliance; ///< m/N, [0, RDP_MAX_COMPLIANCE], default 0 (rigid).
        } spawn_rope;
        struct {
            rdp_vec3 origin;
            uint32_t cols, rows; ///< 2..256.
            double spacing;
            uint32_t pin; ///< rdp_pin.
            double mass;
            uint32_t long_range; ///< 1: long-range attachments to the pins.
            double tear;         ///< Tear ratio, 0 (never) or [1.01, 100].
            /// XPBD compliance of the structural, shear and bend constraints,
            /// m/N, each in [0, RDP_MAX_COMPLIANCE]; defaults 0, 0 and
            /// RDP_DEFAULT_BEND_COMPLIANCE.
            double stretch_compliance, shear_compliance, bend_compliance;
            /// Unit directions of the columns and rows; default [1,0,0] and
            /// [0,-1,0] (a hanging sheet).
            rdp_vec3 across, down;
            uint32_t self_collision; ///< 1: "self_collision": true.
            double thickness;        ///< Self-collision distance, m; 0 when absent.
        } spawn_cloth;
        struct {
            rdp_vec3 position;
            double facing;
            double mass;
        } spawn_ragdoll;
        struct {
            rdp_vec3 impulse;
            rdp_vec3 point;     ///< Where on the bone (characters); default its centre.
            uint64_t seen_tick; ///< With RDP_GIVEN_SEEN_TICK: the tick the point was seen at.
        } apply_impulse;
        struct {
            rdp_vec3 position;
            double facing; ///< Yaw about +Y, rad.
            char skeleton[RDP_MAX_BONE_NAME + 1];
            char clip[RDP_MAX_BONE_NAME + 1];
            uint32_t solver; ///< rdp_char_solver.
            uint32_t state;  ///< rdp_spawn_state: animated (0, default) or ragdoll (1).
        } spawn_character;
        struct {
            rdp_vec3 position, velocity;
            double radius, mass;
        } spawn_ball;
        struct {
            rdp_vec3 position;   ///< Centre, m.
            uint32_t shape;      ///< rdp_softbody_shape.
            double size;         ///< Edge or diameter, m, [0.05, 5].
            uint32_t resolution; ///< Lattice points per edge, 2..16.
            double stiffness;    ///< (0, 1].
            double pressure;     ///< [0, 1]; 0 is off.
            double mass; ///< Total, kg, [1e-3, 1e4], default 10 (each particle at least 1e-3).
        } spawn_softbody;
        struct {
            rdp_vec3 hit_point, impulse;
            uint64_t seen_tick; ///< With RDP_GIVEN_SEEN_TICK: the tick the point was seen at.
        } kill;
        struct {
            rdp_vec3 origin;     ///< m, in the world's cube.
            rdp_vec3 direction;  ///< Any non-zero length (checked by the world).
            double max_distance; ///< m, (0, RDP_MAX_RAY_DISTANCE], default 1000.
            uint64_t seen_tick;  ///< With RDP_GIVEN_SEEN_TICK: judge at that tick.
        } raycast;
        struct {
            double blend_time; ///< s.
        } start_getup;
        struct {
            double kp, kd, ramp_time;
        } set_drive;
        struct {
            char clip[RDP_MAX_BONE_NAME + 1];
        } play;
        struct {
            uint64_t tick; ///< The binary snapshot's full tick.
        } ack;
        struct {
            rdp_vec3 target;
        } drag;
        struct {
            uint32_t kind;                              ///< rdp_garment.
            uint32_t cols, rows;                        ///< 2..64, or 0: the skeleton's.
            double mass;                                ///< kg, or 0: the skeleton's.
            uint32_t long_range;                        ///< 1: long-range attachments (default).
            double stretch_compliance, bend_compliance; ///< m/N.
            double tear;                                ///< Tear ratio, 0 (never) or [1.01, 100].
        } attach_cloth;
        struct {
            double ratio; ///< 0 (never) or [1.01, 100].
        } set_tear;
        struct {
            rdp_vec3 point; ///< m; without it (given lacks RDP_GIVEN_POINT) the focus is cleared.
            double radius;  ///< m, (0, 2000], default 15: full priority within it (§5.3).
        } set_focus;
        struct {
            unsigned given; ///< Bitwise OR of rdp_param_bits.
            rdp_vec3 gravity;
            double damping, bounciness, friction;
            uint32_t iterations, substeps;
            rdp_vec3 wind; ///< m/s.
            double gust, gust_period, air_density, drag_coef, lift_coef;
        } set_params;
    } u;
} rdp_command;

/// Decodes and validates one command from a text frame of `len` bytes (not
/// necessarily NUL-terminated; never read past len). On success returns 0
/// and fills *out. On failure returns the error code, fills *err, and sets
/// out->has_id/out->id if an id could be read (so the reply can carry it).
/// Checks in the order of PROTOCOL.md §2: JSON, shape, finiteness, ranges.
/// A raw byte below 0x20 other than tab, LF and CR anywhere in the text is
/// RDP_E_BAD_JSON (RFC 8259 §2 and §7), with its value and offset in the
/// message.
rdp_code rdp_command_decode(const char* text, size_t len, rdp_command* out, rdp_error* err);

// ---------------------------------------------------------------------------
// Replies and events (JSON text)
// ---------------------------------------------------------------------------

/// Frees a string returned by this module. NULL is allowed.
void rdp_free(void* p);

/// The "re" part of a reply: the command's id if it had one, else null.
typedef struct rdp_re {
    bool has_id;
    int64_t id;
} rdp_re;

/// The re of a decoded (or partially decoded) command.
rdp_re rdp_re_of(const rdp_command* cmd);

/// Encodes an error reply {"re": id|null, "error": {"code", "message"}}.
/// Returns a NUL-terminated string (*len excludes the NUL) or NULL on OOM.
char* rdp_reply_error(rdp_re re, rdp_code code, const char* message, size_t* len);

/// Reads the outcome of a reply this module encoded (rdp_reply_ok(),
/// rdp_reply_error(), rdp_reply_describe()) from its first bytes, which
/// are always {"re":ID|null, then "ok":true or "error":{"code":"...":
/// *code gets RDP_OK or the error's code. Returns false, *code untouched,
/// for anything else (an event, a snapshot). O(1): the rest of a large
/// reply is not read. For a server's counters, not for clients (which
/// parse the JSON).
bool rdp_reply_code(const char* text, size_t len, rdp_code* code);

/// World parameters as they travel in replies and events.
typedef struct rdp_params {
    rdp_vec3 gravity;
    double damping;
    uint32_t iterations, substeps;
    double bounciness, friction;
    rdp_vec3 wind;               ///< m/s.
    double gust, gust_period;    ///< Fraction of the wind, s.
    double air_density;          ///< kg/m³.
    double drag_coef, lift_coef; ///< Of a cloth triangle.
} rdp_params;

/// A static box collider as it travels in `statics`.
typedef struct rdp_box {
    rdp_vec3 center, half_extents;
} rdp_box;

/// One world in a list (welcome, list_worlds).
typedef struct rdp_world_info {
    uint64_t world;
    const char* name;
    uint64_t tick;
    uint32_t tick_hz;
    uint32_t entities;
    /// Its rigid-body solver, "solver" (rdp_solver_name()); NULL leaves the
    /// member out. Not owned.
    const char* solver;
} rdp_world_info;

/// The optional fields of a success reply. Zero-initialise, then set what the
/// op returns; each `has_`/non-NULL field adds the matching JSON member.
/// What a ray met, as raycast's reply gives it (PROTOCOL.md §3).
typedef struct rdp_hit {
    const char* kind; ///< "ground", "box", "bone", "ball" or "particle".
    bool has_entity;  ///< "entity" (bone, ball, particle).
    uint64_t entity;
    const char* bone; ///< "bone": its name (kind "bone"), else NULL.
    bool has_index;   ///< "particle" (kind "particle") or "box" (kind "box").
    uint32_t index;
    rdp_vec3 point;  ///< m.
    rdp_vec3 normal; ///< Unit.
    double distance; ///< m from the ray's origin.
} rdp_hit;

typedef struct rdp_reply_fields {
    bool has_tick;
    uint64_t tick;
    bool has_world;
    uint64_t world;
    bool has_entity;
    uint64_t entity;
    const rdp_params* params;     ///< "params"
    const rdp_world_info* worlds; ///< "worlds" (worlds_count entries; may be 0)
    bool has_worlds;              ///< Emit "worlds" even when empty.
    uint32_t worlds_count;
    const rdp_box* boxes; ///< "statics" when has_statics
    uint32_t box_count;
    bool has_statics;
    bool ground;
    uint32_t tick_hz;                        ///< With has_world on subscribe: "tick_hz"
    const char* format;                      ///< "format"
    uint32_t rate_hz;                        ///< "rate_hz" when format is set
    uint32_t bytes_per_s;                    ///< "bytes_per_s" when format is set and > 0
    const struct rdp_entity_state* describe; ///< Topology of one entity (describe)
    const char* bone;                        ///< "bone" (kill)
    const char* clip;                        ///< "clip" (start_getup)
    /// "limits" (create_world): RDP_LIMIT_COUNT values, every one printed.
    const uint32_t* limits;
    /// "solver" (create_world): the world's, as rdp_solver_name() gives it.
    const char* solver;
    bool has_bytes;
    uint64_t bytes;    ///< "bytes" (save_world): the state file's size.
    const char* file;  ///< "file" (save_world): the state file's path.
    const char* state; ///< "state" (save_world with fetch): the file, base64.
    /// "seen_tick" (a lag-compensated kill, apply_impulse or raycast): the
    /// tick it was judged at, and "clamped": true when the one asked for
    /// was older than the history kept.
    bool has_seen_tick;
    uint64_t seen_tick;
    bool clamped;
    bool has_hit; ///< "hit" (raycast): `hit`, or null when NULL.
    const struct rdp_hit* hit;
} rdp_reply_fields;

/// Encodes a success reply {"re", "ok": true, ...fields}. Returns a string to
/// free with rdp_free(), or NULL on OOM.
char* rdp_reply_ok(rdp_re re, const rdp_reply_fields* f, size_t* len);

/// Encodes the entity part of a describe reply as a JSON object: "kind",
/// "particle_count" and the topology fields of PROTOCOL.md §5.1. It depends
/// only on the entity's topology, which never changes while the entity
/// lives, so a server may encode it once and splice it into every reply with
/// rdp_reply_describe(). Returns a string to free with rdp_free(), or NULL
/// on OOM.
char* rdp_describe_body(const struct rdp_entity_state* e, size_t* len);

/// Encodes the success reply to describe, {"re", "ok": true, "tick",
/// "entity", ...}, followed by the members of `body`: a JSON object of
/// `body_len` bytes from rdp_describe_body() (not necessarily
/// NUL-terminated; copied, not parsed). The text equals rdp_reply_ok() with
/// has_tick, has_entity and describe set. Returns a string to free with
/// rdp_free(), or NULL on OOM or when body does not look like an object.
char* rdp_reply_describe(rdp_re re, uint64_t tick, uint64_t entity, const char* body,
                         size_t body_len, size_t* len);

/// Encodes the welcome event (PROTOCOL.md §4).
char* rdp_event_welcome(const char* version, const rdp_world_info* worlds, uint32_t count,
                        size_t* len);

/// Encodes {"ev": "params", "world", "tick", "params"}.
char* rdp_event_params(uint64_t world, uint64_t tick, const rdp_params* p, size_t* len);

/// The "statics" event: a world's static colliders changed (add_box); the
/// same "statics" object as subscribe's reply, every box (box_count of
/// them). NULL on OOM; rdp_free() it.
char* rdp_event_statics(uint64_t world, uint64_t tick, bool ground, const rdp_box* boxes,
                        uint32_t box_count, size_t* len);

/// Encodes {"ev": "entity_removed", "world", "tick", "entity", "reason"}.
char* rdp_event_entity_removed(uint64_t world, uint64_t tick, uint64_t entity, const char* reason,
                               size_t* len);

/// Encodes {"ev": "rolled_back", "world", "tick", "from_tick", "entity",
/// "dropped"}: the world blew up at `tick` (entity went unstable) and was
/// stepped again from its state at from_tick without the command
/// dropped_op (NULL: "dropped": null).
char* rdp_event_rolled_back(uint64_t world, uint64_t tick, uint64_t from_tick, uint64_t entity,
                            const char* dropped_op, size_t* len);

/// Encodes {"ev": "command_dropped", "world", "tick", "re", "op",
/// "error": {"code": "bad_state", "message"}}: to the sender of a command
/// that was acknowledged, then undone by a rollback (re: its id).
char* rdp_event_command_dropped(uint64_t world, uint64_t tick, rdp_re re, const char* op,
                                const char* message, size_t* len);

/// Encodes {"ev": "world_destroyed", "world", "tick"}.
char* rdp_event_world_destroyed(uint64_t world, uint64_t tick, size_t* len);

/// Encodes {"ev": "character_state", "world", "tick", "entity", "state"}.
char* rdp_event_character_state(uint64_t world, uint64_t tick, uint64_t entity, const char* state,
                                size_t* len);

/// Encodes {"ev": "settled", "world", "tick", "entity"}.
char* rdp_event_settled(uint64_t world, uint64_t tick, uint64_t entity, size_t* len);

/// One impact of an `impacts` event (PROTOCOL.md §4).
typedef struct rdp_impact {
    uint64_t entity;        ///< The striking body's entity.
    const char* bone;       ///< Its bone's name (a character), else NULL.
    const char* with;       ///< "body", "ground" or "box".
    uint64_t other;         ///< "body": the other body's entity.
    const char* other_bone; ///< "body": its bone's name (a character), else NULL.
    uint32_t box;           ///< "box": its index in `statics`.
    rdp_vec3 point;         ///< m.
    rdp_vec3 normal;        ///< Unit, from what was struck toward the body.
    double speed;           ///< m/s.
} rdp_impact;

/// One hit of a `limit_hits` event (PROTOCOL.md §4).
typedef struct rdp_limit_hit {
    uint64_t entity;   ///< The character.
    const char* bone;  ///< The joint's bone.
    const char* limit; ///< "twist_max", "twist_min" or "swing".
    double speed;      ///< rad/s.
} rdp_limit_hit;

/// Encodes {"ev": "limit_hits", "world", "tick", "hits": [...], "dropped"
/// (only when > 0)}: joints that came up against a limit at `tick`.
char* rdp_event_limit_hits(uint64_t world, uint64_t tick, const rdp_limit_hit* hits, uint32_t count,
                           uint64_t dropped, size_t* len);

/// Encodes {"ev": "impacts", "world", "tick", "impacts": [...], "dropped"
/// (only when > 0)}: bodies that struck something at `tick`, fastest first.
char* rdp_event_impacts(uint64_t world, uint64_t tick, const rdp_impact* impacts, uint32_t count,
                        uint64_t dropped, size_t* len);

/// `torn`: sticks of a cloth or rope tore at `tick`: `count` pairs of its
/// particle indices (2 × count), and `more` (when dropped > 0) for those
/// that tore but were not kept (PROTOCOL.md §4). NULL when out of memory.
char* rdp_event_torn(uint64_t world, uint64_t tick, uint64_t entity, const uint32_t* pairs,
                     uint32_t count, uint32_t dropped, size_t* len);

// ---------------------------------------------------------------------------
// Snapshots
// ---------------------------------------------------------------------------

/// Entity kinds on the wire (binary codes match PROTOCOL.md §5.2).
typedef enum rdp_kind {
    RDP_KIND_ROPE = 1,
    RDP_KIND_CLOTH = 2,
    RDP_KIND_RAGDOLL = 3,
    RDP_KIND_CHARACTER = 4,
    RDP_KIND_BALL = 5,
    RDP_KIND_SOFTBODY = 6, ///< Particles, like a rope or cloth (PROTOCOL.md §5).
} rdp_kind;

/// The shapes of spawn_softbody (PROTOCOL.md §3), as sim_softbody_shape.
typedef enum rdp_softbody_shape {
    RDP_SOFTBODY_BOX = 0,
    RDP_SOFTBODY_SPHERE = 1,
} rdp_softbody_shape;

/// Whether entities of this kind are rigid bodies (posed bones) rather than
/// particles.
bool rdp_kind_is_rigid(rdp_kind kind);

/// One bone of a character's skeleton as `describe` returns it (PROTOCOL.md
/// §3). Joint fields are unused for the root.
typedef struct rdp_bone_desc {
    const char* name;
    int parent;        ///< Index of the parent bone, -1 for the root.
    float radius;      ///< Capsule radius, m.
    float half_length; ///< Half the capsule's segment, along the bone's local +X, m.
    float mass;        ///< kg.
    const char* joint; ///< "ball", "hinge" or "fixed"; NULL for the root.
    float anchor_parent[3], anchor_child[3]; ///< Joint point in each bone's frame, m.
    float frame_parent[4], frame_child[4];   ///< Joint frame in each bone's frame (x, y, z, w).
    float swing1, swing2;                    ///< Swing half-angles, rad (ball).
    float twist_min, twist_max;              ///< Twist (ball) or hinge range, rad.
} rdp_bone_desc;

/// The wire name of a kind ("rope", "cloth", "ragdoll", "character",
/// "ball", "softbody") or "unknown".
const char* rdp_kind_name(rdp_kind kind);

/// describe of a rope or cloth: its tearing, long-range attachments and
/// self-collision.
typedef struct rdp_cloth_desc {
    float tear;          ///< Sticks tear past this × their rest length; 0: never.
    bool long_range;     ///< Long-range attachments (Kim, Chentanez and Müller 2012).
    bool self_collision; ///< Cloth: self-contacts, `thickness` apart.
    float thickness;     ///< m (cloth with self_collision).
} rdp_cloth_desc;

/// One entity's state, pointing at the caller's arrays (not copied).
typedef struct rdp_entity_state {
    uint64_t entity;
    rdp_kind kind;
    uint32_t particle_count;
    const float* xyz; ///< 3 × particle_count floats, m.
    // Topology, used when a snapshot includes it and by describe:
    uint32_t stick_count;
    const uint32_t* sticks;   ///< 2 × stick_count particle indices.
    const char* const* names; ///< particle_count names, or NULL.
    const float* radius;      ///< particle_count radii, m.
    const float* inv_mass;    ///< particle_count inverse masses; 0 = pinned.
    uint32_t cols, rows;      ///< Cloth grid, else 0.
    const char* garment;      ///< Cloth worn by a character: "cape", "skirt", "hair"; else NULL.
    const char* lod; ///< describe of a particle kind: "full", "reduced" or "frozen"; else NULL.
    uint64_t wearer; ///< With garment: the character's entity id.
    bool wrap;       ///< Cloth: column cols - 1 joins column 0 (a skirt).
    /// describe of a rope or cloth: how it was made (spawn_cloth's,
    /// attach_cloth's and set_tear's fields), else NULL.
    const struct rdp_cloth_desc* cloth;
    // Rigid kinds (character, ball): posed bodies instead of particles.
    uint32_t body_count;           ///< Bones of a character; 1 for a ball.
    const float* pose;             ///< 7 × body_count: x, y, z (m), qx, qy, qz, qw.
    const char* state;             ///< Character: "animated", "ragdoll", ...
    const char* solver;            ///< Character (describe): "maximal" or "reduced".
    const char* const* bone_names; ///< Character: body_count bone names.
    const float* body_radius;      ///< Topology: body_count capsule radii, m.
    const float* body_half_length; ///< Topology: body_count half segment lengths, m.
    const char* skeleton;          ///< Topology: the skeleton's name.
    const char* clip;              ///< describe: the clip playing.
    const rdp_bone_desc* bones;    ///< describe: body_count bones.
    // Characters, for binary snapshots (the skeleton the coder follows):
    const int* parents;   ///< body_count parent indices, -1 for the root.
    const float* anchors; ///< 6 × body_count: the joint to the parent in the parent's and
                          ///< in the bone's body frame (x, y, z each), m.
} rdp_entity_state;

/// Per-world figures carried by JSON snapshots (PROTOCOL.md §5.1).
typedef struct rdp_metrics {
    double constraint_error; ///< m.
    uint32_t sticks;         ///< Sticks the error sums over.
    uint32_t solver_passes;
    uint32_t particles;
    double step_ms;
    uint64_t overruns;
    uint32_t frozen_entities;      ///< Frozen by level of detail (set_focus).
    uint32_t frozen_particles;     ///< Their particles.
    uint64_t particle_projections; ///< Particle constraint projections of the last tick.
} rdp_metrics;

/// A world's state at one tick.
typedef struct rdp_snapshot {
    uint64_t world;
    uint64_t tick;
    uint32_t entity_count;
    const rdp_entity_state* entities;
    rdp_metrics metrics;
} rdp_snapshot;

/// Encodes {"ev": "metrics", "world", "tick", "metrics"} for s (binary
/// subscribers get the metrics JSON snapshots carry this way).
char* rdp_event_metrics(const rdp_snapshot* s, size_t* len);

/// Encodes a JSON snapshot event; with `topology` every entity carries its
/// topology fields. Positions are rounded to 0.1 mm. Returns a string to free
/// with rdp_free(), or NULL on OOM.
char* rdp_snapshot_json(const rdp_snapshot* s, bool topology, size_t* len);

/// A growable text buffer an encoder writes into and the caller keeps, so
/// that encoding again allocates nothing once it is large enough.
/// Zero-initialise it; free it with rdp_buf_free(). `data` comes from cJSON's
/// allocator.
typedef struct rdp_buf {
    char* data; ///< The text, NUL-terminated after a successful encode.
    size_t len; ///< Bytes of text, without the NUL.
    size_t cap; ///< Bytes allocated.
} rdp_buf;

/// Frees b's memory and zeroes it (NULL is allowed).
void rdp_buf_free(rdp_buf* b);

/// rdp_snapshot_json() into b, replacing its text and growing it if needed.
/// Returns 0, or -1 on OOM (b keeps its memory, its text is undefined).
int rdp_snapshot_json_into(const rdp_snapshot* s, bool topology, rdp_buf* b);

// ---------------------------------------------------------------------------
// Binary snapshots, version 2 (PROTOCOL.md §5.2)
// ---------------------------------------------------------------------------

/// The binary code of a character state name (0..3), 0 for an unknown one.
uint8_t rdp_state_code(const char* state);

/// Baselines a decoder keeps (and the server keeps per world): a delta
/// against anything older is not sent.
#define RDP_BASELINES 32

/// One bone of a character as binary snapshots carry it: its parent and
/// the joint's anchors in 0.1 mm steps.
typedef struct rdp_qbone {
    int16_t parent; ///< -1 for the root.
    int16_t anchor_parent[3], anchor_child[3];
} rdp_qbone;

/// One entity of a quantized snapshot.
typedef struct rdp_qentity {
    uint64_t id;
    uint8_t kind;    ///< rdp_kind.
    uint8_t state;   ///< Characters: 0 animated, 1 ragdoll, 2 getting_up, 3 partial.
    uint32_t count;  ///< Particles, or bodies for rigid kinds.
    uint32_t offset; ///< First integer (and float) of the entity in vals (and f).
    uint32_t skel;   ///< Characters: first bone in skel.
    /// Decoder: the wire tick of the frame that last carried the entity
    /// (a partial frame's view holds older ones).
    uint16_t tick;
} rdp_qentity;

/// A snapshot in the integers binary snapshots carry (what baselines are),
/// with the floats they decode to. Particles: 3 integers (1/1024 m) each,
/// decoding to x, y, z (m). Bodies: 7 integers each (position, the index of
/// the dropped quaternion component, three components of ±2047), decoding
/// to x, y, z (m), qx, qy, qz, qw. A character's bones past the root hold
/// the position residual and the rotation relative to the parent; their
/// floats are the decoded world poses all the same.
typedef struct rdp_qsnap {
    uint64_t world;
    uint64_t tick; ///< Encoder: the full tick. Decoder: the 16-bit tick on the wire.
    uint32_t entity_count, ent_cap;
    rdp_qentity* ents;
    uint32_t val_count, val_cap;
    int32_t* vals;
    float* f; ///< Decoded floats, indexed like vals.
    uint32_t skel_count, skel_cap;
    rdp_qbone* skel;
    /// Decoder: the frame was partial (this is the view, above), and
    /// whether it emptied the view first.
    bool partial, reset;
} rdp_qsnap;

/// An empty quantized snapshot (NULL on OOM). Free with rdp_qsnap_free().
rdp_qsnap* rdp_qsnap_new(void);

/// Frees q (NULL is allowed).
void rdp_qsnap_free(rdp_qsnap* q);

/// Quantizes snapshot s into q (reusing q's memory). Characters need
/// `parents` and `anchors` (without them their bones chain to bone 0 with
/// zero anchors, which decodes as exactly, only less compactly). Errors
/// (-1): out of memory, or a skeleton whose parents do not come first.
int rdp_quantize(const rdp_snapshot* s, rdp_qsnap* q);

/// Upper bound of the bytes rdp_encode() writes for q.
size_t rdp_encode_bound(const rdp_qsnap* q);

/// Encodes q as a binary snapshot, a delta against `base` (a snapshot the
/// client has; NULL for a full one). Returns the bytes written, or 0 when
/// cap is too small.
size_t rdp_encode(const rdp_qsnap* q, const rdp_qsnap* base, uint8_t* buf, size_t cap);

/// Writes a partial frame (PROTOCOL.md §5.2, "Partial frames"): the
/// entities a subscription with a byte budget gets this time, each against
/// its own baseline. Begin, add entities while they fit, end. The fields
/// are the writer's; read none of them.
typedef struct rdp_pwriter {
    uint8_t* buf;
    size_t cap;
    size_t bit; ///< Bits written after the header.
    bool full;
    const rdp_qsnap* q;
} rdp_pwriter;

/// Begins a partial frame of q (its world and tick) in buf[cap] (borrowed
/// until rdp_partial_end): the header (with `reset`: the client empties its
/// view first) and the `removed_count` entity ids gone from the world.
/// Returns false when cap is too small for them (buf then holds nothing).
bool rdp_partial_begin(rdp_pwriter* pw, const rdp_qsnap* q, bool reset, const uint64_t* removed,
                       uint32_t removed_count, uint8_t* buf, size_t cap);

/// Adds q->ents[k] against base->ents[bk] (its state in a frame the client
/// acknowledged; base NULL, or an entity of another id, kind or count, or a
/// tick not before q's: coded whole). Returns 1 when it was added, 0 when the
/// frame would then be longer than max_bytes or cap (the frame is as it
/// was), -1 on out of memory or a bad k.
int rdp_partial_add(rdp_pwriter* pw, uint32_t k, const rdp_qsnap* base, uint32_t bk,
                    size_t max_bytes);

/// Encodes what rdp_partial_add() would add for q->ents[k] against
/// base->ents[bk] on its own, into buf[cap] from bit 0 (bits filled from
/// each byte's least significant), for a server to share one entity's
/// encoding among the frames of every client on the same baseline. Returns
/// the bits written, 0 when cap is too small, SIZE_MAX on out of memory or
/// a bad k.
size_t rdp_partial_entity(const rdp_qsnap* q, uint32_t k, const rdp_qsnap* base, uint32_t bk,
                          uint8_t* buf, size_t cap);

/// Appends `nbits` bits made by rdp_partial_entity() for the writer's
/// snapshot. Returns 1, 0 when the frame would then be longer than
/// max_bytes or its cap (it is left as it was), -1 after an error.
int rdp_partial_append(rdp_pwriter* pw, const uint8_t* bits, size_t nbits, size_t max_bytes);

/// Bytes the frame would take if it ended now.
size_t rdp_partial_size(const rdp_pwriter* pw);

/// Ends the frame. Returns its bytes, or 0 when cap was too small.
size_t rdp_partial_end(rdp_pwriter* pw);

/// Decodes binary snapshots of one world, keeping the last RDP_BASELINES
/// decoded ones as baselines. Opaque; not thread-safe.
typedef struct rdp_decoder rdp_decoder;

/// A new decoder (NULL on OOM). Free with rdp_decoder_free().
rdp_decoder* rdp_decoder_new(void);

/// Frees d (NULL is allowed).
void rdp_decoder_free(rdp_decoder* d);

/// Decodes one binary snapshot of `len` bytes (never reads past it). On
/// success *out points at the decoded snapshot, owned by d and valid until
/// RDP_BASELINES more decodes (a partial frame's: until the next decode);
/// its `tick` is the 16-bit tick on the wire (see rdp_tick_unwrap). For a
/// partial frame (`partial` set) it is the decoder's view: every entity it
/// knows, each with the `tick` of the frame that last carried it (equal to
/// the snapshot's for those this frame carried); a full or delta frame
/// replaces the view. Errors: RDP_E_BAD_REQUEST (malformed),
/// RDP_E_NOT_FOUND (a delta against a baseline d does not have: ask the
/// server for a full snapshot), RDP_E_INTERNAL (out of memory). On error
/// d's baselines are unchanged.
rdp_code rdp_decode(rdp_decoder* d, const uint8_t* buf, size_t len, const rdp_qsnap** out);

/// The full tick nearest to `near` whose low 16 bits are tick16 (ticks on
/// the wire wrap at 65536).
uint64_t rdp_tick_unwrap(uint64_t near, uint16_t tick16);

/// Whether 16-bit tick a is newer than b, modulo wrap-around (RFC 1982
/// serial number arithmetic: within half the range).
bool rdp_tick16_newer(uint16_t a, uint16_t b);

/// Size of a client's binary ack frame, bytes: 'A', then the world and the
/// tick (u64 each, little-endian).
#define RDP_ACK_BYTES 17

/// Writes an ack frame for (world, tick) into buf[RDP_ACK_BYTES].
void rdp_ack_write(uint64_t world, uint64_t tick, uint8_t* buf);

/// Parses an ack frame of len bytes. Returns false when it is not one.
bool rdp_ack_parse(const uint8_t* buf, size_t len, uint64_t* world, uint64_t* tick);

#ifdef __cplusplus
}
#endif
