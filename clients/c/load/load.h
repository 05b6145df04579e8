/*
 * load.h: the pieces of ragdoll-load shared by its files.
 *
 *   main.c      options, the run (clients on one loop), progress, the report
 *   scenario.c  the scenario file and command templates
 *   stats.c     the latency histogram
 *
 * Everything runs on one libuv loop in one thread; the state hangs off
 * one load_run, passed explicitly.
 */
#pragma once

#include "rdc.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/// Hard caps: a run is bounded in size and time whatever the file says.
#define LOAD_MAX_CLIENTS    5000   ///< Clients in one run.
#define LOAD_MAX_DURATION_S 3600.0 ///< Seconds of load in one run.
#define LOAD_MAX_CMD_RATE   100.0  ///< Commands per client per second.
#define LOAD_MAX_MIX        32     ///< Entries in a command mix.

// ---------------------------------------------------------------------------
// Random numbers (xorshift64*, Vigna 2016): per run, no global state.
// ---------------------------------------------------------------------------

/// The next 64 random bits of *state (which must not be 0).
uint64_t load_rand(uint64_t* state);

/// Uniform in [0, 1).
double load_rand01(uint64_t* state);

// ---------------------------------------------------------------------------
// Scenario (scenario.c)
// ---------------------------------------------------------------------------

/// One subscription every client makes.
typedef struct load_sub {
    uint64_t world;
    rdc_format format;
    uint32_t rate_hz;
    uint32_t bytes_per_s; ///< Binary: a byte budget (interest management), 0: none.
    bool has_focus;       ///< Sent set_focus once subscribed.
    double focus[3];      ///< m.
    double radius;        ///< set_focus's radius, m.
} load_sub;

/// One entry of the command mix: a template, drawn with probability
/// weight / (sum of weights).
typedef struct load_mix {
    double weight;
    cJSON* command; ///< The template (owned): placeholders are resolved per send.
    char op[32];    ///< Its "op".
} load_mix;

/// A parsed scenario (clients/c/README.md describes the file).
typedef struct load_scenario {
    char url[512];
    /// Access token every client sends (rdc_config.token), "" for none:
    /// "token" of the file, overridden by --token, else $RAGDOLL_TOKEN.
    char token[RDC_TOKEN_MAX + 1];
    uint32_t clients;
    double ramp_per_s; ///< Clients started per second; 0: all at once.
    double duration_s;
    load_sub subs[RDC_MAX_SUBSCRIPTIONS];
    uint32_t sub_count;
    double cmd_rate_hz; ///< Commands per client per second (0: none).
    load_mix mix[LOAD_MAX_MIX];
    uint32_t mix_count;
    double weight_sum;
    bool reconnect;
    bool cleanup; ///< Despawn what clients spawned, at the end.
    /// Decode (and acknowledge) binary snapshots (true). With false they are
    /// only counted: no decoding, no acks, so the server keeps sending full
    /// frames; commands that aim at "$ragdoll" and the like find nothing.
    bool decode;
    uint64_t seed;
} load_scenario;

/// Reads and checks a scenario file. Returns 0, or -1 after writing why
/// into err (err_cap bytes).
int load_scenario_read(const char* path, load_scenario* out, char* err, size_t err_cap);

/// Frees the templates.
void load_scenario_free(load_scenario* sc);

/// Checks the caps (after command-line overrides). Returns 0 or -1 with err.
int load_scenario_check(const load_scenario* sc, char* err, size_t err_cap);

/// What placeholders resolve against: the entities of a world as last seen,
/// and those this client spawned.
typedef struct load_view {
    /// Picks a random entity of `kind` (0: any) in world, or 0 when there is
    /// none. kind is an rdc_kind.
    uint64_t (*pick)(void* ctx, uint64_t world, int kind);
    /// Picks (and, when take is true, forgets) one of the client's own
    /// spawned entities in world, or 0.
    uint64_t (*pick_spawned)(void* ctx, uint64_t world, bool take);
    void* ctx;
    uint64_t* rng;
} load_view;

/// Builds a command from a template: copies it, replacing placeholders
/// ("$ragdoll", "$character", "$rope", "$cloth", "$ball", "$any",
/// "$spawned", {"$uniform": [lo, hi]}, {"$int": [lo, hi]}, {"$choice":
/// [...]}). Returns the command (the caller deletes it), or NULL when a
/// placeholder cannot be resolved yet (no such entity seen).
cJSON* load_command_build(const load_mix* m, const load_view* v);

// ---------------------------------------------------------------------------
// Latency histogram (stats.c)
// ---------------------------------------------------------------------------

/// Buckets of load_hist: 64 exact ones, then 32 per power of two up to 2^40 µs.
#define LOAD_HIST_BUCKETS 1280

/// Latencies in microseconds: exact below 64 µs, then 32 buckets per power
/// of two (about 3 % wide); exact count, sum and max.
typedef struct load_hist {
    uint64_t buckets[LOAD_HIST_BUCKETS];
    uint64_t count;
    double sum_us;
    uint64_t max_us;
} load_hist;

/// Adds a sample, microseconds.
void load_hist_add(load_hist* h, uint64_t us);

/// The value below which a fraction q (0..1) of the samples lie, in
/// microseconds (the middle of its bucket; the max for q = 1); 0 when empty.
double load_hist_quantile(const load_hist* h, double q);

// ---------------------------------------------------------------------------
// HTML report (report.c)
// ---------------------------------------------------------------------------

/// The phases of a run (main.c): clients starting, running, draining.
typedef enum load_phase { LOAD_RAMP = 0, LOAD_RUN = 1, LOAD_DRAIN = 2, LOAD_PHASES = 3 } load_phase;

/// One second of a run, as measured at its end.
typedef struct load_sample {
    double t_s;             ///< Seconds since the first client started.
    load_phase phase;       ///< The phase it ended in.
    uint32_t up;            ///< Clients connected.
    double snapshots_per_s; ///< All clients together.
    double commands_per_s;  ///< Replies received per second.
    double p50_ms, p99_ms;  ///< Command round trips replied in that second (0: none).
    double rx_per_s;        ///< Bytes received per second, all clients.
} load_sample;

/// What the report shows of each phase.
typedef struct load_phase_stats {
    double seconds;
    uint64_t snapshots;
    load_hist latency; ///< Round trips of the replies received in it.
} load_phase_stats;

/// Everything the report shows.
typedef struct load_report {
    const char* scenario; ///< Its path.
    const char* url;
    uint32_t clients;
    const load_sample* samples;
    uint32_t sample_count;
    const load_phase_stats* phases; ///< LOAD_PHASES of them.
    const load_hist* latency;       ///< The whole run's round trips.
    uint64_t errors;                ///< Error replies and failures, all codes.
} load_report;

/// Writes a self-contained HTML report to `path`: the numbers of each
/// phase in a table, and plots of the snapshot rate, the command rate and
/// the round trips' p50 and p99 over time (uPlot, read from `uplot_dir`:
/// uPlot.iife.min.js and uPlot.min.css, inlined). Returns 0, or -1 with
/// err filled (a file that cannot be read or written).
int load_report_html(const char* path, const char* uplot_dir, const load_report* rep, char* err,
                     size_t err_cap);
