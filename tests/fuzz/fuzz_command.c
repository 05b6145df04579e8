/*
 * fuzz_command.c: libFuzzer target for rdp_command_decode (protocol/
 * command.c), the decoder every text frame from a client goes through.
 *
 * Beyond "no crash, no leak, no undefined behaviour" it checks:
 * - a raw byte below 0x20 other than tab, LF and CR makes the frame
 *   bad_json (RFC 8259 §2 and §7; cJSON alone would skip it as white space
 *   or cut a string at it);
 * - an error carries its code and a message, and its reply (what the
 *   server sends back in a text frame) is JSON that carries the message
 *   back, and valid UTF-8 whenever the frame was (the server only decodes
 *   text frames wslay has checked);
 * - a decoded command's names are NUL-terminated and free of control
 *   characters;
 * - the decoder is a function of the JSON value, not of its spelling: the
 *   frame parsed by cJSON and spelled afresh decodes to the same command,
 *   byte for byte.
 */
#include "fuzz.h"
#include "rdp.h"

#include <cJSON.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

FUZZ_NO_COVERAGE static bool has_raw_control(const uint8_t* data, size_t size) {
    for (size_t i = 0; i < size; ++i) {
        if (data[i] < 0x20 && data[i] != '\t' && data[i] != '\n' && data[i] != '\r') {
            return true;
        }
    }
    return false;
}

// A decoded name: NUL-terminated within its array, no C0 control or DEL.
FUZZ_NO_COVERAGE static void check_name(const char* s, size_t cap, size_t min) {
    size_t n = strnlen(s, cap);
    FUZZ_CHECK(n < cap && n >= min);
    for (size_t i = 0; i < n; ++i) {
        FUZZ_CHECK((unsigned char)s[i] >= 0x20 && (unsigned char)s[i] != 0x7f);
    }
    FUZZ_CHECK(fuzz_utf8_valid((const uint8_t*)s, n));
}

static void check_command(const rdp_command* c) {
    FUZZ_CHECK(rdp_op_name(c->op) != NULL);
    FUZZ_CHECK(!c->has_id || fabs((double)c->id) <= RDP_MAX_SAFE_INTEGER);
    FUZZ_CHECK(c->bones.count <= RDP_MAX_BONES);
    for (uint32_t i = 0; i < c->bones.count; ++i) {
        check_name(c->bones.name[i], sizeof c->bones.name[i], 1);
    }
    switch (c->op) {
    case RDP_OP_CREATE_WORLD:
        check_name(c->u.create_world.name, sizeof c->u.create_world.name, 1);
        FUZZ_CHECK(c->u.create_world.limits.given < (1u << RDP_LIMIT_COUNT));
        FUZZ_CHECK(c->u.create_world.solver < RDP_SOLVER_COUNT);
        for (int i = 0; i < RDP_LIMIT_COUNT; ++i) {
            uint32_t v = c->u.create_world.limits.value[i];
            bool given = (c->u.create_world.limits.given >> i) & 1u;
            FUZZ_CHECK(given ? v >= 1 && v <= RDP_MAX_LIMIT : v == 0);
        }
        break;
    case RDP_OP_APPLY_IMPULSE:
        if (c->given & RDP_GIVEN_BONE) {
            check_name(c->bone, sizeof c->bone, 1);
        }
        break;
    case RDP_OP_SPAWN_CHARACTER:
        check_name(c->u.spawn_character.skeleton, sizeof c->u.spawn_character.skeleton, 0);
        check_name(c->u.spawn_character.clip, sizeof c->u.spawn_character.clip, 0);
        break;
    case RDP_OP_PLAY:
        check_name(c->u.play.clip, sizeof c->u.play.clip, 1);
        break;
    default:
        break;
    }
}

// The reply the server would send for this outcome: JSON, valid UTF-8 when
// the frame was, and (for an error) carrying the code and message back.
static void check_reply(const rdp_command* c, rdp_code rc, const rdp_error* err, bool utf8_in) {
    size_t len = 0;
    char* text;
    if (rc == RDP_OK) {
        rdp_reply_fields f;
        memset(&f, 0, sizeof f);
        text = rdp_reply_ok(rdp_re_of(c), &f, &len);
    } else {
        text = rdp_reply_error(rdp_re_of(c), rc, err->message, &len);
    }
    FUZZ_CHECK(text != NULL && strlen(text) == len);
    FUZZ_CHECK(!utf8_in || fuzz_utf8_valid((const uint8_t*)text, len));
    cJSON* r = cJSON_ParseWithLength(text, len);
    FUZZ_CHECK(cJSON_IsObject(r));
    const cJSON* re = cJSON_GetObjectItemCaseSensitive(r, "re");
    FUZZ_CHECK(c->has_id ? cJSON_IsNumber(re) && re->valuedouble == (double)c->id
                         : cJSON_IsNull(re));
    if (rc != RDP_OK) {
        const cJSON* e = cJSON_GetObjectItemCaseSensitive(r, "error");
        const char* code = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "code"));
        const char* msg = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "message"));
        FUZZ_CHECK(code != NULL && strcmp(code, rdp_code_name(rc)) == 0);
        FUZZ_CHECK(msg != NULL && strcmp(msg, err->message) == 0);
    }
    cJSON_Delete(r);
    rdp_free(text);
}

// A growing output buffer for respell().
typedef struct text {
    char* buf;
    size_t len, cap;
} text;

FUZZ_NO_COVERAGE static void put(text* t, const char* s, size_t n) {
    if (t->len + n + 1 > t->cap) {
        size_t cap = t->cap == 0 ? 256 : t->cap;
        while (cap < t->len + n + 1) {
            cap *= 2;
        }
        t->buf = realloc(t->buf, cap);
        FUZZ_CHECK(t->buf != NULL);
        t->cap = cap;
    }
    memcpy(t->buf + t->len, s, n);
    t->len += n;
    t->buf[t->len] = '\0';
}

FUZZ_NO_COVERAGE static void put_string(text* t, const char* s) {
    put(t, "\"", 1);
    for (; *s != '\0'; ++s) {
        unsigned char c = (unsigned char)*s;
        char esc[8];
        if (c == '"' || c == '\\') {
            esc[0] = '\\';
            esc[1] = (char)c;
            put(t, esc, 2);
        } else if (c < 0x20) {
            snprintf(esc, sizeof esc, "\\u%04x", c);
            put(t, esc, 6);
        } else {
            put(t, (const char*)&c, 1);
        }
    }
    put(t, "\"", 1);
}

// The JSON value v spelled afresh: no white space, strings escaped only
// where they must be, numbers in %.17g (exact for every double, unlike
// cJSON_Print, which rounds 2^53 - 1 to 15 digits and -0 to 0).
FUZZ_NO_COVERAGE static void respell(text* t, const cJSON* v) {
    char num[40];
    if (cJSON_IsNumber(v)) {
        double d = v->valuedouble;
        int n = isinf(d) ? snprintf(num, sizeof num, "%s", d > 0 ? "1e999" : "-1e999")
                         : snprintf(num, sizeof num, "%.17g", d);
        put(t, num, (size_t)n);
    } else if (cJSON_IsString(v)) {
        put_string(t, v->valuestring);
    } else if (cJSON_IsTrue(v)) {
        put(t, "true", 4);
    } else if (cJSON_IsFalse(v)) {
        put(t, "false", 5);
    } else if (cJSON_IsNull(v)) {
        put(t, "null", 4);
    } else {
        bool object = cJSON_IsObject(v);
        FUZZ_CHECK(object || cJSON_IsArray(v));
        put(t, object ? "{" : "[", 1);
        for (const cJSON* c = v->child; c != NULL; c = c->next) {
            if (c != v->child) {
                put(t, ",", 1);
            }
            if (object) {
                put_string(t, c->string);
                put(t, ":", 1);
            }
            respell(t, c);
        }
        put(t, object ? "}" : "]", 1);
    }
}

static void check_respelled(const uint8_t* data, size_t size, const rdp_command* cmd) {
    cJSON* root = cJSON_ParseWithLength((const char*)data, size);
    FUZZ_CHECK(root != NULL); // the decoder took it
    text t = {NULL, 0, 0};
    respell(&t, root);
    cJSON_Delete(root);
    if (t.len <= RDP_MAX_MESSAGE_BYTES) {
        rdp_command cmd2;
        rdp_error err2;
        rdp_code rc2 = rdp_command_decode(t.buf, t.len, &cmd2, &err2);
        if (rc2 != RDP_OK) {
            fprintf(stderr, "respelled: %s: %s\n", rdp_code_name(rc2), err2.message);
        }
        FUZZ_CHECK(rc2 == RDP_OK);
        FUZZ_CHECK(memcmp(cmd, &cmd2, sizeof cmd2) == 0);
    }
    free(t.buf);
}

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    rdp_command cmd;
    rdp_error err;
    rdp_code rc = rdp_command_decode((const char*)data, size, &cmd, &err);
    FUZZ_CHECK(err.code == rc);
    if (size > RDP_MAX_MESSAGE_BYTES) {
        FUZZ_CHECK(rc == RDP_E_TOO_LARGE);
    } else if (has_raw_control(data, size)) {
        FUZZ_CHECK(rc == RDP_E_BAD_JSON);
    }
    if (rc != RDP_OK) {
        FUZZ_CHECK(rc > RDP_OK && rc < RDP_E_INTERNAL);
        size_t n = strnlen(err.message, sizeof err.message);
        FUZZ_CHECK(n > 0 && n < sizeof err.message);
    } else {
        check_command(&cmd);
        check_respelled(data, size, &cmd);
    }
    check_reply(&cmd, rc, &err, fuzz_utf8_valid(data, size));
    return 0;
}
