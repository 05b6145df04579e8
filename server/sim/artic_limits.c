/*
 * artic_limits.c: joint limits of reduced-coordinate articulations (hinge
 * ranges, ball joints' twist ranges and swing cones) as one-sided
 * constraints in joint space, solved exactly by active sets
 * (sim_artic_set_limits(), sim_artic_set_cone()).
 */
#include "artic.h"

#include <string.h>

// The change of every joint velocity that an impulse `lambda` (N·m·s) on
// link j's joint along `dir` (its DOFs' components: (1) for a hinge, an
// axis in the link's frame for a ball joint) causes, through the articulated inertias of the step's
// first ABA pass (Featherstone 2008 §7.3 with the velocities, gravity and
// other forces zero: Mirtich 1996's impulse propagation, and the implicit
// drives' stiffness in D as the step has it), into each link's dq; added
// to qd when `add`. O(n).
static void joint_impulse(sim_artic* a, uint32_t j, const float dir[3], float lambda, bool add) {
    sim__artic_link_impulse(a, j, dir, NULL, lambda, add);
}

// In-place Cholesky factorisation of the n×n SPD matrix m (row stride ld)
// and a solve of m x = b into x. False when m is not positive definite.
static bool cholesky_solve(double* m, int n, int ld, const double* b, double* x) {
    for (int j = 0; j < n; ++j) {
        double d = m[j * ld + j];
        for (int k = 0; k < j; ++k) {
            d -= m[j * ld + k] * m[j * ld + k];
        }
        if (!(d > 1e-30)) {
            return false;
        }
        d = sqrt(d);
        m[j * ld + j] = d;
        for (int i = j + 1; i < n; ++i) {
            double v = m[i * ld + j];
            for (int k = 0; k < j; ++k) {
                v -= m[i * ld + k] * m[j * ld + k];
            }
            m[i * ld + j] = v / d;
        }
    }
    for (int i = 0; i < n; ++i) { // L y = b
        double v = b[i];
        for (int k = 0; k < i; ++k) {
            v -= m[i * ld + k] * x[k];
        }
        x[i] = v / m[i * ld + i];
    }
    for (int i = n; i-- > 0;) { // L^T x = y
        double v = x[i];
        for (int k = i + 1; k < n; ++k) {
            v -= m[k * ld + i] * x[k];
        }
        x[i] = v / m[i * ld + i];
    }
    return true;
}

// Hinge limits as one-sided velocity constraints in joint space, solved
// together and exactly: each hinge that could reach a bound this step (its
// free next angle θ + h·θ̇ beyond the bound, or inside within the distance
// its rate covers in a step) is a candidate on that side, with the rate
// w = (bound − θ)/h that lands on the bound. With K = the joint-space
// inverse inertia among the candidates (one impulse propagation each), the
// impulses μ >= 0 (signed to push away from the bound) solve the linear
// complementarity problem K·μ >= b, μ >= 0, μ·(K·μ − b) = 0 (by active
// sets, below), then are applied. More than
// SIM_ARTIC_MAX_LIMIT_ROWS candidates: the nearest are solved, and the
// rest wait for the next step.
// min ½ μ·K·μ − b·μ over μ >= 0 for the m×m SPD K (row stride
// SIM_ARTIC_MAX_LIMIT_ROWS), which is the complementarity problem
// K·μ >= b, μ >= 0, μ·(K·μ − b) = 0: Lawson and Hanson's active-set method
// ("Solving Least Squares Problems", 1974, ch. 23), finite.
static void nonnegative_solve(const double* K, const double* b, int m, double* mu) {
    enum { M = SIM_ARTIC_MAX_LIMIT_ROWS };
    bool free_set[M];
    for (int r = 0; r < m; ++r) {
        free_set[r] = false;
        mu[r] = 0.0;
    }
    double A[M * M]; // 32 KiB of stack at M = 64
    const double tol = 1e-9;
    for (int outer = 0; outer < 3 * m; ++outer) {
        // The most negative gradient among the bound (zero) impulses.
        int t = -1;
        double best = tol;
        for (int r = 0; r < m; ++r) {
            if (free_set[r]) {
                continue;
            }
            double w = b[r];
            for (int c = 0; c < m; ++c) {
                w -= K[r * M + c] * mu[c];
            }
            if (w > best) {
                best = w;
                t = r;
            }
        }
        if (t < 0) {
            break; // optimal: every bound one would pull
        }
        free_set[t] = true;
        for (int inner = 0; inner < m + 1; ++inner) {
            int idx[M], nf = 0;
            for (int r = 0; r < m; ++r) {
                if (free_set[r]) {
                    idx[nf++] = r;
                }
            }
            double bb[M], z[M];
            for (int r = 0; r < nf; ++r) {
                bb[r] = b[idx[r]];
                for (int c = 0; c < nf; ++c) {
                    A[r * M + c] = K[idx[r] * M + idx[c]];
                }
            }
            if (!cholesky_solve(A, nf, M, bb, z)) {
                free_set[t] = false; // cannot happen for an SPD K
                break;
            }
            double alpha = 1.0;
            for (int r = 0; r < nf; ++r) {
                if (z[r] <= 0.0) {
                    const double mr = mu[idx[r]];
                    const double ar = mr / (mr - z[r]);
                    alpha = fmin(alpha, ar);
                }
            }
            for (int r = 0; r < nf; ++r) {
                mu[idx[r]] += alpha * (z[r] - mu[idx[r]]);
            }
            if (alpha >= 1.0) {
                break; // all free impulses positive
            }
            for (int r = 0; r < nf; ++r) {
                if (mu[idx[r]] <= tol * 1e-3) {
                    mu[idx[r]] = 0.0;
                    free_set[idx[r]] = false;
                }
            }
        }
    }
}

// One limit a joint could reach this step, as a row of the solve below: a
// value (a hinge's angle, a ball joint's twist angle or swing amount), the
// rate it changes at (dir · the joint's velocity), and its range.
typedef struct limit_row {
    uint32_t link;
    uint8_t kind; // 0 hinge, 1 twist, 2 swing
    float dir[3];
    float value, lower, upper;
    float side; // +1 held at the lower bound, −1 at the upper
} limit_row;

static float row_rate(const artic_link* l, const float dir[3], const float* qd) {
    float r = 0.0f;
    for (int k = 0; k < l->dof && k < 3; ++k) {
        r += dir[k] * qd[k];
    }
    return r;
}

// A ball joint's rotation as twist about its bone and swing: the twist
// angle (rad, in [−π, π]) and the swing's rotation vector, perpendicular
// to the bone (joint-frame axes). q and −q give the same (q_swing_twist()
// takes w >= 0 first).
void sim__artic_cone_angles(const artic_link* l, float* twist, sim_vec3* swing) {
    const sim_quat F = q_from_to(v3(1.0f, 0.0f, 0.0f), l->bone);
    const sim_quat q = q_mul(q_conj(F), q_mul(l->rot, F)); // bone along x
    sim_quat sw, tw;
    q_swing_twist(q, &sw, &tw);
    *twist = 2.0f * atan2f(tw.x, tw.w);
    *swing = q_rotate(F, q_to_rotvec(sw));
}

// The rows of link i whose value passes a bound this step at the rate
// `qd` gives, or (near) could reach it; appended to rows (at most cap).
static int link_rows(const artic_link* l, uint32_t i, float dt, const float* qd, bool near,
                     limit_row* rows, int cap) {
    limit_row cand[2];
    int n = 0;
    if (l->limited) {
        cand[n++] = (limit_row){i, 0, {1.0f, 0.0f, 0.0f}, l->angle, l->lower, l->upper, 0.0f};
    }
    if (l->coned) {
        float twist;
        sim_vec3 r;
        sim__artic_cone_angles(l, &twist, &r);
        // The full turn either way is no twist limit: the twist angle wraps
        // at ±π, and a bound there would stop a free spin.
        if (l->twist_min > -3.14159f || l->twist_max < 3.14159f) {
            cand[n++] = (limit_row){
                i, 1, {l->bone.x, l->bone.y, l->bone.z}, twist, l->twist_min, l->twist_max, 0.0f};
        }
        const float len = v3_len(r);
        if (len > 1e-6f && (l->swing1 < 3.14159f || l->swing2 < 3.14159f)) {
            // The cone's radius along the swing's direction u (an ellipse
            // in the swing1, swing2 plane), and the axis the swing grows
            // about, in the link's frame.
            const sim_vec3 u = v3_scale(r, 1.0f / len);
            const float c1 = v3_dot(u, l->axis1) / l->swing1;
            const float c2 = v3_dot(u, l->axis2) / l->swing2;
            const float radius = 1.0f / sqrtf(c1 * c1 + c2 * c2);
            const sim_vec3 du = q_rotate_inv(l->rot, u);
            cand[n++] = (limit_row){i, 2, {du.x, du.y, du.z}, len, -1e30f, radius, 0.0f};
        }
    }
    int added = 0;
    for (int c = 0; c < n && added < cap; ++c) {
        limit_row* row = &cand[c];
        const float step = dt * row_rate(l, row->dir, qd);
        const float next = row->value + step;
        float side = 0.0f;
        if (next < row->lower) {
            side = 1.0f;
        } else if (next > row->upper) {
            side = -1.0f;
        } else if (near) {
            const float reach = fabsf(step);
            if (next - row->lower <= reach && next < 0.5f * (row->lower + row->upper)) {
                side = 1.0f;
            } else if (row->upper - next <= reach) {
                side = -1.0f;
            }
        }
        if (side != 0.0f) {
            row->side = side;
            rows[added++] = *row;
        }
    }
    return added;
}

// Joint limits (hinge ranges, ball joints' twist ranges and swing cones) as
// one-sided velocity constraints in joint space, solved together and
// exactly. Each limit whose value passes a bound this step, or could reach
// it, is a row on that side, with the rate w = (bound − value)/h that lands
// on the bound. With K the joint-space inverse inertia among the rows (one
// impulse propagation each), the impulses μ >= 0 (signed to push away from
// the bound) solve K·μ >= b, μ >= 0, μ·(K·μ − b) = 0 (nonnegative_solve()),
// and are applied to the free velocities. Their push can carry another
// limit past its bound: the rows are then amended and the problem solved
// again from the free velocities (at most SIM_ARTIC_LIMIT_PASSES times).
// More than SIM_ARTIC_MAX_LIMIT_ROWS rows: the first are solved, the rest
// wait for the next step. A swing row's value is linearised (its rate is
// the angular velocity about the swing's direction), so a cone is held to
// within that step's curvature, not exactly.
void sim__artic_solve_limits(sim_artic* a, float dt) {
    enum { M = SIM_ARTIC_MAX_LIMIT_ROWS };
    limit_row rows[M];
    double b[M], mu[M];
    int m = 0;
    if (!a->any_limits) {
        return;
    }
    for (uint32_t i = 0; i < a->count; ++i) {
        artic_link* l = &a->links[i];
        l->limit_impulse = 0.0f;
        if (l->limited || l->coned) {
            m += link_rows(l, i, dt, l->qd, true, rows + m, M - m);
        }
    }
    if (m == 0) {
        return;
    }
    for (uint32_t i = 0; i < a->count; ++i) {
        memcpy(a->links[i].qdf, a->links[i].qd, sizeof a->links[i].qdf);
    }
    double K[M * M]; // 32 KiB of stack at M = 64
    for (int pass = 0; m > 0 && pass < SIM_ARTIC_LIMIT_PASSES; ++pass) {
        for (int c = 0; c < m; ++c) {
            joint_impulse(a, rows[c].link, rows[c].dir, 1.0f, false);
            for (int r = 0; r < m; ++r) {
                const artic_link* l = &a->links[rows[r].link];
                K[r * M + c] =
                    (double)(rows[r].side * rows[c].side * row_rate(l, rows[r].dir, l->dq));
            }
        }
        for (int r = 0; r < m; ++r) { // symmetric but for round-off
            for (int c = r + 1; c < m; ++c) {
                const double v = 0.5 * (K[r * M + c] + K[c * M + r]);
                K[r * M + c] = v;
                K[c * M + r] = v;
            }
            const limit_row* row = &rows[r];
            const artic_link* l = &a->links[row->link];
            const float w = ((row->side > 0.0f ? row->lower : row->upper) - row->value) / dt;
            b[r] = (double)row->side * ((double)w - (double)row_rate(l, row->dir, l->qdf));
        }
        nonnegative_solve(K, b, m, mu);
        for (uint32_t i = 0; i < a->count; ++i) {
            artic_link* l = &a->links[i];
            memcpy(l->qd, l->qdf, sizeof l->qd);
            l->limit_impulse = 0.0f;
        }
        for (int r = 0; r < m; ++r) {
            if (mu[r] > 0.0) {
                const float lambda = rows[r].side * (float)mu[r];
                a->links[rows[r].link].limit_impulse += lambda;
                joint_impulse(a, rows[r].link, rows[r].dir, lambda, true);
            }
        }
        // Amend the rows: a limit now past a bound it has no row for.
        bool changed = false;
        for (uint32_t i = 0; i < a->count && m < M; ++i) {
            const artic_link* l = &a->links[i];
            if (!l->limited && !l->coned) {
                continue;
            }
            limit_row now[3];
            const int n = link_rows(l, i, dt, l->qd, false, now, 3);
            for (int k = 0; k < n; ++k) {
                int r = 0;
                while (r < m && !(rows[r].link == i && rows[r].kind == now[k].kind)) {
                    r++;
                }
                if (r < m && rows[r].side != now[k].side) {
                    rows[r].side = now[k].side;
                    changed = true;
                } else if (r == m && m < M) {
                    rows[m++] = now[k];
                    changed = true;
                }
            }
        }
        if (!changed) {
            break;
        }
    }
}
