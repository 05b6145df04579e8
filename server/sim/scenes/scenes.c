/*
 * scenes.c: the reference scenes of scenes.h. Numbers here are scene
 * design, not physics: positions are chosen so that everything starts at
 * rest, clear of the colliders, and in view of the viewer's default camera
 * at (0, 2.5, 7) looking at (0, 1.5, 0).
 */
#include "scenes.h"

sim_world_def sim_scene_seed_rope_world_def(void) {
    sim_world_def d = sim_world_def_default();
    d.params.gravity.x = 0.0f;
    d.params.gravity.y = -9.8f;
    d.params.gravity.z = 0.0f;
    d.params.damping = 1.0f;
    d.params.iterations = 5;
    d.params.substeps = 1;
    d.params.bounciness = 0.0f;
    d.params.friction = 0.0f;
    d.dt = 1.0f / 60.0f;
    d.ground = false;
    return d;
}

int sim_scene_seed_rope(sim_world* w, sim_entity_id* out) {
    sim_rope_def r = sim_rope_def_default();
    r.anchor.x = 0.0f;
    r.anchor.y = 0.0f;
    r.anchor.z = 0.0f;
    r.direction.x = 1.0f;
    r.direction.y = 0.0f;
    r.direction.z = 0.0f;
    r.segments = 5;
    r.segment_length = 0.5f;
    r.mass = 1.0f;
    r.pin_first = true;
    return sim_world_spawn_rope(w, &r, out);
}

int sim_scene_seed_cloth(sim_world* w, sim_entity_id* out) {
    sim_cloth_def c = sim_cloth_def_default();
    c.origin.x = -1.1f;
    c.origin.y = 4.0f;
    c.origin.z = 0.0f;
    c.cols = 12;
    c.rows = 10;
    c.spacing = 0.2f;
    c.pin_top = true;
    return sim_world_spawn_cloth(w, &c, out);
}

int sim_scene_square_cloth(sim_world* w, uint32_t n, float spacing, float top, sim_entity_id* out) {
    sim_cloth_def c = sim_cloth_def_default();
    c.origin.x = -0.5f * spacing * (float)(n - 1);
    c.origin.y = top;
    c.origin.z = 0.0f;
    c.cols = n;
    c.rows = n;
    c.spacing = spacing;
    c.pin_top = true;
    return sim_world_spawn_cloth(w, &c, out);
}

int sim_scene_cloth_over_bar(sim_world* w, uint32_t n, float spacing, bool self_collision,
                             sim_entity_id* out) {
    const float half = 0.5f * spacing * (float)(n - 1);
    const float bar_y = 0.25f + 0.5f * spacing * (float)n;
    sim_box bar = {{0.0f, bar_y, 0.0f}, {0.1f, 0.02f, half + 0.1f}};
    int rc = sim_world_add_box(w, bar);
    if (rc != SIM_OK) {
        return rc;
    }
    sim_cloth_def c = sim_cloth_def_default();
    c.cols = n;
    c.rows = n;
    c.spacing = spacing;
    c.mass = 0.02f;
    c.pin_top = false;
    c.across = (sim_vec3){1.0f, 0.0f, 0.0f};
    c.down = (sim_vec3){0.0f, 0.0f, 1.0f};
    c.origin = (sim_vec3){-half, bar_y + 0.07f, -half};
    c.radius = 0.01f;
    c.bend_compliance = 1e-4f;
    c.self_collision = self_collision;
    c.thickness = 0.025f * spacing / 0.03f;
    return sim_world_spawn_cloth(w, &c, out);
}

int sim_scene_cloth_over_bar_fold(sim_world* w, sim_entity_id cloth) {
    sim_entity_view v;
    int rc = sim_entity_get_view(w, cloth, &v);
    if (rc != SIM_OK) {
        return rc;
    }
    const uint32_t left = (v.cols * 2) / 5;
    for (uint32_t i = 0; i < v.particle_count && rc == SIM_OK; ++i) {
        if (i % v.cols < left) {
            sim_vec3 j = {3.0f / v.inv_mass[i], 0.0f, 0.0f};
            rc = sim_entity_apply_impulse(w, cloth, i, j);
        }
    }
    return rc;
}

int sim_scene_demo_platforms(sim_world* w) {
    // Solid blocks standing on the ground (1.1 m and 0.6 m tall): nothing can
    // get wedged underneath, as it could below a floating slab.
    sim_box a = {{-1.6f, 0.55f, 0.0f}, {0.8f, 0.55f, 0.6f}};
    sim_box b = {{1.6f, 0.3f, 0.0f}, {0.8f, 0.3f, 0.6f}};
    int rc = sim_world_add_box(w, a);
    return rc != SIM_OK ? rc : sim_world_add_box(w, b);
}

int sim_scene_demo(sim_world* w) {
    int rc = sim_scene_demo_platforms(w);
    if (rc != SIM_OK) {
        return rc;
    }
    sim_entity_id id;

    // Two ragdolls dropped onto the platforms, near their inner ends.
    static const float ragdolls[2][4] = {
        {-1.5f, 3.2f, 0.0f, 0.4f}, // x, y, z of the pelvis; facing
        {1.45f, 3.8f, 0.2f, -0.7f},
    };
    for (int i = 0; i < 2; ++i) {
        sim_ragdoll_def r = sim_ragdoll_def_default();
        r.position.x = ragdolls[i][0];
        r.position.y = ragdolls[i][1];
        r.position.z = ragdolls[i][2];
        r.facing = ragdolls[i][3];
        if ((rc = sim_world_spawn_ragdoll(w, &r, &id)) != SIM_OK) {
            return rc;
        }
    }

    // A rope laid out horizontally from its anchor, right of the sheet: it
    // swings down.
    sim_rope_def rope = sim_rope_def_default();
    rope.anchor.x = 1.3f;
    rope.anchor.y = 3.6f;
    rope.anchor.z = -1.4f;
    rope.segments = 20;
    rope.segment_length = 0.08f;
    if ((rc = sim_world_spawn_rope(w, &rope, &id)) != SIM_OK) {
        return rc;
    }

    // A sheet pinned along its top edge, behind the platforms.
    sim_cloth_def c = sim_cloth_def_default();
    c.origin.x = -1.0f;
    c.origin.y = 3.4f;
    c.origin.z = -2.2f;
    c.cols = 24;
    c.rows = 16;
    c.spacing = 0.085f;
    c.bend_compliance = 1.0e-3f;
    if ((rc = sim_world_spawn_cloth(w, &c, &id)) != SIM_OK) {
        return rc;
    }

    // In front, two animated humanoids and a dog, if the world has their
    // skeletons: click one to kill it.
    static const struct {
        const char* skeleton;
        float x, z, facing;
    } characters[] = {{"humanoid", -1.1f, 2.2f, 0.3f},
                      {"humanoid", 0.7f, 2.4f, -0.2f},
                      {"dog", 2.4f, 1.9f, -1.2f}};
    for (size_t i = 0; i < sizeof characters / sizeof characters[0]; ++i) {
        sim_character_def d = sim_character_def_default();
        d.skeleton = characters[i].skeleton;
        d.position.x = characters[i].x;
        d.position.z = characters[i].z;
        d.facing = characters[i].facing;
        rc = sim_world_spawn_character(w, &d, &id);
        if (rc != SIM_OK && rc != SIM_E_UNKNOWN_NAME) {
            return rc;
        }
    }
    return SIM_OK;
}

static sim_vec3 vec(float x, float y, float z) {
    sim_vec3 r = {x, y, z};
    return r;
}

static int scene_character(sim_world* w, sim_vec3 at, float facing, const char* clip,
                           sim_entity_id* out) {
    sim_character_def cd = sim_character_def_default();
    cd.position = at;
    cd.facing = facing;
    cd.clip = clip;
    return sim_world_spawn_character(w, &cd, out);
}

int sim_scene_characters(sim_world* w, int ticks) {
    for (int k = 0; k < 4; ++k) {
        sim_box step = {vec(0, 0.1f * (float)(k + 1), 0.3f * (float)k - 0.5f),
                        vec(2.0f, 0.1f * (float)(k + 1), 0.15f)};
        int rc = sim_world_add_box(w, step);
        if (rc != SIM_OK) {
            return rc;
        }
    }
    sim_entity_id walker, faller, partial, dog_id, cloth_id, rag_id, ball_id;
    sim_character_def dog = sim_character_def_default();
    dog.skeleton = "dog";
    dog.position = vec(2, 1, 2);
    sim_cloth_def cloth = sim_cloth_def_default();
    cloth.origin = vec(-1, 3, -1);
    cloth.cols = 8;
    cloth.rows = 8;
    sim_ragdoll_def rag = sim_ragdoll_def_default();
    rag.position = vec(0, 4, 0);
    int rc = scene_character(w, vec(-1, 0, 2), 0.0f, "walk", &walker);
    rc = rc != SIM_OK ? rc : scene_character(w, vec(1, 2, 0), 2.0f, "idle", &faller);
    rc = rc != SIM_OK ? rc : scene_character(w, vec(0, 0, 3), 3.0f, "stagger", &partial);
    rc = rc != SIM_OK ? rc : sim_world_spawn_character(w, &dog, &dog_id);
    rc = rc != SIM_OK ? rc : sim_world_spawn_cloth(w, &cloth, &cloth_id);
    rc = rc != SIM_OK ? rc : sim_world_spawn_ragdoll(w, &rag, &rag_id);
    if (rc != SIM_OK) {
        return rc;
    }
    for (int t = 0; t < ticks; ++t) {
        if (t == 20) {
            sim_character_kill(w, walker, vec(-1, 1.5f, 2.3f), vec(0, 10, -40), NULL);
            sim_character_kill(w, faller, vec(1, 3.5f, 0), vec(20, 0, 0), NULL);
            sim_character_kill(w, dog_id, vec(2, 1.5f, 2), vec(0, 0, 0), NULL);
        }
        if (t == 40) {
            sim_character_set_drive(w, faller, 300.0f, 20.0f, NULL, 0, 0.5f);
            uint32_t arm = 4;
            sim_character_set_partial(w, partial, &arm, 1);
            sim_ball_def ball = sim_ball_def_default();
            ball.position = vec(0, 1.2f, 0);
            ball.velocity = vec(0, 0, 15);
            sim_world_spawn_ball(w, &ball, &ball_id);
        }
        if (t == 240) {
            sim_character_start_getup(w, walker, 0.4f, NULL);
        }
        sim_world_step(w);
    }
    return SIM_OK;
}

int sim_scene_pile(sim_world* w, uint32_t n, uint32_t seed, sim_entity_id* ids) {
    uint32_t side = 1;
    while (side * side * side < n) {
        side++;
    }
    const uint32_t per_layer = side * side;
    for (uint32_t i = 0; i < n; ++i) {
        const uint32_t layer = i / per_layer, k = i % per_layer;
        sim_character_def cd = sim_character_def_default();
        cd.position = (sim_vec3){0.7f * ((float)(k % side) - 0.5f * (float)(side - 1)),
                                 0.2f + 1.9f * (float)layer,
                                 0.7f * ((float)(k / side) - 0.5f * (float)(side - 1))};
        cd.facing = (float)(i % 4) * 1.5707963f;
        sim_entity_id id;
        int rc = sim_world_spawn_character(w, &cd, &id);
        if (rc != SIM_OK) {
            return rc;
        }
        if (ids != NULL) {
            ids[i] = id;
        }
        seed = seed * 1664525u + 1013904223u;
        const float px = (float)((int)(seed >> 24) - 128) / 128.0f * 20.0f;
        seed = seed * 1664525u + 1013904223u;
        const float pz = (float)((int)(seed >> 24) - 128) / 128.0f * 20.0f;
        const sim_vec3 hit = {cd.position.x, cd.position.y + 1.4f, cd.position.z};
        rc = sim_character_kill(w, id, hit, (sim_vec3){px, 0.0f, pz}, NULL);
        if (rc != SIM_OK) {
            return rc;
        }
    }
    return SIM_OK;
}
