#pragma once
// A graph's kernel node as an ordinary cuLaunchKernelEx: the launch configuration, the
// parameter pointers into a copy of the node's bytes, and the API-entry callback data that
// the capture code decodes like any launch's (decode_launch). One definition for the two
// places that hand a graph kernel to code written for launches: the one-kernel capture at a
// graph launch (graph_capture.cpp: the target, launched for real) and the window of one graph
// launch (window_recorder.cpp: each kernel node described, never launched). No CUDA call.
// Holds pointers into itself: not copyable or movable.
#include <cuda.h>
#include <cupti.h>

#include <cstdint>
#include <vector>

#include "capture/graph_model.hpp"
#include "common/launch_dims.hpp"

namespace kerncap::capture {

struct GraphNodeLaunch {
  // `like`: the callback data of the graph launch (context, correlation id) the node runs in.
  GraphNodeLaunch(const GraphKernel& k, CUstream stream, const CUpti_CallbackData& like) : bytes(k.params), attrs(k.attrs) {
    for (const auto& s : k.slots) ptrs.push_back(bytes.data() + s.offset);
    set_launch_dims(cfg, k.grid, k.block);
    cfg.sharedMemBytes = k.shared_mem;
    cfg.hStream = stream;
    cfg.attrs = attrs.empty() ? nullptr : attrs.data();
    cfg.numAttrs = static_cast<unsigned>(attrs.size());
    params.config = &cfg;
    params.f = k.f;
    params.kernelParams = ptrs.empty() ? nullptr : ptrs.data();
    entry = like;
    entry.callbackSite = CUPTI_API_ENTER;
    entry.functionName = "cuLaunchKernelEx";
    entry.functionParams = &params;
    entry.functionReturnValue = &result;
    entry.symbolName = nullptr;
  }
  GraphNodeLaunch(const GraphNodeLaunch&) = delete;
  GraphNodeLaunch& operator=(const GraphNodeLaunch&) = delete;

  static constexpr CUpti_CallbackId kCbid = CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx;
  std::vector<uint8_t> bytes;
  std::vector<void*> ptrs;
  std::vector<CUlaunchAttribute> attrs;
  CUlaunchConfig cfg{};
  cuLaunchKernelEx_params params{};
  CUresult result = CUDA_SUCCESS;
  CUpti_CallbackData entry{};
};

}  // namespace kerncap::capture
