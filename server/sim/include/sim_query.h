/*
 * sim_query.h: questions asked of a world that change nothing: the first
 * thing a ray meets, and the recent past of the world's rigid bodies, so a
 * hit can be judged against the pose a client saw rather than the pose the
 * server has now (lag compensation: Bernier, "Latency Compensating Methods
 * in Client/Server In-game Protocol Design and Optimization", GDC 2001;
 * Valve, "Source Multiplayer Networking", "Lag compensation").
 *
 * Units SI, Y up. Nothing here allocates inside a step: a history grows when
 * it records, which the caller does between steps.
 */
#pragma once

#include "sim.h"

#ifdef __cplusplus
extern "C" {
#endif

// ---------------------------------------------------------------------------
// Pose history
// ---------------------------------------------------------------------------

/// The poses of a world's rigid bodies (characters' bones and balls) at its
/// last few ticks, one frame a tick, for judging rays and hit points against
/// the past. Owned by the caller (one per world), not part of the world's
/// state: it is not saved, hashed or replayed. Particles keep no history.
typedef struct sim_history sim_history;

/// Most frames a history may keep (4 s at 240 Hz).
#define SIM_MAX_HISTORY_FRAMES 960u

/// Makes an empty history of `frames` frames (1..SIM_MAX_HISTORY_FRAMES): it
/// keeps the last `frames` ticks recorded. `alloc` NULL: the default
/// allocator. Errors: SIM_E_INVALID_ARG (out NULL, frames out of range),
/// SIM_E_NOMEM.
int sim_history_create(uint32_t frames, const sim_allocator* alloc, sim_history** out);

/// Frees a history and everything it holds. NULL is allowed.
void sim_history_destroy(sim_history* h);

/// Records the pose of every rigid body of `w` at its current tick (call
/// it after each sim_world_step()). A frame already kept for this tick or a
/// later one is dropped first (the world went back: a rollback, a load), so
/// the frames always describe one timeline. Its memory grows to the
/// world's body count and never shrinks: at most about frames × bodies ×
/// 44 bytes (28 a pose, 16 an entity). Errors: SIM_E_NOMEM (no frame is kept for this tick; the
/// older ones stay).
int sim_history_record(sim_history* h, const sim_world* w);

/// Drops every frame (a world replaced wholesale).
void sim_history_clear(sim_history* h);

/// Bytes the history holds (its frames' capacity), for memory reports.
size_t sim_history_bytes(const sim_history* h);

/// How a wanted tick was matched by sim_history_pick().
typedef struct sim_picked_tick {
    uint64_t tick; ///< The tick the question is judged at.
    bool clamped;  ///< `want` was older than anything kept: the oldest kept (or now).
} sim_picked_tick;

/// Picks the tick to judge at for a client that saw tick `want`: `want`
/// itself when it is the world's tick or a kept frame; the newest kept frame
/// before it when a tick between is missing; the oldest kept frame, clamped,
/// when `want` is older than them all (the world's tick, clamped, when none
/// is kept). h may be NULL (no history: the world's tick). Errors:
/// SIM_E_OUT_OF_RANGE (`want` is after the world's tick: a client cannot
/// have seen it), SIM_E_INVALID_ARG (NULL w or out).
int sim_history_pick(const sim_history* h, const sim_world* w, uint64_t want, sim_picked_tick* out);

/// The pose bone `bone` of character (or ball, bone 0) `id` had at `tick`:
/// from the frame of that tick, or the world itself when `tick` is its tick.
/// Errors: SIM_E_STALE_ID (no such entity now, or it has no bodies),
/// SIM_E_BAD_INDEX (no such bone), SIM_E_OUT_OF_RANGE (no frame of `tick`,
/// or the entity was spawned after it).
int sim_history_bone_pose(const sim_history* h, const sim_world* w, uint64_t tick, sim_entity_id id,
                          uint32_t bone, sim_bone_pose* out);

/// Carries a point from where bone `bone` of `id` was at `tick` to where the
/// bone is now: the point fixed in the bone's body frame then, in world
/// coordinates now (m). This is how a hit judged in the past is applied in
/// the present. Errors as sim_history_bone_pose().
int sim_history_carry(const sim_history* h, const sim_world* w, uint64_t tick, sim_entity_id id,
                      uint32_t bone, sim_vec3 then, sim_vec3* now);

/// The bone of character `id` whose capsule centre was nearest `point` at
/// `tick` (the rule of sim_character_kill(), seed 000 §4, in the past).
/// Errors: SIM_E_STALE_ID (not a live character), SIM_E_OUT_OF_RANGE (no
/// frame of `tick`, or the character was spawned after it).
int sim_history_nearest_bone(const sim_history* h, const sim_world* w, uint64_t tick,
                             sim_entity_id id, sim_vec3 point, uint32_t* bone);

// ---------------------------------------------------------------------------
// Rays
// ---------------------------------------------------------------------------

/// What a ray met.
typedef enum sim_hit_kind {
    SIM_HIT_NONE = 0,     ///< Nothing within the distance.
    SIM_HIT_GROUND = 1,   ///< The ground plane y = 0 (worlds with ground), from above.
    SIM_HIT_BOX = 2,      ///< A static box; `index` is its index in sim_world_boxes().
    SIM_HIT_BONE = 3,     ///< A character's bone capsule; `index` is the bone.
    SIM_HIT_BALL = 4,     ///< A ball's sphere.
    SIM_HIT_PARTICLE = 5, ///< A particle's sphere of its collision radius; `index` is the particle.
} sim_hit_kind;

/// Lower-case name of a hit kind ("none", "ground", "box", "bone", "ball",
/// "particle"); "unknown" otherwise. Static storage.
const char* sim_hit_kind_name(sim_hit_kind kind);

/// The first thing a ray met.
typedef struct sim_ray_hit {
    sim_hit_kind kind;
    sim_entity_id entity; ///< The entity hit (bone, ball, particle); null otherwise.
    uint32_t index;       ///< Bone, particle or box index; 0 otherwise.
    float distance;       ///< m along the ray from its origin.
    sim_vec3 point;       ///< m, on the surface hit.
    sim_vec3 normal;      ///< Unit, out of the surface hit.
} sim_ray_hit;

/// Longest ray, m: the world's cube's diagonal (2000 √3 m) and some.
#define SIM_MAX_RAY_DISTANCE 4000.0f

/// Casts a ray from `origin` along `direction` (any non-zero length; it is
/// normalized) up to `max_distance` m and fills *out with the first surface
/// it enters: the ground, static boxes, bone capsules, balls, and the
/// spheres of particles (ropes, cloth, particle ragdolls, soft bodies; each
/// of its collision radius). A shape that holds the origin is not hit (the
/// ray leaves it; Box2D's rule). Bones and balls are taken at `tick`'s pose
/// from `h` when `tick` is before the world's tick (pick it with
/// sim_history_pick()); bodies spawned after it are not there; particles,
/// boxes and the ground are always as they are now. Nothing hit: kind
/// SIM_HIT_NONE. Ties go to the first in the order above. Ray against
/// capsule: the ray against the capsule's cylinder, then its two end
/// spheres (Ericson, "Real-Time Collision Detection", §5.3.7 and §5.3.2);
/// against a box: slabs (§5.3.3). Errors: SIM_E_INVALID_ARG (NULL w or
/// out), SIM_E_NOT_FINITE, SIM_E_OUT_OF_RANGE (a zero direction, a
/// distance outside (0, SIM_MAX_RAY_DISTANCE], an origin outside the
/// world, a tick neither the world's nor kept by h).
int sim_world_raycast(const sim_world* w, const sim_history* h, uint64_t tick, sim_vec3 origin,
                      sim_vec3 direction, float max_distance, sim_ray_hit* out);

#ifdef __cplusplus
}
#endif
