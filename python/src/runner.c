/* python/src/runner.c: the pipeline's call thread, so that a blocking call can be interrupted.
 *
 * stk_pipeline_next() waits as long as the batch takes (for ever, when a worker waits on a file
 * that cannot be read). A Python thread waiting inside it could not see Ctrl-C, and close() from
 * another thread could not stop it (the C API's thread contract serializes calls on a pipeline).
 * So build, next and reset run on one call thread per pipeline, and the Python thread waits for
 * the result in slices of STKPY_WAIT_SLICE_MS with the GIL released, running the signal handlers
 * (PyErr_CheckSignals) with the GIL between slices:
 *   - an interrupted call goes on; the next call of the same kind collects its result (the batch
 *     the interrupted run() waited for is delivered, not lost); a call of another kind discards
 *     it (a pending batch is released);
 *   - close() never waits for a call in progress: the pipeline is marked closed, a Python thread
 *     waiting on it gets an error at once, and the call thread destroys the pipeline when the call
 *     returns (if it never returns, the pipeline's threads and memory stay until the process ends).
 *
 * The call thread starts with every signal blocked, and so do the workers the library starts from
 * it (build runs there): signals go to Python's threads, never interrupt the library's system
 * calls (EINTR), and Python runs the handlers in the main thread as usual.
 *
 * In a process forked from the one that made the pipeline, close() only forgets it: the call
 * thread and the workers do not exist there, and joining them would hang.
 *
 * Locking: `lock` guards every field; the call thread never takes the GIL; Python threads take
 * `lock` with or without the GIL, never holding it across a wait on the GIL. The runner is freed by
 * the last of its two owners (the Pipeline object, the call thread).
 *
 * Hot path: one stkpy_runner_call per batch (two condition-variable hand-offs). */
#include "ext.h" /* first: Python.h comes before the system headers */

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define STKPY_WAIT_SLICE_MS 100
#define STKPY_ERROR_SIZE    2048

struct stkpy_runner {
  pthread_mutex_t lock;
  pthread_cond_t posted;   /* call thread waits: a call was posted, or quit */
  pthread_cond_t finished; /* Python threads wait: the call finished, or the pipeline closed */
  pthread_t thread;
  int thread_started; /* joined or detached exactly once, by close */
  stk_pipeline *pipe; /* owned; NULL once closed (or handed to the call thread's cleanup) */
  stkpy_call call;    /* posted or running; NONE when the call thread is idle */
  int waiter;         /* a Python thread is waiting for the call's result */
  int done;           /* a result below that nobody collected yet */
  stkpy_call done_call;
  stk_status done_status;
  stk_batch *done_batch;
  char done_error[STKPY_ERROR_SIZE];
  char error[STKPY_ERROR_SIZE]; /* the collected call's message, handed out by stkpy_runner_call */
  int closed;                   /* close() ran */
  int quit;                     /* the call thread exits (destroying pipe if it still has it) */
  int refs;                     /* Pipeline object + call thread */
  pid_t owner;                  /* the process that made the pipeline (see fork above) */
};

static void runner_unref(stkpy_runner *r) {
  pthread_mutex_lock(&r->lock);
  int last = --r->refs == 0;
  pthread_mutex_unlock(&r->lock);
  if (!last) return;
  pthread_cond_destroy(&r->posted);
  pthread_cond_destroy(&r->finished);
  pthread_mutex_destroy(&r->lock);
  free(r);
}

static stk_status run_call(stk_pipeline *pipe, stkpy_call call, stk_batch **batch) {
  switch (call) {
    case STKPY_CALL_BUILD:
      return stk_pipeline_build(pipe);
    case STKPY_CALL_NEXT:
      return stk_pipeline_next(pipe, batch);
    case STKPY_CALL_RESET:
      return stk_pipeline_reset(pipe);
    default:
      return STK_EINVAL;
  }
}

/* The call thread: runs posted calls until quit, then frees what close() left to it. */
static void *call_thread_main(void *arg) {
  stkpy_runner *r = (stkpy_runner *)arg;
  pthread_mutex_lock(&r->lock);
  while (!r->quit) {
    if (r->call == STKPY_CALL_NONE) {
      pthread_cond_wait(&r->posted, &r->lock);
      continue;
    }
    stkpy_call call = r->call;
    stk_pipeline *pipe = r->pipe;
    pthread_mutex_unlock(&r->lock);
    stk_batch *batch = NULL;
    stk_status status = run_call(pipe, call, &batch);
    pthread_mutex_lock(&r->lock);
    snprintf(r->done_error, sizeof r->done_error, "%s", status == STK_OK ? "" : stk_pipeline_last_error(pipe));
    r->call = STKPY_CALL_NONE;
    r->done = 1;
    r->done_call = call;
    r->done_status = status;
    r->done_batch = batch;
    pthread_cond_broadcast(&r->finished);
  }
  stk_pipeline *pipe = r->pipe;
  stk_batch *batch = r->done ? r->done_batch : NULL;
  r->pipe = NULL;
  r->done = 0;
  pthread_mutex_unlock(&r->lock);
  if (batch) stk_batch_release(batch);
  stk_pipeline_destroy(pipe);
  runner_unref(r);
  return NULL;
}

stkpy_runner *stkpy_runner_new(stk_pipeline *pipe) {
  stkpy_runner *r = (stkpy_runner *)calloc(1, sizeof *r);
  pthread_condattr_t attr;
  if (!r || pthread_condattr_init(&attr) != 0) {
    free(r);
    stk_pipeline_destroy(pipe);
    PyErr_NoMemory();
    return NULL;
  }
  pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
  pthread_mutex_init(&r->lock, NULL);
  pthread_cond_init(&r->posted, NULL);
  pthread_cond_init(&r->finished, &attr);
  pthread_condattr_destroy(&attr);
  r->pipe = pipe;
  r->refs = 1;
  r->owner = getpid();
  return r;
}

static PyObject *raise_closed(stkpy_state *state, int while_waiting) {
  return stkpy_raise_status(
      state, STK_ESTATE,
      while_waiting ? "the pipeline was closed (by another thread) while this call waited" : "the pipeline is closed");
}

/* Under lock, GIL held: waits until the call in progress finished (r->done) or the pipeline was
 * closed, in slices with the GIL and the lock released, running signal handlers in between. 0, or
 * -1 with an exception set (a signal handler raised, or closed meanwhile). Leaves r->waiter set
 * only while waiting. */
static int wait_locked(stkpy_runner *r, stkpy_state *state) {
  r->waiter = 1;
  for (;;) {
    if (r->closed) {
      r->waiter = 0;
      raise_closed(state, 1);
      return -1;
    }
    if (r->call == STKPY_CALL_NONE) {
      r->waiter = 0;
      return 0;
    }
    Py_BEGIN_ALLOW_THREADS struct timespec deadline;
    clock_gettime(CLOCK_MONOTONIC, &deadline);
    deadline.tv_nsec += STKPY_WAIT_SLICE_MS * 1000000L;
    deadline.tv_sec += deadline.tv_nsec / 1000000000L;
    deadline.tv_nsec %= 1000000000L;
    while (r->call != STKPY_CALL_NONE && !r->closed)
      if (pthread_cond_timedwait(&r->finished, &r->lock, &deadline) == ETIMEDOUT) break;
    /* Take the GIL without holding the lock: the thread holding the GIL may want the lock. */
    pthread_mutex_unlock(&r->lock);
    Py_END_ALLOW_THREADS int interrupted = PyErr_CheckSignals() < 0;
    pthread_mutex_lock(&r->lock);
    if (interrupted) {
      r->waiter = 0; /* the call goes on; its result waits for the next call */
      return -1;
    }
  }
}

/* Under lock, GIL held: the pipeline is open, no other thread waits on it, and no call runs. */
static int settle_locked(stkpy_runner *r, stkpy_state *state) {
  if (r->closed) {
    raise_closed(state, 0);
    return -1;
  }
  if (r->waiter) {
    stkpy_raise_status(state, STK_ESTATE,
                       "the pipeline is in use by another thread (its call is still waiting; drive one "
                       "pipeline from one thread at a time, or through stoker.Pipeline, which serializes them)");
    return -1;
  }
  return r->call == STKPY_CALL_NONE ? 0 : wait_locked(r, state);
}

stk_pipeline *stkpy_runner_enter(stkpy_runner *r, stkpy_state *state) {
  pthread_mutex_lock(&r->lock);
  stk_pipeline *pipe = settle_locked(r, state) < 0 ? NULL : r->pipe;
  pthread_mutex_unlock(&r->lock);
  return pipe;
}

/* Under lock: hands the uncollected result to the caller and forgets it. */
static void collect_locked(stkpy_runner *r, stk_status *status, stk_batch **batch) {
  *status = r->done_status;
  *batch = r->done_batch;
  snprintf(r->error, sizeof r->error, "%s", r->done_error);
  r->done = 0;
  r->done_batch = NULL;
}

static int start_thread_locked(stkpy_runner *r) {
  if (r->thread_started) return 0;
  sigset_t all, previous;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &previous); /* the new thread inherits the mask */
  int rc = pthread_create(&r->thread, NULL, call_thread_main, r);
  pthread_sigmask(SIG_SETMASK, &previous, NULL);
  if (rc != 0) return -1;
  r->thread_started = 1;
  r->refs++;
  return 0;
}

int stkpy_runner_call(stkpy_runner *r, stkpy_state *state, stkpy_call call, stk_status *status, stk_batch **batch,
                      const char **error) {
  stk_batch *stale = NULL;
  *batch = NULL;
  *error = "";
  pthread_mutex_lock(&r->lock);
  if (settle_locked(r, state) < 0) goto fail;
  if (r->done && r->done_call == call) { /* an interrupted call of this kind finished meanwhile */
    collect_locked(r, status, batch);
    goto done;
  }
  if (r->done) { /* another kind's result: discarded */
    stk_status ignored;
    collect_locked(r, &ignored, &stale);
  }
  if (start_thread_locked(r) < 0) {
    stkpy_raise_status(state, STK_ENOMEM, "could not start the pipeline's call thread");
    goto fail;
  }
  r->call = call;
  pthread_cond_signal(&r->posted);
  if (wait_locked(r, state) < 0) goto fail;
  collect_locked(r, status, batch);
done:
  *error = r->error;
  pthread_mutex_unlock(&r->lock);
  if (stale) stk_batch_release(stale);
  return 0;
fail:
  pthread_mutex_unlock(&r->lock);
  if (stale) stk_batch_release(stale);
  return -1;
}

void stkpy_runner_close(stkpy_runner *r) {
  pthread_mutex_lock(&r->lock);
  if (r->closed) {
    pthread_mutex_unlock(&r->lock);
    return;
  }
  r->closed = 1;
  r->quit = 1;
  if (r->owner != getpid()) { /* a forked child: no call thread, no workers here */
    r->pipe = NULL;
    r->done = 0;
    r->refs -= r->thread_started; /* nobody will run the call thread's unref */
    pthread_mutex_unlock(&r->lock);
    return;
  }
  pthread_cond_broadcast(&r->posted);
  pthread_cond_broadcast(&r->finished);
  int started = r->thread_started;
  if (r->call != STKPY_CALL_NONE) { /* the call thread destroys the pipeline when the call returns */
    pthread_mutex_unlock(&r->lock);
    if (started) pthread_detach(r->thread);
    return;
  }
  stk_pipeline *pipe = r->pipe;
  stk_batch *batch = r->done ? r->done_batch : NULL;
  r->pipe = NULL;
  r->done = 0;
  pthread_mutex_unlock(&r->lock);
  Py_BEGIN_ALLOW_THREADS if (started) pthread_join(r->thread, NULL);
  if (batch) stk_batch_release(batch);
  stk_pipeline_destroy(pipe);
  Py_END_ALLOW_THREADS
}

int stkpy_runner_is_closed(stkpy_runner *r) {
  pthread_mutex_lock(&r->lock);
  int closed = r->closed;
  pthread_mutex_unlock(&r->lock);
  return closed;
}

void stkpy_runner_free(stkpy_runner *r) {
  if (!r) return;
  stkpy_runner_close(r);
  runner_unref(r);
}
