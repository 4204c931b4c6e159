/* src/cli/datagen_video.c: `stoker datagen --video DIR` -- a sample video data set for
 * readers.video: N clips in K class folders (DIR/class_000/clip_0000.mp4 ...), encoded by the
 * ffmpeg CLI (Debian's `ffmpeg`, installed by scripts/install-deps.sh) with real motion: pans and
 * zooms (ffmpeg's zoompan filter) over photographs (--sources DIR of JPEGs, e.g. bench/.photos
 * from bench/fetch_photos.sh), or over FFmpeg's mandelbrot / testsrc2 generators without sources.
 * Clip i's photograph, motion, and start come from (seed, i), so the same arguments give the same
 * clips. Not a hot path; ffmpeg runs as a child process (no shell), one clip at a time. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "commands.h"

extern char **environ;

typedef struct video_options {
  const char *dir, *sources, *codec;
  long count, classes, frames, width, height, fps, gop;
  uint64_t seed;
  int progress;
} video_options;

static void video_usage(FILE *out) {
  fprintf(out,
          "usage: stoker datagen --video DIR [--count N] [--classes K] [--frames F] [--size WxH] [--fps R]\n"
          "                      [--gop G] [--codec h264|hevc|mpeg4] [--sources PHOTO_DIR] [--seed S] [--[no-]progress]\n"
          "\n"
          "Writes N clips (default 16) into K class folders DIR/class_000.. (default 4): F frames (default 64)\n"
          "of WxH (default 640x360) at R frames/s (default 30), a keyframe every G frames (default 30),\n"
          "encoded by the ffmpeg CLI (default h264). Each clip pans or zooms over a photograph of\n"
          "PHOTO_DIR (*.jpg, sorted), or over FFmpeg's mandelbrot/testsrc2 patterns without --sources.\n"
          "The same seed (default 0) gives the same clips.\n");
}

static uint64_t mix(uint64_t x) { /* splitmix64 */
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

static int compare_names(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Sorted *.jpg / *.jpeg names in dir (malloc'd array of malloc'd strings). */
static char **list_photos(const char *dir, size_t *count) {
  *count = 0;
  DIR *d = opendir(dir);
  if (!d) return NULL;
  char **names = NULL;
  size_t cap = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    const char *dot = strrchr(e->d_name, '.');
    if (e->d_name[0] == '.' || !dot || (strcasecmp(dot, ".jpg") != 0 && strcasecmp(dot, ".jpeg") != 0)) continue;
    if (*count == cap) {
      cap = cap ? cap * 2 : 64;
      char **p = realloc(names, cap * sizeof *p);
      if (!p) break;
      names = p;
    }
    names[(*count)++] = strdup(e->d_name);
  }
  closedir(d);
  if (*count > 1) qsort(names, *count, sizeof *names, compare_names);
  return names;
}

/* The zoompan expression of motion m (0 zoom in, 1 zoom out, 2 pan right, 3 pan down) over F frames. */
static void motion_filter(int motion, long frames, const video_options *o, char *out, size_t size) {
  const char *zoom = motion == 0 ? "1+0.5*on/%ld" : motion == 1 ? "1.5-0.5*on/%ld" : "1.4+0*on/%ld";
  char z[64];
  snprintf(z, sizeof z, zoom, frames);
  char x[96], y[96];
  if (motion == 2) snprintf(x, sizeof x, "(iw-iw/zoom)*on/%ld", frames);
  else snprintf(x, sizeof x, "(iw-iw/zoom)/2");
  if (motion == 3) snprintf(y, sizeof y, "(ih-ih/zoom)*on/%ld", frames);
  else snprintf(y, sizeof y, "(ih-ih/zoom)/2");
  /* Upscale first so the sub-pixel steps of the crop window do not jitter. */
  snprintf(out, size,
           "scale=%ld:%ld:force_original_aspect_ratio=increase,crop=%ld:%ld,zoompan=z='%s':x='%s':y='%s':d=%ld:s=%ldx%"
           "ld:fps=%ld",
           o->width * 3, o->height * 3, o->width * 3, o->height * 3, z, x, y, frames, o->width, o->height, o->fps);
}

static int run_ffmpeg(char *const argv[]) {
  pid_t pid;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  int rc = posix_spawnp(&pid, "ffmpeg", &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) return -1;
  int status;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static int make_clip(const video_options *o, long i, char **photos, size_t num_photos) {
  uint64_t r = mix(o->seed * 0x100000001B3ull + (uint64_t)i);
  int motion = (int)(r % 4);
  char input[4096], filter[1024], path[4096], frames[32], gop[32], source[512];
  snprintf(path, sizeof path, "%s/class_%03ld/clip_%04ld.mp4", o->dir, i % o->classes, i);
  snprintf(frames, sizeof frames, "%ld", o->frames);
  snprintf(gop, sizeof gop, "%ld", o->gop);
  motion_filter(motion, o->frames, o, filter, sizeof filter);
  const char *format = NULL;
  if (num_photos) {
    snprintf(input, sizeof input, "%s/%s", o->sources, photos[(r >> 8) % num_photos]);
  } else { /* one still of a generator, moved like a photograph */
    format = "lavfi";
    if ((r >> 8) % 2)
      snprintf(source, sizeof source, "mandelbrot=size=%ldx%ld:start_scale=%g", o->width * 2, o->height * 2,
               0.5 + (double)((r >> 16) % 100) / 50.0);
    else snprintf(source, sizeof source, "testsrc2=size=%ldx%ld", o->width * 2, o->height * 2);
    snprintf(input, sizeof input, "%s", source);
  }
  const char *codec = !strcmp(o->codec, "hevc") ? "libx265" : !strcmp(o->codec, "mpeg4") ? "mpeg4" : "libx264";
  char *argv[40];
  int n = 0;
  argv[n++] = "ffmpeg", argv[n++] = "-hide_banner", argv[n++] = "-y";
  if (format) argv[n++] = "-f", argv[n++] = (char *)format;
  argv[n++] = "-i", argv[n++] = input;
  argv[n++] = "-vf", argv[n++] = filter, argv[n++] = "-frames:v", argv[n++] = frames;
  argv[n++] = "-c:v", argv[n++] = (char *)codec, argv[n++] = "-g", argv[n++] = gop;
  argv[n++] = "-pix_fmt", argv[n++] = "yuv420p", argv[n++] = "-an";
  if (!strcmp(codec, "libx265")) argv[n++] = "-tag:v", argv[n++] = "hvc1";
  argv[n++] = path, argv[n] = NULL;
  return run_ffmpeg(argv) == 0 ? 0 : -1;
}

static int parse_size(const char *text, long *w, long *h) {
  char x;
  return sscanf(text, "%ld%c%ld", w, &x, h) == 3 && (x == 'x' || x == 'X') && *w >= 16 && *h >= 16 && *w <= 8192 &&
                 *h <= 8192 && *w % 2 == 0 && *h % 2 == 0
             ? 0
             : -1;
}

static int parse_options(int argc, char **argv, video_options *o) {
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *value = i + 1 < argc ? argv[i + 1] : NULL;
    long *target = !strcmp(a, "--count")     ? &o->count
                   : !strcmp(a, "--classes") ? &o->classes
                   : !strcmp(a, "--frames")  ? &o->frames
                   : !strcmp(a, "--fps")     ? &o->fps
                   : !strcmp(a, "--gop")     ? &o->gop
                                             : NULL;
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      video_usage(stdout);
      return 0;
    } else if (!strcmp(a, "--video")) {
      continue;
    } else if (!strcmp(a, "--progress") || !strcmp(a, "--no-progress")) {
      o->progress = !strcmp(a, "--progress");
    } else if (target || !strcmp(a, "--seed")) {
      char *end;
      errno = 0;
      long v = value ? strtol(value, &end, 10) : -1;
      if (!value || errno || *end || v < (target ? 1 : 0) || v > 100000000) {
        stk_cli_error("datagen", "%s needs a %s integer", a, target ? "positive" : "non-negative");
        return 2;
      }
      if (target) *target = v;
      else o->seed = (uint64_t)v;
      i++;
    } else if (!strcmp(a, "--size") || !strcmp(a, "--codec") || !strcmp(a, "--sources")) {
      if (!value) {
        stk_cli_error("datagen", "%s needs a value", a);
        return 2;
      }
      if (!strcmp(a, "--size") && parse_size(value, &o->width, &o->height) != 0) {
        stk_cli_error("datagen", "--size needs WxH, even sizes in [16, 8192] (got %s)", value);
        return 2;
      }
      if (!strcmp(a, "--codec")) o->codec = value;
      if (!strcmp(a, "--sources")) o->sources = value;
      i++;
    } else if (a[0] == '-') {
      stk_cli_error("datagen", "unknown option %s for --video (see --video --help)", a);
      return 2;
    } else if (!o->dir) {
      o->dir = a;
    } else {
      stk_cli_error("datagen", "one directory only (got %s and %s)", o->dir, a);
      return 2;
    }
  }
  if (strcmp(o->codec, "h264") && strcmp(o->codec, "hevc") && strcmp(o->codec, "mpeg4")) {
    stk_cli_error("datagen", "--codec %s: use h264, hevc or mpeg4", o->codec);
    return 2;
  }
  if (!o->dir) {
    video_usage(stderr);
    return 2;
  }
  if (o->progress < 0) o->progress = isatty(STDERR_FILENO); /* a counter on a terminal unless asked */
  return -1; /* go on */
}

int stk_cli_datagen_video(int argc, char **argv) {
  video_options o = {
      .codec = "h264", .count = 16, .classes = 4, .frames = 64, .width = 640, .height = 360, .fps = 30, .gop = 30,
      .progress = -1};
  int rc = parse_options(argc, argv, &o);
  if (rc >= 0) return rc;
  size_t num_photos = 0;
  char **photos = o.sources ? list_photos(o.sources, &num_photos) : NULL;
  if (o.sources && num_photos == 0) {
    stk_cli_error("datagen", "--sources %s: no *.jpg photographs there", o.sources);
    return 1;
  }
  char path[4096];
  int failed = mkdir(o.dir, 0755) != 0 && errno != EEXIST;
  for (long k = 0; !failed && k < o.classes && k < o.count; k++) {
    snprintf(path, sizeof path, "%s/class_%03ld", o.dir, k);
    failed = mkdir(path, 0755) != 0 && errno != EEXIST;
  }
  if (failed) {
    stk_cli_error("datagen", "cannot create the class folders under %s: %s", o.dir, strerror(errno));
    return 1;
  }
  for (long i = 0; i < o.count; i++) {
    if (make_clip(&o, i, photos, num_photos) != 0) {
      stk_cli_error("datagen", "ffmpeg failed on clip %ld (is the ffmpeg CLI installed? scripts/install-deps.sh)", i);
      rc = 1;
      break;
    }
    if (o.progress) fprintf(stderr, "\rdatagen: %ld/%ld clips", i + 1, o.count);
  }
  if (o.progress) fputc('\n', stderr);
  for (size_t i = 0; i < num_photos; i++) free(photos[i]);
  free(photos);
  if (rc < 0) {
    printf("wrote %ld clips (%ld frames of %ldx%ld, %s) into %ld classes under %s\n", o.count, o.frames, o.width,
           o.height, o.codec, o.classes < o.count ? o.classes : o.count, o.dir);
    rc = 0;
  }
  return rc;
}
