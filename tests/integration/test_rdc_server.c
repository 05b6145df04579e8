/*
 * test_rdc_server.c: the C client (rdc) against a real ragdolld, started
 * as a process (server_proc.c: `ragdolld --port 0`, port read from its
 * "listening on" line; the binary comes from $RAGDOLLD). Each test drives one client on
 * its own loop, and ends by closing it and asserting that the loop closes
 * cleanly (no leaked handle).
 *
 * Expected values come from the assets and the commands, not from the
 * client: the humanoid's pelvis capsule runs from 0.90 m to 1.02 m above
 * its feet in assets/skeletons/humanoid.json (centre 0.96 m; the idle clip
 * moves it by millimetres), a rope's first particle is pinned at its
 * anchor, and its particles are segment_length apart.
 */
// cmocka.h needs these four before it (cmocka docs); keep the order.
// clang-format off
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
// clang-format on

#include "rdc.h"
#include "server_proc.h"

#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

// ---------------------------------------------------------------------------
// The server process
// ---------------------------------------------------------------------------

// ---------------------------------------------------------------------------
// The client side
// ---------------------------------------------------------------------------

#define MAX_BODIES 32
/// JSON frames the peer keeps for comparison.
#define RING 128

/// What a test learns from replies, events and snapshots.
typedef struct fixture {
    uv_loop_t loop;
    uv_timer_t wake;
    server srv;
    rdc_client* c;
    bool closed;
    // Connection.
    int connected, disconnected;
    rdc_status last_down;
    uint32_t retry_ms[32];
    int retries;
    // The last reply to call().
    bool replied;
    int status;
    char code[32];
    cJSON* reply; ///< Owned copy.
    int sub_replies, sub_failures;
    // Events.
    int character_ragdoll_events, world_destroyed;
    uint64_t event_entity;
    // Snapshots of the entities a test watches.
    uint64_t watch_character, watch_rope;
    uint64_t snapshots, last_tick;
    bool bad_order;
    rdc_format last_format;
    bool have_character, have_rope;
    rdc_char_state char_state;
    uint32_t char_bodies;
    float pose[MAX_BODIES * 7];
    char bone0[32];
    uint32_t rope_count;
    rdc_interp* interp; ///< Fed every snapshot when set.
    float rope[MAX_BODIES * 3];
    // Binary frames: sizes of full frames and deltas.
    uint64_t full_frames, delta_frames, full_bytes, delta_bytes, undecoded;
    // A second client, subscribed to the same world in JSON: its frames by
    // tick, for comparing with the binary ones.
    rdc_client* peer;
    bool peer_closed;
    uint64_t peer_tick[RING];
    float peer_pose[RING][MAX_BODIES * 7];
    float peer_rope[RING][MAX_BODIES * 3];
    uint64_t compared, compared_rope;
    double worst_pos, worst_quat;
    // Budgeted subscriptions: partial frames, and entities in them whose
    // state is older than the frame.
    uint64_t partial_frames, partial_bytes, stale;
    uint64_t cloths[4]; ///< Cloth entities seen in the last snapshot.
    uint32_t cloth_count;
} fixture;

static void on_wake(uv_timer_t* t) {
    (void)t; // keeps uv_run(UV_RUN_ONCE) from sleeping long
}

static void on_state(rdc_client* c, const rdc_status* st, void* user) {
    (void)c;
    fixture* f = user;
    if (st->state == RDC_CONNECTED) {
        f->connected++;
        return;
    }
    f->disconnected++;
    f->last_down = *st;
    if (f->retries < 32) {
        f->retry_ms[f->retries++] = st->retry_ms;
    }
}

static void on_event(rdc_client* c, const rdc_event* ev, void* user) {
    (void)c;
    fixture* f = user;
    const char* state = cJSON_GetStringValue(cJSON_GetObjectItem(ev->json, "state"));
    f->world_destroyed += strcmp(ev->name, "world_destroyed") == 0;
    if (strcmp(ev->name, "character_state") == 0 && state != NULL &&
        strcmp(state, "ragdoll") == 0) {
        f->character_ragdoll_events++;
        f->event_entity = ev->entity;
    }
}

// The angle between two rotations (x, y, z, w), radians: of the relative
// rotation conj(a)·b, as 2·atan2(|v|, |w|), which stays accurate for small
// angles (acos of a dot product near 1 does not).
static double quat_angle(const float* a, const float* b) {
    double ax = -a[0], ay = -a[1], az = -a[2], aw = a[3];
    double bx = b[0], by = b[1], bz = b[2], bw = b[3];
    double w = aw * bw - ax * bx - ay * by - az * bz;
    double x = aw * bx + ax * bw + ay * bz - az * by;
    double y = aw * by - ax * bz + ay * bw + az * bx;
    double z = aw * bz + ax * by - ay * bx + az * bw;
    return 2 * atan2(sqrt(x * x + y * y + z * z), fabs(w));
}

static void on_snapshot(rdc_client* c, const rdc_snapshot* s, void* user) {
    (void)c;
    fixture* f = user;
    if (s->tick <= f->last_tick && f->last_format == s->format) {
        f->bad_order = true; // ticks must increase within a subscription
    }
    f->last_tick = s->tick;
    f->last_format = s->format;
    f->snapshots++;
    if (f->interp != NULL) {
        assert_int_equal(rdc_interp_push(f->interp, s, uv_hrtime()), 0);
    }
    const rdc_entity* ch = rdc_snapshot_find(s, f->watch_character);
    if (ch != NULL && ch->count <= MAX_BODIES) {
        f->have_character = true;
        f->char_state = ch->state;
        f->char_bodies = ch->count;
        memcpy(f->pose, ch->pose, 7 * sizeof(float) * ch->count);
        snprintf(f->bone0, sizeof f->bone0, "%s", ch->bone_names != NULL ? ch->bone_names[0] : "");
    }
    f->cloth_count = 0;
    for (uint32_t i = 0; i < s->entity_count && f->cloth_count < 4; ++i) {
        if (s->entities[i].kind == RDC_KIND_CLOTH) {
            f->cloths[f->cloth_count++] = s->entities[i].id;
        }
    }
    const rdc_entity* rope = rdc_snapshot_find(s, f->watch_rope);
    if (rope != NULL && rope->count <= MAX_BODIES) {
        f->have_rope = true;
        f->rope_count = rope->count;
        memcpy(f->rope, rope->xyz, 3 * sizeof(float) * rope->count);
    }
    if (s->format == RDC_FORMAT_BINARY && !s->decoded) {
        f->undecoded++;
    }
    if (s->format == RDC_FORMAT_BINARY) {
        f->full_frames += !s->delta;
        f->full_bytes += s->delta ? 0 : s->bytes;
        f->delta_frames += s->delta;
        f->delta_bytes += s->delta ? s->bytes : 0;
    }
    if (s->format == RDC_FORMAT_BINARY && s->partial) {
        f->partial_frames++;
        f->partial_bytes += s->bytes;
        f->stale += (ch != NULL && ch->tick < s->tick) + (rope != NULL && rope->tick < s->tick);
        f->bad_order |=
            (ch != NULL && ch->tick > s->tick) || (rope != NULL && rope->tick > s->tick);
    }
    // Each entity as the JSON peer saw it at the tick its state is from
    // (the snapshot's, but for a budgeted subscription's entities that the
    // last frame did not carry): within the binary format's 0.49 mm plus
    // JSON's 0.05 mm rounding, and its 0.06° (q or -q).
    if (f->peer == NULL || !s->decoded || s->format != RDC_FORMAT_BINARY) {
        return;
    }
    uint32_t slot = ch != NULL ? (uint32_t)(ch->tick % RING) : 0;
    if (ch != NULL && f->peer_tick[slot] == ch->tick) {
        for (uint32_t b = 0; b < ch->count && b < MAX_BODIES; ++b) {
            const float* p = ch->pose + 7 * b;
            const float* q = f->peer_pose[slot] + 7 * b;
            for (int k = 0; k < 3; ++k) {
                double d = fabs((double)p[k] - q[k]);
                f->worst_pos = d > f->worst_pos ? d : f->worst_pos;
            }
            double angle = quat_angle(p + 3, q + 3);
            f->worst_quat = angle > f->worst_quat ? angle : f->worst_quat;
        }
        f->compared++;
    }
    slot = rope != NULL ? (uint32_t)(rope->tick % RING) : 0;
    if (rope != NULL && f->peer_tick[slot] == rope->tick) {
        for (uint32_t k = 0; k < 3 * rope->count && k < 3 * MAX_BODIES; ++k) {
            double d = fabs((double)rope->xyz[k] - f->peer_rope[slot][k]);
            f->worst_pos = d > f->worst_pos ? d : f->worst_pos;
        }
        f->compared_rope++;
    }
}

static void on_peer_snapshot(rdc_client* c, const rdc_snapshot* s, void* user) {
    (void)c;
    fixture* f = user;
    const rdc_entity* ch = rdc_snapshot_find(s, f->watch_character);
    const rdc_entity* rope = rdc_snapshot_find(s, f->watch_rope);
    if (ch == NULL || rope == NULL || ch->count > MAX_BODIES || rope->count > MAX_BODIES) {
        return;
    }
    uint32_t slot = (uint32_t)(s->tick % RING);
    f->peer_tick[slot] = s->tick;
    memcpy(f->peer_pose[slot], ch->pose, 7 * sizeof(float) * ch->count);
    memcpy(f->peer_rope[slot], rope->xyz, 3 * sizeof(float) * rope->count);
}

static int setup_with(void** state, bool demo) {
    fixture* f = calloc(1, sizeof *f);
    assert_non_null(f);
    assert_int_equal(uv_loop_init(&f->loop), 0);
    uv_timer_init(&f->loop, &f->wake);
    uv_timer_start(&f->wake, on_wake, 10, 10);
    if (server_start(&f->srv, 0, demo) != 0) {
        fail_msg("ragdolld did not start (set RAGDOLLD to its path)");
    }
    *state = f;
    return 0;
}

static int setup(void** state) {
    return setup_with(state, false);
}

static int setup_demo(void** state) {
    return setup_with(state, true);
}

#define RUN_UNTIL(f, cond, ms)                                                                     \
    do {                                                                                           \
        uint64_t deadline_ = uv_hrtime() + (uint64_t)(ms)*1000000ull;                              \
        while (!(cond) && uv_hrtime() < deadline_) {                                               \
            uv_run(&(f)->loop, UV_RUN_ONCE);                                                       \
        }                                                                                          \
        assert_true(cond);                                                                         \
    } while (0)

static void open_client_with(fixture* f, int port, const char* path, bool decode) {
    char url[128];
    snprintf(url, sizeof url, "ws://127.0.0.1:%d%s", port, path);
    rdc_config cfg = rdc_config_default();
    cfg.url = url;
    cfg.user = f;
    cfg.on_state = on_state;
    cfg.on_event = on_event;
    cfg.on_snapshot = on_snapshot;
    cfg.decode_binary = decode;
    assert_int_equal(rdc_open(&f->loop, &cfg, &f->c), 0);
}

static void open_client(fixture* f, int port, const char* path) {
    open_client_with(f, port, path, true);
}

static void connect_client(fixture* f) {
    open_client(f, f->srv.port, "/ws");
    RUN_UNTIL(f, f->connected == 1, 10000);
}

static void on_closed(rdc_client* c, void* arg) {
    (void)c;
    ((fixture*)arg)->closed = true;
}

static void on_peer_closed(rdc_client* c, void* arg) {
    (void)c;
    ((fixture*)arg)->peer_closed = true;
}

static int teardown(void** state) {
    fixture* f = *state;
    if (f->peer != NULL) {
        rdc_close(f->peer, on_peer_closed, f);
        RUN_UNTIL(f, f->peer_closed, 5000);
    }
    if (f->c != NULL && !f->closed) {
        rdc_close(f->c, on_closed, f);
        RUN_UNTIL(f, f->closed, 5000);
    }
    uv_close((uv_handle_t*)&f->wake, NULL);
    uv_run(&f->loop, UV_RUN_DEFAULT);
    int rc = uv_loop_close(&f->loop);
    server_stop(&f->srv, SIGTERM);
    cJSON_Delete(f->reply);
    free(f);
    assert_int_equal(rc, 0);
    return 0;
}

static void on_reply(rdc_client* c, const rdc_reply* r, void* arg) {
    (void)c;
    fixture* f = arg;
    f->replied = true;
    f->status = r->status;
    snprintf(f->code, sizeof f->code, "%s", r->code != NULL ? r->code : "");
    cJSON_Delete(f->reply);
    f->reply = r->json != NULL ? cJSON_Duplicate(r->json, true) : NULL;
}

// Sends a command and waits for its outcome; returns the status.
static int call(fixture* f, const char* json) {
    f->replied = false;
    int rc = rdc_send_text(f->c, json, strlen(json), on_reply, f, NULL);
    assert_int_equal(rc, 0);
    RUN_UNTIL(f, f->replied, 10000);
    return f->status;
}

static uint64_t reply_u64(const fixture* f, const char* key) {
    const cJSON* v = cJSON_GetObjectItem(f->reply, key);
    assert_true(cJSON_IsNumber(v));
    return (uint64_t)v->valuedouble;
}

static void on_sub(rdc_client* c, const rdc_reply* r, void* arg) {
    (void)c;
    fixture* f = arg;
    if (r->status == 0) {
        f->sub_replies++;
    } else {
        f->sub_failures++;
    }
}

// Creates a world with a character at (1, 0, 2) and a rope anchored at
// (-2, 4, 1): 10 segments of 0.25 m.
static uint64_t make_world(fixture* f) {
    assert_int_equal(call(f, "{\"op\":\"create_world\",\"name\":\"rdc test\"}"), 0);
    uint64_t world = reply_u64(f, "world");
    char cmd[256];
    snprintf(cmd, sizeof cmd, "{\"op\":\"spawn_character\",\"world\":%llu,\"position\":[1,0,2]}",
             (unsigned long long)world);
    assert_int_equal(call(f, cmd), 0);
    f->watch_character = reply_u64(f, "entity");
    snprintf(cmd, sizeof cmd,
             "{\"op\":\"spawn_rope\",\"world\":%llu,\"anchor\":[-2,4,1],\"segments\":10,"
             "\"segment_length\":0.25}",
             (unsigned long long)world);
    assert_int_equal(call(f, cmd), 0);
    f->watch_rope = reply_u64(f, "entity");
    return world;
}

// The standing character and the hanging rope, as the last snapshot shows them.
static void check_character_and_rope(fixture* f) {
    assert_int_equal(f->char_state, RDC_CHAR_ANIMATED);
    assert_int_equal(f->char_bodies, 16); // the humanoid's bones
    // Bone 0 is the root, the pelvis (parents first).
    assert_float_equal(f->pose[0], 1.0, 0.02);
    assert_float_equal(f->pose[1], 0.96, 0.02);
    assert_float_equal(f->pose[2], 2.0, 0.02);
    double qn = 0;
    for (int k = 3; k < 7; ++k) {
        qn += (double)f->pose[k] * f->pose[k];
    }
    assert_float_equal(qn, 1.0, 1e-3);
    assert_int_equal(f->rope_count, 11);
    // The anchor is pinned where it was put (JSON rounds to 0.1 mm).
    assert_float_equal(f->rope[0], -2.0, 1e-4);
    assert_float_equal(f->rope[1], 4.0, 1e-4);
    assert_float_equal(f->rope[2], 1.0, 1e-4);
    // Each segment keeps about its length (the solver allows some stretch).
    for (uint32_t i = 1; i < f->rope_count; ++i) {
        double d = 0;
        for (int k = 0; k < 3; ++k) {
            double e = (double)f->rope[3 * i + k] - f->rope[3 * (i - 1) + k];
            d += e * e;
        }
        assert_float_equal(sqrt(d), 0.25, 0.02);
    }
}

// ---------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------

static void test_rdc_json_snapshots_show_a_standing_character_and_a_rope(void** state) {
    fixture* f = *state;
    connect_client(f);
    uint64_t world = make_world(f);
    assert_int_equal(rdc_subscribe(f->c, world, RDC_FORMAT_JSON, 30, on_sub, f), 0);
    RUN_UNTIL(f, f->sub_replies == 1, 5000);
    // Half a second of snapshots: the rope settles toward hanging.
    uint64_t first = f->snapshots;
    RUN_UNTIL(f, f->snapshots >= first + 15 && f->have_character && f->have_rope, 10000);
    assert_false(f->bad_order);
    assert_int_equal(f->last_format, RDC_FORMAT_JSON);
    assert_string_equal(f->bone0, "pelvis");
    check_character_and_rope(f);
}

// The peer: a second client subscribed to the same world in JSON, every
// tick (on_peer_snapshot keeps its frames by tick for comparing).
static void open_json_peer(fixture* f, uint64_t world) {
    char url[128];
    snprintf(url, sizeof url, "ws://127.0.0.1:%d/ws", f->srv.port);
    rdc_config cfg = rdc_config_default();
    cfg.url = url;
    cfg.user = f;
    cfg.on_snapshot = on_peer_snapshot;
    assert_int_equal(rdc_open(&f->loop, &cfg, &f->peer), 0);
    assert_int_equal(rdc_subscribe(f->peer, world, RDC_FORMAT_JSON, 60, on_sub, f), 0);
    RUN_UNTIL(f, f->sub_replies == 1, 10000);
}

static void test_rdc_binary_snapshots_decode_to_the_same_values(void** state) {
    fixture* f = *state;
    connect_client(f);
    uint64_t world = make_world(f);
    open_json_peer(f, world);
    assert_int_equal(rdc_subscribe(f->c, world, RDC_FORMAT_BINARY, 60, on_sub, f), 0);
    RUN_UNTIL(f, f->sub_replies == 2, 5000);
    // A second of snapshots, most of them compared tick by tick.
    RUN_UNTIL(f, f->compared >= 40 && f->have_character && f->have_rope, 20000);
    assert_int_equal(f->last_format, RDC_FORMAT_BINARY);
    assert_false(f->bad_order);
    assert_true(f->worst_pos <= 1e-3);
    assert_true(f->worst_quat <= 0.1 * 3.14159265358979 / 180);
    check_character_and_rope(f);
    // The rope's anchor lies on the 1/1024 m grid: exact.
    assert_true(f->rope[0] == -2.0f && f->rope[1] == 4.0f && f->rope[2] == 1.0f);
    // Bone names come from the describe rdc sent by itself.
    RUN_UNTIL(f, strcmp(f->bone0, "pelvis") == 0, 5000);

    // Every frame was acknowledged, so after the first full one the server
    // sent deltas against them, smaller than full frames.
    rdc_stats st;
    rdc_get_stats(f->c, &st);
    assert_int_equal(st.bad_snapshots, 0);
    assert_int_equal(st.resyncs, 0);
    assert_true(st.acks >= st.snapshots - 1);
    assert_true(f->full_frames >= 1 && f->full_frames <= 2);
    assert_true(f->delta_frames >= 30);
    double full = (double)f->full_bytes / (double)f->full_frames;
    double delta = (double)f->delta_bytes / (double)f->delta_frames;
    print_message("binary: full frame %.0f bytes, delta %.1f bytes on average (%llu frames)\n",
                  full, delta, (unsigned long long)f->delta_frames);
    assert_true(delta < 0.75 * full);
}

static void test_rdc_budgeted_snapshots_hold_each_entity_as_last_sent(void** state) {
    fixture* f = *state;
    connect_client(f);
    uint64_t world = make_world(f);
    open_json_peer(f, world);
    assert_int_equal(rdc_subscribe_budget(f->c, world, 60, 0, on_sub, f), RDC_E_CONFIG);
    assert_int_equal(rdc_subscribe_budget(f->c, world, 60, 999, on_sub, f), RDC_E_CONFIG);
    // 2000 B/s at 60 frames a second: 33 bytes a frame, less than the
    // standing character's 16 bones take: it and the rope come in
    // turns, each entity as of its own tick.
    assert_int_equal(rdc_subscribe_budget(f->c, world, 60, 2000, on_sub, f), 0);
    RUN_UNTIL(f, f->sub_replies == 2, 5000);
    uint64_t t0 = uv_now(&f->loop);
    RUN_UNTIL(f, f->compared >= 20 && f->compared_rope >= 5, 20000);
    uint64_t t1 = uv_now(&f->loop);
    print_message("budgeted: %llu partial frames, %llu bytes in %.2f s, %llu stale entities\n",
                  (unsigned long long)f->partial_frames, (unsigned long long)f->partial_bytes,
                  (double)(t1 - t0) / 1000.0, (unsigned long long)f->stale);
    assert_false(f->bad_order);
    assert_true(f->partial_frames >= 10);
    assert_true(f->stale > 0); // some frames did not carry both
    assert_true(f->worst_pos <= 0.00049 + 0.00005 + 1e-6);
    assert_true(f->worst_quat <= 0.1 * 3.14159265358979 / 180);
    check_character_and_rope(f);
    rdc_stats st;
    rdc_get_stats(f->c, &st);
    assert_int_equal(st.bad_snapshots, 0);
    assert_int_equal(st.resyncs, 0);
}

static void test_rdc_undecoded_frames_are_counted_and_stay_full(void** state) {
    fixture* f = *state;
    open_client_with(f, f->srv.port, "/ws", false);
    RUN_UNTIL(f, f->connected == 1, 10000);
    uint64_t world = make_world(f);
    assert_int_equal(rdc_subscribe(f->c, world, RDC_FORMAT_BINARY, 30, on_sub, f), 0);
    RUN_UNTIL(f, f->sub_replies == 1 && f->snapshots >= 20, 10000);
    // Never acknowledged: every frame is a full one, and none is decoded.
    assert_int_equal(f->undecoded, f->snapshots);
    assert_int_equal(f->delta_frames, 0);
    assert_false(f->bad_order);
    assert_false(f->have_character);
    rdc_stats st;
    rdc_get_stats(f->c, &st);
    assert_int_equal(st.acks, 0);
    assert_int_equal(st.binary_frames, st.snapshots);
}

static void test_rdc_kill_names_a_bone_and_makes_a_ragdoll(void** state) {
    fixture* f = *state;
    connect_client(f);
    uint64_t world = make_world(f);
    assert_int_equal(rdc_subscribe(f->c, world, RDC_FORMAT_BINARY, 60, on_sub, f), 0);
    RUN_UNTIL(f, f->sub_replies == 1 && f->have_character, 10000);
    // Hit at the head's height (its capsule spans 1.49-1.65 m): the head takes it.
    char cmd[256];
    snprintf(cmd, sizeof cmd,
             "{\"op\":\"kill\",\"world\":%llu,\"entity\":%llu,\"hit_point\":[1,1.57,2],"
             "\"impulse\":[0,0,30]}",
             (unsigned long long)world, (unsigned long long)f->watch_character);
    assert_int_equal(call(f, cmd), 0);
    assert_string_equal(cJSON_GetObjectItem(f->reply, "bone")->valuestring, "head");
    uint64_t kill_tick = reply_u64(f, "tick");
    RUN_UNTIL(f, f->character_ragdoll_events == 1, 5000);
    assert_int_equal(f->event_entity, f->watch_character);
    RUN_UNTIL(f, f->last_tick > kill_tick + 30, 5000);
    assert_int_equal(f->char_state, RDC_CHAR_RAGDOLL);
    // Half a second after a 30 N s push the head has moved along +Z.
    int head = 3; // humanoid.json: pelvis, spine, chest, head, ...
    assert_true(f->pose[7 * head + 2] > 2.05f);
}

static rdc_hit g_hit;
static int g_hit_rc;

static void on_hit(rdc_client* c, const rdc_reply* r, void* arg) {
    on_reply(c, r, arg);
    g_hit_rc = rdc_hit_parse(r, &g_hit);
}

static int cast(fixture* f, uint64_t world, const double o[3], const double d[3], uint64_t seen) {
    f->replied = false;
    assert_int_equal(rdc_raycast(f->c, world, o, d, 0, seen, on_hit, f), 0);
    RUN_UNTIL(f, f->replied, 10000);
    return g_hit_rc;
}

// The character stands at (1, 0, 2); its head's capsule (radius 0.10 m,
// humanoid.json) spans 1.49-1.65 m. A ray along -Z at 1.57 m meets the
// front of it 0.10 m before its axis: z = 2.10.
static void test_rdc_raycast_names_the_bone_it_hits(void** state) {
    fixture* f = *state;
    connect_client(f);
    uint64_t world = make_world(f);
    const double o[3] = {1, 1.57, 5}, d[3] = {0, 0, -1};
    assert_int_equal(cast(f, world, o, d, RDC_NOW), 0);
    assert_true(g_hit.hit);
    assert_string_equal(g_hit.kind, "bone");
    assert_string_equal(g_hit.bone, "head");
    assert_int_equal(g_hit.entity, f->watch_character);
    assert_int_equal(g_hit.index, -1);
    assert_true(fabs(g_hit.point[2] - 2.10) < 0.02);
    assert_true(g_hit.normal[2] > 0.95);
    assert_true(fabs(g_hit.distance - (5 - g_hit.point[2])) < 1e-3);
    assert_false(g_hit.has_seen_tick);
    // Down onto the ground beside it; and at tick 0, clamped to what is kept.
    const double o2[3] = {4, 2, 4}, d2[3] = {0, -2, 0};
    assert_int_equal(cast(f, world, o2, d2, 0), 0);
    assert_string_equal(g_hit.kind, "ground");
    assert_int_equal(g_hit.entity, 0);
    assert_true(fabs(g_hit.point[0] - 4) < 1e-9 && fabs(g_hit.point[1]) < 1e-9);
    assert_true(fabs(g_hit.distance - 2) < 1e-9);
    assert_true(g_hit.has_seen_tick);
    // Up into the sky: nothing.
    const double up[3] = {0, 1, 0};
    assert_int_equal(cast(f, world, o2, up, RDC_NOW), 0);
    assert_false(g_hit.hit);
    // A zero direction: the server's out_of_range; a NaN never leaves rdc.
    const double zero[3] = {0, 0, 0}, nan3[3] = {NAN, 0, 0};
    assert_int_equal(cast(f, world, o2, zero, RDC_NOW), RDC_E_SERVER);
    assert_string_equal(f->code, "out_of_range");
    assert_int_equal(rdc_raycast(f->c, world, o2, nan3, 0, RDC_NOW, on_hit, f), RDC_E_CONFIG);
    assert_int_equal(rdc_raycast(f->c, 0, o2, d2, 0, RDC_NOW, on_hit, f), RDC_E_CONFIG);
    assert_int_equal(rdc_raycast(f->c, world, NULL, d2, 0, RDC_NOW, on_hit, f), RDC_E_CONFIG);
}

// A humanoid walking along +Z at the walk clip's 1.2 m/s, seen through
// rdc_interp at 30 snapshots a second and drawn every 5 ms for 2 s: the
// pelvis drawn never steps back, and between two draws it moves about
// 1.2 m/s × 5 ms = 6 mm (under 2 cm: no jumps from snapshot to snapshot,
// which are 4 cm apart; 6.1 mm measured); the delay is at least two send
// intervals (67.1 ms measured).
static void test_rdc_interp_draws_a_walk_smoothly(void** state) {
    fixture* f = *state;
    connect_client(f);
    assert_int_equal(call(f, "{\"op\":\"create_world\",\"name\":\"walk\"}"), 0);
    const uint64_t world = reply_u64(f, "world");
    char cmd[192];
    snprintf(cmd, sizeof cmd,
             "{\"op\":\"spawn_character\",\"world\":%llu,\"position\":[0,0,0],\"clip\":\"walk\"}",
             (unsigned long long)world);
    assert_int_equal(call(f, cmd), 0);
    f->watch_character = reply_u64(f, "entity");
    assert_int_equal(rdc_interp_create(60, 30, 0, &f->interp), 0);
    assert_int_equal(rdc_subscribe(f->c, world, RDC_FORMAT_BINARY, 30, on_sub, f), 0);
    RUN_UNTIL(f, f->sub_replies == 1 && f->snapshots > 10, 10000);
    double last_z = -1e9, most_step = 0.0, delay = 0.0;
    int draws = 0, back = 0, jumps = 0;
    const uint64_t end = uv_hrtime() + 2000 * 1000000ull;
    while (uv_hrtime() < end) {
        const uint64_t next = uv_hrtime() + 5 * 1000000ull;
        while (uv_hrtime() < next) {
            uv_run(&f->loop, UV_RUN_NOWAIT);
        }
        rdc_interp_info info;
        const rdc_snapshot* s = rdc_interp_sample(f->interp, uv_hrtime(), &info);
        const rdc_entity* hero = s != NULL ? rdc_snapshot_find(s, f->watch_character) : NULL;
        if (hero == NULL) {
            fail_msg("no character drawn");
            return;
        }
        const double z = hero->pose[2]; // the pelvis
        if (draws > 0) {
            back += z < last_z - 1e-4;
            most_step = fmax(most_step, fabs(z - last_z));
            jumps += fabs(z - last_z) > 0.02;
        }
        last_z = z;
        delay = info.delay_ms;
        draws++;
    }
    printf("interp: %d draws, largest step %.4f m, %d over 2 cm, delay %.1f ms\n", draws, most_step,
           jumps, delay);
    assert_true(draws > 100);
    assert_int_equal(back, 0);
    // Wide: a server under ThreadSanitizer may stall; then time on screen
    // catches up in a few larger steps.
    assert_true(jumps <= draws / 50);
    assert_true(delay >= 66.0);
    rdc_interp_destroy(f->interp);
    f->interp = NULL;
}

static void test_rdc_server_errors_arrive_as_errors(void** state) {
    fixture* f = *state;
    connect_client(f);
    assert_int_equal(call(f, "{\"op\":\"describe\",\"world\":77,\"entity\":1}"), RDC_E_SERVER);
    assert_string_equal(f->code, "not_found");
    assert_int_equal(call(f, "{\"op\":\"create_world\",\"name\":\"w\",\"tick_hz\":1000}"),
                     RDC_E_SERVER);
    assert_string_equal(f->code, "out_of_range");
    assert_int_equal(call(f, "{\"op\":\"teleport\"}"), RDC_E_SERVER);
    assert_string_equal(f->code, "unknown_op");
    // The error object is there in full.
    const cJSON* err = cJSON_GetObjectItem(f->reply, "error");
    assert_true(cJSON_IsString(cJSON_GetObjectItem(err, "message")));
    // What is not a command never leaves the client.
    assert_int_equal(rdc_send_text(f->c, "[1,2]", 5, on_reply, f, NULL), RDC_E_BAD_COMMAND);
    assert_int_equal(rdc_send_text(f->c, "{\"id\":1}", 8, on_reply, f, NULL), RDC_E_BAD_COMMAND);
    assert_int_equal(rdc_send_text(f->c, "{\"op\":", 6, on_reply, f, NULL), RDC_E_BAD_COMMAND);
    // And the connection is fine afterwards.
    assert_int_equal(call(f, "{\"op\":\"list_worlds\"}"), 0);
    assert_true(cJSON_IsArray(cJSON_GetObjectItem(f->reply, "worlds")));
}

// Whether a cloth of world 1's last snapshot is frozen by level of detail
// (garments never are: the demo's sheet is).
static bool a_cloth_frozen(fixture* f) {
    uint32_t n = f->cloth_count;
    uint64_t ids[4];
    memcpy(ids, f->cloths, sizeof ids);
    for (uint32_t i = 0; i < n; ++i) {
        char cmd[96];
        snprintf(cmd, sizeof cmd, "{\"op\":\"describe\",\"world\":1,\"entity\":%llu}",
                 (unsigned long long)ids[i]);
        if (call(f, cmd) == 0) {
            const char* lod = cJSON_GetStringValue(cJSON_GetObjectItem(f->reply, "lod"));
            if (lod != NULL && strcmp(lod, "frozen") == 0) {
                return true;
            }
        }
    }
    return false;
}

static void test_rdc_reconnects_after_a_restart_and_subscribes_again(void** state) {
    fixture* f = *state;
    connect_client(f);
    // The demo world is world 1 in every run of the server.
    assert_int_equal(rdc_subscribe(f->c, 1, RDC_FORMAT_BINARY, 30, on_sub, f), 0);
    RUN_UNTIL(f, f->sub_replies == 1 && f->snapshots >= 5, 10000);
    // A focus far away freezes the demo's sheet; rdc says it again after
    // the reconnect below.
    static const double far[3] = {900, 0, 900};
    assert_int_equal(rdc_set_focus(f->c, 1, far, 0, NULL, NULL), RDC_E_CONFIG);
    assert_int_equal(rdc_set_focus(f->c, 2, far, 10, NULL, NULL), RDC_E_CONFIG); // not subscribed
    f->replied = false;
    assert_int_equal(rdc_set_focus(f->c, 1, far, 10, on_reply, f), 0);
    RUN_UNTIL(f, f->replied, 5000);
    assert_int_equal(f->status, 0);
    uint64_t seen = f->snapshots;
    RUN_UNTIL(f, f->snapshots >= seen + 3 && f->cloth_count > 0, 5000);
    assert_true(a_cloth_frozen(f));

    // A command that can get no reply: the server is frozen, then killed.
    int port = f->srv.port;
    kill(f->srv.pid, SIGSTOP);
    f->replied = false;
    assert_int_equal(rdc_send_text(f->c, "{\"op\":\"list_worlds\"}", 20, on_reply, f, NULL), 0);
    server_stop(&f->srv, SIGKILL);
    RUN_UNTIL(f, f->replied && f->disconnected == 1, 10000);
    assert_int_equal(f->status, RDC_E_DISCONNECTED);
    assert_string_equal(f->code, "disconnected");
    assert_true(f->last_down.was_connected);
    assert_false(rdc_is_connected(f->c));
    assert_int_equal(rdc_send_text(f->c, "{\"op\":\"list_worlds\"}", 20, on_reply, f, NULL),
                     RDC_E_NOT_CONNECTED);

    // Let a few attempts fail, then start the server again on the same port.
    RUN_UNTIL(f, f->disconnected >= 4, 10000);
    assert_int_equal(server_start(&f->srv, port, true), 0);
    RUN_UNTIL(f, f->connected == 2 && f->sub_replies == 2, 15000);
    uint64_t before = f->snapshots;
    RUN_UNTIL(f, f->snapshots >= before + 5, 5000);
    rdc_stats st;
    rdc_get_stats(f->c, &st);
    assert_int_equal(st.connects, 2);
    assert_int_equal(st.disconnects, 1);
    // The new server's frames decode from scratch (the subscription starts
    // with a full one), and are deltas again soon after.
    assert_int_equal(st.bad_snapshots, 0);
    assert_int_equal(st.resyncs, 0);
    uint64_t deltas = f->delta_frames;
    RUN_UNTIL(f, f->delta_frames >= deltas + 5, 5000);
    assert_true(st.connect_failures >= 3);
    assert_true(a_cloth_frozen(f)); // the focus came back with the subscription

    // The backoff: the n-th wait drawn from [w/2, w], w = 100 ms doubling.
    uint32_t w = 100;
    for (int i = 0; i < f->retries; ++i) {
        assert_in_range(f->retry_ms[i], w / 2, w);
        w = w * 2 > 5000 ? 5000 : w * 2;
    }
}

// With a --state-dir, SIGTERM saves the world and a restart brings it back:
// the rdc client reconnects, subscribes again, and the snapshots go on from
// the tick they had reached (a world made afresh would start again at 0).
static void test_rdc_continues_a_saved_world_after_a_restart(void** state) {
    fixture* f = *state;
    char dir[] = "/tmp/rd_rdc_state_XXXXXX";
    assert_non_null(mkdtemp(dir));
    int port = f->srv.port;
    server_stop(&f->srv, SIGTERM);
    assert_int_equal(server_start_in(&f->srv, port, true, dir), 0);
    connect_client(f);
    assert_int_equal(rdc_subscribe(f->c, 1, RDC_FORMAT_BINARY, 30, on_sub, f), 0);
    RUN_UNTIL(f, f->sub_replies == 1 && f->snapshots >= 30, 10000);
    const uint64_t before = f->last_tick;
    server_stop(&f->srv, SIGTERM);
    RUN_UNTIL(f, f->disconnected >= 1, 10000);
    assert_int_equal(server_start_in(&f->srv, port, true, dir), 0);
    RUN_UNTIL(f, f->connected == 2 && f->sub_replies == 2, 15000);
    const uint64_t n = f->snapshots;
    RUN_UNTIL(f, f->snapshots >= n + 5, 5000);
    assert_false(f->bad_order);
    assert_true(f->last_tick > before);
    rdc_stats st;
    rdc_get_stats(f->c, &st);
    assert_int_equal(st.bad_snapshots, 0);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

static void test_rdc_dropped_connection_comes_back(void** state) {
    fixture* f = *state;
    connect_client(f);
    assert_int_equal(rdc_subscribe(f->c, 1, RDC_FORMAT_JSON, 10, on_sub, f), 0);
    RUN_UNTIL(f, f->sub_replies == 1 && f->snapshots >= 2, 10000);
    f->replied = false;
    assert_int_equal(rdc_send_text(f->c, "{\"op\":\"list_worlds\"}", 20, on_reply, f, NULL), 0);
    // Dropped from this side before the reply can have been read: the
    // callback comes (from inside rdc_disconnect), with the reason.
    rdc_disconnect(f->c);
    assert_true(f->replied);
    assert_int_equal(f->status, RDC_E_DISCONNECTED);
    assert_int_equal(f->disconnected, 1);
    RUN_UNTIL(f, f->connected == 2 && f->sub_replies == 2, 10000);
    uint64_t before = f->snapshots;
    RUN_UNTIL(f, f->snapshots >= before + 2, 5000);
    // Unsubscribed, the stream stops.
    assert_int_equal(rdc_unsubscribe(f->c, 1, on_reply, f), 0);
    f->replied = false;
    RUN_UNTIL(f, f->replied, 5000);
    assert_int_equal(f->status, 0);
    before = f->snapshots;
    uint64_t until = uv_hrtime() + 500000000ull;
    while (uv_hrtime() < until) {
        uv_run(&f->loop, UV_RUN_ONCE);
    }
    assert_true(f->snapshots <= before + 1); // at most one already on its way
}

static void test_rdc_forgets_a_subscription_whose_world_is_destroyed(void** state) {
    fixture* f = *state;
    connect_client(f);
    uint64_t world = make_world(f);
    assert_int_equal(rdc_subscribe(f->c, world, RDC_FORMAT_BINARY, 30, on_sub, f), 0);
    RUN_UNTIL(f, f->sub_replies == 1 && f->snapshots >= 3, 10000);
    char cmd[96];
    snprintf(cmd, sizeof cmd, "{\"op\":\"destroy_world\",\"world\":%llu}",
             (unsigned long long)world);
    assert_int_equal(call(f, cmd), 0);
    RUN_UNTIL(f, f->world_destroyed == 1, 5000);
    // After a reconnect nothing is subscribed again (it would fail with
    // not_found).
    rdc_disconnect(f->c);
    RUN_UNTIL(f, f->connected == 2, 10000);
    assert_int_equal(call(f, "{\"op\":\"list_worlds\"}"), 0);
    assert_int_equal(f->sub_replies, 1);
    assert_int_equal(f->sub_failures, 0);
}

static void test_rdc_close_fails_waiting_commands(void** state) {
    fixture* f = *state;
    connect_client(f);
    f->replied = false;
    kill(f->srv.pid, SIGSTOP); // no reply can come
    assert_int_equal(rdc_send_text(f->c, "{\"op\":\"list_worlds\"}", 20, on_reply, f, NULL), 0);
    rdc_close(f->c, on_closed, f);
    assert_false(f->replied); // not from inside rdc_close
    RUN_UNTIL(f, f->closed, 5000);
    assert_true(f->replied);
    assert_int_equal(f->status, RDC_E_CLOSED);
    kill(f->srv.pid, SIGCONT);
}

static void test_rdc_refused_handshakes_and_connections_are_reported(void** state) {
    fixture* f = *state;
    // A path that is not the WebSocket endpoint: HTTP 404, not a session.
    open_client(f, f->srv.port, "/nowhere");
    RUN_UNTIL(f, f->disconnected >= 1, 10000);
    assert_int_equal(f->last_down.error, RDC_E_HANDSHAKE);
    assert_int_equal(f->last_down.http_status, 404);
    assert_false(f->last_down.was_connected);
    rdc_close(f->c, on_closed, f);
    RUN_UNTIL(f, f->closed, 5000);
    // Nobody listening.
    int port = f->srv.port;
    server_stop(&f->srv, SIGTERM);
    f->closed = false;
    f->disconnected = 0;
    open_client(f, port, "/ws");
    RUN_UNTIL(f, f->disconnected >= 1, 10000);
    assert_int_equal(f->last_down.error, UV_ECONNREFUSED);
    assert_true(f->last_down.retry_ms >= 50 && f->last_down.retry_ms <= 100);
}

int main(void) {
    signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(
            test_rdc_json_snapshots_show_a_standing_character_and_a_rope, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rdc_binary_snapshots_decode_to_the_same_values, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_rdc_budgeted_snapshots_hold_each_entity_as_last_sent,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_rdc_undecoded_frames_are_counted_and_stay_full, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_rdc_kill_names_a_bone_and_makes_a_ragdoll, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_rdc_raycast_names_the_bone_it_hits, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rdc_interp_draws_a_walk_smoothly, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rdc_server_errors_arrive_as_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rdc_continues_a_saved_world_after_a_restart, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_rdc_reconnects_after_a_restart_and_subscribes_again,
                                        setup_demo, teardown),
        cmocka_unit_test_setup_teardown(test_rdc_dropped_connection_comes_back, setup_demo,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_rdc_forgets_a_subscription_whose_world_is_destroyed,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_rdc_close_fails_waiting_commands, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rdc_refused_handshakes_and_connections_are_reported,
                                        setup, teardown),
    };
    return cmocka_run_group_tests_name("rdc_server", tests, NULL, NULL);
}
