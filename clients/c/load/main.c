/*
 * main.c: ragdoll-load, a load generator for ragdolld: N scripted clients
 * (rdc, one libuv loop, one thread) connect at a set ramp, subscribe,
 * send a weighted mix of commands at a set rate, and are measured:
 * connections, snapshot rates and gaps, bytes, command round trips and
 * errors. A progress line goes to stderr once a second; the report to
 * stdout, and with --json to a file.
 *
 * A run's phases:
 *
 *   ramp (clients start) ─► run ─(duration_s)─► drain (replies, cleanup; ≤ 3 s) ─► close ─► report
 */
#include "load.h"

#include <http_parser.h>

#include <arpa/inet.h>
#include <getopt.h>
#include <math.h>
#include <netdb.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>

#define DRAIN_MS    3000
#define MAX_SPAWNED 64
#define MAX_CODES   32
/// Failed connection attempts after which a run in which no client has
/// connected gives up (fewer when there are fewer clients and they do not
/// reconnect: then each makes one attempt).
#define GIVE_UP_ATTEMPTS 10

typedef struct load_run load_run;

/// One subscription of one client, as measured.
typedef struct client_sub {
    bool subscribed;   ///< A subscribe reply said ok (on some connection).
    bool active;       ///< Granted on the current connection.
    double interval;   ///< Ticks between snapshots: tick_hz / rate_hz.
    double rate_hz;    ///< The rate the server granted.
    uint64_t since_ns; ///< When the subscription was granted on this connection.
    /// Time granted on earlier connections: the rate is snapshots over all
    /// the time subscribed, so a reconnect neither inflates nor dilutes it.
    uint64_t granted_ns;
    uint64_t snapshots;
    uint64_t last_tick;
    uint64_t missing; ///< Snapshots that should have come between the ones that did.
} client_sub;

typedef struct client {
    load_run* run;
    uint32_t index;
    rdc_client* c;
    uv_timer_t cmd_timer;
    bool timer_open;
    bool ever_connected;
    bool connected;
    bool down; ///< Disconnected for good (reconnect is off).
    client_sub subs[RDC_MAX_SUBSCRIPTIONS];
    uint64_t spawned[MAX_SPAWNED];
    uint64_t spawned_world[MAX_SPAWNED];
    uint32_t spawned_count;
    uint32_t outstanding;
    rdc_stats final_stats; ///< The counters when the client closed (c is NULL then).
} client;

/// The latest entities of a world, shared by every client (they all see the
/// same world).
typedef struct world_view {
    uint64_t world;
    uint64_t tick;
    uint32_t count;
    uint64_t ids[256];
    uint8_t kinds[256];
} world_view;

typedef struct code_count {
    char code[32];
    uint64_t count;
} code_count;

struct load_run {
    uv_loop_t* loop;
    load_scenario sc;
    const char* scenario_path;
    const char* json_path;
    const char* html_path; ///< --html: the report as a page with plots (report.c).
    const char* uplot_dir; ///< Where uPlot's files are (--uplot).
    bool quiet;
    uint64_t rng;
    client* clients;
    uint32_t started;
    uint32_t closed;
    uv_timer_t ramp_timer, progress_timer, end_timer;
    uv_signal_t sigint;
    uint64_t t0_ns;  ///< The first client started.
    uint64_t end_ns; ///< The run phase ended (commands stopped).
    bool ending;     ///< Past the run phase: no new commands.
    bool closing;    ///< Clients are being closed.
    world_view views[RDC_MAX_SUBSCRIPTIONS];
    // Totals.
    uint64_t established, failures, lost;
    uint32_t down;          ///< Clients disconnected for good.
    bool gave_up;           ///< The run ended early: no client could connect.
    char last_failure[160]; ///< Why the latest failed attempt failed.
    uint64_t sent, replied, skipped, send_failed;
    load_hist latency;
    code_count codes[MAX_CODES];
    uint32_t code_count;
    // Progress: totals at the previous line.
    uint64_t prev_snapshots, prev_replied, prev_bytes, prev_ns;
    // Time series and phases for --html: a sample a second.
    load_sample* samples;
    uint32_t sample_count, sample_cap;
    load_hist sec_latency; ///< Round trips replied since the last sample.
    load_phase_stats phases[LOAD_PHASES];
    uint64_t sample_snapshots, sample_replied, sample_bytes, sample_ns; ///< At the last point.
    uint64_t phase_snapshots, phase_ns; ///< At the last phase count.
};

// ---------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------

static double seconds_since(uint64_t t0_ns) {
    return (double)(uv_hrtime() - t0_ns) / 1e9;
}

// The phase the run is in: clients still starting, running, or past the
// run (no new commands: replies and cleanup).
static load_phase phase_now(const load_run* r) {
    return r->ending ? LOAD_DRAIN : r->started < r->sc.clients ? LOAD_RAMP : LOAD_RUN;
}

static void count_code(load_run* r, const char* code) {
    for (uint32_t i = 0; i < r->code_count; ++i) {
        if (strcmp(r->codes[i].code, code) == 0) {
            r->codes[i].count++;
            return;
        }
    }
    if (r->code_count < MAX_CODES) {
        snprintf(r->codes[r->code_count].code, sizeof r->codes[0].code, "%s", code);
        r->codes[r->code_count++].count = 1;
    }
}

static uint64_t error_total(const load_run* r) {
    uint64_t n = 0;
    for (uint32_t i = 0; i < r->code_count; ++i) {
        n += r->codes[i].count;
    }
    return n;
}

static world_view* view_of(load_run* r, uint64_t world) {
    for (uint32_t i = 0; i < r->sc.sub_count; ++i) {
        if (r->views[i].world == world) {
            return &r->views[i];
        }
    }
    return NULL;
}

static uint64_t pick_entity(void* ctx, uint64_t world, int kind) {
    client* cl = ctx;
    world_view* v = view_of(cl->run, world);
    if (v == NULL || v->count == 0) {
        return 0;
    }
    uint32_t matches = 0;
    for (uint32_t i = 0; i < v->count; ++i) {
        matches += kind == 0 || v->kinds[i] == kind;
    }
    if (matches == 0) {
        return 0;
    }
    uint32_t pick = (uint32_t)(load_rand01(&cl->run->rng) * matches);
    for (uint32_t i = 0; i < v->count; ++i) {
        if (kind == 0 || v->kinds[i] == kind) {
            if (pick-- == 0) {
                return v->ids[i];
            }
        }
    }
    return 0;
}

static uint64_t pick_spawned(void* ctx, uint64_t world, bool take) {
    client* cl = ctx;
    uint32_t matches = 0;
    for (uint32_t i = 0; i < cl->spawned_count; ++i) {
        matches += cl->spawned_world[i] == world;
    }
    if (matches == 0) {
        return 0;
    }
    uint32_t pick = (uint32_t)(load_rand01(&cl->run->rng) * matches);
    for (uint32_t i = 0; i < cl->spawned_count; ++i) {
        if (cl->spawned_world[i] == world && pick-- == 0) {
            uint64_t id = cl->spawned[i];
            if (take) {
                cl->spawned_count--;
                cl->spawned[i] = cl->spawned[cl->spawned_count];
                cl->spawned_world[i] = cl->spawned_world[cl->spawned_count];
            }
            return id;
        }
    }
    return 0;
}

// ---------------------------------------------------------------------------
// Commands
// ---------------------------------------------------------------------------

static void on_reply(rdc_client* c, const rdc_reply* rep, void* arg) {
    (void)c;
    client* cl = arg;
    load_run* r = cl->run;
    cl->outstanding--;
    if (rep->status == RDC_E_CLOSED) {
        return; // the run is over; not the server's fault
    }
    if (rep->status != 0 && rep->status != RDC_E_SERVER && rep->status != RDC_E_PROTOCOL) {
        count_code(r, rep->code); // disconnected, timeout
        return;
    }
    r->replied++;
    const uint64_t us = (uint64_t)(rep->rtt_ms * 1000.0 + 0.5);
    load_hist_add(&r->latency, us);
    if (r->html_path != NULL) {
        load_hist_add(&r->sec_latency, us);
        load_hist_add(&r->phases[phase_now(r)].latency, us);
    }
    if (rep->status != 0) { // the server's code, or malformed_reply
        count_code(r, rep->code);
    }
}

// Reply to a spawn: the world is passed through the command's callback arg
// by a small record.
typedef struct spawn_ctx {
    client* cl;
    uint64_t world;
} spawn_ctx;

static void on_spawn_reply(rdc_client* c, const rdc_reply* rep, void* arg) {
    spawn_ctx* sx = arg;
    client* cl = sx->cl;
    uint64_t world = sx->world;
    free(sx);
    on_reply(c, rep, cl);
    const cJSON* entity =
        rep->json != NULL ? cJSON_GetObjectItemCaseSensitive(rep->json, "entity") : NULL;
    // An id is in [1, 2^53 - 1] (PROTOCOL.md); converting a number outside
    // uint64_t's range would be undefined, and the server is not trusted.
    if (rep->status == 0 && cJSON_IsNumber(entity) && entity->valuedouble >= 1 &&
        entity->valuedouble <= 9007199254740991.0) {
        if (cl->spawned_count < MAX_SPAWNED) {
            cl->spawned[cl->spawned_count] = (uint64_t)entity->valuedouble;
            cl->spawned_world[cl->spawned_count] = world;
            cl->spawned_count++;
        } else if (!cl->run->closing) {
            // Too many to track: give it back at once rather than leak it.
            char text[128];
            snprintf(text, sizeof text, "{\"op\":\"despawn\",\"world\":%llu,\"entity\":%llu}",
                     (unsigned long long)world, (unsigned long long)entity->valuedouble);
            if (rdc_send_text(c, text, strlen(text), on_reply, cl, NULL) == 0) {
                cl->outstanding++;
                cl->run->sent++;
            }
        }
    }
}

static void send_one(client* cl) {
    load_run* r = cl->run;
    double u = load_rand01(&r->rng) * r->sc.weight_sum;
    const load_mix* m = &r->sc.mix[r->sc.mix_count - 1];
    for (uint32_t i = 0; i < r->sc.mix_count; ++i) {
        if (u < r->sc.mix[i].weight) {
            m = &r->sc.mix[i];
            break;
        }
        u -= r->sc.mix[i].weight;
    }
    load_view view = {pick_entity, pick_spawned, cl, &r->rng};
    cJSON* cmd = load_command_build(m, &view);
    if (cmd == NULL) {
        r->skipped++; // nothing to aim at yet
        return;
    }
    int rc;
    if (strncmp(m->op, "spawn_", 6) == 0) {
        spawn_ctx* sx = malloc(sizeof *sx);
        const cJSON* w = cJSON_GetObjectItemCaseSensitive(cmd, "world");
        if (sx == NULL) {
            cJSON_Delete(cmd);
            return;
        }
        sx->cl = cl;
        sx->world = cJSON_IsNumber(w) ? (uint64_t)w->valuedouble : 0;
        rc = rdc_send(cl->c, cmd, on_spawn_reply, sx, NULL);
        if (rc != 0) {
            free(sx);
        }
    } else {
        rc = rdc_send(cl->c, cmd, on_reply, cl, NULL);
    }
    cJSON_Delete(cmd);
    if (rc == 0) {
        cl->outstanding++;
        r->sent++;
    } else {
        r->send_failed++;
    }
}

static void on_cmd_timer(uv_timer_t* t) {
    client* cl = t->data;
    load_run* r = cl->run;
    if (r->ending || !cl->connected) {
        return;
    }
    send_one(cl);
    // Jittered spacing, uniform in [0.5, 1.5] × the mean interval: the rate
    // holds on average while clients drift out of step.
    double mean_ms = 1000.0 / r->sc.cmd_rate_hz;
    uint64_t wait = (uint64_t)(mean_ms * (0.5 + load_rand01(&r->rng)) + 0.5);
    uv_timer_start(&cl->cmd_timer, on_cmd_timer, wait > 0 ? wait : 1, 0);
}

// ---------------------------------------------------------------------------
// Client callbacks
// ---------------------------------------------------------------------------

static void on_subscribed(rdc_client* c, const rdc_reply* rep, void* arg) {
    client* cl = rdc_user(c);
    uintptr_t i = (uintptr_t)arg;
    load_run* r = cl->run;
    if (rep->status == RDC_E_CLOSED) {
        return;
    }
    if (rep->status != 0) {
        count_code(r, rep->code);
        return;
    }
    const cJSON* rate = cJSON_GetObjectItemCaseSensitive(rep->json, "rate_hz");
    const cJSON* hz = cJSON_GetObjectItemCaseSensitive(rep->json, "tick_hz");
    client_sub* s = &cl->subs[i];
    s->subscribed = true;
    s->rate_hz = cJSON_IsNumber(rate) ? rate->valuedouble : r->sc.subs[i].rate_hz;
    s->interval = cJSON_IsNumber(hz) && s->rate_hz > 0 ? hz->valuedouble / s->rate_hz : 1;
    s->since_ns = uv_hrtime();
    s->active = true;
    s->last_tick = 0;
}

// The time a subscription has been granted, over its connections, up to
// `end` (snapshots count in the run phase only: end is its end).
static uint64_t granted_ns(const client_sub* s, uint64_t end) {
    return s->granted_ns + (s->active && end > s->since_ns ? end - s->since_ns : 0);
}

static void on_snapshot(rdc_client* c, const rdc_snapshot* snap, void* user) {
    (void)c;
    client* cl = user;
    load_run* r = cl->run;
    for (uint32_t i = 0; i < r->sc.sub_count; ++i) {
        if (r->sc.subs[i].world != snap->world) {
            continue;
        }
        client_sub* s = &cl->subs[i];
        if (r->ending) {
            return; // measured over the run phase only
        }
        s->snapshots++;
        if (s->last_tick != 0 && snap->tick > s->last_tick) {
            double steps = (double)(snap->tick - s->last_tick) / s->interval;
            long missing = lround(steps) - 1;
            s->missing += missing > 0 ? (uint64_t)missing : 0;
        }
        s->last_tick = snap->tick;
        world_view* v = &r->views[i];
        if (snap->decoded && snap->tick > v->tick) {
            v->tick = snap->tick;
            v->count = snap->entity_count < 256 ? snap->entity_count : 256;
            for (uint32_t k = 0; k < v->count; ++k) {
                v->ids[k] = snap->entities[k].id;
                v->kinds[k] = (uint8_t)snap->entities[k].kind;
            }
        }
        return;
    }
}

static void end_run(load_run* r);

// Ends the run early when it cannot go on: no client has connected after
// GIVE_UP_ATTEMPTS failed attempts (or after every client's one attempt,
// when they do not reconnect), or every client is down for good.
static void check_progress(load_run* r) {
    if (r->ending) {
        return;
    }
    uint32_t enough = GIVE_UP_ATTEMPTS;
    if (!r->sc.reconnect && r->sc.clients < enough) {
        enough = r->sc.clients;
    }
    if (r->established == 0 && r->failures >= enough) {
        fprintf(stderr,
                "ragdoll-load: giving up after %llu failed connection attempts: no client "
                "could connect to %s (%s)\n",
                (unsigned long long)r->failures, r->sc.url, r->last_failure);
        r->gave_up = true;
        end_run(r);
    } else if (r->started == r->sc.clients && r->down == r->sc.clients) {
        fprintf(stderr, "ragdoll-load: every client has lost its connection; ending the run\n");
        end_run(r);
    }
}

static void on_state(rdc_client* c, const rdc_status* st, void* user) {
    (void)c;
    client* cl = user;
    load_run* r = cl->run;
    if (st->state == RDC_CONNECTED) {
        cl->connected = true;
        if (!cl->ever_connected) {
            cl->ever_connected = true;
            r->established++;
        }
        if (r->sc.cmd_rate_hz > 0 && !r->ending) {
            double mean_ms = 1000.0 / r->sc.cmd_rate_hz;
            uv_timer_start(&cl->cmd_timer, on_cmd_timer,
                           (uint64_t)(mean_ms * load_rand01(&r->rng)) + 1, 0);
        }
        return;
    }
    cl->connected = false;
    uv_timer_stop(&cl->cmd_timer);
    uint64_t now = r->end_ns != 0 ? r->end_ns : uv_hrtime();
    for (uint32_t i = 0; i < r->sc.sub_count; ++i) {
        cl->subs[i].granted_ns = granted_ns(&cl->subs[i], now);
        cl->subs[i].active = false;
    }
    if (st->retry_ms == 0 && !cl->down) {
        cl->down = true;
        r->down++;
    }
    if (st->was_connected) {
        r->lost++;
    } else if (!cl->ever_connected) {
        r->failures++;
        if (st->error == RDC_E_HANDSHAKE && st->http_status != 0 && st->http_status != 101) {
            snprintf(r->last_failure, sizeof r->last_failure,
                     "server refused the upgrade: %d%s%s%s", st->http_status,
                     st->http_reason[0] != '\0' ? " " : "", st->http_reason,
                     st->http_status == 401 ? "; check the token (scenario \"token\", --token "
                                              "or RAGDOLL_TOKEN)"
                                            : "");
        } else {
            snprintf(r->last_failure, sizeof r->last_failure, "%s", rdc_strerror(st->error));
        }
        if (!r->quiet && r->failures <= 5) {
            fprintf(stderr, "ragdoll-load: client %u cannot connect: %s\n", cl->index,
                    r->last_failure);
        }
    }
    check_progress(r);
}

static void start_client(load_run* r, client* cl) {
    rdc_config cfg = rdc_config_default();
    cfg.url = r->sc.url;
    cfg.token = r->sc.token[0] != '\0' ? r->sc.token : NULL;
    cfg.reconnect = r->sc.reconnect;
    cfg.read_buffer_bytes = 16 * 1024; // thousands of clients: keep each small
    cfg.reply_timeout_ms = 10000;
    cfg.decode_binary = r->sc.decode;
    // Only the scenario's commands: no describes of the client's own.
    cfg.describe_characters = false;
    cfg.user = cl;
    cfg.on_state = on_state;
    cfg.on_snapshot = on_snapshot;
    uv_timer_init(r->loop, &cl->cmd_timer);
    cl->cmd_timer.data = cl;
    cl->timer_open = true;
    int rc = rdc_open(r->loop, &cfg, &cl->c);
    if (rc != 0) {
        fprintf(stderr, "ragdoll-load: client %u: %s\n", cl->index, rdc_strerror(rc));
        snprintf(r->last_failure, sizeof r->last_failure, "%s", rdc_strerror(rc));
        r->failures++;
        cl->down = true;
        r->down++;
        check_progress(r);
        return;
    }
    for (uint32_t i = 0; i < r->sc.sub_count; ++i) {
        const load_sub* s = &r->sc.subs[i];
        if (s->bytes_per_s > 0) {
            rdc_subscribe_budget(cl->c, s->world, s->rate_hz, s->bytes_per_s, on_subscribed,
                                 (void*)(uintptr_t)i);
        } else {
            rdc_subscribe(cl->c, s->world, s->format, s->rate_hz, on_subscribed,
                          (void*)(uintptr_t)i);
        }
        if (s->has_focus) {
            // Sent once subscribed, and again after every reconnect (rdc).
            rdc_set_focus(cl->c, s->world, s->focus, s->radius, NULL, NULL);
        }
    }
}

// ---------------------------------------------------------------------------
// Phases
// ---------------------------------------------------------------------------

static void print_progress(load_run* r);
static rdc_stats stats_of(const client* cl);

/// take_sample()'s `mark`: a point of the plots (SAMPLE_POINT), or the
/// end of a phase (its seconds and snapshots counted, no point).
#define SAMPLE_POINT (-1)
static void take_sample(load_run* r, int mark);

static void on_ramp(uv_timer_t* t) {
    load_run* r = t->data;
    if (r->ending) {
        uv_timer_stop(t);
        return;
    }
    uint32_t due = r->sc.clients;
    if (r->sc.ramp_per_s > 0) {
        double d = floor(seconds_since(r->t0_ns) * r->sc.ramp_per_s) + 1;
        due = d < r->sc.clients ? (uint32_t)d : r->sc.clients;
    }
    while (r->started < due && !r->ending) {
        client* cl = &r->clients[r->started];
        cl->run = r;
        cl->index = r->started;
        r->started++;
        start_client(r, cl);
    }
    if (r->started == r->sc.clients) {
        take_sample(r, LOAD_RAMP); // the ramp ends here
        uv_timer_stop(t);
    }
}

static void on_progress(uv_timer_t* t) {
    take_sample(t->data, SAMPLE_POINT);
    print_progress(t->data);
}

static void on_handle_closed(uv_handle_t* h) {
    (void)h;
}

static void on_client_closed(rdc_client* c, void* arg) {
    client* cl = arg;
    rdc_get_stats(c, &cl->final_stats);
    cl->c = NULL;
    cl->run->closed++;
}

static rdc_stats stats_of(const client* cl) {
    rdc_stats st;
    if (cl->c != NULL) {
        rdc_get_stats(cl->c, &st);
    } else {
        st = cl->final_stats;
    }
    return st;
}

static void close_all(load_run* r) {
    if (r->closing) {
        return;
    }
    r->closing = true;
    uv_timer_stop(&r->end_timer);
    uv_close((uv_handle_t*)&r->ramp_timer, on_handle_closed);
    uv_close((uv_handle_t*)&r->progress_timer, on_handle_closed);
    uv_close((uv_handle_t*)&r->end_timer, on_handle_closed);
    uv_close((uv_handle_t*)&r->sigint, on_handle_closed);
    for (uint32_t i = 0; i < r->started; ++i) {
        client* cl = &r->clients[i];
        if (cl->timer_open) {
            cl->timer_open = false;
            uv_close((uv_handle_t*)&cl->cmd_timer, on_handle_closed);
        }
        rdc_close(cl->c, on_client_closed, cl);
    }
}

static uint32_t outstanding(const load_run* r) {
    uint32_t n = 0;
    for (uint32_t i = 0; i < r->started; ++i) {
        n += r->clients[i].outstanding;
    }
    return n;
}

static void on_drain(uv_timer_t* t) {
    load_run* r = t->data;
    // Done once every reply is in (or the drain time is up).
    if (outstanding(r) == 0 || seconds_since(r->end_ns) * 1000 >= DRAIN_MS) {
        close_all(r);
    }
}

// End of the run phase: no more commands; give back what was spawned; wait
// for the replies.
static void end_run(load_run* r) {
    if (r->ending) {
        return;
    }
    take_sample(r, r->started < r->sc.clients ? LOAD_RAMP : LOAD_RUN); // the run ends here
    r->ending = true;
    r->end_ns = uv_hrtime();
    uv_timer_stop(&r->ramp_timer);
    for (uint32_t i = 0; i < r->started; ++i) {
        client* cl = &r->clients[i];
        uv_timer_stop(&cl->cmd_timer);
        while (r->sc.cleanup && cl->connected && cl->spawned_count > 0) {
            cl->spawned_count--;
            char text[128];
            snprintf(text, sizeof text, "{\"op\":\"despawn\",\"world\":%llu,\"entity\":%llu}",
                     (unsigned long long)cl->spawned_world[cl->spawned_count],
                     (unsigned long long)cl->spawned[cl->spawned_count]);
            if (rdc_send_text(cl->c, text, strlen(text), on_reply, cl, NULL) == 0) {
                cl->outstanding++;
                r->sent++;
            }
        }
    }
    uv_timer_start(&r->end_timer, on_drain, 0, 50);
}

static void on_end(uv_timer_t* t) {
    end_run(t->data);
}

static void on_sigint(uv_signal_t* h, int signum) {
    (void)signum;
    load_run* r = h->data;
    if (r->ending) {
        close_all(r); // a second Ctrl-C: stop waiting
    } else {
        fprintf(stderr, "ragdoll-load: interrupted, finishing early\n");
        end_run(r);
    }
}

// ---------------------------------------------------------------------------
// Report
// ---------------------------------------------------------------------------

typedef struct summary {
    double run_s;
    uint64_t snapshots, missing, bad_snapshots, resyncs, binary_frames;
    double per_client_mean, per_client_min, per_client_max; ///< Snapshots/s, per subscription.
    double expected;                                        ///< The granted rate (mean).
    uint32_t measured;                                      ///< Subscriptions measured.
    uint64_t bytes_rx, bytes_tx;
} summary;

static void summarize(load_run* r, summary* s) {
    memset(s, 0, sizeof *s);
    uint64_t end = r->end_ns != 0 ? r->end_ns : uv_hrtime();
    s->run_s = (double)(end - r->t0_ns) / 1e9;
    s->per_client_min = INFINITY;
    double rate_sum = 0, expected_sum = 0;
    for (uint32_t i = 0; i < r->started; ++i) {
        client* cl = &r->clients[i];
        rdc_stats st = stats_of(cl);
        s->bytes_rx += st.bytes_rx;
        s->bytes_tx += st.bytes_tx;
        s->bad_snapshots += st.bad_snapshots;
        s->resyncs += st.resyncs;
        s->binary_frames += st.binary_frames;
        for (uint32_t k = 0; k < r->sc.sub_count; ++k) {
            client_sub* cs = &cl->subs[k];
            s->snapshots += cs->snapshots;
            s->missing += cs->missing;
            if (!cs->subscribed) {
                // A client that connected but was never granted its
                // subscription got nothing: its rate is 0. One that never
                // connected is counted under connections.
                if (cl->ever_connected) {
                    s->per_client_min = 0;
                    s->measured++;
                }
                continue;
            }
            double span = (double)granted_ns(cs, end) / 1e9;
            if (span < 0.5) {
                continue; // too short to say anything (joined at the very end)
            }
            double rate = (double)cs->snapshots / span;
            rate_sum += rate;
            expected_sum += cs->rate_hz;
            s->measured++;
            s->per_client_min = rate < s->per_client_min ? rate : s->per_client_min;
            s->per_client_max = rate > s->per_client_max ? rate : s->per_client_max;
        }
    }
    if (s->measured > 0) {
        s->per_client_mean = rate_sum / s->measured;
        s->expected = expected_sum / s->measured;
    }
    if (!isfinite(s->per_client_min)) {
        s->per_client_min = 0;
    }
}

static void human_bytes(char* out, size_t cap, double b) {
    if (b >= 1e9) {
        snprintf(out, cap, "%.2f GB", b / 1e9);
    } else if (b >= 1e6) {
        snprintf(out, cap, "%.2f MB", b / 1e6);
    } else if (b >= 1e3) {
        snprintf(out, cap, "%.1f kB", b / 1e3);
    } else {
        snprintf(out, cap, "%.0f B", b);
    }
}

// Snapshots and bytes received so far by all clients, and those connected.
static void totals(const load_run* r, uint64_t* snaps, uint64_t* bytes, uint32_t* up) {
    for (uint32_t i = 0; i < r->started; ++i) {
        const client* cl = &r->clients[i];
        *up += cl->connected;
        for (uint32_t k = 0; k < r->sc.sub_count; ++k) {
            *snaps += cl->subs[k].snapshots;
        }
        *bytes += stats_of(cl).bytes_rx;
    }
}

static void print_progress(load_run* r) {
    if (r->quiet) {
        return;
    }
    uint64_t now = uv_hrtime();
    uint64_t snaps = 0, bytes = 0;
    uint32_t up = 0;
    totals(r, &snaps, &bytes, &up);
    double dt = (double)(now - (r->prev_ns != 0 ? r->prev_ns : r->t0_ns)) / 1e9;
    dt = dt > 0 ? dt : 1;
    char rx[32];
    human_bytes(rx, sizeof rx, (double)(bytes - r->prev_bytes) / dt);
    fprintf(stderr,
            "[%6.1fs] clients %u/%u up, %llu failed, %llu lost | snapshots %.0f/s | commands "
            "%.0f/s, p99 %.1f ms, errors %llu | rx %s/s\n",
            seconds_since(r->t0_ns), up, r->sc.clients, (unsigned long long)r->failures,
            (unsigned long long)r->lost, (double)(snaps - r->prev_snapshots) / dt,
            (double)(r->replied - r->prev_replied) / dt,
            load_hist_quantile(&r->latency, 0.99) / 1000.0, (unsigned long long)error_total(r), rx);
    r->prev_snapshots = snaps;
    r->prev_replied = r->replied;
    r->prev_bytes = bytes;
    r->prev_ns = now;
}

// For --html: what happened since the last call, counted in the phase
// it happened in (phase ends are marked when they come: the ramp's when
// the last client starts, the run's when commands stop, the drain's at the
// report), and a point of the plots once a second.
static void take_sample(load_run* r, int mark) {
    if (r->html_path == NULL || r->t0_ns == 0) {
        return;
    }
    uint64_t now = uv_hrtime(), snaps = 0, bytes = 0;
    uint32_t up = 0;
    totals(r, &snaps, &bytes, &up);
    // The phase: what happened since the last call happened in it.
    const load_phase phase = mark != SAMPLE_POINT ? (load_phase)mark : phase_now(r);
    const uint64_t from = r->phase_ns != 0 ? r->phase_ns : r->t0_ns;
    r->phases[phase].seconds += (double)(now - from) / 1e9;
    r->phases[phase].snapshots += snaps - r->phase_snapshots;
    r->phase_ns = now;
    r->phase_snapshots = snaps;
    if (mark != SAMPLE_POINT) {
        return;
    }
    // A point: the rates since the last point.
    if (r->sample_count == r->sample_cap) {
        uint32_t cap = r->sample_cap > 0 ? 2 * r->sample_cap : 64;
        load_sample* more = realloc(r->samples, cap * sizeof *more);
        if (more == NULL) {
            return; // a second missing from the plots
        }
        r->samples = more;
        r->sample_cap = cap;
    }
    const uint64_t since = r->sample_ns != 0 ? r->sample_ns : r->t0_ns;
    const double dt = now > since ? (double)(now - since) / 1e9 : 1e-9;
    load_sample* s = &r->samples[r->sample_count++];
    s->t_s = seconds_since(r->t0_ns);
    s->phase = phase;
    s->up = up;
    s->snapshots_per_s = (double)(snaps - r->sample_snapshots) / dt;
    s->commands_per_s = (double)(r->replied - r->sample_replied) / dt;
    s->p50_ms = load_hist_quantile(&r->sec_latency, 0.5) / 1000;
    s->p99_ms = load_hist_quantile(&r->sec_latency, 0.99) / 1000;
    s->rx_per_s = (double)(bytes - r->sample_bytes) / dt;
    memset(&r->sec_latency, 0, sizeof r->sec_latency);
    r->sample_snapshots = snaps;
    r->sample_replied = r->replied;
    r->sample_bytes = bytes;
    r->sample_ns = now;
}

static bool write_html(load_run* r) {
    take_sample(r, LOAD_DRAIN); // the drain ends here
    load_report rep = {r->scenario_path, r->sc.url, r->sc.clients, r->samples,
                       r->sample_count,  r->phases, &r->latency,   error_total(r)};
    char err[1200];
    if (load_report_html(r->html_path, r->uplot_dir, &rep, err, sizeof err) != 0) {
        fprintf(stderr, "ragdoll-load: %s\n", err);
        return false;
    }
    return true;
}

// Prints the report, and writes it with --json and --html; false when one
// of those could not be written.
static bool report(load_run* r) {
    summary s;
    summarize(r, &s);
    bool written = r->html_path == NULL || write_html(r);
    char rx[32], rxs[32], tx[32];
    human_bytes(rx, sizeof rx, (double)s.bytes_rx);
    human_bytes(rxs, sizeof rxs, (double)s.bytes_rx / (s.run_s > 0 ? s.run_s : 1));
    human_bytes(tx, sizeof tx, (double)s.bytes_tx);
    printf("ragdoll-load: %u clients against %s for %.1f s (%s)\n", r->sc.clients, r->sc.url,
           s.run_s, r->scenario_path);
    printf("connections  %llu established, %llu failed, %llu lost\n",
           (unsigned long long)r->established, (unsigned long long)r->failures,
           (unsigned long long)r->lost);
    printf("snapshots    %llu in all, %.1f/s; per client %.2f/s mean, %.2f/s min, %.2f/s max "
           "(granted %.1f/s; over the time each was subscribed)\n",
           (unsigned long long)s.snapshots, (double)s.snapshots / (s.run_s > 0 ? s.run_s : 1),
           s.per_client_mean, s.per_client_min, s.per_client_max, s.expected);
    printf("gaps         %llu snapshots missing (from their ticks), %llu undecodable, %llu "
           "resyncs\n",
           (unsigned long long)s.missing, (unsigned long long)s.bad_snapshots,
           (unsigned long long)s.resyncs);
    printf("binary       %llu frames, %s\n", (unsigned long long)s.binary_frames,
           r->sc.decode ? "decoded and acknowledged" : "counted only (decode: false)");
    printf("bytes        %s received (%s/s), %s sent\n", rx, rxs, tx);
    printf("commands     %llu sent, %llu replied, %llu skipped (nothing to aim at yet)\n",
           (unsigned long long)r->sent, (unsigned long long)r->replied,
           (unsigned long long)r->skipped);
    printf("latency      p50 %.2f ms, p90 %.2f ms, p99 %.2f ms, max %.2f ms (round trip)\n",
           load_hist_quantile(&r->latency, 0.5) / 1000, load_hist_quantile(&r->latency, 0.9) / 1000,
           load_hist_quantile(&r->latency, 0.99) / 1000, (double)r->latency.max_us / 1000);
    printf("errors       ");
    if (r->code_count == 0) {
        printf("none");
    }
    for (uint32_t i = 0; i < r->code_count; ++i) {
        printf("%s%s %llu", i > 0 ? ", " : "", r->codes[i].code,
               (unsigned long long)r->codes[i].count);
    }
    printf("\n");

    if (r->json_path == NULL) {
        return written;
    }
    cJSON* o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "scenario", r->scenario_path);
    cJSON_AddStringToObject(o, "url", r->sc.url);
    cJSON_AddNumberToObject(o, "duration_s", s.run_s);
    cJSON* cl = cJSON_AddObjectToObject(o, "connections");
    cJSON_AddNumberToObject(cl, "clients", r->sc.clients);
    cJSON_AddNumberToObject(cl, "established", (double)r->established);
    cJSON_AddNumberToObject(cl, "failed", (double)r->failures);
    cJSON_AddNumberToObject(cl, "lost", (double)r->lost);
    cJSON* sn = cJSON_AddObjectToObject(o, "snapshots");
    cJSON_AddNumberToObject(sn, "total", (double)s.snapshots);
    cJSON_AddNumberToObject(sn, "per_s", (double)s.snapshots / (s.run_s > 0 ? s.run_s : 1));
    cJSON* pc = cJSON_AddObjectToObject(sn, "per_client_per_s");
    cJSON_AddNumberToObject(pc, "mean", s.per_client_mean);
    cJSON_AddNumberToObject(pc, "min", s.per_client_min);
    cJSON_AddNumberToObject(pc, "max", s.per_client_max);
    // What the per-client rates are over (reconnects do not count the time
    // between connections): the total's per_s is over the run.
    cJSON_AddStringToObject(pc, "over", "subscribed_time");
    cJSON_AddNumberToObject(sn, "granted_rate_hz", s.expected);
    cJSON_AddNumberToObject(sn, "missing", (double)s.missing);
    cJSON_AddNumberToObject(sn, "undecodable", (double)s.bad_snapshots);
    cJSON_AddNumberToObject(sn, "resyncs", (double)s.resyncs);
    cJSON_AddNumberToObject(sn, "binary_frames", (double)s.binary_frames);
    cJSON_AddBoolToObject(sn, "decoded", r->sc.decode);
    cJSON* by = cJSON_AddObjectToObject(o, "bytes");
    cJSON_AddNumberToObject(by, "received", (double)s.bytes_rx);
    cJSON_AddNumberToObject(by, "sent", (double)s.bytes_tx);
    cJSON_AddNumberToObject(by, "received_per_s", (double)s.bytes_rx / (s.run_s > 0 ? s.run_s : 1));
    cJSON* cm = cJSON_AddObjectToObject(o, "commands");
    cJSON_AddNumberToObject(cm, "sent", (double)r->sent);
    cJSON_AddNumberToObject(cm, "replied", (double)r->replied);
    cJSON_AddNumberToObject(cm, "skipped", (double)r->skipped);
    cJSON* lat = cJSON_AddObjectToObject(cm, "latency_ms");
    cJSON_AddNumberToObject(lat, "p50", load_hist_quantile(&r->latency, 0.5) / 1000);
    cJSON_AddNumberToObject(lat, "p90", load_hist_quantile(&r->latency, 0.9) / 1000);
    cJSON_AddNumberToObject(lat, "p99", load_hist_quantile(&r->latency, 0.99) / 1000);
    cJSON_AddNumberToObject(lat, "max", (double)r->latency.max_us / 1000);
    cJSON_AddNumberToObject(lat, "mean",
                            r->latency.count > 0 ? r->latency.sum_us / r->latency.count / 1000 : 0);
    cJSON* errs = cJSON_AddObjectToObject(cm, "errors");
    for (uint32_t i = 0; i < r->code_count; ++i) {
        cJSON_AddNumberToObject(errs, r->codes[i].code, (double)r->codes[i].count);
    }
    cJSON_AddNumberToObject(cm, "error_total", (double)error_total(r));
    char* text = cJSON_Print(o);
    cJSON_Delete(o);
    FILE* f = text != NULL ? fopen(r->json_path, "w") : NULL;
    if (f == NULL || fprintf(f, "%s\n", text) < 0 || fclose(f) != 0) {
        fprintf(stderr, "ragdoll-load: cannot write %s\n", r->json_path);
        written = false;
    }
    cJSON_free(text);
    return written;
}

// ---------------------------------------------------------------------------
// Loopback
// ---------------------------------------------------------------------------

// Whether every address the URL's host resolves to is a loopback address.
// Returns 1, 0, or -1 when the URL or the name is no good (err says why).
static int url_is_loopback(const char* url, char* err, size_t cap) {
    struct http_parser_url u;
    http_parser_url_init(&u);
    if (http_parser_parse_url(url, strlen(url), 0, &u) != 0 || !(u.field_set & (1 << UF_HOST))) {
        snprintf(err, cap, "not a ws:// URL: %s", url);
        return -1;
    }
    char host[256];
    size_t n = u.field_data[UF_HOST].len;
    if (n >= sizeof host) {
        snprintf(err, cap, "host name too long");
        return -1;
    }
    memcpy(host, url + u.field_data[UF_HOST].off, n);
    host[n] = '\0';
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_socktype = SOCK_STREAM;
    int rc = getaddrinfo(host, NULL, &hints, &res);
    if (rc != 0) {
        snprintf(err, cap, "cannot resolve %s: %s", host, gai_strerror(rc));
        return -1;
    }
    int loop = 1;
    for (struct addrinfo* a = res; a != NULL; a = a->ai_next) {
        if (a->ai_family == AF_INET) {
            const struct sockaddr_in* s4 = (const struct sockaddr_in*)(const void*)a->ai_addr;
            loop &= (ntohl(s4->sin_addr.s_addr) >> 24) == 127;
        } else if (a->ai_family == AF_INET6) {
            const struct sockaddr_in6* s6 = (const struct sockaddr_in6*)(const void*)a->ai_addr;
            const uint8_t* b = s6->sin6_addr.s6_addr;
            static const uint8_t v4mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
            loop &= IN6_IS_ADDR_LOOPBACK(&s6->sin6_addr) ||
                    (memcmp(b, v4mapped, 12) == 0 && b[12] == 127);
        } else {
            loop = 0;
        }
    }
    freeaddrinfo(res);
    return loop;
}

// ---------------------------------------------------------------------------
// main
// ---------------------------------------------------------------------------

static void usage(FILE* f) {
    fprintf(f,
            "usage: ragdoll-load [options] SCENARIO.json\n"
            "\n"
            "Drives many scripted ragdolld clients from one process and reports connections,\n"
            "snapshot rates and gaps, bytes, command round trips and errors. The scenario\n"
            "file is described in clients/c/README.md (examples in clients/c/scenarios/).\n"
            "\n"
            "options (override the scenario):\n"
            "  --url URL          server URL (scenario \"url\", default ws://127.0.0.1:8080/ws)\n"
            "  --token T          access token every client sends (scenario \"token\"; without\n"
            "                     either, the environment variable RAGDOLL_TOKEN)\n"
            "  --clients N        clients (1-%d)\n"
            "  --duration S       seconds of load (at most %.0f)\n"
            "  --ramp R           clients started per second (0: all at once)\n"
            "  --json FILE        also write the report as JSON\n"
            "  --html FILE        also write it as a page with plots over time and a table of\n"
            "                     each phase (ramp, run, drain); self-contained (uPlot inlined)\n"
            "  --uplot DIR        where uPlot's uPlot.iife.min.js and uPlot.min.css are (for\n"
            "                     --html; default the build's, from npm)\n"
            "  --no-decode        count binary snapshots without decoding or acknowledging\n"
            "                     them (scenario \"decode\": false)\n"
            "  --allow-remote     allow a server that is not on this machine (loopback only\n"
            "                     otherwise)\n"
            "  --quiet            no progress lines\n"
            "  --help, --version\n"
            "\n"
            "exit codes: 0 the run completed (read the report for errors), 2 usage or\n"
            "scenario error, or a --json/--html file that cannot be written or uPlot not\n"
            "found (checked before the run), 3 no client could connect (it gives up\n"
            "after %d failed attempts, or once every client has tried once when there\n"
            "are fewer and they do not reconnect), 4 a report could not be written\n"
            "after the run.\n",
            LOAD_MAX_CLIENTS, LOAD_MAX_DURATION_S, GIVE_UP_ATTEMPTS);
}

// The report files can be written and uPlot read, before a run whose
// report would otherwise be lost at its end. Truncates them.
static int check_outputs(const load_run* r, bool uplot_given) {
    if (uplot_given && r->html_path == NULL) {
        fprintf(stderr, "ragdoll-load: --uplot is for --html\n");
        return -1;
    }
    const char* out[2] = {r->json_path, r->html_path};
    if (out[0] != NULL && out[1] != NULL && strcmp(out[0], out[1]) == 0) {
        fprintf(stderr, "ragdoll-load: --json and --html name the same file\n");
        return -1;
    }
    for (int k = 0; k < 2; ++k) {
        if (out[k] == NULL) {
            continue;
        }
        // A byte written and flushed: a full disk (/dev/full) says so now.
        FILE* f = fopen(out[k], "w");
        bool ok = f != NULL && fputc('\n', f) != EOF && fflush(f) == 0;
        ok = f != NULL && fclose(f) == 0 && ok;
        if (ok) {
            f = fopen(out[k], "w"); // empty again until the report
            ok = f != NULL && fclose(f) == 0;
        }
        if (!ok) {
            fprintf(stderr, "ragdoll-load: cannot write %s\n", out[k]);
            return -1;
        }
    }
    const char* need[2] = {"uPlot.iife.min.js", "uPlot.min.css"};
    for (int k = 0; r->html_path != NULL && k < 2; ++k) {
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", r->uplot_dir, need[k]);
        FILE* f = fopen(path, "rb");
        if (f == NULL) {
            fprintf(stderr, "ragdoll-load: --html needs %s (uPlot: npm ci, or --uplot DIR)\n",
                    path);
            return -1;
        }
        fclose(f);
    }
    return 0;
}

static int run_load(load_run* r, int argc, char** argv) {
    const char* url = NULL;
    const char* token = NULL;
    double clients = -1, duration = -1, ramp = -1;
    bool allow_remote = false, no_decode = false;
    bool uplot_given = false;
    static const struct option opts[] = {
        {"url", required_argument, NULL, 'u'},     {"token", required_argument, NULL, 't'},
        {"clients", required_argument, NULL, 'c'}, {"duration", required_argument, NULL, 'd'},
        {"ramp", required_argument, NULL, 'r'},    {"json", required_argument, NULL, 'j'},
        {"allow-remote", no_argument, NULL, 'R'},  {"quiet", no_argument, NULL, 'q'},
        {"help", no_argument, NULL, 'h'},          {"no-decode", no_argument, NULL, 'D'},
        {"version", no_argument, NULL, 'V'},       {"html", required_argument, NULL, 'H'},
        {"uplot", required_argument, NULL, 'U'},   {NULL, 0, NULL, 0},
    };
    int o;
    while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        char* end = NULL;
        switch (o) {
        case 'u':
            url = optarg;
            break;
        case 't':
            token = optarg;
            break;
        case 'c':
            clients = strtod(optarg, &end);
            break;
        case 'd':
            duration = strtod(optarg, &end);
            break;
        case 'r':
            ramp = strtod(optarg, &end);
            break;
        case 'j':
            r->json_path = optarg;
            break;
        case 'H':
            r->html_path = optarg;
            break;
        case 'U':
            r->uplot_dir = optarg;
            uplot_given = true;
            break;
        case 'R':
            allow_remote = true;
            break;
        case 'q':
            r->quiet = true;
            break;
        case 'D':
            no_decode = true;
            break;
        case 'h':
            usage(stdout);
            return 0;
        case 'V':
            printf("ragdoll-load " RDC_VERSION "\n");
            return 0;
        default:
            usage(stderr);
            return 2;
        }
        if (end != NULL && (*end != '\0' || end == optarg)) {
            fprintf(stderr, "ragdoll-load: %s wants a number, not %s\n", argv[optind - 2], optarg);
            return 2;
        }
    }
    if (argc - optind != 1) {
        usage(stderr);
        return 2;
    }
    r->scenario_path = argv[optind];
    char err[512];
    if (load_scenario_read(r->scenario_path, &r->sc, err, sizeof err) != 0) {
        fprintf(stderr, "ragdoll-load: %s\n", err);
        return 2;
    }
    if (url != NULL) {
        snprintf(r->sc.url, sizeof r->sc.url, "%s", url);
    }
    // --token, else the scenario's, else the environment's. Never echoed.
    const char* env = getenv("RAGDOLL_TOKEN");
    if (token == NULL && r->sc.token[0] == '\0' && env != NULL && env[0] != '\0') {
        if (!rdc_token_valid(env)) {
            fprintf(stderr,
                    "ragdoll-load: RAGDOLL_TOKEN is not a token: it wants %d-%d characters "
                    "of A-Z a-z 0-9 . _ ~ -\n",
                    RDC_TOKEN_MIN, RDC_TOKEN_MAX);
            return 2;
        }
        token = env;
    }
    if (token != NULL) {
        if (!rdc_token_valid(token)) {
            fprintf(stderr, "ragdoll-load: --token wants %d-%d characters of A-Z a-z 0-9 . _ ~ -\n",
                    RDC_TOKEN_MIN, RDC_TOKEN_MAX);
            return 2;
        }
        snprintf(r->sc.token, sizeof r->sc.token, "%s", token);
    }
    if (clients >= 0) {
        r->sc.clients = clients >= 1 && clients <= 1e6 && clients == floor(clients)
                            ? (uint32_t)clients
                            : 0; // refused by the check below
    }
    if (duration >= 0) {
        r->sc.duration_s = duration;
    }
    if (ramp >= 0) {
        r->sc.ramp_per_s = ramp;
    }
    if (no_decode) {
        r->sc.decode = false;
    }
    int rc = load_scenario_check(&r->sc, err, sizeof err);
    int loop_ok = rc == 0 ? url_is_loopback(r->sc.url, err, sizeof err) : -1;
    if (rc != 0 || loop_ok < 0) {
        fprintf(stderr, "ragdoll-load: %s\n", err);
        return 2;
    }
    if (loop_ok == 0 && !allow_remote) {
        fprintf(stderr,
                "ragdoll-load: %s is not on this machine; a load test against another server "
                "needs --allow-remote\n",
                r->sc.url);
        return 2;
    }
    if (check_outputs(r, uplot_given) != 0) {
        return 2;
    }
    r->rng = r->sc.seed != 0 ? r->sc.seed : (uv_hrtime() | 1);

    // One descriptor per client, and some to spare: the soft limit goes up
    // to the hard one (often 1024 soft against 524288 hard), which a
    // process may do without privileges.
    struct rlimit lim;
    if (getrlimit(RLIMIT_NOFILE, &lim) == 0) {
        if (lim.rlim_cur < lim.rlim_max) {
            lim.rlim_cur = lim.rlim_max;
            if (setrlimit(RLIMIT_NOFILE, &lim) != 0) {
                getrlimit(RLIMIT_NOFILE, &lim);
            }
        }
        if (lim.rlim_cur < r->sc.clients + 16u) {
            fprintf(stderr,
                    "ragdoll-load: warning: only %llu file descriptors for %u clients (raise "
                    "the hard limit: ulimit -Hn)\n",
                    (unsigned long long)lim.rlim_cur, r->sc.clients);
        }
    }
    signal(SIGPIPE, SIG_IGN);
    r->clients = calloc(r->sc.clients, sizeof *r->clients);
    if (r->clients == NULL) {
        fprintf(stderr, "ragdoll-load: out of memory\n");
        return 2;
    }
    for (uint32_t i = 0; i < r->sc.sub_count; ++i) {
        r->views[i].world = r->sc.subs[i].world;
    }
    r->loop = uv_default_loop();
    uv_timer_init(r->loop, &r->ramp_timer);
    uv_timer_init(r->loop, &r->progress_timer);
    uv_timer_init(r->loop, &r->end_timer);
    uv_signal_init(r->loop, &r->sigint);
    r->ramp_timer.data = r->progress_timer.data = r->end_timer.data = r->sigint.data = r;
    uv_signal_start(&r->sigint, on_sigint, SIGINT);
    r->t0_ns = uv_hrtime();
    uv_timer_start(&r->ramp_timer, on_ramp, 0, 10);
    uv_timer_start(&r->progress_timer, on_progress, 1000, 1000);
    uv_timer_start(&r->end_timer, on_end, (uint64_t)(r->sc.duration_s * 1000 + 0.5), 0);
    uv_run(r->loop, UV_RUN_DEFAULT);
    const bool written = report(r);
    if (uv_loop_close(r->loop) != 0) {
        fprintf(stderr, "ragdoll-load: internal error: handles left open\n");
    }
    return r->established == 0 ? 3 : written ? 0 : 4;
}

int main(int argc, char** argv) {
    // The run's tables are large: on the heap, not the stack.
    load_run* r = calloc(1, sizeof *r);
    if (r == NULL) {
        fprintf(stderr, "ragdoll-load: out of memory\n");
        return 2;
    }
    r->uplot_dir = RD_UPLOT_DIR;
    int rc = run_load(r, argc, argv);
    free(r->clients);
    free(r->samples);
    load_scenario_free(&r->sc);
    free(r);
    return rc;
}
