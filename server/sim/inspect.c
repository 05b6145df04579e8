/*
 * inspect.c: whole-world read-only queries: counts, overflow counters,
 * constraint error, the state hash and the finiteness check.
 */
#include "rigid.h"
#include "vec.h"
#include "world.h"

#include <string.h>

uint32_t sim_world_topology_epoch(const sim_world* w) {
    return w->topo_epoch;
}

uint32_t sim_world_particle_count(const sim_world* w) {
    return w->p_count;
}

uint32_t sim_world_constraint_count(const sim_world* w) {
    return w->d_count;
}

uint32_t sim_world_body_count(const sim_world* w) {
    return w->b_count;
}

uint32_t sim_world_joint_count(const sim_world* w) {
    return w->bj_count;
}

sim_overflows sim_world_overflows(const sim_world* w) {
    return w->overflows;
}

float sim_world_constraint_error(const sim_world* w) {
    float sum = 0.0f;
    for (uint32_t k = 0; k < w->order_count; ++k) {
        const sim__entity* e = &w->entities[w->order[k]];
        const sim_vec3* pos = w->pos + e->p_first;
        const sim__dist* d = w->dist + e->d_first;
        for (uint32_t j = 0; j < e->d_count; ++j) {
            if (d[j].kind == SIM__DIST_EQUAL) {
                sum += fabsf(v3_len(v3_sub(pos[d[j].b], pos[d[j].a])) - d[j].rest);
            }
        }
    }
    return sum;
}

uint64_t sim__fnv1a(uint64_t h, const void* data, size_t n) {
    const unsigned char* p = data;
    for (size_t i = 0; i < n; ++i) {
        h ^= p[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

uint64_t sim_world_hash(const sim_world* w) {
    uint64_t h = SIM__FNV_BASIS;
    h = sim__fnv1a(h, w->pos, w->p_count * sizeof(sim_vec3));
    h = sim__fnv1a(h, w->prev, w->p_count * sizeof(sim_vec3));
    for (uint32_t i = 0; i < w->b_count; ++i) {
        const sim__body* b = &w->body[i];
        h = sim__fnv1a(h, &b->x, sizeof b->x);
        h = sim__fnv1a(h, &b->q, sizeof b->q);
        h = sim__fnv1a(h, &b->v, sizeof b->v);
        h = sim__fnv1a(h, &b->w, sizeof b->w);
    }
    return h;
}

bool sim_world_is_finite(const sim_world* w) {
    for (uint32_t i = 0; i < w->p_count; ++i) {
        if (!sim_vec3_is_finite(w->pos[i]) || !sim_vec3_is_finite(w->prev[i])) {
            return false;
        }
    }
    for (uint32_t i = 0; i < w->b_count; ++i) {
        const sim__body* b = &w->body[i];
        if (!sim_vec3_is_finite(b->x) || !sim_vec3_is_finite(b->v) || !sim_vec3_is_finite(b->w) ||
            !sim_is_finite(b->q.x) || !sim_is_finite(b->q.y) || !sim_is_finite(b->q.z) ||
            !sim_is_finite(b->q.w)) {
            return false;
        }
    }
    return true;
}
