#pragma once
// Re-entry guard: kerncap's own driver calls fire CUPTI callbacks too. While a thread is
// inside kerncap, callbacks on that thread are ignored.
namespace kerncap::capture {

inline thread_local bool t_in_tool = false;

class ToolScope {
 public:
  ToolScope() : was_(t_in_tool) { t_in_tool = true; }
  ~ToolScope() { t_in_tool = was_; }
  ToolScope(const ToolScope&) = delete;
  ToolScope& operator=(const ToolScope&) = delete;

 private:
  bool was_;
};

}  // namespace kerncap::capture
