/*
 * character.c: characters (skeletons of rigid bones) and balls.
 *
 * A character is one entity: a body per bone, in skeleton order, and a
 * joint per non-root bone. Its state machine (seed 000 §4-5, seed 004):
 *
 *   ANIMATED ──kill──► RAGDOLL ──start_getup──► GETTING_UP ──blend done──► ANIMATED
 *      │  ▲                ▲                                 (getup clip, then idle)
 *      ▼  │set_partial []  │kill
 *    PARTIAL ──────────────┘
 *
 * Animated bones are kinematic: each tick they are given the velocities
 * that carry them to the clip's next pose, so they push what they hit (Jolt
 * keyframed bodies) and a kill inherits that motion without a pop. At the end
 * of the tick they are set exactly on the pose, so integration never drifts.
 *
 * Drives (active ragdoll): each joint of a dynamic bone can pull toward the
 * clip's pose with gains that ramp linearly (joint.c solves them).
 */
#include "rigid.h"
#include "sim_articulation.h"
#include "world.h"

#include <string.h>

#define SIM__CHAR_COOKIE 0x43484152u /* "CHAR" */
#define SIM__BALL_COOKIE 0x42414c4cu /* "BALL" */
// Passive friction of every joint, as a fraction of the torque the child
// bone's weight makes about the joint when the bone is horizontal.
#define SIM__JOINT_FRICTION 0.05f

const char* sim_char_state_name(sim_char_state s) {
    switch (s) {
    case SIM_CHAR_ANIMATED:
        return "animated";
    case SIM_CHAR_RAGDOLL:
        return "ragdoll";
    case SIM_CHAR_GETTING_UP:
        return "getting_up";
    case SIM_CHAR_PARTIAL:
        return "partial";
    }
    return "unknown";
}

sim_character_def sim_character_def_default(void) {
    sim_character_def d;
    memset(&d, 0, sizeof d);
    d.skeleton = "humanoid";
    d.clip = "idle";
    d.cookie = SIM__CHAR_COOKIE;
    return d;
}

sim_ball_def sim_ball_def_default(void) {
    sim_ball_def d;
    memset(&d, 0, sizeof d);
    d.position = v3(0.0f, 1.0f, 0.0f);
    d.radius = 0.2f;
    d.mass = 5.0f;
    d.cookie = SIM__BALL_COOKIE;
    return d;
}

static sim__char* char_of(const sim_world* w, sim_entity_id id, sim__entity** out) {
    sim__entity* e = sim__entity_get(w, id);
    if (e == NULL || e->kind != SIM_ENTITY_CHARACTER) {
        return NULL;
    }
    if (out != NULL) {
        *out = e;
    }
    return &w->chars[id.index1 - 1];
}

static void set_state(sim_world* w, sim_entity_id id, sim__char* ch, sim_char_state s) {
    if (ch->state == s) {
        return;
    }
    ch->state = s;
    // Commands land between ticks and in-step changes before the tick
    // count moves: either way the next tick is the first to show it.
    sim__push_event(w, SIM_EVENT_CHARACTER_STATE, id, s, w->tick + 1);
}

// Makes a bone dynamic (true) or kinematic (false).
static void set_dynamic(sim__body* b, const sim__body_info* bi, bool dynamic) {
    b->inv_mass = dynamic ? 1.0f / bi->mass : 0.0f;
    b->inv_inertia = dynamic ? v3(1.0f / bi->inertia.x, 1.0f / bi->inertia.y, 1.0f / bi->inertia.z)
                             : v3(0.0f, 0.0f, 0.0f);
    sim__body_update_inertia(b);
}

static bool bone_dynamic(const sim__char* ch, uint32_t bone) {
    if (ch->artic != NULL) {
        return false; // REDUCED: its bones follow the articulation (reduced.c)
    }
    switch (ch->state) {
    case SIM_CHAR_RAGDOLL:
        return bone != 0 || !ch->sk->def.fixed_base;
    case SIM_CHAR_PARTIAL:
        return sim__bones_has(&ch->partial, bone);
    default:
        return false;
    }
}

// The clip's pose at time t, in the world.
static void clip_pose(const sim__char* ch, float t, sim_vec3* x, sim_quat* q, sim_quat* local) {
    sim_vec3 rp;
    sim_quat rq;
    sim__clip_sample(ch->sk, ch->clip, t, &rp, &rq, local);
    sim__skel_pose(ch->sk, ch->origin, ch->yaw, rp, rq, local, x, q);
}

// The clip's pose at the character's time as its bones' targets (bs: its
// bones' state, w->bone[e->b_first]).
static void clip_targets(const sim__char* ch, sim__bone* bs, sim_quat* local) {
    sim_vec3 x[SIM_MAX_BONES];
    sim_quat q[SIM_MAX_BONES];
    clip_pose(ch, ch->t, x, q, local);
    for (uint32_t i = 0; i < ch->sk->def.bone_count; ++i) {
        bs[i].target_x = x[i];
        bs[i].target_q = q[i];
    }
}

// Moves the character's origin by the clip's root displacement between two
// root positions, rotated by its yaw (root motion).
static void shift_origin(sim__char* ch, sim_vec3 from, sim_vec3 to, bool keep_height) {
    sim_vec3 d = v3_rotate_y(v3_sub(to, from), ch->yaw);
    if (keep_height) {
        d.y = 0.0f;
    }
    ch->origin = v3_add(ch->origin, d);
}

// Switches the clip, keeping the root where it is: the new clip's first
// root position lands where the current clip has the root now (its height
// included, so a get-up ending at standing height hands over to idle).
static void play(sim__char* ch, const sim__clip* next) {
    sim_vec3 now;
    sim_quat rq, local[SIM_MAX_BONES];
    sim__clip_sample(ch->sk, ch->clip, ch->t, &now, &rq, local);
    shift_origin(ch, next->root_pos[0], now, false);
    ch->clip = next;
    ch->t = 0.0f;
}

// Advances the clip by dt: looping clips carry their root motion over, and
// a finished one-shot clip hands over to idle.
static void advance_clip(sim__char* ch, float dt) {
    const sim__clip* c = ch->clip;
    ch->t += dt;
    if (c->duration <= 0.0f || ch->t < c->duration) {
        return;
    }
    if (c->loop) {
        while (ch->t >= c->duration) {
            ch->t -= c->duration;
            shift_origin(ch, c->root_pos[0], c->root_pos[c->key_count - 1], true);
        }
        return;
    }
    const sim__clip* idle = sim__skel_clip(ch->sk, "idle");
    if (idle != NULL && idle != c) {
        play(ch, idle);
    } else {
        ch->t = c->duration;
    }
}

// ---------------------------------------------------------------------------
// Spawning
// ---------------------------------------------------------------------------

int sim_world_spawn_character(sim_world* w, const sim_character_def* def, sim_entity_id* out) {
    if (def == NULL || out == NULL || def->cookie != SIM__CHAR_COOKIE || def->skeleton == NULL ||
        def->clip == NULL) {
        return SIM_E_INVALID_ARG;
    }
    if (!sim_vec3_is_finite(def->position) || !sim_is_finite(def->facing)) {
        return SIM_E_NOT_FINITE;
    }
    if (!sim_world_contains(w, def->position) || fabsf(def->facing) > 1000.0f) {
        return SIM_E_OUT_OF_RANGE;
    }
    if ((uint32_t)def->solver > SIM_CHAR_SOLVER_REDUCED ||
        (def->state != SIM_CHAR_ANIMATED && def->state != SIM_CHAR_RAGDOLL)) {
        return SIM_E_INVALID_ARG;
    }
    const sim__skel* sk = sim__library_skel(w->def.library, def->skeleton);
    const sim__clip* clip = sim__skel_clip(sk, def->clip);
    if (sk == NULL || clip == NULL) {
        return SIM_E_UNKNOWN_NAME;
    }
    const sim_char_solver solver = def->solver != SIM_CHAR_SOLVER_DEFAULT ? def->solver
                                   : sk->def.solver == SIM_CHAR_SOLVER_REDUCED
                                       ? SIM_CHAR_SOLVER_REDUCED
                                       : SIM_CHAR_SOLVER_MAXIMAL;
    const uint32_t n = sk->def.bone_count;
    sim__entity* e;
    int rc = sim__entity_begin(w, SIM_ENTITY_CHARACTER, 0, 0, 0, n, n - 1, out, &e);
    if (rc != SIM_OK) {
        return rc;
    }
    sim__char* ch = &w->chars[out->index1 - 1];
    memset(ch, 0, sizeof *ch);
    ch->sk = sk;
    ch->state = SIM_CHAR_ANIMATED;
    ch->origin = def->position;
    ch->yaw = def->facing;
    ch->clip = clip;
    sim_vec3 x[SIM_MAX_BONES];
    sim_quat q[SIM_MAX_BONES], local[SIM_MAX_BONES];
    clip_pose(ch, 0.0f, x, q, local);
    for (uint32_t i = 0; i < n; ++i) {
        sim__body* b = &w->body[e->b_first + i];
        sim__body_info* bi = &w->binfo[e->b_first + i];
        memset(b, 0, sizeof *b);
        b->x = b->x_prev = x[i];
        b->q = b->q_prev = q[i];
        bi->radius = sk->def.bones[i].radius;
        bi->half_len = sk->half_len[i];
        bi->mass = sk->mass[i];
        bi->inertia = sk->inertia[i];
        bi->slot = out->index1 - 1;
        bi->bone = i;
        set_dynamic(b, bi, false);
        sim__bone* bs = &w->bone[e->b_first + i];
        memset(bs, 0, sizeof *bs);
        bs->target_x = x[i];
        bs->target_q = q[i];
        bs->gains.kp = bs->gains.kp_from = bs->gains.kp_to = sk->def.drive_kp;
        bs->gains.kd = bs->gains.kd_from = bs->gains.kd_to = sk->def.drive_kd;
    }
    for (uint32_t i = 1; i < n; ++i) {
        sim__bjoint* j = &w->bjoint[e->bj_first + i - 1];
        memset(j, 0, sizeof *j);
        j->parent = (uint32_t)sk->def.bones[i].parent;
        j->child = i;
        j->anchor_p = sk->anchor_p[i];
        j->anchor_c = sk->anchor_c[i];
        j->frame_p = sk->frame_p[i];
        j->frame_c = sk->frame_c[i];
        j->kind = sk->def.bones[i].joint;
        if (j->kind == SIM_JOINT_FIXED) {
            j->swing1 = j->swing2 = j->twist_min = j->twist_max = 0.0f;
        } else if (j->kind == SIM_JOINT_HINGE) {
            j->swing1 = j->swing2 = 0.0f;
            j->twist_min = sk->def.bones[i].twist_min;
            j->twist_max = sk->def.bones[i].twist_max;
        } else {
            j->swing1 = sk->def.bones[i].swing1;
            j->swing2 = sk->def.bones[i].swing2;
            j->twist_min = sk->def.bones[i].twist_min;
            j->twist_max = sk->def.bones[i].twist_max;
        }
        sim__bjoint_limits(j);
        j->target = q_identity();
        // Passive joint friction: a small fraction of the torque the bone's
        // own weight makes about its joint, enough to stop slow swinging
        // without making a limp ragdoll stiff.
        float len = 2.0f * sk->half_len[i];
        float f = sk->def.bones[i].friction;
        j->friction = f < 0.0f ? SIM__JOINT_FRICTION * sk->mass[i] * 9.81f * len : f;
    }
    if (solver == SIM_CHAR_SOLVER_REDUCED) {
        rc = sim__work_fits_counts(w, &(sim_counts){.artic_links = n}) ? SIM_OK : SIM_E_CAPACITY;
        if (rc == SIM_OK) {
            rc = sim__reduced_create(w, out->index1 - 1);
        }
        if (rc != SIM_OK) {
            sim_world_despawn(w, *out);
            *out = (sim_entity_id){0, 0};
            return rc;
        }
    }
    if (def->state == SIM_CHAR_RAGDOLL) {
        // Limp from its first tick: killed by nothing, "hit" at its origin
        // (inside the world, checked above: its bones need not be).
        rc = sim_character_kill(w, *out, def->position, v3(0.0f, 0.0f, 0.0f), NULL);
        if (rc != SIM_OK) {
            sim_world_despawn(w, *out);
            *out = (sim_entity_id){0, 0};
            return rc;
        }
    }
    return SIM_OK;
}

int sim_world_spawn_ball(sim_world* w, const sim_ball_def* def, sim_entity_id* out) {
    if (def == NULL || out == NULL || def->cookie != SIM__BALL_COOKIE) {
        return SIM_E_INVALID_ARG;
    }
    if (!sim_vec3_is_finite(def->position) || !sim_vec3_is_finite(def->velocity) ||
        !sim_is_finite(def->radius) || !sim_is_finite(def->mass)) {
        return SIM_E_NOT_FINITE;
    }
    if (!sim_world_contains(w, def->position) || def->radius <= 0.0f || def->radius > 5.0f ||
        def->mass < SIM_MIN_MASS || def->mass > SIM_MAX_MASS || fabsf(def->velocity.x) > 1000.0f ||
        fabsf(def->velocity.y) > 1000.0f || fabsf(def->velocity.z) > 1000.0f) {
        return SIM_E_OUT_OF_RANGE;
    }
    sim__entity* e;
    int rc = sim__entity_begin(w, SIM_ENTITY_BALL, 0, 0, 0, 1, 0, out, &e);
    if (rc != SIM_OK) {
        return rc;
    }
    sim__body* b = &w->body[e->b_first];
    sim__body_info* bi = &w->binfo[e->b_first];
    memset(b, 0, sizeof *b);
    memset(bi, 0, sizeof *bi);
    b->x = b->x_prev = def->position;
    b->q = b->q_prev = q_identity();
    b->v = def->velocity;
    bi->radius = def->radius;
    bi->mass = def->mass;
    float I = 0.4f * def->mass * def->radius * def->radius;
    bi->inertia = v3(I, I, I);
    bi->slot = out->index1 - 1;
    set_dynamic(b, bi, true);
    return SIM_OK;
}

int sim_ball_get(const sim_world* w, sim_entity_id id, sim_bone_pose* pose, sim_vec3* v,
                 float* radius) {
    const sim__entity* e = sim__entity_get(w, id);
    if (e == NULL || e->kind != SIM_ENTITY_BALL) {
        return SIM_E_STALE_ID;
    }
    const sim__body* b = &w->body[e->b_first];
    if (pose != NULL) {
        pose->p = b->x;
        pose->q = b->q;
    }
    if (v != NULL) {
        *v = b->v;
    }
    if (radius != NULL) {
        *radius = w->binfo[e->b_first].radius;
    }
    return SIM_OK;
}

// ---------------------------------------------------------------------------
// Commands
// ---------------------------------------------------------------------------

static int check_impulse(const sim_world* w, sim_vec3 point, sim_vec3 impulse) {
    if (!sim_vec3_is_finite(point) || !sim_vec3_is_finite(impulse)) {
        return SIM_E_NOT_FINITE;
    }
    if (!sim_world_contains(w, point) || fabsf(impulse.x) > SIM_MAX_IMPULSE ||
        fabsf(impulse.y) > SIM_MAX_IMPULSE || fabsf(impulse.z) > SIM_MAX_IMPULSE) {
        return SIM_E_OUT_OF_RANGE;
    }
    return SIM_OK;
}

int sim_ball_apply_impulse(sim_world* w, sim_entity_id id, sim_vec3 impulse) {
    const sim__entity* e = sim__entity_get(w, id);
    if (e == NULL || e->kind != SIM_ENTITY_BALL) {
        return SIM_E_STALE_ID;
    }
    sim__body* b = &w->body[e->b_first];
    int rc = check_impulse(w, b->x, impulse);
    if (rc == SIM_OK) {
        sim__body_wake(w, e->b_first);
        sim__apply_impulse_at(b, v3(0.0f, 0.0f, 0.0f), impulse);
    }
    return rc;
}

// Kills character id with `impulse` at hit_point on bone `pick`, or on the
// bone whose centre is nearest the point when pick is SIM_NEAREST_BONE.
static int kill_character(sim_world* w, sim_entity_id id, uint32_t pick, sim_vec3 hit_point,
                          sim_vec3 impulse, uint32_t* bone) {
    sim__entity* e;
    sim__char* ch = char_of(w, id, &e);
    if (ch == NULL) {
        return SIM_E_STALE_ID;
    }
    if (pick != SIM_NEAREST_BONE && pick >= e->b_count) {
        return SIM_E_BAD_INDEX;
    }
    int rc = check_impulse(w, hit_point, impulse);
    if (rc != SIM_OK) {
        return rc;
    }
    sim__entity_wake(w, e);
    if (ch->artic != NULL) {
        // REDUCED: the articulation takes the pose and the velocities the
        // animation gave the bones (reduced.c).
        if (ch->state != SIM_CHAR_RAGDOLL) {
            sim__reduced_sync(w, id.index1 - 1);
        }
    } else {
        // Every bone turns dynamic with the velocity the animation gave it
        // (a fixed base's root stays kinematic).
        for (uint32_t i = 0; i < e->b_count; ++i) {
            set_dynamic(&w->body[e->b_first + i], &w->binfo[e->b_first + i],
                        i != 0 || !ch->sk->def.fixed_base);
        }
    }
    if (ch->state != SIM_CHAR_RAGDOLL) {
        // A fixed base holds the root where it is now (pre_tick's target).
        w->bone[e->b_first].snap_x = w->body[e->b_first].x;
        w->bone[e->b_first].snap_q = w->body[e->b_first].q;
    }
    set_state(w, id, ch, SIM_CHAR_RAGDOLL);
    // The impulse goes to the bone whose centre is nearest the hit (seed 000 §4).
    uint32_t best = pick;
    float best_d = 1e30f;
    for (uint32_t i = 0; pick == SIM_NEAREST_BONE && i < e->b_count; ++i) {
        float d = v3_len(v3_sub(w->body[e->b_first + i].x, hit_point));
        if (d < best_d) {
            best_d = d;
            best = i;
        }
    }
    sim__body* b = &w->body[e->b_first + best];
    if (ch->artic != NULL) {
        // Within the world a point is never 10 km from a bone
        // (sim_artic_apply_impulse()'s bound): this cannot fail on input
        // check_impulse() passed.
        (void)sim__reduced_impulse(w, id.index1 - 1, best, hit_point, impulse);
    } else {
        sim__apply_impulse_at(b, v3_sub(hit_point, b->x), impulse);
    }
    if (bone != NULL) {
        *bone = best;
    }
    return SIM_OK;
}

int sim_character_kill(sim_world* w, sim_entity_id id, sim_vec3 hit_point, sim_vec3 impulse,
                       uint32_t* bone) {
    return kill_character(w, id, SIM_NEAREST_BONE, hit_point, impulse, bone);
}

int sim_character_kill_bone(sim_world* w, sim_entity_id id, uint32_t bone, sim_vec3 hit_point,
                            sim_vec3 impulse) {
    return kill_character(w, id, bone, hit_point, impulse, NULL);
}

int sim_character_play(sim_world* w, sim_entity_id id, const char* clip) {
    sim__char* ch = char_of(w, id, NULL);
    if (ch == NULL) {
        return SIM_E_STALE_ID;
    }
    const sim__clip* next = clip != NULL ? sim__skel_clip(ch->sk, clip) : NULL;
    if (next == NULL) {
        return SIM_E_UNKNOWN_NAME;
    }
    if (ch->state == SIM_CHAR_GETTING_UP) {
        return SIM_E_BAD_STATE;
    }
    sim__entity_wake(w, &w->entities[id.index1 - 1]); // Its drives follow the new clip.
    play(ch, next);
    return SIM_OK;
}

float sim_pd_torque(float kp, float kd, float theta_target, float theta, float theta_dot) {
    return kp * (theta_target - theta) - kd * theta_dot;
}

int sim_character_apply_impulse(sim_world* w, sim_entity_id id, uint32_t bone, sim_vec3 point,
                                sim_vec3 impulse) {
    sim__entity* e;
    sim__char* ch = char_of(w, id, &e);
    if (ch == NULL) {
        return SIM_E_STALE_ID;
    }
    if (bone >= e->b_count) {
        return SIM_E_BAD_INDEX;
    }
    int rc = check_impulse(w, point, impulse);
    if (rc != SIM_OK) {
        return rc;
    }
    sim__entity_wake(w, e);
    sim__body* b = &w->body[e->b_first + bone];
    if (ch->artic != NULL && ch->state == SIM_CHAR_RAGDOLL) {
        return sim__reduced_impulse(w, id.index1 - 1, bone, point, impulse);
    }
    if (b->inv_mass > 0.0f) {
        sim__apply_impulse_at(b, v3_sub(point, b->x), impulse);
    }
    return SIM_OK;
}

// Heading (rad about +Y) of a horizontal direction (x, z).
static float heading(sim_vec3 d) {
    return atan2f(d.x, d.z);
}

int sim_character_start_getup(sim_world* w, sim_entity_id id, float blend_time,
                              const char** clip_out) {
    sim__entity* e;
    sim__char* ch = char_of(w, id, &e);
    if (ch == NULL) {
        return SIM_E_STALE_ID;
    }
    if (!sim_is_finite(blend_time)) {
        return SIM_E_NOT_FINITE;
    }
    if (blend_time < 0.0f || blend_time > 5.0f) {
        return SIM_E_OUT_OF_RANGE;
    }
    if (ch->state != SIM_CHAR_RAGDOLL) {
        return SIM_E_BAD_STATE;
    }
    sim__entity_wake(w, e); // Its bones leave the sleeping island.
    const sim__skel* sk = ch->sk;
    const uint32_t up = sk->def.up_bone;
    const sim__body* bodies = &w->body[e->b_first];
    // Face down when the up bone's front (+Z of the bind pose) points down.
    sim_quat rel = q_mul(bodies[up].q, q_conj(sk->bind_q[up]));
    bool face_down = q_rotate(rel, v3(0.0f, 0.0f, 1.0f)).y < 0.0f;
    const sim__clip* clip = sim__skel_clip(sk, face_down ? "getup_front" : "getup_back");
    if (clip == NULL) {
        // A skeleton without get-up clips (the dog) glides into its idle
        // pose instead, over at least a second.
        clip = sim__skel_clip(sk, "idle");
        blend_time = fmaxf(blend_time, 1.0f);
    }
    if (clip == NULL) {
        return SIM_E_UNKNOWN_NAME;
    }
    // Snapshot the pose the blend starts from.
    for (uint32_t i = 0; i < e->b_count; ++i) {
        w->bone[e->b_first + i].snap_x = bodies[i].x;
        w->bone[e->b_first + i].snap_q = bodies[i].q;
    }
    // Align the clip's first frame with the body on the ground: its root
    // lands on the ragdoll's root and its root-to-up-bone direction on the
    // ragdoll's, so the blend has little distance to cover.
    sim_vec3 x0[SIM_MAX_BONES];
    sim_quat q0[SIM_MAX_BONES], local[SIM_MAX_BONES];
    sim_vec3 rp;
    sim_quat rq;
    sim__clip_sample(sk, clip, 0.0f, &rp, &rq, local);
    sim__skel_pose(sk, v3(0.0f, 0.0f, 0.0f), 0.0f, rp, rq, local, x0, q0);
    sim_vec3 d_rag = v3_sub(bodies[up].x, bodies[0].x), d_clip = v3_sub(x0[up], x0[0]);
    ch->yaw = heading(d_rag) - heading(d_clip);
    ch->origin = v3_sub(bodies[0].x, v3_rotate_y(x0[0], ch->yaw));
    ch->clip = clip;
    ch->t = 0.0f;
    ch->blend_t = 0.0f;
    ch->blend_time = blend_time;
    for (uint32_t i = 0; i < e->b_count; ++i) {
        set_dynamic(&w->body[e->b_first + i], &w->binfo[e->b_first + i], false);
    }
    set_state(w, id, ch, SIM_CHAR_GETTING_UP);
    if (clip_out != NULL) {
        *clip_out = clip->name;
    }
    return SIM_OK;
}

int sim_character_set_drive(sim_world* w, sim_entity_id id, float kp, float kd,
                            const uint32_t* bones, uint32_t count, float ramp_time) {
    sim__entity* e;
    sim__char* ch = char_of(w, id, &e);
    if (ch == NULL) {
        return SIM_E_STALE_ID;
    }
    if (!sim_is_finite(kp) || !sim_is_finite(kd) || !sim_is_finite(ramp_time)) {
        return SIM_E_NOT_FINITE;
    }
    if (kp < 0.0f || kp > 1e5f || kd < 0.0f || kd > 1e5f || ramp_time < 0.0f || ramp_time > 60.0f) {
        return SIM_E_OUT_OF_RANGE;
    }
    sim__bones mask = {{0}};
    for (uint32_t k = 0; k < count; ++k) {
        if (bones[k] >= e->b_count) {
            return SIM_E_BAD_INDEX;
        }
        sim__bones_add(&mask, bones[k]);
    }
    sim__entity_wake(w, e); // Muscles move it.
    for (uint32_t i = 1; i < e->b_count; ++i) {
        if (count == 0 || sim__bones_has(&mask, i)) {
            sim__gains* g = &w->bone[e->b_first + i].gains;
            g->kp_from = g->kp;
            g->kd_from = g->kd;
            g->kp_to = kp;
            g->kd_to = kd;
            g->ramp = ramp_time;
            g->t = 0.0f;
        }
    }
    return SIM_OK;
}

int sim_character_set_partial(sim_world* w, sim_entity_id id, const uint32_t* bones,
                              uint32_t count) {
    sim__entity* e;
    sim__char* ch = char_of(w, id, &e);
    if (ch == NULL) {
        return SIM_E_STALE_ID;
    }
    if ((ch->state != SIM_CHAR_ANIMATED && ch->state != SIM_CHAR_PARTIAL) || ch->artic != NULL) {
        return SIM_E_BAD_STATE;
    }
    sim__bones mask = {{0}};
    for (uint32_t k = 0; k < count; ++k) {
        if (bones[k] >= e->b_count) {
            return SIM_E_BAD_INDEX;
        }
        sim__bones_add(&mask, bones[k]);
        sim__bones_merge(&mask, &ch->sk->children[bones[k]]);
    }
    if (ch->sk->def.fixed_base) {
        mask.w[0] &= ~1u; // its root stays bolted down
    }
    ch->partial = mask;
    for (uint32_t i = 0; i < e->b_count; ++i) {
        set_dynamic(&w->body[e->b_first + i], &w->binfo[e->b_first + i], sim__bones_has(&mask, i));
    }
    set_state(w, id, ch, sim__bones_empty(&mask) ? SIM_CHAR_ANIMATED : SIM_CHAR_PARTIAL);
    return SIM_OK;
}

// ---------------------------------------------------------------------------
// Ticking
// ---------------------------------------------------------------------------

// Advances the drives' ramps; true while one is still ramping (its gains
// change, so the character must not sleep through it).
static bool update_gains(sim__bone* bs, sim__bjoint* joints, uint32_t n, float dt) {
    bool ramping = false;
    for (uint32_t i = 1; i < n; ++i) {
        sim__gains* g = &bs[i].gains;
        const bool before = g->t < g->ramp && (g->kp != g->kp_to || g->kd != g->kd_to);
        g->t += dt;
        float u = g->ramp > 0.0f ? fminf(g->t / g->ramp, 1.0f) : 1.0f;
        g->kp = g->kp_from + (g->kp_to - g->kp_from) * u;
        g->kd = g->kd_from + (g->kd_to - g->kd_from) * u;
        joints[i - 1].kp = g->kp;
        joints[i - 1].kd = g->kd;
        ramping = ramping || before;
    }
    return ramping;
}

// Drive targets: the clip's relative rotation of each joint's frames,
// F_p⁻¹ · L · a · F_c (bind-relative local rotation a, bind L).
static void set_drive_targets(const sim__char* ch, sim__bjoint* joints, uint32_t n,
                              const sim_quat* local) {
    for (uint32_t i = 1; i < n; ++i) {
        sim__bjoint* j = &joints[i - 1];
        sim_quat lq = q_mul(ch->sk->local_q[i], local[i]);
        j->target = q_normalize(q_mul(q_mul(q_conj(j->frame_p), lq), j->frame_c));
    }
}

void sim__characters_pre_tick(sim_world* w, float dt) {
    for (uint32_t k = 0; k < w->order_count; ++k) {
        uint32_t slot = w->order[k];
        sim__entity* e = &w->entities[slot];
        if (e->kind != SIM_ENTITY_CHARACTER) {
            continue;
        }
        sim__char* ch = &w->chars[slot];
        sim_entity_id id = {slot + 1, e->generation};
        const uint32_t n = e->b_count;
        sim__body* bodies = &w->body[e->b_first];
        sim__bjoint* joints = &w->bjoint[e->bj_first];
        sim__bone* bs = &w->bone[e->b_first];
        advance_clip(ch, dt);
        sim_quat local[SIM_MAX_BONES];
        const bool reduced_ragdoll = ch->artic != NULL && ch->state == SIM_CHAR_RAGDOLL;
        if (update_gains(bs, joints, n, dt)) {
            // New gains move it: awake until they are reached (a reduced
            // ragdoll, which sleeps in reduced.c, too).
            sim__entity_wake(w, e);
        }
        if (ch->settled && !reduced_ragdoll) { // a REDUCED one sleeps in reduced.c
            // Asleep (a RAGDOLL: every bone dynamic, frozen): without a
            // drive nothing reads the animated pose until it wakes, and the
            // tick after that computes it again. A sleeping pile then costs
            // no forward kinematics.
            bool driven = false;
            for (uint32_t i = 1; i < n && !driven; ++i) {
                driven = joints[i - 1].kp > 0.0f;
            }
            if (!driven) {
                continue;
            }
            clip_targets(ch, bs, local);
            set_drive_targets(ch, joints, n, local);
            continue;
        }
        clip_targets(ch, bs, local);
        if (ch->state == SIM_CHAR_GETTING_UP) {
            ch->blend_t += dt;
            float a = ch->blend_time > 0.0f ? fminf(ch->blend_t / ch->blend_time, 1.0f) : 1.0f;
            for (uint32_t i = 0; i < n; ++i) {
                sim_vec3 d = v3_sub(bs[i].target_x, bs[i].snap_x);
                bs[i].target_x = v3_add(bs[i].snap_x, v3_scale(d, a));
                bs[i].target_q = q_slerp(bs[i].snap_q, bs[i].target_q, a);
            }
            if (a >= 1.0f) {
                set_state(w, id, ch, SIM_CHAR_ANIMATED);
            }
        }
        if (ch->state == SIM_CHAR_RAGDOLL && ch->sk->def.fixed_base) {
            bs[0].target_x = bs[0].snap_x; // held where it went limp
            bs[0].target_q = bs[0].snap_q;
        }
        set_drive_targets(ch, joints, n, local);
        if (reduced_ragdoll) {
            // The clip's pose was only the drives' target: the articulation
            // says where the bones go (reduced.c).
            sim__reduced_tick(w, slot, dt);
        }
        // Kinematic bones get the velocity that lands them on the pose.
        for (uint32_t i = 0; i < n; ++i) {
            sim__body* b = &bodies[i];
            if (bone_dynamic(ch, i)) {
                continue;
            }
            b->v = v3_scale(v3_sub(bs[i].target_x, b->x), 1.0f / dt);
            b->w = v3_scale(q_to_rotvec(q_mul(bs[i].target_q, q_conj(b->q))), 1.0f / dt);
        }
    }
}

void sim__characters_post_tick(sim_world* w) {
    for (uint32_t k = 0; k < w->order_count; ++k) {
        uint32_t slot = w->order[k];
        sim__entity* e = &w->entities[slot];
        if (e->kind != SIM_ENTITY_CHARACTER) {
            continue;
        }
        sim__char* ch = &w->chars[slot];
        sim__body* bodies = &w->body[e->b_first];
        for (uint32_t i = 0; i < e->b_count; ++i) {
            sim__body* b = &bodies[i];
            if (!bone_dynamic(ch, i)) {
                // Exactly on the pose: substep integration never drifts.
                b->x = w->bone[e->b_first + i].target_x;
                b->q = w->bone[e->b_first + i].target_q;
            }
        }
    }
}

// ---------------------------------------------------------------------------
// Inspection
// ---------------------------------------------------------------------------

int sim_character_get_view(const sim_world* w, sim_entity_id id, sim_character_view* out) {
    sim__entity* e;
    const sim__char* ch = char_of(w, id, &e);
    if (ch == NULL) {
        return SIM_E_STALE_ID;
    }
    out->id = id;
    out->state = ch->state;
    out->skeleton = &ch->sk->def;
    out->clip = ch->clip->name;
    out->clip_time = ch->t;
    out->origin = ch->origin;
    out->facing = ch->yaw;
    out->bone_count = e->b_count;
    out->asleep = ch->settled;
    out->solver = ch->artic != NULL ? SIM_CHAR_SOLVER_REDUCED : SIM_CHAR_SOLVER_MAXIMAL;
    return SIM_OK;
}

int sim_character_get_pose(const sim_world* w, sim_entity_id id, sim_bone_pose* poses, sim_vec3* v,
                           sim_vec3* omega, uint32_t cap) {
    sim__entity* e;
    if (char_of(w, id, &e) == NULL) {
        return SIM_E_STALE_ID;
    }
    const sim__char* ch = &w->chars[id.index1 - 1];
    // A REDUCED ragdoll's bones move as its links do now (their bodies'
    // velocities are what carried them over the last tick).
    const bool links = ch->artic != NULL && ch->state == SIM_CHAR_RAGDOLL;
    uint32_t n = e->b_count < cap ? e->b_count : cap;
    for (uint32_t i = 0; i < n; ++i) {
        const sim__body* b = &w->body[e->b_first + i];
        if (poses != NULL) {
            poses[i].p = b->x;
            poses[i].q = b->q;
        }
        sim_vec3 c, lv = b->v, lw = b->w;
        if (links) {
            sim_artic_link_motion(ch->artic, i, &c, &lv, &lw);
        }
        if (v != NULL) {
            v[i] = lv;
        }
        if (omega != NULL) {
            omega[i] = lw;
        }
    }
    return (int)n;
}

int sim_character_joint_view(const sim_world* w, sim_entity_id id, uint32_t bone,
                             sim_joint_view* out) {
    sim__entity* e;
    if (char_of(w, id, &e) == NULL) {
        return SIM_E_STALE_ID;
    }
    if (bone == 0 || bone >= e->b_count) {
        return SIM_E_BAD_INDEX;
    }
    const sim__bjoint* j = &w->bjoint[e->bj_first + bone - 1];
    out->kind = (sim_joint_kind)j->kind;
    out->anchor_parent = j->anchor_p;
    out->anchor_child = j->anchor_c;
    out->frame_parent = j->frame_p;
    out->frame_child = j->frame_c;
    out->swing1 = j->swing1;
    out->swing2 = j->swing2;
    out->twist_min = j->twist_min;
    out->twist_max = j->twist_max;
    return SIM_OK;
}

int sim_character_bone_index(const sim_world* w, sim_entity_id id, const char* name) {
    const sim__char* ch = char_of(w, id, NULL);
    if (ch == NULL) {
        return SIM_E_STALE_ID;
    }
    for (uint32_t i = 0; name != NULL && i < ch->sk->def.bone_count; ++i) {
        if (strncmp(ch->sk->def.bones[i].name, name, SIM_NAME_MAX) == 0) {
            return (int)i;
        }
    }
    return SIM_E_UNKNOWN_NAME;
}
