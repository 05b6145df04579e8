/*
 * scheduler.c: the worlds' clock, their inboxes, and where they step.
 *
 * Each world has a fixed tick (default 60 Hz) advanced from uv_hrtime()
 * with an accumulator and a cap on catch-up ticks (app_config.max_catchup),
 * so a slow step cannot snowball (no "spiral of death"); time dropped past
 * the cap is counted as overruns. Commands for a world wait in its inbox;
 * at each tick boundary they apply in arrival order, then the world steps,
 * then its subscribers get the events and the snapshot of the new tick
 * (broadcast.c).
 *
 * Thread model. The loop thread does all I/O and everything but the step;
 * the step runs on the pool (pool.c, --workers threads):
 *
 *   loop thread                                      a worker
 *   timer: a world is due, and idle
 *     apply its inbox (the tick boundary)
 *     take its view (what the loop reads meanwhile)
 *     busy; hand it to the pool ───────────────────► sim_world_step(), timed
 *   ...sockets, other worlds' ticks...                      │
 *   the pool hands it back (uv_async) ◄──────────────────────┘
 *     idle; its events and snapshots to subscribers
 *     more ticks owed (catching up)? the next ones now; else the timer
 *
 * While a world is busy a worker owns its sim_world and nothing else of
 * it. The loop thread never touches a busy world's `sim` (it reads `view`,
 * the world as it was handed over) but keeps everything else: commands
 * that arrive go to the inbox and wait for the next tick boundary, and
 * subscriptions, caches and counters stay the loop's. One world is on one
 * worker at a time, since it is handed over again only once it is back.
 * The pool's mutex orders each hand-over, so what the loop wrote before is
 * visible to the worker and what the worker wrote to the loop after.
 * Snapshots are encoded on the loop thread: they depend on each
 * subscriber's state (its format, baseline, topology), which is the
 * loop's, and cost tens of microseconds against milliseconds of step.
 *
 * Destroying a busy world (destroy_world answers at once) takes it out of
 * the registry at once and frees it when the pool hands it back. Shutdown
 * waits for the steps being run (at most one per worker) and frees what
 * comes back. With 0 workers the pool runs each step on the loop thread,
 * as before the pool existed; the rest is the same.
 *
 * A world's result does not depend on the workers: it depends only on its
 * commands and its ticks, and each tick is applied, stepped and reported
 * in order whichever thread steps it.
 */
#include "app_internal.h"
#include "persist.h"
#include "report.h"

#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

_Static_assert(APP_MAX_WORKERS <= APP_POOL_MAX_WORKERS, "--workers must fit the pool");

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
    uint32_t kept = 0;
    for (uint32_t k = 0; k < w->held_count; ++k) {
        if (w->held[k].client == c) {
            rdp_free(w->held[k].text);
        } else {
            w->held[kept++] = w->held[k];
        }
    }
    w->held_count = kept;
}

// Sends the replies of commands that applied in a boundary whose journal
// write failed, now that they are durable (their records written, or a
// state file holding them).
void app__send_held(app_server* app, app_world* w) {
    for (uint32_t i = 0; i < w->held_count; ++i) {
        struct app_reply* r = &w->held[i];
        app__report_reply(app, r->client, r->op, r->text, r->len);
        app__send(r->client, r->text, r->len);
    }
    w->held_count = 0;
}

// ---------------------------------------------------------------------------
// Ticking
// ---------------------------------------------------------------------------

static app_world* world_of(app_job* j) {
    return (app_world*)(void*)((char*)j - offsetof(app_world, job));
}

// The job: `batch` steps of one world, on a worker. A world behind its
// clock steps its catch-up ticks back to back in one job, as it did on
// the loop thread before the pool: no I/O comes between them, so no
// command could have arrived for the ones after the first.
static void step_job(app_job* j) {
    app_world* w = world_of(j);
    for (uint32_t i = 0; i < w->batch; ++i) {
        uint64_t t0 = uv_hrtime();
        sim_world_step(w->sim);
        w->step_ns[i] = uv_hrtime() - t0;
        // For seen_tick (dispatch.c). Out of memory, this tick has no
        // frame: a command that saw it is judged at the one before.
        (void)sim_history_record(w->history, w->sim);
    }
}

// Commands apply at the tick boundary, in arrival order. Each that changed
// the world goes to its journal (journal.c); the replies go out once the
// boundary's records are written (and fsync'd, with --journal-fsync
// always), so a command acknowledged is a command journaled. While the
// journal cannot be written, commands that could change the world are
// refused (unavailable), and a describe is answered.
static void apply_inbox(app_server* app, app_world* w, uint64_t now) {
    uint32_t n_replies = 0;
    const bool up = app__journal_retry(app, w, now);
    if (up && w->held_count > 0) {
        app__send_held(app, w); // durable now
    }
    char down[320] = "";
    if (!up) {
        snprintf(down, sizeof down,
                 "world %" PRIu64 " cannot keep commands durable now (%s); retry later", w->id,
                 w->journal_why);
    }
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
        char* reply = NULL;
        if (up || e.cmd.op == RDP_OP_DESCRIBE) {
            reply = app__apply(app, w, e.client, &e.cmd, &len, &ev, &ev_len);
        } else {
            w->apply_changed = false;
            reply = rdp_reply_error(rdp_re_of(&e.cmd), RDP_E_UNAVAILABLE, down, &len);
        }
        if (w->apply_changed) {
            w->seq++;
            app__journal_command(app, w, &e);
            app__rollback_log_command(w, &e);
        }
        if (e.client != NULL) {
            w->replies[n_replies++] =
                (struct app_reply){e.client, reply, len, e.cmd.op, w->apply_changed};
        } else {
            rdp_free(reply);
        }
        if (ev != NULL) {
            app__broadcast_text(w, ev, ev_len);
            rdp_free(ev);
        }
    }
    app__journal_commit(app, w);
    // A reply says the command is journaled: when the write (or, with
    // --journal-fsync always, the fsync) failed, the replies of the
    // commands that applied wait until it is (app__journal_retry()); a
    // kill -9 meanwhile loses commands nobody was told had succeeded.
    const bool durable = !app__journal_down(app, w);
    for (uint32_t i = 0; i < n_replies; ++i) {
        struct app_reply* r = &w->replies[i];
        if (!durable && r->applied) {
            w->held[w->held_count++] = *r;
            continue;
        }
        app__report_reply(app, r->client, r->op, r->text, r->len);
        app__send(r->client, r->text, r->len);
    }
}

// Begins `batch` ticks of an idle world: its commands, then its steps on
// the pool.
// The points its subscribers look at (set_focus), for level of detail.
static void gather_foci(app_server* app, app_world* w) {
    sim_vec3 foci[SIM_MAX_FOCI];
    uint32_t n = 0;
    for (uint32_t i = 0; i < w->sub_count && n < SIM_MAX_FOCI; ++i) {
        const app_sub* sub = app__sub_of(w->subs[i], w->id);
        if (sub != NULL && sub->has_focus) {
            foci[n++] = (sim_vec3){sub->focus[0], sub->focus[1], sub->focus[2]};
        }
    }
    sim_world_set_foci(w->sim, foci, n); // finite: checked by the decoder
    // Joint limit hits cost a measurement a joint: only while someone listens.
    sim_world_report_limit_hits(w->sim, (app__events_wanted(w) & RDP_EVENT_JOINT_LIMIT) != 0);
    // Level of detail changes the step: a replay and a rollback need it.
    if (app__journal_foci(app, w, foci, n)) {
        app__rollback_log_foci(w, foci, n);
    }
}

static void tick_begin(app_server* app, app_world* w, uint32_t batch) {
    uint64_t t0 = uv_hrtime();
    w->batch = batch;
    app__persist_tick(app, w); // tick T and its queued commands, before they apply
    app__rollback_keep(app, w, t0);
    apply_inbox(app, w, t0);
    gather_foci(app, w);
    app__journal_mark(app, w, t0);
    app__journal_commit(app, w);
    app__world_look(w); // what the loop thread reads while a worker has it
    w->quarantined_before = sim_world_quarantined(w->sim);
    w->loop_ns = uv_hrtime() - t0;
    w->busy = true;
    w->busy_since_ns = uv_hrtime();
    app__pool_submit(&app->sched.pool, &w->job);
}

// Begins the next batch of the ticks w owes (w idle, w->owed > 0): up to
// the first tick after which a subscriber is due a snapshot, so that every
// tick that was due one still gets its own (as when each catch-up tick ran
// on the loop thread); the rest of what it owes follows when it is back.
static void begin_owed(app_server* app, app_world* w) {
    uint32_t batch = app__broadcast_ticks_until_due(w, w->owed);
    w->owed -= batch;
    tick_begin(app, w, batch);
}

// Advances w's clock to `now` and begins the ticks that are due (w idle):
// all it owes, up to max_catchup, back to back in as few jobs as its
// subscribers allow.
static void advance(app_server* app, app_world* w, uint64_t now) {
    w->acc_ns += now - w->last_ns;
    w->last_ns = now;
    uint64_t owed = w->acc_ns / w->period_ns;
    if (owed == 0) {
        return;
    }
    uint32_t cap = app->cfg.max_catchup < APP_MAX_BATCH ? app->cfg.max_catchup : APP_MAX_BATCH;
    uint32_t run = owed < cap ? (uint32_t)owed : cap;
    // Behind by more than the cap: drop the backlog rather than chase it,
    // and count what was dropped.
    w->overruns += owed - run;
    w->acc_ns %= w->period_ns;
    w->owed = run;
    begin_owed(app, w);
}

static void on_timer(uv_timer_t* t);

// Sets the timer for the idle world due first (busy ones set it again
// when they come back).
static void rearm(app_server* app) {
    uint64_t now = uv_hrtime();
    uint64_t next = UINT64_MAX;
    for (uint32_t i = 0; i < app->cfg.max_worlds && !app->sched.paused; ++i) {
        const app_world* w = app->worlds[i];
        if (w == NULL || w->busy) {
            continue;
        }
        uint64_t owed = w->acc_ns + (now - w->last_ns);
        uint64_t wait = owed >= w->period_ns ? 0 : w->period_ns - owed;
        next = wait < next ? wait : next;
    }
    // libuv timers count whole milliseconds; round up so we never wake early
    // for nothing. The accumulator absorbs the lateness (at most 1 ms).
    uint64_t ms = next == UINT64_MAX ? 100 : (next + 999999) / 1000000;
    uv_timer_t* t = &app->sched.timer;
    if (uv_is_active((uv_handle_t*)t) && uv_timer_get_due_in(t) <= ms) {
        return; // due sooner already: worlds coming back must not push it back
    }
    uv_timer_start(t, on_timer, ms, 0);
}

static void on_timer(uv_timer_t* t) {
    app_server* app = t->data;
    if (app->shutting_down || app->sched.closing) {
        return;
    }
    uint64_t now = uv_hrtime();
    for (uint32_t i = 0; i < app->cfg.max_worlds && !app->sched.paused; ++i) {
        app_world* w = app->worlds[i];
        if (w != NULL && !w->busy) {
            advance(app, w, now);
        }
    }
    // The log's "suppressed K lines" once a burst is over: it needs a
    // clock, and this one runs as long as the server does.
    app__log_flush(&app->log, now);
    app__journal_sync_due(app, now); // --journal-fsync everysec
    app__persist_check_lock(app, now);
    rearm(app);
}

// The pool handed a world back (loop thread): the rest of its tick.
static void tick_end(app_job* j, void* ctx) {
    app_server* app = ctx;
    app_world* w = world_of(j);
    w->busy = false;
    if (w->doomed) {
        app__world_free(w); // destroyed while it stepped
        return;
    }
    if (app->sched.closing) {
        return; // shutting down: nobody to tell, nothing more to run
    }
    uint64_t t0 = uv_hrtime();
    w->step_ms = (double)w->step_ns[w->batch - 1] / 1e6;
    w->history_bytes = sim_history_bytes(w->history);   // the worker grew it: read it idle
    app__rollback_check(app, w, w->quarantined_before); // before anyone sees the blow-up
    app__broadcast_events(w);
    app__broadcast_snapshots(w, w->batch);
    // Each tick's own time (its commands, step, events and snapshots), not
    // the time it waited for a free worker: the commands count in the
    // first tick of a batch, the events and snapshots in the last.
    uint64_t post_ns = uv_hrtime() - t0;
    for (uint32_t i = 0; i < w->batch; ++i) {
        uint64_t ns = w->step_ns[i] + (i == 0 ? w->loop_ns : 0) + (i + 1 == w->batch ? post_ns : 0);
        app__tick_observe(&w->tick_stats, ns);
    }
    if (app->shutting_down) {
        return;
    }
    if (w->owed > 0) {
        begin_owed(app, w); // more catch-up ticks: commands that came meanwhile apply first
    } else if (!app->sched.paused) {
        advance(app, w, uv_hrtime());
        rearm(app);
    }
}

// ---------------------------------------------------------------------------
// Lifecycle
// ---------------------------------------------------------------------------

void app__sched_world_added(app_server* app, app_world* w) {
    w->job.run = step_job;
    w->job.next = NULL;
    if (app->sched.running && !app->sched.closing) {
        rearm(app); // its first tick is due in one period, not at the next idle wake-up
    }
}

int app__sched_start(app_server* app) {
    int rc = app__pool_init(&app->sched.pool, app->loop, app->cfg.workers, tick_end, app);
    if (rc != 0) {
        return rc;
    }
    uv_timer_init(app->loop, &app->sched.timer);
    app->sched.timer.data = app;
    app->sched.running = true;
    app->sched.open_handles = 2;
    uv_timer_start(&app->sched.timer, on_timer, 1, 0);
    return 0;
}

static void closed_one(app_server* app) {
    if (--app->sched.open_handles == 0 && app->sched.closed != NULL) {
        app->sched.closed(app);
    }
}

static void on_timer_closed(uv_handle_t* h) {
    closed_one(h->data);
}

static void on_pool_closed(app_pool* p) {
    closed_one(p->ctx);
}

void app__sched_close(app_server* app, void (*closed)(app_server* app)) {
    app->sched.closing = true;
    app->sched.closed = closed;
    uv_timer_stop(&app->sched.timer);
    // Waits for the steps being run and hands every world back (tick_end
    // frees the ones destroyed meanwhile), then closes its handle.
    app__pool_close(&app->sched.pool, on_pool_closed);
    uv_close((uv_handle_t*)&app->sched.timer, on_timer_closed);
}

void app__sched_pause(app_server* app, bool paused) {
    if (paused == app->sched.paused) {
        return;
    }
    app->sched.paused = paused;
    if (!paused) {
        // Time spent paused is not owed to anyone.
        uint64_t now = uv_hrtime();
        for (uint32_t i = 0; i < app->cfg.max_worlds; ++i) {
            if (app->worlds[i] != NULL) {
                app->worlds[i]->last_ns = now;
                app->worlds[i]->acc_ns = 0;
                app->worlds[i]->owed = 0;
            }
        }
        rearm(app);
    }
}

bool app__sched_tick_now(app_server* app, app_world* w) {
    if (w->busy || w->owed > 0 || app->sched.closing) {
        return false;
    }
    tick_begin(app, w, 1);
    return true;
}

uint32_t app__sched_in_flight(const app_server* app) {
    return app__pool_outstanding(&app->sched.pool);
}
