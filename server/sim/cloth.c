/*
 * cloth.c: builds a cloth, a cols × rows particle grid with structural,
 * shear and bend distance constraints (seed 000 §6 and §8), optionally
 * pinned along its top row.
 *
 * Constraint order is the Gauss-Seidel sweep order: structural first (row by
 * row, right then down), then shear, then bend, so the constraints that
 * carry the load converge first.
 */
#include "vec.h"
#include "world.h"

#include <string.h>

#define SIM__CLOTH_COOKIE   0x434c4f54u /* "CLOT" */
#define SIM__MAX_CLOTH_SIDE 256u

sim_cloth_def sim_cloth_def_default(void) {
    sim_cloth_def d;
    memset(&d, 0, sizeof d);
    d.cols = 12;
    d.rows = 10;
    d.spacing = 0.2f;
    d.pin_top = true;
    d.mass = 1.0f;
    d.radius = 0.01f;
    d.cookie = SIM__CLOTH_COOKIE;
    return d;
}

// Number of constraints of each family for a grid.
static uint32_t cloth_constraint_count(uint32_t c, uint32_t r) {
    uint32_t structural = (c - 1) * r + c * (r - 1);
    uint32_t shear = 2 * (c - 1) * (r - 1);
    uint32_t bend = (c > 2 ? (c - 2) * r : 0) + (r > 2 ? c * (r - 2) : 0);
    return structural + shear + bend;
}

int sim_world_spawn_cloth(sim_world* w, const sim_cloth_def* def, sim_entity_id* out) {
    if (def == NULL || out == NULL || def->cookie != SIM__CLOTH_COOKIE) {
        return SIM_E_INVALID_ARG;
    }
    if (!sim_vec3_is_finite(def->origin) || !sim_is_finite(def->spacing) ||
        !sim_is_finite(def->mass) || !sim_is_finite(def->radius) ||
        !sim_is_finite(def->stretch_compliance) || !sim_is_finite(def->shear_compliance) ||
        !sim_is_finite(def->bend_compliance) || !sim_is_finite(def->tear_ratio)) {
        return SIM_E_NOT_FINITE;
    }
    if (def->tear_ratio != 0.0f && !(def->tear_ratio >= 1.01f && def->tear_ratio <= 100.0f)) {
        return SIM_E_OUT_OF_RANGE;
    }
    if (def->cols < 2 || def->rows < 2 || def->spacing < SIM_MIN_LENGTH ||
        def->spacing > SIM_MAX_LENGTH || def->mass < SIM_MIN_MASS || def->mass > SIM_MAX_MASS ||
        def->radius < 0.0f || def->radius > 1.0f || def->stretch_compliance < 0.0f ||
        def->shear_compliance < 0.0f || def->bend_compliance < 0.0f) {
        return SIM_E_OUT_OF_RANGE;
    }
    if (def->cols > SIM__MAX_CLOTH_SIDE || def->rows > SIM__MAX_CLOTH_SIDE) {
        return SIM_E_CAPACITY;
    }
    sim_vec3 far = v3_add(def->origin, v3(def->spacing * (float)(def->cols - 1),
                                          -def->spacing * (float)(def->rows - 1), 0.0f));
    if (!sim_world_contains(w, def->origin) || !sim_world_contains(w, far)) {
        return SIM_E_OUT_OF_RANGE;
    }

    const uint32_t C = def->cols, R = def->rows;
    sim__entity* e;
    int rc = sim__entity_begin(w, SIM_ENTITY_CLOTH, C * R, cloth_constraint_count(C, R), 0, 0, 0,
                               out, &e);
    if (rc != SIM_OK) {
        return rc;
    }
    e->cols = C;
    e->rows = R;
    for (uint32_t y = 0; y < R; ++y) {
        for (uint32_t x = 0; x < C; ++x) {
            sim_vec3 p =
                v3_add(def->origin, v3(def->spacing * (float)x, -def->spacing * (float)y, 0.0f));
            float inv_mass = (y == 0 && def->pin_top) ? 0.0f : 1.0f / def->mass;
            sim__particle_init(w, e->p_first + y * C + x, p, inv_mass, def->radius);
        }
    }

    uint32_t k = e->d_first;
    for (uint32_t y = 0; y < R; ++y) {
        for (uint32_t x = 0; x < C; ++x) {
            uint32_t i = y * C + x;
            if (x + 1 < C) {
                sim__dist_init(w, e, k++, i, i + 1, SIM__DIST_EQUAL, 1.0f, def->stretch_compliance);
            }
            if (y + 1 < R) {
                sim__dist_init(w, e, k++, i, i + C, SIM__DIST_EQUAL, 1.0f, def->stretch_compliance);
            }
        }
    }
    for (uint32_t y = 0; y + 1 < R; ++y) {
        for (uint32_t x = 0; x + 1 < C; ++x) {
            uint32_t i = y * C + x;
            sim__dist_init(w, e, k++, i, i + C + 1, SIM__DIST_EQUAL, 1.0f, def->shear_compliance);
            sim__dist_init(w, e, k++, i + 1, i + C, SIM__DIST_EQUAL, 1.0f, def->shear_compliance);
        }
    }
    for (uint32_t y = 0; y < R; ++y) {
        for (uint32_t x = 0; x < C; ++x) {
            uint32_t i = y * C + x;
            if (x + 2 < C) {
                sim__dist_init(w, e, k++, i, i + 2, SIM__DIST_EQUAL, 1.0f, def->bend_compliance);
            }
            if (y + 2 < R) {
                sim__dist_init(w, e, k++, i, i + 2 * C, SIM__DIST_EQUAL, 1.0f,
                               def->bend_compliance);
            }
        }
    }
    e->stick_count = e->d_count;
    if (def->long_range) {
        sim__tethers_build(w, e);
    }
    e->tear_ratio = def->tear_ratio;
    // Blocks of four for the relaxation passes; a cloth they do not fit
    // keeps the sequential loop, which gives the same results.
    (void)sim__cloth_batches_rebuild(w, e);
    return SIM_OK;
}
