/*
 * reduced.c: characters in reduced coordinates (issue 13; seed 004): a
 * REDUCED character's bones are the links of one articulation
 * (sim_articulation.h) once it is a ragdoll, and the world's bodies of its
 * bones follow the articulation as kinematic bodies (see
 * sim_world_spawn_character() for what the rest of the world sees).
 *
 * The mapping from a skeleton: link i is bone i, its frame the bone's
 * body frame (capsule along +X) moved to the joint with its parent, so
 * the bone's centre of mass is at −anchor_c; the root's frame is its body
 * frame. The joint frame of bone i in its parent's link frame is
 * frame_p · frame_c⁻¹ at anchor_p − anchor_c(parent), so that the
 * articulation's joint rotation R and the maximal joint's relative
 * rotation r of the two joint frames (rigid.h) are related by
 * R = frame_c · r · frame_c⁻¹: a hinge's axis and a ball joint's twist
 * axis are frame_c's +X, the swing1 axis frame_c's +Y, and the angles are
 * the maximal joint's.
 *
 * What it owns: each REDUCED character's articulation (sim__char.artic),
 * from the world's allocator, freed on despawn and with the world.
 */
#include "rigid.h"
#include "sim_articulation.h"
#include "world.h"

#include <math.h>
#include <string.h>

// Still enough to sleep: every link's centre slower than this (m/s) and
// turning slower than REDUCED_SLEEP_SPIN (rad/s) for SIM__SLEEP_TIME.
#define REDUCED_SLEEP_SPEED 0.05f
#define REDUCED_SLEEP_SPIN  0.5f
// How far around the character (m) boxes and partners are looked for,
// beyond its bones' bounds and what they and the partner move in a tick.
#define REDUCED_REACH 0.25f

const char* sim_char_solver_name(sim_char_solver s) {
    switch (s) {
    case SIM_CHAR_SOLVER_MAXIMAL:
        return "maximal";
    case SIM_CHAR_SOLVER_REDUCED:
        return "reduced";
    default:
        return "default";
    }
}

// The anchor of bone i's own joint in its body frame (0 for the root).
static sim_vec3 own_anchor(const sim__skel* sk, uint32_t i) {
    return i == 0 ? v3(0.0f, 0.0f, 0.0f) : sk->anchor_c[i];
}

int sim__reduced_create(sim_world* w, uint32_t slot) {
    sim__char* ch = &w->chars[slot];
    const sim__skel* sk = ch->sk;
    const uint32_t n = sk->def.bone_count;
    const sim__entity* e = &w->entities[slot];
    sim_artic_link_def d[SIM_MAX_BONES];
    memset(d, 0, sizeof d);
    for (uint32_t i = 0; i < n; ++i) {
        const sim_bone_def* b = &sk->def.bones[i];
        sim_artic_link_def* l = &d[i];
        *l = sim_artic_link_def_default();
        l->parent = i == 0 ? -1 : b->parent;
        l->mass = sk->mass[i];
        l->inertia = sk->inertia[i];
        l->com = v3_scale(own_anchor(sk, i), -1.0f);
        l->capsule_a = v3_sub(l->com, v3(sk->half_len[i], 0.0f, 0.0f));
        l->capsule_b = v3_add(l->com, v3(sk->half_len[i], 0.0f, 0.0f));
        l->radius = b->radius;
        if (i == 0) {
            l->joint = sk->def.fixed_base ? SIM_ARTIC_FIXED : SIM_ARTIC_FREE;
            continue;
        }
        const sim__bjoint* j = &w->bjoint[e->bj_first + i - 1];
        l->anchor = v3_sub(sk->anchor_p[i], own_anchor(sk, (uint32_t)b->parent));
        l->frame = q_normalize(q_mul(sk->frame_p[i], q_conj(sk->frame_c[i])));
        l->axis = q_rotate(sk->frame_c[i], v3(1.0f, 0.0f, 0.0f));
        l->joint = j->kind == SIM_JOINT_HINGE  ? SIM_ARTIC_REVOLUTE
                   : j->kind == SIM_JOINT_BALL ? SIM_ARTIC_SPHERICAL
                                               : SIM_ARTIC_FIXED;
        // Passive Coulomb friction (N·m) as viscous damping: the same
        // torque at 1 rad/s.
        l->damping = j->friction;
    }
    sim_artic* a = NULL;
    int rc = sim_artic_create(d, n, &w->alloc, &a);
    if (rc != SIM_OK) {
        return rc;
    }
    for (uint32_t i = 1; i < n && rc == SIM_OK; ++i) {
        const sim__bjoint* j = &w->bjoint[e->bj_first + i - 1];
        if (d[i].joint == SIM_ARTIC_REVOLUTE) {
            rc = sim_artic_set_limits(a, i, j->twist_min, j->twist_max);
        } else if (d[i].joint == SIM_ARTIC_SPHERICAL) {
            rc = sim_artic_set_cone(a, i, d[i].axis, q_rotate(sk->frame_c[i], v3(0.0f, 1.0f, 0.0f)),
                                    fmaxf(j->swing1, 1e-3f), fmaxf(j->swing2, 1e-3f), j->twist_min,
                                    j->twist_max);
        }
    }
    if (rc != SIM_OK) {
        sim_artic_destroy(a);
        return rc;
    }
    // A maximal bone's cap, a quarter turn per 1/60 s (SIM_MAX_SPEED's
    // companion in the rigid solver; Jolt's default).
    sim_artic_set_max_rate(a, 0.25f * 3.14159265f * 60.0f);
    if (sk->def.fixed_base) {
        // Welded where the root is (again where it goes limp: reduced_sync;
        // a loaded world's root is where the saved articulation had it).
        const sim__body* root = &w->body[e->b_first];
        (void)sim_artic_set_base(a, root->x, root->q, root->v, root->w);
    }
    ch->artic = a;
    ch->reduced = 1;
    w->artic_links += n;
    return SIM_OK;
}

void sim__reduced_destroy(sim_world* w, uint32_t slot) {
    sim__char* ch = &w->chars[slot];
    if (ch->artic != NULL) {
        w->artic_links -= sim_artic_link_count(ch->artic);
        sim_artic_destroy(ch->artic);
        ch->artic = NULL;
    }
}

// The world rotation of bone i's joint frame in its parent's link: q_p · F.
static sim_quat joint_frame(const sim__skel* sk, uint32_t i, sim_quat qp) {
    return q_mul(qp, q_normalize(q_mul(sk->frame_p[i], q_conj(sk->frame_c[i]))));
}

void sim__reduced_sync(sim_world* w, uint32_t slot) {
    sim__char* ch = &w->chars[slot];
    const sim__entity* e = &w->entities[slot];
    const sim__skel* sk = ch->sk;
    const sim__body* b = &w->body[e->b_first];
    sim_artic* a = ch->artic;
    sim_artic_set_base(a, b[0].x, b[0].q, b[0].v, b[0].w);
    for (uint32_t i = 1; i < e->b_count; ++i) {
        const uint32_t p = (uint32_t)sk->def.bones[i].parent;
        const sim_quat rel = q_mul(q_conj(joint_frame(sk, i, b[p].q)), b[i].q);
        const sim_vec3 wrel = v3_sub(b[i].w, b[p].w);
        float angle, rate;
        if (sim_artic_get_angle(a, i, &angle, &rate) == SIM_OK) {
            // The hinge's angle: the twist of rel about the axis.
            const sim_vec3 axis = q_rotate(sk->frame_c[i], v3(1.0f, 0.0f, 0.0f));
            const float s = rel.x * axis.x + rel.y * axis.y + rel.z * axis.z;
            angle = 2.0f * atan2f(s, rel.w);
            if (angle > 3.14159265f) {
                angle -= 6.2831853f;
            } else if (angle < -3.14159265f) {
                angle += 6.2831853f;
            }
            rate = v3_dot(wrel, q_rotate(b[i].q, axis));
            sim_artic_set_angle(a, i, angle, rate);
        } else {
            sim_artic_set_rotation(a, i, rel, q_rotate_inv(b[i].q, wrel));
        }
    }
    for (uint32_t i = 0; i < e->b_count; ++i) {
        w->bone[e->b_first + i].fb_j = w->bone[e->b_first + i].fb_m = v3(0.0f, 0.0f, 0.0f);
    }
    ch->still_t = 0.0f;
}

// Bone i's pose from its link's.
static void bone_pose(const sim__char* ch, uint32_t i, sim_vec3* x, sim_quat* q) {
    sim_vec3 o;
    sim_artic_link_pose(ch->artic, i, &o, q);
    *x = v3_sub(o, q_rotate(*q, own_anchor(ch->sk, i)));
}

int sim__reduced_impulse(sim_world* w, uint32_t slot, uint32_t bone, sim_vec3 point,
                         sim_vec3 impulse) {
    sim__char* ch = &w->chars[slot];
    ch->settled = false;
    ch->still_t = 0.0f;
    return sim_artic_apply_impulse(ch->artic, bone, point, impulse);
}

void sim__reduced_push(sim_world* w, uint32_t body, sim_vec3 p, sim_vec3 j) {
    const sim__body_info* bi = &w->binfo[body];
    const sim__entity* e = &w->entities[bi->slot];
    if (e->kind != SIM_ENTITY_CHARACTER) {
        return;
    }
    sim__char* ch = &w->chars[bi->slot];
    if (ch->artic == NULL || ch->state != SIM_CHAR_RAGDOLL) {
        return;
    }
    sim__bone* bs = &w->bone[body];
    bs->fb_j = v3_add(bs->fb_j, j);
    bs->fb_m = v3_add(bs->fb_m, v3_cross(v3_sub(p, w->body[body].x), j));
}

// What particles pushed on the bones last tick, as one impulse per bone:
// the sum J at the point whose lever gives the sum's moment M about the
// bone's centre (its part across J; a twist about J itself is dropped).
static bool apply_pushes(sim__char* ch, const sim__body* bones, sim__bone* bs, uint32_t n) {
    bool any = false;
    for (uint32_t i = 0; i < n; ++i) {
        const sim_vec3 J = bs[i].fb_j, M = bs[i].fb_m;
        const float jj = v3_dot(J, J);
        if (jj > 1e-12f) {
            const sim_vec3 at = v3_add(bones[i].x, v3_scale(v3_cross(J, M), 1.0f / jj));
            any = sim_artic_apply_impulse(ch->artic, i, at, J) == SIM_OK || any;
        }
        bs[i].fb_j = bs[i].fb_m = v3(0.0f, 0.0f, 0.0f);
    }
    return any;
}

// The bones' bounds, grown by `grow` (m).
static void bounds(const sim_world* w, const sim__entity* e, float grow, sim_vec3* lo,
                   sim_vec3* hi) {
    *lo = v3(1e30f, 1e30f, 1e30f);
    *hi = v3(-1e30f, -1e30f, -1e30f);
    for (uint32_t i = e->b_first; i < e->b_first + e->b_count; ++i) {
        sim_vec3 p0, p1;
        sim__body_segment(&w->body[i], &w->binfo[i], &p0, &p1);
        const float r = w->binfo[i].radius + grow;
        *lo = v3(fminf(lo->x, fminf(p0.x, p1.x) - r), fminf(lo->y, fminf(p0.y, p1.y) - r),
                 fminf(lo->z, fminf(p0.z, p1.z) - r));
        *hi = v3(fmaxf(hi->x, fmaxf(p0.x, p1.x) + r), fmaxf(hi->y, fmaxf(p0.y, p1.y) + r),
                 fmaxf(hi->z, fmaxf(p0.z, p1.z) + r));
    }
}

static bool overlap(sim_vec3 alo, sim_vec3 ahi, sim_vec3 blo, sim_vec3 bhi) {
    return alo.x <= bhi.x && blo.x <= ahi.x && alo.y <= bhi.y && blo.y <= ahi.y && alo.z <= bhi.z &&
           blo.z <= ahi.z;
}

// The bodies near the character as partners (at most
// SIM_ARTIC_MAX_PARTNERS, in body order); returns how many, and sets
// *moving when one of them is dynamic and faster than the sleep speed.
static uint32_t gather_partners(sim_world* w, const sim__entity* e, sim_vec3 lo, sim_vec3 hi,
                                sim_artic_partner* out, bool* moving) {
    uint32_t n = 0;
    *moving = false;
    for (uint32_t i = 0; i < w->b_count && n < SIM_ARTIC_MAX_PARTNERS; ++i) {
        if (i >= e->b_first && i < e->b_first + e->b_count) {
            continue;
        }
        const sim__body* b = &w->body[i];
        const sim__body_info* bi = &w->binfo[i];
        sim_vec3 p0, p1;
        sim__body_segment(b, bi, &p0, &p1);
        const float r = bi->radius + v3_len(b->v) * w->dt;
        const sim_vec3 blo =
            v3(fminf(p0.x, p1.x) - r, fminf(p0.y, p1.y) - r, fminf(p0.z, p1.z) - r);
        const sim_vec3 bhi =
            v3(fmaxf(p0.x, p1.x) + r, fmaxf(p0.y, p1.y) + r, fmaxf(p0.z, p1.z) + r);
        if (!overlap(lo, hi, blo, bhi) || !(bi->radius > 0.0f)) {
            continue;
        }
        sim_artic_partner* pt = &out[n++];
        memset(pt, 0, sizeof *pt);
        pt->a = p0;
        pt->b = p1;
        pt->radius = bi->radius;
        pt->com = b->x;
        pt->v = b->v;
        pt->w = b->w;
        pt->rotation = q_normalize(b->q);
        pt->user = i;
        if (b->inv_mass > 0.0f) {
            pt->inv_mass = b->inv_mass;
            pt->inv_inertia = b->inv_inertia;
            *moving = *moving || (!sim__body_asleep(w, i) && v3_len(b->v) > REDUCED_SLEEP_SPEED);
        } else {
            const sim__entity* o = &w->entities[bi->slot];
            sim__char* oc = o->kind == SIM_ENTITY_CHARACTER ? &w->chars[bi->slot] : NULL;
            if (oc != NULL && oc->artic != NULL && oc->state == SIM_CHAR_RAGDOLL) {
                // Another articulation's bone: with the mass its point
                // seems to have toward this character (through its
                // articulated inertia), each articulation solving its own
                // side (its new velocity is dropped here).
                float m = bi->mass;
                const sim_vec3 toward = v3_sub(v3_scale(v3_add(lo, hi), 0.5f), b->x);
                sim_artic_point_mass(oc->artic, bi->bone, b->x, toward, &m);
                pt->inv_mass = 1.0f / fmaxf(m, 1e-3f);
                pt->inv_inertia = v3(0.0f, 0.0f, 0.0f);
                *moving = *moving || (!oc->settled && v3_len(b->v) > REDUCED_SLEEP_SPEED);
            } else {
                // An animated bone: it goes where its clip takes it.
                *moving = *moving || v3_len(b->v) > REDUCED_SLEEP_SPEED;
            }
        }
    }
    return n;
}

// Drives toward the clip's pose: each joint's maximal target (the relative
// rotation of its joint frames) as the articulation's, every tick so a
// world loaded from a state steps as the saved one would.
static void set_drives(sim__char* ch, const sim__bjoint* joints, uint32_t n) {
    for (uint32_t i = 1; i < n; ++i) {
        const sim__bjoint* j = &joints[i - 1];
        const sim_quat fc = ch->sk->frame_c[i];
        const sim_quat R = q_mul(q_mul(fc, j->target), q_conj(fc));
        const float angle = 2.0f * atan2f(j->target.x, j->target.w);
        sim_artic_set_drive(ch->artic, i, j->kp, j->kd, angle, R);
    }
}

void sim__reduced_tick(sim_world* w, uint32_t slot, float dt) {
    sim__char* ch = &w->chars[slot];
    sim__entity* e = &w->entities[slot];
    sim__body* bones = &w->body[e->b_first];
    sim__bone* bs = &w->bone[e->b_first];
    const uint32_t n = e->b_count;
    const sim_vec3 g = w->params.gravity;
    sim_vec3 lo, hi;
    bounds(w, e, REDUCED_REACH, &lo, &hi);
    // Grow by what the bones can move this tick (the fastest's speed).
    float fastest = 0.0f;
    for (uint32_t i = 0; i < n; ++i) {
        fastest = fmaxf(fastest, v3_len(bones[i].v));
    }
    const sim_vec3 grow = v3(fastest * dt, fastest * dt, fastest * dt);
    lo = v3_sub(lo, grow);
    hi = v3_add(hi, grow);
    sim_artic_partner partners[SIM_ARTIC_MAX_PARTNERS];
    bool moving = false;
    uint32_t np = gather_partners(w, e, lo, hi, partners, &moving);
    const bool pushed = apply_pushes(ch, bones, bs, n);
    if (ch->settled && !moving && !pushed) {
        for (uint32_t i = 0; i < n; ++i) {
            bs[i].target_x = bones[i].x;
            bs[i].target_q = bones[i].q;
        }
        return;
    }
    ch->settled = false;
    // The boxes near it.
    sim_box boxes[SIM_ARTIC_MAX_BOXES];
    uint32_t nb = 0;
    for (uint32_t k = 0; k < w->box_count && nb < SIM_ARTIC_MAX_BOXES; ++k) {
        const sim_box* bx = &w->boxes[k];
        if (overlap(lo, hi, v3_sub(bx->center, bx->half_extents),
                    v3_add(bx->center, bx->half_extents))) {
            boxes[nb++] = *bx;
        }
    }
    sim_artic_set_env(ch->artic, w->def.ground, boxes, nb,
                      fminf(fmaxf(w->params.friction, 0.0f), 10.0f));
    sim_artic_set_restitution(ch->artic, fminf(fmaxf(w->params.bounciness, 0.0f), 1.0f));
    set_drives(ch, &w->bjoint[e->bj_first], n);
    const uint32_t steps = sim__reduced_steps(dt);
    const float h = dt / (float)steps;
    for (uint32_t s = 0; s < steps; ++s) {
        if (sim_artic_step_among(ch->artic, h, g, partners, np) != SIM_OK) {
            break; // left as it was: the quarantine finds it if it went bad
        }
        // Its links' strikes are the world's impacts (impact.c).
        sim_artic_strike st[SIM_ARTIC_MAX_STRIKES];
        const uint32_t ns = sim_artic_strikes(ch->artic, st, SIM_ARTIC_MAX_STRIKES);
        for (uint32_t k = 0; k < ns; ++k) {
            const uint32_t ib = st[k].partner >= 0 ? partners[st[k].partner].user : SIM__NO_BODY;
            const uint32_t code = st[k].partner >= 0 ? 0u : sim__static_code_at(w, st[k].point);
            sim__impact_note(w, e->b_first + st[k].link, ib, code, st[k].point, st[k].normal,
                             st[k].speed);
        }
        for (uint32_t k = 0; k < np; ++k) {
            sim_artic_partner* pt = &partners[k];
            const sim_vec3 d = v3_scale(pt->v, h);
            pt->a = v3_add(pt->a, d);
            pt->b = v3_add(pt->b, d);
            pt->com = v3_add(pt->com, d);
        }
    }
    // The dynamic partners keep what the contacts gave them.
    for (uint32_t k = 0; k < np; ++k) {
        const sim_artic_partner* pt = &partners[k];
        sim__body* b = &w->body[pt->user];
        if (b->inv_mass == 0.0f) {
            continue; // animated, or another articulation's: it keeps its own motion
        }
        if (memcmp(&b->v, &pt->v, sizeof b->v) != 0 || memcmp(&b->w, &pt->w, sizeof b->w) != 0) {
            sim__body_wake(w, pt->user);
            b->v = pt->v;
            b->w = pt->w;
        }
    }
    // Where the bones go, and whether it is still. A bone that would go
    // farther in the tick or faster than any body may (or to a non-finite
    // place) leaves the whole character where it is, marked for the tick's
    // quarantine (step.c): its kinematic bodies must not sweep the broad
    // phase across the world.
    const float far = SIM_MAX_SPEED * dt;
    bool still = true;
    for (uint32_t i = 0; i < n; ++i) {
        sim_vec3* x = &bs[i].target_x;
        sim_quat* q = &bs[i].target_q;
        bone_pose(ch, i, x, q);
        if (!(v3_len(v3_sub(*x, bones[i].x)) <= far) || !sim_is_finite(q->x) ||
            !sim_is_finite(q->y) || !sim_is_finite(q->z) || !sim_is_finite(q->w)) {
            ch->blown = 1;
        }
        sim_vec3 c, v, om;
        sim_artic_link_motion(ch->artic, i, &c, &v, &om);
        const float speed = v3_len(v);
        if (!(speed <= SIM_MAX_SPEED)) {
            ch->blown = 1; // as a maximal body that fast (step.c)
        }
        still = still && speed < REDUCED_SLEEP_SPEED && v3_len(om) < REDUCED_SLEEP_SPIN;
    }
    if (ch->blown) {
        for (uint32_t i = 0; i < n; ++i) {
            bs[i].target_x = bones[i].x;
            bs[i].target_q = bones[i].q;
        }
        return;
    }
    ch->still_t = still ? ch->still_t + dt : 0.0f;
    if (ch->still_t >= SIM__SLEEP_TIME) {
        // Asleep: its bones hold this pose, at rest, until woken.
        sim_artic_stop(ch->artic);
        ch->settled = true;
        ch->still_t = 0.0f;
        sim_entity_id id = {slot + 1, e->generation};
        sim__push_event(w, SIM_EVENT_SETTLED, id, SIM_CHAR_RAGDOLL, w->tick + 1);
    }
}
