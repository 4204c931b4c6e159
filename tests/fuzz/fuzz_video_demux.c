/* tests/fuzz/fuzz_video_demux.c: libFuzzer target for readers.video's demux entry -- an arbitrary
 * byte string opened as a container from memory (a custom AVIOContext), its video stream chosen
 * and its frame/keyframe index built (video_demux.c), then a seek to its middle keyframe and a
 * read. Any input must give STK_OK or an error status with a message, never a crash, a leak or a
 * hang. Seed corpus: tests/fuzz/corpus_video_demux/ (tiny H.264/MPEG-4/VP9 clips, an audio-only
 * file).
 *
 * Build and run (clang with libFuzzer and ASan): `make fuzz-video` (FUZZ_SECONDS=60 by default).
 * Built with -DSTK_FUZZ_REPLAY (any compiler), main() replays the files named on the command line
 * instead, which is how `make fuzz-video` checks the corpus first. Not part of the library. */
#include <stdio.h>
#include <stdlib.h>

#include "ops/video/video_demux.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char err[512] = "";
  stk__video_demuxer *demuxer = NULL;
  if (stk__video_demuxer_open(NULL, data, size, "fuzz input", &demuxer, err, sizeof err) != STK_OK) {
    if (!err[0]) abort(); /* an error must say what went wrong */
    return 0;
  }
  stk__video_index index;
  stk_status st = stk__video_index_build(demuxer, 0, &index, err, sizeof err);
  if (st != STK_OK && !err[0] && st != STK_ENOMEM) abort();
  if (st == STK_OK) {
    if (index.num_frames < 1 || index.num_keyframes < 1) abort();
    int64_t key = stk__video_index_keyframe_before(&index, index.num_frames / 2);
    if (key < 0 || key >= index.num_keyframes) abort();
    AVPacket *pkt = av_packet_alloc();
    if (pkt && stk__video_demuxer_seek(demuxer, index.key_dts[key], err, sizeof err) == STK_OK &&
        stk__video_demuxer_read(demuxer, pkt, err, sizeof err) == STK_OK)
      av_packet_unref(pkt);
    av_packet_free(&pkt);
    stk__video_index_free(&index);
  }
  stk__video_demuxer_free(demuxer);
  return 0;
}

#ifdef STK_FUZZ_REPLAY
int main(int argc, char **argv) {
  for (int i = 1; i < argc; i++) {
    FILE *f = fopen(argv[i], "rb");
    if (!f) {
      perror(argv[i]);
      return 1;
    }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *data = malloc(n > 0 ? (size_t)n : 1);
    size_t got = data ? fread(data, 1, (size_t)n, f) : 0;
    fclose(f);
    LLVMFuzzerTestOneInput(data, got);
    free(data);
    printf("ok %s\n", argv[i]);
  }
  return 0;
}
#endif
