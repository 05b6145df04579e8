/*
 * pool.h: a small pool of worker threads of our own (pool.c). The loop
 * thread hands it jobs; a worker runs each, and the pool hands each job
 * back to the loop thread, in the order they finished, from a uv_async_t
 * callback. It knows nothing about worlds.
 *
 * Why not libuv's thread pool (uv_queue_work): that one is process-wide,
 * sized once by UV_THREADPOOL_SIZE, and shared with file system calls and
 * getaddrinfo, so a busy world could delay them and they a world; and its
 * size could not follow --workers.
 *
 * Threading: app__pool_init(), app__pool_submit() and app__pool_close()
 * are for the loop thread only; a job's run() is called on a worker (or,
 * with 0 workers, on the loop thread inside app__pool_submit()), and the
 * done callback on the loop thread. A job belongs to the pool from
 * submit until it is handed back: its owner must not touch what run()
 * touches in between. The pool's mutex orders the two: what the loop
 * thread wrote before app__pool_submit() is visible to run(), and what
 * run() wrote is visible to the done callback.
 */
#pragma once

#include <uv.h>

#include <stdbool.h>
#include <stdint.h>

/// Worker threads a pool may have at most (--workers).
#define APP_POOL_MAX_WORKERS 256

/// A unit of work, embedded by its owner (e.g. in an app_world). Set run
/// before submitting; next is the pool's.
typedef struct app_job {
    /// Does the work, on a worker thread. Must not touch the loop or
    /// anything the loop thread may be using.
    void (*run)(struct app_job* job);
    struct app_job* next; ///< The pool's, while the job is submitted.
} app_job;

/// Called on the loop thread with each job the pool hands back. The
/// callback may submit jobs again (that one included).
typedef void (*app_pool_done_cb)(app_job* job, void* ctx);

/// A pool. Embedded by its owner; everything in it is the pool's.
typedef struct app_pool {
    uv_loop_t* loop;
    uv_async_t async; ///< Workers wake the loop thread with it.
    uv_mutex_t mu;    ///< Guards the queue, the done list and stopping.
    uv_cond_t cv;     ///< Signals workers that there is a job or a stop.
    uv_thread_t* threads;
    uint32_t workers;                   ///< Threads; 0: jobs run on the loop thread.
    uint32_t started;                   ///< Threads actually started.
    bool stopping;                      ///< Workers exit when they see it.
    app_job* queue_head;                ///< Submitted, not yet taken by a worker.
    app_job* queue_tail;                ///< Its last job, where submit appends.
    app_job* done_head;                 ///< Run, not yet handed back.
    app_job* done_tail;                 ///< Its last job, where workers append.
    uint32_t outstanding;               ///< Submitted and not yet handed back (loop thread).
    app_pool_done_cb done;              ///< Called with each job handed back.
    void* ctx;                          ///< Passed to done.
    void (*closed)(struct app_pool* p); ///< app__pool_close()'s callback.
} app_pool;

/// Starts `workers` threads (0..APP_POOL_MAX_WORKERS; 0 runs every job
/// on the loop thread, inside app__pool_submit()) and the async handle
/// that brings jobs back to `loop`; call it on the loop thread. done(job, ctx) is called on the
/// loop thread for every job handed back. Returns 0, or a negative libuv error (UV_EINVAL for too
/// many workers, UV_ENOMEM, or what uv_thread_create or uv_async_init said); on error nothing is
/// left running or open.
int app__pool_init(app_pool* p, uv_loop_t* loop, uint32_t workers, app_pool_done_cb done,
                   void* ctx);

/// Hands a job to the pool (loop thread). It runs once, on whichever
/// worker is free first (jobs are taken in submission order), and comes
/// back through the done callback on a later turn of the loop, never
/// inside this call. A job must not be submitted again before it is
/// handed back.
void app__pool_submit(app_pool* p, app_job* job);

/// Jobs submitted and not yet handed back (loop thread).
uint32_t app__pool_outstanding(const app_pool* p);

/// Stops the pool (loop thread): waits for the jobs being run to finish
/// (this blocks the loop thread for at most one job per worker), joins
/// the workers, hands every job not yet handed back (run or not: the ones
/// never taken are not run) to the done callback, here, in the order
/// submitted jobs finished and then the order the rest were submitted;
/// then closes the async handle and calls closed(p) from its close
/// callback, after which p may be freed. Call it once.
void app__pool_close(app_pool* p, void (*closed)(app_pool* p));
