/*
 * probe.c: measures how well a character's joints hold on its current pose,
 * for tests, benchmarks and anyone tuning the solver: per joint, the gap
 * between the two anchors and how far the relative rotation is past its
 * twist (or hinge) range and outside its swing cone.
 *
 * It reads the character only through the public inspection functions
 * (poses and joint views), so it measures the state as any client would
 * see it, and it changes nothing.
 */
#include "quat.h"
#include "sim.h"

// Twist past its range and swing outside its cone (rad) of a relative
// rotation `rel` of the joint frames (+X the twist axis, +Y swing1). The
// decomposition is Jolt's (quat.h); the swing is measured along its own
// direction in half-angle-sine space, where the limit is the ellipse of
// half-axes sin(swing1/2), sin(swing2/2): with s = |(y, z)| and r = s / s_b
// its radius in ellipse units, the boundary on that ray is at s_b = s / r and
// the excess is 2·asin(s) - 2·asin(s / r).
static void over_range(const sim_joint_view* j, sim_quat rel, float* twist_over,
                       float* swing_over) {
    sim_quat swing, twist;
    q_swing_twist(rel, &swing, &twist);
    float phi = 2.0f * atan2f(twist.x, twist.w);
    *twist_over = fmaxf(0.0f, fmaxf(j->twist_min - phi, phi - j->twist_max));

    float y = swing.y, z = swing.z;
    float s = fminf(1.0f, sqrtf(y * y + z * z));
    float a = sinf(0.5f * j->swing1), b = sinf(0.5f * j->swing2);
    // A locked axis (half-angle 0) allows nothing about it: any swing with
    // a component there is outside along its whole length.
    bool off_locked = (a <= 1e-6f && fabsf(y) > 1e-7f) || (b <= 1e-6f && fabsf(z) > 1e-7f);
    float ey = a > 1e-6f ? y / a : 0.0f, ez = b > 1e-6f ? z / b : 0.0f;
    float r = sqrtf(ey * ey + ez * ez);
    if (off_locked) {
        *swing_over = 2.0f * asinf(s);
    } else if (r > 1.0f) {
        *swing_over = 2.0f * asinf(s) - 2.0f * asinf(s / r);
    } else {
        *swing_over = 0.0f;
    }
}

int sim_character_probe_joints(const sim_world* w, sim_entity_id id, sim_joint_probe* out,
                               uint32_t cap) {
    sim_bone_pose pose[SIM_MAX_BONES];
    int n = sim_character_get_pose(w, id, pose, NULL, NULL, SIM_MAX_BONES);
    if (n < 0) {
        return n;
    }
    uint32_t count = (uint32_t)n < cap ? (uint32_t)n : cap;
    sim_character_view view;
    sim_character_get_view(w, id, &view);
    for (uint32_t i = 0; i < count; ++i) {
        out[i] = (sim_joint_probe){0.0f, 0.0f, 0.0f};
        sim_joint_view j;
        if (i == 0 || sim_character_joint_view(w, id, i, &j) != SIM_OK) {
            continue;
        }
        const sim_bone_pose* p = &pose[view.skeleton->bones[i].parent];
        const sim_bone_pose* c = &pose[i];
        sim_vec3 ap = v3_add(p->p, q_rotate(p->q, j.anchor_parent));
        sim_vec3 ac = v3_add(c->p, q_rotate(c->q, j.anchor_child));
        out[i].gap = v3_len(v3_sub(ap, ac));
        // (q_p·frame_p)⁻¹ (q_c·frame_c): identity in the bind pose.
        sim_quat rel =
            q_normalize(q_mul(q_conj(q_mul(p->q, j.frame_parent)), q_mul(c->q, j.frame_child)));
        over_range(&j, rel, &out[i].twist_over, &out[i].swing_over);
    }
    return (int)count;
}
