/*
 * step.c: one fixed tick of a world: characters before, rigid and particle
 * substeps interleaved, characters after, then quarantine of anything that
 * went non-finite or flew away.
 */
#include "rigid.h"
#include "vec.h"
#include "world.h"

#include <string.h>

// True when the entity's particles and bodies are finite, not absurdly far
// away and not faster than SIM_MAX_SPEED (a blow-up: issue 11).
static bool entity_is_sane(const sim_world* w, const sim__entity* e) {
    if (e->kind == SIM_ENTITY_CHARACTER && w->chars[e - w->entities].blown) {
        return false; // a REDUCED character's articulation blew up (reduced.c)
    }
    const float far = 10.0f * w->def.half_extent;
    // A particle's speed is its move over the last substep.
    const float step = SIM_MAX_SPEED * w->dt / (float)w->params.substeps;
    const float step2 = step * step, v2 = SIM_MAX_SPEED * SIM_MAX_SPEED;
    for (uint32_t i = e->p_first; i < e->p_first + e->p_count; ++i) {
        sim_vec3 p = w->pos[i], q = w->prev[i];
        // Written so that NaN fails every comparison and so the test.
        if (!(fabsf(p.x) <= far && fabsf(p.y) <= far && fabsf(p.z) <= far && fabsf(q.x) <= far &&
              fabsf(q.y) <= far && fabsf(q.z) <= far &&
              v3_dot(v3_sub(p, q), v3_sub(p, q)) <= step2)) {
            return false;
        }
    }
    for (uint32_t i = e->b_first; i < e->b_first + e->b_count; ++i) {
        if (sim__body_asleep(w, i)) {
            continue; // frozen since it was last found sane
        }
        const sim__body* b = &w->body[i];
        if (!(fabsf(b->x.x) <= far && fabsf(b->x.y) <= far && fabsf(b->x.z) <= far) ||
            !sim_is_finite(b->q.x) || !sim_is_finite(b->q.y) || !sim_is_finite(b->q.z) ||
            !sim_is_finite(b->q.w) || !(v3_dot(b->v, b->v) <= v2)) {
            return false;
        }
        if (!sim_vec3_is_finite(b->w)) {
            return false;
        }
    }
    return true;
}

// Removes entities that went non-finite or flew away, so one bad body cannot
// poison the rest of the world (DESIGN.md "Reliability").
static void quarantine(sim_world* w) {
    for (uint32_t k = 0; k < w->order_count;) {
        uint32_t slot = w->order[k];
        const sim__entity* e = &w->entities[slot];
        if (entity_is_sane(w, e)) {
            k++;
            continue;
        }
        sim_entity_id id = {slot + 1, e->generation};
        sim_world_despawn(w, id); // the next entity slides into position k
        sim__push_event(w, SIM_EVENT_UNSTABLE, id, SIM_CHAR_ANIMATED, w->tick);
        w->quarantined++;
    }
}

// The particle half of world substep: integrate, project, respond.
static void particles_substep(sim_world* w, float h) {
    const float inv_h2 = 1.0f / (h * h);
    const sim_vec3 g_h2 = v3_scale(w->params.gravity, h * h);
    sim__kinematic_advance(w, h);
    sim__garments_pin(w);
    sim__drags_move_pinned(w, h);
    sim__particles_integrate(w, g_h2);
    sim__wind_apply(w, h);
    // λ restarts every substep (Macklin et al. 2019, section 4).
    for (uint32_t j = 0; j < w->d_count; ++j) {
        w->dist[j].lambda = 0.0f;
    }
    sim__cloth_batches_reset(w);
    for (uint32_t j = 0; j < w->drag_count; ++j) {
        w->drags[j].lambda = 0.0f;
    }
    memset(w->contact, 0, w->p_count);
    memset(w->push, 0, w->p_count * sizeof *w->push);
    sim__softbodies_match(w, h); // once per substep (softbody.c)
    sim__particles_project_ahead(w, inv_h2);
    for (int it = 0; it < w->params.iterations; ++it) {
        sim__particles_project(w, inv_h2, it);
        sim__tethers_project(w, it);
        sim__drags_project(w, inv_h2);
        sim__self_collide_project(w, it);
        sim__softbodies_contacts(w);
        sim__collide_project(w, h, it);
    }
    sim__particles_joint_limits(w);
    sim__collide_respond(w, h);
    sim__tear(w);
}

static void finish_tick(sim_world* w) {
    sim__characters_post_tick(w);
    sim__garments_follow(w);
    sim__islands_sleep(w, w->dt);
    w->tick++;
    sim__impacts_end_tick(w);
    sim__limit_hits_end_tick(w);
    quarantine(w);
}

// A tick with the soft-step rigid solver (soft_step.c): the awake set is
// solved as one, SIM__SOFT_SUBSTEPS rigid substeps per tick spread over the
// world's substeps, the particles' substeps interleaved as with XPBD.
static void soft_tick(sim_world* w) {
    const int substeps = w->params.substeps;
    const int split = sim__soft_split(w);
    const float h = w->dt / (float)substeps;
    sim__soft_begin_tick(w);
    w->stats.awake_bodies = w->soft_body_count;
    w->stats.body_substeps = (uint64_t)w->soft_body_count * (uint64_t)(split * substeps);
    w->stats.max_substeps = (uint32_t)(split * substeps);
    for (int s = 0; s < substeps; ++s) {
        for (int r = 0; r < split; ++r) {
            sim__soft_substep(w);
        }
        particles_substep(w, h);
    }
    sim__soft_end_tick(w);
    w->stats.joint_projections = sim__soft_stabilize(w);
    finish_tick(w);
}

void sim_world_step(sim_world* w) {
    const int substeps = w->params.substeps;
    const float h = w->dt / (float)substeps;

    sim__characters_pre_tick(w, w->dt);
    sim__contacts_begin_tick(w, w->dt);
    sim__islands_build(w);
    memset(&w->stats, 0, sizeof w->stats);
    w->stats.islands = w->island_count;
    sim__lod_update(w);
    if (w->def.solver == SIM_SOLVER_SOFT_STEP) {
        soft_tick(w);
        return;
    }
    for (uint32_t k = 0; k < w->island_count; ++k) {
        const sim__island* isl = &w->islands[k];
        const uint32_t split = (uint32_t)sim__island_split(w, isl, substeps);
        w->stats.awake_bodies += isl->body_count;
        w->stats.body_substeps += (uint64_t)isl->body_count * split * (uint32_t)substeps;
        if (split * (uint32_t)substeps > w->stats.max_substeps) {
            w->stats.max_substeps = split * (uint32_t)substeps;
        }
    }
    for (int s = 0; s < substeps; ++s) {
        // Each island with its own split: they do not touch this tick.
        for (uint32_t k = 0; k < w->island_count; ++k) {
            const sim__island* isl = &w->islands[k];
            const int split = sim__island_split(w, isl, substeps);
            for (int r = 0; r < split; ++r) {
                sim__island_substep(w, isl, h / (float)split);
            }
            if (s == substeps - 1) {
                sim__island_stabilize(w, isl, SIM__STABILIZE_PASSES);
            }
        }
        particles_substep(w, h);
    }
    finish_tick(w);
}
