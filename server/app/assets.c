/*
 * assets.c: loads skeletons and animation clips from JSON files into a
 * sim_library (the simulator itself does no I/O). The formats are described
 * in assets/README.md: a skeleton is a list of bones (name, parent, capsule
 * head/tail/radius, mass, joint type, axis and limits in degrees); a clip is
 * a list of keys, each with a time, the root's position and rotation, and
 * bone rotations as model-space axis-angles [ax, ay, az, degrees] relative
 * to the bind pose (or a list of them, applied in order).
 *
 * sim checks each skeleton as it is added (sim_library_add_skeleton()): a
 * refusal comes back with the file's path in front of sim's message, and
 * each warning goes to the caller's callback with the path.
 */
#include "assets.h"

#include <cJSON.h>

#include <dirent.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEG (3.14159265358979 / 180.0)

__attribute__((format(printf, 3, 4))) static int fail(char* err, size_t cap, const char* fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, cap, fmt, ap);
    va_end(ap);
    return -1;
}

static char* read_file(const char* path, size_t* len) {
    FILE* f = fopen(path, "rb");
    if (f == NULL) {
        return NULL;
    }
    char* buf = NULL;
    if (fseek(f, 0, SEEK_END) == 0) {
        long n = ftell(f);
        if (n >= 0 && n < 16 * 1024 * 1024 && fseek(f, 0, SEEK_SET) == 0) {
            buf = malloc((size_t)n + 1);
            if (buf != NULL && fread(buf, 1, (size_t)n, f) == (size_t)n) {
                buf[n] = '\0';
                *len = (size_t)n;
            } else {
                free(buf);
                buf = NULL;
            }
        }
    }
    fclose(f);
    return buf;
}

static bool get_vec3(const cJSON* o, const char* key, sim_vec3* out) {
    const cJSON* a = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!cJSON_IsArray(a) || cJSON_GetArraySize(a) != 3) {
        return false;
    }
    float v[3];
    for (int i = 0; i < 3; ++i) {
        const cJSON* e = cJSON_GetArrayItem(a, i);
        if (!cJSON_IsNumber(e)) {
            return false;
        }
        v[i] = (float)e->valuedouble;
    }
    out->x = v[0];
    out->y = v[1];
    out->z = v[2];
    return true;
}

static bool get_pair(const cJSON* o, const char* key, float* a, float* b) {
    const cJSON* arr = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!cJSON_IsArray(arr) || cJSON_GetArraySize(arr) != 2 ||
        !cJSON_IsNumber(cJSON_GetArrayItem(arr, 0)) ||
        !cJSON_IsNumber(cJSON_GetArrayItem(arr, 1))) {
        return false;
    }
    *a = (float)cJSON_GetArrayItem(arr, 0)->valuedouble;
    *b = (float)cJSON_GetArrayItem(arr, 1)->valuedouble;
    return true;
}

static bool get_pair_deg(const cJSON* o, const char* key, float* a, float* b) {
    if (!get_pair(o, key, a, b)) {
        return false;
    }
    *a = (float)(*a * DEG);
    *b = (float)(*b * DEG);
    return true;
}

static bool copy_name(char* dst, const cJSON* s) {
    if (!cJSON_IsString(s) || strlen(s->valuestring) == 0 ||
        strlen(s->valuestring) >= SIM_NAME_MAX) {
        return false;
    }
    memcpy(dst, s->valuestring, strlen(s->valuestring) + 1);
    return true;
}

static int bone_index(const sim_skeleton_def* d, uint32_t count, const char* name) {
    for (uint32_t i = 0; i < count; ++i) {
        if (strcmp(d->bones[i].name, name) == 0) {
            return (int)i;
        }
    }
    return -1;
}

static bool get_number(const cJSON* o, const char* key, float* out) {
    const cJSON* v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!cJSON_IsNumber(v)) {
        return false;
    }
    *out = (float)v->valuedouble;
    return true;
}

// "garments": [{"kind", "bone", "from"/"to" (cape) or "center" (skirt,
// hair), "radius" (skirt: [top, bottom]; hair: a number), "arc_deg" (hair),
// "length", "cols", "rows", "mass"}] (assets/README.md, "Garments"). Ranges
// are the library's to check (sim_library_add_skeleton).
static int parse_garments(const cJSON* root, sim_skeleton_def* d, char* err, size_t cap) {
    const cJSON* list = cJSON_GetObjectItemCaseSensitive(root, "garments");
    if (list == NULL) {
        return 0;
    }
    if (!cJSON_IsArray(list) || cJSON_GetArraySize(list) > SIM_MAX_GARMENTS) {
        return fail(err, cap, "skeleton %s: \"garments\" must list at most %d garments", d->name,
                    SIM_MAX_GARMENTS);
    }
    const cJSON* o;
    cJSON_ArrayForEach(o, list) {
        sim_garment_def* g = &d->garments[d->garment_count];
        const cJSON* kind = cJSON_GetObjectItemCaseSensitive(o, "kind");
        const cJSON* bone = cJSON_GetObjectItemCaseSensitive(o, "bone");
        g->kind =
            cJSON_IsString(kind) ? sim_garment_kind_from_name(kind->valuestring) : SIM_GARMENT_NONE;
        if (g->kind == SIM_GARMENT_NONE) {
            return fail(err, cap, "skeleton %s: garment %u: kind must be cape, skirt or hair",
                        d->name, d->garment_count);
        }
        const char* kn = sim_garment_kind_name(g->kind);
        int bi = cJSON_IsString(bone) ? bone_index(d, d->bone_count, bone->valuestring) : -1;
        if (bi < 0) {
            return fail(err, cap, "skeleton %s: garment %s: bone names no bone", d->name, kn);
        }
        g->bone = (uint32_t)bi;
        const cJSON* cols = cJSON_GetObjectItemCaseSensitive(o, "cols");
        const cJSON* rows = cJSON_GetObjectItemCaseSensitive(o, "rows");
        if (!get_number(o, "length", &g->length) || !get_number(o, "mass", &g->mass) ||
            !cJSON_IsNumber(cols) || !cJSON_IsNumber(rows) || cols->valuedouble < 0 ||
            rows->valuedouble < 0 || cols->valuedouble > 1e6 || rows->valuedouble > 1e6) {
            return fail(err, cap, "skeleton %s: garment %s needs length, mass, cols and rows",
                        d->name, kn);
        }
        g->cols = (uint32_t)cols->valuedouble;
        g->rows = (uint32_t)rows->valuedouble;
        bool ok;
        if (g->kind == SIM_GARMENT_CAPE) {
            ok = get_vec3(o, "from", &g->a) && get_vec3(o, "to", &g->b);
        } else if (g->kind == SIM_GARMENT_SKIRT) {
            ok = get_vec3(o, "center", &g->a) &&
                 get_pair(o, "radius", &g->radius_top, &g->radius_bottom);
        } else {
            ok = get_vec3(o, "center", &g->a) && get_number(o, "radius", &g->radius_top) &&
                 get_number(o, "arc_deg", &g->arc);
            g->arc *= (float)DEG;
        }
        if (!ok) {
            return fail(err, cap, "skeleton %s: garment %s needs %s", d->name, kn,
                        g->kind == SIM_GARMENT_CAPE    ? "from and to"
                        : g->kind == SIM_GARMENT_SKIRT ? "center and radius [top, bottom]"
                                                       : "center, radius and arc_deg");
        }
        d->garment_count++;
    }
    return 0;
}

static int parse_skeleton(const cJSON* root, sim_skeleton_def* d, char* err, size_t cap) {
    memset(d, 0, sizeof *d);
    if (!copy_name(d->name, cJSON_GetObjectItemCaseSensitive(root, "name"))) {
        return fail(err, cap, "a skeleton needs a \"name\" of 1-31 bytes");
    }
    const cJSON* bones = cJSON_GetObjectItemCaseSensitive(root, "bones");
    if (!cJSON_IsArray(bones) || cJSON_GetArraySize(bones) < 1 ||
        cJSON_GetArraySize(bones) > SIM_MAX_BONES) {
        return fail(err, cap, "skeleton %s: \"bones\" must list 1-%d bones", d->name,
                    SIM_MAX_BONES);
    }
    uint32_t n = 0;
    const cJSON* b;
    cJSON_ArrayForEach(b, bones) {
        sim_bone_def* bd = &d->bones[n];
        if (!copy_name(bd->name, cJSON_GetObjectItemCaseSensitive(b, "name"))) {
            return fail(err, cap, "skeleton %s: bone %u needs a name", d->name, n);
        }
        const cJSON* parent = cJSON_GetObjectItemCaseSensitive(b, "parent");
        bd->parent = -1;
        if (cJSON_IsString(parent)) {
            bd->parent = bone_index(d, n, parent->valuestring);
            if (bd->parent < 0) {
                return fail(err, cap, "skeleton %s: bone %s: parent %s must come first", d->name,
                            bd->name, parent->valuestring);
            }
        }
        const cJSON* radius = cJSON_GetObjectItemCaseSensitive(b, "radius");
        const cJSON* mass = cJSON_GetObjectItemCaseSensitive(b, "mass");
        if (!get_vec3(b, "head", &bd->head) || !get_vec3(b, "tail", &bd->tail) ||
            !cJSON_IsNumber(radius) || !cJSON_IsNumber(mass)) {
            return fail(err, cap, "skeleton %s: bone %s needs head, tail, radius and mass", d->name,
                        bd->name);
        }
        bd->radius = (float)radius->valuedouble;
        bd->mass = (float)mass->valuedouble;
        const cJSON* joint = cJSON_GetObjectItemCaseSensitive(b, "joint");
        const cJSON* friction = cJSON_GetObjectItemCaseSensitive(joint, "friction");
        bd->friction = cJSON_IsNumber(friction) ? (float)friction->valuedouble : -1.0f;
        if (n > 0) {
            const cJSON* type = cJSON_GetObjectItemCaseSensitive(joint, "type");
            if (!cJSON_IsString(type)) {
                return fail(err, cap, "skeleton %s: bone %s needs a joint with a type", d->name,
                            bd->name);
            }
            if (strcmp(type->valuestring, "fixed") == 0) {
                bd->joint = SIM_JOINT_FIXED;
            } else if (strcmp(type->valuestring, "hinge") == 0) {
                bd->joint = SIM_JOINT_HINGE;
                if (!get_vec3(joint, "axis", &bd->axis) ||
                    !get_pair_deg(joint, "range_deg", &bd->twist_min, &bd->twist_max)) {
                    return fail(err, cap, "skeleton %s: hinge %s needs axis and range_deg", d->name,
                                bd->name);
                }
            } else if (strcmp(type->valuestring, "ball") == 0) {
                bd->joint = SIM_JOINT_BALL;
                if (!get_vec3(joint, "axis", &bd->axis) ||
                    !get_pair_deg(joint, "swing_deg", &bd->swing1, &bd->swing2) ||
                    !get_pair_deg(joint, "twist_deg", &bd->twist_min, &bd->twist_max)) {
                    return fail(err, cap,
                                "skeleton %s: ball joint %s needs axis, swing_deg and twist_deg",
                                d->name, bd->name);
                }
            } else {
                return fail(err, cap,
                            "skeleton %s: bone %s: joint type must be ball, hinge or "
                            "fixed",
                            d->name, bd->name);
            }
        }
        n++;
    }
    d->bone_count = n;
    const cJSON* up = cJSON_GetObjectItemCaseSensitive(root, "up_bone");
    int ui = cJSON_IsString(up) ? bone_index(d, n, up->valuestring) : 0;
    if (ui < 0) {
        return fail(err, cap, "skeleton %s: up_bone names no bone", d->name);
    }
    d->up_bone = (uint32_t)ui;
    const cJSON* solver = cJSON_GetObjectItemCaseSensitive(root, "solver");
    if (solver != NULL) {
        if (cJSON_IsString(solver) && strcmp(solver->valuestring, "maximal") == 0) {
            d->solver = SIM_CHAR_SOLVER_MAXIMAL;
        } else if (cJSON_IsString(solver) && strcmp(solver->valuestring, "reduced") == 0) {
            d->solver = SIM_CHAR_SOLVER_REDUCED;
        } else {
            return fail(err, cap, "skeleton %s: solver must be \"maximal\" or \"reduced\"",
                        d->name);
        }
    }
    const cJSON* base = cJSON_GetObjectItemCaseSensitive(root, "base");
    if (base != NULL) {
        if (!cJSON_IsString(base) ||
            (strcmp(base->valuestring, "free") != 0 && strcmp(base->valuestring, "fixed") != 0)) {
            return fail(err, cap, "skeleton %s: base must be \"free\" or \"fixed\"", d->name);
        }
        d->fixed_base = strcmp(base->valuestring, "fixed") == 0;
    }
    const cJSON* drive = cJSON_GetObjectItemCaseSensitive(root, "drive");
    if (drive != NULL) {
        const cJSON* kp = cJSON_GetObjectItemCaseSensitive(drive, "kp");
        const cJSON* kd = cJSON_GetObjectItemCaseSensitive(drive, "kd");
        if (!cJSON_IsObject(drive) || cJSON_GetArraySize(drive) != 2 || kp == NULL || kd == NULL) {
            return fail(err, cap,
                        "skeleton %s: drive must be {\"kp\": N*m/rad, \"kd\": N*m*s/rad} and "
                        "nothing else%s",
                        d->name,
                        !cJSON_IsObject(drive) ? ""
                        : kp == NULL           ? " (kp is missing)"
                        : kd == NULL           ? " (kd is missing)"
                                               : " (an unknown key)");
        }
        const cJSON* gains[2] = {kp, kd};
        for (int k = 0; k < 2; ++k) {
            const cJSON* g = gains[k];
            if (!cJSON_IsNumber(g) || !(g->valuedouble >= 0.0 && g->valuedouble <= 1e5)) {
                return fail(err, cap, "skeleton %s: drive %s must be a number in [0, 1e5] (%s)",
                            d->name, k == 0 ? "kp" : "kd", k == 0 ? "N*m/rad" : "N*m*s/rad");
            }
        }
        d->drive_kp = (float)kp->valuedouble;
        d->drive_kd = (float)kd->valuedouble;
    }
    return parse_garments(root, d, err, cap);
}

// A rotation: [ax, ay, az, deg] or a list of them (applied first to last).
static bool parse_rotation(const cJSON* r, sim_quat* out) {
    sim_quat q = {0.0f, 0.0f, 0.0f, 1.0f};
    const cJSON* list = r;
    bool single =
        cJSON_IsArray(r) && cJSON_GetArraySize(r) == 4 && cJSON_IsNumber(cJSON_GetArrayItem(r, 0));
    int count = single ? 1 : (cJSON_IsArray(r) ? cJSON_GetArraySize(r) : 0);
    if (count == 0) {
        return false;
    }
    for (int k = 0; k < count; ++k) {
        const cJSON* item = single ? list : cJSON_GetArrayItem(list, k);
        if (!cJSON_IsArray(item) || cJSON_GetArraySize(item) != 4) {
            return false;
        }
        double v[4];
        for (int i = 0; i < 4; ++i) {
            const cJSON* e = cJSON_GetArrayItem(item, i);
            if (!cJSON_IsNumber(e)) {
                return false;
            }
            v[i] = e->valuedouble;
        }
        double len = sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
        if (len < 1e-9) {
            return false;
        }
        double half = 0.5 * v[3] * DEG, s = sin(half) / len;
        sim_quat r1 = {(float)(v[0] * s), (float)(v[1] * s), (float)(v[2] * s), (float)cos(half)};
        // Applied after what came before: q = r1 · q.
        sim_quat t = {r1.w * q.x + r1.x * q.w + r1.y * q.z - r1.z * q.y,
                      r1.w * q.y - r1.x * q.z + r1.y * q.w + r1.z * q.x,
                      r1.w * q.z + r1.x * q.y - r1.y * q.x + r1.z * q.w,
                      r1.w * q.w - r1.x * q.x - r1.y * q.y - r1.z * q.z};
        q = t;
    }
    *out = q;
    return true;
}

static int parse_clip(const cJSON* root, sim_library* lib, char* err, size_t cap) {
    const cJSON* sk_name = cJSON_GetObjectItemCaseSensitive(root, "skeleton");
    const sim_skeleton_def* sk =
        cJSON_IsString(sk_name) ? sim_library_skeleton(lib, sk_name->valuestring) : NULL;
    if (sk == NULL) {
        return fail(err, cap, "a clip needs the \"skeleton\" of a skeleton already loaded");
    }
    sim_clip_def c;
    memset(&c, 0, sizeof c);
    if (!copy_name(c.name, cJSON_GetObjectItemCaseSensitive(root, "name"))) {
        return fail(err, cap, "a clip needs a \"name\" of 1-31 bytes");
    }
    c.loop = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(root, "loop"));
    const cJSON* keys = cJSON_GetObjectItemCaseSensitive(root, "keys");
    int k = cJSON_IsArray(keys) ? cJSON_GetArraySize(keys) : 0;
    if (k < 1 || k > 1024) {
        return fail(err, cap, "clip %s: \"keys\" must list 1-1024 keys", c.name);
    }
    const uint32_t n = sk->bone_count;
    float* times = calloc((size_t)k, sizeof *times);
    sim_vec3* root_pos = calloc((size_t)k, sizeof *root_pos);
    sim_quat* root_rot = calloc((size_t)k, sizeof *root_rot);
    sim_quat* rot = calloc((size_t)k * n, sizeof *rot);
    int rc = 0;
    if (times == NULL || root_pos == NULL || root_rot == NULL || rot == NULL) {
        rc = fail(err, cap, "out of memory");
        goto done;
    }
    // The root's bind position: the centre of bone 0.
    sim_vec3 bind_root = {0.5f * (sk->bones[0].head.x + sk->bones[0].tail.x),
                          0.5f * (sk->bones[0].head.y + sk->bones[0].tail.y),
                          0.5f * (sk->bones[0].head.z + sk->bones[0].tail.z)};
    for (int i = 0; i < k && rc == 0; ++i) {
        const cJSON* key = cJSON_GetArrayItem(keys, i);
        const cJSON* t = cJSON_GetObjectItemCaseSensitive(key, "t");
        if (!cJSON_IsNumber(t)) {
            rc = fail(err, cap, "clip %s: key %d needs a time \"t\"", c.name, i);
            break;
        }
        times[i] = (float)t->valuedouble;
        root_pos[i] = bind_root;
        if (cJSON_GetObjectItemCaseSensitive(key, "root_pos") != NULL &&
            !get_vec3(key, "root_pos", &root_pos[i])) {
            rc = fail(err, cap, "clip %s: key %d: root_pos must be [x, y, z]", c.name, i);
            break;
        }
        root_rot[i] = (sim_quat){0.0f, 0.0f, 0.0f, 1.0f};
        const cJSON* rr = cJSON_GetObjectItemCaseSensitive(key, "root_rot");
        if (rr != NULL && !parse_rotation(rr, &root_rot[i])) {
            rc = fail(err, cap, "clip %s: key %d: root_rot must be [ax, ay, az, deg]", c.name, i);
            break;
        }
        for (uint32_t b = 0; b < n; ++b) {
            rot[(size_t)i * n + b] = (sim_quat){0.0f, 0.0f, 0.0f, 1.0f};
        }
        const cJSON* bones = cJSON_GetObjectItemCaseSensitive(key, "bones");
        const cJSON* br;
        cJSON_ArrayForEach(br, bones) {
            int bi = bone_index(sk, n, br->string);
            if (bi < 0 || !parse_rotation(br, &rot[(size_t)i * n + (uint32_t)bi])) {
                rc = fail(err, cap, "clip %s: key %d: bone %s: unknown bone or bad rotation",
                          c.name, i, br->string);
                break;
            }
        }
    }
    if (rc == 0) {
        c.key_count = (uint32_t)k;
        c.bone_count = n;
        c.times = times;
        c.root_pos = root_pos;
        c.root_rot = root_rot;
        c.rot = rot;
        int s = sim_library_add_clip(lib, sk->name, &c);
        if (s != SIM_OK) {
            rc = fail(err, cap, "clip %s: %s", c.name, sim_strerror(s));
        }
    }
done:
    free(times);
    free(root_pos);
    free(root_rot);
    free(rot);
    return rc;
}

// Parses one skeleton file's JSON and adds it to lib; its warnings go to
// warn(ctx, path, ...). On failure the reason is in err.
static int load_skeleton(const cJSON* root, const char* path, sim_library* lib,
                         app_assets_warn_fn warn, void* ctx, char* err, size_t cap) {
    // Both are large (the report holds a message per bone): on the heap.
    sim_skeleton_def* def = malloc(sizeof *def);
    sim_skeleton_report* report = malloc(sizeof *report);
    int rc = def == NULL || report == NULL ? fail(err, cap, "out of memory")
                                           : parse_skeleton(root, def, err, cap);
    if (rc == 0) {
        int s = sim_library_add_skeleton(lib, def, report);
        if (s != SIM_OK) {
            rc = fail(err, cap, "%s",
                      report->error.kind != SIM_SKELETON_ISSUE_NONE ? report->error.message
                                                                    : sim_strerror(s));
        } else {
            for (uint32_t i = 0; i < report->warning_count && warn != NULL; ++i) {
                warn(ctx, path, def, &report->warnings[i]);
            }
        }
    }
    free(report);
    free(def);
    return rc;
}

static int load_dir(const char* dir, bool skeletons, sim_library* lib, app_assets_warn_fn warn,
                    void* ctx, char* err, size_t cap, uint32_t* loaded) {
    DIR* d = opendir(dir);
    if (d == NULL) {
        return fail(err, cap, "cannot open %s", dir);
    }
    // Sorted, so loading is the same on every machine.
    char names[256][128];
    uint32_t count = 0;
    struct dirent* ent;
    while ((ent = readdir(d)) != NULL && count < 256) {
        size_t len = strlen(ent->d_name);
        if (len > 5 && len < sizeof names[0] && strcmp(ent->d_name + len - 5, ".json") == 0) {
            memcpy(names[count++], ent->d_name, len + 1);
        }
    }
    closedir(d);
    qsort(names, count, sizeof names[0], (int (*)(const void*, const void*))strcmp);
    for (uint32_t i = 0; i < count; ++i) {
        char path[2048];
        if (snprintf(path, sizeof path, "%s/%s", dir, names[i]) >= (int)sizeof path) {
            return fail(err, cap, "%s: path too long", dir);
        }
        size_t len = 0;
        char* text = read_file(path, &len);
        cJSON* root = text != NULL ? cJSON_ParseWithLength(text, len) : NULL;
        free(text);
        if (root == NULL) {
            return fail(err, cap, "%s: cannot read or parse", path);
        }
        char inner[SIM_SKELETON_MESSAGE_MAX];
        int rc = skeletons ? load_skeleton(root, path, lib, warn, ctx, inner, sizeof inner)
                           : parse_clip(root, lib, inner, sizeof inner);
        cJSON_Delete(root);
        if (rc != 0) {
            return fail(err, cap, "%s: %s", path, inner);
        }
        (*loaded)++;
    }
    return 0;
}

int app_assets_load(const char* dir, sim_library* lib, app_assets_warn_fn warn, void* ctx,
                    char* err, size_t cap) {
    if (strlen(dir) > 1000) {
        return fail(err, cap, "the assets path is too long");
    }
    char sub[1024];
    uint32_t skeletons = 0, clips = 0;
    snprintf(sub, sizeof sub, "%.1000s/skeletons", dir);
    if (load_dir(sub, true, lib, warn, ctx, err, cap, &skeletons) != 0) {
        return -1;
    }
    snprintf(sub, sizeof sub, "%.1000s/clips", dir);
    if (load_dir(sub, false, lib, warn, ctx, err, cap, &clips) != 0) {
        return -1;
    }
    if (skeletons == 0) {
        return fail(err, cap, "no skeletons in %s/skeletons", dir);
    }
    return 0;
}
