/*
 * shipped_library.h: the library of the skeletons and clips shipped in
 * assets/ (RD_ASSETS_DIR, set by the test's CMake target), for unit tests'
 * setup. Header-only: one static function.
 */
#pragma once

#include "assets.h"
#include "sim.h"

#include <stdio.h>

/// A new library holding everything in RD_ASSETS_DIR; the caller destroys
/// it (sim_library_destroy). NULL, after a line on stderr saying why, when
/// it cannot be made or the assets do not load.
static inline sim_library* rd_test_shipped_library(void) {
    sim_library* lib = NULL;
    char err[512] = "";
    if (sim_library_create(&lib) != SIM_OK) {
        fprintf(stderr, "cannot create a library\n");
        return NULL;
    }
    if (app_assets_load(RD_ASSETS_DIR, lib, NULL, NULL, err, sizeof err) != 0) {
        fprintf(stderr, "cannot load assets from %s: %s\n", RD_ASSETS_DIR, err);
        sim_library_destroy(lib);
        return NULL;
    }
    return lib;
}
