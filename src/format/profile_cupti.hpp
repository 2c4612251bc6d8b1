#pragma once
// Profile mode's CUPTI settings (KERNCAP_PROFILE_CUPTI), a diagnostic: the defaults are
// what `kerncap profile` uses; the others let bench/profile_overhead.sh measure, side by
// side, what each part of CUPTI's kernel tracing costs the application's launches.
// Syntax: comma-separated key=value, e.g. "kind=kernel,device_buffer=32M,pool_limit=500".
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace kerncap::format {

struct ProfileCupti {
  // The activity kind of kernel records: CONCURRENT_KERNEL (the default: kernels keep
  // running concurrently), KERNEL (serialises them), or none (no kernel records at all:
  // the profile is empty; the floor of what profile mode can cost).
  enum class Kind { Concurrent, Kernel, Off };
  Kind kind = Kind::Concurrent;
  bool memory = true;                    // MEMCPY and MEMSET records
  // EXTERNAL_CORRELATION records (how benchmark launches are told apart): enabled only while
  // a benchmark window is open (the default), or from the start (`correlation=always`, the
  // old behaviour, kept to measure what it costs every launch).
  bool correlation_always = false;
  // The sampler's launch callbacks (sampled timing only): `full` counts launches (the
  // default); `empty` has CUPTI call a handler that returns at once (what CUPTI's callback
  // dispatch alone costs a launch); `off` enables none (nothing is counted: with kind=none
  // and memory=0, what a subscribed CUPTI costs with neither callbacks nor records).
  enum class Callback { Full, Empty, Off };
  Callback callback = Callback::Full;
  uint64_t host_buffer = 8ull << 20;     // bytes of each activity buffer handed to CUPTI
  // CUPTI_ACTIVITY_ATTR_*: unset keeps CUPTI's default.
  std::optional<uint64_t> device_buffer;  // DEVICE_BUFFER_SIZE (bytes per buffer, per context)
  std::optional<uint64_t> pool_limit;     // DEVICE_BUFFER_POOL_LIMIT (buffers per context)
  std::optional<uint64_t> preallocate;    // DEVICE_BUFFER_PRE_ALLOCATE_VALUE (buffers)
  std::optional<bool> per_thread;         // PER_THREAD_ACTIVITY_BUFFER
  std::optional<bool> pinned;             // MEM_ALLOCATION_TYPE_HOST_PINNED
  std::optional<uint64_t> flush_ms;       // cuptiActivityFlushPeriod
  bool operator==(const ProfileCupti&) const = default;
};

// Sampled timing (Config::profile_sample, KERNCAP_PROFILE_SAMPLE): a process times every
// launch until it has made kSampleExactLaunches, then one window of kSampleWindow launches in
// every N (the variable's text in protocol.cpp says these numbers).
inline constexpr uint64_t kSampleExactLaunches = 10000;
inline constexpr uint64_t kSampleWindow = 10000;

// The text form ("" for the defaults); parse returns the problem, or "" (then *out is set).
std::string profile_cupti_text(const ProfileCupti& p);
std::string profile_cupti_from_text(std::string_view text, ProfileCupti* out);

}  // namespace kerncap::format
