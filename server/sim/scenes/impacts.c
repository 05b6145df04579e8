/*
 * impacts.c: the robustness scenes of impacts.h. The numbers here are
 * scene design (where things start, how fast they go); the figures are
 * measured on the public API after every tick: joint gaps and limit
 * excesses by sim_character_probe_joints(), speeds by
 * sim_character_get_pose().
 */
#include "impacts.h"

#include "quat.h"

#include <string.h>

#define MAX_RAGDOLLS 20
#define NONE         UINT32_MAX

typedef struct run {
    sim_world* w;
    const sim_skeleton_def* sk;
    sim_entity_id ids[MAX_RAGDOLLS];
    uint32_t n;
    uint32_t tick;
    uint32_t late_from;                 ///< Ticks after this count for gap_late.
    uint32_t last_moving[MAX_RAGDOLLS]; ///< Last tick a bone was at or over the rest speed.
    bool resting_now[MAX_RAGDOLLS];     ///< All bones under the rest speed at this tick.
    sim_bone_pose pose[SIM_MAX_BONES];  ///< The last ragdoll measured.
    sim_impact_figures* f;
    sim_char_solver chars; ///< The humanoids' solver.
} run;

static uint32_t next(uint32_t* s) {
    *s = *s * 1664525u + 1013904223u;
    return *s;
}

// Uniform in [0, 1).
static float rnd(uint32_t* s) {
    return (float)(next(s) >> 8) / 16777216.0f;
}

static int begin(run* r, const sim_library* lib, sim_solver solver, sim_char_solver chars,
                 sim_impact_figures* out) {
    memset(r, 0, sizeof *r);
    r->chars = chars;
    memset(out, 0, sizeof *out);
    out->finite = true;
    r->f = out;
    r->sk = sim_library_skeleton(lib, "humanoid");
    if (r->sk == NULL || r->sk->bone_count > SIM_MAX_BONES) {
        return SIM_E_UNKNOWN_NAME;
    }
    // The server's world def (app__world_def): 60 Hz, one substep, the
    // rigid bodies' own at least 4, the default solver budget.
    sim_world_def def = sim_world_def_default();
    def.library = lib;
    def.solver = solver;
    if (chars == SIM_CHAR_SOLVER_REDUCED) {
        // Twenty reduced humanoids are over the default solver budget
        // (sim_counts.artic_links): the scene measures them regardless.
        def.max_solver_work = 0;
    }
    return sim_world_create(&def, &r->w);
}

static void end(run* r) {
    sim_impact_figures* f = r->f;
    f->ragdolls = r->n;
    uint32_t slowest = 0;
    for (uint32_t k = 0; k < r->n; ++k) {
        slowest = r->last_moving[k] > slowest ? r->last_moving[k] : slowest;
        f->at_rest += r->resting_now[k];
    }
    f->rest_time = (float)slowest * sim_world_dt(r->w);
    sim_world_destroy(r->w);
}

// A standing humanoid at `at` facing `yaw`, killed at once with no impulse.
static int spawn_limp(run* r, sim_vec3 at, float yaw) {
    sim_character_def cd = sim_character_def_default();
    cd.position = at;
    cd.facing = yaw;
    cd.solver = r->chars;
    sim_entity_id id;
    int rc = sim_world_spawn_character(r->w, &cd, &id);
    if (rc == SIM_OK) {
        rc = sim_character_kill(r->w, id, v3_add(at, v3(0.0f, 1.0f, 0.0f)), v3(0.0f, 0.0f, 0.0f),
                                NULL);
    }
    if (rc == SIM_OK) {
        r->ids[r->n++] = id;
    }
    return rc;
}

// Sets a ragdoll moving as one rigid body: centre-of-mass velocity v and
// spin omega about the centre of mass, by an impulse m·(v + ω × (x - c)
// - v_now) at each bone's centre.
static int throw_once(run* r, sim_entity_id id, sim_vec3 v, sim_vec3 omega) {
    sim_vec3 vel[SIM_MAX_BONES];
    int n = sim_character_get_pose(r->w, id, r->pose, vel, NULL, SIM_MAX_BONES);
    if (n < 0) {
        return n;
    }
    sim_vec3 com = v3(0.0f, 0.0f, 0.0f);
    float mass = 0.0f;
    for (int i = 0; i < n; ++i) {
        com = v3_add(com, v3_scale(r->pose[i].p, r->sk->bones[i].mass));
        mass += r->sk->bones[i].mass;
    }
    com = v3_scale(com, 1.0f / mass);
    for (int i = 0; i < n; ++i) {
        sim_vec3 want = v3_add(v, v3_cross(omega, v3_sub(r->pose[i].p, com)));
        sim_vec3 j = v3_scale(v3_sub(want, vel[i]), r->sk->bones[i].mass);
        int rc = sim_character_apply_impulse(r->w, id, (uint32_t)i, r->pose[i].p, j);
        if (rc != SIM_OK) {
            return rc;
        }
    }
    return SIM_OK;
}

// A REDUCED ragdoll's bones are not free: an impulse at one moves the
// others, so the impulses are given again from the velocities they left,
// Gauss-Seidel, until the motion is rigid (a MAXIMAL ragdoll's after one).
static int throw_ragdoll(run* r, sim_entity_id id, sim_vec3 v, sim_vec3 omega) {
    const int sweeps = r->chars == SIM_CHAR_SOLVER_REDUCED ? 30 : 1;
    for (int sweep = 0; sweep < sweeps; ++sweep) {
        int rc = throw_once(r, id, v, omega);
        if (rc != SIM_OK) {
            return rc;
        }
    }
    return SIM_OK;
}

// Steps once and measures every ragdoll. Leaves the last one's pose in
// r->pose.
static void step_and_measure(run* r) {
    sim_world_step(r->w);
    r->tick++;
    sim_impact_figures* f = r->f;
    for (uint32_t k = 0; k < r->n; ++k) {
        sim_vec3 v[SIM_MAX_BONES], om[SIM_MAX_BONES];
        sim_joint_probe jp[SIM_MAX_BONES];
        int n = sim_character_get_pose(r->w, r->ids[k], r->pose, v, om, SIM_MAX_BONES);
        if (n < 0 || sim_character_probe_joints(r->w, r->ids[k], jp, SIM_MAX_BONES) != n) {
            // Removed as unstable: never at rest again.
            f->finite = false;
            r->last_moving[k] = r->tick;
            r->resting_now[k] = false;
            continue;
        }
        bool moving = false;
        if (k == 0) {
            f->final_speed = 0.0f;
            f->gap_end = 0.0f;
        }
        for (int i = 0; i < n; ++i) {
            if (!sim_vec3_is_finite(r->pose[i].p) || !sim_vec3_is_finite(v[i]) ||
                !sim_vec3_is_finite(om[i]) || !sim_is_finite(jp[i].gap)) {
                f->finite = false;
            }
            float speed = v3_len(v[i]);
            f->speed_max = fmaxf(f->speed_max, speed);
            f->omega_max = fmaxf(f->omega_max, v3_len(om[i]));
            moving |= !(speed < SIM_IMPACT_REST_SPEED);
            f->final_speed = fmaxf(f->final_speed, speed);
            f->gap_end = fmaxf(f->gap_end, jp[i].gap);
            if (jp[i].gap > f->gap_max) {
                f->gap_max = jp[i].gap;
                f->gap_max_tick = r->tick;
                f->gap_max_bone = (uint32_t)i;
            }
            if (r->tick > r->late_from) {
                f->gap_late = fmaxf(f->gap_late, jp[i].gap);
            }
            if (r->sk->bones[i].joint == SIM_JOINT_HINGE) {
                f->hinge_over = fmaxf(f->hinge_over, jp[i].twist_over);
            } else if (r->sk->bones[i].joint == SIM_JOINT_BALL && i > 0) {
                f->ball_over = fmaxf(f->ball_over, fmaxf(jp[i].twist_over, jp[i].swing_over));
            }
        }
        if (moving) {
            r->last_moving[k] = r->tick;
        }
        r->resting_now[k] = !moving;
    }
}

// ---------------------------------------------------------------------------
// Stairs
// ---------------------------------------------------------------------------

#define STEPS      10
#define STEP_DEPTH 0.5f
#define STEP_RISE  0.2f
#define STAIR_HALF 7.0f // Half the width, m.

int sim_impact_stairs(const sim_library* lib, sim_solver solver, sim_char_solver chars, float speed,
                      uint32_t seed, uint32_t count, float seconds, sim_impact_figures* out) {
    run r;
    int rc = begin(&r, lib, solver, chars, out);
    if (rc != SIM_OK) {
        return rc;
    }
    if (count > MAX_RAGDOLLS) {
        rc = SIM_E_OUT_OF_RANGE;
    }
    // Step k: a block from the ground to (k + 1) rises, k depths along +Z.
    for (int k = 0; k < STEPS && rc == SIM_OK; ++k) {
        float hy = 0.5f * STEP_RISE * (float)(k + 1);
        sim_box b = {v3(0.0f, hy, STEP_DEPTH * ((float)k + 0.5f)),
                     v3(STAIR_HALF, hy, 0.5f * STEP_DEPTH)};
        rc = sim_world_add_box(r.w, b);
    }
    uint32_t s = seed * 2654435761u + 12345u;
    const sim_vec3 dir = v3_normalize(v3(0.0f, -1.0f, 0.4f));
    // A 5 × 4 grid over the flight, 2.8 m apart across and 1.25 m along.
    for (uint32_t i = 0; i < count && rc == SIM_OK; ++i) {
        float x = -5.6f + 2.8f * (float)(i % 5) + 0.3f * (rnd(&s) - 0.5f);
        float z = 0.75f + 1.25f * (float)(i / 5) + 0.3f * (rnd(&s) - 0.5f);
        // Clear of the highest step the feet can be over at any yaw.
        int k = (int)((z + 0.3f) / STEP_DEPTH);
        k = k < STEPS ? k : STEPS - 1;
        float y = STEP_RISE * (float)(k + 1) + 0.3f + 0.2f * rnd(&s);
        rc = spawn_limp(&r, v3(x, y, z), 6.2831853f * rnd(&s));
        sim_vec3 axis = v3_normalize(v3(rnd(&s) - 0.5f, rnd(&s) - 0.5f, rnd(&s) - 0.5f));
        float spin = 2.0f + 6.0f * rnd(&s);
        if (rc == SIM_OK) {
            rc = throw_ragdoll(&r, r.ids[r.n - 1], v3_scale(dir, speed), v3_scale(axis, spin));
        }
    }
    if (rc != SIM_OK) {
        sim_world_destroy(r.w);
        return rc;
    }
    const float dt = sim_world_dt(r.w);
    r.late_from = (uint32_t)(1.0f / dt + 0.5f);
    uint32_t ticks = (uint32_t)(seconds / dt + 0.5f);
    while (r.tick < ticks) {
        step_and_measure(&r);
    }
    end(&r);
    return SIM_OK;
}

// ---------------------------------------------------------------------------
// A foot on a box edge
// ---------------------------------------------------------------------------

// Signed distance from p to a box (negative inside), m.
static float box_distance(const sim_box* b, sim_vec3 p) {
    sim_vec3 d = v3(fabsf(p.x - b->center.x) - b->half_extents.x,
                    fabsf(p.y - b->center.y) - b->half_extents.y,
                    fabsf(p.z - b->center.z) - b->half_extents.z);
    sim_vec3 o = v3(fmaxf(d.x, 0.0f), fmaxf(d.y, 0.0f), fmaxf(d.z, 0.0f));
    return v3_len(o) + fminf(fmaxf(d.x, fmaxf(d.y, d.z)), 0.0f);
}

// Least signed distance from the segment a-b to a box, m. The distance to
// a convex set is convex along a line, so a ternary search finds it.
static float segment_box_distance(const sim_box* box, sim_vec3 a, sim_vec3 b) {
    float lo = 0.0f, hi = 1.0f;
    sim_vec3 d = v3_sub(b, a);
    for (int it = 0; it < 60; ++it) {
        float m1 = lo + (hi - lo) / 3.0f, m2 = hi - (hi - lo) / 3.0f;
        float f1 = box_distance(box, v3_add(a, v3_scale(d, m1)));
        float f2 = box_distance(box, v3_add(a, v3_scale(d, m2)));
        if (f1 < f2) {
            hi = m2;
        } else {
            lo = m1;
        }
    }
    float t = 0.5f * (lo + hi);
    float best = box_distance(box, v3_add(a, v3_scale(d, t)));
    return fminf(best, fminf(box_distance(box, a), box_distance(box, b)));
}

static int bone_named(const sim_skeleton_def* sk, const char* name) {
    for (uint32_t i = 0; i < sk->bone_count; ++i) {
        if (strncmp(sk->bones[i].name, name, SIM_NAME_MAX) == 0) {
            return (int)i;
        }
    }
    return -1;
}

static float bone_length(const sim_bone_def* b) {
    return v3_len(v3_sub(b->tail, b->head));
}

int sim_impact_foot_on_edge(const sim_library* lib, sim_solver solver, sim_char_solver chars,
                            float height, float after, sim_impact_figures* out) {
    run r;
    int rc = begin(&r, lib, solver, chars, out);
    if (rc != SIM_OK) {
        return rc;
    }
    const sim_skeleton_def* sk = r.sk;
    int foot = bone_named(sk, "foot_l");
    if (foot < 0) {
        sim_world_destroy(r.w);
        return SIM_E_UNKNOWN_NAME;
    }
    // The leg: the foot and its ancestors below the root.
    for (int i = foot; i > 0; i = sk->bones[i].parent) {
        out->limb_length += bone_length(&sk->bones[i]);
    }
    const float top = 1.0f;
    rc = spawn_limp(&r, v3(0.0f, top + height, 0.0f), 0.0f);
    if (rc == SIM_OK) {
        rc = sim_character_get_pose(r.w, r.ids[0], r.pose, NULL, NULL, SIM_MAX_BONES) < 0
                 ? SIM_E_STALE_ID
                 : SIM_OK;
    }
    // The box's -X edge runs 0.1 m inside the left foot's centre line
    // (under the left leg, clear of the right), and its -Z edge under the
    // middle of the foot: the toes land on the box, the heel over the drop.
    sim_vec3 fc = r.pose[foot].p;
    sim_box box = {v3(fc.x + 0.4f, 0.5f * top, fc.z + 0.5f), v3(0.5f, 0.5f * top, 0.5f)};
    if (rc == SIM_OK) {
        rc = sim_world_add_box(r.w, box);
    }
    if (rc != SIM_OK) {
        sim_world_destroy(r.w);
        return rc;
    }
    const float dt = sim_world_dt(r.w);
    // Free fall from `height` takes √(2h/g); give it twice that to land.
    uint32_t fall_max = (uint32_t)(2.0f * sqrtf(2.0f * height / 9.81f) / dt) + 60u;
    uint32_t impact = NONE, end_tick = NONE;
    r.late_from = NONE;
    out->box_depth = 0.0f;
    while ((impact == NONE && r.tick < fall_max) || (impact != NONE && r.tick < end_tick)) {
        step_and_measure(&r);
        if (!out->finite) {
            break;
        }
        for (uint32_t i = 0; i < sk->bone_count; ++i) {
            float half = 0.5f * bone_length(&sk->bones[i]);
            sim_vec3 x = q_rotate(r.pose[i].q, v3(half, 0.0f, 0.0f));
            float d = segment_box_distance(&box, v3_sub(r.pose[i].p, x), v3_add(r.pose[i].p, x));
            if (sk->bones[i].radius - d > out->box_depth) {
                out->box_depth = sk->bones[i].radius - d;
                out->box_axis_depth = fmaxf(0.0f, -d);
                out->box_depth_bone = i;
                out->box_depth_tick = r.tick;
            }
            out->through_box |= -d > sk->bones[i].radius;
            if (impact == NONE && d - sk->bones[i].radius < 0.01f) {
                impact = r.tick;
                end_tick = impact + (uint32_t)(after / dt + 0.5f);
                r.late_from = impact + (uint32_t)(1.0f / dt + 0.5f);
                out->impact_tick = impact;
            }
        }
    }
    end(&r);
    return impact == NONE ? SIM_E_BAD_STATE : SIM_OK;
}

// ---------------------------------------------------------------------------
// A sphere into the chest
// ---------------------------------------------------------------------------

int sim_impact_sphere(const sim_library* lib, sim_solver solver, sim_char_solver chars,
                      float radius, float mass, float speed, float seconds,
                      sim_impact_figures* out) {
    run r;
    int rc = begin(&r, lib, solver, chars, out);
    if (rc != SIM_OK) {
        return rc;
    }
    int chest = bone_named(r.sk, "chest");
    rc = chest < 0 ? SIM_E_UNKNOWN_NAME : spawn_limp(&r, v3(0.0f, 0.0f, 0.0f), 0.0f);
    if (rc == SIM_OK &&
        sim_character_get_pose(r.w, r.ids[0], r.pose, NULL, NULL, SIM_MAX_BONES) < 0) {
        rc = SIM_E_STALE_ID;
    }
    sim_entity_id ball = {0, 0};
    if (rc == SIM_OK) {
        // It faces +Z: the sphere comes from 1 m in front of the chest.
        sim_ball_def bd = sim_ball_def_default();
        bd.radius = radius;
        bd.mass = mass;
        bd.position =
            v3_add(r.pose[chest].p, v3(0.0f, 0.0f, r.sk->bones[chest].radius + radius + 1.0f));
        bd.velocity = v3(0.0f, 0.0f, -speed);
        rc = sim_world_spawn_ball(r.w, &bd, &ball);
    }
    if (rc != SIM_OK) {
        sim_world_destroy(r.w);
        return rc;
    }
    const float dt = sim_world_dt(r.w);
    uint32_t ticks = (uint32_t)(seconds / dt + 0.5f);
    out->impact_tick = NONE;
    r.late_from = NONE;
    while (r.tick < ticks) {
        step_and_measure(&r);
        sim_vec3 v;
        if (out->impact_tick == NONE && sim_ball_get(r.w, ball, NULL, &v, NULL) == SIM_OK &&
            v3_len(v) < 0.99f * speed) {
            out->impact_tick = r.tick;
            r.late_from = r.tick + (uint32_t)(1.0f / dt + 0.5f);
        }
    }
    end(&r);
    return out->impact_tick == NONE ? SIM_E_BAD_STATE : SIM_OK;
}
