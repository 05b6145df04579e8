/*
 * scene_hash.c: runs sim_scene_characters (scenes.h), a fixed scene that
 * uses every kind of entity and every character command, once with each
 * rigid-body solver, and prints the world's state hash (sim_world_hash)
 * after each as 16 hex digits, one line per solver:
 *
 *   xpbd 0123456789abcdef
 *   soft_step 0123456789abcdef
 *
 * CMake builds it several ways (optimised, at -O0, for x86-64-v3 and -v4,
 * with the other compiler) and ctest checks that every build prints the
 * same two lines (compare.cmake): no fast-math, no FMA contraction
 * (-ffp-contract=off), so the build must not change a single bit.
 *
 * The soft step's run must reach what that solver does beyond the XPBD
 * one: its last tick must have coloured its constraints in more than one
 * graph colour (contacts and joints sharing bodies; warm-started from the
 * tick before) and some bodies must be asleep (the piles came to rest);
 * otherwise the program fails, as the scene would no longer test them.
 *
 * Usage: scene_hash ASSETS_DIR
 */
#include "assets.h"
#include "scenes.h"
#include "sim.h"

#include <inttypes.h>
#include <stdio.h>

// Runs the scene in a new world with `solver`; its hash into *hash and the
// last tick's solver figures and sleeping bodies into *stats and *asleep.
static int run(const sim_library* lib, sim_solver solver, uint64_t* hash, sim_tick_stats* stats,
               uint32_t* asleep) {
    sim_world_def def = sim_world_def_default();
    def.library = lib;
    def.params.substeps = 4;
    def.solver = solver;
    sim_world* w = NULL;
    if (sim_world_create(&def, &w) != SIM_OK) {
        fprintf(stderr, "scene_hash: cannot create the world\n");
        return 1;
    }
    if (sim_scene_characters(w, 360) != SIM_OK) {
        fprintf(stderr, "scene_hash: cannot build the scene\n");
        sim_world_destroy(w);
        return 1;
    }
    *hash = sim_world_hash(w);
    *stats = sim_world_tick_stats(w);
    *asleep = sim_world_body_count(w) - sim_world_awake_body_count(w);
    sim_world_destroy(w);
    return 0;
}

int main(int argc, char** argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: scene_hash ASSETS_DIR\n");
        return 2;
    }
    sim_library* lib = NULL;
    char err[256];
    if (sim_library_create(&lib) != SIM_OK ||
        app_assets_load(argv[1], lib, NULL, NULL, err, sizeof err) != 0) {
        fprintf(stderr, "scene_hash: %s\n", err);
        return 1;
    }
    uint64_t xpbd = 0, soft = 0;
    sim_tick_stats stats;
    uint32_t asleep = 0;
    int rc = run(lib, SIM_SOLVER_XPBD, &xpbd, &stats, &asleep);
    if (rc == 0) {
        rc = run(lib, SIM_SOLVER_SOFT_STEP, &soft, &stats, &asleep);
    }
    sim_library_destroy(lib);
    if (rc != 0) {
        return rc;
    }
    if (stats.colours < 2 || asleep == 0) {
        fprintf(stderr,
                "scene_hash: the soft step's last tick used %" PRIu32 " colours with %" PRIu32
                " bodies asleep: the scene no longer tests its graph colouring and sleeping\n",
                stats.colours, asleep);
        return 1;
    }
    printf("xpbd %016" PRIx64 "\nsoft_step %016" PRIx64 "\n", xpbd, soft);
    return 0;
}
