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

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void app__send(app_client* c, char* text, size_t len) {
    if (text != NULL) {
        net_session_send_text(c->session, text, len);
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
    default:
        return RDP_E_INTERNAL;
    }
}

// A message for a failed world command that names what was wrong.
static void describe_failure(const app_world* w, const rdp_command* cmd, int rc, char* msg,
                             size_t cap) {
    unsigned long long world = (unsigned long long)w->id;
    unsigned long long entity = (unsigned long long)cmd->entity;
    switch (rc) {
    case SIM_E_STALE_ID:
        snprintf(msg, cap, "no entity %llu in world %llu", entity, world);
        break;
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
        if (cmd->op == RDP_OP_SPAWN_ROPE || cmd->op == RDP_OP_SPAWN_CLOTH ||
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

static sim_vec3 vec_of(rdp_vec3 v) {
    sim_vec3 r = {(float)v.x, (float)v.y, (float)v.z};
    return r;
}

// Fills *e with one entity's state and topology for describe.
static void entity_state(app_world* w, sim_entity_id id, rdp_entity_state* e) {
    sim_entity_view v;
    sim_entity_get_view(w->sim, id, &v);
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
    e->kind = v.kind == SIM_ENTITY_CLOTH     ? RDP_KIND_CLOTH
              : v.kind == SIM_ENTITY_RAGDOLL ? RDP_KIND_RAGDOLL
                                             : RDP_KIND_ROPE;
    e->particle_count = v.particle_count;
    e->xyz = (const float*)v.pos;
    e->stick_count = k > 0 ? (uint32_t)k : 0;
    e->sticks = w->sticks;
    e->names = v.names;
    e->radius = v.radius;
    e->inv_mass = v.inv_mass;
    e->cols = v.cols;
    e->rows = v.rows;
}

// The describe body of a live entity, encoded on first use and kept (see
// app_topo): a 64×64 cloth's topology is ~300 KB of JSON and tens of
// milliseconds to encode, which a burst of describes must not pay each time.
static net_blob* describe_body(app_world* w, sim_entity_id id) {
    app_topo* t = &w->topo[id.index1 - 1];
    uint64_t key = sim_entity_id_store(id);
    if (t->body != NULL && t->entity == key) {
        return t->body;
    }
    rdp_entity_state e;
    entity_state(w, id, &e);
    size_t len = 0;
    char* text = rdp_describe_body(&e, &len);
    net_blob* b = text != NULL ? net_blob_create(text, len) : NULL;
    rdp_free(text);
    if (b != NULL) {
        net_blob_unref(t->body);
        t->body = b;
        t->entity = key;
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
        p.gravity = vec_of(cmd->u.set_params.gravity);
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
    // Solver work is (constraints + joint limits + particles) per pass,
    // times passes (sim.h): the same state at the new pass count.
    // A change that adds no work is always allowed.
    uint64_t per_pass = sim_world_solver_work(w->sim) / app__passes(&old);
    if (app__passes(&p) > app__passes(&old) && !app__admit_work(app, w, per_pass, &p, msg, cap)) {
        return SIM_E_CAPACITY;
    }
    return sim_world_set_params(w->sim, &p);
}

int app__spawn(sim_world* sw, const rdp_command* cmd, sim_entity_id* out) {
    switch (cmd->op) {
    case RDP_OP_SPAWN_ROPE: {
        sim_rope_def d = sim_rope_def_default();
        d.anchor = vec_of(cmd->u.spawn_rope.anchor);
        d.segments = cmd->u.spawn_rope.segments;
        d.segment_length = (float)cmd->u.spawn_rope.segment_length;
        d.mass = (float)cmd->u.spawn_rope.mass;
        return sim_world_spawn_rope(sw, &d, out);
    }
    case RDP_OP_SPAWN_CLOTH: {
        sim_cloth_def d = sim_cloth_def_default();
        d.origin = vec_of(cmd->u.spawn_cloth.origin);
        d.cols = cmd->u.spawn_cloth.cols;
        d.rows = cmd->u.spawn_cloth.rows;
        d.spacing = (float)cmd->u.spawn_cloth.spacing;
        d.pin_top = cmd->u.spawn_cloth.pin_top != 0;
        d.mass = (float)cmd->u.spawn_cloth.mass;
        // A little bending compliance lets a sheet drape instead of acting
        // like card.
        d.bend_compliance = 1.0e-3f;
        return sim_world_spawn_cloth(sw, &d, out);
    }
    case RDP_OP_SPAWN_RAGDOLL: {
        sim_ragdoll_def d = sim_ragdoll_def_default();
        d.position = vec_of(cmd->u.spawn_ragdoll.position);
        d.facing = (float)cmd->u.spawn_ragdoll.facing;
        d.mass = (float)cmd->u.spawn_ragdoll.mass;
        return sim_world_spawn_ragdoll(sw, &d, out);
    }
    default:
        return SIM_E_INVALID_ARG;
    }
}

char* app__apply(app_server* app, app_world* w, app_client* c, const rdp_command* cmd, size_t* len,
                 char** event, size_t* event_len) {
    rdp_reply_fields f;
    memset(&f, 0, sizeof f);
    f.has_tick = true;
    f.tick = sim_world_tick(w->sim) + 1; // the first tick whose state reflects it
    sim_entity_id entity = sim_entity_id_load(cmd->entity);
    sim_entity_id spawned = {0, 0};
    rdp_params params;
    int rc = SIM_OK;
    // Set by a check that names the limit it refused on; else the failure
    // is described from rc below.
    char msg[256] = "";

    switch (cmd->op) {
    case RDP_OP_SPAWN_ROPE:
    case RDP_OP_SPAWN_CLOTH:
    case RDP_OP_SPAWN_RAGDOLL:
        rc = app__admit_spawn(app, w, cmd, msg, sizeof msg);
        if (rc == SIM_OK) {
            rc = app__spawn(w->sim, cmd, &spawned);
        }
        break;
    case RDP_OP_DESPAWN:
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
        rc = sim_entity_apply_impulse(w->sim, entity, cmd->particle,
                                      vec_of(cmd->u.apply_impulse.impulse));
        break;
    case RDP_OP_DRAG:
        rc = sim_entity_drag(w->sim, entity, cmd->particle, vec_of(cmd->u.drag.target));
        break;
    case RDP_OP_RELEASE:
        rc = sim_entity_release(w->sim, entity, cmd->particle);
        break;
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
    }
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
    rdp_params params = app__params_of(w);
    uint32_t nbox = sim_world_box_count(w->sim);
    const sim_box* sb = sim_world_boxes(w->sim);
    rdp_box* boxes = calloc(nbox + 1, sizeof *boxes);
    if (boxes == NULL) {
        app__send_error(c, rdp_re_of(cmd), RDP_E_INTERNAL, "out of memory");
        return;
    }
    for (uint32_t i = 0; i < nbox; ++i) {
        boxes[i].center = (rdp_vec3){app__wire(sb[i].center.x), app__wire(sb[i].center.y),
                                     app__wire(sb[i].center.z)};
        boxes[i].half_extents =
            (rdp_vec3){app__wire(sb[i].half_extents.x), app__wire(sb[i].half_extents.y),
                       app__wire(sb[i].half_extents.z)};
    }
    rdp_reply_fields f;
    memset(&f, 0, sizeof f);
    f.has_tick = true;
    f.tick = sim_world_tick(w->sim);
    f.has_world = true;
    f.world = w->id;
    f.tick_hz = w->tick_hz;
    f.format = sub->format == RDP_FORMAT_BINARY ? "binary" : "json";
    f.rate_hz = sub->rate_hz;
    f.params = &params;
    f.has_statics = true;
    f.ground = sim_world_has_ground(w->sim);
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
    if (cmd->op == RDP_OP_LIST_WORLDS) {
        list_worlds(app, c, cmd);
        return;
    }
    if (cmd->op == RDP_OP_CREATE_WORLD) {
        app_world* w = NULL;
        rdp_code rc =
            app__world_create(app, cmd->u.create_world.name, cmd->u.create_world.tick_hz, &w);
        if (rc != RDP_OK) {
            char msg[96];
            if (rc == RDP_E_TOO_LARGE) {
                snprintf(msg, sizeof msg, "the server already has %u worlds, the most it may",
                         app->world_count);
            } else {
                snprintf(msg, sizeof msg, "out of memory");
            }
            app__send_error(c, rdp_re_of(cmd), rc, msg);
            return;
        }
        rdp_reply_fields f;
        memset(&f, 0, sizeof f);
        f.has_world = true;
        f.world = w->id;
        f.has_tick = true;
        f.tick = 0;
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
    rdp_reply_fields f;
    memset(&f, 0, sizeof f);
    f.has_tick = true;
    f.tick = sim_world_tick(w->sim);
    switch (cmd->op) {
    case RDP_OP_DESTROY_WORLD:
        reply_ok(c, cmd, &f);
        app__world_destroy(app, w);
        return;
    case RDP_OP_SUBSCRIBE:
        subscribe(w, c, cmd);
        return;
    case RDP_OP_UNSUBSCRIBE:
        app__unsubscribe(w, c);
        reply_ok(c, cmd, &f);
        return;
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
