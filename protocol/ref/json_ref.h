/*
 * json_ref.h: the cJSON JSON-snapshot encoder (target rdp_json_ref), the one
 * rdp used before json_snapshot.c. It builds a cJSON tree and prints it with
 * cJSON_PrintUnformatted. It is not part of rdp: the unit tests compare the
 * fast encoder with it, and ragdoll-bench times the two side by side.
 */
#pragma once

#include "rdp.h"

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/// The reference for rdp_snapshot_json(): the same event built as a cJSON
/// tree and printed by cJSON. Returns a string to free with rdp_free(), or
/// NULL on OOM.
char* rdp_ref_snapshot_json(const rdp_snapshot* s, bool topology, size_t* len);

#ifdef __cplusplus
}
#endif
