/*
 * json_ref.c: JSON snapshots (PROTOCOL.md §5.1) the way rdp encoded them
 * before json_snapshot.c: a cJSON tree printed by cJSON_PrintUnformatted,
 * which prints each number with "%1.15g" and reads it back with sscanf. The
 * code is the old encoder's, unchanged; it is the reference the unit tests
 * hold the fast encoder to, byte for byte, and what ragdoll-bench compares
 * it with. Owns nothing.
 */
#include "json_ref.h"

#include <cJSON.h>

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

// Prints and frees a tree. NULL in, NULL out.
static char* finish(cJSON* root, size_t* len) {
    if (root == NULL) {
        return NULL;
    }
    char* s = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    if (s != NULL && len != NULL) {
        *len = strlen(s);
    }
    return s;
}

// Integers go out as raw decimal text (cJSON's %1.15g drops digits of ids
// above 10^15).
static cJSON* uint_item(uint64_t v) {
    char buf[24];
    snprintf(buf, sizeof buf, "%" PRIu64, v);
    return cJSON_CreateRaw(buf);
}

static void add_uint(cJSON* o, const char* key, uint64_t v) {
    cJSON_AddItemToObject(o, key, uint_item(v));
}

static double round_mm10(float v) {
    return round((double)v * 1e4) / 1e4;
}

static cJSON* floats_array(const float* v, int n, double scale) {
    cJSON* a = cJSON_CreateArray();
    for (int i = 0; i < n; ++i) {
        cJSON_AddItemToArray(a, cJSON_CreateNumber(round((double)v[i] * scale) / scale));
    }
    return a;
}

static void add_pose(cJSON* o, const rdp_entity_state* e, uint32_t i) {
    cJSON_AddItemToObject(o, "p", floats_array(e->pose + 7 * i, 3, 1e4));
    cJSON_AddItemToObject(o, "q", floats_array(e->pose + 7 * i + 3, 4, 1e5));
}

static void add_rigid_topology(cJSON* o, const rdp_entity_state* e) {
    if (e->skeleton != NULL) {
        cJSON_AddStringToObject(o, "skeleton", e->skeleton);
    }
    cJSON* caps = cJSON_AddArrayToObject(o, "capsules");
    for (uint32_t i = 0; i < e->body_count; ++i) {
        cJSON* c = cJSON_CreateArray();
        cJSON_AddItemToArray(c, cJSON_CreateNumber(round_mm10(e->body_radius[i])));
        cJSON_AddItemToArray(c, cJSON_CreateNumber(round_mm10(e->body_half_length[i])));
        cJSON_AddItemToArray(caps, c);
    }
}

static void add_rigid_state(cJSON* o, const rdp_entity_state* e) {
    if (e->kind == RDP_KIND_BALL) {
        add_pose(o, e, 0);
        return;
    }
    cJSON_AddStringToObject(o, "state", e->state != NULL ? e->state : "unknown");
    cJSON* bones = cJSON_AddArrayToObject(o, "bones");
    for (uint32_t i = 0; i < e->body_count; ++i) {
        cJSON* b = cJSON_CreateObject();
        cJSON_AddStringToObject(b, "name", e->bone_names[i]);
        add_pose(b, e, i);
        cJSON_AddItemToArray(bones, b);
    }
}

static void add_topology(cJSON* o, const rdp_entity_state* e) {
    if (rdp_kind_is_rigid(e->kind)) {
        add_rigid_topology(o, e);
        return;
    }
    if (e->names != NULL) {
        cJSON* names = cJSON_AddArrayToObject(o, "names");
        for (uint32_t i = 0; i < e->particle_count; ++i) {
            cJSON_AddItemToArray(names, cJSON_CreateString(e->names[i]));
        }
    }
    if (e->kind == RDP_KIND_CLOTH) {
        cJSON_AddNumberToObject(o, "cols", e->cols);
        cJSON_AddNumberToObject(o, "rows", e->rows);
        if (e->wrap) {
            cJSON_AddBoolToObject(o, "wrap", true);
        }
    }
    if (e->garment != NULL) {
        cJSON_AddStringToObject(o, "garment", e->garment);
        cJSON_AddNumberToObject(o, "wearer", (double)e->wearer);
    }
    cJSON* sticks = cJSON_AddArrayToObject(o, "sticks");
    for (uint32_t k = 0; k < e->stick_count; ++k) {
        cJSON* pair = cJSON_CreateArray();
        cJSON_AddItemToArray(pair, cJSON_CreateNumber(e->sticks[2 * k]));
        cJSON_AddItemToArray(pair, cJSON_CreateNumber(e->sticks[2 * k + 1]));
        cJSON_AddItemToArray(sticks, pair);
    }
    cJSON* radii = cJSON_AddArrayToObject(o, "radii");
    cJSON* pinned = cJSON_AddArrayToObject(o, "pinned");
    for (uint32_t i = 0; i < e->particle_count; ++i) {
        cJSON_AddItemToArray(radii, cJSON_CreateNumber(round_mm10(e->radius[i])));
        if (e->inv_mass[i] == 0.0f) {
            cJSON_AddItemToArray(pinned, cJSON_CreateNumber(i));
        }
    }
}

static cJSON* particles_array(const rdp_entity_state* e) {
    cJSON* a = cJSON_CreateArray();
    for (uint32_t i = 0; i < e->particle_count; ++i) {
        cJSON* p = cJSON_CreateArray();
        cJSON_AddItemToArray(p, cJSON_CreateNumber(round_mm10(e->xyz[3 * i])));
        cJSON_AddItemToArray(p, cJSON_CreateNumber(round_mm10(e->xyz[3 * i + 1])));
        cJSON_AddItemToArray(p, cJSON_CreateNumber(round_mm10(e->xyz[3 * i + 2])));
        cJSON_AddItemToArray(a, p);
    }
    return a;
}

static cJSON* metrics_object(const rdp_metrics* mt, uint32_t entities) {
    cJSON* m = cJSON_CreateObject();
    cJSON_AddNumberToObject(m, "constraint_error", round(mt->constraint_error * 1e6) / 1e6);
    cJSON_AddNumberToObject(m, "sticks", mt->sticks);
    cJSON_AddNumberToObject(m, "solver_passes", mt->solver_passes);
    cJSON_AddNumberToObject(m, "particles", mt->particles);
    cJSON_AddNumberToObject(m, "entities", entities);
    cJSON_AddNumberToObject(m, "step_ms", round(mt->step_ms * 1e3) / 1e3);
    add_uint(m, "overruns", mt->overruns);
    cJSON_AddNumberToObject(m, "frozen_entities", mt->frozen_entities);
    cJSON_AddNumberToObject(m, "frozen_particles", mt->frozen_particles);
    add_uint(m, "particle_projections", mt->particle_projections);
    return m;
}

char* rdp_ref_snapshot_json(const rdp_snapshot* s, bool topology, size_t* len) {
    cJSON* root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "ev", "snapshot");
    add_uint(root, "world", s->world);
    add_uint(root, "tick", s->tick);
    cJSON* ents = cJSON_AddArrayToObject(root, "entities");
    for (uint32_t k = 0; k < s->entity_count; ++k) {
        const rdp_entity_state* e = &s->entities[k];
        cJSON* o = cJSON_CreateObject();
        add_uint(o, "entity", e->entity);
        cJSON_AddStringToObject(o, "kind", rdp_kind_name(e->kind));
        if (rdp_kind_is_rigid(e->kind)) {
            add_rigid_state(o, e);
        } else {
            cJSON_AddItemToObject(o, "particles", particles_array(e));
        }
        if (topology) {
            add_topology(o, e);
        }
        cJSON_AddItemToArray(ents, o);
    }
    cJSON_AddItemToObject(root, "metrics", metrics_object(&s->metrics, s->entity_count));
    return finish(root, len);
}
