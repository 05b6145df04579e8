/*
 * interact.c: what a command does to particles between ticks: impulses,
 * drags (a soft pull toward a target) and their release, and the drags'
 * projection inside a substep.
 */
#include "rigid.h"
#include "vec.h"
#include "world.h"

#include <string.h>

// Compliance of the drag constraint, m/N. A 1 kg particle lags its target by
// about 1 mm per 10 N of load, stiff enough to throw a ragdoll by one hand.
#define SIM__DRAG_COMPLIANCE 1.0e-4f

static int particle_lookup(const sim_world* w, sim_entity_id id, uint32_t particle,
                           sim__entity** out) {
    sim__entity* e = sim__entity_get(w, id);
    if (e == NULL) {
        return SIM_E_STALE_ID;
    }
    if (particle >= e->p_count) {
        return SIM_E_BAD_INDEX;
    }
    *out = e;
    return SIM_OK;
}

int sim_entity_apply_impulse(sim_world* w, sim_entity_id id, uint32_t particle, sim_vec3 impulse) {
    sim__entity* e;
    int rc = particle_lookup(w, id, particle, &e);
    if (rc != SIM_OK) {
        return rc;
    }
    if (!sim_vec3_is_finite(impulse)) {
        return SIM_E_NOT_FINITE;
    }
    if (fabsf(impulse.x) > SIM_MAX_IMPULSE || fabsf(impulse.y) > SIM_MAX_IMPULSE ||
        fabsf(impulse.z) > SIM_MAX_IMPULSE) {
        return SIM_E_OUT_OF_RANGE;
    }
    uint32_t i = e->p_first + particle;
    float h = w->dt / (float)w->params.substeps;
    // Δv = J·w; in Verlet form the previous position moves back by Δv·h.
    sim_vec3 dv = v3_scale(impulse, w->inv_mass[i]);
    w->prev[i] = v3_sub(w->prev[i], v3_scale(dv, h));
    return SIM_OK;
}

int sim_entity_drag(sim_world* w, sim_entity_id id, uint32_t particle, sim_vec3 target) {
    sim__entity* e;
    int rc = particle_lookup(w, id, particle, &e);
    if (rc != SIM_OK) {
        return rc;
    }
    if (!sim_vec3_is_finite(target)) {
        return SIM_E_NOT_FINITE;
    }
    if (!sim_world_contains(w, target)) {
        return SIM_E_OUT_OF_RANGE;
    }
    if (w->tie[e->p_first + particle].bone != SIM__NO_BONE) {
        return SIM_E_BAD_STATE; // a garment's pinned row follows its bone
    }
    for (uint32_t i = 0; i < w->drag_count; ++i) {
        sim__drag* g = &w->drags[i];
        if (g->entity.index1 == id.index1 && g->particle == particle) {
            g->target = target;
            return SIM_OK;
        }
    }
    if (w->drag_count >= w->def.max_drags) {
        return SIM_E_CAPACITY;
    }
    sim__drag* g = &w->drags[w->drag_count++];
    g->entity = id;
    g->particle = particle;
    g->target = target;
    g->lambda = 0.0f;
    return SIM_OK;
}

int sim_entity_release(sim_world* w, sim_entity_id id, uint32_t particle) {
    sim__entity* e;
    int rc = particle_lookup(w, id, particle, &e);
    if (rc != SIM_OK) {
        return rc;
    }
    for (uint32_t i = 0; i < w->drag_count; ++i) {
        sim__drag* g = &w->drags[i];
        if (g->entity.index1 == id.index1 && g->particle == particle) {
            memmove(g, g + 1, (w->drag_count - i - 1) * sizeof *g);
            w->drag_count--;
            break;
        }
    }
    return SIM_OK;
}

int sim_entity_particle_velocity(const sim_world* w, sim_entity_id id, uint32_t particle,
                                 sim_vec3* out) {
    sim__entity* e;
    int rc = particle_lookup(w, id, particle, &e);
    if (rc != SIM_OK) {
        return rc;
    }
    uint32_t i = e->p_first + particle;
    float h = w->dt / (float)w->params.substeps;
    *out = v3_scale(v3_sub(w->pos[i], w->prev[i]), 1.0f / h);
    return SIM_OK;
}

// Projects the drags: a zero-rest-length XPBD constraint toward the target
// (the static "other end" has inverse mass 0). A pinned particle follows the
// target kinematically, with prev set too so it carries no velocity kick.
void sim__drags_move_pinned(sim_world* w, float h) {
    const float step = SIM__PIN_DRAG_SPEED * h;
    for (uint32_t k = 0; k < w->drag_count; ++k) {
        const sim__drag* g = &w->drags[k];
        const sim__entity* e = sim__entity_get(w, g->entity);
        uint32_t i = e->p_first + g->particle;
        if (w->inv_mass[i] != 0.0f) {
            continue;
        }
        // At most SIM__PIN_DRAG_SPEED toward the target: a pinned particle
        // that jumped would yank what hangs from it (its constraints and
        // long-range attachments) as fast, and fling it when it tore.
        sim_vec3 d = v3_sub(g->target, w->pos[i]);
        float c = v3_len(d);
        w->prev[i] = w->pos[i];
        w->pos[i] = c <= step ? g->target : v3_add(w->pos[i], v3_scale(d, step / c));
    }
}

void sim__drags_project(sim_world* w, float inv_h2) {
    const float alpha = SIM__DRAG_COMPLIANCE * inv_h2;
    for (uint32_t k = 0; k < w->drag_count; ++k) {
        sim__drag* g = &w->drags[k];
        const sim__entity* e = sim__entity_get(w, g->entity);
        uint32_t i = e->p_first + g->particle;
        float wi = w->inv_mass[i];
        if (wi == 0.0f) {
            continue; // moved once a substep (sim__drags_move_pinned)
        }
        sim_vec3 d = v3_sub(g->target, w->pos[i]);
        float c = v3_len(d);
        if (c < 1e-9f) {
            continue;
        }
        float dl = (c - alpha * g->lambda) / (wi + alpha);
        g->lambda += dl;
        w->pos[i] = v3_add(w->pos[i], v3_scale(d, wi * dl / c));
    }
}
