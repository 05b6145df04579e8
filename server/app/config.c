/*
 * config.c: command-line options of ragdolld (getopt_long from libc), and
 * the world limits they set: what each limit is in a sim_world_def, its
 * default and the ceiling create_world may not pass; and the rigid-body
 * solvers, by their wire names.
 */
#include "app_internal.h"

#include <errno.h>
#include <getopt.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef RD_WEB_ROOT_DEFAULT
#define RD_WEB_ROOT_DEFAULT "web"
#endif
#ifndef RD_TEMPLATES_DEFAULT
#define RD_TEMPLATES_DEFAULT "templates"
#endif
#ifndef RD_ASSETS_DEFAULT
#define RD_ASSETS_DEFAULT "assets"
#endif

// The limits (rdp_limit order): the sim_world_def field each sets, the most
// the simulator takes, and the server's default ceiling. A world full to
// every default ceiling would reserve 243 MB under xpbd, 280 MB under the
// soft step (sim_world_def_max_bytes();
// README); the solver budgets keep what worlds can really hold far below
// that (a humanoid's 16 bodies cost 12,400 of the 10^6 per world).
static const struct {
    size_t offset; ///< Of a uint32_t in sim_world_def.
    uint32_t sim_max;
    uint32_t ceiling;
} limit_table[RDP_LIMIT_COUNT] = {
    [RDP_LIMIT_ENTITIES] = {offsetof(sim_world_def, max_entities), SIM_LIMIT_MAX_ENTITIES, 4096},
    [RDP_LIMIT_PARTICLES] = {offsetof(sim_world_def, max_particles), SIM_LIMIT_MAX_PARTICLES,
                             1u << 20},
    [RDP_LIMIT_CONSTRAINTS] = {offsetof(sim_world_def, max_constraints), SIM_LIMIT_MAX_CONSTRAINTS,
                               1u << 22},
    [RDP_LIMIT_BODIES] = {offsetof(sim_world_def, max_bodies), SIM_LIMIT_MAX_BODIES, 16384},
    [RDP_LIMIT_JOINTS] = {offsetof(sim_world_def, max_joints), SIM_LIMIT_MAX_JOINTS, 16384},
    [RDP_LIMIT_CONTACTS] = {offsetof(sim_world_def, max_contacts), SIM_LIMIT_MAX_CONTACTS,
                            24 * 16384},
};

// The solvers: each wire solver (rdp.h) and the simulator's (sim.h).
static const struct {
    rdp_solver wire;
    sim_solver sim;
} solver_table[] = {
    {RDP_SOLVER_XPBD, SIM_SOLVER_XPBD},
    {RDP_SOLVER_SOFT_STEP, SIM_SOLVER_SOFT_STEP},
};
_Static_assert(sizeof solver_table / sizeof solver_table[0] == RDP_SOLVER_COUNT - 1,
               "every wire solver maps to a simulator solver");

bool app__solver_from_wire(rdp_solver wire, sim_solver* out) {
    for (size_t i = 0; i < sizeof solver_table / sizeof solver_table[0]; ++i) {
        if (solver_table[i].wire == wire) {
            *out = solver_table[i].sim;
            return true;
        }
    }
    return false;
}

const char* app__solver_name(sim_solver solver) {
    for (size_t i = 0; i < sizeof solver_table / sizeof solver_table[0]; ++i) {
        if (solver_table[i].sim == solver) {
            return rdp_solver_name(solver_table[i].wire);
        }
    }
    return NULL;
}

void app__limits_apply(sim_world_def* def, const uint32_t limits[RDP_LIMIT_COUNT]) {
    for (int i = 0; i < RDP_LIMIT_COUNT; ++i) {
        memcpy((char*)def + limit_table[i].offset, &limits[i], sizeof limits[i]);
    }
}

void app__limits_of(const sim_world_def* def, uint32_t limits[RDP_LIMIT_COUNT]) {
    for (int i = 0; i < RDP_LIMIT_COUNT; ++i) {
        memcpy(&limits[i], (const char*)def + limit_table[i].offset, sizeof limits[i]);
    }
}

// An installed ragdolld finds what it serves beside itself: when the
// directory holding the executable has ../share/ragdolld/SUB (what `cmake
// --install` lays out, whatever the prefix), that; else the build's
// default (a ragdolld run from its build tree). Static storage.
static const char* beside_exe(const char* sub, const char* fallback) {
    static char dirs[3][4096 + 64];
    static int used = 0;
    char exe[4096];
    size_t n = sizeof exe;
    if (used >= 3 || uv_exepath(exe, &n) != 0) {
        return fallback;
    }
    char* slash = strrchr(exe, '/');
    if (slash == NULL) {
        return fallback;
    }
    *slash = '\0';
    char* out = dirs[used];
    snprintf(out, sizeof dirs[0], "%s/../share/ragdolld/%s", exe, sub);
    struct stat st;
    if (stat(out, &st) != 0 || !S_ISDIR(st.st_mode)) {
        return fallback;
    }
    used++;
    return out;
}

app_config app_config_default(void) {
    static const char *web, *assets, *templates;
    if (web == NULL) { // looked up once
        web = beside_exe("web", RD_WEB_ROOT_DEFAULT);
        assets = beside_exe("assets", RD_ASSETS_DEFAULT);
        templates = beside_exe("templates", RD_TEMPLATES_DEFAULT);
    }
    app_config c;
    memset(&c, 0, sizeof c);
    c.host = "127.0.0.1";
    c.port = 8080;
    c.web_root = web;
    c.assets_dir = assets;
    c.templates_dir = templates;
    c.demo = true;
    c.max_worlds = 16;
    c.max_sessions = 1024;
    c.workers = uv_available_parallelism();
    if (c.workers > APP_MAX_WORKERS) {
        c.workers = APP_MAX_WORKERS;
    }
    c.max_catchup = 4;
    c.lag_history_ms = 300;
    c.inbox_capacity = 1024;
    c.max_solver_work = 1000000;
    c.max_total_solver_work = 1500000;
    sim_world_def def = sim_world_def_default();
    for (int i = 0; i < RDP_LIMIT_COUNT; ++i) {
        memcpy(&c.world_limits[i], (const char*)&def + limit_table[i].offset, sizeof(uint32_t));
        c.world_ceiling[i] = limit_table[i].ceiling;
    }
    c.world_solver = SIM_SOLVER_SOFT_STEP;
    c.anonymous_role = APP_ROLE_NONE;
    c.max_sessions_per_address = APP_PER_ADDRESS_AUTO;
    c.cmd_rate = 200;
    c.cmd_burst = 400;
    c.state_dir = NULL;
    c.autosave_s = 10;
    c.journal_fsync = APP_FSYNC_EVERYSEC;
    c.replay_until = UINT64_MAX;
    c.agones_port = 0;
    c.agones_health_s = 2.0;
    c.agones_empty_s = 60;
    c.log_level = APP_LOG_INFO;
    c.log_format = APP_LOG_TEXT;
    c.log_stream = NULL; // stderr
    return c;
}

static void usage(FILE* f) {
    fprintf(f,
            "usage: ragdolld [options]\n"
            "       ragdolld --replay STATE [--journal FILE] [--until TICK] [--print-hash]\n"
            "\n"
            "An authoritative physics server for ragdolls and cloth. Clients connect over\n"
            "WebSocket at ws://HOST:PORT/ws; a browser viewer is served at http://HOST:PORT/.\n"
            "\n"
            "options:\n"
            "  --host ADDR       address to bind (default 127.0.0.1; use 0.0.0.0 in a container)\n"
            "  --port N          TCP port, 0 lets the kernel choose (default 8080)\n"
            "  --web-root DIR    directory of the viewer's files (default %s)\n"
            "  --assets DIR      directory of skeleton and clip files (default %s)\n"
            "  --no-demo         start without the built-in demo world\n"
            "  --max-worlds N    worlds at most (default 16)\n"
            "  --max-sessions N  WebSocket clients at most (default 1024); further upgrades\n"
            "                    are answered 503\n"
            "  --max-solver-work N\n"
            "                    constraint projections a world may need per tick (default\n"
            "                    1000000, about 10 ms of one core); larger spawns and\n"
            "                    parameter changes are refused with too_large\n"
            "  --workers N       threads that step worlds, 0 to %d (default: the CPUs this\n"
            "                    process may use, here %u; also $RAGDOLLD_WORKERS); 0 steps\n"
            "                    every world on the event-loop thread\n"
            "  --max-total-solver-work N\n"
            "                    constraint projections all worlds together may need per\n"
            "                    1/60 s, each world weighted by its tick rate (default\n"
            "                    1500000, about one core); beyond it spawns and parameter\n"
            "                    changes are refused with too_large\n"
            "  --world-limits LIST\n"
            "                    limits of a world that create_world does not set, and of\n"
            "                    the demo world: comma-separated NAME=N of entities,\n"
            "                    particles, constraints, bodies, joints, contacts (default\n"
            "                    entities=256,particles=32768,constraints=262144,\n"
            "                    bodies=2048,joints=2048,contacts=49152; also\n"
            "                    $RAGDOLLD_WORLD_LIMITS); memory follows what a world holds\n"
            "  --world-ceiling LIST\n"
            "                    the most create_world may ask for, as NAME=N (default\n"
            "                    entities=4096,particles=1048576,constraints=4194304,\n"
            "                    bodies=16384,joints=16384,contacts=393216; also\n"
            "                    $RAGDOLLD_WORLD_CEILING); beyond it: too_large\n"
            "  --world-solver S  rigid-body solver of the demo world and of a world whose\n"
            "                    create_world gives no solver: soft_step or xpbd (default\n"
            "                    soft_step; also $RAGDOLLD_WORLD_SOLVER)\n"
            "  --lag-history MS  how far back a seen_tick may reach (lag compensation:\n"
            "                    each world keeps its bones' poses that long), 0 to 1000\n"
            "                    ms (default 300; 0: hits are judged against now)\n"
            "\n",
            app_config_default().web_root, app_config_default().assets_dir, APP_MAX_WORKERS,
            app_config_default().workers);
    fprintf(f,
            "durable worlds (docs/STATE.md):\n"
            "  --state-dir DIR   keep every world's state file and journal in DIR (also\n"
            "                    $RAGDOLLD_STATE_DIR): at start the worlds saved there are\n"
            "                    loaded and their journals replayed (the demo world is made\n"
            "                    only when there is none); SIGINT/SIGTERM save every world\n"
            "  --autosave N      save each world every N seconds (default 10; 0: only on\n"
            "                    save_world and at shutdown)\n"
            "  --journal-fsync P when the journal of applied commands is fsync'd: always,\n"
            "                    everysec (default) or never\n"
            "  --replay STATE    do not serve: load the state file STATE, replay its journal\n"
            "                    (--journal FILE; default the world-ID.journal beside it),\n"
            "                    step on to --until TICK (default: the journal's last\n"
            "                    record) and say where it ended; --print-hash prints\n"
            "                    \"TICK HASH\" for every tick on stdout\n"
            "\n"
            "world templates (templates/README.md):\n"
            "  --templates DIR   directory of world templates, NAME.json each (default %s)\n"
            "  --world-template NAME\n"
            "                    at start, when no world was loaded, make world NAME from\n"
            "                    this template instead of the demo world\n"
            "\n"
            "Agones game server (deploy/README.md):\n"
            "  --agones          talk to the Agones SDK sidecar on 127.0.0.1:\n"
            "                    $AGONES_SDK_HTTP_PORT (default 9358): Ready, Health, the\n"
            "                    allocation's world, the players counter, Shutdown; on\n"
            "                    without the flag when AGONES_SDK_HTTP_PORT is set\n"
            "  --agones-health S seconds between Health pings, sent only while every world\n"
            "                    ticks on time (default 2)\n"
            "  --agones-empty-timeout S\n"
            "                    after the allocation, ask Agones to shut the server down\n"
            "                    once no player has been connected for S seconds (with an\n"
            "                    auth file, a session with a token; else any session;\n"
            "                    default 60; 0: never)\n"
            "\n"
            "  --log-level L     error, warn, info or debug (default info): what goes to\n"
            "                    stderr, one line per event\n"
            "  --log-format F    text (logfmt, the default) or json (one object per line)\n"
            "\n"
            "access control and limits (README, \"Exposing ragdolld\"):\n"
            "  --auth-file FILE  tokens and roles, one \"TOKEN ROLE [WORLD ...]\" per line\n"
            "                    (also $RAGDOLLD_AUTH_FILE); without it every client is an admin\n"
            "  --anonymous ROLE  with an auth file, what a client without a token may do:\n"
            "                    none (default: 401), viewer or player\n"
            "  --allow-origin O  a browser Origin that may connect (repeatable; \"*\" for any);\n"
            "                    by default an Origin must match the Host it connected to\n"
            "  --insecure        allow a non-loopback --host without an auth file\n"
            "  --max-sessions-per-address N\n"
            "                    WebSocket sessions from one address, counted apart with and\n"
            "                    without a token (default 16 with an auth file or a\n"
            "                    non-loopback host, else 0 = no limit); beyond: 429\n"
            "  --cmd-rate N      commands per second per connection (default 200)\n"
            "  --cmd-burst N     commands at once per connection (default 400); beyond\n"
            "                    either the reply is rate_limited\n"
            "\n"
            "  --help            print this help and exit\n"
            "  --version         print the version and exit\n"
            "\n"
            "Once it accepts connections it prints \"listening on HOST:PORT\" on stdout;\n"
            "logs go to stderr. GET /metrics answers in the Prometheus text format.\n"
            "SIGINT or SIGTERM closes every client with 1001 (going away), saves every\n"
            "world when there is a --state-dir, and exits.\n",
            app_config_default().templates_dir);
}

// 127.0.0.0/8, ::1 and "localhost": addresses only this machine reaches.
static bool is_loopback(const char* host) {
    return strncmp(host, "127.", 4) == 0 || strcmp(host, "::1") == 0 ||
           strcmp(host, "localhost") == 0;
}

static bool parse_uint(const char* s, long lo, long hi, long* out) {
    char* end = NULL;
    long v = strtol(s, &end, 10);
    if (end == s || *end != '\0' || v < lo || v > hi) {
        return false;
    }
    *out = v;
    return true;
}

// Parses "NAME=N[,NAME=N...]" (names: rdp_limit_name()) into out, setting
// bit i of *given for each limit named. `what` names the option in errors.
static bool parse_limits(const char* what, const char* s, uint32_t out[RDP_LIMIT_COUNT],
                         uint32_t* given, FILE* err) {
    char buf[256];
    if (strlen(s) >= sizeof buf || s[0] == '\0') {
        fprintf(err, "ragdolld: %s takes NAME=N[,NAME=N...] (at most %zu characters)\n", what,
                sizeof buf - 1);
        return false;
    }
    memcpy(buf, s, strlen(s) + 1);
    char* save = NULL;
    for (char* item = strtok_r(buf, ",", &save); item != NULL; item = strtok_r(NULL, ",", &save)) {
        char* eq = strchr(item, '=');
        int i = 0;
        if (eq != NULL) {
            *eq = '\0';
            while (i < RDP_LIMIT_COUNT && strcmp(item, rdp_limit_name((rdp_limit)i)) != 0) {
                i++;
            }
        }
        if (eq == NULL || i == RDP_LIMIT_COUNT) {
            fprintf(err,
                    "ragdolld: %s: \"%s\" is not NAME=N with NAME one of entities, particles, "
                    "constraints, bodies, joints, contacts\n",
                    what, item);
            return false;
        }
        long v;
        if (!parse_uint(eq + 1, 1, (long)limit_table[i].sim_max, &v)) {
            fprintf(err, "ragdolld: %s: %s takes a number from 1 to %u, not \"%s\"\n", what, item,
                    limit_table[i].sim_max, eq + 1);
            return false;
        }
        out[i] = (uint32_t)v;
        *given |= 1u << i;
    }
    return true;
}

// Parses a solver's wire name ("xpbd", "soft_step") into *out. `what`
// names the option in errors.
static bool parse_solver(const char* what, const char* s, sim_solver* out, FILE* err) {
    if (!app__solver_from_wire(rdp_solver_parse(s), out)) {
        fprintf(err, "ragdolld: %s takes xpbd or soft_step, not \"%s\"\n", what, s);
        return false;
    }
    return true;
}

static bool parse_log_level(const char* s, app_log_level* out) {
    static const char* const names[] = {"error", "warn", "info", "debug"};
    for (int i = 0; i < 4; ++i) {
        if (strcmp(s, names[i]) == 0) {
            *out = (app_log_level)i;
            return true;
        }
    }
    return false;
}

int app_config_parse(int argc, char** argv, app_config* cfg, FILE* out, FILE* err) {
    enum {
        OPT_HOST = 1,
        OPT_PORT,
        OPT_WEB_ROOT,
        OPT_ASSETS,
        OPT_NO_DEMO,
        OPT_MAX_WORLDS,
        OPT_MAX_SESSIONS,
        OPT_MAX_SOLVER_WORK,
        OPT_MAX_TOTAL_SOLVER_WORK,
        OPT_WORKERS,
        OPT_AUTH_FILE,
        OPT_ANONYMOUS,
        OPT_ALLOW_ORIGIN,
        OPT_INSECURE,
        OPT_MAX_PER_ADDRESS,
        OPT_CMD_RATE,
        OPT_CMD_BURST,
        OPT_LOG_LEVEL,
        OPT_LOG_FORMAT,
        OPT_WORLD_LIMITS,
        OPT_WORLD_CEILING,
        OPT_WORLD_SOLVER,
        OPT_STATE_DIR,
        OPT_AUTOSAVE,
        OPT_JOURNAL_FSYNC,
        OPT_REPLAY,
        OPT_JOURNAL,
        OPT_UNTIL,
        OPT_PRINT_HASH,
        OPT_AGONES,
        OPT_TEMPLATES,
        OPT_WORLD_TEMPLATE,
        OPT_AGONES_HEALTH,
        OPT_AGONES_EMPTY,
        OPT_LAG_HISTORY,
        OPT_HELP,
        OPT_VERSION
    };
    static const struct option opts[] = {
        {"host", required_argument, NULL, OPT_HOST},
        {"port", required_argument, NULL, OPT_PORT},
        {"web-root", required_argument, NULL, OPT_WEB_ROOT},
        {"assets", required_argument, NULL, OPT_ASSETS},
        {"no-demo", no_argument, NULL, OPT_NO_DEMO},
        {"max-worlds", required_argument, NULL, OPT_MAX_WORLDS},
        {"max-sessions", required_argument, NULL, OPT_MAX_SESSIONS},
        {"max-solver-work", required_argument, NULL, OPT_MAX_SOLVER_WORK},
        {"max-total-solver-work", required_argument, NULL, OPT_MAX_TOTAL_SOLVER_WORK},
        {"workers", required_argument, NULL, OPT_WORKERS},
        {"auth-file", required_argument, NULL, OPT_AUTH_FILE},
        {"anonymous", required_argument, NULL, OPT_ANONYMOUS},
        {"allow-origin", required_argument, NULL, OPT_ALLOW_ORIGIN},
        {"insecure", no_argument, NULL, OPT_INSECURE},
        {"max-sessions-per-address", required_argument, NULL, OPT_MAX_PER_ADDRESS},
        {"cmd-rate", required_argument, NULL, OPT_CMD_RATE},
        {"cmd-burst", required_argument, NULL, OPT_CMD_BURST},
        {"log-level", required_argument, NULL, OPT_LOG_LEVEL},
        {"log-format", required_argument, NULL, OPT_LOG_FORMAT},
        {"world-limits", required_argument, NULL, OPT_WORLD_LIMITS},
        {"world-ceiling", required_argument, NULL, OPT_WORLD_CEILING},
        {"world-solver", required_argument, NULL, OPT_WORLD_SOLVER},
        {"state-dir", required_argument, NULL, OPT_STATE_DIR},
        {"autosave", required_argument, NULL, OPT_AUTOSAVE},
        {"lag-history", required_argument, NULL, OPT_LAG_HISTORY},
        {"journal-fsync", required_argument, NULL, OPT_JOURNAL_FSYNC},
        {"replay", required_argument, NULL, OPT_REPLAY},
        {"journal", required_argument, NULL, OPT_JOURNAL},
        {"until", required_argument, NULL, OPT_UNTIL},
        {"print-hash", no_argument, NULL, OPT_PRINT_HASH},
        {"agones", no_argument, NULL, OPT_AGONES},
        {"templates", required_argument, NULL, OPT_TEMPLATES},
        {"world-template", required_argument, NULL, OPT_WORLD_TEMPLATE},
        {"agones-health", required_argument, NULL, OPT_AGONES_HEALTH},
        {"agones-empty-timeout", required_argument, NULL, OPT_AGONES_EMPTY},
        {"help", no_argument, NULL, OPT_HELP},
        {"version", no_argument, NULL, OPT_VERSION},
        {NULL, 0, NULL, 0},
    };
    optind = 1;
    opterr = 0;
    int c;
    long v;
    uint32_t limits_given = 0, ceiling_given = 0;
    bool workers_given = false, solver_given = false, until_given = false;
    bool autosave_given = false, fsync_given = false;
    bool agones_given = false, agones_flag_given = false;
    bool templates_given = false;
    int idx = -1;
    const char* serving = NULL; // an option that means something only when serving
    while ((c = getopt_long(argc, argv, "", opts, &idx)) != -1) {
        if (idx >= 0 && c != OPT_REPLAY && c != OPT_JOURNAL && c != OPT_UNTIL &&
            c != OPT_PRINT_HASH && c != OPT_ASSETS && c != OPT_LOG_LEVEL && c != OPT_LOG_FORMAT &&
            c != OPT_TEMPLATES && c != OPT_HELP && c != OPT_VERSION) {
            serving = opts[idx].name;
        }
        idx = -1;
        switch (c) {
        case OPT_HOST:
            cfg->host = optarg;
            break;
        case OPT_STATE_DIR:
            cfg->state_dir = optarg;
            break;
        case OPT_LAG_HISTORY:
            if (!parse_uint(optarg, 0, 1000, &v)) {
                fprintf(err,
                        "ragdolld: --lag-history takes milliseconds from 0 to 1000, not \"%s\"\n",
                        optarg);
                return -1;
            }
            cfg->lag_history_ms = (uint32_t)v;
            break;
        case OPT_AUTOSAVE:
            if (!parse_uint(optarg, 0, 86400, &v)) {
                fprintf(err, "ragdolld: --autosave takes seconds from 0 to 86400, not \"%s\"\n",
                        optarg);
                return -1;
            }
            cfg->autosave_s = (uint32_t)v;
            autosave_given = true;
            break;
        case OPT_REPLAY:
            cfg->replay_state = optarg;
            break;
        case OPT_JOURNAL:
            cfg->replay_journal = optarg;
            break;
        case OPT_UNTIL: {
            char* end = NULL;
            errno = 0;
            unsigned long long t = strtoull(optarg, &end, 10);
            if (end == optarg || *end != '\0' || errno != 0 || optarg[0] == '-') {
                fprintf(err, "ragdolld: --until takes a tick (a whole number), not \"%s\"\n",
                        optarg);
                return -1;
            }
            cfg->replay_until = (uint64_t)t;
            until_given = true;
            break;
        }
        case OPT_PRINT_HASH:
            cfg->print_hash = true;
            break;
        case OPT_AGONES:
            agones_given = true;
            break;
        case OPT_TEMPLATES:
            cfg->templates_dir = optarg;
            templates_given = true;
            break;
        case OPT_WORLD_TEMPLATE:
            cfg->world_template = optarg;
            break;
        case OPT_AGONES_HEALTH: {
            char* end = NULL;
            double s = strtod(optarg, &end);
            if (end == optarg || *end != '\0' || !(s >= 0.1 && s <= 60)) {
                fprintf(err, "ragdolld: --agones-health takes seconds from 0.1 to 60, not \"%s\"\n",
                        optarg);
                return -1;
            }
            cfg->agones_health_s = s;
            agones_flag_given = true;
            break;
        }
        case OPT_AGONES_EMPTY:
            if (!parse_uint(optarg, 0, 86400, &v)) {
                fprintf(err,
                        "ragdolld: --agones-empty-timeout takes seconds from 0 to 86400, not "
                        "\"%s\"\n",
                        optarg);
                return -1;
            }
            cfg->agones_empty_s = (uint32_t)v;
            agones_flag_given = true;
            break;
        case OPT_JOURNAL_FSYNC:
            fsync_given = true;
            if (strcmp(optarg, "always") == 0) {
                cfg->journal_fsync = APP_FSYNC_ALWAYS;
            } else if (strcmp(optarg, "everysec") == 0) {
                cfg->journal_fsync = APP_FSYNC_EVERYSEC;
            } else if (strcmp(optarg, "never") == 0) {
                cfg->journal_fsync = APP_FSYNC_NEVER;
            } else {
                fprintf(err,
                        "ragdolld: --journal-fsync takes always, everysec or never, not \"%s\"\n",
                        optarg);
                return -1;
            }
            break;
        case OPT_PORT:
            if (!parse_uint(optarg, 0, 65535, &v)) {
                fprintf(err, "ragdolld: --port takes a number from 0 to 65535, not \"%s\"\n",
                        optarg);
                return -1;
            }
            cfg->port = (int)v;
            break;
        case OPT_WEB_ROOT:
            cfg->web_root = optarg;
            break;
        case OPT_ASSETS:
            cfg->assets_dir = optarg;
            break;
        case OPT_NO_DEMO:
            cfg->demo = false;
            break;
        case OPT_MAX_WORLDS:
            if (!parse_uint(optarg, 1, 1024, &v)) {
                fprintf(err, "ragdolld: --max-worlds takes a number from 1 to 1024\n");
                return -1;
            }
            cfg->max_worlds = (uint32_t)v;
            break;
        case OPT_MAX_SESSIONS:
            if (!parse_uint(optarg, 1, 1000000, &v)) {
                fprintf(err, "ragdolld: --max-sessions takes a number from 1 to 1000000\n");
                return -1;
            }
            cfg->max_sessions = (uint32_t)v;
            break;
        case OPT_MAX_SOLVER_WORK:
            if (!parse_uint(optarg, 1000, 1000000000L, &v)) {
                fprintf(err, "ragdolld: --max-solver-work takes a number from 1000 to 10^9\n");
                return -1;
            }
            cfg->max_solver_work = (uint64_t)v;
            break;
        case OPT_MAX_TOTAL_SOLVER_WORK:
            if (!parse_uint(optarg, 1000, 10000000000L, &v)) {
                fprintf(err,
                        "ragdolld: --max-total-solver-work takes a number from 1000 to 10^10\n");
                return -1;
            }
            cfg->max_total_solver_work = (uint64_t)v;
            break;
        case OPT_WORKERS:
            if (!parse_uint(optarg, 0, APP_MAX_WORKERS, &v)) {
                fprintf(err, "ragdolld: --workers takes a number from 0 to %d, not \"%s\"\n",
                        APP_MAX_WORKERS, optarg);
                return -1;
            }
            cfg->workers = (uint32_t)v;
            workers_given = true;
            break;
        case OPT_AUTH_FILE:
            cfg->auth_file = optarg;
            break;
        case OPT_ANONYMOUS: {
            app_role r;
            if (app_role_parse(optarg, &r) != 0 || r == APP_ROLE_ADMIN) {
                fprintf(err, "ragdolld: --anonymous takes none, viewer or player\n");
                return -1;
            }
            cfg->anonymous_role = r;
            break;
        }
        case OPT_ALLOW_ORIGIN:
            if (cfg->allow_origin_count == APP_MAX_ALLOW_ORIGINS) {
                fprintf(err, "ragdolld: --allow-origin at most %d times\n", APP_MAX_ALLOW_ORIGINS);
                return -1;
            }
            cfg->allow_origins[cfg->allow_origin_count++] = optarg;
            break;
        case OPT_INSECURE:
            cfg->insecure = true;
            break;
        case OPT_MAX_PER_ADDRESS:
            if (!parse_uint(optarg, 0, 1000000, &v)) {
                fprintf(err, "ragdolld: --max-sessions-per-address takes a number from 0 to "
                             "1000000\n");
                return -1;
            }
            cfg->max_sessions_per_address = (uint32_t)v;
            break;
        case OPT_CMD_RATE:
        case OPT_CMD_BURST:
            if (!parse_uint(optarg, 1, 1000000, &v)) {
                fprintf(err, "ragdolld: --%s takes a number from 1 to 1000000\n",
                        c == OPT_CMD_RATE ? "cmd-rate" : "cmd-burst");
                return -1;
            }
            if (c == OPT_CMD_RATE) {
                cfg->cmd_rate = (double)v;
            } else {
                cfg->cmd_burst = (double)v;
            }
            break;
        case OPT_LOG_LEVEL:
            if (!parse_log_level(optarg, &cfg->log_level)) {
                fprintf(err, "ragdolld: --log-level takes error, warn, info or debug, not \"%s\"\n",
                        optarg);
                return -1;
            }
            break;
        case OPT_LOG_FORMAT:
            if (strcmp(optarg, "text") == 0 || strcmp(optarg, "json") == 0) {
                cfg->log_format = optarg[0] == 'j' ? APP_LOG_JSON : APP_LOG_TEXT;
            } else {
                fprintf(err, "ragdolld: --log-format takes text or json, not \"%s\"\n", optarg);
                return -1;
            }
            break;
        case OPT_WORLD_LIMITS:
            if (!parse_limits("--world-limits", optarg, cfg->world_limits, &limits_given, err)) {
                return -1;
            }
            break;
        case OPT_WORLD_CEILING:
            if (!parse_limits("--world-ceiling", optarg, cfg->world_ceiling, &ceiling_given, err)) {
                return -1;
            }
            break;
        case OPT_WORLD_SOLVER:
            if (!parse_solver("--world-solver", optarg, &cfg->world_solver, err)) {
                return -1;
            }
            solver_given = true;
            break;
        case OPT_HELP:
            usage(out);
            return 1;
        case OPT_VERSION:
            fprintf(out, "ragdolld %s\n", APP_VERSION);
            return 1;
        default:
            fprintf(err, "ragdolld: unknown or incomplete option \"%s\" (see --help)\n",
                    argv[optind - 1]);
            return -1;
        }
    }
    if (optind < argc) {
        fprintf(err, "ragdolld: unexpected argument \"%s\" (see --help)\n", argv[optind]);
        return -1;
    }
    if (!workers_given) {
        const char* env = getenv("RAGDOLLD_WORKERS");
        if (env != NULL && env[0] != '\0') {
            if (!parse_uint(env, 0, APP_MAX_WORKERS, &v)) {
                fprintf(err, "ragdolld: RAGDOLLD_WORKERS takes a number from 0 to %d, not \"%s\"\n",
                        APP_MAX_WORKERS, env);
                return -1;
            }
            cfg->workers = (uint32_t)v;
        }
    }
    if (cfg->auth_file == NULL) {
        const char* env = getenv("RAGDOLLD_AUTH_FILE");
        if (env != NULL && env[0] != '\0') {
            cfg->auth_file = env;
        }
    }
    if (cfg->state_dir == NULL) {
        const char* env = getenv("RAGDOLLD_STATE_DIR");
        if (env != NULL && env[0] != '\0') {
            cfg->state_dir = env;
        }
    }
    // Flags that mean something only beside another are refused without
    // it, rather than ignored.
    if (cfg->replay_state == NULL &&
        (cfg->replay_journal != NULL || until_given || cfg->print_hash)) {
        fprintf(err, "ragdolld: --journal, --until and --print-hash go with --replay STATE\n");
        return -1;
    }
    if (cfg->replay_state != NULL && serving != NULL) {
        fprintf(err,
                "ragdolld: --replay runs offline: --%s does not apply to it (only --journal, "
                "--until, --print-hash, --assets and the --log flags do)\n",
                serving);
        return -1;
    }
    if (cfg->replay_state != NULL) {
        const char* files[2] = {cfg->replay_state, cfg->replay_journal};
        for (int i = 0; i < 2; ++i) {
            const char* flag = i == 0 ? "--replay" : "--journal";
            struct stat st;
            if (files[i] == NULL) {
                continue;
            }
            if (stat(files[i], &st) != 0 || access(files[i], R_OK) != 0) {
                fprintf(err, "ragdolld: %s %s: %s\n", flag, files[i], strerror(errno));
                return -1;
            }
            if (!S_ISREG(st.st_mode)) {
                fprintf(err, "ragdolld: %s %s: not a regular file\n", flag, files[i]);
                return -1;
            }
        }
    }
    cfg->templates_required = templates_given;
    // Agones: on with --agones, or when Agones has set the sidecar's port.
    const char* agones_env = getenv("AGONES_SDK_HTTP_PORT");
    if (agones_given || (agones_env != NULL && agones_env[0] != '\0')) {
        cfg->agones_port = 9358; // Agones' default
        if (agones_env != NULL && agones_env[0] != '\0') {
            if (!parse_uint(agones_env, 1, 65535, &v)) {
                fprintf(err,
                        "ragdolld: AGONES_SDK_HTTP_PORT takes a port from 1 to 65535, not "
                        "\"%s\"\n",
                        agones_env);
                return -1;
            }
            cfg->agones_port = (int)v;
        }
    } else if (agones_flag_given) {
        fprintf(err, "ragdolld: --agones-health and --agones-empty-timeout go with --agones (or "
                     "AGONES_SDK_HTTP_PORT)\n");
        return -1;
    }
    if (cfg->replay_state == NULL && cfg->state_dir == NULL && (autosave_given || fsync_given)) {
        fprintf(err, "ragdolld: --autosave and --journal-fsync need --state-dir DIR (or "
                     "RAGDOLLD_STATE_DIR)\n");
        return -1;
    }
    if (cfg->state_dir != NULL && cfg->replay_state == NULL) {
        struct stat st;
        if (stat(cfg->state_dir, &st) != 0 || !S_ISDIR(st.st_mode) ||
            access(cfg->state_dir, W_OK | X_OK) != 0) {
            fprintf(err, "ragdolld: --state-dir %s is not a directory this process can write\n",
                    cfg->state_dir);
            return -1;
        }
    }
    // The environment gives what the command line did not.
    const char* env_limits = getenv("RAGDOLLD_WORLD_LIMITS");
    if (limits_given == 0 && env_limits != NULL && env_limits[0] != '\0' &&
        !parse_limits("RAGDOLLD_WORLD_LIMITS", env_limits, cfg->world_limits, &limits_given, err)) {
        return -1;
    }
    const char* env_ceiling = getenv("RAGDOLLD_WORLD_CEILING");
    if (ceiling_given == 0 && env_ceiling != NULL && env_ceiling[0] != '\0' &&
        !parse_limits("RAGDOLLD_WORLD_CEILING", env_ceiling, cfg->world_ceiling, &ceiling_given,
                      err)) {
        return -1;
    }
    const char* env_solver = getenv("RAGDOLLD_WORLD_SOLVER");
    if (!solver_given && env_solver != NULL && env_solver[0] != '\0' &&
        !parse_solver("RAGDOLLD_WORLD_SOLVER", env_solver, &cfg->world_solver, err)) {
        return -1;
    }
    for (int i = 0; i < RDP_LIMIT_COUNT; ++i) {
        if (cfg->world_limits[i] <= cfg->world_ceiling[i]) {
            continue;
        }
        if (limits_given & (1u << i)) {
            fprintf(err, "ragdolld: the world limit %s=%u is above the ceiling %s=%u\n",
                    rdp_limit_name((rdp_limit)i), cfg->world_limits[i],
                    rdp_limit_name((rdp_limit)i), cfg->world_ceiling[i]);
            return -1;
        }
        cfg->world_limits[i] = cfg->world_ceiling[i]; // a lowered ceiling lowers the default
    }
    // Protected mode (Redis): without tokens every client is an admin, which
    // is fine only where every client is this machine.
    if (!is_loopback(cfg->host) && cfg->auth_file == NULL && !cfg->insecure) {
        fprintf(err,
                "ragdolld: refusing to listen on %s without access control: anyone who can "
                "reach it could destroy worlds and change every parameter.\n"
                "  Give --auth-file FILE (lines of \"TOKEN ROLE [WORLD ...]\"; see the README, "
                "\"Exposing ragdolld\"),\n"
                "  or --host 127.0.0.1, or, on a network you trust, --insecure.\n",
                cfg->host);
        return -1;
    }
    if (cfg->max_sessions_per_address == APP_PER_ADDRESS_AUTO) {
        // Exposed, one address gets a share; on loopback alone every client
        // is this machine (load tests open hundreds), so no limit.
        bool exposed = cfg->auth_file != NULL || !is_loopback(cfg->host);
        cfg->max_sessions_per_address = exposed ? 16 : 0;
    }
    if (cfg->anonymous_role != APP_ROLE_NONE && cfg->auth_file == NULL) {
        fprintf(err, "ragdolld: --anonymous needs --auth-file (without one every client is an "
                     "admin)\n");
        return -1;
    }
    return 0;
}
