#pragma once
// Code images seen at module load (CUPTI_CBID_RESOURCE_MODULE_LOADED). An image is kept
// only when it can matter: it holds a kernel the pattern matches (or we cannot tell).
// Identical images are kept once (by hash).
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "names/match.hpp"

namespace kerncap::capture {

// What the driver says of the launched function (cuFuncGetAttribute) and the launch: when
// several images hold a kernel of the launched name and the module binding is unknown (with
// lazy loading an image can arrive after its cuModuleLoadData has returned), the image whose
// kernel has these registers and launch bounds is the one launched. -1/0: unknown.
struct FunctionFacts {
  int sm = 0;               // e.g. 90: which entry of a fatbin to read
  int registers = -1;       // CU_FUNC_ATTRIBUTE_NUM_REGS
  int max_threads = -1;     // CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK
  uint32_t block_threads = 0;  // the launch's block, x*y*z
};

struct KeptImage {
  uint64_t hash = 0;
  std::vector<uint8_t> bytes;
  std::vector<std::string> kernels;  // empty when the image could not be read
  uint64_t sequence = 0;             // load order
};

// The hash of the last image the driver handed over on this thread (CUPTI's module-loaded
// callback runs on the thread whose call loaded it). A caller clears it before a driver call
// and reads it after, to know which image that call loaded: with lazy loading that is the
// first call that uses a module (cuModuleGetFunction, a launch, kerncap's own queries).
uint64_t& image_loaded_on_this_thread();

class ImageStore {
 public:
  // Keeps the images holding a kernel that one of `matchers` (one per target) names.
  ImageStore(const std::vector<names::Matcher>& matchers, std::string dump_dir)
      : matchers_(matchers), dump_dir_(std::move(dump_dir)) {}
  // Returns the image's content hash (0 for no image).
  uint64_t on_module_loaded(const void* data, size_t size);
  // cuModuleLoadData* returned `module` for the image with `hash`: lets find() be exact
  // when several images hold kernels of the same name (e.g. autotuned Triton variants).
  // `replace` false: only an unbound module is bound (a binding inferred from a load seen
  // during a launch never overrides the one its load call made).
  void bind_module(const void* module, uint64_t hash, bool replace = true);
  void unbind_module(const void* module);  // cuModuleUnload: the handle may be reused
  // The image that holds `mangled`: the one bound to `module`; else, of several candidates,
  // those whose kernel fits `facts` (registers, launch bounds), then the one whose kernel
  // list equals `module_functions` (the launch's module), then the most recently loaded.
  const KeptImage* find(const std::string& mangled, const std::vector<std::string>& module_functions,
                        const void* module = nullptr, const FunctionFacts& facts = {}) const;
  size_t loaded() const { return loaded_; }
  // The distinct kernels of the kept images that some matcher names, mangled, in load order
  // (at most `limit`): for the report of matching kernels the host never launched.
  std::vector<std::string> matching_kernels(size_t limit) const;

 private:
  const std::vector<names::Matcher>& matchers_;
  std::string dump_dir_;  // non-empty: save every image here (Config::dump_images)
  mutable std::mutex mu_;
  std::vector<KeptImage> images_;
  std::vector<std::pair<const void*, uint64_t>> modules_;  // CUmodule -> image hash
  uint64_t unknown_bytes_ = 0;
  size_t loaded_ = 0;
};

}  // namespace kerncap::capture
