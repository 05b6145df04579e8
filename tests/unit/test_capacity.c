/*
 * test_capacity.c: unit tests of a world's limits and memory (server/sim
 * world.c and cost.c): limits refuse a spawn and leave the world as it was,
 * memory starts small and follows what a world holds, the arrays grow at
 * spawn time and never in a step, a refused growth leaves the world
 * unchanged and usable, and the pure counts of a def agree with what its
 * spawn adds.
 *
 * Memory is measured by a counting allocator (what the world asked for and
 * has not freed), independently of the world's own accounting. Expected
 * counts are the entities' shapes, derived by hand:
 *
 *   rope of s segments  s + 1 particles, s constraints
 *   cloth of C × R      C·R particles; structural (C-1)R + C(R-1), shear
 *                       2(C-1)(R-1), bend (C-2)R + C(R-2) constraints
 *                       12 × 10: 120 particles, 218 + 198 + 196 = 612
 *   particle ragdoll    16 particles; 26 sticks (15 bones, 11 torso braces),
 *                       7 minimum distances, 4 hinge distances = 37
 *                       constraints; a cone and a hinge per limb = 8 limits
 *   humanoid            16 bones, 15 joints (assets/humanoid.json); dog 14, 13
 *   ball                1 body
 */
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
#include "world.h"

#include <stdlib.h>
#include <string.h>

static sim_library* g_lib;

// ---------------------------------------------------------------------------
// A counting allocator that can be told to fail
// ---------------------------------------------------------------------------

typedef struct counter {
    size_t live;   ///< Bytes allocated and not freed.
    size_t allocs; ///< Successful allocations so far.
    long allow;    ///< Allocations still allowed; negative: no limit.
} counter;

static void* count_alloc(void* ctx, size_t size, size_t align) {
    counter* c = ctx;
    if (c->allow == 0) {
        return NULL;
    }
    if (c->allow > 0) {
        c->allow--;
    }
    void* p = aligned_alloc(align, (size + align - 1) / align * align);
    if (p != NULL) {
        c->live += size;
        c->allocs++;
    }
    return p;
}

static void count_free(void* ctx, void* p, size_t size) {
    counter* c = ctx;
    assert_true(c->live >= size);
    c->live -= size;
    free(p);
}

static sim_world_def counted_def(counter* c) {
    memset(c, 0, sizeof *c);
    c->allow = -1;
    sim_world_def d = sim_world_def_default();
    // The tables below count an XPBD world's arrays; a soft-step world (the
    // default) adds the soft step's (README "World limits and memory").
    d.solver = SIM_SOLVER_XPBD;
    d.allocator.alloc = count_alloc;
    d.allocator.free = count_free;
    d.allocator.ctx = c;
    d.library = g_lib;
    return d;
}

static sim_world* make_world(const sim_world_def* def) {
    sim_world* w = NULL;
    assert_int_equal(sim_world_create(def, &w), SIM_OK);
    return w;
}

static bool counts_equal(sim_counts a, sim_counts b) {
    return a.entities == b.entities && a.particles == b.particles &&
           a.constraints == b.constraints && a.joint_limits == b.joint_limits &&
           a.bodies == b.bodies && a.joints == b.joints;
}

// Everything a failed call must leave as it was.
typedef struct world_state {
    sim_counts counts, reserved;
    uint64_t hash;
    uint32_t epoch;
    size_t bytes;
} world_state;

static world_state state_of(const sim_world* w) {
    world_state s = {sim_world_counts(w), sim_world_reserved(w), sim_world_hash(w),
                     sim_world_topology_epoch(w), sim_world_reserved_bytes(w)};
    return s;
}

static void assert_unchanged(const sim_world* w, const world_state* before) {
    world_state now = state_of(w);
    assert_true(counts_equal(now.counts, before->counts));
    assert_true(counts_equal(now.reserved, before->reserved));
    assert_true(now.hash == before->hash);
    assert_int_equal(now.epoch, before->epoch);
    assert_true(now.bytes == before->bytes);
}

static int spawn_humanoid(sim_world* w, float x, float z, sim_entity_id* id) {
    sim_character_def cd = sim_character_def_default();
    cd.position = (sim_vec3){x, 0.0f, z};
    return sim_world_spawn_character(w, &cd, id);
}

static int spawn_ball(sim_world* w, float x, sim_entity_id* id) {
    sim_ball_def bd = sim_ball_def_default();
    bd.position = (sim_vec3){x, 1.0f, 0.0f};
    return sim_world_spawn_ball(w, &bd, id);
}

static int spawn_rope(sim_world* w, uint32_t segments, sim_entity_id* id) {
    sim_rope_def r = sim_rope_def_default();
    r.anchor = (sim_vec3){0.0f, 5.0f, 0.0f};
    r.segments = segments;
    return sim_world_spawn_rope(w, &r, id);
}

// ---------------------------------------------------------------------------
// The counts of a def agree with its spawn
// ---------------------------------------------------------------------------

// What spawning changed in w's counts.
static sim_counts added(sim_counts before, sim_counts after) {
    sim_counts d = {after.entities - before.entities,
                    after.particles - before.particles,
                    after.constraints - before.constraints,
                    after.joint_limits - before.joint_limits,
                    after.bodies - before.bodies,
                    after.joints - before.joints,
                    after.soft_particles - before.soft_particles,
                    after.artic_links - before.artic_links};
    return d;
}

// Checks that the spawn of kind `k` (run by the caller between `before` and
// now) added `expect` (hand-derived) and that the pure counts said so, and
// that the solver work grew by what sim_counts_solver_work() prices them at.
static void check_spawn(const sim_world* w, sim_counts before, uint64_t work_before,
                        sim_counts counted, sim_counts expect) {
    sim_counts got = added(before, sim_world_counts(w));
    assert_true(counts_equal(got, expect));
    assert_true(counts_equal(counted, expect));
    sim_params p = sim_world_params(w);
    assert_true(sim_world_solver_work(w) - work_before == sim_counts_solver_work(&counted, &p));
}

static void test_capacity_def_counts_agree_with_spawns(void** state) {
    (void)state;
    sim_world_def def = sim_world_def_default();
    def.library = g_lib;
    def.max_solver_work = 0;
    // Not the defaults: the work must scale with both.
    def.params.iterations = 3;
    def.params.substeps = 2;
    sim_world* w = make_world(&def);
    sim_entity_id id;
    sim_counts c, b;
    uint64_t work;

    static const uint32_t segments[] = {1, 10, 1000};
    for (size_t i = 0; i < sizeof segments / sizeof segments[0]; ++i) {
        sim_rope_def r = sim_rope_def_default();
        r.segments = segments[i];
        r.anchor = (sim_vec3){-50.0f, 5.0f + (float)i, 0.0f};
        assert_int_equal(sim_rope_def_counts(&r, &c), SIM_OK);
        b = sim_world_counts(w);
        work = sim_world_solver_work(w);
        assert_int_equal(sim_world_spawn_rope(w, &r, &id), SIM_OK);
        sim_counts e = {1, segments[i] + 1, segments[i], 0, 0, 0, 0, 0};
        check_spawn(w, b, work, c, e);
    }

    static const uint32_t grids[][2] = {{2, 2}, {3, 2}, {12, 10}, {24, 16}, {256, 2}};
    for (size_t i = 0; i < sizeof grids / sizeof grids[0]; ++i) {
        sim_cloth_def cl = sim_cloth_def_default();
        cl.cols = grids[i][0];
        cl.rows = grids[i][1];
        cl.spacing = 0.1f;
        cl.origin = (sim_vec3){-10.0f, 10.0f, (float)i};
        assert_int_equal(sim_cloth_def_counts(&cl, &c), SIM_OK);
        b = sim_world_counts(w);
        work = sim_world_solver_work(w);
        assert_int_equal(sim_world_spawn_cloth(w, &cl, &id), SIM_OK);
        uint32_t C = grids[i][0], R = grids[i][1];
        uint32_t k = (C - 1) * R + C * (R - 1) + 2 * (C - 1) * (R - 1) + (C - 2) * R + C * (R - 2);
        sim_counts e = {1, C * R, k, 0, 0, 0, 0, 0};
        check_spawn(w, b, work, c, e);
    }
    // The seed sheet, by the numbers of the header comment.
    sim_cloth_def seed = sim_cloth_def_default();
    assert_int_equal(sim_cloth_def_counts(&seed, &c), SIM_OK);
    assert_int_equal(c.particles, 120);
    assert_int_equal(c.constraints, 612);

    sim_ragdoll_def rd = sim_ragdoll_def_default();
    rd.position = (sim_vec3){5.0f, 2.0f, 5.0f};
    assert_int_equal(sim_ragdoll_def_counts(&rd, &c), SIM_OK);
    b = sim_world_counts(w);
    work = sim_world_solver_work(w);
    assert_int_equal(sim_world_spawn_ragdoll(w, &rd, &id), SIM_OK);
    sim_counts er = {1, 16, 37, 8, 0, 0, 0, 0};
    check_spawn(w, b, work, c, er);
    sim_entity_view v;
    assert_int_equal(sim_entity_get_view(w, id, &v), SIM_OK);
    assert_int_equal(v.stick_count, 26);

    static const struct {
        const char* skeleton;
        uint32_t bones;
    } skeletons[] = {{"humanoid", 16}, {"dog", 14}};
    for (size_t i = 0; i < 2; ++i) {
        sim_character_def cd = sim_character_def_default();
        cd.skeleton = skeletons[i].skeleton;
        cd.position = (sim_vec3){3.0f * (float)i, 0.0f, -5.0f};
        assert_int_equal(sim_character_def_counts(g_lib, &cd, &c), SIM_OK);
        b = sim_world_counts(w);
        work = sim_world_solver_work(w);
        assert_int_equal(sim_world_spawn_character(w, &cd, &id), SIM_OK);
        sim_counts e = {1, 0, 0, 0, skeletons[i].bones, skeletons[i].bones - 1, 0, 0};
        check_spawn(w, b, work, c, e);
    }

    sim_ball_def bd = sim_ball_def_default();
    bd.position = (sim_vec3){0.0f, 3.0f, 8.0f};
    assert_int_equal(sim_ball_def_counts(&bd, &c), SIM_OK);
    b = sim_world_counts(w);
    work = sim_world_solver_work(w);
    assert_int_equal(sim_world_spawn_ball(w, &bd, &id), SIM_OK);
    sim_counts eb = {1, 0, 0, 0, 1, 0, 0, 0};
    check_spawn(w, b, work, c, eb);

    // The world's own totals are the sums: 3 ropes, 5 cloths, a ragdoll,
    // 2 characters, a ball.
    sim_counts all = sim_world_counts(w);
    assert_int_equal(all.entities, 12);
    assert_int_equal(all.bodies, 31); // 16 + 14 + 1
    assert_int_equal(all.joints, 28); // 15 + 13
    assert_int_equal(all.joint_limits, 8);
    assert_true(sim_counts_solver_work(&all, &def.params) == sim_world_solver_work(w));

    // A REDUCED humanoid: the same bodies and joints, and its 16 links
    // priced on top (sim_counts.artic_links): at 60 Hz, 4 articulation
    // steps a tick, 16 × 4 × SIM_ARTIC_LINK_WORK (12) × 100 = 76,800 more
    // than the maximal one's work.
    sim_character_def red = sim_character_def_default();
    red.solver = SIM_CHAR_SOLVER_REDUCED;
    red.position = (sim_vec3){-6.0f, 0.0f, -5.0f};
    sim_counts cm;
    sim_character_def mx = red;
    mx.solver = SIM_CHAR_SOLVER_MAXIMAL;
    assert_int_equal(sim_character_def_counts(g_lib, &mx, &cm), SIM_OK);
    assert_int_equal(sim_character_def_counts(g_lib, &red, &c), SIM_OK);
    assert_int_equal(c.artic_links, 16);
    assert_int_equal(sim_world_counts_solver_work(w, &c, &def.params) -
                         sim_world_counts_solver_work(w, &cm, &def.params),
                     76800);
    b = sim_world_counts(w);
    work = sim_world_solver_work(w);
    assert_int_equal(sim_world_spawn_character(w, &red, &id), SIM_OK);
    sim_counts er2 = {1, 0, 0, 0, 16, 15, 0, 16};
    check_spawn(w, b, work, c, er2);
    assert_true(sim_counts_solver_work(&all, &def.params) < sim_world_solver_work(w));
    sim_world_destroy(w);
}

static void test_capacity_def_counts_refuse_what_the_spawn_refuses(void** state) {
    (void)state;
    sim_world_def def = sim_world_def_default();
    def.library = g_lib;
    sim_world* w = make_world(&def);
    sim_entity_id id;
    sim_counts c;

    sim_rope_def r;
    memset(&r, 0, sizeof r); // not from its _default()
    assert_int_equal(sim_rope_def_counts(&r, &c), SIM_E_INVALID_ARG);
    assert_int_equal(sim_world_spawn_rope(w, &r, &id), SIM_E_INVALID_ARG);
    assert_int_equal(sim_rope_def_counts(NULL, &c), SIM_E_INVALID_ARG);
    r = sim_rope_def_default();
    assert_int_equal(sim_rope_def_counts(&r, NULL), SIM_E_INVALID_ARG);
    static const uint32_t bad_segments[] = {0, 1001};
    for (int i = 0; i < 2; ++i) {
        r.segments = bad_segments[i];
        assert_int_equal(sim_rope_def_counts(&r, &c), SIM_E_OUT_OF_RANGE);
        assert_int_equal(sim_world_spawn_rope(w, &r, &id), SIM_E_OUT_OF_RANGE);
    }

    sim_cloth_def cl = sim_cloth_def_default();
    cl.cols = 1;
    assert_int_equal(sim_cloth_def_counts(&cl, &c), SIM_E_OUT_OF_RANGE);
    assert_int_equal(sim_world_spawn_cloth(w, &cl, &id), SIM_E_OUT_OF_RANGE);
    cl.cols = 257;
    cl.spacing = 0.01f;
    assert_int_equal(sim_cloth_def_counts(&cl, &c), SIM_E_CAPACITY);
    assert_int_equal(sim_world_spawn_cloth(w, &cl, &id), SIM_E_CAPACITY);

    sim_ragdoll_def rd;
    memset(&rd, 0, sizeof rd);
    assert_int_equal(sim_ragdoll_def_counts(&rd, &c), SIM_E_INVALID_ARG);
    sim_ball_def bd;
    memset(&bd, 0, sizeof bd);
    assert_int_equal(sim_ball_def_counts(&bd, &c), SIM_E_INVALID_ARG);

    sim_character_def cd = sim_character_def_default();
    cd.skeleton = "octopus";
    assert_int_equal(sim_character_def_counts(g_lib, &cd, &c), SIM_E_UNKNOWN_NAME);
    assert_int_equal(sim_world_spawn_character(w, &cd, &id), SIM_E_UNKNOWN_NAME);
    cd = sim_character_def_default();
    cd.clip = "moonwalk";
    assert_int_equal(sim_character_def_counts(g_lib, &cd, &c), SIM_E_UNKNOWN_NAME);
    assert_int_equal(sim_world_spawn_character(w, &cd, &id), SIM_E_UNKNOWN_NAME);
    cd = sim_character_def_default();
    assert_int_equal(sim_character_def_counts(NULL, &cd, &c), SIM_E_UNKNOWN_NAME);
    cd.skeleton = NULL;
    assert_int_equal(sim_character_def_counts(g_lib, &cd, &c), SIM_E_INVALID_ARG);
    assert_int_equal(sim_world_entity_count(w), 0);
    sim_world_destroy(w);
}

// ---------------------------------------------------------------------------
// Limits
// ---------------------------------------------------------------------------

static void test_capacity_small_limits_refuse_the_spawn_past_them(void** state) {
    (void)state;
    sim_world_def def = sim_world_def_default();
    def.library = g_lib;
    def.max_solver_work = 0;
    def.max_particles = 30;
    def.max_constraints = 25;
    def.max_entities = 3;
    sim_world* w = make_world(&def);
    sim_entity_id id;
    // Particles: two 10-segment ropes are 22 of 30; one of 9 segments (10
    // more) would be 32. Constraints: 20 of 25.
    assert_int_equal(spawn_rope(w, 10, &id), SIM_OK);
    assert_int_equal(spawn_rope(w, 10, &id), SIM_OK);
    world_state before = state_of(w);
    assert_int_equal(spawn_rope(w, 9, &id), SIM_E_CAPACITY);
    assert_unchanged(w, &before);
    // 8 particles fit (30), but 7 constraints do not (27 > 25).
    assert_int_equal(spawn_rope(w, 7, &id), SIM_E_CAPACITY);
    assert_unchanged(w, &before);
    assert_int_equal(spawn_rope(w, 5, &id), SIM_OK); // 28 particles, 25 constraints
    // Entities: 3 of 3; a ball, which needs no particle, still has no slot.
    before = state_of(w);
    assert_int_equal(spawn_ball(w, 0.0f, &id), SIM_E_CAPACITY);
    assert_unchanged(w, &before);
    sim_world_step(w);
    sim_world_destroy(w);

    // Rigid bodies: 20. A humanoid (16) and four balls fill it; a fifth
    // ball is refused. Joints: 20, so a second humanoid (15 more) is
    // refused by its joints even in a world with room for its bodies.
    def = sim_world_def_default();
    def.library = g_lib;
    def.max_solver_work = 0;
    def.max_bodies = 20;
    w = make_world(&def);
    assert_int_equal(spawn_humanoid(w, 0.0f, 0.0f, &id), SIM_OK);
    for (int i = 0; i < 4; ++i) {
        assert_int_equal(spawn_ball(w, 3.0f + (float)i, &id), SIM_OK);
    }
    before = state_of(w);
    assert_int_equal(spawn_ball(w, 9.0f, &id), SIM_E_CAPACITY);
    assert_unchanged(w, &before);
    sim_world_destroy(w);
    def.max_bodies = 100;
    def.max_joints = 20;
    w = make_world(&def);
    assert_int_equal(spawn_humanoid(w, 0.0f, 0.0f, &id), SIM_OK);
    before = state_of(w);
    assert_int_equal(spawn_humanoid(w, 2.0f, 0.0f, &id), SIM_E_CAPACITY);
    assert_unchanged(w, &before);
    sim_world_destroy(w);
}

static void test_capacity_limits_are_checked_at_creation(void** state) {
    (void)state;
    sim_world* w = NULL;
    sim_world_def def = sim_world_def_default();
    def.max_bodies = SIM_LIMIT_MAX_BODIES + 1;
    assert_int_equal(sim_world_create(&def, &w), SIM_E_OUT_OF_RANGE);
    assert_true(sim_world_def_max_bytes(&def) == 0);
    def = sim_world_def_default();
    def.max_contacts = SIM_LIMIT_MAX_CONTACTS + 1;
    assert_int_equal(sim_world_create(&def, &w), SIM_E_OUT_OF_RANGE);
    def = sim_world_def_default();
    def.max_entities = 0;
    assert_int_equal(sim_world_create(&def, &w), SIM_E_OUT_OF_RANGE);
    assert_null(w);
}

// ---------------------------------------------------------------------------
// Memory
// ---------------------------------------------------------------------------

// What an empty world takes, from the table in world.c: the world, the
// arrays of a fixed size (256 events, 4096 grid bucket heads, max_boxes
// boxes, max_drags drags, SIM_MAX_TORN torn sticks) and one element of each of the other 59 arrays
// (the soft step's 15 among them), which grow (14 per particle, 4 of them self-collision's, and the
// soft bodies' 3, the constraints, the joint limits, 3 per body state (pose, facts, a character's
// bone), the rigid joints, the characters and soft bodies, 2 per body's bounds, the grid, the
// pairs, the contacts, 3 per entity slot; and the islands': per body its closing speed, sleep
// state, 4 indices and an island, the islands' joints and pairs; the cloth blocks and their
// staging).
static size_t empty_world_bytes(const sim_world_def* d) {
    size_t fixed = sizeof(sim_world) + SIM__MAX_EVENTS * sizeof(sim_event) +
                   SIM__GRID_BUCKETS * sizeof(int32_t) + d->max_boxes * sizeof(sim_box) +
                   d->max_drags * sizeof(sim__drag) + SIM_MAX_TORN * sizeof(sim_torn);
    size_t one = 4 * sizeof(sim_vec3) + 3 * sizeof(float) + sizeof(uint8_t) + sizeof(sim__dist) +
                 sizeof(sim__joint) + sizeof(sim__body) + sizeof(sim__body_info) +
                 sizeof(sim__bone) + sizeof(sim__bjoint) + sizeof(sim__char) +
                 sizeof(sim__grid_entry) + 2 * sizeof(sim_vec3) + sizeof(sim__pair) +
                 sizeof(sim__contact) + sizeof(sim__entity) + 2 * sizeof(uint32_t) +
                 sizeof(sim__softbody) + sizeof(sim_vec3) + 2 * sizeof(int32_t) + sizeof(uint32_t) +
                 sizeof(sim__tie) +
                 // The cloth blocks and their staging (cloth_batch.c): one
                 // element each too.
                 sizeof(sim__lane_block) + sizeof(float) +
                 /* self-collision: starts, entries, corrections, pairs */ 2 * sizeof(uint32_t) +
                 sizeof(float) + sizeof(sim__self_pair);
    size_t islands = sizeof(float) + sizeof(sim__sleep) + 4 * sizeof(uint32_t) +
                     sizeof(sim__island) + sizeof(sim__ijoint) + sizeof(uint32_t);
    // The soft step's 15 arrays are empty in an XPBD world: one element each.
    size_t soft = sizeof(sim__body_state) + sizeof(sim__body_mass) + sizeof(uint8_t) +
                  sizeof(uint32_t) + sizeof(sim__soft_joint) + sizeof(sim__soft_contact) +
                  sizeof(uint64_t) + 2 * sizeof(sim__soft_cached) + 2 * sizeof(uint32_t) +
                  sizeof(uint8_t) + sizeof(uint32_t) + sizeof(uint64_t) +
                  sizeof(sim__contact_block);
    return fixed + one + islands + soft;
}

static void test_capacity_memory_starts_small_and_follows_what_a_world_holds(void** state) {
    (void)state;
    counter c;
    sim_world_def def = counted_def(&c);
    sim_world* w = make_world(&def);
    // Small, and what the table says.
    size_t empty = empty_world_bytes(&def);
    assert_true(c.live == empty);
    assert_true(sim_world_reserved_bytes(w) == empty);
    assert_true(empty < 64 * 1024);
    sim_world_destroy(w);
    assert_true(c.live == 0);

    // The same whatever the limits: a world with room for 300 humanoids
    // reserves nothing for them until they come.
    def.max_entities = 400;
    def.max_bodies = 4800;
    def.max_joints = 4500;
    def.max_contacts = 24 * 4800;
    def.max_particles = SIM_LIMIT_MAX_PARTICLES;
    w = make_world(&def);
    assert_true(c.live == empty);
    assert_true(sim_world_def_max_bytes(&def) > 100 * empty);

    // The demo: 7 entities, 437 particles, 2200 constraints, 16 joint
    // limits, 46 bodies, 43 joints. Each reserved count is at least what it
    // holds and at most twice that (or the first step of 128).
    assert_int_equal(sim_scene_demo(w), SIM_OK);
    sim_counts held = sim_world_counts(w), room = sim_world_reserved(w);
    sim_counts demo = {7, 437, 2200, 16, 46, 43, 0, 0};
    assert_true(counts_equal(held, demo));
    const uint32_t h[6] = {held.entities,     held.particles, held.constraints,
                           held.joint_limits, held.bodies,    held.joints};
    const uint32_t r[6] = {room.entities,     room.particles, room.constraints,
                           room.joint_limits, room.bodies,    room.joints};
    for (int i = 0; i < 6; ++i) {
        assert_true(r[i] >= h[i]);
        assert_true(r[i] <= (2 * h[i] > 128 ? 2 * h[i] : 128));
    }
    size_t demo_bytes = c.live;
    assert_true(sim_world_reserved_bytes(w) == demo_bytes);
    assert_true(demo_bytes < 1024 * 1024); // a world of the old layout took 13.8 MiB

    // It grows with what it holds: 50 humanoids more take more memory,
    // mostly per body (states, bounds, grid, pairs and contacts).
    sim_entity_id id;
    for (int i = 0; i < 50; ++i) {
        assert_int_equal(spawn_humanoid(w, -20.0f + 1.5f * (float)(i % 10),
                                        -20.0f - 1.5f * (float)(i / 10), &id),
                         SIM_OK);
    }
    assert_int_equal(sim_world_counts(w).bodies, 46 + 50 * 16);
    assert_true(c.live > demo_bytes);
    assert_true(sim_world_reserved_bytes(w) == c.live);
    size_t per_body = sizeof(sim__body) + sizeof(sim__body_info) + 2 * sizeof(sim_vec3) +
                      SIM__CELLS_PER_BODY * sizeof(sim__grid_entry) +
                      SIM__PAIRS_PER_BODY * sizeof(sim__pair) +
                      (SIM__CONTACTS_PER_BODY + SIM__PAIRS_PER_BODY) * sizeof(sim__contact) +
                      sizeof(float) + sizeof(sim__sleep) + 4 * sizeof(uint32_t) +
                      sizeof(sim__island) + SIM__PAIRS_PER_BODY * sizeof(uint32_t);
    uint32_t bodies = sim_world_reserved(w).bodies;
    assert_true(bodies >= 846 && bodies <= 2 * 846);
    assert_true(c.live - empty >= (size_t)bodies * per_body);

    // Stepping allocates nothing, and nothing is freed or leaked.
    size_t allocs = c.allocs, live = c.live;
    for (int t = 0; t < 10; ++t) {
        sim_world_step(w);
    }
    assert_true(c.allocs == allocs && c.live == live);
    // Despawning frees nothing either (the high-water mark stays).
    assert_int_equal(sim_world_despawn(w, id), SIM_OK);
    assert_true(c.live == live);
    sim_world_destroy(w);
    assert_true(c.live == 0);
}

static void test_capacity_reserve_grows_ahead_and_refuses_past_the_limits(void** state) {
    (void)state;
    counter c;
    sim_world_def def = counted_def(&c);
    def.max_bodies = 200;
    sim_world* w = make_world(&def);
    sim_counts want = {100, 0, 0, 0, 100, 0, 0, 0}; // 100 balls: entities and bodies
    assert_int_equal(sim_world_reserve(w, &want), SIM_OK);
    assert_true(sim_world_reserved(w).bodies >= 100);
    // Spawning what was reserved takes no allocation.
    size_t allocs = c.allocs;
    sim_entity_id id;
    for (int i = 0; i < 100; ++i) {
        assert_int_equal(spawn_ball(w, (float)i * 0.5f - 25.0f, &id), SIM_OK);
    }
    assert_true(c.allocs == allocs);
    // Reserving less than there is room for changes nothing.
    world_state before = state_of(w);
    want.bodies = 10;
    assert_int_equal(sim_world_reserve(w, &want), SIM_OK);
    assert_unchanged(w, &before);
    // Past a limit: refused, nothing grows.
    want.bodies = 201;
    assert_int_equal(sim_world_reserve(w, &want), SIM_E_CAPACITY);
    assert_unchanged(w, &before);
    // Growth stops at the limit: 100 bodies reserved, 150 asked, 200 (the
    // limit, not 2 × 100 + ...) at most.
    want.bodies = 150;
    assert_int_equal(sim_world_reserve(w, &want), SIM_OK);
    assert_int_equal(sim_world_reserved(w).bodies, 200);
    assert_true(sim_world_reserved_bytes(w) == c.live);
    assert_int_equal(sim_world_reserve(NULL, &want), SIM_E_INVALID_ARG);
    sim_world_destroy(w);
    assert_true(c.live == 0);
}

// ---------------------------------------------------------------------------
// A refused growth leaves the world unchanged and usable
// ---------------------------------------------------------------------------

static void test_capacity_failed_growth_leaves_the_world_unchanged(void** state) {
    (void)state;
    // Creation: whichever allocation fails, nothing is left behind.
    counter c;
    sim_world_def def = counted_def(&c);
    sim_world* w = NULL;
    for (long n = 0; n < 80; ++n) {
        c.allow = n;
        int rc = sim_world_create(&def, &w);
        if (rc == SIM_OK) {
            // The world and its 64 arrays (world.c's table): 65 allocations.
            assert_int_equal(n, 65);
            break;
        }
        assert_int_equal(rc, SIM_E_NOMEM);
        assert_true(c.live == 0);
    }
    assert_non_null(w);
    c.allow = -1;

    // A ragdoll, then a 24 × 16 cloth, which needs the 17 particle arrays
    // (the soft bodies' 3 among them), the constraints, the cloth blocks and
    // their staging to grow (20
    // allocations; the entity arrays have
    // room for 8 entities from the first spawn).
    sim_entity_id id;
    sim_ragdoll_def rd = sim_ragdoll_def_default();
    assert_int_equal(sim_world_spawn_ragdoll(w, &rd, &id), SIM_OK);
    sim_world_step(w);
    sim_cloth_def cl = sim_cloth_def_default();
    cl.cols = 24;
    cl.rows = 16;
    cl.spacing = 0.085f;
    cl.origin = (sim_vec3){-1.0f, 3.4f, -2.2f};
    for (long n = 0;; ++n) {
        world_state before = state_of(w);
        size_t live = c.live;
        c.allow = n;
        int rc = sim_world_spawn_cloth(w, &cl, &id);
        c.allow = -1;
        if (rc == SIM_OK) {
            assert_int_equal(n, 20);
            break;
        }
        assert_int_equal(rc, SIM_E_NOMEM);
        assert_unchanged(w, &before);
        assert_true(c.live == live);
        // Usable: it steps, and a spawn that needs no growth succeeds.
        sim_world_step(w);
        sim_entity_id small;
        assert_int_equal(spawn_rope(w, 2, &small), SIM_OK);
        assert_int_equal(sim_world_despawn(w, small), SIM_OK);
    }
    // A humanoid in a world without bodies: the 16 arrays sized by bodies
    // (states, infos, characters' bones, both bounds, grid, pairs, contacts; the islands'
    // closing speeds, sleep states, 4 indices, islands and pairs) and the
    // 2 sized by rigid joints grow together, with what the world reports
    // (impacts, and its joints' limit tracks: world.h sim__reports) made
    // at its first room for a body (20 allocations).
    for (long n = 0;; ++n) {
        world_state before = state_of(w);
        c.allow = n;
        int rc = spawn_humanoid(w, 0.0f, 2.0f, &id);
        c.allow = -1;
        if (rc == SIM_OK) {
            assert_int_equal(n, 20);
            break;
        }
        assert_int_equal(rc, SIM_E_NOMEM);
        assert_unchanged(w, &before);
    }
    assert_true(sim_world_reserved_bytes(w) == c.live);
    for (int t = 0; t < 30; ++t) {
        sim_world_step(w);
    }
    assert_true(sim_world_is_finite(w));
    sim_world_destroy(w);
    assert_true(c.live == 0);
}

// A small scene, one spawn at a time: a ragdoll, a rope, a sheet, a
// humanoid and a ball dropped on it.
static int scene_step(sim_world* w, int i, sim_entity_id* id) {
    switch (i) {
    case 0: {
        sim_ragdoll_def rd = sim_ragdoll_def_default();
        rd.position = (sim_vec3){0.0f, 3.0f, 0.0f};
        return sim_world_spawn_ragdoll(w, &rd, id);
    }
    case 1:
        return spawn_rope(w, 20, id);
    case 2: {
        sim_cloth_def cl = sim_cloth_def_default();
        cl.cols = 24;
        cl.rows = 16;
        cl.spacing = 0.085f;
        cl.origin = (sim_vec3){-1.0f, 3.4f, -2.2f};
        return sim_world_spawn_cloth(w, &cl, id);
    }
    case 3:
        return spawn_humanoid(w, 0.5f, 1.0f, id);
    default: {
        sim_ball_def bd = sim_ball_def_default();
        bd.position = (sim_vec3){0.5f, 4.0f, 1.0f};
        return sim_world_spawn_ball(w, &bd, id);
    }
    }
}

// A refused growth is invisible: a world refused memory on the way steps to
// the very state of one that never was.
static void test_capacity_failed_growth_changes_no_result(void** state) {
    (void)state;
    counter c1, c2;
    sim_world_def d1 = counted_def(&c1), d2 = counted_def(&c2);
    sim_world* a = make_world(&d1);
    sim_world* b = make_world(&d2);
    sim_entity_id id;
    int refused = 0;
    for (int i = 0; i < 5; ++i) {
        assert_int_equal(scene_step(a, i, &id), SIM_OK);
        sim_world_step(a);
        // b: allowed 0, 1, 2, ... allocations until the spawn goes.
        for (long k = 0;; ++k) {
            c2.allow = k;
            int rc = scene_step(b, i, &id);
            c2.allow = -1;
            if (rc == SIM_OK) {
                break;
            }
            assert_int_equal(rc, SIM_E_NOMEM);
            refused++;
        }
        sim_world_step(b);
    }
    assert_true(refused >= 9 + 17); // at least the sheet's and the humanoid's
    for (int t = 0; t < 60; ++t) {
        sim_world_step(a);
        sim_world_step(b);
    }
    assert_true(sim_world_hash(a) == sim_world_hash(b));
    sim_world_destroy(a);
    sim_world_destroy(b);
}

// ---------------------------------------------------------------------------
// The rain: 300 humanoids in one world
// ---------------------------------------------------------------------------

static void test_capacity_300_humanoids_fit_when_the_limits_allow(void** state) {
    (void)state;
    // The default limits hold 2048 bodies: 128 humanoids, not 129.
    sim_world_def def = sim_world_def_default();
    def.library = g_lib;
    def.max_solver_work = 0;
    sim_world* w = make_world(&def);
    sim_entity_id id;
    for (int i = 0; i < 128; ++i) {
        assert_int_equal(spawn_humanoid(w, (float)(i % 16) * 1.5f, (float)(i / 16) * 1.5f, &id),
                         SIM_OK);
    }
    world_state before = state_of(w);
    assert_int_equal(spawn_humanoid(w, -5.0f, -5.0f, &id), SIM_E_CAPACITY);
    assert_unchanged(w, &before);
    sim_world_destroy(w);

    // Limits for 300 × 16 = 4800 bodies and 300 × 15 = 4500 joints.
    def.max_entities = 300;
    def.max_bodies = 4800;
    def.max_joints = 4500;
    def.max_contacts = 24 * 4800;
    w = make_world(&def);
    for (int i = 0; i < 300; ++i) {
        assert_int_equal(
            spawn_humanoid(w, (float)(i % 20) * 1.5f - 15.0f, (float)(i / 20) * 1.5f - 11.0f, &id),
            SIM_OK);
    }
    sim_counts held = sim_world_counts(w);
    assert_int_equal(held.entities, 300);
    assert_int_equal(held.bodies, 4800);
    assert_int_equal(held.joints, 4500);
    before = state_of(w);
    assert_int_equal(spawn_ball(w, 0.0f, &id), SIM_E_CAPACITY); // entity 301
    assert_unchanged(w, &before);
    for (int t = 0; t < 3; ++t) {
        sim_world_step(w);
    }
    assert_true(sim_world_is_finite(w));
    sim_overflows o = sim_world_overflows(w);
    assert_true(o.grid_entries == 0 && o.pairs == 0 && o.contacts == 0);
    assert_true(sim_world_reserved_bytes(w) <= sim_world_def_max_bytes(&def));
    sim_world_destroy(w);
}

static int setup(void** state) {
    (void)state;
    g_lib = rd_test_shipped_library();
    if (g_lib == NULL) {
        return -1;
    }
    return 0;
}

static int teardown(void** state) {
    (void)state;
    sim_library_destroy(g_lib);
    return 0;
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_capacity_def_counts_agree_with_spawns),
        cmocka_unit_test(test_capacity_def_counts_refuse_what_the_spawn_refuses),
        cmocka_unit_test(test_capacity_small_limits_refuse_the_spawn_past_them),
        cmocka_unit_test(test_capacity_limits_are_checked_at_creation),
        cmocka_unit_test(test_capacity_memory_starts_small_and_follows_what_a_world_holds),
        cmocka_unit_test(test_capacity_reserve_grows_ahead_and_refuses_past_the_limits),
        cmocka_unit_test(test_capacity_failed_growth_leaves_the_world_unchanged),
        cmocka_unit_test(test_capacity_failed_growth_changes_no_result),
        cmocka_unit_test(test_capacity_300_humanoids_fit_when_the_limits_allow),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
