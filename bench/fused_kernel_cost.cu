/* bench/fused_kernel_cost.cu: what stoker's fused resize -> crop -> mirror -> normalize kernel
 * (src/ops/augment/crop_mirror_normalize/cmn_kernels.cu, stk_fused_kernel) costs on its own, for the ResNet-50 view's batch:
 * 256 decoded random-crop windows of ImageNet-like sizes (each side 96-480 px, seeded), resized to
 * 224 x 224, mirrored every other sample, normalized to float16 CHW (in one launch at high priority a
 * training stream on the same GPU stops for all of it). Prints the median of ITER
 * timed launches (CUDA events, after 20 untimed), the bytes read and written and the bandwidth
 * that is. A diagnostic for trying kernel variants, not a protocol row; not built by CMake:
 *   gcc -O2 -std=c11 -Isrc -Iinclude -c src/ops/augment/resize/resample.c -o /tmp/resample.o
 *   nvcc -O3 -std=c++17 -arch=sm_90 -Isrc -Iinclude bench/fused_kernel_cost.cu src/ops/augment/crop_mirror_normalize/cmn_kernels.cu \
 *     /tmp/resample.o -o .carry-py/fused_kernel_cost
 *   .carry-py/fused_kernel_cost [ITER (200)] [BATCH (256)] [CAPS (0,auto,264,528)]
 * CAPS: the grids to time (STOKER_FUSED_BLOCKS; 0 = one block a tile;
 * auto = stk__gpu_fused_default_blocks, today's), each optionally /N: the batch in N launches
 * (STOKER_FUSED_SPLIT, e.g. auto/8); each output compared bit for bit with the first's (exit 1
 * when one differs).
 * Built on the build machine (no GPU needed) and carried: bench/lease/lease-job.sh's fusedcost step runs
 * it. It needs only the CUDA runtime. */
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "ops/augment/resize/resample.h"
#include "ops/common/kernels.h"

#define CHECK_CUDA(call)                                                                  \
  do {                                                                                    \
    cudaError_t e_ = (call);                                                              \
    if (e_ != cudaSuccess) {                                                              \
      std::fprintf(stderr, "fused_kernel_cost: %s: %s\n", #call, cudaGetErrorString(e_)); \
      std::exit(1);                                                                       \
    }                                                                                     \
  } while (0)

static uint32_t next_random(uint32_t *state) { /* xorshift32: the same sizes on every run */
  uint32_t x = *state;
  x ^= x << 13;
  x ^= x >> 17;
  x ^= x << 5;
  return *state = x;
}

/* One axis's weight tables (in -> out, linear, antialiased: the pipeline's resize) on the device. */
static stk__gpu_axis upload_axis(int in, int out, std::vector<void *> *owned) {
  int taps = stk__resample_max_taps(in, out, 0.0, in, STK__INTERP_LINEAR, 1);
  std::vector<int32_t> first((size_t)out);
  std::vector<float> weights((size_t)out * (size_t)taps);
  taps = stk__resample_weights(in, out, 0.0, in, STK__INTERP_LINEAR, 1, first.data(), weights.data());
  int32_t *first_d = nullptr;
  float *weights_d = nullptr;
  CHECK_CUDA(cudaMalloc(&first_d, first.size() * sizeof(int32_t)));
  CHECK_CUDA(cudaMalloc(&weights_d, (size_t)out * (size_t)taps * sizeof(float)));
  CHECK_CUDA(cudaMemcpy(first_d, first.data(), first.size() * sizeof(int32_t), cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemcpy(weights_d, weights.data(), (size_t)out * (size_t)taps * sizeof(float), cudaMemcpyHostToDevice));
  owned->push_back(first_d);
  owned->push_back(weights_d);
  stk__gpu_axis axis;
  axis.first = first_d;
  axis.weights = weights_d;
  axis.taps = taps;
  return axis;
}

int main(int argc, char **argv) {
  const int iters = argc > 1 ? std::max(1, std::atoi(argv[1])) : 200;
  const int batch = argc > 2 ? std::min(std::max(1, std::atoi(argv[2])), 65535) : 256;
  const int out = 224, channels = 3;
  uint32_t seed = 12345;
  std::vector<void *> owned;
  std::vector<stk__gpu_fused_desc> descs((size_t)batch);
  size_t read_bytes = 0;
  uint16_t *dst = nullptr; /* float16 CHW, batch x 3 x 224 x 224 */
  CHECK_CUDA(cudaMalloc(&dst, (size_t)batch * channels * out * out * sizeof(uint16_t)));
  for (int i = 0; i < batch; i++) {
    int w = 96 + (int)(next_random(&seed) % 385), h = 96 + (int)(next_random(&seed) % 385);
    uint8_t *src = nullptr;
    CHECK_CUDA(cudaMalloc(&src, (size_t)w * h * channels));
    std::vector<uint8_t> pixels((size_t)w * h * channels); /* noise: every tap's weight shows in the bits */
    for (uint8_t &p : pixels) p = (uint8_t)(next_random(&seed) >> 24);
    CHECK_CUDA(cudaMemcpy(src, pixels.data(), pixels.size(), cudaMemcpyHostToDevice));
    owned.push_back(src);
    read_bytes += (size_t)w * h * channels;
    stk__gpu_fused_desc &d = descs[(size_t)i];
    d.src = src;
    d.src_w = w;
    d.src_h = h;
    d.src_stride = w * channels;
    d.resized_w = out;
    d.resized_h = out;
    d.x = upload_axis(w, out, &owned);
    d.y = upload_axis(h, out, &owned);
    d.crop_x = d.crop_y = 0;
    d.crop_w = d.crop_h = out;
    d.mirror = i % 2;
    d.dst = dst + (size_t)i * channels * out * out;
    d.plane_stride = 0;
  }
  stk__gpu_fused_desc *descs_d = nullptr;
  CHECK_CUDA(cudaMalloc(&descs_d, descs.size() * sizeof(stk__gpu_fused_desc)));
  CHECK_CUDA(cudaMemcpy(descs_d, descs.data(), descs.size() * sizeof(stk__gpu_fused_desc), cudaMemcpyHostToDevice));
  stk__gpu_normalize norm = {};
  const float mean[3] = {0.485f * 255, 0.456f * 255, 0.406f * 255},
              stdev[3] = {0.229f * 255, 0.224f * 255, 0.225f * 255};
  for (int c = 0; c < 3; c++) {
    norm.mean[c] = mean[c];
    norm.inv_std[c] = 1.0f / stdev[c];
  }
  norm.channels = norm.out_channels = channels;
  norm.layout_chw = 1;
  norm.dtype = STK_DTYPE_FLOAT16;
  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreate(&stream));
  cudaDeviceProp prop;
  CHECK_CUDA(cudaGetDeviceProperties(&prop, 0));
  const size_t written = (size_t)batch * channels * out * out * sizeof(uint16_t);
  std::vector<uint16_t> reference(written / sizeof(uint16_t)), got(reference.size());
  /* grid caps (STOKER_FUSED_BLOCKS): 0 = one block a tile, auto = the default grid, N looping blocks;
   * /N after one: that many launches a batch (STOKER_FUSED_SPLIT) */
  std::vector<int> caps, splits;
  const char *list = argc > 3 ? argv[3] : "0,auto,264,528";
  for (const char *p = list; *p;) {
    caps.push_back(std::strncmp(p, "auto", 4) == 0 ? stk__gpu_fused_default_blocks() : std::max(0, std::atoi(p)));
    while (*p && *p != ',' && *p != '/') p++;
    splits.push_back(*p == '/' ? std::max(1, std::atoi(p + 1)) : 1);
    while (*p && *p != ',') p++;
    if (*p == ',') p++;
  }
  cudaEvent_t start, stop;
  CHECK_CUDA(cudaEventCreate(&start));
  CHECK_CUDA(cudaEventCreate(&stop));
  for (size_t c = 0; c < caps.size(); c++) {
    const int cap = caps[c], split = splits[c];
    for (int i = 0; i < 20; i++)
      if (stk__gpu_fused_resize_cmn_batch(descs_d, batch, out, out, &norm, cap, split, stream) != STK_OK) {
        std::fprintf(stderr, "fused_kernel_cost: the launch failed (blocks %d, launches %d)\n", cap, split);
        return 1;
      }
    std::vector<float> ms((size_t)iters);
    for (int i = 0; i < iters; i++) {
      CHECK_CUDA(cudaEventRecord(start, stream));
      stk__gpu_fused_resize_cmn_batch(descs_d, batch, out, out, &norm, cap, split, stream);
      CHECK_CUDA(cudaEventRecord(stop, stream));
      CHECK_CUDA(cudaEventSynchronize(stop));
      CHECK_CUDA(cudaEventElapsedTime(&ms[(size_t)i], start, stop));
    }
    CHECK_CUDA(cudaGetLastError());
    CHECK_CUDA(cudaMemcpy(c == 0 ? reference.data() : got.data(), dst, written, cudaMemcpyDeviceToHost));
    const char *bits = c == 0                                               ? "reference"
                       : memcmp(reference.data(), got.data(), written) == 0 ? "same bits"
                                                                            : "DIFFERENT";
    std::sort(ms.begin(), ms.end());
    const double median = ms[ms.size() / 2];
    std::printf(
        "fused_kernel_cost: %s, batch %d of 96-480 px windows -> %dx%d float16 CHW, blocks %s, launches %d: median "
        "%.3f ms (min %.3f, max %.3f over %d), read %.1f MB + written %.1f MB = %.0f GB/s; output vs caps[0]: %s\n",
        prop.name, batch, out, out, cap ? std::to_string(cap).c_str() : "one a tile", split, median, ms.front(),
        ms.back(), iters, read_bytes / 1e6, written / 1e6, (read_bytes + written) / (median * 1e-3) / 1e9, bits);
    if (c > 0 && std::strcmp(bits, "DIFFERENT") == 0) return 1;
  }
  for (void *p : owned) cudaFree(p);
  cudaFree(descs_d);
  cudaFree(dst);
  return 0;
}
