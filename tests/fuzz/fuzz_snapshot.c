/*
 * fuzz_snapshot.c: libFuzzer target for the binary snapshot decoder
 * (protocol/codec.c: rdp_decode and its window of RDP_BASELINES
 * baselines), fed a stream of frames the way a client gets them.
 *
 * The input is a sequence of records, each a control byte, a 16-bit
 * little-endian length and that many bytes of frame (cut at the input's
 * end). The harness plays the server's part in the header, as a server
 * would: every frame gets a fresh tick (1 to 4 after the last, across the
 * 16-bit wrap), and the control byte picks the baseline a delta names
 * among the ticks the client acknowledged (or leaves the frame's own). The
 * client acks every frame it decodes, through rdp_ack_write and
 * rdp_ack_parse; the control byte may lose the ack.
 *
 *   control byte: bits 0-1  0: the frame's own baseline tick
 *                           1: the k-th newest acknowledged tick
 *                           2: the newest decoded tick, acknowledged or not
 *                           3: no baseline (the delta flag cleared)
 *                 bits 2-4  k
 *                 bit 5     the ack is lost
 *                 bits 6-7  tick step - 1
 *
 * Checks, beyond "no crash, no leak, no undefined behaviour":
 * - a delta decodes or is refused with not_found exactly as the window
 *   says: found when its baseline is one of the last 32 decoded frames;
 * - a decoded snapshot is well formed (entity layout, skeletons, every
 *   float finite, quaternions of unit length) and survives the encoder:
 *   encoded again, full and as a delta against its baseline, it decodes to
 *   the same integers;
 * - nothing changes the last 32 decoded snapshots (the baselines) once
 *   decoded, refused frames least of all, and after a refused frame the
 *   decoder stays usable: a frame the encoder makes from them decodes;
 * - partial frames (interest management) decode into a well-formed view,
 *   or are refused (bad_request, or not_found for a baseline it lacks); a
 *   delta never takes one as its baseline.
 */
#include "fuzz.h"
#include "rdp.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MAX_FRAMES 2000
#define ABS_LIMIT  ((1 << 25) - 1) // what the encoder codes absolutely (26 bits)

typedef struct seen {
    const rdp_qsnap* q; // valid while among the last RDP_BASELINES decodes; NULL:
                        // a partial frame (its output is the view, not a baseline)
    uint64_t tick;      // full tick
    uint64_t hash;
} seen;

typedef struct stream {
    rdp_decoder* d;
    uint64_t tick;            // full tick of the last frame
    seen hist[RDP_BASELINES]; // the last decoded frames, oldest first
    uint32_t nhist;
    uint64_t acked[RDP_BASELINES]; // full ticks the client acked, oldest first
    uint32_t nacked;
} stream;

FUZZ_NO_COVERAGE static uint64_t fnv(uint64_t h, const void* p, size_t n) {
    const uint8_t* b = p;
    for (size_t i = 0; i < n; ++i) {
        h = (h ^ b[i]) * 0x100000001b3ull;
    }
    return h;
}

FUZZ_NO_COVERAGE static uint64_t snap_hash(const rdp_qsnap* q) {
    uint64_t h = 0xcbf29ce484222325ull;
    h = fnv(h, &q->world, sizeof q->world);
    h = fnv(h, &q->tick, sizeof q->tick);
    h = fnv(h, &q->entity_count, sizeof q->entity_count);
    for (uint32_t i = 0; i < q->entity_count; ++i) {
        const rdp_qentity* e = &q->ents[i];
        h = fnv(h, &e->id, sizeof e->id);
        h = fnv(h, &e->kind, 1);
        h = fnv(h, &e->state, 1);
        h = fnv(h, &e->count, sizeof e->count);
        h = fnv(h, &e->offset, sizeof e->offset);
        h = fnv(h, &e->skel, sizeof e->skel);
    }
    h = fnv(h, q->vals, (size_t)q->val_count * sizeof *q->vals);
    h = fnv(h, q->f, (size_t)q->val_count * sizeof *q->f);
    for (uint32_t i = 0; i < q->skel_count; ++i) {
        const rdp_qbone* b = &q->skel[i];
        h = fnv(h, &b->parent, sizeof b->parent);
        h = fnv(h, b->anchor_parent, sizeof b->anchor_parent);
        h = fnv(h, b->anchor_child, sizeof b->anchor_child);
    }
    return h;
}

// The layout rdp.h promises for a decoded snapshot.
FUZZ_NO_COVERAGE static void check_snapshot(const rdp_qsnap* q) {
    uint32_t vals = 0, skel = 0;
    for (uint32_t k = 0; k < q->entity_count; ++k) {
        const rdp_qentity* e = &q->ents[k];
        FUZZ_CHECK(e->kind >= RDP_KIND_ROPE && e->kind <= RDP_KIND_SOFTBODY);
        FUZZ_CHECK(e->offset == vals);
        bool rigid = rdp_kind_is_rigid((rdp_kind)e->kind);
        if (e->kind == RDP_KIND_BALL) {
            FUZZ_CHECK(e->count == 1);
        }
        if (e->kind == RDP_KIND_CHARACTER) {
            FUZZ_CHECK(e->count >= 1 && e->count <= RDP_MAX_SKELETON_BONES && e->state <= 3);
            FUZZ_CHECK(e->skel == skel);
            for (uint32_t i = 0; i < e->count; ++i) {
                int p = q->skel[e->skel + i].parent;
                FUZZ_CHECK(i == 0 ? p == -1 : p >= 0 && (uint32_t)p < i);
            }
            skel += e->count;
        } else {
            FUZZ_CHECK(e->state == 0);
        }
        uint32_t per = rigid ? 7 : 3;
        for (uint32_t i = 0; i < per * e->count; ++i) {
            FUZZ_CHECK(isfinite(q->f[e->offset + i]));
        }
        if (rigid) {
            for (uint32_t i = 0; i < e->count; ++i) {
                const int32_t* v = q->vals + e->offset + 7 * i;
                const float* f = q->f + e->offset + 7 * i;
                FUZZ_CHECK(v[3] >= 0 && v[3] <= 3);
                for (int c = 4; c < 7; ++c) {
                    FUZZ_CHECK(v[c] >= -2047 && v[c] <= 2047);
                }
                double n = (double)f[3] * f[3] + (double)f[4] * f[4] + (double)f[5] * f[5] +
                           (double)f[6] * f[6];
                FUZZ_CHECK(fabs(n - 1.0) < 1e-5);
            }
        }
        vals += per * e->count;
    }
    FUZZ_CHECK(q->val_count == vals);
    FUZZ_CHECK(q->skel_count == skel);
}

// Whether the encoder can code q: it codes the first particle of a
// particle entity and a rigid entity's root (every ball, a character's
// first bone) in 26 bits, and the decoder, adding deltas, may go beyond.
FUZZ_NO_COVERAGE static bool encodable(const rdp_qsnap* q) {
    for (uint32_t k = 0; k < q->entity_count; ++k) {
        const rdp_qentity* e = &q->ents[k];
        bool rigid = rdp_kind_is_rigid((rdp_kind)e->kind);
        for (uint32_t i = 0; i < e->count; ++i) {
            bool absolute = rigid ? (e->kind != RDP_KIND_CHARACTER || i == 0) : i == 0;
            const int32_t* v = q->vals + e->offset + (rigid ? 7 : 3) * i;
            for (int c = 0; c < 3 && absolute; ++c) {
                if (v[c] < -ABS_LIMIT || v[c] > ABS_LIMIT) {
                    return false;
                }
            }
        }
    }
    return true;
}

// q encoded (against base, or full), with the given wire tick.
static uint8_t* encode(const rdp_qsnap* q, const rdp_qsnap* base, uint16_t tick16, size_t* len) {
    size_t cap = rdp_encode_bound(q);
    uint8_t* buf = malloc(cap);
    FUZZ_CHECK(buf != NULL);
    *len = rdp_encode(q, base, buf, cap);
    FUZZ_CHECK(*len >= 8);
    buf[6] = (uint8_t)tick16;
    buf[7] = (uint8_t)(tick16 >> 8);
    return buf;
}

// Same entities and integers; with `skeletons`, the same skeletons and
// decoded floats too.
FUZZ_NO_COVERAGE static void check_same(const rdp_qsnap* a, const rdp_qsnap* b, bool skeletons) {
    FUZZ_CHECK(a->world == b->world && a->entity_count == b->entity_count);
    for (uint32_t k = 0; k < a->entity_count; ++k) {
        const rdp_qentity* x = &a->ents[k];
        const rdp_qentity* y = &b->ents[k];
        FUZZ_CHECK(x->id == y->id && x->kind == y->kind && x->state == y->state &&
                   x->count == y->count && x->offset == y->offset);
        // skel means something for characters only.
        FUZZ_CHECK(x->kind != RDP_KIND_CHARACTER || x->skel == y->skel);
    }
    FUZZ_CHECK(a->val_count == b->val_count);
    FUZZ_CHECK(memcmp(a->vals, b->vals, (size_t)a->val_count * sizeof *a->vals) == 0);
    if (skeletons) {
        FUZZ_CHECK(a->skel_count == b->skel_count);
        for (uint32_t i = 0; i < a->skel_count; ++i) {
            FUZZ_CHECK(memcmp(&a->skel[i], &b->skel[i], sizeof a->skel[i]) == 0);
        }
        FUZZ_CHECK(memcmp(a->f, b->f, (size_t)a->val_count * sizeof *a->f) == 0);
    }
}

// q encoded full and decoded by a fresh decoder; then, given its baseline,
// as a delta against it, decoded by a fresh decoder that has the baseline.
static void check_reencoded(const rdp_qsnap* q, const rdp_qsnap* base) {
    if (!encodable(q)) {
        return;
    }
    rdp_decoder* d = rdp_decoder_new();
    FUZZ_CHECK(d != NULL);
    size_t len;
    const rdp_qsnap* out;
    uint8_t* buf = encode(q, NULL, (uint16_t)q->tick, &len);
    FUZZ_CHECK(rdp_decode(d, buf, len, &out) == RDP_OK);
    free(buf);
    check_same(q, out, true);
    rdp_decoder_free(d);
    if (base == NULL || !encodable(base)) {
        return;
    }
    d = rdp_decoder_new();
    FUZZ_CHECK(d != NULL);
    buf = encode(base, NULL, (uint16_t)base->tick, &len);
    FUZZ_CHECK(rdp_decode(d, buf, len, &out) == RDP_OK);
    free(buf);
    buf = encode(q, base, (uint16_t)q->tick, &len);
    FUZZ_CHECK(rdp_decode(d, buf, len, &out) == RDP_OK);
    free(buf);
    // A character coded afresh in q may share its id with one in the
    // baseline and have another skeleton; the delta sends none and the
    // decoder takes the baseline's (a server never changes an entity's
    // skeleton), so only the integers must agree.
    check_same(q, out, false);
    rdp_decoder_free(d);
}

// The whole snapshot of wire tick tick16 in the window (a delta's
// baseline; a partial frame is none).
static const seen* find_seen(const stream* s, uint16_t tick16) {
    for (uint32_t i = 0; i < s->nhist; ++i) {
        if ((uint16_t)s->hist[i].tick == tick16) {
            return s->hist[i].q != NULL ? &s->hist[i] : NULL;
        }
    }
    return NULL;
}

// The client took q at full tick `tick`: it joins the window, and the
// client acks it (the ack may be lost on the way).
static void decoded(stream* s, const rdp_qsnap* q, uint64_t tick, bool ack_lost) {
    if (s->nhist == RDP_BASELINES) {
        memmove(&s->hist[0], &s->hist[1], (RDP_BASELINES - 1) * sizeof s->hist[0]);
        s->nhist--;
    }
    s->hist[s->nhist++] = (seen){q->partial ? NULL : q, tick, q->partial ? 0 : snap_hash(q)};
    uint8_t ack[RDP_ACK_BYTES];
    rdp_ack_write(q->world, tick, ack);
    uint64_t world = 0, t = 0;
    FUZZ_CHECK(rdp_ack_parse(ack, sizeof ack, &world, &t));
    FUZZ_CHECK(world == q->world && t == tick);
    if (ack_lost) {
        return;
    }
    if (s->nacked == RDP_BASELINES) {
        memmove(&s->acked[0], &s->acked[1], (RDP_BASELINES - 1) * sizeof s->acked[0]);
        s->nacked--;
    }
    s->acked[s->nacked++] = t;
}

// The window holds what was decoded into it: no refused frame (nor any
// later decode) changed a baseline. Checked once, at the end of the input:
// a change would last until then.
FUZZ_NO_COVERAGE static void check_window(const stream* s) {
    for (uint32_t i = 0; i < s->nhist; ++i) {
        FUZZ_CHECK(s->hist[i].q == NULL || snap_hash(s->hist[i].q) == s->hist[i].hash);
    }
}

// After a refused frame, the decoder is usable: a frame the encoder makes
// (the newest snapshot, as a delta against the oldest) decodes.
static void check_still_usable(stream* s) {
    const rdp_qsnap* newest = NULL;
    const rdp_qsnap* oldest = NULL;
    for (uint32_t i = 0; i < s->nhist; ++i) {
        if (s->hist[i].q != NULL) {
            newest = s->hist[i].q;
            oldest = oldest != NULL ? oldest : s->hist[i].q;
        }
    }
    if (newest == NULL || !encodable(newest) || !encodable(oldest)) {
        return;
    }
    size_t len;
    uint8_t* buf = encode(newest, oldest, (uint16_t)++s->tick, &len);
    const rdp_qsnap* out = NULL;
    FUZZ_CHECK(rdp_decode(s->d, buf, len, &out) == RDP_OK);
    free(buf);
    FUZZ_CHECK(out->tick == (uint16_t)s->tick);
    check_same(newest, out, false);
    decoded(s, out, s->tick, false);
}

static void feed(stream* s, uint8_t ctl, uint8_t* frame, size_t len) {
    uint64_t prev = s->tick;
    s->tick += 1u + (ctl >> 6);
    uint16_t tick16 = (uint16_t)s->tick;
    FUZZ_CHECK(rdp_tick16_newer(tick16, (uint16_t)prev));
    FUZZ_CHECK(rdp_tick_unwrap(prev, tick16) == s->tick);
    if (len >= 8) {
        frame[6] = (uint8_t)tick16;
        frame[7] = (uint8_t)(tick16 >> 8);
    }
    unsigned mode = ctl & 3u, k = (ctl >> 2) & 7u;
    if (len >= 6 && mode == 3) {
        frame[5] &= (uint8_t)~1u;
    }
    if (len >= 10 && (frame[5] & 1u) != 0) {
        uint64_t base = 0;
        bool set = false;
        if (mode == 1 && k < s->nacked) {
            base = s->acked[s->nacked - 1 - k];
            set = true;
        } else if (mode == 2 && s->nhist > 0) {
            base = s->hist[s->nhist - 1].tick;
            set = true;
        }
        if (set) {
            frame[8] = (uint8_t)base;
            frame[9] = (uint8_t)(base >> 8);
        }
    }
    bool header_ok = len >= 8 && memcmp(frame, "RDS2", 4) == 0 && frame[4] == RDP_SNAPSHOT_VERSION;
    // Flags: delta (1), or partial (2) with or without reset (4).
    bool partial = header_ok && (frame[5] == 2 || frame[5] == 6);
    header_ok = header_ok && (frame[5] <= 1 || partial);
    bool delta = header_ok && (frame[5] & 1u) != 0;
    const seen* base = NULL;
    if (delta && len >= 10) {
        base = find_seen(s, (uint16_t)(frame[8] | (frame[9] << 8)));
    }
    const rdp_qsnap* out = NULL;
    rdp_code rc = rdp_decode(s->d, frame, len, &out);
    if (!header_ok || (delta && len < 10)) {
        FUZZ_CHECK(rc == RDP_E_BAD_REQUEST);
    } else if (delta && base == NULL) {
        FUZZ_CHECK(rc == RDP_E_NOT_FOUND);
    } else if (partial) {
        // Its entities name their own baselines, in whole or partial frames.
        FUZZ_CHECK(rc == RDP_OK || rc == RDP_E_BAD_REQUEST || rc == RDP_E_NOT_FOUND);
    } else {
        FUZZ_CHECK(rc == RDP_OK || rc == RDP_E_BAD_REQUEST);
    }
    if (rc != RDP_OK) {
        check_still_usable(s);
        return;
    }
    FUZZ_CHECK(out->tick == tick16);
    FUZZ_CHECK(out->partial == partial);
    check_snapshot(out);
    check_reencoded(out, base != NULL ? base->q : NULL);
    if (partial) {
        // The view: every id once, and the frame's own entities carry its tick.
        for (uint32_t i = 0; i < out->entity_count; ++i) {
            for (uint32_t j = i + 1; j < out->entity_count && j < i + 64; ++j) {
                FUZZ_CHECK(out->ents[i].id != out->ents[j].id);
            }
        }
    }
    decoded(s, out, s->tick, (ctl & 0x20u) != 0);
}

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    stream s;
    memset(&s, 0, sizeof s);
    s.d = rdp_decoder_new();
    FUZZ_CHECK(s.d != NULL);
    s.tick = 65536 - 20; // a few frames in, the 16-bit tick wraps
    size_t off = 0;
    for (int n = 0; off < size && n < MAX_FRAMES; ++n) {
        uint8_t ctl = data[off++];
        size_t len = 0;
        if (size - off >= 2) {
            len = (size_t)data[off] | (size_t)data[off + 1] << 8;
            off += 2;
        }
        len = len < size - off ? len : size - off;
        // A copy of its own size: the harness writes the header, and ASan
        // sees any read past the frame's end.
        uint8_t* frame = malloc(len > 0 ? len : 1);
        FUZZ_CHECK(frame != NULL);
        memcpy(frame, data + off, len);
        off += len;
        feed(&s, ctl, frame, len);
        free(frame);
    }
    check_window(&s);
    rdp_decoder_free(s.d);
    return 0;
}
