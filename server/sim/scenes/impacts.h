/*
 * impacts.h: the rigid solver's robustness scenes (issue 9), shared by
 * tests/unit/test_impacts.c, which asserts what holds today, and
 * bench/impacts.c (ragdoll-impacts), which prints every figure against its
 * target. Each function builds its own world through the public API (the
 * server's world def: 60 Hz, the default solver budget) with the library's
 * "humanoid" skeleton and its "idle" clip, runs it and measures it with
 * sim_character_probe_joints() and the bones' velocities after every tick.
 *
 * Units: SI (m, s, m/s, rad, rad/s). Returns 0 or the SIM_E_* code of the
 * call that failed to build the scene (SIM_E_BAD_STATE: the impact never
 * came); a ragdoll that the world removes as unstable is a figure (finite =
 * false), not an error.
 *
 * A throw or a spin is given through the public API only, as an impulse at
 * each bone's centre: every bone gets the velocity of the rigid motion at
 * its centre, but no spin of its own (that needs the bones' inertia); the
 * joints share the spin out within the first substep, long before anything
 * lands.
 */
#pragma once

#include "sim.h"

/// Speed under which a bone counts as at rest, m/s.
#define SIM_IMPACT_REST_SPEED 0.05f

/// What one scene measured. Maxima are over every tick and every ragdoll of
/// the scene unless said otherwise.
typedef struct sim_impact_figures {
    /// Worst joint gap (sim_joint_probe.gap) at any tick, m, and the tick
    /// (1 = after the first step) and bone where it was.
    float gap_max;
    uint32_t gap_max_tick;
    uint32_t gap_max_bone;
    /// Worst joint gap from one second after the impact on, m.
    float gap_late;
    /// Worst joint gap at the last tick, m: what is left once the ragdolls
    /// lie still (a solver whose joints are springs keeps a loaded joint
    /// stretched).
    float gap_end;
    /// Worst hinge over-range (twist_over of the hinges), rad.
    float hinge_over;
    /// Worst ball-joint limit excess (twist_over or swing_over), rad.
    float ball_over;
    /// Fastest bone angular speed, rad/s, and linear speed, m/s.
    float omega_max;
    float speed_max;
    /// Time after the throw from which every bone of every ragdoll stayed
    /// under SIM_IMPACT_REST_SPEED to the end of the run, s: the slowest
    /// ragdoll's. The run's length when one still moved at its last tick.
    float rest_time;
    /// Ragdolls whose bones were all under SIM_IMPACT_REST_SPEED at the
    /// last tick.
    uint32_t at_rest;
    uint32_t ragdolls;
    /// Fastest bone at the last tick, m/s: creeping or sliding, when a
    /// ragdoll is not at rest.
    float final_speed;
    /// Every pose and velocity was finite and no ragdoll was removed.
    bool finite;
    /// sim_impact_foot_on_edge(): the left leg's length (hip to toe, the
    /// sum of its three bones' segments), m. The deepest a bone's capsule
    /// went into the box (its surface past the box's), m, and that bone's
    /// segment (its axis) at the same tick, m (0 if outside), with the bone
    /// and tick. A limb went through the box when a bone's axis went deeper
    /// than the bone's radius: its whole thickness inside.
    float limb_length;
    float box_depth;
    float box_axis_depth;
    uint32_t box_depth_bone;
    uint32_t box_depth_tick;
    bool through_box;
    /// The tick of the first impact (contact), from which gap_late and
    /// "during the impact" count.
    uint32_t impact_tick;
} sim_impact_figures;

/// Each scene builds its world as the server does (sim_world_def_default()
/// with `lib`, which must hold the "humanoid" skeleton) with the rigid-body
/// solver `solver`, spawns its humanoids with the character solver `chars`
/// (MAXIMAL: bones of that rigid solver; REDUCED: articulations, issue 13,
/// with no solver-work budget: twenty are over the default one), and frees
/// it before returning.

/// `count` humanoid ragdolls (at most 20) thrown onto a flight of ten
/// 0.5 m × 0.2 m steps (static boxes, 14 m wide) at `speed` m/s, along
/// (0, -1, 0.4) normalised (down and into the risers), each standing
/// 0.3-0.5 m above its step at a random yaw with a random spin of 2-8 rad/s
/// about a random axis, from `seed`. Runs `seconds` of world time; the
/// impact is the first tick, so gap_late counts from 1 s.
int sim_impact_stairs(const sim_library* lib, sim_solver solver, sim_char_solver chars, float speed,
                      uint32_t seed, uint32_t count, float seconds, sim_impact_figures* out);

/// One humanoid ragdoll dropped upright from `height` m above a static box
/// (top at y = 1 m) so that its left foot lands across the box's edge: the
/// box spans x in [0, 1] (under the left leg only) and z from the middle
/// of the left foot on. Runs until `after` s past the first contact
/// (impact_tick); gap_late counts from 1 s after it.
int sim_impact_foot_on_edge(const sim_library* lib, sim_solver solver, sim_char_solver chars,
                            float height, float after, sim_impact_figures* out);

/// A sphere of radius `radius` m and `mass` kg thrown at `speed` m/s into
/// the chest of a humanoid just killed standing (limp, facing the sphere),
/// from 1 m away. Runs `seconds`; gap_late counts from 1 s.
int sim_impact_sphere(const sim_library* lib, sim_solver solver, sim_char_solver chars,
                      float radius, float mass, float speed, float seconds,
                      sim_impact_figures* out);
