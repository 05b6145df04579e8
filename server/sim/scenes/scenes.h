/*
 * scenes.h: reference scenes shared by the demo world, the unit tests, the
 * benchmarks and the fuzz seeds (Box2D's shared/), so every suite exercises
 * the same worlds. Each function adds content to an existing world and
 * returns 0 or a negative SIM_E_* code from the call that failed.
 */
#pragma once

#include "sim.h"

/// World def of seed 000 §7's rope test: g = (0, -9.8, 0), dt = 1/60, one
/// substep, 5 relaxation passes, no damping, no ground, no bounce.
sim_world_def sim_scene_seed_rope_world_def(void);

/// Seed 000 §7's rope: 6 particles 0.5 m apart on the +X axis from the
/// origin, at rest, particle 0 pinned, 1 kg each. *out names it.
int sim_scene_seed_rope(sim_world* w, sim_entity_id* out);

/// Seed 000 §8's cloth: 12 × 10 particles at 0.2 m, top row pinned, hanging
/// in the XY plane from (-1.1, 4, 0). *out names it.
int sim_scene_seed_cloth(sim_world* w, sim_entity_id* out);

/// A square n × n cloth at `spacing` with structural, shear and bend
/// constraints, top row pinned, hanging from y = top. Used by the benchmark.
int sim_scene_square_cloth(sim_world* w, uint32_t n, float spacing, float top, sim_entity_id* out);

/// An n × n cloth at `spacing` (20 g a particle, bend compliance 1e-4,
/// self-collision as asked at a thickness of 0.025 m × spacing / 0.03, so
/// 0.83 × spacing) held flat 5 cm above a bar 0.2 m wide and 4 cm tall
/// running along z under its middle, its top at y = 0.27 + n·spacing/2, and
/// let fall onto it: each half hangs from an edge of the bar, 0.2 m from
/// the other. The self-collision test's and the benchmark's scene; the
/// world should have 4 substeps. *out names the cloth.
int sim_scene_cloth_over_bar(sim_world* w, uint32_t n, float spacing, bool self_collision,
                             sim_entity_id* out);

/// Folds the cloth of sim_scene_cloth_over_bar() (call once it hangs, e.g.
/// at tick 20): its left 40 % of columns get 3 m/s towards +x, so the left
/// half swings in under the bar and through where the right half hangs.
int sim_scene_cloth_over_bar_fold(sim_world* w, sim_entity_id cloth);

/// The platforms of the demo world: two static boxes the ragdolls fall on.
int sim_scene_demo_platforms(sim_world* w);

/// The built-in demo world: the platforms, two particle ragdolls dropped
/// onto their edges, a rope, a cloth sheet pinned along its top edge and,
/// when the world's library has the skeletons, two humanoid characters and
/// a dog standing in front (idle).
int sim_scene_demo(sim_world* w);

/// The characters scene of the determinism checks, which uses every kind
/// of entity and every character command: four steps, a walking, an idle
/// and a staggering humanoid, a dog, an 8 × 8 cloth and a particle ragdoll;
/// at tick 20 the humanoids but the stagger and the dog are killed, at 40
/// one gets PD drives, one an arm made physical, and a ball is thrown; at
/// 240 the walker starts to get up. Steps the world `ticks` times (360 for
/// the hash tests/determinism pins). The world needs 4 substeps and a
/// library with the humanoid and dog skeletons and their clips.
int sim_scene_characters(sim_world* w, int ticks);

/// `n` humanoid ragdolls dropped in one spot (the benchmark's and the
/// sleep tests' pile): a stack of layers 1.9 m apart, each a square grid
/// 0.7 m apart with alternating facings, every one killed at once with a
/// horizontal push of up to 20 N·s at the chest from a generator seeded
/// with `seed`, so they tumble onto the ground and each other. The world
/// needs the humanoid skeleton and room for them. ids (NULL, or room for n)
/// gets their ids. Returns SIM_OK or the first spawn's or kill's error (the
/// ragdolls spawned before it stay).
int sim_scene_pile(sim_world* w, uint32_t n, uint32_t seed, sim_entity_id* ids);
