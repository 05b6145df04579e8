/*
 * impact.c: bodies striking things (sim.h, sim_impact): the solvers note
 * each contact that pushed and whose points were closing fast before the
 * solve (soft_step.c at the end of its tick, contact.c in the XPBD velocity
 * pass); a tick keeps the fastest point of each pair, at most
 * SIM_MAX_IMPACTS_PER_TICK pairs, the fastest; at the end of the tick they
 * go to a ring the server drains. Box2D v3 reports its hit events the same
 * way (the approach speed at the start of the step, when the contact gave
 * an impulse).
 */
#include "rigid.h"
#include "vec.h"
#include "world.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

// The pair's ends as entity and bone; false for a body that is no one's
// (never: every body belongs to a character or a ball).
static void body_end(const sim_world* w, uint32_t i, sim_entity_id* id, uint32_t* bone) {
    const sim__body_info* bi = &w->binfo[i];
    *id = (sim_entity_id){bi->slot + 1, w->entities[bi->slot].generation};
    *bone = bi->bone;
}

static bool same_pair(const sim_impact* x, const sim_impact* y) {
    if (x->with != y->with) {
        return false;
    }
    const bool a_same = x->a.index1 == y->a.index1 && x->bone_a == y->bone_a;
    switch (x->with) {
    case SIM_IMPACT_GROUND:
        return a_same;
    case SIM_IMPACT_BOX:
        return a_same && x->box == y->box;
    case SIM_IMPACT_BODY:
        return (a_same && x->b.index1 == y->b.index1 && x->bone_b == y->bone_b) ||
               (x->a.index1 == y->b.index1 && x->bone_a == y->bone_b &&
                x->b.index1 == y->a.index1 && x->bone_b == y->bone_a);
    }
    return false;
}

uint32_t sim__static_code_at(const sim_world* w, sim_vec3 p) {
    for (uint32_t k = 0; k < w->box_count; ++k) {
        const sim_box* b = &w->boxes[k];
        const sim_vec3 d = v3_sub(p, b->center);
        if (fabsf(d.x) <= b->half_extents.x + 1e-3f && fabsf(d.y) <= b->half_extents.y + 1e-3f &&
            fabsf(d.z) <= b->half_extents.z + 1e-3f) {
            return SIM__CODE_BOX + k;
        }
    }
    return SIM__CODE_GROUND;
}

void sim__impact_note(sim_world* w, uint32_t ia, uint32_t ib, uint32_t code, sim_vec3 point,
                      sim_vec3 normal, float speed) {
    sim__reports* r = w->reports;
    if (!(speed >= SIM_IMPACT_MIN_SPEED) || r == NULL) {
        return;
    }
    sim_impact e;
    memset(&e, 0, sizeof e);
    body_end(w, ia, &e.a, &e.bone_a);
    if (ib != SIM__NO_BODY) {
        e.with = SIM_IMPACT_BODY;
        body_end(w, ib, &e.b, &e.bone_b);
    } else if (code < SIM__CODE_GROUND) {
        e.with = SIM_IMPACT_BODY; // a body not solved this tick (asleep): its index
        body_end(w, code, &e.b, &e.bone_b);
    } else if (code == SIM__CODE_GROUND) {
        e.with = SIM_IMPACT_GROUND;
    } else {
        e.with = SIM_IMPACT_BOX;
        e.box = code - SIM__CODE_BOX;
    }
    e.point = point;
    e.normal = normal;
    e.speed = speed;
    // The pair's fastest point; else a new pair; else the slowest gives way.
    uint32_t slowest = 0;
    for (uint32_t k = 0; k < r->impacts_tick_count; ++k) {
        sim_impact* x = &r->impacts_tick[k];
        if (same_pair(x, &e)) {
            if (e.speed > x->speed) {
                *x = e;
            }
            return;
        }
        if (x->speed < r->impacts_tick[slowest].speed) {
            slowest = k;
        }
    }
    if (r->impacts_tick_count < SIM_MAX_IMPACTS_PER_TICK) {
        r->impacts_tick[r->impacts_tick_count++] = e;
    } else {
        r->impacts_dropped++;
        if (e.speed > r->impacts_tick[slowest].speed) {
            r->impacts_tick[slowest] = e;
        }
    }
}

static int faster_first(const void* x, const void* y) {
    const float a = ((const sim_impact*)x)->speed, b = ((const sim_impact*)y)->speed;
    return (a < b) - (a > b);
}

void sim__impacts_end_tick(sim_world* w) {
    sim__reports* r = w->reports;
    if (r == NULL) {
        return;
    }
    const uint32_t n = r->impacts_tick_count;
    qsort(r->impacts_tick, n, sizeof *r->impacts_tick, faster_first);
    for (uint32_t k = 0; k < n; ++k) {
        r->impacts_tick[k].tick = w->tick;
        sim__ring_push(&r->impact_ring, &r->impacts_tick[k]);
    }
    r->impact_ring.dropped += r->impacts_dropped;
    r->impacts_dropped = 0;
    r->impacts_tick_count = 0;
}

uint32_t sim_world_drain_impacts(sim_world* w, sim_impact* out, uint32_t cap, uint64_t* dropped) {
    if (w->reports == NULL) {
        if (dropped != NULL) {
            *dropped = 0;
        }
        return 0;
    }
    return sim__ring_drain(&w->reports->impact_ring, out, cap, dropped);
}
