/*
 * templates.c: world templates (templates.h, templates/README.md): loaded
 * from JSON at start, checked whole there (a bad one stops the start with
 * its file and reason, as a bad skeleton does), and applied to a new world
 * as its boxes and then its commands, each through the same app__apply()
 * a client's command goes through.
 */
#include "templates.h"

#include "app_internal.h"

#include <cJSON.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

// The ops a template's commands may be: what fills a new world, nothing
// that names an entity (there are none yet).
static bool allowed(rdp_op op) {
    switch (op) {
    case RDP_OP_SET_PARAMS:
    case RDP_OP_SPAWN_ROPE:
    case RDP_OP_SPAWN_CLOTH:
    case RDP_OP_SPAWN_RAGDOLL:
    case RDP_OP_SPAWN_CHARACTER:
    case RDP_OP_SPAWN_BALL:
    case RDP_OP_SPAWN_SOFTBODY:
        return true;
    default:
        return false;
    }
}

// A template's name from its file's: NAME.json, NAME of 1-48 [a-z0-9_-].
static bool name_of(const char* file, char* name, size_t cap) {
    size_t n = strlen(file);
    if (n <= 5 || strcmp(file + n - 5, ".json") != 0 || n - 5 > RDP_MAX_TEMPLATE_NAME ||
        n - 5 >= cap) {
        return false;
    }
    for (size_t i = 0; i < n - 5; ++i) {
        const char c = file[i];
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-')) {
            return false;
        }
    }
    memcpy(name, file, n - 5);
    name[n - 5] = '\0';
    return true;
}

static bool vec3(const cJSON* a, float lo, float hi, sim_vec3* out) {
    if (!cJSON_IsArray(a) || cJSON_GetArraySize(a) != 3) {
        return false;
    }
    float v[3];
    for (int i = 0; i < 3; ++i) {
        const cJSON* c = cJSON_GetArrayItem(a, i);
        if (!cJSON_IsNumber(c) || !isfinite(c->valuedouble) || c->valuedouble < lo ||
            c->valuedouble > hi) {
            return false;
        }
        v[i] = (float)c->valuedouble;
    }
    *out = (sim_vec3){v[0], v[1], v[2]};
    return true;
}

// Parses one template's JSON into t. Returns 0, or -1 with why (without
// the file's name).
static int parse(const char* text, size_t len, app_template* t, char* why, size_t cap) {
    cJSON* root = cJSON_ParseWithLength(text, len);
    if (!cJSON_IsObject(root)) {
        snprintf(why, cap, "not a JSON object");
        cJSON_Delete(root);
        return -1;
    }
    int rc = 0;
    const cJSON* item;
    cJSON_ArrayForEach(item, root) {
        const char* k = item->string;
        if (strcmp(k, "description") != 0 && strcmp(k, "boxes") != 0 &&
            strcmp(k, "commands") != 0) {
            snprintf(why, cap, "unknown key \"%.40s\" (description, boxes, commands)", k);
            rc = -1;
            break;
        }
    }
    const cJSON* desc = cJSON_GetObjectItemCaseSensitive(root, "description");
    const cJSON* boxes = cJSON_GetObjectItemCaseSensitive(root, "boxes");
    const cJSON* cmds = cJSON_GetObjectItemCaseSensitive(root, "commands");
    if (rc == 0 && desc != NULL) {
        if (!cJSON_IsString(desc) || strlen(desc->valuestring) >= sizeof t->description) {
            snprintf(why, cap, "\"description\" must be a string of at most %zu bytes",
                     sizeof t->description - 1);
            rc = -1;
        } else {
            snprintf(t->description, sizeof t->description, "%s", desc->valuestring);
        }
    }
    // What a world holds (sim_world_def_default(): every world's box
    // limit and extent; neither can be set per world): a template beyond
    // them could never make one.
    const sim_world_def wd = sim_world_def_default();
    const int max_boxes =
        (int)(wd.max_boxes < APP_TEMPLATE_MAX_BOXES ? wd.max_boxes : APP_TEMPLATE_MAX_BOXES);
    if (rc == 0 && boxes != NULL &&
        (!cJSON_IsArray(boxes) || cJSON_GetArraySize(boxes) > max_boxes)) {
        snprintf(why, cap, "\"boxes\" must be an array of at most %d boxes (what a world holds)",
                 max_boxes);
        rc = -1;
    }
    if (rc == 0 && cmds != NULL &&
        (!cJSON_IsArray(cmds) || cJSON_GetArraySize(cmds) > APP_TEMPLATE_MAX_COMMANDS)) {
        snprintf(why, cap, "\"commands\" must be an array of at most %d commands",
                 APP_TEMPLATE_MAX_COMMANDS);
        rc = -1;
    }
    const int nb = rc == 0 && boxes != NULL ? cJSON_GetArraySize(boxes) : 0;
    const int nc = rc == 0 && cmds != NULL ? cJSON_GetArraySize(cmds) : 0;
    t->boxes = calloc((size_t)nb + 1, sizeof *t->boxes);
    t->commands = calloc((size_t)nc + 1, sizeof *t->commands);
    if (rc == 0 && (t->boxes == NULL || t->commands == NULL)) {
        snprintf(why, cap, "out of memory");
        rc = -1;
    }
    for (int i = 0; rc == 0 && i < nb; ++i) {
        const cJSON* b = cJSON_GetArrayItem(boxes, i);
        sim_box* box = &t->boxes[t->box_count];
        if (!cJSON_IsObject(b) || cJSON_GetArraySize(b) != 2 ||
            !vec3(cJSON_GetObjectItemCaseSensitive(b, "center"), -wd.half_extent, wd.half_extent,
                  &box->center) ||
            !vec3(cJSON_GetObjectItemCaseSensitive(b, "half_extents"), 1e-3f, wd.half_extent,
                  &box->half_extents) ||
            fabsf(box->center.x) + box->half_extents.x > wd.half_extent ||
            fabsf(box->center.y) + box->half_extents.y > wd.half_extent ||
            fabsf(box->center.z) + box->half_extents.z > wd.half_extent) {
            snprintf(why, cap,
                     "boxes[%d] must be {\"center\": [x, y, z], \"half_extents\": [x, y, z]}: "
                     "the whole box within +/-%g m on each axis (the world), half extents from "
                     "10^-3 to %g m",
                     i, (double)wd.half_extent, (double)wd.half_extent);
            rc = -1;
            break;
        }
        t->box_count++;
    }
    for (int i = 0; rc == 0 && i < nc; ++i) {
        // A protocol command without its world: decoded as a client's is,
        // for world 1 (the one it is applied to is set then).
        cJSON* c = cJSON_Duplicate(cJSON_GetArrayItem(cmds, i), true);
        if (!cJSON_IsObject(c) || cJSON_HasObjectItem(c, "world") || cJSON_HasObjectItem(c, "id")) {
            snprintf(why, cap, "commands[%d] must be a command object without \"world\" or \"id\"",
                     i);
            cJSON_Delete(c);
            rc = -1;
            break;
        }
        cJSON_AddNumberToObject(c, "world", 1);
        char* json = cJSON_PrintUnformatted(c);
        cJSON_Delete(c);
        rdp_command* cmd = &t->commands[t->command_count];
        rdp_error err;
        if (json == NULL || rdp_command_decode(json, strlen(json), cmd, &err) != RDP_OK) {
            snprintf(why, cap, "commands[%d]: %s", i, json == NULL ? "out of memory" : err.message);
            rc = -1;
        } else if (!allowed(cmd->op)) {
            snprintf(why, cap,
                     "commands[%d]: %s is not a template's (set_params and the spawn_* ops are)", i,
                     rdp_op_name(cmd->op));
            rc = -1;
        } else {
            t->command_count++;
        }
        free(json);
    }
    cJSON_Delete(root);
    return rc;
}

static int by_name(const void* a, const void* b) {
    return strcmp(((const app_template*)a)->name, ((const app_template*)b)->name);
}

int app_templates_load(const char* dir, bool required, app_templates** out, char* why, size_t cap) {
    *out = NULL;
    app_templates* t = calloc(1, sizeof *t);
    if (t == NULL) {
        snprintf(why, cap, "out of memory");
        return -1;
    }
    DIR* d = opendir(dir);
    if (d == NULL) {
        if (errno == ENOENT && !required) {
            *out = t; // no templates
            return 0;
        }
        snprintf(why, cap, "cannot read the templates directory %s: %s", dir, strerror(errno));
        free(t);
        return -1;
    }
    int rc = 0;
    uint32_t cap_items = 0;
    for (struct dirent* e = readdir(d); e != NULL && rc == 0; e = readdir(d)) {
        char name[RDP_MAX_TEMPLATE_NAME + 1];
        if (e->d_name[0] == '.' || strcmp(e->d_name, "README.md") == 0) {
            continue;
        }
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (!name_of(e->d_name, name, sizeof name)) {
            snprintf(why, cap,
                     "%s: a template is NAME.json, NAME of 1 to %d lowercase letters, digits, '_' "
                     "and '-'",
                     path, RDP_MAX_TEMPLATE_NAME);
            rc = -1;
            break;
        }
        // Without blocking (a FIFO would hang the start), and only a
        // regular file.
        const int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
        struct stat st;
        if (fd >= 0 && (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))) {
            close(fd);
            snprintf(why, cap, "%s: not a regular file", path);
            rc = -1;
            break;
        }
        FILE* f = fd >= 0 ? fdopen(fd, "rb") : NULL;
        if (fd >= 0 && f == NULL) {
            close(fd);
        }
        char* text = NULL;
        long len = -1;
        if (f != NULL && fseek(f, 0, SEEK_END) == 0 && (len = ftell(f)) >= 0 && len <= (1 << 20) &&
            fseek(f, 0, SEEK_SET) == 0) {
            text = malloc((size_t)len + 1);
            if (text != NULL && fread(text, 1, (size_t)len, f) != (size_t)len) {
                free(text);
                text = NULL;
            }
        }
        if (f != NULL) {
            fclose(f);
        }
        if (text == NULL) {
            snprintf(why, cap, "%s: cannot be read (or is over 1 MiB)", path);
            rc = -1;
            break;
        }
        if (t->count == cap_items) {
            cap_items = cap_items == 0 ? 8 : 2 * cap_items;
            app_template* p = realloc(t->items, cap_items * sizeof *p);
            if (p == NULL) {
                free(text);
                snprintf(why, cap, "out of memory");
                rc = -1;
                break;
            }
            t->items = p;
        }
        app_template* tp = &t->items[t->count];
        memset(tp, 0, sizeof *tp);
        snprintf(tp->name, sizeof tp->name, "%s", name);
        t->count++;
        char reason[300];
        if (parse(text, (size_t)len, tp, reason, sizeof reason) != 0) {
            snprintf(why, cap, "%s: %s", path, reason);
            rc = -1;
        }
        free(text);
    }
    closedir(d);
    if (rc != 0) {
        app_templates_destroy(t);
        return -1;
    }
    if (t->count > 1) {
        qsort(t->items, t->count, sizeof *t->items, by_name);
    }
    *out = t;
    return 0;
}

const app_template* app_templates_find(const app_templates* t, const char* name) {
    for (uint32_t i = 0; t != NULL && i < t->count; ++i) {
        if (strcmp(t->items[i].name, name) == 0) {
            return &t->items[i];
        }
    }
    return NULL;
}

void app_templates_destroy(app_templates* t) {
    if (t == NULL) {
        return;
    }
    for (uint32_t i = 0; i < t->count; ++i) {
        free(t->items[i].boxes);
        free(t->items[i].commands);
    }
    free(t->items);
    free(t);
}

int app__world_from_template(app_server* app, app_world* w, const app_template* t, char* why,
                             size_t cap) {
    for (uint32_t i = 0; i < t->box_count; ++i) {
        int rc = sim_world_add_box(w->sim, t->boxes[i]);
        if (rc != SIM_OK) {
            snprintf(why, cap, "template \"%s\": boxes[%u] does not fit the world (%s)", t->name, i,
                     rc == SIM_E_CAPACITY ? "more boxes than its limit" : "out of range");
            return -1;
        }
    }
    w->apply_role = APP_ROLE_ADMIN;
    w->apply_owner = 0; // the server's
    for (uint32_t i = 0; i < t->command_count; ++i) {
        rdp_command cmd = t->commands[i];
        cmd.world = w->id;
        size_t len = 0, ev_len = 0;
        char* ev = NULL;
        char* reply = app__apply(app, w, NULL, &cmd, &len, &ev, &ev_len);
        rdp_free(ev);
        if (!w->apply_changed) {
            // The refusal's code and message, not its whole reply.
            cJSON* r = reply != NULL ? cJSON_Parse(reply) : NULL;
            const cJSON* e = cJSON_GetObjectItemCaseSensitive(r, "error");
            const cJSON* code = cJSON_GetObjectItemCaseSensitive(e, "code");
            const cJSON* msg = cJSON_GetObjectItemCaseSensitive(e, "message");
            snprintf(why, cap, "template \"%s\": commands[%u] (%s) was refused (%s): %.200s",
                     t->name, i, rdp_op_name(cmd.op),
                     cJSON_IsString(code) ? code->valuestring : "error",
                     cJSON_IsString(msg) ? msg->valuestring
                     : reply != NULL     ? reply
                                         : "out of memory");
            cJSON_Delete(r);
            rdp_free(reply);
            return -1;
        }
        rdp_free(reply);
    }
    return 0;
}
