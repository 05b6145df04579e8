/*
 * bench_solver.h: the --solver option of the benchmarks (ragdoll-bench,
 * ragdoll-impacts): a rigid-body solver (sim.h, sim_world_def.solver) by
 * its name on the wire and on ragdolld's command line (PROTOCOL.md §3,
 * --world-solver): "xpbd" or "soft_step", exactly.
 */
#pragma once

#include "sim.h"

#include <stdbool.h>
#include <string.h>

/// The name of a solver ("xpbd", "soft_step"; static storage), or "?" for
/// a value that is no sim_solver.
static inline const char* bench_solver_name(sim_solver solver) {
    switch (solver) {
    case SIM_SOLVER_XPBD:
        return "xpbd";
    case SIM_SOLVER_SOFT_STEP:
        return "soft_step";
    }
    return "?";
}

/// Parses a solver's name (bench_solver_name()) into *out. False, *out
/// untouched, for NULL or any other string.
static inline bool bench_solver_parse(const char* name, sim_solver* out) {
    const sim_solver all[] = {SIM_SOLVER_XPBD, SIM_SOLVER_SOFT_STEP};
    for (size_t i = 0; name != NULL && i < sizeof all / sizeof all[0]; ++i) {
        if (strcmp(name, bench_solver_name(all[i])) == 0) {
            *out = all[i];
            return true;
        }
    }
    return false;
}
