/*
 * budget.c: admission of work. Before a spawn or a parameter change is
 * applied, it is checked against what a world may hold (the simulator's
 * capacities: particles, constraints, entities), the per-world solver budget
 * (sim_world_def.max_solver_work) and the server-wide one
 * (app_config.max_total_solver_work), in that order; the first limit it
 * would exceed is named in the reply, with the numbers.
 *
 * Solver work is the simulator's measure (sim.h, max_solver_work):
 * (distance constraints + joint limits + particles) × iterations × substeps
 * projections per tick, plus 100 per rigid body and joint per rigid
 * substep. Worlds tick at different rates, so the server-wide sum weighs
 * each world by its rate: the load of a world is its work × tick_hz
 * projections per second, and the limit is max_total_solver_work per 1/60 s.
 *
 * What a spawn adds is not computed here but measured: the entity is
 * spawned into an empty scratch world with the target world's parameters
 * and removed again, so every kind of entity the simulator knows is
 * counted exactly as the simulator will count it. The scratch world is
 * never stepped and holds nothing between calls.
 *
 * (Per-client rates of commands and describe bytes are bucket.c's.)
 */
#include "app_internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

uint64_t app__world_rate(app_world* w) {
    // From the view: another world's may be on a worker while this one's
    // commands apply.
    return app__world_view(w)->solver_work * w->tick_hz;
}

uint64_t app__server_rate(const app_server* app) {
    uint64_t sum = 0;
    for (uint32_t i = 0; i < app->cfg.max_worlds; ++i) {
        if (app->worlds[i] != NULL) {
            sum += app__world_rate(app->worlds[i]);
        }
    }
    return sum;
}

// Per-second rates shown per 1/60 s, rounded up (the unit of the flag).
static unsigned long long per_60hz_tick(uint64_t rate) {
    return (unsigned long long)((rate + 59) / 60);
}

bool app__admit_work(const app_server* app, app_world* w, uint64_t work, const sim_params* p,
                     char* msg, size_t cap) {
    if (w->def.max_solver_work != 0 && work > w->def.max_solver_work) {
        snprintf(msg, cap,
                 "world %llu would need %llu solver projections per tick (at %d iterations x %d "
                 "substeps); the limit per world is %llu",
                 (unsigned long long)w->id, (unsigned long long)work, p->iterations, p->substeps,
                 (unsigned long long)w->def.max_solver_work);
        return false;
    }
    uint64_t total = app__server_rate(app) - app__world_rate(w) + work * w->tick_hz;
    uint64_t limit = app->cfg.max_total_solver_work * 60;
    if (total > limit) {
        snprintf(msg, cap,
                 "all worlds together would need %llu solver projections per 1/60 s (world %llu: "
                 "%llu per tick at %u Hz); the limit for the whole server is %llu",
                 per_60hz_tick(total), (unsigned long long)w->id, (unsigned long long)work,
                 w->tick_hz, (unsigned long long)app->cfg.max_total_solver_work);
        return false;
    }
    return true;
}

// The wire name of what a spawn command makes.
static const char* kind_of_op(rdp_op op) {
    switch (op) {
    case RDP_OP_SPAWN_ROPE:
        return "rope";
    case RDP_OP_SPAWN_CLOTH:
        return "cloth";
    case RDP_OP_SPAWN_CHARACTER:
        return "character";
    case RDP_OP_SPAWN_BALL:
        return "ball";
    default:
        return "ragdoll";
    }
}

int app__admit_spawn(app_server* app, app_world* w, const rdp_command* cmd, char* msg, size_t cap) {
    unsigned long long world = (unsigned long long)w->id;
    const char* kind = kind_of_op(cmd->op);
    // Measure the entity alone, under the target world's parameters.
    sim_params p = sim_world_params(w->sim);
    int rc = sim_world_set_params(app->scratch, &p);
    sim_entity_id id = {0, 0};
    if (rc == SIM_OK) {
        rc = app__spawn(app->scratch, cmd, &id);
    }
    if (rc != SIM_OK) {
        if (rc == SIM_E_CAPACITY && cmd->op == RDP_OP_SPAWN_CLOTH) {
            // Only a cloth can be too big for an empty world (and then by
            // its particles: its constraints are about six per particle).
            uint32_t cols = cmd->u.spawn_cloth.cols, rows = cmd->u.spawn_cloth.rows;
            snprintf(msg, cap, "a %u x %u cloth has %u particles; a world holds at most %u", cols,
                     rows, cols * rows, w->def.max_particles);
        } else if (rc == SIM_E_CAPACITY) {
            snprintf(msg, cap, "this %s is larger than a world may hold", kind);
        }
        return rc; // others (e.g. out of range) are described by the caller
    }
    uint32_t particles = sim_world_particle_count(app->scratch);
    uint32_t constraints = sim_world_constraint_count(app->scratch);
    uint32_t bodies = sim_world_body_count(app->scratch);
    uint32_t joints = sim_world_joint_count(app->scratch);
    uint64_t work = sim_world_solver_work(app->scratch);
    sim_world_despawn(app->scratch, id);

    uint32_t have_p = sim_world_particle_count(w->sim);
    uint32_t have_c = sim_world_constraint_count(w->sim);
    uint32_t have_e = sim_world_entity_count(w->sim);
    if (particles > w->def.max_particles - have_p) {
        snprintf(msg, cap,
                 "world %llu holds %u particles and this %s adds %u; a world holds at most %u",
                 world, have_p, kind, particles, w->def.max_particles);
        return SIM_E_CAPACITY;
    }
    if (constraints > w->def.max_constraints - have_c) {
        snprintf(msg, cap,
                 "world %llu holds %u constraints and this %s adds %u; a world holds at most %u",
                 world, have_c, kind, constraints, w->def.max_constraints);
        return SIM_E_CAPACITY;
    }
    uint32_t have_b = sim_world_body_count(w->sim), have_j = sim_world_joint_count(w->sim);
    if (bodies > w->def.max_bodies - have_b) {
        snprintf(msg, cap,
                 "world %llu holds %u rigid bodies and this %s adds %u; a world holds at most %u",
                 world, have_b, kind, bodies, w->def.max_bodies);
        return SIM_E_CAPACITY;
    }
    if (joints > w->def.max_joints - have_j) {
        snprintf(msg, cap,
                 "world %llu holds %u rigid joints and this %s adds %u; a world holds at most %u",
                 world, have_j, kind, joints, w->def.max_joints);
        return SIM_E_CAPACITY;
    }
    if (have_e >= w->def.max_entities) {
        snprintf(msg, cap, "world %llu already holds %u entities, the most a world may", world,
                 have_e);
        return SIM_E_CAPACITY;
    }
    // The scratch world measured the entity under the same parameters.
    if (!app__admit_work(app, w, sim_world_solver_work(w->sim) + work, &p, msg, cap)) {
        return SIM_E_CAPACITY;
    }
    return SIM_OK;
}
