/*
 * softbody.h: private state of soft bodies (softbody.c), shared with the
 * world's layout (world.h), the step (step.c) and the unit tests.
 *
 * A soft body is a lattice of particles in the world's particle arrays
 * held to its rest shape by shape matching (Müller, Heidelberger, Teschner,
 * Gross 2005, "Meshless Deformations Based on Shape Matching", §3.3 and
 * §4.1), the rotation extracted by the quaternion method of Müller,
 * Bender, Chentanez, Macklin 2016 ("A Robust Method to Extract the
 * Rotational Part of Deformations", Algorithm 1), warm-started from the
 * previous substep. Units SI, +Y up.
 */
#pragma once

#include "sim.h"

#include <stdint.h>

/// Most particles along one edge of a soft body's lattice.
#define SIM__SOFTBODY_MAX_RES 16u
/// Most quaternion iterations of one polar decomposition (a cold start from
/// 3 rad converges to 1e-6 rad in about 20; a warm start takes 1-3).
#define SIM__POLAR_MAX_ITERS 40
/// The polar iteration stops when its rotation step is below this, rad.
#define SIM__POLAR_TOL 1.0e-6f
/// The step whose shape-matching fraction `stiffness` names, s (1/60 s).
#define SIM__SOFTBODY_H_REF (1.0f / 60.0f)

/// Per-entity state of a soft body, by entity slot (world.h `softs`): slots
/// never move, so it survives other entities' despawn. 120 bytes.
typedef struct sim__softbody {
    sim_quat q;       ///< Rotation of the last fit (warm start), unit.
    sim_vec3 c;       ///< Centroid of the last fit, m.
    float aqq_inv[9]; ///< (Σ q_i q_iᵀ)⁻¹ of the rest offsets, row-major, m⁻².
    float stiffness;  ///< Shape-matching stiffness, (0, 1] (sim_softbody_def).
    float pressure;   ///< Volume term's stiffness, [0, 1]; 0 is off.
    float vol_g0; ///< Σ w_i |Aqq⁻¹ q_i|² at rest (the volume term's scale), kg⁻¹·m⁻².
    float volume_ratio;   ///< det F of the last fit (1 at rest volume).
    float size;           ///< Edge (box) or diameter (sphere), m.
    uint32_t shape;       ///< sim_softbody_shape.
    uint32_t resolution;  ///< Lattice points per edge.
    uint32_t polar_iters; ///< Quaternion iterations of the last fit.
    sim_vec3 lo, hi;      ///< Bounds of its particle centres in the last contact pass, m (scratch).
} sim__softbody;

struct sim_world;

/// The rotation R maximising tr(Rᵀ A) (the rotational part of A's polar
/// decomposition when det A > 0), by Müller et al. 2016 Algorithm 1
/// starting from q0: ω = Σ_k r_k × a_k / (|Σ_k r_k · a_k| + 1e-9), q ←
/// exp(ω) q, until |ω| < SIM__POLAR_TOL or max_iters iterations (r_k, a_k
/// the columns of R(q) and A). A is row-major. The result is always a unit
/// quaternion, so R is a proper rotation whatever A is (even singular or
/// reflected). *iters (may be NULL) gets the iterations used.
sim_quat sim__polar_rotation(const float a[9], sim_quat q0, int max_iters, int* iters);

/// Shape matching of every soft body, once per substep of length h (after
/// integration, before the relaxation passes): the fit (centroid c,
/// A = Σ (x_i − c) q_iᵀ, R by sim__polar_rotation warm-started), then each
/// particle moved toward its goal g_i = R q_i + c as a zero-length XPBD
/// constraint (see sim_softbody_def.stiffness), then the optional volume
/// term. Conserves linear momentum (equal masses, the same fraction for
/// every particle). Never allocates.
void sim__softbodies_match(struct sim_world* w, float h);

/// One pass of particle–particle contacts between particles of different
/// soft bodies (spheres of their radii, the radii summed), found with a
/// spatial hash rebuilt each call (Teschner et al. 2003; cells of twice the
/// largest contact distance, 8 cells looked up per particle), only for the
/// particles inside the padded bounds of a later soft body that meets their
/// own; corrections split by inverse mass, with position-level static and
/// kinetic friction (the world's friction). Called once per relaxation
/// pass. Nothing when the world holds fewer than two soft bodies. Never
/// allocates.
void sim__softbodies_contacts(struct sim_world* w);

/// Copies a soft body's surface sticks (sim_world_spawn_softbody()) into
/// pairs (local particle indices), at most cap pairs; returns how many.
/// `slot` is the entity's slot. Uses 8 KiB of stack.
uint32_t sim__softbody_copy_sticks(const struct sim_world* w, uint32_t slot, uint32_t* pairs,
                                   uint32_t cap);
