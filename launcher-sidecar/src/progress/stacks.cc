#include "progress/stacks.h"

#include <sstream>
#include <vector>

namespace kubedist::launcher {
namespace {

struct Frame {
  std::string file;
  std::string line;
  std::string function;
};

std::string base_name(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// Python's own library and installed packages; the rest is the program's code.
bool is_library(const std::string& file) {
  return file.find("/site-packages/") != std::string::npos || file.find("/dist-packages/") != std::string::npos ||
         file.find("/lib/python3") != std::string::npos || file.rfind("<frozen", 0) == 0;
}

// `  File "/x/train.py", line 57 in main`
bool parse_frame(const std::string& text, Frame& f) {
  const std::string head = "File \"";
  const auto start = text.find(head);
  if (start == std::string::npos) return false;
  const auto end = text.find("\", line ", start + head.size());
  if (end == std::string::npos) return false;
  f.file = text.substr(start + head.size(), end - start - head.size());
  std::istringstream rest(text.substr(end + 8));
  std::string in;
  if (!(rest >> f.line >> in) || in != "in") return false;
  std::getline(rest >> std::ws, f.function);
  return !f.function.empty();
}

}  // namespace

StackSummary summarize_stacks(const std::string& dump) {
  struct Thread {
    bool current = false;
    std::vector<Frame> frames;  // innermost first
  };
  std::vector<Thread> threads;
  std::istringstream in(dump);
  std::string text;
  while (std::getline(in, text)) {
    if (text.rfind("Thread 0x", 0) == 0 || text.rfind("Current thread 0x", 0) == 0) {
      threads.push_back({text.rfind("Current", 0) == 0, {}});
      continue;
    }
    Frame f;
    if (!threads.empty() && parse_frame(text, f)) threads.back().frames.push_back(std::move(f));
  }
  const Thread* main = nullptr;
  for (const auto& t : threads)
    if (!t.frames.empty() && t.frames.back().function == "<module>" && main == nullptr) main = &t;
  for (const auto& t : threads)
    if (!t.frames.empty() && t.current && main == nullptr) main = &t;
  for (const auto& t : threads)
    if (!t.frames.empty() && main == nullptr) main = &t;
  StackSummary s;
  if (main == nullptr) return s;
  const Frame& inner = main->frames.front();
  const Frame* own = nullptr;
  for (const auto& f : main->frames)
    if (own == nullptr && !is_library(f.file)) own = &f;
  const Frame& at = own != nullptr ? *own : inner;
  s.where = "in " + inner.function + " (" + base_name(at.file) + ":" + at.line + ")";
  for (size_t i = 0; i < main->frames.size() && i < 6; ++i) {
    const Frame& f = main->frames[i];
    s.trace += (i ? " < " : "") + f.function + " " + base_name(f.file) + ":" + f.line;
  }
  if (main->frames.size() > 6) s.trace += " < ...";
  return s;
}

}  // namespace kubedist::launcher
