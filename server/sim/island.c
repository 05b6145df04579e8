/*
 * island.c: islands and sleeping.
 *
 * An island is a set of awake bodies that may push each other this tick:
 * bodies linked by a joint, or by a candidate contact pair of the broad
 * phase (broad_phase.c). Islands are rebuilt every tick by union-find over
 * those links (Box2D v2's island builder; Box2D v3 keeps them persistent,
 * which pays for worlds far larger than ours). Bodies of different islands
 * never touch within the tick, so each island is solved on its own with the
 * substeps its own fastest impact needs (solver.c), and islands could be
 * solved in parallel.
 *
 * A kinematic body (an animated bone) joins the island of what it touches
 * or is jointed to, so that its motion is stepped with it; one that touches
 * nothing is stepped on its own (sim__kinematic_advance). A sleeping body is
 * frozen and acts as static: it links nothing.
 *
 * Sleeping (Jolt's sleep test; Box2D's islands): each body keeps, for three
 * points fixed in it, the smallest sphere holding every position the point
 * has had since the body last moved; while every sphere stays under
 * SIM__SLEEP_SPEED × SIM__SLEEP_TIME (1.5 cm) the body's still time grows.
 * A body that trembles in place (a solver's residual jitter in a pile) is
 * still; one that creeps, slides or swings is not. An island whose bodies
 * may all sleep and have all been still for SIM__SLEEP_TIME goes to sleep
 * as a whole. Its bodies are then frozen: zero velocity, zero inverse
 * mass (so awake bodies resting on them treat them as static), and linked
 * in a ring so that waking any of them wakes the island. Only balls and
 * characters in the RAGDOLL state sleep; animated, partial and getting-up
 * characters move by themselves.
 */
#include "rigid.h"
#include "vec.h"
#include "world.h"

#include <string.h>

#define NONE UINT32_MAX

static void reset_spheres(sim_world* w, uint32_t i);

// Union-find with path halving; the smaller index becomes the root, so the
// result does not depend on the order links are made in.
static uint32_t find(uint32_t* uf, uint32_t i) {
    while (uf[i] != i) {
        uf[i] = uf[uf[i]];
        i = uf[i];
    }
    return i;
}

static void unite(uint32_t* uf, uint32_t a, uint32_t b) {
    a = find(uf, a);
    b = find(uf, b);
    if (a < b) {
        uf[b] = a;
    } else if (b < a) {
        uf[a] = b;
    }
}

// Whether body i's owner lets it sleep.
static bool may_sleep(const sim_world* w, uint32_t i) {
    if (w->body[i].inv_mass == 0.0f) {
        return false; // kinematic: animated, it moves by itself
    }
    uint32_t slot = w->binfo[i].slot;
    switch (w->entities[slot].kind) {
    case SIM_ENTITY_BALL:
        return true;
    case SIM_ENTITY_CHARACTER:
        return w->chars[slot].state == SIM_CHAR_RAGDOLL;
    default:
        return false;
    }
}

static void set_frozen(sim_world* w, uint32_t i, bool frozen) {
    sim__body* b = &w->body[i];
    const sim__body_info* bi = &w->binfo[i];
    b->v = b->w = b->v_pre = b->w_pre = v3(0.0f, 0.0f, 0.0f);
    b->x_prev = b->x;
    b->q_prev = b->q;
    if (frozen) {
        b->inv_mass = 0.0f;
        b->inv_inertia = v3(0.0f, 0.0f, 0.0f);
    } else {
        b->inv_mass = 1.0f / bi->mass;
        b->inv_inertia = v3(1.0f / bi->inertia.x, 1.0f / bi->inertia.y, 1.0f / bi->inertia.z);
    }
    sim__body_update_inertia(b);
}

void sim__body_wake(sim_world* w, uint32_t i) {
    if (!w->bsleep[i].asleep) {
        return;
    }
    uint32_t k = i;
    do {
        sim__sleep* s = &w->bsleep[k];
        uint32_t next = s->next;
        s->asleep = 0;
        s->next = NONE;
        set_frozen(w, k, false);
        reset_spheres(w, k);
        uint32_t slot = w->binfo[k].slot;
        if (w->entities[slot].kind == SIM_ENTITY_CHARACTER) {
            w->chars[slot].settled = false;
        }
        k = next;
    } while (k != i && k != NONE);
}

void sim__entity_wake(sim_world* w, const sim__entity* e) {
    for (uint32_t i = e->b_first; i < e->b_first + e->b_count; ++i) {
        sim__body_wake(w, i);
    }
    if (e->kind == SIM_ENTITY_CHARACTER) {
        sim__char* ch = &w->chars[e - w->entities];
        if (ch->artic != NULL) { // REDUCED: its own sleep (reduced.c)
            ch->settled = false;
            ch->still_t = 0.0f;
        }
    }
}

void sim__wake_all(sim_world* w) {
    for (uint32_t i = 0; i < w->b_count; ++i) {
        sim__body_wake(w, i);
    }
    // REDUCED characters sleep on their own (reduced.c): new gravity moves
    // them too.
    for (uint32_t k = 0; k < w->order_count; ++k) {
        const sim__entity* e = &w->entities[w->order[k]];
        if (e->kind == SIM_ENTITY_CHARACTER && w->chars[w->order[k]].artic != NULL) {
            sim__entity_wake(w, e);
        }
    }
}

// Links (unites) every pair of awake bodies that may push each other.
static void link(sim_world* w) {
    uint32_t* uf = w->uf;
    for (uint32_t i = 0; i < w->b_count; ++i) {
        uf[i] = i;
    }
    for (uint32_t k = 0; k < w->order_count; ++k) {
        const sim__entity* e = &w->entities[w->order[k]];
        const sim__bjoint* jt = w->bjoint + e->bj_first;
        for (uint32_t j = 0; j < e->bj_count; ++j) {
            uint32_t p = e->b_first + jt[j].parent, c = e->b_first + jt[j].child;
            if ((w->body[p].inv_mass > 0.0f || w->body[c].inv_mass > 0.0f) &&
                !w->bsleep[p].asleep && !w->bsleep[c].asleep) {
                unite(uf, p, c);
            }
        }
    }
    for (uint32_t k = 0; k < w->pair_count; ++k) {
        uint32_t a = w->pairs[k].a, b = w->pairs[k].b;
        if ((b & SIM__BOX_PAIR) == 0 && !w->bsleep[a].asleep && !w->bsleep[b].asleep) {
            unite(uf, a, b);
        }
    }
}

void sim__islands_build(sim_world* w) {
    link(w);
    uint32_t* uf = w->uf;
    uint32_t* of = w->isl_of;
    // Members: awake dynamic bodies, and kinematic ones linked to one. A
    // root's count tells a lone kinematic body (count 1) from a member.
    for (uint32_t i = 0; i < w->b_count; ++i) {
        of[i] = 0;
    }
    for (uint32_t i = 0; i < w->b_count; ++i) {
        if (!w->bsleep[i].asleep) {
            of[find(uf, i)]++;
        }
    }
    // Number the islands in order of their smallest body (the root), and
    // count their bodies.
    w->island_count = 0;
    for (uint32_t i = 0; i < w->b_count; ++i) {
        uint32_t n = of[i];
        if (uf[i] != i || w->bsleep[i].asleep) {
            continue; // not a root (or asleep): numbered below
        }
        if (n == 1 && w->body[i].inv_mass == 0.0f) {
            of[i] = NONE; // a lone kinematic body
            continue;
        }
        sim__island* isl = &w->islands[w->island_count];
        memset(isl, 0, sizeof *isl);
        isl->body_count = n;
        of[i] = w->island_count++;
    }
    for (uint32_t i = 0; i < w->b_count; ++i) {
        if (w->bsleep[i].asleep) {
            w->isl_of_body[i] = NONE;
        } else {
            w->isl_of_body[i] = of[find(uf, i)];
        }
    }
    // Offsets, then fill (a counting sort keeps body order within islands).
    uint32_t first = 0;
    for (uint32_t k = 0; k < w->island_count; ++k) {
        w->islands[k].body_first = first;
        first += w->islands[k].body_count;
        w->islands[k].body_count = 0;
    }
    for (uint32_t i = 0; i < w->b_count; ++i) {
        uint32_t k = w->isl_of_body[i];
        if (k != NONE) {
            sim__island* isl = &w->islands[k];
            w->isl_bodies[isl->body_first + isl->body_count++] = i;
            isl->closing = fmaxf(isl->closing, w->closing[i]);
            if (!may_sleep(w, i)) {
                isl->awake_only = true;
            }
        }
    }
    // Joints: two passes, count then fill.
    for (uint32_t pass = 0; pass < 2; ++pass) {
        if (pass == 1) {
            uint32_t at = 0;
            for (uint32_t k = 0; k < w->island_count; ++k) {
                w->islands[k].joint_first = at;
                at += w->islands[k].joint_count;
                w->islands[k].joint_count = 0;
            }
        }
        for (uint32_t k = 0; k < w->order_count; ++k) {
            const sim__entity* e = &w->entities[w->order[k]];
            const sim__bjoint* jt = w->bjoint + e->bj_first;
            for (uint32_t j = 0; j < e->bj_count; ++j) {
                uint32_t p = e->b_first + jt[j].parent, c = e->b_first + jt[j].child;
                if (w->body[p].inv_mass == 0.0f && w->body[c].inv_mass == 0.0f) {
                    continue;
                }
                uint32_t isl = w->isl_of_body[c];
                if (isl == NONE) {
                    continue;
                }
                sim__island* is = &w->islands[isl];
                if (pass == 1) {
                    sim__ijoint* ij = &w->isl_joints[is->joint_first + is->joint_count];
                    ij->p = p;
                    ij->c = c;
                    ij->j = e->bj_first + j;
                }
                is->joint_count++;
            }
        }
    }
    // Pairs: the same.
    for (uint32_t pass = 0; pass < 2; ++pass) {
        if (pass == 1) {
            uint32_t at = 0;
            for (uint32_t k = 0; k < w->island_count; ++k) {
                w->islands[k].pair_first = at;
                at += w->islands[k].pair_count;
                w->islands[k].pair_count = 0;
            }
        }
        for (uint32_t k = 0; k < w->pair_count; ++k) {
            uint32_t a = w->pairs[k].a, b = w->pairs[k].b;
            uint32_t isl = w->isl_of_body[a];
            if (isl == NONE && (b & SIM__BOX_PAIR) == 0) {
                isl = w->isl_of_body[b];
            }
            if (isl == NONE) {
                continue; // both asleep
            }
            sim__island* is = &w->islands[isl];
            if (pass == 1) {
                w->isl_pairs[is->pair_first + is->pair_count] = k;
            }
            is->pair_count++;
        }
    }
}

void sim__kinematic_advance(sim_world* w, float h) {
    for (uint32_t i = 0; i < w->b_count; ++i) {
        sim__body* b = &w->body[i];
        if (w->isl_of_body[i] != NONE || w->bsleep[i].asleep) {
            continue;
        }
        b->x_prev = b->x;
        b->q_prev = b->q;
        b->v_pre = b->v;
        b->w_pre = b->w;
        b->x = v3_add(b->x, v3_scale(b->v, h));
        b->q = q_integrate(b->q, b->w, h);
    }
}

// The three test points of body i in the world: its centre, the tip of its
// capsule (or a point on a ball's surface) and a point on its side, so that
// spinning about any axis moves at least one of them.
static void test_points(const sim_world* w, uint32_t i, sim_vec3 p[3]) {
    const sim__body* b = &w->body[i];
    const sim__body_info* bi = &w->binfo[i];
    p[0] = b->x;
    p[1] = v3_add(b->x, q_rotate(b->q, v3(bi->half_len + bi->radius, 0.0f, 0.0f)));
    p[2] = v3_add(b->x, q_rotate(b->q, v3(0.0f, bi->radius, 0.0f)));
}

static void reset_spheres(sim_world* w, uint32_t i) {
    sim__sleep* s = &w->bsleep[i];
    test_points(w, i, s->c);
    s->r[0] = s->r[1] = s->r[2] = 0.0f;
    s->time = 0.0f;
}

// Grows each test sphere of body i to hold its point's new position
// (Ritter's incremental bounding sphere). Returns true while all stay
// within the sleep radius.
static bool still(sim_world* w, uint32_t i) {
    sim__sleep* s = &w->bsleep[i];
    sim_vec3 p[3];
    test_points(w, i, p);
    for (int k = 0; k < 3; ++k) {
        sim_vec3 d = v3_sub(p[k], s->c[k]);
        float dl = v3_len(d);
        if (dl > s->r[k]) {
            float grow = 0.5f * (dl - s->r[k]);
            s->r[k] += grow;
            s->c[k] = v3_add(s->c[k], v3_scale(d, grow / dl));
        }
        if (s->r[k] > SIM__SLEEP_SPEED * SIM__SLEEP_TIME) {
            return false;
        }
    }
    return true;
}

void sim__islands_sleep(sim_world* w, float dt) {
    for (uint32_t k = 0; k < w->island_count; ++k) {
        const sim__island* isl = &w->islands[k];
        const uint32_t* ib = w->isl_bodies + isl->body_first;
        float least = 1e30f;
        for (uint32_t n = 0; n < isl->body_count; ++n) {
            uint32_t i = ib[n];
            sim__sleep* s = &w->bsleep[i];
            const sim__body* b = &w->body[i];
            const sim__body_info* bi = &w->binfo[i];
            if (b->inv_mass == 0.0f) {
                reset_spheres(w, i);
            } else {
                // Slow (Box2D) or in place (Jolt): either is still enough.
                bool slow = fmaxf(v3_len(b->v), v3_len(b->w) * (bi->half_len + bi->radius)) <
                            SIM__SLEEP_SPEED;
                bool in_place = still(w, i);
                float t = s->time;
                if (!in_place) {
                    reset_spheres(w, i);
                }
                s->time = (slow || in_place) ? t + dt : 0.0f;
            }
            least = fminf(least, s->time);
        }
        if (isl->awake_only || least < SIM__SLEEP_TIME) {
            continue;
        }
        // To sleep, as a ring in body order.
        for (uint32_t n = 0; n < isl->body_count; ++n) {
            uint32_t i = ib[n];
            sim__sleep* s = &w->bsleep[i];
            s->asleep = 1;
            s->next = ib[(n + 1) % isl->body_count];
            set_frozen(w, i, true);
            uint32_t slot = w->binfo[i].slot;
            const sim__entity* e = &w->entities[slot];
            if (e->kind == SIM_ENTITY_CHARACTER && !w->chars[slot].settled &&
                i == e->b_first + e->b_count - 1) {
                // The last bone of a character (its bones are in one island):
                // the whole character is asleep.
                w->chars[slot].settled = true;
                sim_entity_id id = {slot + 1, e->generation};
                sim__push_event(w, SIM_EVENT_SETTLED, id, SIM_CHAR_RAGDOLL, w->tick + 1);
            }
        }
    }
}

void sim__sleep_despawned(sim_world* w, uint32_t first, uint32_t count) {
    // The islands that held the removed bodies wake (what rested on them
    // must fall); the rings of the others are renumbered past the gap.
    for (uint32_t i = first; i < first + count; ++i) {
        sim__body_wake(w, i);
    }
    // A sleeper that rested on them in an island of its own (it fell asleep
    // on them after they slept) is found by the last tick's bounds.
    for (uint32_t i = 0; i < w->b_count; ++i) {
        if (!w->bsleep[i].asleep) {
            continue;
        }
        for (uint32_t r = first; r < first + count; ++r) {
            if (sim__aabb_overlap(w->aabb_lo[i], w->aabb_hi[i], w->aabb_lo[r], w->aabb_hi[r])) {
                sim__body_wake(w, i);
                break;
            }
        }
    }
    for (uint32_t i = 0; i < w->b_count; ++i) {
        sim__sleep* s = &w->bsleep[i];
        if (s->asleep && s->next != NONE && s->next >= first + count) {
            s->next -= count;
        }
    }
}

uint32_t sim_world_awake_body_count(const sim_world* w) {
    uint32_t n = 0;
    for (uint32_t i = 0; i < w->b_count; ++i) {
        n += w->bsleep[i].asleep ? 0u : 1u;
    }
    return n;
}

uint32_t sim_world_island_count(const sim_world* w) {
    return w->island_count;
}

sim_tick_stats sim_world_tick_stats(const sim_world* w) {
    return w->stats;
}
