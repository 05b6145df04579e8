/*
 * command.c: decoding and validation of JSON commands (PROTOCOL.md §2-3).
 *
 * Each op is described by a table of fields: JSON key, type, whether it is
 * required, its range and default, and where it lands in rdp_command. The
 * decoder walks that table three times, so that errors come in the order the
 * protocol promises: shape and types first (bad_request), then finiteness
 * (not_finite), then ranges (out_of_range). Parsing is cJSON's. A value
 * outside its documented range is out_of_range, however far out; too_large
 * is for capacities, which need the world (server/app).
 */
#include "rdp.h"

#include <cJSON.h>

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum field_type {
    F_ID,     ///< Unsigned integer below 2^53 (world, entity) → uint64_t.
    F_UINT,   ///< Unsigned integer in [lo, hi] → uint32_t.
    F_NUM,    ///< Number in its range → double.
    F_VEC3,   ///< [x, y, z], each |c| <= hi → rdp_vec3.
    F_STRING, ///< 1..hi bytes of UTF-8, no control characters → char[].
    F_ENUM,   ///< One of `choices` → uint32_t (the matching `values` entry).
    /// As F_ENUM, but null is a wrong type (bad_request) rather than taken
    /// as absent, as it is for every other field: a field whose absence
    /// means "the server's default" must not be given as null by mistake.
    F_ENUM_NOT_NULL,
    F_NAMES,  ///< Array of 0..hi strings of 1..RDP_MAX_BONE_NAME bytes → rdp_names.
    F_LIMITS, ///< Object of rdp_limit keys, each an integer in [lo, hi] → rdp_limits.
    F_BOOL,   ///< true or false → uint32_t 1 or 0 (def_value when absent).
    /// Array of 0..hi of `choices` → uint32_t, the OR of their `values` (0 when absent).
    F_FLAGS,
} field_type;

typedef struct field_spec {
    const char* key;
    field_type type;
    bool required;
    double lo, hi;              ///< Range (inclusive), see lo_open.
    bool lo_open;               ///< Range is (lo, hi].
    double def;                 ///< Default for an optional NUM/UINT.
    size_t offset;              ///< Where the value goes in rdp_command.
    const char* const* choices; ///< F_ENUM: NULL-terminated names.
    const uint32_t* values;     ///< F_ENUM: the value stored for each name.
    uint32_t def_value;         ///< F_ENUM: default when optional and absent.
    unsigned param_bit; ///< Bit set when given: in u.set_params.given (set_params), else given.
} field_spec;

typedef struct op_spec {
    const char* name;
    rdp_op op;
    const field_spec* fields;
    size_t field_count;
} op_spec;

#define OFF(member) offsetof(rdp_command, member)
#define COUNT(a)    (sizeof(a) / sizeof((a)[0]))

static const char* const format_names[] = {"json", "binary", NULL};
static const uint32_t format_values[] = {RDP_FORMAT_JSON, RDP_FORMAT_BINARY};
static const char* const shape_names[] = {"box", "sphere", NULL};
static const uint32_t shape_values[] = {RDP_SOFTBODY_BOX, RDP_SOFTBODY_SPHERE};
static const char* const garment_names[] = {"cape", "skirt", "hair", NULL};
static const uint32_t garment_values[] = {RDP_GARMENT_CAPE, RDP_GARMENT_SKIRT, RDP_GARMENT_HAIR};
static const char* const pin_names[] = {"top", "left", "none", NULL};
static const uint32_t pin_values[] = {RDP_PIN_TOP, RDP_PIN_LEFT, RDP_PIN_NONE};
// A character's solver (sim_char_solver): the values are sim.h's.
static const char* const char_solver_names[] = {"maximal", "reduced", NULL};
static const uint32_t char_solver_values[] = {RDP_CHAR_SOLVER_MAXIMAL, RDP_CHAR_SOLVER_REDUCED};
static const char* const spawn_state_names[] = {"animated", "ragdoll", NULL};
static const uint32_t spawn_state_values[] = {RDP_SPAWN_ANIMATED, RDP_SPAWN_RAGDOLL};
static const char* const solver_names[] = {
#define RDP__SOLVER_KEY(name, key) key,
    RDP_SOLVER_MAP(RDP__SOLVER_KEY)
#undef RDP__SOLVER_KEY
        NULL};
static const uint32_t solver_values[] = {
#define RDP__SOLVER_VALUE(name, key) RDP_SOLVER_##name,
    RDP_SOLVER_MAP(RDP__SOLVER_VALUE)
#undef RDP__SOLVER_VALUE
};

// Field building blocks shared by several ops.
#define WORLD_FIELD                                                                                \
    { "world", F_ID, true, 0, RDP_MAX_SAFE_INTEGER, false, 0, OFF(world), NULL, NULL, 0, 0 }
#define ENTITY_FIELD                                                                               \
    { "entity", F_ID, true, 0, RDP_MAX_SAFE_INTEGER, false, 0, OFF(entity), NULL, NULL, 0, 0 }
#define PARTICLE_FIELD                                                                             \
    { "particle", F_UINT, true, 0, 4294967295.0, false, 0, OFF(particle), NULL, NULL, 0, 0 }
#define POSITION_FIELD(key, member)                                                                \
    { key, F_VEC3, true, 0, RDP_MAX_COORD, false, 0, OFF(member), NULL, NULL, 0, 0 }
#define MASS_FIELD(member)                                                                         \
    { "mass", F_NUM, false, 1e-3, 1e4, false, 1.0, OFF(member), NULL, NULL, 0, 0 }
// XPBD compliance, m/N (1/stiffness): [0, RDP_MAX_COMPLIANCE], default def.
#define COMPLIANCE_FIELD(key, member, def)                                                         \
    { key, F_NUM, false, 0, RDP_MAX_COMPLIANCE, false, def, OFF(member), NULL, NULL, 0, 0 }

// The tick a client saw what it aims at (lag compensation, PROTOCOL.md §3).
#define SEEN_TICK_FIELD(member)                                                                    \
    {                                                                                              \
        "seen_tick", F_ID, false, 0, RDP_MAX_SAFE_INTEGER, false, 0, OFF(member), NULL, NULL, 0,   \
            RDP_GIVEN_SEEN_TICK                                                                    \
    }

static const field_spec create_world_fields[] = {
    {"name", F_STRING, true, 1, RDP_MAX_NAME, false, 0, OFF(u.create_world.name), NULL, NULL, 0, 0},
    {"tick_hz", F_UINT, false, 1, 240, false, 60, OFF(u.create_world.tick_hz), NULL, NULL, 0, 0},
    {"limits", F_LIMITS, false, 1, RDP_MAX_LIMIT, false, 0, OFF(u.create_world.limits), NULL, NULL,
     0, 0},
    {"solver", F_ENUM_NOT_NULL, false, 0, 0, false, 0, OFF(u.create_world.solver), solver_names,
     solver_values, RDP_SOLVER_DEFAULT, 0},
    {"template", F_STRING, false, 1, RDP_MAX_TEMPLATE_NAME, false, 0,
     OFF(u.create_world.template_name), NULL, NULL, 0, 0},
};
static const field_spec world_fields[] = {WORLD_FIELD};
static const field_spec save_world_fields[] = {
    WORLD_FIELD,
    {"fetch", F_BOOL, false, 0, 0, false, 0, OFF(u.save_world.fetch), NULL, NULL, 0, 0},
};
static const field_spec add_box_fields[] = {
    WORLD_FIELD,
    POSITION_FIELD("center", u.add_box.center),
    POSITION_FIELD("half_extents", u.add_box.half_extents),
};
// subscribe's opt-in events (rdp_event_bits).
static const char* const event_names[] = {"impact", "joint_limit", NULL};
static const uint32_t event_values[] = {RDP_EVENT_IMPACT, RDP_EVENT_JOINT_LIMIT};
static const field_spec subscribe_fields[] = {
    WORLD_FIELD,
    {"events", F_FLAGS, false, 0, 8, false, 0, OFF(u.subscribe.events), event_names, event_values,
     0, 0},
    {"impact_speed", F_NUM, false, 0.5, 100, false, 1.0, OFF(u.subscribe.impact_speed), NULL, NULL,
     0, 0},
    {"format", F_ENUM, false, 0, 0, false, 0, OFF(u.subscribe.format), format_names, format_values,
     RDP_FORMAT_JSON, 0},
    {"rate_hz", F_UINT, false, 1, 240, false, 30, OFF(u.subscribe.rate_hz), NULL, NULL, 0, 0},
    {"bytes_per_s", F_UINT, false, 1000, 1e8, false, 0, OFF(u.subscribe.bytes_per_s), NULL, NULL, 0,
     0},
};
static const field_spec spawn_rope_fields[] = {
    WORLD_FIELD,
    POSITION_FIELD("anchor", u.spawn_rope.anchor),
    {"segments", F_UINT, true, 1, 1000, false, 0, OFF(u.spawn_rope.segments), NULL, NULL, 0, 0},
    {"segment_length", F_NUM, true, 1e-3, 10, false, 0, OFF(u.spawn_rope.segment_length), NULL,
     NULL, 0, 0},
    MASS_FIELD(u.spawn_rope.mass),
    COMPLIANCE_FIELD("compliance", u.spawn_rope.compliance, 0.0),
};
static const field_spec spawn_cloth_fields[] = {
    WORLD_FIELD,
    POSITION_FIELD("origin", u.spawn_cloth.origin),
    {"cols", F_UINT, true, 2, 256, false, 0, OFF(u.spawn_cloth.cols), NULL, NULL, 0, 0},
    {"rows", F_UINT, true, 2, 256, false, 0, OFF(u.spawn_cloth.rows), NULL, NULL, 0, 0},
    {"spacing", F_NUM, true, 1e-3, 10, false, 0, OFF(u.spawn_cloth.spacing), NULL, NULL, 0, 0},
    {"pin", F_ENUM, false, 0, 0, false, 0, OFF(u.spawn_cloth.pin), pin_names, pin_values,
     RDP_PIN_TOP, 0},
    MASS_FIELD(u.spawn_cloth.mass),
    COMPLIANCE_FIELD("stretch_compliance", u.spawn_cloth.stretch_compliance, 0.0),
    COMPLIANCE_FIELD("shear_compliance", u.spawn_cloth.shear_compliance, 0.0),
    COMPLIANCE_FIELD("bend_compliance", u.spawn_cloth.bend_compliance, RDP_DEFAULT_BEND_COMPLIANCE),
    {"long_range", F_BOOL, false, 0, 0, false, 0, OFF(u.spawn_cloth.long_range), NULL, NULL, 0, 0},
    {"tear", F_NUM, false, 0, 100, false, 0, OFF(u.spawn_cloth.tear), NULL, NULL, 0, 0},
    // Directions: checked unit and perpendicular by the simulator (out_of_range).
    {"across", F_VEC3, false, 0, 1.01, false, 0, OFF(u.spawn_cloth.across), NULL, NULL, 0,
     RDP_GIVEN_ACROSS},
    {"down", F_VEC3, false, 0, 1.01, false, 0, OFF(u.spawn_cloth.down), NULL, NULL, 0,
     RDP_GIVEN_DOWN},
    {"self_collision", F_BOOL, false, 0, 0, false, 0, OFF(u.spawn_cloth.self_collision), NULL, NULL,
     0, 0},
    // Absent: 0, the simulator's 0.8 × spacing.
    {"thickness", F_NUM, false, 1e-3, 1, false, 0, OFF(u.spawn_cloth.thickness), NULL, NULL, 0, 0},
};
static const field_spec set_tear_fields[] = {
    WORLD_FIELD,
    ENTITY_FIELD,
    {"ratio", F_NUM, true, 0, 100, false, 0, OFF(u.set_tear.ratio), NULL, NULL, 0, 0},
};
static const field_spec spawn_ragdoll_fields[] = {
    WORLD_FIELD,
    POSITION_FIELD("position", u.spawn_ragdoll.position),
    {"facing", F_NUM, false, -1000, 1000, false, 0, OFF(u.spawn_ragdoll.facing), NULL, NULL, 0, 0},
    MASS_FIELD(u.spawn_ragdoll.mass),
};
static const field_spec entity_fields[] = {WORLD_FIELD, ENTITY_FIELD};
// A particle entity needs "particle", a character "bone" (and optionally the
// "point" on it); the dispatcher checks which (it knows the entity's kind).
static const field_spec impulse_fields[] = {
    WORLD_FIELD,
    ENTITY_FIELD,
    {"particle", F_UINT, false, 0, 4294967295.0, false, 0, OFF(particle), NULL, NULL, 0,
     RDP_GIVEN_PARTICLE},
    {"bone", F_STRING, false, 1, RDP_MAX_BONE_NAME, false, 0, OFF(bone), NULL, NULL, 0,
     RDP_GIVEN_BONE},
    {"point", F_VEC3, false, 0, RDP_MAX_COORD, false, 0, OFF(u.apply_impulse.point), NULL, NULL, 0,
     RDP_GIVEN_POINT},
    {"impulse", F_VEC3, true, 0, 1e4, false, 0, OFF(u.apply_impulse.impulse), NULL, NULL, 0, 0},
    SEEN_TICK_FIELD(u.apply_impulse.seen_tick),
};
static const field_spec drag_fields[] = {
    WORLD_FIELD,
    ENTITY_FIELD,
    PARTICLE_FIELD,
    POSITION_FIELD("target", u.drag.target),
};
static const field_spec release_fields[] = {WORLD_FIELD, ENTITY_FIELD, PARTICLE_FIELD};
#define NAME_FIELD(key, required, member)                                                          \
    { key, F_STRING, required, 1, RDP_MAX_BONE_NAME, false, 0, OFF(member), NULL, NULL, 0, 0 }
static const field_spec spawn_character_fields[] = {
    WORLD_FIELD,
    POSITION_FIELD("position", u.spawn_character.position),
    {"facing", F_NUM, false, -1000, 1000, false, 0, OFF(u.spawn_character.facing), NULL, NULL, 0,
     0},
    NAME_FIELD("skeleton", false, u.spawn_character.skeleton),
    NAME_FIELD("clip", false, u.spawn_character.clip),
    {"solver", F_ENUM_NOT_NULL, false, 0, 0, false, 0, OFF(u.spawn_character.solver),
     char_solver_names, char_solver_values, RDP_CHAR_SOLVER_DEFAULT, 0},
    {"state", F_ENUM_NOT_NULL, false, 0, 0, false, 0, OFF(u.spawn_character.state),
     spawn_state_names, spawn_state_values, RDP_SPAWN_ANIMATED, 0},
};
static const field_spec spawn_ball_fields[] = {
    WORLD_FIELD,
    POSITION_FIELD("position", u.spawn_ball.position),
    {"velocity", F_VEC3, false, 0, 1000, false, 0, OFF(u.spawn_ball.velocity), NULL, NULL, 0, 0},
    {"radius", F_NUM, false, 1e-3, 5, false, 0.2, OFF(u.spawn_ball.radius), NULL, NULL, 0, 0},
    {"mass", F_NUM, false, 1e-3, 1e4, false, 5, OFF(u.spawn_ball.mass), NULL, NULL, 0, 0},
};
static const field_spec spawn_softbody_fields[] = {
    WORLD_FIELD,
    POSITION_FIELD("position", u.spawn_softbody.position),
    {"shape", F_ENUM, true, 0, 0, false, 0, OFF(u.spawn_softbody.shape), shape_names, shape_values,
     0, 0},
    {"size", F_NUM, true, 0.05, 5, false, 0, OFF(u.spawn_softbody.size), NULL, NULL, 0, 0},
    {"resolution", F_UINT, false, 2, 16, false, 4, OFF(u.spawn_softbody.resolution), NULL, NULL, 0,
     0},
    {"stiffness", F_NUM, false, 0, 1, true, 0.5, OFF(u.spawn_softbody.stiffness), NULL, NULL, 0, 0},
    {"pressure", F_NUM, false, 0, 1, false, 0, OFF(u.spawn_softbody.pressure), NULL, NULL, 0, 0},
    {"mass", F_NUM, false, 1e-3, 1e4, false, 10, OFF(u.spawn_softbody.mass), NULL, NULL, 0, 0},
};
static const field_spec kill_fields[] = {
    WORLD_FIELD,
    ENTITY_FIELD,
    POSITION_FIELD("hit_point", u.kill.hit_point),
    {"impulse", F_VEC3, true, 0, 1e4, false, 0, OFF(u.kill.impulse), NULL, NULL, 0, 0},
    {"bone", F_STRING, false, 1, RDP_MAX_BONE_NAME, false, 0, OFF(bone), NULL, NULL, 0,
     RDP_GIVEN_BONE},
    SEEN_TICK_FIELD(u.kill.seen_tick),
};
// The direction's length is checked by the world (a zero one is out_of_range).
static const field_spec raycast_fields[] = {
    WORLD_FIELD,
    POSITION_FIELD("origin", u.raycast.origin),
    {"direction", F_VEC3, true, 0, RDP_MAX_COORD, false, 0, OFF(u.raycast.direction), NULL, NULL, 0,
     0},
    {"max_distance", F_NUM, false, 0, RDP_MAX_RAY_DISTANCE, true, 1000, OFF(u.raycast.max_distance),
     NULL, NULL, 0, 0},
    SEEN_TICK_FIELD(u.raycast.seen_tick),
};
static const field_spec start_getup_fields[] = {
    WORLD_FIELD,
    ENTITY_FIELD,
    {"blend_time", F_NUM, false, 0, 5, false, 0.4, OFF(u.start_getup.blend_time), NULL, NULL, 0, 0},
};
static const field_spec set_drive_fields[] = {
    WORLD_FIELD,
    ENTITY_FIELD,
    {"kp", F_NUM, true, 0, 1e5, false, 0, OFF(u.set_drive.kp), NULL, NULL, 0, 0},
    {"kd", F_NUM, true, 0, 1e5, false, 0, OFF(u.set_drive.kd), NULL, NULL, 0, 0},
    {"bones", F_NAMES, false, 0, RDP_MAX_BONES, false, 0, OFF(bones), NULL, NULL, 0,
     RDP_GIVEN_BONES},
    {"ramp_time", F_NUM, false, 0, 60, false, 0, OFF(u.set_drive.ramp_time), NULL, NULL, 0, 0},
};
static const field_spec set_partial_fields[] = {
    WORLD_FIELD,
    ENTITY_FIELD,
    {"bones", F_NAMES, true, 0, RDP_MAX_BONES, false, 0, OFF(bones), NULL, NULL, 0,
     RDP_GIVEN_BONES},
};
static const field_spec ack_fields[] = {
    WORLD_FIELD,
    {"tick", F_ID, true, 0, RDP_MAX_SAFE_INTEGER, false, 0, OFF(u.ack.tick), NULL, NULL, 0, 0},
};
static const field_spec play_fields[] = {
    WORLD_FIELD,
    ENTITY_FIELD,
    NAME_FIELD("clip", true, u.play.clip),
};
static const field_spec set_focus_fields[] = {
    WORLD_FIELD,
    {"point", F_VEC3, false, 0, RDP_MAX_COORD, false, 0, OFF(u.set_focus.point), NULL, NULL, 0,
     RDP_GIVEN_POINT},
    {"radius", F_NUM, false, 0, 2000, true, 15, OFF(u.set_focus.radius), NULL, NULL, 0, 0},
};
static const field_spec attach_cloth_fields[] = {
    WORLD_FIELD,
    ENTITY_FIELD,
    {"kind", F_ENUM, true, 0, 0, false, 0, OFF(u.attach_cloth.kind), garment_names, garment_values,
     0, 0},
    {"cols", F_UINT, false, 2, 64, false, 0, OFF(u.attach_cloth.cols), NULL, NULL, 0, 0},
    {"rows", F_UINT, false, 2, 64, false, 0, OFF(u.attach_cloth.rows), NULL, NULL, 0, 0},
    {"mass", F_NUM, false, 1e-3, 1e4, false, 0, OFF(u.attach_cloth.mass), NULL, NULL, 0, 0},
    {"long_range", F_BOOL, false, 0, 0, false, 0, OFF(u.attach_cloth.long_range), NULL, NULL, 1, 0},
    {"stretch_compliance", F_NUM, false, 0, 1, false, 0, OFF(u.attach_cloth.stretch_compliance),
     NULL, NULL, 0, 0},
    {"bend_compliance", F_NUM, false, 0, 1, false, 1e-3, OFF(u.attach_cloth.bend_compliance), NULL,
     NULL, 0, 0},
    {"tear", F_NUM, false, 0, 100, false, 0, OFF(u.attach_cloth.tear), NULL, NULL, 0, 0},
};
static const field_spec set_params_fields[] = {
    WORLD_FIELD,
    {"gravity", F_VEC3, false, 0, 1000, false, 0, OFF(u.set_params.gravity), NULL, NULL, 0,
     RDP_PARAM_GRAVITY},
    {"damping", F_NUM, false, 0, 1, false, 0, OFF(u.set_params.damping), NULL, NULL, 0,
     RDP_PARAM_DAMPING},
    {"iterations", F_UINT, false, 1, 100, false, 0, OFF(u.set_params.iterations), NULL, NULL, 0,
     RDP_PARAM_ITERATIONS},
    {"substeps", F_UINT, false, 1, 32, false, 0, OFF(u.set_params.substeps), NULL, NULL, 0,
     RDP_PARAM_SUBSTEPS},
    {"bounciness", F_NUM, false, 0, 1, false, 0, OFF(u.set_params.bounciness), NULL, NULL, 0,
     RDP_PARAM_BOUNCINESS},
    {"friction", F_NUM, false, 0, 1, false, 0, OFF(u.set_params.friction), NULL, NULL, 0,
     RDP_PARAM_FRICTION},
    {"wind", F_VEC3, false, 0, 100, false, 0, OFF(u.set_params.wind), NULL, NULL, 0,
     RDP_PARAM_WIND},
    {"gust", F_NUM, false, 0, 1, false, 0, OFF(u.set_params.gust), NULL, NULL, 0, RDP_PARAM_GUST},
    {"gust_period", F_NUM, false, 0.1, 600, false, 0, OFF(u.set_params.gust_period), NULL, NULL, 0,
     RDP_PARAM_GUST_PERIOD},
    {"air_density", F_NUM, false, 0, 10, false, 0, OFF(u.set_params.air_density), NULL, NULL, 0,
     RDP_PARAM_AIR_DENSITY},
    {"drag_coef", F_NUM, false, 0, 10, false, 0, OFF(u.set_params.drag_coef), NULL, NULL, 0,
     RDP_PARAM_DRAG_COEF},
    {"lift_coef", F_NUM, false, 0, 10, false, 0, OFF(u.set_params.lift_coef), NULL, NULL, 0,
     RDP_PARAM_LIFT_COEF},
};

static const op_spec ops[] = {
    {"list_worlds", RDP_OP_LIST_WORLDS, NULL, 0},
    {"create_world", RDP_OP_CREATE_WORLD, create_world_fields, COUNT(create_world_fields)},
    {"destroy_world", RDP_OP_DESTROY_WORLD, world_fields, COUNT(world_fields)},
    {"subscribe", RDP_OP_SUBSCRIBE, subscribe_fields, COUNT(subscribe_fields)},
    {"unsubscribe", RDP_OP_UNSUBSCRIBE, world_fields, COUNT(world_fields)},
    {"spawn_rope", RDP_OP_SPAWN_ROPE, spawn_rope_fields, COUNT(spawn_rope_fields)},
    {"spawn_cloth", RDP_OP_SPAWN_CLOTH, spawn_cloth_fields, COUNT(spawn_cloth_fields)},
    {"spawn_ragdoll", RDP_OP_SPAWN_RAGDOLL, spawn_ragdoll_fields, COUNT(spawn_ragdoll_fields)},
    {"despawn", RDP_OP_DESPAWN, entity_fields, COUNT(entity_fields)},
    {"describe", RDP_OP_DESCRIBE, entity_fields, COUNT(entity_fields)},
    {"apply_impulse", RDP_OP_APPLY_IMPULSE, impulse_fields, COUNT(impulse_fields)},
    {"drag", RDP_OP_DRAG, drag_fields, COUNT(drag_fields)},
    {"release", RDP_OP_RELEASE, release_fields, COUNT(release_fields)},
    {"set_params", RDP_OP_SET_PARAMS, set_params_fields, COUNT(set_params_fields)},
    {"spawn_character", RDP_OP_SPAWN_CHARACTER, spawn_character_fields,
     COUNT(spawn_character_fields)},
    {"spawn_ball", RDP_OP_SPAWN_BALL, spawn_ball_fields, COUNT(spawn_ball_fields)},
    {"kill", RDP_OP_KILL, kill_fields, COUNT(kill_fields)},
    {"start_getup", RDP_OP_START_GETUP, start_getup_fields, COUNT(start_getup_fields)},
    {"set_drive", RDP_OP_SET_DRIVE, set_drive_fields, COUNT(set_drive_fields)},
    {"set_partial", RDP_OP_SET_PARTIAL, set_partial_fields, COUNT(set_partial_fields)},
    {"play", RDP_OP_PLAY, play_fields, COUNT(play_fields)},
    {"ack", RDP_OP_ACK, ack_fields, COUNT(ack_fields)},
    {"resync", RDP_OP_RESYNC, world_fields, COUNT(world_fields)},
    {"attach_cloth", RDP_OP_ATTACH_CLOTH, attach_cloth_fields, COUNT(attach_cloth_fields)},
    {"set_focus", RDP_OP_SET_FOCUS, set_focus_fields, COUNT(set_focus_fields)},
    {"set_tear", RDP_OP_SET_TEAR, set_tear_fields, COUNT(set_tear_fields)},
    {"spawn_softbody", RDP_OP_SPAWN_SOFTBODY, spawn_softbody_fields, COUNT(spawn_softbody_fields)},
    {"save_world", RDP_OP_SAVE_WORLD, save_world_fields, COUNT(save_world_fields)},
    {"add_box", RDP_OP_ADD_BOX, add_box_fields, COUNT(add_box_fields)},
    {"raycast", RDP_OP_RAYCAST, raycast_fields, COUNT(raycast_fields)},
};

const char* rdp_op_name(rdp_op op) {
    for (size_t i = 0; i < COUNT(ops); ++i) {
        if (ops[i].op == op) {
            return ops[i].name;
        }
    }
    return NULL;
}

static const char* const limit_names[RDP_LIMIT_COUNT] = {
#define RDP__LIMIT_KEY(name, key) key,
    RDP_LIMIT_MAP(RDP__LIMIT_KEY)
#undef RDP__LIMIT_KEY
};

const char* rdp_limit_name(rdp_limit limit) {
    return (int)limit >= 0 && limit < RDP_LIMIT_COUNT ? limit_names[limit] : NULL;
}

// The limit named `key`, or RDP_LIMIT_COUNT.
static rdp_limit limit_of(const char* key) {
    int i = 0;
    while (i < RDP_LIMIT_COUNT && strcmp(key, limit_names[i]) != 0) {
        i++;
    }
    return (rdp_limit)i;
}

const char* rdp_solver_name(rdp_solver solver) {
    return (int)solver > RDP_SOLVER_DEFAULT && solver < RDP_SOLVER_COUNT
               ? solver_names[solver - RDP_SOLVER_XPBD]
               : NULL;
}

rdp_solver rdp_solver_parse(const char* name) {
    for (int i = 0; name != NULL && solver_names[i] != NULL; ++i) {
        if (strcmp(name, solver_names[i]) == 0) {
            return (rdp_solver)solver_values[i];
        }
    }
    return RDP_SOLVER_DEFAULT;
}

const char* rdp_code_name(rdp_code code) {
    switch (code) {
    case RDP_OK:
        return "ok";
#define RDP__CODE_STR(name, str)                                                                   \
    case RDP_E_##name:                                                                             \
        return str;
        RDP_CODE_MAP(RDP__CODE_STR)
#undef RDP__CODE_STR
    }
    return "internal";
}

// printf-style: the attribute lets -Wformat check every caller.
// x as the shortest text that reads back as x (an integer below 10^15 in
// full, else %g with 17 digits at most), so that a message quotes 0.04 as
// "0.04", not "0.040000000000000001".
static const char* num_text(double x, char buf[32]) {
    if (x == floor(x) && fabs(x) < 1e15) {
        snprintf(buf, 32, "%.0f", x); // 200, not 2e+02
        return buf;
    }
    for (int digits = 1; digits <= 17; ++digits) {
        snprintf(buf, 32, "%.*g", digits, x);
        if (strtod(buf, NULL) == x) {
            break;
        }
    }
    return buf;
}

__attribute__((format(printf, 3, 4))) static rdp_code fail(rdp_error* err, rdp_code code,
                                                           const char* fmt, ...) {
    err->code = code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->message, sizeof err->message, fmt, ap);
    va_end(ap);
    return code;
}

static bool is_integral(double v) {
    return floor(v) == v;
}

// Accepts UTF-8 text with no C0 control characters (names end up in logs and
// in every client's world list). Overlong forms and surrogates are refused.
static bool clean_utf8(const unsigned char* s, size_t n) {
    size_t i = 0;
    while (i < n) {
        unsigned c = s[i];
        size_t extra;
        unsigned min;
        if (c < 0x20 || c == 0x7f) {
            return false;
        } else if (c < 0x80) {
            i++;
            continue;
        } else if ((c & 0xe0) == 0xc0) {
            extra = 1;
            min = 0x80;
            c &= 0x1f;
        } else if ((c & 0xf0) == 0xe0) {
            extra = 2;
            min = 0x800;
            c &= 0x0f;
        } else if ((c & 0xf8) == 0xf0) {
            extra = 3;
            min = 0x10000;
            c &= 0x07;
        } else {
            return false;
        }
        if (i + extra >= n) {
            return false; // truncated sequence
        }
        for (size_t k = 1; k <= extra; ++k) {
            if ((s[i + k] & 0xc0) != 0x80) {
                return false;
            }
            c = (c << 6) | (s[i + k] & 0x3f);
        }
        if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff)) {
            return false;
        }
        i += extra + 1;
    }
    return true;
}

static int utf8_prefix(const char* s, int max);

// The choices of an enum field for a message: "a", "b" or "c".
static const char* choices_text(const field_spec* f, char* buf, size_t cap) {
    size_t n = 0;
    buf[0] = '\0';
    for (size_t i = 0; f->choices[i] != NULL && n < cap; ++i) {
        const char* sep = i == 0 ? "" : f->choices[i + 1] == NULL ? " or " : ", ";
        int k = snprintf(buf + n, cap - n, "%s\"%s\"", sep, f->choices[i]);
        n += k > 0 ? (size_t)k : 0;
    }
    return buf;
}

// Pass 1: presence and JSON type.
static rdp_code check_shape(const field_spec* f, const cJSON* v, rdp_error* err) {
    switch (f->type) {
    case F_ID:
    case F_UINT:
    case F_NUM:
        if (!cJSON_IsNumber(v)) {
            return fail(err, RDP_E_BAD_REQUEST, "field \"%s\" must be a number", f->key);
        }
        return RDP_OK;
    case F_VEC3: {
        if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) != 3) {
            return fail(err, RDP_E_BAD_REQUEST, "field \"%s\" must be an array of 3 numbers",
                        f->key);
        }
        const cJSON* c;
        cJSON_ArrayForEach(c, v) {
            if (!cJSON_IsNumber(c)) {
                return fail(err, RDP_E_BAD_REQUEST, "field \"%s\" must be an array of 3 numbers",
                            f->key);
            }
        }
        return RDP_OK;
    }
    case F_STRING:
        if (!cJSON_IsString(v)) {
            return fail(err, RDP_E_BAD_REQUEST, "field \"%s\" must be a string", f->key);
        }
        return RDP_OK;
    case F_ENUM:
    case F_ENUM_NOT_NULL:
        if (!cJSON_IsString(v)) {
            char choices[96];
            return fail(err, RDP_E_BAD_REQUEST, "field \"%s\" must be a string: %s", f->key,
                        choices_text(f, choices, sizeof choices));
        }
        return RDP_OK;
    case F_BOOL:
        if (!cJSON_IsBool(v)) {
            return fail(err, RDP_E_BAD_REQUEST, "field \"%s\" must be true or false", f->key);
        }
        return RDP_OK;
    case F_LIMITS: {
        if (!cJSON_IsObject(v)) {
            return fail(err, RDP_E_BAD_REQUEST,
                        "field \"%s\" must be an object of limits, e.g. {\"bodies\": 4096}",
                        f->key);
        }
        const cJSON* c;
        cJSON_ArrayForEach(c, v) {
            if (limit_of(c->string) == RDP_LIMIT_COUNT) {
                return fail(err, RDP_E_BAD_REQUEST,
                            "field \"%s\" has no limit \"%.*s\" (limits are entities, particles, "
                            "constraints, bodies, joints, contacts)",
                            f->key, utf8_prefix(c->string, 32), c->string);
            }
            if (!cJSON_IsNumber(c)) {
                return fail(err, RDP_E_BAD_REQUEST, "field \"%s.%s\" must be a number", f->key,
                            c->string);
            }
        }
        return RDP_OK;
    }
    case F_FLAGS:
    case F_NAMES: {
        bool strings = cJSON_IsArray(v);
        const cJSON* c;
        cJSON_ArrayForEach(c, v) {
            strings = strings && cJSON_IsString(c);
        }
        if (!strings) {
            return fail(err, RDP_E_BAD_REQUEST, "field \"%s\" must be an array of strings", f->key);
        }
        // F_FLAGS: each a known name, a shape error before any range.
        for (c = f->type == F_FLAGS ? v->child : NULL; c != NULL; c = c->next) {
            size_t i = 0;
            while (f->choices[i] != NULL && strcmp(c->valuestring, f->choices[i]) != 0) {
                i++;
            }
            if (f->choices[i] == NULL) {
                char choices[96];
                const char* name = c->valuestring;
                size_t n = strlen(name);
                if (n <= 32 && clean_utf8((const unsigned char*)name, n)) {
                    return fail(err, RDP_E_BAD_REQUEST, "field \"%s\" may list %s, not \"%s\"",
                                f->key, choices_text(f, choices, sizeof choices), name);
                }
                return fail(err, RDP_E_BAD_REQUEST, "field \"%s\" may list %s", f->key,
                            choices_text(f, choices, sizeof choices));
            }
        }
        return RDP_OK;
    }
    }
    return fail(err, RDP_E_INTERNAL, "bad field table");
}

// Pass 2: every number finite.
static rdp_code check_finite(const field_spec* f, const cJSON* v, rdp_error* err) {
    if (f->type == F_VEC3) {
        const cJSON* c;
        cJSON_ArrayForEach(c, v) {
            if (!isfinite(c->valuedouble)) {
                return fail(err, RDP_E_NOT_FINITE, "field \"%s\" has a non-finite component",
                            f->key);
            }
        }
    } else if (f->type == F_LIMITS) {
        const cJSON* c;
        cJSON_ArrayForEach(c, v) {
            if (!isfinite(c->valuedouble)) {
                return fail(err, RDP_E_NOT_FINITE, "field \"%s.%s\" is not finite", f->key,
                            c->string);
            }
        }
    } else if ((f->type == F_ID || f->type == F_UINT || f->type == F_NUM) &&
               !isfinite(v->valuedouble)) {
        return fail(err, RDP_E_NOT_FINITE, "field \"%s\" is not finite", f->key);
    }
    return RDP_OK;
}

static bool in_range(const field_spec* f, double x) {
    return (f->lo_open ? x > f->lo : x >= f->lo) && x <= f->hi;
}

// Pass 3: integrality, ranges and choices; stores the value.
static rdp_code check_store(const field_spec* f, const cJSON* v, rdp_command* out, rdp_error* err) {
    char* dst = (char*)out + f->offset;
    switch (f->type) {
    case F_ID: {
        double x = v->valuedouble;
        if (!is_integral(x) || x < 0 || x > RDP_MAX_SAFE_INTEGER) {
            return fail(err, RDP_E_BAD_REQUEST, "field \"%s\" must be an integer in [0, 2^53)",
                        f->key);
        }
        uint64_t id = (uint64_t)x;
        memcpy(dst, &id, sizeof id);
        return RDP_OK;
    }
    case F_UINT: {
        double x = v->valuedouble;
        if (!is_integral(x)) {
            return fail(err, RDP_E_BAD_REQUEST, "field \"%s\" must be an integer", f->key);
        }
        if (!in_range(f, x)) {
            char t[32];
            return fail(err, RDP_E_OUT_OF_RANGE, "field \"%s\" = %s is outside [%.0f, %.0f]",
                        f->key, num_text(x, t), f->lo, f->hi);
        }
        uint32_t u = (uint32_t)x;
        memcpy(dst, &u, sizeof u);
        return RDP_OK;
    }
    case F_NUM: {
        double x = v->valuedouble;
        if (!in_range(f, x)) {
            char t[32];
            return fail(err, RDP_E_OUT_OF_RANGE, "field \"%s\" = %s is outside %s%g, %g]", f->key,
                        num_text(x, t), f->lo_open ? "(" : "[", f->lo, f->hi);
        }
        memcpy(dst, &x, sizeof x);
        return RDP_OK;
    }
    case F_VEC3: {
        double c[3];
        int i = 0;
        const cJSON* e;
        cJSON_ArrayForEach(e, v) {
            c[i] = e->valuedouble;
            if (fabs(c[i]) > f->hi) {
                char t[32];
                return fail(err, RDP_E_OUT_OF_RANGE,
                            "field \"%s\" component %d = %s is outside [-%g, %g]", f->key, i,
                            num_text(c[i], t), f->hi, f->hi);
            }
            i++;
        }
        rdp_vec3 r = {c[0], c[1], c[2]};
        memcpy(dst, &r, sizeof r);
        return RDP_OK;
    }
    case F_STRING: {
        const char* s = v->valuestring;
        size_t n = strlen(s);
        if (n < (size_t)f->lo || n > (size_t)f->hi) {
            return fail(err, RDP_E_OUT_OF_RANGE, "field \"%s\" must be %.0f to %.0f bytes long",
                        f->key, f->lo, f->hi);
        }
        if (!clean_utf8((const unsigned char*)s, n)) {
            return fail(err, RDP_E_BAD_REQUEST,
                        "field \"%s\" must be UTF-8 without control characters", f->key);
        }
        memcpy(dst, s, n + 1);
        return RDP_OK;
    }
    case F_ENUM:
    case F_ENUM_NOT_NULL: {
        for (size_t i = 0; f->choices[i] != NULL; ++i) {
            if (strcmp(v->valuestring, f->choices[i]) == 0) {
                memcpy(dst, &f->values[i], sizeof(uint32_t));
                return RDP_OK;
            }
        }
        // The value is quoted back when it is short, clean text.
        char choices[96];
        const char* s = v->valuestring;
        size_t n = strlen(s);
        if (n <= 32 && clean_utf8((const unsigned char*)s, n)) {
            return fail(err, RDP_E_BAD_REQUEST, "field \"%s\" must be %s, not \"%s\"", f->key,
                        choices_text(f, choices, sizeof choices), s);
        }
        return fail(err, RDP_E_BAD_REQUEST, "field \"%s\" must be %s", f->key,
                    choices_text(f, choices, sizeof choices));
    }
    case F_BOOL: {
        uint32_t b = cJSON_IsTrue(v) ? 1u : 0u;
        memcpy(dst, &b, sizeof b);
        return RDP_OK;
    }
    case F_LIMITS: {
        rdp_limits* limits = (rdp_limits*)(void*)dst;
        memset(limits, 0, sizeof *limits);
        const cJSON* c;
        cJSON_ArrayForEach(c, v) {
            rdp_limit i = limit_of(c->string); // known: checked in pass 1
            double x = c->valuedouble;
            if (!is_integral(x)) {
                return fail(err, RDP_E_BAD_REQUEST, "field \"%s.%s\" must be an integer", f->key,
                            c->string);
            }
            if (!in_range(f, x)) {
                char t[32];
                return fail(err, RDP_E_OUT_OF_RANGE, "field \"%s.%s\" = %s is outside [%.0f, %.0f]",
                            f->key, c->string, num_text(x, t), f->lo, f->hi);
            }
            limits->value[i] = (uint32_t)x;
            limits->given |= 1u << i;
        }
        return RDP_OK;
    }
    case F_FLAGS: {
        if (cJSON_GetArraySize(v) > (int)f->hi) {
            return fail(err, RDP_E_OUT_OF_RANGE, "field \"%s\" lists %d names, at most %.0f",
                        f->key, cJSON_GetArraySize(v), f->hi);
        }
        uint32_t bits = 0;
        const cJSON* c;
        cJSON_ArrayForEach(c, v) {
            size_t i = 0; // known: checked in pass 1
            while (f->choices[i] != NULL && strcmp(c->valuestring, f->choices[i]) != 0) {
                i++;
            }
            bits |= f->choices[i] != NULL ? f->values[i] : 0u;
        }
        memcpy(dst, &bits, sizeof bits);
        return RDP_OK;
    }
    case F_NAMES: {
        rdp_names* names = (rdp_names*)(void*)dst;
        int n = cJSON_GetArraySize(v);
        if (n > (int)f->hi) {
            return fail(err, RDP_E_OUT_OF_RANGE, "field \"%s\" lists %d names, at most %.0f",
                        f->key, n, f->hi);
        }
        names->count = 0;
        const cJSON* c;
        cJSON_ArrayForEach(c, v) {
            size_t len = strlen(c->valuestring);
            if (len < 1 || len > RDP_MAX_BONE_NAME) {
                return fail(err, RDP_E_OUT_OF_RANGE, "field \"%s\": names are 1 to %d bytes long",
                            f->key, RDP_MAX_BONE_NAME);
            }
            if (!clean_utf8((const unsigned char*)c->valuestring, len)) {
                return fail(err, RDP_E_BAD_REQUEST,
                            "field \"%s\": names must be UTF-8 without control characters", f->key);
            }
            memcpy(names->name[names->count++], c->valuestring, len + 1);
        }
        return RDP_OK;
    }
    }
    return fail(err, RDP_E_INTERNAL, "bad field table");
}

// Stores the default of an optional field that was absent.
static void store_default(const field_spec* f, rdp_command* out) {
    char* dst = (char*)out + f->offset;
    if (f->type == F_NUM) {
        memcpy(dst, &f->def, sizeof f->def);
    } else if (f->type == F_UINT) {
        uint32_t u = (uint32_t)f->def;
        memcpy(dst, &u, sizeof u);
    } else if (f->type == F_ENUM || f->type == F_ENUM_NOT_NULL || f->type == F_BOOL) {
        memcpy(dst, &f->def_value, sizeof f->def_value);
    }
}

static rdp_code decode_fields(const op_spec* spec, const cJSON* root, rdp_command* out,
                              rdp_error* err) {
    const cJSON* vals[16];
    rdp_code rc;
    if (spec->field_count > COUNT(vals)) {
        return fail(err, RDP_E_INTERNAL, "field table too long");
    }
    for (size_t i = 0; i < spec->field_count; ++i) {
        const field_spec* f = &spec->fields[i];
        vals[i] = cJSON_GetObjectItemCaseSensitive(root, f->key);
        if (vals[i] == NULL || (cJSON_IsNull(vals[i]) && f->type != F_ENUM_NOT_NULL)) {
            vals[i] = NULL;
            if (f->required) {
                return fail(err, RDP_E_BAD_REQUEST, "%s needs field \"%s\"", spec->name, f->key);
            }
            continue;
        }
        if ((rc = check_shape(f, vals[i], err)) != RDP_OK) {
            return rc;
        }
    }
    for (size_t i = 0; i < spec->field_count; ++i) {
        if (vals[i] != NULL && (rc = check_finite(&spec->fields[i], vals[i], err)) != RDP_OK) {
            return rc;
        }
    }
    for (size_t i = 0; i < spec->field_count; ++i) {
        const field_spec* f = &spec->fields[i];
        if (vals[i] == NULL) {
            store_default(f, out);
            continue;
        }
        if ((rc = check_store(f, vals[i], out, err)) != RDP_OK) {
            return rc;
        }
        if (f->param_bit != 0 && spec->op == RDP_OP_SET_PARAMS) {
            out->u.set_params.given |= f->param_bit;
        } else if (f->param_bit != 0) {
            out->given |= f->param_bit;
        }
    }
    if (spec->op == RDP_OP_SET_PARAMS && out->u.set_params.given == 0) {
        return fail(err, RDP_E_BAD_REQUEST,
                    "set_params needs at least one of gravity, damping, iterations, substeps, "
                    "bounciness, friction, wind, gust, gust_period, air_density, drag_coef, "
                    "lift_coef");
    }
    return RDP_OK;
}

// True when a string in the JSON text holds an escaped NUL (\u0000). cJSON
// decodes it into its NUL-terminated strings, which would silently cut an op
// or a name short (and hide what follows from the control-character check).
static bool has_nul_escape(const char* text, size_t len) {
    bool in_string = false;
    for (size_t i = 0; i < len; ++i) {
        char c = text[i];
        if (!in_string) {
            in_string = c == '"';
        } else if (c == '"') {
            in_string = false;
        } else if (c == '\\' && i + 1 < len) {
            if (text[i + 1] == 'u' && i + 5 < len && memcmp(text + i + 2, "0000", 4) == 0) {
                return true;
            }
            i++; // skip the escaped character
        }
    }
    return false;
}

// Finds the first raw byte below 0x20 other than tab, LF and CR (RFC 8259
// §2: space and those three are the only white space; §7: a control
// character in a string must be escaped). cJSON is laxer on both counts: it
// skips every byte up to 0x20 as white space and cuts a string at a raw
// NUL, so `{"op":<NUL>"destroy_world"}` would parse and a name would lose
// what follows a NUL; such bytes are refused before cJSON sees the text. A
// raw tab, LF or CR inside a string gets as far as the field's own checks
// (a name refuses control characters, an op does not match).
static bool find_raw_control(const char* text, size_t len, size_t* at) {
    for (size_t i = 0; i < len; ++i) {
        unsigned char c = (unsigned char)text[i];
        if (c < 0x20 && c != '\t' && c != '\n' && c != '\r') {
            *at = i;
            return true;
        }
    }
    return false;
}

// The length of s cut to at most max bytes, before a character rather than
// through one: a message quoting the client's text goes back in a text
// frame, which must be UTF-8 (RFC 6455 §8.1; a browser fails the
// connection otherwise).
static int utf8_prefix(const char* s, int max) {
    int n = 0;
    while (n < max && s[n] != '\0') {
        n++;
    }
    while (n > 0 && ((unsigned char)s[n] & 0xc0) == 0x80) {
        n--; // s[n] continues the character before it: cut before that one
    }
    return n;
}

// Reads "id" first so that every later error reply can carry it.
static rdp_code decode_id(const cJSON* root, rdp_command* out, rdp_error* err) {
    const cJSON* id = cJSON_GetObjectItemCaseSensitive(root, "id");
    if (id == NULL || cJSON_IsNull(id)) {
        return RDP_OK;
    }
    if (!cJSON_IsNumber(id) || !isfinite(id->valuedouble) || !is_integral(id->valuedouble) ||
        fabs(id->valuedouble) > RDP_MAX_SAFE_INTEGER) {
        return fail(err, RDP_E_BAD_REQUEST, "\"id\" must be an integer with |id| < 2^53");
    }
    out->has_id = true;
    out->id = (int64_t)id->valuedouble;
    return RDP_OK;
}

rdp_code rdp_command_decode(const char* text, size_t len, rdp_command* out, rdp_error* err) {
    memset(out, 0, sizeof *out);
    err->code = RDP_OK;
    err->message[0] = '\0';
    if (len > RDP_MAX_MESSAGE_BYTES) {
        return fail(err, RDP_E_TOO_LARGE, "message is larger than %d bytes", RDP_MAX_MESSAGE_BYTES);
    }
    size_t at;
    if (find_raw_control(text, len, &at)) {
        return fail(err, RDP_E_BAD_JSON, "not valid JSON: raw control byte 0x%02x at offset %zu",
                    (unsigned char)text[at], at);
    }
    const char* end = NULL;
    cJSON* root = cJSON_ParseWithLengthOpts(text, len, &end, false);
    if (root == NULL) {
        return fail(err, RDP_E_BAD_JSON, "not valid JSON");
    }
    // Only white space may follow the value.
    for (const char* p = end; p != NULL && p < text + len; ++p) {
        if (*p != ' ' && *p != '\t' && *p != '\r' && *p != '\n') {
            cJSON_Delete(root);
            return fail(err, RDP_E_BAD_JSON, "not valid JSON: trailing characters");
        }
    }
    rdp_code rc;
    if (!cJSON_IsObject(root)) {
        rc = fail(err, RDP_E_BAD_REQUEST, "a command must be a JSON object");
        goto done;
    }
    if ((rc = decode_id(root, out, err)) != RDP_OK) {
        goto done;
    }
    if (has_nul_escape(text, len)) {
        rc = fail(err, RDP_E_BAD_REQUEST, "strings must not contain NUL (\\u0000)");
        goto done;
    }
    const cJSON* op = cJSON_GetObjectItemCaseSensitive(root, "op");
    if (!cJSON_IsString(op)) {
        rc = fail(err, RDP_E_BAD_REQUEST, "a command needs a string field \"op\"");
        goto done;
    }
    const op_spec* spec = NULL;
    for (size_t i = 0; i < COUNT(ops); ++i) {
        if (strcmp(op->valuestring, ops[i].name) == 0) {
            spec = &ops[i];
            break;
        }
    }
    if (spec == NULL) {
        rc = fail(err, RDP_E_UNKNOWN_OP, "unknown op \"%.*s\"", utf8_prefix(op->valuestring, 40),
                  op->valuestring);
        goto done;
    }
    out->op = spec->op;
    rc = decode_fields(spec, root, out, err);
done:
    cJSON_Delete(root);
    return rc;
}
