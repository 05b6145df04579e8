/*
 * state_file.c: a world's state file as bytes (docs/STATE.md), and the
 * file operations that keep one durable: read whole, write atomically.
 *
 *   envelope  magic "RAGDOLLD", kind 1, format version, physics version,
 *             CRC-32 (zlib) of the body, body length          32 bytes
 *   body      the world: id, journal sequence, tick rate, solver,
 *             limits, name, who spawned each entity, the commands
 *             waiting for its next tick; then the simulator's state
 *             (sim_world_save(), server/sim/state.c)
 *
 * An atomic write (Redis's rdbSave): the bytes go to a temporary file in
 * the same directory, which is fsync'd and renamed over the old name, and
 * the directory is fsync'd, so a crash at any instant leaves either the
 * old file or the new one, whole.
 */
#include "app_internal.h"
#include "persist.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "state files are little-endian");

#define ENVELOPE_BYTES 32u
static const char k_magic[8] = {'R', 'A', 'G', 'D', 'O', 'L', 'L', 'D'};

// ---------------------------------------------------------------------------
// Bytes
// ---------------------------------------------------------------------------

typedef struct wbuf {
    uint8_t* p;
    size_t len, cap;
    bool failed;
} wbuf;

static void wput(wbuf* b, const void* data, size_t n) {
    if (b->failed) {
        return;
    }
    if (b->len + n > b->cap) {
        size_t cap = b->cap < 4096 ? 4096 : b->cap;
        while (cap < b->len + n) {
            cap *= 2;
        }
        uint8_t* p = realloc(b->p, cap);
        if (p == NULL) {
            b->failed = true;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->len, data, n);
    b->len += n;
}

// Room for n more bytes at the end; NULL (and b->failed) without memory.
static uint8_t* wreserve(wbuf* b, size_t n) {
    const size_t at = b->len;
    uint8_t none = 0;
    wput(b, &none, 0);
    if (!b->failed && b->len + n > b->cap) {
        size_t cap = b->cap < 4096 ? 4096 : b->cap;
        while (cap < b->len + n) {
            cap *= 2;
        }
        uint8_t* p = realloc(b->p, cap);
        if (p == NULL) {
            b->failed = true;
        } else {
            b->p = p;
            b->cap = cap;
        }
    }
    if (b->failed) {
        return NULL;
    }
    b->len += n;
    return b->p + at;
}

static void w32(wbuf* b, uint32_t v) {
    wput(b, &v, sizeof v);
}

static void w64(wbuf* b, uint64_t v) {
    wput(b, &v, sizeof v);
}

typedef struct rbuf {
    const uint8_t* p;
    size_t len, at;
    bool short_read;
} rbuf;

static bool rget(rbuf* r, void* out, size_t n) {
    if (r->short_read || r->len - r->at < n) {
        r->short_read = true;
        memset(out, 0, n);
        return false;
    }
    memcpy(out, r->p + r->at, n);
    r->at += n;
    return true;
}

static uint32_t r32(rbuf* r) {
    uint32_t v = 0;
    rget(r, &v, sizeof v);
    return v;
}

static uint64_t r64(rbuf* r) {
    uint64_t v = 0;
    rget(r, &v, sizeof v);
    return v;
}

uint32_t app__crc32(const void* data, size_t len) {
    uLong crc = crc32(0L, Z_NULL, 0);
    const uint8_t* p = data;
    while (len > 0) { // zlib takes uInt lengths
        uInt n = len > (1u << 30) ? (1u << 30) : (uInt)len;
        crc = crc32(crc, p, n);
        p += n;
        len -= n;
    }
    return (uint32_t)crc;
}

// ---------------------------------------------------------------------------
// Encoding
// ---------------------------------------------------------------------------

int app__state_encode(const app_world* w, uint8_t** out, size_t* out_len) {
    size_t sim_len = 0;
    if (sim_world_save(w->sim, NULL, 0, &sim_len) != SIM_E_CAPACITY) {
        return -1;
    }
    wbuf b = {0};
    uint8_t env[ENVELOPE_BYTES] = {0};
    wput(&b, env, sizeof env); // filled in at the end
    w64(&b, w->id);
    w64(&b, w->seq);
    w32(&b, w->tick_hz);
    w32(&b, (uint32_t)w->def.solver);
    uint32_t limits[RDP_LIMIT_COUNT];
    app__limits_of(&w->def, limits);
    w32(&b, RDP_LIMIT_COUNT);
    for (uint32_t i = 0; i < RDP_LIMIT_COUNT; ++i) {
        w32(&b, limits[i]);
    }
    char name[RDP_MAX_NAME + 1];
    memset(name, 0, sizeof name);
    snprintf(name, sizeof name, "%s", w->name);
    wput(&b, name, sizeof name);
    w32(&b, w->def.max_entities);
    for (uint32_t i = 0; i < w->def.max_entities; ++i) {
        w64(&b, w->owners[i]);
    }
    w32(&b, w->inbox_count);
    w32(&b, (uint32_t)sizeof(rdp_command));
    for (uint32_t k = 0; k < w->inbox_count; ++k) {
        const app_cmd* e = &w->inbox[(w->inbox_head + k) % w->inbox_cap];
        w32(&b, (uint32_t)e->role);
        w64(&b, e->owner);
        wput(&b, &e->cmd, sizeof e->cmd);
    }
    w64(&b, sim_len);
    uint8_t* at = wreserve(&b, sim_len);
    size_t wrote = 0;
    if (at != NULL && sim_world_save(w->sim, at, sim_len, &wrote) != SIM_OK) {
        b.failed = true;
    }
    if (b.failed) {
        free(b.p);
        return -1;
    }
    const uint64_t body_len = b.len - ENVELOPE_BYTES;
    const uint32_t kind = 1, version = APP_STATE_VERSION, physics = SIM_PHYSICS_VERSION;
    const uint32_t crc = app__crc32(b.p + ENVELOPE_BYTES, body_len);
    memcpy(b.p, k_magic, 8);
    memcpy(b.p + 8, &kind, 4);
    memcpy(b.p + 12, &version, 4);
    memcpy(b.p + 16, &physics, 4);
    memcpy(b.p + 20, &crc, 4);
    memcpy(b.p + 24, &body_len, 8);
    *out = b.p;
    *out_len = b.len;
    return 0;
}

// ---------------------------------------------------------------------------
// Decoding
// ---------------------------------------------------------------------------

void app__state_free(app_state* s) {
    if (s == NULL) {
        return;
    }
    sim_world_destroy(s->sim);
    free(s->owners);
    free(s->inbox);
    memset(s, 0, sizeof *s);
}

__attribute__((format(printf, 3, 4))) static int refuse(char* why, size_t cap, const char* fmt,
                                                        ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, cap, fmt, ap);
    va_end(ap);
    return -1;
}

int app__state_decode(const uint8_t* p, size_t len, const sim_library* lib, app_state* out,
                      char* why, size_t cap) {
    memset(out, 0, sizeof *out);
    if (len < sizeof k_magic || memcmp(p, k_magic, sizeof k_magic) != 0) {
        return refuse(why, cap, "not a ragdolld state file (no RAGDOLLD magic)");
    }
    if (len < ENVELOPE_BYTES) {
        return refuse(why, cap, "truncated: %zu bytes, shorter than the %u-byte header", len,
                      ENVELOPE_BYTES);
    }
    uint32_t kind, version, physics, crc;
    uint64_t body_len;
    memcpy(&kind, p + 8, 4);
    memcpy(&version, p + 12, 4);
    memcpy(&physics, p + 16, 4);
    memcpy(&crc, p + 20, 4);
    memcpy(&body_len, p + 24, 8);
    if (kind != 1) {
        return refuse(why, cap, "not a world state (kind %u)", kind);
    }
    if (version != APP_STATE_VERSION || physics != SIM_PHYSICS_VERSION) {
        return refuse(why, cap,
                      "format version %u, physics version %u; this build reads format version "
                      "%u, physics version %u",
                      version, physics, APP_STATE_VERSION, SIM_PHYSICS_VERSION);
    }
    if (body_len != len - ENVELOPE_BYTES) {
        return refuse(why, cap, "truncated or padded: the header says %llu bytes, the file has %zu",
                      (unsigned long long)(body_len + ENVELOPE_BYTES), len);
    }
    const uint32_t have = app__crc32(p + ENVELOPE_BYTES, body_len);
    if (have != crc) {
        return refuse(why, cap, "corrupt: CRC-32 of the body is %08x, the header says %08x", have,
                      crc);
    }
    rbuf r = {p + ENVELOPE_BYTES, body_len, 0, false};
    out->id = r64(&r);
    out->seq = r64(&r);
    out->tick_hz = r32(&r);
    out->solver = r32(&r);
    const uint32_t nlim = r32(&r);
    if (nlim != RDP_LIMIT_COUNT) {
        return refuse(why, cap, "%u limits where this build has %u", nlim, RDP_LIMIT_COUNT);
    }
    for (uint32_t i = 0; i < RDP_LIMIT_COUNT; ++i) {
        out->limits[i] = r32(&r);
    }
    rget(&r, out->name, sizeof out->name);
    out->name[RDP_MAX_NAME] = '\0';
    if (out->id == 0 || out->tick_hz < 1 || out->tick_hz > 240 || out->name[0] == '\0' ||
        (out->solver != SIM_SOLVER_XPBD && out->solver != SIM_SOLVER_SOFT_STEP)) {
        return refuse(why, cap, "the world's id, name, tick rate or solver is invalid");
    }
    const uint32_t n_owners = r32(&r);
    if (n_owners > (uint32_t)RDP_MAX_LIMIT || (uint64_t)n_owners * 8 > r.len - r.at) {
        return refuse(why, cap, "truncated in the entities' owners");
    }
    out->owner_count = n_owners;
    out->owners = calloc(n_owners + 1, sizeof *out->owners);
    if (out->owners == NULL) {
        return refuse(why, cap, "out of memory");
    }
    for (uint32_t i = 0; i < n_owners; ++i) {
        out->owners[i] = r64(&r);
    }
    const uint32_t n_cmds = r32(&r), cmd_size = r32(&r);
    if (cmd_size != sizeof(rdp_command)) {
        app__state_free(out);
        return refuse(why, cap, "commands of %u bytes where this build's are %zu", cmd_size,
                      sizeof(rdp_command));
    }
    if ((uint64_t)n_cmds * (12 + sizeof(rdp_command)) > r.len - r.at) {
        app__state_free(out);
        return refuse(why, cap, "truncated in the queued commands");
    }
    out->inbox_count = n_cmds;
    out->inbox = calloc(n_cmds + 1, sizeof *out->inbox);
    if (out->inbox == NULL) {
        app__state_free(out);
        return refuse(why, cap, "out of memory");
    }
    for (uint32_t k = 0; k < n_cmds; ++k) {
        app_cmd* e = &out->inbox[k];
        const uint32_t role = r32(&r);
        e->role = role <= APP_ROLE_ADMIN ? (app_role)role : APP_ROLE_NONE;
        e->owner = r64(&r);
        rget(&r, &e->cmd, sizeof e->cmd);
    }
    const uint64_t sim_len = r64(&r);
    if (r.short_read || sim_len != r.len - r.at) {
        app__state_free(out);
        return refuse(why, cap, "truncated before the simulator's state");
    }
    char simwhy[256] = "";
    int rc = sim_world_load(r.p + r.at, sim_len, lib, NULL, &out->sim, simwhy, sizeof simwhy);
    if (rc != SIM_OK) {
        app__state_free(out);
        return refuse(why, cap, "%s", simwhy[0] != '\0' ? simwhy : sim_strerror(rc));
    }
    return 0;
}

// ---------------------------------------------------------------------------
// Files
// ---------------------------------------------------------------------------

int app__file_read(const char* path, uint8_t** out, size_t* len, char* why, size_t cap) {
    // Non-blocking: a FIFO by that name must not hang the start (it is
    // refused below as not a regular file).
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        return refuse(why, cap, "cannot open: %s", strerror(errno));
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return refuse(why, cap, "not a regular file");
    }
    size_t n = (size_t)st.st_size;
    uint8_t* p = malloc(n + 1);
    if (p == NULL) {
        close(fd);
        return refuse(why, cap, "out of memory for %zu bytes", n);
    }
    size_t got = 0;
    while (got < n) {
        ssize_t k = read(fd, p + got, n - got);
        if (k < 0 && errno == EINTR) {
            continue;
        }
        if (k <= 0) {
            break;
        }
        got += (size_t)k;
    }
    close(fd);
    *out = p;
    *len = got;
    return 0;
}

static int fsync_dir(const char* dir) {
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
        return -1;
    }
    int rc = fsync(fd);
    close(fd);
    return rc;
}

int app__file_write_atomic(const char* dir, const char* name, const void* data, size_t len,
                           char* why, size_t cap) {
    char path[4096], tmp[4096];
    if (snprintf(path, sizeof path, "%s/%s", dir, name) >= (int)sizeof path ||
        snprintf(tmp, sizeof tmp, "%s/.%s.tmp", dir, name) >= (int)sizeof tmp) {
        return refuse(why, cap, "path too long");
    }
    // A temporary file left by a crash (or a link someone planted there)
    // goes first: the new one is made afresh, never through a link.
    unlink(tmp);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0) {
        return refuse(why, cap, "cannot create %s: %s", tmp, strerror(errno));
    }
    const uint8_t* p = data;
    size_t done = 0;
    while (done < len) {
        ssize_t k = write(fd, p + done, len - done);
        if (k < 0 && errno == EINTR) {
            continue;
        }
        if (k < 0) {
            int e = errno;
            close(fd);
            unlink(tmp);
            return refuse(why, cap, "cannot write %s: %s", tmp, strerror(e));
        }
        done += (size_t)k;
    }
    if (fsync(fd) != 0) {
        int e = errno;
        close(fd);
        unlink(tmp);
        return refuse(why, cap, "cannot fsync %s: %s", tmp, strerror(e));
    }
    close(fd);
    if (rename(tmp, path) != 0) {
        int e = errno;
        unlink(tmp);
        return refuse(why, cap, "cannot rename %s to %s: %s", tmp, path, strerror(e));
    }
    if (fsync_dir(dir) != 0) {
        return refuse(why, cap, "cannot fsync the directory %s: %s", dir, strerror(errno));
    }
    return 0;
}
