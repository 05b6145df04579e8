/*
 * test_rdc.c: unit tests of the C client's parts that do no I/O: URLs, the
 * handshake request and response (RFC 6455 §4.1-4.2 vectors), and the
 * snapshot decoder on snapshots written by hand from PROTOCOL.md §5 (not by
 * the server's encoder). tests/integration/test_rdc_server.c runs the
 * client against a real server.
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

#include <math.h>
#include <stdio.h>
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
    const char* bad[] = {"http://h/ws", "wss://h/ws", "ws://user@h/ws", "ws://h:0/ws",
                         "ws:///ws",    "ws//h",      "",               "ws://h/a b"};
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
    rdc__ws_accept(key, accept);
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

static uint8_t* put_u16(uint8_t* p, uint16_t v) {
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    return p + 2;
}

static uint8_t* put_u32(uint8_t* p, uint32_t v) {
    for (int i = 0; i < 4; ++i) {
        p[i] = (uint8_t)(v >> (8 * i));
    }
    return p + 4;
}

static uint8_t* put_u64(uint8_t* p, uint64_t v) {
    for (int i = 0; i < 8; ++i) {
        p[i] = (uint8_t)(v >> (8 * i));
    }
    return p + 8;
}

static uint8_t* put_f32(uint8_t* p, float f) {
    uint32_t bits;
    memcpy(&bits, &f, 4);
    return put_u32(p, bits);
}

// A binary snapshot laid out by hand after PROTOCOL.md §5.2: world 7, tick
// 1234, a rope of 2 particles and a character of 2 bones in state 1
// (ragdoll). Returns its size.
static size_t hand_binary(uint8_t* buf) {
    uint8_t* p = buf;
    memcpy(p, "RDS1", 4);
    p = put_u16(p + 4, 1);      // version
    p = put_u16(p, 0);          // flags
    p = put_u64(p, 7);          // world
    p = put_u64(p, 1234);       // tick
    p = put_u64(p, UINT64_MAX); // no baseline
    p = put_u32(p, 2);          // entities
    p = put_u32(p, 0);
    p = put_u64(p, 4294967297ull); // the rope
    *p++ = 1;
    *p++ = 0;
    *p++ = 0;
    *p++ = 0;
    p = put_u32(p, 2);
    const float rope[6] = {-2.0f, 4.0f, 1.0f, -1.75f, 3.5f, 1.25f};
    for (int i = 0; i < 6; ++i) {
        p = put_f32(p, rope[i]);
    }
    p = put_u64(p, 4294967298ull); // the character
    *p++ = 4;
    *p++ = 1;
    *p++ = 0;
    *p++ = 0;
    p = put_u32(p, 2);
    const float bones[14] = {1.0f, 0.96f, 2.0f, 0.0f,   0.0f, 0.70710677f, 0.70710677f,
                             1.0f, 1.11f, 2.0f, 0.5f, 0.5f, 0.5f,        0.5f};
    for (int i = 0; i < 14; ++i) {
        p = put_f32(p, bones[i]);
    }
    return (size_t)(p - buf);
}

static void test_rdc_decodes_binary_v1_written_by_hand(void** state) {
    (void)state;
    uint8_t buf[256];
    size_t len = hand_binary(buf);
    assert_int_equal(len, 40 + 16 + 24 + 16 + 56);
    rdc__decoder d;
    memset(&d, 0, sizeof d);
    rdc_snapshot s;
    rdc__ack ack;
    assert_int_equal(rdc__decode_snapshot(&d, buf, len, true, NULL, &s, &ack), 0);
    assert_false(ack.wanted); // version 1 is never acknowledged
    assert_int_equal(s.world, 7);
    assert_int_equal(s.tick, 1234);
    assert_int_equal(s.format, RDC_FORMAT_BINARY);
    assert_int_equal(s.bytes, len);
    assert_null(s.json);
    assert_int_equal(s.entity_count, 2);
    const rdc_entity* rope = rdc_snapshot_find(&s, 4294967297ull);
    assert_non_null(rope);
    assert_int_equal(rope->kind, RDC_KIND_ROPE);
    assert_int_equal(rope->count, 2);
    assert_null(rope->pose);
    assert_true(rope->xyz[0] == -2.0f && rope->xyz[1] == 4.0f && rope->xyz[2] == 1.0f);
    assert_true(rope->xyz[3] == -1.75f && rope->xyz[4] == 3.5f && rope->xyz[5] == 1.25f);
    const rdc_entity* ch = rdc_snapshot_find(&s, 4294967298ull);
    assert_non_null(ch);
    assert_int_equal(ch->kind, RDC_KIND_CHARACTER);
    assert_int_equal(ch->state, RDC_CHAR_RAGDOLL);
    assert_int_equal(ch->count, 2);
    assert_null(ch->xyz);
    assert_null(ch->bone_names); // binary carries no names
    assert_int_equal(rdc_entity_bone(ch, "pelvis"), -1);
    assert_true(ch->pose[1] == 0.96f && ch->pose[6] == 0.70710677f && ch->pose[8] == 1.11f &&
                ch->pose[13] == 0.5f);
    assert_null(rdc_snapshot_find(&s, 42));

    // Truncated anywhere: refused, never read past the end.
    for (size_t cut = 0; cut < len; ++cut) {
        assert_int_equal(rdc__decode_snapshot(&d, buf, cut, true, NULL, &s, &ack),
                         RDC_E_PROTOCOL);
    }
    // A delta against a baseline, or another version: not version 1's.
    uint8_t other[256];
    memcpy(other, buf, len);
    put_u64(other + 24, 1200);
    assert_int_equal(rdc__decode_snapshot(&d, other, len, true, NULL, &s, &ack), RDC_E_PROTOCOL);
    memcpy(other, buf, len);
    put_u16(other + 4, 2);
    assert_int_equal(rdc__decode_snapshot(&d, other, len, true, NULL, &s, &ack), RDC_E_PROTOCOL);
    // A position that is not finite.
    memcpy(other, buf, len);
    put_f32(other + 56, INFINITY);
    assert_int_equal(rdc__decode_snapshot(&d, other, len, true, NULL, &s, &ack), RDC_E_PROTOCOL);
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
    assert_int_equal(
        rdc__decode_snapshot(&d, (const uint8_t*)text, sizeof text - 1, false, json, &s, &ack), 0);
    assert_false(ack.wanted);
    assert_int_equal(s.world, 3);
    assert_int_equal(s.tick, 120);
    assert_int_equal(s.format, RDC_FORMAT_JSON);
    assert_ptr_equal(s.json, json);
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

    // Malformed: a particle with two coordinates, a pose without q, no tick.
    const char* bad[] = {
        "{\"ev\":\"snapshot\",\"world\":3,\"tick\":1,\"entities\":[{\"entity\":1,\"kind\":"
        "\"rope\",\"particles\":[[0,1]]}]}",
        "{\"ev\":\"snapshot\",\"world\":3,\"tick\":1,\"entities\":[{\"entity\":1,\"kind\":"
        "\"ball\",\"p\":[0,1,2]}]}",
        "{\"ev\":\"snapshot\",\"world\":3,\"entities\":[]}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
        json = cJSON_Parse(bad[i]);
        assert_int_equal(rdc__decode_snapshot(&d, (const uint8_t*)bad[i], strlen(bad[i]), false,
                                              json, &s, &ack),
                         RDC_E_PROTOCOL);
        cJSON_Delete(json);
    }
    rdc__decoder_free(&d);
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

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rdc_url_parsing),
        cmocka_unit_test(test_rdc_handshake_key_and_accept_match_rfc6455),
        cmocka_unit_test(test_rdc_handshake_request_lines),
        cmocka_unit_test(test_rdc_handshake_response_is_checked),
        cmocka_unit_test(test_rdc_decodes_binary_v1_written_by_hand),
        cmocka_unit_test(test_rdc_decodes_json_snapshots),
        cmocka_unit_test(test_rdc_error_names),
    };
    return cmocka_run_group_tests_name("rdc", tests, NULL, NULL);
}
