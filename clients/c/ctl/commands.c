/*
 * commands.c: ragdollctl's subcommands that send one command of
 * PROTOCOL.md §3 and print its reply, described by tables: positional
 * arguments and options map onto the command's JSON fields.
 *
 * ragdollctl checks the shape of its arguments (a number where a number
 * goes, three of them in a vector, required options present: else exit 2);
 * the server checks their values (ranges, ids: exit 1 with its error).
 */
#include "ctl.h"

#include <nettle/base64.h>

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

// ---------------------------------------------------------------------------
// Parsing helpers
// ---------------------------------------------------------------------------

bool ctl_parse_uint(const char* s, uint64_t lo, uint64_t hi, uint64_t* out) {
    if (s == NULL || *s < '0' || *s > '9') {
        return false; // strtoull would take "-1" and " 1"
    }
    errno = 0;
    char* end;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno != 0 || *end != '\0' || v < lo || v > hi) {
        return false;
    }
    *out = v;
    return true;
}

bool ctl_parse_id(const char* s, uint64_t* out) {
    return ctl_parse_uint(s, 0, 9007199254740991ull, out);
}

bool ctl_parse_double(const char* s, double* out) {
    if (s == NULL || *s == '\0') {
        return false;
    }
    errno = 0;
    char* end;
    double v = strtod(s, &end);
    if (errno == ERANGE || *end != '\0' || !isfinite(v)) {
        return false;
    }
    *out = v;
    return true;
}

uint64_t ctl_seconds_to_ms(double s) {
    if (!(s > 0)) {
        return 0;
    }
    return (uint64_t)((s < CTL_MAX_SECONDS ? s : CTL_MAX_SECONDS) * 1000 + 0.5);
}

bool ctl_parse_vec3(const char* s, double out[3]) {
    char buf[256];
    if (s == NULL || strlen(s) >= sizeof buf) {
        return false;
    }
    strcpy(buf, s);
    char* p = buf;
    for (int i = 0; i < 3; ++i) {
        char* comma = strchr(p, ',');
        if ((i < 2) != (comma != NULL)) {
            return false;
        }
        if (comma != NULL) {
            *comma = '\0';
        }
        if (!ctl_parse_double(p, &out[i])) {
            return false;
        }
        p = comma != NULL ? comma + 1 : p;
    }
    return true;
}

void ctl_add_vec3(cJSON* obj, const char* key, const double v[3]) {
    cJSON* a = cJSON_AddArrayToObject(obj, key);
    for (int i = 0; i < 3; ++i) {
        cJSON_AddItemToArray(a, cJSON_CreateNumber(v[i]));
    }
}

// ---------------------------------------------------------------------------
// Strings
// ---------------------------------------------------------------------------

static void buf_reserve(ctl_buf* b, size_t more) {
    if (b->len + more + 1 <= b->cap) {
        return;
    }
    size_t cap = b->cap == 0 ? 4096 : b->cap;
    while (cap < b->len + more + 1) {
        cap *= 2;
    }
    char* d = realloc(b->data, cap);
    if (d == NULL) {
        fprintf(stderr, "ragdollctl: out of memory\n");
        exit(CTL_CONNECTION);
    }
    b->data = d;
    b->cap = cap;
}

void ctl_buf_append(ctl_buf* b, const char* s, size_t len) {
    buf_reserve(b, len);
    memcpy(b->data + b->len, s, len);
    b->len += len;
    b->data[b->len] = '\0';
}

void ctl_buf_printf(ctl_buf* b, const char* fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char small[256];
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0) {
        return;
    }
    if ((size_t)n < sizeof small) {
        ctl_buf_append(b, small, (size_t)n);
        return;
    }
    buf_reserve(b, (size_t)n);
    va_start(ap, fmt);
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

void ctl_buf_free(ctl_buf* b) {
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

// Appends a float rounded to `digits` decimals, without a trailing "-0".
static void put_num(ctl_buf* b, float v, int digits) {
    double scale = digits == 4 ? 1e4 : 1e5;
    double r = round((double)v * scale) / scale;
    if (r == 0) {
        r = 0; // -0 prints as "-0"
    }
    ctl_buf_printf(b, "%.*g", digits + 6, r);
}

void ctl_snapshot_line(ctl_buf* b, const rdc_snapshot* s) {
    ctl_buf_printf(
        b, "{\"ev\":\"snapshot\",\"world\":%llu,\"tick\":%llu,\"format\":\"%s\",\"entities\":[",
        (unsigned long long)s->world, (unsigned long long)s->tick,
        s->format == RDC_FORMAT_BINARY ? "binary" : "json");
    for (uint32_t i = 0; i < s->entity_count; ++i) {
        const rdc_entity* e = &s->entities[i];
        ctl_buf_printf(b, "%s{\"entity\":%llu,\"kind\":\"%s\"", i > 0 ? "," : "",
                       (unsigned long long)e->id, rdc_kind_name(e->kind));
        if (e->pose != NULL) {
            if (e->kind == RDC_KIND_CHARACTER) {
                ctl_buf_printf(b, ",\"state\":\"%s\"", rdc_char_state_name(e->state));
            }
            ctl_buf_append(b, ",\"bodies\":[", 11);
            for (uint32_t k = 0; k < e->count; ++k) {
                const float* p = e->pose + 7 * k;
                ctl_buf_append(b, k > 0 ? ",[" : "[", k > 0 ? 2 : 1);
                for (int j = 0; j < 7; ++j) {
                    if (j > 0) {
                        ctl_buf_append(b, ",", 1);
                    }
                    put_num(b, p[j], j < 3 ? 4 : 5);
                }
                ctl_buf_append(b, "]", 1);
            }
        } else {
            ctl_buf_append(b, ",\"particles\":[", 14);
            for (uint32_t k = 0; k < e->count; ++k) {
                const float* p = e->xyz + 3 * k;
                ctl_buf_append(b, k > 0 ? ",[" : "[", k > 0 ? 2 : 1);
                for (int j = 0; j < 3; ++j) {
                    if (j > 0) {
                        ctl_buf_append(b, ",", 1);
                    }
                    put_num(b, p[j], 4);
                }
                ctl_buf_append(b, "]", 1);
            }
        }
        ctl_buf_append(b, "]}", 2);
    }
    ctl_buf_append(b, "]}", 2);
}

// ---------------------------------------------------------------------------
// Table-driven commands
// ---------------------------------------------------------------------------

typedef enum arg_type {
    A_ID,     ///< world or entity id
    A_TICK,   ///< a world's tick (an integer below 2^53, as an id)
    A_UINT,   ///< unsigned integer
    A_NUM,    ///< number
    A_VEC3,   ///< X,Y,Z
    A_STR,    ///< string
    A_NAMES,  ///< option: comma-separated names; positional: the rest of the arguments
    A_BOOL,   ///< on|off (also true|false, yes|no; any case), sent as a JSON boolean
    A_SECONDS ///< ragdollctl's own --seconds (not sent)
} arg_type;

typedef struct arg_spec {
    const char* name;  ///< Option name (without "--") or positional's name in the synopsis.
    const char* field; ///< JSON field.
    arg_type type;
    bool required;
} arg_spec;

#define MAX_ARGS 16

/// A subcommand that sends one command: ctl_cmd first, so that the table
/// entry can be found from x->cmd.
typedef struct simple_cmd {
    ctl_cmd base;
    const char* op;
    arg_spec pos[4];         ///< Positional arguments, in order (name NULL ends).
    arg_spec opts[MAX_ARGS]; ///< Options (name NULL ends).
    bool (*print_ok)(ctl* x, const rdc_reply* r);
} simple_cmd;

static bool add_arg(cJSON* o, const arg_spec* a, const char* v, ctl* x) {
    uint64_t u;
    double d, vec[3];
    switch (a->type) {
    case A_ID:
    case A_TICK:
        if (!ctl_parse_id(v, &u)) {
            return false;
        }
        cJSON_AddNumberToObject(o, a->field, (double)u);
        return true;
    case A_UINT:
        if (!ctl_parse_uint(v, 0, 4294967295u, &u)) {
            return false;
        }
        cJSON_AddNumberToObject(o, a->field, (double)u);
        return true;
    case A_NUM:
        if (!ctl_parse_double(v, &d)) {
            return false;
        }
        cJSON_AddNumberToObject(o, a->field, d);
        return true;
    case A_VEC3:
        if (!ctl_parse_vec3(v, vec)) {
            return false;
        }
        ctl_add_vec3(o, a->field, vec);
        return true;
    case A_STR:
        cJSON_AddStringToObject(o, a->field, v);
        return true;
    case A_NAMES: {
        cJSON* arr = cJSON_AddArrayToObject(o, a->field);
        const char* p = v;
        while (*p != '\0') {
            const char* comma = strchr(p, ',');
            size_t n = comma != NULL ? (size_t)(comma - p) : strlen(p);
            char name[64];
            if (n == 0 || n >= sizeof name) {
                return false;
            }
            memcpy(name, p, n);
            name[n] = '\0';
            cJSON_AddItemToArray(arr, cJSON_CreateString(name));
            p += n + (comma != NULL);
        }
        return true;
    }
    case A_BOOL: {
        static const char *const yes[] = {"on", "true", "yes"}, *const no[] = {"off", "false",
                                                                               "no"};
        for (int i = 0; i < 3; ++i) {
            if (strcasecmp(v, yes[i]) == 0 || strcasecmp(v, no[i]) == 0) {
                cJSON_AddBoolToObject(o, a->field, strcasecmp(v, yes[i]) == 0);
                return true;
            }
        }
        return false;
    }
    case A_SECONDS:
        if (!ctl_parse_double(v, &x->seconds) || x->seconds < 0 || x->seconds > CTL_MAX_SECONDS) {
            return false;
        }
        return true;
    }
    return false;
}

static const char* type_hint(arg_type t) {
    switch (t) {
    case A_ID:
        return "an id";
    case A_TICK:
        return "a tick (an integer from 0)";
    case A_UINT:
        return "an unsigned integer";
    case A_NUM:
        return "a number";
    case A_VEC3:
        return "X,Y,Z";
    case A_STR:
        return "a string";
    case A_NAMES:
        return "NAME[,NAME...]";
    case A_BOOL:
        return "on or off (or yes/no, true/false)";
    case A_SECONDS:
        return "seconds";
    }
    return "";
}

// Parses argv against a simple_cmd's table into x->request.
static int parse_simple(ctl* x, const simple_cmd* sc, int argc, char** argv) {
    // Usage lines name the variant (spawn rope ...); --help is the command's.
    const ctl_cmd* cmd = &sc->base;
    struct option lo[MAX_ARGS + 2];
    int nopt = 0;
    for (; sc->opts[nopt].name != NULL; ++nopt) {
        lo[nopt] = (struct option){sc->opts[nopt].name, required_argument, NULL, nopt};
    }
    lo[nopt] = (struct option){"help", no_argument, NULL, 'h'};
    lo[nopt + 1] = (struct option){NULL, 0, NULL, 0};
    bool given[MAX_ARGS] = {false};
    cJSON* o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "op", sc->op);
    x->request = o;
    int c;
    while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
        if (c == 'h') {
            ctl_help(x->cmd);
            x->finished = true;
            return CTL_OK;
        }
        if (c < 0 || c >= nopt) {
            return ctl_usage(cmd, "unknown option");
        }
        const arg_spec* a = &sc->opts[c];
        if (given[c] || !add_arg(o, a, optarg, x)) {
            return ctl_usage(cmd, given[c] ? "--%s given twice" : "--%s wants %s, not \"%s\"",
                             a->name, type_hint(a->type), optarg);
        }
        given[c] = true;
    }
    for (int i = 0; i < nopt; ++i) {
        if (sc->opts[i].required && !given[i]) {
            return ctl_usage(cmd, "--%s is required", sc->opts[i].name);
        }
    }
    int ai = optind;
    for (int p = 0; p < 4 && sc->pos[p].name != NULL; ++p) {
        const arg_spec* a = &sc->pos[p];
        if (a->type == A_NAMES) {
            // The rest of the arguments, possibly none.
            cJSON* arr = cJSON_AddArrayToObject(o, a->field);
            for (; ai < argc; ++ai) {
                cJSON_AddItemToArray(arr, cJSON_CreateString(argv[ai]));
            }
            break;
        }
        if (ai >= argc) {
            return ctl_usage(cmd, "%s is missing", a->name);
        }
        if (!add_arg(o, a, argv[ai], x)) {
            return ctl_usage(cmd, "%s wants %s, not \"%s\"", a->name, type_hint(a->type), argv[ai]);
        }
        ai++;
    }
    if (ai < argc) {
        return ctl_usage(cmd, "unexpected argument \"%s\"", argv[ai]);
    }
    x->print_ok = sc->print_ok;
    return 0;
}

static int parse_table(ctl* x, int argc, char** argv) {
    return parse_simple(x, (const simple_cmd*)x->cmd, argc, argv);
}

// ---------------------------------------------------------------------------
// Human output
// ---------------------------------------------------------------------------

static double num(const cJSON* o, const char* key) {
    const cJSON* v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) ? v->valuedouble : 0;
}

static const char* str(const cJSON* o, const char* key) {
    const char* s = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, key));
    return s != NULL ? s : "?";
}

// Whether o[key] is an id, [1, 2^53 - 1] (a reply the command needs it in).
static bool has_id(const cJSON* o, const char* key) {
    const cJSON* v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) && v->valuedouble >= 1 && v->valuedouble <= 9007199254740991.0 &&
           v->valuedouble == floor(v->valuedouble);
}

static bool has_string(const cJSON* o, const char* key) {
    return cJSON_IsString(cJSON_GetObjectItemCaseSensitive(o, key));
}

// Each print_* checks that the reply has what the command needs (else it
// returns false: a malformed reply) and prints it unless --json.

static bool print_list(ctl* x, const rdc_reply* r) {
    const cJSON* worlds = cJSON_GetObjectItemCaseSensitive(r->json, "worlds");
    const cJSON* w;
    if (!cJSON_IsArray(worlds)) {
        return false;
    }
    cJSON_ArrayForEach(w, worlds) {
        if (!has_id(w, "world")) {
            return false;
        }
    }
    if (x->json) {
        return true;
    }
    printf("%-6s %-24s %10s %6s %8s  %s\n", "WORLD", "NAME", "TICK", "HZ", "ENTITIES", "SOLVER");
    cJSON_ArrayForEach(w, worlds) {
        printf("%-6.0f %-24s %10.0f %6.0f %8.0f  %s\n", num(w, "world"), str(w, "name"),
               num(w, "tick"), num(w, "tick_hz"), num(w, "entities"), str(w, "solver"));
    }
    return true;
}

static bool print_world(ctl* x, const rdc_reply* r) {
    if (!has_id(r->json, "world")) {
        return false;
    }
    if (!x->json) {
        // The solver it got (the server's default when none was asked for);
        // a server before solvers names none.
        const char* solver =
            cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(r->json, "solver"));
        if (solver != NULL) {
            printf("world %.0f (solver %s)\n", num(r->json, "world"), solver);
        } else {
            printf("world %.0f\n", num(r->json, "world"));
        }
    }
    return true;
}

static bool print_entity(ctl* x, const rdc_reply* r) {
    if (!has_id(r->json, "entity")) {
        return false;
    }
    if (!x->json) {
        printf("entity %.0f\n", num(r->json, "entity"));
    }
    return true;
}

static bool print_tick(ctl* x, const rdc_reply* r) {
    if (x->json) {
        return true;
    }
    if (r->has_tick) {
        printf("ok (tick %llu)\n", (unsigned long long)r->tick);
    } else {
        printf("ok\n");
    }
    return true;
}

static bool print_saved(ctl* x, const rdc_reply* r) {
    if (x->json) {
        return true;
    }
    const cJSON* file = cJSON_GetObjectItem(r->json, "file");
    const cJSON* bytes = cJSON_GetObjectItem(r->json, "bytes");
    printf("saved tick %llu: %.0f bytes in %s\n", (unsigned long long)r->tick,
           cJSON_IsNumber(bytes) ? bytes->valuedouble : 0.0,
           cJSON_IsString(file) ? file->valuestring : "?");
    return true;
}

// "judged at tick T" (clamped) for a command that had a seen_tick.
static void print_seen(const rdc_reply* r) {
    const cJSON* seen = cJSON_GetObjectItemCaseSensitive(r->json, "seen_tick");
    if (cJSON_IsNumber(seen)) {
        printf("judged at tick %.0f%s\n", seen->valuedouble,
               cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r->json, "clamped"))
                   ? " (clamped: older than the server keeps)"
                   : "");
    }
}

// print_tick(), then the tick a seen_tick was judged at.
static bool print_tick_seen(ctl* x, const rdc_reply* r) {
    if (!print_tick(x, r)) {
        return false;
    }
    if (!x->json) {
        print_seen(r);
    }
    return true;
}

static bool print_bone(ctl* x, const rdc_reply* r) {
    if (!has_string(r->json, "bone")) {
        return false;
    }
    if (!x->json) {
        printf("bone %s\n", str(r->json, "bone"));
        print_seen(r);
    }
    return true;
}

static bool print_hit(ctl* x, const rdc_reply* r) {
    rdc_hit h;
    if (rdc_hit_parse(r, &h) != 0) {
        return false;
    }
    if (x->json) {
        return true;
    }
    if (!h.hit) {
        printf("nothing\n");
    } else {
        printf("%s", h.kind);
        if (h.bone[0] != '\0') {
            printf(" %s", h.bone);
        }
        if (h.index >= 0) {
            printf(" %lld", (long long)h.index); // "box 2", "particle 14"
        }
        if (h.entity != 0) {
            printf(" of entity %llu", (unsigned long long)h.entity);
        }
        printf(" at %g,%g,%g normal %g,%g,%g distance %g\n", h.point[0], h.point[1], h.point[2],
               h.normal[0], h.normal[1], h.normal[2], h.distance);
    }
    print_seen(r);
    return true;
}

static bool print_clip(ctl* x, const rdc_reply* r) {
    if (!has_string(r->json, "clip")) {
        return false;
    }
    if (!x->json) {
        printf("clip %s\n", str(r->json, "clip"));
    }
    return true;
}

static void print_params_of(const cJSON* p) {
    const cJSON* g = cJSON_GetObjectItemCaseSensitive(p, "gravity");
    printf("gravity     %g %g %g\n", cJSON_GetArrayItem(g, 0)->valuedouble,
           cJSON_GetArrayItem(g, 1)->valuedouble, cJSON_GetArrayItem(g, 2)->valuedouble);
    printf("damping     %g\n", num(p, "damping"));
    printf("iterations  %g\n", num(p, "iterations"));
    printf("substeps    %g\n", num(p, "substeps"));
    printf("bounciness  %g\n", num(p, "bounciness"));
    printf("friction    %g\n", num(p, "friction"));
    const cJSON* wind = cJSON_GetObjectItemCaseSensitive(p, "wind");
    if (cJSON_GetArraySize(wind) == 3) { // servers before the air have none
        printf("wind        %g %g %g\n", cJSON_GetArrayItem(wind, 0)->valuedouble,
               cJSON_GetArrayItem(wind, 1)->valuedouble, cJSON_GetArrayItem(wind, 2)->valuedouble);
        printf("gust        %g (period %g s)\n", num(p, "gust"), num(p, "gust_period"));
        printf("air         density %g, drag %g, lift %g\n", num(p, "air_density"),
               num(p, "drag_coef"), num(p, "lift_coef"));
    }
}

static bool print_params(ctl* x, const rdc_reply* r) {
    const cJSON* p = cJSON_GetObjectItemCaseSensitive(r->json, "params");
    const cJSON* g = cJSON_GetObjectItemCaseSensitive(p, "gravity");
    if (!cJSON_IsObject(p) || cJSON_GetArraySize(g) != 3) {
        return false;
    }
    for (int i = 0; i < 3; ++i) {
        if (!cJSON_IsNumber(cJSON_GetArrayItem(g, i))) {
            return false;
        }
    }
    if (!x->json) {
        print_params_of(p);
    }
    return true;
}

static bool print_describe(ctl* x, const rdc_reply* r) {
    const cJSON* j = r->json;
    if (!has_id(j, "entity") || !has_string(j, "kind")) {
        return false;
    }
    if (x->json) {
        return true;
    }
    const char* kind = str(j, "kind");
    printf("entity %.0f: %s\n", num(j, "entity"), kind);
    const cJSON* bones = cJSON_GetObjectItemCaseSensitive(j, "bones");
    if (cJSON_IsArray(bones)) {
        printf("skeleton %s, solver %s, state %s, clip %s, %d bones:\n", str(j, "skeleton"),
               has_string(j, "solver") ? str(j, "solver") : "maximal", str(j, "state"),
               str(j, "clip"), cJSON_GetArraySize(bones));
        const cJSON* b;
        cJSON_ArrayForEach(b, bones) {
            const cJSON* joint = cJSON_GetObjectItemCaseSensitive(b, "joint");
            const cJSON* cap = cJSON_GetObjectItemCaseSensitive(b, "capsule");
            printf("  %-14s parent %-14s %5.2f kg  capsule r %.3f m, half length %.3f m  %s\n",
                   str(b, "name"),
                   cJSON_IsString(cJSON_GetObjectItemCaseSensitive(b, "parent")) ? str(b, "parent")
                                                                                 : "-",
                   num(b, "mass"), num(cap, "radius"), num(cap, "half_length"),
                   joint != NULL ? str(joint, "type") : "root");
        }
        return true;
    }
    if (strcmp(kind, "ball") == 0) {
        printf("radius %g m\n", num(j, "radius"));
        return true;
    }
    const cJSON* pinned = cJSON_GetObjectItemCaseSensitive(j, "pinned");
    printf("%.0f particles, %d sticks, %d pinned", num(j, "particle_count"),
           cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(j, "sticks")),
           cJSON_GetArraySize(pinned));
    if (cJSON_GetObjectItemCaseSensitive(j, "cols") != NULL) {
        printf(", grid %.0f x %.0f", num(j, "cols"), num(j, "rows"));
    }
    printf("\n");
    if (has_string(j, "garment")) {
        printf("%s worn by entity %.0f\n", str(j, "garment"), num(j, "wearer"));
    }
    if (cJSON_GetObjectItemCaseSensitive(j, "tear") != NULL) { // a rope or cloth
        const double tear = num(j, "tear");
        printf("tears %s", tear > 0 ? "past" : "never");
        if (tear > 0) {
            printf(" %g x rest length", tear);
        }
        printf(", long-range attachments %s",
               cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "long_range")) ? "on" : "off");
        if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "self_collision"))) {
            printf(", self-collision %g m apart", num(j, "thickness"));
        } else if (cJSON_GetObjectItemCaseSensitive(j, "self_collision") != NULL) {
            printf(", self-collision off");
        }
        printf("\n");
    }
    if (has_string(j, "lod")) {
        printf("level of detail: %s\n", str(j, "lod"));
    }
    return true;
}

// ---------------------------------------------------------------------------
// The table
// ---------------------------------------------------------------------------

#define WORLD_POS                                                                                  \
    { "WORLD", "world", A_ID, true }
#define ENTITY_POS                                                                                 \
    { "ENTITY", "entity", A_ID, true }

static void start_simple(ctl* x) {
    ctl_send_request(x);
}

#define SIMPLE(name_, synopsis_, help_, op_, ...)                                                  \
    {                                                                                              \
        .base = {.name = name_,                                                                    \
                 .synopsis = synopsis_,                                                            \
                 .help = help_,                                                                    \
                 .parse = parse_table,                                                             \
                 .start = start_simple},                                                           \
        .op = op_, __VA_ARGS__                                                                     \
    }

static const simple_cmd cmd_list =
    SIMPLE("list", "", "Lists the server's worlds: id, name, tick, tick rate, entities, solver.\n",
           "list_worlds", .print_ok = print_list);

static const simple_cmd cmd_create =
    SIMPLE("create", "NAME [--tick-hz N] [--solver xpbd|soft_step] [--template T]",
           "Creates a world and prints its id and rigid-body solver.\n\n"
           "  --tick-hz N   simulation steps per second, 1-240 (60)\n"
           "  --solver S    rigid-body solver, xpbd or soft_step (the server's default,\n"
           "                ragdolld --world-solver); the server refuses any other\n"
           "  --template T  made from the server's world template T: its boxes and\n"
           "                entities (templates/README.md)\n",
           "create_world", .pos = {{"NAME", "name", A_STR, true}},
           .opts = {{"tick-hz", "tick_hz", A_UINT, false},
                    {"solver", "solver", A_STR, false},
                    {"template", "template", A_STR, false}},
           .print_ok = print_world);

static const simple_cmd cmd_box = SIMPLE(
    "box", "WORLD --center X,Y,Z --half-extents X,Y,Z",
    "Adds a static box to a world's level (admin): its centre and half extents in\n"
    "metres, Y up. Subscribers see it at once (the statics event).\n",
    "add_box", .pos = {WORLD_POS},
    .opts = {{"center", "center", A_VEC3, true}, {"half-extents", "half_extents", A_VEC3, true}},
    .print_ok = print_tick);

static const simple_cmd cmd_destroy =
    SIMPLE("destroy", "WORLD", "Destroys a world and everything in it.\n", "destroy_world",
           .pos = {WORLD_POS}, .print_ok = print_tick);

static const simple_cmd cmd_save =
    SIMPLE("save", "WORLD",
           "Saves a world's state file now (admin; the server needs --state-dir) and\n"
           "prints its tick, size and path on the server. `ragdolld --replay FILE`\n"
           "steps it offline (README, \"Durable worlds\").\n",
           "save_world", .pos = {WORLD_POS}, .print_ok = print_saved);

static const simple_cmd spawn_rope =
    SIMPLE("spawn", "rope WORLD --anchor X,Y,Z --segments N --segment-length M [--mass KG]", "",
           "spawn_rope", .pos = {WORLD_POS},
           .opts = {{"anchor", "anchor", A_VEC3, true},
                    {"segments", "segments", A_UINT, true},
                    {"segment-length", "segment_length", A_NUM, true},
                    {"mass", "mass", A_NUM, false}},
           .print_ok = print_entity);

static const simple_cmd spawn_cloth =
    SIMPLE("spawn",
           "cloth WORLD --origin X,Y,Z --cols N --rows N --spacing M [--pin top|left|none]\n"
           "              [--mass KG] [--across X,Y,Z] [--down X,Y,Z] [--self-collision on|off]\n"
           "              [--thickness M] [--stretch-compliance C] [--shear-compliance C]\n"
           "              [--bend-compliance C] [--long-range on|off] [--tear R]",
           "", "spawn_cloth", .pos = {WORLD_POS},
           .opts = {{"origin", "origin", A_VEC3, true},
                    {"cols", "cols", A_UINT, true},
                    {"rows", "rows", A_UINT, true},
                    {"spacing", "spacing", A_NUM, true},
                    {"pin", "pin", A_STR, false},
                    {"mass", "mass", A_NUM, false},
                    {"across", "across", A_VEC3, false},
                    {"down", "down", A_VEC3, false},
                    {"self-collision", "self_collision", A_BOOL, false},
                    {"thickness", "thickness", A_NUM, false},
                    {"stretch-compliance", "stretch_compliance", A_NUM, false},
                    {"shear-compliance", "shear_compliance", A_NUM, false},
                    {"bend-compliance", "bend_compliance", A_NUM, false},
                    {"long-range", "long_range", A_BOOL, false},
                    {"tear", "tear", A_NUM, false}},
           .print_ok = print_entity);

static const simple_cmd spawn_ragdoll =
    SIMPLE("spawn", "ragdoll WORLD --position X,Y,Z [--facing RAD] [--mass KG]", "",
           "spawn_ragdoll", .pos = {WORLD_POS},
           .opts = {{"position", "position", A_VEC3, true},
                    {"facing", "facing", A_NUM, false},
                    {"mass", "mass", A_NUM, false}},
           .print_ok = print_entity);

static const simple_cmd spawn_character =
    SIMPLE("spawn",
           "character WORLD --position X,Y,Z [--facing RAD] [--skeleton NAME] [--clip NAME] "
           "[--solver maximal|reduced] [--state animated|ragdoll]",
           "", "spawn_character", .pos = {WORLD_POS},
           .opts = {{"position", "position", A_VEC3, true},
                    {"facing", "facing", A_NUM, false},
                    {"skeleton", "skeleton", A_STR, false},
                    {"clip", "clip", A_STR, false},
                    {"solver", "solver", A_STR, false},
                    {"state", "state", A_STR, false}},
           .print_ok = print_entity);

static const simple_cmd spawn_ball =
    SIMPLE("spawn", "ball WORLD --position X,Y,Z [--velocity X,Y,Z] [--radius M] [--mass KG]", "",
           "spawn_ball", .pos = {WORLD_POS},
           .opts = {{"position", "position", A_VEC3, true},
                    {"velocity", "velocity", A_VEC3, false},
                    {"radius", "radius", A_NUM, false},
                    {"mass", "mass", A_NUM, false}},
           .print_ok = print_entity);

static const simple_cmd spawn_softbody =
    SIMPLE("spawn",
           "softbody WORLD --position X,Y,Z --shape box|sphere --size M [--resolution N] "
           "[--stiffness S] [--pressure P] [--mass KG]",
           "", "spawn_softbody", .pos = {WORLD_POS},
           .opts = {{"position", "position", A_VEC3, true},
                    {"shape", "shape", A_STR, true},
                    {"size", "size", A_NUM, true},
                    {"resolution", "resolution", A_UINT, false},
                    {"stiffness", "stiffness", A_NUM, false},
                    {"pressure", "pressure", A_NUM, false},
                    {"mass", "mass", A_NUM, false}},
           .print_ok = print_entity);

static const simple_cmd* const spawn_kinds[] = {&spawn_rope,      &spawn_ragdoll, &spawn_cloth,
                                                &spawn_character, &spawn_ball,    &spawn_softbody};

static int parse_spawn(ctl* x, int argc, char** argv) {
    if (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        ctl_help(x->cmd);
        x->finished = true;
        return CTL_OK;
    }
    if (argc < 2) {
        return ctl_usage(x->cmd, "what to spawn is missing");
    }
    for (size_t i = 0; i < sizeof spawn_kinds / sizeof spawn_kinds[0]; ++i) {
        const simple_cmd* k = spawn_kinds[i];
        if (strncmp(k->base.synopsis, argv[1], strlen(argv[1])) == 0 &&
            k->base.synopsis[strlen(argv[1])] == ' ') {
            return parse_simple(x, k, argc - 1, argv + 1);
        }
    }
    return ctl_usage(x->cmd, "cannot spawn \"%s\"", argv[1]);
}

static const ctl_cmd cmd_spawn = {
    .name = "spawn",
    .synopsis = "rope|cloth|ragdoll|character|ball|softbody WORLD OPTIONS...",
    .help = "Spawns an entity and prints its id.\n\n"
            "  spawn rope WORLD --anchor X,Y,Z --segments N --segment-length M [--mass KG]\n"
            "      a chain of N+1 particles along +X from the anchor, the first pinned\n"
            "  spawn cloth WORLD --origin X,Y,Z --cols N --rows N --spacing M\n"
            "              [--pin top|left|none] [--mass KG] [--across X,Y,Z] [--down X,Y,Z]\n"
            "              [--self-collision on|off] [--thickness M] [--stretch-compliance C]\n"
            "              [--shear-compliance C] [--bend-compliance C] [--long-range on|off]\n"
            "              [--tear R]\n"
            "      a grid from its top-left corner, columns along --across (+X), rows along\n"
            "      --down (-Y); compliances in m/N; --tear R: its sticks break past R times\n"
            "      their rest length (0: never)\n"
            "  spawn ragdoll WORLD --position X,Y,Z [--facing RAD] [--mass KG]\n"
            "      a 16-particle ragdoll, pelvis at the position\n"
            "  spawn character WORLD --position X,Y,Z [--facing RAD] [--skeleton NAME]\n"
            "              [--clip NAME] [--solver maximal|reduced] [--state animated|ragdoll]\n"
            "      a rigid-body character standing on the position (humanoid, idle); its\n"
            "      solver as a ragdoll: bodies and joints (maximal) or one articulation\n"
            "      (reduced), the skeleton's when not given; --state ragdoll: limp from\n"
            "      the start (with the skeleton's motors, if it has any)\n"
            "  spawn ball WORLD --position X,Y,Z [--velocity X,Y,Z] [--radius M] [--mass KG]\n"
            "      a rigid ball (a projectile)\n"
            "  spawn softbody WORLD --position X,Y,Z --shape box|sphere --size M\n"
            "              [--resolution N] [--stiffness S] [--pressure P] [--mass KG]\n"
            "      a lattice of particles held by shape matching, centred on the position\n\n"
            "Values are checked by the server (PROTOCOL.md section 3 gives the ranges).\n",
    .parse = parse_spawn,
    .start = start_simple,
};

static const simple_cmd cmd_attach = SIMPLE(
    "attach",
    "WORLD ENTITY --kind cape|skirt|hair [--cols N] [--rows N] [--mass KG]\n"
    "                  [--long-range on|off] [--stretch-compliance C] [--bend-compliance C]\n"
    "                  [--tear R]",
    "Dresses a character in one of its skeleton's garments (a cape across the\n"
    "shoulders, a skirt around the pelvis, hair on the head), pinned to its bones,\n"
    "and prints the garment's entity id. Sizes and mass default to the skeleton's;\n"
    "--long-range (on by default) keeps a cape from stretching when the wearer runs;\n"
    "--tear R lets it tear past R times its rest lengths. Despawning the character\n"
    "removes its garments.\n",
    "attach_cloth", .pos = {WORLD_POS, ENTITY_POS},
    .opts = {{"kind", "kind", A_STR, true},
             {"cols", "cols", A_UINT, false},
             {"rows", "rows", A_UINT, false},
             {"mass", "mass", A_NUM, false},
             {"long-range", "long_range", A_BOOL, false},
             {"stretch-compliance", "stretch_compliance", A_NUM, false},
             {"bend-compliance", "bend_compliance", A_NUM, false},
             {"tear", "tear", A_NUM, false}},
    .print_ok = print_entity);

static const simple_cmd cmd_tear =
    SIMPLE("tear", "WORLD ENTITY --ratio R",
           "Sets the stretch past which a rope's or cloth's sticks break: R times their rest\n"
           "length, 1.01-100, or 0 for never. Each tear is a \"torn\" event (watch shows it).\n",
           "set_tear", .pos = {WORLD_POS, ENTITY_POS}, .opts = {{"ratio", "ratio", A_NUM, true}},
           .print_ok = print_tick);

static const simple_cmd cmd_despawn =
    SIMPLE("despawn", "WORLD ENTITY", "Removes an entity.\n", "despawn",
           .pos = {WORLD_POS, ENTITY_POS}, .print_ok = print_tick);

static const simple_cmd cmd_describe =
    SIMPLE("describe", "WORLD ENTITY",
           "Describes an entity: its kind and topology; a character's skeleton, state, clip\n"
           "and bones. --json prints the whole reply (joints, frames, limits).\n",
           "describe", .pos = {WORLD_POS, ENTITY_POS}, .print_ok = print_describe);

static const simple_cmd cmd_kill =
    SIMPLE("kill", "WORLD ENTITY --hit-point X,Y,Z --impulse X,Y,Z [--bone NAME] [--seen-tick T]",
           "Kills a character: it becomes a ragdoll, and the impulse (N s) is applied to the bone\n"
           "nearest the hit point (m), which is printed.\n\n"
           "  --bone NAME     that bone instead of the nearest\n"
           "  --seen-tick T   judge the hit point at tick T, the snapshot it was aimed at (lag\n"
           "                  compensation): the nearest bone then, the point carried to now\n",
           "kill", .pos = {WORLD_POS, ENTITY_POS},
           .opts = {{"hit-point", "hit_point", A_VEC3, true},
                    {"impulse", "impulse", A_VEC3, true},
                    {"bone", "bone", A_STR, false},
                    {"seen-tick", "seen_tick", A_TICK, false}},
           .print_ok = print_bone);

static const simple_cmd cmd_raycast =
    SIMPLE("raycast", "WORLD --origin X,Y,Z --direction X,Y,Z [--max-distance M] [--seen-tick T]",
           "Casts a ray and prints the first thing it enters: the ground, a box, a bone (of a\n"
           "character), a ball or a particle, with the point (m), the normal and the distance\n"
           "(m); or \"nothing\". It changes nothing.\n\n"
           "  --max-distance M  how far, (0, 4000] m (1000)\n"
           "  --seen-tick T     judge bones and balls where they were at tick T (lag\n"
           "                    compensation; the server keeps --lag-history ms)\n",
           "raycast", .pos = {WORLD_POS},
           .opts = {{"origin", "origin", A_VEC3, true},
                    {"direction", "direction", A_VEC3, true},
                    {"max-distance", "max_distance", A_NUM, false},
                    {"seen-tick", "seen_tick", A_TICK, false}},
           .print_ok = print_hit);

static const simple_cmd cmd_getup =
    SIMPLE("getup", "WORLD ENTITY [--blend-time S]",
           "Gets a ragdoll character up; prints the clip chosen (getup_front or getup_back).\n\n"
           "  --blend-time S   blend from the lying pose into the clip, 0-5 s (0.4)\n",
           "start_getup", .pos = {WORLD_POS, ENTITY_POS},
           .opts = {{"blend-time", "blend_time", A_NUM, false}}, .print_ok = print_clip);

static const simple_cmd cmd_drive =
    SIMPLE("drive", "WORLD ENTITY --kp KP --kd KD [--bones NAME,...] [--ramp-time S]",
           "Gives a character's dynamic bones muscle toward the animation (active ragdoll):\n"
           "torque = kp (target - angle) - kd (angular speed). kp = kd = 0 is limp.\n\n"
           "  --kp KP            stiffness, N m/rad\n"
           "  --kd KD            damping, N m s/rad\n"
           "  --bones NAME,...   only these bones (default all)\n"
           "  --ramp-time S      reach the new gains over S seconds (0)\n",
           "set_drive", .pos = {WORLD_POS, ENTITY_POS},
           .opts = {{"kp", "kp", A_NUM, true},
                    {"kd", "kd", A_NUM, true},
                    {"bones", "bones", A_NAMES, false},
                    {"ramp-time", "ramp_time", A_NUM, false}},
           .print_ok = print_tick);

static const simple_cmd cmd_partial =
    SIMPLE("partial", "WORLD ENTITY [BONE...]",
           "Makes the named bones (and their children) physical while the rest animates;\n"
           "no bones ends it.\n",
           "set_partial", .pos = {WORLD_POS, ENTITY_POS, {"BONE", "bones", A_NAMES, false}},
           .print_ok = print_tick);

static const simple_cmd cmd_play =
    SIMPLE("play", "WORLD ENTITY CLIP", "Switches a character's animation clip.\n", "play",
           .pos = {WORLD_POS, ENTITY_POS, {"CLIP", "clip", A_STR, true}}, .print_ok = print_tick);

static const simple_cmd cmd_impulse =
    SIMPLE("impulse",
           "WORLD ENTITY --impulse X,Y,Z [--particle N | --bone NAME [--point X,Y,Z]] "
           "[--seen-tick T]",
           "Applies an impulse (N s): to a particle of a rope, cloth or ragdoll (--particle), to\n"
           "a bone of a character (--bone, at --point or its centre), or to a ball.\n"
           "--seen-tick T takes --point as it was on the bone at tick T (lag compensation).\n",
           "apply_impulse", .pos = {WORLD_POS, ENTITY_POS},
           .opts = {{"impulse", "impulse", A_VEC3, true},
                    {"particle", "particle", A_UINT, false},
                    {"bone", "bone", A_STR, false},
                    {"point", "point", A_VEC3, false},
                    {"seen-tick", "seen_tick", A_TICK, false}},
           .print_ok = print_tick_seen);

static const simple_cmd cmd_release = SIMPLE(
    "release", "WORLD ENTITY PARTICLE", "Releases a dragged particle.\n", "release",
    .pos = {WORLD_POS, ENTITY_POS, {"PARTICLE", "particle", A_UINT, true}}, .print_ok = print_tick);

// drag holds the particle while ragdollctl runs: the server releases what a
// client drags when it disconnects.
typedef struct drag_state {
    uv_timer_t timer;
    bool timer_open;
} drag_state;

static void drag_free(void* p) {
    free(p);
}

static void on_drag_timer_closed(uv_handle_t* h) {
    (void)h;
}

static void drag_stop(ctl* x) {
    drag_state* d = x->sub;
    if (d->timer_open) {
        d->timer_open = false;
        uv_close((uv_handle_t*)&d->timer, on_drag_timer_closed);
    }
}

static void on_drag_timer(uv_timer_t* t) {
    ctl* x = t->data;
    drag_stop(x);
    ctl_finish(x, CTL_OK); // disconnecting releases the particle
}

static void on_drag_reply(rdc_client* c, const rdc_reply* r, void* arg) {
    ctl* x = arg;
    if (r->status != 0) {
        drag_stop(x);
        ctl_on_reply(c, r, arg);
        return;
    }
    if (x->json) {
        printf("%.*s\n", (int)r->len, r->text);
    } else if (x->seconds > 0) {
        printf("dragging; released in %g s (or on Ctrl-C)\n", x->seconds);
    } else {
        printf("dragging; Ctrl-C releases\n");
    }
    fflush(stdout);
    drag_state* d = x->sub;
    if (x->seconds > 0) {
        uv_timer_start(&d->timer, on_drag_timer, ctl_seconds_to_ms(x->seconds), 0);
    }
}

static void start_drag(ctl* x) {
    drag_state* d = x->sub;
    uv_timer_init(x->loop, &d->timer);
    d->timer.data = x;
    d->timer_open = true;
    x->stop = drag_stop;
    int rc = rdc_send(x->c, x->request, on_drag_reply, x, NULL);
    if (rc != 0) {
        drag_stop(x);
        fprintf(stderr, "ragdollctl: cannot send: %s\n", rdc_strerror(rc));
        ctl_finish(x, CTL_CONNECTION);
    }
}

static int parse_drag(ctl* x, int argc, char** argv);

static const simple_cmd cmd_drag = {
    .base = {.name = "drag",
             .synopsis = "WORLD ENTITY PARTICLE --target X,Y,Z [--seconds S]",
             .help = "Drags a particle toward the target and holds it until Ctrl-C or --seconds\n"
                     "S have passed: the server releases a client's drags when it disconnects.\n",
             .parse = parse_drag,
             .start = start_drag,
             .stops_on_signal = true},
    .op = "drag",
    .pos = {WORLD_POS, ENTITY_POS, {"PARTICLE", "particle", A_UINT, true}},
    .opts = {{"target", "target", A_VEC3, true}, {"seconds", NULL, A_SECONDS, false}},
    .print_ok = print_tick,
};

static int parse_drag(ctl* x, int argc, char** argv) {
    int rc = parse_simple(x, &cmd_drag, argc, argv);
    if (rc == 0 && !x->finished) {
        x->sub = calloc(1, sizeof(drag_state));
        x->sub_free = drag_free;
        if (x->sub == NULL) {
            return CTL_USAGE;
        }
    }
    return rc;
}

// params get WORLD: there is no command that only reads parameters; a
// subscription's reply carries them (and ending the connection ends it).
static const simple_cmd params_get =
    SIMPLE("params", "get WORLD", "", "subscribe", .pos = {WORLD_POS}, .print_ok = print_params);

static const simple_cmd params_set =
    SIMPLE("params",
           "set WORLD [--gravity X,Y,Z] [--damping D] [--iterations N] [--substeps N]\n"
           "                  [--bounciness B] [--friction F] [--wind X,Y,Z] [--gust G]\n"
           "                  [--gust-period S] [--air-density RHO] [--drag-coef C]\n"
           "                  [--lift-coef C]",
           "", "set_params", .pos = {WORLD_POS},
           .opts = {{"gravity", "gravity", A_VEC3, false},
                    {"damping", "damping", A_NUM, false},
                    {"iterations", "iterations", A_UINT, false},
                    {"substeps", "substeps", A_UINT, false},
                    {"bounciness", "bounciness", A_NUM, false},
                    {"friction", "friction", A_NUM, false},
                    {"wind", "wind", A_VEC3, false},
                    {"gust", "gust", A_NUM, false},
                    {"gust-period", "gust_period", A_NUM, false},
                    {"air-density", "air_density", A_NUM, false},
                    {"drag-coef", "drag_coef", A_NUM, false},
                    {"lift-coef", "lift_coef", A_NUM, false}},
           .print_ok = print_params);

static int parse_params(ctl* x, int argc, char** argv) {
    if (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        ctl_help(x->cmd);
        x->finished = true;
        return CTL_OK;
    }
    if (argc < 2 || (strcmp(argv[1], "get") != 0 && strcmp(argv[1], "set") != 0)) {
        return ctl_usage(x->cmd, "params wants get or set");
    }
    bool get = strcmp(argv[1], "get") == 0;
    int rc = parse_simple(x, get ? &params_get : &params_set, argc - 1, argv + 1);
    if (rc != 0 || x->finished) {
        return rc;
    }
    if (get) {
        cJSON_AddNumberToObject(x->request, "rate_hz", 1);
    } else if (cJSON_GetArraySize(x->request) <= 2) {
        return ctl_usage(x->cmd, "set wants at least one parameter");
    }
    return 0;
}

// fetch WORLD FILE: save_world with "fetch": the state file comes back in
// the reply (base64), written to FILE.
static const simple_cmd fetch_save =
    SIMPLE("fetch", "WORLD FILE", "", "save_world", .pos = {WORLD_POS});

static bool print_fetched(ctl* x, const rdc_reply* r) {
    const cJSON* state = cJSON_GetObjectItem(r->json, "state");
    const char* path = x->sub;
    if (!cJSON_IsString(state)) {
        return false;
    }
    const size_t n = strlen(state->valuestring);
    uint8_t* bytes = malloc(BASE64_DECODE_LENGTH(n) + 1);
    struct base64_decode_ctx dc;
    size_t len = BASE64_DECODE_LENGTH(n);
    base64_decode_init(&dc);
    if (bytes == NULL || !base64_decode_update(&dc, &len, bytes, n, state->valuestring) ||
        !base64_decode_final(&dc)) {
        free(bytes);
        return false;
    }
    const bool to_stdout = strcmp(path, "-") == 0;
    errno = 0;
    FILE* f = to_stdout ? stdout : fopen(path, "wb");
    bool ok = f != NULL && fwrite(bytes, 1, len, f) == len;
    int err = ok ? 0 : errno;
    if (f != NULL && (to_stdout ? fflush(f) : fclose(f)) != 0) {
        ok = false;
        err = err != 0 ? err : errno;
    }
    if (!ok && to_stdout && err == EPIPE) {
        free(bytes); // the reader had what it wanted (| head): not a failure
        x->reader_gone = true;
        ctl_finish(x, CTL_OK);
        return true;
    }
    if (!ok) {
        fprintf(stderr, "ragdollctl fetch: cannot write %s: %s\n", to_stdout ? "to stdout" : path,
                strerror(err != 0 ? err : EIO));
        free(bytes);
        ctl_finish(x, CTL_OUTPUT); // the reply was fine: the exit code says where it failed
        return true;
    }
    free(bytes);
    if (!x->json && !to_stdout) {
        printf("tick %llu: %zu bytes written to %s\n", (unsigned long long)r->tick, len, path);
    }
    return true;
}

static int parse_fetch(ctl* x, int argc, char** argv) {
    if (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        ctl_help(x->cmd);
        x->finished = true;
        return CTL_OK;
    }
    if (argc != 3) {
        return ctl_usage(x->cmd, "fetch wants WORLD and FILE");
    }
    int rc = parse_simple(x, &fetch_save, 2, argv);
    if (rc != 0 || x->finished) {
        return rc;
    }
    cJSON_AddTrueToObject(x->request, "fetch");
    x->sub = strdup(argv[2]);
    x->sub_free = free;
    x->print_ok = print_fetched;
    return x->sub != NULL ? 0 : CTL_USAGE;
}

static const ctl_cmd cmd_fetch = {
    .name = "fetch",
    .synopsis = "WORLD FILE",
    .help = "Saves a world's state file (admin; the server needs --state-dir) and writes\n"
            "a copy to FILE here (- for standard output): for a bug report,\n"
            "`ragdolld --replay FILE` steps it offline (README, \"Durable worlds\").\n",
    .parse = parse_fetch,
    .start = start_simple,
};

static const ctl_cmd cmd_params = {
    .name = "params",
    .synopsis = "get WORLD | set WORLD [--gravity X,Y,Z] [--damping D] ...",
    .help = "Reads or changes a world's parameters.\n\n"
            "  params get WORLD\n"
            "  params set WORLD [--gravity X,Y,Z] [--damping D] [--iterations N]\n"
            "                   [--substeps N] [--bounciness B] [--friction F]\n"
            "                   [--wind X,Y,Z] [--gust G] [--gust-period S]\n"
            "                   [--air-density RHO] [--drag-coef C] [--lift-coef C]\n\n"
            "  --gravity X,Y,Z  m/s^2            --damping D     velocity kept per substep, 0-1\n"
            "  --iterations N   solver passes    --substeps N    substeps per tick\n"
            "  --bounciness B   0-1              --friction F    0-1\n"
            "  --wind X,Y,Z     m/s              --gust G        0-1, wind x (1 + G s(t))\n"
            "  --gust-period S  s                --air-density   kg/m^3 (0: no air)\n"
            "  --drag-coef C    0-10             --lift-coef C   0-10\n\n"
            "set changes only what is given, and prints the parameters after the change.\n",
    .parse = parse_params,
    .start = start_simple,
};

const ctl_cmd* const ctl_commands[] = {
    &cmd_list.base,    &cmd_create.base, &cmd_destroy.base, &cmd_box.base,      &cmd_save.base,
    &cmd_fetch,        &cmd_spawn,       &cmd_despawn.base, &cmd_describe.base, &cmd_kill.base,
    &cmd_raycast.base, &cmd_getup.base,  &cmd_attach.base,  &cmd_tear.base,     &cmd_drive.base,
    &cmd_partial.base, &cmd_play.base,   &cmd_impulse.base, &cmd_drag.base,     &cmd_release.base,
    &cmd_params,       &ctl_cmd_watch,   &ctl_cmd_record,   &ctl_cmd_replay,    NULL,
};
