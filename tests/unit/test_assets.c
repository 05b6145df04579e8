/*
 * test_assets.c: the checks sim_library_add_skeleton() makes of a skeleton
 * (issue 9, item 4) and how app_assets_load() passes them on: a bind pose
 * outside a hinge or twist range is refused with an error naming the bone,
 * the range and by how many degrees; a bone more than 10 times as heavy or
 * as light as its parent loads with a warning naming both bones and the
 * ratio; the shipped skeletons load without either.
 *
 * Every figure asserted is derived by hand in the comments: the degrees
 * outside a range from the range written in the test, the mass ratio from
 * two capsules' dimensions at the same density.
 */
// cmocka.h needs these four before it (cmocka docs); keep the order.
// clang-format off
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
// clang-format on

#include "assets.h"
#include "sim.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define RAD (3.14159265f / 180.0f)

// A two-bone skeleton: a torso (root) and a limb hanging from its bottom,
// both 1 kg, joined by `joint` with no limits set yet.
static void two_bones(sim_skeleton_def* d, const char* name, sim_joint_kind joint) {
    memset(d, 0, sizeof *d);
    snprintf(d->name, sizeof d->name, "%s", name);
    d->bone_count = 2;
    strcpy(d->bones[0].name, "torso");
    d->bones[0].parent = -1;
    d->bones[0].head = (sim_vec3){0.0f, 1.0f, 0.0f};
    d->bones[0].tail = (sim_vec3){0.0f, 1.4f, 0.0f};
    d->bones[0].radius = 0.1f;
    d->bones[0].mass = 1.0f;
    strcpy(d->bones[1].name, "shin");
    d->bones[1].parent = 0;
    d->bones[1].head = (sim_vec3){0.0f, 1.0f, 0.0f};
    d->bones[1].tail = (sim_vec3){0.0f, 0.6f, 0.0f};
    d->bones[1].radius = 0.05f;
    d->bones[1].mass = 1.0f;
    d->bones[1].joint = joint;
    d->bones[1].axis = (sim_vec3){1.0f, 0.0f, 0.0f};
    d->bones[1].friction = -1.0f;
}

static sim_skeleton_report g_report; // ~11 KB: not on the test's stack.

// ---------------------------------------------------------------------------
// A bind pose outside a limit: refused, naming the bone, the limit and the
// degrees
// ---------------------------------------------------------------------------

static void test_assets_bind_pose_30_deg_outside_a_hinge_range_is_refused(void** state) {
    (void)state;
    sim_library* lib;
    assert_int_equal(sim_library_create(&lib), SIM_OK);
    sim_skeleton_def d;
    // A knee whose range starts at 30°: the bind pose (the zero every limit
    // is measured from) is 30° - 0° = 30° below it.
    two_bones(&d, "knee30", SIM_JOINT_HINGE);
    d.bones[1].twist_min = 30.0f * RAD;
    d.bones[1].twist_max = 150.0f * RAD;
    assert_int_equal(sim_library_add_skeleton(lib, &d, &g_report), SIM_E_OUT_OF_RANGE);
    assert_int_equal(g_report.error.kind, SIM_SKELETON_BIND_OUTSIDE_LIMIT);
    assert_int_equal(g_report.error.bone, 1);
    assert_int_equal(g_report.error.other, -1);
    assert_float_equal(g_report.error.value, 30.0f, 1e-3);
    assert_int_equal(g_report.warning_count, 0);
    const char* m = g_report.error.message;
    printf("%s\n", m);
    assert_non_null(strstr(m, "skeleton knee30: bone shin:"));
    assert_non_null(strstr(m, "30.0 deg outside its hinge range_deg [30.0, 150.0]"));
    // Re-based on the bind pose: [30 - 30, 150 - 30] = [0, 120].
    assert_non_null(strstr(m, "[0.0, 120.0]"));
    // Nothing else changed: the name is free, and the range the message
    // suggests loads.
    assert_null(sim_library_skeleton(lib, "knee30"));
    d.bones[1].twist_min = 0.0f;
    d.bones[1].twist_max = 120.0f * RAD;
    assert_int_equal(sim_library_add_skeleton(lib, &d, &g_report), SIM_OK);
    assert_int_equal(g_report.error.kind, SIM_SKELETON_ISSUE_NONE);
    assert_int_equal(g_report.warning_count, 0);
    assert_non_null(sim_library_skeleton(lib, "knee30"));
    sim_library_destroy(lib);
}

static void test_assets_bind_pose_outside_a_twist_range_is_refused(void** state) {
    (void)state;
    sim_library* lib;
    assert_int_equal(sim_library_create(&lib), SIM_OK);
    sim_skeleton_def d;
    // A shoulder whose twist range is [-90°, -30°]: the bind pose (0°) is
    // 0° - (-30°) = 30° above its top; re-based, [-90 + 30, -30 + 30] =
    // [-60, 0]. The swing cone (half-angles >= 0) is centred on the bind
    // pose, so only the twist can leave it out.
    two_bones(&d, "twisted", SIM_JOINT_BALL);
    d.bones[1].swing1 = 80.0f * RAD;
    d.bones[1].swing2 = 60.0f * RAD;
    d.bones[1].twist_min = -90.0f * RAD;
    d.bones[1].twist_max = -30.0f * RAD;
    assert_int_equal(sim_library_add_skeleton(lib, &d, &g_report), SIM_E_OUT_OF_RANGE);
    assert_int_equal(g_report.error.kind, SIM_SKELETON_BIND_OUTSIDE_LIMIT);
    assert_int_equal(g_report.error.bone, 1);
    assert_float_equal(g_report.error.value, 30.0f, 1e-3);
    assert_non_null(strstr(g_report.error.message, "bone shin"));
    assert_non_null(strstr(g_report.error.message, "twist_deg [-90.0, -30.0]"));
    assert_non_null(strstr(g_report.error.message, "[-60.0, 0.0]"));
    assert_null(sim_library_skeleton(lib, "twisted"));
    // A range that ends exactly at the bind pose holds it, and so do locked
    // swing axes (half-angle 0).
    d.bones[1].twist_max = 0.0f;
    d.bones[1].swing1 = d.bones[1].swing2 = 0.0f;
    assert_int_equal(sim_library_add_skeleton(lib, &d, &g_report), SIM_OK);
    // Without a report the refusal is the same.
    two_bones(&d, "knee30", SIM_JOINT_HINGE);
    d.bones[1].twist_min = 30.0f * RAD;
    d.bones[1].twist_max = 150.0f * RAD;
    assert_int_equal(sim_library_add_skeleton(lib, &d, NULL), SIM_E_OUT_OF_RANGE);
    sim_library_destroy(lib);
}

// Malformed skeletons get an error naming the bone and the problem.
static void test_assets_malformed_skeletons_say_what_is_wrong(void** state) {
    (void)state;
    sim_library* lib;
    assert_int_equal(sim_library_create(&lib), SIM_OK);
    sim_skeleton_def d;
    two_bones(&d, "bad", SIM_JOINT_HINGE);
    d.bones[1].tail = d.bones[1].head; // 0 m long.
    assert_int_equal(sim_library_add_skeleton(lib, &d, &g_report), SIM_E_OUT_OF_RANGE);
    assert_int_equal(g_report.error.kind, SIM_SKELETON_INVALID);
    assert_int_equal(g_report.error.bone, 1);
    assert_non_null(strstr(g_report.error.message, "bone shin: head and tail are 0.0000 m apart"));
    two_bones(&d, "bad", SIM_JOINT_HINGE);
    d.bones[1].radius = NAN;
    assert_int_equal(sim_library_add_skeleton(lib, &d, &g_report), SIM_E_NOT_FINITE);
    assert_non_null(strstr(g_report.error.message, "bone shin: a number is NaN or infinite"));
    two_bones(&d, "bad", SIM_JOINT_HINGE);
    d.bones[1].axis = (sim_vec3){0.0f, 1.0f, 0.0f}; // Along the bone.
    assert_int_equal(sim_library_add_skeleton(lib, &d, &g_report), SIM_E_OUT_OF_RANGE);
    assert_non_null(strstr(g_report.error.message, "bone shin: the joint axis"));
    two_bones(&d, "bad", SIM_JOINT_HINGE);
    strcpy(d.bones[1].name, "torso");
    assert_int_equal(sim_library_add_skeleton(lib, &d, &g_report), SIM_E_INVALID_ARG);
    assert_non_null(strstr(g_report.error.message, "bone torso: the name is used twice"));
    two_bones(&d, "bad", SIM_JOINT_HINGE);
    d.solver = (sim_char_solver)3;
    assert_int_equal(sim_library_add_skeleton(lib, &d, &g_report), SIM_E_OUT_OF_RANGE);
    assert_non_null(strstr(g_report.error.message, "solver 3"));
    assert_null(sim_library_skeleton(lib, "bad"));
    sim_library_destroy(lib);
}

// ---------------------------------------------------------------------------
// Mass ratios: loaded, with a warning naming both bones
// ---------------------------------------------------------------------------

// Masses of two solid capsules of the same density ρ = 1000 kg/m³, volume
// V = π r² L + (4/3) π r³ (a cylinder and two hemispheres):
//   torso: r = 0.05 m, L = 0.1 m: V = π (0.0025 · 0.1 + 0.000166667)
//          = π · 0.000416667 m³, m = 1.3089969 kg;
//   club:  r = 0.25 m, L = 2.1 m: V = π (0.0625 · 2.1 + 0.0208333)
//          = π · 0.1520833 m³, m = 477.77479 kg.
// Ratio: 0.1520833 / 0.000416667 = 365.0 (π and ρ cancel).
#define TORSO_KG 1.3089969f
#define CLUB_KG  477.77479f

static void club_on_a_torso(sim_skeleton_def* d, const char* name) {
    two_bones(d, name, SIM_JOINT_BALL);
    d->bones[0].tail = (sim_vec3){0.0f, 1.1f, 0.0f};
    d->bones[0].radius = 0.05f;
    d->bones[0].mass = TORSO_KG;
    strcpy(d->bones[1].name, "club");
    d->bones[1].tail = (sim_vec3){0.0f, 1.0f, 2.1f};
    d->bones[1].radius = 0.25f;
    d->bones[1].mass = CLUB_KG;
    d->bones[1].swing1 = d->bones[1].swing2 = 45.0f * RAD;
    d->bones[1].twist_min = -10.0f * RAD;
    d->bones[1].twist_max = 10.0f * RAD;
}

static void test_assets_a_365_to_1_mass_ratio_loads_with_a_warning(void** state) {
    (void)state;
    sim_library* lib;
    assert_int_equal(sim_library_create(&lib), SIM_OK);
    sim_skeleton_def d;
    club_on_a_torso(&d, "clubbed");
    assert_int_equal(sim_library_add_skeleton(lib, &d, &g_report), SIM_OK);
    assert_non_null(sim_library_skeleton(lib, "clubbed"));
    assert_int_equal(g_report.error.kind, SIM_SKELETON_ISSUE_NONE);
    assert_int_equal(g_report.warning_count, 1);
    const sim_skeleton_issue* w = &g_report.warnings[0];
    assert_int_equal(w->kind, SIM_SKELETON_MASS_RATIO);
    assert_int_equal(w->bone, 1);
    assert_int_equal(w->other, 0);
    assert_float_equal(w->value, 365.0f, 0.05);
    printf("%s\n", w->message);
    assert_non_null(strstr(w->message, "skeleton clubbed: bone club (477.775 kg)"));
    assert_non_null(strstr(w->message, "its parent torso (1.309 kg)"));
    assert_non_null(strstr(w->message, "365.0:1"));
    // The other way round (a 365 times lighter child) warns the same.
    d.bones[0].mass = CLUB_KG;
    d.bones[1].mass = TORSO_KG;
    strcpy(d.name, "whip");
    assert_int_equal(sim_library_add_skeleton(lib, &d, &g_report), SIM_OK);
    assert_int_equal(g_report.warning_count, 1);
    assert_float_equal(g_report.warnings[0].value, 365.0f, 0.05);
    // 10:1 exactly is within the limit: no warning.
    d.bones[0].mass = 10.0f;
    d.bones[1].mass = 1.0f;
    strcpy(d.name, "ten");
    assert_int_equal(sim_library_add_skeleton(lib, &d, &g_report), SIM_OK);
    assert_int_equal(g_report.warning_count, 0);
    sim_library_destroy(lib);
}

// ---------------------------------------------------------------------------
// Through app_assets_load(): files, paths and the shipped assets
// ---------------------------------------------------------------------------

typedef struct seen {
    int count;
    char path[512];
    char skeleton[SIM_NAME_MAX];
    char bone[SIM_NAME_MAX];
    char parent[SIM_NAME_MAX];
    float value;
} seen;

static void on_warning(void* ctx, const char* path, const sim_skeleton_def* sk,
                       const sim_skeleton_issue* w) {
    seen* s = ctx;
    s->count++;
    snprintf(s->path, sizeof s->path, "%s", path);
    snprintf(s->skeleton, sizeof s->skeleton, "%s", sk->name);
    snprintf(s->bone, sizeof s->bone, "%s", sk->bones[w->bone].name);
    snprintf(s->parent, sizeof s->parent, "%s", w->other >= 0 ? sk->bones[w->other].name : "");
    s->value = w->value;
}

static void test_assets_the_shipped_skeletons_load_without_warnings(void** state) {
    (void)state;
    // The largest neighbour ratios in the files: humanoid chest 10 kg /
    // upper arm 3 kg = 3.3, dog pelvis 9 kg / tail_1 1.2 kg = 7.5; every
    // hinge and twist range holds 0 (the knees' and elbows' start at it).
    sim_library* lib;
    assert_int_equal(sim_library_create(&lib), SIM_OK);
    seen s = {0};
    char err[512] = "";
    assert_int_equal(app_assets_load(RD_ASSETS_DIR, lib, on_warning, &s, err, sizeof err), 0);
    assert_int_equal(s.count, 0);
    assert_non_null(sim_library_skeleton(lib, "humanoid"));
    assert_non_null(sim_library_skeleton(lib, "dog"));
    // Issue 13's reference skeletons: 101 bones, and a 100:1 payload that
    // warns nobody because its solver is reduced.
    const sim_skeleton_def* chain = sim_library_skeleton(lib, "chain");
    const sim_skeleton_def* arm = sim_library_skeleton(lib, "robot_arm");
    assert_non_null(chain);
    assert_non_null(arm);
    assert_int_equal(chain->bone_count, 101);
    assert_true(chain->fixed_base && arm->fixed_base);
    assert_true(arm->drive_kp == 1e5f && arm->drive_kd == 5e3f);
    assert_true(arm->bones[4].mass == 100.0f && arm->bones[1].mass == 1.0f);
    sim_library_destroy(lib);
}

static char g_dir[64];

static void write_file(const char* sub, const char* text) {
    char path[256];
    snprintf(path, sizeof path, "%s/%s", g_dir, sub);
    FILE* f = fopen(path, "w");
    assert_non_null(f);
    assert_int_equal(fputs(text, f) >= 0, 1);
    assert_int_equal(fclose(f), 0);
}

static void remove_file(const char* sub) {
    char path[256];
    snprintf(path, sizeof path, "%s/%s", g_dir, sub);
    assert_int_equal(remove(path), 0);
}

static void test_assets_files_name_themselves_in_errors_and_warnings(void** state) {
    (void)state;
    snprintf(g_dir, sizeof g_dir, "/tmp/rd_assets_XXXXXX");
    assert_non_null(mkdtemp(g_dir));
    char sub[128];
    snprintf(sub, sizeof sub, "%s/skeletons", g_dir);
    assert_int_equal(mkdir(sub, 0700), 0);
    snprintf(sub, sizeof sub, "%s/clips", g_dir);
    assert_int_equal(mkdir(sub, 0700), 0);

    // The club on its torso, as a file (masses as above).
    write_file("skeletons/club.json",
               "{\"name\": \"clubbed\", \"bones\": ["
               "{\"name\": \"torso\", \"parent\": null, \"head\": [0, 1, 0], \"tail\": [0, 1.1, "
               "0], \"radius\": 0.05, \"mass\": 1.3089969},"
               "{\"name\": \"club\", \"parent\": \"torso\", \"head\": [0, 1, 0], \"tail\": [0, "
               "1, 2.1], \"radius\": 0.25, \"mass\": 477.77479, \"joint\": {\"type\": \"ball\", "
               "\"axis\": [1, 0, 0], \"swing_deg\": [45, 45], \"twist_deg\": [-10, 10]}}]}");
    sim_library* lib;
    assert_int_equal(sim_library_create(&lib), SIM_OK);
    seen s = {0};
    char err[512] = "";
    assert_int_equal(app_assets_load(g_dir, lib, on_warning, &s, err, sizeof err), 0);
    assert_int_equal(s.count, 1);
    char want[256];
    snprintf(want, sizeof want, "%s/skeletons/club.json", g_dir);
    assert_string_equal(s.path, want);
    assert_string_equal(s.skeleton, "clubbed");
    assert_string_equal(s.bone, "club");
    assert_string_equal(s.parent, "torso");
    assert_float_equal(s.value, 365.0f, 0.05);
    sim_library_destroy(lib);

    // A knee 30° out of its range stops the load, naming file, bone, range
    // and degrees; warn is not called for it.
    remove_file("skeletons/club.json");
    write_file("skeletons/knee.json",
               "{\"name\": \"knee30\", \"bones\": ["
               "{\"name\": \"thigh\", \"parent\": null, \"head\": [0, 1, 0], \"tail\": [0, 0.6, "
               "0], \"radius\": 0.07, \"mass\": 7},"
               "{\"name\": \"shin\", \"parent\": \"thigh\", \"head\": [0, 0.6, 0], \"tail\": [0, "
               "0.2, 0], \"radius\": 0.05, \"mass\": 5, \"joint\": {\"type\": \"hinge\", "
               "\"axis\": [1, 0, 0], \"range_deg\": [30, 150]}}]}");
    assert_int_equal(sim_library_create(&lib), SIM_OK);
    memset(&s, 0, sizeof s);
    assert_int_equal(app_assets_load(g_dir, lib, on_warning, &s, err, sizeof err), -1);
    printf("%s\n", err);
    snprintf(want, sizeof want, "%s/skeletons/knee.json: skeleton knee30: bone shin: ", g_dir);
    assert_non_null(strstr(err, want));
    assert_non_null(strstr(err, "30.0 deg outside its hinge range_deg [30.0, 150.0]"));
    assert_int_equal(s.count, 0);
    assert_null(sim_library_skeleton(lib, "knee30"));
    sim_library_destroy(lib);
    remove_file("skeletons/knee.json");

    // "solver" picks the solver of the skeleton's characters (issue 13);
    // anything but "maximal" or "reduced" stops the load.
#define LEG(solver)                                                                                \
    "{\"name\": \"leg\", \"solver\": " solver ", \"bones\": [{\"name\": \"thigh\", \"parent\": "   \
    "null, \"head\": [0, 1, 0], \"tail\": [0, 0.6, 0], \"radius\": 0.07, \"mass\": 7}]}"
    write_file("skeletons/leg.json", LEG("\"reduced\""));
    assert_int_equal(sim_library_create(&lib), SIM_OK);
    assert_int_equal(app_assets_load(g_dir, lib, on_warning, &s, err, sizeof err), 0);
    assert_int_equal(sim_library_skeleton(lib, "leg")->solver, SIM_CHAR_SOLVER_REDUCED);
    sim_library_destroy(lib);
    write_file("skeletons/leg.json", LEG("\"featherstone\""));
    assert_int_equal(sim_library_create(&lib), SIM_OK);
    assert_int_equal(app_assets_load(g_dir, lib, on_warning, &s, err, sizeof err), -1);
    assert_non_null(strstr(err, "skeleton leg: solver must be \"maximal\" or \"reduced\""));
    sim_library_destroy(lib);
    // "base" and "drive": what they may be, and what the error says.
    static const char* const bad[][2] = {
        {"\"base\": \"bolted\"", "skeleton leg: base must be \"free\" or \"fixed\""},
        {"\"drive\": {\"kp\": -1, \"kd\": 0}",
         "skeleton leg: drive kp must be a number in [0, 1e5]"},
        {"\"drive\": {\"kp\": 0, \"kd\": 1e6}",
         "skeleton leg: drive kd must be a number in [0, 1e5]"},
        {"\"drive\": {\"kp\": 10}", "skeleton leg: drive must be {\"kp\""},
        {"\"drive\": {\"kp\": \"10\", \"kd\": 1}", "drive kp must be a number"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; ++k) {
        char text[512];
        snprintf(text, sizeof text,
                 "{\"name\": \"leg\", %s, \"bones\": [{\"name\": \"thigh\", \"parent\": null, "
                 "\"head\": [0, 1, 0], \"tail\": [0, 0.6, 0], \"radius\": 0.07, \"mass\": 7}]}",
                 bad[k][0]);
        write_file("skeletons/leg.json", text);
        assert_int_equal(sim_library_create(&lib), SIM_OK);
        assert_int_equal(app_assets_load(g_dir, lib, on_warning, &s, err, sizeof err), -1);
        assert_non_null(strstr(err, bad[k][1]));
        sim_library_destroy(lib);
    }
    // 129 bones: one more than a skeleton may have.
    char* big = malloc(256 * 1024);
    assert_non_null(big);
    int at = snprintf(big, 256 * 1024, "{\"name\": \"leg\", \"bones\": [");
    for (int i = 0; i < SIM_MAX_BONES + 1; ++i) {
        char parent[16] = "null";
        if (i > 0) {
            snprintf(parent, sizeof parent, "\"b%d\"", i - 1);
        }
        at +=
            snprintf(big + at, (size_t)(256 * 1024 - at),
                     "%s{\"name\": \"b%d\", \"parent\": %s, \"head\": [%d, 1, 0], "
                     "\"tail\": [%d.5, 1, 0], \"radius\": 0.1, \"mass\": 1%s}",
                     i ? ", " : "", i, parent, i, i, i ? ", \"joint\": {\"type\": \"fixed\"}" : "");
    }
    snprintf(big + at, (size_t)(256 * 1024 - at), "]}");
    write_file("skeletons/leg.json", big);
    free(big);
    assert_int_equal(sim_library_create(&lib), SIM_OK);
    assert_int_equal(app_assets_load(g_dir, lib, on_warning, &s, err, sizeof err), -1);
    printf("%s\n", err);
    assert_non_null(strstr(err, "skeleton leg: "));
    sim_library_destroy(lib);
    remove_file("skeletons/leg.json");
#undef LEG
    snprintf(sub, sizeof sub, "%s/skeletons", g_dir);
    assert_int_equal(rmdir(sub), 0);
    snprintf(sub, sizeof sub, "%s/clips", g_dir);
    assert_int_equal(rmdir(sub), 0);
    assert_int_equal(rmdir(g_dir), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_assets_bind_pose_30_deg_outside_a_hinge_range_is_refused),
        cmocka_unit_test(test_assets_bind_pose_outside_a_twist_range_is_refused),
        cmocka_unit_test(test_assets_malformed_skeletons_say_what_is_wrong),
        cmocka_unit_test(test_assets_a_365_to_1_mass_ratio_loads_with_a_warning),
        cmocka_unit_test(test_assets_the_shipped_skeletons_load_without_warnings),
        cmocka_unit_test(test_assets_files_name_themselves_in_errors_and_warnings),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
