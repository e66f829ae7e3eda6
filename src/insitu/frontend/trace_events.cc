// TraceRecorder (trace_events.h).
#include "insitu/frontend/trace_events.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "insitu/support/str.h"

namespace insitu {
namespace {

std::string json_string(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buffer[8];
          std::snprintf(buffer, sizeof(buffer), "\\u%04x", c);
          out += buffer;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

std::string json_number(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%.3f", value);
  return buffer;
}

}  // namespace

TraceRecorder::TraceRecorder() : origin_(std::chrono::steady_clock::now()) {}

TraceRecorder::~TraceRecorder() {
  Status status = flush();
  if (!status.ok()) std::fprintf(stderr, "insitu: INSITU_TRACE: %s\n", status.message().c_str());
}

TraceRecorder& TraceRecorder::global() {
  static TraceRecorder* recorder = [] {
    static TraceRecorder instance;
    if (const char* path = std::getenv("INSITU_TRACE")) instance.set_path(path);
    return &instance;
  }();
  return *recorder;
}

bool TraceRecorder::enabled() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return !path_.empty();
}

void TraceRecorder::set_path(std::string path) {
  std::lock_guard<std::mutex> lock(mutex_);
  path_ = std::move(path);
}

double TraceRecorder::now_us() const {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - origin_).count();
}

void TraceRecorder::add(TraceEvent event) {
  std::lock_guard<std::mutex> lock(mutex_);
  events_.push_back(std::move(event));
}

std::vector<TraceEvent> TraceRecorder::events() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return events_;
}

void TraceRecorder::clear() {
  std::lock_guard<std::mutex> lock(mutex_);
  events_.clear();
}

std::string TraceRecorder::to_json() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::string out = "{\"traceEvents\":[";
  for (size_t i = 0; i < events_.size(); ++i) {
    const TraceEvent& event = events_[i];
    if (i > 0) out += ",\n";
    out += str_cat("{\"name\":", json_string(event.name), ",\"cat\":", json_string(event.category),
                   ",\"ph\":\"X\",\"ts\":", json_number(event.start_us), ",\"dur\":", json_number(event.duration_us),
                   ",\"pid\":1,\"tid\":1,\"args\":{");
    for (size_t a = 0; a < event.args.size(); ++a) {
      if (a > 0) out += ",";
      out += json_string(event.args[a].first) + ":" + json_string(event.args[a].second);
    }
    out += "}}";
  }
  out += "],\"displayTimeUnit\":\"ms\"}\n";
  return out;
}

Status TraceRecorder::flush() const {
  std::string path;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    path = path_;
  }
  if (path.empty()) return ok_status();
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  if (!file) return invalid_argument(str_cat("cannot write the trace file '", path, "' (INSITU_TRACE)"));
  file << to_json();
  return file.good() ? ok_status() : invalid_argument(str_cat("cannot write the trace file '", path, "'"));
}

TraceSpan::TraceSpan(std::string name, std::string category, std::vector<std::pair<std::string, std::string>> args)
    : recorder_(TraceRecorder::global()), enabled_(recorder_.enabled()) {
  if (!enabled_) return;
  event_.name = std::move(name);
  event_.category = std::move(category);
  event_.args = std::move(args);
  event_.start_us = recorder_.now_us();
}

TraceSpan::~TraceSpan() {
  if (!enabled_) return;
  event_.duration_us = recorder_.now_us() - event_.start_us;
  recorder_.add(std::move(event_));
}

}  // namespace insitu
