/*
 * binary.c: the version-1 binary snapshot (PROTOCOL.md §5.2): a fixed
 * little-endian header, then per entity its id, kind, particle count and raw
 * float32 positions. Bytes are packed explicitly (no struct memcpy), so the
 * layout does not depend on the compiler or the host's byte order.
 */
#include "rdp.h"

#include <string.h>

static const uint8_t magic[4] = {'R', 'D', 'S', '1'};

static uint8_t* put_u16(uint8_t* p, uint16_t v) {
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    return p + 2;
}

static uint8_t* put_u32(uint8_t* p, uint32_t v) {
    for (int i = 0; i < 4; ++i) {
        p[i] = (uint8_t)(v >> (8 * i));
    }
    return p + 4;
}

static uint8_t* put_u64(uint8_t* p, uint64_t v) {
    for (int i = 0; i < 8; ++i) {
        p[i] = (uint8_t)(v >> (8 * i));
    }
    return p + 8;
}

static uint8_t* put_f32(uint8_t* p, float f) {
    uint32_t bits;
    memcpy(&bits, &f, sizeof bits);
    return put_u32(p, bits);
}

static uint16_t get_u16(const uint8_t* p) {
    return (uint16_t)(p[0] | (p[1] << 8));
}

static uint32_t get_u32(const uint8_t* p) {
    uint32_t v = 0;
    for (int i = 3; i >= 0; --i) {
        v = (v << 8) | p[i];
    }
    return v;
}

static uint64_t get_u64(const uint8_t* p) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; --i) {
        v = (v << 8) | p[i];
    }
    return v;
}

size_t rdp_snapshot_binary_size(const rdp_snapshot* s) {
    size_t n = RDP_BIN_HEADER_BYTES;
    for (uint32_t k = 0; k < s->entity_count; ++k) {
        const rdp_entity_state* e = &s->entities[k];
        n += RDP_BIN_ENTITY_BYTES + (rdp_kind_is_rigid(e->kind) ? 28u * (size_t)e->body_count
                                                                : 12u * (size_t)e->particle_count);
    }
    return n;
}

size_t rdp_snapshot_binary(const rdp_snapshot* s, uint8_t* buf, size_t cap) {
    size_t need = rdp_snapshot_binary_size(s);
    if (cap < need) {
        return 0;
    }
    uint8_t* p = buf;
    memcpy(p, magic, 4);
    p = put_u16(p + 4, RDP_PROTOCOL_VERSION);
    p = put_u16(p, 0);
    p = put_u64(p, s->world);
    p = put_u64(p, s->tick);
    p = put_u64(p, RDP_BIN_NO_BASELINE);
    p = put_u32(p, s->entity_count);
    p = put_u32(p, 0);
    for (uint32_t k = 0; k < s->entity_count; ++k) {
        const rdp_entity_state* e = &s->entities[k];
        p = put_u64(p, e->entity);
        p[0] = (uint8_t)e->kind;
        p[1] = rdp_state_code(e->state);
        p[2] = p[3] = 0;
        if (rdp_kind_is_rigid(e->kind)) {
            p = put_u32(p + 4, e->body_count);
            for (uint32_t i = 0; i < 7 * e->body_count; ++i) {
                p = put_f32(p, e->pose[i]);
            }
        } else {
            p = put_u32(p + 4, e->particle_count);
            for (uint32_t i = 0; i < 3 * e->particle_count; ++i) {
                p = put_f32(p, e->xyz[i]);
            }
        }
    }
    return (size_t)(p - buf);
}

rdp_code rdp_bin_parse(const uint8_t* buf, size_t len, rdp_bin_header* hdr, rdp_bin_reader* rd) {
    if (buf == NULL || len < RDP_BIN_HEADER_BYTES || memcmp(buf, magic, 4) != 0) {
        return RDP_E_BAD_REQUEST;
    }
    hdr->version = get_u16(buf + 4);
    hdr->flags = get_u16(buf + 6);
    hdr->world = get_u64(buf + 8);
    hdr->tick = get_u64(buf + 16);
    hdr->baseline = get_u64(buf + 24);
    hdr->entity_count = get_u32(buf + 32);
    if (hdr->version != RDP_PROTOCOL_VERSION) {
        return RDP_E_BAD_REQUEST;
    }
    rd->buf = buf;
    rd->len = len;
    rd->off = RDP_BIN_HEADER_BYTES;
    rd->remaining = hdr->entity_count;
    return RDP_OK;
}

int rdp_bin_next(rdp_bin_reader* rd, rdp_bin_entity* out) {
    if (rd->remaining == 0) {
        return rd->off == rd->len ? 0 : -1;
    }
    if (rd->len - rd->off < RDP_BIN_ENTITY_BYTES) {
        return -1;
    }
    const uint8_t* p = rd->buf + rd->off;
    out->entity = get_u64(p);
    out->kind = (rdp_kind)p[8];
    out->state = p[9];
    out->particle_count = get_u32(p + 12);
    size_t body = (rdp_kind_is_rigid(out->kind) ? 28u : 12u) * (size_t)out->particle_count;
    if (rd->len - rd->off - RDP_BIN_ENTITY_BYTES < body) {
        return -1;
    }
    out->xyz = p + RDP_BIN_ENTITY_BYTES;
    rd->off += RDP_BIN_ENTITY_BYTES + body;
    rd->remaining--;
    return 1;
}

void rdp_bin_entity_position(const rdp_bin_entity* e, uint32_t i, float out[3]) {
    for (int k = 0; k < 3; ++k) {
        uint32_t bits = get_u32(e->xyz + 12u * i + 4u * (uint32_t)k);
        memcpy(&out[k], &bits, sizeof bits);
    }
}

void rdp_bin_entity_pose(const rdp_bin_entity* e, uint32_t i, float out[7]) {
    for (int k = 0; k < 7; ++k) {
        uint32_t bits = get_u32(e->xyz + 28u * i + 4u * (uint32_t)k);
        memcpy(&out[k], &bits, sizeof bits);
    }
}

uint8_t rdp_state_code(const char* state) {
    static const char* const names[] = {"animated", "ragdoll", "getting_up", "partial"};
    for (uint8_t i = 0; state != NULL && i < 4; ++i) {
        if (strcmp(state, names[i]) == 0) {
            return i;
        }
    }
    return 0;
}
