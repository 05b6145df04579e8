/*
 * softbody.c: soft bodies (seed 000 §9): the builder of a particle lattice
 * filling a cube or a ball, its shape matching once per substep (Müller et
 * al. 2005, §3.3; the rotation by Müller et al. 2016, Alg. 1, warm-started)
 * with an optional volume term, and particle–particle contacts between
 * different soft bodies through a spatial hash (Teschner et al. 2003),
 * once per relaxation pass.
 *
 * What it owns: the per-slot state `softs` (rotation, fit, rest moments),
 * the per-particle rest offsets `sm_rest` (they slide with the particles
 * on a despawn, entity.c) and the contact hash's scratch `sm_head` /
 * `sm_next`; all grown by sim_world_reserve() at spawn time (world.c),
 * never in a step.
 *
 * Determinism: every loop runs by index in storage order; the hash only
 * decides which pairs are looked at, and a pair is projected once per pass
 * (buckets deduplicated), in the order of the first particle's index and
 * then of the bucket chains, which are built in index order.
 */
#include "quat.h"
#include "vec.h"
#include "world.h"

#include <string.h>

_Static_assert(SIM__SOFTBODY_MAX_RES == SIM_SOFTBODY_MAX_RES, "one lattice bound");
_Static_assert(SIM__SOFTBODY_MAX_RES* SIM__SOFTBODY_MAX_RES* SIM__SOFTBODY_MAX_RES <= 32767,
               "lattice_sticks numbers particles in int16_t");

// ---------------------------------------------------------------------------
// Lattice
// ---------------------------------------------------------------------------

// Whether lattice point (i, j, k) of a res³ lattice is part of the shape.
// A ball keeps the points whose cell centre lies within it: in units of
// half a cell, Σ (2i + 1 − res)² ≤ res², an exact integer test.
static bool lattice_inside(uint32_t shape, uint32_t res, uint32_t i, uint32_t j, uint32_t k) {
    if (shape == SIM_SOFTBODY_BOX) {
        return true;
    }
    int64_t r = (int64_t)res;
    int64_t a = 2 * (int64_t)i + 1 - r, b = 2 * (int64_t)j + 1 - r, c = 2 * (int64_t)k + 1 - r;
    return a * a + b * b + c * c <= r * r;
}

// Whether (i, j, k), given as signed, is inside the grid and the shape.
static bool lattice_has(uint32_t shape, uint32_t res, int64_t i, int64_t j, int64_t k) {
    if (i < 0 || j < 0 || k < 0 || i >= (int64_t)res || j >= (int64_t)res || k >= (int64_t)res) {
        return false;
    }
    return lattice_inside(shape, res, (uint32_t)i, (uint32_t)j, (uint32_t)k);
}

static uint32_t lattice_count(uint32_t shape, uint32_t res) {
    uint32_t n = 0;
    for (uint32_t k = 0; k < res; ++k) {
        for (uint32_t j = 0; j < res; ++j) {
            for (uint32_t i = 0; i < res; ++i) {
                n += lattice_inside(shape, res, i, j, k) ? 1u : 0u;
            }
        }
    }
    return n;
}

// A lattice point with one of its six neighbours missing.
static bool lattice_surface(uint32_t shape, uint32_t res, int64_t i, int64_t j, int64_t k) {
    return !lattice_has(shape, res, i - 1, j, k) || !lattice_has(shape, res, i + 1, j, k) ||
           !lattice_has(shape, res, i, j - 1, k) || !lattice_has(shape, res, i, j + 1, k) ||
           !lattice_has(shape, res, i, j, k - 1) || !lattice_has(shape, res, i, j, k + 1);
}

// The surface sticks of a lattice: edges along +x, +y, +z between two
// surface points. Writes at most cap pairs (pairs may be NULL with cap 0)
// and returns how many there are in all.
static uint32_t lattice_sticks(uint32_t shape, uint32_t res, uint32_t* pairs, uint32_t cap) {
    int16_t map[SIM__SOFTBODY_MAX_RES * SIM__SOFTBODY_MAX_RES * SIM__SOFTBODY_MAX_RES];
    int16_t n = 0;
    for (uint32_t k = 0; k < res; ++k) {
        for (uint32_t j = 0; j < res; ++j) {
            for (uint32_t i = 0; i < res; ++i) {
                map[(k * res + j) * res + i] = lattice_inside(shape, res, i, j, k) ? n++ : -1;
            }
        }
    }
    uint32_t count = 0;
    for (uint32_t k = 0; k < res; ++k) {
        for (uint32_t j = 0; j < res; ++j) {
            for (uint32_t i = 0; i < res; ++i) {
                int16_t a = map[(k * res + j) * res + i];
                if (a < 0 || !lattice_surface(shape, res, i, j, k)) {
                    continue;
                }
                const uint32_t d[3][3] = {{1, 0, 0}, {0, 1, 0}, {0, 0, 1}};
                for (int m = 0; m < 3; ++m) {
                    uint32_t i2 = i + d[m][0], j2 = j + d[m][1], k2 = k + d[m][2];
                    if (i2 >= res || j2 >= res || k2 >= res) {
                        continue;
                    }
                    int16_t b = map[(k2 * res + j2) * res + i2];
                    if (b < 0 || !lattice_surface(shape, res, i2, j2, k2)) {
                        continue;
                    }
                    if (count < cap) {
                        pairs[2 * count] = (uint32_t)a;
                        pairs[2 * count + 1] = (uint32_t)b;
                    }
                    count++;
                }
            }
        }
    }
    return count;
}

// ---------------------------------------------------------------------------
// 3×3 helpers (row-major)
// ---------------------------------------------------------------------------

static float m3_det(const float m[9]) {
    return m[0] * (m[4] * m[8] - m[5] * m[7]) - m[1] * (m[3] * m[8] - m[5] * m[6]) +
           m[2] * (m[3] * m[7] - m[4] * m[6]);
}

// The cofactor matrix: cof(m)_ij = (−1)^(i+j) × the minor of m_ij
// (= det(m) m⁻ᵀ when m is invertible).
static void m3_cofactor(const float m[9], float c[9]) {
    c[0] = m[4] * m[8] - m[5] * m[7];
    c[1] = m[5] * m[6] - m[3] * m[8];
    c[2] = m[3] * m[7] - m[4] * m[6];
    c[3] = m[2] * m[7] - m[1] * m[8];
    c[4] = m[0] * m[8] - m[2] * m[6];
    c[5] = m[1] * m[6] - m[0] * m[7];
    c[6] = m[1] * m[5] - m[2] * m[4];
    c[7] = m[2] * m[3] - m[0] * m[5];
    c[8] = m[0] * m[4] - m[1] * m[3];
}

static sim_vec3 m3_mul_v(const float m[9], sim_vec3 v) {
    return v3(m[0] * v.x + m[1] * v.y + m[2] * v.z, m[3] * v.x + m[4] * v.y + m[5] * v.z,
              m[6] * v.x + m[7] * v.y + m[8] * v.z);
}

static void m3_mul(const float a[9], const float b[9], float out[9]) {
    for (int r = 0; r < 3; ++r) {
        for (int c = 0; c < 3; ++c) {
            out[3 * r + c] = a[3 * r] * b[c] + a[3 * r + 1] * b[3 + c] + a[3 * r + 2] * b[6 + c];
        }
    }
}

// ---------------------------------------------------------------------------
// Polar decomposition (Müller et al. 2016, Algorithm 1)
// ---------------------------------------------------------------------------

sim_quat sim__polar_rotation(const float a[9], sim_quat q0, int max_iters, int* iters) {
    const sim_vec3 a0 = v3(a[0], a[3], a[6]), a1 = v3(a[1], a[4], a[7]), a2 = v3(a[2], a[5], a[8]);
    sim_quat q = q_normalize(q0);
    int it = 0;
    for (; it < max_iters; ++it) {
        sim_vec3 r0 = q_rotate(q, v3(1.0f, 0.0f, 0.0f));
        sim_vec3 r1 = q_rotate(q, v3(0.0f, 1.0f, 0.0f));
        sim_vec3 r2 = q_rotate(q, v3(0.0f, 0.0f, 1.0f));
        sim_vec3 num = v3_add(v3_add(v3_cross(r0, a0), v3_cross(r1, a1)), v3_cross(r2, a2));
        float den = fabsf(v3_dot(r0, a0) + v3_dot(r1, a1) + v3_dot(r2, a2)) + 1.0e-9f;
        sim_vec3 omega = v3_scale(num, 1.0f / den);
        float angle = v3_len(omega);
        if (!(angle >= SIM__POLAR_TOL)) { // also stops on NaN
            break;
        }
        q = q_normalize(q_mul(q_from_axis_angle(omega, angle), q));
    }
    if (iters != NULL) {
        *iters = it;
    }
    return q;
}

// ---------------------------------------------------------------------------
// Builder
// ---------------------------------------------------------------------------

sim_softbody_def sim_softbody_def_default(void) {
    sim_softbody_def d;
    memset(&d, 0, sizeof d);
    d.position = v3(0.0f, 1.0f, 0.0f);
    d.shape = SIM_SOFTBODY_BOX;
    d.size = 1.0f;
    d.resolution = 4;
    d.stiffness = 0.5f;
    d.pressure = 0.0f;
    d.mass = 10.0f;
    d.cookie = SIM__SOFTBODY_COOKIE;
    return d;
}

int sim_softbody_def_counts(const sim_softbody_def* def, sim_counts* out) {
    if (def == NULL || out == NULL || def->cookie != SIM__SOFTBODY_COOKIE) {
        return SIM_E_INVALID_ARG;
    }
    if ((def->shape != SIM_SOFTBODY_BOX && def->shape != SIM_SOFTBODY_SPHERE) ||
        def->resolution < SIM_SOFTBODY_MIN_RES || def->resolution > SIM_SOFTBODY_MAX_RES) {
        return SIM_E_OUT_OF_RANGE;
    }
    memset(out, 0, sizeof *out);
    out->entities = 1;
    out->particles = lattice_count((uint32_t)def->shape, def->resolution);
    out->soft_particles = out->particles;
    return SIM_OK;
}

// (Σ q qᵀ)⁻¹ by cofactors; the lattice spans three dimensions, so Σ q qᵀ is
// positive definite.
static void rest_moments(const sim_vec3* q, uint32_t n, float inv[9]) {
    float m[9] = {0};
    for (uint32_t i = 0; i < n; ++i) {
        const float v[3] = {q[i].x, q[i].y, q[i].z};
        for (int r = 0; r < 3; ++r) {
            for (int c = 0; c < 3; ++c) {
                m[3 * r + c] += v[r] * v[c];
            }
        }
    }
    float cof[9];
    m3_cofactor(m, cof);
    float det = m3_det(m);
    // m is symmetric, so its inverse is cof / det (cofᵀ = cof).
    for (int k = 0; k < 9; ++k) {
        inv[k] = cof[k] / det;
    }
}

int sim_world_spawn_softbody(sim_world* w, const sim_softbody_def* def, sim_entity_id* out) {
    if (def == NULL || out == NULL || def->cookie != SIM__SOFTBODY_COOKIE) {
        return SIM_E_INVALID_ARG;
    }
    if (!sim_vec3_is_finite(def->position) || !sim_is_finite(def->size) ||
        !sim_is_finite(def->stiffness) || !sim_is_finite(def->pressure) ||
        !sim_is_finite(def->mass)) {
        return SIM_E_NOT_FINITE;
    }
    sim_counts add;
    int rc = sim_softbody_def_counts(def, &add);
    if (rc != SIM_OK) {
        return rc;
    }
    const uint32_t n = add.particles;
    if (def->size < SIM_SOFTBODY_MIN_SIZE || def->size > SIM_SOFTBODY_MAX_SIZE ||
        !(def->stiffness > 0.0f && def->stiffness <= 1.0f) ||
        !(def->pressure >= 0.0f && def->pressure <= 1.0f) || !(def->mass <= SIM_MAX_MASS) ||
        !(def->mass / (float)n >= SIM_MIN_MASS)) {
        return SIM_E_OUT_OF_RANGE;
    }
    const float half = 0.5f * def->size;
    if (!sim_world_contains(w, v3_sub(def->position, v3(half, half, half))) ||
        !sim_world_contains(w, v3_add(def->position, v3(half, half, half)))) {
        return SIM_E_OUT_OF_RANGE;
    }
    if (!sim__work_fits_counts(w, &add)) {
        return SIM_E_CAPACITY;
    }
    sim__entity* e;
    rc = sim__entity_begin(w, SIM_ENTITY_SOFTBODY, n, 0, 0, 0, 0, out, &e);
    if (rc != SIM_OK) {
        return rc;
    }
    const uint32_t res = def->resolution, shape = (uint32_t)def->shape;
    const float d = def->size / (float)res;
    const float inv_mass = (float)n / def->mass;
    uint32_t p = e->p_first;
    for (uint32_t k = 0; k < res; ++k) {
        for (uint32_t j = 0; j < res; ++j) {
            for (uint32_t i = 0; i < res; ++i) {
                if (!lattice_inside(shape, res, i, j, k)) {
                    continue;
                }
                sim_vec3 o = v3(((float)i + 0.5f) * d - half, ((float)j + 0.5f) * d - half,
                                ((float)k + 0.5f) * d - half);
                sim__particle_init(w, p, v3_add(def->position, o), inv_mass, 0.5f * d);
                p++;
            }
        }
    }
    // Rest offsets from the rest centroid (the lattice is symmetric about
    // `position`, but the mean is what the fit uses).
    sim_vec3 c0 = v3(0.0f, 0.0f, 0.0f);
    for (uint32_t i = e->p_first; i < e->p_first + n; ++i) {
        c0 = v3_add(c0, w->pos[i]);
    }
    c0 = v3_scale(c0, 1.0f / (float)n);
    for (uint32_t i = e->p_first; i < e->p_first + n; ++i) {
        w->sm_rest[i] = v3_sub(w->pos[i], c0);
    }
    sim__softbody* sb = &w->softs[out->index1 - 1];
    memset(sb, 0, sizeof *sb);
    sb->q = q_identity();
    sb->c = c0;
    rest_moments(w->sm_rest + e->p_first, n, sb->aqq_inv);
    float g0 = 0.0f;
    for (uint32_t i = e->p_first; i < e->p_first + n; ++i) {
        sim_vec3 g = m3_mul_v(sb->aqq_inv, w->sm_rest[i]);
        g0 += inv_mass * v3_dot(g, g);
    }
    sb->vol_g0 = g0;
    sb->volume_ratio = 1.0f;
    sb->stiffness = def->stiffness;
    sb->pressure = def->pressure;
    sb->size = def->size;
    sb->shape = shape;
    sb->resolution = res;
    e->stick_count = lattice_sticks(shape, res, NULL, 0);
    w->sp_count += n;
    w->soft_bodies++;
    return SIM_OK;
}

uint32_t sim__softbody_copy_sticks(const sim_world* w, uint32_t slot, uint32_t* pairs,
                                   uint32_t cap) {
    const sim__softbody* sb = &w->softs[slot];
    uint32_t all = lattice_sticks(sb->shape, sb->resolution, pairs, cap);
    return all < cap ? all : cap;
}

int sim_softbody_get_view(const sim_world* w, sim_entity_id id, sim_softbody_view* out) {
    const sim__entity* e = sim__entity_get(w, id);
    if (e == NULL || e->kind != SIM_ENTITY_SOFTBODY || out == NULL) {
        return SIM_E_STALE_ID;
    }
    const sim__softbody* sb = &w->softs[id.index1 - 1];
    out->rotation = sb->q;
    out->centroid = sb->c;
    out->volume_ratio = sb->volume_ratio;
    out->polar_iters = sb->polar_iters;
    out->shape = (sim_softbody_shape)sb->shape;
    out->size = sb->size;
    out->resolution = sb->resolution;
    out->stiffness = sb->stiffness;
    out->pressure = sb->pressure;
    return SIM_OK;
}

// ---------------------------------------------------------------------------
// Shape matching
// ---------------------------------------------------------------------------

// Centroid and A = Σ (x_i − c) q_iᵀ of particles [first, first + n).
static sim_vec3 fit(const sim_world* w, uint32_t first, uint32_t n, float a[9]) {
    sim_vec3 c = v3(0.0f, 0.0f, 0.0f);
    for (uint32_t i = first; i < first + n; ++i) {
        c = v3_add(c, w->pos[i]);
    }
    c = v3_scale(c, 1.0f / (float)n);
    memset(a, 0, 9 * sizeof *a);
    for (uint32_t i = first; i < first + n; ++i) {
        sim_vec3 x = v3_sub(w->pos[i], c);
        sim_vec3 q = w->sm_rest[i];
        a[0] += x.x * q.x;
        a[1] += x.x * q.y;
        a[2] += x.x * q.z;
        a[3] += x.y * q.x;
        a[4] += x.y * q.y;
        a[5] += x.y * q.z;
        a[6] += x.z * q.x;
        a[7] += x.z * q.y;
        a[8] += x.z * q.z;
    }
    return c;
}

// The volume term: one XPBD projection of C = det F − 1, F = A Aqq⁻¹.
static void volume_project(sim_world* w, const sim__softbody* sb, uint32_t first, uint32_t n,
                           float h) {
    float a[9], f[9], cof[9];
    fit(w, first, n, a);
    m3_mul(a, sb->aqq_inv, f);
    float c = m3_det(f) - 1.0f;
    m3_cofactor(f, cof);
    float denom = 0.0f;
    for (uint32_t i = first; i < first + n; ++i) {
        sim_vec3 g = m3_mul_v(cof, m3_mul_v(sb->aqq_inv, w->sm_rest[i]));
        denom += w->inv_mass[i] * v3_dot(g, g);
    }
    const float p = sb->pressure;
    const float ratio = SIM__SOFTBODY_H_REF / h;
    const float alpha_tilde = (1.0f - p) / p * ratio * ratio * sb->vol_g0;
    denom += alpha_tilde;
    if (!(denom > 0.0f)) {
        return;
    }
    const float dlambda = -c / denom;
    for (uint32_t i = first; i < first + n; ++i) {
        sim_vec3 g = m3_mul_v(cof, m3_mul_v(sb->aqq_inv, w->sm_rest[i]));
        w->pos[i] = v3_add(w->pos[i], v3_scale(g, w->inv_mass[i] * dlambda));
    }
}

void sim__softbodies_match(sim_world* w, float h) {
    if (w->soft_bodies == 0) {
        return;
    }
    for (uint32_t k = 0; k < w->order_count; ++k) {
        const uint32_t slot = w->order[k];
        const sim__entity* e = &w->entities[slot];
        if (e->kind != SIM_ENTITY_SOFTBODY || e->iterations == 0) { // not one, or frozen (lod.c)
            continue;
        }
        sim__softbody* sb = &w->softs[slot];
        const uint32_t first = e->p_first, n = e->p_count;
        float a[9], f[9];
        sim_vec3 c = fit(w, first, n, a);
        int iters = 0;
        sim_quat q = sim__polar_rotation(a, sb->q, SIM__POLAR_MAX_ITERS, &iters);
        m3_mul(a, sb->aqq_inv, f);
        sb->q = q;
        sb->c = c;
        sb->volume_ratio = m3_det(f);
        sb->polar_iters = (uint32_t)iters;
        // β = w / (w + α̃), α̃ = (1 − s)/s · h_ref² / (m h²): the same for
        // every particle (equal masses), so momentum is conserved.
        const float s = sb->stiffness;
        const float ratio = SIM__SOFTBODY_H_REF / h;
        const float beta = 1.0f / (1.0f + (1.0f - s) / s * ratio * ratio);
        for (uint32_t i = first; i < first + n; ++i) {
            if (w->inv_mass[i] == 0.0f) {
                continue;
            }
            sim_vec3 goal = v3_add(q_rotate(q, w->sm_rest[i]), c);
            w->pos[i] = v3_add(w->pos[i], v3_scale(v3_sub(goal, w->pos[i]), beta));
        }
        if (sb->pressure > 0.0f) {
            volume_project(w, sb, first, n, h);
        }
    }
}

// ---------------------------------------------------------------------------
// Contacts between soft bodies
// ---------------------------------------------------------------------------

// Teschner et al. 2003's spatial hash; buckets is a power of two.
static uint32_t bucket_of(int32_t x, int32_t y, int32_t z, uint32_t buckets) {
    uint32_t hsh = (uint32_t)x * 73856093u ^ (uint32_t)y * 19349663u ^ (uint32_t)z * 83492791u;
    return hsh & (buckets - 1u);
}

// The hash cell of coordinate v, clamped so that the conversion is defined
// for any float (NaN included; such a particle is quarantined after the
// tick anyway).
static int32_t cell_of(float v, float inv_cell) {
    float f = floorf(v * inv_cell);
    if (!(f >= -1.0e9f)) {
        return -1000000000;
    }
    return f > 1.0e9f ? 1000000000 : (int32_t)f;
}

// Separates particles i and j (of different soft bodies) if their spheres
// overlap, then removes their relative tangential displacement over the
// substep within the friction cone (position-level friction, Macklin et
// al. 2014, "Unified Particle Physics", §6.1).
static void project_pair(sim_world* w, uint32_t i, uint32_t j, float mu) {
    const float wi = w->inv_mass[i], wj = w->inv_mass[j];
    const float wsum = wi + wj;
    const float rr = w->radius[i] + w->radius[j];
    sim_vec3 d = v3_sub(w->pos[j], w->pos[i]);
    float d2 = v3_dot(d, d);
    if (!(d2 < rr * rr) || wsum <= 0.0f) {
        return;
    }
    float dist = sqrtf(d2);
    if (dist < 1.0e-9f) {
        return; // coincident: no direction to push along
    }
    sim_vec3 n = v3_scale(d, 1.0f / dist);
    float pen = rr - dist;
    w->pos[i] = v3_sub(w->pos[i], v3_scale(n, pen * wi / wsum));
    w->pos[j] = v3_add(w->pos[j], v3_scale(n, pen * wj / wsum));
    // Relative tangential motion over the substep.
    sim_vec3 dp = v3_sub(v3_sub(w->pos[i], w->prev[i]), v3_sub(w->pos[j], w->prev[j]));
    sim_vec3 dt = v3_sub(dp, v3_scale(n, v3_dot(dp, n)));
    float lt = v3_len(dt);
    if (lt <= 0.0f) {
        return;
    }
    float keep = mu * pen >= lt ? 1.0f : mu * pen / lt; // static, else kinetic
    sim_vec3 corr = v3_scale(dt, keep / wsum);
    w->pos[i] = v3_sub(w->pos[i], v3_scale(corr, wi));
    w->pos[j] = v3_add(w->pos[j], v3_scale(corr, wj));
}

// The largest power of two not above n (n >= 1).
static uint32_t pow2_floor(uint32_t n) {
    uint32_t p = 1;
    while (p <= n / 2) {
        p *= 2;
    }
    return p;
}

static bool box_overlap(sim_vec3 alo, sim_vec3 ahi, sim_vec3 blo, sim_vec3 bhi) {
    return alo.x <= bhi.x && blo.x <= ahi.x && alo.y <= bhi.y && blo.y <= ahi.y && alo.z <= bhi.z &&
           blo.z <= ahi.z;
}

static bool box_contains(sim_vec3 lo, sim_vec3 hi, sim_vec3 p) {
    return p.x >= lo.x && p.x <= hi.x && p.y >= lo.y && p.y <= hi.y && p.z >= lo.z && p.z <= hi.z;
}

void sim__softbodies_contacts(sim_world* w) {
    if (w->soft_bodies < 2) {
        return;
    }
    // Build: every soft particle into the hash (heads hold index + 1, 0 is
    // empty, as the arrays start zeroed; chains in decreasing index order),
    // each soft body's bounds of its particle centres into its slot.
    float rmax = 0.0f;
    for (uint32_t k = 0; k < w->order_count; ++k) {
        const sim__entity* e = &w->entities[w->order[k]];
        if (e->kind != SIM_ENTITY_SOFTBODY || e->iterations == 0) { // not one, or frozen (lod.c)
            continue;
        }
        for (uint32_t i = e->p_first; i < e->p_first + e->p_count; ++i) {
            rmax = w->radius[i] > rmax ? w->radius[i] : rmax;
        }
    }
    if (!(rmax > 0.0f)) {
        return;
    }
    // Cells of twice the largest contact distance (2 rmax): whatever is
    // within reach of a particle lies in the 2 × 2 × 2 cells nearest it.
    const float reach = 2.0f * rmax;
    const float inv_cell = 1.0f / (2.0f * reach);
    const uint32_t buckets = pow2_floor(w->reserved.particles);
    for (uint32_t k = 0; k < w->order_count; ++k) {
        const uint32_t slot = w->order[k];
        const sim__entity* e = &w->entities[slot];
        if (e->kind != SIM_ENTITY_SOFTBODY || e->iterations == 0) { // not one, or frozen (lod.c)
            continue;
        }
        sim__softbody* sb = &w->softs[slot];
        sb->lo = sb->hi = w->pos[e->p_first];
        for (uint32_t i = e->p_first; i < e->p_first + e->p_count; ++i) {
            sim_vec3 x = w->pos[i];
            sb->lo = v3(fminf(sb->lo.x, x.x), fminf(sb->lo.y, x.y), fminf(sb->lo.z, x.z));
            sb->hi = v3(fmaxf(sb->hi.x, x.x), fmaxf(sb->hi.y, x.y), fmaxf(sb->hi.z, x.z));
            uint32_t b = bucket_of(cell_of(x.x, inv_cell), cell_of(x.y, inv_cell),
                                   cell_of(x.z, inv_cell), buckets);
            w->sm_next[i] = w->sm_head[b];
            w->sm_head[b] = (int32_t)(i + 1);
        }
    }
    const float mu = w->params.friction;
    const sim_vec3 pad = v3(reach, reach, reach);
    for (uint32_t k = 0; k < w->order_count; ++k) {
        const uint32_t slot = w->order[k];
        const sim__entity* e = &w->entities[slot];
        if (e->kind != SIM_ENTITY_SOFTBODY || e->iterations == 0) { // not one, or frozen (lod.c)
            continue;
        }
        // Where a later soft body can be touched: the bounds of the later
        // bodies' padded boxes that meet this one's. Pairs are projected
        // from the earlier body's side only.
        const sim__softbody* sb = &w->softs[slot];
        bool any = false;
        sim_vec3 rlo = v3(0.0f, 0.0f, 0.0f), rhi = v3(0.0f, 0.0f, 0.0f);
        for (uint32_t m = k + 1; m < w->order_count; ++m) {
            const uint32_t other = w->order[m];
            if (w->entities[other].kind != SIM_ENTITY_SOFTBODY ||
                w->entities[other].iterations == 0) {
                continue;
            }
            const sim__softbody* ob = &w->softs[other];
            sim_vec3 olo = v3_sub(ob->lo, pad), ohi = v3_add(ob->hi, pad);
            if (!box_overlap(sb->lo, sb->hi, olo, ohi)) {
                continue;
            }
            rlo = any ? v3(fminf(rlo.x, olo.x), fminf(rlo.y, olo.y), fminf(rlo.z, olo.z)) : olo;
            rhi = any ? v3(fmaxf(rhi.x, ohi.x), fmaxf(rhi.y, ohi.y), fmaxf(rhi.z, ohi.z)) : ohi;
            any = true;
        }
        if (!any) {
            continue;
        }
        const uint32_t end = e->p_first + e->p_count;
        for (uint32_t i = e->p_first; i < end; ++i) {
            sim_vec3 x = w->pos[i];
            if (!box_contains(rlo, rhi, x)) {
                continue;
            }
            // The particle's cell and, per axis, the neighbour on the side
            // of the nearer face.
            int32_t c[3], o[3];
            const float f[3] = {x.x * inv_cell, x.y * inv_cell, x.z * inv_cell};
            for (int a = 0; a < 3; ++a) {
                c[a] = cell_of(f[a], 1.0f);
                o[a] = f[a] - floorf(f[a]) < 0.5f ? -1 : 1;
            }
            uint32_t seen[8];
            uint32_t nseen = 0;
            for (int n = 0; n < 8; ++n) {
                uint32_t b = bucket_of(c[0] + ((n & 1) ? o[0] : 0), c[1] + ((n & 2) ? o[1] : 0),
                                       c[2] + ((n & 4) ? o[2] : 0), buckets);
                bool dup = false;
                for (uint32_t q = 0; q < nseen; ++q) {
                    dup = dup || seen[q] == b;
                }
                if (dup) {
                    continue;
                }
                seen[nseen++] = b;
                for (int32_t j1 = w->sm_head[b]; j1 != 0; j1 = w->sm_next[j1 - 1]) {
                    uint32_t j = (uint32_t)(j1 - 1);
                    if (j >= end) { // a later soft body's particle
                        project_pair(w, i, j, mu);
                    }
                }
            }
        }
    }
    // Empty the buckets, so the next pass starts from zeroed heads (the
    // chains are rewritten as they are built). 4 bytes per particle of
    // room, as cheap as the collision pass over every particle.
    memset(w->sm_head, 0, (size_t)buckets * sizeof *w->sm_head);
}
