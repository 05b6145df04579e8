/*
 * cloth.c: builds a cloth, a cols × rows particle grid with structural,
 * shear and bend distance constraints (seed 000 §6 and §8), optionally
 * pinned along its top row or left column, laid out along any two
 * perpendicular directions; and names the grid's triangles (two per quad),
 * which the air acts on (wind.c).
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
    d.across = v3(1.0f, 0.0f, 0.0f);
    d.down = v3(0.0f, -1.0f, 0.0f);
    d.thickness = 0.0f; // 0.8 × spacing
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
        !sim_is_finite(def->bend_compliance) || !sim_is_finite(def->tear_ratio) ||
        !sim_vec3_is_finite(def->across) || !sim_vec3_is_finite(def->down) ||
        !sim_is_finite(def->thickness)) {
        return SIM_E_NOT_FINITE;
    }
    if (def->tear_ratio != 0.0f && !(def->tear_ratio >= 1.01f && def->tear_ratio <= 100.0f)) {
        return SIM_E_OUT_OF_RANGE;
    }
    // The axes: unit and perpendicular, within 1e-3.
    if (fabsf(v3_len(def->across) - 1.0f) > 1e-3f || fabsf(v3_len(def->down) - 1.0f) > 1e-3f ||
        fabsf(v3_dot(def->across, def->down)) > 1e-3f ||
        (def->thickness != 0.0f && def->thickness < SIM_MIN_LENGTH) || def->thickness < 0.0f ||
        def->thickness > 1.0f) {
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
    const sim_vec3 du = v3_scale(def->across, def->spacing);
    const sim_vec3 dv = v3_scale(def->down, def->spacing);
    // The grid is a parallelogram: its four corners in the world, all of it is.
    sim_vec3 right = v3_add(def->origin, v3_scale(du, (float)(def->cols - 1)));
    sim_vec3 below = v3_add(def->origin, v3_scale(dv, (float)(def->rows - 1)));
    sim_vec3 far = v3_add(right, v3_scale(dv, (float)(def->rows - 1)));
    if (!sim_world_contains(w, def->origin) || !sim_world_contains(w, right) ||
        !sim_world_contains(w, below) || !sim_world_contains(w, far)) {
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
    e->self_collision = def->self_collision;
    // 0 asks for 0.8 × spacing: enough that no particle slips through the
    // middle of a triangle (sim_cloth_def.thickness), within [SIM_MIN_LENGTH, 1].
    e->thickness = def->thickness;
    if (e->thickness == 0.0f) {
        e->thickness = fminf(fmaxf(0.8f * def->spacing, SIM_MIN_LENGTH), 1.0f);
    }
    // Grid pairs within a Chebyshev distance of self_hops are skipped: their
    // rest distance, at least spacing × hops, may be under the thickness, and
    // the constraints already keep them apart. Pairs further out are at least
    // (self_hops + 1) × spacing > thickness apart at rest.
    e->self_hops = 2;
    while ((float)e->self_hops * def->spacing < e->thickness) {
        e->self_hops++;
    }
    for (uint32_t y = 0; y < R; ++y) {
        for (uint32_t x = 0; x < C; ++x) {
            sim_vec3 p =
                v3_add(def->origin, v3_add(v3_scale(du, (float)x), v3_scale(dv, (float)y)));
            bool pinned = (y == 0 && def->pin_top) || (x == 0 && def->pin_left);
            float inv_mass = pinned ? 0.0f : 1.0f / def->mass;
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

void sim_cloth_triangle(uint32_t cols, uint32_t t, uint32_t out[3]) {
    const uint32_t q = t / 2, x = q % (cols - 1), y = q / (cols - 1);
    const uint32_t i = y * cols + x;
    out[0] = i;
    if ((t & 1u) == 0) {
        out[1] = i + 1;
        out[2] = i + cols + 1;
    } else {
        out[1] = i + cols + 1;
        out[2] = i + cols;
    }
}

uint32_t sim_cloth_triangle_count(uint32_t cols, uint32_t rows) {
    return cols < 2 || rows < 2 ? 0 : 2 * (cols - 1) * (rows - 1);
}
