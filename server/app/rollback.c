/*
 * rollback.c: a world that blows up goes back instead of losing the entity.
 *
 * Each world keeps its state (sim_world_save()) from the last few seconds,
 * one a second, taken at tick boundaries before the commands apply, and
 * every command and focus change applied since the oldest (a journal in
 * memory). When a step quarantines an entity (non-finite, flown away or
 * faster than SIM_MAX_SPEED: step.c), the world is stepped again from the
 * newest kept state that precedes the command most likely to blame (the
 * last one that named the entity that blew up, else the last one applied,
 * never a spawn that later spawns follow, whose ids would move), applying
 * every other logged command at its tick, up to the tick it had reached.
 * Determinism makes that the world as if the command had never come. If
 * the blow-up comes back (or there is nothing to drop, or no kept state
 * old enough), the quarantine stands, as before rollback existed.
 *
 * A rollback is told to every subscriber (rolled_back) and to the dropped
 * command's sender (command_dropped), and written to the journal (a drop
 * record: a replay skips the command), and the world is saved soon after.
 * Only the loop thread runs this, with the world idle, before the events
 * and snapshots of the tick go out: no client sees the blown-up state.
 */
#include "persist.h"
#include "report.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/// States kept, one a second.
#define KEEP APP_ROLLBACK_KEEP

typedef struct app_logged {
    uint8_t type; ///< 1: command, 2: foci.
    uint64_t seq, tick;
    app_client* client; ///< The sender, NULL once gone.
    app_role role;
    uint64_t owner;
    rdp_command cmd;
    uint32_t foci_count;
    sim_vec3 foci[SIM_MAX_FOCI];
} app_logged;

typedef struct app_rb_state {
    uint8_t* buf;
    size_t len, cap;
    uint64_t tick, seq;
} app_rb_state;

struct app_rollback {
    app_rb_state states[KEEP]; ///< Oldest first; count of them in use.
    uint32_t count;
    uint64_t next_ns;
    app_logged* log; ///< Since the oldest state, in order.
    uint32_t log_count, log_cap;
};

static app_rollback* rb_of(app_world* w) {
    if (w->rollback == NULL) {
        w->rollback = calloc(1, sizeof *w->rollback);
    }
    return w->rollback;
}

void app__rollback_free(app_world* w) {
    app_rollback* rb = w->rollback;
    if (rb == NULL) {
        return;
    }
    for (uint32_t i = 0; i < KEEP; ++i) {
        free(rb->states[i].buf);
    }
    free(rb->log);
    free(rb);
    w->rollback = NULL;
}

static app_logged* log_add(app_rollback* rb) {
    if (rb->count == 0) {
        return NULL; // nothing to go back to: nothing to log yet
    }
    if (rb->log_count == rb->log_cap) {
        uint32_t cap = rb->log_cap == 0 ? 64 : 2 * rb->log_cap;
        app_logged* p = realloc(rb->log, cap * sizeof *p);
        if (p == NULL) {
            return NULL;
        }
        rb->log = p;
        rb->log_cap = cap;
    }
    app_logged* e = &rb->log[rb->log_count++];
    memset(e, 0, sizeof *e);
    return e;
}

void app__rollback_log_command(app_world* w, const app_cmd* c) {
    app_rollback* rb = w->rollback;
    app_logged* e = rb != NULL ? log_add(rb) : NULL;
    if (e == NULL) {
        return;
    }
    e->type = 1;
    e->seq = w->seq;
    e->tick = sim_world_tick(w->sim);
    e->client = c->client;
    e->role = c->role;
    e->owner = c->owner;
    e->cmd = c->cmd;
}

void app__rollback_log_foci(app_world* w, const sim_vec3* foci, uint32_t n) {
    app_rollback* rb = w->rollback;
    app_logged* e = rb != NULL ? log_add(rb) : NULL;
    if (e == NULL) {
        return;
    }
    e->type = 2;
    e->tick = sim_world_tick(w->sim);
    e->foci_count = n;
    memcpy(e->foci, foci, n * sizeof *foci);
}

void app__rollback_keep(app_server* app, app_world* w, uint64_t now) {
    (void)app;
    app_rollback* rb = rb_of(w);
    if (rb == NULL || now < rb->next_ns) {
        return;
    }
    rb->next_ns = now + 1000000000ull;
    size_t need = 0;
    sim_world_save(w->sim, NULL, 0, &need);
    if (rb->count == KEEP) {
        // The oldest goes (its buffer is reused), and the log before the
        // next oldest with it.
        app_rb_state old = rb->states[0];
        memmove(&rb->states[0], &rb->states[1], (KEEP - 1) * sizeof old);
        rb->states[KEEP - 1] = old;
        rb->count--;
        const uint64_t from = rb->states[0].tick;
        uint32_t k = 0;
        while (k < rb->log_count && rb->log[k].tick < from) {
            k++;
        }
        if (k > 0) { // (no log yet: rb->log is NULL)
            memmove(rb->log, rb->log + k, (rb->log_count - k) * sizeof *rb->log);
            rb->log_count -= k;
        }
    }
    app_rb_state* s = &rb->states[rb->count];
    if (s->cap < need) {
        uint8_t* p = realloc(s->buf, need);
        if (p == NULL) {
            return;
        }
        s->buf = p;
        s->cap = need;
    }
    if (sim_world_save(w->sim, s->buf, s->cap, &s->len) != SIM_OK) {
        return;
    }
    s->tick = sim_world_tick(w->sim);
    s->seq = w->seq;
    rb->count++;
}

void app__rollback_client_gone(app_world* w, const app_client* c) {
    app_rollback* rb = w->rollback;
    for (uint32_t k = 0; rb != NULL && k < rb->log_count; ++k) {
        if (rb->log[k].client == c) {
            rb->log[k].client = NULL;
        }
    }
}

// The entity the newest SIM_EVENT_UNSTABLE names (wire id), or 0.
static uint64_t unstable_entity(const sim_world* sw) {
    sim_event ev[256];
    uint32_t n = sim_world_peek_events(sw, ev, 256);
    for (uint32_t k = n; k-- > 0;) {
        if (ev[k].kind == SIM_EVENT_UNSTABLE) {
            return sim_entity_id_store(ev[k].entity);
        }
    }
    return 0;
}

static bool is_spawn(rdp_op op) {
    return op == RDP_OP_SPAWN_ROPE || op == RDP_OP_SPAWN_CLOTH || op == RDP_OP_SPAWN_RAGDOLL ||
           op == RDP_OP_SPAWN_CHARACTER || op == RDP_OP_SPAWN_BALL || op == RDP_OP_ATTACH_CLOTH ||
           op == RDP_OP_SPAWN_SOFTBODY;
}

// The log index of the command to drop, or -1: the last command naming
// `entity`, else the last command; never a spawn with a later spawn after
// it.
static int32_t culprit(const app_rollback* rb, uint64_t entity) {
    int32_t last = -1, named = -1;
    for (uint32_t k = 0; k < rb->log_count; ++k) {
        if (rb->log[k].type != 1) {
            continue;
        }
        last = (int32_t)k;
        if (entity != 0 && rb->log[k].cmd.entity == entity) {
            named = (int32_t)k;
        }
    }
    int32_t pick = named >= 0 ? named : last;
    if (pick < 0) {
        return -1;
    }
    if (is_spawn(rb->log[pick].cmd.op)) {
        for (uint32_t k = (uint32_t)pick + 1; k < rb->log_count; ++k) {
            if (rb->log[k].type == 1 && is_spawn(rb->log[k].cmd.op)) {
                return -1;
            }
        }
    }
    return pick;
}

// Steps w's world to `tick`, draining what the steps report (the live world
// reported it already).
static void step_to(app_world* w, uint64_t tick) {
    while (sim_world_tick(w->sim) < tick) {
        sim_world_step(w->sim);
    }
}

// w's world stepped again from kept state s to tick `now`, with every
// logged command after it but the one at log index `skip` (-1: none); NULL
// when it blows up again (or cannot be loaded). w->sim is left as it was.
static sim_world* again_from(app_server* app, app_world* w, const app_rb_state* s, int32_t skip,
                             uint64_t now) {
    const app_rollback* rb = w->rollback;
    sim_world* live = w->sim;
    sim_world* again = NULL;
    char why[256];
    if (sim_world_load(s->buf, s->len, app->cfg.library, NULL, &again, why, sizeof why) != SIM_OK) {
        return NULL;
    }
    const uint64_t q0 = sim_world_quarantined(again);
    const app_role role = w->apply_role;
    const uint64_t owner = w->apply_owner;
    w->sim = again; // app__apply() works on w->sim
    for (uint32_t k = 0; k < rb->log_count; ++k) {
        const app_logged* e = &rb->log[k];
        if (e->tick < s->tick || (e->type == 1 && e->seq <= s->seq) || (int32_t)k == skip) {
            continue;
        }
        step_to(w, e->tick);
        if (e->type == 2) {
            sim_world_set_foci(again, e->foci, e->foci_count);
            continue;
        }
        w->apply_role = e->role;
        w->apply_owner = e->owner;
        size_t rl = 0, el = 0;
        char* ev = NULL;
        rdp_command cmd = e->cmd; // resolved when logged: no seen_tick left (lag.c)
        rdp_free(app__apply(app, w, NULL, &cmd, &rl, &ev, &el));
        rdp_free(ev);
    }
    step_to(w, now);
    w->sim = live;
    w->apply_role = role;
    w->apply_owner = owner;
    if (sim_world_quarantined(again) != q0 || !sim_world_is_finite(again)) {
        sim_world_destroy(again);
        return NULL;
    }
    return again;
}

bool app__rollback_check(app_server* app, app_world* w, uint64_t quarantined_before) {
    app_rollback* rb = w->rollback;
    sim_world* live = w->sim;
    if (sim_world_quarantined(live) == quarantined_before || rb == NULL || rb->count == 0) {
        return false;
    }
    const uint64_t now = sim_world_tick(live);
    const uint64_t entity = unstable_entity(live);
    char msg[200];
    // First the same commands again from the newest kept state: a cause
    // outside them (nothing a client sent) is gone with that alone.
    int32_t from = (int32_t)rb->count - 1;
    int32_t pick = -1;
    sim_world* again = again_from(app, w, &rb->states[from], -1, now);
    if (again == NULL) {
        // The commands make it happen: without the one to blame, from the
        // newest state before it.
        pick = culprit(rb, entity);
        from = -1;
        for (uint32_t i = 0; pick >= 0 && i < rb->count; ++i) {
            if (rb->states[i].seq < rb->log[pick].seq) {
                from = (int32_t)i;
            }
        }
        again = from >= 0 ? again_from(app, w, &rb->states[from], pick, now) : NULL;
    }
    if (again == NULL) {
        snprintf(msg, sizeof msg, "stepping again from a kept state blew up too%s",
                 pick < 0 ? " (no command to drop)" : "");
        app__report_rollback(app, w, now, from >= 0 ? rb->states[from].tick : now, entity,
                             pick >= 0 ? rdp_op_name(rb->log[pick].cmd.op) : NULL, msg);
        app->rollback_failures++;
        return false; // the quarantine stands
    }
    const app_rb_state* s = &rb->states[from];
    w->sim = again;
    // The live world's pending events (the quarantine among them) go with
    // it; the ones the steps again made were sent already.
    sim_world_destroy(live);
    sim_world_drain_torn(again, NULL, 0, NULL);
    sim_world_drain_impacts(again, NULL, 0, NULL);
    sim_world_drain_limit_hits(again, NULL, 0, NULL);
    sim_event ev[64];
    while (sim_world_drain_events(again, ev, 64) > 0) {
    }
    const app_logged* dropped = pick >= 0 ? &rb->log[pick] : NULL;
    const char* op = dropped != NULL ? rdp_op_name(dropped->cmd.op) : NULL;
    w->rollbacks++;
    app->rollbacks++;
    app__report_rollback(app, w, now, s->tick, entity, op, NULL);
    size_t len = 0;
    char* text = rdp_event_rolled_back(w->id, now, s->tick, entity, op, &len);
    if (text != NULL) {
        app__broadcast_text(w, text, len);
        rdp_free(text);
    }
    if (dropped != NULL) {
        app__journal_drop(app, w, dropped->seq);
        if (dropped->client != NULL) {
            snprintf(msg, sizeof msg,
                     "%s (command %" PRIu64 ", applied at tick %" PRIu64 ") made entity %" PRIu64
                     " blow up; the world went back without it",
                     op, dropped->seq, dropped->tick, entity);
            text = rdp_event_command_dropped(w->id, now, rdp_re_of(&dropped->cmd), op, msg, &len);
            if (text != NULL) {
                app__send(dropped->client, text, len);
            }
        }
        memmove(&rb->log[pick], &rb->log[pick + 1],
                (rb->log_count - (uint32_t)pick - 1) * sizeof *rb->log);
        rb->log_count--;
    }
    // Every topology may have changed (despawned and spawned again): the
    // next snapshots describe afresh, and a state file without the dropped
    // command is written soon.
    for (uint32_t i = 0; i < w->def.max_entities; ++i) {
        if (w->topo[i].body != NULL) {
            app__topo_forget(w, w->topo[i].entity);
        }
    }
    // Subscribers start again from a full snapshot with topologies.
    for (uint32_t i = 0; i < w->sub_count; ++i) {
        app_sub* sub = app__sub_of(w->subs[i], w->id);
        if (sub != NULL) {
            sub->full_next = true;
            sub->topo_sent = false;
        }
    }
    w->save_wanted = app->cfg.state_dir != NULL;
    return true;
}
