/*
 * broadcast.c: what subscribers receive. It keeps the subscriptions (each
 * client's list and each world's), their binary baselines (acks), and at
 * each tick sends subscribers the world's events and, when they are due,
 * its snapshot: encoded once per format and baseline and shared by every
 * client on it (Redis-style shared payload), within each subscription's
 * byte rate.
 *
 * What it does not own: the worlds (registry.c) and when they tick
 * (scheduler.c); the sessions' queues (server/net).
 */
#include "app_internal.h"
#include "report.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

_Static_assert(sizeof(sim_vec3) == 3 * sizeof(float), "snapshots read sim_vec3 as float[3]");

// ---------------------------------------------------------------------------
// Subscriptions
// ---------------------------------------------------------------------------

static bool client_drop_sub(app_client* c, uint64_t world) {
    for (uint32_t i = 0; i < c->sub_count; ++i) {
        if (c->subs[i].world == world) {
            app__interest_free(c->subs[i].interest);
            c->subs[i] = c->subs[--c->sub_count];
            return true;
        }
    }
    return false;
}

app_sub* app__sub_of(app_client* c, uint64_t world) {
    for (uint32_t i = 0; i < c->sub_count; ++i) {
        if (c->subs[i].world == world) {
            return &c->subs[i];
        }
    }
    return NULL;
}

void app__ack(const app_world* w, app_sub* sub, uint64_t tick) {
    if (sub->acked != UINT64_MAX && tick <= sub->acked) {
        return; // older than the baseline the client has
    }
    // Only a tick the world still holds a binary snapshot of can be a
    // baseline: an ack of any other (never sent, or too old) is ignored.
    for (uint32_t i = 0; i < RDP_BASELINES; ++i) {
        if (w->qring[i] != NULL && w->qring[i]->tick == tick && tick != UINT64_MAX) {
            sub->acked = tick;
            if (sub->interest != NULL) {
                app__interest_ack(sub->interest, tick);
            }
            return;
        }
    }
}

bool app__sub_set_budget(app_sub* sub, uint32_t bytes_per_s) {
    app__interest_free(sub->interest);
    sub->interest = NULL;
    sub->bytes_per_s = bytes_per_s;
    if (bytes_per_s > 0 && sub->format == RDP_FORMAT_BINARY) {
        sub->interest = app__interest_new(bytes_per_s);
        return sub->interest != NULL;
    }
    return true;
}

void app__binary_message(app_server* app, app_client* c, const uint8_t* data, size_t len) {
    uint64_t world = 0, tick = 0;
    app_world* w = NULL;
    app_sub* sub = NULL;
    rdp_re none = {false, 0};
    if (!rdp_ack_parse(data, len, &world, &tick)) {
        app__send_error(c, none, RDP_E_BAD_REQUEST,
                        "binary frames from clients are acks of a binary subscription: 'A', "
                        "world and tick (u64 little-endian each)");
        return;
    }
    // An ack of a world that is gone, or of a subscription that has ended,
    // is one that was in flight when it went: nothing to answer.
    if ((w = app__world_find(app, world)) != NULL && (sub = app__sub_of(c, world)) != NULL &&
        sub->format == RDP_FORMAT_BINARY) {
        app__ack(w, sub, tick); // acks get no reply
    }
}

app_sub* app__subscribe(app_world* w, app_client* c, uint32_t format, uint32_t rate_hz,
                        rdp_code* err) {
    app_sub* sub = NULL;
    for (uint32_t i = 0; i < c->sub_count; ++i) {
        if (c->subs[i].world == w->id) {
            sub = &c->subs[i];
        }
    }
    if (sub == NULL) {
        if (c->sub_count == APP_MAX_SUBS) {
            *err = RDP_E_TOO_LARGE;
            return NULL;
        }
        if (w->sub_count == w->sub_cap) {
            uint32_t cap = w->sub_cap == 0 ? 8 : 2 * w->sub_cap;
            app_client** grown = realloc(w->subs, cap * sizeof *grown);
            if (grown == NULL) {
                *err = RDP_E_INTERNAL;
                return NULL;
            }
            w->subs = grown;
            w->sub_cap = cap;
        }
        w->subs[w->sub_count++] = c;
        sub = &c->subs[c->sub_count++];
        memset(sub, 0, sizeof *sub);
        sub->world = w->id;
    }
    sub->format = format;
    sub->acked = UINT64_MAX; // binary: a full snapshot first
    sub->full_next = false;
    sub->metrics_acc = 0;
    sub->snap_tokens = APP_SNAPSHOT_BYTES_PER_S;
    sub->rate_hz = rate_hz < w->tick_hz ? rate_hz : w->tick_hz;
    // The first snapshot is due at the next tick, the rest evenly spaced.
    sub->acc = w->tick_hz - sub->rate_hz;
    sub->topo_sent = false; // (re)subscribing resends topology
    sub->focus_radius = sub->focus_radius > 0.0f ? sub->focus_radius : 15.0f;
    // Made while a worker steps the world: of that batch of ticks only
    // the last counts for it (it came before that one's boundary).
    sub->mid_batch = w->busy;
    return sub;
}

bool app__unsubscribe(app_world* w, app_client* c) {
    for (uint32_t i = 0; i < w->sub_count; ++i) {
        if (w->subs[i] == c) {
            w->subs[i] = w->subs[--w->sub_count];
            client_drop_sub(c, w->id);
            return true;
        }
    }
    return false;
}

void app__broadcast_world_gone(app_world* w) {
    size_t len;
    char* ev = rdp_event_world_destroyed(w->id, app__world_view(w)->tick, &len);
    for (uint32_t i = 0; i < w->sub_count; ++i) {
        client_drop_sub(w->subs[i], w->id);
        if (ev != NULL) {
            app__report_text(w->subs[i], ev, len,
                             net_session_send_text(w->subs[i]->session, ev, len));
        }
    }
    rdp_free(ev);
}

void app__broadcast_text(app_world* w, const char* text, size_t len) {
    for (uint32_t i = 0; i < w->sub_count; ++i) {
        app__report_text(w->subs[i], text, len,
                         net_session_send_text(w->subs[i]->session, text, len));
    }
}

// ---------------------------------------------------------------------------
// Events
// ---------------------------------------------------------------------------

// Tells subscribers what happened in the world (an entity removed as
// unstable, a character changing state or coming to rest), before the
// snapshot that shows it.
// `torn` events of the sticks that tore since the last drain, one per
// entity and tick (and per 256 sticks); the simulator keeps SIM_MAX_TORN,
// the rest are counted in the last event's `more`.
static void broadcast_torn(app_world* w) {
    sim_torn torn[256];
    uint32_t pairs[2 * 256];
    uint32_t dropped = 0;
    uint32_t n;
    while ((n = sim_world_drain_torn(w->sim, torn, 256, &dropped)) > 0) {
        for (uint32_t i = 0; i < n;) {
            uint32_t j = i, k = 0;
            for (; j < n && torn[j].tick == torn[i].tick &&
                   torn[j].entity.index1 == torn[i].entity.index1;
                 ++j) {
                pairs[2 * k] = torn[j].a;
                pairs[2 * k + 1] = torn[j].b;
                k++;
            }
            size_t len = 0;
            char* text = rdp_event_torn(w->id, torn[i].tick, sim_entity_id_store(torn[i].entity),
                                        pairs, k, j == n ? dropped : 0, &len);
            if (text != NULL) {
                app__broadcast_text(w, text, len);
                rdp_free(text);
            }
            i = j;
        }
    }
}

// What one end of an impact is, on the wire: its entity and bone name.
static void impact_end(app_world* w, sim_entity_id id, uint32_t bone, uint64_t* entity,
                       const char** name) {
    *entity = sim_entity_id_store(id);
    sim_character_view cv;
    *name = sim_character_get_view(w->sim, id, &cv) == SIM_OK && bone < cv.bone_count
                ? cv.skeleton->bones[bone].name
                : NULL;
}

// `impacts` events, one per tick, to each subscription that asked for them
// (subscribe's "events"), with the impacts at least as fast as its
// impact_speed. Consecutive subscriptions with the same threshold share
// the encoding.
static void broadcast_impacts(app_world* w) {
    static sim_impact im[SIM_MAX_IMPACTS];
    static rdp_impact wire[SIM_MAX_IMPACTS];
    uint64_t dropped = 0;
    const uint32_t n = sim_world_drain_impacts(w->sim, im, SIM_MAX_IMPACTS, &dropped);
    if (n == 0) {
        return;
    }
    for (uint32_t k = 0; k < n; ++k) {
        rdp_impact* m = &wire[k];
        memset(m, 0, sizeof *m);
        impact_end(w, im[k].a, im[k].bone_a, &m->entity, &m->bone);
        m->with = im[k].with == SIM_IMPACT_BODY     ? "body"
                  : im[k].with == SIM_IMPACT_GROUND ? "ground"
                                                    : "box";
        if (im[k].with == SIM_IMPACT_BODY) {
            impact_end(w, im[k].b, im[k].bone_b, &m->other, &m->other_bone);
        }
        m->box = im[k].box;
        m->point = (rdp_vec3){im[k].point.x, im[k].point.y, im[k].point.z};
        m->normal = (rdp_vec3){im[k].normal.x, im[k].normal.y, im[k].normal.z};
        m->speed = im[k].speed;
    }
    for (uint32_t first = 0; first < n;) {
        uint32_t end = first;
        while (end < n && im[end].tick == im[first].tick) {
            end++;
        }
        char* text = NULL;
        size_t len = 0;
        float text_speed = -1.0f;
        for (uint32_t i = 0; i < w->sub_count; ++i) {
            const app_sub* sub = app__sub_of(w->subs[i], w->id);
            if (sub == NULL || !(sub->events & RDP_EVENT_IMPACT)) {
                continue;
            }
            if (text == NULL || text_speed != sub->impact_speed) {
                rdp_free(text);
                text = NULL;
                // Fastest first: those at least as fast are a prefix.
                uint32_t count = 0;
                while (first + count < end && wire[first + count].speed >= sub->impact_speed) {
                    count++;
                }
                text_speed = sub->impact_speed;
                if (count > 0) {
                    text = rdp_event_impacts(w->id, im[first].tick, &wire[first], count,
                                             end == n ? dropped : 0, &len);
                }
                if (text == NULL) {
                    continue;
                }
            }
            app__report_text(w->subs[i], text, len,
                             net_session_send_text(w->subs[i]->session, text, len));
        }
        rdp_free(text);
        first = end;
    }
}

// `limit_hits` events, one per tick, to each subscription that asked
// (subscribe's "events": "joint_limit"); the world measures them only
// while one has (app__events_wanted()).
static void broadcast_limit_hits(app_world* w) {
    static sim_limit_hit hits[SIM_MAX_LIMIT_HITS];
    static rdp_limit_hit wire[SIM_MAX_LIMIT_HITS];
    static const char* const limit_names[] = {"twist_max", "twist_min", "swing"};
    uint64_t dropped = 0;
    const uint32_t n = sim_world_drain_limit_hits(w->sim, hits, SIM_MAX_LIMIT_HITS, &dropped);
    for (uint32_t k = 0; k < n; ++k) {
        uint64_t entity = 0;
        impact_end(w, hits[k].entity, hits[k].bone, &entity, &wire[k].bone);
        wire[k].entity = entity;
        wire[k].bone = wire[k].bone != NULL ? wire[k].bone : "";
        wire[k].limit = limit_names[hits[k].limit];
        wire[k].speed = hits[k].speed;
    }
    for (uint32_t first = 0; first < n;) {
        uint32_t end = first;
        while (end < n && hits[end].tick == hits[first].tick) {
            end++;
        }
        size_t len = 0;
        char* text = rdp_event_limit_hits(w->id, hits[first].tick, &wire[first], end - first,
                                          end == n ? dropped : 0, &len);
        for (uint32_t i = 0; text != NULL && i < w->sub_count; ++i) {
            const app_sub* sub = app__sub_of(w->subs[i], w->id);
            if (sub != NULL && (sub->events & RDP_EVENT_JOINT_LIMIT)) {
                app__report_text(w->subs[i], text, len,
                                 net_session_send_text(w->subs[i]->session, text, len));
            }
        }
        rdp_free(text);
        first = end;
    }
}

uint32_t app__events_wanted(const app_world* w) {
    uint32_t bits = 0;
    for (uint32_t i = 0; i < w->sub_count; ++i) {
        const app_sub* sub = app__sub_of(w->subs[i], w->id);
        bits |= sub != NULL ? sub->events : 0u;
    }
    return bits;
}

void app__broadcast_events(app_world* w) {
    sim_event ev[16];
    uint32_t n;
    broadcast_torn(w);
    broadcast_impacts(w);
    broadcast_limit_hits(w);
    while ((n = sim_world_drain_events(w->sim, ev, 16)) > 0) {
        for (uint32_t k = 0; k < n; ++k) {
            app__topo_forget(w, sim_entity_id_store(ev[k].entity));
            size_t len = 0;
            uint64_t entity = sim_entity_id_store(ev[k].entity);
            char* text = NULL;
            switch (ev[k].kind) {
            case SIM_EVENT_UNSTABLE:
                text = rdp_event_entity_removed(w->id, ev[k].tick, entity, "unstable", &len);
                break;
            case SIM_EVENT_CHARACTER_STATE:
                text = rdp_event_character_state(w->id, ev[k].tick, entity,
                                                 sim_char_state_name(ev[k].state), &len);
                break;
            case SIM_EVENT_SETTLED:
                text = rdp_event_settled(w->id, ev[k].tick, entity, &len);
                break;
            case SIM_EVENT_TORN:
                break; // told by broadcast_torn(), with the sticks
            }
            if (text != NULL) {
                app__broadcast_text(w, text, len);
                rdp_free(text);
            }
        }
    }
}

// ---------------------------------------------------------------------------
// Snapshots
// ---------------------------------------------------------------------------

void app__snapshot_cache_clear(app_world* w) {
    net_blob_unref(w->json_lean);
    net_blob_unref(w->json_full);
    w->json_lean = w->json_full = NULL;
    for (uint32_t i = 0; i < w->bcache_count; ++i) {
        net_blob_unref(w->bcache[i].blob);
    }
    w->bcache_count = 0;
    w->qcur = NULL;
    rdp_free(w->metrics_text);
    w->metrics_text = NULL;
}

static rdp_kind kind_of(sim_entity_kind k) {
    switch (k) {
    case SIM_ENTITY_ROPE:
        return RDP_KIND_ROPE;
    case SIM_ENTITY_CLOTH:
        return RDP_KIND_CLOTH;
    case SIM_ENTITY_RAGDOLL:
        return RDP_KIND_RAGDOLL;
    case SIM_ENTITY_CHARACTER:
        return RDP_KIND_CHARACTER;
    case SIM_ENTITY_BALL:
        return RDP_KIND_BALL;
    case SIM_ENTITY_SOFTBODY:
        return RDP_KIND_SOFTBODY;
    }
    return RDP_KIND_ROPE;
}

rdp_kind app__kind_of(sim_entity_kind k) {
    return kind_of(k);
}

uint32_t app__rigid_state(app_world* w, sim_entity_id id, sim_entity_kind kind, uint32_t first,
                          rdp_entity_state* e) {
    float* pose = w->poses + 7 * (size_t)first;
    if (kind == SIM_ENTITY_BALL) {
        sim_bone_pose p;
        if (first + 1 > w->body_cap ||
            sim_ball_get(w->sim, id, &p, NULL, &w->body_radius[first]) != SIM_OK) {
            return 0;
        }
        const float v[7] = {p.p.x, p.p.y, p.p.z, p.q.x, p.q.y, p.q.z, p.q.w};
        memcpy(pose, v, sizeof v);
        w->body_half_length[first] = 0.0f;
        e->body_count = 1;
    } else {
        sim_character_view cv;
        if (sim_character_get_view(w->sim, id, &cv) != SIM_OK ||
            first + cv.bone_count > w->body_cap) {
            return 0;
        }
        sim_bone_pose poses[SIM_MAX_BONES];
        int n = sim_character_get_pose(w->sim, id, poses, NULL, NULL, SIM_MAX_BONES);
        for (int i = 0; i < n; ++i) {
            const sim_bone_def* b = &cv.skeleton->bones[i];
            const float v[7] = {poses[i].p.x, poses[i].p.y, poses[i].p.z, poses[i].q.x,
                                poses[i].q.y, poses[i].q.z, poses[i].q.w};
            memcpy(pose + 7 * i, v, sizeof v);
            w->bone_names[first + (uint32_t)i] = b->name;
            w->body_radius[first + (uint32_t)i] = b->radius;
            float dx = b->tail.x - b->head.x, dy = b->tail.y - b->head.y,
                  dz = b->tail.z - b->head.z;
            w->body_half_length[first + (uint32_t)i] = 0.5f * sqrtf(dx * dx + dy * dy + dz * dz);
        }
        for (int i = 0; i < n; ++i) {
            uint32_t at = first + (uint32_t)i;
            w->parents[at] = cv.skeleton->bones[i].parent;
            sim_joint_view j;
            float* a = w->anchors + 6 * (size_t)at;
            if (i > 0 && sim_character_joint_view(w->sim, id, (uint32_t)i, &j) == SIM_OK) {
                const float v[6] = {j.anchor_parent.x, j.anchor_parent.y, j.anchor_parent.z,
                                    j.anchor_child.x,  j.anchor_child.y,  j.anchor_child.z};
                memcpy(a, v, sizeof v);
            } else {
                memset(a, 0, 6 * sizeof *a);
            }
        }
        e->parents = w->parents + first;
        e->anchors = w->anchors + 6 * (size_t)first;
        e->body_count = (uint32_t)n;
        e->state = sim_char_state_name(cv.state);
        e->solver = sim_char_solver_name(cv.solver);
        e->bone_names = w->bone_names + first;
        e->skeleton = cv.skeleton->name;
        e->clip = cv.clip;
    }
    e->pose = pose;
    e->body_radius = w->body_radius + first;
    e->body_half_length = w->body_half_length + first;
    return e->body_count;
}

// Describes the world's current state for the codec. With topology, stick
// lists are copied into the world's scratch buffer (grown between ticks).
static bool build_snapshot(app_world* w, bool topology, rdp_snapshot* s) {
    const sim_world* sw = w->sim;
    uint32_t n = sim_world_entity_count(sw);
    uint32_t sticks_needed = 0;
    for (uint32_t i = 0; i < n && topology; ++i) {
        sim_entity_view v;
        sim_entity_get_view(sw, sim_world_entity_at(sw, i), &v);
        sticks_needed += v.stick_count;
    }
    if (2 * sticks_needed > w->sticks_cap) {
        uint32_t* grown = realloc(w->sticks, 2 * (size_t)sticks_needed * sizeof *grown);
        if (grown == NULL) {
            return false;
        }
        w->sticks = grown;
        w->sticks_cap = 2 * sticks_needed;
    }
    uint32_t used = 0, stick_total = 0, bodies = 0;
    for (uint32_t i = 0; i < n; ++i) {
        sim_entity_id id = sim_world_entity_at(sw, i);
        sim_entity_view v;
        sim_entity_get_view(sw, id, &v);
        // A soft body's sticks are drawing only (its surface lattice), not
        // constraints: metrics.sticks divides the constraint error.
        stick_total += v.kind == SIM_ENTITY_SOFTBODY ? 0 : v.stick_count;
        rdp_entity_state* e = &w->ents[i];
        memset(e, 0, sizeof *e);
        e->entity = sim_entity_id_store(id);
        e->kind = kind_of(v.kind);
        if (rdp_kind_is_rigid(e->kind)) {
            bodies += app__rigid_state(w, id, v.kind, bodies, e);
            continue;
        }
        e->particle_count = v.particle_count;
        e->xyz = (const float*)v.pos;
        e->names = v.names;
        e->radius = v.radius;
        e->inv_mass = v.inv_mass;
        e->cols = v.cols;
        e->rows = v.rows;
        e->wrap = v.wrap;
        e->garment = sim_garment_kind_name((sim_garment_kind)v.garment);
        e->wearer = e->garment != NULL ? sim_entity_id_store(v.wearer) : 0;
        if (topology) {
            int k = sim_entity_copy_sticks(sw, id, w->sticks + used, sticks_needed - used / 2);
            e->stick_count = k > 0 ? (uint32_t)k : 0;
            e->sticks = w->sticks + used;
            used += 2 * e->stick_count;
        }
    }
    sim_params p = sim_world_params(sw);
    memset(s, 0, sizeof *s);
    s->world = w->id;
    s->tick = sim_world_tick(sw);
    s->entity_count = n;
    s->entities = w->ents;
    s->metrics.constraint_error = sim_world_constraint_error(sw);
    s->metrics.sticks = stick_total;
    s->metrics.solver_passes = (uint32_t)(p.iterations * p.substeps);
    s->metrics.particles = sim_world_particle_count(sw);
    s->metrics.step_ms = w->step_ms;
    s->metrics.overruns = w->overruns;
    sim_tick_stats st = sim_world_tick_stats(sw);
    s->metrics.frozen_entities = st.frozen_entities;
    s->metrics.frozen_particles = st.frozen_particles;
    s->metrics.particle_projections = st.particle_projections;
    return true;
}

// The snapshot blob for a format, encoded at most once per tick.
// This tick's JSON snapshot, with or without topology, encoded once and
// shared by every client that gets it.
static net_blob* json_blob(app_world* w, bool topology) {
    net_blob** slot = topology ? &w->json_full : &w->json_lean;
    if (*slot != NULL) {
        return *slot;
    }
    rdp_snapshot s;
    if (!build_snapshot(w, topology, &s)) {
        return NULL;
    }
    // Written into the world's buffer, then copied into the shared blob.
    if (rdp_snapshot_json_into(&s, topology, &w->jsonbuf) != 0) {
        return NULL;
    }
    *slot = net_blob_create(w->jsonbuf.data, w->jsonbuf.len);
    return *slot;
}

// This tick's quantized snapshot, made once (and kept as a baseline).
static rdp_qsnap* quantized(app_world* w) {
    if (w->qcur != NULL) {
        return w->qcur;
    }
    rdp_snapshot s;
    if (!build_snapshot(w, false, &s)) {
        return NULL;
    }
    rdp_qsnap* q = w->qring[w->qnext];
    if (rdp_quantize(&s, q) != 0) {
        q->tick = UINT64_MAX;
        return NULL;
    }
    w->qnext = (w->qnext + 1) % RDP_BASELINES;
    w->qcur = q;
    return q;
}

// The binary snapshot of this tick for a client whose baseline is `acked`
// (a tick it acknowledged, or UINT64_MAX): a delta against it while it is
// still among the world's baselines, else full. Encoded once per baseline
// and shared by every client on it.
static net_blob* binary_blob(app_world* w, uint64_t acked) {
    rdp_qsnap* q = quantized(w);
    if (q == NULL) {
        return NULL;
    }
    const rdp_qsnap* base = NULL;
    for (uint32_t i = 0; i < RDP_BASELINES && acked != UINT64_MAX; ++i) {
        if (w->qring[i] != q && w->qring[i]->tick == acked) {
            base = w->qring[i];
        }
    }
    uint64_t key = base != NULL ? acked : UINT64_MAX;
    for (uint32_t i = 0; i < w->bcache_count; ++i) {
        if (w->bcache[i].base == key) {
            return w->bcache[i].blob;
        }
    }
    size_t cap = rdp_encode_bound(q);
    if (cap > w->encbuf_cap) {
        uint8_t* grown = realloc(w->encbuf, cap);
        if (grown == NULL) {
            return NULL;
        }
        w->encbuf = grown;
        w->encbuf_cap = cap;
    }
    size_t n = rdp_encode(q, base, w->encbuf, w->encbuf_cap);
    net_blob* b = n > 0 ? net_blob_create(w->encbuf, n) : NULL;
    if (b == NULL) {
        return NULL;
    }
    if (w->bcache_count == sizeof w->bcache / sizeof w->bcache[0]) {
        // More baselines in use than slots: the oldest encoding goes (its
        // clients already hold their reference).
        net_blob_unref(w->bcache[0].blob);
        memmove(&w->bcache[0], &w->bcache[1], (w->bcache_count - 1) * sizeof w->bcache[0]);
        w->bcache_count--;
    }
    w->bcache[w->bcache_count].base = key;
    w->bcache[w->bcache_count].blob = b;
    w->bcache_count++;
    return b;
}

// The kind of a snapshot blob for the counters: a binary one is a delta
// when this tick's encoding against a baseline (bcache) made it.
static app_msg_kind snapshot_kind(const app_world* w, const net_blob* b, bool binary) {
    for (uint32_t i = 0; binary && i < w->bcache_count; ++i) {
        if (w->bcache[i].blob == b) {
            return w->bcache[i].base == UINT64_MAX ? APP_MSG_SNAPSHOT_FULL : APP_MSG_SNAPSHOT_DELTA;
        }
    }
    return binary ? APP_MSG_SNAPSHOT_FULL : APP_MSG_SNAPSHOT_JSON;
}

uint32_t app__broadcast_ticks_until_due(const app_world* w, uint32_t max) {
    uint32_t n = max;
    for (uint32_t i = 0; i < w->sub_count; ++i) {
        const app_sub* sub = app__sub_of(w->subs[i], w->id);
        if (sub == NULL || sub->rate_hz == 0) {
            continue;
        }
        // Due once acc + k·rate reaches tick_hz (acc < tick_hz between ticks).
        uint32_t k =
            sub->acc >= w->tick_hz ? 1 : (w->tick_hz - sub->acc + sub->rate_hz - 1) / sub->rate_hz;
        n = k < n ? k : n;
    }
    return n > 0 ? n : 1;
}

// The metrics event a binary subscriber gets with its first snapshot and
// once a second after, made once a tick for all who are due it. Returns
// the bytes sent (0: none).
static size_t send_metrics(app_world* w, app_client* c) {
    rdp_snapshot ms;
    if (w->metrics_text == NULL && build_snapshot(w, false, &ms)) {
        w->metrics_text = rdp_event_metrics(&ms, &w->metrics_len);
    }
    if (w->metrics_text == NULL) {
        return 0;
    }
    app__report_text(c, w->metrics_text, w->metrics_len,
                     net_session_send_text(c->session, w->metrics_text, w->metrics_len));
    return w->metrics_len;
}

// A subscription with a byte budget: its own partial frame (interest.c),
// made only once its last one has gone out to the socket (frames build on
// each other: none may be replaced).
static void send_partial(app_world* w, app_client* c, app_sub* sub) {
    if (net_session_latest_waiting(c->session, w->id)) {
        return;
    }
    rdp_qsnap* q = quantized(w);
    if (q == NULL) {
        app__report_error(c->app, NULL, "out of memory quantizing a snapshot");
        return;
    }
    if (sub->full_next) { // resync, rollback: the client starts again
        app__interest_reset(sub->interest);
        sub->full_next = false;
    }
    if (sub->metrics_acc++ % sub->rate_hz == 0) {
        // Counted before the frame is made, which then has what is left.
        app__interest_charge(sub->interest, q->tick, send_metrics(w, c));
    }
    size_t len = 0;
    if (app__interest_frame(w, sub, sub->interest, q, &w->encbuf, &w->encbuf_cap, &len) != 0) {
        app__report_error(c->app, NULL, "out of memory making a partial frame");
        return;
    }
    if (len == 0) {
        return;
    }
    net_blob* b = net_blob_create(w->encbuf, len);
    if (b == NULL) {
        app__report_error(c->app, NULL, "out of memory sending a partial frame");
        return;
    }
    if (net_session_send_latest(c->session, w->id, b, true) == 0) {
        app__report_sent(c, APP_MSG_SNAPSHOT_PARTIAL, len);
    }
    net_blob_unref(b);
}

void app__broadcast_snapshots(app_world* w, uint32_t ticks) {
    app__snapshot_cache_clear(w);
    uint32_t epoch = sim_world_topology_epoch(w->sim);
    for (uint32_t i = 0; i < w->sub_count; ++i) {
        app_client* c = w->subs[i];
        app_sub* sub = NULL;
        for (uint32_t k = 0; k < c->sub_count; ++k) {
            if (c->subs[k].world == w->id) {
                sub = &c->subs[k];
            }
        }
        if (sub == NULL) {
            continue;
        }
        // A JSON subscription's own budget replaces the server's when lower.
        double rate = sub->bytes_per_s > 0 && sub->bytes_per_s < APP_SNAPSHOT_BYTES_PER_S
                          ? (double)sub->bytes_per_s
                          : APP_SNAPSHOT_BYTES_PER_S;
        sub->snap_tokens = fmin(rate, sub->snap_tokens + rate * ticks / w->tick_hz);
        // Spread rate_hz snapshots evenly over tick_hz ticks. A batch of
        // ticks ends at the first a subscriber is due (see above), so none
        // is due twice in one.
        uint32_t counted = sub->mid_batch ? 1 : ticks;
        sub->mid_batch = false;
        sub->acc += sub->rate_hz * counted;
        if (sub->acc < w->tick_hz) {
            continue;
        }
        sub->acc %= w->tick_hz;
        if (sub->interest != NULL) {
            send_partial(w, c, sub);
            continue;
        }
        if (sub->snap_tokens < 0.0) {
            continue; // over its byte rate: this one is skipped
        }
        bool binary = sub->format == RDP_FORMAT_BINARY;
        bool topology = !binary && (!sub->topo_sent || sub->topo_epoch != epoch);
        net_blob* b = binary ? binary_blob(w, sub->full_next ? UINT64_MAX : sub->acked)
                             : json_blob(w, topology);
        if (b == NULL) {
            app__report_error(c->app, NULL, "out of memory encoding a snapshot");
            continue;
        }
        sub->full_next = false;
        if (binary && sub->metrics_acc++ % sub->rate_hz == 0) {
            // With the first snapshot and once a second after: the metrics
            // JSON snapshots carry.
            send_metrics(w, c);
        }
        sub->snap_tokens -= (double)b->len;
        if (topology) {
            // Topology must arrive: send it as a message that is never
            // dropped, after cancelling any older snapshot still waiting so
            // ticks keep increasing.
            net_session_cancel_latest(c->session, w->id);
            if (net_session_send_text(c->session, (const char*)b->data, b->len) == 0) {
                sub->topo_sent = true;
                sub->topo_epoch = epoch;
                app__report_sent(c, APP_MSG_SNAPSHOT_JSON, b->len);
            }
        } else if (net_session_send_latest(c->session, w->id, b, binary) == 0) {
            // Positions only: latest wins for a client that falls behind.
            app__report_sent(c, snapshot_kind(w, b, binary), b->len);
        }
    }
    app__snapshot_cache_clear(w);
}
