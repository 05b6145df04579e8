/*
 * scene_hash.c: runs a fixed scene that uses every kind of entity and every
 * character command, and prints the world's state hash (sim_world_hash) as
 * 16 hex digits. CMake builds it twice, optimised and at -O0, and ctest
 * checks that both print the same: no fast-math, no FMA contraction
 * (-ffp-contract=off), so the build type must not change a single bit.
 *
 * Usage: scene_hash ASSETS_DIR
 */
#include "assets.h"
#include "sim.h"

#include <inttypes.h>
#include <stdio.h>

static sim_vec3 v(float x, float y, float z) {
    sim_vec3 r = {x, y, z};
    return r;
}

static sim_entity_id character(sim_world* w, sim_vec3 at, float facing, const char* clip) {
    sim_character_def cd = sim_character_def_default();
    cd.position = at;
    cd.facing = facing;
    cd.clip = clip;
    sim_entity_id id = {0, 0};
    if (sim_world_spawn_character(w, &cd, &id) != SIM_OK) {
        fprintf(stderr, "scene_hash: cannot spawn a character\n");
    }
    return id;
}

int main(int argc, char** argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: scene_hash ASSETS_DIR\n");
        return 2;
    }
    sim_library* lib = NULL;
    char err[256];
    if (sim_library_create(&lib) != SIM_OK || app_assets_load(argv[1], lib, err, sizeof err) != 0) {
        fprintf(stderr, "scene_hash: %s\n", err);
        return 1;
    }
    sim_world_def def = sim_world_def_default();
    def.library = lib;
    def.params.substeps = 4;
    sim_world* w = NULL;
    if (sim_world_create(&def, &w) != SIM_OK) {
        return 1;
    }
    for (int k = 0; k < 4; ++k) {
        sim_box step = {v(0, 0.1f * (float)(k + 1), 0.3f * (float)k - 0.5f),
                        v(2.0f, 0.1f * (float)(k + 1), 0.15f)};
        sim_world_add_box(w, step);
    }
    sim_entity_id walker = character(w, v(-1, 0, 2), 0.0f, "walk");
    sim_entity_id faller = character(w, v(1, 2, 0), 2.0f, "idle");
    sim_entity_id partial = character(w, v(0, 0, 3), 3.0f, "stagger");
    sim_character_def dog = sim_character_def_default();
    dog.skeleton = "dog";
    dog.position = v(2, 1, 2);
    sim_entity_id dog_id;
    sim_world_spawn_character(w, &dog, &dog_id);
    sim_cloth_def cloth = sim_cloth_def_default();
    cloth.origin = v(-1, 3, -1);
    cloth.cols = 8;
    cloth.rows = 8;
    sim_entity_id cloth_id;
    sim_world_spawn_cloth(w, &cloth, &cloth_id);
    sim_ragdoll_def rag = sim_ragdoll_def_default();
    rag.position = v(0, 4, 0);
    sim_entity_id rag_id;
    sim_world_spawn_ragdoll(w, &rag, &rag_id);

    for (int t = 0; t < 360; ++t) {
        if (t == 20) {
            sim_character_kill(w, walker, v(-1, 1.5f, 2.3f), v(0, 10, -40), NULL);
            sim_character_kill(w, faller, v(1, 3.5f, 0), v(20, 0, 0), NULL);
            sim_character_kill(w, dog_id, v(2, 1.5f, 2), v(0, 0, 0), NULL);
        }
        if (t == 40) {
            sim_character_set_drive(w, faller, 300.0f, 20.0f, NULL, 0, 0.5f);
            uint32_t arm = 4;
            sim_character_set_partial(w, partial, &arm, 1);
            sim_ball_def ball = sim_ball_def_default();
            ball.position = v(0, 1.2f, 0);
            ball.velocity = v(0, 0, 15);
            sim_entity_id ball_id;
            sim_world_spawn_ball(w, &ball, &ball_id);
        }
        if (t == 240) {
            sim_character_start_getup(w, walker, 0.4f, NULL);
        }
        sim_world_step(w);
    }
    printf("%016" PRIx64 "\n", sim_world_hash(w));
    sim_world_destroy(w);
    sim_library_destroy(lib);
    return 0;
}
