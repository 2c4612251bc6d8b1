#pragma once
// One replay of a capture in this process: address space, context, module, restored
// memory, and the launch itself. Used by `kerncap replay` and `kerncap validate`.
#include <cuda.h>

#include <array>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "format/capture_dir.hpp"
#include "replay/address_space.hpp"
#include "replay/device_choice.hpp"
#include "replay/restore_plan.hpp"
#include "replay/textures.hpp"
#include "replay/variant_image.hpp"

namespace kerncap::replay {

class UniformCheck;

// Whether a launch attribute (CUlaunchAttributeID) describes the launch itself and is
// re-applied at replay; those carrying the application's handles (events, graph nodes) are not.
bool replayable_launch_attribute(int id);
// Whether a function attribute (CUfunction_attribute) is set again on the loaded kernel.
bool settable_function_attribute(int id);

struct Options {
  std::filesystem::path capture;             // OUT or OUT/capture
  std::optional<std::filesystem::path> cubin;  // a variant image to load instead
  bool allow_relocate = true;
  std::optional<uint32_t> collide_region;    // test hook: force this region to collide
  bool progress = true;
  bool verify_hashes = false;  // check each BEFORE file (first restore) against the capture's hashes (the image: always)
  // Launch geometry other than the captured one (a variant tuned for another block size, or a
  // test that a launch covering less than the captured grid fails validation).
  std::optional<std::array<uint32_t, 3>> grid, block;
  // The CUDA device to replay on (device_choice.hpp); unset: the first of the captured model.
  std::optional<int> device;
  // The capture as this process opened it (format::open_capture, the strict reader): a
  // command opens it once and hands it down; unset: the session opens `capture` itself.
  std::shared_ptr<const format::Capture> opened;
  bool overrides_launch() const { return cubin.has_value() || grid.has_value() || block.has_value(); }
  // The same options for the captured kernel exactly as the application launched it.
  Options as_captured() const {
    Options o = *this;
    o.cubin.reset();
    o.grid.reset();
    o.block.reset();
    return o;
  }
};

struct RestoreStats {
  uint64_t bytes = 0;
  uint64_t copied = 0, filled = 0;  // bytes staged and copied / memset on the device (restore_plan.hpp)
  uint64_t overlaid = 0;  // bytes a constant filter (the poison) wrote with memsets over fills
  uint64_t rewritten_words = 0;  // pointer words rewritten in memory, globals and params
  // Where a restore's time went on the calling thread (seconds): decoding into staging,
  // relocating pointer words there, and waiting for a staging buffer's copy to end. What is
  // left of the wall time is issuing copies and memsets and the final synchronisation.
  double read_s = 0, rewrite_s = 0, wait_s = 0;
  double seconds = 0;  // the whole restore, wall time
};

class Session {
 public:
  // Opens and checks the capture, reserves its addresses, creates the context, maps
  // memory and loads the module. Throws kerncap::Error.
  explicit Session(const Options& options);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Writes every region and global back to its BEFORE state.
  RestoreStats restore();
  // Changes what restore() writes: `apply` is called on every staged piece of region `index`
  // (manifest order) at byte `offset`, after relocation and before the copy to the device.
  // Strong validation poisons the bytes the launch writes without reading; fuzzing replaces
  // inputs. An empty filter restores BEFORE unchanged. With a reach (restore_plan.hpp) only
  // the bytes it names are staged for the filter, the rest of a fill stays a device memset;
  // without one every byte of every region is staged.
  struct RestoreFilter {
    using Apply = std::function<void(size_t index, uint64_t offset, uint8_t* data, uint64_t n)>;
    Apply apply;
    std::optional<FilterReach> reach;
    RestoreFilter() = default;
    template <typename F>
      requires(!std::is_same_v<std::decay_t<F>, RestoreFilter> &&
               std::is_invocable_v<F&, size_t, uint64_t, uint8_t*, uint64_t>)
    RestoreFilter(F f, std::optional<FilterReach> r = std::nullopt) : apply(std::move(f)), reach(std::move(r)) {}
    explicit operator bool() const { return static_cast<bool>(apply); }
    void operator()(size_t index, uint64_t offset, uint8_t* data, uint64_t n) const { apply(index, offset, data, n); }
  };
  void set_restore_filter(RestoreFilter f) { filter_ = std::move(f); }
  const RestoreFilter& restore_filter() const { return filter_; }
  // Which image launches run. The session loads the captured image or Options::cubin when it
  // opens; the evaluation loop (evaluate.hpp) loads other variants into the open session.
  enum class Which { Captured, Variant };
  // Loads `image` as the session's variant in place of one loaded before (which is
  // unloaded), checked as `--cubin` checks a variant: the captured kernel present, its
  // parameter layout unchanged, the module globals the kernel uses bound. When it is
  // refused the session keeps what it had. Launches run it after use(Which::Variant), or
  // at once when the replaced variant was the one they ran; then the answer is use()'s.
  bool load_variant(const VariantImage& image);
  // Unloads the variant; launches run the captured image (loaded now if it was not).
  // Returns use()'s answer for the captured image.
  bool unload_variant();
  bool has_variant() const { return variant_ != nullptr; }
  uint64_t variant_hash() const { return variant_ ? variant_->hash : 0; }
  // Launches run `which` from now on (the captured image is loaded on first use). True when
  // memory must be restored before the next launch: the capture has module globals, and each
  // image has its own (at other addresses, holding its initial values).
  bool use(Which which);
  Which active() const { return active_ == variant_.get() && variant_ ? Which::Variant : Which::Captured; }
  // Counts restores and launches: a caller that keeps memory state across calls (the
  // evaluation loop) tells whether anything else touched the memory since.
  uint64_t generation() const { return generation_; }
  // --cache auto's choice for this capture, measured once per session by the first timing of
  // the captured image that could (timing.cpp): the same capture, the same answer, so later
  // timings (every candidate an agent sends) do not pay for the measurement again.
  struct CacheMemo {
    bool set = false, cold = false;
    std::string why;
    // The other-work rule's own choice (choose_cache: the capture and the device decide it),
    // kept for the timings that do not measure (a variant's, before the captured image was
    // timed): its device queries cost about half a millisecond per timing on an H200.
    bool rule_set = false, rule_cold = false;
    std::string rule_why;
  };
  CacheMemo& cache_memo() { return cache_memo_; }
  // Launches once and waits; returns the elapsed milliseconds measured with events.
  float launch();
  // Enqueues one launch on stream() without waiting.
  void enqueue();
  // Whether the loaded image was launched since the last restore() (timing saves the
  // restored state of the bytes a launch writes, so it restores first when this is true).
  bool launched_since_restore() const { return launched_; }
  // Waits for stream(); a fault becomes Error(Device) that says the kernel faulted.
  void synchronize();
  CUstream stream() const { return stream_; }
  // Makes the session's context current on the calling thread (C ABI calls may come from
  // another thread than the one that opened the session).
  void make_current() const;
  CUfunction function() const { return active_->function; }
  // Where a captured address lives in this replay (relocation applied).
  uint64_t translate(uint64_t captured) const { return space_->relocations().translate(captured); }
  // The parameter buffer the launch passes (pointers into moved ranges rewritten by restore()).
  const std::vector<uint8_t>& params() const { return params_; }

  const format::Capture& capture() const { return capture_; }
  // The device this replay runs on and why it was chosen.
  const DeviceChoice& device() const { return device_; }
  const AddressSpace& address_space() const { return *space_; }
  const RelocationMap& relocations() const { return space_->relocations(); }
  // Replay address of region i (manifest order).
  uint64_t address(size_t i) const { return addresses_.at(i); }
  std::string image_description() const { return active_->desc; }
  void* staging(size_t which) const { return which ? staging_b_ : staging_a_; }
  // The comparison's device check (uniform_check.hpp), loaded on first use; null when it
  // cannot run here (the reason is logged once), and comparisons read every byte back.
  UniformCheck* uniform_check();
  uint64_t staging_bytes() const { return staging_bytes_; }
  // What comparisons expect in each region (BEFORE with AFTER over it, pointers relocated),
  // kept by compare_with_after for the session's later comparisons (validate.cpp says when).
  struct ExpectedBytes {
    bool tried = false;
    std::vector<std::vector<uint8_t>> regions;  // empty: not kept
    // The comparison's device check holds a copy of them too (UniformCheck::keep_expected),
    // and per piece compared against it, which blocks are plain (compare_plan.hpp
    // plain_blocks), by region, piece begin and end, element type and staging step.
    bool on_device = false;
    std::map<std::tuple<size_t, uint64_t, uint64_t, int, uint64_t>, std::vector<uint8_t>> plain;
  };
  ExpectedBytes& expected_bytes() { return expected_; }

 private:
  // One image loaded into the context: its module, the kernel, and where the module globals
  // of the capture live with it.
  struct Image {
    CUmodule module = nullptr;
    CUfunction function = nullptr;
    std::string desc;
    uint64_t hash = 0;
    std::vector<CUdeviceptr> globals;  // per global region of the capture, in manifest order
    std::vector<CUdeviceptr> scratch;  // memory for the captured globals the image lacks
  };
  void open(const Options& options);
  void release() noexcept;
  std::unique_ptr<Image> load_image(std::vector<uint8_t> bytes, const std::string& desc, bool variant);
  void free_image(std::unique_ptr<Image>& image) noexcept;
  // Makes `image` the one launches run: its globals' addresses and relocations.
  void activate(Image& image);
  void check_variant_layout(CUfunction f, const std::string& desc);
  // The variant's global for each captured module global (global_match.hpp), nullopt: scratch.
  std::vector<std::optional<std::string>> bind_variant_globals(std::span<const uint8_t> variant_bytes,
                                                               const std::string& desc);

  Options options_;
  format::Capture capture_;
  CUdevice dev_ = 0;
  DeviceChoice device_;
  CUcontext ctx_ = nullptr;
  std::unique_ptr<AddressSpace> space_;
  std::unique_ptr<Image> captured_, variant_;
  Image* active_ = nullptr;
  CacheMemo cache_memo_;
  CUstream stream_ = nullptr;
  CUevent ev_start_ = nullptr, ev_stop_ = nullptr;
  CUevent staged_[2] = {nullptr, nullptr};  // the copy out of staging buffer a / b ended
  std::vector<uint64_t> addresses_;
  std::vector<CUdeviceptr> array_buffers_;  // regions of kind array: linear copies of the arrays
  ReplayTextures textures_;                 // arrays, texture and surface objects re-created
  std::vector<uint8_t> params_;
  std::vector<void*> param_ptrs_;
  std::vector<CUlaunchAttribute> attrs_;
  uint8_t* staging_a_ = nullptr;
  uint8_t* staging_b_ = nullptr;
  uint64_t staging_bytes_ = 64ull << 20;
  ExpectedBytes expected_;
  bool verified_ = false;
  uint64_t generation_ = 0;
  bool launched_ = false;
  RestoreFilter filter_;
  std::unique_ptr<UniformCheck> uniform_;
  bool uniform_tried_ = false;
};

}  // namespace kerncap::replay
