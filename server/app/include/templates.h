/*
 * templates.h: world templates (templates/README.md): JSON files a world
 * can be made from: its static boxes (level geometry) and the commands
 * that fill it (parameters, entities), as a game describes its level.
 *
 * Loaded once at start (--templates DIR); a world is made from one by
 * create_world {"template": NAME}, by --world-template NAME at start, or
 * by an Agones allocation's ragdolld.dev/template annotation.
 */
#pragma once

#include "rdp.h"
#include "sim.h"

#include <stddef.h>
#include <stdint.h>

/// Boxes and commands one template may hold at most.
#define APP_TEMPLATE_MAX_BOXES    1024
#define APP_TEMPLATE_MAX_COMMANDS 256

/// One template: NAME.json in the directory.
typedef struct app_template {
    char name[RDP_MAX_TEMPLATE_NAME + 1]; ///< The file's name without ".json".
    char description[256];                ///< "description", or "".
    sim_box* boxes;                       ///< Static boxes [m], box_count of them.
    uint32_t box_count;
    rdp_command* commands; ///< Decoded as the protocol decodes them (world 0), command_count.
    uint32_t command_count;
} app_template;

/// Every template of a directory. Owned by its creator (app_templates_load()).
typedef struct app_templates {
    app_template* items;
    uint32_t count;
} app_templates;

/// Loads every NAME.json in dir (NAME: 1-48 of a-z, 0-9, '_' and '-') into
/// *out. A template is an object of "description" (string), "boxes" (an
/// array of {"center": [x, y, z], "half_extents": [x, y, z]}, metres, Y
/// up; half extents > 0) and "commands" (an array of protocol commands
/// without "world": set_params and the spawn_* ops, PROTOCOL.md), and
/// nothing else. Returns 0 (a missing directory when `required` is false
/// gives no templates), or -1 with why (cap bytes) naming the file and
/// what is wrong: not JSON, an unknown key, a box out of range, a command
/// the protocol refuses (its own message) or that is not allowed.
int app_templates_load(const char* dir, bool required, app_templates** out, char* why, size_t cap);

/// The template called name, or NULL. `t` may be NULL (no templates).
const app_template* app_templates_find(const app_templates* t, const char* name);

/// Frees what app_templates_load() made. NULL is allowed.
void app_templates_destroy(app_templates* t);
