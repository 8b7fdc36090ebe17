// Appended to the half-atomic-add fixup's output (tests/images/test_dev.py): host threads run the same
// overloads the device code calls; the kernel only has to compile for each offload arch.
#include <thread>
#include <vector>
#include <cstdio>
#include <cstring>
#include <algorithm>
#include <random>
// Device side: the overloads must compile for the offload arch as CUDA code calls them.
__global__ void add_kernel(__hip_bfloat162* p, __hip_bfloat16* s, __half2* h2, __half* h) {
  atomicAdd(p, p[1]); atomicAdd(s + 1, s[0]); atomicAdd(h2, h2[1]); atomicAdd(h + 1, h[0]);
}
static unsigned short bits(__half v) { return __half_as_ushort(v); }
static unsigned short bits(__hip_bfloat16 v) { return __bfloat16_as_ushort(v); }
// Threads add small integers (sums stay exact in 16-bit floats); every update must land once, and the
// old values returned must be distinct (a lost update returns the same old value twice).
template <class S, class P, class Make, class Lo, class Hi>
static int check_pair(Make make, Lo lo, Hi hi, const char* name) {
  alignas(4) P acc[1] = {make(0.f, 0.f)};
  const int threads = 4, per = 40;  // x: +1 each (160), y: +0.5 each (80)
  std::vector<float> olds(threads * per);
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t)
    ts.emplace_back([&, t] { for (int i = 0; i < per; ++i) olds[t * per + i] = lo(atomicAdd(acc, make(1.f, 0.5f))); });
  for (auto& t : ts) t.join();
  std::sort(olds.begin(), olds.end());
  int bad = lo(acc[0]) != threads * per || hi(acc[0]) != threads * per * 0.5f;
  for (int i = 0; i < threads * per; ++i) bad += olds[i] != float(i);
  printf("%s pair: x %g y %g, bad %d\n", name, lo(acc[0]), hi(acc[0]), bad);
  return bad;
}
// Scalars: two threads add to the two halves of one word at once, and each half ends with its own sum;
// an add to one half keeps the other half's bits (-0.0, a signalling NaN), which adding zero would not.
template <class S, class F, class T>
static int check_scalar(F from, T to, const char* name) {
  alignas(4) S w[6] = {from(0.f), from(0.f), from(0.f), from(0.f), from(0.f), from(0.f)};
  const unsigned short nzero = 0x8000, snan = 0x7d01;
  memcpy(&w[2], &nzero, 2);
  memcpy(&w[4], &snan, 2);
  std::thread a([&] { for (int i = 0; i < 100; ++i) atomicAdd(&w[0], from(1.f)); });
  std::thread b([&] { for (int i = 0; i < 100; ++i) atomicAdd(&w[1], from(-2.f)); });
  a.join(); b.join();
  S old3 = atomicAdd(&w[3], from(3.f));
  S old5 = atomicAdd(&w[5], from(-1.f));
  int bad = to(w[0]) != 100.f || to(w[1]) != -200.f || to(w[3]) != 3.f || to(w[5]) != -1.f || to(old3) != 0.f ||
            to(old5) != 0.f || bits(w[2]) != nzero || bits(w[4]) != snan;
  printf("%s scalar: %g %g %g %g, neighbours %x %x, bad %d\n", name, to(w[0]), to(w[1]), to(w[3]), to(w[5]),
         bits(w[2]), bits(w[4]), bad);
  return bad;
}
int main() {
  int bad = check_pair<__hip_bfloat16, __hip_bfloat162>(
      [](float x, float y) { return __halves2bfloat162(__float2bfloat16(x), __float2bfloat16(y)); },
      [](__hip_bfloat162 v) { return __bfloat162float(__low2bfloat16(v)); },
      [](__hip_bfloat162 v) { return __bfloat162float(__high2bfloat16(v)); }, "bf16");
  bad += check_pair<__half, __half2>(
      [](float x, float y) { return __halves2half2(__float2half(x), __float2half(y)); },
      [](__half2 v) { return __half2float(__low2half(v)); },
      [](__half2 v) { return __half2float(__high2half(v)); }, "fp16");
  bad += check_scalar<__hip_bfloat16>([](float x) { return __float2bfloat16(x); },
                                      [](__hip_bfloat16 v) { return __bfloat162float(v); }, "bf16");
  bad += check_scalar<__half>([](float x) { return __float2half(x); }, [](__half v) { return __half2float(v); }, "fp16");
  printf("failures %d\n", bad);
  return bad != 0;
}
