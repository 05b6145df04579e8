/*
 * server_proc.c: a real ragdolld process for the C integration tests
 * (server_proc.h). It owns nothing but the child process it starts.
 */
#include "server_proc.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

// Starts ragdolld on `port` (0: the kernel picks) and waits for its
// "listening on HOST:PORT" line. Returns 0 or -1.
int server_start(server* s, int port, bool demo) {
    return server_start_in(s, port, demo, NULL);
}

int server_start_in(server* s, int port, bool demo, const char* state_dir) {
    const char* bin = getenv("RAGDOLLD");
    if (bin == NULL) {
        bin = "build/server/app/ragdolld";
    }
    int fds[2];
    if (pipe(fds) != 0) {
        return -1;
    }
    char portbuf[16];
    snprintf(portbuf, sizeof portbuf, "%d", port);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fds[1], STDOUT_FILENO);
        close(fds[0]);
        close(fds[1]);
        char* argv[8] = {(char*)bin, "--port", portbuf};
        int n = 3;
        if (!demo) {
            argv[n++] = "--no-demo";
        }
        if (state_dir != NULL) {
            argv[n++] = "--state-dir";
            argv[n++] = (char*)state_dir;
        }
        argv[n] = NULL;
        execv(bin, argv);
        _exit(127);
    }
    close(fds[1]);
    if (pid < 0) {
        close(fds[0]);
        return -1;
    }
    s->pid = pid;
    s->port = 0;
    char line[256];
    size_t len = 0;
    // Up to 30 s: a sanitizer build starts slowly on a busy machine.
    while (len < sizeof line - 1) {
        struct pollfd p = {fds[0], POLLIN, 0};
        if (poll(&p, 1, 30000) <= 0) {
            break;
        }
        ssize_t n = read(fds[0], line + len, sizeof line - 1 - len);
        if (n <= 0) {
            break;
        }
        len += (size_t)n;
        line[len] = '\0';
        const char* at = strstr(line, "listening on ");
        const char* nl = at != NULL ? strchr(at, '\n') : NULL;
        if (nl != NULL) {
            const char* colon = nl;
            while (colon > at && *colon != ':') {
                colon--;
            }
            s->port = atoi(colon + 1);
            break;
        }
    }
    close(fds[0]);
    return s->port > 0 ? 0 : -1;
}

void server_stop(server* s, int sig) {
    if (s->pid > 0) {
        kill(s->pid, sig);
        kill(s->pid, SIGCONT); // a stopped process acts on SIGTERM only once resumed
        int st;
        waitpid(s->pid, &st, 0);
        s->pid = 0;
    }
}

int server_free_port(void) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) {
        return -1;
    }
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    int port = -1;
    if (bind(fd, (struct sockaddr*)&a, sizeof a) == 0 &&
        getsockname(fd, (struct sockaddr*)&a, &len) == 0) {
        port = ntohs(a.sin_port);
    }
    close(fd);
    return port;
}
