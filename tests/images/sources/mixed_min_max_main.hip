// Appended to the mixed-sign-min-max fixup's output (tests/images/test_dev.py): compile-time checks in
// device code for each offload arch.
#include <type_traits>
// CUDA's results (math_functions.hpp): the signed argument converted to the unsigned type, then compared
__global__ void minmax_kernel(unsigned int* out, int i, unsigned int n) {
  static_assert(std::is_same<decltype(min(1, 2u)), unsigned int>::value, "min(int, unsigned int)");
  static_assert(std::is_same<decltype(max(2ull, 1ll)), unsigned long long>::value, "max(ull, ll)");
  static_assert(min(-1, 5u) == 5u && max(-1, 5u) == 0xffffffffu, "int / unsigned int");
  static_assert(min(5u, -1) == 5u && max(-2l, 3ul) == (unsigned long)-2l, "long / unsigned long");
  static_assert(min(-1ll, 7ull) == 7ull && max(7ull, -1ll) == ~0ull, "long long / unsigned long long");
  // calls of one type resolve as before: HIP's own overloads and templates
  static_assert(std::is_same<decltype(min(1, 2)), int>::value && std::is_same<decltype(min(1.f, 2.f)), float>::value, "");
  static_assert(std::is_same<decltype(max(1u, 2u)), unsigned int>::value, "");
  static_assert(std::is_same<decltype(min(1.f, 2.0)), double>::value, "");
  out[min(i, n - 1)] = max(i, n);
}
int main() { return 0; }
