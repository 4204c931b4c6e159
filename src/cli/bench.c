/* src/cli/bench.c: `stoker bench`: runs a pipeline (built-in rn50-train/rn50-val or a pipeline
 * file) for some seconds or epochs and measures it: images/s, MB/s, time to first batch, share
 * of time per operator, CPU time, thread->CPU map, allocations per batch after warm-up, and a
 * digest of every output byte and label (equal digests = identical output). Public API only.
 * Without --data it makes a sample set first with `stoker datagen` (this same binary). */
#include <errno.h>
#include <signal.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "stoker/stoker.h"
#include "bench_shards.h"
#include "commands.h"

typedef struct bench_args {
  const char *data, *pipeline, *device, *decoder, *priority, *bad_files_log;
  const char *checkpoint_file, *resume; /* --checkpoint-file, --resume */
  const char *shards;                   /* --shards SRC: the built-in pipeline reads tar shards */
  int checkpoint_every;                 /* --checkpoint-every: batches between checkpoints */
  int batch, threads, prefetch, epochs, skip_bad, json, no_digest, decode_hint, warmup_given;
  double seconds, warmup;
  double budget_mb; /* --host-memory-budget MB; 0 = the pipeline's default */
  unsigned long long seed; /* --seed: 0 to 2^64-1 */
} bench_args;

/* What one run measured. The window starts after the warm-up and ends once the last counted
 * batch is ready on the device (stk_batch_synchronize): images = images delivered in it. */
typedef struct bench_result {
  uint64_t digest;
  int digest_valid, epochs_done, exit_code, interrupted;
  uint64_t images, batches, warmup_images, warmup_batches;
  double window_s, cpu_s, warmup_s;
  double end_s;         /* now_s() when the window ended (after its synchronize) */
  double since_build_s; /* from before the pipeline was built to end_s */
  const char *unit;     /* a sample: "images", or "sequences" for a readers.video pipeline file */
} bench_result;

static volatile sig_atomic_t g_stop_signal;
static void on_stop_signal(int sig) { g_stop_signal = sig; }

static void usage(FILE *out) {
  fprintf(out,
          "usage: stoker bench [--data DIR] [--pipeline rn50-train|rn50-val|FILE] [--device cpu|gpu]\n"
          "                    [--decoder cpu|mixed] [--batch N] [--threads N] [--seconds S | --epochs E]\n"
          "                    [--warmup S] [--seed S] [--prefetch N] [--stream-priority high|normal]\n"
          "                    [--decode-size-hint] [--skip-bad-files] [--bad-files-log FILE] [--json]\n"
          "                    [--no-digest] [--checkpoint-every N --checkpoint-file FILE] [--resume FILE]\n"
          "                    [--shards DIR|LIST] [--host-memory-budget MB]\n"
          "  defaults: rn50-train, cpu, --batch 256, --threads 4, --warmup 10, --seconds 30, --seed 42,\n"
          "  --prefetch: 3 when the pipeline has the mixed JPEG decoder (its engines stay fed), else 2\n"
          "  the clock (the project's benchmark protocol): batches of the first --warmup seconds are not\n"
          "  counted; the window of --seconds then counts the images delivered and ends with a device\n"
          "  synchronize on the last batch. --epochs E counts E whole epochs from the first batch instead\n"
          "  (no warm-up unless --warmup is given; also synchronized on the last batch). JSON:\n"
          "  seconds_since_build runs from before the pipeline's build to the window's end\n"
          "  --decoder (built-in pipelines): mixed (the default with --device gpu) decodes on the GPU;\n"
          "  cpu with --device gpu decodes and resizes on the worker threads and normalizes on the GPU\n"
          "  (DALI's ResNet-50 example with --dali_cpu)\n"
          "  --decode-size-hint: rn50-train's CPU decoder may decode at a reduced size (DCT scaling);\n"
          "  faster, other pixels, so off by default\n"
          "  --skip-bad-files: a sample whose file cannot be read or decoded is replaced by the next good\n"
          "  one of the epoch; --bad-files-log FILE (implies it) writes each bad file once, with the\n"
          "  reason, as JSON lines {\"file\", \"reason\", \"epoch\", \"sample\"} (docs/pipeline.md)\n"
          "  --stream-priority: of the pipeline's CUDA streams (default high: above a training loop's)\n"
          "  --host-memory-budget MB: what the batch slots' host buffers may hold in all (default: the\n"
          "  pipeline's, sized for images: batch x (prefetch + 2) x 64 MiB, at most half the RAM); raise it\n"
          "  for large samples such as 1080p video sequences\n"
          "  without --data a sample set is made with `stoker datagen` (kept in a cache directory)\n"
          "  --shards DIR|LIST: the built-in pipeline reads WebDataset tar shards (readers.webdataset,\n"
          "  streamed from their start, no index) instead of the folder: DIR's *.tar files (what\n"
          "  `stoker datagen DATA --shards N` writes to DATA/shards), or a file listing one path,\n"
          "  http(s):// URL or pipe:COMMAND per line; each sample a .jpg and a .cls (its label)\n"
          "  the output digest (a hash of every output byte and label, in order, warm-up included; equal\n"
          "  digests = identical output) is computed on the consuming thread, copying GPU outputs to the\n"
          "  host: --no-digest leaves it out so the consumer costs nothing, as in a training loop\n"
          "  --checkpoint-every N: after every N batches delivered, write the pipeline's checkpoint to\n"
          "  --checkpoint-file (replaced atomically); --resume FILE builds the pipeline from such a\n"
          "  checkpoint: it delivers exactly the batches the checkpointed run would have delivered next\n"
          "  (same pipeline, data, seed and batch size; docs/checkpoint.md)\n"
          "  SIGINT/SIGTERM stop the run: the partial summary is printed and the exit status is 128+signal\n");
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double cpu_seconds(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 + (double)ru.ru_stime.tv_sec +
         ru.ru_stime.tv_usec * 1e-6;
}

/* FNV-1a over 8-byte words (then the tail bytes): the digest of all outputs. */
static uint64_t digest_bytes(uint64_t h, const void *data, size_t n) {
  const unsigned char *p = data;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    memcpy(&w, p + i, 8);
    h ^= w;
    h *= 1099511628211ull;
    h ^= h >> 29;
  }
  for (; i < n; i++) {
    h ^= p[i];
    h *= 1099511628211ull;
  }
  return h;
}

/* Adds view v of batch b to the digest (copying GPU data to host_buf, grown as needed). */
static int digest_view(const stk_batch *b, const stk_tensor_view *v, uint64_t *digest, void **host_buf,
                       size_t *host_cap) {
  const void *data = v->data;
  if (v->device_type != STK_DEVICE_CPU) {
    if (v->nbytes > *host_cap) {
      void *p = realloc(*host_buf, v->nbytes);
      if (!p) return 0;
      *host_buf = p;
      *host_cap = v->nbytes;
    }
    if (stk_batch_copy_to_host(b, v, *host_buf, *host_cap) != STK_OK) return 0;
    data = *host_buf;
  }
  *digest = digest_bytes(*digest, data, v->nbytes);
  return 1;
}

/* Makes (or reuses) a sample set in a cache directory with `stoker datagen`. */
static int ensure_sample_data(char *dir, size_t size, int quiet) {
  const char *base = getenv("XDG_CACHE_HOME");
  char root[512];
  if (base && *base) snprintf(root, sizeof root, "%s/stoker", base);
  else snprintf(root, sizeof root, "/tmp/stoker-cache-%u", (unsigned)getuid());
  mkdir(root, 0755);
  snprintf(dir, size, "%s/bench-data", root);
  char marker[800];
  snprintf(marker, sizeof marker, "%s/.complete", dir);
  if (access(marker, F_OK) == 0) return 0;
  if (!quiet) fprintf(stderr, "stoker bench: making a sample data set in %s (stoker datagen)...\n", dir);
  pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    /* datagen's stdout must not mix with ours (--json prints one object on stdout). */
    FILE *devnull = freopen("/dev/null", "w", stdout);
    (void)devnull;
    execl("/proc/self/exe", "stoker", "datagen", dir, "--count", "1024", "--classes", "8", (char *)NULL);
    _exit(127);
  }
  int status = 0;
  if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    stk_cli_error("bench", "`stoker datagen %s` failed (exit %d); pass --data DIR", dir,
                  WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    return -1;
  }
  FILE *m = fopen(marker, "w");
  if (m) fclose(m);
  return 0;
}

/* The text file at path (a pipeline text, a checkpoint), read the library's bounded way (a FIFO,
 * a device or a directory is refused at once); NULL with the reason printed. Free with stk_free. */
static char *read_file(const char *path, const char *what) {
  char *text = NULL, why[4400];
  if (stk_read_file(path, what, 0, &text, NULL, why, sizeof why) != STK_OK) stk_cli_error("bench", "%s", why);
  return text;
}

static int parse_args(int argc, char **argv, bench_args *a) {
  *a = (bench_args){.pipeline = "rn50-train",
                    .device = "cpu",
                    .batch = 256,
                    .threads = 4,
                    .prefetch = 0, /* the pipeline's default (stk_pipeline_options) */
                    .seconds = 0,
                    .epochs = 0,
                    .seed = 42};
  for (int i = 1; i < argc; i++) {
    const char *o = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(o, "--help") || !strcmp(o, "-h")) {
      usage(stdout);
      return 1;
    } else if (!strcmp(o, "--json")) a->json = 1;
    else if (!strcmp(o, "--no-digest")) a->no_digest = 1;
    else if (!strcmp(o, "--skip-bad-files")) a->skip_bad = 1;
    else if (!strcmp(o, "--decode-size-hint")) a->decode_hint = 1;
    else if (!v) {
      stk_cli_error("bench", "unknown option or missing value: %s", o);
      return 2;
    } else {
      long long n = 0, bad = 0;
      i++;
      if (!strcmp(o, "--data")) a->data = v;
      else if (!strcmp(o, "--bad-files-log")) a->bad_files_log = v, a->skip_bad = 1;
      else if (!strcmp(o, "--pipeline")) a->pipeline = v;
      else if (!strcmp(o, "--device")) a->device = v;
      else if (!strcmp(o, "--decoder")) a->decoder = v;
      else if (!strcmp(o, "--stream-priority")) a->priority = v;
      else if (!strcmp(o, "--checkpoint-file")) a->checkpoint_file = v;
      else if (!strcmp(o, "--resume")) a->resume = v;
      else if (!strcmp(o, "--shards")) a->shards = v;
      else if (!strcmp(o, "--checkpoint-every"))
        bad = stk_cli_parse_int("bench", o, v, 0, INT_MAX, &n), a->checkpoint_every = (int)n;
      else if (!strcmp(o, "--batch")) bad = stk_cli_parse_int("bench", o, v, 1, INT_MAX, &n), a->batch = (int)n;
      else if (!strcmp(o, "--threads")) bad = stk_cli_parse_int("bench", o, v, 1, 4096, &n), a->threads = (int)n;
      else if (!strcmp(o, "--prefetch")) bad = stk_cli_parse_int("bench", o, v, 1, 1000000, &n), a->prefetch = (int)n;
      else if (!strcmp(o, "--epochs")) bad = stk_cli_parse_int("bench", o, v, 0, INT_MAX, &n), a->epochs = (int)n;
      else if (!strcmp(o, "--seconds")) bad = stk_cli_parse_double("bench", o, v, 0, 1e9, &a->seconds);
      else if (!strcmp(o, "--warmup"))
        bad = stk_cli_parse_double("bench", o, v, 0, 1e9, &a->warmup), a->warmup_given = 1;
      else if (!strcmp(o, "--seed")) bad = stk_cli_parse_u64("bench", o, v, &a->seed);
      else if (!strcmp(o, "--host-memory-budget")) bad = stk_cli_parse_double("bench", o, v, 0, 1e12, &a->budget_mb);
      else {
        stk_cli_error("bench", "unknown option %s (see --help)", o);
        return 2;
      }
      if (bad) return 2;
    }
  }
  if (strcmp(a->device, "cpu") && strcmp(a->device, "gpu")) {
    stk_cli_error("bench", "--device must be cpu or gpu, not %s", a->device);
    return 2;
  }
  if (a->decoder && strcmp(a->decoder, "cpu") && strcmp(a->decoder, "mixed")) {
    stk_cli_error("bench", "--decoder must be cpu or mixed, not %s", a->decoder);
    return 2;
  }
  if (a->decoder && !strcmp(a->decoder, "mixed") && strcmp(a->device, "gpu")) {
    stk_cli_error("bench", "--decoder mixed needs --device gpu");
    return 2;
  }
  if (a->priority && strcmp(a->priority, "high") && strcmp(a->priority, "normal")) {
    stk_cli_error("bench", "--stream-priority must be high or normal, not %s", a->priority);
    return 2;
  }
  if (a->seconds > 0 && a->epochs > 0) {
    stk_cli_error("bench", "give --seconds or --epochs, not both");
    return 2;
  }
  if (a->batch < 1 || a->threads < 1 || a->prefetch < 0) {
    stk_cli_error("bench", "--batch, --threads and --prefetch must be positive");
    return 2;
  }
  if (a->budget_mb < 0 || (a->budget_mb > 0 && a->budget_mb < 1)) {
    stk_cli_error("bench", "--host-memory-budget is in MB and must be at least 1, not %g", a->budget_mb);
    return 2;
  }
  if (a->seconds < 0 || a->epochs < 0 || a->warmup < 0) {
    stk_cli_error("bench", "--seconds, --epochs and --warmup must not be negative");
    return 2;
  }
  if (a->checkpoint_every < 0 || (a->checkpoint_every > 0) != (a->checkpoint_file != NULL)) {
    stk_cli_error("bench", "--checkpoint-every N (N > 0) and --checkpoint-file FILE go together");
    return 2;
  }
  if (a->shards && strcmp(a->pipeline, "rn50-train") != 0 && strcmp(a->pipeline, "rn50-val") != 0) {
    stk_cli_error("bench",
                  "--shards applies to the built-in pipelines (a pipeline file names its own "
                  "readers.webdataset paths)");
    return 2;
  }
  if (a->seconds == 0 && a->epochs == 0) a->seconds = 30;
  if (!a->warmup_given) a->warmup = a->epochs > 0 ? 0 : 10;
  return 0;
}

/* Builds the pipeline the arguments name (NULL, with the reason printed, on failure). */
static stk_pipeline *build_pipeline(const bench_args *a, const char *data_dir, const char **unit) {
  stk_pipeline_options opts;
  stk_pipeline_options_default(&opts);
  opts.batch_size = a->batch;
  opts.num_threads = a->threads;
  opts.prefetch_queue_depth = a->prefetch;
  opts.seed = a->seed;
  opts.device_id = strcmp(a->device, "gpu") == 0 ? 0 : -1;
  opts.skip_bad_files = a->skip_bad;
  opts.bad_files_log = a->bad_files_log;
  opts.stop = (const volatile int *)&g_stop_signal; /* a reader waiting on a slow shard gives up at once */
  if (a->budget_mb > 0) opts.host_memory_budget = (size_t)(a->budget_mb * 1048576.0);
  if (a->priority && !strcmp(a->priority, "normal")) opts.stream_priority = STK_STREAM_PRIORITY_NORMAL;
  opts.enable_checkpointing = a->checkpoint_every > 0;
  char *resume_text = NULL;
  if (a->resume && !(resume_text = read_file(a->resume, "checkpoint"))) return NULL;
  opts.checkpoint = resume_text; /* copied by stk_pipeline_new */
  stk_pipeline *pipe = NULL;
  stk_status made = stk_pipeline_new(&opts, &pipe);
  stk_free(resume_text);
  if (made != STK_OK) {
    stk_cli_error("bench", "bad pipeline options");
    return NULL;
  }
  stk_status st;
  if (!strcmp(a->pipeline, "rn50-train") || !strcmp(a->pipeline, "rn50-val")) {
    stk_builtin_options bo;
    stk_builtin_options_default(&bo);
    bo.decoder = a->decoder;
    bo.decode_size_hint = a->decode_hint;
    char *reader = NULL;
    int shards = 0;
    int shuffle = !strcmp(a->pipeline, "rn50-train");
    if (a->shards && !(reader = stk_cli_bench_shards_reader(a->shards, shuffle, &shards))) {
      stk_pipeline_destroy(pipe);
      return NULL;
    }
    bo.reader = reader;
    st = stk_pipeline_add_builtin_ex(pipe, a->pipeline, data_dir, &bo);
    free(reader);
  } else {
    char *text = read_file(a->pipeline, "pipeline file");
    if (!text) {
      stk_pipeline_destroy(pipe);
      return NULL;
    }
    if (strstr(text, "readers.video")) *unit = "sequences";
    st = stk_pipeline_load_text(pipe, text, data_dir);
    stk_free(text);
  }
  if (st == STK_OK) st = stk_pipeline_build(pipe);
  if (st != STK_OK) {
    if (a->resume)
      stk_cli_error("bench", "%s (resuming from %s): %s", a->pipeline, a->resume, stk_pipeline_last_error(pipe));
    else stk_cli_error("bench", "%s: %s", a->pipeline, stk_pipeline_last_error(pipe));
    stk_pipeline_destroy(pipe);
    return NULL;
  }
  if (stk_pipeline_last_error(pipe)[0] && !a->json)
    fprintf(stderr, "stoker bench: warning: %s\n", stk_pipeline_last_error(pipe));
  return pipe;
}

/* Adds every output of batch b to the digest; 0 when a copy failed (the digest is then invalid). */
static int digest_batch(const stk_batch *b, uint64_t *digest, void **host_buf, size_t *host_cap) {
  for (int o = 0; o < stk_batch_num_outputs(b); o++) {
    stk_tensor_view v;
    if (stk_batch_tensor(b, o, &v) == STK_OK) {
      if (!digest_view(b, &v, digest, host_buf, host_cap)) return 0;
      continue;
    }
    for (int s = 0; s < stk_batch_size(b); s++)
      if (stk_batch_sample(b, o, s, &v) == STK_OK && !digest_view(b, &v, digest, host_buf, host_cap)) return 0;
  }
  return 1;
}

/* Next batch, on to the next epoch at an epoch's end: 1 = one, 0 = epochs done, -1 = error (printed). */
static int next_batch(stk_pipeline *pipe, const bench_args *a, bench_result *r, stk_batch **b) {
  for (;;) {
    stk_status st = stk_pipeline_next(pipe, b);
    if (st == STK_OK) return 1;
    if (st == STK_EOF_EPOCH) {
      r->epochs_done++;
      if (a->epochs > 0 && r->epochs_done >= a->epochs) return 0;
      st = stk_pipeline_reset(pipe);
      if (st == STK_OK) continue;
    }
    if (!g_stop_signal) stk_cli_error("bench", "%s (%s)", stk_pipeline_last_error(pipe), stk_status_name(st));
    return g_stop_signal ? 0 : -1; /* a wait given up for a stop signal (options.stop) is no error */
  }
}

/* Writes the checkpoint to `path` through a renamed temporary file (a crash keeps the old one): 0, or -1 (printed). */
static int write_checkpoint(stk_pipeline *pipe, const char *path) {
  char *text = NULL;
  stk_status st = stk_pipeline_checkpoint(pipe, &text);
  if (st != STK_OK) {
    stk_cli_error("bench", "checkpoint: %s", stk_pipeline_last_error(pipe));
    return -1;
  }
  char tmp[4200];
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  FILE *f = fopen(tmp, "wb");
  int ok = f && fputs(text, f) >= 0;
  ok = (f && fclose(f) == 0) && ok;
  free(text);
  if (!ok || rename(tmp, path) != 0) {
    stk_cli_error("bench", "cannot write checkpoint %s: %s", path, strerror(errno));
    remove(tmp);
    return -1;
  }
  return 0;
}

static void print_progress(const bench_result *r, double t, double window_start, int in_warmup) {
  if (in_warmup) printf("\r  warm-up %6.1f s   %6llu batches", t - window_start, (unsigned long long)r->warmup_batches);
  else
    printf("\r%8.1f %s/s  %6llu batches  %6.1f s measured", t > window_start ? r->images / (t - window_start) : 0.0,
           r->unit, (unsigned long long)r->batches, t - window_start);
  fflush(stdout);
}

/* The measuring loop: warm-up (not counted), then the window, ended by a device synchronize on
 * the last batch counted. */
static void measure(stk_pipeline *pipe, const bench_args *a, bench_result *r) {
  int tty = stk_cli_isatty_stdout() && !a->json;
  void *host_buf = NULL;
  size_t host_cap = 0;
  double t_start = now_s(), window_start = t_start, cpu0 = cpu_seconds(), last_print = t_start;
  int in_warmup = a->warmup > 0;
  stk_batch *held = NULL; /* --epochs: the batch delivered last */
  r->digest = 1469598103934665603ull;
  r->digest_valid = !a->no_digest;
  for (;;) {
    double t = now_s();
    if (in_warmup && t - t_start >= a->warmup) {
      in_warmup = 0;
      window_start = t;
      cpu0 = cpu_seconds();
      r->warmup_s = t - t_start;
    }
    if (!in_warmup && a->seconds > 0 && t - window_start >= a->seconds) break;
    if (g_stop_signal) {
      r->interrupted = 1;
      break;
    }
    stk_batch *b = NULL;
    int got = next_batch(pipe, a, r, &b);
    if (got <= 0) { /* the end, an error, or a wait given up for a stop signal */
      r->interrupted = g_stop_signal != 0, r->exit_code = got < 0;
      break;
    }
    if (r->digest_valid) r->digest_valid = digest_batch(b, &r->digest, &host_buf, &host_cap);
    int last = !in_warmup && a->seconds > 0 && now_s() - window_start >= a->seconds;
    if (last || g_stop_signal) stk_batch_synchronize(b); /* the clock stops when the batch is ready */
    uint64_t valid = (uint64_t)stk_batch_valid_samples(b);
    if (in_warmup) r->warmup_images += valid, r->warmup_batches++;
    else r->images += valid, r->batches++;
    if (held) stk_batch_release(held); /* --epochs: the last batch is synchronized at the end */
    held = a->epochs > 0 ? b : NULL;
    if (!held) stk_batch_release(b);
    uint64_t delivered = r->batches + r->warmup_batches;
    if (a->checkpoint_every > 0 && delivered % (uint64_t)a->checkpoint_every == 0 &&
        write_checkpoint(pipe, a->checkpoint_file) != 0) {
      r->exit_code = 1;
      break;
    }
    t = now_s();
    if (tty && t - last_print >= 0.5) {
      print_progress(r, t, in_warmup ? t_start : window_start, in_warmup);
      last_print = t;
    }
  }
  if (held) { /* --epochs: the clock stops when the last batch is ready on the device */
    stk_batch_synchronize(held);
    stk_batch_release(held);
  }
  if (in_warmup) { /* the run ended inside the warm-up: report what there is, marked as such */
    window_start = t_start;
    r->images = r->warmup_images, r->batches = r->warmup_batches;
    r->warmup_images = r->warmup_batches = 0;
  }
  r->end_s = now_s();
  r->window_s = r->end_s - window_start;
  r->cpu_s = cpu_seconds() - cpu0;
  if (tty) printf("\n");
  free(host_buf);
}

static void report_json(stk_pipeline *pipe, const bench_args *a, const char *data_dir, const bench_result *r,
                        const stk_pipeline_stats *stats, double allocs_per_batch, const char *decoder) {
  double total_op = 0, w = r->window_s;
  for (int i = 0; i < stats->num_nodes; i++) total_op += stats->op_seconds[i];
  printf("{\"pipeline\": ");
  stk_cli_print_json_string(a->pipeline);
  printf(", \"data\": ");
  stk_cli_print_json_string(a->shards ? a->shards : data_dir);
  printf(", \"shards\": %s, \"unit\": \"%s\"", a->shards ? "true" : "false", r->unit);
  printf(
      ", \"device\": \"%s\", \"decoder\": \"%s\", \"batch_size\": %d, \"threads\": %d, \"prefetch\": %d, "
      "\"seed\": %llu, \"decode_size_hint\": %s, ",
      a->device, decoder, a->batch, a->threads, stats->prefetch_queue_depth, (unsigned long long)a->seed,
      a->decode_hint ? "true" : "false");
  printf(
      "\"warmup_seconds\": %.3f, \"warmup_images\": %llu, \"images\": %llu, \"batches\": %llu, "
      "\"epochs_completed\": %d, \"seconds\": %.3f, \"images_per_second\": %.2f, \"mb_per_second\": %.2f, "
      "\"time_to_first_batch_s\": %.4f, \"seconds_since_build\": %.3f, \"cpu_seconds\": %.3f, "
      "\"cpu_cores_busy\": %.2f, \"skipped_files\": %llu, ",
      r->warmup_s, (unsigned long long)r->warmup_images, (unsigned long long)r->images, (unsigned long long)r->batches,
      r->epochs_done, w, w > 0 ? r->images / w : 0.0,
      w > 0 ? stats->bytes_read / (r->window_s + r->warmup_s) / 1e6 : 0.0, stats->time_to_first_batch_s,
      r->since_build_s, r->cpu_s, w > 0 ? r->cpu_s / w : 0.0, (unsigned long long)stats->skipped_files);
  if (r->digest_valid) printf("\"output_digest\": \"%016llx\", ", (unsigned long long)r->digest);
  else printf("\"output_digest\": null, ");
  printf("\"allocations\": %llu, \"allocations_after_warmup\": %llu, \"allocations_per_batch_after_warmup\": %.3f, ",
         (unsigned long long)stats->allocations, (unsigned long long)stats->allocations_after_warmup, allocs_per_batch);
  printf(
      "\"decoded_hw\": %llu, \"decoded_cuda\": %llu, \"decoded_hybrid\": %llu, \"decoded_cpu\": %llu, "
      "\"device_bytes_held\": %llu, \"pinned_bytes_held\": %llu, ",
      (unsigned long long)stats->decoded_hw, (unsigned long long)stats->decoded_cuda,
      (unsigned long long)stats->decoded_hybrid, (unsigned long long)stats->decoded_cpu,
      (unsigned long long)stats->device_bytes_held, (unsigned long long)stats->pinned_bytes_held);
  /* where the time went (seconds since build; docs/pipeline.md "stats"), to see what holds a run up */
  printf(
      "\"next_wait_s\": %.3f, \"batch_latency_s\": %.3f, \"gpu_stage_s\": %.3f, \"upload_s\": %.3f, "
      "\"slot_wait_s\": %.3f, ",
      stats->next_wait_s, stats->batch_latency_s, stats->gpu_stage_s, stats->upload_s, stats->slot_wait_s);
  printf("\"operator_share\": {");
  for (int i = 0; i < stats->num_nodes; i++) {
    printf("%s", i ? ", " : "");
    stk_cli_print_json_string(stk_pipeline_node_name(pipe, i));
    printf(": %.4f", total_op > 0 ? stats->op_seconds[i] / total_op : 0.0);
  }
  printf("}, \"thread_cpus\": [");
  for (int i = 0; i < stats->num_threads; i++) printf("%s%d", i ? ", " : "", stats->thread_cpus[i]);
  printf("], \"interrupted\": %s, \"exit_status\": %d}\n", r->interrupted ? "true" : "false", r->exit_code);
}

static void report_text(stk_pipeline *pipe, const bench_args *a, const char *data_dir, const bench_result *r,
                        const stk_pipeline_stats *stats, double allocs_per_batch, const char *decoder) {
  double total_op = 0, w = r->window_s;
  for (int i = 0; i < stats->num_nodes; i++) total_op += stats->op_seconds[i];
  printf("pipeline %s on %s (decoder %s): batch %d, %d threads, prefetch %d, seed %llu, data %s%s\n", a->pipeline,
         a->device, decoder, a->batch, a->threads, stats->prefetch_queue_depth, (unsigned long long)a->seed, data_dir,
         r->interrupted ? "  [interrupted: partial summary]" : "");
  printf("  %-19s %.1f  (%llu %s, %llu batches in a %.2f s window after %.1f s of warm-up)\n",
         !strcmp(r->unit, "images") ? "images/s" : "sequences/s", w > 0 ? r->images / w : 0.0,
         (unsigned long long)r->images, r->unit, (unsigned long long)r->batches, w, r->warmup_s);
  printf("  MB/s read           %.1f\n", w > 0 ? stats->bytes_read / (w + r->warmup_s) / 1e6 : 0.0);
  printf("  time to first batch %.3f s\n", stats->time_to_first_batch_s);
  printf("  CPU time            %.2f s (%.1f cores busy)\n", r->cpu_s, w > 0 ? r->cpu_s / w : 0);
  printf("  allocations/batch   %.3f after warm-up (%llu in all)\n", allocs_per_batch,
         (unsigned long long)stats->allocations);
  printf("  skipped files       %llu\n", (unsigned long long)stats->skipped_files);
  uint64_t decoded = stats->decoded_hw + stats->decoded_cuda + stats->decoded_hybrid + stats->decoded_cpu;
  if (decoded)
    printf("  mixed decoder split hw %.1f%%, cuda %.1f%%, hybrid %.1f%%, cpu %.1f%%  (device memory held %.1f MiB)\n",
           100.0 * stats->decoded_hw / decoded, 100.0 * stats->decoded_cuda / decoded,
           100.0 * stats->decoded_hybrid / decoded, 100.0 * stats->decoded_cpu / decoded,
           stats->device_bytes_held / 1048576.0);
  if (stats->skipped_files) {
    char *names = NULL;
    if (stk_pipeline_skipped_files(pipe, &names) == STK_OK) printf("%s", names);
    free(names);
  }
  printf("  time per operator:\n");
  for (int i = 0; i < stats->num_nodes; i++)
    printf("    %-24s %5.1f%%  (%.2f s)\n", stk_pipeline_node_name(pipe, i),
           total_op > 0 ? 100.0 * stats->op_seconds[i] / total_op : 0.0, stats->op_seconds[i]);
  printf("  thread -> CPU:");
  for (int i = 0; i < stats->num_threads; i++)
    stats->thread_cpus[i] >= 0 ? printf(" %d->%d", i, stats->thread_cpus[i]) : printf(" %d->(unpinned)", i);
  printf("\n");
  if (r->digest_valid) printf("  output digest       %016llx\n", (unsigned long long)r->digest);
}

int stk_cli_bench(int argc, char **argv) {
  bench_args a;
  int rc = parse_args(argc, argv, &a);
  if (rc) return rc == 1 ? 0 : rc;
  char data_dir[700];
  if (a.data) snprintf(data_dir, sizeof data_dir, "%s", a.data);
  else if (a.shards) snprintf(data_dir, sizeof data_dir, "%s (shards)", a.shards);
  else if (ensure_sample_data(data_dir, sizeof data_dir, a.json) != 0) return 1;
  struct sigaction sa; /* before the build: its readers may already be waiting on a slow source */
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_stop_signal;
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  double t_build = now_s();
  bench_result r = {.unit = "images"};
  stk_pipeline *pipe = build_pipeline(&a, data_dir, &r.unit);
  if (!pipe) return g_stop_signal ? 128 + (int)g_stop_signal : 1;
  measure(pipe, &a, &r);
  r.since_build_s = r.end_s - t_build;
  stk_pipeline_stats stats;
  stk_pipeline_stats_get(pipe, &stats);
  uint64_t warm = (uint64_t)stats.prefetch_queue_depth + 1, all_batches = r.batches + r.warmup_batches;
  double allocs_per_batch =
      all_batches > warm ? (double)stats.allocations_after_warmup / (double)(all_batches - warm) : 0;
  const char *decoder = a.decoder ? a.decoder : strcmp(a.device, "gpu") ? "cpu" : "mixed";
  if (a.json) report_json(pipe, &a, data_dir, &r, &stats, allocs_per_batch, decoder);
  else report_text(pipe, &a, data_dir, &r, &stats, allocs_per_batch, decoder);
  fflush(stdout);
  stk_pipeline_destroy(pipe);
  if (r.interrupted) return 128 + (int)g_stop_signal;
  return r.exit_code;
}
