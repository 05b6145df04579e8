/*
 * rope.c: builds a rope, a chain of particles joined by distance
 * constraints, optionally pinned at its first particle (seed 000 §7).
 */
#include "vec.h"
#include "world.h"

#include <string.h>

#define SIM__ROPE_COOKIE       0x524f5045u /* "ROPE" */
#define SIM__MAX_ROPE_SEGMENTS 1000u

sim_rope_def sim_rope_def_default(void) {
    sim_rope_def d;
    memset(&d, 0, sizeof d);
    d.direction = v3(1.0f, 0.0f, 0.0f);
    d.segments = 10;
    d.segment_length = 0.1f;
    d.mass = 1.0f;
    d.radius = 0.02f;
    d.compliance = 0.0f;
    d.pin_first = true;
    d.cookie = SIM__ROPE_COOKIE;
    return d;
}

int sim_world_spawn_rope(sim_world* w, const sim_rope_def* def, sim_entity_id* out) {
    if (def == NULL || out == NULL || def->cookie != SIM__ROPE_COOKIE) {
        return SIM_E_INVALID_ARG;
    }
    if (!sim_vec3_is_finite(def->anchor) || !sim_vec3_is_finite(def->direction) ||
        !sim_is_finite(def->segment_length) || !sim_is_finite(def->mass) ||
        !sim_is_finite(def->radius) || !sim_is_finite(def->compliance)) {
        return SIM_E_NOT_FINITE;
    }
    sim_vec3 dir = v3_normalize(def->direction);
    if (def->segments < 1 || def->segments > SIM__MAX_ROPE_SEGMENTS ||
        def->segment_length < SIM_MIN_LENGTH || def->segment_length > SIM_MAX_LENGTH ||
        def->mass < SIM_MIN_MASS || def->mass > SIM_MAX_MASS || def->radius < 0.0f ||
        def->radius > 1.0f || def->compliance < 0.0f || v3_dot(dir, dir) < 0.5f) {
        return SIM_E_OUT_OF_RANGE;
    }
    sim_vec3 tip = v3_add(def->anchor, v3_scale(dir, def->segment_length * (float)def->segments));
    if (!sim_world_contains(w, def->anchor) || !sim_world_contains(w, tip)) {
        return SIM_E_OUT_OF_RANGE;
    }

    uint32_t n = def->segments + 1;
    sim__entity* e;
    int rc = sim__entity_begin(w, SIM_ENTITY_ROPE, n, def->segments, 0, 0, 0, out, &e);
    if (rc != SIM_OK) {
        return rc;
    }
    for (uint32_t i = 0; i < n; ++i) {
        sim_vec3 p = v3_add(def->anchor, v3_scale(dir, def->segment_length * (float)i));
        float inv_mass = (i == 0 && def->pin_first) ? 0.0f : 1.0f / def->mass;
        sim__particle_init(w, e->p_first + i, p, inv_mass, def->radius);
    }
    for (uint32_t i = 0; i < def->segments; ++i) {
        sim__dist_init(w, e, e->d_first + i, i, i + 1, SIM__DIST_EQUAL, 1.0f, def->compliance);
        // Use the requested length, not the float-rounded distance.
        w->dist[e->d_first + i].rest = def->segment_length;
    }
    e->stick_count = def->segments;
    return SIM_OK;
}
