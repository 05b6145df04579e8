/*
 * json_snapshot.c: JSON snapshots (PROTOCOL.md §5.1), written straight into
 * a growable buffer. A world encodes one every tick it has JSON subscribers,
 * so this is the hot path of JSON streaming; replies, events and describe
 * stay on cJSON in json.c.
 *
 * The text is byte for byte what cJSON printed for the same snapshot (the
 * old encoder is kept in protocol/ref/ as the tests' reference). Values are
 * rounded to a power of ten before printing: r = round(x · 10^d) and the
 * value is r / 10^d (d = 4 for positions and sizes, 5 for quaternions, ...).
 * cJSON printed that double with "%1.15g" (then checked it by reading it
 * back). When |r| < 10^15, the double is the one nearest the decimal
 * D = r · 10^-d, which has at most 15 significant digits, so "%.15g" prints
 * D back (that is what DBL_DIG = 15 means), in positional notation when
 * |D| ≥ 10^-4, trailing zeros trimmed, and the check passes. The
 * fixed-point printer below writes exactly that from the integer r, with
 * no libc call. Everything else (0 < |D| < 10^-4, |r| near 10^15 or more,
 * NaN, infinities) goes through put_general(), which is cJSON's printer.
 *
 * Owns nothing but the buffer it is given (rdp_buf, the caller's, reused).
 */
#include "rdp.h"

#include <cJSON.h>

#include <float.h>
#include <locale.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

void rdp_buf_free(rdp_buf* b) {
    if (b == NULL) {
        return;
    }
    cJSON_free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

// The longest number either printer writes: cJSON prints into 26 bytes
// with the NUL ("-2.2250738585072014e-308" is 24).
#define NUM_MAX 26

// A writer over an rdp_buf: p is the next byte, end leaves room for the NUL.
typedef struct jw {
    rdp_buf* b;
    char* p;
    char* end;
} jw;

// Grows the buffer to hold `need` more bytes (at least doubling it).
// Allocates with cJSON's allocator so rdp_snapshot_json() can hand the
// buffer out as its result.
static bool jw_grow(jw* w, size_t need) {
    size_t used = (size_t)(w->p - w->b->data);
    size_t cap = 2 * w->b->cap;
    if (cap < used + need + 1) {
        cap = used + need + 1;
    }
    char* d = cJSON_malloc(cap);
    if (d == NULL) {
        return false;
    }
    memcpy(d, w->b->data, used);
    cJSON_free(w->b->data);
    w->b->data = d;
    w->b->cap = cap;
    w->p = d + used;
    w->end = d + cap - 1;
    return true;
}

static inline bool jw_reserve(jw* w, size_t n) {
    return (size_t)(w->end - w->p) >= n || jw_grow(w, n);
}

// Copies a string literal (keys with their quotes and colon, brackets).
#define PUT_LIT(p, s) (memcpy((p), (s), sizeof(s) - 1), (p) += sizeof(s) - 1)

// Writes u in decimal.
static inline char* put_u64(char* p, uint64_t u) {
    char tmp[20];
    int n = 0;
    do {
        tmp[n++] = (char)('0' + u % 10);
        u /= 10;
    } while (u != 0);
    while (n > 0) {
        *p++ = tmp[--n];
    }
    return p;
}

// "00" to "99", two characters at a time.
static const char digit_pairs[201] = "00010203040506070809101112131415161718192021222324"
                                     "25262728293031323334353637383940414243444546474849"
                                     "50515253545556575859606162636465666768697071727374"
                                     "75767778798081828384858687888990919293949596979899";

// Writes u in decimal, the one- and two-digit integer parts of coordinates
// without a loop.
static inline char* put_uint(char* p, uint64_t u) {
    if (u < 10) {
        *p++ = (char)('0' + u);
        return p;
    }
    if (u < 100) {
        memcpy(p, digit_pairs + 2 * u, 2);
        return p + 2;
    }
    return put_u64(p, u);
}

// Writes the `dec` digits of frac < 10^dec, leading zeros included.
static inline void put_digits(char* p, uint32_t frac, int dec) {
    for (int i = dec; i >= 2; i -= 2) {
        memcpy(p + i - 2, digit_pairs + 2 * (frac % 100), 2);
        frac /= 100;
    }
    if (dec % 2 != 0) {
        p[0] = (char)('0' + frac);
    }
}

static const double pow10d[7] = {1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6};
static const uint64_t pow10u[7] = {1, 10, 100, 1000, 10000, 100000, 1000000};
// The smallest |r| for which r · 10^-d ≥ 10^-4, where %g stops using an
// exponent.
static const uint64_t min_fixed[7] = {1, 1, 1, 1, 1, 10, 100};

// cJSON 1.7.15's print_number(), for what the fixed-point printer does not
// cover: the same "%1.15g", the same read-back check and "%1.17g" fallback,
// the same "null" for NaN and infinities.
__attribute__((cold, noinline)) static char* put_general(char* p, double d) {
    char buf[NUM_MAX];
    int n;
    if (isnan(d) || isinf(d)) {
        n = snprintf(buf, sizeof buf, "null");
    } else {
        n = snprintf(buf, sizeof buf, "%1.15g", d);
        double test = 0.0;
        bool read = sscanf(buf, "%lg", &test) == 1;
        // cJSON's compare_double(): equal within a relative DBL_EPSILON.
        double max = fabs(test) > fabs(d) ? fabs(test) : fabs(d);
        if (!read || !(fabs(test - d) <= max * DBL_EPSILON)) {
            n = snprintf(buf, sizeof buf, "%1.17g", d);
        }
    }
    if (n < 0 || n >= (int)sizeof buf) {
        n = snprintf(buf, sizeof buf, "null");
    }
    // cJSON prints in the C library's locale and swaps its decimal point for '.'.
    char point = localeconv()->decimal_point[0];
    for (int i = 0; i < n; ++i) {
        *p++ = buf[i] == point ? '.' : buf[i];
    }
    return p;
}

// round(y), half away from zero, for |y| < 2^52 and without a libm call:
// there y - trunc(y) is exact (both are within a factor of two of each
// other, or trunc(y) is 0), so the comparisons with 0.5 are too.
static inline int64_t round_int(double y) {
    int64_t k = (int64_t)y;
    double f = y - (double)k;
    // Branch-free: the fraction's side of 0.5 is a coin toss.
    return k + (f >= 0.5) - (f <= -0.5);
}

// Writes round(x · 10^dec) / 10^dec as cJSON printed it (see the top of the
// file), for dec in [3, 6]. Always inlined: with dec a constant the
// divisions become multiplications and the digit loops unroll.
__attribute__((always_inline)) static inline char* put_rounded(char* p, double x, int dec) {
    double y = x * pow10d[dec];
    // |round(y)| < 10^15: at most 15 digits. False for NaN.
    if (y > -999999999999999.0 && y < 999999999999999.0) {
        int64_t k = round_int(y);
        uint64_t u = k < 0 ? (uint64_t)-k : (uint64_t)k;
        if (u == 0) {
            // round() keeps the sign of a y in (-0.5, 0], and cJSON printed
            // -0 as "-0".
            if (signbit(y)) {
                *p++ = '-';
            }
            *p++ = '0';
            return p;
        }
        if (u >= min_fixed[dec]) {
            *p = '-';
            p += k < 0;
            uint32_t frac = (uint32_t)(u % pow10u[dec]);
            p = put_uint(p, u / pow10u[dec]);
            if (frac != 0) {
                // All dec digits (the reservation covers them), then keep
                // all but the trailing zeros.
                *p++ = '.';
                put_digits(p, frac, dec);
                int n = dec;
                while (p[n - 1] == '0') {
                    n--;
                }
                p += n;
            }
            return p;
        }
    }
    return put_general(p, round(y) / pow10d[dec]);
}

// Positions and sizes, rounded to 0.1 mm.
static inline char* put_mm10(char* p, float v) {
    return put_rounded(p, (double)v, 4);
}

// A JSON string as cJSON escapes it: the two-character escapes, \u00XX
// (lowercase) for the other control characters, every other byte as it is.
static bool put_string(jw* w, const char* s) {
    size_t n = strlen(s);
    if (!jw_reserve(w, 6 * n + 2)) {
        return false;
    }
    static const char hex[] = "0123456789abcdef";
    char* p = w->p;
    *p++ = '"';
    for (const unsigned char* c = (const unsigned char*)s; *c != 0; ++c) {
        unsigned char ch = *c;
        if (ch >= 32 && ch != '"' && ch != '\\') {
            *p++ = (char)ch;
            continue;
        }
        *p++ = '\\';
        switch (ch) {
        case '"':
            *p++ = '"';
            break;
        case '\\':
            *p++ = '\\';
            break;
        case '\b':
            *p++ = 'b';
            break;
        case '\f':
            *p++ = 'f';
            break;
        case '\n':
            *p++ = 'n';
            break;
        case '\r':
            *p++ = 'r';
            break;
        case '\t':
            *p++ = 't';
            break;
        default:
            PUT_LIT(p, "u00");
            *p++ = hex[ch >> 4];
            *p++ = hex[ch & 15];
            break;
        }
    }
    *p++ = '"';
    w->p = p;
    return true;
}

// Writes a literal, reserving room for it.
static bool put_lit(jw* w, const char* s, size_t n) {
    if (!jw_reserve(w, n)) {
        return false;
    }
    memcpy(w->p, s, n);
    w->p += n;
    return true;
}

#define LIT(w, s) put_lit((w), (s), sizeof(s) - 1)

// `,"key":"value"`; a NULL value leaves the member out, as
// cJSON_AddStringToObject() did.
static bool put_string_member(jw* w, const char* key_lit, size_t key_len, const char* v) {
    if (v == NULL) {
        return true;
    }
    return put_lit(w, key_lit, key_len) && put_string(w, v);
}

#define STRING_MEMBER(w, key, v) put_string_member((w), (key), sizeof(key) - 1, (v))

// `,"key":N` for an unsigned integer (ids, ticks and counts, which cJSON
// printed exactly: raw decimal text, or a double below 2^53).
static bool put_uint_member(jw* w, const char* key_lit, size_t key_len, uint64_t v) {
    if (!jw_reserve(w, key_len + 20)) {
        return false;
    }
    memcpy(w->p, key_lit, key_len);
    w->p = put_u64(w->p + key_len, v);
    return true;
}

#define UINT_MEMBER(w, key, v) put_uint_member((w), (key), sizeof(key) - 1, (v))

// "p" (0.1 mm) and "q" (1e-5) of body i: `"p":[x,y,z],"q":[x,y,z,w]`.
static bool put_pose(jw* w, const float* pose) {
    if (!jw_reserve(w, 7 * NUM_MAX + 16)) {
        return false;
    }
    char* p = w->p;
    PUT_LIT(p, "\"p\":[");
    for (int i = 0; i < 3; ++i) {
        if (i > 0) {
            *p++ = ',';
        }
        p = put_mm10(p, pose[i]);
    }
    PUT_LIT(p, "],\"q\":[");
    for (int i = 3; i < 7; ++i) {
        if (i > 3) {
            *p++ = ',';
        }
        p = put_rounded(p, (double)pose[i], 5);
    }
    *p++ = ']';
    w->p = p;
    return true;
}

// A character's "state" and "bones", or a ball's pose.
static bool put_rigid_state(jw* w, const rdp_entity_state* e) {
    if (e->kind == RDP_KIND_BALL) {
        return LIT(w, ",") && put_pose(w, e->pose);
    }
    if (!STRING_MEMBER(w, ",\"state\":", e->state != NULL ? e->state : "unknown") ||
        !LIT(w, ",\"bones\":[")) {
        return false;
    }
    for (uint32_t i = 0; i < e->body_count; ++i) {
        if ((i > 0 && !LIT(w, ",")) || !LIT(w, "{")) {
            return false;
        }
        const char* name = e->bone_names != NULL ? e->bone_names[i] : NULL;
        // Without a name cJSON left the member out, and "p" came first.
        if (name != NULL && !(STRING_MEMBER(w, "\"name\":", name) && LIT(w, ","))) {
            return false;
        }
        if (!put_pose(w, e->pose + 7 * i) || !LIT(w, "}")) {
            return false;
        }
    }
    return LIT(w, "]");
}

static bool put_particles(jw* w, const rdp_entity_state* e) {
    if (!LIT(w, ",\"particles\":[")) {
        return false;
    }
    for (uint32_t i = 0; i < e->particle_count; ++i) {
        if (!jw_reserve(w, 3 * NUM_MAX + 4)) {
            return false;
        }
        const float* v = e->xyz + 3 * (size_t)i;
        char* p = w->p;
        if (i > 0) {
            *p++ = ',';
        }
        *p++ = '[';
        p = put_mm10(p, v[0]);
        *p++ = ',';
        p = put_mm10(p, v[1]);
        *p++ = ',';
        p = put_mm10(p, v[2]);
        *p++ = ']';
        w->p = p;
    }
    return LIT(w, "]");
}

// A rigid entity's topology: its skeleton and [radius, half length] per body.
static bool put_rigid_topology(jw* w, const rdp_entity_state* e) {
    if (!STRING_MEMBER(w, ",\"skeleton\":", e->skeleton) || !LIT(w, ",\"capsules\":[")) {
        return false;
    }
    for (uint32_t i = 0; i < e->body_count; ++i) {
        if (!jw_reserve(w, 2 * NUM_MAX + 4)) {
            return false;
        }
        char* p = w->p;
        if (i > 0) {
            *p++ = ',';
        }
        *p++ = '[';
        p = put_mm10(p, e->body_radius[i]);
        *p++ = ',';
        p = put_mm10(p, e->body_half_length[i]);
        *p++ = ']';
        w->p = p;
    }
    return LIT(w, "]");
}

// The topology members of an entity (PROTOCOL.md §5.1), in the order
// json.c's add_topology() gives them to describe.
static bool put_topology(jw* w, const rdp_entity_state* e) {
    if (rdp_kind_is_rigid(e->kind)) {
        return put_rigid_topology(w, e);
    }
    if (e->names != NULL) {
        if (!LIT(w, ",\"names\":[")) {
            return false;
        }
        // cJSON dropped NULL names from the array.
        bool first = true;
        for (uint32_t i = 0; i < e->particle_count; ++i) {
            if (e->names[i] == NULL) {
                continue;
            }
            if ((!first && !LIT(w, ",")) || !put_string(w, e->names[i])) {
                return false;
            }
            first = false;
        }
        if (!LIT(w, "]")) {
            return false;
        }
    }
    if (e->kind == RDP_KIND_CLOTH &&
        !(UINT_MEMBER(w, ",\"cols\":", e->cols) && UINT_MEMBER(w, ",\"rows\":", e->rows))) {
        return false;
    }
    if (e->kind == RDP_KIND_CLOTH && e->wrap && !LIT(w, ",\"wrap\":true")) {
        return false;
    }
    if (e->garment != NULL && !(LIT(w, ",\"garment\":") && put_string(w, e->garment) &&
                                UINT_MEMBER(w, ",\"wearer\":", e->wearer))) {
        return false;
    }
    if (!LIT(w, ",\"sticks\":[")) {
        return false;
    }
    for (uint32_t k = 0; k < e->stick_count; ++k) {
        if (!jw_reserve(w, 2 * 20 + 4)) {
            return false;
        }
        char* p = w->p;
        if (k > 0) {
            *p++ = ',';
        }
        *p++ = '[';
        p = put_u64(p, e->sticks[2 * (size_t)k]);
        *p++ = ',';
        p = put_u64(p, e->sticks[2 * (size_t)k + 1]);
        *p++ = ']';
        w->p = p;
    }
    if (!LIT(w, "],\"radii\":[")) {
        return false;
    }
    for (uint32_t i = 0; i < e->particle_count; ++i) {
        if (!jw_reserve(w, NUM_MAX + 1)) {
            return false;
        }
        if (i > 0) {
            *w->p++ = ',';
        }
        w->p = put_mm10(w->p, e->radius[i]);
    }
    if (!LIT(w, "],\"pinned\":[")) {
        return false;
    }
    bool first = true;
    for (uint32_t i = 0; i < e->particle_count; ++i) {
        if (e->inv_mass[i] != 0.0f) {
            continue;
        }
        if (!jw_reserve(w, 20 + 1)) {
            return false;
        }
        if (!first) {
            *w->p++ = ',';
        }
        w->p = put_u64(w->p, i);
        first = false;
    }
    return LIT(w, "]");
}

static bool put_metrics(jw* w, const rdp_metrics* m, uint32_t entities) {
    if (!jw_reserve(w, 256 + 2 * NUM_MAX + 5 * 20)) {
        return false;
    }
    char* p = w->p;
    PUT_LIT(p, ",\"metrics\":{\"constraint_error\":");
    p = put_rounded(p, m->constraint_error, 6);
    PUT_LIT(p, ",\"sticks\":");
    p = put_u64(p, m->sticks);
    PUT_LIT(p, ",\"solver_passes\":");
    p = put_u64(p, m->solver_passes);
    PUT_LIT(p, ",\"particles\":");
    p = put_u64(p, m->particles);
    PUT_LIT(p, ",\"entities\":");
    p = put_u64(p, entities);
    PUT_LIT(p, ",\"step_ms\":");
    p = put_rounded(p, m->step_ms, 3);
    PUT_LIT(p, ",\"overruns\":");
    p = put_u64(p, m->overruns);
    PUT_LIT(p, ",\"frozen_entities\":");
    p = put_u64(p, m->frozen_entities);
    PUT_LIT(p, ",\"frozen_particles\":");
    p = put_u64(p, m->frozen_particles);
    PUT_LIT(p, ",\"particle_projections\":");
    p = put_u64(p, m->particle_projections);
    PUT_LIT(p, "}");
    w->p = p;
    return true;
}

// A first guess at the text's size, so a fresh buffer is usually allocated
// once: about 25 bytes per particle, 110 per body, 20 per stick.
static size_t estimate(const rdp_snapshot* s, bool topology) {
    size_t n = 512;
    for (uint32_t k = 0; k < s->entity_count; ++k) {
        const rdp_entity_state* e = &s->entities[k];
        n += 64 + 25 * (size_t)e->particle_count + 110 * (size_t)e->body_count;
        if (topology) {
            n += 10 * (size_t)e->particle_count + 20 * (size_t)e->stick_count +
                 20 * (size_t)e->body_count;
        }
    }
    return n;
}

int rdp_snapshot_json_into(const rdp_snapshot* s, bool topology, rdp_buf* b) {
    jw w = {b, b->data, b->data != NULL ? b->data + b->cap - 1 : NULL};
    if (b->data == NULL) {
        size_t cap = estimate(s, topology);
        b->data = cJSON_malloc(cap);
        if (b->data == NULL) {
            return -1;
        }
        b->cap = cap;
        w.p = b->data;
        w.end = b->data + cap - 1;
    }
    b->len = 0;
    bool ok = LIT(&w, "{\"ev\":\"snapshot\"") && UINT_MEMBER(&w, ",\"world\":", s->world) &&
              UINT_MEMBER(&w, ",\"tick\":", s->tick) && LIT(&w, ",\"entities\":[");
    for (uint32_t k = 0; ok && k < s->entity_count; ++k) {
        const rdp_entity_state* e = &s->entities[k];
        ok = (k == 0 || LIT(&w, ",")) && UINT_MEMBER(&w, "{\"entity\":", e->entity) &&
             STRING_MEMBER(&w, ",\"kind\":", rdp_kind_name(e->kind)) &&
             (rdp_kind_is_rigid(e->kind) ? put_rigid_state(&w, e) : put_particles(&w, e)) &&
             (!topology || put_topology(&w, e)) && LIT(&w, "}");
    }
    ok = ok && LIT(&w, "]") && put_metrics(&w, &s->metrics, s->entity_count) && LIT(&w, "}");
    if (!ok) {
        return -1;
    }
    *w.p = '\0';
    b->len = (size_t)(w.p - b->data);
    return 0;
}

char* rdp_snapshot_json(const rdp_snapshot* s, bool topology, size_t* len) {
    rdp_buf b = {NULL, 0, 0};
    if (rdp_snapshot_json_into(s, topology, &b) != 0) {
        rdp_buf_free(&b);
        return NULL;
    }
    if (len != NULL) {
        *len = b.len;
    }
    return b.data;
}
