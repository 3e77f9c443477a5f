/* cuda_stream.h — what the cuda plugin's stream handle is. The runtime treats it as opaque; the
 * graph-capture test (tests/cuda) reads the CUstream out of it to capture a run through the Driver API. */
#ifndef CK_CUDA_STREAM_H
#define CK_CUDA_STREAM_H

#include <cuda.h>

/* Created by stream_create (cuStreamCreate, CU_STREAM_NON_BLOCKING); the CUstream comes first. */
typedef struct cuda_stream {
    CUstream stream;
} cuda_stream_t;

#endif /* CK_CUDA_STREAM_H */
