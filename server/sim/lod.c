/*
 * lod.c: level of detail by viewer interest (seed 000 §10): cloth and ropes
 * far from every point viewers look at run fewer iterations, and beyond a
 * distance freeze until a focus comes near.
 *
 * Soft bodies too; a frozen soft body is left out of the soft-body contacts
 * (softbody.c), so one still stepping does not meet it (both are far from
 * every viewer).
 *
 * The seed's numbers: full detail within 15 m, 2 iterations beyond, frozen
 * beyond 40 m. Distances are from the entity's particles' bounding box (as
 * of the start of the tick), so a long rope or a big sheet whose near end is
 * in view is stepped in full. A frozen entity is skipped by every particle
 * loop of the substep (step.c, particle.c, collide.c, garment.c): its
 * positions and previous positions stay as they were, so it resumes with
 * the velocity it froze with.
 */
#include "vec.h"
#include "world.h"

const char* sim_lod_name(sim_lod lod) {
    switch (lod) {
    case SIM_LOD_FULL:
        return "full";
    case SIM_LOD_REDUCED:
        return "reduced";
    case SIM_LOD_FROZEN:
        return "frozen";
    }
    return "full";
}

int sim_world_set_foci(sim_world* w, const sim_vec3* points, uint32_t count) {
    if (w == NULL || (points == NULL && count > 0)) {
        return SIM_E_INVALID_ARG;
    }
    count = count < SIM_MAX_FOCI ? count : SIM_MAX_FOCI;
    for (uint32_t i = 0; i < count; ++i) {
        if (!sim_vec3_is_finite(points[i])) {
            return SIM_E_NOT_FINITE;
        }
    }
    for (uint32_t i = 0; i < count; ++i) {
        w->foci[i] = points[i];
    }
    w->focus_count = count;
    return SIM_OK;
}

sim_lod sim_entity_lod(const sim_world* w, sim_entity_id id) {
    const sim__entity* e = sim__entity_get(w, id);
    return e != NULL ? (sim_lod)e->lod : SIM_LOD_FULL;
}

// Distance from p to the box [lo, hi] (0 inside).
static float box_distance(sim_vec3 lo, sim_vec3 hi, sim_vec3 p) {
    float dx = fmaxf(fmaxf(lo.x - p.x, p.x - hi.x), 0.0f);
    float dy = fmaxf(fmaxf(lo.y - p.y, p.y - hi.y), 0.0f);
    float dz = fmaxf(fmaxf(lo.z - p.z, p.z - hi.z), 0.0f);
    return sqrtf(dx * dx + dy * dy + dz * dz);
}

static bool dragged(const sim_world* w, const sim__entity* e) {
    for (uint32_t k = 0; k < w->drag_count; ++k) {
        const sim__entity* d = sim__entity_get(w, w->drags[k].entity);
        if (d == e) {
            return true;
        }
    }
    return false;
}

void sim__lod_update(sim_world* w) {
    const int full = w->params.iterations;
    const int reduced = full < SIM_LOD_ITERATIONS ? full : SIM_LOD_ITERATIONS;
    for (uint32_t k = 0; k < w->order_count; ++k) {
        sim__entity* e = &w->entities[w->order[k]];
        e->lod = SIM_LOD_FULL;
        e->iterations = (uint8_t)full;
        const bool lod_kind = e->kind == SIM_ENTITY_CLOTH || e->kind == SIM_ENTITY_ROPE ||
                              e->kind == SIM_ENTITY_SOFTBODY;
        if (w->focus_count == 0 || !lod_kind || e->p_count == 0) {
            continue;
        }
        sim_vec3 lo, hi;
        sim__particle_bounds(w, e, &lo, &hi, NULL);
        float nearest = INFINITY;
        for (uint32_t f = 0; f < w->focus_count; ++f) {
            nearest = fminf(nearest, box_distance(lo, hi, w->foci[f]));
        }
        if (nearest <= SIM_LOD_NEAR) {
            continue;
        }
        const bool may_freeze = e->garment == SIM_GARMENT_NONE && !dragged(w, e);
        if (nearest > SIM_LOD_FREEZE && may_freeze) {
            e->lod = SIM_LOD_FROZEN;
            e->iterations = 0;
            w->stats.frozen_entities++;
            w->stats.frozen_particles += e->p_count;
        } else {
            e->lod = SIM_LOD_REDUCED;
            e->iterations = (uint8_t)reduced;
            w->stats.reduced_entities++;
        }
    }
}
