/*
 * pool.c: the worker pool (pool.h). Two lists under one mutex: the queue
 * of submitted jobs, which workers take from the front, and the done list
 * of jobs run, which the loop thread takes whole when the async handle
 * wakes it.
 *
 *   loop thread                 mutex                    workers
 *   submit ──► queue: J3 → J4 ─────────────────────────► take J3, run it
 *   on_async ◄── done: J1 → J2 ◄──────────────────────── put J3 back, uv_async_send
 *
 * uv_async_send() coalesces: one wake-up may bring back many jobs, so the
 * loop thread always takes the whole done list. Workers sleep on the
 * condition variable while the queue is empty, so an idle pool costs
 * nothing.
 *
 * What it does not own: the jobs (their owners embed them) and what they
 * touch.
 */
#include "pool.h"

#include <stdlib.h>

// Appends j to the list (head, tail). Under the mutex.
static void list_push(app_job** head, app_job** tail, app_job* j) {
    j->next = NULL;
    if (*tail != NULL) {
        (*tail)->next = j;
    } else {
        *head = j;
    }
    *tail = j;
}

static void worker_main(void* arg) {
    app_pool* p = arg;
    uv_mutex_lock(&p->mu);
    for (;;) {
        while (!p->stopping && p->queue_head == NULL) {
            uv_cond_wait(&p->cv, &p->mu);
        }
        if (p->stopping) {
            break; // jobs still queued are handed back unrun by app__pool_close()
        }
        app_job* j = p->queue_head;
        p->queue_head = j->next;
        if (p->queue_head == NULL) {
            p->queue_tail = NULL;
        }
        uv_mutex_unlock(&p->mu);
        j->run(j);
        uv_mutex_lock(&p->mu);
        list_push(&p->done_head, &p->done_tail, j);
        uv_mutex_unlock(&p->mu);
        // Outside the mutex, or the loop thread, woken, would wait for it.
        // The handle is open: app__pool_close() closes it only after every
        // worker has been joined.
        uv_async_send(&p->async);
        uv_mutex_lock(&p->mu);
    }
    uv_mutex_unlock(&p->mu);
}

// Hands back every job of a list (loop thread, outside the mutex).
static void hand_back(app_pool* p, app_job* j) {
    while (j != NULL) {
        app_job* next = j->next;
        j->next = NULL;
        p->outstanding--;
        p->done(j, p->ctx);
        j = next;
    }
}

static void on_async(uv_async_t* a) {
    app_pool* p = a->data;
    uv_mutex_lock(&p->mu);
    app_job* j = p->done_head;
    p->done_head = p->done_tail = NULL;
    uv_mutex_unlock(&p->mu);
    hand_back(p, j);
}

// Stops and joins the workers that started (loop thread).
static void stop_workers(app_pool* p) {
    uv_mutex_lock(&p->mu);
    p->stopping = true;
    uv_cond_broadcast(&p->cv);
    uv_mutex_unlock(&p->mu);
    for (uint32_t i = 0; i < p->started; ++i) {
        uv_thread_join(&p->threads[i]);
    }
}

int app__pool_init(app_pool* p, uv_loop_t* loop, uint32_t workers, app_pool_done_cb done,
                   void* ctx) {
    if (workers > APP_POOL_MAX_WORKERS) {
        return UV_EINVAL;
    }
    *p = (app_pool){.loop = loop, .workers = workers, .done = done, .ctx = ctx};
    if (workers > 0) {
        p->threads = calloc(workers, sizeof *p->threads);
        if (p->threads == NULL) {
            return UV_ENOMEM;
        }
    }
    int rc = uv_mutex_init(&p->mu);
    if (rc != 0) {
        free(p->threads);
        return rc;
    }
    rc = uv_cond_init(&p->cv);
    if (rc != 0) {
        uv_mutex_destroy(&p->mu);
        free(p->threads);
        return rc;
    }
    // Threads before the async handle: no job can reach a worker before
    // this returns, so none sends on the handle before it exists, and a
    // failure leaves no handle to close on the loop.
    for (uint32_t i = 0; i < workers && rc == 0; ++i) {
        rc = uv_thread_create(&p->threads[i], worker_main, p);
        if (rc == 0) {
            p->started++;
        }
    }
    if (rc == 0) {
        rc = uv_async_init(loop, &p->async, on_async);
    }
    if (rc != 0) {
        stop_workers(p);
        uv_cond_destroy(&p->cv);
        uv_mutex_destroy(&p->mu);
        free(p->threads);
        p->threads = NULL;
        return rc;
    }
    p->async.data = p;
    return 0;
}

void app__pool_submit(app_pool* p, app_job* job) {
    p->outstanding++;
    if (p->workers == 0) {
        // No threads: run it here, but hand it back on a later turn of the
        // loop like any other, so the owner sees one order of events.
        job->run(job);
        uv_mutex_lock(&p->mu);
        list_push(&p->done_head, &p->done_tail, job);
        uv_mutex_unlock(&p->mu);
        uv_async_send(&p->async);
        return;
    }
    uv_mutex_lock(&p->mu);
    list_push(&p->queue_head, &p->queue_tail, job);
    uv_mutex_unlock(&p->mu);
    // After unlocking, so the worker it wakes does not wait for the mutex.
    uv_cond_signal(&p->cv);
}

uint32_t app__pool_outstanding(const app_pool* p) {
    return p->outstanding;
}

static void on_async_closed(uv_handle_t* h) {
    app_pool* p = h->data;
    uv_cond_destroy(&p->cv);
    uv_mutex_destroy(&p->mu);
    free(p->threads);
    p->threads = NULL;
    if (p->closed != NULL) {
        p->closed(p);
    }
}

void app__pool_close(app_pool* p, void (*closed)(app_pool* p)) {
    p->closed = closed;
    stop_workers(p);
    // No worker is left: the lists are the loop thread's alone now.
    app_job* ran = p->done_head;
    app_job* unrun = p->queue_head;
    p->done_head = p->done_tail = p->queue_head = p->queue_tail = NULL;
    hand_back(p, ran);
    hand_back(p, unrun);
    uv_close((uv_handle_t*)&p->async, on_async_closed);
}
