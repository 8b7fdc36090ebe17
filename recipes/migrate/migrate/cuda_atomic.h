// rocmig: libcu++'s cuda::atomic, cuda::atomic_ref and thread scopes (<cuda/atomic>, <cuda/std/atomic>) on
// HIP's scoped atomic builtins. ROCm has no libcu++. The types keep libcu++'s layout (one T), default scope
// (thread_scope_system), default order (seq_cst) and its members' meaning; thread_scope_device is HIP's agent
// scope, thread_scope_block its workgroup scope. wait / notify are not provided.
#ifndef ROCMIG_CUDA_ATOMIC
#define ROCMIG_CUDA_ATOMIC
#include <hip/hip_runtime.h>
namespace rocmig_cuda {
// libcu++'s enumerator values (cuda/std/__atomic/scopes.h)
enum thread_scope { thread_scope_system = 0, thread_scope_device = 1, thread_scope_block = 2, thread_scope_thread = 3 };
// the C++ memory orders, valued as the compiler's __ATOMIC_* (as libcu++'s and libstdc++'s are)
enum memory_order {
  memory_order_relaxed = __ATOMIC_RELAXED, memory_order_consume = __ATOMIC_CONSUME, memory_order_acquire = __ATOMIC_ACQUIRE,
  memory_order_release = __ATOMIC_RELEASE, memory_order_acq_rel = __ATOMIC_ACQ_REL, memory_order_seq_cst = __ATOMIC_SEQ_CST
};
template <thread_scope S> struct hip_scope { static constexpr int value = __HIP_MEMORY_SCOPE_SYSTEM; };
template <> struct hip_scope<thread_scope_device> { static constexpr int value = __HIP_MEMORY_SCOPE_AGENT; };
template <> struct hip_scope<thread_scope_block> { static constexpr int value = __HIP_MEMORY_SCOPE_WORKGROUP; };
template <> struct hip_scope<thread_scope_thread> { static constexpr int value = __HIP_MEMORY_SCOPE_SINGLETHREAD; };
// the failure order of a compare-exchange given one order (C++ [atomics.types.operations])
__host__ __device__ constexpr int failure_order(memory_order o) {
  return o == memory_order_acq_rel ? __ATOMIC_ACQUIRE : o == memory_order_release ? __ATOMIC_RELAXED : int(o);
}
// the operations on one object `*p`, shared by atomic_ref and atomic
template <typename T, thread_scope S> struct atomic_ops {
  static constexpr int scope = hip_scope<S>::value;
  __host__ __device__ static T load(T* p, memory_order o) { return __hip_atomic_load(p, o, scope); }
  __host__ __device__ static void store(T* p, T v, memory_order o) { __hip_atomic_store(p, v, o, scope); }
  __host__ __device__ static T exchange(T* p, T v, memory_order o) { return __hip_atomic_exchange(p, v, o, scope); }
  __host__ __device__ static bool cas_strong(T* p, T& e, T d, memory_order s, int f) {
    return __hip_atomic_compare_exchange_strong(p, &e, d, s, f, scope);
  }
  __host__ __device__ static bool cas_weak(T* p, T& e, T d, memory_order s, int f) {
    return __hip_atomic_compare_exchange_weak(p, &e, d, s, f, scope);
  }
  __host__ __device__ static T add(T* p, T v, memory_order o) { return __hip_atomic_fetch_add(p, v, o, scope); }
  __host__ __device__ static T sub(T* p, T v, memory_order o) { return __hip_atomic_fetch_sub(p, v, o, scope); }
  __host__ __device__ static T band(T* p, T v, memory_order o) { return __hip_atomic_fetch_and(p, v, o, scope); }
  __host__ __device__ static T bor(T* p, T v, memory_order o) { return __hip_atomic_fetch_or(p, v, o, scope); }
  __host__ __device__ static T bxor(T* p, T v, memory_order o) { return __hip_atomic_fetch_xor(p, v, o, scope); }
  __host__ __device__ static T min(T* p, T v, memory_order o) { return __hip_atomic_fetch_min(p, v, o, scope); }
  __host__ __device__ static T max(T* p, T v, memory_order o) { return __hip_atomic_fetch_max(p, v, o, scope); }
};
// the members of cuda::atomic_ref and cuda::atomic, over the object `Derived::ptr()` names
template <typename Derived, typename T, thread_scope S> struct atomic_members {
  using value_type = T;
  using ops = atomic_ops<T, S>;
  __host__ __device__ T* at() const { return static_cast<const Derived*>(this)->ptr(); }
  __host__ __device__ T load(memory_order o = memory_order_seq_cst) const { return ops::load(at(), o); }
  __host__ __device__ void store(T v, memory_order o = memory_order_seq_cst) const { ops::store(at(), v, o); }
  __host__ __device__ T exchange(T v, memory_order o = memory_order_seq_cst) const { return ops::exchange(at(), v, o); }
  __host__ __device__ bool compare_exchange_strong(T& e, T d, memory_order o = memory_order_seq_cst) const {
    return ops::cas_strong(at(), e, d, o, failure_order(o));
  }
  __host__ __device__ bool compare_exchange_strong(T& e, T d, memory_order s, memory_order f) const {
    return ops::cas_strong(at(), e, d, s, f);
  }
  __host__ __device__ bool compare_exchange_weak(T& e, T d, memory_order o = memory_order_seq_cst) const {
    return ops::cas_weak(at(), e, d, o, failure_order(o));
  }
  __host__ __device__ bool compare_exchange_weak(T& e, T d, memory_order s, memory_order f) const {
    return ops::cas_weak(at(), e, d, s, f);
  }
  __host__ __device__ T fetch_add(T v, memory_order o = memory_order_seq_cst) const { return ops::add(at(), v, o); }
  __host__ __device__ T fetch_sub(T v, memory_order o = memory_order_seq_cst) const { return ops::sub(at(), v, o); }
  __host__ __device__ T fetch_and(T v, memory_order o = memory_order_seq_cst) const { return ops::band(at(), v, o); }
  __host__ __device__ T fetch_or(T v, memory_order o = memory_order_seq_cst) const { return ops::bor(at(), v, o); }
  __host__ __device__ T fetch_xor(T v, memory_order o = memory_order_seq_cst) const { return ops::bxor(at(), v, o); }
  __host__ __device__ T fetch_min(T v, memory_order o = memory_order_seq_cst) const { return ops::min(at(), v, o); }
  __host__ __device__ T fetch_max(T v, memory_order o = memory_order_seq_cst) const { return ops::max(at(), v, o); }
  __host__ __device__ bool is_lock_free() const { return sizeof(T) <= 8; }
  __host__ __device__ operator T() const { return load(); }
  __host__ __device__ T operator++() const { return fetch_add(T(1)) + T(1); }
  __host__ __device__ T operator++(int) const { return fetch_add(T(1)); }
  __host__ __device__ T operator--() const { return fetch_sub(T(1)) - T(1); }
  __host__ __device__ T operator--(int) const { return fetch_sub(T(1)); }
  __host__ __device__ T operator+=(T v) const { return fetch_add(v) + v; }
  __host__ __device__ T operator-=(T v) const { return fetch_sub(v) - v; }
  __host__ __device__ T operator&=(T v) const { return fetch_and(v) & v; }
  __host__ __device__ T operator|=(T v) const { return fetch_or(v) | v; }
  __host__ __device__ T operator^=(T v) const { return fetch_xor(v) ^ v; }
};
template <typename T, thread_scope S = thread_scope_system>
struct atomic_ref : atomic_members<atomic_ref<T, S>, T, S> {
  T* object;
  __host__ __device__ explicit atomic_ref(T& r) : object(&r) {}
  __host__ __device__ atomic_ref(const atomic_ref&) = default;
  __host__ __device__ T* ptr() const { return object; }
  __host__ __device__ T operator=(T v) const { this->store(v); return v; }
};
template <typename T, thread_scope S = thread_scope_system>
struct atomic : atomic_members<atomic<T, S>, T, S> {
  mutable T value;
  atomic() = default;
  __host__ __device__ constexpr atomic(T v) : value(v) {}
  atomic(const atomic&) = delete;
  atomic& operator=(const atomic&) = delete;
  __host__ __device__ T* ptr() const { return &value; }
  __host__ __device__ T operator=(T v) { this->store(v); return v; }
};
}  // namespace rocmig_cuda
#endif
