// CUDA 12's extensible kernel launch (cudaLaunchKernelEx, cudaLaunchConfig_t, cudaLaunchAttribute) on HIP,
// put in by rocmig migrate (fixup launch-ex). The types keep CUDA's layout and attribute ids (driver_types.h,
// CUDA 12.8); a launch goes through HIP 7.2's hipLaunchKernelEx with the attributes HIP has; hints that leave
// results unchanged (cluster scheduling and preferred cluster shapes, shared-memory carveout, NVLink
// scheduling) are dropped.
// Programmatic dependent launch (sm_90) lets a kernel start before the one before it in the stream has ended;
// HIP starts it after, which is what the kernel's cudaGridDependencySynchronize() waits for: the attribute
// is dropped and the device calls do nothing. Attributes that would change what runs (clusters of more than
// one block, events fired by the launch) make the launch return hipErrorNotSupported.
#ifndef ROCMIG_CUDA_LAUNCH_EX_H
#define ROCMIG_CUDA_LAUNCH_EX_H
#include <hip/hip_runtime.h>
#include <utility>
#include <vector>
namespace rocmig_launch {
enum AttributeID : int {
  Ignore = 0, AccessPolicyWindow = 1, Cooperative = 2, SynchronizationPolicy = 3, ClusterDimension = 4,
  ClusterSchedulingPolicyPreference = 5, ProgrammaticStreamSerialization = 6, ProgrammaticEvent = 7,
  Priority = 8, MemSyncDomainMap = 9, MemSyncDomain = 10, PreferredClusterDimension = 11, LaunchCompletionEvent = 12,
  DeviceUpdatableKernelNode = 13, PreferredSharedMemoryCarveout = 14, NvlinkUtilCentricScheduling = 16
};
union AttributeValue {
  char pad[64];
  hipAccessPolicyWindow accessPolicyWindow;
  int cooperative;
  hipSynchronizationPolicy syncPolicy;
  struct { unsigned int x, y, z; } clusterDim;
  int clusterSchedulingPolicyPreference;
  int programmaticStreamSerializationAllowed;
  struct { hipEvent_t event; int flags; int triggerAtBlockStart; } programmaticEvent;
  int priority;
  hipLaunchMemSyncDomainMap memSyncDomainMap;
  hipLaunchMemSyncDomain memSyncDomain;
  struct { unsigned int x, y, z; } preferredClusterDim;
  struct { hipEvent_t event; int flags; } launchCompletionEvent;
  struct { int deviceUpdatable; void* devNode; } deviceUpdatableKernelNode;
  unsigned int sharedMemCarveout;
  unsigned int nvlinkUtilCentricScheduling;
};
struct Attribute {
  AttributeID id;
  char pad[8 - sizeof(AttributeID)];
  AttributeValue val;
};
struct Config {
  dim3 gridDim;
  dim3 blockDim;
  size_t dynamicSmemBytes;
  hipStream_t stream;
  Attribute* attrs;
  unsigned int numAttrs;
};

// HIP's attribute for `a`, or none (*keep false) for a hint HIP can leave out without changing results;
// hipErrorNotSupported for one it cannot honour.
inline hipError_t to_hip(const Attribute& a, hipLaunchAttribute* out, bool* keep) {
  *keep = false;
  switch (a.id) {
    case Ignore: case ClusterSchedulingPolicyPreference: case PreferredClusterDimension:
    case PreferredSharedMemoryCarveout: case NvlinkUtilCentricScheduling:
      return hipSuccess;
    case ProgrammaticStreamSerialization:  // HIP starts the kernel after the one before it: what PDL waits for
      return hipSuccess;
    case ClusterDimension:  // one block per cluster is a launch without clusters
      return a.val.clusterDim.x * a.val.clusterDim.y * a.val.clusterDim.z == 1u ? hipSuccess : hipErrorNotSupported;
    case AccessPolicyWindow: case Cooperative: case SynchronizationPolicy: case Priority:
    case MemSyncDomainMap: case MemSyncDomain: {
      static_assert(AccessPolicyWindow == (int)hipLaunchAttributeAccessPolicyWindow &&
                    Cooperative == (int)hipLaunchAttributeCooperative &&
                    SynchronizationPolicy == (int)hipLaunchAttributeSynchronizationPolicy &&
                    Priority == (int)hipLaunchAttributePriority &&
                    MemSyncDomainMap == (int)hipLaunchAttributeMemSyncDomainMap &&
                    MemSyncDomain == (int)hipLaunchAttributeMemSyncDomain, "CUDA's and HIP's attribute ids differ");
      *out = hipLaunchAttribute{};
      out->id = static_cast<hipLaunchAttributeID>(static_cast<int>(a.id));
      static_assert(sizeof(hipLaunchAttributeValue) == sizeof(AttributeValue), "attribute values differ in size");
      __builtin_memcpy(&out->val, &a.val, sizeof(AttributeValue));
      *keep = true;
      return hipSuccess;
    }
    default:
      return hipErrorNotSupported;
  }
}

// `config` as HIP's launch configuration; `attrs` holds the attributes it points to.
inline hipError_t to_hip(const Config* config, hipLaunchConfig_t* out, std::vector<hipLaunchAttribute>* attrs) {
  if (config == nullptr || (config->numAttrs != 0 && config->attrs == nullptr)) return hipErrorInvalidValue;
  attrs->clear();
  for (unsigned int i = 0; i < config->numAttrs; ++i) {
    hipLaunchAttribute a;
    bool keep = false;
    hipError_t status = to_hip(config->attrs[i], &a, &keep);
    if (status != hipSuccess) return status;
    if (keep) attrs->push_back(a);
  }
  *out = hipLaunchConfig_t{};
  out->gridDim = config->gridDim;
  out->blockDim = config->blockDim;
  out->dynamicSmemBytes = config->dynamicSmemBytes;
  out->stream = config->stream;
  out->attrs = attrs->empty() ? nullptr : attrs->data();
  out->numAttrs = static_cast<unsigned int>(attrs->size());
  return hipSuccess;
}

template <typename... KernelArgs, typename... Params>
inline hipError_t LaunchKernelEx(const Config* config, void (*kernel)(KernelArgs...), Params&&... args) {
  hipLaunchConfig_t hip_config;
  std::vector<hipLaunchAttribute> attrs;
  hipError_t status = to_hip(config, &hip_config, &attrs);
  if (status != hipSuccess) return status;
  return hipLaunchKernelEx(&hip_config, kernel, std::forward<Params>(args)...);
}

inline hipError_t LaunchKernelExC(const Config* config, const void* kernel, void** args) {
  hipLaunchConfig_t hip_config;
  std::vector<hipLaunchAttribute> attrs;
  hipError_t status = to_hip(config, &hip_config, &attrs);
  if (status != hipSuccess) return status;
  return hipLaunchKernelExC(&hip_config, kernel, args);
}

// The kernel before this one in the stream has ended when this one starts on HIP (no programmatic launch).
__device__ inline void GridDependencySynchronize() {}
__device__ inline void TriggerProgrammaticLaunchCompletion() {}
}  // namespace rocmig_launch
#endif  // ROCMIG_CUDA_LAUNCH_EX_H
