#include "capture/image_store.hpp"

#include <xxhash.h>

#include <algorithm>
#include <span>

#include "common/hex.hpp"
#include "common/log.hpp"
#include "common/private_files.hpp"
#include "cubin/cubin.hpp"
#include "format/capture_dir.hpp"
#include "names/demangle.hpp"

namespace kerncap::capture {

namespace {
// Images whose kernels we cannot list are kept up to this budget, then dropped with a warning.
constexpr uint64_t kUnknownBudget = 512ull << 20;
}  // namespace

uint64_t& image_loaded_on_this_thread() {
  thread_local uint64_t hash = 0;
  return hash;
}

uint64_t ImageStore::on_module_loaded(const void* data, size_t size) {
  if (!data || size == 0) return 0;
  std::span<const uint8_t> bytes(static_cast<const uint8_t*>(data), size);
  const uint64_t hash = XXH3_64bits(bytes.data(), bytes.size());
  std::lock_guard lk(mu_);
  ++loaded_;
  for (auto& img : images_)
    if (img.hash == hash) {
      img.sequence = loaded_;
      return hash;
    }
  if (!dump_dir_.empty()) {
    files::create_private_dirs(dump_dir_);
    files::replace_file(std::filesystem::path(dump_dir_) / fmt::format("{:016x}.bin", hash),
                        std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
  }
  std::vector<std::string> kernels;
  bool readable = true;
  try {
    kernels = cubin::kernel_names(bytes);
  } catch (...) {
    readable = false;
  }
  if (readable && kernels.empty()) readable = false;
  if (readable) {
    bool relevant = std::any_of(kernels.begin(), kernels.end(), [&](const std::string& k) {
      const std::string dem = names::demangle(k);
      return std::any_of(matchers_.begin(), matchers_.end(), [&](const auto& m) { return m.matches(k, dem); });
    });
    if (!relevant) return hash;
  } else {
    if (unknown_bytes_ + size > kUnknownBudget) {
      log::warn("cannot list the kernels of a {} code image and the budget for such images is spent; "
                "it is not kept",
                human_bytes(size));
      return hash;
    }
    unknown_bytes_ += size;
  }
  log::debug("keeping code image {:#x} ({}, {} kernels)", hash, human_bytes(size), kernels.size());
  images_.push_back(KeptImage{hash, std::vector<uint8_t>(bytes.begin(), bytes.end()), std::move(kernels), loaded_});
  return hash;
}

void ImageStore::bind_module(const void* module, uint64_t hash, bool replace) {
  if (!module || !hash) return;
  std::lock_guard lk(mu_);
  for (auto& [m, h] : modules_)
    if (m == module) {
      if (replace) h = hash;  // a handle reused after an unload
      return;
    }
  modules_.emplace_back(module, hash);
}

void ImageStore::unbind_module(const void* module) {
  std::lock_guard lk(mu_);
  std::erase_if(modules_, [&](const auto& b) { return b.first == module; });
}

namespace {
// Whether the image's kernel `mangled` can be the function the driver described: the same
// register count, launch bounds that admit the driver's maximum and the launch's block.
// What either side does not know is not held against it; an unreadable image fits.
bool fits(const KeptImage& img, const std::string& mangled, const FunctionFacts& f) {
  cubin::Image parsed;
  try {
    parsed = cubin::parse_image(img.bytes, f.sm);
  } catch (...) {
    return true;
  }
  const cubin::KernelInfo* k = parsed.find_kernel(mangled);
  if (!k) return true;
  if (k->registers > 0 && f.registers > 0 && k->registers != f.registers) return false;
  if (k->max_threads > 0) {
    if (f.max_threads > 0 && f.max_threads > k->max_threads) return false;
    if (f.block_threads > 0 && f.block_threads > static_cast<uint32_t>(k->max_threads)) return false;
  }
  return true;
}
}  // namespace

std::vector<std::string> ImageStore::matching_kernels(size_t limit) const {
  std::lock_guard lk(mu_);
  std::vector<std::string> out;
  for (const KeptImage& img : images_)
    for (const std::string& k : img.kernels) {
      if (out.size() >= limit) return out;
      if (std::find(out.begin(), out.end(), k) != out.end()) continue;
      const std::string dem = names::demangle(k);
      if (std::any_of(matchers_.begin(), matchers_.end(), [&](const auto& m) { return m.matches(k, dem); }))
        out.push_back(k);
    }
  return out;
}

const KeptImage* ImageStore::find(const std::string& mangled, const std::vector<std::string>& module_functions,
                                  const void* module, const FunctionFacts& facts) const {
  std::lock_guard lk(mu_);
  if (module)
    for (const auto& [m, h] : modules_)
      if (m == module)
        for (const auto& img : images_)
          if (img.hash == h) return &img;
  std::vector<const KeptImage*> known, unknown;
  for (const auto& img : images_) {
    if (img.kernels.empty()) unknown.push_back(&img);
    else if (std::find(img.kernels.begin(), img.kernels.end(), mangled) != img.kernels.end()) known.push_back(&img);
  }
  auto latest = [](const std::vector<const KeptImage*>& v) {
    return *std::max_element(v.begin(), v.end(), [](auto* a, auto* b) { return a->sequence < b->sequence; });
  };
  if (known.size() > 1) {
    std::vector<const KeptImage*> fitting;
    for (const KeptImage* img : known)
      if (fits(*img, mangled, facts)) fitting.push_back(img);
    if (!fitting.empty() && fitting.size() < known.size()) {
      log::debug("{} of {} code images holding {} fit the launched function (registers {}, max threads {}, "
                 "block {})",
                 fitting.size(), known.size(), mangled, facts.registers, facts.max_threads, facts.block_threads);
      known = std::move(fitting);
    }
  }
  if (known.size() > 1 && !module_functions.empty()) {
    auto sorted = module_functions;
    std::sort(sorted.begin(), sorted.end());
    for (const KeptImage* img : known) {
      auto k = img->kernels;
      std::sort(k.begin(), k.end());
      if (k == sorted) return img;
    }
  }
  if (known.size() > 1)
    log::info("{} code images hold {} and neither the launch's module nor its registers and launch bounds "
              "tell which was launched: the most recently loaded is captured",
              known.size(), names::demangle(mangled));
  if (!known.empty()) return latest(known);
  if (!unknown.empty()) return latest(unknown);
  return nullptr;
}

}  // namespace kerncap::capture
