#include "capture/window_nvtx.hpp"

#include <cstring>
#include <cwchar>

#include <generated_nvtx_meta.h>

#include <fmt/format.h>

#include "capture/launch_info.hpp"
#include "capture/window_recorder.hpp"
#include "common/log.hpp"
#include "names/regex_search.hpp"

namespace kerncap::capture {
namespace {

std::string nvtx_ascii(const char* s) {
  if (!s) return {};
  return std::string(s, ::strnlen(s, kMaxNvtxMessage));
}

// A wide message as UTF-8 (NVTX's W calls: wchar_t is UTF-32 on Linux); invalid code points as '?'.
std::string nvtx_wide(const wchar_t* s) {
  std::string out;
  if (!s) return out;
  for (size_t i = 0; i < kMaxNvtxMessage && s[i]; ++i) {
    const auto c = static_cast<uint32_t>(s[i]);
    if (c < 0x80) {
      out += static_cast<char>(c);
    } else if (c < 0x800) {
      out += static_cast<char>(0xC0 | (c >> 6));
      out += static_cast<char>(0x80 | (c & 0x3F));
    } else if (c < 0x10000 && (c < 0xD800 || c > 0xDFFF)) {
      out += static_cast<char>(0xE0 | (c >> 12));
      out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (c & 0x3F));
    } else if (c >= 0x10000 && c < 0x110000) {
      out += static_cast<char>(0xF0 | (c >> 18));
      out += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (c & 0x3F));
    } else {
      out += '?';
    }
  }
  return out;
}

void nvtx_from_attributes(const nvtxEventAttributes_t* a, NvtxCall* call) {
  // The attributes' size says which fields the application's NVTX version has.
  if (!a || a->size < offsetof(nvtxEventAttributes_t, message) + sizeof(a->message)) return;
  switch (a->messageType) {
    case NVTX_MESSAGE_TYPE_ASCII: call->message = nvtx_ascii(a->message.ascii); break;
    case NVTX_MESSAGE_TYPE_UNICODE: call->message = nvtx_wide(a->message.unicode); break;
    case NVTX_MESSAGE_TYPE_REGISTERED: call->registered = true; break;
    default: break;
  }
}

}  // namespace

NvtxCall decode_nvtx_call(CUpti_CallbackId cbid, const void* params) {
  NvtxCall call;
  if (!params) return call;
  switch (cbid) {
    case CUPTI_CBID_NVTX_nvtxRangePushA:
      call.kind = NvtxCall::Kind::Push;
      call.message = nvtx_ascii(static_cast<const nvtxRangePushA_params*>(params)->message);
      break;
    case CUPTI_CBID_NVTX_nvtxRangePushW:
      call.kind = NvtxCall::Kind::Push;
      call.message = nvtx_wide(static_cast<const nvtxRangePushW_params*>(params)->message);
      break;
    case CUPTI_CBID_NVTX_nvtxRangePushEx:
      call.kind = NvtxCall::Kind::Push;
      nvtx_from_attributes(static_cast<const nvtxRangePushEx_params*>(params)->eventAttrib, &call);
      break;
    case CUPTI_CBID_NVTX_nvtxDomainRangePushEx: {
      const auto* p = static_cast<const nvtxDomainRangePushEx_params*>(params);
      call.kind = NvtxCall::Kind::Push;
      call.domain = p->domain;
      nvtx_from_attributes(p->core.eventAttrib, &call);
      break;
    }
    case CUPTI_CBID_NVTX_nvtxRangePop: call.kind = NvtxCall::Kind::Pop; break;
    case CUPTI_CBID_NVTX_nvtxDomainRangePop:
      call.kind = NvtxCall::Kind::Pop;
      call.domain = static_cast<const nvtxDomainRangePop_params*>(params)->domain;
      break;
    default: break;
  }
  return call;
}

std::vector<CUpti_CallbackId> nvtx_range_callback_ids() {
  return {CUPTI_CBID_NVTX_nvtxRangePushA, CUPTI_CBID_NVTX_nvtxRangePushW, CUPTI_CBID_NVTX_nvtxRangePushEx,
          CUPTI_CBID_NVTX_nvtxRangePop, CUPTI_CBID_NVTX_nvtxDomainRangePushEx, CUPTI_CBID_NVTX_nvtxDomainRangePop};
}

NvtxRangeName::NvtxRangeName(std::string name, bool regex) : name_(std::move(name)) {
  if (regex) regex_.emplace(name_, std::regex::ECMAScript);  // validated by the launcher
}

bool NvtxRangeName::matches(const std::string& text) const {
  if (regex_) return names::regex_search_text(text, *regex_);  // the application's text
  return text == name_ || (text.size() > name_.size() + 1 && text.compare(0, name_.size(), name_) == 0 &&
                           text.compare(name_.size(), 2, ", ") == 0);
}

RangeWindow::RangeWindow(const Config& config, LaunchQueries& driver, WindowRecorder& recorder, void (*on_open)())
    : config_(config), driver_(driver), recorder_(recorder), on_open_(on_open),
      name_(config.window_range, config.regex) {}

uint64_t RangeWindow::pushes_matched() const {
  std::lock_guard lk(mu_);
  return matched_;
}

void RangeWindow::on_nvtx(CUpti_CallbackId cbid, const void* data, std::thread::id thread) {
  if (!data) return;
  const NvtxCall call = decode_nvtx_call(cbid, static_cast<const CUpti_NvtxData*>(data)->functionParams);
  if (call.kind == NvtxCall::Kind::Other) return;
  bool opened = false, closed = false;
  Phase at_close = Phase::Waiting;
  CUcontext context = nullptr;
  {
    std::lock_guard lk(mu_);
    ++calls_;
    const Key key{thread, call.domain};
    uint64_t& depth = depth_[key];
    if (call.kind == NvtxCall::Kind::Push) {
      // Every push counts towards N, nested ones too: the Nth push of NAME in the process
      // (counted until the window has closed: the names are not matched after it).
      if (phase_ != Phase::Closed && name_.matches(call.message) && matched_++ == config_.window_range_occurrence &&
          phase_ == Phase::Waiting) {
        phase_ = Phase::Armed;
        window_key_ = key;
        window_depth_ = depth;
        opened = true;
      }
      ++depth;
    } else {
      if (depth == 0) return;  // a pop without its push (pushed before kerncap was loaded): nothing to close
      --depth;
      if ((phase_ == Phase::Armed || phase_ == Phase::Begun) && !(key < window_key_) && !(window_key_ < key) &&
          depth == window_depth_) {
        at_close = phase_;
        phase_ = Phase::Closed;
        context = context_;
        closed = true;
      }
    }
  }
  if (opened) {
    log::info("window: the range '{}' (push {} from 0) opens; the window begins at its first kernel launch",
              config_.window_range, config_.window_range_occurrence);
    if (on_open_) on_open_();
  }
  if (!closed) return;
  if (at_close == Phase::Armed) {
    recorder_.end_now(nullptr, fmt::format("the range '{}' (push {} from 0) was popped before its thread launched "
                                           "any kernel{}: a window needs at least one kernel launch",
                                           config_.window_range, config_.window_range_occurrence,
                                           launches_in_range_ ? " (its launches went into a stream capture)" : ""));
    return;
  }
  log::info("window: the range '{}' is popped: the window ends", config_.window_range);
  recorder_.end_now(context, std::string());
}

void RangeWindow::on_driver(CUpti_CallbackId cbid, const CUpti_CallbackData* cb, std::thread::id thread) {
  if (!cb || cb->callbackSite != CUPTI_API_ENTER || !is_launch_cbid(cbid)) return;
  {
    std::lock_guard lk(mu_);
    if (phase_ != Phase::Armed || thread != window_key_.thread) {
      if (phase_ == Phase::Waiting) ++launches_;
      return;
    }
  }
  LaunchArgs args;
  if (!decode_launch(cbid, cb->functionParams, &args)) return;
  // A launch into a capturing stream does not run now (it becomes a graph node).
  if (driver_.stream_is_capturing(args.stream)) {
    std::lock_guard lk(mu_);
    ++launches_in_range_;
    return;
  }
  std::string mangled = cb->symbolName ? std::string(cb->symbolName) : std::string();
  if (mangled.empty()) mangled = driver_.kernel_name(args.f);
  uint64_t index = 0;
  {
    std::lock_guard lk(mu_);
    if (phase_ != Phase::Armed) return;
    phase_ = Phase::Begun;
    context_ = cb->context;
    index = launches_;
  }
  if (mangled.empty()) {
    recorder_.end_now(nullptr, "the first kernel launch of the range has no name (the driver could not tell)");
    return;
  }
  // The recorder has let this entry pass (it was waiting); begin() records it as operation 0
  // and has BEFORE taken, as the watcher's target launch would.
  if (!recorder_.begin(TargetLaunch{cbid, cb, mangled, index, -1, !config_.keep_running})) {
    std::lock_guard lk(mu_);
    phase_ = Phase::Closed;
  }
}

void RangeWindow::at_exit() {
  std::string why;
  {
    std::lock_guard lk(mu_);
    if (phase_ != Phase::Waiting) return;  // an open window is the recorder's to report
    why = calls_ == 0
              ? std::string("no NVTX range reached kerncap: the application pushed none, or NVTX was not injected "
                            "(NVTX_INJECTION64_PATH must name libkerncap.so, as `kerncap window extract --range` sets "
                            "it; torch.profiler.record_function emits no NVTX range unless "
                            "torch.autograd.profiler.emit_nvtx is on: use torch.cuda.nvtx.range)")
              : fmt::format("the application pushed {} NVTX range(s) named '{}', and the window is push {} (from 0)",
                            matched_, config_.window_range, config_.window_range_occurrence);
  }
  recorder_.end_now(nullptr, why);
}

}  // namespace kerncap::capture
