/*
 * test_articulation.c: reduced-coordinate articulations
 * (server/sim/articulation.c, issue 13) against values derived by hand:
 * the compound pendulum's period, the double pendulum's equations of motion
 * from its Lagrangian (integrated here, independently, with RK4 in
 * double), conservation of energy and of momentum, the seed 004 PD worked
 * example, a 1 kg-link arm holding a 100 kg payload against gravity, and
 * joints that cannot come apart.
 */
// cmocka.h needs these four before it (cmocka docs); keep the order.
// clang-format off
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
// clang-format on

#include "sim_articulation.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static const float G = 9.81f;
static const double PI = 3.14159265358979323846;

static sim_vec3 vec(float x, float y, float z) {
    sim_vec3 v = {x, y, z};
    return v;
}

static sim_vec3 v3_add_(sim_vec3 a, sim_vec3 b, float s) {
    return vec(a.x + b.x * s, a.y + b.y * s, a.z + b.z * s);
}

static sim_quat quat_axis(sim_vec3 axis, float angle) {
    float n = sqrtf(axis.x * axis.x + axis.y * axis.y + axis.z * axis.z);
    float s = sinf(0.5f * angle) / n;
    sim_quat q = {axis.x * s, axis.y * s, axis.z * s, cosf(0.5f * angle)};
    return q;
}

// A slender rod hanging along −Y from its joint: mass m, length L, hinge
// about +Z (a compound pendulum's link). Its inertia about the centre of
// mass: m·L²/12 across, and along it that of a 4 cm radius, m·r²/2 (a
// bone's capsule has about that; far less makes the motion stiff).
static sim_artic_link_def rod(int32_t parent, sim_vec3 anchor, float m, float L) {
    sim_artic_link_def d = sim_artic_link_def_default();
    d.parent = parent;
    d.joint = SIM_ARTIC_REVOLUTE;
    d.anchor = anchor;
    d.axis = vec(0.0f, 0.0f, 1.0f);
    d.mass = m;
    d.com = vec(0.0f, -0.5f * L, 0.0f);
    float across = m * L * L / 12.0f;
    d.inertia = vec(across, 0.5f * m * 0.04f * 0.04f, across);
    return d;
}

// ---------------------------------------------------------------------------
// One hinge
// ---------------------------------------------------------------------------

// sim_artic_stop(): a swinging double pendulum stops where it is: every
// link's velocity is zero, its angles are those it had.
static void test_stop_keeps_the_pose_and_nothing_moves(void** state) {
    (void)state;
    sim_artic_link_def d[2] = {rod(-1, vec(0.0f, 0.0f, 0.0f), 1.0f, 1.0f),
                               rod(0, vec(0.0f, -1.0f, 0.0f), 1.0f, 1.0f)};
    sim_artic* a = NULL;
    assert_int_equal(sim_artic_create(d, 2, NULL, &a), SIM_OK);
    assert_int_equal(sim_artic_set_angle(a, 0, 1.0f, 2.0f), SIM_OK);
    for (int s = 0; s < 30; ++s) {
        assert_int_equal(sim_artic_step(a, 1.0f / 240.0f, vec(0.0f, -G, 0.0f)), SIM_OK);
    }
    float before[2], after[2], rate;
    for (uint32_t i = 0; i < 2; ++i) {
        sim_artic_get_angle(a, i, &before[i], &rate);
    }
    sim_artic_stop(a);
    for (uint32_t i = 0; i < 2; ++i) {
        sim_artic_get_angle(a, i, &after[i], &rate);
        assert_true(after[i] == before[i] && rate == 0.0f);
        sim_vec3 c, v, om;
        assert_int_equal(sim_artic_link_motion(a, i, &c, &v, &om), SIM_OK);
        assert_true(v.x == 0.0f && v.y == 0.0f && v.z == 0.0f);
        assert_true(om.x == 0.0f && om.y == 0.0f && om.z == 0.0f);
    }
    sim_artic_destroy(a);
}

// A uniform rod of length L swinging about one end: I = m·L²/3 about the
// pivot, its centre of mass at L/2, so for small angles
// T = 2π·√(I / (m·g·L/2)) = 2π·√(2L / 3g) = 1.6378 s for L = 1 m (any
// mechanics text; e.g. Halliday & Resnick, "physical pendulum").
static void test_compound_pendulum_period(void** state) {
    (void)state;
    const float L = 1.0f;
    sim_artic_link_def d = rod(-1, vec(0.0f, 0.0f, 0.0f), 2.0f, L);
    sim_artic* a = NULL;
    assert_int_equal(sim_artic_create(&d, 1, NULL, &a), SIM_OK);
    assert_int_equal(sim_artic_set_angle(a, 0, 0.05f, 0.0f), SIM_OK);
    const double expected = 2.0 * PI * sqrt(2.0 * L / (3.0 * G));
    assert_true(fabs(expected - 1.6378) < 1e-3);
    // Upward zero crossings of the angle, at 60 Hz with linear
    // interpolation between ticks, over 20 s.
    const float h = 1.0f / 60.0f;
    float prev = 0.05f, rate = 0.0f;
    double t = 0.0, first = -1.0, last = -1.0;
    int crossings = 0;
    for (int i = 0; i < 1200; ++i) {
        assert_int_equal(sim_artic_step(a, h, vec(0.0f, -G, 0.0f)), SIM_OK);
        float angle = 0.0f;
        assert_int_equal(sim_artic_get_angle(a, 0, &angle, &rate), SIM_OK);
        t += h;
        if (prev < 0.0f && angle >= 0.0f) {
            double tc = t - h + h * (double)(-prev / (angle - prev));
            if (first < 0.0) {
                first = tc;
            } else {
                crossings++;
            }
            last = tc;
        }
        prev = angle;
    }
    const double period = (last - first) / crossings;
    printf("compound pendulum: period %.5f s over %d swings, expected %.5f s\n", period, crossings,
           expected);
    // 0.05 rad raises the period by θ0²/16 = 1.6e-4; semi-implicit Euler at
    // ωh = 0.064 shifts it by about (ωh)²/24 = 1.7e-4.
    assert_true(fabs(period - expected) / expected < 2e-3);
    sim_artic_destroy(a);
}

// A large swing (1.2 rad) for 10 s at 60 Hz: semi-implicit Euler is
// symplectic, so the energy oscillates within O(h) of its start and does not
// creep upwards. The bound is 5 % of the swing's energy m·g·(L/2)·(1 − cos θ0)
// (3 % is seen); the mean of the last second may not exceed the first's.
static void test_pendulum_energy_bounded(void** state) {
    (void)state;
    sim_artic_link_def d = rod(-1, vec(0.0f, 0.0f, 0.0f), 1.0f, 1.0f);
    sim_artic* a = NULL;
    assert_int_equal(sim_artic_create(&d, 1, NULL, &a), SIM_OK);
    assert_int_equal(sim_artic_set_angle(a, 0, 1.2f, 0.0f), SIM_OK);
    const sim_vec3 g = vec(0.0f, -G, 0.0f);
    const double e0 = sim_artic_energy(a, g);
    // Hand value: V = m·g·y_com = 9.81·(−0.5·cos 1.2) at rest.
    assert_true(fabs(e0 - (-9.81 * 0.5 * cos(1.2))) < 1e-4);
    const double swing = 9.81 * 0.5 * (1.0 - cos(1.2));
    double worst = 0.0, first_second = 0.0, last_second = 0.0;
    for (int i = 0; i < 600; ++i) {
        assert_int_equal(sim_artic_step(a, 1.0f / 60.0f, g), SIM_OK);
        const double e = sim_artic_energy(a, g);
        worst = fmax(worst, fabs(e - e0));
        if (i < 60) {
            first_second += e / 60.0;
        } else if (i >= 540) {
            last_second += e / 60.0;
        }
    }
    printf("pendulum energy: worst |ΔE| %.4f J of a %.4f J swing; mean first s %.5f, last s %.5f\n",
           worst, swing, first_second, last_second);
    assert_true(worst < 0.05 * swing);
    assert_true(last_second <= first_second + 0.002 * swing);
    sim_artic_destroy(a);
}

// ---------------------------------------------------------------------------
// The double pendulum, against its Lagrangian
// ---------------------------------------------------------------------------

typedef struct dp {
    double m1, m2, L1, a1, a2, I1, I2, g;
} dp;

// Absolute angles θ1, θ2 from the downward vertical, counter-clockwise
// about +Z; the links' centres of mass at a1 and a2 from their joints.
// T = ½(m1·a1² + I1 + m2·L1²)θ1'² + ½(m2·a2² + I2)θ2'² + m2·L1·a2·cos(θ1−θ2)θ1'θ2'
// V = −(m1·a1 + m2·L1)·g·cos θ1 − m2·a2·g·cos θ2, whence
// M11 θ1'' + M12 θ2'' = −m2·L1·a2·sin(θ1−θ2)·θ2'² − (m1·a1 + m2·L1)·g·sin θ1
// M12 θ1'' + M22 θ2'' =  m2·L1·a2·sin(θ1−θ2)·θ1'² − m2·a2·g·sin θ2.
static void dp_accel(const dp* p, const double s[4], double out[4]) {
    const double t1 = s[0], t2 = s[1], w1 = s[2], w2 = s[3];
    const double M11 = p->m1 * p->a1 * p->a1 + p->I1 + p->m2 * p->L1 * p->L1;
    const double M12 = p->m2 * p->L1 * p->a2 * cos(t1 - t2);
    const double M22 = p->m2 * p->a2 * p->a2 + p->I2;
    const double k = p->m2 * p->L1 * p->a2 * sin(t1 - t2);
    const double r1 = -k * w2 * w2 - (p->m1 * p->a1 + p->m2 * p->L1) * p->g * sin(t1);
    const double r2 = k * w1 * w1 - p->m2 * p->a2 * p->g * sin(t2);
    const double det = M11 * M22 - M12 * M12;
    out[0] = w1;
    out[1] = w2;
    out[2] = (M22 * r1 - M12 * r2) / det;
    out[3] = (M11 * r2 - M12 * r1) / det;
}

static void dp_rk4(const dp* p, double s[4], double h) {
    double k1[4], k2[4], k3[4], k4[4], t[4];
    dp_accel(p, s, k1);
    for (int i = 0; i < 4; ++i) {
        t[i] = s[i] + 0.5 * h * k1[i];
    }
    dp_accel(p, t, k2);
    for (int i = 0; i < 4; ++i) {
        t[i] = s[i] + 0.5 * h * k2[i];
    }
    dp_accel(p, t, k3);
    for (int i = 0; i < 4; ++i) {
        t[i] = s[i] + h * k3[i];
    }
    dp_accel(p, t, k4);
    for (int i = 0; i < 4; ++i) {
        s[i] += h / 6.0 * (k1[i] + 2.0 * k2[i] + 2.0 * k3[i] + k4[i]);
    }
}

static sim_artic* double_pendulum(const dp* p) {
    sim_artic_link_def d[2];
    d[0] = rod(-1, vec(0.0f, 0.0f, 0.0f), (float)p->m1, 1.0f);
    d[0].com = vec(0.0f, -(float)p->a1, 0.0f);
    d[0].inertia = vec((float)p->I1, 1e-4f, (float)p->I1);
    d[1] = rod(0, vec(0.0f, -(float)p->L1, 0.0f), (float)p->m2, 1.0f);
    d[1].com = vec(0.0f, -(float)p->a2, 0.0f);
    d[1].inertia = vec((float)p->I2, 1e-4f, (float)p->I2);
    sim_artic* a = NULL;
    assert_int_equal(sim_artic_create(d, 2, NULL, &a), SIM_OK);
    return a;
}

// The ABA's accelerations equal M⁻¹·rhs of the Lagrangian at several
// states (one 0.1 ms step: qdd = (qd' − qd)/h, its velocity-product terms
// at the step's midpoint velocity, O(h) off the instant's); then the
// motion over 2 s matches RK4 at 10 µs.
static void test_double_pendulum_matches_lagrangian(void** state) {
    (void)state;
    const dp p = {
        .m1 = 1.5, .m2 = 0.8, .L1 = 0.9, .a1 = 0.4, .a2 = 0.35, .I1 = 0.1, .I2 = 0.05, .g = G};
    const double states[3][4] = {
        {0.8, -0.4, 0.0, 0.0}, {0.3, 1.9, 2.0, -1.5}, {-2.5, 0.7, -3.0, 4.0}};
    for (int c = 0; c < 3; ++c) {
        sim_artic* a = double_pendulum(&p);
        const double* s = states[c];
        // Joint 2's coordinate is relative: φ = θ2 − θ1.
        assert_int_equal(sim_artic_set_angle(a, 0, (float)s[0], (float)s[2]), SIM_OK);
        assert_int_equal(sim_artic_set_angle(a, 1, (float)(s[1] - s[0]), (float)(s[3] - s[2])),
                         SIM_OK);
        double ref[4];
        dp_accel(&p, s, ref);
        const float h = 1e-4f;
        assert_int_equal(sim_artic_step(a, h, vec(0.0f, -G, 0.0f)), SIM_OK);
        float t1, w1, phi, wphi;
        assert_int_equal(sim_artic_get_angle(a, 0, &t1, &w1), SIM_OK);
        assert_int_equal(sim_artic_get_angle(a, 1, &phi, &wphi), SIM_OK);
        const double acc1 = ((double)w1 - s[2]) / h;
        const double acc2 = ((double)(w1 + wphi) - s[3]) / h;
        printf("double pendulum state %d: θ1'' %.4f (Lagrangian %.4f), θ2'' %.4f (%.4f)\n", c, acc1,
               ref[2], acc2, ref[3]);
        const double scale = 1.0 + fabs(ref[2]) + fabs(ref[3]);
        assert_true(fabs(acc1 - ref[2]) < 2e-3 * scale);
        assert_true(fabs(acc2 - ref[3]) < 2e-3 * scale);
        sim_artic_destroy(a);
    }
    // The trajectory: 2 s at 1 kHz against RK4 at 100 kHz.
    sim_artic* a = double_pendulum(&p);
    double s[4] = {0.8, -0.4, 0.0, 0.0};
    assert_int_equal(sim_artic_set_angle(a, 0, 0.8f, 0.0f), SIM_OK);
    assert_int_equal(sim_artic_set_angle(a, 1, -1.2f, 0.0f), SIM_OK);
    double worst = 0.0;
    for (int i = 0; i < 2000; ++i) {
        assert_int_equal(sim_artic_step(a, 1e-3f, vec(0.0f, -G, 0.0f)), SIM_OK);
        for (int k = 0; k < 100; ++k) {
            dp_rk4(&p, s, 1e-5);
        }
        float t1, w1, phi, wphi;
        sim_artic_get_angle(a, 0, &t1, &w1);
        sim_artic_get_angle(a, 1, &phi, &wphi);
        worst = fmax(worst, fmax(fabs(t1 - s[0]), fabs(t1 + phi - s[1])));
    }
    printf("double pendulum: worst angle difference from RK4 over 2 s: %.5f rad\n", worst);
    assert_true(worst < 0.02);
    sim_artic_destroy(a);
}

// The double pendulum released from (θ1, θ2) = (1.2, −0.6) rad, chaotic,
// 10 s at the server's 60 Hz with 4 substeps: its energy stays within 5 %
// of the energy it has to move with (E0 − the rest state's; 2.4 % is
// seen), and the mean over the last second is not above the first
// second's (no creep upwards). In one step per tick the error is 11 %
// (semi-implicit Euler's O(h), at ωh ≈ 0.2 for its fast mode).
static void test_double_pendulum_energy_bounded(void** state) {
    (void)state;
    const dp p = {
        .m1 = 1.5, .m2 = 0.8, .L1 = 0.9, .a1 = 0.4, .a2 = 0.35, .I1 = 0.1, .I2 = 0.05, .g = G};
    sim_artic* a = double_pendulum(&p);
    assert_int_equal(sim_artic_set_angle(a, 0, 1.2f, 0.0f), SIM_OK);
    assert_int_equal(sim_artic_set_angle(a, 1, -1.8f, 0.0f), SIM_OK);
    const sim_vec3 g = vec(0.0f, -G, 0.0f);
    const double e0 = sim_artic_energy(a, g);
    // The hand value: V = −(m1·a1 + m2·L1)·g·cos θ1 − m2·a2·g·cos θ2.
    const double v0 = -(p.m1 * p.a1 + p.m2 * p.L1) * p.g * cos(1.2) - p.m2 * p.a2 * p.g * cos(-0.6);
    assert_true(fabs(e0 - v0) < 1e-4 * fabs(v0));
    const double rest = -(p.m1 * p.a1 + p.m2 * p.L1) * p.g - p.m2 * p.a2 * p.g;
    double worst = 0.0, first = 0.0, last = 0.0;
    for (int i = 0; i < 600; ++i) {
        for (int k = 0; k < 4; ++k) {
            assert_int_equal(sim_artic_step(a, 1.0f / 240.0f, g), SIM_OK);
        }
        const double e = sim_artic_energy(a, g);
        worst = fmax(worst, fabs(e - e0));
        if (i < 60) {
            first += e / 60.0;
        } else if (i >= 540) {
            last += e / 60.0;
        }
    }
    printf("double pendulum energy at 60 Hz × 4 substeps: worst |ΔE| %.4f J of %.4f J; mean first "
           "s %.4f, "
           "last s %.4f\n",
           worst, e0 - rest, first, last);
    assert_true(worst < 0.05 * (e0 - rest));
    assert_true(last <= first + 0.002 * (e0 - rest));
    sim_artic_destroy(a);
}

// ---------------------------------------------------------------------------
// Free floating
// ---------------------------------------------------------------------------

// A free base with a hinge, a ball joint and a hinge below it, thrown
// spinning in zero gravity: linear and angular momentum stay what they
// were, to float round-off, over 10 s; the kinetic energy (nothing
// dissipates) stays within 3 % (the integrator's error: about −1.3 % here).
static void test_free_floating_conserves_momentum(void** state) {
    (void)state;
    sim_artic_link_def d[4];
    d[0] = sim_artic_link_def_default();
    d[0].joint = SIM_ARTIC_FREE;
    d[0].anchor = vec(0.0f, 1.0f, 0.0f);
    d[0].mass = 3.0f;
    d[0].inertia = vec(0.05f, 0.04f, 0.03f);
    d[1] = rod(0, vec(0.1f, -0.2f, 0.0f), 1.0f, 0.6f);
    d[2] = rod(1, vec(0.0f, -0.6f, 0.0f), 0.7f, 0.5f);
    d[2].joint = SIM_ARTIC_SPHERICAL;
    d[3] = rod(2, vec(0.0f, -0.5f, 0.0f), 0.4f, 0.4f);
    d[3].axis = vec(1.0f, 0.0f, 0.0f);
    sim_artic* a = NULL;
    assert_int_equal(sim_artic_create(d, 4, NULL, &a), SIM_OK);
    assert_int_equal(sim_artic_set_base(a, vec(0.0f, 1.0f, 0.0f), quat_axis(vec(1, 2, 3), 0.4f),
                                        vec(0.5f, 0.2f, -0.3f), vec(1.0f, -2.0f, 0.7f)),
                     SIM_OK);
    assert_int_equal(sim_artic_set_angle(a, 1, 0.3f, 3.0f), SIM_OK);
    assert_int_equal(
        sim_artic_set_rotation(a, 2, quat_axis(vec(0, 1, 1), 0.5f), vec(1.0f, 0.5f, -2.0f)),
        SIM_OK);
    assert_int_equal(sim_artic_set_angle(a, 3, -0.5f, -4.0f), SIM_OK);
    sim_vec3 p0, l0;
    sim_artic_momentum(a, &p0, &l0);
    const sim_vec3 zero = vec(0.0f, 0.0f, 0.0f);
    const double e0 = sim_artic_energy(a, zero);
    double worst_p = 0.0, worst_l = 0.0, worst_e = 0.0;
    for (int i = 0; i < 600; ++i) {
        assert_int_equal(sim_artic_step(a, 1.0f / 60.0f, zero), SIM_OK);
        sim_vec3 p, l;
        sim_artic_momentum(a, &p, &l);
        worst_p = fmax(worst_p, fmax(fabs(p.x - p0.x), fmax(fabs(p.y - p0.y), fabs(p.z - p0.z))));
        worst_l = fmax(worst_l, fmax(fabs(l.x - l0.x), fmax(fabs(l.y - l0.y), fabs(l.z - l0.z))));
        worst_e = fmax(worst_e, fabs(sim_artic_energy(a, zero) - e0));
    }
    const double pn = sqrt(p0.x * p0.x + p0.y * p0.y + p0.z * p0.z);
    // The origin's angular momentum holds c × p, of |c|·|p| ≈ 80 kg·m²/s by
    // the end (the tree drifts 10 m): round-off is relative to that.
    const double ln = sqrt(l0.x * l0.x + l0.y * l0.y + l0.z * l0.z) + 10.0 * pn;
    printf(
        "free floating, 10 s: |Δp| %.2e of %.3f kg·m/s, |ΔL| %.2e of %.3f kg·m²/s (|L| + |c||p|), "
        "|ΔE| %.2e of %.3f J\n",
        worst_p, pn, worst_l, ln, worst_e, e0);
    assert_true(worst_p < 1e-4 * pn);
    assert_true(worst_l < 1e-4 * ln);
    assert_true(worst_e < 0.03 * e0);
    sim_artic_destroy(a);
}

// Under gravity a free articulation's momentum grows by exactly M·g·t.
static void test_free_fall_momentum_is_gravity_impulse(void** state) {
    (void)state;
    sim_artic_link_def d[3];
    d[0] = sim_artic_link_def_default();
    d[0].joint = SIM_ARTIC_FREE;
    d[0].mass = 2.0f;
    d[1] = rod(0, vec(0.0f, -0.1f, 0.0f), 1.0f, 0.5f);
    d[2] = rod(1, vec(0.0f, -0.5f, 0.0f), 0.5f, 0.5f);
    sim_artic* a = NULL;
    assert_int_equal(sim_artic_create(d, 3, NULL, &a), SIM_OK);
    assert_int_equal(sim_artic_set_angle(a, 1, 1.0f, 2.0f), SIM_OK);
    sim_vec3 p0, l0;
    sim_artic_momentum(a, &p0, &l0);
    for (int i = 0; i < 120; ++i) {
        assert_int_equal(sim_artic_step(a, 1.0f / 60.0f, vec(0.0f, -G, 0.0f)), SIM_OK);
    }
    sim_vec3 p, l;
    sim_artic_momentum(a, &p, &l);
    // 3.5 kg × 9.81 m/s² × 2 s = 68.67 kg·m/s downwards, on top of p0.
    assert_true(fabs((p.y - p0.y) - (-3.5 * 9.81 * 2.0)) < 1e-3 * 68.67);
    assert_true(fabs(p.x - p0.x) < 1e-3 && fabs(p.z - p0.z) < 1e-3);
    sim_artic_destroy(a);
}

// ---------------------------------------------------------------------------
// Joints cannot come apart
// ---------------------------------------------------------------------------

// Every child's origin is where its parent's frame puts its anchor, to
// float round-off relative to the distance from the world origin, however
// violent the motion: a chain thrown at 100 m/s spinning at 50 rad/s with
// its joints whipping at 80 rad/s, 5 s at 60 Hz. (The maximal-coordinate
// solver holds its joints by constraints; issue 13 compares the two.)
static void test_joint_gap_is_zero_by_construction(void** state) {
    (void)state;
    enum { N = 12 };
    sim_artic_link_def d[N];
    d[0] = sim_artic_link_def_default();
    d[0].joint = SIM_ARTIC_FREE;
    for (int i = 1; i < N; ++i) {
        d[i] = rod(i - 1, vec(0.0f, i == 1 ? -0.1f : -0.3f, 0.0f), 0.5f, 0.3f);
        if (i % 3 == 0) {
            d[i].joint = SIM_ARTIC_SPHERICAL;
        }
    }
    sim_artic* a = NULL;
    assert_int_equal(sim_artic_create(d, N, NULL, &a), SIM_OK);
    assert_int_equal(sim_artic_set_base(a, vec(0, 2, 0), quat_axis(vec(0, 0, 1), 0.0f),
                                        vec(100.0f, 20.0f, 0.0f), vec(0.0f, 50.0f, 10.0f)),
                     SIM_OK);
    for (int i = 1; i < N; ++i) {
        if (i % 3 == 0) {
            sim_artic_set_rotation(a, (uint32_t)i, quat_axis(vec(1, 0, 0), 0.2f),
                                   vec(80.0f, 0, 30.0f));
        } else {
            sim_artic_set_angle(a, (uint32_t)i, 0.1f * (float)i, 80.0f);
        }
    }
    double worst = 0.0, far = 0.0;
    for (int s = 0; s < 300; ++s) {
        assert_int_equal(sim_artic_step(a, 1.0f / 60.0f, vec(0.0f, -G, 0.0f)), SIM_OK);
        for (uint32_t i = 1; i < N; ++i) {
            sim_vec3 pp, pc;
            sim_quat qp, qc;
            sim_artic_link_pose(a, (uint32_t)d[i].parent, &pp, &qp);
            sim_artic_link_pose(a, i, &pc, &qc);
            // anchor rotated by the parent's rotation: q v q*.
            const sim_vec3 v = d[i].anchor;
            const float tx = 2.0f * (qp.y * v.z - qp.z * v.y);
            const float ty = 2.0f * (qp.z * v.x - qp.x * v.z);
            const float tz = 2.0f * (qp.x * v.y - qp.y * v.x);
            const sim_vec3 w = vec(v.x + qp.w * tx + (qp.y * tz - qp.z * ty),
                                   v.y + qp.w * ty + (qp.z * tx - qp.x * tz),
                                   v.z + qp.w * tz + (qp.x * ty - qp.y * tx));
            const double gap = sqrt(pow(pp.x + w.x - pc.x, 2) + pow(pp.y + w.y - pc.y, 2) +
                                    pow(pp.z + w.z - pc.z, 2));
            worst = fmax(worst, gap);
            far = fmax(far, sqrt((double)pc.x * pc.x + (double)pc.y * pc.y + (double)pc.z * pc.z));
        }
    }
    printf("joint gap: worst %.2e m at up to %.1f m from the origin\n", worst, far);
    assert_true(far > 400.0);               // it really went far and fast
    assert_true(worst < 1e-6 * far + 1e-6); // float round-off at that distance
    sim_artic_destroy(a);
}

// ---------------------------------------------------------------------------
// Drives
// ---------------------------------------------------------------------------

// Seed 004's worked example: the neck at θ = 20°, its target 45°, at rest,
// kp = 8: τ = 8·(45° − 20°) = 200 "°-scaled units", i.e. 8 N·m/rad ×
// 0.43633 rad = 3.4907 N·m. Through the reduced solver's (implicit) drive:
// its torque over a 0.1 ms step differs from the explicit one only by
// kp·h·θ̇', and the joint's acceleration is τ / I about the hinge.
static void test_seed_pd_example(void** state) {
    (void)state;
    sim_artic_link_def d = rod(-1, vec(0.0f, 0.0f, 0.0f), 1.0f, 0.2f); // a head on a neck
    sim_artic* a = NULL;
    assert_int_equal(sim_artic_create(&d, 1, NULL, &a), SIM_OK);
    const float deg = (float)(PI / 180.0);
    assert_int_equal(sim_artic_set_angle(a, 0, 20.0f * deg, 0.0f), SIM_OK);
    assert_int_equal(sim_artic_set_drive(a, 0, 8.0f, 0.0f, 45.0f * deg, (sim_quat){0, 0, 0, 1}),
                     SIM_OK);
    const float h = 1e-4f;
    assert_int_equal(sim_artic_step(a, h, vec(0.0f, 0.0f, 0.0f)), SIM_OK);
    float tau = 0.0f, angle, rate;
    assert_int_equal(sim_artic_drive_torque(a, 0, &tau), SIM_OK);
    assert_int_equal(sim_artic_get_angle(a, 0, &angle, &rate), SIM_OK);
    printf("seed 004 PD example: τ = %.4f N·m = %.2f in °-scaled units (expected 200)\n", tau,
           tau / deg);
    assert_true(fabsf(tau / deg - 200.0f) < 0.05f);
    // I about the hinge: m·L²/12 + m·(L/2)² = m·L²/3 = 0.013333 kg·m².
    const float I = 1.0f * 0.2f * 0.2f / 3.0f;
    assert_true(fabsf(rate / h - 3.4907f / I) < 1e-3f * (3.4907f / I));
    sim_artic_destroy(a);
}

// A 1 kg-link arm (three 0.5 m hinges about +Z) holding 100 kg at its tip,
// straight out against gravity: the load's moment at the shoulder is
// 100·9.81·1.5 = 1471.5 N·m. With kp = 10^6 N·m/rad the static error is
// at most about 1471.5/10^6 = 0.0015 rad per joint, far inside 1°; and it
// must be stable while it gets there (maximal-coordinate drives at this
// mass ratio sag by degrees, issue 13).
static void test_light_arm_holds_heavy_payload(void** state) {
    (void)state;
    sim_artic_link_def d[4];
    for (int i = 0; i < 3; ++i) {
        d[i] = rod(i - 1, vec(i == 0 ? 0.0f : 0.5f, 0.0f, 0.0f), 1.0f, 0.5f);
        d[i].com = vec(0.25f, 0.0f, 0.0f); // along +X: the arm points sideways
        d[i].inertia = vec(1e-3f, 0.25f / 12.0f, 0.25f / 12.0f);
    }
    d[3] = sim_artic_link_def_default();
    d[3].parent = 2;
    d[3].joint = SIM_ARTIC_FIXED;
    d[3].anchor = vec(0.5f, 0.0f, 0.0f);
    d[3].mass = 100.0f;
    d[3].inertia = vec(0.4f, 0.4f, 0.4f); // a 10 cm ball of 100 kg: 2/5·m·r²
    sim_artic* a = NULL;
    assert_int_equal(sim_artic_create(d, 4, NULL, &a), SIM_OK);
    for (uint32_t i = 0; i < 3; ++i) {
        assert_int_equal(sim_artic_set_drive(a, i, 1e6f, 2e4f, 0.0f, (sim_quat){0, 0, 0, 1}),
                         SIM_OK);
    }
    float worst = 0.0f;
    for (int s = 0; s < 300; ++s) {
        assert_int_equal(sim_artic_step(a, 1.0f / 60.0f, vec(0.0f, -G, 0.0f)), SIM_OK);
        if (s >= 120) { // after 2 s
            for (uint32_t i = 0; i < 3; ++i) {
                float angle, rate;
                sim_artic_get_angle(a, i, &angle, &rate);
                worst = fmaxf(worst, fabsf(angle));
            }
        }
    }
    sim_vec3 tip;
    sim_quat q;
    sim_artic_link_pose(a, 3, &tip, &q);
    float shoulder = 0.0f;
    sim_artic_drive_torque(a, 0, &shoulder);
    printf("arm with 100 kg: worst joint error %.4f° after 2 s; tip at (%.4f, %.4f); shoulder "
           "torque %.1f N·m (the load's moment 1471.5 + the links' 22.1)\n",
           worst * 180.0f / (float)PI, tip.x, tip.y, shoulder);
    assert_true(worst * 180.0f / (float)PI < 1.0f);
    assert_true(fabsf(tip.x - 1.5f) < 0.01f && fabsf(tip.y) < 0.02f);
    // Statics: the shoulder holds the payload's and the links' moments,
    // 100·9.81·1.5 + 9.81·(0.25 + 0.75 + 1.25) = 1493.6 N·m.
    assert_true(fabsf(shoulder - 1493.6f) < 0.01f * 1493.6f);
    sim_artic_destroy(a);
}

// ---------------------------------------------------------------------------
// Hinge limits
// ---------------------------------------------------------------------------

// A pendulum thrown at 10 rad/s toward a stop at 0.5 rad: it reaches the
// stop and never passes it (an inelastic stop: the angle lands on the
// bound), then gravity swings it back; 5 s at 60 Hz.
static void test_hinge_limit_is_never_passed(void** state) {
    (void)state;
    sim_artic_link_def d = rod(-1, vec(0.0f, 0.0f, 0.0f), 1.0f, 1.0f);
    sim_artic* a = NULL;
    assert_int_equal(sim_artic_create(&d, 1, NULL, &a), SIM_OK);
    assert_int_equal(sim_artic_set_limits(a, 0, -0.5f, 0.5f), SIM_OK);
    assert_int_equal(sim_artic_set_angle(a, 0, 0.3f, 10.0f), SIM_OK);
    float hi = -1.0f, lo = 1.0f, angle, rate;
    bool pushed = false;
    for (int s = 0; s < 300; ++s) {
        assert_int_equal(sim_artic_step(a, 1.0f / 60.0f, vec(0.0f, -G, 0.0f)), SIM_OK);
        sim_artic_get_angle(a, 0, &angle, &rate);
        hi = fmaxf(hi, angle);
        lo = fminf(lo, angle);
        float imp = 0.0f;
        sim_artic_limit_impulse(a, 0, &imp);
        pushed = pushed || imp < 0.0f; // the upper stop pushes back (negative)
    }
    printf("hinge limit [-0.5, 0.5]: angle within [%.7f, %.7f]\n", lo, hi);
    assert_true(pushed);
    assert_true(hi <= 0.5f + 1e-6f && hi >= 0.5f - 1e-6f); // on the stop, not past
    assert_true(lo >= -0.5f - 1e-6f);
    sim_artic_destroy(a);
}

// Eight limited hinges in a chain on a free base, thrown spinning in zero
// gravity (its joints at ±12 rad/s, 4.2 kJ) so the limits push on each
// other, 5 s at 60 Hz with 4 substeps: every angle stays within its range
// to float round-off, and the limits' impulses, being internal, leave the
// momentum as it was (to round-off: of its 200 kg·m/s, and of c × p about
// the world origin).
static void test_coupled_limits_hold_and_keep_momentum(void** state) {
    (void)state;
    enum { N = 9 };
    sim_artic_link_def d[N];
    d[0] = sim_artic_link_def_default();
    d[0].joint = SIM_ARTIC_FREE;
    d[0].mass = 2.0f;
    d[0].inertia = vec(0.02f, 0.02f, 0.02f);
    for (int i = 1; i < N; ++i) {
        d[i] = rod(i - 1, vec(0.0f, i == 1 ? -0.1f : -0.3f, 0.0f), 0.5f, 0.3f);
        d[i].axis = i % 2 ? vec(0.0f, 0.0f, 1.0f) : vec(1.0f, 0.0f, 0.0f);
    }
    sim_artic* a = NULL;
    assert_int_equal(sim_artic_create(d, N, NULL, &a), SIM_OK);
    assert_int_equal(sim_artic_set_base(a, vec(0, 0, 0), (sim_quat){0, 0, 0, 1}, vec(1.0f, 0, 0),
                                        vec(0.0f, 4.0f, 2.0f)),
                     SIM_OK);
    for (uint32_t i = 1; i < N; ++i) {
        assert_int_equal(sim_artic_set_limits(a, i, -0.4f, 0.3f), SIM_OK);
        assert_int_equal(sim_artic_set_angle(a, i, 0.0f, i % 2 ? 12.0f : -12.0f), SIM_OK);
    }
    sim_vec3 p0, l0;
    sim_artic_momentum(a, &p0, &l0);
    float worst = 0.0f;
    for (int s = 0; s < 1200; ++s) { // 5 s at 60 Hz × 4 substeps
        assert_int_equal(sim_artic_step(a, 1.0f / 240.0f, vec(0, 0, 0)), SIM_OK);
        for (uint32_t i = 1; i < N; ++i) {
            float angle, rate;
            sim_artic_get_angle(a, i, &angle, &rate);
            worst = fmaxf(worst, fmaxf(angle - 0.3f, -0.4f - angle));
        }
    }
    sim_vec3 p, l;
    sim_artic_momentum(a, &p, &l);
    printf("coupled limits: worst past a bound %.2e rad; |Δp| %.2e, |ΔL| %.2e\n", worst,
           fabs(p.x - p0.x) + fabs(p.y - p0.y) + fabs(p.z - p0.z),
           fabs(l.x - l0.x) + fabs(l.y - l0.y) + fabs(l.z - l0.z));
    assert_true(worst < 1e-5f);
    assert_true(fabs(p.x - p0.x) + fabs(p.y - p0.y) + fabs(p.z - p0.z) < 1e-4 * 200.0);
    // About the world origin L holds c × p: the tree ends ~170 m away.
    sim_vec3 base;
    sim_quat q;
    sim_artic_link_pose(a, 0, &base, &q);
    const double lever =
        sqrt((double)base.x * base.x + (double)base.y * base.y + (double)base.z * base.z) *
        sqrt((double)p.x * p.x + (double)p.y * p.y + (double)p.z * p.z);
    assert_true(fabs(l.x - l0.x) + fabs(l.y - l0.y) + fabs(l.z - l0.z) < 1e-4 * lever);
    // Bad ranges change nothing.
    assert_int_equal(sim_artic_set_limits(a, 1, 0.5f, 0.4f), SIM_E_OUT_OF_RANGE);
    assert_int_equal(sim_artic_set_limits(a, 1, NAN, 0.4f), SIM_E_NOT_FINITE);
    assert_int_equal(sim_artic_set_limits(a, 0, -1.0f, 1.0f), SIM_E_INVALID_ARG);
    assert_int_equal(sim_artic_set_limits(a, 1, -INFINITY, INFINITY), SIM_OK);
    sim_artic_destroy(a);
}

// A ball-jointed rod thrown spinning (twist included) under gravity, its
// cone 0.5 × 0.3 rad and twist ±0.4 rad, 5 s at 60 Hz × 4 substeps: the
// twist never passes its range (to round-off), the swing stays within the
// ellipse but for its one-step curvature (bound: 3 % of the cone, 2 % is
// seen); the
// same with q and −q as the start.
static void test_ball_cone_and_twist_hold(void** state) {
    (void)state;
    float worst_twist = 0.0f, worst_swing = 0.0f;
    sim_vec3 end[2];
    for (int flip = 0; flip < 2; ++flip) {
        sim_artic_link_def d = rod(-1, vec(0.0f, 0.0f, 0.0f), 1.0f, 0.6f);
        d.joint = SIM_ARTIC_SPHERICAL;
        sim_artic* a = NULL;
        assert_int_equal(sim_artic_create(&d, 1, NULL, &a), SIM_OK);
        assert_int_equal(sim_artic_set_cone(a, 0, vec(0.0f, -1.0f, 0.0f), vec(1.0f, 0.0f, 0.0f),
                                            0.5f, 0.3f, -0.4f, 0.4f),
                         SIM_OK);
        sim_quat q = quat_axis(vec(1.0f, 0.2f, 0.3f), 0.2f);
        if (flip) {
            q = (sim_quat){-q.x, -q.y, -q.z, -q.w};
        }
        assert_int_equal(sim_artic_set_rotation(a, 0, q, vec(5.0f, 3.0f, 8.0f)), SIM_OK);
        bool pushed = false;
        for (int s = 0; s < 1200; ++s) {
            assert_int_equal(sim_artic_step(a, 1.0f / 240.0f, vec(0.0f, -G, 0.0f)), SIM_OK);
            float twist, swing, imp;
            assert_int_equal(sim_artic_cone_angles(a, 0, &twist, &swing), SIM_OK);
            worst_twist = fmaxf(worst_twist, fmaxf(twist - 0.4f, -0.4f - twist));
            worst_swing = fmaxf(worst_swing, swing - 1.0f);
            sim_artic_limit_impulse(a, 0, &imp);
            pushed = pushed || imp != 0.0f;
        }
        assert_true(pushed);
        sim_vec3 v, w;
        sim_artic_link_motion(a, 0, &end[flip], &v, &w);
        sim_artic_destroy(a);
    }
    const float apart =
        fabsf(end[0].x - end[1].x) + fabsf(end[0].y - end[1].y) + fabsf(end[0].z - end[1].z);
    printf("ball joint: worst past the twist range %.2e rad, past the cone %.2f %%; q and -q end "
           "%.1e m apart\n",
           worst_twist, 100.0f * worst_swing, apart);
    assert_true(worst_twist < 1e-5f);
    assert_true(worst_swing < 0.03f);
    assert_true(apart < 1e-4f);
}

// ---------------------------------------------------------------------------
// Contacts
// ---------------------------------------------------------------------------

// A free capsule (0.6 m between its ends along X, radius 0.1 m, 2 kg).
static sim_artic* capsule_body(sim_vec3 at) {
    sim_artic_link_def d = sim_artic_link_def_default();
    d.joint = SIM_ARTIC_FREE;
    d.anchor = at;
    d.mass = 2.0f;
    d.inertia = vec(0.01f, 0.07f, 0.07f);
    d.capsule_a = vec(-0.3f, 0.0f, 0.0f);
    d.capsule_b = vec(0.3f, 0.0f, 0.0f);
    d.radius = 0.1f;
    sim_artic* a = NULL;
    assert_int_equal(sim_artic_create(&d, 1, NULL, &a), SIM_OK);
    return a;
}

// Dropped flat from 1 m onto the ground, 3 s at 60 Hz × 4 substeps: it
// comes to rest lying on it (its axis at y = radius, 0.1 m, within 1 cm),
// never more than 2 cm into it.
static void test_capsule_lands_and_rests(void** state) {
    (void)state;
    sim_artic* a = capsule_body(vec(0.0f, 1.0f, 0.0f));
    assert_int_equal(sim_artic_set_env(a, true, NULL, 0, 0.6f), SIM_OK);
    float lowest = 1.0f;
    for (int s = 0; s < 720; ++s) {
        assert_int_equal(sim_artic_step(a, 1.0f / 240.0f, vec(0.0f, -G, 0.0f)), SIM_OK);
        sim_vec3 p;
        sim_quat q;
        sim_artic_link_pose(a, 0, &p, &q);
        lowest = fminf(lowest, p.y - 0.1f);
    }
    sim_vec3 c, v, w;
    sim_artic_link_motion(a, 0, &c, &v, &w);
    printf("capsule on the ground: axis at y = %.4f m, speed %.4f m/s, deepest %.4f m; %u "
           "contacts\n",
           c.y, sqrtf(v.x * v.x + v.y * v.y + v.z * v.z), -lowest, sim_artic_contact_count(a));
    assert_true(fabsf(c.y - 0.1f) < 0.01f);
    assert_true(sqrtf(v.x * v.x + v.y * v.y + v.z * v.z) < 0.01f);
    assert_true(lowest > -0.02f);
    assert_int_equal(sim_artic_contact_count(a), 2);
    sim_artic_destroy(a);
}

// Lying on the ground and pushed along its axis at 3 m/s with friction
// 0.5: it slides to a stop after v²/(2·μ·g) = 9 / 9.81 = 0.917 m (Coulomb
// friction decelerates it at μ·g), within 5 %.
static void test_capsule_slides_the_coulomb_distance(void** state) {
    (void)state;
    sim_artic* a = capsule_body(vec(0.0f, 0.1f, 0.0f));
    assert_int_equal(sim_artic_set_env(a, true, NULL, 0, 0.5f), SIM_OK);
    assert_int_equal(sim_artic_set_base(a, vec(0.0f, 0.1f, 0.0f), (sim_quat){0, 0, 0, 1},
                                        vec(3.0f, 0.0f, 0.0f), vec(0, 0, 0)),
                     SIM_OK);
    for (int s = 0; s < 480; ++s) {
        assert_int_equal(sim_artic_step(a, 1.0f / 240.0f, vec(0.0f, -G, 0.0f)), SIM_OK);
    }
    sim_vec3 c, v, w;
    sim_artic_link_motion(a, 0, &c, &v, &w);
    const float expected = 9.0f / (2.0f * 0.5f * G);
    printf("sliding capsule: stopped after %.4f m (Coulomb: %.4f m), speed %.4f m/s\n", c.x,
           expected, v.x);
    assert_true(fabsf(c.x - expected) < 0.05f * expected);
    assert_true(fabsf(v.x) < 0.01f);
    sim_artic_destroy(a);
}

// A humanoid-shaped articulation (free pelvis, ball-jointed spine, neck,
// shoulders and hips with cones, hinged elbows and knees with ranges, every
// link a capsule) dropped 1.5 m, tumbling, onto three stairs: after 6 s it
// is at rest (every link's centre slower than 0.05 m/s), nothing is
// non-finite, no capsule is more than 3 cm into the ground or a stair, and
// its joints are where its parents put them (by construction).
static void test_humanoid_articulation_rests_on_stairs(void** state) {
    (void)state;
    enum { N = 11 };
    sim_artic_link_def d[N];
    struct {
        int parent;
        sim_artic_joint joint;
        sim_vec3 anchor, tip;
        float mass, radius;
    } spec[N] = {
        {-1, SIM_ARTIC_FREE, {0.0f, 1.0f, 0.0f}, {0.0f, 0.15f, 0.0f}, 10.0f, 0.12f},      // pelvis
        {0, SIM_ARTIC_SPHERICAL, {0.0f, 0.15f, 0.0f}, {0.0f, 0.35f, 0.0f}, 15.0f, 0.13f}, // chest
        {1, SIM_ARTIC_SPHERICAL, {0.0f, 0.4f, 0.0f}, {0.0f, 0.2f, 0.0f}, 5.0f, 0.1f},     // head
        {1, SIM_ARTIC_SPHERICAL, {0.2f, 0.3f, 0.0f}, {0.28f, 0.0f, 0.0f}, 2.0f, 0.05f},   // l arm
        {3, SIM_ARTIC_REVOLUTE, {0.28f, 0.0f, 0.0f}, {0.26f, 0.0f, 0.0f}, 1.5f, 0.04f},   // l fore
        {1, SIM_ARTIC_SPHERICAL, {-0.2f, 0.3f, 0.0f}, {-0.28f, 0.0f, 0.0f}, 2.0f, 0.05f},
        {5, SIM_ARTIC_REVOLUTE, {-0.28f, 0.0f, 0.0f}, {-0.26f, 0.0f, 0.0f}, 1.5f, 0.04f},
        {0, SIM_ARTIC_SPHERICAL, {0.1f, -0.05f, 0.0f}, {0.0f, -0.42f, 0.0f}, 7.0f, 0.07f}, // l
                                                                                           // thigh
        {7, SIM_ARTIC_REVOLUTE, {0.0f, -0.42f, 0.0f}, {0.0f, -0.42f, 0.0f}, 4.0f, 0.05f},  // l shin
        {0, SIM_ARTIC_SPHERICAL, {-0.1f, -0.05f, 0.0f}, {0.0f, -0.42f, 0.0f}, 7.0f, 0.07f},
        {9, SIM_ARTIC_REVOLUTE, {0.0f, -0.42f, 0.0f}, {0.0f, -0.42f, 0.0f}, 4.0f, 0.05f},
    };
    for (int i = 0; i < N; ++i) {
        d[i] = sim_artic_link_def_default();
        d[i].parent = spec[i].parent;
        d[i].joint = spec[i].joint;
        d[i].anchor = spec[i].anchor;
        d[i].axis = i == 4 || i == 6 ? vec(0.0f, 1.0f, 0.0f) : vec(1.0f, 0.0f, 0.0f);
        d[i].mass = spec[i].mass;
        d[i].com = vec(0.5f * spec[i].tip.x, 0.5f * spec[i].tip.y, 0.5f * spec[i].tip.z);
        const float L2 = spec[i].tip.x * spec[i].tip.x + spec[i].tip.y * spec[i].tip.y;
        const float r2 = spec[i].radius * spec[i].radius;
        const float across = spec[i].mass * (L2 / 12.0f + r2 / 4.0f);
        const float along = 0.5f * spec[i].mass * r2;
        d[i].inertia =
            fabsf(spec[i].tip.x) > 0.0f ? vec(along, across, across) : vec(across, along, across);
        d[i].capsule_b = spec[i].tip;
        d[i].radius = spec[i].radius;
        d[i].damping = 0.5f;
    }
    sim_artic* a = NULL;
    assert_int_equal(sim_artic_create(d, N, NULL, &a), SIM_OK);
    for (uint32_t i = 1; i < N; ++i) {
        if (d[i].joint == SIM_ARTIC_REVOLUTE) {
            assert_int_equal(sim_artic_set_limits(a, i, i == 8 || i == 10 ? -2.4f : 0.0f,
                                                  i == 8 || i == 10 ? 0.0f : 2.4f),
                             SIM_OK);
        } else {
            const sim_vec3 bone =
                fabsf(spec[i].tip.x) > 0.0f ? vec(spec[i].tip.x, 0, 0) : vec(0, spec[i].tip.y, 0);
            assert_int_equal(
                sim_artic_set_cone(a, i, bone, vec(0.0f, 0.0f, 1.0f), 0.8f, 0.6f, -0.5f, 0.5f),
                SIM_OK);
        }
    }
    const sim_box stairs[3] = {{{1.0f, 0.15f, 0.0f}, {0.25f, 0.15f, 1.0f}},
                               {{1.5f, 0.3f, 0.0f}, {0.25f, 0.3f, 1.0f}},
                               {{2.0f, 0.45f, 0.0f}, {0.25f, 0.45f, 1.0f}}};
    assert_int_equal(sim_artic_set_env(a, true, stairs, 3, 0.6f), SIM_OK);
    assert_int_equal(sim_artic_set_base(a, vec(1.4f, 2.5f, 0.0f), quat_axis(vec(0, 0, 1), 1.2f),
                                        vec(-1.0f, 0.0f, 0.5f), vec(2.0f, 1.0f, 3.0f)),
                     SIM_OK);
    float deepest = 0.0f, fastest = 0.0f;
    for (int s = 0; s < 1440; ++s) {
        assert_int_equal(sim_artic_step(a, 1.0f / 240.0f, vec(0.0f, -G, 0.0f)), SIM_OK);
        for (uint32_t i = 0; i < N; ++i) {
            sim_vec3 o, c, v, w;
            sim_quat q;
            sim_artic_link_pose(a, i, &o, &q);
            sim_artic_link_motion(a, i, &c, &v, &w);
            assert_true(isfinite(c.x) && isfinite(c.y) && isfinite(c.z) && isfinite(v.x));
            // Depth of the capsule's ends into the ground.
            deepest = fmaxf(deepest, spec[i].radius - o.y);
            if (s >= 1400) {
                fastest = fmaxf(fastest, sqrtf(v.x * v.x + v.y * v.y + v.z * v.z));
            }
        }
    }
    printf("humanoid articulation on stairs: deepest into the ground %.4f m; fastest link in the "
           "last 1/6 s %.4f m/s\n",
           deepest, fastest);
    assert_true(deepest < 0.03f);
    assert_true(fastest < 0.05f);
    sim_artic_destroy(a);
}

// ---------------------------------------------------------------------------
// Ball joints
// ---------------------------------------------------------------------------

// q and −q are one rotation: a ball-jointed pendulum set with either swings
// the same, to round-off.
static void test_ball_joint_q_and_minus_q_agree(void** state) {
    (void)state;
    sim_artic_link_def d = rod(-1, vec(0.0f, 0.0f, 0.0f), 1.0f, 1.0f);
    d.joint = SIM_ARTIC_SPHERICAL;
    sim_artic *a = NULL, *b = NULL;
    assert_int_equal(sim_artic_create(&d, 1, NULL, &a), SIM_OK);
    assert_int_equal(sim_artic_create(&d, 1, NULL, &b), SIM_OK);
    sim_quat q = quat_axis(vec(1.0f, 0.0f, 0.5f), 2.5f);
    sim_quat mq = {-q.x, -q.y, -q.z, -q.w};
    assert_int_equal(sim_artic_set_rotation(a, 0, q, vec(0.0f, 1.0f, 0.0f)), SIM_OK);
    assert_int_equal(sim_artic_set_rotation(b, 0, mq, vec(0.0f, 1.0f, 0.0f)), SIM_OK);
    for (int s = 0; s < 300; ++s) {
        sim_artic_step(a, 1.0f / 60.0f, vec(0.0f, -G, 0.0f));
        sim_artic_step(b, 1.0f / 60.0f, vec(0.0f, -G, 0.0f));
    }
    sim_vec3 ca, cb, va, vb, wa, wb;
    sim_artic_link_motion(a, 0, &ca, &va, &wa);
    sim_artic_link_motion(b, 0, &cb, &vb, &wb);
    assert_true(fabsf(ca.x - cb.x) < 1e-4f && fabsf(ca.y - cb.y) < 1e-4f &&
                fabsf(ca.z - cb.z) < 1e-4f);
    // A spherical pendulum keeps |com| = L/2 and its energy.
    assert_true(fabsf(sqrtf(ca.x * ca.x + ca.y * ca.y + ca.z * ca.z) - 0.5f) < 1e-5f);
    sim_artic_destroy(a);
    sim_artic_destroy(b);
}

// A free ball link (10 cm, 1 kg) dropped from 1.1 m onto the ground hits it
// at v = √(2·g·1.0) = 4.429 m/s; with restitution 0.5 it leaves at half
// that, 2.215 m/s, and rises to e²·1.0 = 0.25 m above the contact height.
static void test_restitution_bounces_by_newtons_law(void** state) {
    (void)state;
    sim_artic_link_def d = sim_artic_link_def_default();
    d.joint = SIM_ARTIC_FREE;
    d.mass = 1.0f;
    d.inertia = vec(0.004f, 0.004f, 0.004f);
    d.radius = 0.1f;
    sim_artic* a = NULL;
    assert_int_equal(sim_artic_create(&d, 1, NULL, &a), SIM_OK);
    assert_int_equal(sim_artic_set_env(a, true, NULL, 0, 0.0f), SIM_OK);
    assert_int_equal(sim_artic_set_restitution(a, 0.5f), SIM_OK);
    assert_int_equal(sim_artic_set_restitution(a, 1.5f), SIM_E_OUT_OF_RANGE);
    assert_int_equal(sim_artic_set_restitution(a, NAN), SIM_E_NOT_FINITE);
    assert_int_equal(sim_artic_set_base(a, vec(0.0f, 1.1f, 0.0f), quat_axis(vec(0, 1, 0), 0.0f),
                                        vec(0, 0, 0), vec(0, 0, 0)),
                     SIM_OK);
    const float h = 1.0f / 960.0f;
    float v_in = 0.0f, v_out = 0.0f, top = 0.0f;
    bool bounced = false;
    for (int s = 0; s < 2000; ++s) {
        sim_vec3 c0, v0, w0, c1, v1, w1;
        sim_artic_link_motion(a, 0, &c0, &v0, &w0);
        assert_int_equal(sim_artic_step(a, h, vec(0.0f, -G, 0.0f)), SIM_OK);
        sim_artic_link_motion(a, 0, &c1, &v1, &w1);
        if (!bounced && v0.y < 0.0f && v1.y > 0.0f) {
            bounced = true;
            v_in = -v0.y;
            v_out = v1.y;
        }
        if (bounced) {
            top = fmaxf(top, c1.y);
        }
    }
    printf("bounce: in %.3f m/s (4.429), out %.3f m/s (e = 0.5: %.3f), top %.3f m (0.35)\n", v_in,
           v_out, 0.5f * v_in, top);
    assert_true(bounced);
    assert_true(fabsf(v_in - 4.429f) < 0.05f);
    assert_true(fabsf(v_out - 0.5f * v_in) < 0.03f * v_in);
    assert_true(fabsf(top - 0.35f) < 0.02f);
    sim_artic_destroy(a);
}

// ---------------------------------------------------------------------------
// Impulses, partners, state
// ---------------------------------------------------------------------------

// A free body of mass 2 kg and principal moments (0.1, 0.2, 0.3) kg·m² hit
// by p = (0, 0, 4) N·s at r = (1, 0, 0) m from its centre: Δv = p/m =
// (0, 0, 2) m/s and Δω = I⁻¹(r × p) = I⁻¹(0, −4, 0) = (0, −20, 0) rad/s.
static void test_impulse_on_a_free_body(void** state) {
    (void)state;
    sim_artic_link_def d = sim_artic_link_def_default();
    d.joint = SIM_ARTIC_FREE;
    d.mass = 2.0f;
    d.inertia = vec(0.1f, 0.2f, 0.3f);
    sim_artic* a = NULL;
    assert_int_equal(sim_artic_create(&d, 1, NULL, &a), SIM_OK);
    assert_int_equal(sim_artic_apply_impulse(a, 0, vec(1.0f, 0.0f, 0.0f), vec(0.0f, 0.0f, 4.0f)),
                     SIM_OK);
    sim_vec3 c, v, w;
    sim_artic_link_motion(a, 0, &c, &v, &w);
    assert_true(fabsf(v.x) < 1e-5f && fabsf(v.y) < 1e-5f && fabsf(v.z - 2.0f) < 1e-5f);
    assert_true(fabsf(w.x) < 1e-4f && fabsf(w.y + 20.0f) < 1e-4f && fabsf(w.z) < 1e-4f);
    // The mass the point (1, 0, 0) seems to have along +Z: 1/m_eff = 1/m +
    // (r × d)·I⁻¹(r × d) = 0.5 + 1/0.2 = 5.5, m_eff = 0.1818 kg.
    float m_eff = 0.0f;
    assert_int_equal(sim_artic_point_mass(a, 0, vec(1, 0, 0), vec(0, 0, 3), &m_eff), SIM_OK);
    assert_true(fabsf(m_eff - 1.0f / 5.5f) < 1e-5f);
    assert_int_equal(sim_artic_point_mass(a, 0, vec(1, 0, 0), vec(0, 0, 0), &m_eff),
                     SIM_E_OUT_OF_RANGE);
    assert_int_equal(sim_artic_apply_impulse(a, 1, vec(0, 0, 0), vec(0, 0, 1)), SIM_E_BAD_INDEX);
    assert_int_equal(sim_artic_apply_impulse(a, 0, vec(NAN, 0, 0), vec(0, 0, 1)), SIM_E_NOT_FINITE);
    assert_int_equal(sim_artic_apply_impulse(a, 0, vec(2e4f, 0, 0), vec(0, 0, 1)),
                     SIM_E_OUT_OF_RANGE);
    sim_artic_destroy(a);
}

// A 1 kg ball at 10 m/s hits a free 3 kg rod in its middle, through its
// centre of mass, in zero gravity. The contact is inelastic, so the two
// leave together: v' = m_ball·v / (m_ball + m_rod) = 2.5 m/s, the rod not
// turning; linear and angular momentum of the two together are kept.
static void test_ball_partner_hits_a_free_rod(void** state) {
    (void)state;
    sim_artic_link_def d = sim_artic_link_def_default();
    d.joint = SIM_ARTIC_FREE;
    d.mass = 3.0f;
    d.inertia = vec(0.5f * 3.0f * 0.0025f, 0.25f, 0.25f);
    d.capsule_a = vec(-0.5f, 0.0f, 0.0f);
    d.capsule_b = vec(0.5f, 0.0f, 0.0f);
    d.radius = 0.05f;
    sim_artic* a = NULL;
    assert_int_equal(sim_artic_create(&d, 1, NULL, &a), SIM_OK);
    sim_artic_partner ball;
    memset(&ball, 0, sizeof ball);
    ball.a = ball.b = ball.com = vec(0.0f, 0.5f, 0.0f);
    ball.radius = 0.1f;
    ball.v = vec(0.0f, -10.0f, 0.0f);
    ball.inv_mass = 1.0f;
    ball.rotation = quat_axis(vec(0, 1, 0), 0.0f);
    const float Ib = 0.4f * 1.0f * 0.01f;
    ball.inv_inertia = vec(1.0f / Ib, 1.0f / Ib, 1.0f / Ib);
    const float h = 1.0f / 240.0f;
    for (int s = 0; s < 240; ++s) {
        assert_int_equal(sim_artic_step_among(a, h, vec(0, 0, 0), &ball, 1), SIM_OK);
        ball.com = v3_add_(ball.com, ball.v, h);
        ball.a = ball.b = ball.com;
        sim_vec3 p, L;
        sim_artic_momentum(a, &p, &L);
        // Momentum of the two: the rod's plus the ball's (its spin is zero).
        assert_true(fabsf(p.y + ball.v.y * 1.0f + 10.0f) < 1e-3f);
        assert_true(fabsf(p.x + ball.v.x) < 1e-3f && fabsf(p.z + ball.v.z) < 1e-3f);
    }
    sim_vec3 c, v, w;
    sim_artic_link_motion(a, 0, &c, &v, &w);
    printf("ball on free rod: ball %.4f m/s, rod %.4f m/s (2.5 expected), rod spin %.2e rad/s\n",
           ball.v.y, v.y, sqrtf(w.x * w.x + w.y * w.y + w.z * w.z));
    assert_true(fabsf(ball.v.y + 2.5f) < 0.05f);
    assert_true(fabsf(v.y + 2.5f) < 0.05f);
    assert_true(sqrtf(w.x * w.x + w.y * w.y + w.z * w.z) < 1e-2f);
    // Bad partners change nothing.
    sim_artic_partner bad = ball;
    bad.radius = 0.0f;
    assert_int_equal(sim_artic_step_among(a, h, vec(0, 0, 0), &bad, 1), SIM_E_OUT_OF_RANGE);
    bad = ball;
    bad.v.x = NAN;
    assert_int_equal(sim_artic_step_among(a, h, vec(0, 0, 0), &bad, 1), SIM_E_NOT_FINITE);
    assert_int_equal(sim_artic_step_among(a, h, vec(0, 0, 0), NULL, 1), SIM_E_INVALID_ARG);
    assert_int_equal(sim_artic_step_among(a, h, vec(0, 0, 0), &ball, SIM_ARTIC_MAX_PARTNERS + 1),
                     SIM_E_INVALID_ARG);
    sim_vec3 c2, v2, w2;
    sim_artic_link_motion(a, 0, &c2, &v2, &w2);
    assert_memory_equal(&c, &c2, sizeof c);
    sim_artic_destroy(a);
}

// A double pendulum copied by sim_artic_get_state() into a fresh one
// continues exactly as the original does.
static void test_state_copy_continues_bit_for_bit(void** state) {
    (void)state;
    enum { N_STATE = 1 + 2 * SIM_ARTIC_STATE_FLOATS };
    sim_artic_link_def d[2] = {rod(-1, vec(0, 0, 0), 1.0f, 1.0f),
                               rod(0, vec(0.0f, -1.0f, 0.0f), 1.0f, 1.0f)};
    sim_artic *a = NULL, *b = NULL;
    assert_int_equal(sim_artic_create(d, 2, NULL, &a), SIM_OK);
    assert_int_equal(sim_artic_create(d, 2, NULL, &b), SIM_OK);
    assert_int_equal(sim_artic_set_angle(a, 0, 2.0f, 0.0f), SIM_OK);
    for (int s = 0; s < 100; ++s) {
        sim_artic_step(a, 1.0f / 240.0f, vec(0.0f, -G, 0.0f));
    }
    float sa[N_STATE], sb[N_STATE];
    assert_int_equal(sim_artic_get_state(a, NULL, 0), N_STATE);
    assert_int_equal(sim_artic_get_state(a, sa, N_STATE), N_STATE);
    assert_int_equal(sim_artic_set_state(b, sa, N_STATE - 1), SIM_E_INVALID_ARG);
    float bad[N_STATE];
    memcpy(bad, sa, sizeof bad);
    bad[3] = NAN;
    assert_int_equal(sim_artic_set_state(b, bad, N_STATE), SIM_E_NOT_FINITE);
    assert_int_equal(sim_artic_set_state(b, sa, N_STATE), SIM_OK);
    for (int s = 0; s < 100; ++s) {
        sim_artic_step(a, 1.0f / 240.0f, vec(0.0f, -G, 0.0f));
        sim_artic_step(b, 1.0f / 240.0f, vec(0.0f, -G, 0.0f));
    }
    sim_artic_get_state(a, sa, N_STATE);
    sim_artic_get_state(b, sb, N_STATE);
    assert_memory_equal(sa, sb, sizeof sa);
    sim_artic_destroy(a);
    sim_artic_destroy(b);
}

// ---------------------------------------------------------------------------
// Bad input
// ---------------------------------------------------------------------------

static void test_bad_defs_and_calls_are_refused(void** state) {
    (void)state;
    sim_artic_link_def good[2] = {rod(-1, vec(0, 0, 0), 1.0f, 1.0f),
                                  rod(0, vec(0, -1, 0), 1.0f, 1.0f)};
    sim_artic* a = NULL;
    sim_artic_link_def d[2];
    const sim_quat zero_quat = {0.0f, 0.0f, 0.0f, 0.0f};
#define REFUSED(expr, rc_expected)                                                                 \
    do {                                                                                           \
        memcpy(d, good, sizeof d);                                                                 \
        expr;                                                                                      \
        a = NULL;                                                                                  \
        assert_int_equal(sim_artic_create(d, 2, NULL, &a), rc_expected);                           \
        assert_null(a);                                                                            \
    } while (0)
    REFUSED(d[1].parent = 1, SIM_E_INVALID_ARG);  // its own parent
    REFUSED(d[1].parent = -1, SIM_E_INVALID_ARG); // a second root
    REFUSED(d[0].parent = 0, SIM_E_INVALID_ARG);  // the base with a parent
    REFUSED(d[1].joint = SIM_ARTIC_FREE, SIM_E_INVALID_ARG);
    REFUSED(d[1].joint = (sim_artic_joint)7, SIM_E_INVALID_ARG);
    REFUSED(d[1].axis = vec(0, 0, 0), SIM_E_INVALID_ARG);
    REFUSED(d[1].frame = zero_quat, SIM_E_INVALID_ARG);
    REFUSED(d[1].mass = 0.0f, SIM_E_OUT_OF_RANGE);
    REFUSED(d[1].mass = NAN, SIM_E_NOT_FINITE);
    REFUSED(d[1].inertia = vec(1.0f, 0.1f, 0.1f), SIM_E_OUT_OF_RANGE); // no real body
    REFUSED(d[1].com = vec(0, -200.0f, 0), SIM_E_OUT_OF_RANGE);
    REFUSED(d[1].damping = -1.0f, SIM_E_OUT_OF_RANGE);
    REFUSED(d[1].anchor = vec(INFINITY, 0, 0), SIM_E_NOT_FINITE);
#undef REFUSED
    assert_int_equal(sim_artic_create(good, 0, NULL, &a), SIM_E_INVALID_ARG);
    assert_int_equal(sim_artic_create(good, SIM_ARTIC_MAX_LINKS + 1, NULL, &a), SIM_E_INVALID_ARG);
    // Calls on a good one change nothing when refused.
    assert_int_equal(sim_artic_create(good, 2, NULL, &a), SIM_OK);
    assert_int_equal(sim_artic_set_angle(a, 0, 0.5f, 0.0f), SIM_OK);
    assert_int_equal(sim_artic_step(a, 0.0f, vec(0, -G, 0)), SIM_E_OUT_OF_RANGE);
    assert_int_equal(sim_artic_step(a, NAN, vec(0, -G, 0)), SIM_E_NOT_FINITE);
    assert_int_equal(sim_artic_step(a, 1.0f / 60.0f, vec(0, -2000.0f, 0)), SIM_E_OUT_OF_RANGE);
    assert_int_equal(sim_artic_set_angle(a, 2, 0.0f, 0.0f), SIM_E_BAD_INDEX);
    assert_int_equal(sim_artic_set_angle(a, 1, NAN, 0.0f), SIM_E_NOT_FINITE);
    assert_int_equal(sim_artic_set_rotation(a, 1, (sim_quat){0, 0, 0, 1}, vec(0, 0, 0)),
                     SIM_E_INVALID_ARG); // a hinge, not a ball
    assert_int_equal(
        sim_artic_set_base(a, vec(0, 0, 0), (sim_quat){0, 0, 0, 1}, vec(0, 0, 0), vec(0, 0, 0)),
        SIM_E_INVALID_ARG); // a fixed base
    assert_int_equal(sim_artic_set_drive(a, 0, -1.0f, 0.0f, 0.0f, (sim_quat){0, 0, 0, 1}),
                     SIM_E_OUT_OF_RANGE);
    float angle, rate;
    assert_int_equal(sim_artic_get_angle(a, 0, &angle, &rate), SIM_OK);
    assert_true(angle == 0.5f && rate == 0.0f);
    sim_artic_destroy(a);
    sim_artic_destroy(NULL);
    // Ball-joint cones.
    sim_artic_link_def ball = rod(-1, vec(0, 0, 0), 1.0f, 1.0f);
    ball.joint = SIM_ARTIC_SPHERICAL;
    assert_int_equal(sim_artic_create(&ball, 1, NULL, &a), SIM_OK);
    float twist, swing;
    assert_int_equal(sim_artic_cone_angles(a, 0, &twist, &swing), SIM_E_BAD_STATE);
    const sim_vec3 down = vec(0, -1, 0), x = vec(1, 0, 0);
    assert_int_equal(sim_artic_set_cone(a, 0, vec(0, 0, 0), x, 0.5f, 0.5f, -0.1f, 0.1f),
                     SIM_E_INVALID_ARG);
    assert_int_equal(sim_artic_set_cone(a, 0, down, vec(0, 2, 0), 0.5f, 0.5f, -0.1f, 0.1f),
                     SIM_E_INVALID_ARG); // axis1 along the bone
    assert_int_equal(sim_artic_set_cone(a, 0, down, x, 0.0f, 0.5f, -0.1f, 0.1f),
                     SIM_E_OUT_OF_RANGE);
    assert_int_equal(sim_artic_set_cone(a, 0, down, x, 0.5f, 4.0f, -0.1f, 0.1f),
                     SIM_E_OUT_OF_RANGE);
    assert_int_equal(sim_artic_set_cone(a, 0, down, x, 0.5f, 0.5f, 0.2f, 0.1f), SIM_E_OUT_OF_RANGE);
    assert_int_equal(sim_artic_set_cone(a, 0, down, x, NAN, 0.5f, -0.1f, 0.1f), SIM_E_NOT_FINITE);
    assert_int_equal(sim_artic_cone_angles(a, 0, &twist, &swing), SIM_E_BAD_STATE); // unchanged
    assert_int_equal(sim_artic_set_limits(a, 0, -1.0f, 1.0f), SIM_E_INVALID_ARG);   // not a hinge
    assert_int_equal(sim_artic_set_cone(a, 0, down, x, 0.5f, 0.5f, -0.1f, 0.1f), SIM_OK);
    assert_int_equal(sim_artic_cone_angles(a, 0, &twist, &swing), SIM_OK);
    assert_true(twist == 0.0f && swing == 0.0f); // at rest in its joint frame
    sim_artic_destroy(a);
    assert_int_equal(sim_artic_create(good, 2, NULL, &a), SIM_OK);
    assert_int_equal(sim_artic_set_cone(a, 0, down, x, 0.5f, 0.5f, -0.1f, 0.1f),
                     SIM_E_INVALID_ARG); // a hinge
    sim_artic_destroy(a);
}

// A 100-link chain of 0.05 m, 0.1 kg rods on ball joints, hanging from a
// fixed anchor with every joint turning at the cap (47 rad/s) the other
// way from its neighbour's: a whip that holds far more energy than its
// steps can follow. By the conservation of energy it can only lose what it
// holds (its contacts, limits and caps take; gravity gives at most
// 0.1·9.81 J a metre a link, 5 m at most), and it must keep moving: no
// pose equal to the one two steps before (the two-step cycle a fresh
// user's chain locked in: test_reduced.c, test_a_frozen_chain_moves_on).
static void test_a_whip_at_the_cap_moves_on(void** state) {
    (void)state;
    enum { N = 101 };
    sim_artic_link_def d[N];
    d[0] = sim_artic_link_def_default();
    d[0].joint = SIM_ARTIC_FIXED;
    d[0].mass = 0.5f;
    d[0].inertia = vec(0.01f, 0.01f, 0.01f);
    for (int i = 1; i < N; ++i) {
        d[i] = rod(i - 1, i == 1 ? vec(0.0f, 0.0f, 0.0f) : vec(0.0f, -0.05f, 0.0f), 0.1f, 0.05f);
        d[i].joint = SIM_ARTIC_SPHERICAL;
        d[i].inertia = vec(3e-5f, 2e-5f, 3e-5f); // a 2 cm capsule's: the rod's is too thin
    }
    sim_artic* a = NULL;
    assert_int_equal(sim_artic_create(d, N, NULL, &a), SIM_OK);
    assert_int_equal(sim_artic_set_base(a, vec(0.0f, 6.0f, 0.0f), (sim_quat){0, 0, 0, 1},
                                        vec(0.0f, 0.0f, 0.0f), vec(0.0f, 0.0f, 0.0f)),
                     SIM_OK);
    const float cap = 0.25f * 3.14159265f * 60.0f;
    assert_int_equal(sim_artic_set_max_rate(a, cap), SIM_OK);
    for (int i = 1; i < N; ++i) {
        const float s = i % 2 ? 1.0f : -1.0f;
        assert_int_equal(sim_artic_set_rotation(a, (uint32_t)i, quat_axis(vec(0, 0, 1), 0.3f * s),
                                                vec(0.0f, 0.0f, s * cap)),
                         SIM_OK);
    }
    const sim_vec3 g = vec(0.0f, -9.81f, 0.0f);
    const double e0 = sim_artic_energy(a, g);
    double top = e0;
    int same = 0;
    sim_vec3 tip[3];
    for (int t = 0; t < 480; ++t) { // 2 s at 240 Hz
        assert_int_equal(sim_artic_step(a, 1.0f / 240.0f, g), SIM_OK);
        sim_quat q;
        assert_int_equal(sim_artic_link_pose(a, N - 1, &tip[t % 3], &q), SIM_OK);
        if (t >= 2) {
            const sim_vec3 p = tip[t % 3], o = tip[(t + 1) % 3]; // two steps ago
            same += p.x == o.x && p.y == o.y && p.z == o.z;
        }
        top = fmax(top, sim_artic_energy(a, g));
    }
    const double e1 = sim_artic_energy(a, g);
    printf("a whip at the cap: energy %.1f J at the start, at most %.1f J, %.1f J after 2 s; "
           "poses equal to the one two steps before: %d of 478\n",
           e0, top, e1, same);
    assert_true(top <= e0 + 0.1 * 9.81 * 5.0 * 100.0);
    assert_int_equal(same, 0);
    assert_true(e1 < e0);
    sim_artic_destroy(a);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_whip_at_the_cap_moves_on),
        cmocka_unit_test(test_compound_pendulum_period),
        cmocka_unit_test(test_stop_keeps_the_pose_and_nothing_moves),
        cmocka_unit_test(test_pendulum_energy_bounded),
        cmocka_unit_test(test_double_pendulum_matches_lagrangian),
        cmocka_unit_test(test_double_pendulum_energy_bounded),
        cmocka_unit_test(test_free_floating_conserves_momentum),
        cmocka_unit_test(test_free_fall_momentum_is_gravity_impulse),
        cmocka_unit_test(test_joint_gap_is_zero_by_construction),
        cmocka_unit_test(test_seed_pd_example),
        cmocka_unit_test(test_light_arm_holds_heavy_payload),
        cmocka_unit_test(test_hinge_limit_is_never_passed),
        cmocka_unit_test(test_coupled_limits_hold_and_keep_momentum),
        cmocka_unit_test(test_capsule_lands_and_rests),
        cmocka_unit_test(test_capsule_slides_the_coulomb_distance),
        cmocka_unit_test(test_humanoid_articulation_rests_on_stairs),
        cmocka_unit_test(test_ball_cone_and_twist_hold),
        cmocka_unit_test(test_ball_joint_q_and_minus_q_agree),
        cmocka_unit_test(test_restitution_bounces_by_newtons_law),
        cmocka_unit_test(test_impulse_on_a_free_body),
        cmocka_unit_test(test_ball_partner_hits_a_free_rod),
        cmocka_unit_test(test_state_copy_continues_bit_for_bit),
        cmocka_unit_test(test_bad_defs_and_calls_are_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
