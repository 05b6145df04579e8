/*
 * server_proc.h: starting and stopping a real ragdolld process for the C
 * integration tests (Redis's runtest approach): `ragdolld --port P`, its
 * port read from its "listening on HOST:PORT" line; the binary comes from
 * $RAGDOLLD.
 */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

/// A running server.
typedef struct server {
    pid_t pid;
    int port;
} server;

/// Starts ragdolld on `port` (0: the kernel picks), with the demo world when
/// `demo`, and waits (up to 30 s) for its "listening on" line. Returns 0 or
/// -1.
int server_start(server* s, int port, bool demo);

/// server_start() with --state-dir state_dir (NULL: none).
int server_start_in(server* s, int port, bool demo, const char* state_dir);

/// Sends `sig` (SIGTERM, SIGKILL) and reaps the process. Does nothing when
/// it is not running.
void server_stop(server* s, int sig);

/// A TCP port on 127.0.0.1 that nothing listens on (bound, then closed), or
/// -1.
int server_free_port(void);
