/*
 * limit_hit.c: ragdolls' joints slamming into their limits (sim.h,
 * sim_limit_hit), for sounds and effects: a knee locking straight, an elbow
 * thrown open. Measured after each tick, whatever the solver, on the poses
 * and angular velocities the tick left: each dynamic joint's twist angle
 * and swing (the swing-twist decomposition of probe.c and Jolt), whether
 * it is at a limit, and how fast it turns toward each. A hit is a joint
 * newly at a limit that was turning toward it faster than
 * SIM_LIMIT_HIT_MIN_SPEED the tick before (the solver has stopped it by
 * the end of the tick that hits).
 */
#include "quat.h"
#include "rigid.h"
#include "vec.h"
#include "world.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

// "At" a limit: within a degree of it (or past it).
#define AT_TWIST 0.01745f
// At the swing cone's edge: the swing's radius in units of its ellipse at
// least this (the ellipse is in half-angle sines: about a degree inside a
// 45° cone).
#define AT_SWING 0.97f

void sim_world_report_limit_hits(sim_world* w, bool on) {
    sim__reports* r = w->reports;
    if (r == NULL) {
        return; // no bodies: nothing to measure (turned on again each tick by the server)
    }
    if (on && !r->report_limits && r->lim != NULL) {
        // What the joints did before nobody measured is unknown: no rates.
        memset(r->lim, 0, r->lim_cap * sizeof *r->lim);
    }
    r->report_limits = on;
}

// Keeps a hit among the tick's fastest.
static void note(sim__reports* r, sim_entity_id id, uint32_t bone, sim_limit_kind kind,
                 float speed) {
    const sim_limit_hit e = {0, id, bone, kind, speed};
    if (r->limit_tick_count < SIM_MAX_LIMIT_HITS_PER_TICK) {
        r->limit_tick[r->limit_tick_count++] = e;
        return;
    }
    r->limits_dropped++;
    uint32_t slowest = 0;
    for (uint32_t k = 1; k < r->limit_tick_count; ++k) {
        if (r->limit_tick[k].speed < r->limit_tick[slowest].speed) {
            slowest = k;
        }
    }
    if (speed > r->limit_tick[slowest].speed) {
        r->limit_tick[slowest] = e;
    }
}

// One joint (bone i > 0 of character entity e): where it is against its
// limits and how fast it turns toward them; a hit when it arrived.
static void measure(sim_world* w, sim__reports* r, const sim__entity* e, sim_entity_id id,
                    uint32_t i) {
    const sim__bjoint* j = &w->bjoint[e->bj_first + i - 1];
    const sim__body* c = &w->body[e->b_first + j->child];
    const sim__body* p = &w->body[e->b_first + j->parent];
    const sim_quat fp = q_mul(p->q, j->frame_p), fc = q_mul(c->q, j->frame_c);
    const sim_quat rel = q_normalize(q_mul(q_conj(fp), fc));
    sim_quat swing, twist;
    q_swing_twist(rel, &swing, &twist);
    const float phi = 2.0f * atan2f(twist.x, twist.w);
    const sim_vec3 omega = v3_sub(c->w, p->w);
    uint32_t at = 0;
    float twist_rate = 0.0f, swing_rate = 0.0f;
    if (j->twist_max - j->twist_min > 2.0f * AT_TWIST) {
        twist_rate = v3_dot(omega, q_rotate(fc, v3(1.0f, 0.0f, 0.0f)));
        at |= phi >= j->twist_max - AT_TWIST ? 1u << SIM_LIMIT_TWIST_MAX : 0u;
        at |= phi <= j->twist_min + AT_TWIST ? 1u << SIM_LIMIT_TWIST_MIN : 0u;
    }
    const float a = j->sin_half_swing1, b = j->sin_half_swing2;
    const float yz = sqrtf(swing.y * swing.y + swing.z * swing.z);
    if (a > 1e-6f && b > 1e-6f && yz > 1e-6f) {
        // The swing opens about its own axis, (0, y, z) in the parent's
        // joint frame.
        const sim_vec3 axis = q_rotate(fp, v3(0.0f, swing.y / yz, swing.z / yz));
        swing_rate = v3_dot(omega, axis);
        const float ey = swing.y / a, ez = swing.z / b;
        at |= ey * ey + ez * ez >= AT_SWING * AT_SWING ? 1u << SIM_LIMIT_SWING : 0u;
    }
    sim__limit_track* t = &r->lim[e->bj_first + i - 1];
    const uint32_t arrived = at & ~t->at;
    if ((arrived & (1u << SIM_LIMIT_TWIST_MAX)) && t->twist_rate >= SIM_LIMIT_HIT_MIN_SPEED) {
        note(r, id, i, SIM_LIMIT_TWIST_MAX, t->twist_rate);
    }
    if ((arrived & (1u << SIM_LIMIT_TWIST_MIN)) && -t->twist_rate >= SIM_LIMIT_HIT_MIN_SPEED) {
        note(r, id, i, SIM_LIMIT_TWIST_MIN, -t->twist_rate);
    }
    if ((arrived & (1u << SIM_LIMIT_SWING)) && t->swing_rate >= SIM_LIMIT_HIT_MIN_SPEED) {
        note(r, id, i, SIM_LIMIT_SWING, t->swing_rate);
    }
    t->at = at;
    t->twist_rate = twist_rate;
    t->swing_rate = swing_rate;
}

static int faster_first(const void* x, const void* y) {
    const float a = ((const sim_limit_hit*)x)->speed, b = ((const sim_limit_hit*)y)->speed;
    return (a < b) - (a > b);
}

void sim__limit_hits_end_tick(sim_world* w) {
    sim__reports* r = w->reports;
    if (r == NULL || !r->report_limits) {
        return;
    }
    for (uint32_t k = 0; k < w->order_count; ++k) {
        const uint32_t slot = w->order[k];
        const sim__entity* e = &w->entities[slot];
        if (e->kind != SIM_ENTITY_CHARACTER) {
            continue;
        }
        const sim__char* ch = &w->chars[slot];
        const bool ragdoll = ch->state == SIM_CHAR_RAGDOLL;
        if (!ragdoll && ch->state != SIM_CHAR_PARTIAL) {
            // Animated or getting up: the clip keeps it inside its limits.
            for (uint32_t i = 1; i < e->b_count; ++i) {
                r->lim[e->bj_first + i - 1] = (sim__limit_track){0.0f, 0.0f, 0u};
            }
            continue;
        }
        const sim_entity_id id = {slot + 1, e->generation};
        for (uint32_t i = 1; i < e->b_count; ++i) {
            const bool dynamic = ragdoll || sim__bones_has(&ch->partial, i);
            if (dynamic) {
                measure(w, r, e, id, i);
            }
        }
    }
    qsort(r->limit_tick, r->limit_tick_count, sizeof *r->limit_tick, faster_first);
    for (uint32_t k = 0; k < r->limit_tick_count; ++k) {
        r->limit_tick[k].tick = w->tick;
        sim__ring_push(&r->limit_ring, &r->limit_tick[k]);
    }
    r->limit_ring.dropped += r->limits_dropped;
    r->limits_dropped = 0;
    r->limit_tick_count = 0;
}

uint32_t sim_world_drain_limit_hits(sim_world* w, sim_limit_hit* out, uint32_t cap,
                                    uint64_t* dropped) {
    if (w->reports == NULL) {
        if (dropped != NULL) {
            *dropped = 0;
        }
        return 0;
    }
    return sim__ring_drain(&w->reports->limit_ring, out, cap, dropped);
}
