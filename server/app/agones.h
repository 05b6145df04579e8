/*
 * agones.h: ragdolld as an Agones game server (deploy/README.md).
 *
 * With --agones, or when Agones has set AGONES_SDK_HTTP_PORT, the server
 * talks to the SDK sidecar's REST API (http://127.0.0.1:PORT, the
 * grpc-gateway of agones.dev/sdk: POST /ready, /health, /shutdown;
 * GET /watch/gameserver; PUT /metadata/annotation; PATCH
 * /v1beta1/counters/{name}) with libcurl's multi interface driven by the
 * libuv loop: no call blocks the loop or a tick, each has a timeout, and
 * the ones that must land (Ready, the watch) are retried with backoff.
 *
 *   after listening, worlds loaded   Ready (retried until the sidecar answers)
 *   every --agones-health seconds    Health, only while every world ticks on
 *                                    time (each stepped at least half its
 *                                    rate since the last look, none is stuck
 *                                    in one step for 1 s): a
 *                                    stuck loop or a world far behind stops
 *                                    the pings, and Agones replaces the pod
 *   GameServer becomes Allocated     the match's world is made from the
 *                                    allocation's labels and annotations
 *                                    (ragdolld.dev/world-name, /match-id,
 *                                    /tick-hz, /solver, /template,
 *                                    /player-tokens: tokens that may play
 *                                    in that world only); its id is
 *                                    annotated back as agones.dev/sdk-world
 *   sessions open or close           the Counter "players" set to the
 *                                    sessions with a token (with an auth
 *                                    file; else every session), at most
 *                                    its capacity; refusals backed off
 *   no such session for
 *   --agones-empty-timeout s
 *   after allocation                 Shutdown
 *   SIGINT/SIGTERM                   after the clients are closed and the
 *                                    worlds saved: Shutdown (at most 2 s)
 *
 * Loop thread only.
 */
#pragma once

#include "app_internal.h"

/// The sidecar's port when AGONES_SDK_HTTP_PORT is not set.
#define APP_AGONES_DEFAULT_PORT 9358

/// The Counter (GameServer spec.counters) the connected sessions go to.
#define APP_AGONES_PLAYERS_COUNTER "players"

/// Most player tokens one allocation may carry (ragdolld.dev/player-tokens).
#define APP_AGONES_MAX_PLAYER_TOKENS 128

/// What an allocation asks of the match's world (app__agones_match()).
typedef struct app_agones_match {
    char name[RDP_MAX_NAME + 1]; ///< ragdolld.dev/world-name; default "match".
    uint32_t tick_hz;            ///< ragdolld.dev/tick-hz, 1-240; default 60.
    sim_solver solver;           ///< ragdolld.dev/solver; default the server's.
    bool solver_given;
    /// ragdolld.dev/template: the world template it is made from; "" none.
    char template_name[RDP_MAX_TEMPLATE_NAME + 1];
    /// ragdolld.dev/match-id: the match, for the logs; "" none. Also the
    /// world's name when ragdolld.dev/world-name is not given.
    char match_id[RDP_MAX_NAME + 1];
    /// ragdolld.dev/player-tokens: the match's players' tokens, separated
    /// by commas or blanks (each as in the auth file: 16-128 characters
    /// of A-Z a-z 0-9 . _ ~ -, at most APP_AGONES_MAX_PLAYER_TOKENS);
    /// each becomes a player token for the match's world only, for the
    /// server's life. Kept here as given once checked; "" none.
    char player_tokens[APP_AGONES_MAX_PLAYER_TOKENS * (APP_TOKEN_MAX + 1)];
    uint32_t player_token_count;
} app_agones_match;

/// The state of a GameServer (status.state: "Ready", "Allocated", ...)
/// as the watch gives it ({"result": GameServer}, or the GameServer
/// itself), in state (cap bytes); "" when it has none. Returns false when
/// json is not an object.
bool app__agones_state(const char* json, size_t len, char* state, size_t cap);

/// The capacity of the GameServer's Counter `counter` (status.counters,
/// the int64 as a string or a number), or -1 when it has none.
int64_t app__agones_capacity(const char* json, size_t len, const char* counter);

/// The world an allocated GameServer (JSON, as above) asks for: each
/// setting from object_meta.annotations, else object_meta.labels, else its
/// default. Returns 0, or -1 with why (cap bytes) naming the key and the
/// value that is wrong (the world is then not made).
int app__agones_match(const char* json, size_t len, sim_solver default_solver,
                      app_agones_match* out, char* why, size_t cap);

/// Starts talking to the sidecar when cfg.agones_port is set: Ready is
/// sent now (the server listens and its worlds are loaded). Returns 0, or
/// a libuv/libcurl failure (UV_ENOMEM): the server then runs without it
/// (logged).
int app__agones_start(app_server* app);

/// Shutdown: tells the sidecar (Shutdown, waited for at most 2 s), lets go
/// of libcurl and the handles, then calls done(app). Without Agones, done
/// is called at once.
void app__agones_close(app_server* app, void (*done)(app_server* app));
