/*
 * garment.c: cloth worn by characters (seed 000 §10): capes, skirts and
 * hair built from a skeleton asset's garments, their pinned rows following
 * bones every substep, long-range attachments, and their end with their
 * wearer.
 *
 * A garment is a cloth entity (SIM_ENTITY_CLOTH, a cols × rows grid,
 * row-major) with a wearer. Its row 0 is pinned: inverse mass 0, and a tie
 * (world.h, sim__tie) holding the particle's point in the bone's body
 * frame. Before each substep's integration the pinned particles are put on
 * those points and their previous positions where they were, so a pin
 * carries the bone's velocity (seed 000 §8: "set both pos and prevPos ...
 * every frame"); the rigid substeps run before the particle substep
 * (step.c), so the pose is this substep's and the pin never lags.
 *
 * Long-range attachments (Kim, Chentanez and Müller 2012, "Long Range
 * Attachments - A Method to Simulate Inextensible Clothing in Computer
 * Games", SCA): each free particle is tied to its nearest pinned particle
 * and may be at most its rest distance from it, a one-sided constraint
 * projected by moving the free particle only. The rest distance is the
 * Euclidean one in the rest layout, which is the geodesic on the garments
 * built here: a cape is flat, a skirt's nearest pin is straight up its
 * cone's generator, a strand of hair is straight (the paper's §4 uses
 * Euclidean tethers where the rest shape is flat). They stop the
 * stretching that iterations alone leave under fast motion.
 */
#include "rigid.h"
#include "vec.h"
#include "world.h"

#include <string.h>

#define SIM__ATTACH_COOKIE   0x41545443u /* "ATTC" */
#define SIM__GARMENT_MAX_DIM 64u
#define SIM__PI              3.14159265f

const char* sim_garment_kind_name(sim_garment_kind kind) {
    switch (kind) {
    case SIM_GARMENT_CAPE:
        return "cape";
    case SIM_GARMENT_SKIRT:
        return "skirt";
    case SIM_GARMENT_HAIR:
        return "hair";
    case SIM_GARMENT_NONE:
        break;
    }
    return NULL;
}

sim_garment_kind sim_garment_kind_from_name(const char* name) {
    for (int k = SIM_GARMENT_CAPE; k <= SIM_GARMENT_HAIR; ++k) {
        if (name != NULL && strcmp(name, sim_garment_kind_name((sim_garment_kind)k)) == 0) {
            return (sim_garment_kind)k;
        }
    }
    return SIM_GARMENT_NONE;
}

sim_cloth_attach_def sim_cloth_attach_def_default(void) {
    sim_cloth_attach_def d;
    memset(&d, 0, sizeof d);
    d.kind = SIM_GARMENT_CAPE;
    d.particle_radius = 0.02f;
    d.bend_compliance = 1e-3f;
    d.long_range = true;
    d.cookie = SIM__ATTACH_COOKIE;
    return d;
}

// Distance constraints of a garment's grid: structural (across, down),
// shear and bend for a cape or a skirt (around, closed for a skirt); down
// and bend-down only for hair. Must match add_constraints().
static uint32_t garment_dists(sim_garment_kind kind, uint32_t C, uint32_t R) {
    if (kind == SIM_GARMENT_HAIR) {
        return C * ((R - 1) + (R > 2 ? R - 2 : 0));
    }
    const uint32_t across = kind == SIM_GARMENT_SKIRT ? C : C - 1; // per row
    const uint32_t bend_across = kind == SIM_GARMENT_SKIRT ? C : (C > 2 ? C - 2 : 0);
    return across * R + C * (R - 1) + 2 * across * (R - 1) + bend_across * R +
           (R > 2 ? C * (R - 2) : 0);
}

// Model-space position (bind pose) of grid particle (c, r).
static sim_vec3 layout(const sim_garment_def* g, uint32_t C, uint32_t R, uint32_t c, uint32_t r) {
    const float t = (float)r / (float)(R - 1);
    switch (g->kind) {
    case SIM_GARMENT_SKIRT: {
        const float th = 2.0f * SIM__PI * (float)c / (float)C;
        const float rad = g->radius_top + (g->radius_bottom - g->radius_top) * t;
        return v3_add(g->a, v3(rad * sinf(th), -g->length * t, rad * cosf(th)));
    }
    case SIM_GARMENT_HAIR: {
        // Roots over the arc centred on the back (-Z); each strand laid out
        // down and outward at 30° from the vertical, clear of the body.
        const float u = C > 1 ? (float)c / (float)(C - 1) - 0.5f : 0.0f;
        const float ph = SIM__PI + g->arc * u;
        sim_vec3 out = v3(sinf(ph), 0.0f, cosf(ph));
        sim_vec3 root = v3_add(g->a, v3_scale(out, g->radius_top));
        sim_vec3 dir = v3_add(v3_scale(out, 0.5f), v3(0.0f, -0.8660254f, 0.0f));
        return v3_add(root, v3_scale(dir, g->length * t));
    }
    default: {
        const float s = (float)c / (float)(C - 1);
        sim_vec3 top = v3_add(g->a, v3_scale(v3_sub(g->b, g->a), s));
        return v3_add(top, v3(0.0f, -g->length * t, 0.0f));
    }
    }
}

static void add_constraints(sim_world* w, sim__entity* e, sim_garment_kind kind, uint32_t C,
                            uint32_t R, float stretch, float bend) {
    uint32_t k = e->d_first;
    const bool ring = kind == SIM_GARMENT_SKIRT;
    if (kind == SIM_GARMENT_HAIR) {
        for (uint32_t c = 0; c < C; ++c) {
            for (uint32_t r = 0; r + 1 < R; ++r) {
                sim__dist_init(w, e, k++, r * C + c, (r + 1) * C + c, SIM__DIST_EQUAL, 1.0f,
                               stretch);
            }
            for (uint32_t r = 0; r + 2 < R; ++r) {
                sim__dist_init(w, e, k++, r * C + c, (r + 2) * C + c, SIM__DIST_EQUAL, 1.0f, bend);
            }
        }
        e->stick_count = e->d_count;
        return;
    }
    const uint32_t across = ring ? C : C - 1;
    // Structural first, row by row from the pinned one (the Gauss-Seidel
    // sweep carries the load down in one pass), then shear, then bend.
    for (uint32_t r = 0; r < R; ++r) {
        for (uint32_t c = 0; c < C; ++c) {
            uint32_t i = r * C + c;
            if (c < across) {
                sim__dist_init(w, e, k++, i, r * C + (c + 1) % C, SIM__DIST_EQUAL, 1.0f, stretch);
            }
            if (r + 1 < R) {
                sim__dist_init(w, e, k++, i, i + C, SIM__DIST_EQUAL, 1.0f, stretch);
            }
        }
    }
    for (uint32_t r = 0; r + 1 < R; ++r) {
        for (uint32_t c = 0; c < across; ++c) {
            uint32_t c1 = (c + 1) % C;
            sim__dist_init(w, e, k++, r * C + c, (r + 1) * C + c1, SIM__DIST_EQUAL, 1.0f, bend);
            sim__dist_init(w, e, k++, r * C + c1, (r + 1) * C + c, SIM__DIST_EQUAL, 1.0f, bend);
        }
    }
    const uint32_t bend_across = ring ? C : (C > 2 ? C - 2 : 0);
    for (uint32_t r = 0; r < R; ++r) {
        for (uint32_t c = 0; c < bend_across; ++c) {
            sim__dist_init(w, e, k++, r * C + c, r * C + (c + 2) % C, SIM__DIST_EQUAL, 1.0f, bend);
        }
    }
    for (uint32_t r = 0; r + 2 < R; ++r) {
        for (uint32_t c = 0; c < C; ++c) {
            sim__dist_init(w, e, k++, r * C + c, (r + 2) * C + c, SIM__DIST_EQUAL, 1.0f, bend);
        }
    }
    e->stick_count = e->d_count;
}

void sim__tethers_build(sim_world* w, sim__entity* e) {
    const sim_vec3* pos = w->pos + e->p_first;
    const float* im = w->inv_mass + e->p_first;
    sim__tie* tie = w->tie + e->p_first;
    e->tethered = false;
    // The pinned particles, chained through their own (unused) tether
    // fields in increasing index order, so each free particle looks at the
    // pins only: O(particles × pins), not particles² (a 256 × 256 sheet).
    uint32_t head = SIM__NO_TIE;
    for (uint32_t i = e->p_count; i-- > 0;) {
        tie[i].tether = SIM__NO_TIE;
        if (im[i] == 0.0f) {
            tie[i].tether = head;
            head = i;
        }
    }
    for (uint32_t i = 0; i < e->p_count; ++i) {
        if (im[i] == 0.0f) {
            continue;
        }
        float best_d = INFINITY;
        for (uint32_t p = head; p != SIM__NO_TIE; p = tie[p].tether) {
            float d = v3_len(v3_sub(pos[i], pos[p]));
            if (d < best_d) {
                best_d = d;
                tie[i].tether = p;
            }
        }
        tie[i].tether_len = best_d;
        e->tethered = e->tethered || tie[i].tether != SIM__NO_TIE;
    }
    for (uint32_t p = head; p != SIM__NO_TIE;) { // pins have no tether
        uint32_t next = tie[p].tether;
        tie[p].tether = SIM__NO_TIE;
        p = next;
    }
}

// Checks a def and finds the garment; SIM_OK with *g set.
static int check_attach(const sim_world* w, const sim_cloth_attach_def* def,
                        const sim_garment_def** g) {
    if (!sim_is_finite(def->mass) || !sim_is_finite(def->particle_radius) ||
        !sim_is_finite(def->stretch_compliance) || !sim_is_finite(def->bend_compliance) ||
        !sim_is_finite(def->tear_ratio)) {
        return SIM_E_NOT_FINITE;
    }
    if (def->tear_ratio != 0.0f && !(def->tear_ratio >= 1.01f && def->tear_ratio <= 100.0f)) {
        return SIM_E_OUT_OF_RANGE;
    }
    if ((def->cols != 0 && (def->cols < 2 || def->cols > SIM__GARMENT_MAX_DIM)) ||
        (def->rows != 0 && (def->rows < 2 || def->rows > SIM__GARMENT_MAX_DIM)) ||
        (def->mass != 0.0f && (def->mass < SIM_MIN_MASS || def->mass > SIM_MAX_MASS)) ||
        !(def->particle_radius >= 0.0f && def->particle_radius <= 0.2f) ||
        !(def->stretch_compliance >= 0.0f && def->stretch_compliance <= 1.0f) ||
        !(def->bend_compliance >= 0.0f && def->bend_compliance <= 1.0f)) {
        return SIM_E_OUT_OF_RANGE;
    }
    const sim__entity* we = sim__entity_get(w, def->wearer);
    if (we == NULL || we->kind != SIM_ENTITY_CHARACTER) {
        return SIM_E_STALE_ID;
    }
    const sim_skeleton_def* sk = &w->chars[def->wearer.index1 - 1].sk->def;
    for (uint32_t k = 0; k < sk->garment_count; ++k) {
        if (sk->garments[k].kind == def->kind) {
            *g = &sk->garments[k];
            return SIM_OK;
        }
    }
    return SIM_E_UNKNOWN_NAME;
}

// Checks a def (check_attach()) and gives the grid it asks for: its
// cols × rows, the asset's where the def gives 0.
static int resolve_attach(const sim_world* w, const sim_cloth_attach_def* def,
                          const sim_garment_def** g, uint32_t* cols, uint32_t* rows) {
    if (def == NULL || def->cookie != SIM__ATTACH_COOKIE) {
        return SIM_E_INVALID_ARG;
    }
    int rc = check_attach(w, def, g);
    if (rc != SIM_OK) {
        return rc;
    }
    *cols = def->cols != 0 ? def->cols : (*g)->cols;
    *rows = def->rows != 0 ? def->rows : (*g)->rows;
    return (*g)->kind == SIM_GARMENT_SKIRT && *cols < 3 ? SIM_E_OUT_OF_RANGE // a ring needs three
                                                        : SIM_OK;
}

int sim_world_attach_cloth_counts(const sim_world* w, const sim_cloth_attach_def* def,
                                  sim_counts* out) {
    const sim_garment_def* g = NULL;
    uint32_t C = 0, R = 0;
    int rc = out != NULL ? resolve_attach(w, def, &g, &C, &R) : SIM_E_INVALID_ARG;
    if (rc != SIM_OK) {
        return rc;
    }
    memset(out, 0, sizeof *out);
    out->entities = 1;
    out->particles = C * R;
    out->constraints = garment_dists(g->kind, C, R);
    return SIM_OK;
}

int sim_world_attach_cloth(sim_world* w, const sim_cloth_attach_def* def, sim_entity_id* out) {
    const sim_garment_def* g = NULL;
    uint32_t C = 0, R = 0;
    int rc = out != NULL ? resolve_attach(w, def, &g, &C, &R) : SIM_E_INVALID_ARG;
    if (rc != SIM_OK) {
        return rc;
    }
    const float mass = def->mass != 0.0f ? def->mass : g->mass;
    const sim__entity* we = sim__entity_get(w, def->wearer);
    const uint32_t wearer_slot = def->wearer.index1 - 1;
    const sim__skel* sk = w->chars[wearer_slot].sk;
    const sim__body* bone = &w->body[we->b_first + g->bone];
    // Bind pose → now: the bone's rigid motion from its bind pose.
    const sim_vec3 bx = sk->bind_x[g->bone];
    const sim_quat bq = sk->bind_q[g->bone];
    for (uint32_t r = 0; r < R; r += R - 1) {
        for (uint32_t c = 0; c < C; ++c) {
            sim_vec3 local = q_rotate_inv(bq, v3_sub(layout(g, C, R, c, r), bx));
            if (!sim_world_contains(w, v3_add(bone->x, q_rotate(bone->q, local)))) {
                return SIM_E_OUT_OF_RANGE;
            }
        }
    }

    sim_entity_id id;
    sim__entity* e;
    rc = sim__entity_begin(w, SIM_ENTITY_CLOTH, C * R, garment_dists(g->kind, C, R), 0, 0, 0, &id,
                           &e);
    if (rc != SIM_OK) {
        return rc;
    }
    // entity_begin may have grown the arrays: look the bone up again.
    we = sim__entity_get(w, def->wearer);
    bone = &w->body[we->b_first + g->bone];
    e->cols = C;
    e->rows = R;
    e->wearer = def->wearer;
    e->garment = (uint8_t)g->kind;
    e->wrap = g->kind == SIM_GARMENT_SKIRT;
    const float inv_mass = (float)(C * R) / mass;
    for (uint32_t r = 0; r < R; ++r) {
        for (uint32_t c = 0; c < C; ++c) {
            const uint32_t i = e->p_first + r * C + c;
            sim_vec3 local = q_rotate_inv(bq, v3_sub(layout(g, C, R, c, r), bx));
            sim_vec3 p = v3_add(bone->x, q_rotate(bone->q, local));
            sim__particle_init(w, i, p, r == 0 ? 0.0f : inv_mass, def->particle_radius);
            if (r == 0) {
                w->tie[i].bone = (uint16_t)g->bone;
                w->tie[i].local = local;
            }
        }
    }
    add_constraints(w, e, g->kind, C, R, def->stretch_compliance, def->bend_compliance);
    if (def->long_range) {
        sim__tethers_build(w, e);
    }
    e->tear_ratio = def->tear_ratio;
    (void)sim__cloth_batches_rebuild(w, e); // four at a time (cloth_batch.c)
    *out = id;
    return SIM_OK;
}

sim_entity_id sim_entity_wearer(const sim_world* w, sim_entity_id id) {
    const sim__entity* e = sim__entity_get(w, id);
    sim_entity_id none = {0, 0};
    return e != NULL && e->garment != SIM_GARMENT_NONE ? e->wearer : none;
}

sim_garment_kind sim_entity_garment(const sim_world* w, sim_entity_id id) {
    const sim__entity* e = sim__entity_get(w, id);
    return e != NULL ? (sim_garment_kind)e->garment : SIM_GARMENT_NONE;
}

// Puts entity e's pinned particles on their bone points. With `carry`, the
// previous position is where the particle was (a substep's pin: it moves
// with the bone); without, it moves by the same amount (velocity kept).
static void pin_entity(sim_world* w, const sim__entity* e, bool carry) {
    const sim__entity* we = sim__entity_get(w, e->wearer);
    if (we == NULL) {
        return;
    }
    for (uint32_t i = e->p_first; i < e->p_first + e->p_count; ++i) {
        const sim__tie* t = &w->tie[i];
        if (t->bone == SIM__NO_BONE) {
            continue;
        }
        const sim__body* b = &w->body[we->b_first + t->bone];
        sim_vec3 p = v3_add(b->x, q_rotate(b->q, t->local));
        w->prev[i] = carry ? w->pos[i] : v3_add(w->prev[i], v3_sub(p, w->pos[i]));
        w->pos[i] = p;
    }
}

void sim__garments_pin(sim_world* w) {
    for (uint32_t k = 0; k < w->order_count; ++k) {
        const sim__entity* e = &w->entities[w->order[k]];
        if (e->garment != SIM_GARMENT_NONE) {
            pin_entity(w, e, true);
        }
    }
}

void sim__garments_follow(sim_world* w) {
    for (uint32_t k = 0; k < w->order_count; ++k) {
        const sim__entity* e = &w->entities[w->order[k]];
        if (e->garment != SIM_GARMENT_NONE) {
            pin_entity(w, e, false);
        }
    }
}

void sim__tethers_project(sim_world* w, int it) {
    for (uint32_t k = 0; k < w->order_count; ++k) {
        const sim__entity* e = &w->entities[w->order[k]];
        if (!e->tethered || it >= e->iterations) {
            continue;
        }
        w->stats.particle_projections += e->p_count;
        sim_vec3* pos = w->pos + e->p_first;
        const sim__tie* tie = w->tie + e->p_first;
        for (uint32_t i = 0; i < e->p_count; ++i) {
            const sim__tie* t = &tie[i];
            if (t->tether == SIM__NO_TIE) {
                continue;
            }
            sim_vec3 d = v3_sub(pos[i], pos[t->tether]);
            float len = v3_len(d);
            if (len > t->tether_len) {
                pos[i] = v3_add(pos[t->tether], v3_scale(d, t->tether_len / len));
            }
        }
    }
}

void sim__garments_despawn(sim_world* w, sim_entity_id wearer) {
    // Each despawn reorders w->order: look again from the start.
    for (uint32_t k = 0; k < w->order_count;) {
        const uint32_t slot = w->order[k];
        const sim__entity* e = &w->entities[slot];
        if (e->garment != SIM_GARMENT_NONE && e->wearer.index1 == wearer.index1 &&
            e->wearer.generation == wearer.generation) {
            sim_entity_id id = {slot + 1, e->generation};
            sim_world_despawn(w, id);
            k = 0;
            continue;
        }
        k++;
    }
}
