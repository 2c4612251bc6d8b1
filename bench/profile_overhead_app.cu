// A tiny CUDA program for measuring `kerncap profile` overhead and for its GPU tests:
// launches many tiny kernels (the worst case for per-launch profiling cost), prints how
// long the launch loop took, and can exercise the process shapes profiling must survive.
//
//   profile_overhead_app [--kernels N] [--busy K] [--streams S] [MODE...]
//     --kernels N        launches of tiny_kernel (default 100000)
//     --busy K           launches of busy_kernel, a ~1 ms kernel that tops the profile (default 0)
//     --streams S        round-robin over S streams (default 1)
//     --exit-from-thread a second thread calls exit() while main waits on it
//     --fork-child       fork() after the kernels; the child (no exec) just exits
//     --spawn-child M    fork()+exec() this program with --kernels M; wait for it
//     --no-kernels       initialise CUDA, launch nothing
//     --exit-code C      exit with status C at the end
//     --cupti-first      subscribe to CUPTI (dlopen libcupti.so.13) before CUDA starts, as
//                        an in-app profiler would: kerncap must then report the conflict
// Prints "loop_ms <ms>" (launch loop + final synchronise), "loop_cpu_ms <ms>" (the same
// loop's CPU time on the launching thread) and "launched <n>" on stdout.
#include <dlfcn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <ctime>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <cuda_runtime.h>

#define CK(call)                                                                                           \
  do {                                                                                                     \
    cudaError_t e_ = (call);                                                                               \
    if (e_ != cudaSuccess) {                                                                               \
      std::fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_));   \
      std::exit(1);                                                                                        \
    }                                                                                                      \
  } while (0)

__global__ void tiny_kernel(int* counter) {
  if (threadIdx.x == 0) atomicAdd(counter, 1);
}

// Spins for about `cycles` clock ticks, then writes its output (so a capture has AFTER bytes).
__global__ void busy_kernel(float* out, long long cycles) {
  long long start = clock64();
  float acc = threadIdx.x;
  while (clock64() - start < cycles) acc = acc * 0.999f + 1.0f;
  out[blockIdx.x * blockDim.x + threadIdx.x] = acc;
}

// Takes CUPTI's single subscriber slot the way an in-application profiler does.
// Declared by hand so that this program does not link CUPTI.
using SubscribeFn = int (*)(void**, void (*)(void*, int, unsigned, const void*), void*);
void noop_callback(void*, int, unsigned, const void*) {}
void subscribe_cupti_first() {
  void* lib = dlopen("libcupti.so.13", RTLD_NOW | RTLD_GLOBAL);
  auto subscribe = lib ? reinterpret_cast<SubscribeFn>(dlsym(lib, "cuptiSubscribe")) : nullptr;
  void* handle = nullptr;
  if (!subscribe || subscribe(&handle, &noop_callback, nullptr) != 0) {
    std::fprintf(stderr, "--cupti-first: cannot subscribe to CUPTI (%s); set LD_LIBRARY_PATH to its directory\n",
                 lib ? "cuptiSubscribe failed" : dlerror());
    std::exit(3);
  }
  std::printf("cupti subscribed first\n");
}

int main(int argc, char** argv) {
  long kernels = 100000, busy = 0, spawn = -1;
  int streams = 1, exit_code = 0;
  bool exit_from_thread = false, fork_child = false, no_kernels = false, cupti_first = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> long {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", a.c_str());
        std::exit(2);
      }
      return std::atol(argv[++i]);
    };
    if (a == "--kernels") kernels = next();
    else if (a == "--busy") busy = next();
    else if (a == "--streams") streams = static_cast<int>(next());
    else if (a == "--exit-from-thread") exit_from_thread = true;
    else if (a == "--fork-child") fork_child = true;
    else if (a == "--spawn-child") spawn = next();
    else if (a == "--no-kernels") no_kernels = true;
    else if (a == "--exit-code") exit_code = static_cast<int>(next());
    else if (a == "--cupti-first") cupti_first = true;
    else {
      std::fprintf(stderr, "unknown argument %s\n", a.c_str());
      return 2;
    }
  }
  if (streams < 1) streams = 1;

  if (cupti_first) subscribe_cupti_first();
  CK(cudaFree(nullptr));  // initialise CUDA (and so load the injection library) before timing
  if (no_kernels) {
    std::printf("launched 0\n");
    return exit_code;
  }
  int* counter;
  float* out;
  CK(cudaMalloc(&counter, sizeof(int)));
  CK(cudaMalloc(&out, 1024 * sizeof(float)));
  CK(cudaMemset(counter, 0, sizeof(int)));
  std::vector<cudaStream_t> ss(streams);
  for (auto& s : ss) CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CK(cudaDeviceSynchronize());

  // The loop's CPU time on this thread too: on a shared (virtualised) host, time the
  // hypervisor gives to others stretches the wall time but not this.
  timespec c0{}, c1{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
  auto t0 = std::chrono::steady_clock::now();
  for (long i = 0; i < kernels; ++i) tiny_kernel<<<1, 32, 0, ss[i % streams]>>>(counter);
  CK(cudaGetLastError());
  for (long i = 0; i < busy; ++i) busy_kernel<<<4, 256, 0, ss[0]>>>(out, 2000000);  // ~1 ms at ~2 GHz
  CK(cudaGetLastError());
  CK(cudaDeviceSynchronize());
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
  const double cpu_ms = (c1.tv_sec - c0.tv_sec) * 1e3 + (c1.tv_nsec - c0.tv_nsec) / 1e6;
  int count = 0;
  CK(cudaMemcpy(&count, counter, sizeof(int), cudaMemcpyDeviceToHost));
  if (count != kernels) {
    std::fprintf(stderr, "self-check failed: counter %d, launched %ld\n", count, kernels);
    return 1;
  }
  std::printf("loop_ms %.3f\nloop_cpu_ms %.3f\nlaunched %ld\n", ms, cpu_ms, kernels + busy);
  std::fflush(stdout);

  if (fork_child) {
    pid_t pid = fork();
    if (pid == 0) std::exit(0);  // no exec, no CUDA: its atexit handlers still run
    int st = 0;
    waitpid(pid, &st, 0);
    std::printf("fork child %d %s\n", pid, WIFEXITED(st) && WEXITSTATUS(st) == 0 ? "ok" : "failed");
  }
  if (spawn >= 0) {
    std::fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
      std::string n = std::to_string(spawn);
      execl("/proc/self/exe", argv[0], "--kernels", n.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    std::printf("spawned child %d %s\n", pid, WIFEXITED(st) && WEXITSTATUS(st) == 0 ? "ok" : "failed");
  }
  std::fflush(stdout);
  if (exit_from_thread) {
    // exit() runs atexit handlers on this second thread while main is still blocked.
    std::thread t([exit_code] { std::exit(exit_code); });
    t.join();
  }
  return exit_code;
}
