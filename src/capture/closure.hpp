#pragma once
// The capture's closure: which tracked regions the target launch can reach. A region is
// reachable when an 8-byte word of the launch's parameters (by-value structs and tensor
// maps included), of a module global or of another reachable region points into it. The
// rest is recorded by address and size only (format::Region::omitted). Pure logic: the
// scan of a region's words for pointers is passed in (GpuScanner on the device, the host
// for host-resident memory), so it is unit-tested with fakes.
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <vector>

namespace kerncap::capture {

// Tracked ranges in address order, for "which region does this word point into".
class RangeIndex {
 public:
  struct Range {
    uint64_t base = 0, size = 0;
  };
  // `ranges` in any order, not overlapping; index() refers to this order.
  explicit RangeIndex(const std::vector<Range>& ranges);
  std::optional<size_t> find(uint64_t address) const;
  // The regions aligned 8-byte words of `bytes` point into, each once.
  std::vector<size_t> pointed(std::span<const uint8_t> bytes) const;
  // The ranges sorted by base, and the caller's index of each (for a device table).
  const std::vector<Range>& sorted() const { return sorted_; }
  const std::vector<size_t>& order() const { return order_; }

 private:
  std::vector<Range> sorted_;
  std::vector<size_t> order_;
};

struct ClosureRegion {
  uint64_t base = 0, size = 0;
  bool root = false;  // always kept and scanned (module globals: reached by symbol, not pointer)
  bool keep = false;  // always in the capture (memory kerncap cannot omit); scanned once reached
};

// pointers_in(i): the regions region i's words point into (called once per reached region).
// Returns, per region, whether it is in the closure.
std::vector<bool> closure(const std::vector<ClosureRegion>& regions, std::span<const uint8_t> params,
                          const std::function<std::vector<size_t>(size_t)>& pointers_in);

}  // namespace kerncap::capture
