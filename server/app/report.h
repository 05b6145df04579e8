/*
 * report.h: what the server tells its operator (report.c): each event of
 * interest becomes counters (metrics.h) and, when its level allows, a log
 * line (log.h). The rest of server/app calls these hooks, one line each,
 * where the events happen.
 *
 * Nothing here logs a token or a command's payload: a command is named by
 * its op, a world by its id, a session by its number and peer address.
 */
#pragma once

#include "app_internal.h"

/// A session was opened (c->role and c->entry set at the upgrade): counts
/// it by role ("anonymous" without a token on a server with an auth file),
/// logs session_opened (info).
void app__report_session_opened(app_server* app, app_client* c);

/// A session is closing (from on_close, while net can still say how):
/// counts its close code, logs session_closed (info; warn when the server
/// dropped it for an error) with peer, role, duration, bytes each way,
/// close codes and reason.
void app__report_session_closed(app_server* app, app_client* c);

/// An upgrade was refused with HTTP `status` (net's on_refused, for net's
/// own refusals and on_upgrade's alike): counts it by status, logs
/// upgrade_refused (warn, rate-limited) with the response's text.
void app__report_refused(app_server* app, const net_session* s, int status, const char* why);

/// Text was queued to c (rc: what net_session_send_text() returned). Counts
/// the message; if it is the reply to the command c is handling
/// (c->cmd_op), counts the command by op and code too.
void app__report_text(app_client* c, const char* text, size_t len, int rc);

/// A command of c (which may be NULL: it has gone) was answered with
/// `reply` (NULL: nothing to answer). Counts it by op and code; logs
/// rate_limited and forbidden (warn) and internal errors (error), all
/// rate-limited.
void app__report_reply(app_server* app, app_client* c, uint32_t op, const char* reply, size_t len);

/// A command of c was answered with `code` without a reply text at hand (a
/// queued command whose world was destroyed, a message that did not
/// decode: `decode` true, logged as command_rejected, info, rate-limited).
/// op is 0 when unknown. If c is handling a command with this op
/// (app__report_begin()), it counts as answered.
void app__report_command(app_server* app, app_client* c, uint32_t op, rdp_code code, bool decode);

/// A server error (out of memory, a failed encode): logs `what` (a static
/// description) at error level, rate-limited, with session s if s is not
/// NULL.
void app__report_error(app_server* app, const net_session* s, const char* what);

/// c starts handling a command with `op` (0 when unknown): the first reply
/// sent to c until app__report_end() is counted as its answer.
void app__report_begin(app_client* c, uint32_t op);

/// c is done handling the command of app__report_begin(). One that was
/// neither answered nor queued for a tick is counted with code `silent`
/// (RDP_OK for a binary ack, which gets no reply; RDP_E_INTERNAL for a
/// command whose reply could not be made).
void app__report_end(app_server* app, app_client* c, rdp_code silent);

/// A world was created: logs world_created (info).
void app__report_world_created(app_server* app, const app_world* w);

/// A world is being destroyed: logs world_destroyed (info).
void app__report_world_destroyed(app_server* app, app_world* w);

/// rolled_back (info): world w went back from `tick` to from_tick's state
/// and stepped again without `dropped` (an op name, or NULL); with
/// `failed`, rollback_failed (warn) and why: the quarantine stands.
void app__report_rollback(app_server* app, const app_world* w, uint64_t tick, uint64_t from_tick,
                          uint64_t entity, const char* dropped, const char* failed);

/// A message of `bytes` and `kind` was queued to c.
void app__report_sent(app_client* c, app_msg_kind kind, size_t bytes);

/// A skeleton file loaded with a warning (app_assets_load()'s warn, at
/// startup, before the server exists): logs asset_warning (warn) with the
/// file, the skeleton, the bone, its parent (for a mass ratio), the ratio
/// and sim's message.
void app__report_asset_warning(app_log* log, const char* path, const sim_skeleton_def* skeleton,
                               const sim_skeleton_issue* w);
