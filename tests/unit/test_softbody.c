/*
 * test_softbody.c: soft bodies (server/sim/softbody.c): shape matching with
 * the quaternion polar decomposition, the volume a dropped cube comes back
 * to, stacks that do not interpenetrate, storage across despawns, counts
 * and refused defs.
 *
 * Expected values are hand derivations, never the code's own output: the
 * rotation of A = R0·S is R0 (polar decomposition of a rotation times a
 * symmetric positive definite matrix), a lattice of n points per edge at
 * spacing d encloses ((n − 1)·d)³ between its surface particles' centres
 * (the surface measured by the divergence theorem over its faces), the
 * lattice of a ball of resolution 4 has 32 points (counted by hand below),
 * a proper rotation matrix has RᵀR = I and det R = +1.
 */
// cmocka.h needs these four before it (cmocka docs); keep the order.
// clang-format off
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
// clang-format on

#include "sim.h"
#include "world.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

// ---------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------

static sim_world* make_world(float gx, float gy, float gz, int substeps) {
    sim_world_def def = sim_world_def_default();
    def.params.gravity.x = gx;
    def.params.gravity.y = gy;
    def.params.gravity.z = gz;
    def.params.substeps = substeps;
    def.max_solver_work = 0;
    sim_world* w = NULL;
    assert_int_equal(sim_world_create(&def, &w), SIM_OK);
    return w;
}

// Row-major rotation matrix of a unit quaternion (the textbook formula,
// written out here rather than taken from the simulator).
static void quat_matrix(sim_quat q, double m[9]) {
    double x = q.x, y = q.y, z = q.z, s = q.w;
    m[0] = 1 - 2 * (y * y + z * z);
    m[1] = 2 * (x * y - s * z);
    m[2] = 2 * (x * z + s * y);
    m[3] = 2 * (x * y + s * z);
    m[4] = 1 - 2 * (x * x + z * z);
    m[5] = 2 * (y * z - s * x);
    m[6] = 2 * (x * z - s * y);
    m[7] = 2 * (y * z + s * x);
    m[8] = 1 - 2 * (x * x + y * y);
}

static double det3(const double m[9]) {
    return m[0] * (m[4] * m[8] - m[5] * m[7]) - m[1] * (m[3] * m[8] - m[5] * m[6]) +
           m[2] * (m[3] * m[7] - m[4] * m[6]);
}

// max |RᵀR − I| and |det R − 1| of the matrix of q, unnormalised: the
// simulator's own quaternion as it is stored.
static void check_proper(sim_quat q, double tol) {
    double m[9];
    quat_matrix(q, m);
    double worst = 0.0;
    for (int i = 0; i < 3; ++i) {
        for (int j = 0; j < 3; ++j) {
            double d = m[i] * m[j] + m[3 + i] * m[3 + j] + m[6 + i] * m[6 + j] - (i == j ? 1 : 0);
            worst = fabs(d) > worst ? fabs(d) : worst;
        }
    }
    assert_true(worst < tol);
    assert_true(fabs(det3(m) - 1.0) < tol);
}

static void assert_matrix_near(const double a[9], const double b[9], double tol) {
    for (int k = 0; k < 9; ++k) {
        if (fabs(a[k] - b[k]) >= tol) {
            print_error("matrix entry %d: %.7f against %.7f\n", k, a[k], b[k]);
        }
        assert_true(fabs(a[k] - b[k]) < tol);
    }
}

static sim_entity_id spawn(sim_world* w, sim_softbody_shape shape, float size, uint32_t res,
                           float stiffness, sim_vec3 at) {
    sim_softbody_def d = sim_softbody_def_default();
    d.shape = shape;
    d.size = size;
    d.resolution = res;
    d.stiffness = stiffness;
    d.position = at;
    sim_entity_id id;
    assert_int_equal(sim_world_spawn_softbody(w, &d, &id), SIM_OK);
    return id;
}

// Rotates every particle of entity e about c by the row-major matrix r,
// position and previous position alike (no velocity).
static void rotate_entity(sim_world* w, sim_entity_id id, sim_vec3 c, const double r[9]) {
    const sim__entity* e = sim__entity_get(w, id);
    for (uint32_t i = e->p_first; i < e->p_first + e->p_count; ++i) {
        double x = w->pos[i].x - c.x, y = w->pos[i].y - c.y, z = w->pos[i].z - c.z;
        sim_vec3 p = {(float)(c.x + r[0] * x + r[1] * y + r[2] * z),
                      (float)(c.y + r[3] * x + r[4] * y + r[5] * z),
                      (float)(c.z + r[6] * x + r[7] * y + r[8] * z)};
        w->pos[i] = p;
        w->prev[i] = p;
    }
}

// The volume enclosed by the surface particles' centres of a box lattice
// (res points per edge, particles numbered x fastest, then y, then z): its
// six faces as quads of two triangles wound outward, Σ p0·(p1 × p2) / 6.
static double box_volume(const sim_world* w, sim_entity_id id, uint32_t res) {
    sim_entity_view v;
    assert_int_equal(sim_entity_get_view(w, id, &v), SIM_OK);
    double sum = 0.0;
    for (int a = 0; a < 3; ++a) {
        const int b = (a + 1) % 3, c = (a + 2) % 3;
        for (int side = 0; side < 2; ++side) {
            uint32_t fixed = side == 0 ? 0 : res - 1;
            for (uint32_t u = 0; u + 1 < res; ++u) {
                for (uint32_t t = 0; t + 1 < res; ++t) {
                    uint32_t corner[4][2] = {{u, t}, {u + 1, t}, {u + 1, t + 1}, {u, t + 1}};
                    double p[4][3];
                    for (int k = 0; k < 4; ++k) {
                        uint32_t ijk[3];
                        ijk[a] = fixed;
                        ijk[b] = corner[k][0];
                        ijk[c] = corner[k][1];
                        uint32_t idx = ijk[0] + res * (ijk[1] + res * ijk[2]);
                        p[k][0] = v.pos[idx].x;
                        p[k][1] = v.pos[idx].y;
                        p[k][2] = v.pos[idx].z;
                    }
                    // e_b × e_c = e_a: this winding faces +a; flip on the − side.
                    const int tri[2][3] = {{0, 1, 2}, {0, 2, 3}};
                    for (int k = 0; k < 2; ++k) {
                        const double* p0 = p[tri[k][0]];
                        const double* p1 = p[tri[k][side == 1 ? 1 : 2]];
                        const double* p2 = p[tri[k][side == 1 ? 2 : 1]];
                        double cx = p1[1] * p2[2] - p1[2] * p2[1];
                        double cy = p1[2] * p2[0] - p1[0] * p2[2];
                        double cz = p1[0] * p2[1] - p1[1] * p2[0];
                        sum += (p0[0] * cx + p0[1] * cy + p0[2] * cz) / 6.0;
                    }
                }
            }
        }
    }
    return sum;
}

// ---------------------------------------------------------------------------
// Polar decomposition
// ---------------------------------------------------------------------------

// A = R0·S with S symmetric positive definite: the polar rotation is R0.
// R0 = the 120° turn about (1, 1, 1)/√3, which takes x to y, y to z, z to x:
// R0 = [[0,0,1],[1,0,0],[0,1,0]]; S = diag(2, 1, 0.5) plus a symmetric
// off-diagonal 0.25 between x and y (eigenvalues 2.0533, 0.9467, 0.5 > 0).
static void test_softbody_polar_of_rotation_times_spd(void** state) {
    (void)state;
    const double r0[9] = {0, 0, 1, 1, 0, 0, 0, 1, 0};
    const double s[9] = {2, 0.25, 0, 0.25, 1, 0, 0, 0, 0.5};
    float a[9];
    for (int r = 0; r < 3; ++r) {
        for (int c = 0; c < 3; ++c) {
            a[3 * r + c] =
                (float)(r0[3 * r] * s[c] + r0[3 * r + 1] * s[3 + c] + r0[3 * r + 2] * s[6 + c]);
        }
    }
    const sim_quat id = {0, 0, 0, 1};
    int iters = 0;
    sim_quat q = sim__polar_rotation(a, id, SIM__POLAR_MAX_ITERS, &iters);
    double m[9];
    quat_matrix(q, m);
    assert_matrix_near(m, r0, 1e-5);
    check_proper(q, 1e-5);
    assert_true(iters < SIM__POLAR_MAX_ITERS);
    // Warm-started from the answer it stops at once.
    sim__polar_rotation(a, q, SIM__POLAR_MAX_ITERS, &iters);
    assert_true(iters <= 1);

    // A reflection (det A < 0) and a singular A still give a proper rotation.
    const float refl[9] = {-1, 0, 0, 0, 1, 0, 0, 0, 1};
    check_proper(sim__polar_rotation(refl, id, SIM__POLAR_MAX_ITERS, NULL), 1e-5);
    const float flat[9] = {1, 0, 0, 0, 1, 0, 0, 0, 0};
    check_proper(sim__polar_rotation(flat, id, SIM__POLAR_MAX_ITERS, NULL), 1e-5);
}

// A lattice turned rigidly by R0 and not deformed: its shape-matching fit
// gives exactly R0 and every goal is where the particle is, so nothing
// moves. Box: R0 the 120° turn above; ball: 90° about +X,
// [[1,0,0],[0,0,−1],[0,1,0]].
static void test_softbody_rotated_lattice_gives_that_rotation(void** state) {
    (void)state;
    const double r_box[9] = {0, 0, 1, 1, 0, 0, 0, 1, 0};
    const double r_ball[9] = {1, 0, 0, 0, 0, -1, 0, 1, 0};
    const sim_softbody_shape shapes[2] = {SIM_SOFTBODY_BOX, SIM_SOFTBODY_SPHERE};
    const double* rots[2] = {r_box, r_ball};
    for (int k = 0; k < 2; ++k) {
        sim_world* w = make_world(0, 0, 0, 1);
        const sim_vec3 c = {1.0f, 5.0f, -2.0f};
        sim_entity_id id = spawn(w, shapes[k], 1.0f, 5, 0.5f, c);
        rotate_entity(w, id, c, rots[k]);
        sim_entity_view v;
        assert_int_equal(sim_entity_get_view(w, id, &v), SIM_OK);
        sim_vec3 before[125];
        memcpy(before, v.pos, v.particle_count * sizeof *before);
        sim_world_step(w);
        sim_softbody_view sv;
        assert_int_equal(sim_softbody_get_view(w, id, &sv), SIM_OK);
        double m[9];
        quat_matrix(sv.rotation, m);
        assert_matrix_near(m, rots[k], 1e-5);
        assert_true(fabsf(sv.volume_ratio - 1.0f) < 1e-4f);
        assert_int_equal(sim_entity_get_view(w, id, &v), SIM_OK);
        for (uint32_t i = 0; i < v.particle_count; ++i) {
            assert_true(fabsf(v.pos[i].x - before[i].x) < 1e-5f);
            assert_true(fabsf(v.pos[i].y - before[i].y) < 1e-5f);
            assert_true(fabsf(v.pos[i].z - before[i].z) < 1e-5f);
        }
        sim_world_destroy(w);
    }
}

// A cube spun at 30 rad/s and thrown down onto the ground, and a cube
// turned inside out (mirrored through its centre plane x = const): the
// rotation is a proper rotation after every tick.
static void test_softbody_rotation_is_proper_every_tick(void** state) {
    (void)state;
    sim_world* w = make_world(0, -9.81f, 0, 2);
    const sim_vec3 c = {0.0f, 3.0f, 0.0f};
    sim_entity_id id = spawn(w, SIM_SOFTBODY_BOX, 1.0f, 4, 0.3f, c);
    // ω = 30 rad/s about (1, 2, 0.5)/|…|, v = (2, −6, 0) m/s: prev = x − (v + ω × r)·h.
    const float h = sim_world_dt(w) / 2.0f;
    sim_vec3 axis = {1.0f, 2.0f, 0.5f};
    float len = sqrtf(axis.x * axis.x + axis.y * axis.y + axis.z * axis.z);
    sim_vec3 om = {30.0f * axis.x / len, 30.0f * axis.y / len, 30.0f * axis.z / len};
    const sim__entity* e = sim__entity_get(w, id);
    for (uint32_t i = e->p_first; i < e->p_first + e->p_count; ++i) {
        sim_vec3 r = {w->pos[i].x - c.x, w->pos[i].y - c.y, w->pos[i].z - c.z};
        sim_vec3 vel = {2.0f + om.y * r.z - om.z * r.y, -6.0f + om.z * r.x - om.x * r.z,
                        om.x * r.y - om.y * r.x};
        w->prev[i].x = w->pos[i].x - vel.x * h;
        w->prev[i].y = w->pos[i].y - vel.y * h;
        w->prev[i].z = w->pos[i].z - vel.z * h;
    }
    uint32_t max_iters = 0;
    for (int t = 0; t < 240; ++t) {
        sim_world_step(w);
        sim_softbody_view sv;
        assert_int_equal(sim_softbody_get_view(w, id, &sv), SIM_OK);
        check_proper(sv.rotation, 1e-5);
        max_iters = sv.polar_iters > max_iters ? sv.polar_iters : max_iters;
    }
    assert_true(sim_world_is_finite(w));
    printf("# spun cube: most polar iterations in a fit %u (warm start)\n", max_iters);

    // Mirrored: x − c.x → −(x − c.x), an improper start the fit cannot
    // express as a rotation; it must still give proper ones.
    const sim_vec3 c2 = {5.0f, 3.0f, 0.0f};
    sim_entity_id id2 = spawn(w, SIM_SOFTBODY_BOX, 1.0f, 4, 0.3f, c2);
    const double mirror[9] = {-1, 0, 0, 0, 1, 0, 0, 0, 1};
    rotate_entity(w, id2, c2, mirror);
    for (int t = 0; t < 240; ++t) {
        sim_world_step(w);
        sim_softbody_view sv;
        assert_int_equal(sim_softbody_get_view(w, id2, &sv), SIM_OK);
        check_proper(sv.rotation, 1e-5);
    }
    assert_true(sim_world_is_finite(w));
    sim_world_destroy(w);
}

// ---------------------------------------------------------------------------
// Volume, stacking, storage
// ---------------------------------------------------------------------------

// A soft cube (1 m, 4³, stiffness 0.5; and a softer one, 0.2, with the
// volume term at 1) dropped from 1.5 m onto the ground: squashed by the
// impact, it comes back to within 5 % of its rest volume
// ((4 − 1)·0.25)³ = 0.421875 m³ between its surface centres, every tick
// of the last second (3-4 s), resting on the ground. (Without the volume
// term, stiffness 0.2 sags to 7.7 % under its own weight.)
static void test_softbody_dropped_cube_recovers_rest_volume(void** state) {
    (void)state;
    const double v0 = 0.421875;
    const float stiffness[2] = {0.5f, 0.2f};
    const float pressure[2] = {0.0f, 1.0f};
    for (int k = 0; k < 2; ++k) {
        sim_world* w = make_world(0, -9.81f, 0, 1);
        sim_softbody_def d = sim_softbody_def_default();
        d.position = (sim_vec3){0, 2.0f, 0};
        d.stiffness = stiffness[k];
        d.pressure = pressure[k];
        sim_entity_id id;
        assert_int_equal(sim_world_spawn_softbody(w, &d, &id), SIM_OK);
        assert_true(fabs(box_volume(w, id, 4) / v0 - 1.0) < 1e-5);
        double vmin = 1e9, worst_late = 0.0;
        for (int t = 0; t < 240; ++t) {
            sim_world_step(w);
            double r = box_volume(w, id, 4) / v0;
            vmin = r < vmin ? r : vmin;
            if (t >= 180) { // the last second: after the bounce
                worst_late = fabs(r - 1.0) > worst_late ? fabs(r - 1.0) : worst_late;
            }
        }
        printf("# dropped cube, stiffness %.1f, pressure %.0f: smallest volume %.3f of rest, worst "
               "in 3-4 s %.4f\n",
               (double)stiffness[k], (double)pressure[k], vmin, worst_late);
        assert_true(vmin < 0.99); // the impact did squash it
        assert_true(worst_late < 0.05);
        sim_world_destroy(w);
    }
}

// The volume term: a very soft cube (stiffness 0.05) resting on the ground
// loses under a quarter of the volume with pressure 1 that it loses
// without.
static void test_softbody_pressure_keeps_volume(void** state) {
    (void)state;
    const double v0 = 0.421875;
    double late[2];
    for (int k = 0; k < 2; ++k) {
        sim_world* w = make_world(0, -9.81f, 0, 1);
        sim_softbody_def d = sim_softbody_def_default();
        d.position = (sim_vec3){0, 0.6f, 0};
        d.stiffness = 0.05f;
        d.pressure = k == 0 ? 0.0f : 1.0f;
        sim_entity_id id;
        assert_int_equal(sim_world_spawn_softbody(w, &d, &id), SIM_OK);
        for (int t = 0; t < 180; ++t) {
            sim_world_step(w);
        }
        late[k] = box_volume(w, id, 4) / v0;
        sim_world_destroy(w);
    }
    printf("# resting cube, stiffness 0.05: volume %.4f of rest without pressure, %.4f with 1\n",
           late[0], late[1]);
    assert_true(fabs(late[1] - 1.0) < 0.25 * fabs(late[0] - 1.0));
}

// Three cubes of 0.6 m (4³, spacing d = 0.15 m, radius 0.075 m, stiffness
// 0.9) dropped into a stack, each 2 cm off the one below. From 1.5 s on,
// every tick: no two particles of different cubes closer than the sum of
// their radii minus 5 mm (the tolerance), and the cubes' centroids in
// order more than 0.55 m apart (0.6 m less the cubes' sag under the load
// and at most (1 − 1/√2)·d = 44 mm where one lattice's spheres nest in the
// hollows of the other's); in the last 0.5 s every particle slower than
// 5 cm/s (Box2D's sleep threshold) and the stack standing (its top within
// 5 cm of the bottom's vertical).
static void test_softbody_stack_of_three_does_not_interpenetrate(void** state) {
    (void)state;
    sim_world* w = make_world(0, -9.81f, 0, 2);
    sim_entity_id ids[3];
    for (int k = 0; k < 3; ++k) {
        ids[k] = spawn(w, SIM_SOFTBODY_BOX, 0.6f, 4, 0.9f,
                       (sim_vec3){0.02f * (float)k, 0.35f + 0.65f * (float)k, 0.0f});
    }
    const float tol = 0.005f;
    float worst_pen = 0.0f, max_speed_late = 0.0f, min_gap = 1e9f;
    for (int t = 0; t < 360; ++t) {
        sim_world_step(w);
        if (t < 90) {
            continue;
        }
        sim_entity_view v[3];
        for (int k = 0; k < 3; ++k) {
            assert_int_equal(sim_entity_get_view(w, ids[k], &v[k]), SIM_OK);
        }
        for (int a = 0; a < 3; ++a) {
            for (int b = a + 1; b < 3; ++b) {
                for (uint32_t i = 0; i < v[a].particle_count; ++i) {
                    for (uint32_t j = 0; j < v[b].particle_count; ++j) {
                        float dx = v[a].pos[i].x - v[b].pos[j].x;
                        float dy = v[a].pos[i].y - v[b].pos[j].y;
                        float dz = v[a].pos[i].z - v[b].pos[j].z;
                        float pen =
                            v[a].radius[i] + v[b].radius[j] - sqrtf(dx * dx + dy * dy + dz * dz);
                        worst_pen = pen > worst_pen ? pen : worst_pen;
                    }
                }
            }
        }
        sim_softbody_view sv[3];
        for (int k = 0; k < 3; ++k) {
            assert_int_equal(sim_softbody_get_view(w, ids[k], &sv[k]), SIM_OK);
        }
        for (int k = 0; k + 1 < 3; ++k) {
            float gap = sv[k + 1].centroid.y - sv[k].centroid.y;
            assert_true(gap > 0.55f);
            min_gap = gap < min_gap ? gap : min_gap;
        }
        if (t >= 330) {
            const float h = sim_world_dt(w) / 2.0f;
            for (int k = 0; k < 3; ++k) {
                for (uint32_t i = 0; i < v[k].particle_count; ++i) {
                    float dx = v[k].pos[i].x - v[k].prev[i].x, dy = v[k].pos[i].y - v[k].prev[i].y,
                          dz = v[k].pos[i].z - v[k].prev[i].z;
                    float s = sqrtf(dx * dx + dy * dy + dz * dz) / h;
                    max_speed_late = s > max_speed_late ? s : max_speed_late;
                }
            }
            float drift =
                hypotf(sv[2].centroid.x - sv[0].centroid.x, sv[2].centroid.z - sv[0].centroid.z);
            assert_true(drift < 0.05f);
        }
    }
    printf("# stack of three: deepest overlap after 1.5 s %.2f mm (tolerance 5 mm), fastest "
           "particle in the last 0.5 s %.4f m/s, closest centroids %.4f m\n",
           1000.0 * (double)worst_pen, (double)max_speed_late, (double)min_gap);
    assert_true(worst_pen < tol);
    assert_true(max_speed_late < 0.05f);
    sim_world_destroy(w);
}

// Rest offsets slide with the particles and the warm-started rotation
// stays with the slot: a turned soft body stored after a cloth that is
// despawned moves bit for bit as the same body in a world that never had
// the cloth.
static void test_softbody_survives_despawn_of_others(void** state) {
    (void)state;
    const double r0[9] = {0, 0, 1, 1, 0, 0, 0, 1, 0};
    sim_world* a = make_world(0, -9.81f, 0, 1);
    sim_world* b = make_world(0, -9.81f, 0, 1);
    sim_cloth_def cd = sim_cloth_def_default();
    cd.origin = (sim_vec3){20.0f, 5.0f, 0.0f};
    sim_entity_id cloth;
    assert_int_equal(sim_world_spawn_cloth(a, &cd, &cloth), SIM_OK);
    const sim_vec3 c = {0.0f, 2.0f, 0.0f};
    sim_entity_id sa = spawn(a, SIM_SOFTBODY_SPHERE, 1.0f, 5, 0.4f, c);
    sim_entity_id sb = spawn(b, SIM_SOFTBODY_SPHERE, 1.0f, 5, 0.4f, c);
    rotate_entity(a, sa, c, r0);
    rotate_entity(b, sb, c, r0);
    for (int t = 0; t < 30; ++t) {
        sim_world_step(a);
        sim_world_step(b);
    }
    assert_int_equal(sim_world_despawn(a, cloth), SIM_OK);
    for (int t = 0; t < 90; ++t) {
        sim_world_step(a);
        sim_world_step(b);
    }
    sim_entity_view va, vb;
    assert_int_equal(sim_entity_get_view(a, sa, &va), SIM_OK);
    assert_int_equal(sim_entity_get_view(b, sb, &vb), SIM_OK);
    assert_int_equal(va.particle_count, vb.particle_count);
    assert_memory_equal(va.pos, vb.pos, va.particle_count * sizeof *va.pos);
    sim_softbody_view qa, qb;
    assert_int_equal(sim_softbody_get_view(a, sa, &qa), SIM_OK);
    assert_int_equal(sim_softbody_get_view(b, sb, &qb), SIM_OK);
    assert_memory_equal(&qa.rotation, &qb.rotation, sizeof qa.rotation);
    sim_world_destroy(a);
    sim_world_destroy(b);
}

// ---------------------------------------------------------------------------
// Counts and refused defs
// ---------------------------------------------------------------------------

// Box of resolution n: n³ particles. Ball of resolution 4: offsets (in half
// cells) from {±1, ±3}, kept when x² + y² + z² ≤ 16: all of ±1 (8 points)
// and one ±3 with two ±1 (3 axes × 2 × 4 = 24): 32. Sticks: a cube of 2³
// has its 12 edges; of 3³, 6 faces × 12 edges − 12 cube edges × 2 shared
// segments = 48.
static void test_softbody_counts_and_sticks(void** state) {
    (void)state;
    sim_softbody_def d = sim_softbody_def_default();
    sim_counts c;
    d.resolution = 5;
    assert_int_equal(sim_softbody_def_counts(&d, &c), SIM_OK);
    assert_int_equal(c.particles, 125);
    assert_int_equal(c.soft_particles, 125);
    assert_int_equal(c.constraints, 0);
    d.shape = SIM_SOFTBODY_SPHERE;
    d.resolution = 4;
    assert_int_equal(sim_softbody_def_counts(&d, &c), SIM_OK);
    assert_int_equal(c.particles, 32);

    sim_world* w = make_world(0, -9.81f, 0, 1);
    sim_params p = sim_world_params(w);
    uint64_t work0 = sim_world_solver_work(w);
    sim_counts before = sim_world_counts(w);
    sim_entity_id id;
    assert_int_equal(sim_world_spawn_softbody(w, &d, &id), SIM_OK);
    sim_counts after = sim_world_counts(w);
    assert_int_equal(after.particles - before.particles, 32);
    assert_int_equal(after.soft_particles - before.soft_particles, 32);
    assert_true(sim_world_solver_work(w) - work0 == sim_counts_solver_work(&c, &p));
    // 32 particles × (1 + 16) × 8 iterations × 1 substep + 32 × 4 per substep.
    assert_true(sim_counts_solver_work(&c, &p) == 32u * 17u * 8u + 32u * 4u);

    const uint32_t res[2] = {2, 3};
    const uint32_t want[2] = {12, 48};
    for (int k = 0; k < 2; ++k) {
        sim_softbody_def b = sim_softbody_def_default();
        b.resolution = res[k];
        b.position = (sim_vec3){10.0f * (float)(k + 1), 2.0f, 0.0f};
        assert_int_equal(sim_world_spawn_softbody(w, &b, &id), SIM_OK);
        sim_entity_view v;
        assert_int_equal(sim_entity_get_view(w, id, &v), SIM_OK);
        assert_int_equal(v.kind, SIM_ENTITY_SOFTBODY);
        assert_int_equal(v.stick_count, want[k]);
        uint32_t pairs[2 * 48];
        assert_int_equal(sim_entity_copy_sticks(w, id, pairs, 48), (int)want[k]);
        // Every stick joins lattice neighbours: one spacing apart.
        for (uint32_t s = 0; s < want[k]; ++s) {
            sim_vec3 pa = v.pos[pairs[2 * s]], pb = v.pos[pairs[2 * s + 1]];
            float dx = pa.x - pb.x, dy = pa.y - pb.y, dz = pa.z - pb.z;
            assert_true(fabsf(sqrtf(dx * dx + dy * dy + dz * dz) - 1.0f / (float)res[k]) < 1e-5f);
        }
    }
    assert_string_equal(sim_entity_kind_name(SIM_ENTITY_SOFTBODY), "softbody");
    sim_world_destroy(w);
}

static void test_softbody_bad_defs_change_nothing(void** state) {
    (void)state;
    sim_world_def wd = sim_world_def_default();
    wd.max_particles = 200;
    sim_world* w = NULL;
    assert_int_equal(sim_world_create(&wd, &w), SIM_OK);
    sim_entity_id id;
    struct {
        int field;
        float value;
        int rc;
    } cases[] = {
        {0, 0.01f, SIM_E_OUT_OF_RANGE},   // size below 0.05
        {0, 6.0f, SIM_E_OUT_OF_RANGE},    // size above 5
        {1, 1.0f, SIM_E_OUT_OF_RANGE},    // resolution 1
        {1, 17.0f, SIM_E_OUT_OF_RANGE},   // resolution 17
        {2, 0.0f, SIM_E_OUT_OF_RANGE},    // stiffness 0
        {2, 1.5f, SIM_E_OUT_OF_RANGE},    // stiffness above 1
        {3, -0.1f, SIM_E_OUT_OF_RANGE},   // pressure below 0
        {4, 1.0e-3f, SIM_E_OUT_OF_RANGE}, // 64 particles of 1.6e-5 kg
        {5, 999.8f, SIM_E_OUT_OF_RANGE},  // the cube leaves the world
        {2, NAN, SIM_E_NOT_FINITE},       {6, 5.0f, SIM_E_OUT_OF_RANGE}, // no such shape
        {1, 6.0f, SIM_E_CAPACITY}, // 216 particles, the world holds 200
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; ++k) {
        sim_softbody_def d = sim_softbody_def_default();
        switch (cases[k].field) {
        case 0:
            d.size = cases[k].value;
            break;
        case 1:
            d.resolution = (uint32_t)cases[k].value;
            break;
        case 2:
            d.stiffness = cases[k].value;
            break;
        case 3:
            d.pressure = cases[k].value;
            break;
        case 4:
            d.mass = cases[k].value;
            break;
        case 5:
            d.position.x = cases[k].value;
            break;
        default:
            d.shape = (sim_softbody_shape)cases[k].value;
            break;
        }
        uint32_t epoch = sim_world_topology_epoch(w);
        assert_int_equal(sim_world_spawn_softbody(w, &d, &id), cases[k].rc);
        assert_int_equal(sim_world_entity_count(w), 0);
        assert_int_equal(sim_world_particle_count(w), 0);
        assert_int_equal(sim_world_topology_epoch(w), epoch);
    }
    sim_softbody_def d = sim_softbody_def_default();
    d.cookie = 0;
    assert_int_equal(sim_world_spawn_softbody(w, &d, &id), SIM_E_INVALID_ARG);
    sim_world_destroy(w);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_softbody_polar_of_rotation_times_spd),
        cmocka_unit_test(test_softbody_rotated_lattice_gives_that_rotation),
        cmocka_unit_test(test_softbody_rotation_is_proper_every_tick),
        cmocka_unit_test(test_softbody_dropped_cube_recovers_rest_volume),
        cmocka_unit_test(test_softbody_pressure_keeps_volume),
        cmocka_unit_test(test_softbody_stack_of_three_does_not_interpenetrate),
        cmocka_unit_test(test_softbody_survives_despawn_of_others),
        cmocka_unit_test(test_softbody_counts_and_sticks),
        cmocka_unit_test(test_softbody_bad_defs_change_nothing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
