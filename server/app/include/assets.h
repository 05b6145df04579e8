/*
 * assets.h: loading skeletons and animation clips from JSON files (the
 * simulator does no I/O of its own). Formats: assets/README.md.
 */
#pragma once

#include "sim.h"

#include <stddef.h>

/// Called once per warning about a file that loaded anyway: `path` is the
/// file (DIR/skeletons/NAME.json), `skeleton` the skeleton as loaded (its
/// bones[w->bone] and bones[w->other] name the bones) and `w` the finding,
/// whose message names them too. All three are valid only during the call.
typedef void (*app_assets_warn_fn)(void* ctx, const char* path, const sim_skeleton_def* skeleton,
                                   const sim_skeleton_issue* w);

/// Loads every skeleton in DIR/skeletons/*.json, then every clip in
/// DIR/clips/*.json, in file-name order, into lib (formats: assets/README.md).
/// Each warning (sim_library_add_skeleton(): a mass ratio above 10:1) goes
/// to warn(ctx, ...) as its file loads; warn may be NULL to drop them.
/// Returns 0, or -1 with the file and the reason in err (cap bytes): a file
/// that does not parse, or a skeleton sim refuses (its message names the
/// bone, e.g. a bind pose outside a limit). On an error, what loaded before
/// it stays in lib; warn is never called for the file that failed.
int app_assets_load(const char* dir, sim_library* lib, app_assets_warn_fn warn, void* ctx,
                    char* err, size_t cap);
