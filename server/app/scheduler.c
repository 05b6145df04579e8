/*
 * scheduler.c: the worlds' clock and their inboxes. Each world has a fixed
 * tick (default 60 Hz) advanced from uv_hrtime() with an accumulator and a
 * cap on catch-up ticks per wake-up, so a slow step cannot snowball (no
 * "spiral of death"; dropped time is counted as overruns). Commands for a
 * world wait in its inbox; at each tick boundary they apply in arrival
 * order, then the world steps, then its subscribers get the events and the
 * snapshot of the new tick (broadcast.c).
 */
#include "app_internal.h"
#include "report.h"

#include <stdio.h>
#include <string.h>

// ---------------------------------------------------------------------------
// Inbox
// ---------------------------------------------------------------------------

rdp_code app__world_enqueue(app_world* w, app_client* c, const rdp_command* cmd) {
    if (w->inbox_count == w->inbox_cap) {
        return RDP_E_RATE_LIMITED;
    }
    app_cmd* e = &w->inbox[(w->inbox_head + w->inbox_count) % w->inbox_cap];
    e->client = c;
    // A command on behalf of a client that has gone (a release) is the
    // server's own.
    e->role = c != NULL ? c->role : APP_ROLE_ADMIN;
    e->owner = c != NULL ? c->owner : 0;
    e->cmd = *cmd;
    w->inbox_count++;
    if (c != NULL) {
        c->pending++;
    }
    return RDP_OK;
}

void app__inbox_cancel(app_server* app, app_world* w) {
    char msg[96];
    snprintf(msg, sizeof msg, "world %llu was destroyed", (unsigned long long)w->id);
    for (uint32_t k = 0; k < w->inbox_count; ++k) {
        app_cmd* e = &w->inbox[(w->inbox_head + k) % w->inbox_cap];
        if (e->client != NULL) {
            e->client->pending--;
            app__report_command(app, e->client, e->cmd.op, RDP_E_NOT_FOUND, false);
            app__send_error(e->client, rdp_re_of(&e->cmd), RDP_E_NOT_FOUND, msg);
        }
    }
}

void app__inbox_forget_client(app_world* w, const app_client* c) {
    // Its queued commands still apply in order; only the replies go nowhere.
    for (uint32_t k = 0; k < w->inbox_count; ++k) {
        app_cmd* e = &w->inbox[(w->inbox_head + k) % w->inbox_cap];
        if (e->client == c) {
            e->client = NULL;
        }
    }
}

// ---------------------------------------------------------------------------
// Ticking
// ---------------------------------------------------------------------------

static void world_tick(app_server* app, app_world* w) {
    uint64_t tick_start_ns = uv_hrtime();
    // Commands apply at the tick boundary, in arrival order.
    while (w->inbox_count > 0) {
        app_cmd e = w->inbox[w->inbox_head];
        w->inbox_head = (w->inbox_head + 1) % w->inbox_cap;
        w->inbox_count--;
        size_t len = 0, ev_len = 0;
        char* ev = NULL;
        if (e.client != NULL) {
            e.client->pending--;
        }
        w->apply_role = e.role;
        w->apply_owner = e.owner;
        char* reply = app__apply(app, w, e.client, &e.cmd, &len, &ev, &ev_len);
        if (e.client != NULL) {
            app__report_reply(app, e.client, e.cmd.op, reply, len);
            app__send(e.client, reply, len);
        } else {
            rdp_free(reply);
        }
        if (ev != NULL) {
            app__broadcast_text(w, ev, ev_len);
            rdp_free(ev);
        }
    }
    uint64_t t0 = uv_hrtime();
    sim_world_step(w->sim);
    w->step_ms = (double)(uv_hrtime() - t0) / 1e6;
    app__broadcast_events(w);
    app__broadcast_snapshots(w);
    app__tick_observe(&w->tick_stats, uv_hrtime() - tick_start_ns);
}

uint64_t app__worlds_advance(app_server* app) {
    uint64_t now = uv_hrtime();
    uint64_t next_due = UINT64_MAX;
    for (uint32_t i = 0; i < app->cfg.max_worlds; ++i) {
        app_world* w = app->worlds[i];
        if (w == NULL) {
            continue;
        }
        w->acc_ns += now - w->last_ns;
        w->last_ns = now;
        uint32_t steps = 0;
        while (w->acc_ns >= w->period_ns && steps < app->cfg.max_catchup) {
            world_tick(app, w);
            w->acc_ns -= w->period_ns;
            steps++;
            if (app->worlds[i] != w) {
                break; // destroyed by one of its commands
            }
        }
        if (app->worlds[i] != w) {
            continue;
        }
        if (w->acc_ns >= w->period_ns) {
            // Behind by more than the cap: drop the backlog rather than
            // chase it, and count what was dropped.
            w->overruns += w->acc_ns / w->period_ns;
            w->acc_ns %= w->period_ns;
        }
        uint64_t due = w->period_ns - w->acc_ns;
        next_due = due < next_due ? due : next_due;
    }
    return next_due;
}
