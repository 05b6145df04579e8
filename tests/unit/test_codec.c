/*
 * test_codec.c: binary snapshots, version 2 (protocol/codec.c).
 *
 * Properties on random worlds, against bounds from the protocol (not from
 * the code): every decoded position within 1 mm and orientation within
 * 0.1° of what was encoded; a delta decodes against every baseline in the
 * window, across the 16-bit tick wrap; an unchanged world costs a few
 * bytes; malformed frames are refused without touching the baselines. The
 * golden vectors in protocol/golden/ (shared with the JavaScript decoder)
 * decode to the values listed beside them.
 */
// cmocka.h needs these four before it (cmocka docs); keep the order.
// clang-format off
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
// clang-format on

#include "rdp.h"

#include <cJSON.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint32_t rng = 1;
static double uniform(double lo, double hi) { // [lo, hi)
    rng = rng * 1664525u + 1013904223u;
    return lo + (hi - lo) * (double)(rng >> 8) / 16777216.0;
}

static void random_quat(float* q) {
    double v[4], n;
    do {
        n = 0.0;
        for (int i = 0; i < 4; ++i) {
            v[i] = uniform(-1.0, 1.0);
            n += v[i] * v[i];
        }
    } while (n < 0.01 || n > 1.0);
    n = sqrt(n);
    for (int i = 0; i < 4; ++i) {
        q[i] = (float)(v[i] / n);
    }
}

// Angle between two unit quaternions, rad (q and -q are the same).
static double quat_angle(const float* a, const float* b) {
    double d =
        fabs((double)a[0] * b[0] + (double)a[1] * b[1] + (double)a[2] * b[2] + (double)a[3] * b[3]);
    return 2.0 * acos(d > 1.0 ? 1.0 : d);
}

// A random world: ropes and cloths of particles, balls, and characters
// with random skeletons (parents first) and random poses.
#define MAX_ENTS 12
typedef struct test_world {
    rdp_entity_state ents[MAX_ENTS];
    float xyz[MAX_ENTS][3 * 300];
    float pose[MAX_ENTS][7 * RDP_MAX_SKELETON_BONES];
    int parents[MAX_ENTS][RDP_MAX_SKELETON_BONES];
    float anchors[MAX_ENTS][6 * RDP_MAX_SKELETON_BONES];
    const char* states[MAX_ENTS];
    uint32_t count;
    rdp_snapshot snap;
} test_world;

static void make_world(test_world* w, uint64_t tick, double extent) {
    memset(w, 0, sizeof *w);
    w->count = 3 + (uint32_t)uniform(0, MAX_ENTS - 3);
    static const char* const names[] = {"animated", "ragdoll", "getting_up", "partial"};
    for (uint32_t k = 0; k < w->count; ++k) {
        rdp_entity_state* e = &w->ents[k];
        e->entity = ((uint64_t)(k + 1) << 32) | (k + 1);
        int kind = 1 + (int)uniform(0, 5);
        e->kind = (rdp_kind)kind;
        if (!rdp_kind_is_rigid(e->kind)) {
            e->particle_count = 1 + (uint32_t)uniform(0, 300);
            for (uint32_t i = 0; i < 3 * e->particle_count; ++i) {
                w->xyz[k][i] = (float)uniform(-extent, extent);
            }
            e->xyz = w->xyz[k];
            continue;
        }
        // Characters of every size, up to the largest skeleton (a decoder
        // once kept 32 bones' poses on its stack).
        e->body_count =
            e->kind == RDP_KIND_BALL ? 1 : 1 + (uint32_t)uniform(0, RDP_MAX_SKELETON_BONES);
        for (uint32_t i = 0; i < e->body_count; ++i) {
            float* p = w->pose[k] + 7 * i;
            p[0] = (float)uniform(-extent, extent);
            p[1] = (float)uniform(-extent, extent);
            p[2] = (float)uniform(-extent, extent);
            random_quat(p + 3);
            w->parents[k][i] = i == 0 ? -1 : (int)uniform(0, i);
            for (int c = 0; c < 6; ++c) {
                w->anchors[k][6 * i + c] = (float)uniform(-0.5, 0.5);
            }
        }
        e->pose = w->pose[k];
        if (e->kind == RDP_KIND_CHARACTER) {
            e->parents = w->parents[k];
            e->anchors = w->anchors[k];
            e->state = names[(int)uniform(0, 4)];
        }
    }
    w->snap.world = 7;
    w->snap.tick = tick;
    w->snap.entity_count = w->count;
    w->snap.entities = w->ents;
}

// Moves everything a little (the next tick of the world).
static void step_world(test_world* w, double size) {
    w->snap.tick++;
    for (uint32_t k = 0; k < w->count; ++k) {
        rdp_entity_state* e = &w->ents[k];
        if (!rdp_kind_is_rigid(e->kind)) {
            for (uint32_t i = 0; i < 3 * e->particle_count; ++i) {
                w->xyz[k][i] += (float)uniform(-size, size);
            }
            continue;
        }
        for (uint32_t i = 0; i < e->body_count; ++i) {
            float* p = w->pose[k] + 7 * i;
            for (int c = 0; c < 3; ++c) {
                p[c] += (float)uniform(-size, size);
            }
            double n = 0.0;
            for (int c = 3; c < 7; ++c) {
                p[c] += (float)uniform(-size, size);
                n += (double)p[c] * p[c];
            }
            for (int c = 3; c < 7; ++c) {
                p[c] = (float)(p[c] / sqrt(n));
            }
        }
    }
}

// The decoded snapshot against the world it came from: positions within
// 1 mm, orientations within 0.1°, ids, kinds, counts and states equal.
static void check_close(const test_world* w, const rdp_qsnap* d, double* worst_pos,
                        double* worst_angle) {
    assert_int_equal(d->entity_count, w->count);
    for (uint32_t k = 0; k < w->count; ++k) {
        const rdp_entity_state* e = &w->ents[k];
        const rdp_qentity* de = &d->ents[k];
        assert_true(de->id == e->entity);
        assert_int_equal(de->kind, e->kind);
        const float* f = d->f + de->offset;
        if (!rdp_kind_is_rigid(e->kind)) {
            assert_int_equal(de->count, e->particle_count);
            for (uint32_t i = 0; i < 3 * e->particle_count; ++i) {
                *worst_pos = fmax(*worst_pos, fabs((double)f[i] - e->xyz[i]));
            }
            continue;
        }
        assert_int_equal(de->count, e->body_count);
        if (e->kind == RDP_KIND_CHARACTER) {
            assert_int_equal(de->state, rdp_state_code(e->state));
        }
        for (uint32_t i = 0; i < e->body_count; ++i) {
            const float* p = e->pose + 7 * i;
            for (int c = 0; c < 3; ++c) {
                *worst_pos = fmax(*worst_pos, fabs((double)f[7 * i + c] - p[c]));
            }
            *worst_angle = fmax(*worst_angle, quat_angle(f + 7 * i + 3, p + 3));
        }
    }
}

static const double MM = 0.001, DEG = 3.14159265358979 / 180.0;

static void test_full_snapshots_decode_within_the_bounds(void** state) {
    (void)state;
    rng = 11;
    rdp_qsnap* q = rdp_qsnap_new();
    double worst_pos = 0.0, worst_angle = 0.0;
    for (int run = 0; run < 200; ++run) {
        test_world w;
        make_world(&w, 1000 + (uint64_t)run, run % 2 ? 999.0 : 3.0);
        assert_int_equal(rdp_quantize(&w.snap, q), 0);
        size_t cap = rdp_encode_bound(q);
        uint8_t* buf = malloc(cap);
        size_t n = rdp_encode(q, NULL, buf, cap);
        assert_true(n > 0);
        rdp_decoder* d = rdp_decoder_new();
        const rdp_qsnap* out = NULL;
        assert_int_equal(rdp_decode(d, buf, n, &out), RDP_OK);
        assert_true(out->world == 7 && out->tick == (uint16_t)(1000 + run));
        check_close(&w, out, &worst_pos, &worst_angle);
        // Exactly the encoder's integers.
        assert_int_equal(out->val_count, q->val_count);
        assert_memory_equal(out->vals, q->vals, q->val_count * sizeof *q->vals);
        rdp_decoder_free(d);
        free(buf);
    }
    printf("full: worst position error %.3f mm, orientation %.4f deg\n", worst_pos / MM,
           worst_angle / DEG);
    assert_true(worst_pos <= 1.0 * MM);
    assert_true(worst_angle <= 0.1 * DEG);
    rdp_qsnap_free(q);
}

// Feeds a decoder the history of snapshots 0..n-1, each a delta against the
// one before (the first full), as a client that acks every snapshot sees.
static rdp_decoder* replay(rdp_qsnap** hist, uint32_t n, uint8_t* buf, size_t cap) {
    rdp_decoder* d = rdp_decoder_new();
    for (uint32_t i = 0; i < n; ++i) {
        size_t len = rdp_encode(hist[i], i == 0 ? NULL : hist[i - 1], buf, cap);
        const rdp_qsnap* out;
        assert_true(len > 0);
        assert_int_equal(rdp_decode(d, buf, len, &out), RDP_OK);
    }
    return d;
}

static void test_deltas_decode_against_every_baseline_across_the_wrap(void** state) {
    (void)state;
    rng = 23;
    // Ticks run through 65535 → 0 on the wire.
    test_world w;
    make_world(&w, 65536u * 3 - 20, 20.0);
    const uint32_t steps = 44;
    rdp_qsnap* hist[44];
    for (uint32_t i = 0; i < steps; ++i) {
        hist[i] = rdp_qsnap_new();
        assert_int_equal(rdp_quantize(&w.snap, hist[i]), 0);
        if (i + 1 < steps) {
            step_world(&w, 0.05);
        }
    }
    size_t cap = 4 * rdp_encode_bound(hist[0]) + 4096;
    uint8_t* buf = malloc(cap);
    double worst_pos = 0.0, worst_angle = 0.0;
    const uint32_t now = steps - 1;
    // Every baseline the client still holds: ages 1 .. RDP_BASELINES.
    for (uint32_t age = 1; age <= RDP_BASELINES; ++age) {
        rdp_decoder* d = replay(hist, now, buf, cap);
        size_t len = rdp_encode(hist[now], hist[now - age], buf, cap);
        assert_true(len > 0);
        const rdp_qsnap* out;
        assert_int_equal(rdp_decode(d, buf, len, &out), RDP_OK);
        assert_memory_equal(out->vals, hist[now]->vals, hist[now]->val_count * sizeof(int32_t));
        check_close(&w, out, &worst_pos, &worst_angle);
        rdp_decoder_free(d);
    }
    // Older than the window: the decoder says so (the server must not send
    // it), and nothing it holds changes.
    rdp_decoder* d = replay(hist, now, buf, cap);
    size_t len = rdp_encode(hist[now], hist[now - RDP_BASELINES - 1], buf, cap);
    const rdp_qsnap* out;
    assert_int_equal(rdp_decode(d, buf, len, &out), RDP_E_NOT_FOUND);
    len = rdp_encode(hist[now], hist[now - 1], buf, cap);
    assert_int_equal(rdp_decode(d, buf, len, &out), RDP_OK);
    assert_memory_equal(out->vals, hist[now]->vals, hist[now]->val_count * sizeof(int32_t));
    rdp_decoder_free(d);
    assert_true(worst_pos <= 1.0 * MM);
    assert_true(worst_angle <= 0.1 * DEG);
    // The ticks did wrap: the first is above 65500, the last below 30.
    assert_true((uint16_t)hist[0]->tick > 65500 && (uint16_t)hist[now]->tick < 30);
    for (uint32_t i = 0; i < steps; ++i) {
        rdp_qsnap_free(hist[i]);
    }
    free(buf);
}

static void test_tick_arithmetic_wraps(void** state) {
    (void)state;
    assert_true(rdp_tick16_newer(0, 65535));
    assert_true(rdp_tick16_newer(5, 65530));
    assert_false(rdp_tick16_newer(65530, 5));
    assert_false(rdp_tick16_newer(7, 7));
    assert_true(rdp_tick16_newer(32767, 0));
    assert_false(rdp_tick16_newer(32768 + 1, 0));
    // 131070 = 0x1FFFE; the next wire tick 0x0001 is 131073.
    assert_true(rdp_tick_unwrap(131070, 1) == 131073);
    assert_true(rdp_tick_unwrap(131073, 0xFFFE) == 131070);
    assert_true(rdp_tick_unwrap(5, 3) == 3);
    assert_true(rdp_tick_unwrap(2, 65535) == 65535); // never below zero
}

static void test_an_unchanged_world_costs_a_few_bytes(void** state) {
    (void)state;
    rng = 5;
    test_world w;
    make_world(&w, 42, 50.0);
    rdp_qsnap* a = rdp_qsnap_new();
    rdp_qsnap* b = rdp_qsnap_new();
    assert_int_equal(rdp_quantize(&w.snap, a), 0);
    w.snap.tick++;
    assert_int_equal(rdp_quantize(&w.snap, b), 0);
    uint8_t buf[256];
    size_t n = rdp_encode(b, a, buf, sizeof buf);
    // 10 header bytes, world and count, and 2 bits per entity ("in the
    // baseline, right here" and "unchanged") plus the skip of 0.
    printf("unchanged world of %u entities: %zu bytes\n", w.count, n);
    assert_true(n > 0 && n <= 10 + 2 + (3 * w.count + 7) / 8);
    rdp_qsnap_free(a);
    rdp_qsnap_free(b);
}

static void test_malformed_frames_are_refused_and_change_nothing(void** state) {
    (void)state;
    rng = 99;
    test_world w;
    make_world(&w, 500, 10.0);
    rdp_qsnap* a = rdp_qsnap_new();
    rdp_qsnap* b = rdp_qsnap_new();
    assert_int_equal(rdp_quantize(&w.snap, a), 0);
    step_world(&w, 0.02);
    assert_int_equal(rdp_quantize(&w.snap, b), 0);
    size_t cap = rdp_encode_bound(a);
    uint8_t* full = malloc(cap);
    uint8_t* delta = malloc(cap);
    uint8_t* bad = malloc(cap);
    size_t nf = rdp_encode(a, NULL, full, cap), nd = rdp_encode(b, a, delta, cap);
    rdp_decoder* d = rdp_decoder_new();
    const rdp_qsnap* out;
    assert_int_equal(rdp_decode(d, full, nf, &out), RDP_OK);
    // Truncations, bit flips and garbage: any outcome but a crash; the
    // refused ones leave the baseline in place.
    uint32_t refused = 0;
    for (int t = 0; t < 3000; ++t) {
        size_t len = 1 + (size_t)uniform(0, (double)nd);
        memcpy(bad, delta, nd);
        if (t % 3 == 0) {
            for (int f = 0; f < 4; ++f) {
                size_t at = (size_t)uniform(0, (double)len);
                bad[at] ^= (uint8_t)(1u << (int)uniform(0, 8));
            }
        } else if (t % 3 == 1) {
            for (size_t i = 10; i < len; ++i) {
                bad[i] = (uint8_t)uniform(0, 256);
            }
        }
        rdp_decoder* fresh = rdp_decoder_new();
        assert_int_equal(rdp_decode(fresh, full, nf, &out), RDP_OK);
        if (rdp_decode(fresh, bad, len, &out) != RDP_OK) {
            refused++;
            // The baseline survives: the real delta still decodes.
            assert_int_equal(rdp_decode(fresh, delta, nd, &out), RDP_OK);
            assert_memory_equal(out->vals, b->vals, b->val_count * sizeof(int32_t));
        }
        rdp_decoder_free(fresh);
    }
    assert_true(refused > 1000);
    const uint8_t junk[] = {'R', 'D', 'S', '1', 2, 0, 0, 0};
    assert_int_equal(rdp_decode(d, junk, sizeof junk, &out), RDP_E_BAD_REQUEST);
    assert_int_equal(rdp_decode(d, full, 7, &out), RDP_E_BAD_REQUEST);
    rdp_decoder_free(d);
    free(full);
    free(delta);
    free(bad);
    rdp_qsnap_free(a);
    rdp_qsnap_free(b);
}

// A ball at the origin, unrotated, whose first coded quaternion component
// is then set to `c` (in the integers; the encoder codes them as given).
static size_t ball_frame(int32_t c, uint64_t tick, uint8_t* buf, size_t cap) {
    static const float pose[7] = {0, 0, 0, 0, 0, 0, 1};
    rdp_entity_state e;
    memset(&e, 0, sizeof e);
    e.entity = 7;
    e.kind = RDP_KIND_BALL;
    e.body_count = 1;
    e.pose = pose;
    rdp_snapshot snap = {.world = 1, .tick = tick, .entity_count = 1, .entities = &e};
    rdp_qsnap* q = rdp_qsnap_new();
    assert_int_equal(rdp_quantize(&snap, q), 0);
    assert_int_equal(q->vals[3], 3); // w is the largest, dropped
    q->vals[4] = c;
    size_t n = rdp_encode(q, NULL, buf, cap);
    rdp_qsnap_free(q);
    assert_true(n > 0);
    return n;
}

static void test_a_quaternion_component_no_encoder_makes_is_refused(void** state) {
    (void)state;
    // Components are rounded from |c| <= 1/sqrt(2) times 2047·sqrt(2), so
    // they lie in [-2047, 2047]; s(12) also holds -2048. A full frame with
    // it was taken, and then no delta against it could decode (a change
    // must land in [-2047, 2047]): found by fuzz_snapshot.
    uint8_t buf[64];
    const rdp_qsnap* out;
    rdp_decoder* d = rdp_decoder_new();
    size_t n = ball_frame(-2047, 10, buf, sizeof buf);
    assert_int_equal(rdp_decode(d, buf, n, &out), RDP_OK);
    assert_int_equal(out->vals[4], -2047);
    n = ball_frame(2047, 11, buf, sizeof buf);
    assert_int_equal(rdp_decode(d, buf, n, &out), RDP_OK);
    assert_int_equal(out->vals[4], 2047);
    n = ball_frame(-2048, 12, buf, sizeof buf);
    assert_int_equal(rdp_decode(d, buf, n, &out), RDP_E_BAD_REQUEST);
    rdp_decoder_free(d);
}

static void test_acks_round_trip(void** state) {
    (void)state;
    uint8_t buf[RDP_ACK_BYTES];
    rdp_ack_write(9007199254740991ull, 123456789012ull, buf);
    uint64_t world, tick;
    assert_true(rdp_ack_parse(buf, sizeof buf, &world, &tick));
    assert_true(world == 9007199254740991ull && tick == 123456789012ull);
    assert_false(rdp_ack_parse(buf, sizeof buf - 1, &world, &tick));
    buf[0] = 'B';
    assert_false(rdp_ack_parse(buf, sizeof buf, &world, &tick));
}

// ---------------------------------------------------------------------------
// Golden vectors (protocol/golden/), shared with clients/web/codec.js
// ---------------------------------------------------------------------------

static uint8_t* read_all(const char* path, size_t* len) {
    FILE* f = fopen(path, "rb");
    if (f == NULL) {
        return NULL;
    }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t* buf = malloc((size_t)n + 1);
    if (buf != NULL && fread(buf, 1, (size_t)n, f) == (size_t)n) {
        buf[n] = 0;
        *len = (size_t)n;
    } else {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    return buf;
}

static void test_golden_vectors_decode_to_their_listed_values(void** state) {
    (void)state;
    size_t jl = 0;
    char* text = (char*)read_all(RD_GOLDEN_DIR "/vectors.json", &jl);
    assert_non_null(text);
    cJSON* root = cJSON_Parse(text);
    assert_non_null(root);
    rdp_decoder* d = rdp_decoder_new();
    const cJSON* frames = cJSON_GetObjectItem(root, "frames");
    assert_true(cJSON_GetArraySize(frames) >= 3);
    const cJSON* fr;
    cJSON_ArrayForEach(fr, frames) {
        char path[512];
        snprintf(path, sizeof path, "%s/%s", RD_GOLDEN_DIR,
                 cJSON_GetObjectItem(fr, "file")->valuestring);
        size_t len = 0;
        uint8_t* bytes = read_all(path, &len);
        assert_non_null(bytes);
        assert_int_equal((int)len, cJSON_GetObjectItem(fr, "bytes")->valueint);
        const rdp_qsnap* out;
        assert_int_equal(rdp_decode(d, bytes, len, &out), RDP_OK);
        assert_int_equal((int)out->tick, cJSON_GetObjectItem(fr, "tick16")->valueint);
        // The values the frame was made from: decoded within the bounds.
        const cJSON* ents = cJSON_GetObjectItem(fr, "entities");
        assert_int_equal(cJSON_GetArraySize(ents), (int)out->entity_count);
        int k = 0;
        const cJSON* e;
        cJSON_ArrayForEach(e, ents) {
            const rdp_qentity* de = &out->ents[k++];
            assert_true((double)de->id == cJSON_GetObjectItem(e, "entity")->valuedouble);
            assert_int_equal(de->kind, cJSON_GetObjectItem(e, "kind")->valueint);
            // Exactly the encoder's integers (the JavaScript decoder is held
            // to the same).
            const cJSON* ints = cJSON_GetObjectItem(e, "ints");
            for (int i = 0; i < cJSON_GetArraySize(ints); ++i) {
                assert_int_equal(out->vals[de->offset + (uint32_t)i],
                                 cJSON_GetArrayItem(ints, i)->valueint);
            }
            const cJSON* vals = cJSON_GetObjectItem(e, "values");
            bool rigid = rdp_kind_is_rigid((rdp_kind)de->kind);
            int per = rigid ? 7 : 3;
            assert_int_equal(cJSON_GetArraySize(vals), per * (int)de->count);
            for (int i = 0; i < per * (int)de->count; ++i) {
                double want = cJSON_GetArrayItem(vals, i)->valuedouble;
                double got = out->f[de->offset + (uint32_t)i];
                bool rot = rigid && i % 7 >= 3;
                // Positions within 1 mm; quaternion components within what
                // 0.1° allows (sign: q and -q are one rotation).
                if (rot) {
                    int b = i - i % 7;
                    const float* gq = out->f + de->offset + (uint32_t)b + 3;
                    float wq[4];
                    for (int c = 0; c < 4; ++c) {
                        wq[c] = (float)cJSON_GetArrayItem(vals, b + 3 + c)->valuedouble;
                    }
                    assert_true(quat_angle(gq, wq) <= 0.1 * DEG);
                } else {
                    assert_true(fabs(got - want) <= 1.0 * MM);
                }
            }
        }
        free(bytes);
    }
    rdp_decoder_free(d);
    cJSON_Delete(root);
    free(text);
}

// ---------------------------------------------------------------------------
// Partial frames (interest management)
// ---------------------------------------------------------------------------

// The view entity of this id, or NULL.
static const rdp_qentity* view_entity(const rdp_qsnap* v, uint64_t id) {
    for (uint32_t k = 0; k < v->entity_count; ++k) {
        if (v->ents[k].id == id) {
            return &v->ents[k];
        }
    }
    return NULL;
}

static void test_golden_partial_frames_decode_to_their_listed_views(void** state) {
    (void)state;
    size_t jl = 0;
    char* text = (char*)read_all(RD_GOLDEN_DIR "/vectors.json", &jl);
    assert_non_null(text);
    cJSON* root = cJSON_Parse(text);
    assert_non_null(root);
    rdp_decoder* d = rdp_decoder_new();
    const cJSON* frames = cJSON_GetObjectItem(root, "partial");
    assert_int_equal(cJSON_GetArraySize(frames), 4);
    const cJSON* fr;
    cJSON_ArrayForEach(fr, frames) {
        char path[512];
        snprintf(path, sizeof path, "%s/%s", RD_GOLDEN_DIR,
                 cJSON_GetObjectItem(fr, "file")->valuestring);
        size_t len = 0;
        uint8_t* bytes = read_all(path, &len);
        assert_non_null(bytes);
        const rdp_qsnap* out;
        assert_int_equal(rdp_decode(d, bytes, len, &out), RDP_OK);
        assert_true(out->partial);
        assert_int_equal(out->reset, cJSON_IsTrue(cJSON_GetObjectItem(fr, "reset")));
        int tick16 = cJSON_GetObjectItem(fr, "tick16")->valueint;
        assert_int_equal((int)out->tick, tick16);
        const cJSON* view = cJSON_GetObjectItem(fr, "view");
        assert_int_equal(cJSON_GetArraySize(view), (int)out->entity_count);
        // Carried this frame: exactly the listed ones have its tick.
        int carried = 0;
        for (uint32_t k = 0; k < out->entity_count; ++k) {
            carried += out->ents[k].tick == tick16;
        }
        assert_int_equal(carried, cJSON_GetArraySize(cJSON_GetObjectItem(fr, "carried")));
        const cJSON* e;
        cJSON_ArrayForEach(e, view) {
            const rdp_qentity* de =
                view_entity(out, (uint64_t)cJSON_GetObjectItem(e, "entity")->valuedouble);
            assert_non_null(de);
            if (de == NULL) {
                continue;
            }
            assert_int_equal(de->kind, cJSON_GetObjectItem(e, "kind")->valueint);
            assert_int_equal(de->tick, cJSON_GetObjectItem(e, "tick16")->valueint);
            const cJSON* ints = cJSON_GetObjectItem(e, "ints");
            for (int i = 0; i < cJSON_GetArraySize(ints); ++i) {
                assert_int_equal(out->vals[de->offset + (uint32_t)i],
                                 cJSON_GetArrayItem(ints, i)->valueint);
            }
            const cJSON* vals = cJSON_GetObjectItem(e, "values");
            bool rigid = rdp_kind_is_rigid((rdp_kind)de->kind);
            for (int i = 0; i < cJSON_GetArraySize(vals); ++i) {
                if (!rigid || i % 7 < 3) {
                    assert_true(fabs(out->f[de->offset + (uint32_t)i] -
                                     cJSON_GetArrayItem(vals, i)->valuedouble) <= 1.0 * MM);
                }
            }
        }
        free(bytes);
    }
    rdp_decoder_free(d);
    cJSON_Delete(root);
    free(text);
}

// Partial frames of a random moving world over 60 ticks: each tick a random
// few entities are carried, each against a random earlier frame that
// carried it (or whole), now and then one is removed. The decoder's view
// must hold, for every entity, exactly the integers of the frame that last
// carried it (what the encoder kept per entity, independently).
static void test_partial_frames_keep_each_entity_as_last_carried(void** state) {
    (void)state;
    rng = 4242;
    test_world w;
    make_world(&w, 65500, 20.0); // across the 16-bit wrap
    enum { TICKS = 60 };
    rdp_qsnap* q[TICKS];
    int last[MAX_ENTS];  // tick index that last carried each entity, -1 none
    bool gone[MAX_ENTS]; // removed (no longer carried)
    int carried[TICKS][MAX_ENTS];
    memset(carried, 0, sizeof carried);
    for (int i = 0; i < MAX_ENTS; ++i) {
        last[i] = -1;
        gone[i] = false;
    }
    rdp_decoder* d = rdp_decoder_new();
    size_t cap = 1 << 22;
    uint8_t* buf = malloc(cap);
    uint8_t* buf2 = malloc(cap);
    uint8_t* one = malloc(cap);
    for (int t = 0; t < TICKS; ++t) {
        q[t] = rdp_qsnap_new();
        assert_int_equal(rdp_quantize(&w.snap, q[t]), 0);
        uint64_t removed[1];
        uint32_t nremoved = 0;
        if (t % 17 == 16) { // an entity goes
            int k = (int)uniform(0, w.count);
            if (!gone[k] && last[k] >= 0) {
                gone[k] = true;
                last[k] = -1;
                removed[nremoved++] = w.ents[k].entity;
            }
        }
        rdp_pwriter pw, pw2;
        assert_true(rdp_partial_begin(&pw, q[t], t == 0, removed, nremoved, buf, cap));
        // The same frame made from entity encodings made apart (how a
        // server shares them among clients): byte for byte the same.
        assert_true(rdp_partial_begin(&pw2, q[t], t == 0, removed, nremoved, buf2, cap));
        for (uint32_t k = 0; k < w.count; ++k) {
            // Entity 0 is carried every 45 frames only, against the frame
            // that last carried it: no longer among the 32 the decoder
            // keeps, so its baseline is what the view still holds of it.
            bool rare = k == 0;
            if (gone[k] || (rare ? t % 45 != 0 : uniform(0, 1) < 0.5)) {
                continue;
            }
            // A random earlier frame that carried it, within the 32 kept.
            int base = rare ? last[k] : -1;
            for (int b = t - 1; b >= 0 && b > t - 32 && !rare; --b) {
                if (carried[b][k] && uniform(0, 1) < 0.4) {
                    base = b;
                    break;
                }
            }
            assert_int_equal(rdp_partial_add(&pw, k, base >= 0 ? q[base] : NULL, k, cap), 1);
            size_t bits = rdp_partial_entity(q[t], k, base >= 0 ? q[base] : NULL, k, one, cap);
            assert_true(bits > 0 && bits != SIZE_MAX);
            assert_int_equal(rdp_partial_append(&pw2, one, bits, cap), 1);
            carried[t][k] = 1;
            last[k] = t;
        }
        size_t n = rdp_partial_end(&pw);
        assert_true(n > 0);
        assert_int_equal(rdp_partial_end(&pw2), n);
        assert_memory_equal(buf, buf2, n);
        const rdp_qsnap* out;
        assert_int_equal(rdp_decode(d, buf, n, &out), RDP_OK);
        uint32_t known = 0;
        for (uint32_t k = 0; k < w.count; ++k) {
            const rdp_qentity* de = view_entity(out, w.ents[k].entity);
            if (last[k] < 0) {
                assert_null(de);
                continue;
            }
            known++;
            assert_non_null(de);
            if (de == NULL) {
                continue;
            }
            const rdp_qsnap* src = q[last[k]];
            const rdp_qentity* se = &src->ents[k];
            assert_int_equal(de->tick, (uint16_t)src->tick);
            assert_int_equal(de->count, se->count);
            uint32_t per = rdp_kind_is_rigid((rdp_kind)se->kind) ? 7 : 3;
            assert_memory_equal(out->vals + de->offset, src->vals + se->offset,
                                per * se->count * sizeof(int32_t));
            assert_int_equal(de->state, se->state);
        }
        assert_int_equal(out->entity_count, known);
        step_world(&w, 0.01);
    }
    for (int t = 0; t < TICKS; ++t) {
        rdp_qsnap_free(q[t]);
    }
    rdp_decoder_free(d);
    free(buf);
    free(buf2);
    free(one);
}

static void test_a_partial_frame_stops_before_its_budget(void** state) {
    (void)state;
    rng = 5;
    test_world w;
    make_world(&w, 10, 5.0);
    rdp_qsnap* q = rdp_qsnap_new();
    assert_int_equal(rdp_quantize(&w.snap, q), 0);
    size_t cap = rdp_encode_bound(q) + 64;
    uint8_t* a = malloc(cap);
    uint8_t* b = malloc(cap);
    // Frame a: entity 0 alone. Frame b: entity 0, then every other entity
    // offered with no room left for any: it must end byte for byte as a.
    rdp_pwriter pa, pb;
    assert_true(rdp_partial_begin(&pa, q, false, NULL, 0, a, cap));
    assert_int_equal(rdp_partial_add(&pa, 0, NULL, 0, cap), 1);
    size_t budget = rdp_partial_size(&pa);
    size_t na = rdp_partial_end(&pa);
    assert_int_equal(na, budget);
    assert_true(rdp_partial_begin(&pb, q, false, NULL, 0, b, cap));
    memset(b + 8, 0xff, cap - 8); // the rollback must clear what it wrote
    assert_true(rdp_partial_begin(&pb, q, false, NULL, 0, b, cap));
    assert_int_equal(rdp_partial_add(&pb, 0, NULL, 0, budget), 1);
    for (uint32_t k = 1; k < w.count; ++k) {
        assert_int_equal(rdp_partial_add(&pb, k, NULL, 0, budget), 0);
    }
    assert_int_equal(rdp_partial_add(&pb, w.count, NULL, 0, budget), -1); // no such entity
    assert_int_equal(rdp_partial_end(&pb), na);
    assert_memory_equal(a, b, na);
    free(a);
    free(b);
    rdp_qsnap_free(q);
}

static void test_malformed_partial_frames_are_refused_and_change_nothing(void** state) {
    (void)state;
    rng = 77;
    test_world w;
    make_world(&w, 300, 10.0);
    rdp_qsnap* a = rdp_qsnap_new();
    rdp_qsnap* b = rdp_qsnap_new();
    assert_int_equal(rdp_quantize(&w.snap, a), 0);
    step_world(&w, 0.02);
    assert_int_equal(rdp_quantize(&w.snap, b), 0);
    size_t cap = 2 * rdp_encode_bound(a) + 64;
    uint8_t* first = malloc(cap);
    uint8_t* next = malloc(cap);
    uint8_t* bad = malloc(cap);
    rdp_pwriter pw;
    assert_true(rdp_partial_begin(&pw, a, true, NULL, 0, first, cap));
    for (uint32_t k = 0; k < a->entity_count; ++k) {
        assert_int_equal(rdp_partial_add(&pw, k, NULL, 0, cap), 1);
    }
    size_t n1 = rdp_partial_end(&pw);
    uint64_t gone = a->ents[0].id;
    assert_true(rdp_partial_begin(&pw, b, false, &gone, 1, next, cap));
    for (uint32_t k = 1; k < b->entity_count; ++k) {
        assert_int_equal(rdp_partial_add(&pw, k, a, k, cap), 1);
    }
    size_t n2 = rdp_partial_end(&pw);
    const rdp_qsnap* out;
    uint32_t refused = 0;
    for (int t = 0; t < 2000; ++t) {
        size_t len = 1 + (size_t)uniform(0, (double)n2);
        memcpy(bad, next, n2);
        if (t % 2 == 0) {
            for (int f = 0; f < 4; ++f) {
                size_t at = (size_t)uniform(0, (double)len);
                bad[at] ^= (uint8_t)(1u << (int)uniform(0, 8));
            }
        } else {
            for (size_t i = 8; i < len; ++i) {
                bad[i] = (uint8_t)uniform(0, 256);
            }
        }
        rdp_decoder* fresh = rdp_decoder_new();
        assert_int_equal(rdp_decode(fresh, first, n1, &out), RDP_OK);
        if (rdp_decode(fresh, bad, len, &out) != RDP_OK) {
            refused++;
            // The view and the baselines survive: the real frame decodes.
            assert_int_equal(rdp_decode(fresh, next, n2, &out), RDP_OK);
            assert_int_equal(out->entity_count, b->entity_count - 1);
            assert_null(view_entity(out, gone));
            const rdp_qentity* last = view_entity(out, b->ents[b->entity_count - 1].id);
            assert_non_null(last);
        }
        rdp_decoder_free(fresh);
    }
    assert_true(refused > 500);
    // Flags no decoder knows, and partial with delta, are refused.
    rdp_decoder* d = rdp_decoder_new();
    memcpy(bad, first, n1);
    bad[5] = 8;
    assert_int_equal(rdp_decode(d, bad, n1, &out), RDP_E_BAD_REQUEST);
    bad[5] = 3;
    assert_int_equal(rdp_decode(d, bad, n1, &out), RDP_E_BAD_REQUEST);
    // A based entity whose baseline frame the decoder never saw.
    assert_int_equal(rdp_decode(d, next, n2, &out), RDP_E_NOT_FOUND);
    rdp_decoder_free(d);
    free(first);
    free(next);
    free(bad);
    rdp_qsnap_free(a);
    rdp_qsnap_free(b);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_golden_partial_frames_decode_to_their_listed_views),
        cmocka_unit_test(test_partial_frames_keep_each_entity_as_last_carried),
        cmocka_unit_test(test_a_partial_frame_stops_before_its_budget),
        cmocka_unit_test(test_malformed_partial_frames_are_refused_and_change_nothing),
        cmocka_unit_test(test_full_snapshots_decode_within_the_bounds),
        cmocka_unit_test(test_deltas_decode_against_every_baseline_across_the_wrap),
        cmocka_unit_test(test_tick_arithmetic_wraps),
        cmocka_unit_test(test_an_unchanged_world_costs_a_few_bytes),
        cmocka_unit_test(test_malformed_frames_are_refused_and_change_nothing),
        cmocka_unit_test(test_a_quaternion_component_no_encoder_makes_is_refused),
        cmocka_unit_test(test_acks_round_trip),
        cmocka_unit_test(test_golden_vectors_decode_to_their_listed_values),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
