/*
 * golden_gen.c: writes the golden vectors of binary snapshots (version 3)
 * that the C and JavaScript decoders both check: protocol/golden/frameN.bin and
 * vectors.json, which lists each frame's file, size, wire tick and the
 * values it was encoded from (positions in m, orientations x, y, z, w).
 *
 * A small fixed world: a rope, a ball and a four-bone character, over four
 * frames: a full one at tick 65534, deltas across the 16-bit wrap (65535,
 * then 1 against 65535), and one where a new rope appears and the ball is
 * gone; then the same four as partial frames (interest management), each
 * entity against its own baseline. Run it only to change the format on
 * purpose:
 *
 *   build/tests/unit/golden_gen protocol/golden
 */
#include "rdp.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct frame {
    uint64_t tick;
    int base; // index of the baseline frame, -1 for none
    bool with_ball, with_rope2;
} frame;

static float rope[3 * 5], rope2[3 * 3], ball[7], chr[7 * 4];
static const int parents[4] = {-1, 0, 1, 0};
static const float anchors[6 * 4] = {0,    0, 0, 0,      0, 0, 0.1f,  0,     0, -0.2f, 0, 0,
                                     0.2f, 0, 0, -0.15f, 0, 0, -0.1f, 0.05f, 0, 0.25f, 0, 0};

static void axis_angle(float* q, double ax, double ay, double az, double a) {
    double n = sqrt(ax * ax + ay * ay + az * az), s = sin(a / 2) / n;
    q[0] = (float)(ax * s);
    q[1] = (float)(ay * s);
    q[2] = (float)(az * s);
    q[3] = (float)cos(a / 2);
}

// The world at frame f: everything moves a little each frame.
static void pose_at(int f) {
    for (int i = 0; i < 5; ++i) {
        rope[3 * i] = 1.0f + 0.3f * (float)i;
        rope[3 * i + 1] = 2.0f - 0.01f * (float)(f * i);
        rope[3 * i + 2] = -0.5f + 0.002f * (float)f;
    }
    for (int i = 0; i < 3; ++i) {
        rope2[3 * i] = -3.0f;
        rope2[3 * i + 1] = 1.0f + 0.25f * (float)i;
        rope2[3 * i + 2] = 0.125f * (float)f;
    }
    ball[0] = 0.5f + 0.1f * (float)f;
    ball[1] = 0.2f;
    ball[2] = 4.0f;
    axis_angle(ball + 3, 0, 0, 1, -0.5 * f);
    // Character: a root and a chain of two, plus a side bone, posed by FK
    // with small joint gaps (what a solver leaves).
    double rootq[4];
    float q0[4];
    axis_angle(q0, 0, 1, 0, 0.3 + 0.05 * f);
    for (int c = 0; c < 4; ++c) {
        rootq[c] = q0[c];
    }
    (void)rootq;
    chr[0] = -1.0f;
    chr[1] = 0.9f - 0.02f * (float)f;
    chr[2] = 2.0f;
    memcpy(chr + 3, q0, sizeof q0);
    for (int i = 1; i < 4; ++i) {
        float* p = chr + 7 * i;
        float qi[4];
        axis_angle(qi, 1, 0.2 * i, 0, 0.2 * i + 0.07 * f);
        memcpy(p + 3, qi, sizeof qi);
        const float* pp = chr + 7 * parents[i];
        // p = pp + rot(qp, ap) - rot(qi, ac) + gap
        const float* ap = anchors + 6 * i;
        const float* ac = ap + 3;
        float ra[3], rc[3];
        const float* qp = pp + 3;
        for (int pass = 0; pass < 2; ++pass) {
            const float* q = pass == 0 ? qp : qi;
            const float* v = pass == 0 ? ap : ac;
            float* o = pass == 0 ? ra : rc;
            float t[3] = {2 * (q[1] * v[2] - q[2] * v[1]), 2 * (q[2] * v[0] - q[0] * v[2]),
                          2 * (q[0] * v[1] - q[1] * v[0])};
            o[0] = v[0] + q[3] * t[0] + q[1] * t[2] - q[2] * t[1];
            o[1] = v[1] + q[3] * t[1] + q[2] * t[0] - q[0] * t[2];
            o[2] = v[2] + q[3] * t[2] + q[0] * t[1] - q[1] * t[0];
        }
        for (int c = 0; c < 3; ++c) {
            p[c] = pp[c] + ra[c] - rc[c] + 0.0013f * (float)(c + 1);
        }
    }
}

// The values each frame was made from, per entity (index 1..4), for the
// partial frames' views.
static float made[4][5][28];

static void print_values(FILE* f, const float* v, int n) {
    fprintf(f, "[");
    for (int i = 0; i < n; ++i) {
        fprintf(f, "%s%.9g", i ? ", " : "", (double)v[i]);
    }
    fprintf(f, "]");
}

// Writes DIR/<name>N.bin: the len bytes of a frame (0: encoding failed).
static int write_frame(const char* dir, const char* name, int n, const uint8_t* buf, size_t len) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s%d.bin", dir, name, n);
    FILE* out = fopen(path, "wb");
    if (out == NULL || len == 0 || fwrite(buf, 1, len, out) != len) {
        perror(path);
        if (out != NULL) {
            fclose(out);
        }
        return 1;
    }
    return fclose(out) == 0 ? 0 : 1;
}

// Partial frames (PROTOCOL.md §5.2) of the same four snapshots, decoded in
// order by a fresh decoder: which entities each carries, against which
// frame, and what is removed. Entities are named by their index (1 rope, 2
// ball, 3 character, 4 second rope).
typedef struct pcarry {
    int entity;
    int base; // frame whose copy is the baseline, -1: none
} pcarry;

typedef struct pframe {
    bool reset;
    int removed; // entity index, 0: none
    pcarry carry[3];
} pframe;

static const pframe pframes[4] = {
    {true, 0, {{1, -1}, {3, -1}, {0, 0}}}, // tick 65534: rope and character, whole
    {false, 0, {{2, -1}, {1, 0}, {0, 0}}}, // 65535: the ball new, the rope against 65534
    {false, 0, {{3, 0}, {2, 1}, {0, 0}}},  // 1: the character against 65534, the ball 65535
    {false, 2, {{4, -1}, {1, 1}, {0, 0}}}, // 4: the ball gone, a new rope, the rope against 65535
};

static uint64_t id_of(int index) {
    return ((index == 3 ? 3ull : 1ull) << 32) | (uint64_t)index;
}

static const rdp_qentity* entity_in(const rdp_qsnap* q, int index, uint32_t* k) {
    for (uint32_t i = 0; i < q->entity_count; ++i) {
        if (q->ents[i].id == id_of(index)) {
            *k = i;
            return &q->ents[i];
        }
    }
    return NULL;
}

static int write_partial(const char* dir, FILE* js, rdp_qsnap* const* q) {
    int last[5] = {-1, -1, -1, -1, -1}; // frame that last carried each entity
    fprintf(js, " \"partial\": [\n");
    for (int f = 0; f < 4; ++f) {
        const pframe* pf = &pframes[f];
        uint64_t removed = id_of(pf->removed);
        uint8_t buf[4096];
        rdp_pwriter pw;
        if (!rdp_partial_begin(&pw, q[f], pf->reset, &removed, pf->removed != 0, buf, sizeof buf)) {
            return 1;
        }
        if (pf->reset) {
            memset(last, -1, sizeof last);
        }
        if (pf->removed != 0) {
            last[pf->removed] = -1;
        }
        for (int c = 0; c < 3 && pf->carry[c].entity != 0; ++c) {
            uint32_t k = 0, bk = 0;
            int b = pf->carry[c].base;
            if (entity_in(q[f], pf->carry[c].entity, &k) == NULL ||
                (b >= 0 && entity_in(q[b], pf->carry[c].entity, &bk) == NULL) ||
                rdp_partial_add(&pw, k, b >= 0 ? q[b] : NULL, bk, sizeof buf) != 1) {
                return 1;
            }
            last[pf->carry[c].entity] = f;
        }
        size_t len = rdp_partial_end(&pw);
        if (write_frame(dir, "partial", f, buf, len) != 0) {
            return 1;
        }
        fprintf(js,
                "  {\"file\": \"partial%d.bin\", \"bytes\": %zu, \"tick16\": %u, \"reset\": %s, "
                "\"removed\": [",
                f, len, (unsigned)(q[f]->tick & 0xffff), pf->reset ? "true" : "false");
        if (pf->removed != 0) {
            fprintf(js, "%llu", (unsigned long long)removed);
        }
        fprintf(js, "], \"carried\": [");
        for (int c = 0; c < 3 && pf->carry[c].entity != 0; ++c) {
            fprintf(js, "%s%llu", c ? ", " : "", (unsigned long long)id_of(pf->carry[c].entity));
        }
        fprintf(js, "],\n   \"view\": [\n");
        bool first = true;
        for (int i = 1; i <= 4; ++i) {
            if (last[i] < 0) {
                continue;
            }
            uint32_t k = 0;
            const rdp_qsnap* src = q[last[i]];
            const rdp_qentity* qe = entity_in(src, i, &k);
            if (qe == NULL) {
                return 1;
            }
            int per = rdp_kind_is_rigid((rdp_kind)qe->kind) ? 7 : 3;
            fprintf(js,
                    "%s    {\"entity\": %llu, \"kind\": %d, \"state\": %s, \"tick16\": %u, "
                    "\"values\": ",
                    first ? "" : ",\n", (unsigned long long)qe->id, qe->kind,
                    qe->kind == RDP_KIND_CHARACTER ? (last[i] < 2 ? "\"animated\"" : "\"ragdoll\"")
                                                   : "null",
                    (unsigned)(src->tick & 0xffff));
            print_values(js, made[last[i]][i], per * (int)qe->count);
            fprintf(js, ",\n     \"ints\": [");
            for (int v = 0; v < per * (int)qe->count; ++v) {
                fprintf(js, "%s%d", v ? ", " : "", src->vals[qe->offset + (uint32_t)v]);
            }
            fprintf(js, "]}");
            first = false;
        }
        fprintf(js, "\n   ]}%s\n", f + 1 < 4 ? "," : "");
    }
    fprintf(js, " ]\n");
    return 0;
}

int main(int argc, char** argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: golden_gen DIR\n");
        return 2;
    }
    const frame frames[] = {{65534, -1, true, false},
                            {65535, 0, true, false},
                            {65537, 1, true, false},
                            {65540, 2, false, true}};
    const int nf = (int)(sizeof frames / sizeof frames[0]);
    rdp_qsnap* q[4];
    char path[1024];
    snprintf(path, sizeof path, "%s/vectors.json", argv[1]);
    FILE* js = fopen(path, "w");
    if (js == NULL) {
        perror(path);
        return 1;
    }
    fprintf(js,
            "{\"format\": \"ragdolld binary snapshots, version %d (PROTOCOL.md 5.2)\",\n"
            " \"frames\": [\n",
            RDP_SNAPSHOT_VERSION);
    for (int f = 0; f < nf; ++f) {
        pose_at(f);
        rdp_entity_state e[4];
        memset(e, 0, sizeof e);
        int n = 0;
        e[n].entity = (1ull << 32) | 1;
        e[n].kind = RDP_KIND_ROPE;
        e[n].particle_count = 5;
        e[n++].xyz = rope;
        if (frames[f].with_ball) {
            e[n].entity = (1ull << 32) | 2;
            e[n].kind = RDP_KIND_BALL;
            e[n].body_count = 1;
            e[n++].pose = ball;
        }
        e[n].entity = (3ull << 32) | 3;
        e[n].kind = RDP_KIND_CHARACTER;
        e[n].body_count = 4;
        e[n].pose = chr;
        e[n].state = f < 2 ? "animated" : "ragdoll";
        e[n].parents = parents;
        e[n++].anchors = anchors;
        if (frames[f].with_rope2) {
            e[n].entity = (1ull << 32) | 4;
            e[n].kind = RDP_KIND_ROPE;
            e[n].particle_count = 3;
            e[n++].xyz = rope2;
        }
        rdp_snapshot s;
        memset(&s, 0, sizeof s);
        s.world = 3;
        s.tick = frames[f].tick;
        s.entity_count = (uint32_t)n;
        s.entities = e;
        q[f] = rdp_qsnap_new();
        if (rdp_quantize(&s, q[f]) != 0) {
            return 1;
        }
        uint8_t buf[4096];
        size_t len =
            rdp_encode(q[f], frames[f].base >= 0 ? q[frames[f].base] : NULL, buf, sizeof buf);
        if (write_frame(argv[1], "frame", f, buf, len) != 0) {
            return 1;
        }
        fprintf(js,
                "  {\"file\": \"frame%d.bin\", \"bytes\": %zu, \"tick\": %llu, \"tick16\": %u, "
                "\"baseline16\": %s,\n   \"entities\": [\n",
                f, len, (unsigned long long)frames[f].tick, (unsigned)(frames[f].tick & 0xffff),
                frames[f].base >= 0
                    ? (frames[f].base == 0 ? "65534" : (frames[f].base == 1 ? "65535" : "1"))
                    : "null");
        for (int k = 0; k < n; ++k) {
            fprintf(js, "    {\"entity\": %llu, \"kind\": %d, \"state\": %s, \"values\": ",
                    (unsigned long long)e[k].entity, e[k].kind,
                    e[k].kind == RDP_KIND_CHARACTER ? (f < 2 ? "\"animated\"" : "\"ragdoll\"")
                                                    : "null");
            const float* src = rdp_kind_is_rigid(e[k].kind) ? e[k].pose : e[k].xyz;
            int nv = rdp_kind_is_rigid(e[k].kind) ? 7 * (int)e[k].body_count
                                                  : 3 * (int)e[k].particle_count;
            print_values(js, src, nv);
            memcpy(made[f][e[k].entity & 0xffffffffu], src, (size_t)nv * sizeof *src);
            // The integers on the wire, which both decoders must reproduce.
            const rdp_qentity* qe = &q[f]->ents[k];
            int per = rdp_kind_is_rigid(e[k].kind) ? 7 : 3;
            fprintf(js, ",\n     \"ints\": [");
            for (int i = 0; i < per * (int)qe->count; ++i) {
                fprintf(js, "%s%d", i ? ", " : "", q[f]->vals[qe->offset + (uint32_t)i]);
            }
            fprintf(js, "]}%s\n", k + 1 < n ? "," : "");
        }
        fprintf(js, "   ]}%s\n", f + 1 < nf ? "," : "");
    }
    fprintf(js, " ],\n");
    if (write_partial(argv[1], js, q) != 0) {
        return 1;
    }
    fprintf(js, "}\n");
    fclose(js);
    for (int f = 0; f < nf; ++f) {
        rdp_qsnap_free(q[f]);
    }
    return 0;
}
