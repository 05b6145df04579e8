/*
 * app_internal.h: the private structures of server/app. Everything here is
 * for the loop thread, except a busy world's simulator, which a worker
 * steps (the thread model is in scheduler.c).
 *
 *   app_server ──► worlds[]: app_world ──► sim_world (physics)
 *        │                    ├─ inbox: commands waiting for the next tick
 *        │                    └─ subscribers: app_client*
 *        └──► net_server ──► net_session ◄──► app_client (session data)
 *                                              └─ subs[]: world, format, rate
 */
#pragma once

#include "app.h"
#include "log.h"
#include "metrics.h"
#include "net.h"
#include "pool.h"
#include "rdp.h"
#include "sim.h"
#include "sim_query.h"

#define APP_MAX_SUBS  8
#define APP_MAX_DRAGS 64
/// Catch-up ticks one job of the pool steps at most (app_config.max_catchup
/// is capped by it).
#define APP_MAX_BATCH 16
/// Commands one client may have waiting for worlds' next ticks; beyond it
/// they get rate_limited. A quarter of an inbox's default capacity (1024),
/// so one client cannot fill a world's inbox on its own.
#define APP_MAX_PENDING 256

/// save_world requests one world holds at once, answered when its state
/// file is durable (persist.c); more are rate_limited.
#define APP_MAX_SAVE_WAITERS 8

/// The largest world id: the protocol's numbers are exact up to 2^53 - 1
/// (JSON's safe integers). Ids are never reused; past it no world is made.
#define APP_MAX_WORLD_ID ((1ull << 53) - 1)

/// States a world keeps to roll back to, one a second (rollback.c).
#define APP_ROLLBACK_KEEP 3

/// Bytes of describe replies a client may receive per second, sustained,
/// and at once (the bucket's size): a viewer that meets a whole world of
/// unknown entities gets them all, a client that asks again and again gets
/// rate_limited (PROTOCOL.md §1).
#define APP_DESCRIBE_BYTES_PER_S (4.0 * 1024 * 1024)
#define APP_DESCRIBE_BURST_BYTES (8.0 * 1024 * 1024)

/// Bytes of snapshots a client may receive per second from one
/// subscription, sustained and at once: a due snapshot is skipped while the
/// subscription is in debt, so a JSON viewer of a huge cloth gets fewer
/// snapshots instead of taking the event loop from everyone (PROTOCOL.md
/// §1).
#define APP_SNAPSHOT_BYTES_PER_S (4.0 * 1024 * 1024)

/// Token lengths (auth.c): long enough to resist guessing, short enough for
/// a header value.
#define APP_TOKEN_MIN        16
#define APP_TOKEN_MAX        128
#define APP_AUTH_MAX_WORLDS  16
#define APP_AUTH_MAX_ENTRIES 4096
/// How a browser offers its token: a second subprotocol "ragdolld.auth.T".
#define APP_AUTH_SUBPROTOCOL_PREFIX "ragdolld.auth."

/// One line of the auth file.
typedef struct app_auth_entry {
    char token[APP_TOKEN_MAX + 1]; ///< NUL-padded to the end (compared whole).
    size_t len;
    app_role role;
    uint32_t line;        ///< Line in the file, for messages; 0 for an allocation's token.
    uint32_t world_count; ///< 0: every world.
    char worlds[APP_AUTH_MAX_WORLDS][RDP_MAX_NAME + 1];
} app_auth_entry;

/// Why an upgrade was refused, for counting.
typedef enum app_refuse {
    APP_REFUSE_ORIGIN,  ///< 403
    APP_REFUSE_TOKEN,   ///< 401
    APP_REFUSE_ADDRESS, ///< 429
    APP_REFUSE_FULL,    ///< 503 (anonymous slots)
    APP_REFUSE_COUNT
} app_refuse;

/// A token bucket (bucket.c): `tokens` refills at `rate` per second up to
/// `burst`. A take is allowed while tokens >= 0 and may leave a debt
/// (negative), so a single take larger than the bucket is still possible;
/// the debt is paid by waiting. Units are the caller's (bytes, commands).
typedef struct app_bucket {
    double tokens;    ///< Negative is a debt.
    double rate;      ///< Tokens per second.
    double burst;     ///< Tokens at most.
    uint64_t last_ns; ///< When tokens was last brought up to date (uv_hrtime()).
} app_bucket;

/// One subscription of a client.
typedef struct app_sub {
    uint64_t world;
    uint32_t format;  ///< rdp_format.
    uint32_t rate_hz; ///< Effective rate (capped at the world's tick rate).
    uint32_t acc;     ///< Rate accumulator: a snapshot is due when it reaches tick_hz.
    bool topo_sent;   ///< Topology of topo_epoch was sent.
    uint32_t topo_epoch;
    /// Binary: the newest tick the client acknowledged (its baseline), or
    /// UINT64_MAX for none yet (it gets a full snapshot).
    uint64_t acked;
    bool full_next;       ///< Binary: the next snapshot is full (resync).
    bool mid_batch;       ///< Made while the world stepped: only its batch's last tick counts.
    uint32_t metrics_acc; ///< Binary: snapshots sent (a metrics event every rate_hz).
    /// Snapshot bytes the subscription may still send: refilled each tick
    /// by APP_SNAPSHOT_BYTES_PER_S / tick_hz up to APP_SNAPSHOT_BYTES_PER_S;
    /// negative is a debt, during which due snapshots are skipped.
    double snap_tokens;
    uint32_t events;    ///< Opt-in events asked for at subscribe (rdp_event_bits).
    float impact_speed; ///< "impact": the slowest impact sent, m/s.
    bool has_focus;     ///< set_focus gave a point: where this viewer looks (level of detail).
    float focus[3];     ///< m.
    float focus_radius; ///< set_focus's radius, m: full priority within it (interest.c).
    /// subscribe's bytes_per_s, 0: none. A binary subscription with one
    /// gets partial frames made by `interest` (PROTOCOL.md §5.3).
    uint32_t bytes_per_s;
    struct app_interest* interest;
} app_sub;

/// A particle a client is dragging; released for it if it disconnects.
typedef struct app_drag {
    uint64_t world, entity;
    uint32_t particle;
} app_drag;

/// A connected WebSocket client (the session's data).
typedef struct app_client {
    net_session* session;
    struct app_client* prev; ///< In app_server.client_list.
    struct app_client* next;
    bool open;                   ///< on_open ran (counted in app_server.clients).
    app_role role;               ///< What it may do (auth.c).
    const app_auth_entry* entry; ///< Its token's entry, NULL when anonymous.
    uint64_t owner;              ///< Ownership key of what it spawns (auth.c).
    app_sub subs[APP_MAX_SUBS];
    uint32_t sub_count;
    app_drag drags[APP_MAX_DRAGS];
    uint32_t drag_count;
    uint32_t pending;           ///< Its commands waiting in world inboxes (APP_MAX_PENDING).
    app_bucket describe_budget; ///< Bytes of describe replies it may still receive.
    app_bucket commands;        ///< Commands it may still send (app_config.cmd_rate).

    // For logs and /metrics (report.c).
    app_server* app;
    uint64_t opened_ns;     ///< uv_hrtime() at on_open.
    uint32_t session_label; ///< Its label in ragdolld_sessions (metrics.c), set at on_open.
    uint32_t cmd_op;        ///< Op of the command being handled, not yet answered; 0: none.
    uint32_t cmd_pending;   ///< pending when it began (did it get queued?).
} app_client;

/// A command waiting for its world's next tick.
typedef struct app_cmd {
    app_client* client; ///< NULL once the client has gone (the command still applies).
    app_role role;      ///< The sender's role and ownership key, kept if it goes.
    uint64_t owner;
    rdp_command cmd;
} app_cmd;

/// A describe body (rdp_describe_body()) kept for an entity: its topology
/// never changes while it lives and ids are never reused, so the text stays
/// valid until the entity goes.
typedef struct app_topo {
    uint64_t entity; ///< Wire id of the entity the body describes.
    net_blob* body;  ///< NULL: nothing cached.
    uint8_t lod;     ///< The sim_lod the body gives (it changes without the topology).
    float tear;      ///< The tear ratio it gives (set_tear changes it without the topology).
} app_topo;

/// What the loop thread reads of a world outside its tick boundary (lists,
/// /metrics, subscribe replies, the server's solver budget, logs): read
/// from the simulator while the world is idle; while a worker steps it,
/// kept as it was when the world was handed over (app__world_view()).
typedef struct app_world_view {
    uint64_t tick;
    uint32_t entities;
    uint32_t particles;
    uint32_t by_kind[7];  ///< Entities by sim_entity_kind (1..6).
    uint32_t bones;       ///< Rigid bodies that are characters' bones.
    uint32_t balls;       ///< Rigid bodies that are balls.
    uint64_t solver_work; ///< Per tick, as sim_world_solver_work() counts it.
    sim_overflows overflows;
    sim_params params;
    bool ground;
    uint32_t box_count;
    sim_box* boxes; ///< def.max_boxes of them, box_count used.
} app_world_view;

/// A world and everything that hangs off it.
///
/// Threading (scheduler.c): everything here is the loop thread's, except
/// while `busy`: then a worker steps `sim`, reading `batch` and writing
/// `step_ns`, and the loop thread touches none of the three (it reads
/// `view`). The pool's mutex orders each hand-over.
typedef struct app_world {
    uint64_t id;
    char name[RDP_MAX_NAME + 1];
    sim_world* sim;
    /// Its rigid bodies' poses at its last ticks (--lag-history), recorded
    /// after each step by whichever thread stepped it; NULL with
    /// --lag-history 0. Read by commands with a seen_tick (dispatch.c).
    sim_history* history;
    size_t history_bytes; ///< sim_history_bytes(history) when last handed back (metrics).
    sim_world_def def;    ///< What the world was created with: capacities, solver budget.
    app_world_view view;

    // The clock and the step (scheduler.c).
    uint32_t tick_hz;
    uint64_t period_ns;
    uint64_t acc_ns;  ///< Real time owed to the simulation.
    uint64_t last_ns; ///< When the accumulator was last advanced.
    uint64_t overruns;
    bool busy;        ///< Handed to the pool: a worker owns `sim` until it comes back.
    bool doomed;      ///< Destroyed while busy: freed when the pool hands it back.
    app_job job;      ///< Its steps, as a job of the pool.
    uint32_t batch;   ///< Ticks the job steps, 1 unless catching up (APP_MAX_BATCH).
    uint32_t owed;    ///< Catch-up ticks still to begin after this batch.
    uint64_t loop_ns; ///< The batch's time on the loop thread before its steps (commands).
    uint64_t step_ns[APP_MAX_BATCH]; ///< Each step, timed by the worker that ran it.
    double step_ms;                  ///< The last step, for snapshots' metrics.

    app_cmd* inbox; ///< Ring buffer of inbox_cap commands.
    uint32_t inbox_head, inbox_count, inbox_cap;

    app_client** subs;
    uint32_t sub_count, sub_cap;

    // Snapshots encoded this tick, shared by every subscriber due now.
    uint64_t cache_tick;
    net_blob* json_lean;
    net_blob* json_full;
    rdp_buf jsonbuf; ///< Where JSON snapshots are written, kept across ticks.
    net_blob* binary;
    char* metrics_text; ///< This tick's metrics event (binary subscribers), or NULL.
    size_t metrics_len;
    // Scratch for building rdp_snapshot (sized at creation).
    rdp_entity_state* ents;
    uint32_t* sticks;
    uint32_t sticks_cap;
    rdp_cloth_desc cloth_desc; ///< describe of a rope or cloth.
    // Binary snapshots: the last RDP_BASELINES quantized snapshots sent
    // (the baselines clients may acknowledge), and this tick's encodings,
    // one per baseline in use, shared by every client on it.
    rdp_qsnap* qring[RDP_BASELINES];
    uint32_t qnext;
    rdp_qsnap* qcur; ///< This tick's, in qring; NULL until quantized.
    struct {
        uint64_t base; ///< Baseline tick, UINT64_MAX for the full snapshot.
        net_blob* blob;
    } bcache[8];
    uint32_t bcache_count;
    uint8_t* encbuf;
    size_t encbuf_cap;
    struct app_enc_cache* enc_cache; ///< Budgeted subscriptions' shared encodings (interest.c).
    int* parents;                    ///< Characters' parent bones, body_cap.
    float* anchors;                  ///< Characters' joint anchors, 6 × body_cap.
    // Scratch for rigid bodies (bones, balls), max_bodies of each.
    float* poses;                           ///< 7 floats per body.
    float* body_radius;                     ///< m.
    float* body_half_length;                ///< m.
    const char** bone_names;                ///< Into the library's skeletons.
    rdp_bone_desc bone_desc[SIM_MAX_BONES]; ///< describe of one character.
    uint32_t body_cap;
    char name_error[96]; ///< What a command named that does not exist.
    /// Who spawned each entity, by slot (index1 - 1), def.max_entities of
    /// them: an app_client.owner key, 0 for the server (scenes).
    uint64_t* owners;
    /// The sender of the command being applied (role, owner key).
    app_role apply_role;
    uint64_t apply_owner;
    // Describe bodies by entity slot (index1 - 1), def.max_entities of them.
    app_topo* topo;

    app_tick_histogram tick_stats; ///< How long its ticks take (/metrics).

    // Durability (persist.c, journal.c).
    uint64_t seq; ///< Commands applied so far: the next one's journal sequence is seq + 1.
    struct app_save* saving; ///< Its state file being written, or NULL.
    bool save_wanted;        ///< save_world asked: save at the next tick boundary.
    /// The state file this server wrote (or loaded) last: device, inode and
    /// size, so one changed under it is found (journal.c); ino 0: unknown.
    uint64_t state_dev, state_ino, state_size;
    uint64_t next_save_ns; ///< When the next autosave is due (uv_hrtime()).
    struct {
        app_client* client; ///< NULL once gone.
        rdp_re re;
        bool fetch; ///< Wants the file back in the reply (save_world "fetch").
    } save_waiters[APP_MAX_SAVE_WAITERS]; ///< Who asked for the save to come.
    uint32_t save_waiter_count;
    bool apply_changed;     ///< app__apply(): the command applied changed the world (journal it).
    int journal_fd;         ///< Its journal (journal.c), open for appending; -1: none.
    uint64_t journal_bytes; ///< The journal's length.
    uint8_t* jbuf;          ///< Records of this tick boundary, not yet written.
    size_t jlen, jcap;
    bool journal_dirty;    ///< Written since its last fsync.
    uint64_t next_mark_ns; ///< When its tick is next marked in the journal.
    /// Its journal is down: a write, fsync or open failed, or its first
    /// state file could not be written; commands that would change it are
    /// refused until app__journal_retry() brings it back (journal.c).
    bool journal_failed;
    bool journal_lost;            ///< ... and records were lost: only a state file brings it back.
    uint64_t journal_retry_ns;    ///< When its kept records are next written again.
    uint64_t journal_resave_ns;   ///< When a state file is next tried to bring it back.
    char journal_why[192];        ///< Why it is down, for the refusals.
    sim_vec3 jfoci[SIM_MAX_FOCI]; ///< The foci last journaled.
    uint32_t jfoci_count;
    struct app_rollback* rollback;   ///< Kept states and the commands since (rollback.c).
    uint64_t rollbacks;              ///< Blow-ups undone.
    uint64_t quarantined_before;     ///< sim_world_quarantined() when the batch began.
    uint64_t busy_since_ns;          ///< When its current batch went to the pool.
    uint64_t health_tick, health_ns; ///< Its tick when Agones' Health last looked, and when.
    /// This boundary's replies, sent once its records are written (and,
    /// with --journal-fsync always, fsync'd): inbox_cap of them.
    struct app_reply {
        app_client* client;
        char* text;
        size_t len;
        uint32_t op;
        bool applied; ///< The command changed the world (its reply waits for the journal).
    } * replies;
    /// Replies of commands that applied in a boundary whose journal write
    /// failed: sent once they are durable (scheduler.c), inbox_cap of room.
    struct app_reply* held;
    uint32_t held_count;
} app_world;

/// The scheduler (scheduler.c): one timer for every world's clock and the
/// pool their steps run on.
typedef struct app_sched {
    uv_timer_t timer;
    app_pool pool;
    bool running; ///< app__sched_start() succeeded: the timer and the pool exist.
    bool paused;  ///< The clock starts no tick; app__sched_tick_now() does (tests, benchmarks).
    bool closing; ///< app__sched_close() was called: no tick starts, none finishes.
    uint32_t open_handles;                  ///< The timer and the pool, until closed.
    void (*closed)(struct app_server* app); ///< app__sched_close()'s callback.
} app_sched;

struct app_server {
    uv_loop_t* loop;
    app_config cfg;
    char* host;
    char* web_root;
    net_server* net;
    app_sched sched; ///< The clock and the workers (scheduler.c).
    uint64_t started_ns;
    app_world** worlds; ///< cfg.max_worlds slots; NULL = free.
    uint32_t world_count;
    uint64_t next_world_id;
    uint32_t clients;
    app_client* client_list; ///< Every client, from on_upgrade to on_close.
    uint64_t auth_refusals[APP_REFUSE_COUNT];
    uint64_t rate_limited; ///< Commands refused for the sender's command rate.
    /// Bytes waiting to be sent to a client above which its describes get
    /// rate_limited (net_config.read_pause_limit).
    size_t reply_backlog_limit;
    bool shutting_down;
    void (*done)(void* arg);
    void* done_arg;

    // Durability (persist.c).
    uint32_t saves_in_flight;                     ///< State files being written on the threadpool.
    void (*persist_done)(struct app_server* app); ///< app__persist_shutdown()'s callback.
    uint64_t saves, save_failures;                ///< State files written, and writes that failed.
    uint64_t journal_failures;             ///< Times a world's journal went down (journal.c).
    uint64_t journals_refused;             ///< Journals refused or found damaged at start.
    uint64_t states_refused;               ///< State files refused at start.
    uint64_t rollbacks, rollback_failures; ///< Blow-ups undone, and those that recurred.
    uint32_t syncs_in_flight;              ///< Journal fsyncs on the threadpool (at most one).
    uint64_t next_sync_ns;                 ///< When the journals are next fsync'd (everysec).
    int state_lock_fd;                     ///< DIR/.lock, flock()ed while the server runs; 0: none.
    uint64_t lock_check_ns;                ///< When the lock is next checked (persist.c).
    bool state_dir_taken; ///< Another server holds the state dir: nothing is written.

    struct app_agones* agones; ///< The Agones SDK sidecar's client (agones.c), or NULL.

    // What the operator sees (report.c).
    app_log log;
    app_metrics metrics;
};

// ---------------------------------------------------------------------------
// registry.c: the worlds of a server
// ---------------------------------------------------------------------------

/// Fills a new world w (idle, nothing in it yet) from template t: its boxes,
/// then its commands through app__apply() as the server's (admin). Returns
/// 0, or -1 with why naming the template and what did not fit (the world
/// is then half made: the caller destroys it).
struct app_template;
int app__world_from_template(app_server* app, app_world* w, const struct app_template* t, char* why,
                             size_t cap);

/// The sim_world_def every world of the server is created with.
sim_world_def app__world_def(const app_server* app, uint32_t tick_hz);

/// Creates a world with `limits` (RDP_LIMIT_COUNT values, each
/// within the server's ceiling; see app__world_limits()) and rigid-body
/// solver `solver` (usually cfg.world_solver, or what create_world asked
/// for). Returns 0 and *out, or an rdp error code (RDP_E_TOO_LARGE when the
/// registry is full, RDP_E_INTERNAL on OOM or a solver sim_world_create()
/// refuses).
rdp_code app__world_create(app_server* app, const char* name, uint32_t tick_hz,
                           const uint32_t* limits, sim_solver solver, app_world** out);

struct app_state;

/// Makes a world from a state file's contents (persist.c): its id, name,
/// tick rate, limits and solver, its simulator world (taken: st->sim is
/// NULL after, whatever the result), owners, queued commands and journal
/// sequence. Errors as app__world_create().
rdp_code app__world_adopt(app_server* app, struct app_state* st, app_world** out);

/// The simulator's solver for a wire solver (config.c): true and *out for
/// RDP_SOLVER_XPBD and RDP_SOLVER_SOFT_STEP; false, *out untouched, for
/// RDP_SOLVER_DEFAULT (the caller's default applies) and anything else.
bool app__solver_from_wire(rdp_solver wire, sim_solver* out);

/// The wire name of a simulator solver ("xpbd", "soft_step"; static
/// storage), or NULL for a value that is no sim_solver (config.c).
const char* app__solver_name(sim_solver solver);

/// Sets the max_* fields of *def that the limits govern (config.c):
/// limits[RDP_LIMIT_BODIES] becomes max_bodies, and so on.
void app__limits_apply(sim_world_def* def, const uint32_t limits[RDP_LIMIT_COUNT]);

/// The max_* fields of *def that the limits govern, as limits (config.c):
/// app__limits_apply() undone.
void app__limits_of(const sim_world_def* def, uint32_t limits[RDP_LIMIT_COUNT]);

/// The limits of a world create_world asks for (budget.c): those `asked`
/// gives, the server's defaults (cfg.world_limits) for the rest, into out.
/// False when one is above the server's ceiling (cfg.world_ceiling), with
/// msg (cap bytes; 160 is ample) naming it and both numbers.
bool app__world_limits(const app_server* app, const rdp_limits* asked,
                       uint32_t out[RDP_LIMIT_COUNT], char* msg, size_t cap);

/// Destroys a world: pending commands get not_found, subscribers get a
/// world_destroyed event and lose the subscription, and its id names no
/// world from now on. Its memory is freed now, or, when a worker is
/// stepping it, when the pool hands it back (scheduler.c).
void app__world_destroy(app_server* app, app_world* w);

/// Frees a world that is in no registry slot and on no worker. NULL is
/// allowed.
void app__world_free(app_world* w);

/// The world as the loop thread may read it outside a tick boundary: read
/// afresh from the simulator when the world is idle; while a worker steps
/// it, as it was when it was handed over (its tick before the step). The
/// pointer is w's and valid until the next call. Loop thread only.
const app_world_view* app__world_view(app_world* w);

/// Reads w's view from the simulator. Loop thread, w idle.
void app__world_look(app_world* w);

/// Finds a world by id, or NULL.
app_world* app__world_find(const app_server* app, uint64_t id);

/// Fills world info for lists (welcome, list_worlds). `out` has room for
/// app->world_count entries.
uint32_t app__world_infos(const app_server* app, rdp_world_info* out);

/// A float as the wire shows it: rounded to 1e-6 so it prints as meant.
double app__wire(float f);

/// Reads a world's parameters in wire form (from its view).
rdp_params app__params_of(app_world* w);

/// Frees the describe body kept for `entity` (despawned or removed), if any.
void app__topo_forget(app_world* w, uint64_t entity);

/// Forgets a client everywhere: subscriptions and queued commands; the
/// particles it was dragging are released at the next tick (a queued
/// release, so the world's command order stays the log of what happened).
void app__client_gone(app_server* app, app_client* c);

// ---------------------------------------------------------------------------
// scheduler.c: the clock and the inboxes
// ---------------------------------------------------------------------------

/// Starts the pool (cfg.workers threads) and the clock (loop thread).
/// Returns 0 or a negative libuv error from app__pool_init(); on error
/// nothing is left open.
int app__sched_start(app_server* app);

/// Stops the clock and the pool (loop thread): waits for the steps being
/// run (at most one per worker), frees the worlds destroyed while they
/// stepped, leaves every other world idle, and calls closed(app) once its
/// handles are closed. No tick begins or ends after this call. Once only,
/// after app__sched_start() succeeded.
void app__sched_close(app_server* app, void (*closed)(app_server* app));

/// Makes w's steps a job of the pool and, once the clock runs, sets it for
/// w's first tick (registry.c, at creation).
void app__sched_world_added(app_server* app, app_world* w);

/// Pauses the clock (tests, benchmarks): no tick begins by the clock,
/// only by app__sched_tick_now(); ticks in flight still end. Unpausing
/// starts every world's clock afresh (the time paused is not owed).
void app__sched_pause(app_server* app, bool paused);

/// Begins a tick of w now, whatever its clock says: its inbox applies and
/// it goes to the pool; the rest follows when the pool hands it back.
/// False (nothing done) when w is busy or the scheduler is closing.
bool app__sched_tick_now(app_server* app, app_world* w);

/// Worlds handed to the pool and not yet back.
uint32_t app__sched_in_flight(const app_server* app);

/// Queues a world command and counts it in c->pending (c may be NULL: a
/// command on behalf of a client that has gone). Returns RDP_OK or
/// RDP_E_RATE_LIMITED when the inbox is full.
rdp_code app__world_enqueue(app_world* w, app_client* c, const rdp_command* cmd);

/// Answers every command waiting in w's inbox not_found (the world is
/// being destroyed).
void app__inbox_cancel(app_server* app, app_world* w);

/// Marks c's commands in w's inbox as a gone client's: they still apply,
/// unanswered.
void app__inbox_forget_client(app_world* w, const app_client* c);

/// Sends the replies w holds (commands that applied in a boundary whose
/// journal write failed), when they are durable or the world is destroyed.
void app__send_held(app_server* app, app_world* w);

// ---------------------------------------------------------------------------
// broadcast.c: subscriptions, events and snapshots
// ---------------------------------------------------------------------------

/// Adds or updates a subscription; returns the subscription.
app_sub* app__subscribe(app_world* w, app_client* c, uint32_t format, uint32_t rate_hz,
                        rdp_code* err);

/// Sets a subscription's byte budget (0: none): a binary one with a budget
/// gets partial frames from then on, starting from a reset of the client's
/// view. Returns false on out of memory (then it has none).
bool app__sub_set_budget(app_sub* sub, uint32_t bytes_per_s);

/// Removes a client's subscription to w; false if there was none.
bool app__unsubscribe(app_world* w, app_client* c);

/// The client's subscription to world `world`, or NULL.
app_sub* app__sub_of(app_client* c, uint64_t world);

/// Records that a binary subscriber holds the snapshot of `tick` (its new
/// baseline). A tick the world holds no binary snapshot of (not reached,
/// never sent, or out of the 32 kept), or older than the one it
/// acknowledged already, changes nothing.
void app__ack(const app_world* w, app_sub* sub, uint64_t tick);

/// Handles a binary frame from a client: an ack (PROTOCOL.md §5.2), or an
/// error reply for anything else.
void app__binary_message(app_server* app, app_client* c, const uint8_t* data, size_t len);

/// Sends a text event to every subscriber of w.
void app__broadcast_text(app_world* w, const char* text, size_t len);

/// Tells every subscriber of w that it was destroyed (world_destroyed) and
/// ends their subscriptions.
void app__broadcast_world_gone(app_world* w);

/// Drains the world's simulator events (an entity removed as unstable, a
/// character changing state or coming to rest) and sends each to every
/// subscriber, before the snapshot that shows it.
void app__broadcast_events(app_world* w);

/// Sends the snapshot of the world as it is to every subscriber that is
/// due after `ticks` ticks (1, or a batch of catch-up ticks that ends at
/// the first tick anyone is due: app__broadcast_ticks_until_due()), each
/// encoding made once and shared.
void app__broadcast_snapshots(app_world* w, uint32_t ticks);

/// How many ticks, 1 to `max`, w may step before a subscriber is due a
/// snapshot: the count up to and including the first tick after which one
/// is, or `max` when none is before then (max >= 1).
uint32_t app__broadcast_ticks_until_due(const app_world* w, uint32_t max);

/// Drops this tick's shared snapshot encodings.
void app__snapshot_cache_clear(app_world* w);

// ---------------------------------------------------------------------------
// interest.c: interest management, one binary subscription with a budget
// ---------------------------------------------------------------------------

typedef struct app_interest app_interest;

/// Partial frames' entity encodings of one tick, shared by a world's
/// budgeted subscriptions (made on first use).
typedef struct app_enc_cache app_enc_cache;

/// Frees a world's encoding cache (NULL is allowed).
void app__enc_cache_free(app_enc_cache* c);

/// A subscription's interest state (bytes_per_s > 0), NULL on OOM; its first
/// frame resets the client's view. Free with app__interest_free().
app_interest* app__interest_new(uint32_t bytes_per_s);

/// Frees it (NULL is allowed).
void app__interest_free(app_interest* it);

/// Forgets what the client has (a resync, a rollback): the next frame
/// resets its view and everything is sent afresh.
void app__interest_reset(app_interest* it);

/// The client acknowledged the frame of `tick`: each entity it carried has
/// it as its baseline, and the removals it carried are done.
void app__interest_ack(app_interest* it, uint64_t tick);

/// Makes the subscription's partial frame of q (this tick's quantized
/// snapshot, kept in w's ring) into *buf (grown as needed, *cap its size):
/// *len bytes, 0 when nothing is due or the budget is spent. Returns 0, or
/// -1 on out of memory (nothing sent is recorded).
int app__interest_frame(app_world* w, app_sub* sub, app_interest* it, const rdp_qsnap* q,
                        uint8_t** buf, size_t* cap, size_t* len);

/// Takes `bytes` sent at `tick` on the subscription's stream besides its
/// frames (the metrics event) from its budget.
void app__interest_charge(app_interest* it, uint64_t tick, size_t bytes);


/// The wire kind of a simulator entity kind.
rdp_kind app__kind_of(sim_entity_kind k);

/// Fills the rigid-body members of *e (a character's bones or a ball) with
/// copies in the world's body scratch starting at body index `first`.
/// Returns the bodies used, 0 if the scratch is full.
uint32_t app__rigid_state(app_world* w, sim_entity_id id, sim_entity_kind kind, uint32_t first,
                          rdp_entity_state* e);

// ---------------------------------------------------------------------------
// dispatch.c, budget.c, bucket.c, auth.c, server.c
// ---------------------------------------------------------------------------

/// Applies one queued command from client c (NULL when it has gone) to its
/// world at a tick boundary and returns the reply text (dispatch.c), or NULL
/// when there is nobody to answer and nothing to do. *len gets its length.
/// `event` may receive a broadcast to send to every subscriber (e.g. a
/// params event), else NULL.
char* app__apply(app_server* app, app_world* w, app_client* c, rdp_command* cmd, size_t* len,
                 char** event, size_t* event_len);

/// Spawns the entity a spawn_rope/spawn_cloth/spawn_ragdoll command
/// describes into sw (dispatch.c). Returns a SIM_E_* code and *out.
int app__spawn(sim_world* sw, const rdp_command* cmd, sim_entity_id* out);

/// Solver projections per second world w costs as it is: its view's
/// solver work × tick_hz (budget.c); a world on a worker counts as it was
/// handed over (its step can only remove entities, never add work).
uint64_t app__world_rate(app_world* w);

/// The sum of app__world_rate() over every world of the server.
uint64_t app__server_rate(const app_server* app);

/// True when world w may need `work` solver projections per tick (as
/// sim.h counts them) under parameters p: within its own budget
/// (def.max_solver_work) and, counting every other world as it is, within
/// the server's (cfg.max_total_solver_work per 1/60 s, each world weighted
/// by tick_hz / 60). Otherwise false, and msg (cap bytes; 256 is ample)
/// names the limit with the numbers.
bool app__admit_work(const app_server* app, app_world* w, uint64_t work, const sim_params* p,
                     char* msg, size_t cap);

/// Checks a spawn command against world w's limits (particles,
/// constraints, rigid bodies and joints, entities) and both solver
/// budgets, from what the entity would add (app__spawn_counts(), no world
/// touched). Returns SIM_OK; SIM_E_CAPACITY with msg naming the limit; or
/// another SIM_E_* code from the counts (SIM_E_UNKNOWN_NAME: no such
/// skeleton or clip), msg untouched. Changes nothing.
int app__admit_spawn(app_server* app, app_world* w, const rdp_command* cmd, char* msg, size_t cap);

/// What the entity a spawn command describes would add to a world whose
/// library is lib (dispatch.c): sim_rope_def_counts() and the others on the
/// def app__spawn() would spawn; attach_cloth's depends on the wearer, so
/// it needs the world sw (SIM_E_INVALID_ARG when sw is NULL). Returns a
/// SIM_E_* code and *out.
int app__spawn_counts(const sim_world* sw, const sim_library* lib, const rdp_command* cmd,
                      sim_counts* out);

/// Fills a bucket of `rate` tokens per second and `burst` at most (bucket.c),
/// as of now_ns.
void app__bucket_init(app_bucket* b, double rate, double burst, uint64_t now_ns);

/// Refills b for the time since it was last used and takes `bytes` if it is
/// not in debt. Returns true when taken; false, with *retry_ms the wait (ms,
/// rounded up) until a take would be allowed, when not. Times are
/// uv_hrtime() nanoseconds; a clock that goes back adds nothing.
bool app__bucket_take(app_bucket* b, uint64_t now_ns, size_t bytes, uint64_t* retry_ms);

/// Handles a command from a client: immediate ones are answered at once,
/// world ones are queued for the next tick (dispatch.c).
void app__dispatch(app_server* app, app_client* c, const rdp_command* cmd);

/// Sends a reply or event text to a client; frees the text.
void app__send(app_client* c, char* text, size_t len);

/// Sends an error reply for cmd.
void app__send_error(app_client* c, rdp_re re, rdp_code code, const char* message);

/// True when t[0..len) is a well-formed token (auth.c).
bool app__token_well_formed(const char* t, size_t len);

/// The entry of a token, compared in constant time, or NULL.
const app_auth_entry* app__auth_lookup(const app_auth* a, const char* token, size_t len);

/// The first entry of a's array (for ownership keys).
const app_auth_entry* app__auth_entries(const app_auth* a);

/// The next item of a comma- or blank-separated token list at *cursor: its
/// start (not NUL-terminated) and *len, and *cursor moved past it; NULL at
/// the list's end.
const char* app__token_list_next(const char** cursor, size_t* len);

/// Adds the tokens of list (blank- or comma-separated) to app->cfg.auth
/// (not NULL) with role, each for the one world named `world`: an
/// allocation's players (agones.c). All or none: returns 0 with *added,
/// or -1 with why (cap bytes; never a token) when one is malformed, is
/// already a token of this server, or the server would hold more than
/// APP_AUTH_MAX_ENTRIES. Connected clients keep their entries.
int app__auth_add_tokens(app_server* app, const char* list, app_role role, const char* world,
                         uint32_t* added, char* why, size_t cap);

/// Admits or refuses an upgrade (net_callbacks.on_upgrade): Origin, token,
/// per-address and anonymous caps; on success makes the session's client
/// with its role. Returns 0 or an HTTP status with *reason.
int app__admit_upgrade(app_server* app, net_session* s, const net_upgrade* req,
                       const char** reason);

/// The least role that may send op.
app_role app__role_needed(rdp_op op);

/// True when client c may send op to the world named world_name (NULL for
/// commands about no world); else false with a message for `forbidden`.
bool app__may(const app_client* c, rdp_op op, const char* world_name, char* msg, size_t cap);

/// Makes the client of session s, links it into the server's list and sets
/// it as the session's data (server.c). NULL when out of memory.
app_client* app__client_new(app_server* app, net_session* s);

// ---------------------------------------------------------------------------
// lag.c: commands judged at the tick a client saw, and raycast
// ---------------------------------------------------------------------------

/// The tick to judge a command that saw tick `seen` at (sim_history_pick()
/// on w's history). SIM_E_OUT_OF_RANGE, msg filled, for a tick the world
/// has not reached.
int app__lag_pick(app_world* w, uint64_t seen, sim_picked_tick* out, char* msg, size_t cap);

/// A wire vector (double) as the simulator's (float).
static inline sim_vec3 app__sim_vec(rdp_vec3 v) {
    return (sim_vec3){(float)v.x, (float)v.y, (float)v.z};
}

/// The opt-in events (rdp_event_bits) any subscription of w asked for
/// (broadcast.c).
uint32_t app__events_wanted(const app_world* w);

/// A kill with a seen_tick (w idle): picks the tick, the bone (the one
/// named, else the one nearest hit_point then) and carries hit_point on it
/// to now; rewrites *cmd into that (bone given, hit_point now, no
/// seen_tick) for app__apply() and the journal. A character spawned after
/// the tick is judged now (clamped). Sim errors, msg filled where it names
/// something.
int app__lag_kill(app_world* w, rdp_command* cmd, sim_picked_tick* pick, char* msg, size_t cap);

/// An apply_impulse with a seen_tick: on a character's bone with a point,
/// the point carried from the bone then to the bone now; rewrites *cmd
/// (no seen_tick). As app__lag_kill().
int app__lag_impulse(app_world* w, rdp_command* cmd, sim_picked_tick* pick, char* msg, size_t cap);

/// The reply to a raycast (w idle), an error reply for a bad ray or a
/// future seen_tick; `reply_tick` is its "tick". A string for rdp_free().
char* app__lag_raycast(app_world* w, const rdp_command* cmd, uint64_t reply_tick, size_t* len);
