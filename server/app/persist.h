/*
 * persist.h: durable worlds (issue 11; docs/STATE.md). A world's state
 * file (state_file.c) holds everything its continuation depends on; the
 * server writes them (persist.c) when a world is made, every --autosave
 * seconds, on save_world and at shutdown, and loads them at start.
 *
 * Loop thread only, except the file writes, which run on libuv's
 * threadpool with bytes encoded on the loop thread at a tick boundary.
 */
#pragma once

#include "app_internal.h"

/// The version of the state file's envelope and world section; a file of
/// another version is refused.
#define APP_STATE_VERSION 1u

/// A world as its state file holds it (app__state_decode()).
typedef struct app_state {
    uint64_t id;  ///< The world's id (ids are never reused).
    uint64_t seq; ///< Commands applied to it so far (the journal's sequence).
    uint32_t tick_hz;
    uint32_t solver; ///< sim_solver.
    uint32_t limits[RDP_LIMIT_COUNT];
    char name[RDP_MAX_NAME + 1];
    uint64_t* owners; ///< Who spawned each entity, by slot (owner_count).
    uint32_t owner_count;
    app_cmd* inbox; ///< Commands waiting for its next tick (client NULL).
    uint32_t inbox_count;
    sim_world* sim; ///< Owned until taken (set to NULL by the taker).
} app_state;

/// The state file of world w (idle, at a tick boundary) in a new buffer
/// (*out, *len; free() it). Returns 0, or -1 when out of memory.
int app__state_encode(const app_world* w, uint8_t** out, size_t* len);

/// Reads a state file's bytes into *out, its simulator world made with
/// skeletons from lib. Returns 0, or -1 with one line in why (cap bytes)
/// saying what is wrong: truncated, not a state file, another version, a
/// CRC mismatch, a skeleton missing or changed, ... (*out is then empty).
int app__state_decode(const uint8_t* p, size_t len, const sim_library* lib, app_state* out,
                      char* why, size_t cap);

/// Frees what *s holds that was not taken. NULL is allowed.
void app__state_free(app_state* s);

/// CRC-32 (zlib's, the IEEE polynomial) of len bytes.
uint32_t app__crc32(const void* data, size_t len);

/// Reads a whole regular file into a new buffer (*out, *len; free() it).
/// Returns 0, or -1 with the reason in why.
int app__file_read(const char* path, uint8_t** out, size_t* len, char* why, size_t cap);

/// Writes dir/name atomically: to dir/.name.tmp, fsync, rename over
/// dir/name, fsync dir. A crash at any instant leaves the old file or the
/// new one whole. Returns 0, or -1 with the reason in why. Blocking.
int app__file_write_atomic(const char* dir, const char* name, const void* data, size_t len,
                           char* why, size_t cap);

// ---------------------------------------------------------------------------
// persist.c: when states are written and read
// ---------------------------------------------------------------------------

/// One state file being written (persist.c). Opaque here.
typedef struct app_save app_save;

/// At start (cfg.state_dir set), before anything is read: takes the state
/// dir for this process (flock() of DIR/.lock, which holds its pid), so
/// that two servers never write the same worlds' files; the lock goes
/// with the process, a kill -9 included. Returns 0 (also without a state
/// dir), or -1 with why naming the other process.
int app__persist_lock(app_server* app, char* why, size_t cap);

/// Lets go of the state dir (app_free()).
void app__persist_unlock(app_server* app);

/// Once a second (`now`: uv_hrtime()): the state dir's lock is still this
/// server's. When the directory was replaced (its .lock gone or another
/// file), the lock is taken again and every world written afresh; when
/// another server has taken it, every world is down and nothing more is
/// written (state_dir_taken) until the lock is this server's again.
void app__persist_check_lock(app_server* app, uint64_t now);

/// At start (cfg.state_dir set): loads every world-ID.state in the
/// directory; a file that cannot be read or is refused is logged with the
/// reason and left where it is, and the server starts with the rest. Sets
/// next_world_id past every id seen. Returns the worlds loaded.
uint32_t app__persist_load_all(app_server* app);

/// A world was just made (not loaded): its first state file is written now
/// (blocking; a new world is small), so it outlives a crash from here on.
/// Returns 0, or -1 with why (cap bytes) when it could not be written: the
/// world's journal is then down (create_world destroys it instead).
int app__persist_world_created(app_server* app, app_world* w, char* why, size_t cap);

/// destroy_world: w's state file and journal are removed (a write in
/// flight is removed when it lands). Call before app__world_destroy().
void app__persist_remove_files(app_server* app, app_world* w);

/// w is being freed (app__world_destroy(), whatever the reason): a write in
/// flight lets go of it, and whoever waits for a save is told it is gone.
/// Its files stay (a shutdown has just saved them).
void app__persist_world_gone(app_server* app, app_world* w);

/// At w's tick boundary (idle, before its commands apply): starts a save
/// when one is due (--autosave) or asked for (save_world).
void app__persist_tick(app_server* app, app_world* w);

/// save_world from c: the state is written at w's next tick boundary (now,
/// when w is idle) and c answered once it is durable.
void app__persist_request(app_server* app, app_world* w, app_client* c, const rdp_command* cmd);

/// c has gone: nothing will be answered to it.
void app__persist_client_gone(app_server* app, app_client* c);

/// Shutdown (the workers are stopped, every world idle): waits for the
/// writes in flight, writes every world's state, then calls done(app).
void app__persist_shutdown(app_server* app, void (*done)(app_server* app));

/// Encodes and writes w's state file now, blocking (w idle, at a tick
/// boundary); the journal then starts afresh from it. Returns 0, or -1
/// (logged as save_failed) with the reason in why when not NULL.
int app__persist_save_now(app_server* app, app_world* w, char* why, size_t cap);

/// The file name of world id's state (world-ID.state) into buf.
void app__state_name(uint64_t id, char* buf, size_t cap);

// ---------------------------------------------------------------------------
// journal.c: what changed each world since its state file
// ---------------------------------------------------------------------------

/// The file name of world id's journal (world-ID.journal) into buf.
void app__journal_name(uint64_t id, char* buf, size_t cap);

/// Opens w's journal for appending (made, with its head, when missing).
/// Nothing without a state dir; a failure is logged and w's journal is
/// down (app__journal_down()) until a state file lands.
void app__journal_open(app_server* app, app_world* w);

/// Closes w's journal (its buffered records are dropped: commit first).
void app__journal_close(app_world* w);

/// Closes and deletes w's journal (destroy_world).
void app__journal_remove(app_server* app, app_world* w);

/// Buffers a record of command e, applied now with sequence w->seq.
void app__journal_command(app_server* app, app_world* w, const app_cmd* e);

/// Buffers a mark of w's tick when a second has passed since the last
/// (`now`: uv_hrtime()), so a replay steps as far as the world had got
/// even when no command came.
void app__journal_mark(app_server* app, app_world* w, uint64_t now);

/// Buffers a record of the foci set now, when they differ from the last;
/// returns whether they did.
bool app__journal_foci(app_server* app, app_world* w, const sim_vec3* foci, uint32_t n);

/// Writes (now) a record that command `seq` was undone by a rollback: a
/// replay skips it.
void app__journal_drop(app_server* app, app_world* w, uint64_t seq);

/// Writes the buffered records (one write()), fsync'd now with
/// --journal-fsync always. A failed write or fsync is logged
/// (journal_failed) and w's journal is down: its records are kept for
/// app__journal_retry().
void app__journal_commit(app_server* app, app_world* w);

/// Puts w's journal down, its records possibly lost (`why`): only a state
/// file brings it back.
void app__journal_lose(app_server* app, app_world* w, const char* why);

/// Whether w's journal cannot be written (a write, fsync or open failed):
/// commands that would change w are refused (RDP_E_UNAVAILABLE) meanwhile.
bool app__journal_down(const app_server* app, const app_world* w);

/// At w's tick boundary (idle, before its commands; `now`: uv_hrtime()),
/// when its journal is down: once a second writes its kept records again,
/// and every 5 s tries a state file holding everything with a journal
/// started afresh from it. Returns whether the journal is up (true also
/// when it never went down).
bool app__journal_retry(app_server* app, app_world* w, uint64_t now);

/// Once a second (everysec): fsyncs every journal written since, on the
/// threadpool (loop thread; `now` is uv_hrtime()). A failed fsync puts
/// that world's journal down until a state file lands.
void app__journal_sync_due(app_server* app, uint64_t now);

/// app__journal_compact()'s `from` when the state holds everything.
#define APP_JOURNAL_ALL UINT64_MAX

/// A state file of w at sequence `seq` landed, encoded when the journal
/// was `from` bytes long: only the records after it are kept, under a head
/// following `seq`, atomically. With APP_JOURNAL_ALL (a state written on
/// the loop thread just now) it holds everything, also records waiting to
/// be written: the journal starts afresh and comes back up if it was down.
void app__journal_compact(app_server* app, app_world* w, uint64_t from, uint64_t seq);

/// What a replay did and found.
typedef struct app_replay_stats {
    uint64_t commands;     ///< Commands applied.
    uint64_t foci;         ///< Foci records applied.
    uint64_t last_tick;    ///< The world's tick at the end.
    uint64_t good_end;     ///< Where the journal's last good record ends (bytes).
    uint64_t bad_bytes;    ///< Bytes after it: a torn tail, or damage and what follows it.
    bool damaged;          ///< A bad record with good ones after it (not a crash mid-write).
    bool stopped_at_until; ///< A record after `until` ended the replay.
} app_replay_stats;

/// Applies the records of the journal at `path` after w's sequence to w
/// (just loaded from its state file), stepping it to each record's tick,
/// up to records of tick `until` (UINT64_MAX: all). Each step's tick and
/// sim_world_hash() go to `hashes` when not NULL. The state's queued
/// commands that the journal applied are dropped from w's inbox. First the
/// whole journal is checked, and nothing applies when it is not this
/// build's, is another world's, follows a newer state than w's, or has a
/// command whose sequence skips or a tick that goes back. A bad record
/// ends the replay (stats says whether it is a torn tail or damage; the
/// file is not changed). Returns 0 (also when there is no journal), or -1
/// with why: the file cannot be read, one of the above, or a command the
/// world refused (the replay diverged; w holds what applied before it).
int app__journal_replay(app_server* app, app_world* w, const char* path, uint64_t until,
                        FILE* hashes, app_replay_stats* stats, char* why, size_t cap);

// ---------------------------------------------------------------------------
// rollback.c: blow-ups undone
// ---------------------------------------------------------------------------

typedef struct app_rollback app_rollback;

/// At w's tick boundary (before its commands): keeps w's state when a
/// second has passed since the last (`now`: uv_hrtime()), the oldest of
/// APP_ROLLBACK_KEEP going.
void app__rollback_keep(app_server* app, app_world* w, uint64_t now);

/// Logs command c, just applied with sequence w->seq.
void app__rollback_log_command(app_world* w, const app_cmd* c);

/// Logs foci set now.
void app__rollback_log_foci(app_world* w, const sim_vec3* foci, uint32_t n);

/// After a batch (w idle, before its events and snapshots go out): when
/// the steps quarantined an entity (sim_world_quarantined() past
/// `quarantined_before`), steps the world again from a kept state without
/// the command to blame; keeps the result unless the blow-up recurs.
/// Returns true when the world was rolled back.
bool app__rollback_check(app_server* app, app_world* w, uint64_t quarantined_before);

/// c has gone: nothing is sent to it.
void app__rollback_client_gone(app_world* w, const app_client* c);

/// Frees what w keeps for rollback.
void app__rollback_free(app_world* w);
