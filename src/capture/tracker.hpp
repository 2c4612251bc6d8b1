#pragma once
// Allocation tracking: every driver allocation/free the application makes, seen through
// CUPTI driver-API callbacks at API exit (only successful calls count).
#include <cupti.h>

#include <mutex>
#include <vector>

#include "capture/ranges.hpp"

namespace kerncap::capture {

class Tracker {
 public:
  // The CUPTI driver callback ids this tracker needs enabled.
  static const std::vector<CUpti_CallbackId>& callback_ids();
  // Handles one driver-API callback (API exit only). Returns true if it was a memory call.
  bool on_driver_api(CUpti_CallbackId cbid, const CUpti_CallbackData* cb);
  std::vector<TrackedRange> live() const;

 private:
  mutable std::mutex mu_;
  RangeSet ranges_;
};

}  // namespace kerncap::capture
