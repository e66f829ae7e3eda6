// A Chrome/Perfetto trace of frontend-compiled programs (INSITU_TRACE=FILE): one complete event
// ("ph":"X", ts and dur in microseconds) per trace, compile stage and executable run, loadable
// in chrome://tracing or ui.perfetto.dev.
//
//   {"traceEvents":[{"name":"optimize_module","cat":"compile","ph":"X","ts":12.0,"dur":830.5,
//                    "pid":1,"tid":1,"args":{"module":"jit_f"}}, ...]}
//
// Events accumulate in memory; the file is rewritten by flush() (jit flushes after every
// compile; the process-wide recorder also flushes at exit).
#pragma once

#include <chrono>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "insitu/support/status.h"

namespace insitu {

struct TraceEvent {
  std::string name;
  std::string category;
  double start_us = 0;
  double duration_us = 0;
  std::vector<std::pair<std::string, std::string>> args;  // values are written as JSON strings
};

class TraceRecorder {
 public:
  TraceRecorder();
  ~TraceRecorder();  // flushes

  // The process-wide recorder; its path comes from INSITU_TRACE (empty: disabled).
  static TraceRecorder& global();

  bool enabled() const;
  const std::string& path() const { return path_; }
  void set_path(std::string path);

  // Microseconds since the recorder started.
  double now_us() const;
  void add(TraceEvent event);
  std::vector<TraceEvent> events() const;
  void clear();
  std::string to_json() const;
  // Writes to_json() to path() (a no-op when disabled).
  Status flush() const;

 private:
  std::chrono::steady_clock::time_point origin_;
  std::string path_;
  mutable std::mutex mutex_;
  std::vector<TraceEvent> events_;
};

// Records one complete event from construction to destruction (when the recorder is enabled).
class TraceSpan {
 public:
  TraceSpan(std::string name, std::string category, std::vector<std::pair<std::string, std::string>> args = {});
  ~TraceSpan();
  void add_arg(std::string key, std::string value) { event_.args.emplace_back(std::move(key), std::move(value)); }

 private:
  TraceRecorder& recorder_;
  bool enabled_;
  TraceEvent event_;
};

}  // namespace insitu
