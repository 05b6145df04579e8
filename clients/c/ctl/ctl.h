/*
 * ctl.h: the pieces of ragdollctl shared by its files: the run context, the
 * subcommand table, argument parsing helpers and a string builder.
 *
 *   ragdollctl.c  main, global options, connecting, exit codes
 *   commands.c    one subcommand per command of PROTOCOL.md §3
 *   record.c      watch, record, replay (streams and logs)
 *
 * Exit codes: CTL_OK, CTL_SERVER_ERROR (the server replied with an error,
 * or with a malformed reply), CTL_USAGE, CTL_CONNECTION (cannot connect, or
 * the connection was lost), CTL_OUTPUT (writing stdout or the log failed).
 */
#pragma once

#include "rdc.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/// ragdollctl's exit codes (clients/c/README.md).
enum ctl_exit {
    CTL_OK = 0,
    CTL_SERVER_ERROR = 1,
    CTL_USAGE = 2,
    CTL_CONNECTION = 3,
    CTL_OUTPUT = 4, ///< Writing stdout (but for EPIPE) or record's log failed.
};

/// The run of one ragdollctl command (below).
typedef struct ctl ctl;

/// A subcommand: parses its arguments before connecting, then runs once
/// connected.
typedef struct ctl_cmd {
    const char* name;
    const char* synopsis; ///< Arguments, one line.
    const char* help;     ///< What it does, and its options (for --help).
    /// Parses argv (argv[0] is the subcommand's name). Returns 0, or
    /// CTL_USAGE after printing why to stderr. CTL_OK with ctl->finished
    /// set means there is nothing to do (it printed --help).
    int (*parse)(ctl* x, int argc, char** argv);
    /// Runs once connected. Ends by calling ctl_finish().
    void (*start)(ctl* x);
    /// Runs until stopped (watch, record, drag): Ctrl-C (SIGINT) then ends
    /// it with CTL_OK instead of killing the program.
    bool stops_on_signal;
} ctl_cmd;

/// The run: options, the client, the outcome.
struct ctl {
    uv_loop_t* loop;
    rdc_client* c;
    const char* url;
    const char* token;
    bool json;           ///< --json: print raw reply JSON.
    double seconds;      ///< --seconds of drag, watch, record (0: until Ctrl-C).
    uint64_t count;      ///< --count of watch, record (0: no limit).
    uint32_t timeout_ms; ///< Connect and reply timeout.
    const ctl_cmd* cmd;
    cJSON* request; ///< The command a simple subcommand sends (owned).
    /// Checks that a success reply has what the command needs (false: a
    /// malformed reply) and prints it in human form unless --json.
    bool (*print_ok)(ctl* x, const rdc_reply* r);
    void* sub; ///< The subcommand's own state.
    /// watch/record/replay's stream (record.c), or NULL: the stream
    /// callbacks get every command's events and must not take another
    /// command's `sub` (fetch's path, drag's state) for one.
    struct stream* stream;
    void (*stop)(ctl* x); ///< Closes the subcommand's handles (called by ctl_finish), or NULL.
    void (*sub_free)(void* sub);
    uv_signal_t sigint;
    bool signal_open;
    bool finished;
    int exit_code;
    bool reader_gone; ///< A write to stdout failed with EPIPE (| head): not an error.
};

/// Checks the writes so far to f (stdout, or record's log at path): after
/// a failure (fflush() or the error flag), EPIPE on stdout ends the run
/// with CTL_OK, any other error is printed and makes the exit code
/// CTL_OUTPUT (ending the run if it is still going). Returns whether the
/// writes went well. The caller clears errno before the writes it checks:
/// a failed write leaves the error flag and errno, while a later fflush()
/// may report success.
bool ctl_check_output(ctl* x, FILE* f, const char* path);

/// Ends the run with `code` (the first call wins): closes the client; the
/// loop then runs out.
void ctl_finish(ctl* x, int code);

/// Sends x->request and handles its reply: prints it (raw with --json,
/// else through x->print_ok or "ok"), or the server's error (exit 1), then
/// finishes. For subcommands that send one command.
void ctl_send_request(ctl* x);

/// Reply callback that prints and finishes, as ctl_send_request() does.
void ctl_on_reply(rdc_client* c, const rdc_reply* r, void* arg);

/// Prints the server's error reply to stderr ("error: CODE: MESSAGE"), or
/// "ragdollctl: malformed reply: ..." for a reply that is neither ok nor an
/// error (RDC_E_PROTOCOL).
void ctl_print_error(const rdc_reply* r);

/// Prints "ragdollctl SUB: MESSAGE" and the subcommand's synopsis to stderr.
/// Returns CTL_USAGE.
int ctl_usage(const ctl_cmd* cmd, const char* fmt, ...) __attribute__((format(printf, 2, 3)));

/// Prints the subcommand's --help to stdout.
void ctl_help(const ctl_cmd* cmd);

/// The largest message the server takes (PROTOCOL.md: 64 KiB; more is
/// close 1009), and room kept in it for the "id" rdc adds.
#define CTL_MAX_MESSAGE_BYTES 65536
#define CTL_ID_RESERVE        32

/// Whether len bytes of text are valid UTF-8 (a text frame that is not
/// gets close 1007).
bool ctl_utf8_valid(const char* text, size_t len);

/// Checks, before anything is sent, that a command fits one message with
/// its id and is valid UTF-8 as sent: 0, or CTL_USAGE with the reason in
/// why.
int ctl_check_command(const cJSON* cmd, char* why, size_t why_len);

/// Sets the snapshot and event callbacks of the client (record.c): watch
/// and record get their streams through them.
void ctl_stream_config(ctl* x, rdc_config* cfg);

/// The subcommand table (commands.c and record.c), NULL-terminated.
extern const ctl_cmd* const ctl_commands[];

extern const ctl_cmd ctl_cmd_watch, ctl_cmd_record, ctl_cmd_replay;

// ---------------------------------------------------------------------------
// Parsing helpers: true on success.
// ---------------------------------------------------------------------------

/// An id (world, entity): a decimal integer in [1, 2^53 - 1].
bool ctl_parse_id(const char* s, uint64_t* out);

/// An unsigned integer in [lo, hi].
bool ctl_parse_uint(const char* s, uint64_t lo, uint64_t hi, uint64_t* out);

/// A finite number.
bool ctl_parse_double(const char* s, double* out);

/// Longest time ragdollctl takes in seconds (--seconds, a command's "at", a
/// log's "t"): a year. A longer one is a usage error.
#define CTL_MAX_SECONDS (365.0 * 86400)

/// Seconds as timer milliseconds, rounded, clamped to [0, CTL_MAX_SECONDS]
/// (NaN: 0): converting a double beyond uint64_t's range is undefined.
uint64_t ctl_seconds_to_ms(double s);

/// "X,Y,Z": three finite numbers.
bool ctl_parse_vec3(const char* s, double out[3]);

/// Adds [x, y, z] to obj under key.
void ctl_add_vec3(cJSON* obj, const char* key, const double v[3]);

// ---------------------------------------------------------------------------
// A growing string (for output lines).
// ---------------------------------------------------------------------------

typedef struct ctl_buf {
    char* data;
    size_t len, cap;
} ctl_buf;

/// Appends printf-formatted text. Exits the program when out of memory.
void ctl_buf_printf(ctl_buf* b, const char* fmt, ...) __attribute__((format(printf, 2, 3)));

/// Appends len bytes.
void ctl_buf_append(ctl_buf* b, const char* s, size_t len);

/// Frees the buffer's memory.
void ctl_buf_free(ctl_buf* b);

/// Appends a decoded snapshot as one JSON object (the line `watch` prints):
/// {"ev":"snapshot","world","tick","format","entities":[{"entity","kind",
/// "particles":[[x,y,z],...]} or {"entity","kind","state","bodies":
/// [[x,y,z,qx,qy,qz,qw],...]}]}; positions to 0.1 mm, quaternions to 1e-5.
void ctl_snapshot_line(ctl_buf* b, const rdc_snapshot* s);
