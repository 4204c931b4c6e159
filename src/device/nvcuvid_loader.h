/* src/device/nvcuvid_loader.h: NVDEC (the driver's libnvcuvid.so.1) and the CUDA driver API
 * (libcuda.so.1), loaded at run time with dlopen behind one function table, so one build runs
 * with or without a GPU and without the Video Codec SDK's headers. The declarations below are the
 * subset of nvcuvid.h / cuviddec.h (Video Codec SDK 11-12, whose structure layouts they follow)
 * and cuda.h that readers.video's NVDEC path uses; every structure is zeroed before use, so the
 * reserved fields stay 0 as the SDK requires. Not a hot path (loading runs once per process).
 *
 * Thread contract: stk__nvcuvid_load is thread-safe (pthread_once); the table is read-only. */
#ifndef STOKER_DEVICE_NVCUVID_LOADER_H
#define STOKER_DEVICE_NVCUVID_LOADER_H

#include <stddef.h>

#include "stoker/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef int stk__CUresult; /* CUDA_SUCCESS = 0 */
typedef struct stk__CUctx_st *stk__CUcontext;
typedef void *stk__CUvideodecoder;
typedef void *stk__CUvideoparser;
typedef void *stk__CUvideoctxlock;
typedef long long stk__CUvideotimestamp;

typedef enum stk__cudaVideoCodec {
  STK__CUVID_MPEG1 = 0,
  STK__CUVID_MPEG2 = 1,
  STK__CUVID_MPEG4 = 2,
  STK__CUVID_VC1 = 3,
  STK__CUVID_H264 = 4,
  STK__CUVID_JPEG = 5,
  STK__CUVID_HEVC = 8,
  STK__CUVID_VP8 = 9,
  STK__CUVID_VP9 = 10,
  STK__CUVID_AV1 = 11
} stk__cudaVideoCodec;
typedef enum stk__cudaVideoChromaFormat {
  STK__CUVID_CHROMA_MONO = 0,
  STK__CUVID_CHROMA_420 = 1,
  STK__CUVID_CHROMA_422 = 2,
  STK__CUVID_CHROMA_444 = 3
} stk__cudaVideoChromaFormat;
typedef enum stk__cudaVideoSurfaceFormat {
  STK__CUVID_SURFACE_NV12 = 0,
  STK__CUVID_SURFACE_P016 = 1
} stk__cudaVideoSurfaceFormat;
enum { STK__CUVID_DEINTERLACE_WEAVE = 0, STK__CUVID_DEINTERLACE_ADAPTIVE = 2 };
enum { STK__CUVID_CREATE_PREFER_CUVID = 4 };
/* CUVIDSOURCEDATAPACKET flags */
enum {
  STK__CUVID_PKT_ENDOFSTREAM = 1,
  STK__CUVID_PKT_TIMESTAMP = 2,
  STK__CUVID_PKT_DISCONTINUITY = 4,
  STK__CUVID_PKT_ENDOFPICTURE = 8 /* the packet holds exactly one whole picture */
};
/* cuvidDecodeStatus */
enum { STK__CUVID_STATUS_SUCCESS = 2, STK__CUVID_STATUS_ERROR = 8, STK__CUVID_STATUS_ERROR_CONCEALED = 9 };

typedef struct stk__CUVIDEOFORMAT { /* nvcuvid.h CUVIDEOFORMAT */
  stk__cudaVideoCodec codec;
  struct {
    unsigned int numerator, denominator;
  } frame_rate;
  unsigned char progressive_sequence, bit_depth_luma_minus8, bit_depth_chroma_minus8, min_num_decode_surfaces;
  unsigned int coded_width, coded_height;
  struct {
    int left, top, right, bottom;
  } display_area;
  stk__cudaVideoChromaFormat chroma_format;
  unsigned int bitrate;
  struct {
    int x, y;
  } display_aspect_ratio;
  struct {
    unsigned char video_format : 3, video_full_range_flag : 1, reserved_zero_bits : 4;
    unsigned char color_primaries, transfer_characteristics, matrix_coefficients;
  } video_signal_description;
  unsigned int seqhdr_data_length;
} stk__CUVIDEOFORMAT;

typedef struct stk__CUVIDPARSERDISPINFO { /* nvcuvid.h CUVIDPARSERDISPINFO */
  int picture_index, progressive_frame, top_field_first, repeat_first_field;
  stk__CUvideotimestamp timestamp;
} stk__CUVIDPARSERDISPINFO;

typedef struct stk__CUVIDPICPARAMS stk__CUVIDPICPARAMS; /* passed from the parser to the decoder */
/* The first members of cuviddec.h's CUVIDPICPARAMS (stable across Video Codec SDKs); read only. */
typedef struct stk__CUVIDPICPARAMS_head {
  int PicWidthInMbs, FrameHeightInMbs, CurrPicIdx, field_pic_flag, bottom_field_flag, second_field;
  unsigned int nBitstreamDataLen;
  const unsigned char *pBitstreamData;
  unsigned int nNumSlices;
  const unsigned int *pSliceDataOffsets;
  int ref_pic_flag;   /* the picture is a reference picture */
  int intra_pic_flag; /* the picture is entirely intra coded */
} stk__CUVIDPICPARAMS_head;

typedef int (*stk__PFNVIDSEQUENCECALLBACK)(void *, stk__CUVIDEOFORMAT *);
typedef int (*stk__PFNVIDDECODECALLBACK)(void *, stk__CUVIDPICPARAMS *);
typedef int (*stk__PFNVIDDISPLAYCALLBACK)(void *, stk__CUVIDPARSERDISPINFO *);

typedef struct stk__CUVIDPARSERPARAMS { /* nvcuvid.h CUVIDPARSERPARAMS */
  stk__cudaVideoCodec CodecType;
  unsigned int ulMaxNumDecodeSurfaces, ulClockRate, ulErrorThreshold, ulMaxDisplayDelay;
  unsigned int bAnnexb : 1, bMemoryOptimize : 1, uReserved : 30;
  unsigned int uReserved1[4];
  void *pUserData;
  stk__PFNVIDSEQUENCECALLBACK pfnSequenceCallback;
  stk__PFNVIDDECODECALLBACK pfnDecodePicture;
  stk__PFNVIDDISPLAYCALLBACK pfnDisplayPicture;
  void *pfnGetOperatingPoint, *pfnGetSEIMsg;
  void *pvReserved2[5];
  void *pExtVideoInfo;
} stk__CUVIDPARSERPARAMS;

typedef struct stk__CUVIDSOURCEDATAPACKET { /* nvcuvid.h CUVIDSOURCEDATAPACKET */
  unsigned long flags, payload_size;
  const unsigned char *payload;
  stk__CUvideotimestamp timestamp;
} stk__CUVIDSOURCEDATAPACKET;

typedef struct stk__CUVIDDECODECREATEINFO { /* cuviddec.h CUVIDDECODECREATEINFO */
  unsigned long ulWidth, ulHeight, ulNumDecodeSurfaces;
  stk__cudaVideoCodec CodecType;
  stk__cudaVideoChromaFormat ChromaFormat;
  unsigned long ulCreationFlags, bitDepthMinus8, ulIntraDecodeOnly, ulMaxWidth, ulMaxHeight, Reserved1;
  struct {
    short left, top, right, bottom;
  } display_area;
  stk__cudaVideoSurfaceFormat OutputFormat;
  int DeinterlaceMode;
  unsigned long ulTargetWidth, ulTargetHeight, ulNumOutputSurfaces;
  stk__CUvideoctxlock vidLock;
  struct {
    short left, top, right, bottom;
  } target_rect;
  unsigned long enableHistogram;
  unsigned long Reserved2[4];
} stk__CUVIDDECODECREATEINFO;

typedef struct stk__CUVIDDECODECAPS { /* cuviddec.h CUVIDDECODECAPS */
  stk__cudaVideoCodec eCodecType;
  stk__cudaVideoChromaFormat eChromaFormat;
  unsigned int nBitDepthMinus8;
  unsigned int reserved1[3];
  unsigned char bIsSupported, nNumNVDECs;
  unsigned short nOutputFormatMask;
  unsigned int nMaxWidth, nMaxHeight, nMaxMBCount;
  unsigned short nMinWidth, nMinHeight;
  unsigned char bIsHistogramSupported, nCounterBitDepth;
  unsigned short nMaxHistogramBins;
  unsigned int reserved3[10];
} stk__CUVIDDECODECAPS;

typedef struct stk__CUVIDPROCPARAMS { /* cuviddec.h CUVIDPROCPARAMS */
  int progressive_frame, second_field, top_field_first, unpaired_field;
  unsigned int reserved_flags, reserved_zero;
  unsigned long long raw_input_dptr;
  unsigned int raw_input_pitch, raw_input_format;
  unsigned long long raw_output_dptr;
  unsigned int raw_output_pitch, Reserved1;
  void *output_stream; /* CUstream */
  unsigned int Reserved[46];
  void *Reserved2[2];
} stk__CUVIDPROCPARAMS;

typedef struct stk__CUVIDGETDECODESTATUS { /* cuviddec.h CUVIDGETDECODESTATUS */
  int decodeStatus;
  unsigned int reserved[31];
  void *pReserved[8];
} stk__CUVIDGETDECODESTATUS;

/* The function table. */
typedef struct stk__nvcuvid_api {
  void *nvcuvid_library, *cuda_library;
  /* CUDA driver API */
  stk__CUresult (*cuInit)(unsigned int flags);
  stk__CUresult (*cuDevicePrimaryCtxRetain)(stk__CUcontext *ctx, int device);
  stk__CUresult (*cuDevicePrimaryCtxRelease)(int device);
  stk__CUresult (*cuCtxPushCurrent)(stk__CUcontext ctx);
  stk__CUresult (*cuCtxPopCurrent)(stk__CUcontext *ctx);
  stk__CUresult (*cuGetErrorString)(stk__CUresult error, const char **text);
  /* NVDEC */
  stk__CUresult (*cuvidGetDecoderCaps)(stk__CUVIDDECODECAPS *caps);
  stk__CUresult (*cuvidCreateDecoder)(stk__CUvideodecoder *decoder, stk__CUVIDDECODECREATEINFO *info);
  stk__CUresult (*cuvidDestroyDecoder)(stk__CUvideodecoder decoder);
  stk__CUresult (*cuvidDecodePicture)(stk__CUvideodecoder decoder, stk__CUVIDPICPARAMS *picture);
  stk__CUresult (*cuvidGetDecodeStatus)(stk__CUvideodecoder decoder, int picture, stk__CUVIDGETDECODESTATUS *status);
  stk__CUresult (*cuvidMapVideoFrame64)(stk__CUvideodecoder decoder, int picture, unsigned long long *device_ptr,
                                        unsigned int *pitch, stk__CUVIDPROCPARAMS *params);
  stk__CUresult (*cuvidUnmapVideoFrame64)(stk__CUvideodecoder decoder, unsigned long long device_ptr);
  stk__CUresult (*cuvidCreateVideoParser)(stk__CUvideoparser *parser, stk__CUVIDPARSERPARAMS *params);
  stk__CUresult (*cuvidParseVideoData)(stk__CUvideoparser parser, stk__CUVIDSOURCEDATAPACKET *packet);
  stk__CUresult (*cuvidDestroyVideoParser)(stk__CUvideoparser parser);
} stk__nvcuvid_api;

/* Loads both libraries once per process. NULL with a message ("the driver has no video decode
 * library (libnvcuvid.so.1): ...") when either is missing or lacks a symbol; never crashes. */
__attribute__((visibility("hidden"))) const stk__nvcuvid_api *stk__nvcuvid_load(char *err, size_t err_size);

#ifdef __cplusplus
}
#endif

#endif
