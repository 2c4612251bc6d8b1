#include "capture/window_graph.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <memory>

namespace kerncap::capture {
namespace {

std::string graph_node_text(const GraphExec& g, size_t i) {
  return fmt::format("node {} of {} ({})", i, g.nodes.size(), node_type_name(g.nodes[i].type));
}

// A memcpy node's bytes as one contiguous run on each side, or 0 when it is not one (a 2D or 3D
// copy between pitches that differ from its width: a layout the window's copies do not have).
uint64_t graph_copy_run(const CUDA_MEMCPY3D& c, uint64_t* src_off, uint64_t* dst_off) {
  const uint64_t w = c.WidthInBytes, h = std::max<size_t>(c.Height, 1), d = std::max<size_t>(c.Depth, 1);
  if (h * d > 1) {
    if (c.srcPitch != w || c.dstPitch != w) return 0;
    if (d > 1 && (c.srcHeight != h || c.dstHeight != h)) return 0;
  }
  *src_off = c.srcXInBytes + uint64_t{c.srcY} * c.srcPitch + uint64_t{c.srcZ} * c.srcHeight * c.srcPitch;
  *dst_off = c.dstXInBytes + uint64_t{c.dstY} * c.dstPitch + uint64_t{c.dstZ} * c.dstHeight * c.dstPitch;
  return w * h * d;
}

}  // namespace

bool graph_has_kernel(const GraphExec& g, const std::function<bool(const std::string& mangled)>& matches) {
  return std::any_of(g.nodes.begin(), g.nodes.end(),
                     [&](const GraphNode& n) { return n.kernel && n.enabled && matches(n.kernel->mangled); });
}

std::optional<std::vector<GraphWindowStep>> plan_graph_window(const GraphExec& g, const IsTracked& tracked,
                                                             uint64_t h2d_budget, std::string* why, bool need_kernel) {
  if (!g.stale.empty()) {
    *why = "kerncap cannot follow this graph: " + g.stale;
    return std::nullopt;
  }
  std::vector<GraphWindowStep> steps;
  uint64_t h2d = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const GraphNode& n = g.nodes[i];
    if (!n.enabled) continue;  // cuGraphNodeSetEnabled(0): the launch does not run it
    switch (n.type) {
      case CU_GRAPH_NODE_TYPE_KERNEL:
        if (!n.kernel) {
          *why = graph_node_text(g, i) + ": its launch could not be read";
          return std::nullopt;
        }
        steps.push_back({i, true, std::nullopt});
        continue;
      case CU_GRAPH_NODE_TYPE_EMPTY:
      case CU_GRAPH_NODE_TYPE_WAIT_EVENT:  // BEFORE is taken after a synchronise: what it waits for is done
      case CU_GRAPH_NODE_TYPE_EVENT_RECORD:
        continue;
      case CU_GRAPH_NODE_TYPE_MEMSET: {
        if (!n.memset) {
          *why = graph_node_text(g, i) + ": the driver did not give its parameters";
          return std::nullopt;
        }
        const CUDA_MEMSET_NODE_PARAMS& p = *n.memset;
        const uint64_t elem = p.elementSize, rows = std::max<size_t>(p.height, 1);
        if (elem != 1 && elem != 2 && elem != 4) {
          *why = fmt::format("{}: an element size of {} bytes", graph_node_text(g, i), elem);
          return std::nullopt;
        }
        // Rows one after the other are one run; rows apart are a 2D memset, which the window's
        // replay does not make (its memsets are runs).
        if (rows > 1 && p.pitch != p.width * elem) {
          *why = fmt::format("{}: a 2D memset of {} rows {} bytes apart, which a window does not replay yet",
                             graph_node_text(g, i), rows, uint64_t{p.pitch});
          return std::nullopt;
        }
        const uint64_t extent = rows * p.width * elem;
        if (!tracked(p.dst, extent)) {
          *why = fmt::format("{}: it writes {} bytes at 0x{:x}, outside the memory kerncap tracks", graph_node_text(g, i),
                             extent, uint64_t{p.dst});
          return std::nullopt;
        }
        format::WindowOp op;
        op.kind = format::WindowOp::Kind::Memset;
        op.dst = p.dst;
        op.value = p.value;
        op.element_size = static_cast<uint32_t>(elem);
        op.width = rows * p.width;
        steps.push_back({i, false, std::move(op)});
        continue;
      }
      case CU_GRAPH_NODE_TYPE_MEMCPY: {
        if (!n.memcpy) {
          *why = graph_node_text(g, i) + ": the driver did not give its parameters";
          return std::nullopt;
        }
        const CUDA_MEMCPY3D& c = *n.memcpy;
        uint64_t src_off = 0, dst_off = 0;
        const uint64_t bytes = graph_copy_run(c, &src_off, &dst_off);
        if (c.srcMemoryType == CU_MEMORYTYPE_ARRAY || c.dstMemoryType == CU_MEMORYTYPE_ARRAY) {
          *why = graph_node_text(g, i) + ": a copy from or to a CUDA array, which a window does not replay";
          return std::nullopt;
        }
        if (!bytes && c.WidthInBytes) {
          *why = graph_node_text(g, i) + ": a 2D or 3D copy between pitched layouts, which a window does not replay";
          return std::nullopt;
        }
        const uint64_t dst = c.dstDevice + dst_off;
        const bool dst_device = (c.dstMemoryType == CU_MEMORYTYPE_DEVICE || c.dstMemoryType == CU_MEMORYTYPE_UNIFIED) &&
                                tracked(dst, bytes);
        if (c.dstMemoryType == CU_MEMORYTYPE_HOST) continue;  // to the host: no device byte changes
        if (!dst_device) {
          *why = fmt::format("{}: it writes {} bytes at 0x{:x}, outside the memory kerncap tracks", graph_node_text(g, i),
                             bytes, dst);
          return std::nullopt;
        }
        format::WindowOp op;
        op.dst = dst;
        op.bytes = bytes;
        if (c.srcMemoryType == CU_MEMORYTYPE_HOST) {
          // Read now, at the graph launch's entry: what the node will copy (the application
          // changing it before the graph runs would race with itself).
          if (!c.srcHost || h2d + bytes > h2d_budget) {
            *why = !c.srcHost ? graph_node_text(g, i) + ": a copy from a null host pointer"
                              : fmt::format("{}: host-to-device copies beyond the {} bytes a window keeps",
                                            graph_node_text(g, i), h2d_budget);
            return std::nullopt;
          }
          h2d += bytes;
          const auto* b = static_cast<const uint8_t*>(c.srcHost) + src_off;
          op.kind = format::WindowOp::Kind::CopyH2D;
          op.src = reinterpret_cast<uint64_t>(b);
          op.host_bytes = std::make_shared<const std::vector<uint8_t>>(b, b + bytes);
        } else {
          op.kind = format::WindowOp::Kind::CopyD2D;
          op.src = c.srcDevice + src_off;
          if (!tracked(op.src, bytes)) {
            *why = fmt::format("{}: it reads {} bytes at 0x{:x}, outside the memory kerncap tracks (host memory "
                               "under unified addressing, or an allocation kerncap did not see)",
                               graph_node_text(g, i), bytes, op.src);
            return std::nullopt;
          }
        }
        steps.push_back({i, false, std::move(op)});
        continue;
      }
      default:
        *why = fmt::format("{}: a window of a graph launch replays kernel, memset and copy nodes only "
                           "(a {} node cannot be replayed as one of a window's operations)",
                           graph_node_text(g, i), node_type_name(n.type));
        return std::nullopt;
    }
  }
  if (need_kernel && std::none_of(steps.begin(), steps.end(), [](const GraphWindowStep& s) { return s.kernel; })) {
    *why = "the graph has no kernel node to run";
    return std::nullopt;
  }
  return steps;
}

void visit_graph_accesses(const GraphExec& g, const GraphAccessVisitor& v) {
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const GraphNode& n = g.nodes[i];
    if (!n.enabled) continue;
    switch (n.type) {
      case CU_GRAPH_NODE_TYPE_KERNEL:
        if (n.kernel) v.kernel(*n.kernel);
        else v.opaque(graph_node_text(g, i) + " in a CUDA graph launch: its launch could not be read");
        continue;
      case CU_GRAPH_NODE_TYPE_EMPTY:
      case CU_GRAPH_NODE_TYPE_WAIT_EVENT:
      case CU_GRAPH_NODE_TYPE_EVENT_RECORD:
        continue;
      case CU_GRAPH_NODE_TYPE_MEMSET: {
        if (!n.memset) continue;  // a write not seen errs towards live
        const CUDA_MEMSET_NODE_PARAMS& p = *n.memset;
        const uint64_t elem = p.elementSize, rows = std::max<size_t>(p.height, 1);
        if (rows == 1 || p.pitch == p.width * elem)
          v.write(p.dst, rows * p.width * elem, "a memset node of a CUDA graph launch");
        continue;
      }
      case CU_GRAPH_NODE_TYPE_MEMCPY: {
        if (!n.memcpy) {
          v.opaque(graph_node_text(g, i) + " in a CUDA graph launch: its parameters are unknown");
          continue;
        }
        const CUDA_MEMCPY3D& c = *n.memcpy;
        const bool src_dev = c.srcMemoryType == CU_MEMORYTYPE_DEVICE || c.srcMemoryType == CU_MEMORYTYPE_UNIFIED;
        const bool dst_dev = c.dstMemoryType == CU_MEMORYTYPE_DEVICE || c.dstMemoryType == CU_MEMORYTYPE_UNIFIED;
        uint64_t src_off = 0, dst_off = 0;
        const uint64_t run = graph_copy_run(c, &src_off, &dst_off);
        if (src_dev) {
          const uint64_t h = std::max<size_t>(c.Height, 1), d = std::max<size_t>(c.Depth, 1);
          const uint64_t first = c.srcXInBytes + uint64_t{c.srcY} * c.srcPitch +
                                 uint64_t{c.srcZ} * c.srcHeight * c.srcPitch;
          const uint64_t span = run ? run : (d - 1) * c.srcHeight * c.srcPitch + (h - 1) * c.srcPitch + c.WidthInBytes;
          v.read(c.srcDevice + first, span, "a copy node of a CUDA graph launch");
        }
        if (dst_dev && run) v.write(c.dstDevice + dst_off, run, "a copy node of a CUDA graph launch");
        continue;
      }
      default:
        v.opaque(fmt::format("a {} node in a CUDA graph launch", node_type_name(n.type)));
        continue;
    }
  }
}

}  // namespace kerncap::capture
