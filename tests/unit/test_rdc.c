/*
 * test_rdc.c: unit tests of the C client's parts: URLs, the handshake
 * request and response (RFC 6455 §4.1-4.2 vectors), the snapshot decoder
 * (binary version 2 on the golden vectors of protocol/golden/, expected
 * values from vectors.json; JSON on snapshots written by hand from
 * PROTOCOL.md §5.1), and the masking of the frames rdc sends (RFC 6455
 * §5.3), read by a hand-written server on a real loop.
 * tests/integration/test_rdc_server.c runs the client against a real
 * server.
 */
// cmocka.h needs these four before it (cmocka docs); keep the order.
// clang-format off
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
// clang-format on

#include "rdc_internal.h"
#include "rdws.h"

#include <arpa/inet.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// ---------------------------------------------------------------------------
// URLs and the handshake
// ---------------------------------------------------------------------------

static void test_rdc_url_parsing(void** state) {
    (void)state;
    rdc__url u;
    char host[300];
    assert_int_equal(rdc__url_parse("ws://127.0.0.1:8080/ws", &u), 0);
    assert_string_equal(u.host, "127.0.0.1");
    assert_int_equal(u.port, 8080);
    assert_string_equal(u.path, "/ws");
    assert_false(u.ipv6);
    assert_int_equal(rdc__url_host_header(&u, host, sizeof host), 0);
    assert_string_equal(host, "127.0.0.1:8080");

    // Defaults: port 80, path /ws.
    assert_int_equal(rdc__url_parse("ws://example.com", &u), 0);
    assert_string_equal(u.host, "example.com");
    assert_int_equal(u.port, 80);
    assert_string_equal(u.path, "/ws");
    assert_int_equal(rdc__url_host_header(&u, host, sizeof host), 0);
    assert_string_equal(host, "example.com");

    // IPv6 literal, query kept, fragment dropped.
    assert_int_equal(rdc__url_parse("ws://[::1]:9000/x/y?a=1#frag", &u), 0);
    assert_string_equal(u.host, "::1");
    assert_true(u.ipv6);
    assert_int_equal(u.port, 9000);
    assert_string_equal(u.path, "/x/y?a=1");
    assert_int_equal(rdc__url_host_header(&u, host, sizeof host), 0);
    assert_string_equal(host, "[::1]:9000");

    // Not ours: other schemes (no TLS client), user info, port 0, garbage.
    const char* bad[] = {"http://h/ws", "wss://h/ws", "ws://user@h/ws", "ws://h:0/ws", "ws:///ws",
                         "ws//h",       "",           "ws://h/a b"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
        assert_int_equal(rdc__url_parse(bad[i], &u), RDC_E_URL);
    }
    assert_int_equal(rdc__url_parse(NULL, &u), RDC_E_URL);
}

static void test_rdc_handshake_key_and_accept_match_rfc6455(void** state) {
    (void)state;
    // RFC 6455 §4.1: the nonce "the sample nonce" is sent as
    // dGhlIHNhbXBsZSBub25jZQ==, and §1.3 gives the accept value.
    char key[25], accept[29];
    rdc__ws_key((const uint8_t*)"the sample nonce", key);
    assert_string_equal(key, "dGhlIHNhbXBsZSBub25jZQ==");
    rdws_accept_key(key, strlen(key), accept);
    assert_string_equal(accept, "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
}

static void test_rdc_handshake_request_lines(void** state) {
    (void)state;
    rdc__url u;
    assert_int_equal(rdc__url_parse("ws://localhost:8080/ws", &u), 0);
    char req[1024];
    size_t n = rdc__handshake_request(&u, "dGhlIHNhbXBsZSBub25jZQ==", "s3cret", req, sizeof req);
    assert_true(n > 0 && n == strlen(req));
    assert_non_null(strstr(req, "GET /ws HTTP/1.1\r\n"));
    assert_non_null(strstr(req, "\r\nHost: localhost:8080\r\n"));
    assert_non_null(strstr(req, "\r\nUpgrade: websocket\r\n"));
    assert_non_null(strstr(req, "\r\nConnection: Upgrade\r\n"));
    assert_non_null(strstr(req, "\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"));
    assert_non_null(strstr(req, "\r\nSec-WebSocket-Version: 13\r\n"));
    assert_non_null(strstr(req, "\r\nSec-WebSocket-Protocol: ragdolld.v1\r\n"));
    assert_non_null(strstr(req, "\r\nAuthorization: Bearer s3cret\r\n"));
    assert_string_equal(req + n - 4, "\r\n\r\n");
    // No token, no Authorization header; too small a buffer, nothing.
    n = rdc__handshake_request(&u, "dGhlIHNhbXBsZSBub25jZQ==", NULL, req, sizeof req);
    assert_null(strstr(req, "Authorization"));
    assert_int_equal(rdc__handshake_request(&u, "k", NULL, req, 32), 0);
}

// Feeds a response to a fresh reader, `step` bytes at a time; returns the
// first non-zero result and the bytes it said belonged to the response.
static int feed(const char* key, const char* resp, size_t len, size_t step, size_t* used,
                int* status) {
    rdc__hs hs;
    rdc__hs_init(&hs, key);
    size_t off = 0;
    while (off < len) {
        size_t n = len - off < step ? len - off : step;
        size_t u = 0;
        int rc = rdc__hs_feed(&hs, (const uint8_t*)resp + off, n, &u);
        if (rc != 0) {
            *used = off + u;
            *status = hs.status;
            return rc;
        }
        off += n;
    }
    *status = hs.status;
    return 0;
}

static void test_rdc_handshake_response_is_checked(void** state) {
    (void)state;
    const char* key = "dGhlIHNhbXBsZSBub25jZQ==";
    const char ok[] = "HTTP/1.1 101 Switching Protocols\r\n"
                      "Upgrade: websocket\r\n"
                      "Connection: Upgrade\r\n"
                      "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n"
                      "Sec-WebSocket-Protocol: ragdolld.v1\r\n"
                      "\r\n"
                      "\x81\x02hi"; // a frame right behind it
    size_t head = strlen(ok) - 4;
    size_t used;
    int status;
    // Whole, and one byte at a time: the frame is not the response's.
    assert_int_equal(feed(key, ok, sizeof ok - 1, sizeof ok, &used, &status), 1);
    assert_int_equal(used, head);
    assert_int_equal(status, 101);
    assert_int_equal(feed(key, ok, sizeof ok - 1, 1, &used, &status), 1);
    assert_int_equal(used, head);

    // Without a subprotocol (the server chose none): allowed.
    const char none[] = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: WebSocket\r\n"
                        "Connection: keep-alive, Upgrade\r\n"
                        "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n";
    assert_int_equal(feed(key, none, sizeof none - 1, 7, &used, &status), 1);

    // Refusals.
    const char wrong_accept[] = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                                "Connection: Upgrade\r\n"
                                "Sec-WebSocket-Accept: AAAAAAAAAAAAAAAAAAAAAAAAAAA=\r\n\r\n";
    assert_int_equal(feed(key, wrong_accept, sizeof wrong_accept - 1, 100, &used, &status),
                     RDC_E_HANDSHAKE);
    const char other_proto[] = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                               "Connection: Upgrade\r\n"
                               "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n"
                               "Sec-WebSocket-Protocol: chat\r\n\r\n";
    assert_int_equal(feed(key, other_proto, sizeof other_proto - 1, 100, &used, &status),
                     RDC_E_HANDSHAKE);
    const char busy[] = "HTTP/1.1 503 Service Unavailable\r\nRetry-After: 5\r\n"
                        "Content-Length: 18\r\n\r\ntoo many sessions\n";
    assert_int_equal(feed(key, busy, sizeof busy - 1, 100, &used, &status), RDC_E_HANDSHAKE);
    assert_int_equal(status, 503);
    const char not_http[] = "SSH-2.0-OpenSSH_9.2\r\n";
    assert_int_equal(feed(key, not_http, sizeof not_http - 1, 100, &used, &status),
                     RDC_E_HANDSHAKE);
    // Headers that never end are cut off at 8 KiB.
    static char endless[16384];
    size_t n = (size_t)snprintf(endless, sizeof endless, "HTTP/1.1 101 Switching Protocols\r\n");
    while (n + 32 < sizeof endless) {
        n += (size_t)snprintf(endless + n, sizeof endless - n, "X-Filler: 0123456789abcdef\r\n");
    }
    assert_int_equal(feed(key, endless, n, 512, &used, &status), RDC_E_HANDSHAKE);
}

// ---------------------------------------------------------------------------
// Snapshots
// ---------------------------------------------------------------------------

// The golden vectors of protocol/golden/ (written by tests/unit/golden_gen.c,
// checked by the codec's own tests and by the JavaScript decoder): four
// frames of world 3 across the 16-bit tick wrap, a full one and deltas.
// The expected values come from vectors.json, not from rdc.

#define GOLDEN_WORLD 3 // golden_gen.c's world

static uint8_t* read_golden(const char* name, size_t* len) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", RD_GOLDEN_DIR, name);
    FILE* f = fopen(path, "rb");
    assert_non_null(f);
    static uint8_t buf[4][1 << 20];
    static int slot;
    uint8_t* out = buf[slot++ % 4];
    *len = fread(out, 1, sizeof buf[0], f);
    fclose(f);
    return out;
}

static cJSON* read_vectors(void) {
    size_t len;
    uint8_t* text = read_golden("vectors.json", &len);
    cJSON* v = cJSON_ParseWithLength((const char*)text, len);
    assert_non_null(v);
    return v;
}

// Checks a decoded snapshot against one frame of vectors.json.
static void check_frame(const rdc_snapshot* s, const cJSON* frame) {
    assert_int_equal(s->world, GOLDEN_WORLD);
    assert_int_equal(s->tick, (uint64_t)cJSON_GetObjectItem(frame, "tick")->valuedouble);
    assert_true(s->decoded);
    assert_int_equal(s->delta, !cJSON_IsNull(cJSON_GetObjectItem(frame, "baseline16")));
    const cJSON* ents = cJSON_GetObjectItem(frame, "entities");
    assert_int_equal(s->entity_count, cJSON_GetArraySize(ents));
    uint32_t i = 0;
    const cJSON* e;
    cJSON_ArrayForEach(e, ents) {
        const rdc_entity* x = &s->entities[i++];
        assert_int_equal(x->id, (uint64_t)cJSON_GetObjectItem(e, "entity")->valuedouble);
        assert_int_equal(x->kind, cJSON_GetObjectItem(e, "kind")->valueint);
        const cJSON* st = cJSON_GetObjectItem(e, "state");
        if (cJSON_IsString(st)) {
            assert_string_equal(rdc_char_state_name(x->state), st->valuestring);
        }
        const cJSON* vals = cJSON_GetObjectItem(e, "values");
        bool rigid = x->kind == RDC_KIND_CHARACTER || x->kind == RDC_KIND_BALL;
        const float* f = rigid ? x->pose : x->xyz;
        assert_non_null(f);
        assert_null(rigid ? x->xyz : x->pose);
        assert_int_equal((int)x->count * (rigid ? 7 : 3), cJSON_GetArraySize(vals));
        // "values" are what the frame was made from: positions come back
        // within the quantization's 0.49 mm (PROTOCOL.md §5.2, 1/1024 m
        // steps; 0.5 mm here), orientations within its 0.06° (q and -q are
        // one rotation).
        for (int k = 0; k < cJSON_GetArraySize(vals); ++k) {
            double want = cJSON_GetArrayItem(vals, k)->valuedouble;
            if (!rigid || k % 7 < 3) {
                assert_true(fabs((double)f[k] - want) <= 0.5e-3);
            } else if (k % 7 == 3) {
                double dot = 0;
                for (int c = 0; c < 4; ++c) {
                    dot += (double)f[k + c] * cJSON_GetArrayItem(vals, k + c)->valuedouble;
                }
                double angle = 2 * acos(fmin(1.0, fabs(dot)));
                assert_true(angle <= 0.06 * 3.14159265358979 / 180 * 1.01);
            }
        }
        // Particles are the listed integers in 1/1024 m steps, exactly.
        const cJSON* ints = cJSON_GetObjectItem(e, "ints");
        for (int k = 0; !rigid && k < cJSON_GetArraySize(ints); ++k) {
            assert_true(f[k] == (float)(cJSON_GetArrayItem(ints, k)->valuedouble / 1024.0));
        }
    }
}

static void test_rdc_decodes_the_golden_binary_frames(void** state) {
    (void)state;
    cJSON* vec = read_vectors();
    const cJSON* frames = cJSON_GetObjectItem(vec, "frames");
    assert_int_equal(cJSON_GetArraySize(frames), 4);
    rdc__decoder d;
    memset(&d, 0, sizeof d);
    // The subscribe reply's tick, a little before the first frame.
    rdc__decoder_start_world(&d, GOLDEN_WORLD, 65530);
    rdc_snapshot s;
    rdc__ack ack;
    uint64_t character = 12884901891ull;
    int n = 0;
    const cJSON* fr;
    cJSON_ArrayForEach(fr, frames) {
        size_t len;
        uint8_t* buf = read_golden(cJSON_GetObjectItem(fr, "file")->valuestring, &len);
        assert_int_equal(len, cJSON_GetObjectItem(fr, "bytes")->valueint);
        uint64_t world;
        uint16_t tick16;
        bool delta;
        assert_true(rdc__binary_peek(buf, len, &world, &tick16, &delta));
        assert_int_equal(world, GOLDEN_WORLD);
        assert_int_equal(tick16, cJSON_GetObjectItem(fr, "tick16")->valueint);
        assert_int_equal(rdc__decode_snapshot(&d, buf, len, true, true, true, NULL, &s, &ack), 0);
        check_frame(&s, fr);
        assert_int_equal(s.bytes, len);
        assert_ptr_equal(s.data, buf);
        assert_null(s.json);
        // Every decoded frame is acknowledged with its full tick.
        assert_true(ack.wanted);
        assert_false(ack.resync);
        assert_int_equal(ack.world, GOLDEN_WORLD);
        assert_int_equal(ack.tick, s.tick);
        const rdc_entity* ch = rdc_snapshot_find(&s, character);
        assert_non_null(ch);
        if (n == 0) {
            // A character not met before: its names are asked for, once.
            assert_int_equal(ack.describe_count, 1);
            assert_int_equal(ack.describe[0], character);
            assert_null(ch->bone_names);
        } else if (n == 1) {
            assert_int_equal(ack.describe_count, 0); // still pending
            assert_null(ch->bone_names);
            cJSON* reply = cJSON_Parse("{\"re\":5,\"ok\":true,\"bones\":[{\"name\":\"pelvis\"},"
                                       "{\"name\":\"spine\"},{\"name\":\"head\"},"
                                       "{\"name\":\"tail\"}]}");
            rdc__decoder_names(&d, GOLDEN_WORLD, character, reply);
            cJSON_Delete(reply);
        } else {
            assert_int_equal(ack.describe_count, 0);
            assert_int_equal(rdc_entity_bone(ch, "head"), 2);
            assert_int_equal(rdc_entity_bone(ch, "tail"), 3);
            assert_int_equal(rdc_entity_bone(ch, "wing"), -1);
        }
        n++;
    }
    rdc__decoder_free(&d);
    cJSON_Delete(vec);
}

static void test_rdc_asks_for_a_resync_once_per_gap(void** state) {
    (void)state;
    size_t len0, len1, len2;
    uint8_t* f0 = read_golden("frame0.bin", &len0);
    uint8_t* f1 = read_golden("frame1.bin", &len1);
    uint8_t* f2 = read_golden("frame2.bin", &len2);
    rdc__decoder d;
    memset(&d, 0, sizeof d);
    rdc__decoder_start_world(&d, GOLDEN_WORLD, 65530);
    rdc_snapshot s;
    rdc__ack ack;
    // Deltas against a baseline this client never decoded: a resync, once.
    assert_int_equal(rdc__decode_snapshot(&d, f1, len1, true, true, false, NULL, &s, &ack),
                     RDC_E_PROTOCOL);
    assert_true(ack.resync);
    assert_false(ack.wanted);
    assert_int_equal(ack.world, GOLDEN_WORLD);
    assert_int_equal(rdc__decode_snapshot(&d, f2, len2, true, true, false, NULL, &s, &ack),
                     RDC_E_PROTOCOL);
    assert_false(ack.resync);
    // The full frame the resync brings decodes, and the gap is over.
    assert_int_equal(rdc__decode_snapshot(&d, f0, len0, true, true, false, NULL, &s, &ack), 0);
    assert_int_equal(s.tick, 65534);
    assert_false(s.delta);
    assert_int_equal(ack.describe_count, 0); // describe off
    // A malformed frame is a new gap: a resync again.
    uint8_t bad[16];
    memcpy(bad, f0, sizeof bad);
    assert_int_equal(rdc__decode_snapshot(&d, bad, 9, true, true, false, NULL, &s, &ack),
                     RDC_E_PROTOCOL);
    assert_true(ack.resync);
    // Truncated anywhere: refused, never read past the end.
    rdc__decoder fresh;
    memset(&fresh, 0, sizeof fresh);
    for (size_t cut = 0; cut < len0; ++cut) {
        uint8_t* copy = malloc(cut > 0 ? cut : 1);
        memcpy(copy, f0, cut);
        assert_int_equal(rdc__decode_snapshot(&fresh, copy, cut, true, true, false, NULL, &s, &ack),
                         RDC_E_PROTOCOL);
        free(copy);
    }
    rdc__decoder_free(&fresh);
    rdc__decoder_free(&d);
}

static void test_rdc_refuses_binary_frames_of_world_0(void** state) {
    (void)state;
    // World ids start at 1 (a zeroed id is null); 0 also marks the
    // decoder's free slots, so a frame for world 0 must not be decoded into
    // one (its baselines and names would then pass to the next world
    // subscribed to).
    rdp_qsnap* q = rdp_qsnap_new();
    assert_non_null(q);
    q->world = 0;
    q->tick = 7;
    uint8_t buf[256];
    size_t len = rdp_encode(q, NULL, buf, sizeof buf);
    assert_true(len > 0);
    rdp_qsnap_free(q);
    uint64_t world = 99;
    uint16_t tick16;
    bool delta;
    assert_true(rdc__binary_peek(buf, len, &world, &tick16, &delta));
    assert_int_equal(world, 0); // the frame is well formed: only its world is wrong
    rdc__decoder d;
    memset(&d, 0, sizeof d);
    rdc_snapshot s;
    rdc__ack ack;
    for (int decode = 0; decode < 2; ++decode) {
        assert_int_equal(
            rdc__decode_snapshot(&d, buf, len, true, decode != 0, true, NULL, &s, &ack),
            RDC_E_PROTOCOL);
        assert_false(ack.wanted);
    }
    for (int i = 0; i < RDC__MAX_WORLDS; ++i) {
        assert_null(d.worlds[i].dec);
    }
    rdc__decoder_free(&d);
}

static void test_rdc_counts_frames_without_decoding_them(void** state) {
    (void)state;
    size_t len;
    uint8_t* f1 = read_golden("frame1.bin", &len);
    rdc__decoder d;
    memset(&d, 0, sizeof d);
    rdc__decoder_start_world(&d, GOLDEN_WORLD, 65500);
    rdc_snapshot s;
    rdc__ack ack;
    // decode off: a delta frame needs no baseline; world and tick are read.
    assert_int_equal(rdc__decode_snapshot(&d, f1, len, true, false, true, NULL, &s, &ack), 0);
    assert_false(s.decoded);
    assert_true(s.delta);
    assert_int_equal(s.world, GOLDEN_WORLD);
    assert_int_equal(s.tick, 65535);
    assert_int_equal(s.entity_count, 0);
    assert_int_equal(s.bytes, len);
    assert_false(ack.wanted || ack.resync || ack.describe_count > 0);
    rdc__decoder_free(&d);
}

static void test_rdc_keeps_metrics_events(void** state) {
    (void)state;
    rdc__decoder d;
    memset(&d, 0, sizeof d);
    rdc__decoder_start_world(&d, GOLDEN_WORLD, 65530);
    cJSON* ev = cJSON_Parse("{\"ev\":\"metrics\",\"world\":3,\"tick\":65533,\"metrics\":"
                            "{\"constraint_error\":0.0125,\"sticks\":22,\"solver_passes\":8,"
                            "\"particles\":731,\"entities\":4,\"step_ms\":0.25,\"overruns\":2}}");
    rdc__decoder_metrics(&d, ev);
    cJSON_Delete(ev);
    size_t len;
    uint8_t* f0 = read_golden("frame0.bin", &len);
    rdc_snapshot s;
    rdc__ack ack;
    assert_int_equal(rdc__decode_snapshot(&d, f0, len, true, true, false, NULL, &s, &ack), 0);
    assert_true(s.has_metrics);
    assert_true(s.metrics.constraint_error == 0.0125 && s.metrics.step_ms == 0.25);
    assert_int_equal(s.metrics.sticks, 22);
    assert_int_equal(s.metrics.solver_passes, 8);
    assert_int_equal(s.metrics.particles, 731);
    assert_int_equal(s.metrics.entities, 4);
    assert_int_equal(s.metrics.overruns, 2);
    rdc__decoder_free(&d);
}

static void test_rdc_decodes_json_snapshots(void** state) {
    (void)state;
    // PROTOCOL.md §5.1, with a ball, a character and a cloth; an entity of
    // a kind this client does not know is skipped.
    const char text[] =
        "{\"ev\":\"snapshot\",\"world\":3,\"tick\":120,\"entities\":["
        "{\"entity\":4294967297,\"kind\":\"cloth\",\"particles\":[[0,2,0],[0.1,2,0]],"
        "\"cols\":2,\"rows\":1},"
        "{\"entity\":4294967299,\"kind\":\"character\",\"state\":\"getting_up\",\"bones\":["
        "{\"name\":\"pelvis\",\"p\":[0.5,0.96,-1],\"q\":[0,0,0.70711,0.70711]},"
        "{\"name\":\"spine\",\"p\":[0.5,1.11,-1],\"q\":[0,0,0.70711,0.70711]}]},"
        "{\"entity\":4294967300,\"kind\":\"ball\",\"p\":[0,1.2,-3],\"q\":[0,0,0,1],"
        "\"capsules\":[[0.2,0]]},"
        "{\"entity\":4294967301,\"kind\":\"spaceship\",\"particles\":[[1,1,1]]}],"
        "\"metrics\":{\"step_ms\":0.2}}";
    cJSON* json = cJSON_Parse(text);
    assert_non_null(json);
    rdc__decoder d;
    memset(&d, 0, sizeof d);
    rdc_snapshot s;
    rdc__ack ack;
    assert_int_equal(rdc__decode_snapshot(&d, (const uint8_t*)text, sizeof text - 1, false, true,
                                          true, json, &s, &ack),
                     0);
    assert_false(ack.wanted);
    assert_int_equal(s.world, 3);
    assert_int_equal(s.tick, 120);
    assert_int_equal(s.format, RDC_FORMAT_JSON);
    assert_ptr_equal(s.json, json);
    assert_true(s.decoded && s.has_metrics && s.metrics.step_ms == 0.2);
    assert_int_equal(s.entity_count, 3);
    assert_int_equal(s.entities[0].kind, RDC_KIND_CLOTH);
    assert_int_equal(s.entities[0].count, 2);
    assert_true(s.entities[0].xyz[3] == 0.1f && s.entities[0].xyz[4] == 2.0f);
    const rdc_entity* ch = &s.entities[1];
    assert_int_equal(ch->kind, RDC_KIND_CHARACTER);
    assert_int_equal(ch->state, RDC_CHAR_GETTING_UP);
    assert_int_equal(ch->count, 2);
    assert_int_equal(rdc_entity_bone(ch, "spine"), 1);
    assert_int_equal(rdc_entity_bone(ch, "head"), -1);
    assert_true(ch->pose[7 + 1] == 1.11f && ch->pose[6] == 0.70711f);
    const rdc_entity* ball = &s.entities[2];
    assert_int_equal(ball->kind, RDC_KIND_BALL);
    assert_int_equal(ball->count, 1);
    assert_true(ball->pose[1] == 1.2f && ball->pose[2] == -3.0f && ball->pose[6] == 1.0f);
    cJSON_Delete(json);

    // Malformed: a particle with two coordinates, a pose without q, no tick,
    // a character whose bones are an object (its members are bones in all
    // but name: they must not be written past the room made for an array).
    const char* bad[] = {
        "{\"ev\":\"snapshot\",\"world\":3,\"tick\":1,\"entities\":[{\"entity\":1,\"kind\":"
        "\"character\",\"bones\":{\"a\":{\"name\":\"a\",\"p\":[0,1,2],\"q\":[0,0,0,1]},"
        "\"b\":{\"name\":\"b\",\"p\":[0,1,2],\"q\":[0,0,0,1]}}}]}",
        "{\"ev\":\"snapshot\",\"world\":3,\"tick\":1,\"entities\":[{\"entity\":1,\"kind\":"
        "\"rope\",\"particles\":[[0,1]]}]}",
        "{\"ev\":\"snapshot\",\"world\":3,\"tick\":1,\"entities\":[{\"entity\":1,\"kind\":"
        "\"ball\",\"p\":[0,1,2]}]}",
        "{\"ev\":\"snapshot\",\"world\":3,\"entities\":[]}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
        json = cJSON_Parse(bad[i]);
        assert_int_equal(rdc__decode_snapshot(&d, (const uint8_t*)bad[i], strlen(bad[i]), false,
                                              true, true, json, &s, &ack),
                         RDC_E_PROTOCOL);
        cJSON_Delete(json);
    }
    rdc__decoder_free(&d);
}

// ---------------------------------------------------------------------------
// Masking (RFC 6455 §5.3), on a real loop: a hand-written server on
// 127.0.0.1:0 accepts rdc's handshake and reads its frames byte by byte.
// ---------------------------------------------------------------------------

typedef struct mask_server {
    uv_loop_t loop;
    uv_tcp_t listener, conn;
    bool conn_open;
    uint8_t in[8192];
    size_t in_len;
    bool upgraded;
    int frames;           ///< Client frames read so far.
    uint8_t keys[2][4];   ///< The masking keys of the first two.
    char payload[2][256]; ///< Their unmasked payloads.
    bool all_masked;
    rdc_client* c;
    bool connected, replied, closed;
    int reply_status;
    /// Frames the server sends right after its 101 (hostile-server tests).
    uint8_t greet[1024];
    size_t greet_len;
    int snapshots;          ///< Snapshots delivered to ms_snapshot.
    double pose_sum;        ///< What ms_snapshot read from them.
    int disconnects;        ///< RDC_DISCONNECTED reports.
    const char* reply;      ///< The reply to the first command (NULL: {"re":1,"ok":true}).
    uint16_t close_code;    ///< Of the last RDC_DISCONNECTED.
    char close_reason[128]; ///< Of the last RDC_DISCONNECTED.
    const char* token;      ///< The client's config token (ms_open), or NULL.
    /// The server's whole answer to the upgrade request instead of its 101
    /// (a refusal), or NULL; the connection is closed after it.
    const char* refusal;
    char request[2048]; ///< The upgrade request as the server read it.
    int error;          ///< Of the last RDC_DISCONNECTED.
    int http_status;    ///< Of the last RDC_DISCONNECTED.
    char http_reason[64];
} mask_server;

// Appends an unmasked server frame (FIN, opcode) to m->greet.
static void ms_greet(mask_server* m, uint8_t opcode, const void* payload, size_t len) {
    assert_true(len < 65536 && m->greet_len + 4 + len <= sizeof m->greet);
    uint8_t* p = m->greet + m->greet_len;
    p[0] = (uint8_t)(0x80 | opcode);
    size_t head = 2;
    if (len < 126) {
        p[1] = (uint8_t)len;
    } else {
        p[1] = 126;
        p[2] = (uint8_t)(len >> 8);
        p[3] = (uint8_t)len;
        head = 4;
    }
    memcpy(p + head, payload, len);
    m->greet_len += head + len;
}

static void ms_on_write(uv_write_t* req, int status) {
    (void)status;
    free(req);
}

static void ms_write(mask_server* m, const void* data, size_t len) {
    uv_write_t* req = malloc(sizeof *req + len);
    assert_non_null(req);
    memcpy(req + 1, data, len);
    uv_buf_t buf = uv_buf_init((char*)(req + 1), (unsigned)len);
    assert_int_equal(uv_write(req, (uv_stream_t*)&m->conn, &buf, 1, ms_on_write), 0);
}

static void ms_alloc(uv_handle_t* h, size_t suggested, uv_buf_t* buf) {
    (void)suggested;
    mask_server* m = h->data;
    *buf = uv_buf_init((char*)m->in + m->in_len, (unsigned)(sizeof m->in - m->in_len));
}

// Answers the upgrade request, then reads the client's frames.
static void ms_consume(mask_server* m) {
    if (!m->upgraded) {
        m->in[m->in_len < sizeof m->in ? m->in_len : sizeof m->in - 1] = '\0';
        char* end = strstr((char*)m->in, "\r\n\r\n");
        char* key = strstr((char*)m->in, "Sec-WebSocket-Key: ");
        if (end == NULL || key == NULL) {
            return;
        }
        snprintf(m->request, sizeof m->request, "%.*s", (int)(end + 4 - (char*)m->in),
                 (const char*)m->in);
        if (m->refusal != NULL) {
            // The client gives up on reading it; its close ends ours (ms_read).
            ms_write(m, m->refusal, strlen(m->refusal));
            m->in_len = 0;
            m->upgraded = true; // nothing more is read as frames
            return;
        }
        char k[25];
        memcpy(k, key + 19, 24);
        k[24] = '\0';
        char accept[29];
        rdws_accept_key(k, strlen(k), accept); // checked against RFC 6455 above
        char resp[256];
        int n = snprintf(resp, sizeof resp,
                         "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                         "Connection: Upgrade\r\nSec-WebSocket-Accept: %s\r\n"
                         "Sec-WebSocket-Protocol: ragdolld.v1\r\n\r\n",
                         accept);
        ms_write(m, resp, (size_t)n);
        if (m->greet_len > 0) {
            ms_write(m, m->greet, m->greet_len);
        }
        size_t used = (size_t)(end + 4 - (char*)m->in);
        memmove(m->in, m->in + used, m->in_len - used);
        m->in_len -= used;
        m->upgraded = true;
    }
    // Frames: FIN + opcode, MASK + 7-bit length (commands here are short),
    // the 4-byte key, the masked payload.
    while (m->in_len >= 6) {
        size_t len = m->in[1] & 0x7f;
        assert_true(len < 126);
        assert_true(len < sizeof m->payload[0]);
        if (m->in_len < 6 + len) {
            return;
        }
        m->all_masked &= (m->in[1] & 0x80) != 0;
        if ((m->in[0] & 0x0f) == 0x1 && m->frames < 2) {
            assert_int_equal(m->in[0], 0x81); // FIN, text
            memcpy(m->keys[m->frames], m->in + 2, 4);
            for (size_t i = 0; i < len; ++i) {
                m->payload[m->frames][i] = (char)(m->in[6 + i] ^ m->in[2 + i % 4]);
            }
            m->payload[m->frames][len] = '\0';
            m->frames++;
            if (m->frames == 1) {
                // An unmasked reply, as a server sends (RFC 6455 §5.1).
                const char* reply = m->reply != NULL ? m->reply : "{\"re\":1,\"ok\":true}";
                size_t rlen = strlen(reply);
                assert_true(rlen < 126);
                uint8_t frame[128] = {0x81, (uint8_t)rlen};
                memcpy(frame + 2, reply, rlen);
                ms_write(m, frame, 2 + rlen);
            }
        }
        memmove(m->in, m->in + 6 + len, m->in_len - 6 - len);
        m->in_len -= 6 + len;
    }
}

static void ms_read(uv_stream_t* s, ssize_t nread, const uv_buf_t* buf) {
    (void)buf;
    mask_server* m = s->data;
    if (nread > 0) {
        m->in_len += (size_t)nread;
        ms_consume(m);
    } else if (nread < 0 && m->conn_open) {
        m->conn_open = false;
        uv_close((uv_handle_t*)&m->conn, NULL);
    }
}

static void ms_accept(uv_stream_t* l, int status) {
    mask_server* m = l->data;
    assert_int_equal(status, 0);
    uv_tcp_init(&m->loop, &m->conn);
    m->conn.data = m;
    m->conn_open = true;
    assert_int_equal(uv_accept(l, (uv_stream_t*)&m->conn), 0);
    uv_read_start((uv_stream_t*)&m->conn, ms_alloc, ms_read);
}

static void ms_state(rdc_client* c, const rdc_status* st, void* user) {
    (void)c;
    mask_server* m = user;
    m->connected = st->state == RDC_CONNECTED;
    m->disconnects += st->state == RDC_DISCONNECTED;
    if (st->state == RDC_DISCONNECTED) {
        m->close_code = st->close_code;
        snprintf(m->close_reason, sizeof m->close_reason, "%s", st->close_reason);
        m->error = st->error;
        m->http_status = st->http_status;
        snprintf(m->http_reason, sizeof m->http_reason, "%s", st->http_reason);
    }
}

static void ms_reply(rdc_client* c, const rdc_reply* r, void* arg) {
    (void)c;
    mask_server* m = arg;
    m->replied = true;
    m->reply_status = r->status;
}

static void ms_closed(rdc_client* c, void* arg) {
    (void)c;
    ((mask_server*)arg)->closed = true;
}

// Listens on 127.0.0.1:0 and opens a client on it (no reconnecting).
static void ms_open(mask_server* m, rdc_snapshot_cb on_snapshot) {
    assert_int_equal(uv_loop_init(&m->loop), 0);
    uv_tcp_init(&m->loop, &m->listener);
    m->listener.data = m;
    struct sockaddr_in addr;
    uv_ip4_addr("127.0.0.1", 0, &addr);
    assert_int_equal(uv_tcp_bind(&m->listener, (const struct sockaddr*)&addr, 0), 0);
    assert_int_equal(uv_listen((uv_stream_t*)&m->listener, 4, ms_accept), 0);
    struct sockaddr_in bound;
    int blen = sizeof bound;
    uv_tcp_getsockname(&m->listener, (struct sockaddr*)&bound, &blen);
    char url[64];
    snprintf(url, sizeof url, "ws://127.0.0.1:%d/ws", ntohs(bound.sin_port));
    rdc_config cfg = rdc_config_default();
    cfg.url = url;
    cfg.reconnect = false;
    cfg.user = m;
    cfg.on_state = ms_state;
    cfg.on_snapshot = on_snapshot;
    cfg.token = m->token;
    assert_int_equal(rdc_open(&m->loop, &cfg, &m->c), 0);
}

// Runs the loop until *flag is set or 10 s have passed.
static void ms_run_until(mask_server* m, const bool* flag) {
    uint64_t deadline = uv_hrtime() + 10000000000ull;
    while (!*flag && uv_hrtime() < deadline) {
        uv_run(&m->loop, UV_RUN_ONCE);
    }
}

// Closes the client and the server, and checks that no handle is left.
static void ms_close(mask_server* m) {
    rdc_close(m->c, ms_closed, m);
    ms_run_until(m, &m->closed);
    assert_true(m->closed);
    if (m->conn_open) {
        uv_close((uv_handle_t*)&m->conn, NULL);
    }
    uv_close((uv_handle_t*)&m->listener, NULL);
    uv_run(&m->loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&m->loop), 0);
}

static void test_rdc_masks_every_frame_with_a_fresh_key(void** state) {
    (void)state;
    mask_server* m = calloc(1, sizeof *m);
    assert_non_null(m);
    m->all_masked = true;
    ms_open(m, NULL);
    uint64_t deadline = uv_hrtime() + 10000000000ull;
    while (!m->connected && uv_hrtime() < deadline) {
        uv_run(&m->loop, UV_RUN_ONCE);
    }
    assert_true(m->connected);
    assert_int_equal(rdc_sendf(m->c, ms_reply, m, "{\"op\":\"list_worlds\"}"), 0);
    assert_int_equal(rdc_sendf(m->c, NULL, NULL, "{\"op\":\"list_worlds\",\"x\":1}"), 0);
    while ((m->frames < 2 || !m->replied) && uv_hrtime() < deadline) {
        uv_run(&m->loop, UV_RUN_ONCE);
    }
    assert_int_equal(m->frames, 2);
    assert_true(m->all_masked);
    // Unmasked with its key, each payload is the command, with rdc's id.
    assert_string_equal(m->payload[0], "{\"op\":\"list_worlds\",\"id\":1}");
    assert_string_equal(m->payload[1], "{\"op\":\"list_worlds\",\"x\":1,\"id\":2}");
    // A new key per frame (equal by chance once in 2^32).
    assert_memory_not_equal(m->keys[0], m->keys[1], 4);
    // And the server's unmasked reply reached the callback.
    assert_true(m->replied);
    assert_int_equal(m->reply_status, 0);
    ms_close(m);
    free(m);
}

static void test_rdc_ignores_reply_ids_it_never_sent(void** state) {
    (void)state;
    mask_server* m = calloc(1, sizeof *m);
    assert_non_null(m);
    m->all_masked = true;
    // Ids no int64_t holds (converting them is undefined behaviour), ids
    // below 1 and ids not handed out yet: none may match or crash.
    const char* bad[] = {"{\"re\":1e300}", "{\"re\":-1e300}", "{\"re\":0}",
                         "{\"re\":0.5}",   "{\"re\":1e19}",   "{\"re\":\"1\"}"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
        ms_greet(m, 0x1, bad[i], strlen(bad[i]));
    }
    ms_open(m, NULL);
    ms_run_until(m, &m->connected);
    assert_true(m->connected);
    // The connection is still good: a command gets the server's reply.
    assert_int_equal(rdc_sendf(m->c, ms_reply, m, "{\"op\":\"list_worlds\"}"), 0);
    ms_run_until(m, &m->replied);
    assert_true(m->replied);
    assert_int_equal(m->reply_status, 0);
    assert_int_equal(m->disconnects, 0);
    ms_close(m);
    free(m);
}

// Drops the connection from inside the callback, then reads the snapshot:
// what it points to must stay valid until the callback returns.
static void ms_snapshot_disconnect(rdc_client* c, const rdc_snapshot* s, void* user) {
    mask_server* m = user;
    m->snapshots++;
    rdc_disconnect(c);
    rdc_unsubscribe(c, s->world, NULL, NULL);
    for (uint32_t i = 0; i < s->entity_count; ++i) {
        const rdc_entity* e = &s->entities[i];
        const float* f = e->xyz != NULL ? e->xyz : e->pose;
        for (uint32_t k = 0; k < (e->xyz != NULL ? 3u : 7u) * e->count; ++k) {
            m->pose_sum += (double)f[k];
        }
        for (uint32_t k = 0; e->bone_names != NULL && k < e->count; ++k) {
            m->pose_sum += (double)strlen(e->bone_names[k]);
        }
    }
}

static void test_rdc_snapshot_outlives_a_disconnect_in_its_callback(void** state) {
    (void)state;
    mask_server* m = calloc(1, sizeof *m);
    assert_non_null(m);
    m->all_masked = true;
    size_t len;
    uint8_t* frame = read_golden("frame0.bin", &len);
    ms_greet(m, 0x2, frame, len);
    ms_open(m, ms_snapshot_disconnect);
    bool down = false;
    uint64_t deadline = uv_hrtime() + 10000000000ull;
    while (!down && uv_hrtime() < deadline) {
        uv_run(&m->loop, UV_RUN_ONCE);
        down = m->snapshots > 0 && m->disconnects > 0;
    }
    assert_int_equal(m->snapshots, 1);
    assert_int_equal(m->disconnects, 1);
    assert_true(isfinite(m->pose_sum) && m->pose_sum != 0);
    ms_close(m);
    free(m);
}

static void test_rdc_json_print_writes_integers_exactly(void** state) {
    (void)state;
    // cJSON_PrintUnformatted() writes 9007199254740991 as 9007199254740990
    // ("%1.15g" and a loose round-trip check).
    cJSON* o = cJSON_Parse("{\"a\":9007199254740991,\"b\":[4503599627370499,-9007199254740991,"
                           "0.5,1e300,-0,3],\"c\":{\"d\":12884901891}}");
    assert_non_null(o);
    char* text = rdc_json_print(o);
    assert_string_equal(text, "{\"a\":9007199254740991,\"b\":[4503599627370499,-9007199254740991,"
                              "0.5,1e+300,0,3],\"c\":{\"d\":12884901891}}");
    cJSON_free(text);
    cJSON_Delete(o);
    assert_null(rdc_json_print(NULL));
}

// Sends `cmd` to a server that answers m->reply; returns the reply's status
// and leaves the command as the server read it in m->payload[0].
static int ms_round_trip(mask_server* m, const char* cmd) {
    m->all_masked = true;
    ms_open(m, NULL);
    ms_run_until(m, &m->connected);
    assert_true(m->connected);
    assert_int_equal(rdc_send_text(m->c, cmd, strlen(cmd), ms_reply, m, NULL), 0);
    ms_run_until(m, &m->replied);
    assert_true(m->replied);
    ms_close(m);
    return m->reply_status;
}

static void test_rdc_sends_ids_up_to_2_53_exactly(void** state) {
    (void)state;
    mask_server* m = calloc(1, sizeof *m);
    assert_non_null(m);
    assert_int_equal(ms_round_trip(m, "{\"op\":\"describe\",\"world\":4503599627370499,\"entity\":"
                                      "9007199254740991}"),
                     0);
    assert_string_equal(m->payload[0], "{\"op\":\"describe\",\"world\":4503599627370499,"
                                       "\"entity\":9007199254740991,\"id\":1}");
    free(m);
}

static void test_rdc_a_reply_without_ok_is_malformed(void** state) {
    (void)state;
    const char* replies[] = {"{\"re\":1}", "{\"re\":1,\"ok\":false}", "{\"re\":1,\"ok\":1}"};
    for (size_t i = 0; i < sizeof replies / sizeof replies[0]; ++i) {
        mask_server* m = calloc(1, sizeof *m);
        assert_non_null(m);
        m->reply = replies[i];
        assert_int_equal(ms_round_trip(m, "{\"op\":\"create_world\",\"name\":\"a\"}"),
                         RDC_E_PROTOCOL);
        free(m);
    }
}

static void test_rdc_ignores_a_reply_with_trailing_garbage(void** state) {
    (void)state;
    mask_server* m = calloc(1, sizeof *m);
    assert_non_null(m);
    m->reply = "{\"re\":1,\"ok\":true,\"world\":1}}";
    m->all_masked = true;
    ms_open(m, NULL);
    ms_run_until(m, &m->connected);
    assert_true(m->connected);
    assert_int_equal(rdc_sendf(m->c, ms_reply, m, "{\"op\":\"list_worlds\"}"), 0);
    // Not JSON: ignored, so the command is still waiting after the server
    // has answered (its frame is read within these 200 ms on 127.0.0.1).
    uint64_t until = uv_hrtime() + 200000000ull;
    while (uv_hrtime() < until) {
        uv_run(&m->loop, UV_RUN_NOWAIT);
    }
    assert_false(m->replied);
    ms_close(m);
    assert_true(m->replied);
    assert_int_equal(m->reply_status, RDC_E_CLOSED);
    free(m);
}

static void test_rdc_reports_the_close_code_and_reason(void** state) {
    (void)state;
    mask_server* m = calloc(1, sizeof *m);
    assert_non_null(m);
    m->all_masked = true;
    // 1009 (message too big), with a reason holding a control character.
    const uint8_t close[] = {0x03, 0xf1, 't', 'o', 'o', '\n', 'b', 'i', 'g'};
    ms_greet(m, 0x8, close, sizeof close);
    ms_open(m, NULL);
    bool down = false;
    uint64_t deadline = uv_hrtime() + 10000000000ull;
    while (!down && uv_hrtime() < deadline) {
        uv_run(&m->loop, UV_RUN_ONCE);
        down = m->disconnects > 0;
    }
    assert_int_equal(m->disconnects, 1);
    assert_int_equal(m->close_code, 1009);
    assert_string_equal(m->close_reason, "too?big");
    ms_close(m);
    free(m);
}

static void test_rdc_token_form(void** state) {
    (void)state;
    // 16 to 128 characters from [A-Za-z0-9._~-] (the access-control contract).
    assert_true(rdc_token_valid("abcdefghijklmnop"));
    assert_true(rdc_token_valid("AZaz09._~-AZaz09._~-"));
    assert_false(rdc_token_valid("abcdefghijklmno")); // 15
    char t[130];
    memset(t, 'x', sizeof t);
    t[128] = '\0';
    assert_true(rdc_token_valid(t));
    t[128] = 'x';
    t[129] = '\0';
    assert_false(rdc_token_valid(t));
    const char* bad[] = {"abcdefghijklmnop ",
                         "abcdefgh/ijklmnop",
                         "abcdefgh+ijklmnop",
                         "abcdefghijklmnop=",
                         "abcdefgh:ijklmnop",
                         "abcdefghijklmnop\r\nX: y",
                         "abcdefgh\xc3\xa9ijklmnop",
                         "",
                         NULL};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
        assert_false(rdc_token_valid(bad[i]));
    }
    // rdc_open refuses a malformed token before anything is sent; "" is none.
    uv_loop_t loop;
    assert_int_equal(uv_loop_init(&loop), 0);
    rdc_config cfg = rdc_config_default();
    rdc_client* c = NULL;
    cfg.token = "short";
    assert_int_equal(rdc_open(&loop, &cfg, &c), RDC_E_CONFIG);
    cfg.token = "abcdefghijklmnop\r\nX-Injected: 1";
    assert_int_equal(rdc_open(&loop, &cfg, &c), RDC_E_CONFIG);
    assert_null(c);
    assert_int_equal(uv_loop_close(&loop), 0);
}

static void test_rdc_sends_the_token_in_the_upgrade_request(void** state) {
    (void)state;
    mask_server* m = calloc(1, sizeof *m);
    assert_non_null(m);
    m->all_masked = true;
    m->token = "Tok.en_~-0123456789abcdef";
    ms_open(m, NULL);
    ms_run_until(m, &m->connected);
    assert_true(m->connected);
    // The request as the server read it: one Authorization header, Bearer,
    // the token exactly.
    const char* auth = strstr(m->request, "\r\nAuthorization: ");
    assert_non_null(auth);
    assert_null(strstr(auth + 2, "\r\nAuthorization: "));
    assert_non_null(strstr(m->request, "\r\nAuthorization: Bearer Tok.en_~-0123456789abcdef\r\n"));
    ms_close(m);
    free(m);

    // Without a token: no Authorization header at all.
    m = calloc(1, sizeof *m);
    assert_non_null(m);
    m->all_masked = true;
    ms_open(m, NULL);
    ms_run_until(m, &m->connected);
    assert_true(m->connected);
    assert_non_null(strstr(m->request, "\r\nSec-WebSocket-Protocol: ragdolld.v1\r\n"));
    assert_null(strstr(m->request, "Authorization"));
    ms_close(m);
    free(m);
}

static void test_rdc_reports_the_status_of_a_refused_upgrade(void** state) {
    (void)state;
    // The refusals of the access-control contract, as a server writes them.
    const struct {
        const char* response;
        int status;
        const char* reason;
    } cases[] = {
        {"HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Bearer\r\nContent-Length: 0\r\n\r\n", 401,
         "Unauthorized"},
        {"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n", 403, "Forbidden"},
        {"HTTP/1.1 429 Too Many Requests\r\nContent-Length: 0\r\n\r\n", 429, "Too Many Requests"},
        // A reason with a control character comes out printable.
        {"HTTP/1.1 503 Service\x01Unavailable\r\nRetry-After: 5\r\n\r\n", 503,
         "Service?Unavailable"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
        mask_server* m = calloc(1, sizeof *m);
        assert_non_null(m);
        m->all_masked = true;
        m->token = "abcdefghijklmnop";
        m->refusal = cases[i].response;
        ms_open(m, NULL);
        bool down = false;
        uint64_t deadline = uv_hrtime() + 10000000000ull;
        while (!down && uv_hrtime() < deadline) {
            uv_run(&m->loop, UV_RUN_ONCE);
            down = m->disconnects > 0;
        }
        assert_int_equal(m->disconnects, 1);
        assert_false(m->connected);
        assert_int_equal(m->error, RDC_E_HANDSHAKE);
        assert_int_equal(m->http_status, cases[i].status);
        assert_string_equal(m->http_reason, cases[i].reason);
        assert_non_null(strstr(m->request, "\r\nAuthorization: Bearer abcdefghijklmnop\r\n"));
        ms_close(m);
        free(m);
    }
}

static void test_rdc_error_names(void** state) {
    (void)state;
    assert_string_equal(rdc_err_name(0), "OK");
    assert_string_equal(rdc_err_name(RDC_E_TIMEOUT), "RDC_E_TIMEOUT");
    assert_string_equal(rdc_err_name(UV_ECONNREFUSED), "ECONNREFUSED");
    assert_string_equal(rdc_strerror(RDC_E_NOT_CONNECTED), "not connected");
    assert_string_equal(rdc_strerror(UV_ECONNREFUSED), uv_strerror(UV_ECONNREFUSED));
    assert_string_equal(rdc_kind_name(RDC_KIND_CHARACTER), "character");
    assert_string_equal(rdc_kind_name((rdc_kind)9), "unknown");
    assert_string_equal(rdc_char_state_name(RDC_CHAR_PARTIAL), "partial");
}

// ---------------------------------------------------------------------------
// Interpolation buffer (interp.c)
// ---------------------------------------------------------------------------

#define MS 1000000ull

// A world of one ball: at tick t it is at x = 0.1 t m, turned 0.05 t rad
// about +Y; and from tick 8 a rope particle at (0, 0.2 t, 0).
static void ball_snapshot(uint64_t tick, rdc_snapshot* s, rdc_entity* e, float* pose, float* xyz) {
    memset(s, 0, sizeof *s);
    const double half = 0.025 * (double)tick;
    const float p[7] = {
        (float)(0.1 * (double)tick), 1, 0, 0, (float)sin(half), 0, (float)cos(half)};
    memcpy(pose, p, sizeof p);
    e[0] = (rdc_entity){7, RDC_KIND_BALL, RDC_CHAR_ANIMATED, 1, NULL, pose, NULL, tick};
    xyz[0] = 0;
    xyz[1] = (float)(0.2 * (double)tick);
    xyz[2] = 0;
    e[1] = (rdc_entity){9, RDC_KIND_ROPE, RDC_CHAR_ANIMATED, 1, xyz, NULL, NULL, tick};
    s->world = 3;
    s->tick = tick;
    s->decoded = true;
    s->entity_count = tick >= 8 ? 2 : 1;
    s->entities = e;
}

static void push_tick(rdc_interp* ip, uint64_t tick, uint64_t arrival_ns) {
    rdc_snapshot s;
    rdc_entity e[2];
    float pose[7], xyz[3];
    ball_snapshot(tick, &s, e, pose, xyz);
    assert_int_equal(rdc_interp_push(ip, &s, arrival_ns), 0);
}

// A 60 Hz world sent at 30 Hz, every snapshot 50 ms late and none later
// than another: no jitter, a delay of two send intervals (66.7 ms), and
// the ball drawn where it was at the render tick, by hand: tick 10 arrives
// at 50 + 166.7 ms; drawing then shows tick (166.7 − 66.7) / 16.7 = 6.
static void test_rdc_interp_draws_between_snapshots(void** state) {
    (void)state;
    rdc_interp* ip = NULL;
    assert_int_equal(rdc_interp_create(60, 30, 0, &ip), 0);
    assert_null(rdc_interp_sample(ip, 0, NULL)); // nothing yet
    const double period = 1e9 / 60.0;
    for (uint64_t t = 0; t <= 10; t += 2) {
        push_tick(ip, t, (uint64_t)(50.0 * MS + (double)t * period));
    }
    rdc_interp_info info;
    const uint64_t now = (uint64_t)(50.0 * MS + 10.0 * period);
    const rdc_snapshot* s = rdc_interp_sample(ip, now, &info);
    assert_non_null(s);
    // (Arrival times are whole nanoseconds: a nanosecond of jitter.)
    assert_true(fabs(info.jitter_ms) < 1e-5);
    assert_true(fabs(info.delay_ms - 2000.0 / 30.0) < 1e-5);
    assert_true(fabs(info.render_tick - 6.0) < 1e-5);
    assert_false(info.held);
    assert_int_equal(s->world, 3);
    const rdc_entity* ball = rdc_snapshot_find(s, 7);
    assert_non_null(ball);
    assert_true(fabsf(ball->pose[0] - 0.6f) < 1e-5f);
    // Half way between ticks 6 and 8: x 0.65, turned 0.325 rad about +Y
    // (slerp of a rotation about one axis is the mid angle).
    s = rdc_interp_sample(ip, now + (uint64_t)(period), &info);
    ball = rdc_snapshot_find(s, 7);
    assert_true(fabs(info.render_tick - 7.0) < 1e-5);
    assert_int_equal(info.tick_a, 6);
    assert_int_equal(info.tick_b, 8);
    assert_true(fabs(info.alpha - 0.5) < 1e-5);
    assert_true(fabsf(ball->pose[0] - 0.7f) < 1e-5f);
    const float angle = 2.0f * atan2f(ball->pose[4], ball->pose[6]);
    assert_true(fabsf(angle - 0.35f) < 1e-5f);
    assert_true(fabsf(ball->pose[3]) < 1e-6f && fabsf(ball->pose[5]) < 1e-6f);
    // The rope appears at tick 8: at 7 it is taken as tick 8 has it.
    const rdc_entity* rope = rdc_snapshot_find(s, 9);
    assert_non_null(rope);
    assert_true(fabsf(rope->xyz[1] - 1.6f) < 1e-5f);
    // Long after the last arrival: held at the newest, not extrapolated.
    s = rdc_interp_sample(ip, now + 500 * MS, &info);
    assert_true(info.held);
    assert_int_equal(info.tick_b, 10);
    assert_true(fabsf(rdc_snapshot_find(s, 7)->pose[0] - 1.0f) < 1e-5f);
    // A snapshot older than the newest but not than every one kept is a
    // late duplicate: ignored; an undecoded one is refused.
    push_tick(ip, 4, now + 600 * MS);
    assert_int_equal(rdc_interp_sample(ip, now + 700 * MS, &info)->tick, 10);
    rdc_interp_reset(ip);
    assert_null(rdc_interp_sample(ip, now + 900 * MS, NULL));
    rdc_interp_destroy(ip);
    // Older than every snapshot kept (ticks 10 and 12 of a 2-deep buffer):
    // the server restarted; the buffer starts afresh at tick 0.
    assert_int_equal(rdc_interp_create(60, 30, 2, &ip), 0);
    push_tick(ip, 10, 0);
    push_tick(ip, 12, 40 * MS);
    push_tick(ip, 0, 90 * MS);
    s = rdc_interp_sample(ip, 100 * MS, &info);
    assert_int_equal(info.tick_b, 0);
    assert_true(fabsf(rdc_snapshot_find(s, 7)->pose[0]) < 1e-6f);
    // A restart whose ticks are already past the old ones (tick 300 two
    // seconds later, where the clock expects about 120): afresh too.
    push_tick(ip, 300, 2000 * MS);
    s = rdc_interp_sample(ip, 2000 * MS, &info);
    assert_int_equal(info.tick_a, 300);
    assert_false(info.held);
    rdc_snapshot bad;
    memset(&bad, 0, sizeof bad);
    assert_int_equal(rdc_interp_push(ip, &bad, now), RDC_E_CONFIG);
    rdc_interp_destroy(ip);
    assert_int_equal(rdc_interp_create(0, 30, 0, &ip), RDC_E_CONFIG);
    assert_int_equal(rdc_interp_create(60, 241, 0, &ip), RDC_E_CONFIG);
    assert_int_equal(rdc_interp_create(60, 30, 1, &ip), RDC_E_CONFIG);
}

// Arrivals alternately on time and 6 ms late: each spacing is 6 ms off
// (|D| = 6 ms), so RFC 3550's J = J + (|D| − J)/16 climbs to 6 ms as
// 6 (1 − (15/16)^n), and the delay with it.
static void test_rdc_interp_delay_follows_the_jitter(void** state) {
    (void)state;
    rdc_interp* ip = NULL;
    assert_int_equal(rdc_interp_create(60, 30, 8, &ip), 0);
    const double period = 1e9 / 60.0;
    const int n = 80;
    for (int i = 0; i <= n; ++i) {
        const uint64_t t = 2u * (uint64_t)i;
        push_tick(ip, t, (uint64_t)((double)t * period + (i % 2 ? 6.0 * MS : 0.0)));
    }
    rdc_interp_info info;
    assert_non_null(rdc_interp_sample(ip, (uint64_t)(2.0 * n * period), &info));
    const double want = 6.0 * (1.0 - pow(15.0 / 16.0, n));
    assert_true(fabs(info.jitter_ms - want) < 1e-5);
    assert_true(fabs(info.delay_ms - (2000.0 / 30.0 + want)) < 1e-5);
    rdc_interp_destroy(ip);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rdc_url_parsing),
        cmocka_unit_test(test_rdc_handshake_key_and_accept_match_rfc6455),
        cmocka_unit_test(test_rdc_handshake_request_lines),
        cmocka_unit_test(test_rdc_handshake_response_is_checked),
        cmocka_unit_test(test_rdc_decodes_the_golden_binary_frames),
        cmocka_unit_test(test_rdc_asks_for_a_resync_once_per_gap),
        cmocka_unit_test(test_rdc_refuses_binary_frames_of_world_0),
        cmocka_unit_test(test_rdc_counts_frames_without_decoding_them),
        cmocka_unit_test(test_rdc_keeps_metrics_events),
        cmocka_unit_test(test_rdc_decodes_json_snapshots),
        cmocka_unit_test(test_rdc_masks_every_frame_with_a_fresh_key),
        cmocka_unit_test(test_rdc_ignores_reply_ids_it_never_sent),
        cmocka_unit_test(test_rdc_snapshot_outlives_a_disconnect_in_its_callback),
        cmocka_unit_test(test_rdc_json_print_writes_integers_exactly),
        cmocka_unit_test(test_rdc_sends_ids_up_to_2_53_exactly),
        cmocka_unit_test(test_rdc_a_reply_without_ok_is_malformed),
        cmocka_unit_test(test_rdc_ignores_a_reply_with_trailing_garbage),
        cmocka_unit_test(test_rdc_reports_the_close_code_and_reason),
        cmocka_unit_test(test_rdc_token_form),
        cmocka_unit_test(test_rdc_sends_the_token_in_the_upgrade_request),
        cmocka_unit_test(test_rdc_reports_the_status_of_a_refused_upgrade),
        cmocka_unit_test(test_rdc_error_names),
        cmocka_unit_test(test_rdc_interp_draws_between_snapshots),
        cmocka_unit_test(test_rdc_interp_delay_follows_the_jitter),
    };
    return cmocka_run_group_tests_name("rdc", tests, NULL, NULL);
}
