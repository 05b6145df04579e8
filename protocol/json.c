/*
 * json.c: encoding of replies, events and describe (PROTOCOL.md §2, §3, §4)
 * with cJSON. Each encoder builds a cJSON tree, prints it unformatted and
 * frees the tree; the caller owns the printed string. JSON snapshots, sent
 * every tick, are written without cJSON by json_snapshot.c.
 */
#include "rdp.h"

#include <cJSON.h>

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

void rdp_free(void* p) {
    cJSON_free(p);
}

rdp_re rdp_re_of(const rdp_command* cmd) {
    rdp_re re = {cmd->has_id, cmd->id};
    return re;
}

const char* rdp_kind_name(rdp_kind kind) {
    switch (kind) {
    case RDP_KIND_ROPE:
        return "rope";
    case RDP_KIND_CLOTH:
        return "cloth";
    case RDP_KIND_RAGDOLL:
        return "ragdoll";
    case RDP_KIND_CHARACTER:
        return "character";
    case RDP_KIND_BALL:
        return "ball";
    case RDP_KIND_SOFTBODY:
        return "softbody";
    }
    return "unknown";
}

bool rdp_kind_is_rigid(rdp_kind kind) {
    return kind == RDP_KIND_CHARACTER || kind == RDP_KIND_BALL;
}

// Prints and frees a tree. NULL in, NULL out (allocation failures anywhere
// while building propagate here as a NULL tree or a NULL print).
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

// Integers go out as raw decimal text: cJSON 1.7.15 prints numbers with
// %1.15g and accepts the result if it re-parses within a relative epsilon,
// which drops the last digits of ids above 10^15 (ids go up to 2^53 - 1).
static cJSON* int_item(int64_t v) {
    char buf[24];
    snprintf(buf, sizeof buf, "%" PRId64, v);
    return cJSON_CreateRaw(buf);
}

static cJSON* uint_item(uint64_t v) {
    char buf[24];
    snprintf(buf, sizeof buf, "%" PRIu64, v);
    return cJSON_CreateRaw(buf);
}

static void add_uint(cJSON* o, const char* key, uint64_t v) {
    cJSON_AddItemToObject(o, key, uint_item(v));
}

static cJSON* vec3_array(rdp_vec3 v) {
    cJSON* a = cJSON_CreateArray();
    cJSON_AddItemToArray(a, cJSON_CreateNumber(v.x));
    cJSON_AddItemToArray(a, cJSON_CreateNumber(v.y));
    cJSON_AddItemToArray(a, cJSON_CreateNumber(v.z));
    return a;
}

static cJSON* re_object(rdp_re re) {
    cJSON* root = cJSON_CreateObject();
    if (re.has_id) {
        cJSON_AddItemToObject(root, "re", int_item(re.id));
    } else {
        cJSON_AddNullToObject(root, "re");
    }
    return root;
}

char* rdp_reply_error(rdp_re re, rdp_code code, const char* message, size_t* len) {
    cJSON* root = re_object(re);
    cJSON* e = cJSON_AddObjectToObject(root, "error");
    cJSON_AddStringToObject(e, "code", rdp_code_name(code));
    cJSON_AddStringToObject(e, "message", message != NULL ? message : "");
    return finish(root, len);
}

bool rdp_reply_code(const char* text, size_t len, rdp_code* code) {
    static const char head[] = "{\"re\":";
    static const char ok[] = "\"ok\":true";
    static const char err[] = "\"error\":{\"code\":\"";
    if (text == NULL || len < sizeof head - 1 || memcmp(text, head, sizeof head - 1) != 0) {
        return false;
    }
    // The id: an integer or null, then a comma (re_object() and
    // rdp_reply_describe() write it first).
    size_t i = sizeof head - 1;
    while (i < len && i < 32 && text[i] != ',') {
        i++;
    }
    i++;
    if (i + sizeof ok - 1 <= len && memcmp(text + i, ok, sizeof ok - 1) == 0) {
        *code = RDP_OK;
        return true;
    }
    if (i + sizeof err - 1 > len || memcmp(text + i, err, sizeof err - 1) != 0) {
        return false;
    }
    const char* name = text + i + sizeof err - 1;
    size_t room = len - (i + sizeof err - 1);
#define RDP__CODE_MATCH(id, str)                                                                   \
    if (room > sizeof str - 1 && memcmp(name, str, sizeof str - 1) == 0 &&                         \
        name[sizeof str - 1] == '"') {                                                             \
        *code = RDP_E_##id;                                                                        \
        return true;                                                                               \
    }
    RDP_CODE_MAP(RDP__CODE_MATCH)
#undef RDP__CODE_MATCH
    return false;
}

static cJSON* params_object(const rdp_params* p) {
    cJSON* o = cJSON_CreateObject();
    cJSON_AddItemToObject(o, "gravity", vec3_array(p->gravity));
    cJSON_AddNumberToObject(o, "damping", p->damping);
    cJSON_AddNumberToObject(o, "iterations", p->iterations);
    cJSON_AddNumberToObject(o, "substeps", p->substeps);
    cJSON_AddNumberToObject(o, "bounciness", p->bounciness);
    cJSON_AddNumberToObject(o, "friction", p->friction);
    cJSON_AddItemToObject(o, "wind", vec3_array(p->wind));
    cJSON_AddNumberToObject(o, "gust", p->gust);
    cJSON_AddNumberToObject(o, "gust_period", p->gust_period);
    cJSON_AddNumberToObject(o, "air_density", p->air_density);
    cJSON_AddNumberToObject(o, "drag_coef", p->drag_coef);
    cJSON_AddNumberToObject(o, "lift_coef", p->lift_coef);
    return o;
}

// x rounded to 10⁻⁴, and never -0 (+ 0.0 makes -0.0 +0.0).
static double round4(double x) {
    return round(x * 1e4) / 1e4 + 0.0;
}

// [x, y, z] rounded to 10⁻⁴ (round4()).
static cJSON* vec3_array4(rdp_vec3 v) {
    const rdp_vec3 r = {round4(v.x), round4(v.y), round4(v.z)};
    return vec3_array(r);
}

// A ray's hit: millimetres in point and distance, 10⁻⁴ in the normal (the
// snapshots' precision; a reply is not the place for float noise).
static cJSON* hit_object(const rdp_hit* h) {
    cJSON* o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "kind", h->kind);
    if (h->has_entity) {
        add_uint(o, "entity", h->entity);
    }
    if (h->bone != NULL) {
        cJSON_AddStringToObject(o, "bone", h->bone);
    }
    if (h->has_index) {
        cJSON_AddNumberToObject(o, strcmp(h->kind, "box") == 0 ? "box" : "particle", h->index);
    }
    cJSON_AddItemToObject(o, "point", vec3_array4(h->point));
    cJSON_AddItemToObject(o, "normal", vec3_array4(h->normal));
    cJSON_AddNumberToObject(o, "distance", round4(h->distance));
    return o;
}

static cJSON* worlds_array(const rdp_world_info* worlds, uint32_t count) {
    cJSON* a = cJSON_CreateArray();
    for (uint32_t i = 0; i < count; ++i) {
        cJSON* o = cJSON_CreateObject();
        add_uint(o, "world", worlds[i].world);
        cJSON_AddStringToObject(o, "name", worlds[i].name);
        add_uint(o, "tick", worlds[i].tick);
        cJSON_AddNumberToObject(o, "tick_hz", worlds[i].tick_hz);
        cJSON_AddNumberToObject(o, "entities", worlds[i].entities);
        if (worlds[i].solver != NULL) {
            cJSON_AddStringToObject(o, "solver", worlds[i].solver);
        }
        cJSON_AddItemToArray(a, o);
    }
    return a;
}

static cJSON* statics_object(const rdp_reply_fields* f) {
    cJSON* o = cJSON_CreateObject();
    cJSON_AddBoolToObject(o, "ground", f->ground);
    cJSON* boxes = cJSON_AddArrayToObject(o, "boxes");
    for (uint32_t i = 0; i < f->box_count; ++i) {
        cJSON* b = cJSON_CreateObject();
        cJSON_AddItemToObject(b, "center", vec3_array(f->boxes[i].center));
        cJSON_AddItemToObject(b, "half_extents", vec3_array(f->boxes[i].half_extents));
        cJSON_AddItemToArray(boxes, b);
    }
    return o;
}

// Rounds a coordinate to 0.1 mm so JSON carries short numbers.
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

// Adds the topology of a rigid entity: its skeleton and capsule sizes.
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

// The skeleton of a character as describe returns it.
static cJSON* skeleton_array(const rdp_entity_state* e) {
    cJSON* a = cJSON_CreateArray();
    for (uint32_t i = 0; i < e->body_count; ++i) {
        const rdp_bone_desc* b = &e->bones[i];
        cJSON* o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "name", b->name);
        if (b->parent >= 0) {
            cJSON_AddStringToObject(o, "parent", e->bones[b->parent].name);
        } else {
            cJSON_AddNullToObject(o, "parent");
        }
        cJSON* cap = cJSON_AddObjectToObject(o, "capsule");
        cJSON_AddNumberToObject(cap, "radius", round_mm10(b->radius));
        cJSON_AddNumberToObject(cap, "half_length", round_mm10(b->half_length));
        cJSON_AddNumberToObject(o, "mass", round((double)b->mass * 1e4) / 1e4);
        if (b->joint != NULL) {
            cJSON* j = cJSON_AddObjectToObject(o, "joint");
            cJSON_AddStringToObject(j, "type", b->joint);
            cJSON_AddItemToObject(j, "anchor_parent", floats_array(b->anchor_parent, 3, 1e5));
            cJSON_AddItemToObject(j, "anchor_child", floats_array(b->anchor_child, 3, 1e5));
            cJSON_AddItemToObject(j, "frame_parent", floats_array(b->frame_parent, 4, 1e6));
            cJSON_AddItemToObject(j, "frame_child", floats_array(b->frame_child, 4, 1e6));
            if (strcmp(b->joint, "ball") == 0) {
                float swing[2] = {b->swing1, b->swing2};
                cJSON_AddItemToObject(j, "swing", floats_array(swing, 2, 1e6));
            }
            if (strcmp(b->joint, "fixed") != 0) {
                float range[2] = {b->twist_min, b->twist_max};
                cJSON_AddItemToObject(j, strcmp(b->joint, "hinge") == 0 ? "range" : "twist",
                                      floats_array(range, 2, 1e6));
            }
        }
        cJSON_AddItemToArray(a, o);
    }
    return a;
}

// Adds the topology members of an entity (PROTOCOL.md §5.1).
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
    if (e->lod != NULL) {
        cJSON_AddStringToObject(o, "lod", e->lod);
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

// The members describe adds for an entity (PROTOCOL.md §3).
static void add_describe(cJSON* root, const rdp_entity_state* e) {
    cJSON_AddStringToObject(root, "kind", rdp_kind_name(e->kind));
    if (e->kind == RDP_KIND_CHARACTER) {
        cJSON_AddStringToObject(root, "skeleton", e->skeleton);
        cJSON_AddStringToObject(root, "state", e->state);
        if (e->solver != NULL) {
            cJSON_AddStringToObject(root, "solver", e->solver);
        }
        cJSON_AddStringToObject(root, "clip", e->clip);
        cJSON_AddItemToObject(root, "bones", skeleton_array(e));
    } else if (e->kind == RDP_KIND_BALL) {
        cJSON_AddNumberToObject(root, "radius", round_mm10(e->body_radius[0]));
    } else {
        cJSON_AddNumberToObject(root, "particle_count", e->particle_count);
        add_topology(root, e);
        if (e->cloth != NULL) {
            cJSON_AddNumberToObject(root, "tear", round_mm10(e->cloth->tear));
            cJSON_AddBoolToObject(root, "long_range", e->cloth->long_range);
            if (e->kind == RDP_KIND_CLOTH) {
                cJSON_AddBoolToObject(root, "self_collision", e->cloth->self_collision);
                if (e->cloth->self_collision) {
                    cJSON_AddNumberToObject(root, "thickness", round_mm10(e->cloth->thickness));
                }
            }
        }
    }
}

char* rdp_reply_ok(rdp_re re, const rdp_reply_fields* f, size_t* len) {
    cJSON* root = re_object(re);
    cJSON_AddTrueToObject(root, "ok");
    if (f->has_tick) {
        add_uint(root, "tick", f->tick);
    }
    if (f->has_world) {
        add_uint(root, "world", f->world);
    }
    if (f->has_entity) {
        add_uint(root, "entity", f->entity);
    }
    if (f->has_bytes) {
        add_uint(root, "bytes", f->bytes);
    }
    if (f->file != NULL) {
        cJSON_AddStringToObject(root, "file", f->file);
    }
    if (f->state != NULL) {
        cJSON_AddStringToObject(root, "state", f->state);
    }
    if (f->tick_hz != 0) {
        cJSON_AddNumberToObject(root, "tick_hz", f->tick_hz);
    }
    if (f->format != NULL) {
        cJSON_AddStringToObject(root, "format", f->format);
        cJSON_AddNumberToObject(root, "rate_hz", f->rate_hz);
        if (f->bytes_per_s > 0) {
            cJSON_AddNumberToObject(root, "bytes_per_s", f->bytes_per_s);
        }
    }
    if (f->params != NULL) {
        cJSON_AddItemToObject(root, "params", params_object(f->params));
    }
    if (f->has_statics) {
        cJSON_AddItemToObject(root, "statics", statics_object(f));
    }
    if (f->has_worlds) {
        cJSON_AddItemToObject(root, "worlds", worlds_array(f->worlds, f->worlds_count));
    }
    if (f->bone != NULL) {
        cJSON_AddStringToObject(root, "bone", f->bone);
    }
    if (f->clip != NULL) {
        cJSON_AddStringToObject(root, "clip", f->clip);
    }
    if (f->limits != NULL) {
        cJSON* limits = cJSON_AddObjectToObject(root, "limits");
        for (int i = 0; i < RDP_LIMIT_COUNT; ++i) {
            cJSON_AddNumberToObject(limits, rdp_limit_name((rdp_limit)i), f->limits[i]);
        }
    }
    if (f->solver != NULL) {
        cJSON_AddStringToObject(root, "solver", f->solver);
    }
    if (f->has_seen_tick) {
        add_uint(root, "seen_tick", f->seen_tick);
        cJSON_AddBoolToObject(root, "clamped", f->clamped);
    }
    if (f->has_hit && f->hit == NULL) {
        cJSON_AddNullToObject(root, "hit");
    } else if (f->has_hit) {
        cJSON_AddItemToObject(root, "hit", hit_object(f->hit));
    }
    if (f->describe != NULL) {
        add_describe(root, f->describe);
    }
    return finish(root, len);
}

char* rdp_describe_body(const rdp_entity_state* e, size_t* len) {
    cJSON* root = cJSON_CreateObject();
    add_describe(root, e);
    return finish(root, len);
}

char* rdp_reply_describe(rdp_re re, uint64_t tick, uint64_t entity, const char* body,
                         size_t body_len, size_t* len) {
    if (body == NULL || body_len < 2 || body[0] != '{' || body[body_len - 1] != '}') {
        return NULL;
    }
    // The head is what rdp_reply_ok() prints before the describe members.
    char head[96];
    int n = re.has_id ? snprintf(head, sizeof head, "{\"re\":%" PRId64 ",", re.id)
                      : snprintf(head, sizeof head, "{\"re\":null,");
    n += snprintf(head + n, sizeof head - (size_t)n,
                  "\"ok\":true,\"tick\":%" PRIu64 ",\"entity\":%" PRIu64, tick, entity);
    bool empty = body_len == 2;
    // head, then "," and the body without its "{" (or just "}" when empty).
    size_t total = (size_t)n + (empty ? 1 : body_len);
    char* out = cJSON_malloc(total + 1);
    if (out == NULL) {
        return NULL;
    }
    memcpy(out, head, (size_t)n);
    if (empty) {
        out[n] = '}';
    } else {
        out[n] = ',';
        memcpy(out + n + 1, body + 1, body_len - 1);
    }
    out[total] = '\0';
    if (len != NULL) {
        *len = total;
    }
    return out;
}

char* rdp_event_welcome(const char* version, const rdp_world_info* worlds, uint32_t count,
                        size_t* len) {
    cJSON* root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "ev", "welcome");
    cJSON_AddNumberToObject(root, "protocol", RDP_PROTOCOL_VERSION);
    cJSON_AddStringToObject(root, "server", "ragdolld");
    cJSON_AddStringToObject(root, "version", version);
    cJSON_AddItemToObject(root, "worlds", worlds_array(worlds, count));
    return finish(root, len);
}

static cJSON* world_event(const char* ev, uint64_t world, uint64_t tick) {
    cJSON* root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "ev", ev);
    add_uint(root, "world", world);
    add_uint(root, "tick", tick);
    return root;
}

char* rdp_event_params(uint64_t world, uint64_t tick, const rdp_params* p, size_t* len) {
    cJSON* root = world_event("params", world, tick);
    cJSON_AddItemToObject(root, "params", params_object(p));
    return finish(root, len);
}

char* rdp_event_statics(uint64_t world, uint64_t tick, bool ground, const rdp_box* boxes,
                        uint32_t box_count, size_t* len) {
    rdp_reply_fields f;
    memset(&f, 0, sizeof f);
    f.ground = ground;
    f.boxes = boxes;
    f.box_count = box_count;
    cJSON* root = world_event("statics", world, tick);
    cJSON_AddItemToObject(root, "statics", statics_object(&f));
    return finish(root, len);
}

char* rdp_event_entity_removed(uint64_t world, uint64_t tick, uint64_t entity, const char* reason,
                               size_t* len) {
    cJSON* root = world_event("entity_removed", world, tick);
    add_uint(root, "entity", entity);
    cJSON_AddStringToObject(root, "reason", reason);
    return finish(root, len);
}

char* rdp_event_world_destroyed(uint64_t world, uint64_t tick, size_t* len) {
    return finish(world_event("world_destroyed", world, tick), len);
}

char* rdp_event_character_state(uint64_t world, uint64_t tick, uint64_t entity, const char* state,
                                size_t* len) {
    cJSON* root = world_event("character_state", world, tick);
    add_uint(root, "entity", entity);
    cJSON_AddStringToObject(root, "state", state);
    return finish(root, len);
}

char* rdp_event_settled(uint64_t world, uint64_t tick, uint64_t entity, size_t* len) {
    cJSON* root = world_event("settled", world, tick);
    add_uint(root, "entity", entity);
    return finish(root, len);
}

char* rdp_event_impacts(uint64_t world, uint64_t tick, const rdp_impact* impacts, uint32_t count,
                        uint64_t dropped, size_t* len) {
    cJSON* root = world_event("impacts", world, tick);
    cJSON* arr = cJSON_AddArrayToObject(root, "impacts");
    for (uint32_t i = 0; i < count; ++i) {
        const rdp_impact* m = &impacts[i];
        cJSON* o = cJSON_CreateObject();
        add_uint(o, "entity", m->entity);
        if (m->bone != NULL) {
            cJSON_AddStringToObject(o, "bone", m->bone);
        }
        cJSON_AddStringToObject(o, "with", m->with);
        if (strcmp(m->with, "body") == 0) {
            add_uint(o, "other", m->other);
            if (m->other_bone != NULL) {
                cJSON_AddStringToObject(o, "other_bone", m->other_bone);
            }
        } else if (strcmp(m->with, "box") == 0) {
            cJSON_AddNumberToObject(o, "box", m->box);
        }
        cJSON_AddItemToObject(o, "point", vec3_array4(m->point));
        cJSON_AddItemToObject(o, "normal", vec3_array4(m->normal));
        cJSON_AddNumberToObject(o, "speed", round(m->speed * 1e3) / 1e3);
        cJSON_AddItemToArray(arr, o);
    }
    if (dropped > 0) {
        add_uint(root, "dropped", dropped);
    }
    return finish(root, len);
}

char* rdp_event_limit_hits(uint64_t world, uint64_t tick, const rdp_limit_hit* hits, uint32_t count,
                           uint64_t dropped, size_t* len) {
    cJSON* root = world_event("limit_hits", world, tick);
    cJSON* arr = cJSON_AddArrayToObject(root, "hits");
    for (uint32_t i = 0; i < count; ++i) {
        cJSON* o = cJSON_CreateObject();
        add_uint(o, "entity", hits[i].entity);
        cJSON_AddStringToObject(o, "bone", hits[i].bone);
        cJSON_AddStringToObject(o, "limit", hits[i].limit);
        cJSON_AddNumberToObject(o, "speed", round(hits[i].speed * 1e3) / 1e3);
        cJSON_AddItemToArray(arr, o);
    }
    if (dropped > 0) {
        add_uint(root, "dropped", dropped);
    }
    return finish(root, len);
}

char* rdp_event_rolled_back(uint64_t world, uint64_t tick, uint64_t from_tick, uint64_t entity,
                            const char* dropped_op, size_t* len) {
    cJSON* root = world_event("rolled_back", world, tick);
    add_uint(root, "from_tick", from_tick);
    add_uint(root, "entity", entity);
    if (dropped_op != NULL) {
        cJSON_AddStringToObject(root, "dropped", dropped_op);
    } else {
        cJSON_AddNullToObject(root, "dropped");
    }
    return finish(root, len);
}

char* rdp_event_command_dropped(uint64_t world, uint64_t tick, rdp_re re, const char* op,
                                const char* message, size_t* len) {
    cJSON* root = world_event("command_dropped", world, tick);
    if (re.has_id) {
        cJSON_AddItemToObject(root, "re", int_item(re.id));
    } else {
        cJSON_AddNullToObject(root, "re");
    }
    cJSON_AddStringToObject(root, "op", op);
    cJSON* e = cJSON_AddObjectToObject(root, "error");
    cJSON_AddStringToObject(e, "code", rdp_code_name(RDP_E_BAD_STATE));
    cJSON_AddStringToObject(e, "message", message);
    return finish(root, len);
}

char* rdp_event_torn(uint64_t world, uint64_t tick, uint64_t entity, const uint32_t* pairs,
                     uint32_t count, uint32_t dropped, size_t* len) {
    cJSON* root = world_event("torn", world, tick);
    add_uint(root, "entity", entity);
    cJSON* sticks = cJSON_AddArrayToObject(root, "sticks");
    for (uint32_t k = 0; k < count; ++k) {
        cJSON* pair = cJSON_CreateArray();
        cJSON_AddItemToArray(pair, cJSON_CreateNumber(pairs[2 * k]));
        cJSON_AddItemToArray(pair, cJSON_CreateNumber(pairs[2 * k + 1]));
        cJSON_AddItemToArray(sticks, pair);
    }
    if (dropped > 0) {
        cJSON_AddNumberToObject(root, "more", dropped);
    }
    return finish(root, len);
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

char* rdp_event_metrics(const rdp_snapshot* s, size_t* len) {
    cJSON* root = world_event("metrics", s->world, s->tick);
    cJSON_AddItemToObject(root, "metrics", metrics_object(&s->metrics, s->entity_count));
    return finish(root, len);
}
