/*
 * stats.h: what net records about its connections for logs and /metrics
 * (stats.c): bytes each way, the peer's address, why a session ended, and
 * the server's totals. Private to server/net; net_internal.h embeds these
 * structs in net_session and net_server, and the hooks below are called
 * from the places that read, write, refuse and close.
 */
#pragma once

#include "net.h"

#include <stddef.h>
#include <stdint.h>

/// Per session.
typedef struct net__session_stats {
    uint64_t bytes_in, bytes_out;
    char peer[64];   ///< "host:port" or "[v6]:port" (net_session_peer_name()).
    char reason[96]; ///< Why the server closed (net_session_close()); "" if it did not.
    char cause[64];  ///< Why the connection dropped without a handshake; first wins.
} net__session_stats;

/// Per server.
typedef struct net__server_stats {
    uint64_t bytes_in, bytes_out;
    uint64_t dropped_gone; ///< net_session_dropped() of sessions already freed.
} net__server_stats;

/// A connection was accepted (its address is in s->peer): records the
/// peer's address with its port.
void net__stats_accepted(net_session* s);

/// n bytes were read from the session's socket.
void net__stats_in(net_session* s, size_t n);

/// n bytes were handed to the session's socket.
void net__stats_out(net_session* s, size_t n);

/// The server starts the closing handshake with `code` and `reason` (NULL
/// or text): remembered as why it ended, unless the peer closed first.
void net__stats_closing(net_session* s, uint16_t code, const char* reason);

/// The connection is being dropped because of `what` (a static string),
/// with err a libuv error (0 for none) named after it. The first cause
/// noted is kept.
void net__stats_cause(net_session* s, const char* what, int err);

/// A response with `status` and `body` went out: a refusal of an upgrade
/// (an error status for ws_path) is reported through on_refused.
void net__stats_responded(net_session* s, int status, const char* body, size_t len);

/// The session is about to be freed: its counts go into the server's.
void net__stats_freed(net_session* s);
