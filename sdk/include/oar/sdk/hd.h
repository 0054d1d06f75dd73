// OAR_SDK_HD marks SDK functions that a GPU plugin also compiles into its kernels (host and device).
#pragma once

#if defined(__CUDACC__) || defined(__HIPCC__)
#define OAR_SDK_HD __host__ __device__
#else
#define OAR_SDK_HD
#endif
