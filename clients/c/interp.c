/*
 * interp.c: a snapshot interpolation buffer (rdc.h, rdc_interp): a ring of
 * copies of the last snapshots of one world, with when each arrived, and a
 * sampler that draws the world a little in the past, between the two
 * snapshots around that moment (Gaffer on Games, "Snapshot Interpolation").
 *
 * The server's clock is learned from the arrivals: a snapshot of tick t
 * arriving at a means the server's tick t was at a minus the network's
 * delay, which is smallest for the earliest arrivals; so the offset is the
 * least (a − t·period) of the snapshots kept. The render time is now less
 * the delay (2 send intervals + jitter), mapped to a fractional tick.
 */
#include "rdc.h"

#include <uv.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct frame {
    uint64_t tick;
    uint64_t arrival_ns;
    uint32_t entity_count, entity_cap;
    rdc_entity* entities; ///< xyz/pose point into floats.
    size_t float_count, float_cap;
    float* floats;
} frame;

struct rdc_interp {
    double period_ns;   ///< One server tick.
    double interval_ns; ///< One send interval.
    uint32_t depth, head, count;
    frame* frames;
    double jitter_ns;   ///< RFC 3550 §6.4.1 estimate.
    uint64_t world;     ///< The world of the snapshots pushed.
    bool rendered;      ///< A sample was drawn: last_render holds.
    double last_render; ///< The tick the last sample drew.
    // The sample handed out: its entities and floats.
    rdc_snapshot out;
    rdc_entity* out_entities;
    uint32_t out_cap;
    float* out_floats;
    size_t out_float_cap;
};

int rdc_interp_create(uint32_t tick_hz, uint32_t rate_hz, uint32_t depth, rdc_interp** out) {
    if (out == NULL || tick_hz < 1 || tick_hz > 240 || rate_hz < 1 || rate_hz > 240 ||
        (depth != 0 && (depth < 2 || depth > 64))) {
        return RDC_E_CONFIG;
    }
    rdc_interp* ip = calloc(1, sizeof *ip);
    if (ip == NULL) {
        return UV_ENOMEM;
    }
    ip->depth = depth != 0 ? depth : 16;
    ip->frames = calloc(ip->depth, sizeof *ip->frames);
    if (ip->frames == NULL) {
        free(ip);
        return UV_ENOMEM;
    }
    ip->period_ns = 1e9 / tick_hz;
    // The server sends at most every tick.
    ip->interval_ns = 1e9 / (rate_hz < tick_hz ? rate_hz : tick_hz);
    *out = ip;
    return 0;
}

void rdc_interp_destroy(rdc_interp* ip) {
    if (ip == NULL) {
        return;
    }
    for (uint32_t i = 0; i < ip->depth; ++i) {
        free(ip->frames[i].entities);
        free(ip->frames[i].floats);
    }
    free(ip->frames);
    free(ip->out_entities);
    free(ip->out_floats);
    free(ip);
}

static frame* frame_at(const rdc_interp* ip, uint32_t k) {
    return &ip->frames[(ip->head + k) % ip->depth];
}

// The server's tick 0 in local time (ns), from the least-delayed arrival
// kept (ip->count > 0).
static double clock_offset(const rdc_interp* ip) {
    double offset = 1e300;
    for (uint32_t k = 0; k < ip->count; ++k) {
        const frame* f = frame_at(ip, k);
        const double o = (double)f->arrival_ns - (double)f->tick * ip->period_ns;
        offset = o < offset ? o : offset;
    }
    return offset;
}

static size_t floats_of(const rdc_entity* e) {
    return (size_t)e->count * (e->pose != NULL ? 7u : 3u);
}

// Grows *p (of *cap elements of `size`) to hold n; contents not kept.
static bool room(void** p, size_t* cap, size_t n, size_t size) {
    if (n <= *cap) {
        return true;
    }
    size_t c = *cap > 0 ? *cap : 16;
    while (c < n) {
        c *= 2;
    }
    void* q = malloc(c * size);
    if (q == NULL) {
        return false;
    }
    free(*p);
    *p = q;
    *cap = c;
    return true;
}

void rdc_interp_reset(rdc_interp* ip) {
    if (ip != NULL) {
        ip->head = 0;
        ip->count = 0;
        ip->jitter_ns = 0.0;
        ip->rendered = false;
    }
}

int rdc_interp_push(rdc_interp* ip, const rdc_snapshot* s, uint64_t arrival_ns) {
    if (ip == NULL || s == NULL || !s->decoded) {
        return RDC_E_CONFIG;
    }
    if (ip->count > 0 && s->tick < frame_at(ip, 0)->tick) {
        rdc_interp_reset(ip); // the server's ticks went back (it restarted): start afresh
    }
    if (ip->count > 0) {
        // A tick more than a second from where the learned clock puts its
        // arrival: another server clock (a restart whose ticks are past the
        // old ones), or a stall of over a second: start afresh.
        const double expect = ((double)arrival_ns - clock_offset(ip)) / ip->period_ns;
        if (fabs(expect - (double)s->tick) > 1e9 / ip->period_ns) {
            rdc_interp_reset(ip);
        }
    }
    if (ip->count > 0 && s->tick <= frame_at(ip, ip->count - 1)->tick) {
        return 0; // not newer: a late duplicate
    }
    size_t nf = 0;
    for (uint32_t i = 0; i < s->entity_count; ++i) {
        nf += floats_of(&s->entities[i]);
    }
    frame* f = ip->count < ip->depth ? frame_at(ip, ip->count) : frame_at(ip, 0);
    size_t ecap = f->entity_cap;
    if (!room((void**)&f->entities, &ecap, s->entity_count, sizeof *f->entities) ||
        !room((void**)&f->floats, &f->float_cap, nf, sizeof *f->floats)) {
        f->entity_cap = (uint32_t)ecap;
        return UV_ENOMEM;
    }
    f->entity_cap = (uint32_t)ecap;
    // Jitter: how much the spacing of arrivals differs from the spacing of
    // the ticks (RFC 3550 §6.4.1).
    if (ip->count > 0) {
        const frame* last = frame_at(ip, ip->count - 1);
        const double d = ((double)arrival_ns - (double)last->arrival_ns) -
                         (double)(s->tick - last->tick) * ip->period_ns;
        ip->jitter_ns += (fabs(d) - ip->jitter_ns) / 16.0;
    }
    f->tick = s->tick;
    f->arrival_ns = arrival_ns;
    ip->world = s->world;
    f->entity_count = s->entity_count;
    f->float_count = nf;
    size_t at = 0;
    for (uint32_t i = 0; i < s->entity_count; ++i) {
        const rdc_entity* e = &s->entities[i];
        rdc_entity* c = &f->entities[i];
        *c = *e;
        c->bone_names = NULL; // the decoder's: not kept
        const size_t n = floats_of(e);
        memcpy(f->floats + at, e->pose != NULL ? e->pose : e->xyz, n * sizeof(float));
        c->xyz = e->pose != NULL ? NULL : f->floats + at;
        c->pose = e->pose != NULL ? f->floats + at : NULL;
        at += n;
    }
    if (ip->count < ip->depth) {
        ip->count++;
    } else {
        ip->head = (ip->head + 1) % ip->depth;
    }
    return 0;
}

// Slerp of unit quaternions a → b by t, the shorter way.
static void slerp(const float* a, const float* b, double t, float* out) {
    double dot =
        (double)a[0] * b[0] + (double)a[1] * b[1] + (double)a[2] * b[2] + (double)a[3] * b[3];
    double sign = 1.0;
    if (dot < 0.0) {
        dot = -dot;
        sign = -1.0;
    }
    double wa = 1.0 - t, wb = t;
    if (dot < 0.9995) {
        const double th = acos(dot), s = sin(th);
        wa = sin((1.0 - t) * th) / s;
        wb = sin(t * th) / s;
    }
    double q[4], n = 0.0;
    for (int k = 0; k < 4; ++k) {
        q[k] = wa * a[k] + sign * wb * b[k];
        n += q[k] * q[k];
    }
    n = n > 0.0 ? 1.0 / sqrt(n) : 0.0;
    for (int k = 0; k < 4; ++k) {
        out[k] = (float)(q[k] * n);
    }
}

// The entity of frame f with id `id`, of the same shape as e, or NULL.
static const rdc_entity* same_in(const frame* f, const rdc_entity* e, uint32_t hint) {
    if (hint < f->entity_count && f->entities[hint].id == e->id) {
        const rdc_entity* x = &f->entities[hint];
        return x->kind == e->kind && x->count == e->count ? x : NULL;
    }
    for (uint32_t i = 0; i < f->entity_count; ++i) {
        const rdc_entity* x = &f->entities[i];
        if (x->id == e->id) {
            return x->kind == e->kind && x->count == e->count ? x : NULL;
        }
    }
    return NULL;
}

const rdc_snapshot* rdc_interp_sample(rdc_interp* ip, uint64_t now_ns, rdc_interp_info* info) {
    if (ip == NULL || ip->count == 0) {
        return NULL;
    }
    const double offset = clock_offset(ip);
    const double delay = 2.0 * ip->interval_ns + ip->jitter_ns;
    double render_tick = ((double)now_ns - delay - offset) / ip->period_ns;
    // Time never runs backwards on screen: a larger delay (more jitter) or
    // a later offset (the earliest arrival left the ring) slows it instead.
    if (ip->rendered && render_tick < ip->last_render) {
        render_tick = ip->last_render;
    }
    ip->rendered = true;
    ip->last_render = render_tick;
    uint32_t ia = 0, ib = 0;
    bool held = false;
    const frame* newest = frame_at(ip, ip->count - 1);
    if (render_tick >= (double)newest->tick) {
        ia = ib = ip->count - 1;
        held = render_tick > (double)newest->tick;
    } else if (render_tick <= (double)frame_at(ip, 0)->tick) {
        ia = ib = 0;
    } else {
        ib = 1;
        while ((double)frame_at(ip, ib)->tick < render_tick) {
            ib++;
        }
        ia = ib - 1;
    }
    const frame* a = frame_at(ip, ia);
    const frame* b = frame_at(ip, ib);
    const double alpha =
        ia == ib ? 1.0 : (render_tick - (double)a->tick) / (double)(b->tick - a->tick);
    size_t ecap = ip->out_cap;
    if (!room((void**)&ip->out_entities, &ecap, b->entity_count, sizeof *ip->out_entities) ||
        !room((void**)&ip->out_floats, &ip->out_float_cap, b->float_count, sizeof(float))) {
        ip->out_cap = (uint32_t)ecap;
        return NULL;
    }
    ip->out_cap = (uint32_t)ecap;
    size_t at = 0;
    for (uint32_t i = 0; i < b->entity_count; ++i) {
        const rdc_entity* eb = &b->entities[i];
        const rdc_entity* ea = ia != ib ? same_in(a, eb, i) : NULL;
        rdc_entity* o = &ip->out_entities[i];
        *o = *eb;
        float* dst = ip->out_floats + at;
        const size_t n = floats_of(eb);
        const float* fb = eb->pose != NULL ? eb->pose : eb->xyz;
        if (ea == NULL) {
            memcpy(dst, fb, n * sizeof(float));
        } else if (eb->pose != NULL) {
            for (uint32_t k = 0; k < eb->count; ++k) {
                const float *pa = ea->pose + 7 * k, *pb = fb + 7 * k;
                for (int c = 0; c < 3; ++c) {
                    dst[7 * k + c] = (float)(pa[c] + alpha * (pb[c] - pa[c]));
                }
                slerp(pa + 3, pb + 3, alpha, dst + 7 * k + 3);
            }
        } else {
            for (size_t k = 0; k < n; ++k) {
                dst[k] = (float)(ea->xyz[k] + alpha * (fb[k] - ea->xyz[k]));
            }
        }
        o->xyz = eb->pose != NULL ? NULL : dst;
        o->pose = eb->pose != NULL ? dst : NULL;
        at += n;
    }
    memset(&ip->out, 0, sizeof ip->out);
    ip->out.world = ip->world;
    ip->out.tick = b->tick;
    ip->out.decoded = true;
    ip->out.entity_count = b->entity_count;
    ip->out.entities = ip->out_entities;
    if (info != NULL) {
        info->delay_ms = delay * 1e-6;
        info->jitter_ms = ip->jitter_ns * 1e-6;
        info->render_tick = render_tick;
        info->tick_a = a->tick;
        info->tick_b = b->tick;
        info->alpha = alpha;
        info->held = held;
    }
    return &ip->out;
}
