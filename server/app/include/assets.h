/*
 * assets.h: loading skeletons and animation clips from JSON files (the
 * simulator does no I/O of its own). Formats: assets/README.md.
 */
#pragma once

#include "sim.h"

#include <stddef.h>

/// Loads every skeleton in DIR/skeletons/*.json, then every clip in
/// DIR/clips/*.json, in file-name order, into lib (formats: assets/README.md).
/// Returns 0, or -1 with the file and the reason in err (cap bytes). On an
/// error, what loaded before it stays in lib.
int app_assets_load(const char* dir, sim_library* lib, char* err, size_t cap);
