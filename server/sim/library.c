/*
 * library.c: skeletons and animation clips, shared read-only by worlds.
 *
 * Adding a skeleton validates it and derives, from its bind pose, every
 * bone's body frame (capsule centre, local +X along the bone), its mass
 * properties (a solid capsule), the joint frames in both bodies (so that a
 * character spawned in its bind pose violates no limit) and which bone pairs
 * never collide (parent and child, and bones whose capsules already overlap
 * in the bind pose). Clips are stored with their rotations converted to
 * each bone's local frame. Sampling and forward kinematics live here too.
 *
 * The library does no I/O: the application parses asset files into
 * sim_skeleton_def / sim_clip_def.
 */
#include "rigid.h"
#include "world.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PI_F 3.14159265f
// A thin bone's inertia about its own axis is tiny (a foot's is a tenth of
// the other two), so every small joint correction spins it; ragdoll rigs
// inflate it (PhysX's inertia scaling for ragdolls). At half the cross
// moment a ragdoll comes fully to rest (measured: feet spun at 8 rad/s at
// rest with the true value, under 0.2 rad/s with this).
#define AXIAL_INERTIA_MIN 0.5f

int sim_library_create(sim_library** out) {
    if (out == NULL) {
        return SIM_E_INVALID_ARG;
    }
    sim_library* lib = calloc(1, sizeof *lib);
    if (lib == NULL) {
        return SIM_E_NOMEM;
    }
    *out = lib;
    return SIM_OK;
}

static void clip_free(sim__clip* c) {
    if (c != NULL) {
        free(c->times);
        free(c->root_pos);
        free(c->root_rot);
        free(c->rot);
        free(c);
    }
}

void sim_library_destroy(sim_library* lib) {
    if (lib == NULL) {
        return;
    }
    for (uint32_t i = 0; i < lib->skel_count; ++i) {
        for (uint32_t k = 0; k < lib->skels[i]->clip_count; ++k) {
            clip_free(lib->skels[i]->clips[k]);
        }
        free(lib->skels[i]);
    }
    free(lib);
}

const sim__skel* sim__library_skel(const sim_library* lib, const char* name) {
    if (lib == NULL || name == NULL) {
        return NULL;
    }
    for (uint32_t i = 0; i < lib->skel_count; ++i) {
        if (strncmp(lib->skels[i]->def.name, name, SIM_NAME_MAX) == 0) {
            return lib->skels[i];
        }
    }
    return NULL;
}

const sim_skeleton_def* sim_library_skeleton(const sim_library* lib, const char* name) {
    const sim__skel* sk = sim__library_skel(lib, name);
    return sk != NULL ? &sk->def : NULL;
}

const sim__clip* sim__skel_clip(const sim__skel* sk, const char* name) {
    for (uint32_t i = 0; sk != NULL && name != NULL && i < sk->clip_count; ++i) {
        if (strncmp(sk->clips[i]->name, name, SIM_NAME_MAX) == 0) {
            return sk->clips[i];
        }
    }
    return NULL;
}

// A name up to its NUL (names are NUL-terminated within SIM_NAME_MAX).
static uint64_t hash_str(uint64_t h, const char* s) {
    size_t n = 0;
    while (n + 1 < SIM_NAME_MAX && s[n] != '\0') {
        ++n;
    }
    return sim__fnv1a(h, s, n);
}

uint64_t sim__skel_hash(const sim__skel* sk) {
    const sim_skeleton_def* d = &sk->def;
    const uint32_t n = d->bone_count;
    uint64_t h = hash_str(SIM__FNV_BASIS, d->name);
    h = sim__fnv1a(h, &d->bone_count, sizeof d->bone_count);
    h = sim__fnv1a(h, &d->up_bone, sizeof d->up_bone);
    for (uint32_t i = 0; i < n; ++i) {
        const sim_bone_def* b = &d->bones[i];
        h = hash_str(h, b->name);
        // Every field after the name is 4 bytes wide: no padding to hash.
        h = sim__fnv1a(h, &b->parent, sizeof *b - offsetof(sim_bone_def, parent));
    }
    const uint8_t fixed = d->fixed_base ? 1 : 0;
    h = sim__fnv1a(h, &fixed, 1);
    h = sim__fnv1a(h, &d->drive_kp, sizeof d->drive_kp);
    h = sim__fnv1a(h, &d->drive_kd, sizeof d->drive_kd);
    h = sim__fnv1a(h, &d->garment_count, sizeof d->garment_count);
    h = sim__fnv1a(h, d->garments, d->garment_count * sizeof d->garments[0]);
    h = sim__fnv1a(h, sk->bind_x, n * sizeof sk->bind_x[0]);
    h = sim__fnv1a(h, sk->bind_q, n * sizeof sk->bind_q[0]);
    h = sim__fnv1a(h, sk->half_len, n * sizeof sk->half_len[0]);
    h = sim__fnv1a(h, sk->mass, n * sizeof sk->mass[0]);
    h = sim__fnv1a(h, sk->inertia, n * sizeof sk->inertia[0]);
    h = sim__fnv1a(h, sk->anchor_p, n * sizeof sk->anchor_p[0]);
    h = sim__fnv1a(h, sk->anchor_c, n * sizeof sk->anchor_c[0]);
    h = sim__fnv1a(h, sk->frame_p, n * sizeof sk->frame_p[0]);
    h = sim__fnv1a(h, sk->frame_c, n * sizeof sk->frame_c[0]);
    h = sim__fnv1a(h, sk->local_q, n * sizeof sk->local_q[0]);
    h = sim__fnv1a(h, sk->no_collide, n * sizeof sk->no_collide[0]);
    h = sim__fnv1a(h, sk->children, n * sizeof sk->children[0]);
    h = sim__fnv1a(h, &sk->clip_count, sizeof sk->clip_count);
    for (uint32_t k = 0; k < sk->clip_count; ++k) {
        const sim__clip* c = sk->clips[k];
        const uint8_t loop = c->loop ? 1 : 0;
        h = hash_str(h, c->name);
        h = sim__fnv1a(h, &loop, 1);
        h = sim__fnv1a(h, &c->key_count, sizeof c->key_count);
        h = sim__fnv1a(h, c->times, c->key_count * sizeof c->times[0]);
        h = sim__fnv1a(h, c->root_pos, c->key_count * sizeof c->root_pos[0]);
        h = sim__fnv1a(h, c->root_rot, c->key_count * sizeof c->root_rot[0]);
        h = sim__fnv1a(h, c->rot, (size_t)c->key_count * n * sizeof c->rot[0]);
    }
    return h;
}

uint64_t sim_library_skeleton_hash(const sim_library* lib, const char* name) {
    const sim__skel* sk = sim__library_skel(lib, name);
    return sk != NULL ? sk->hash : 0;
}

float sim_library_clip_duration(const sim_library* lib, const char* skeleton, const char* clip) {
    const sim__clip* c = sim__skel_clip(sim__library_skel(lib, skeleton), clip);
    return c != NULL ? c->duration : (float)SIM_E_UNKNOWN_NAME;
}

// ---------------------------------------------------------------------------
// Geometry helpers
// ---------------------------------------------------------------------------

// The rotation whose columns are the orthonormal basis (x, y, z).
static sim_quat q_from_basis(sim_vec3 x, sim_vec3 y, sim_vec3 z) {
    // Shepperd's method: pick the largest diagonal term for stability.
    float m00 = x.x, m11 = y.y, m22 = z.z;
    float tr = m00 + m11 + m22;
    sim_quat q;
    if (tr > 0.0f) {
        float s = sqrtf(tr + 1.0f) * 2.0f;
        q = q4((y.z - z.y) / s, (z.x - x.z) / s, (x.y - y.x) / s, 0.25f * s);
    } else if (m00 > m11 && m00 > m22) {
        float s = sqrtf(1.0f + m00 - m11 - m22) * 2.0f;
        q = q4(0.25f * s, (y.x + x.y) / s, (z.x + x.z) / s, (y.z - z.y) / s);
    } else if (m11 > m22) {
        float s = sqrtf(1.0f + m11 - m00 - m22) * 2.0f;
        q = q4((y.x + x.y) / s, 0.25f * s, (z.y + y.z) / s, (z.x - x.z) / s);
    } else {
        float s = sqrtf(1.0f + m22 - m00 - m11) * 2.0f;
        q = q4((z.x + x.z) / s, (z.y + y.z) / s, 0.25f * s, (x.y - y.x) / s);
    }
    return q_normalize(q);
}

// A joint frame with +X along `x` and +Y as close to `y_hint` as possible.
static sim_quat frame_from(sim_vec3 x, sim_vec3 y_hint) {
    x = v3_normalize(x);
    sim_vec3 y = v3_sub(y_hint, v3_scale(x, v3_dot(y_hint, x)));
    if (v3_len(y) < 1e-4f) {
        // Any perpendicular will do.
        y = fabsf(x.y) < 0.9f ? v3_cross(v3(0.0f, 1.0f, 0.0f), x)
                              : v3_cross(v3(1.0f, 0.0f, 0.0f), x);
    }
    y = v3_normalize(y);
    return q_from_basis(x, y, v3_cross(x, y));
}

// Principal moments of a solid capsule of mass m, radius r and segment
// half-length h along local +X: a cylinder of length 2h and two hemispheres,
// with the parallel-axis term for the hemispheres' centroids 3r/8 out.
static sim_vec3 capsule_inertia(float m, float r, float h) {
    float cyl_v = PI_F * r * r * 2.0f * h;
    float sph_v = (4.0f / 3.0f) * PI_F * r * r * r;
    float mc = m * cyl_v / (cyl_v + sph_v), ms = m - mc;
    float H = 2.0f * h;
    float ix = mc * r * r / 2.0f + ms * 2.0f * r * r / 5.0f;
    float iy = mc * (r * r / 4.0f + H * H / 12.0f) +
               ms * (2.0f * r * r / 5.0f + H * H / 4.0f + 3.0f * H * r / 8.0f);
    return v3(fmaxf(ix, AXIAL_INERTIA_MIN * iy), iy, iy);
}

// ---------------------------------------------------------------------------
// Skeletons
// ---------------------------------------------------------------------------

static bool finite3(sim_vec3 v) {
    return sim_vec3_is_finite(v);
}

// A name is 1..SIM_NAME_MAX-1 bytes, NUL-terminated within its array.
static bool valid_name(const char* s) {
    const char* end = memchr(s, '\0', SIM_NAME_MAX);
    return end != NULL && end != s;
}

// Fills one issue: the message is "skeleton NAME: " and then fmt.
__attribute__((format(printf, 6, 7))) static void issue(sim_skeleton_issue* is,
                                                        const sim_skeleton_def* d,
                                                        sim_skeleton_issue_kind kind, int bone,
                                                        int other, const char* fmt, ...) {
    if (is == NULL) {
        return;
    }
    is->kind = kind;
    is->bone = bone;
    is->other = other;
    is->value = 0.0f;
    // The def's name may be the very thing that is wrong: print at most its
    // array, and nothing when it is empty.
    int n = snprintf(is->message, sizeof is->message, "skeleton %.*s: ", SIM_NAME_MAX - 1,
                     d->name[0] != '\0' ? d->name : "(unnamed)");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(is->message + n, sizeof is->message - (size_t)n, fmt, ap);
    va_end(ap);
}

#define DEG_PER_RAD (180.0f / PI_F)

// The bind pose is the zero of every joint angle (limits are measured from
// it), so it lies in a range [lo, hi] exactly when lo <= 0 <= hi. Returns
// how far outside it is, rad (0 inside).
static float bind_outside(float lo, float hi) {
    return lo > 0.0f ? lo : (hi < 0.0f ? -hi : 0.0f);
}

// Refuses a hinge or twist range that leaves out the bind pose, naming the
// bone, the range, by how much, and the range re-based on the bind pose
// (what the author meant if the bind pose sits at that angle).
static int check_bind_in_range(const sim_skeleton_def* d, uint32_t i, sim_skeleton_issue* is) {
    const sim_bone_def* b = &d->bones[i];
    float out = bind_outside(b->twist_min, b->twist_max);
    if (out == 0.0f) {
        return SIM_OK;
    }
    // Shift the range by the nearer end so that it starts or ends at 0.
    float shift = b->twist_min > 0.0f ? b->twist_min : b->twist_max;
    bool hinge = b->joint == SIM_JOINT_HINGE;
    issue(is, d, SIM_SKELETON_BIND_OUTSIDE_LIMIT, (int)i, -1,
          "bone %s: the bind pose is %.1f deg outside its %s [%.1f, %.1f]; limits are "
          "measured from the bind pose, so it must lie within them (re-based on the bind "
          "pose, the range would be [%.1f, %.1f])",
          b->name, (double)(out * DEG_PER_RAD), hinge ? "hinge range_deg" : "twist_deg",
          (double)(b->twist_min * DEG_PER_RAD), (double)(b->twist_max * DEG_PER_RAD),
          (double)((b->twist_min - shift) * DEG_PER_RAD),
          (double)((b->twist_max - shift) * DEG_PER_RAD));
    if (is != NULL) {
        is->value = out * DEG_PER_RAD;
    }
    return SIM_E_OUT_OF_RANGE;
}

// Checks one bone; on failure fills *is (may be NULL) with the reason.
static int validate_bone(const sim_skeleton_def* d, uint32_t i, sim_skeleton_issue* is) {
    const sim_bone_def* b = &d->bones[i];
    const int bi = (int)i;
    if (!valid_name(b->name)) {
        issue(is, d, SIM_SKELETON_INVALID, bi, -1, "bone %u: the name must be 1-%d bytes", i,
              SIM_NAME_MAX - 1);
        return SIM_E_INVALID_ARG;
    }
    for (uint32_t k = 0; k < i; ++k) {
        if (strncmp(d->bones[k].name, b->name, SIM_NAME_MAX) == 0) {
            issue(is, d, SIM_SKELETON_INVALID, bi, -1, "bone %s: the name is used twice", b->name);
            return SIM_E_INVALID_ARG;
        }
    }
    // Parents come first, so one forward pass can pose the skeleton.
    if ((i == 0) != (b->parent < 0) || (i > 0 && b->parent >= (int)i)) {
        issue(is, d, SIM_SKELETON_INVALID, bi, -1, "bone %s: %s", b->name,
              i == 0 ? "the first bone is the root and has no parent"
                     : "the parent must be an earlier bone (only the first bone has none)");
        return SIM_E_INVALID_ARG;
    }
    if (!finite3(b->head) || !finite3(b->tail) || !finite3(b->axis) || !sim_is_finite(b->radius) ||
        !sim_is_finite(b->mass) || !sim_is_finite(b->swing1) || !sim_is_finite(b->swing2) ||
        !sim_is_finite(b->twist_min) || !sim_is_finite(b->twist_max) ||
        !sim_is_finite(b->friction)) {
        issue(is, d, SIM_SKELETON_INVALID, bi, -1, "bone %s: a number is NaN or infinite", b->name);
        return SIM_E_NOT_FINITE;
    }
    sim_vec3 dir = v3_sub(b->tail, b->head);
    if (v3_len(dir) < 0.01f) {
        issue(is, d, SIM_SKELETON_INVALID, bi, -1,
              "bone %s: head and tail are %.4f m apart, less than 0.01 m", b->name,
              (double)v3_len(dir));
        return SIM_E_OUT_OF_RANGE;
    }
    if (b->radius <= 0.0f || b->radius > 1.0f || b->mass <= 0.0f || b->mass > 1000.0f ||
        b->friction > 1000.0f) {
        issue(is, d, SIM_SKELETON_INVALID, bi, -1,
              "bone %s: radius %g m, mass %g kg, joint friction %g N m: the radius must be in "
              "(0, 1], the mass in (0, 1000], the friction at most 1000",
              b->name, (double)b->radius, (double)b->mass, (double)b->friction);
        return SIM_E_OUT_OF_RANGE;
    }
    if (i == 0) {
        return SIM_OK;
    }
    if (b->joint != SIM_JOINT_BALL && b->joint != SIM_JOINT_HINGE && b->joint != SIM_JOINT_FIXED) {
        issue(is, d, SIM_SKELETON_INVALID, bi, -1, "bone %s: unknown joint type %d", b->name,
              (int)b->joint);
        return SIM_E_INVALID_ARG;
    }
    const bool fixed = b->joint == SIM_JOINT_FIXED;
    // The axis must stand off the bone, or no frame can be built.
    if (!fixed && (v3_len(b->axis) < 1e-6f ||
                   v3_len(v3_cross(v3_normalize(dir), v3_normalize(b->axis))) < 0.1f)) {
        issue(is, d, SIM_SKELETON_INVALID, bi, -1,
              "bone %s: the joint axis is zero or within 6 deg of the bone", b->name);
        return SIM_E_OUT_OF_RANGE;
    }
    if (b->swing1 < 0.0f || b->swing1 >= PI_F || b->swing2 < 0.0f || b->swing2 >= PI_F) {
        issue(is, d, SIM_SKELETON_INVALID, bi, -1,
              "bone %s: swing half-angles %.1f and %.1f deg must be in [0, 180)", b->name,
              (double)(b->swing1 * DEG_PER_RAD), (double)(b->swing2 * DEG_PER_RAD));
        return SIM_E_OUT_OF_RANGE;
    }
    if (b->twist_min > b->twist_max || b->twist_min < -PI_F || b->twist_max > PI_F) {
        issue(is, d, SIM_SKELETON_INVALID, bi, -1,
              "bone %s: %s [%.1f, %.1f] deg must be an interval within [-180, 180]", b->name,
              b->joint == SIM_JOINT_HINGE ? "the hinge range" : "the twist range",
              (double)(b->twist_min * DEG_PER_RAD), (double)(b->twist_max * DEG_PER_RAD));
        return SIM_E_OUT_OF_RANGE;
    }
    // A swing cone is centred on the bind pose (half-angles >= 0), so only
    // a hinge or twist range can leave it out; a fixed joint's are unused.
    return fixed ? SIM_OK : check_bind_in_range(d, i, is);
}

// A skeleton's garments (sim_garment_def's ranges; one of each kind).
static int validate_garments(const sim_skeleton_def* d, sim_skeleton_issue* is) {
    if (d->garment_count > SIM_MAX_GARMENTS) {
        issue(is, d, SIM_SKELETON_INVALID, -1, -1, "%u garments (at most %d)", d->garment_count,
              SIM_MAX_GARMENTS);
        return SIM_E_OUT_OF_RANGE;
    }
    uint32_t seen = 0;
    for (uint32_t k = 0; k < d->garment_count; ++k) {
        const sim_garment_def* g = &d->garments[k];
        const char* kn = sim_garment_kind_name(g->kind);
        if (kn == NULL || (seen & (1u << g->kind)) != 0) {
            issue(is, d, SIM_SKELETON_INVALID, -1, -1,
                  "garment %u: a kind of cape, skirt or hair, each at most once", k);
            return SIM_E_INVALID_ARG;
        }
        seen |= 1u << g->kind;
        const bool ring = g->kind != SIM_GARMENT_CAPE;
        if (!sim_vec3_is_finite(g->a) || !sim_vec3_is_finite(g->b) ||
            !sim_is_finite(g->radius_top) || !sim_is_finite(g->radius_bottom) ||
            !sim_is_finite(g->arc) || !sim_is_finite(g->length) || !sim_is_finite(g->mass)) {
            issue(is, d, SIM_SKELETON_INVALID, (int)g->bone, -1,
                  "garment %s: a value is not finite", kn);
            return SIM_E_NOT_FINITE;
        }
        if (g->bone >= d->bone_count || g->cols < (g->kind == SIM_GARMENT_SKIRT ? 3u : 2u) ||
            g->cols > 64 || g->rows < 2 || g->rows > 64 || !(g->length > 0.0f) ||
            g->length > 10.0f || g->mass < SIM_MIN_MASS || g->mass > SIM_MAX_MASS ||
            (ring && !(g->radius_top > 0.0f && g->radius_top <= 10.0f)) ||
            (g->kind == SIM_GARMENT_SKIRT &&
             !(g->radius_bottom > 0.0f && g->radius_bottom <= 10.0f)) ||
            (g->kind == SIM_GARMENT_HAIR && !(g->arc > 0.0f && g->arc <= 6.2831854f)) ||
            (g->kind == SIM_GARMENT_CAPE && v3_len(v3_sub(g->b, g->a)) < SIM_MIN_LENGTH)) {
            issue(is, d, SIM_SKELETON_INVALID, -1, -1,
                  "garment %s: cols %u (2-64, a skirt 3-64), rows %u (2-64), length (0, 10] m, "
                  "mass [%g, %g] kg, radii (0, 10] m, arc (0, 360] deg, a cape's edge at least "
                  "%g m long",
                  kn, g->cols, g->rows, (double)SIM_MIN_MASS, (double)SIM_MAX_MASS,
                  (double)SIM_MIN_LENGTH);
            return SIM_E_OUT_OF_RANGE;
        }
    }
    return SIM_OK;
}

static int validate_skeleton(const sim_library* lib, const sim_skeleton_def* d,
                             sim_skeleton_issue* is) {
    if (!valid_name(d->name)) {
        issue(is, d, SIM_SKELETON_INVALID, -1, -1, "the name must be 1-%d bytes", SIM_NAME_MAX - 1);
        return SIM_E_INVALID_ARG;
    }
    if (sim__library_skel(lib, d->name) != NULL) {
        issue(is, d, SIM_SKELETON_INVALID, -1, -1, "a skeleton of that name is already loaded");
        return SIM_E_INVALID_ARG;
    }
    if ((uint32_t)d->solver > SIM_CHAR_SOLVER_REDUCED) {
        issue(is, d, SIM_SKELETON_INVALID, -1, -1,
              "solver %u: 0 (default), 1 (maximal) or 2 (reduced)", (unsigned)d->solver);
        return SIM_E_OUT_OF_RANGE;
    }
    if (!(d->drive_kp >= 0.0f && d->drive_kp <= 1e5f && d->drive_kd >= 0.0f &&
          d->drive_kd <= 1e5f)) {
        issue(is, d, SIM_SKELETON_INVALID, -1, -1,
              "drive kp %g, kd %g: each must be in [0, 1e5] (N·m/rad, N·m·s/rad)",
              (double)d->drive_kp, (double)d->drive_kd);
        return SIM_E_OUT_OF_RANGE;
    }
    if (d->bone_count < 1 || d->bone_count > SIM_MAX_BONES || d->up_bone >= d->bone_count) {
        issue(is, d, SIM_SKELETON_INVALID, -1, -1,
              "%u bones (1-%d allowed), up_bone %u: must name one of them", d->bone_count,
              SIM_MAX_BONES, d->up_bone);
        return SIM_E_OUT_OF_RANGE;
    }
    for (uint32_t i = 0; i < d->bone_count; ++i) {
        int rc = validate_bone(d, i, is);
        if (rc != SIM_OK) {
            return rc;
        }
    }
    return validate_garments(d, is);
}

// Warns about every bone whose mass is more than SIM_SKELETON_MAX_MASS_RATIO
// times its parent's or less than its inverse.
static void check_mass_ratios(const sim_skeleton_def* d, sim_skeleton_report* r) {
    if (d->solver == SIM_CHAR_SOLVER_REDUCED) {
        return; // its joints are coordinates: no mass ratio stretches them
    }
    for (uint32_t i = 1; i < d->bone_count; ++i) {
        const sim_bone_def* b = &d->bones[i];
        const sim_bone_def* p = &d->bones[b->parent];
        float ratio = fmaxf(b->mass, p->mass) / fminf(b->mass, p->mass);
        if (ratio <= SIM_SKELETON_MAX_MASS_RATIO) {
            continue;
        }
        sim_skeleton_issue* is = &r->warnings[r->warning_count++];
        issue(is, d, SIM_SKELETON_MASS_RATIO, (int)i, b->parent,
              "bone %s (%g kg) and its parent %s (%g kg) differ in mass %.1f:1, more than "
              "%.0f:1: the joint between them will stretch and jitter under impacts; bring the "
              "masses closer",
              b->name, (double)b->mass, p->name, (double)p->mass, (double)ratio,
              (double)SIM_SKELETON_MAX_MASS_RATIO);
        is->value = ratio;
    }
}

int sim_library_add_skeleton(sim_library* lib, const sim_skeleton_def* def,
                             sim_skeleton_report* report) {
    if (report != NULL) {
        memset(report, 0, sizeof *report);
        report->error.bone = report->error.other = -1;
    }
    if (lib == NULL || def == NULL) {
        return SIM_E_INVALID_ARG;
    }
    int rc = validate_skeleton(lib, def, report != NULL ? &report->error : NULL);
    if (rc != SIM_OK) {
        return rc;
    }
    if (lib->skel_count == SIM__MAX_SKELETONS) {
        return SIM_E_CAPACITY;
    }
    sim__skel* sk = calloc(1, sizeof *sk);
    if (sk == NULL) {
        return SIM_E_NOMEM;
    }
    sk->def = *def;
    const uint32_t n = def->bone_count;
    for (uint32_t i = 0; i < n; ++i) {
        const sim_bone_def* b = &def->bones[i];
        sim_vec3 dir = v3_sub(b->tail, b->head);
        sk->bind_x[i] = v3_scale(v3_add(b->head, b->tail), 0.5f);
        sk->bind_q[i] = q_from_to(v3(1.0f, 0.0f, 0.0f), v3_normalize(dir));
        sk->half_len[i] = 0.5f * v3_len(dir);
        sk->mass[i] = b->mass;
        sk->inertia[i] = capsule_inertia(b->mass, b->radius, sk->half_len[i]);
    }
    // Ragdoll hygiene (Jolt): a parent's inertia no lower than its
    // children's, so light limbs cannot whip a heavy body around.
    for (uint32_t i = n; i-- > 1;) {
        uint32_t p = (uint32_t)def->bones[i].parent;
        sim_vec3 c = sk->inertia[i];
        float most = fmaxf(c.x, fmaxf(c.y, c.z));
        sim_vec3* ip = &sk->inertia[p];
        ip->x = fmaxf(ip->x, most);
        ip->y = fmaxf(ip->y, most);
        ip->z = fmaxf(ip->z, most);
    }
    for (uint32_t i = 1; i < n; ++i) {
        const sim_bone_def* b = &def->bones[i];
        uint32_t p = (uint32_t)b->parent;
        sim_vec3 dir = v3_normalize(v3_sub(b->tail, b->head));
        sim_quat J;
        if (b->joint == SIM_JOINT_HINGE) {
            J = frame_from(b->axis, dir); // twist axis = the hinge axis
        } else {
            J = frame_from(dir, b->axis); // twist along the bone, swing1 about axis
        }
        sim_quat ip = q_conj(sk->bind_q[p]), ic = q_conj(sk->bind_q[i]);
        sk->frame_p[i] = q_normalize(q_mul(ip, J));
        sk->frame_c[i] = q_normalize(q_mul(ic, J));
        sk->anchor_p[i] = q_rotate(ip, v3_sub(b->head, sk->bind_x[p]));
        sk->anchor_c[i] = q_rotate(ic, v3_sub(b->head, sk->bind_x[i]));
        sk->local_q[i] = q_normalize(q_mul(ip, sk->bind_q[i]));
    }
    sk->local_q[0] = q_identity();
    // Bones one or two joints apart (parent and child, grandparent and
    // grandchild), or that overlap in the bind pose, never collide: they
    // would fight their own joints (a hand meets the upper arm when the
    // elbow folds to its limit, and the two constraints would pull the elbow
    // apart).
    for (uint32_t i = 0; i < n; ++i) {
        for (uint32_t j = i + 1; j < n; ++j) {
            const sim_bone_def* a = &def->bones[i];
            const sim_bone_def* b = &def->bones[j];
            int bp = b->parent, ap = a->parent;
            bool family = bp == (int)i || ap == (int)j ||
                          (bp >= 0 && def->bones[bp].parent == (int)i) ||
                          (ap >= 0 && def->bones[ap].parent == (int)j);
            sim_vec3 ca, cb;
            sim__closest_segments(a->head, a->tail, b->head, b->tail, &ca, &cb);
            float d = v3_len(v3_sub(ca, cb));
            if (family || d < a->radius + b->radius + 0.01f) {
                sim__bones_add(&sk->no_collide[i], j);
                sim__bones_add(&sk->no_collide[j], i);
            }
        }
    }
    for (uint32_t i = n; i-- > 1;) {
        uint32_t p = (uint32_t)def->bones[i].parent;
        sim__bones_merge(&sk->children[p], &sk->children[i]);
        sim__bones_add(&sk->children[p], i);
    }
    sk->hash = sim__skel_hash(sk);
    lib->skels[lib->skel_count++] = sk;
    if (report != NULL) {
        check_mass_ratios(def, report);
    }
    return SIM_OK;
}

// ---------------------------------------------------------------------------
// Clips
// ---------------------------------------------------------------------------

int sim_library_add_clip(sim_library* lib, const char* skeleton, const sim_clip_def* def) {
    if (lib == NULL || def == NULL || skeleton == NULL) {
        return SIM_E_INVALID_ARG;
    }
    sim__skel* sk = NULL;
    for (uint32_t i = 0; i < lib->skel_count; ++i) {
        if (strncmp(lib->skels[i]->def.name, skeleton, SIM_NAME_MAX) == 0) {
            sk = lib->skels[i];
        }
    }
    if (sk == NULL) {
        return SIM_E_UNKNOWN_NAME;
    }
    const uint32_t n = sk->def.bone_count, k = def->key_count;
    if (!valid_name(def->name) || sim__skel_clip(sk, def->name) != NULL || def->bone_count != n ||
        k < 1 || k > 1024 || def->times == NULL || def->root_pos == NULL || def->root_rot == NULL ||
        def->rot == NULL) {
        return SIM_E_INVALID_ARG;
    }
    for (uint32_t i = 0; i < k; ++i) {
        if (!sim_is_finite(def->times[i]) || !finite3(def->root_pos[i])) {
            return SIM_E_NOT_FINITE;
        }
        if ((i == 0 && def->times[0] != 0.0f) || (i > 0 && def->times[i] <= def->times[i - 1])) {
            return SIM_E_INVALID_ARG;
        }
        for (uint32_t b = 0; b <= n; ++b) {
            sim_quat q = b < n ? def->rot[i * n + b] : def->root_rot[i];
            if (!sim_is_finite(q.x) || !sim_is_finite(q.y) || !sim_is_finite(q.z) ||
                !sim_is_finite(q.w) || q_dot(q, q) < 0.5f) {
                return SIM_E_NOT_FINITE;
            }
        }
    }
    if (sk->clip_count == SIM__MAX_CLIPS) {
        return SIM_E_CAPACITY;
    }
    sim__clip* c = calloc(1, sizeof *c);
    if (c == NULL) {
        return SIM_E_NOMEM;
    }
    c->times = malloc(k * sizeof *c->times);
    c->root_pos = malloc(k * sizeof *c->root_pos);
    c->root_rot = malloc(k * sizeof *c->root_rot);
    c->rot = malloc((size_t)k * n * sizeof *c->rot);
    if (c->times == NULL || c->root_pos == NULL || c->root_rot == NULL || c->rot == NULL) {
        clip_free(c);
        return SIM_E_NOMEM;
    }
    memcpy(c->name, def->name, SIM_NAME_MAX);
    c->name[SIM_NAME_MAX - 1] = '\0';
    c->loop = def->loop;
    c->key_count = k;
    c->duration = def->times[k - 1];
    for (uint32_t i = 0; i < k; ++i) {
        c->times[i] = def->times[i];
        c->root_pos[i] = def->root_pos[i];
        c->root_rot[i] = q_normalize(def->root_rot[i]);
        for (uint32_t b = 0; b < n; ++b) {
            // Authored as a model-space rotation of the bone about its bind
            // pose; FK applies it in the bone's own frame: a = B⁻¹ R B.
            sim_quat R = q_normalize(def->rot[i * n + b]);
            c->rot[i * n + b] = q_normalize(q_mul(q_mul(q_conj(sk->bind_q[b]), R), sk->bind_q[b]));
        }
    }
    sk->clips[sk->clip_count++] = c;
    sk->hash = sim__skel_hash(sk); // once here, not at every save (state.c)
    return SIM_OK;
}

void sim__clip_sample(const sim__skel* sk, const sim__clip* clip, float t, sim_vec3* root_pos,
                      sim_quat* root_rot, sim_quat* local) {
    const uint32_t n = sk->def.bone_count, k = clip->key_count;
    if (clip->loop && clip->duration > 0.0f) {
        t = fmodf(t, clip->duration);
        t = t < 0.0f ? t + clip->duration : t;
    }
    t = fminf(fmaxf(t, 0.0f), clip->duration);
    uint32_t a = 0;
    while (a + 1 < k && clip->times[a + 1] <= t) {
        a++;
    }
    uint32_t b = a + 1 < k ? a + 1 : a;
    float span = clip->times[b] - clip->times[a];
    float u = span > 0.0f ? (t - clip->times[a]) / span : 0.0f;
    sim_vec3 pa = clip->root_pos[a], pb = clip->root_pos[b];
    *root_pos = v3_add(pa, v3_scale(v3_sub(pb, pa), u));
    *root_rot = q_slerp(clip->root_rot[a], clip->root_rot[b], u);
    for (uint32_t i = 0; i < n; ++i) {
        local[i] = q_slerp(clip->rot[a * n + i], clip->rot[b * n + i], u);
    }
}

void sim__skel_pose(const sim__skel* sk, sim_vec3 origin, float yaw, sim_vec3 root_pos,
                    sim_quat root_rot, const sim_quat* local, sim_vec3* x, sim_quat* q) {
    sim_quat yq = q_from_axis_angle(v3(0.0f, 1.0f, 0.0f), yaw);
    q[0] = q_normalize(q_mul(q_mul(yq, root_rot), sk->bind_q[0]));
    x[0] = v3_add(origin, q_rotate(yq, root_pos));
    for (uint32_t i = 1; i < sk->def.bone_count; ++i) {
        uint32_t p = (uint32_t)sk->def.bones[i].parent;
        q[i] = q_normalize(q_mul(q_mul(q[p], sk->local_q[i]), local[i]));
        sim_vec3 joint = v3_add(x[p], q_rotate(q[p], sk->anchor_p[i]));
        x[i] = v3_sub(joint, q_rotate(q[i], sk->anchor_c[i]));
    }
}
