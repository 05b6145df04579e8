/*
 * registry.c: the worlds of a server. A world is made here with everything
 * that hangs off it (the simulator's world, its inbox, its snapshot
 * scratch and caches), found by id, listed, and destroyed: its pending
 * commands answered not_found, its subscribers told. Ids are never reused,
 * so a stale id names no world. When a client goes, it is forgotten in
 * every world here.
 *
 * What it does not own: the clock and the inbox (scheduler.c), the
 * subscriptions and what is sent to them (broadcast.c).
 */
#include "app_internal.h"
#include "persist.h"
#include "report.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// ---------------------------------------------------------------------------
// Lifecycle
// ---------------------------------------------------------------------------

void app__world_free(app_world* w) {
    if (w == NULL) {
        return;
    }
    app__snapshot_cache_clear(w);
    for (uint32_t i = 0; w->topo != NULL && i < w->def.max_entities; ++i) {
        net_blob_unref(w->topo[i].body);
    }
    free(w->topo);
    free(w->owners);
    sim_world_destroy(w->sim);
    sim_history_destroy(w->history);
    free(w->inbox);
    free(w->replies);
    for (uint32_t i = 0; i < w->held_count; ++i) {
        rdp_free(w->held[i].text); // never durable: the world is gone
    }
    free(w->held);
    app__journal_close(w);
    free(w->jbuf);
    app__rollback_free(w);
    free(w->subs);
    free(w->ents);
    free(w->sticks);
    free(w->poses);
    free(w->body_radius);
    free(w->body_half_length);
    free(w->bone_names);
    free(w->parents);
    free(w->anchors);
    free(w->view.boxes);
    free(w->encbuf);
    app__enc_cache_free(w->enc_cache);
    rdp_buf_free(&w->jsonbuf);
    for (uint32_t i = 0; i < RDP_BASELINES; ++i) {
        rdp_qsnap_free(w->qring[i]);
    }
    free(w);
}

sim_world_def app__world_def(const app_server* app, uint32_t tick_hz) {
    sim_world_def def = sim_world_def_default();
    def.dt = 1.0f / (float)tick_hz;
    def.max_solver_work = app->cfg.max_solver_work;
    def.library = app->cfg.library;
    def.solver = app->cfg.world_solver;
    return def;
}

// Makes a world around `sim` (taken, even on error; NULL: a new empty one
// from def) with id `id` (0: the next one), in a free registry slot.
static rdp_code world_make(app_server* app, const char* name, uint32_t tick_hz,
                           const sim_world_def* def_in, sim_world* sim, uint64_t id,
                           app_world** out) {
    uint32_t slot = app->cfg.max_worlds;
    for (uint32_t i = 0; i < app->cfg.max_worlds; ++i) {
        if (app->worlds[i] == NULL) {
            slot = i;
            break;
        }
    }
    if (slot == app->cfg.max_worlds) {
        sim_world_destroy(sim);
        return RDP_E_TOO_LARGE;
    }
    app_world* w = calloc(1, sizeof *w);
    if (w == NULL) {
        sim_world_destroy(sim);
        return RDP_E_INTERNAL;
    }
    const sim_world_def def = *def_in;
    w->def = def;
    w->sim = sim;
    w->inbox_cap = app->cfg.inbox_capacity;
    w->inbox = calloc(w->inbox_cap, sizeof *w->inbox);
    w->replies = calloc(w->inbox_cap, sizeof *w->replies);
    w->held = calloc(w->inbox_cap, sizeof *w->held);
    w->journal_fd = -1;
    w->ents = calloc(def.max_entities, sizeof *w->ents);
    w->topo = calloc(def.max_entities, sizeof *w->topo);
    w->owners = calloc(def.max_entities, sizeof *w->owners);
    w->body_cap = def.max_bodies;
    w->poses = calloc(7 * (size_t)w->body_cap, sizeof *w->poses);
    w->body_radius = calloc(w->body_cap, sizeof *w->body_radius);
    w->body_half_length = calloc(w->body_cap, sizeof *w->body_half_length);
    w->bone_names = calloc(w->body_cap, sizeof *w->bone_names);
    w->parents = calloc(w->body_cap, sizeof *w->parents);
    w->anchors = calloc(6 * (size_t)w->body_cap, sizeof *w->anchors);
    w->view.boxes = calloc(def.max_boxes + 1, sizeof *w->view.boxes);
    for (uint32_t i = 0; i < RDP_BASELINES && w->parents != NULL; ++i) {
        w->qring[i] = rdp_qsnap_new();
        if (w->qring[i] != NULL) {
            w->qring[i]->tick = UINT64_MAX; // holds nothing yet
        } else {
            free(w->parents);
            w->parents = NULL; // reported below
        }
    }
    if (w->inbox == NULL || w->replies == NULL || w->held == NULL || w->ents == NULL ||
        w->topo == NULL || w->owners == NULL || w->poses == NULL || w->body_radius == NULL ||
        w->body_half_length == NULL || w->bone_names == NULL || w->parents == NULL ||
        w->anchors == NULL || w->view.boxes == NULL ||
        (w->sim == NULL && sim_world_create(&def, &w->sim) != SIM_OK)) {
        app__world_free(w);
        return RDP_E_INTERNAL;
    }
    // Lag compensation: a frame a tick for lag_history_ms, and the tick now.
    const uint64_t frames = ((uint64_t)app->cfg.lag_history_ms * tick_hz + 999u) / 1000u + 1u;
    if (app->cfg.lag_history_ms > 0 &&
        (sim_history_create(frames < SIM_MAX_HISTORY_FRAMES ? (uint32_t)frames
                                                            : SIM_MAX_HISTORY_FRAMES,
                            NULL, &w->history) != SIM_OK ||
         sim_history_record(w->history, w->sim) != SIM_OK)) {
        app__world_free(w);
        return RDP_E_INTERNAL;
    }
    // Ids are never reused: a stale id names no world (a loaded world keeps
    // its own, and the next ones come after every id loaded).
    w->id = id != 0 ? id : ++app->next_world_id;
    app->next_world_id = app->next_world_id > w->id ? app->next_world_id : w->id;
    snprintf(w->name, sizeof w->name, "%s", name);
    w->tick_hz = tick_hz;
    w->period_ns = 1000000000ull / tick_hz;
    w->last_ns = uv_hrtime();
    app->worlds[slot] = w;
    app->world_count++;
    app__sched_world_added(app, w);
    *out = w;
    return RDP_OK;
}

rdp_code app__world_create(app_server* app, const char* name, uint32_t tick_hz,
                           const uint32_t* limits, sim_solver solver, app_world** out) {
    if (app->next_world_id >= APP_MAX_WORLD_ID) {
        return RDP_E_TOO_LARGE; // every id has been given: ids are never reused
    }
    sim_world_def def = app__world_def(app, tick_hz);
    app__limits_apply(&def, limits);
    def.solver = solver;
    rdp_code rc = world_make(app, name, tick_hz, &def, NULL, 0, out);
    if (rc == RDP_OK) {
        app__report_world_created(app, *out);
    }
    return rc;
}

rdp_code app__world_adopt(app_server* app, app_state* st, app_world** out) {
    sim_world_def def = app__world_def(app, st->tick_hz);
    app__limits_apply(&def, st->limits);
    def.solver = (sim_solver)st->solver;
    sim_world* sim = st->sim;
    st->sim = NULL;
    rdp_code rc = world_make(app, st->name, st->tick_hz, &def, sim, st->id, out);
    if (rc != RDP_OK) {
        return rc;
    }
    app_world* w = *out;
    w->seq = st->seq;
    for (uint32_t i = 0; i < st->owner_count && i < def.max_entities; ++i) {
        w->owners[i] = st->owners[i];
    }
    for (uint32_t k = 0; k < st->inbox_count && k < w->inbox_cap; ++k) {
        w->inbox[k] = st->inbox[k];
        w->inbox[k].client = NULL; // its sender is gone; it still applies
    }
    w->inbox_count = st->inbox_count < w->inbox_cap ? st->inbox_count : w->inbox_cap;
    return RDP_OK;
}

app_world* app__world_find(const app_server* app, uint64_t id) {
    for (uint32_t i = 0; i < app->cfg.max_worlds; ++i) {
        if (app->worlds[i] != NULL && app->worlds[i]->id == id) {
            return app->worlds[i];
        }
    }
    return NULL;
}

void app__world_destroy(app_server* app, app_world* w) {
    app__report_world_destroyed(app, w);
    app__persist_world_gone(app, w);
    app__send_held(app, w); // applied, never durable, and moot now: each still gets its reply
    app__inbox_cancel(app, w);
    app__broadcast_world_gone(w);
    for (uint32_t i = 0; i < app->cfg.max_worlds; ++i) {
        if (app->worlds[i] == w) {
            app->worlds[i] = NULL;
        }
    }
    app->world_count--;
    if (w->busy) {
        w->doomed = true; // a worker is stepping it: freed when it comes back (scheduler.c)
    } else {
        app__world_free(w);
    }
}

void app__world_look(app_world* w) {
    const sim_world* sw = w->sim;
    app_world_view* v = &w->view;
    v->tick = sim_world_tick(sw);
    v->entities = sim_world_entity_count(sw);
    v->particles = sim_world_particle_count(sw);
    v->solver_work = sim_world_solver_work(sw);
    v->overflows = sim_world_overflows(sw);
    v->params = sim_world_params(sw);
    v->ground = sim_world_has_ground(sw);
    memset(v->by_kind, 0, sizeof v->by_kind);
    v->bones = v->balls = 0;
    for (uint32_t i = 0; i < v->entities; ++i) {
        sim_entity_id id = sim_world_entity_at(sw, i);
        sim_entity_view ev;
        if (sim_entity_get_view(sw, id, &ev) != SIM_OK || ev.kind < 1 || ev.kind > 5) {
            continue;
        }
        v->by_kind[ev.kind]++;
        sim_character_view cv;
        if (ev.kind == SIM_ENTITY_CHARACTER && sim_character_get_view(sw, id, &cv) == SIM_OK) {
            v->bones += cv.bone_count;
        } else if (ev.kind == SIM_ENTITY_BALL) {
            v->balls++;
        }
    }
    uint32_t nbox = sim_world_box_count(sw);
    v->box_count = nbox < w->def.max_boxes ? nbox : w->def.max_boxes;
    if (v->box_count > 0) {
        memcpy(v->boxes, sim_world_boxes(sw), v->box_count * sizeof *v->boxes);
    }
}

const app_world_view* app__world_view(app_world* w) {
    if (!w->busy) {
        app__world_look(w);
    }
    return &w->view;
}

uint32_t app__world_infos(const app_server* app, rdp_world_info* out) {
    uint32_t n = 0;
    for (uint32_t i = 0; i < app->cfg.max_worlds; ++i) {
        const app_world* w = app->worlds[i];
        if (w != NULL) {
            out[n].world = w->id;
            out[n].name = w->name;
            const app_world_view* v = app__world_view(app->worlds[i]);
            out[n].tick = v->tick;
            out[n].tick_hz = w->tick_hz;
            out[n].entities = v->entities;
            out[n].solver = app__solver_name(w->def.solver);
            n++;
        }
    }
    return n;
}

double app__wire(float f) {
    // Floats widen to doubles like 0.990000009536743; six decimals is what
    // the float meant (and ample for parameters and static geometry).
    return round((double)f * 1e6) / 1e6;
}

rdp_params app__params_of(app_world* w) {
    sim_params p = app__world_view(w)->params;
    rdp_params r = {{app__wire(p.gravity.x), app__wire(p.gravity.y), app__wire(p.gravity.z)},
                    app__wire(p.damping),
                    (uint32_t)p.iterations,
                    (uint32_t)p.substeps,
                    app__wire(p.bounciness),
                    app__wire(p.friction),
                    {app__wire(p.wind.x), app__wire(p.wind.y), app__wire(p.wind.z)},
                    app__wire(p.gust),
                    app__wire(p.gust_period),
                    app__wire(p.air_density),
                    app__wire(p.drag_coef),
                    app__wire(p.lift_coef)};
    return r;
}

// ---------------------------------------------------------------------------
// Describe bodies and clients
// ---------------------------------------------------------------------------

void app__topo_forget(app_world* w, uint64_t entity) {
    sim_entity_id id = sim_entity_id_load(entity);
    if (id.index1 == 0 || id.index1 > w->def.max_entities) {
        return;
    }
    app_topo* t = &w->topo[id.index1 - 1];
    if (t->entity == entity) {
        net_blob_unref(t->body);
        t->body = NULL;
        t->entity = 0;
    }
}

void app__client_gone(app_server* app, app_client* c) {
    // Its drags would otherwise hold their particles forever.
    for (uint32_t k = 0; k < c->drag_count; ++k) {
        app_world* w = app__world_find(app, c->drags[k].world);
        if (w != NULL) {
            rdp_command rel;
            memset(&rel, 0, sizeof rel);
            rel.op = RDP_OP_RELEASE;
            rel.world = c->drags[k].world;
            rel.entity = c->drags[k].entity;
            rel.particle = c->drags[k].particle;
            app__world_enqueue(w, NULL, &rel);
        }
    }
    c->drag_count = 0;
    app__persist_client_gone(app, c);
    for (uint32_t i = 0; i < app->cfg.max_worlds; ++i) {
        app_world* w = app->worlds[i];
        if (w == NULL) {
            continue;
        }
        app__unsubscribe(w, c);
        app__rollback_client_gone(w, c);
        app__inbox_forget_client(w, c);
    }
}
