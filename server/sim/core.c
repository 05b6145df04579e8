/*
 * core.c: what every part of the simulator shares: error codes and their
 * names, finiteness checks, the default allocator, entity ids on the wire
 * and entity kind names.
 */
#include "world.h"

#include <stdlib.h>
#include <string.h>

#define SIM__GEN_MASK 0x1FFFFFu /* 21 bits: the wire id stays below 2^53 */

// ---------------------------------------------------------------------------
// Errors and helpers
// ---------------------------------------------------------------------------

const char* sim_strerror(int err) {
    switch (err) {
    case SIM_OK:
        return "success";
#define SIM__ERR_MSG(name, value, msg)                                                             \
    case SIM_E_##name:                                                                             \
        return msg;
        SIM_ERRNO_MAP(SIM__ERR_MSG)
#undef SIM__ERR_MSG
    default:
        return "unknown error";
    }
}

const char* sim_err_name(int err) {
    switch (err) {
    case SIM_OK:
        return "OK";
#define SIM__ERR_NAME(name, value, msg)                                                            \
    case SIM_E_##name:                                                                             \
        return #name;
        SIM_ERRNO_MAP(SIM__ERR_NAME)
#undef SIM__ERR_NAME
    default:
        return "UNKNOWN";
    }
}

bool sim_is_finite(float f) {
    return isfinite(f) != 0;
}

bool sim_vec3_is_finite(sim_vec3 v) {
    return sim_is_finite(v.x) && sim_is_finite(v.y) && sim_is_finite(v.z);
}

static void* default_alloc(void* ctx, size_t size, size_t align) {
    (void)ctx;
    // aligned_alloc wants size to be a multiple of the alignment.
    size_t rounded = (size + align - 1) & ~(align - 1);
    return aligned_alloc(align, rounded == 0 ? align : rounded);
}

static void default_free(void* ctx, void* p, size_t size) {
    (void)ctx;
    (void)size;
    free(p);
}

sim_allocator sim_allocator_default(void) {
    sim_allocator a = {default_alloc, default_free, NULL};
    return a;
}

uint64_t sim_entity_id_store(sim_entity_id id) {
    return ((uint64_t)(id.generation & SIM__GEN_MASK) << 32) | id.index1;
}

sim_entity_id sim_entity_id_load(uint64_t v) {
    sim_entity_id id;
    id.index1 = (uint32_t)(v & 0xFFFFFFFFu);
    uint64_t gen = v >> 32;
    // A generation no slot can have (0 or too wide) makes the id invalid.
    id.generation = gen > SIM__GEN_MASK ? 0 : (uint32_t)gen;
    return id;
}

const char* sim_entity_kind_name(sim_entity_kind kind) {
    switch (kind) {
    case SIM_ENTITY_ROPE:
        return "rope";
    case SIM_ENTITY_CLOTH:
        return "cloth";
    case SIM_ENTITY_RAGDOLL:
        return "ragdoll";
    case SIM_ENTITY_CHARACTER:
        return "character";
    case SIM_ENTITY_BALL:
        return "ball";
    case SIM_ENTITY_SOFTBODY:
        return "softbody";
    }
    return "unknown";
}
