/*
 * scene_hash.c: runs sim_scene_characters (scenes.h), a fixed scene that
 * uses every kind of entity and every character command, and prints the
 * world's state hash (sim_world_hash) as 16 hex digits. CMake builds it
 * twice, optimised and at -O0, and ctest checks that both print the same:
 * no fast-math, no FMA contraction (-ffp-contract=off), so the build type
 * must not change a single bit.
 *
 * Usage: scene_hash ASSETS_DIR
 */
#include "assets.h"
#include "scenes.h"
#include "sim.h"

#include <inttypes.h>
#include <stdio.h>

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
    sim_world_def def = sim_world_def_default();
    def.library = lib;
    def.params.substeps = 4;
    sim_world* w = NULL;
    if (sim_world_create(&def, &w) != SIM_OK) {
        return 1;
    }
    if (sim_scene_characters(w, 360) != SIM_OK) {
        fprintf(stderr, "scene_hash: cannot build the scene\n");
        return 1;
    }
    printf("%016" PRIx64 "\n", sim_world_hash(w));
    sim_world_destroy(w);
    sim_library_destroy(lib);
    return 0;
}
