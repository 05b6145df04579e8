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

#include "json_ref.h"
#include "rdp.h"

#include <cJSON.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
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
    assert_true(c.u.spawn_rope.mass == 1.0);       // PROTOCOL.md default
    assert_true(c.u.spawn_rope.compliance == 0.0); // rigid
}

// Item 9 of issue 10: stiffness as XPBD compliance (m/N) over the wire,
// with PROTOCOL.md's defaults and range [0, 1].
static void test_rdp_decodes_spawn_compliance(void** state) {
    (void)state;
    rdp_command c;
    rdp_error e;
    assert_int_equal(decode("{\"op\":\"spawn_cloth\",\"world\":1,\"origin\":[0,3,0],\"cols\":4,"
                            "\"rows\":4,\"spacing\":0.1}",
                            &c, &e),
                     RDP_OK);
    assert_true(c.u.spawn_cloth.stretch_compliance == 0.0);
    assert_true(c.u.spawn_cloth.shear_compliance == 0.0);
    assert_true(c.u.spawn_cloth.bend_compliance == 1e-3);
    assert_int_equal(decode("{\"op\":\"spawn_cloth\",\"world\":1,\"origin\":[0,3,0],\"cols\":4,"
                            "\"rows\":4,\"spacing\":0.1,\"stretch_compliance\":1e-6,"
                            "\"shear_compliance\":2e-6,\"bend_compliance\":0}",
                            &c, &e),
                     RDP_OK);
    assert_true(c.u.spawn_cloth.stretch_compliance == 1e-6);
    assert_true(c.u.spawn_cloth.shear_compliance == 2e-6);
    assert_true(c.u.spawn_cloth.bend_compliance == 0.0);
    assert_int_equal(decode("{\"op\":\"spawn_rope\",\"world\":1,\"anchor\":[0,1,0],\"segments\":3,"
                            "\"segment_length\":0.1,\"compliance\":1}",
                            &c, &e),
                     RDP_OK);
    assert_true(c.u.spawn_rope.compliance == 1.0);
    // Negative, above the bound, not a number, not finite: refused.
    static const char* const keys[] = {"stretch_compliance", "shear_compliance", "bend_compliance"};
    for (int k = 0; k < 4; ++k) {
        char head[160];
        if (k < 3) {
            snprintf(head, sizeof head,
                     "{\"op\":\"spawn_cloth\",\"world\":1,\"origin\":[0,3,0],\"cols\":4,"
                     "\"rows\":4,\"spacing\":0.1,\"%s\":",
                     keys[k]);
        } else {
            snprintf(head, sizeof head,
                     "{\"op\":\"spawn_rope\",\"world\":1,\"anchor\":[0,1,0],\"segments\":3,"
                     "\"segment_length\":0.1,\"compliance\":");
        }
        static const struct {
            const char* value;
            rdp_code code;
        } bad[] = {{"-1e-9}", RDP_E_OUT_OF_RANGE},
                   {"1.000001}", RDP_E_OUT_OF_RANGE},
                   {"1e999}", RDP_E_NOT_FINITE},
                   {"\"0.1\"}", RDP_E_BAD_REQUEST}};
        for (size_t b = 0; b < sizeof bad / sizeof bad[0]; ++b) {
            char text[256];
            snprintf(text, sizeof text, "%s%s", head, bad[b].value);
            expect_code(text, bad[b].code);
        }
    }
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
    assert_int_equal(c.u.spawn_cloth.pin, RDP_PIN_NONE);
    assert_int_equal(decode(ok[7], &c, &e), RDP_OK);
    assert_true(c.entity == 4294967297ull);
    assert_int_equal(decode(ok[12], &c, &e), RDP_OK);
    assert_int_equal(c.u.set_params.given, RDP_PARAM_GRAVITY | RDP_PARAM_ITERATIONS);
    assert_int_equal(c.u.set_params.iterations, 12);
    assert_true(c.u.set_params.gravity.y == -3.0);
    // Wind and air (PROTOCOL.md §3 set_params), and a self-colliding cloth
    // pinned on its left edge.
    assert_int_equal(decode("{\"op\":\"set_params\",\"world\":1,\"wind\":[5,0,-1],\"gust\":0.5,"
                            "\"gust_period\":2,\"air_density\":1.2,\"drag_coef\":1.1,"
                            "\"lift_coef\":0.4}",
                            &c, &e),
                     RDP_OK);
    assert_int_equal(c.u.set_params.given, RDP_PARAM_WIND | RDP_PARAM_GUST | RDP_PARAM_GUST_PERIOD |
                                               RDP_PARAM_AIR_DENSITY | RDP_PARAM_DRAG_COEF |
                                               RDP_PARAM_LIFT_COEF);
    assert_true(c.u.set_params.wind.x == 5.0 && c.u.set_params.wind.z == -1.0);
    assert_true(c.u.set_params.gust_period == 2.0 && c.u.set_params.lift_coef == 0.4);
    assert_int_equal(decode("{\"op\":\"spawn_cloth\",\"world\":1,\"origin\":[0,3,0],\"cols\":4,"
                            "\"rows\":4,\"spacing\":0.1,\"pin\":\"left\",\"self_collision\":true,"
                            "\"thickness\":0.08,\"across\":[0,0,1]}",
                            &c, &e),
                     RDP_OK);
    assert_int_equal(c.u.spawn_cloth.pin, RDP_PIN_LEFT);
    assert_int_equal(c.u.spawn_cloth.self_collision, 1);
    assert_true(c.u.spawn_cloth.thickness == 0.08);
    assert_int_equal(c.given, RDP_GIVEN_ACROSS);
    assert_true(c.u.spawn_cloth.across.z == 1.0);
    assert_int_equal(decode("{\"op\":\"spawn_cloth\",\"world\":1,\"origin\":[0,3,0],\"cols\":4,"
                            "\"rows\":4,\"spacing\":0.1}",
                            &c, &e),
                     RDP_OK);
    assert_int_equal(c.u.spawn_cloth.pin, RDP_PIN_TOP);
    assert_int_equal(c.u.spawn_cloth.self_collision, 0);
    assert_true(c.u.spawn_cloth.thickness == 0.0); // the simulator's 0.8 × spacing
    assert_int_equal(c.given, 0);
}

// create_world's limits: an object of known keys, each a whole number in
// [1, 2^26]; whatever is wrong is named, with the code of its kind.
static void expect_message(const char* text, rdp_code want, const char* message) {
    rdp_command cmd;
    rdp_error err;
    assert_int_equal(decode(text, &cmd, &err), want);
    assert_string_equal(err.message, message);
}

static void test_rdp_decodes_create_world_limits(void** state) {
    (void)state;
    rdp_command c;
    rdp_error e;
    assert_int_equal(
        decode("{\"op\":\"create_world\",\"name\":\"rain\",\"limits\":{\"bodies\":4800,"
               "\"joints\":4500,\"entities\":300}}",
               &c, &e),
        RDP_OK);
    const rdp_limits* l = &c.u.create_world.limits;
    assert_int_equal(l->given, (1u << RDP_LIMIT_BODIES) | (1u << RDP_LIMIT_JOINTS) |
                                   (1u << RDP_LIMIT_ENTITIES));
    assert_int_equal(l->value[RDP_LIMIT_BODIES], 4800);
    assert_int_equal(l->value[RDP_LIMIT_JOINTS], 4500);
    assert_int_equal(l->value[RDP_LIMIT_ENTITIES], 300);
    // Every key, at both ends of the range; an empty object gives none.
    assert_int_equal(decode("{\"op\":\"create_world\",\"name\":\"a\",\"limits\":{\"entities\":1,"
                            "\"particles\":1,\"constraints\":67108864,\"bodies\":1,\"joints\":1,"
                            "\"contacts\":1}}",
                            &c, &e),
                     RDP_OK);
    assert_int_equal(c.u.create_world.limits.given, (1u << RDP_LIMIT_COUNT) - 1);
    assert_int_equal(c.u.create_world.limits.value[RDP_LIMIT_CONSTRAINTS], 67108864);
    assert_int_equal(decode("{\"op\":\"create_world\",\"name\":\"a\",\"limits\":{}}", &c, &e),
                     RDP_OK);
    assert_int_equal(c.u.create_world.limits.given, 0);
    assert_int_equal(decode("{\"op\":\"create_world\",\"name\":\"a\"}", &c, &e), RDP_OK);
    assert_int_equal(c.u.create_world.limits.given, 0);
    for (int i = 0; i < RDP_LIMIT_COUNT; ++i) {
        assert_non_null(rdp_limit_name((rdp_limit)i));
    }
    assert_string_equal(rdp_limit_name(RDP_LIMIT_CONTACTS), "contacts");
    assert_null(rdp_limit_name(RDP_LIMIT_COUNT));

#define CW(limits) "{\"op\":\"create_world\",\"name\":\"a\",\"limits\":" limits "}"
    expect_message(CW("{\"bodies\":-1}"), RDP_E_OUT_OF_RANGE,
                   "field \"limits.bodies\" = -1 is outside [1, 67108864]");
    expect_message(CW("{\"bodies\":0}"), RDP_E_OUT_OF_RANGE,
                   "field \"limits.bodies\" = 0 is outside [1, 67108864]");
    expect_message(CW("{\"particles\":67108865}"), RDP_E_OUT_OF_RANGE,
                   "field \"limits.particles\" = 67108865 is outside [1, 67108864]");
    // Numbers are quoted as sent, not as 17 digits of their double
    // (0.040000000000000001; a fresh user's report).
    expect_message("{\"op\":\"spawn_cloth\",\"world\":1,\"origin\":[0,1,0],\"cols\":4,"
                   "\"rows\":4,\"spacing\":20.04}",
                   RDP_E_OUT_OF_RANGE, "field \"spacing\" = 20.04 is outside [0.001, 10]");
    expect_message("{\"op\":\"spawn_cloth\",\"world\":1,\"origin\":[0.1,1e300,0],\"cols\":4,"
                   "\"rows\":4,\"spacing\":0.1}",
                   RDP_E_OUT_OF_RANGE,
                   "field \"origin\" component 1 = 1e+300 is outside [-1000, 1000]");
    expect_message(CW("{\"joints\":\"lots\"}"), RDP_E_BAD_REQUEST,
                   "field \"limits.joints\" must be a number");
    expect_message(CW("{\"joints\":null}"), RDP_E_BAD_REQUEST,
                   "field \"limits.joints\" must be a number");
    expect_message(CW("{\"entities\":2.5}"), RDP_E_BAD_REQUEST,
                   "field \"limits.entities\" must be an integer");
    expect_message(CW("{\"contacts\":1e999}"), RDP_E_NOT_FINITE,
                   "field \"limits.contacts\" is not finite");
    expect_message(CW("{\"bones\":10}"), RDP_E_BAD_REQUEST,
                   "field \"limits\" has no limit \"bones\" (limits are entities, particles, "
                   "constraints, bodies, joints, contacts)");
    expect_message(CW("[4096]"), RDP_E_BAD_REQUEST,
                   "field \"limits\" must be an object of limits, e.g. {\"bodies\": 4096}");
    expect_message(CW("4096"), RDP_E_BAD_REQUEST,
                   "field \"limits\" must be an object of limits, e.g. {\"bodies\": 4096}");
    // Shape before finiteness before range, across keys: the unknown key is
    // named although an earlier value is out of range.
    expect_code(CW("{\"bodies\":0,\"x\":1}"), RDP_E_BAD_REQUEST);
    expect_code(CW("{\"bodies\":0,\"joints\":1e999}"), RDP_E_NOT_FINITE);
#undef CW
}

// spawn_character's solver: "maximal" or "reduced" (sim_char_solver's
// values), absent for the skeleton's; anything else, null included, is
// bad_request naming the choices.
static void test_rdp_decodes_spawn_character_solver(void** state) {
    (void)state;
    rdp_command c;
    rdp_error e;
#define SC(solver)                                                                                 \
    "{\"op\":\"spawn_character\",\"world\":1,\"position\":[0,0,0],\"solver\":" solver "}"
    assert_int_equal(decode(SC("\"maximal\""), &c, &e), RDP_OK);
    assert_int_equal(c.u.spawn_character.solver, 1);
    assert_int_equal(decode(SC("\"reduced\""), &c, &e), RDP_OK);
    assert_int_equal(c.u.spawn_character.solver, 2);
    assert_int_equal(
        decode("{\"op\":\"spawn_character\",\"world\":1,\"position\":[0,0,0]}", &c, &e), RDP_OK);
    assert_int_equal(c.u.spawn_character.solver, 0);
    expect_message(SC("\"featherstone\""), RDP_E_BAD_REQUEST,
                   "field \"solver\" must be \"maximal\" or \"reduced\", not \"featherstone\"");
    expect_message(SC("2"), RDP_E_BAD_REQUEST,
                   "field \"solver\" must be a string: \"maximal\" or \"reduced\"");
    expect_message(SC("null"), RDP_E_BAD_REQUEST,
                   "field \"solver\" must be a string: \"maximal\" or \"reduced\"");
#undef SC
    // Its state: "animated" (absent) or "ragdoll".
#define ST(state)                                                                                  \
    "{\"op\":\"spawn_character\",\"world\":1,\"position\":[0,0,0],\"state\":" state "}"
    assert_int_equal(decode(ST("\"ragdoll\""), &c, &e), RDP_OK);
    assert_int_equal(c.u.spawn_character.state, RDP_SPAWN_RAGDOLL);
    assert_int_equal(decode(ST("\"animated\""), &c, &e), RDP_OK);
    assert_int_equal(c.u.spawn_character.state, RDP_SPAWN_ANIMATED);
    expect_message(ST("\"getting_up\""), RDP_E_BAD_REQUEST,
                   "field \"state\" must be \"animated\" or \"ragdoll\", not \"getting_up\"");
    expect_message(ST("1"), RDP_E_BAD_REQUEST,
                   "field \"state\" must be a string: \"animated\" or \"ragdoll\"");
#undef ST
}

// create_world's solver: "xpbd" or "soft_step", absent for the server's
// default; anything else, null included, is bad_request naming the choices.
static void test_rdp_decodes_create_world_solver(void** state) {
    (void)state;
    rdp_command c;
    rdp_error e;
    assert_string_equal(rdp_solver_name(RDP_SOLVER_XPBD), "xpbd");
    assert_string_equal(rdp_solver_name(RDP_SOLVER_SOFT_STEP), "soft_step");
    assert_null(rdp_solver_name(RDP_SOLVER_DEFAULT));
    assert_null(rdp_solver_name(RDP_SOLVER_COUNT));
    assert_null(rdp_solver_name((rdp_solver)-1));
    for (int i = RDP_SOLVER_DEFAULT + 1; i < RDP_SOLVER_COUNT; ++i) {
        assert_int_equal(rdp_solver_parse(rdp_solver_name((rdp_solver)i)), i);
    }
    assert_int_equal(rdp_solver_parse("SOFT_STEP"), RDP_SOLVER_DEFAULT);
    assert_int_equal(rdp_solver_parse(""), RDP_SOLVER_DEFAULT);
    assert_int_equal(rdp_solver_parse(NULL), RDP_SOLVER_DEFAULT);

#define CW(solver) "{\"op\":\"create_world\",\"name\":\"a\",\"solver\":" solver "}"
    assert_int_equal(decode(CW("\"xpbd\""), &c, &e), RDP_OK);
    assert_int_equal(c.u.create_world.solver, RDP_SOLVER_XPBD);
    assert_int_equal(decode(CW("\"soft_step\""), &c, &e), RDP_OK);
    assert_int_equal(c.u.create_world.solver, RDP_SOLVER_SOFT_STEP);
    assert_int_equal(decode("{\"op\":\"create_world\",\"name\":\"a\"}", &c, &e), RDP_OK);
    assert_int_equal(c.u.create_world.solver, RDP_SOLVER_DEFAULT);

    expect_message(CW("\"\""), RDP_E_BAD_REQUEST,
                   "field \"solver\" must be \"xpbd\" or \"soft_step\", not \"\"");
    expect_message(CW("\"SOFT\""), RDP_E_BAD_REQUEST,
                   "field \"solver\" must be \"xpbd\" or \"soft_step\", not \"SOFT\"");
    expect_message(CW("\"soft step\""), RDP_E_BAD_REQUEST,
                   "field \"solver\" must be \"xpbd\" or \"soft_step\", not \"soft step\"");
    // Not quoted back: too long, or with a control character.
    expect_message(CW("\"0123456789012345678901234567890123\""), RDP_E_BAD_REQUEST,
                   "field \"solver\" must be \"xpbd\" or \"soft_step\"");
    expect_message(CW("\"x\\u001b[2J\""), RDP_E_BAD_REQUEST,
                   "field \"solver\" must be \"xpbd\" or \"soft_step\"");
    expect_message(CW("3"), RDP_E_BAD_REQUEST,
                   "field \"solver\" must be a string: \"xpbd\" or \"soft_step\"");
    expect_message(CW("null"), RDP_E_BAD_REQUEST,
                   "field \"solver\" must be a string: \"xpbd\" or \"soft_step\"");
    expect_message(CW("{\"name\":\"xpbd\"}"), RDP_E_BAD_REQUEST,
                   "field \"solver\" must be a string: \"xpbd\" or \"soft_step\"");
    expect_message(CW("[\"xpbd\"]"), RDP_E_BAD_REQUEST,
                   "field \"solver\" must be a string: \"xpbd\" or \"soft_step\"");
    expect_message(CW("true"), RDP_E_BAD_REQUEST,
                   "field \"solver\" must be a string: \"xpbd\" or \"soft_step\"");
    // The id survives for the error reply.
    assert_int_equal(
        decode("{\"op\":\"create_world\",\"id\":4,\"name\":\"a\",\"solver\":null}", &c, &e),
        RDP_E_BAD_REQUEST);
    assert_true(c.has_id);
    assert_int_equal(c.id, 4);
    // Shape first, whatever the order of the fields: a bad solver is
    // bad_request although the tick rate is out of range too.
    expect_code("{\"op\":\"create_world\",\"name\":\"a\",\"tick_hz\":1000,\"solver\":1}",
                RDP_E_BAD_REQUEST);
    // Every other optional field still takes null as absent.
    expect_code("{\"op\":\"create_world\",\"name\":\"a\",\"tick_hz\":null,\"limits\":null}",
                RDP_OK);
    // Other enums name their choices too.
    expect_message("{\"op\":\"subscribe\",\"world\":1,\"format\":\"xml\"}", RDP_E_BAD_REQUEST,
                   "field \"format\" must be \"json\" or \"binary\", not \"xml\"");
#undef CW
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
    expect_code("{\"op\":\"set_params\",\"world\":1,\"wind\":[101,0,0]}", RDP_E_OUT_OF_RANGE);
    expect_code("{\"op\":\"set_params\",\"world\":1,\"wind\":[0,1e999,0]}", RDP_E_NOT_FINITE);
    expect_code("{\"op\":\"set_params\",\"world\":1,\"gust\":1.5}", RDP_E_OUT_OF_RANGE);
    expect_code("{\"op\":\"set_params\",\"world\":1,\"gust_period\":0}", RDP_E_OUT_OF_RANGE);
    expect_code("{\"op\":\"set_params\",\"world\":1,\"air_density\":-1}", RDP_E_OUT_OF_RANGE);
    expect_code("{\"op\":\"set_params\",\"world\":1,\"drag_coef\":11}", RDP_E_OUT_OF_RANGE);
    expect_code("{\"op\":\"spawn_cloth\",\"world\":1,\"origin\":[0,3,0],\"cols\":4,"
                "\"rows\":4,\"spacing\":0.1,\"self_collision\":1}",
                RDP_E_BAD_REQUEST);
    expect_code("{\"op\":\"spawn_cloth\",\"world\":1,\"origin\":[0,3,0],\"cols\":4,"
                "\"rows\":4,\"spacing\":0.1,\"thickness\":2}",
                RDP_E_OUT_OF_RANGE);
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
                "\"rows\":10,\"spacing\":0.2,\"pin\":\"right\"}",
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
    assert_null(cJSON_GetObjectItem(r, "solver")); // only when given
    cJSON_Delete(r);
    rdp_free(s);
    // create_world's reply: every limit and the solver the world got.
    uint32_t limits[RDP_LIMIT_COUNT] = {300, 32768, 262144, 4800, 4500, 115200};
    memset(&f, 0, sizeof f);
    f.has_tick = true;
    f.has_world = true;
    f.world = 2;
    f.limits = limits;
    f.solver = rdp_solver_name(RDP_SOLVER_SOFT_STEP);
    rdp_re one = {true, 1};
    s = rdp_reply_ok(one, &f, NULL);
    assert_string_equal(s, "{\"re\":1,\"ok\":true,\"tick\":0,\"world\":2,\"limits\":{"
                           "\"entities\":300,\"particles\":32768,\"constraints\":262144,"
                           "\"bodies\":4800,\"joints\":4500,\"contacts\":115200},"
                           "\"solver\":\"soft_step\"}");
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

// A snapshot of each kind whose text is written out below by hand, from
// PROTOCOL.md §5.1 and the rounding of each float (worked beside it).
static const float hand_ragdoll_xyz[6] = {
    0.123456f, // 1234.56 (the float is 0.123456001) rounds to 1235: 0.1235
    1.0f,      // 1
    -2.00004f, // -20000.4 rounds to -20000: -2
    3.5f,      // 3.5
    -0.00004f, // -0.4 rounds to -0: cJSON printed "-0", valid JSON equal to 0
    -0.25f,    // -0.25
};
static const char* const hand_names[2] = {"head", "a\"b\\c\n"}; // escaped as cJSON does
static const float hand_cloth_xyz[6] = {
    1000.0f,     // the world's half extent
    -999.99994f, // the float is -999.99993896..., -9999999.39 rounds to -9999999
    0.0001f,     // 9.99999975e-05: 0.99999997 rounds to 1: 0.0001
    -0.0001f,    // -0.0001
    2.5f,        // 2.5
    12.34567f,   // 12.3456697...: 123456.697 rounds to 123457: 12.3457
};
static const float hand_pose[14] = {
    0.0f,     0.96f,      0.0f,                     // 0.96f is 0.959999979: 9600 → 0.96
    0.0f,     0.0f,       0.70710678f, 0.70710678f, // 70710.678 → 70711 → 0.70711 (1e-5 steps)
    -0.5f,    1.25f,      100.00001f,               // 100.0000076...: 1000000.08 → 100
    0.00003f, -0.000004f, -0.015625f,  1.0f,        // 3 → 3e-05 (%g below 1e-4), -0.4 → -0,
                                                    // -1562.5 → -1563 (ties away from 0)
};
static const float hand_caps_radius[2] = {0.12f, 0.1f};
static const float hand_caps_half[2] = {0.06f, 0.15f};
static const char* const hand_bones[2] = {"pelvis", "spine"};
// 0.03125 · 10^4 is 312.5 exactly, a tie: 313. 1.2f is 1.20000005: 1.2.
static const float hand_ball_pose[7] = {0.03125f, 1.2f, -3.0f, 0.0f, 0.0f, 0.0f, 1.0f};
static const float hand_ball_radius[1] = {0.2f};
static const float hand_ball_half[1] = {0.0f};
static const float hand_radius_002[2] = {0.02f, 0.02f}; // 0.0199999996 → 200 → 0.02
static const float hand_radius_005[2] = {0.05f, 0.05f};
static const float hand_pinned_first[2] = {0.0f, 1.0f};
static const float hand_pinned_both[2] = {0.0f, 0.0f};

static rdp_snapshot hand_snapshot(rdp_entity_state e[4]) {
    memset(e, 0, 4 * sizeof *e);
    e[0].entity = 4294967297ull;
    e[0].kind = RDP_KIND_RAGDOLL;
    e[0].particle_count = 2;
    e[0].xyz = hand_ragdoll_xyz;
    e[0].names = hand_names;
    e[0].stick_count = 1;
    e[0].sticks = sticks;
    e[0].radius = hand_radius_002;
    e[0].inv_mass = hand_pinned_first;
    e[1].entity = 4294967298ull;
    e[1].kind = RDP_KIND_CLOTH;
    e[1].particle_count = 2;
    e[1].xyz = hand_cloth_xyz;
    e[1].cols = 2;
    e[1].rows = 1;
    e[1].stick_count = 1;
    e[1].sticks = sticks;
    e[1].radius = hand_radius_005;
    e[1].inv_mass = hand_pinned_both;
    e[2].entity = 4294967299ull;
    e[2].kind = RDP_KIND_CHARACTER;
    e[2].state = "ragdoll";
    e[2].body_count = 2;
    e[2].pose = hand_pose;
    e[2].bone_names = hand_bones;
    e[2].skeleton = "humanoid";
    e[2].body_radius = hand_caps_radius;
    e[2].body_half_length = hand_caps_half;
    e[3].entity = 4294967300ull;
    e[3].kind = RDP_KIND_BALL;
    e[3].body_count = 1;
    e[3].pose = hand_ball_pose;
    e[3].body_radius = hand_ball_radius;
    e[3].body_half_length = hand_ball_half;
    rdp_snapshot s;
    memset(&s, 0, sizeof s);
    s.world = 3;
    s.tick = 120;
    s.entity_count = 4;
    s.entities = e;
    s.metrics.constraint_error = 0.0123456; // 12345.6 µm rounds to 12346: 0.012346
    s.metrics.sticks = 2;
    s.metrics.solver_passes = 8;
    s.metrics.particles = 4;
    s.metrics.step_ms = 0.2104; // 1 µs steps: 0.21
    s.metrics.overruns = 5;
    s.metrics.frozen_entities = 1;
    s.metrics.frozen_particles = 12;
    s.metrics.particle_projections = 3456;
    return s;
}

static void test_rdp_json_snapshot_matches_hand_written_text(void** state) {
    (void)state;
    rdp_entity_state e[4];
    rdp_snapshot s = hand_snapshot(e);
    size_t len = 0;
    char* lean = rdp_snapshot_json(&s, false, &len);
    assert_string_equal(
        lean, "{\"ev\":\"snapshot\",\"world\":3,\"tick\":120,\"entities\":["
              "{\"entity\":4294967297,\"kind\":\"ragdoll\","
              "\"particles\":[[0.1235,1,-2],[3.5,-0,-0.25]]},"
              "{\"entity\":4294967298,\"kind\":\"cloth\","
              "\"particles\":[[1000,-999.9999,0.0001],[-0.0001,2.5,12.3457]]},"
              "{\"entity\":4294967299,\"kind\":\"character\",\"state\":\"ragdoll\",\"bones\":["
              "{\"name\":\"pelvis\",\"p\":[0,0.96,0],\"q\":[0,0,0.70711,0.70711]},"
              "{\"name\":\"spine\",\"p\":[-0.5,1.25,100],\"q\":[3e-05,-0,-0.01563,1]}]},"
              "{\"entity\":4294967300,\"kind\":\"ball\",\"p\":[0.0313,1.2,-3],\"q\":[0,0,0,1]}],"
              "\"metrics\":{\"constraint_error\":0.012346,\"sticks\":2,\"solver_passes\":8,"
              "\"particles\":4,\"entities\":4,\"step_ms\":0.21,\"overruns\":5,"
              "\"frozen_entities\":1,\"frozen_particles\":12,\"particle_projections\":3456}}");
    assert_int_equal(len, strlen(lean));
    char* full = rdp_snapshot_json(&s, true, &len);
    assert_string_equal(
        full, "{\"ev\":\"snapshot\",\"world\":3,\"tick\":120,\"entities\":["
              "{\"entity\":4294967297,\"kind\":\"ragdoll\","
              "\"particles\":[[0.1235,1,-2],[3.5,-0,-0.25]],"
              "\"names\":[\"head\",\"a\\\"b\\\\c\\n\"],\"sticks\":[[0,1]],"
              "\"radii\":[0.02,0.02],\"pinned\":[0]},"
              "{\"entity\":4294967298,\"kind\":\"cloth\","
              "\"particles\":[[1000,-999.9999,0.0001],[-0.0001,2.5,12.3457]],"
              "\"cols\":2,\"rows\":1,\"sticks\":[[0,1]],\"radii\":[0.05,0.05],\"pinned\":[0,1]},"
              "{\"entity\":4294967299,\"kind\":\"character\",\"state\":\"ragdoll\",\"bones\":["
              "{\"name\":\"pelvis\",\"p\":[0,0.96,0],\"q\":[0,0,0.70711,0.70711]},"
              "{\"name\":\"spine\",\"p\":[-0.5,1.25,100],\"q\":[3e-05,-0,-0.01563,1]}],"
              "\"skeleton\":\"humanoid\",\"capsules\":[[0.12,0.06],[0.1,0.15]]},"
              "{\"entity\":4294967300,\"kind\":\"ball\",\"p\":[0.0313,1.2,-3],\"q\":[0,0,0,1],"
              "\"capsules\":[[0.2,0]]}],"
              "\"metrics\":{\"constraint_error\":0.012346,\"sticks\":2,\"solver_passes\":8,"
              "\"particles\":4,\"entities\":4,\"step_ms\":0.21,\"overruns\":5,"
              "\"frozen_entities\":1,\"frozen_particles\":12,\"particle_projections\":3456}}");
    assert_int_equal(len, strlen(full));
    rdp_free(lean);
    rdp_free(full);
}

// Random snapshots for the comparison with the cJSON encoder.
static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rng_u64(void) { // xorshift64
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static double rng_unit(void) { // [0, 1)
    return (double)(rng_u64() >> 11) / 9007199254740992.0;
}

static double rng_sym(double m) { // [-m, m)
    return (2.0 * rng_unit() - 1.0) * m;
}

// A float a snapshot might carry, or one meant to break a fast printer:
// zeros of both signs, values that round to ±0 and ±0.1 mm, the 0.1 mm grid
// and the ties between its steps, the world's extent, huge values, and any
// bit pattern (denormals, infinities, NaNs).
static float rng_float(void) {
    switch (rng_u64() % 15) {
    case 0:
        return 0.0f;
    case 1:
        return -0.0f;
    case 2:
        return (float)rng_sym(2e-4);
    case 3:
        return (float)((double)((int64_t)(rng_u64() % 20000001) - 10000000) / 1e4);
    case 4:
        return (float)(((double)((int64_t)(rng_u64() % 20000001) - 10000000) + 0.5) / 1e4);
    case 5:
        return (float)rng_sym(1000.0);
    case 6:
        return rng_u64() % 2 ? 1000.0f : -1000.0f;
    case 7:
        return (float)rng_sym(1e-3);
    case 8:
        return (float)rng_sym(pow(10.0, 3.0 + 13.0 * rng_unit()));
    case 9: {
        uint32_t bits = (uint32_t)rng_u64();
        float f;
        memcpy(&f, &bits, sizeof f);
        return f;
    }
    case 10:
        return (float)rng_sym(1.0);
    case 11:
        return (float)rng_sym(1e-5);
    case 12:
        // Multiples of powers of two: many are ties once scaled (0.03125 · 10^4).
        return (float)ldexp((double)((int)(rng_u64() % 2001) - 1000), -(int)(rng_u64() % 24));
    default:
        return (float)rng_sym(10.0);
    }
}

// A double for the metrics: the same kinds, at double precision.
static double rng_double(void) {
    switch (rng_u64() % 6) {
    case 0:
        return 0.0;
    case 1:
        return rng_unit() * 1e-6;
    case 2:
        return rng_unit() * pow(10.0, 20.0 * rng_unit());
    case 3: {
        uint64_t bits = rng_u64();
        double d;
        memcpy(&d, &bits, sizeof d);
        return d;
    }
    default:
        return rng_unit() * 10.0;
    }
}

// A name: usually plain, sometimes every byte but NUL, sometimes NULL
// (which cJSON left out).
static const char* rng_name(char* buf, size_t cap) {
    uint64_t r = rng_u64() % 10;
    if (r == 0) {
        return NULL;
    }
    size_t n = (size_t)(rng_u64() % (cap - 1));
    for (size_t i = 0; i < n; ++i) {
        buf[i] = r < 5 ? (char)('a' + rng_u64() % 26) : (char)(1 + rng_u64() % 255);
    }
    buf[n] = '\0';
    return buf;
}

#define RW_ENTS      6
#define RW_PARTICLES 64
#define RW_BODIES    20
typedef struct random_world {
    rdp_entity_state ents[RW_ENTS];
    float xyz[RW_ENTS][3 * RW_PARTICLES];
    float radius[RW_ENTS][RW_PARTICLES];
    float inv_mass[RW_ENTS][RW_PARTICLES];
    char name_text[RW_ENTS][RW_PARTICLES][12];
    const char* names[RW_ENTS][RW_PARTICLES];
    uint32_t sticks[RW_ENTS][2 * RW_PARTICLES];
    float pose[RW_ENTS][7 * RW_BODIES];
    float body_radius[RW_ENTS][RW_BODIES];
    float body_half[RW_ENTS][RW_BODIES];
    char bone_text[RW_ENTS][RW_BODIES][12];
    const char* bone_names[RW_ENTS][RW_BODIES];
    char state_text[RW_ENTS][12];
    char skeleton_text[RW_ENTS][12];
    rdp_snapshot snap;
} random_world;

static void random_world_fill(random_world* w) {
    memset(w, 0, sizeof *w);
    uint32_t count = (uint32_t)(rng_u64() % (RW_ENTS + 1));
    for (uint32_t k = 0; k < count; ++k) {
        rdp_entity_state* e = &w->ents[k];
        e->entity = rng_u64() % 4 == 0 ? rng_u64() : (rng_u64() & 0x1fffffffffffffull);
        e->kind = (rdp_kind)(1 + rng_u64() % 5);
        if (rdp_kind_is_rigid(e->kind)) {
            e->body_count = e->kind == RDP_KIND_BALL ? 1 : (uint32_t)(rng_u64() % RW_BODIES);
            for (uint32_t i = 0; i < e->body_count; ++i) {
                float* p = w->pose[k] + 7 * i;
                for (int c = 0; c < 3; ++c) {
                    p[c] = rng_float();
                }
                // A unit quaternion, or anything.
                double q[4], n = 0.0;
                for (int c = 0; c < 4; ++c) {
                    q[c] = rng_sym(1.0);
                    n += q[c] * q[c];
                }
                for (int c = 0; c < 4; ++c) {
                    p[3 + c] = rng_u64() % 3 ? (float)(q[c] / sqrt(n)) : rng_float();
                }
                w->body_radius[k][i] = rng_float();
                w->body_half[k][i] = rng_float();
                w->bone_names[k][i] = rng_name(w->bone_text[k][i], sizeof w->bone_text[k][i]);
            }
            e->pose = w->pose[k];
            e->body_radius = w->body_radius[k];
            e->body_half_length = w->body_half[k];
            e->bone_names = w->bone_names[k];
            e->state = rng_name(w->state_text[k], sizeof w->state_text[k]);
            e->skeleton = rng_name(w->skeleton_text[k], sizeof w->skeleton_text[k]);
            continue;
        }
        e->particle_count = (uint32_t)(rng_u64() % RW_PARTICLES);
        for (uint32_t i = 0; i < e->particle_count; ++i) {
            for (int c = 0; c < 3; ++c) {
                w->xyz[k][3 * i + c] = rng_float();
            }
            w->radius[k][i] = rng_float();
            w->inv_mass[k][i] = rng_u64() % 4 == 0 ? 0.0f : rng_float();
            w->names[k][i] = rng_name(w->name_text[k][i], sizeof w->name_text[k][i]);
        }
        e->stick_count = (uint32_t)(rng_u64() % RW_PARTICLES);
        for (uint32_t i = 0; i < 2 * e->stick_count; ++i) {
            w->sticks[k][i] = rng_u64() % 8 == 0 ? (uint32_t)rng_u64() : (uint32_t)(rng_u64() % 64);
        }
        e->xyz = w->xyz[k];
        e->radius = w->radius[k];
        e->inv_mass = w->inv_mass[k];
        e->names = rng_u64() % 2 ? w->names[k] : NULL;
        e->sticks = w->sticks[k];
        e->cols = (uint32_t)rng_u64();
        e->rows = (uint32_t)(rng_u64() % 100);
    }
    w->snap.world = rng_u64() % 2 ? rng_u64() % 100 : rng_u64();
    w->snap.tick = rng_u64();
    w->snap.entity_count = count;
    w->snap.entities = w->ents;
    w->snap.metrics.constraint_error = rng_double();
    w->snap.metrics.sticks = (uint32_t)rng_u64();
    w->snap.metrics.solver_passes = (uint32_t)(rng_u64() % 3200);
    w->snap.metrics.particles = (uint32_t)rng_u64();
    w->snap.metrics.step_ms = rng_double();
    w->snap.metrics.overruns = rng_u64();
    w->snap.metrics.frozen_entities = (uint32_t)rng_u64();
    w->snap.metrics.particle_projections = rng_u64();
}

// Walks two parsed documents side by side: the same structure, keys and
// strings, and every number the same double (the sign of zero included).
// Returns how many numbers it compared.
static long json_same(const cJSON* a, const cJSON* b) {
    assert_int_equal(a->type & 0xff, b->type & 0xff);
    if (a->string != NULL || b->string != NULL) {
        assert_non_null(a->string);
        assert_non_null(b->string);
        assert_string_equal(a->string, b->string);
    }
    long numbers = 0;
    if (cJSON_IsNumber(a)) {
        assert_true(a->valuedouble == b->valuedouble);
        assert_true(signbit(a->valuedouble) == signbit(b->valuedouble));
        numbers++;
    } else if (cJSON_IsString(a)) {
        assert_string_equal(a->valuestring, b->valuestring);
    }
    const cJSON* ca = a->child;
    const cJSON* cb = b->child;
    for (; ca != NULL && cb != NULL; ca = ca->next, cb = cb->next) {
        numbers += json_same(ca, cb);
    }
    assert_null(ca);
    assert_null(cb);
    return numbers;
}

static void test_rdp_json_snapshot_equals_the_cjson_encoder(void** state) {
    (void)state;
    static random_world w;
    // One buffer for every run, started tiny so that it grows mid-text.
    rdp_buf buf = {cJSON_malloc(1), 0, 1};
    long numbers = 0;
    for (int run = 0; run < 3000; ++run) {
        random_world_fill(&w);
        for (int topology = 0; topology < 2; ++topology) {
            size_t ref_len = 0, len = 0;
            char* ref = rdp_ref_snapshot_json(&w.snap, topology, &ref_len);
            char* got = rdp_snapshot_json(&w.snap, topology, &len);
            assert_non_null(ref);
            assert_non_null(got);
            assert_int_equal(rdp_snapshot_json_into(&w.snap, topology, &buf), 0);
            // The same text, byte for byte...
            assert_string_equal(got, ref);
            assert_int_equal(len, ref_len);
            assert_string_equal(buf.data, ref);
            assert_int_equal(buf.len, ref_len);
            // ...so a reader gets the same numbers; check that as a reader would.
            cJSON* a = cJSON_ParseWithLength(got, len);
            cJSON* b = cJSON_ParseWithLength(ref, ref_len);
            assert_non_null(a);
            assert_non_null(b);
            numbers += json_same(a, b);
            cJSON_Delete(a);
            cJSON_Delete(b);
            rdp_free(ref);
            rdp_free(got);
        }
    }
    // Dozens of numbers per snapshot on average: the walk saw the arrays.
    assert_true(numbers > 3000L * 100);
    rdp_buf_free(&buf);
    assert_null(buf.data);
    rdp_buf_free(NULL);
}

// Values on the 0.1 mm grid across the whole world, at every position of
// the fractional part, against the cJSON encoder.
static void test_rdp_json_snapshot_prints_the_grid_like_cjson(void** state) {
    (void)state;
    enum { N = 4096 };
    static float grid[3 * N];
    rdp_entity_state e;
    memset(&e, 0, sizeof e);
    e.entity = 1;
    e.kind = RDP_KIND_ROPE;
    e.particle_count = N;
    e.xyz = grid;
    rdp_snapshot s;
    memset(&s, 0, sizeof s);
    s.entity_count = 1;
    s.entities = &e;
    rdp_buf buf = {NULL, 0, 0};
    for (int64_t base = -10000000; base <= 10000000; base += 3 * N * 61) {
        for (int i = 0; i < 3 * N; ++i) {
            // Steps of 0.1 mm, and of 0.01 mm (half of them ties).
            int64_t k = base + 61 * i;
            grid[i] = i % 2 ? (float)((double)k / 1e4) : (float)((double)k / 1e5);
        }
        char* ref = rdp_ref_snapshot_json(&s, false, NULL);
        assert_int_equal(rdp_snapshot_json_into(&s, false, &buf), 0);
        assert_string_equal(buf.data, ref);
        rdp_free(ref);
    }
    rdp_buf_free(&buf);
}

static void test_rdp_json_snapshot_reuses_its_buffer(void** state) {
    (void)state;
    rdp_entity_state e[4];
    rdp_snapshot s = hand_snapshot(e);
    rdp_buf buf = {NULL, 0, 0};
    assert_int_equal(rdp_snapshot_json_into(&s, true, &buf), 0);
    char* data = buf.data;
    size_t cap = buf.cap;
    size_t full_len = buf.len;
    assert_int_equal(rdp_snapshot_json_into(&s, false, &buf), 0);
    assert_true(buf.len < full_len);
    assert_int_equal(rdp_snapshot_json_into(&s, true, &buf), 0);
    assert_ptr_equal(buf.data, data);
    assert_int_equal(buf.cap, cap);
    assert_int_equal(buf.len, full_len);
    assert_int_equal(buf.data[buf.len], '\0');
    rdp_buf_free(&buf);
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
    rdp_world_info w = {5, "demo", 77, 60, 4, "xpbd"};
    char* s = rdp_event_welcome("0.1.0", &w, 1, NULL);
    cJSON* r = cJSON_Parse(s);
    assert_string_equal(cJSON_GetObjectItem(r, "ev")->valuestring, "welcome");
    assert_true(cJSON_GetObjectItem(r, "protocol")->valuedouble == 1.0);
    assert_string_equal(cJSON_GetObjectItem(r, "server")->valuestring, "ragdolld");
    cJSON* w0 = cJSON_GetArrayItem(cJSON_GetObjectItem(r, "worlds"), 0);
    assert_string_equal(cJSON_GetObjectItem(w0, "name")->valuestring, "demo");
    assert_true(cJSON_GetObjectItem(w0, "tick_hz")->valuedouble == 60.0);
    assert_string_equal(cJSON_GetObjectItem(w0, "solver")->valuestring, "xpbd");
    cJSON_Delete(r);
    rdp_free(s);
    // No solver: no member (a list from a caller that does not know it).
    w.solver = NULL;
    s = rdp_event_welcome("0.1.0", &w, 1, NULL);
    assert_null(strstr(s, "solver"));
    rdp_free(s);
    s = rdp_event_world_destroyed(5, 80, NULL);
    assert_string_equal(s, "{\"ev\":\"world_destroyed\",\"world\":5,\"tick\":80}");
    rdp_free(s);
}

// spawn_softbody (PROTOCOL.md §3): its defaults, and each bad field refused
// with the code the protocol gives (bad_request for shape and types,
// not_finite, out_of_range for the documented ranges, however far out).
static void test_rdp_spawn_softbody_defaults_and_refusals(void** state) {
    (void)state;
    rdp_command c;
    rdp_error e;
    const char* t = "{\"op\":\"spawn_softbody\",\"world\":2,\"position\":[0,3,-1],"
                    "\"shape\":\"sphere\",\"size\":0.8}";
    assert_int_equal(decode(t, &c, &e), RDP_OK);
    assert_int_equal(c.op, RDP_OP_SPAWN_SOFTBODY);
    assert_int_equal(c.u.spawn_softbody.shape, RDP_SOFTBODY_SPHERE);
    assert_true(c.u.spawn_softbody.size == 0.8);
    assert_int_equal(c.u.spawn_softbody.resolution, 4); // PROTOCOL.md defaults
    assert_true(c.u.spawn_softbody.stiffness == 0.5);
    assert_true(c.u.spawn_softbody.pressure == 0.0);
    assert_true(c.u.spawn_softbody.mass == 10.0);
    assert_string_equal(rdp_op_name(RDP_OP_SPAWN_SOFTBODY), "spawn_softbody");
    assert_string_equal(rdp_kind_name(RDP_KIND_SOFTBODY), "softbody");
    assert_false(rdp_kind_is_rigid(RDP_KIND_SOFTBODY));

#define SB(rest) "{\"op\":\"spawn_softbody\",\"world\":1,\"position\":[0,3,0]," rest "}"
    expect_code(SB("\"shape\":\"box\",\"size\":1,\"resolution\":16,\"stiffness\":1,"
                   "\"pressure\":1,\"mass\":10000"),
                RDP_OK);
    expect_code(SB("\"shape\":\"box\",\"size\":0.05,\"resolution\":2,\"stiffness\":0.001"), RDP_OK);
    expect_code(SB("\"size\":1"), RDP_E_BAD_REQUEST);                    // no shape
    expect_code(SB("\"shape\":\"cone\",\"size\":1"), RDP_E_BAD_REQUEST); // no such shape
    expect_code(SB("\"shape\":3,\"size\":1"), RDP_E_BAD_REQUEST);        // not a string
    expect_code(SB("\"shape\":\"box\""), RDP_E_BAD_REQUEST);             // no size
    expect_code(SB("\"shape\":\"box\",\"size\":\"1\""), RDP_E_BAD_REQUEST);
    expect_code(SB("\"shape\":\"box\",\"size\":1,\"resolution\":4.5"), RDP_E_BAD_REQUEST);
    expect_code(SB("\"shape\":\"box\",\"size\":1e999"), RDP_E_NOT_FINITE);
    expect_code(SB("\"shape\":\"box\",\"size\":0.049"), RDP_E_OUT_OF_RANGE);
    expect_code(SB("\"shape\":\"box\",\"size\":5.01"), RDP_E_OUT_OF_RANGE);
    expect_code(SB("\"shape\":\"box\",\"size\":1,\"resolution\":1"), RDP_E_OUT_OF_RANGE);
    expect_code(SB("\"shape\":\"box\",\"size\":1,\"resolution\":17"), RDP_E_OUT_OF_RANGE);
    expect_code(SB("\"shape\":\"box\",\"size\":1,\"stiffness\":0"), RDP_E_OUT_OF_RANGE);
    expect_code(SB("\"shape\":\"box\",\"size\":1,\"stiffness\":1.5"), RDP_E_OUT_OF_RANGE);
    expect_code(SB("\"shape\":\"box\",\"size\":1,\"stiffness\":-1e300"), RDP_E_OUT_OF_RANGE);
    expect_code(SB("\"shape\":\"box\",\"size\":1,\"pressure\":-0.1"), RDP_E_OUT_OF_RANGE);
    expect_code(SB("\"shape\":\"box\",\"size\":1,\"pressure\":2"), RDP_E_OUT_OF_RANGE);
    expect_code(SB("\"shape\":\"box\",\"size\":1,\"mass\":0"), RDP_E_OUT_OF_RANGE);
#undef SB
    expect_code("{\"op\":\"spawn_softbody\",\"world\":1,\"position\":[0,1e6,0],"
                "\"shape\":\"box\",\"size\":1}",
                RDP_E_OUT_OF_RANGE);
    expect_code("{\"op\":\"spawn_softbody\",\"world\":1,\"position\":[0,1],"
                "\"shape\":\"box\",\"size\":1}",
                RDP_E_BAD_REQUEST);
    expect_code("{\"op\":\"spawn_softbody\",\"world\":1,\"shape\":\"box\",\"size\":1}",
                RDP_E_BAD_REQUEST);
}

// A soft body in a JSON snapshot with topology: kind "softbody", its
// particles, sticks, radii and no pins, as PROTOCOL.md §5.1 writes them.
static void test_rdp_json_snapshot_of_a_softbody(void** state) {
    (void)state;
    static const float sb_xyz[6] = {0.0f, 1.0f, 0.0f, 0.25f, 1.0f, 0.0f};
    static const uint32_t pair[2] = {0, 1};
    static const float sb_radius[2] = {0.125f, 0.125f};
    static const float sb_inv_mass[2] = {64.0f, 64.0f};
    rdp_entity_state e;
    memset(&e, 0, sizeof e);
    e.entity = 4294967297ull;
    e.kind = RDP_KIND_SOFTBODY;
    e.particle_count = 2;
    e.xyz = sb_xyz;
    e.stick_count = 1;
    e.sticks = pair;
    e.radius = sb_radius;
    e.inv_mass = sb_inv_mass;
    rdp_snapshot s;
    memset(&s, 0, sizeof s);
    s.world = 1;
    s.tick = 5;
    s.entity_count = 1;
    s.entities = &e;
    size_t len = 0;
    char* text = rdp_snapshot_json(&s, true, &len);
    assert_non_null(text);
    assert_non_null(strstr(text, "{\"entity\":4294967297,\"kind\":\"softbody\",\"particles\":"
                                 "[[0,1,0],[0.25,1,0]],\"sticks\":[[0,1]],\"radii\":[0.125,0.125],"
                                 "\"pinned\":[]}"));
    rdp_free(text);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rdp_decodes_spawn_rope_with_defaults),
        cmocka_unit_test(test_rdp_decodes_spawn_compliance),
        cmocka_unit_test(test_rdp_decodes_every_op),
        cmocka_unit_test(test_rdp_spawn_softbody_defaults_and_refusals),
        cmocka_unit_test(test_rdp_json_snapshot_of_a_softbody),
        cmocka_unit_test(test_rdp_rejects_bad_input_with_the_right_code),
        cmocka_unit_test(test_rdp_decodes_create_world_limits),
        cmocka_unit_test(test_rdp_decodes_create_world_solver),
        cmocka_unit_test(test_rdp_decodes_spawn_character_solver),
        cmocka_unit_test(test_rdp_refuses_raw_control_bytes_as_bad_json),
        cmocka_unit_test(test_rdp_quotes_an_unknown_op_cut_between_characters),
        cmocka_unit_test(test_rdp_checks_shape_before_finiteness_before_range),
        cmocka_unit_test(test_rdp_keeps_the_id_for_error_replies),
        cmocka_unit_test(test_rdp_never_reads_past_the_frame),
        cmocka_unit_test(test_rdp_reply_ok_carries_ids_exactly),
        cmocka_unit_test(test_rdp_reply_code_reads_the_outcome_of_every_reply),
        cmocka_unit_test(test_rdp_json_snapshot_rounds_and_sends_topology_on_request),
        cmocka_unit_test(test_rdp_json_snapshot_matches_hand_written_text),
        cmocka_unit_test(test_rdp_json_snapshot_equals_the_cjson_encoder),
        cmocka_unit_test(test_rdp_json_snapshot_prints_the_grid_like_cjson),
        cmocka_unit_test(test_rdp_json_snapshot_reuses_its_buffer),
        cmocka_unit_test(test_rdp_describe_reply_splices_a_cached_body),
        cmocka_unit_test(test_rdp_events),
    };
    return cmocka_run_group_tests_name("rdp", tests, NULL, NULL);
}
