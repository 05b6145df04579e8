/*
 * codec.c: binary snapshots, version 3 (PROTOCOL.md §5.2): quantized,
 * delta-coded against a baseline the client acknowledged, entropy-coded
 * with exp-Golomb codes in a bit stream.
 *
 * - Positions are integers of 1/1024 m (error ≤ 0.49 mm); orientations are
 *   "smallest three" quaternions (the largest component dropped, the others
 *   in 12 signed bits each: error ≤ 0.035°). Gaffer on Games, "Snapshot
 *   Compression" (2015), for the scheme and the targets.
 * - A character is coded along its skeleton, closed loop: its root as an
 *   absolute pose, every other bone as its rotation relative to its parent
 *   *as the decoder will have it*, and its position as the small residual
 *   from where the joint puts it (a few mm at most). Quantization errors do
 *   not pile up down the chain, and a still joint costs almost nothing.
 * - Against a baseline, every integer is sent as its change; a particle's
 *   change is predicted by its predecessor's (cloth and ropes move
 *   together). Unchanged entities and bones cost one bit.
 *
 * The same integer arithmetic runs in the JavaScript decoder
 * (clients/web/codec.js); shared golden vectors (protocol/golden/) keep the
 * two in lockstep.
 */
#include "rdp.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static const uint8_t magic2[4] = {'R', 'D', 'S', '2'};

#define POS_SCALE    1024.0  // integer steps per metre
#define ANCHOR_SCALE 10000.0 // anchors: steps per metre (0.1 mm)
#define QUAT_MAX     2047    // smallest-three components in [-QUAT_MAX, QUAT_MAX]
#define QUAT_SCALE   (2047.0 * 1.41421356237309505) // per unit of component
#define ABS_BITS     26 // a signed absolute position component (±32 km)
#define MAX_K        15 // largest exp-Golomb order

// ---------------------------------------------------------------------------
// Bit stream (least significant bit first)
// ---------------------------------------------------------------------------

typedef struct bitw {
    uint8_t* buf;
    size_t cap; // bytes
    size_t bit; // bits written
    bool full;  // ran out of room
} bitw;

// A byte at a time: the part of v that fits in the current byte, then on.
static void put_bits(bitw* w, uint64_t v, unsigned n) {
    while (n > 0) {
        size_t byte = w->bit >> 3;
        if (byte >= w->cap) {
            w->full = true;
            return;
        }
        unsigned off = (unsigned)(w->bit & 7);
        if (off == 0) {
            w->buf[byte] = 0;
        }
        unsigned take = 8 - off < n ? 8 - off : n;
        w->buf[byte] |= (uint8_t)((v & ((1u << take) - 1u)) << off);
        v >>= take;
        n -= take;
        w->bit += take;
    }
}

typedef struct bitr {
    const uint8_t* buf;
    size_t len; // bytes
    size_t bit;
    bool bad; // read past the end or a malformed code
} bitr;

static uint64_t get_bits(bitr* r, unsigned n) {
    uint64_t v = 0;
    unsigned got = 0;
    while (got < n) {
        size_t byte = r->bit >> 3;
        if (byte >= r->len) {
            r->bad = true;
            return 0;
        }
        unsigned off = (unsigned)(r->bit & 7);
        unsigned take = 8 - off < n - got ? 8 - off : n - got;
        v |= (uint64_t)((r->buf[byte] >> off) & ((1u << take) - 1u)) << got;
        got += take;
        r->bit += take;
    }
    return v;
}

// The low n bits of v in reverse order (1 <= n <= 64): the whole word
// reversed by swapping halves, then shifted down.
static uint64_t reverse_bits(uint64_t v, unsigned n) {
    v = ((v >> 1) & 0x5555555555555555ull) | ((v & 0x5555555555555555ull) << 1);
    v = ((v >> 2) & 0x3333333333333333ull) | ((v & 0x3333333333333333ull) << 2);
    v = ((v >> 4) & 0x0f0f0f0f0f0f0f0full) | ((v & 0x0f0f0f0f0f0f0f0full) << 4);
    v = __builtin_bswap64(v);
    return v >> (64 - n);
}

// Bits not yet read.
static uint64_t bits_left(const bitr* r) {
    return 8 * (uint64_t)r->len - r->bit;
}

// Exp-Golomb code of order k for an unsigned n: (n >> k) + 1 written as
// its bit length L - 1 in zeros, then its L bits from the top; then the k
// low bits of n.
static unsigned eg_bits(uint64_t n, unsigned k) {
    uint64_t m = (n >> k) + 1; // >= 1
    unsigned len = 63u - (unsigned)__builtin_clzll(m);
    return 2 * len + 1 + k;
}

static void put_eg(bitw* w, uint64_t n, unsigned k) {
    uint64_t m = (n >> k) + 1; // >= 1
    unsigned len = 63u - (unsigned)__builtin_clzll(m);
    // len zeros, then m's len + 1 bits from the most significant: on a
    // stream filled from each byte's least significant bit, m reversed;
    // then the k low bits of n. One write when they fit in 64 bits.
    uint64_t rev = reverse_bits(m, len + 1);
    uint64_t low = n & ((1ull << k) - 1);
    if (2 * len + 1 + k <= 64) {
        put_bits(w, (rev << len) | (k > 0 ? low << (2 * len + 1) : 0), 2 * len + 1 + k);
        return;
    }
    put_bits(w, 0, len);
    put_bits(w, rev, len + 1);
    put_bits(w, low, k);
}

static uint64_t get_eg(bitr* r, unsigned k) {
    unsigned len = 0;
    while (!r->bad && get_bits(r, 1) == 0) {
        if (++len > 40) {
            r->bad = true;
            return 0;
        }
    }
    // After the 1 already read, m's other len bits, most significant first.
    uint64_t m = len > 0 ? (1ull << len) | reverse_bits(get_bits(r, len), len) : 1;
    uint64_t n = ((m - 1) << k) | get_bits(r, k);
    return n;
}

static uint64_t zigzag(int64_t v) {
    return v >= 0 ? (uint64_t)v << 1 : (((uint64_t)(-(v + 1))) << 1) | 1u;
}

static int64_t unzigzag(uint64_t u) {
    return (u & 1u) ? -(int64_t)(u >> 1) - 1 : (int64_t)(u >> 1);
}

static void put_sint(bitw* w, int64_t v, unsigned k) {
    put_eg(w, zigzag(v), k);
}

static int64_t get_sint(bitr* r, unsigned k) {
    return unzigzag(get_eg(r, k));
}

static void put_fixed(bitw* w, int64_t v, unsigned bits) {
    put_bits(w, (uint64_t)v & ((1ull << bits) - 1), bits);
}

static int64_t get_fixed(bitr* r, unsigned bits) {
    uint64_t u = get_bits(r, bits);
    if (u & (1ull << (bits - 1))) {
        return (int64_t)u - (int64_t)(1ull << bits);
    }
    return (int64_t)u;
}

// The exp-Golomb order that codes these signed values in the fewest bits.
static unsigned best_k(const int64_t* v, size_t n) {
    unsigned best = 0;
    uint64_t best_bits = UINT64_MAX;
    for (unsigned k = 0; k <= MAX_K; ++k) {
        uint64_t bits = 0;
        for (size_t i = 0; i < n; ++i) {
            bits += eg_bits(zigzag(v[i]), k);
        }
        if (bits < best_bits) {
            best_bits = bits;
            best = k;
        }
    }
    return best;
}

// ---------------------------------------------------------------------------
// Quaternions (x, y, z, w), the decoder's arithmetic
// ---------------------------------------------------------------------------

static void qmul(const double* a, const double* b, double* o) {
    double r[4] = {a[3] * b[0] + a[0] * b[3] + a[1] * b[2] - a[2] * b[1],
                   a[3] * b[1] - a[0] * b[2] + a[1] * b[3] + a[2] * b[0],
                   a[3] * b[2] + a[0] * b[1] - a[1] * b[0] + a[2] * b[3],
                   a[3] * b[3] - a[0] * b[0] - a[1] * b[1] - a[2] * b[2]};
    memcpy(o, r, sizeof r);
}

static void qnormalize(double* q) {
    double n = sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
    for (int i = 0; i < 4; ++i) {
        q[i] /= n;
    }
}

// v rotated by unit q.
static void qrotate(const double* q, const double* v, double* o) {
    // t = 2 q.xyz × v; o = v + w t + q.xyz × t
    double t[3] = {2.0 * (q[1] * v[2] - q[2] * v[1]), 2.0 * (q[2] * v[0] - q[0] * v[2]),
                   2.0 * (q[0] * v[1] - q[1] * v[0])};
    double r[3] = {v[0] + q[3] * t[0] + q[1] * t[2] - q[2] * t[1],
                   v[1] + q[3] * t[1] + q[2] * t[0] - q[0] * t[2],
                   v[2] + q[3] * t[2] + q[0] * t[1] - q[1] * t[0]};
    memcpy(o, r, sizeof r);
}

// Smallest three: q (unit) → index of the dropped component and three
// integers; the dropped one is made non-negative (q and -q are one rotation).
static void quat_quantize(const double* q, int32_t* out) {
    int big = 0;
    for (int i = 1; i < 4; ++i) {
        if (fabs(q[i]) > fabs(q[big])) {
            big = i;
        }
    }
    double s = q[big] < 0.0 ? -1.0 : 1.0;
    int k = 0;
    out[0] = big;
    for (int i = 0; i < 4; ++i) {
        if (i == big) {
            continue;
        }
        double c = round(s * q[i] * QUAT_SCALE);
        c = c > QUAT_MAX ? QUAT_MAX : (c < -QUAT_MAX ? -QUAT_MAX : c);
        out[1 + k++] = (int32_t)c;
    }
}

static void quat_dequantize(const int32_t* in, double* q) {
    int big = in[0] & 3, k = 0;
    double sum = 0.0;
    for (int i = 0; i < 4; ++i) {
        if (i == big) {
            continue;
        }
        q[i] = in[1 + k++] / QUAT_SCALE;
        sum += q[i] * q[i];
    }
    q[big] = sqrt(sum < 1.0 ? 1.0 - sum : 0.0);
    qnormalize(q);
}

// ---------------------------------------------------------------------------
// Quantized snapshots
// ---------------------------------------------------------------------------

// Integers per body and per particle in a quantized snapshot.
#define BODY_VALS     7 // p[3], quaternion index, q[3]
#define PARTICLE_VALS 3

rdp_qsnap* rdp_qsnap_new(void) {
    return calloc(1, sizeof(rdp_qsnap));
}

void rdp_qsnap_free(rdp_qsnap* q) {
    if (q != NULL) {
        free(q->ents);
        free(q->vals);
        free(q->skel);
        free(q->f);
        free(q);
    }
}

static bool grow(void** p, uint32_t* cap, uint32_t need, size_t size) {
    if (need <= *cap) {
        return true;
    }
    uint32_t c = *cap < 64 ? 64 : *cap;
    while (c < need) {
        c *= 2;
    }
    void* n = realloc(*p, (size_t)c * size);
    if (n == NULL) {
        return false;
    }
    *p = n;
    *cap = c;
    return true;
}

// Room for `ents` entities, `vals` integers (and as many decoded floats)
// and `skel` skeleton entries.
static bool qsnap_reserve(rdp_qsnap* q, uint32_t ents, uint32_t vals, uint32_t skel) {
    uint32_t had = q->val_cap;
    if (!grow((void**)&q->ents, &q->ent_cap, ents, sizeof *q->ents) ||
        !grow((void**)&q->vals, &q->val_cap, vals, sizeof *q->vals) ||
        !grow((void**)&q->skel, &q->skel_cap, skel, sizeof *q->skel)) {
        return false;
    }
    if (q->f == NULL || q->val_cap != had) {
        float* f = realloc(q->f, (size_t)q->val_cap * sizeof *f);
        if (f == NULL) {
            return false;
        }
        q->f = f;
    }
    return true;
}

// Positions (and residuals) in steps, clamped to what ABS_BITS holds: far
// beyond the world (the server removes what flies 10 km out).
static int32_t quant_pos(double x) {
    double v = round(x * POS_SCALE);
    double lim = (double)((1 << (ABS_BITS - 1)) - 1);
    return (int32_t)(v > lim ? lim : (v < -lim ? -lim : v));
}

// Decodes body i of character e from its integers into q->f (7 floats
// at the same index as its integers): the root as is, others through their
// parent (already decoded: parents come first). Used by the encoder (closed
// loop) and the decoder alike.
static void decode_character(rdp_qsnap* q, const rdp_qentity* e, uint32_t i, double* dp,
                             double* dq) {
    const int32_t* v = q->vals + e->offset + BODY_VALS * i;
    double rel[4];
    quat_dequantize(v + 3, rel);
    if (i == 0) {
        for (int k = 0; k < 3; ++k) {
            dp[k] = v[k] / POS_SCALE;
        }
        memcpy(dq, rel, sizeof rel);
    } else {
        const rdp_qbone* b = &q->skel[e->skel + i];
        double* pp = dp - 3 * (i - (uint32_t)b->parent);
        double* pq = dq - 4 * (i - (uint32_t)b->parent);
        qmul(pq, rel, dq);
        qnormalize(dq);
        double ap[3] = {b->anchor_parent[0] / ANCHOR_SCALE, b->anchor_parent[1] / ANCHOR_SCALE,
                        b->anchor_parent[2] / ANCHOR_SCALE};
        double ac[3] = {b->anchor_child[0] / ANCHOR_SCALE, b->anchor_child[1] / ANCHOR_SCALE,
                        b->anchor_child[2] / ANCHOR_SCALE};
        double ra[3], rc[3];
        qrotate(pq, ap, ra);
        qrotate(dq, ac, rc);
        for (int k = 0; k < 3; ++k) {
            dp[k] = pp[k] + ra[k] - rc[k] + v[k] / POS_SCALE;
        }
    }
    float* out = q->f + e->offset + BODY_VALS * i;
    const float f[7] = {(float)dp[0], (float)dp[1], (float)dp[2], (float)dq[0],
                        (float)dq[1], (float)dq[2], (float)dq[3]};
    memcpy(out, f, sizeof f);
}

int rdp_quantize(const rdp_snapshot* s, rdp_qsnap* q) {
    uint32_t vals = 0, skel = 0;
    for (uint32_t k = 0; k < s->entity_count; ++k) {
        const rdp_entity_state* e = &s->entities[k];
        if (rdp_kind_is_rigid(e->kind)) {
            vals += BODY_VALS * e->body_count;
            skel += e->kind == RDP_KIND_CHARACTER ? e->body_count : 0;
        } else {
            vals += PARTICLE_VALS * e->particle_count;
        }
    }
    if (!qsnap_reserve(q, s->entity_count, vals, skel)) {
        return -1;
    }
    q->world = s->world;
    q->tick = s->tick;
    q->entity_count = s->entity_count;
    q->val_count = vals;
    q->skel_count = skel;
    uint32_t vo = 0, so = 0;
    double* dp = NULL;
    double* dq = NULL;
    uint32_t most = 0;
    for (uint32_t k = 0; k < s->entity_count; ++k) {
        const rdp_entity_state* e = &s->entities[k];
        if (e->kind == RDP_KIND_CHARACTER && e->body_count > most) {
            most = e->body_count;
        }
    }
    if (most > 0) {
        dp = malloc(3 * (size_t)most * sizeof *dp);
        dq = malloc(4 * (size_t)most * sizeof *dq);
        if (dp == NULL || dq == NULL) {
            free(dp);
            free(dq);
            return -1;
        }
    }
    for (uint32_t k = 0; k < s->entity_count; ++k) {
        const rdp_entity_state* e = &s->entities[k];
        rdp_qentity* qe = &q->ents[k];
        memset(qe, 0, sizeof *qe);
        qe->id = e->entity;
        qe->kind = (uint8_t)e->kind;
        qe->state = rdp_state_code(e->state);
        qe->tick = (uint16_t)s->tick;
        qe->offset = vo;
        if (!rdp_kind_is_rigid(e->kind)) {
            qe->count = e->particle_count;
            for (uint32_t i = 0; i < 3 * e->particle_count; ++i) {
                q->vals[vo + i] = quant_pos(e->xyz[i]);
                q->f[vo + i] = (float)(q->vals[vo + i] / POS_SCALE);
            }
            vo += 3 * e->particle_count;
            continue;
        }
        qe->count = e->body_count;
        qe->skel = so;
        if (e->kind == RDP_KIND_CHARACTER) {
            for (uint32_t i = 0; i < e->body_count; ++i) {
                rdp_qbone* b = &q->skel[so + i];
                b->parent = e->parents != NULL ? (int16_t)e->parents[i] : (int16_t)(i ? 0 : -1);
                for (int c = 0; c < 3; ++c) {
                    double a = e->anchors != NULL ? e->anchors[6 * i + c] : 0.0;
                    double d = e->anchors != NULL ? e->anchors[6 * i + 3 + c] : 0.0;
                    b->anchor_parent[c] =
                        (int16_t)fmax(-32767.0, fmin(32767.0, round(a * ANCHOR_SCALE)));
                    b->anchor_child[c] =
                        (int16_t)fmax(-32767.0, fmin(32767.0, round(d * ANCHOR_SCALE)));
                }
                if (i > 0 && (b->parent < 0 || (uint32_t)b->parent >= i)) {
                    free(dp);
                    free(dq);
                    return -1; // parents must come first
                }
            }
            so += e->body_count;
        }
        for (uint32_t i = 0; i < e->body_count; ++i) {
            const float* pose = e->pose + 7 * i;
            int32_t* v = q->vals + vo + BODY_VALS * i;
            double pq[4] = {pose[3], pose[4], pose[5], pose[6]};
            qnormalize(pq);
            if (e->kind != RDP_KIND_CHARACTER || i == 0) {
                for (int c = 0; c < 3; ++c) {
                    v[c] = quant_pos(pose[c]);
                }
                quat_quantize(pq, v + 3);
                if (e->kind == RDP_KIND_CHARACTER) {
                    decode_character(q, qe, 0, dp, dq);
                } else {
                    double bq[4];
                    quat_dequantize(v + 3, bq);
                    const float f[7] = {(float)(v[0] / POS_SCALE),
                                        (float)(v[1] / POS_SCALE),
                                        (float)(v[2] / POS_SCALE),
                                        (float)bq[0],
                                        (float)bq[1],
                                        (float)bq[2],
                                        (float)bq[3]};
                    memcpy(q->f + vo + BODY_VALS * i, f, sizeof f);
                }
                continue;
            }
            // Closed loop: the rotation relative to the parent as decoded,
            // then the residual from where the joint puts the bone.
            const rdp_qbone* b = &q->skel[qe->skel + i];
            double* pdq = dq + 4 * (uint32_t)b->parent;
            double* pdp = dp + 3 * (uint32_t)b->parent;
            double inv[4] = {-pdq[0], -pdq[1], -pdq[2], pdq[3]}, rel[4];
            qmul(inv, pq, rel);
            qnormalize(rel);
            quat_quantize(rel, v + 3);
            double rq[4], cq[4];
            quat_dequantize(v + 3, rq);
            qmul(pdq, rq, cq);
            qnormalize(cq);
            double ap[3] = {b->anchor_parent[0] / ANCHOR_SCALE, b->anchor_parent[1] / ANCHOR_SCALE,
                            b->anchor_parent[2] / ANCHOR_SCALE};
            double ac[3] = {b->anchor_child[0] / ANCHOR_SCALE, b->anchor_child[1] / ANCHOR_SCALE,
                            b->anchor_child[2] / ANCHOR_SCALE};
            double ra[3], rc[3];
            qrotate(pdq, ap, ra);
            qrotate(cq, ac, rc);
            for (int c = 0; c < 3; ++c) {
                double pred = pdp[c] + ra[c] - rc[c];
                v[c] = quant_pos(pose[c] - pred);
            }
            decode_character(q, qe, i, dp + 3 * i, dq + 4 * i);
        }
        vo += BODY_VALS * e->body_count;
    }
    free(dp);
    free(dq);
    return 0;
}

// ---------------------------------------------------------------------------
// Encoding
// ---------------------------------------------------------------------------

#define FLAG_DELTA 1u

size_t rdp_encode_bound(const rdp_qsnap* q) {
    // Headers, plus per entity its id, kind, count and k's, plus per value
    // an exp-Golomb code of at most 2·33 + 1 + k bits, plus skeletons.
    size_t bits = 8 * 32 + (size_t)q->entity_count * 256 + (size_t)q->val_count * 90 +
                  (size_t)q->skel_count * 120;
    return bits / 8 + 16;
}

// What a decoder needs of an entity it meets for the first time, after its
// id: kind, count, and a character's skeleton.
static void put_entity_shape(bitw* w, const rdp_qsnap* q, const rdp_qentity* e) {
    put_bits(w, e->kind, 3);
    put_eg(w, e->count, 0);
    if (e->kind == RDP_KIND_CHARACTER) {
        for (uint32_t i = 0; i < e->count; ++i) {
            const rdp_qbone* b = &q->skel[e->skel + i];
            put_bits(w, (uint64_t)(b->parent + 1), 10);
            for (int c = 0; c < 3; ++c) {
                put_fixed(w, b->anchor_parent[c], 16);
            }
            for (int c = 0; c < 3; ++c) {
                put_fixed(w, b->anchor_child[c], 16);
            }
        }
    }
}

static void put_entity_head(bitw* w, const rdp_qsnap* q, const rdp_qentity* e) {
    put_eg(w, e->id & 0xffffffffu, 0);
    put_eg(w, e->id >> 32, 0);
    put_entity_shape(w, q, e);
}

// Particles. With no baseline: the first particle's position, then each
// particle's offset from the previous one, coded per axis as the change of
// that offset (neighbours lie alike). Against a baseline: runs of particles
// that did not move (each run a count) alternate with runs that did, whose
// particles carry their change predicted by the previous one's in the run
// (cloth and rope move together). One exp-Golomb order per axis.
static bool put_particles(bitw* w, const rdp_qsnap* q, const rdp_qentity* e, const rdp_qsnap* bq,
                          const rdp_qentity* be) {
    const uint32_t n = e->count;
    int64_t* d = malloc((size_t)(3 * n + 3) * sizeof *d);
    if (d == NULL) {
        return false;
    }
    const int32_t* v = q->vals + e->offset;
    const int32_t* b = be != NULL ? bq->vals + be->offset : NULL;
    if (b == NULL) {
        for (int c = 0; c < 3 && n > 0; ++c) {
            put_fixed(w, v[c], ABS_BITS);
        }
        for (int c = 0; c < 3; ++c) {
            int64_t prev = 0;
            for (uint32_t i = 0; i < n; ++i) {
                int64_t x = i == 0 ? 0 : (int64_t)v[3 * i + c] - v[3 * (i - 1) + c];
                d[i] = x - prev;
                prev = x;
            }
            unsigned k = best_k(d, n);
            put_bits(w, k, 4);
            for (uint32_t i = 0; i < n; ++i) {
                put_sint(w, d[i], k);
            }
        }
        free(d);
        return true;
    }
    // Against the baseline: the predicted changes of moved particles, per
    // axis, to pick the orders.
    size_t m = 0;
    int64_t* dc[3] = {d, d + n + 1, d + 2 * n + 2};
    for (uint32_t i = 0; i < n;) {
        while (i < n && memcmp(v + 3 * i, b + 3 * i, 3 * sizeof *v) == 0) {
            i++;
        }
        int64_t prev[3] = {0, 0, 0};
        while (i < n && memcmp(v + 3 * i, b + 3 * i, 3 * sizeof *v) != 0) {
            for (int c = 0; c < 3; ++c) {
                int64_t x = (int64_t)v[3 * i + c] - b[3 * i + c];
                dc[c][m] = x - prev[c];
                prev[c] = x;
            }
            m++;
            i++;
        }
    }
    unsigned k[3];
    for (int c = 0; c < 3; ++c) {
        k[c] = best_k(dc[c], m);
        put_bits(w, k[c], 4);
    }
    for (uint32_t i = 0; i < n;) {
        uint32_t still = 0;
        while (i + still < n &&
               memcmp(v + 3 * (i + still), b + 3 * (i + still), 3 * sizeof *v) == 0) {
            still++;
        }
        put_eg(w, still, 0);
        i += still;
        if (i == n) {
            break;
        }
        uint32_t moved = 0;
        while (i + moved < n &&
               memcmp(v + 3 * (i + moved), b + 3 * (i + moved), 3 * sizeof *v) != 0) {
            moved++;
        }
        put_eg(w, moved - 1, 0);
        int64_t prev[3] = {0, 0, 0};
        for (uint32_t r = 0; r < moved; ++r, ++i) {
            for (int c = 0; c < 3; ++c) {
                int64_t x = (int64_t)v[3 * i + c] - b[3 * i + c];
                put_sint(w, x - prev[c], k[c]);
                prev[c] = x;
            }
        }
    }
    free(d);
    return true;
}

// Bodies: per body an "unchanged" bit against the baseline, then its
// position and orientation integers (changes, or absolute values for the
// root and for a body with no baseline).
static bool put_bodies(bitw* w, const rdp_qsnap* q, const rdp_qentity* e, const rdp_qsnap* bq,
                       const rdp_qentity* be) {
    const uint32_t n = e->count;
    const bool chain = e->kind == RDP_KIND_CHARACTER;
    // Channels: 0 root positions, 1 root rotation, 2 joint rotations, 3
    // joint residuals. Collect what each will code to pick its order.
    int64_t* ch[4];
    size_t cn[4] = {0, 0, 0, 0};
    for (int c = 0; c < 4; ++c) {
        ch[c] = malloc((size_t)(3 * n + 3) * sizeof(int64_t));
        if (ch[c] == NULL) {
            for (int x = 0; x < c; ++x) {
                free(ch[x]);
            }
            return false;
        }
    }
    const int32_t* base = be != NULL ? bq->vals + be->offset : NULL;
    for (uint32_t i = 0; i < n; ++i) {
        const int32_t* v = q->vals + e->offset + BODY_VALS * i;
        const int32_t* b = base != NULL ? base + BODY_VALS * i : NULL;
        bool root = !chain || i == 0;
        if (b != NULL && memcmp(v, b, BODY_VALS * sizeof *v) == 0) {
            continue;
        }
        int pc = root ? 0 : 3, rc = root ? 1 : 2;
        for (int c = 0; c < 3; ++c) {
            if (b != NULL) {
                ch[pc][cn[pc]++] = (int64_t)v[c] - b[c];
            } else if (!root) {
                ch[pc][cn[pc]++] = v[c];
            }
        }
        if (b != NULL && b[3] == v[3]) {
            for (int c = 0; c < 3; ++c) {
                ch[rc][cn[rc]++] = (int64_t)v[4 + c] - b[4 + c];
            }
        }
    }
    unsigned k[4];
    for (int c = 0; c < 4; ++c) {
        k[c] = best_k(ch[c], cn[c]);
        put_bits(w, k[c], 4);
        free(ch[c]);
    }
    for (uint32_t i = 0; i < n; ++i) {
        const int32_t* v = q->vals + e->offset + BODY_VALS * i;
        const int32_t* b = base != NULL ? base + BODY_VALS * i : NULL;
        bool root = !chain || i == 0;
        if (b != NULL) {
            bool same = memcmp(v, b, BODY_VALS * sizeof *v) == 0;
            put_bits(w, same, 1);
            if (same) {
                continue;
            }
        }
        unsigned kp = root ? k[0] : k[3], kr = root ? k[1] : k[2];
        for (int c = 0; c < 3; ++c) {
            if (b != NULL) {
                put_sint(w, (int64_t)v[c] - b[c], kp);
            } else if (root) {
                put_fixed(w, v[c], ABS_BITS);
            } else {
                put_sint(w, v[c], kp);
            }
        }
        // The rotation: its change when the dropped component is the same
        // one as in the baseline, else afresh.
        bool same_index = b != NULL && b[3] == v[3];
        if (b != NULL) {
            put_bits(w, same_index, 1);
        }
        if (same_index) {
            for (int c = 0; c < 3; ++c) {
                put_sint(w, (int64_t)v[4 + c] - b[4 + c], kr);
            }
        } else {
            put_bits(w, (uint64_t)v[3], 2);
            for (int c = 0; c < 3; ++c) {
                put_fixed(w, v[4 + c], 12);
            }
        }
    }
    return true;
}

static bool same_entity_values(const rdp_qsnap* q, const rdp_qentity* e, const rdp_qsnap* bq,
                               const rdp_qentity* be) {
    uint32_t per = rdp_kind_is_rigid((rdp_kind)e->kind) ? BODY_VALS : PARTICLE_VALS;
    return e->state == be->state && memcmp(q->vals + e->offset, bq->vals + be->offset,
                                           (size_t)per * e->count * sizeof *q->vals) == 0;
}

// An entity's state after its head: a character's state, then its particles
// or bodies, against be (in bq) or, with be NULL, without a baseline.
static bool put_entity_values(bitw* w, const rdp_qsnap* q, const rdp_qentity* e,
                              const rdp_qsnap* bq, const rdp_qentity* be) {
    if (e->kind == RDP_KIND_CHARACTER) {
        put_bits(w, e->state, 2);
    }
    return rdp_kind_is_rigid((rdp_kind)e->kind) ? put_bodies(w, q, e, bq, be)
                                                : put_particles(w, q, e, bq, be);
}

size_t rdp_encode(const rdp_qsnap* q, const rdp_qsnap* base, uint8_t* buf, size_t cap) {
    if (cap < 16) {
        return 0;
    }
    memcpy(buf, magic2, 4);
    buf[4] = RDP_SNAPSHOT_VERSION;
    buf[5] = base != NULL ? FLAG_DELTA : 0;
    buf[6] = (uint8_t)q->tick;
    buf[7] = (uint8_t)(q->tick >> 8);
    size_t head = 8;
    if (base != NULL) {
        buf[8] = (uint8_t)base->tick;
        buf[9] = (uint8_t)(base->tick >> 8);
        head = 10;
    }
    bitw w = {buf + head, cap - head, 0, false};
    put_eg(&w, q->world, 0);
    put_eg(&w, q->entity_count, 0);
    uint32_t cursor = 0; // next baseline entity expected
    for (uint32_t k = 0; k < q->entity_count && !w.full; ++k) {
        const rdp_qentity* e = &q->ents[k];
        const rdp_qentity* be = NULL;
        if (base != NULL) {
            for (uint32_t j = cursor; j < base->entity_count; ++j) {
                const rdp_qentity* c = &base->ents[j];
                if (c->id == e->id && c->kind == e->kind && c->count == e->count) {
                    be = c;
                    put_bits(&w, 1, 1);
                    put_eg(&w, j - cursor, 0);
                    cursor = j + 1;
                    break;
                }
            }
            if (be == NULL) {
                put_bits(&w, 0, 1);
            }
        }
        if (be != NULL) {
            bool same = same_entity_values(q, e, base, be);
            put_bits(&w, same, 1);
            if (same) {
                continue;
            }
        } else {
            put_entity_head(&w, q, e);
        }
        if (!put_entity_values(&w, q, e, base, be)) {
            return 0;
        }
    }
    if (w.full) {
        return 0;
    }
    return head + (w.bit + 7) / 8;
}

// ---------------------------------------------------------------------------
// Partial frames (interest management)
// ---------------------------------------------------------------------------

#define FLAG_PARTIAL 2u
#define FLAG_RESET   4u
#define PARTIAL_HEAD 8 // magic, version, flags, tick: no baseline tick

// The writer's bit stream as a bitw, and back.
static bitw pw_bits(const rdp_pwriter* pw) {
    return (bitw){pw->buf + PARTIAL_HEAD, pw->cap - PARTIAL_HEAD, pw->bit, pw->full};
}

bool rdp_partial_begin(rdp_pwriter* pw, const rdp_qsnap* q, bool reset, const uint64_t* removed,
                       uint32_t removed_count, uint8_t* buf, size_t cap) {
    memset(pw, 0, sizeof *pw);
    if (cap < PARTIAL_HEAD + 16) {
        return false;
    }
    pw->buf = buf;
    pw->cap = cap;
    pw->q = q;
    memcpy(buf, magic2, 4);
    buf[4] = RDP_SNAPSHOT_VERSION;
    buf[5] = (uint8_t)(FLAG_PARTIAL | (reset ? FLAG_RESET : 0u));
    buf[6] = (uint8_t)q->tick;
    buf[7] = (uint8_t)(q->tick >> 8);
    bitw w = pw_bits(pw);
    put_eg(&w, q->world, 0);
    put_eg(&w, removed_count, 0);
    for (uint32_t i = 0; i < removed_count; ++i) {
        put_eg(&w, removed[i] & 0xffffffffu, 0);
        put_eg(&w, removed[i] >> 32, 0);
    }
    pw->bit = w.bit;
    pw->full = w.full;
    return !w.full;
}

size_t rdp_partial_size(const rdp_pwriter* pw) {
    return PARTIAL_HEAD + (pw->bit + 1 + 7) / 8; // with the bit that ends the list
}

// An entity's record in a partial frame, from its "more" bit: id, its
// baseline or its shape, its values. False on out of memory.
static bool put_partial_entity(bitw* w, const rdp_qsnap* q, uint32_t k, const rdp_qsnap* base,
                               uint32_t bk) {
    const rdp_qentity* e = &q->ents[k];
    const rdp_qentity* be = NULL;
    if (base != NULL && bk < base->entity_count) {
        const rdp_qentity* c = &base->ents[bk];
        // A baseline is the same entity, of the same shape, at another
        // tick: its own (the caller keeps it within the 16-bit tick's
        // reach, before q's).
        if (c->id == e->id && c->kind == e->kind && c->count == e->count &&
            (uint16_t)((uint16_t)q->tick - c->tick) != 0) {
            be = c;
        }
    }
    put_bits(w, 1, 1); // more
    put_eg(w, e->id & 0xffffffffu, 0);
    put_eg(w, e->id >> 32, 0);
    put_bits(w, be != NULL, 1);
    if (be != NULL) {
        put_eg(w, (uint16_t)((uint16_t)q->tick - 1u - be->tick), 0);
        bool same = same_entity_values(q, e, base, be);
        put_bits(w, same, 1);
        return same || put_entity_values(w, q, e, base, be);
    }
    put_entity_shape(w, q, e);
    return put_entity_values(w, q, e, NULL, NULL);
}

// Keeps the frame as it was up to bit `start` (the bits past it in its last
// byte cleared, for they are or'ed into).
static void partial_rewind(rdp_pwriter* pw, size_t start) {
    if ((start & 7) != 0) {
        pw->buf[PARTIAL_HEAD + (start >> 3)] &= (uint8_t)((1u << (start & 7)) - 1u);
    }
    pw->bit = start;
}

int rdp_partial_add(rdp_pwriter* pw, uint32_t k, const rdp_qsnap* base, uint32_t bk,
                    size_t max_bytes) {
    if (pw->full || k >= pw->q->entity_count) {
        return -1;
    }
    bitw w = pw_bits(pw);
    size_t start = w.bit;
    if (!put_partial_entity(&w, pw->q, k, base, bk)) {
        return -1;
    }
    if (w.full || PARTIAL_HEAD + (w.bit + 1 + 7) / 8 > max_bytes) {
        partial_rewind(pw, start);
        return 0;
    }
    pw->bit = w.bit;
    return 1;
}

size_t rdp_partial_entity(const rdp_qsnap* q, uint32_t k, const rdp_qsnap* base, uint32_t bk,
                          uint8_t* buf, size_t cap) {
    if (k >= q->entity_count) {
        return SIZE_MAX;
    }
    bitw w = {buf, cap, 0, false};
    if (!put_partial_entity(&w, q, k, base, bk)) {
        return SIZE_MAX;
    }
    return w.full ? 0 : w.bit;
}

int rdp_partial_append(rdp_pwriter* pw, const uint8_t* bits, size_t nbits, size_t max_bytes) {
    if (pw->full) {
        return -1;
    }
    if (PARTIAL_HEAD + (pw->bit + nbits + 1 + 7) / 8 > max_bytes) {
        return 0;
    }
    size_t end = pw->bit + nbits;
    if (PARTIAL_HEAD + (end + 7) / 8 > pw->cap) {
        return 0;
    }
    // Whole bytes shifted into place: each source byte straddles two.
    uint8_t* dst = pw->buf + PARTIAL_HEAD + (pw->bit >> 3);
    unsigned off = (unsigned)(pw->bit & 7);
    size_t nbytes = (nbits + 7) / 8;
    if (off == 0) {
        memcpy(dst, bits, nbytes);
    } else {
        dst[0] &= (uint8_t)((1u << off) - 1u);
        for (size_t i = 0; i < nbytes; ++i) {
            dst[i] |= (uint8_t)(bits[i] << off);
            if (i + 1 < nbytes || off + (nbits - 8 * i) > 8) {
                dst[i + 1] = (uint8_t)(bits[i] >> (8 - off));
            }
        }
    }
    // Bits past the end in the last byte are cleared (or'ed into later).
    if ((end & 7) != 0) {
        pw->buf[PARTIAL_HEAD + (end >> 3)] &= (uint8_t)((1u << (end & 7)) - 1u);
    }
    pw->bit = end;
    return 1;
}

size_t rdp_partial_end(rdp_pwriter* pw) {
    bitw w = pw_bits(pw);
    put_bits(&w, 0, 1); // no more entities
    if (w.full || pw->full) {
        return 0;
    }
    pw->bit = w.bit;
    return PARTIAL_HEAD + (w.bit + 7) / 8;
}

// ---------------------------------------------------------------------------
// Decoding
// ---------------------------------------------------------------------------

// One slot more than the baselines: a delta against the oldest of them
// decodes into the spare one.
#define RING (RDP_BASELINES + 1)

// An entity of a decoded frame, for finding it by id.
typedef struct id_slot {
    uint64_t id;
    uint32_t k; ///< Its index in the frame.
} id_slot;

struct rdp_decoder {
    rdp_qsnap* ring[RING];
    id_slot* index[RING]; ///< Each frame's entities sorted by id.
    uint32_t index_cap[RING];
    uint32_t next; ///< Slot the next decoded snapshot goes to.
    uint64_t world;
    // Partial frames: the view they update (double-buffered: the new one is
    // made from the old), and where the current view is: view[cur], the
    // last full or delta frame (a ring slot), or NULL when empty.
    rdp_qsnap* view[2];
    uint32_t cur;
    const rdp_qsnap* view_src;
    id_slot* vindex; ///< The view's entities (view[cur]) sorted by id.
    uint32_t vindex_cap;
    uint64_t* removed; ///< A partial frame's removals, sorted.
    uint32_t removed_cap;
    uint8_t* used; ///< Merging: the frame's entities the old view had.
    uint32_t used_cap;
};

rdp_decoder* rdp_decoder_new(void) {
    rdp_decoder* d = calloc(1, sizeof *d);
    if (d == NULL) {
        return NULL;
    }
    for (int i = 0; i < RING; ++i) {
        d->ring[i] = rdp_qsnap_new();
        if (d->ring[i] == NULL) {
            rdp_decoder_free(d);
            return NULL;
        }
        d->ring[i]->tick = UINT64_MAX; // empty
    }
    for (int i = 0; i < 2; ++i) {
        // Never NULL arrays, even in an empty view.
        if ((d->view[i] = rdp_qsnap_new()) == NULL || !qsnap_reserve(d->view[i], 1, 64, 1)) {
            rdp_decoder_free(d);
            return NULL;
        }
    }
    return d;
}

void rdp_decoder_free(rdp_decoder* d) {
    if (d != NULL) {
        for (int i = 0; i < RING; ++i) {
            rdp_qsnap_free(d->ring[i]);
            free(d->index[i]);
        }
        rdp_qsnap_free(d->view[0]);
        rdp_qsnap_free(d->view[1]);
        free(d->vindex);
        free(d->removed);
        free(d->used);
        free(d);
    }
}

static int cmp_id_slot(const void* a, const void* b) {
    uint64_t x = ((const id_slot*)a)->id, y = ((const id_slot*)b)->id;
    return x < y ? -1 : x > y;
}

static int cmp_u64(const void* a, const void* b) {
    uint64_t x = *(const uint64_t*)a, y = *(const uint64_t*)b;
    return x < y ? -1 : x > y;
}

// Sorts q's entities by id into *index (grown as needed). False on out of
// memory, or when an id is there twice.
static bool index_of(const rdp_qsnap* q, id_slot** index, uint32_t* cap) {
    if (!grow((void**)index, cap, q->entity_count + 1, sizeof(id_slot))) {
        return false;
    }
    for (uint32_t k = 0; k < q->entity_count; ++k) {
        (*index)[k] = (id_slot){q->ents[k].id, k};
    }
    qsort(*index, q->entity_count, sizeof(id_slot), cmp_id_slot);
    for (uint32_t k = 1; k < q->entity_count; ++k) {
        if ((*index)[k].id == (*index)[k - 1].id) {
            return false;
        }
    }
    return true;
}

// Sorts the entities of ring slot i by id into its index. Returns false on
// out of memory, or when an id is there twice (a malformed frame).
static bool index_frame(rdp_decoder* d, uint32_t i) {
    return index_of(d->ring[i], &d->index[i], &d->index_cap[i]);
}

// The view's entity of this id, as of wire tick tick16, or NULL: the
// baseline of an entity whose frame the decoder no longer holds but which
// no frame has carried since.
static const rdp_qentity* find_in_view(const rdp_decoder* d, uint64_t id, uint16_t tick16) {
    const rdp_qsnap* v = d->view_src;
    if (v == NULL || v != d->view[d->cur]) {
        return NULL; // no view, or a whole frame's (still in the ring)
    }
    id_slot key = {id, 0};
    const id_slot* hit = bsearch(&key, d->vindex, v->entity_count, sizeof(id_slot), cmp_id_slot);
    return hit != NULL && v->ents[hit->k].tick == tick16 ? &v->ents[hit->k] : NULL;
}

// The entity of ring slot i with this id, or NULL.
static const rdp_qentity* find_entity(const rdp_decoder* d, uint32_t i, uint64_t id) {
    const rdp_qsnap* q = d->ring[i];
    id_slot key = {id, 0};
    const id_slot* hit = bsearch(&key, d->index[i], q->entity_count, sizeof(id_slot), cmp_id_slot);
    return hit != NULL ? &q->ents[hit->k] : NULL;
}

// The ring slot of the decoded frame of wire tick tick16, or -1.
static int find_slot(const rdp_decoder* d, uint16_t tick16) {
    for (int i = 0; i < RING; ++i) {
        if (i != (int)d->next && d->ring[i]->tick != UINT64_MAX &&
            (uint16_t)d->ring[i]->tick == tick16) {
            return i;
        }
    }
    return -1;
}

// The baseline of a delta frame: a whole snapshot decoded (a partial
// frame holds only what it carried, and no server codes a delta against one).
static rdp_qsnap* find_baseline(rdp_decoder* d, uint16_t tick16) {
    int i = find_slot(d, tick16);
    return i >= 0 && !d->ring[i]->partial ? d->ring[i] : NULL;
}

static uint64_t get_id(bitr* r) {
    uint64_t lo = get_eg(r, 0), hi = get_eg(r, 0);
    return (hi << 32) | (lo & 0xffffffffu);
}

// Kind, count and a character's skeleton (put_entity_shape).
static bool get_entity_shape(bitr* r, rdp_qsnap* q, rdp_qentity* e, uint32_t* skel_used) {
    e->kind = (uint8_t)get_bits(r, 3);
    uint64_t count = get_eg(r, 0);
    // Coded without a baseline, every particle or body takes 3 bits at
    // least: a count the rest of the frame cannot hold is refused before
    // room is made for it (2^20 particles are 24 MiB).
    if (r->bad || count > 1u << 20 || 3 * count > bits_left(r) || e->kind < RDP_KIND_ROPE ||
        e->kind > RDP_KIND_SOFTBODY || (e->kind == RDP_KIND_BALL && count != 1) ||
        (e->kind == RDP_KIND_CHARACTER && (count < 1 || count > RDP_MAX_SKELETON_BONES))) {
        return false;
    }
    e->count = (uint32_t)count;
    e->skel = *skel_used;
    if (e->kind == RDP_KIND_CHARACTER) {
        if (!qsnap_reserve(q, q->ent_cap, q->val_cap, *skel_used + e->count)) {
            return false;
        }
        for (uint32_t i = 0; i < e->count; ++i) {
            rdp_qbone* b = &q->skel[*skel_used + i];
            b->parent = (int16_t)((int)get_bits(r, 10) - 1);
            for (int c = 0; c < 3; ++c) {
                b->anchor_parent[c] = (int16_t)get_fixed(r, 16);
            }
            for (int c = 0; c < 3; ++c) {
                b->anchor_child[c] = (int16_t)get_fixed(r, 16);
            }
            if ((i == 0) != (b->parent < 0) || (i > 0 && (uint32_t)b->parent >= i)) {
                return false;
            }
        }
        *skel_used += e->count;
    }
    return !r->bad;
}

static bool get_particles(bitr* r, rdp_qsnap* q, const rdp_qentity* e, const rdp_qsnap* bq,
                          const rdp_qentity* be) {
    const uint32_t n = e->count;
    int32_t* v = q->vals + e->offset;
    const int32_t* b = be != NULL ? bq->vals + be->offset : NULL;
    if (b == NULL) {
        int64_t first[3] = {0, 0, 0};
        for (int c = 0; c < 3 && n > 0; ++c) {
            first[c] = get_fixed(r, ABS_BITS);
        }
        for (int c = 0; c < 3; ++c) {
            unsigned k = (unsigned)get_bits(r, 4);
            int64_t x = 0;
            for (uint32_t i = 0; i < n && !r->bad; ++i) {
                x += get_sint(r, k);
                int64_t val = i == 0 ? first[c] : v[3 * (i - 1) + c] + x;
                if (val < INT32_MIN || val > INT32_MAX) {
                    return false;
                }
                v[3 * i + c] = (int32_t)val;
            }
        }
    } else {
        unsigned k[3];
        for (int c = 0; c < 3; ++c) {
            k[c] = (unsigned)get_bits(r, 4);
        }
        for (uint32_t i = 0; i < n && !r->bad;) {
            uint64_t still = get_eg(r, 0);
            if (still > n - i) {
                return false;
            }
            memcpy(v + 3 * i, b + 3 * i, (size_t)still * 3 * sizeof *v);
            i += (uint32_t)still;
            if (i == n) {
                break;
            }
            uint64_t moved = get_eg(r, 0) + 1;
            if (moved > n - i) {
                return false;
            }
            int64_t x[3] = {0, 0, 0};
            for (uint64_t m = 0; m < moved && !r->bad; ++m, ++i) {
                for (int c = 0; c < 3; ++c) {
                    x[c] += get_sint(r, k[c]);
                    int64_t val = b[3 * i + c] + x[c];
                    if (val < INT32_MIN || val > INT32_MAX) {
                        return false;
                    }
                    v[3 * i + c] = (int32_t)val;
                }
            }
        }
    }
    for (uint32_t i = 0; i < 3 * n; ++i) {
        q->f[e->offset + i] = (float)(v[i] / POS_SCALE);
    }
    return !r->bad;
}

static bool get_bodies(bitr* r, rdp_qsnap* q, const rdp_qentity* e, const rdp_qsnap* bq,
                       const rdp_qentity* be, double* dp, double* dq) {
    const uint32_t n = e->count;
    const bool chain = e->kind == RDP_KIND_CHARACTER;
    unsigned k[4];
    for (int c = 0; c < 4; ++c) {
        k[c] = (unsigned)get_bits(r, 4);
    }
    const int32_t* base = be != NULL ? bq->vals + be->offset : NULL;
    for (uint32_t i = 0; i < n && !r->bad; ++i) {
        int32_t* v = q->vals + e->offset + BODY_VALS * i;
        const int32_t* b = base != NULL ? base + BODY_VALS * i : NULL;
        bool root = !chain || i == 0;
        bool same = b != NULL && get_bits(r, 1);
        if (same) {
            memcpy(v, b, BODY_VALS * sizeof *v);
        } else {
            unsigned kp = root ? k[0] : k[3], kr = root ? k[1] : k[2];
            for (int c = 0; c < 3; ++c) {
                int64_t x = b != NULL ? b[c] + get_sint(r, kp)
                                      : (root ? get_fixed(r, ABS_BITS) : get_sint(r, kp));
                if (x < INT32_MIN || x > INT32_MAX) {
                    return false;
                }
                v[c] = (int32_t)x;
            }
            bool same_index = b != NULL && get_bits(r, 1);
            if (same_index) {
                v[3] = b[3];
                for (int c = 0; c < 3; ++c) {
                    int64_t x = b[4 + c] + get_sint(r, kr);
                    if (x < -QUAT_MAX || x > QUAT_MAX) {
                        return false;
                    }
                    v[4 + c] = (int32_t)x;
                }
            } else {
                v[3] = (int32_t)get_bits(r, 2);
                for (int c = 0; c < 3; ++c) {
                    v[4 + c] = (int32_t)get_fixed(r, 12);
                    // s(12) holds -2048, which no encoder makes; a baseline
                    // holding it could take no delta (changes stay within
                    // ±QUAT_MAX), so it is refused here too.
                    if (v[4 + c] < -QUAT_MAX) {
                        return false;
                    }
                }
            }
        }
        if (chain) {
            decode_character(q, e, i, dp + 3 * i, dq + 4 * i);
        } else {
            double bqv[4];
            quat_dequantize(v + 3, bqv);
            const float f[7] = {(float)(v[0] / POS_SCALE),
                                (float)(v[1] / POS_SCALE),
                                (float)(v[2] / POS_SCALE),
                                (float)bqv[0],
                                (float)bqv[1],
                                (float)bqv[2],
                                (float)bqv[3]};
            memcpy(q->f + e->offset + BODY_VALS * i, f, sizeof f);
        }
    }
    return !r->bad;
}

// A based entity's kind, count, state and skeleton: its baseline's (no
// frame sends them again). q has room for `ents` entities.
static bool take_base_shape(rdp_qsnap* q, uint32_t ents, rdp_qentity* e, const rdp_qsnap* base,
                            const rdp_qentity* be, uint32_t* skel) {
    e->kind = be->kind;
    e->count = be->count;
    e->state = be->state;
    if (e->kind == RDP_KIND_CHARACTER) {
        if (!qsnap_reserve(q, ents, 0, *skel + e->count)) {
            return false;
        }
        memcpy(&q->skel[*skel], &base->skel[be->skel], e->count * sizeof *q->skel);
        e->skel = *skel;
        *skel += e->count;
    }
    return true;
}

// Entity k's values after its head, placed at *vals: with a baseline a bit
// says unchanged, else a character's state and its particles or bodies.
static rdp_code get_entity_values(bitr* r, rdp_qsnap* q, uint32_t ents, uint32_t k,
                                  const rdp_qsnap* base, const rdp_qentity* be, uint32_t* vals,
                                  uint32_t skel, double* dp, double* dq) {
    rdp_qentity* e = &q->ents[k];
    uint32_t per = rdp_kind_is_rigid((rdp_kind)e->kind) ? BODY_VALS : PARTICLE_VALS;
    e->offset = *vals;
    *vals += per * e->count;
    if (!qsnap_reserve(q, ents, *vals, skel)) {
        return RDP_E_INTERNAL;
    }
    q->entity_count = k + 1;
    if (be != NULL && get_bits(r, 1)) { // unchanged
        memcpy(q->vals + e->offset, base->vals + be->offset, (size_t)per * e->count * 4);
        memcpy(q->f + e->offset, base->f + be->offset, (size_t)per * e->count * sizeof(float));
        return RDP_OK;
    }
    if (e->kind == RDP_KIND_CHARACTER) {
        e->state = (uint8_t)get_bits(r, 2);
    }
    bool ok = rdp_kind_is_rigid((rdp_kind)e->kind) ? get_bodies(r, q, e, base, be, dp, dq)
                                                   : get_particles(r, q, e, base, be);
    return ok ? RDP_OK : RDP_E_BAD_REQUEST;
}

// Appends entity se of src to the view v, carried last at wire tick `tick`.
static bool view_append(rdp_qsnap* v, const rdp_qsnap* src, const rdp_qentity* se, uint16_t tick) {
    uint32_t per = rdp_kind_is_rigid((rdp_kind)se->kind) ? BODY_VALS : PARTICLE_VALS;
    uint32_t n = per * se->count;
    uint32_t bones = se->kind == RDP_KIND_CHARACTER ? se->count : 0;
    if (!qsnap_reserve(v, v->entity_count + 1, v->val_count + n, v->skel_count + bones)) {
        return false;
    }
    rdp_qentity* e = &v->ents[v->entity_count++];
    *e = *se;
    e->tick = tick;
    e->offset = v->val_count;
    e->skel = v->skel_count;
    if (n > 0) { // (an empty snapshot's arrays may be NULL)
        memcpy(v->vals + v->val_count, src->vals + se->offset, (size_t)n * sizeof *v->vals);
        memcpy(v->f + v->val_count, src->f + se->offset, (size_t)n * sizeof *v->f);
    }
    if (bones > 0) {
        memcpy(v->skel + v->skel_count, src->skel + se->skel, (size_t)bones * sizeof *v->skel);
    }
    v->val_count += n;
    v->skel_count += bones;
    return true;
}

// The view after partial frame p (ring slot i) with its `nremoved` removals
// (sorted in d->removed): the old view's entities in their order (p's state
// for those p carried; the removed dropped), then those p brings. Made in the
// spare view buffer, which becomes the view only on success.
static bool view_merge(rdp_decoder* d, uint32_t i, uint32_t nremoved, bool reset) {
    const rdp_qsnap* p = d->ring[i];
    const rdp_qsnap* old = reset ? NULL : d->view_src;
    rdp_qsnap* v = d->view[1 - d->cur];
    if (!grow((void**)&d->used, &d->used_cap, p->entity_count + 1, 1)) {
        return false;
    }
    memset(d->used, 0, p->entity_count);
    v->entity_count = v->val_count = v->skel_count = 0;
    for (uint32_t k = 0; old != NULL && k < old->entity_count; ++k) {
        const rdp_qentity* oe = &old->ents[k];
        if (bsearch(&oe->id, d->removed, nremoved, sizeof *d->removed, cmp_u64) != NULL) {
            continue;
        }
        const rdp_qentity* pe = find_entity(d, i, oe->id);
        bool ok = pe != NULL ? view_append(v, p, pe, (uint16_t)p->tick)
                             : view_append(v, old, oe, oe->tick);
        if (!ok) {
            return false;
        }
        if (pe != NULL) {
            d->used[pe - p->ents] = 1;
        }
    }
    for (uint32_t k = 0; k < p->entity_count; ++k) {
        if (!d->used[k] && !view_append(v, p, &p->ents[k], (uint16_t)p->tick)) {
            return false;
        }
    }
    return true;
}

// A partial frame (PROTOCOL.md §5.2): its entities into the ring, each
// against its own baseline, then merged into the view.
static rdp_code decode_partial(rdp_decoder* d, const uint8_t* buf, size_t len, bool reset,
                               const rdp_qsnap** out) {
    uint16_t tick16 = (uint16_t)(buf[6] | (buf[7] << 8));
    rdp_qsnap* q = d->ring[d->next];
    bitr r = {buf + PARTIAL_HEAD, len - PARTIAL_HEAD, 0, false};
    uint64_t world = get_eg(&r, 0);
    uint64_t nremoved = get_eg(&r, 0);
    // A removal takes 2 bits at least.
    if (r.bad || nremoved > 1u << 20 || 2 * nremoved > bits_left(&r)) {
        return RDP_E_BAD_REQUEST;
    }
    if (!grow((void**)&d->removed, &d->removed_cap, (uint32_t)nremoved + 1, sizeof *d->removed)) {
        return RDP_E_INTERNAL;
    }
    for (uint32_t i = 0; i < nremoved; ++i) {
        d->removed[i] = get_id(&r);
    }
    if (r.bad) {
        return RDP_E_BAD_REQUEST;
    }
    qsort(d->removed, (size_t)nremoved, sizeof *d->removed, cmp_u64);
    q->tick = UINT64_MAX;
    if (!qsnap_reserve(q, 1, 64, 0)) { // (never NULL arrays, as in rdp_decode)
        return RDP_E_INTERNAL;
    }
    q->world = world;
    q->entity_count = 0;
    uint32_t vals = 0, skel = 0;
    double dp[3 * RDP_MAX_SKELETON_BONES], dq[4 * RDP_MAX_SKELETON_BONES];
    for (uint32_t k = 0; get_bits(&r, 1) == 1 && !r.bad; ++k) {
        if (k >= 1u << 20 || !qsnap_reserve(q, k + 1, vals, skel)) {
            return k >= 1u << 20 ? RDP_E_BAD_REQUEST : RDP_E_INTERNAL;
        }
        rdp_qentity* e = &q->ents[k];
        memset(e, 0, sizeof *e);
        e->id = get_id(&r);
        e->tick = tick16;
        const rdp_qsnap* base = NULL;
        const rdp_qentity* be = NULL;
        if (get_bits(&r, 1)) {
            uint64_t back = get_eg(&r, 0);
            if (r.bad || back > 65535) {
                return RDP_E_BAD_REQUEST;
            }
            uint16_t at = (uint16_t)(tick16 - 1u - (uint16_t)back);
            int slot = find_slot(d, at);
            be = slot >= 0 ? find_entity(d, (uint32_t)slot, e->id) : NULL;
            base = slot >= 0 ? d->ring[slot] : NULL;
            if (be == NULL && (be = find_in_view(d, e->id, at)) != NULL) {
                base = d->view_src; // carried last by a frame no longer kept
            }
            if (be == NULL) {
                return RDP_E_NOT_FOUND; // a baseline this decoder does not have
            }
            if (!take_base_shape(q, k + 1, e, base, be, &skel)) {
                return RDP_E_INTERNAL;
            }
        } else if (r.bad || !get_entity_shape(&r, q, e, &skel)) {
            return RDP_E_BAD_REQUEST;
        }
        rdp_code rc = get_entity_values(&r, q, k + 1, k, base, be, &vals, skel, dp, dq);
        if (rc != RDP_OK) {
            return rc;
        }
    }
    if (r.bad) {
        return RDP_E_BAD_REQUEST;
    }
    q->val_count = vals;
    q->skel_count = skel;
    q->partial = true;
    q->reset = reset;
    if (!index_frame(d, d->next)) {
        return RDP_E_BAD_REQUEST; // an entity twice (or out of memory)
    }
    q->tick = tick16; // needed by view_merge, before the slot is committed
    if (!view_merge(d, d->next, (uint32_t)nremoved, reset)) {
        q->tick = UINT64_MAX;
        return RDP_E_INTERNAL;
    }
    rdp_qsnap* v = d->view[1 - d->cur];
    if (!index_of(v, &d->vindex, &d->vindex_cap)) {
        q->tick = UINT64_MAX;
        return RDP_E_INTERNAL;
    }
    d->cur = 1 - d->cur;
    d->view_src = v;
    v->world = world;
    v->tick = tick16;
    v->partial = true;
    v->reset = reset;
    d->world = world;
    d->next = (d->next + 1) % RING;
    *out = v;
    return RDP_OK;
}

rdp_code rdp_decode(rdp_decoder* d, const uint8_t* buf, size_t len, const rdp_qsnap** out) {
    if (buf == NULL || len < 8 || memcmp(buf, magic2, 4) != 0 || buf[4] != RDP_SNAPSHOT_VERSION) {
        return RDP_E_BAD_REQUEST;
    }
    // Flags: delta, or partial with or without reset; any other bit is a
    // format this decoder does not know.
    uint8_t flags = buf[5];
    if ((flags & ~(FLAG_DELTA | FLAG_PARTIAL | FLAG_RESET)) != 0 ||
        ((flags & FLAG_PARTIAL) != 0 && (flags & FLAG_DELTA) != 0) ||
        ((flags & FLAG_RESET) != 0 && (flags & FLAG_PARTIAL) == 0)) {
        return RDP_E_BAD_REQUEST;
    }
    if ((flags & FLAG_PARTIAL) != 0) {
        return decode_partial(d, buf, len, (flags & FLAG_RESET) != 0, out);
    }
    bool delta = (buf[5] & FLAG_DELTA) != 0;
    uint16_t tick16 = (uint16_t)(buf[6] | (buf[7] << 8));
    size_t head = 8;
    rdp_qsnap* base = NULL;
    if (delta) {
        if (len < 10) {
            return RDP_E_BAD_REQUEST;
        }
        uint16_t b16 = (uint16_t)(buf[8] | (buf[9] << 8));
        head = 10;
        base = find_baseline(d, b16);
        if (base == NULL) {
            return RDP_E_NOT_FOUND; // a baseline this decoder does not have
        }
    }
    rdp_qsnap* q = d->ring[d->next];
    if (q == base) {
        return RDP_E_INTERNAL; // cannot happen: the ring holds distinct ticks
    }
    bitr r = {buf + head, len - head, 0, false};
    uint64_t world = get_eg(&r, 0);
    uint64_t count = get_eg(&r, 0);
    // Every entity takes 3 bits at least (see get_entity_shape).
    if (r.bad || count > 1u << 16 || 3 * count > bits_left(&r)) {
        return RDP_E_BAD_REQUEST;
    }
    q->tick = UINT64_MAX;
    if (!qsnap_reserve(q, (uint32_t)count, 64, 0)) {
        return RDP_E_INTERNAL;
    }
    q->world = world;
    q->entity_count = 0;
    uint32_t vals = 0, skel = 0, cursor = 0;
    double dp[3 * RDP_MAX_SKELETON_BONES], dq[4 * RDP_MAX_SKELETON_BONES];
    for (uint32_t k = 0; k < (uint32_t)count; ++k) {
        rdp_qentity* e = &q->ents[k];
        memset(e, 0, sizeof *e);
        const rdp_qentity* be = NULL;
        if (delta && get_bits(&r, 1)) {
            uint64_t skip = get_eg(&r, 0);
            if (r.bad || cursor + skip >= base->entity_count) {
                return RDP_E_BAD_REQUEST;
            }
            be = &base->ents[cursor + skip];
            cursor += (uint32_t)skip + 1;
            e->id = be->id;
            if (!take_base_shape(q, (uint32_t)count, e, base, be, &skel)) {
                return RDP_E_INTERNAL;
            }
        } else if ((e->id = get_id(&r), !get_entity_shape(&r, q, e, &skel))) {
            return RDP_E_BAD_REQUEST;
        }
        rdp_code rc = get_entity_values(&r, q, (uint32_t)count, k, base, be, &vals, skel, dp, dq);
        if (rc != RDP_OK) {
            return rc;
        }
    }
    q->val_count = vals;
    q->skel_count = skel;
    q->partial = false;
    q->reset = false;
    for (uint32_t k = 0; k < q->entity_count; ++k) {
        q->ents[k].tick = tick16;
    }
    if (!index_frame(d, d->next)) {
        return RDP_E_BAD_REQUEST; // an entity twice (or out of memory)
    }
    q->tick = tick16;
    d->view_src = q; // a whole snapshot is the view
    d->world = world;
    d->next = (d->next + 1) % RING;
    *out = q;
    return RDP_OK;
}

uint64_t rdp_tick_unwrap(uint64_t near, uint16_t tick16) {
    int64_t diff = (int16_t)(uint16_t)(tick16 - (uint16_t)near);
    int64_t t = (int64_t)near + diff;
    return t < 0 ? (uint64_t)t + 65536u : (uint64_t)t;
}

bool rdp_tick16_newer(uint16_t a, uint16_t b) {
    return a != b && (uint16_t)(a - b) < 32768u;
}

void rdp_ack_write(uint64_t world, uint64_t tick, uint8_t* buf) {
    buf[0] = 'A';
    for (int i = 0; i < 8; ++i) {
        buf[1 + i] = (uint8_t)(world >> (8 * i));
        buf[9 + i] = (uint8_t)(tick >> (8 * i));
    }
}

bool rdp_ack_parse(const uint8_t* buf, size_t len, uint64_t* world, uint64_t* tick) {
    if (buf == NULL || len != RDP_ACK_BYTES || buf[0] != 'A') {
        return false;
    }
    uint64_t w = 0, t = 0;
    for (int i = 7; i >= 0; --i) {
        w = (w << 8) | buf[1 + i];
        t = (t << 8) | buf[9 + i];
    }
    *world = w;
    *tick = t;
    return true;
}

uint8_t rdp_state_code(const char* state) {
    static const char* const names[] = {"animated", "ragdoll", "getting_up", "partial"};
    for (uint8_t i = 0; state != NULL && i < 4; ++i) {
        if (strcmp(state, names[i]) == 0) {
            return i;
        }
    }
    return 0;
}
