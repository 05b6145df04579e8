/*
 * budget.c: admission of work. Before a spawn or a parameter change is
 * applied, it is checked against what a world may hold (its limits:
 * particles, constraints, rigid bodies and joints, entities), the per-world
 * solver budget (sim_world_def.max_solver_work) and the server-wide one
 * (app_config.max_total_solver_work), in that order; the first limit it
 * would exceed is named in the reply, with the numbers.
 *
 * Solver work is the simulator's measure (sim.h, max_solver_work):
 * (distance constraints + joint limits + particles + 16 per soft-body
 * particle) × iterations × substeps projections per tick, plus 4 per
 * soft-body particle per substep (shape matching) and 100 per rigid body
 * and joint per rigid substep. Worlds tick at different rates, so the server-wide sum weighs
 * each world by its rate: the load of a world is its work × tick_hz
 * projections per second, and the limit is max_total_solver_work per 1/60 s.
 *
 * What a spawn adds comes from the simulator's pure counts of the entity's
 * def (sim_rope_def_counts() and the others, through app__spawn_counts()),
 * priced by sim_world_counts_solver_work() under the target world's parameters:
 * no world is touched until the spawn is admitted. The simulator's unit
 * tests check those counts against what each kind of spawn really adds.
 *
 * The limits a world is created with (create_world's "limits", or the
 * server's --world-limits) are checked here against the server's ceiling
 * (--world-ceiling) too.
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
    case RDP_OP_ATTACH_CLOTH:
        return "garment";
    case RDP_OP_SPAWN_SOFTBODY:
        return "soft body";
    default:
        return "ragdoll";
    }
}

int app__admit_spawn(app_server* app, app_world* w, const rdp_command* cmd, char* msg, size_t cap) {
    unsigned long long world = (unsigned long long)w->id;
    const char* kind = kind_of_op(cmd->op);
    sim_counts add;
    int rc = app__spawn_counts(w->sim, w->def.library, cmd, &add);
    if (rc != SIM_OK) {
        return rc; // described by the caller (e.g. an unknown skeleton)
    }
    sim_counts have = sim_world_counts(w->sim);
    if (cmd->op == RDP_OP_SPAWN_CLOTH && add.particles > w->def.max_particles) {
        snprintf(msg, cap, "a %u x %u cloth has %u particles; a world holds at most %u",
                 cmd->u.spawn_cloth.cols, cmd->u.spawn_cloth.rows, add.particles,
                 w->def.max_particles);
        return SIM_E_CAPACITY;
    }
    if (cmd->op == RDP_OP_SPAWN_SOFTBODY && add.particles > w->def.max_particles) {
        snprintf(msg, cap,
                 "a soft body of resolution %u has %u particles; a world holds at most %u",
                 cmd->u.spawn_softbody.resolution, add.particles, w->def.max_particles);
        return SIM_E_CAPACITY;
    }
    // What it adds against the world's limits, in the order they are named.
    const struct {
        const char* what;
        uint32_t have, add, max;
    } checks[] = {
        {"particles", have.particles, add.particles, w->def.max_particles},
        {"constraints", have.constraints, add.constraints, w->def.max_constraints},
        {"rigid bodies", have.bodies, add.bodies, w->def.max_bodies},
        {"rigid joints", have.joints, add.joints, w->def.max_joints},
    };
    // Particle joint limits need no check of their own: a world has room
    // for 8 per entity (sim.h), and a particle ragdoll, the only entity
    // with any, has 8.
    for (size_t i = 0; i < sizeof checks / sizeof checks[0]; ++i) {
        // Subtract: have <= max always, and a sum could wrap.
        if (checks[i].add > checks[i].max - checks[i].have) {
            snprintf(msg, cap,
                     "world %llu holds %u %s and this %s adds %u; a world holds at most %u", world,
                     checks[i].have, checks[i].what, kind, checks[i].add, checks[i].max);
            return SIM_E_CAPACITY;
        }
    }
    if (have.entities >= w->def.max_entities) {
        snprintf(msg, cap, "world %llu already holds %u entities, the most a world may", world,
                 have.entities);
        return SIM_E_CAPACITY;
    }
    // Solver work is linear in the counts: the world's plus the entity's.
    sim_params p = sim_world_params(w->sim);
    uint64_t work = sim_world_solver_work(w->sim) + sim_world_counts_solver_work(w->sim, &add, &p);
    if (!app__admit_work(app, w, work, &p, msg, cap)) {
        return SIM_E_CAPACITY;
    }
    return SIM_OK;
}

bool app__world_limits(const app_server* app, const rdp_limits* asked,
                       uint32_t out[RDP_LIMIT_COUNT], char* msg, size_t cap) {
    for (int i = 0; i < RDP_LIMIT_COUNT; ++i) {
        bool given = asked != NULL && (asked->given & (1u << i)) != 0;
        out[i] = given ? asked->value[i] : app->cfg.world_limits[i];
        if (out[i] > app->cfg.world_ceiling[i]) {
            snprintf(msg, cap,
                     "limits.%s = %u is above this server's ceiling of %u for a world "
                     "(--world-ceiling)",
                     rdp_limit_name((rdp_limit)i), out[i], app->cfg.world_ceiling[i]);
            return false;
        }
    }
    return true;
}
