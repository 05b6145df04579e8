/*
 * app.h: the ragdolld application (target rd_app): configuration, the world
 * registry and tick scheduler, command dispatch and snapshot fan-out. It
 * wires server/sim (physics), protocol/ (the wire format) and server/net
 * (sockets) together; main.c is a thin shell around it.
 *
 * Threading: every function here is for the thread that runs the
 * uv_loop_t the server was given (the loop thread), which does all I/O.
 * Worlds step on a pool of worker threads of the server's own
 * (app_config.workers; the thread model is in server/app/scheduler.c), so
 * a server uses as many cores as it has busy worlds; each world steps on
 * one worker at a time.
 *
 * All state hangs off one app_server; there are no globals, so tests may run
 * several servers in one process.
 */
#pragma once

#include "assets.h"
#include "rdp.h"
#include "sim.h"

#include <uv.h>

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/// The server's version string.
#define APP_VERSION "0.1.0"

/// What a connection may do (PROTOCOL.md §6). Ordered: each role may do
/// everything the ones before it may.
typedef enum app_role {
    APP_ROLE_NONE = 0, ///< Nothing: used for "no anonymous connections".
    APP_ROLE_VIEWER,   ///< list_worlds, describe, subscribe, unsubscribe, ack, resync.
    APP_ROLE_PLAYER,   ///< + spawns, impulses, kill, get-up, drag, drives, despawn of its own.
    APP_ROLE_ADMIN,    ///< + create/destroy worlds, set_params, despawn of anything.
} app_role;

/// The role's name: "none", "viewer", "player", "admin".
const char* app_role_name(app_role r);

/// Parses a role name (as app_role_name() gives it). Returns 0, or -1 for
/// any other string.
int app_role_parse(const char* s, app_role* out);

/// Tokens and what each may do, loaded from an auth file. Opaque.
typedef struct app_auth app_auth;

/// Loads an auth file: one token per line, `TOKEN ROLE [WORLD ...]`, `#`
/// starts a comment. A token is 16–128 characters of A–Z a–z 0–9 . _ ~ -;
/// ROLE is viewer, player or admin; WORLDs, if any, are the names of the
/// only worlds the token may touch. Returns 0 and *out (free with
/// app_auth_destroy()), or -1 with a message in err (cap bytes) naming the
/// file and line: never the token itself.
int app_auth_load(const char* path, app_auth** out, char* err, size_t cap);

/// Frees what app_auth_load() made. NULL is allowed.
void app_auth_destroy(app_auth* a);

/// Tokens in the file (0 for NULL).
uint32_t app_auth_count(const app_auth* a);

/// --workers at most.
#define APP_MAX_WORKERS 256

/// --allow-origin entries at most.
#define APP_MAX_ALLOW_ORIGINS 16

/// max_sessions_per_address: decided by app_config_parse().
#define APP_PER_ADDRESS_AUTO UINT32_MAX

/// How much the server logs (to stderr, one line per event): each level
/// includes the ones before it.
typedef enum app_log_level {
    APP_LOG_ERROR = 0, ///< Server errors: out of memory, write errors.
    APP_LOG_WARN,      ///< Refused upgrades, rate limits, sessions ended by an error.
    APP_LOG_INFO,      ///< Sessions opened and closed, worlds created and destroyed.
    APP_LOG_DEBUG,     ///< Everything.
} app_log_level;

/// The shape of a log line.
typedef enum app_log_format {
    APP_LOG_TEXT = 0, ///< logfmt: ts=... level=info event=session_closed key=value ...
    APP_LOG_JSON,     ///< One JSON object per line, the same keys.
} app_log_format;

/// When a world's journal is fsync'd (--journal-fsync; Redis's
/// appendfsync): its records are written to the file at every tick
/// boundary either way, so a crash of the process alone loses nothing; the
/// policy is what a crash of the machine may lose.
typedef enum app_fsync {
    APP_FSYNC_EVERYSEC = 0, ///< Once a second, off the loop thread: at most ~1 s lost.
    APP_FSYNC_ALWAYS,       ///< Before the replies of every tick's commands go out.
    APP_FSYNC_NEVER,        ///< When the kernel writes it back.
} app_fsync;

/// Settings of a server. Start from app_config_default().
typedef struct app_config {
    const char* host;     ///< Address to bind. Default "127.0.0.1".
    int port;             ///< TCP port; 0 lets the kernel choose. Default 8080.
    const char* web_root; ///< Directory of the viewer's files. Default: the build's.
    /// Directory of skeleton and clip files (assets/README.md), which main()
    /// loads into `library`. Default: the source tree's assets/.
    const char* assets_dir;
    /// Skeletons and clips every world may use; NULL allows no characters.
    /// Not owned: it must outlive the server.
    const sim_library* library;
    /// Directory of world templates (--templates; templates.h), which
    /// main() loads into `templates`. Default: the source tree's templates/.
    const char* templates_dir;
    bool templates_required; ///< --templates was given: a missing directory is an error.
    /// The templates create_world may name; NULL: none. Not owned.
    const struct app_templates* templates;
    /// --world-template NAME: at start, when no world was loaded, the world
    /// made is NAME from this template instead of the demo. NULL: the demo.
    const char* world_template;
    bool demo;           ///< Create the built-in demo world. Default true.
    uint32_t max_worlds; ///< Worlds at most. Default 16.
    /// WebSocket sessions at most; a further upgrade gets HTTP 503. Default
    /// 1024; 0 means no limit.
    uint32_t max_sessions;
    /// Threads that step worlds (--workers, or $RAGDOLLD_WORKERS), 0 to
    /// APP_MAX_WORKERS. Default: the CPUs this process may run on
    /// (uv_available_parallelism()). 0 steps every world on the loop
    /// thread, between its I/O, as servers before the pool did.
    uint32_t workers;
    /// Ticks one world may run back to back when it is behind (catch-up);
    /// beyond them the backlog is dropped and counted as overruns. Default 4.
    uint32_t max_catchup;
    /// How far back, in ms, each world keeps its rigid bodies' poses for
    /// commands with a seen_tick (lag compensation, --lag-history): 0 to
    /// 1000. Default 300. 0 keeps none (such hits are judged against now).
    uint32_t lag_history_ms;
    uint32_t inbox_capacity; ///< Commands queued per world at most. Default 1024.
    /// Solver projections per tick a world may need (sim_world_def
    /// max_solver_work). Default 10^6.
    uint64_t max_solver_work;
    /// Limits of every world (indexed by rdp_limit: entities, particles,
    /// constraints, rigid bodies, rigid joints, contacts per substep) that
    /// create_world does not set, and of the demo world (--world-limits,
    /// $RAGDOLLD_WORLD_LIMITS). Defaults: 256, 32768, 262144, 2048, 2048,
    /// 49152 (sim_world_def_default()'s). Each at most world_ceiling's.
    uint32_t world_limits[RDP_LIMIT_COUNT];
    /// The most create_world may ask for (--world-ceiling,
    /// $RAGDOLLD_WORLD_CEILING); beyond it: too_large. It bounds the memory
    /// one world can ever take (sim_world_def_max_bytes()). Defaults: 4096,
    /// 1048576, 4194304, 16384, 16384, 393216.
    uint32_t world_ceiling[RDP_LIMIT_COUNT];
    /// The rigid-body solver of the demo world and of every world whose
    /// create_world gives no "solver" (--world-solver,
    /// $RAGDOLLD_WORLD_SOLVER). Default SIM_SOLVER_SOFT_STEP.
    sim_solver world_solver;
    /// Solver projections all worlds together may need per 1/60 s: the sum
    /// over worlds of work per tick × tick_hz / 60 (a 120 Hz world counts
    /// double). A spawn or set_params beyond it gets too_large. Default
    /// 1.5 × 10^6, about one core of the build machine (README).
    uint64_t max_total_solver_work;
    /// Path of the auth file (--auth-file, or $RAGDOLLD_AUTH_FILE), which
    /// main() loads into `auth`; NULL for none.
    const char* auth_file;
    /// Tokens and roles; NULL: no access control, every connection is an
    /// admin (fine on loopback). Not owned: it must outlive the server,
    /// which adds to it the player tokens of an Agones allocation.
    app_auth* auth;
    /// Allow a non-loopback address without an auth file (--insecure).
    bool insecure;
    /// Origins a browser may connect from (--allow-origin, "*" for any);
    /// none: an Origin must name the Host it connected to. Point into argv.
    const char* allow_origins[APP_MAX_ALLOW_ORIGINS];
    uint32_t allow_origin_count;
    /// Role of a connection without a token when there is an auth file
    /// (--anonymous). Default APP_ROLE_NONE: such upgrades get 401.
    app_role anonymous_role;
    /// WebSocket sessions from one address at most, counted apart for
    /// connections with and without a token (--max-sessions-per-address);
    /// a further upgrade gets 429; connections from one address still in
    /// HTTP state are held to the same number. 0 means no limit.
    /// APP_PER_ADDRESS_AUTO (the default) becomes 16 when app_config_parse()
    /// finds an auth file or a non-loopback host, else 0.
    uint32_t max_sessions_per_address;
    /// Commands a connection may send per second, sustained (--cmd-rate)
    /// and at once (--cmd-burst); beyond them it gets rate_limited.
    /// Defaults 200 and 400.
    double cmd_rate;
    double cmd_burst;
    /// Directory of the worlds' state files and journals (--state-dir,
    /// $RAGDOLLD_STATE_DIR; docs/STATE.md); NULL: worlds live in memory
    /// only. At start every world saved there is loaded (the demo world is
    /// made only when none is). Must exist and be writable.
    const char* state_dir;
    /// Seconds between a world's saves (--autosave; 0: only on save_world
    /// and at shutdown). Default 10. Needs state_dir.
    uint32_t autosave_s;
    app_fsync journal_fsync; ///< Default APP_FSYNC_EVERYSEC.
    /// --replay STATE: replay offline (app_replay()) instead of serving.
    const char* replay_state;
    /// --journal FILE: the journal to replay; default the state file's
    /// sibling (world-ID.state → world-ID.journal) when it exists.
    const char* replay_journal;
    uint64_t replay_until; ///< --until TICK; UINT64_MAX (default): the journal's end.
    bool print_hash;       ///< --print-hash: every tick's "TICK HASH" on stdout.
    /// The Agones SDK sidecar's REST port (--agones: $AGONES_SDK_HTTP_PORT,
    /// else 9358; without the flag, on when Agones set that variable); 0:
    /// not an Agones game server (deploy/README.md).
    int agones_port;
    /// Seconds between Health pings (--agones-health), sent only while
    /// every world ticks on time. Default 2 (Agones' default period is 5 s).
    double agones_health_s;
    /// Seconds with no session after the allocation before the server asks
    /// Agones to shut it down (--agones-empty-timeout); 0: never. Default 60.
    uint32_t agones_empty_s;
    app_log_level log_level;   ///< Default APP_LOG_INFO.
    app_log_format log_format; ///< Default APP_LOG_TEXT.
    /// Where log lines go; NULL means stderr. Not owned. (stdout is kept
    /// for the "listening on" line.)
    FILE* log_stream;
} app_config;

/// The defaults listed on app_config.
app_config app_config_default(void);

/// Parses the command line into *cfg (which should hold the defaults); an
/// auth file may also come from $RAGDOLLD_AUTH_FILE, the worker count from
/// $RAGDOLLD_WORKERS (--workers wins). Refuses a host that
/// is not a loopback address unless there is an auth file or --insecure
/// (Redis's protected mode). Returns 0 to run, 1 when the program should
/// exit successfully (--help, --version; text went to out), or -1 on a
/// usage error (message went to err). The strings in *cfg point into argv
/// or the environment.
int app_config_parse(int argc, char** argv, app_config* cfg, FILE* out, FILE* err);

/// ragdolld --replay: loads the state file at state_path (skeletons from
/// cfg->library), applies the journal at journal_path (NULL: none) and
/// steps on to tick `until` (UINT64_MAX: the journal's last record),
/// writing "TICK HASH" (sim_world_hash(), hex) for the state's tick and
/// every tick after it to out when print_hash, and a summary line to err.
/// No network, no file written. Returns the process's exit status: 0, or 1
/// with the reason on err (a file refused, or a journal that diverges).
int app_replay(const app_config* cfg, const char* state_path, const char* journal_path,
               uint64_t until, bool print_hash, FILE* out, FILE* err);

/// A running server. Opaque.
typedef struct app_server app_server;

/// Starts the worker threads, listens on `loop` and, if cfg->demo,
/// creates the demo world. Returns 0 and *out, or a negative libuv error
/// (e.g. UV_EADDRINUSE, or what starting a thread said), UV_ENOMEM,
/// UV_ENOSPC when the demo world does not fit in cfg->world_limits or
/// cfg->max_solver_work (an error line is logged), or UV_EINVAL, with
/// nothing started, when cfg->world_solver is no sim_solver (an error line
/// is logged; app_config_parse() never gives one). On an error after its
/// handles were made, they close on the loop: run it before
/// uv_loop_close(). Strings in cfg are copied.
int app_server_start(uv_loop_t* loop, const app_config* cfg, app_server** out);

/// The TCP port the server listens on.
int app_server_port(const app_server* app);

/// Begins a graceful shutdown: stop ticking, close every client with 1001
/// (going away), wait for the steps the workers are running (at most one
/// per worker), stop the workers, free the worlds, and free the server;
/// then done(arg). The loop ends once the server's handles are closed.
void app_server_shutdown(app_server* app, void (*done)(void* arg), void* arg);

#ifdef __cplusplus
}
#endif
