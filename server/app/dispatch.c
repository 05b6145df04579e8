/*
 * dispatch.c: what each command does. Commands about the server or a
 * subscription (list_worlds, create_world, destroy_world, subscribe,
 * unsubscribe) are answered at once; commands that read or change a world
 * are queued and applied at its next tick boundary, in arrival order, and
 * answered with the tick they took effect at (PROTOCOL.md §2).
 *
 * Every input was validated by the protocol decoder already; what remains
 * here is what needs the world: ids, particle indices, capacities. A failed
 * command changes nothing.
 */
#include "app_internal.h"
#include "persist.h"
#include "report.h"
#include "templates.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void app__send(app_client* c, char* text, size_t len) {
    if (text != NULL) {
        app__report_text(c, text, len, net_session_send_text(c->session, text, len));
        rdp_free(text);
    }
}

void app__send_error(app_client* c, rdp_re re, rdp_code code, const char* message) {
    size_t len = 0;
    char* text = rdp_reply_error(re, code, message, &len);
    app__send(c, text, len);
}

static rdp_code code_of(int sim_err) {
    switch (sim_err) {
    case SIM_OK:
        return RDP_OK;
    case SIM_E_NOT_FINITE:
        return RDP_E_NOT_FINITE;
    case SIM_E_OUT_OF_RANGE:
        return RDP_E_OUT_OF_RANGE;
    case SIM_E_CAPACITY:
        return RDP_E_TOO_LARGE;
    case SIM_E_STALE_ID:
    case SIM_E_BAD_INDEX:
        return RDP_E_NOT_FOUND;
    case SIM_E_INVALID_ARG:
        return RDP_E_BAD_REQUEST;
    case SIM_E_BAD_STATE:
        return RDP_E_BAD_STATE;
    case SIM_E_UNKNOWN_NAME:
        return RDP_E_NOT_FOUND;
    default:
        return RDP_E_INTERNAL;
    }
}

// A message for a failed world command that names what was wrong.
// A spawn_cloth's `across` (flag RDP_GIVEN_ACROSS) or `down`, as given or
// the default ([1, 0, 0], [0, -1, 0]).
static rdp_vec3 cloth_axis(const rdp_command* cmd, uint32_t flag) {
    if (cmd->given & flag) {
        return flag == RDP_GIVEN_ACROSS ? cmd->u.spawn_cloth.across : cmd->u.spawn_cloth.down;
    }
    rdp_vec3 v = {flag == RDP_GIVEN_ACROSS ? 1.0 : 0.0, flag == RDP_GIVEN_ACROSS ? 0.0 : -1.0, 0.0};
    return v;
}

// Whether a spawn_cloth's axes pass the simulator's check: unit and
// perpendicular within 1e-3 (sim_world_spawn_cloth()).
static bool cloth_axes_ok(const rdp_command* cmd) {
    const rdp_vec3 a = cloth_axis(cmd, RDP_GIVEN_ACROSS), d = cloth_axis(cmd, RDP_GIVEN_DOWN);
    return fabs(sqrt(a.x * a.x + a.y * a.y + a.z * a.z) - 1.0) <= 1e-3 &&
           fabs(sqrt(d.x * d.x + d.y * d.y + d.z * d.z) - 1.0) <= 1e-3 &&
           fabs(a.x * d.x + a.y * d.y + a.z * d.z) <= 1e-3;
}

static void describe_failure(const app_world* w, const rdp_command* cmd, int rc, char* msg,
                             size_t cap) {
    unsigned long long world = (unsigned long long)w->id;
    unsigned long long entity = (unsigned long long)cmd->entity;
    if (w->name_error[0] != '\0') { // The command said what was wrong.
        snprintf(msg, cap, "%s", w->name_error);
        return;
    }
    switch (rc) {
    case SIM_E_STALE_ID:
        snprintf(msg, cap, "no entity %llu in world %llu%s", entity, world,
                 sim_entity_is_valid(w->sim, sim_entity_id_load(cmd->entity))
                     ? " that this command applies to"
                     : "");
        break;
    case SIM_E_BAD_STATE: {
        sim_character_view cv;
        if (cmd->op == RDP_OP_SET_PARTIAL &&
            sim_character_get_view(w->sim, sim_entity_id_load(cmd->entity), &cv) == SIM_OK &&
            cv.solver == SIM_CHAR_SOLVER_REDUCED) {
            // Its solver's reason, whatever its state: the one that lasts.
            snprintf(msg, cap,
                     "a reduced-coordinate character cannot be a partial ragdoll (PROTOCOL.md, "
                     "\"A character's solver\"); spawn it with \"solver\": \"maximal\"");
            break;
        }
        snprintf(msg, cap, "%s",
                 cmd->op == RDP_OP_START_GETUP ? "only a ragdoll can get up"
                 : cmd->op == RDP_OP_DRAG
                     ? "a garment's pinned row follows its bone and cannot be dragged; drag "
                       "another of its particles"
                     : "a ragdoll or a character getting up cannot do this");
        break;
    }
    case SIM_E_BAD_INDEX: {
        sim_entity_view v;
        sim_entity_get_view(w->sim, sim_entity_id_load(cmd->entity), &v);
        snprintf(msg, cap, "entity %llu has %u particles; particle %u does not exist", entity,
                 v.particle_count, cmd->particle);
        break;
    }
    case SIM_E_CAPACITY:
        // Spawns and set_params name their limit before they reach the
        // simulator (budget.c); a drag can only run out of drag slots.
        if (cmd->op == RDP_OP_DRAG) {
            snprintf(msg, cap,
                     "world %llu already has %u drags, the most a world may; release one "
                     "first",
                     world, w->def.max_drags);
        } else {
            snprintf(msg, cap, "world %llu has no room for this", world);
        }
        break;
    case SIM_E_OUT_OF_RANGE: {
        // The decoder has checked every field against the same ranges the
        // simulator uses, so what is left is where things are: the world is
        // a cube around the origin, and a spawn's every particle (a rope's
        // far end, a cloth's far corner, a ragdoll's feet) must lie in it.
        double e = (double)sim_world_half_extent(w->sim);
        double tear = cmd->op == RDP_OP_SPAWN_CLOTH    ? cmd->u.spawn_cloth.tear
                      : cmd->op == RDP_OP_ATTACH_CLOTH ? cmd->u.attach_cloth.tear
                      : cmd->op == RDP_OP_SET_TEAR     ? cmd->u.set_tear.ratio
                                                       : 0.0;
        if (tear > 0.0 && tear < 1.01) {
            snprintf(msg, cap,
                     "a tear ratio is 0 (never tears) or in [1.01, 100] (a stick tears past that "
                     "times its rest length), not %g",
                     tear);
        } else if (cmd->op == RDP_OP_ATTACH_CLOTH &&
                   cmd->u.attach_cloth.kind == RDP_GARMENT_SKIRT && cmd->u.attach_cloth.cols != 0 &&
                   cmd->u.attach_cloth.cols < 3) {
            snprintf(msg, cap,
                     "a skirt is a ring round the pelvis: it needs at least 3 cols, not %u",
                     cmd->u.attach_cloth.cols);
        } else if (cmd->op == RDP_OP_ATTACH_CLOTH) {
            snprintf(msg, cap,
                     "every particle of the garment must lie in the world: x, y and z each within "
                     "[-%.0f, %.0f] m",
                     e, e);
        } else if (cmd->op == RDP_OP_SPAWN_CLOTH && !cloth_axes_ok(cmd)) {
            const rdp_vec3 a = cloth_axis(cmd, RDP_GIVEN_ACROSS),
                           d = cloth_axis(cmd, RDP_GIVEN_DOWN);
            snprintf(msg, cap,
                     "`across` and `down` must be unit vectors, perpendicular, within 1e-3: "
                     "|across| = %g, |down| = %g, across·down = %g",
                     sqrt(a.x * a.x + a.y * a.y + a.z * a.z),
                     sqrt(d.x * d.x + d.y * d.y + d.z * d.z), a.x * d.x + a.y * d.y + a.z * d.z);
        } else if (cmd->op == RDP_OP_SPAWN_SOFTBODY) {
            // The decoder checked each field; what is left is the mass per
            // particle and the cube's place in the world.
            snprintf(msg, cap,
                     "a soft body's particles must each weigh at least 1 g (mass %g kg over its "
                     "lattice) and its whole cube lie in the world: x, y and z each within "
                     "[-%.0f, %.0f] m",
                     cmd->u.spawn_softbody.mass, e, e);
        } else if (cmd->op == RDP_OP_SPAWN_ROPE || cmd->op == RDP_OP_SPAWN_CLOTH ||
                   cmd->op == RDP_OP_SPAWN_RAGDOLL) {
            snprintf(msg, cap,
                     "every particle of the new %s must lie in the world: x, y and z each within "
                     "[-%.0f, %.0f] m",
                     cmd->op == RDP_OP_SPAWN_ROPE    ? "rope"
                     : cmd->op == RDP_OP_SPAWN_CLOTH ? "cloth"
                                                     : "ragdoll",
                     e, e);
        } else {
            snprintf(msg, cap, "%s", sim_strerror(rc));
        }
        break;
    }
    default:
        snprintf(msg, cap, "%s", sim_strerror(rc));
        break;
    }
}

// Fills w->bone_desc for describe of a character (its bones are in the
// body scratch from index 0).
static void describe_bones(app_world* w, sim_entity_id id, rdp_entity_state* e) {
    static const char* const joint_names[] = {"ball", "hinge", "fixed"};
    sim_character_view cv;
    sim_character_get_view(w->sim, id, &cv);
    for (uint32_t i = 0; i < e->body_count; ++i) {
        const sim_bone_def* b = &cv.skeleton->bones[i];
        rdp_bone_desc* d = &w->bone_desc[i];
        memset(d, 0, sizeof *d);
        d->name = b->name;
        d->parent = b->parent;
        d->radius = b->radius;
        d->half_length = e->body_half_length[i];
        d->mass = b->mass;
        sim_joint_view j;
        if (i > 0 && sim_character_joint_view(w->sim, id, i, &j) == SIM_OK) {
            d->joint = joint_names[j.kind];
            const float ap[3] = {j.anchor_parent.x, j.anchor_parent.y, j.anchor_parent.z};
            const float ac[3] = {j.anchor_child.x, j.anchor_child.y, j.anchor_child.z};
            const float fp[4] = {j.frame_parent.x, j.frame_parent.y, j.frame_parent.z,
                                 j.frame_parent.w};
            const float fc[4] = {j.frame_child.x, j.frame_child.y, j.frame_child.z,
                                 j.frame_child.w};
            memcpy(d->anchor_parent, ap, sizeof ap);
            memcpy(d->anchor_child, ac, sizeof ac);
            memcpy(d->frame_parent, fp, sizeof fp);
            memcpy(d->frame_child, fc, sizeof fc);
            d->swing1 = j.swing1;
            d->swing2 = j.swing2;
            d->twist_min = j.twist_min;
            d->twist_max = j.twist_max;
        }
    }
    e->bones = w->bone_desc;
}

// Fills *e with one entity's state and topology for describe.
static void entity_state(app_world* w, sim_entity_id id, rdp_entity_state* e) {
    sim_entity_view v;
    sim_entity_get_view(w->sim, id, &v);
    if (v.kind == SIM_ENTITY_CHARACTER || v.kind == SIM_ENTITY_BALL) {
        memset(e, 0, sizeof *e);
        e->entity = sim_entity_id_store(id);
        e->kind = app__kind_of(v.kind);
        app__rigid_state(w, id, v.kind, 0, e);
        if (v.kind == SIM_ENTITY_CHARACTER) {
            describe_bones(w, id, e);
        }
        return;
    }
    if (2 * v.stick_count > w->sticks_cap) {
        uint32_t* grown = realloc(w->sticks, 2 * (size_t)v.stick_count * sizeof *grown);
        if (grown != NULL) {
            w->sticks = grown;
            w->sticks_cap = 2 * v.stick_count;
        }
    }
    int k = sim_entity_copy_sticks(w->sim, id, w->sticks, w->sticks_cap / 2);
    memset(e, 0, sizeof *e);
    e->entity = sim_entity_id_store(id);
    e->kind = app__kind_of(v.kind);
    e->particle_count = v.particle_count;
    e->xyz = (const float*)v.pos;
    e->stick_count = k > 0 ? (uint32_t)k : 0;
    e->sticks = w->sticks;
    e->names = v.names;
    e->radius = v.radius;
    e->inv_mass = v.inv_mass;
    e->cols = v.cols;
    e->rows = v.rows;
    e->wrap = v.wrap;
    e->garment = sim_garment_kind_name((sim_garment_kind)v.garment);
    e->wearer = e->garment != NULL ? sim_entity_id_store(v.wearer) : 0;
    e->lod = sim_lod_name(sim_entity_lod(w->sim, id));
    if (v.kind == SIM_ENTITY_ROPE || v.kind == SIM_ENTITY_CLOTH) {
        w->cloth_desc = (rdp_cloth_desc){v.tear_ratio, v.long_range, v.self_collision, v.thickness};
        e->cloth = &w->cloth_desc;
    }
}

// Bone names to indices; SIM_E_UNKNOWN_NAME (with w->name_error set) for a
// name the character's skeleton lacks.
static int bone_indices(app_world* w, sim_entity_id id, const rdp_names* names, uint32_t* out) {
    for (uint32_t k = 0; k < names->count; ++k) {
        int i = sim_character_bone_index(w->sim, id, names->name[k]);
        if (i < 0) {
            if (i == SIM_E_UNKNOWN_NAME) {
                snprintf(w->name_error, sizeof w->name_error, "no bone \"%s\"", names->name[k]);
            }
            return i;
        }
        out[k] = (uint32_t)i;
    }
    return SIM_OK;
}

// apply_impulse: a particle of a particle entity, or a bone of a character
// at `point` (default the bone's centre), or a ball at its centre.
static int apply_impulse(app_world* w, const rdp_command* cmd, sim_entity_id id) {
    sim_entity_view v;
    if (sim_entity_get_view(w->sim, id, &v) != SIM_OK) {
        return SIM_E_STALE_ID;
    }
    sim_vec3 impulse = app__sim_vec(cmd->u.apply_impulse.impulse);
    if (v.kind == SIM_ENTITY_CHARACTER) {
        if (!(cmd->given & RDP_GIVEN_BONE)) {
            snprintf(w->name_error, sizeof w->name_error,
                     "apply_impulse on a character needs \"bone\"");
            return SIM_E_INVALID_ARG;
        }
        uint32_t bone;
        rdp_names one = {1, {{0}}};
        memcpy(one.name[0], cmd->bone, sizeof cmd->bone);
        int rc = bone_indices(w, id, &one, &bone);
        if (rc != SIM_OK) {
            return rc;
        }
        sim_bone_pose poses[SIM_MAX_BONES];
        sim_character_get_pose(w->sim, id, poses, NULL, NULL, SIM_MAX_BONES);
        sim_vec3 at = (cmd->given & RDP_GIVEN_POINT) ? app__sim_vec(cmd->u.apply_impulse.point)
                                                     : poses[bone].p;
        return sim_character_apply_impulse(w->sim, id, bone, at, impulse);
    }
    if (v.kind == SIM_ENTITY_BALL) {
        return sim_ball_apply_impulse(w->sim, id, impulse);
    }
    if (!(cmd->given & RDP_GIVEN_PARTICLE)) {
        snprintf(w->name_error, sizeof w->name_error, "apply_impulse on a %s needs \"particle\"",
                 sim_entity_kind_name(v.kind));
        return SIM_E_INVALID_ARG;
    }
    return sim_entity_apply_impulse(w->sim, id, cmd->particle, impulse);
}

// The describe body of a live entity, encoded on first use and kept (see
// app_topo): a 64×64 cloth's topology is ~300 KB of JSON and tens of
// milliseconds to encode, which a burst of describes must not pay each time.
static net_blob* describe_body(app_world* w, sim_entity_id id) {
    app_topo* t = &w->topo[id.index1 - 1];
    uint64_t key = sim_entity_id_store(id);
    const uint8_t lod = (uint8_t)sim_entity_lod(w->sim, id);
    sim_entity_view v;
    sim_entity_get_view(w->sim, id, &v);
    if (t->body != NULL && t->entity == key && t->lod == lod && t->tear == v.tear_ratio) {
        return t->body;
    }
    rdp_entity_state e;
    entity_state(w, id, &e);
    size_t len = 0;
    char* text = rdp_describe_body(&e, &len);
    net_blob* b = text != NULL ? net_blob_create(text, len) : NULL;
    rdp_free(text);
    // A character's describe carries its state and clip, which change: it
    // is small and encoded afresh each time (the caller drops it).
    if (b != NULL && rdp_kind_is_rigid(e.kind)) {
        net_blob_unref(t->body);
        t->body = b;
        t->entity = 0;
        return b;
    }
    if (b != NULL) {
        net_blob_unref(t->body);
        t->body = b;
        t->entity = key;
        t->lod = lod;
        t->tear = v.tear_ratio;
    }
    return b;
}

// Answers describe. Replies are large (hundreds of KB for a cloth), so a
// client that has not taken its earlier replies gets rate_limited instead
// of another one (what one client can make the server hold for it stays
// bounded whatever it sends), and so does one that has had its budget of
// describe bytes (what it can make the server copy per second is bounded
// however fast it reads).
static char* describe(app_server* app, app_world* w, app_client* c, const rdp_command* cmd,
                      sim_entity_id id, size_t* len) {
    size_t waiting = net_session_queued_bytes(c->session);
    char msg[160];
    if (waiting > app->reply_backlog_limit) {
        snprintf(msg, sizeof msg,
                 "%zu bytes of replies are waiting to be sent to this client (the limit is %zu); "
                 "read them, then retry",
                 waiting, app->reply_backlog_limit);
        return rdp_reply_error(rdp_re_of(cmd), RDP_E_RATE_LIMITED, msg, len);
    }
    net_blob* body = describe_body(w, id);
    uint64_t retry_ms = 0;
    if (body != NULL && !app__bucket_take(&c->describe_budget, uv_hrtime(), body->len, &retry_ms)) {
        snprintf(msg, sizeof msg,
                 "this client has had its %.0f MiB of describe replies (%.0f MiB/s); retry in "
                 "%llu ms",
                 APP_DESCRIBE_BURST_BYTES / (1024 * 1024), APP_DESCRIBE_BYTES_PER_S / (1024 * 1024),
                 (unsigned long long)retry_ms);
        return rdp_reply_error(rdp_re_of(cmd), RDP_E_RATE_LIMITED, msg, len);
    }
    char* text = body == NULL
                     ? NULL
                     : rdp_reply_describe(rdp_re_of(cmd), sim_world_tick(w->sim), cmd->entity,
                                          (const char*)body->data, body->len, len);
    if (text == NULL) {
        return rdp_reply_error(rdp_re_of(cmd), RDP_E_INTERNAL, "out of memory", len);
    }
    return text;
}

static int apply_set_params(const app_server* app, app_world* w, const rdp_command* cmd, char* msg,
                            size_t cap) {
    sim_params old = sim_world_params(w->sim);
    sim_params p = old;
    unsigned given = cmd->u.set_params.given;
    if (given & RDP_PARAM_GRAVITY) {
        p.gravity = app__sim_vec(cmd->u.set_params.gravity);
    }
    if (given & RDP_PARAM_DAMPING) {
        p.damping = (float)cmd->u.set_params.damping;
    }
    if (given & RDP_PARAM_ITERATIONS) {
        p.iterations = (int)cmd->u.set_params.iterations;
    }
    if (given & RDP_PARAM_SUBSTEPS) {
        p.substeps = (int)cmd->u.set_params.substeps;
    }
    if (given & RDP_PARAM_BOUNCINESS) {
        p.bounciness = (float)cmd->u.set_params.bounciness;
    }
    if (given & RDP_PARAM_FRICTION) {
        p.friction = (float)cmd->u.set_params.friction;
    }
    if (given & RDP_PARAM_WIND) {
        p.wind = app__sim_vec(cmd->u.set_params.wind);
    }
    if (given & RDP_PARAM_GUST) {
        p.gust = (float)cmd->u.set_params.gust;
    }
    if (given & RDP_PARAM_GUST_PERIOD) {
        p.gust_period = (float)cmd->u.set_params.gust_period;
    }
    if (given & RDP_PARAM_AIR_DENSITY) {
        p.air_density = (float)cmd->u.set_params.air_density;
    }
    if (given & RDP_PARAM_DRAG_COEF) {
        p.drag_coef = (float)cmd->u.set_params.drag_coef;
    }
    if (given & RDP_PARAM_LIFT_COEF) {
        p.lift_coef = (float)cmd->u.set_params.lift_coef;
    }
    // The same state under the new iterations and substeps (sim.h counts
    // the work); a change that adds no work is always allowed.
    uint64_t work = sim_world_solver_work_with(w->sim, &p);
    if (work > sim_world_solver_work(w->sim) && !app__admit_work(app, w, work, &p, msg, cap)) {
        return SIM_E_CAPACITY;
    }
    return sim_world_set_params(w->sim, &p);
}

// The simulator's def of what a spawn command makes.
typedef struct spawn_def {
    rdp_op op;
    union {
        sim_rope_def rope;
        sim_cloth_def cloth;
        sim_ragdoll_def ragdoll;
        sim_character_def character;
        sim_ball_def ball;
        sim_cloth_attach_def attach;
        sim_softbody_def softbody;
    } u;
} spawn_def;

// Fills *d from a spawn command; false for any other op. Names in the
// character def point into cmd.
static bool spawn_def_of(const rdp_command* cmd, spawn_def* d) {
    d->op = cmd->op;
    switch (cmd->op) {
    case RDP_OP_SPAWN_ROPE:
        d->u.rope = sim_rope_def_default();
        d->u.rope.anchor = app__sim_vec(cmd->u.spawn_rope.anchor);
        d->u.rope.segments = cmd->u.spawn_rope.segments;
        d->u.rope.segment_length = (float)cmd->u.spawn_rope.segment_length;
        d->u.rope.mass = (float)cmd->u.spawn_rope.mass;
        d->u.rope.compliance = (float)cmd->u.spawn_rope.compliance;
        return true;
    case RDP_OP_SPAWN_CLOTH:
        d->u.cloth = sim_cloth_def_default();
        d->u.cloth.origin = app__sim_vec(cmd->u.spawn_cloth.origin);
        d->u.cloth.cols = cmd->u.spawn_cloth.cols;
        d->u.cloth.rows = cmd->u.spawn_cloth.rows;
        d->u.cloth.spacing = (float)cmd->u.spawn_cloth.spacing;
        d->u.cloth.pin_top = cmd->u.spawn_cloth.pin == RDP_PIN_TOP;
        d->u.cloth.pin_left = cmd->u.spawn_cloth.pin == RDP_PIN_LEFT;
        d->u.cloth.mass = (float)cmd->u.spawn_cloth.mass;
        d->u.cloth.long_range = cmd->u.spawn_cloth.long_range != 0;
        d->u.cloth.tear_ratio = (float)cmd->u.spawn_cloth.tear;
        // XPBD compliances, m/N: bend's default (RDP_DEFAULT_BEND_COMPLIANCE)
        // lets a sheet drape instead of acting like card.
        d->u.cloth.stretch_compliance = (float)cmd->u.spawn_cloth.stretch_compliance;
        d->u.cloth.shear_compliance = (float)cmd->u.spawn_cloth.shear_compliance;
        d->u.cloth.bend_compliance = (float)cmd->u.spawn_cloth.bend_compliance;
        if (cmd->given & RDP_GIVEN_ACROSS) {
            d->u.cloth.across = app__sim_vec(cmd->u.spawn_cloth.across);
        }
        if (cmd->given & RDP_GIVEN_DOWN) {
            d->u.cloth.down = app__sim_vec(cmd->u.spawn_cloth.down);
        }
        d->u.cloth.self_collision = cmd->u.spawn_cloth.self_collision != 0;
        d->u.cloth.thickness = (float)cmd->u.spawn_cloth.thickness;
        return true;
    case RDP_OP_SPAWN_RAGDOLL:
        d->u.ragdoll = sim_ragdoll_def_default();
        d->u.ragdoll.position = app__sim_vec(cmd->u.spawn_ragdoll.position);
        d->u.ragdoll.facing = (float)cmd->u.spawn_ragdoll.facing;
        d->u.ragdoll.mass = (float)cmd->u.spawn_ragdoll.mass;
        return true;
    case RDP_OP_SPAWN_CHARACTER:
        d->u.character = sim_character_def_default();
        d->u.character.position = app__sim_vec(cmd->u.spawn_character.position);
        d->u.character.facing = (float)cmd->u.spawn_character.facing;
        if (cmd->u.spawn_character.skeleton[0] != '\0') {
            d->u.character.skeleton = cmd->u.spawn_character.skeleton;
        }
        if (cmd->u.spawn_character.clip[0] != '\0') {
            d->u.character.clip = cmd->u.spawn_character.clip;
        }
        // rdp_char_solver's values are sim_char_solver's.
        d->u.character.solver = (sim_char_solver)cmd->u.spawn_character.solver;
        d->u.character.state = cmd->u.spawn_character.state == RDP_SPAWN_RAGDOLL
                                   ? SIM_CHAR_RAGDOLL
                                   : SIM_CHAR_ANIMATED;
        return true;
    case RDP_OP_SPAWN_BALL:
        d->u.ball = sim_ball_def_default();
        d->u.ball.position = app__sim_vec(cmd->u.spawn_ball.position);
        d->u.ball.velocity = app__sim_vec(cmd->u.spawn_ball.velocity);
        d->u.ball.radius = (float)cmd->u.spawn_ball.radius;
        d->u.ball.mass = (float)cmd->u.spawn_ball.mass;
        return true;
    case RDP_OP_ATTACH_CLOTH:
        d->u.attach = sim_cloth_attach_def_default();
        d->u.attach.wearer = sim_entity_id_load(cmd->entity);
        d->u.attach.kind = (sim_garment_kind)cmd->u.attach_cloth.kind;
        d->u.attach.cols = cmd->u.attach_cloth.cols;
        d->u.attach.rows = cmd->u.attach_cloth.rows;
        d->u.attach.mass = (float)cmd->u.attach_cloth.mass;
        d->u.attach.long_range = cmd->u.attach_cloth.long_range != 0;
        d->u.attach.stretch_compliance = (float)cmd->u.attach_cloth.stretch_compliance;
        d->u.attach.bend_compliance = (float)cmd->u.attach_cloth.bend_compliance;
        d->u.attach.tear_ratio = (float)cmd->u.attach_cloth.tear;
        return true;
    case RDP_OP_SPAWN_SOFTBODY:
        d->u.softbody = sim_softbody_def_default();
        d->u.softbody.position = app__sim_vec(cmd->u.spawn_softbody.position);
        d->u.softbody.shape = cmd->u.spawn_softbody.shape == RDP_SOFTBODY_SPHERE
                                  ? SIM_SOFTBODY_SPHERE
                                  : SIM_SOFTBODY_BOX;
        d->u.softbody.size = (float)cmd->u.spawn_softbody.size;
        d->u.softbody.resolution = cmd->u.spawn_softbody.resolution;
        d->u.softbody.stiffness = (float)cmd->u.spawn_softbody.stiffness;
        d->u.softbody.pressure = (float)cmd->u.spawn_softbody.pressure;
        d->u.softbody.mass = (float)cmd->u.spawn_softbody.mass;
        return true;
    default:
        return false;
    }
}

int app__spawn_counts(const sim_world* sw, const sim_library* lib, const rdp_command* cmd,
                      sim_counts* out) {
    spawn_def d;
    if (!spawn_def_of(cmd, &d)) {
        return SIM_E_INVALID_ARG;
    }
    switch (d.op) {
    case RDP_OP_ATTACH_CLOTH:
        return sw != NULL ? sim_world_attach_cloth_counts(sw, &d.u.attach, out) : SIM_E_INVALID_ARG;
    case RDP_OP_SPAWN_ROPE:
        return sim_rope_def_counts(&d.u.rope, out);
    case RDP_OP_SPAWN_CLOTH:
        return sim_cloth_def_counts(&d.u.cloth, out);
    case RDP_OP_SPAWN_RAGDOLL:
        return sim_ragdoll_def_counts(&d.u.ragdoll, out);
    case RDP_OP_SPAWN_CHARACTER:
        return sim_character_def_counts(lib, &d.u.character, out);
    case RDP_OP_SPAWN_SOFTBODY:
        return sim_softbody_def_counts(&d.u.softbody, out);
    default:
        return sim_ball_def_counts(&d.u.ball, out);
    }
}

int app__spawn(sim_world* sw, const rdp_command* cmd, sim_entity_id* out) {
    spawn_def d;
    if (!spawn_def_of(cmd, &d)) {
        return SIM_E_INVALID_ARG;
    }
    switch (d.op) {
    case RDP_OP_SPAWN_ROPE:
        return sim_world_spawn_rope(sw, &d.u.rope, out);
    case RDP_OP_SPAWN_CLOTH:
        return sim_world_spawn_cloth(sw, &d.u.cloth, out);
    case RDP_OP_SPAWN_RAGDOLL:
        return sim_world_spawn_ragdoll(sw, &d.u.ragdoll, out);
    case RDP_OP_SPAWN_CHARACTER:
        return sim_world_spawn_character(sw, &d.u.character, out);
    case RDP_OP_ATTACH_CLOTH:
        return sim_world_attach_cloth(sw, &d.u.attach, out);
    case RDP_OP_SPAWN_SOFTBODY:
        return sim_world_spawn_softbody(sw, &d.u.softbody, out);
    default:
        return sim_world_spawn_ball(sw, &d.u.ball, out);
    }
}

// n static boxes as the wire has them (rounded as every number sent is), in
// a new array (free() it); NULL on OOM.
static rdp_box* wire_boxes(const sim_box* sb, uint32_t n) {
    rdp_box* boxes = calloc(n + 1, sizeof *boxes);
    for (uint32_t i = 0; boxes != NULL && i < n; ++i) {
        boxes[i].center = (rdp_vec3){app__wire(sb[i].center.x), app__wire(sb[i].center.y),
                                     app__wire(sb[i].center.z)};
        boxes[i].half_extents =
            (rdp_vec3){app__wire(sb[i].half_extents.x), app__wire(sb[i].half_extents.y),
                       app__wire(sb[i].half_extents.z)};
    }
    return boxes;
}

// The "statics" event of w (idle): the ground and every box.
static char* statics_event(app_world* w, uint64_t tick, size_t* len) {
    const uint32_t n = sim_world_box_count(w->sim);
    rdp_box* boxes = wire_boxes(sim_world_boxes(w->sim), n);
    if (boxes == NULL) {
        return NULL;
    }
    char* text = rdp_event_statics(w->id, tick, app__world_view(w)->ground, boxes, n, len);
    free(boxes);
    return text;
}

char* app__apply(app_server* app, app_world* w, app_client* c, rdp_command* cmd, size_t* len,
                 char** event, size_t* event_len) {
    rdp_reply_fields f;
    memset(&f, 0, sizeof f);
    f.has_tick = true;
    f.tick = sim_world_tick(w->sim) + 1; // the first tick whose state reflects it
    sim_entity_id entity = sim_entity_id_load(cmd->entity);
    sim_entity_id spawned = {0, 0};
    rdp_params params;
    sim_picked_tick seen = {0, false}; // a seen_tick's (lag.c)
    int rc = SIM_OK;
    // Set by a check that names the limit it refused on; else the failure
    // is described from rc below.
    char msg[256] = "";
    w->name_error[0] = '\0';
    w->apply_changed = false;

    switch (cmd->op) {
    case RDP_OP_SPAWN_ROPE:
    case RDP_OP_SPAWN_CLOTH:
    case RDP_OP_SPAWN_RAGDOLL:
    case RDP_OP_SPAWN_CHARACTER:
    case RDP_OP_SPAWN_BALL:
    case RDP_OP_ATTACH_CLOTH:
    case RDP_OP_SPAWN_SOFTBODY:
        rc = app__admit_spawn(app, w, cmd, msg, sizeof msg);
        if (rc == SIM_OK) {
            rc = app__spawn(w->sim, cmd, &spawned);
        }
        if (rc == SIM_E_UNKNOWN_NAME && cmd->op == RDP_OP_ATTACH_CLOTH) {
            snprintf(w->name_error, sizeof w->name_error,
                     "the skeleton of character %llu has no %s garment (assets/README.md, "
                     "\"Garments\")",
                     (unsigned long long)cmd->entity,
                     sim_garment_kind_name((sim_garment_kind)cmd->u.attach_cloth.kind));
        } else if (rc == SIM_E_UNKNOWN_NAME) {
            const char* sk = cmd->u.spawn_character.skeleton;
            const char* clip = cmd->u.spawn_character.clip;
            snprintf(w->name_error, sizeof w->name_error, "no skeleton \"%s\" with a clip \"%s\"",
                     sk[0] != '\0' ? sk : "humanoid", clip[0] != '\0' ? clip : "idle");
        }
        break;
    case RDP_OP_DESPAWN:
        if (w->apply_role < APP_ROLE_ADMIN && sim_entity_is_valid(w->sim, entity) &&
            w->owners[entity.index1 - 1] != w->apply_owner) {
            char denied[96];
            snprintf(denied, sizeof denied,
                     "entity %llu is not this connection's to despawn (only an admin may)",
                     (unsigned long long)cmd->entity);
            return rdp_reply_error(rdp_re_of(cmd), RDP_E_FORBIDDEN, denied, len);
        }
        rc = sim_world_despawn(w->sim, entity);
        if (rc == SIM_OK) {
            app__topo_forget(w, cmd->entity);
        }
        break;
    case RDP_OP_DESCRIBE:
        if (!sim_entity_is_valid(w->sim, entity)) {
            rc = SIM_E_STALE_ID;
        } else if (c == NULL) {
            return NULL; // it reads nothing, and the asker has gone
        } else {
            return describe(app, w, c, cmd, entity, len);
        }
        break;
    case RDP_OP_APPLY_IMPULSE:
        if (cmd->given & RDP_GIVEN_SEEN_TICK) {
            rc = app__lag_impulse(w, cmd, &seen, msg, sizeof msg);
            f.has_seen_tick = rc == SIM_OK;
        }
        if (rc == SIM_OK) {
            rc = apply_impulse(w, cmd, entity);
        }
        break;
    case RDP_OP_RAYCAST:
        // A question: nothing changes, nothing is journaled. Its tick is
        // the state it asked about.
        return app__lag_raycast(w, cmd, sim_world_tick(w->sim), len);
    case RDP_OP_SET_TEAR:
        rc = sim_entity_set_tear(w->sim, entity, (float)cmd->u.set_tear.ratio);
        break;
    case RDP_OP_KILL: {
        if (cmd->given & RDP_GIVEN_SEEN_TICK) {
            // Judged at the tick the client saw; cmd becomes what it resolved to.
            rc = app__lag_kill(w, cmd, &seen, msg, sizeof msg);
            f.has_seen_tick = rc == SIM_OK;
        }
        uint32_t bone = 0;
        if (rc == SIM_OK && (cmd->given & RDP_GIVEN_BONE)) {
            rdp_names one = {1, {{0}}};
            memcpy(one.name[0], cmd->bone, sizeof cmd->bone);
            rc = bone_indices(w, entity, &one, &bone);
            if (rc == SIM_OK) {
                rc = sim_character_kill_bone(w->sim, entity, bone,
                                             app__sim_vec(cmd->u.kill.hit_point),
                                             app__sim_vec(cmd->u.kill.impulse));
            }
        } else if (rc == SIM_OK) {
            rc = sim_character_kill(w->sim, entity, app__sim_vec(cmd->u.kill.hit_point),
                                    app__sim_vec(cmd->u.kill.impulse), &bone);
        }
        sim_character_view cv;
        if (rc == SIM_OK && sim_character_get_view(w->sim, entity, &cv) == SIM_OK) {
            f.bone = cv.skeleton->bones[bone].name;
        }
        break;
    }
    case RDP_OP_START_GETUP:
        rc = sim_character_start_getup(w->sim, entity, (float)cmd->u.start_getup.blend_time,
                                       &f.clip);
        if (rc == SIM_E_UNKNOWN_NAME) {
            snprintf(w->name_error, sizeof w->name_error,
                     "this skeleton has no getup_front or getup_back clip");
        }
        break;
    case RDP_OP_SET_DRIVE:
    case RDP_OP_SET_PARTIAL: {
        uint32_t bones[RDP_MAX_BONES];
        rc = bone_indices(w, entity, &cmd->bones, bones);
        if (rc == SIM_OK && cmd->op == RDP_OP_SET_DRIVE) {
            rc = sim_character_set_drive(w->sim, entity, (float)cmd->u.set_drive.kp,
                                         (float)cmd->u.set_drive.kd, bones, cmd->bones.count,
                                         (float)cmd->u.set_drive.ramp_time);
        } else if (rc == SIM_OK) {
            rc = sim_character_set_partial(w->sim, entity, bones, cmd->bones.count);
        }
        break;
    }
    case RDP_OP_PLAY:
        rc = sim_character_play(w->sim, entity, cmd->u.play.clip);
        if (rc == SIM_E_UNKNOWN_NAME) {
            snprintf(w->name_error, sizeof w->name_error, "no clip \"%s\" for this skeleton",
                     cmd->u.play.clip);
        }
        break;
    case RDP_OP_DRAG:
        rc = sim_entity_drag(w->sim, entity, cmd->particle, app__sim_vec(cmd->u.drag.target));
        break;
    case RDP_OP_RELEASE:
        rc = sim_entity_release(w->sim, entity, cmd->particle);
        break;
    case RDP_OP_ADD_BOX: {
        const rdp_vec3 at = cmd->u.add_box.center, h = cmd->u.add_box.half_extents;
        sim_box box = {{(float)at.x, (float)at.y, (float)at.z},
                       {(float)h.x, (float)h.y, (float)h.z}};
        rc = sim_world_add_box(w->sim, box);
        if (rc == SIM_E_CAPACITY) {
            snprintf(msg, sizeof msg, "world %llu has %u boxes, its limit",
                     (unsigned long long)w->id, sim_world_box_count(w->sim));
        } else if (rc != SIM_OK) {
            snprintf(msg, sizeof msg, "a box's half extents must be in (0, 1000] m");
        } else {
            // Everyone watching sees the level change (subscribe's statics).
            *event = statics_event(w, f.tick, event_len);
        }
        break;
    }
    case RDP_OP_SET_PARAMS:
        rc = apply_set_params(app, w, cmd, msg, sizeof msg);
        if (rc == SIM_OK) {
            params = app__params_of(w);
            f.params = &params;
            // Everyone watching sees the new parameters (sliders stay in sync).
            *event = rdp_event_params(w->id, f.tick, &params, event_len);
        }
        break;
    default:
        rc = SIM_E_INVALID_ARG;
        break;
    }
    if (rc != SIM_OK) {
        if (msg[0] == '\0') {
            describe_failure(w, cmd, rc, msg, sizeof msg);
        }
        return rdp_reply_error(rdp_re_of(cmd), code_of(rc), msg, len);
    }
    if (!SIM_ID_IS_NULL(spawned)) {
        f.has_entity = true;
        f.entity = sim_entity_id_store(spawned);
        w->owners[spawned.index1 - 1] = w->apply_owner;
    }
    if (f.has_seen_tick) {
        f.seen_tick = seen.tick;
        f.clamped = seen.clamped;
    }
    w->apply_changed = true; // the journal keeps it (journal.c)
    return rdp_reply_ok(rdp_re_of(cmd), &f, len);
}

// ---------------------------------------------------------------------------
// Immediate commands
// ---------------------------------------------------------------------------

static void reply_ok(app_client* c, const rdp_command* cmd, const rdp_reply_fields* f) {
    size_t len = 0;
    char* text = rdp_reply_ok(rdp_re_of(cmd), f, &len);
    app__send(c, text, len);
}

static void list_worlds(app_server* app, app_client* c, const rdp_command* cmd) {
    rdp_world_info* infos = calloc(app->world_count + 1, sizeof *infos);
    if (infos == NULL) {
        app__send_error(c, rdp_re_of(cmd), RDP_E_INTERNAL, "out of memory");
        return;
    }
    rdp_reply_fields f;
    memset(&f, 0, sizeof f);
    f.has_worlds = true;
    f.worlds = infos;
    f.worlds_count = app__world_infos(app, infos);
    reply_ok(c, cmd, &f);
    free(infos);
}

static void subscribe(app_world* w, app_client* c, const rdp_command* cmd) {
    rdp_code err = RDP_OK;
    app_sub* sub = app__subscribe(w, c, cmd->u.subscribe.format, cmd->u.subscribe.rate_hz, &err);
    if (sub == NULL) {
        app__send_error(c, rdp_re_of(cmd), err,
                        err == RDP_E_TOO_LARGE ? "a client may subscribe to 8 worlds at most"
                                               : "out of memory");
        return;
    }
    sub->events = cmd->u.subscribe.events;
    sub->impact_speed = (float)cmd->u.subscribe.impact_speed;
    if (!app__sub_set_budget(sub, cmd->u.subscribe.bytes_per_s)) {
        app__unsubscribe(w, c);
        app__send_error(c, rdp_re_of(cmd), RDP_E_INTERNAL, "out of memory");
        return;
    }
    // Answered at once, so from the world's view: a worker may be stepping
    // it (the tick is the one before that step, whose snapshot comes first).
    const app_world_view* v = app__world_view(w);
    rdp_params params = app__params_of(w);
    uint32_t nbox = v->box_count;
    rdp_box* boxes = wire_boxes(v->boxes, nbox);
    if (boxes == NULL) {
        app__send_error(c, rdp_re_of(cmd), RDP_E_INTERNAL, "out of memory");
        return;
    }
    rdp_reply_fields f;
    memset(&f, 0, sizeof f);
    f.has_tick = true;
    f.tick = v->tick;
    f.has_world = true;
    f.world = w->id;
    f.tick_hz = w->tick_hz;
    f.format = sub->format == RDP_FORMAT_BINARY ? "binary" : "json";
    f.rate_hz = sub->rate_hz;
    f.bytes_per_s = sub->bytes_per_s;
    f.solver = app__solver_name(w->def.solver);
    f.params = &params;
    f.has_statics = true;
    f.ground = v->ground;
    f.boxes = boxes;
    f.box_count = nbox;
    reply_ok(c, cmd, &f);
    free(boxes);
}

// Remembers what a client drags (so a disconnect can release it) and
// forgets what it releases. Past APP_MAX_DRAGS the oldest is forgotten,
// which can only happen to a client holding more drags than a world allows.
static void track_drag(app_client* c, const rdp_command* cmd) {
    for (uint32_t k = 0; k < c->drag_count; ++k) {
        app_drag* d = &c->drags[k];
        if (d->world == cmd->world && d->entity == cmd->entity && d->particle == cmd->particle) {
            if (cmd->op == RDP_OP_RELEASE) {
                *d = c->drags[--c->drag_count];
            }
            return;
        }
    }
    if (cmd->op != RDP_OP_DRAG) {
        return;
    }
    if (c->drag_count == APP_MAX_DRAGS) {
        memmove(&c->drags[0], &c->drags[1], (APP_MAX_DRAGS - 1) * sizeof c->drags[0]);
        c->drag_count--;
    }
    app_drag d = {cmd->world, cmd->entity, cmd->particle};
    c->drags[c->drag_count++] = d;
}

void app__dispatch(app_server* app, app_client* c, const rdp_command* cmd) {
    // The role first, whatever the world: a viewer learns nothing about
    // worlds from a command it may not send.
    char denied[192];
    const char* named = cmd->op == RDP_OP_CREATE_WORLD ? cmd->u.create_world.name : NULL;
    bool about_a_world = cmd->op != RDP_OP_LIST_WORLDS && cmd->op != RDP_OP_CREATE_WORLD;
    if ((c->role < app__role_needed(cmd->op) || !about_a_world) &&
        !app__may(c, cmd->op, named, denied, sizeof denied)) {
        app__send_error(c, rdp_re_of(cmd), RDP_E_FORBIDDEN, denied);
        return;
    }
    if (cmd->op == RDP_OP_LIST_WORLDS) {
        list_worlds(app, c, cmd);
        return;
    }
    if (cmd->op == RDP_OP_CREATE_WORLD) {
        app_world* w = NULL;
        uint32_t limits[RDP_LIMIT_COUNT];
        char over[160];
        if (!app__world_limits(app, &cmd->u.create_world.limits, limits, over, sizeof over)) {
            app__send_error(c, rdp_re_of(cmd), RDP_E_TOO_LARGE, over);
            return;
        }
        const char* tname = cmd->u.create_world.template_name;
        const app_template* tpl =
            tname[0] != '\0' ? app_templates_find(app->cfg.templates, tname) : NULL;
        if (tname[0] != '\0' && tpl == NULL) {
            char msg[160];
            snprintf(msg, sizeof msg, "no world template \"%s\" (the server's --templates)", tname);
            app__send_error(c, rdp_re_of(cmd), RDP_E_NOT_FOUND, msg);
            return;
        }
        sim_solver solver = app->cfg.world_solver; // the server's, unless it asked
        if (cmd->u.create_world.solver != RDP_SOLVER_DEFAULT &&
            !app__solver_from_wire((rdp_solver)cmd->u.create_world.solver, &solver)) {
            // Not from rdp_command_decode(), which stores only known solvers.
            app__send_error(c, rdp_re_of(cmd), RDP_E_BAD_REQUEST,
                            "field \"solver\" must be \"xpbd\" or \"soft_step\"");
            return;
        }
        rdp_code rc = app__world_create(app, cmd->u.create_world.name, cmd->u.create_world.tick_hz,
                                        limits, solver, &w);
        if (rc != RDP_OK) {
            char msg[96];
            if (rc == RDP_E_TOO_LARGE && app->next_world_id >= APP_MAX_WORLD_ID) {
                snprintf(msg, sizeof msg, "every world id up to 2^53 - 1 has been given");
            } else if (rc == RDP_E_TOO_LARGE) {
                snprintf(msg, sizeof msg, "the server already has %u worlds, the most it may",
                         app->world_count);
            } else {
                snprintf(msg, sizeof msg, "out of memory");
            }
            app__send_error(c, rdp_re_of(cmd), rc, msg);
            return;
        }
        char why[400] = "";
        if (tpl != NULL && app__world_from_template(app, w, tpl, why, sizeof why) != 0) {
            // A template that does not fit this world's limits: no world.
            app__world_destroy(app, w);
            app__send_error(c, rdp_re_of(cmd), RDP_E_TOO_LARGE, why);
            return;
        }
        if (app__persist_world_created(app, w, why, sizeof why) != 0) {
            // Durable before anyone hears of it, or not made at all.
            char msg[320];
            snprintf(msg, sizeof msg, "the world's state file could not be written: %s", why);
            app__persist_remove_files(app, w);
            app__world_destroy(app, w);
            app__send_error(c, rdp_re_of(cmd), RDP_E_UNAVAILABLE, msg);
            return;
        }
        rdp_reply_fields f;
        memset(&f, 0, sizeof f);
        f.has_world = true;
        f.world = w->id;
        f.has_tick = true;
        f.tick = 0;
        f.limits = limits; // what it got, the server's defaults included
        f.solver = app__solver_name(w->def.solver);
        reply_ok(c, cmd, &f);
        return;
    }
    app_world* w = app__world_find(app, cmd->world);
    if (w == NULL) {
        char msg[64];
        snprintf(msg, sizeof msg, "no world %llu", (unsigned long long)cmd->world);
        app__send_error(c, rdp_re_of(cmd), RDP_E_NOT_FOUND, msg);
        return;
    }
    if (!app__may(c, cmd->op, w->name, denied, sizeof denied)) {
        app__send_error(c, rdp_re_of(cmd), RDP_E_FORBIDDEN, denied);
        return;
    }
    rdp_reply_fields f;
    memset(&f, 0, sizeof f);
    f.has_tick = true;
    f.tick = app__world_view(w)->tick; // a worker may be stepping it
    switch (cmd->op) {
    case RDP_OP_DESTROY_WORLD:
        reply_ok(c, cmd, &f);
        app__persist_remove_files(app, w);
        app__world_destroy(app, w);
        return;
    case RDP_OP_SAVE_WORLD:
        app__persist_request(app, w, c, cmd); // answered once the file is durable
        return;
    case RDP_OP_SUBSCRIBE:
        subscribe(w, c, cmd);
        return;
    case RDP_OP_UNSUBSCRIBE:
        app__unsubscribe(w, c);
        reply_ok(c, cmd, &f);
        return;
    case RDP_OP_SET_FOCUS: {
        // Taken into the world at its next tick boundary (scheduler.c).
        app_sub* sub = app__sub_of(c, w->id);
        if (sub == NULL) {
            char msg[96];
            snprintf(msg, sizeof msg, "set_focus needs a subscription to world %llu",
                     (unsigned long long)w->id);
            app__send_error(c, rdp_re_of(cmd), RDP_E_BAD_STATE, msg);
            return;
        }
        sub->has_focus = (cmd->given & RDP_GIVEN_POINT) != 0;
        sub->focus[0] = (float)cmd->u.set_focus.point.x;
        sub->focus[1] = (float)cmd->u.set_focus.point.y;
        sub->focus[2] = (float)cmd->u.set_focus.point.z;
        sub->focus_radius = (float)cmd->u.set_focus.radius;
        reply_ok(c, cmd, &f);
        return;
    }
    case RDP_OP_ACK:
    case RDP_OP_RESYNC: {
        app_sub* sub = app__sub_of(c, w->id);
        if (sub == NULL || sub->format != RDP_FORMAT_BINARY) {
            app__send_error(c, rdp_re_of(cmd), RDP_E_BAD_STATE,
                            "acks and resyncs are for binary subscriptions");
            return;
        }
        if (cmd->op == RDP_OP_ACK) {
            app__ack(w, sub, cmd->u.ack.tick);
        } else {
            sub->full_next = true;
        }
        reply_ok(c, cmd, &f);
        return;
    }
    default:
        break;
    }
    if (c->pending >= APP_MAX_PENDING) {
        char msg[128];
        snprintf(msg, sizeof msg,
                 "this client has %u commands waiting for a tick, the most it may; wait for their "
                 "replies",
                 (unsigned)c->pending);
        app__send_error(c, rdp_re_of(cmd), RDP_E_RATE_LIMITED, msg);
        return;
    }
    if (app__world_enqueue(w, c, cmd) != RDP_OK) {
        app__send_error(c, rdp_re_of(cmd), RDP_E_RATE_LIMITED,
                        "the world's command queue is full; retry later");
        return;
    }
    if (cmd->op == RDP_OP_DRAG || cmd->op == RDP_OP_RELEASE) {
        track_drag(c, cmd);
    }
}
