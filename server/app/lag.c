/*
 * lag.c: commands judged at the tick a client saw (lag compensation,
 * PROTOCOL.md §3 "seen_tick"), and raycast.
 *
 * A player aims at the pose its last snapshots showed, some 100 ms old by
 * the time its command arrives; the server keeps each world's bone poses
 * for --lag-history ms (sim_history, recorded after every step) and judges
 * a ray or a hit point against the pose at `seen_tick`, then applies the
 * impulse now, at the same point of the same bone carried to where the
 * bone is now (Bernier 2001; Valve's "Lag compensation").
 *
 * A command with a seen_tick is rewritten here into what it resolved to (a
 * kill: the bone and the point now; an apply_impulse: the point now) before
 * it is journaled, so a replay or a rollback, which has no history, applies
 * exactly what applied live.
 */
#include "app_internal.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

static rdp_vec3 rdp_of(sim_vec3 v) {
    return (rdp_vec3){v.x, v.y, v.z};
}

int app__lag_pick(app_world* w, uint64_t seen, sim_picked_tick* out, char* msg, size_t cap) {
    int rc = sim_history_pick(w->history, w->sim, seen, out);
    if (rc == SIM_E_OUT_OF_RANGE) {
        snprintf(msg, cap,
                 "seen_tick %" PRIu64 " is after the world's tick %" PRIu64
                 ": no snapshot has shown it yet",
                 seen, sim_world_tick(w->sim));
    }
    return rc;
}

// The index of the bone named cmd->bone of character id, or a negative
// sim error with msg filled.
static int named_bone(app_world* w, sim_entity_id id, const rdp_command* cmd, char* msg,
                      size_t cap) {
    int bone = sim_character_bone_index(w->sim, id, cmd->bone);
    if (bone == SIM_E_UNKNOWN_NAME) {
        snprintf(msg, cap, "no bone \"%s\"", cmd->bone);
    }
    return bone;
}

int app__lag_kill(app_world* w, rdp_command* cmd, sim_picked_tick* pick, char* msg, size_t cap) {
    const sim_entity_id id = sim_entity_id_load(cmd->entity);
    sim_character_view cv;
    if (sim_character_get_view(w->sim, id, &cv) != SIM_OK) {
        return SIM_E_STALE_ID;
    }
    int rc = app__lag_pick(w, cmd->u.kill.seen_tick, pick, msg, cap);
    if (rc != SIM_OK) {
        return rc;
    }
    const sim_vec3 then = app__sim_vec(cmd->u.kill.hit_point);
    uint32_t bone = 0;
    if (cmd->given & RDP_GIVEN_BONE) {
        int b = named_bone(w, id, cmd, msg, cap);
        if (b < 0) {
            return b;
        }
        bone = (uint32_t)b;
    } else {
        rc = sim_history_nearest_bone(w->history, w->sim, pick->tick, id, then, &bone);
    }
    sim_vec3 now = then;
    if (rc == SIM_OK) {
        rc = sim_history_carry(w->history, w->sim, pick->tick, id, bone, then, &now);
    }
    if (rc == SIM_E_OUT_OF_RANGE) {
        // Spawned after the tick picked: it was not there to be seen, so
        // it is judged as it is now.
        pick->tick = sim_world_tick(w->sim);
        pick->clamped = true;
        rc = SIM_OK;
        if (!(cmd->given & RDP_GIVEN_BONE)) {
            rc = sim_history_nearest_bone(NULL, w->sim, pick->tick, id, then, &bone);
        }
    }
    if (rc != SIM_OK) {
        return rc;
    }
    // What it resolved to, as if the client had named the bone and the
    // point as they are now.
    snprintf(cmd->bone, sizeof cmd->bone, "%s", cv.skeleton->bones[bone].name);
    cmd->given = (cmd->given | RDP_GIVEN_BONE) & ~(unsigned)RDP_GIVEN_SEEN_TICK;
    cmd->u.kill.hit_point = rdp_of(now);
    cmd->u.kill.seen_tick = 0;
    return SIM_OK;
}

int app__lag_impulse(app_world* w, rdp_command* cmd, sim_picked_tick* pick, char* msg, size_t cap) {
    const sim_entity_id id = sim_entity_id_load(cmd->entity);
    if (!sim_entity_is_valid(w->sim, id)) {
        return SIM_E_STALE_ID;
    }
    int rc = app__lag_pick(w, cmd->u.apply_impulse.seen_tick, pick, msg, cap);
    if (rc != SIM_OK) {
        return rc;
    }
    // A body spawned after the tick was not there to be seen: judged now.
    sim_bone_pose then;
    if (sim_history_bone_pose(w->history, w->sim, pick->tick, id, 0, &then) == SIM_E_OUT_OF_RANGE) {
        pick->tick = sim_world_tick(w->sim);
        pick->clamped = true;
    }
    sim_character_view cv;
    if ((cmd->given & RDP_GIVEN_POINT) && (cmd->given & RDP_GIVEN_BONE) &&
        sim_character_get_view(w->sim, id, &cv) == SIM_OK) {
        int bone = named_bone(w, id, cmd, msg, cap);
        if (bone < 0) {
            return bone;
        }
        sim_vec3 now;
        rc = sim_history_carry(w->history, w->sim, pick->tick, id, (uint32_t)bone,
                               app__sim_vec(cmd->u.apply_impulse.point), &now);
        if (rc == SIM_E_OUT_OF_RANGE) {
            pick->tick = sim_world_tick(w->sim); // spawned since: judged now
            pick->clamped = true;
        } else if (rc != SIM_OK) {
            return rc;
        } else {
            cmd->u.apply_impulse.point = rdp_of(now);
        }
    }
    // Balls and particles take it where they are: nothing to carry.
    cmd->given &= ~(unsigned)RDP_GIVEN_SEEN_TICK;
    cmd->u.apply_impulse.seen_tick = 0;
    return SIM_OK;
}

char* app__lag_raycast(app_world* w, const rdp_command* cmd, uint64_t reply_tick, size_t* len) {
    char msg[192] = "";
    sim_picked_tick pick = {sim_world_tick(w->sim), false};
    int rc = SIM_OK;
    if (cmd->given & RDP_GIVEN_SEEN_TICK) {
        rc = app__lag_pick(w, cmd->u.raycast.seen_tick, &pick, msg, sizeof msg);
    }
    // The direction made unit here, in double: any non-zero length is a
    // direction (1e-300 too), which single precision could not square.
    const rdp_vec3 d = cmd->u.raycast.direction, o = cmd->u.raycast.origin;
    const double big = fmax(fabs(d.x), fmax(fabs(d.y), fabs(d.z)));
    const double unit = big > 0.0 ? hypot(hypot(d.x / big, d.y / big), d.z / big) * big : 0.0;
    if (rc == SIM_OK && !(unit > 0.0)) {
        snprintf(msg, sizeof msg, "field \"direction\" must not be [0, 0, 0]");
        rc = SIM_E_OUT_OF_RANGE;
    } else if (rc == SIM_OK && !sim_world_contains(w->sim, app__sim_vec(o))) {
        snprintf(msg, sizeof msg,
                 "field \"origin\" [%g, %g, %g] is outside the world's cube of ±%g m", o.x, o.y,
                 o.z, (double)sim_world_half_extent(w->sim));
        rc = SIM_E_OUT_OF_RANGE;
    }
    sim_ray_hit hit;
    if (rc == SIM_OK) {
        const sim_vec3 du = {(float)(d.x / unit), (float)(d.y / unit), (float)(d.z / unit)};
        // A distance below a nanometre is a nanometre (what a float holds).
        const float max = (float)fmax(cmd->u.raycast.max_distance, 1e-9);
        rc = sim_world_raycast(w->sim, w->history, pick.tick, app__sim_vec(o), du, max, &hit);
    }
    if (rc != SIM_OK) {
        if (msg[0] == '\0') {
            snprintf(msg, sizeof msg, "%s", sim_strerror(rc));
        }
        return rdp_reply_error(rdp_re_of(cmd),
                               rc == SIM_E_NOT_FINITE ? RDP_E_NOT_FINITE : RDP_E_OUT_OF_RANGE, msg,
                               len);
    }
    rdp_hit wire;
    memset(&wire, 0, sizeof wire);
    rdp_reply_fields f;
    memset(&f, 0, sizeof f);
    f.has_tick = true;
    f.tick = reply_tick;
    if (cmd->given & RDP_GIVEN_SEEN_TICK) {
        f.has_seen_tick = true;
        f.seen_tick = pick.tick;
        f.clamped = pick.clamped;
    }
    f.has_hit = true;
    if (hit.kind != SIM_HIT_NONE) {
        wire.kind = sim_hit_kind_name(hit.kind);
        wire.has_entity = !SIM_ID_IS_NULL(hit.entity);
        wire.entity = sim_entity_id_store(hit.entity);
        sim_character_view cv;
        if (hit.kind == SIM_HIT_BONE && sim_character_get_view(w->sim, hit.entity, &cv) == SIM_OK) {
            wire.bone = cv.skeleton->bones[hit.index].name;
        }
        wire.has_index = hit.kind == SIM_HIT_PARTICLE || hit.kind == SIM_HIT_BOX;
        wire.index = hit.index;
        wire.point = rdp_of(hit.point);
        wire.normal = rdp_of(hit.normal);
        wire.distance = hit.distance;
        f.hit = &wire;
    }
    return rdp_reply_ok(rdp_re_of(cmd), &f, len);
}
