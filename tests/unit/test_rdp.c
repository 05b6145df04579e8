/*
 * test_rdp.c: unit tests of the protocol codec (protocol/): command
 * decoding and validation, replies, events and snapshots. Expected values
 * are PROTOCOL.md's rules and hand-written byte layouts.
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
#include <string.h>

static rdp_code decode(const char* text, rdp_command* cmd, rdp_error* err) {
    return rdp_command_decode(text, strlen(text), cmd, err);
}

static void expect_code(const char* text, rdp_code want) {
    rdp_command cmd;
    rdp_error err;
    rdp_code got = decode(text, &cmd, &err);
    if (got != want) {
        print_error("%s: got %s (%s), want %s\n", text, rdp_code_name(got), err.message,
                    rdp_code_name(want));
    }
    assert_int_equal(got, want);
    if (want != RDP_OK) {
        assert_int_equal(err.code, want);
        assert_true(strlen(err.message) > 0);
    }
}

static void test_rdp_decodes_spawn_rope_with_defaults(void** state) {
    (void)state;
    rdp_command c;
    rdp_error e;
    const char* t = "{\"op\":\"spawn_rope\",\"id\":7,\"world\":3,\"anchor\":[1,2.5,-3],"
                    "\"segments\":20,\"segment_length\":0.1}";
    assert_int_equal(decode(t, &c, &e), RDP_OK);
    assert_int_equal(c.op, RDP_OP_SPAWN_ROPE);
    assert_true(c.has_id);
    assert_int_equal(c.id, 7);
    assert_int_equal(c.world, 3);
    assert_true(c.u.spawn_rope.anchor.x == 1.0 && c.u.spawn_rope.anchor.y == 2.5 &&
                c.u.spawn_rope.anchor.z == -3.0);
    assert_int_equal(c.u.spawn_rope.segments, 20);
    assert_true(c.u.spawn_rope.segment_length == 0.1);
    assert_true(c.u.spawn_rope.mass == 1.0); // PROTOCOL.md default
}

static void test_rdp_decodes_every_op(void** state) {
    (void)state;
    static const char* const ok[] = {
        "{\"op\":\"list_worlds\"}",
        "{\"op\":\"create_world\",\"name\":\"arena\"}",
        "{\"op\":\"destroy_world\",\"world\":2}",
        "{\"op\":\"subscribe\",\"world\":1,\"format\":\"binary\",\"rate_hz\":10}",
        "{\"op\":\"unsubscribe\",\"world\":1}",
        ("{\"op\":\"spawn_cloth\",\"world\":1,\"origin\":[0,3,0],\"cols\":12,\"rows\":10,"
         "\"spacing\":0.2,\"pin\":\"none\"}"),
        "{\"op\":\"spawn_ragdoll\",\"world\":1,\"position\":[0,3,0],\"facing\":1.5}",
        "{\"op\":\"despawn\",\"world\":1,\"entity\":4294967297}",
        "{\"op\":\"describe\",\"world\":1,\"entity\":4294967297}",
        "{\"op\":\"apply_impulse\",\"world\":1,\"entity\":1,\"particle\":0,\"impulse\":[1,0,0]}",
        "{\"op\":\"drag\",\"world\":1,\"entity\":1,\"particle\":3,\"target\":[0,1,0]}",
        "{\"op\":\"release\",\"world\":1,\"entity\":1,\"particle\":3}",
        "{\"op\":\"set_params\",\"world\":1,\"gravity\":[0,-3,0],\"iterations\":12}",
    };
    static const rdp_op ops[] = {
        RDP_OP_LIST_WORLDS, RDP_OP_CREATE_WORLD,  RDP_OP_DESTROY_WORLD, RDP_OP_SUBSCRIBE,
        RDP_OP_UNSUBSCRIBE, RDP_OP_SPAWN_CLOTH,   RDP_OP_SPAWN_RAGDOLL, RDP_OP_DESPAWN,
        RDP_OP_DESCRIBE,    RDP_OP_APPLY_IMPULSE, RDP_OP_DRAG,          RDP_OP_RELEASE,
        RDP_OP_SET_PARAMS,
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; ++i) {
        rdp_command c;
        rdp_error e;
        assert_int_equal(decode(ok[i], &c, &e), RDP_OK);
        assert_int_equal(c.op, ops[i]);
        assert_false(c.has_id);
        // The name maps back to the text's op.
        char quoted[48];
        snprintf(quoted, sizeof quoted, "\"%s\"", rdp_op_name(c.op));
        assert_non_null(strstr(ok[i], quoted));
    }
    rdp_command c;
    rdp_error e;
    assert_int_equal(decode(ok[1], &c, &e), RDP_OK);
    assert_string_equal(c.u.create_world.name, "arena");
    assert_int_equal(c.u.create_world.tick_hz, 60);
    assert_int_equal(decode(ok[3], &c, &e), RDP_OK);
    assert_int_equal(c.u.subscribe.format, RDP_FORMAT_BINARY);
    assert_int_equal(c.u.subscribe.rate_hz, 10);
    assert_int_equal(decode("{\"op\":\"subscribe\",\"world\":1}", &c, &e), RDP_OK);
    assert_int_equal(c.u.subscribe.format, RDP_FORMAT_JSON);
    assert_int_equal(c.u.subscribe.rate_hz, 30);
    assert_int_equal(decode(ok[5], &c, &e), RDP_OK);
    assert_int_equal(c.u.spawn_cloth.pin_top, 0);
    assert_int_equal(decode(ok[7], &c, &e), RDP_OK);
    assert_true(c.entity == 4294967297ull);
    assert_int_equal(decode(ok[12], &c, &e), RDP_OK);
    assert_int_equal(c.u.set_params.given, RDP_PARAM_GRAVITY | RDP_PARAM_ITERATIONS);
    assert_int_equal(c.u.set_params.iterations, 12);
    assert_true(c.u.set_params.gravity.y == -3.0);
}

static void test_rdp_rejects_bad_input_with_the_right_code(void** state) {
    (void)state;
    expect_code("{\"op\":\"list_worlds\"", RDP_E_BAD_JSON);
    expect_code("not json", RDP_E_BAD_JSON);
    expect_code("", RDP_E_BAD_JSON);
    expect_code("{\"op\":\"list_worlds\"} {}", RDP_E_BAD_JSON);
    expect_code("[1,2,3]", RDP_E_BAD_REQUEST);
    expect_code("{\"id\":1}", RDP_E_BAD_REQUEST);
    expect_code("{\"op\":5}", RDP_E_BAD_REQUEST);
    expect_code("{\"op\":\"fly\"}", RDP_E_UNKNOWN_OP);
    expect_code("{\"op\":\"despawn\",\"world\":1}", RDP_E_BAD_REQUEST);
    expect_code("{\"op\":\"despawn\",\"world\":\"1\",\"entity\":2}", RDP_E_BAD_REQUEST);
    expect_code("{\"op\":\"despawn\",\"world\":-1,\"entity\":2}", RDP_E_BAD_REQUEST);
    expect_code("{\"op\":\"despawn\",\"world\":1.5,\"entity\":2}", RDP_E_BAD_REQUEST);
    expect_code("{\"op\":\"despawn\",\"world\":9007199254740992,\"entity\":2}", RDP_E_BAD_REQUEST);
    expect_code("{\"op\":\"drag\",\"world\":1,\"entity\":1,\"particle\":0,\"target\":[1,2]}",
                RDP_E_BAD_REQUEST);
    expect_code("{\"op\":\"drag\",\"world\":1,\"entity\":1,\"particle\":0,\"target\":[1,2,\"3\"]}",
                RDP_E_BAD_REQUEST);
    expect_code("{\"op\":\"apply_impulse\",\"world\":1,\"entity\":1,\"particle\":0,\"impulse\":["
                "1e999,0,0]}",
                RDP_E_NOT_FINITE);
    expect_code(
        "{\"op\":\"apply_impulse\",\"world\":1,\"entity\":1,\"particle\":0,\"impulse\":[2e4,0,0]}",
        RDP_E_OUT_OF_RANGE);
    expect_code("{\"op\":\"set_params\",\"world\":1,\"damping\":-1e999}", RDP_E_NOT_FINITE);
    expect_code("{\"op\":\"set_params\",\"world\":1,\"damping\":1.5}", RDP_E_OUT_OF_RANGE);
    expect_code("{\"op\":\"set_params\",\"world\":1,\"iterations\":0}", RDP_E_OUT_OF_RANGE);
    expect_code("{\"op\":\"set_params\",\"world\":1}", RDP_E_BAD_REQUEST);
    // Outside the documented range is out_of_range however far out (1-1000
    // segments, 2-256 columns and rows); too_large is for capacities.
    expect_code("{\"op\":\"spawn_rope\",\"world\":1,\"anchor\":[0,1,0],\"segments\":5000,"
                "\"segment_length\":0.1}",
                RDP_E_OUT_OF_RANGE);
    expect_code("{\"op\":\"spawn_rope\",\"world\":1,\"anchor\":[0,1,0],\"segments\":1001,"
                "\"segment_length\":0.1}",
                RDP_E_OUT_OF_RANGE);
    expect_code("{\"op\":\"spawn_rope\",\"world\":1,\"anchor\":[0,1,0],\"segments\":1000,"
                "\"segment_length\":0.1}",
                RDP_OK);
    expect_code("{\"op\":\"spawn_cloth\",\"world\":1,\"origin\":[0,3,0],\"cols\":257,"
                "\"rows\":10,\"spacing\":0.2}",
                RDP_E_OUT_OF_RANGE);
    expect_code("{\"op\":\"spawn_cloth\",\"world\":1,\"origin\":[0,3,0],\"cols\":2,"
                "\"rows\":1,\"spacing\":0.2}",
                RDP_E_OUT_OF_RANGE);
    expect_code("{\"op\":\"spawn_rope\",\"world\":1,\"anchor\":[0,1,0],\"segments\":0,"
                "\"segment_length\":0.1}",
                RDP_E_OUT_OF_RANGE);
    expect_code("{\"op\":\"spawn_rope\",\"world\":1,\"anchor\":[0,1,0],\"segments\":3,"
                "\"segment_length\":0}",
                RDP_E_OUT_OF_RANGE);
    expect_code("{\"op\":\"spawn_rope\",\"world\":1,\"anchor\":[0,1001,0],\"segments\":3,"
                "\"segment_length\":0.1}",
                RDP_E_OUT_OF_RANGE);
    expect_code("{\"op\":\"spawn_cloth\",\"world\":1,\"origin\":[0,3,0],\"cols\":1000,"
                "\"rows\":10,\"spacing\":0.2}",
                RDP_E_OUT_OF_RANGE);
    expect_code("{\"op\":\"spawn_cloth\",\"world\":1,\"origin\":[0,3,0],\"cols\":10,"
                "\"rows\":10,\"spacing\":0.2,\"pin\":\"left\"}",
                RDP_E_BAD_REQUEST);
    expect_code("{\"op\":\"create_world\",\"name\":\"\"}", RDP_E_OUT_OF_RANGE);
    expect_code("{\"op\":\"create_world\",\"name\":\"a\\nb\"}", RDP_E_BAD_REQUEST);
    expect_code("{\"op\":\"create_world\",\"name\":\"x\",\"tick_hz\":1000}", RDP_E_OUT_OF_RANGE);
    expect_code("{\"op\":\"subscribe\",\"world\":1,\"format\":\"xml\"}", RDP_E_BAD_REQUEST);
    expect_code("{\"op\":\"list_worlds\",\"id\":\"seven\"}", RDP_E_BAD_REQUEST);
    // An escaped NUL would cut the string short in C: refused, wherever it is.
    expect_code("{\"op\":\"list_worlds\\u0000x\"}", RDP_E_BAD_REQUEST);
    expect_code("{\"op\":\"create_world\",\"name\":\"a\\u0000\\u001b[31m\"}", RDP_E_BAD_REQUEST);
    // ... but an escaped backslash followed by the text u0000 is fine.
    expect_code("{\"op\":\"create_world\",\"name\":\"a\\\\u0000\"}", RDP_OK);
    // Masses and lengths small enough to overflow the solver are refused.
    expect_code("{\"op\":\"spawn_rope\",\"world\":1,\"anchor\":[0,1,0],\"segments\":3,"
                "\"segment_length\":0.1,\"mass\":1e-40}",
                RDP_E_OUT_OF_RANGE);
    expect_code("{\"op\":\"spawn_cloth\",\"world\":1,\"origin\":[0,3,0],\"cols\":4,"
                "\"rows\":4,\"spacing\":1e-300}",
                RDP_E_OUT_OF_RANGE);
    expect_code("{\"op\":\"list_worlds\",\"id\":1.5}", RDP_E_BAD_REQUEST);
}

// Decodes a literal that may hold NUL bytes (its length is sizeof - 1).
#define DECODE_BYTES(lit, cmd, err) rdp_command_decode(lit, sizeof(lit) - 1, cmd, err)

static void test_rdp_refuses_raw_control_bytes_as_bad_json(void** state) {
    (void)state;
    rdp_command c;
    rdp_error e;
    // A raw NUL inside the op: cJSON would cut the string there and run
    // list_worlds. The message names the byte and its offset (18, counted
    // by hand: {"op":" is 7 bytes, list_worlds 11).
    static const char op_nul[] = "{\"op\":\"list_worlds\0garbage\",\"id\":1}";
    assert_int_equal(DECODE_BYTES(op_nul, &c, &e), RDP_E_BAD_JSON);
    assert_int_equal(e.code, RDP_E_BAD_JSON);
    assert_string_equal(e.message, "not valid JSON: raw control byte 0x00 at offset 18");
    // A name with a raw NUL, then raw SOH and ESC (a terminal escape): the
    // world would have been created as "ok". Offset 31: the 29 bytes of
    // {"op":"create_world","name":" then "ok".
    static const char name_nul[] = "{\"op\":\"create_world\",\"name\":\"ok\0\x01\x1b[2Jevil\"}";
    assert_int_equal(DECODE_BYTES(name_nul, &c, &e), RDP_E_BAD_JSON);
    assert_string_equal(e.message, "not valid JSON: raw control byte 0x00 at offset 31");
    // ... and without the NUL, the first control byte is the one named.
    static const char name_soh[] = "{\"op\":\"create_world\",\"name\":\"ok\x01\x1b[2Jevil\"}";
    assert_int_equal(DECODE_BYTES(name_soh, &c, &e), RDP_E_BAD_JSON);
    assert_string_equal(e.message, "not valid JSON: raw control byte 0x01 at offset 31");
    // A raw NUL where white space may go: cJSON skips it, and world 1 was
    // destroyed.
    static const char ws_nul[] = "{\"op\":\0\"destroy_world\",\"world\":1}";
    assert_int_equal(DECODE_BYTES(ws_nul, &c, &e), RDP_E_BAD_JSON);
    assert_string_equal(e.message, "not valid JSON: raw control byte 0x00 at offset 6");
    // Every other byte below 0x20 but tab, LF and CR, between tokens.
    for (int b = 0; b < 0x20; ++b) {
        char t[] = "{\"op\":#\"destroy_world\",\"world\":1}";
        *strchr(t, '#') = (char)b;
        rdp_code want = b == '\t' || b == '\n' || b == '\r' ? RDP_OK : RDP_E_BAD_JSON;
        assert_int_equal(rdp_command_decode(t, sizeof t - 1, &c, &e), want);
    }
    // Tab, CR and LF stay white space, wherever JSON allows it.
    static const char spaced[] = "\r\n{\t\"op\"\r\n:\t\"destroy_world\" ,\n\"world\" : 1\r\n}\n\t";
    assert_int_equal(DECODE_BYTES(spaced, &c, &e), RDP_OK);
    assert_int_equal(c.op, RDP_OP_DESTROY_WORLD);
    assert_int_equal(c.world, 1);
    // An escaped control character is JSON; a name still refuses it.
    expect_code("{\"op\":\"create_world\",\"name\":\"ok\\u001b[2J\"}", RDP_E_BAD_REQUEST);
    // The JSON ack (the text form of the binary ack) takes the same path.
    static const char ack_nul[] = "{\"op\":\"ack\",\"world\":1,\0\"tick\":7}";
    assert_int_equal(DECODE_BYTES(ack_nul, &c, &e), RDP_E_BAD_JSON);
    expect_code("{\"op\":\"ack\",\"world\":1,\t\"tick\":7}", RDP_OK);
}

static void test_rdp_quotes_an_unknown_op_cut_between_characters(void** state) {
    (void)state;
    // "a" then twenty "é" (2 bytes each): 41 bytes, of which the message
    // quotes at most 40; byte 40 is the first half of the last "é", so the
    // quote ends before it, with 19 of them. (Found by fuzz_command: cut
    // through the character, the error reply was not UTF-8, and a text
    // frame that is not UTF-8 makes a browser fail the connection.)
    char op[64] = "a";
    for (int i = 0; i < 20; ++i) {
        strcat(op, "\xc3\xa9");
    }
    char text[128], want[128] = "unknown op \"a";
    snprintf(text, sizeof text, "{\"op\":\"%s\",\"id\":1}", op);
    for (int i = 0; i < 19; ++i) {
        strcat(want, "\xc3\xa9");
    }
    strcat(want, "\"");
    rdp_command c;
    rdp_error e;
    assert_int_equal(decode(text, &c, &e), RDP_E_UNKNOWN_OP);
    assert_string_equal(e.message, want);
    // Forty ASCII bytes and more are cut at 40, as before.
    assert_int_equal(decode("{\"op\":\"0123456789012345678901234567890123456789xyz\"}", &c, &e),
                     RDP_E_UNKNOWN_OP);
    assert_string_equal(e.message, "unknown op \"0123456789012345678901234567890123456789\"");
}

static void test_rdp_checks_shape_before_finiteness_before_range(void** state) {
    (void)state;
    // A wrong type wins over a non-finite number, which wins over a range.
    expect_code("{\"op\":\"spawn_rope\",\"world\":1,\"anchor\":[1e999,0,0],\"segments\":\"3\","
                "\"segment_length\":0.1}",
                RDP_E_BAD_REQUEST);
    expect_code("{\"op\":\"spawn_rope\",\"world\":1,\"anchor\":[0,5000,0],\"segments\":3,"
                "\"segment_length\":1e999}",
                RDP_E_NOT_FINITE);
}

static void test_rdp_keeps_the_id_for_error_replies(void** state) {
    (void)state;
    rdp_command c;
    rdp_error e;
    assert_int_equal(decode("{\"op\":\"fly\",\"id\":42}", &c, &e), RDP_E_UNKNOWN_OP);
    assert_true(c.has_id);
    assert_int_equal(c.id, 42);
    size_t len;
    char* s = rdp_reply_error(rdp_re_of(&c), e.code, e.message, &len);
    assert_non_null(s);
    assert_int_equal(len, strlen(s));
    cJSON* r = cJSON_Parse(s);
    assert_true(cJSON_GetObjectItem(r, "re")->valuedouble == 42.0);
    cJSON* err = cJSON_GetObjectItem(r, "error");
    assert_string_equal(cJSON_GetObjectItem(err, "code")->valuestring, "unknown_op");
    assert_null(cJSON_GetObjectItem(r, "ok"));
    cJSON_Delete(r);
    rdp_free(s);

    // No id: "re" is null.
    assert_int_equal(decode("{\"op\":\"fly\"}", &c, &e), RDP_E_UNKNOWN_OP);
    s = rdp_reply_error(rdp_re_of(&c), e.code, e.message, &len);
    r = cJSON_Parse(s);
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(r, "re")));
    cJSON_Delete(r);
    rdp_free(s);
}

static void test_rdp_never_reads_past_the_frame(void** state) {
    (void)state;
    // The frame is the first 20 bytes; what follows must not be parsed.
    const char buf[] = "{\"op\":\"list_worlds\"}GARBAGE-NOT-PART-OF-THE-FRAME";
    rdp_command c;
    rdp_error e;
    assert_int_equal(rdp_command_decode(buf, 20, &c, &e), RDP_OK);
    assert_int_equal(rdp_command_decode(buf, 19, &c, &e), RDP_E_BAD_JSON);
}

static void test_rdp_reply_ok_carries_ids_exactly(void** state) {
    (void)state;
    rdp_re re = {true, 9007199254740991};
    rdp_reply_fields f;
    memset(&f, 0, sizeof f);
    f.has_tick = true;
    f.tick = 123456789;
    f.has_entity = true;
    f.entity = 9007199254740991ull; // 2^53 - 1 must survive a JSON round trip
    char* s = rdp_reply_ok(re, &f, NULL);
    assert_non_null(s);
    assert_non_null(strstr(s, "\"entity\":9007199254740991"));
    assert_non_null(strstr(s, "\"re\":9007199254740991"));
    cJSON* r = cJSON_Parse(s);
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(r, "ok")));
    assert_true(cJSON_GetObjectItem(r, "tick")->valuedouble == 123456789.0);
    cJSON_Delete(r);
    rdp_free(s);
}

static void test_rdp_reply_code_reads_the_outcome_of_every_reply(void** state) {
    (void)state;
    rdp_code code = RDP_E_INTERNAL;
    const rdp_re ids[] = {{true, 7}, {true, -9007199254740991}, {false, 0}};
    for (size_t k = 0; k < sizeof ids / sizeof ids[0]; ++k) {
        for (int c = RDP_E_BAD_JSON; c <= RDP_E_INTERNAL; ++c) {
            size_t len = 0;
            char* s = rdp_reply_error(ids[k], (rdp_code)c, "why", &len);
            code = RDP_OK;
            assert_true(rdp_reply_code(s, len, &code));
            assert_int_equal(code, c);
            // Cut anywhere before the end of the code's name, it is no reply.
            size_t name_end = (size_t)(strstr(s, rdp_code_name((rdp_code)c)) - s) +
                              strlen(rdp_code_name((rdp_code)c));
            for (size_t cut = 0; cut <= name_end; ++cut) {
                assert_false(rdp_reply_code(s, cut, &code));
            }
            rdp_free(s);
        }
        rdp_reply_fields f;
        memset(&f, 0, sizeof f);
        size_t len = 0;
        char* s = rdp_reply_ok(ids[k], &f, &len);
        code = RDP_E_INTERNAL;
        assert_true(rdp_reply_code(s, len, &code));
        assert_int_equal(code, RDP_OK);
        rdp_free(s);
        const char* body = "{\"kind\":\"ball\"}";
        s = rdp_reply_describe(ids[k], 5, 6, body, strlen(body), &len);
        code = RDP_E_INTERNAL;
        assert_true(rdp_reply_code(s, len, &code));
        assert_int_equal(code, RDP_OK);
        rdp_free(s);
    }
    // Events and anything else are not replies.
    size_t len = 0;
    char* ev = rdp_event_world_destroyed(3, 4, &len);
    code = RDP_E_BAD_STATE;
    assert_false(rdp_reply_code(ev, len, &code));
    rdp_free(ev);
    const char* other[] = {"", "{}", "{\"re\":1,\"ok\":false}",
                           "{\"re\":1,\"error\":{\"code\":\"nope\"}}",
                           "{\"re\":1,\"error\":{\"code\":\"bad_jsonx\"}}"};
    for (size_t i = 0; i < sizeof other / sizeof other[0]; ++i) {
        assert_false(rdp_reply_code(other[i], strlen(other[i]), &code));
    }
    assert_int_equal(code, RDP_E_BAD_STATE); // untouched
}

static const float xyz[6] = {0.123456f, 1.0f, -2.00004f, 3.5f, 1e-6f, -0.25f};
static const uint32_t sticks[2] = {0, 1};
static const float radius[2] = {0.02f, 0.02f};
static const float inv_mass[2] = {0.0f, 1.0f};

static rdp_snapshot small_snapshot(rdp_entity_state* e) {
    memset(e, 0, sizeof *e);
    e->entity = 4294967297ull;
    e->kind = RDP_KIND_ROPE;
    e->particle_count = 2;
    e->xyz = xyz;
    e->stick_count = 1;
    e->sticks = sticks;
    e->radius = radius;
    e->inv_mass = inv_mass;
    rdp_snapshot s;
    memset(&s, 0, sizeof s);
    s.world = 1;
    s.tick = 99;
    s.entity_count = 1;
    s.entities = e;
    s.metrics.solver_passes = 8;
    return s;
}

static void test_rdp_json_snapshot_rounds_and_sends_topology_on_request(void** state) {
    (void)state;
    rdp_entity_state e;
    rdp_snapshot s = small_snapshot(&e);
    char* with = rdp_snapshot_json(&s, true, NULL);
    char* without = rdp_snapshot_json(&s, false, NULL);
    cJSON* a = cJSON_Parse(with);
    cJSON* ent = cJSON_GetArrayItem(cJSON_GetObjectItem(a, "entities"), 0);
    assert_string_equal(cJSON_GetObjectItem(a, "ev")->valuestring, "snapshot");
    assert_true(cJSON_GetObjectItem(a, "tick")->valuedouble == 99.0);
    assert_true(cJSON_GetObjectItem(ent, "entity")->valuedouble == 4294967297.0);
    assert_string_equal(cJSON_GetObjectItem(ent, "kind")->valuestring, "rope");
    cJSON* p0 = cJSON_GetArrayItem(cJSON_GetObjectItem(ent, "particles"), 0);
    // 0.1 mm rounding: 0.123456 → 0.1235, -2.00004 → -2.0 (within 0.05 mm).
    assert_true(fabs(cJSON_GetArrayItem(p0, 0)->valuedouble - 0.1235) < 1e-12);
    cJSON* p1 = cJSON_GetArrayItem(cJSON_GetObjectItem(ent, "particles"), 1);
    assert_true(cJSON_GetArrayItem(p1, 1)->valuedouble == 0.0);
    assert_non_null(cJSON_GetObjectItem(ent, "sticks"));
    cJSON* pinned = cJSON_GetObjectItem(ent, "pinned");
    assert_int_equal(cJSON_GetArraySize(pinned), 1);
    assert_true(cJSON_GetArrayItem(pinned, 0)->valuedouble == 0.0);
    cJSON_Delete(a);
    a = cJSON_Parse(without);
    ent = cJSON_GetArrayItem(cJSON_GetObjectItem(a, "entities"), 0);
    assert_null(cJSON_GetObjectItem(ent, "sticks"));
    assert_null(cJSON_GetObjectItem(ent, "pinned"));
    assert_non_null(cJSON_GetObjectItem(ent, "particles"));
    cJSON_Delete(a);
    rdp_free(with);
    rdp_free(without);
}

static void test_rdp_describe_reply_splices_a_cached_body(void** state) {
    (void)state;
    rdp_entity_state e;
    small_snapshot(&e);
    size_t body_len = 0;
    char* body = rdp_describe_body(&e, &body_len);
    // PROTOCOL.md §3 describe: kind, particle_count and the §5.1 topology of a
    // two-particle rope whose first particle is pinned.
    assert_string_equal(body, "{\"kind\":\"rope\",\"particle_count\":2,\"sticks\":[[0,1]],"
                              "\"radii\":[0.02,0.02],\"pinned\":[0]}");
    assert_int_equal(body_len, strlen(body));
    rdp_re re = {true, 7};
    size_t len = 0;
    char* spliced = rdp_reply_describe(re, 42, 9007199254740991ull, body, body_len, &len);
    assert_string_equal(spliced,
                        "{\"re\":7,\"ok\":true,\"tick\":42,\"entity\":9007199254740991,\"kind\":"
                        "\"rope\",\"particle_count\":2,\"sticks\":[[0,1]],\"radii\":[0.02,0.02],"
                        "\"pinned\":[0]}");
    assert_int_equal(len, strlen(spliced));
    // The same text as the general encoder.
    rdp_reply_fields f;
    memset(&f, 0, sizeof f);
    f.has_tick = true;
    f.tick = 42;
    f.has_entity = true;
    f.entity = 9007199254740991ull;
    f.describe = &e;
    char* whole = rdp_reply_ok(re, &f, NULL);
    assert_string_equal(spliced, whole);
    rdp_free(whole);
    rdp_free(spliced);
    // No id: "re" is null. An empty body still makes valid JSON.
    rdp_re none = {false, 0};
    spliced = rdp_reply_describe(none, 1, 2, "{}", 2, NULL);
    assert_string_equal(spliced, "{\"re\":null,\"ok\":true,\"tick\":1,\"entity\":2}");
    rdp_free(spliced);
    // Only the body's bytes are read (no NUL needed); a non-object is refused.
    assert_null(rdp_reply_describe(re, 1, 2, body, body_len - 1, NULL));
    assert_null(rdp_reply_describe(re, 1, 2, "[]", 2, NULL));
    rdp_free(body);
}

static void test_rdp_events(void** state) {
    (void)state;
    rdp_world_info w = {5, "demo", 77, 60, 4};
    char* s = rdp_event_welcome("0.1.0", &w, 1, NULL);
    cJSON* r = cJSON_Parse(s);
    assert_string_equal(cJSON_GetObjectItem(r, "ev")->valuestring, "welcome");
    assert_true(cJSON_GetObjectItem(r, "protocol")->valuedouble == 1.0);
    assert_string_equal(cJSON_GetObjectItem(r, "server")->valuestring, "ragdolld");
    cJSON* w0 = cJSON_GetArrayItem(cJSON_GetObjectItem(r, "worlds"), 0);
    assert_string_equal(cJSON_GetObjectItem(w0, "name")->valuestring, "demo");
    assert_true(cJSON_GetObjectItem(w0, "tick_hz")->valuedouble == 60.0);
    cJSON_Delete(r);
    rdp_free(s);
    s = rdp_event_world_destroyed(5, 80, NULL);
    assert_string_equal(s, "{\"ev\":\"world_destroyed\",\"world\":5,\"tick\":80}");
    rdp_free(s);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rdp_decodes_spawn_rope_with_defaults),
        cmocka_unit_test(test_rdp_decodes_every_op),
        cmocka_unit_test(test_rdp_rejects_bad_input_with_the_right_code),
        cmocka_unit_test(test_rdp_refuses_raw_control_bytes_as_bad_json),
        cmocka_unit_test(test_rdp_quotes_an_unknown_op_cut_between_characters),
        cmocka_unit_test(test_rdp_checks_shape_before_finiteness_before_range),
        cmocka_unit_test(test_rdp_keeps_the_id_for_error_replies),
        cmocka_unit_test(test_rdp_never_reads_past_the_frame),
        cmocka_unit_test(test_rdp_reply_ok_carries_ids_exactly),
        cmocka_unit_test(test_rdp_reply_code_reads_the_outcome_of_every_reply),
        cmocka_unit_test(test_rdp_json_snapshot_rounds_and_sends_topology_on_request),
        cmocka_unit_test(test_rdp_describe_reply_splices_a_cached_body),
        cmocka_unit_test(test_rdp_events),
    };
    return cmocka_run_group_tests_name("rdp", tests, NULL, NULL);
}
