/*
 * tear.c: cloth and ropes that tear (seed 000 §11: "ropes that can tear
 * (drop a constraint once it stretches past some threshold)").
 *
 * After each substep, every equality distance constraint of a tearable
 * entity stretched past tear_ratio × its rest length becomes
 * SIM__DIST_TORN: it is never projected again and is no longer a stick, so
 * the entity's topology changes (topo_version and the world's topo_epoch
 * move, clients are sent the new sticks) and a SIM_EVENT_TORN names the
 * entity; the torn pairs wait in w->torn for sim_world_drain_torn(). No
 * particle is removed: a tear separates the sheet along the torn sticks.
 * Shear and bend constraints across the tear stretch with it and tear too.
 * Long-range attachments of a torn entity are switched off: a piece torn
 * away must be free to fall, not held at its old distance from a pin.
 */
#include "vec.h"
#include "world.h"

#include <string.h>

int sim_entity_set_tear(sim_world* w, sim_entity_id id, float ratio) {
    sim__entity* e = sim__entity_get(w, id);
    if (e == NULL || (e->kind != SIM_ENTITY_CLOTH && e->kind != SIM_ENTITY_ROPE)) {
        return SIM_E_STALE_ID;
    }
    if (!sim_is_finite(ratio)) {
        return SIM_E_NOT_FINITE;
    }
    if (ratio != 0.0f && !(ratio >= 1.01f && ratio <= 100.0f)) {
        return SIM_E_OUT_OF_RANGE;
    }
    e->tear_ratio = ratio;
    return SIM_OK;
}

uint32_t sim_world_drain_torn(sim_world* w, sim_torn* out, uint32_t cap, uint32_t* dropped) {
    uint32_t n = w->torn_count < cap ? w->torn_count : cap;
    if (out == NULL) {
        n = w->torn_count;
    } else {
        memcpy(out, w->torn, n * sizeof *out);
    }
    memmove(w->torn, w->torn + n, (w->torn_count - n) * sizeof *w->torn);
    w->torn_count -= n;
    if (dropped != NULL) {
        *dropped = w->torn_count == 0 ? w->torn_dropped : 0;
    }
    if (w->torn_count == 0) {
        w->torn_dropped = 0;
    }
    return n;
}

// Records on a grid cloth's particles that the edge between local
// particles a and b tore, if it is one of a triangle's (sim__tie.torn).
static void mark_torn_edge(sim_world* w, const sim__entity* e, uint32_t a, uint32_t b) {
    if (e->cols == 0) {
        return;
    }
    if (b < a) {
        uint32_t t = a;
        a = b;
        b = t;
    }
    const uint32_t C = e->cols, ra = a / C, ca = a % C, rb = b / C, cb = b % C;
    uint8_t bit = 0;
    if (rb == ra && cb == ca + 1u) {
        bit = SIM__TORN_RIGHT;
    } else if (rb == ra + 1u && cb == ca) {
        bit = SIM__TORN_DOWN;
    } else if (rb == ra + 1u && cb == ca + 1u) {
        bit = SIM__TORN_DIAG;
    }
    w->tie[e->p_first + a].torn |= bit;
}

void sim__tear(sim_world* w) {
    for (uint32_t k = 0; k < w->order_count; ++k) {
        sim__entity* e = &w->entities[w->order[k]];
        if (e->tear_ratio == 0.0f || e->iterations == 0) {
            continue;
        }
        const sim_vec3* pos = w->pos + e->p_first;
        sim__dist* d = w->dist + e->d_first;
        const float r2 = e->tear_ratio * e->tear_ratio;
        uint32_t torn = 0;
        for (uint32_t j = 0; j < e->d_count; ++j) {
            if (d[j].kind != SIM__DIST_EQUAL) {
                continue;
            }
            sim_vec3 v = v3_sub(pos[d[j].b], pos[d[j].a]);
            if (v3_dot(v, v) <= r2 * d[j].rest * d[j].rest) {
                continue;
            }
            d[j].kind = SIM__DIST_TORN;
            mark_torn_edge(w, e, d[j].a, d[j].b);
            if (w->torn_count < SIM_MAX_TORN) {
                sim_torn* t = &w->torn[w->torn_count++];
                t->entity = (sim_entity_id){w->order[k] + 1, e->generation};
                t->a = d[j].a;
                t->b = d[j].b;
                t->tick = w->tick + 1;
            } else {
                w->torn_dropped++;
            }
            torn++;
        }
        if (torn > 0) {
            // The blocks of four hold copies of the sticks: pack them again
            // without the torn ones (no allocation; sequential if they do
            // not fit, with the same results).
            (void)sim__cloth_batches_rebuild(w, e);
            e->stick_count -= torn;
            e->topo_version++;
            e->tethered = false;
            w->topo_epoch++;
            sim_entity_id id = {w->order[k] + 1, e->generation};
            sim__push_event(w, SIM_EVENT_TORN, id, SIM_CHAR_ANIMATED, w->tick + 1);
        }
    }
}
