/*
 * query.c: rays against a world (sim_query.h): the ground, static boxes,
 * bone capsules and balls (now, or as a history kept them), and particles'
 * spheres. Each shape answers the distance at which the ray enters it, or
 * nothing; the nearest wins. Shapes that hold the origin are skipped.
 */
#include "quat.h"
#include "rigid.h"
#include "sim_query.h"
#include "vec.h"
#include "world.h"

#include <math.h>
#include <string.h>

const char* sim_hit_kind_name(sim_hit_kind kind) {
    switch (kind) {
    case SIM_HIT_NONE:
        return "none";
    case SIM_HIT_GROUND:
        return "ground";
    case SIM_HIT_BOX:
        return "box";
    case SIM_HIT_BONE:
        return "bone";
    case SIM_HIT_BALL:
        return "ball";
    case SIM_HIT_PARTICLE:
        return "particle";
    }
    return "unknown";
}

typedef struct ray {
    sim_vec3 o, d; ///< Origin, unit direction.
    float max;     ///< Farthest distance, m.
} ray;

// The ray moved along itself to `s` m before the point nearest `c` less
// `reach` (when that is ahead of its origin): intersections are computed
// from there and *skip gets how far it moved. Single precision loses the
// few millimetres a bone's capsule needs when the origin is hundreds of
// metres away (differences of squares of large numbers), so every shape is
// met from close by.
static ray ray_near(const ray* r, sim_vec3 c, float reach, float* skip) {
    const float s = v3_dot(v3_sub(c, r->o), r->d) - reach;
    *skip = s > 0.0f ? s : 0.0f;
    ray n = *r;
    n.o = v3_add(r->o, v3_scale(r->d, *skip));
    return n;
}

// Distance at which the ray enters the sphere (c, r), or -1 (missed, behind,
// or the origin inside it or on it).
static float ray_sphere_at(const ray* r, sim_vec3 c, float radius);

static float ray_sphere(const ray* r, sim_vec3 c, float radius) {
    float skip = 0.0f;
    const ray n = ray_near(r, c, 2.0f * radius + 1.0f, &skip);
    const float t = ray_sphere_at(&n, c, radius);
    return t >= 0.0f ? t + skip : -1.0f;
}

static float ray_sphere_at(const ray* r, sim_vec3 c, float radius) {
    const sim_vec3 oc = v3_sub(r->o, c);
    const float b = v3_dot(oc, r->d);
    const float k = v3_dot(oc, oc) - radius * radius;
    if (k <= 0.0f || b >= 0.0f) {
        return -1.0f; // inside, or moving away from it
    }
    const float disc = b * b - k;
    if (disc < 0.0f) {
        return -1.0f;
    }
    return -b - sqrtf(disc);
}

// Distance at which the ray enters the capsule of segment p0-p1 and radius
// `radius`, or -1: the infinite cylinder about the segment where the entry
// lies between the ends, else the nearer end sphere (Ericson §5.3.7).
static float ray_capsule_at(const ray* r, sim_vec3 p0, sim_vec3 p1, float radius);

static float ray_capsule(const ray* r, sim_vec3 p0, sim_vec3 p1, float radius) {
    float skip = 0.0f;
    const sim_vec3 c = v3_scale(v3_add(p0, p1), 0.5f);
    const float reach = v3_len(v3_sub(p1, p0)) + 2.0f * radius + 1.0f;
    const ray n = ray_near(r, c, reach, &skip);
    const float t = ray_capsule_at(&n, p0, p1, radius);
    return t >= 0.0f ? t + skip : -1.0f;
}

static float ray_capsule_at(const ray* r, sim_vec3 p0, sim_vec3 p1, float radius) {
    const sim_vec3 ba = v3_sub(p1, p0), oa = v3_sub(r->o, p0);
    const float baba = v3_dot(ba, ba);
    // Inside: within the radius of the segment.
    float s = baba > 0.0f ? v3_dot(oa, ba) / baba : 0.0f;
    s = s < 0.0f ? 0.0f : (s > 1.0f ? 1.0f : s);
    const sim_vec3 off = v3_sub(oa, v3_scale(ba, s));
    if (v3_dot(off, off) <= radius * radius) {
        return -1.0f;
    }
    float best = -1.0f;
    const float bard = v3_dot(ba, r->d), baoa = v3_dot(ba, oa);
    const float a = baba - bard * bard; // baba · |d ⊥ ba|²
    if (baba > 0.0f && a > 1e-9f * baba) {
        const float b = baba * v3_dot(r->d, oa) - baoa * bard;
        const float c = baba * v3_dot(oa, oa) - baoa * baoa - radius * radius * baba;
        const float disc = b * b - a * c;
        if (disc >= 0.0f) {
            const float t = (-b - sqrtf(disc)) / a;
            const float y = baoa + t * bard;
            if (t >= 0.0f && y > 0.0f && y < baba) {
                best = t;
            }
        }
    }
    const float t0 = ray_sphere_at(r, p0, radius), t1 = ray_sphere_at(r, p1, radius);
    if (t0 >= 0.0f && (best < 0.0f || t0 < best)) {
        best = t0;
    }
    if (t1 >= 0.0f && (best < 0.0f || t1 < best)) {
        best = t1;
    }
    return best;
}

// Distance at which the ray enters the box (c ± h), or -1; *axis gets the
// axis of the face it enters by (Ericson §5.3.3, slabs).
static float ray_box(const ray* r, sim_vec3 c, sim_vec3 h, int* axis) {
    const float o[3] = {r->o.x - c.x, r->o.y - c.y, r->o.z - c.z};
    const float d[3] = {r->d.x, r->d.y, r->d.z};
    const float e[3] = {h.x, h.y, h.z};
    float enter = -1e30f, leave = 1e30f;
    int enter_axis = -1;
    for (int k = 0; k < 3; ++k) {
        if (fabsf(d[k]) < 1e-12f) {
            if (o[k] < -e[k] || o[k] > e[k]) {
                return -1.0f; // parallel to the slab and outside it
            }
            continue;
        }
        float t0 = (-e[k] - o[k]) / d[k], t1 = (e[k] - o[k]) / d[k];
        if (t0 > t1) {
            const float t = t0;
            t0 = t1;
            t1 = t;
        }
        if (t0 > enter) {
            enter = t0;
            enter_axis = k;
        }
        leave = t1 < leave ? t1 : leave;
    }
    if (enter_axis < 0 || enter > leave || !(enter > 0.0f)) {
        return -1.0f; // missed, behind, or the origin inside or on it
    }
    *axis = enter_axis;
    return enter;
}

// Keeps a hit at distance t when it is nearer than what *out holds.
static bool nearer(const ray* r, float t, const sim_ray_hit* out) {
    return t >= 0.0f && t <= r->max && (out->kind == SIM_HIT_NONE || t < out->distance);
}

static void take(sim_ray_hit* out, const ray* r, float t, sim_hit_kind kind, sim_entity_id id,
                 uint32_t index, sim_vec3 normal) {
    out->kind = kind;
    out->entity = id;
    out->index = index;
    out->distance = t;
    out->point = v3_add(r->o, v3_scale(r->d, t));
    out->normal = normal;
}

// A capsule or sphere body at pose p with shape bi.
static void hit_body(const ray* r, const sim__body_info* bi, sim_bone_pose p, sim_hit_kind kind,
                     sim_entity_id id, uint32_t index, sim_ray_hit* out) {
    const sim_vec3 half = q_rotate(p.q, v3(bi->half_len, 0.0f, 0.0f));
    const sim_vec3 p0 = v3_sub(p.p, half), p1 = v3_add(p.p, half);
    const float t =
        bi->half_len > 0.0f ? ray_capsule(r, p0, p1, bi->radius) : ray_sphere(r, p.p, bi->radius);
    if (!nearer(r, t, out)) {
        return;
    }
    // The normal: from the nearest point of the segment to the hit.
    const sim_vec3 at = v3_add(r->o, v3_scale(r->d, t));
    const sim_vec3 ba = v3_sub(p1, p0);
    const float baba = v3_dot(ba, ba);
    float s = baba > 0.0f ? v3_dot(v3_sub(at, p0), ba) / baba : 0.0f;
    s = s < 0.0f ? 0.0f : (s > 1.0f ? 1.0f : s);
    const sim_vec3 n = v3_normalize(v3_sub(at, v3_add(p0, v3_scale(ba, s))));
    take(out, r, t, kind, id, index, n);
}

// Whether the ray passes within the box [lo, hi] before r->max (a cull).
static bool ray_meets_bounds(const ray* r, sim_vec3 lo, sim_vec3 hi) {
    const sim_vec3 c = v3_scale(v3_add(lo, hi), 0.5f), h = v3_scale(v3_sub(hi, lo), 0.5f);
    if (fabsf(r->o.x - c.x) <= h.x && fabsf(r->o.y - c.y) <= h.y && fabsf(r->o.z - c.z) <= h.z) {
        return true;
    }
    int axis = 0;
    const float t = ray_box(r, c, h, &axis);
    return t >= 0.0f && t <= r->max;
}

static void hit_particles(const sim_world* w, const ray* r, sim_ray_hit* out) {
    for (uint32_t k = 0; k < w->order_count; ++k) {
        const uint32_t slot = w->order[k];
        const sim__entity* e = &w->entities[slot];
        if (e->p_count == 0) {
            continue;
        }
        float rmax = 0.0f;
        sim_vec3 lo = w->pos[e->p_first], hi = lo;
        for (uint32_t i = e->p_first; i < e->p_first + e->p_count; ++i) {
            const sim_vec3 p = w->pos[i];
            lo = v3(fminf(lo.x, p.x), fminf(lo.y, p.y), fminf(lo.z, p.z));
            hi = v3(fmaxf(hi.x, p.x), fmaxf(hi.y, p.y), fmaxf(hi.z, p.z));
            rmax = fmaxf(rmax, w->radius[i]);
        }
        const sim_vec3 pad = v3(rmax, rmax, rmax);
        if (!ray_meets_bounds(r, v3_sub(lo, pad), v3_add(hi, pad))) {
            continue;
        }
        const sim_entity_id id = {slot + 1, e->generation};
        for (uint32_t i = 0; i < e->p_count; ++i) {
            const sim_vec3 c = w->pos[e->p_first + i];
            const float t = ray_sphere(r, c, w->radius[e->p_first + i]);
            if (nearer(r, t, out)) {
                take(out, r, t, SIM_HIT_PARTICLE, id, i,
                     v3_normalize(v3_sub(v3_add(r->o, v3_scale(r->d, t)), c)));
            }
        }
    }
}

int sim_world_raycast(const sim_world* w, const sim_history* h, uint64_t tick, sim_vec3 origin,
                      sim_vec3 direction, float max_distance, sim_ray_hit* out) {
    if (w == NULL || out == NULL) {
        return SIM_E_INVALID_ARG;
    }
    if (!sim_vec3_is_finite(origin) || !sim_vec3_is_finite(direction) ||
        !sim_is_finite(max_distance)) {
        return SIM_E_NOT_FINITE;
    }
    // Any non-zero length: scaled by its largest component first, so that
    // a tiny direction's square does not underflow.
    const float big = fmaxf(fabsf(direction.x), fmaxf(fabsf(direction.y), fabsf(direction.z)));
    if (big > 0.0f) {
        direction = v3_scale(direction, 1.0f / big);
    }
    const float len = v3_len(direction);
    if (!(len > 0.0f) || !(max_distance > 0.0f) || max_distance > SIM_MAX_RAY_DISTANCE ||
        !sim_world_contains(w, origin) || tick > w->tick ||
        (tick != w->tick && !sim__history_has(h, tick))) {
        return SIM_E_OUT_OF_RANGE;
    }
    const ray r = {origin, v3_scale(direction, 1.0f / len), max_distance};
    memset(out, 0, sizeof *out);
    out->kind = SIM_HIT_NONE;

    // The ground, from above.
    if (w->def.ground && r.o.y > 0.0f && r.d.y < 0.0f) {
        const float t = -r.o.y / r.d.y;
        if (nearer(&r, t, out)) {
            take(out, &r, t, SIM_HIT_GROUND, (sim_entity_id){0, 0}, 0, v3(0.0f, 1.0f, 0.0f));
            out->point.y = 0.0f;
        }
    }
    for (uint32_t i = 0; i < w->box_count; ++i) {
        int axis = 0;
        const float t = ray_box(&r, w->boxes[i].center, w->boxes[i].half_extents, &axis);
        if (nearer(&r, t, out)) {
            const float comp[3] = {r.d.x, r.d.y, r.d.z};
            const float sign = comp[axis] > 0.0f ? -1.0f : 1.0f;
            const sim_vec3 n =
                v3(axis == 0 ? sign : 0.0f, axis == 1 ? sign : 0.0f, axis == 2 ? sign : 0.0f);
            take(out, &r, t, SIM_HIT_BOX, (sim_entity_id){0, 0}, i, n);
        }
    }
    // Bodies, as they are at `tick`.
    for (uint32_t k = 0; k < w->order_count; ++k) {
        const uint32_t slot = w->order[k];
        const sim__entity* e = &w->entities[slot];
        if (e->b_count == 0) {
            continue;
        }
        const sim_entity_id id = {slot + 1, e->generation};
        int err = SIM_OK;
        uint32_t n = 0;
        const sim_bone_pose* past = sim__history_poses(h, w, tick, id, &n, &err);
        if (err == SIM_E_OUT_OF_RANGE) {
            continue; // not there at `tick` (spawned since)
        }
        const sim_hit_kind kind = e->kind == SIM_ENTITY_BALL ? SIM_HIT_BALL : SIM_HIT_BONE;
        for (uint32_t i = 0; i < e->b_count; ++i) {
            const sim__body* b = &w->body[e->b_first + i];
            const sim_bone_pose p =
                past != NULL ? past[i < n ? i : n - 1] : (sim_bone_pose){b->x, b->q};
            hit_body(&r, &w->binfo[e->b_first + i], p, kind, id, i, out);
        }
    }
    hit_particles(w, &r, out);
    return SIM_OK;
}
