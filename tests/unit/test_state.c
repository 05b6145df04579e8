/*
 * test_state.c: world states (server/sim/state.c): a restored world
 * continues exactly as the original would have.
 *
 * What is asserted is the definition of a state, not anything the code
 * computes: a world saved at tick T and restored (in this process, twice,
 * after the original ran on, and in a fresh process) must step through
 * the same bits as the original from T on, tick by tick (sim_world_hash()
 * over every particle and body, and at the end the whole state); the
 * public bug reports this guards against are in issue 11 (warm starts,
 * contact caches and sleep timers not saved: a restored world that drifts
 * after the first contact, or a sleeping body that no longer wakes). A
 * state that is truncated, from another version or for other skeletons is
 * refused with a reason, never half loaded.
 *
 * Run as `test_state --continue FILE TICKS` it is the fresh process of
 * test (c): it loads FILE, steps TICKS times and prints each tick's hash.
 */
#define _POSIX_C_SOURCE 200809L // mkstemp, fdopen, popen

// cmocka.h needs these four before it (cmocka docs); keep the order.
// clang-format off
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
// clang-format on

#include "scenes.h"
#include "shipped_library.h"
#include "sim.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SAVE_AT 300
#define RUN     300

static sim_library* g_lib;
static const char* g_self; // argv[0], for the fresh process

static int setup(void** state) {
    (void)state;
    g_lib = rd_test_shipped_library();
    return g_lib != NULL ? 0 : -1;
}

static int teardown(void** state) {
    (void)state;
    sim_library_destroy(g_lib);
    return 0;
}

// The state of w in a new buffer (*len bytes); the caller frees it.
static uint8_t* save(const sim_world* w, size_t* len) {
    size_t need = 0;
    assert_int_equal(sim_world_save(w, NULL, 0, &need), SIM_E_CAPACITY);
    uint8_t* buf = malloc(need);
    assert_non_null(buf);
    assert_int_equal(sim_world_save(w, buf, need, len), SIM_OK);
    assert_true(*len == need);
    return buf;
}

static sim_world* load(const uint8_t* buf, size_t len) {
    sim_world* w = NULL;
    char why[256];
    int rc = sim_world_load(buf, len, g_lib, NULL, &w, why, sizeof why);
    if (rc != SIM_OK) {
        fail_msg("load: %s: %s", sim_err_name(rc), why);
    }
    return w;
}

static void step_hashes(sim_world* w, int ticks, uint64_t* out) {
    for (int t = 0; t < ticks; ++t) {
        sim_world_step(w);
        out[t] = sim_world_hash(w);
    }
}

// The round trip's world: 20 ragdolls falling into a pile, and the
// characters scene (humanoids walking, killed, driven, one made partly
// physical, a ball thrown, one getting up from tick 240), its cloth and
// particle ragdoll; stepped to SAVE_AT, where the pile is still settling
// and the walker is mid-get-up.
static sim_world* round_trip_world(void) {
    sim_world_def def = sim_world_def_default();
    def.library = g_lib;
    def.params.substeps = 4;
    def.max_solver_work = 0;
    sim_world* w = NULL;
    assert_int_equal(sim_world_create(&def, &w), SIM_OK);
    sim_entity_id ids[20];
    // The pile 30 m away from the characters' scene, so both have room.
    assert_int_equal(sim_scene_pile(w, 20, 7, ids), SIM_OK);
    assert_int_equal(sim_scene_characters(w, SAVE_AT), SIM_OK);
    assert_true(sim_world_tick(w) == SAVE_AT);
    return w;
}

static void assert_same_state(const sim_world* a, const sim_world* b) {
    size_t la = 0, lb = 0;
    uint8_t* sa = save(a, &la);
    uint8_t* sb = save(b, &lb);
    assert_true(la == lb);
    assert_memory_equal(sa, sb, la);
    free(sa);
    free(sb);
}

// (a) continue to 600; (b) run on to 900, restore the save, run 300, twice;
// (c) restore in a fresh process and run 300. Every tick's hash is the
// same in all four.
static void test_a_restored_world_continues_bit_for_bit(void** state) {
    (void)state;
    sim_world* a = round_trip_world();
    size_t len = 0;
    uint8_t* saved = save(a, &len);
    static uint64_t ha[RUN], hb[RUN], hb2[RUN];
    step_hashes(a, RUN, ha);
    assert_true(sim_world_awake_body_count(a) > 0); // still moving: a real test

    // (b): the original ran on; the save brings it back to 300.
    static uint64_t on[RUN];
    step_hashes(a, RUN, on);
    sim_world* b = load(saved, len);
    assert_true(sim_world_tick(b) == SAVE_AT);
    step_hashes(b, RUN, hb);
    sim_world* b2 = load(saved, len);
    step_hashes(b2, RUN, hb2);
    for (int t = 0; t < RUN; ++t) {
        if (hb[t] != ha[t] || hb2[t] != ha[t]) {
            fail_msg("tick %d: original %016" PRIx64 ", restored %016" PRIx64
                     ", restored again %016" PRIx64,
                     SAVE_AT + 1 + t, ha[t], hb[t], hb2[t]);
        }
    }
    assert_same_state(b, b2);

    // (c): a fresh process loads the file and prints its hashes.
    char path[] = "/tmp/rd_state_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE* f = fdopen(fd, "wb");
    assert_non_null(f);
    assert_true(fwrite(saved, 1, len, f) == len);
    assert_int_equal(fclose(f), 0);
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "'%s' --continue '%s' %d", g_self, path, RUN);
    FILE* p = popen(cmd, "r");
    assert_non_null(p);
    int t = 0;
    char line[64];
    while (fgets(line, sizeof line, p) != NULL && t < RUN) {
        uint64_t h = strtoull(line, NULL, 16);
        if (h != ha[t]) {
            fail_msg("fresh process, tick %d: %016" PRIx64 ", original %016" PRIx64,
                     SAVE_AT + 1 + t, h, ha[t]);
        }
        ++t;
    }
    assert_int_equal(pclose(p), 0);
    assert_int_equal(t, RUN);
    remove(path);

    free(saved);
    sim_world_destroy(a);
    sim_world_destroy(b);
    sim_world_destroy(b2);
}

// The same round trip on another world, saved at `at`, `run` ticks on:
// the continuation and a restore of the save step through the same bits.
static void assert_round_trip(sim_world* w, int run) {
    size_t len = 0;
    uint8_t* saved = save(w, &len);
    sim_world* b = load(saved, len);
    for (int t = 0; t < run; ++t) {
        sim_world_step(w);
        sim_world_step(b);
        if (sim_world_hash(w) != sim_world_hash(b)) {
            fail_msg("tick %" PRIu64 ": the restored world differs", sim_world_tick(w));
        }
    }
    assert_same_state(w, b);
    free(saved);
    sim_world_destroy(b);
}

// The cloth half: a self-colliding cloth folding over a bar, a tearable
// sheet pulled by a drag, a soft body, a caped and skirted humanoid
// walking, in gusty wind; saved at tick 60 while all of it moves.
static void test_cloth_soft_bodies_and_garments_continue_bit_for_bit(void** state) {
    (void)state;
    sim_world_def def = sim_world_def_default();
    def.library = g_lib;
    def.params.substeps = 4;
    def.params.wind = (sim_vec3){3.0f, 0.0f, 1.0f};
    def.params.gust = 0.5f;
    def.max_solver_work = 0;
    sim_world* w = NULL;
    assert_int_equal(sim_world_create(&def, &w), SIM_OK);
    sim_entity_id bar, sheet, soft, man, cape, skirt;
    assert_int_equal(sim_scene_cloth_over_bar(w, 16, 0.05f, true, &bar), SIM_OK);
    sim_cloth_def cd = sim_cloth_def_default();
    cd.origin = (sim_vec3){5.0f, 3.0f, 0.0f};
    cd.cols = 12;
    cd.rows = 12;
    cd.spacing = 0.1f;
    cd.tear_ratio = 1.3f;
    assert_int_equal(sim_world_spawn_cloth(w, &cd, &sheet), SIM_OK);
    sim_softbody_def sd = sim_softbody_def_default();
    sd.position = (sim_vec3){-5.0f, 2.0f, 0.0f};
    assert_int_equal(sim_world_spawn_softbody(w, &sd, &soft), SIM_OK);
    sim_character_def ch = sim_character_def_default();
    ch.position = (sim_vec3){0.0f, 0.0f, 6.0f};
    ch.clip = "walk";
    assert_int_equal(sim_world_spawn_character(w, &ch, &man), SIM_OK);
    sim_cloth_attach_def ad = sim_cloth_attach_def_default();
    ad.wearer = man;
    ad.kind = SIM_GARMENT_CAPE;
    assert_int_equal(sim_world_attach_cloth(w, &ad, &cape), SIM_OK);
    ad.kind = SIM_GARMENT_SKIRT;
    assert_int_equal(sim_world_attach_cloth(w, &ad, &skirt), SIM_OK);
    for (int t = 0; t < 60; ++t) {
        if (t == 20) {
            assert_int_equal(sim_scene_cloth_over_bar_fold(w, bar), SIM_OK);
            assert_int_equal(sim_entity_drag(w, sheet, 140, (sim_vec3){5.5f, 0.5f, 3.0f}), SIM_OK);
        }
        sim_world_step(w);
    }
    assert_round_trip(w, 240);
    sim_world_destroy(w);
}

// An XPBD world (the other rigid solver: its own contact list, no soft
// step arrays) round-trips too.
static void test_an_xpbd_world_continues_bit_for_bit(void** state) {
    (void)state;
    sim_world_def def = sim_world_def_default();
    def.library = g_lib;
    def.params.substeps = 4;
    def.solver = SIM_SOLVER_XPBD;
    def.max_solver_work = 0;
    sim_world* w = NULL;
    assert_int_equal(sim_world_create(&def, &w), SIM_OK);
    assert_int_equal(sim_scene_pile(w, 6, 3, NULL), SIM_OK);
    for (int t = 0; t < 60; ++t) {
        sim_world_step(w);
    }
    assert_round_trip(w, 120);
    sim_world_destroy(w);
}

// A world's state does not depend on where it came from: saving a
// restored world gives the bytes the original gave.
static void test_a_restored_world_saves_the_same_bytes(void** state) {
    (void)state;
    sim_world* a = round_trip_world();
    size_t len = 0;
    uint8_t* saved = save(a, &len);
    sim_world* b = load(saved, len);
    assert_same_state(a, b);
    for (int t = 0; t < 30; ++t) {
        sim_world_step(a);
        sim_world_step(b);
    }
    assert_same_state(a, b);
    free(saved);
    sim_world_destroy(a);
    sim_world_destroy(b);
}

// ---------------------------------------------------------------------------
// Sleep
// ---------------------------------------------------------------------------

static bool asleep(const sim_world* w, sim_entity_id id) {
    sim_character_view v;
    assert_int_equal(sim_character_get_view(w, id, &v), SIM_OK);
    return v.asleep;
}

// Ragdoll B lies asleep; ragdoll A, knocked over 1.6 m away with a push
// towards B, is awake when the world is saved, and falls onto B. B must
// wake when A reaches it, at the same tick and through the same states,
// in the original, in each of five restores of the save, and in a chain
// of five restores with 10 ticks stepped between them.
static void test_sleep_survives_restores(void** state) {
    (void)state;
    sim_world_def def = sim_world_def_default();
    def.library = g_lib;
    def.params.substeps = 4;
    def.max_solver_work = 0;
    sim_world* w = NULL;
    assert_int_equal(sim_world_create(&def, &w), SIM_OK);
    sim_character_def cd = sim_character_def_default();
    sim_entity_id a, b;
    assert_int_equal(sim_world_spawn_character(w, &cd, &b), SIM_OK);
    assert_int_equal(sim_character_kill(w, b, (sim_vec3){0, 1.4f, 0}, (sim_vec3){0, 0, 10}, NULL),
                     SIM_OK);
    int t = 0;
    while (sim_world_awake_body_count(w) > 0 && t < 900) {
        sim_world_step(w);
        ++t;
    }
    assert_true(asleep(w, b));
    cd.position = (sim_vec3){1.6f, 0.0f, 1.0f};
    assert_int_equal(sim_world_spawn_character(w, &cd, &a), SIM_OK);
    assert_int_equal(
        sim_character_kill(w, a, (sim_vec3){1.6f, 1.4f, 1.0f}, (sim_vec3){-60.0f, 0, 0}, NULL),
        SIM_OK);
    sim_world_step(w);
    assert_true(asleep(w, b));
    assert_false(asleep(w, a));
    size_t len = 0;
    uint8_t* saved = save(w, &len);

    enum { TICKS = 120 };
    uint64_t h0[TICKS];
    int woke0 = -1;
    for (int k = 0; k < TICKS; ++k) {
        sim_world_step(w);
        h0[k] = sim_world_hash(w);
        if (woke0 < 0 && !asleep(w, b)) {
            woke0 = k;
        }
    }
    assert_true(woke0 > 0); // B slept a while, then A reached it
    printf("B woke %d ticks after the save\n", woke0 + 1);

    for (int r = 0; r < 5; ++r) {
        sim_world* x = load(saved, len);
        assert_true(asleep(x, b));
        int woke = -1;
        for (int k = 0; k < TICKS; ++k) {
            sim_world_step(x);
            assert_true(sim_world_hash(x) == h0[k]);
            if (woke < 0 && !asleep(x, b)) {
                woke = k;
            }
        }
        assert_int_equal(woke, woke0);
        sim_world_destroy(x);
    }

    // A chain: restore, step 10, save, restore, ... five times.
    sim_world* x = load(saved, len);
    int k = 0, woke = -1;
    for (int r = 0; r < 5; ++r) {
        for (int s = 0; s < 10; ++s, ++k) {
            sim_world_step(x);
            assert_true(sim_world_hash(x) == h0[k]);
            if (woke < 0 && !asleep(x, b)) {
                woke = k;
            }
        }
        size_t l2 = 0;
        uint8_t* again = save(x, &l2);
        sim_world_destroy(x);
        x = load(again, l2);
        free(again);
    }
    for (; k < TICKS; ++k) {
        sim_world_step(x);
        assert_true(sim_world_hash(x) == h0[k]);
        if (woke < 0 && !asleep(x, b)) {
            woke = k;
        }
    }
    assert_int_equal(woke, woke0);
    sim_world_destroy(x);
    free(saved);
    sim_world_destroy(w);
}

// ---------------------------------------------------------------------------
// Refusals
// ---------------------------------------------------------------------------

static int try_load(const uint8_t* buf, size_t len, const sim_library* lib, char* why, size_t cap) {
    sim_world* w = NULL;
    int rc = sim_world_load(buf, len, lib, NULL, &w, why, cap);
    if (rc == SIM_OK) {
        sim_world_destroy(w);
    } else {
        assert_null(w);
    }
    return rc;
}

// Every truncation is refused with a reason (and under ASan reads nothing
// past the end); a wrong magic, state version or physics version too.
static void test_truncated_and_foreign_states_are_refused(void** state) {
    (void)state;
    sim_world* w = round_trip_world();
    size_t len = 0;
    uint8_t* saved = save(w, &len);
    char why[256];
    for (size_t cut = 0; cut < len; cut += (cut < 4096 ? 1 : 509)) {
        uint8_t* copy = malloc(cut + 1); // exactly cut bytes are read at most
        memcpy(copy, saved, cut);
        why[0] = '\0';
        int rc = try_load(copy, cut, g_lib, why, sizeof why);
        if (rc != SIM_E_CORRUPT) {
            fail_msg("cut at %zu: %s (%s)", cut, sim_err_name(rc), why);
        }
        assert_true(strlen(why) > 0);
        free(copy);
    }
    assert_int_equal(try_load(saved, len - 1, g_lib, why, sizeof why), SIM_E_CORRUPT);
    printf("cut by one byte: %s\n", why);

    uint8_t* bad = malloc(len);
    const struct {
        size_t at;
        int rc;
        const char* says;
    } flips[] = {
        {0, SIM_E_CORRUPT, "magic"},         // magic
        {4, SIM_E_VERSION, "state version"}, // state version
        {8, SIM_E_VERSION, "physics version"},
        {12, SIM_E_VERSION, "layout"},
    };
    for (size_t i = 0; i < sizeof flips / sizeof flips[0]; ++i) {
        memcpy(bad, saved, len);
        bad[flips[i].at] ^= 0x01;
        assert_int_equal(try_load(bad, len, g_lib, why, sizeof why), flips[i].rc);
        printf("flip at %zu: %s\n", flips[i].at, why);
        assert_non_null(strstr(why, flips[i].says));
    }
    free(bad);
    free(saved);
    sim_world_destroy(w);
}

// A library without the characters' skeleton, or with a humanoid whose
// one bone is 1 kg heavier, is refused and named.
static void test_a_state_for_other_skeletons_is_refused(void** state) {
    (void)state;
    sim_world* w = round_trip_world();
    size_t len = 0;
    uint8_t* saved = save(w, &len);
    char why[256];

    sim_library* empty = NULL;
    assert_int_equal(sim_library_create(&empty), SIM_OK);
    assert_int_equal(try_load(saved, len, empty, why, sizeof why), SIM_E_UNKNOWN_NAME);
    printf("empty library: %s\n", why);
    assert_non_null(strstr(why, "humanoid"));

    sim_library* other = NULL;
    assert_int_equal(sim_library_create(&other), SIM_OK);
    sim_skeleton_def human = *sim_library_skeleton(g_lib, "humanoid");
    human.bones[3].mass += 1.0f;
    assert_int_equal(sim_library_add_skeleton(other, &human, NULL), SIM_OK);
    assert_int_equal(try_load(saved, len, other, why, sizeof why), SIM_E_ASSET_MISMATCH);
    printf("other humanoid: %s\n", why);
    assert_non_null(strstr(why, "differs"));

    sim_library_destroy(empty);
    sim_library_destroy(other);
    free(saved);
    sim_world_destroy(w);
}

// The content hash is the asset's, not the process's: the same files give
// the same hash in another library; any change to a bone changes it.
static void test_skeleton_hash_follows_the_content(void** state) {
    (void)state;
    sim_library* again = rd_test_shipped_library();
    assert_non_null(again);
    const uint64_t h = sim_library_skeleton_hash(g_lib, "humanoid");
    assert_true(h != 0);
    assert_true(sim_library_skeleton_hash(again, "humanoid") == h);
    assert_true(sim_library_skeleton_hash(g_lib, "dog") != h);
    assert_true(sim_library_skeleton_hash(g_lib, "no such") == 0);
    sim_library_destroy(again);
}

// The fresh process of test (c).
static int continue_from(const char* path, int ticks) {
    if (setup(NULL) != 0) {
        return 2;
    }
    FILE* f = fopen(path, "rb");
    if (f == NULL) {
        return 2;
    }
    static uint8_t buf[64u << 20];
    size_t len = fread(buf, 1, sizeof buf, f);
    fclose(f);
    sim_world* w = NULL;
    char why[256];
    if (sim_world_load(buf, len, g_lib, NULL, &w, why, sizeof why) != SIM_OK) {
        fprintf(stderr, "load: %s\n", why);
        return 2;
    }
    for (int t = 0; t < ticks; ++t) {
        sim_world_step(w);
        printf("%016" PRIx64 "\n", sim_world_hash(w));
    }
    sim_world_destroy(w);
    teardown(NULL);
    return 0;
}

int main(int argc, char** argv) {
    g_self = argv[0];
    if (argc == 4 && strcmp(argv[1], "--continue") == 0) {
        return continue_from(argv[2], atoi(argv[3]));
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_restored_world_continues_bit_for_bit),
        cmocka_unit_test(test_a_restored_world_saves_the_same_bytes),
        cmocka_unit_test(test_cloth_soft_bodies_and_garments_continue_bit_for_bit),
        cmocka_unit_test(test_an_xpbd_world_continues_bit_for_bit),
        cmocka_unit_test(test_sleep_survives_restores),
        cmocka_unit_test(test_truncated_and_foreign_states_are_refused),
        cmocka_unit_test(test_a_state_for_other_skeletons_is_refused),
        cmocka_unit_test(test_skeleton_hash_follows_the_content),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
