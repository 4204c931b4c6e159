/* src/cli/bench.c: `stoker bench`: runs a pipeline (built-in rn50-train/rn50-val or a pipeline
 * file) for some seconds or epochs and measures it: images/s, MB/s, time to first batch, share
 * of time per operator, CPU time, thread->CPU map, allocations per batch after warm-up, and a
 * digest of every output byte and label (equal digests = identical output). Public API only.
 * Without --data it makes a sample set first with `stoker datagen` (this same binary). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "stoker/stoker.h"
#include "commands.h"

typedef struct bench_args {
  const char *data, *pipeline, *device, *decoder, *priority;
  int batch, threads, prefetch, epochs, skip_bad, json, no_digest;
  double seconds;
  uint64_t seed;
} bench_args;

static void usage(FILE *out) {
  fprintf(out,
          "usage: stoker bench [--data DIR] [--pipeline rn50-train|rn50-val|FILE] [--device cpu|gpu]\n"
          "                    [--decoder cpu|mixed] [--batch N] [--threads N] [--seconds S | --epochs E]\n"
          "                    [--seed S] [--prefetch N] [--stream-priority high|normal] [--skip-bad-files]\n"
          "                    [--json] [--no-digest]\n"
          "  defaults: rn50-train, cpu, --batch 256, --threads 4, --seconds 10, --seed 42, --prefetch 2;\n"
          "  --decoder (built-in pipelines): mixed (the default with --device gpu) decodes on the GPU;\n"
          "  cpu with --device gpu decodes and resizes on the worker threads and normalizes on the GPU\n"
          "  (DALI's ResNet-50 example with --dali_cpu)\n"
          "  --stream-priority: of the pipeline's CUDA streams (default high: above a training loop's)\n"
          "  without --data a sample set is made with `stoker datagen` (kept in a cache directory)\n"
          "  the output digest (a hash of every output byte and label, in order; equal digests =\n"
          "  identical output) is computed on the consuming thread, copying GPU outputs to the host:\n"
          "  --no-digest leaves it out so the consumer costs nothing, as in a training loop\n");
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double cpu_seconds(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 + (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec * 1e-6;
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

static char *read_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *buf = n >= 0 ? malloc((size_t)n + 1) : NULL;
  if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
    free(buf);
    buf = NULL;
  }
  if (buf) buf[n] = '\0';
  fclose(f);
  return buf;
}

static int parse_args(int argc, char **argv, bench_args *a) {
  *a = (bench_args){.pipeline = "rn50-train", .device = "cpu", .batch = 256, .threads = 4, .prefetch = 2,
                    .seconds = 0, .epochs = 0, .seed = 42};
  for (int i = 1; i < argc; i++) {
    const char *o = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(o, "--help") || !strcmp(o, "-h")) {
      usage(stdout);
      return 1;
    } else if (!strcmp(o, "--json")) a->json = 1;
    else if (!strcmp(o, "--no-digest")) a->no_digest = 1;
    else if (!strcmp(o, "--skip-bad-files")) a->skip_bad = 1;
    else if (!v) {
      stk_cli_error("bench", "unknown option or missing value: %s", o);
      return 2;
    } else {
      char *end = NULL;
      i++;
      if (!strcmp(o, "--data")) a->data = v;
      else if (!strcmp(o, "--pipeline")) a->pipeline = v;
      else if (!strcmp(o, "--device")) a->device = v;
      else if (!strcmp(o, "--decoder")) a->decoder = v;
      else if (!strcmp(o, "--stream-priority")) a->priority = v;
      else if (!strcmp(o, "--batch")) a->batch = (int)strtol(v, &end, 10);
      else if (!strcmp(o, "--threads")) a->threads = (int)strtol(v, &end, 10);
      else if (!strcmp(o, "--prefetch")) a->prefetch = (int)strtol(v, &end, 10);
      else if (!strcmp(o, "--epochs")) a->epochs = (int)strtol(v, &end, 10);
      else if (!strcmp(o, "--seconds")) a->seconds = strtod(v, &end);
      else if (!strcmp(o, "--seed")) a->seed = strtoull(v, &end, 10);
      else {
        stk_cli_error("bench", "unknown option %s (see --help)", o);
        return 2;
      }
      if (end && (*end || end == v)) {
        stk_cli_error("bench", "%s: not a number: %s", o, v);
        return 2;
      }
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
  if (a->batch < 1 || a->threads < 1 || a->prefetch < 1 || a->seconds < 0 || a->epochs < 0) {
    stk_cli_error("bench", "--batch, --threads and --prefetch must be positive");
    return 2;
  }
  if (a->seconds == 0 && a->epochs == 0) a->seconds = 10;
  return 0;
}

int stk_cli_bench(int argc, char **argv) {
  bench_args a;
  int rc = parse_args(argc, argv, &a);
  if (rc) return rc == 1 ? 0 : rc;
  char data_dir[700];
  if (a.data) snprintf(data_dir, sizeof data_dir, "%s", a.data);
  else if (ensure_sample_data(data_dir, sizeof data_dir, a.json) != 0) return 1;

  stk_pipeline_options opts;
  stk_pipeline_options_default(&opts);
  opts.batch_size = a.batch;
  opts.num_threads = a.threads;
  opts.prefetch_queue_depth = a.prefetch;
  opts.seed = a.seed;
  opts.device_id = strcmp(a.device, "gpu") == 0 ? 0 : -1;
  opts.skip_bad_files = a.skip_bad;
  if (a.priority && !strcmp(a.priority, "normal")) opts.stream_priority = STK_STREAM_PRIORITY_NORMAL;
  stk_pipeline *pipe = NULL;
  if (stk_pipeline_new(&opts, &pipe) != STK_OK) {
    stk_cli_error("bench", "bad pipeline options");
    return 2;
  }
  stk_status st;
  if (!strcmp(a.pipeline, "rn50-train") || !strcmp(a.pipeline, "rn50-val")) {
    st = stk_pipeline_add_builtin_on(pipe, a.pipeline, data_dir, a.decoder);
  } else {
    char *text = read_file(a.pipeline);
    if (!text) {
      stk_cli_error("bench", "cannot read pipeline file %s: %s", a.pipeline, strerror(errno));
      stk_pipeline_destroy(pipe);
      return 2;
    }
    st = stk_pipeline_load_text(pipe, text, data_dir);
    free(text);
  }
  if (st == STK_OK) st = stk_pipeline_build(pipe);
  if (st != STK_OK) {
    stk_cli_error("bench", "%s: %s", a.pipeline, stk_pipeline_last_error(pipe));
    stk_pipeline_destroy(pipe);
    return 1;
  }
  if (stk_pipeline_last_error(pipe)[0] && !a.json) fprintf(stderr, "stoker bench: warning: %s\n", stk_pipeline_last_error(pipe));

  int tty = stk_cli_isatty_stdout() && !a.json;
  double cpu0 = cpu_seconds(), t0 = now_s(), last_print = t0;
  uint64_t digest = 1469598103934665603ull;
  int digest_valid = !a.no_digest, epochs_done = 0;
  void *host_buf = NULL;
  size_t host_cap = 0;
  uint64_t images = 0, batches = 0;
  int exit_code = 0;
  for (;;) {
    double t = now_s();
    if (a.seconds > 0 && t - t0 >= a.seconds) break;
    stk_batch *b = NULL;
    st = stk_pipeline_next(pipe, &b);
    if (st == STK_EOF_EPOCH) {
      epochs_done++;
      if (a.epochs > 0 && epochs_done >= a.epochs) break;
      st = stk_pipeline_reset(pipe);
      if (st == STK_OK) continue;
    }
    if (st != STK_OK) {
      if (tty) printf("\n");
      stk_cli_error("bench", "%s (%s)", stk_pipeline_last_error(pipe), stk_status_name(st));
      exit_code = 1;
      break;
    }
    int valid = stk_batch_valid_samples(b);
    for (int o = 0; digest_valid && o < stk_batch_num_outputs(b); o++) {
      stk_tensor_view v;
      if (stk_batch_tensor(b, o, &v) == STK_OK) {
        digest_valid = digest_view(b, &v, &digest, &host_buf, &host_cap);
        continue;
      }
      for (int s = 0; s < stk_batch_size(b) && digest_valid; s++)
        if (stk_batch_sample(b, o, s, &v) == STK_OK) digest_valid = digest_view(b, &v, &digest, &host_buf, &host_cap);
    }
    images += (uint64_t)valid;
    batches++;
    stk_batch_release(b);
    t = now_s();
    if (tty && t - last_print >= 0.5) {
      printf("\r%8.1f images/s  %6llu batches  %6.1f s elapsed", images / (t - t0), (unsigned long long)batches, t - t0);
      fflush(stdout);
      last_print = t;
    }
  }
  double elapsed = now_s() - t0, cpu = cpu_seconds() - cpu0;
  if (tty) printf("\n");
  stk_pipeline_stats stats;
  stk_pipeline_stats_get(pipe, &stats);
  double total_op = 0;
  for (int i = 0; i < stats.num_nodes; i++) total_op += stats.op_seconds[i];
  int warm = a.prefetch + 1;
  double allocs_per_batch = batches > (uint64_t)warm ? (double)stats.allocations_after_warmup / (double)(batches - warm) : 0;
  double ips = elapsed > 0 ? images / elapsed : 0, mbps = elapsed > 0 ? stats.bytes_read / elapsed / 1e6 : 0;
  const char *decoder = a.decoder ? a.decoder : strcmp(a.device, "gpu") ? "cpu" : "mixed";
  if (a.json) {
    printf("{\"pipeline\": \"%s\", \"device\": \"%s\", \"decoder\": \"%s\", \"batch_size\": %d, \"threads\": %d, "
           "\"prefetch\": %d, \"seed\": %llu, ",
           a.pipeline, a.device, decoder, a.batch, a.threads, a.prefetch, (unsigned long long)a.seed);
    printf("\"images\": %llu, \"batches\": %llu, \"epochs_completed\": %d, \"seconds\": %.3f, \"images_per_second\": %.2f, "
           "\"mb_per_second\": %.2f, \"time_to_first_batch_s\": %.4f, \"cpu_seconds\": %.3f, \"skipped_files\": %llu, ",
           (unsigned long long)images, (unsigned long long)batches, epochs_done, elapsed, ips, mbps,
           stats.time_to_first_batch_s, cpu, (unsigned long long)stats.skipped_files);
    if (digest_valid) printf("\"output_digest\": \"%016llx\", ", (unsigned long long)digest);
    else printf("\"output_digest\": null, ");
    printf("\"allocations\": %llu, \"allocations_after_warmup\": %llu, \"allocations_per_batch_after_warmup\": %.3f, ",
           (unsigned long long)stats.allocations, (unsigned long long)stats.allocations_after_warmup, allocs_per_batch);
    printf("\"decoded_hw\": %llu, \"decoded_cuda\": %llu, \"decoded_hybrid\": %llu, \"decoded_cpu\": %llu, "
           "\"device_bytes_held\": %llu, \"pinned_bytes_held\": %llu, ",
           (unsigned long long)stats.decoded_hw, (unsigned long long)stats.decoded_cuda,
           (unsigned long long)stats.decoded_hybrid, (unsigned long long)stats.decoded_cpu,
           (unsigned long long)stats.device_bytes_held, (unsigned long long)stats.pinned_bytes_held);
    printf("\"operator_share\": {");
    for (int i = 0; i < stats.num_nodes; i++)
      printf("%s\"%s\": %.4f", i ? ", " : "", stk_pipeline_node_name(pipe, i),
             total_op > 0 ? stats.op_seconds[i] / total_op : 0.0);
    printf("}, \"thread_cpus\": [");
    for (int i = 0; i < stats.num_threads; i++) printf("%s%d", i ? ", " : "", stats.thread_cpus[i]);
    printf("], \"exit_status\": %d}\n", exit_code);
  } else {
    printf("pipeline %s on %s (decoder %s): batch %d, %d threads, prefetch %d, seed %llu, data %s\n", a.pipeline,
           a.device, decoder, a.batch, a.threads, a.prefetch, (unsigned long long)a.seed, data_dir);
    printf("  images/s            %.1f  (%llu images, %llu batches in %.2f s)\n", ips, (unsigned long long)images,
           (unsigned long long)batches, elapsed);
    printf("  MB/s read           %.1f\n", mbps);
    printf("  time to first batch %.3f s\n", stats.time_to_first_batch_s);
    printf("  CPU time            %.2f s (%.1f cores busy)\n", cpu, elapsed > 0 ? cpu / elapsed : 0);
    printf("  allocations/batch   %.3f after warm-up (%llu in all)\n", allocs_per_batch, (unsigned long long)stats.allocations);
    printf("  skipped files       %llu\n", (unsigned long long)stats.skipped_files);
    uint64_t decoded = stats.decoded_hw + stats.decoded_cuda + stats.decoded_hybrid + stats.decoded_cpu;
    if (decoded)
      printf("  mixed decoder split hw %.1f%%, cuda %.1f%%, hybrid %.1f%%, cpu %.1f%%  (device memory held %.1f MiB)\n",
             100.0 * stats.decoded_hw / decoded, 100.0 * stats.decoded_cuda / decoded,
             100.0 * stats.decoded_hybrid / decoded, 100.0 * stats.decoded_cpu / decoded,
             stats.device_bytes_held / 1048576.0);
    if (stats.skipped_files) {
      char *names = NULL;
      if (stk_pipeline_skipped_files(pipe, &names) == STK_OK) printf("%s", names);
      free(names);
    }
    printf("  time per operator:\n");
    for (int i = 0; i < stats.num_nodes; i++)
      printf("    %-24s %5.1f%%  (%.2f s)\n", stk_pipeline_node_name(pipe, i),
             total_op > 0 ? 100.0 * stats.op_seconds[i] / total_op : 0.0, stats.op_seconds[i]);
    printf("  thread -> CPU:");
    for (int i = 0; i < stats.num_threads; i++)
      stats.thread_cpus[i] >= 0 ? printf(" %d->%d", i, stats.thread_cpus[i]) : printf(" %d->(unpinned)", i);
    printf("\n");
    if (digest_valid) printf("  output digest       %016llx\n", (unsigned long long)digest);
  }
  free(host_buf);
  stk_pipeline_destroy(pipe);
  return exit_code;
}
