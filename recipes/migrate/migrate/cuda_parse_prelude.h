// Included (-include) into hipify-clang's CUDA parse of a unit, never into the migrated sources.
//
// nvcc includes cuda_runtime.h into every .cu unit, and with it declarations that clang's CUDA
// runtime wrapper (__clang_cuda_runtime_wrapper.h, clang 22) does not give, so a unit nvcc builds
// fails clang's parse and hipify-clang writes nothing. This header adds, for the parse only:
// - the C headers crt/common_functions.h and crt/math_functions.h include (CUDA 12.5):
//   host isfinite/isnan, clock(), strcmp, memcpy, malloc without their own #include;
// - nvcc's host overloads of min and max (crt/math_functions.hpp), used from host code;
// - the cache-hint stores __stcs, __stcg and __stwb (sm_32_intrinsics.h), which clang's
//   __clang_cuda_intrinsics.h lacks (it has __stwt only).
// Declarations are enough: hipify-clang runs clang's front end, no code is generated.
#pragma once
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define ROCMIG_PARSE_MINMAX(T, U, R)                                  \
  static inline __host__ R min(const T a, const U b);                 \
  static inline __host__ R max(const T a, const U b);
ROCMIG_PARSE_MINMAX(int, int, int)
ROCMIG_PARSE_MINMAX(unsigned int, unsigned int, unsigned int)
ROCMIG_PARSE_MINMAX(int, unsigned int, unsigned int)
ROCMIG_PARSE_MINMAX(unsigned int, int, unsigned int)
ROCMIG_PARSE_MINMAX(long, long, long)
ROCMIG_PARSE_MINMAX(unsigned long, unsigned long, unsigned long)
ROCMIG_PARSE_MINMAX(long, unsigned long, unsigned long)
ROCMIG_PARSE_MINMAX(unsigned long, long, unsigned long)
ROCMIG_PARSE_MINMAX(long long, long long, long long)
ROCMIG_PARSE_MINMAX(unsigned long long, unsigned long long, unsigned long long)
ROCMIG_PARSE_MINMAX(long long, unsigned long long, unsigned long long)
ROCMIG_PARSE_MINMAX(unsigned long long, long long, unsigned long long)
ROCMIG_PARSE_MINMAX(float, float, float)
ROCMIG_PARSE_MINMAX(double, double, double)
ROCMIG_PARSE_MINMAX(float, double, double)
ROCMIG_PARSE_MINMAX(double, float, double)
#undef ROCMIG_PARSE_MINMAX

template <class T> struct rocmig_parse_same { typedef T type; };
template <class T> __device__ void __stcs(T *ptr, typename rocmig_parse_same<T>::type value);
template <class T> __device__ void __stcg(T *ptr, typename rocmig_parse_same<T>::type value);
template <class T> __device__ void __stwb(T *ptr, typename rocmig_parse_same<T>::type value);
